//! `#[tool]`: turns a sync or `async fn` with owned, typed arguments into a tool the model can
//! call, registered in prompty's tool name registry at link time.
//!
//! The fn stays a normal fn. Next to it the expansion declares:
//!
//! - a hidden argument struct, one field per parameter (same name and type, the parameter's doc
//!   comment as the field's), deriving `Deserialize` and `JsonSchema` through prompty's re-exports
//!   (users need no serde or schemars dependency);
//! - a braced unit struct with the fn's name (`struct get_weather {}`: it lives in the type
//!   namespace only, so the fn stays callable) with `get_weather::NAME`,
//!   `get_weather::definition()` (the tool's declaration) and an `impl prompty::ToolFunction`;
//! - an `inventory` submission of a `prompty::ToolRegistration` under the tool's name.
//!
//! ```
//! use quote::quote;
//!
//! let out = prompty_build::tool::expand(quote!(), quote! {
//!     /// Today's weather.
//!     async fn get_weather(
//!         /// The city
//!         city: String,
//!         days: Option<u8>,
//!     ) -> Result<String, std::io::Error> { Ok(city) }
//! })?;
//! let out = out.to_string();
//! assert!(out.contains("struct __prompty_tool_args_get_weather"));
//! assert!(out.contains("struct get_weather { }"));
//! assert!(out.contains(r#"Some ("Today's weather.")"#));
//! assert!(out.contains("tool_output_result"));
//! # Ok::<(), syn::Error>(())
//! ```

use crate::errors::{describe, Errors};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::ext::IdentExt;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{
    Attribute, Expr, ExprLit, FnArg, GenericArgument, Ident, Item, ItemFn, Lit, LitStr, Meta, Pat, PathArguments,
    ReturnType, Token, Type, TypeParamBound, TypeReference,
};

/// The options `#[tool(...)]` accepts.
const OPTIONS: &str = "`name = \"...\"`, `description = \"...\"`, `namespace = \"...\"` and `idempotent`";

/// Attributes of a parameter that belong to its argument field: its doc comment (the parameter's
/// description) and serde/schemars field attributes. rustc rejects them on fn parameters.
const FIELD_ATTRIBUTES: [&str; 3] = ["doc", "serde", "schemars"];

