// An input the template never uses is a warning (a deprecation note, the only warning a macro can
// emit on stable Rust); denied here to pin its text.
#![deny(deprecated)]

prompty::include_prompty!("ui/prompts/unused_input.prompty");

fn main() {}
