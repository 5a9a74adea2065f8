//! Hot path: the common shapes of CRD validation rules evaluated directly
//! over the node's JSON, without the `cel` crate's interpreter and without
//! converting `self` and `oldSelf` into CEL values (`values::to_val`), which
//! together cost a custom-resource write several thousand instructions per
//! rule.
//!
//! A rule is translated once, when its CRD version is compiled, into a small
//! tree ([`Rule`]) if every part of it is in the supported subset: field
//! selection and `has()` on `self`, `oldSelf` and comprehension variables,
//! `int`, `string` and `bool` literals (and lists of them), `!`, `&&`, `||`,
//! `?:`, `==`, `!=`, `<`, `<=`, `>`, `>=`, `in`, `startsWith`, `endsWith`,
//! `contains`, `size()`, and `all`, `exists` and `exists_one` over lists.
//!
//! The evaluator only answers when it is certain of what the `cel` crate
//! would answer over the same values as `values::to_val` converts them:
//! `Some(b)` means the crate's evaluation is `Ok(Bool(b))`. Anything else — a
//! missing field, `null`, a double, a formatted string (bytes, timestamps,
//! durations), mixed types, a map where a list is expected, `metadata` at a
//! resource root — is `None`, and the rule runs through the crate, which
//! gives the error or the unusual answer. `&&`, `||`, `all` and `exists`
//! follow the crate's error absorption: `x && false` is `false` whatever `x`
//! is.

use std::borrow::Cow;

use cel::common::ast::{ComprehensionExpr, Expr, IdedExpr, LiteralValue, operators};
use schema::structural::Structural;
use serde_json::{Map, Value};

use crate::decls::Declarations;
use crate::types;

/// How many comprehensions may nest in a rule the evaluator takes.
const MAX_DEPTH: usize = 4;

/// A rule translated for direct evaluation.
#[derive(Debug)]
pub(crate) struct Rule {
    root: Node,
}

/// A scalar literal.
#[derive(Debug, Clone)]
enum Lit {
    Int(i64),
    Str(Box<str>),
    Bool(bool),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Debug, Clone, Copy)]
enum StrFn {
    StartsWith,
    EndsWith,
    Contains,
}

#[derive(Debug, Clone, Copy)]
enum Quantifier {
    All,
    Exists,
    ExistsOne,
}

#[derive(Debug)]
enum Node {
    Lit(Lit),
    /// A list literal of scalar literals.
    List(Vec<Lit>),
    SelfVar,
    OldSelf,
    /// A comprehension variable, by its nesting depth (0: the outermost).
    Var(usize),
    Select(Box<Node>, Box<str>),
    Has(Box<Node>, Box<str>),
    Not(Box<Node>),
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    If(Box<Node>, Box<Node>, Box<Node>),
    Compare(Cmp, Box<Node>, Box<Node>),
    Str(StrFn, Box<Node>, Box<Node>),
    Size(Box<Node>),
    In(Box<Node>, Box<Node>),
    /// `range.all(v, predicate)` and the like; `v` is `Var(depth)`.
    Quantified {
        quantifier: Quantifier,
        depth: usize,
        range: Box<Node>,
        predicate: Box<Node>,
    },
}

/// Translation state: the comprehension variables in scope, outermost first.
struct Translator<'d> {
    scope: Vec<String>,
    decls: &'d Declarations,
}

/// `expr` as a direct rule, or `None` when any part of it is outside the
/// subset.
pub(crate) fn compile(expr: &IdedExpr, decls: &Declarations) -> Option<Rule> {
    let mut t = Translator {
        scope: Vec::new(),
        decls,
    };
    Some(Rule {
        root: t.node(expr)?,
    })
}

/// Namespaces of functions a call's target could spell (`sets.contains`):
/// a comprehension variable of such a name is not taken, as the crate might
/// call the namespaced function.
const NAMESPACES: &[&str] = &[
    "base64", "cel", "cidr", "format", "google", "ip", "lists", "math", "netip", "optional",
    "quantity", "regex", "semver", "sets", "strings", "url",
];

