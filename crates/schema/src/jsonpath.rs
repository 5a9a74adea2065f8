//! Kubernetes JSONPath (`k8s.io/client-go/util/jsonpath`) over `serde_json::Value`.
//!
//! This mirrors the upstream parser and evaluator closely, including its quirks, because the
//! same expressions are used by CRD `additionalPrinterColumns[].jsonPath` (evaluated by the
//! apiserver when building `Table` responses) and by `kubectl -o jsonpath`.
//!
//! * [`JsonPath::parse`] accepts a printer-column style path (`.spec.replicas`) or a template
//!   (`{.metadata.name}{"\n"}`, `{range .items[*]}...{end}`).
//! * [`JsonPath::eval`] returns all matches (missing keys are tolerated, like the apiserver and
//!   kubectl's default `--allow-missing-template-keys=true`).
//! * [`printer_cell`] / [`JsonPath::printer_column_cell`] mirror `tableconvertor.go` of
//!   apiextensions-apiserver (first match only, typed cells, `date` rendered as an age).
//! * [`validate_printer_column_path`] and [`validate_selectable_field_path`] mirror the CRD
//!   validation of `additionalPrinterColumns[].jsonPath` and `selectableFields[].jsonPath`.
//!
//! Upstream quirks that are intentionally kept:
//! * `['a.b']` is parsed as the field path `.a.b` (two fields); use `a\.b` to address a key
//!   containing dots (e.g. `.metadata.labels.app\.kubernetes\.io/name`).
//! * `$` and `@` both mean "the current object" (they are simply skipped).
//! * Filters compare only values of the same basic kind (string/int/float/bool); comparing e.g.
//!   a string with a number is an evaluation error ("incompatible types for comparison").
//! * A field is "missing" only when the key is absent; a key holding `null` yields `null`.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::LazyLock;
use std::time::{SystemTime, UNIX_EPOCH};

use regex::Regex;
use serde_json::Value;

/// Error from parsing or evaluating a JSONPath expression. Messages match upstream.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsonPathError {
    /// The expression could not be parsed.
    #[error("{0}")]
    Parse(String),
    /// The expression could not be evaluated against the given object.
    #[error("{0}")]
    Eval(String),
}

type Result<T> = std::result::Result<T, JsonPathError>;

fn parse_err(msg: impl Into<String>) -> JsonPathError {
    JsonPathError::Parse(msg.into())
}

fn eval_err(msg: impl Into<String>) -> JsonPathError {
    JsonPathError::Eval(msg.into())
}

// ---------------------------------------------------------------------------------------------
// AST
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Param {
    value: i64,
    known: bool,
    derived: bool,
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    List(Vec<Node>),
    Text(String),
    Field(String),
    Array([Param; 3]),
    Filter {
        left: Vec<Node>,
        right: Vec<Node>,
        op: String,
    },
    Int(i64),
    Float(f64),
    Bool(bool),
    Wildcard,
    Recursive,
    Union(Vec<Vec<Node>>),
    Identifier(String),
}

// ---------------------------------------------------------------------------------------------
// Parser (port of parser.go)
// ---------------------------------------------------------------------------------------------

static DICT_KEY_RE: LazyLock<Regex> =
    LazyLock::new(|| crate::formats::constant_regex(r"^'([^']*)'$"));
static SLICE_RE: LazyLock<Regex> =
    LazyLock::new(|| crate::formats::constant_regex(r"^(-?[0-9]*)(:-?[0-9]*)?(:-?[0-9]*)?$"));
static FILTER_RE: LazyLock<Regex> =
    LazyLock::new(|| crate::formats::constant_regex(r"^([^!<>=]+)([!<>=]+)(.+?)$"));

struct Parser<'a> {
    input: &'a str,
    pos: usize,
    start: usize,
    width: usize,
}

fn is_terminator(r: Option<char>) -> bool {
    match r {
        None => true,
        Some(c) => matches!(
            c,
            ' ' | '\t' | '\r' | '\n' | '.' | ',' | '[' | ']' | '$' | '@' | '{' | '}'
        ),
    }
}

fn is_alphanumeric(c: char) -> bool {
    c == '_' || c.is_alphabetic() || c.is_numeric()
}

fn go_char_repr(c: char) -> String {
    if c.is_control() {
        format!("U+{:04X}", c as u32)
    } else {
        format!("U+{:04X} '{}'", c as u32, c)
    }
}

/// Parse a template (text with `{...}` actions) into its top-level nodes.
fn parse_template(text: &str) -> Result<Vec<Node>> {
    let mut p = Parser {
        input: text,
        pos: 0,
        start: 0,
        width: 0,
    };
    let mut root = Vec::new();
    loop {
        if p.input[p.pos..].starts_with('{') {
            if p.pos > p.start {
                root.push(Node::Text(p.consume_text().to_string()));
            }
            p.pos += 1;
            p.consume_text();
            let mut list = Vec::new();
            p.parse_inside_action(&mut list)?;
            root.push(Node::List(list));
            continue;
        }
        if p.next().is_none() {
            break;
        }
    }
    if p.pos > p.start {
        root.push(Node::Text(p.consume_text().to_string()));
    }
    Ok(root)
}

/// Parse the expression inside a delimiter (upstream `parseAction`).
fn parse_action(text: &str) -> Result<Vec<Node>> {
    let root = parse_template(&format!("{{{text}}}"))?;
    match root.into_iter().next() {
        Some(Node::List(list)) => Ok(list),
        _ => Ok(Vec::new()),
    }
}

impl<'a> Parser<'a> {
    fn consume_text(&mut self) -> &'a str {
        let v = &self.input[self.start..self.pos];
        self.start = self.pos;
        v
    }

    fn next(&mut self) -> Option<char> {
        match self.input[self.pos..].chars().next() {
            None => {
                self.width = 0;
                None
            }
            Some(c) => {
                self.width = c.len_utf8();
                self.pos += self.width;
                Some(c)
            }
        }
    }

    fn peek(&mut self) -> Option<char> {
        let r = self.next();
        self.backup();
        r
    }

    fn backup(&mut self) {
        self.pos -= self.width;
    }

    fn byte_before_last(&self) -> Option<u8> {
        self.pos
            .checked_sub(2)
            .and_then(|i| self.input.as_bytes().get(i).copied())
    }

    fn parse_inside_action(&mut self, cur: &mut Vec<Node>) -> Result<()> {
        loop {
            let rest = &self.input[self.pos..];
            if rest.starts_with('}') {
                self.pos += 1;
                self.consume_text();
                return Ok(());
            }
            if rest.starts_with("[?(") {
                self.parse_filter(cur)?;
                continue;
            }
            if rest.starts_with("..") {
                self.parse_recursive(cur)?;
                continue;
            }
            match self.next() {
                None | Some('\r') | Some('\n') => return Err(parse_err("unclosed action")),
                Some(' ') | Some('@') | Some('$') => {
                    self.consume_text();
                }
                Some('[') => self.parse_array(cur)?,
                Some(c @ ('"' | '\'')) => self.parse_quote(cur, c)?,
                Some('.') => self.parse_field(cur),
                Some(c) if c == '+' || c == '-' || c.is_ascii_digit() => {
                    self.backup();
                    self.parse_number(cur)?;
                }
                Some(c) if is_alphanumeric(c) => {
                    self.backup();
                    self.parse_identifier(cur);
                }
                Some(c) => {
                    return Err(parse_err(format!(
                        "unrecognized character in action: {}",
                        go_char_repr(c)
                    )));
                }
            }
        }
    }

    fn parse_identifier(&mut self, cur: &mut Vec<Node>) {
        loop {
            let r = self.next();
            if is_terminator(r) {
                self.backup();
                break;
            }
        }
        let value = self.consume_text();
        match value {
            "true" => cur.push(Node::Bool(true)),
            "false" => cur.push(Node::Bool(false)),
            _ => cur.push(Node::Identifier(value.to_string())),
        }
    }

    fn parse_recursive(&mut self, cur: &mut Vec<Node>) -> Result<()> {
        if matches!(cur.last(), Some(Node::Recursive)) {
            return Err(parse_err("invalid multiple recursive descent"));
        }
        self.pos += 2;
        self.consume_text();
        cur.push(Node::Recursive);
        if let Some(c) = self.peek()
            && is_alphanumeric(c)
        {
            self.parse_field(cur);
        }
        Ok(())
    }

    fn parse_number(&mut self, cur: &mut Vec<Node>) -> Result<()> {
        if matches!(self.peek(), Some('+') | Some('-')) {
            self.next();
        }
        loop {
            match self.next() {
                Some(c) if c == '.' || c.is_ascii_digit() => {}
                _ => {
                    self.backup();
                    break;
                }
            }
        }
        let value = self.consume_text();
        if let Ok(i) = value.parse::<i64>() {
            cur.push(Node::Int(i));
        } else if let Ok(f) = value.parse::<f64>() {
            cur.push(Node::Float(f));
        } else {
            return Err(parse_err(format!("cannot parse number {value}")));
        }
        Ok(())
    }

    fn parse_array(&mut self, cur: &mut Vec<Node>) -> Result<()> {
        loop {
            match self.next() {
                None | Some('\n') => return Err(parse_err("unterminated array")),
                Some(']') => break,
                _ => {}
            }
        }
        let whole = self.consume_text();
        let mut text = &whole[1..whole.len() - 1];
        if text == "*" {
            text = ":";
        }

        // union operator
        let parts: Vec<&str> = text.split(',').collect();
        if parts.len() > 1 {
            let mut union = Vec::with_capacity(parts.len());
            for part in parts {
                union.push(parse_action(&format!("[{}]", part.trim_matches(' ')))?);
            }
            cur.push(Node::Union(union));
            return Ok(());
        }

        // dict key
        if let Some(caps) = DICT_KEY_RE.captures(text) {
            let key = caps.get(1).map_or("", |m| m.as_str());
            cur.extend(parse_action(&format!(".{key}"))?);
            return Ok(());
        }

        // slice operator
        let Some(caps) = SLICE_RE.captures(text) else {
            return Err(parse_err(format!("invalid array index {text}")));
        };
        let mut params = [Param::default(); 3];
        for i in 0..3 {
            let raw = caps.get(i + 1).map_or("", |m| m.as_str());
            if !raw.is_empty() {
                let v = if i > 0 { &raw[1..] } else { raw };
                if i > 0 && v.is_empty() {
                    params[i].known = false;
                } else {
                    params[i].known = true;
                    params[i].value = v
                        .parse::<i64>()
                        .map_err(|_| parse_err(format!("array index {v} is not a number")))?;
                }
            } else if i == 1 {
                params[i].known = true;
                params[i].value = params[0].value + 1;
                params[i].derived = true;
            } else {
                params[i].known = false;
                params[i].value = 0;
            }
        }
        cur.push(Node::Array(params));
        Ok(())
    }

    fn parse_filter(&mut self, cur: &mut Vec<Node>) -> Result<()> {
        self.pos += 3;
        self.consume_text();
        let mut begin = false;
        let mut end = false;
        let mut pair = '\0';
        loop {
            let r = self.next();
            match r {
                None | Some('\n') => return Err(parse_err("unterminated filter")),
                Some(c @ ('"' | '\'')) => {
                    if !begin {
                        begin = true;
                        pair = c;
                        continue;
                    }
                    if self.byte_before_last() != Some(b'\\') && c == pair {
                        end = true;
                    }
                }
                Some(')') if begin == end => break,
                _ => {}
            }
        }
        if self.next() != Some(']') {
            return Err(parse_err("unclosed array expect ]"));
        }
        let whole = self.consume_text();
        let text = &whole[..whole.len() - 2];
        match FILTER_RE.captures(text) {
            None => {
                let left = parse_action(text)?;
                cur.push(Node::Filter {
                    left,
                    right: Vec::new(),
                    op: "exists".to_string(),
                });
            }
            Some(caps) => {
                let group = |i: usize| caps.get(i).map_or("", |m| m.as_str());
                let left = parse_action(group(1))?;
                let right = parse_action(group(3))?;
                cur.push(Node::Filter {
                    left,
                    right,
                    op: group(2).to_string(),
                });
            }
        }
        Ok(())
    }

    fn parse_quote(&mut self, cur: &mut Vec<Node>, end: char) -> Result<()> {
        loop {
            match self.next() {
                None | Some('\n') => return Err(parse_err("unterminated quoted string")),
                Some(c) if c == end && self.byte_before_last() != Some(b'\\') => break,
                _ => {}
            }
        }
        let value = self.consume_text();
        let s = unquote_extend(value)
            .ok_or_else(|| parse_err(format!("unquote string {value} error invalid syntax")))?;
        cur.push(Node::Text(s));
        Ok(())
    }

    fn parse_field(&mut self, cur: &mut Vec<Node>) {
        self.consume_text();
        while self.advance() {}
        let value = self.consume_text();
        if value == "*" {
            cur.push(Node::Wildcard);
        } else {
            cur.push(Node::Field(value.replace('\\', "")));
        }
    }

    fn advance(&mut self) -> bool {
        let r = self.next();
        if r == Some('\\') {
            self.next();
        } else if is_terminator(r) {
            self.backup();
            return false;
        }
        true
    }
}

