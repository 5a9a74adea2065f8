//! RFC 6902 JSON Patch with the exact semantics kube-apiserver 1.32 uses.
//!
//! kube-apiserver applies `application/json-patch+json` bodies with
//! `gopkg.in/evanphx/json-patch.v4` (v4.12.0), which deviates from the RFC in
//! ways clients depend on. The best known: `test` of a missing path against
//! `null` passes, which kube-runtime's finalizer helper relies on. Others,
//! all reproduced here on purpose:
//!
//! * `replace` of a missing key in an existing object adds it (only missing
//!   parents or out-of-range indices fail);
//! * `copy` from a missing key in an existing object copies `null`;
//! * negative array indices count from the end;
//! * `replace` of the whole document (`""`) with a non-container value is a
//!   no-op;
//! * a path without a leading `/` has its first segment ignored;
//! * a `value` of `null` and a missing `value` mean the same thing;
//! * `copy` operations may add at most [`MAX_COPY_BYTES`] in total (the
//!   apiserver's `JSONPatchMaxCopyBytes`).
//!
//! Decoding errors (not an array, an operation that is not an object, `op`,
//! `path` or `from` not a string) are [`PatchError::Malformed`] (400);
//! everything that fails while applying is [`PatchError::Failed`] (422).

use serde_json::{Map, Value};

use crate::error::PatchError;
use crate::gofmt::{go_json_len, quote};

/// kube-apiserver refuses JSON patches with more operations than this with
/// `413 Request Entity Too Large` ("The allowed maximum operations in a JSON
/// patch is 10000, got N"). Check [`JsonPatch::len`] before applying.
pub const MAX_OPERATIONS: usize = 10_000;

/// Limit on the total size (bytes of compact JSON) that `copy` operations in
/// one patch may add: kube-apiserver's default `JSONPatchMaxCopyBytes`.
pub const MAX_COPY_BYTES: usize = 3 * 1024 * 1024;

const MISSING: &str = "missing value";
const INVALID_INDEX: &str = "invalid index referenced";
const TEST_FAILED: &str = "test failed";

/// A decoded JSON patch: an ordered list of operations.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPatch {
    ops: Vec<Operation>,
}

/// One operation. Fields are optional because upstream only notices missing
/// ones while applying (and then answers 422, not 400).
#[derive(Debug, Clone, PartialEq)]
struct Operation {
    op: Option<String>,
    path: Option<String>,
    from: Option<String>,
    value: Value,
}

/// Applies a JSON patch given as a JSON value.
pub fn apply(doc: &Value, patch: &Value) -> Result<Value, PatchError> {
    JsonPatch::from_value(patch)?.apply(doc)
}

/// Applies a JSON patch given as raw request-body bytes.
pub fn apply_slice(doc: &Value, patch: &[u8]) -> Result<Value, PatchError> {
    JsonPatch::from_slice(patch)?.apply(doc)
}

impl JsonPatch {
    /// Decodes a patch from request-body bytes.
    pub fn from_slice(bytes: &[u8]) -> Result<Self, PatchError> {
        let value: Value = serde_json::from_slice(bytes)
            .map_err(|e| PatchError::Malformed(format!("error decoding patch: {e}")))?;
        Self::from_value(&value)
    }

    /// Decodes a patch from a JSON value (must be an array of objects).
    pub fn from_value(patch: &Value) -> Result<Self, PatchError> {
        let items = match patch {
            Value::Array(items) => items,
            Value::Null => return Ok(JsonPatch { ops: Vec::new() }),
            other => return Err(decode_error(other, "[]handlers.jsonPatchOp")),
        };
        let ops = items
            .iter()
            .map(Operation::decode)
            .collect::<Result<_, _>>()?;
        Ok(JsonPatch { ops })
    }

    /// Number of operations.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// True for `[]`.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Applies every operation in order to a copy of `doc`.
    pub fn apply(&self, doc: &Value) -> Result<Value, PatchError> {
        if !(doc.is_object() || doc.is_array()) {
            return Err(PatchError::Invalid(
                "json patch target is not a JSON object or array".into(),
            ));
        }
        let mut doc = doc.clone();
        let mut copied = 0usize;
        for op in &self.ops {
            op.apply(&mut doc, &mut copied)
                .map_err(PatchError::Failed)?;
        }
        Ok(doc)
    }
}