impl Translator<'_> {
    fn node(&mut self, e: &IdedExpr) -> Option<Node> {
        Some(match &e.expr {
            Expr::Literal(l) => Node::Lit(lit(l)?),
            Expr::List(list) => {
                if !list.optional_indices.is_empty() {
                    return None;
                }
                let items = list
                    .elements
                    .iter()
                    .map(|e| match &e.expr {
                        Expr::Literal(l) => lit(l),
                        _ => None,
                    })
                    .collect::<Option<Vec<_>>>()?;
                Node::List(items)
            }
            Expr::Ident(name) => self.ident(name)?,
            Expr::Select(s) => {
                if !plain(&s.field) {
                    return None;
                }
                let operand = Box::new(self.node(&s.operand)?);
                let field = s.field.as_str().into();
                if s.test {
                    Node::Has(operand, field)
                } else {
                    Node::Select(operand, field)
                }
            }
            Expr::Call(call) => {
                let args = call.args.as_slice();
                match (&call.target, call.func_name.as_str(), args) {
                    (None, operators::LOGICAL_NOT, [a]) => Node::Not(self.boxed(a)?),
                    (None, operators::LOGICAL_AND, [a, b]) => {
                        Node::And(self.boxed(a)?, self.boxed(b)?)
                    }
                    (None, operators::LOGICAL_OR, [a, b]) => {
                        Node::Or(self.boxed(a)?, self.boxed(b)?)
                    }
                    (None, operators::CONDITIONAL, [c, a, b]) => {
                        Node::If(self.boxed(c)?, self.boxed(a)?, self.boxed(b)?)
                    }
                    (None, operators::IN, [a, b]) => Node::In(self.boxed(a)?, self.boxed(b)?),
                    (None, "size", [a]) => Node::Size(self.boxed(a)?),
                    (None, op, [a, b]) => {
                        let cmp = match op {
                            operators::EQUALS => Cmp::Eq,
                            operators::NOT_EQUALS => Cmp::Ne,
                            operators::LESS => Cmp::Lt,
                            operators::LESS_EQUALS => Cmp::Le,
                            operators::GREATER => Cmp::Gt,
                            operators::GREATER_EQUALS => Cmp::Ge,
                            _ => return None,
                        };
                        Node::Compare(cmp, self.boxed(a)?, self.boxed(b)?)
                    }
                    (Some(target), name, args) => {
                        // The crate calls `a.b.f(...)` as the function `a.b.f`
                        // when `a` is a function namespace.
                        if self.namespaced(target) {
                            return None;
                        }
                        let f = match (name, args) {
                            ("size", []) => return Some(Node::Size(self.boxed(target)?)),
                            ("startsWith", [_]) => StrFn::StartsWith,
                            ("endsWith", [_]) => StrFn::EndsWith,
                            ("contains", [_]) => StrFn::Contains,
                            _ => return None,
                        };
                        Node::Str(f, self.boxed(target)?, self.boxed(&args[0])?)
                    }
                    _ => return None,
                }
            }
            Expr::Comprehension(c) => self.comprehension(c)?,
            Expr::Map(_) | Expr::Struct(_) | Expr::Unspecified => return None,
        })
    }

    fn boxed(&mut self, e: &IdedExpr) -> Option<Box<Node>> {
        self.node(e).map(Box::new)
    }

    fn ident(&self, name: &str) -> Option<Node> {
        if let Some(depth) = self.scope.iter().rposition(|v| v == name) {
            return Some(Node::Var(depth));
        }
        match name {
            "self" => Some(Node::SelfVar),
            "oldSelf" => Some(Node::OldSelf),
            _ => None,
        }
    }

    /// Whether `target` spells a qualified name whose root could be a
    /// function namespace.
    fn namespaced(&self, target: &IdedExpr) -> bool {
        let mut e = target;
        loop {
            match &e.expr {
                Expr::Ident(root) => {
                    return NAMESPACES.contains(&root.as_str()) || self.decls.has_namespace(root);
                }
                Expr::Select(s) if !s.test => e = &s.operand,
                _ => return false,
            }
        }
    }

    /// `all`, `exists` and `exists_one` as the standard macros expand them.
    fn comprehension(&mut self, c: &ComprehensionExpr) -> Option<Node> {
        if c.iter_var2.is_some() || self.scope.len() >= MAX_DEPTH || c.iter_var == c.accu_var {
            return None;
        }
        let accu = c.accu_var.as_str();
        let is_accu = |e: &IdedExpr| matches!(&e.expr, Expr::Ident(n) if n == accu);
        let bool_lit = |e: &IdedExpr| match &e.expr {
            Expr::Literal(LiteralValue::Boolean(b)) => Some(*b.inner()),
            _ => None,
        };
        let int_lit = |e: &IdedExpr| match &e.expr {
            Expr::Literal(LiteralValue::Int(i)) => Some(*i.inner()),
            _ => None,
        };
        let (quantifier, predicate) = if bool_lit(&c.accu_init) == Some(true) {
            // all: @not_strictly_false(@result), @result && p, @result
            let [cond] = call(&c.loop_cond, operators::NOT_STRICTLY_FALSE)? else {
                return None;
            };
            let [a, p] = call(&c.loop_step, operators::LOGICAL_AND)? else {
                return None;
            };
            if !is_accu(cond) || !is_accu(a) || !is_accu(&c.result) {
                return None;
            }
            (Quantifier::All, p)
        } else if bool_lit(&c.accu_init) == Some(false) {
            // exists: @not_strictly_false(!@result), @result || p, @result
            let [not] = call(&c.loop_cond, operators::NOT_STRICTLY_FALSE)? else {
                return None;
            };
            let [cond] = call(not, operators::LOGICAL_NOT)? else {
                return None;
            };
            let [a, p] = call(&c.loop_step, operators::LOGICAL_OR)? else {
                return None;
            };
            if !is_accu(cond) || !is_accu(a) || !is_accu(&c.result) {
                return None;
            }
            (Quantifier::Exists, p)
        } else if int_lit(&c.accu_init) == Some(0) {
            // exists_one: true, p ? @result + 1 : @result, @result == 1
            if bool_lit(&c.loop_cond) != Some(true) {
                return None;
            }
            let [p, plus, otherwise] = call(&c.loop_step, operators::CONDITIONAL)? else {
                return None;
            };
            let [a, one] = call(plus, operators::ADD)? else {
                return None;
            };
            let [r, one_again] = call(&c.result, operators::EQUALS)? else {
                return None;
            };
            if !is_accu(a)
                || !is_accu(otherwise)
                || !is_accu(r)
                || int_lit(one) != Some(1)
                || int_lit(one_again) != Some(1)
            {
                return None;
            }
            (Quantifier::ExistsOne, p)
        } else {
            return None;
        };
        let range = self.boxed(&c.iter_range)?;
        let depth = self.scope.len();
        self.scope.push(c.iter_var.clone());
        let predicate = self.boxed(predicate);
        self.scope.pop();
        Some(Node::Quantified {
            quantifier,
            depth,
            range,
            predicate: predicate?,
        })
    }
}

