//! Label selectors: the `labelSelector` query syntax (`labels.Parse`) and the
//! `metav1.LabelSelector` wire object (`LabelSelectorAsSelector`).

use std::borrow::Cow;
use std::fmt;

use serde_json::{Map, Value};

use super::SelectorError;
use crate::gofmt::quote as go_quote;
use crate::validation::{is_qualified_name, is_valid_label_value};

/// How a requirement relates a label to its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `a=b`
    Equals,
    /// `a==b` (same meaning as `=`, kept apart so it prints back as written)
    DoubleEquals,
    /// `a!=b`: also true when the label is absent.
    NotEquals,
    /// `a in (x,y)`
    In,
    /// `a notin (x,y)`: also true when the label is absent.
    NotIn,
    /// `a`
    Exists,
    /// `!a`
    DoesNotExist,
    /// `a>1`: integer comparison.
    GreaterThan,
    /// `a<1`: integer comparison.
    LessThan,
}

impl Operator {
    /// Upstream's `selection.Operator` string (`=`, `in`, `exists`, `gt`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => "in",
            Operator::NotIn => "notin",
            Operator::Exists => "exists",
            Operator::DoesNotExist => "!",
            Operator::GreaterThan => "gt",
            Operator::LessThan => "lt",
        }
    }
}

/// One `key op values` clause. Values are kept sorted and deduplicated: they
/// are a set, and this makes equal requirements compare equal.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requirement {
    key: String,
    op: Operator,
    values: Vec<String>,
}

impl Requirement {
    /// Validates as upstream's `labels.NewRequirement`: the key must be a
    /// qualified name, the values label values, and their count fit `op`.
    pub fn new(key: &str, op: Operator, values: Vec<String>) -> Result<Self, SelectorError> {
        let mut errs = Vec::new();
        if let Some(e) = key_error(key, "key") {
            errs.push(e);
        }
        errs.extend(arity_errors(op, &values));
        for (i, v) in values.iter().enumerate() {
            if let Some(e) = value_error(key, v, i) {
                errs.push(e);
            }
        }
        if !errs.is_empty() {
            return Err(SelectorError::Invalid(aggregate(errs)));
        }
        Ok(Self::new_unchecked(key, op, values))
    }

    fn new_unchecked(key: &str, op: Operator, mut values: Vec<String>) -> Self {
        values.sort();
        values.dedup();
        Requirement {
            key: key.to_string(),
            op,
            values,
        }
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn op(&self) -> Operator {
        self.op
    }

    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Whether a label set whose value for `key` is `value` (None: absent)
    /// satisfies this requirement.
    pub fn matches_value(&self, value: Option<&str>) -> bool {
        let has = |v: &str| self.values.iter().any(|x| x == v);
        match self.op {
            Operator::Equals | Operator::DoubleEquals | Operator::In => value.is_some_and(has),
            Operator::NotEquals | Operator::NotIn => value.is_none_or(|v| !has(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => self.compare_int(value),
        }
    }

    /// `gt`/`lt`: both sides must parse as i64, otherwise no match.
    fn compare_int(&self, value: Option<&str>) -> bool {
        let (Some(actual), [bound]) = (
            value.and_then(|v| v.parse::<i64>().ok()),
            self.values.as_slice(),
        ) else {
            return false;
        };
        let Ok(bound) = bound.parse::<i64>() else {
            return false;
        };
        match self.op {
            Operator::GreaterThan => actual > bound,
            _ => actual < bound,
        }
    }
}

/// Upstream's `Requirement.String()`: `!a`, `a`, `a=b`, `a in (x,y)`, `a>1`.
impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let joined = self.values.join(",");
        match self.op {
            Operator::Exists => write!(f, "{}", self.key),
            Operator::DoesNotExist => write!(f, "!{}", self.key),
            Operator::In => write!(f, "{} in ({joined})", self.key),
            Operator::NotIn => write!(f, "{} notin ({joined})", self.key),
            Operator::GreaterThan => write!(f, "{}>{joined}", self.key),
            Operator::LessThan => write!(f, "{}<{joined}", self.key),
            op => write!(f, "{}{}{joined}", self.key, op.as_str()),
        }
    }
}

/// A conjunction of requirements (or, for a null `metav1.LabelSelector`,
/// the selector that matches nothing).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
    nothing: bool,
}

impl LabelSelector {
    /// Matches every label set (the empty selector).
    pub fn everything() -> Self {
        Self::default()
    }

