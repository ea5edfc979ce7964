//! Compiles the typed prompts: every `.prompty` file of `prompts/` into `OUT_DIR/prompty.rs`
//! (included by `src/lib.rs`), and the test prompts of `tests/prompts/` into
//! `OUT_DIR/test_prompts.rs` (included by the tests); each prompt's module is a file of its own
//! below `OUT_DIR/prompty-build/<that name>/`.

fn main() -> Result<(), prompty_build::CompileError> {
    // A secret in the build environment, as an API key would be on a developer's machine. The test
    // prompts reference it with `${env:...}`: the tests check that it never reaches a binary.
    let secret = "sk-build-machine-secret-0123456789";
    std::env::set_var("PROMPTY_EXAMPLES_BUILD_SECRET", secret);
    // The same for `include_prompty!`, which runs inside the compiler.
    println!("cargo::rustc-env=PROMPTY_EXAMPLES_BUILD_SECRET={secret}");
    println!("cargo::rustc-env=PROMPTY_EXAMPLES_BUILD_SECRET_IS_SET=1");

    prompty_build::compile("prompts")?;
    prompty_build::Config::new("tests/prompts").output("test_prompts.rs").compile()
}
