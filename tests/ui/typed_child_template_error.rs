// The child prompt of a `kind: prompty` tool has a template error: it is checked like the parent,
// and the error names the child's file, line and column, and the tool of the parent that runs it.
prompty::include_prompty!("ui/prompts/child_template_error.prompty");

fn main() {}
