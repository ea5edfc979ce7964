// A provider that is not built in is a warning (an executor may be registered under it at run
// time), denied here to pin its text.
#![deny(deprecated)]

prompty::include_prompty!("ui/prompts/provider_typo.prompty");

fn main() {}
