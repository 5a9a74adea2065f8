//! `pods/{name}/resize` (1.33's `podResizeStrategy` and `ValidatePodResize`):
//! only containers' `resources` and `resizePolicy` are written, and only cpu
//! and memory may change, without changing the pod's QoS class, removing
//! requests or limits, or (unless the container restarts for it) lowering or
//! adding a memory limit.

use apimachinery::DynamicObject;
use apimachinery::{ErrorList, FieldError, FieldPath, Subresource};
use serde_json::{Value, json};

use super::strategy_rules::qos_class;

const MIRROR_POD: &str = "kubernetes.io/config.mirror";
const CONTAINER_LISTS: [&str; 2] = ["initContainers", "containers"];

/// The update through `subresource` of a pod, if it is `resize`: `new` made
/// what a resize may write, and the errors of its validation.
pub fn update(
    subresource: &Subresource,
    new: &mut DynamicObject,
    old: &DynamicObject,
) -> Option<ErrorList> {
    if *subresource != Subresource::Resize {
        return None;
    }
    if keep_only_resize_changes(new, old) {
        new.metadata = old.metadata.clone();
    }
    Some(validate(new, old))
}

/// `dropNonResizeUpdates`: the stored pod with each container's resources
/// and resize policy from `new` (when the containers still line up by name;
/// otherwise validation says what is wrong).
/// Whether it did (the stored pod's metadata goes with it).
fn keep_only_resize_changes(new: &mut Value, old: &Value) -> bool {
    let lined_up = CONTAINER_LISTS
        .iter()
        .all(|list| names(new, list) == names(old, list));
    if !lined_up {
        return false;
    }
    let mut kept = old.clone();
    for list in CONTAINER_LISTS {
        let Some(containers) = kept
            .pointer_mut(&format!("/spec/{list}"))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for (i, container) in containers.iter_mut().enumerate() {
            let wanted = new.pointer(&format!("/spec/{list}/{i}"));
            for field in ["resources", "resizePolicy"] {
                match wanted.and_then(|w| w.get(field)) {
                    Some(value) => container[field] = value.clone(),
                    None => {
                        if let Some(c) = container.as_object_mut() {
                            c.remove(field);
                        }
                    }
                }
            }
        }
    }
    *new = kept;
    true
}

fn names<'a>(pod: &'a Value, list: &str) -> Vec<&'a str> {
    containers(pod, list)
        .iter()
        .map(|c| c.get("name").and_then(Value::as_str).unwrap_or(""))
        .collect()
}

fn containers<'a>(pod: &'a Value, list: &str) -> &'a [Value] {
    pod.pointer(&format!("/spec/{list}"))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// `ValidatePodResize`'s checks, in its order.
fn validate(new: &DynamicObject, old: &DynamicObject) -> ErrorList {
    let spec = FieldPath::new("spec");
    let root = FieldPath::root();
    let pod_level = |p: &Value| {
        p.pointer("/spec/resources")
            .is_some_and(|r| r.get("requests").is_some() || r.get("limits").is_some())
    };
    if pod_level(old) || pod_level(new) {
        return vec![FieldError::forbidden(
            &root,
            "pods with pod-level resources cannot be resized",
        )];
    }
    if old.metadata.annotations.contains_key(MIRROR_POD) {
        return vec![FieldError::forbidden(
            &root,
            "static pods cannot be resized",
        )];
    }
    if old.pointer("/spec/os/name").and_then(Value::as_str) == Some("windows") {
        return vec![FieldError::forbidden(
            &root,
            "windows pods cannot be resized",
        )];
    }
    let mut errs = super::validation::validate_pod_metadata_and_spec(new);
    let stored_qos = old
        .pointer("/status/qosClass")
        .and_then(Value::as_str)
        .unwrap_or_else(|| qos_class(old));
    if stored_qos != qos_class(new) {
        errs.push(FieldError::invalid(
            &spec,
            json!(stored_qos),
            "Pod QOS Class may not change as a result of resizing",
        ));
    }
    if !containers_line_up(new, old, &spec, &mut errs) {
        return errs;
    }
    for list in CONTAINER_LISTS {
        for (i, (n, o)) in containers(new, list)
            .iter()
            .zip(containers(old, list))
            .enumerate()
        {
            let path = spec.child(list).index(i).child("resources");
            container_resize(n, o, &path, &mut errs);
        }
    }
    if errs.is_empty() && without_cpu_and_memory(new) != without_cpu_and_memory(old) {
        errs.push(FieldError::forbidden(
            &spec,
            "only cpu and memory resources are mutable",
        ));
    }
    errs
}

