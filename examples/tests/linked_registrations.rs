//! Registrations made in a dependency crate (`weather-tools`) reach a binary that links it with
//! `prompty::link!`, and the example binary that does so runs.

prompty::link!(weather_tools);

use prompty::{Agent, ToolCall, ToolContext, Tools};

#[test]
fn tools_and_renderer_of_a_linked_crate_are_registered() {
    let names = prompty::registered_tools();
    assert!(names.contains(&"get_weather".to_owned()), "{names:?}");
    assert!(names.contains(&"convert_currency".to_owned()), "{names:?}");
    assert!(prompty::get_renderer("shout").is_ok());

    let agent = Agent::from_value(serde_json::json!({"tools": [weather_tools::get_weather::definition()]})).unwrap();
    let (inputs, tools) = (serde_json::Map::new(), Tools::new());
    let call = ToolCall::new("1", "get_weather", r#"{"city": "Lima"}"#);
    let out = prompty::execute_tool(&call, ToolContext::new(&agent, &inputs, &tools)).unwrap();
    assert_eq!(out, serde_json::json!("21°C and sunny in Lima"));
    let err = prompty::execute_tool(
        &ToolCall::new("2", "get_weather", r#"{"city": " "}"#),
        ToolContext::new(&agent, &inputs, &tools),
    )
    .unwrap_err();
    assert_eq!(err.to_string(), "Tool 'get_weather' failed: no city given");
}

#[test]
fn the_tools_example_binary_uses_the_linked_registrations() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tools")).output().expect("the tools example runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("get_weather(Oslo) = \"70°F and sunny in Oslo\""), "{stdout}");
    assert!(stdout.contains("convert_currency(10 EUR) = 9.0"), "{stdout}");
    assert!(stdout.contains("WHAT IS THE WEATHER IN OSLO?"), "{stdout}");
    assert!(
        stdout.contains(
            r#""description":"The unit of the temperature (celsius when not given)","enum":["celsius","fahrenheit"]"#
        ),
        "{stdout}"
    );
}
