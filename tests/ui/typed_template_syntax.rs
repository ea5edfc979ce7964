prompty::include_prompty!("ui/prompts/template_syntax.prompty");

fn main() {}