/// The arguments of a global call of `name`.
fn call<'e>(e: &'e IdedExpr, name: &str) -> Option<&'e [IdedExpr]> {
    match &e.expr {
        Expr::Call(call) if call.target.is_none() && call.func_name == name => {
            Some(call.args.as_slice())
        }
        _ => None,
    }
}

fn lit(l: &LiteralValue) -> Option<Lit> {
    Some(match l {
        LiteralValue::Int(i) => Lit::Int(*i.inner()),
        LiteralValue::String(s) => Lit::Str(s.inner().into()),
        LiteralValue::Boolean(b) => Lit::Bool(*b.inner()),
        _ => return None,
    })
}

/// A field name that is its property's name (`values::to_val` keys
/// properties by their escaped names; a plain name escapes to itself, and
/// no other name escapes to it).
fn plain(field: &str) -> bool {
    matches!(types::escape_cow(field), Some(Cow::Borrowed(_)))
}

/// A value during evaluation.
#[derive(Clone, Copy)]
enum V<'a> {
    /// A JSON value, its schema and whether it is a resource root (its
    /// `metadata` is not the JSON's).
    Json(&'a Value, Option<&'a Structural>, bool),
    Int(i64),
    Str(&'a str),
    Bool(bool),
    Lits(&'a [Lit]),
}

/// What a value is in CEL, as `values::to_val` converts it; `Other` for
/// anything the evaluator leaves to the crate.
enum Kind<'a> {
    Int(i64),
    Str(&'a str),
    Bool(bool),
    List(Elements<'a>),
    Object(&'a Map<String, Value>, Option<&'a Structural>, bool),
    Other,
}

/// A list's elements.
#[derive(Clone, Copy)]
enum Elements<'a> {
    Json(&'a [Value], Option<&'a Structural>),
    Lits(&'a [Lit]),
}

impl<'a> Elements<'a> {
    fn len(self) -> usize {
        match self {
            Elements::Json(a, _) => a.len(),
            Elements::Lits(l) => l.len(),
        }
    }

    fn get(self, i: usize) -> V<'a> {
        match self {
            Elements::Json(a, items) => V::Json(
                &a[i],
                items,
                items.is_some_and(|s| s.extensions.embedded_resource),
            ),
            Elements::Lits(l) => lit_value(&l[i]),
        }
    }
}

fn lit_value(l: &Lit) -> V<'_> {
    match l {
        Lit::Int(i) => V::Int(*i),
        Lit::Str(s) => V::Str(s),
        Lit::Bool(b) => V::Bool(*b),
    }
}