/// Port of `UnquoteExtend`: like Go's `strconv.Unquote`, but also accepts single-quoted strings.
fn unquote_extend(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let n = bytes.len();
    if n < 2 {
        return None;
    }
    let quote = bytes[0];
    if quote != bytes[n - 1] || (quote != b'"' && quote != b'\'') {
        return None;
    }
    let quote = quote as char;
    let inner = &s[1..n - 1];
    if !inner.contains('\\') && !inner.contains(quote) {
        return Some(inner.to_string());
    }
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c == quote {
            return None;
        }
        if c != '\\' {
            out.push(c);
            continue;
        }
        let e = chars.next()?;
        match e {
            'a' => out.push('\u{7}'),
            'b' => out.push('\u{8}'),
            'f' => out.push('\u{c}'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\u{b}'),
            '\\' => out.push('\\'),
            '\'' | '"' => {
                if e != quote {
                    return None;
                }
                out.push(e);
            }
            'x' | 'u' | 'U' => {
                let len = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let mut v: u32 = 0;
                for _ in 0..len {
                    let d = chars.next()?.to_digit(16)?;
                    v = v.checked_mul(16)?.checked_add(d)?;
                }
                out.push(char::from_u32(v)?);
            }
            '0'..='7' => {
                let mut v = e.to_digit(8)?;
                for _ in 0..2 {
                    v = v * 8 + chars.next()?.to_digit(8)?;
                }
                if v > 255 {
                    return None;
                }
                out.push(char::from_u32(v)?);
            }
            _ => return None,
        }
    }
    Some(out)
}

// ---------------------------------------------------------------------------------------------
// Evaluator (port of jsonpath.go)
// ---------------------------------------------------------------------------------------------

type Vals<'a> = Vec<Cow<'a, Value>>;

fn cow_field<'a>(v: &Cow<'a, Value>, key: &str) -> Option<Cow<'a, Value>> {
    match v {
        Cow::Borrowed(b) => {
            let b: &'a Value = b;
            b.as_object()?.get(key).map(Cow::Borrowed)
        }
        Cow::Owned(o) => o.as_object()?.get(key).cloned().map(Cow::Owned),
    }
}

/// Children as visited by the wildcard / recursive-descent operators (map values, array
/// elements, and — like Go's reflection over strings — the bytes of a string).
fn cow_children<'a>(v: &Cow<'a, Value>) -> Vals<'a> {
    fn from_ref(b: &Value) -> Vals<'_> {
        match b {
            Value::Object(m) => m.values().map(Cow::Borrowed).collect(),
            Value::Array(a) => a.iter().map(Cow::Borrowed).collect(),
            Value::String(s) => s.bytes().map(|b| Cow::Owned(Value::from(b))).collect(),
            _ => Vec::new(),
        }
    }
    match v {
        Cow::Borrowed(b) => from_ref(b),
        Cow::Owned(o) => from_ref(o)
            .into_iter()
            .map(|c| Cow::Owned(c.into_owned()))
            .collect(),
    }
}

fn cow_elements<'a>(v: &Cow<'a, Value>) -> Option<Vals<'a>> {
    match v {
        Cow::Borrowed(b) => {
            let b: &'a Value = b;
            Some(b.as_array()?.iter().map(Cow::Borrowed).collect())
        }
        Cow::Owned(o) => Some(o.as_array()?.iter().cloned().map(Cow::Owned).collect()),
    }
}

/// Go type name of an unstructured value, used in error messages.
fn go_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Basic {
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(String),
}

const ERR_BAD_COMPARISON_TYPE: &str = "invalid type for comparison";
const ERR_BAD_COMPARISON: &str = "incompatible types for comparison";

fn basic_kind(v: &Value) -> Result<Basic> {
    match v {
        Value::Bool(b) => Ok(Basic::Bool(*b)),
        Value::String(s) => Ok(Basic::Str(s.clone())),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Ok(Basic::Int(i))
            } else if let Some(u) = n.as_u64() {
                Ok(Basic::Uint(u))
            } else {
                Ok(Basic::Float(n.as_f64().unwrap_or(f64::NAN)))
            }
        }
        _ => Err(eval_err(ERR_BAD_COMPARISON_TYPE)),
    }
}

fn cmp_equal(a: &Value, b: &Value) -> Result<bool> {
    let a = basic_kind(a)?;
    let b = basic_kind(b)?;
    Ok(match (a, b) {
        (Basic::Bool(x), Basic::Bool(y)) => x == y,
        (Basic::Int(x), Basic::Int(y)) => x == y,
        (Basic::Uint(x), Basic::Uint(y)) => x == y,
        (Basic::Float(x), Basic::Float(y)) => x == y,
        (Basic::Str(x), Basic::Str(y)) => x == y,
        (Basic::Int(x), Basic::Uint(y)) => x >= 0 && x as u64 == y,
        (Basic::Uint(x), Basic::Int(y)) => y >= 0 && x == y as u64,
        _ => return Err(eval_err(ERR_BAD_COMPARISON)),
    })
}

fn cmp_less(a: &Value, b: &Value) -> Result<bool> {
    let a = basic_kind(a)?;
    let b = basic_kind(b)?;
    Ok(match (a, b) {
        (Basic::Int(x), Basic::Int(y)) => x < y,
        (Basic::Uint(x), Basic::Uint(y)) => x < y,
        (Basic::Float(x), Basic::Float(y)) => x < y,
        (Basic::Str(x), Basic::Str(y)) => x < y,
        (Basic::Int(x), Basic::Uint(y)) => x < 0 || (x as u64) < y,
        (Basic::Uint(x), Basic::Int(y)) => y >= 0 && x < y as u64,
        (Basic::Bool(_), Basic::Bool(_)) => return Err(eval_err(ERR_BAD_COMPARISON_TYPE)),
        _ => return Err(eval_err(ERR_BAD_COMPARISON)),
    })
}

fn compare(op: &str, a: &Value, b: &Value) -> Result<bool> {
    match op {
        "<" => cmp_less(a, b),
        ">" => Ok(!(cmp_less(a, b)? || cmp_equal(a, b)?)),
        "==" => cmp_equal(a, b),
        "!=" => Ok(!cmp_equal(a, b)?),
        "<=" => Ok(cmp_less(a, b)? || cmp_equal(a, b)?),
        ">=" => Ok(!cmp_less(a, b)?),
        _ => Err(eval_err(format!("unrecognized filter operator {op}"))),
    }
}

struct Evaluator {
    allow_missing_keys: bool,
    begin_range: usize,
    in_range: usize,
    end_range: usize,
    last_end: Option<usize>,
}

