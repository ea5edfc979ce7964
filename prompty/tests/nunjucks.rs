//! The `nunjucks` renderer key (the Prompty TypeScript runtime's): every row of the table of
//! `prompty::builtins::Jinja2Renderer`'s documentation, rendered under `nunjucks`, gives the
//! result chosen there. Where nunjucks and this renderer agree, the expected text is what nunjucks
//! 3.2.4 prints (`new nunjucks.Environment(null, {autoescape: false, throwOnUndefined: false})`,
//! the TypeScript runtime's configuration) for the same template and inputs; where they differ,
//! both are given. The nunjucks-only spellings are checked to leave `jinja2` templates as they were.

use prompty::{load_str, prepare, render, Agent};
use serde_json::{json, Value};

fn agent(format: &str, body: &str) -> Agent {
    let text = format!("---\nname: t\ntemplate:\n  format: {format}\n  parser: prompty\n---\n{body}");
    load_str(&text, ".", "t.prompty").unwrap_or_else(|e| panic!("{body:?}: {e}"))
}

fn inputs() -> Value {
    json!({
        "s": "text", "e": "", "z": null, "l": [1, "a", null], "o": {"b": 1, "a": 2}, "empty": [], "eo": {},
        "t": true, "f": 1.0, "h": 2.5, "n": 42, "html": "<b>", "pairs": [["x", 1], ["y", 2]]
    })
}

/// The text `format` renders `body` to, by `render` and by `prepare` (one system message; the
/// fast path of `prepare` must agree with the engine), or the error.
fn rendered(format: &str, body: &str) -> Result<String, String> {
    let a = agent(format, body);
    let inputs = inputs();
    let text = render(&a, &inputs).map_err(|e| e.to_string());
    let messages = prepare(&a, &inputs).map_err(|e| e.to_string());
    match (&text, &messages) {
        (Ok(t), Ok(m)) => {
            let joined: String = m.iter().map(|m| m.text()).collect();
            assert_eq!(joined, t.trim_matches('\n'), "{format} {body:?}: prepare and render disagree");
        }
        (Err(_), Err(_)) => {}
        _ => panic!("{format} {body:?}: render {text:?}, prepare {messages:?}"),
    }
    text
}

/// Rows where nunjucks and this renderer agree: (template, what nunjucks prints).
const SAME: &[(&str, &str)] = &[
    ("{{ z }}|{{ missing }}|{{ t }}|{{ f }}|{{ h }}", "||true|1|2.5"),
    ("{{ html | safe }}|{{ html }}", "<b>|<b>"),
    ("{% if e %}T{% else %}F{% endif %}{% if '0' %}T{% endif %}{% if 0 %}T{% endif %}", "FT"),
    ("{% if n > 50 %}a{% elif n > 40 %}b{% else %}c{% endif %}", "b"),
    ("{{ not t }}{{ t and n }}{{ z or 'x' }}{{ 'y' if t else 'n' }}{{ 'y' if false }}|", "false42xy|"),
    ("{{ 'a' in l }}{{ 'ex' in s }}{{ 'a' in o }}{{ 1 in l }}", "truetruetruetrue"),
    (
        "{% for x in l %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }}{{ loop.revindex0 }};{% endfor %}",
        "10truefalse332;21falsefalse321;32falsetrue310;",
    ),
    ("{% for x in empty %}{{ x }}{% else %}none{% endfor %}", "none"),
    ("{% for x in missing %}{{ x }}{% else %}empty{% endfor %}", "empty"),
    ("{% for a, b in pairs %}{{ a }}={{ b }};{% endfor %}", "x=1;y=2;"),
    ("{% for k, v in o | dictsort %}{{ k }}={{ v }};{% endfor %}", "a=2;b=1;"),
    ("{% set x = 5 %}{{ x }}", "5"),
    ("{% set y %}blk{{ s }}{% endset %}[{{ y }}]", "[blktext]"),
    ("{% for i in l %}{% set c = i %}{% endfor %}[{{ c }}]", "[]"),
    ("a  {%- if t -%}  b  {%- endif -%}  c", "abc"),
    ("{% raw %}{{ s }}{% endraw %}", "{{ s }}"),
    ("{# comment #}{{ 'a' ~ 'b' ~ n }}", "ab42"),
    ("{{ l | join(', ') }}|{{ l | join }}", "1, a, |1a"),
    ("{{ l | length }}{{ s | length }}{{ o | length }}", "342"),
    ("{{ missing | default('d') }}|{{ e | default('d') }}|{{ e | default('d', true) }}|{{ 'x' | d('y') }}", "d||d|x"),
    ("{{ s | upper }}{{ s | title }}{{ '  x ' | trim }}|{{ missing | upper }}|", "TEXTTextx||"),
    ("{{ s | replace('t', 'T') }}|{{ s | capitalize }}|{{ l | first }}|{{ l | last }}", "TexT|Text|1|"),
    ("{{ 7 / 2 }}|{{ 7 // 2 }}|{{ 2 ** 3 }}|{{ 7 % 3 }}|{{ 1.5 * 2 }}", "3.5|3|8|1|3"),
    ("{{ o.a }}{{ o['b'] }}{{ l[1] }}{{ missing.x.y }}|", "21a|"),
    ("{% if z == none %}eq{% endif %}{{ z is none }}", "eqtrue"),
    ("{% for x in s %}{{ x }};{% endfor %}", "t;e;x;t;"),
    ("a\n\n{{ s }}\n  b", "a\n\ntext\n  b"),
];

