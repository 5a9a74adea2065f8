//! The CustomResourceDefinition resource itself and its validation.

use apimachinery::DynamicObject;
use apimachinery::{ErrorList, FieldError, FieldPath, meta};
use registry::{Prepared, ResourceType, Strategy};
use serde_json::{Value, json};

/// `apiextensions.k8s.io/v1` CustomResourceDefinition.
pub fn crd_resource_type() -> ResourceType {
    let mut t = ResourceType::new(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
        Box::new(Crds),
    );
    // apiextensions-apiserver keeps CRDs in v1beta1.
    t.storage_version = registry::StorageVersion::Other {
        group: "apiextensions.k8s.io".into(),
        version: "v1beta1".into(),
    };
    t.short_names = vec!["crd".into(), "crds".into()];
    t.categories = vec!["api-extensions".into()];
    t.has_status = true;
    t.tracks_generation = true;
    t.allow_unconditional_update = false;
    // apiextensions-apiserver's table convertor (its texts: registry's
    // data/printer-columns.json).
    t.age_column = false;
    t.columns = vec![
        registry::TableColumn::new("Scope", "string", "Cluster/Namespaced"),
        registry::TableColumn::new("Versions", "string", "Served versions"),
        registry::TableColumn::new("Created At", "date", "The time the CRD was created"),
        registry::TableColumn::new("Group", "string", "API group").wide(),
        registry::TableColumn::new("Kind", "string", "CustomResource kind").wide(),
        registry::TableColumn::new("ShortNames", "string", "Short names").wide(),
        registry::TableColumn::new("Established", "boolean", "Established status").wide(),
    ];
    t
}

struct Crds;

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

impl Strategy for Crds {
    /// Upstream's v1 defaults run where a body is decoded: what they set is
    /// the writer's in managedFields.
    fn default(&self, obj: &mut DynamicObject) {
        default_spec(obj);
    }

    fn prepare_create(&self, obj: &mut DynamicObject) -> Prepared {
        default_spec(obj);
        obj["status"] = json!({
            "conditions": null,
            "acceptedNames": {"plural": "", "kind": ""},
            "storedVersions": storage_versions(obj),
        });
        Prepared::BodyChanged
    }

    fn prepare_update(&self, new: &mut DynamicObject, old: &DynamicObject) {
        default_spec(new);
        new["status"] = old.get("status").cloned().unwrap_or(json!({}));
        record_storage_version(new);
    }

    fn validate(&self, obj: &DynamicObject) -> ErrorList {
        validate_crd_with(obj, &obj.metadata.name, &cel_rules::Preexisting::default())
    }

    fn validate_update(&self, new: &DynamicObject, old: &DynamicObject) -> ErrorList {
        // Rules the stored CRD already had compile in the environment of
        // stored expressions (upstream's ratcheting of CEL environments).
        let preexisting = cel_rules::Preexisting::of_crd(old);
        let mut errs = validate_crd_with(new, &new.metadata.name, &preexisting);
        let spec = FieldPath::new("spec");
        for field in ["group", "scope"] {
            if new.pointer(&format!("/spec/{field}")) != old.pointer(&format!("/spec/{field}")) {
                errs.push(FieldError::invalid(
                    &spec.child(field),
                    new.pointer(&format!("/spec/{field}"))
                        .cloned()
                        .unwrap_or(Value::Null),
                    "field is immutable",
                ));
            }
        }
        errs
    }

    /// apiextensions-apiserver's cells: served versions sorted, the storage one
    /// marked; Established is the condition's status being True.
    fn row(&self, obj: &Value) -> Vec<Value> {
        let mut versions: Vec<String> = obj
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|v| v["served"] == true)
            .map(|v| {
                let name = v["name"].as_str().unwrap_or("");
                if v["storage"] == true {
                    format!("{name}(storage)")
                } else {
                    name.to_string()
                }
            })
            .collect();
        versions.sort();
        let short_names: Vec<&str> = obj
            .pointer("/spec/names/shortNames")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let established = obj
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Established" && c["status"] == "True");
        vec![
            json!(str_at(obj, "/spec/scope")),
            json!(versions.join(",")),
            json!(meta::str_field(obj, "creationTimestamp").unwrap_or("")),
            json!(str_at(obj, "/spec/group")),
            json!(str_at(obj, "/spec/names/kind")),
            json!(short_names.join(",")),
            json!(established),
        ]
    }

    /// The first DELETE only marks the CRD: its instances must go first.
    fn deletion_blocked(&self, obj: &DynamicObject) -> bool {
        obj.metadata.deletion_timestamp.is_none()
    }

    fn prepare_delete(&self, obj: &mut DynamicObject) {
        let finalizers = &mut obj.metadata.finalizers;
        if !finalizers.iter().any(|f| f == CLEANUP_FINALIZER) {
            finalizers.push(CLEANUP_FINALIZER.into());
        }
        set_condition(
            obj,
            "Terminating",
            "InstanceDeletionPending",
            "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
        );
    }
}

