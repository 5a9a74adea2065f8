//! What upstream's registry strategies (`pkg/registry/<group>/<kind>/strategy.go`)
//! do to a table kind's object beyond defaulting: a Pod starts Pending with
//! its QoS class and is deleted gracefully; a Job gets its generated selector
//! (and, as a ReplicationController, orphans its dependents unless told
//! otherwise); a DaemonSet its template generation.

use apimachinery::DynamicObject;
use serde_json::{Map, Value, json};

use super::dra;

/// The rule run when an object of `group`/`kind` is created (after its status
/// was cleared, before the second defaulting).
pub fn on_create(group: &str, kind: &str) -> Option<fn(&mut DynamicObject)> {
    match (group, kind) {
        ("", "Pod") => Some(pod_created),
        ("batch", "Job") => Some(job_selector),
        ("apps", "DaemonSet") => Some(daemonset_created),
        ("", "PersistentVolume") => Some(persistent_volume_created),
        ("resource.k8s.io", "ResourceClaim") => Some(|c| dra::drop_alpha_claim_fields(c, None)),
        ("resource.k8s.io", "ResourceClaimTemplate") => {
            Some(|t| dra::drop_alpha_template_fields(t, None))
        }
        ("resource.k8s.io", "ResourceSlice") => Some(|s| dra::drop_alpha_slice_fields(s, None)),
        _ => None,
    }
}

/// The rule run when the main resource of `group`/`kind` is updated.
pub fn on_update(group: &str, kind: &str) -> Option<fn(&mut DynamicObject, &DynamicObject)> {
    match (group, kind) {
        ("apps", "DaemonSet") => Some(daemonset_updated),
        ("resource.k8s.io", "ResourceClaim") => {
            Some(|new, old| dra::drop_alpha_claim_fields(new, Some(old)))
        }
        ("resource.k8s.io", "ResourceClaimTemplate") => {
            Some(|new, old| dra::drop_alpha_template_fields(new, Some(old)))
        }
        ("resource.k8s.io", "ResourceSlice") => {
            Some(|new, old| dra::drop_alpha_slice_fields(new, Some(old)))
        }
        ("resource.k8s.io", "DeviceTaintRule") => Some(dra::taint_rule_updated),
        _ => None,
    }
}

/// The rule run on a `/status` write of `group`/`kind`, after the stored
/// object took the new status (fields of gates that are off are dropped).
pub fn on_status_update(group: &str, kind: &str) -> Option<fn(&mut DynamicObject, &DynamicObject)> {
    match (group, kind) {
        ("storage.k8s.io", "CSINode") => Some(super::storage::csi_node_status_written),
        // Old kubelets corrupted owner references through pods/status.
        ("", "Pod") => Some(|new, old| {
            new.metadata
                .owner_references
                .clone_from(&old.metadata.owner_references);
        }),
        _ => None,
    }
}

/// Whether a `/status` write of `group`/`kind` may change labels,
/// annotations, finalizers and owner references: most status strategies put
/// back only the spec; these call `ResetObjectMetaForStatus`.
pub fn status_keeps_metadata(group: &str, kind: &str) -> bool {
    !matches!(
        (group, kind),
        ("networking.k8s.io", "ServiceCIDR")
            | ("storagemigration.k8s.io", "StorageVersionMigration")
            | ("resource.k8s.io", "ResourceClaim" | "DeviceTaintRule")
            | ("internal.apiserver.k8s.io", "StorageVersion")
            | ("storage.k8s.io", "VolumeAttachment" | "CSINode")
            | ("certificates.k8s.io", "PodCertificateRequest")
    )
}

/// The warnings a write of `group`/`kind` gets (upstream's `WarningsOnCreate`
/// and `WarningsOnUpdate`).
pub fn warnings(group: &str, kind: &str) -> Option<fn(&DynamicObject) -> Vec<String>> {
    match (group, kind) {
        ("resource.k8s.io", "ResourceSlice") => Some(dra::slice_warnings),
        _ => None,
    }
}

/// Whether a DELETE without a propagation policy orphans dependents
/// (`DefaultGarbageCollectionPolicy`: batch/v1 Jobs and v1
/// ReplicationControllers keep their old default).
pub fn orphans_by_default(group: &str, kind: &str) -> bool {
    matches!(
        (group, kind),
        ("batch", "Job") | ("", "ReplicationController")
    )
}

