// An unknown key of `model.options` for a built-in provider is ignored at run time: a warning (a
// deprecation note), denied here to pin its text.
#![deny(deprecated)]

prompty::include_prompty!("ui/prompts/option_typo.prompty");

fn main() {}
