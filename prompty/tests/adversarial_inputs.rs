//! Adversarial templates and inputs: every probe ends quickly with an error naming the prompt
//! (never a hang, a panic, a stack overflow or unbounded memory). Probes that could overflow the
//! stack run in a child process (this test binary re-executed with a filter), whose exit status is
//! checked.

use prompty::jinja::RenderLimits;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

#[path = "../../prompty-core/tests/support/child.rs"]
mod child;
use child::in_child;

fn agent(text: &str) -> prompty::Agent {
    prompty::load_str(text, ".", "adv.prompty").unwrap()
}

/// Renders with `prepare` and `render`, expecting an error naming the file within `limit`.
fn render_err(text: &str, inputs: Value, limit: Duration) -> String {
    let agent = agent(text);
    let start = Instant::now();
    let err = prompty::render(&agent, &inputs).unwrap_err().to_string();
    assert!(start.elapsed() < limit, "render took {:?}: {err}", start.elapsed());
    let start = Instant::now();
    let err2 = prompty::prepare(&agent, &inputs).unwrap_err().to_string();
    assert!(start.elapsed() < limit, "prepare took {:?}: {err2}", start.elapsed());
    assert!(err.starts_with("adv.prompty"), "{err}");
    assert!(err2.starts_with("adv.prompty"), "{err2}");
    err
}

fn items(n: usize) -> Value {
    Value::Array((0..n).map(|i| json!(i)).collect())
}

const BUDGET: Duration = Duration::from_secs(20);

// ----- class 2: render budget and output size -------------------------------------------------

#[test]
fn nested_jinja_loops_run_out_of_fuel() {
    let text = "{% for a in x %}{% for b in x %}{% for c in x %}{% for d in x %}.{% endfor %}{% endfor %}{% endfor %}{% endfor %}";
    let err = render_err(text, json!({"x": items(1000)}), BUDGET);
    assert!(err.contains("render budget") && err.contains("10000000"), "{err}");
}

#[test]
fn nested_jinja_loops_without_output_run_out_of_fuel() {
    let text = "{% for a in x %}{% for b in x %}{% for c in x %}{% endfor %}{% endfor %}{% endfor %}";
    let err = render_err(text, json!({"x": items(1000)}), BUDGET);
    assert!(err.contains("render budget"), "{err}");
}

#[test]
fn jinja_output_is_capped() {
    let big = "y".repeat(1 << 20);
    let text = "{% for a in x %}{{ big }}{% endfor %}";
    let err = render_err(text, json!({"x": items(100), "big": big}), BUDGET);
    assert!(err.contains("exceeds 16777216 bytes"), "{err}");
}

#[test]
fn jinja_string_repetition_is_capped() {
    let err = render_err("{{ 'ab' * 50000000 }}", json!({}), BUDGET);
    assert!(err.contains("exceeds") || err.contains("template error"), "{err}");
}

#[test]
fn jinja_range_and_recursion_are_bounded() {
    let err = render_err("{% for i in range(1000000000) %}.{% endfor %}", json!({}), BUDGET);
    assert!(err.contains("template error"), "{err}");
}

