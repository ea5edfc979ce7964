// A line that looks like a misspelt role marker is a warning naming the closest role (a
// deprecation note); denied here to pin its text.
#![deny(deprecated)]

prompty::include_prompty!("ui/prompts/role_typo.prompty");

fn main() {}
