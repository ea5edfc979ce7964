prompty::include_prompty!("ui/prompts/bad_binding.prompty");

fn main() {}
