//! Unknown-field detection against a kind's schema, for `fieldValidation`.
//!
//! Paths are reported as upstream's strict decoder reports them: dotted field
//! names, `[i]` for list elements, map keys as `.key`
//! (`spec.ports[0].bogus`, `metadata.labelz`).

use foldhash::HashMap;
use std::sync::{Arc, LazyLock, PoisonError, RwLock};

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
    let schema = builtin()
        .components
        .get(*builtin_schema_names().get(gvk)?)?;
    let mut out = Vec::new();
    walk(&builtin_shape, schema, obj, &mut Vec::new(), &mut out);
    Some(out)
}

/// A node of a built-in kind's schema, to walk a body alongside it in the
/// body's own order (upstream's strict decoder names fields as it meets
/// them). Known, free and unknown members as [`builtin_unknown_fields`]
/// tells them.
#[derive(Clone)]
pub struct SchemaNode(Arc<Shape<'static>>);

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
    let schema = builtin()
        .components
        .get(*builtin_schema_names().get(gvk)?)?;
    Some(SchemaNode(builtin_shape(schema)))
}

impl SchemaNode {
    /// Whether an object here takes any member unchecked (upstream decodes
    /// such values whole, as raw JSON: nothing below is looked at).
    pub fn is_free(&self) -> bool {
        self.0.open || (self.0.properties.is_empty() && self.0.additional.is_none())
    }

    pub fn member(&self, key: &str) -> Member {
        let sh = &self.0;
        match sh
            .properties
            .iter()
            .find_map(|p| p.get(key))
            .or(sh.additional)
        {
            Some(child) => Member::Known(SchemaNode(builtin_shape(child))),
            None if self.is_free()
                || (sh.embedded && matches!(key, "apiVersion" | "kind" | "metadata")) =>
            {
                Member::Free
            }
            None => Member::Unknown,
        }
    }

    /// The schema of a list's items; `None`: anything goes.
    pub fn items(&self) -> Option<SchemaNode> {
        self.0.items.map(|items| SchemaNode(builtin_shape(items)))
    }
}

fn unknown_fields_in(schemas: &Map<String, Value>, gvk: &Gvk, obj: &Value) -> Option<Vec<String>> {
    let (_, schema) = find_in(schemas, gvk)?;
    let shape_of = |node| {
        let mut sh = Shape::default();
        shape(schemas, node, 0, &mut sh);
        Arc::new(sh)
    };
    let mut out = Vec::new();
    walk(&shape_of, schema, obj, &mut Vec::new(), &mut out);
    Some(out)
}

/// The shape of a node of the built-in schemas, worked out once per node:
/// that document never changes, so a write's check looks its nodes up instead
/// of following their `$ref`s and `allOf`s again.
fn builtin_shape(node: &'static Value) -> Arc<Shape<'static>> {
    type Known = HashMap<usize, Arc<Shape<'static>>>;
    static SHAPES: LazyLock<RwLock<Known>> = LazyLock::new(Default::default);
    let key = std::ptr::from_ref(node).addr();
    let known = SHAPES
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&key)
        .cloned();
    known.unwrap_or_else(|| {
        let mut sh = Shape::default();
        shape(&builtin().components, node, 0, &mut sh);
        let sh = Arc::new(sh);
        SHAPES
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, sh.clone());
        sh
    })
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
    shape_of: &impl Fn(&'s Value) -> Arc<Shape<'s>>,
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
