//! storage.k8s.io/v1 VolumeAttributesClasses and CSINodes, and
//! storagemigration.k8s.io/v1 StorageVersionMigrations (upstream's
//! `pkg/apis/storage/validation`, `pkg/apis/storagemigration/validation`
//! and their registry strategies).
//!
//! The generic strategy validates a `/status` write through the update rule
//! too; a write that changes `status` can only be one (a main-resource
//! update keeps the stored status), so that is how the status rules are told
//! apart here.

use apimachinery::DynamicObject;
use apimachinery::validation::{
    FIELD_IMMUTABLE_ERROR_MSG, TOTAL_ANNOTATION_SIZE_LIMIT_B, is_dns1035_label,
    is_dns1123_subdomain, is_qualified_name,
};
use apimachinery::{ErrorList, FieldError, FieldPath};
use serde_json::{Map, Value, json};

use super::gojson::{self, Form, Go, INT_PTR, Member, STR, STRINGS};
use super::json_fields::{field, int_of, list, object, semantic_eq, spec_of, str_of};

const MAX_PARAMETERS: usize = 512;
const CSI_NODE_ID_MAX_LENGTH: usize = 256;

/// `ValidateCSIDriverName` (by hand): required, at most 63 bytes, a DNS
/// subdomain in any letter case (reported as the lowercase rule). DRA
/// driver names share it.
pub(super) fn csi_driver_name(name: &str, path: &FieldPath) -> ErrorList {
    if name.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let mut errs = ErrorList::new();
    if name.len() > 63 {
        errs.push(FieldError::too_long(path, 63));
    }
    let msgs = is_dns1123_subdomain(&name.to_ascii_lowercase());
    errs.extend(
        msgs.iter()
            .map(|m| FieldError::invalid(path, json!(name), m)),
    );
    errs
}

// ---------------------------------------------------------------------------
// VolumeAttributesClass

/// `ValidateVolumeAttributesClass` (metadata is the store's).
pub(super) fn volume_attributes_class(obj: &DynamicObject) -> ErrorList {
    let mut errs = provisioner(str_of(obj, "driverName"), &FieldPath::new("driverName"));
    let empty = Map::new();
    let parameters = object(obj, "parameters").unwrap_or(&empty);
    errs.extend(class_parameters(parameters, &FieldPath::new("parameters")));
    errs
}

/// `ValidateVolumeAttributesClassUpdate`: driver and parameters never change.
pub(super) fn volume_attributes_class_update(
    new: &DynamicObject,
    old: &DynamicObject,
) -> ErrorList {
    let mut errs = ErrorList::new();
    for key in ["driverName", "parameters"] {
        if new.get(key) != old.get(key) {
            errs.push(FieldError::forbidden(
                &FieldPath::new(key),
                &format!("updates to {key} are forbidden."),
            ));
        }
    }
    errs.extend(volume_attributes_class(new));
    errs
}

/// `validateProvisioner`: required, a qualified name in lowercase.
fn provisioner(name: &str, path: &FieldPath) -> ErrorList {
    if name.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let lower = name.to_lowercase();
    is_qualified_name(&lower)
        .iter()
        .map(|m| FieldError::invalid(path, json!(lower), m))
        .collect()
}

/// `validateParameters` without empty maps: at most 512 keys, none empty,
/// 256 KiB in all.
fn class_parameters(parameters: &Map<String, Value>, path: &FieldPath) -> ErrorList {
    if parameters.len() > MAX_PARAMETERS {
        return vec![FieldError::too_long(path, MAX_PARAMETERS)];
    }
    let mut errs = ErrorList::new();
    let mut size = 0;
    for (key, value) in parameters {
        if key.is_empty() {
            errs.push(FieldError::invalid(
                path,
                json!(key),
                "field can not be empty.",
            ));
        }
        size += key.len() + value.as_str().map_or(0, str::len);
    }
    if size > TOTAL_ANNOTATION_SIZE_LIMIT_B {
        errs.push(FieldError::too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT_B));
    }
    if parameters.is_empty() {
        errs.push(FieldError::required(
            path,
            "must contain at least one key/value pair",
        ));
    }
    errs
}

// ---------------------------------------------------------------------------
// CSINode

/// `storage.CSINodeDriver`, as the immutability error shows it.
const CSI_NODE_DRIVER: Go = Go::Struct(&[
    Member::new("name", "Name", false, &STR),
    Member::new("nodeID", "NodeID", false, &STR),
    Member::new("topologyKeys", "TopologyKeys", false, &STRINGS),
    Member::new(
        "allocatable",
        "Allocatable",
        true,
        &Go::Ptr(&Go::Struct(&[Member::new(
            "count", "Count", true, &INT_PTR,
        )])),
    ),
]);

/// `ValidateCSINode` (metadata is the store's).
pub(super) fn csi_node(obj: &DynamicObject) -> ErrorList {
    let path = FieldPath::new("spec").child("drivers");
    let drivers = list(spec_of(obj), "drivers");
    let mut errs = ErrorList::new();
    for (i, driver) in drivers.iter().enumerate() {
        errs.extend(csi_node_driver(driver, &drivers[..i], &path.index(i)));
    }
    errs
}

