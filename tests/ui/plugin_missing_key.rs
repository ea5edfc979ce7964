#[prompty::renderer]
#[derive(Default)]
struct Upper;

fn main() {}
