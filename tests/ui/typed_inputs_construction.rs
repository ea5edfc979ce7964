prompty::include_prompty!("ui/prompts/inputs.prompty");

fn main() {
    // A required input left out.
    let _ = inputs::Inputs { question: "Hi".to_owned(), tone: None };
    // A wrong type: `maxWords` is an integer.
    let _ = inputs::Inputs { question: "Hi".to_owned(), max_words: "ten", tone: None };
}
