//! Field selectors of built-in kinds: the labels a kind's field label conversion
//! function accepts (`pkg/apis/<group>/v1/conversion.go`; kinds without one
//! accept `metadata.name` and `metadata.namespace`), and each label's value as
//! the kind's `GetAttrs` computes it from the stored object. Pure data.

use serde_json::Value;

use crate::resource::{FieldLabelRefusal, FieldLabels};

const POD: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.podIPs",
    "status.nominatedNodeName",
    // "for backwards compatibility with old v1 clients": the node's name.
    "spec.host",
];

const CORE_EVENT: &[&str] = &[
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
    "metadata.namespace",
    "metadata.name",
];

/// events.k8s.io/v1 names, each mapped onto the stored core Event's field.
const EVENTS_V1: &[(&str, &str)] = &[
    ("reason", "reason"),
    ("regarding.kind", "involvedObject.kind"),
    ("regarding.namespace", "involvedObject.namespace"),
    ("regarding.name", "involvedObject.name"),
    ("regarding.uid", "involvedObject.uid"),
    ("regarding.apiVersion", "involvedObject.apiVersion"),
    (
        "regarding.resourceVersion",
        "involvedObject.resourceVersion",
    ),
    ("regarding.fieldPath", "involvedObject.fieldPath"),
    ("reportingController", "reportingComponent"),
    ("type", "type"),
    ("metadata.namespace", "metadata.namespace"),
    ("metadata.name", "metadata.name"),
];

/// The labels `group`/`kind` registers a conversion function for, and how it
/// refuses others; `None` for kinds upstream registers none for.
pub fn registered(group: &str, kind: &str) -> Option<(Vec<&'static str>, FieldLabelRefusal)> {
    use FieldLabelRefusal::{NotSupported, NotSupportedForKind};
    let (labels, refusal): (Vec<&'static str>, _) = match (group, kind) {
        ("", "Pod") => (POD.to_vec(), NotSupported),
        ("", "Node") => (vec!["metadata.name", "spec.unschedulable"], NotSupported),
        ("", "ReplicationController") => (
            vec!["metadata.name", "metadata.namespace", "status.replicas"],
            NotSupported,
        ),
        ("", "Event") => (CORE_EVENT.to_vec(), NotSupported),
        ("", "Namespace") => (vec!["status.phase", "metadata.name"], NotSupported),
        ("", "Secret") => (
            vec!["type", "metadata.namespace", "metadata.name"],
            NotSupported,
        ),
        ("", "Service") => (
            vec![
                "metadata.namespace",
                "metadata.name",
                "spec.clusterIP",
                "spec.type",
            ],
            NotSupported,
        ),
        ("batch", "Job") => (
            vec!["metadata.name", "metadata.namespace", "status.successful"],
            NotSupportedForKind,
        ),
        ("certificates.k8s.io", "CertificateSigningRequest") => {
            (vec!["metadata.name", "spec.signerName"], NotSupported)
        }
        ("events.k8s.io", "Event") => (
            EVENTS_V1.iter().map(|(label, _)| *label).collect(),
            NotSupported,
        ),
        _ => return None,
    };
    Some((labels, refusal))
}

/// What a built-in resource type's field selectors accept.
pub fn field_labels(group: &str, kind: &str) -> (FieldLabels, Vec<String>) {
    match registered(group, kind) {
        Some((labels, refusal)) => (
            FieldLabels::Registered(refusal),
            labels.into_iter().map(String::from).collect(),
        ),
        None => (FieldLabels::Metadata, Vec::new()),
    }
}

