//! Reading the datasets of an eval file: JSONL lines and CSV rows become [`Case`]s.

use super::{Case, EvalFile, MAX_CASES, MAX_DATASET_BYTES};
use crate::analysis::Diagnostic;
use crate::{Location, Property, PropertyKind};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The column of a dataset holding a case's tags (comma separated in CSV; a list or comma
/// separated text in JSONL).
pub(crate) const TAGS_COLUMN: &str = "tags";

/// A column of a dataset file and where it is first written (a CSV header cell, the key on the
/// first JSONL line that has it).
#[derive(Debug, Clone)]
pub(crate) struct Column {
    pub name: String,
    pub at: Location,
}

/// One dataset as read: its name in messages, its columns.
#[derive(Debug, Clone)]
pub(crate) struct ReadDataset {
    /// Index into [`EvalFile::datasets`].
    pub index: usize,
    /// The file as named in messages.
    pub display: String,
    pub columns: Vec<Column>,
}

/// Everything read: the cases (inline then datasets), the datasets' columns, the dataset files
/// read, and every mistake.
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    pub cases: Vec<Case>,
    pub datasets: Vec<ReadDataset>,
    pub files: Vec<PathBuf>,
    pub errors: Vec<Diagnostic>,
}

fn error(at: Location, message: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::error(at, message).with_code("eval-dataset")
}

impl EvalFile {
    /// Every case of the file: the inline cases, then each dataset's rows in order.
    ///
    /// A JSONL dataset holds one JSON object per line (blank lines are skipped); a CSV dataset
    /// (RFC 4180: quoted fields, `""` escapes, CRLF or LF, line breaks inside quotes) starts with
    /// a header row naming the columns. A column named by [`super::Dataset::columns`] fills the
    /// input it maps to; the [`super::Dataset::expected`] column is the reference answer; the
    /// [`super::Dataset::name_column`] column names the case (default: `FILE:LINE`, e.g.
    /// `cases.csv:3`); a `tags` column holds tags, comma separated; every other column is a var
    /// of the same name. An empty CSV cell gives no value (the input's default applies), and CSV
    /// values are text until [`coerce_vars`] turns them into the inputs' kinds
    /// ([`Case::from_csv`]). Each dataset case's [`Case::at`] and [`Case::var_at`] name the
    /// dataset file and line (and, for CSV, the column).
    ///
    /// Bounds: a dataset file is at most [`MAX_DATASET_BYTES`], the file at most [`MAX_CASES`]
    /// cases. A dataset path must stay inside the eval file's folder (as `${file:}` references
    /// must stay inside a prompt's): a path leaving it is refused, with the advice to move the
    /// dataset beside the eval file. Case names are unique across the file; a repeat is an error
    /// naming both places. Every mistake of every dataset is returned together.
    ///
    /// ```
    /// let dir = std::env::temp_dir().join(format!("prompty-doc-cases-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir).unwrap();
    /// std::fs::write(dir.join("rows.csv"), "q,expected,tags\n\"Hi, you\",Hello,\"smoke, greet\"\n").unwrap();
    /// std::fs::write(dir.join("rows.jsonl"), "{\"name\": \"n1\", \"question\": \"Why?\"}\n\n").unwrap();
    /// let text = "prompt: chat.prompty\ncases:\n  - {name: inline, vars: {question: Yo}}\n\
    ///     datasets:\n  - {file: rows.csv, columns: {q: question}}\n  - rows.jsonl\n";
    /// let path = dir.join("chat.eval.yaml");
    /// std::fs::write(&path, text).unwrap();
    /// let eval = prompty_core::eval::EvalFile::load(&path).unwrap();
    /// let cases = eval.cases().unwrap();
    /// let names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    /// assert_eq!(names, ["inline", "rows.csv:2", "n1"]);
    /// assert_eq!(cases[1].vars["question"], "Hi, you");
    /// assert_eq!(cases[1].expected, Some(serde_json::json!("Hello")));
    /// assert_eq!(cases[1].tags, ["smoke", "greet"]);
    /// assert_eq!((cases[1].var_at["question"].line, cases[1].var_at["question"].column), (Some(2), Some(1)));
    /// assert!(cases[1].var_at["question"].file.ends_with("rows.csv"));
    /// ```
    pub fn cases(&self) -> Result<Vec<Case>, Vec<Diagnostic>> {
        let loaded = load(self);
        if loaded.errors.is_empty() {
            Ok(loaded.cases)
        } else {
            Err(loaded.errors)
        }
    }

