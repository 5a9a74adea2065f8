//! The type checker the `cel` crate lacks: types every node of a parsed
//! expression against the declared variables (`self` typed from the schema)
//! and functions (`crate::decls`), and reports what cel-go's checker reports —
//! undeclared references, undefined fields, calls no overload accepts, mixed
//! literal lists — as `ERROR: <input>:line:col: …` with the source line and a
//! caret, which kube-apiserver puts after `compilation failed: `.

use std::collections::HashMap;
use std::fmt;

use cel::common::ast::{
    CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr, LiteralValue, SelectExpr, SourceInfo,
};

use crate::decls::{Declarations, Overload};
use crate::types::Type;

/// The problems the checker found in one expression, printed as cel-go
/// prints its issues.
#[derive(Debug, Clone, PartialEq)]
pub struct Issues {
    source: String,
    /// (offset, message), in source order.
    found: Vec<(usize, String)>,
}

impl fmt::Display for Issues {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (offset, message)) in self.found.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            let (line, column, text) = locate(&self.source, *offset);
            write!(f, "ERROR: <input>:{line}:{}: {message}", column + 1)?;
            write!(f, "\n | {text}\n | {}^", ".".repeat(column))?;
        }
        Ok(())
    }
}

/// The `cel` crate's parse errors (syntax errors, macros' errors) as cel-go
/// prints its issues: each with its source line and a caret.
pub fn parse_errors(errors: &cel::parser::ParseErrors, source: &str) -> String {
    let mut out = String::new();
    for (i, e) in errors.errors.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let (line, column) = e.pos;
        let text = usize::try_from(line - 1)
            .ok()
            .and_then(|l| source.split('\n').nth(l));
        let message = match (e.msg.as_str(), text) {
            ("argument must be a simple name", Some(text)) => {
                let at = usize::try_from(column - 1).unwrap_or(0);
                match macro_at(text, at) {
                    Some("map" | "filter") => "argument is not an identifier".to_string(),
                    Some(m @ ("optMap" | "optFlatMap")) => {
                        format!("{m}() variable name must be a simple identifier")
                    }
                    _ => e.msg.clone(),
                }
            }
            _ => e.msg.clone(),
        };
        out.push_str(&format!("ERROR: <input>:{line}:{column}: {message}"));
        if let Some(text) = text {
            let dots = usize::try_from(column - 1).unwrap_or(0);
            out.push_str(&format!("\n | {text}\n | {}^", ".".repeat(dots)));
        }
    }
    out
}

/// The name of the call whose arguments the character `at` of `line` is in
/// (`map` for `x.map(n.x, n)` and the `.` of `n.x`): the `cel` crate words
/// every macro's "not a variable name" alike, cel-go `map`'s and `filter`'s,
/// `optMap`'s and `optFlatMap`'s each its own way.
fn macro_at(line: &str, at: usize) -> Option<&str> {
    let chars: Vec<(usize, char)> = line.char_indices().collect();
    let mut depth = 0usize;
    let mut i = at.min(chars.len());
    while i > 0 {
        i -= 1;
        match chars[i].1 {
            ')' | ']' | '}' => depth += 1,
            '(' | '[' | '{' if depth > 0 => depth -= 1,
            '(' => {
                let end = chars[i].0;
                let start = chars[..i]
                    .iter()
                    .rev()
                    .take_while(|(_, c)| c.is_ascii_alphanumeric() || *c == '_')
                    .last()
                    .map_or(end, |(b, _)| *b);
                return Some(&line[start..end]);
            }
            '[' | '{' => return None,
            _ => {}
        }
    }
    None
}

/// The 1-based line, 0-based column (in characters) and text of the line
/// `offset` is on.
fn locate(source: &str, offset: usize) -> (usize, usize, &str) {
    let mut start = 0;
    for (n, line) in source.split_inclusive('\n').enumerate() {
        let end = start + line.len();
        if offset < end || end == source.len() {
            let column = source[start..offset.min(end)].chars().count();
            return (n + 1, column, line.trim_end_matches('\n'));
        }
        start = end;
    }
    (1, 0, source)
}

