//! Templates rendered without the template engine: the subset most prompts are written in (text,
//! `{{ expression }}`, `{% if %}`/`{% elif %}`/`{% else %}`, `{% for x in list %}` with `loop.index`
//! and friends; variables, attributes, constant subscripts, `not`/`and`/`or`, comparisons, `is
//! defined`/`undefined`/`none`, inline `if`, and the filters `upper`, `lower`, `length`/`count`,
//! `join`, `default`/`d` and `trim`), evaluated straight over the inputs: JSON inputs are read
//! where they are, never turned into template values.
//!
//! Exactness comes first: anything this module does not know to print exactly as minijinja would
//! (a value of an unexpected kind, an attribute of a loop it does not model, a comparison with an
//! undefined value, a render past the step budget) stops the render with [`Unsupported`], and the
//! caller renders the template with the engine instead. Templates outside the subset never get a
//! [`Program`] at all. A test renders generated templates and inputs both ways and compares the
//! text and the value ranges.

use super::sources::Scope;
use super::values::{format_value, json_value, Inputs as Context};
use super::Interp;
use minijinja::machinery::ast::{BinOpKind, CallArg, CompareOpKind, Expr as AstExpr, Stmt, UnaryOpKind};
use minijinja::value::{Value, ValueKind};
use serde_json::{Map, Value as Json};
use std::ops::Range;
use std::sync::Arc;

/// A template of the subset, compiled from minijinja's syntax tree.
#[derive(Debug)]
pub(super) struct Program {
    nodes: Vec<Node>,
    /// The names of the inputs the template reads ([`Expr::Input`] holds an index in it).
    inputs: Vec<Box<str>>,
    /// The names of the environment's globals (`range`, `dict`...): a variable no input holds that
    /// names one is left to the engine.
    globals: Vec<Box<str>>,
    /// Bytes of literal text, to size the output.
    text_len: usize,
}

#[derive(Debug)]
enum Node {
    Text(Box<str>),
    /// `{{ expr }}`, with the source of its value (see [`super::sources`]).
    Emit(Expr, Option<Arc<str>>),
    If {
        test: Expr,
        then: Vec<Node>,
        otherwise: Vec<Node>,
    },
    /// A `for` loop: its body sees the loop's `loop` and item as the two last locals.
    For {
        iter: Expr,
        body: Vec<Node>,
        empty: Vec<Node>,
    },
}

#[derive(Debug)]
enum Expr {
    /// An input, by its index in [`Program::inputs`].
    Input(usize),
    /// A loop's `loop` or item, by its index among the locals of the render.
    Local(usize),
    Const(Value),
    Attr(Box<Expr>, Box<str>),
    Item(Box<Expr>, Value),
    Not(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Compare(Box<Expr>, Vec<(Cmp, Expr)>),
    IfElse(Box<Expr>, Box<Expr>, Option<Box<Expr>>),
    Filter(Filter, Box<Expr>, Vec<Expr>),
    Is(Test, Box<Expr>),
}

#[derive(Debug, Clone, Copy)]
enum Cmp {
    Eq,
    Ne,
    Lt,
    Lte,
    Gt,
    Gte,
}

#[derive(Debug, Clone, Copy)]
enum Filter {
    Upper,
    Lower,
    Length,
    Join,
    Default,
    Trim,
}

#[derive(Debug, Clone, Copy)]
enum Test {
    Defined,
    Undefined,
    None,
}

/// The render needs something this module does not do exactly as the engine: render with the
/// engine instead.
#[derive(Debug)]
pub(super) struct Unsupported;

type Step<T> = std::result::Result<T, Unsupported>;

impl Program {
    /// The program of a template, when it is made only of the subset. `globals` are the names of
    /// the environment's global functions.
    pub(super) fn compile(template: &Stmt<'_>, globals: Vec<Box<str>>) -> Option<Program> {
        let Stmt::Template(t) = template else { return None };
        let mut c = Compiler { locals: Scope::default(), inputs: Vec::new() };
        let nodes = c.body(&t.children)?;
        let text_len = text_len(&nodes);
        Some(Program { nodes, inputs: c.inputs, globals, text_len })
    }

