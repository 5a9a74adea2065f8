//! core/v1 ConfigMap.

use apimachinery::DynamicObject;
use apimachinery::validation::is_config_map_key;
use apimachinery::{ErrorList, FieldError, FieldPath};
use serde_json::{Value, json};

use crate::resource::Strategy;

/// Upstream's limit on the total size of a ConfigMap's data.
const MAX_CONFIG_MAP_BYTES: usize = 1024 * 1024;

pub struct ConfigMaps;

impl Strategy for ConfigMaps {
    fn validate(&self, obj: &DynamicObject) -> ErrorList {
        let mut errs = Vec::new();
        let mut total = 0;
        let data = obj.get("data").and_then(Value::as_object);
        let binary = obj.get("binaryData").and_then(Value::as_object);
        for (field, map) in [("data", data), ("binaryData", binary)] {
            let path = || FieldPath::new(field);
            for (key, value) in map.into_iter().flatten() {
                for msg in is_config_map_key(key) {
                    errs.push(FieldError::invalid(&path(), json!(key), &msg));
                }
                total += key.len() + value.as_str().map_or(0, str::len);
                if field == "binaryData" && data.is_some_and(|d| d.contains_key(key)) {
                    errs.push(FieldError::invalid(
                        &path(),
                        json!(key),
                        "duplicate of key present in data",
                    ));
                }
            }
        }
        if total > MAX_CONFIG_MAP_BYTES {
            errs.push(FieldError::too_long(
                &FieldPath::root(),
                MAX_CONFIG_MAP_BYTES,
            ));
        }
        errs.extend(check_immutable(obj));
        errs
    }

    fn validate_update(&self, new: &DynamicObject, old: &DynamicObject) -> ErrorList {
        let mut errs = self.validate(new);
        errs.extend(immutable_unchanged(new, old, &["data", "binaryData"]));
        errs
    }

    fn row(&self, obj: &Value) -> Vec<Value> {
        let count = |f: &str| obj.get(f).and_then(Value::as_object).map_or(0, |m| m.len());
        vec![json!(count("data") + count("binaryData"))]
    }
}

/// `immutable` must be a bool when present.
pub fn check_immutable(obj: &Value) -> ErrorList {
    match obj.get("immutable") {
        None | Some(Value::Null) | Some(Value::Bool(_)) => Vec::new(),
        Some(v) => vec![FieldError::type_invalid(
            &FieldPath::new("immutable"),
            v.clone(),
            "must be a boolean",
        )],
    }
}

/// For `immutable: true` objects: the data fields may not change, nor may immutable be unset.
pub fn immutable_unchanged(new: &Value, old: &Value, fields: &[&str]) -> ErrorList {
    if old.get("immutable") != Some(&Value::Bool(true)) {
        return Vec::new();
    }
    let mut errs = Vec::new();
    if new.get("immutable") != Some(&Value::Bool(true)) {
        errs.push(FieldError::forbidden(
            &FieldPath::new("immutable"),
            "field is immutable when `immutable` is set",
        ));
    }
    if fields.iter().any(|f| new.get(*f) != old.get(*f)) {
        errs.push(FieldError::forbidden(
            &FieldPath::new("data"),
            "field is immutable when `immutable` is set",
        ));
    }
    errs
}
