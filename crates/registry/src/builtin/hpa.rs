//! autoscaling/v1 HorizontalPodAutoscaler, served from autoscaling/v2 storage
//! as upstream (`pkg/apis/autoscaling/v1/conversion.go`): the CPU utilization
//! target is v1's own field; what v1 cannot express travels in
//! `autoscaling.alpha.kubernetes.io/*` annotations.

use apimachinery::{DynamicObject, meta};
use serde_json::{Map, Value, json};

use crate::resource::{Prepared, ResourceType, Strategy};

/// autoscaling/v1 horizontalpodautoscalers, stored with autoscaling/v2's.
pub fn resource_type() -> ResourceType {
    let printer = super::printers::printer("autoscaling", "HorizontalPodAutoscaler");
    let mut t = ResourceType::new(
        "autoscaling",
        "v1",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        true,
        Box::new(HpaV1 {
            row: printer.as_ref().map(|p| p.row),
        }),
    );
    t.short_names = vec!["hpa".into()];
    t.categories = vec!["all".into()];
    t.has_status = true;
    // HPAGeneration (on by default in 1.37): spec changes bump the generation.
    t.tracks_generation = true;
    if let Some(p) = printer {
        super::kinds::use_printer(&mut t, p);
    }
    t
}

const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";

/// v1's implicit target when it names none (upstream's conversion).
const DEFAULT_CPU_UTILIZATION: i64 = 80;

pub struct HpaV1 {
    pub row: Option<fn(&Value) -> Vec<Value>>,
}

impl Strategy for HpaV1 {
    fn prepare_status_update(&self, new: &mut DynamicObject, old: &DynamicObject) {
        crate::resource::take_status_and_metadata(new, old);
    }

    fn prepare_create(&self, obj: &mut DynamicObject) -> Prepared {
        super::defaults::hpa_v1(obj);
        obj["status"] = json!({});
        Prepared::BodyChanged
    }

    fn prepare_update(&self, new: &mut DynamicObject, old: &DynamicObject) {
        super::defaults::hpa_v1(new);
        super::kinds::keep_status(new, old);
    }

    fn converts_on_read(&self, _stored: &crate::Object) -> bool {
        true
    }

    fn convert_from_storage(&self, obj: &Value) -> Option<Value> {
        let mut v1 = to_v1(obj);
        // What Go writes for v1's fields although they are zero (a status's
        // currentReplicas has no omitempty in v1).
        crate::zero_fields::fill("autoscaling", "v1", "HorizontalPodAutoscaler", &mut v1);
        Some(v1)
    }

    fn to_storage(&self, obj: &Value) -> Option<Value> {
        Some(to_v2(obj))
    }

    fn stored_as_served(&self) -> bool {
        false
    }

    fn row(&self, obj: &Value) -> Vec<Value> {
        self.row.map_or_else(Vec::new, |row| row(obj))
    }
}

fn is_cpu_utilization(metric: &Value, target: &str) -> bool {
    metric["type"] == "Resource"
        && metric["resource"]["name"] == "cpu"
        && metric["resource"][target]["type"] == "Utilization"
}

fn copy(from: &Value, to: &mut Map<String, Value>, fields: &[&str]) {
    for field in fields {
        if let Some(v) = from.get(*field) {
            to.insert((*field).into(), v.clone());
        }
    }
}