    /// Renders the program with `inputs`: the text, and the byte ranges of it that are values.
    /// `fuel` bounds the steps (a render past it is left to the engine, which reports it) and
    /// `max` the output ([`Outcome::TooLarge`] when passed).
    pub(super) fn render(
        &self,
        inputs: Inputs<'_>,
        fuel: u64,
        max: usize,
    ) -> std::result::Result<(String, Vec<Range<usize>>), Outcome> {
        let mut r = self.start(inputs, fuel, max, None);
        r.nodes(&self.nodes)?;
        Ok((r.out, r.ranges))
    }

    /// [`Program::render`] keeping the source of every value (see [`super::sources`]).
    pub(super) fn render_sourced(
        &self,
        inputs: Inputs<'_>,
        fuel: u64,
        max: usize,
    ) -> std::result::Result<(String, Vec<Interp>), Outcome> {
        let mut r = self.start(inputs, fuel, max, Some(Vec::new()));
        r.nodes(&self.nodes)?;
        let sources = r.sources.unwrap_or_default();
        let interps = r.ranges.into_iter().zip(sources).map(|(range, source)| Interp { range, source }).collect();
        Ok((r.out, interps))
    }

    /// A render of the program; `sources`, when given, gets the source of each value beside its
    /// range.
    #[inline(always)]
    fn start<'a>(
        &'a self,
        inputs: Inputs<'a>,
        fuel: u64,
        max: usize,
        sources: Option<Vec<Option<Arc<str>>>>,
    ) -> Run<'a, 'a> {
        Run {
            program: self,
            inputs,
            // Template values are found by a cheap comparison of tags: only JSON lookups (hashed)
            // are kept.
            found: match inputs {
                Inputs::Json(_) => vec![None; self.inputs.len()],
                Inputs::Values(_) => Vec::new(),
            },
            locals: Vec::new(),
            out: String::with_capacity((self.text_len + self.text_len / 2 + 64).min(max)),
            ranges: Vec::new(),
            sources,
            fuel,
            max,
        }
    }
}

/// Why a render of a [`Program`] did not finish.
#[derive(Debug)]
pub(super) enum Outcome {
    /// The engine must render this one.
    Unsupported,
    /// The output passed its bound.
    TooLarge,
}

impl From<Unsupported> for Outcome {
    fn from(_: Unsupported) -> Self {
        Outcome::Unsupported
    }
}

fn text_len(nodes: &[Node]) -> usize {
    nodes
        .iter()
        .map(|n| match n {
            Node::Text(t) => t.len(),
            Node::Emit(..) => 8,
            Node::If { then, otherwise, .. } => text_len(then).max(text_len(otherwise)),
            Node::For { body, empty, .. } => text_len(body).max(text_len(empty)),
        })
        .sum()
}

/// Turns syntax trees into [`Node`]s, resolving each variable to a loop local or an input.
struct Compiler {
    /// The locals in scope: each enclosing `for` adds its `loop` and its item, with their sources.
    locals: Scope,
    inputs: Vec<Box<str>>,
}

