//! Static cost estimation (cel-go's cost model with kube-apiserver's size
//! estimates): the most a checked rule can cost on any object its schema
//! admits. Sizes come from `maxLength`, `maxItems`, `maxProperties` and
//! enums, else from what fits in a 3 MiB request; comprehensions cost their
//! range's size times their body, string functions a tenth of a unit per
//! byte, regular expressions a quarter per pattern byte. Only the maximum is
//! tracked: it is what upstream compares with its limits.

use std::collections::{BTreeMap, HashMap};

use cel::common::ast::{CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr, LiteralValue};
use schema::structural::{AdditionalProperties, Structural};

use crate::types::{Type, escape};

/// kube-apiserver's largest request (`celconfig.MaxRequestSizeBytes`).
const MAX_REQUEST_BYTES: u64 = 3 * 1024 * 1024;
/// The most one expression may be estimated to cost
/// (`StaticEstimatedCostLimit`).
pub const PER_EXPRESSION_LIMIT: u64 = 10_000_000;
/// The most all of a CRD's rules may (`StaticEstimatedCRDCostLimit`).
pub const PER_CRD_LIMIT: u64 = 100_000_000;
/// The most one evaluation may cost (`celconfig.PerCallLimit`).
pub const PER_CALL_LIMIT: u64 = 1_000_000;

const STRING_TRAVERSAL: f64 = 0.1;
const REGEX_PATTERN: f64 = 0.25;

/// How large a schema node's values can get, in CEL's terms: bytes of a
/// string, items of a list, entries of a map.
#[derive(Debug, Default)]
pub struct Limits {
    /// The most elements (string bytes, list items, map entries).
    max_elements: Option<u64>,
    /// The least bytes a value serializes to.
    pub min_serialized: u64,
    fields: BTreeMap<String, Limits>,
    /// List items or map values.
    element: Option<Box<Limits>>,
}

impl Limits {
    /// The limits of values of `s` (upstream's `SchemaDeclType` sizes).
    pub fn of_schema(s: &Structural) -> Limits {
        let v = &s.validation;
        if s.extensions.int_or_string {
            return Limits {
                max_elements: Some(MAX_REQUEST_BYTES - 2),
                min_serialized: 1,
                ..Limits::default()
            };
        }
        match s.type_.as_str() {
            "array" => {
                let element = s.items.as_deref().map(Limits::of_schema);
                let item_min = element.as_ref().map_or(1, |e| e.min_serialized);
                let max = v
                    .max_items
                    .map_or((MAX_REQUEST_BYTES - 2) / (item_min + 1), non_negative);
                Limits {
                    max_elements: Some(max),
                    min_serialized: 2,
                    element: element.map(Box::new),
                    ..Limits::default()
                }
            }
            "object" => {
                if let Some(AdditionalProperties::Schema(values)) = &s.additional_properties {
                    let element = Limits::of_schema(values);
                    let max = v.max_properties.map_or(
                        (MAX_REQUEST_BYTES - 2) / (element.min_serialized + 6),
                        non_negative,
                    );
                    return Limits {
                        max_elements: Some(max),
                        min_serialized: 2,
                        element: Some(Box::new(element)),
                        ..Limits::default()
                    };
                }
                let required: &[String] = &v.required;
                let mut min_serialized = 2;
                let mut fields = BTreeMap::new();
                for (name, p) in &s.properties {
                    let limits = Limits::of_schema(p);
                    if required.contains(name) && p.default.is_none() {
                        min_serialized += name.len() as u64 + limits.min_serialized + 4;
                    }
                    if let Some(field) = escape(name) {
                        fields.insert(field, limits);
                    }
                }
                Limits {
                    min_serialized,
                    fields,
                    ..Limits::default()
                }
            }
            "string" => {
                let (max, min) = match v.format.as_deref() {
                    Some("duration") => (32, 3),
                    Some("date") => (12, 12),
                    Some("date-time") => (32, 21),
                    _ => {
                        let max = match (v.max_length, &v.enum_values) {
                            (Some(n), _) => non_negative(n) * 4,
                            (None, Some(values)) => values
                                .iter()
                                .filter_map(|e| e.as_str())
                                .map(|e| e.len() as u64)
                                .max()
                                .unwrap_or(0),
                            (None, None) => MAX_REQUEST_BYTES - 2,
                        };
                        (max, 2)
                    }
                };
                let max = match (v.format.as_deref(), v.max_length) {
                    (Some("byte"), Some(n)) => non_negative(n),
                    _ => max,
                };
                Limits {
                    max_elements: Some(max),
                    min_serialized: min,
                    ..Limits::default()
                }
            }
            "boolean" => Limits {
                min_serialized: 4,
                ..Limits::default()
            },
            _ => Limits {
                min_serialized: 1,
                ..Limits::default()
            },
        }
    }

