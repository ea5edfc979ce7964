//! Static analysis of a prompt's template: syntax errors, and the top-level variables it
//! reads, with the place of the first use of each, for the `jinja2` renderer (minijinja, with the
//! runtime's syntax configuration) and the `mustache` renderer (a scan of its tags).

use minijinja::machinery::ast;
use std::collections::{BTreeMap, HashMap};

/// A problem found in a template, placed in the template text (1-based line and column).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TemplateError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// What a template reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Variables {
    /// Names read at the top level (outside any mustache section), each with the 1-based line and
    /// column of its first use: they must be declared inputs.
    pub required: BTreeMap<String, (usize, usize)>,
    /// Every root name the template mentions anywhere (section names and names inside sections
    /// included): a declared input outside this set is never used.
    pub mentioned: std::collections::BTreeSet<String>,
    /// Filters and tests the runtime's environment does not have (jinja only).
    pub unknown: Vec<UnknownName>,
    /// Root names the template tests with `is defined`, `is undefined` or `is none` (outside any
    /// local binding), each with the place of the first such test and the test's name: reading
    /// them is guarded, so they need not be inputs.
    pub guarded: BTreeMap<String, ((usize, usize), String)>,
    /// Attribute and string-subscript reads on values that come from a root name (jinja only).
    pub accesses: Vec<Access>,
    /// Every name the template reads or calls, in the order met, with its byte offset in the
    /// template (root names outside local bindings, properties, filters and tests).
    pub uses: Vec<Use>,
}

/// What a name in a template stands for.
///
/// ```
/// use prompty_core::analysis::{outline, NameKind};
/// let o = outline("{{ user.name | upper }}", "jinja2");
/// let kinds: Vec<&NameKind> = o.names.iter().map(|n| &n.kind).collect();
/// assert_eq!(kinds, [&NameKind::Filter, &NameKind::Property { root: "user".into() }, &NameKind::Input]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum NameKind {
    /// A root name (outside every local binding): an input.
    Input,
    /// A property read on a value that comes from the input `root` (`user.name`, `item["id"]`).
    Property {
        /// The input the value comes from.
        root: String,
    },
    /// A Jinja filter (`| upper`).
    Filter,
    /// A Jinja test (`is defined`).
    Test,
}

/// A name in a template and what it is (see [`Variables::uses`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Use {
    /// What the name stands for.
    pub kind: NameKind,
    /// The name as written.
    pub name: String,
    /// Its first byte in the template.
    pub offset: usize,
}

/// A filter or test name the runtime does not know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UnknownName {
    /// `filter` or `test`.
    pub what: &'static str,
    /// The name as written.
    pub name: String,
    /// 1-based line and column of the name.
    pub at: (usize, usize),
    /// ` (did you mean `upper`?)` or nothing.
    pub hint: String,
}

/// Names other template languages use for a filter or test of the runtime (Liquid, Twig, Go
/// templates, Python), suggested when no known name is within 2 edits.
const ALIASES: [(&str, &str); 10] = [
    ("upcase", "upper"),
    ("uppercase", "upper"),
    ("downcase", "lower"),
    ("lowercase", "lower"),
    ("strip", "trim"),
    ("size", "length"),
    ("len", "length"),
    ("capitalise", "capitalize"),
    ("titlecase", "title"),
    ("is_defined", "defined"),
];

/// One step from a root name to a value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Step {
    /// `.name` or `["name"]`.
    Field(String),
    /// An element of a sequence (a loop variable, or a non-string subscript).
    Element,
}

/// `base.name` (or `base["name"]`) where `base` is the root name `root` followed by `steps`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Access {
    /// The root (top-level) name the base comes from.
    pub root: String,
    /// The steps from the root to the base.
    pub steps: Vec<Step>,
    /// The property read.
    pub name: String,
    /// The base as written in the template (`user`, `item`, `u.address`).
    pub shown: String,
    /// 1-based line and column of the property name (of the string literal for a subscript).
    pub at: (usize, usize),
}

/// Analyzes a template written for `format` (`jinja2`, `jinja`, `nunjucks` or `mustache`).
/// `None` for other renderers: a custom renderer's syntax is unknown.
pub(crate) fn analyze(format: &str, source: &str) -> Option<Result<Variables, TemplateError>> {
    if let Some(dialect) = crate::jinja::Dialect::of(format) {
        return Some(jinja(dialect, source));
    }
    match format {
        "mustache" => Some(mustache(source)),
        _ => None,
    }
}

/// The roles a line of the body can switch to (`system:`); a misspelt marker is suggested one.
const ROLES: [&str; 4] = ["system", "user", "assistant", "developer"];

