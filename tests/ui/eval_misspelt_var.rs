// The var `questoin` is misspelt: `chat.prompty` declares `question`.
prompty::eval_tests!("ui/evals/misspelt_var.eval.yaml");

fn main() {}