#[test]
fn constructs_that_agree_render_as_nunjucks_renders_them() {
    let failed: Vec<String> = SAME
        .iter()
        .filter_map(|(body, nunjucks)| {
            let got = rendered("nunjucks", body);
            (got.as_deref() != Ok(*nunjucks)).then(|| format!("{body:?}: {got:?}, nunjucks {nunjucks:?}"))
        })
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
}

/// The nunjucks spellings Jinja lacks: supported in `nunjucks` templates, as nunjucks prints them.
#[test]
fn nunjucks_spellings_are_supported_in_nunjucks_templates() {
    let rows: &[(&str, &str)] = &[
        ("{% if n > 50 %}a{% elseif n > 40 %}b{% else %}c{% endif %}", "b"),
        ("{%- if n > 50 -%}a{%- elseif n > 40 -%}b{%- endif -%}", "b"),
        ("{% verbatim %}{{ s }}{% if %}{% endverbatim %}|{{ s }}", "{{ s }}{% if %}|text"),
        ("{% raw %}{% elseif %}{% endraw %}", "{% elseif %}"),
        ("{{ null }}|{{ z is none }}{{ null is none }}{% if z == null %}eq{% endif %}", "|truetrueeq"),
        (
            "{{ o | dump }}|{{ l | dump }}|{{ s | dump }}|{{ z | dump }}|{{ missing | dump }}|{{ f | dump }}",
            "{\"b\":1,\"a\":2}|[1,\"a\",null]|\"text\"|null||1",
        ),
        ("{{ o | dump(2) }}", "{\n  \"b\": 1,\n  \"a\": 2\n}"),
        ("{% for k, v in o %}{{ k }}={{ v }};{% endfor %}", "b=1;a=2;"),
        ("{% for k,v in o -%} {{ k }}{{ v }} {%- endfor %}", "b1a2"),
        ("{% for k, v in (o if t else eo) %}{{ k }}{% else %}none{% endfor %}", "ba"),
        ("{% for k, v in eo %}{{ k }}{% else %}none{% endfor %}", "none"),
        ("{% for k, v in missing %}{{ k }}{% else %}none{% endfor %}", "none"),
        ("{{ '{% elseif %}' }}{# {% elseif %} #}", "{% elseif %}"),
    ];
    let failed: Vec<String> = rows
        .iter()
        .filter_map(|(body, expected)| {
            let got = rendered("nunjucks", body);
            (got.as_deref() != Ok(*expected)).then(|| format!("{body:?}: {got:?}, expected {expected:?}"))
        })
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
    // In a `jinja2` (or `jinja`) template they mean what they meant.
    for format in ["jinja2", "jinja"] {
        assert!(rendered(format, "{% if t %}a{% elseif n %}b{% endif %}").is_err());
        assert!(rendered(format, "{% verbatim %}x{% endverbatim %}").is_err());
        assert!(rendered(format, "{{ o | dump }}").is_err());
        assert_eq!(rendered(format, "{{ null }}|{{ null is none }}").as_deref(), Ok("|false"));
        assert!(rendered(format, "{% for k, v in o %}{{ k }}{% endfor %}").is_err());
    }
}

