// A name the template only reads behind `is defined` is accepted, with a warning that it is never
// an input (a deprecation note); denied here to pin its text.
#![deny(deprecated)]

prompty::include_prompty!("ui/prompts/guarded_input.prompty");

fn main() {}
