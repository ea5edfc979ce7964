//! Compile-time behaviour of prompty's macros: every `ui/*.rs` must fail to compile with exactly
//! the diagnostics pinned in its `.stderr` (regenerate with `TRYBUILD=overwrite`, then read them),
//! and every `ui/pass/*.rs` must compile and run.

use std::path::Path;

/// How many `.rs` files a folder holds: a glob that matches nothing would pass silently.
fn count_cases(dir: &str) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "rs"))
        .count()
}

#[test]
fn ui() {
    let failing = count_cases("ui");
    let passing = count_cases("ui/pass");
    assert!(failing >= 44, "expected at least 44 compile-fail cases in tests/ui, found {failing}");
    assert!(passing >= 9, "expected at least 9 passing cases in tests/ui/pass, found {passing}");
    let t = trybuild::TestCases::new();
    t.compile_fail("ui/*.rs");
    t.pass("ui/pass/*.rs");
}
