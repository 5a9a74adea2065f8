//! Value validation of custom resources against a [`Structural`] schema, with
//! kube-openapi's message texts as converted by apiextensions-apiserver, plus
//! list-type (set/map) and embedded-resource checks, and validation ratcheting.

use apimachinery::field::{BadValue, ErrorType, LazyPath};
use apimachinery::gofmt::{format_float, quote};
use apimachinery::{ErrorList, FieldError, FieldPath};
use serde_json::{Map, Value};

use crate::formats::check_format;
use crate::structural::{AdditionalProperties, Structural, ValidationRule};

/// Extension point for `x-kubernetes-validations` (CEL). Called once per rule
/// at every node that carries rules, with the node's value, the correlated old
/// value (on update) and the node's field path; returns the rule's errors.
pub trait RuleEvaluator {
    fn evaluate(&self, ctx: &RuleContext<'_>) -> ErrorList;

    /// Every rule of one node, in order: an evaluator may share the work
    /// the node's rules have in common (converting `self` once).
    fn evaluate_node(&self, node: &NodeContext<'_>) -> ErrorList {
        node.rules
            .iter()
            .flat_map(|rule| self.evaluate(&node.rule(rule)))
            .collect()
    }
}

/// What a [`RuleEvaluator`] gets for all the rules of one node.
#[derive(Debug, Clone, Copy)]
pub struct NodeContext<'a> {
    pub rules: &'a [ValidationRule],
    pub schema: &'a Structural,
    pub self_value: &'a Value,
    pub old_self: Option<&'a Value>,
    pub path: &'a FieldPath,
    pub unchanged: bool,
}

impl<'a> NodeContext<'a> {
    /// The context of one of the node's rules.
    pub fn rule(&self, rule: &'a ValidationRule) -> RuleContext<'a> {
        RuleContext {
            rule,
            schema: self.schema,
            self_value: self.self_value,
            old_self: self.old_self,
            path: self.path,
            unchanged: self.unchanged,
        }
    }
}

/// What a [`RuleEvaluator`] gets for one rule at one node.
#[derive(Debug, Clone, Copy)]
pub struct RuleContext<'a> {
    pub rule: &'a ValidationRule,
    /// The schema node carrying the rule.
    pub schema: &'a Structural,
    /// `self`.
    pub self_value: &'a Value,
    /// `oldSelf`: the correlated old value on update (by key for objects and
    /// `list-type=map` items), `None` on create or when uncorrelated.
    pub old_self: Option<&'a Value>,
    /// The node's field path.
    pub path: &'a FieldPath,
    /// The node equals its old value: upstream ratchets the errors of rules
    /// that do not use `oldSelf` here, so an evaluator should only report
    /// failures of transition rules when this is set.
    pub unchanged: bool,
}

/// Validates `value` (optionally against `old`, for ratcheting) and returns
/// all errors. `path` is the prefix of every error's field (usually root).
pub fn validate(
    value: &Value,
    old: Option<&Value>,
    schema: &Structural,
    path: &FieldPath,
) -> ErrorList {
    validate_with(value, old, schema, path, None)
}

/// As [`validate`], also calling `rules` for `x-kubernetes-validations`.
pub fn validate_with(
    value: &Value,
    old: Option<&Value>,
    schema: &Structural,
    path: &FieldPath,
    rules: Option<&dyn RuleEvaluator>,
) -> ErrorList {
    let mut v = Validator {
        base: path,
        rules,
        errs: ErrorList::new(),
        matched: 0,
    };
    v.node(value, old, schema, &LazyPath::At(&FieldPath::root()));
    let mut errs = v.errs;
    errs.extend(validate_list_types(value, old, schema, path));
    errs.extend(validate_embedded(value, schema, path));
    errs
}

/// Only the `x-kubernetes-validations` of `value` (with `old` correlated as
/// for ratcheting), by `rules`: the CEL pass that runs after the schema
/// validation found no blocking errors.
pub fn evaluate_rules(
    value: &Value,
    old: Option<&Value>,
    schema: &Structural,
    path: &FieldPath,
    rules: &dyn RuleEvaluator,
) -> ErrorList {
    let mut v = Validator {
        base: path,
        rules: Some(rules),
        errs: ErrorList::new(),
        matched: 0,
    };
    v.rules_walk(value, old, schema, &LazyPath::At(&FieldPath::root()), false);
    v.errs
}

