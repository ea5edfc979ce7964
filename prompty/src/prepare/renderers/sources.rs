//! The source of an interpolated value (what [`crate::RenderSegment::source`] holds), found once
//! when a template is compiled, never during a render.
//!
//! The rule, the same for the direct renderer and the template engine:
//!
//! - `{{ e }}` has a source when `e` is a *path*: a variable, or a path followed by an attribute
//!   (`.name`) or a subscript (`[k]`, any key expression). Its source is the path's root variable
//!   resolved as below. Any other expression (a filter, a test, an operator, a literal, a call)
//!   has none.
//! - A variable the template does not bind is the input of that name (the name is kept even when
//!   no input holds it: then the value is undefined and prints nothing, or is the engine's global
//!   of that name, as `range`).
//! - A name a template binds resolves to where its value comes from: the item of
//!   `{% for x in p %}` resolves to the source of the path `p` (none when `p` is not a path), the
//!   variables of `{% set x = p %}` and `{% with x = p %}` to the source of `p`; `loop` inside a
//!   loop and every name bound by a tuple target (`{% for k, v in ... %}`) have none. A name bound
//!   in one branch of an `{% if %}` only keeps a source after it when every branch agrees on it.
//!
//! So `{% for item in items %}{{ item.name }}{% endfor %}` gives `items` (a strict input stays
//! strict through a loop), `{{ q | upper }}` gives none.

use minijinja::machinery::ast::{Expr, Stmt};
use std::sync::Arc;

/// The root variable of `e` when it is a path (a variable, attributes and subscripts of one).
pub(super) fn path_root<'a>(e: &Expr<'a>) -> Option<&'a str> {
    match e {
        Expr::Var(v) => Some(v.id),
        Expr::GetAttr(a) => path_root(&a.expr),
        Expr::GetItem(i) => path_root(&i.expr),
        _ => None,
    }
}

/// The names a template has bound at some point, innermost last, with their sources.
#[derive(Debug, Default)]
pub(super) struct Scope {
    names: Vec<Box<str>>,
    sources: Vec<Option<Arc<str>>>,
}

impl Scope {
    /// Binds `name` (shadowing any outer binding).
    pub(super) fn bind(&mut self, name: &str, source: Option<Arc<str>>) {
        self.names.push(name.into());
        self.sources.push(source);
    }

    /// How many bindings there are: [`Scope::truncate`] to it to leave a block.
    pub(super) fn len(&self) -> usize {
        self.names.len()
    }

    /// Drops the bindings made after the scope had `len` of them.
    pub(super) fn truncate(&mut self, len: usize) {
        self.names.truncate(len);
        self.sources.truncate(len);
    }

    /// The index of the innermost binding of `name`.
    pub(super) fn position(&self, name: &str) -> Option<usize> {
        self.names.iter().rposition(|n| **n == *name)
    }

    /// The source of the variable `name`: its binding's, or the input of that name.
    pub(super) fn resolve(&self, name: &str) -> Option<Arc<str>> {
        match self.position(name) {
            Some(i) => self.sources[i].clone(),
            None => Some(name.into()),
        }
    }

    /// The source of the value of `e` (none unless it is a path).
    pub(super) fn source(&self, e: &Expr<'_>) -> Option<Arc<str>> {
        self.resolve(path_root(e)?)
    }

    /// The names bound since `len`, with their sources, outermost first.
    fn since(&self, len: usize) -> Vec<(Box<str>, Option<Arc<str>>)> {
        self.names[len..].iter().cloned().zip(self.sources[len..].iter().cloned()).collect()
    }
}

/// Binds every name of a `set`/`for` target: a variable gets `source`, names in a tuple none.
fn bind_target(scope: &mut Scope, target: &Expr<'_>, source: Option<Arc<str>>) {
    match target {
        Expr::Var(v) => scope.bind(v.id, source),
        Expr::List(l) => {
            for item in &l.items {
                bind_target(scope, item, None);
            }
        }
        // `{% set ns.attr = ... %}` binds no name.
        _ => {}
    }
}

/// Where the source of one `{{ }}` goes: the expression's bytes in the template and the index of
/// its source in the table [`sourced_text`] returns.
struct Wrap {
    start: usize,
    end: usize,
    source: usize,
}

/// The filter [`sourced_text`] wraps sourced values in; a template that names it itself keeps no
/// sources.
pub(super) const FILTER: &str = "__prompty_source";

