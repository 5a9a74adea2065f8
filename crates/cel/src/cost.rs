//! Static cost estimation (cel-go's cost model with kube-apiserver's size
//! estimates): the most a checked rule can cost on any object its schema
//! admits. Sizes come from `maxLength`, `maxItems`, `maxProperties` and
//! enums, else from what fits in a 3 MiB request; comprehensions cost their
//! range's size times their body, string functions a tenth of a unit per
//! byte, regular expressions a quarter per pattern byte, the lists
//! extension's functions a list allocation (the sorts and `distinct` a
//! quadratic one). Only the maximum is tracked: it is what upstream
//! compares with its limits (kube-apiserver 1.37's estimates, cel-go
//! v0.29's).

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
/// What creating a list costs (`common.ListCreateBaseCost`).
const LIST_CREATE: u64 = 10;
const REGEX_PATTERN: f64 = 0.25;
/// The longest pattern of a named format (`MaxNameFormatRegexSize`).
const MAX_NAME_FORMAT_PATTERN: u64 = 128;

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
            // Bounded by `maxLength` (in bytes: up to 4 a character) since
            // 1.37.
            let max = v
                .max_length
                .map_or(MAX_REQUEST_BYTES - 2, |n| non_negative(n).saturating_mul(4));
            return Limits {
                max_elements: Some(max),
                min_serialized: 1,
                ..Limits::default()
            };
        }
        match s.type_.as_str() {
            "array" => {
                let element = s
                    .items
                    .as_deref()
                    .map(|i| Limits::of_node(i, i.extensions.embedded_resource));
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
                    let element = Limits::of_node(values, values.extensions.embedded_resource);
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
                    let limits = Limits::of_node(p, p.extensions.embedded_resource);
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

    /// The limits of values of `s`; at a resource root (of the custom
    /// resource, or an embedded one) with upstream's `kind`, `apiVersion`
    /// and `metadata`, whose `name` is at most 253 characters long and
    /// `generateName` 252 (1.37's bounds; less if the schema says so).
    pub fn of_node(s: &Structural, resource_root: bool) -> Limits {
        let mut limits = Limits::of_schema(s);
        if !resource_root || declares_object_meta(s) {
            return limits;
        }
        let string = |max: u64| Limits {
            max_elements: Some(max),
            min_serialized: 2,
            ..Limits::default()
        };
        // `maxLength` counts characters, of up to 4 bytes.
        let name = |field: &str, max: i64| {
            let declared = declared(s, "metadata")
                .and_then(|m| declared(m, field))
                .and_then(|f| f.validation.max_length);
            string(non_negative(declared.map_or(max, |d| d.min(max))) * 4)
        };
        limits
            .fields
            .insert("kind".into(), string(MAX_REQUEST_BYTES - 2));
        limits
            .fields
            .insert("apiVersion".into(), string(MAX_REQUEST_BYTES - 2));
        let metadata = Limits {
            min_serialized: 2,
            fields: BTreeMap::from([
                ("name".to_string(), name("name", NAME_MAX_LENGTH)),
                (
                    "generateName".to_string(),
                    name("generateName", NAME_MAX_LENGTH - 1),
                ),
            ]),
            ..Limits::default()
        };
        limits.fields.insert("metadata".into(), metadata);
        limits
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

/// The longest `metadata.name` (a DNS-1123 subdomain).
const NAME_MAX_LENGTH: i64 = 253;

/// Whether the schema declares string `kind` and `apiVersion` and an object
/// `metadata` with string `name` and `generateName`: upstream then takes
/// them as the schema has them.
fn declares_object_meta(s: &Structural) -> bool {
    let is = |p: Option<&Structural>, t: &str| p.is_some_and(|p| p.type_ == t);
    let metadata = declared(s, "metadata");
    is(declared(s, "kind"), "string")
        && is(declared(s, "apiVersion"), "string")
        && is(metadata, "object")
        && is(metadata.and_then(|m| declared(m, "name")), "string")
        && is(metadata.and_then(|m| declared(m, "generateName")), "string")
}

/// The property `name` of `s`, if declared.
fn declared<'s>(s: &'s Structural, name: &str) -> Option<&'s Structural> {
    s.properties.get(name).map(|p| &**p)
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
        entries: Vec::new(),
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
    /// The ranges of the two-variable comprehensions being estimated
    /// (innermost last), and whether each is a map.
    entries: Vec<(Node<'a>, bool)>,
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
        self.types.get(&id).is_some_and(is_scalar)
    }

    /// The elements of the list (keys of the map) `e` as upstream's
    /// `listElementNode` sees them: sized by the schema (a map's by its
    /// values), unknown for a computed list; `None` for other types.
    fn list_element(&self, e: Option<&IdedExpr>, node: &Node<'a>) -> Option<Node<'a>> {
        match e.and_then(|e| self.types.get(&e.id)) {
            Some(Type::List(_) | Type::Map(..)) => Some(match node.limits {
                Some(_) => node.element(self.root),
                None => Node::default(),
            }),
            _ => None,
        }
    }

    /// What comparing one element of the list (key of the map) `e` costs:
    /// 1, and a traversal of the element if a string or bytes; `None` if `e`
    /// is neither.
    fn element_cost(&self, e: Option<&IdedExpr>, node: &Node<'a>) -> Option<u64> {
        let element = self.list_element(e, node)?;
        let item = match e.and_then(|e| self.types.get(&e.id)) {
            Some(Type::List(item) | Type::Map(item, _)) => item,
            _ => return None,
        };
        Some(match **item {
            Type::String | Type::Bytes => {
                1u64.saturating_add(factor(element.max(), STRING_TRAVERSAL))
            }
            _ => 1,
        })
    }

    /// Whether `e` is checked as a list of strings or bytes.
    fn holds_strings(&self, e: Option<&IdedExpr>) -> bool {
        matches!(
            e.and_then(|e| self.types.get(&e.id)),
            Some(Type::List(item)) if matches!(**item, Type::String | Type::Bytes)
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
        if c.accu_var == OPT_TARGET && is_bind(c) {
            return self.evaluated_where_used(c);
        }
        if is_bind(c) && self.entry_part(&c.accu_init).is_some() {
            // A two-variable comprehension's variable: cel-go binds it for
            // free.
            let (_, init) = self.cost(&c.accu_init);
            let depth = self.scopes.len();
            self.scopes.push((c.accu_var.clone(), init));
            let result = self.cost(&c.result);
            self.scopes.truncate(depth);
            return result;
        }
        if let Expr::Call(entries) = &c.iter_range.expr
            && entries.func_name == crate::library::macros::ENTRIES
            && let [range] = entries.args.as_slice()
        {
            let is_map = matches!(self.types.get(&range.id), Some(Type::Map(..)));
            let (range_cost, node) = self.cost(range);
            self.entries.push((node, is_map));
            let (cost, _) = self.iterate(c, range_cost, node);
            self.entries.pop();
            let result = match c.accu_init.expr {
                Expr::List(_) | Expr::Map(_) => Node::sized(node.max()),
                _ => Node::default(),
            };
            return (cost, result);
        }
        let (range_cost, range) = self.cost(&c.iter_range);
        self.iterate(c, range_cost, range)
    }

    /// Which variable of the innermost two-variable comprehension `e`
    /// reads (`@kubext_it[0]`, `@kubext_it[1]`), if it is one.
    fn entry_part(&self, e: &IdedExpr) -> Option<(usize, Node<'a>, bool)> {
        match &e.expr {
            Expr::Call(call) => self.entry_part_of(call),
            _ => None,
        }
    }

    fn entry_part_of(&self, call: &CallExpr) -> Option<(usize, Node<'a>, bool)> {
        let [pair, index] = call.args.as_slice() else {
            return None;
        };
        let is_item = matches!(&pair.expr, Expr::Ident(n) if n == crate::library::macros::ITEM);
        let part = match &index.expr {
            Expr::Literal(LiteralValue::Int(i)) => usize::try_from(*i.inner()).ok()?,
            _ => return None,
        };
        if call.func_name != "_[_]" || !is_item || part > 1 {
            return None;
        }
        let (range, is_map) = *self.entries.last()?;
        Some((part, range, is_map))
    }

    /// A comprehension over `range` (already estimated at `range_cost`).
    fn iterate(
        &mut self,
        c: &ComprehensionExpr,
        range_cost: u64,
        range: Node<'a>,
    ) -> (u64, Node<'a>) {
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
        // A built list or map has the range's size (and nothing else of
        // the schema's).
        let node = match c.accu_init.expr {
            Expr::List(_) | Expr::Map(_) if !is_bind(c) => Node::sized(range.max()),
            _ => result,
        };
        (cost, node)
    }

    /// The `cel` crate binds the target of `optMap` and `optFlatMap` to
    /// evaluate it once; cel-go's expansion repeats it where it is used
    /// (twice), and so does its estimate.
    fn evaluated_where_used(&mut self, c: &ComprehensionExpr) -> (u64, Node<'a>) {
        let (init_cost, init) = self.cost(&c.accu_init);
        let depth = self.scopes.len();
        self.scopes.push((c.accu_var.clone(), init));
        let (result_cost, result) = self.cost(&c.result);
        self.scopes.truncate(depth);
        let uses = references(&c.result, OPT_TARGET);
        let cost = result_cost
            .saturating_sub(uses)
            .saturating_add(uses.saturating_mul(init_cost));
        (cost, result)
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
            // Equality, and the order of strings and bytes, traverse the
            // smaller operand; other orders cost 1.
            "_<_" | "_<=_" | "_>_" | "_>=_"
                if !call.args.iter().any(|a| {
                    matches!(
                        self.types.get(&a.id),
                        Some(Type::String | Type::Bytes | Type::Dyn) | None
                    )
                }) =>
            {
                (1, Node::default())
            }
            "_==_" | "_!=_" | "_<_" | "_<=_" | "_>_" | "_>=_" => {
                let smallest = size(args.first()).min(size(args.get(1)));
                (factor(smallest, STRING_TRAVERSAL), Node::default())
            }
            "_[_]" if self.entry_part_of(call).is_some() => {
                // A two-variable comprehension's key (index) or value.
                let node = match self.entry_part_of(call) {
                    Some((0, _, false)) => Node::sized(1),
                    Some((0, _, true)) => Node::sized(0),
                    Some((_, range, _)) => range.element(self.root),
                    None => Node::default(),
                };
                return (1, node);
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
            "isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf" | "includes"
                if target.is_some() =>
            {
                // A comparison per element (of a list, or key of a map); a
                // string's traversal (`includes`: a comparison per byte).
                let t = target.unwrap_or_default();
                let own = match self.element_cost(call.target.as_deref(), &t) {
                    Some(per) => t.max().saturating_mul(per),
                    None if name == "includes" => t.max(),
                    None => factor(t.max(), STRING_TRAVERSAL),
                };
                (own, Node::default())
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
                let items = match self.list_element(call.target.as_deref(), &t) {
                    Some(element) => t.max().saturating_mul(element.max()),
                    None => 0,
                };
                let separators = size(args.first()).saturating_mul(t.max().saturating_sub(1));
                let total = match args.first() {
                    Some(_) => items.saturating_add(separators),
                    None => items,
                };
                (factor(total, STRING_TRAVERSAL), Node::sized(total))
            }
            "sets.contains" | "sets.equivalent" | "sets.intersects" => {
                let product = size(args.first()).saturating_mul(size(args.get(1)));
                (product, Node::default())
            }
            // A match of the format's pattern (at most 128 bytes).
            "validate" => (
                factor(
                    factor(size(args.first()), STRING_TRAVERSAL),
                    MAX_NAME_FORMAT_PATTERN as f64 * REGEX_PATTERN,
                ),
                Node::default(),
            ),
            // cel-go's lists extension: allocating a list of the result's
            // size, the sorts and `distinct` quadratic in the input's.
            "slice" if target.is_some() && call.args.len() == 2 => {
                let n = target.unwrap_or_default().max();
                let start = literal_uint(call.args.first(), 0);
                let end = literal_uint(call.args.get(1), n);
                let sliced = end.wrapping_sub(start);
                (list_call(sliced, 1.0), Node::sized(sliced))
            }
            "lists.range" => {
                let n = literal_uint(call.args.first(), u64::MAX);
                (list_call(n, 1.0), Node::sized(n))
            }
            "reverse" if target.is_some() => {
                let n = target.unwrap_or_default().max();
                (list_call(n, 1.0), Node::sized(n))
            }
            "flatten" if target.is_some() => {
                let n = target.unwrap_or_default().max();
                let depth = match call.args.first() {
                    None => 1,
                    Some(d) => literal_uint(Some(d), u64::MAX),
                };
                (list_call(n, depth as f64), Node::sized(n))
            }
            "distinct" if target.is_some() => {
                let n = target.unwrap_or_default().max();
                let squared = n.saturating_mul(n);
                (list_call(squared, 2.0), Node::sized(squared))
            }
            "sort" | "@sortByAssociatedKeys" if target.is_some() => {
                // `sortBy` costs its keys' sort.
                let (keys, keys_expr) = if name == "sort" {
                    (target.unwrap_or_default(), call.target.as_deref())
                } else {
                    (args.first().copied().unwrap_or_default(), call.args.first())
                };
                let n = keys.max();
                let squared = n.saturating_mul(n);
                let per = if self.holds_strings(keys_expr) {
                    2.0 + STRING_TRAVERSAL
                } else {
                    2.0
                };
                (list_call(squared, per), Node::sized(squared))
            }
            "size" => (1, Node::sized(1)),
            // The pairs of a two-variable comprehension's range.
            "@kubext_entries" => (0, Node::sized(size(args.first()))),
            _ => (1, Node::default()),
        };
        (own.saturating_add(args_cost), result)
    }
}

/// Whether values of `t` have a fixed size (1): an optional of one too.
fn is_scalar(t: &Type) -> bool {
    match t {
        Type::Bool | Type::Int | Type::Uint | Type::Double | Type::Duration | Type::Timestamp => {
            true
        }
        Type::Optional(inner) => is_scalar(inner),
        _ => false,
    }
}

/// The variable the `cel` crate binds a non-identifier target of `optMap`
/// and `optFlatMap` to.
const OPT_TARGET: &str = "@target";

/// Whether `c` binds a variable (`cel.bind`'s shape: no iteration).
fn is_bind(c: &ComprehensionExpr) -> bool {
    matches!(&c.iter_range.expr, Expr::List(l) if l.elements.is_empty())
        && matches!(
            &c.loop_cond.expr,
            Expr::Literal(LiteralValue::Boolean(b)) if !*b.inner()
        )
}

/// How many times `e` refers to the variable `name` (not counting where an
/// inner comprehension binds its own).
fn references(e: &IdedExpr, name: &str) -> u64 {
    let all = |es: &mut dyn Iterator<Item = &IdedExpr>| es.map(|e| references(e, name)).sum();
    match &e.expr {
        Expr::Ident(n) => u64::from(n == name),
        Expr::Select(s) => references(&s.operand, name),
        Expr::Call(c) => all(&mut c.target.as_deref().into_iter().chain(&c.args)),
        Expr::List(l) => all(&mut l.elements.iter()),
        Expr::Map(m) => all(&mut m.entries.iter().flat_map(|entry| match &entry.expr {
            EntryExpr::MapEntry(m) => vec![&m.key, &m.value],
            EntryExpr::StructField(f) => vec![&f.value],
        })),
        Expr::Struct(st) => all(
            &mut st.entries.iter().filter_map(|entry| match &entry.expr {
                EntryExpr::StructField(f) => Some(&f.value),
                EntryExpr::MapEntry(_) => None,
            }),
        ),
        Expr::Comprehension(c) => {
            let outer = references(&c.iter_range, name) + references(&c.accu_init, name);
            let rebinds =
                c.accu_var == name || c.iter_var == name || c.iter_var2.as_deref() == Some(name);
            if rebinds {
                outer
            } else {
                outer
                    + references(&c.loop_cond, name)
                    + references(&c.loop_step, name)
                    + references(&c.result, name)
            }
        }
        Expr::Literal(_) | Expr::Unspecified => 0,
    }
}

/// What a list function of cel-go's lists extension costs: a call and a
/// list allocation, and `per` for each of `n` elements.
fn list_call(n: u64, per: f64) -> u64 {
    factor(n, per).saturating_add(1 + LIST_CREATE)
}

/// An int literal argument as cel-go's list estimators read it (a negative
/// one as 0), or `default` for anything else.
fn literal_uint(e: Option<&IdedExpr>, default: u64) -> u64 {
    match e.map(|e| &e.expr) {
        Some(Expr::Literal(LiteralValue::Int(i))) => u64::try_from(*i.inner()).unwrap_or(0),
        _ => default,
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

    /// The estimated cost of each of `rules` on the root of `schema` (a
    /// resource root), with the base environment's macros.
    fn root_rule_costs(schema: &Value, rules: &[&str]) -> Vec<u64> {
        let s = Structural::compile(schema).unwrap();
        let t = Type::of_schema(&s, true).unwrap();
        let limits = Limits::of_node(&s, true);
        rules
            .iter()
            .map(|rule| {
                let program = crate::environment().compile(rule).unwrap();
                let checked = check(
                    program.expression(),
                    program.source_info(),
                    &[("self", t.clone()), ("oldSelf", t.clone())],
                    &Declarations::kubernetes(),
                )
                .unwrap();
                estimate(program.expression(), &checked.types, &limits)
            })
            .collect()
    }

    fn lists_schema() -> Value {
        json!({"type": "object", "properties": {
            "ints": {"type": "array", "maxItems": 10, "items": {"type": "integer"}},
            "strs": {"type": "array", "maxItems": 10,
                "items": {"type": "string", "maxLength": 16}},
            "objs": {"type": "array", "maxItems": 5, "items": {"type": "object",
                "properties": {"name": {"type": "string", "maxLength": 8},
                    "score": {"type": "integer"}}}},
            "nested": {"type": "array", "maxItems": 4,
                "items": {"type": "array", "maxItems": 3, "items": {"type": "integer"}}},
            "s": {"type": "string", "maxLength": 32},
            "n": {"type": "integer"},
            "dbl": {"type": "number"},
            "m": {"type": "object", "maxProperties": 4,
                "additionalProperties": {"type": "string", "maxLength": 8}},
            "ios": {"x-kubernetes-int-or-string": true, "maxLength": 20},
            "iosu": {"x-kubernetes-int-or-string": true},
            "unb": {"type": "array", "items": {"type": "integer"}},
            "ustrs": {"type": "array", "items": {"type": "string"}},
            "tags": {"type": "array", "maxItems": 6, "x-kubernetes-list-type": "set",
                "items": {"type": "string", "maxLength": 4}},
            "dur": {"type": "array", "maxItems": 3,
                "items": {"type": "string", "format": "duration"}},
            "emb": {"type": "object", "x-kubernetes-embedded-resource": true,
                "x-kubernetes-preserve-unknown-fields": true, "properties": {"spec": {
                    "type": "object",
                    "properties": {"x": {"type": "string", "maxLength": 5}}}}},
            "embs": {"type": "array", "maxItems": 3, "items": {"type": "object",
                "x-kubernetes-embedded-resource": true,
                "x-kubernetes-preserve-unknown-fields": true}}}})
    }

    /// kube-apiserver 1.37.2's estimates (its CRD rule compiler,
    /// `MaxCost`) of rules using cel-go's lists extension, Kubernetes'
    /// `includes`, the optional library's list functions, and of what 1.37
    /// bounds anew: int-or-string values by `maxLength`, `metadata.name`
    /// by 253 characters (`generateName` 252), at the root and in embedded
    /// resources.
    #[test]
    fn estimates_match_kube_apiserver_1_37() {
        const MAX: u64 = u64::MAX;
        let cases: &[(&str, u64)] = &[
            ("self.ints.reverse() == self.ints", 26),
            ("self.ints.slice(1, 3) == [2, 3]", 26),
            ("self.ints.slice(0, self.n).size() > 0", 27),
            ("self.ints.slice(self.n, 2).size() > 0", 19),
            ("self.ints.slice(3, 1).size() > 0", MAX),
            ("self.ints.slice(0, 20).size() > 0", 35),
            ("[1, 2, 3].slice(0, 2).size() == 2", 25),
            ("self.nested.flatten() == self.ints", 20),
            ("self.nested.flatten(1) == self.ints", 20),
            ("self.nested.flatten(2).size() > 0", 23),
            ("self.nested.flatten(self.n) == self.ints", MAX),
            ("dyn(self.nested).flatten() == self.ints", 21),
            ("dyn(self.nested).flatten(0).size() > 0", 16),
            ("self.ints.flatten(-1) == self.ints", 16),
            ("self.ints.distinct() == self.ints", 216),
            ("self.strs.distinct() == self.strs", 216),
            ("size(self.ints.distinct()) > 0", 215),
            ("self.ints.sort() == self.ints", 216),
            ("self.strs.sort() == self.strs", 226),
            ("self.dur.sort() == self.dur", 34),
            ("self.tags.sort() == self.tags", 92),
            ("self.ints.sort().sort().sort().size() > 0", 200020237),
            ("self.ints.sortBy(e, -e) == self.ints", 379),
            ("self.objs.sortBy(o, o.name)[0].name == 'a'", 162),
            ("self.objs.sortBy(o, o.score).size() > 0", 158),
            ("self.strs.sortBy(s, s).size() > 0", 378),
            ("self.strs.sortBy(s, s.size()).size() > 0", 378),
            ("self.tags.sortBy(t, t).size() > 0", 192),
            ("[1, 2].sortBy(e, e) == [1, 2]", 89),
            ("self.ints.map(x, x * 2).sortBy(y, -y)[0] > 0", 529),
            (
                "self.strs.sortBy(s, s.size()).map(s, s + 'x').size() > 0",
                1789,
            ),
            ("lists.range(4) == [0, 1, 2, 3]", 26),
            ("lists.range(self.n).size() > 0", MAX),
            ("lists.range(3).map(i, i * i).sort()[0] == 0", 100),
            ("self.unb.reverse().size() > 0", 1572878),
            ("self.unb.distinct().size() > 0", 4947796033553),
            ("self.ustrs.sort().size() > 0", 2308970014328),
            ("self.unb.sortBy(e, e).size() > 0", 4947816480795),
            ("self.ints.sort().all(x, x > 0)", 714),
            (
                "self.ints.distinct().all(x, self.ints.exists(y, y == x))",
                6814,
            ),
            ("self.nested.map(l, l.sort()).flatten().size() > 0", 198),
            ("self.nested.flatten().sort().distinct().size() > 0", 585),
            ("self.m.map(k, k).sort().size() > 0", 112),
            ("self.ints.first().hasValue()", 4),
            ("self.ints.last().orValue(0) > 0", 5),
            ("self.ints.first() == optional.of(3)", 5),
            (
                "optional.unwrap([optional.of(1), optional.none()]) == [1]",
                24,
            ),
            ("[optional.of(1)].unwrapOpt() == [1]", 23),
            (
                "self.ints.map(x, optional.of(x)).unwrapOpt() == self.ints",
                157,
            ),
            ("self.ints.first().optMap(x, x + 1).orValue(0) > 0", 23),
            (
                "self.ints.last().optFlatMap(x, optional.of(x)).hasValue()",
                21,
            ),
            ("self.objs.first().optMap(o, o.name).orValue('') == ''", 22),
            (
                "self.ints.slice(0, 2).sort().reverse().distinct().first().orValue(0) > 0",
                95,
            ),
            ("self.ints.includes(1)", 12),
            ("self.strs.includes('a')", 82),
            ("self.s.includes('a')", 130),
            ("self.m.includes('a')", 22),
            ("self.ios.includes('a')", 82),
            ("self.tags.includes('x')", 20),
            ("self.unb.includes(1)", 1572865),
            ("self.ustrs.includes('a')", 329854432052),
            ("['a', 'b'].includes(self.s)", 3689348814741910542),
            ("['a', 'b'].isSorted()", 3689348814741910540),
            ("self.strs.sort().isSorted()", MAX),
            ("self.strs.isSorted()", 82),
            ("self.ints.sort().isSorted()", 313),
            ("self.strs.indexOf('a') >= 0", 83),
            ("self.s.indexOf('a') >= 0", 16),
            ("self.strs.join(',') == ''", 67),
            ("self.strs.join() == ''", 66),
            ("self.strs.reverse().join(',') == ''", 1844674407370955287),
            (
                "self.objs.map(o, o.name).join(',') == ''",
                1844674407370955347,
            ),
            ("self.objs.map(o, o.score).sum() > 0", 89),
            ("self.objs.filter(o, o.score > 0).size() > 0", 95),
            (
                "self.ints.transformList(i, v, v * 2).sort().size() > 0",
                366,
            ),
            ("self.m.transformMap(k, v, v + 'x').size() > 0", 67),
            ("self.ints.exists(i, v, v > i)", 73),
            ("self.ints.all(x, x < self.n)", 73),
            ("self.dbl < 1.5", 3),
            ("self.s < 'abc'", 3),
            ("semver(self.s).major() == 1", 17),
            ("isQuantity(self.ios)", 10),
            ("isQuantity(self.iosu)", 314575),
            ("format.dns1123Label().validate(self.s).hasValue()", 420),
            ("self.metadata.name.contains('x')", 105),
            ("self.metadata.generateName.contains('x')", 104),
            ("self.metadata.name.matches('^a.*$')", 207),
            ("self.kind.contains('x')", 314575),
            ("self.apiVersion.startsWith('x')", 3),
            ("self.emb.metadata.name.contains('x')", 106),
            ("self.emb.kind.contains('x')", 314576),
            ("self.embs.all(e, e.metadata.name.contains('x'))", 327),
            ("self.emb.spec.x.contains('x')", 6),
        ];
        let rules: Vec<&str> = cases.iter().map(|(r, _)| *r).collect();
        let costs = root_rule_costs(&lists_schema(), &rules);
        for ((rule, expected), cost) in cases.iter().zip(costs) {
            assert_eq!(cost, *expected, "{rule}");
        }
        // A declared shorter `metadata.name` is kept.
        let mut short_names = lists_schema();
        short_names["properties"]["metadata"] = json!({"type": "object",
            "properties": {"name": {"type": "string", "maxLength": 20}}});
        let costs = root_rule_costs(
            &short_names,
            &[
                "self.metadata.name.contains('x')",
                "self.s > self.metadata.name",
                "self.metadata.generateName.contains('x')",
            ],
        );
        assert_eq!(costs, [11, 13, 104]);
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
