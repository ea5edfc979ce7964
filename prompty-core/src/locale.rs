//! Locale tags (BCP 47) and the rule that picks a prompt's locale variant, shared by the runtime's
//! prompt registry and the typed prompts `prompty-build` generates, so both resolve a locale the
//! same way.
//!
//! A tag is read case-insensitively, with `_` accepted for `-` (`pt_br` is `pt-BR`), checked
//! against the syntax of BCP 47 (RFC 5646) and kept in its conventional case: language lower case,
//! script title case, region upper case (`zh-Hant-TW`). Languages have 2 or 3 letters (the 4 to 8
//! letter languages RFC 5646 reserves have never been registered).
//!
//! [`lookup_order`] is the order in which variants are tried for a requested tag:
//! 1. the tag itself, then each shorter tag made by dropping its last subtag (`zh-Hant-TW`,
//!    `zh-Hant`, `zh`: RFC 4647 lookup; `pt-BR` then `pt`);
//! 2. the same for the fallback locale (`en` unless set otherwise);
//! 3. the default prompt (the file without a locale).
//!
//! ```
//! use prompty_core::locale::{lookup_order, Locale};
//! let fallback = Locale::parse("en")?;
//! let order: Vec<String> = lookup_order("PT_br", &fallback)?.collect();
//! assert_eq!(order, ["pt-BR", "pt", "en"]); // then the default prompt
//! # Ok::<(), prompty_core::Error>(())
//! ```
//!
//! Prompt files name their locale before the extension: `greeting.prompty` is the default of the
//! prompt `greeting`, `greeting.fr.prompty` and `greeting.pt-BR.prompty` its variants
//! ([`split_file_stem`]).

use crate::{Error, Result};
use std::fmt;

/// The longest tag accepted, in bytes (RFC 5646 tags in use are far shorter).
pub const MAX_TAG_LEN: usize = 64;

/// The tags RFC 5646 lists as "irregular grandfathered": whole tags that do not follow the
/// syntax. They are accepted as they are.
const IRREGULAR: &[&str] = &[
    "en-gb-oed",
    "i-ami",
    "i-bnn",
    "i-default",
    "i-enochian",
    "i-hak",
    "i-klingon",
    "i-lux",
    "i-mingo",
    "i-navajo",
    "i-pwn",
    "i-tao",
    "i-tay",
    "i-tsu",
    "sgn-be-fr",
    "sgn-be-nl",
    "sgn-ch-de",
];

/// A well-formed BCP 47 language tag, in its conventional case (`pt-BR`, `zh-Hant-TW`, `de`).
///
/// ```
/// use prompty_core::locale::Locale;
/// let l = Locale::parse("zh_hant_tw")?;
/// assert_eq!(l.as_str(), "zh-Hant-TW");
/// assert_eq!(l.language(), "zh");
/// assert_eq!(l, "ZH-hant-tw".parse::<Locale>()?);
/// assert!(Locale::parse("english!").is_err());
/// # Ok::<(), prompty_core::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Locale(String);

impl Locale {
    /// Reads a tag: case-insensitive, `_` accepted for `-`. An error names the tag and says why
    /// it is not one.
    ///
    /// ```
    /// let err = prompty_core::locale::Locale::parse("pt-BRAZIL-").unwrap_err();
    /// assert!(err.to_string().starts_with("`pt-BRAZIL-` is not a locale tag"), "{err}");
    /// ```
    pub fn parse(tag: &str) -> Result<Locale> {
        let canonical = canonical(tag).map_err(|why| Error::InvalidLocale { tag: shown(tag), message: why })?;
        Ok(Locale(canonical))
    }

    /// The tag, in its conventional case.
    ///
    /// ```
    /// assert_eq!(prompty_core::locale::Locale::parse("FR-ca")?.as_str(), "fr-CA");
    /// # Ok::<(), prompty_core::Error>(())
    /// ```
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The primary language subtag (`pt` of `pt-BR`).
    ///
    /// ```
    /// assert_eq!(prompty_core::locale::Locale::parse("pt-BR")?.language(), "pt");
    /// # Ok::<(), prompty_core::Error>(())
    /// ```
    pub fn language(&self) -> &str {
        self.0.split('-').next().unwrap_or(&self.0)
    }

