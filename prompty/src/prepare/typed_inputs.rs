//! The render context of a typed prompt's `Inputs`, built from the Rust values: `prepare` of a
//! typed prompt renders with it directly, without turning the inputs into JSON first.
//!
//! The generated code implements [`TypedInputs`] for `Inputs`: it hands each field to an
//! [`InputSink`] with the method that fits its type. The sink applies what `prepare` applies to
//! JSON inputs: the default of an absent optional input, noncharacters replaced by U+FFFD when the
//! render marks values, the strict-input check, the depth bound, and nonce tokens for threads and
//! media (a thread's messages
//! are cloned into the prompt, never serialized).

use crate::prepare::nonces::{self as nonce, LongNonce};
use crate::prepare::{marks as mark, rich};
use crate::registry::marks as mark_format;
use crate::{Agent, Error, Message, Result};
use minijinja::value::Value as Jinja;
use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;
use std::borrow::Cow;

/// Inputs a typed prompt renders from directly: implemented by the `Inputs` struct
/// `include_prompty!` and `prompty_build::compile` generate.
#[doc(hidden)]
pub trait TypedInputs: Serialize {
    /// Hands every field to `sink`, under its input name.
    fn visit(&self, sink: &mut InputSink<'_>);
}

/// Collects the render context of typed inputs (see the module docs).
#[doc(hidden)]
pub struct InputSink<'a> {
    agent: &'a Agent,
    values: Vec<(Cow<'static, str>, Jinja)>,
    rich: rich::RichInputs,
    strict_inputs: Vec<&'a str>,
    /// Whether values must be cleared of noncharacters (the render marks values).
    neutralise: bool,
    error: Option<Error>,
}

impl<'a> InputSink<'a> {
    fn new(agent: &'a Agent, neutralise: bool) -> Self {
        InputSink {
            agent,
            values: Vec::with_capacity(agent.inputs.as_deref().map_or(0, <[_]>::len)),
            rich: rich::RichInputs::new(),
            strict_inputs: if agent.template.format.strict {
                Vec::new()
            } else {
                agent.template.format.strict_inputs()
            },
            neutralise,
            error: None,
        }
    }

    fn is_strict(&self, name: &str) -> bool {
        self.agent.template.format.strict || self.strict_inputs.contains(&name)
    }

    fn fail(&mut self, error: Error) {
        self.error.get_or_insert(error);
    }

    /// A string input.
    pub fn str(&mut self, name: &'static str, value: &str) {
        if self.is_strict(name) {
            if let Some(line) = crate::prepare::parse::first_marker_line(value) {
                let marker = line.trim().chars().take(40).collect();
                return self.fail(Error::StrictViolation { input: name.to_owned(), marker });
            }
        }
        let clean = if self.neutralise { mark_format::neutralise(value) } else { None };
        let value = match clean {
            Some(clean) => Jinja::from(clean),
            None => Jinja::from(value),
        };
        self.values.push((Cow::Borrowed(name), value));
    }

    /// An integer input.
    pub fn int(&mut self, name: &'static str, value: i64) {
        self.values.push((Cow::Borrowed(name), Jinja::from(value)));
    }

    /// A float input.
    pub fn float(&mut self, name: &'static str, value: f64) {
        self.values.push((Cow::Borrowed(name), Jinja::from(value)));
    }

    /// A boolean input.
    pub fn bool(&mut self, name: &'static str, value: bool) {
        self.values.push((Cow::Borrowed(name), Jinja::from(value)));
    }

    /// Any other input (lists, objects, JSON values): through its JSON form.
    pub fn serialize<T: Serialize + ?Sized>(&mut self, name: &'static str, value: &T) {
        match serde_json::to_value(value) {
            Ok(json) => self.json(name, json),
            Err(e) => self.fail(Error::Format(crate::FormatError::InvalidInputs {
                message: format!("cannot serialize the inputs: {e}"),
            })),
        }
    }

    fn json(&mut self, name: &'static str, mut value: Value) {
        if let Err(e) = prompty_core::check_input_depth(name, &value) {
            return self.fail(e.into());
        }
        if self.is_strict(name) {
            if let Err(e) = rich::check_value(name, &value) {
                return self.fail(e);
            }
        }
        if self.neutralise {
            mark::neutralise_value(&mut value);
        }
        self.values.push((Cow::Borrowed(name), crate::prepare::renderers::json_value(&value)));
    }

    /// A `thread` input: its messages are spliced in where the template prints it.
    pub fn thread(&mut self, name: &'static str, messages: &[Message]) {
        let token = self.token(name);
        self.values.push((Cow::Borrowed(name), Jinja::from(token.as_str())));
        self.rich.insert_thread(token, messages.to_vec());
    }

