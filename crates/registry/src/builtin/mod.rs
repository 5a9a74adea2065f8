//! The built-in resources kubext serves around extension APIs.

pub mod admissionregistration;
pub mod apiregistration;
mod certificates;
mod configmaps;
mod core;
pub mod defaults;
mod dra;
mod events;
mod field_labels;
mod flowcontrol;
mod gojson;
mod hpa;
mod json_fields;
pub mod kinds;
mod pod_certificates;
mod pod_ephemeral_containers;
mod pod_resize;
pub mod printers;
pub mod rbac;
mod secrets;
pub mod service_allocation;
mod services;
mod storage;
mod strategy_rules;
mod trust_bundles;
pub mod validation;
pub mod webhook_configurations;

pub use service_allocation::{RangeError, ServiceAllocator, ServiceRanges};

use std::sync::Arc;

use apimachinery::validation::name_is_dns_label;

use crate::resource::{ResourceType, StorageVersion, Strategy, TableColumn};

fn resource(
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
    namespaced: bool,
    strategy: impl Strategy,
) -> ResourceType {
    let mut r = ResourceType::new(group, version, kind, plural, namespaced, Box::new(strategy));
    (r.field_labels, r.selectable_fields) = field_labels::field_labels(group, kind);
    r
}

fn short(mut r: ResourceType, names: &[&str]) -> ResourceType {
    r.short_names = names.iter().map(|s| s.to_string()).collect();
    r
}

fn columns(mut r: ResourceType, columns: Vec<TableColumn>) -> ResourceType {
    r.columns = columns;
    r
}

/// Every built-in resource type, in discovery order within each group, with the
/// default Service ranges.
pub fn resource_types() -> Vec<Arc<ResourceType>> {
    resource_types_with(ServiceRanges::default())
}

