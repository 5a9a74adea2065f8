//! Unknown-field detection against a kind's schema, for `fieldValidation`.
//!
//! Paths are reported as upstream's strict decoder reports them: dotted field
//! names, `[i]` for list elements, map keys as `.key`
//! (`spec.ports[0].bogus`, `metadata.labelz`).

use foldhash::HashMap;
use serde_json::{Map, Value};

use crate::Gvk;
use crate::builtin::builtin;
use crate::convert::ref_name;

/// How deep `$ref`/`allOf` chains are followed at one value before giving up
/// (treating the schema as accepting anything).
const MAX_REF_DEPTH: usize = 32;

/// The name → schema map of `doc`: a whole v3 document (`components.schemas`), a
/// v2 document (`definitions`), a `components` object (`schemas`), or the map itself.
fn schemas_of(doc: &Value) -> Option<&Map<String, Value>> {
    doc.get("components")
        .and_then(|c| c.get("schemas"))
        .or_else(|| doc.get("definitions"))
        .or_else(|| doc.get("schemas"))
        .unwrap_or(doc)
        .as_object()
}

fn has_gvk(schema: &Value, gvk: &Gvk) -> bool {
    schema
        .get("x-kubernetes-group-version-kind")
        .and_then(Value::as_array)
        .is_some_and(|gvks| gvks.iter().any(|g| gvk.matches(g)))
}

fn find_in<'a>(schemas: &'a Map<String, Value>, gvk: &Gvk) -> Option<(&'a str, &'a Value)> {
    schemas
        .iter()
        .find(|(_, s)| has_gvk(s, gvk))
        .map(|(name, s)| (name.as_str(), s))
}

/// The name of the component schema whose `x-kubernetes-group-version-kind`
/// names `gvk` (as kubectl explain finds it).
pub fn find_schema<'a>(doc: &'a Value, gvk: &Gvk) -> Option<&'a str> {
    find_in(schemas_of(doc)?, gvk).map(|(name, _)| name)
}

/// The fields of `obj` that the schema of `gvk` in `doc` doesn't have, as dotted
/// paths in document order (`spec.foo`, `metadata.labelz`, `spec.ports[0].bogus`).
/// Maps (`additionalProperties`) accept any key and `x-kubernetes-preserve-unknown-fields`
/// anything; objects without declared properties (RawExtension, FieldsV1) are
/// free-form. Empty when `doc` has no schema for `gvk`.
///
/// `doc` may be a v3 document, a v2 document, a `components` object, or a
/// name → schema map such as [`crate::builtin_components`].
pub fn unknown_fields(doc: &Value, gvk: &Gvk, obj: &Value) -> Vec<String> {
    schemas_of(doc)
        .and_then(|schemas| unknown_fields_in(schemas, gvk, obj))
        .unwrap_or_default()
}

/// [`unknown_fields`] against the built-in schemas; `None` if `gvk` is not a
/// built-in kind (e.g. a custom resource).
pub fn builtin_unknown_fields(gvk: &Gvk, obj: &Value) -> Option<Vec<String>> {
    builtin_unknown_fields_of(&gvk.group, &gvk.version, &gvk.kind, obj)
}

/// [`builtin_unknown_fields`] for a group, version and kind given apart
/// (nothing is allocated to look the kind up).
pub fn builtin_unknown_fields_of(
    group: &str,
    version: &str,
    kind: &str,
    obj: &Value,
) -> Option<Vec<String>> {
    let root = graph::root(group, version, kind)?;
    let mut out = Vec::new();
    graph::walk(root, obj, None, &mut out);
    Some(out)
}

