//! Pruning of unknown fields (upstream `schema/pruning`).

use serde_json::{Map, Value};

use crate::structural::{AdditionalProperties, Structural};

const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// ObjectMeta's JSON fields: what survives in an embedded resource's metadata.
const OBJECT_META_FIELDS: [&str; 16] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
    "clusterName",
];

/// Removes fields not specified by `schema` (unless
/// `x-kubernetes-preserve-unknown-fields`), returning the sorted paths of the
/// removed fields (`spec.foo`, `spec.items[0].bar`) for `unknown field` warnings.
///
/// With `is_root`, the value is a whole resource: `apiVersion`, `kind` and
/// `metadata` are kept (root metadata is left to ObjectMeta handling). Embedded
/// resources keep them too, and their metadata is pruned to ObjectMeta fields.
pub fn prune(value: &mut Value, schema: &Structural, is_root: bool) -> Vec<String> {
    let mut p = Pruner {
        paths: Vec::new(),
        root: is_root,
    };
    if is_root && !schema.extensions.embedded_resource {
        let mut clone = schema.clone();
        clone.extensions.embedded_resource = true;
        p.prune(value, Some(&clone), "");
    } else {
        p.prune(value, Some(schema), "");
    }
    p.paths.sort();
    p.paths
}

struct Pruner {
    paths: Vec<String>,
    root: bool,
}

fn key_path(parent: &str, k: &str) -> String {
    if parent.is_empty() {
        k.to_string()
    } else {
        format!("{parent}.{k}")
    }
}

fn additional(s: &Structural) -> Option<Option<&Structural>> {
    match &s.additional_properties {
        None => None,
        Some(AdditionalProperties::Schema(ap)) => Some(Some(ap)),
        Some(AdditionalProperties::Bool(_)) => Some(None),
    }
}

impl Pruner {
    fn prune(&mut self, x: &mut Value, s: Option<&Structural>, path: &str) {
        if let Some(s) = s
            && s.extensions.preserve_unknown_fields
        {
            self.skip_prune(x, s, path);
            return;
        }
        match x {
            Value::Object(m) => {
                let Some(s) = s else {
                    for k in m.keys() {
                        self.paths.push(key_path(path, k));
                    }
                    m.clear();
                    return;
                };
                let keys: Vec<String> = m.keys().cloned().collect();
                for k in keys {
                    if s.extensions.embedded_resource && META_FIELDS.contains(&k.as_str()) {
                        self.embedded_meta(m, &k, path);
                        continue;
                    }
                    let kp = key_path(path, &k);
                    if let Some(prop) = s.properties.get(&k) {
                        if let Some(v) = m.get_mut(&k) {
                            self.prune(v, Some(prop), &kp);
                        }
                    } else if let Some(ap) = additional(s) {
                        if let Some(v) = m.get_mut(&k) {
                            self.prune(v, ap, &kp);
                        }
                    } else {
                        if !META_FIELDS.contains(&k.as_str()) || !path.is_empty() {
                            self.paths.push(kp);
                        }
                        m.remove(&k);
                    }
                }
            }
            Value::Array(a) => {
                let items = s.and_then(|s| s.items.as_deref());
                for (i, v) in a.iter_mut().enumerate() {
                    self.prune(v, items, &format!("{path}[{i}]"));
                }
            }
            _ => {}
        }
    }

    fn skip_prune(&mut self, x: &mut Value, s: &Structural, path: &str) {
        match x {
            Value::Object(m) => {
                let keys: Vec<String> = m.keys().cloned().collect();
                for k in keys {
                    if s.extensions.embedded_resource && META_FIELDS.contains(&k.as_str()) {
                        self.embedded_meta(m, &k, path);
                        continue;
                    }
                    let kp = key_path(path, &k);
                    let Some(v) = m.get_mut(&k) else { continue };
                    if let Some(prop) = s.properties.get(&k) {
                        self.prune(v, Some(prop), &kp);
                    } else if let Some(ap) = additional(s) {
                        self.prune(v, ap, &kp);
                    }
                }
            }
            Value::Array(a) => {
                if let Some(items) = s.items.as_deref() {
                    for (i, v) in a.iter_mut().enumerate() {
                        self.skip_prune(v, items, &format!("{path}[{i}]"));
                    }
                }
            }
            _ => {}
        }
    }

    /// `metadata` of an embedded (non-root) resource: keep ObjectMeta fields only.
    fn embedded_meta(&mut self, m: &mut Map<String, Value>, k: &str, path: &str) {
        if k != "metadata" || (self.root && path.is_empty()) {
            return;
        }
        let mp = key_path(path, k);
        if let Some(Value::Object(meta)) = m.get_mut(k) {
            let unknown: Vec<String> = meta
                .keys()
                .filter(|f| !OBJECT_META_FIELDS.contains(&f.as_str()))
                .cloned()
                .collect();
            for f in unknown {
                self.paths.push(key_path(&mp, &f));
                meta.remove(&f);
            }
        }
    }
}

/// Drops the fields of a resource's root `metadata` that are not ObjectMeta
/// fields (upstream loses them when decoding into `metav1.ObjectMeta`),
/// returning their paths (`metadata.foo`) for `unknown field` warnings.
/// [`prune`] leaves root metadata alone; call this for it when wanted.
pub fn prune_root_metadata(obj: &mut Value) -> Vec<String> {
    let mut p = Pruner {
        paths: Vec::new(),
        root: false,
    };
    if let Some(m) = obj.as_object_mut() {
        p.embedded_meta(m, "metadata", "");
    }
    p.paths.sort();
    p.paths
}
