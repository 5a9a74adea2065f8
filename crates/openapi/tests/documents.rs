//! The documents as kubectl reads them.
#![allow(clippy::expect_used)]

use std::collections::BTreeSet;

use kubext_openapi::{
    Documents, Gvk, ServedResource, Subresource, builtin_components, builtin_kinds,
    builtin_unknown_fields, find_schema, gv_path, strict_decoding_error, unknown_fields, v2,
    v2_protobuf, v3_group_version, v3_index,
};
use serde_json::{Value, json};

/// kubext's built-in catalog.
fn served() -> Vec<ServedResource> {
    vec![
        ServedResource::new("", "v1", "Namespace", "namespaces", false).with_status(),
        ServedResource::new("", "v1", "ConfigMap", "configmaps", true),
        ServedResource::new("", "v1", "Secret", "secrets", true),
        ServedResource::new("", "v1", "ServiceAccount", "serviceaccounts", true),
        ServedResource::new("", "v1", "Event", "events", true),
        ServedResource::new("", "v1", "Service", "services", true).with_status(),
        ServedResource::new("", "v1", "Endpoints", "endpoints", true),
        ServedResource::new(
            "discovery.k8s.io",
            "v1",
            "EndpointSlice",
            "endpointslices",
            true,
        ),
        ServedResource::new("coordination.k8s.io", "v1", "Lease", "leases", true),
        ServedResource::new("events.k8s.io", "v1", "Event", "events", true),
        ServedResource::new(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            false,
        )
        .with_status(),
        ServedResource::new(
            "apiregistration.k8s.io",
            "v1",
            "APIService",
            "apiservices",
            false,
        )
        .with_status(),
        ServedResource::new(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicy",
            "validatingadmissionpolicies",
            false,
        )
        .with_status(),
        ServedResource::new(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            false,
        ),
        ServedResource::new(
            "admissionregistration.k8s.io",
            "v1",
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
            false,
        ),
        ServedResource::new(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicyBinding",
            "validatingadmissionpolicybindings",
            false,
        ),
        ServedResource::new(
            "admissionregistration.k8s.io",
            "v1",
            "MutatingAdmissionPolicy",
            "mutatingadmissionpolicies",
            false,
        ),
        ServedResource::new(
            "admissionregistration.k8s.io",
            "v1",
            "MutatingAdmissionPolicyBinding",
            "mutatingadmissionpolicybindings",
            false,
        ),
        ServedResource::new(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            "clusterroles",
            false,
        ),
        ServedResource::new(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRoleBinding",
            "clusterrolebindings",
            false,
        ),
        ServedResource::new("rbac.authorization.k8s.io", "v1", "Role", "roles", true),
        ServedResource::new(
            "rbac.authorization.k8s.io",
            "v1",
            "RoleBinding",
            "rolebindings",
            true,
        ),
        ServedResource::new(
            "authentication.k8s.io",
            "v1",
            "TokenReview",
            "tokenreviews",
            false,
        )
        .with_verbs(&["create"]),
        ServedResource::new(
            "authentication.k8s.io",
            "v1",
            "SelfSubjectReview",
            "selfsubjectreviews",
            false,
        )
        .with_verbs(&["create"]),
        ServedResource::new(
            "authorization.k8s.io",
            "v1",
            "SubjectAccessReview",
            "subjectaccessreviews",
            false,
        )
        .with_verbs(&["create"]),
        ServedResource::new(
            "authorization.k8s.io",
            "v1",
            "SelfSubjectAccessReview",
            "selfsubjectaccessreviews",
            false,
        )
        .with_verbs(&["create"]),
        ServedResource::new(
            "authorization.k8s.io",
            "v1",
            "SelfSubjectRulesReview",
            "selfsubjectrulesreviews",
            false,
        )
        .with_verbs(&["create"]),
        ServedResource::new(
            "authorization.k8s.io",
            "v1",
            "LocalSubjectAccessReview",
            "localsubjectaccessreviews",
            true,
        )
        .with_verbs(&["create"]),
    ]
}

fn crontab() -> ServedResource {
    ServedResource::new("stable.example.com", "v1", "CronTab", "crontabs", true)
        .with_status()
        .custom_resource()
        .with_schema(json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "cronSpec": {"type": "string"},
                        "replicas": {"type": "integer"},
                        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    },
                },
                "status": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
            },
        }))
}

fn all_gvs(resources: &[ServedResource]) -> BTreeSet<(String, String)> {
    resources
        .iter()
        .map(|r| (r.group.clone(), r.version.clone()))
        .collect()
}

/// kubectl's `supportsQueryParamV3` (cli-runtime query_param_verifier_v3.go): the
/// first PATCH operation whose `x-kubernetes-group-version-kind` is the GVK decides.
fn kubectl_supports_query_param_v3(doc: &Value, gvk: &Gvk, param: &str) -> bool {
    let Some(paths) = doc["paths"].as_object() else {
        return false;
    };
    for item in paths.values() {
        let Some(op) = item.get("patch") else {
            continue;
        };
        if !op
            .get("x-kubernetes-group-version-kind")
            .is_some_and(|g| gvk.matches(g))
        {
            continue;
        }
        return op["parameters"].as_array().is_some_and(|params| {
            params
                .iter()
                .any(|p| p["name"] == param && p["in"] == "query")
        });
    }
    false
}

/// kubectl apply's `gvkSupportsPatchOpenAPIV3`: whether the GVK's PATCH takes a
/// strategic merge patch.
fn kubectl_supports_smp_v3(doc: &Value, gvk: &Gvk) -> bool {
    for item in doc["paths"]
        .as_object()
        .into_iter()
        .flat_map(|p| p.values())
    {
        let Some(op) = item.get("patch") else {
            continue;
        };
        if op
            .get("x-kubernetes-group-version-kind")
            .is_some_and(|g| gvk.matches(g))
        {
            return op["requestBody"]["content"]
                .get("application/strategic-merge-patch+json")
                .is_some();
        }
    }
    false
}

/// strategicpatch's `resolve` for OpenAPI v3: `allOf[0]`, then `$ref`.
fn resolve<'a>(doc: &'a Value, mut schema: &'a Value) -> &'a Value {
    if let Some(first) = schema.get("allOf").and_then(|a| a.get(0)) {
        schema = first;
    }
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let name = r
            .strip_prefix("#/components/schemas/")
            .expect("v3 ref prefix");
        schema = &doc["components"]["schemas"][name];
        assert!(!schema.is_null(), "unresolved {r}");
    }
    schema
}

/// strategicpatch's `PatchMetaFromOpenAPIV3.LookupPatchMetadataForStruct`.
fn lookup_struct<'a>(doc: &'a Value, schema: &'a Value, key: &str) -> (&'a Value, Value) {
    let prop = &schema["properties"][key];
    assert!(!prop.is_null(), "unable to find api field {key:?}");
    let meta = json!({
        "strategy": prop.get("x-kubernetes-patch-strategy"),
        "mergeKey": prop.get("x-kubernetes-patch-merge-key"),
    });
    (resolve(doc, prop), meta)
}

fn kind_schema<'a>(doc: &'a Value, gvk: &Gvk) -> &'a Value {
    let name = find_schema(doc, gvk).unwrap_or_else(|| panic!("no schema for {gvk:?}"));
    &doc["components"]["schemas"][name]
}

