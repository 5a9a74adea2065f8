//! Kubernetes strategic merge patch (`application/strategic-merge-patch+json`).
//!
//! A port of the apply half of `k8s.io/apimachinery/pkg/util/strategicpatch`
//! (v0.32) as kube-apiserver runs it (`MergeParallelList` and
//! `IgnoreUnmatchedNulls` on). It is JSON merge patch plus per-field list
//! strategies from a [`PatchMeta`] and the `$`-directives kubectl sends.
//!
//! Deliberate differences from upstream, all invisible to clients:
//!
//! * Upstream iterates patch keys in Go's random map order; we use the map's
//!   (sorted) order, so e.g. `$deleteFromPrimitiveList/x` runs before `x`.
//! * Directive keys left in copied values are stripped from the result
//!   (upstream's typed decode drops them as unknown fields).
//! * For `$setElementOrder`, a live list that is `null` or `[]` counts as
//!   absent: upstream never sees those because its typed objects omit empty
//!   lists.
//! * Where upstream would panic (and answer 500) we return
//!   [`PatchError::Invalid`].

mod directives;
mod errors;
mod list;
mod order;

use serde_json::{Map, Value};

use self::directives::{
    DELETE_FROM_PRIMITIVE_LIST_PREFIX, DIRECTIVE_MARKER, SET_ELEMENT_ORDER_PREFIX,
    apply_retain_keys, discard_null_values, extract_key, handle_map_directive, remove_directives,
    strip_directive_keys,
};
use self::errors::{SLICE_TYPE, bad_arg_type};
use self::list::{Merged, slice_element_type};
use self::order::{
    normalize_element_order, partition_maps, partition_primitives, validate_patch_with_set_order,
};
use crate::error::PatchError;
use crate::gofmt::go_kind;
use crate::schema::{FieldMeta, PatchMeta, Strategy};

/// Applies a strategic merge patch to `doc` using `schema` for list
/// strategies and merge keys.
///
/// `patch` must be a JSON object (`null` is an empty patch); anything else is
/// [`PatchError::Malformed`], as kube-apiserver answers 400 for it.
pub fn apply(doc: &Value, patch: &Value, schema: &dyn PatchMeta) -> Result<Value, PatchError> {
    let patch = match patch {
        Value::Object(p) => p.clone(),
        Value::Null => Map::new(),
        other => {
            return Err(PatchError::Malformed(format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                json_kind(other)
            )));
        }
    };
    let Value::Object(original) = doc else {
        return Err(PatchError::Invalid("invalid JSON document".into()));
    };
    let merged = Walker { schema }.merge_map(original.clone(), patch, &[])?;
    let mut result = Value::Object(merged);
    strip_directive_keys(&mut result);
    Ok(result)
}

/// [`apply`] for a raw request body.
pub fn apply_slice(doc: &Value, patch: &[u8], schema: &dyn PatchMeta) -> Result<Value, PatchError> {
    let patch: Value =
        serde_json::from_slice(patch).map_err(|e| PatchError::Malformed(e.to_string()))?;
    apply(doc, &patch, schema)
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        Value::Null => "null",
        Value::Object(_) => "object",
    }
}

/// Carries the schema through the recursion; `path` arguments are field
/// names from the root (list elements transparent).
pub(crate) struct Walker<'a> {
    schema: &'a dyn PatchMeta,
}

fn child_path(path: &[String], key: &str) -> Vec<String> {
    let mut child = path.to_vec();
    child.push(key.to_string());
    child
}