/// The stored v2 object as v1 shows it.
fn to_v1(v2: &Value) -> Value {
    let mut annotations = Map::new();
    let (spec, status) = (&v2["spec"], &v2["status"]);
    let mut v1_spec = Map::new();
    copy(
        spec,
        &mut v1_spec,
        &["scaleTargetRef", "minReplicas", "maxReplicas"],
    );
    let metrics = spec["metrics"].as_array().cloned().unwrap_or_default();
    let (cpu, other): (Vec<Value>, Vec<Value>) = metrics
        .into_iter()
        .partition(|m| is_cpu_utilization(m, "target"));
    if let Some(cpu) = cpu.first() {
        v1_spec.insert(
            "targetCPUUtilizationPercentage".into(),
            cpu["resource"]["target"]["averageUtilization"].clone(),
        );
    }
    annotate(&mut annotations, METRICS, &Value::Array(other));
    annotate(&mut annotations, BEHAVIOR, &spec["behavior"]);
    let mut v1_status = Map::new();
    copy(
        status,
        &mut v1_status,
        &[
            "observedGeneration",
            "lastScaleTime",
            "currentReplicas",
            "desiredReplicas",
        ],
    );
    let current = status["currentMetrics"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let (cpu, other): (Vec<Value>, Vec<Value>) = current
        .into_iter()
        .partition(|m| is_cpu_utilization(m, "current") || m["resource"]["name"] == "cpu");
    if let Some(utilization) = cpu
        .first()
        .map(|m| &m["resource"]["current"]["averageUtilization"])
        .filter(|u| !u.is_null())
    {
        v1_status.insert(
            "currentCPUUtilizationPercentage".into(),
            utilization.clone(),
        );
    }
    annotate(&mut annotations, CURRENT_METRICS, &Value::Array(other));
    annotate(&mut annotations, CONDITIONS, &status["conditions"]);
    let mut v1 = v2.clone();
    v1["apiVersion"] = json!("autoscaling/v1");
    v1["spec"] = Value::Object(v1_spec);
    if v2.get("status").is_some() {
        v1["status"] = Value::Object(v1_status);
    }
    if !annotations.is_empty()
        && let Some(md) = meta::member_mut(&mut v1).and_then(Value::as_object_mut)
    {
        let existing = md.entry("annotations").or_insert_with(|| json!({}));
        if let Some(existing) = existing.as_object_mut() {
            existing.extend(annotations);
        }
    }
    v1
}

fn annotate(annotations: &mut Map<String, Value>, key: &str, value: &Value) {
    let empty = match value {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        _ => false,
    };
    if !empty {
        annotations.insert(key.into(), json!(value.to_string()));
    }
}

/// Take (and remove) a JSON annotation written by [`to_v1`].
fn take_annotation(v1: &mut Value, key: &str) -> Option<Value> {
    let annotations = meta::member_mut(v1)?
        .get_mut("annotations")?
        .as_object_mut()?;
    let value = annotations.remove(key)?;
    serde_json::from_str(value.as_str()?).ok()
}

/// A v1 object as it is stored (v2).
fn to_v2(v1: &Value) -> Value {
    let mut v1 = v1.clone();
    let other = take_annotation(&mut v1, METRICS);
    let behavior = take_annotation(&mut v1, BEHAVIOR);
    let current_other = take_annotation(&mut v1, CURRENT_METRICS);
    let conditions = take_annotation(&mut v1, CONDITIONS);
    if let Some(md) = meta::member_mut(&mut v1).and_then(Value::as_object_mut)
        && md
            .get("annotations")
            .and_then(Value::as_object)
            .is_some_and(Map::is_empty)
    {
        md.remove("annotations");
    }
    let (spec, status) = (&v1["spec"], &v1["status"]);
    let mut v2_spec = Map::new();
    copy(
        spec,
        &mut v2_spec,
        &["scaleTargetRef", "minReplicas", "maxReplicas"],
    );
    let mut metrics = Vec::new();
    let target = spec
        .get("targetCPUUtilizationPercentage")
        .cloned()
        .filter(|t| !t.is_null());
    let other = other
        .and_then(|o| o.as_array().cloned())
        .unwrap_or_default();
    if target.is_some() || other.is_empty() {
        let utilization = target.unwrap_or(json!(DEFAULT_CPU_UTILIZATION));
        metrics.push(json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": utilization}}}));
    }
    metrics.extend(other);
    v2_spec.insert("metrics".into(), Value::Array(metrics));
    if let Some(behavior) = behavior {
        v2_spec.insert("behavior".into(), behavior);
    }
    let mut v2 = v1.clone();
    v2["apiVersion"] = json!("autoscaling/v2");
    v2["spec"] = Value::Object(v2_spec);
    if let Some(status) = status.as_object() {
        let mut v2_status = Map::new();
        copy(
            &Value::Object(status.clone()),
            &mut v2_status,
            &[
                "observedGeneration",
                "lastScaleTime",
                "currentReplicas",
                "desiredReplicas",
            ],
        );
        let mut current = Vec::new();
        if let Some(u) = status.get("currentCPUUtilizationPercentage") {
            current.push(json!({"type": "Resource", "resource": {"name": "cpu",
                "current": {"averageUtilization": u}}}));
        }
        current.extend(
            current_other
                .and_then(|o| o.as_array().cloned())
                .unwrap_or_default(),
        );
        if !current.is_empty() {
            v2_status.insert("currentMetrics".into(), Value::Array(current));
        }
        if let Some(conditions) = conditions {
            v2_status.insert("conditions".into(), conditions);
        }
        v2["status"] = Value::Object(v2_status);
    }
    v2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_targets_round_trip_and_other_metrics_travel_in_annotations() {
        let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                     "minReplicas": 1, "maxReplicas": 5, "targetCPUUtilizationPercentage": 60}});
        let v2 = to_v2(&v1);
        assert_eq!(
            v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
            60
        );
        assert_eq!(to_v1(&v2), v1);
        let mut with_memory = v2.clone();
        with_memory["spec"]["metrics"]
            .as_array_mut()
            .unwrap()
            .push(json!({"type": "Resource", "resource": {"name": "memory",
                "target": {"type": "AverageValue", "averageValue": "1Gi"}}}));
        let shown = to_v1(&with_memory);
        assert!(shown["metadata"]["annotations"][METRICS].is_string());
        assert_eq!(to_v2(&shown), with_memory);
    }

    #[test]
    fn v1_without_a_target_means_80_percent_cpu() {
        let v2 = to_v2(&json!({"metadata": {"name": "web"}, "spec": {"maxReplicas": 3}}));
        assert_eq!(
            v2["spec"]["metrics"][0]["resource"]["target"],
            json!({"type": "Utilization", "averageUtilization": 80})
        );
    }
}
