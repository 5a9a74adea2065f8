//! core/v1 Secret: `stringData` is folded into base64 `data`, `type` defaults to Opaque.

use apimachinery::DynamicObject;
use apimachinery::validation::is_config_map_key;
use apimachinery::{ErrorList, FieldError, FieldPath};
use base64::Engine;
use serde_json::{Map, Value, json};

use super::configmaps::{check_immutable, immutable_unchanged};
use crate::resource::{Prepared, Strategy};

const MAX_SECRET_BYTES: usize = 1024 * 1024;
/// The type of the Secrets the service-account token controller fills.
const SERVICE_ACCOUNT_TOKEN: &str = "kubernetes.io/service-account-token";
/// The annotation naming such a Secret's ServiceAccount.
const SERVICE_ACCOUNT_NAME: &str = "kubernetes.io/service-account.name";

pub struct Secrets;

/// Move `stringData` into `data` (write-only field, as upstream).
fn fold_string_data(obj: &mut Value) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    let Some(Value::Object(strings)) = map.remove("stringData") else {
        return;
    };
    let data = map
        .entry("data")
        .or_insert_with(|| Value::Object(Map::new()));
    if !data.is_object() {
        *data = Value::Object(Map::new());
    }
    if let Some(data) = data.as_object_mut() {
        for (k, v) in strings {
            let s = v.as_str().unwrap_or_default();
            data.insert(
                k,
                json!(base64::engine::general_purpose::STANDARD.encode(s)),
            );
        }
    }
}

fn default_type(obj: &mut Value) {
    if obj
        .get("type")
        .is_none_or(|t| t.as_str().is_none_or(str::is_empty))
        && let Some(map) = obj.as_object_mut()
    {
        map.insert("type".into(), json!("Opaque"));
    }
}

impl Strategy for Secrets {
    /// Where upstream decodes a body (its conversion folds `stringData`,
    /// `SetDefaults_Secret` sets the type): admission sees, and the writer's
    /// managedFields credit, `data` and `type`.
    fn default(&self, obj: &mut DynamicObject) {
        fold_string_data(obj);
        default_type(obj);
    }

    fn prepare_create(&self, obj: &mut DynamicObject) -> Prepared {
        fold_string_data(obj);
        default_type(obj);
        Prepared::BodyChanged
    }

    fn prepare_update(&self, new: &mut DynamicObject, _old: &DynamicObject) {
        fold_string_data(new);
        default_type(new);
    }

    fn validate(&self, obj: &DynamicObject) -> ErrorList {
        let mut errs = Vec::new();
        let path = FieldPath::new("data");
        let mut total = 0;
        for (key, value) in obj
            .get("data")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            for msg in is_config_map_key(key) {
                errs.push(FieldError::invalid(&path.key(key), json!(key), &msg));
            }
            let decoded = value
                .as_str()
                .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok());
            match decoded {
                Some(bytes) => total += bytes.len(),
                None => errs.push(FieldError::invalid(
                    &path.key(key),
                    Value::String("<secret contents redacted>".into()),
                    "must be base64-encoded bytes",
                )),
            }
        }
        if total > MAX_SECRET_BYTES {
            errs.push(FieldError::too_long(&path, MAX_SECRET_BYTES));
        }
        // The token controller adds the token and the account's uid later; the
        // account's name it needs from the start.
        if obj.get("type").and_then(Value::as_str) == Some(SERVICE_ACCOUNT_TOKEN)
            && obj
                .metadata
                .annotations
                .get(SERVICE_ACCOUNT_NAME)
                .is_none_or(String::is_empty)
        {
            errs.push(FieldError::required(
                &FieldPath::new("metadata")
                    .child("annotations")
                    .key(SERVICE_ACCOUNT_NAME),
                "",
            ));
        }
        errs.extend(check_immutable(obj));
        errs
    }

    fn validate_update(&self, new: &DynamicObject, old: &DynamicObject) -> ErrorList {
        let mut errs = self.validate(new);
        if new.get("type") != old.get("type") {
            errs.push(FieldError::invalid(
                &FieldPath::new("type"),
                new.get("type").cloned().unwrap_or(Value::Null),
                "field is immutable",
            ));
        }
        errs.extend(immutable_unchanged(new, old, &["data"]));
        errs
    }

    fn field(&self, obj: &Value, field: &str) -> Option<String> {
        super::field_labels::value("", "Secret", obj, field)
    }

    fn row(&self, obj: &Value) -> Vec<Value> {
        let count = obj
            .get("data")
            .and_then(Value::as_object)
            .map_or(0, |m| m.len());
        vec![obj.get("type").cloned().unwrap_or(json!("")), json!(count)]
    }
}
