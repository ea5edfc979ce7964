// A `default` or `example` that does not fit its input (kind, `enumValues`, nested `properties`,
// `items`) is an error at its line.
prompty::include_prompty!("ui/prompts/default_mismatch.prompty");

fn main() {}