/// Expands `#[tool]`: `attr` is what is inside its parentheses, `item` the annotated fn. Returns
/// the fn (with its parameters' doc comments moved to the argument struct) followed by the
/// generated items, or every problem found as one combined error.
///
/// Options: `name = "..."` (the tool's name; default: the fn's name), `namespace = "..."` (its
/// namespace in the tool catalog; default: the crate's name), `description = "..."`
/// (default: the fn's doc comment) and `idempotent` (running the tool twice has the effect of
/// running it once: a durable turn resumed after an interruption during a call of it runs the call
/// again, where another tool's call needs reconciliation).
///
/// ```
/// use quote::quote;
/// use prompty_build::tool::expand;
///
/// let out = expand(quote!(name = "weather", description = "Current weather"), quote! {
///     fn get_weather(city: String) -> String { city }
/// })?;
/// assert!(out.to_string().contains(r#"pub const NAME : & 'static str = "weather""#));
///
/// let err = expand(quote!(), quote!(fn greet(name: &str) {})).unwrap_err();
/// assert_eq!(err.to_string(), "tool arguments must be owned: use `String` instead of `&str`");
///
/// let err = expand(quote!(rename = "x"), quote!(fn f() {})).unwrap_err();
/// assert!(err.to_string().starts_with("unknown #[tool] option `rename`"));
/// # Ok::<(), syn::Error>(())
/// ```
pub fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let mut errors = Errors::default();
    let options = parse_options(attr, &mut errors);
    let mut func = match syn::parse2::<ItemFn>(item.clone()) {
        Ok(func) => func,
        Err(_) => {
            errors.push(not_a_fn(item));
            return errors.finish().map(|()| TokenStream::new());
        }
    };
    let params = check_signature(&func, &mut errors);
    errors.finish()?;
    strip_parameter_attributes(&mut func);
    if !params.is_empty() {
        // Tool arguments are owned by design: clippy's `needless_pass_by_value` would suggest
        // `&str`, which #[tool] rejects.
        func.attrs.push(syn::parse_quote!(#[allow(clippy::needless_pass_by_value)]));
    }

    let fn_ident = &func.sig.ident;
    let vis = &func.vis;
    let cfgs: Vec<&Attribute> = func.attrs.iter().filter(|a| a.path().is_ident("cfg")).collect();
    let args_ident = format_ident!("__prompty_tool_args_{}", fn_ident.unraw());
    let name = match &options.name {
        Some(name) => name.value(),
        None => fn_ident.unraw().to_string(),
    };
    let namespace = match &options.namespace {
        Some(ns) => ns.to_token_stream(),
        None => quote!(::core::env!("CARGO_CRATE_NAME")),
    };
    let description = match &options.description {
        Some(d) => Some(d.value()),
        None => doc_text(&func.attrs),
    };
    let description = match description {
        Some(d) => quote!(::std::option::Option::Some(#d)),
        None => quote!(::std::option::Option::None),
    };

    let fields = params.iter().map(|p| {
        let (attrs, ident, ty) = (&p.attrs, &p.ident, &p.ty);
        quote!(#(#attrs)* #ident: #ty)
    });
    let args = params.iter().map(|p| &p.ident);
    let call = quote!(#fn_ident(#(__prompty_args.#args),*));
    let (encode_span, returns_result) = match &func.sig.output {
        ReturnType::Default => (fn_ident.span(), false),
        ReturnType::Type(_, ty) => (ty.span(), is_result(ty)),
    };
    let encode = if returns_result {
        quote_spanned!(encode_span=> ::prompty::__private::tool_output_result(Self::NAME, __prompty_out))
    } else {
        quote_spanned!(encode_span=> ::prompty::__private::tool_output(Self::NAME, __prompty_out))
    };
    let body = if func.sig.asyncness.is_some() {
        quote! {
            ::std::boxed::Box::pin(async move {
                let __prompty_args: #args_ident = ::prompty::__private::tool_args(Self::NAME, __prompty_json)?;
                let __prompty_out = #call.await;
                #encode
            })
        }
    } else {
        // A sync fn runs right away: neither its arguments nor its result need to be `Send`.
        quote! {
            let __prompty_result = match ::prompty::__private::tool_args::<#args_ident>(Self::NAME, __prompty_json) {
                ::std::result::Result::Ok(__prompty_args) => {
                    let __prompty_out = #call;
                    #encode
                }
                ::std::result::Result::Err(__prompty_error) => ::std::result::Result::Err(__prompty_error),
            };
            ::std::boxed::Box::pin(::std::future::ready(__prompty_result))
        }
    };
    let idempotent = if options.idempotent {
        quote! {
            fn idempotent(&self) -> bool {
                true
            }
        }
    } else {
        TokenStream::new()
    };
    let fn_name = fn_ident.unraw().to_string();
    let arg_infos = params.iter().map(arg_info);
    let handle_doc = format!(
        "The tool `{name}`: the `#[prompty::tool]` fn `{fn_ident}` as a `prompty::ToolFunction`, registered under \
         `{name:?}` at link time. `{fn_ident}::NAME` is the tool's name and `{fn_ident}::definition()` its \
         declaration; `{fn_ident} {{}}` is a value to hand to `prompty::Tools`.",
        fn_ident = fn_ident.unraw(),
    );

    Ok(quote! {
        #func

        #(#cfgs)*
        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        #[derive(::prompty::__private::serde::Deserialize, ::prompty::__private::schemars::JsonSchema)]
        #[serde(crate = "::prompty::__private::serde")]
        #[schemars(crate = "::prompty::__private::schemars")]
        struct #args_ident {
            #(#fields,)*
        }

        #(#cfgs)*
        #[doc = #handle_doc]
        #[allow(non_camel_case_types)]
        #[derive(::std::clone::Clone, ::std::marker::Copy, ::std::fmt::Debug, ::std::default::Default)]
        #vis struct #fn_ident {}

        #(#cfgs)*
        impl #fn_ident {
            /// The tool's name: what the model calls and what the tool is registered under.
            pub const NAME: &'static str = #name;

            /// What typed prompts check a declared `kind: function` tool against.
            #[doc(hidden)]
            pub const __PROMPTY_TOOL: ::prompty::__private::ToolInfo = ::prompty::__private::ToolInfo {
                name: #name,
                fn_name: #fn_name,
                args: &[#(#arg_infos),*],
                found: true,
            };

            /// The tool's declaration: its name, its description (the fn's doc comment) and its
            /// parameters (from the argument types; a parameter's doc comment is its description,
            /// an `Option` parameter is not required).
            pub fn definition() -> ::prompty::Tool {
                ::prompty::__private::tool_definition::<#args_ident>(Self::NAME, #description)
            }
        }

        #(#cfgs)*
        impl ::prompty::ToolFunction for #fn_ident {
            fn call<'a>(
                &'a self,
                __prompty_json: ::prompty::__private::serde_json::Value,
            ) -> ::prompty::BoxFuture<'a, ::prompty::Result<::prompty::__private::serde_json::Value>> {
                #body
            }

            fn definition(&self) -> ::std::option::Option<::prompty::Tool> {
                ::std::option::Option::Some(#fn_ident::definition())
            }

            #idempotent
        }

        #(#cfgs)*
        ::prompty::__private::inventory::submit! {
            ::prompty::ToolRegistration {
                name: #name,
                namespace: #namespace,
                make: || ::std::sync::Arc::new(#fn_ident {}),
            }
        }
    })
}

/// The `ArgInfo` of a parameter: its JSON name, its type as written, the JSON shape of its type,
/// and whether the model may leave it out.
fn arg_info(p: &Param) -> TokenStream {
    let mut name = p.ident.unraw().to_string();
    let mut optional = false;
    for attr in p.attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") {
                if let Ok(value) = meta.value() {
                    if let Ok(lit) = value.parse::<LitStr>() {
                        name = lit.value();
                    }
                }
            } else if meta.path.is_ident("default") {
                optional = true;
                if let Ok(value) = meta.value() {
                    let _ = value.parse::<LitStr>();
                }
            } else if meta.input.peek(Token![=]) {
                let _ = meta.value().and_then(|v| v.parse::<Expr>());
            } else if meta.input.peek(syn::token::Paren) {
                let _ = meta.parse_nested_meta(|_| Ok(()));
            }
            Ok(())
        });
    }
    let mut ty = &p.ty;
    if let Some(inner) = single_generic(ty, "Option") {
        optional = true;
        ty = inner;
    }
    let shape = shape(ty);
    let ty_text = type_string(&p.ty);
    quote! {
        ::prompty::__private::ArgInfo { name: #name, ty: #ty_text, shape: #shape, optional: #optional }
    }
}

