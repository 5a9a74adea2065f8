//! RuntimeClass: a new pod naming a RuntimeClass must name one that exists;
//! it takes the class's overhead (`spec.overhead`) and scheduling (node
//! selector and tolerations merged into the pod's). Pods without a class may
//! not declare an overhead. Create of `pods` only, as upstream.

use serde_json::{Map, Value};

use crate::Objects;

const RUNTIME_CLASS: (&str, &str) = ("node.k8s.io/v1", "RuntimeClass");

/// The mutating and validating halves in one (they read the same class);
/// `Err` is the reason of a 403.
pub(super) async fn admit(pod: &mut Value, objects: &dyn Objects) -> Result<(), String> {
    let class = match pod
        .pointer("/spec/runtimeClassName")
        .and_then(Value::as_str)
    {
        Some(name) => {
            let found = objects
                .find(RUNTIME_CLASS.0, RUNTIME_CLASS.1, "", Some(name), None)
                .await
                .map_err(|e| e.to_string())?;
            match found.into_iter().next() {
                Some(class) => Some(class),
                None => return Err(format!("pod rejected: RuntimeClass {name:?} not found")),
            }
        }
        None => None,
    };
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    set_overhead(spec, class.as_ref())?;
    if let Some(scheduling) = class.as_ref().and_then(|c| c.get("scheduling")) {
        set_scheduling(spec, scheduling)?;
    }
    Ok(())
}

/// The class's `overhead.podFixed` becomes the pod's; a pod that set a
/// different one, or one without a class that has an overhead, is refused.
fn set_overhead(spec: &mut Map<String, Value>, class: Option<&Value>) -> Result<(), String> {
    let fixed = class.and_then(|c| c.pointer("/overhead/podFixed"));
    let declared = spec.get("overhead").filter(|o| !o.is_null());
    match (fixed, declared) {
        (Some(fixed), Some(declared)) if !is_empty_map(declared) && declared != fixed => {
            Err("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead".into())
        }
        (Some(fixed), _) => {
            spec.insert("overhead".into(), fixed.clone());
            Ok(())
        }
        (None, Some(_)) if class.is_none_or(|c| c.get("overhead").is_none_or(Value::is_null)) => {
            Err("pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead".into())
        }
        (None, _) => Ok(()),
    }
}

fn is_empty_map(value: &Value) -> bool {
    value.as_object().is_some_and(Map::is_empty)
}

