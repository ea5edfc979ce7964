// A `kind: prompty` tool names a child prompt that does not exist (next to the parent).
prompty::include_prompty!("ui/prompts/child_missing.prompty");

fn main() {}