/// Every `$ref` names a schema (`prefix`) in `defs`, or (Swagger 2.0) a shared
/// parameter.
fn assert_refs_resolve(doc: &Value, prefix: &str, defs: &Value) {
    fn walk(doc: &Value, v: &Value, prefix: &str, defs: &Value, count: &mut usize) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    // (JSONSchemaProps has a property named `$ref`: an object.)
                    if let ("$ref", Some(r)) = (k.as_str(), v.as_str()) {
                        if let Some(param) = r.strip_prefix("#/parameters/") {
                            assert!(doc["parameters"].get(param).is_some(), "unresolved {r}");
                            continue;
                        }
                        let name = r
                            .strip_prefix(prefix)
                            .unwrap_or_else(|| panic!("{r} lacks {prefix}"));
                        assert!(defs.get(name).is_some(), "unresolved {r}");
                        *count += 1;
                    } else {
                        walk(doc, v, prefix, defs, count);
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|v| walk(doc, v, prefix, defs, count)),
            _ => {}
        }
    }
    let mut count = 0;
    walk(doc, doc, prefix, defs, &mut count);
    assert!(count > 0);
}

#[test]
fn every_builtin_kind_has_a_schema_with_its_gvk() {
    let expected = [
        ("", "v1", "ConfigMap", "io.k8s.api.core.v1.ConfigMap"),
        ("", "v1", "Secret", "io.k8s.api.core.v1.Secret"),
        ("", "v1", "Namespace", "io.k8s.api.core.v1.Namespace"),
        (
            "",
            "v1",
            "ServiceAccount",
            "io.k8s.api.core.v1.ServiceAccount",
        ),
        ("", "v1", "Event", "io.k8s.api.core.v1.Event"),
        ("", "v1", "Service", "io.k8s.api.core.v1.Service"),
        ("", "v1", "Endpoints", "io.k8s.api.core.v1.Endpoints"),
        (
            "discovery.k8s.io",
            "v1",
            "EndpointSlice",
            "io.k8s.api.discovery.v1.EndpointSlice",
        ),
        (
            "coordination.k8s.io",
            "v1",
            "Lease",
            "io.k8s.api.coordination.v1.Lease",
        ),
        ("events.k8s.io", "v1", "Event", "io.k8s.api.events.v1.Event"),
        (
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicy",
            "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicy",
        ),
        (
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration",
            "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration",
        ),
        (
            "admissionregistration.k8s.io",
            "v1",
            "MutatingWebhookConfiguration",
            "io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration",
        ),
        (
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicyBinding",
            "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBinding",
        ),
        (
            "admissionregistration.k8s.io",
            "v1",
            "MutatingAdmissionPolicy",
            "io.k8s.api.admissionregistration.v1.MutatingAdmissionPolicy",
        ),
        (
            "admissionregistration.k8s.io",
            "v1",
            "MutatingAdmissionPolicyBinding",
            "io.k8s.api.admissionregistration.v1.MutatingAdmissionPolicyBinding",
        ),
        (
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            "io.k8s.api.rbac.v1.ClusterRole",
        ),
        (
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRoleBinding",
            "io.k8s.api.rbac.v1.ClusterRoleBinding",
        ),
        (
            "rbac.authorization.k8s.io",
            "v1",
            "Role",
            "io.k8s.api.rbac.v1.Role",
        ),
        (
            "rbac.authorization.k8s.io",
            "v1",
            "RoleBinding",
            "io.k8s.api.rbac.v1.RoleBinding",
        ),
        (
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
        ),
        (
            "apiregistration.k8s.io",
            "v1",
            "APIService",
            "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService",
        ),
        (
            "authentication.k8s.io",
            "v1",
            "TokenReview",
            "io.k8s.api.authentication.v1.TokenReview",
        ),
        (
            "authentication.k8s.io",
            "v1",
            "SelfSubjectReview",
            "io.k8s.api.authentication.v1.SelfSubjectReview",
        ),
        (
            "authorization.k8s.io",
            "v1",
            "SubjectAccessReview",
            "io.k8s.api.authorization.v1.SubjectAccessReview",
        ),
        (
            "authorization.k8s.io",
            "v1",
            "SelfSubjectAccessReview",
            "io.k8s.api.authorization.v1.SelfSubjectAccessReview",
        ),
        (
            "authorization.k8s.io",
            "v1",
            "SelfSubjectRulesReview",
            "io.k8s.api.authorization.v1.SelfSubjectRulesReview",
        ),
        (
            "authorization.k8s.io",
            "v1",
            "LocalSubjectAccessReview",
            "io.k8s.api.authorization.v1.LocalSubjectAccessReview",
        ),
        // The kinds of registry's built-in kinds table.
        ("", "v1", "LimitRange", "io.k8s.api.core.v1.LimitRange"),
        ("", "v1", "Node", "io.k8s.api.core.v1.Node"),
        (
            "",
            "v1",
            "PersistentVolumeClaim",
            "io.k8s.api.core.v1.PersistentVolumeClaim",
        ),
        (
            "",
            "v1",
            "PersistentVolume",
            "io.k8s.api.core.v1.PersistentVolume",
        ),
        ("", "v1", "Pod", "io.k8s.api.core.v1.Pod"),
        ("", "v1", "PodTemplate", "io.k8s.api.core.v1.PodTemplate"),
        (
            "",
            "v1",
            "ReplicationController",
            "io.k8s.api.core.v1.ReplicationController",
        ),
        (
            "",
            "v1",
            "ResourceQuota",
            "io.k8s.api.core.v1.ResourceQuota",
        ),
        (
            "apps",
            "v1",
            "ControllerRevision",
            "io.k8s.api.apps.v1.ControllerRevision",
        ),
        ("apps", "v1", "DaemonSet", "io.k8s.api.apps.v1.DaemonSet"),
        ("apps", "v1", "Deployment", "io.k8s.api.apps.v1.Deployment"),
        ("apps", "v1", "ReplicaSet", "io.k8s.api.apps.v1.ReplicaSet"),
        (
            "apps",
            "v1",
            "StatefulSet",
            "io.k8s.api.apps.v1.StatefulSet",
        ),
        (
            "autoscaling",
            "v2",
            "HorizontalPodAutoscaler",
            "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler",
        ),
        ("batch", "v1", "CronJob", "io.k8s.api.batch.v1.CronJob"),
        ("batch", "v1", "Job", "io.k8s.api.batch.v1.Job"),
        (
            "certificates.k8s.io",
            "v1",
            "CertificateSigningRequest",
            "io.k8s.api.certificates.v1.CertificateSigningRequest",
        ),
        (
            "flowcontrol.apiserver.k8s.io",
            "v1",
            "FlowSchema",
            "io.k8s.api.flowcontrol.v1.FlowSchema",
        ),
        (
            "flowcontrol.apiserver.k8s.io",
            "v1",
            "PriorityLevelConfiguration",
            "io.k8s.api.flowcontrol.v1.PriorityLevelConfiguration",
        ),
        (
            "networking.k8s.io",
            "v1",
            "IngressClass",
            "io.k8s.api.networking.v1.IngressClass",
        ),
        (
            "networking.k8s.io",
            "v1",
            "Ingress",
            "io.k8s.api.networking.v1.Ingress",
        ),
        (
            "networking.k8s.io",
            "v1",
            "IPAddress",
            "io.k8s.api.networking.v1.IPAddress",
        ),
        (
            "networking.k8s.io",
            "v1",
            "NetworkPolicy",
            "io.k8s.api.networking.v1.NetworkPolicy",
        ),
        (
            "networking.k8s.io",
            "v1",
            "ServiceCIDR",
            "io.k8s.api.networking.v1.ServiceCIDR",
        ),
        (
            "node.k8s.io",
            "v1",
            "RuntimeClass",
            "io.k8s.api.node.v1.RuntimeClass",
        ),
        (
            "policy",
            "v1",
            "PodDisruptionBudget",
            "io.k8s.api.policy.v1.PodDisruptionBudget",
        ),
        (
            "scheduling.k8s.io",
            "v1",
            "PriorityClass",
            "io.k8s.api.scheduling.v1.PriorityClass",
        ),
        (
            "storage.k8s.io",
            "v1",
            "CSIDriver",
            "io.k8s.api.storage.v1.CSIDriver",
        ),
        (
            "storage.k8s.io",
            "v1",
            "CSINode",
            "io.k8s.api.storage.v1.CSINode",
        ),
        (
            "storage.k8s.io",
            "v1",
            "CSIStorageCapacity",
            "io.k8s.api.storage.v1.CSIStorageCapacity",
        ),
        (
            "storage.k8s.io",
            "v1",
            "StorageClass",
            "io.k8s.api.storage.v1.StorageClass",
        ),
        (
            "storage.k8s.io",
            "v1",
            "VolumeAttachment",
            "io.k8s.api.storage.v1.VolumeAttachment",
        ),
        (
            "autoscaling",
            "v1",
            "HorizontalPodAutoscaler",
            "io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler",
        ),
        (
            "",
            "v1",
            "ComponentStatus",
            "io.k8s.api.core.v1.ComponentStatus",
        ),
        (
            "certificates.k8s.io",
            "v1",
            "ClusterTrustBundle",
            "io.k8s.api.certificates.v1.ClusterTrustBundle",
        ),
        (
            "certificates.k8s.io",
            "v1",
            "PodCertificateRequest",
            "io.k8s.api.certificates.v1.PodCertificateRequest",
        ),
        (
            "resource.k8s.io",
            "v1",
            "DeviceClass",
            "io.k8s.api.resource.v1.DeviceClass",
        ),
        (
            "resource.k8s.io",
            "v1",
            "DeviceTaintRule",
            "io.k8s.api.resource.v1.DeviceTaintRule",
        ),
        (
            "resource.k8s.io",
            "v1",
            "ResourceClaim",
            "io.k8s.api.resource.v1.ResourceClaim",
        ),
        (
            "resource.k8s.io",
            "v1",
            "ResourceClaimTemplate",
            "io.k8s.api.resource.v1.ResourceClaimTemplate",
        ),
        (
            "resource.k8s.io",
            "v1",
            "ResourceSlice",
            "io.k8s.api.resource.v1.ResourceSlice",
        ),
        (
            "storage.k8s.io",
            "v1",
            "VolumeAttributesClass",
            "io.k8s.api.storage.v1.VolumeAttributesClass",
        ),
        (
            "storagemigration.k8s.io",
            "v1",
            "StorageVersionMigration",
            "io.k8s.api.storagemigration.v1.StorageVersionMigration",
        ),
    ];
    assert_eq!(builtin_kinds().len(), expected.len());
    let components = Value::Object(builtin_components().clone());
    for (group, version, kind, name) in expected {
        let gvk = Gvk::new(group, version, kind);
        assert_eq!(find_schema(&components, &gvk), Some(name));
        let list = Gvk::new(group, version, &format!("{kind}List"));
        assert_eq!(
            find_schema(&components, &list),
            Some(format!("{name}List").as_str())
        );
        // ...and in the served documents (of the kinds this test serves).
        let served = served();
        if !served.iter().any(|r| r.group == group && r.kind == kind) {
            continue;
        }
        let doc = v3_group_version(&served, group, version).expect("gv document");
        assert_eq!(find_schema(&doc, &gvk), Some(name));
        // Reviews are create-only: no list operation, so no list schema.
        if !kind.ends_with("Review") {
            assert_eq!(
                find_schema(&doc, &list),
                Some(format!("{name}List").as_str())
            );
        }
    }
    let names: Vec<&String> = builtin_components().keys().collect();
    for meta in ["ObjectMeta", "ListMeta", "Status", "DeleteOptions", "Patch"] {
        let name = format!("io.k8s.apimachinery.pkg.apis.meta.v1.{meta}");
        assert!(names.contains(&&name), "{name}");
    }
}

