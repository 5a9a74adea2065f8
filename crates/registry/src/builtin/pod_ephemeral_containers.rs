//! `pods/{name}/ephemeralcontainers` (upstream's `EphemeralContainersStrategy`):
//! a whole Pod is sent, only its `spec.ephemeralContainers` is written, and only
//! `ValidatePodEphemeralContainersUpdate` runs (not the Pod update rules, which
//! forbid changing the spec).

use apimachinery::DynamicObject;
use apimachinery::{ErrorList, Subresource};
use serde_json::Value;

use super::validation;

/// The update through `subresource` of a pod, if it is `ephemeralcontainers`:
/// `new` made the stored pod with the requested ephemeral containers, and the
/// errors of its validation.
pub fn update(
    subresource: &Subresource,
    new: &mut DynamicObject,
    old: &DynamicObject,
) -> Option<ErrorList> {
    if *subresource != Subresource::EphemeralContainers {
        return None;
    }
    keep_only_ephemeral_containers(&mut new.body, old);
    new.metadata = old.metadata.clone();
    Some(validation::ephemeral_containers_update(new, old))
}

/// `dropNonEphemeralContainerUpdates`: the stored pod, with the request's
/// ephemeral containers.
fn keep_only_ephemeral_containers(new: &mut Value, old: &Value) {
    let ephemeral = new.pointer("/spec/ephemeralContainers").cloned();
    *new = old.clone();
    let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    match ephemeral {
        Some(list) => spec.insert("ephemeralContainers".into(), list),
        None => spec.remove("ephemeralContainers"),
    };
}