/// Whether `schema` carries any `x-kubernetes-validations`.
pub fn has_validation_rules(schema: &Structural) -> bool {
    has_rules(schema)
}

/// Validates only against the OpenAPI value validations (no list-type or
/// embedded checks), as used for defaults in CRD validation.
pub fn validate_values_only(value: &Value, schema: &Structural, path: &FieldPath) -> ErrorList {
    let mut v = Validator {
        base: path,
        rules: None,
        errs: ErrorList::new(),
        matched: 0,
    };
    v.node(value, None, schema, &LazyPath::At(&FieldPath::root()));
    v.errs
}

/// Whether upstream's decoder would hold this number as an `int64`: integers that
/// fit do; larger ones and anything with a fraction or exponent become `float64`.
fn integral(n: &serde_json::Number) -> bool {
    n.is_i64()
}

/// Whether an `integer` schema of `format` can hold the bound `b` (go-openapi
/// converts its text: `10.5` is no integer, 2^40 no int32).
fn fits_integer_format(b: f64, format: Option<&str>) -> bool {
    if b.fract() != 0.0 || !b.is_finite() {
        return false;
    }
    match format.unwrap_or("") {
        "int32" => (f64::from(i32::MIN)..=f64::from(i32::MAX)).contains(&b),
        "uint32" => (0.0..=f64::from(u32::MAX)).contains(&b),
        "uint64" => (0.0..=u64::MAX as f64).contains(&b),
        _ => (i64::MIN as f64..=i64::MAX as f64).contains(&b),
    }
}

/// go-openapi's `IsFloat64AJSONInteger`: a float an `integer` schema accepts.
fn float_is_json_integer(f: f64) -> bool {
    const MAX_JSON_INTEGER: f64 = ((1u64 << 53) - 1) as f64;
    f.is_finite() && f.fract() == 0.0 && f.abs() <= MAX_JSON_INTEGER
}

/// JSON deep equality with upstream's number semantics (`1 == 1.0`).
pub(crate) fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if x.is_f64() || y.is_f64() {
                x.as_f64() == y.as_f64()
            } else {
                x == y
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => json_eq_map(x, y),
        _ => a == b,
    }
}

fn json_eq_map(x: &Map<String, Value>, y: &Map<String, Value>) -> bool {
    x.len() == y.len()
        && x.iter()
            .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
}

fn opt_eq(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (Some(x), Some(y)) => json_eq(x, y),
        (None, None) => true,
        _ => false,
    }
}

/// Whether any node of `s` carries `x-kubernetes-validations`.
fn has_rules(s: &Structural) -> bool {
    !s.extensions.validations.is_empty()
        || s.properties.values().any(|p| has_rules(p))
        || s.items.as_deref().is_some_and(has_rules)
        || matches!(&s.additional_properties, Some(AdditionalProperties::Schema(ap)) if has_rules(ap))
}

/// A numeric bound as an error prints it: `%d` for integer data, Go's `%v`
/// for floats. Printed only for an error.
enum Shown {
    Int(i64),
    Float(f64),
}

impl std::fmt::Display for Shown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Shown::Int(i) => write!(f, "{i}"),
            Shown::Float(x) => f.write_str(&format_float(*x)),
        }
    }
}

/// kube-openapi's type name of a JSON value.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) => {
            if integral(n) {
                "integer"
            } else {
                "number"
            }
        }
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The outcome of validating a value against one branch of a junctor.
struct Branch {
    errs: ErrorList,
    matched: usize,
}

impl Branch {
    /// The failing branch with the most validators applied; the first on a tie.
    fn better(best: Option<Branch>, candidate: Branch) -> Option<Branch> {
        match best {
            Some(b) if b.matched >= candidate.matched => Some(b),
            _ => Some(candidate),
        }
    }
}

struct Validator<'a> {
    base: &'a FieldPath,
    rules: Option<&'a dyn RuleEvaluator>,
    errs: ErrorList,
    /// kube-openapi's `MatchCount`: how many validators applied. Of the failing
    /// branches of `anyOf`/`oneOf`, upstream reports the one with the most.
    matched: usize,
}

