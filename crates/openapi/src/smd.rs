//! Server-side apply's typed check of a configuration: what
//! structured-merge-diff's `TypedValue` validation finds when upstream's
//! field manager converts the applied object with the schema kube-apiserver
//! builds from its OpenAPI models (kube-openapi's `schemaconv`). A finding
//! fails the apply (`failed to create typed patch object (...)`, a 500)
//! whatever `fieldValidation` says.
//!
//! The schema's rules, as `schemaconv` reads OpenAPI:
//! - an object's declared fields are its `properties`; others are taken when
//!   `additionalProperties` allows them, when it has no properties at all, or
//!   when `x-kubernetes-preserve-unknown-fields` holds here or on an
//!   enclosing schema written inline (a `$ref` starts afresh);
//! - a custom resource's root and embedded resources
//!   (`x-kubernetes-embedded-resource`) declare `apiVersion`, `kind` and
//!   `metadata`, the latter as ObjectMeta (a `$ref`: strict again);
//! - list items are named by `x-kubernetes-list-type` (`map`: by their keys,
//!   `set`: by value), else by the patch strategy, else by index.
//!
//! Upstream stops reading an object at its first undeclared field, in Go's
//! random map order; here members are read in key order, so the answer is
//! one upstream can give (and the only one when an object has one such field).

use patch::PatchMeta;
use serde_json::{Map, Value};

use crate::Gvk;
use crate::builtin::{OBJECT_META, builtin};
use crate::convert::ref_name;
use crate::validate::builtin_schema_names;

/// One step of a path as structured-merge-diff prints it.
#[derive(Debug, Clone, PartialEq)]
pub enum PathStep {
    /// `.name`
    Field(String),
    /// `[port=80,protocol="TCP"]`: an associative list's item by its keys
    /// (sorted by name).
    Key(Vec<(String, Value)>),
    /// `[="a"]`: a set's item.
    Value(Value),
    /// `[0]`
    Index(usize),
}

/// One finding, at `path`.
#[derive(Debug, Clone, PartialEq)]
pub struct ApplyError {
    pub path: Vec<PathStep>,
    pub kind: Finding,
}

/// What structured-merge-diff found (the caller words it: its texts quote
/// values as Go does).
#[derive(Debug, Clone, PartialEq)]
pub enum Finding {
    /// `field not declared in schema`
    Undeclared,
    /// `duplicate entries for key [name="a"]` (at the list).
    DuplicateEntries(PathStep),
    /// `element 0: associative list with keys has an element that omits all
    /// key fields ["name"] (and doesn't have default values for any key
    /// fields)` (at the list).
    OmitsAllKeys { element: usize, keys: Vec<String> },
    /// `element 0: associative list with keys may not have a null element`
    NullElement { element: usize },
    /// `element 0: associative list with keys may not have non-map elements`
    NotAMap { element: usize },
    /// `element 0: associative list without keys has an element that's a
    /// map type`
    MapInSet { element: usize },
    /// `element 0: not supported: associative list with lists as elements`
    ListInSet { element: usize },
}

/// The findings for a built-in kind's configuration; `None` when `gvk` is
/// not a built-in kind. `lists` has the defaults of associative lists' key
/// fields (which these schemas do not carry: Service ports' `protocol`).
pub fn builtin_apply_errors(
    gvk: &Gvk,
    obj: &Value,
    lists: &dyn PatchMeta,
) -> Option<Vec<ApplyError>> {
    let components = &builtin().components;
    let root = components.get(*builtin_schema_names().get(gvk)?)?;
    let mut walk = Walk {
        components,
        custom: false,
        lists: Some(lists),
        path: Vec::new(),
        errors: Vec::new(),
    };
    walk.value(Node::named(root), obj);
    Some(walk.errors)
}

/// The findings for a custom resource's configuration, against its CRD
/// version's `openAPIV3Schema` (structural).
pub fn custom_apply_errors(schema: &Value, obj: &Value) -> Vec<ApplyError> {
    let mut walk = Walk {
        components: &builtin().components,
        custom: true,
        lists: None,
        path: Vec::new(),
        errors: Vec::new(),
    };
    walk.value(
        Node {
            schema,
            preserve: false,
            resource: true,
        },
        obj,
    );
    walk.errors
}

