//! `apiregistration.k8s.io/v1` APIService: the claim of a group-version by a local
//! API or an extension API server, with kube-aggregator's validation messages.

use apimachinery::DynamicObject;
use apimachinery::{ErrorList, FieldError, FieldPath, validation};
use serde_json::{Value, json};

use crate::resource::{Prepared, Strategy, TableColumn};

/// The label kube-aggregator puts on the APIServices it manages itself.
pub const AUTOMANAGED_LABEL: &str = "kube-aggregator.kubernetes.io/automanaged";

pub const COLUMNS: [TableColumn; 2] = [
    TableColumn::new(
        "Service",
        "string",
        "The reference to the service that hosts this API endpoint.",
    ),
    TableColumn::new("Available", "string", "Whether this service is available."),
];

/// The `Available` condition of an APIService served by this server itself.
pub fn local_available_condition() -> Value {
    json!({
        "type": "Available",
        "status": "True",
        "lastTransitionTime": apimachinery::time::now_rfc3339(),
        "reason": "Local",
        "message": "Local APIServices are always available",
    })
}

/// Upstream's `{groupPriorityMinimum, versionPriority}` of the built-in
/// group-versions a default kube-apiserver 1.37 serves (the APIServices it
/// registers for itself; `/apis` lists groups in this order).
const BUILTIN_PRIORITIES: &[(&str, &str, i64, i64)] = &[
    ("", "v1", 18000, 1),
    ("apps", "v1", 17800, 15),
    ("events.k8s.io", "v1", 17750, 15),
    ("authentication.k8s.io", "v1", 17700, 15),
    ("authorization.k8s.io", "v1", 17600, 15),
    ("autoscaling", "v1", 17500, 15),
    ("autoscaling", "v2", 17500, 30),
    ("batch", "v1", 17400, 15),
    ("certificates.k8s.io", "v1", 17300, 15),
    ("networking.k8s.io", "v1", 17200, 15),
    ("policy", "v1", 17100, 15),
    ("rbac.authorization.k8s.io", "v1", 17000, 15),
    ("storage.k8s.io", "v1", 16800, 15),
    ("apiextensions.k8s.io", "v1", 16700, 15),
    ("admissionregistration.k8s.io", "v1", 16700, 15),
    ("scheduling.k8s.io", "v1", 16600, 15),
    ("coordination.k8s.io", "v1", 16500, 15),
    ("node.k8s.io", "v1", 16300, 15),
    ("discovery.k8s.io", "v1", 16200, 15),
    ("resource.k8s.io", "v1", 16200, 21),
    ("flowcontrol.apiserver.k8s.io", "v1", 16100, 21),
    ("storagemigration.k8s.io", "v1", 15800, 15),
];

/// `(groupPriorityMinimum, versionPriority)` of a group-version served here:
/// upstream's for built-ins, 1000/100 (what CRDs get) otherwise.
pub fn local_priority(group: &str, version: &str) -> (i64, i64) {
    builtin_priority(group, version).unwrap_or((1000, 100))
}

/// Upstream's priorities of a built-in group-version.
pub fn builtin_priority(group: &str, version: &str) -> Option<(i64, i64)> {
    BUILTIN_PRIORITIES
        .iter()
        .find(|(g, v, _, _)| *g == group && *v == version)
        .map(|(_, _, g, v)| (*g, *v))
}

pub struct ApiServices;

fn is_local(obj: &Value) -> bool {
    obj.pointer("/spec/service").is_none_or(Value::is_null)
}

/// `spec.service.port` defaults to 443.
fn default_port(obj: &mut Value) {
    if let Some(service) = obj
        .pointer_mut("/spec/service")
        .and_then(Value::as_object_mut)
        && service.get("port").is_none_or(Value::is_null)
    {
        service.insert("port".into(), json!(443));
    }
}

/// The decoded length of a base64 `[]byte` field.
fn decoded_len(b64: &str) -> usize {
    let padding = b64.bytes().rev().take_while(|b| *b == b'=').count();
    (b64.len() / 4 * 3).saturating_sub(padding)
}

impl Strategy for ApiServices {
    fn prepare_create(&self, obj: &mut DynamicObject) -> Prepared {
        default_port(obj);
        obj["status"] = if is_local(obj) {
            json!({"conditions": [local_available_condition()]})
        } else {
            json!({})
        };
        Prepared::BodyChanged
    }

    fn prepare_update(&self, new: &mut DynamicObject, old: &DynamicObject) {
        default_port(new);
        match old.get("status") {
            Some(s) => new["status"] = s.clone(),
            None => {
                if let Some(o) = new.as_object_mut() {
                    o.remove("status");
                }
            }
        }
    }

