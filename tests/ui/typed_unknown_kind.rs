prompty::include_prompty!("ui/prompts/unknown_kind.prompty");

fn main() {}
