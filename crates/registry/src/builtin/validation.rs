//! Upstream's validation of table kinds (`pkg/apis/<group>/validation`) that
//! users commonly hit, with upstream's field paths and messages (kube-apiserver
//! 1.33): the PodSpec of Pods and of every pod template, the workload
//! controllers of `apps/v1`, ReplicationControllers, Jobs and CronJobs, Pod
//! and PVC updates, and a handful of checks on StorageClasses,
//! PodDisruptionBudgets, HorizontalPodAutoscalers, Ingresses and
//! PriorityClasses. The kinds new in 1.37 have modules of their own (`dra`,
//! `trust_bundles`, `pod_certificates`, `storage`), dispatched from here.
//!
//! Objects arrive defaulted, as JSON in their served version; a field of the
//! wrong JSON type is treated as absent (decoding rejects those upstream before
//! validation runs). Metadata (name, labels, annotations) is the store's.
//!
//! Bad values print as upstream prints them (`%v` of numbers, `%q` of strings,
//! `%#v` of Go maps and structs, e.g. `map[string]string{"app":"web"}`). Go
//! structs holding pointers print addresses upstream; those are elided as
//! `Type{...}`, which clients do not match on.

use apimachinery::gofmt::quote;
use apimachinery::selector::LabelSelector;
use apimachinery::validation::{
    FIELD_IMMUTABLE_ERROR_MSG, IS_NEGATIVE_ERROR_MSG, inclusive_range_error, is_dns1123_label,
    max_len_error, regex_error, validate_label_selector, validate_labels,
};
use apimachinery::{DynamicObject, meta};
use apimachinery::{ErrorList, FieldError, FieldPath};
use serde_json::{Map, Value, json};

use super::json_fields::{
    field, immutable, int_of, list, normalized, object, semantic_eq, spec_of, str_of,
};
use super::{dra, flowcontrol, pod_certificates, storage, trust_bundles};

/// Validation of a new object of `group`/`kind` (after defaulting).
pub fn on_create(group: &str, kind: &str) -> Option<fn(&DynamicObject) -> ErrorList> {
    let f: fn(&DynamicObject) -> ErrorList = match (group, kind) {
        ("", "Pod") => pod_create,
        ("", "PodTemplate") => pod_template,
        ("", "PersistentVolumeClaim") => pvc_create,
        ("", "ReplicationController") => replication_controller,
        ("apps", "Deployment") => deployment,
        ("apps", "ReplicaSet") => replica_set,
        ("apps", "StatefulSet") => stateful_set,
        ("apps", "DaemonSet") => daemon_set,
        ("batch", "Job") => job,
        ("batch", "CronJob") => cron_job_create,
        ("storage.k8s.io", "StorageClass") => storage_class,
        ("policy", "PodDisruptionBudget") => pod_disruption_budget,
        ("autoscaling", "HorizontalPodAutoscaler") => horizontal_pod_autoscaler,
        ("networking.k8s.io", "Ingress") => ingress,
        ("scheduling.k8s.io", "PriorityClass") => priority_class,
        ("node.k8s.io", "RuntimeClass") => runtime_class,
        ("resource.k8s.io", "DeviceClass") => dra::device_class,
        ("resource.k8s.io", "ResourceClaim") => dra::resource_claim,
        ("resource.k8s.io", "ResourceClaimTemplate") => dra::claim_template,
        ("resource.k8s.io", "ResourceSlice") => dra::resource_slice,
        ("resource.k8s.io", "DeviceTaintRule") => dra::taint_rule,
        ("certificates.k8s.io", "ClusterTrustBundle") => trust_bundles::trust_bundle,
        ("certificates.k8s.io", "PodCertificateRequest") => {
            pod_certificates::pod_certificate_request
        }
        ("storage.k8s.io", "VolumeAttributesClass") => storage::volume_attributes_class,
        ("storage.k8s.io", "CSINode") => storage::csi_node,
        ("storagemigration.k8s.io", "StorageVersionMigration") => {
            storage::storage_version_migration
        }
        ("flowcontrol.apiserver.k8s.io", "FlowSchema") => flowcontrol::flow_schema,
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration") => {
            flowcontrol::priority_level_configuration
        }
        _ => return None,
    };
    Some(f)
}

/// The name rule of `group`/`kind` where it depends on the object or is
/// reported elsewhere (the strategy's `name_errors`): `None` from the rule
/// means the type's usual name validation applies.
pub fn name_rule(group: &str, kind: &str) -> Option<NameRule> {
    let f: NameRule = match (group, kind) {
        ("certificates.k8s.io", "ClusterTrustBundle") => {
            |obj, name, prefix| Some(trust_bundles::bundle_name(obj, name, prefix))
        }
        ("resource.k8s.io", "DeviceClass") => {
            |_, name, prefix| dra::device_class_name(name, prefix)
        }
        ("networking.k8s.io", "IPAddress") => |_, name, _| Some(ip_address_name(name)),
        _ => return None,
    };
    Some(f)
}

/// `ValidateIPAddressName`: an IPAddress is named by its address, strictly
/// parsed and in canonical form.
fn ip_address_name(name: &str) -> Vec<String> {
    let leading_zero = name.split('.').count() == 4
        && name
            .split('.')
            .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
        && name
            .split('.')
            .any(|part| part.len() > 1 && part.starts_with('0'));
    if leading_zero {
        return vec!["must not have leading 0s".into()];
    }
    let Ok(ip) = name.parse::<std::net::IpAddr>() else {
        return vec!["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)".into()];
    };
    if let std::net::IpAddr::V6(v6) = ip
        && v6.to_ipv4_mapped().is_some()
    {
        return vec!["must not be an IPv4-mapped IPv6 address".into()];
    }
    let canonical = ip.to_string();
    if canonical != name {
        return vec![format!("must be in canonical form ({canonical:?})")];
    }
    Vec::new()
}

/// A name rule: the messages for a name (`true`: a `generateName`) of an object.
pub type NameRule = fn(&Value, &str, bool) -> Option<Vec<String>>;

/// Validation of an update of `group`/`kind`: `(new, old)`, run instead of
/// [`on_create`]'s (it includes it where upstream does).
pub fn on_update(
    group: &str,
    kind: &str,
) -> Option<fn(&DynamicObject, &DynamicObject) -> ErrorList> {
    let f: fn(&DynamicObject, &DynamicObject) -> ErrorList = match (group, kind) {
        ("", "Pod") => pod_update,
        ("", "PersistentVolumeClaim") => pvc_update,
        ("apps", "Deployment") => deployment_update,
        ("apps", "ReplicaSet") => replica_set_update,
        ("apps", "StatefulSet") => stateful_set_update,
        ("apps", "DaemonSet") => daemon_set_update,
        ("batch", "Job") => job_update,
        ("batch", "CronJob") => cron_job_update,
        ("storage.k8s.io", "StorageClass") => storage_class_update,
        ("scheduling.k8s.io", "PriorityClass") => priority_class_update,
        ("node.k8s.io", "RuntimeClass") => runtime_class_update,
        ("resource.k8s.io", "DeviceClass") => dra::device_class_update,
        ("resource.k8s.io", "ResourceClaim") => dra::resource_claim_update,
        ("resource.k8s.io", "ResourceClaimTemplate") => dra::claim_template_update,
        ("resource.k8s.io", "ResourceSlice") => dra::resource_slice_update,
        ("resource.k8s.io", "DeviceTaintRule") => dra::taint_rule_update,
        ("certificates.k8s.io", "ClusterTrustBundle") => trust_bundles::trust_bundle_update,
        ("certificates.k8s.io", "PodCertificateRequest") => {
            pod_certificates::pod_certificate_request_update
        }
        ("storage.k8s.io", "VolumeAttributesClass") => storage::volume_attributes_class_update,
        ("storage.k8s.io", "CSINode") => storage::csi_node_update,
        ("storagemigration.k8s.io", "StorageVersionMigration") => {
            storage::storage_version_migration_update
        }
        ("flowcontrol.apiserver.k8s.io", "FlowSchema") => flowcontrol::flow_schema_update,
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration") => {
            flowcontrol::priority_level_configuration_update
        }
        _ => return None,
    };
    Some(f)
}

// ---------------------------------------------------------------------------
// Go's `%#v` of the typed values messages embed

/// `map[string]string{"a":"b", "c":"d"}`, or `map[string]string(nil)`.
fn go_string_map(map: Option<&Map<String, Value>>) -> String {
    let Some(map) = map else {
        return "map[string]string(nil)".into();
    };
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    let entries: Vec<String> = keys
        .into_iter()
        .map(|k| format!("{}:{}", quote(k), quote(map[k].as_str().unwrap_or(""))))
        .collect();
    format!("map[string]string{{{}}}", entries.join(", "))
}

/// `[]string{"a", "b"}`, or `[]string(nil)`.
fn go_string_slice(v: Option<&Value>) -> String {
    match v.and_then(Value::as_array) {
        None => "[]string(nil)".into(),
        Some(items) => {
            let quoted: Vec<String> = items
                .iter()
                .map(|s| quote(s.as_str().unwrap_or("")))
                .collect();
            format!("[]string{{{}}}", quoted.join(", "))
        }
    }
}

/// `v1.LabelSelector{MatchLabels:..., MatchExpressions:...}`.
fn go_label_selector(selector: &Value) -> String {
    let expressions = match selector.get("matchExpressions").and_then(Value::as_array) {
        None => "[]v1.LabelSelectorRequirement(nil)".to_string(),
        Some(exprs) => {
            let items: Vec<String> = exprs
                .iter()
                .map(|e| {
                    format!(
                        "v1.LabelSelectorRequirement{{Key:{}, Operator:{}, Values:{}}}",
                        quote(str_of(e, "key")),
                        quote(str_of(e, "operator")),
                        go_string_slice(e.get("values"))
                    )
                })
                .collect();
            format!("[]v1.LabelSelectorRequirement{{{}}}", items.join(", "))
        }
    };
    format!(
        "v1.LabelSelector{{MatchLabels:{}, MatchExpressions:{}}}",
        go_string_map(object(selector, "matchLabels")),
        expressions
    )
}

/// `intstr.IntOrString{Type:1, IntVal:0, StrVal:"25%"}` (its `String()` has a
/// pointer receiver, so `%#v` prints the struct).
fn go_int_or_string(v: &Value) -> String {
    match v {
        Value::String(s) => format!(
            "intstr.IntOrString{{Type:1, IntVal:0, StrVal:{}}}",
            quote(s)
        ),
        other => format!(
            "intstr.IntOrString{{Type:0, IntVal:{}, StrVal:\"\"}}",
            other.as_i64().unwrap_or(0)
        ),
    }
}

/// `field.Invalid(path, template.Labels, "`selector` does not match template `labels`")`.
fn selector_mismatch(path: &FieldPath, labels: Option<&Map<String, Value>>) -> FieldError {
    FieldError::invalid_go(
        path,
        &go_string_map(labels),
        "`selector` does not match template `labels`",
    )
}

// ---------------------------------------------------------------------------
// Shared field rules

/// `ValidateNonnegativeField` on an optional integer field.
fn nonnegative(v: &Value, key: &str, path: &FieldPath, errs: &mut ErrorList) {
    if let Some(n) = int_of(v, key).filter(|n| *n < 0) {
        errs.push(FieldError::invalid(
            &path.child(key),
            json!(n),
            IS_NEGATIVE_ERROR_MSG,
        ));
    }
}

/// An enumerated string field: `Required value` when empty, else
/// `Unsupported value` unless one of `supported`.
pub(super) fn one_of(value: &str, supported: &[&str], path: &FieldPath, errs: &mut ErrorList) {
    if value.is_empty() {
        errs.push(FieldError::required(path, ""));
    } else if !supported.contains(&value) {
        errs.push(FieldError::not_supported(path, json!(value), supported));
    }
}

/// `ValidateImmutableField` of a `*metav1.LabelSelector`.
fn immutable_selector(new_spec: &Value, old_spec: &Value, path: &FieldPath, errs: &mut ErrorList) {
    let (new, old) = (new_spec.get("selector"), old_spec.get("selector"));
    if semantic_eq(new, old) {
        return;
    }
    let at = path.child("selector");
    errs.push(match new.filter(|s| !s.is_null()) {
        Some(selector) => {
            FieldError::invalid_go(&at, &go_label_selector(selector), FIELD_IMMUTABLE_ERROR_MSG)
        }
        None => FieldError::invalid(&at, Value::Null, FIELD_IMMUTABLE_ERROR_MSG),
    });
}

/// `IsValidPortName` (apimachinery `util/validation`).
fn port_name_errors(name: &str) -> Vec<String> {
    let mut msgs = Vec::new();
    if name.len() > 15 {
        msgs.push(max_len_error(15));
    }
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        msgs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    }
    if !name.bytes().any(|b| b.is_ascii_lowercase()) {
        msgs.push("must contain at least one letter (a-z)".into());
    }
    if name.contains("--") {
        msgs.push("must not contain consecutive hyphens".into());
    }
    if name.starts_with('-') || name.ends_with('-') {
        msgs.push("must not begin or end with a hyphen".into());
    }
    msgs
}

