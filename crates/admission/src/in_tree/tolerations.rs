//! DefaultTolerationSeconds: a pod tolerates not-ready and unreachable nodes
//! for five minutes unless it already tolerates them (`NoExecute` or any
//! effect, that key or any key).

use serde_json::{Value, json};

/// `--default-not-ready-toleration-seconds`, `--default-unreachable-toleration-seconds`.
const DEFAULT_TOLERATION_SECONDS: i64 = 300;
const TAINT_NOT_READY: &str = "node.kubernetes.io/not-ready";
const TAINT_UNREACHABLE: &str = "node.kubernetes.io/unreachable";

pub(super) fn add_defaults(pod: &mut Value) {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let tolerations = spec.entry("tolerations").or_insert_with(|| json!([]));
    if tolerations.is_null() {
        *tolerations = json!([]);
    }
    let Some(list) = tolerations.as_array_mut() else {
        return;
    };
    for key in [TAINT_NOT_READY, TAINT_UNREACHABLE] {
        if !list.iter().any(|t| tolerates(t, key)) {
            list.push(json!({
                "key": key,
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": DEFAULT_TOLERATION_SECONDS,
            }));
        }
    }
}

/// Upstream's check: the key matches (or is empty) and the effect is
/// `NoExecute` (or empty); the operator is not looked at.
fn tolerates(toleration: &Value, key: &str) -> bool {
    let field = |f: &str| toleration.get(f).and_then(Value::as_str).unwrap_or("");
    matches!(field("key"), k if k.is_empty() || k == key)
        && matches!(field("effect"), "" | "NoExecute")
}

#[cfg(test)]
mod tests {
    use super::*;

    // Cases of upstream's admission_test.go: a pod with a not-ready NoExecute
    // toleration gets only the unreachable one; a wildcard key with an empty
    // effect tolerates both; a NoSchedule toleration counts for nothing.
    #[test]
    fn only_missing_tolerations_are_added_once() {
        let mut pod = json!({"spec": {"tolerations": [
            {"key": TAINT_NOT_READY, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}
        ]}});
        add_defaults(&mut pod);
        add_defaults(&mut pod);
        let list = pod["spec"]["tolerations"].as_array().unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list[0]["tolerationSeconds"], 60);
        assert_eq!(
            list[1],
            json!({"key": TAINT_UNREACHABLE, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300})
        );

        let mut wildcard = json!({"spec": {"tolerations": [{"operator": "Exists"}]}});
        add_defaults(&mut wildcard);
        assert_eq!(wildcard["spec"]["tolerations"].as_array().unwrap().len(), 1);

        let mut no_schedule = json!({"spec": {"tolerations": [
            {"key": TAINT_UNREACHABLE, "operator": "Exists", "effect": "NoSchedule"}
        ]}});
        add_defaults(&mut no_schedule);
        assert_eq!(
            no_schedule["spec"]["tolerations"].as_array().unwrap().len(),
            3
        );
    }
}