/// A node of a built-in kind's schema, to walk a body alongside it in the
/// body's own order (upstream's strict decoder names fields as it meets
/// them). Known, free and unknown members as [`builtin_unknown_fields`]
/// tells them.
#[derive(Clone, Copy)]
pub struct SchemaNode(&'static graph::Node);

/// What a built-in kind's schema says about one member of an object.
pub enum Member {
    /// Declared, or taken by the object's `additionalProperties`.
    Known(SchemaNode),
    /// Taken unchecked, with anything below it.
    Free,
    Unknown,
}

/// The root of `gvk`'s schema; `None` if `gvk` is not a built-in kind.
pub fn builtin_schema_node(gvk: &Gvk) -> Option<SchemaNode> {
    graph::root(&gvk.group, &gvk.version, &gvk.kind).map(SchemaNode)
}

impl SchemaNode {
    /// Whether an object here takes any member unchecked (upstream decodes
    /// such values whole, as raw JSON: nothing below is looked at).
    pub fn is_free(&self) -> bool {
        self.0.free
    }

    pub fn member(&self, key: &str) -> Member {
        match self.0.member(key) {
            Some(child) => Member::Known(SchemaNode(child.node())),
            None if self.0.implies(key) => Member::Free,
            None => Member::Unknown,
        }
    }

    /// The schema of a list's items; `None`: anything goes.
    pub fn items(&self) -> Option<SchemaNode> {
        self.0.items.as_ref().map(|items| SchemaNode(items.node()))
    }
}

fn unknown_fields_in(schemas: &Map<String, Value>, gvk: &Gvk, obj: &Value) -> Option<Vec<String>> {
    let (_, schema) = find_in(schemas, gvk)?;
    let shape_of = |node| {
        let mut sh = Shape::default();
        shape(schemas, node, 0, &mut sh);
        sh
    };
    let mut out = Vec::new();
    walk(&shape_of, schema, obj, &mut Vec::new(), &mut out);
    Some(out)
}

/// The built-in schemas as a graph of worked-out nodes: that document never
/// changes, so each node's shape (its `$ref`s and `allOf`s followed, its
/// members merged and sorted) is worked out once, and each child is found
/// once and then kept in its parent. A write's check looks its kind up
/// without allocating and walks the body from the root, a binary search per
/// member. It finds what [`unknown_fields`] finds on [`builtin()`]'s
/// components (tested below).
mod graph {
    use std::sync::{LazyLock, Mutex, OnceLock, PoisonError};

    use foldhash::HashMap;
    use serde_json::Value;

    use super::{Shape, Step, builtin_schema_names, render, shape};
    use crate::builtin::builtin;

    /// A built-in schema node's shape, with its children resolved on first use.
    pub(super) struct Node {
        /// Declared members (the first declaration of each name), by
        /// [`by_length`].
        members: Box<[(&'static str, Child)]>,
        additional: Option<Child>,
        pub(super) items: Option<Child>,
        /// An object here takes any member unchecked.
        pub(super) free: bool,
        /// `x-kubernetes-embedded-resource`: apiVersion, kind and metadata are implied.
        embedded: bool,
    }

    /// A schema below a node, and its node once looked up.
    pub(super) struct Child {
        schema: &'static Value,
        node: OnceLock<&'static Node>,
    }

    impl Child {
        fn new(schema: &'static Value) -> Self {
            Child {
                schema,
                node: OnceLock::new(),
            }
        }

        pub(super) fn node(&self) -> &'static Node {
            self.node.get_or_init(|| node_of(self.schema))
        }
    }

    impl Node {
        fn of(sh: &Shape<'static>) -> Node {
            let mut members: Vec<(&'static str, Child)> = Vec::new();
            for props in &sh.properties {
                for (key, schema) in props.iter() {
                    if !members.iter().any(|(k, _)| *k == key.as_str()) {
                        members.push((key.as_str(), Child::new(schema)));
                    }
                }
            }
            members.sort_unstable_by(|a, b| by_length(a.0, b.0));
            Node {
                members: members.into_boxed_slice(),
                additional: sh.additional.map(Child::new),
                items: sh.items.map(Child::new),
                free: sh.open || (sh.properties.is_empty() && sh.additional.is_none()),
                embedded: sh.embedded,
            }
        }

        /// The schema of member `key`: declared, or the object's `additionalProperties`.
        pub(super) fn member(&self, key: &str) -> Option<&Child> {
            match self.members.binary_search_by(|(k, _)| by_length(k, key)) {
                Ok(i) => Some(&self.members[i].1),
                Err(_) => self.additional.as_ref(),
            }
        }

        /// Whether an undeclared member `key` is taken unchecked.
        pub(super) fn implies(&self, key: &str) -> bool {
            self.free || (self.embedded && matches!(key, "apiVersion" | "kind" | "metadata"))
        }
    }

    /// Names by length, then bytes: most comparisons of a search are
    /// decided by the lengths, without comparing bytes.
    fn by_length(a: &str, b: &str) -> std::cmp::Ordering {
        a.len().cmp(&b.len()).then_with(|| a.cmp(b))
    }

    /// The node of a schema of the built-in document, made once per schema
    /// (nodes live as long as the document: there is one per schema node).
    fn node_of(schema: &'static Value) -> &'static Node {
        type Made = HashMap<usize, &'static Node>;
        static MADE: LazyLock<Mutex<Made>> = LazyLock::new(Default::default);
        let key = std::ptr::from_ref(schema).addr();
        let mut made = MADE.lock().unwrap_or_else(PoisonError::into_inner);
        made.entry(key).or_insert_with(|| {
            let mut sh = Shape::default();
            shape(&builtin().components, schema, 0, &mut sh);
            Box::leak(Box::new(Node::of(&sh)))
        })
    }

    /// A built-in kind's root.
    struct Root {
        group: &'static str,
        version: &'static str,
        child: Child,
    }

    /// The root of a built-in kind's schema; `None` if it is not built in.
    pub(super) fn root(group: &str, version: &str, kind: &str) -> Option<&'static Node> {
        static ROOTS: LazyLock<HashMap<&'static str, Vec<Root>>> = LazyLock::new(|| {
            let mut roots: HashMap<&'static str, Vec<Root>> = HashMap::default();
            for (gvk, name) in builtin_schema_names() {
                if let Some(schema) = builtin().components.get(*name) {
                    roots.entry(gvk.kind.as_str()).or_default().push(Root {
                        group: &gvk.group,
                        version: &gvk.version,
                        child: Child::new(schema),
                    });
                }
            }
            roots
        });
        let root = ROOTS
            .get(kind)?
            .iter()
            .find(|r| r.version == version && r.group == group)?;
        Some(root.child.node())
    }

    /// The path to a value, on the stack: rendered only for an unknown field.
    pub(super) struct Link<'a> {
        parent: Option<&'a Link<'a>>,
        step: Step<'a>,
    }

    fn rendered(link: &Link<'_>) -> String {
        let mut steps = Vec::new();
        let mut at = Some(link);
        while let Some(l) = at {
            steps.push(match l.step {
                Step::Field(key) => Step::Field(key),
                Step::Item(i) => Step::Item(i),
            });
            at = l.parent;
        }
        steps.reverse();
        render(&steps)
    }

    /// [`super::walk`] over built-in nodes.
    pub(super) fn walk(
        node: &'static Node,
        value: &Value,
        path: Option<&Link<'_>>,
        out: &mut Vec<String>,
    ) {
        match value {
            Value::Object(obj) => {
                for (key, v) in obj {
                    let link = Link {
                        parent: path,
                        step: Step::Field(key),
                    };
                    match node.member(key) {
                        // Scalars have no fields of their own to check.
                        Some(child) if v.is_object() || v.is_array() => {
                            walk(child.node(), v, Some(&link), out)
                        }
                        Some(_) => {}
                        None if node.implies(key) => {}
                        None => out.push(rendered(&link)),
                    }
                }
            }
            Value::Array(list) => {
                if let Some(items) = &node.items {
                    let items = items.node();
                    for (i, v) in list.iter().enumerate() {
                        if v.is_object() || v.is_array() {
                            let link = Link {
                                parent: path,
                                step: Step::Item(i),
                            };
                            walk(items, v, Some(&link), out);
                        }
                    }
                }
            }
            _ => {}
        }
    }
}

