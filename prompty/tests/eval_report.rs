//! The eval reports read by real consumers: the HTML page opened in Debian's chromium (headless:
//! the DOM after its script ran, a screenshot, no network), the JUnit XML parsed by Python's
//! `xml.etree`.

use prompty::eval::{compare, render, AssertionResult, CaseRow, Cell, Column, EvalReport, Status};
use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";
/// Rows of the grid.
const ROWS: usize = 23;
/// The failing cell: its case and column.
const FAILING: (usize, usize) = (7, 1);
/// The background of a failing cell (`td.cell.fail` in the page's style).
const FAIL_RGB: [u8; 3] = [0xfe, 0xca, 0xca];
/// The background of a passing cell.
const PASS_RGB: [u8; 3] = [0xdc, 0xfc, 0xe7];

fn temp_dir(name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "prompty-eval-report-{}-{}-{name}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A listener on 127.0.0.1 counting the connections made to it: the page must make none.
struct Trap {
    port: u16,
    hits: Arc<AtomicUsize>,
}

fn trap() -> Trap {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            counted.fetch_add(1, Ordering::SeqCst);
            if let Ok(mut s) = stream {
                let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
                let mut buf = [0u8; 1024];
                let _ = s.read(&mut buf);
            }
        }
    });
    Trap { port, hits }
}

/// The report: `ROWS` cases × two columns, every cell passing but `FAILING`, whose answer is
/// hostile markup aimed at the trap; compared with a baseline where it passed.
fn report(port: u16) -> EvalReport {
    let columns = vec![
        Column { id: "chat/mini".into(), prompt: "chat".into(), model: Some("mini".into()) },
        Column { id: "chat/large".into(), prompt: "chat".into(), model: Some("large".into()) },
    ];
    let hostile = format!(
        "</script><img src=x onerror=\"fetch('http://127.0.0.1:{port}/onerror')\"><script src=\"http://127.0.0.1:{port}/s.js\"></script>"
    );
    let cases = (0..ROWS)
        .map(|i| {
            let cells = columns
                .iter()
                .enumerate()
                .map(|(j, c)| {
                    let failing = (i, j) == FAILING;
                    let mut cell = Cell::default();
                    cell.column = c.id.clone();
                    cell.status = if failing { Status::Fail } else { Status::Pass };
                    cell.score = if failing { 0.25 } else { 1.0 };
                    cell.output = if failing { hostile.clone().into() } else { format!("answer {i}").into() };
                    cell.latency_ms = 120 + i as u64;
                    let mut assertion = AssertionResult::default();
                    assertion.kind = "contains".into();
                    assertion.label = "contains \"Paris\"".into();
                    assertion.pass = !failing;
                    assertion.score = if failing { 0.0 } else { 1.0 };
                    assertion.weight = 1.0;
                    assertion.reason =
                        if failing { format!("no \"Paris\" in {hostile}") } else { "found \"Paris\"".into() };
                    cell.assertions = vec![assertion];
                    cell
                })
                .collect();
            let mut row = CaseRow::default();
            row.name = format!("case {i:02} <b>{}</b>", if i == 0 { "</script>" } else { "" });
            row.at = format!("chat.eval.yaml:{}", 10 + i);
            row.tags = vec![if i % 2 == 0 { "even".into() } else { "odd".into() }];
            row.cells = cells;
            row
        })
        .collect();
    let mut report = EvalReport::default();
    report.version = 1;
    report.file = "chat.eval.yaml".into();
    report.started_at = "2026-11-26T20:00:00Z".into();
    report.duration_ms = 4200;
    report.columns = columns;
    report.cases = cases;
    report.summary.passed = ROWS * 2 - 1;
    report.summary.failed = 1;
    let mut baseline = report.clone();
    for row in &mut baseline.cases {
        for cell in &mut row.cells {
            cell.status = Status::Pass;
            cell.score = 1.0;
        }
    }
    compare(&mut report, &baseline, "runs/base.json");
    report
}