#[test]
fn deeply_nested_template_syntax_is_an_error() {
    in_child("deeply_nested_template_syntax_is_an_error", Duration::from_secs(60), || {
        let n = 100_000;
        for text in [
            format!("{{{{ {}1{} }}}}", "(".repeat(n), ")".repeat(n)),
            format!("{{{{ {}1{} }}}}", "[".repeat(n), "]".repeat(n)),
            "{% if true %}".repeat(n),
            "{% for a in x %}".repeat(n),
            format!("{{{{ {}x }}}}", "- ".repeat(n)),
            format!("{{{{ x{} }}}}", "|trim".repeat(n)),
            format!("{{{{ x{} }}}}", ".a".repeat(n)),
            format!("{{{{ x{} }}}}", "[0]".repeat(n)),
            format!("{{{{ x{} }}}}", " ~ x".repeat(n)),
            format!("{{{{ x{} }}}}", " if x else x".repeat(n)),
            format!("{{{{ {}x }}}}", "x if ".repeat(n)),
            format!("{{{{ x{} }}}}", " is defined".repeat(n)),
            format!("{{{{ {}x }}}}", "not ".repeat(n)),
        ] {
            let err = render_err(&text, json!({"x": [1]}), BUDGET);
            assert!(err.contains("template error"), "{err}");
        }
        // Just under the limit, each chain compiles and renders on a 2 MiB stack.
        let k = 190;
        for text in [
            format!("{{{{ {}x }}}}", "not ".repeat(k)),
            format!("{{{{ {}y }}}}", "- ".repeat(k)),
            format!("{{{{ s{} }}}}", "|trim".repeat(k)),
            format!("{{{{ s{} }}}}", " ~ s".repeat(k)),
            format!("{{{{ {}1{} }}}}", "(".repeat(70), ")".repeat(70)),
            format!("{{{{ {}1{} }}}}", "(not not ".repeat(60), ")".repeat(60)),
        ] {
            let result = prompty::render(&agent(&text), &json!({"x": [1], "y": 2, "s": "a"}));
            assert!(result.is_ok(), "{:.40}: {result:?}", text);
        }
        // Mustache sections nest at most 256 deep.
        let text = format!("---\ntemplate: {{format: mustache}}\n---\n{}{}", "{{#x}}".repeat(n), "{{/x}}".repeat(n));
        let err = render_err(&text, json!({"x": [1]}), BUDGET);
        assert!(err.contains("deeper than 256"), "{err}");
        let text =
            format!("---\ntemplate: {{format: mustache}}\n---\n{}{}", "{{#x}}".repeat(256), "{{/x}}".repeat(256));
        assert_eq!(prompty::render(&agent(&text), &json!({"x": [1]})).unwrap(), "");
    });
}

#[test]
fn nested_mustache_sections_run_out_of_budget() {
    let text = "---\ntemplate: {format: mustache}\n---\n{{#x}}{{#x}}{{#x}}{{#x}}.{{/x}}{{/x}}{{/x}}{{/x}}";
    let err = render_err(text, json!({"x": items(1000)}), BUDGET);
    assert!(err.contains("render budget"), "{err}");
    let text = "---\ntemplate: {format: mustache}\n---\n{{#x}}{{#x}}{{#x}}{{/x}}{{/x}}{{/x}}";
    let err = render_err(text, json!({"x": items(1000)}), BUDGET);
    assert!(err.contains("render budget"), "{err}");
}

#[test]
fn mustache_output_is_capped() {
    let big = "y".repeat(1 << 20);
    let text = "---\ntemplate: {format: mustache}\n---\n{{#x}}{{big}}{{/x}}";
    let err = render_err(text, json!({"x": items(100), "big": big}), BUDGET);
    assert!(err.contains("exceeds 16777216 bytes"), "{err}");
}

#[test]
fn ordinary_templates_fit_the_budget() {
    let agent = agent("{% for m in x %}{{ m }},{% endfor %}");
    let out = prompty::render(&agent, &json!({"x": items(10_000)})).unwrap();
    assert_eq!(out.matches(',').count(), 10_000);
    let agent = agent_mustache("{{#x}}{{.}},{{/x}}");
    let out = prompty::render(&agent, &json!({"x": items(10_000)})).unwrap();
    assert_eq!(out.matches(',').count(), 10_000);
}

fn agent_mustache(body: &str) -> prompty::Agent {
    agent(&format!("---\ntemplate: {{format: mustache}}\n---\n{body}"))
}