impl Validator<'_> {
    /// The node's field path: its kube-openapi name (`spec.ports[0]`)
    /// under `base`, built for errors and rules only.
    fn fp(&self, name: &LazyPath<'_>) -> FieldPath {
        if name.is_empty() {
            self.base.clone()
        } else {
            self.base.child(&name.to_string())
        }
    }

    fn msg(name: &LazyPath<'_>, rest: &str) -> String {
        format!("{name} in body {rest}")
    }

    fn invalid(&mut self, name: &LazyPath<'_>, value: Value, rest: &str) {
        let e = FieldError::invalid(&self.fp(name), value, &Self::msg(name, rest));
        self.errs.push(e);
    }

    fn type_invalid(&mut self, name: &LazyPath<'_>, value: Value, expected: &str, data: &str) {
        let detail = Self::msg(
            name,
            &format!("must be of type {expected}: {}", quote(data)),
        );
        let e = FieldError::type_invalid(&self.fp(name), value, &detail);
        self.errs.push(e);
    }

    /// kube-openapi's `IsValueValidAgainstRange` failing for a bound: an error
    /// with no field of its own (`<nil>` at the root; a default's path when
    /// a default is validated) and the value's path in the message.
    fn bound_type_error(&mut self, name: &LazyPath<'_>, prefix: &str, format: Option<&str>) {
        let field = if self.base.as_str().is_empty() {
            FieldPath::new("<nil>")
        } else {
            self.base.clone()
        };
        let detail = match format {
            Some(f) if !f.is_empty() => {
                format!("{prefix} value must be of type integer with format {f} in {name}")
            }
            _ => format!("{prefix} value must be of type integer (default format) in {name}"),
        };
        self.errs
            .push(FieldError::invalid(&field, Value::from(""), &detail));
    }

    /// Report the errors of the failing branch upstream picked.
    fn take(&mut self, branch: Option<Branch>) {
        if let Some(b) = branch {
            self.matched += b.matched;
            self.errs.extend(b.errs);
        }
    }

    /// A junctor error: upstream reports it as a plain error at the root path.
    fn junctor(&mut self, msg: String) {
        let e = FieldError::invalid(self.base, Value::String(String::new()), &msg);
        self.errs.push(e);
    }

    /// Validates one sub-schema in isolation, returning its errors.
    fn sub(&self, v: &Value, s: &Structural, name: &LazyPath<'_>) -> ErrorList {
        self.branch(v, s, name).errs
    }

    /// Validates one branch of a junctor in isolation.
    fn branch(&self, v: &Value, s: &Structural, name: &LazyPath<'_>) -> Branch {
        let mut sub = Validator {
            base: self.base,
            rules: None,
            errs: ErrorList::new(),
            matched: 0,
        };
        sub.node(v, None, s, name);
        Branch {
            errs: sub.errs,
            matched: sub.matched,
        }
    }

    /// Count the validators kube-openapi applies to this value at this node: the
    /// schema itself, type, junctors, enum, and the one for the value's kind.
    fn count_match(&mut self, v: &Value, s: &Structural) {
        let kind = match v {
            Value::String(_) => 1 + usize::from(s.validation.format.is_some()),
            Value::Number(_) | Value::Array(_) | Value::Object(_) => 1,
            _ => 0,
        };
        self.matched += 4 + kind;
    }

    fn node(&mut self, v: &Value, old: Option<&Value>, s: &Structural, name: &LazyPath<'_>) {
        // Ratcheting: an unchanged subtree reports nothing (but its
        // transition rules still run).
        if old.is_some_and(|o| json_eq(o, v)) {
            if self.rules.is_some() {
                self.rules_walk(v, old, s, name, true);
            }
            return;
        }
        self.count_match(v, s);
        self.check_type(v, s, name);
        self.junctors(v, s, name);
        match v {
            Value::String(st) => self.string(st, s, name),
            Value::Number(_) => self.number(v, s, name),
            Value::Array(a) => self.array(a, old, s, name),
            _ => {}
        }
        if let Some(values) = &s.validation.enum_values
            && !values.iter().any(|e| json_eq(e, v))
        {
            let supported: Vec<String> = values
                .iter()
                .map(|e| match e {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect();
            let refs: Vec<&str> = supported.iter().map(String::as_str).collect();
            self.errs
                .push(FieldError::not_supported(&self.fp(name), v.clone(), &refs));
        }
        if let Value::Object(m) = v {
            self.object(m, old.and_then(Value::as_object), s, name);
        }
        self.eval_rules(v, old, s, name, false);
    }

    fn eval_rules(
        &mut self,
        v: &Value,
        old: Option<&Value>,
        s: &Structural,
        name: &LazyPath<'_>,
        unchanged: bool,
    ) {
        let Some(ev) = self.rules else { return };
        // CEL errors name map values as keys (`field.Path.Key`).
        let fp = if name.is_empty() {
            self.base.clone()
        } else {
            self.base.child(&name.keyed())
        };
        self.errs.extend(ev.evaluate_node(&NodeContext {
            rules: &s.extensions.validations,
            schema: s,
            self_value: v,
            old_self: old,
            path: &fp,
            unchanged,
        }));
    }

    /// Walks a subtree for its `x-kubernetes-validations` only; a node equal
    /// to its old value is `unchanged` (ratcheting), and so is every node of
    /// a subtree the schema walk found unchanged (`inside_unchanged`).
    fn rules_walk(
        &mut self,
        v: &Value,
        old: Option<&Value>,
        s: &Structural,
        name: &LazyPath<'_>,
        inside_unchanged: bool,
    ) {
        if !has_rules(s) || (v.is_null() && !inside_unchanged) {
            return;
        }
        let unchanged = inside_unchanged || old.is_some_and(|o| json_eq(o, v));
        self.eval_rules(v, old, s, name, unchanged);
        match v {
            Value::Object(m) => {
                for (k, val) in m {
                    let Some(ps) = s.property(k) else { continue };
                    let o = old.and_then(|o| o.get(k));
                    let path = if s.properties.contains_key(k) {
                        name.child(k)
                    } else {
                        name.map_value(k)
                    };
                    self.rules_walk(val, o, ps, &path, inside_unchanged);
                }
            }
            Value::Array(a) => {
                if let Some(items) = &s.items {
                    let old_items = old.and_then(Value::as_array);
                    for (i, item) in a.iter().enumerate() {
                        let o = old_items.and_then(|o| correlate_item(item, o, s));
                        self.rules_walk(item, o, items, &name.index(i), inside_unchanged);
                    }
                }
            }
            _ => {}
        }
    }

    /// kube-openapi's type validator, quirks included.
    fn check_type(&mut self, v: &Value, s: &Structural, name: &LazyPath<'_>) {
        // `x-kubernetes-int-or-string` is the type `["integer","string"]` upstream.
        if s.extensions.int_or_string {
            let allowed_null = v.is_null() && s.nullable;
            if !(v.is_string() || v.as_number().is_some_and(integral) || allowed_null) {
                let sch_type = type_name(v);
                self.type_invalid(name, Value::from(sch_type), "integer,string", sch_type);
            }
            return;
        }
        let ty = s.type_.as_str();
        let format = s.validation.format.as_deref().unwrap_or("");
        if ty.is_empty() && format.is_empty() {
            return;
        }
        if v.is_null() {
            if !ty.is_empty() && !s.nullable {
                self.type_invalid(name, Value::from("null"), ty, "null");
            }
            return;
        }
        let sch_type = type_name(v);
        let data_format = match v {
            Value::Number(n) if !integral(n) => "float64",
            Value::Number(_) => "int64",
            _ => "",
        };
        let float_int = sch_type == "number"
            && ty == "integer"
            && v.as_f64().is_some_and(float_is_json_integer);
        let int_float = sch_type == "integer" && ty == "number";
        let str_or_arr = v.is_string() || v.is_array();
        let type_ok = ty == sch_type || float_int || int_float;
        if !(str_or_arr || format.is_empty() || type_ok || data_format == format) {
            self.type_invalid(name, Value::from(data_format), format, data_format);
            return;
        }
        if ty != "number" && ty != "integer" && !format.is_empty() && str_or_arr {
            return;
        }
        if !type_ok {
            self.type_invalid(name, Value::from(sch_type), ty, sch_type);
        }
    }

    fn junctors(&mut self, v: &Value, s: &Structural, name: &LazyPath<'_>) {
        let vv = &s.validation;
        // Quoted only for a message: most values validate.
        let quoted = || quote(&name.to_string());
        if !vv.all_of.is_empty() {
            let mut validated = 0;
            for sch in &vv.all_of {
                let errs = self.sub(v, sch, name);
                if errs.is_empty() {
                    validated += 1;
                }
                self.errs.extend(errs);
            }
            if validated != vv.all_of.len() {
                let extra = if validated == 0 {
                    ". None validated"
                } else {
                    ""
                };
                self.junctor(format!(
                    "{} must validate all the schemas (allOf){extra}",
                    quoted()
                ));
            }
        }
        if !vv.any_of.is_empty() {
            let mut best: Option<Branch> = None;
            let mut ok = false;
            for sch in &vv.any_of {
                let branch = self.branch(v, sch, name);
                if branch.errs.is_empty() {
                    ok = true;
                    break;
                }
                best = Branch::better(best, branch);
            }
            if !ok {
                self.junctor(format!(
                    "{} must validate at least one schema (anyOf)",
                    quoted()
                ));
                self.take(best);
            }
        }
        if !vv.one_of.is_empty() {
            let mut best: Option<Branch> = None;
            let mut valid = 0;
            for sch in &vv.one_of {
                let branch = self.branch(v, sch, name);
                if branch.errs.is_empty() {
                    valid += 1;
                } else {
                    best = Branch::better(best, branch);
                }
            }
            if valid != 1 {
                let extra = if valid == 0 {
                    "Found none valid".to_string()
                } else {
                    format!("Found {valid} valid alternatives")
                };
                self.junctor(format!(
                    "{} must validate one and only one schema (oneOf). {extra}",
                    quoted()
                ));
                if valid == 0 {
                    self.take(best);
                }
            }
        }
        if let Some(not) = &vv.not
            && self.sub(v, not, name).is_empty()
        {
            self.junctor(format!("{} must not validate the schema (not)", quoted()));
        }
    }

    fn string(&mut self, st: &str, s: &Structural, name: &LazyPath<'_>) {
        let vv = &s.validation;
        // Characters are counted only when the byte length leaves the
        // bounds in doubt (there are never more characters than bytes).
        let chars = || st.chars().count() as i64;
        if let Some(max) = vv.max_length
            && st.len() as i64 > max
            && chars() > max
        {
            let bytes = if max == 1 { "byte" } else { "bytes" };
            self.errs.push(FieldError {
                kind: ErrorType::TooLong,
                field: self.fp(name).to_string(),
                bad_value: None,
                detail: format!("may not be more than {max} {bytes}"),
            });
        }
        if let Some(min) = vv.min_length
            && chars() < min
        {
            self.invalid(
                name,
                Value::from(st),
                &format!("should be at least {min} chars long"),
            );
        }
        if let Some(p) = &vv.pattern
            && !p.regex.is_match(st)
        {
            let src = p.source.clone();
            self.invalid(name, Value::from(st), &format!("should match '{src}'"));
        }
        if let Some(f) = &vv.format
            && !check_format(f, st)
        {
            let f = f.clone();
            self.type_invalid(name, Value::from(st), &f, st);
        }
    }

    /// kube-openapi's number validator: integer data is compared against the
    /// bounds truncated to integers (and printed with `%d`), float data
    /// against the float bounds (printed with `%v`).
    fn number(&mut self, v: &Value, s: &Structural, name: &LazyPath<'_>) {
        let vv = &s.validation;
        let int_data = match v {
            Value::Number(n) if integral(n) => n
                .as_i64()
                .or_else(|| n.as_u64().map(|u| u as i64))
                .or_else(|| n.as_f64().map(|f| f as i64)),
            _ => None,
        };
        let Some(x) = v.as_f64() else { return };
        // Since 1.35 a bound an `integer` schema cannot hold is an error of
        // its own, and data is then compared with it as a float.
        let integer_bounds_only = s.type_ == "integer";
        let check_bound = |this: &mut Self, prefix: &str, b: f64| {
            if integer_bounds_only && !fits_integer_format(b, vv.format.as_deref()) {
                this.bound_type_error(name, prefix, vv.format.as_deref());
            }
        };
        // (data, bound) as compared, and the bound as printed (only in an error)
        let bound = |b: f64| -> (f64, f64, Shown) {
            match int_data {
                Some(i) if !integer_bounds_only || fits_integer_format(b, vv.format.as_deref()) => {
                    (i as f64, (b as i64) as f64, Shown::Int(b as i64))
                }
                _ => (x, b, Shown::Float(b)),
            }
        };
        if let Some(m) = vv.multiple_of {
            check_bound(self, "MultipleOf", m);
            let bad = match int_data {
                Some(i) => {
                    let f = m as i64;
                    f != 0 && i.checked_rem(f).is_some_and(|r| r != 0)
                }
                None => {
                    m != 0.0 && {
                        let q = x / m;
                        !(q.is_finite() && q.fract() == 0.0)
                    }
                }
            };
            if bad {
                let (_, _, shown) = bound(m);
                self.invalid(name, v.clone(), &format!("should be a multiple of {shown}"));
            }
        }
        if let Some(max) = vv.maximum {
            check_bound(self, "Maximum boundary", max);
            let (val, b, shown) = bound(max);
            if vv.exclusive_maximum && val >= b {
                self.invalid(name, v.clone(), &format!("should be less than {shown}"));
            } else if !vv.exclusive_maximum && val > b {
                self.invalid(
                    name,
                    v.clone(),
                    &format!("should be less than or equal to {shown}"),
                );
            }
        }
        if let Some(min) = vv.minimum {
            check_bound(self, "Minimum boundary", min);
            let (val, b, shown) = bound(min);
            if vv.exclusive_minimum && val <= b {
                self.invalid(name, v.clone(), &format!("should be greater than {shown}"));
            } else if !vv.exclusive_minimum && val < b {
                self.invalid(
                    name,
                    v.clone(),
                    &format!("should be greater than or equal to {shown}"),
                );
            }
        }
    }

    fn array(&mut self, a: &[Value], old: Option<&Value>, s: &Structural, name: &LazyPath<'_>) {
        let vv = &s.validation;
        if let Some(items) = &s.items {
            let old_items = old.and_then(Value::as_array);
            for (i, item) in a.iter().enumerate() {
                let old_item = old_items.and_then(|o| correlate_item(item, o, s));
                self.node(item, old_item, items, &name.index(i));
            }
        }
        let size = a.len() as i64;
        if let Some(min) = vv.min_items
            && size < min
        {
            self.invalid(
                name,
                Value::from(size),
                &format!("should have at least {min} items"),
            );
        }
        if let Some(max) = vv.max_items
            && size > max
        {
            self.errs.push(FieldError::too_many(
                &self.fp(name),
                size as usize,
                max as usize,
            ));
        }
        if vv.unique_items {
            let dup = a
                .iter()
                .enumerate()
                .any(|(i, x)| a[..i].iter().any(|y| json_eq(x, y)));
            if dup {
                self.invalid(name, Value::from(""), "shouldn't contain duplicates");
            }
        }
    }

    fn object(
        &mut self,
        m: &Map<String, Value>,
        old: Option<&Map<String, Value>>,
        s: &Structural,
        name: &LazyPath<'_>,
    ) {
        let vv = &s.validation;
        let n = m.len() as i64;
        if let Some(min) = vv.min_properties
            && n < min
        {
            self.invalid(
                name,
                Value::from(n),
                &format!("should have at least {min} properties"),
            );
            return;
        }
        if let Some(max) = vv.max_properties
            && n > max
        {
            self.errs.push(FieldError::too_many(
                &self.fp(name),
                n as usize,
                max as usize,
            ));
            return;
        }
        match &s.additional_properties {
            Some(AdditionalProperties::Bool(false)) => {
                for k in m.keys().filter(|k| !s.properties.contains_key(*k)) {
                    let msg = format!("{name}.{k} in body is a forbidden property");
                    let e = FieldError::invalid(&self.fp(name), Value::from(k.as_str()), &msg);
                    self.errs.push(e);
                }
            }
            Some(AdditionalProperties::Schema(ap)) => {
                for (k, val) in m.iter().filter(|(k, _)| !s.properties.contains_key(*k)) {
                    let o = old.and_then(|o| o.get(k));
                    self.node(val, o, ap, &name.map_value(k));
                }
            }
            _ => {}
        }
        for (k, ps) in &s.properties {
            if let Some(val) = m.get(k) {
                // the root's kind/apiVersion are never ratcheted
                let type_meta = name.is_empty() && (k == "kind" || k == "apiVersion");
                let o = old.and_then(|o| o.get(k)).filter(|_| !type_meta);
                self.node(val, o, ps, &name.child(k));
            }
        }
        for r in &vv.required {
            if !m.contains_key(r) {
                let e = FieldError::required(&self.fp(&name.child(r)), "");
                self.errs.push(e);
            }
        }
    }
}

/// Ratcheting correlation of list items, as upstream's `CorrelatedObject`:
/// only `list-type=map` items correlate (by their keys); sets and atomic lists
/// do not.
fn correlate_item<'o>(item: &Value, old: &'o [Value], s: &Structural) -> Option<&'o Value> {
    if !s.is_list_map() {
        return None;
    }
    let keys = &s.extensions.list_map_keys;
    let item_obj = item.as_object()?;
    old.iter().find(|o| {
        o.as_object()
            .is_some_and(|oo| keys.iter().all(|k| opt_eq(oo.get(k), item_obj.get(k))))
    })
}

