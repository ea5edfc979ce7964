// A property the input's declared `properties` do not have is a compile error at the property.
prompty::include_prompty!("ui/prompts/property_typo.prompty");

fn main() {}
