prompty::include_prompty!("ui/prompts/openapi_bad_binding.prompty");

fn main() {}
