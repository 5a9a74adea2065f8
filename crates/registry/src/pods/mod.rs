//! Pod operations that are not plain writes of a Pod, as kube-apiserver's
//! `pkg/registry/core/pod` has them: `binding` (`BindingREST`,
//! `LegacyBindingREST`), `eviction` (`EvictionREST`) and what `log`, `exec`,
//! `attach` and `portforward` answer in a cluster without kubelets
//! (`connection`). The server decodes the request, calls these and encodes
//! what they return.

pub mod binding;
pub mod connection;
pub mod eviction;

use serde_json::{Value, json};

/// `podutil.UpdatePodCondition`: sets `condition` in `obj`'s
/// `status.conditions`, replacing the one of the same type; its transition
/// time is kept unless its status changes.
pub(crate) fn set_condition(obj: &mut Value, mut condition: Value) {
    let now = apimachinery::time::now_rfc3339();
    let status = obj
        .as_object_mut()
        .map(|p| p.entry("status").or_insert_with(|| json!({})));
    let Some(conditions) = status.and_then(|s| {
        if !s.is_object() {
            *s = json!({});
        }
        let c = s.as_object_mut()?.entry("conditions").or_insert(json!([]));
        if !c.is_array() {
            *c = json!([]);
        }
        c.as_array_mut()
    }) else {
        return;
    };
    match conditions
        .iter_mut()
        .find(|c| c["type"] == condition["type"])
    {
        Some(existing) => {
            condition["lastTransitionTime"] = if existing["status"] == condition["status"] {
                existing["lastTransitionTime"].clone()
            } else {
                json!(now)
            };
            *existing = condition;
        }
        None => {
            condition["lastTransitionTime"] = json!(now);
            conditions.push(condition);
        }
    }
}