/// `text` (the template's Jinja text, which parsed as `ast`) with every `{{ path }}` whose source
/// is known rewritten as `{{ (path)|__prompty_source(i) }}`, `i` indexing the table of sources
/// returned with it. Lines do not move, so errors point where they do in the original. `None` when
/// the template holds a construct this walk does not know (it then keeps no sources).
pub(super) fn sourced_text(text: &str, ast: &Stmt<'_>) -> Option<(String, Vec<Arc<str>>)> {
    if text.contains(FILTER) {
        return None;
    }
    let mut walk = Walk { scope: Scope::default(), wraps: Vec::new(), table: Vec::new() };
    walk.stmt(ast)?;
    let mut out = String::with_capacity(text.len() + walk.wraps.len() * (FILTER.len() + 8));
    let mut at = 0;
    for w in &walk.wraps {
        let (start, end) = (w.start, w.end);
        if start < at || end < start || end > text.len() || !text.is_char_boundary(start) || !text.is_char_boundary(end)
        {
            return None;
        }
        out.push_str(&text[at..start]);
        out.push('(');
        out.push_str(&text[start..end]);
        out.push_str(")|");
        out.push_str(FILTER);
        out.push('(');
        out.push_str(&w.source.to_string());
        out.push(')');
        at = end;
    }
    out.push_str(&text[at..]);
    Some((out, walk.table))
}

struct Walk {
    scope: Scope,
    wraps: Vec<Wrap>,
    table: Vec<Arc<str>>,
}

impl Walk {
    fn body(&mut self, stmts: &[Stmt<'_>]) -> Option<()> {
        stmts.iter().try_for_each(|s| self.stmt(s))
    }

    /// Walks `stmts` in a scope of their own.
    fn block(&mut self, stmts: &[Stmt<'_>]) -> Option<()> {
        let len = self.scope.len();
        let done = self.body(stmts);
        self.scope.truncate(len);
        done
    }

    #[allow(unreachable_patterns)]
    fn stmt(&mut self, s: &Stmt<'_>) -> Option<()> {
        match s {
            Stmt::Template(t) => self.body(&t.children),
            Stmt::EmitRaw(_) | Stmt::Do(_) => Some(()),
            Stmt::EmitExpr(e) => {
                if let Some(source) = self.scope.source(&e.expr) {
                    let span = e.expr.span();
                    let index = match self.table.iter().position(|s| *s == source) {
                        Some(i) => i,
                        None => {
                            self.table.push(source);
                            self.table.len() - 1
                        }
                    };
                    self.wraps.push(Wrap {
                        start: span.start_offset as usize,
                        end: span.end_offset as usize,
                        source: index,
                    });
                }
                Some(())
            }
            Stmt::Set(set) => {
                let source = self.scope.source(&set.expr);
                bind_target(&mut self.scope, &set.target, source);
                Some(())
            }
            Stmt::ForLoop(f) => {
                let source = self.scope.source(&f.iter);
                let len = self.scope.len();
                self.scope.bind("loop", None);
                bind_target(&mut self.scope, &f.target, source);
                let done = self.body(&f.body);
                self.scope.truncate(len);
                done?;
                self.block(&f.else_body)
            }
            Stmt::IfCond(i) => {
                let len = self.scope.len();
                self.body(&i.true_body)?;
                let then = self.scope.since(len);
                self.scope.truncate(len);
                self.body(&i.false_body)?;
                let otherwise = self.scope.since(len);
                self.scope.truncate(len);
                // A name bound in either branch: its source after the `if` is the one every way
                // through agrees on (a branch that does not bind it keeps the binding before).
                let last = |bound: &[(Box<str>, Option<Arc<str>>)], name: &str| {
                    bound.iter().rev().find(|(n, _)| **n == *name).map(|(_, s)| s.clone())
                };
                let mut names: Vec<&str> = then.iter().chain(&otherwise).map(|(n, _)| &**n).collect();
                names.sort_unstable();
                names.dedup();
                let merged: Vec<(Box<str>, Option<Arc<str>>)> = names
                    .into_iter()
                    .map(|name| {
                        let before = self.scope.resolve(name);
                        let a = last(&then, name).unwrap_or_else(|| before.clone());
                        let b = last(&otherwise, name).unwrap_or(before);
                        (name.into(), if a == b { a } else { None })
                    })
                    .collect();
                for (name, source) in merged {
                    self.scope.bind(&name, source);
                }
                Some(())
            }
            Stmt::WithBlock(w) => {
                let len = self.scope.len();
                for (target, expr) in &w.assignments {
                    let source = self.scope.source(expr);
                    bind_target(&mut self.scope, target, source);
                }
                let done = self.body(&w.body);
                self.scope.truncate(len);
                done
            }
            Stmt::AutoEscape(a) => self.body(&a.body),
            _ => None,
        }
    }
}
