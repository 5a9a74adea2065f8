//! Printer columns and cells of built-in kinds, as kube-apiserver's
//! `pkg/printers/internalversion` prints them for `as=Table`.
//!
//! The cells follow upstream v1.33 `printers.go` with `Wide: true` (the server
//! always prints wide), read from the objects' JSON as served (apps/v1,
//! batch/v1, ...). Name and Age are the caller's: `row` leaves both out and
//! [`TableColumn::age`] marks where upstream puts Age.

use std::collections::{BTreeSet, HashSet};

use apimachinery::selector::label::LabelSelector;
use serde_json::{Map, Value, json};

use crate::resource::TableColumn;
use apimachinery::time::human_duration;

/// A kind's columns after `Name` (with [`TableColumn::age`] where upstream puts
/// `Age`) and the cells of one object (without Name and Age).
pub struct Printer {
    pub columns: Vec<TableColumn>,
    pub row: fn(&Value) -> Vec<Value>,
}

/// How one object becomes its cells.
type RowFn = fn(&Value) -> Vec<Value>;

/// The printer of `group`/`kind`; `None` for kinds printed with upstream's
/// default table (Name, Created At) or printed elsewhere.
pub fn printer(group: &str, kind: &str) -> Option<Printer> {
    let (columns, row): (Vec<TableColumn>, RowFn) = match (group, kind) {
        ("", "Pod") => (pod_columns(), pod_row),
        ("", "PodTemplate") => (pod_template_columns(), pod_template_row),
        ("", "ReplicationController") => (replicas_columns(RC_SELECTOR), rc_row),
        ("", "Node") => (node_columns(), node_row),
        ("", "PersistentVolume") => (pv_columns(), pv_row),
        ("", "PersistentVolumeClaim") => (pvc_columns(), pvc_row),
        ("", "ComponentStatus") => (component_status_columns(), component_status_row),
        ("", "ResourceQuota") => (resource_quota_columns(), resource_quota_row),
        ("apps", "Deployment") => (deployment_columns(), deployment_row),
        ("apps", "ReplicaSet") => (replicas_columns(RS_SELECTOR), replica_set_row),
        ("apps", "StatefulSet") => (stateful_set_columns(), stateful_set_row),
        ("apps", "DaemonSet") => (daemon_set_columns(), daemon_set_row),
        ("apps", "ControllerRevision") => (controller_revision_columns(), controller_revision_row),
        ("batch", "Job") => (job_columns(), job_row),
        ("batch", "CronJob") => (cron_job_columns(), cron_job_row),
        ("autoscaling", "HorizontalPodAutoscaler") => (hpa_columns(), hpa_row),
        ("policy", "PodDisruptionBudget") => (pdb_columns(), pdb_row),
        ("networking.k8s.io", "Ingress") => (ingress_columns(), ingress_row),
        ("networking.k8s.io", "IngressClass") => (ingress_class_columns(), ingress_class_row),
        ("networking.k8s.io", "NetworkPolicy") => (network_policy_columns(), network_policy_row),
        ("networking.k8s.io", "ServiceCIDR") => (service_cidr_columns(), service_cidr_row),
        ("networking.k8s.io", "IPAddress") => (ip_address_columns(), ip_address_row),
        ("storage.k8s.io", "StorageClass") => (storage_class_columns(), storage_class_row),
        ("storage.k8s.io", "CSIDriver") => (csi_driver_columns(), csi_driver_row),
        ("storage.k8s.io", "CSINode") => (csi_node_columns(), csi_node_row),
        ("storage.k8s.io", "VolumeAttachment") => {
            (volume_attachment_columns(), volume_attachment_row)
        }
        ("scheduling.k8s.io", "PriorityClass") => (priority_class_columns(), priority_class_row),
        ("node.k8s.io", "RuntimeClass") => (runtime_class_columns(), runtime_class_row),
        ("certificates.k8s.io", "CertificateSigningRequest") => (csr_columns(), csr_row),
        ("certificates.k8s.io", "ClusterTrustBundle") => {
            (cluster_trust_bundle_columns(), cluster_trust_bundle_row)
        }
        ("certificates.k8s.io", "PodCertificateRequest") => (
            pod_certificate_request_columns(),
            pod_certificate_request_row,
        ),
        ("storage.k8s.io", "VolumeAttributesClass") => (
            volume_attributes_class_columns(),
            volume_attributes_class_row,
        ),
        ("resource.k8s.io", "DeviceClass" | "ResourceClaimTemplate") => {
            (vec![TableColumn::age()], no_cells)
        }
        ("resource.k8s.io", "ResourceClaim") => (resource_claim_columns(), resource_claim_row),
        ("resource.k8s.io", "ResourceSlice") => (resource_slice_columns(), resource_slice_row),
        ("resource.k8s.io", "DeviceTaintRule") => {
            (device_taint_rule_columns(), device_taint_rule_row)
        }
        ("storagemigration.k8s.io", "StorageVersionMigration") => (
            storage_version_migration_columns(),
            storage_version_migration_row,
        ),
        ("flowcontrol.apiserver.k8s.io", "FlowSchema") => (flow_schema_columns(), flow_schema_row),
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration") => {
            (priority_level_columns(), priority_level_row)
        }
        _ => return None,
    };
    Some(Printer { columns, row })
}

// ---------------------------------------------------------------------------
// Reading the JSON.

fn at<'a>(obj: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter()
        .try_fold(obj, |v, key| v.get(key))
        .filter(|v| !v.is_null())
}

fn has(obj: &Value, path: &[&str]) -> bool {
    at(obj, path).is_some()
}

fn text<'a>(obj: &'a Value, path: &[&str]) -> &'a str {
    at(obj, path).and_then(Value::as_str).unwrap_or("")
}

fn int(obj: &Value, path: &[&str]) -> i64 {
    int_or(obj, path, 0)
}

fn int_or(obj: &Value, path: &[&str], default: i64) -> i64 {
    at(obj, path).and_then(Value::as_i64).unwrap_or(default)
}

fn flag(obj: &Value, path: &[&str]) -> Option<bool> {
    at(obj, path).and_then(Value::as_bool)
}

fn list<'a>(obj: &'a Value, path: &[&str]) -> &'a [Value] {
    at(obj, path)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// `s`, or `fallback` when empty (upstream's `"<none>"`/`"<unset>"` idiom).
fn or(s: &str, fallback: &str) -> String {
    if s.is_empty() { fallback } else { s }.to_string()
}

/// The `status` of the first condition of type `kind` in `conditions`.
fn condition_status<'a>(conditions: &'a [Value], kind: &str) -> Option<&'a str> {
    conditions
        .iter()
        .find(|c| text(c, &["type"]) == kind)
        .map(|c| text(c, &["status"]))
}

/// `hasJobCondition` and friends: the first condition of that type is True.
fn condition_true(conditions: &[Value], kind: &str) -> bool {
    condition_status(conditions, kind) == Some("True")
}

/// Seconds from `ts` to now, truncated toward zero like Go's
/// `int(time.Since(t).Seconds())`.
fn seconds_since(ts: &str) -> Option<i64> {
    let ts = apimachinery::time::parse(ts)?;
    Some(jiff::Timestamp::now().duration_since(ts).as_secs())
}

/// `translateTimestampSince`: `<unknown>` for a missing time.
fn since(ts: &str) -> String {
    seconds_since(ts).map_or_else(|| "<unknown>".into(), human_duration)
}

/// `duration.HumanDuration(end - start)` for two wire timestamps.
fn between(start: &str, end: &str) -> String {
    match (
        apimachinery::time::parse(start),
        apimachinery::time::parse(end),
    ) {
        (Some(s), Some(e)) => human_duration(e.duration_since(s).as_secs()),
        _ => String::new(),
    }
}

// ---------------------------------------------------------------------------
// Shared cell formats.

/// `layoutContainerCells`: names and images of `spec.containers`, each joined by `,`.
fn container_cells(pod_spec: Option<&Value>) -> [Value; 2] {
    let containers = pod_spec.map_or(&[][..], |s| list(s, &["containers"]));
    let join = |field: &str| {
        containers
            .iter()
            .map(|c| text(c, &[field]))
            .collect::<Vec<_>>()
            .join(",")
    };
    [json!(join("name")), json!(join("image"))]
}

/// `labels.FormatLabels`: sorted `k=v` joined by `,`, `<none>` when empty.
pub fn format_labels(map: Option<&Value>) -> String {
    let Some(map) = map.and_then(Value::as_object).filter(|m| !m.is_empty()) else {
        return "<none>".into();
    };
    let mut pairs: Vec<String> = map
        .iter()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    pairs.sort();
    pairs.join(",")
}

/// `metav1.LabelSelectorAsSelector(sel).String()`, or `None` when invalid.
fn selector_string(sel: Option<&Value>) -> Option<String> {
    LabelSelector::from_json(sel.unwrap_or(&Value::Null))
        .ok()
        .map(|s| s.to_string())
}

/// `metav1.FormatLabelSelector`: `<none>` when empty, `<error>` when invalid.
pub fn format_label_selector(sel: Option<&Value>) -> String {
    match selector_string(sel) {
        None => "<error>".into(),
        Some(s) => or(&s, "<none>"),
    }
}

/// `printBoolPtr`: `True`, `False` or `<unset>`.
fn bool_ptr(value: Option<bool>) -> String {
    match value {
        Some(true) => "True".into(),
        Some(false) => "False".into(),
        None => "<unset>".into(),
    }
}

/// An `intstr.IntOrString` as `String()` prints it.
fn int_or_string(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// A quantity cell: upstream prints the canonical form; the stored text is used
/// as is, and a missing quantity prints as the zero quantity `0`.
fn quantity(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "0".into(),
    }
}

/// `helper.GetAccessModesAsString`: short forms in a fixed order.
fn access_modes(modes: &[Value]) -> String {
    let has = |m: &str| modes.iter().any(|v| v.as_str() == Some(m));
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(long, _)| has(long))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

/// Columns shared by RC, RS, Deployment, DaemonSet, Job and CronJob (wide).
fn containers_images() -> [TableColumn; 2] {
    [
        TableColumn::new(
            "Containers",
            "string",
            "Names of each container in the template.",
        )
        .wide(),
        TableColumn::new(
            "Images",
            "string",
            "Images referenced by each container in the template.",
        )
        .wide(),
    ]
}

const RC_SELECTOR: &str = "Selector is a label query over pods that should match the Replicas count. If Selector is empty, it is defaulted to the labels present on the Pod template. Label keys and values that must match in order to be controlled by this replication controller, if empty defaulted to labels on Pod template. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";
const RS_SELECTOR: &str = "Selector is a label query over pods that should match the replica count. If the selector is empty, it is defaulted to the labels present on the pod template. Label keys and values that must match in order to be controlled by this replica set. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";
const TEMPLATE_SELECTOR: &str = "A label query over pods that should match the pod count. Normally, the system sets this field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";

fn with_wide_template(mut cols: Vec<TableColumn>, selector: &'static str) -> Vec<TableColumn> {
    cols.extend(containers_images());
    cols.push(TableColumn::new("Selector", "string", selector).wide());
    cols
}

// ---------------------------------------------------------------------------
// Pods.