/// The `ArgShape` of a type: `Vec<T>` and `Box<T>` are looked through, the rest is classified by
/// `prompty::__private::Classify` (types it does not list are not checked).
fn shape(ty: &Type) -> TokenStream {
    if let Some(inner) = single_generic(ty, "Vec") {
        let inner = shape(inner);
        return quote!(::prompty::__private::ArgShape::Array(&const { #inner }));
    }
    if let Some(inner) = single_generic(ty, "Box") {
        if !matches!(inner, Type::Path(p) if p.path.is_ident("str")) {
            return shape(inner);
        }
    }
    quote!({
        #[allow(unused_imports)]
        use ::prompty::__private::ClassifyFallback as _;
        ::prompty::__private::Classify::<#ty>::SHAPE
    })
}

/// `T` when `ty` is `Name<T>` (any path ending in `Name`, such as `std::option::Option<T>`).
fn single_generic<'t>(ty: &'t Type, name: &str) -> Option<&'t Type> {
    match ty {
        Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?;
            if last.ident != name {
                return None;
            }
            match &last.arguments {
                PathArguments::AngleBracketed(args) if args.args.len() == 1 => match args.args.first()? {
                    GenericArgument::Type(t) => Some(t),
                    _ => None,
                },
                _ => None,
            }
        }
        Type::Paren(p) => single_generic(&p.elem, name),
        Type::Group(g) => single_generic(&g.elem, name),
        _ => None,
    }
}

/// What to emit next to the errors of a failed expansion: the fn with its parameters' doc comments
/// removed (rustc rejects them), so that the errors of `#[tool]` are neither followed by errors
/// about those comments nor by "cannot find function" errors wherever the fn is called. Anything
/// that is not a fn comes back unchanged.
///
/// ```
/// use quote::quote;
/// let out = prompty_build::tool::fallback(quote!(fn f(/// The city
///     city: &str) {}));
/// assert_eq!(out.to_string(), quote!(fn f(city: &str) {}).to_string());
/// ```
pub fn fallback(item: TokenStream) -> TokenStream {
    match syn::parse2::<ItemFn>(item.clone()) {
        Ok(mut func) => {
            strip_parameter_attributes(&mut func);
            func.into_token_stream()
        }
        Err(_) => item,
    }
}

