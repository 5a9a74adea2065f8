//! Small built-ins: Namespace, ServiceAccount, Event, Service, Endpoints,
//! EndpointSlice, Lease. Their rules are few; each gets a strategy and table cells.

use apimachinery::DynamicObject;
use apimachinery::{ErrorList, FieldError, FieldPath};
use serde_json::{Value, json};

use crate::resource::{Prepared, Strategy, TableColumn};

fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn required_str(obj: &Value, pointer: &str, path: &FieldPath, errs: &mut ErrorList) {
    if str_at(obj, pointer).is_empty() {
        errs.push(FieldError::required(path, ""));
    }
}

/// Upstream's defaulter of `group`/`kind`, where it has one.
fn apply_defaults(group: &str, kind: &str, obj: &mut DynamicObject) {
    if let Some(defaults) = super::defaults::defaulter(group, kind) {
        defaults(obj);
    }
}

pub struct Namespaces;

/// Every namespace carries its name as the `kubernetes.io/metadata.name`
/// label (upstream's defaulting), so selectors can pick namespaces by name.
fn label_with_name(obj: &mut DynamicObject) {
    let md = &mut obj.metadata;
    if md.name.is_empty() {
        return;
    }
    md.labels
        .insert("kubernetes.io/metadata.name".into(), md.name.clone());
}

/// The finalizer of the namespace lifecycle (upstream's `FinalizerKubernetes`).
const FINALIZER_KUBERNETES: &str = "kubernetes";

/// A `spec.finalizers` entry: a qualified name, and one without a prefix must
/// be a standard finalizer (upstream's core `validateFinalizerName`).
fn validate_spec_finalizer(name: &str, path: &FieldPath) -> ErrorList {
    let mut errs = apimachinery::validation::validate_finalizer_name(name, path);
    if !name.contains('/')
        && !matches!(name, FINALIZER_KUBERNETES | "orphan" | "foregroundDeletion")
    {
        errs.push(FieldError::invalid(
            path,
            json!(name),
            "name is neither a standard finalizer name nor is it fully qualified",
        ));
    }
    errs
}

fn spec_finalizers(obj: &Value) -> impl Iterator<Item = &Value> {
    obj.pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

impl Strategy for Namespaces {
    fn prepare_status_update(&self, new: &mut DynamicObject, old: &DynamicObject) {
        crate::resource::take_status_and_metadata(new, old);
    }

    /// Upstream's defaulting labels a named namespace with its name (the
    /// writer's managedFields credit it).
    fn default(&self, obj: &mut DynamicObject) {
        label_with_name(obj);
    }

    /// Status starts Active; `kubernetes` is added to the finalizers asked for.
    fn prepare_create(&self, obj: &mut DynamicObject) -> Prepared {
        obj["status"] = json!({"phase": "Active"});
        let mut finalizers: Vec<Value> = spec_finalizers(obj).cloned().collect();
        if !finalizers.iter().any(|f| f == FINALIZER_KUBERNETES) {
            finalizers.push(json!(FINALIZER_KUBERNETES));
        }
        if !obj.get("spec").is_some_and(Value::is_object) {
            obj["spec"] = json!({});
        }
        obj["spec"]["finalizers"] = json!(finalizers);
        label_with_name(obj);
        Prepared::BodyChanged
    }

    /// Upstream's `ValidateNamespace`: finalizer names, reported on
    /// `spec.finalizers` without an index.
    fn validate(&self, obj: &DynamicObject) -> ErrorList {
        let path = FieldPath::new("spec").child("finalizers");
        spec_finalizers(obj)
            .flat_map(|f| validate_spec_finalizer(f.as_str().unwrap_or_default(), &path))
            .collect()
    }

    /// Updates keep the stored spec and status: nothing of the type's own to check.
    fn validate_update(&self, _new: &DynamicObject, _old: &DynamicObject) -> ErrorList {
        ErrorList::new()
    }

    /// `namespaces/{name}/finalize` (upstream's finalize strategy): everything
    /// but `status` is taken from the request; `spec.finalizers` are checked
    /// as `ValidateNamespaceFinalizeUpdate` does, with the metadata.
    fn subresource_update(
        &self,
        subresource: &apimachinery::Subresource,
        new: &mut DynamicObject,
        old: &DynamicObject,
    ) -> Option<ErrorList> {
        if *subresource != apimachinery::Subresource::Finalize {
            return None;
        }
        match old.get("status") {
            Some(status) => new["status"] = status.clone(),
            None => {
                if let Some(o) = new.as_object_mut() {
                    o.remove("status");
                }
            }
        }
        label_with_name(new);
        let mut errs = apimachinery::validation::validate_typed_object_meta(
            &new.metadata,
            false,
            apimachinery::validation::name_is_dns_label,
            &FieldPath::new("metadata"),
        );
        let path = FieldPath::new("spec").child("finalizers");
        for (i, f) in spec_finalizers(new).enumerate() {
            errs.extend(validate_spec_finalizer(
                f.as_str().unwrap_or_default(),
                &path.index(i),
            ));
        }
        Some(errs)
    }

    fn prepare_update(&self, new: &mut DynamicObject, old: &DynamicObject) {
        label_with_name(new);
        for field in ["status", "spec"] {
            match old.get(field) {
                Some(v) => new[field] = v.clone(),
                None => {
                    if let Some(o) = new.as_object_mut() {
                        o.remove(field);
                    }
                }
            }
        }
    }

    fn deletion_blocked(&self, obj: &DynamicObject) -> bool {
        obj.pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty())
    }

    fn prepare_delete(&self, obj: &mut DynamicObject) {
        obj["status"] = json!({"phase": "Terminating"});
    }

    fn field(&self, obj: &Value, field: &str) -> Option<String> {
        super::field_labels::value("", "Namespace", obj, field)
    }

    fn row(&self, obj: &Value) -> Vec<Value> {
        vec![json!(str_at(obj, "/status/phase"))]
    }
}