pub(super) fn dns_label(value: &str, path: &FieldPath, errs: &mut ErrorList) {
    for msg in is_dns1123_label(value) {
        errs.push(FieldError::invalid(path, json!(value), &msg));
    }
}

// ---------------------------------------------------------------------------
// PodSpec (pkg/apis/core/validation: ValidatePodSpec and its helpers)

const RESTART_POLICIES: [&str; 3] = ["Always", "OnFailure", "Never"];
const DNS_POLICIES: [&str; 4] = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"];
const PULL_POLICIES: [&str; 3] = ["Always", "IfNotPresent", "Never"];
const TERMINATION_MESSAGE_POLICIES: [&str; 2] = ["File", "FallbackToLogsOnError"];
const PORT_PROTOCOLS: [&str; 3] = ["SCTP", "TCP", "UDP"];
const PROBES: [&str; 3] = ["livenessProbe", "readinessProbe", "startupProbe"];

/// `ValidatePodSpec`: the checks shared by Pods and every pod template.
fn validate_pod_spec(spec: &Value, path: &FieldPath, errs: &mut ErrorList) {
    validate_pod_certificate_projections(spec, &path.child("volumes"), errs);
    if field(spec, "terminationGracePeriodSeconds").is_none() {
        errs.push(FieldError::required(
            &path.child("terminationGracePeriodSeconds"),
            "",
        ));
    }
    validate_containers(spec, &path.child("containers"), errs);
    validate_init_containers(spec, &path.child("initContainers"), errs);
    validate_ephemeral_containers(spec, &path.child("ephemeralContainers"), errs);
    one_of(
        str_of(spec, "restartPolicy"),
        &RESTART_POLICIES,
        &path.child("restartPolicy"),
        errs,
    );
    one_of(
        str_of(spec, "dnsPolicy"),
        &DNS_POLICIES,
        &path.child("dnsPolicy"),
        errs,
    );
    if let Some(selector) = object(spec, "nodeSelector") {
        errs.extend(validate_labels(selector, &path.child("nodeSelector")));
    }
    if let Some(security) = field(spec, "securityContext") {
        validate_sysctls(
            spec,
            security,
            &path.child("securityContext").child("sysctls"),
            errs,
        );
    }
    if let Some(deadline) = int_of(spec, "activeDeadlineSeconds")
        && !(1..=i64::from(i32::MAX)).contains(&deadline)
    {
        errs.push(FieldError::invalid(
            &path.child("activeDeadlineSeconds"),
            json!(deadline),
            &inclusive_range_error(1, i64::from(i32::MAX)),
        ));
    }
    for key in ["hostname", "subdomain"] {
        let value = str_of(spec, key);
        if !value.is_empty() {
            dns_label(value, &path.child(key), errs);
        }
    }
}

/// The `podCertificate` sources of projected volumes (part of
/// `ValidateVolumes`, which kubext does not otherwise run): a known key type
/// and a certificate lifetime between an hour and the signer's maximum.
fn validate_pod_certificate_projections(spec: &Value, path: &FieldPath, errs: &mut ErrorList) {
    const KEY_TYPES: [&str; 6] = [
        "RSA3072",
        "RSA4096",
        "ECDSAP256",
        "ECDSAP384",
        "ECDSAP521",
        "ED25519",
    ];
    const MAX_EXPIRATION: i64 = 91 * 24 * 60 * 60;
    const KUBERNETES_MAX_EXPIRATION: i64 = 24 * 60 * 60;
    for (i, volume) in list(spec, "volumes").iter().enumerate() {
        let Some(projected) = field(volume, "projected") else {
            continue;
        };
        let sources_path = path.index(i).child("projected").child("sources");
        for (j, source) in list(projected, "sources").iter().enumerate() {
            let Some(projection) = field(source, "podCertificate") else {
                continue;
            };
            let at = sources_path.index(j).child("podCertificate");
            let key_type = str_of(projection, "keyType");
            if !KEY_TYPES.contains(&key_type) {
                errs.push(FieldError::not_supported(
                    &at.child("keyType"),
                    json!(key_type),
                    &KEY_TYPES,
                ));
            }
            if let Some(seconds) = int_of(projection, "maxExpirationSeconds") {
                let at = at.child("maxExpirationSeconds");
                if seconds < 3600 {
                    errs.push(FieldError::invalid(
                        &at,
                        json!(seconds),
                        "if provided, maxExpirationSeconds must be >= 3600",
                    ));
                }
                let max = if str_of(projection, "signerName").starts_with("kubernetes.io/") {
                    KUBERNETES_MAX_EXPIRATION
                } else {
                    MAX_EXPIRATION
                };
                if seconds > max {
                    errs.push(FieldError::invalid(
                        &at,
                        json!(seconds),
                        &format!("if provided, maxExpirationSeconds must be <= {max}"),
                    ));
                }
            }
        }
    }
}

/// `validateSysctls`: names as sysctl(8) spells them, each once, and none of
/// a namespace the pod shares with the host.
fn validate_sysctls(spec: &Value, security: &Value, path: &FieldPath, errs: &mut ErrorList) {
    const MAX_LENGTH: usize = 253;
    let mut seen = std::collections::HashSet::new();
    for (i, sysctl) in list(security, "sysctls").iter().enumerate() {
        let name = str_of(sysctl, "name");
        let at = path.index(i).child("name");
        if name.is_empty() {
            errs.push(FieldError::required(&at, ""));
        } else if name.len() > MAX_LENGTH || !is_sysctl_name(name) {
            errs.push(FieldError::invalid(
                &at,
                json!(name),
                &format!(
                    "must have at most {MAX_LENGTH} characters and match regex ^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$"
                ),
            ));
        } else if seen.contains(name) {
            errs.push(FieldError::duplicate(&at, json!(name)));
        }
        let shared = match sysctl_namespace(name) {
            SysctlNamespace::Net if spec.get("hostNetwork") == Some(&json!(true)) => {
                Some("may not be specified when 'hostNetwork' is true")
            }
            SysctlNamespace::Ipc if spec.get("hostIPC") == Some(&json!(true)) => {
                Some("may not be specified when 'hostIPC' is true")
            }
            _ => None,
        };
        if let Some(message) = shared {
            errs.push(FieldError::invalid(&at, json!(name), message));
        }
        seen.insert(name);
    }
}

/// Segments of `[a-z0-9]([-_a-z0-9]*[a-z0-9])?` joined by `.` or `/`.
fn is_sysctl_name(name: &str) -> bool {
    name.split(['.', '/']).all(|segment| {
        let bytes = segment.as_bytes();
        let edge = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
        match (bytes.first(), bytes.last()) {
            (Some(first), Some(last)) => {
                edge(first)
                    && edge(last)
                    && bytes.iter().all(|b| edge(b) || *b == b'-' || *b == b'_')
            }
            _ => false,
        }
    })
}

#[derive(PartialEq)]
enum SysctlNamespace {
    Net,
    Ipc,
    Other,
}

/// The kernel namespace a sysctl belongs to (component-helpers' table); a
/// name written with `/` first is read with `.` and `/` swapped.
fn sysctl_namespace(name: &str) -> SysctlNamespace {
    let normalized: String = if name
        .find(['.', '/'])
        .is_some_and(|i| name.as_bytes()[i] == b'/')
    {
        name.chars()
            .map(|c| match c {
                '/' => '.',
                '.' => '/',
                c => c,
            })
            .collect()
    } else {
        name.to_owned()
    };
    let name = normalized.split('*').next().unwrap_or_default();
    const IPC: [&str; 11] = [
        "kernel.sem",
        "kernel.shmall",
        "kernel.shmmax",
        "kernel.shmmni",
        "kernel.shm_rmid_forced",
        "kernel.shm",
        "kernel.msgmax",
        "kernel.msgmnb",
        "kernel.msgmni",
        "kernel.msg",
        "fs.mqueue.",
    ];
    if IPC[..10].contains(&name) || name.starts_with(IPC[10]) {
        SysctlNamespace::Ipc
    } else if name.starts_with("net.") {
        SysctlNamespace::Net
    } else {
        SysctlNamespace::Other
    }
}

/// `validateContainers`: the regular containers.
fn validate_containers(spec: &Value, path: &FieldPath, errs: &mut ErrorList) {
    let containers = list(spec, "containers");
    if containers.is_empty() {
        errs.push(FieldError::required(path, ""));
        return;
    }
    let mut names: Vec<&str> = Vec::new();
    for (i, c) in containers.iter().enumerate() {
        let at = path.index(i);
        validate_container_common(c, &at, errs);
        let name = str_of(c, "name");
        if names.contains(&name) {
            errs.push(FieldError::duplicate(&at.child("name"), json!(name)));
        } else {
            names.push(name);
        }
        if field(c, "restartPolicy").is_some() {
            errs.push(FieldError::forbidden(
                &at.child("restartPolicy"),
                "may not be set for non-init containers",
            ));
        }
    }
    errs.extend(host_port_conflicts(containers, path));
}

/// `validateInitContainers`.
fn validate_init_containers(spec: &Value, path: &FieldPath, errs: &mut ErrorList) {
    let mut names: Vec<&str> = list(spec, "containers")
        .iter()
        .map(|c| str_of(c, "name"))
        .collect();
    for (i, c) in list(spec, "initContainers").iter().enumerate() {
        let at = path.index(i);
        validate_container_common(c, &at, errs);
        let restart = c.get("restartPolicy").and_then(Value::as_str);
        if let Some(policy) = restart.filter(|p| *p != "Always") {
            errs.push(FieldError::not_supported(
                &at.child("restartPolicy"),
                json!(policy),
                &["Always"],
            ));
        }
        let name = str_of(c, "name");
        if names.contains(&name) {
            errs.push(FieldError::duplicate(&at.child("name"), json!(name)));
        } else if !name.is_empty() {
            names.push(name);
        }
        errs.extend(host_port_conflicts(std::slice::from_ref(c), path));
        if restart != Some("Always") {
            for key in std::iter::once("lifecycle").chain(PROBES) {
                if field(c, key).is_some() {
                    errs.push(FieldError::forbidden(
                        &at.child(key),
                        "may not be set for init containers without restartPolicy=Always",
                    ));
                }
            }
        }
    }
}

/// What an ephemeral container may set (`allowedEphemeralContainerFields`);
/// the others, in the struct's order, are forbidden when not zero.
const EPHEMERAL_FORBIDDEN_FIELDS: [&str; 8] = [
    "ports",
    "resources",
    "resizePolicy",
    "restartPolicy",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
];

const CANNOT_BE_SET_FOR_EPHEMERAL: &str = "cannot be set for an Ephemeral Container";

/// `validateEphemeralContainers`: each is a container with a name unique among
/// all the pod's containers, a target that is a regular or init container, and
/// none of the fields that would make it part of the workload.
fn validate_ephemeral_containers(spec: &Value, path: &FieldPath, errs: &mut ErrorList) {
    let ephemeral = list(spec, "ephemeralContainers");
    if ephemeral.is_empty() {
        return;
    }
    let others: Vec<&str> = ["containers", "initContainers"]
        .iter()
        .flat_map(|key| list(spec, key))
        .map(|c| str_of(c, "name"))
        .collect();
    let mut names = others.clone();
    for (i, c) in ephemeral.iter().enumerate() {
        let at = path.index(i);
        validate_container_common(c, &at, errs);
        let image = str_of(c, "image");
        if image.trim() != image {
            errs.push(FieldError::invalid(
                &at.child("image"),
                json!(image),
                "must not have leading or trailing whitespace",
            ));
        }
        let name = str_of(c, "name");
        if names.contains(&name) {
            errs.push(FieldError::duplicate(&at.child("name"), json!(name)));
        } else {
            names.push(name);
        }
        let target = str_of(c, "targetContainerName");
        if !target.is_empty() && !others.contains(&target) {
            errs.push(FieldError::not_found(
                &at.child("targetContainerName"),
                json!(target),
            ));
        }
        for key in EPHEMERAL_FORBIDDEN_FIELDS {
            // `resources` is a struct: only a non-empty one is set.
            let set = match c.get(key) {
                None | Some(Value::Null) => false,
                Some(Value::Object(m)) if key == "resources" => !m.is_empty(),
                Some(_) => true,
            };
            if set {
                errs.push(FieldError::forbidden(
                    &at.child(key),
                    CANNOT_BE_SET_FOR_EPHEMERAL,
                ));
            }
        }
        for (j, mount) in list(c, "volumeMounts").iter().enumerate() {
            for key in ["subPath", "subPathExpr"] {
                if !str_of(mount, key).is_empty() {
                    errs.push(FieldError::forbidden(
                        &at.child("volumeMounts").index(j).child(key),
                        CANNOT_BE_SET_FOR_EPHEMERAL,
                    ));
                }
            }
        }
    }
}