impl Evaluator {
    fn find_results<'a>(
        &mut self,
        nodes: &[Node],
        start: usize,
        data: Cow<'a, Value>,
    ) -> Result<Vec<Vals<'a>>> {
        let cur = vec![data];
        let mut full = Vec::new();
        let mut i = start;
        while i < nodes.len() {
            let results = self.walk(cur.clone(), &nodes[i])?;

            // encountered an end node: break the current block
            if self.end_range > 0 && self.end_range <= self.in_range {
                self.end_range -= 1;
                self.last_end = Some(i);
                break;
            }
            // encountered a range node: start a range loop
            if self.begin_range > 0 {
                self.begin_range -= 1;
                self.in_range += 1;
                if results.is_empty() {
                    // still walk the body so that the position advances to the end node
                    self.find_results(nodes, i + 1, Cow::Owned(Value::Null))?;
                } else {
                    for value in results {
                        full.extend(self.find_results(nodes, i + 1, value)?);
                    }
                }
                self.in_range -= 1;
                if let Some(k) = self.last_end
                    && k > i
                    && k < nodes.len()
                {
                    i = k;
                }
                i += 1;
                continue;
            }
            full.push(results);
            i += 1;
        }
        Ok(full)
    }

    fn walk<'a>(&mut self, input: Vals<'a>, node: &Node) -> Result<Vals<'a>> {
        match node {
            Node::List(list) => self.eval_list(input, list),
            Node::Text(t) => Ok(vec![Cow::Owned(Value::String(t.clone()))]),
            Node::Field(name) => self.eval_field(input, name),
            Node::Array(params) => eval_array(input, params),
            Node::Filter { left, right, op } => self.eval_filter(input, left, right, op),
            Node::Int(v) => Ok(input.iter().map(|_| Cow::Owned(Value::from(*v))).collect()),
            Node::Float(v) => Ok(input.iter().map(|_| Cow::Owned(Value::from(*v))).collect()),
            Node::Bool(v) => Ok(input.iter().map(|_| Cow::Owned(Value::Bool(*v))).collect()),
            Node::Wildcard => Ok(input
                .iter()
                .filter(|v| !v.is_null())
                .flat_map(cow_children)
                .collect()),
            Node::Recursive => {
                let mut out = Vec::new();
                eval_recursive(&input, &mut out);
                Ok(out)
            }
            Node::Union(lists) => {
                let mut out = Vec::new();
                for list in lists {
                    out.extend(self.eval_list(input.clone(), list)?);
                }
                Ok(out)
            }
            Node::Identifier(name) => self.eval_identifier(input, name),
        }
    }

    fn eval_list<'a>(&mut self, input: Vals<'a>, nodes: &[Node]) -> Result<Vals<'a>> {
        let mut cur = input;
        for node in nodes {
            cur = self.walk(cur, node)?;
        }
        Ok(cur)
    }

    fn eval_identifier<'a>(&mut self, input: Vals<'a>, name: &str) -> Result<Vals<'a>> {
        match name {
            "range" => {
                self.begin_range += 1;
                Ok(input)
            }
            "end" => {
                if self.in_range > 0 {
                    self.end_range += 1;
                    Ok(Vec::new())
                } else {
                    Err(eval_err("not in range, nothing to end"))
                }
            }
            _ => Err(eval_err(format!("unrecognized identifier {name}"))),
        }
    }

    fn eval_field<'a>(&mut self, input: Vals<'a>, name: &str) -> Result<Vals<'a>> {
        if input.is_empty() {
            return Ok(Vec::new());
        }
        let results: Vals<'a> = input
            .iter()
            .filter(|v| !v.is_null())
            .filter_map(|v| cow_field(v, name))
            .collect();
        if results.is_empty() && !self.allow_missing_keys {
            return Err(eval_err(format!("{name} is not found")));
        }
        Ok(results)
    }

    fn eval_filter<'a>(
        &mut self,
        input: Vals<'a>,
        left: &[Node],
        right: &[Node],
        op: &str,
    ) -> Result<Vals<'a>> {
        let mut results = Vec::new();
        for value in &input {
            let Some(elements) = cow_elements(value) else {
                return Err(eval_err(format!(
                    "{} is not array or slice and cannot be filtered",
                    go_fmt_v(value)
                )));
            };
            for elem in elements {
                let lefts = self.eval_list(vec![elem.clone()], left);
                if op == "exists" {
                    if lefts.is_ok_and(|l| !l.is_empty()) {
                        results.push(elem);
                    }
                    continue;
                }
                let lefts = lefts?;
                let lhs = match lefts.as_slice() {
                    [] => continue,
                    [one] => one,
                    _ => return Err(eval_err("can only compare one element at a time")),
                };
                let rights = self.eval_list(vec![elem.clone()], right)?;
                let rhs = match rights.as_slice() {
                    [] => continue,
                    [one] => one,
                    _ => return Err(eval_err("can only compare one element at a time")),
                };
                if compare(op, lhs, rhs)? {
                    results.push(elem);
                }
            }
        }
        Ok(results)
    }
}

fn eval_array<'a>(input: Vals<'a>, params: &[Param; 3]) -> Result<Vals<'a>> {
    let mut result = Vec::new();
    for value in &input {
        if value.is_null() {
            continue;
        }
        let Some(elements) = cow_elements(value) else {
            return Err(eval_err(format!(
                "{} is not array or slice",
                go_type_name(value)
            )));
        };
        let len = elements.len() as i64;
        let mut start = if params[0].known { params[0].value } else { 0 };
        if start < 0 {
            start += len;
        }
        let mut end = if params[1].known {
            params[1].value
        } else {
            len
        };
        if end < 0 || (end == 0 && params[1].derived) {
            end += len;
        }
        if end == start {
            // requesting zero elements is allowed (and, like upstream, ends the evaluation)
            return Ok(result);
        }
        if start >= len || start < 0 {
            return Err(eval_err(format!(
                "array index out of bounds: index {start}, length {len}"
            )));
        }
        if end > len || end < 0 {
            return Err(eval_err(format!(
                "array index out of bounds: index {}, length {len}",
                end - 1
            )));
        }
        if start > end {
            return Err(eval_err(format!(
                "starting index {start} is greater than ending index {end}"
            )));
        }
        let step = if params[2].known {
            if params[2].value <= 0 {
                return Err(eval_err("step must be > 0"));
            }
            params[2].value
        } else {
            1
        };
        let step = usize::try_from(step).unwrap_or(usize::MAX);
        let (start, end) = (start as usize, end as usize);
        result.extend(
            elements
                .into_iter()
                .skip(start)
                .take(end - start)
                .step_by(step),
        );
    }
    Ok(result)
}

fn eval_recursive<'a>(input: &[Cow<'a, Value>], out: &mut Vals<'a>) {
    for value in input {
        if value.is_null() {
            continue;
        }
        let has_children = match value.as_ref() {
            Value::Object(m) => !m.is_empty(),
            Value::Array(a) => !a.is_empty(),
            Value::String(s) => !s.is_empty(),
            _ => false,
        };
        if has_children {
            out.push(value.clone());
            if !value.is_string() {
                eval_recursive(&cow_children(value), out);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------------------

/// A parsed Kubernetes JSONPath template.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath {
    source: String,
    nodes: Vec<Node>,
}

impl JsonPath {
    /// Parse a printer-column style expression (`.spec.replicas`) or a template.
    ///
    /// If `expr` (ignoring leading whitespace) starts with `{` it is parsed as a template
    /// (exactly like [`JsonPath::parse_template`]); otherwise it is wrapped as `{expr}`, which
    /// is what the apiextensions-apiserver does for `additionalPrinterColumns[].jsonPath`.
    pub fn parse(expr: &str) -> Result<JsonPath> {
        if expr.trim_start().starts_with('{') {
            Self::parse_template(expr)
        } else {
            Self::parse_printer_column(expr)
        }
    }

    /// Parse a CRD printer column path exactly like the apiserver: `{` + path + `}`.
    pub fn parse_printer_column(path: &str) -> Result<JsonPath> {
        let nodes = parse_template(&format!("{{{path}}}"))?;
        Ok(JsonPath {
            source: path.to_string(),
            nodes,
        })
    }

    /// Parse a full template (`kubectl -o jsonpath=...` syntax): literal text plus `{...}`
    /// actions, including `{range ...}...{end}`.
    pub fn parse_template(text: &str) -> Result<JsonPath> {
        let nodes = parse_template(text)?;
        Ok(JsonPath {
            source: text.to_string(),
            nodes,
        })
    }

    /// The expression this path was parsed from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// All matches, flattened over the template's top-level actions (literal text segments
    /// count as results, like upstream). Missing keys yield no result instead of an error.
    pub fn eval(&self, obj: &Value) -> Result<Vec<Value>> {
        Ok(self
            .find_results(obj, true)?
            .into_iter()
            .flatten()
            .collect())
    }

    /// Like [`JsonPath::eval`], but a missing field is an error (`"<field> is not found"`),
    /// like upstream without `AllowMissingKeys(true)`.
    pub fn eval_strict(&self, obj: &Value) -> Result<Vec<Value>> {
        Ok(self
            .find_results(obj, false)?
            .into_iter()
            .flatten()
            .collect())
    }

    /// Upstream `FindResults`: one result list per top-level template node (ranges expand to
    /// one list per body node per iteration).
    pub fn find_results(&self, obj: &Value, allow_missing_keys: bool) -> Result<Vec<Vec<Value>>> {
        let mut ev = Evaluator {
            allow_missing_keys,
            begin_range: 0,
            in_range: 0,
            end_range: 0,
            last_end: None,
        };
        let results = ev.find_results(&self.nodes, 0, Cow::Borrowed(obj))?;
        Ok(results
            .into_iter()
            .map(|group| group.into_iter().map(Cow::into_owned).collect())
            .collect())
    }

    /// Upstream `Execute`: render the template as text, like `kubectl -o jsonpath=...`.
    /// Values within one action are separated by a space; maps/arrays print as compact JSON.
    pub fn execute(&self, obj: &Value, allow_missing_keys: bool) -> Result<String> {
        let mut out = String::new();
        for group in self.find_results(obj, allow_missing_keys)? {
            print_results(&mut out, &group);
        }
        Ok(out)
    }

    /// The Table cell the apiserver produces for a CRD printer column with this path
    /// (evaluation errors and missing values give `null`). `date` ages are relative to now.
    pub fn printer_column_cell(&self, obj: &Value, column_type: &str) -> Value {
        self.printer_column_cell_at(obj, column_type, SystemTime::now())
    }

    /// [`JsonPath::printer_column_cell`] with an explicit "now" for `date` columns.
    pub fn printer_column_cell_at(&self, obj: &Value, column_type: &str, now: SystemTime) -> Value {
        match self.find_results(obj, true) {
            Ok(results) => match results.first() {
                Some(first) => printer_cell_at(first, column_type, now),
                None => Value::Null,
            },
            Err(_) => Value::Null,
        }
    }
}

impl std::fmt::Display for JsonPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.source)
    }
}

impl std::str::FromStr for JsonPath {
    type Err = JsonPathError;
    fn from_str(s: &str) -> Result<Self> {
        JsonPath::parse(s)
    }
}

/// Upstream `PrintResults` for one result list.
fn print_results(out: &mut String, results: &[Value]) {
    for (i, v) in results.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        match v {
            Value::Object(_) | Value::Array(_) => write_go_json(out, v),
            Value::Null => out.push_str("null"),
            _ => out.push_str(&go_fmt_v(v)),
        }
    }
}