// ---------------------------------------------------------------------------
// list-type set/map uniqueness (upstream `structurallisttype`).

/// Duplicate checks for `x-kubernetes-list-type: set|map` lists. As upstream's
/// update strategy, when `old` itself violates them the new value is not
/// checked at all (list-type ratcheting).
pub fn validate_list_types(
    value: &Value,
    old: Option<&Value>,
    s: &Structural,
    path: &FieldPath,
) -> ErrorList {
    let path = LazyPath::At(path);
    if let Some(old) = old {
        let mut old_errs = ErrorList::new();
        list_types(old, s, &path, &mut old_errs);
        if !old_errs.is_empty() {
            return ErrorList::new();
        }
    }
    let mut errs = ErrorList::new();
    list_types(value, s, &path, &mut errs);
    errs
}

fn list_types(value: &Value, s: &Structural, path: &LazyPath<'_>, errs: &mut ErrorList) {
    if !s.below.list_types {
        return;
    }
    match value {
        Value::Object(m) => {
            if let Some(AdditionalProperties::Schema(ap)) = &s.additional_properties {
                for (k, v) in m {
                    list_types(v, ap, &path.key(k), errs);
                }
            }
            for (k, v) in m {
                if let Some(ps) = s.properties.get(k) {
                    list_types(v, ps, &path.child(k), errs);
                }
            }
        }
        Value::Array(a) => {
            if s.is_list_set() {
                for i in non_unique(a) {
                    errs.push(FieldError::duplicate(&path.index(i).build(), a[i].clone()));
                }
            } else if s.is_list_map() {
                errs.extend(validate_list_map(a, s, &path.build()));
            }
            if let Some(items) = &s.items {
                for (i, x) in a.iter().enumerate() {
                    list_types(x, items, &path.index(i), errs);
                }
            }
        }
        _ => {}
    }
}

