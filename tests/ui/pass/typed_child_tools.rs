//! The function tools of a child prompt are checked against the handlers in scope of the module
//! that includes the parent, and handed to the child through the parent's `tools()`.

/// Finds an order by id.
#[prompty::tool]
fn lookup_order(id: String) -> String {
    format!("order {id}: shipped")
}

prompty::include_prompty!("ui/prompts/child_function_tool.prompty");

fn main() {
    let tools = child_function_tool::tools();
    assert!(tools.get("lookup_order").is_some());
}
