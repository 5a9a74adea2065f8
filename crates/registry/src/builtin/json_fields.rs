//! Reading the JSON of built-in objects for validation: members of any
//! shape (absent and `null` alike), Go's semantic equality of decoded
//! values, and the immutable-field check. A leaf module: the validation
//! modules of each API group use it, and it uses none of them.

use apimachinery::validation::FIELD_IMMUTABLE_ERROR_MSG;
use apimachinery::{ErrorList, FieldError, FieldPath};
use serde_json::{Map, Value};

pub(crate) fn field<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

pub(crate) fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

pub(crate) fn int_of(v: &Value, key: &str) -> Option<i64> {
    v.get(key).and_then(Value::as_i64)
}

pub(crate) fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

pub(crate) fn object<'a>(v: &'a Value, key: &str) -> Option<&'a Map<String, Value>> {
    v.get(key).and_then(Value::as_object)
}

pub(crate) fn spec_of(obj: &Value) -> &Value {
    static EMPTY: Value = Value::Null;
    obj.get("spec").unwrap_or(&EMPTY)
}

/// Go's `reflect.DeepEqual` as `apiequality.Semantic` applies it to decoded
/// objects: absent, `null` and empty values (Go's zero values, nil and empty
/// slices and maps) compare equal.
pub(crate) fn semantic_eq(a: Option<&Value>, b: Option<&Value>) -> bool {
    normalized(a) == normalized(b)
}

pub(crate) fn normalized(v: Option<&Value>) -> Value {
    match v {
        Some(Value::Object(map)) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), normalized(Some(v))))
                .filter(|(_, v)| !is_zero(v))
                .collect(),
        ),
        Some(Value::Array(items)) => {
            Value::Array(items.iter().map(|v| normalized(Some(v))).collect())
        }
        Some(other) if !is_zero(other) => other.clone(),
        _ => Value::Null,
    }
}

pub(crate) fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
    }
}

/// `ValidateImmutableField`: `field is immutable` with the new value.
pub(crate) fn immutable(
    new: &Value,
    old: &Value,
    key: &str,
    path: &FieldPath,
    errs: &mut ErrorList,
) {
    if !semantic_eq(new.get(key), old.get(key)) {
        let value = new.get(key).cloned().unwrap_or(Value::Null);
        errs.push(FieldError::invalid(
            &path.child(key),
            value,
            FIELD_IMMUTABLE_ERROR_MSG,
        ));
    }
}
