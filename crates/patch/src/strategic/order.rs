//! List ordering: `$setElementOrder` and the order of merged lists.
//!
//! After merging, upstream splits a list into the items the patch mentions
//! and the items only the server had, sorts each by its reference order
//! (patch or `$setElementOrder` list for the first, the live list for the
//! second) and interleaves them. The precedence is `$setElementOrder` >
//! order in the patch > order in the live object; items the patch adds that
//! the live object never had go first unless `$setElementOrder` places them.
//! See the "preserve order in strategic merge patch" design proposal.

use serde_json::{Map, Value};

use super::directives::{DELETE_DIRECTIVE, DIRECTIVE_MARKER, contains_directive_marker};
use super::errors::{MAP_TYPE, bad_arg_type, no_merge_key, not_a_map_at, unhashable};
use crate::error::PatchError;
use crate::gofmt::{GoKind, sprint_list};
use crate::gosort::slice_stable;

/// `index`: position of `item` in `list`, comparing merge-key values for maps
/// and whole values otherwise.
fn index_of(list: &[Value], item: &Value, merge_key: &str, kind: GoKind) -> Option<usize> {
    if kind == GoKind::Map {
        let wanted = merge_key_of(item, merge_key);
        list.iter()
            .position(|v| merge_key_of(v, merge_key) == wanted)
    } else {
        list.iter().position(|v| v == item)
    }
}

/// The merge-key value of a map item (`None` plays Go's `nil`).
fn merge_key_of<'a>(item: &'a Value, merge_key: &str) -> Option<&'a Value> {
    item.as_object().and_then(|m| m.get(merge_key))
}

/// `normalizeElementOrder`: sorts patch items by `patch_order` and
/// server-only items by `server_order`, then interleaves them.
pub(crate) fn normalize_element_order(
    patch: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
    kind: GoKind,
) -> Result<Vec<Value>, PatchError> {
    let patch = normalize_slice_order(patch, patch_order, merge_key, kind)?;
    let server_only = normalize_slice_order(server_only, server_order, merge_key, kind)?;
    Ok(merge_sorted(
        server_only,
        patch,
        server_order,
        merge_key,
        kind,
    ))
}

/// `normalizeSliceOrder`: stable sort by position in `order`; for maps,
/// `$patch: delete` items are moved to the end.
fn normalize_slice_order(
    to_sort: Vec<Value>,
    order: &[Value],
    merge_key: &str,
    kind: GoKind,
) -> Result<Vec<Value>, PatchError> {
    let (to_sort, to_delete) = if kind == GoKind::Map {
        validate_merge_key_in_lists(merge_key, &[&to_sort, order])?;
        extract_to_delete_items(to_sort)?
    } else {
        (to_sort, Vec::new())
    };
    let mut keyed: Vec<(Option<usize>, Value)> = to_sort
        .into_iter()
        .map(|v| (index_of(order, &v, merge_key, kind), v))
        .collect();
    // Upstream's comparator: known-before-known by position, otherwise "less".
    slice_stable(&mut keyed, |a, b| match (a.0, b.0) {
        (Some(ia), Some(ib)) => ia < ib,
        _ => true,
    });
    let mut sorted: Vec<Value> = keyed.into_iter().map(|(_, v)| v).collect();
    sorted.extend(to_delete);
    Ok(sorted)
}

/// `mergeSortedSlice`: inserts each `left` (server-only) item before the
/// first `right` (patch) item it precedes in `server_order`; when either is
/// unknown to the server order, the patch item goes first.
fn merge_sorted(
    left: Vec<Value>,
    right: Vec<Value>,
    server_order: &[Value],
    merge_key: &str,
    kind: GoKind,
) -> Vec<Value> {
    let position = |v: &Value| index_of(server_order, v, merge_key, kind);
    let left: Vec<(Option<usize>, Value)> = left.into_iter().map(|v| (position(&v), v)).collect();
    let right: Vec<(Option<usize>, Value)> = right.into_iter().map(|v| (position(&v), v)).collect();
    let mut out = Vec::with_capacity(left.len() + right.len());
    let mut left = left.into_iter().peekable();
    let mut right = right.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some((Some(l), _)), Some((Some(r), _))) => l < r,
            _ => false,
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next.map(|(_, v)| v));
    }
    out
}