#[test]
fn kubectl_sees_server_side_field_validation_for_every_kind() {
    let mut resources = served();
    resources.push(crontab());
    // Create-only reviews have no PATCH for kubectl to look at.
    for r in resources.iter().filter(|r| r.has_verb("patch")) {
        let doc = v3_group_version(&resources, &r.group, &r.version).expect("gv document");
        assert_eq!(doc["openapi"], "3.0.0");
        // A CRD's group-version is apiextensions-apiserver's document (measured).
        let info = if r.custom_resource {
            json!({"title": "Kubernetes CRD Swagger", "version": "v0.1.0"})
        } else {
            json!({"title": "Kubernetes", "version": "1.37"})
        };
        assert_eq!(doc["info"], info);
        assert!(
            kubectl_supports_query_param_v3(&doc, &r.gvk(), "fieldValidation"),
            "{:?}",
            r.gvk()
        );
        // Every PATCH of the kind carries it, whichever kubectl meets first.
        for item in doc["paths"].as_object().expect("paths").values() {
            if let Some(op) = item.get("patch") {
                let params = op["parameters"].as_array().expect("params");
                for name in ["dryRun", "fieldManager", "fieldValidation", "force"] {
                    assert!(
                        params
                            .iter()
                            .any(|p| p["name"] == name && p["in"] == "query")
                    );
                }
                assert_eq!(op["x-kubernetes-action"], "patch");
            }
        }
        // Built-ins take strategic merge patches, custom resources don't.
        assert_eq!(
            kubectl_supports_smp_v3(&doc, &r.gvk()),
            r.group != "stable.example.com"
        );
    }
    // kubectl checks core/v1 Namespace for CRDs without a document.
    let core = v3_group_version(&resources, "", "v1").expect("core");
    assert!(kubectl_supports_query_param_v3(
        &core,
        &Gvk::new("", "v1", "Namespace"),
        "fieldValidation"
    ));
    assert!(v3_group_version(&resources, "apps", "v1").is_none());
}

