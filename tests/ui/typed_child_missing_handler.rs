// The child prompt of a `kind: prompty` tool declares a `kind: function` tool, and no handler of
// that name is in scope: the child runs with the handlers of its parent's module, so this is the
// parent's compile error, naming the child's file, line and column.
prompty::include_prompty!("ui/prompts/child_function_tool.prompty");

fn main() {}