/// `ValidatePodEphemeralContainersUpdate` (the metadata update is the store's):
/// the new pod is valid, a static pod takes none, and existing ephemeral
/// containers are neither removed nor changed (matched by name: a patch may
/// reorder them).
pub(super) fn ephemeral_containers_update(new: &DynamicObject, old: &DynamicObject) -> ErrorList {
    let mut errs = validate_pod_metadata_and_spec(new);
    let mirror = old
        .metadata
        .annotations
        .contains_key("kubernetes.io/config.mirror");
    if mirror {
        return vec![FieldError::forbidden(
            &FieldPath::root(),
            "static pods do not support ephemeral containers",
        )];
    }
    let path = FieldPath::new("spec").child("ephemeralContainers");
    let current = list(spec_of(new), "ephemeralContainers");
    for existing in list(spec_of(old), "ephemeralContainers") {
        let name = str_of(existing, "name");
        match current.iter().find(|c| str_of(c, "name") == name) {
            None => errs.push(FieldError::forbidden(
                &path,
                &format!(
                    "existing ephemeral containers {} may not be removed\n",
                    quote(name)
                ),
            )),
            // Upstream appends a go-cmp diff, which cannot be reproduced.
            Some(c) if !semantic_eq(Some(c), Some(existing)) => errs.push(FieldError::forbidden(
                &path,
                &format!(
                    "existing ephemeral containers {} may not be changed\n",
                    quote(name)
                ),
            )),
            Some(_) => {}
        }
    }
    errs
}

/// `validateContainerCommon`: name, image, termination message policy,
/// ports and image pull policy of one container.
fn validate_container_common(c: &Value, path: &FieldPath, errs: &mut ErrorList) {
    let name = str_of(c, "name");
    if name.is_empty() {
        errs.push(FieldError::required(&path.child("name"), ""));
    } else {
        dns_label(name, &path.child("name"), errs);
    }
    if str_of(c, "image").is_empty() {
        errs.push(FieldError::required(&path.child("image"), ""));
    }
    one_of(
        str_of(c, "terminationMessagePolicy"),
        &TERMINATION_MESSAGE_POLICIES,
        &path.child("terminationMessagePolicy"),
        errs,
    );
    validate_container_ports(list(c, "ports"), &path.child("ports"), errs);
    one_of(
        str_of(c, "imagePullPolicy"),
        &PULL_POLICIES,
        &path.child("imagePullPolicy"),
        errs,
    );
    if let Some(resources) = field(c, "resources") {
        validate_requests_within_limits(resources, &path.child("resources"), errs);
    }
}

/// The part of `ValidateContainerResourceRequirements` that compares: a
/// request is at most its limit, and equals it for resources that cannot be
/// overcommitted (extended and huge-page ones), which need a limit.
fn validate_requests_within_limits(resources: &Value, path: &FieldPath, errs: &mut ErrorList) {
    use apimachinery::quantity::Quantity;
    let limits = object(resources, "limits");
    let Some(requests) = object(resources, "requests") else {
        return;
    };
    let requests_path = path.child("requests");
    let mut names: Vec<&String> = requests.keys().collect();
    names.sort();
    for name in names {
        let Some(request) = requests[name]
            .as_str()
            .and_then(|q| Quantity::parse(q).ok())
        else {
            continue;
        };
        let native = !name.contains('/') || name.contains("kubernetes.io/");
        let overcommit = native && !name.starts_with("hugepages-");
        match limits.and_then(|l| l.get(name)) {
            Some(limit) => {
                let Some(limit) = limit.as_str().and_then(|q| Quantity::parse(q).ok()) else {
                    continue;
                };
                let message = if request != limit && !overcommit {
                    format!("must be equal to {name} limit of {limit}")
                } else if request > limit {
                    format!("must be less than or equal to {name} limit of {limit}")
                } else {
                    continue;
                };
                errs.push(FieldError::invalid(
                    &requests_path,
                    json!(request.to_string()),
                    &message,
                ));
            }
            None if !overcommit => errs.push(FieldError::required(
                &path.child("limits"),
                "Limit must be set for non overcommitable resources",
            )),
            None => {}
        }
    }
}

/// `validateContainerPorts`.
fn validate_container_ports(ports: &[Value], path: &FieldPath, errs: &mut ErrorList) {
    let mut names: Vec<&str> = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let at = path.index(i);
        let name = str_of(port, "name");
        if !name.is_empty() {
            let msgs = port_name_errors(name);
            if !msgs.is_empty() {
                for msg in msgs {
                    errs.push(FieldError::invalid(&at.child("name"), json!(name), &msg));
                }
            } else if names.contains(&name) {
                errs.push(FieldError::duplicate(&at.child("name"), json!(name)));
            } else {
                names.push(name);
            }
        }
        match int_of(port, "containerPort").unwrap_or(0) {
            0 => errs.push(FieldError::required(&at.child("containerPort"), "")),
            p => port_in_range(p, &at.child("containerPort"), errs),
        }
        if let Some(host) = int_of(port, "hostPort").filter(|p| *p != 0) {
            port_in_range(host, &at.child("hostPort"), errs);
        }
        one_of(
            str_of(port, "protocol"),
            &PORT_PROTOCOLS,
            &at.child("protocol"),
            errs,
        );
    }
}

fn port_in_range(port: i64, path: &FieldPath, errs: &mut ErrorList) {
    if !(1..=65535).contains(&port) {
        errs.push(FieldError::invalid(
            path,
            json!(port),
            &inclusive_range_error(1, 65535),
        ));
    }
}

/// `checkHostPortConflicts`: `protocol/hostIP/hostPort` unique across containers.
fn host_port_conflicts(containers: &[Value], path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut seen: Vec<String> = Vec::new();
    for (ci, c) in containers.iter().enumerate() {
        for (pi, port) in list(c, "ports").iter().enumerate() {
            let host_port = int_of(port, "hostPort").unwrap_or(0);
            if host_port == 0 {
                continue;
            }
            let key = format!(
                "{}/{}/{host_port}",
                str_of(port, "protocol"),
                str_of(port, "hostIP")
            );
            if seen.contains(&key) {
                let at = path.index(ci).child("ports").index(pi).child("hostPort");
                errs.push(FieldError::duplicate(&at, json!(key)));
            } else {
                seen.push(key);
            }
        }
    }
    errs
}

