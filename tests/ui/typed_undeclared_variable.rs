prompty::include_prompty!("ui/prompts/undeclared_variable.prompty");

fn main() {}