    /// Matches no label set: what a null `metav1.LabelSelector` means.
    pub fn nothing() -> Self {
        LabelSelector {
            requirements: Vec::new(),
            nothing: true,
        }
    }

    /// From already validated requirements, ordered by key as upstream does
    /// so that printing is deterministic.
    pub fn from_requirements(mut requirements: Vec<Requirement>) -> Self {
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        LabelSelector {
            requirements,
            nothing: false,
        }
    }

    /// Parses the `labelSelector` query syntax, as upstream's `labels.Parse`.
    pub fn parse(input: &str) -> Result<Self, SelectorError> {
        let tokens = lex_all(input);
        let requirements = Parser { tokens, pos: 0 }.parse()?;
        Ok(Self::from_requirements(requirements))
    }

    /// Converts a `metav1.LabelSelector` JSON object (`matchLabels`,
    /// `matchExpressions`) as upstream's `LabelSelectorAsSelector`: `null`
    /// matches nothing, `{}` everything, and the first bad requirement fails.
    pub fn from_json(value: &Value) -> Result<Self, SelectorError> {
        let obj = match value {
            Value::Null => return Ok(Self::nothing()),
            Value::Object(obj) => obj,
            other => return Err(type_error("", "object", other)),
        };
        let mut requirements = match obj.get("matchLabels") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Object(labels)) => match_labels(labels)?,
            Some(other) => return Err(type_error("matchLabels", "object", other)),
        };
        match obj.get("matchExpressions") {
            None | Some(Value::Null) => {}
            Some(Value::Array(exprs)) => {
                for expr in exprs {
                    requirements.push(match_expression(expr)?);
                }
            }
            Some(other) => return Err(type_error("matchExpressions", "array", other)),
        }
        Ok(Self::from_requirements(requirements))
    }

    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// True when the selector does not restrict anything (matches everything).
    pub fn is_empty(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    /// True for the selector built from a null `metav1.LabelSelector`.
    pub fn is_nothing(&self) -> bool {
        self.nothing
    }

    /// Whether an object's `metadata.labels` (None: no labels) satisfy every
    /// requirement. Non-string label values compare by their JSON text.
    pub fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        self.matches_with(|key| labels?.get(key).map(label_text))
    }

    /// Like [`matches`](Self::matches), for labels held in any other form.
    pub fn matches_with<S, F>(&self, get: F) -> bool
    where
        S: AsRef<str>,
        F: Fn(&str) -> Option<S>,
    {
        !self.nothing
            && self
                .requirements
                .iter()
                .all(|r| r.matches_value(get(&r.key).as_ref().map(|s| s.as_ref())))
    }

    /// The single value `label` must equal, if the selector pins one (lets
    /// callers use an index instead of a scan).
    pub fn requires_exact_match(&self, label: &str) -> Option<&str> {
        let r = self.requirements.iter().find(|r| r.key == label)?;
        match (r.op, r.values.as_slice()) {
            (Operator::Equals | Operator::DoubleEquals | Operator::In, [v]) => Some(v),
            _ => None,
        }
    }
}

/// Upstream's `Selector.String()`: requirements joined by `,`.
impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for LabelSelector {
    type Err = SelectorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

fn label_text(v: &Value) -> Cow<'_, str> {
    match v {
        Value::String(s) => Cow::Borrowed(s),
        other => Cow::Owned(other.to_string()),
    }
}

fn match_labels(labels: &Map<String, Value>) -> Result<Vec<Requirement>, SelectorError> {
    labels
        .iter()
        .map(|(k, v)| {
            let v = v
                .as_str()
                .ok_or_else(|| type_error(&format!("matchLabels.{k}"), "string", v))?;
            Requirement::new(k, Operator::Equals, vec![v.to_string()])
        })
        .collect()
}

fn match_expression(expr: &Value) -> Result<Requirement, SelectorError> {
    let key = expr.get("key").and_then(Value::as_str).unwrap_or("");
    let operator = expr.get("operator").and_then(Value::as_str).unwrap_or("");
    let op = match operator {
        "In" => Operator::In,
        "NotIn" => Operator::NotIn,
        "Exists" => Operator::Exists,
        "DoesNotExist" => Operator::DoesNotExist,
        other => return Err(SelectorError::UnknownOperator(other.to_string())),
    };
    let values = match expr.get("values") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(vs)) => vs
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| type_error("values", "string", v))
            })
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(type_error("values", "array", other)),
    };
    Requirement::new(key, op, values)
}