/// Indices of the second occurrence of each repeated value (upstream reports
/// a value once, however often it repeats).
fn non_unique(a: &[Value]) -> Vec<usize> {
    let mut out = Vec::new();
    for (i, x) in a.iter().enumerate() {
        let earlier = a[..i].iter().filter(|y| json_eq(x, y)).count();
        if earlier == 1 {
            out.push(i);
        }
    }
    out
}

fn validate_list_map(a: &[Value], s: &Structural, path: &FieldPath) -> ErrorList {
    if let Some((i, x)) = a
        .iter()
        .enumerate()
        .find(|(_, x)| !x.is_object() && !x.is_null())
    {
        return vec![FieldError::invalid(
            &path.index(i),
            x.clone(),
            "must be an object for an array of list-type map",
        )];
    }
    // the present key fields of each item; absent keys (and null items) compare equal
    let keys: Vec<Value> = a
        .iter()
        .map(|x| {
            let mut key = Map::new();
            if let Some(o) = x.as_object() {
                for k in &s.extensions.list_map_keys {
                    if let Some(v) = o.get(k) {
                        key.insert(k.clone(), v.clone());
                    }
                }
            }
            Value::Object(key)
        })
        .collect();
    non_unique(&keys)
        .into_iter()
        .map(|i| {
            let mut e = FieldError::duplicate(&path.index(i), Value::Null);
            e.bad_value = Some(BadValue::Go(apimachinery::gofmt::go_syntax(&keys[i])));
            e
        })
        .collect()
}

