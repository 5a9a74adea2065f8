//! Merging lists whose field has `patchStrategy: merge`.
//!
//! Lists of scalars become set unions (or lose the items of a
//! `$deleteFromPrimitiveList`); lists of maps are merged item by item on the
//! merge key, honouring `$patch: delete` / `$patch: replace` items. The
//! result is then reordered (see `order.rs`).

use serde_json::{Map, Value};

use super::Walker;
use super::directives::{DELETE_DIRECTIVE, DIRECTIVE_MARKER, MERGE_DIRECTIVE, REPLACE_DIRECTIVE};
use super::errors::{NO_LIST_OF_LISTS, bad_patch_type, no_merge_key};
use super::order::{
    find_map_by_key, normalize_element_order, partition_maps, partition_primitives,
};
use crate::error::PatchError;
use crate::gofmt::{GoKind, go_kind, sprint_list};

/// A Go slice over the live list's backing array.
///
/// Upstream deletes (`append(s[:i], s[i+1:]...)`) and appends in place, and
/// `$setElementOrder` later reads the *caller's* view of the live list — the
/// first `len` slots of that same array — as the server order. Modelling the
/// shared array keeps the resulting item order identical to upstream's.
struct GoSlice {
    buf: Vec<Value>,
    len: usize,
}

impl GoSlice {
    fn new(items: Vec<Value>) -> Self {
        let len = items.len();
        GoSlice { buf: items, len }
    }

    fn items(&self) -> &[Value] {
        &self.buf[..self.len]
    }

    /// Shifts the tail left; the last slot keeps its old value, as in Go.
    fn remove(&mut self, i: usize) {
        for p in i..self.len - 1 {
            self.buf[p] = self.buf[p + 1].clone();
        }
        self.len -= 1;
    }

    fn push(&mut self, v: Value) {
        if self.len < self.buf.len() {
            self.buf[self.len] = v;
        } else {
            self.buf.push(v);
        }
        self.len += 1;
    }
}

/// A merged list plus the live list as the caller's slice header would now
/// see it (see [`GoSlice`]).
pub(super) struct Merged {
    pub(super) items: Vec<Value>,
    pub(super) live_view: Vec<Value>,
}

impl Walker<'_> {
    /// `mergeSlice`: merges `patch` into `original` for the list at `path`.
    pub(super) fn merge_slice(
        &self,
        original: Vec<Value>,
        patch: Vec<Value>,
        path: &[String],
        merge_key: &str,
        is_delete_list: bool,
    ) -> Result<Merged, PatchError> {
        if original.is_empty() && patch.is_empty() {
            return Ok(Merged {
                items: Vec::new(),
                live_view: original,
            });
        }
        let kind = slice_element_type(&[&original, &patch])?;
        if kind != GoKind::Map {
            let items = if is_delete_list {
                delete_from_slice(original.clone(), &patch)
            } else {
                let merged = deduplicate_scalars([original.as_slice(), patch.as_slice()].concat());
                order_merged(merged, &patch, &original, merge_key, kind)?
            };
            return Ok(Merged {
                items,
                live_view: original,
            });
        }
        if merge_key.is_empty() {
            return Err(PatchError::Invalid(
                "cannot merge lists without merge key for struct".into(),
            ));
        }
        let view_len = original.len();
        let mut live = GoSlice::new(original);
        let (replaced, patch) = apply_special_elements(&mut live, patch, merge_key)?;
        let items = match replaced {
            // `$patch: replace`: the plain patch items are the whole list.
            Some(items) => order_merged(items.clone(), &[], &items, merge_key, kind)?,
            None => {
                let server_order = live.items().to_vec();
                self.merge_by_key(&mut live, &patch, merge_key, path)?;
                let merged = live.items().to_vec();
                order_merged(merged, &patch, &server_order, merge_key, kind)?
            }
        };
        live.buf.truncate(view_len);
        Ok(Merged {
            items,
            live_view: live.buf,
        })
    }

    /// `mergeSliceWithoutSpecialElements`: each patch item merges into the
    /// original item with the same merge-key value, or is appended.
    fn merge_by_key(
        &self,
        live: &mut GoSlice,
        patch: &[Value],
        merge_key: &str,
        path: &[String],
    ) -> Result<(), PatchError> {
        for item in patch {
            let Value::Object(item) = item else {
                continue;
            };
            let key = item
                .get(merge_key)
                .ok_or_else(|| no_merge_key(item, merge_key))?;
            match find_map_by_key(live.items(), merge_key, key)? {
                Some(i) => {
                    let current = take_map(&mut live.buf[i]);
                    live.buf[i] = Value::Object(self.merge_map(current, item.clone(), path)?);
                }
                None => live.push(Value::Object(item.clone())),
            }
        }
        Ok(())
    }
}