    /// The tag and each shorter tag made by dropping its last subtag (and a singleton left
    /// last), longest first: RFC 4647 lookup.
    ///
    /// ```
    /// let l = prompty_core::locale::Locale::parse("zh-Hant-TW")?;
    /// assert_eq!(l.truncations().collect::<Vec<_>>(), ["zh-Hant-TW", "zh-Hant", "zh"]);
    /// # Ok::<(), prompty_core::Error>(())
    /// ```
    pub fn truncations(&self) -> impl Iterator<Item = &str> {
        truncations(&self.0)
    }
}

impl fmt::Display for Locale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for Locale {
    type Err = Error;
    fn from_str(s: &str) -> Result<Locale> {
        Locale::parse(s)
    }
}

impl AsRef<str> for Locale {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// The tag as shown in an error: at most [`MAX_TAG_LEN`] characters of it.
fn shown(tag: &str) -> String {
    let mut s: String = tag.chars().take(MAX_TAG_LEN).collect();
    if s.len() < tag.len() {
        s.push('…');
    }
    s
}

/// The tags tried for `requested`, in order (see the [module docs](self)): its truncations, then
/// the fallback's that were not tried yet. After them comes the default prompt. The tags are in
/// conventional case, so they compare equal to [`Locale::as_str`] of the variants.
///
/// ```
/// use prompty_core::locale::{lookup_order, Locale};
/// let fallback = Locale::parse("en-US")?;
/// let order: Vec<String> = lookup_order("en-GB", &fallback)?.collect();
/// assert_eq!(order, ["en-GB", "en", "en-US"]);
/// assert!(lookup_order("no such tag", &fallback).is_err());
/// # Ok::<(), prompty_core::Error>(())
/// ```
pub fn lookup_order<'a>(requested: &str, fallback: &'a Locale) -> Result<LookupOrder<'a>> {
    let requested = Locale::parse(requested)?;
    Ok(LookupOrder { requested, fallback, step: Step::Requested(0), fallback_at: 0 })
}

/// The iterator of [`lookup_order`].
///
/// ```
/// use prompty_core::locale::{lookup_order, Locale};
/// let en = Locale::parse("en")?;
/// assert_eq!(lookup_order("en", &en)?.count(), 1);
/// # Ok::<(), prompty_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct LookupOrder<'a> {
    requested: Locale,
    fallback: &'a Locale,
    step: Step,
    fallback_at: usize,
}

#[derive(Debug, Clone, Copy)]
enum Step {
    Requested(usize),
    Fallback,
    Done,
}

impl<'a> Iterator for LookupOrder<'a> {
    type Item = String;

    fn next(&mut self) -> Option<String> {
        loop {
            match self.step {
                Step::Requested(n) => match truncations(&self.requested.0).nth(n) {
                    Some(t) => {
                        self.step = Step::Requested(n + 1);
                        return Some(t.to_owned());
                    }
                    None => self.step = Step::Fallback,
                },
                Step::Fallback => match truncations(&self.fallback.0).nth(self.fallback_at) {
                    Some(t) => {
                        self.fallback_at += 1;
                        if truncations(&self.requested.0).any(|r| r == t) {
                            continue;
                        }
                        return Some(t.to_owned());
                    }
                    None => self.step = Step::Done,
                },
                Step::Done => return None,
            }
        }
    }
}

