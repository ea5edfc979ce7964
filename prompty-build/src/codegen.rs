//! The code generator shared by `include_prompty!` and [`crate::compile`]: a [`TypedPrompt`]
//! becomes a module holding `Inputs`, `Output`, `agent()`, `prepare`, `invoke`, `invoke_stream`,
//! `tools()` and the compile-time checks of the prompt's function tools against their
//! `#[prompty::tool]` handlers.
//!
//! ```
//! let dir = std::env::temp_dir().join(format!("prompty-doc-codegen-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let path = dir.join("greet.prompty");
//! std::fs::write(&path, "---\ninputs: [who]\n---\nuser:\nHi {{ who }}").unwrap();
//! let prompt = prompty_build::typed::analyze(&path, "greet.prompty").prompt.unwrap();
//! let tokens = prompty_build::codegen::module(&quote::format_ident!("greet"), &prompt, &Default::default());
//! let code = prettyplease::unparse(&syn::parse2(tokens)?);
//! // The optional input `who` is an optional field of `Inputs`.
//! assert!(code.contains("pub who: ::std::option::Option<::std::string::String>,"));
//! # Ok::<(), syn::Error>(())
//! ```

use crate::names;
use crate::typed::{ChildPrompt, Field, FieldType, FunctionTool, ParamKind, StructDef, TypedPrompt};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};

/// How a module is generated.
///
/// ```
/// use prompty_build::codegen::{module, Options};
/// let dir = std::env::temp_dir().join(format!("prompty-doc-options-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("greet.prompty");
/// std::fs::write(&path, "---\ninputs: [who]\n---\nuser:\nHi {{ who }}").unwrap();
/// let prompt = prompty_build::typed::analyze(&path, "greet.prompty").prompt.unwrap();
/// // Rebuild the crate when the file changes.
/// let options = Options { track_files: vec![path.clone()], ..Options::default() };
/// let code = module(&quote::format_ident!("greet"), &prompt, &options).to_string();
/// assert!(code.contains("include_bytes !"));
/// ```
#[derive(Clone)]
pub struct Options {
    /// The span of the generated code: the path literal of `include_prompty!`, so that the
    /// compile-time checks are reported there.
    pub span: Span,
    /// How many modules lie between the generated module and the scope the prompt is included in
    /// (0 for `include_prompty!`; the folder depth for [`crate::compile`]).
    pub depth: usize,
    /// Where the `#[prompty::tool]` handlers are looked up: a path (`crate::tools`), or `None` for
    /// the scope the prompt is included in.
    pub tools_scope: Option<syn::Path>,
    /// Emit `include_bytes!` of every file read, so that editing one rebuilds the crate
    /// (`include_prompty!`; a build script reruns on change instead).
    pub track_files: Vec<std::path::PathBuf>,
    /// Turn warnings into `#[deprecated]` uses (the only warning a macro can emit on stable).
    pub warnings_as_deprecations: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            span: Span::call_site(),
            depth: 0,
            tools_scope: None,
            track_files: Vec::new(),
            warnings_as_deprecations: false,
        }
    }
}

