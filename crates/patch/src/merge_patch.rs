//! RFC 7386 JSON Merge Patch, as kube-apiserver 1.32 applies and diffs it.
//!
//! `application/merge-patch+json` bodies are applied with evanphx/json-patch
//! v4.12.0's `MergePatch`, which is RFC 7386 plus one quirk we keep: when a
//! patch value lands where the document has nothing (or a non-object), nulls
//! are pruned from *every* nested object in it, including objects inside
//! arrays. [`create`] mirrors `CreateMergePatch` and is what no-op detection
//! and server-side apply build on.
//!
//! kube-apiserver strictly decodes the body into `map[string]interface{}`
//! first, so a non-object patch is a 400 ([`PatchError::Malformed`]).

use serde_json::{Map, Value};

use crate::error::PatchError;

/// Applies a merge patch to `doc`.
///
/// Fails only for a patch that is not a JSON object (kube-apiserver: 400).
pub fn apply(doc: &Value, patch: &Value) -> Result<Value, PatchError> {
    let patch = match patch {
        Value::Object(patch) => patch,
        Value::Null => return Err(PatchError::Malformed("Invalid JSON Patch".into())),
        other => return Err(PatchError::Malformed(not_an_object(other))),
    };
    let mut patch = patch.clone();
    match doc {
        Value::Object(doc) => {
            let mut doc = doc.clone();
            merge_docs(&mut doc, patch);
            Ok(Value::Object(doc))
        }
        _ => {
            prune_doc_nulls(&mut patch);
            Ok(Value::Object(patch))
        }
    }
}

fn not_an_object(v: &Value) -> String {
    let kind = match v {
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        _ => "bool",
    };
    format!(
        "error decoding patch: json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"
    )
}

fn merge_docs(doc: &mut Map<String, Value>, patch: Map<String, Value>) {
    for (key, value) in patch {
        if value.is_null() {
            doc.remove(&key);
            continue;
        }
        let merged = match doc.remove(&key) {
            None | Some(Value::Null) => pruned(value),
            Some(current) => merge_value(current, value),
        };
        doc.insert(key, merged);
    }
}

fn merge_value(current: Value, patch: Value) -> Value {
    match (current, patch) {
        (Value::Object(mut current), Value::Object(patch)) => {
            merge_docs(&mut current, patch);
            Value::Object(current)
        }
        // evanphx prunes only when the *document* side is not an object.
        (Value::Object(_), patch) => patch,
        (_, patch) => pruned(patch),
    }
}

fn pruned(mut v: Value) -> Value {
    prune_nulls(&mut v);
    v
}

fn prune_nulls(v: &mut Value) {
    match v {
        Value::Object(map) => prune_doc_nulls(map),
        // Null array elements stay; objects inside arrays are pruned.
        Value::Array(items) => items.iter_mut().for_each(prune_nulls),
        _ => {}
    }
}

fn prune_doc_nulls(map: &mut Map<String, Value>) {
    map.retain(|_, v| !v.is_null());
    map.values_mut().for_each(prune_nulls);
}

/// Creates a merge patch that turns `original` into `modified`
/// (evanphx `CreateMergePatch` for two objects): changed and added keys carry
/// their new value, removed keys are `null`, nested objects are diffed
/// recursively, arrays and scalars are replaced whole. An empty object means
/// "no change". Numbers compare by value (`1` equals `1.0`), as in Go.
///
/// For non-object inputs the patch is simply `modified`.
///
/// Merge patches cannot express "set this key to null", so
/// `apply(a, create(a, b)) == b` holds for documents without null values.
pub fn create(original: &Value, modified: &Value) -> Value {
    match (original, modified) {
        (Value::Object(a), Value::Object(b)) => Value::Object(diff(a, b)),
        _ => modified.clone(),
    }
}

fn diff(a: &Map<String, Value>, b: &Map<String, Value>) -> Map<String, Value> {
    let mut into = Map::new();
    for (key, bv) in b {
        match a.get(key) {
            Some(Value::Object(ao)) => {
                if let Value::Object(bo) = bv {
                    let nested = diff(ao, bo);
                    if !nested.is_empty() {
                        into.insert(key.clone(), Value::Object(nested));
                    }
                } else {
                    into.insert(key.clone(), bv.clone());
                }
            }
            Some(av) if json_equal(av, bv) => {}
            _ => {
                into.insert(key.clone(), bv.clone());
            }
        }
    }
    for key in a.keys() {
        if !b.contains_key(key) {
            into.insert(key.clone(), Value::Null);
        }
    }
    into
}

/// Go's `matchesValue` after `json.Unmarshal` into `interface{}`: numbers
/// are all `float64`.
pub(crate) fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_equal(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, xv)| y.get(k).is_some_and(|yv| json_equal(xv, yv)))
        }
        _ => a == b,
    }
}