#[test]
fn operations_look_like_upstream() {
    let doc = v3_group_version(&served(), "coordination.k8s.io", "v1").expect("doc");
    let paths = doc["paths"].as_object().expect("paths");
    let keys: BTreeSet<&str> = paths.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        BTreeSet::from([
            "/apis/coordination.k8s.io/v1/",
            "/apis/coordination.k8s.io/v1/leases",
            "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases",
            "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}",
            "/apis/coordination.k8s.io/v1/watch/leases",
            "/apis/coordination.k8s.io/v1/watch/namespaces/{namespace}/leases",
            "/apis/coordination.k8s.io/v1/watch/namespaces/{namespace}/leases/{name}",
        ])
    );
    let item = &paths["/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"];
    let ids: Vec<(&str, &str)> = ["get", "put", "patch", "delete"]
        .iter()
        .map(|m| {
            (
                item[m]["operationId"].as_str().expect("id"),
                item[m]["x-kubernetes-action"].as_str().expect("action"),
            )
        })
        .collect();
    assert_eq!(
        ids,
        [
            ("readCoordinationV1NamespacedLease", "get"),
            ("replaceCoordinationV1NamespacedLease", "put"),
            ("patchCoordinationV1NamespacedLease", "patch"),
            ("deleteCoordinationV1NamespacedLease", "delete"),
        ]
    );
    assert_eq!(
        item["patch"]["x-kubernetes-group-version-kind"],
        json!({"group": "coordination.k8s.io", "kind": "Lease", "version": "v1"})
    );
    assert_eq!(item["get"]["tags"], json!(["coordination_v1"]));
    let collection = &paths["/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"];
    assert_eq!(
        collection["get"]["operationId"],
        "listCoordinationV1NamespacedLease"
    );
    assert_eq!(collection["get"]["x-kubernetes-action"], "list");
    assert_eq!(
        collection["delete"]["x-kubernetes-action"],
        "deletecollection"
    );
    assert_eq!(collection["post"]["x-kubernetes-action"], "post");
    let list_params: Vec<&str> = collection["get"]["parameters"]
        .as_array()
        .expect("params")
        .iter()
        .map(|p| p["name"].as_str().expect("name"))
        .collect();
    for p in [
        "labelSelector",
        "fieldSelector",
        "limit",
        "continue",
        "resourceVersion",
        "resourceVersionMatch",
        "sendInitialEvents",
        "timeoutSeconds",
        "watch",
        "allowWatchBookmarks",
    ] {
        assert!(list_params.contains(&p), "{p}");
    }
    let post_params: Vec<&str> = collection["post"]["parameters"]
        .as_array()
        .expect("params")
        .iter()
        .map(|p| p["name"].as_str().expect("name"))
        .collect();
    assert_eq!(post_params, ["dryRun", "fieldManager", "fieldValidation"]);
    assert_eq!(
        paths["/apis/coordination.k8s.io/v1/leases"]["get"]["operationId"],
        "listCoordinationV1LeaseForAllNamespaces"
    );

    // Status subresources and cluster-scoped kinds.
    let core = v3_group_version(&served(), "", "v1").expect("core");
    let status = &core["paths"]["/api/v1/namespaces/{namespace}/services/{name}/status"];
    assert_eq!(
        status["patch"]["operationId"],
        "patchCoreV1NamespacedServiceStatus"
    );
    let ns = &core["paths"]["/api/v1/namespaces/{name}"];
    assert_eq!(ns["get"]["operationId"], "readCoreV1Namespace");
    assert!(core["paths"]["/api/v1/namespaces/{name}/status"]["put"].is_object());
    assert!(core["paths"]["/api/v1/configmaps/{name}/status"].is_null());

    // Verbs limit the operations.
    let ro = [
        ServedResource::new("", "v1", "ConfigMap", "configmaps", true)
            .with_verbs(&["get", "list", "watch"]),
    ];
    let doc = v3_group_version(&ro, "", "v1").expect("doc");
    let item = &doc["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"];
    assert!(item["get"].is_object() && item["patch"].is_null() && item["delete"].is_null());
}

/// The document without JSONSchemaProps, whose field names (`$schema`, `allOf`, ...)
/// look like schema keywords.
fn without_json_schema_props(doc: &Value) -> Value {
    let mut doc = doc.clone();
    for defs in ["/components/schemas", "/definitions"] {
        if let Some(Value::Object(m)) = doc.pointer_mut(defs) {
            m.remove("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps");
        }
    }
    doc
}

#[test]
fn every_ref_resolves_in_every_v3_document() {
    let mut resources = served();
    resources.push(crontab());
    for (group, version) in all_gvs(&resources) {
        let doc = v3_group_version(&resources, &group, &version).expect("doc");
        assert_refs_resolve(&doc, "#/components/schemas/", &doc["components"]["schemas"]);
        // No draft-2020 leftovers.
        let text = without_json_schema_props(&doc).to_string();
        for leftover in ["$defs", "\"null\"", "$schema", "\"const\""] {
            assert!(!text.contains(leftover), "{leftover} in {group}/{version}");
        }
    }
}

#[test]
fn v2_refs_resolve() {
    let mut resources = served();
    resources.push(crontab());
    let doc = v2(&resources);
    assert_eq!(doc["swagger"], "2.0");
    assert_refs_resolve(&doc, "#/definitions/", &doc["definitions"]);
    let text = without_json_schema_props(&doc).to_string();
    for leftover in ["#/components", "allOf", "oneOf", "anyOf"] {
        assert!(!text.contains(leftover), "{leftover}");
    }
    // Upstream's v2 shape: `$ref` with a description beside it.
    assert_eq!(
        doc["definitions"]["io.k8s.api.core.v1.ConfigMap"]["properties"]["metadata"]["$ref"],
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    assert_eq!(
        doc["definitions"]["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["type"],
        "string"
    );
    // kubectl's v2 verifier: a PATCH with the GVK extension and fieldValidation.
    let patch = &doc["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"];
    assert_eq!(
        patch["x-kubernetes-group-version-kind"],
        json!({"group": "", "kind": "ConfigMap", "version": "v1"})
    );
    assert!(
        patch["parameters"]
            .as_array()
            .expect("params")
            .iter()
            .any(|p| p["name"] == "fieldValidation" && p["in"] == "query")
    );
    assert!(
        patch["consumes"]
            .as_array()
            .expect("consumes")
            .contains(&json!("application/strategic-merge-patch+json"))
    );
    for (g, v, k) in [
        ("", "v1", "Service"),
        ("coordination.k8s.io", "v1", "Lease"),
        ("stable.example.com", "v1", "CronTab"),
    ] {
        assert!(find_schema(&doc, &Gvk::new(g, v, k)).is_some());
    }
}

#[test]
fn configmap_schema_for_explain() {
    let doc = v3_group_version(&served(), "", "v1").expect("core");
    let cm = kind_schema(&doc, &Gvk::new("", "v1", "ConfigMap"));
    assert_eq!(
        cm["description"],
        "ConfigMap holds configuration data for pods to consume."
    );
    let data = &cm["properties"]["data"];
    assert_eq!(data["type"], "object");
    assert_eq!(data["additionalProperties"], json!({"type": "string"}));
    assert!(
        data["description"]
            .as_str()
            .expect("description")
            .starts_with("Data contains the configuration data.")
    );
    // metadata: allOf-wrapped ref with its own description; optional.
    assert_eq!(
        cm["properties"]["metadata"],
        json!({
            "allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}],
            "description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
        })
    );
    assert!(cm.get("required").is_none());
    // explain configmap.metadata.labels follows allOf/$ref.
    let meta = resolve(&doc, &cm["properties"]["metadata"]);
    assert_eq!(meta["properties"]["labels"]["type"], "object");
    // Core Event keeps upstream's required fields; events.k8s.io Event has its own.
    let ev = kind_schema(&doc, &Gvk::new("", "v1", "Event"));
    assert_eq!(ev["required"], json!(["involvedObject", "metadata"]));
    let events = v3_group_version(&served(), "events.k8s.io", "v1").expect("events");
    let ev = kind_schema(&events, &Gvk::new("events.k8s.io", "v1", "Event"));
    assert_eq!(ev["required"], json!(["eventTime"]));
    let list = kind_schema(&doc, &Gvk::new("", "v1", "ConfigMapList"));
    assert_eq!(list["required"], json!(["items"]));
    assert_eq!(
        list["properties"]["items"]["items"]["$ref"],
        "#/components/schemas/io.k8s.api.core.v1.ConfigMap"
    );
    let ios = &doc["components"]["schemas"]["io.k8s.apimachinery.pkg.util.intstr.IntOrString"];
    assert_eq!(ios["format"], "int-or-string");
}

#[test]
fn strategic_merge_metadata_as_kubectl_apply_reads_it() {
    let doc = v3_group_version(&served(), "", "v1").expect("core");
    let svc = kind_schema(&doc, &Gvk::new("", "v1", "Service"));
    let (spec, _) = lookup_struct(&doc, svc, "spec");
    let (_, ports) = lookup_struct(&doc, spec, "ports");
    assert_eq!(ports, json!({"strategy": "merge", "mergeKey": "port"}));
    let ports = &spec["properties"]["ports"];
    assert_eq!(ports["x-kubernetes-list-type"], "map");
    assert_eq!(
        ports["x-kubernetes-list-map-keys"],
        json!(["port", "protocol"])
    );
    let port = resolve(&doc, &ports["items"]);
    assert!(port["properties"]["targetPort"].is_object());

    let (meta, _) = lookup_struct(&doc, svc, "metadata");
    let (_, owners) = lookup_struct(&doc, meta, "ownerReferences");
    assert_eq!(owners, json!({"strategy": "merge", "mergeKey": "uid"}));
    let (_, finalizers) = lookup_struct(&doc, meta, "finalizers");
    assert_eq!(finalizers, json!({"strategy": "merge", "mergeKey": null}));
    assert_eq!(
        meta["properties"]["finalizers"]["x-kubernetes-list-type"],
        "set"
    );

    let sa = kind_schema(&doc, &Gvk::new("", "v1", "ServiceAccount"));
    let (_, secrets) = lookup_struct(&doc, sa, "secrets");
    assert_eq!(secrets, json!({"strategy": "merge", "mergeKey": "name"}));
    let ep = kind_schema(&doc, &Gvk::new("", "v1", "Endpoints"));
    assert_eq!(
        ep["properties"]["subsets"]["x-kubernetes-list-type"],
        "atomic"
    );
}

#[test]
fn unknown_fields_against_the_schemas() {
    let doc = v3_group_version(&served(), "", "v1").expect("core");
    let svc = Gvk::new("", "v1", "Service");
    let obj = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s", "foo": 1, "labels": {"any-key": "x"},
                     "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "n", "uid": "u", "bad": true}],
                     "managedFields": [{"manager": "m", "fieldsV1": {"f:data": {"f:x": {}}}}]},
        "spec": {
            "foo": "bar",
            "selector": {"app": "x"},
            "ports": [{"port": 80, "targetPort": "http"}, {"port": 81, "bogus": 1, "targetPort": 8080}],
        },
        "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4", "nope": 1}]}},
    });
    assert_eq!(
        unknown_fields(&doc, &svc, &obj),
        [
            "metadata.foo",
            "metadata.ownerReferences[0].bad",
            "spec.foo",
            "spec.ports[1].bogus",
            "status.loadBalancer.ingress[0].nope",
        ]
    );
    assert_eq!(
        builtin_unknown_fields(&svc, &obj).expect("built-in"),
        unknown_fields(&doc, &svc, &obj)
    );
    // The v2 document works too.
    assert_eq!(
        unknown_fields(&v2(&served()), &svc, &obj),
        unknown_fields(&doc, &svc, &obj)
    );

    let cm = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "labelz": {"a": "b"}},
        "data": {"any.key": "v", "other": "w"},
        "binaryData": {"k": "aGk="},
    });
    let cm_gvk = Gvk::new("", "v1", "ConfigMap");
    assert_eq!(unknown_fields(&doc, &cm_gvk, &cm), ["metadata.labelz"]);
    assert_eq!(
        strict_decoding_error(&unknown_fields(&doc, &cm_gvk, &cm)),
        "strict decoding error: unknown field \"metadata.labelz\""
    );
    assert!(
        unknown_fields(
            &doc,
            &cm_gvk,
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"x": "y"}})
        )
        .is_empty()
    );

    // Custom resources: preserve-unknown-fields allows anything below it.
    let resources = [crontab()];
    let crd_doc = v3_group_version(&resources, "stable.example.com", "v1").expect("crd");
    let ct = Gvk::new("stable.example.com", "v1", "CronTab");
    let obj = json!({
        "apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": "c", "bogus": 1},
        "spec": {"cronSpec": "* * * * *", "extra": {"anything": {"goes": 1}}, "nope": 2},
    });
    assert_eq!(
        unknown_fields(&crd_doc, &ct, &obj),
        ["metadata.bogus", "spec.nope"]
    );
    assert!(builtin_unknown_fields(&ct, &obj).is_none());
    // Without a schema, a custom kind accepts anything but still checks metadata.
    let loose = [ServedResource::new(
        "example.com",
        "v1",
        "Thing",
        "things",
        true,
    )];
    let loose_doc = v3_group_version(&loose, "example.com", "v1").expect("loose");
    assert_eq!(
        unknown_fields(
            &loose_doc,
            &Gvk::new("example.com", "v1", "Thing"),
            &json!({"spec": {"a": 1}, "x": 2, "metadata": {"namez": "q"}})
        ),
        ["metadata.namez"]
    );
}

