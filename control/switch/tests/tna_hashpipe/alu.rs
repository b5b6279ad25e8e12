//! The stateful ALU programs of p4src/tna/hashpipe.p4, read from the file: each
//! `RegisterAction`'s `apply` body parsed into statements and run on a slot. Only what those
//! bodies use is understood (assignments to `rv`, `v.fp`, `v.count`; `if`/`else if`/`else`;
//! `+`, `-`; the six comparisons); anything else fails naming the action and the token.

use std::collections::HashMap;

/// `hp_slot_t`: {fp, count}; fp 0 = empty.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Slot {
    pub fp: u32,
    pub count: u32,
}

#[derive(Debug)]
enum Expr {
    Num(u32),
    Name(String),
    Add(Box<Expr>, Box<Expr>),
    Sub(Box<Expr>, Box<Expr>),
}

#[derive(Debug)]
enum Stmt {
    Set(String, Expr),
    If(Expr, String, Expr, Vec<Stmt>, Vec<Stmt>),
}

/// One `RegisterAction`: its register and its program.
#[derive(Debug)]
pub struct Alu {
    pub register: String,
    body: Vec<Stmt>,
}

/// Every `RegisterAction` of `text` by name (names are unique in hashpipe.p4's controls).
pub fn register_actions(file: &str, text: &str) -> HashMap<String, Alu> {
    let text = strip_comments(text);
    let mut out = HashMap::new();
    for chunk in text.split("RegisterAction<").skip(1) {
        // `...>(REGISTER) NAME = { void apply(...) { BODY } };`
        let after = chunk.split_once(">(").map(|(_, a)| a);
        let (register, rest) = after
            .and_then(|a| a.split_once(')'))
            .unwrap_or_else(|| panic!("{file}: a RegisterAction without its register"));
        let (name, rest) = rest
            .split_once('=')
            .unwrap_or_else(|| panic!("{file}: RegisterAction on {register} without a name"));
        let name = name.trim().to_string();
        let apply = rest
            .split_once("void apply(")
            .and_then(|(_, a)| a.split_once(')'))
            .map(|(_, body)| body)
            .unwrap_or_else(|| panic!("{file}: RegisterAction {name}: no `void apply(...)`"));
        let toks = tokens(apply);
        let mut p = Parser {
            file,
            action: &name,
            toks: &toks,
            at: 0,
        };
        let body = p.block();
        let alu = Alu {
            register: register.trim().to_string(),
            body,
        };
        assert!(
            out.insert(name.clone(), alu).is_none(),
            "{file}: two RegisterActions named {name}"
        );
    }
    out
}

impl Alu {
    /// Runs the program on `v` with the control's inputs `env`; returns `rv` (0 if unset).
    pub fn run(&self, v: &mut Slot, env: &[(&str, u32)]) -> u32 {
        let mut rv = 0;
        run(&self.body, v, &mut rv, env);
        rv
    }
}

fn run(body: &[Stmt], v: &mut Slot, rv: &mut u32, env: &[(&str, u32)]) {
    for s in body {
        match s {
            Stmt::Set(to, e) => {
                let x = eval(e, v, env);
                match to.as_str() {
                    "rv" => *rv = x,
                    "v.fp" => v.fp = x,
                    "v.count" => v.count = x,
                    other => panic!("assignment to {other}"),
                }
            }
            Stmt::If(a, op, b, then, els) => {
                let (a, b) = (eval(a, v, env), eval(b, v, env));
                let holds = match op.as_str() {
                    "==" => a == b,
                    "!=" => a != b,
                    "<" => a < b,
                    "<=" => a <= b,
                    ">" => a > b,
                    ">=" => a >= b,
                    other => panic!("comparison {other}"),
                };
                run(if holds { then } else { els }, v, rv, env);
            }
        }
    }
}