#[derive(Default)]
struct Options {
    name: Option<LitStr>,
    description: Option<LitStr>,
    namespace: Option<LitStr>,
    /// `idempotent`: running the tool twice has the effect of running it once.
    idempotent: bool,
}

fn parse_options(attr: TokenStream, errors: &mut Errors) -> Options {
    let mut options = Options::default();
    let metas = match Punctuated::<Meta, Token![,]>::parse_terminated.parse2(attr) {
        Ok(metas) => metas,
        Err(e) => {
            errors.push(syn::Error::new(e.span(), format!("{e}: the #[tool] options are {OPTIONS}")));
            return options;
        }
    };
    for meta in metas {
        let key = meta.path().get_ident().map(Ident::to_string);
        if key.as_deref() == Some("idempotent") {
            match &meta {
                Meta::Path(path) if options.idempotent => {
                    errors.spanned(path, "duplicate #[tool] option `idempotent`");
                }
                Meta::Path(_) => options.idempotent = true,
                other => errors.spanned(other, "`idempotent` takes no value: #[tool(idempotent)]"),
            }
            continue;
        }
        let slot = match key.as_deref() {
            Some("name") => &mut options.name,
            Some("description") => &mut options.description,
            Some("namespace") => &mut options.namespace,
            _ => {
                let shown = meta.path().to_token_stream().to_string().replace(' ', "");
                errors.spanned(meta.path(), format!("unknown #[tool] option `{shown}`: the options are {OPTIONS}"));
                continue;
            }
        };
        let key = key.unwrap_or_default();
        let value = match &meta {
            Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => s.clone(),
                other => {
                    errors.spanned(other, format!("expected a string literal: #[tool({key} = \"...\")]"));
                    continue;
                }
            },
            other => {
                errors.spanned(other, format!("expected `{key} = \"...\"`: #[tool({key} = \"...\")]"));
                continue;
            }
        };
        if slot.is_some() {
            errors.spanned(meta.path(), format!("duplicate #[tool] option `{key}`"));
            continue;
        }
        let text = value.value();
        if text.trim().is_empty() {
            errors.spanned(&value, format!("the tool's {key} cannot be empty"));
            continue;
        }
        if key == "namespace" && text.contains("::") {
            errors.spanned(&value, "a tool namespace cannot contain `::` (the catalog writes `namespace::tool`)");
            continue;
        }
        if key == "name" && text.chars().any(char::is_whitespace) {
            errors.spanned(&value, "a tool name cannot contain whitespace (models expect names like `get_weather`)");
            continue;
        }
        *slot = Some(value);
    }
    options
}

fn not_a_fn(item: TokenStream) -> syn::Error {
    match syn::parse2::<Item>(item) {
        Ok(item) => {
            let (what, head) = describe(&item);
            syn::Error::new_spanned(head, format!("#[tool] goes on a fn: found {what}"))
        }
        Err(_) => syn::Error::new(Span::call_site(), "#[tool] goes on a fn"),
    }
}

/// One tool argument: a parameter of the fn.
struct Param {
    ident: Ident,
    ty: Type,
    /// The attributes that go on the argument field (doc comment, serde and schemars attributes).
    attrs: Vec<Attribute>,
}

fn check_signature(func: &ItemFn, errors: &mut Errors) -> Vec<Param> {
    let sig = &func.sig;
    if let syn::Safety::Unsafe(token) = &sig.safety {
        errors.spanned(token, "tool functions cannot be `unsafe`: the model calls them with any arguments");
    }
    if !sig.generics.params.is_empty() {
        errors.spanned(
            &sig.generics,
            "tool functions cannot be generic: the argument types must be concrete so their JSON schema is known",
        );
    }
    if let Some(variadic) = &sig.variadic {
        errors.spanned(variadic, "tool functions cannot be variadic");
    }
    let mut params = Vec::new();
    for input in &sig.inputs {
        let typed = match input {
            FnArg::Receiver(receiver) => {
                errors.spanned(
                    receiver,
                    "#[tool] goes on a free fn: a tool cannot take `self` (it is called with its JSON arguments only)",
                );
                continue;
            }
            FnArg::Typed(typed) => typed,
        };
        for attr in &typed.attrs {
            if attr.path().is_ident("cfg") || attr.path().is_ident("cfg_attr") {
                errors.spanned(attr, "tool arguments cannot be conditional: #[cfg] on a #[tool] argument");
            }
        }
        check_owned(&typed.ty, errors);
        let ident = match &*typed.pat {
            Pat::Ident(p) if p.subpat.is_none() => p.ident.clone(),
            Pat::Wild(w) => {
                errors.spanned(w, "tool arguments need a name: it is the argument's JSON property name");
                continue;
            }
            other => {
                errors.spanned(
                    other,
                    "tool arguments need a plain name (it is the argument's JSON property name): take the value \
                     whole and destructure it in the body",
                );
                continue;
            }
        };
        let attrs =
            typed.attrs.iter().filter(|a| FIELD_ATTRIBUTES.iter().any(|n| a.path().is_ident(n))).cloned().collect();
        params.push(Param { ident, ty: (*typed.ty).clone(), attrs });
    }
    params
}

