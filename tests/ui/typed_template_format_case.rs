// Renderer keys are case-sensitive: `Jinja2` is no renderer at run time, so it is an error naming
// the built-in spelling (an unknown key in any other spelling is a warning: a crate may register it).
prompty::include_prompty!("ui/prompts/format_case.prompty");

fn main() {}