    /// The sizes of an actual value (strings' bytes, lists' items, maps'
    /// entries; items and values the widest of theirs): what the estimate
    /// bounds an evaluation on this value by.
    pub fn of_value(v: &serde_json::Value, s: Option<&Structural>) -> Limits {
        use serde_json::Value;
        match v {
            Value::String(st) => Limits {
                max_elements: Some(st.len() as u64),
                min_serialized: 2,
                ..Limits::default()
            },
            Value::Array(a) => {
                let items = s.and_then(|s| s.items.as_deref());
                Limits {
                    max_elements: Some(a.len() as u64),
                    min_serialized: 2,
                    element: widest(a.iter().map(|i| Limits::of_value(i, items))).map(Box::new),
                    ..Limits::default()
                }
            }
            Value::Object(o) => match s.and_then(|s| match &s.additional_properties {
                Some(AdditionalProperties::Schema(values)) => Some(values),
                _ => None,
            }) {
                Some(values) => Limits {
                    max_elements: Some(o.len() as u64),
                    min_serialized: 2,
                    element: widest(o.values().map(|v| Limits::of_value(v, Some(values))))
                        .map(Box::new),
                    ..Limits::default()
                },
                None => Limits {
                    min_serialized: 2,
                    fields: o
                        .iter()
                        .filter_map(|(k, v)| {
                            let child = s.and_then(|s| s.property(k));
                            Some((escape(k)?, Limits::of_value(v, child)))
                        })
                        .collect(),
                    ..Limits::default()
                },
            },
            _ => Limits {
                min_serialized: 1,
                ..Limits::default()
            },
        }
    }

    /// How many values of this node a request can hold, when nothing bounds
    /// it (upstream's `maxCardinality`).
    pub fn max_cardinality(&self) -> u64 {
        MAX_REQUEST_BYTES / (self.min_serialized + 1)
    }
}

/// Limits that bound each of `all`.
fn widest(all: impl Iterator<Item = Limits>) -> Option<Limits> {
    all.reduce(|a, b| {
        let mut fields = a.fields;
        for (k, v) in b.fields {
            let merged = match fields.remove(&k) {
                Some(existing) => widest([existing, v].into_iter()).unwrap_or_default(),
                None => v,
            };
            fields.insert(k, merged);
        }
        Limits {
            max_elements: a.max_elements.max(b.max_elements),
            min_serialized: a.min_serialized.min(b.min_serialized),
            fields,
            element: match (a.element, b.element) {
                (Some(x), Some(y)) => widest([*x, *y].into_iter()).map(Box::new),
                (x, y) => x.or(y),
            },
        }
    })
}

fn non_negative(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// The estimated maximum cost of a checked expression whose `self` has
/// `limits`.
pub fn estimate(expr: &IdedExpr, types: &HashMap<u64, Type>, limits: &Limits) -> u64 {
    let mut estimator = Estimator {
        types,
        root: limits,
        scopes: vec![
            ("self".into(), Node::limits(limits)),
            ("oldSelf".into(), Node::limits(limits)),
        ],
    };
    estimator.cost(expr).0
}

/// What the estimator knows of a value: its largest size and, when it comes
/// from the schema, that node's limits.
#[derive(Clone, Copy, Default)]
struct Node<'a> {
    size: Option<u64>,
    limits: Option<&'a Limits>,
}

impl<'a> Node<'a> {
    /// A value from the schema: as upstream, objects and scalars have no
    /// elements (size 0), whatever their contents.
    fn limits(l: &'a Limits) -> Node<'a> {
        Node {
            size: Some(l.max_elements.unwrap_or(0)),
            limits: Some(l),
        }
    }

    fn sized(size: u64) -> Node<'a> {
        Node {
            size: Some(size),
            limits: None,
        }
    }