/// A body line that looks like a role marker with a misspelt role (`systen:`, `usr:`): the line
/// and column of the word, the word and the closest role. The line has the shape the runtime's
/// parser reads as a marker (`ws* ('#' ws*)? word ('[' … ']')? ws* ':' ws*`), with a word of
/// letters within 2 edits of a role (1 for the short `user`, so `uses:` warns but `User ID:` and
/// `nested:` do not) that is not a role, not `tool` (which the parser reserves) and not a plural
/// (`Users:`, `Tools:` are headings).
pub(crate) fn misspelt_role_markers(source: &str) -> Vec<((usize, usize), String, &'static str)> {
    let mut found = Vec::new();
    for (i, line) in source.split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let s = line.trim_start();
        let s = s.strip_prefix('#').unwrap_or(s).trim_start();
        let word_len = s.bytes().take_while(u8::is_ascii_alphabetic).count();
        let (word, rest) = s.split_at(word_len);
        if word.is_empty() {
            continue;
        }
        let rest = match rest.strip_prefix('[') {
            Some(inner) => match inner.find(']') {
                Some(end) => &inner[end + 1..],
                None => continue,
            },
            None => rest,
        };
        if rest.trim_start().strip_prefix(':').is_none_or(|after| !after.trim().is_empty()) {
            continue;
        }
        let lower = word.to_ascii_lowercase();
        let singular = lower.strip_suffix('s').unwrap_or(&lower);
        if [lower.as_str(), singular].iter().any(|w| ROLES.contains(w) || *w == "tool") {
            continue;
        }
        let closest = ROLES
            .iter()
            .map(|r| (super::suggest::distance(&lower, r), *r))
            .filter(|(d, r)| *d <= if r.len() <= 4 { 1 } else { 2 })
            .min_by_key(|(d, _)| *d);
        if let Some((_, role)) = closest {
            let column = line[..line.len() - s.len()].chars().count() + 1;
            found.push(((i + 1, column), word.to_owned(), role));
        }
    }
    found
}

pub(crate) use crate::mustache::line_column;

fn jinja(dialect: crate::jinja::Dialect, original: &str) -> Result<Variables, TemplateError> {
    // The same bound the runtime applies: minijinja's parser recurses once per nested operator.
    if let Err((line, message)) = crate::jinja::check_source(original) {
        return Err(TemplateError { line, column: 1, message });
    }
    // What the runtime compiles: the dialect's spellings translated (lines unchanged; places are
    // mapped back to the original text).
    let translated = crate::jinja::translate(dialect, original);
    let source: &str = &translated.text;
    let original_offset = |offset: usize| translated.original_offset(offset);
    let at = |offset: usize| line_column(original, original_offset(offset));
    let env = crate::jinja::environment_for(dialect);
    let template = env.template_from_str(source).map_err(|e| {
        // minijinja reports the line (the byte range needs its `debug` feature): point at the
        // line's first tag, else its first character.
        let line = e.line().unwrap_or(1);
        let text = source.lines().nth(line - 1).unwrap_or("");
        let offset = find_open(text, 0).unwrap_or_else(|| text.len() - text.trim_start().len());
        let column = text[..offset].chars().count() + 1;
        let mut message = e.kind().to_string();
        if let Some(detail) = e.detail() {
            message.push_str(": ");
            message.push_str(detail);
        }
        TemplateError { line, column, message }
    })?;
    let globals: Vec<&str> = env.globals().map(|(name, _)| name).collect();
    let mut vars = Variables::default();
    let mut names: Vec<String> = template.undeclared_variables(false).into_iter().collect();
    names.sort();
    for name in names {
        if globals.contains(&name.as_str()) {
            continue;
        }
        let at = first_use_jinja(source, &name).map_or((1, 1), at);
        vars.mentioned.insert(name.clone());
        vars.required.insert(name, at);
    }
    // minijinja leaves `self` out of its undeclared variables, yet an input named `self` renders:
    // a root use of it counts as a use (it is not required: minijinja gives `self` a meaning of
    // its own in templates with blocks).
    if first_use_jinja(source, "self").is_some() {
        vars.mentioned.insert("self".to_owned());
    }
    // The compile above accepted the template, so the parser does too.
    if let Ok(ast) = minijinja::machinery::parse(source, "<template>", env.syntax().clone()) {
        let mut walker = Walker {
            source,
            place: &at,
            original: &original_offset,
            globals: &globals,
            dialect,
            env: &env,
            scopes: Vec::new(),
            vars: &mut vars,
            guarded_reads: Vec::new(),
        };
        walker.stmt(&ast);
        let guarded_reads = std::mem::take(&mut walker.guarded_reads);
        vars.accesses.retain(|a| {
            !guarded_reads.iter().any(|(root, steps, name)| *root == a.root && *steps == a.steps && *name == a.name)
        });
    }
    Ok(vars)
}

/// Where a value comes from: a root name and the steps from it.
type Origin = (String, Vec<Step>);