/// Whether a DELETE that removes the object answers with it rather than a
/// `Success` Status (upstream's stores with `ReturnDeletedObject: true`; the
/// kinds with strategies of their own set it themselves).
pub fn returns_deleted_object(group: &str, kind: &str) -> bool {
    matches!(
        (group, kind),
        (
            "",
            "PersistentVolume" | "PersistentVolumeClaim" | "Pod" | "PodTemplate" | "ResourceQuota"
        ) | (
            "storage.k8s.io",
            "CSIDriver" | "CSINode" | "StorageClass" | "VolumeAttachment" | "VolumeAttributesClass"
        ) | (
            "resource.k8s.io",
            "DeviceClass" | "ResourceClaim" | "ResourceClaimTemplate" | "ResourceSlice"
        )
    )
}

/// Whether a PUT of a missing object of `group`/`kind` creates it: upstream's
/// strategies whose `AllowCreateOnUpdate` is true (`pkg/registry/core/{endpoint,
/// event,limitrange,service}`, `coordination/{lease,leasecandidate}`,
/// `rbac/{role,rolebinding,clusterrole,clusterrolebinding}`,
/// `node/runtimeclass`; events.k8s.io's Events are core's strategy). Every
/// other strategy, CRDs', custom resources' and APIServices' answer false.
pub fn creates_on_update(group: &str, kind: &str) -> bool {
    matches!(
        (group, kind),
        ("", "Endpoints" | "Event" | "LimitRange" | "Service")
            | ("events.k8s.io", "Event")
            | ("coordination.k8s.io", "Lease" | "LeaseCandidate")
            | (
                "rbac.authorization.k8s.io",
                "Role" | "RoleBinding" | "ClusterRole" | "ClusterRoleBinding"
            )
            | ("node.k8s.io", "RuntimeClass")
    )
}

/// Why `name` of `group`/`kind` may not be deleted (upstream's PriorityClass
/// store: the two system classes).
pub fn refuse_delete(group: &str, kind: &str, name: &str) -> Option<&'static str> {
    let system = matches!(name, "system-node-critical" | "system-cluster-critical");
    (group == "scheduling.k8s.io" && kind == "PriorityClass" && system)
        .then_some("this is a system priority class and cannot be deleted")
}

/// The warning a DELETE of `group`/`kind` without a propagation policy gets
/// (upstream's Job store).
pub fn default_propagation_warning(group: &str, kind: &str) -> Option<&'static str> {
    (group == "batch" && kind == "Job").then_some(
        "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning",
    )
}

/// The graceful deletion period of `group`/`kind` (upstream's
/// `CheckGracefulDelete`), for kinds deleted gracefully.
pub fn grace_period(group: &str, kind: &str) -> Option<fn(&DynamicObject, Option<i64>) -> i64> {
    match (group, kind) {
        ("", "Pod") => Some(pod_grace_period),
        _ => None,
    }
}

fn object_mut<'a>(parent: &'a mut Value, key: &str) -> Option<&'a mut Map<String, Value>> {
    parent
        .as_object_mut()
        .and_then(|map| object_mut_in(map, key))
}

// ---- Pod ----

/// A pod starts Pending with its QoS class (its tolerations, priority and
/// service account are admission's: `admission::in_tree`).
fn pod_created(pod: &mut DynamicObject) {
    let mut status = json!({"phase": "Pending", "qosClass": qos_class(pod)});
    let gated = pod
        .pointer("/spec/schedulingGates")
        .and_then(Value::as_array)
        .is_some_and(|g| !g.is_empty());
    if gated {
        status["conditions"] = json!([{
            "type": "PodScheduled",
            "status": "False",
            "lastProbeTime": null,
            "lastTransitionTime": apimachinery::time::now_rfc3339(),
            "reason": "SchedulingGated",
            "message": "Scheduling is blocked due to non-empty scheduling gates",
        }]);
    }
    pod["status"] = status;
}