    /// The largest size, unknown as the largest there is.
    fn max(&self) -> u64 {
        self.size.unwrap_or(u64::MAX)
    }

    /// The items (values) of this list (map). Of a computed container
    /// (`c ? a : []`) upstream's estimator resolves an empty path to the
    /// rule's own node, so items take that node's size.
    fn element(&self, root: &'a Limits) -> Node<'a> {
        match self.limits {
            Some(l) => l.element.as_deref().map(Node::limits).unwrap_or_default(),
            None => Node::sized(root.max_elements.unwrap_or(0)),
        }
    }
}

struct Estimator<'a> {
    types: &'a HashMap<u64, Type>,
    root: &'a Limits,
    scopes: Vec<(String, Node<'a>)>,
}

/// `x * factor`, rounded up, saturating.
fn factor(x: u64, factor: f64) -> u64 {
    let product = (x as f64 * factor).ceil();
    if product >= u64::MAX as f64 {
        u64::MAX
    } else {
        product as u64
    }
}

impl<'a> Estimator<'a> {
    fn is_scalar(&self, id: u64) -> bool {
        matches!(
            self.types.get(&id),
            Some(
                Type::Bool
                    | Type::Int
                    | Type::Uint
                    | Type::Double
                    | Type::Duration
                    | Type::Timestamp
            )
        )
    }

    /// The cost of `e`, and what is known of its value.
    fn cost(&mut self, e: &IdedExpr) -> (u64, Node<'a>) {
        let (cost, node) = self.cost_of(e);
        let node = if node.size.is_none() && self.is_scalar(e.id) {
            Node::sized(1)
        } else {
            node
        };
        (cost, node)
    }

    fn cost_of(&mut self, e: &IdedExpr) -> (u64, Node<'a>) {
        match &e.expr {
            Expr::Unspecified => (0, Node::default()),
            Expr::Literal(l) => (0, Node::sized(literal_size(l))),
            Expr::Ident(name) => {
                let node = self
                    .scopes
                    .iter()
                    .rev()
                    .find(|(n, _)| n == name)
                    .map(|(_, node)| *node)
                    // A type name (`string`): upstream's estimator resolves
                    // its one-segment path to the rule's own node.
                    .unwrap_or(Node::sized(self.root.max_elements.unwrap_or(0)));
                (1, node)
            }
            Expr::Select(select) => {
                let (operand_cost, operand) = self.cost(&select.operand);
                if select.test {
                    return (operand_cost.saturating_add(1), Node::default());
                }
                let selectable = matches!(
                    self.types.get(&select.operand.id),
                    Some(Type::Map(..) | Type::Object(_))
                );
                let field = operand
                    .limits
                    .and_then(|l| l.fields.get(&select.field).or(l.element.as_deref()))
                    .map(Node::limits)
                    .unwrap_or_default();
                (operand_cost.saturating_add(u64::from(selectable)), field)
            }
            Expr::Call(call) => self.call(call),
            Expr::List(list) => {
                let mut cost: u64 = 10;
                for item in &list.elements {
                    cost = cost.saturating_add(self.cost(item).0);
                }
                (cost, Node::sized(list.elements.len() as u64))
            }
            Expr::Map(map) => {
                let mut cost: u64 = 30;
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(m) = &entry.expr {
                        cost = cost
                            .saturating_add(self.cost(&m.key).0)
                            .saturating_add(self.cost(&m.value).0);
                    }
                }
                (cost, Node::sized(map.entries.len() as u64))
            }
            Expr::Struct(_) => (40, Node::default()),
            Expr::Comprehension(c) => self.comprehension(c),
        }
    }

    fn comprehension(&mut self, c: &ComprehensionExpr) -> (u64, Node<'a>) {
        let (range_cost, range) = self.cost(&c.iter_range);
        let (init_cost, init) = self.cost(&c.accu_init);
        let depth = self.scopes.len();
        self.scopes.push((c.accu_var.clone(), init));
        let element = match self.types.get(&c.iter_range.id) {
            // Over a map the variable is the key, which upstream's schema
            // types leave unsized (0).
            Some(Type::Map(..)) => Node::sized(0),
            _ => range.element(self.root),
        };
        match &c.iter_var2 {
            Some(second) => {
                self.scopes.push((c.iter_var.clone(), Node::sized(1)));
                self.scopes.push((second.clone(), range.element(self.root)));
            }
            None => self.scopes.push((c.iter_var.clone(), element)),
        }
        let condition = self.cost(&c.loop_cond).0;
        let step = self.cost(&c.loop_step).0;
        self.scopes.truncate(depth + 1);
        let (result_cost, result) = self.cost(&c.result);
        self.scopes.truncate(depth);
        let body = range.max().saturating_mul(condition.saturating_add(step));
        let cost = range_cost
            .saturating_add(init_cost)
            .saturating_add(result_cost)
            .saturating_add(body);
        let node = match c.accu_init.expr {
            Expr::List(_) | Expr::Map(_) => range,
            _ => result,
        };
        (cost, node)
    }

