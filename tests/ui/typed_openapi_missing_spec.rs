prompty::include_prompty!("ui/prompts/openapi_missing_spec.prompty");

fn main() {}