fn pod_columns() -> Vec<TableColumn> {
    vec![
        TableColumn::new("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
        TableColumn::new("Status", "string", "The aggregate status of the containers in this pod."),
        TableColumn::new(
            "Restarts",
            "string",
            "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
        ),
        TableColumn::age(),
        TableColumn::new("IP", "string", "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.").wide(),
        TableColumn::new("Node", "string", "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName.").wide(),
        TableColumn::new("Nominated Node", "string", "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods.").wide(),
        TableColumn::new("Readiness Gates", "string", "If specified, all readiness gates will be evaluated for pod readiness. More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates").wide(),
    ]
}

/// What `printPod` accumulates over the container statuses.
#[derive(Default)]
struct PodTally {
    reason: String,
    ready: usize,
    restarts: i64,
    last_restart: Option<jiff::Timestamp>,
}

fn later(a: Option<jiff::Timestamp>, b: Option<jiff::Timestamp>) -> Option<jiff::Timestamp> {
    a.max(b)
}

fn last_terminated(status: &Value) -> Option<jiff::Timestamp> {
    at(status, &["lastState", "terminated"])?;
    apimachinery::time::parse(text(status, &["lastState", "terminated", "finishedAt"]))
}

/// `Signal:n` or `ExitCode:n` for a terminated state without a reason.
fn exit_reason(terminated: &Value) -> String {
    match int(terminated, &["signal"]) {
        0 => format!("ExitCode:{}", int(terminated, &["exitCode"])),
        signal => format!("Signal:{signal}"),
    }
}

/// The init-container pass of `printPod`; returns whether the pod is still
/// initializing, and the restarts of restartable (sidecar) init containers.
fn pod_init_pass(pod: &Value, sidecars: &HashSet<&str>, tally: &mut PodTally) -> (bool, PodTally) {
    let mut sidecar_tally = PodTally::default();
    let init_count = list(pod, &["spec", "initContainers"]).len();
    for (i, c) in list(pod, &["status", "initContainerStatuses"])
        .iter()
        .enumerate()
    {
        let restarts = int(c, &["restartCount"]);
        tally.restarts += restarts;
        tally.last_restart = later(tally.last_restart, last_terminated(c));
        let sidecar = sidecars.contains(text(c, &["name"]));
        if sidecar {
            sidecar_tally.restarts += restarts;
            sidecar_tally.last_restart = later(sidecar_tally.last_restart, last_terminated(c));
        }
        let terminated = at(c, &["state", "terminated"]);
        let waiting = text(c, &["state", "waiting", "reason"]);
        match terminated {
            Some(t) if int(t, &["exitCode"]) == 0 => continue,
            _ if sidecar && flag(c, &["started"]) == Some(true) => {
                if flag(c, &["ready"]) == Some(true) {
                    tally.ready += 1;
                }
                continue;
            }
            Some(t) => {
                tally.reason = match text(t, &["reason"]) {
                    "" => format!("Init:{}", exit_reason(t)),
                    r => format!("Init:{r}"),
                };
            }
            None if !waiting.is_empty() && waiting != "PodInitializing" => {
                tally.reason = format!("Init:{waiting}");
            }
            None => tally.reason = format!("Init:{i}/{init_count}"),
        }
        return (true, sidecar_tally);
    }
    (false, sidecar_tally)
}

/// The regular-container pass of `printPod` (last container's state wins).
fn pod_container_pass(pod: &Value, tally: &mut PodTally) {
    let mut has_running = false;
    for c in list(pod, &["status", "containerStatuses"]).iter().rev() {
        tally.restarts += int(c, &["restartCount"]);
        tally.last_restart = later(tally.last_restart, last_terminated(c));
        let waiting = text(c, &["state", "waiting", "reason"]);
        let terminated = at(c, &["state", "terminated"]);
        if !waiting.is_empty() {
            tally.reason = waiting.to_string();
        } else if let Some(t) = terminated {
            tally.reason = match text(t, &["reason"]) {
                "" => exit_reason(t),
                r => r.to_string(),
            };
        } else if flag(c, &["ready"]) == Some(true) && has(c, &["state", "running"]) {
            has_running = true;
            tally.ready += 1;
        }
    }
    if tally.reason == "Completed" && has_running {
        let conditions = list(pod, &["status", "conditions"]);
        tally.reason = if condition_true(conditions, "Ready") {
            "Running".into()
        } else {
            "NotReady".into()
        };
    }
}

/// `printPod`'s Status column before the deletion rules.
fn pod_base_reason(pod: &Value) -> String {
    let mut reason = or(
        text(pod, &["status", "reason"]),
        text(pod, &["status", "phase"]),
    );
    let gated = list(pod, &["status", "conditions"])
        .iter()
        .any(|c| text(c, &["type"]) == "PodScheduled" && text(c, &["reason"]) == "SchedulingGated");
    if gated {
        reason = "SchedulingGated".into();
    }
    reason
}

fn pod_row(pod: &Value) -> Vec<Value> {
    let init_specs = list(pod, &["spec", "initContainers"]);
    let sidecars: HashSet<&str> = init_specs
        .iter()
        .filter(|c| text(c, &["restartPolicy"]) == "Always")
        .map(|c| text(c, &["name"]))
        .collect();
    let sidecar_count = init_specs
        .iter()
        .filter(|c| text(c, &["restartPolicy"]) == "Always")
        .count();
    let total = list(pod, &["spec", "containers"]).len() + sidecar_count;

    let mut tally = PodTally {
        reason: pod_base_reason(pod),
        ..PodTally::default()
    };
    let (initializing, sidecar_tally) = pod_init_pass(pod, &sidecars, &mut tally);
    let initialized = condition_true(list(pod, &["status", "conditions"]), "Initialized");
    if !initializing || initialized {
        tally.restarts = sidecar_tally.restarts;
        tally.last_restart = sidecar_tally.last_restart;
        pod_container_pass(pod, &mut tally);
    }

    let phase = text(pod, &["status", "phase"]);
    if has(pod, &["metadata", "deletionTimestamp"]) {
        if text(pod, &["status", "reason"]) == "NodeLost" {
            tally.reason = "Unknown".into();
        } else if phase != "Succeeded" && phase != "Failed" {
            tally.reason = "Terminating".into();
        }
    }

    let mut restarts = tally.restarts.to_string();
    if let (true, Some(last)) = (tally.restarts != 0, tally.last_restart) {
        let ago = human_duration(jiff::Timestamp::now().duration_since(last).as_secs());
        restarts = format!("{} ({ago} ago)", tally.restarts);
    }

    let ip = list(pod, &["status", "podIPs"])
        .first()
        .map(|ip| text(ip, &["ip"]))
        .unwrap_or_else(|| text(pod, &["status", "podIP"]));
    vec![
        json!(format!("{}/{total}", tally.ready)),
        json!(tally.reason),
        json!(restarts),
        json!(or(ip, "<none>")),
        json!(or(text(pod, &["spec", "nodeName"]), "<none>")),
        json!(or(text(pod, &["status", "nominatedNodeName"]), "<none>")),
        json!(readiness_gates(pod)),
    ]
}

/// `"<true>/<total>"` over `spec.readinessGates`, or `<none>`.
fn readiness_gates(pod: &Value) -> String {
    let gates = list(pod, &["spec", "readinessGates"]);
    if gates.is_empty() {
        return "<none>".into();
    }
    let conditions = list(pod, &["status", "conditions"]);
    let passing = gates
        .iter()
        .filter(|g| condition_true(conditions, text(g, &["conditionType"])))
        .count();
    format!("{passing}/{}", gates.len())
}

fn pod_template_columns() -> Vec<TableColumn> {
    vec![
        TableColumn::new(
            "Containers",
            "string",
            "Names of each container in the template.",
        ),
        TableColumn::new(
            "Images",
            "string",
            "Images referenced by each container in the template.",
        ),
        TableColumn::new("Pod Labels", "string", "The labels for the pod template."),
    ]
}

fn pod_template_row(obj: &Value) -> Vec<Value> {
    let [names, images] = container_cells(at(obj, &["template", "spec"]));
    let labels = format_labels(at(obj, &["template", "metadata", "labels"]));
    vec![names, images, json!(labels)]
}

// ---------------------------------------------------------------------------
// Workloads.

fn replicas_columns(selector: &'static str) -> Vec<TableColumn> {
    let cols = vec![
        TableColumn::new(
            "Desired",
            "integer",
            "Replicas is the number of desired replicas.",
        ),
        TableColumn::new(
            "Current",
            "integer",
            "Replicas is the most recently observed number of replicas.",
        ),
        TableColumn::new("Ready", "integer", "The number of ready replicas."),
        TableColumn::age(),
    ];
    with_wide_template(cols, selector)
}

fn rc_row(obj: &Value) -> Vec<Value> {
    let [names, images] = container_cells(at(obj, &["spec", "template", "spec"]));
    vec![
        json!(int_or(obj, &["spec", "replicas"], 1)),
        json!(int(obj, &["status", "replicas"])),
        json!(int(obj, &["status", "readyReplicas"])),
        names,
        images,
        json!(format_labels(at(obj, &["spec", "selector"]))),
    ]
}

fn replica_set_row(obj: &Value) -> Vec<Value> {
    let [names, images] = container_cells(at(obj, &["spec", "template", "spec"]));
    vec![
        json!(int_or(obj, &["spec", "replicas"], 1)),
        json!(int(obj, &["status", "replicas"])),
        json!(int(obj, &["status", "readyReplicas"])),
        names,
        images,
        json!(format_label_selector(at(obj, &["spec", "selector"]))),
    ]
}

fn deployment_columns() -> Vec<TableColumn> {
    let cols = vec![
        TableColumn::new("Ready", "string", "Number of the pod with ready state"),
        TableColumn::new(
            "Up-to-date",
            "string",
            "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
        ),
        TableColumn::new(
            "Available",
            "string",
            "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
        ),
        TableColumn::age(),
    ];
    with_wide_template(
        cols,
        "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.",
    )
}

fn deployment_row(obj: &Value) -> Vec<Value> {
    let [names, images] = container_cells(at(obj, &["spec", "template", "spec"]));
    let selector =
        selector_string(at(obj, &["spec", "selector"])).unwrap_or_else(|| "<invalid>".into());
    vec![
        json!(format!(
            "{}/{}",
            int(obj, &["status", "readyReplicas"]),
            int_or(obj, &["spec", "replicas"], 1)
        )),
        json!(int(obj, &["status", "updatedReplicas"])),
        json!(int(obj, &["status", "availableReplicas"])),
        names,
        images,
        json!(selector),
    ]
}

fn stateful_set_columns() -> Vec<TableColumn> {
    let mut cols = vec![
        TableColumn::new("Ready", "string", "Number of the pod with ready state"),
        TableColumn::age(),
    ];
    cols.extend(containers_images());
    cols
}

fn stateful_set_row(obj: &Value) -> Vec<Value> {
    let [names, images] = container_cells(at(obj, &["spec", "template", "spec"]));
    vec![
        json!(format!(
            "{}/{}",
            int(obj, &["status", "readyReplicas"]),
            int_or(obj, &["spec", "replicas"], 1)
        )),
        names,
        images,
    ]
}

fn daemon_set_columns() -> Vec<TableColumn> {
    let cols = vec![
        TableColumn::new(
            "Desired",
            "integer",
            "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod).",
        ),
        TableColumn::new(
            "Current",
            "integer",
            "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod.",
        ),
        TableColumn::new(
            "Ready",
            "integer",
            "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready.",
        ),
        TableColumn::new(
            "Up-to-date",
            "integer",
            "The total number of nodes that are running updated daemon pod",
        ),
        TableColumn::new(
            "Available",
            "integer",
            "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)",
        ),
        TableColumn::new(
            "Node Selector",
            "string",
            "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a node's labels for the pod to be scheduled on that node. More info: https://kubernetes.io/docs/concepts/configuration/assign-pod-node/",
        ),
        TableColumn::age(),
    ];
    with_wide_template(
        cols,
        "A label query over pods that are managed by the daemon set. Must match in order to be controlled. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
    )
}

fn daemon_set_row(obj: &Value) -> Vec<Value> {
    let [names, images] = container_cells(at(obj, &["spec", "template", "spec"]));
    vec![
        json!(int(obj, &["status", "desiredNumberScheduled"])),
        json!(int(obj, &["status", "currentNumberScheduled"])),
        json!(int(obj, &["status", "numberReady"])),
        json!(int(obj, &["status", "updatedNumberScheduled"])),
        json!(int(obj, &["status", "numberAvailable"])),
        json!(format_labels(at(
            obj,
            &["spec", "template", "spec", "nodeSelector"]
        ))),
        names,
        images,
        json!(format_label_selector(at(obj, &["spec", "selector"]))),
    ]
}

fn controller_revision_columns() -> Vec<TableColumn> {
    vec![
        TableColumn::new("Controller", "string", "Controller of the object"),
        TableColumn::new(
            "Revision",
            "string",
            "Revision indicates the revision of the state represented by Data.",
        ),
        TableColumn::age(),
    ]
}

/// `formatResourceName(gvk.GroupKind(), name, true)` of the controller
/// owner reference, or `<none>`.
fn controller_name(obj: &Value) -> String {
    let Some(owner) = list(obj, &["metadata", "ownerReferences"])
        .iter()
        .find(|r| flag(r, &["controller"]) == Some(true))
    else {
        return "<none>".into();
    };
    let api_version = text(owner, &["apiVersion"]);
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let kind = text(owner, &["kind"]);
    let name = text(owner, &["name"]);
    match (group, kind) {
        ("", "") => name.to_string(),
        ("", k) => format!("{}/{name}", k.to_lowercase()),
        (g, k) => format!("{}/{name}", format!("{k}.{g}").to_lowercase()),
    }
}

fn controller_revision_row(obj: &Value) -> Vec<Value> {
    vec![json!(controller_name(obj)), json!(int(obj, &["revision"]))]
}

fn job_columns() -> Vec<TableColumn> {
    let cols = vec![
        TableColumn::new("Status", "string", "Status of the job."),
        TableColumn::new(
            "Completions",
            "string",
            "The number of pods which reached phase Succeeded.",
        ),
        TableColumn::new("Duration", "string", "Time required to complete the job."),
        TableColumn::age(),
    ];
    with_wide_template(cols, TEMPLATE_SELECTOR)
}

fn job_status(obj: &Value) -> &'static str {
    let conditions = list(obj, &["status", "conditions"]);
    if condition_true(conditions, "Complete") {
        "Complete"
    } else if condition_true(conditions, "Failed") {
        "Failed"
    } else if has(obj, &["metadata", "deletionTimestamp"]) {
        "Terminating"
    } else if condition_true(conditions, "Suspended") {
        "Suspended"
    } else if condition_true(conditions, "FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    }
}

fn job_completions(obj: &Value) -> String {
    let succeeded = int(obj, &["status", "succeeded"]);
    if let Some(completions) = at(obj, &["spec", "completions"]).and_then(Value::as_i64) {
        return format!("{succeeded}/{completions}");
    }
    match int(obj, &["spec", "parallelism"]) {
        p if p > 1 => format!("{succeeded}/1 of {p}"),
        _ => format!("{succeeded}/1"),
    }
}

fn job_duration(obj: &Value) -> String {
    let start = text(obj, &["status", "startTime"]);
    if !has(obj, &["status", "startTime"]) {
        return String::new();
    }
    match at(obj, &["status", "completionTime"]).and_then(Value::as_str) {
        None => seconds_since(start).map(human_duration).unwrap_or_default(),
        Some(end) => between(start, end),
    }
}

fn job_row(obj: &Value) -> Vec<Value> {
    let [names, images] = container_cells(at(obj, &["spec", "template", "spec"]));
    vec![
        json!(job_status(obj)),
        json!(job_completions(obj)),
        json!(job_duration(obj)),
        names,
        images,
        json!(format_label_selector(at(obj, &["spec", "selector"]))),
    ]
}

fn cron_job_columns() -> Vec<TableColumn> {
    let cols = vec![
        TableColumn::new(
            "Schedule",
            "string",
            "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.",
        ),
        TableColumn::new(
            "Timezone",
            "string",
            "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones.",
        ),
        TableColumn::new(
            "Suspend",
            "boolean",
            "This flag tells the controller to suspend subsequent executions, it does not apply to already started executions. Defaults to false.",
        ),
        TableColumn::new(
            "Active",
            "integer",
            "A list of pointers to currently running jobs.",
        ),
        TableColumn::new(
            "Last Schedule",
            "string",
            "Information when was the last time the job was successfully scheduled.",
        ),
        TableColumn::age(),
    ];
    with_wide_template(cols, TEMPLATE_SELECTOR)
}

fn cron_job_row(obj: &Value) -> Vec<Value> {
    let job = at(obj, &["spec", "jobTemplate", "spec"]);
    let [names, images] = container_cells(job.and_then(|j| at(j, &["template", "spec"])));
    let last = match at(obj, &["status", "lastScheduleTime"]).and_then(Value::as_str) {
        Some(ts) => since(ts),
        None => "<none>".into(),
    };
    vec![
        json!(text(obj, &["spec", "schedule"])),
        json!(or(text(obj, &["spec", "timeZone"]), "<none>")),
        // printBoolPtr: a string, although the column type is boolean.
        json!(bool_ptr(flag(obj, &["spec", "suspend"]))),
        json!(list(obj, &["status", "active"]).len()),
        json!(last),
        names,
        images,
        json!(format_label_selector(
            job.and_then(|j| at(j, &["selector"]))
        )),
    ]
}

// ---------------------------------------------------------------------------
// Autoscaling and policy.

fn hpa_columns() -> Vec<TableColumn> {
    vec![
        TableColumn::new(
            "Reference",
            "string",
            "reference to scaled resource; horizontal pod autoscaler will learn the current resource consumption and will set the desired number of pods by using its Scale subresource.",
        ),
        TableColumn::new(
            "Targets",
            "string",
            "metrics contains the specifications for which to use to calculate the desired replica count (the maximum replica count across all metrics will be used).",
        ),
        TableColumn::new(
            "MinPods",
            "string",
            "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.",
        ),
        TableColumn::new(
            "MaxPods",
            "string",
            "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up. It cannot be less that minReplicas.",
        ),
        TableColumn::new(
            "Replicas",
            "string",
            "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler.",
        ),
        TableColumn::age(),
    ]
}

/// `spec.metrics` and `status.currentMetrics`, or their autoscaling/v1 form
/// (`targetCPUUtilizationPercentage`, `currentCPUUtilizationPercentage`) as
/// the v1 conversion turns it into metrics.
fn hpa_metrics(obj: &Value) -> (Vec<Value>, Vec<Value>) {
    if has(obj, &["spec", "metrics"]) || !has(obj, &["spec", "targetCPUUtilizationPercentage"]) {
        return (
            list(obj, &["spec", "metrics"]).to_vec(),
            list(obj, &["status", "currentMetrics"]).to_vec(),
        );
    }
    let target = at(obj, &["spec", "targetCPUUtilizationPercentage"]);
    let specs = vec![json!({"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": target}}})];
    let statuses = at(obj, &["status", "currentCPUUtilizationPercentage"])
        .map(|current| {
            vec![json!({"type": "Resource", "resource": {
                "name": "cpu", "current": {"averageUtilization": current}}})]
        })
        .unwrap_or_default();
    (specs, statuses)
}

