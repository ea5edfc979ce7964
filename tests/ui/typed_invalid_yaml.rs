prompty::include_prompty!("ui/prompts/invalid_yaml.prompty");

fn main() {}