#[test]
fn index_and_cached_documents_agree() {
    let mut resources = served();
    resources.push(crontab());
    let index = v3_index(&resources);
    let paths = index["paths"].as_object().expect("paths");
    let keys: BTreeSet<&str> = paths.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        BTreeSet::from([
            "api/v1",
            "apis/admissionregistration.k8s.io/v1",
            "apis/apiextensions.k8s.io/v1",
            "apis/apiregistration.k8s.io/v1",
            "apis/authentication.k8s.io/v1",
            "apis/authorization.k8s.io/v1",
            "apis/coordination.k8s.io/v1",
            "apis/discovery.k8s.io/v1",
            "apis/events.k8s.io/v1",
            "apis/rbac.authorization.k8s.io/v1",
            "apis/stable.example.com/v1",
        ])
    );
    let docs = Documents::generate(&resources);
    let cached: Value = serde_json::from_slice(docs.v3_index()).expect("index json");
    assert_eq!(cached, index);
    for (group, version) in all_gvs(&resources) {
        let path = gv_path(&group, &version);
        let url = paths[&path]["serverRelativeURL"].as_str().expect("url");
        let (prefix, hash) = url.split_once("?hash=").expect("hash");
        assert_eq!(prefix, format!("/openapi/v3/{path}"));
        assert_eq!(hash.len(), 128);
        assert!(
            hash.chars()
                .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase())
        );
        let doc = docs.v3_group_version(&path).expect("cached doc");
        assert_eq!(doc.hash, hash);
        let fresh = v3_group_version(&resources, &group, &version).expect("doc");
        assert_eq!(serde_json::to_vec(&fresh).expect("json"), doc.json);
    }
    let v2doc: Value = serde_json::from_slice(docs.v2()).expect("v2 json");
    assert_eq!(v2doc, v2(&resources));
    // A different set of resources changes the affected document's hash only.
    let fewer = &resources[1..];
    let fewer_index = v3_index(fewer);
    assert_ne!(fewer_index["paths"]["api/v1"], index["paths"]["api/v1"]);
    assert_eq!(
        fewer_index["paths"]["apis/coordination.k8s.io/v1"]["serverRelativeURL"]
            .as_str()
            .map(|u| u.len()),
        index["paths"]["apis/coordination.k8s.io/v1"]["serverRelativeURL"]
            .as_str()
            .map(|u| u.len())
    );
}

/// Fields of a protobuf message: (field number, payload) for length-delimited
/// fields, (field number, varint as bytes) otherwise.
fn pb_fields(mut b: &[u8]) -> Vec<(u64, Vec<u8>)> {
    fn varint(b: &mut &[u8]) -> u64 {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let byte = b[0];
            *b = &b[1..];
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return v;
            }
            shift += 7;
        }
    }
    let mut out = Vec::new();
    while !b.is_empty() {
        let key = varint(&mut b);
        match key & 7 {
            0 => {
                let v = varint(&mut b);
                out.push((key >> 3, v.to_le_bytes().to_vec()));
            }
            2 => {
                let len = varint(&mut b) as usize;
                out.push((key >> 3, b[..len].to_vec()));
                b = &b[len..];
            }
            wire => panic!("unexpected wire type {wire}"),
        }
    }
    out
}

fn pb_get(msg: &[u8], field: u64) -> Vec<Vec<u8>> {
    pb_fields(msg)
        .into_iter()
        .filter(|(f, _)| *f == field)
        .map(|(_, v)| v)
        .collect()
}