/// One `formatHPAMetrics` entry: `current/target`, for value-style metrics.
fn metric_value(spec: &Value, status: Option<&Value>) -> String {
    let avg = at(spec, &["target", "averageValue"]);
    let (current, target, suffix) = match avg {
        Some(avg) => (at_opt(status, &["current", "averageValue"]), avg, " (avg)"),
        None => (
            at_opt(status, &["current", "value"]),
            at(spec, &["target", "value"]).unwrap_or(&Value::Null),
            "",
        ),
    };
    let current = current.map_or("<unknown>".into(), |c| quantity(Some(c)));
    format!("{current}/{}{suffix}", quantity(Some(target)))
}

/// A Pods entry: always average values, printed without `(avg)`.
fn metric_pods(spec: &Value, status: Option<&Value>) -> String {
    let current = at_opt(status, &["current", "averageValue"])
        .map_or("<unknown>".into(), |c| quantity(Some(c)));
    format!(
        "{current}/{}",
        quantity(at(spec, &["target", "averageValue"]))
    )
}

fn at_opt<'a>(v: Option<&'a Value>, path: &[&str]) -> Option<&'a Value> {
    v.and_then(|v| at(v, path))
}

/// A Resource or ContainerResource entry: `name: current/target`.
fn metric_resource(spec: &Value, status: Option<&Value>) -> String {
    let name = text(spec, &["name"]);
    if let Some(avg) = at(spec, &["target", "averageValue"]) {
        let current = at_opt(status, &["current", "averageValue"])
            .map_or("<unknown>".into(), |c| quantity(Some(c)));
        return format!("{name}: {current}/{}", quantity(Some(avg)));
    }
    let percent = |v: Option<&Value>| v.and_then(Value::as_i64).map(|p| format!("{p}%"));
    let current = percent(at_opt(status, &["current", "averageUtilization"]))
        .unwrap_or_else(|| "<unknown>".into());
    let target =
        percent(at(spec, &["target", "averageUtilization"])).unwrap_or_else(|| "<auto>".into());
    format!("{name}: {current}/{target}")
}

/// `formatHPAMetrics`: up to two entries, then ` + N more...`.
fn format_hpa_metrics(specs: &[Value], statuses: &[Value]) -> String {
    if specs.is_empty() {
        return "<none>".into();
    }
    let entries: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let source = |field: &str| {
                (
                    at(spec, &[field]),
                    statuses.get(i).and_then(|s| at(s, &[field])),
                )
            };
            match text(spec, &["type"]) {
                "External" => metric_entry(source("external"), metric_value),
                "Pods" => metric_entry(source("pods"), metric_pods),
                "Object" => metric_entry(source("object"), metric_value),
                "Resource" => metric_entry(source("resource"), metric_resource),
                "ContainerResource" => metric_entry(source("containerResource"), metric_resource),
                _ => "<unknown type>".into(),
            }
        })
        .collect();
    let shown = entries
        .iter()
        .take(2)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    match entries.len() {
        n if n > 2 => format!("{shown} + {} more...", n - 2),
        _ => shown,
    }
}

fn metric_entry(
    (spec, status): (Option<&Value>, Option<&Value>),
    format: fn(&Value, Option<&Value>) -> String,
) -> String {
    spec.map_or_else(|| "<unknown type>".into(), |spec| format(spec, status))
}

fn hpa_row(obj: &Value) -> Vec<Value> {
    let (specs, statuses) = hpa_metrics(obj);
    let min = at(obj, &["spec", "minReplicas"])
        .and_then(Value::as_i64)
        .map_or("<unset>".into(), |m| m.to_string());
    vec![
        json!(format!(
            "{}/{}",
            text(obj, &["spec", "scaleTargetRef", "kind"]),
            text(obj, &["spec", "scaleTargetRef", "name"])
        )),
        json!(format_hpa_metrics(&specs, &statuses)),
        json!(min),
        json!(int(obj, &["spec", "maxReplicas"])),
        json!(int(obj, &["status", "currentReplicas"])),
    ]
}

fn pdb_columns() -> Vec<TableColumn> {
    vec![
        TableColumn::new(
            "Min Available",
            "string",
            "The minimum number of pods that must be available.",
        ),
        TableColumn::new(
            "Max Unavailable",
            "string",
            "The maximum number of pods that may be unavailable.",
        ),
        TableColumn::new(
            "Allowed Disruptions",
            "integer",
            "Calculated number of pods that may be disrupted at this time.",
        ),
        TableColumn::age(),
    ]
}

fn pdb_row(obj: &Value) -> Vec<Value> {
    let bound =
        |field: &str| int_or_string(at(obj, &["spec", field])).unwrap_or_else(|| "N/A".into());
    vec![
        json!(bound("minAvailable")),
        json!(bound("maxUnavailable")),
        json!(int(obj, &["status", "disruptionsAllowed"])),
    ]
}

// ---------------------------------------------------------------------------
// Nodes, volumes and quota.

fn node_columns() -> Vec<TableColumn> {
    vec![
        TableColumn::new("Status", "string", "The status of the node"),
        TableColumn::new("Roles", "string", "The roles of the node"),
        TableColumn::age(),
        TableColumn::new("Version", "string", "Kubelet Version reported by the node."),
        TableColumn::new("Internal-IP", "string", "List of addresses reachable to the node. Queried from cloud provider, if available.").wide(),
        TableColumn::new("External-IP", "string", "List of addresses reachable to the node. Queried from cloud provider, if available.").wide(),
        TableColumn::new("OS-Image", "string", "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).").wide(),
        TableColumn::new("Kernel-Version", "string", "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).").wide(),
        TableColumn::new("Container-Runtime", "string", "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).").wide(),
    ]
}

fn node_status(obj: &Value) -> String {
    // Upstream keeps the last condition of each type.
    let ready = list(obj, &["status", "conditions"])
        .iter()
        .rev()
        .find(|c| text(c, &["type"]) == "Ready");
    let mut status = match ready {
        Some(c) if text(c, &["status"]) == "True" => "Ready".to_string(),
        Some(_) => "NotReady".to_string(),
        None => "Unknown".to_string(),
    };
    if flag(obj, &["spec", "unschedulable"]) == Some(true) {
        status.push_str(",SchedulingDisabled");
    }
    status
}

/// `findNodeRoles`: `node-role.kubernetes.io/<role>` and `kubernetes.io/role=<role>`.
fn node_roles(obj: &Value) -> String {
    let empty = Map::new();
    let labels = at(obj, &["metadata", "labels"])
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let roles: BTreeSet<&str> = labels
        .iter()
        .filter_map(|(k, v)| match k.strip_prefix("node-role.kubernetes.io/") {
            Some(role) => Some(role).filter(|r| !r.is_empty()),
            None if k == "kubernetes.io/role" => v.as_str().filter(|v| !v.is_empty()),
            None => None,
        })
        .collect();
    or(&roles.into_iter().collect::<Vec<_>>().join(","), "<none>")
}

fn node_address(obj: &Value, kind: &str) -> String {
    list(obj, &["status", "addresses"])
        .iter()
        .find(|a| text(a, &["type"]) == kind)
        .map_or("<none>".into(), |a| text(a, &["address"]).to_string())
}

fn node_row(obj: &Value) -> Vec<Value> {
    let info = |field: &str| or(text(obj, &["status", "nodeInfo", field]), "<unknown>");
    vec![
        json!(node_status(obj)),
        json!(node_roles(obj)),
        json!(text(obj, &["status", "nodeInfo", "kubeletVersion"])),
        json!(node_address(obj, "InternalIP")),
        json!(node_address(obj, "ExternalIP")),
        json!(info("osImage")),
        json!(info("kernelVersion")),
        json!(info("containerRuntimeVersion")),
    ]
}

fn pv_columns() -> Vec<TableColumn> {
    vec![
        TableColumn::new("Capacity", "string", "capacity is the description of the persistent volume's resources and capacity. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#capacity"),
        TableColumn::new("Access Modes", "string", "accessModes contains all ways the volume can be mounted. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes"),
        TableColumn::new("Reclaim Policy", "string", "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim."),
        TableColumn::new("Status", "string", "phase indicates if a volume is available, bound to a claim, or released by a claim. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#phase"),
        TableColumn::new("Claim", "string", "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim."),
        TableColumn::new("StorageClass", "string", "StorageClass of the pv"),
        TableColumn::new("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv"),
        TableColumn::new("Reason", "string", "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI."),
        TableColumn::age(),
        TableColumn::new("VolumeMode", "string", "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state.").wide(),
    ]
}

/// The phase, or `Terminating` while deleting.
fn volume_phase(obj: &Value) -> String {
    if has(obj, &["metadata", "deletionTimestamp"]) {
        "Terminating".into()
    } else {
        text(obj, &["status", "phase"]).to_string()
    }
}

/// `helper.GetPersistentVolume(Claim)Class`: the beta annotation wins.
fn storage_class_of(obj: &Value) -> String {
    let annotation = at(
        obj,
        &[
            "metadata",
            "annotations",
            "volume.beta.kubernetes.io/storage-class",
        ],
    );
    match annotation.and_then(Value::as_str) {
        Some(class) => class.to_string(),
        None => text(obj, &["spec", "storageClassName"]).to_string(),
    }
}

fn pv_row(obj: &Value) -> Vec<Value> {
    let claim = match at(obj, &["spec", "claimRef"]) {
        Some(r) => format!("{}/{}", text(r, &["namespace"]), text(r, &["name"])),
        None => String::new(),
    };
    vec![
        json!(quantity(at(obj, &["spec", "capacity", "storage"]))),
        json!(access_modes(list(obj, &["spec", "accessModes"]))),
        json!(text(obj, &["spec", "persistentVolumeReclaimPolicy"])),
        json!(volume_phase(obj)),
        json!(claim),
        json!(storage_class_of(obj)),
        json!(or(
            text(obj, &["spec", "volumeAttributesClassName"]),
            "<unset>"
        )),
        json!(text(obj, &["status", "reason"])),
        json!(or(text(obj, &["spec", "volumeMode"]), "<unset>")),
    ]
}

fn pvc_columns() -> Vec<TableColumn> {
    vec![
        TableColumn::new("Status", "string", "phase represents the current phase of PersistentVolumeClaim."),
        TableColumn::new("Volume", "string", "volumeName is the binding reference to the PersistentVolume backing this claim."),
        TableColumn::new("Capacity", "string", "capacity represents the actual resources of the underlying volume."),
        TableColumn::new("Access Modes", "string", "accessModes contains the actual access modes the volume backing the PVC has. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes-1"),
        TableColumn::new("StorageClass", "string", "StorageClass of the pvc"),
        TableColumn::new("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
        TableColumn::age(),
        TableColumn::new("VolumeMode", "string", "volumeMode defines what type of volume is required by the claim. Value of Filesystem is implied when not included in claim spec.").wide(),
    ]
}

fn pvc_row(obj: &Value) -> Vec<Value> {
    let volume = text(obj, &["spec", "volumeName"]);
    // Capacity and access modes only once the claim names a volume.
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            quantity(at(obj, &["status", "capacity", "storage"])),
            access_modes(list(obj, &["status", "accessModes"])),
        )
    };
    vec![
        json!(volume_phase(obj)),
        json!(volume),
        json!(capacity),
        json!(modes),
        json!(storage_class_of(obj)),
        json!(or(
            text(obj, &["spec", "volumeAttributesClassName"]),
            "<unset>"
        )),
        json!(or(text(obj, &["spec", "volumeMode"]), "<unset>")),
    ]
}

fn component_status_columns() -> Vec<TableColumn> {
    vec![
        TableColumn::new("Status", "string", "Status of the component conditions"),
        TableColumn::new("Message", "string", "Message of the component conditions"),
        TableColumn::new("Error", "string", "Error of the component conditions"),
    ]
}