/// Upstream's v1 defaults: `names.singular` is the lower-cased kind and
/// `names.listKind` the kind + `List` when empty, `spec.conversion` is
/// `{strategy: None}` unless given, and a conversion webhook's service port is 443.
fn default_spec(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let is_empty = |v: Option<&Value>| v.and_then(Value::as_str).is_none_or(str::is_empty);
        if is_empty(names.get("singular")) {
            names.insert("singular".into(), json!(kind.to_lowercase()));
        }
        if is_empty(names.get("listKind")) && !kind.is_empty() {
            names.insert("listKind".into(), json!(format!("{kind}List")));
        }
    }
    let conversion = spec
        .entry("conversion")
        .or_insert_with(|| json!({"strategy": "None"}));
    if let Some(service) = conversion
        .pointer_mut("/webhook/clientConfig/service")
        .and_then(Value::as_object_mut)
    {
        service.entry("port").or_insert(json!(443));
    }
}

/// Upstream's `PrepareForUpdate`: a version that becomes the storage version is
/// appended to `status.storedVersions` in the same write.
fn record_storage_version(crd: &mut Value) {
    let Some(storage) = storage_versions(crd)
        .as_array()
        .and_then(|v| v.first().cloned())
    else {
        return;
    };
    let status = &mut crd["status"];
    if !status.get("storedVersions").is_some_and(Value::is_array) {
        status["storedVersions"] = json!([]);
    }
    if let Some(stored) = status["storedVersions"].as_array_mut()
        && !stored.contains(&storage)
    {
        stored.push(storage);
    }
}

/// A new CRD's `status.storedVersions`: its storage version (upstream sets it on
/// create, so the create response already carries it).
fn storage_versions(obj: &Value) -> Value {
    obj.pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v.get("storage") == Some(&Value::Bool(true)))
        .filter_map(|v| v.get("name").cloned())
        .collect()
}

/// Holds a deleted CRD until every instance is gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// Set (or replace) a True condition in `status.conditions`.
pub fn set_condition(obj: &mut Value, kind: &str, reason: &str, message: &str) {
    set_condition_status(obj, kind, "True", reason, message);
}

/// Set (or replace) a condition in `status.conditions`; its transition time moves
/// only when its status changes (upstream's `SetCRDCondition`).
pub fn set_condition_status(
    obj: &mut Value,
    kind: &str,
    status: &str,
    reason: &str,
    message: &str,
) {
    if !obj.get("status").is_some_and(Value::is_object) {
        obj["status"] = json!({});
    }
    let object_status = &mut obj["status"];
    if !object_status.get("conditions").is_some_and(Value::is_array) {
        object_status["conditions"] = json!([]);
    }
    let Some(list) = object_status["conditions"].as_array_mut() else {
        return;
    };
    let since = list
        .iter()
        .find(|c| c["type"] == kind && c["status"] == status)
        .and_then(|c| c.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(apimachinery::time::now_rfc3339()));
    let condition = json!({
        "type": kind, "status": status, "reason": reason, "message": message,
        "lastTransitionTime": since,
    });
    match list.iter_mut().find(|c| c["type"] == kind) {
        Some(existing) => *existing = condition,
        None => list.push(condition),
    }
}

pub fn validate_crd(obj: &Value) -> ErrorList {
    validate_crd_with(obj, meta::name(obj), &cel_rules::Preexisting::default())
}

