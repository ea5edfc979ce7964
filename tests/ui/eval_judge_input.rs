// The judge declares `answer`, an input the runner does not pass (it passes `output`).
prompty::eval_tests!("ui/evals/judge_input.eval.yaml");

fn main() {}