/// The value of `label` on a stored object of `group`/`kind` (`GetAttrs`);
/// `None` for labels the kind has no value for (metadata is the store's).
pub fn value(group: &str, kind: &str, obj: &Value, label: &str) -> Option<String> {
    let text = |pointer: &str| obj.pointer(pointer).and_then(Value::as_str).unwrap_or("");
    let flag = |pointer: &str| {
        obj.pointer(pointer)
            .and_then(Value::as_bool)
            .unwrap_or(false)
            .to_string()
    };
    let count = |pointer: &str| {
        obj.pointer(pointer)
            .and_then(Value::as_i64)
            .unwrap_or(0)
            .to_string()
    };
    let value = match (group, kind, label) {
        ("", "Pod", "spec.nodeName" | "spec.host") => text("/spec/nodeName").to_string(),
        ("", "Pod", "spec.hostNetwork") => flag("/spec/hostNetwork"),
        // Read from `podIPs`, as upstream's `ToSelectableFields` does.
        ("", "Pod", "status.podIP") => text("/status/podIPs/0/ip").to_string(),
        // Accepted, but not in upstream's field set: always "".
        ("", "Pod", "status.podIPs") => String::new(),
        ("", "Node", "spec.unschedulable") => flag("/spec/unschedulable"),
        ("", "ReplicationController", "status.replicas") => count("/status/replicas"),
        ("batch", "Job", "status.successful") => count("/status/succeeded"),
        ("", "Event", "source") => match text("/source/component") {
            "" => text("/reportingComponent").to_string(),
            component => component.to_string(),
        },
        ("events.k8s.io", "Event", _) => {
            let (_, core) = EVENTS_V1.iter().find(|(l, _)| *l == label)?;
            return value("", "Event", obj, core);
        }
        _ => {
            let accepted = registered(group, kind)?.0;
            if !accepted.contains(&label) || label.starts_with("metadata.") {
                return None;
            }
            text(&format!("/{}", label.replace('.', "/"))).to_string()
        }
    };
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Values as upstream's `GetAttrs` computes them: booleans and counts as
    /// text with their zero values, a pod's IP from `podIPs`, an event's
    /// source falling back to its reporting component, events.k8s.io names
    /// mapped onto the stored core Event.
    #[test]
    fn values_as_get_attrs_computes_them() {
        let pod = json!({"spec": {"nodeName": "n1"}, "status": {"phase": "Running",
            "podIP": "10.0.0.9", "podIPs": [{"ip": "10.0.0.1"}]}});
        let cases = [
            ("", "Pod", &pod, "spec.host", Some("n1")),
            ("", "Pod", &pod, "spec.hostNetwork", Some("false")),
            ("", "Pod", &pod, "status.podIP", Some("10.0.0.1")),
            ("", "Pod", &pod, "status.podIPs", Some("")),
            ("", "Pod", &pod, "status.phase", Some("Running")),
            ("", "Pod", &pod, "spec.bogus", None),
        ];
        for (group, kind, obj, label, want) in cases {
            assert_eq!(value(group, kind, obj, label).as_deref(), want, "{label}");
        }
        let node = json!({"spec": {"unschedulable": true}});
        assert_eq!(
            value("", "Node", &node, "spec.unschedulable").unwrap(),
            "true"
        );
        assert_eq!(
            value("", "Node", &json!({}), "spec.unschedulable").unwrap(),
            "false"
        );
        let job = json!({"status": {"succeeded": 3}});
        assert_eq!(
            value("batch", "Job", &job, "status.successful").unwrap(),
            "3"
        );
        let rc = json!({});
        assert_eq!(
            value("", "ReplicationController", &rc, "status.replicas").unwrap(),
            "0"
        );
        let event = json!({"reportingComponent": "kubelet", "source": {},
            "involvedObject": {"kind": "Pod"}});
        assert_eq!(value("", "Event", &event, "source").unwrap(), "kubelet");
        assert_eq!(
            value("events.k8s.io", "Event", &event, "regarding.kind").unwrap(),
            "Pod"
        );
        assert_eq!(
            value("events.k8s.io", "Event", &event, "reportingController").unwrap(),
            "kubelet"
        );
        assert_eq!(value("events.k8s.io", "Event", &event, "source"), None);
    }
}