/// The class's node selector joins the pod's (a different value for the same
/// key is a conflict); its tolerations are merged as upstream's
/// `MergeTolerations` merges them.
fn set_scheduling(spec: &mut Map<String, Value>, scheduling: &Value) -> Result<(), String> {
    if let Some(wanted) = scheduling.get("nodeSelector").and_then(Value::as_object) {
        let selector = spec
            .entry("nodeSelector")
            .or_insert_with(|| Value::Object(Map::new()));
        if selector.is_null() {
            *selector = Value::Object(Map::new());
        }
        if let Some(selector) = selector.as_object_mut() {
            for (key, value) in wanted {
                if let Some(pods) = selector.get(key)
                    && pods != value
                {
                    return Err(format!(
                        "conflict: runtimeClass.scheduling.nodeSelector[{key}] = {}; pod.spec.nodeSelector[{key}] = {}",
                        value.as_str().unwrap_or_default(),
                        pods.as_str().unwrap_or_default()
                    ));
                }
                selector.insert(key.clone(), value.clone());
            }
        }
    }
    let added = scheduling
        .get("tolerations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut all = spec
        .get("tolerations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    all.extend(added);
    let merged = merge_tolerations(all);
    if merged.is_empty() {
        spec.remove("tolerations");
    } else {
        spec.insert("tolerations".into(), Value::Array(merged));
    }
    Ok(())
}

/// Each toleration kept unless one kept before it, or a different one after
/// it, tolerates a superset of what it does (of equal ones the first stays).
fn merge_tolerations(all: Vec<Value>) -> Vec<Value> {
    let mut merged: Vec<Value> = Vec::new();
    for (i, t) in all.iter().enumerate() {
        let covered_before = merged.iter().any(|kept| is_superset(kept, t));
        let covered_after = all[i + 1..]
            .iter()
            .any(|later| later != t && is_superset(later, t));
        if !covered_before && !covered_after {
            merged.push(t.clone());
        }
    }
    merged
}

/// Whether toleration `wide` tolerates everything `t` does.
fn is_superset(wide: &Value, t: &Value) -> bool {
    if wide == t {
        return true;
    }
    let field = |v: &Value, f: &str| v.get(f).and_then(Value::as_str).unwrap_or("").to_owned();
    let (key, wide_key) = (field(t, "key"), field(wide, "key"));
    let wide_operator = field(wide, "operator");
    // An empty key with `Exists` matches every key.
    if key != wide_key && (!wide_key.is_empty() || wide_operator != "Exists") {
        return false;
    }
    let wide_effect = field(wide, "effect");
    if field(t, "effect") != wide_effect && !wide_effect.is_empty() {
        return false;
    }
    if wide_effect == "NoExecute"
        && let Some(limit) = wide.get("tolerationSeconds").and_then(Value::as_i64)
    {
        match t.get("tolerationSeconds").and_then(Value::as_i64) {
            Some(seconds) if seconds <= limit => {}
            _ => return false,
        }
    }
    match wide_operator.as_str() {
        "Equal" | "" => {
            field(t, "operator") == "Equal" && field(t, "value") == field(wide, "value")
        }
        "Exists" => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // pkg/util/tolerations' MergeTolerations cases: duplicates collapse to the
    // first; an Exists toleration swallows the Equal ones of its key; a wider
    // NoExecute time limit covers a shorter one.
    #[test]
    fn tolerations_merge_as_upstream_merges_them() {
        let equal =
            json!({"key": "foo", "operator": "Equal", "value": "bar", "effect": "NoSchedule"});
        let exists = json!({"key": "foo", "operator": "Exists", "effect": "NoSchedule"});
        let other = json!({"key": "baz", "operator": "Exists"});
        assert_eq!(
            merge_tolerations(vec![equal.clone(), equal.clone(), other.clone()]),
            vec![equal.clone(), other.clone()]
        );
        assert_eq!(
            merge_tolerations(vec![equal.clone(), exists.clone()]),
            vec![exists.clone()]
        );
        let short = json!({"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10});
        let long = json!({"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60});
        assert_eq!(
            merge_tolerations(vec![short.clone(), long.clone()]),
            vec![long]
        );
    }

    #[test]
    fn overhead_comes_from_the_class_and_must_agree() {
        let class = json!({"handler": "h", "overhead": {"podFixed": {"cpu": "10m"}}});
        let mut spec = Map::new();
        set_overhead(&mut spec, Some(&class)).unwrap();
        assert_eq!(spec["overhead"], json!({"cpu": "10m"}));
        let mut spec = json!({"overhead": {"cpu": "1"}})
            .as_object()
            .unwrap()
            .clone();
        assert_eq!(
            set_overhead(&mut spec, Some(&class)).unwrap_err(),
            "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"
        );
        assert_eq!(
            set_overhead(&mut spec, None).unwrap_err(),
            "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"
        );
    }

    #[test]
    fn node_selectors_join_unless_they_conflict() {
        let scheduling = json!({"nodeSelector": {"zone": "a"}});
        let mut spec = json!({"nodeSelector": {"disk": "ssd"}})
            .as_object()
            .unwrap()
            .clone();
        set_scheduling(&mut spec, &scheduling).unwrap();
        assert_eq!(spec["nodeSelector"], json!({"disk": "ssd", "zone": "a"}));
        let mut spec = json!({"nodeSelector": {"zone": "b"}})
            .as_object()
            .unwrap()
            .clone();
        assert_eq!(
            set_scheduling(&mut spec, &scheduling).unwrap_err(),
            "conflict: runtimeClass.scheduling.nodeSelector[zone] = a; pod.spec.nodeSelector[zone] = b"
        );
    }
}
