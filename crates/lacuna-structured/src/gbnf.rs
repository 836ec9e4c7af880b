//! llama.cpp's GBNF grammars, where they are regular: the rules are parsed (`name ::=`
//! alternatives of sequences of `"literals"`, `[classes]`, `[^negated]`, `.`, rule names and
//! groups, each with `*`, `+`, `?` or `{m}`, `{m,}`, `{m,n}`), and a grammar whose rules
//! refer to each other without a cycle is expanded into one language from `root`. A cycle
//! makes the grammar context-free, which is refused naming a rule on it.

use std::collections::HashMap;

use regex_syntax::hir::{Class, ClassUnicode, ClassUnicodeRange, Hir};

use crate::error::{Error, Result};
use crate::hir::{alt, cat, lit, rep};

/// A parsed expression.
#[derive(Debug, Clone)]
enum Expr {
    Lit(String),
    Class {
        ranges: Vec<(char, char)>,
        negated: bool,
    },
    Any,
    Rule(String, usize),
    Seq(Vec<Expr>),
    Alt(Vec<Expr>),
    Rep(Box<Expr>, u32, Option<u32>),
}

/// The language of `grammar` from its `root` rule.
pub(crate) fn grammar_hir(grammar: &str) -> Result<Hir> {
    let rules = Parser::new(grammar).rules()?;
    let mut done: HashMap<String, Hir> = HashMap::new();
    let mut stack: Vec<String> = Vec::new();
    if !rules.contains_key("root") {
        return Err(Error::Grammar {
            line: 1,
            message: "no `root` rule".into(),
        });
    }
    expand_rule("root", 1, &rules, &mut done, &mut stack)
}

fn expand_rule(
    name: &str,
    line: usize,
    rules: &HashMap<String, (Expr, usize)>,
    done: &mut HashMap<String, Hir>,
    stack: &mut Vec<String>,
) -> Result<Hir> {
    if let Some(h) = done.get(name) {
        return Ok(h.clone());
    }
    if stack.iter().any(|r| r == name) {
        return Err(Error::NotRegular {
            rule: name.to_string(),
        });
    }
    let Some((expr, _)) = rules.get(name) else {
        return Err(Error::Grammar {
            line,
            message: format!("undefined rule `{name}`"),
        });
    };
    stack.push(name.to_string());
    let h = expand(expr, rules, done, stack)?;
    stack.pop();
    done.insert(name.to_string(), h.clone());
    Ok(h)
}

fn expand(
    e: &Expr,
    rules: &HashMap<String, (Expr, usize)>,
    done: &mut HashMap<String, Hir>,
    stack: &mut Vec<String>,
) -> Result<Hir> {
    Ok(match e {
        Expr::Lit(s) => lit(s),
        Expr::Any => Hir::class(Class::Unicode(ClassUnicode::new([ClassUnicodeRange::new(
            '\0',
            char::MAX,
        )]))),
        Expr::Class { ranges, negated } => {
            let mut c =
                ClassUnicode::new(ranges.iter().map(|&(a, b)| ClassUnicodeRange::new(a, b)));
            if *negated {
                c.negate();
            }
            Hir::class(Class::Unicode(c))
        }
        Expr::Rule(name, line) => expand_rule(name, *line, rules, done, stack)?,
        Expr::Seq(v) => cat(v
            .iter()
            .map(|x| expand(x, rules, done, stack))
            .collect::<Result<_>>()?),
        Expr::Alt(v) => alt(v
            .iter()
            .map(|x| expand(x, rules, done, stack))
            .collect::<Result<_>>()?),
        Expr::Rep(x, min, max) => rep(expand(x, rules, done, stack)?, *min, *max),
    })
}