impl Compiler {
    fn body<'s>(&mut self, stmts: &[Stmt<'s>]) -> Option<Vec<Node>> {
        stmts.iter().map(|s| self.node(s)).collect()
    }

    fn node<'s>(&mut self, stmt: &Stmt<'s>) -> Option<Node> {
        Some(match stmt {
            Stmt::EmitRaw(r) => Node::Text(r.raw.into()),
            Stmt::EmitExpr(e) => Node::Emit(self.expr(&e.expr)?, self.locals.source(&e.expr)),
            Stmt::IfCond(i) => Node::If {
                test: self.expr(&i.expr)?,
                then: self.body(&i.true_body)?,
                otherwise: self.body(&i.false_body)?,
            },
            Stmt::ForLoop(f) if !f.recursive && f.filter_expr.is_none() => {
                let AstExpr::Var(v) = &f.target else { return None };
                let iter = self.expr(&f.iter)?;
                let source = self.locals.source(&f.iter);
                // The `else` body runs outside the loop.
                let empty = self.body(&f.else_body)?;
                let len = self.locals.len();
                self.locals.bind("loop", None);
                self.locals.bind(v.id, source);
                let body = self.body(&f.body);
                self.locals.truncate(len);
                Node::For { iter, body: body?, empty }
            }
            _ => return None,
        })
    }

    fn boxed(&mut self, e: &AstExpr<'_>) -> Option<Box<Expr>> {
        self.expr(e).map(Box::new)
    }

    fn expr(&mut self, e: &AstExpr<'_>) -> Option<Expr> {
        // Constants (`-8`, `[1, 2]`, `not true`) are folded by minijinja's own rules.
        if let Some(value) = e.as_const() {
            return Some(Expr::Const(value));
        }
        Some(match e {
            AstExpr::Var(v) => match self.locals.position(v.id) {
                Some(i) => Expr::Local(i),
                None => match self.inputs.iter().position(|i| **i == *v.id) {
                    Some(i) => Expr::Input(i),
                    None => {
                        self.inputs.push(v.id.into());
                        Expr::Input(self.inputs.len() - 1)
                    }
                },
            },
            AstExpr::Const(c) => Expr::Const(c.value.clone()),
            AstExpr::GetAttr(a) => Expr::Attr(self.boxed(&a.expr)?, a.name.into()),
            AstExpr::GetItem(i) => match &i.subscript_expr {
                AstExpr::Const(c) => Expr::Item(self.boxed(&i.expr)?, c.value.clone()),
                _ => return None,
            },
            AstExpr::UnaryOp(u) => match u.op {
                UnaryOpKind::Not => Expr::Not(self.boxed(&u.expr)?),
                UnaryOpKind::Neg => return None,
            },
            AstExpr::BinOp(b) => {
                let (left, right) = (self.boxed(&b.left)?, self.boxed(&b.right)?);
                match b.op {
                    BinOpKind::ScAnd => Expr::And(left, right),
                    BinOpKind::ScOr => Expr::Or(left, right),
                    op => Expr::Compare(left, vec![(binop_cmp(op)?, *right)]),
                }
            }
            AstExpr::Compare(c) => {
                let ops = c.ops.iter().map(|op| Some((cmp(op.op)?, self.expr(&op.expr)?))).collect::<Option<_>>()?;
                Expr::Compare(self.boxed(&c.expr)?, ops)
            }
            AstExpr::IfExpr(i) => Expr::IfElse(
                self.boxed(&i.test_expr)?,
                self.boxed(&i.true_expr)?,
                match &i.false_expr {
                    Some(f) => Some(self.boxed(f)?),
                    None => None,
                },
            ),
            AstExpr::Filter(f) => {
                let filter = match f.name {
                    "upper" => Filter::Upper,
                    "lower" => Filter::Lower,
                    "length" | "count" => Filter::Length,
                    "join" => Filter::Join,
                    "default" | "d" => Filter::Default,
                    "trim" => Filter::Trim,
                    _ => return None,
                };
                let args = f
                    .args
                    .iter()
                    .map(|a| match a {
                        CallArg::Pos(e) => self.expr(e),
                        _ => None,
                    })
                    .collect::<Option<Vec<_>>>()?;
                let most = match filter {
                    Filter::Upper | Filter::Lower | Filter::Length => 0,
                    Filter::Join | Filter::Trim => 1,
                    Filter::Default => 2,
                };
                if args.len() > most {
                    return None;
                }
                Expr::Filter(filter, self.boxed(f.expr.as_ref()?)?, args)
            }
            AstExpr::Test(t) if t.args.is_empty() => {
                let test = match t.name {
                    "defined" => Test::Defined,
                    "undefined" => Test::Undefined,
                    "none" => Test::None,
                    _ => return None,
                };
                Expr::Is(test, self.boxed(&t.expr)?)
            }
            _ => return None,
        })
    }
}