/// The requested period, else the pod's `terminationGracePeriodSeconds`;
/// 0 for a pod no node runs or one that has finished (nothing to stop).
/// A new volume is Pending since now (`status.lastPhaseTransitionTime`).
fn persistent_volume_created(pv: &mut DynamicObject) {
    if let Some(status) = object_mut(pv, "status") {
        status.insert(
            "lastPhaseTransitionTime".into(),
            Value::from(apimachinery::time::now_rfc3339()),
        );
    }
}

fn pod_grace_period(pod: &DynamicObject, requested: Option<i64>) -> i64 {
    let unscheduled = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty);
    let finished = matches!(
        pod.pointer("/status/phase").and_then(Value::as_str),
        Some("Failed" | "Succeeded")
    );
    if unscheduled || finished {
        return 0;
    }
    requested
        .or_else(|| {
            pod.pointer("/spec/terminationGracePeriodSeconds")
                .and_then(Value::as_i64)
        })
        .unwrap_or(0)
}

/// Upstream's `GetPodQOS` (after defaulting, so limits imply requests):
/// no requests or limits anywhere → BestEffort; cpu and memory limited on
/// every container with requests equal to limits → Guaranteed; else Burstable.
pub fn qos_class(pod: &Value) -> &'static str {
    let containers = ["containers", "initContainers"]
        .iter()
        .filter_map(|f| pod.pointer(&format!("/spec/{f}")).and_then(Value::as_array))
        .flatten();
    let mut any = false;
    let mut guaranteed = true;
    for container in containers {
        let requests = container.pointer("/resources/requests");
        let limits = container.pointer("/resources/limits");
        let named = |list: Option<&Value>, r: &str| list.and_then(|l| l.get(r)).cloned();
        for resource in ["cpu", "memory"] {
            let (request, limit) = (named(requests, resource), named(limits, resource));
            any |= request.is_some() || limit.is_some();
            if limit.is_none() || request.is_some_and(|r| Some(r) != named(limits, resource)) {
                guaranteed = false;
            }
        }
    }
    match (any, guaranteed) {
        (false, _) => "BestEffort",
        (true, true) => "Guaranteed",
        (true, false) => "Burstable",
    }
}

// ---- Job ----

const JOB_UID_LABEL: &str = "batch.kubernetes.io/controller-uid";
const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";
const LEGACY_JOB_UID_LABEL: &str = "controller-uid";
const LEGACY_JOB_NAME_LABEL: &str = "job-name";

/// `generateSelectorIfNeeded`: unless `spec.manualSelector`, label the
/// template with the Job's uid and name (keeping labels the user set) and
/// select on the uid.
fn job_selector(job: &mut DynamicObject) {
    let manual = job
        .pointer("/spec/manualSelector")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if manual {
        return;
    }
    let (uid, name) = (job.metadata.uid.clone(), job.metadata.name.clone());
    let Some(spec) = job.get_mut("spec") else {
        return;
    };
    if let Some(labels) = object_mut(spec, "template")
        .and_then(|t| object_mut_in(t, "metadata"))
        .and_then(|m| object_mut_in(m, "labels"))
    {
        for (key, value) in [
            (LEGACY_JOB_UID_LABEL, &uid),
            (JOB_UID_LABEL, &uid),
            (LEGACY_JOB_NAME_LABEL, &name),
            (JOB_NAME_LABEL, &name),
        ] {
            labels.entry(key).or_insert_with(|| json!(value));
        }
    }
    if let Some(match_labels) =
        object_mut(spec, "selector").and_then(|s| object_mut_in(s, "matchLabels"))
    {
        match_labels
            .entry(JOB_UID_LABEL)
            .or_insert_with(|| json!(uid));
    }
}

fn object_mut_in<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    let child = map.entry(key).or_insert_with(|| json!({}));
    if child.is_null() {
        *child = json!({});
    }
    child.as_object_mut()
}

// ---- DaemonSet ----

/// apps/v1 shows the internal `spec.templateGeneration` as this annotation.
const TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";

fn daemonset_created(ds: &mut DynamicObject) {
    set_template_generation(ds, 1);
}

/// The template generation is the server's: kept, and bumped when the
/// template changes.
fn daemonset_updated(new: &mut DynamicObject, old: &DynamicObject) {
    let previous = old
        .metadata
        .annotations
        .get(TEMPLATE_GENERATION)
        .and_then(|g| g.parse::<i64>().ok())
        .unwrap_or(1);
    let changed = new.pointer("/spec/template") != old.pointer("/spec/template");
    set_template_generation(new, previous + i64::from(changed));
}