fn type_error(field: &str, want: &str, got: &Value) -> SelectorError {
    let at = if field.is_empty() {
        String::new()
    } else {
        format!("{field}: ")
    };
    SelectorError::Invalid(format!("{at}Invalid value: {got}: must be of type {want}"))
}

// ---------------------------------------------------------------------------
// Validation messages, formatted as upstream's field errors.

/// The key check. The parser reports it on a nil path (`<nil>`), the
/// constructor on `key`, as upstream does.
fn key_error(key: &str, path: &str) -> Option<String> {
    let msgs = is_qualified_name(key);
    (!msgs.is_empty()).then(|| invalid(path, &go_quote(key), &msgs.join("; ")))
}

fn value_error(key: &str, value: &str, index: usize) -> Option<String> {
    let msgs = is_valid_label_value(value);
    let path = format!("values[{index}][{key}]");
    (!msgs.is_empty()).then(|| invalid(&path, &go_quote(value), &msgs.join("; ")))
}

fn arity_errors(op: Operator, values: &[String]) -> Vec<String> {
    let shown = || go_string_slice(values);
    match op {
        Operator::In | Operator::NotIn if values.is_empty() => vec![invalid(
            "values",
            &shown(),
            "for 'in', 'notin' operators, values set can't be empty",
        )],
        Operator::Equals | Operator::DoubleEquals | Operator::NotEquals if values.len() != 1 => {
            vec![invalid(
                "values",
                &shown(),
                "exact-match compatibility requires one single value",
            )]
        }
        Operator::Exists | Operator::DoesNotExist if !values.is_empty() => vec![invalid(
            "values",
            &shown(),
            "values set must be empty for exists and does not exist",
        )],
        Operator::GreaterThan | Operator::LessThan => int_errors(values, shown),
        _ => Vec::new(),
    }
}

fn int_errors(values: &[String], shown: impl Fn() -> String) -> Vec<String> {
    let mut errs = Vec::new();
    if values.len() != 1 {
        errs.push(invalid(
            "values",
            &shown(),
            "for 'Gt', 'Lt' operators, exactly one value is required",
        ));
    }
    for (i, v) in values
        .iter()
        .enumerate()
        .filter(|(_, v)| v.parse::<i64>().is_err())
    {
        errs.push(invalid(
            &format!("values[{i}]"),
            &go_quote(v),
            "for 'Gt', 'Lt' operators, the value must be an integer",
        ));
    }
    errs
}

fn invalid(path: &str, shown: &str, detail: &str) -> String {
    format!("{path}: Invalid value: {shown}: {detail}")
}