fn strip_parameter_attributes(func: &mut ItemFn) {
    for input in &mut func.sig.inputs {
        if let FnArg::Typed(typed) = input {
            typed.attrs.retain(|a| !FIELD_ATTRIBUTES.iter().any(|n| a.path().is_ident(n)));
        }
    }
}

/// Reports references and borrowed lifetimes anywhere in an argument type: arguments are decoded
/// from JSON and cannot borrow from it.
fn check_owned(ty: &Type, errors: &mut Errors) {
    match ty {
        Type::Reference(r) => errors.spanned(r, borrowed_message(r)),
        Type::Path(p) => {
            if let Some(q) = &p.qself {
                check_owned(&q.ty, errors);
            }
            for segment in &p.path.segments {
                if let PathArguments::AngleBracketed(args) = &segment.arguments {
                    for arg in &args.args {
                        match arg {
                            GenericArgument::Lifetime(l) => check_lifetime(l, errors),
                            GenericArgument::Type(t) => check_owned(t, errors),
                            GenericArgument::AssocType(a) => check_owned(&a.ty, errors),
                            _ => {}
                        }
                    }
                }
            }
        }
        Type::Array(a) => check_owned(&a.elem, errors),
        Type::Slice(s) => check_owned(&s.elem, errors),
        Type::Paren(p) => check_owned(&p.elem, errors),
        Type::Group(g) => check_owned(&g.elem, errors),
        Type::Tuple(t) => t.elems.iter().for_each(|e| check_owned(e, errors)),
        Type::ImplTrait(i) => {
            errors.spanned(i, "tool functions cannot be generic: use a concrete type, not `impl Trait`")
        }
        Type::TraitObject(t) => {
            for bound in &t.bounds {
                if let TypeParamBound::Lifetime(l) = bound {
                    check_lifetime(l, errors);
                }
            }
        }
        _ => {}
    }
}

fn check_lifetime(lifetime: &syn::Lifetime, errors: &mut Errors) {
    if lifetime.ident != "static" {
        errors.spanned(
            lifetime,
            format!("tool arguments must be owned: `{lifetime}` borrows; use an owned type (or `'static`)"),
        );
    }
}

fn borrowed_message(r: &TypeReference) -> String {
    let borrowed = type_string(r);
    match owned_form(&r.elem) {
        Some(owned) => format!("tool arguments must be owned: use `{owned}` instead of `{borrowed}`"),
        None => format!("tool arguments must be owned: `{borrowed}` borrows; use an owned type"),
    }
}

/// The owned counterpart of a borrowed type, when it is obvious.
fn owned_form(elem: &Type) -> Option<String> {
    let owned = match elem {
        Type::Reference(inner) => return owned_form(&inner.elem),
        Type::Slice(s) => format!("Vec<{}>", type_string(&s.elem)),
        Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?;
            let single = p.path.segments.len() == 1;
            match last.ident.to_string().as_str() {
                "str" if single => "String".to_owned(),
                "Path" if last.arguments.is_empty() => "PathBuf".to_owned(),
                "OsStr" if last.arguments.is_empty() => "OsString".to_owned(),
                "CStr" if last.arguments.is_empty() => "CString".to_owned(),
                _ => type_string(elem),
            }
        }
        Type::Array(_) | Type::Tuple(_) | Type::Paren(_) | Type::Group(_) => type_string(elem),
        _ => return None,
    };
    // Still borrowed inside (`&Vec<&str>`): no simple suggestion.
    let borrows = owned.contains('&') || owned.match_indices('\'').any(|(i, _)| !owned[i..].starts_with("'static"));
    (!borrows).then_some(owned)
}