fn component_status_row(obj: &Value) -> Vec<Value> {
    let healthy = list(obj, &["conditions"])
        .iter()
        .find(|c| text(c, &["type"]) == "Healthy");
    let Some(c) = healthy else {
        return vec![json!("Unknown"), json!(""), json!("")];
    };
    let status = if text(c, &["status"]) == "True" {
        "Healthy"
    } else {
        "Unhealthy"
    };
    vec![
        json!(status),
        json!(text(c, &["message"])),
        json!(text(c, &["error"])),
    ]
}

fn resource_quota_columns() -> Vec<TableColumn> {
    vec![
        TableColumn::new(
            "Request",
            "string",
            "Request represents a minimum amount of cpu/memory that a container may consume.",
        ),
        TableColumn::new(
            "Limit",
            "string",
            "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
        ),
        TableColumn::age(),
    ]
}

/// `res: used/hard` over sorted `status.hard`, split into requests and `limits.*`.
fn resource_quota_row(obj: &Value) -> Vec<Value> {
    let empty = Map::new();
    let hard = at(obj, &["status", "hard"])
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let mut names: Vec<&String> = hard.keys().collect();
    names.sort();
    let (mut requests, mut limits) = (Vec::new(), Vec::new());
    for name in names {
        let used = quantity(at(obj, &["status", "used", name]));
        let entry = format!("{name}: {used}/{}", quantity(hard.get(name.as_str())));
        let pieces: Vec<&str> = name.split('.').collect();
        if pieces.len() > 1 && pieces[0] == "limits" {
            limits.push(entry);
        } else {
            requests.push(entry);
        }
    }
    vec![json!(requests.join(", ")), json!(limits.join(", "))]
}

// ---------------------------------------------------------------------------
// Networking.

fn ingress_columns() -> Vec<TableColumn> {
    vec![
        TableColumn::new(
            "Class",
            "string",
            "The name of the IngressClass resource that should be used for additional configuration",
        ),
        TableColumn::new(
            "Hosts",
            "string",
            "Hosts that incoming requests are matched against before the ingress rule",
        ),
        TableColumn::new(
            "Address",
            "string",
            "Address is a list containing ingress points for the load-balancer",
        ),
        TableColumn::new("Ports", "string", "Ports of TLS configurations that open"),
        TableColumn::age(),
    ]
}

/// `formatHosts`: the first three rule hosts, then ` + N more...`; `*` if none.
fn ingress_hosts(rules: &[Value]) -> String {
    let mut hosts = Vec::new();
    let mut more = false;
    for rule in rules {
        if hosts.len() == 3 {
            more = true;
        }
        let host = text(rule, &["host"]);
        if !more && !host.is_empty() {
            hosts.push(host);
        }
    }
    if hosts.is_empty() {
        return "*".into();
    }
    let joined = hosts.join(",");
    if more {
        format!("{joined} + {} more...", rules.len() - 3)
    } else {
        joined
    }
}

/// The sorted unique load-balancer IPs (or hostnames), unclipped (wide).
fn ingress_address(obj: &Value) -> String {
    let addresses: BTreeSet<&str> = list(obj, &["status", "loadBalancer", "ingress"])
        .iter()
        .map(|i| match text(i, &["ip"]) {
            "" => text(i, &["hostname"]),
            ip => ip,
        })
        .filter(|a| !a.is_empty())
        .collect();
    addresses.into_iter().collect::<Vec<_>>().join(",")
}

fn ingress_row(obj: &Value) -> Vec<Value> {
    let ports = if list(obj, &["spec", "tls"]).is_empty() {
        "80"
    } else {
        "80, 443"
    };
    vec![
        json!(or(text(obj, &["spec", "ingressClassName"]), "<none>")),
        json!(ingress_hosts(list(obj, &["spec", "rules"]))),
        json!(ingress_address(obj)),
        json!(ports),
    ]
}

fn ingress_class_columns() -> Vec<TableColumn> {
    vec![
        TableColumn::new(
            "Controller",
            "string",
            "Controller that is responsible for handling this class",
        ),
        TableColumn::new(
            "Parameters",
            "string",
            "A reference to a resource with additional parameters",
        ),
        TableColumn::age(),
    ]
}

fn ingress_class_row(obj: &Value) -> Vec<Value> {
    let parameters = match at(obj, &["spec", "parameters"]) {
        None => "<none>".to_string(),
        Some(p) => {
            let mut s = text(p, &["kind"]).to_string();
            if let Some(group) = at(p, &["apiGroup"]).and_then(Value::as_str) {
                s = format!("{s}.{group}");
            }
            format!("{s}/{}", text(p, &["name"]))
        }
    };
    vec![json!(text(obj, &["spec", "controller"])), json!(parameters)]
}

fn network_policy_columns() -> Vec<TableColumn> {
    vec![
        TableColumn::new(
            "Pod-Selector",
            "string",
            "Selects the pods to which this NetworkPolicy object applies. The array of ingress rules is applied to any pods selected by this field. An empty podSelector matches all pods in this namespace.",
        ),
        TableColumn::age(),
    ]
}

fn network_policy_row(obj: &Value) -> Vec<Value> {
    vec![json!(format_label_selector(at(
        obj,
        &["spec", "podSelector"]
    )))]
}

fn service_cidr_columns() -> Vec<TableColumn> {
    vec![
        TableColumn::new(
            "CIDRs",
            "string",
            "CIDRs defines the IP blocks in CIDR notation (e.g. \"192.168.0.0/24\" or \"2001:db8::/64\") from which to assign service cluster IPs. Max of two CIDRs is allowed, one of each IP family. This field is immutable.",
        ),
        TableColumn::age(),
    ]
}

fn service_cidr_row(obj: &Value) -> Vec<Value> {
    let cidrs: Vec<&str> = list(obj, &["spec", "cidrs"])
        .iter()
        .filter_map(Value::as_str)
        .collect();
    vec![json!(cidrs.join(","))]
}

/// Upstream defines only Name and ParentRef but prints the age as a third
/// cell; with no Age column to place it, `row` carries it itself.
fn ip_address_columns() -> Vec<TableColumn> {
    vec![TableColumn::new(
        "ParentRef",
        "string",
        "ParentRef references the resource that an IPAddress is attached to. An IPAddress must reference a parent object.",
    )]
}

fn ip_address_row(obj: &Value) -> Vec<Value> {
    let parent = match at(obj, &["spec", "parentRef"]) {
        None => "<none>".to_string(),
        Some(r) => {
            let (group, resource) = (text(r, &["group"]), text(r, &["resource"]));
            let mut s = if group.is_empty() {
                resource.to_lowercase()
            } else {
                format!("{resource}.{group}").to_lowercase()
            };
            let namespace = text(r, &["namespace"]);
            if !namespace.is_empty() {
                s = format!("{s}/{namespace}");
            }
            format!("{s}/{}", text(r, &["name"]))
        }
    };
    vec![
        json!(parent),
        json!(since(text(obj, &["metadata", "creationTimestamp"]))),
    ]
}

// ---------------------------------------------------------------------------
// Kinds new in 1.34–1.37 (columns as kube-apiserver 1.37.2 defines them).

fn no_cells(_: &Value) -> Vec<Value> {
    Vec::new()
}

fn cluster_trust_bundle_row(obj: &Value) -> Vec<Value> {
    vec![json!(or(text(obj, &["spec", "signerName"]), "<none>"))]
}

/// State: the last of the Issued, Denied or Failed conditions, else Pending.
fn pod_certificate_request_row(obj: &Value) -> Vec<Value> {
    let state = list(obj, &["status", "conditions"])
        .iter()
        .filter_map(|c| match text(c, &["type"]) {
            t @ ("Issued" | "Denied" | "Failed") => Some(t),
            _ => None,
        })
        .next_back()
        .unwrap_or("Pending");
    let spec = |field: &str| json!(text(obj, &["spec", field]));
    vec![
        spec("podName"),
        spec("serviceAccountName"),
        spec("nodeName"),
        spec("signerName"),
        json!(state),
        json!(format_labels(at(
            obj,
            &["spec", "unverifiedUserAnnotations"]
        ))),
    ]
}

fn volume_attributes_class_row(obj: &Value) -> Vec<Value> {
    vec![json!(text(obj, &["driverName"]))]
}

/// `resourceClaimState`: deleted, pending, allocated, reserved.
fn resource_claim_row(obj: &Value) -> Vec<Value> {
    let deleted = has(obj, &["metadata", "deletionTimestamp"]);
    let mut states = Vec::new();
    if deleted {
        states.push("deleted");
    }
    if has(obj, &["status", "allocation"]) {
        states.push("allocated");
        if !list(obj, &["status", "reservedFor"]).is_empty() {
            states.push("reserved");
        }
    } else if !deleted {
        states.push("pending");
    }
    vec![json!(states.join(","))]
}

fn resource_slice_row(obj: &Value) -> Vec<Value> {
    vec![
        json!(text(obj, &["spec", "nodeName"])),
        json!(text(obj, &["spec", "driver"])),
        json!(text(obj, &["spec", "pool", "name"])),
    ]
}

fn device_taint_rule_row(obj: &Value) -> Vec<Value> {
    let taint = |field: &str| text(obj, &["spec", "taint", field]);
    let added = match taint("timeAdded") {
        "" => String::new(),
        t => since(t),
    };
    vec![
        json!(taint("key")),
        json!(taint("value")),
        json!(taint("effect")),
        json!(added),
    ]
}

/// The group-resource migrated, and the last True condition of Running,
/// Failed or Succeeded (else Unknown).
fn storage_version_migration_row(obj: &Value) -> Vec<Value> {
    let (group, resource) = (
        text(obj, &["spec", "resource", "group"]),
        text(obj, &["spec", "resource", "resource"]),
    );
    let migrated = if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    };
    let status = list(obj, &["status", "conditions"])
        .iter()
        .filter(|c| text(c, &["status"]) == "True")
        .filter_map(|c| match text(c, &["type"]) {
            t @ ("Running" | "Failed" | "Succeeded") => Some(t),
            _ => None,
        })
        .next_back()
        .unwrap_or("Unknown");
    vec![json!(migrated), json!(status)]
}

fn cluster_trust_bundle_columns() -> Vec<TableColumn> {
    vec![TableColumn::new(
        "SignerName",
        "string",
        "signerName indicates the associated signer, if any.\n\nIn order to create or update a ClusterTrustBundle that sets signerName, you must have the following cluster-scoped permission: group=certificates.k8s.io resource=signers resourceName=<the signer name> verb=attest.\n\nIf signerName is not empty, then the ClusterTrustBundle object must be named with the signer name as a prefix (translating slashes to colons). For example, for the signer name `example.com/foo`, valid ClusterTrustBundle object names include `example.com:foo:abc` and `example.com:foo:v1`.\n\nIf signerName is empty, then the ClusterTrustBundle object's name must not have such a prefix.\n\nList/watch requests for ClusterTrustBundles can filter on this field using a `spec.signerName=NAME` field selector.",
    )]
}

fn pod_certificate_request_columns() -> Vec<TableColumn> {
    vec![
        TableColumn::new(
            "PodName",
            "string",
            "podName is the name of the pod into which the certificate will be mounted.",
        ),
        TableColumn::new(
            "ServiceAccountName",
            "string",
            "serviceAccountName is the name of the service account the pod is running as.",
        ),
        TableColumn::new(
            "NodeName",
            "string",
            "nodeName is the name of the node the pod is assigned to.",
        ),
        TableColumn::new(
            "SignerName",
            "string",
            "signerName indicates the requested signer.\n\nAll signer names beginning with `kubernetes.io` are reserved for use by the Kubernetes project.  There is currently one well-known signer documented by the Kubernetes project, `kubernetes.io/kube-apiserver-client-pod`, which will issue client certificates understood by kube-apiserver.  It is currently unimplemented.",
        ),
        TableColumn::new(
            "State",
            "string",
            "Is the request Pending, Issued, Denied, or Failed?",
        ),
        TableColumn::new(
            "UnverifiedUserAnnotations",
            "string",
            "unverifiedUserAnnotations allow pod authors to pass additional information to the signer implementation.  Kubernetes does not restrict or validate this metadata in any way.\n\nEntries are subject to the same validation as object metadata annotations, with the addition that all keys must be domain-prefixed. No restrictions are placed on values, except an overall size limitation on the entire field.\n\nSigners should document the keys and values they support.  Signers should deny requests that contain keys they do not recognize.",
        ),
    ]
}

fn volume_attributes_class_columns() -> Vec<TableColumn> {
    vec![
        TableColumn::new(
            "DriverName",
            "string",
            "driverName is the name of the CSI driver This field is immutable.",
        ),
        TableColumn::age(),
    ]
}

fn resource_claim_columns() -> Vec<TableColumn> {
    vec![
        TableColumn::new(
            "State",
            "string",
            "A summary of the current state (allocated, pending, reserved, etc.).",
        ),
        TableColumn::age(),
    ]
}

fn resource_slice_columns() -> Vec<TableColumn> {
    vec![
        TableColumn::new(
            "Node",
            "string",
            "NodeName identifies the node which provides the resources in this pool. A field selector can be used to list only ResourceSlice objects belonging to a certain node.\n\nThis field can be used to limit access from nodes to ResourceSlices with the same node name. It also indicates to autoscalers that adding new nodes of the same type as some old node might also make new resources available.\n\nExactly one of NodeName, NodeSelector, AllNodes, and PerDeviceNodeSelection must be set. This field is immutable.",
        ),
        TableColumn::new(
            "Driver",
            "string",
            "Driver identifies the DRA driver providing the capacity information. A field selector can be used to list only ResourceSlice objects with a certain driver name.\n\nMust be a DNS subdomain and should end with a DNS domain owned by the vendor of the driver. It should use only lower case characters. This field is immutable.",
        ),
        TableColumn::new(
            "Pool",
            "string",
            "Name is used to identify the pool. For node-local devices, this is often the node name, but this is not required. A field selector can be used to list only ResourceSlice objects belonging to a certain pool.\n\nIt must not be longer than 253 characters and must consist of one or more DNS sub-domains separated by slashes. This field is immutable.",
        ),
        TableColumn::age(),
    ]
}