fn cmp(op: CompareOpKind) -> Option<Cmp> {
    Some(match op {
        CompareOpKind::Eq => Cmp::Eq,
        CompareOpKind::Ne => Cmp::Ne,
        CompareOpKind::Lt => Cmp::Lt,
        CompareOpKind::Lte => Cmp::Lte,
        CompareOpKind::Gt => Cmp::Gt,
        CompareOpKind::Gte => Cmp::Gte,
        CompareOpKind::In | CompareOpKind::NotIn => return None,
    })
}

fn binop_cmp(op: BinOpKind) -> Option<Cmp> {
    Some(match op {
        BinOpKind::Eq => Cmp::Eq,
        BinOpKind::Ne => Cmp::Ne,
        BinOpKind::Lt => Cmp::Lt,
        BinOpKind::Lte => Cmp::Lte,
        BinOpKind::Gt => Cmp::Gt,
        BinOpKind::Gte => Cmp::Gte,
        _ => return None,
    })
}

/// Where a render looks its variables up.
#[derive(Clone, Copy)]
pub(super) enum Inputs<'a> {
    /// JSON inputs, read where they are.
    Json(&'a Map<String, Json>),
    /// Template values (typed inputs).
    Values(&'a Context),
}

/// A value during a render.
#[derive(Clone)]
enum V<'a> {
    Undefined,
    /// A JSON input value, or part of one.
    Json(&'a Json),
    /// A template value: typed inputs, constants, results of filters and tests.
    Value(Value),
    /// The `loop` of a `for`: the item's index (from 0) and the number of items.
    Loop(usize, usize),
}

impl V<'_> {
    /// The template value the engine would hold (a JSON value as the engine's context would hold
    /// it).
    fn value(&self) -> Step<Value> {
        Ok(match self {
            V::Undefined => Value::UNDEFINED,
            V::Json(j) => json_value(j),
            V::Value(v) => v.clone(),
            V::Loop(..) => return Err(Unsupported),
        })
    }

    fn is_true(&self) -> Step<bool> {
        Ok(match self {
            V::Undefined => false,
            V::Json(Json::Null) => false,
            V::Json(Json::Bool(b)) => *b,
            V::Json(Json::String(s)) => !s.is_empty(),
            V::Json(Json::Array(a)) => !a.is_empty(),
            V::Json(Json::Object(o)) => !o.is_empty(),
            V::Json(n @ Json::Number(_)) => json_value(n).is_true(),
            V::Value(v) => v.is_true(),
            V::Loop(..) => return Err(Unsupported),
        })
    }

    fn is_undefined(&self) -> bool {
        match self {
            V::Undefined => true,
            V::Value(v) => v.is_undefined(),
            _ => false,
        }
    }

    fn as_str(&self) -> Option<&str> {
        match self {
            V::Json(Json::String(s)) => Some(s),
            V::Value(v) if v.kind() == ValueKind::String => v.as_str(),
            _ => None,
        }
    }
}

struct Run<'p, 'a> {
    program: &'p Program,
    inputs: Inputs<'a>,
    /// The inputs looked up so far, by their index in [`Program::inputs`].
    found: Vec<Option<V<'a>>>,
    /// The `loop`s and items of the enclosing loops, innermost last.
    locals: Vec<V<'a>>,
    out: String,
    ranges: Vec<Range<usize>>,
    /// In sourced renders: the source of each value of `ranges`.
    sources: Option<Vec<Option<Arc<str>>>>,
    fuel: u64,
    max: usize,
}

