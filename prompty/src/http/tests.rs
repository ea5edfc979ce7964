//! Tests of the secrets, errors and credentials of the HTTP layer (the retry policy has its own,
//! in `retry.rs`).

use super::credentials::Resolved;
use super::error::{cap_text, provider_message, truncate_body, HttpError, MAX_TEXT_IN_ERROR};
use super::secrets::{insert_secret, Secrets, REDACTED};
use crate::Secret;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use std::borrow::Cow;

#[test]
fn secrets_are_scrubbed_in_every_form() {
    let mut h = HeaderMap::new();
    insert_secret(&mut h, reqwest::header::AUTHORIZATION, "Bearer ", Some(&Secret::new("sk-a/b+c")), "o").unwrap();
    h.insert("x-other", HeaderValue::from_static("sk-a/b+c-not-sensitive"));
    let s = Secrets::from_headers(&h);
    assert_eq!(format!("{s:?}"), format!("Secrets({})", s.0.all.len()));
    for text in ["key sk-a/b+c!", "Bearer sk-a/b+c", r#"{"k":"sk-a\/b+c"}"#, "k=sk-a%2Fb%2Bc"] {
        let out = s.scrub(text);
        assert!(out.contains(REDACTED) && !out.contains("b+c") && !out.contains("b%2Bc"), "{text} -> {out}");
    }
    assert!(matches!(s.scrub("nothing here"), Cow::Borrowed(_)));
    assert_eq!(&*s.scrub_bytes(b"\xff sk-a/b+c"), "\u{FFFD} [REDACTED]".as_bytes(), "not UTF-8: decoded lossily");
    let e = HttpError { body: Some("x".repeat(100_000)), ..HttpError::local("p", "sk-a/b+c".repeat(10_000)) };
    let e = e.scrubbed(&s);
    assert!(e.message.len() < MAX_TEXT_IN_ERROR + 64 && !e.message.contains("sk-a"));
    assert!(e.body.unwrap().len() < MAX_TEXT_IN_ERROR + 64);
}

#[test]
fn provider_messages() {
    assert_eq!(provider_message(br#"{"error":{"message":"bad key","type":"x"}}"#).as_deref(), Some("bad key"));
    assert_eq!(
        provider_message(br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#).as_deref(),
        Some("Overloaded")
    );
    assert_eq!(provider_message(br#"{"error":"nope"}"#).as_deref(), Some("nope"));
    assert_eq!(provider_message(br#"{"detail":"Not Found"}"#).as_deref(), Some("Not Found"));
    assert_eq!(provider_message(b"<html>502</html>"), None);
}

#[test]
fn errors_never_show_keys() {
    let mut h = HeaderMap::new();
    insert_secret(&mut h, reqwest::header::AUTHORIZATION, "Bearer ", Some(&Secret::new("sk-secret")), "openai")
        .unwrap();
    assert!(!format!("{h:?}").contains("sk-secret"));
    insert_secret(&mut h, HeaderName::from_static("x-api-key"), "", Some(&Secret::new("")), "x").unwrap();
    assert!(h.get("x-api-key").is_none());
    let r = Resolved { endpoint: None, key: Some(Secret::new("sk-secret")) };
    assert!(!format!("{r:?}").contains("sk-secret"));
}

#[test]
fn long_bodies_are_truncated() {
    let body = "é".repeat(5000);
    let t = truncate_body(body.as_bytes());
    assert!(t.len() < 4200 && t.ends_with("(10000 bytes)"));
    assert_eq!(cap_text(&t), t, "a cut text is not cut again");
}
