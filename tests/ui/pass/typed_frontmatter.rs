//! Valid frontmatter compiles: defaults of every kind that fit their inputs, known model options
//! with provider-specific ones under `additionalProperties`, and a custom renderer key (a warning
//! only: a crate may register a renderer under it).

prompty::include_prompty!("ui/prompts/frontmatter_valid.prompty" as valid);
prompty::include_prompty!("ui/prompts/custom_format.prompty" as custom);

fn main() {
    let inputs = valid::Inputs { count: None, ratio: None, loud: None, unit: None, days: None, place: None };
    let messages = valid::prepare(&inputs).unwrap();
    assert_eq!(messages[0].text(), "3 2 false celsius 2 Paris");
    let _ = custom::Inputs { question: None };
}