/// Where nunjucks and this renderer differ, this renderer keeps Jinja's meaning (or the Prompty
/// subset's): (template, what nunjucks prints, what prints here).
#[test]
fn documented_differences_render_as_documented() {
    let rows: &[(&str, &str, Result<&str, ()>)] = &[
        ("{% for x in o %}{{ x }};{% endfor %}", "", Ok("b;a;")),
        ("{% if empty %}T{% else %}F{% endif %}{% if eo %}T{% else %}F{% endif %}", "TT", Ok("FF")),
        ("{% if empty | length %}T{% else %}F{% endif %}", "F", Ok("F")),
        ("{{ l }}|{{ o }}", "1,a,|[object Object]", Ok("[1, 'a', None]|{'b': 1, 'a': 2}")),
        ("{{ l | join(',') }}", "1,a,", Ok("1,a,")),
        ("{{ z | default('d') }}", "", Ok("d")),
        ("{{ True }}|{{ False }}|{{ None }}", "||", Ok("true|false|")),
        ("{{ 'a' + n }}", "a42", Err(())),
        ("{{ missing | length }}", "0", Err(())),
        ("{{ 'a' ~ n }}", "a42", Ok("a42")),
        ("{{ s.upper() }}", "(refused by the TypeScript runtime)", Err(())),
        ("{% asyncEach x in l %}{{ x }}{% endeach %}", "1a", Err(())),
        ("{{ 'abc' | replace(r/b/g, 'x') }}", "axc", Err(())),
    ];
    let mut failed = Vec::new();
    for (body, _nunjucks, expected) in rows {
        let got = rendered("nunjucks", body);
        let ok = match expected {
            Ok(text) => got.as_deref() == Ok(*text),
            Err(()) => got.is_err(),
        };
        if !ok {
            failed.push(format!("{body:?}: {got:?}, expected {expected:?}"));
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}

/// A prompt of the TypeScript runtime's shape (`format: {kind: nunjucks}`, a thread input, role
/// markers) loads and prepares as the same prompt with `jinja2` does.
#[test]
fn a_typescript_runtime_prompt_prepares_as_its_jinja2_twin() {
    let prompt = |kind: &str| {
        format!(
            "---\nname: chat\nmodel:\n  id: gpt-4o\ninputs:\n  - name: question\n    kind: string\n    \
             default: Hi\n  - name: history\n    kind: thread\ntemplate:\n  format:\n    kind: {kind}\n  parser:\n    \
             kind: prompty\n---\nsystem:\nYou are helpful.\n{{% if question %}}Answer briefly.{{% elseif history %}}Go on.{{% endif %}}\n\n\
             {{{{history}}}}\nuser:\n{{{{question}}}}\n"
        )
    };
    let history = json!({"history": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]});
    let nunjucks = load_str(&prompt("nunjucks"), ".", "n.prompty").unwrap();
    let jinja = load_str(&prompt("jinja2").replace("elseif", "elif"), ".", "j.prompty").unwrap();
    let a = prepare(&nunjucks, &history).unwrap();
    let b = prepare(&jinja, &history).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.len(), 4);
    let report = prompty::check(&nunjucks);
    assert!(report.diagnostics.is_empty(), "{:?}", report.diagnostics);
    // The checks read `nunjucks` templates: an undeclared name is found.
    let bad = load_str(&prompt("nunjucks").replace("{{question}}", "{{ questoin }}"), ".", "b.prompty").unwrap();
    let errors: Vec<String> = prompty::check(&bad).errors().map(|d| d.to_string()).collect();
    assert!(errors.iter().any(|e| e.contains("`questoin`")), "{errors:?}");
}