/// A type as a user would write it (`Vec<u8>`, not the token printer's `Vec < u8 >`).
fn type_string(ty: &impl ToTokens) -> String {
    let mut s = ty.to_token_stream().to_string();
    for (from, to) in [(" < ", "<"), ("< ", "<"), (" <", "<"), (" >", ">"), (" ,", ","), (" :: ", "::"), (":: ", "::")]
    {
        s = s.replace(from, to);
    }
    s.replace("& ", "&").replace(" ;", ";")
}

/// Whether a return type is a `Result` (its last path segment is named `Result`: `Result<T, E>`,
/// `std::io::Result<T>`, `anyhow::Result<T>`, `prompty::Result<T>`...).
fn is_result(ty: &Type) -> bool {
    match ty {
        Type::Path(p) => p.qself.is_none() && p.path.segments.last().is_some_and(|s| s.ident == "Result"),
        Type::Paren(p) => is_result(&p.elem),
        Type::Group(g) => is_result(&g.elem),
        _ => false,
    }
}

/// The text of doc comments: lines joined with `\n`, common indentation removed, trimmed.
/// `None` when there is no (literal) doc comment.
fn doc_text(attrs: &[Attribute]) -> Option<String> {
    let mut lines: Vec<String> = Vec::new();
    for attr in attrs {
        if !attr.path().is_ident("doc") {
            continue;
        }
        if let Meta::NameValue(nv) = &attr.meta {
            if let Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) = &nv.value {
                lines.extend(s.value().split('\n').map(|l| l.trim_end_matches('\r').to_owned()));
            }
        }
    }
    let indent =
        lines.iter().filter(|l| !l.trim().is_empty()).map(|l| l.len() - l.trim_start().len()).min().unwrap_or(0);
    let text =
        lines.iter().map(|l| l.get(indent..).unwrap_or(l.trim_start()).trim_end()).collect::<Vec<_>>().join("\n");
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand_ok(attr: TokenStream, item: TokenStream) -> String {
        match expand(attr, item) {
            Ok(out) => out.to_string(),
            Err(e) => panic!("unexpected error: {e}"),
        }
    }

    fn messages(attr: TokenStream, item: TokenStream) -> Vec<String> {
        match expand(attr, item) {
            Ok(out) => panic!("expected errors, got {out}"),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn doc_comments_become_descriptions_and_leave_the_fn() {
        let out = expand_ok(
            quote!(),
            quote! {
                /// Gets the weather.
                ///
                ///   Indented line.
                pub async fn get_weather(
                    /// The city
                    city: String,
                    #[serde(default)]
                    days: u8,
                    #[allow(unused)] unit: Option<String>,
                ) -> String { city }
            },
        );
        let (func, rest) = out.split_once("# [doc (hidden)]").unwrap();
        assert!(!func.contains("The city"), "{func}");
        assert!(!func.contains("serde"), "{func}");
        assert!(func.contains("# [allow (unused)] unit : Option < String >"), "{func}");
        assert!(func.contains("# [allow (clippy :: needless_pass_by_value)] pub async fn"), "{func}");
        assert!(rest.contains(r#"# [doc = r" The city"] city : String"#), "{rest}");
        assert!(rest.contains("# [serde (default)] days : u8"), "{rest}");
        assert!(!rest.contains("allow (unused)"), "{rest}");
        assert!(rest.contains(r#"Some ("Gets the weather.\n\n  Indented line.")"#), "{rest}");
        assert!(rest.contains("pub struct get_weather { }"), "{rest}");
        assert!(rest
            .contains("get_weather (__prompty_args . city , __prompty_args . days , __prompty_args . unit) . await"));
        assert!(rest.contains("tool_output (Self :: NAME , __prompty_out)"), "{rest}");
        assert!(rest.contains(r#"name : "get_weather""#), "{rest}");
    }

    #[test]
    fn options_override_name_and_description() {
        let out = expand_ok(
            quote!(name = "weather", description = "Current weather"),
            quote! {
                /// Ignored.
                fn get_weather() -> std::io::Result<String> { Ok(String::new()) }
            },
        );
        assert!(out.contains(r#"pub const NAME : & 'static str = "weather""#), "{out}");
        assert!(out.contains(r#"Some ("Current weather")"#), "{out}");
        assert!(!out.contains(r#"Some ("Ignored.")"#), "{out}");
        assert!(out.contains("tool_output_result"), "{out}");
        // A sync fn runs before the future is built.
        assert!(out.contains("future :: ready"), "{out}");
    }

    #[test]
    fn idempotent_makes_the_function_say_so() {
        let plain = expand_ok(
            quote!(),
            quote!(
                fn lookup() -> String {
                    String::new()
                }
            ),
        );
        assert!(!plain.contains("fn idempotent"), "{plain}");
        let out = expand_ok(
            quote!(idempotent, name = "find"),
            quote!(
                fn lookup() -> String {
                    String::new()
                }
            ),
        );
        assert!(out.contains("fn idempotent (& self) -> bool { true }"), "{out}");
        assert_eq!(
            messages(
                quote!(idempotent, idempotent),
                quote!(
                    fn f() {}
                )
            ),
            ["duplicate #[tool] option `idempotent`"]
        );
        assert_eq!(
            messages(
                quote!(idempotent = "yes"),
                quote!(
                    fn f() {}
                )
            ),
            ["`idempotent` takes no value: #[tool(idempotent)]"]
        );
    }

    #[test]
    fn no_doc_comment_means_no_description() {
        let out = expand_ok(
            quote!(),
            quote!(
                fn ping() {}
            ),
        );
        assert!(
            out.contains(
                "tool_definition :: < __prompty_tool_args_ping > (Self :: NAME , :: std :: option :: Option :: None)"
            ),
            "{out}"
        );
        assert!(out.contains("struct __prompty_tool_args_ping { }"), "{out}");
    }

    #[test]
    fn raw_identifiers_are_unraw_in_names() {
        let out = expand_ok(
            quote!(),
            quote!(
                fn r#match(r#type: String) {}
            ),
        );
        assert!(out.contains("struct __prompty_tool_args_match"), "{out}");
        assert!(out.contains(r#"name : "match""#), "{out}");
        assert!(out.contains("__prompty_args . r#type"), "{out}");
    }

    #[test]
    fn cfg_attributes_follow_the_generated_items() {
        let out = expand_ok(
            quote!(),
            quote!(
                #[cfg(feature = "x")]
                fn f() {}
            ),
        );
        assert_eq!(out.matches("# [cfg (feature = \"x\")]").count(), 6, "{out}");
    }

    #[test]
    fn borrowed_arguments_suggest_the_owned_type() {
        let cases = [
            (quote!(&str), "use `String` instead of `&str`"),
            (quote!(&'static str), "use `String` instead of `&'static str`"),
            (quote!(&[u8]), "use `Vec<u8>` instead of `&[u8]`"),
            (quote!(&std::path::Path), "use `PathBuf` instead of `&std::path::Path`"),
            (quote!(&Vec<String>), "use `Vec<String>` instead of `&Vec<String>`"),
            (quote!(&mut Point), "use `Point` instead of `&mut Point`"),
            (quote!(&&str), "use `String` instead of `&&str`"),
            (quote!(&Vec<&str>), "`&Vec<&str>` borrows; use an owned type"),
            (quote!(&dyn Display), "`&dyn Display` borrows; use an owned type"),
            (quote!(Option<&str>), "use `String` instead of `&str`"),
            (quote!(Cow<'a, str>), "`'a` borrows; use an owned type (or `'static`)"),
        ];
        for (ty, expected) in cases {
            let msgs = messages(quote!(), quote!(fn f(x: #ty) {}));
            assert_eq!(msgs, vec![format!("tool arguments must be owned: {expected}")], "{ty}");
        }
        // 'static lifetimes are owned enough.
        expand_ok(
            quote!(),
            quote!(
                fn f(x: Cow<'static, str>) {}
            ),
        );
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let msgs = messages(
            quote!(nme = "x", name = 1),
            quote!(
                unsafe fn f<T>(&self, a: &str, (b, c): (i32, i32), _: u8, d: impl Display) {}
            ),
        );
        let expected = [
            "unknown #[tool] option `nme`: the options are `name = \"...\"`, `description = \"...\"`, `namespace = \"...\"` and `idempotent`",
            "expected a string literal: #[tool(name = \"...\")]",
            "tool functions cannot be `unsafe`: the model calls them with any arguments",
            "tool functions cannot be generic: the argument types must be concrete so their JSON schema is known",
            "#[tool] goes on a free fn: a tool cannot take `self` (it is called with its JSON arguments only)",
            "tool arguments must be owned: use `String` instead of `&str`",
            "tool arguments need a plain name (it is the argument's JSON property name): take the value whole and \
             destructure it in the body",
            "tool arguments need a name: it is the argument's JSON property name",
            "tool functions cannot be generic: use a concrete type, not `impl Trait`",
        ];
        assert_eq!(msgs, expected);
    }

    #[test]
    fn option_errors() {
        assert_eq!(
            messages(
                quote!(name),
                quote!(
                    fn f() {}
                )
            ),
            ["expected `name = \"...\"`: #[tool(name = \"...\")]"]
        );
        assert_eq!(
            messages(
                quote!(name = "a", name = "b"),
                quote!(
                    fn f() {}
                )
            ),
            ["duplicate #[tool] option `name`"]
        );
        assert_eq!(
            messages(
                quote!(name = ""),
                quote!(
                    fn f() {}
                )
            ),
            ["the tool's name cannot be empty"]
        );
        assert_eq!(
            messages(
                quote!(name = "get weather"),
                quote!(
                    fn f() {}
                )
            ),
            ["a tool name cannot contain whitespace (models expect names like `get_weather`)"]
        );
        assert_eq!(
            messages(
                quote!(serde::rename = "x"),
                quote!(
                    fn f() {}
                )
            ),
            ["unknown #[tool] option `serde::rename`: the options are `name = \"...\"`, `description = \"...\"`, `namespace = \"...\"` and `idempotent`"]
        );
        let msgs = messages(
            quote!(= "x"),
            quote!(
                fn f() {}
            ),
        );
        assert!(
            msgs[0].ends_with(
                "the #[tool] options are `name = \"...\"`, `description = \"...\"`, `namespace = \"...\"` and \
                 `idempotent`"
            ),
            "{msgs:?}"
        );
    }

    #[test]
    fn tool_goes_on_a_fn() {
        assert_eq!(
            messages(
                quote!(),
                quote!(
                    struct S;
                )
            ),
            ["#[tool] goes on a fn: found a struct"]
        );
        assert_eq!(
            messages(
                quote!(),
                quote!(
                    mod m {}
                )
            ),
            ["#[tool] goes on a fn: found a module"]
        );
        assert_eq!(messages(quote!(), quote!(impl S {})), ["#[tool] goes on a fn: found an inherent impl"]);
        // Option errors are reported too.
        assert_eq!(
            messages(
                quote!(x),
                quote!(
                    const C: u8 = 1;
                )
            )
            .len(),
            2
        );
    }

    #[test]
    fn cfg_on_arguments_is_rejected() {
        assert_eq!(
            messages(
                quote!(),
                quote!(
                    fn f(#[cfg(test)] a: u8) {}
                )
            ),
            ["tool arguments cannot be conditional: #[cfg] on a #[tool] argument"]
        );
    }

    #[test]
    fn fallback_strips_parameter_docs_only() {
        let out = fallback(quote!(
            #[inline]
            fn f(
                /// doc
                #[allow(unused)]
                a: &str,
            ) {
            }
        ));
        assert_eq!(
            out.to_string().replace(" ,)", ")"),
            quote!(
                #[inline]
                fn f(#[allow(unused)] a: &str) {}
            )
            .to_string()
        );
        let item = quote!(
            struct S;
        );
        assert_eq!(fallback(item.clone()).to_string(), item.to_string());
    }

    #[test]
    fn result_detection() {
        for ty in [quote!(Result<u8, String>), quote!(std::io::Result<u8>), quote!(prompty::Result<()>)] {
            assert!(is_result(&syn::parse2(ty).unwrap()));
        }
        for ty in [quote!(String), quote!(Option<Result<u8, String>>), quote!(())] {
            assert!(!is_result(&syn::parse2(ty).unwrap()));
        }
    }

    #[test]
    fn doc_text_joins_and_dedents() {
        let attrs: Vec<Attribute> = vec![
            syn::parse_quote!(#[doc = " First."]),
            syn::parse_quote!(#[doc = "    code"]),
            syn::parse_quote!(#[doc = ""]),
            syn::parse_quote!(#[doc(hidden)]),
            syn::parse_quote!(#[doc = " Last.  "]),
        ];
        assert_eq!(doc_text(&attrs).as_deref(), Some("First.\n   code\n\nLast."));
        assert_eq!(doc_text(&[syn::parse_quote!(#[doc = "   "])]), None);
    }
}