/// Built-in kind → its component schema's name, indexed once: every write
/// looks its kind up here instead of scanning every schema.
pub(crate) fn builtin_schema_names() -> &'static HashMap<Gvk, &'static str> {
    static INDEX: std::sync::OnceLock<HashMap<Gvk, &'static str>> = std::sync::OnceLock::new();
    INDEX.get_or_init(|| {
        let mut index = HashMap::default();
        for (name, schema) in &builtin().components {
            let gvks = schema
                .get("x-kubernetes-group-version-kind")
                .and_then(Value::as_array);
            for g in gvks.into_iter().flatten() {
                let field = |k: &str| g.get(k).and_then(Value::as_str).unwrap_or("");
                index
                    .entry(Gvk::new(field("group"), field("version"), field("kind")))
                    .or_insert(name.as_str());
            }
        }
        index
    })
}

/// The error message upstream's strict decoding gives (`fieldValidation=Strict`):
/// `strict decoding error: unknown field "spec.foo", unknown field "spec.bar"`.
/// Upstream wraps it as `<Kind> in version "<version>" cannot be handled as a
/// <Kind>: <this>` in a 400 BadRequest Status.
pub fn strict_decoding_error(fields: &[String]) -> String {
    let list: Vec<String> = fields
        .iter()
        .map(|f| format!("unknown field \"{f}\""))
        .collect();
    format!("strict decoding error: {}", list.join(", "))
}

/// The `Warning` header texts upstream sends for `fieldValidation=Warn` (one per
/// field: `unknown field "spec.foo"`).
pub fn unknown_field_warnings(fields: &[String]) -> Vec<String> {
    fields
        .iter()
        .map(|f| format!("unknown field \"{f}\""))
        .collect()
}

