//! Priority: a pod's `priority` (and `preemptionPolicy`) come from the
//! PriorityClass it names, or from the global default class, else 0; a value
//! the pod sets itself must agree. Updates keep what creation set.

use apimachinery::meta;
use registry::Operation;
use serde_json::{Value, json};

use crate::Objects;

/// The scheduling group's PriorityClass.
const PRIORITY_CLASS: (&str, &str) = ("scheduling.k8s.io/v1", "PriorityClass");
const DEFAULT_PREEMPTION: &str = "PreemptLowerPriority";

/// Sets the pod's priority; `Err` is the reason of a 403.
pub(super) async fn admit(
    pod: &mut Value,
    operation: Operation,
    old: Option<&Value>,
    objects: &dyn Objects,
) -> Result<(), String> {
    match operation {
        Operation::Update => {
            keep_old(pod, old);
            Ok(())
        }
        Operation::Create => set_on_create(pod, objects).await,
        Operation::Delete => Ok(()),
    }
}

/// API validation refuses changes to priority; one left out is carried over.
fn keep_old(pod: &mut Value, old: Option<&Value>) {
    let (Some(old_spec), Some(spec)) = (
        old.and_then(|o| o.get("spec")),
        pod.get_mut("spec").and_then(Value::as_object_mut),
    ) else {
        return;
    };
    for field in ["priority", "preemptionPolicy"] {
        if let Some(value) = old_spec.get(field)
            && spec.get(field).is_none_or(Value::is_null)
        {
            spec.insert(field.into(), value.clone());
        }
    }
}

async fn set_on_create(pod: &mut Value, objects: &dyn Objects) -> Result<(), String> {
    let named = pod
        .pointer("/spec/priorityClassName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .map(str::to_owned);
    let (class_name, priority, preemption) = match named {
        Some(name) => {
            let found = objects
                .find(PRIORITY_CLASS.0, PRIORITY_CLASS.1, "", Some(&name), None)
                .await
                .map_err(|e| format!("failed to get PriorityClass with name {name}: {e}"))?;
            let Some(class) = found.first() else {
                return Err(format!("no PriorityClass with name {name} was found"));
            };
            (None, value_of(class), preemption_of(class))
        }
        None => match global_default(objects).await? {
            Some(class) => (
                meta::metadata(&class).and_then(|m| m.get("name")).cloned(),
                value_of(&class),
                preemption_of(&class),
            ),
            None => (None, 0, Some(DEFAULT_PREEMPTION.to_string())),
        },
    };
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    if let Some(name) = class_name {
        spec.insert("priorityClassName".into(), name);
    }
    if let Some(given) = spec.get("priority").and_then(Value::as_i64)
        && given != priority
    {
        return Err(format!(
            "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {priority} from the given PriorityClass name"
        ));
    }
    spec.insert("priority".into(), json!(priority));
    if let Some(policy) = preemption {
        if let Some(given) = spec.get("preemptionPolicy").and_then(Value::as_str)
            && given != policy
        {
            return Err(format!(
                "the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {policy} from the given PriorityClass name"
            ));
        }
        spec.insert("preemptionPolicy".into(), json!(policy));
    }
    Ok(())
}

/// The global default class; of several, the one of lowest value (upstream's
/// `getDefaultPriorityClass`).
async fn global_default(objects: &dyn Objects) -> Result<Option<Value>, String> {
    let classes = objects
        .find(PRIORITY_CLASS.0, PRIORITY_CLASS.1, "", None, None)
        .await
        .map_err(|e| format!("failed to get default priority class: {e}"))?;
    Ok(classes
        .into_iter()
        .filter(|c| c.get("globalDefault").and_then(Value::as_bool) == Some(true))
        .min_by_key(value_of))
}

fn value_of(class: &Value) -> i64 {
    class.get("value").and_then(Value::as_i64).unwrap_or(0)
}

fn preemption_of(class: &Value) -> Option<String> {
    class
        .get("preemptionPolicy")
        .and_then(Value::as_str)
        .map(str::to_owned)
}