/// A schema as structured-merge-diff's type reference: the node, whether
/// unknown fields are kept (inherited by inline schemas), and whether it is
/// a custom resource's root.
#[derive(Clone, Copy)]
struct Node<'s> {
    schema: &'s Value,
    preserve: bool,
    resource: bool,
}

impl<'s> Node<'s> {
    fn named(schema: &'s Value) -> Self {
        Node {
            schema,
            preserve: false,
            resource: false,
        }
    }

    fn inline(&self, schema: &'s Value) -> Self {
        Node {
            schema,
            preserve: self.preserve,
            resource: false,
        }
    }

    fn flag(&self, key: &str) -> bool {
        self.schema.get(key).and_then(Value::as_bool) == Some(true)
    }

    fn str(&self, key: &str) -> &'s str {
        self.schema.get(key).and_then(Value::as_str).unwrap_or("")
    }
}

/// How an object takes members it does not declare.
enum Elements<'s> {
    /// Any member, anything below it.
    Any,
    /// Members of this schema.
    Schema(Node<'s>),
    /// None: the first is the finding.
    None,
}

/// How a list names its items.
enum ListType {
    Atomic,
    Set,
    Map(Vec<String>),
}

struct Walk<'s> {
    components: &'s Map<String, Value>,
    custom: bool,
    /// Key fields' defaults, by field path (built-in kinds).
    lists: Option<&'s dyn PatchMeta>,
    path: Vec<PathStep>,
    errors: Vec<ApplyError>,
}