/// `validate_crd` of a CRD (its body) named `name`, `preexisting` the CEL
/// expressions of the stored CRD when updating it.
fn validate_crd_with(obj: &Value, name: &str, preexisting: &cel_rules::Preexisting) -> ErrorList {
    let mut errs = Vec::new();
    let spec = FieldPath::new("spec");
    let group = str_at(obj, "/spec/group");
    let plural = str_at(obj, "/spec/names/plural");
    let kind = str_at(obj, "/spec/names/kind");
    if group.is_empty() {
        errs.push(FieldError::required(&spec.child("group"), ""));
    } else if !group.contains('.') {
        errs.push(FieldError::invalid(
            &spec.child("group"),
            json!(group),
            "should be a domain with at least one dot",
        ));
    }
    let names = spec.child("names");
    if plural.is_empty() {
        errs.push(FieldError::required(&names.child("plural"), ""));
    } else {
        for msg in apimachinery::validation::is_dns1035_label(plural) {
            errs.push(FieldError::invalid(
                &names.child("plural"),
                json!(plural),
                &msg,
            ));
        }
    }
    if kind.is_empty() {
        errs.push(FieldError::required(&names.child("kind"), ""));
    }
    let list_kind = str_at(obj, "/spec/names/listKind");
    if !list_kind.is_empty() && list_kind == kind {
        errs.push(FieldError::invalid(
            &names.child("listKind"),
            json!(list_kind),
            "kind and listKind may not be the same",
        ));
    }
    let expected = format!("{plural}.{group}");
    if !plural.is_empty() && !group.is_empty() && name != expected {
        errs.push(FieldError::invalid(
            &FieldPath::new("metadata").child("name"),
            json!(name),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    let scope = str_at(obj, "/spec/scope");
    if !matches!(scope, "Namespaced" | "Cluster") {
        errs.push(FieldError::not_supported(
            &spec.child("scope"),
            json!(scope),
            &["Cluster", "Namespaced"],
        ));
    }
    errs.extend(validate_versions(obj, &spec.child("versions"), preexisting));
    errs.extend(crate::conversion::validate(obj));
    errs
}

fn validate_versions(
    obj: &Value,
    path: &FieldPath,
    preexisting: &cel_rules::Preexisting,
) -> ErrorList {
    let mut errs = Vec::new();
    let versions = obj.pointer("/spec/versions").and_then(Value::as_array);
    let Some(versions) = versions.filter(|v| !v.is_empty()) else {
        errs.push(FieldError::invalid(
            path,
            json!(null),
            "must have exactly one version marked as storage version",
        ));
        return errs;
    };
    let mut seen = std::collections::HashSet::new();
    // Upstream validates its internal form, where a schema every version
    // shares is the top-level `spec.validation`: its errors are reported there.
    let shared_schema = versions
        .iter()
        .all(|v| v.get("schema") == versions[0].get("schema"));
    for (i, v) in versions.iter().enumerate() {
        let name = str_at(v, "/name");
        let vpath = path.index(i);
        if name.is_empty() {
            errs.push(FieldError::required(&vpath.child("name"), ""));
        } else if !seen.insert(name) {
            errs.push(FieldError::invalid(
                path,
                json!(name),
                "must contain unique version names",
            ));
        } else {
            for msg in apimachinery::validation::is_dns1035_label(name) {
                errs.push(FieldError::invalid(&vpath.child("name"), json!(name), &msg));
            }
        }
        let version_schema_path = vpath.child("schema").child("openAPIV3Schema");
        match v.pointer("/schema/openAPIV3Schema") {
            None => errs.push(FieldError::required(
                &version_schema_path,
                "schemas are required",
            )),
            Some(_) if shared_schema && i > 0 => {}
            Some(raw) => {
                let schema_path = if shared_schema {
                    FieldPath::new("spec")
                        .child("validation")
                        .child("openAPIV3Schema")
                } else {
                    version_schema_path
                };
                let opts = schema::StructuralOptions {
                    status_subresource: v.pointer("/subresources/status").is_some(),
                };
                let structural_errors = schema::structural_errors_with(raw, &schema_path, opts);
                // Rules are compiled against a structural schema only (upstream
                // skips CEL when the schema has errors).
                if structural_errors.is_empty()
                    && let Ok(structural) = schema::structural::Structural::compile(raw)
                {
                    errs.extend(cel_rules::compile_errors_updating(
                        &structural,
                        &schema_path,
                        preexisting,
                    ));
                }
                errs.extend(structural_errors);
            }
        }
    }
    errs.extend(validate_scale_paths(versions, path));
    let storage = versions
        .iter()
        .filter(|v| v.get("storage") == Some(&Value::Bool(true)))
        .count();
    if storage != 1 {
        errs.push(FieldError::invalid(
            path,
            json!(versions.len()),
            "must have exactly one version marked as storage version",
        ));
    }
    if !versions
        .iter()
        .any(|v| v.get("served") == Some(&Value::Bool(true)))
    {
        errs.push(FieldError::invalid(
            path,
            json!(versions.len()),
            "must have at least one version marked as served",
        ));
    }
    errs
}

/// Scale paths, reported where upstream's internal version keeps them:
/// `spec.subresources` when every version has the same subresources.
fn validate_scale_paths(versions: &[Value], path: &FieldPath) -> ErrorList {
    let subresources = |v: &Value| v.get("subresources").cloned();
    let shared = versions
        .windows(2)
        .all(|w| subresources(&w[0]) == subresources(&w[1]));
    if shared {
        return versions
            .first()
            .and_then(|v| v.pointer("/subresources/scale"))
            .map(|scale| {
                crate::scale::validate_paths(scale, &FieldPath::new("spec").child("subresources"))
            })
            .unwrap_or_default();
    }
    versions
        .iter()
        .enumerate()
        .filter_map(|(i, v)| {
            let scale = v.pointer("/subresources/scale")?;
            Some(crate::scale::validate_paths(
                scale,
                &path.index(i).child("subresources"),
            ))
        })
        .flatten()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "crontabs.stable.example.com"},
            "spec": {
                "group": "stable.example.com", "scope": "Namespaced",
                "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "shortNames": ["ct"]},
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object"}}}],
            },
        })
    }

    /// apiextensions-apiserver's table: upstream's measured definitions, and
    /// cells in their order.
    #[test]
    fn table_is_upstreams() {
        let t = crd_resource_type();
        let upstream = registry::table::upstream_column_definitions(
            "apiextensions.k8s.io",
            "customresourcedefinitions",
        )
        .unwrap();
        assert_eq!(registry::table::column_definitions(&t), upstream);
        let mut obj = crd();
        obj["metadata"]["creationTimestamp"] = json!("2025-01-01T00:00:00Z");
        let versions = obj["spec"]["versions"].as_array_mut().unwrap();
        versions.insert(
            0,
            json!({"name": "v1beta1", "served": true, "storage": false}),
        );
        versions.push(json!({"name": "v2", "served": false, "storage": false}));
        obj["status"] = json!({"conditions": [{"type": "Established", "status": "True"}]});
        let row = registry::table::row(&t, &obj, "None");
        assert_eq!(
            row["cells"],
            json!([
                "crontabs.stable.example.com",
                "Namespaced",
                "v1(storage),v1beta1",
                "2025-01-01T00:00:00Z",
                "stable.example.com",
                "CronTab",
                "ct",
                true
            ])
        );
    }

    #[test]
    fn a_valid_crd_passes() {
        assert_eq!(validate_crd(&crd()), vec![]);
    }

    #[test]
    fn every_error_is_reported() {
        let mut bad = crd();
        bad["metadata"]["name"] = json!("wrong");
        bad["spec"]["group"] = json!("nodot");
        bad["spec"]["scope"] = json!("Galaxy");
        bad["spec"]["versions"][0]["storage"] = json!(false);
        let errs: Vec<String> = validate_crd(&bad).iter().map(ToString::to_string).collect();
        assert!(
            errs.contains(
                &"spec.group: Invalid value: \"nodot\": should be a domain with at least one dot"
                    .to_string()
            ),
            "{errs:?}"
        );
        assert!(
            errs.iter()
                .any(|e| e.starts_with("spec.scope: Unsupported value: \"Galaxy\"")),
            "{errs:?}"
        );
        assert!(
            errs.iter()
                .any(|e| e.contains("must have exactly one version marked as storage version")),
            "{errs:?}"
        );
        assert!(
            errs.iter()
                .any(|e| e.starts_with("metadata.name: Invalid value: \"wrong\"")),
            "{errs:?}"
        );
    }
}
