/// Greets someone.
#[prompty::tool]
fn greet(
    /// Who to greet
    name: &str,
    tags: Vec<&'static str>,
) -> String {
    format!("Hello {name} {tags:?}")
}

fn main() {
    // The fn stays callable: only the attribute's error is reported.
    let _ = greet("Ada", Vec::new());
}
