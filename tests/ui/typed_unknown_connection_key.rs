// A connection key its kind does not read is dropped when the prompt loads: a warning (a
// deprecation note), denied here to pin its text.
#![deny(deprecated)]

prompty::include_prompty!("ui/prompts/connection_key_typo.prompty");

fn main() {}