impl<'s> Walk<'s> {
    /// The schema a reference points at (`$ref`, or a lone `allOf: [{$ref}]`):
    /// a named type, converted afresh. `None` when there is none.
    fn target(&self, schema: &'s Value) -> Option<Option<&'s Value>> {
        let m = schema.as_object()?;
        let r = m.get("$ref").and_then(Value::as_str).or_else(|| {
            match m.get("allOf").and_then(Value::as_array).map(Vec::as_slice) {
                Some([only]) => only.get("$ref").and_then(Value::as_str),
                _ => None,
            }
        })?;
        Some(self.components.get(ref_name(r)))
    }

    /// Follow references to the schema that describes the value.
    fn resolve(&self, mut node: Node<'s>) -> Option<Node<'s>> {
        for _ in 0..32 {
            match self.target(node.schema) {
                None => {
                    node.preserve |= node.flag("x-kubernetes-preserve-unknown-fields");
                    return Some(node);
                }
                Some(Some(target)) => node = Node::named(target),
                // A reference to nothing: anything goes.
                Some(None) => return None,
            }
        }
        None
    }

    fn error(&mut self, kind: Finding) {
        self.errors.push(ApplyError {
            path: self.path.clone(),
            kind,
        });
    }

    fn value(&mut self, node: Node<'s>, value: &Value) {
        let Some(node) = self.resolve(node) else {
            return;
        };
        let ty = node.str("type");
        match value {
            Value::Object(members) if matches!(ty, "object" | "") => self.object(node, members),
            Value::Array(items) if matches!(ty, "array" | "") => self.list(node, items),
            // Scalars, nulls, and values of another type than the schema's
            // (refused later, by validation).
            _ => {}
        }
    }

    /// The declared field `key` of an object, if any.
    fn field(&self, node: Node<'s>, key: &str) -> Option<Node<'s>> {
        let embedded = self.custom
            && (node.resource || node.flag("x-kubernetes-embedded-resource"))
            && matches!(key, "apiVersion" | "kind" | "metadata");
        if embedded {
            return Some(match key {
                "metadata" => Node::named(self.components.get(OBJECT_META)?),
                _ => Node::named(&STRING),
            });
        }
        node.schema
            .get("properties")
            .and_then(|p| p.get(key))
            .map(|s| node.inline(s))
    }

    fn elements(&self, node: Node<'s>) -> Elements<'s> {
        let no_properties = node
            .schema
            .get("properties")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty)
            && !(self.custom && (node.resource || node.flag("x-kubernetes-embedded-resource")));
        match node.schema.get("additionalProperties") {
            None if node.preserve || no_properties => Elements::Any,
            None | Some(Value::Bool(false)) => Elements::None,
            Some(Value::Bool(true)) => Elements::Any,
            Some(schema) => Elements::Schema(node.inline(schema)),
        }
    }

    fn object(&mut self, node: Node<'s>, members: &Map<String, Value>) {
        let elements = self.elements(node);
        for (key, value) in members {
            self.path.push(PathStep::Field(key.clone()));
            match (self.field(node, key), &elements) {
                (Some(child), _) => self.value(child, value),
                (None, Elements::Schema(child)) => self.value(*child, value),
                (None, Elements::Any) => {}
                (None, Elements::None) => {
                    self.error(Finding::Undeclared);
                    self.path.pop();
                    return;
                }
            }
            self.path.pop();
        }
    }

    fn list_type(&self, node: Node<'s>) -> ListType {
        let keys = || -> Vec<String> {
            node.schema
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|keys| {
                    keys.iter()
                        .filter_map(Value::as_str)
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default()
        };
        match node
            .schema
            .get("x-kubernetes-list-type")
            .and_then(Value::as_str)
        {
            Some("set") => return ListType::Set,
            Some("map") => return ListType::Map(keys()),
            Some(_) => return ListType::Atomic,
            None => {}
        }
        match node.str("x-kubernetes-patch-strategy") {
            "merge" | "merge,retainKeys" => match node.str("x-kubernetes-patch-merge-key") {
                "" => ListType::Set,
                key => ListType::Map(vec![key.to_string()]),
            },
            _ => ListType::Atomic,
        }
    }

    fn list(&mut self, node: Node<'s>, items: &[Value]) {
        // No `items`: untyped, atomic; nothing below is checked.
        let Some(item_schema) = node.schema.get("items") else {
            return;
        };
        let item_node = node.inline(item_schema);
        let list_type = self.list_type(node);
        let mut seen: Vec<PathStep> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let step = match &list_type {
                ListType::Atomic => PathStep::Index(i),
                ListType::Set => {
                    let refused = match item {
                        Value::Object(_) => Some(Finding::MapInSet { element: i }),
                        Value::Array(_) => Some(Finding::ListInSet { element: i }),
                        _ => None,
                    };
                    if let Some(finding) = refused {
                        self.error(finding);
                        return;
                    }
                    PathStep::Value(item.clone())
                }
                ListType::Map(keys) => match self.key_of(item_node, keys, i, item) {
                    Ok(step) => step,
                    Err(finding) => {
                        self.error(finding);
                        return;
                    }
                },
            };
            if !matches!(step, PathStep::Index(_)) {
                if seen.contains(&step) {
                    self.error(Finding::DuplicateEntries(step.clone()));
                }
                seen.push(step.clone());
            }
            self.path.push(step);
            self.value(item_node, item);
            self.path.pop();
        }
    }

    /// An associative list item's name: its key fields, sorted by name,
    /// defaults standing in for those it leaves out (the others left out
    /// of the name), or upstream's refusal.
    fn key_of(
        &self,
        item_node: Node<'s>,
        keys: &[String],
        element: usize,
        item: &Value,
    ) -> Result<PathStep, Finding> {
        let fields = match item {
            Value::Object(fields) => fields,
            Value::Null => return Err(Finding::NullElement { element }),
            _ => return Err(Finding::NotAMap { element }),
        };
        let item_schema = self.resolve(item_node).map(|n| n.schema);
        let mut key = Vec::with_capacity(keys.len());
        for name in keys {
            let value = fields.get(name).or_else(|| {
                item_schema
                    .and_then(|s| s.get("properties"))
                    .and_then(|p| p.get(name))
                    .and_then(|p| p.get("default"))
                    .or_else(|| self.key_default(name))
            });
            if let Some(value) = value {
                key.push((name.clone(), value.clone()));
            }
        }
        if key.is_empty() {
            return Err(Finding::OmitsAllKeys {
                element,
                keys: keys.to_vec(),
            });
        }
        key.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(PathStep::Key(key))
    }

    /// The default of key field `name` of the list at the current path, as
    /// the built-in kinds' patch metadata has it.
    fn key_default(&self, name: &str) -> Option<&'s Value> {
        let fields: Vec<&str> = self
            .path
            .iter()
            .filter_map(|step| match step {
                PathStep::Field(f) => Some(f.as_str()),
                _ => None,
            })
            .collect();
        self.lists?.find(&fields)?.key_default(name)
    }
}

static STRING: std::sync::LazyLock<Value> =
    std::sync::LazyLock::new(|| serde_json::json!({"type": "string"}));