fn device_taint_rule_columns() -> Vec<TableColumn> {
    vec![
        TableColumn::new(
            "Key",
            "string",
            "The taint key to be applied to a device. Must be a label name.",
        ),
        TableColumn::new(
            "Value",
            "string",
            "The taint value corresponding to the taint key. Must be a label value.",
        ),
        TableColumn::new(
            "Effect",
            "string",
            "The effect of the taint on claims that do not tolerate the taint and through such claims on the pods using them.\n\nValid effects are None, NoSchedule and NoExecute. PreferNoSchedule as used for nodes is not valid here. More effects may get added in the future. Consumers must treat unknown effects like None.",
        ),
        TableColumn::new(
            "TimeAdded",
            "string",
            "TimeAdded represents the time at which the taint was added or (only in a DeviceTaintRule) the effect was modified. Added automatically during create or update if not set.\n\nIn addition, in a DeviceTaintRule a value provided during an update gets replaced with the current time if the provided value is the same as the old one and the new effect is different. Changing the key and/or value while keeping the effect unchanged is possible and does not update the time stamp because the eviction which uses it is either already started (NoExecute) or not started yet (NoEffect, NoSchedule).",
        ),
        TableColumn::age(),
    ]
}

fn storage_version_migration_columns() -> Vec<TableColumn> {
    vec![
        TableColumn::new("Resource", "string", "GroupResource to migrate"),
        TableColumn::new("Status", "string", "Status of the migration"),
    ]
}

// ---------------------------------------------------------------------------
// Storage.

/// `(default)` is appended to the NAME cell upstream when the
/// `storageclass.kubernetes.io/is-default-class` annotation is `"true"`; the
/// Name cell is the caller's, so that suffix is not reproduced here.
fn storage_class_columns() -> Vec<TableColumn> {
    vec![
        TableColumn::new(
            "Provisioner",
            "string",
            "provisioner indicates the type of the provisioner.",
        ),
        TableColumn::new(
            "ReclaimPolicy",
            "string",
            "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class. Defaults to Delete.",
        ),
        TableColumn::new(
            "VolumeBindingMode",
            "string",
            "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.  When unset, VolumeBindingImmediate is used. This field is only honored by servers that enable the VolumeScheduling feature.",
        ),
        TableColumn::new(
            "AllowVolumeExpansion",
            "string",
            "allowVolumeExpansion shows whether the storage class allow volume expand.",
        ),
        TableColumn::age(),
    ]
}

fn storage_class_row(obj: &Value) -> Vec<Value> {
    vec![
        json!(text(obj, &["provisioner"])),
        json!(or(text(obj, &["reclaimPolicy"]), "Delete")),
        json!(or(text(obj, &["volumeBindingMode"]), "Immediate")),
        json!(flag(obj, &["allowVolumeExpansion"]).unwrap_or(false)),
    ]
}

fn csi_driver_columns() -> Vec<TableColumn> {
    vec![
        TableColumn::new(
            "AttachRequired",
            "boolean",
            "attachRequired indicates this CSI volume driver requires an attach operation (because it implements the CSI ControllerPublishVolume() method), and that the Kubernetes attach detach controller should call the attach volume interface which checks the volumeattachment status and waits until the volume is attached before proceeding to mounting.",
        ),
        TableColumn::new(
            "PodInfoOnMount",
            "boolean",
            "podInfoOnMount indicates this CSI volume driver requires additional pod information (like podName, podUID, etc.) during mount operations, if set to true.",
        ),
        TableColumn::new(
            "StorageCapacity",
            "boolean",
            "storageCapacity indicates that the CSI volume driver wants pod scheduling to consider the storage capacity that the driver deployment will report by creating CSIStorageCapacity objects with capacity information, if set to true.",
        ),
        TableColumn::new(
            "TokenRequests",
            "string",
            "tokenRequests indicates the CSI driver needs pods' service account tokens it is mounting volume for to do necessary authentication.",
        ),
        TableColumn::new(
            "RequiresRepublish",
            "boolean",
            "requiresRepublish indicates the CSI driver wants `NodePublishVolume` being periodically called to reflect any possible change in the mounted volume.",
        ),
        TableColumn::new(
            "Modes",
            "string",
            "volumeLifecycleModes defines what kind of volumes this CSI volume driver supports.",
        ),
        TableColumn::age(),
    ]
}

fn csi_driver_row(obj: &Value) -> Vec<Value> {
    let spec_flag = |field: &str, default: bool| flag(obj, &["spec", field]).unwrap_or(default);
    let tokens = at(obj, &["spec", "tokenRequests"]).map_or("<unset>".into(), |t| {
        let audiences: Vec<&str> = t
            .as_array()
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .map(|r| text(r, &["audience"]))
            .collect();
        audiences.join(",")
    });
    let modes: Vec<&str> = list(obj, &["spec", "volumeLifecycleModes"])
        .iter()
        .filter_map(Value::as_str)
        .collect();
    vec![
        json!(spec_flag("attachRequired", true)),
        json!(spec_flag("podInfoOnMount", false)),
        json!(spec_flag("storageCapacity", false)),
        json!(tokens),
        json!(spec_flag("requiresRepublish", false)),
        json!(or(&modes.join(","), "<none>")),
    ]
}

fn csi_node_columns() -> Vec<TableColumn> {
    vec![
        TableColumn::new(
            "Drivers",
            "integer",
            "Drivers indicates the number of CSI drivers registered on the node",
        ),
        TableColumn::age(),
    ]
}

fn csi_node_row(obj: &Value) -> Vec<Value> {
    vec![json!(list(obj, &["spec", "drivers"]).len())]
}

fn volume_attachment_columns() -> Vec<TableColumn> {
    let mut attacher = TableColumn::new(
        "Attacher",
        "string",
        "attacher indicates the name of the volume driver that MUST handle this request. This is the name returned by GetPluginName().",
    );
    attacher.format = "name".into();
    vec![
        attacher,
        TableColumn::new(
            "PV",
            "string",
            "persistentVolumeName represents the name of the persistent volume to attach.",
        ),
        TableColumn::new(
            "Node",
            "string",
            "nodeName represents the node that the volume should be attached to.",
        ),
        TableColumn::new(
            "Attached",
            "boolean",
            "attached indicates the volume is successfully attached. This field must only be set by the entity completing the attach operation, i.e. the external-attacher.",
        ),
        TableColumn::age(),
    ]
}

fn volume_attachment_row(obj: &Value) -> Vec<Value> {
    vec![
        json!(text(obj, &["spec", "attacher"])),
        json!(text(obj, &["spec", "source", "persistentVolumeName"])),
        json!(text(obj, &["spec", "nodeName"])),
        json!(flag(obj, &["status", "attached"]).unwrap_or(false)),
    ]
}

// ---------------------------------------------------------------------------
// Scheduling, node, certificates, flow control.

fn priority_class_columns() -> Vec<TableColumn> {
    vec![
        TableColumn::new(
            "Value",
            "integer",
            "value represents the integer value of this priority class. This is the actual priority that pods receive when they have the name of this class in their pod spec.",
        ),
        TableColumn::new(
            "Global-Default",
            "boolean",
            "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class.",
        ),
        TableColumn::age(),
        // Not priority 1 upstream, although only printed with Wide.
        TableColumn::new(
            "PreemptionPolicy",
            "string",
            "preemptionPolicy is the Policy for preempting pods with lower priority. One of Never, PreemptLowerPriority. Defaults to PreemptLowerPriority if unset.",
        ),
    ]
}

fn priority_class_row(obj: &Value) -> Vec<Value> {
    vec![
        json!(int(obj, &["value"])),
        json!(flag(obj, &["globalDefault"]).unwrap_or(false)),
        json!(text(obj, &["preemptionPolicy"])),
    ]
}

fn runtime_class_columns() -> Vec<TableColumn> {
    vec![
        TableColumn::new(
            "Handler",
            "string",
            "handler specifies the underlying runtime and configuration that the CRI implementation will use to handle pods of this class.",
        ),
        TableColumn::age(),
    ]
}

fn runtime_class_row(obj: &Value) -> Vec<Value> {
    vec![json!(text(obj, &["handler"]))]
}

fn csr_columns() -> Vec<TableColumn> {
    vec![
        TableColumn::age(),
        TableColumn::new(
            "SignerName",
            "string",
            "Requested signer for the request. It is a qualified name in the form: `scope-hostname.io/name`.",
        ),
        TableColumn::new("Requestor", "string", "Base64-encoded PKCS#10 CSR data"),
        TableColumn::new(
            "RequestedDuration",
            "string",
            "expirationSeconds is the requested duration of validity of the issued certificate.",
        ),
        TableColumn::new(
            "Condition",
            "string",
            "Conditions applied to the request, such as approval or denial.",
        ),
    ]
}

/// `extractCSRStatus`: Denied > Approved > Pending, then `,Failed`, `,Issued`.
fn csr_condition(obj: &Value) -> String {
    let conditions = list(obj, &["status", "conditions"]);
    let is = |kind: &str| conditions.iter().any(|c| text(c, &["type"]) == kind);
    let mut status = if is("Denied") {
        "Denied".to_string()
    } else if is("Approved") {
        "Approved".to_string()
    } else {
        "Pending".to_string()
    };
    if is("Failed") {
        status.push_str(",Failed");
    }
    if !text(obj, &["status", "certificate"]).is_empty() {
        status.push_str(",Issued");
    }
    status
}

fn csr_row(obj: &Value) -> Vec<Value> {
    let duration = at(obj, &["spec", "expirationSeconds"])
        .and_then(Value::as_i64)
        .map_or("<none>".into(), human_duration);
    vec![
        json!(or(text(obj, &["spec", "signerName"]), "<none>")),
        json!(text(obj, &["spec", "username"])),
        json!(duration),
        json!(csr_condition(obj)),
    ]
}

fn flow_schema_columns() -> Vec<TableColumn> {
    vec![
        TableColumn::new(
            "PriorityLevel",
            "string",
            "`name` is the name of the priority level configuration being referenced Required.",
        ),
        TableColumn::new(
            "MatchingPrecedence",
            "string",
            "`matchingPrecedence` is used to choose among the FlowSchemas that match a given request. The chosen FlowSchema is among those with the numerically lowest (which we take to be logically highest) MatchingPrecedence.",
        ),
        TableColumn::new(
            "DistinguisherMethod",
            "string",
            "`distinguisherMethod` defines how to compute the flow distinguisher for requests that match this schema. `nil` specifies that the distinguisher is disabled and thus will always be the empty string.",
        ),
        TableColumn::age(),
        TableColumn::new(
            "MissingPL",
            "string",
            "references a broken or non-existent PriorityLevelConfiguration",
        ),
    ]
}

fn flow_schema_row(obj: &Value) -> Vec<Value> {
    let dangling =
        condition_status(list(obj, &["status", "conditions"]), "Dangling").unwrap_or("?");
    let method = at(obj, &["spec", "distinguisherMethod"])
        .map_or("<none>".into(), |m| text(m, &["type"]).to_string());
    vec![
        json!(text(obj, &["spec", "priorityLevelConfiguration", "name"])),
        json!(int(obj, &["spec", "matchingPrecedence"])),
        json!(method),
        json!(dangling),
    ]
}

fn priority_level_columns() -> Vec<TableColumn> {
    vec![
        TableColumn::new(
            "Type",
            "string",
            "`type` indicates whether this priority level is subject to limitation on request execution.  A value of `\"Exempt\"` means that requests of this priority level are not subject to a limit (and thus are never queued) and do not detract from the capacity made available to other priority levels.  A value of `\"Limited\"` means that (a) requests of this priority level _are_ subject to limits and (b) some of the server's limited capacity is made available exclusively to this priority level. Required.",
        ),
        TableColumn::new(
            "NominalConcurrencyShares",
            "string",
            "`nominalConcurrencyShares` (NCS) contributes to the computation of the NominalConcurrencyLimit (NominalCL) of this level.",
        ),
        TableColumn::new(
            "Queues",
            "string",
            "`queues` is the number of queues for this priority level. The queues exist independently at each apiserver. The value must be positive.  Setting it to 1 effectively precludes shufflesharding and thus makes the distinguisher method of associated flow schemas irrelevant.  This field has a default value of 64.",
        ),
        TableColumn::new(
            "HandSize",
            "string",
            "`handSize` is a small positive number that configures the shuffle sharding of requests into queues.",
        ),
        TableColumn::new(
            "QueueLengthLimit",
            "string",
            "`queueLengthLimit` is the maximum number of requests allowed to be waiting in a given queue of this priority level at a time; excess requests are rejected.  This value must be positive.  If not specified, it will be defaulted to 50.",
        ),
        TableColumn::age(),
    ]
}

fn priority_level_row(obj: &Value) -> Vec<Value> {
    let none = || json!("<none>");
    let (mut ncs, mut queues, mut hand, mut length) = (none(), none(), none(), none());
    if let Some(limited) = at(obj, &["spec", "limited"]) {
        ncs = json!(int(limited, &["nominalConcurrencyShares"]));
        if let Some(q) = at(limited, &["limitResponse", "queuing"]) {
            queues = json!(int(q, &["queues"]));
            hand = json!(int(q, &["handSize"]));
            length = json!(int(q, &["queueLengthLimit"]));
        }
    }
    vec![
        json!(text(obj, &["spec", "type"])),
        ncs,
        queues,
        hand,
        length,
    ]
}

#[cfg(test)]
mod tests {
    //! Expected cells are copied from upstream's
    //! `pkg/printers/internalversion/printers_test.go` (the Go test named in
    //! each comment), with Name and Age left out as `row` does.

    use super::*;

    /// A wire timestamp `secs` seconds before now (negative: after now).
    fn ago(secs: i64) -> String {
        let ts = jiff::Timestamp::now() - jiff::SignedDuration::from_secs(secs);
        apimachinery::time::format_rfc3339(ts)
    }

    /// Now + 1.9s, as upstream's `time.Now().Add(1.9e9)`.
    fn soon() -> String {
        let ts = jiff::Timestamp::now() + jiff::SignedDuration::from_millis(1900);
        apimachinery::time::format_rfc3339(ts)
    }

    fn row(group: &str, kind: &str, obj: Value) -> Vec<Value> {
        let p = printer(group, kind).unwrap_or_else(|| panic!("no printer for {kind}"));
        (p.row)(&obj)
    }

    /// Non-wide upstream expectations: the first cells of our (always wide) row.
    fn assert_prefix(got: &[Value], want: &[Value]) {
        assert_eq!(&got[..want.len()], want, "full row: {got:?}");
    }