/// `validatePodResizeContainerOrdering`.
fn containers_line_up(new: &Value, old: &Value, spec: &FieldPath, errs: &mut ErrorList) -> bool {
    let before = errs.len();
    for list in CONTAINER_LISTS {
        let (n, o) = (names(new, list), names(old, list));
        if n.len() != o.len() {
            errs.push(FieldError::forbidden(
                &spec.child(list),
                &format!("{list} may not be added or removed on resize"),
            ));
            continue;
        }
        for (i, (a, b)) in n.iter().zip(&o).enumerate() {
            if a != b {
                errs.push(FieldError::forbidden(
                    &spec.child(list).index(i).child("name"),
                    &format!("{list} may not be renamed or reordered on resize"),
                ));
            }
        }
    }
    errs.len() == before
}

/// `validateContainerResize`.
fn container_resize(new: &Value, old: &Value, path: &FieldPath, errs: &mut ErrorList) {
    let names_in = |c: &Value, section: &str| -> Vec<String> {
        c.pointer(&format!("/resources/{section}"))
            .and_then(Value::as_object)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    };
    for (section, what) in [("requests", "requests"), ("limits", "limits")] {
        let kept = names_in(new, section);
        if names_in(old, section).iter().any(|r| !kept.contains(r)) {
            errs.push(FieldError::forbidden(
                &path.child(section),
                &format!("resource {what} cannot be removed"),
            ));
        }
    }
    let restarts_for_memory = new
        .get("resizePolicy")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|p| p["resourceName"] == "memory" && p["restartPolicy"] == "RestartContainer");
    if restarts_for_memory {
        return;
    }
    let memory_limit = |c: &Value| {
        c.pointer("/resources/limits/memory")
            .and_then(quantity_value)
    };
    let limit_path = path.child("limits").key("memory");
    match (memory_limit(old), memory_limit(new)) {
        (Some(before), Some(after)) if after < before => errs.push(FieldError::forbidden(
            &limit_path,
            "memory limits cannot be decreased unless resizePolicy is RestartContainer",
        )),
        (None, Some(_)) => errs.push(FieldError::forbidden(
            &limit_path,
            "memory limits cannot be added unless resizePolicy is RestartContainer",
        )),
        _ => {}
    }
}

/// The pod's spec with cpu and memory left out of every container's
/// requests and limits (what a resize may change).
fn without_cpu_and_memory(pod: &Value) -> Value {
    let mut spec = pod.get("spec").cloned().unwrap_or(Value::Null);
    for list in CONTAINER_LISTS {
        let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for container in containers {
            for section in ["requests", "limits"] {
                if let Some(map) = container
                    .pointer_mut(&format!("/resources/{section}"))
                    .and_then(Value::as_object_mut)
                {
                    map.remove("cpu");
                    map.remove("memory");
                }
            }
        }
    }
    spec
}