#[inline]
fn kind(v: V<'_>) -> Kind<'_> {
    match v {
        V::Int(i) => Kind::Int(i),
        V::Str(s) => Kind::Str(s),
        V::Bool(b) => Kind::Bool(b),
        V::Lits(l) => Kind::List(Elements::Lits(l)),
        V::Json(j, s, root) => match j {
            Value::Bool(b) => Kind::Bool(*b),
            // A `number` node's values are doubles.
            Value::Number(n) => match n.as_i64() {
                Some(i) if s.is_none_or(|s| s.type_ != "number") => Kind::Int(i),
                _ => Kind::Other,
            },
            Value::String(st) => {
                // Strings of these formats are bytes, timestamps or
                // durations (when they parse).
                let formatted = s
                    .and_then(|s| s.validation.format.as_deref())
                    .is_some_and(|f| matches!(f, "byte" | "date-time" | "date" | "duration"));
                if formatted {
                    Kind::Other
                } else {
                    Kind::Str(st)
                }
            }
            Value::Array(a) => Kind::List(Elements::Json(a, s.and_then(|s| s.items.as_deref()))),
            Value::Object(o) => Kind::Object(o, s, root),
            Value::Null => Kind::Other,
        },
    }
}

/// What one evaluation sees.
struct Frame<'a> {
    self_value: V<'a>,
    old_self: Option<V<'a>>,
    vars: [Option<V<'a>>; MAX_DEPTH],
}

impl Rule {
    /// The rule's value over `self_value` (and `old_self`) under `schema`,
    /// when certain; `resource_root` as for `values::to_val`.
    pub(crate) fn evaluate(
        &self,
        self_value: &Value,
        old_self: Option<&Value>,
        schema: &Structural,
        resource_root: bool,
    ) -> Option<bool> {
        let mut frame = Frame {
            self_value: V::Json(self_value, Some(schema), resource_root),
            old_self: old_self.map(|o| V::Json(o, Some(schema), resource_root)),
            vars: [None; MAX_DEPTH],
        };
        as_bool(eval(&self.root, &mut frame)?)
    }
}

fn as_bool(v: V<'_>) -> Option<bool> {
    match kind(v) {
        Kind::Bool(b) => Some(b),
        _ => None,
    }
}

fn eval_bool<'a>(n: &'a Node, f: &mut Frame<'a>) -> Option<bool> {
    as_bool(operand(n, f)?)
}

/// `n`'s value: variables and literals inline, the rest through `eval`.
#[inline(always)]
fn operand<'a>(n: &'a Node, f: &mut Frame<'a>) -> Option<V<'a>> {
    match n {
        Node::SelfVar => Some(f.self_value),
        Node::OldSelf => f.old_self,
        Node::Var(depth) => f.vars[*depth],
        Node::Lit(l) => Some(lit_value(l)),
        _ => eval(n, f),
    }
}