fn pb_str(msg: &[u8], field: u64) -> String {
    pb_get(msg, field)
        .first()
        .map(|b| String::from_utf8(b.clone()).expect("utf8"))
        .unwrap_or_default()
}

/// `repeated NamedX` → (name, value message).
fn pb_named(msg: &[u8], field: u64) -> Vec<(String, Vec<u8>)> {
    pb_get(msg, field)
        .iter()
        .map(|named| {
            (
                pb_str(named, 1),
                pb_get(named, 2).first().cloned().unwrap_or_default(),
            )
        })
        .collect()
}

/// Vendor extensions (`NamedAny{name, Any{yaml}}`) as JSON (the yaml is JSON here).
fn pb_extensions(msg: &[u8], field: u64) -> Vec<(String, Value)> {
    pb_named(msg, field)
        .into_iter()
        .map(|(name, any)| {
            let yaml = pb_str(&any, 2);
            (name, serde_json::from_str(&yaml).expect("json yaml"))
        })
        .collect()
}

#[test]
fn v2_protobuf_as_kubectl_reads_it() {
    let resources = served();
    let doc = v2(&resources);
    let pb = v2_protobuf(&doc);
    assert_eq!(Documents::generate(&resources).v2_protobuf(), pb.as_slice());
    assert_eq!(pb_str(&pb, 1), "2.0");
    let info = &pb_get(&pb, 2)[0];
    assert_eq!(pb_str(info, 1), "Kubernetes");

    // Definitions: Document.definitions(9).additional_properties(1).
    let defs = pb_named(&pb_get(&pb, 9)[0], 1);
    assert_eq!(
        defs.len(),
        doc["definitions"].as_object().expect("defs").len()
    );
    let (_, cm) = defs
        .iter()
        .find(|(n, _)| n == "io.k8s.api.core.v1.ConfigMap")
        .expect("ConfigMap");
    assert_eq!(
        pb_str(cm, 4),
        "ConfigMap holds configuration data for pods to consume."
    );
    assert_eq!(
        pb_extensions(cm, 31),
        [(
            "x-kubernetes-group-version-kind".to_string(),
            json!([{"group": "", "kind": "ConfigMap", "version": "v1"}])
        )]
    );
    // properties(25) → data: type(22) object, additionalProperties(21).schema(1).type string.
    let props = pb_named(&pb_get(cm, 25)[0], 1);
    let (_, data) = props.iter().find(|(n, _)| n == "data").expect("data");
    assert_eq!(pb_str(&pb_get(data, 22)[0], 1), "object");
    let additional = &pb_get(&pb_get(data, 21)[0], 1)[0];
    assert_eq!(pb_str(&pb_get(additional, 22)[0], 1), "string");
    let (_, metadata) = props
        .iter()
        .find(|(n, _)| n == "metadata")
        .expect("metadata");
    assert_eq!(
        pb_str(metadata, 1),
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );

    // The v2 field-validation check: paths(8).path(2) → PathItem.patch(8) with the
    // GVK extension(13) and a query parameter named fieldValidation.
    let paths = pb_named(&pb_get(&pb, 8)[0], 2);
    let (_, item) = paths
        .iter()
        .find(|(p, _)| p == "/api/v1/namespaces/{namespace}/services/{name}")
        .expect("service item path");
    let patch = &pb_get(item, 8)[0];
    assert!(pb_extensions(patch, 13).contains(&(
        "x-kubernetes-group-version-kind".to_string(),
        json!({"group": "", "kind": "Service", "version": "v1"})
    )));
    // Parameters: inline (ParametersItem.parameter(1)) or a JsonReference(2) to
    // Document.parameters(10).additional_properties(1).
    let shared = pb_named(&pb_get(&pb, 10)[0], 1);
    assert_eq!(
        shared.len(),
        doc["parameters"].as_object().expect("parameters").len()
    );
    let query_names: Vec<String> = pb_get(patch, 8)
        .iter()
        .filter_map(|item| match pb_get(item, 1).first() {
            Some(param) => Some(param.clone()),
            None => {
                let reference = pb_str(&pb_get(item, 2)[0], 1);
                let name = reference.strip_prefix("#/parameters/").expect("shared");
                shared
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, p)| p.clone())
            }
        })
        .filter_map(|param| pb_get(&param, 2).first().cloned())
        .filter_map(|non_body| pb_get(&non_body, 3).first().cloned())
        .map(|query| {
            assert_eq!(pb_str(&query, 2), "query");
            pb_str(&query, 4)
        })
        .collect();
    assert_eq!(
        query_names,
        ["dryRun", "fieldManager", "fieldValidation", "force"]
    );
    let consumes: Vec<Vec<u8>> = pb_get(patch, 7);
    assert!(consumes.contains(&b"application/strategic-merge-patch+json".to_vec()));
}

#[test]
fn generation_time() {
    let mut resources = served();
    resources.push(crontab());
    // The first call also generates the built-in schemas.
    let start = std::time::Instant::now();
    let _ = builtin_components();
    let builtin = start.elapsed();
    let start = std::time::Instant::now();
    let docs = Documents::generate(&resources);
    let all = start.elapsed();
    let v3_bytes: usize = docs
        .v3_paths()
        .filter_map(|p| docs.v3_group_version(p))
        .map(|d| d.json.len())
        .sum();
    eprintln!(
        "built-in schemas: {builtin:?}; all documents: {all:?} ({} bytes of v3 documents, {} bytes of v2)",
        v3_bytes,
        docs.v2().len()
    );
}

#[test]
fn crd_kind_schema_as_upstream_publishes_it() {
    let c = builtin_components();
    let jsp = &c["io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"];
    let props = jsp["properties"].as_object().expect("properties");
    for field in [
        "$ref",
        "$schema",
        "allOf",
        "anyOf",
        "default",
        "x-kubernetes-validations",
    ] {
        assert!(props.contains_key(field), "{field}");
    }
    // Any JSON value: `default: 1` and `items: [..]` must pass kubectl's validation.
    for name in ["JSON", "JSONSchemaPropsOrArray", "JSONSchemaPropsOrBool"] {
        let s = &c[&format!("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.{name}")];
        assert_eq!(
            s.as_object().map(|m| m.keys().collect::<Vec<_>>()),
            Some(vec![&"description".to_string()]),
            "{name}"
        );
    }
}

/// Resources with every kind of path kube-apiserver documents: subresources
/// read and written (status, scale, approval), created (eviction, token),
/// connected to (exec, proxy), read with options (log), a DELETE answering the
/// object, and a CRD's version with status and scale.
fn with_subresources() -> Vec<ServedResource> {
    let sub = |name: &str, gvk: Gvk, verbs: &[&str]| Subresource::new(name, gvk, verbs);
    let core = |kind: &str| Gvk::new("", "v1", kind);
    let proxy = ["create", "delete", "get", "patch", "update"];
    vec![
        ServedResource::new("", "v1", "Pod", "pods", true)
            .with_status()
            .deletes_returning_object()
            .with_subresource(sub(
                "eviction",
                Gvk::new("policy", "v1", "Eviction"),
                &["create"],
            ))
            .with_subresource(sub("exec", core("PodExecOptions"), &["create", "get"]))
            .with_subresource(sub("log", core("Pod"), &["get"]))
            .with_subresource(sub("proxy", core("PodProxyOptions"), &proxy)),
        ServedResource::new(
            "",
            "v1",
            "ReplicationController",
            "replicationcontrollers",
            true,
        )
        .with_status()
        .with_subresource(Subresource::scale()),
        ServedResource::new(
            "certificates.k8s.io",
            "v1",
            "CertificateSigningRequest",
            "certificatesigningrequests",
            false,
        )
        .with_status()
        .with_subresource(sub(
            "approval",
            Gvk::new("certificates.k8s.io", "v1", "CertificateSigningRequest"),
            &["get", "patch", "update"],
        )),
        crontab().with_subresource(Subresource::scale()),
    ]
}

