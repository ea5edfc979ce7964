#[prompty::parser(chat)]
#[derive(Default)]
struct ChatParser;

#[prompty::executor("echo", 1, "")]
#[derive(Default)]
struct Echo;

fn main() {}
