// A column of the dataset is misspelt: `tnoe` for the input `tone`.
prompty::eval_tests!("ui/evals/misspelt_column.eval.yaml");

fn main() {}
