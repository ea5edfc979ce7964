//! A small backtracking regular-expression matcher, enough for the render stage's
//! `nonce_pattern` (digest §2.3), so the harness needs no regex crate.
//!
//! Supported: literals, `.` (matches any character, newlines included: `(?s)` semantics),
//! `^`/`$` (start/end of the whole text), `\A`/`\z`, character classes `[a-f0-9]`, `[^...]`,
//! `\d \w \s` and their negations, the escapes `\n \t \r` and escaped punctuation, groups `(...)`,
//! `(?:...)`, `(?P<name>...)`/`(?<name>...)`, alternation `|`, quantifiers `* + ? {n} {n,} {n,m}`
//! (greedy, or lazy with a trailing `?`), and a flag group `(?s)`. Anything else is an error.
//! Matching is a search: the pattern may match anywhere unless it is anchored.

/// Whether `pattern` matches somewhere in `text`.
pub fn is_match(pattern: &str, text: &str) -> Result<bool, String> {
    let node = Parser::new(pattern).parse()?;
    let text: Vec<char> = text.chars().collect();
    let matcher = Matcher { text: &text };
    Ok((0..=text.len()).any(|start| matcher.node(&node, start, &mut |_| true)))
}

enum Node {
    Literal(char),
    Any,
    Class { negated: bool, items: Vec<ClassItem> },
    Start,
    End,
    Concat(Vec<Node>),
    Alt(Vec<Node>),
    Repeat { node: Box<Node>, min: usize, max: Option<usize>, greedy: bool },
}

enum ClassItem {
    Range(char, char),
    Perl { class: Perl, negated: bool },
}

#[derive(Clone, Copy)]
enum Perl {
    Digit,
    Word,
    Space,
}

impl Perl {
    fn matches(self, c: char) -> bool {
        match self {
            Perl::Digit => c.is_ascii_digit(),
            Perl::Word => c.is_alphanumeric() || c == '_',
            Perl::Space => c.is_whitespace(),
        }
    }
}

impl ClassItem {
    fn matches(&self, c: char) -> bool {
        match *self {
            ClassItem::Range(lo, hi) => lo <= c && c <= hi,
            ClassItem::Perl { class, negated } => class.matches(c) != negated,
        }
    }
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
}

impl Parser {
    fn new(pattern: &str) -> Parser {
        Parser { chars: pattern.chars().collect(), pos: 0 }
    }

    fn parse(mut self) -> Result<Node, String> {
        let node = self.alternation()?;
        match self.peek() {
            None => Ok(node),
            Some(c) => Err(self.error(&format!("unexpected '{c}'"))),
        }
    }

    fn error(&self, what: &str) -> String {
        let pattern: String = self.chars.iter().collect();
        format!("regex {pattern:?}: {what} at character {}", self.pos)
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += 1;
        Some(c)
    }

    fn eat(&mut self, c: char) -> bool {
        let found = self.peek() == Some(c);
        if found {
            self.pos += 1;
        }
        found
    }