/// The Table cell value kube-apiserver emits for a CRD printer column (mirrors
/// `tableconvertor.go`): only the first result is used; no result → `null`.
///
/// * `string`: the value printed like `kubectl -o jsonpath` (strings raw, numbers/bools as
///   text, objects/arrays as compact JSON, JSON `null` as `"<no value>"`).
/// * `integer`: integers as-is, floats truncated; anything else → `null`.
/// * `number`: any number as a float (integral floats are emitted as JSON integers, which is
///   how Go encodes them); anything else → `null`.
/// * `boolean`: booleans only; anything else → `null`.
/// * `date`: an RFC 3339 string rendered as a human-readable age relative to now (`"12h"`,
///   `"5d"`); `""` → `"<unknown>"`; unparsable or in the future → `"<invalid>"`; non-strings
///   → `null`.
/// * any other type → `null`.
pub fn printer_cell(results: &[Value], column_type: &str) -> Value {
    printer_cell_at(results, column_type, SystemTime::now())
}

/// [`printer_cell`] with an explicit "now" used for `date` columns.
pub fn printer_cell_at(results: &[Value], column_type: &str, now: SystemTime) -> Value {
    let Some(value) = results.first() else {
        return Value::Null;
    };
    if column_type == "string" {
        let mut out = String::new();
        match value {
            Value::Null => out.push_str("<no value>"),
            _ => print_results(&mut out, std::slice::from_ref(value)),
        }
        return Value::String(out);
    }
    match (column_type, value) {
        (_, Value::Null) => Value::Null,
        ("integer", Value::Number(n)) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                // Go's int64(float64) conversion truncates toward zero.
                Value::from(n.as_f64().unwrap_or(0.0).trunc() as i64)
            }
        }
        ("number", Value::Number(n)) => {
            let f = n.as_f64().unwrap_or(0.0);
            if f.fract() == 0.0 && f.abs() < 9.0e15 {
                Value::from(f as i64)
            } else {
                Value::from(f)
            }
        }
        ("boolean", Value::Bool(b)) => Value::Bool(*b),
        ("date", Value::String(s)) => Value::String(human_readable_date(s, now)),
        _ => Value::Null,
    }
}

/// `metatable.ConvertToHumanReadableDateType` after `metav1.Time.UnmarshalQueryParameter`.
fn human_readable_date(s: &str, now: SystemTime) -> String {
    if s.is_empty() || s == "null" {
        return "<unknown>".to_string();
    }
    let Some((secs, nanos)) = parse_rfc3339(s) else {
        return "<invalid>".to_string();
    };
    // Go's zero time.Time is 0001-01-01T00:00:00Z.
    if secs == GO_ZERO_TIME_UNIX && nanos == 0 {
        return "<unknown>".to_string();
    }
    let now_nanos: i128 = match now.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(e) => -(e.duration().as_nanos() as i128),
    };
    let then_nanos = i128::from(secs) * 1_000_000_000 + i128::from(nanos);
    let d = (now_nanos - then_nanos).clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
    human_duration(d)
}

const GO_ZERO_TIME_UNIX: i64 = -62_135_596_800;

static RFC3339_RE: LazyLock<Regex> = LazyLock::new(|| {
    crate::formats::constant_regex(
        r"^([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:[.,]([0-9]+))?(Z|[+-][0-9]{2}:[0-9]{2})$",
    )
});

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Parse an RFC 3339 timestamp the way Go's `time.Parse(time.RFC3339, s)` does.
/// Returns (unix seconds, nanoseconds).
fn parse_rfc3339(s: &str) -> Option<(i64, u32)> {
    let caps = RFC3339_RE.captures(s)?;
    let num = |i: usize| -> Option<i64> { caps.get(i)?.as_str().parse().ok() };
    let (year, month, day) = (num(1)?, num(2)?, num(3)?);
    let (hour, min, sec) = (num(4)?, num(5)?, num(6)?);
    if !(1..=12).contains(&month) || hour >= 24 || min >= 60 || sec >= 60 {
        return None;
    }
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let mdays = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if day < 1 || day > mdays {
        return None;
    }
    let nanos = match caps.get(7) {
        Some(m) => {
            let digits: String = m
                .as_str()
                .chars()
                .chain(std::iter::repeat('0'))
                .take(9)
                .collect();
            digits.parse::<u32>().ok()?
        }
        None => 0,
    };
    let zone = caps.get(8)?.as_str();
    let offset = if zone == "Z" {
        0
    } else {
        let sign = if zone.starts_with('-') { -1 } else { 1 };
        let zh: i64 = zone[1..3].parse().ok()?;
        let zm: i64 = zone[4..6].parse().ok()?;
        if zh >= 24 || zm >= 60 {
            return None;
        }
        sign * (zh * 3600 + zm * 60)
    };
    let secs = days_from_civil(year, month, day) * 86_400 + hour * 3600 + min * 60 + sec - offset;
    Some((secs, nanos))
}

/// Port of `k8s.io/apimachinery/pkg/util/duration.HumanDuration` (nanoseconds in).
fn human_duration(d: i64) -> String {
    const SECOND: i64 = 1_000_000_000;
    const MINUTE: i64 = 60 * SECOND;
    const HOUR: i64 = 60 * MINUTE;
    let seconds = (d as f64 / SECOND as f64) as i64;
    if seconds < -1 {
        return "<invalid>".to_string();
    } else if seconds < 0 {
        return "0s".to_string();
    } else if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = d / MINUTE;
    if minutes < 10 {
        let s = (d / SECOND) % 60;
        if s == 0 {
            return format!("{minutes}m");
        }
        return format!("{minutes}m{s}s");
    } else if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = d / HOUR;
    if hours < 8 {
        let m = (d / MINUTE) % 60;
        if m == 0 {
            return format!("{hours}h");
        }
        return format!("{hours}h{m}m");
    } else if hours < 48 {
        return format!("{hours}h");
    } else if hours < 24 * 8 {
        let h = hours % 24;
        if h == 0 {
            return format!("{}d", hours / 24);
        }
        return format!("{}d{h}h", hours / 24);
    } else if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    } else if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        if dy == 0 {
            return format!("{}y", hours / 24 / 365);
        }
        return format!("{}y{dy}d", hours / 24 / 365);
    }
    format!("{}y", hours / 24 / 365)
}

// ---------------------------------------------------------------------------------------------
// Go formatting helpers
// ---------------------------------------------------------------------------------------------

/// Shortest round-trip decimal digits of a finite, non-zero `f` and its decimal exponent
/// (value = 0.d1d2d3... * 10^(exp+1), i.e. d1.d2d3... * 10^exp).
fn shortest_digits(f: f64) -> (String, i32) {
    let s = format!("{:e}", f.abs());
    let (mantissa, exp) = s.split_once('e').unwrap_or((s.as_str(), "0"));
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    (digits, exp.parse().unwrap_or(0))
}

fn format_fixed(digits: &str, exp: i32) -> String {
    let nd = digits.len() as i32;
    if exp < 0 {
        format!("0.{}{}", "0".repeat((-exp - 1) as usize), digits)
    } else if exp + 1 >= nd {
        format!("{}{}", digits, "0".repeat((exp + 1 - nd) as usize))
    } else {
        let (a, b) = digits.split_at((exp + 1) as usize);
        format!("{a}.{b}")
    }
}

fn format_exp(digits: &str, exp: i32) -> String {
    let mut out = String::new();
    out.push_str(&digits[..1]);
    if digits.len() > 1 {
        out.push('.');
        out.push_str(&digits[1..]);
    }
    out.push('e');
    out.push(if exp < 0 { '-' } else { '+' });
    let _ = write!(out, "{:02}", exp.abs());
    out
}

/// Go `encoding/json` float encoding.
fn go_json_float(f: f64) -> String {
    if !f.is_finite() {
        return "null".to_string();
    }
    let sign = if f.is_sign_negative() { "-" } else { "" };
    if f == 0.0 {
        return format!("{sign}0");
    }
    let (digits, exp) = shortest_digits(f);
    let abs = f.abs();
    let body = if !(1e-6..1e21).contains(&abs) {
        let mut s = format_exp(&digits, exp);
        // clean up e-09 to e-9
        let n = s.len();
        if n >= 4 && s.as_bytes()[n - 4] == b'e' && &s[n - 3..n - 1] == "-0" {
            s.remove(n - 2);
        }
        s
    } else {
        format_fixed(&digits, exp)
    };
    format!("{sign}{body}")
}

/// Go `fmt.Sprint` of an unstructured value.
fn go_fmt_v(v: &Value) -> String {
    apimachinery::gofmt::plain(v)
}

/// Go `json.Marshal` of an unstructured value (sorted keys, HTML-safe escaping).
fn write_go_json(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if n.is_f64() {
                out.push_str(&go_json_float(n.as_f64().unwrap_or(f64::NAN)));
            } else {
                out.push_str(&n.to_string());
            }
        }
        Value::String(s) => write_go_json_string(out, s),
        Value::Array(a) => {
            out.push('[');
            for (i, e) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json(out, e);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json_string(out, k);
                out.push(':');
                write_go_json(out, &m[k]);
            }
            out.push('}');
        }
    }
}

fn write_go_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

// ---------------------------------------------------------------------------------------------
// CRD validation
// ---------------------------------------------------------------------------------------------

/// Validation of `additionalPrinterColumns[].jsonPath` (upstream `validateSimpleJSONPath`).
///
/// Upstream only requires a non-empty path starting with `.`; the error detail strings are
/// returned as-is (upstream reports them as `field.Invalid` on `...additionalPrinterColumns[i].JSONPath`;
/// note that for printer columns an empty path is reported as `field.Required` before this
/// check runs). The same rule applies to `subresources.scale.*Path`.
pub fn validate_printer_column_path(path: &str) -> std::result::Result<(), SimplePathError> {
    if path.is_empty() {
        return Err(SimplePathError::Empty);
    }
    if !path.starts_with('.') {
        return Err(SimplePathError::NoLeadingDot);
    }
    Ok(())
}

/// Why a printer column's (or scale subresource's) path is refused; the
/// messages are upstream's `field.Invalid` details.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SimplePathError {
    #[error("must not be empty")]
    Empty,
    #[error("must be a simple json path starting with .")]
    NoLeadingDot,
}

/// Why a `selectableFields[].jsonPath` is refused; the messages are
/// upstream's `field.Invalid` details (`Required value` for an empty path).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectableFieldPathError {
    #[error("Required value")]
    Empty,
    #[error("is an invalid path: {0}")]
    Syntax(#[from] FieldPathSyntaxError),
    #[error("must not point to fields in metadata")]
    InMetadata,
}

