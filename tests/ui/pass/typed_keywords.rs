//! Inputs, properties and tools named like Rust keywords compile: the fields are raw identifiers
//! (`r#match`) or, for `self`, `super`, `crate` and `Self`, which cannot be raw, renamed (`self_`),
//! and serialize under the prompt's names.

/// A tool named `match`.
#[prompty::tool]
fn r#match(r#type: Option<String>) -> String {
    r#type.unwrap_or_default()
}

/// A tool named `self`: `fn self` cannot be written, so its handler is `self_`.
#[prompty::tool(name = "self")]
fn self_() -> String {
    "me".into()
}

/// A tool named `Self`: its handler is `Self_`.
#[allow(non_snake_case)]
#[prompty::tool(name = "Self")]
fn Self_() -> String {
    "Me".into()
}

prompty::include_prompty!("ui/prompts/keywords.prompty");

fn main() {
    let inputs = keywords::Inputs {
        r#match: "m".into(),
        r#move: "mv".into(),
        r#type: "t".into(),
        self_: "s".into(),
        super_: "su".into(),
        crate_: Some("c".into()),
        r#async: None,
        r#fn: Some(keywords::Fn { r#type: "ft".into(), self_: Some("fs".into()) }),
    };
    let messages = keywords::prepare(&inputs).unwrap();
    assert_eq!(messages[0].text(), "m mv t s su c later ft/fs");
    let mut names: Vec<_> = keywords::tools().names().map(str::to_owned).collect();
    names.sort();
    assert_eq!(names, ["Self", "match", "self"]);
}
