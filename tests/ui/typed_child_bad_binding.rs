// A `kind: prompty` tool binds `depht`, which is not an input of its child prompt.
prompty::include_prompty!("ui/prompts/child_bad_binding.prompty");

fn main() {}