/// Runs chromium headless on `page` with `args`, no network service and every host name
/// unresolvable; its stdout. Fails saying what to install when chromium is missing.
fn chromium(page: &Path, args: &[String]) -> String {
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: the HTML report's browser test needs Debian's chromium (apt-get install chromium)"
    );
    let profile = temp_dir("profile");
    let mut command = Command::new(CHROMIUM);
    command.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        // Every host name unresolvable but the trap's address, so a request the page made would
        // reach the trap and nothing else.
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        "--virtual-time-budget=2000",
    ]);
    command.arg(format!("--user-data-dir={}", profile.display()));
    command.args(args);
    command.arg(format!("file://{}", page.display()));
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        let _ = stdout.read_to_string(&mut out);
        out
    });
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "chromium failed: {status}");
            break;
        }
        if start.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            panic!("chromium did not finish within 90 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = std::fs::remove_dir_all(&profile);
    reader.join().unwrap()
}

#[test]
fn the_html_report_renders_in_chromium_marks_the_failing_cell_and_reaches_no_network() {
    let trap = trap();
    let report = report(trap.port);
    let page = render::html(&report);
    assert!(page.contains(r#"<meta http-equiv="Content-Security-Policy" content="default-src 'none'; "#));
    // The page itself names no URL; only the hostile answer (escaped, inside the JSON) does.
    let outside_data = page.split("id=\"report-data\">").next().unwrap().to_owned()
        + page.split("id=\"report-data\">").nth(1).unwrap().split("</script>").nth(1).unwrap();
    assert!(!outside_data.contains("http://") && !outside_data.contains("https://"));
    let dir = temp_dir("page");
    let file = dir.join("report.html");
    std::fs::write(&file, &page).unwrap();

    // The DOM after the script ran: one row per case, the failing cell marked as failing and as a
    // regression, its details open with the hostile answer as text, not markup.
    let dom = chromium(&file, &["--dump-dom".into()]);
    assert!(dom.contains("<table id=\"grid\""), "{dom}");
    let rows = dom.matches("<tr data-case=").count();
    assert_eq!(rows, ROWS, "{dom}");
    assert_eq!(dom.matches(r#"data-status="fail""#).count(), 2, "the failing cell and its row:\n{dom}");
    assert_eq!(dom.matches(r#"<tr data-case="case 07 &lt;b&gt;&lt;/b&gt;" data-status="fail""#).count(), 1, "{dom}");
    assert_eq!(dom.matches(r#"<td class="cell fail regression selected" data-status="fail" data-column="chat/large" data-change="regression""#).count(), 1, "{dom}");
    assert_eq!(dom.matches(r#"<td class="cell pass same" data-status="pass""#).count(), ROWS * 2 - 1);
    assert!(dom.contains("<pre class=\"answer\">&lt;/script&gt;&lt;img src=x onerror="), "{dom}");
    assert!(dom.contains("23 of 23 cases shown"));
    assert!(!dom.contains("<img"), "the answer became markup:\n{dom}");
    assert_eq!(dom.matches("<script").count(), 2, "{dom}");

    // The screenshot: a PNG showing the failing cell's colour (and the passing cells').
    let png = dir.join("report.png");
    chromium(&file, &[format!("--screenshot={}", png.display()), "--window-size=1280,900".into()]);
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert!(bytes.len() > 10_000, "a screenshot of {} bytes", bytes.len());
    let (fail, pass) = count_colours(&bytes, FAIL_RGB, PASS_RGB);
    // A cell is about 130 × 30 pixels: the failing one shows, and many passing ones.
    assert!(fail > 1500, "{fail} pixels of the failing cell's colour");
    assert!(pass > 20 * fail, "{pass} pixels of the passing cells' colour, {fail} failing");

    assert_eq!(trap.hits.load(Ordering::SeqCst), 0, "the page made a request");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The trap sees a request when a page makes one, and the report's policy blocks even markup
/// injected into the page itself: the test above would notice a request.
#[test]
fn the_pages_policy_blocks_requests_that_an_unprotected_page_makes() {
    let trap = trap();
    let dir = temp_dir("policy");
    let probe = format!(r#"<img src="http://127.0.0.1:{}/probe">"#, trap.port);

    let bare = dir.join("bare.html");
    std::fs::write(&bare, format!("<!DOCTYPE html><html><body>{probe}</body></html>")).unwrap();
    chromium(&bare, &["--dump-dom".into()]);
    let deadline = Instant::now() + Duration::from_secs(5);
    while trap.hits.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(trap.hits.load(Ordering::SeqCst) > 0, "a page without the policy reached the trap");
    let before = trap.hits.load(Ordering::SeqCst);

    let page = render::html(&report(trap.port)).replacen("<body>", &format!("<body>{probe}"), 1);
    let guarded = dir.join("guarded.html");
    std::fs::write(&guarded, page).unwrap();
    let dom = chromium(&guarded, &["--dump-dom".into()]);
    assert_eq!(dom.matches("<tr data-case=").count(), ROWS, "the script still ran");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(trap.hits.load(Ordering::SeqCst), before, "the policy let the injected image load");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Pixels of two colours in a PNG.
fn count_colours(png_bytes: &[u8], a: [u8; 3], b: [u8; 3]) -> (usize, usize) {
    let mut decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    assert!(channels >= 3, "{:?}", info.color_type);
    assert_eq!((info.width, info.height), (1280, 900));
    let (mut na, mut nb) = (0, 0);
    for px in buf[..info.buffer_size()].chunks(channels) {
        na += usize::from(px[..3] == a);
        nb += usize::from(px[..3] == b);
    }
    (na, nb)
}

#[test]
fn the_junit_report_is_read_by_pythons_xml_parser() {
    let mut report = report(9);
    // An erroring cell, and text XML cannot hold.
    report.cases[3].cells[0].status = Status::Error;
    report.cases[3].cells[0].error = Some("HTTP 500 \u{0}\u{1b}[31m <oops> & \"quoted\"\nsecond line".into());
    report.cases[5].name = "ctrl \u{7}\u{1b} ]]> chars".into();
    let xml = render::junit(&report);
    let dir = temp_dir("junit");
    let file = dir.join("junit.xml");
    std::fs::write(&file, &xml).unwrap();
    let script = r#"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "testsuites", root.tag
print(root.get("tests"), root.get("failures"), root.get("errors"))
for suite in root.findall("testsuite"):
    cases = suite.findall("testcase")
    print(suite.get("name"), suite.get("tests"), len(cases), suite.get("failures"), suite.get("errors"))
    for case in cases:
        for kind in ("failure", "error"):
            for e in case.findall(kind):
                props = {p.get("name"): p.get("value") for p in case.find("properties")}
                print(kind, repr(case.get("name")), case.get("time"), repr(e.get("message")), props["score"], props.get("change"))
print(repr(root.findall("testsuite")[0].findall("testcase")[5].get("name")))
"#;
    let out = Command::new("python3").arg("-c").arg(script).arg(&file).output().unwrap_or_else(|e| {
        panic!("python3 cannot run ({e}): the JUnit test parses the report with Python's xml.etree (apt-get install python3)")
    });
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}\n{}\n{xml}", stdout, String::from_utf8_lossy(&out.stderr));
    let expected = [
        "46 1 1",
        "chat/mini 23 23 0 1",
        "error 'case 03 <b></b>' 0.123 'HTTP 500 [31m <oops> & \"quoted\"\\nsecond line' 1.0000 same",
        "chat/large 23 23 1 0",
        "failure 'case 07 <b></b>' 0.127 'contains \"Paris\": no \"Paris\" in </script><img src=x onerror=\"fetch(\\'http://127.0.0.1:9/onerror\\')\"><script src=\"http://127.0.0.1:9/s.js\"></script>' 0.2500 regression",
        "'ctrl  ]]> chars'",
    ];
    let got: Vec<&str> = stdout.lines().collect();
    assert_eq!(got, expected, "{xml}");
    let _ = std::fs::remove_dir_all(&dir);
}