/// Why `cel.ValidFieldPath`'s tokenizer (array notation disallowed) refuses a path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldPathSyntaxError {
    #[error("array notation is not allowed")]
    ArrayNotation,
    #[error("unexpected end of JSON path")]
    UnexpectedEnd,
    /// A token other than `.` or `[` where a field step should start.
    #[error("expected [ or . but got: {0}")]
    UnexpectedToken(String),
}

/// Schema-independent part of `selectableFields[].jsonPath` validation (upstream
/// `cel.ValidFieldPath(path, schema, WithFieldPathAllowArrayNotation(false))` plus the
/// metadata check). Returns the field names of the path (`.spec.color` → `["spec", "color"]`)
/// so the caller can resolve them against the structural schema; a name addresses a property
/// when the schema has `properties`, a map key when it has `additionalProperties`, and is
/// otherwise an error (`"is an invalid path: does not refer to a valid field"`). The found
/// schema must be of type string, boolean or integer (`"must point to a field of type string,
/// boolean or integer. Enum string fields and strings with formats are allowed."`).
///
/// Error strings are upstream's `field.Invalid` details, e.g.
/// `"is an invalid path: array notation is not allowed"`. Upstream resolves the schema before
/// the metadata check, so with a schema that lacks `metadata.<field>` the schema error wins.
/// An empty path is `field.Required` upstream; here it is `Err("Required value")`.
pub fn validate_selectable_field_path(
    path: &str,
) -> std::result::Result<Vec<String>, SelectableFieldPathError> {
    if path.is_empty() {
        return Err(SelectableFieldPathError::Empty);
    }
    let fields = parse_selectable_field_path(path)?;
    if fields.first().is_some_and(|f| f == "metadata") {
        return Err(SelectableFieldPathError::InMetadata);
    }
    Ok(fields)
}