// ---------------------------------------------------------------------------
// embedded resources (upstream `schema/objectmeta` validation).

/// apiVersion/kind/metadata checks of `x-kubernetes-embedded-resource` values
/// (not ratcheted, as upstream).
pub fn validate_embedded(value: &Value, s: &Structural, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    embedded(value, s, &LazyPath::At(path), &mut errs);
    errs
}

fn embedded(value: &Value, s: &Structural, path: &LazyPath<'_>, errs: &mut ErrorList) {
    if !s.below.embedded {
        return;
    }
    match value {
        Value::Object(m) => {
            if s.extensions.embedded_resource {
                errs.extend(validate_embedded_resource(m, &path.build()));
            }
            for (k, v) in m {
                if s.extensions.embedded_resource && k == "metadata" {
                    continue;
                }
                // upstream walks additionalProperties with `Key(k)`
                let child = if s.properties.contains_key(k) {
                    path.child(k)
                } else {
                    path.key(k)
                };
                if let Some(ps) = s.property(k) {
                    embedded(v, ps, &child, errs);
                }
            }
        }
        Value::Array(a) => {
            if let Some(items) = &s.items {
                for (i, x) in a.iter().enumerate() {
                    embedded(x, items, &path.index(i), errs);
                }
            }
        }
        _ => {}
    }
}