/// Walks a template's syntax tree, tracking which local names stand for values that come from
/// root names (`{% for item in items %}`, `{% set u = user %}`, `{% with u = user %}`).
struct Walker<'s, 'v> {
    source: &'s str,
    /// The line and column in the original template of an offset in `source`.
    place: &'v dyn Fn(usize) -> (usize, usize),
    /// The offset in the original template of an offset in `source`.
    original: &'v dyn Fn(usize) -> usize,
    /// The environment's global names (`range`, `namespace`, ...): no inputs.
    globals: &'v [&'v str],
    dialect: crate::jinja::Dialect,
    env: &'v minijinja::Environment<'static>,
    /// Local names, innermost scope last; `None` for a local whose origin is unknown.
    scopes: Vec<HashMap<&'s str, Option<Origin>>>,
    vars: &'v mut Variables,
    /// Properties tested with `is defined`/`is undefined`/`is none`: reading them is guarded.
    guarded_reads: Vec<(String, Vec<Step>, String)>,
}

impl<'s> Walker<'s, '_> {
    fn place(&self, offset: u32) -> (usize, usize) {
        (self.place)(offset as usize)
    }

    /// Records a use of `name`, written at or after `from` in `source`.
    fn record(&mut self, kind: NameKind, name: &str, from: u32) {
        let from = from as usize;
        let Some(i) = self.source.get(from..).and_then(|rest| rest.find(name)) else { return };
        let offset = (self.original)(from + i);
        self.vars.uses.push(Use { kind, name: name.to_owned(), offset });
    }

    fn is_local(&self, name: &str) -> bool {
        self.scopes.iter().any(|s| s.contains_key(name))
    }

    fn bind(&mut self, target: &ast::Expr<'s>, origin: Option<Origin>) {
        if self.scopes.is_empty() {
            self.scopes.push(HashMap::new());
        }
        match target {
            ast::Expr::Var(v) => {
                if let Some(scope) = self.scopes.last_mut() {
                    scope.insert(v.id, origin);
                }
            }
            ast::Expr::Tuple(t) => {
                for item in &t.items {
                    self.bind(item, None);
                }
            }
            ast::Expr::List(l) => {
                for item in &l.items {
                    self.bind(item, None);
                }
            }
            _ => {}
        }
    }

    /// The origin of the value `expr` evaluates to, when it is a root name or a path from one.
    fn origin(&self, expr: &ast::Expr<'s>) -> Option<Origin> {
        match expr {
            ast::Expr::Var(v) => match self.scopes.iter().rev().find_map(|s| s.get(v.id)) {
                Some(local) => local.clone(),
                None => Some((v.id.to_owned(), Vec::new())),
            },
            ast::Expr::GetAttr(a) => {
                let (root, mut steps) = self.origin(&a.expr)?;
                steps.push(Step::Field(a.name.to_owned()));
                Some((root, steps))
            }
            ast::Expr::GetItem(g) => {
                let (root, mut steps) = self.origin(&g.expr)?;
                match string_const(&g.subscript_expr) {
                    Some(name) => steps.push(Step::Field(name)),
                    None => steps.push(Step::Element),
                }
                Some((root, steps))
            }
            _ => None,
        }
    }

    fn body(&mut self, stmts: &[ast::Stmt<'s>]) {
        for s in stmts {
            self.stmt(s);
        }
    }

    #[allow(unreachable_patterns)]
    fn stmt(&mut self, stmt: &ast::Stmt<'s>) {
        match stmt {
            ast::Stmt::Template(t) => self.body(&t.children),
            ast::Stmt::EmitExpr(e) => self.expr(&e.expr),
            ast::Stmt::ForLoop(f) => {
                self.expr(&f.iter);
                let element = self.origin(&f.iter).map(|(root, mut steps)| {
                    steps.push(Step::Element);
                    (root, steps)
                });
                self.scopes.push(HashMap::new());
                self.bind(&f.target, element);
                if let Some(scope) = self.scopes.last_mut() {
                    scope.insert("loop", None);
                }
                if let Some(filter) = &f.filter_expr {
                    self.expr(filter);
                }
                self.body(&f.body);
                self.scopes.pop();
                self.body(&f.else_body);
            }
            ast::Stmt::IfCond(i) => {
                self.expr(&i.expr);
                self.body(&i.true_body);
                self.body(&i.false_body);
            }
            ast::Stmt::WithBlock(w) => {
                self.scopes.push(HashMap::new());
                for (target, value) in &w.assignments {
                    self.expr(value);
                    let origin = self.origin(value);
                    self.bind(target, origin);
                }
                self.body(&w.body);
                self.scopes.pop();
            }
            ast::Stmt::Set(s) => {
                self.expr(&s.expr);
                match &s.target {
                    // `{% set ns.x = ... %}` writes into a namespace: its base is read.
                    ast::Expr::GetAttr(a) => self.expr(&a.expr),
                    target => {
                        let origin = self.origin(&s.expr);
                        self.bind(target, origin);
                    }
                }
            }
            ast::Stmt::SetBlock(s) => {
                if let Some(filter) = &s.filter {
                    self.expr(filter);
                }
                self.body(&s.body);
                self.bind(&s.target, None);
            }
            ast::Stmt::AutoEscape(a) => {
                self.expr(&a.enabled);
                self.body(&a.body);
            }
            ast::Stmt::FilterBlock(f) => {
                self.expr(&f.filter);
                self.body(&f.body);
            }
            ast::Stmt::Do(d) => self.call(&d.call),
            _ => {}
        }
    }

    fn call(&mut self, call: &ast::Call<'s>) {
        match &call.expr {
            // A method call (`d.items()`): the method is no property.
            ast::Expr::GetAttr(a) => self.expr(&a.expr),
            callee => self.expr(callee),
        }
        self.args(&call.args);
    }

    fn args(&mut self, args: &[ast::CallArg<'s>]) {
        for arg in args {
            match arg {
                ast::CallArg::Pos(e)
                | ast::CallArg::Kwarg(_, e)
                | ast::CallArg::PosSplat(e)
                | ast::CallArg::KwargSplat(e) => self.expr(e),
            }
        }
    }

    fn check_name(&mut self, what: &'static str, name: &str, offset: u32) {
        let (known, source): (&'static [&'static str], String) = match what {
            "filter" => (crate::jinja::FILTERS, "{{ name is filter }}".to_owned()),
            _ => (crate::jinja::TESTS, "{{ name is test }}".to_owned()),
        };
        let dialect_filters = match (what, self.dialect) {
            ("filter", crate::jinja::Dialect::Nunjucks) => crate::jinja::NUNJUCKS_FILTERS,
            _ => &[],
        };
        let kind = if what == "filter" { NameKind::Filter } else { NameKind::Test };
        self.record(kind, name, offset);
        if known.contains(&name) || dialect_filters.contains(&name) {
            return;
        }
        // The environment decides; the list only gives suggestions.
        let known_here = self
            .env
            .render_str(&source, minijinja::context! { name })
            .is_ok_and(|out| out.eq_ignore_ascii_case("true"));
        if !known_here {
            let at = self.place(offset);
            let mut hint = super::suggest::did_you_mean(name, known.iter().copied());
            if hint.is_empty() {
                if let Some((_, to)) = ALIASES.iter().find(|(from, to)| *from == name && known.contains(to)) {
                    hint = format!(" (did you mean `{to}`?)");
                }
            }
            self.vars.unknown.push(UnknownName { what, name: name.to_owned(), at, hint });
        }
    }

    fn access(&mut self, base: &ast::Expr<'s>, name: &str, offset: u32) {
        if let Some((root, steps)) = self.origin(base) {
            self.record(NameKind::Property { root: root.clone() }, name, offset);
            let span = base.span();
            let shown = self.source[span.start_offset as usize..span.end_offset as usize].to_owned();
            let at = self.place(offset);
            self.vars.accesses.push(Access { root, steps, name: name.to_owned(), shown, at });
        }
    }

    fn expr(&mut self, expr: &ast::Expr<'s>) {
        match expr {
            ast::Expr::Var(v) => {
                if !self.is_local(v.id) && !self.globals.contains(&v.id) {
                    self.record(NameKind::Input, v.id, v.span().start_offset);
                }
            }
            ast::Expr::Const(_) => {}
            ast::Expr::Slice(s) => {
                // minijinja's `undeclared_variables` leaves out the value sliced (`items[:n]`):
                // a root name read only there is read all the same.
                if let ast::Expr::Var(v) = &s.expr {
                    if !self.is_local(v.id) && !self.globals.contains(&v.id) && !self.vars.required.contains_key(v.id) {
                        let at = self.place(v.span().start_offset);
                        self.vars.mentioned.insert(v.id.to_owned());
                        self.vars.required.insert(v.id.to_owned(), at);
                    }
                }
                self.expr(&s.expr);
                for e in [&s.start, &s.stop, &s.step].into_iter().flatten() {
                    self.expr(e);
                }
            }
            ast::Expr::UnaryOp(u) => self.expr(&u.expr),
            ast::Expr::BinOp(b) => {
                self.expr(&b.left);
                self.expr(&b.right);
            }
            ast::Expr::Compare(c) => {
                self.expr(&c.expr);
                for op in &c.ops {
                    self.expr(&op.expr);
                }
            }
            ast::Expr::IfExpr(i) => {
                self.expr(&i.test_expr);
                self.expr(&i.true_expr);
                if let Some(e) = &i.false_expr {
                    self.expr(e);
                }
            }
            ast::Expr::Filter(f) => {
                self.check_name("filter", f.name, f.span().start_offset);
                if let Some(e) = &f.expr {
                    self.expr(e);
                }
                self.args(&f.args);
            }
            ast::Expr::Test(t) => {
                self.check_name("test", t.name, t.span().start_offset);
                if matches!(t.name, "defined" | "undefined" | "none") {
                    match &t.expr {
                        ast::Expr::Var(v) if !self.is_local(v.id) => {
                            let at = self.place(v.span().start_offset);
                            self.vars.guarded.entry(v.id.to_owned()).or_insert((at, t.name.to_owned()));
                        }
                        read @ (ast::Expr::GetAttr(_) | ast::Expr::GetItem(_)) => {
                            if let Some((root, mut steps)) = self.origin(read) {
                                if let Some(Step::Field(name)) = steps.pop() {
                                    self.guarded_reads.push((root, steps, name));
                                }
                            }
                        }
                        _ => {}
                    }
                }
                self.expr(&t.expr);
                self.args(&t.args);
            }
            ast::Expr::GetAttr(a) => {
                let end = a.span().end_offset;
                self.access(&a.expr, a.name, end.saturating_sub(a.name.len() as u32));
                self.expr(&a.expr);
            }
            ast::Expr::GetItem(g) => {
                if let Some(name) = string_const(&g.subscript_expr) {
                    self.access(&g.expr, &name, g.subscript_expr.span().start_offset);
                }
                self.expr(&g.expr);
                self.expr(&g.subscript_expr);
            }
            ast::Expr::Call(c) => self.call(c),
            ast::Expr::List(l) => {
                for e in &l.items {
                    self.expr(e);
                }
            }
            ast::Expr::Tuple(t) => {
                for e in &t.items {
                    self.expr(e);
                }
            }
            ast::Expr::Map(m) => {
                for e in m.keys.iter().chain(&m.values) {
                    self.expr(e);
                }
            }
        }
    }
}

