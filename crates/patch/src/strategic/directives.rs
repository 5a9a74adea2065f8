//! The `$`-directives a strategic merge patch may carry, and their handling
//! where it does not involve list ordering.
//!
//! * `$patch: replace|delete` in a map replaces it or empties it;
//! * `$retainKeys: [..]` drops every key of the live map not listed;
//! * `$deleteFromPrimitiveList/<field>: [..]` removes scalars from a list;
//! * `$setElementOrder/<field>: [..]` fixes list order (see `order.rs`).
//!
//! Upstream leaves unprocessed directives inside values copied from the
//! patch and relies on the typed decode that follows to drop them as unknown
//! fields. We store JSON as-is, so [`strip_directive_keys`] removes them from
//! the final result instead.

use serde_json::{Map, Value};

use super::errors::{BAD_PRIMITIVE_LIST, BAD_RETAIN_KEYS, BAD_SET_ELEMENT_ORDER, bad_patch_type};
use crate::error::PatchError;

pub(crate) const DIRECTIVE_MARKER: &str = "$patch";
pub(crate) const DELETE_DIRECTIVE: &str = "delete";
pub(crate) const REPLACE_DIRECTIVE: &str = "replace";
pub(crate) const MERGE_DIRECTIVE: &str = "merge";
pub(crate) const RETAIN_KEYS_DIRECTIVE: &str = "$retainKeys";
pub(crate) const DELETE_FROM_PRIMITIVE_LIST_PREFIX: &str = "$deleteFromPrimitiveList";
pub(crate) const SET_ELEMENT_ORDER_PREFIX: &str = "$setElementOrder";

/// `"$setElementOrder/finalizers"` → `"finalizers"`; a key without the
/// `prefix/` form is a malformed patch (400).
pub(crate) fn extract_key(key: &str, prefix: &str) -> Result<String, PatchError> {
    match key.split_once('/') {
        Some((head, field)) if head == prefix => Ok(field.to_string()),
        _ if prefix == DELETE_FROM_PRIMITIVE_LIST_PREFIX => {
            Err(PatchError::Malformed(BAD_PRIMITIVE_LIST.into()))
        }
        _ => Err(PatchError::Malformed(BAD_SET_ELEMENT_ORDER.into())),
    }
}

/// A `$patch` directive found in a map being merged.
pub(crate) fn handle_map_directive(
    directive: &Value,
    mut patch: Map<String, Value>,
) -> Result<Map<String, Value>, PatchError> {
    match directive.as_str() {
        Some(REPLACE_DIRECTIVE) => {
            patch.remove(DIRECTIVE_MARKER);
            Ok(patch)
        }
        Some(DELETE_DIRECTIVE) => Ok(Map::new()),
        _ => Err(bad_patch_type(directive, &patch)),
    }
}

/// Applies and removes a `$retainKeys` directive: every key of the patch
/// (bar nulls and list directives) must be listed, and keys of `original`
/// that are not listed are dropped.
pub(crate) fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<(), PatchError> {
    let Some(retain) = patch.remove(RETAIN_KEYS_DIRECTIVE) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(PatchError::Malformed(BAD_RETAIN_KEYS.into()));
    };
    let retained = |k: &str| retain.iter().any(|r| r.as_str() == Some(k));
    let all_listed = patch.iter().all(|(k, v)| {
        v.is_null()
            || k.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX)
            || k.starts_with(SET_ELEMENT_ORDER_PREFIX)
            || retained(k)
    });
    if !all_listed {
        return Err(PatchError::Malformed(BAD_RETAIN_KEYS.into()));
    }
    original.retain(|k, _| retained(k));
    Ok(())
}

/// True for a map carrying `$patch`.
pub(crate) fn contains_directive_marker(v: &Value) -> bool {
    v.as_object()
        .is_some_and(|m| m.contains_key(DIRECTIVE_MARKER))
}

/// Upstream `removeDirectives`: maps carrying `$patch` vanish (from their
/// parent map or list); everything else is kept. `None` means "drop".
pub(crate) fn remove_directives(v: Value) -> Option<Value> {
    match v {
        Value::Object(map) => {
            if map.contains_key(DIRECTIVE_MARKER) {
                return None;
            }
            let kept = map
                .into_iter()
                .filter_map(|(k, v)| remove_directives(v).map(|v| (k, v)))
                .collect();
            Some(Value::Object(kept))
        }
        Value::Array(items) => Some(Value::Array(
            items.into_iter().filter_map(remove_directives).collect(),
        )),
        other => Some(other),
    }
}

/// Upstream `discardNullValuesFromPatch`: drops null-valued keys from every
/// map, including maps inside lists (null list elements stay).
pub(crate) fn discard_null_values(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(discard_null_values);
        }
        Value::Array(items) => items.iter_mut().for_each(discard_null_values),
        _ => {}
    }
}

fn is_directive_key(key: &str) -> bool {
    key == DIRECTIVE_MARKER
        || key == RETAIN_KEYS_DIRECTIVE
        || key.starts_with(SET_ELEMENT_ORDER_PREFIX)
        || key.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX)
}

/// Removes every directive key left anywhere in `v` (what upstream's typed
/// decode does implicitly).
pub(crate) fn strip_directive_keys(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.retain(|k, _| !is_directive_key(k));
            map.values_mut().for_each(strip_directive_keys);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_directive_keys),
        _ => {}
    }
}