/// `ValidatePodTemplateSpec`: template labels, the PodSpec, and no
/// ephemeral containers.
fn validate_pod_template_spec(template: &Value, path: &FieldPath, errs: &mut ErrorList) {
    if let Some(labels) = meta::labels(template) {
        errs.extend(validate_labels(labels, &path.child("labels")));
    }
    let spec_path = path.child("spec");
    let spec = spec_of(template);
    validate_pod_spec(spec, &spec_path, errs);
    if !list(spec, "ephemeralContainers").is_empty() {
        errs.push(FieldError::forbidden(
            &spec_path.child("ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        ));
    }
}

/// The template of a controller that restarts its pods: `restartPolicy`
/// must be `Always` and `activeDeadlineSeconds` unset ("in <Kind> is not
/// Supported", with upstream's kind word).
fn validate_always_restarting(
    template: &Value,
    path: &FieldPath,
    kind: &str,
    errs: &mut ErrorList,
) {
    let spec = spec_of(template);
    let policy = str_of(spec, "restartPolicy");
    if policy != "Always" {
        errs.push(FieldError::not_supported(
            &path.child("spec").child("restartPolicy"),
            json!(policy),
            &["Always"],
        ));
    }
    if field(spec, "activeDeadlineSeconds").is_some() {
        errs.push(FieldError::forbidden(
            &path.child("spec").child("activeDeadlineSeconds"),
            &format!("activeDeadlineSeconds in {kind} is not Supported"),
        ));
    }
}

// ---------------------------------------------------------------------------
// Pods and PodTemplates

/// `ValidatePodCreate`.
fn pod_create(pod: &DynamicObject) -> ErrorList {
    let mut errs = validate_pod_metadata_and_spec(pod);
    let spec = spec_of(pod);
    let path = FieldPath::new("spec");
    if !list(spec, "ephemeralContainers").is_empty() {
        errs.push(FieldError::forbidden(
            &path.child("ephemeralContainers"),
            "cannot be set on create",
        ));
    }
    if !str_of(spec, "nodeName").is_empty() && !list(spec, "schedulingGates").is_empty() {
        errs.push(FieldError::forbidden(
            &path.child("nodeName"),
            "cannot be set until all schedulingGates have been cleared",
        ));
    }
    errs
}

/// `validatePodMetadataAndSpec` (its spec part): the PodSpec, plus image
/// whitespace, checked for Pods only.
pub(super) fn validate_pod_metadata_and_spec(pod: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let path = FieldPath::new("spec");
    let spec = spec_of(pod);
    validate_pod_spec(spec, &path, &mut errs);
    for key in ["containers", "initContainers"] {
        for (i, c) in list(spec, key).iter().enumerate() {
            let image = str_of(c, "image");
            if image.trim() != image {
                errs.push(FieldError::invalid(
                    &path.child(key).index(i).child("image"),
                    json!(image),
                    "must not have leading or trailing whitespace",
                ));
            }
        }
    }
    errs
}

/// `updatablePodSpecFields`, joined by `,` as upstream's message does.
const UPDATABLE_POD_SPEC_FIELDS: &str = "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// `ValidatePodUpdate`.
fn pod_update(new: &DynamicObject, old: &DynamicObject) -> ErrorList {
    let mut errs = validate_pod_metadata_and_spec(new);
    let path = FieldPath::new("spec");
    let (new_spec, old_spec) = (spec_of(new), spec_of(old));
    for key in ["containers", "initContainers"] {
        if !container_updates(new_spec, old_spec, key, &path.child(key), &mut errs) {
            return errs;
        }
    }
    if !active_deadline_update(new_spec, old_spec, &path, &mut errs) {
        return errs;
    }
    errs.extend(only_added_tolerations(
        new_spec,
        old_spec,
        &path.child("tolerations"),
    ));
    if !semantic_eq(Some(&munged_pod_spec(new_spec, old_spec)), Some(old_spec)) {
        // Upstream appends "\n" and a go-cmp diff of the internal PodSpecs,
        // which cannot be reproduced; clients match on this first line.
        errs.push(FieldError::forbidden(
            &path,
            &format!("pod updates may not change fields other than {UPDATABLE_POD_SPEC_FIELDS}"),
        ));
    }
    errs
}

/// `ValidateContainerUpdates`; false when upstream stops validating (a
/// container was added or removed).
fn container_updates(
    new_spec: &Value,
    old_spec: &Value,
    key: &str,
    path: &FieldPath,
    errs: &mut ErrorList,
) -> bool {
    let new = list(new_spec, key);
    if new.len() != list(old_spec, key).len() {
        errs.push(FieldError::forbidden(
            path,
            "pod updates may not add or remove containers",
        ));
        return false;
    }
    for (i, c) in new.iter().enumerate() {
        let image = str_of(c, "image");
        if image.is_empty() {
            errs.push(FieldError::required(&path.index(i).child("image"), ""));
        }
        if image.trim() != image {
            errs.push(FieldError::invalid(
                &path.index(i).child("image"),
                json!(image),
                "must not have leading or trailing whitespace",
            ));
        }
    }
    true
}

/// The `activeDeadlineSeconds` rules of `ValidatePodUpdate`; false when
/// upstream returns early.
fn active_deadline_update(
    new_spec: &Value,
    old_spec: &Value,
    path: &FieldPath,
    errs: &mut ErrorList,
) -> bool {
    let at = path.child("activeDeadlineSeconds");
    let old = int_of(old_spec, "activeDeadlineSeconds");
    match int_of(new_spec, "activeDeadlineSeconds") {
        Some(new) if !(0..=i64::from(i32::MAX)).contains(&new) => {
            errs.push(FieldError::invalid(
                &at,
                json!(new),
                &inclusive_range_error(0, i64::from(i32::MAX)),
            ));
            false
        }
        Some(new) if old.is_some_and(|old| old < new) => {
            errs.push(FieldError::invalid(
                &at,
                json!(new),
                "must be less than or equal to previous value",
            ));
            false
        }
        Some(_) => true,
        None => {
            if old.is_some() {
                errs.push(FieldError::invalid(
                    &at,
                    Value::Null,
                    "must not update from a positive integer to nil value",
                ));
            }
            true
        }
    }
}

/// The toleration kube-apiserver's DefaultTolerationSeconds admission adds
/// back on update when the pod tolerates the taint no other way.
fn is_default_toleration(t: &Value, new_tolerations: &[Value]) -> bool {
    let key = str_of(t, "key");
    let is_default = matches!(
        key,
        "node.kubernetes.io/not-ready" | "node.kubernetes.io/unreachable"
    ) && str_of(t, "operator") == "Exists"
        && str_of(t, "effect") == "NoExecute"
        && int_of(t, "tolerationSeconds") == Some(300);
    is_default
        && !new_tolerations
            .iter()
            .any(|n| str_of(n, "key") == key && str_of(n, "effect") == "NoExecute")
}

/// `validateOnlyAddedTolerations`: every old toleration is kept, except for
/// its `tolerationSeconds`.
fn only_added_tolerations(new_spec: &Value, old_spec: &Value, path: &FieldPath) -> ErrorList {
    let new = list(new_spec, "tolerations");
    let without_seconds = |t: &Value| {
        let mut t = t.clone();
        if let Some(map) = t.as_object_mut() {
            map.remove("tolerationSeconds");
        }
        normalized(Some(&t))
    };
    let kept = |old: &Value| {
        is_default_toleration(old, new)
            || new
                .iter()
                .any(|n| without_seconds(n) == without_seconds(old))
    };
    if list(old_spec, "tolerations").iter().all(kept) {
        return ErrorList::new();
    }
    vec![FieldError::forbidden(
        path,
        "existing toleration can not be modified except its tolerationSeconds",
    )]
}

/// The new PodSpec with what a pod update may change put back to the old
/// values, as `ValidatePodUpdate` munges it before comparing.
fn munged_pod_spec(new_spec: &Value, old_spec: &Value) -> Value {
    let mut munged = new_spec.clone();
    let Some(map) = munged.as_object_mut() else {
        return munged;
    };
    for key in ["containers", "initContainers"] {
        if let Some(containers) = map.get_mut(key).and_then(Value::as_array_mut) {
            for (c, old) in containers.iter_mut().zip(list(old_spec, key)) {
                if let Some(c) = c.as_object_mut() {
                    c.insert(
                        "image".into(),
                        old.get("image").cloned().unwrap_or(Value::Null),
                    );
                }
            }
        }
    }
    let mut restore = vec!["activeDeadlineSeconds", "schedulingGates", "tolerations"];
    let old_grace = int_of(old_spec, "terminationGracePeriodSeconds");
    if old_grace.is_some_and(|g| g < 0)
        && int_of(new_spec, "terminationGracePeriodSeconds") == Some(1)
    {
        restore.push("terminationGracePeriodSeconds");
    }
    if !list(old_spec, "schedulingGates").is_empty() {
        // Gated pods may add to nodeSelector and node affinity (the
        // additions-only rules are not checked here).
        restore.extend(["nodeSelector", "affinity"]);
    }
    // Priority admission keeps the priority it set on create.
    for key in ["priority", "preemptionPolicy"] {
        if field(new_spec, key).is_none() {
            restore.push(key);
        }
    }
    for key in restore {
        match old_spec.get(key) {
            Some(v) => map.insert(key.into(), v.clone()),
            None => map.remove(key),
        };
    }
    munged
}

/// `ValidatePodTemplate`.
fn pod_template(obj: &DynamicObject) -> ErrorList {
    let mut errs = ErrorList::new();
    let template = obj.get("template").unwrap_or(&Value::Null);
    validate_pod_template_spec(template, &FieldPath::new("template"), &mut errs);
    errs
}

// ---------------------------------------------------------------------------
// Workload controllers (pkg/apis/apps/validation, ReplicationController)

/// `spec.selector` of an `apps/v1` controller: required, valid, non-empty
/// ("empty selector is invalid for <word>"). Returns the parsed selector.
fn controller_selector(
    spec: &Value,
    path: &FieldPath,
    word: &str,
    errs: &mut ErrorList,
) -> Option<LabelSelector> {
    let at = path.child("selector");
    match field(spec, "selector") {
        None => errs.push(FieldError::required(&at, "")),
        Some(selector) => {
            errs.extend(validate_label_selector(selector, &at));
            let terms = object(selector, "matchLabels").map_or(0, Map::len)
                + list(selector, "matchExpressions").len();
            if terms == 0 {
                errs.push(FieldError::invalid_go(
                    &at,
                    &go_label_selector(selector),
                    &format!("empty selector is invalid for {word}"),
                ));
            }
        }
    }
    LabelSelector::from_json(spec.get("selector").unwrap_or(&Value::Null)).ok()
}

/// The template of a controller selecting its pods with `selector`
/// (`ValidatePodTemplateSpecForReplicaSet` and friends).
fn selected_template(
    spec: &Value,
    selector: &LabelSelector,
    path: &FieldPath,
    errs: &mut ErrorList,
) {
    let template = spec.get("template").unwrap_or(&Value::Null);
    let labels = meta::labels(template);
    if !selector.is_empty() && !selector.matches(labels) {
        errs.push(selector_mismatch(
            &path.child("metadata").child("labels"),
            labels,
        ));
    }
}

/// `ValidateDeploymentSpec` and `ValidateReplicaSetSpec` share this part:
/// selector and template (`ValidatePodTemplateSpecForReplicaSet`).
fn replica_set_like(spec: &Value, path: &FieldPath, errs: &mut ErrorList) {
    nonnegative(spec, "replicas", path, errs);
    let selector = controller_selector(spec, path, "deployment", errs);
    let template_path = path.child("template");
    match selector {
        None => errs.push(FieldError::invalid_go(
            &path.child("selector"),
            &go_label_selector(spec.get("selector").unwrap_or(&Value::Null)),
            "invalid label selector",
        )),
        Some(selector) => {
            selected_template(spec, &selector, &template_path, errs);
            let template = spec.get("template").unwrap_or(&Value::Null);
            validate_pod_template_spec(template, &template_path, errs);
            validate_always_restarting(template, &template_path, "ReplicaSet", errs);
        }
    }
}

/// `ValidateDeployment`.
fn deployment(obj: &DynamicObject) -> ErrorList {
    let mut errs = ErrorList::new();
    let (spec, path) = (spec_of(obj), FieldPath::new("spec"));
    replica_set_like(spec, &path, &mut errs);
    deployment_strategy(spec, &path.child("strategy"), &mut errs);
    nonnegative(spec, "minReadySeconds", &path, &mut errs);
    nonnegative(spec, "revisionHistoryLimit", &path, &mut errs);
    if let Some(deadline) = int_of(spec, "progressDeadlineSeconds") {
        nonnegative(spec, "progressDeadlineSeconds", &path, &mut errs);
        if deadline <= int_of(spec, "minReadySeconds").unwrap_or(0) {
            errs.push(FieldError::invalid(
                &path.child("progressDeadlineSeconds"),
                json!(deadline),
                "must be greater than minReadySeconds",
            ));
        }
    }
    errs
}

/// `ValidateDeploymentStrategy`.
fn deployment_strategy(spec: &Value, path: &FieldPath, errs: &mut ErrorList) {
    let strategy = spec.get("strategy").unwrap_or(&Value::Null);
    let rolling = field(strategy, "rollingUpdate");
    match str_of(strategy, "type") {
        "Recreate" => {
            if rolling.is_some() {
                errs.push(FieldError::forbidden(
                    &path.child("rollingUpdate"),
                    "may not be specified when strategy `type` is 'Recreate'",
                ));
            }
        }
        "RollingUpdate" => match rolling {
            None => errs.push(FieldError::required(
                &path.child("rollingUpdate"),
                "this should be defaulted and never be nil",
            )),
            Some(rolling) => rolling_update_deployment(rolling, &path.child("rollingUpdate"), errs),
        },
        other => errs.push(FieldError {
            bad_value: Some(apimachinery::field::BadValue::Go(format!(
                "apps.DeploymentStrategy{{Type:{}, ...}}",
                quote(other)
            ))),
            ..FieldError::not_supported(path, Value::Null, &["Recreate", "RollingUpdate"])
        }),
    }
}

/// `ValidateRollingUpdateDeployment`.
fn rolling_update_deployment(rolling: &Value, path: &FieldPath, errs: &mut ErrorList) {
    let unavailable = rolling.get("maxUnavailable").unwrap_or(&Value::Null);
    let surge = rolling.get("maxSurge").unwrap_or(&Value::Null);
    int_or_percent(unavailable, &path.child("maxUnavailable"), errs);
    int_or_percent(surge, &path.child("maxSurge"), errs);
    if int_or_percent_value(unavailable) == 0 && int_or_percent_value(surge) == 0 {
        errs.push(FieldError::invalid_go(
            &path.child("maxUnavailable"),
            &go_int_or_string(unavailable),
            "may not be 0 when `maxSurge` is 0",
        ));
    }
    not_more_than_100_percent(unavailable, &path.child("maxUnavailable"), errs);
}

/// `ValidatePositiveIntOrPercent`.
fn int_or_percent(v: &Value, path: &FieldPath, errs: &mut ErrorList) {
    match v {
        Value::String(s) if percent(s).is_none() => errs.push(FieldError::invalid_go(
            path,
            &go_int_or_string(v),
            &regex_error(
                "a valid percent string must be a numeric string followed by an ending '%'",
                "[0-9]+%",
                &["1%", "93%"],
            ),
        )),
        Value::Number(n) if n.as_i64().is_some_and(|n| n < 0) => errs.push(FieldError::invalid(
            path,
            json!(n.as_i64().unwrap_or(0)),
            IS_NEGATIVE_ERROR_MSG,
        )),
        _ => {}
    }
}

/// `IsNotMoreThan100Percent`.
fn not_more_than_100_percent(v: &Value, path: &FieldPath, errs: &mut ErrorList) {
    if v.as_str().and_then(percent).is_some_and(|p| p > 100) {
        errs.push(FieldError::invalid_go(
            path,
            &go_int_or_string(v),
            "must not be greater than 100%",
        ));
    }
}

/// The number of a valid percent string (`[0-9]+%`).
fn percent(s: &str) -> Option<i64> {
    let digits = s.strip_suffix('%')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(digits.parse().unwrap_or(i64::MAX))
}

/// `getIntOrPercentValue`.
fn int_or_percent_value(v: &Value) -> i64 {
    match v {
        Value::String(s) => percent(s).or_else(|| s.parse().ok()).unwrap_or(0),
        other => other.as_i64().unwrap_or(0),
    }
}

/// A create-time check's errors plus the `apps/v1` strategies' rule that the
/// selector may not change.
fn with_fixed_selector(mut errs: ErrorList, new: &Value, old: &Value) -> ErrorList {
    immutable_selector(
        spec_of(new),
        spec_of(old),
        &FieldPath::new("spec"),
        &mut errs,
    );
    errs
}

/// `ValidateDeploymentUpdate` plus the strategy's `apps/v1` selector rule.
fn deployment_update(new: &DynamicObject, old: &DynamicObject) -> ErrorList {
    with_fixed_selector(deployment(new), new, old)
}

/// `ValidateReplicaSet`.
fn replica_set(obj: &DynamicObject) -> ErrorList {
    let mut errs = ErrorList::new();
    let (spec, path) = (spec_of(obj), FieldPath::new("spec"));
    nonnegative(spec, "minReadySeconds", &path, &mut errs);
    replica_set_like(spec, &path, &mut errs);
    errs
}

/// `ValidateReplicaSetUpdate` plus the strategy's `apps/v1` selector rule.
fn replica_set_update(new: &DynamicObject, old: &DynamicObject) -> ErrorList {
    with_fixed_selector(replica_set(new), new, old)
}

/// `ValidateDaemonSetSpec`.
fn daemon_set(obj: &DynamicObject) -> ErrorList {
    let mut errs = ErrorList::new();
    let (spec, path) = (spec_of(obj), FieldPath::new("spec"));
    let selector_value = spec.get("selector").unwrap_or(&Value::Null);
    if field(spec, "selector").is_some() {
        errs.extend(validate_label_selector(
            selector_value,
            &path.child("selector"),
        ));
    }
    let template_path = path.child("template");
    let template = spec.get("template").unwrap_or(&Value::Null);
    if let Ok(selector) = LabelSelector::from_json(selector_value) {
        let labels = meta::labels(template);
        if !selector.matches(labels) {
            errs.push(selector_mismatch(
                &template_path.child("metadata").child("labels"),
                labels,
            ));
        }
    }
    let terms = object(selector_value, "matchLabels").map_or(0, Map::len)
        + list(selector_value, "matchExpressions").len();
    if selector_value.is_object() && terms == 0 {
        errs.push(FieldError::invalid_go(
            &path.child("selector"),
            &go_label_selector(selector_value),
            "empty selector is invalid for daemonset",
        ));
    }
    validate_pod_template_spec(template, &template_path, &mut errs);
    validate_always_restarting(template, &template_path, "DaemonSet", &mut errs);
    nonnegative(spec, "minReadySeconds", &path, &mut errs);
    daemon_set_update_strategy(spec, &path.child("updateStrategy"), &mut errs);
    nonnegative(spec, "revisionHistoryLimit", &path, &mut errs);
    errs
}

/// `ValidateDaemonSetUpdateStrategy` and `ValidateRollingUpdateDaemonSet`.
fn daemon_set_update_strategy(spec: &Value, path: &FieldPath, errs: &mut ErrorList) {
    let strategy = spec.get("updateStrategy").unwrap_or(&Value::Null);
    match str_of(strategy, "type") {
        "OnDelete" => {}
        "RollingUpdate" => {
            let Some(rolling) = field(strategy, "rollingUpdate") else {
                errs.push(FieldError::required(&path.child("rollingUpdate"), ""));
                return;
            };
            let at = path.child("rollingUpdate");
            let unavailable = rolling.get("maxUnavailable").unwrap_or(&Value::Null);
            let surge = rolling.get("maxSurge").unwrap_or(&Value::Null);
            int_or_percent(unavailable, &at.child("maxUnavailable"), errs);
            int_or_percent(surge, &at.child("maxSurge"), errs);
            not_more_than_100_percent(unavailable, &at.child("maxUnavailable"), errs);
            not_more_than_100_percent(surge, &at.child("maxSurge"), errs);
            match (
                int_or_percent_value(unavailable) != 0,
                int_or_percent_value(surge) != 0,
            ) {
                (true, true) => errs.push(FieldError::invalid_go(
                    &at.child("maxSurge"),
                    &go_int_or_string(surge),
                    "may not be set when maxUnavailable is non-zero",
                )),
                (false, false) => errs.push(FieldError::required(
                    &at.child("maxUnavailable"),
                    "cannot be 0 when maxSurge is 0",
                )),
                _ => {}
            }
        }
        other => errs.push(FieldError {
            bad_value: Some(apimachinery::field::BadValue::Go(format!(
                "apps.DaemonSetUpdateStrategy{{Type:{}, ...}}",
                quote(other)
            ))),
            ..FieldError::not_supported(path, Value::Null, &["RollingUpdate", "OnDelete"])
        }),
    }
}

/// `ValidateDaemonSetUpdate` plus the strategy's `apps/v1` selector rule.
fn daemon_set_update(new: &DynamicObject, old: &DynamicObject) -> ErrorList {
    with_fixed_selector(daemon_set(new), new, old)
}

/// `ValidateStatefulSetSpec`. Upstream does not validate the PodSpec of a
/// StatefulSet's template (a TODO in `ValidatePodTemplateSpecForStatefulSet`),
/// only its labels, so neither does this.
fn stateful_set(obj: &DynamicObject) -> ErrorList {
    let mut errs = ErrorList::new();
    let (spec, path) = (spec_of(obj), FieldPath::new("spec"));
    match str_of(spec, "podManagementPolicy") {
        "" => errs.push(FieldError::required(&path.child("podManagementPolicy"), "")),
        "OrderedReady" | "Parallel" => {}
        other => errs.push(FieldError::invalid(
            &path.child("podManagementPolicy"),
            json!(other),
            "must be 'OrderedReady' or 'Parallel'",
        )),
    }
    stateful_set_update_strategy(spec, &path, &mut errs);
    nonnegative(spec, "replicas", &path, &mut errs);
    nonnegative(spec, "minReadySeconds", &path, &mut errs);
    if let Some(start) = spec.pointer("/ordinals/start").and_then(Value::as_i64)
        && start < 0
    {
        errs.push(FieldError::invalid(
            &path.child("ordinals.start"),
            json!(start),
            IS_NEGATIVE_ERROR_MSG,
        ));
    }
    let template_path = path.child("template");
    let template = spec.get("template").unwrap_or(&Value::Null);
    match controller_selector(spec, &path, "statefulset", &mut errs) {
        None => errs.push(FieldError::invalid_go(
            &path.child("selector"),
            &go_label_selector(spec.get("selector").unwrap_or(&Value::Null)),
            "",
        )),
        Some(selector) => {
            selected_template(spec, &selector, &template_path, &mut errs);
            if let Some(labels) = meta::labels(template) {
                errs.extend(validate_labels(labels, &template_path.child("labels")));
            }
        }
    }
    validate_always_restarting(template, &template_path, "StatefulSet", &mut errs);
    errs
}

fn stateful_set_update_strategy(spec: &Value, path: &FieldPath, errs: &mut ErrorList) {
    let strategy = spec.get("updateStrategy").unwrap_or(&Value::Null);
    let at = path.child("updateStrategy");
    match str_of(strategy, "type") {
        "" => errs.push(FieldError::required(&at, "")),
        "OnDelete" => {
            if field(strategy, "rollingUpdate").is_some() {
                errs.push(FieldError::invalid_go(
                    &at.child("rollingUpdate"),
                    "apps.RollingUpdateStatefulSetStrategy{...}",
                    "only allowed for updateStrategy 'RollingUpdate'",
                ));
            }
        }
        "RollingUpdate" => {
            if let Some(rolling) = field(strategy, "rollingUpdate") {
                nonnegative(rolling, "partition", &at.child("rollingUpdate"), errs);
            }
        }
        _ => errs.push(FieldError::invalid_go(
            &at,
            "apps.StatefulSetUpdateStrategy{...}",
            "must be 'RollingUpdate' or 'OnDelete'",
        )),
    }
}

/// `ValidateStatefulSetUpdate`: the spec again, and only some of it may change.
fn stateful_set_update(new: &DynamicObject, old: &DynamicObject) -> ErrorList {
    let mut errs = stateful_set(new);
    let mut munged = spec_of(new).clone();
    if let Some(map) = munged.as_object_mut() {
        for key in [
            "replicas",
            "template",
            "updateStrategy",
            "minReadySeconds",
            "ordinals",
            "persistentVolumeClaimRetentionPolicy",
        ] {
            match spec_of(old).get(key) {
                Some(v) => map.insert(key.into(), v.clone()),
                None => map.remove(key),
            };
        }
    }
    if !semantic_eq(Some(&munged), Some(spec_of(old))) {
        errs.push(FieldError::forbidden(
            &FieldPath::new("spec"),
            "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        ));
    }
    errs
}

/// `ValidateReplicationController` (also its update: the spec again).
fn replication_controller(obj: &DynamicObject) -> ErrorList {
    let mut errs = ErrorList::new();
    let (spec, path) = (spec_of(obj), FieldPath::new("spec"));
    nonnegative(spec, "minReadySeconds", &path, &mut errs);
    let selector = object(spec, "selector");
    if selector.is_none_or(Map::is_empty) {
        errs.push(FieldError::required(&path.child("selector"), ""));
    }
    nonnegative(spec, "replicas", &path, &mut errs);
    let template_path = path.child("template");
    let Some(template) = field(spec, "template") else {
        errs.push(FieldError::required(&template_path, ""));
        return errs;
    };
    let labels = meta::labels(template);
    let matches = selector
        .into_iter()
        .flatten()
        .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v));
    if !matches {
        errs.push(selector_mismatch(
            &template_path.child("metadata").child("labels"),
            labels,
        ));
    }
    validate_pod_template_spec(template, &template_path, &mut errs);
    validate_always_restarting(template, &template_path, "ReplicationController", &mut errs);
    errs
}

// ---------------------------------------------------------------------------
// Jobs and CronJobs (pkg/apis/batch/validation)

/// `validateJobSpec`: the checks a Job and a CronJob's job template share.
fn validate_job_spec(spec: &Value, path: &FieldPath, errs: &mut ErrorList) {
    for key in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
    ] {
        nonnegative(spec, key, path, errs);
    }
    if field(spec, "maxFailedIndexes").is_some() && field(spec, "backoffLimitPerIndex").is_none() {
        errs.push(FieldError::required(
            &path.child("backoffLimitPerIndex"),
            "when maxFailedIndexes is specified",
        ));
    }
    let mode = field(spec, "completionMode").and_then(Value::as_str);
    if let Some(mode) = mode.filter(|m| !matches!(*m, "NonIndexed" | "Indexed")) {
        errs.push(FieldError::not_supported(
            &path.child("completionMode"),
            json!(mode),
            &["NonIndexed", "Indexed"],
        ));
    }
    if mode == Some("Indexed") {
        if field(spec, "completions").is_none() {
            errs.push(FieldError::required(
                &path.child("completions"),
                "when completion mode is Indexed",
            ));
        }
    } else if mode.is_none_or(|m| m == "NonIndexed") {
        for key in ["backoffLimitPerIndex", "maxFailedIndexes"] {
            if let Some(v) = int_of(spec, key) {
                errs.push(FieldError::invalid(
                    &path.child(key),
                    json!(v),
                    "requires indexed completion mode",
                ));
            }
        }
    }
    let template_path = path.child("template");
    let template = spec.get("template").unwrap_or(&Value::Null);
    validate_pod_template_spec(template, &template_path, errs);
    let policy_path = template_path.child("spec").child("restartPolicy");
    match str_of(spec_of(template), "restartPolicy") {
        // "spec.Template.Spec.RestartPolicy can be defaulted as
        // RestartPolicyAlways by SetDefaults_PodSpec", hence both.
        "" | "Always" => errs.push(FieldError::required(
            &policy_path,
            "valid values: \"OnFailure\", \"Never\"",
        )),
        "OnFailure" if field(spec, "podFailurePolicy").is_some() => errs.push(FieldError::invalid(
            &policy_path,
            json!("OnFailure"),
            "only \"Never\" is supported when podFailurePolicy is specified",
        )),
        "OnFailure" | "Never" => {}
        other => errs.push(FieldError::not_supported(
            &policy_path,
            json!(other),
            &["OnFailure", "Never"],
        )),
    }
}

/// `ValidateJobSpec`: the job spec, its selector, and the template matching it.
fn validate_job_spec_with_selector(spec: &Value, path: &FieldPath, errs: &mut ErrorList) {
    validate_job_spec(spec, path, errs);
    let selector = spec.get("selector").unwrap_or(&Value::Null);
    if selector.is_null() {
        errs.push(FieldError::required(&path.child("selector"), ""));
    } else {
        errs.extend(validate_label_selector(selector, &path.child("selector")));
    }
    if let Ok(parsed) = LabelSelector::from_json(selector) {
        let labels = meta::labels(spec.get("template").unwrap_or(&Value::Null));
        if !parsed.matches(labels) {
            errs.push(selector_mismatch(
                &path.child("template").child("metadata").child("labels"),
                labels,
            ));
        }
    }
}

/// `ValidateJob` (the generated-selector checks are left to the server's own
/// generation of the selector).
fn job(obj: &DynamicObject) -> ErrorList {
    let mut errs = ErrorList::new();
    let spec = spec_of(obj);
    validate_job_spec_with_selector(spec, &FieldPath::new("spec"), &mut errs);
    let indexed = str_of(spec, "completionMode") == "Indexed";
    if let Some(completions) = int_of(spec, "completions").filter(|c| indexed && *c > 0) {
        let name = obj.metadata.name.as_str();
        let hostname = format!("{name}-{}", completions - 1);
        if !is_dns1123_label(&hostname).is_empty() {
            errs.push(FieldError::invalid(
                &FieldPath::new("metadata").child("name"),
                json!(name),
                &format!("will not able to create pod with invalid DNS label: {hostname}"),
            ));
        }
    }
    errs
}

/// `ValidateJobSpecUpdate` (with the strategy's options: elastic Indexed
/// Jobs, and mutable scheduling directives for suspended Jobs never started).
fn job_update(new: &DynamicObject, old: &DynamicObject) -> ErrorList {
    let mut errs = ErrorList::new();
    let path = FieldPath::new("spec");
    let (spec, old_spec) = (spec_of(new), spec_of(old));
    validate_job_spec_with_selector(spec, &path, &mut errs);
    job_completions_update(spec, old_spec, &path, &mut errs);
    immutable_selector(spec, old_spec, &path, &mut errs);
    job_template_update(old, spec, old_spec, &path, &mut errs);
    for key in [
        "completionMode",
        "podFailurePolicy",
        "backoffLimitPerIndex",
        "managedBy",
        "successPolicy",
    ] {
        immutable(spec, old_spec, key, &path, &mut errs);
    }
    errs
}

/// `validateCompletions`: immutable, except in tandem with parallelism for
/// Indexed Jobs.
fn job_completions_update(spec: &Value, old_spec: &Value, path: &FieldPath, errs: &mut ErrorList) {
    if str_of(spec, "completionMode") != "Indexed" {
        immutable(spec, old_spec, "completions", path, errs);
        return;
    }
    if semantic_eq(spec.get("completions"), old_spec.get("completions")) {
        return;
    }
    if let Some(completions) = int_of(spec, "completions")
        && Some(completions) != int_of(spec, "parallelism")
    {
        errs.push(FieldError::invalid(
            &path.child("completions"),
            json!(completions),
            "can only be modified in tandem with spec.parallelism",
        ));
    }
}

/// `validatePodTemplateUpdate` of a Job: the template is immutable. The
/// bad value upstream prints is the `%#v` of the whole internal
/// `core.PodTemplateSpec`; it is elided here.
fn job_template_update(
    old: &Value,
    spec: &Value,
    old_spec: &Value,
    path: &FieldPath,
    errs: &mut ErrorList,
) {
    let template = spec.get("template").cloned().unwrap_or(Value::Null);
    let mut old_template = old_spec.get("template").cloned().unwrap_or(Value::Null);
    let suspended = old_spec.get("suspend").and_then(Value::as_bool) == Some(true);
    let never_started = old.pointer("/status/startTime").is_none_or(Value::is_null);
    if suspended && never_started {
        allow_scheduling_directives(&template, &mut old_template);
    }
    if !semantic_eq(Some(&template), Some(&old_template)) {
        errs.push(FieldError::invalid_go(
            &path.child("template"),
            "core.PodTemplateSpec{...}",
            FIELD_IMMUTABLE_ERROR_MSG,
        ));
    }
}

/// `AllowMutableSchedulingDirectives`: node affinity, node selector,
/// tolerations, labels, annotations and scheduling gates may change.
fn allow_scheduling_directives(template: &Value, old_template: &mut Value) {
    let copy = |from: Option<&Value>, to: &mut Value, key: &str| {
        if let Some(map) = to.as_object_mut() {
            match from.and_then(|f| f.get(key)) {
                Some(v) => map.insert(key.into(), v.clone()),
                None => map.remove(key),
            };
        }
    };
    if let Some(old_meta) = meta::member_mut(old_template) {
        for key in ["labels", "annotations"] {
            copy(meta::member(template), old_meta, key);
        }
    }
    if let Some(spec) = old_template.get_mut("spec") {
        for key in ["nodeSelector", "tolerations", "schedulingGates"] {
            copy(template.get("spec"), spec, key);
        }
        if let Some(affinity) = spec.get_mut("affinity") {
            copy(template.pointer("/spec/affinity"), affinity, "nodeAffinity");
        } else if let Some(node_affinity) = template.pointer("/spec/affinity/nodeAffinity") {
            spec["affinity"] = json!({"nodeAffinity": node_affinity});
        }
    }
}

/// `ValidateCronJobCreate`: the name leaves room for the Job's suffix.
fn cron_job_create(obj: &DynamicObject) -> ErrorList {
    let mut errs = ErrorList::new();
    let name = obj.metadata.name.as_str();
    if name.len() > 52 {
        errs.push(FieldError::invalid(
            &FieldPath::new("metadata").child("name"),
            json!(name),
            "must be no more than 52 characters",
        ));
    }
    errs.extend(cron_job_spec(obj));
    errs
}

/// `ValidateCronJobUpdate`: the spec only (the name rule is skipped on update).
fn cron_job_update(new: &DynamicObject, _old: &DynamicObject) -> ErrorList {
    cron_job_spec(new)
}

/// `validateCronJobSpec`.
fn cron_job_spec(obj: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let (spec, path) = (spec_of(obj), FieldPath::new("spec"));
    let schedule = str_of(spec, "schedule");
    let schedule_path = path.child("schedule");
    if schedule.is_empty() {
        errs.push(FieldError::required(&schedule_path, ""));
    } else {
        if let Err(msg) = parse_cron(schedule) {
            errs.push(FieldError::invalid(&schedule_path, json!(schedule), &msg));
        }
        if schedule.contains("TZ") {
            errs.push(FieldError::invalid(
                &schedule_path,
                json!(schedule),
                "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
            ));
        }
    }
    nonnegative(spec, "startingDeadlineSeconds", &path, &mut errs);
    one_of(
        str_of(spec, "concurrencyPolicy"),
        &["Allow", "Forbid", "Replace"],
        &path.child("concurrencyPolicy"),
        &mut errs,
    );
    nonnegative(spec, "successfulJobsHistoryLimit", &path, &mut errs);
    nonnegative(spec, "failedJobsHistoryLimit", &path, &mut errs);
    job_template_spec(spec, &path.child("jobTemplate"), &mut errs);
    errs
}

/// `ValidateJobTemplateSpec`: the selector is always generated.
fn job_template_spec(cron_spec: &Value, path: &FieldPath, errs: &mut ErrorList) {
    let spec_path = path.child("spec");
    let job_spec = cron_spec
        .pointer("/jobTemplate/spec")
        .unwrap_or(&Value::Null);
    validate_job_spec(job_spec, &spec_path, errs);
    if let Some(selector) = field(job_spec, "selector") {
        errs.push(FieldError::invalid_go(
            &spec_path.child("selector"),
            &go_label_selector(selector),
            "`selector` will be auto-generated",
        ));
    }
    if job_spec.get("manualSelector").and_then(Value::as_bool) == Some(true) {
        errs.push(FieldError::not_supported(
            &spec_path.child("manualSelector"),
            json!(true),
            &["nil", "false"],
        ));
    }
}

/// `cron.ParseStandard` (robfig/cron v3) with its error texts: a
/// descriptor, or five fields of values, ranges, steps and names.
fn parse_cron(schedule: &str) -> Result<(), String> {
    let mut spec = schedule;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        // The location is looked up by robfig; the TZ rule above reports it.
        spec = spec.split_once(' ').map_or("", |(_, rest)| rest.trim());
    }
    if let Some(descriptor) = spec.strip_prefix('@') {
        let known = [
            "yearly", "annually", "monthly", "weekly", "daily", "midnight", "hourly",
        ];
        if known.contains(&descriptor) || descriptor.starts_with("every ") {
            return Ok(());
        }
        return Err(format!("unrecognized descriptor: {spec}"));
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
    let bounds: [(u64, u64, &[&str], u64); 5] = [
        (0, 59, &[], 0),
        (0, 23, &[], 0),
        (1, 31, &[], 0),
        (1, 12, &MONTHS, 1),
        (0, 6, &DAYS, 0),
    ];
    for (text, (min, max, names, first)) in fields.iter().zip(bounds) {
        for expr in text.split(',') {
            cron_range(expr, min, max, names, first)?;
        }
    }
    Ok(())
}

/// robfig's `getRange`.
fn cron_range(expr: &str, min: u64, max: u64, names: &[&str], first: u64) -> Result<(), String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let (start, mut end) = if matches!(low_and_high[0], "*" | "?") {
        (min, max)
    } else {
        let start = cron_int_or_name(low_and_high[0], names, first)?;
        match low_and_high.len() {
            1 => (start, start),
            2 => (start, cron_int_or_name(low_and_high[1], names, first)?),
            _ => return Err(format!("too many hyphens: {expr}")),
        }
    };
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            if low_and_high.len() == 1 {
                end = max;
            }
            cron_int(range_and_step[1])?
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({min}): {expr}"
        ));
    }
    if end > max {
        return Err(format!(
            "end of range ({end}) above maximum ({max}): {expr}"
        ));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(())
}

