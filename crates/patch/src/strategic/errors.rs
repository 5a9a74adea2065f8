//! Constructors for strategic-merge-patch errors with upstream's wording.
//!
//! `k8s.io/apimachinery/pkg/util/mergepatch` defines a few sentinel errors
//! that kube-apiserver maps to 400 or 422, and formats the rest with Go's
//! `%v`. Keeping every message in one place keeps the mapping auditable.

use serde_json::{Map, Value};

use crate::error::PatchError;
use crate::gofmt::{go_type_name, sprint};

pub(crate) const BAD_PRIMITIVE_LIST: &str = "invalid patch format of primitive list";
pub(crate) const BAD_RETAIN_KEYS: &str = "invalid patch format of retainKeys";
pub(crate) const BAD_SET_ELEMENT_ORDER: &str = "invalid patch format of setElementOrder list";
pub(crate) const NO_LIST_OF_LISTS: &str = "lists of lists are not supported";

pub(crate) const MAP_TYPE: &str = "map[string]interface {}";
pub(crate) const SLICE_TYPE: &str = "[]interface {}";

/// `mergepatch.ErrNoMergeKey`.
pub(crate) fn no_merge_key(m: &Map<String, Value>, key: &str) -> PatchError {
    PatchError::Invalid(format!(
        "map: {} does not contain declared merge key: {key}",
        sprint(&Value::Object(m.clone()))
    ))
}

/// `mergepatch.ErrBadArgType`.
pub(crate) fn bad_arg_type(expected: &str, actual: &Value) -> PatchError {
    let actual = match actual {
        Value::Null => "%!s(<nil>)",
        other => go_type_name(other),
    };
    PatchError::Invalid(format!("expected a {expected}, but received a {actual}"))
}

/// `mergepatch.ErrBadPatchType`.
pub(crate) fn bad_patch_type(directive: &Value, m: &Map<String, Value>) -> PatchError {
    PatchError::Invalid(format!(
        "unknown patch type: {} in map: {}",
        percent_s(directive),
        sprint(&Value::Object(m.clone()))
    ))
}

/// Go's `%s` verb: strings verbatim, anything else flagged.
fn percent_s(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "%!s(<nil>)".into(),
        other => format!("%!s({}={})", go_type_name(other), sprint(other)),
    }
}

/// A Go runtime panic upstream (e.g. hashing a map); kube-apiserver recovers
/// it into a 500.
pub(crate) fn unhashable(v: &Value) -> PatchError {
    PatchError::Invalid(format!(
        "runtime error: hash of unhashable type {}",
        go_type_name(v)
    ))
}

pub(crate) fn not_a_map_at(index: usize) -> PatchError {
    PatchError::Invalid(format!("value for key {index} is not a map"))
}
