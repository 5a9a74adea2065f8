//! The `scale` subresource's rules: where a CRD may point its scale paths, and
//! what a custom resource must hold there (upstream's
//! `ValidateCustomResourceDefinitionSubresources` and `ValidateScaleSpec/Status`).

use apimachinery::{ErrorList, FieldError, FieldPath};
use serde_json::{Value, json};

use registry::ScalePaths;

/// CRD validation of `subresources.scale` at `path` (`spec.subresources` when all
/// versions share their subresources, else `spec.versions[i].subresources`).
pub fn validate_paths(scale: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = Vec::new();
    let field = |name: &str| path.child(&format!("scale.{name}"));
    let text = |name: &str| scale.get(name).and_then(Value::as_str).unwrap_or("");
    for (name, under) in [
        ("specReplicasPath", ".spec"),
        ("statusReplicasPath", ".status"),
    ] {
        let value = text(name);
        if value.is_empty() {
            errs.push(FieldError::required(&field(name), ""));
        } else if !value.starts_with('.') {
            errs.push(FieldError::invalid(
                &field(name),
                json!(value),
                "must be a simple json path starting with .",
            ));
        } else if !value.starts_with(&format!("{under}.")) {
            errs.push(FieldError::invalid(
                &field(name),
                json!(value),
                &format!("should be a json path under {under}"),
            ));
        }
    }
    let selector = text("labelSelectorPath");
    if !selector.is_empty() && !selector.starts_with(".spec.") && !selector.starts_with(".status.")
    {
        errs.push(FieldError::invalid(
            &field("labelSelectorPath"),
            json!(selector),
            "should be a json path under either .spec or .status",
        ));
    }
    errs
}

/// A custom resource's replicas at the scale paths must be int32s (absent counts as 0).
pub fn validate_object(obj: &Value, scale: &ScalePaths, status_only: bool) -> ErrorList {
    let mut errs = Vec::new();
    if !status_only {
        errs.extend(validate_replicas(obj, &scale.spec_replicas));
    }
    errs.extend(validate_replicas(obj, &scale.status_replicas));
    if let Some(selector) = &scale.label_selector
        && let Some(v) = at(obj, selector)
        && !v.is_string()
    {
        errs.push(FieldError::invalid(
            &FieldPath::new(selector),
            json!(""),
            &accessor_error(selector, v, "string"),
        ));
    }
    errs
}

fn validate_replicas(obj: &Value, path: &str) -> ErrorList {
    let field = FieldPath::new(path);
    let Some(value) = at(obj, path) else {
        return Vec::new();
    };
    let Some(replicas) = value.as_i64() else {
        return vec![FieldError::invalid(
            &field,
            json!(0),
            &accessor_error(path, value, "int64"),
        )];
    };
    if replicas < 0 {
        vec![FieldError::invalid(
            &field,
            json!(replicas),
            "should be a non-negative integer",
        )]
    } else if replicas > i64::from(i32::MAX) {
        vec![FieldError::invalid(
            &field,
            json!(replicas),
            &format!("should be less than or equal to {}", i32::MAX),
        )]
    } else {
        Vec::new()
    }
}

/// The value at a simple `.a.b` path; `None` when a segment is missing.
fn at<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    path.trim_start_matches('.')
        .split('.')
        .try_fold(obj, |node, segment| node.get(segment))
        .filter(|v| !v.is_null())
}

/// apimachinery's `unstructured.Nested*` error: `.spec.replicas accessor error:
/// abc is of the type string, expected int64`.
fn accessor_error(path: &str, value: &Value, expected: &str) -> String {
    let (shown, go_type) = match value {
        Value::String(s) => (s.clone(), "string"),
        Value::Bool(b) => (b.to_string(), "bool"),
        Value::Number(n) if n.is_i64() => (n.to_string(), "int64"),
        Value::Number(n) => (
            apimachinery::gofmt::format_float(n.as_f64().unwrap_or(0.0)),
            "float64",
        ),
        Value::Array(_) => (value.to_string(), "[]interface {}"),
        Value::Object(_) => (value.to_string(), "map[string]interface {}"),
        Value::Null => ("<nil>".into(), "<nil>"),
    };
    format!("{path} accessor error: {shown} is of the type {go_type}, expected {expected}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths() -> ScalePaths {
        ScalePaths {
            spec_replicas: ".spec.replicas".into(),
            status_replicas: ".status.replicas".into(),
            label_selector: Some(".status.selector".into()),
        }
    }

    fn messages(errs: &ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn crd_scale_paths_must_point_under_spec_and_status() {
        let path = FieldPath::new("spec").child("subresources");
        let scale = json!({"specReplicasPath": ".foo.replicas", "statusReplicasPath": "status.replicas", "labelSelectorPath": ".metadata.x"});
        assert_eq!(
            messages(&validate_paths(&scale, &path)),
            [
                "spec.subresources.scale.specReplicasPath: Invalid value: \".foo.replicas\": should be a json path under .spec",
                "spec.subresources.scale.statusReplicasPath: Invalid value: \"status.replicas\": must be a simple json path starting with .",
                "spec.subresources.scale.labelSelectorPath: Invalid value: \".metadata.x\": should be a json path under either .spec or .status",
            ]
        );
        assert_eq!(
            messages(&validate_paths(&json!({}), &path)),
            [
                "spec.subresources.scale.specReplicasPath: Required value",
                "spec.subresources.scale.statusReplicasPath: Required value",
            ]
        );
        let ok =
            json!({"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"});
        assert!(validate_paths(&ok, &path).is_empty());
    }

    #[test]
    fn replicas_must_fit_int32() {
        let check = |obj: Value| messages(&validate_object(&obj, &paths(), false));
        assert_eq!(
            check(json!({"spec": {"replicas": 2147483648_i64}})),
            [
                ".spec.replicas: Invalid value: 2147483648: should be less than or equal to 2147483647"
            ]
        );
        assert_eq!(
            check(json!({"spec": {"replicas": -1}})),
            [".spec.replicas: Invalid value: -1: should be a non-negative integer"]
        );
        assert_eq!(
            check(json!({"spec": {"replicas": "abc"}})),
            [
                ".spec.replicas: Invalid value: 0: .spec.replicas accessor error: abc is of the type string, expected int64"
            ]
        );
        assert_eq!(
            check(json!({"spec": {"replicas": 1.5}, "status": {"selector": 5}})),
            [
                ".spec.replicas: Invalid value: 0: .spec.replicas accessor error: 1.5 is of the type float64, expected int64",
                ".status.selector: Invalid value: \"\": .status.selector accessor error: 5 is of the type int64, expected string",
            ]
        );
        assert!(check(json!({"spec": {"replicas": 3}})).is_empty());
        assert!(check(json!({"spec": {}})).is_empty());
    }
}
