prompty::include_prompty!("ui/prompts/openapi_not_a_spec.prompty");

fn main() {}