impl<'p, 'a> Run<'p, 'a>
where
    'p: 'a,
{
    fn burn(&mut self) -> Step<()> {
        match self.fuel.checked_sub(1) {
            Some(left) => {
                self.fuel = left;
                Ok(())
            }
            None => Err(Unsupported),
        }
    }

    fn nodes(&mut self, nodes: &'p [Node]) -> std::result::Result<(), Outcome> {
        for node in nodes {
            self.burn()?;
            match node {
                Node::Text(t) => self.out.push_str(t),
                Node::Emit(e, source) => {
                    let before = self.ranges.len();
                    match e {
                        Expr::Input(i) => self.emit_input(*i)?,
                        e => {
                            let v = self.eval(e)?;
                            self.emit(&v)?;
                        }
                    }
                    if let Some(sources) = &mut self.sources {
                        if self.ranges.len() > before {
                            sources.push(source.clone());
                        }
                    }
                }
                Node::If { test, then, otherwise } => {
                    let branch = if self.eval(test)?.is_true()? { then } else { otherwise };
                    self.nodes(branch)?;
                }
                Node::For { iter, body, empty } => self.for_loop(iter, body, empty)?,
            }
            if self.out.len() > self.max {
                return Err(Outcome::TooLarge);
            }
        }
        Ok(())
    }

    fn for_loop(&mut self, iter: &'p Expr, body: &'p [Node], empty: &'p [Node]) -> std::result::Result<(), Outcome> {
        let items = self.eval(iter)?;
        match items {
            V::Json(Json::Array(items)) => {
                let len = items.len();
                for (i, item) in items.iter().enumerate() {
                    self.burn()?;
                    self.locals.push(V::Loop(i, len));
                    self.locals.push(V::Json(item));
                    let done = self.nodes(body);
                    self.locals.truncate(self.locals.len() - 2);
                    done?;
                }
                if len == 0 {
                    self.nodes(empty)?;
                }
            }
            V::Value(v) if v.kind() == ValueKind::Seq => {
                let len = v.len().ok_or(Unsupported)?;
                let iter = v.try_iter().map_err(|_| Unsupported)?;
                let mut seen = 0;
                for (i, item) in iter.enumerate() {
                    self.burn()?;
                    seen += 1;
                    self.locals.push(V::Loop(i, len));
                    self.locals.push(V::Value(item));
                    let done = self.nodes(body);
                    self.locals.truncate(self.locals.len() - 2);
                    done?;
                }
                if seen != len {
                    return Err(Outcome::Unsupported);
                }
                if len == 0 {
                    self.nodes(empty)?;
                }
            }
            _ => return Err(Outcome::Unsupported),
        }
        Ok(())
    }

    /// Writes a value as the engine's formatter prints it, recording its range.
    fn emit(&mut self, v: &V<'a>) -> Step<()> {
        let start = self.out.len();
        match v {
            V::Undefined | V::Json(Json::Null) => {}
            V::Json(Json::String(s)) => self.out.push_str(s),
            V::Value(value) => {
                // Writing into a String cannot fail.
                let _ = format_value(value, &mut self.out);
            }
            other => {
                let _ = format_value(&other.value()?, &mut self.out);
            }
        }
        if self.out.len() > start {
            self.ranges.push(start..self.out.len());
        }
        Ok(())
    }

    /// Input `index` of [`Program::inputs`], looked up once per render.
    fn input(&mut self, index: usize) -> Step<V<'a>> {
        if let Some(Some(v)) = self.found.get(index) {
            return Ok(v.clone());
        }
        let name = &*self.program.inputs[index];
        let v = match self.inputs {
            Inputs::Json(map) => crate::lookup::field(map, name).map(V::Json),
            Inputs::Values(values) => values.get(name).cloned().map(V::Value),
        };
        let v = match v {
            Some(v) => v,
            None => self.missing(name)?,
        };
        if let Some(slot) = self.found.get_mut(index) {
            *slot = Some(v.clone());
        }
        Ok(v)
    }

    /// What a variable no input holds is: undefined, unless it names a global of the engine.
    fn missing(&self, name: &str) -> Step<V<'a>> {
        match self.program.globals.iter().any(|g| **g == *name) {
            true => Err(Unsupported),
            false => Ok(V::Undefined),
        }
    }

    /// `{{ input }}`: a template value is printed where it is, not cloned.
    fn emit_input(&mut self, index: usize) -> Step<()> {
        let Inputs::Values(values) = self.inputs else {
            let v = self.input(index)?;
            return self.emit(&v);
        };
        let name = &*self.program.inputs[index];
        match values.get(name) {
            Some(value) => {
                let start = self.out.len();
                // Writing into a String cannot fail.
                let _ = format_value(value, &mut self.out);
                if self.out.len() > start {
                    self.ranges.push(start..self.out.len());
                }
                Ok(())
            }
            None => self.missing(name).map(drop),
        }
    }

    fn eval(&mut self, e: &'p Expr) -> Step<V<'a>> {
        self.burn()?;
        Ok(match e {
            Expr::Input(i) => self.input(*i)?,
            Expr::Local(i) => self.locals.get(*i).cloned().ok_or(Unsupported)?,
            Expr::Const(c) => V::Value(c.clone()),
            Expr::Attr(base, name) => attr(self.eval(base)?, name)?,
            Expr::Item(base, key) => item(self.eval(base)?, key)?,
            Expr::Not(inner) => V::Value(Value::from(!self.eval(inner)?.is_true()?)),
            Expr::And(left, right) => {
                let l = self.eval(left)?;
                if l.is_true()? {
                    self.eval(right)?
                } else {
                    l
                }
            }
            Expr::Or(left, right) => {
                let l = self.eval(left)?;
                if l.is_true()? {
                    l
                } else {
                    self.eval(right)?
                }
            }
            Expr::Compare(first, ops) => {
                let mut left = self.eval(first)?;
                for (op, right) in ops {
                    let right = self.eval(right)?;
                    if !compare(*op, &left, &right)? {
                        return Ok(V::Value(Value::from(false)));
                    }
                    left = right;
                }
                V::Value(Value::from(true))
            }
            Expr::IfElse(test, then, otherwise) => {
                if self.eval(test)?.is_true()? {
                    self.eval(then)?
                } else {
                    match otherwise {
                        Some(o) => self.eval(o)?,
                        None => V::Undefined,
                    }
                }
            }
            Expr::Filter(f, base, args) => {
                let value = self.eval(base)?;
                let mut values = Vec::with_capacity(args.len());
                for a in args {
                    values.push(self.eval(a)?);
                }
                filter(*f, value, &values)?
            }
            Expr::Is(test, base) => {
                let v = self.eval(base)?;
                V::Value(Value::from(match test {
                    Test::Defined => !v.is_undefined(),
                    Test::Undefined => v.is_undefined(),
                    Test::None => match &v {
                        V::Json(j) => j.is_null(),
                        V::Value(v) => v.is_none(),
                        _ => false,
                    },
                }))
            }
        })
    }
}