/// What a schema (with its `$ref`s and `allOf`s followed) says about a value.
#[derive(Default)]
struct Shape<'a> {
    properties: Vec<&'a Map<String, Value>>,
    additional: Option<&'a Value>,
    items: Option<&'a Value>,
    /// Accepts unknown fields.
    open: bool,
    /// `x-kubernetes-embedded-resource`: apiVersion, kind and metadata are implied.
    embedded: bool,
}

fn shape<'a>(
    schemas: &'a Map<String, Value>,
    schema: &'a Value,
    depth: usize,
    out: &mut Shape<'a>,
) {
    let Some(m) = schema.as_object() else {
        // `true` (or anything unexpected): no constraints.
        out.open = true;
        return;
    };
    if depth > MAX_REF_DEPTH {
        out.open = true;
        return;
    }
    if let Some(r) = m.get("$ref").and_then(Value::as_str) {
        match schemas.get(ref_name(r)) {
            Some(target) => shape(schemas, target, depth + 1, out),
            None => out.open = true,
        }
    }
    let flag = |k: &str| m.get(k).and_then(Value::as_bool).unwrap_or(false);
    if flag("x-kubernetes-preserve-unknown-fields") || flag("x-kubernetes-int-or-string") {
        out.open = true;
    }
    if flag("x-kubernetes-embedded-resource") {
        out.embedded = true;
    }
    if let Some(Value::Object(props)) = m.get("properties") {
        out.properties.push(props);
    }
    match m.get("additionalProperties") {
        None | Some(Value::Bool(false)) => {}
        Some(Value::Bool(true)) => out.open = true,
        Some(additional) => {
            out.additional.get_or_insert(additional);
        }
    }
    if let Some(items) = m.get("items") {
        out.items.get_or_insert(items);
    }
    if let Some(Value::Array(all)) = m.get("allOf") {
        for branch in all {
            shape(schemas, branch, depth + 1, out);
        }
    }
    // Which branch applies can't be told from the field names alone.
    if m.contains_key("anyOf") || m.contains_key("oneOf") {
        out.open = true;
    }
}

/// One step of the path to a value: a field, or a list item.
enum Step<'a> {
    Field(&'a str),
    Item(usize),
}