impl Walker<'_> {
    fn meta(&self, path: &[String]) -> FieldMeta {
        let segments: Vec<&str> = path.iter().map(String::as_str).collect();
        self.schema.lookup(&segments)
    }

    /// `mergeMap`: merges `patch` into `original` (the map at `path`).
    fn merge_map(
        &self,
        mut original: Map<String, Value>,
        mut patch: Map<String, Value>,
        path: &[String],
    ) -> Result<Map<String, Value>, PatchError> {
        if let Some(directive) = patch.get(DIRECTIVE_MARKER).cloned() {
            return handle_map_directive(&directive, patch);
        }
        apply_retain_keys(&mut original, &mut patch)?;
        self.apply_set_element_orders(&mut original, &mut patch, path)?;
        for (key, value) in patch {
            self.merge_entry(&mut original, key, value, path)?;
        }
        Ok(original)
    }

    /// One key of the patch map (the body of upstream's `mergeMap` loop).
    fn merge_entry(
        &self,
        original: &mut Map<String, Value>,
        key: String,
        value: Value,
        path: &[String],
    ) -> Result<(), PatchError> {
        let (key, is_delete_list) = if key.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX) {
            (extract_key(&key, DELETE_FROM_PRIMITIVE_LIST_PREFIX)?, true)
        } else {
            (key, false)
        };
        if value.is_null() {
            original.remove(&key);
            return Ok(());
        }
        let Some(current) = original.remove(&key) else {
            if !is_delete_list {
                insert_from_patch(original, key, value);
            }
            return Ok(());
        };
        if go_kind(&current) != go_kind(&value) {
            if is_delete_list {
                original.insert(key, current);
            } else {
                insert_from_patch(original, key, value);
            }
            return Ok(());
        }
        let child = child_path(path, &key);
        let merged = match (current, value) {
            (Value::Object(current), Value::Object(patch)) => {
                let meta = self.meta(&child);
                Value::Object(self.merge_map_field(current, patch, &child, &meta)?)
            }
            (Value::Array(current), Value::Array(patch)) => {
                let meta = self.meta(&child);
                Value::Array(self.merge_list_field(
                    current,
                    patch,
                    &child,
                    &meta,
                    is_delete_list,
                )?)
            }
            (_, scalar) => scalar,
        };
        original.insert(key, merged);
        Ok(())
    }

    /// `mergeMapHandler`.
    fn merge_map_field(
        &self,
        current: Map<String, Value>,
        patch: Map<String, Value>,
        path: &[String],
        meta: &FieldMeta,
    ) -> Result<Map<String, Value>, PatchError> {
        if meta.strategy == Some(Strategy::Replace) {
            return Ok(patch);
        }
        self.merge_map(current, patch, path)
    }

    /// `mergeSliceHandler`: merge-strategy lists (and deletion lists) merge,
    /// every other list is replaced by the patch.
    fn merge_list_field(
        &self,
        current: Vec<Value>,
        patch: Vec<Value>,
        path: &[String],
        meta: &FieldMeta,
        is_delete_list: bool,
    ) -> Result<Vec<Value>, PatchError> {
        Ok(self
            .merge_list_field_with_view(current, patch, path, meta, is_delete_list)?
            .items)
    }

    /// [`Self::merge_list_field`], also returning how the caller's view of
    /// the live list looks afterwards (upstream mutates it in place).
    fn merge_list_field_with_view(
        &self,
        current: Vec<Value>,
        patch: Vec<Value>,
        path: &[String],
        meta: &FieldMeta,
        is_delete_list: bool,
    ) -> Result<Merged, PatchError> {
        if meta.strategy == Some(Strategy::Merge) || is_delete_list {
            return self.merge_slice(current, patch, path, meta.merge_key_str(), is_delete_list);
        }
        Ok(Merged {
            items: patch,
            live_view: current,
        })
    }

    /// `mergePatchIntoOriginal`: processes every `$setElementOrder/<field>`
    /// directive together with `<field>`, which is then removed from `patch`.
    fn apply_set_element_orders(
        &self,
        original: &mut Map<String, Value>,
        patch: &mut Map<String, Value>,
        path: &[String],
    ) -> Result<(), PatchError> {
        let keys: Vec<String> = patch
            .keys()
            .filter(|k| k.starts_with(SET_ELEMENT_ORDER_PREFIX))
            .cloned()
            .collect();
        for key in keys {
            let order = patch.remove(&key).unwrap_or(Value::Null);
            let Value::Array(order) = order else {
                return Err(bad_arg_type(SLICE_TYPE, &order));
            };
            let field = extract_key(&key, SET_ELEMENT_ORDER_PREFIX)?;
            if let Some(list) = self.ordered_list(original, patch, &field, &order, path)? {
                original.insert(field.clone(), Value::Array(list));
                patch.remove(&field);
            }
        }
        Ok(())
    }

    /// Merges `field` of `original` and `patch` (whichever exist) and sorts
    /// the result by `order`. `None` when neither side has the list.
    fn ordered_list(
        &self,
        original: &Map<String, Value>,
        patch: &Map<String, Value>,
        field: &str,
        order: &[Value],
        path: &[String],
    ) -> Result<Option<Vec<Value>>, PatchError> {
        let live = live_list(original.get(field))?;
        let patched = match patch.get(field) {
            None => None,
            Some(Value::Array(items)) => Some(items.clone()),
            Some(other) => return Err(bad_arg_type(SLICE_TYPE, other)),
        };
        let child = child_path(path, field);
        let meta = self.meta(&child);
        let merge_key = meta.merge_key_str();
        validate_patch_with_set_order(patched.as_deref().unwrap_or_default(), order, merge_key)?;
        let (merged, live) = match (live, &patched) {
            (Some(live), None) => (live.clone(), live),
            (None, Some(patched)) => match remove_directives(Value::Array(patched.clone())) {
                Some(Value::Array(items)) => (items, Vec::new()),
                _ => return Ok(None),
            },
            (Some(live), Some(patched)) => {
                let m =
                    self.merge_list_field_with_view(live, patched.clone(), &child, &meta, false)?;
                (m.items, m.live_view)
            }
            (None, None) => return Ok(None),
        };
        let (in_order, server_only) = if merge_key.is_empty() {
            partition_primitives(merged, order)?
        } else {
            partition_maps(merged, order, merge_key)?
        };
        let kind = slice_element_type(&[&live, patched.as_deref().unwrap_or_default()])?;
        normalize_element_order(in_order, server_only, order, &live, merge_key, kind).map(Some)
    }
}

/// The live list for `$setElementOrder`: absent, `null` and `[]` all count
/// as "no list"; a non-list is an error.
fn live_list(v: Option<&Value>) -> Result<Option<Vec<Value>>, PatchError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) if items.is_empty() => Ok(None),
        Some(Value::Array(items)) => Ok(Some(items.clone())),
        Some(other) => Err(bad_arg_type(SLICE_TYPE, other)),
    }
}

/// A patch value for a key the original lacks (or has with another type):
/// nulls are dropped and `$patch` maps removed, as upstream does.
fn insert_from_patch(original: &mut Map<String, Value>, key: String, mut value: Value) {
    discard_null_values(&mut value);
    if let Some(value) = remove_directives(value) {
        original.insert(key, value);
    }
}
