//! `${env:...}` is never resolved at compile time: `tests/prompts/secret.prompty` reads its API key
//! from `PROMPTY_EXAMPLES_BUILD_SECRET`, which `build.rs` sets (for itself and, through
//! `cargo::rustc-env`, for the compiler running `include_prompty!`). Both doors compile it, and
//! neither the generated code nor this test binary holds the secret's value.

mod prompts {
    include!(concat!(env!("OUT_DIR"), "/test_prompts.rs"));
}

prompty::include_prompty!("tests/prompts/secret.prompty" as secret_macro);

/// The value build.rs puts in the build environment, assembled at run time so that this test's
/// own code does not put it in the binary.
fn secret_value() -> String {
    ["sk", "build", "machine", "secret", "0123456789"].join("-")
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn the_build_environment_had_the_secret() {
    // Set next to the secret by build.rs (naming the secret itself here would compile it in).
    assert_eq!(env!("PROMPTY_EXAMPLES_BUILD_SECRET_IS_SET"), "1");
}

#[test]
fn the_generated_code_keeps_the_reference() {
    // The module tree, and each prompt's module in its own file.
    let mut generated = std::fs::read_to_string(concat!(env!("OUT_DIR"), "/test_prompts.rs")).unwrap();
    let modules = std::fs::read_dir(concat!(env!("OUT_DIR"), "/prompty-build/test_prompts.rs")).unwrap();
    let mut read = 0;
    for entry in modules {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            generated.push_str(&std::fs::read_to_string(path).unwrap());
            read += 1;
        }
    }
    assert!(read >= 4, "{read} module files");
    assert!(generated.contains("${env:PROMPTY_EXAMPLES_BUILD_SECRET}"));
    assert!(!generated.contains(&secret_value()));
    for json in [prompts::secret::AGENT_JSON, secret_macro::AGENT_JSON] {
        assert!(json.contains(r#""apiKey":"${env:PROMPTY_EXAMPLES_BUILD_SECRET}""#), "{json}");
    }
}

#[test]
fn the_binary_does_not_contain_the_secret() {
    let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
    assert!(contains(&exe, b"${env:PROMPTY_EXAMPLES_BUILD_SECRET}"), "the compiled-in prompt is in the binary");
    assert!(!contains(&exe, secret_value().as_bytes()), "the build machine's secret reached the binary");
}

#[test]
fn the_reference_is_resolved_when_the_program_runs() {
    // Only this test touches this variable, and only this test calls these `agent()`s: each
    // resolves its references at its first call, from the environment of this process.
    std::env::set_var("PROMPTY_EXAMPLES_BUILD_SECRET", "sk-runtime-value-0123");
    for agent in [prompts::secret::agent(), secret_macro::agent()] {
        assert!(!agent.has_env_references());
        let connection = agent.model.as_ref().and_then(|m| m.connection.as_ref()).unwrap();
        let serialized = serde_json::to_string(connection).unwrap();
        assert!(serialized.contains("sk-runtime-value-0123"), "{serialized}");
        assert!(!serialized.contains("${env:"), "{serialized}");
        // What the program shows of it keeps the key redacted.
        let debug = format!("{agent:?}");
        assert!(!debug.contains("sk-runtime-value-0123"), "{debug}");
    }
}