/// Every item of every list is a map carrying the merge key.
fn validate_merge_key_in_lists(merge_key: &str, lists: &[&[Value]]) -> Result<(), PatchError> {
    for item in lists.iter().flat_map(|l| l.iter()) {
        let m = item
            .as_object()
            .ok_or_else(|| bad_arg_type(MAP_TYPE, item))?;
        if !m.contains_key(merge_key) {
            return Err(no_merge_key(m, merge_key));
        }
    }
    Ok(())
}

/// Splits a list of maps into (kept, `$patch: delete` items).
pub(crate) fn extract_to_delete_items(
    list: Vec<Value>,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut keep = Vec::new();
    let mut delete = Vec::new();
    for v in list {
        let m = v.as_object().ok_or_else(|| bad_arg_type(MAP_TYPE, &v))?;
        if m.get(DIRECTIVE_MARKER).and_then(Value::as_str) == Some(DELETE_DIRECTIVE) {
            delete.push(v);
        } else {
            keep.push(v);
        }
    }
    Ok((keep, delete))
}

/// `findMapInSliceBasedOnKeyValue`: index of the first map whose
/// `key` equals `value`; a non-map before the match is an error.
pub(crate) fn find_map_by_key(
    list: &[Value],
    key: &str,
    value: &Value,
) -> Result<Option<usize>, PatchError> {
    for (i, v) in list.iter().enumerate() {
        let m = v.as_object().ok_or_else(|| not_a_map_at(i))?;
        if m.get(key) == Some(value) {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// Splits scalars into (present in `by`, absent from `by`). Upstream hashes
/// the values, which panics for maps and lists.
pub(crate) fn partition_primitives(
    items: Vec<Value>,
    by: &[Value],
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    if let Some(bad) = items
        .iter()
        .chain(by)
        .find(|v| v.is_object() || v.is_array())
    {
        return Err(unhashable(bad));
    }
    Ok(items.into_iter().partition(|v| by.contains(v)))
}

/// Splits maps into (merge key present in `by`, absent from `by`).
pub(crate) fn partition_maps(
    items: Vec<Value>,
    by: &[Value],
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut present = Vec::new();
    let mut absent = Vec::new();
    for v in items {
        let m = v.as_object().ok_or_else(|| bad_arg_type(MAP_TYPE, &v))?;
        let key = m.get(merge_key).ok_or_else(|| no_merge_key(m, merge_key))?;
        if find_map_by_key(by, merge_key, key)?.is_some() {
            present.push(v);
        } else {
            absent.push(v);
        }
    }
    Ok((present, absent))
}

/// `validatePatchWithSetOrderList`: the patch list's items (ignoring
/// deletions and directive items) must appear in `$setElementOrder` in the
/// same relative order.
pub(crate) fn validate_patch_with_set_order(
    patch_list: &[Value],
    order: &[Value],
    merge_key: &str,
) -> Result<(), PatchError> {
    if order.is_empty() || patch_list.is_empty() {
        return Ok(());
    }
    let items = if merge_key.is_empty() {
        patch_list.to_vec()
    } else {
        extract_to_delete_items(patch_list.to_vec())?.0
    };
    let (mut pi, mut oi) = (0, 0);
    while pi < items.len() && oi < order.len() {
        if contains_directive_marker(&items[pi]) {
            pi += 1;
            continue;
        }
        if merge_key_value_equal(&items[pi], &order[oi], merge_key)? {
            pi += 1;
        }
        oi += 1;
    }
    if pi < items.len() && oi >= order.len() {
        return Err(PatchError::Invalid(format!(
            "The order in patch list:\n{}\n doesn't match $setElementOrder list:\n{}\n",
            sprint_list(patch_list),
            sprint_list(order)
        )));
    }
    Ok(())
}

fn merge_key_value_equal(left: &Value, right: &Value, merge_key: &str) -> Result<bool, PatchError> {
    if merge_key.is_empty() {
        return Ok(left == right);
    }
    let l: &Map<String, Value> = left
        .as_object()
        .ok_or_else(|| bad_arg_type(MAP_TYPE, left))?;
    let r = right
        .as_object()
        .ok_or_else(|| bad_arg_type(MAP_TYPE, right))?;
    let lv = l.get(merge_key).ok_or_else(|| no_merge_key(l, merge_key))?;
    let rv = r.get(merge_key).ok_or_else(|| no_merge_key(r, merge_key))?;
    Ok(lv == rv)
}
