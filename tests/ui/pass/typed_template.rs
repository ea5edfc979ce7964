//! A typed prompt whose template reads declared properties through loops, `with`, subscripts,
//! filters and `loop.*`, and an open object, compiles and renders; so does one that reads a name
//! no input declares only behind `is defined` (a warning, not an error).

prompty::include_prompty!("ui/prompts/typed_template.prompty");
prompty::include_prompty!("ui/prompts/guarded_input.prompty");

fn main() {
    let inputs = typed_template::Inputs {
        user: Some(typed_template::User {
            name: Some("ada".into()),
            address: Some(typed_template::UserAddress { city: Some("Paris".into()) }),
        }),
        items: Some(vec![typed_template::ItemsItem { title: Some("first post".into()), tags: Some(vec!["a".into()]) }]),
        meta: Some(serde_json::json!({"k": 1})),
    };
    let messages = typed_template::prepare(&inputs).unwrap();
    assert_eq!(messages[1].text(), "ADA from Paris\n1. First Post #a\nk=1 ");

    let messages = guarded_input::prepare(&guarded_input::Inputs { question: Some("Why?".into()) }).unwrap();
    assert_eq!(messages[0].text(), "Why?");
}
