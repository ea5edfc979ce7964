//! The HTML report of a run: one self-contained page.

use crate::eval::EvalReport;
use sha2::{Digest, Sha256};
use std::fmt::Write as _;

/// The page's style sheet (its hash is in the Content-Security-Policy).
const STYLE: &str = r#"
:root { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; color: #1f2937; background: #f9fafb; }
body { margin: 0; padding: 16px 24px; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 16px 0 6px; }
.desc { margin: 0 0 4px; color: #4b5563; }
.summary { margin: 4px 0 12px; color: #374151; }
.filters { display: flex; gap: 12px; align-items: center; margin-bottom: 10px; flex-wrap: wrap; }
.filters label { font-size: 13px; color: #374151; }
.filters input, .filters select { font: inherit; font-size: 13px; padding: 3px 6px; }
.shown { font-size: 13px; color: #6b7280; }
table.grid { border-collapse: collapse; background: #fff; font-size: 13px; }
.grid th, .grid td { border: 1px solid #d1d5db; padding: 6px 10px; text-align: left; vertical-align: top; }
.grid th { background: #f3f4f6; position: sticky; top: 0; }
.grid th .sub { display: block; font-weight: normal; color: #6b7280; }
.grid td.case { max-width: 360px; overflow-wrap: anywhere; }
.tag { display: inline-block; font-size: 11px; background: #e5e7eb; border-radius: 8px; padding: 0 6px; margin: 2px 0 0 6px; }
td.cell { cursor: pointer; min-width: 120px; white-space: nowrap; }
td.cell.pass { background: #dcfce7; }
td.cell.fail { background: #fecaca; }
td.cell.error { background: #fde68a; }
td.cell.selected { outline: 3px solid #2563eb; outline-offset: -3px; }
td.cell .st { font-weight: 600; margin-right: 6px; }
td.cell .delta { margin-left: 6px; color: #4b5563; }
td.cell .mark { margin-left: 4px; font-weight: 700; }
td.cell.regression .mark { color: #b91c1c; }
td.cell.improvement .mark { color: #15803d; }
#details { margin-top: 16px; background: #fff; border: 1px solid #d1d5db; padding: 8px 16px 16px; max-width: 1100px; }
#details[hidden] { display: none; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f3f4f6; padding: 8px; margin: 4px 0; font-size: 12px; max-height: 420px; overflow: auto; }
table.asserts { border-collapse: collapse; font-size: 13px; }
.asserts td, .asserts th { border: 1px solid #e5e7eb; padding: 4px 8px; text-align: left; vertical-align: top; }
.asserts tr.no td:first-child { color: #b91c1c; font-weight: 600; }
.asserts tr.yes td:first-child { color: #15803d; font-weight: 600; }
.msg { margin: 6px 0; }
.role { font-weight: 600; font-size: 12px; text-transform: uppercase; color: #4b5563; }
"#;

/// The page's script (its hash is in the Content-Security-Policy). It builds every element with
/// `textContent`, never from markup: no text of the report is ever parsed as HTML.
const SCRIPT: &str = r#"
(function () {
  "use strict";
  var R = JSON.parse(document.getElementById("report-data").textContent);
  var WORD = { pass: "PASS", fail: "FAIL", error: "ERROR" };
  var RANK = { pass: 0, fail: 1, error: 2 };
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function answer(v) {
    if (v === null || v === undefined) return "";
    return typeof v === "string" ? v : JSON.stringify(v, null, 2);
  }
  function fixed(x) { return typeof x === "number" ? x.toFixed(2) : ""; }
  function delta(c) {
    if (typeof c.baselineScore !== "number") return "";
    var d = c.score - c.baselineScore;
    return (d >= 0 ? "+" : "") + d.toFixed(2);
  }
  var MARK = { regression: "\u25BC regression", improvement: "\u25B2 improvement", "new": "new", same: "" };

  var head = document.getElementById("head");
  head.appendChild(el("h1", null, "Evaluation: " + R.file));
  if (R.description) head.appendChild(el("p", "desc", R.description));
  var s = R.summary;
  var line = (s.passed + s.failed + s.errors) + " cells: " + s.passed + " passed, " + s.failed + " failed, " + s.errors + " errors";
  if (R.baseline) line += " \u00B7 against " + R.baseline.file + ": " + s.regressions + " regressions, " + s.improvements + " improvements";
  line += " \u00B7 started " + R.startedAt + ", " + (R.durationMs / 1000).toFixed(1) + " s \u00B7 tokens " + s.usage.input + " in, " + s.usage.output + " out \u00B7 cache " + s.cacheHits + " hits, " + s.cacheMisses + " misses";
  head.appendChild(el("p", "summary", line));

  var tags = {};
  R.cases.forEach(function (c) { (c.tags || []).forEach(function (t) { tags[t] = true; }); });
  var tagSelect = document.getElementById("f-tag");
  Object.keys(tags).sort().forEach(function (t) { var o = el("option", null, t); o.value = t; tagSelect.appendChild(o); });

  var grid = document.getElementById("grid");
  var hr = el("tr");
  hr.appendChild(el("th", null, "case"));
  R.columns.forEach(function (col) {
    var th = el("th", null, col.id);
    var mean = s.meanScore ? s.meanScore[col.id] : undefined;
    if (typeof mean === "number") th.appendChild(el("span", "sub", "mean score " + mean.toFixed(2)));
    hr.appendChild(th);
  });
  grid.tHead.appendChild(hr);

  var body = grid.tBodies[0];
  var rows = [];
  var firstProblem = null;
  R.cases.forEach(function (row, i) {
    var tr = el("tr");
    var worst = "pass", changes = {};
    var search = [row.name, JSON.stringify(row.vars || {}), answer(row.expected)];
    var td = el("td", "case", row.name);
    (row.tags || []).forEach(function (t) { td.appendChild(el("span", "tag", t)); });
    tr.appendChild(td);
    R.columns.forEach(function (col) {
      var c = (row.cells || []).filter(function (x) { return x.column === col.id; })[0];
      if (!c) { tr.appendChild(el("td", null, "-")); return; }
      if (RANK[c.status] > RANK[worst]) worst = c.status;
      if (c.change) changes[c.change] = true;
      search.push(answer(c.output));
      var cell = el("td", "cell " + c.status + (c.change ? " " + c.change : ""));
      cell.dataset.status = c.status;
      cell.dataset.column = col.id;
      if (c.change) cell.dataset.change = c.change;
      cell.tabIndex = 0;
      cell.appendChild(el("span", "st", WORD[c.status] || c.status));
      cell.appendChild(el("span", "score", fixed(c.score)));
      var d = delta(c);
      if (d) cell.appendChild(el("span", "delta", d));
      if (c.change && MARK[c.change]) cell.appendChild(el("span", "mark", MARK[c.change]));
      cell.title = c.status === "pass" ? "passed" : (c.error || (c.assertions || []).filter(function (a) { return !a.pass; }).map(function (a) { return a.label + ": " + a.reason; }).join("\n"));
      var open = function () { show(row, c, col, cell); };
      cell.addEventListener("click", open);
      cell.addEventListener("keydown", function (e) { if (e.key === "Enter") open(); });
      if (!firstProblem && c.status !== "pass") firstProblem = open;
      tr.appendChild(cell);
    });
    tr.dataset.case = row.name;
    tr.dataset.status = worst;
    tr.dataset.tags = (row.tags || []).join(" ");
    tr.dataset.changes = Object.keys(changes).join(" ");
    tr.dataset.search = search.join("\n").toLowerCase();
    body.appendChild(tr);
    rows.push(tr);
  });

  var fStatus = document.getElementById("f-status"), fTag = tagSelect, fText = document.getElementById("f-text");
  var shown = document.getElementById("shown");
  function apply() {
    var st = fStatus.value, tag = fTag.value, q = fText.value.toLowerCase(), n = 0;
    rows.forEach(function (tr) {
      var ok = true;
      if (st === "problem") ok = tr.dataset.status !== "pass";
      else if (st === "regression" || st === "improvement") ok = (" " + tr.dataset.changes + " ").indexOf(" " + st + " ") >= 0;
      else if (st) ok = tr.dataset.status === st;
      if (ok && tag) ok = (" " + tr.dataset.tags + " ").indexOf(" " + tag + " ") >= 0;
      if (ok && q) ok = tr.dataset.search.indexOf(q) >= 0;
      tr.hidden = !ok;
      if (ok) n++;
    });
    shown.textContent = n + " of " + rows.length + " cases shown";
  }
  fStatus.addEventListener("change", apply);
  fTag.addEventListener("change", apply);
  fText.addEventListener("input", apply);
  apply();

  var details = document.getElementById("details");
  function show(row, c, col, cell) {
    Array.prototype.forEach.call(document.querySelectorAll("td.selected"), function (x) { x.classList.remove("selected"); });
    cell.classList.add("selected");
    while (details.firstChild) details.removeChild(details.firstChild);
    details.hidden = false;
    details.appendChild(el("h2", null, row.name + " \u00D7 " + col.id));
    var facts = WORD[c.status] + " \u00B7 score " + fixed(c.score);
    if (typeof c.threshold === "number") facts += " (threshold " + fixed(c.threshold) + ")";
    if (typeof c.baselineScore === "number") facts += " \u00B7 baseline " + fixed(c.baselineScore) + " (" + delta(c) + ")";
    if (c.change) facts += " \u00B7 " + c.change;
    facts += " \u00B7 " + c.latencyMs + " ms \u00B7 " + c.modelCalls + " model calls" + (c.cached ? " (cached)" : "") + " \u00B7 tokens " + c.usage.input + " in, " + c.usage.output + " out";
    if (row.at) facts += " \u00B7 " + row.at;
    details.appendChild(el("p", null, facts));
    if (c.error) { details.appendChild(el("h2", null, "Error")); details.appendChild(el("pre", "error", c.error)); }
    if ((c.assertions || []).length) {
      details.appendChild(el("h2", null, "Assertions"));
      var t = el("table", "asserts");
      var h = el("tr");
      ["", "assertion", "kind", "score", "weight", "reason"].forEach(function (x) { h.appendChild(el("th", null, x)); });
      t.appendChild(h);
      c.assertions.forEach(function (a) {
        var tr = el("tr", a.pass ? "yes" : "no");
        [a.pass ? "\u2713" : "\u2717", a.label, a.kind, fixed(a.score), a.weight, a.reason].forEach(function (x) { tr.appendChild(el("td", null, x)); });
        t.appendChild(tr);
      });
      details.appendChild(t);
    }
    details.appendChild(el("h2", null, "Answer"));
    details.appendChild(el("pre", "answer", answer(c.output)));
    if (row.expected !== undefined) { details.appendChild(el("h2", null, "Expected")); details.appendChild(el("pre", null, answer(row.expected))); }
    details.appendChild(el("h2", null, "Inputs"));
    details.appendChild(el("pre", null, JSON.stringify(row.vars || {}, null, 2)));
    if ((c.messages || []).length) {
      details.appendChild(el("h2", null, "Messages"));
      c.messages.forEach(function (m) {
        var d = el("div", "msg");
        d.appendChild(el("div", "role", m.role));
        var text = (m.content || []).map(function (p) { return p.kind === "text" ? p.value : "[" + p.kind + (p.source ? ": " + p.source : "") + "]"; }).join("\n");
        var calls = (m.metadata && m.metadata.tool_calls) || [];
        calls.forEach(function (tc) { var f = tc.function || tc; text += (text ? "\n" : "") + "\u2192 " + f.name + "(" + (typeof f.arguments === "string" ? f.arguments : JSON.stringify(f.arguments)) + ")"; });
        d.appendChild(el("pre", null, text));
        details.appendChild(d);
      });
    }
  }
  if (firstProblem) firstProblem();
})();
"#;

/// The report as one self-contained HTML page: a grid of cases × columns (prompt × model), each
/// cell coloured by its status with its score and its move against the baseline (`▼ regression`,
/// `▲ improvement`); a click on a cell (or Enter) shows its assertions with their reasons, the
/// answer, the inputs and the conversation; filters by status, tag and text. The first cell that
/// did not pass is shown at load.
///
/// The page needs nothing else: its style and script are inline and its
/// `Content-Security-Policy` (`default-src 'none'`, the style and script allowed by their SHA-256
/// only) forbids every request, so opening it reaches no network, and no inline script or event
/// handler but its own can run. The report is embedded as JSON in a
/// `<script type="application/json">` with `<`, `>`, `&` and the line separators escaped as
/// `\uXXXX`, so no text of the report (model answers are hostile) can close the script or become
/// markup; the script builds every element from text. The page holds the whole report: its size is
/// the JSON report's plus about 20 KB.
///
/// ```
/// use prompty::eval::{render, CaseRow, Cell, Column, EvalReport};
/// let mut report = EvalReport::default();
/// report.columns.push(Column { id: "chat".into(), prompt: "chat".into(), model: None });
/// let mut row = CaseRow::default();
/// row.name = "hostile".into();
/// let mut cell = Cell::default();
/// cell.column = "chat".into();
/// cell.output = "</script><img src=x onerror=alert(1)>".into();
/// row.cells.push(cell);
/// report.cases.push(row);
/// let page = render::html(&report);
/// assert!(page.contains("default-src 'none'"));
/// assert!(!page.contains("<img"));
/// assert_eq!(page.matches("</script>").count(), 2); // the data's and the script's own
/// ```
pub fn html(report: &EvalReport) -> String {
    let data = embedded_json(report);
    let csp = format!(
        "default-src 'none'; style-src 'sha256-{}'; script-src 'sha256-{}'; base-uri 'none'; form-action 'none'",
        hash(STYLE),
        hash(SCRIPT)
    );
    let mut page = String::with_capacity(data.len() + STYLE.len() + SCRIPT.len() + 2048);
    let _ = write!(
        page,
        r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Evaluation: {title}</title>
<style>{STYLE}</style>
</head>
<body>
<header id="head"></header>
<div class="filters">
<label>Status <select id="f-status"><option value="">all</option><option value="pass">pass</option><option value="fail">fail</option><option value="error">error</option><option value="problem">not passing</option><option value="regression">regressions</option><option value="improvement">improvements</option></select></label>
<label>Tag <select id="f-tag"><option value="">all</option></select></label>
<label>Search <input id="f-text" type="search" placeholder="case, input or answer"></label>
<span id="shown" class="shown"></span>
</div>
<table id="grid" class="grid"><thead></thead><tbody></tbody></table>
<section id="details" hidden></section>
<noscript><p>The grid is drawn by the page's script; the report's data is in the script element below.</p></noscript>
<script type="application/json" id="report-data">{data}</script>
<script>{SCRIPT}</script>
</body>
</html>
"#,
        title = text_escape(&report.file),
    );
    page
}

/// The report as JSON that is safe inside a `<script>` element: `<`, `>` and `&` (and U+2028,
/// U+2029, which old parsers take as line ends) are written as `\uXXXX` escapes, which JSON reads
/// back as the same characters. Outside strings JSON has none of these characters.
fn embedded_json(report: &EvalReport) -> String {
    let json = serde_json::to_string(report).unwrap_or_else(|_| "{}".to_owned());
    let mut out = String::with_capacity(json.len() + json.len() / 16);
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// Text for element content or a double-quoted attribute.
fn text_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// The base64 SHA-256 of an inline element's text, as a CSP source expression wants it.
fn hash(text: &str) -> String {
    prompty_core::text::base64(&Sha256::digest(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::{CaseRow, Cell};

    #[test]
    fn the_embedded_json_reads_back_as_the_report() {
        let mut report = EvalReport { file: "a<b>&c\u{7}\u{2028}.eval.yaml".into(), ..Default::default() };
        let output = "</script><!-- <script> \u{2029} & </SCRIPT >";
        report.cases.push(CaseRow {
            name: "x".into(),
            cells: vec![Cell { output: output.into(), ..Default::default() }],
            ..Default::default()
        });
        let data = embedded_json(&report);
        assert!(!data.contains('<') && !data.contains('>') && !data.contains('&'));
        assert!(!data.contains('\u{2028}') && !data.contains('\u{2029}'));
        let back: EvalReport = serde_json::from_str(&data).unwrap();
        assert_eq!(back, report);
        let page = html(&report);
        assert!(page.contains("<title>Evaluation: a&lt;b&gt;&amp;c \u{2028}.eval.yaml</title>"));
        assert_eq!(page.to_lowercase().matches("</script").count(), 2);
    }

    #[test]
    fn the_policy_allows_exactly_the_inline_style_and_script() {
        let page = html(&EvalReport::default());
        assert!(!page.contains("http://") && !page.contains("https://"), "the page names no URL");
        let csp = page.split("Content-Security-Policy\" content=\"").nth(1).unwrap().split('"').next().unwrap();
        assert!(csp.starts_with("default-src 'none';"));
        assert!(!csp.contains("unsafe"));
        // The hashes are those of the elements' text as the page holds it.
        let style = page.split("<style>").nth(1).unwrap().split("</style>").next().unwrap();
        let script = page.split("<script>").nth(1).unwrap().split("</script>").next().unwrap();
        assert!(csp.contains(&format!("style-src 'sha256-{}'", hash(style))));
        assert!(csp.contains(&format!("script-src 'sha256-{}'", hash(script))));
        assert_eq!(hash(""), "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=");
    }
}