/// `ValidateCSINodeUpdate`: the create rules, and a driver's entry never
/// changes but for its allocatable count (`MutableCSINodeAllocatableCount`).
pub(super) fn csi_node_update(new: &DynamicObject, old: &DynamicObject) -> ErrorList {
    let mut errs = csi_node(new);
    let path = FieldPath::new("spec").child("drivers");
    let without_count = |d: &Value| {
        let mut d = d.clone();
        if let Some(map) = d.as_object_mut() {
            map.remove("allocatable");
        }
        d
    };
    for old_driver in list(spec_of(old), "drivers") {
        let name = str_of(old_driver, "name");
        for driver in list(spec_of(new), "drivers") {
            let (a, b) = (without_count(driver), without_count(old_driver));
            if str_of(driver, "name") == name && !semantic_eq(Some(&a), Some(&b)) {
                let shown = gojson::render(Some(&a), &CSI_NODE_DRIVER, Form::Internal);
                errs.push(FieldError::invalid_go(
                    &path,
                    &shown,
                    FIELD_IMMUTABLE_ERROR_MSG,
                ));
            }
        }
    }
    errs
}

/// `validateCSINodeDriver`: name, node ID, allocatable count, no repeated
/// driver, topology keys.
fn csi_node_driver(driver: &Value, earlier: &[Value], path: &FieldPath) -> ErrorList {
    let name = str_of(driver, "name");
    let mut errs = csi_driver_name(name, &path.child("name"));
    let node_id = str_of(driver, "nodeID");
    if node_id.is_empty() {
        errs.push(FieldError::required(&path.child("nodeID"), ""));
    }
    if node_id.len() > CSI_NODE_ID_MAX_LENGTH {
        errs.push(FieldError::invalid(
            &path.child("nodeID"),
            json!(node_id),
            &format!("must be {CSI_NODE_ID_MAX_LENGTH} characters or less"),
        ));
    }
    let count = field(driver, "allocatable").and_then(|a| int_of(a, "count"));
    if let Some(count) = count.filter(|c| *c < 0) {
        errs.push(FieldError::invalid(
            &path.child("allocatable").child("count"),
            json!(count),
            apimachinery::validation::IS_NEGATIVE_ERROR_MSG,
        ));
    }
    if earlier.iter().any(|d| str_of(d, "name") == name) {
        errs.push(FieldError::duplicate(&path.child("name"), json!(name)));
    }
    let keys = list(driver, "topologyKeys");
    for (i, key) in keys.iter().enumerate() {
        let key = key.as_str().unwrap_or("");
        if key.is_empty() {
            errs.push(FieldError::required(path, ""));
        }
        if keys[..i].iter().any(|k| k.as_str() == Some(key)) {
            errs.push(FieldError::duplicate(path, json!(key)));
        }
        errs.extend(
            is_qualified_name(key)
                .iter()
                .map(|m| FieldError::invalid(path, json!(key), m)),
        );
    }
    errs
}

/// A status write drops `storageHealth` (`CSIVolumeHealth` is off) unless
/// the stored status has it.
pub(super) fn csi_node_status_written(new: &mut DynamicObject, old: &DynamicObject) {
    let stored = old
        .pointer("/status/storageHealth")
        .and_then(Value::as_array)
        .is_some_and(|h| !h.is_empty());
    if let (false, Some(status)) = (stored, new.get_mut("status").and_then(Value::as_object_mut)) {
        status.remove("storageHealth");
    }
}

// ---------------------------------------------------------------------------
// StorageVersionMigration

/// `storagemigration.StorageVersionMigrationSpec`.
const MIGRATION_SPEC: Go = Go::Struct(&[Member::new(
    "resource",
    "Resource",
    false,
    &Go::Struct(&[
        Member::tagged("group", false, &STR),
        Member::tagged("resource", false, &STR),
    ]),
)]);

/// `metav1.Condition`.
const CONDITIONS: Go = Go::Slice(&Go::Struct(&[
    Member::tagged("type", false, &STR),
    Member::tagged("status", false, &STR),
    Member::tagged("observedGeneration", true, &gojson::INT),
    Member::tagged("lastTransitionTime", false, &STR),
    Member::tagged("reason", false, &STR),
    Member::tagged("message", false, &STR),
]));

/// `ValidateStorageVersionMigration` (metadata is the store's): the
/// resource to migrate.
pub(super) fn storage_version_migration(obj: &DynamicObject) -> ErrorList {
    let target = spec_of(obj).get("resource").unwrap_or(&Value::Null);
    let path = FieldPath::new("spec").child("resource");
    let mut errs = ErrorList::new();
    let resource = str_of(target, "resource");
    if resource.is_empty() {
        errs.push(FieldError::required(
            &path.child("resource"),
            "resource is required to be set",
        ));
    } else {
        errs.extend(joined(
            resource,
            is_dns1035_label(resource),
            &path.child("resource"),
        ));
    }
    let group = str_of(target, "group");
    if !group.is_empty() {
        errs.extend(joined(
            group,
            is_dns1123_subdomain(group),
            &path.child("group"),
        ));
    }
    errs
}

