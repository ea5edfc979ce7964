//! Helpers shared by the macro expanders: error accumulation and short descriptions of items.

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::Item;

/// Collects every error of an input, so that a macro reports them all at once.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(error),
            None => self.0 = Some(error),
        }
    }

    pub(crate) fn spanned(&mut self, tokens: impl ToTokens, message: impl std::fmt::Display) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    /// `Ok` when nothing was collected, else all the errors.
    pub(crate) fn finish(self) -> syn::Result<()> {
        match self.0 {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }
}

/// What an item is ("a struct", "a trait impl", ...) and the tokens that name it (a short span
/// for errors about the whole item).
pub(crate) fn describe(item: &Item) -> (&'static str, TokenStream) {
    fn pair(a: impl ToTokens, b: impl ToTokens) -> TokenStream {
        quote!(#a #b)
    }
    match item {
        Item::Const(i) => ("a const", pair(i.const_token, &i.ident)),
        Item::Enum(i) => ("an enum", pair(i.enum_token, &i.ident)),
        Item::ExternCrate(i) => ("an extern crate", pair(i.extern_token, &i.ident)),
        Item::Fn(i) => ("a fn", pair(i.sig.fn_token, &i.sig.ident)),
        Item::ForeignMod(i) => ("an extern block", i.abi.to_token_stream()),
        Item::Impl(i) => {
            let kind = if i.trait_.is_some() { "a trait impl" } else { "an inherent impl" };
            (kind, pair(i.impl_token, &i.self_ty))
        }
        Item::Macro(i) => ("a macro invocation", i.mac.path.to_token_stream()),
        Item::Mod(i) => ("a module", pair(i.mod_token, &i.ident)),
        Item::Static(i) => ("a static", pair(i.static_token, &i.ident)),
        Item::Struct(i) => ("a struct", pair(i.struct_token, &i.ident)),
        Item::Trait(i) => ("a trait", pair(i.trait_token, &i.ident)),
        Item::TraitAlias(i) => ("a trait alias", pair(i.trait_token, &i.ident)),
        Item::Type(i) => ("a type alias", pair(i.type_token, &i.ident)),
        Item::Union(i) => ("a union", pair(i.union_token, &i.ident)),
        Item::Use(i) => ("a use declaration", i.use_token.to_token_stream()),
        other => ("this item", other.to_token_stream()),
    }
}