/// Every built-in resource type; Services allocate from `service_ranges`.
pub fn resource_types_with(service_ranges: ServiceRanges) -> Vec<Arc<ResourceType>> {
    let mut namespaces = resource("", "v1", "Namespace", "namespaces", false, core::Namespaces);
    namespaces.has_status = true;
    namespaces.return_deleted_object = true;
    namespaces.name_validation = name_is_dns_label;
    // Upstream's namespace storage has no collection deleter.
    namespaces.verbs = &[
        "create", "delete", "get", "list", "patch", "update", "watch",
    ];
    // `PUT namespaces/{name}/finalize` (upstream's `FinalizeREST`).
    namespaces.extra_subresources = &[crate::ExtraSubresource {
        name: "finalize",
        group: "",
        version: "v1",
        kind: "Namespace",
        verbs: &["update"],
    }];
    let namespaces = columns(
        short(namespaces, &["ns"]),
        vec![TableColumn::new(
            "Status",
            "string",
            "The status of the namespace",
        )],
    );

    let configmaps = columns(
        short(
            resource(
                "",
                "v1",
                "ConfigMap",
                "configmaps",
                true,
                configmaps::ConfigMaps,
            ),
            &["cm"],
        ),
        vec![TableColumn::new("Data", "string", "Number of data entries")],
    );
    let secrets = columns(
        resource("", "v1", "Secret", "secrets", true, secrets::Secrets),
        vec![
            TableColumn::new("Type", "string", "The type of the secret"),
            TableColumn::new("Data", "string", "The number of entries in the secret"),
        ],
    );
    // Upstream 1.37 prints ServiceAccounts with Name and Age only.
    let mut serviceaccounts = short(
        resource(
            "",
            "v1",
            "ServiceAccount",
            "serviceaccounts",
            true,
            core::ServiceAccounts,
        ),
        &["sa"],
    );
    serviceaccounts.return_deleted_object = true;
    serviceaccounts.extra_subresources = &[crate::ExtraSubresource {
        name: "token",
        group: "authentication.k8s.io",
        version: "v1",
        kind: "TokenRequest",
        verbs: &["create"],
    }];
    let events = columns(
        short(
            resource("", "v1", "Event", "events", true, core::Events),
            &["ev"],
        ),
        core::EVENT_COLUMNS.to_vec(),
    );
    let mut events = events;
    events.age_column = false;
    let mut services = columns(
        short(
            resource("", "v1", "Service", "services", true, services::Services),
            &["svc"],
        ),
        core::SERVICE_COLUMNS.to_vec(),
    );
    services.has_status = true;
    services.return_deleted_object = true;
    let service_allocator = Arc::new(ServiceAllocator::new(service_ranges));
    services.allocator = Some(service_allocator.clone());
    services.name_validation = apimachinery::validation::name_is_dns1035_label;
    services.categories = vec!["all".into()];
    services.extra_subresources = kinds::SERVICE_SUBRESOURCES;
    let services = services;
    let endpoints = columns(
        short(
            resource("", "v1", "Endpoints", "endpoints", true, core::Endpoints),
            &["ep"],
        ),
        vec![TableColumn::new("Endpoints", "string", "Endpoints")],
    );
    let mut endpoints = endpoints;
    endpoints.singular = "endpoints".into();
    let mut endpointslices = columns(
        resource(
            "discovery.k8s.io",
            "v1",
            "EndpointSlice",
            "endpointslices",
            true,
            core::EndpointSlices,
        ),
        vec![
            TableColumn::new("AddressType", "string", "The address type"),
            TableColumn::new("Ports", "string", "The ports"),
            TableColumn::new("Endpoints", "string", "The endpoints"),
        ],
    );
    // Upstream's strategy starts the generation at 1 and bumps it on every change.
    endpointslices.tracks_generation = true;
    let mut events_v1 = resource(
        "events.k8s.io",
        "v1",
        "Event",
        "events",
        true,
        events::EventsV1,
    );
    events_v1.short_names = vec!["ev".into()];
    events_v1.columns = core::EVENT_COLUMNS.to_vec();
    events_v1.age_column = false;
    let leases = columns(
        resource(
            "coordination.k8s.io",
            "v1",
            "Lease",
            "leases",
            true,
            core::Leases,
        ),
        vec![TableColumn::new(
            "Holder",
            "string",
            "The holder of the lease",
        )],
    );
    let mut apiservices = columns(
        resource(
            "apiregistration.k8s.io",
            "v1",
            "APIService",
            "apiservices",
            false,
            apiregistration::ApiServices,
        ),
        apiregistration::COLUMNS.to_vec(),
    );
    apiservices.has_status = true;
    apiservices.allow_unconditional_update = false;
    apiservices.storage_path = "apiregistration.k8s.io/apiservices".into();
    apiservices.categories = vec!["api-extensions".into()];
    apiservices.name_validation = apimachinery::validation::name_is_path_segment;
    let rbac_type = |kind: &str, plural: &str, namespaced: bool| {
        let mut r = if kind.ends_with("Binding") {
            columns(
                resource(
                    rbac::GROUP,
                    "v1",
                    kind,
                    plural,
                    namespaced,
                    rbac::Bindings { namespaced },
                ),
                rbac::binding_columns(namespaced),
            )
        } else {
            let mut r = columns(
                resource(
                    rbac::GROUP,
                    "v1",
                    kind,
                    plural,
                    namespaced,
                    rbac::Roles { namespaced },
                ),
                rbac::role_columns(),
            );
            r.age_column = false;
            r
        };
        r.name_validation = apimachinery::validation::name_is_path_segment;
        r
    };
    let rbac_types = [
        rbac_type("ClusterRoleBinding", "clusterrolebindings", false),
        rbac_type("ClusterRole", "clusterroles", false),
        rbac_type("RoleBinding", "rolebindings", true),
        rbac_type("Role", "roles", true),
    ];
    let reviews = [
        ("authentication.k8s.io", "TokenReview", "tokenreviews"),
        (
            "authentication.k8s.io",
            "SelfSubjectReview",
            "selfsubjectreviews",
        ),
        (
            "authorization.k8s.io",
            "SubjectAccessReview",
            "subjectaccessreviews",
        ),
        (
            "authorization.k8s.io",
            "SelfSubjectAccessReview",
            "selfsubjectaccessreviews",
        ),
        (
            "authorization.k8s.io",
            "SelfSubjectRulesReview",
            "selfsubjectrulesreviews",
        ),
        (
            "authorization.k8s.io",
            "LocalSubjectAccessReview",
            "localsubjectaccessreviews",
        ),
    ]
    .map(|(group, kind, plural)| {
        let namespaced = kind == "LocalSubjectAccessReview";
        let mut r = resource(group, "v1", kind, plural, namespaced, Reviews);
        r.verbs = &["create"];
        r.storage_version = StorageVersion::None;
        r
    });
    let mut policies = columns(
        resource(
            admissionregistration::GROUP,
            "v1",
            "ValidatingAdmissionPolicy",
            "validatingadmissionpolicies",
            false,
            admissionregistration::Policies,
        ),
        admissionregistration::policy_columns(),
    );
    policies.has_status = true;
    policies.tracks_generation = true;
    policies.categories = vec!["api-extensions".into()];
    let mut policy_bindings = columns(
        resource(
            admissionregistration::GROUP,
            "v1",
            "ValidatingAdmissionPolicyBinding",
            "validatingadmissionpolicybindings",
            false,
            admissionregistration::PolicyBindings,
        ),
        admissionregistration::binding_columns(),
    );
    // Upstream's strategies start bindings at generation 1 and bump it on spec changes.
    policy_bindings.tracks_generation = true;
    policy_bindings.categories = vec!["api-extensions".into()];
    let mut mutating_policies = columns(
        resource(
            admissionregistration::GROUP,
            "v1",
            "MutatingAdmissionPolicy",
            "mutatingadmissionpolicies",
            false,
            admissionregistration::MutatingPolicies,
        ),
        admissionregistration::mutating_policy_columns(),
    );
    mutating_policies.tracks_generation = true;
    mutating_policies.categories = vec!["api-extensions".into()];
    let mut mutating_policy_bindings = columns(
        resource(
            admissionregistration::GROUP,
            "v1",
            "MutatingAdmissionPolicyBinding",
            "mutatingadmissionpolicybindings",
            false,
            admissionregistration::MutatingPolicyBindings,
        ),
        admissionregistration::binding_columns(),
    );
    mutating_policy_bindings.tracks_generation = true;
    mutating_policy_bindings.categories = vec!["api-extensions".into()];
    let webhook_configurations = [
        ("ValidatingWebhookConfiguration", false),
        ("MutatingWebhookConfiguration", true),
    ]
    .map(|(kind, mutating)| {
        let mut r = columns(
            resource(
                admissionregistration::GROUP,
                "v1",
                kind,
                &format!("{}s", kind.to_lowercase()),
                false,
                webhook_configurations::WebhookConfigurations { mutating },
            ),
            webhook_configurations::columns(),
        );
        r.tracks_generation = true;
        r.categories = vec!["api-extensions".into()];
        r
    });
    let mut csrs = short(
        resource(
            "certificates.k8s.io",
            "v1",
            "CertificateSigningRequest",
            "certificatesigningrequests",
            false,
            certificates::Csrs,
        ),
        &["csr"],
    );
    csrs.has_status = true;
    csrs.storage_path = "certificatesigningrequests".into();
    if let Some(printer) = printers::printer("certificates.k8s.io", "CertificateSigningRequest") {
        kinds::use_printer(&mut csrs, printer);
    }
    csrs.extra_subresources = &[crate::ExtraSubresource {
        name: "approval",
        group: "certificates.k8s.io",
        version: "v1",
        kind: "CertificateSigningRequest",
        verbs: &["get", "patch", "update"],
    }];
    let types = [
        policies,
        policy_bindings,
        mutating_policies,
        mutating_policy_bindings,
        apiservices,
        namespaces,
        configmaps,
        secrets,
        serviceaccounts,
        events,
        services,
        endpoints,
        endpointslices,
        events_v1,
        leases,
        csrs,
    ];
    let types: Vec<Arc<ResourceType>> = types
        .into_iter()
        .chain(webhook_configurations)
        .chain(reviews)
        .chain(rbac_types)
        .chain(kinds::resource_types())
        .chain([hpa::resource_type()])
        .map(|mut t| {
            t.allow_create_on_update = strategy_rules::creates_on_update(&t.group, &t.kind);
            if let Some((group, version)) = stored_elsewhere(&t.group, &t.version, &t.kind) {
                t.storage_version = StorageVersion::Other {
                    group: group.into(),
                    version: version.into(),
                };
            }
            Arc::new(t)
        })
        .collect();
    if let Some(ip_addresses) = types
        .iter()
        .find(|t| t.group == "networking.k8s.io" && t.plural == "ipaddresses")
    {
        service_allocator.use_ip_addresses(ip_addresses.clone());
    }
    types
}

