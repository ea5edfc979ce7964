/// Registered as a tool loader, but it implements nothing.
#[prompty::loader("nothing")]
#[derive(Default)]
struct Nothing;

fn main() {}
