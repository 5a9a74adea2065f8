//! Pruning of unknown fields (upstream `schema/pruning`).

use serde_json::Value;

use crate::structural::{AdditionalProperties, Structural};

const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// ObjectMeta's JSON fields (and the retired `clusterName`): what survives in
/// an embedded resource's metadata.
fn is_object_meta_field(name: &str) -> bool {
    apimachinery::json::object_meta_rank(name).is_some() || name == "clusterName"
}

/// Removes fields not specified by `schema` (unless
/// `x-kubernetes-preserve-unknown-fields`), returning the sorted paths of the
/// removed fields (`spec.foo`, `spec.items[0].bar`) for `unknown field` warnings,
/// then, sorted, those of embedded resources' metadata (upstream prunes, then
/// coerces metadata, and reports in that order).
///
/// With `is_root`, the value is a whole resource: `apiVersion`, `kind` and
/// `metadata` are kept (root metadata is left to ObjectMeta handling). Embedded
/// resources keep them too, and their metadata is pruned to ObjectMeta fields.
pub fn prune(value: &mut Value, schema: &Structural, is_root: bool) -> Vec<String> {
    let mut p = Pruner {
        paths: Vec::new(),
        meta_paths: Vec::new(),
        root: is_root,
        path: String::new(),
    };
    // A whole resource keeps its type and metadata as an embedded one does.
    p.prune(value, Some(schema), is_root);
    p.paths.sort();
    p.meta_paths.sort();
    p.paths.append(&mut p.meta_paths);
    p.paths
}

struct Pruner {
    paths: Vec<String>,
    /// Fields removed from embedded resources' metadata.
    meta_paths: Vec<String>,
    root: bool,
    /// Where the walk is (`spec.items[0]`): one buffer, rendered into a
    /// path only for the fields removed.
    path: String,
}

fn additional(s: &Structural) -> Option<Option<&Structural>> {
    match &s.additional_properties {
        None => None,
        Some(AdditionalProperties::Schema(ap)) => Some(Some(ap)),
        Some(AdditionalProperties::Bool(_)) => Some(None),
    }
}

impl Pruner {
    /// `as_resource`: `x` is a resource (the root of a whole resource), whose
    /// `apiVersion`, `kind` and `metadata` are kept as an embedded resource's.
    fn prune(&mut self, x: &mut Value, s: Option<&Structural>, as_resource: bool) {
        if let Some(s) = s
            && s.extensions.preserve_unknown_fields
        {
            self.skip_prune(x, s, as_resource);
            return;
        }
        match x {
            Value::Object(m) => {
                let Some(s) = s else {
                    for k in m.keys() {
                        self.removed(k);
                    }
                    m.clear();
                    return;
                };
                let embedded = s.extensions.embedded_resource || as_resource;
                m.retain(|k, v| {
                    if embedded && META_FIELDS.contains(&k.as_str()) {
                        self.embedded_meta(k, v);
                        return true;
                    }
                    let sub = match (s.properties.get(k), additional(s)) {
                        (Some(prop), _) => Some(&**prop),
                        (None, Some(ap)) => ap,
                        (None, None) => {
                            if !META_FIELDS.contains(&k.as_str()) || !self.path.is_empty() {
                                self.removed(k);
                            }
                            return false;
                        }
                    };
                    self.in_field(k, |p| p.prune(v, sub, false));
                    true
                });
            }
            Value::Array(a) => {
                let items = s.and_then(|s| s.items.as_deref());
                for (i, v) in a.iter_mut().enumerate() {
                    self.in_item(i, |p| p.prune(v, items, false));
                }
            }
            _ => {}
        }
    }

    fn skip_prune(&mut self, x: &mut Value, s: &Structural, as_resource: bool) {
        match x {
            Value::Object(m) => {
                let embedded = s.extensions.embedded_resource || as_resource;
                for (k, v) in m.iter_mut() {
                    if embedded && META_FIELDS.contains(&k.as_str()) {
                        self.embedded_meta(k, v);
                        continue;
                    }
                    let sub = match (s.properties.get(k), additional(s)) {
                        (Some(prop), _) => Some(&**prop),
                        (None, Some(ap)) => ap,
                        (None, None) => continue,
                    };
                    self.in_field(k, |p| p.prune(v, sub, false));
                }
            }
            Value::Array(a) => {
                if let Some(items) = s.items.as_deref() {
                    for (i, v) in a.iter_mut().enumerate() {
                        self.in_item(i, |p| p.skip_prune(v, items, false));
                    }
                }
            }
            _ => {}
        }
    }

    /// `metadata` of an embedded (non-root) resource: keep ObjectMeta fields only.
    fn embedded_meta(&mut self, k: &str, v: &mut Value) {
        if k != "metadata" || (self.root && self.path.is_empty()) {
            return;
        }
        if let Value::Object(meta) = v {
            self.in_field(k, |p| {
                meta.retain(|f, _| {
                    let known = is_object_meta_field(f);
                    if !known {
                        p.in_field(f, |p| p.meta_paths.push(p.path.clone()));
                    }
                    known
                })
            });
        }
    }

    /// Record field `key` of the current value as removed.
    fn removed(&mut self, key: &str) {
        self.in_field(key, |p| p.paths.push(p.path.clone()));
    }

    /// Run `f` with the path at field `key` (`a.b`).
    fn in_field(&mut self, key: &str, f: impl FnOnce(&mut Self)) {
        let len = self.path.len();
        if len > 0 {
            self.path.push('.');
        }
        self.path.push_str(key);
        f(self);
        self.path.truncate(len);
    }

    /// Run `f` with the path at list item `i` (`a[0]`).
    fn in_item(&mut self, i: usize, f: impl FnOnce(&mut Self)) {
        let len = self.path.len();
        self.path.push('[');
        self.path.push_str(itoa::Buffer::new().format(i));
        self.path.push(']');
        f(self);
        self.path.truncate(len);
    }
}

/// Drops the fields of a resource's root `metadata` that are not ObjectMeta
/// fields (upstream loses them when decoding into `metav1.ObjectMeta`),
/// returning their paths (`metadata.foo`) for `unknown field` warnings.
/// [`prune`] leaves root metadata alone; call this for it when wanted.
pub fn prune_root_metadata(obj: &mut Value) -> Vec<String> {
    let mut p = Pruner {
        paths: Vec::new(),
        meta_paths: Vec::new(),
        root: false,
        path: String::new(),
    };
    if let Some(metadata) = apimachinery::meta::member_mut(obj) {
        p.embedded_meta("metadata", metadata);
    }
    p.meta_paths.sort();
    p.meta_paths
}
