// A filter the runtime does not have is a compile error at the filter, with the closest known one.
prompty::include_prompty!("ui/prompts/unknown_filter.prompty");

fn main() {}
