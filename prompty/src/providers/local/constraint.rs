//! The constraint of `toolChoice: auto` (and of a prompt that offers tools without choosing):
//! free text, unless the answer starts with `{`, in which case it is a tool call.
//!
//! Design: the model decides. While it has written nothing but whitespace, it may write any text
//! token, the end of its turn, or a token that starts a tool call (`{` with no whitespace before
//! it, allowed only as far as the tool-call schema allows it). The first other character decides
//! for good: `{` hands every later token to the JSON schema constraint (so the call always parses
//! and names a declared tool with valid arguments), anything else frees the rest of the answer.
//! Control tokens other than the end of the turn are never allowed. A token of whitespace then
//! `{` is not allowed while undecided (the schema constraint cannot be asked about a token it
//! does not begin): the model writes the whitespace, then the `{`.

use prompty_local::{Constraint, Vocabulary};

/// Where the answer is.
enum State {
    /// Only whitespace so far.
    Undecided,
    /// Free text.
    Text,
    /// A tool call, in the inner constraint.
    Json,
}

/// Free text, or a JSON document of the inner constraint when the answer starts with `{`.
pub(crate) struct TextOrJson<C> {
    inner: C,
    state: State,
    /// The inner constraint's mask, reused from step to step.
    scratch: Vec<bool>,
}

impl<C: Constraint> TextOrJson<C> {
    pub(crate) fn new(inner: C) -> Self {
        TextOrJson { inner, state: State::Undecided, scratch: Vec::new() }
    }

    /// Whether the answer became a JSON document.
    #[cfg(test)]
    pub(crate) fn is_json(&self) -> bool {
        matches!(self.state, State::Json)
    }
}

/// The bytes after leading ASCII whitespace, and whether there was any.
fn after_space(bytes: &[u8]) -> (&[u8], bool) {
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(bytes.len());
    (&bytes[start..], start > 0)
}

/// Free text: every token but the control tokens (no bytes), and the end of the turn.
fn free(vocab: &Vocabulary, allowed: &mut [bool]) {
    for (a, t) in allowed.iter_mut().zip(&vocab.tokens) {
        *a = !t.is_empty();
    }
    if let Some(a) = allowed.get_mut(vocab.end_of_turn as usize) {
        *a = true;
    }
}

impl<C: Constraint> Constraint for TextOrJson<C> {
    fn mask(&mut self, vocab: &Vocabulary, allowed: &mut [bool]) {
        match self.state {
            State::Text => free(vocab, allowed),
            State::Json => self.inner.mask(vocab, allowed),
            State::Undecided => {
                self.scratch.clear();
                self.scratch.resize(allowed.len(), false);
                self.inner.mask(vocab, &mut self.scratch);
                free(vocab, allowed);
                for (i, t) in vocab.tokens.iter().enumerate().take(allowed.len()) {
                    let (rest, spaced) = after_space(t);
                    if rest.first() == Some(&b'{') {
                        allowed[i] = !spaced && self.scratch[i];
                    }
                }
            }
        }
    }

    fn advance(&mut self, bytes: &[u8]) -> bool {
        match self.state {
            State::Text => true,
            State::Json => self.inner.advance(bytes),
            State::Undecided => {
                let (rest, spaced) = after_space(bytes);
                match rest.first() {
                    None => true,
                    Some(b'{') if spaced => false,
                    Some(b'{') => {
                        let ok = self.inner.advance(bytes);
                        if ok {
                            self.state = State::Json;
                        }
                        ok
                    }
                    Some(_) => {
                        self.state = State::Text;
                        true
                    }
                }
            }
        }
    }

    fn is_complete(&self) -> bool {
        matches!(self.state, State::Json) && self.inner.is_complete()
    }

    fn completion(&self) -> String {
        match self.state {
            State::Json => self.inner.completion(),
            State::Text | State::Undecided => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A constraint standing for the tool-call schema: exactly the text `{"a":1}`.
    struct Exactly {
        text: &'static [u8],
        at: usize,
    }

    impl Constraint for Exactly {
        fn mask(&mut self, vocab: &Vocabulary, allowed: &mut [bool]) {
            let rest = &self.text[self.at..];
            for (a, t) in allowed.iter_mut().zip(&vocab.tokens) {
                *a = !t.is_empty() && rest.starts_with(t);
            }
            if rest.is_empty() {
                allowed[vocab.end_of_turn as usize] = true;
            }
        }
        fn advance(&mut self, bytes: &[u8]) -> bool {
            let ok = self.text[self.at..].starts_with(bytes);
            if ok {
                self.at += bytes.len();
            }
            ok
        }
        fn is_complete(&self) -> bool {
            self.at == self.text.len()
        }
        fn completion(&self) -> String {
            String::from_utf8_lossy(&self.text[self.at..]).into_owned()
        }
    }

    fn vocab() -> Vocabulary {
        let tokens = ["", "Hi", " ", "{", " {", "{\"", "a\":", "1}", "{}", "<|x|>", "\n"];
        let mut tokens: Vec<Vec<u8>> = tokens.iter().map(|t| t.as_bytes().to_vec()).collect();
        tokens[9].clear(); // a control token
        Vocabulary { tokens, end_of_turn: 0 }
    }

    fn allowed(c: &mut TextOrJson<Exactly>, v: &Vocabulary) -> Vec<&'static str> {
        let names = ["<eot>", "Hi", " ", "{", " {", "{\"", "a\":", "1}", "{}", "<ctl>", "\\n"];
        let mut mask = vec![false; v.tokens.len()];
        c.mask(v, &mut mask);
        names.iter().zip(mask).filter(|(_, a)| *a).map(|(n, _)| *n).collect()
    }

    fn wrapper() -> TextOrJson<Exactly> {
        TextOrJson::new(Exactly { text: br#"{"a":1}"#, at: 0 })
    }

    #[test]
    fn undecided_allows_text_and_the_start_of_a_call() {
        let v = vocab();
        let mut c = wrapper();
        // Text, whitespace, the end of the turn; `{` and `{"` as the schema allows; not ` {`,
        // `{}` (the schema refuses it) or a control token.
        assert_eq!(allowed(&mut c, &v), ["<eot>", "Hi", " ", "{", "{\"", "a\":", "1}", "\\n"]);
        assert!(c.advance(b" "));
        assert!(!c.is_json() && !c.is_complete());
        assert!(!c.advance(b" {"), "whitespace then `{{` in one token is refused");
        assert!(c.advance(b"{\""));
        assert!(c.is_json());
        assert_eq!(allowed(&mut c, &v), ["a\":"]);
        assert_eq!(c.completion(), "a\":1}");
        assert!(c.advance(b"a\":") && c.advance(b"1}"));
        assert!(c.is_complete());
    }

    #[test]
    fn text_first_frees_the_rest() {
        let v = vocab();
        let mut c = wrapper();
        assert!(c.advance(b"Hi"));
        assert!(!c.is_json());
        assert_eq!(allowed(&mut c, &v), ["<eot>", "Hi", " ", "{", " {", "{\"", "a\":", "1}", "{}", "\\n"]);
        assert!(c.advance(b"{}"));
        assert!(!c.is_complete());
        assert_eq!(c.completion(), "");
    }

    #[test]
    fn a_refused_start_leaves_the_state_as_it_was() {
        let mut c = wrapper();
        assert!(!c.advance(b"{}"));
        assert!(!c.is_json());
        assert!(c.advance(b"Hi"));
    }
}
