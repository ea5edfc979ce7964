prompty::include_prompty!("ui/prompts/not_a_mapping.prompty");

fn main() {}
