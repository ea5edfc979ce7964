//! Running an adversarial probe in a child process: the test binary re-executed with a filter, so
//! that a probe which could overflow the stack or hang is observed from outside. Included with
//! `#[path]` by `prompty-core/tests/adversarial_load.rs` and `prompty/tests/adversarial_inputs.rs`.

use std::process::Command;
use std::time::{Duration, Instant};

/// Set in the child process that runs one probe.
const CHILD: &str = "PROMPTY_ADVERSARIAL_CHILD";

/// Runs `probe` in a child process (this binary, filtered to `test`), and fails unless the child
/// exits normally within `limit`.
pub fn in_child(test: &str, limit: Duration, probe: fn()) {
    if std::env::var_os(CHILD).is_some() {
        // On a thread with the default 2 MiB stack of spawned threads (tokio's workers too), not
        // the larger stack of the main thread the filtered child runs its test on.
        let t = std::thread::Builder::new().stack_size(2 << 20).spawn(probe).unwrap();
        if let Err(panic) = t.join() {
            std::panic::resume_unwind(panic);
        }
        return;
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > limit {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("probe {test} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(status.success(), "probe {test} crashed: {status}\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert_ran_one_test(test, &stdout);
}

/// Fails unless the test harness's output says it ran exactly one test and that it passed: a name
/// that matches no test (a renamed test, a typo) makes the child run zero tests and exit 0, which
/// alone would pass the parent without running the probe.
fn assert_ran_one_test(test: &str, stdout: &str) {
    let ran_one = stdout.lines().any(|line| line.trim() == "running 1 test");
    let passed_one = stdout.lines().any(|line| line.starts_with("test result: ok. 1 passed; 0 failed;"));
    assert!(
        ran_one && passed_one,
        "probe {test}: the child did not run exactly one test (is `{test}` the exact name of the \
         test that calls in_child?); its output:\n{stdout}"
    );
}
