prompty::include_prompty!("ui/prompts/openapi_no_operations.prompty");

fn main() {}
