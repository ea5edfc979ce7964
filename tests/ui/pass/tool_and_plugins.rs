//! A `#[prompty::tool]` fn and plugin types that compile, register at link time, and work.

use prompty::{
    Agent, Message, Parser, RenderContext, RenderedText, Renderer, Result, Role, ToolCall, ToolContext, Tools,
};
use serde_json::{json, Map, Value};

/// Today's weather in a city.
///
/// Uses no network.
#[prompty::tool]
pub async fn get_weather(
    /// The city, e.g. "Paris"
    city: String,
    /// How many days ahead
    days: Option<u8>,
    /// Temperature unit
    #[serde(default)]
    unit: Unit,
) -> std::result::Result<String, String> {
    if city.is_empty() {
        return Err("no city".to_owned());
    }
    Ok(format!("sunny in {city} in {} days ({unit:?})", days.unwrap_or(0)))
}

#[derive(Debug, Default, serde::Deserialize, schemars::JsonSchema)]
pub enum Unit {
    #[default]
    Celsius,
    Fahrenheit,
}

/// Adds two numbers.
#[prompty::tool(name = "add_numbers")]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[prompty::tool(description = "Does nothing")]
fn nothing() {}

/// A tool in a namespace of its own in the tool catalog.
#[prompty::tool(namespace = "ui_clock")]
fn now() -> String {
    "12:00".into()
}

/// A tool loader registered at link time.
#[prompty::loader("ui-loader")]
#[derive(Default)]
struct Fixed;

impl prompty::catalog::ToolLoader for Fixed {
    fn load<'a>(&'a self, _config: &'a Value) -> prompty::BoxFuture<'a, Result<Vec<prompty::catalog::CatalogEntry>>> {
        Box::pin(async { Ok(vec![prompty::catalog::CatalogEntry::new("ui_fixed", "ping", json!({"type": "object"}))]) })
    }
}

#[derive(Default)]
struct Upper;

#[prompty::renderer("ui-upper", "ui-shout")]
impl Renderer for Upper {
    fn render(&self, agent: &Agent, _inputs: &Map<String, Value>, _ctx: &RenderContext) -> Result<String> {
        Ok(agent.instructions.clone().unwrap_or_default().to_uppercase())
    }
}

#[prompty::parser("ui-one-user")]
#[derive(Default)]
struct OneUser;

impl Parser for OneUser {
    fn parse(&self, _agent: &Agent, rendered: RenderedText<'_>) -> Result<Vec<Message>> {
        Ok(vec![Message::new(Role::User, rendered.text)])
    }
}

fn main() {
    // The fns stay normal fns.
    assert_eq!(add(1, 2), 3);
    nothing();

    // Names and declarations.
    assert_eq!(get_weather::NAME, "get_weather");
    assert_eq!(add::NAME, "add_numbers");
    let def = get_weather::definition();
    assert_eq!(def.name, "get_weather");
    assert_eq!(def.description.as_deref(), Some("Today's weather in a city.\n\nUses no network."));
    let prompty::ToolKind::Function(f) = &def.kind else { panic!("not a function tool: {def:?}") };
    let p = |n: &str| f.parameters.iter().find(|p| p.name == n).unwrap_or_else(|| panic!("no {n}: {f:?}"));
    assert_eq!(p("city").description.as_deref(), Some("The city, e.g. \"Paris\""));
    assert_eq!(p("city").kind, prompty::PropertyKind::String);
    assert!(p("city").required);
    assert_eq!(p("days").description.as_deref(), Some("How many days ahead"));
    assert_eq!(p("days").kind, prompty::PropertyKind::Integer);
    assert!(!p("days").required);
    assert_eq!(p("unit").enum_values, Some(vec![json!("Celsius"), json!("Fahrenheit")]));
    assert_eq!(nothing::definition().description.as_deref(), Some("Does nothing"));

    // Registered at link time, callable through the registry and tool dispatch.
    let tool = prompty::get_tool("get_weather").expect("get_weather is registered");
    assert_eq!(tool.definition().map(|d| d.name), Some("get_weather".to_owned()));
    assert!(prompty::get_tool("add_numbers").is_some());
    assert!(prompty::get_tool("add").is_none());
    let declared = json!({"tools": [get_weather::definition(), add::definition(), nothing::definition()]});
    let agent = Agent::from_value(declared).expect("declared tools");
    let (inputs, tools) = (Map::new(), Tools::new());
    let call = ToolCall::new("1", "get_weather", r#"{"city": "Paris", "days": 2}"#);
    let out = prompty::execute_tool(&call, ToolContext::new(&agent, &inputs, &tools)).unwrap();
    assert_eq!(out, json!("sunny in Paris in 2 days (Celsius)"));
    let call = ToolCall::new("2", "add_numbers", r#"{"a": 2, "b": 3}"#);
    assert_eq!(prompty::execute_tool(&call, ToolContext::new(&agent, &inputs, &tools)).unwrap(), json!(5));
    let call = ToolCall::new("3", "nothing", "{}");
    assert_eq!(prompty::execute_tool(&call, ToolContext::new(&agent, &inputs, &tools)).unwrap(), Value::Null);
    // `Err` and bad arguments become tool errors naming the tool.
    let call = ToolCall::new("4", "get_weather", r#"{"city": ""}"#);
    let err = prompty::execute_tool(&call, ToolContext::new(&agent, &inputs, &tools)).unwrap_err();
    assert!(err.to_string().contains("no city"), "{err}");
    let call = ToolCall::new("5", "add_numbers", r#"{"a": "x"}"#);
    let err = prompty::execute_tool(&call, ToolContext::new(&agent, &inputs, &tools)).unwrap_err();
    assert!(err.to_string().contains("add_numbers") && err.to_string().contains("invalid arguments"), "{err}");

    // The handle is a value for per-call tools.
    let tools = Tools::new().with("weather", get_weather {});
    let call = ToolCall::new("6", "weather", r#"{"city": "Oslo", "unit": "Fahrenheit"}"#);
    let out = prompty::execute_tool(&call, ToolContext::new(&agent, &inputs, &tools)).unwrap();
    assert_eq!(out, json!("sunny in Oslo in 0 days (Fahrenheit)"));

    // The tool catalog: `#[tool]` fns in their namespace (the crate's name by default), loaders by name.
    let catalog = prompty::catalog::ToolCatalog::global();
    assert_eq!(catalog.get("ui_clock::now").len(), 1);
    assert!(catalog.entries().iter().any(|e| e.name == "add_numbers" && e.namespace != "ui_clock"));
    let mine = prompty::catalog::ToolCatalog::new();
    assert_eq!(mine.add_source("ui-loader", json!({})).unwrap(), 1);
    assert_eq!(mine.get("ui_fixed::ping")[0].wire_name(), "ui_fixed__ping");

    // Plugins: every key, one shared instance per registration.
    let upper = prompty::get_renderer("ui-upper").expect("renderer registered");
    assert!(std::sync::Arc::ptr_eq(&upper, &prompty::get_renderer("ui-shout").unwrap()));
    let mut agent = Agent::default();
    agent.instructions = Some("hi".into());
    assert_eq!(upper.render(&agent, &Map::new(), &RenderContext::plain()).unwrap(), "HI");
    let parser = prompty::get_parser("ui-one-user").expect("parser registered");
    let messages = parser.parse(&agent, RenderedText { text: "hello", values: &[] }).unwrap();
    assert_eq!(messages[0].text(), "hello");
}