fn validate_embedded_resource(m: &Map<String, Value>, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    if !m.contains_key("apiVersion") {
        errs.push(FieldError::required(&path.child("apiVersion"), ""));
    }
    if !m.contains_key("kind") {
        errs.push(FieldError::required(&path.child("kind"), ""));
    }
    match m.get("apiVersion") {
        Some(Value::String(av)) if av.is_empty() => {
            errs.push(FieldError::required(&path.child("apiVersion"), ""))
        }
        Some(Value::String(av)) if av.matches('/').count() > 1 => errs.push(FieldError::invalid(
            &path.child("apiVersion"),
            Value::from(av.as_str()),
            &format!("unexpected GroupVersion string: {av}"),
        )),
        Some(Value::String(_)) | None => {}
        Some(other) => errs.push(FieldError::invalid(
            &path.child("apiVersion"),
            other.clone(),
            "must be a string",
        )),
    }
    match m.get("kind") {
        Some(Value::String(k)) if k.is_empty() => {
            errs.push(FieldError::required(&path.child("kind"), ""))
        }
        Some(Value::String(k)) => {
            let msgs = apimachinery::validation::is_dns1035_label(&k.to_lowercase());
            if !msgs.is_empty() {
                errs.push(FieldError::invalid(
                    &path.child("kind"),
                    Value::from(k.as_str()),
                    &format!(
                        "may have mixed case, but should otherwise match: {}",
                        msgs.join(",")
                    ),
                ));
            }
        }
        None => {}
        Some(other) => errs.push(FieldError::invalid(
            &path.child("kind"),
            other.clone(),
            "must be a string",
        )),
    }
    if let Some(meta) = apimachinery::meta::member_of(m) {
        let mp = path.child("metadata");
        if let Some(mo) = meta.as_object() {
            let mut mo = mo.clone();
            let name_empty = mo
                .get("name")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty);
            if name_empty {
                mo.insert("name".into(), Value::from("fakename"));
            }
            let namespaced = mo
                .get("namespace")
                .and_then(Value::as_str)
                .is_some_and(|n| !n.is_empty());
            errs.extend(apimachinery::validation::validate_object_meta(
                &Value::Object(mo),
                namespaced,
                validate_path_segment_name,
                &mp,
            ));
        } else if !meta.is_null() {
            errs.push(FieldError::invalid(
                &mp,
                meta.clone(),
                "must be of type object",
            ));
        }
    }
    errs
}

/// Upstream `path.ValidatePathSegmentName`.
fn validate_path_segment_name(name: &str, prefix: bool) -> Vec<String> {
    let mut out = Vec::new();
    if !prefix && (name == "." || name == "..") {
        out.push(format!("may not be '{name}'"));
    }
    for bad in ["/", "%"] {
        if name.contains(bad) {
            out.push(format!("may not contain '{bad}'"));
        }
    }
    out
}
