//! The cases of `prompts/smoke.eval.yaml` as `#[test]`s: `eval_tests!` checks the eval file
//! against `chat.prompty` when this file compiles, and each test replays the case's recorded
//! responses (no key, no model, no network) and holds them to its assertions.

prompty::eval_tests!("prompts/smoke.eval.yaml");