fn string_const(expr: &ast::Expr<'_>) -> Option<String> {
    match expr {
        ast::Expr::Const(c) => c.value.as_str().map(str::to_owned),
        _ => None,
    }
}

/// The byte offset of the first use of `name` as a root variable inside a `{{ }}` or `{% %}` tag.
fn first_use_jinja(source: &str, name: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(open) = find_open(source, from) {
        let close_marker = if source[open..].starts_with("{{") { "}}" } else { "%}" };
        let body_start = open + 2;
        let end = source[body_start..].find(close_marker).map_or(source.len(), |i| body_start + i);
        if let Some(i) = find_word(&source[body_start..end], name) {
            return Some(body_start + i);
        }
        from = end;
    }
    None
}

fn find_open(source: &str, from: usize) -> Option<usize> {
    let a = source[from..].find("{{").map(|i| from + i);
    let b = source[from..].find("{%").map(|i| from + i);
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The first occurrence of `word` in `text` as a whole identifier that is not an attribute
/// (`x.word`) and not inside a string literal.
fn find_word(text: &str, word: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    // A byte of a letter that is not ASCII counts as part of an identifier.
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || !b.is_ascii();
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'"' || b == b'\'' => quote = Some(b),
            None => {
                if bytes[i..].starts_with(word.as_bytes())
                    && (i == 0 || (!is_ident(bytes[i - 1]) && bytes[i - 1] != b'.'))
                    && bytes.get(i + word.len()).is_none_or(|&n| !is_ident(n))
                {
                    return Some(i);
                }
            }
        }
        i += 1;
    }
    None
}