/// Go's `%#v` of a `[]string` (nil when empty, as upstream passes it).
fn go_string_slice(values: &[String]) -> String {
    if values.is_empty() {
        return "[]string(nil)".into();
    }
    let quoted: Vec<String> = values.iter().map(|v| go_quote(v)).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// Upstream's error aggregate: one message as is, several deduplicated in `[a, b]`.
fn aggregate(mut errs: Vec<String>) -> String {
    let mut seen = std::collections::HashSet::new();
    errs.retain(|e| seen.insert(e.clone()));
    match errs.as_slice() {
        [one] => one.clone(),
        _ => format!("[{}]", errs.join(", ")),
    }
}

// ---------------------------------------------------------------------------
// Lexer: byte-oriented like upstream's, so that odd input (NUL bytes,
// operators glued to words) tokenizes the same way.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    End,
    ClosedPar,
    Comma,
    Not,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

/// Where a token is read: `in`/`notin` are operators only after a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

fn special_token(s: &[u8]) -> Option<Tok> {
    Some(match s {
        b")" => Tok::ClosedPar,
        b"," => Tok::Comma,
        b"!" => Tok::Not,
        b"==" => Tok::DoubleEquals,
        b"=" => Tok::Equals,
        b">" => Tok::GreaterThan,
        b"<" => Tok::LessThan,
        b"!=" => Tok::NotEquals,
        b"(" => Tok::OpenPar,
        _ => return None,
    })
}

struct Lexer<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    /// The next byte, or 0 at the end; a NUL byte reads as 0 too (as upstream).
    fn read(&mut self) -> u8 {
        match self.s.as_bytes().get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                b
            }
            None => 0,
        }
    }

    fn lex(&mut self) -> (Tok, &'a str) {
        let mut ch = self.read();
        while is_whitespace(ch) {
            ch = self.read();
        }
        if ch == 0 {
            return (Tok::End, "");
        }
        self.pos -= 1;
        if is_special(ch) {
            self.scan_special()
        } else {
            self.scan_word()
        }
    }

    /// A run of non-special, non-blank bytes: `in`, `notin` or an identifier.
    fn scan_word(&mut self) -> (Tok, &'a str) {
        let start = self.pos;
        let mut end = start;
        loop {
            match self.read() {
                0 => break,
                b if is_special(b) || is_whitespace(b) => {
                    self.pos -= 1;
                    break;
                }
                _ => end = self.pos,
            }
        }
        let word = &self.s[start..end];
        let tok = match word {
            "in" => Tok::In,
            "notin" => Tok::NotIn,
            _ => Tok::Identifier,
        };
        (tok, word)
    }

    /// The longest operator at the cursor (`!=` over `!`, `==` over `=`).
    fn scan_special(&mut self) -> (Tok, &'a str) {
        let start = self.pos;
        let mut last: Option<(Tok, usize)> = None;
        loop {
            match self.read() {
                0 => break,
                b if is_special(b) => {
                    if let Some(tok) = special_token(&self.s.as_bytes()[start..self.pos]) {
                        last = Some((tok, self.pos));
                    } else if last.is_some() {
                        self.pos -= 1;
                        break;
                    }
                }
                _ => {
                    self.pos -= 1;
                    break;
                }
            }
        }
        // Every single special byte is a token, so `last` is always set.
        let (tok, end) = last.unwrap_or((Tok::End, start));
        (tok, &self.s[start..end])
    }
}

fn lex_all(input: &str) -> Vec<(Tok, &str)> {
    let mut lexer = Lexer { s: input, pos: 0 };
    let mut tokens = Vec::new();
    loop {
        let item = lexer.lex();
        tokens.push(item);
        if item.0 == Tok::End {
            return tokens;
        }
    }
}

// ---------------------------------------------------------------------------
// Parser: upstream's recursive descent over the token list, same messages.

struct Parser<'a> {
    tokens: Vec<(Tok, &'a str)>,
    pos: usize,
}

type ParseResult<T> = Result<T, String>;

impl<'a> Parser<'a> {
    fn lookahead(&self, ctx: Context) -> (Tok, &'a str) {
        let last = self.tokens.len() - 1;
        let (tok, lit) = self.tokens[self.pos.min(last)];
        (in_context(tok, ctx), lit)
    }