struct Parser<'a> {
    src: &'a [u8],
    text: &'a str,
    pos: usize,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Self {
        Parser {
            src: text.as_bytes(),
            text,
            pos: 0,
        }
    }

    fn line(&self) -> usize {
        self.text[..self.pos.min(self.text.len())]
            .matches('\n')
            .count()
            + 1
    }

    fn err<T>(&self, message: impl Into<String>) -> Result<T> {
        Err(Error::Grammar {
            line: self.line(),
            message: message.into(),
        })
    }

    fn peek(&self) -> Option<u8> {
        self.src.get(self.pos).copied()
    }

    /// Skips spaces and `#` comments; newlines too when `newlines`.
    fn space(&mut self, newlines: bool) {
        while let Some(c) = self.peek() {
            match c {
                b' ' | b'\t' | b'\r' => self.pos += 1,
                b'\n' if newlines => self.pos += 1,
                b'#' => {
                    while self.peek().is_some_and(|c| c != b'\n') {
                        self.pos += 1;
                    }
                }
                _ => break,
            }
        }
    }

    fn name(&mut self) -> Option<String> {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
        {
            self.pos += 1;
        }
        (self.pos > start).then(|| self.text[start..self.pos].to_string())
    }

    fn rules(mut self) -> Result<HashMap<String, (Expr, usize)>> {
        let mut rules = HashMap::new();
        loop {
            self.space(true);
            if self.peek().is_none() {
                break;
            }
            let line = self.line();
            let Some(name) = self.name() else {
                return self.err("expected a rule name");
            };
            self.space(false);
            if !self.text[self.pos..].starts_with("::=") {
                return self.err(format!("expected `::=` after `{name}`"));
            }
            self.pos += 3;
            self.space(true);
            let e = self.alternatives(false)?;
            if rules.insert(name.clone(), (e, line)).is_some() {
                return self.err(format!("rule `{name}` is defined twice"));
            }
            self.space(false);
            match self.peek() {
                None | Some(b'\n') => {}
                Some(c) => return self.err(format!("unexpected `{}`", c as char)),
            }
        }
        Ok(rules)
    }

    /// `seq ("|" seq)*`; inside a group newlines are spaces.
    fn alternatives(&mut self, nested: bool) -> Result<Expr> {
        let mut alts = vec![self.sequence(nested)?];
        loop {
            self.space(nested);
            if self.peek() == Some(b'|') {
                self.pos += 1;
                self.space(true);
                alts.push(self.sequence(nested)?);
            } else {
                break;
            }
        }
        Ok(if alts.len() == 1 {
            alts.pop().expect("one")
        } else {
            Expr::Alt(alts)
        })
    }

    fn sequence(&mut self, nested: bool) -> Result<Expr> {
        let mut items = Vec::new();
        loop {
            self.space(nested);
            let Some(c) = self.peek() else { break };
            let item = match c {
                b'"' => Expr::Lit(self.literal()?),
                b'[' => self.class()?,
                b'.' => {
                    self.pos += 1;
                    Expr::Any
                }
                b'(' => {
                    self.pos += 1;
                    self.space(true);
                    let e = self.alternatives(true)?;
                    self.space(true);
                    if self.peek() != Some(b')') {
                        return self.err("expected `)`");
                    }
                    self.pos += 1;
                    e
                }
                c if c.is_ascii_alphanumeric() || c == b'-' || c == b'_' => {
                    let save = self.pos;
                    let line = self.line();
                    let name = self.name().expect("a name");
                    // The next rule's `name ::=` ends this sequence.
                    let mut look = Parser {
                        src: self.src,
                        text: self.text,
                        pos: self.pos,
                    };
                    look.space(false);
                    if look.text[look.pos..].starts_with("::=") {
                        self.pos = save;
                        break;
                    }
                    Expr::Rule(name, line)
                }
                _ => break,
            };
            items.push(self.repetition(item)?);
        }
        Ok(if items.len() == 1 {
            items.pop().expect("one")
        } else {
            Expr::Seq(items)
        })
    }

    fn repetition(&mut self, item: Expr) -> Result<Expr> {
        let (min, max) = match self.peek() {
            Some(b'*') => (0, None),
            Some(b'+') => (1, None),
            Some(b'?') => (0, Some(1)),
            Some(b'{') => {
                self.pos += 1;
                let min = self.number()?;
                let max = if self.peek() == Some(b',') {
                    self.pos += 1;
                    self.space(false);
                    if self.peek() == Some(b'}') {
                        None
                    } else {
                        Some(self.number()?)
                    }
                } else {
                    Some(min)
                };
                self.space(false);
                if self.peek() != Some(b'}') {
                    return self.err("expected `}`");
                }
                if max.is_some_and(|m| m < min) {
                    return self.err("a repetition's maximum is below its minimum");
                }
                (min, max)
            }
            _ => return Ok(item),
        };
        self.pos += 1;
        Ok(Expr::Rep(Box::new(item), min, max))
    }

    fn number(&mut self) -> Result<u32> {
        self.space(false);
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        match self.text[start..self.pos].parse::<u32>() {
            Ok(n) if n <= 10_000 => Ok(n),
            _ => self.err("expected a repetition count (at most 10000)"),
        }
    }

    /// One character of a literal or class, escapes decoded.
    fn char(&mut self) -> Result<char> {
        let rest = &self.text[self.pos..];
        let Some(c) = rest.chars().next() else {
            return self.err("unexpected end of the grammar");
        };
        self.pos += c.len_utf8();
        if c != '\\' {
            return Ok(c);
        }
        let Some(e) = self.text[self.pos..].chars().next() else {
            return self.err("unexpected end after `\\`");
        };
        self.pos += e.len_utf8();
        let hex = |p: &mut Self, n: usize| -> Result<char> {
            let digits = p.text.get(p.pos..p.pos + n).unwrap_or("");
            let v = u32::from_str_radix(digits, 16)
                .ok()
                .and_then(char::from_u32);
            p.pos += n;
            v.map_or_else(|| p.err("a bad hexadecimal escape"), Ok)
        };
        Ok(match e {
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            '\\' => '\\',
            '"' => '"',
            '[' => '[',
            ']' => ']',
            '-' => '-',
            '^' => '^',
            'x' => hex(self, 2)?,
            'u' => hex(self, 4)?,
            'U' => hex(self, 8)?,
            other => return self.err(format!("unknown escape `\\{other}`")),
        })
    }

    fn literal(&mut self) -> Result<String> {
        self.pos += 1;
        let mut s = String::new();
        loop {
            match self.peek() {
                None | Some(b'\n') => return self.err("unterminated string"),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(s);
                }
                _ => s.push(self.char()?),
            }
        }
    }

    fn class(&mut self) -> Result<Expr> {
        self.pos += 1;
        let negated = self.peek() == Some(b'^');
        if negated {
            self.pos += 1;
        }
        let mut ranges = Vec::new();
        loop {
            match self.peek() {
                None | Some(b'\n') => return self.err("unterminated character class"),
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Expr::Class { ranges, negated });
                }
                _ => {
                    let a = self.char()?;
                    let b =
                        if self.peek() == Some(b'-') && self.src.get(self.pos + 1) != Some(&b']') {
                            self.pos += 1;
                            if matches!(self.peek(), None | Some(b'\n')) {
                                return self.err("unterminated character class");
                            }
                            self.char()?
                        } else {
                            a
                        };
                    if b < a {
                        return self.err(format!("a reversed range `{a}-{b}`"));
                    }
                    ranges.push((a, b));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dfa::{ByteDfa, DfaLimits};

    fn dfa(g: &str) -> ByteDfa {
        let limits = DfaLimits {
            nfa_bytes: 1 << 24,
            dfa_bytes: 1 << 24,
        };
        ByteDfa::build(&grammar_hir(g).unwrap(), limits).unwrap()
    }

    #[test]
    fn regular_grammars_expand_and_match() {
        let d = dfa(r#"root ::= greeting " " name ("!" | "?")?
# a comment
greeting ::= "hello" | "hi"
name ::=
  [A-Z] [a-z]{1,5}
"#);
        assert!(d.matches(b"hello Bob!"));
        assert!(d.matches(b"hi Alice"));
        assert!(!d.matches(b"hi alice"));
        assert!(!d.matches(b"hey Bob"));
        let d = dfa(r#"root ::= [^"\\]* "\x41" [0-9]+"#);
        assert!(d.matches(b"abcA12"));
        assert!(!d.matches(b"a\"A1"));
    }

    #[test]
    fn recursion_is_refused_naming_a_rule() {
        let json = r#"root ::= value
value ::= "[" (value ("," value)*)? "]" | "1"
"#;
        assert_eq!(
            grammar_hir(json).unwrap_err(),
            Error::NotRegular {
                rule: "value".into()
            }
        );
    }

    #[test]
    fn malformed_grammars_name_the_line() {
        for (g, line) in [
            ("root ::= \"a\"\nb ::= [a-\n", 2),
            ("root ::= missing", 1),
            ("root = \"a\"", 1),
            ("root ::= \"a\" )", 1),
            ("root ::= x{3,1}", 1),
        ] {
            match grammar_hir(g) {
                Err(Error::Grammar { line: l, .. }) => assert_eq!(l, line, "{g}"),
                other => panic!("{g}: {other:?}"),
            }
        }
    }
}