/// Built-in kinds a default kube-apiserver 1.37 stores in another
/// group-version than the one served (`storagebackend` encoding versions:
/// their discovery hashes name it).
const STORED_ELSEWHERE: &[(&str, &str, &str, &str, &str)] = &[
    ("events.k8s.io", "v1", "Event", "", "v1"),
    (
        "autoscaling",
        "v1",
        "HorizontalPodAutoscaler",
        "autoscaling",
        "v2",
    ),
    (
        "certificates.k8s.io",
        "v1",
        "ClusterTrustBundle",
        "certificates.k8s.io",
        "v1beta1",
    ),
    (
        "certificates.k8s.io",
        "v1",
        "PodCertificateRequest",
        "certificates.k8s.io",
        "v1beta1",
    ),
    (
        "resource.k8s.io",
        "v1",
        "DeviceTaintRule",
        "resource.k8s.io",
        "v1beta2",
    ),
    (
        "storagemigration.k8s.io",
        "v1",
        "StorageVersionMigration",
        "storagemigration.k8s.io",
        "v1beta1",
    ),
];

fn stored_elsewhere(
    group: &str,
    version: &str,
    kind: &str,
) -> Option<(&'static str, &'static str)> {
    STORED_ELSEWHERE
        .iter()
        .find(|(g, v, k, ..)| (*g, *v, *k) == (group, version, kind))
        .map(|(.., group, version)| (*group, *version))
}

/// Reviews are answered per request (by the server), never stored.
struct Reviews;

impl Strategy for Reviews {}

/// Typed objects from the JSON the unit tests write.
#[cfg(test)]
pub(crate) mod typed_objects {
    use apimachinery::DynamicObject;
    use serde_json::Value;

    /// `object` as the store hands it to a strategy.
    pub fn typed(object: &Value) -> DynamicObject {
        DynamicObject::from_value(object.clone(), "metadata.").expect("metadata decodes")
    }

    /// Run `f` on `object` typed, and write the result back as JSON.
    pub fn with_typed<R>(object: &mut Value, f: impl FnOnce(&mut DynamicObject) -> R) -> R {
        let mut typed = typed(object);
        let result = f(&mut typed);
        *object = typed.into_value();
        result
    }
}