fn set_template_generation(ds: &mut DynamicObject, generation: i64) {
    let annotations = &mut ds.metadata.annotations;
    annotations.insert(TEMPLATE_GENERATION.into(), generation.to_string());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::typed_objects::{typed, with_typed};

    #[test]
    fn qos_classes_as_upstream() {
        // pkg/apis/core/helper/qos TestComputePodQOS's shapes.
        let pod = |resources: Value| json!({"spec": {"containers": [{"resources": resources}]}});
        assert_eq!(qos_class(&pod(json!({}))), "BestEffort");
        let cpu_mem = json!({"cpu": "100m", "memory": "100Mi"});
        assert_eq!(
            qos_class(&pod(json!({"requests": cpu_mem, "limits": cpu_mem}))),
            "Guaranteed"
        );
        assert_eq!(
            qos_class(&pod(json!({"requests": {"cpu": "100m"}}))),
            "Burstable"
        );
        assert_eq!(
            qos_class(&pod(
                json!({"requests": {"cpu": "50m", "memory": "100Mi"}, "limits": cpu_mem})
            )),
            "Burstable"
        );
    }

    #[test]
    fn a_pod_starts_pending_with_its_qos_class() {
        let mut pod = json!({"spec": {"containers": [{"name": "c"}]}});
        with_typed(&mut pod, pod_created);
        assert_eq!(
            pod["status"],
            json!({"phase": "Pending", "qosClass": "BestEffort"})
        );
    }

    // pkg/registry/core/pod TestCheckGracefulDelete's cases.
    #[test]
    fn only_running_pods_are_deleted_gracefully() {
        let pod = |node: &str, phase: &str| {
            json!({"spec": {"nodeName": node, "terminationGracePeriodSeconds": 30},
                "status": {"phase": phase}})
        };
        assert_eq!(
            pod_grace_period(&typed(&pod("node-1", "Running")), None),
            30
        );
        assert_eq!(
            pod_grace_period(&typed(&pod("node-1", "Running")), Some(5)),
            5
        );
        assert_eq!(pod_grace_period(&typed(&pod("", "Pending")), None), 0);
        assert_eq!(
            pod_grace_period(&typed(&pod("node-1", "Succeeded")), None),
            0
        );
        assert_eq!(
            pod_grace_period(&typed(&pod("node-1", "Failed")), Some(10)),
            0
        );
    }

    #[test]
    fn a_job_selects_its_uid_unless_manual() {
        let mut job = json!({"metadata": {"name": "pi", "uid": "u1"},
            "spec": {"template": {"metadata": {"labels": {"job-name": "mine"}}}}});
        with_typed(&mut job, job_selector);
        let labels = &job["spec"]["template"]["metadata"]["labels"];
        assert_eq!(labels["job-name"], "mine");
        assert_eq!(labels[JOB_NAME_LABEL], "pi");
        assert_eq!(labels[JOB_UID_LABEL], "u1");
        assert_eq!(
            job["spec"]["selector"],
            json!({"matchLabels": {JOB_UID_LABEL: "u1"}})
        );
        let mut manual =
            json!({"metadata": {"name": "pi", "uid": "u1"}, "spec": {"manualSelector": true}});
        with_typed(&mut manual, job_selector);
        assert!(manual["spec"].get("selector").is_none());
    }

    #[test]
    fn a_daemonset_template_change_bumps_its_generation() {
        let mut old = json!({"spec": {"template": {"spec": {"a": 1}}}});
        with_typed(&mut old, daemonset_created);
        let mut same = old.clone();
        with_typed(&mut same, |n| daemonset_updated(n, &typed(&old)));
        assert_eq!(same["metadata"]["annotations"][TEMPLATE_GENERATION], "1");
        let mut changed = json!({"metadata": {"annotations": {TEMPLATE_GENERATION: "7"}},
            "spec": {"template": {"spec": {"a": 2}}}});
        with_typed(&mut changed, |n| daemonset_updated(n, &typed(&old)));
        assert_eq!(changed["metadata"]["annotations"][TEMPLATE_GENERATION], "2");
    }
}