/// Tokenizer of `cel.ValidFieldPath` with array notation disallowed.
fn parse_selectable_field_path(
    path: &str,
) -> std::result::Result<Vec<String>, FieldPathSyntaxError> {
    // Split into tokens: '.', '[' and ']' are single-character tokens; a token starting with a
    // single quote extends to the next unescaped single quote; everything else runs up to the
    // next delimiter.
    let bytes = path.as_bytes();
    let mut tokens: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let rest = &bytes[i..];
        let mut len = rest.len();
        if rest[0] == b'\'' {
            for j in 1..rest.len() {
                if rest[j] == b'\'' && rest[j - 1] != b'\\' {
                    len = j + 1;
                    break;
                }
            }
        } else if matches!(rest[0], b'.' | b'[' | b']') {
            len = 1;
        } else if let Some(j) = rest.iter().position(|b| matches!(b, b'.' | b'[' | b']')) {
            len = j;
        }
        tokens.push(&path[i..i + len]);
        i += len;
    }

    let mut fields = Vec::new();
    let mut it = tokens.into_iter();
    while let Some(tok) = it.next() {
        match tok {
            "[" => return Err(FieldPathSyntaxError::ArrayNotation),
            "." => match it.next() {
                Some(name) => fields.push(name.to_string()),
                None => return Err(FieldPathSyntaxError::UnexpectedEnd),
            },
            other => return Err(FieldPathSyntaxError::UnexpectedToken(other.to_string())),
        }
    }
    Ok(fields)
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::result::Result;

    fn nodes_data() -> Value {
        json!({
          "kind": "List",
          "items": [
            {
              "kind": "None",
              "metadata": {"name": "127.0.0.1", "labels": {"kubernetes.io/hostname": "127.0.0.1"}},
              "status": {
                "capacity": {"cpu": "4"},
                "ready": true,
                "addresses": [{"type": "LegacyHostIP", "address": "127.0.0.1"}]
              }
            },
            {
              "kind": "None",
              "metadata": {"name": "127.0.0.2", "labels": {"kubernetes.io/hostname": "127.0.0.2"}},
              "status": {
                "capacity": {"cpu": "8"},
                "ready": false,
                "addresses": [
                  {"type": "LegacyHostIP", "address": "127.0.0.2"},
                  {"type": "another", "address": "127.0.0.3"}
                ]
              }
            }
          ],
          "users": [
            {"name": "myself", "user": {}},
            {"name": "e2e", "user": {"username": "admin", "password": "secret"}}
          ]
        })
    }

    fn types_data() -> Value {
        json!({
            "bools": [true, false, true, false],
            "integers": [1, 2, 3, 4],
            "floats": [1.0, 2.2, 3.3, 4.0],
            "strings": ["one", "two", "three", "four"],
            "interfaces": [true, "one", 1, 1.1],
            "maps": [
                {"name": "one", "value": 1},
                {"name": "two", "value": 2.02},
                {"name": "three", "value": 3.03},
                {"name": "four", "value": 4.04}
            ]
        })
    }

    fn containers_data() -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "spec": {"containers": [
                {"image": "img0", "name": "fake0"},
                {"image": "img1", "name": "fake1"},
                {"image": "img2", "name": "fake2"},
                {"image": "img3", "name": "fake3"},
                {"image": "img4", "name": "fake4"},
                {"image": "img5", "name": "fake5"}
            ]}
        })
    }

    fn cr() -> Value {
        json!({
            "apiVersion": "stable.example.com/v1",
            "kind": "CronTab",
            "metadata": {
                "name": "my-crontab",
                "creationTimestamp": "2024-01-01T00:00:00Z",
                "labels": {"app": "cron", "app.kubernetes.io/name": "crontab"}
            },
            "spec": {
                "cronSpec": "* * * * */5",
                "image": "my-awesome-cron-image",
                "replicas": 3,
                "ratio": 0.5,
                "paused": false,
                "containers": [{"name": "a", "image": "img-a"}, {"name": "b", "image": "img-b"}],
                "items": [{"name": "x"}, {"name": "y"}, {"name": "z"}],
                "list": [10, 20, 30, 40],
                "nothing": null,
                "hosts": ["foo", "bar"]
            },
            "status": {
                "conditions": [
                    {"type": "Progressing", "status": "False", "lastTransitionTime": "2024-01-01T00:00:00Z"},
                    {"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-02T12:00:00Z"}
                ],
                "observedGeneration": 7
            }
        })
    }

    /// (template, input, expected text output) — executed strictly (missing keys error).
    #[test]
    fn execute_table_strict() {
        let types = types_data();
        let nodes = nodes_data();
        let store = json!({
            "Name": "jsonpath",
            "Book": [
                {"Category": "reference", "Author": "Nigel Rees", "Title": "Sayings of the Centurey", "Price": 8.95},
                {"Category": "fiction", "Author": "Evelyn Waugh", "Title": "Sword of Honour", "Price": 12.99},
                {"Category": "fiction", "Author": "Herman Melville", "Title": "Moby Dick", "Price": 8.99}
            ],
            "Bicycle": [
                {"Color": "red", "Price": 19.95, "IsNew": true},
                {"Color": "green", "Price": 20.01, "IsNew": false}
            ],
            "Labels": {"engieer": 10, "web/html": 15, "k8s-app": 20},
            "Employees": {"jason": "manager", "dan": "clerk"}
        });
        let cases: Vec<(&str, &Value, &str)> = vec![
            ("{ .bools }", &types, "[true,false,true,false]"),
            ("{ .bools[0] }", &types, "true"),
            ("{ .bools[-1] }", &types, "false"),
            ("{ .bools[0:2] }", &types, "true false"),
            ("{ .bools[:2] }", &types, "true false"),
            ("{ .bools[:4:2] }", &types, "true true"),
            ("{ .integers }", &types, "[1,2,3,4]"),
            ("{ .integers[-2] }", &types, "3"),
            ("{ .integers[:4:2] }", &types, "1 3"),
            ("{ .floats }", &types, "[1,2.2,3.3,4]"),
            ("{ .floats[0] }", &types, "1"),
            ("{ .floats[-2] }", &types, "3.3"),
            ("{ .floats[:4:2] }", &types, "1 3.3"),
            ("{ .strings }", &types, r#"["one","two","three","four"]"#),
            ("{ .strings[-2] }", &types, "three"),
            ("{ .strings[:4:2] }", &types, "one three"),
            ("{ .interfaces }", &types, r#"[true,"one",1,1.1]"#),
            ("{ .interfaces[0:2] }", &types, "true one"),
            ("{ .maps[0] }", &types, r#"{"name":"one","value":1}"#),
            (
                "{ .maps[::2] }",
                &types,
                r#"{"name":"one","value":1} {"name":"three","value":3.03}"#,
            ),
            (
                "{ .maps[1::2] }",
                &types,
                r#"{"name":"two","value":2.02} {"name":"four","value":4.04}"#,
            ),
            ("hello jsonpath", &Value::Null, "hello jsonpath"),
            ("hello {.Name}", &store, "hello jsonpath"),
            ("{$.Labels.web/html}", &store, "15"),
            ("{$.Employees.jason}", &store, "manager"),
            ("{.Labels.k8s-app}", &store, "20"),
            ("{.Bicycle[*].Color}", &store, "red green"),
            (
                "{.Book[*].Author}",
                &store,
                "Nigel Rees Evelyn Waugh Herman Melville",
            ),
            (
                r#"{range .Bicycle[*]}{ "{" }{ @.Color }{ "} " }{end}"#,
                &store,
                "{red} {green} ",
            ),
            ("{..Price}", &store, "19.95 20.01 8.95 12.99 8.99"),
            ("{...Price}", &store, "19.95 20.01 8.95 12.99 8.99"),
            (
                "{.Book[-1:]}",
                &store,
                r#"{"Author":"Herman Melville","Category":"fiction","Price":8.99,"Title":"Moby Dick"}"#,
            ),
            (
                "{..Book[2]}",
                &store,
                r#"{"Author":"Herman Melville","Category":"fiction","Price":8.99,"Title":"Moby Dick"}"#,
            ),
            (
                "{.Bicycle[?(@.IsNew==true)]}",
                &store,
                r#"{"Color":"red","IsNew":true,"Price":19.95}"#,
            ),
            (
                "{.Book[?(@.Price<9.0)].Title}",
                &store,
                "Sayings of the Centurey Moby Dick",
            ),
            (
                "{.Book[?(@.Price>=12.99)].Title}",
                &store,
                "Sword of Honour",
            ),
            (
                "{.Book[?(@.Category!='fiction')].Author}",
                &store,
                "Nigel Rees",
            ),
            (
                "{range .items[*]}{.metadata.name}, {end}{.kind}",
                &nodes,
                "127.0.0.1, 127.0.0.2, List",
            ),
            (
                r#"{range .items[*]}{.metadata.name}{"\t"}{end}"#,
                &nodes,
                "127.0.0.1\t127.0.0.2\t",
            ),
            (
                "{.items[*].status.addresses[*].address}",
                &nodes,
                "127.0.0.1 127.0.0.2 127.0.0.3",
            ),
            (
                "{range .items[*]}{range .status.addresses[*]}{.address}, {end}{end}",
                &nodes,
                "127.0.0.1, 127.0.0.2, 127.0.0.3, ",
            ),
            (
                "{.items[*]['metadata.name', 'status.capacity']}",
                &nodes,
                r#"127.0.0.1 127.0.0.2 {"cpu":"4"} {"cpu":"8"}"#,
            ),
            (
                "{range .items[*]}[{.metadata.name}, {.status.capacity}] {end}",
                &nodes,
                r#"[127.0.0.1, {"cpu":"4"}] [127.0.0.2, {"cpu":"8"}] "#,
            ),
            (
                r#"{.users[?(@.name=="e2e")].user.password}"#,
                &nodes,
                "secret",
            ),
            (
                r"{.items[0].metadata.labels.kubernetes\.io/hostname}",
                &nodes,
                "127.0.0.1",
            ),
            (
                r#"{.items[?(@.metadata.labels.kubernetes\.io/hostname=="127.0.0.1")].kind}"#,
                &nodes,
                "None",
            ),
            (
                "{.items[?(@..ready==true)].metadata.name}",
                &nodes,
                "127.0.0.1",
            ),
            (
                "{.items[?(@.status.ready)].metadata.name}",
                &nodes,
                "127.0.0.1 127.0.0.2",
            ),
            (r#"{.metadata.name}{"\n"}"#, &nodes, "\n"),
        ];
        for (tmpl, input, expected) in cases {
            let jp = JsonPath::parse_template(tmpl).unwrap_or_else(|e| panic!("{tmpl}: {e}"));
            if tmpl == r#"{.metadata.name}{"\n"}"# {
                // strict mode: the missing field is an error
                assert!(jp.execute(input, false).is_err(), "{tmpl}");
                assert_eq!(jp.execute(input, true).unwrap(), expected, "{tmpl}");
                continue;
            }
            let out = jp
                .execute(input, false)
                .unwrap_or_else(|e| panic!("{tmpl}: {e}"));
            assert_eq!(out, expected, "template {tmpl}");
        }
    }

    #[test]
    fn execute_misc_inputs() {
        let cases: Vec<(&str, Value, &str)> = vec![
            ("{..}", json!([1, 2, 3]), "[1,2,3]"),
            ("{[?(@<5)]}", json!([2, 6, 3, 7]), "2 3"),
            (r#"{"{"}"#, Value::Null, "{"),
            ("{[1,3,4]}", json!([0, 1, 2, 3, 4]), "1 3 4"),
            ("{[0:2]}", json!(["Monday", "Tudesday"]), "Monday Tudesday"),
            (
                "{[?(@.z)].id}",
                json!([{"id": "i1", "x": 4}, {"id": "i2", "z": 1}, {"id": "i5", "z": null}]),
                "i2 i5",
            ),
            ("{[0]['id']}", json!([{"id": "i1"}]), "i1"),
            ("{[-1]['x']}", json!([{"x": 1}, {"x": null}]), "null"),
            ("{.a}", json!({"a": 1_000_000.0}), "1e+06"),
            ("{.a}", json!({"a": 123_456.0}), "123456"),
            ("{.a}", json!({"a": 0.00001}), "1e-05"),
            ("{.a}", json!({"a": 0.0001}), "0.0001"),
            (
                "{.a}",
                json!({"a": [0.0000001, 1e21, 1e20, "<&>"]}),
                r#"[1e-7,1e+21,100000000000000000000,"\u003c\u0026\u003e"]"#,
            ),
            ("{.a}", json!({"a": {"b": 2, "a": 1}}), r#"{"a":1,"b":2}"#),
            ("{.a.*}", json!({"a": "hi"}), "104 105"),
            ("{.a[?(@ == 1.5)]}", json!({"a": [1.5, 2.5]}), "1.5"),
            ("{.a[?(@ > -1)]}", json!({"a": [-2, 0, 3]}), "0 3"),
            ("{.a[?(@ == true)]}", json!({"a": [true, false]}), "true"),
            (
                "{.a[?(@.b == @.c)].n}",
                json!({"a": [{"b": 1, "c": 1, "n": "x"}, {"b": 1, "c": 2, "n": "y"}]}),
                "x",
            ),
            ("{.a[]}", json!({"a": [7, 8]}), "7"),
            ("{.a[*]}", json!({"a": []}), ""),
            ("{1}{true}{1.5}", json!({}), "1true1.5"),
        ];
        for (tmpl, input, expected) in cases {
            let jp = JsonPath::parse_template(tmpl).unwrap_or_else(|e| panic!("{tmpl}: {e}"));
            let out = jp
                .execute(&input, false)
                .unwrap_or_else(|e| panic!("{tmpl}: {e}"));
            assert_eq!(out, expected, "template {tmpl}");
        }
    }

    #[test]
    fn recursive_descent_unordered() {
        let jp = JsonPath::parse("..name").unwrap();
        let mut got: Vec<String> = jp
            .eval(&nodes_data())
            .unwrap()
            .into_iter()
            .map(|v| v.as_str().unwrap_or_default().to_string())
            .collect();
        got.sort();
        assert_eq!(got, ["127.0.0.1", "127.0.0.2", "e2e", "myself"]);
    }

    #[test]
    fn nested_and_empty_ranges() {
        let data = json!({"items": [
            {"metadata": {"name": "pod1"}, "spec": {"containers": [
                {"name": "foo", "another": [{"name": "value1"}, {"name": "value2"}]},
                {"name": "bar", "another": [{"name": "value1"}, {"name": "value2"}]}
            ]}},
            {"metadata": {"name": "pod2"}, "spec": {"containers": [
                {"name": "baz", "another": [{"name": "value1"}, {"name": "value2"}]}
            ]}}
        ]});
        let cases = [
            (
                r#"{range .items[*]}{.metadata.name}{":"}{range @.spec.containers[*]}{.name}{","}{end}{"+"}{end}"#,
                "pod1:foo,bar,+pod2:baz,+",
            ),
            (
                r##"{range .items[*]}{.metadata.name}{"~"}{range @.spec.containers[*]}{.name}{":"}{range @.another[*]}{.name}{","}{end}{"+"}{end}{"#"}{end}"##,
                "pod1~foo:value1,value2,+bar:value1,value2,+#pod2~baz:value1,value2,+#",
            ),
            (
                r#"{range .items[*]}{.metadata.name}{"\t"}{range @.spec.containers[*]}{.name}{" "}{end}{"\t"}{range @.spec.containers[*]}{.name}{" "}{end}{"\n"}{end}"#,
                "pod1\tfoo bar \tfoo bar \npod2\tbaz \tbaz \n",
            ),
        ];
        for (tmpl, expected) in cases {
            let jp = JsonPath::parse_template(tmpl).unwrap();
            assert_eq!(jp.execute(&data, false).unwrap(), expected, "{tmpl}");
        }

        let empty = json!({"items": []});
        for tmpl in [
            "{range .items[*]}{.metadata.name}{end}",
            r#"{range .items[*]}{.metadata.name}{":"}{range @.spec.containers[*]}{.name}{","}{end}{"+"}{end}"#,
        ] {
            let jp = JsonPath::parse_template(tmpl).unwrap();
            assert_eq!(jp.execute(&empty, true).unwrap(), "", "{tmpl}");
        }

        let pods = json!({"items": [
            {"metadata": {"name": "pod1"}, "status": {"phase": "Running"}},
            {"metadata": {"name": "pod2"}, "status": {"phase": "Running"}},
            {"resourceVersion": ""}
        ]});
        let jp = JsonPath::parse_template(
            r#"{range .items[?(.status.phase=="Running")]}{.metadata.name}{" is Running\n"}{end}"#,
        )
        .unwrap();
        assert_eq!(
            jp.execute(&pods, true).unwrap(),
            "pod1 is Running\npod2 is Running\n"
        );
    }

    #[test]
    fn filter_missing_keys() {
        let data = json!({"items": [
            {"metadata": {"name": "pod1", "annotations": {"color": "blue"}}},
            {"metadata": {"name": "pod2"}},
            {"metadata": {"name": "pod3", "annotations": {"color": "green"}}},
            {"metadata": {"name": "pod4", "annotations": {"color": "blue"}}}
        ]});
        let jp =
            JsonPath::parse(r#"{.items[?(@.metadata.annotations.color=="blue")].metadata.name}"#)
                .unwrap();
        assert_eq!(jp.execute(&data, true).unwrap(), "pod1 pod4");
        assert_eq!(
            jp.execute(&data, false).unwrap_err(),
            JsonPathError::Eval("annotations is not found".into())
        );
    }

    /// (expression, expected matches) against the CR from `cr()` using `eval`.
    #[test]
    fn eval_printer_column_paths() {
        let obj = cr();
        let cases: Vec<(&str, Vec<Value>)> = vec![
            (".spec.replicas", vec![json!(3)]),
            (".metadata.labels.app", vec![json!("cron")]),
            (
                r#".status.conditions[?(@.type=="Ready")].status"#,
                vec![json!("True")],
            ),
            (
                ".status.conditions[?(@.type=='Ready')].status",
                vec![json!("True")],
            ),
            (
                r#".status.conditions[?(@.type!="Ready")].type"#,
                vec![json!("Progressing")],
            ),
            (".spec.containers[0].image", vec![json!("img-a")]),
            (
                ".spec.items[*].name",
                vec![json!("x"), json!("y"), json!("z")],
            ),
            (".spec.list[-1]", vec![json!(40)]),
            (".spec.list[1:3]", vec![json!(20), json!(30)]),
            (".spec.list[::2]", vec![json!(10), json!(30)]),
            (".spec.list[0,2]", vec![json!(10), json!(30)]),
            (
                ".spec['replicas', 'image']",
                vec![json!(3), json!("my-awesome-cron-image")],
            ),
            ("['spec.replicas']", vec![json!(3)]),
            (".spec['replicas']", vec![json!(3)]),
            (
                r".metadata.labels.app\.kubernetes\.io/name",
                vec![json!("crontab")],
            ),
            (
                r".metadata.labels['app\.kubernetes\.io/name']",
                vec![json!("crontab")],
            ),
            ("..observedGeneration", vec![json!(7)]),
            (
                ".spec.list[?(@ > 15)]",
                vec![json!(20), json!(30), json!(40)],
            ),
            (".spec.list[?(@ <= 20)]", vec![json!(10), json!(20)]),
            (".spec.list[?(@ < 20)]", vec![json!(10)]),
            (".spec.list[?(@ >= 40)]", vec![json!(40)]),
            (
                ".spec.containers[?(@.name)].name",
                vec![json!("a"), json!("b")],
            ),
            (".spec.containers[?(@.missing)].name", vec![]),
            (".spec.nothing", vec![Value::Null]),
            (".spec.missing", vec![]),
            (".spec.missing.deeper[0]", vec![]),
            (".status.conditions[?(@.type==\"Nope\")].status", vec![]),
            ("$.spec.paused", vec![json!(false)]),
            ("{.spec.replicas}", vec![json!(3)]),
            (".spec.hosts", vec![json!(["foo", "bar"])]),
            (".spec.ratio", vec![json!(0.5)]),
        ];
        for (expr, expected) in cases {
            let jp = JsonPath::parse(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
            let got = jp.eval(&obj).unwrap_or_else(|e| panic!("{expr}: {e}"));
            assert_eq!(got, expected, "expression {expr}");
        }
    }

    #[test]
    fn parse_errors() {
        let cases = [
            ("{.hello", "unclosed action"),
            ("{*}", "unrecognized character in action: U+002A '*'"),
            ("{+12.3.0}", "cannot parse number +12.3.0"),
            ("{[1}", "unterminated array"),
            ("{[?(.price]}", "unterminated filter"),
            ("{........}", "invalid multiple recursive descent"),
            ("{[a]}", "invalid array index a"),
            ("{[1:x]}", "invalid array index 1:x"),
            ("{[-]}", "array index - is not a number"),
            ("{\"abc}", "unterminated quoted string"),
            (r#"{"\q"}"#, r#"unquote string "\q" error invalid syntax"#),
            ("{[?(@.a==1)x}", "unclosed array expect ]"),
            (r"{\\\}", r"unrecognized character in action: U+005C '\'"),
        ];
        for (tmpl, msg) in cases {
            let err = JsonPath::parse_template(tmpl).unwrap_err();
            assert_eq!(
                err,
                JsonPathError::Parse(msg.to_string()),
                "template {tmpl}"
            );
        }
        // a printer column path is wrapped in braces, so braces inside it are invalid
        assert!(JsonPath::parse_printer_column("{.spec}").is_err());
        assert!(JsonPath::parse(".spec.list[").is_err());
    }

    #[test]
    fn parse_quotes_in_filters() {
        let data = json!([
            {"v": "()", "n": 1},
            {"v": "(\"\")", "n": 2},
            {"v": "())(", "n": 3},
            {"v": "{[()]}", "n": 4},
            {"v": "''", "n": 5},
            {"v": "\"\"", "n": 6},
            {"v": "\\'", "n": 7},
            {"v": "Linux", "n": 8}
        ]);
        let cases = [
            (r#"{[?(@.v == "()")].n}"#, "1"),
            (r#"{[?(@.v == "(\"\")")].n}"#, "2"),
            (r#"{[?(@.v == "())(")].n}"#, "3"),
            (r#"{[?(@.v == "{[()]}")].n}"#, "4"),
            (r#"{[?(@.v == "''")].n}"#, "5"),
            (r#"{[?(@.v == '""')].n}"#, "6"),
            (r"{[?(@.v == '\\\'')].n}", "7"),
            (r"{[?(@.v == 'Linux')].n}", "8"),
        ];
        for (tmpl, expected) in cases {
            let jp = JsonPath::parse_template(tmpl).unwrap_or_else(|e| panic!("{tmpl}: {e}"));
            assert_eq!(jp.execute(&data, false).unwrap(), expected, "{tmpl}");
        }
    }

    #[test]
    fn eval_errors() {
        let containers = containers_data();
        let store = json!({"Labels": {"a": 1}, "Book": [{"Price": 1}]});
        let cases: Vec<(&str, &Value, &str)> = vec![
            ("{hello}", &store, "unrecognized identifier hello"),
            ("{.hello}", &store, "hello is not found"),
            (
                "{.Labels[0]}",
                &store,
                "map[string]interface {} is not array or slice",
            ),
            (
                "{.Book[?(@.Price<>10)]}",
                &store,
                "unrecognized filter operator <>",
            ),
            (
                "{range .Labels.*}{@}{end}{end}",
                &store,
                "not in range, nothing to end",
            ),
            (
                "{.Labels[?(@.a)]}",
                &store,
                "map[a:1] is not array or slice and cannot be filtered",
            ),
            (
                "{.Book[?(@.Price=='1')]}",
                &store,
                "incompatible types for comparison",
            ),
            (
                "{.Book[?(@.Price==1.0)]}",
                &store,
                "incompatible types for comparison",
            ),
            ("{.Book[?(@==1)]}", &store, "invalid type for comparison"),
            (
                "{.Book[?(@.Price>true)]}",
                &store,
                "incompatible types for comparison",
            ),
            (
                "{.spec.containers[-7].name}",
                &containers,
                "array index out of bounds: index -1, length 6",
            ),
            (
                "{.spec.containers[6].name}",
                &containers,
                "array index out of bounds: index 6, length 6",
            ),
            (
                "{.spec.containers[0:7].name}",
                &containers,
                "array index out of bounds: index 6, length 6",
            ),
            (
                "{.spec.containers[-1:0].name}",
                &containers,
                "starting index 5 is greater than ending index 0",
            ),
            (
                "{.spec.containers[3:1].name}",
                &containers,
                "starting index 3 is greater than ending index 1",
            ),
            (
                "{.spec.containers[0:6:0].name}",
                &containers,
                "step must be > 0",
            ),
            (
                "{.spec.containers[0:6:-1].name}",
                &containers,
                "step must be > 0",
            ),
            ("{.kind[0]}", &containers, "string is not array or slice"),
        ];
        for (tmpl, input, msg) in cases {
            let jp = JsonPath::parse_template(tmpl).unwrap_or_else(|e| panic!("{tmpl}: {e}"));
            let err = jp.eval_strict(input).unwrap_err();
            assert_eq!(err, JsonPathError::Eval(msg.to_string()), "template {tmpl}");
        }
        // bools can't be ordered
        let jp = JsonPath::parse("{[?(@ < true)]}").unwrap();
        assert_eq!(
            jp.eval(&json!([true])).unwrap_err(),
            JsonPathError::Eval("invalid type for comparison".into())
        );
    }

    #[test]
    fn slices_and_steps() {
        let data = containers_data();
        let cases = [
            ("{.spec.containers[0].name}", "fake0"),
            ("{.spec.containers[0:0].name}", ""),
            (
                "{.spec.containers[0:-1].name}",
                "fake0 fake1 fake2 fake3 fake4",
            ),
            ("{.spec.containers[-1].name}", "fake5"),
            ("{.spec.containers[-1:].name}", "fake5"),
            ("{.spec.containers[-2:].name}", "fake4 fake5"),
            ("{.spec.containers[-6].name}", "fake0"),
            ("{.spec.containers[7:7].name}", ""),
            ("{.spec.containers[-7:-7].name}", ""),
            (
                "{.spec.containers[0:].name}",
                "fake0 fake1 fake2 fake3 fake4 fake5",
            ),
            (
                "{.spec.containers[0:6:].name}",
                "fake0 fake1 fake2 fake3 fake4 fake5",
            ),
            (
                "{.spec.containers[0:6:1].name}",
                "fake0 fake1 fake2 fake3 fake4 fake5",
            ),
            ("{.spec.containers[1:4:2].name}", "fake1 fake3"),
            ("{.spec.containers[1:4:3].name}", "fake1"),
            ("{.spec.containers[1:4:4].name}", "fake1"),
            ("{.spec.containers[0:6:2].name}", "fake0 fake2 fake4"),
            ("{.spec.containers[0:6:5].name}", "fake0 fake5"),
            ("{.spec.containers[0:6:6].name}", "fake0"),
            (
                "{.spec.containers[*].name}",
                "fake0 fake1 fake2 fake3 fake4 fake5",
            ),
        ];
        for (tmpl, expected) in cases {
            let jp = JsonPath::parse_template(tmpl).unwrap();
            assert_eq!(jp.execute(&data, false).unwrap(), expected, "{tmpl}");
        }
    }

    fn at(rfc3339: &str) -> SystemTime {
        let (secs, nanos) = parse_rfc3339(rfc3339).unwrap();
        UNIX_EPOCH + std::time::Duration::new(u64::try_from(secs).unwrap(), nanos)
    }

    /// (column path, column type, expected cell) for the CR in `cr()`.
    #[test]
    fn printer_column_cells() {
        let obj = cr();
        let now = at("2024-01-03T00:00:00Z");
        let cases: Vec<(&str, &str, Value)> = vec![
            (
                r#".status.conditions[?(@.type=="Ready")].status"#,
                "string",
                json!("True"),
            ),
            (".spec.cronSpec", "string", json!("* * * * */5")),
            (".spec.replicas", "integer", json!(3)),
            (".spec.replicas", "number", json!(3)),
            (".spec.replicas", "string", json!("3")),
            (".spec.replicas", "boolean", Value::Null),
            (".spec.replicas", "date", Value::Null),
            (".spec.ratio", "integer", json!(0)),
            (".spec.ratio", "number", json!(0.5)),
            (".spec.ratio", "string", json!("0.5")),
            (".spec.paused", "boolean", json!(false)),
            (".spec.paused", "string", json!("false")),
            (".spec.paused", "integer", Value::Null),
            (".spec.image", "integer", Value::Null),
            (".spec.missing", "string", Value::Null),
            (".spec.missing", "integer", Value::Null),
            (".status.missing.deep", "date", Value::Null),
            (".spec.nothing", "string", json!("<no value>")),
            (".spec.nothing", "integer", Value::Null),
            (".spec.hosts", "string", json!(r#"["foo","bar"]"#)),
            (".spec.hosts[0]", "string", json!("foo")),
            (".spec.containers[*].name", "string", json!("a")),
            (
                ".spec.containers[0]",
                "string",
                json!(r#"{"image":"img-a","name":"a"}"#),
            ),
            (".metadata.creationTimestamp", "date", json!("2d")),
            (
                ".status.conditions[1].lastTransitionTime",
                "date",
                json!("12h"),
            ),
            (".spec.list[9]", "integer", Value::Null), // evaluation error → null
            (".spec.replicas", "unknown", Value::Null),
        ];
        for (path, ty, expected) in cases {
            assert_eq!(validate_printer_column_path(path), Ok(()), "{path}");
            let jp = JsonPath::parse_printer_column(path).unwrap_or_else(|e| panic!("{path}: {e}"));
            assert_eq!(
                jp.printer_column_cell_at(&obj, ty, now),
                expected,
                "{path} ({ty})"
            );
        }
        // the free function over eval() results agrees
        let jp = JsonPath::parse(".metadata.creationTimestamp").unwrap();
        let results = jp.eval(&obj).unwrap();
        assert_eq!(printer_cell_at(&results, "date", now), json!("2d"));
        assert_eq!(printer_cell(&[], "string"), Value::Null);
        assert_eq!(printer_cell(&[json!(2.9)], "integer"), json!(2));
        assert_eq!(printer_cell(&[json!(-2.9)], "integer"), json!(-2));
        assert_eq!(printer_cell(&[json!(42)], "number"), json!(42));
        assert_eq!(printer_cell(&[json!(2.75)], "number"), json!(2.75));
        assert_eq!(
            printer_cell(&[json!(1_000_000.0)], "string"),
            json!("1e+06")
        );
        assert_eq!(printer_cell(&[json!(true)], "boolean"), json!(true));
        assert_eq!(printer_cell(&[json!("foo")], "boolean"), Value::Null);
    }

    #[test]
    fn date_cells() {
        let now = at("2024-06-01T12:00:00Z");
        let cases = [
            ("", "<unknown>"),
            ("null", "<unknown>"),
            ("0001-01-01T00:00:00Z", "<unknown>"),
            ("not a date", "<invalid>"),
            ("2024-06-01", "<invalid>"),
            ("2024-02-30T00:00:00Z", "<invalid>"),
            ("2024-06-01T13:00:00Z", "<invalid>"),
            ("2024-06-01T12:00:01Z", "0s"),
            ("2024-06-01T12:00:00Z", "0s"),
            ("2024-06-01T11:59:30Z", "30s"),
            ("2024-06-01T11:58:01Z", "119s"),
            ("2024-06-01T11:58:00Z", "2m"),
            ("2024-06-01T11:55:30Z", "4m30s"),
            ("2024-06-01T11:30:00Z", "30m"),
            ("2024-06-01T09:30:00Z", "150m"),
            ("2024-06-01T07:00:00Z", "5h"),
            ("2024-06-01T06:30:00Z", "5h30m"),
            ("2024-05-31T12:00:00Z", "24h"),
            ("2024-05-29T12:00:00Z", "3d"),
            ("2024-05-29T06:00:00Z", "3d6h"),
            ("2024-01-01T00:00:00Z", "152d"),
            ("2021-06-01T12:00:00Z", "3y1d"),
            ("2010-06-01T12:00:00Z", "14y"),
            ("2024-06-01T14:00:00+02:00", "0s"),
            ("2024-06-01T09:00:00.5-01:00", "119m"),
        ];
        for (ts, expected) in cases {
            assert_eq!(
                printer_cell_at(&[json!(ts)], "date", now),
                json!(expected),
                "timestamp {ts:?}"
            );
        }
    }

    #[test]
    fn go_number_formatting() {
        let cases = [
            (0.0, "0", "0"),
            (1.0, "1", "1"),
            (-2.5, "-2.5", "-2.5"),
            (2.75, "2.75", "2.75"),
            (123_456.0, "123456", "123456"),
            (1_234_567.0, "1.234567e+06", "1234567"),
            (0.0001, "0.0001", "0.0001"),
            (0.00001, "1e-05", "0.00001"),
            (0.0000001, "1e-07", "1e-7"),
            (1e21, "1e+21", "1e+21"),
            (1.5e300, "1.5e+300", "1.5e+300"),
        ];
        for (f, fmt_v, json) in cases {
            assert_eq!(apimachinery::gofmt::format_float(f), fmt_v, "%v of {f}");
            assert_eq!(go_json_float(f), json, "json of {f}");
        }
    }

    #[test]
    fn validate_printer_column_paths() {
        let cases: Vec<(&str, Result<(), String>)> = vec![
            (".spec.replicas", Ok(())),
            (".", Ok(())),
            (r#".status.conditions[?(@.type=="Ready")].status"#, Ok(())),
            (".spec.containers[0].image", Ok(())),
            ("", Err("must not be empty".into())),
            (
                "spec.replicas",
                Err("must be a simple json path starting with .".into()),
            ),
            (
                "{.spec.replicas}",
                Err("must be a simple json path starting with .".into()),
            ),
            (
                "$.spec",
                Err("must be a simple json path starting with .".into()),
            ),
        ];
        for (path, expected) in cases {
            assert_eq!(
                validate_printer_column_path(path).map_err(|e| e.to_string()),
                expected.map_err(|e: String| e),
                "{path}"
            );
        }
    }

    #[test]
    fn validate_selectable_field_paths() {
        let cases: Vec<(&str, Result<Vec<&str>, &str>)> = vec![
            (".spec.color", Ok(vec!["spec", "color"])),
            (".spec.size", Ok(vec!["spec", "size"])),
            (".status.phase", Ok(vec!["status", "phase"])),
            (".spec.'a.b'", Ok(vec!["spec", "'a.b'"])),
            ("", Err("Required value")),
            (
                ".metadata.name",
                Err("must not point to fields in metadata"),
            ),
            (
                ".spec.colors[0]",
                Err("is an invalid path: array notation is not allowed"),
            ),
            (
                ".spec['color']",
                Err("is an invalid path: array notation is not allowed"),
            ),
            (
                ".spec.",
                Err("is an invalid path: unexpected end of JSON path"),
            ),
            (
                "spec.color",
                Err("is an invalid path: expected [ or . but got: spec"),
            ),
            (
                ".spec]",
                Err("is an invalid path: expected [ or . but got: ]"),
            ),
        ];
        for (path, expected) in cases {
            let got = validate_selectable_field_path(path).map_err(|e| e.to_string());
            let expected = expected
                .map(|v| v.into_iter().map(String::from).collect::<Vec<_>>())
                .map_err(String::from);
            assert_eq!(got, expected, "{path}");
        }
    }

    #[test]
    fn parse_accepts_both_forms() {
        let obj = cr();
        let a = JsonPath::parse(".metadata.name").unwrap();
        let b = JsonPath::parse("{.metadata.name}").unwrap();
        assert_eq!(a.eval(&obj).unwrap(), b.eval(&obj).unwrap());
        assert_eq!(a.source(), ".metadata.name");
        assert_eq!(b.to_string(), "{.metadata.name}");
        let t: JsonPath = r#"{.metadata.name}{"\n"}"#.parse().unwrap();
        assert_eq!(t.execute(&obj, true).unwrap(), "my-crontab\n");
        assert_eq!(
            t.find_results(&obj, true).unwrap(),
            vec![vec![json!("my-crontab")], vec![json!("\n")]]
        );
        let r = JsonPath::parse(r#"{range .spec.items[*]}{.name}{","}{end}"#).unwrap();
        assert_eq!(r.execute(&obj, true).unwrap(), "x,y,z,");
        assert_eq!(
            r.eval(&obj).unwrap(),
            vec![
                json!("x"),
                json!(","),
                json!("y"),
                json!(","),
                json!("z"),
                json!(",")
            ]
        );
    }

    #[test]
    fn quirks() {
        let obj = json!({"a": [1, 2], "n": null, "m": {"x": {"y": 1}}});
        // a range without `{end}`: the body runs per item and then once more at the top level
        let jp = JsonPath::parse("{range .a[*]}{@}").unwrap();
        assert_eq!(
            jp.execute(&obj, true).unwrap(),
            r#"12{"a":[1,2],"m":{"x":{"y":1}},"n":null}"#
        );
        // `{end}` outside of a range
        let jp = JsonPath::parse("{.a}{end}").unwrap();
        assert_eq!(
            jp.eval(&obj).unwrap_err(),
            JsonPathError::Eval("not in range, nothing to end".into())
        );
        // filtering null
        let jp = JsonPath::parse(".n[?(@.x)]").unwrap();
        assert_eq!(
            jp.eval(&obj).unwrap_err(),
            JsonPathError::Eval("<nil> is not array or slice and cannot be filtered".into())
        );
        // null is skipped by fields / indexes / wildcards
        for expr in [".n.x", ".n[0]", ".n.*"] {
            assert_eq!(
                JsonPath::parse(expr).unwrap().eval(&obj).unwrap(),
                Vec::<Value>::new()
            );
        }
        // fields do not apply to arrays (use [*])
        assert_eq!(
            JsonPath::parse(".a.x").unwrap().eval(&obj).unwrap(),
            Vec::<Value>::new()
        );
        // union mixing indexes and a wildcard
        assert_eq!(
            JsonPath::parse(".a[1, *]").unwrap().eval(&obj).unwrap(),
            vec![json!(2), json!(1), json!(2)]
        );
        // `..` followed by a filter-less field; recursive descent includes containers only
        assert_eq!(
            JsonPath::parse("..y").unwrap().eval(&obj).unwrap(),
            vec![json!(1)]
        );
        // a dict key is parsed as a field path
        assert_eq!(
            JsonPath::parse(".m['x.y']").unwrap().eval(&obj).unwrap(),
            vec![json!(1)]
        );
        // an empty field name (".") matches nothing
        assert_eq!(
            JsonPath::parse(".").unwrap().eval(&obj).unwrap(),
            Vec::<Value>::new()
        );
        assert_eq!(
            JsonPath::parse(".").unwrap().eval_strict(&obj).unwrap_err(),
            JsonPathError::Eval(" is not found".into())
        );
    }

    #[test]
    fn unquote() {
        assert_eq!(unquote_extend(r#""a\tb""#).as_deref(), Some("a\tb"));
        assert_eq!(unquote_extend(r"'it\'s'").as_deref(), Some("it's"));
        assert_eq!(unquote_extend(r#"'\"'"#), None);
        assert_eq!(
            unquote_extend(r#""\u00e9\x41\101""#).as_deref(),
            Some("éAA")
        );
        assert_eq!(unquote_extend(r#""a"b""#), None);
        assert_eq!(unquote_extend("\""), None);
    }
}
