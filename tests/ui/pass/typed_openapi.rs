//! A typed prompt with an `openapi` tool whose specification is a file next to the prompt: the
//! file is read and checked at compile time (and tracked for rebuilds), the binding names one of
//! its parameters, and the prompt prepares as loading the file does.

prompty::include_prompty!("ui/prompts/openapi_pets.prompty" as pets);

fn main() {
    let messages = pets::prepare(&pets::Inputs { question: "Is pet 7 a cat?".into(), language: None }).unwrap();
    assert_eq!(messages[0].text(), "Is pet 7 a cat?");
    let agent = pets::agent();
    let tool = &agent.tools.as_ref().unwrap()[0];
    assert_eq!(tool.kind.as_str(), "openapi");
    assert_eq!(tool.bindings[0].name, "locale");
}