    fn expect(&mut self, c: char) -> Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.error(&format!("expected '{c}'")))
        }
    }

    fn alternation(&mut self) -> Result<Node, String> {
        let mut alts = vec![self.concat()?];
        while self.eat('|') {
            alts.push(self.concat()?);
        }
        Ok(if alts.len() == 1 { alts.remove(0) } else { Node::Alt(alts) })
    }

    fn concat(&mut self) -> Result<Node, String> {
        let mut items = Vec::new();
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            let atom = self.atom()?;
            items.push(self.quantified(atom)?);
        }
        Ok(Node::Concat(items))
    }

    fn atom(&mut self) -> Result<Node, String> {
        let Some(c) = self.next() else {
            return Err(self.error("unexpected end"));
        };
        Ok(match c {
            '.' => Node::Any,
            '^' => Node::Start,
            '$' => Node::End,
            '(' => self.group()?,
            '[' => self.class()?,
            '\\' => self.escape(false)?,
            '*' | '+' | '?' => return Err(self.error("nothing to repeat")),
            c => Node::Literal(c),
        })
    }

    /// After `(`: a group, a non-capturing or named group, or a flag group.
    fn group(&mut self) -> Result<Node, String> {
        if self.eat('?') {
            if self.eat('P') || self.peek() == Some('<') {
                self.expect('<')?;
                while self.next().ok_or_else(|| self.error("unclosed group name"))? != '>' {}
            } else if !self.eat(':') {
                // Flags: only `s` is known, and the matcher always behaves as if it were set.
                loop {
                    match self.next() {
                        Some('s') => {}
                        Some(')') => return Ok(Node::Concat(Vec::new())),
                        Some(':') => break,
                        Some(f) => return Err(self.error(&format!("unsupported flag '{f}'"))),
                        None => return Err(self.error("unclosed flag group")),
                    }
                }
            }
        }
        let inner = self.alternation()?;
        self.expect(')')?;
        Ok(inner)
    }

    /// After `[`: a character class.
    fn class(&mut self) -> Result<Node, String> {
        let negated = self.eat('^');
        let mut items = Vec::new();
        let mut first = true;
        loop {
            let c = self.next().ok_or_else(|| self.error("unclosed character class"))?;
            if c == ']' && !first {
                break;
            }
            first = false;
            let lo = if c == '\\' {
                match self.escape(true)? {
                    Node::Literal(l) => l,
                    Node::Class { items: mut perl, .. } => {
                        items.append(&mut perl);
                        continue;
                    }
                    _ => return Err(self.error("unsupported escape in a class")),
                }
            } else {
                c
            };
            let is_range = self.peek() == Some('-') && self.chars.get(self.pos + 1).is_some_and(|&n| n != ']');
            if !is_range {
                items.push(ClassItem::Range(lo, lo));
                continue;
            }
            self.pos += 1; // the '-'
            let hi = match self.next() {
                Some('\\') => match self.escape(true)? {
                    Node::Literal(h) => h,
                    _ => return Err(self.error("bad range end")),
                },
                Some(h) => h,
                None => return Err(self.error("unclosed character class")),
            };
            if hi < lo {
                return Err(self.error("range out of order"));
            }
            items.push(ClassItem::Range(lo, hi));
        }
        Ok(Node::Class { negated, items })
    }

    /// After `\`: an escaped character, a Perl class, or an anchor (outside classes).
    fn escape(&mut self, in_class: bool) -> Result<Node, String> {
        let c = self.next().ok_or_else(|| self.error("trailing backslash"))?;
        let perl = |class, negated| Node::Class { negated: false, items: vec![ClassItem::Perl { class, negated }] };
        Ok(match c {
            'd' => perl(Perl::Digit, false),
            'D' => perl(Perl::Digit, true),
            'w' => perl(Perl::Word, false),
            'W' => perl(Perl::Word, true),
            's' => perl(Perl::Space, false),
            'S' => perl(Perl::Space, true),
            'n' => Node::Literal('\n'),
            't' => Node::Literal('\t'),
            'r' => Node::Literal('\r'),
            'A' if !in_class => Node::Start,
            'z' if !in_class => Node::End,
            c if !c.is_alphanumeric() => Node::Literal(c),
            c => return Err(self.error(&format!("unsupported escape '\\{c}'"))),
        })
    }

    /// A quantifier after `atom`, if any.
    fn quantified(&mut self, atom: Node) -> Result<Node, String> {
        let (min, max) = match self.peek() {
            Some('*') => self.single((0, None)),
            Some('+') => self.single((1, None)),
            Some('?') => self.single((0, Some(1))),
            Some('{') => match self.counted() {
                Some(bounds) => bounds,
                None => return Ok(atom),
            },
            _ => return Ok(atom),
        };
        if max.is_some_and(|m| m < min) {
            return Err(self.error("repetition range out of order"));
        }
        let greedy = !self.eat('?');
        Ok(Node::Repeat { node: Box::new(atom), min, max, greedy })
    }

    /// A one-character quantifier at the cursor: consumes it and gives its bounds.
    fn single(&mut self, bounds: (usize, Option<usize>)) -> (usize, Option<usize>) {
        self.pos += 1;
        bounds
    }

    /// `{n}`, `{n,}` or `{n,m}` at the cursor: consumes it and gives the bounds, or leaves the
    /// cursor alone (the `{` is then a literal).
    fn counted(&mut self) -> Option<(usize, Option<usize>)> {
        let rest: String = self.chars[self.pos..].iter().collect();
        let close = rest.find('}')?;
        let body = &rest[1..close];
        let number = |s: &str| s.trim().parse::<usize>().ok();
        let bounds = match body.split_once(',') {
            None => {
                let n = number(body)?;
                (n, Some(n))
            }
            Some((lo, "")) => (number(lo)?, None),
            Some((lo, hi)) => (number(lo)?, Some(number(hi)?)),
        };
        self.pos += rest[..=close].chars().count();
        Some(bounds)
    }
}

struct Matcher<'t> {
    text: &'t [char],
}

impl Matcher<'_> {
    /// Whether `node` matches at `i` and the continuation `k` accepts where it ends.
    fn node(&self, node: &Node, i: usize, k: &mut dyn FnMut(usize) -> bool) -> bool {
        let at = self.text.get(i).copied();
        match node {
            Node::Literal(c) => at == Some(*c) && k(i + 1),
            Node::Any => at.is_some() && k(i + 1),
            Node::Class { negated, items } => {
                at.is_some_and(|c| items.iter().any(|item| item.matches(c)) != *negated) && k(i + 1)
            }
            Node::Start => i == 0 && k(i),
            Node::End => i == self.text.len() && k(i),
            Node::Concat(nodes) => self.sequence(nodes, i, k),
            Node::Alt(alts) => alts.iter().any(|alt| self.node(alt, i, k)),
            Node::Repeat { node, min, max, greedy } => self.repeat(node, (*min, *max, *greedy), 0, i, k),
        }
    }

    fn sequence(&self, nodes: &[Node], i: usize, k: &mut dyn FnMut(usize) -> bool) -> bool {
        match nodes.split_first() {
            None => k(i),
            Some((first, rest)) => self.node(first, i, &mut |j| self.sequence(rest, j, k)),
        }
    }

    /// `node` repeated, having matched `count` times so far. An iteration beyond the minimum must
    /// consume something, so empty loops end.
    fn repeat(
        &self,
        node: &Node,
        bounds: (usize, Option<usize>, bool),
        count: usize,
        i: usize,
        k: &mut dyn FnMut(usize) -> bool,
    ) -> bool {
        let (min, max, greedy) = bounds;
        let may_repeat = max.is_none_or(|m| count < m);
        let once_more = |k: &mut dyn FnMut(usize) -> bool| {
            may_repeat
                && self.node(node, i, &mut |j| (j > i || count < min) && self.repeat(node, bounds, count + 1, j, k))
        };
        if count < min {
            return once_more(k);
        }
        // Greedy: one more iteration first, then stop here; lazy: the other way round.
        if greedy {
            return once_more(k) || k(i);
        }
        k(i) || once_more(k)
    }
}