/// The error kube-apiserver's strict decoder reports for a value of the wrong
/// JSON type.
fn decode_error(found: &Value, target: &str) -> PatchError {
    PatchError::Malformed(format!(
        "error decoding patch: json: cannot unmarshal {} into Go value of type {target}",
        json_type_name(found)
    ))
}

fn json_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

impl Operation {
    fn decode(item: &Value) -> Result<Self, PatchError> {
        let empty = Map::new();
        let fields = match item {
            Value::Object(fields) => fields,
            // A `null` operation decodes upstream and fails on apply.
            Value::Null => &empty,
            other => return Err(decode_error(other, "handlers.jsonPatchOp")),
        };
        Ok(Operation {
            op: string_field(fields, "op")?,
            path: string_field(fields, "path")?,
            from: string_field(fields, "from")?,
            value: fields.get("value").cloned().unwrap_or(Value::Null),
        })
    }

    fn apply(&self, doc: &mut Value, copied: &mut usize) -> Result<(), String> {
        match self.op.as_deref() {
            Some("add") => self.add(doc),
            Some("remove") => self.remove(doc),
            Some("replace") => self.replace(doc),
            Some("move") => self.move_(doc),
            Some("test") => self.test(doc),
            Some("copy") => self.copy(doc, copied),
            Some(other) => Err(format!("Unexpected kind: {other}")),
            None => Err("Unexpected kind: unknown".into()),
        }
    }

    fn add(&self, doc: &mut Value) -> Result<(), String> {
        let path = self
            .path
            .as_deref()
            .ok_or_else(|| format!("add operation failed to decode path: {MISSING}"))?;
        let (con, key) = find_object(doc, path).ok_or_else(|| {
            format!("add operation does not apply: doc is missing path: \"{path}\": {MISSING}")
        })?;
        con_add(con, &key, self.value.clone())
            .map_err(|e| format!("error in add for path: '{path}': {e}"))
    }

    fn remove(&self, doc: &mut Value) -> Result<(), String> {
        let path = self
            .path
            .as_deref()
            .ok_or_else(|| format!("remove operation failed to decode path: {MISSING}"))?;
        let (con, key) = find_object(doc, path).ok_or_else(|| {
            format!("remove operation does not apply: doc is missing path: \"{path}\": {MISSING}")
        })?;
        con_remove(con, &key).map_err(|e| format!("error in remove for path: '{path}': {e}"))
    }

    fn replace(&self, doc: &mut Value) -> Result<(), String> {
        let path = self.path.as_deref().ok_or_else(|| {
            format!(
                "replace operation failed to decode path: operation missing path field: {MISSING}"
            )
        })?;
        if path.is_empty() {
            // v4.12.0 wraps a nil error here, so a non-container value is a no-op.
            if self.value.is_object() || self.value.is_array() {
                *doc = self.value.clone();
            }
            return Ok(());
        }
        let (con, key) = find_object(doc, path).ok_or_else(|| {
            format!("replace operation does not apply: doc is missing path: {path}: {MISSING}")
        })?;
        if con_get(con, &key).is_err() {
            return Err(format!(
                "replace operation does not apply: doc is missing key: {path}: {MISSING}"
            ));
        }
        con_set(con, &key, self.value.clone())
            .map_err(|e| format!("error in remove for path: '{path}': {e}"))
    }

    fn move_(&self, doc: &mut Value) -> Result<(), String> {
        let from = self.from.as_deref().ok_or_else(|| {
            format!(
                "move operation failed to decode from: operation, missing from field: {MISSING}"
            )
        })?;
        let (con, key) = find_object(doc, from).ok_or_else(|| {
            format!("move operation does not apply: doc is missing from path: {from}: {MISSING}")
        })?;
        let val =
            con_get(con, &key).map_err(|e| format!("error in move for path: '{key}': {e}"))?;
        con_remove(con, &key).map_err(|e| format!("error in move for path: '{key}': {e}"))?;
        let path = self.path.as_deref().ok_or_else(|| {
            format!("move operation failed to decode path: operation missing path field: {MISSING}")
        })?;
        let (con, key) = find_object(doc, path).ok_or_else(|| {
            format!(
                "move operation does not apply: doc is missing destination path: {path}: {MISSING}"
            )
        })?;
        con_add(con, &key, val.unwrap_or(Value::Null))
            .map_err(|e| format!("error in move for path: '{path}': {e}"))
    }

