//! `ObjectMeta` access on unstructured JSON objects.
//!
//! Objects travel through kubext as `serde_json::Value`; these helpers read and
//! write the well-known metadata fields without a typed round trip.

use serde_json::{Map, Value};

/// The `metadata` member as sent, whatever its JSON type (for the checks
/// that tell a missing, `null` or non-object `metadata` apart).
pub fn member(obj: &Value) -> Option<&Value> {
    obj.get("metadata")
}

/// [`member`] of an object's map.
pub fn member_of(obj: &Map<String, Value>) -> Option<&Value> {
    obj.get("metadata")
}

/// [`member`], mutable; never created.
pub fn member_mut(obj: &mut Value) -> Option<&mut Value> {
    obj.get_mut("metadata")
}

pub fn metadata(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata")?.as_object()
}

/// The metadata map, created if missing (and replaced if it is not an object).
pub fn metadata_mut(obj: &mut Value) -> &mut Map<String, Value> {
    let md = object_mut(obj)
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    object_mut(md)
}

/// `value` as a map, made an empty one first if it is not an object.
fn object_mut(value: &mut Value) -> &mut Map<String, Value> {
    if !value.is_object() {
        *value = Value::Object(Map::new());
    }
    match value {
        Value::Object(map) => map,
        _ => unreachable!("made an object above"),
    }
}

pub fn str_field<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    metadata(obj)?.get(field)?.as_str()
}

pub fn name(obj: &Value) -> &str {
    str_field(obj, "name").unwrap_or("")
}

pub fn namespace(obj: &Value) -> &str {
    str_field(obj, "namespace").unwrap_or("")
}

pub fn uid(obj: &Value) -> &str {
    str_field(obj, "uid").unwrap_or("")
}

pub fn resource_version(obj: &Value) -> &str {
    str_field(obj, "resourceVersion").unwrap_or("")
}

pub fn generate_name(obj: &Value) -> &str {
    str_field(obj, "generateName").unwrap_or("")
}

pub fn deletion_timestamp(obj: &Value) -> Option<&str> {
    str_field(obj, "deletionTimestamp")
}

pub fn generation(obj: &Value) -> i64 {
    metadata(obj)
        .and_then(|m| m.get("generation"))
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

pub fn labels(obj: &Value) -> Option<&Map<String, Value>> {
    metadata(obj)?.get("labels")?.as_object()
}

pub fn annotations(obj: &Value) -> Option<&Map<String, Value>> {
    metadata(obj)?.get("annotations")?.as_object()
}

pub fn finalizers(obj: &Value) -> Vec<&str> {
    metadata(obj)
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

pub fn set_str(obj: &mut Value, field: &str, value: &str) {
    metadata_mut(obj).insert(field.into(), Value::String(value.into()));
}

pub fn set_resource_version(obj: &mut Value, rv: i64) {
    set_str(obj, "resourceVersion", &rv.to_string());
}

pub fn remove(obj: &mut Value, field: &str) -> Option<Value> {
    obj.get_mut("metadata")?.as_object_mut()?.remove(field)
}

pub fn api_version(obj: &Value) -> &str {
    obj.get("apiVersion").and_then(Value::as_str).unwrap_or("")
}

pub fn kind(obj: &Value) -> &str {
    obj.get("kind").and_then(Value::as_str).unwrap_or("")
}

/// Parse a resourceVersion string; empty is `None`, garbage is an error.
pub fn parse_resource_version(rv: &str) -> Result<Option<i64>, InvalidResourceVersion> {
    if rv.is_empty() {
        return Ok(None);
    }
    rv.parse::<i64>()
        .ok()
        .filter(|v| *v >= 0)
        .map(Some)
        .ok_or_else(|| InvalidResourceVersion(rv.to_string()))
}

/// A `resourceVersion` that is not a non-negative integer (the text as given).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid resource version: {0:?}")]
pub struct InvalidResourceVersion(pub String);

/// A query's `resourceVersion` that does not parse is the request's fault: 400.
impl From<InvalidResourceVersion> for crate::status::StatusError {
    fn from(e: InvalidResourceVersion) -> Self {
        crate::status::StatusError::bad_request(e.to_string())
    }
}

/// The JSON bytes of an object, as kube-apiserver orders its members
/// ([`crate::json::encode_object`]).
pub fn to_json_vec(obj: &Value) -> Vec<u8> {
    crate::json::encode_object(obj, crate::json::MetadataMembers::All)
}
