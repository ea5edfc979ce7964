// An `apiType` the provider's executor refuses fails the build, naming the ones it serves.
prompty::include_prompty!("ui/prompts/api_type_typo.prompty");

fn main() {}