    /// The folder paths are relative to (`.` when the file was parsed from text).
    pub(crate) fn base_dir(&self) -> &Path {
        if self.dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &self.dir
        }
    }

    /// A file named in the eval file, as named in messages: beside the eval file's own name.
    pub(crate) fn display_of(&self, relative: &str) -> String {
        let parent = self.name.rsplit_once(['/', '\\']).map(|(p, _)| p);
        match parent {
            Some(p) if !p.is_empty() => format!("{p}/{relative}"),
            _ => relative.to_owned(),
        }
    }

    /// Resolves a file the eval file names, confined to its folder; the error says what to do.
    pub(crate) fn confined(&self, relative: &str, what: &str) -> Result<PathBuf, String> {
        let options = crate::LoadOptions::new();
        match crate::confine_path(self.base_dir(), relative, &options) {
            Ok(p) => Ok(p),
            Err(crate::Error::FileOutsideRoots { .. }) => Err(format!(
                "{what} `{relative}` lies outside the eval file's folder: move it into that folder (or a folder \
                 below it) and name it by its relative path"
            )),
            Err(crate::Error::FileNotFound { .. }) => Err(format!(
                "{what} `{relative}` does not exist (paths are relative to the eval file's folder `{}`)",
                self.base_dir().display()
            )),
            Err(e) => Err(format!("cannot read {what} `{relative}`: {e}")),
        }
    }
}

/// Reads every dataset; collects every mistake.
pub(crate) fn load(eval: &EvalFile) -> Loaded {
    let mut loaded = Loaded { cases: eval.cases.clone(), ..Loaded::default() };
    for (index, ds) in eval.datasets.iter().enumerate() {
        let display = eval.display_of(&ds.file);
        let path = match eval.confined(&ds.file, "the dataset") {
            Ok(p) => p,
            Err(message) => {
                loaded.errors.push(error(ds.at.clone(), message));
                continue;
            }
        };
        loaded.files.push(path.clone());
        let text = match crate::text::read_file(&path, MAX_DATASET_BYTES) {
            Ok(t) => t,
            Err(e) => {
                loaded.errors.push(error(Location::file(&display), format!("cannot read the dataset: {e}")));
                continue;
            }
        };
        let rows = if ds.file.to_ascii_lowercase().ends_with(".csv") {
            csv_rows(&text, &display)
        } else {
            jsonl_rows(&text, &display)
        };
        let (rows, columns) = match rows {
            Ok(r) => r,
            Err(e) => {
                loaded.errors.extend(e);
                continue;
            }
        };
        let from_csv = ds.file.to_ascii_lowercase().ends_with(".csv");
        for row in rows {
            if loaded.cases.len() >= MAX_CASES {
                loaded.errors.push(error(
                    Location::file(&display).at_line(row.line),
                    format!("more than {MAX_CASES} cases: split the eval file into several"),
                ));
                break;
            }
            let case = row_case(ds, &display, row, from_csv);
            loaded.cases.push(case);
        }
        loaded.datasets.push(ReadDataset { index, display, columns });
    }
    unique_names(&loaded.cases, &mut loaded.errors);
    loaded
}

/// A repeated case name is an error at its second place, naming the first.
fn unique_names(cases: &[Case], errors: &mut Vec<Diagnostic>) {
    let mut seen: std::collections::HashMap<&str, &Location> = Default::default();
    for case in cases {
        match seen.get(case.name.as_str()) {
            Some(first) => errors.push(error(
                case.at.clone(),
                format!(
                    "the case name `{}` is used twice: here and at {first}; give each case a name of its own",
                    case.name
                ),
            )),
            None => {
                seen.insert(&case.name, &case.at);
            }
        }
    }
}

/// One row of a dataset: its 1-based line and its cells with where each starts.
struct Row {
    line: usize,
    cells: Vec<(String, Value, Location)>,
}