fn cron_int_or_name(expr: &str, names: &[&str], first: u64) -> Result<u64, String> {
    let lower = expr.to_ascii_lowercase();
    match names.iter().position(|n| *n == lower) {
        Some(i) => Ok(first + i as u64),
        None => cron_int(expr),
    }
}

/// robfig's `mustParseInt`, with Go's `strconv.Atoi` error texts.
fn cron_int(expr: &str) -> Result<u64, String> {
    let digits = expr.strip_prefix(['+', '-']).unwrap_or(expr);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "failed to parse int from {expr}: strconv.Atoi: parsing {}: invalid syntax",
            quote(expr)
        ));
    }
    match expr.parse::<i64>() {
        Err(_) => Err(format!(
            "failed to parse int from {expr}: strconv.Atoi: parsing {}: value out of range",
            quote(expr)
        )),
        Ok(n) if n < 0 => Err(format!("negative number ({n}) not allowed: {expr}")),
        Ok(n) => Ok(n.unsigned_abs()),
    }
}

// ---------------------------------------------------------------------------
// Storage

const PVC_ACCESS_MODES: [&str; 4] = [
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];

/// `ValidatePersistentVolumeClaimSpec`: access modes and the storage request
/// (the quantity's sign and the selector are not checked here).
fn pvc_create(obj: &DynamicObject) -> ErrorList {
    let mut errs = ErrorList::new();
    let spec = spec_of(obj);
    let path = FieldPath::new("spec");
    let modes = list(spec, "accessModes");
    let modes_path = path.child("accessModes");
    if modes.is_empty() {
        errs.push(FieldError::required(
            &modes_path,
            "at least 1 access mode is required",
        ));
    }
    let (mut read_write_once_pod, mut others) = (false, false);
    for mode in modes {
        let mode = mode.as_str().unwrap_or("");
        match mode {
            "ReadWriteOncePod" => read_write_once_pod = true,
            _ if PVC_ACCESS_MODES.contains(&mode) => others = true,
            _ => errs.push(FieldError::not_supported(
                &modes_path,
                json!(mode),
                &PVC_ACCESS_MODES,
            )),
        }
    }
    if read_write_once_pod && others {
        errs.push(FieldError::forbidden(
            &modes_path,
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
    if spec.pointer("/resources/requests/storage").is_none() {
        // Upstream keys `resources`, not `resources.requests`.
        errs.push(FieldError::required(
            &path.child("resources").key("storage"),
            "",
        ));
    }
    errs
}

/// `ValidatePersistentVolumeClaimUpdate`: the spec is immutable but for a
/// bound claim's storage request and volume attributes class; `volumeName`
/// and `storageClassName` may be set once. (The storage-shrink rule, which
/// needs quantity arithmetic, is left out.)
fn pvc_update(new: &DynamicObject, old: &DynamicObject) -> ErrorList {
    let mut errs = ErrorList::new();
    let (spec, old_spec) = (spec_of(new), spec_of(old));
    let bound = new.pointer("/status/phase").and_then(Value::as_str) == Some("Bound");
    let mut munged = spec.clone();
    let mut old_munged = old_spec.clone();
    if str_of(old_spec, "volumeName").is_empty()
        && let Some(map) = old_munged.as_object_mut()
    {
        map.insert("volumeName".into(), json!(str_of(spec, "volumeName")));
    }
    if field(old_spec, "storageClassName").is_none()
        && let Some(map) = old_munged.as_object_mut()
    {
        let class = spec.get("storageClassName").cloned().unwrap_or(Value::Null);
        map.insert("storageClassName".into(), class);
    }
    if bound {
        if let Some(requests) = munged
            .pointer_mut("/resources/requests")
            .and_then(Value::as_object_mut)
        {
            let storage = old_spec.pointer("/resources/requests/storage").cloned();
            requests.insert("storage".into(), storage.unwrap_or(Value::Null));
        }
        if field(spec, "volumeAttributesClassName").is_some()
            && let Some(map) = munged.as_object_mut()
        {
            let class = old_spec.get("volumeAttributesClassName").cloned();
            map.insert(
                "volumeAttributesClassName".into(),
                class.unwrap_or(Value::Null),
            );
        }
    }
    if !semantic_eq(Some(&munged), Some(&old_munged)) {
        // Upstream appends "\n" and a go-cmp diff of the internal specs.
        errs.push(FieldError::forbidden(
            &FieldPath::new("spec"),
            "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
        ));
    }
    // Upstream's path has no `spec.` prefix.
    immutable(spec, old_spec, "volumeMode", &FieldPath::root(), &mut errs);
    errs
}

/// `ValidateStorageClass` (provisioner and reclaim policy).
fn storage_class(obj: &DynamicObject) -> ErrorList {
    let mut errs = ErrorList::new();
    if str_of(obj, "provisioner").is_empty() {
        errs.push(FieldError::required(&FieldPath::new("provisioner"), ""));
    }
    let policy = str_of(obj, "reclaimPolicy");
    if !matches!(policy, "Delete" | "Retain") {
        errs.push(FieldError::not_supported(
            &FieldPath::new("reclaimPolicy"),
            json!(policy),
            &["Delete", "Retain"],
        ));
    }
    errs
}

/// `ValidateStorageClassUpdate`.
fn storage_class_update(new: &DynamicObject, old: &DynamicObject) -> ErrorList {
    let mut errs = storage_class(new);
    let parameters = |v: &Value| v.get("parameters").filter(|p| !p.is_null()).cloned();
    for (key, changed) in [
        ("parameters", parameters(new) != parameters(old)),
        (
            "provisioner",
            str_of(new, "provisioner") != str_of(old, "provisioner"),
        ),
        (
            "reclaimPolicy",
            str_of(new, "reclaimPolicy") != str_of(old, "reclaimPolicy"),
        ),
    ] {
        if changed {
            errs.push(FieldError::forbidden(
                &FieldPath::new(key),
                &format!("updates to {key} are forbidden."),
            ));
        }
    }
    immutable(new, old, "volumeBindingMode", &FieldPath::root(), &mut errs);
    errs
}

// ---------------------------------------------------------------------------
// Policy, autoscaling, networking, scheduling

/// `ValidatePodDisruptionBudgetSpec` (its bad value for both-set is the
/// whole spec struct, elided here).
fn pod_disruption_budget(obj: &DynamicObject) -> ErrorList {
    let mut errs = ErrorList::new();
    let (spec, path) = (spec_of(obj), FieldPath::new("spec"));
    let min = field(spec, "minAvailable");
    let max = field(spec, "maxUnavailable");
    if min.is_some() && max.is_some() {
        errs.push(FieldError::invalid_go(
            &path,
            "policy.PodDisruptionBudgetSpec{...}",
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    for (key, value) in [("minAvailable", min), ("maxUnavailable", max)] {
        if let Some(value) = value {
            int_or_percent(value, &path.child(key), &mut errs);
            not_more_than_100_percent(value, &path.child(key), &mut errs);
        }
    }
    if let Some(selector) = field(spec, "selector") {
        errs.extend(validate_label_selector(selector, &path.child("selector")));
    }
    errs
}

/// `validateHorizontalPodAutoscalerSpec` (replica bounds and target).
fn horizontal_pod_autoscaler(obj: &DynamicObject) -> ErrorList {
    let mut errs = ErrorList::new();
    let (spec, path) = (spec_of(obj), FieldPath::new("spec"));
    let min = int_of(spec, "minReplicas");
    let max = int_of(spec, "maxReplicas").unwrap_or(0);
    if let Some(min) = min.filter(|m| *m < 1) {
        errs.push(FieldError::invalid(
            &path.child("minReplicas"),
            json!(min),
            "must be greater than or equal to 1",
        ));
    }
    if max < 1 {
        errs.push(FieldError::invalid(
            &path.child("maxReplicas"),
            json!(max),
            "must be greater than 0",
        ));
    }
    if min.is_some_and(|min| max < min) {
        errs.push(FieldError::invalid(
            &path.child("maxReplicas"),
            json!(max),
            "must be greater than or equal to `minReplicas`",
        ));
    }
    let target = spec.get("scaleTargetRef").unwrap_or(&Value::Null);
    for key in ["kind", "name"] {
        if str_of(target, key).is_empty() {
            errs.push(FieldError::required(
                &path.child("scaleTargetRef").child(key),
                "",
            ));
        }
    }
    errs
}

/// `ValidateIngressSpec` (rules or default backend; HTTP paths).
fn ingress(obj: &DynamicObject) -> ErrorList {
    let mut errs = ErrorList::new();
    let (spec, path) = (spec_of(obj), FieldPath::new("spec"));
    let rules = list(spec, "rules");
    if rules.is_empty() && field(spec, "defaultBackend").is_none() {
        let go = match spec.get("rules") {
            Some(Value::Array(_)) => "[]networking.IngressRule{}",
            _ => "[]networking.IngressRule(nil)",
        };
        errs.push(FieldError::invalid_go(
            &path,
            go,
            "either `defaultBackend` or `rules` must be specified",
        ));
    }
    for (i, rule) in rules.iter().enumerate() {
        let Some(http) = field(rule, "http") else {
            continue;
        };
        let http_path = path.child("rules").index(i).child("http");
        let paths = list(http, "paths");
        if paths.is_empty() {
            errs.push(FieldError::required(&http_path.child("paths"), ""));
        }
        for (j, p) in paths.iter().enumerate() {
            ingress_path(p, &http_path.child("paths").index(j), &mut errs);
        }
    }
    errs
}

/// `validateHTTPIngressPath` (path type and absolute path).
fn ingress_path(p: &Value, path: &FieldPath, errs: &mut ErrorList) {
    let Some(path_type) = field(p, "pathType") else {
        errs.push(FieldError::required(
            &path.child("pathType"),
            "pathType must be specified",
        ));
        return;
    };
    let value = str_of(p, "path");
    let needs_absolute = match path_type.as_str().unwrap_or("") {
        "Exact" | "Prefix" => true,
        "ImplementationSpecific" => !value.is_empty(),
        other => {
            errs.push(FieldError::not_supported(
                &path.child("pathType"),
                json!(other),
                &["Exact", "ImplementationSpecific", "Prefix"],
            ));
            return;
        }
    };
    if needs_absolute && !value.starts_with('/') {
        errs.push(FieldError::invalid(
            &path.child("path"),
            json!(value),
            "must be an absolute path",
        ));
    }
}

/// The PriorityClasses kube-apiserver creates, with their values.
const SYSTEM_PRIORITY_CLASSES: [(&str, i64); 2] = [
    ("system-node-critical", 2_000_001_000),
    ("system-cluster-critical", 2_000_000_000),
];

/// `ValidatePriorityClass`.
fn priority_class(obj: &DynamicObject) -> ErrorList {
    let mut errs = ErrorList::new();
    let name = obj.metadata.name.as_str();
    let value = int_of(obj, "value").unwrap_or(0);
    if name.starts_with("system-") {
        if let Some(reason) = system_priority_class_error(name, value, obj) {
            errs.push(FieldError::forbidden(
                &FieldPath::new("metadata").child("name"),
                &format!(
                    "priority class names with 'system-' prefix are reserved for system use only. error: {reason}"
                ),
            ));
        }
    } else if value > 1_000_000_000 {
        errs.push(FieldError::forbidden(
            &FieldPath::new("value"),
            "maximum allowed value of a user defined priority is 1000000000",
        ));
    }
    errs
}

/// `IsKnownSystemPriorityClass`'s error, if any.
fn system_priority_class_error(name: &str, value: i64, obj: &Value) -> Option<String> {
    let Some((_, expected)) = SYSTEM_PRIORITY_CLASSES.iter().find(|(n, _)| *n == name) else {
        return Some(format!("{name} is not a known system priority class"));
    };
    if value != *expected {
        return Some(format!("value of {name} PriorityClass must be {expected}"));
    }
    if obj.get("globalDefault").and_then(Value::as_bool) == Some(true) {
        return Some(format!(
            "globalDefault of {name} PriorityClass must be false"
        ));
    }
    None
}

/// `ValidateRuntimeClass`: the handler is a DNS label.
fn runtime_class(obj: &DynamicObject) -> ErrorList {
    let handler = str_of(obj, "handler");
    is_dns1123_label(handler)
        .into_iter()
        .map(|msg| FieldError::invalid(&FieldPath::new("handler"), json!(handler), &msg))
        .collect()
}

/// The strategy's `ValidateUpdate`: `ValidateRuntimeClass` and
/// `ValidateRuntimeClassUpdate` (the handler is immutable).
fn runtime_class_update(new: &DynamicObject, old: &DynamicObject) -> ErrorList {
    let mut errs = runtime_class(new);
    immutable(new, old, "handler", &FieldPath::root(), &mut errs);
    errs
}

/// `ValidatePriorityClassUpdate`.
fn priority_class_update(new: &DynamicObject, old: &DynamicObject) -> ErrorList {
    let mut errs = ErrorList::new();
    if int_of(new, "value") != int_of(old, "value") {
        errs.push(FieldError::forbidden(
            &FieldPath::new("value"),
            "may not be changed in an update.",
        ));
    }
    immutable(new, old, "preemptionPolicy", &FieldPath::root(), &mut errs);
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::typed_objects::{typed, with_typed};

    fn defaulted(group: &str, kind: &str, mut obj: Value) -> Value {
        if let Some(default) = super::super::defaults::defaulter(group, kind) {
            with_typed(&mut obj, default);
        }
        if let Some(rule) = super::super::strategy_rules::on_create(group, kind) {
            with_typed(&mut obj, rule);
            if let Some(default) = super::super::defaults::defaulter(group, kind) {
                with_typed(&mut obj, default);
            }
        }
        obj
    }

    fn remove(obj: &mut Value, key: &str) {
        if let Some(map) = obj.as_object_mut() {
            map.remove(key);
        }
    }

    fn create(group: &str, kind: &str, obj: Value) -> Vec<String> {
        let obj = defaulted(group, kind, obj);
        let validate = on_create(group, kind).expect("validator");
        validate(&typed(&obj))
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn update(group: &str, kind: &str, new: &Value, old: &Value) -> Vec<String> {
        let validate = on_update(group, kind).expect("validator");
        validate(&typed(new), &typed(old))
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn container() -> Value {
        json!({"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]})
    }

    fn template(labels: Value) -> Value {
        json!({"metadata": {"labels": labels}, "spec": {"containers": [container()]}})
    }

    fn deployment_manifest() -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                     "template": template(json!({"app": "web"}))}
        })
    }

    fn job_manifest() -> Value {
        json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "pi", "namespace": "default", "uid": "8d1f0a52-0000-4000-8000-000000000001"},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                     "containers": [{"name": "pi", "image": "perl", "command": ["perl", "-e", "1"]}]}}}
        })
    }

    fn pod_manifest() -> Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"containers": [container()]}
        })
    }

    fn cron_job_manifest() -> Value {
        json!({
            "apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "hello", "namespace": "default"},
            "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "OnFailure",
                "containers": [{"name": "hello", "image": "busybox"}]}}}}}
        })
    }

    #[test]
    fn typical_defaulted_objects_are_valid() {
        assert!(create("apps", "Deployment", deployment_manifest()).is_empty());
        assert!(create("batch", "Job", job_manifest()).is_empty());
        assert!(create("", "Pod", pod_manifest()).is_empty());
        assert!(create("batch", "CronJob", cron_job_manifest()).is_empty());
        let mut rs = deployment_manifest();
        rs["kind"] = json!("ReplicaSet");
        assert!(create("apps", "ReplicaSet", rs.clone()).is_empty());
        rs["kind"] = json!("DaemonSet");
        remove(&mut rs["spec"], "replicas");
        assert!(create("apps", "DaemonSet", rs.clone()).is_empty());
        rs["kind"] = json!("StatefulSet");
        assert!(create("apps", "StatefulSet", rs).is_empty());
        let rc = json!({"metadata": {"name": "rc"},
            "spec": {"replicas": 1, "template": template(json!({"app": "rc"}))}});
        assert!(create("", "ReplicationController", rc).is_empty());
    }

    #[test]
    fn wrong_shapes_do_not_panic() {
        for (group, kind) in [
            ("", "Pod"),
            ("apps", "Deployment"),
            ("apps", "StatefulSet"),
            ("apps", "DaemonSet"),
            ("batch", "Job"),
            ("batch", "CronJob"),
            ("", "ReplicationController"),
            ("policy", "PodDisruptionBudget"),
            ("networking.k8s.io", "Ingress"),
        ] {
            for body in [
                json!(null),
                json!([]),
                json!({"spec": 3}),
                json!({"spec": {"containers": "x", "template": [1], "selector": "a"}}),
                json!({"spec": {"template": {"spec": {"containers": [1, {"ports": [null, {"containerPort": "x"}]}]}}}}),
            ] {
                let Ok(body) = DynamicObject::from_value(body, "metadata.") else {
                    continue;
                };
                let _ = on_create(group, kind).map(|f| f(&body));
                let _ = on_update(group, kind).map(|f| f(&body, &typed(&json!({"spec": []}))));
            }
        }
    }

    /// Messages of `validateContainers`, `validateContainerCommon` and
    /// `validateContainerPorts` (core validation.go; TestValidateContainers).
    #[test]
    fn pod_spec_messages() {
        let mut pod = pod_manifest();
        pod["spec"]["containers"] = json!([
            {"name": "My_App", "image": "x", "ports": [{"containerPort": 70000, "protocol": "HTTP", "name": "a--b"}]},
            {"name": "dup", "image": "", "restartPolicy": "Always"},
            {"name": "dup", "image": "x", "ports": [{"containerPort": 0}]},
        ]);
        pod["spec"]["restartPolicy"] = json!("Sometimes");
        let errs = create("", "Pod", pod);
        let expected = [
            "spec.containers[0].name: Invalid value: \"My_App\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            "spec.containers[0].ports[0].name: Invalid value: \"a--b\": must not contain consecutive hyphens",
            "spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
            "spec.containers[0].ports[0].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
            "spec.containers[1].image: Required value",
            "spec.containers[1].restartPolicy: Forbidden: may not be set for non-init containers",
            "spec.containers[2].ports[0].containerPort: Required value",
            "spec.containers[2].name: Duplicate value: \"dup\"",
            "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
        ];
        for e in expected {
            assert!(errs.iter().any(|x| x == e), "missing {e}\nin {errs:#?}");
        }
        assert_eq!(errs.len(), expected.len(), "{errs:#?}");

        let mut pod = pod_manifest();
        pod["spec"]["containers"] = json!([]);
        assert_eq!(create("", "Pod", pod), ["spec.containers: Required value"]);
    }

    /// `ValidatePodTemplateSpec` and `ValidatePodTemplateSpecForReplicaSet`
    /// (apps validation.go; TestValidateDeployment).
    #[test]
    fn deployment_messages() {
        let mut d = deployment_manifest();
        d["spec"]["template"]["metadata"]["labels"] = json!({"app": "other"});
        d["spec"]["template"]["spec"]["restartPolicy"] = json!("OnFailure");
        d["spec"]["template"]["spec"]["activeDeadlineSeconds"] = json!(30);
        d["spec"]["template"]["spec"]["ephemeralContainers"] =
            json!([{"name": "debug", "image": "busybox"}]);
        d["spec"]["replicas"] = json!(-1);
        d["spec"]["strategy"] =
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}});
        d["spec"]["progressDeadlineSeconds"] = json!(5);
        d["spec"]["minReadySeconds"] = json!(10);
        assert_eq!(
            create("apps", "Deployment", d),
            [
                "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
                "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"other\"}: `selector` does not match template `labels`",
                "spec.template.spec.ephemeralContainers: Forbidden: ephemeral containers not allowed in pod template",
                "spec.template.spec.restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\"",
                "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported",
                "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}: may not be 0 when `maxSurge` is 0",
                "spec.progressDeadlineSeconds: Invalid value: 5: must be greater than minReadySeconds",
            ]
        );

        let mut d = deployment_manifest();
        d["spec"]["selector"] = json!({});
        d["spec"]["strategy"] = json!({"type": "Recreate", "rollingUpdate": {"maxSurge": "150%"}});
        let errs = create("apps", "Deployment", d);
        assert_eq!(
            errs,
            [
                "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for deployment",
                "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'",
            ]
        );

        let mut d = deployment_manifest();
        remove(&mut d["spec"], "selector");
        d["spec"]["strategy"] = json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": "150%"}});
        let errs = create("apps", "Deployment", d);
        assert_eq!(
            errs,
            [
                "spec.selector: Required value",
                "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"web\"}: `selector` does not match template `labels`",
                "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"150%\"}: must not be greater than 100%",
            ]
        );
    }

    /// The apps/v1 strategies' `ValidateImmutableField` of the selector.
    #[test]
    fn apps_selector_is_immutable() {
        let old = defaulted("apps", "Deployment", deployment_manifest());
        let mut new = old.clone();
        new["spec"]["selector"] = json!({"matchLabels": {"app": "web", "tier": "a"}});
        new["spec"]["template"]["metadata"]["labels"]["tier"] = json!("a");
        assert_eq!(
            update("apps", "Deployment", &new, &old),
            [
                "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"web\", \"tier\":\"a\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"
            ]
        );
        let mut scaled = old.clone();
        scaled["spec"]["replicas"] = json!(5);
        assert!(update("apps", "Deployment", &scaled, &old).is_empty());
    }

    /// `ValidateStatefulSetSpec` / `ValidateStatefulSetUpdate` (apps validation.go).
    #[test]
    fn stateful_set_messages() {
        let mut sts = deployment_manifest();
        sts["kind"] = json!("StatefulSet");
        sts["spec"]["podManagementPolicy"] = json!("Random");
        sts["spec"]["selector"] = json!({});
        sts["spec"]["template"]["spec"]["activeDeadlineSeconds"] = json!(3);
        assert_eq!(
            create("apps", "StatefulSet", sts.clone()),
            [
                "spec.podManagementPolicy: Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'",
                "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for statefulset",
                "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in StatefulSet is not Supported",
            ]
        );
        let mut sts = deployment_manifest();
        sts["kind"] = json!("StatefulSet");
        let old = defaulted("apps", "StatefulSet", sts);
        let mut new = old.clone();
        new["spec"]["serviceName"] = json!("other");
        new["spec"]["replicas"] = json!(4);
        assert_eq!(
            update("apps", "StatefulSet", &new, &old),
            [
                "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
            ]
        );
    }

    /// `ValidateDaemonSetSpec` (apps validation.go).
    #[test]
    fn daemon_set_messages() {
        let mut ds = deployment_manifest();
        ds["kind"] = json!("DaemonSet");
        remove(&mut ds["spec"], "replicas");
        ds["spec"]["template"]["spec"]["restartPolicy"] = json!("Never");
        assert_eq!(
            create("apps", "DaemonSet", ds),
            [
                "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\""
            ]
        );
    }

    /// `validateJobSpec` (batch validation.go; TestValidateJob).
    #[test]
    fn job_messages() {
        let mut j = job_manifest();
        j["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
        j["spec"]["parallelism"] = json!(-1);
        assert_eq!(
            create("batch", "Job", j),
            [
                "spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
                "spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"",
            ]
        );
        let mut j = job_manifest();
        j["spec"]["template"]["spec"]["restartPolicy"] = json!("OnFailure");
        j["spec"]["podFailurePolicy"] = json!({"rules": []});
        assert_eq!(
            create("batch", "Job", j),
            [
                "spec.template.spec.restartPolicy: Invalid value: \"OnFailure\": only \"Never\" is supported when podFailurePolicy is specified"
            ]
        );
        let mut j = job_manifest();
        j["spec"]["manualSelector"] = json!(true);
        j["spec"]["selector"] = json!({"matchLabels": {"x": "y"}});
        assert_eq!(
            create("batch", "Job", j),
            [
                "spec.template.metadata.labels: Invalid value: map[string]string(nil): `selector` does not match template `labels`"
            ]
        );
    }

    /// `ValidateJobSpecUpdate`: immutable fields.
    #[test]
    fn job_update_messages() {
        let old = defaulted("batch", "Job", job_manifest());
        let mut new = old.clone();
        new["spec"]["template"]["spec"]["containers"][0]["image"] = json!("perl:5");
        new["spec"]["completionMode"] = json!("Indexed");
        assert_eq!(
            update("batch", "Job", &new, &old),
            [
                "spec.template: Invalid value: core.PodTemplateSpec{...}: field is immutable",
                "spec.completionMode: Invalid value: \"Indexed\": field is immutable",
            ]
        );
        let mut suspended = old.clone();
        suspended["spec"]["suspend"] = json!(true);
        let mut new = suspended.clone();
        new["spec"]["template"]["spec"]["nodeSelector"] = json!({"disk": "ssd"});
        assert!(update("batch", "Job", &new, &suspended).is_empty());
    }

    /// `ValidateCronJobCreate` / `ValidateJobTemplateSpec` (batch validation.go).
    #[test]
    fn cron_job_messages() {
        let mut cj = cron_job_manifest();
        cj["metadata"]["name"] = json!("a".repeat(53));
        cj["spec"]["schedule"] = json!("* * * *");
        cj["spec"]["jobTemplate"]["spec"]["manualSelector"] = json!(true);
        assert_eq!(
            create("batch", "CronJob", cj),
            [
                format!("metadata.name: Invalid value: \"{}\": must be no more than 52 characters", "a".repeat(53)),
                "spec.schedule: Invalid value: \"* * * *\": expected exactly 5 fields, found 4: [* * * *]".into(),
                "spec.jobTemplate.spec.manualSelector: Unsupported value: true: supported values: \"nil\", \"false\"".into(),
            ]
        );
        let mut cj = cron_job_manifest();
        cj["spec"]["schedule"] = json!("60 * * * *");
        cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
        assert_eq!(
            create("batch", "CronJob", cj),
            [
                "spec.schedule: Invalid value: \"60 * * * *\": end of range (60) above maximum (59): 60",
                "spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"",
            ]
        );
        assert_eq!(parse_cron("@daily"), Ok(()));
        assert_eq!(parse_cron("0 9 * jan-mar mon"), Ok(()));
        assert!(parse_cron("x * * * *").is_err_and(
            |e| e == "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax"
        ));
    }

    /// `ValidatePodUpdate` (core validation.go; TestValidatePodUpdate).
    #[test]
    fn pod_update_messages() {
        let old = defaulted("", "Pod", pod_manifest());
        let mut new = old.clone();
        new["spec"]["containers"][0]["image"] = json!("nginx:1.28");
        new["spec"]["activeDeadlineSeconds"] = json!(100);
        assert!(update("", "Pod", &new, &old).is_empty());

        let mut new = old.clone();
        new["spec"]["containers"][0]["ports"][0]["containerPort"] = json!(81);
        assert_eq!(
            update("", "Pod", &new, &old),
            [format!(
                "spec: Forbidden: pod updates may not change fields other than {UPDATABLE_POD_SPEC_FIELDS}"
            )]
        );
        assert!(UPDATABLE_POD_SPEC_FIELDS.starts_with("`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"));

        let mut new = old.clone();
        new["spec"]["containers"] = json!([container(), {"name": "side", "image": "x"}]);
        let errs = update("", "Pod", &new, &old);
        assert_eq!(
            errs.last().map(String::as_str),
            Some("spec.containers: Forbidden: pod updates may not add or remove containers")
        );

        let mut with_deadline = old.clone();
        with_deadline["spec"]["activeDeadlineSeconds"] = json!(10);
        let mut new = with_deadline.clone();
        new["spec"]["activeDeadlineSeconds"] = json!(20);
        assert_eq!(
            update("", "Pod", &new, &with_deadline),
            [
                "spec.activeDeadlineSeconds: Invalid value: 20: must be less than or equal to previous value"
            ]
        );

        let mut new = old.clone();
        new["spec"]["tolerations"] = json!([]);
        remove(&mut new["spec"], "priority");
        assert!(
            update("", "Pod", &new, &old).is_empty(),
            "admission re-adds these"
        );
    }

    /// `ValidatePersistentVolumeClaimUpdate` and `ValidateStorageClassUpdate`.
    #[test]
    fn storage_update_messages() {
        let old = json!({"spec": {"accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem",
            "resources": {"requests": {"storage": "1Gi"}}}, "status": {"phase": "Bound"}});
        let mut new = old.clone();
        new["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
        assert!(update("", "PersistentVolumeClaim", &new, &old).is_empty());
        new["spec"]["accessModes"] = json!(["ReadWriteMany"]);
        new["spec"]["volumeMode"] = json!("Block");
        assert_eq!(
            update("", "PersistentVolumeClaim", &new, &old),
            [
                "spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
                "volumeMode: Invalid value: \"Block\": field is immutable",
            ]
        );

        let old = json!({"provisioner": "a", "reclaimPolicy": "Delete", "parameters": {"x": "1"}});
        let new = json!({"provisioner": "b", "reclaimPolicy": "Retain", "parameters": {"x": "2"}});
        assert_eq!(
            update("storage.k8s.io", "StorageClass", &new, &old),
            [
                "parameters: Forbidden: updates to parameters are forbidden.",
                "provisioner: Forbidden: updates to provisioner are forbidden.",
                "reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden.",
            ]
        );
    }

    /// PDB, HPA, Ingress and PriorityClass messages (policy, autoscaling,
    /// networking and scheduling validation.go).
    #[test]
    fn other_kinds_messages() {
        let pdb = json!({"spec": {"minAvailable": 1, "maxUnavailable": "10%"}});
        assert_eq!(
            create("policy", "PodDisruptionBudget", pdb),
            [
                "spec: Invalid value: policy.PodDisruptionBudgetSpec{...}: minAvailable and maxUnavailable cannot be both set"
            ]
        );
        let hpa = json!({"spec": {"minReplicas": 0, "maxReplicas": 0,
            "scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"}}});
        assert_eq!(
            create("autoscaling", "HorizontalPodAutoscaler", hpa),
            [
                "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1",
                "spec.maxReplicas: Invalid value: 0: must be greater than 0",
            ]
        );
        let hpa = json!({"spec": {"minReplicas": 3, "maxReplicas": 2,
            "scaleTargetRef": {"kind": "Deployment", "name": "web"}}});
        assert_eq!(
            create("autoscaling", "HorizontalPodAutoscaler", hpa),
            ["spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`"]
        );
        let ing = json!({"spec": {"rules": [{"http": {"paths": [
            {"path": "/", "backend": {"service": {"name": "web", "port": {"number": 80}}}},
            {"path": "api", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}});
        assert_eq!(
            create("networking.k8s.io", "Ingress", ing),
            [
                "spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified",
                "spec.rules[0].http.paths[1].path: Invalid value: \"api\": must be an absolute path",
            ]
        );
        assert_eq!(
            create("networking.k8s.io", "Ingress", json!({"spec": {}})),
            [
                "spec: Invalid value: []networking.IngressRule(nil): either `defaultBackend` or `rules` must be specified"
            ]
        );
        let pc = json!({"metadata": {"name": "system-mine"}, "value": 5});
        assert_eq!(
            create("scheduling.k8s.io", "PriorityClass", pc),
            [
                "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class"
            ]
        );
        let builtin = json!({"metadata": {"name": "system-node-critical"}, "value": 2_000_001_000});
        assert!(create("scheduling.k8s.io", "PriorityClass", builtin).is_empty());
        let pc = json!({"metadata": {"name": "high"}, "value": 2_000_000_000});
        assert_eq!(
            create("scheduling.k8s.io", "PriorityClass", pc.clone()),
            ["value: Forbidden: maximum allowed value of a user defined priority is 1000000000"]
        );
        let old = json!({"metadata": {"name": "high"}, "value": 10});
        assert_eq!(
            update("scheduling.k8s.io", "PriorityClass", &pc, &old),
            ["value: Forbidden: may not be changed in an update."]
        );
    }

    /// `ValidateReplicationControllerSpec` (core validation.go).
    #[test]
    fn replication_controller_messages() {
        let rc = json!({"metadata": {"name": "rc"},
            "spec": {"selector": {"app": "a"}, "template": template(json!({"app": "b"}))}});
        assert_eq!(
            create("", "ReplicationController", rc),
            [
                "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"b\"}: `selector` does not match template `labels`"
            ]
        );
    }
}