pub struct ServiceAccounts;

/// Printed with Name and Age only (upstream 1.37).
impl Strategy for ServiceAccounts {}

/// Upstream prints events without Age and with Name last (a wide column).
pub const EVENT_COLUMNS: [TableColumn; 10] = [
    TableColumn::new("Last Seen", "string", "The last time the event was seen"),
    TableColumn::new("Type", "string", "The type of the event"),
    TableColumn::new("Reason", "string", "The reason of the event"),
    TableColumn::new("Object", "string", "The object the event is about"),
    TableColumn::new("Subobject", "string", "The subobject").wide(),
    TableColumn::new("Source", "string", "The source of the event").wide(),
    TableColumn::new("Message", "string", "The message"),
    TableColumn::new("First Seen", "string", "The first time the event was seen").wide(),
    TableColumn::new("Count", "string", "The number of times seen").wide(),
    TableColumn::name_cell().wide(),
];

pub struct Events;

impl Strategy for Events {
    fn validate(&self, obj: &DynamicObject) -> ErrorList {
        let mut errs = Vec::new();
        let ns = obj.metadata.namespace.as_str();
        let involved_ns = str_at(obj, "/involvedObject/namespace");
        if !involved_ns.is_empty() && involved_ns != ns {
            errs.push(FieldError::invalid(
                &FieldPath::new("involvedObject").child("namespace"),
                json!(involved_ns),
                "does not match event.namespace",
            ));
        }
        errs
    }

    fn field(&self, obj: &Value, field: &str) -> Option<String> {
        super::field_labels::value("", "Event", obj, field)
    }

    fn row(&self, obj: &Value) -> Vec<Value> {
        let last = [
            str_at(obj, "/lastTimestamp"),
            str_at(obj, "/eventTime"),
            apimachinery::meta::str_field(obj, "creationTimestamp").unwrap_or(""),
        ]
        .into_iter()
        .find(|s| !s.is_empty())
        .unwrap_or("");
        let object = format!(
            "{}/{}",
            str_at(obj, "/involvedObject/kind").to_lowercase(),
            str_at(obj, "/involvedObject/name")
        );
        let source = [
            str_at(obj, "/source/component"),
            str_at(obj, "/reportingComponent"),
        ]
        .into_iter()
        .find(|s| !s.is_empty())
        .unwrap_or("");
        vec![
            json!(crate::resource_age(last)),
            json!(str_at(obj, "/type")),
            json!(str_at(obj, "/reason")),
            json!(object),
            json!(str_at(obj, "/involvedObject/fieldPath")),
            json!(source),
            json!(str_at(obj, "/message")),
            json!(crate::resource_age(str_at(obj, "/firstTimestamp"))),
            json!(obj.get("count").and_then(Value::as_i64).unwrap_or(1)),
        ]
    }
}

pub const SERVICE_COLUMNS: [TableColumn; 5] = [
    TableColumn::new("Type", "string", "The type of service"),
    TableColumn::new("Cluster-IP", "string", "The cluster IP"),
    TableColumn::new("External-IP", "string", "External IPs"),
    TableColumn::new("Port(s)", "string", "The ports"),
    TableColumn::new("Selector", "string", "The selector").wide(),
];