fn take_map(v: &mut Value) -> Map<String, Value> {
    match v.take() {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// Partitions the merged list by presence in the patch and restores order.
fn order_merged(
    merged: Vec<Value>,
    patch: &[Value],
    original: &[Value],
    merge_key: &str,
    kind: GoKind,
) -> Result<Vec<Value>, PatchError> {
    let (patch_items, server_only) = if merge_key.is_empty() {
        partition_primitives(merged, patch)?
    } else {
        partition_maps(merged, patch, merge_key)?
    };
    normalize_element_order(patch_items, server_only, patch, original, merge_key, kind)
}

/// `mergeSliceWithSpecialElements`: applies `$patch: delete` items to the
/// live list; with a `$patch: replace` item the patch's plain items become
/// the whole list (`Some`). Returns that and the patch without directives.
fn apply_special_elements(
    live: &mut GoSlice,
    patch: Vec<Value>,
    merge_key: &str,
) -> Result<(Option<Vec<Value>>, Vec<Value>), PatchError> {
    let mut plain = Vec::new();
    let mut replace = false;
    for v in patch {
        let Some(m) = v.as_object() else {
            plain.push(v);
            continue;
        };
        let Some(directive) = m.get(DIRECTIVE_MARKER) else {
            plain.push(v);
            continue;
        };
        match directive.as_str() {
            Some(DELETE_DIRECTIVE) => {
                let key = m.get(merge_key).ok_or_else(|| no_merge_key(m, merge_key))?;
                while let Some(i) = find_map_by_key(live.items(), merge_key, key)? {
                    live.remove(i);
                }
            }
            Some(REPLACE_DIRECTIVE) => replace = true,
            Some(MERGE_DIRECTIVE) => {
                return Err(PatchError::Invalid(
                    "merging lists cannot yet be specified in the patch".into(),
                ));
            }
            _ => return Err(bad_patch_type(directive, m)),
        }
    }
    if replace {
        Ok((Some(plain), Vec::new()))
    } else {
        Ok((None, plain))
    }
}

/// `deleteFromSlice`: drops every scalar listed in `to_delete`.
fn delete_from_slice(current: Vec<Value>, to_delete: &[Value]) -> Vec<Value> {
    current
        .into_iter()
        .filter(|v| !to_delete.contains(v))
        .collect()
}

/// Upstream's in-place `deduplicateScalars` (it swaps the last element into
/// each duplicate's slot, so the order matters for ties).
fn deduplicate_scalars(mut s: Vec<Value>) -> Vec<Value> {
    if s.is_empty() {
        return s;
    }
    let mut length = s.len() - 1;
    let mut i = 0;
    while i < length {
        let mut j = i + 1;
        while j <= length {
            if s[i] == s[j] {
                s[j] = s[length].clone();
                s.truncate(length);
                length -= 1;
            } else {
                j += 1;
            }
        }
        i += 1;
    }
    s
}

/// `sliceElementType`: the common element type of the lists; lists of lists,
/// mixed types and all-empty inputs are errors.
pub(super) fn slice_element_type(slices: &[&[Value]]) -> Result<GoKind, PatchError> {
    let mut kind = None;
    for v in slices.iter().flat_map(|s| s.iter()) {
        let current = go_kind(v);
        match kind {
            None if current == GoKind::Slice => {
                return Err(PatchError::Failed(NO_LIST_OF_LISTS.into()));
            }
            None if current != GoKind::Nil => kind = Some(current),
            Some(k) if k == current => {}
            _ => {
                let lists: Vec<String> = slices.iter().map(|s| sprint_list(s)).collect();
                return Err(PatchError::Invalid(format!(
                    "list element types are not identical: [{}]",
                    lists.join(" ")
                )));
            }
        }
    }
    kind.ok_or_else(|| PatchError::Invalid("no elements in any of the given slices".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vals(v: Value) -> Vec<Value> {
        v.as_array().cloned().unwrap_or_default()
    }

    #[test]
    fn dedupe_matches_upstream_swapping() {
        assert_eq!(
            deduplicate_scalars(vals(json!(["a", "a", "b", "c"]))),
            vals(json!(["a", "c", "b"]))
        );
        assert_eq!(
            deduplicate_scalars(vals(json!(["a", "b", "a"]))),
            vals(json!(["a", "b"]))
        );
        assert_eq!(
            deduplicate_scalars(vals(json!(["x", "x", "x"]))),
            vals(json!(["x"]))
        );
        assert_eq!(deduplicate_scalars(vec![]), Vec::<Value>::new());
    }

    #[test]
    fn element_type_rules() {
        let a = vals(json!([1, 2]));
        let b = vals(json!(["x"]));
        assert_eq!(slice_element_type(&[&a, &[]]), Ok(GoKind::Int));
        assert!(
            matches!(slice_element_type(&[&a, &b]), Err(PatchError::Invalid(m)) if m == "list element types are not identical: [[1 2] [x]]")
        );
        assert!(matches!(
            slice_element_type(&[&vals(json!([[1]]))]),
            Err(PatchError::Failed(_))
        ));
        assert!(slice_element_type(&[&[], &[]]).is_err());
    }
}