fn eval<'a>(n: &'a Node, f: &mut Frame<'a>) -> Option<V<'a>> {
    Some(match n {
        Node::Lit(l) => lit_value(l),
        Node::List(l) => V::Lits(l),
        Node::SelfVar => f.self_value,
        Node::OldSelf => f.old_self?,
        Node::Var(depth) => f.vars[*depth]?,
        Node::Select(of, field) => {
            let Kind::Object(o, s, root) = kind(operand(of, f)?) else {
                return None;
            };
            if root && &**field == "metadata" {
                return None;
            }
            let child = o.get(&**field)?;
            // (A map's values have its `additionalProperties` schema.)
            let child_schema = s.and_then(|s| s.property(field));
            V::Json(
                child,
                child_schema,
                child_schema.is_some_and(|c| c.extensions.embedded_resource),
            )
        }
        Node::Has(of, field) => {
            let Kind::Object(o, _, root) = kind(operand(of, f)?) else {
                return None;
            };
            if root && &**field == "metadata" {
                return None;
            }
            V::Bool(o.contains_key(&**field))
        }
        Node::Not(a) => V::Bool(!eval_bool(a, f)?),
        Node::And(a, b) => V::Bool(match eval_bool(a, f) {
            Some(false) => false,
            Some(true) => eval_bool(b, f)?,
            // Whatever the left is, the crate answers `false` for a
            // `false` right.
            None => match eval_bool(b, f) {
                Some(false) => false,
                _ => return None,
            },
        }),
        Node::Or(a, b) => V::Bool(match eval_bool(a, f) {
            Some(true) => true,
            Some(false) => eval_bool(b, f)?,
            None => match eval_bool(b, f) {
                Some(true) => true,
                _ => return None,
            },
        }),
        Node::If(c, a, b) => {
            if eval_bool(c, f)? {
                operand(a, f)?
            } else {
                operand(b, f)?
            }
        }
        Node::Compare(cmp, a, b) => {
            let a = operand(a, f)?;
            let b = operand(b, f)?;
            let ordering = match (kind(a), kind(b)) {
                (Kind::Int(a), Kind::Int(b)) => a.cmp(&b),
                (Kind::Str(a), Kind::Str(b)) => a.cmp(b),
                (Kind::Bool(a), Kind::Bool(b)) => a.cmp(&b),
                _ => return None,
            };
            V::Bool(match cmp {
                Cmp::Eq => ordering.is_eq(),
                Cmp::Ne => ordering.is_ne(),
                Cmp::Lt => ordering.is_lt(),
                Cmp::Le => ordering.is_le(),
                Cmp::Gt => ordering.is_gt(),
                Cmp::Ge => ordering.is_ge(),
            })
        }
        Node::Str(function, a, b) => {
            let a = operand(a, f)?;
            let b = operand(b, f)?;
            let (Kind::Str(a), Kind::Str(b)) = (kind(a), kind(b)) else {
                return None;
            };
            V::Bool(match function {
                StrFn::StartsWith => a.starts_with(b),
                StrFn::EndsWith => a.ends_with(b),
                StrFn::Contains => a.contains(b),
            })
        }
        Node::Size(a) => {
            let size = match kind(operand(a, f)?) {
                Kind::Str(s) => s.chars().count(),
                Kind::List(l) => l.len(),
                _ => return None,
            };
            V::Int(i64::try_from(size).ok()?)
        }
        Node::In(a, b) => {
            let needle = kind(operand(a, f)?);
            let Kind::List(list) = kind(operand(b, f)?) else {
                return None;
            };
            let mut unknown = false;
            for i in 0..list.len() {
                let equal = match (&needle, kind(list.get(i))) {
                    (Kind::Int(a), Kind::Int(b)) => *a == b,
                    (Kind::Str(a), Kind::Str(b)) => *a == b,
                    (Kind::Bool(a), Kind::Bool(b)) => *a == b,
                    _ => {
                        unknown = true;
                        false
                    }
                };
                if equal {
                    return Some(V::Bool(true));
                }
            }
            if unknown {
                return None;
            }
            V::Bool(false)
        }
        Node::Quantified {
            quantifier,
            depth,
            range,
            predicate,
        } => {
            let Kind::List(list) = kind(operand(range, f)?) else {
                return None;
            };
            let result = quantify(*quantifier, list, predicate, *depth, f);
            f.vars[*depth] = None;
            V::Bool(result?)
        }
    })
}

/// `list.all(v, predicate)` and the like, with `v` at `depth`. As the crate:
/// an element's error (or non-bool) is absorbed by a later decisive
/// element (`false` for `all`, `true` for `exists`); `exists_one` has none.
fn quantify<'a>(
    q: Quantifier,
    list: Elements<'a>,
    predicate: &'a Node,
    depth: usize,
    f: &mut Frame<'a>,
) -> Option<bool> {
    let mut unknown = false;
    let mut count = 0usize;
    for i in 0..list.len() {
        f.vars[depth] = Some(list.get(i));
        let p = eval_bool(predicate, f);
        match (q, p) {
            (Quantifier::All, Some(false)) => return Some(false),
            (Quantifier::Exists, Some(true)) => return Some(true),
            (Quantifier::ExistsOne, None) => return None,
            (Quantifier::ExistsOne, Some(true)) => count += 1,
            (_, None) => unknown = true,
            _ => {}
        }
    }
    match q {
        _ if unknown => None,
        Quantifier::All => Some(true),
        Quantifier::Exists => Some(false),
        Quantifier::ExistsOne => Some(count == 1),
    }
}

#[cfg(test)]
mod tests;
