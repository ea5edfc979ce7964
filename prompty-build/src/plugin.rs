//! The plugin attributes `#[renderer("key", ...)]`, `#[parser(...)]`, `#[executor(...)]` and
//! `#[processor(...)]`: register a type in prompty's renderer, parser, executor or processor
//! registry at link time.
//!
//! The attribute goes on a `struct`, `enum` or `union`, or on the `impl Renderer for Type` block
//! (then the impl's self type is registered). It takes one or more string keys (aliases). The
//! expansion is the item unchanged plus an `inventory` submission of a static descriptor whose
//! `make` builds the component with `Default`:
//!
//! ```
//! use quote::quote;
//! use prompty_build::plugin::{expand, Component};
//!
//! let out = expand(Component::Executor, quote!("foundry", "azure"), quote! {
//!     #[derive(Default)]
//!     struct Foundry;
//! })?;
//! let out = out.to_string();
//! assert!(out.contains("ExecutorRegistration"));
//! assert!(out.contains(r#"keys : & ["foundry" , "azure"]"#));
//! assert!(out.contains("__make_executor :: < Foundry >"));
//! # Ok::<(), syn::Error>(())
//! ```
//!
//! When the type does not implement the trait, the compiler reports the trait's
//! `#[diagnostic::on_unimplemented]` message on the type, because the `__make_*::<Type>` path is
//! spanned on it.

use crate::errors::{describe, Errors};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, Item, Lit, Token};

/// Which registry a plugin attribute fills.
///
/// ```
/// use prompty_build::plugin::Component;
/// assert_eq!(Component::Renderer.attribute(), "renderer");
/// assert_eq!(Component::Processor.trait_name(), "Processor");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Component {
    /// `#[renderer("key")]`: a template engine, selected by `template.format.kind`.
    Renderer,
    /// `#[parser("key")]`: rendered text to messages, selected by `template.parser.kind`.
    Parser,
    /// `#[executor("key")]`: calls a model, selected by `model.provider`.
    Executor,
    /// `#[processor("key")]`: turns a raw response into the result, selected by `model.provider`.
    Processor,
    /// `#[loader("key")]`: fills a tool catalog, selected by the loader name of
    /// `ToolCatalog::add_source`.
    Loader,
}

impl Component {
    /// Every component.
    ///
    /// ```
    /// assert_eq!(prompty_build::plugin::Component::ALL.len(), 5);
    /// ```
    pub const ALL: [Component; 5] =
        [Component::Renderer, Component::Parser, Component::Executor, Component::Processor, Component::Loader];

    /// The attribute's name: `renderer`, `parser`, `executor` or `processor`.
    ///
    /// ```
    /// assert_eq!(prompty_build::plugin::Component::Executor.attribute(), "executor");
    /// ```
    pub fn attribute(self) -> &'static str {
        match self {
            Component::Renderer => "renderer",
            Component::Parser => "parser",
            Component::Executor => "executor",
            Component::Processor => "processor",
            Component::Loader => "loader",
        }
    }

    /// The trait a registered type implements: `Renderer`, `Parser`, `Executor` or `Processor`.
    ///
    /// ```
    /// assert_eq!(prompty_build::plugin::Component::Parser.trait_name(), "Parser");
    /// ```
    pub fn trait_name(self) -> &'static str {
        match self {
            Component::Renderer => "Renderer",
            Component::Parser => "Parser",
            Component::Executor => "Executor",
            Component::Processor => "Processor",
            Component::Loader => "ToolLoader",
        }
    }

    /// A typical key, used in error messages.
    fn example_key(self) -> &'static str {
        match self {
            Component::Renderer => "jinja2",
            Component::Parser => "prompty",
            Component::Executor | Component::Processor => "openai",
            Component::Loader => "file",
        }
    }
}