    fn two_containers(prefix: &str) -> Value {
        json!({"containers": [
            {"name": format!("fake-{prefix}container1"), "image": format!("fake-{prefix}image1")},
            {"name": format!("fake-{prefix}container2"), "image": format!("fake-{prefix}image2")},
        ]})
    }

    fn running(ready: bool, restarts: i64) -> Value {
        json!({"ready": ready, "restartCount": restarts, "state": {"running": {}}})
    }

    #[test]
    fn row_lengths_match_columns() {
        let kinds = [
            ("", "Pod"),
            ("", "PodTemplate"),
            ("", "ReplicationController"),
            ("", "Node"),
            ("", "PersistentVolume"),
            ("", "PersistentVolumeClaim"),
            ("", "ComponentStatus"),
            ("", "ResourceQuota"),
            ("apps", "Deployment"),
            ("apps", "ReplicaSet"),
            ("apps", "StatefulSet"),
            ("apps", "DaemonSet"),
            ("apps", "ControllerRevision"),
            ("batch", "Job"),
            ("batch", "CronJob"),
            ("autoscaling", "HorizontalPodAutoscaler"),
            ("policy", "PodDisruptionBudget"),
            ("networking.k8s.io", "Ingress"),
            ("networking.k8s.io", "IngressClass"),
            ("networking.k8s.io", "NetworkPolicy"),
            ("networking.k8s.io", "ServiceCIDR"),
            ("storage.k8s.io", "StorageClass"),
            ("storage.k8s.io", "CSIDriver"),
            ("storage.k8s.io", "CSINode"),
            ("storage.k8s.io", "VolumeAttachment"),
            ("scheduling.k8s.io", "PriorityClass"),
            ("node.k8s.io", "RuntimeClass"),
            ("certificates.k8s.io", "CertificateSigningRequest"),
            ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
            ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
        ];
        for (group, kind) in kinds {
            let p = printer(group, kind).unwrap_or_else(|| panic!("no printer for {kind}"));
            let ages = p.columns.iter().filter(|c| c.is_age()).count();
            assert!(ages <= 1, "{kind}");
            assert_eq!((p.row)(&json!({})).len(), p.columns.len() - ages, "{kind}");
        }
        // IPAddress: upstream prints the age as a cell without a column.
        let p = printer("networking.k8s.io", "IPAddress").unwrap_or_else(|| panic!("IPAddress"));
        assert_eq!(((p.row)(&json!({}))).len(), p.columns.len() + 1);
        for (group, kind) in [
            ("", "Service"),
            ("", "LimitRange"),
            ("rbac.authorization.k8s.io", "Role"),
        ] {
            assert!(printer(group, kind).is_none(), "{kind}");
        }
    }

    #[test]
    fn selectors_format_as_upstream() {
        assert_eq!(format_label_selector(None), "<none>");
        assert_eq!(format_label_selector(Some(&json!({}))), "<none>");
        let sel = json!({"matchLabels": {"b": "2", "a": "1"}, "matchExpressions": [
            {"key": "c", "operator": "In", "values": ["y", "x"]},
            {"key": "d", "operator": "NotIn", "values": ["z"]},
            {"key": "e", "operator": "Exists"},
            {"key": "f", "operator": "DoesNotExist"},
        ]});
        assert_eq!(
            format_label_selector(Some(&sel)),
            "a=1,b=2,c in (x,y),d notin (z),e,!f"
        );
        assert_eq!(
            format_labels(Some(&json!({"foo": "bar", "a": "b"}))),
            "a=b,foo=bar"
        );
        assert_eq!(format_labels(Some(&json!({}))), "<none>");
    }