    /// An `image`, `file` or `audio` input: a content part where the template prints it.
    pub fn media(&mut self, name: &'static str, media: &Media) {
        let kind = match self.agent.input(name) {
            Some(p) => p.kind.clone(),
            None => return self.serialize(name, media),
        };
        let json = match serde_json::to_value(media) {
            Ok(json) => json,
            Err(e) => {
                return self.fail(Error::Format(crate::FormatError::InvalidInputs {
                    message: format!("cannot serialize the inputs: {e}"),
                }))
            }
        };
        match rich::media_part(name, &kind, json) {
            Ok(part) => {
                let token = self.token(name);
                self.values.push((Cow::Borrowed(name), Jinja::from(token.as_str())));
                self.rich.insert_part(token, part);
            }
            Err(e) => self.fail(e),
        }
    }

    /// An optional input left out: its default applies, if it has one.
    pub fn absent(&mut self, name: &'static str) {
        let Some(prop) = self.agent.input(name) else {
            return;
        };
        let Some(default) = prop.default.clone() else {
            return;
        };
        if prop.kind.is_rich() && !default.is_null() {
            let token = self.token(name);
            let added = match prop.kind {
                crate::PropertyKind::Thread => {
                    rich::thread_messages(name, default).map(|m| self.rich.insert_thread(token.clone(), m))
                }
                _ => rich::media_part(name, &prop.kind, default).map(|p| self.rich.insert_part(token.clone(), p)),
            };
            match added {
                Ok(()) => self.values.push((Cow::Borrowed(name), Jinja::from(token))),
                Err(e) => self.fail(e),
            }
            return;
        }
        self.json(name, default);
    }

    /// A fresh token (64 random bits) standing for rich input `name`.
    fn token(&self, name: &str) -> String {
        let mut nonce: [LongNonce; 1] = [[0u8; 16]];
        nonce::fresh_long(&mut nonce);
        rich::token(&nonce[0], name)
    }
}

/// `prepare` for typed inputs: rendered from the Rust values when the template's renderer is the
/// built-in `jinja2`, else through their JSON form like any other inputs.
pub(crate) fn prepare<I: TypedInputs>(agent: &Agent, inputs: &I) -> Result<Vec<Message>> {
    let renderer = crate::get_renderer(&agent.template.format.kind)?;
    if !crate::prepare::renderers::is_builtin_jinja(&renderer) {
        return match typed_inputs(inputs)? {
            Value::Object(map) => crate::prepare::prepare_map(agent, map),
            other => crate::prepare(agent, &other),
        };
    }
    let mut rich = rich::RichInputs::new();
    let (text, values) = crate::prepare::renderers::render_prepared(agent, |marks| {
        let mut sink = InputSink::new(agent, marks);
        inputs.visit(&mut sink);
        if let Some(e) = sink.error {
            return Err(e);
        }
        rich = sink.rich;
        Ok(crate::prepare::renderers::context(sink.values))
    })?;
    crate::prepare::parse_rendered(agent, &text, &values, rich)
}

/// The value of an `image`, `file` or `audio` input: a URL or `data:` URI, with an optional media
/// type and (images) detail level.
///
/// ```
/// let photo = prompty::Media::url("https://example.com/cat.png").with_media_type("image/png");
/// assert_eq!(serde_json::to_value(&photo)?, serde_json::json!(
///     {"source": "https://example.com/cat.png", "mediaType": "image/png"}));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Media {
    /// A URL or a `data:` URI.
    pub source: String,
    /// Such as `image/png` or `audio/wav`.
    #[serde(default, rename = "mediaType", skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// For images: `auto`, `low` or `high`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl Media {
    /// Media at a URL (or a `data:` URI).
    pub fn url(source: impl Into<String>) -> Self {
        Media { source: source.into(), media_type: None, detail: None }
    }

    /// The same media with a media type.
    pub fn with_media_type(mut self, media_type: impl Into<String>) -> Self {
        self.media_type = Some(media_type.into());
        self
    }

    /// The same image with a detail level.
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }
}

/// The JSON inputs of a typed prompt's `Inputs` struct.
#[doc(hidden)]
pub fn typed_inputs<I: Serialize>(inputs: &I) -> Result<Value> {
    serde_json::to_value(inputs).map_err(|e| {
        Error::Format(crate::FormatError::InvalidInputs { message: format!("cannot serialize the inputs: {e}") })
    })
}