fn attr<'a>(base: V<'a>, name: &str) -> Step<V<'a>> {
    Ok(match base {
        // Chainable undefined: attributes of nothing are nothing.
        V::Undefined => V::Undefined,
        V::Json(Json::Object(map)) => crate::lookup::field(map, name).map_or(V::Undefined, V::Json),
        V::Loop(index, len) => V::Value(match name {
            "index" => Value::from(index + 1),
            "index0" => Value::from(index),
            "revindex" => Value::from(len - index),
            "revindex0" => Value::from(len - index - 1),
            "first" => Value::from(index == 0),
            "last" => Value::from(index + 1 == len),
            "length" => Value::from(len),
            _ => return Err(Unsupported),
        }),
        V::Value(v) if v.is_undefined() => V::Undefined,
        other => V::Value(other.value()?.get_attr(name).map_err(|_| Unsupported)?),
    })
}

fn item<'a>(base: V<'a>, key: &Value) -> Step<V<'a>> {
    Ok(match (&base, key.kind()) {
        (V::Undefined, _) => V::Undefined,
        (V::Json(Json::Object(map)), ValueKind::String) => {
            crate::lookup::field(map, key.as_str().unwrap_or_default()).map_or(V::Undefined, V::Json)
        }
        (V::Json(Json::Array(items)), ValueKind::Number) => match key.as_usize() {
            Some(i) if key.is_integer() => items.get(i).map_or(V::Undefined, V::Json),
            _ => return Err(Unsupported),
        },
        (V::Value(v), _) if v.is_undefined() => V::Undefined,
        (V::Loop(..), _) => return Err(Unsupported),
        _ => V::Value(base.value()?.get_item(key).map_err(|_| Unsupported)?),
    })
}