    fn validate(&self, obj: &DynamicObject) -> ErrorList {
        let mut errs = ErrorList::new();
        let spec = FieldPath::new("spec");
        let s = |p: &str| obj.pointer(p).and_then(Value::as_str).unwrap_or("");
        let (group, version) = (s("/spec/group"), s("/spec/version"));
        let required_name = format!("{version}.{group}");
        let name = obj.metadata.name.as_str();
        if !name.is_empty() && name != required_name {
            errs.push(FieldError::invalid(
                &FieldPath::new("metadata").child("name"),
                json!(name),
                &format!(
                    "must be `spec.version+\".\"+spec.group`: {}",
                    apimachinery::gofmt::quote(&required_name)
                ),
            ));
        }
        if group.is_empty() && version != "v1" {
            errs.push(FieldError::required(
                &spec.child("group"),
                "only v1 may have an empty group and it better be legacy kube",
            ));
        }
        if !group.is_empty() {
            for msg in validation::is_dns1123_subdomain(group) {
                errs.push(FieldError::invalid(
                    &spec.child("group"),
                    json!(group),
                    &msg,
                ));
            }
        }
        for msg in validation::is_dns1035_label(version) {
            errs.push(FieldError::invalid(
                &spec.child("version"),
                json!(version),
                &msg,
            ));
        }
        let int = |p: &str| obj.pointer(p).and_then(Value::as_i64).unwrap_or(0);
        let group_priority = int("/spec/groupPriorityMinimum");
        if group_priority <= 0 || group_priority > 20000 {
            errs.push(FieldError::invalid(
                &spec.child("groupPriorityMinimum"),
                json!(group_priority),
                "must be positive and less than 20000",
            ));
        }
        let version_priority = int("/spec/versionPriority");
        if version_priority <= 0 || version_priority > 1000 {
            errs.push(FieldError::invalid(
                &spec.child("versionPriority"),
                json!(version_priority),
                "must be positive and less than 1000",
            ));
        }
        let ca_bundle = s("/spec/caBundle");
        let insecure = obj.pointer("/spec/insecureSkipTLSVerify") == Some(&Value::Bool(true));
        if is_local(obj) {
            if !ca_bundle.is_empty() {
                errs.push(FieldError::invalid(
                    &spec.child("caBundle"),
                    json!(format!("{} bytes", decoded_len(ca_bundle))),
                    "local APIServices may not have a caBundle",
                ));
            }
            if insecure {
                errs.push(FieldError::invalid(
                    &spec.child("insecureSkipTLSVerify"),
                    json!(true),
                    "local APIServices may not have insecureSkipTLSVerify",
                ));
            }
            return errs;
        }
        let service = spec.child("service");
        if s("/spec/service/namespace").is_empty() {
            errs.push(FieldError::required(&service.child("namespace"), ""));
        }
        if s("/spec/service/name").is_empty() {
            errs.push(FieldError::required(&service.child("name"), ""));
        }
        let port = obj
            .pointer("/spec/service/port")
            .and_then(Value::as_i64)
            .unwrap_or(443);
        let port_errs = validation::is_valid_port_num(port);
        if !port_errs.is_empty() {
            errs.push(FieldError::invalid(
                &service.child("port"),
                json!(port),
                &format!("port is not valid: {}", port_errs.join(", ")),
            ));
        }
        if insecure && !ca_bundle.is_empty() {
            errs.push(FieldError::invalid(
                &spec.child("insecureSkipTLSVerify"),
                json!(true),
                "may not be true if caBundle is present",
            ));
        }
        errs
    }

    fn validate_update(&self, new: &DynamicObject, _old: &DynamicObject) -> ErrorList {
        let mut errs = self.validate(new);
        let conditions = new
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        for (i, c) in conditions.enumerate() {
            let status = c.get("status").and_then(Value::as_str).unwrap_or("");
            if !matches!(status, "True" | "False" | "Unknown") {
                errs.push(FieldError::not_supported(
                    &FieldPath::new("status")
                        .child("conditions")
                        .index(i)
                        .child("status"),
                    json!(status),
                    &["True", "False", "Unknown"],
                ));
            }
        }
        errs
    }

    fn row(&self, obj: &Value) -> Vec<Value> {
        let service = if is_local(obj) {
            "Local".to_string()
        } else {
            let s = |p: &str| obj.pointer(p).and_then(Value::as_str).unwrap_or("");
            format!(
                "{}/{}",
                s("/spec/service/namespace"),
                s("/spec/service/name")
            )
        };
        let available = obj
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "Available")
            .map_or_else(
                || "Unknown".to_string(),
                |c| {
                    let status = c["status"].as_str().unwrap_or("");
                    match c["reason"].as_str() {
                        Some(reason) if !reason.is_empty() && status != "True" => {
                            format!("{status} ({reason})")
                        }
                        _ => status.to_string(),
                    }
                },
            );
        vec![json!(service), json!(available)]
    }
}