/// The limits are a process-wide setting: run in a child so other tests keep the defaults.
#[test]
fn render_limits_can_be_changed() {
    in_child("render_limits_can_be_changed", Duration::from_secs(60), || {
        assert_eq!(prompty::jinja::render_limits(), RenderLimits::default());
        let agent = agent("{% for m in x %}{{ m }},{% endfor %}");
        let inputs = json!({"x": items(1000)});
        assert!(prompty::render(&agent, &inputs).is_ok());
        prompty::jinja::set_render_limits(RenderLimits { fuel: 100, ..RenderLimits::default() });
        // The compiled template is cached on the agent: a new budget still applies.
        let err = prompty::render(&agent, &inputs).unwrap_err().to_string();
        assert!(err.contains("render budget of 100 steps"), "{err}");
        prompty::jinja::set_render_limits(RenderLimits { max_output_bytes: 10, ..RenderLimits::default() });
        let err = prompty::render(&agent, &inputs).unwrap_err().to_string();
        assert!(err.contains("exceeds 10 bytes"), "{err}");
        let err = prompty::render(&agent_mustache("{{#x}}{{.}},{{/x}}"), &inputs).unwrap_err().to_string();
        assert!(err.contains("exceeds 10 bytes"), "{err}");
    });
}

// ----- class 4: deeply nested input values ----------------------------------------------------

const DEEP: usize = 100_000;

/// An array nested `depth` deep, built without recursion.
fn deep_array(depth: usize) -> Value {
    let mut v = json!("leaf");
    for _ in 0..depth {
        v = Value::Array(vec![v]);
    }
    v
}

/// An object nested `depth` deep, built without recursion.
fn deep_object(depth: usize) -> Value {
    let mut v = json!("leaf");
    for _ in 0..depth {
        let mut m = serde_json::Map::new();
        m.insert("a".into(), v);
        v = Value::Object(m);
    }
    v
}

/// Drops a value of any depth without recursion (the test's own drop must not overflow either).
fn drop_flat(value: Value) {
    let mut pending = vec![value];
    while let Some(v) = pending.pop() {
        match v {
            Value::Array(items) => pending.extend(items),
            Value::Object(map) => pending.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

fn deep_input_probe(make: fn(usize) -> Value) {
    for (template, fm) in [("{{ doc }}", ""), ("{{doc}}", "---\ntemplate: {format: mustache}\n---\n")] {
        let agent = agent(&format!("{fm}system:\nx\nuser:\n{template}"));
        let mut inputs = serde_json::Map::new();
        inputs.insert("doc".into(), make(DEEP));
        let inputs = Value::Object(inputs);
        let start = Instant::now();
        for err in [
            prompty::Error::from(prompty::validate_inputs(&agent, &inputs).unwrap_err()),
            prompty::render(&agent, &inputs).unwrap_err(),
            prompty::prepare(&agent, &inputs).unwrap_err(),
            tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap()
                .block_on(prompty::prepare_async(&agent, &inputs))
                .unwrap_err(),
        ] {
            let err = err.to_string();
            assert!(err.contains("input 'doc'") && err.contains("128"), "{err}");
        }
        assert!(start.elapsed() < Duration::from_secs(5), "{:?}", start.elapsed());
        drop_flat(inputs);
    }
    // A whole inputs value that is deep and not an object.
    let agent = agent("Hi");
    let inputs = deep_array(DEEP);
    let err = prompty::validate_inputs(&agent, &inputs).unwrap_err().to_string();
    assert!(err.contains("deeper than 128"), "{err}");
    drop_flat(inputs);
}

#[test]
fn deep_array_inputs_are_refused() {
    in_child("deep_array_inputs_are_refused", Duration::from_secs(60), || deep_input_probe(deep_array));
}

#[test]
fn deep_object_inputs_are_refused() {
    in_child("deep_object_inputs_are_refused", Duration::from_secs(60), || deep_input_probe(deep_object));
}

#[test]
fn inputs_at_the_depth_limit_render() {
    // 128 levels render everywhere (jinja, mustache, marks) on a test thread's stack.
    let agent = agent("system:\nx\nuser:\n{{ doc }}");
    let inputs = json!({"doc": deep_array(127)});
    let msgs = prompty::prepare(&agent, &inputs).unwrap();
    assert!(msgs[1].text().starts_with("[[[["));
    let inputs = json!({"doc": deep_array(129)});
    assert!(prompty::prepare(&agent, &inputs).unwrap_err().to_string().contains("input 'doc'"));
}
