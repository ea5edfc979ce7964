// A `${file:}` reference to a file that does not exist names the prompt, the reference's line and
// column, its key and the path as written (never the build machine's absolute path).
prompty::include_prompty!("ui/prompts/missing_reference.prompty");

fn main() {}