fn doc_attrs(lines: &[String]) -> TokenStream {
    let lines = lines.iter().map(|l| format!(" {l}"));
    quote!(#(#[doc = #lines])*)
}

fn rust_type(ty: &FieldType) -> TokenStream {
    match ty {
        FieldType::String => quote!(::std::string::String),
        FieldType::Integer => quote!(i64),
        FieldType::Float => quote!(f64),
        FieldType::Boolean => quote!(bool),
        FieldType::Array(item) => {
            let item = rust_type(item);
            quote!(::std::vec::Vec<#item>)
        }
        FieldType::Json => quote!(::prompty::__private::serde_json::Value),
        FieldType::Struct(name) => {
            let name = format_ident!("{}", name);
            quote!(#name)
        }
        FieldType::Thread => quote!(::std::vec::Vec<::prompty::Message>),
        FieldType::Media => quote!(::prompty::Media),
    }
}

fn fields_tokens(fields: &[Field], span: Span) -> TokenStream {
    let fields = fields.iter().map(|f| {
        let doc = doc_attrs(&f.doc);
        let ident = names::ident(&f.rust_name, span);
        let ty = rust_type(&f.ty);
        // The name serde sees: the field's, without `r#` (serde strips it), so `self` → `self_`
        // and `firstName` → `first_name` need a rename, and `match` → `r#match` does not.
        let wire = ident.to_string();
        let wire = wire.strip_prefix("r#").unwrap_or(&wire);
        let rename = (wire != f.name).then(|| {
            let name = &f.name;
            quote!(#[serde(rename = #name)])
        });
        if f.optional {
            quote! {
                #doc
                #rename
                #[serde(default, skip_serializing_if = "::std::option::Option::is_none")]
                pub #ident: ::std::option::Option<#ty>,
            }
        } else {
            quote! {
                #doc
                #rename
                pub #ident: #ty,
            }
        }
    });
    quote!(#(#fields)*)
}

fn struct_tokens(name: &str, doc: &[String], fields: &[Field], span: Span) -> TokenStream {
    let ident = format_ident!("{}", name);
    let doc = doc_attrs(doc);
    let body = fields_tokens(fields, span);
    let default = fields.iter().all(|f| f.optional).then(|| quote!(::std::default::Default,));
    quote! {
        #doc
        #[derive(
            ::std::fmt::Debug, ::std::clone::Clone, ::std::cmp::PartialEq, #default
            ::prompty::__private::serde::Serialize, ::prompty::__private::serde::Deserialize
        )]
        #[serde(crate = "::prompty::__private::serde")]
        pub struct #ident {
            #body
        }
    }
}

/// `impl TypedInputs for Inputs`: every field handed to the sink by the method of its type.
fn typed_inputs_impl(fields: &[Field], span: Span) -> TokenStream {
    let visits = fields.iter().map(|f| {
        let ident = names::ident(&f.rust_name, span);
        let name = &f.name;
        // `by_ref` is the field by reference, `by_value` the field itself (for the `Copy` kinds).
        let put = |by_ref: TokenStream, by_value: TokenStream| match &f.ty {
            FieldType::String => quote!(sink.str(#name, #by_ref)),
            FieldType::Integer => quote!(sink.int(#name, #by_value)),
            FieldType::Float => quote!(sink.float(#name, #by_value)),
            FieldType::Boolean => quote!(sink.bool(#name, #by_value)),
            FieldType::Thread => quote!(sink.thread(#name, #by_ref)),
            FieldType::Media => quote!(sink.media(#name, #by_ref)),
            FieldType::Array(_) | FieldType::Json | FieldType::Struct(_) => quote!(sink.serialize(#name, #by_ref)),
        };
        if f.optional {
            let put = put(quote!(value), quote!(*value));
            quote! {
                match &self.#ident {
                    ::std::option::Option::Some(value) => #put,
                    ::std::option::Option::None => sink.absent(#name),
                }
            }
        } else {
            let put = put(quote!(&self.#ident), quote!(self.#ident));
            quote!(#put;)
        }
    });
    // A prompt without inputs hands nothing to the sink.
    let sink = if fields.is_empty() { quote!(_sink) } else { quote!(sink) };
    quote! {
        impl ::prompty::__private::TypedInputs for Inputs {
            fn visit(&self, #sink: &mut ::prompty::__private::InputSink<'_>) {
                #(#visits)*
            }
        }
    }
}

fn declared_kind(kind: &ParamKind) -> TokenStream {
    match kind {
        ParamKind::String => quote!(::prompty::__private::DeclaredKind::String),
        ParamKind::Integer => quote!(::prompty::__private::DeclaredKind::Integer),
        ParamKind::Float => quote!(::prompty::__private::DeclaredKind::Float),
        ParamKind::Boolean => quote!(::prompty::__private::DeclaredKind::Boolean),
        ParamKind::Object => quote!(::prompty::__private::DeclaredKind::Object),
        ParamKind::Any => quote!(::prompty::__private::DeclaredKind::Any),
        ParamKind::Array(None) => quote!(::prompty::__private::DeclaredKind::Array(::std::option::Option::None)),
        ParamKind::Array(Some(items)) => {
            let items = declared_kind(items);
            quote!(::prompty::__private::DeclaredKind::Array(::std::option::Option::Some(&#items)))
        }
    }
}

/// `super::super::...` (`n` times).
fn supers(n: usize) -> TokenStream {
    let s = (0..n).map(|_| quote!(super));
    quote!(#(#s)::*)
}

/// The module's items (without the `mod name { }` around them).
///
/// ```
/// use prompty_build::codegen::{module_body, Options};
/// let dir = std::env::temp_dir().join(format!("prompty-doc-module-body-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("greet.prompty");
/// std::fs::write(&path, "---\ninputs: [who]\n---\nuser:\nHi {{ who }}").unwrap();
/// let prompt = prompty_build::typed::analyze(&path, "greet.prompty").prompt.unwrap();
/// let body = module_body(&prompt, &Options::default()).to_string();
/// assert!(body.contains("pub struct Inputs"));
/// assert!(!body.contains("pub mod"));
/// ```
pub fn module_body(p: &TypedPrompt, options: &Options) -> TokenStream {
    module_body_with_variants(p, &[], options)
}

/// A locale variant of a prompt: its locale tag in conventional case (`pt-BR`) and the variant's
/// file, analyzed like the default.
pub type Variant = (String, TypedPrompt);

/// The module's items of a prompt with locale variants (sorted by tag): everything
/// [`module_body`] generates for the default prompt, plus `LOCALES`, `LOCALE_PATHS`, `agent_in`
/// and the `_in` functions that run the variant a locale picks. The variants share the default's
/// `Inputs`, `Output` and `tools()`: [`prompty_core::analysis::check_variant`] must have accepted
/// each of them.
///
/// ```
/// use prompty_build::codegen::{module_body_with_variants, Options};
/// let dir = std::env::temp_dir().join(format!("prompty-doc-module-variants-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// std::fs::write(dir.join("greet.prompty"), "---\ninputs: [who]\n---\nuser:\nHi {{ who }}").unwrap();
/// std::fs::write(dir.join("greet.fr.prompty"), "---\ninputs: [who]\n---\nuser:\nSalut {{ who }}").unwrap();
/// let prompt = prompty_build::typed::analyze(&dir.join("greet.prompty"), "greet.prompty").prompt.unwrap();
/// let fr = prompty_build::typed::analyze(&dir.join("greet.fr.prompty"), "greet.fr.prompty").prompt.unwrap();
/// let body = module_body_with_variants(&prompt, &[("fr".to_owned(), fr)], &Options::default()).to_string();
/// assert!(body.contains("pub const LOCALES : & [& str] = & [\"fr\"]"));
/// assert!(body.contains("pub fn prepare_in"));
/// ```
pub fn module_body_with_variants(p: &TypedPrompt, variants: &[Variant], options: &Options) -> TokenStream {
    let span = options.span;
    let path = &p.display_path;
    let json = &p.agent_json;

    let structs =
        p.structs.iter().map(|s: &StructDef| struct_tokens(&s.name, std::slice::from_ref(&s.doc), &s.fields, span));
    let inputs_doc = vec![
        format!("The inputs of `{path}`: one field per declared input, serialized under the input's name."),
        String::new(),
        "A required input without a default is a plain field; an optional or defaulted one is an `Option` \
         (`None` lets the prompt's default apply)."
            .to_owned(),
    ];
    let inputs = struct_tokens("Inputs", &inputs_doc, &p.inputs, span);
    let typed_inputs = typed_inputs_impl(&p.inputs, span);
    let (output, output_ty, invoke_doc) = match &p.outputs {
        Some(fields) => {
            let doc = vec![format!("The structured output declared by `{path}` (`outputs:`).")];
            (
                struct_tokens("Output", &doc, fields, span),
                quote!(Output),
                " Runs the prompt (with the provider of `model.provider`) and decodes its structured result \
                 into [`Output`], with the agent of [`agent`] (its `${env:}` references resolved from the \
                 environment of the running program; one it could not resolve is resolved now, or the call \
                 fails naming it).",
            )
        }
        None => (
            TokenStream::new(),
            quote!(::std::string::String),
            " Runs the prompt (with the provider of `model.provider`) and returns the model's text, with the agent \
             of [`agent`] (its `${env:}` references resolved from the environment of the running program; one \
             it could not resolve is resolved now, or the call fails naming it).",
        ),
    };

    let tracked = options.track_files.iter().map(|f| {
        let f = f.display().to_string();
        quote_spanned!(span=> const _: &[u8] = ::std::include_bytes!(#f);)
    });

    let functions = all_function_tools(p, variants);
    let checks = tool_checks(&functions, options);
    let warnings = if options.warnings_as_deprecations {
        let w = p.warnings.iter().enumerate().map(|(i, w)| {
            let name = format_ident!("prompty_warning_{}", i);
            let note = w.to_string();
            quote_spanned! {span=>
                #[deprecated(note = #note)]
                #[allow(non_upper_case_globals)]
                const #name: () = ();
                const _: () = #name;
            }
        });
        quote!(#(#w)*)
    } else {
        TokenStream::new()
    };

    let tools_fn = tools_fn(p, &functions, options);
    let load_agent = load_agent(p, quote!(AGENT_JSON), quote!(PATH));
    let locale_items = locale_items(p, variants, &output_ty);
    let turn_fn = if p.has_tools {
        let doc = match &p.outputs {
            Some(_) => {
                " Runs the agent loop: prepares the prompt, calls the model, runs the tools it asks for with \
                        their `#[prompty::tool]` handlers ([`tools`]), and repeats until it answers; the answer is \
                        decoded into [`Output`]."
            }
            None => {
                " Runs the agent loop: prepares the prompt, calls the model, runs the tools it asks for with \
                     their `#[prompty::tool]` handlers ([`tools`]), and repeats until it answers with text."
            }
        };
        quote! {
            #[doc = #doc]
            ///
            /// Tools in `options` win over the handlers of [`tools`]; see `prompty::TurnOptions` for
            /// events (`TurnOptions::record_events` collects them), cancellation, guardrails,
            /// steering and limits. The agent is [`agent`]'s, its `${env:}` references resolved as
            /// there describes.
            pub async fn turn(inputs: &Inputs, options: ::prompty::TurnOptions) -> ::prompty::Result<#output_ty> {
                ::prompty::__private::turn_typed::<Inputs, #output_ty>(agent(), inputs, tools(), options).await
            }
        }
    } else {
        TokenStream::new()
    };

    quote! {
        #inputs
        #typed_inputs
        #output
        #(#structs)*

        /// The canonical JSON of the prompt, as loaded at compile time (`${env:}` references
        /// unresolved).
        #[doc(hidden)]
        pub const AGENT_JSON: &str = #json;

        /// The prompt file, as named in error messages.
        pub const PATH: &str = #path;

        /// The prompt, loaded once (from the JSON compiled into the binary: no file is read and no
        /// YAML is parsed at run time) and kept for the life of the program; its template is
        /// compiled on first use and cached in it.
        ///
        /// Its `${env:}` references are resolved from the environment at the first call, when the
        /// program runs (never when it is built: no value of the build machine reaches the
        /// binary), as `prompty::load` resolves them: what it shows (`agent().model`) is what
        /// [`invoke`] and [`prepare`] use, and it can be handed to the untyped API
        /// (`prompty::run_turn(agent(), …)`). Credentials stay redacted in its `Debug` form. A
        /// reference whose variable is not set and has no default stays as written
        /// (`has_env_references()` is then `true`): sending the agent resolves it then, or fails
        /// with an error naming the reference and its field.
        pub fn agent() -> &'static ::prompty::Agent {
            static AGENT: ::std::sync::OnceLock<::prompty::Agent> = ::std::sync::OnceLock::new();
            AGENT.get_or_init(|| #load_agent)
        }

        /// Renders and parses the prompt with `inputs`: the messages a model would receive, exactly
        /// as `prompty::load` + `prompty::prepare` give them for the same file and inputs.
        pub fn prepare(inputs: &Inputs) -> ::prompty::Result<::std::vec::Vec<::prompty::Message>> {
            ::prompty::__private::prepare_typed(agent(), inputs)
        }

        /// Renders the prompt with `inputs` into segments: template text and interpolated values,
        /// each value tagged with the input it reads and whether that input is strict (what
        /// `prompty::render_segments` gives for the same file and inputs).
        pub fn render_segments(
            inputs: &Inputs,
        ) -> ::prompty::Result<::std::vec::Vec<::prompty::RenderSegment>> {
            ::prompty::__private::render_segments_typed(agent(), inputs)
        }

        #[doc = #invoke_doc]
        ///
        /// Needs the provider's cargo feature of `prompty` (`openai`, `anthropic`) and its
        /// credentials in the environment.
        pub async fn invoke(inputs: &Inputs) -> ::prompty::Result<#output_ty> {
            ::prompty::__private::invoke_typed::<Inputs, #output_ty>(agent(), inputs).await
        }

        /// Runs the prompt streamed: the chunks of the model's answer as they arrive, with the
        /// agent of [`agent`] (`${env:}` references resolved as there describes).
        pub async fn invoke_stream(inputs: &Inputs) -> ::prompty::Result<::prompty::ChunkStream> {
            ::prompty::__private::invoke_stream_typed(agent(), inputs).await
        }

        #tools_fn
        #turn_fn
        #locale_items
        #checks
        #warnings
        #(#tracked)*
    }
}

/// The expression that loads the agent of `p` from its JSON (the constant `json`, named `path` in
/// messages), with its children compiled in.
fn load_agent(p: &TypedPrompt, json: TokenStream, path: TokenStream) -> TokenStream {
    let base_dir = p.base_dir.display().to_string();
    let body_line = p.body_line;
    if p.children.is_empty() {
        quote!(::prompty::__private::compiled_agent(#json, #path, #base_dir, #body_line))
    } else {
        let children = children_tokens(&p.children);
        quote! {{
            /// The child prompts of the `kind: prompty` tools, compiled in: the program never
            /// reads them from the build machine's folder.
            static CHILDREN: &[::prompty::__private::CompiledChild] = #children;
            ::prompty::__private::compiled_agent_with_children(#json, #path, #base_dir, #body_line, CHILDREN)
        }}
    }
}

/// `LOCALES`, `LOCALE_PATHS`, `agent_in` and the `_in` functions of a prompt and its locale
/// variants (none for a prompt without variants: the `_in` functions then check the tag and run
/// the default).
fn locale_items(p: &TypedPrompt, variants: &[Variant], output_ty: &TokenStream) -> TokenStream {
    let default_path = &p.display_path;
    let tags: Vec<&str> = variants.iter().map(|(tag, _)| tag.as_str()).collect();
    let paths: Vec<&str> = variants.iter().map(|(_, v)| v.display_path.as_str()).collect();
    let jsons: Vec<&str> = variants.iter().map(|(_, v)| v.agent_json.as_str()).collect();
    let listed: Vec<String> = variants.iter().map(|(tag, v)| format!("`{tag}` (`{}`)", v.display_path)).collect();
    let order = format!(
        " A locale is looked up as the exact tag (case-insensitive, `_` for `-`), then its truncations \
         (`pt-BR` → `pt`), then the fallback locale of `prompty::PromptRegistry::global()` (default `en`); \
         when none is a variant, the default prompt (`{default_path}`) runs. A tag that is not BCP 47 is an \
         error."
    );
    let (locales_doc, agent_in_body) = if variants.is_empty() {
        (
            format!(
                " The locales of the prompt's variants: none (no `<name>.<locale>.prompty` file next to \
                 `{default_path}`). The `_in` functions check the requested tag and run the default prompt."
            ),
            quote! {
                ::prompty::__private::pick_locale(LOCALES, locale)?;
                ::std::result::Result::Ok(agent())
            },
        )
    } else {
        let arms = variants.iter().enumerate().map(|(i, (_, v))| {
            let load = load_agent(v, quote!(LOCALE_AGENT_JSON[#i]), quote!(LOCALE_PATHS[#i]));
            quote! {
                ::std::option::Option::Some(#i) => {
                    static AGENT: ::std::sync::OnceLock<::prompty::Agent> = ::std::sync::OnceLock::new();
                    ::std::result::Result::Ok(AGENT.get_or_init(|| #load))
                }
            }
        });
        (
            format!(
                " The locales of the prompt's variants (BCP 47 tags in conventional case, sorted): {}.",
                listed.join(", ")
            ),
            quote! {
                match ::prompty::__private::pick_locale(LOCALES, locale)? {
                    #(#arms)*
                    _ => ::std::result::Result::Ok(agent()),
                }
            },
        )
    };
    let agent_in_doc = if variants.is_empty() {
        format!(" The prompt for `locale`: always the default (`{default_path}`), which has no locale variants.")
    } else {
        format!(" The prompt for `locale`: the variant of {}, or the default (`{default_path}`).", listed.join(", "))
    };
    let turn_in = p.has_tools.then(|| {
        quote! {
            /// [`turn`] on the prompt of `locale` ([`agent_in`]): the agent loop with the handlers
            /// of [`tools`], which every variant shares.
            pub async fn turn_in(
                inputs: &Inputs,
                locale: &str,
                options: ::prompty::TurnOptions,
            ) -> ::prompty::Result<#output_ty> {
                ::prompty::__private::turn_typed::<Inputs, #output_ty>(agent_in(locale)?, inputs, tools(), options).await
            }
        }
    });
    quote! {
        #[doc = #locales_doc]
        ///
        /// [`agent_in`], [`prepare_in`], [`invoke_in`] and [`invoke_stream_in`] pick one for a
        /// requested locale.
        #[doc = #order]
        pub const LOCALES: &[&str] = &[#(#tags),*];

        /// The files of the locale variants, in the order of [`LOCALES`], as named in error
        /// messages.
        pub const LOCALE_PATHS: &[&str] = &[#(#paths),*];

        /// The canonical JSON of each locale variant, in the order of [`LOCALES`].
        #[doc(hidden)]
        pub const LOCALE_AGENT_JSON: &[&str] = &[#(#jsons),*];

        #[doc = #agent_in_doc]
        ///
        /// Each variant is loaded once, from the JSON compiled into the binary, like [`agent`].
        #[doc = #order]
        pub fn agent_in(locale: &str) -> ::prompty::Result<&'static ::prompty::Agent> {
            #agent_in_body
        }

        /// [`prepare`] with the prompt of `locale` ([`agent_in`]): the messages a model would
        /// receive from that locale's file.
        pub fn prepare_in(
            inputs: &Inputs,
            locale: &str,
        ) -> ::prompty::Result<::std::vec::Vec<::prompty::Message>> {
            ::prompty::__private::prepare_typed(agent_in(locale)?, inputs)
        }

        /// [`invoke`] with the prompt of `locale` ([`agent_in`]).
        pub async fn invoke_in(inputs: &Inputs, locale: &str) -> ::prompty::Result<#output_ty> {
            ::prompty::__private::invoke_typed::<Inputs, #output_ty>(agent_in(locale)?, inputs).await
        }

        /// [`invoke_stream`] with the prompt of `locale` ([`agent_in`]).
        pub async fn invoke_stream_in(
            inputs: &Inputs,
            locale: &str,
        ) -> ::prompty::Result<::prompty::ChunkStream> {
            ::prompty::__private::invoke_stream_typed(agent_in(locale)?, inputs).await
        }

        #turn_in
    }
}

/// `&[CompiledChild { .. }, ..]` of the children of `kind: prompty` tools, recursively.
fn children_tokens(children: &[ChildPrompt]) -> TokenStream {
    let items = children.iter().map(|c| {
        let (tool_path, path, body_line, json) =
            (&c.tool_path, &c.prompt.display_path, c.prompt.body_line, &c.prompt.agent_json);
        let children = children_tokens(&c.prompt.children);
        quote! {
            ::prompty::__private::CompiledChild {
                tool_path: #tool_path,
                path: #path,
                body_line: #body_line,
                json: #json,
                children: #children,
            }
        }
    });
    quote!(&[#(#items),*])
}

/// The function tools of a prompt and of its `kind: prompty` children, recursively (a child runs
/// with the handlers handed to its parent): the prompt's own first, each name once.
fn function_tools(p: &TypedPrompt) -> Vec<&FunctionTool> {
    let mut all: Vec<&FunctionTool> = p.tools.iter().collect();
    for child in &p.children {
        all.extend(function_tools(&child.prompt));
    }
    all
}

/// The function tools of a prompt and of its locale variants' children (a variant's own tools
/// are its default's; its children may declare others): the default's first, each name once
/// among the variants' additions.
fn all_function_tools<'a>(p: &'a TypedPrompt, variants: &'a [Variant]) -> Vec<&'a FunctionTool> {
    let mut all = function_tools(p);
    for (_, v) in variants {
        for t in function_tools(v) {
            if !all.iter().any(|a| a.name == t.name) {
                all.push(t);
            }
        }
    }
    all
}

fn unique_names<'a>(tools: &[&'a FunctionTool]) -> Vec<&'a FunctionTool> {
    let mut seen = std::collections::HashSet::new();
    tools.iter().copied().filter(|t| seen.insert(t.name.as_str())).collect()
}

/// `pub fn tools()`: the `kind: function` handlers of the prompt and of its children, as
/// `prompty::Tools`.
fn tools_fn(p: &TypedPrompt, all: &[&FunctionTool], options: &Options) -> TokenStream {
    let scope = match &options.tools_scope {
        Some(path) => quote!(#path),
        None => supers(options.depth + 1),
    };
    let unique = unique_names(all);
    let entries = unique.iter().map(|t| {
        let name = &t.name;
        let handler = names::ident(&t.handler, Span::call_site());
        quote!(.with(#name, #handler {}))
    });
    let names: Vec<String> = unique.iter().map(|t| format!("`{}`", t.name)).collect();
    let mut doc = if names.is_empty() {
        " The `#[prompty::tool]` handlers of the prompt's `kind: function` tools: none are declared.".to_owned()
    } else {
        format!(
            " The `#[prompty::tool]` handlers of the prompt's `kind: function` tools ({}), checked at compile \
             time against their declarations. Naming them here also links them into the binary.",
            names.join(", ")
        )
    };
    if !p.mcp_tools.is_empty() {
        doc.push_str(&format!(
            "\n\n The tools of {} cannot be listed at compile time: their servers list them at run time \
             (the agent loop loads them into `prompty::catalog::ToolCatalog::global()`), so they are not in this set.",
            p.mcp_tools.join(", ")
        ));
    }
    let body = if unique.is_empty() {
        quote!(::prompty::Tools::new())
    } else {
        quote! {
            #[allow(unused_imports)]
            use self::__prompty_checks::*;
            {
                #[allow(unused_imports)]
                use #scope::*;
                ::prompty::Tools::new() #(#entries)*
            }
        }
    };
    quote! {
        #[doc = #doc]
        pub fn tools() -> ::prompty::Tools {
            #body
        }
    }
}

/// The compile-time checks of the function tools against their handlers. Each handler name is
/// resolved in a block that glob-imports the scope the prompt is included in; when that scope has
/// no such item, the name falls through to this module's fallback (a `MissingHandler` alias), and
/// `check_tool` reports the missing handler.
fn tool_checks(all: &[&FunctionTool], options: &Options) -> TokenStream {
    if all.is_empty() {
        return TokenStream::new();
    }
    let span = options.span;
    let scope = match &options.tools_scope {
        Some(path) => quote!(#path),
        None => supers(options.depth + 2),
    };
    let mut handlers = std::collections::HashSet::new();
    let fallbacks = all.iter().filter(|t| handlers.insert(t.handler.as_str())).map(|t| {
        let handler = names::ident(&t.handler, Span::call_site());
        quote!(pub type #handler = ::prompty::__private::MissingHandler;)
    });
    let (scope_text, fix) = match &options.tools_scope {
        Some(path) => {
            let path = quote!(#path).to_string().replace(' ', "");
            (
                format!("`{path}` (the `tools_scope` of the build)"),
                format!("in `{path}`, or re-export one there with `pub use`"),
            )
        }
        None => (
            "the module that includes the prompt (handlers are looked up among that module's items and `use` \
             imports; one defined inside a fn body, even next to `include_prompty!`, is not visible there)"
                .to_owned(),
            "at the top level of that module, outside any fn, or bring one into scope there with `use`".to_owned(),
        ),
    };
    let checks = all.iter().map(|t: &&FunctionTool| {
        let handler = names::ident(&t.handler, Span::call_site());
        // As written in Rust (`r#match`, `self_`), for the messages.
        let rust_name = handler.to_string();
        let (name, at) = (&t.name, &t.at);
        let params = t.params.iter().map(|param| {
            let (pname, kind_text, pat) = (&param.name, &param.kind_text, &param.at);
            let kind = declared_kind(&param.kind);
            quote! {
                ::prompty::__private::DeclaredParam { name: #pname, kind: #kind, kind_text: #kind_text, at: #pat }
            }
        });
        quote_spanned! {span=>
            const _: () = {
                #[allow(unused_imports)]
                use #scope::*;
                #[allow(unused_imports)]
                use ::prompty::__private::NotATool as _;
                let report = ::prompty::__private::check_tool(
                    &#handler::__PROMPTY_TOOL,
                    &::prompty::__private::DeclaredTool {
                        name: #name,
                        rust_name: #rust_name,
                        at: #at,
                        scope: #scope_text,
                        fix: #fix,
                        params: &[#(#params),*],
                    },
                );
                if report.failed() {
                    ::std::panic!("{}", report.as_str());
                }
            };
        }
    });
    quote! {
        /// Compile-time checks of the prompt's function tools against their `#[prompty::tool]`
        /// handlers, and the fallbacks names without a handler resolve to.
        #[doc(hidden)]
        #[allow(non_camel_case_types, dead_code)]
        mod __prompty_checks {
            #(#fallbacks)*
            #(#checks)*
        }
    }
}

/// The whole `pub mod name { ... }` of a prompt.
///
/// ```
/// use prompty_build::codegen::{module, Options};
/// let dir = std::env::temp_dir().join(format!("prompty-doc-module-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("greet.prompty");
/// std::fs::write(&path, "---\ninputs: [who]\n---\nuser:\nHi {{ who }}").unwrap();
/// let prompt = prompty_build::typed::analyze(&path, "greet.prompty").prompt.unwrap();
/// let code = module(&quote::format_ident!("hello"), &prompt, &Options::default()).to_string();
/// assert!(code.contains("pub mod hello"));
/// ```
pub fn module(name: &syn::Ident, p: &TypedPrompt, options: &Options) -> TokenStream {
    module_with_variants(name, p, &[], options)
}

/// The whole `pub mod name { ... }` of a prompt and its locale variants (sorted by tag): see
/// [`module_body_with_variants`].
///
/// ```
/// use prompty_build::codegen::{module_with_variants, Options};
/// let dir = std::env::temp_dir().join(format!("prompty-doc-module-with-variants-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// std::fs::write(dir.join("greet.prompty"), "---\ninputs: [who]\n---\nuser:\nHi {{ who }}").unwrap();
/// std::fs::write(dir.join("greet.fr.prompty"), "---\ninputs: [who]\n---\nuser:\nSalut {{ who }}").unwrap();
/// let prompt = prompty_build::typed::analyze(&dir.join("greet.prompty"), "greet.prompty").prompt.unwrap();
/// let fr = prompty_build::typed::analyze(&dir.join("greet.fr.prompty"), "greet.fr.prompty").prompt.unwrap();
/// let code = module_with_variants(&quote::format_ident!("greet"), &prompt, &[("fr".to_owned(), fr)], &Options::default());
/// assert!(code.to_string().contains("`fr` (`greet.fr.prompty`)"));
/// ```
pub fn module_with_variants(
    name: &syn::Ident,
    p: &TypedPrompt,
    variants: &[Variant],
    options: &Options,
) -> TokenStream {
    let contents = module_contents(p, variants, options);
    quote! {
        // A program may use only part of a prompt's API.
        #[allow(dead_code)]
        pub mod #name {
            #contents
        }
    }
}

/// What goes inside the braces of [`module_with_variants`]'s `pub mod name { ... }`: the module's
/// inner doc attributes and its items, also what `prompty_build::compile` writes into the
/// module's file of its own.
pub(crate) fn module_contents(p: &TypedPrompt, variants: &[Variant], options: &Options) -> TokenStream {
    let body = module_body_with_variants(p, variants, options);
    let mut doc = Vec::new();
    if let Some(d) = &p.description {
        doc.extend(d.lines().map(str::to_owned));
        doc.push(String::new());
    }
    doc.push(format!(
        "The typed prompt `{}` (`{}`): [`Inputs`], [`prepare`], [`invoke`], [`invoke_stream`]{} and [`agent`]{}, \
         generated by prompty from the file and checked at compile time.",
        p.name,
        p.display_path,
        if p.has_tools { ", [`turn`] (the agent loop, with the handlers of [`tools`])" } else { "" },
        if p.outputs.is_some() { ", with its structured [`Output`]" } else { "" }
    ));
    if !variants.is_empty() {
        let listed: Vec<String> = variants.iter().map(|(tag, v)| format!("`{tag}` (`{}`)", v.display_path)).collect();
        doc.push(String::new());
        doc.push(format!(
            "Its locale variants ([`LOCALES`]): {}. [`prepare_in`], [`invoke_in`], [`invoke_stream_in`]{} and \
             [`agent_in`] run the variant a locale picks, with the same [`Inputs`].",
            listed.join(", "),
            if p.has_tools { ", [`turn_in`]" } else { "" }
        ));
    }
    // Inner doc attributes, so the intra-doc links resolve inside the module; a leading space as
    // in a `//!` comment.
    let doc: Vec<String> = doc.iter().map(|l| if l.is_empty() { String::new() } else { format!(" {l}") }).collect();
    quote! {
        #(#![doc = #doc])*
        #body
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_of_mcp_servers_are_said_to_be_listed_at_run_time() {
        let dir = std::env::temp_dir().join(format!("prompty-codegen-mcp-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("files.prompty");
        std::fs::write(
            &path,
            "---\ntools:\n  - name: files\n    kind: mcp\n    serverName: fs\n    connection: {kind: stdio, command: srv}\n---\nuser:\nHi",
        )
        .unwrap();
        let prompt = crate::typed::analyze(&path, "files.prompty").prompt.unwrap();
        assert_eq!(prompt.mcp_tools, ["`files` (MCP server `fs`)"]);
        let body = module_body(&prompt, &Options::default()).to_string();
        assert!(body.contains("cannot be listed at compile time"), "{body}");
        assert!(body.contains("fn turn"), "a prompt with MCP tools gets the agent loop");
    }

    #[test]
    fn keyword_names_are_raw_or_renamed_and_keep_their_wire_names() {
        let dir = std::env::temp_dir().join(format!("prompty-codegen-keywords-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("kw.prompty");
        // Keyword inputs, and an object input named `object` holding the keyword property `super`.
        let prompt_with = |object: &str| {
            format!(
                "---\ninputs:\n  match: {{kind: string, required: true}}\n  self: {{kind: string, required: true}}\n  \
                 crate: {{kind: string}}\n  firstName: {{kind: string}}\n  {object}:\n    kind: object\n    properties:\n      \
                 super: {{kind: string}}\ntools:\n  - name: match\n    kind: function\n  - name: Self\n    kind: function\n\
                 ---\nuser:\n{{{{ match }}}}{{{{ self }}}}{{{{ crate }}}}{{{{ firstName }}}}{{{{ {object} }}}}"
            )
        };
        std::fs::write(&path, prompt_with("Self")).unwrap();
        let analysis = crate::typed::analyze(&path, "kw.prompty");
        let errors: Vec<_> = analysis.errors().collect();
        assert_eq!(errors.len(), 1, "{errors:?}");
        // `self` and `Self` would both be the field `self_`.
        assert!(errors[0].to_string().contains("would both be the field `self`"), "{errors:?}");

        std::fs::write(&path, prompt_with("fn")).unwrap();
        let prompt = crate::typed::analyze(&path, "kw.prompty").prompt.unwrap();
        let code = prettyplease::unparse(&syn::parse2(module_body(&prompt, &Options::default())).unwrap());
        for expected in [
            "pub r#match: ::std::string::String,",
            "#[serde(rename = \"self\")]\n    pub self_: ::std::string::String,",
            "#[serde(rename = \"crate\")]",
            "pub crate_: ::std::option::Option<::std::string::String>,",
            "#[serde(rename = \"firstName\")]",
            "pub r#fn: ::std::option::Option<Fn>,",
            "#[serde(rename = \"super\")]",
            "pub super_: ::std::option::Option<::std::string::String>,",
            ".with(\"match\", r#match {})",
            ".with(\"Self\", Self_ {})",
            "pub type r#match = ::prompty::__private::MissingHandler;",
            "rust_name: \"r#match\"",
        ] {
            assert!(code.contains(expected), "{expected}\n{code}");
        }
        // A raw identifier needs no rename: serde strips `r#`.
        assert!(!code.contains("rename = \"match\""), "{code}");
    }

    #[test]
    fn a_missing_handler_says_where_handlers_are_looked_up() {
        let dir = std::env::temp_dir().join(format!("prompty-codegen-scope-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("w.prompty");
        std::fs::write(&path, "---\ntools:\n  - name: get_weather\n    kind: function\n---\nuser:\nHi").unwrap();
        let prompt = crate::typed::analyze(&path, "w.prompty").prompt.unwrap();
        let included = module_body(&prompt, &Options::default()).to_string();
        assert!(
            included.contains("one defined inside a fn body, even next to `include_prompty!`, is not visible there")
        );
        assert!(included.contains("at the top level of that module, outside any fn"), "{included}");
        let options = Options { tools_scope: Some(syn::parse_quote!(crate::tools)), ..Options::default() };
        let built = module_body(&prompt, &options).to_string();
        assert!(built.contains("scope : \"`crate::tools` (the `tools_scope` of the build)\""), "{built}");
        assert!(built.contains("in `crate::tools`, or re-export one there with `pub use`"), "{built}");
    }
}
