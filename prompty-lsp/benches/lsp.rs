//! Latency benchmark of the language server, in process: a realistic 20 KB prompt (frontmatter
//! with a model and its options, inputs with object properties and defaults, tools; a long Jinja
//! template with loops, conditions, filters and role markers) driven through
//! [`prompty_lsp::Server::handle`] and [`prompty_lsp::Server::flush`], as the stdio loop drives it.
//!
//! Run with `cargo bench -p prompty-lsp --bench lsp` (`--quick` for fewer rounds).
//!
//! Figures (medians of many rounds, and the 90th percentile):
//! - diagnostics after a one-character `didChange` (the edit applied, the document analyzed, its
//!   diagnostics converted): the target is under 10 ms;
//! - completion inside `{{ }}` (the whole request: parameters read, the document found, the
//!   items made and serialized): the target is under 5 ms;
//! - completion of a model option's key in the frontmatter (the same target);
//! - hover on an input in the template;
//! - the reference, in the same run: `prompty_core::analysis::check_str` on the same text (the
//!   analysis the compiler runs), and `prompty_lsp::analysis::analyze` (that plus the outline).
//!
//! Protocol I/O (JSON framing on stdio) is not included: it is the same for every request and
//! small next to these figures.

use lsp_server::{Message, Notification, Request, RequestId};
use prompty_lsp::Server;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

const URI: &str = "file:///tmp/prompty-lsp-bench/support.prompty";