/// `bit<32>` arithmetic: it wraps.
fn eval(e: &Expr, v: &Slot, env: &[(&str, u32)]) -> u32 {
    match e {
        Expr::Num(n) => *n,
        Expr::Name(n) if n == "v.fp" => v.fp,
        Expr::Name(n) if n == "v.count" => v.count,
        Expr::Name(n) => {
            env.iter()
                .find(|(k, _)| k == n)
                .unwrap_or_else(|| panic!("the ALU reads `{n}`, which the mirror does not give"))
                .1
        }
        Expr::Add(a, b) => eval(a, v, env).wrapping_add(eval(b, v, env)),
        Expr::Sub(a, b) => eval(a, v, env).wrapping_sub(eval(b, v, env)),
    }
}

fn strip_comments(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("/*") {
        out.push_str(&rest[..i]);
        rest = rest[i..].split_once("*/").map_or("", |(_, r)| r);
    }
    out.push_str(rest);
    out.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

fn tokens(s: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_whitespace() {
            continue;
        }
        let mut t = c.to_string();
        if c.is_alphanumeric() || c == '_' {
            while let Some(&n) = chars.peek() {
                if !(n.is_alphanumeric() || n == '_' || n == '.') {
                    break;
                }
                t.push(n);
                chars.next();
            }
        } else if matches!(c, '=' | '!' | '<' | '>') && chars.peek() == Some(&'=') {
            t.push('=');
            chars.next();
        }
        out.push(t);
    }
    out
}

struct Parser<'a> {
    file: &'a str,
    action: &'a str,
    toks: &'a [String],
    at: usize,
}

impl Parser<'_> {
    fn peek(&self) -> &str {
        self.toks.get(self.at).map_or("<end>", |t| t.as_str())
    }

    fn next(&mut self) -> String {
        let t = self.peek().to_string();
        self.at += 1;
        t
    }

    fn expect(&mut self, want: &str) {
        let got = self.next();
        if got != want {
            self.fail(&format!("expected `{want}`, found `{got}`"));
        }
    }

    fn fail(&self, what: &str) -> ! {
        panic!(
            "{}: RegisterAction {}: {what} (the test's ALU parser knows only assignments, \
             if/else, +, - and comparisons)",
            self.file, self.action
        )
    }

    fn block(&mut self) -> Vec<Stmt> {
        self.expect("{");
        let mut out = Vec::new();
        while self.peek() != "}" {
            out.push(self.stmt());
        }
        self.expect("}");
        out
    }

    fn stmt(&mut self) -> Stmt {
        if self.peek() != "if" {
            let to = self.next();
            self.expect("=");
            let e = self.expr();
            self.expect(";");
            return Stmt::Set(to, e);
        }
        self.expect("if");
        self.expect("(");
        let a = self.expr();
        let op = self.next();
        if !matches!(op.as_str(), "==" | "!=" | "<" | "<=" | ">" | ">=") {
            self.fail(&format!("comparison `{op}`"));
        }
        let b = self.expr();
        self.expect(")");
        let then = self.block();
        let els = match self.peek() {
            "else" => {
                self.next();
                if self.peek() == "if" {
                    vec![self.stmt()]
                } else {
                    self.block()
                }
            }
            _ => Vec::new(),
        };
        Stmt::If(a, op, b, then, els)
    }

    fn expr(&mut self) -> Expr {
        let mut e = self.atom();
        loop {
            match self.peek() {
                "+" => {
                    self.next();
                    e = Expr::Add(Box::new(e), Box::new(self.atom()));
                }
                "-" => {
                    self.next();
                    e = Expr::Sub(Box::new(e), Box::new(self.atom()));
                }
                _ => return e,
            }
        }
    }

    fn atom(&mut self) -> Expr {
        let t = self.next();
        if let Ok(n) = t.parse() {
            return Expr::Num(n);
        }
        if t.starts_with(|c: char| c.is_alphabetic() || c == '_') {
            return Expr::Name(t);
        }
        self.fail(&format!("unexpected `{t}`"))
    }
}