    fn test(&self, doc: &mut Value) -> Result<(), String> {
        let path = self.path.as_deref().ok_or_else(|| {
            format!("test operation failed to decode path: operation missing path field: {MISSING}")
        })?;
        let failed = || format!("testing value {path} failed: {TEST_FAILED}");
        if path.is_empty() {
            return if !self.value.is_null() && *doc == self.value {
                Ok(())
            } else {
                Err(failed())
            };
        }
        let (con, key) = find_object(doc, path).ok_or_else(|| {
            format!("test operation does not apply: is missing path: {path}: {MISSING}")
        })?;
        let current =
            con_get(con, &key).map_err(|e| format!("error in test for path: '{path}': {e}"))?;
        // evanphx: a missing (or null) value matches a null/absent test value.
        match current {
            None if self.value.is_null() => Ok(()),
            Some(v) if v == self.value => Ok(()),
            _ => Err(failed()),
        }
    }

    fn copy(&self, doc: &mut Value, copied: &mut usize) -> Result<(), String> {
        let from = self.from.as_deref().ok_or_else(|| {
            format!(
                "copy operation failed to decode from: operation, missing from field: {MISSING}"
            )
        })?;
        let (con, key) = find_object(doc, from).ok_or_else(|| {
            format!("copy operation does not apply: doc is missing from path: {from}: {MISSING}")
        })?;
        let val =
            con_get(con, &key).map_err(|e| format!("error in copy for from: '{from}': {e}"))?;
        let path = self
            .path
            .as_deref()
            .ok_or_else(|| format!("copy operation failed to decode path: {MISSING}"))?;
        let (con, key) = find_object(doc, path).ok_or_else(|| {
            format!(
                "copy operation does not apply: doc is missing destination path: {path}: {MISSING}"
            )
        })?;
        *copied += val.as_ref().map_or(0, go_json_len);
        if *copied > MAX_COPY_BYTES {
            return Err(format!(
                "Unable to complete the copy, the accumulated size increase of copy is {copied}, exceeding the limit {MAX_COPY_BYTES}"
            ));
        }
        con_add(con, &key, val.unwrap_or(Value::Null))
            .map_err(|e| format!("error while adding value during copy: {e}"))
    }
}

/// Reads an optional string field; `null` counts as absent, any other
/// non-string is a decoding error (400) as with kube-apiserver's strict
/// decoder.
fn string_field(fields: &Map<String, Value>, name: &str) -> Result<Option<String>, PatchError> {
    match fields.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(PatchError::Malformed(format!(
            "error decoding patch: json: cannot unmarshal {} into Go struct field jsonPatchOp.{name} of type string",
            json_type_name(other)
        ))),
    }
}

/// RFC 6901 unescaping as Go's `strings.NewReplacer("~1", "/", "~0", "~")`
/// does it (unknown escapes are left alone).
fn decode_key(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(pos) = rest.find('~') {
        out.push_str(&rest[..pos]);
        let tail = &rest[pos..];
        rest = if let Some(after) = tail.strip_prefix("~1") {
            out.push('/');
            after
        } else if let Some(after) = tail.strip_prefix("~0") {
            out.push('~');
            after
        } else {
            out.push('~');
            &tail[1..]
        };
    }
    out.push_str(rest);
    out
}

/// evanphx's `findObject`: walks all but the last segment and returns the
/// container (object or array) holding the target plus the decoded last key.
/// Any miss on the way (absent, null, scalar, bad index) yields `None`.
fn find_object<'a>(doc: &'a mut Value, path: &str) -> Option<(&'a mut Value, String)> {
    let segments: Vec<&str> = path.split('/').collect();
    if segments.len() < 2 {
        return None;
    }
    let (last, parents) = segments[1..].split_last()?;
    let mut current = doc;
    for segment in parents {
        let next = child_mut(current, &decode_key(segment))?;
        if !(next.is_object() || next.is_array()) {
            return None;
        }
        current = next;
    }
    Some((current, decode_key(last)))
}