    fn consume(&mut self, ctx: Context) -> (Tok, &'a str) {
        let item = self.lookahead(ctx);
        self.pos += 1;
        item
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, SelectorError> {
        let mut requirements = Vec::new();
        loop {
            match self.lookahead(Context::Values) {
                (Tok::Identifier | Tok::Not, _) => {}
                (Tok::End, _) => return Ok(requirements),
                (_, lit) => return Err(syntax(lit, "!, identifier, or 'end of string'")),
            }
            let r = self
                .parse_requirement()
                .map_err(SelectorError::Requirement)?;
            requirements.push(r);
            match self.consume(Context::Values) {
                (Tok::End, _) => return Ok(requirements),
                (Tok::Comma, _) => match self.lookahead(Context::Values) {
                    (Tok::Identifier | Tok::Not, _) => {}
                    (_, lit) => return Err(syntax(lit, "identifier after ','")),
                },
                (_, lit) => return Err(syntax(lit, "',' or 'end of string'")),
            }
        }
    }

    fn parse_requirement(&mut self) -> ParseResult<Requirement> {
        let (key, op) = self.parse_key_and_infer_operator()?;
        if let Some(op) = op {
            return Ok(Requirement::new_unchecked(key, op, Vec::new()));
        }
        let op = self.parse_operator()?;
        let values = match op {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        let errs: Vec<String> = arity_errors(op, &values)
            .into_iter()
            .chain(
                values
                    .iter()
                    .enumerate()
                    .filter_map(|(i, v)| value_error(key, v, i)),
            )
            .collect();
        if !errs.is_empty() {
            return Err(aggregate(errs));
        }
        Ok(Requirement::new_unchecked(key, op, values))
    }

    /// `[!]key`, with Exists/DoesNotExist decided when nothing follows.
    fn parse_key_and_infer_operator(&mut self) -> ParseResult<(&'a str, Option<Operator>)> {
        let mut tok = self.consume(Context::Values);
        let negated = tok.0 == Tok::Not;
        if negated {
            tok = self.consume(Context::Values);
        }
        let (Tok::Identifier, key) = tok else {
            return Err(format!("found '{}', expected: identifier", tok.1));
        };
        if let Some(e) = key_error(key, "<nil>") {
            return Err(e);
        }
        if negated {
            return Ok((key, Some(Operator::DoesNotExist)));
        }
        let bare = matches!(self.lookahead(Context::Values).0, Tok::End | Tok::Comma);
        Ok((key, bare.then_some(Operator::Exists)))
    }

    fn parse_operator(&mut self) -> ParseResult<Operator> {
        Ok(match self.consume(Context::KeyAndOperator) {
            (Tok::In, _) => Operator::In,
            (Tok::Equals, _) => Operator::Equals,
            (Tok::DoubleEquals, _) => Operator::DoubleEquals,
            (Tok::GreaterThan, _) => Operator::GreaterThan,
            (Tok::LessThan, _) => Operator::LessThan,
            (Tok::NotIn, _) => Operator::NotIn,
            (Tok::NotEquals, _) => Operator::NotEquals,
            (_, lit) => {
                return Err(format!(
                    "found '{lit}', expected: in, notin, =, ==, !=, gt, lt"
                ));
            }
        })
    }

    /// `(x,y,z)`; empty items are the empty value, `()` is `{""}`.
    fn parse_values(&mut self) -> ParseResult<Vec<String>> {
        let (tok, lit) = self.consume(Context::Values);
        if tok != Tok::OpenPar {
            return Err(format!("found '{lit}' expected: '('"));
        }
        let (tok, lit) = self.lookahead(Context::Values);
        match tok {
            Tok::Identifier | Tok::Comma => {
                let values = self.parse_identifiers_list()?;
                if self.consume(Context::Values).0 != Tok::ClosedPar {
                    return Err(format!("found '{lit}', expected: ')'"));
                }
                Ok(values)
            }
            Tok::ClosedPar => {
                self.consume(Context::Values);
                Ok(vec![String::new()])
            }
            _ => Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
    }

    fn parse_identifiers_list(&mut self) -> ParseResult<Vec<String>> {
        let mut values: Vec<String> = Vec::new();
        loop {
            match self.consume(Context::Values) {
                (Tok::Identifier, lit) => {
                    values.push(lit.to_string());
                    match self.lookahead(Context::Values) {
                        (Tok::Comma, _) => continue,
                        (Tok::ClosedPar, _) => return Ok(sorted_set(values)),
                        (_, lit2) => return Err(format!("found '{lit2}', expected: ',' or ')'")),
                    }
                }
                (Tok::Comma, _) => {
                    if values.is_empty() {
                        values.push(String::new()); // "(,"
                    }
                    match self.lookahead(Context::Values).0 {
                        Tok::ClosedPar => {
                            values.push(String::new()); // ",)"
                            return Ok(sorted_set(values));
                        }
                        Tok::Comma => {
                            self.consume(Context::Values);
                            values.push(String::new()); // ",,"
                        }
                        _ => {}
                    }
                }
                (_, lit) => return Err(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
    }

    /// The single value after `=`, `==`, `!=`, `>`, `<`; may be empty.
    fn parse_exact_value(&mut self) -> ParseResult<Vec<String>> {
        if matches!(self.lookahead(Context::Values).0, Tok::End | Tok::Comma) {
            return Ok(vec![String::new()]);
        }
        match self.consume(Context::Values) {
            (Tok::Identifier, lit) => Ok(vec![lit.to_string()]),
            (_, lit) => Err(format!("found '{lit}', expected: identifier")),
        }
    }
}

/// Upstream collects values in a string set; validation indexes follow its
/// sorted order.
fn sorted_set(mut values: Vec<String>) -> Vec<String> {
    values.sort();
    values.dedup();
    values
}

fn in_context(tok: Tok, ctx: Context) -> Tok {
    match (tok, ctx) {
        (Tok::In | Tok::NotIn, Context::Values) => Tok::Identifier,
        _ => tok,
    }
}

fn syntax(found: &str, expected: &str) -> SelectorError {
    SelectorError::Syntax(format!("found '{found}', expected: {expected}"))
}

#[cfg(test)]
mod tests;
