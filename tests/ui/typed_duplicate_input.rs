prompty::include_prompty!("ui/prompts/duplicate_input.prompty");

fn main() {}