/// Reads a mustache template with the parser the runtime's mustache renderer renders
/// ([`crate::mustache::parse`]): its errors, and the root names of its tags (names outside every
/// section are required).
fn mustache(source: &str) -> Result<Variables, TemplateError> {
    use crate::mustache::{parse, Node};
    let nodes = parse(source).map_err(|e| TemplateError { line: e.line, column: e.column, message: e.message })?;
    let mut vars = Variables::default();
    // The ends of the sections the walk is inside.
    let mut open: Vec<usize> = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        while open.last().is_some_and(|end| *end <= i) {
            open.pop();
        }
        let (name, at) = match node {
            Node::Text(_) => continue,
            Node::Interpolate { name, at } => (*name, *at),
            Node::Section { name, at, .. } => (*name, *at),
        };
        if name != "." {
            let root = name.split('.').next().unwrap_or(name).to_owned();
            if let Some(i) = source.get(at..).and_then(|rest| rest.find(name)) {
                vars.uses.push(Use { kind: NameKind::Input, name: root.clone(), offset: at + i });
            }
            vars.mentioned.insert(root.clone());
            if open.is_empty() {
                vars.required.entry(root).or_insert_with(|| line_column(source, at));
            }
        }
        if let Node::Section { end, .. } = node {
            open.push(*end);
        }
    }
    Ok(vars)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_named_self_counts_as_used() {
        let vars = jinja(crate::jinja::Dialect::Jinja, "{{ self }} and {{ other }}").unwrap();
        assert!(vars.mentioned.contains("self"), "{vars:?}");
        assert!(!vars.required.contains_key("self"));
        assert!(!jinja(crate::jinja::Dialect::Jinja, "{{ myself }}").unwrap().mentioned.contains("self"));
    }

    fn names(v: &Variables) -> Vec<(&str, (usize, usize))> {
        v.required.iter().map(|(k, v)| (k.as_str(), *v)).collect()
    }

    #[test]
    fn jinja_variables_and_their_first_use() {
        let src =
            "system:\nHi {{ name }}.\n{% for item in items %}{{ item.title | upper }} {{ loop.index }}{% endfor %}\n\
                   {{ range(3) | join(',') }} {{ 'name' }} {{ user.name }}";
        let v = analyze("jinja2", src).unwrap().unwrap();
        assert_eq!(names(&v), [("items", (3, 16)), ("name", (2, 7)), ("user", (4, 44))]);
    }

    /// A value read only through a slice is read (minijinja's own list of names misses it).
    #[test]
    fn sliced_values_are_read() {
        let src = "user:\n{% for x in items[:n] %}{{ x }}{% endfor %}\n{{ other[1:] }} {{ items[::2] }}";
        let v = analyze("jinja2", src).unwrap().unwrap();
        assert_eq!(names(&v), [("items", (2, 13)), ("n", (2, 20)), ("other", (3, 4))]);
        assert!(v.mentioned.contains("items") && v.mentioned.contains("other"));
        let v = analyze("jinja2", "{% for x in xs %}{{ x[1:] }}{% endfor %}").unwrap().unwrap();
        assert_eq!(names(&v), [("xs", (1, 13))], "a local name sliced is no input");
    }

    /// A word is looked for byte by byte: text that is not ASCII before it (here in a raw block,
    /// whose `{{ }}` is text) is skipped, never sliced inside a character.
    #[test]
    fn first_uses_after_text_that_is_not_ascii() {
        let src = "user:\n{% raw %}{{ é }}{% endraw %}{{ x }}";
        let v = analyze("jinja2", src).unwrap().unwrap();
        assert_eq!(v.required.keys().collect::<Vec<_>>(), ["x"]);
        assert_eq!(find_word(" é x", "x"), Some(4));
        assert_eq!(find_word("éx ñx", "x"), None);
    }

    #[test]
    fn jinja_syntax_errors_are_placed() {
        let e = analyze("jinja2", "line one\n{% if x %}\nno end").unwrap().unwrap_err();
        assert!(e.message.starts_with("syntax error"), "{e:?}");
        assert_eq!(e.line, 2, "{e:?}");
        let e = analyze("jinja2", "ok\n  {{ a + }}").unwrap().unwrap_err();
        assert_eq!((e.line, e.column), (2, 3), "{e:?}");
    }

    #[test]
    fn jinja_expressions_nested_past_the_runtime_bound_are_errors_not_stack_overflows() {
        let deep = format!("user:\n{{{{ q{} }}}}", "|trim".repeat(100_000));
        let err = analyze("jinja2", &deep).expect("a known format").unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.message.contains("200"), "{}", err.message);
    }

    /// `nunjucks` templates are checked with the nunjucks spellings, and places are those of the
    /// original text.
    #[test]
    fn nunjucks_templates_are_analyzed() {
        let src =
            "{% for k, v in obj %}{{ k }}{{ extra }}{% endfor %}\n{% if a %}{% elseif b | dump %}{{ null }}{% endif %}";
        let v = analyze("nunjucks", src).unwrap().unwrap();
        assert_eq!(v.required.keys().collect::<Vec<_>>(), ["a", "b", "extra", "obj"]);
        assert_eq!(v.required["extra"], (1, 32));
        assert_eq!(v.required["b"], (2, 21));
        assert!(v.unknown.is_empty(), "{:?}", v.unknown);
        // The same text is no `jinja2` template, and `dump` is no jinja2 filter.
        assert!(analyze("jinja2", src).unwrap().is_err());
        let v = analyze("jinja2", "{{ x | dump }}").unwrap().unwrap();
        assert_eq!(v.unknown.len(), 1);
        let e = analyze("nunjucks", "ok\n{% for k, v in %}").unwrap().unwrap_err();
        assert_eq!(e.line, 2);
    }

    #[test]
    fn mustache_top_level_names_only_are_required() {
        let src = "{{! a comment }}\nHi {{ name }}!\n{{#items}}{{title}} {{.}}{{/items}}\n{{^empty}}none{{/empty}}\n{{{raw}}} {{&amp}} {{a.b}}";
        let v = analyze("mustache", src).unwrap().unwrap();
        assert_eq!(
            names(&v),
            [("a", (5, 20)), ("amp", (5, 11)), ("empty", (4, 1)), ("items", (3, 1)), ("name", (2, 4)), ("raw", (5, 1))]
        );
        assert!(v.mentioned.contains("title"));
    }

    #[test]
    fn mustache_delimiters_and_errors() {
        let v = analyze("mustache", "{{=<% %>=}}<% x %> {{ y }}").unwrap().unwrap();
        assert_eq!(names(&v), [("x", (1, 12))]);
        let e = analyze("mustache", "a\n{{#s}}b").unwrap().unwrap_err();
        assert_eq!(
            (e.line, e.column, e.message.as_str()),
            (2, 1, "unclosed section \"s\": opened here but never closed")
        );
        let e = analyze("mustache", "{{#a}}{{/b}}").unwrap().unwrap_err();
        assert_eq!(e.column, 7);
        assert!(analyze("mustache", "{{ x").unwrap().is_err());
        assert!(analyze("mustache", "{{> p}}").unwrap().is_err());
        assert!(analyze("custom", "{{ x").is_none());
    }

    /// Diagnostics of a prompt (errors and warnings) through the whole typed analysis.
    fn diagnostics(name: &str, text: &str) -> Vec<(crate::analysis::Severity, String)> {
        let dir = std::env::temp_dir().join(format!("prompty-core-template-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        crate::analysis::check_file(&path, name, &crate::LoadOptions::new())
            .diagnostics
            .into_iter()
            .map(|d| (d.severity, d.to_string()))
            .collect()
    }

    fn error_texts(name: &str, text: &str) -> Vec<String> {
        diagnostics(name, text)
            .into_iter()
            .filter(|(s, _)| *s == crate::analysis::Severity::Error)
            .map(|(_, m)| m)
            .collect()
    }

    #[test]
    fn unknown_filters_and_tests_are_errors_with_a_suggestion() {
        let text =
            "---\ninputs: [name, x]\n---\nuser:\n{{ name | upcase }}\n{% if x is frobbed %}{% endif %}{{ x|lenght }}";
        assert_eq!(
            error_texts("f.prompty", text),
            [
                "f.prompty:5:11: unknown Jinja filter `upcase` (did you mean `upper`?)",
                "f.prompty:6:12: unknown Jinja test `frobbed`",
                "f.prompty:6:38: unknown Jinja filter `lenght` (did you mean `length`?)",
            ]
        );
        // Every known filter and test, in filter blocks, `set` blocks and negated tests too.
        let text = "---\ninputs: [x]\n---\n{% filter upper %}{{ x | default('a') | d('b') | trim | join(',') | tojson_missing_is_not_here if false else x }}{% endfilter %}\n\
                    {% if x is not defined or x is none or x is divisibleby(3) or x is startingwith('a') %}{% endif %}\n\
                    {% set y | lower %}Y{% endset %}{{ y is string }}";
        let errors = error_texts("k.prompty", text);
        assert_eq!(errors, ["k.prompty:4:69: unknown Jinja filter `tojson_missing_is_not_here`"]);
    }

    #[test]
    fn defined_guards_accept_undeclared_names_with_a_warning() {
        let text = "---\ninputs: [q]\n---\nuser:\n{{ q }}{% if extra is defined %}{{ extra }}{% endif %}\n{% if other is none %}-{% endif %}{% if u is undefined %}{% endif %}";
        let d = diagnostics("g.prompty", text);
        use crate::analysis::Severity::Warning;
        assert_eq!(
            d,
            [
                (Warning, "g.prompty:5:14: the template tests `extra is defined`, but no input declares `extra`: it is never an input".to_owned()),
                (Warning, "g.prompty:6:7: the template tests `other is none`, but no input declares `other`: it is never an input".to_owned()),
                (Warning, "g.prompty:6:41: the template tests `u is undefined`, but no input declares `u`: it is never an input".to_owned()),
            ]
        );
        // A local of the same name is no guard of the top-level name.
        let text = "---\ninputs: [q]\n---\n{% for z in q %}{% if z is defined %}{% endif %}{% endfor %}{{ zz }}";
        assert_eq!(
            error_texts("h.prompty", text),
            ["h.prompty:4:64: the template uses `zz`, which no input declares (did you mean `q`?)"]
        );
    }

    const TYPED: &str = "---\ninputs:\n  user:\n    kind: object\n    properties:\n      name: {kind: string}\n      email: {kind: string}\n      address:\n        kind: object\n        properties:\n          city: {kind: string}\n  items:\n    kind: array\n    items:\n      kind: object\n      properties:\n        title: {kind: string}\n        tags: {kind: array, items: {kind: string}}\n  meta:\n    kind: object\n  rows:\n    kind: array\n---\n";

    #[test]
    fn property_typos_on_typed_inputs_are_errors() {
        let body = "{{ user.nmae }}\n{% for item in items %}{{ item.titel }}{% endfor %}\n{% set u = user %}{{ u.nmae }}{% with w = user.address %}{{ w.cty }}{% endwith %}\n{{ user[\"emial\"] }}{{ meta.anything }}{{ rows[0].x }}";
        let errors = error_texts("p.prompty", &format!("{TYPED}{body}"));
        assert_eq!(
            errors,
            [
                "p.prompty:24:9: `user` has no property `nmae` (did you mean `name`?): its properties are name, email, address",
                "p.prompty:25:32: `item` has no property `titel` (did you mean `title`?): its properties are title, tags",
                "p.prompty:26:24: `u` has no property `nmae` (did you mean `name`?): its properties are name, email, address",
                "p.prompty:26:63: `w` has no property `cty` (did you mean `city`?): its properties are city",
                "p.prompty:27:9: `user` has no property `emial` (did you mean `email`?): its properties are name, email, address",
            ]
        );
    }

    #[test]
    fn valid_templates_over_typed_inputs_pass() {
        for body in [
            "{{ user.name }} {{ user.address.city | upper }} {{ user['email'] | default('-') }}",
            "{% for item in items %}{{ loop.index }}. {{ item.title | title }}{% for t in item.tags %}{{ t }}{{ loop.first }}{{ loop.parent }}{% endfor %}{% endfor %}",
            "{% for k, v in user | items %}{{ k }}={{ v }}{% endfor %}{% for k, v in user.items() %}{{ k }}{% endfor %}{{ user.keys() | list }}",
            "{{ meta.whatever.deep }} {{ rows[0].x }} {% for r in rows %}{{ r.anything }}{% endfor %}",
            "{% if user.nickname is defined %}{{ user.nickname }}{% endif %}",
            "{% set ns = namespace(n=0) %}{% for item in items %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.n }}",
            "{% for item in items if item.title %}{{ item.title }}{% else %}none{% endfor %}",
            "{% set user = {'x': 1} %}{{ user.x }}{{ items | map(attribute='title') | join(', ') }}",
            "{% with u = user %}{{ u.address.city }}{% endwith %}{{ (items | first).title }}",
        ] {
            let d = diagnostics("v.prompty", &format!("{TYPED}{body}"));
            let errors: Vec<_> = d.iter().filter(|(s, _)| *s == crate::analysis::Severity::Error).collect();
            assert!(errors.is_empty(), "{body}: {errors:?}");
        }
    }

    #[test]
    fn misspelt_role_markers_are_found() {
        let src = "systen:\nHi\n  # asistant:\nusr:\nuser:\nUser[name=Bob]:\nSystem :\ntodo:\nNote: this\nassitant[x=1]:\ntool:\nTools:\nUsers:\nSystems :\ntoo:\nused:\nUser ID:\nnested:\n";
        let markers = misspelt_role_markers(src);
        let found: Vec<((usize, usize), &str, &str)> = markers.iter().map(|(at, w, r)| (*at, w.as_str(), *r)).collect();
        assert_eq!(
            found,
            [
                ((1, 1), "systen", "system"),
                ((3, 5), "asistant", "assistant"),
                ((4, 1), "usr", "user"),
                ((10, 1), "assitant", "assistant"),
                ((16, 1), "used", "user"),
            ]
        );
        let d = diagnostics("r.prompty", "---\ninputs: [q]\n---\nsystem:\nHi\nusr:\n{{ q }}");
        assert_eq!(
            d,
            [(
                crate::analysis::Severity::Warning,
                "r.prompty:6:1: the line `usr:` is not a role marker (did you mean `user`?)".to_owned()
            )]
        );
    }

    /// The messages the UI cases pin (`tests/ui/*.stderr`), straight from the analysis.
    #[test]
    fn ui_prompts_give_the_pinned_messages() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/ui/prompts");
        for (file, expected) in [
            ("unknown_filter", "11:17: unknown Jinja filter `upcase` (did you mean `upper`?)"),
            (
                "property_typo",
                "18:34: `item` has no property `titel` (did you mean `title`?): its properties are title",
            ),
            (
                "guarded_input",
                "8:7: the template tests `context is defined`, but no input declares `context`: it is never an input",
            ),
            ("role_typo", "10:1: the line `usr:` is not a role marker (did you mean `user`?)"),
        ] {
            let display = format!("ui/prompts/{file}.prompty");
            let a =
                crate::analysis::check_file(&dir.join(format!("{file}.prompty")), &display, &crate::LoadOptions::new());
            let messages: Vec<String> = a.diagnostics.iter().map(|d| d.to_string()).collect();
            assert_eq!(messages, [format!("{display}:{expected}")], "{file}");
        }
        let a = crate::analysis::check_file(
            &dir.join("typed_template.prompty"),
            "typed_template.prompty",
            &crate::LoadOptions::new(),
        );
        assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    }
}