/// A quantity's value for comparisons (`128Mi`, `1G`, `1e3`, `500m`).
fn quantity_value(v: &Value) -> Option<f64> {
    let text = match v {
        Value::String(s) => s.as_str(),
        Value::Number(n) => return n.as_f64(),
        _ => return None,
    };
    let split = text
        .find(|c: char| c.is_ascii_alphabetic() && c != 'e' && c != 'E')
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let factor = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        _ => return None,
    };
    number.parse::<f64>().ok().map(|n| n * factor)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::typed_objects::{typed, with_typed};

    /// A defaulted pod, as stored.
    fn pod(resources: Value) -> Value {
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "app", "image": "nginx", "resources": resources}
        ]}, "status": {"qosClass": "Burstable"}});
        if let Some(default) = super::super::defaults::defaulter("", "Pod") {
            with_typed(&mut pod, default);
        }
        pod
    }

    fn messages(errs: &ErrorList) -> Vec<String> {
        errs.iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn only_resources_are_taken_from_the_request() {
        let old = pod(json!({"requests": {"cpu": "100m"}}));
        let mut new = pod(json!({"requests": {"cpu": "200m"}}));
        new["spec"]["containers"][0]["image"] = json!("evil");
        new["metadata"]["labels"] = json!({"x": "y"});
        let errs = with_typed(&mut new, |n| update(&Subresource::Resize, n, &typed(&old))).unwrap();
        assert!(errs.is_empty(), "{errs:?}");
        assert_eq!(new["spec"]["containers"][0]["image"], "nginx");
        assert_eq!(
            new["spec"]["containers"][0]["resources"]["requests"]["cpu"],
            "200m"
        );
        assert!(new["metadata"].get("labels").is_none());
        assert!(with_typed(&mut new, |n| update(&Subresource::Status, n, &typed(&old))).is_none());
    }

    // The e2e resize error tests' cases, with the paths and messages of
    // 1.33-era `ValidatePodResize`.
    #[test]
    fn resizes_keep_the_qos_class_and_every_request_and_limit() {
        let burstable = pod(json!({"requests": {"cpu": "100m", "memory": "100Mi"},
            "limits": {"cpu": "200m", "memory": "200Mi"}}));
        let mut guaranteed = pod(json!({"requests": {"cpu": "200m", "memory": "200Mi"},
            "limits": {"cpu": "200m", "memory": "200Mi"}}));
        assert_eq!(
            messages(
                &with_typed(&mut guaranteed, |n| update(
                    &Subresource::Resize,
                    n,
                    &typed(&burstable)
                ))
                .unwrap()
            ),
            [
                "spec: Invalid value: \"Burstable\": Pod QOS Class may not change as a result of resizing"
            ]
        );
        let mut no_limits = pod(json!({"requests": {"cpu": "100m", "memory": "100Mi"}}));
        assert_eq!(
            messages(
                &with_typed(&mut no_limits, |n| update(
                    &Subresource::Resize,
                    n,
                    &typed(&burstable)
                ))
                .unwrap()
            ),
            ["spec.containers[0].resources.limits: Forbidden: resource limits cannot be removed"]
        );
        let mut lower_memory = pod(json!({"requests": {"cpu": "100m", "memory": "100Mi"},
            "limits": {"cpu": "200m", "memory": "150Mi"}}));
        assert_eq!(
            messages(
                &with_typed(&mut lower_memory, |n| update(
                    &Subresource::Resize,
                    n,
                    &typed(&burstable)
                ))
                .unwrap()
            ),
            [
                "spec.containers[0].resources.limits[memory]: Forbidden: memory limits cannot be decreased unless resizePolicy is RestartContainer"
            ]
        );
        let mut gpu = pod(
            json!({"requests": {"cpu": "100m", "memory": "100Mi", "example.com/gpu": "1"},
            "limits": {"cpu": "200m", "memory": "200Mi", "example.com/gpu": "1"}}),
        );
        assert_eq!(
            messages(
                &with_typed(&mut gpu, |n| update(
                    &Subresource::Resize,
                    n,
                    &typed(&burstable)
                ))
                .unwrap()
            ),
            ["spec: Forbidden: only cpu and memory resources are mutable"]
        );
        let mut more_cpu = pod(json!({"requests": {"cpu": "150m", "memory": "100Mi"},
            "limits": {"cpu": "300m", "memory": "1Gi"}}));
        assert!(
            with_typed(&mut more_cpu, |n| update(
                &Subresource::Resize,
                n,
                &typed(&burstable)
            ))
            .unwrap()
            .is_empty()
        );
    }

    #[test]
    fn containers_may_not_be_renamed_on_resize() {
        let old = pod(json!({"requests": {"cpu": "100m"}}));
        let mut new = old.clone();
        new["spec"]["containers"][0]["name"] = json!("other");
        assert_eq!(
            messages(
                &with_typed(&mut new, |n| update(&Subresource::Resize, n, &typed(&old))).unwrap()
            ),
            [
                "spec.containers[0].name: Forbidden: containers may not be renamed or reordered on resize"
            ]
        );
    }
}
