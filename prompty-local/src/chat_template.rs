//! The model's chat template (`tokenizer.chat_template`, a Jinja template written for Python's
//! Jinja2 as Hugging Face renders it), rendered with minijinja.

use crate::Error;
use minijinja::value::Value;
use minijinja::{Environment, ErrorKind, State};

/// One chat message as the model's chat template reads it (`role` is `system`, `user`,
/// `assistant` or `tool`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatMessage {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    /// The text.
    pub content: String,
}

impl ChatMessage {
    /// A message.
    ///
    /// ```
    /// let m = prompty_local::ChatMessage::new("user", "Hi");
    /// assert_eq!(m.role, "user");
    /// ```
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        Self { role: role.into(), content: content.into() }
    }
}

/// The template used when the file has none: ChatML (`<|im_start|>role\ncontent<|im_end|>\n`
/// per message, and `<|im_start|>assistant\n` for the answer).
pub(crate) const CHATML: &str = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + \
     message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ \
     '<|im_start|>assistant\\n' }}{% endif %}";

/// Bound on the work of one rendering (minijinja "fuel": roughly instructions executed), so a
/// template that loops without end fails instead of hanging.
const FUEL: u64 = 50_000_000;

/// A compiled chat template.
pub(crate) struct ChatTemplate {
    env: Environment<'static>,
    bos: String,
    eos: String,
}

fn py_method(_state: &mut State, value: &Value, method: &str, args: &[Value]) -> Result<Value, minijinja::Error> {
    let unknown = || minijinja::Error::from(ErrorKind::UnknownMethod);
    if let Some(s) = value.as_str() {
        let arg = |i: usize| args.get(i).and_then(|v| v.as_str());
        let chars: Option<Vec<char>> = arg(0).map(|c| c.chars().collect());
        let trimmed = |s: &str, left: bool, right: bool| -> String {
            let is = |c: char| match &chars {
                Some(set) => set.contains(&c),
                None => c.is_whitespace(),
            };
            let mut t = s;
            if left {
                t = t.trim_start_matches(is);
            }
            if right {
                t = t.trim_end_matches(is);
            }
            t.to_string()
        };
        return Ok(match method {
            "strip" => Value::from(trimmed(s, true, true)),
            "lstrip" => Value::from(trimmed(s, true, false)),
            "rstrip" => Value::from(trimmed(s, false, true)),
            "startswith" => Value::from(arg(0).is_some_and(|p| s.starts_with(p))),
            "endswith" => Value::from(arg(0).is_some_and(|p| s.ends_with(p))),
            "upper" => Value::from(s.to_uppercase()),
            "lower" => Value::from(s.to_lowercase()),
            "replace" => match (arg(0), arg(1)) {
                (Some(a), Some(b)) => Value::from(s.replace(a, b)),
                _ => return Err(unknown()),
            },
            "split" => match arg(0) {
                Some(sep) => Value::from(s.split(sep).map(Value::from).collect::<Vec<_>>()),
                None => Value::from(s.split_whitespace().map(Value::from).collect::<Vec<_>>()),
            },
            _ => return Err(unknown()),
        });
    }
    match method {
        "get" => {
            let key = args.first().ok_or_else(unknown)?;
            let found = value.get_item(key).ok().filter(|v| !v.is_undefined());
            Ok(found.or_else(|| args.get(1).cloned()).unwrap_or(Value::from(())))
        }
        "items" => {
            let mut items = Vec::new();
            for k in value.try_iter()? {
                let v = value.get_item(&k)?;
                items.push(Value::from(vec![k, v]));
            }
            Ok(Value::from(items))
        }
        "keys" => Ok(Value::from(value.try_iter()?.collect::<Vec<_>>())),
        _ => Err(unknown()),
    }
}

impl ChatTemplate {
    /// Compiles `source` (Hugging Face's settings: blocks trim their newline and strip the
    /// indentation before them).
    pub fn new(source: &str, bos: String, eos: String) -> Result<ChatTemplate, Error> {
        let mut env = Environment::new();
        let syntax = minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .build()
            .map_err(|e| Error::Template(e.to_string()))?;
        env.set_syntax(syntax);
        env.set_fuel(Some(FUEL));
        env.set_unknown_method_callback(py_method);
        env.add_function("raise_exception", |message: String| -> Result<Value, minijinja::Error> {
            Err(minijinja::Error::new(ErrorKind::InvalidOperation, message))
        });
        env.add_template_owned("chat", source.to_string()).map_err(|e| Error::Template(e.to_string()))?;
        Ok(ChatTemplate { env, bos, eos })
    }

    /// Renders `messages`.
    pub fn render(&self, messages: &[ChatMessage], add_generation_prompt: bool) -> Result<String, Error> {
        let messages: Vec<Value> = messages
            .iter()
            .map(|m| minijinja::context! { role => m.role.as_str(), content => m.content.as_str() })
            .collect();
        let template = self.env.get_template("chat").map_err(|e| Error::Template(e.to_string()))?;
        template
            .render(minijinja::context! {
                messages => messages,
                add_generation_prompt => add_generation_prompt,
                bos_token => self.bos.as_str(),
                eos_token => self.eos.as_str(),
            })
            .map_err(|e| {
                let mut text = e.to_string();
                let mut source = std::error::Error::source(&e);
                while let Some(s) = source {
                    text.push_str(&format!(": {s}"));
                    source = s.source();
                }
                Error::Template(text)
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chatml_fallback() {
        let t = ChatTemplate::new(CHATML, String::new(), String::new()).unwrap();
        let out = t.render(&[ChatMessage::new("user", "Hi")], true).unwrap();
        assert_eq!(out, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    }

    #[test]
    fn python_methods_and_exceptions() {
        let src = "{% for m in messages %}{% if m.role == 'x' %}{{ raise_exception('no x') }}{% endif %}\
                   [{{ m.content.strip() }}]{% endfor %}";
        let t = ChatTemplate::new(src, String::new(), String::new()).unwrap();
        assert_eq!(t.render(&[ChatMessage::new("user", "  a ")], false).unwrap(), "[a]");
        let e = t.render(&[ChatMessage::new("x", "a")], false).unwrap_err();
        assert!(e.to_string().contains("no x"), "{e}");
    }

    #[test]
    fn endless_template_is_bounded() {
        let src = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}";
        let t = ChatTemplate::new(src, String::new(), String::new()).unwrap();
        assert!(t.render(&[], false).is_err());
    }
}