/// One `Invalid` with the messages joined by `,`, as upstream reports them.
fn joined(value: &str, msgs: Vec<String>, path: &FieldPath) -> Option<FieldError> {
    (!msgs.is_empty()).then(|| FieldError::invalid(path, json!(value), &msgs.join(",")))
}

/// The strategy's `ValidateUpdate`: the spec never changes; a status write
/// has rules of its own.
pub(super) fn storage_version_migration_update(
    new: &DynamicObject,
    old: &DynamicObject,
) -> ErrorList {
    if !semantic_eq(new.get("status"), old.get("status")) {
        return migration_status(new, old);
    }
    let mut errs = storage_version_migration(new);
    if !semantic_eq(new.get("spec"), old.get("spec")) {
        let shown = gojson::render(new.get("spec"), &MIGRATION_SPEC, Form::Internal);
        errs.push(FieldError::invalid_go(
            &FieldPath::new("spec"),
            &shown,
            FIELD_IMMUTABLE_ERROR_MSG,
        ));
    }
    errs
}

/// `ValidateStorageVersionMigrationStatusUpdate` (conditions' own rules
/// left out): a well-formed resource version, set once; success and failure
/// exclusive and final.
fn migration_status(new: &Value, old: &Value) -> ErrorList {
    let status = new.get("status").unwrap_or(&Value::Null);
    let path = FieldPath::new("status");
    let mut errs = ErrorList::new();
    let rv = str_of(status, "resourceVersion");
    let rv_path = path.child("resourceVersion");
    let well_formed = |s: &str| !s.starts_with('0') && s.bytes().all(|b| b.is_ascii_digit());
    if !rv.is_empty() && !well_formed(rv) {
        errs.push(FieldError::invalid(
            &rv_path,
            json!(rv),
            &format!("resource version is not well formed: {rv}"),
        ));
    }
    let old_status = old.get("status").unwrap_or(&Value::Null);
    let old_rv = str_of(old_status, "resourceVersion");
    if !old_rv.is_empty() && old_rv != rv {
        errs.push(FieldError::invalid(
            &rv_path,
            json!(rv),
            FIELD_IMMUTABLE_ERROR_MSG,
        ));
    }
    let conditions = |reason: &str| {
        FieldError::invalid_go(
            &path.child("conditions"),
            &gojson::render(status.get("conditions"), &CONDITIONS, Form::Versioned),
            reason,
        )
    };
    let (succeeded, failed) = (is_true(status, "Succeeded"), is_true(status, "Failed"));
    if succeeded && failed {
        errs.push(conditions(
            "Both success and failed conditions cannot be true at the same time",
        ));
    }
    if is_true(old_status, "Succeeded") && !succeeded {
        errs.push(conditions(
            "Success condition cannot be set to false once it is true",
        ));
    }
    if is_true(old_status, "Failed") && !failed {
        errs.push(conditions(
            "Failed condition cannot be set to false once it is true",
        ));
    }
    errs
}

/// Whether the first condition of `kind` is `True`.
fn is_true(status: &Value, kind: &str) -> bool {
    list(status, "conditions")
        .iter()
        .find(|c| str_of(c, "type") == kind)
        .is_some_and(|c| str_of(c, "status") == "True")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::typed_objects::typed;

    fn messages(errs: ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn csi_node_drivers_as_upstream() {
        let node = json!({"spec": {"drivers": [
            {"name": "", "nodeID": ""},
            {"name": "d", "nodeID": "x", "topologyKeys": ["k", "k"]},
        ]}});
        assert_eq!(
            messages(csi_node(&typed(&node))),
            [
                "spec.drivers[0].name: Required value",
                "spec.drivers[0].nodeID: Required value",
                r#"spec.drivers[1]: Duplicate value: "k""#,
            ]
        );
        let mut changed = node.clone();
        changed["spec"]["drivers"][1]["nodeID"] = json!("y");
        changed["spec"]["drivers"][1]["allocatable"] = json!({"count": 2});
        let errs = messages(csi_node_update(&typed(&changed), &typed(&node)));
        assert_eq!(
            errs.last().unwrap(),
            r#"spec.drivers: Invalid value: {"Name":"d","NodeID":"y","TopologyKeys":["k","k"],"Allocatable":null}: field is immutable"#
        );
    }

    #[test]
    fn migration_status_rules() {
        let old = json!({"spec": {}, "status": {"resourceVersion": "15"}});
        let new = json!({"spec": {}, "status": {"resourceVersion": "abc"}});
        assert_eq!(
            messages(storage_version_migration_update(&typed(&new), &typed(&old))),
            [
                r#"status.resourceVersion: Invalid value: "abc": resource version is not well formed: abc"#,
                r#"status.resourceVersion: Invalid value: "abc": field is immutable"#,
            ]
        );
    }
}
