prompty::include_prompty!("ui/prompts/does_not_exist.prompty");

fn main() {}
