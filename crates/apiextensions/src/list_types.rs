//! How a custom resource's lists and maps merge and are owned under server-side
//! apply, from its schema's `x-kubernetes-list-type` (`atomic` by default, `set`,
//! `map` with `x-kubernetes-list-map-keys`) and `x-kubernetes-map-type`
//! (`granular` by default, `atomic`), plus `ObjectMeta`'s own lists and
//! maps (upstream's ObjectMeta definition, as for built-in kinds: finalizers
//! a set, ownerReferences keyed by uid, each owner reference atomic).

use patch::{ANY_FIELD, FieldMeta, PatchSchema};
use serde_json::Value;

/// The patch schema of one CRD version's `openAPIV3Schema`.
pub fn patch_schema(schema: Option<&Value>) -> PatchSchema {
    let mut out = patch::builtin::object_meta_schema();
    if let Some(props) = schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
    {
        let mut path = Vec::new();
        for (name, child) in props.iter().filter(|(name, _)| *name != "metadata") {
            path.push(name.as_str());
            walk(child, &mut path, &mut out);
            path.pop();
        }
    }
    out
}

/// Declare the node at `path` (if it deviates from the defaults) and everything
/// under it. List items share their list's path (items are transparent), so a
/// list's metadata and its items' map type live in one [`FieldMeta`].
fn walk<'a>(node: &'a Value, path: &mut Vec<&'a str>, out: &mut PatchSchema) {
    let items = node.get("items");
    let mut meta = node_meta(node);
    if let Some(items) = items {
        meta.atomic_map |= is_atomic_map(items);
    }
    if meta != FieldMeta::default() {
        out.declare(path, meta);
    }
    children(items.unwrap_or(node), path, out);
}

fn children<'a>(node: &'a Value, path: &mut Vec<&'a str>, out: &mut PatchSchema) {
    if let Some(props) = node.get("properties").and_then(Value::as_object) {
        for (name, child) in props {
            path.push(name);
            walk(child, path, out);
            path.pop();
        }
    }
    if let Some(values) = node.get("additionalProperties").filter(|v| v.is_object()) {
        path.push(ANY_FIELD);
        walk(values, path, out);
        path.pop();
    }
    // Lists of lists: the inner list's items are transparent too.
    if let Some(items) = node.get("items") {
        children(items, path, out);
    }
}

fn node_meta(node: &Value) -> FieldMeta {
    let list_type = node.get("x-kubernetes-list-type").and_then(Value::as_str);
    let keys: Vec<String> = node
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(String::from)
        .collect();
    let mut meta = match list_type {
        Some("set") => FieldMeta::merge(""),
        Some("map") if !keys.is_empty() => FieldMeta {
            list_map_keys: keys.clone(),
            ..FieldMeta::merge(&keys[0])
        },
        _ => FieldMeta::default(),
    };
    meta.atomic_map = is_atomic_map(node);
    meta
}

fn is_atomic_map(node: &Value) -> bool {
    node.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic")
}

#[cfg(test)]
mod tests {
    use super::*;
    use patch::PatchMeta;
    use serde_json::json;

    #[test]
    fn list_and_map_types_from_the_schema() {
        let schema = json!({
            "type": "object",
            "properties": {
                "spec": {"type": "object", "properties": {
                    "ports": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["port", "protocol"],
                        "items": {"type": "object", "properties": {
                            "port": {"type": "integer"},
                            "protocol": {"type": "string"},
                            "hosts": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                        }},
                    },
                    "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                    "args": {"type": "array", "items": {"type": "string"}},
                    "selector": {"type": "object", "x-kubernetes-map-type": "atomic",
                        "additionalProperties": {"type": "string"}},
                    "refs": {"type": "array", "items": {"type": "object", "x-kubernetes-map-type": "atomic",
                        "properties": {"name": {"type": "string"}}}},
                    "byZone": {"type": "object", "additionalProperties": {
                        "type": "array", "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": {"type": "object", "properties": {"name": {"type": "string"}}},
                    }},
                }},
            },
        });
        let s = patch_schema(Some(&schema));
        let ports = s.lookup(&["spec", "ports"]);
        assert_eq!(ports.strategy, Some(patch::Strategy::Merge));
        assert_eq!(ports.list_keys(), vec!["port", "protocol"]);
        assert_eq!(s.lookup(&["spec", "ports", "hosts"]), FieldMeta::merge(""));
        assert_eq!(s.lookup(&["spec", "tags"]), FieldMeta::merge(""));
        assert_eq!(s.lookup(&["spec", "args"]), FieldMeta::default());
        assert!(s.lookup(&["spec", "selector"]).atomic_map);
        assert!(s.lookup(&["spec", "refs"]).atomic_map);
        assert_eq!(s.lookup(&["spec", "byZone", "a"]).list_keys(), vec!["name"]);
        let owners = s.lookup(&["metadata", "ownerReferences"]);
        assert_eq!(owners.list_keys(), vec!["uid"]);
        assert_eq!(owners.apply_list_type(), patch::ListType::Map);
        // Each owner reference is owned whole (OwnerReference is atomic).
        assert!(owners.atomic_map);
        assert_eq!(
            s.lookup(&["metadata", "finalizers"]).apply_list_type(),
            patch::ListType::Set
        );
        // Unlike built-ins, a CRD's status.conditions is atomic unless its schema says otherwise.
        assert_eq!(s.lookup(&["status", "conditions"]), FieldMeta::default());
    }
}