fn child_mut<'a>(container: &'a mut Value, key: &str) -> Option<&'a mut Value> {
    match container {
        Value::Object(map) => map.get_mut(key).filter(|v| !v.is_null()),
        Value::Array(items) => {
            let idx = existing_index(key, items.len()).ok()?;
            items.get_mut(idx)
        }
        _ => None,
    }
}

/// Go's `strconv.Atoi`, with its error text.
fn atoi(key: &str) -> Result<i64, String> {
    key.parse::<i64>().map_err(|e| {
        let reason = match e.kind() {
            std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
                "value out of range"
            }
            _ => "invalid syntax",
        };
        format!("strconv.Atoi: parsing {}: {reason}", quote(key))
    })
}

fn invalid_index(idx: i64) -> String {
    format!("Unable to access invalid index: {idx}: {INVALID_INDEX}")
}

/// Resolves an index that must name an existing element (negative counts
/// from the end), as `partialArray.get` does.
fn existing_index(key: &str, len: usize) -> Result<usize, String> {
    let idx = atoi(key)?;
    let len = len as i64;
    let resolved = if idx < 0 {
        if idx < -len {
            return Err(invalid_index(idx));
        }
        idx + len
    } else {
        idx
    };
    if resolved >= len {
        return Err(invalid_index(idx));
    }
    Ok(resolved as usize)
}

/// The element at `key`; `Ok(None)` for an absent object key or a null.
fn con_get(con: &Value, key: &str) -> Result<Option<Value>, String> {
    let found = match con {
        Value::Object(map) => map.get(key),
        Value::Array(items) => items.get(existing_index(key, items.len())?),
        _ => None,
    };
    Ok(found.filter(|v| !v.is_null()).cloned())
}

fn con_set(con: &mut Value, key: &str, val: Value) -> Result<(), String> {
    match con {
        Value::Object(map) => {
            map.insert(key.to_string(), val);
        }
        Value::Array(items) => {
            let idx = existing_index(key, items.len())?;
            items[idx] = val;
        }
        _ => {}
    }
    Ok(())
}

fn con_add(con: &mut Value, key: &str, val: Value) -> Result<(), String> {
    match con {
        Value::Object(map) => {
            map.insert(key.to_string(), val);
            Ok(())
        }
        Value::Array(items) => array_add(items, key, val),
        _ => Ok(()),
    }
}

fn array_add(items: &mut Vec<Value>, key: &str, val: Value) -> Result<(), String> {
    if key == "-" {
        items.push(val);
        return Ok(());
    }
    let idx = atoi(key).map_err(|e| format!("value was not a proper array index: '{key}': {e}"))?;
    let size = items.len() as i64 + 1;
    if idx >= size || idx < -size {
        return Err(invalid_index(idx));
    }
    let at = if idx < 0 { idx + size } else { idx };
    items.insert(at as usize, val);
    Ok(())
}

fn con_remove(con: &mut Value, key: &str) -> Result<(), String> {
    match con {
        Value::Object(map) => map
            .remove(key)
            .map(drop)
            .ok_or_else(|| format!("Unable to remove nonexistent key: {key}: {MISSING}")),
        Value::Array(items) => {
            let idx = existing_index(key, items.len())?;
            items.remove(idx);
            Ok(())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_key_handles_escapes_like_go() {
        assert_eq!(decode_key("a~1b"), "a/b");
        assert_eq!(decode_key("a~0b"), "a~b");
        assert_eq!(decode_key("~01"), "~1");
        assert_eq!(decode_key("~2"), "~2");
        assert_eq!(decode_key("x~"), "x~");
    }

    #[test]
    fn atoi_errors_read_like_go() {
        assert_eq!(atoi("+3"), Ok(3));
        assert_eq!(
            atoi("x").expect_err("not a number"),
            "strconv.Atoi: parsing \"x\": invalid syntax"
        );
        assert_eq!(
            atoi("99999999999999999999").expect_err("too big"),
            "strconv.Atoi: parsing \"99999999999999999999\": value out of range"
        );
    }
}