    fn call(&mut self, call: &CallExpr) -> (u64, Node<'a>) {
        // `sets.contains(a, b)`: a namespace, not a receiver.
        let qualified = match &call.target {
            Some(t) => match &t.expr {
                Expr::Ident(ns) if !self.scopes.iter().any(|(n, _)| n == ns) => {
                    Some(format!("{ns}.{}", call.func_name))
                }
                _ => None,
            },
            None => None,
        };
        let (target_cost, target) = match &call.target {
            Some(_) if qualified.is_some() => (0, None),
            Some(t) => {
                let (c, n) = self.cost(t);
                (c, Some(n))
            }
            None => (0, None),
        };
        let mut args_cost = target_cost;
        let mut args = Vec::with_capacity(call.args.len());
        let mut costs = Vec::with_capacity(call.args.len());
        for a in &call.args {
            let (c, n) = self.cost(a);
            args_cost = args_cost.saturating_add(c);
            costs.push(c);
            args.push(n);
        }
        let size = |n: Option<&Node<'_>>| n.map_or(u64::MAX, Node::max);
        let string_arg = |i: usize| factor(size(args.get(i)), STRING_TRAVERSAL);
        let name = qualified.as_deref().unwrap_or(&call.func_name);
        let (own, result) = match name {
            "_&&_" | "_||_" => return (args_cost, Node::default()),
            "_?_:_" => {
                let branch = costs
                    .get(1)
                    .copied()
                    .unwrap_or(0)
                    .max(costs.get(2).copied().unwrap_or(0));
                let size = size(args.get(1)).max(size(args.get(2)));
                return (
                    costs.first().copied().unwrap_or(0).saturating_add(branch),
                    Node::sized(size),
                );
            }
            "dyn" => {
                return (
                    args_cost.saturating_add(1),
                    args.first().copied().unwrap_or_default(),
                );
            }
            "startsWith" | "endsWith" => (string_arg(0), Node::default()),
            "@in"
                if matches!(
                    call.args.get(1).and_then(|a| self.types.get(&a.id)),
                    Some(Type::List(_))
                ) =>
            {
                (size(args.get(1)), Node::default())
            }
            "matches" | "find" | "findAll" => {
                let (subject, pattern) = match target {
                    Some(t) => (t.max(), size(args.first())),
                    None => (size(args.first()), size(args.get(1))),
                };
                let cost = factor(subject.saturating_add(1), STRING_TRAVERSAL)
                    .saturating_mul(factor(pattern, REGEX_PATTERN));
                (cost, Node::sized(subject))
            }
            "contains" => {
                let t = factor(
                    target.as_ref().map_or(u64::MAX, Node::max),
                    STRING_TRAVERSAL,
                );
                (t.saturating_mul(string_arg(0)), Node::default())
            }
            "_+_" => {
                let total = size(args.first()).saturating_add(size(args.get(1)));
                let list = matches!(
                    call.args.first().and_then(|a| self.types.get(&a.id)),
                    Some(Type::List(_))
                );
                let cost = if list {
                    1
                } else {
                    factor(total, STRING_TRAVERSAL)
                };
                (cost, Node::sized(total))
            }
            "_==_" | "_!=_" | "_<_" | "_<=_" | "_>_" | "_>=_" => {
                let smallest = size(args.first()).min(size(args.get(1)));
                (factor(smallest, STRING_TRAVERSAL), Node::default())
            }
            "_[_]" => {
                let container = args.first().copied().unwrap_or_default();
                (1, container.element(self.root))
            }
            "lowerAscii" | "upperAscii" | "substring" | "trim" => {
                let s = target.as_ref().map_or(u64::MAX, Node::max);
                (factor(s, STRING_TRAVERSAL), Node::sized(s))
            }
            "replace" | "split" => {
                let s = target.as_ref().map_or(u64::MAX, Node::max);
                (factor(s, 2.0 * STRING_TRAVERSAL), Node::sized(s))
            }
            "isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf" if target.is_some() => {
                let t = target.unwrap_or_default();
                let is_list = call
                    .target
                    .as_ref()
                    .is_some_and(|t| matches!(self.types.get(&t.id), Some(Type::List(_))));
                if is_list {
                    let element = t.element(self.root);
                    let element_string = matches!(
                        call.target.as_ref().and_then(|t| self.types.get(&t.id)),
                        Some(Type::List(e)) if matches!(**e, Type::String | Type::Bytes)
                    );
                    let per = if element_string {
                        1u64.saturating_add(factor(element.max(), STRING_TRAVERSAL))
                    } else {
                        1
                    };
                    (t.max().saturating_mul(per), Node::default())
                } else {
                    (factor(t.max(), STRING_TRAVERSAL), Node::default())
                }
            }
            "url" | "isURL" | "ip" | "isIP" | "cidr" | "isCIDR" | "quantity" | "isQuantity"
            | "semver" | "isSemver" => {
                let s = size(args.first());
                (factor(s, STRING_TRAVERSAL), Node::sized(s))
            }
            "ip.isCanonical" => (
                factor(size(args.first()), 2.0 * STRING_TRAVERSAL),
                Node::default(),
            ),
            "join" => {
                let t = target.unwrap_or_default();
                let total = t.max().saturating_mul(t.element(self.root).max());
                (factor(total, STRING_TRAVERSAL), Node::sized(total))
            }
            "sets.contains" | "sets.equivalent" | "sets.intersects" => {
                let product = size(args.first()).saturating_mul(size(args.get(1)));
                (product, Node::default())
            }
            "validate" => (
                factor(size(args.first()), STRING_TRAVERSAL).saturating_add(1),
                Node::default(),
            ),
            "size" => (1, Node::sized(1)),
            // The pairs of a two-variable comprehension's range.
            "@kubext_entries" => (1, Node::sized(size(args.first()))),
            _ => (1, Node::default()),
        };
        (own.saturating_add(args_cost), result)
    }
}