fn compare(op: Cmp, left: &V<'_>, right: &V<'_>) -> Step<bool> {
    if left.is_undefined() || right.is_undefined() {
        return Err(Unsupported);
    }
    if let (Some(a), Some(b)) = (left.as_str(), right.as_str()) {
        return Ok(op.holds(a, b));
    }
    Ok(op.holds(&left.value()?, &right.value()?))
}

impl Cmp {
    /// Whether `a op b`, by `T`'s own order (minijinja's for template values).
    fn holds<T: PartialOrd + ?Sized>(self, a: &T, b: &T) -> bool {
        match self {
            Cmp::Eq => a == b,
            Cmp::Ne => a != b,
            Cmp::Lt => a < b,
            Cmp::Lte => a <= b,
            Cmp::Gt => a > b,
            Cmp::Gte => a >= b,
        }
    }
}

fn filter<'a>(f: Filter, v: V<'a>, args: &[V<'a>]) -> Step<V<'a>> {
    Ok(match f {
        Filter::Upper | Filter::Lower => {
            let s = v.as_str().ok_or(Unsupported)?;
            V::Value(Value::from(if matches!(f, Filter::Upper) { s.to_uppercase() } else { s.to_lowercase() }))
        }
        Filter::Length => V::Value(Value::from(match &v {
            V::Json(Json::Array(a)) => a.len(),
            V::Json(Json::Object(o)) => o.len(),
            V::Json(Json::String(s)) => s.chars().count(),
            V::Value(value) => value.len().ok_or(Unsupported)?,
            _ => return Err(Unsupported),
        })),
        Filter::Join => {
            let joiner = match args.first() {
                Some(j) => j.as_str().ok_or(Unsupported)?,
                None => "",
            };
            let mut out = String::with_capacity(64);
            match &v {
                V::Undefined | V::Json(Json::Null) => {}
                V::Json(Json::Array(items)) => {
                    for (i, item) in items.iter().enumerate() {
                        if i > 0 {
                            out.push_str(joiner);
                        }
                        match item {
                            Json::String(s) => out.push_str(s),
                            other => {
                                let _ = format_value(&json_value(other), &mut out);
                            }
                        }
                    }
                }
                V::Value(value) if value.kind() == ValueKind::Seq => {
                    for (i, item) in value.try_iter().map_err(|_| Unsupported)?.enumerate() {
                        if i > 0 {
                            out.push_str(joiner);
                        }
                        let _ = format_value(&item, &mut out);
                    }
                }
                V::Value(value) if value.is_none() => {}
                _ => return Err(Unsupported),
            }
            V::Value(Value::from(out))
        }
        Filter::Default => {
            let boolean = match args.get(1) {
                None => false,
                Some(b) => match b.value()? {
                    b if b.kind() == ValueKind::Bool => b.is_true(),
                    _ => return Err(Unsupported),
                },
            };
            let none = matches!(&v, V::Json(Json::Null)) || matches!(&v, V::Value(x) if x.is_none());
            if v.is_undefined() || none || (boolean && !v.is_true()?) {
                match args.first() {
                    Some(fallback) => fallback.clone(),
                    None => V::Value(Value::from("")),
                }
            } else {
                v
            }
        }
        Filter::Trim => {
            let s = v.as_str().ok_or(Unsupported)?;
            let trimmed = match args.first() {
                Some(chars) => {
                    let chars = chars.as_str().ok_or(Unsupported)?;
                    s.trim_matches(|c| chars.contains(c))
                }
                None => s.trim_matches([' ', '\t', '\r', '\n']),
            };
            V::Value(Value::from(trimmed))
        }
    })
}