/// The prompt: about 20 KB, checked without an error.
fn prompt() -> String {
    let mut text = String::from(
        "---
name: support-agent
description: Answers a customer's support question from the order history and the knowledge base.
authors: [support-team]
model:
  id: gpt-4o
  provider: openai
  apiType: chat
  connection:
    kind: key
    endpoint: ${env:OPENAI_BASE_URL}
    apiKey: ${env:OPENAI_API_KEY}
  options:
    temperature: 0.2
    maxOutputTokens: 1200
    topP: 0.9
    frequencyPenalty: 0.1
    presencePenalty: 0.0
    seed: 42
    stopSequences: [\"###\"]
inputs:
  question:
    kind: string
    description: What the customer asks, as they wrote it.
    required: true
  customer:
    kind: object
    description: The customer who asks.
    properties:
      name: {kind: string, description: Their name as they signed up.}
      email: {kind: string}
      tier: {kind: string, enumValues: [free, pro, enterprise], default: free}
      since: {kind: string, description: The date of their first order.}
      language: {kind: string, default: en}
  orders:
    kind: array
    description: The customer's recent orders, newest first.
    items:
      kind: object
      properties:
        id: {kind: string}
        date: {kind: string}
        total: {kind: float}
        status: {kind: string, enumValues: [placed, shipped, delivered, returned]}
        lines:
          kind: array
          items:
            kind: object
            properties:
              sku: {kind: string}
              title: {kind: string}
              quantity: {kind: integer}
  articles:
    kind: array
    description: Knowledge base articles found for the question.
    items:
      kind: object
      properties:
        title: {kind: string}
        url: {kind: string}
        body: {kind: string}
        score: {kind: float}
  history:
    kind: array
    description: The conversation so far.
    default: []
  tone:
    kind: string
    default: friendly
    enumValues: [friendly, formal, brief]
  max_articles:
    kind: integer
    default: 3
  escalate:
    kind: boolean
    default: false
outputs:
  answer: {kind: string, description: The reply to send.}
  confidence: {kind: float}
  follow_up: {kind: boolean}
tools:
  - name: lookup_order
    kind: function
    description: Looks an order up by its id.
    parameters:
      order_id: {kind: string, description: The order's id., required: true}
  - name: refund
    kind: function
    description: Refunds an order, in part or in full.
    parameters:
      order_id: {kind: string, required: true}
      amount: {kind: float, description: The amount to refund; the whole order when absent.}
      reason: {kind: string, enumValues: [damaged, late, wrong_item, other]}
  - name: open_ticket
    kind: function
    description: Hands the conversation to a human agent.
    parameters:
      summary: {kind: string, required: true}
      priority: {kind: string, enumValues: [low, normal, high], default: normal}
---
system:
You are the support assistant of an online shop. You answer in {{ customer.language | default('en') | upper }}
with a {{ tone }} tone. The customer is {{ customer.name | title }} ({{ customer.email | lower }}), a
{{ customer.tier }} customer since {{ customer.since }}.
{% if escalate %}
The conversation was escalated: be brief and offer to open a ticket with `open_ticket`.
{% endif %}

# Orders
{% for order in orders %}
## Order {{ order.id }} of {{ order.date }}: {{ order.status | upper }}, total {{ order.total | round(2) }}
{% for line in order.lines %}
- {{ line.quantity }} × {{ line.title | trim }} ({{ line.sku }})
{% endfor %}
{% else %}
The customer has no orders yet.
{% endfor %}

# Knowledge base
{% for article in articles[:max_articles] %}
### {{ loop.index }}. {{ article.title }} (score {{ article.score | round(2) }})
{{ article.body | trim }}
Source: {{ article.url }}
{% endfor %}
",
    );
    // Guidance sections, as long prompts have them: different words each time.
    let mut i = 0;
    while text.len() < 19_800 {
        i += 1;
        text.push_str(&format!(
            "\n## Rule {i}\n\
             When the question is about case {i}, check the orders above first{{% if orders | length > {i} %}} \
             (the customer has more than {i} orders: mention the {{{{ orders[{i}].status | lower }}}} one if it \
             matters){{% endif %}}. Quote at most {{{{ max_articles }}}} articles, never invent an order id, and \
             keep the {{{{ tone }}}} tone. If nothing applies, say so and offer `open_ticket` to {{{{ customer.name }}}}.\n"
        ));
    }
    text.push_str(
        "
{% for message in history %}
{{ message.role }}:
{{ message.content }}
{% endfor %}

user:
{{ question }}
",
    );
    text
}

fn notification(method: &str, params: Value) -> Message {
    Message::Notification(Notification::new(method.to_owned(), params))
}

fn request(id: i32, method: &str, params: Value) -> Message {
    Message::Request(Request::new(RequestId::from(id), method.to_owned(), params))
}

/// The 0-based line and UTF-16 character of the end of the first occurrence of `needle`.
fn position_after(text: &str, needle: &str) -> (u32, u32) {
    let at = text.find(needle).unwrap_or_else(|| panic!("`{needle}` is in the prompt")) + needle.len();
    let line = text[..at].matches('\n').count() as u32;
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    (line, text[start..at].encode_utf16().count() as u32)
}

struct Figures(Vec<Duration>);

impl Figures {
    fn quantile(&self, q: f64) -> f64 {
        let mut v: Vec<f64> = self.0.iter().map(|d| d.as_secs_f64() * 1e3).collect();
        v.sort_by(|a, b| a.total_cmp(b));
        v[((v.len() - 1) as f64 * q).round() as usize]
    }

    fn line(&self, what: &str, target: Option<f64>) -> String {
        let (median, p90) = (self.quantile(0.5), self.quantile(0.9));
        let verdict = match target {
            Some(t) if median < t => format!("  (target < {t} ms: met)"),
            Some(t) => format!("  (target < {t} ms: MISSED)"),
            None => String::new(),
        };
        format!("{what:<58} median {median:>7.3} ms   p90 {p90:>7.3} ms{verdict}")
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let rounds = if quick { 30 } else { 300 };
    let text = prompt();

    // The analysis the compiler runs on the same text: the reference, and a check that the prompt
    // is a realistic one (it loads, and nothing is wrong with it).
    let dir = Path::new("/tmp/prompty-lsp-bench");
    let options = prompty_core::LoadOptions::new().keep_env_references();
    let report = prompty_core::analysis::check_str(&text, dir, "support.prompty", &options);
    let problems: Vec<String> = report.diagnostics.iter().map(|d| d.to_string()).collect();
    assert!(report.agent.is_some() && problems.is_empty(), "the benchmark's prompt has problems: {problems:#?}");

    let mut server = Server::new();
    server.initialize(serde_json::from_value(json!({"capabilities": {}})).expect("initialize params"));
    server.handle(notification(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": URI, "languageId": "prompty", "version": 1, "text": text}}),
    ));
    let opened = server.flush();
    assert_eq!(opened.len(), 1, "the diagnostics of the opened document");

    // One character typed in the template's text, then deleted: the text stays the same size.
    let (line, character) = position_after(&text, "You are the support assistant");
    let mut version = 1;
    let mut edit = |server: &mut Server| -> Duration {
        version += 1;
        let (range, new_text) = if version % 2 == 0 {
            (
                json!({"start": {"line": line, "character": character}, "end": {"line": line, "character": character}}),
                "s",
            )
        } else {
            (
                json!({"start": {"line": line, "character": character}, "end": {"line": line, "character": character + 1}}),
                "",
            )
        };
        let change = notification(
            "textDocument/didChange",
            json!({"textDocument": {"uri": URI, "version": version},
                   "contentChanges": [{"range": range, "text": new_text}]}),
        );
        let t = Instant::now();
        let out = server.handle(change);
        let published = server.flush();
        let elapsed = t.elapsed();
        assert!(out.is_empty() && published.len() == 1, "one publishDiagnostics per edit");
        std::hint::black_box(published);
        elapsed
    };

    let (cl, cc) = position_after(&text, "{{ customer.");
    let (kl, kc) = position_after(&text, "    maxOutput");
    let (hl, hc) = position_after(&text, "with a {{ to");
    let mut id = 0;
    let mut ask = |server: &mut Server, method: &str, line: u32, character: u32| -> (Duration, Value) {
        id += 1;
        let message = request(
            id,
            method,
            json!({"textDocument": {"uri": URI}, "position": {"line": line, "character": character}}),
        );
        let t = Instant::now();
        let out = server.handle(message);
        let elapsed = t.elapsed();
        let Some(Message::Response(response)) = out.last() else { panic!("{method}: no response") };
        let result = match &response.response_result {
            Ok(result) => result.clone(),
            Err(e) => panic!("{method}: {}", e.message),
        };
        (elapsed, result)
    };

    // Warm-up, then the rounds interleaved.
    for _ in 0..10 {
        edit(&mut server);
        ask(&mut server, "textDocument/completion", cl, cc);
        ask(&mut server, "textDocument/completion", kl, kc);
        ask(&mut server, "textDocument/hover", hl, hc);
    }
    let (mut edits, mut completions, mut key_completions, mut hovers, mut checks, mut analyses) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut items, mut key_items, mut hover_text) = (0, 0, String::new());
    let count =
        |completion: &Value| completion.as_array().or_else(|| completion["items"].as_array()).map_or(0, Vec::len);
    let path = Path::new("/tmp/prompty-lsp-bench/support.prompty");
    for _ in 0..rounds {
        edits.push(edit(&mut server));
        let (t, completion) = ask(&mut server, "textDocument/completion", cl, cc);
        completions.push(t);
        items = count(&completion);
        let (t, completion) = ask(&mut server, "textDocument/completion", kl, kc);
        key_completions.push(t);
        key_items = count(&completion);
        let (t, hover) = ask(&mut server, "textDocument/hover", hl, hc);
        hovers.push(t);
        hover_text =
            hover["contents"]["value"].as_str().or_else(|| hover["contents"].as_str()).unwrap_or("").to_owned();
        let t = Instant::now();
        std::hint::black_box(prompty_core::analysis::check_str(&text, dir, "support.prompty", &options));
        checks.push(t.elapsed());
        let t = Instant::now();
        std::hint::black_box(prompty_lsp::analysis::analyze(&text, Some(path), &[]));
        analyses.push(t.elapsed());
    }

    let lines = text.lines().count();
    println!("language server benchmark: a {} byte prompt ({lines} lines), {rounds} rounds", text.len());
    println!("{}", Figures(edits).line("diagnostics after a one-character didChange", Some(10.0)));
    println!(
        "{}",
        Figures(completions).line(&format!("completion in `{{{{ customer. }}}}` ({items} items)"), Some(5.0))
    );
    println!(
        "{}",
        Figures(key_completions).line(&format!("completion of a model option key ({key_items} items)"), Some(5.0))
    );
    let shown = if hover_text.is_empty() { "nothing shown".to_owned() } else { format!("{} chars", hover_text.len()) };
    println!("{}", Figures(hovers).line(&format!("hover on `tone` in the template ({shown})"), None));
    println!("{}", Figures(checks).line("reference: prompty_core::analysis::check_str", None));
    println!("{}", Figures(analyses).line("reference: prompty_lsp::analysis::analyze (+ outline)", None));
}