    // TestPrintPod
    #[test]
    fn pod_status_cells() {
        let two = json!([{}, {}]);
        let cases = [
            // test1
            (
                json!({"spec": {"containers": two}, "status": {"phase": "podPhase",
                "containerStatuses": [running(true, 3), {"restartCount": 3}]}}),
                ["1/2", "podPhase", "6"],
            ),
            // test2
            (
                json!({"spec": {"containers": two}, "status": {"phase": "podPhase",
                "containerStatuses": [running(true, 3),
                    {"state": {"waiting": {"reason": "ContainerWaitingReason"}}, "restartCount": 3}]}}),
                ["1/2", "ContainerWaitingReason", "6"],
            ),
            // test3
            (
                json!({"spec": {"containers": two}, "status": {"phase": "podPhase",
                "containerStatuses": [
                    {"state": {"waiting": {"reason": "ContainerWaitingReason"}}, "restartCount": 3},
                    {"state": {"terminated": {"reason": "ContainerTerminatedReason"}}, "restartCount": 3}]}}),
                ["0/2", "ContainerWaitingReason", "6"],
            ),
            // test5
            (
                json!({"spec": {"containers": two}, "status": {"reason": "podReason", "phase": "podPhase",
                "containerStatuses": [running(true, 3), {"ready": true, "restartCount": 3}]}}),
                ["1/2", "podReason", "6"],
            ),
            // test6, without a Ready condition
            (
                json!({"spec": {"containers": two}, "status": {"phase": "Running",
                "containerStatuses": [
                    {"ready": true, "restartCount": 3, "state": {"terminated": {"reason": "Completed", "exitCode": 0}}},
                    running(true, 3)]}}),
                ["1/2", "NotReady", "6"],
            ),
            // test6, with a Ready condition
            (
                json!({"spec": {"containers": two}, "status": {"phase": "Running",
                "containerStatuses": [
                    {"ready": true, "restartCount": 3, "state": {"terminated": {"reason": "Completed", "exitCode": 0}}},
                    running(true, 3)],
                "conditions": [{"type": "Ready", "status": "True"}]}}),
                ["1/2", "Running", "6"],
            ),
            // test15
            (
                json!({"spec": {"containers": two}, "status": {"phase": "podPhase",
                "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}}),
                ["0/2", "SchedulingGated", "0"],
            ),
            // test16
            (
                json!({"spec": {"containers": [{}]}, "status": {"phase": "Succeeded",
                "containerStatuses": [{"state": {"terminated": {"reason": "Completed", "exitCode": 0}}}]}}),
                ["0/1", "Completed", "0"],
            ),
            // test17
            (
                json!({"spec": {"containers": [{}]}, "status": {"phase": "Failed",
                "containerStatuses": [{"state": {"terminated": {"reason": "Error", "exitCode": 1}}}]}}),
                ["0/1", "Error", "0"],
            ),
            // test18
            (
                json!({"metadata": {"deletionTimestamp": ago(10)}, "spec": {"containers": [{}]},
                "status": {"phase": "Succeeded",
                "containerStatuses": [{"state": {"terminated": {"reason": "Completed", "exitCode": 0}}}]}}),
                ["0/1", "Completed", "0"],
            ),
            // test19
            (
                json!({"metadata": {"deletionTimestamp": ago(10)}, "spec": {"containers": [{}]},
                "status": {"phase": "Running", "containerStatuses": [{"state": {"running": {}}}]}}),
                ["0/1", "Terminating", "0"],
            ),
            // test20
            (
                json!({"metadata": {"deletionTimestamp": ago(10)}, "spec": {"containers": [{}]},
                "status": {"phase": "Pending"}}),
                ["0/1", "Terminating", "0"],
            ),
            // test21
            (
                json!({"spec": {"containers": two}, "status": {"phase": "Failed", "containerStatuses": [
                {"state": {"terminated": {"finishedAt": ago(0), "exitCode": 1, "reason": "podCrash"}}},
                {"ready": true, "state": {"running": {"startedAt": ago(0)}}}]}}),
                ["1/2", "podCrash", "0"],
            ),
            // test24
            (
                json!({"spec": {"containers": [{}, {}, {}]}, "status": {"phase": "Failed", "containerStatuses": [
                {"state": {"running": {"startedAt": ago(0)}}},
                {"state": {"terminated": {"finishedAt": ago(0), "exitCode": 1, "reason": "podCrash"}}},
                {"state": {"terminated": {"finishedAt": ago(0), "exitCode": 0}}}]}}),
                ["0/3", "podCrash", "0"],
            ),
        ];
        for (pod, want) in cases {
            let want: Vec<Value> = want.iter().map(|w| json!(w)).collect();
            assert_prefix(&row("", "Pod", pod), &want);
        }
    }

    // TestPrintPod: restarts with the time of the last one.
    #[test]
    fn pod_restart_cells() {
        let last = |secs: i64| json!({"terminated": {"finishedAt": ago(secs)}});
        let cases = [
            // test7
            (
                json!({"spec": {"initContainers": [{}], "containers": [{}]}, "status": {"phase": "podPhase",
                "initContainerStatuses": [{"restartCount": 3, "state": {"running": {}}, "lastState": last(10)}],
                "containerStatuses": [{"restartCount": 0, "state": {"waiting": {}}}]}}),
                ["0/1", "Init:0/1", "3 (10s ago)"],
            ),
            // test9
            (
                json!({"spec": {"initContainers": [{}, {}], "containers": [{}]}, "status": {"phase": "podPhase",
                "initContainerStatuses": [
                    {"state": {"terminated": {}}},
                    {"restartCount": 3, "state": {"running": {}}, "lastState": last(10)}],
                "containerStatuses": [{"state": {"waiting": {}}}]}}),
                ["0/1", "Init:1/2", "3 (10s ago)"],
            ),
            // test10
            (
                json!({"spec": {"initContainers": [{}, {}], "containers": [{}]}, "status": {"phase": "podPhase",
                "initContainerStatuses": [
                    {"restartCount": 2, "state": {"terminated": {}}, "lastState": last(120)},
                    {"restartCount": 3, "state": {"running": {}}, "lastState": last(10)}],
                "containerStatuses": [{"state": {"waiting": {}}}]}}),
                ["0/1", "Init:1/2", "5 (10s ago)"],
            ),
            // test11
            (
                json!({"spec": {"initContainers": [{}], "containers": [{}]}, "status": {"phase": "Running",
                "initContainerStatuses": [{"restartCount": 2, "state": {"terminated": {}}, "lastState": last(120)}],
                "containerStatuses": [{"restartCount": 4, "state": {"running": {}}, "lastState": last(20)}]}}),
                ["0/1", "Running", "4 (20s ago)"],
            ),
            // test12
            (
                json!({"spec": {"containers": [{}]}, "status": {"phase": "Running",
                "containerStatuses": [{"ready": true, "restartCount": 3, "state": {"running": {}},
                    "lastState": last(5 * 86400)}]}}),
                ["1/1", "Running", "3 (5d ago)"],
            ),
            // test14
            (
                json!({"spec": {"containers": [{}, {}]}, "status": {"phase": "Running", "containerStatuses": [
                {"ready": true, "restartCount": 6, "state": {"running": {}}, "lastState": last(5 * 86400)},
                {"ready": true, "restartCount": 3, "state": {"running": {}}, "lastState": last(20 * 86400)}]}}),
                ["2/2", "Running", "9 (5d ago)"],
            ),
        ];
        for (pod, want) in cases {
            let want: Vec<Value> = want.iter().map(|w| json!(w)).collect();
            assert_prefix(&row("", "Pod", pod), &want);
        }
    }

    // TestPrintPodWithRestartableInitContainer
    #[test]
    fn pod_sidecar_cells() {
        let sidecars = json!([
            {"name": "restartable-init-1", "restartPolicy": "Always"},
            {"name": "restartable-init-2", "restartPolicy": "Always"},
        ]);
        let last = |secs: i64| json!({"terminated": {"finishedAt": ago(secs)}});
        let cases = [
            (
                json!({"spec": {"initContainers": sidecars, "containers": [{}]}, "status": {"phase": "Pending",
                "initContainerStatuses": [
                    {"name": "restartable-init-1", "restartCount": 3, "state": {"running": {}},
                     "started": false, "lastState": last(10)},
                    {"name": "restartable-init-2", "state": {"waiting": {}}, "started": false}],
                "containerStatuses": [{"restartCount": 0, "state": {"waiting": {}}}],
                "conditions": [{"type": "Initialized", "status": "False"}]}}),
                ["0/3", "Init:0/2", "3 (10s ago)"],
            ),
            (
                json!({"spec": {"initContainers": sidecars, "containers": [{}]}, "status": {"phase": "Pending",
                "initContainerStatuses": [
                    {"name": "restartable-init-1", "restartCount": 3, "state": {"running": {}},
                     "started": true, "lastState": last(10)},
                    {"name": "restartable-init-2", "state": {"running": {}}, "started": false}],
                "containerStatuses": [{"restartCount": 0, "state": {"waiting": {}}}],
                "conditions": [{"type": "Initialized", "status": "False"}]}}),
                ["0/3", "Init:1/2", "3 (10s ago)"],
            ),
            (
                json!({"spec": {"initContainers": sidecars, "containers": [{}]}, "status": {"phase": "Running",
                "initContainerStatuses": [
                    {"name": "restartable-init-1", "restartCount": 3, "state": {"running": {}},
                     "started": true, "lastState": last(10)},
                    {"name": "restartable-init-2", "state": {"running": {}}, "started": true}],
                "containerStatuses": [{"ready": true, "restartCount": 4, "state": {"running": {}},
                    "lastState": last(20)}],
                "conditions": [{"type": "Initialized", "status": "True"}]}}),
                ["1/3", "Running", "7 (10s ago)"],
            ),
            (
                json!({"spec": {"initContainers": sidecars, "containers": [{}]}, "status": {"phase": "Succeeded",
                "initContainerStatuses": [
                    {"name": "restartable-init-1", "restartCount": 3,
                     "state": {"terminated": {"reason": "Error", "exitCode": 137}},
                     "started": false, "lastState": last(10)},
                    {"name": "restartable-init-2",
                     "state": {"terminated": {"reason": "Error", "exitCode": 137}}, "started": false}],
                "containerStatuses": [{"restartCount": 4,
                    "state": {"terminated": {"reason": "Completed", "exitCode": 0}}, "lastState": last(20)}],
                "conditions": [{"type": "Initialized", "status": "True"}]}}),
                ["0/3", "Completed", "7 (10s ago)"],
            ),
            (
                json!({"spec": {
                    "initContainers": [{"name": "init1", "image": "initimage"},
                        {"name": "sidecar1", "image": "sidecarimage", "restartPolicy": "Always"}],
                    "containers": [{"name": "container1", "image": "containerimage"}]},
                "status": {"phase": "Running",
                    "initContainerStatuses": [{"name": "initinvalid"}, {"name": "init1"}, {"name": "sidecar1"}],
                    "containerStatuses": [{"name": "containerinvalid"}, {"name": "container1"}]}}),
                ["0/2", "Init:0/2", "0"],
            ),
        ];
        for (pod, want) in cases {
            let want: Vec<Value> = want.iter().map(|w| json!(w)).collect();
            assert_prefix(&row("", "Pod", pod), &want);
        }
    }

    // TestPrintPodwide
    #[test]
    fn pod_wide_cells() {
        let pod = json!({
            "spec": {"containers": [{}, {}], "nodeName": "test1", "readinessGates": [
                {"conditionType": "condition1"}, {"conditionType": "condition2"}, {"conditionType": "condition3"}]},
            "status": {"conditions": [{"type": "condition1", "status": "False"},
                                      {"type": "condition2", "status": "True"}],
                "phase": "podPhase", "podIPs": [{"ip": "1.1.1.1"}, {"ip": "2001:db8::"}],
                "containerStatuses": [running(true, 3), {"restartCount": 3}],
                "nominatedNodeName": "node1"},
        });
        assert_eq!(
            row("", "Pod", pod),
            [
                json!("1/2"),
                json!("podPhase"),
                json!("6"),
                json!("1.1.1.1"),
                json!("test1"),
                json!("node1"),
                json!("1/3")
            ]
        );
        let pod = json!({"spec": {"containers": [{}, {}]}, "status": {"phase": "podPhase",
            "containerStatuses": [running(true, 3),
                {"state": {"waiting": {"reason": "ContainerWaitingReason"}}, "restartCount": 3}]}});
        assert_eq!(
            row("", "Pod", pod),
            [
                json!("1/2"),
                json!("ContainerWaitingReason"),
                json!("6"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>")
            ]
        );
    }

    // TestPrintPodTemplate
    #[test]
    fn pod_template_cells() {
        let t = |spec: Value, labels: Value| json!({"template": {"metadata": {"labels": labels}, "spec": spec}});
        assert_eq!(
            row("", "PodTemplate", t(json!({"containers": []}), Value::Null)),
            [json!(""), json!(""), json!("<none>")]
        );
        assert_eq!(
            row("", "PodTemplate", t(two_containers(""), Value::Null)),
            [
                json!("fake-container1,fake-container2"),
                json!("fake-image1,fake-image2"),
                json!("<none>")
            ]
        );
        assert_eq!(
            row(
                "",
                "PodTemplate",
                t(json!({"containers": []}), json!({"foo": "bar"}))
            ),
            [json!(""), json!(""), json!("foo=bar")]
        );
    }

    // TestPrintDeployment (wide)
    #[test]
    fn deployment_cells() {
        let d = json!({"metadata": {"creationTimestamp": soon()},
            "spec": {"replicas": 5, "template": {"spec": two_containers("")},
                     "selector": {"matchLabels": {"foo": "bar"}}},
            "status": {"replicas": 10, "updatedReplicas": 2, "availableReplicas": 1, "unavailableReplicas": 4}});
        assert_eq!(
            row("apps", "Deployment", d),
            [
                json!("0/5"),
                json!(2),
                json!(1),
                json!("fake-container1,fake-container2"),
                json!("fake-image1,fake-image2"),
                json!("foo=bar")
            ]
        );
    }

    // TestPrintDaemonSet (wide)
    #[test]
    fn daemon_set_cells() {
        let ds = json!({"spec": {"template": {"spec": two_containers("")},
                "selector": {"matchLabels": {"foo": "bar"}}},
            "status": {"currentNumberScheduled": 2, "desiredNumberScheduled": 3, "numberReady": 1,
                "updatedNumberScheduled": 2, "numberAvailable": 0}});
        assert_eq!(
            row("apps", "DaemonSet", ds),
            [
                json!(3),
                json!(2),
                json!(1),
                json!(2),
                json!(0),
                json!("<none>"),
                json!("fake-container1,fake-container2"),
                json!("fake-image1,fake-image2"),
                json!("foo=bar")
            ]
        );
    }

    // TestPrintReplicaSet (wide), TestPrintReplicaSetList
    #[test]
    fn replica_set_cells() {
        let rs = json!({"spec": {"replicas": 5, "template": {"spec": two_containers("")},
                "selector": {"matchLabels": {"foo": "bar"}}},
            "status": {"replicas": 5, "readyReplicas": 2}});
        assert_eq!(
            row("apps", "ReplicaSet", rs),
            [
                json!(5),
                json!(5),
                json!(2),
                json!("fake-container1,fake-container2"),
                json!("fake-image1,fake-image2"),
                json!("foo=bar")
            ]
        );
        let rs = json!({"spec": {"replicas": 4, "template": {}, "selector": {"matchLabels": {"foo": "bar"}}},
            "status": {"replicas": 3, "readyReplicas": 1}});
        assert_prefix(
            &row("apps", "ReplicaSet", rs),
            &[json!(4), json!(3), json!(1)],
        );
    }

    // TestPrintReplicationController
    #[test]
    fn replication_controller_cells() {
        let rc = json!({"spec": {"replicas": 5, "selector": {"a": "b"}, "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "test", "image": "test_image"}]}}},
            "status": {"replicas": 3, "readyReplicas": 1}});
        assert_eq!(
            row("", "ReplicationController", rc),
            [
                json!(5),
                json!(3),
                json!(1),
                json!("test"),
                json!("test_image"),
                json!("a=b")
            ]
        );
        // "no panic"
        let rc = json!({"metadata": {"annotations": {"k8s.io/initial-events-end": "true"}},
            "spec": {"replicas": 0}});
        assert_eq!(
            row("", "ReplicationController", rc),
            [
                json!(0),
                json!(0),
                json!(0),
                json!(""),
                json!(""),
                json!("<none>")
            ]
        );
    }

    // TestPrintStatefulSet (wide)
    #[test]
    fn stateful_set_cells() {
        let ss = json!({"spec": {"replicas": 5, "template": {"spec": two_containers("")}},
            "status": {"replicas": 5, "readyReplicas": 2}});
        assert_eq!(
            row("apps", "StatefulSet", ss),
            [
                json!("2/5"),
                json!("fake-container1,fake-container2"),
                json!("fake-image1,fake-image2")
            ]
        );
    }

    // TestPrintJob (job10, SuccessCriteriaMet, is newer than v1.33 and left out)
    #[test]
    fn job_cells() {
        let job1 = json!({"spec": {"completions": 2, "template": {"spec": two_containers("job-")},
                "selector": {"matchLabels": {"job-label": "job-label-value"}}},
            "status": {"succeeded": 1}});
        assert_eq!(
            row("batch", "Job", job1),
            [
                json!("Running"),
                json!("1/2"),
                json!(""),
                json!("fake-job-container1,fake-job-container2"),
                json!("fake-job-image1,fake-job-image2"),
                json!("job-label=job-label-value")
            ]
        );
        let cond =
            |kind: &str| json!({"status": {"conditions": [{"type": kind, "status": "True"}]}});
        let cases = [
            (json!({"status": {"succeeded": 0}}), ["Running", "0/1", ""]),
            (
                json!({"status": {"startTime": ago(-60), "completionTime": ago(-31 * 60)}}),
                ["Running", "0/1", "30m"],
            ),
            (
                json!({"status": {"startTime": ago(20 * 60)}}),
                ["Running", "0/1", "20m"],
            ),
            (cond("Complete"), ["Complete", "0/1", ""]),
            (cond("Failed"), ["Failed", "0/1", ""]),
            (cond("Suspended"), ["Suspended", "0/1", ""]),
            (cond("FailureTarget"), ["FailureTarget", "0/1", ""]),
            (
                json!({"metadata": {"deletionTimestamp": soon()}}),
                ["Terminating", "0/1", ""],
            ),
        ];
        for (job, want) in cases {
            let want: Vec<Value> = want.iter().map(|w| json!(w)).collect();
            assert_prefix(&row("batch", "Job", job), &want);
        }
        // TestPrintJobList
        let job2 = json!({"spec": {"completions": 2}, "status": {"succeeded": 2, "startTime": ago(20 * 60)}});
        assert_prefix(
            &row("batch", "Job", job2),
            &[json!("Running"), json!("2/2"), json!("20m")],
        );
    }

    // TestPrintCronJob
    #[test]
    fn cron_job_cells() {
        let job_template = json!({"spec": {"completions": 2, "template": {"spec": two_containers("job-")},
            "selector": {"matchLabels": {"a": "b"}}}});
        let cj = json!({"spec": {"schedule": "0/5 * * * ?", "suspend": false, "jobTemplate": job_template},
            "status": {"lastScheduleTime": soon()}});
        assert_eq!(
            row("batch", "CronJob", cj),
            [
                json!("0/5 * * * ?"),
                json!("<none>"),
                json!("False"),
                json!(0),
                json!("0s"),
                json!("fake-job-container1,fake-job-container2"),
                json!("fake-job-image1,fake-job-image2"),
                json!("a=b")
            ]
        );
        let cj = json!({"spec": {"schedule": "0/5 * * * ?", "timeZone": "LOCAL", "suspend": false,
            "jobTemplate": job_template}, "status": {"lastScheduleTime": soon()}});
        assert_prefix(
            &row("batch", "CronJob", cj),
            &[
                json!("0/5 * * * ?"),
                json!("LOCAL"),
                json!("False"),
                json!(0),
                json!("0s"),
            ],
        );
        let cj = json!({"spec": {"schedule": "0/5 * * * ?", "suspend": false},
            "status": {"lastScheduleTime": ago(30)}});
        assert_prefix(
            &row("batch", "CronJob", cj),
            &[
                json!("0/5 * * * ?"),
                json!("<none>"),
                json!("False"),
                json!(0),
                json!("30s"),
            ],
        );
        let cj = json!({"spec": {"schedule": "0/5 * * * ?", "suspend": false}, "status": {}});
        assert_prefix(
            &row("batch", "CronJob", cj),
            &[
                json!("0/5 * * * ?"),
                json!("<none>"),
                json!("False"),
                json!(0),
                json!("<none>"),
            ],
        );
    }

    // TestPrintHPA
    #[test]
    fn hpa_cells() {
        let hpa = |metrics: Value, current: Value| {
            let mut h = json!({"spec": {"scaleTargetRef": {"name": "some-rc", "kind": "ReplicationController"},
                "minReplicas": 2, "maxReplicas": 10, "metrics": metrics},
                "status": {"currentReplicas": 4, "desiredReplicas": 5, "currentMetrics": current}});
            if metrics.is_null() {
                h["spec"].as_object_mut().map(|s| s.remove("minReplicas"));
            }
            h
        };
        let want = |targets: &str, min: &str| {
            vec![
                json!("ReplicationController/some-rc"),
                json!(targets),
                json!(min),
                json!(10),
                json!(4),
            ]
        };
        assert_eq!(
            row(
                "autoscaling",
                "HorizontalPodAutoscaler",
                hpa(Value::Null, Value::Null)
            ),
            want("<none>", "<unset>")
        );
        let external = json!([{"type": "External", "external": {
            "metric": {"name": "some-external-metric", "selector": {"matchLabels": {"label": "value"}}},
            "target": {"type": "AverageValue", "averageValue": "100m"}}}]);
        assert_eq!(
            row(
                "autoscaling",
                "HorizontalPodAutoscaler",
                hpa(external.clone(), Value::Null)
            ),
            want("<unknown>/100m (avg)", "2")
        );
        let current = json!([{"type": "External", "external": {
            "metric": {"name": "some-external-metric"}, "current": {"averageValue": "50m"}}}]);
        assert_eq!(
            row(
                "autoscaling",
                "HorizontalPodAutoscaler",
                hpa(external, current)
            ),
            want("50m/100m (avg)", "2")
        );
        let pods = json!([{"type": "Pods", "pods": {"metric": {"name": "some-pods-metric"},
            "target": {"type": "AverageValue", "averageValue": "100m"}}}]);
        let current = json!([{"type": "Pods", "pods": {"metric": {"name": "some-pods-metric"},
            "current": {"averageValue": "50m"}}}]);
        assert_eq!(
            row("autoscaling", "HorizontalPodAutoscaler", hpa(pods, current)),
            want("50m/100m", "2")
        );
        let object = json!([{"type": "Object", "object": {"describedObject": {"name": "some-service", "kind": "Service"},
            "metric": {"name": "some-service-metric"}, "target": {"type": "Value", "value": "100m"}}}]);
        assert_eq!(
            row(
                "autoscaling",
                "HorizontalPodAutoscaler",
                hpa(object, Value::Null)
            ),
            want("<unknown>/100m", "2")
        );
        let util = json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 80}}}]);
        assert_eq!(
            row(
                "autoscaling",
                "HorizontalPodAutoscaler",
                hpa(util.clone(), Value::Null)
            ),
            want("cpu: <unknown>/80%", "2")
        );
        let current = json!([{"type": "Resource", "resource": {"name": "cpu",
            "current": {"averageUtilization": 50, "averageValue": "40m"}}}]);
        assert_eq!(
            row("autoscaling", "HorizontalPodAutoscaler", hpa(util, current)),
            want("cpu: 50%/80%", "2")
        );
        let value = json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "AverageValue", "averageValue": "100m"}}}]);
        let current = json!([{"type": "Resource", "resource": {"name": "cpu", "current": {"averageValue": "50m"}}}]);
        assert_eq!(
            row(
                "autoscaling",
                "HorizontalPodAutoscaler",
                hpa(value, current)
            ),
            want("cpu: 50m/100m", "2")
        );
        // The same "targetUtil" case in its autoscaling/v1 form.
        let v1 = json!({"spec": {"scaleTargetRef": {"name": "some-rc", "kind": "ReplicationController"},
            "minReplicas": 2, "maxReplicas": 10, "targetCPUUtilizationPercentage": 80},
            "status": {"currentReplicas": 4, "desiredReplicas": 5, "currentCPUUtilizationPercentage": 50}});
        assert_eq!(
            row("autoscaling", "HorizontalPodAutoscaler", v1),
            want("cpu: 50%/80%", "2")
        );
    }

    // TestPrintPodDisruptionBudget
    #[test]
    fn pdb_cells() {
        let pdb = json!({"spec": {"minAvailable": 22}, "status": {"disruptionsAllowed": 5}});
        assert_eq!(
            row("policy", "PodDisruptionBudget", pdb),
            [json!("22"), json!("N/A"), json!(5)]
        );
        let pdb = json!({"spec": {"maxUnavailable": 11}, "status": {"disruptionsAllowed": 5}});
        assert_eq!(
            row("policy", "PodDisruptionBudget", pdb),
            [json!("N/A"), json!("11"), json!(5)]
        );
    }

    // TestPrintControllerRevision
    #[test]
    fn controller_revision_cells() {
        let cr = |owners: Value, revision: i64| json!({"metadata": {"ownerReferences": owners}, "revision": revision});
        let owner = json!([{"controller": true, "apiVersion": "apps/v1", "kind": "DaemonSet", "name": "foo"}]);
        assert_eq!(
            row("apps", "ControllerRevision", cr(owner, 1)),
            [json!("daemonset.apps/foo"), json!(1)]
        );
        let owner = json!([{"controller": false, "kind": "ABC", "name": "foo"}]);
        assert_eq!(
            row("apps", "ControllerRevision", cr(owner, 2)),
            [json!("<none>"), json!(2)]
        );
        assert_eq!(
            row("apps", "ControllerRevision", cr(json!([]), 3)),
            [json!("<none>"), json!(3)]
        );
        assert_eq!(
            row("apps", "ControllerRevision", cr(Value::Null, 4)),
            [json!("<none>"), json!(4)]
        );
    }

    // TestPrintNetworkPolicy
    #[test]
    fn network_policy_cells() {
        assert_eq!(
            row("networking.k8s.io", "NetworkPolicy", json!({"spec": {}})),
            [json!("<none>")]
        );
        let np = json!({"spec": {"podSelector": {"matchLabels": {"foo": "bar"}}}});
        assert_eq!(
            row("networking.k8s.io", "NetworkPolicy", np),
            [json!("foo=bar")]
        );
    }

    // TestPrintIngress, TestPrintIngressClass
    #[test]
    fn ingress_cells() {
        let ing = json!({"spec": {"ingressClassName": "foo", "defaultBackend": {"service": {
                "name": "default-backend", "port": {"name": "default-backend", "number": 80}}}},
            "status": {"loadBalancer": {"ingress": [{"ip": "2.3.4.5", "hostname": "localhost.localdomain"}]}}});
        assert_eq!(
            row("networking.k8s.io", "Ingress", ing),
            [json!("foo"), json!("*"), json!("2.3.4.5"), json!("80")]
        );
        let ic = |params: Value| json!({"spec": {"controller": "example.com/controller", "parameters": params}});
        assert_eq!(
            row(
                "networking.k8s.io",
                "IngressClass",
                ic(json!({"kind": "customgroup", "name": "example"}))
            ),
            [
                json!("example.com/controller"),
                json!("customgroup/example")
            ]
        );
        let params = json!({"apiGroup": "example.com", "kind": "customgroup", "name": "example"});
        assert_eq!(
            row("networking.k8s.io", "IngressClass", ic(params)),
            [
                json!("example.com/controller"),
                json!("customgroup.example.com/example")
            ]
        );
        assert_eq!(
            row("networking.k8s.io", "IngressClass", ic(Value::Null)),
            [json!("example.com/controller"), json!("<none>")]
        );
    }

    // TestPrintNodeStatus, TestPrintNodeRole, TestPrintNodeExternalIP, TestPrintNodeInternalIP,
    // TestPrintNodeOSImage, TestPrintNodeContainerRuntimeVersion
    #[test]
    fn node_cells() {
        let node = |spec: Value, conditions: Value| json!({"spec": spec, "status": {"conditions": conditions}});
        let ready = json!([{"type": "Ready", "status": "True"}]);
        let cases = [
            (node(json!({}), ready.clone()), "Ready"),
            (
                node(json!({"unschedulable": true}), ready.clone()),
                "Ready,SchedulingDisabled",
            ),
            (
                node(
                    json!({}),
                    json!([{"type": "Ready", "status": "True"}, {"type": "Ready", "status": "True"}]),
                ),
                "Ready",
            ),
            (
                node(json!({}), json!([{"type": "Ready", "status": "False"}])),
                "NotReady",
            ),
            (
                node(
                    json!({"unschedulable": true}),
                    json!([{"type": "Ready", "status": "False"}]),
                ),
                "NotReady,SchedulingDisabled",
            ),
            (
                node(
                    json!({}),
                    json!([{"type": "InvalidValue", "status": "True"}]),
                ),
                "Unknown",
            ),
            (node(json!({}), json!([{}])), "Unknown"),
            (
                node(json!({"unschedulable": true}), json!([{}])),
                "Unknown,SchedulingDisabled",
            ),
        ];
        for (n, status) in cases {
            assert_prefix(
                &row("", "Node", n),
                &[json!(status), json!("<none>"), json!("")],
            );
        }
        let labels = json!({"node-role.kubernetes.io/master": "", "node-role.kubernetes.io/control-plane": "",
            "node-role.kubernetes.io/proxy": "", "kubernetes.io/role": "node"});
        assert_prefix(
            &row("", "Node", json!({"metadata": {"labels": labels}})),
            &[json!("Unknown"), json!("control-plane,master,node,proxy")],
        );
        let n = json!({"metadata": {"labels": {"kubernetes.io/role": "node"}}});
        assert_prefix(&row("", "Node", n), &[json!("Unknown"), json!("node")]);
        let addrs = json!({"status": {"addresses": [
            {"type": "ExternalIP", "address": "2.2.2.2"}, {"type": "InternalIP", "address": "3.3.3.3"},
            {"type": "ExternalIP", "address": "4.4.4.4"}]}});
        assert_eq!(
            row("", "Node", addrs),
            [
                json!("Unknown"),
                json!("<none>"),
                json!(""),
                json!("3.3.3.3"),
                json!("2.2.2.2"),
                json!("<unknown>"),
                json!("<unknown>"),
                json!("<unknown>")
            ]
        );
        let n = json!({"status": {"nodeInfo": {"osImage": "fake-os-image", "containerRuntimeVersion": "foo://1.2.3"},
            "addresses": [{"type": "ExternalIP", "address": "1.1.1.1"}]}});
        assert_eq!(
            row("", "Node", n),
            [
                json!("Unknown"),
                json!("<none>"),
                json!(""),
                json!("<none>"),
                json!("1.1.1.1"),
                json!("fake-os-image"),
                json!("<unknown>"),
                json!("foo://1.2.3")
            ]
        );
    }

    // TestPrintPersistentVolume
    #[test]
    fn persistent_volume_cells() {
        let pv = |spec: Value, phase: &str| {
            let mut spec = spec;
            spec["claimRef"] = json!({"name": "test", "namespace": "default"});
            json!({"spec": spec, "status": {"phase": phase}})
        };
        let p = pv(
            json!({"accessModes": ["ReadOnlyMany"], "capacity": {"storage": "4Gi"}}),
            "Bound",
        );
        assert_eq!(
            row("", "PersistentVolume", p),
            [
                json!("4Gi"),
                json!("ROX"),
                json!(""),
                json!("Bound"),
                json!("default/test"),
                json!(""),
                json!("<unset>"),
                json!(""),
                json!("<unset>")
            ]
        );
        let p = pv(
            json!({"storageClassName": "my-scn", "volumeAttributesClassName": "my-vacn",
            "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "10Gi"}}),
            "Pending",
        );
        assert_eq!(
            row("", "PersistentVolume", p),
            [
                json!("10Gi"),
                json!("RWO"),
                json!(""),
                json!("Pending"),
                json!("default/test"),
                json!("my-scn"),
                json!("my-vacn"),
                json!(""),
                json!("<unset>")
            ]
        );
    }

    // TestPrintPersistentVolumeClaim
    #[test]
    fn persistent_volume_claim_cells() {
        let status = |phase: &str, mode: &str, size: &str| json!({"phase": phase, "accessModes": [mode], "capacity": {"storage": size}});
        let c = json!({"spec": {"volumeName": "my-volume", "volumeMode": "Filesystem"},
            "status": status("Bound", "ReadOnlyMany", "4Gi")});
        assert_eq!(
            row("", "PersistentVolumeClaim", c),
            [
                json!("Bound"),
                json!("my-volume"),
                json!("4Gi"),
                json!("ROX"),
                json!(""),
                json!("<unset>"),
                json!("Filesystem")
            ]
        );
        let c = json!({"spec": {"volumeMode": "Filesystem"}, "status": status("Lost", "ReadOnlyMany", "4Gi")});
        assert_eq!(
            row("", "PersistentVolumeClaim", c),
            [
                json!("Lost"),
                json!(""),
                json!(""),
                json!(""),
                json!(""),
                json!("<unset>"),
                json!("Filesystem")
            ]
        );
        let c = json!({"spec": {"volumeName": "my-volume", "storageClassName": "my-scn",
            "volumeAttributesClassName": "my-vacn"}, "status": status("Pending", "ReadWriteOnce", "10Gi")});
        assert_eq!(
            row("", "PersistentVolumeClaim", c),
            [
                json!("Pending"),
                json!("my-volume"),
                json!("10Gi"),
                json!("RWO"),
                json!("my-scn"),
                json!("my-vacn"),
                json!("<unset>")
            ]
        );
    }

    // TestPrintComponentStatus
    #[test]
    fn component_status_cells() {
        assert_eq!(
            row("", "ComponentStatus", json!({"conditions": []})),
            [json!("Unknown"), json!(""), json!("")]
        );
        let cs = |status: &str| {
            json!({"conditions": [{"type": "Healthy", "status": status,
            "message": "test message", "error": "test error"}]})
        };
        assert_eq!(
            row("", "ComponentStatus", cs("True")),
            [json!("Healthy"), json!("test message"), json!("test error")]
        );
        assert_eq!(
            row("", "ComponentStatus", cs("False")),
            [
                json!("Unhealthy"),
                json!("test message"),
                json!("test error")
            ]
        );
    }

    // TestPrintCertificateSigningRequest
    #[test]
    fn csr_cells() {
        let csr = |spec: Value, status: Value| json!({"spec": spec, "status": status});
        let approved = json!({"conditions": [{"type": "Approved"}]});
        let cases = [
            (
                csr(json!({}), json!({})),
                ["<none>", "", "<none>", "Pending"],
            ),
            (
                csr(json!({"username": "CSR Requestor"}), approved.clone()),
                ["<none>", "CSR Requestor", "<none>", "Approved"],
            ),
            (
                csr(
                    json!({"username": "CSR Requestor", "signerName": "example.com/test-signer",
                "expirationSeconds": 7 * 24 * 3600 + 3600}),
                    approved.clone(),
                ),
                [
                    "example.com/test-signer",
                    "CSR Requestor",
                    "7d1h",
                    "Approved",
                ],
            ),
            (
                csr(
                    json!({"username": "CSR Requestor"}),
                    json!({"conditions": [{"type": "Approved"}], "certificate": "Y2VydCBkYXRh"}),
                ),
                ["<none>", "CSR Requestor", "<none>", "Approved,Issued"],
            ),
            (
                csr(
                    json!({"username": "CSR Requestor"}),
                    json!({"conditions": [{"type": "Denied"}]}),
                ),
                ["<none>", "CSR Requestor", "<none>", "Denied"],
            ),
        ];
        for (c, want) in cases {
            let want: Vec<Value> = want.iter().map(|w| json!(w)).collect();
            assert_eq!(
                row("certificates.k8s.io", "CertificateSigningRequest", c),
                want
            );
        }
    }

    // TestPrintStorageClass
    #[test]
    fn storage_class_cells() {
        let sc = json!({"provisioner": "kubernetes.io/glusterfs"});
        assert_eq!(
            row("storage.k8s.io", "StorageClass", sc),
            [
                json!("kubernetes.io/glusterfs"),
                json!("Delete"),
                json!("Immediate"),
                json!(false)
            ]
        );
        let sc = json!({"provisioner": "kubernetes.io/nfs", "reclaimPolicy": "Retain",
            "allowVolumeExpansion": true, "volumeBindingMode": "WaitForFirstConsumer"});
        assert_eq!(
            row("storage.k8s.io", "StorageClass", sc),
            [
                json!("kubernetes.io/nfs"),
                json!("Retain"),
                json!("WaitForFirstConsumer"),
                json!(true)
            ]
        );
    }

    // TestPrintPriorityClass (wide), TestPrintRuntimeClass
    #[test]
    fn priority_and_runtime_class_cells() {
        let pc = json!({"value": 1000000000, "globalDefault": true, "preemptionPolicy": "PreemptLowerPriority"});
        assert_eq!(
            row("scheduling.k8s.io", "PriorityClass", pc),
            [
                json!(1000000000),
                json!(true),
                json!("PreemptLowerPriority")
            ]
        );
        let pc = json!({"value": 1000000000, "globalDefault": true});
        assert_eq!(
            row("scheduling.k8s.io", "PriorityClass", pc),
            [json!(1000000000), json!(true), json!("")]
        );
        let pc = json!({"value": 1, "preemptionPolicy": "Never"});
        assert_prefix(
            &row("scheduling.k8s.io", "PriorityClass", pc),
            &[json!(1), json!(false)],
        );
        assert_eq!(
            row("node.k8s.io", "RuntimeClass", json!({"handler": "h1"})),
            [json!("h1")]
        );
    }

    // TestPrintFlowSchema
    #[test]
    fn flow_schema_cells() {
        let fs = json!({"spec": {"priorityLevelConfiguration": {"name": "allee"},
            "matchingPrecedence": 2147483647, "distinguisherMethod": {"type": "ByUser"}}});
        assert_eq!(
            row("flowcontrol.apiserver.k8s.io", "FlowSchema", fs),
            [
                json!("allee"),
                json!(2147483647),
                json!("ByUser"),
                json!("?")
            ]
        );
    }
}