fn row_case(ds: &super::Dataset, display: &str, row: Row, from_csv: bool) -> Case {
    let at = Location::file(display).at_line(row.line);
    let mut case = Case {
        name: format!("{}:{}", ds.file, row.line),
        vars: Map::new(),
        expected: None,
        assert: ds.assert.clone(),
        tags: Vec::new(),
        threshold: None,
        at,
        var_at: BTreeMap::new(),
        from_csv,
    };
    for (column, value, cell_at) in row.cells {
        if column == ds.expected {
            case.expected = Some(value).filter(|v| !v.is_null());
        } else if column == ds.name_column {
            match value {
                Value::Null => {}
                Value::String(s) if s.trim().is_empty() => {}
                Value::String(s) => case.name = s,
                other => case.name = other.to_string(),
            }
        } else if column == TAGS_COLUMN {
            case.tags = match value {
                Value::Array(items) => {
                    items.iter().map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned)).collect()
                }
                Value::String(s) => s.split(',').map(str::trim).filter(|t| !t.is_empty()).map(str::to_owned).collect(),
                Value::Null => Vec::new(),
                other => vec![other.to_string()],
            };
        } else {
            let input = ds.columns.get(&column).cloned().unwrap_or(column);
            case.var_at.insert(input.clone(), cell_at);
            case.vars.insert(input, value);
        }
    }
    for tag in &ds.tags {
        if !case.tags.contains(tag) {
            case.tags.push(tag.clone());
        }
    }
    case
}

/// The `"key"` of a JSON object on a line: its 1-based column.
fn key_column(line: &str, key: &str) -> usize {
    let quoted = serde_json::to_string(key).unwrap_or_default();
    let mut from = 0;
    while let Some(i) = line[from..].find(&quoted) {
        let start = from + i;
        let after = line[start + quoted.len()..].trim_start();
        if after.starts_with(':') {
            return line[..start].chars().count() + 1;
        }
        from = start + quoted.len();
    }
    1
}

fn jsonl_rows(text: &str, display: &str) -> Result<(Vec<Row>, Vec<Column>), Vec<Diagnostic>> {
    let mut rows = Vec::new();
    let mut columns: Vec<Column> = Vec::new();
    let mut errors = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let content = line.strip_suffix('\r').unwrap_or(line);
        let content = if n == 1 { content.trim_start_matches('\u{feff}') } else { content };
        if content.trim().is_empty() {
            continue;
        }
        let object = match serde_json::from_str::<Value>(content) {
            Ok(Value::Object(map)) => map,
            Ok(other) => {
                let what = match other {
                    Value::Array(_) => "a list",
                    Value::String(_) => "text",
                    Value::Number(_) => "a number",
                    Value::Bool(_) => "a boolean",
                    _ => "null",
                };
                errors.push(error(
                    Location::file(display).at(n, 1),
                    format!("each line of a JSONL dataset is a JSON object (one case), not {what}"),
                ));
                continue;
            }
            Err(e) => {
                errors.push(error(Location::file(display).at(n, e.column().max(1)), format!("invalid JSON: {e}")));
                continue;
            }
        };
        let mut cells = Vec::new();
        for (key, value) in object {
            let at = Location::file(display).at(n, key_column(content, &key));
            if !columns.iter().any(|c| c.name == key) {
                columns.push(Column { name: key.clone(), at: at.clone() });
            }
            cells.push((key, value, at));
        }
        rows.push(Row { line: n, cells });
    }
    if errors.is_empty() {
        Ok((rows, columns))
    } else {
        Err(errors)
    }
}

/// A CSV record: its 1-based line, and its fields with the line and column each starts at.
struct Record {
    line: usize,
    fields: Vec<(String, usize, usize)>,
}

/// Splits CSV text into records (RFC 4180); empty lines are skipped.
fn csv_records(text: &str, display: &str) -> Result<Vec<Record>, Box<Diagnostic>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut records = Vec::new();
    let mut chars = text.chars().peekable();
    let (mut line, mut col) = (1usize, 1usize);
    let at = |line: usize, col: usize| Location::file(display).at(line, col);
    while chars.peek().is_some() {
        let record_line = line;
        let mut fields = Vec::new();
        // A record of one empty field on its own line is an empty line: skipped.
        if matches!(chars.peek(), Some('\n') | Some('\r')) {
            if chars.next() == Some('\r') && chars.peek() == Some(&'\n') {
                chars.next();
            }
            line += 1;
            col = 1;
            continue;
        }
        loop {
            let (field_line, field_col) = (line, col);
            let mut value = String::new();
            if chars.peek() == Some(&'"') {
                chars.next();
                col += 1;
                loop {
                    match chars.next() {
                        None => {
                            return Err(Box::new(error(
                                at(field_line, field_col),
                                "a quoted field is never closed: add the closing `\"`",
                            )))
                        }
                        Some('"') if chars.peek() == Some(&'"') => {
                            chars.next();
                            col += 2;
                            value.push('"');
                        }
                        Some('"') => {
                            col += 1;
                            break;
                        }
                        Some('\n') => {
                            line += 1;
                            col = 1;
                            value.push('\n');
                        }
                        Some(c) => {
                            col += 1;
                            value.push(c);
                        }
                    }
                }
                match chars.peek() {
                    None | Some(',') | Some('\n') | Some('\r') => {}
                    Some(_) => {
                        return Err(Box::new(error(
                            at(line, col),
                            "text after a quoted field's closing `\"`: a `\"` inside a quoted field is written `\"\"`",
                        )))
                    }
                }
            } else {
                while let Some(&c) = chars.peek() {
                    if c == ',' || c == '\n' || c == '\r' {
                        break;
                    }
                    if c == '"' {
                        return Err(Box::new(error(
                            at(line, col),
                            "a `\"` inside an unquoted field: quote the whole field and write the quote as `\"\"`",
                        )));
                    }
                    chars.next();
                    col += 1;
                    value.push(c);
                }
            }
            fields.push((value, field_line, field_col));
            match chars.next() {
                Some(',') => {
                    col += 1;
                }
                Some('\r') => {
                    if chars.peek() == Some(&'\n') {
                        chars.next();
                    }
                    line += 1;
                    col = 1;
                    break;
                }
                Some('\n') => {
                    line += 1;
                    col = 1;
                    break;
                }
                _ => break,
            }
        }
        records.push(Record { line: record_line, fields });
    }
    Ok(records)
}

