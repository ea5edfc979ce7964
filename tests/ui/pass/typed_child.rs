//! A typed prompt with a `kind: prompty` tool compiles its child in: the child's declaration is
//! read from the binary, not from the build machine's folder.

prompty::include_prompty!("ui/prompts/child_tool.prompty");

fn main() {
    let mut agent = child_tool::agent().clone();
    // As if the program ran on another machine: the child's file is not there.
    agent.source.as_mut().unwrap().base_dir = "/nonexistent/prompts".into();
    let tool = &agent.tools.as_ref().unwrap()[0];
    let project = prompty::get_tool_projector("prompty").unwrap();
    let definitions = project(tool, &agent).unwrap();
    assert_eq!(definitions[0].name, "research");
    assert_eq!(definitions[0].description.as_deref(), Some("Researches a topic."));
    // `depth` is bound to the parent's `level`: the model sees only `topic`.
    let properties = definitions[0].parameters["properties"].as_object().unwrap();
    assert_eq!(properties.keys().collect::<Vec<_>>(), ["topic"]);
    let messages = child_tool::prepare(&child_tool::Inputs { question: "Why?".into(), level: None }).unwrap();
    assert_eq!(messages[0].text(), "Why?");
}
