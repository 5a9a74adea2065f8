//! Device taints and tolerations, and DeviceTaintRules (a taint for the
//! devices a selector picks).

use apimachinery::DynamicObject;
use apimachinery::validation::{is_qualified_name, is_valid_label_value};
use apimachinery::{ErrorList, FieldError, FieldPath};
use serde_json::{Map, Value, json};

use super::super::json_fields::{field, spec_of, str_of};
use super::{Errs, dns_label, driver_name, invalid_each, pool_name};

const EFFECTS: [&str; 3] = ["NoExecute", "NoSchedule", "None"];
const OPERATORS: [&str; 2] = ["Equal", "Exists"];

/// `SetDefaults_DeviceTaint`: a taint is added now (to the second).
pub(super) fn default_taint(taint: &mut Map<String, Value>) {
    if taint.get("timeAdded").is_none_or(Value::is_null) {
        taint.insert("timeAdded".into(), json!(apimachinery::time::now_rfc3339()));
    }
}

/// `SetObjectDefaults_DeviceTaintRule`.
pub(in super::super) fn default_taint_rule(obj: &mut DynamicObject) {
    let Some(rule) = obj.as_object_mut() else {
        return;
    };
    let spec = rule.entry("spec").or_insert_with(|| json!({}));
    if let Some(spec) = spec.as_object_mut() {
        let taint = spec.entry("taint").or_insert_with(|| json!({}));
        if let Some(taint) = taint.as_object_mut() {
            default_taint(taint);
        }
    }
}

/// The strategy's `PrepareForUpdate`: a new effect is a new taint, so its
/// `timeAdded` moves to now unless the client moved it too.
pub(in super::super) fn taint_rule_updated(new: &mut DynamicObject, old: &DynamicObject) {
    let (Some(taint), Some(old_taint)) = (
        new.pointer_mut("/spec/taint")
            .and_then(Value::as_object_mut),
        old.pointer("/spec/taint"),
    ) else {
        return;
    };
    let effect = |t: Option<&Value>| t.and_then(Value::as_str).unwrap_or("").to_owned();
    let same_time = taint.get("timeAdded") == old_taint.get("timeAdded");
    if effect(taint.get("effect")) != effect(old_taint.get("effect")) && same_time {
        taint.insert("timeAdded".into(), json!(apimachinery::time::now_rfc3339()));
    }
}

/// `ValidateDeviceTaintRule` (metadata is the store's).
pub(in super::super) fn taint_rule(obj: &DynamicObject) -> ErrorList {
    taint_rule_spec(spec_of(obj), None)
}

/// `ValidateDeviceTaintRuleUpdate`: the create rules, the effect checked
/// only when it changes.
pub(in super::super) fn taint_rule_update(new: &DynamicObject, old: &DynamicObject) -> ErrorList {
    taint_rule_spec(spec_of(new), spec_of(old).get("taint"))
}

fn taint_rule_spec(spec: &Value, old_taint: Option<&Value>) -> ErrorList {
    let mut errs = Errs::default();
    let path = FieldPath::new("spec");
    if let Some(selector) = field(spec, "deviceSelector") {
        errs.hand(device_selector(selector, &path.child("deviceSelector")));
    }
    let taint = spec.get("taint").unwrap_or(&Value::Null);
    self::taint(taint, old_taint, &path.child("taint"), &mut errs);
    errs.into_list()
}

/// `validateDeviceTaintSelector`: each name that is set.
fn device_selector(selector: &Value, path: &FieldPath) -> ErrorList {
    let set = |key| selector.get(key).and_then(Value::as_str);
    let mut errs = ErrorList::new();
    if let Some(driver) = set("driver") {
        errs.extend(driver_name(driver, &path.child("driver")));
    }
    if let Some(pool) = set("pool") {
        errs.extend(pool_name(pool, &path.child("pool")));
    }
    if let Some(device) = set("device") {
        errs.extend(dns_label(device, &path.child("device")));
    }
    errs
}

/// `validateDeviceTaint`: a label key and value, and an effect (checked when
/// it is new: `old` is the stored taint).
pub(super) fn taint(taint: &Value, old: Option<&Value>, path: &FieldPath, errs: &mut Errs) {
    let key = str_of(taint, "key");
    errs.hand(invalid_each(
        &path.child("key"),
        key,
        is_qualified_name(key),
    ));
    let value = str_of(taint, "value");
    if !value.is_empty() {
        errs.hand(label_value(value, &path.child("value")));
    }
    let effect = str_of(taint, "effect");
    if old.is_some_and(|old| str_of(old, "effect") == effect) {
        return;
    }
    match effect {
        "" => errs.tag([FieldError::required(&path.child("effect"), "")]),
        e if !EFFECTS.contains(&e) => errs.tag([FieldError::not_supported(
            &path.child("effect"),
            json!(e),
            &EFFECTS,
        )]),
        _ => {}
    }
}

/// `validateDeviceToleration`: the operator's value rule by hand, key,
/// operator and effect by the tags.
pub(super) fn toleration(t: &Value, path: &FieldPath, errs: &mut Errs) {
    let key = str_of(t, "key");
    if !key.is_empty() {
        errs.tag(invalid_each(
            &path.child("key"),
            key,
            is_qualified_name(key),
        ));
    }
    let value = str_of(t, "value");
    match str_of(t, "operator") {
        "Exists" if !value.is_empty() => errs.hand([FieldError::invalid(
            &path.child("value"),
            json!(value),
            "must be empty for operator `Exists`",
        )]),
        "Equal" => errs.hand(label_value(value, &path.child("value"))),
        "" => errs.tag([FieldError::required(&path.child("operator"), "")]),
        op if !OPERATORS.contains(&op) => errs.tag([FieldError::not_supported(
            &path.child("operator"),
            json!(op),
            &OPERATORS,
        )]),
        _ => {}
    }
    let effect = str_of(t, "effect");
    if !effect.is_empty() && !EFFECTS.contains(&effect) {
        errs.tag([FieldError::not_supported(
            &path.child("effect"),
            json!(effect),
            &EFFECTS,
        )]);
    }
}

fn label_value(value: &str, path: &FieldPath) -> ErrorList {
    invalid_each(path, value, is_valid_label_value(value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::typed_objects::{typed, with_typed};

    #[test]
    fn a_new_effect_moves_time_added() {
        let old = json!({"spec": {"taint": {"key": "k", "effect": "NoSchedule", "timeAdded": "2020-01-01T00:00:00Z"}}});
        let mut new = old.clone();
        new["spec"]["taint"]["effect"] = json!("NoExecute");
        with_typed(&mut new, |n| taint_rule_updated(n, &typed(&old)));
        assert_ne!(new["spec"]["taint"]["timeAdded"], "2020-01-01T00:00:00Z");
        let mut moved = old.clone();
        moved["spec"]["taint"]["effect"] = json!("None");
        moved["spec"]["taint"]["timeAdded"] = json!("2021-01-01T00:00:00Z");
        with_typed(&mut moved, |n| taint_rule_updated(n, &typed(&old)));
        assert_eq!(moved["spec"]["taint"]["timeAdded"], "2021-01-01T00:00:00Z");
    }

    #[test]
    fn empty_rule_as_upstream() {
        let errs: Vec<String> = taint_rule(&typed(&json!({"spec": {"taint": {}}})))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(errs.len(), 3);
        assert_eq!(
            errs[0],
            r#"spec.taint.key: Invalid value: "": name part must be non-empty"#
        );
        assert_eq!(errs[2], "spec.taint.effect: Required value");
    }
}
