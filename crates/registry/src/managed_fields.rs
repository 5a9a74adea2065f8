//! `metadata.managedFields` bookkeeping for Update operations.
//!
//! Field sets use the `FieldsV1` encoding (`{"f:data":{".":{},"f:k":{}}}`). Lists are
//! treated as atomic leaves here; server-side apply refines ownership where merge
//! keys are known.

use apimachinery::time;
use serde_json::{Map, Value, json};

/// Fields set in `new` that are absent or different in `old`, as a FieldsV1 tree.
pub fn changed_fields(old: Option<&Value>, new: &Value) -> Map<String, Value> {
    let mut out = Map::new();
    if let (Some(Value::Object(o)), Value::Object(n)) = (old.or(Some(&Value::Null)), new) {
        diff_into(Some(o), n, &mut out);
    } else if let Value::Object(n) = new {
        diff_into(None, n, &mut out);
    }
    out.remove("f:apiVersion");
    out.remove("f:kind");
    if let Some(Value::Object(md)) = out.get_mut("f:metadata") {
        for system in [
            "f:resourceVersion",
            "f:uid",
            "f:creationTimestamp",
            "f:generation",
            "f:managedFields",
            "f:deletionTimestamp",
            "f:deletionGracePeriodSeconds",
            "f:selfLink",
            "f:name",
            "f:namespace",
        ] {
            md.remove(system);
        }
        if md.is_empty() {
            out.remove("f:metadata");
        }
    }
    out
}

fn diff_into(
    old: Option<&Map<String, Value>>,
    new: &Map<String, Value>,
    out: &mut Map<String, Value>,
) {
    for (k, v) in new {
        let before = old.and_then(|o| o.get(k));
        if before == Some(v) {
            continue;
        }
        let key = format!("f:{k}");
        match v {
            Value::Object(child) if !child.is_empty() => {
                let mut sub = Map::new();
                let old_child = before.and_then(Value::as_object);
                if old_child.is_none() {
                    sub.insert(".".into(), json!({}));
                }
                diff_into(old_child, child, &mut sub);
                out.insert(key, Value::Object(sub));
            }
            _ => {
                out.insert(key, json!({}));
            }
        }
    }
}

/// Merge `b` into `a` (union of field sets).
fn union(a: &mut Map<String, Value>, b: &Map<String, Value>) {
    for (k, v) in b {
        match (a.get_mut(k), v) {
            (Some(Value::Object(x)), Value::Object(y)) => union(x, y),
            _ => {
                a.insert(k.clone(), v.clone());
            }
        }
    }
}

/// Remove every leaf of `b` from `a`, dropping emptied branches.
fn subtract(a: &mut Map<String, Value>, b: &Map<String, Value>) {
    for (k, v) in b {
        let remove = match (a.get_mut(k), v) {
            (Some(Value::Object(x)), Value::Object(y)) if !y.is_empty() => {
                subtract(x, y);
                x.is_empty() || (x.len() == 1 && x.contains_key("."))
            }
            (Some(_), _) => true,
            (None, _) => false,
        };
        if remove {
            a.remove(k);
        }
    }
}

/// Record an Update (or Create, which upstream also records as "Update") by `manager`.
pub fn record_update(obj: &mut Value, old: Option<&Value>, manager: &str, api_version: &str) {
    if manager.is_empty() {
        return;
    }
    let changed = changed_fields(old, obj);
    let mut entries: Vec<Value> = old
        .and_then(|o| o.pointer("/metadata/managedFields"))
        .or_else(|| obj.pointer("/metadata/managedFields"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if changed.is_empty() {
        set_managed(obj, entries);
        return;
    }
    for entry in entries.iter_mut() {
        let is_ours = entry["manager"] == manager && entry["operation"] == "Update";
        if !is_ours && let Some(Value::Object(fields)) = entry.get_mut("fieldsV1") {
            subtract(fields, &changed);
        }
    }
    entries.retain(|e| {
        e.get("fieldsV1")
            .and_then(Value::as_object)
            .is_none_or(|f| !f.is_empty())
    });
    let existing = entries.iter_mut().find(|e| {
        e["manager"] == manager && e["operation"] == "Update" && e["apiVersion"] == api_version
    });
    match existing {
        Some(entry) => {
            if let Some(Value::Object(fields)) = entry.get_mut("fieldsV1") {
                union(fields, &changed);
            }
            entry["time"] = json!(time::now_rfc3339());
        }
        None => entries.push(json!({
            "manager": manager,
            "operation": "Update",
            "apiVersion": api_version,
            "time": time::now_rfc3339(),
            "fieldsType": "FieldsV1",
            "fieldsV1": changed,
        })),
    }
    set_managed(obj, entries);
}

fn set_managed(obj: &mut Value, entries: Vec<Value>) {
    let md = apimachinery::meta::metadata_mut(obj);
    if entries.is_empty() {
        md.remove("managedFields");
    } else {
        md.insert("managedFields".into(), Value::Array(entries));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_owns_every_set_field() {
        let mut obj = json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","labels":{"a":"b"}},"data":{"k":"v"}});
        record_update(&mut obj, None, "kubectl-create", "v1");
        let mf = &obj["metadata"]["managedFields"][0];
        assert_eq!(mf["manager"], "kubectl-create");
        assert_eq!(
            mf["fieldsV1"],
            json!({"f:data":{".":{},"f:k":{}},"f:metadata":{"f:labels":{".":{},"f:a":{}}}})
        );
    }

    #[test]
    fn update_moves_ownership() {
        let mut old = json!({"metadata":{"name":"x"},"data":{"k":"v"}});
        record_update(&mut old, None, "a", "v1");
        let mut new = old.clone();
        new["data"]["k"] = json!("w");
        record_update(&mut new, Some(&old), "b", "v1");
        let mf = new["metadata"]["managedFields"].as_array().unwrap();
        assert_eq!(mf.len(), 2);
        assert_eq!(mf[0]["fieldsV1"], json!({"f:data":{".":{}}}));
        assert_eq!(mf[1]["fieldsV1"], json!({"f:data":{"f:k":{}}}));
    }
}