fn csv_rows(text: &str, display: &str) -> Result<(Vec<Row>, Vec<Column>), Vec<Diagnostic>> {
    let records = csv_records(text, display).map_err(|e| vec![*e])?;
    let mut records = records.into_iter();
    let Some(header) = records.next() else {
        return Err(vec![error(Location::file(display), "the CSV dataset is empty: its first row names the columns")]);
    };
    let mut errors = Vec::new();
    let mut columns: Vec<Column> = Vec::new();
    for (name, line, col) in &header.fields {
        let at = Location::file(display).at(*line, *col);
        let name = name.trim();
        if name.is_empty() {
            errors.push(error(at, "a column of the header row has no name"));
        } else if let Some(first) = columns.iter().find(|c| c.name == name) {
            errors.push(error(
                at,
                format!("the column `{name}` is named twice in the header row (first at {})", first.at),
            ));
        } else {
            columns.push(Column { name: name.to_owned(), at });
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut rows = Vec::new();
    for record in records {
        if record.fields.len() != columns.len() {
            errors.push(error(
                Location::file(display).at_line(record.line),
                format!(
                    "the row has {} field{}, the header {}: quote a field that holds a `,`",
                    record.fields.len(),
                    if record.fields.len() == 1 { "" } else { "s" },
                    columns.len()
                ),
            ));
            continue;
        }
        let cells = columns
            .iter()
            .zip(record.fields)
            .filter(|(_, (value, _, _))| !value.is_empty())
            .map(|(c, (value, line, col))| {
                (c.name.clone(), Value::String(value), Location::file(display).at(line, col))
            })
            .collect();
        rows.push(Row { line: record.line, cells });
    }
    if errors.is_empty() {
        Ok((rows, columns))
    } else {
        Err(errors)
    }
}

/// Turns vars read as text (CSV cells) into the kinds their inputs declare: `integer`, `float`,
/// `boolean` (`true`/`false`, any case), `array` and `object` (JSON text). A value that does not
/// convert is left as it is, for [`super::check`] (or the runtime's input validation) to report;
/// vars no input declares, and values that are not text, are left alone.
///
/// ```
/// use prompty_core::{eval::coerce_vars, Property, PropertyKind};
/// let inputs: Vec<Property> = serde_json::from_value(serde_json::json!([
///     {"name": "n", "kind": "integer"}, {"name": "ok", "kind": "boolean"},
///     {"name": "xs", "kind": "array"}, {"name": "t", "kind": "float"}])).unwrap();
/// let mut vars = serde_json::json!({"n": "42", "ok": "TRUE", "xs": "[1, 2]", "t": "ten"});
/// coerce_vars(vars.as_object_mut().unwrap(), &inputs);
/// assert_eq!(vars, serde_json::json!({"n": 42, "ok": true, "xs": [1, 2], "t": "ten"}));
/// ```
pub fn coerce_vars(vars: &mut Map<String, Value>, inputs: &[Property]) {
    for input in inputs {
        let Some(Value::String(text)) = vars.get(&input.name) else { continue };
        let t = text.trim();
        let converted = match &input.kind {
            PropertyKind::Integer => t.parse::<i64>().ok().map(Value::from),
            PropertyKind::Float => t.parse::<f64>().ok().and_then(serde_json::Number::from_f64).map(Value::Number),
            PropertyKind::Boolean => match t.to_ascii_lowercase().as_str() {
                "true" => Some(Value::Bool(true)),
                "false" => Some(Value::Bool(false)),
                _ => None,
            },
            PropertyKind::Array => serde_json::from_str::<Value>(t).ok().filter(Value::is_array),
            PropertyKind::Object => serde_json::from_str::<Value>(t).ok().filter(Value::is_object),
            _ => None,
        };
        if let Some(v) = converted {
            vars.insert(input.name.clone(), v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("prompty-eval-ds-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn eval_in(dir: &Path, text: &str) -> EvalFile {
        let path = dir.join("t.eval.yaml");
        std::fs::write(&path, text).unwrap();
        EvalFile::load(&path).unwrap()
    }

    fn messages(errors: &[Diagnostic], dir: &Path) -> Vec<String> {
        let prefix = format!("{}/", dir.display());
        errors.iter().map(|d| d.to_string().replace(&prefix, "")).collect()
    }

    #[test]
    fn csv_quotes_crlf_and_newlines_inside_quotes() {
        let records = csv_records("a,b\r\n\"x, \"\"y\"\"\",\"two\nlines\"\r\n\r\nlast,\n", "d.csv").unwrap();
        let fields: Vec<Vec<&str>> = records.iter().map(|r| r.fields.iter().map(|f| f.0.as_str()).collect()).collect();
        assert_eq!(fields, [vec!["a", "b"], vec!["x, \"y\"", "two\nlines"], vec!["last", ""]]);
        assert_eq!(records.iter().map(|r| r.line).collect::<Vec<_>>(), [1, 2, 5]);
        assert_eq!((records[1].fields[1].1, records[1].fields[1].2), (2, 12));
    }

    #[test]
    fn csv_columns_count_characters() {
        let records = csv_records("é,\"ü\"\"\",b\n", "d.csv").unwrap();
        let at: Vec<(String, usize)> = records[0].fields.iter().map(|f| (f.0.clone(), f.2)).collect();
        assert_eq!(at, [("é".to_owned(), 1), ("ü\"".to_owned(), 3), ("b".to_owned(), 9)]);
    }

    #[test]
    fn csv_mistakes_name_the_place() {
        let e = csv_records("a\n\"open\n", "d.csv").err().unwrap();
        assert_eq!(e.to_string(), "d.csv:2:1: a quoted field is never closed: add the closing `\"`");
        let e = csv_records("a\nx\"y\n", "d.csv").err().unwrap();
        assert_eq!(
            e.to_string(),
            "d.csv:2:2: a `\"` inside an unquoted field: quote the whole field and write the quote as `\"\"`"
        );
        let e = csv_records("a\n\"x\"y\n", "d.csv").err().unwrap();
        assert!(e.to_string().starts_with("d.csv:2:4: text after a quoted field's closing"), "{e}");
        let e = csv_rows("a,b\n1,2\n1,2,3\n", "d.csv").err().unwrap();
        assert_eq!(e[0].to_string(), "d.csv:3: the row has 3 fields, the header 2: quote a field that holds a `,`");
        let e = csv_rows("a,a\n", "d.csv").err().unwrap();
        assert_eq!(e[0].to_string(), "d.csv:1:3: the column `a` is named twice in the header row (first at d.csv:1:1)");
        let e = csv_rows("", "d.csv").err().unwrap();
        assert_eq!(e[0].to_string(), "d.csv: the CSV dataset is empty: its first row names the columns");
    }

    #[test]
    fn jsonl_mistakes_name_the_line() {
        let e = jsonl_rows("{\"a\": 1}\n\n[1]\n{\"a\": \n", "d.jsonl").err().unwrap();
        let m: Vec<String> = e.iter().map(|d| d.to_string()).collect();
        assert_eq!(m[0], "d.jsonl:3:1: each line of a JSONL dataset is a JSON object (one case), not a list");
        assert!(m[1].starts_with("d.jsonl:4:6: invalid JSON: EOF while parsing"), "{}", m[1]);
        let (rows, columns) = jsonl_rows("{\"q\": 1}\n{\"x\": 2, \"q\": 3}\n", "d.jsonl").unwrap();
        assert_eq!(rows.len(), 2);
        let cols: Vec<String> = columns.iter().map(|c| format!("{} {}", c.name, c.at)).collect();
        assert_eq!(cols, ["q d.jsonl:1:2", "x d.jsonl:2:2"]);
    }

    #[test]
    fn rows_map_columns_expected_names_and_tags() {
        let d = dir("map");
        std::fs::write(d.join("a.csv"), "id,q,answer,tags,n\nfirst,Hi,Hello,\"a, b\",\n,Bye,,,3\n").unwrap();
        std::fs::write(d.join("b.jsonl"), "{\"question\": \"x\", \"expected\": {\"k\": 1}, \"tags\": [\"j\"]}\n")
            .unwrap();
        let eval = eval_in(
            &d,
            "prompt: p.prompty\ndatasets:\n  - {file: a.csv, columns: {q: question}, expected: answer, nameColumn: id, tags: [csv]}\n  - b.jsonl\n",
        );
        let cases = eval.cases().unwrap();
        assert_eq!(cases.len(), 3);
        assert_eq!(cases[0].name, "first");
        assert_eq!(cases[0].vars, serde_json::json!({"question": "Hi"}).as_object().unwrap().clone());
        assert_eq!(cases[0].expected, Some(Value::from("Hello")));
        assert_eq!(cases[0].tags, ["a", "b", "csv"]);
        assert!(cases[0].from_csv);
        assert_eq!(cases[1].name, "a.csv:3");
        assert_eq!(cases[1].expected, None);
        assert_eq!(cases[1].vars["n"], "3");
        let n_at = &cases[1].var_at["n"];
        assert_eq!((n_at.line, n_at.column), (Some(3), Some(8)));
        assert_eq!(cases[2].name, "b.jsonl:1");
        assert_eq!(cases[2].expected, Some(serde_json::json!({"k": 1})));
        assert_eq!(cases[2].tags, ["j"]);
        assert!(!cases[2].from_csv);
        assert_eq!(cases[2].at.to_string(), format!("{}/b.jsonl:1", d.display()));
    }

    #[test]
    fn names_are_unique_across_the_file() {
        let d = dir("unique");
        std::fs::write(d.join("a.jsonl"), "{\"name\": \"hi\"}\n").unwrap();
        let eval = eval_in(&d, "prompt: p.prompty\ncases:\n  - name: hi\ndatasets: [a.jsonl]\n");
        let e = eval.cases().unwrap_err();
        assert_eq!(
            messages(&e, &d),
            ["a.jsonl:1: the case name `hi` is used twice: here and at t.eval.yaml:3:5; give each case a name of its own"]
        );
    }

    #[test]
    fn paths_are_confined_and_must_exist() {
        let d = dir("confine");
        let eval = eval_in(&d, "prompt: p.prompty\ndatasets:\n  - ../outside.jsonl\n  - missing.csv\n");
        let e = eval.cases().unwrap_err();
        let m = messages(&e, &d);
        assert_eq!(
            m[0],
            "t.eval.yaml:3:5: the dataset `../outside.jsonl` lies outside the eval file's folder: move it into that \
             folder (or a folder below it) and name it by its relative path"
        );
        assert_eq!(
            m[1],
            format!(
                "t.eval.yaml:4:5: the dataset `missing.csv` does not exist (paths are relative to the eval file's folder `{}`)",
                d.display()
            )
        );
    }

    #[test]
    fn too_many_cases_is_an_error() {
        let d = dir("many");
        let mut text = String::new();
        for i in 0..=MAX_CASES {
            text.push_str(&format!("{{\"name\": \"c{i}\"}}\n"));
        }
        std::fs::write(d.join("big.jsonl"), text).unwrap();
        let eval = eval_in(&d, "prompt: p.prompty\ndatasets: [big.jsonl]\n");
        let e = eval.cases().unwrap_err();
        assert_eq!(
            messages(&e, &d),
            [format!("big.jsonl:{}: more than {MAX_CASES} cases: split the eval file into several", MAX_CASES + 1)]
        );
    }

    #[test]
    fn coerce_leaves_what_does_not_convert() {
        let inputs: Vec<Property> = serde_json::from_value(serde_json::json!([
            {"name": "n", "kind": "integer"}, {"name": "o", "kind": "object"}, {"name": "s", "kind": "string"}
        ]))
        .unwrap();
        let mut vars = serde_json::json!({"n": "4.5", "o": "{\"a\": 1}", "s": "7", "other": "1"});
        coerce_vars(vars.as_object_mut().unwrap(), &inputs);
        assert_eq!(vars, serde_json::json!({"n": "4.5", "o": {"a": 1}, "s": "7", "other": "1"}));
    }
}