fn literal_size(l: &LiteralValue) -> u64 {
    match l {
        LiteralValue::String(s) => s.inner().chars().count() as u64,
        LiteralValue::Bytes(b) => b.inner().len() as u64,
        _ => 1,
    }
}

/// Upstream's message for a cost over its limit.
pub fn exceeds_message(what: &str, cost: u64, limit: u64) -> String {
    let times = cost as f64 / limit as f64;
    let by = if times > 100.0 {
        "more than 100x".to_string()
    } else if times < 1.5 {
        format!("{times:.6}x")
    } else {
        format!("{times:.1}x")
    };
    format!(
        "{what} exceeds budget by factor of {by} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::check;
    use crate::decls::Declarations;
    use serde_json::{Value, json};

    /// The estimated cost of the one rule on the root of `schema`.
    fn rule_cost(schema: Value) -> u64 {
        let s = Structural::compile(&schema).unwrap();
        let rule = &s.extensions.validations[0].rule;
        let program = cel::Env::stdlib().compile(rule).unwrap();
        let t = Type::of_schema(&s, false).unwrap();
        let checked = check(
            program.expression(),
            program.source_info(),
            &[("self", t.clone()), ("oldSelf", t)],
            &Declarations::kubernetes(),
        )
        .unwrap();
        estimate(program.expression(), &checked.types, &Limits::of_schema(&s))
    }

    fn array(items: Value, max_items: Option<u64>, rule: &str) -> Value {
        let mut s = json!({"type": "array", "items": items,
            "x-kubernetes-validations": [{"rule": rule}]});
        if let Some(m) = max_items {
            s["maxItems"] = json!(m);
        }
        s
    }

    fn string(max_length: Option<u64>, rule: &str) -> Value {
        let mut s = json!({"type": "string", "x-kubernetes-validations": [{"rule": rule}]});
        if let Some(m) = max_length {
            s["maxLength"] = json!(m);
        }
        s
    }

    fn map(values: Value, max_properties: Option<u64>, rule: &str) -> Value {
        let mut s = json!({"type": "object", "additionalProperties": values,
            "x-kubernetes-validations": [{"rule": rule}]});
        if let Some(m) = max_properties {
            s["maxProperties"] = json!(m);
        }
        s
    }

    /// Upstream's expected costs (apiextensions-apiserver
    /// pkg/apiserver/schema/cel/compilation_test.go, TestCostEstimation):
    /// unbounded, then with the limit the upstream case sets.
    #[test]
    fn estimates_match_upstreams() {
        let number = json!({"type": "number"});
        let cases: Vec<(&str, Value, u64)> = vec![
            (
                "number array all",
                array(number.clone(), None, "self.all(x, true)"),
                4718591,
            ),
            (
                "number array all, 10",
                array(number.clone(), Some(10), "self.all(x, true)"),
                32,
            ),
            (
                "string array all",
                array(json!({"type": "string"}), None, "self.all(x, true)"),
                3145727,
            ),
            (
                "string array all, 20",
                array(json!({"type": "string"}), Some(20), "self.all(x, true)"),
                62,
            ),
            (
                "boolean array all",
                array(json!({"type": "boolean"}), None, "self.all(x, true)"),
                1887437,
            ),
            (
                "boolean array all, 5",
                array(json!({"type": "boolean"}), Some(5), "self.all(x, true)"),
                17,
            ),
            (
                "map of numbers all",
                map(number.clone(), None, "self.all(x, true)"),
                1348169,
            ),
            (
                "map of numbers all, 10",
                map(number.clone(), Some(10), "self.all(x, true)"),
                32,
            ),
            (
                "index of string array",
                array(json!({"type": "string"}), None, "self[1] == self[1]"),
                314577,
            ),
            (
                "O(n^2), 10",
                array(number.clone(), Some(10), "self.all(x, self.all(y, true))"),
                352,
            ),
            (
                "O(n^3), 10",
                array(
                    number,
                    Some(10),
                    "self.all(x, self.all(y, self.all(z, true)))",
                ),
                3552,
            ),
            ("matches", string(None, r#"self.matches("x")"#), 314574),
            ("matches, 50", string(Some(50), r#"self.matches("x")"#), 22),
            (
                "matches on a literal",
                string(None, r#""".matches("(((((((((())))))))))[0-9]")"#),
                7,
            ),
            (
                "lowerAscii",
                string(None, "self.lowerAscii() == 'lower!'"),
                314575,
            ),
            (
                "lowerAscii, 10",
                string(Some(10), "self.lowerAscii() == 'lower!'"),
                6,
            ),
            (
                "size calls",
                map(
                    json!({"type": "integer"}),
                    None,
                    "oldSelf.size() == self.size()",
                ),
                5,
            ),
            (
                "timestamps",
                map(
                    json!({"type": "string", "format": "date-time"}),
                    None,
                    r#"self["a"] == self["b"]"#,
                ),
                8,
            ),
            (
                "durations",
                map(
                    json!({"type": "string", "format": "duration"}),
                    None,
                    r#"self["c"] == self["d"]"#,
                ),
                8,
            ),
            (
                "split",
                json!({"type": "object", "properties": {
                "str": {"type": "string"}, "separator": {"type": "string"}},
                "x-kubernetes-validations": [{"rule": "self.str.split(self.separator) == []"}]}),
                629160,
            ),
            (
                "replace",
                json!({"type": "object", "properties": {
                "str": {"type": "string"}, "before": {"type": "string", "maxLength": 2},
                "after": {"type": "string", "maxLength": 4}},
                "x-kubernetes-validations": [{"rule": "self.str.replace(self.before, self.after) == 'does not matter'"}]}),
                629154,
            ),
        ];
        for (name, schema, expected) in cases {
            assert_eq!(rule_cost(schema), expected, "{name}");
        }
    }

    #[test]
    fn over_budget_messages_read_like_upstreams() {
        assert_eq!(
            exceeds_message(
                "estimated rule cost",
                1_000_000_000_000,
                PER_EXPRESSION_LIMIT
            ),
            "estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
        );
        assert!(
            exceeds_message("c", 12_000_000, PER_EXPRESSION_LIMIT).contains("factor of 1.200000x")
        );
        assert!(exceeds_message("c", 25_000_000, PER_EXPRESSION_LIMIT).contains("factor of 2.5x"));
    }
}