/// A checked expression: its type, and every node's by id (what the cost
/// estimator reads).
pub struct Checked {
    pub result: Type,
    pub types: HashMap<u64, Type>,
}

/// Types `expr` with `variables` in scope; its types, or the issues found.
pub fn check(
    expr: &IdedExpr,
    source: &SourceInfo,
    variables: &[(&str, Type)],
    declarations: &Declarations,
) -> Result<Checked, Issues> {
    let mut checker = Checker {
        declarations,
        scopes: variables
            .iter()
            .map(|(n, t)| ((*n).to_string(), t.clone()))
            .collect(),
        source,
        found: Vec::new(),
        types: HashMap::new(),
    };
    let result = checker.expr(expr);
    if checker.found.is_empty() {
        return Ok(Checked {
            result,
            types: checker.types,
        });
    }
    checker.found.sort_by_key(|(offset, _)| *offset);
    Err(Issues {
        source: source.source.clone(),
        found: checker.found,
    })
}

struct Checker<'a> {
    declarations: &'a Declarations,
    /// Variables in scope, innermost last.
    scopes: Vec<(String, Type)>,
    source: &'a SourceInfo,
    found: Vec<(usize, String)>,
    types: HashMap<u64, Type>,
}

impl Checker<'_> {
    fn report(&mut self, id: u64, message: String) -> Type {
        let offset = self
            .source
            .offset_for(id)
            .map_or(0, |(start, _)| start as usize);
        self.found.push((offset, message));
        Type::Dyn
    }

    fn variable(&self, name: &str) -> Option<&Type> {
        self.scopes
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t)
    }

    fn expr(&mut self, e: &IdedExpr) -> Type {
        let t = self.expr_type(e);
        self.types.insert(e.id, t.clone());
        t
    }

    fn expr_type(&mut self, e: &IdedExpr) -> Type {
        match &e.expr {
            Expr::Unspecified => Type::Dyn,
            Expr::Literal(l) => literal(l),
            Expr::Ident(name) => self.ident(e.id, name),
            Expr::Select(select) => self.select(e.id, select),
            Expr::Call(call) => self.call(e.id, call),
            Expr::List(list) => {
                let items: Vec<(u64, Type)> = list
                    .elements
                    .iter()
                    .enumerate()
                    .map(|(i, item)| {
                        let t = self.expr(item);
                        // `[?opt]` contributes the optional's value.
                        let t = match t {
                            Type::Optional(inner) if list.optional_indices.contains(&i) => *inner,
                            t => t,
                        };
                        (item.id, t)
                    })
                    .collect();
                Type::list(self.homogeneous(&items))
            }
            Expr::Map(map) => {
                let mut keys = Vec::new();
                let mut values = Vec::new();
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(m) = &entry.expr {
                        keys.push((m.key.id, self.expr(&m.key)));
                        let v = self.expr(&m.value);
                        let v = match v {
                            Type::Optional(inner) if m.optional => *inner,
                            v => v,
                        };
                        values.push((m.value.id, v));
                    }
                }
                let k = self.homogeneous(&keys);
                let v = self.homogeneous(&values);
                Type::map(k, v)
            }
            Expr::Struct(s) if crate::objects::is_object_type(&s.type_name) => {
                for entry in &s.entries {
                    if let EntryExpr::StructField(f) = &entry.expr {
                        self.expr(&f.value);
                    }
                }
                Type::Dyn
            }
            Expr::Struct(s) => self.report(
                e.id,
                format!(
                    "undeclared reference to '{}' (in container '')",
                    s.type_name
                ),
            ),
            Expr::Comprehension(c) => self.comprehension(c),
        }
    }

    /// An aggregate literal's element type: all elements must have one type
    /// (kube-apiserver's environment asks for homogeneous literals).
    fn homogeneous(&mut self, items: &[(u64, Type)]) -> Type {
        let mut first: Option<Type> = None;
        for (id, t) in items {
            match &first {
                None => first = Some(t.clone()),
                Some(f) if compatible(f, t) => {
                    if *f == Type::Dyn || *f == Type::Null {
                        first = Some(t.clone());
                    }
                }
                Some(f) => {
                    let message = format!("expected type '{f}' but found '{t}'");
                    self.report(*id, message);
                }
            }
        }
        first.unwrap_or(Type::Dyn)
    }

    fn ident(&mut self, id: u64, name: &str) -> Type {
        if let Some(t) = self.variable(name) {
            return t.clone();
        }
        if is_type_name(name) {
            return Type::Kind;
        }
        self.report(
            id,
            format!("undeclared reference to '{name}' (in container '')"),
        )
    }

    fn select(&mut self, id: u64, select: &SelectExpr) -> Type {
        let operand = self.expr(&select.operand);
        let field = self.field(id, &operand, &select.field);
        if select.test { Type::Bool } else { field }
    }

    /// The type of `operand.name`.
    fn field(&mut self, id: u64, operand: &Type, name: &str) -> Type {
        match operand {
            Type::Dyn => Type::Dyn,
            Type::Object(o) => match o.fields.get(name) {
                Some(t) => t.clone(),
                None => self.report(id, format!("undefined field '{name}'")),
            },
            Type::Map(k, v) if matches!(**k, Type::String | Type::Dyn) => (**v).clone(),
            other => self.report(
                id,
                format!("type '{other}' does not support field selection"),
            ),
        }
    }

    fn comprehension(&mut self, c: &ComprehensionExpr) -> Type {
        let range = self.expr(&c.iter_range);
        let (first, second) = match &range {
            Type::List(item) => match c.iter_var2 {
                Some(_) => (Type::Int, (**item).clone()),
                None => ((**item).clone(), Type::Dyn),
            },
            Type::Map(k, v) => ((**k).clone(), (**v).clone()),
            Type::Dyn => (Type::Dyn, Type::Dyn),
            other => {
                let message = format!(
                    "expression of type '{other}' cannot be range of a comprehension (must be list, map, or dynamic)"
                );
                self.report(c.iter_range.id, message);
                (Type::Dyn, Type::Dyn)
            }
        };
        let init = self.expr(&c.accu_init);
        let depth = self.scopes.len();
        // An empty list accumulator (`map`, `filter`, `sortBy`'s keys) takes
        // its elements' type from the step, as cel-go's `[]` of a type
        // variable: `null`'s element type gives way to the first it meets.
        let step_scope = match &c.accu_init.expr {
            Expr::List(l) if l.elements.is_empty() => Type::list(Type::Null),
            _ => init.clone(),
        };
        self.scopes.push((c.accu_var.clone(), step_scope));
        self.scopes.push((c.iter_var.clone(), first));
        if let Some(second_var) = &c.iter_var2 {
            self.scopes.push((second_var.clone(), second));
        }
        self.expr(&c.loop_cond);
        let step = self.expr(&c.loop_step);
        self.scopes.truncate(depth);
        // An empty literal accumulator (`map`, `filter`) takes the step's type.
        let accumulator = if is_empty_literal(&c.accu_init) && compatible(&init, &step) {
            step
        } else {
            init
        };
        self.scopes.push((c.accu_var.clone(), accumulator));
        let result = self.expr(&c.result);
        self.scopes.truncate(depth);
        result
    }

    fn call(&mut self, id: u64, call: &CallExpr) -> Type {
        // `optional.none()`, `format.dns1123Label()`: a dotted global name.
        if let Some(target) = &call.target
            && let Some(qualified) = self.qualified_function(target, &call.func_name)
        {
            return self.global(id, &qualified, &call.args);
        }
        if call.func_name == "_?._" {
            return self.optional_select(id, call);
        }
        if let Some(t) = self.two_variable_entry(call) {
            return t;
        }
        self.validate_literals(call);
        match &call.target {
            Some(target) => {
                let receiver = self.expr(target);
                let args: Vec<Type> = call.args.iter().map(|a| self.expr(a)).collect();
                self.resolve(id, &call.func_name, Some(receiver), &args)
            }
            None => self.global(id, &call.func_name, &call.args),
        }
    }

    /// Upstream's literal validators: a constant regular expression, duration
    /// or timestamp must parse (`invalid matches argument`).
    fn validate_literals(&mut self, call: &CallExpr) {
        let (name, argument) = match (call.func_name.as_str(), &call.target, call.args.as_slice()) {
            ("matches", Some(_), [pattern]) | ("matches", None, [_, pattern]) => {
                ("matches", pattern)
            }
            ("duration", None, [d]) => ("duration", d),
            ("timestamp", None, [t]) => ("timestamp", t),
            _ => return,
        };
        let Expr::Literal(LiteralValue::String(text)) = &argument.expr else {
            return;
        };
        let text = text.inner();
        let valid = match name {
            "matches" => regex::Regex::new(text).is_ok(),
            "duration" => crate::values::parse_duration(text).is_some(),
            _ => chrono::DateTime::parse_from_rfc3339(text).is_ok(),
        };
        if !valid {
            self.report(argument.id, format!("invalid {name} argument"));
        }
    }

    /// The pairs two-variable comprehensions range over, typed: the range of
    /// `@kubext_entries(x)`, and `pair[0]`, `pair[1]`.
    fn two_variable_entry(&mut self, call: &CallExpr) -> Option<Type> {
        match (call.func_name.as_str(), call.args.as_slice()) {
            ("@kubext_entries", [range]) => Some(match self.expr(range) {
                Type::List(item) => Type::list(Type::Entry(Box::new(Type::Int), item)),
                Type::Map(k, v) => Type::list(Type::Entry(k, v)),
                _ => Type::list(Type::Dyn),
            }),
            ("_[_]", [pair, index]) => {
                let Expr::Literal(LiteralValue::Int(i)) = &index.expr else {
                    return None;
                };
                if !matches!(&pair.expr, Expr::Ident(name) if name == "@kubext_it") {
                    return None;
                }
                let Type::Entry(first, second) = self.expr(pair) else {
                    return None;
                };
                self.types.insert(index.id, Type::Int);
                match *i.inner() {
                    0 => Some(*first),
                    1 => Some(*second),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    fn global(&mut self, id: u64, name: &str, args: &[IdedExpr]) -> Type {
        let args: Vec<Type> = args.iter().map(|a| self.expr(a)).collect();
        self.resolve(id, name, None, &args)
    }

    /// `a.?b`: an optional of the field, from a value or an optional.
    fn optional_select(&mut self, id: u64, call: &CallExpr) -> Type {
        let [operand, field] = call.args.as_slice() else {
            return Type::Dyn;
        };
        let operand = match self.expr(operand) {
            Type::Optional(inner) => *inner,
            t => t,
        };
        let Expr::Literal(LiteralValue::String(name)) = &field.expr else {
            return Type::Dyn;
        };
        Type::optional(self.field(id, &operand, name.inner()))
    }

    /// `ns.f` when `target` spells `ns` (not a variable) and `ns.f` is a
    /// declared function.
    fn qualified_function(&self, target: &IdedExpr, name: &str) -> Option<String> {
        let mut segments = vec![name];
        let mut e = target;
        loop {
            match &e.expr {
                Expr::Ident(root) => {
                    if self.variable(root).is_some() {
                        return None;
                    }
                    segments.push(root);
                    break;
                }
                Expr::Select(s) if !s.test => {
                    segments.push(&s.field);
                    e = &s.operand;
                }
                _ => return None,
            }
        }
        segments.reverse();
        let qualified = segments.join(".");
        self.declarations
            .overloads(&qualified)
            .is_some()
            .then_some(qualified)
    }

    fn resolve(&mut self, id: u64, name: &str, receiver: Option<Type>, args: &[Type]) -> Type {
        let Some(overloads) = self.declarations.overloads(name) else {
            return self.report(
                id,
                format!("undeclared reference to '{name}' (in container '')"),
            );
        };
        let mut result: Option<Type> = None;
        for overload in overloads {
            if let Some(t) = apply(overload, receiver.as_ref(), args) {
                result = Some(match result {
                    None => t,
                    Some(r) if r == t => r,
                    Some(_) => Type::Dyn,
                });
            }
        }
        if let Some(t) = result {
            return t;
        }
        let list = args
            .iter()
            .map(Type::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let applied = match receiver {
            Some(r) => format!("{r}.({list})"),
            None => format!("({list})"),
        };
        self.report(
            id,
            format!("found no matching overload for '{name}' applied to '{applied}'"),
        )
    }
}

/// The result type of `overload` applied to these arguments, if it accepts
/// them.
fn apply(overload: &Overload, receiver: Option<&Type>, args: &[Type]) -> Option<Type> {
    if overload.args.len() != args.len() || overload.receiver.is_some() != receiver.is_some() {
        return None;
    }
    let mut bindings = HashMap::new();
    if let (Some(expected), Some(actual)) = (&overload.receiver, receiver)
        && !unify(expected, actual, &mut bindings)
    {
        return None;
    }
    for (expected, actual) in overload.args.iter().zip(args) {
        if !unify(expected, actual, &mut bindings) {
            return None;
        }
    }
    Some(substitute(&overload.result, &bindings))
}

/// Whether `actual` fits `expected`, binding `expected`'s parameters.
fn unify(expected: &Type, actual: &Type, bindings: &mut HashMap<char, Type>) -> bool {
    match (expected, actual) {
        (Type::Param(p), _) => match bindings.get(p) {
            Some(bound) if compatible(bound, actual) => {
                if matches!(bound, Type::Null) {
                    bindings.insert(*p, actual.clone());
                }
                true
            }
            Some(_) => false,
            None => {
                bindings.insert(*p, actual.clone());
                true
            }
        },
        (_, Type::Dyn) | (Type::Dyn, _) => true,
        (Type::List(e), Type::List(a)) | (Type::Optional(e), Type::Optional(a)) => {
            unify(e, a, bindings)
        }
        (Type::Map(ek, ev), Type::Map(ak, av)) => {
            unify(ek, ak, bindings) && unify(ev, av, bindings)
        }
        (e, a) => compatible(e, a),
    }
}

/// Whether values of the two (parameter-free) types may meet, as in `a == b`
/// or the branches of `c ? a : b`: equal types, dyn on either side, null with
/// anything (`x > 5 ? 'many' : null`, as upstream's own examples write).
fn compatible(a: &Type, b: &Type) -> bool {
    match (a, b) {
        (Type::Dyn, _) | (_, Type::Dyn) | (Type::Null, _) | (_, Type::Null) => true,
        (Type::List(x), Type::List(y)) | (Type::Optional(x), Type::Optional(y)) => compatible(x, y),
        (Type::Map(xk, xv), Type::Map(yk, yv)) => compatible(xk, yk) && compatible(xv, yv),
        (Type::Object(x), Type::Object(y)) => x.name == y.name,
        (x, y) => x == y,
    }
}

fn substitute(t: &Type, bindings: &HashMap<char, Type>) -> Type {
    match t {
        Type::Param(p) => bindings.get(p).cloned().unwrap_or(Type::Dyn),
        Type::List(e) => Type::list(substitute(e, bindings)),
        Type::Optional(e) => Type::optional(substitute(e, bindings)),
        Type::Map(k, v) => Type::map(substitute(k, bindings), substitute(v, bindings)),
        other => other.clone(),
    }
}

fn literal(l: &LiteralValue) -> Type {
    match l {
        LiteralValue::Boolean(_) => Type::Bool,
        LiteralValue::Bytes(_) => Type::Bytes,
        LiteralValue::Double(_) => Type::Double,
        LiteralValue::Int(_) => Type::Int,
        LiteralValue::Null => Type::Null,
        LiteralValue::String(_) => Type::String,
        LiteralValue::UInt(_) => Type::Uint,
    }
}

fn is_empty_literal(e: &IdedExpr) -> bool {
    match &e.expr {
        Expr::List(l) => l.elements.is_empty(),
        Expr::Map(m) => m.entries.is_empty(),
        _ => false,
    }
}

/// Identifiers naming types (`type(x) == string`).
fn is_type_name(name: &str) -> bool {
    matches!(
        name,
        "bool"
            | "int"
            | "uint"
            | "double"
            | "string"
            | "bytes"
            | "list"
            | "map"
            | "null_type"
            | "type"
            | "dyn"
            | "optional_type"
    )
}