fn param_names(params: &Value) -> Vec<&str> {
    params
        .as_array()
        .map(|a| a.iter().filter_map(|p| p["name"].as_str()).collect())
        .unwrap_or_default()
}

fn keys(v: &Value) -> Vec<&str> {
    v.as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

/// Values read from kube-apiserver 1.37.2's documents
/// (`/openapi/v3/apis/coordination.k8s.io/v1`, `/openapi/v3/api/v1`, ...).
#[test]
fn paths_as_kube_apiserver_1_37_2_publishes_them() {
    let doc = v3_group_version(&served(), "coordination.k8s.io", "v1").expect("doc");
    let paths = &doc["paths"];
    let list_params = [
        "allowWatchBookmarks",
        "continue",
        "fieldSelector",
        "labelSelector",
        "limit",
        "resourceVersion",
        "resourceVersionMatch",
        "sendInitialEvents",
        "shardSelector",
        "timeoutSeconds",
        "watch",
    ];
    let watch_media = [
        "application/json",
        "application/json;stream=watch",
        "application/vnd.kubernetes.protobuf",
        "application/vnd.kubernetes.protobuf;stream=watch",
        "application/yaml",
    ];

    // The deprecated watch paths: one GET each, the list parameters on the path.
    let watch = &paths["/apis/coordination.k8s.io/v1/watch/namespaces/{namespace}/leases/{name}"];
    assert_eq!(keys(watch), ["get", "parameters"]);
    assert_eq!(
        watch["get"]["operationId"],
        "watchCoordinationV1NamespacedLease"
    );
    assert_eq!(
        watch["get"]["description"],
        "watch changes to an object of kind Lease. deprecated: use the 'watch' parameter with a list operation instead, filtered to a single item with the 'fieldSelector' parameter."
    );
    assert_eq!(watch["get"]["x-kubernetes-action"], "watch");
    assert_eq!(
        watch["get"]["x-kubernetes-group-version-kind"],
        json!({"group": "coordination.k8s.io", "kind": "Lease", "version": "v1"})
    );
    let mut expected: Vec<&str> = list_params.to_vec();
    expected.extend(["name", "namespace", "pretty"]);
    expected.sort_unstable();
    assert_eq!(param_names(&watch["parameters"]), expected);
    assert!(watch["get"].get("parameters").is_none());
    let ok = &watch["get"]["responses"]["200"];
    assert_eq!(keys(&ok["content"]), watch_media);
    assert_eq!(
        ok["content"]["application/json;stream=watch"]["schema"]["$ref"],
        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent"
    );
    let event = &doc["components"]["schemas"]["io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent"];
    assert_eq!(event["required"], json!(["type", "object"]));
    for (path, id, description) in [
        (
            "/apis/coordination.k8s.io/v1/watch/namespaces/{namespace}/leases",
            "watchCoordinationV1NamespacedLeaseList",
            "watch individual changes to a list of Lease. deprecated: use the 'watch' parameter with a list operation instead.",
        ),
        (
            "/apis/coordination.k8s.io/v1/watch/leases",
            "watchCoordinationV1LeaseListForAllNamespaces",
            "watch individual changes to a list of Lease. deprecated: use the 'watch' parameter with a list operation instead.",
        ),
    ] {
        let get = &paths[path]["get"];
        assert_eq!(get["operationId"], id);
        assert_eq!(get["description"], description);
        assert_eq!(get["x-kubernetes-action"], "watchlist");
    }

    // 1.37's list parameters and descriptions.
    let collection = &paths["/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"];
    assert_eq!(
        param_names(&collection["parameters"]),
        ["namespace", "pretty"]
    );
    assert_eq!(param_names(&collection["get"]["parameters"]), list_params);
    let list = collection["get"]["parameters"].as_array().expect("params");
    let continue_text = list[1]["description"].as_str().expect("continue");
    assert!(continue_text.starts_with(
        "The continue option should be set when retrieving more results from the server. Since this value is server defined, clients may only use the continue value from a previous query result with identical query parameters (except for the value of continue) and the server may reject a continue value it does not recognize. If the specified continue value is no longer valid whether due to expiration (generally five to fifteen minutes) or a configuration change on the server, the server will respond with a 410 ResourceExpired error together with a continue token. If the client needs a consistent list, it must restart their list without the continue field. Otherwise, the client may send another list request with the token received with the 410 error"
    ));
    assert!(list[8]["description"]
        .as_str()
        .expect("shardSelector")
        .starts_with("shardSelector restricts the list of returned objects using a CEL-based shard selector expression."));
    // A collection delete: the delete and list options, sorted by name.
    assert_eq!(
        param_names(&collection["delete"]["parameters"]),
        [
            "continue",
            "dryRun",
            "fieldSelector",
            "gracePeriodSeconds",
            "ignoreStoreReadErrorWithClusterBreakingPotential",
            "labelSelector",
            "limit",
            "orphanDependents",
            "propagationPolicy",
            "resourceVersion",
            "resourceVersionMatch",
            "sendInitialEvents",
            "shardSelector",
            "timeoutSeconds",
        ]
    );
    assert_eq!(
        keys(&collection["post"]["responses"]["201"]["content"]),
        [
            "application/json",
            "application/vnd.kubernetes.protobuf",
            "application/yaml"
        ]
    );

    // Subresources.
    let resources = with_subresources();
    let certificates = v3_group_version(&resources, "certificates.k8s.io", "v1").expect("doc");
    let approval = &certificates["paths"]["/apis/certificates.k8s.io/v1/certificatesigningrequests/{name}/approval"];
    assert_eq!(keys(approval), ["get", "parameters", "patch", "put"]);
    assert_eq!(param_names(&approval["parameters"]), ["name", "pretty"]);
    for (method, id, description) in [
        (
            "get",
            "readCertificatesV1CertificateSigningRequestApproval",
            "read approval of the specified CertificateSigningRequest",
        ),
        (
            "put",
            "replaceCertificatesV1CertificateSigningRequestApproval",
            "replace approval of the specified CertificateSigningRequest",
        ),
        (
            "patch",
            "patchCertificatesV1CertificateSigningRequestApproval",
            "partially update approval of the specified CertificateSigningRequest",
        ),
    ] {
        assert_eq!(approval[method]["operationId"], id);
        assert_eq!(approval[method]["description"], description);
    }

    let core = v3_group_version(&resources, "", "v1").expect("core");
    let paths = &core["paths"];
    let eviction = &paths["/api/v1/namespaces/{namespace}/pods/{name}/eviction"];
    assert_eq!(keys(eviction), ["parameters", "post"]);
    assert_eq!(
        param_names(&eviction["parameters"]),
        [
            "dryRun",
            "fieldManager",
            "fieldValidation",
            "name",
            "namespace",
            "pretty"
        ]
    );
    assert_eq!(
        eviction["parameters"][3]["description"],
        "name of the Eviction"
    );
    assert_eq!(
        eviction["post"]["operationId"],
        "createCoreV1NamespacedPodEviction"
    );
    assert_eq!(eviction["post"]["description"], "create eviction of a Pod");
    assert_eq!(
        eviction["post"]["x-kubernetes-group-version-kind"],
        json!({"group": "policy", "kind": "Eviction", "version": "v1"})
    );
    let exec = &paths["/api/v1/namespaces/{namespace}/pods/{name}/exec"];
    assert_eq!(keys(exec), ["get", "parameters", "post"]);
    assert_eq!(
        param_names(&exec["parameters"]),
        [
            "command",
            "container",
            "name",
            "namespace",
            "stderr",
            "stdin",
            "stdout",
            "tty"
        ]
    );
    assert_eq!(
        exec["get"]["operationId"],
        "connectCoreV1GetNamespacedPodExec"
    );
    assert_eq!(
        exec["post"]["description"],
        "connect POST requests to exec of Pod"
    );
    assert_eq!(exec["post"]["x-kubernetes-action"], "connect");
    assert_eq!(
        exec["get"]["responses"]["200"],
        json!({"content": {"*/*": {"schema": {"type": "string"}}}, "description": "OK"})
    );
    let proxy = &paths["/api/v1/namespaces/{namespace}/pods/{name}/proxy/{path}"];
    assert_eq!(
        keys(proxy),
        [
            "delete",
            "get",
            "head",
            "options",
            "parameters",
            "patch",
            "post",
            "put"
        ]
    );
    assert_eq!(
        proxy["head"]["operationId"],
        "connectCoreV1HeadNamespacedPodProxyWithPath"
    );
    let log = &paths["/api/v1/namespaces/{namespace}/pods/{name}/log"];
    assert_eq!(log["get"]["operationId"], "readCoreV1NamespacedPodLog");
    assert_eq!(
        keys(&log["get"]["responses"]["200"]["content"]),
        [
            "application/json",
            "application/vnd.kubernetes.protobuf",
            "application/yaml",
            "text/plain"
        ]
    );
    assert!(param_names(&log["parameters"]).contains(&"sinceSeconds"));
    let scale = &paths["/api/v1/namespaces/{namespace}/replicationcontrollers/{name}/scale"];
    assert_eq!(
        scale["put"]["x-kubernetes-group-version-kind"],
        json!({"group": "autoscaling", "kind": "Scale", "version": "v1"})
    );
    assert_eq!(
        scale["put"]["requestBody"]["content"]["*/*"]["schema"]["$ref"],
        "#/components/schemas/io.k8s.api.autoscaling.v1.Scale"
    );
    // Pods answer a DELETE with the pod.
    assert_eq!(
        paths["/api/v1/namespaces/{namespace}/pods/{name}"]["delete"]["responses"]["202"]["content"]
            ["application/json"]["schema"]["$ref"],
        "#/components/schemas/io.k8s.api.core.v1.Pod"
    );

    // A CRD's version, as apiextensions-apiserver documents it.
    let crd = v3_group_version(&resources, "stable.example.com", "v1").expect("crd");
    let paths = &crd["paths"];
    assert_eq!(
        keys(paths),
        [
            "/apis/stable.example.com/v1/crontabs",
            "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs",
            "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}",
            "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}/scale",
            "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}/status",
        ]
    );
    let collection = &paths["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs"];
    assert_eq!(
        collection["get"]["description"],
        "list objects of kind CronTab"
    );
    assert_eq!(
        param_names(&collection["delete"]["parameters"]),
        list_params
    );
    assert!(collection["delete"].get("requestBody").is_none());
    let item = &paths["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}"];
    assert_eq!(param_names(&item["get"]["parameters"]), ["resourceVersion"]);
    assert_eq!(keys(&item["patch"]["responses"]), ["200", "401"]);
    assert_eq!(
        keys(&item["patch"]["requestBody"]["content"]),
        [
            "application/apply-patch+yaml",
            "application/json-patch+json",
            "application/merge-patch+json"
        ]
    );
    assert_eq!(
        keys(&item["put"]["requestBody"]["content"]),
        ["application/json", "application/yaml"]
    );
    let scale = &paths["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}/scale"];
    assert_eq!(
        scale["get"]["operationId"],
        "readStableExampleComV1NamespacedCronTabScale"
    );
    assert_eq!(
        scale["get"]["x-kubernetes-group-version-kind"],
        json!({"group": "stable.example.com", "kind": "CronTab", "version": "v1"})
    );
}

/// kube-apiserver 1.37.2's `/openapi/v2` shares its parameters under names
/// hashed from their JSON: equal names are equal parameters, descriptions
/// included.
#[test]
fn v2_shares_parameters_as_kube_apiserver_1_37_2() {
    let mut resources = served();
    resources.extend(with_subresources());
    let doc = v2(&resources);
    let names: BTreeSet<&str> = keys(&doc["parameters"]).into_iter().collect();
    for name in [
        "allowWatchBookmarks-HC2hJt-J",
        "body-2Y1dVQaQ",
        "body-78PwaGsr",
        "command-Py3eQybp",
        "container-1GeXxFDC",
        "container-i5dOmRiM",
        "continue-QfD61s0i",
        "fieldManager-7c6nTn1T",
        "fieldManager-Qy4HdaTW",
        "fieldSelector-xIcQKXFG",
        "follow-9OIXh_2R",
        "force-tOGGb0Yi",
        "gracePeriodSeconds--K5HaBOS",
        "ignoreStoreReadErrorWithClusterBreakingPotential-QbNkfIqj",
        "insecureSkipTLSVerifyBackend-gM00jVbe",
        "labelSelector-5Zw57w4C",
        "limit-1NfNmdNH",
        "limitBytes-zwd1RXuc",
        "namespace-vgWSWtn3",
        "orphanDependents-uRB25kX5",
        "path-oPbzgLUj",
        "path-z6Ciiujn",
        "pretty-tJGM1-ng",
        "previous-1jxDPu3y",
        "propagationPolicy-6jk3prlO",
        "resourceVersion-5WAnf1kx",
        "resourceVersionMatch-t8XhRHeC",
        "sendInitialEvents-rLXlEK_k",
        "shardSelector-Kgyki_3_",
        "sinceSeconds-vE2NLdnP",
        "stderr-W_1TNlWc",
        "stdin-PSzNhyUC",
        "stdout--EZLRwV1",
        "stream-l-48cgXv",
        "tailLines-9xQLWHMV",
        "timeoutSeconds-yvYezaOC",
        "timestamps-c17fW1w_",
        "tty-s0flW37O",
        "watch-XNNPZGbK",
    ] {
        assert!(names.contains(name), "{name} not in {names:?}");
    }
    // kubectl looks for these in the operation itself.
    let patch =
        &doc["paths"]["/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"]["patch"];
    assert_eq!(
        patch["parameters"],
        json!([
            {"$ref": "#/parameters/body-78PwaGsr"},
            {
                "description": "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed",
                "in": "query", "name": "dryRun", "type": "string", "uniqueItems": true,
            },
            {"$ref": "#/parameters/fieldManager-7c6nTn1T"},
            patch["parameters"][3].clone(),
            {"$ref": "#/parameters/force-tOGGb0Yi"},
        ])
    );
    assert_eq!(patch["parameters"][3]["name"], "fieldValidation");
    assert_eq!(
        patch["consumes"],
        json!([
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
            "application/apply-patch+yaml"
        ])
    );
    // Discovery paths outside the group-versions.
    let get = |path: &str| doc["paths"][path]["get"]["operationId"].clone();
    assert_eq!(get("/api/"), "getCoreAPIVersions");
    assert_eq!(get("/apis/"), "getAPIVersions");
    assert_eq!(get("/apis/coordination.k8s.io/"), "getCoordinationAPIGroup");
    assert_eq!(get("/version/"), "getCodeVersion");
    assert!(doc["paths"].get("/apis/stable.example.com/").is_none());
    assert!(doc["paths"].get("/apis/stable.example.com/v1/").is_none());
}