/// Finds the variant to use for `requested` among `variants` (tags in conventional case, as
/// [`Locale::as_str`] gives them), in the order of [`lookup_order`]: the index of the variant, or
/// `None` for the default prompt. `requested` is read like [`Locale::parse`] reads a tag; the
/// search allocates nothing.
///
/// ```
/// use prompty_core::locale::{resolve, Locale};
/// let variants = ["fr", "pt-BR", "pt"];
/// let en = Locale::parse("en")?;
/// assert_eq!(resolve("pt_br", &variants, &en)?, Some(1));
/// assert_eq!(resolve("pt-PT", &variants, &en)?, Some(2));
/// assert_eq!(resolve("fr-CA", &variants, &en)?, Some(0));
/// assert_eq!(resolve("de", &variants, &en)?, None); // no `de`, no `en`: the default prompt
/// assert!(resolve("not a tag", &variants, &en).is_err());
/// # Ok::<(), prompty_core::Error>(())
/// ```
pub fn resolve<S: AsRef<str>>(requested: &str, variants: &[S], fallback: &Locale) -> Result<Option<usize>> {
    resolve_by(requested, fallback, |tag| variants.iter().position(|v| same_tag(v.as_ref(), tag)))
}

/// The general form of [`resolve`]: calls `find` with each tag of the [`lookup_order`] until it
/// returns something. The tags handed to `find` are as the caller wrote them (`pt_br`, `pt`), so
/// compare them with [`same_tag`]. Allocates nothing.
///
/// ```
/// use prompty_core::locale::{resolve_by, same_tag, Locale};
/// let en = Locale::parse("en")?;
/// let mut tried = Vec::new();
/// let found = resolve_by("de_AT", &en, |tag| { tried.push(tag.to_owned()); same_tag(tag, "de").then_some("Hallo") })?;
/// assert_eq!((found, tried), (Some("Hallo"), vec!["de_AT".to_owned(), "de".to_owned()]));
/// # Ok::<(), prompty_core::Error>(())
/// ```
pub fn resolve_by<T>(requested: &str, fallback: &Locale, mut find: impl FnMut(&str) -> Option<T>) -> Result<Option<T>> {
    check_syntax(requested).map_err(|why| Error::InvalidLocale { tag: shown(requested), message: why })?;
    for t in truncations(requested) {
        if let Some(found) = find(t) {
            return Ok(Some(found));
        }
    }
    for t in truncations(&fallback.0) {
        if let Some(found) = find(t) {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// Whether two tags are the same, ignoring ASCII case and taking `_` as `-`.
///
/// ```
/// assert!(prompty_core::locale::same_tag("pt_br", "pt-BR"));
/// assert!(!prompty_core::locale::same_tag("pt", "pt-BR"));
/// ```
pub fn same_tag(a: &str, b: &str) -> bool {
    let norm = |c: u8| if c == b'_' { b'-' } else { c.to_ascii_lowercase() };
    a.len() == b.len() && a.bytes().zip(b.bytes()).all(|(x, y)| norm(x) == norm(y))
}

fn is_separator(b: u8) -> bool {
    b == b'-' || b == b'_'
}

/// `tag` and its shorter forms: drop the last subtag, then a singleton left last.
fn truncations(tag: &str) -> impl Iterator<Item = &str> {
    let mut next = Some(tag);
    std::iter::from_fn(move || {
        let current = next?;
        let mut end = current.bytes().rposition(is_separator);
        // A singleton (`x` of `x-private`, `u` of `de-u-co-phonebk`) is never left last.
        while let Some(e) = end {
            let head = &current[..e];
            match head.bytes().rposition(is_separator) {
                Some(s) if e - s == 2 => end = Some(s),
                None if head.len() == 1 => end = None,
                _ => break,
            }
        }
        next = end.map(|e| &current[..e]);
        Some(current)
    })
}

/// Whether `s` is a well-formed tag (RFC 5646 `Language-Tag`, `_` taken as `-`).
fn check_syntax(tag: &str) -> std::result::Result<(), String> {
    if tag.is_empty() {
        return Err("it is empty".to_owned());
    }
    if tag.len() > MAX_TAG_LEN {
        return Err(format!("it is longer than {MAX_TAG_LEN} bytes"));
    }
    if let Some(c) = tag.chars().find(|c| !c.is_ascii_alphanumeric() && *c != '-' && *c != '_') {
        return Err(format!("`{}` is not a letter, digit or `-`", c.escape_debug()));
    }
    match check_subtags(tag) {
        // The irregular tags do not follow the syntax: looked up only when it fails.
        Err(_) if IRREGULAR.iter().any(|t| same_tag(t, tag)) => Ok(()),
        result => result,
    }
}

/// Whether a tag of letters, digits and separators follows the RFC 5646 syntax.
fn check_subtags(tag: &str) -> std::result::Result<(), String> {
    // The subtags, without allocating: a tag of at most MAX_TAG_LEN bytes without empty subtags
    // has at most MAX_TAG_LEN / 2 + 1 of them.
    let mut buf = [""; MAX_TAG_LEN / 2 + 1];
    let mut n = 0;
    let mut rest = tag;
    loop {
        let (sub, more) = match rest.bytes().position(is_separator) {
            Some(at) => (&rest[..at], Some(&rest[at + 1..])),
            None => (rest, None),
        };
        if sub.is_empty() {
            return Err(if n == 0 || more.is_none() {
                "it starts or ends with `-`".to_owned()
            } else {
                "it has an empty subtag (`--`)".to_owned()
            });
        }
        if sub.len() > 8 {
            return Err(format!("the subtag `{sub}` is longer than 8 characters"));
        }
        buf[n] = sub;
        n += 1;
        match more {
            Some(more) => rest = more,
            None => break,
        }
    }
    let subtags = &buf[..n];
    let is = |s: &str, what: &str| s.eq_ignore_ascii_case(what);
    let alpha = |s: &str| s.bytes().all(|b| b.is_ascii_alphabetic());
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let mut i = 0;
    if is(subtags[0], "x") {
        return private_use(&subtags[1..]);
    }
    // language: 2-3 letters (ISO 639), with up to three 3-letter extlangs. (RFC 5646 also
    // reserves 4-8 letter languages; none is registered, and a file name like `greeting.english`
    // is a mistake worth reporting.)
    let lang = subtags[0];
    if !alpha(lang) || !(2..=3).contains(&lang.len()) {
        return Err(format!(
            "`{lang}` is not a language subtag: a language subtag has 2 or 3 letters (ISO 639, e.g. `en`)"
        ));
    }
    i += 1;
    let mut ext = 0;
    while ext < 3 && i < subtags.len() && subtags[i].len() == 3 && alpha(subtags[i]) {
        i += 1;
        ext += 1;
    }
    // script: 4 letters.
    if i < subtags.len() && subtags[i].len() == 4 && alpha(subtags[i]) {
        i += 1;
    }
    // region: 2 letters or 3 digits.
    if i < subtags.len()
        && ((subtags[i].len() == 2 && alpha(subtags[i])) || (subtags[i].len() == 3 && digits(subtags[i])))
    {
        i += 1;
    }
    // variants: 5-8 alphanumerics, or a digit and 3 alphanumerics; never twice the same.
    let first_variant = i;
    while i < subtags.len() {
        let s = subtags[i];
        let variant = (5..=8).contains(&s.len()) || (s.len() == 4 && s.as_bytes()[0].is_ascii_digit());
        if !variant {
            break;
        }
        if subtags[first_variant..i].iter().any(|seen| is(seen, s)) {
            return Err(format!("the variant `{s}` is repeated"));
        }
        i += 1;
    }
    // extensions: a singleton (not `x`) and one or more 2-8 character subtags; each singleton once.
    let first_extension = i;
    while i < subtags.len() && subtags[i].len() == 1 && !is(subtags[i], "x") {
        let singleton = subtags[i];
        if subtags[first_extension..i].iter().any(|s| s.len() == 1 && is(s, singleton)) {
            return Err(format!("the extension `{singleton}` is repeated"));
        }
        i += 1;
        let start = i;
        while i < subtags.len() && subtags[i].len() >= 2 {
            i += 1;
        }
        if i == start {
            return Err(format!("the extension `{singleton}` has no subtag after it"));
        }
    }
    if i < subtags.len() && is(subtags[i], "x") {
        return private_use(&subtags[i + 1..]);
    }
    match subtags.get(i) {
        None => Ok(()),
        Some(s) => Err(format!("the subtag `{s}` is out of place (expected language[-script][-region][-variant])")),
    }
}

fn private_use(rest: &[&str]) -> std::result::Result<(), String> {
    if rest.is_empty() {
        return Err("the private-use part `x` has no subtag after it".to_owned());
    }
    Ok(())
}

/// The tag in conventional case, or why it is not one.
fn canonical(tag: &str) -> std::result::Result<String, String> {
    check_syntax(tag)?;
    let lower = tag.replace('_', "-").to_ascii_lowercase();
    let mut out = String::with_capacity(lower.len());
    let mut after_singleton = false;
    for (i, sub) in lower.split('-').enumerate() {
        if i > 0 {
            out.push('-');
        }
        if i > 0 && !after_singleton && sub.len() == 4 && sub.bytes().all(|b| b.is_ascii_alphabetic()) {
            // script: title case.
            out.push(sub.as_bytes()[0].to_ascii_uppercase() as char);
            out.push_str(&sub[1..]);
        } else if i > 0 && !after_singleton && sub.len() == 2 {
            out.push_str(&sub.to_ascii_uppercase());
        } else {
            out.push_str(sub);
        }
        if sub.len() == 1 {
            after_singleton = true;
        }
    }
    Ok(out)
}

/// Splits a prompt file's stem (its name without `.prompty`) into its id part and its locale:
/// `greeting` → (`greeting`, none), `greeting.pt-BR` → (`greeting`, `pt-BR`). The id part ends at
/// the first `.`; everything after it must be one locale tag, or the error says what is wrong.
///
/// ```
/// use prompty_core::locale::split_file_stem;
/// assert_eq!(split_file_stem("greeting")?, ("greeting", None));
/// let (id, locale) = split_file_stem("greeting.pt_br")?;
/// assert_eq!((id, locale.unwrap().as_str()), ("greeting", "pt-BR"));
/// assert!(split_file_stem("greeting.v2.fr").is_err());
/// # Ok::<(), prompty_core::Error>(())
/// ```
pub fn split_file_stem(stem: &str) -> Result<(&str, Option<Locale>)> {
    match stem.split_once('.') {
        None => Ok((stem, None)),
        Some((id, tag)) => Ok((id, Some(Locale::parse(tag)?))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_formed_tags_and_their_case() {
        for (tag, canonical) in [
            ("en", "en"),
            ("EN", "en"),
            ("pt-br", "pt-BR"),
            ("pt_BR", "pt-BR"),
            ("zh-hant-tw", "zh-Hant-TW"),
            ("sr-Latn", "sr-Latn"),
            ("es-419", "es-419"),
            ("de-CH-1996", "de-CH-1996"),
            ("sl-rozaj-biske", "sl-rozaj-biske"),
            ("zh-yue-HK", "zh-yue-HK"),
            ("de-DE-u-co-phonebk", "de-DE-u-co-phonebk"),
            ("en-US-x-twain", "en-US-x-twain"),
            ("x-whatever", "x-whatever"),
            ("i-klingon", "i-klingon"),
            ("en-a-bbb-x-a-ccc", "en-a-bbb-x-a-ccc"),
            ("hy-Latn-IT-arevela", "hy-Latn-IT-arevela"),
        ] {
            assert_eq!(Locale::parse(tag).map(|l| l.0).unwrap_or_else(|e| panic!("{tag}: {e}")), canonical);
        }
    }

    #[test]
    fn malformed_tags_say_why() {
        for (tag, why) in [
            ("", "it is empty"),
            ("e", "`e` is not a language subtag"),
            ("en-", "starts or ends with `-`"),
            ("en--US", "empty subtag"),
            ("de-419-DE", "the subtag `DE` is out of place"),
            ("a-DE", "`a` is not a language subtag"),
            ("ar-a-aaa-b-bbb-a-ccc", "the extension `a` is repeated"),
            ("en-u", "the extension `u` has no subtag"),
            ("en-x", "private-use part"),
            ("fr.ca", "`.` is not a letter"),
            ("en-US ", "` ` is not a letter"),
            ("englishlanguage", "longer than 8"),
            ("english", "a language subtag has 2 or 3 letters"),
            ("v2", "a language subtag has 2 or 3 letters"),
            ("sl-rozaj-rozaj", "variant `rozaj` is repeated"),
            ("12", "not a language subtag"),
        ] {
            let err = Locale::parse(tag).expect_err(tag).to_string();
            assert!(err.contains(why), "{tag}: {err}");
            assert!(err.starts_with(&format!("`{tag}` is not a locale tag")), "{err}");
        }
        let long = "a".repeat(10_000);
        let err = Locale::parse(&long).unwrap_err().to_string();
        assert!(err.len() < 300, "{err}");
    }

    #[test]
    fn truncation_drops_singletons_too() {
        fn t(s: &str) -> Vec<&str> {
            truncations(s).collect()
        }
        assert_eq!(
            t("zh-Hant-CN-x-private1-private2"),
            ["zh-Hant-CN-x-private1-private2", "zh-Hant-CN-x-private1", "zh-Hant-CN", "zh-Hant", "zh"]
        );
        assert_eq!(t("de-u-co-phonebk"), ["de-u-co-phonebk", "de-u-co", "de"]);
        assert_eq!(t("x-a-b"), ["x-a-b"]);
        assert_eq!(t("x-tenant-acme"), ["x-tenant-acme", "x-tenant"]);
        assert_eq!(t("en"), ["en"]);
    }

    /// The lookup order as a table: requested tag, variants present, fallback → chosen variant.
    #[test]
    fn lookup_table() {
        let rows: &[(&str, &[&str], &str, Option<&str>)] = &[
            ("pt-BR", &["pt-BR", "pt", "en"], "en", Some("pt-BR")),
            ("pt-BR", &["pt", "en"], "en", Some("pt")),
            ("pt-PT", &["pt-BR", "en"], "en", Some("en")),
            ("pt-PT", &["pt-BR"], "en", None),
            ("PT_br", &["pt-BR"], "en", Some("pt-BR")),
            ("de", &["fr", "en"], "en", Some("en")),
            ("de", &["fr", "en"], "fr", Some("fr")),
            ("de-AT", &["de", "en"], "en", Some("de")),
            ("zh-Hant-TW", &["zh-Hant", "zh"], "en", Some("zh-Hant")),
            ("en-GB", &["en-US"], "en-US", Some("en-US")),
            ("en-GB", &["en"], "en-US", Some("en")),
            ("ja", &[], "en", None),
            ("x-tenant-acme", &["x-tenant"], "en", Some("x-tenant")),
        ];
        for (requested, variants, fallback, want) in rows {
            let fallback = Locale::parse(fallback).unwrap();
            let got = resolve(requested, variants, &fallback).unwrap().map(|i| variants[i]);
            assert_eq!(got, *want, "{requested} among {variants:?} (fallback {fallback})");
            let order: Vec<String> = lookup_order(requested, &fallback).unwrap().collect();
            let by_order = order.iter().find_map(|t| variants.iter().find(|v| *v == t)).copied();
            assert_eq!(by_order, *want, "{requested}: the documented order {order:?} agrees");
        }
        assert_eq!(lookup_order("pt-BR", &Locale::parse("pt").unwrap()).unwrap().collect::<Vec<_>>(), ["pt-BR", "pt"]);
    }

    #[test]
    fn file_stems() {
        assert_eq!(split_file_stem("a").unwrap(), ("a", None));
        assert_eq!(split_file_stem("a.EN").unwrap().1.unwrap().as_str(), "en");
        let err = split_file_stem("a.b.fr").unwrap_err().to_string();
        assert!(err.starts_with("`b.fr` is not a locale tag"), "{err}");
    }
}