/// Expands a plugin attribute: `attr` is what is inside its parentheses, `item` the annotated
/// item. Returns the item unchanged followed by the registration, or every problem found as one
/// combined error.
///
/// ```
/// use quote::quote;
/// use prompty_build::plugin::{expand, Component};
///
/// // On the trait impl: the impl's self type is registered.
/// let out = expand(Component::Renderer, quote!("upper"), quote! {
///     impl prompty::Renderer for Upper { /* ... */ }
/// })?;
/// assert!(out.to_string().contains("__make_renderer :: < Upper >"));
///
/// // Errors name the problem and show the expected form.
/// let err = expand(Component::Renderer, quote!(), quote!(struct Upper;)).unwrap_err();
/// assert_eq!(err.to_string(), r#"expected a key: #[renderer("jinja2")]"#);
/// let err = expand(Component::Parser, quote!(chat), quote!(struct Chat;)).unwrap_err();
/// assert_eq!(err.to_string(), r#"keys are string literals: #[parser("chat")]"#);
/// # Ok::<(), syn::Error>(())
/// ```
pub fn expand(component: Component, attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let mut errors = Errors::default();
    let keys = parse_keys(component, attr, &mut errors);
    let ty = match syn::parse2::<Item>(item.clone()) {
        Ok(parsed) => registered_type(component, &parsed, &mut errors),
        Err(e) => {
            errors.push(e);
            None
        }
    };
    errors.finish()?;
    let Some(ty) = ty else { return Ok(item) };

    let registration = format_ident!("{}Registration", component.trait_name());
    let make = format_ident!("__make_{}", component.attribute());
    // Spanned on the type: when it does not implement the trait, the trait's
    // `#[diagnostic::on_unimplemented]` message points at the user's type.
    let make = quote_spanned!(ty.span()=> ::prompty::#make::<#ty>);
    Ok(quote! {
        #item
        ::prompty::__private::inventory::submit! {
            ::prompty::#registration {
                keys: &[#(#keys),*],
                make: #make,
            }
        }
    })
}

/// What to emit next to the errors of a failed expansion: the item unchanged, so that the
/// errors of the attribute are not followed by "cannot find type" errors wherever it is used.
///
/// ```
/// let item = quote::quote!(struct Upper;);
/// assert_eq!(prompty_build::plugin::fallback(item.clone()).to_string(), item.to_string());
/// ```
pub fn fallback(item: TokenStream) -> TokenStream {
    item
}

/// The keys: string literals, at least one, none empty, no duplicates.
fn parse_keys(component: Component, attr: TokenStream, errors: &mut Errors) -> Vec<syn::LitStr> {
    let name = component.attribute();
    let exprs = match Punctuated::<Expr, Token![,]>::parse_terminated.parse2(attr) {
        Ok(exprs) => exprs,
        Err(e) => {
            errors.push(syn::Error::new(
                e.span(),
                format!("{e}: expected string keys: #[{name}(\"{}\")]", component.example_key()),
            ));
            return Vec::new();
        }
    };
    if exprs.is_empty() {
        errors.push(syn::Error::new(
            Span::call_site(),
            format!("expected a key: #[{name}(\"{}\")]", component.example_key()),
        ));
        return Vec::new();
    }
    let mut keys: Vec<syn::LitStr> = Vec::new();
    for expr in exprs {
        match &expr {
            Expr::Lit(lit) if lit.attrs.is_empty() => match &lit.lit {
                Lit::Str(s) => {
                    let value = s.value();
                    if value.trim().is_empty() {
                        errors.spanned(s, format!("a key cannot be empty: #[{name}(\"{}\")]", component.example_key()));
                    } else if keys.iter().any(|k| k.value() == value) {
                        errors.spanned(s, format!("duplicate key {value:?}"));
                    } else {
                        keys.push(s.clone());
                    }
                }
                other => {
                    let shown = match other {
                        Lit::Int(_) | Lit::Float(_) | Lit::Bool(_) | Lit::Char(_) => {
                            other.to_token_stream().to_string().trim_matches('\'').to_owned()
                        }
                        _ => component.example_key().to_owned(),
                    };
                    errors.spanned(other, format!("keys are string literals: #[{name}({shown:?})]"));
                }
            },
            Expr::Path(p) if p.path.get_ident().is_some() => {
                let ident = p.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
                let ident = ident.trim_start_matches("r#");
                errors.spanned(&expr, format!("keys are string literals: #[{name}({ident:?})]"));
            }
            _ => errors.spanned(&expr, format!("keys are string literals: #[{name}(\"{}\")]", component.example_key())),
        }
    }
    keys
}

/// The type to register: the item's own type, or the self type of a trait impl.
fn registered_type(component: Component, item: &Item, errors: &mut Errors) -> Option<TokenStream> {
    let name = component.attribute();
    let trait_name = component.trait_name();
    let (ident, generics) = match item {
        Item::Struct(s) => (&s.ident, &s.generics),
        Item::Enum(e) => (&e.ident, &e.generics),
        Item::Union(u) => (&u.ident, &u.generics),
        Item::Impl(imp) => {
            let mut ok = true;
            match &imp.trait_ {
                None => {
                    let (impl_token, self_ty) = (&imp.impl_token, &imp.self_ty);
                    errors.spanned(
                        quote!(#impl_token #self_ty),
                        format!(
                            "#[{name}] goes on a type or on its `impl {trait_name} for Type` block, not on an \
                             inherent impl"
                        ),
                    );
                    ok = false;
                }
                Some((path, _)) => {
                    let other = path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
                    let known = Component::ALL.iter().any(|c| c.trait_name() == other);
                    if known && other != trait_name {
                        errors.spanned(
                            path,
                            format!("#[{name}] registers a `{trait_name}`, but this block implements `{other}`"),
                        );
                        ok = false;
                    }
                }
            }
            if !imp.generics.params.is_empty() {
                errors.spanned(&imp.generics, "plugin types cannot be generic: register a concrete type");
                ok = false;
            }
            return ok.then(|| imp.self_ty.to_token_stream());
        }
        other => {
            let (what, head) = describe(other);
            errors.spanned(
                head,
                format!(
                    "#[{name}(\"{}\")] goes on a struct, enum or union, or on an `impl {trait_name} for Type` \
                     block: found {what}",
                    component.example_key()
                ),
            );
            return None;
        }
    };
    if !generics.params.is_empty() {
        errors.spanned(generics, "plugin types cannot be generic: register a concrete type");
        return None;
    }
    Some(ident.to_token_stream())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand_ok(component: Component, attr: TokenStream, item: TokenStream) -> String {
        match expand(component, attr, item) {
            Ok(out) => out.to_string(),
            Err(e) => panic!("unexpected error: {e}"),
        }
    }

    fn messages(component: Component, attr: TokenStream, item: TokenStream) -> Vec<String> {
        match expand(component, attr, item) {
            Ok(out) => panic!("expected errors, got {out}"),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn every_component_submits_its_registration() {
        for component in Component::ALL {
            let out = expand_ok(
                component,
                quote!("a", "b"),
                quote!(
                    #[derive(Default)]
                    pub struct Thing;
                ),
            );
            let registration = format!(":: prompty :: {}Registration", component.trait_name());
            let make = format!(":: prompty :: __make_{} :: < Thing >", component.attribute());
            assert!(out.starts_with("# [derive (Default)] pub struct Thing ;"), "{out}");
            assert!(out.contains(":: prompty :: __private :: inventory :: submit !"), "{out}");
            assert!(out.contains(&registration), "{out}");
            assert!(out.contains(&make), "{out}");
            assert!(out.contains(r#"keys : & ["a" , "b"]"#), "{out}");
        }
    }

    #[test]
    fn enums_unions_and_trait_impls_are_accepted() {
        let out = expand_ok(
            Component::Parser,
            quote!("p"),
            quote!(
                #[derive(Default)]
                enum P {
                    #[default]
                    A,
                }
            ),
        );
        assert!(out.contains("__make_parser :: < P >"), "{out}");
        let out = expand_ok(Component::Parser, quote!("p"), quote!(union U { a: u8 }));
        assert!(out.contains("__make_parser :: < U >"), "{out}");
        let out = expand_ok(Component::Processor, quote!("p",), quote!(impl prompty::Processor for my::P { }));
        assert!(out.contains("__make_processor :: < my :: P >"), "{out}");
        // A concrete instance of a generic type is concrete.
        let out = expand_ok(Component::Renderer, quote!("r"), quote!(impl Renderer for Wrap<u8> { }));
        assert!(out.contains("__make_renderer :: < Wrap < u8 > >"), "{out}");
        // A trait the attribute does not know about (a re-export under another name) is not judged.
        expand_ok(Component::Renderer, quote!("r"), quote!(impl MyRenderer for R { }));
    }

    #[test]
    fn key_errors() {
        let c = Component::Renderer;
        assert_eq!(
            messages(
                c,
                quote!(),
                quote!(
                    struct R;
                )
            ),
            [r#"expected a key: #[renderer("jinja2")]"#]
        );
        assert_eq!(
            messages(
                c,
                quote!(jinja2),
                quote!(
                    struct R;
                )
            ),
            [r#"keys are string literals: #[renderer("jinja2")]"#]
        );
        assert_eq!(
            messages(
                c,
                quote!(1),
                quote!(
                    struct R;
                )
            ),
            [r#"keys are string literals: #[renderer("1")]"#]
        );
        assert_eq!(
            messages(
                c,
                quote!(r#type),
                quote!(
                    struct R;
                )
            ),
            [r#"keys are string literals: #[renderer("type")]"#]
        );
        assert_eq!(
            messages(
                c,
                quote!(key = "x"),
                quote!(
                    struct R;
                )
            ),
            [r#"keys are string literals: #[renderer("jinja2")]"#]
        );
        assert_eq!(
            messages(
                c,
                quote!(""),
                quote!(
                    struct R;
                )
            ),
            [r#"a key cannot be empty: #[renderer("jinja2")]"#]
        );
        assert_eq!(
            messages(
                c,
                quote!("a", "b", "a"),
                quote!(
                    struct R;
                )
            ),
            [r#"duplicate key "a""#]
        );
        assert_eq!(
            messages(
                Component::Executor,
                quote!(b"x"),
                quote!(
                    struct E;
                )
            ),
            [r#"keys are string literals: #[executor("openai")]"#]
        );
        let msgs = messages(
            c,
            quote!(;),
            quote!(
                struct R;
            ),
        );
        assert!(msgs[0].ends_with(r#"expected string keys: #[renderer("jinja2")]"#), "{msgs:?}");
    }

    #[test]
    fn item_errors() {
        let c = Component::Executor;
        assert_eq!(
            messages(
                c,
                quote!("e"),
                quote!(
                    fn e() {}
                )
            ),
            [
                r#"#[executor("openai")] goes on a struct, enum or union, or on an `impl Executor for Type` block: found a fn"#
            ]
        );
        assert_eq!(
            messages(c, quote!("e"), quote!(impl E { })),
            ["#[executor] goes on a type or on its `impl Executor for Type` block, not on an inherent impl"]
        );
        assert_eq!(
            messages(c, quote!("e"), quote!(impl prompty::Processor for E { })),
            ["#[executor] registers a `Executor`, but this block implements `Processor`"]
        );
        assert_eq!(
            messages(
                c,
                quote!("e"),
                quote!(
                    struct E<T>(T);
                )
            ),
            ["plugin types cannot be generic: register a concrete type"]
        );
        assert_eq!(
            messages(
                c,
                quote!("e"),
                quote!(
                    impl<T> prompty::Executor for E<T> {}
                )
            ),
            ["plugin types cannot be generic: register a concrete type"]
        );
        assert_eq!(
            messages(
                c,
                quote!("e"),
                quote!(
                    struct E<'a>(&'a str);
                )
            ),
            ["plugin types cannot be generic: register a concrete type"]
        );
    }

    #[test]
    fn all_errors_are_reported_together() {
        let msgs = messages(
            Component::Renderer,
            quote!(a, "", "b", "b"),
            quote!(
                struct R<T>(T);
            ),
        );
        assert_eq!(
            msgs,
            [
                r#"keys are string literals: #[renderer("a")]"#,
                r#"a key cannot be empty: #[renderer("jinja2")]"#,
                r#"duplicate key "b""#,
                "plugin types cannot be generic: register a concrete type",
            ]
        );
    }
}