pub struct Endpoints;

impl Strategy for Endpoints {
    fn prepare_create(&self, obj: &mut DynamicObject) -> Prepared {
        apply_defaults("", "Endpoints", obj);
        Prepared::BodyChanged
    }

    fn prepare_update(&self, new: &mut DynamicObject, _old: &DynamicObject) {
        apply_defaults("", "Endpoints", new);
    }

    fn row(&self, obj: &Value) -> Vec<Value> {
        let mut addrs = Vec::new();
        for subset in obj
            .get("subsets")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let ports: Vec<i64> = subset
                .get("ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|p| p.get("port").and_then(Value::as_i64))
                .collect();
            for a in subset
                .get("addresses")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let ip = a.get("ip").and_then(Value::as_str).unwrap_or("");
                if ports.is_empty() {
                    addrs.push(ip.to_string());
                }
                addrs.extend(ports.iter().map(|p| format!("{ip}:{p}")));
            }
        }
        vec![json!(if addrs.is_empty() {
            "<none>".to_string()
        } else {
            addrs.join(",")
        })]
    }
}

pub struct EndpointSlices;

const ADDRESS_TYPES: [&str; 3] = ["FQDN", "IPv4", "IPv6"];

impl Strategy for EndpointSlices {
    fn prepare_create(&self, obj: &mut DynamicObject) -> Prepared {
        apply_defaults("discovery.k8s.io", "EndpointSlice", obj);
        Prepared::BodyChanged
    }

    fn prepare_update(&self, new: &mut DynamicObject, _old: &DynamicObject) {
        apply_defaults("discovery.k8s.io", "EndpointSlice", new);
    }

    fn validate(&self, obj: &DynamicObject) -> ErrorList {
        let mut errs = Vec::new();
        let address_type = str_at(obj, "/addressType");
        if address_type.is_empty() {
            errs.push(FieldError::required(&FieldPath::new("addressType"), ""));
        } else if !ADDRESS_TYPES.contains(&address_type) {
            errs.push(FieldError::not_supported(
                &FieldPath::new("addressType"),
                json!(address_type),
                &ADDRESS_TYPES,
            ));
        }
        for (i, ep) in obj
            .get("endpoints")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let path = FieldPath::new("endpoints").index(i).child("addresses");
            if ep
                .get("addresses")
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty)
            {
                errs.push(FieldError::required(
                    &path,
                    "must contain at least 1 address",
                ));
            }
        }
        errs
    }

    fn validate_update(&self, new: &DynamicObject, old: &DynamicObject) -> ErrorList {
        let mut errs = self.validate(new);
        if new.get("addressType") != old.get("addressType") {
            errs.push(FieldError::invalid(
                &FieldPath::new("addressType"),
                new.get("addressType").cloned().unwrap_or(Value::Null),
                "field is immutable",
            ));
        }
        errs
    }

    fn row(&self, obj: &Value) -> Vec<Value> {
        let ports: Vec<String> = obj
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p.get("port").and_then(Value::as_i64).map(|p| p.to_string()))
            .collect();
        let addrs: Vec<&str> = obj
            .get("endpoints")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .flat_map(|e| {
                e.get("addresses")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
            })
            .filter_map(Value::as_str)
            .collect();
        let or_none = |v: Vec<String>| {
            if v.is_empty() {
                "<unset>".to_string()
            } else {
                v.join(",")
            }
        };
        vec![
            json!(str_at(obj, "/addressType")),
            json!(or_none(ports)),
            json!(or_none(addrs.iter().map(|s| s.to_string()).collect())),
        ]
    }
}

pub struct Leases;

impl Strategy for Leases {
    fn validate(&self, obj: &DynamicObject) -> ErrorList {
        let mut errs = Vec::new();
        let spec = FieldPath::new("spec");
        if let Some(d) = obj
            .pointer("/spec/leaseDurationSeconds")
            .and_then(Value::as_i64)
            && d <= 0
        {
            errs.push(FieldError::invalid(
                &spec.child("leaseDurationSeconds"),
                json!(d),
                "must be greater than 0",
            ));
        }
        if let Some(t) = obj
            .pointer("/spec/leaseTransitions")
            .and_then(Value::as_i64)
            && t < 0
        {
            errs.push(FieldError::invalid(
                &spec.child("leaseTransitions"),
                json!(t),
                "must be greater than or equal to 0",
            ));
        }
        let _ = required_str;
        errs
    }

    fn row(&self, obj: &Value) -> Vec<Value> {
        vec![json!(str_at(obj, "/spec/holderIdentity"))]
    }
}