/// A path as upstream names unknown fields: `spec.template.spec.containers[0].foo`.
/// Rendered only for unknown fields, not for every field walked.
fn render(path: &[Step<'_>]) -> String {
    let mut out = String::new();
    for step in path {
        match step {
            Step::Field(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Step::Item(i) => {
                use std::fmt::Write;
                let _ = write!(out, "[{i}]");
            }
        }
    }
    out
}

fn walk<'s, 'v>(
    shape_of: &impl Fn(&'s Value) -> Shape<'s>,
    schema: &'s Value,
    value: &'v Value,
    path: &mut Vec<Step<'v>>,
    out: &mut Vec<String>,
) {
    match value {
        Value::Object(obj) => {
            let sh = shape_of(schema);
            let free_form = sh.open || (sh.properties.is_empty() && sh.additional.is_none());
            for (key, v) in obj {
                let known = sh
                    .properties
                    .iter()
                    .find_map(|p| p.get(key))
                    .or(sh.additional);
                let implied = free_form
                    || (sh.embedded && matches!(key.as_str(), "apiVersion" | "kind" | "metadata"));
                path.push(Step::Field(key));
                match known {
                    // Scalars have no fields of their own to check.
                    Some(child) if v.is_object() || v.is_array() => {
                        walk(shape_of, child, v, path, out)
                    }
                    Some(_) => {}
                    None if implied => {}
                    None => out.push(render(path)),
                }
                path.pop();
            }
        }
        Value::Array(list) => {
            if let Some(items) = shape_of(schema).items {
                for (i, v) in list.iter().enumerate() {
                    if v.is_object() || v.is_array() {
                        path.push(Step::Item(i));
                        walk(shape_of, items, v, path, out);
                        path.pop();
                    }
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sample bodies for a schema: a few declared members of each object
    /// (some of them a value of another shape than declared), map entries,
    /// list items, and unknown members at every depth.
    struct Samples<'a> {
        schemas: &'a Map<String, Value>,
        state: u64,
    }

    impl Samples<'_> {
        fn next(&mut self) -> u64 {
            // xorshift64
            self.state ^= self.state << 13;
            self.state ^= self.state >> 7;
            self.state ^= self.state << 17;
            self.state
        }

        fn value(&mut self, schema: &Value, depth: usize) -> Value {
            let mut sh = Shape::default();
            shape(self.schemas, schema, 0, &mut sh);
            let roll = self.next() % 8;
            if depth == 0 || roll == 0 {
                // A scalar, or an object where the schema may want a scalar.
                return if roll == 0 && depth > 0 {
                    serde_json::json!({"bogusScalarObject": {"deeper": 1}})
                } else {
                    Value::from("x")
                };
            }
            if let Some(items) = sh.items.filter(|_| roll != 1) {
                let n = 1 + (self.next() % 2) as usize;
                return Value::Array((0..n).map(|_| self.value(items, depth - 1)).collect());
            }
            let mut obj = Map::new();
            let keys: Vec<(&String, &Value)> =
                sh.properties.iter().flat_map(|p| p.iter()).collect();
            for _ in 0..3.min(keys.len()) {
                let (key, child) = keys[(self.next() % keys.len() as u64) as usize];
                let v = self.value(child, depth - 1);
                obj.insert(key.clone(), v);
            }
            if let Some(additional) = sh.additional {
                let v = self.value(additional, depth - 1);
                obj.insert(format!("key{depth}"), v);
            }
            if self.next().is_multiple_of(2) {
                obj.insert(format!("bogus{depth}"), Value::from(1));
            }
            if self.next().is_multiple_of(3) {
                obj.insert(
                    "bogusObject".into(),
                    serde_json::json!({"inner": [{"x": 1}]}),
                );
            }
            if self.next().is_multiple_of(4) {
                for key in ["apiVersion", "kind", "metadata"] {
                    obj.insert(key.into(), serde_json::json!({"bogusEmbedded": 1}));
                }
            }
            Value::Object(obj)
        }
    }

    /// The unknown fields as a walk over [`SchemaNode`]s finds them.
    fn node_walk(node: SchemaNode, value: &Value, path: &str, out: &mut Vec<String>) {
        match value {
            Value::Object(obj) => {
                for (key, v) in obj {
                    let at = if path.is_empty() {
                        key.clone()
                    } else {
                        format!("{path}.{key}")
                    };
                    match node.member(key) {
                        Member::Known(child) => node_walk(child, v, &at, out),
                        Member::Free => {}
                        Member::Unknown => out.push(at),
                    }
                }
            }
            Value::Array(list) => {
                if let Some(items) = node.items() {
                    for (i, v) in list.iter().enumerate() {
                        node_walk(items, v, &format!("{path}[{i}]"), out);
                    }
                }
            }
            _ => {}
        }
    }

    #[test]
    fn builtin_lookup_is_the_plain_walk() {
        let schemas = &builtin().components;
        let mut gvks: Vec<(&Gvk, &&str)> = builtin_schema_names().iter().collect();
        gvks.sort();
        assert!(gvks.len() > 100, "{}", gvks.len());
        let mut found = 0;
        let mut deep = 0;
        for (gvk, name) in gvks {
            let mut samples = Samples {
                schemas,
                state: 0x9E37_79B9_7F4A_7C15 ^ (name.len() as u64) << 7,
            };
            for _ in 0..6 {
                let mut obj = samples.value(&schemas[*name], 6);
                if let Value::Object(m) = &mut obj {
                    m.insert("apiVersion".into(), Value::from("v1"));
                    m.insert("kind".into(), Value::from(gvk.kind.as_str()));
                }
                let plain = unknown_fields_in(schemas, gvk, &obj).expect("found");
                let fast = builtin_unknown_fields(gvk, &obj).expect("built-in");
                assert_eq!(fast, plain, "{gvk:?} {obj}");
                let fast_of = builtin_unknown_fields_of(&gvk.group, &gvk.version, &gvk.kind, &obj);
                assert_eq!(fast_of.as_ref(), Some(&plain));
                let mut walked = Vec::new();
                let root = builtin_schema_node(gvk).expect("built-in");
                node_walk(root, &obj, "", &mut walked);
                assert_eq!(walked, plain, "{gvk:?} {obj}");
                found += plain.len();
                deep += plain
                    .iter()
                    .filter(|f| f.matches(['.', '[']).count() >= 5)
                    .count();
            }
        }
        assert!(found > 1000, "{found}");
        assert!(deep > 100, "{deep} found five or more steps down");
        let custom = Gvk::new("example.com", "v1", "Widget");
        assert!(builtin_unknown_fields(&custom, &serde_json::json!({"a": 1})).is_none());
        assert!(builtin_unknown_fields_of("", "v2", "Pod", &serde_json::json!({})).is_none());
    }
}
