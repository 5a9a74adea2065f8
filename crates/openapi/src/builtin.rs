//! Component schemas of the built-in kinds, generated once from k8s-openapi's
//! `schemars` implementations and shaped like upstream's documents.

use std::sync::OnceLock;

use k8s_openapi::api::{
    admissionregistration, apps, authentication, authorization, autoscaling, batch, certificates,
    coordination, core::v1 as core, discovery, events, flowcontrol, networking, node, policy, rbac,
    resource, scheduling, storage, storagemigration,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration;
use schemars::JsonSchema;
use schemars::SchemaGenerator;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use crate::Gvk;
use crate::convert::{V3_PREFIX, to_oas3};

pub(crate) const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
pub(crate) const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
pub(crate) const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
pub(crate) const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
pub(crate) const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
pub(crate) const API_RESOURCE_LIST: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList";
pub(crate) const API_GROUP: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroup";
pub(crate) const API_GROUP_LIST: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroupList";
pub(crate) const API_VERSIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIVersions";
pub(crate) const VERSION_INFO: &str = "io.k8s.apimachinery.pkg.version.Info";
pub(crate) const WATCH_EVENT: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent";
const RAW_EXTENSION: &str = "io.k8s.apimachinery.pkg.runtime.RawExtension";
pub(crate) const SCALE: &str = "io.k8s.api.autoscaling.v1.Scale";
const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";

pub(crate) const API_VERSION_DESC: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
pub(crate) const KIND_DESC: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
pub(crate) const OBJECT_META_DESC: &str = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
pub(crate) const LIST_META_DESC: &str = "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

/// A built-in kind and the names of its component schemas.
#[derive(Debug, Clone)]
pub struct BuiltinKind {
    pub gvk: Gvk,
    /// e.g. `io.k8s.api.core.v1.ConfigMap`.
    pub schema: String,
    /// e.g. `io.k8s.api.core.v1.ConfigMapList`.
    pub list_schema: String,
}

pub(crate) struct Builtin {
    pub(crate) components: Map<String, Value>,
    pub(crate) kinds: Vec<BuiltinKind>,
    /// Kinds that are not resources but what subresources read and write
    /// (`autoscaling/v1` Scale, `policy/v1` Eviction, ...): GVK and schema.
    pub(crate) objects: Vec<(Gvk, String)>,
}

static BUILTIN: OnceLock<Builtin> = OnceLock::new();

pub(crate) fn builtin() -> &'static Builtin {
    BUILTIN.get_or_init(generate)
}

/// The OpenAPI v3 component schemas (name → schema, refs to
/// `#/components/schemas/`) of every built-in kind, its list, and the meta types
/// they reference. Generated on first use.
pub fn builtin_components() -> &'static Map<String, Value> {
    &builtin().components
}

/// The built-in kinds with schemas.
pub fn builtin_kinds() -> &'static [BuiltinKind] {
    &builtin().kinds
}

pub(crate) fn find_builtin(gvk: &Gvk) -> Option<&'static BuiltinKind> {
    builtin().kinds.iter().find(|k| &k.gvk == gvk)
}

/// The component schema of a built-in kind, resource or not.
pub(crate) fn find_component(gvk: &Gvk) -> Option<&'static str> {
    let b = builtin();
    find_builtin(gvk).map(|k| k.schema.as_str()).or_else(|| {
        b.objects
            .iter()
            .find(|(g, _)| g == gvk)
            .map(|(_, s)| s.as_str())
    })
}

struct Roots {
    generator: SchemaGenerator,
    kinds: Vec<BuiltinKind>,
    objects: Vec<(Gvk, String)>,
}

impl Roots {
    fn kind<T: JsonSchema>(&mut self, group: &str, version: &str, kind: &str) {
        self.generator.subschema_for::<T>();
        let schema = T::schema_name().into_owned();
        self.kinds.push(BuiltinKind {
            gvk: Gvk::new(group, version, kind),
            list_schema: format!("{schema}List"),
            schema,
        });
    }

    /// A kind that is no resource (no list).
    fn object<T: JsonSchema>(&mut self, group: &str, version: &str, kind: &str) {
        self.generator.subschema_for::<T>();
        self.objects.push((
            Gvk::new(group, version, kind),
            T::schema_name().into_owned(),
        ));
    }

    fn other<T: JsonSchema>(&mut self) {
        self.generator.subschema_for::<T>();
    }
}

/// The kinds of registry's built-in kinds table (`data/builtin-kinds.tsv`).
fn table_kinds(roots: &mut Roots) {
    roots.kind::<core::ComponentStatus>("", "v1", "ComponentStatus");
    roots.kind::<core::LimitRange>("", "v1", "LimitRange");
    roots.kind::<core::Node>("", "v1", "Node");
    roots.kind::<core::PersistentVolumeClaim>("", "v1", "PersistentVolumeClaim");
    roots.kind::<core::PersistentVolume>("", "v1", "PersistentVolume");
    roots.kind::<core::Pod>("", "v1", "Pod");
    roots.kind::<core::PodTemplate>("", "v1", "PodTemplate");
    roots.kind::<core::ReplicationController>("", "v1", "ReplicationController");
    roots.kind::<core::ResourceQuota>("", "v1", "ResourceQuota");
    roots.kind::<apps::v1::ControllerRevision>("apps", "v1", "ControllerRevision");
    roots.kind::<apps::v1::DaemonSet>("apps", "v1", "DaemonSet");
    roots.kind::<apps::v1::Deployment>("apps", "v1", "Deployment");
    roots.kind::<apps::v1::ReplicaSet>("apps", "v1", "ReplicaSet");
    roots.kind::<apps::v1::StatefulSet>("apps", "v1", "StatefulSet");
    roots.kind::<autoscaling::v2::HorizontalPodAutoscaler>(
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
    );
    roots.kind::<autoscaling::v1::HorizontalPodAutoscaler>(
        "autoscaling",
        "v1",
        "HorizontalPodAutoscaler",
    );
    roots.kind::<batch::v1::CronJob>("batch", "v1", "CronJob");
    roots.kind::<batch::v1::Job>("batch", "v1", "Job");
    roots.kind::<certificates::v1::CertificateSigningRequest>(
        "certificates.k8s.io",
        "v1",
        "CertificateSigningRequest",
    );
    let certificates_group = "certificates.k8s.io";
    roots.kind::<certificates::v1::ClusterTrustBundle>(
        certificates_group,
        "v1",
        "ClusterTrustBundle",
    );
    roots.kind::<certificates::v1::PodCertificateRequest>(
        certificates_group,
        "v1",
        "PodCertificateRequest",
    );
    let flowcontrol_group = "flowcontrol.apiserver.k8s.io";
    roots.kind::<flowcontrol::v1::FlowSchema>(flowcontrol_group, "v1", "FlowSchema");
    roots.kind::<flowcontrol::v1::PriorityLevelConfiguration>(
        flowcontrol_group,
        "v1",
        "PriorityLevelConfiguration",
    );
    let networking_group = "networking.k8s.io";
    roots.kind::<networking::v1::IngressClass>(networking_group, "v1", "IngressClass");
    roots.kind::<networking::v1::Ingress>(networking_group, "v1", "Ingress");
    roots.kind::<networking::v1::IPAddress>(networking_group, "v1", "IPAddress");
    roots.kind::<networking::v1::NetworkPolicy>(networking_group, "v1", "NetworkPolicy");
    roots.kind::<networking::v1::ServiceCIDR>(networking_group, "v1", "ServiceCIDR");
    roots.kind::<node::v1::RuntimeClass>("node.k8s.io", "v1", "RuntimeClass");
    roots.kind::<policy::v1::PodDisruptionBudget>("policy", "v1", "PodDisruptionBudget");
    let dra_group = "resource.k8s.io";
    roots.kind::<resource::v1::DeviceClass>(dra_group, "v1", "DeviceClass");
    roots.kind::<resource::v1::DeviceTaintRule>(dra_group, "v1", "DeviceTaintRule");
    roots.kind::<resource::v1::ResourceClaim>(dra_group, "v1", "ResourceClaim");
    roots.kind::<resource::v1::ResourceClaimTemplate>(dra_group, "v1", "ResourceClaimTemplate");
    roots.kind::<resource::v1::ResourceSlice>(dra_group, "v1", "ResourceSlice");
    roots.kind::<scheduling::v1::PriorityClass>("scheduling.k8s.io", "v1", "PriorityClass");
    let storage_group = "storage.k8s.io";
    roots.kind::<storage::v1::CSIDriver>(storage_group, "v1", "CSIDriver");
    roots.kind::<storage::v1::CSINode>(storage_group, "v1", "CSINode");
    roots.kind::<storage::v1::CSIStorageCapacity>(storage_group, "v1", "CSIStorageCapacity");
    roots.kind::<storage::v1::StorageClass>(storage_group, "v1", "StorageClass");
    roots.kind::<storage::v1::VolumeAttachment>(storage_group, "v1", "VolumeAttachment");
    roots.kind::<storage::v1::VolumeAttributesClass>(storage_group, "v1", "VolumeAttributesClass");
    roots.kind::<storagemigration::v1::StorageVersionMigration>(
        "storagemigration.k8s.io",
        "v1",
        "StorageVersionMigration",
    );
}

fn generate() -> Builtin {
    let mut roots = Roots {
        generator: SchemaSettings::draft2020_12().into_generator(),
        kinds: Vec::new(),
        objects: Vec::new(),
    };
    roots.kind::<core::ConfigMap>("", "v1", "ConfigMap");
    roots.kind::<core::Endpoints>("", "v1", "Endpoints");
    roots.kind::<core::Event>("", "v1", "Event");
    roots.kind::<core::Namespace>("", "v1", "Namespace");
    roots.kind::<core::Secret>("", "v1", "Secret");
    roots.kind::<core::Service>("", "v1", "Service");
    roots.kind::<core::ServiceAccount>("", "v1", "ServiceAccount");
    roots.kind::<coordination::v1::Lease>("coordination.k8s.io", "v1", "Lease");
    roots.kind::<discovery::v1::EndpointSlice>("discovery.k8s.io", "v1", "EndpointSlice");
    roots.kind::<events::v1::Event>("events.k8s.io", "v1", "Event");
    roots.kind::<apiregistration::APIService>("apiregistration.k8s.io", "v1", "APIService");
    let rbac_group = "rbac.authorization.k8s.io";
    roots.kind::<rbac::v1::ClusterRole>(rbac_group, "v1", "ClusterRole");
    roots.kind::<rbac::v1::ClusterRoleBinding>(rbac_group, "v1", "ClusterRoleBinding");
    roots.kind::<rbac::v1::Role>(rbac_group, "v1", "Role");
    roots.kind::<rbac::v1::RoleBinding>(rbac_group, "v1", "RoleBinding");
    let admission = "admissionregistration.k8s.io";
    roots.kind::<admissionregistration::v1::ValidatingAdmissionPolicy>(
        admission,
        "v1",
        "ValidatingAdmissionPolicy",
    );
    roots.kind::<admissionregistration::v1::ValidatingAdmissionPolicyBinding>(
        admission,
        "v1",
        "ValidatingAdmissionPolicyBinding",
    );
    roots.kind::<admissionregistration::v1::ValidatingWebhookConfiguration>(
        admission,
        "v1",
        "ValidatingWebhookConfiguration",
    );
    roots.kind::<admissionregistration::v1::MutatingWebhookConfiguration>(
        admission,
        "v1",
        "MutatingWebhookConfiguration",
    );
    roots.kind::<admissionregistration::v1::MutatingAdmissionPolicy>(
        admission,
        "v1",
        "MutatingAdmissionPolicy",
    );
    roots.kind::<admissionregistration::v1::MutatingAdmissionPolicyBinding>(
        admission,
        "v1",
        "MutatingAdmissionPolicyBinding",
    );
    let authn = "authentication.k8s.io";
    roots.kind::<authentication::v1::TokenReview>(authn, "v1", "TokenReview");
    roots.kind::<authentication::v1::SelfSubjectReview>(authn, "v1", "SelfSubjectReview");
    let authz = "authorization.k8s.io";
    roots.kind::<authorization::v1::SubjectAccessReview>(authz, "v1", "SubjectAccessReview");
    roots.kind::<authorization::v1::SelfSubjectAccessReview>(
        authz,
        "v1",
        "SelfSubjectAccessReview",
    );
    roots.kind::<authorization::v1::SelfSubjectRulesReview>(authz, "v1", "SelfSubjectRulesReview");
    roots.kind::<authorization::v1::LocalSubjectAccessReview>(
        authz,
        "v1",
        "LocalSubjectAccessReview",
    );
    roots.kind::<apiextensions::CustomResourceDefinition>(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
    );
    table_kinds(&mut roots);
    // What subresources read and write.
    roots.object::<autoscaling::v1::Scale>("autoscaling", "v1", "Scale");
    roots.object::<policy::v1::Eviction>("policy", "v1", "Eviction");
    roots.object::<authentication::v1::TokenRequest>(authn, "v1", "TokenRequest");
    roots.object::<core::Binding>("", "v1", "Binding");
    roots.other::<meta::APIGroup>();
    roots.other::<meta::APIGroupList>();
    roots.other::<meta::APIVersions>();
    roots.other::<k8s_openapi::apimachinery::pkg::version::Info>();
    roots.other::<k8s_openapi::apimachinery::pkg::runtime::RawExtension>();
    roots.other::<meta::APIResourceList>();
    roots.other::<meta::DeleteOptions>();
    roots.other::<meta::ListMeta>();
    roots.other::<meta::Patch>();
    roots.other::<meta::Status>();

    let Roots {
        mut generator,
        mut kinds,
        objects,
    } = roots;
    let mut components: Map<String, Value> = generator
        .take_definitions(false)
        .into_iter()
        .map(|(name, schema)| (name, to_oas3(schema)))
        .collect();
    rename_version(
        &mut components,
        &mut kinds,
        "io.k8s.api.admissionregistration.v1alpha1.",
        "io.k8s.api.admissionregistration.v1beta1.",
    );

    fix_required(&mut components, &kinds);
    if let Some(Value::Object(s)) = components.get_mut(INT_OR_STRING) {
        s.remove("x-kubernetes-int-or-string");
        s.remove("type");
        s.insert("format".into(), json!("int-or-string"));
        s.insert(
            "oneOf".into(),
            json!([{"type": "integer"}, {"type": "string"}]),
        );
    }
    apply_extensions(&mut components);
    // Upstream publishes these as untyped (any JSON value): only a description.
    for name in [
        "JSON",
        "JSONSchemaPropsOrArray",
        "JSONSchemaPropsOrBool",
        "JSONSchemaPropsOrStringArray",
    ] {
        let name = format!("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.{name}");
        if let Some(Value::Object(s)) = components.get_mut(&name) {
            s.retain(|k, _| k == "description");
        }
    }

    for k in &kinds {
        if let Some(Value::Object(s)) = components.get_mut(&k.schema) {
            s.insert(
                "x-kubernetes-group-version-kind".into(),
                json!([k.gvk.to_json()]),
            );
        }
        let list_gvk = Gvk::new(&k.gvk.group, &k.gvk.version, &format!("{}List", k.gvk.kind));
        components.insert(
            k.list_schema.clone(),
            list_schema(&k.schema, &k.gvk.kind, &list_gvk),
        );
    }
    for (gvk, name) in &objects {
        if let Some(Value::Object(s)) = components.get_mut(name) {
            s.insert(
                "x-kubernetes-group-version-kind".into(),
                json!([gvk.to_json()]),
            );
        }
    }
    components.insert(WATCH_EVENT.into(), watch_event());
    for (name, kind) in [
        (STATUS, "Status"),
        (API_RESOURCE_LIST, "APIResourceList"),
        (API_GROUP, "APIGroup"),
        (API_GROUP_LIST, "APIGroupList"),
        (API_VERSIONS, "APIVersions"),
    ] {
        if let Some(Value::Object(s)) = components.get_mut(name) {
            s.insert(
                "x-kubernetes-group-version-kind".into(),
                json!([Gvk::new("", "v1", kind).to_json()]),
            );
        }
    }
    Builtin {
        components,
        kinds,
        objects,
    }
}

/// `meta/v1` WatchEvent as upstream publishes it (k8s-openapi's has the object's
/// description on the kind, and no default for `type`).
fn watch_event() -> Value {
    json!({
        "description": "Event represents a single event to a watched resource.",
        "properties": {
            "object": {
                "allOf": [{"$ref": format!("{V3_PREFIX}{RAW_EXTENSION}")}],
                "description": "Object is:\n * If Type is Added or Modified: the new state of the object.\n * If Type is Deleted: the state of the object immediately before deletion.\n * If Type is Error: *Status is recommended; other types may make sense\n   depending on context.",
            },
            "type": {"default": "", "type": "string"},
        },
        "required": ["type", "object"],
        "type": "object",
    })
}

/// Publish the components named `from…` (and every reference to them) as
/// `to…`: a kind served at a version whose shape k8s-openapi has only under
/// an earlier one.
fn rename_version(
    components: &mut Map<String, Value>,
    kinds: &mut [BuiltinKind],
    from: &str,
    to: &str,
) {
    let names: Vec<String> = components
        .keys()
        .filter(|k| k.starts_with(from))
        .cloned()
        .collect();
    for name in names {
        let Some(schema) = components.remove(&name) else {
            continue;
        };
        let renamed = serde_json::to_string(&schema)
            .ok()
            .map(|text| text.replace(from, to))
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or(schema);
        components.insert(name.replacen(from, to, 1), renamed);
    }
    for k in kinds.iter_mut() {
        k.schema = k.schema.replacen(from, to, 1);
        k.list_schema = k.list_schema.replacen(from, to, 1);
    }
}

/// k8s-openapi lists `metadata` as required on every kind (its Rust field is not
/// optional); upstream does not, except for core/v1 Event. events.k8s.io/v1 Event
/// requires `eventTime` upstream.
fn fix_required(components: &mut Map<String, Value>, kinds: &[BuiltinKind]) {
    for (name, schema) in components.iter_mut() {
        if name == "io.k8s.api.core.v1.Event" {
            continue;
        }
        let Some(obj) = schema.as_object_mut() else {
            continue;
        };
        if let Some(Value::Array(required)) = obj.get_mut("required") {
            required.retain(|r| r != "metadata");
            if required.is_empty() {
                obj.remove("required");
            }
        }
    }
    if kinds
        .iter()
        .any(|k| k.schema == "io.k8s.api.events.v1.Event")
        && let Some(Value::Object(s)) = components.get_mut("io.k8s.api.events.v1.Event")
    {
        s.insert("required".into(), json!(["eventTime"]));
    }
}

/// The list-type / map-type / strategic-merge extensions upstream's documents
/// carry (from the `+listType`, `+patchStrategy`, ... markers), from the patch
/// metadata data: one source for patching and for what clients read.
fn apply_extensions(components: &mut Map<String, Value>) {
    for (definition, property, extensions) in patch::builtin::openapi_extensions() {
        let Some(schema) = components.get_mut(definition) else {
            continue;
        };
        let target = match &property {
            None => schema.as_object_mut(),
            Some(name) => schema
                .get_mut("properties")
                .and_then(|p| p.get_mut(name.as_str()))
                .and_then(Value::as_object_mut),
        };
        if let Some(target) = target {
            target.extend(extensions);
        }
    }
}

/// The `<Kind>List` schema for the kind schema `item_schema`.
pub(crate) fn list_schema(item_schema: &str, kind: &str, list_gvk: &Gvk) -> Value {
    json!({
        "description": format!("{kind}List is a list of {kind} objects."),
        "properties": {
            "apiVersion": {"description": API_VERSION_DESC, "type": "string"},
            "items": {
                "description": format!("List of {kind} objects."),
                "items": {"$ref": format!("{V3_PREFIX}{item_schema}")},
                "type": "array",
            },
            "kind": {"description": KIND_DESC, "type": "string"},
            "metadata": {
                "allOf": [{"$ref": format!("{V3_PREFIX}{LIST_META}")}],
                "description": LIST_META_DESC,
            },
        },
        "required": ["items"],
        "type": "object",
        "x-kubernetes-group-version-kind": [list_gvk.to_json()],
    })
}

/// The component name upstream gives a custom resource's schema: the group's
/// labels reversed, then version and kind (`stable.example.com`, `v1`, `CronTab` →
/// `com.example.stable.v1.CronTab`).
pub(crate) fn custom_schema_name(gvk: &Gvk) -> String {
    if gvk.group.is_empty() {
        return format!("io.k8s.api.core.{}.{}", gvk.version, gvk.kind);
    }
    let reversed: Vec<&str> = gvk.group.split('.').rev().collect();
    format!("{}.{}.{}", reversed.join("."), gvk.version, gvk.kind)
}

/// The schema of a kind that has neither a built-in schema nor a CRD's: accepts
/// any fields, with `apiVersion`/`kind` described, `metadata` as ObjectMeta, and
/// the GVK extension.
pub(crate) fn loose_schema(gvk: &Gvk) -> Value {
    json!({
        "properties": {
            "apiVersion": {"description": API_VERSION_DESC, "type": "string"},
            "kind": {"description": KIND_DESC, "type": "string"},
            "metadata": {
                "allOf": [{"$ref": format!("{V3_PREFIX}{OBJECT_META}")}],
                "description": OBJECT_META_DESC,
            },
        },
        "type": "object",
        "x-kubernetes-group-version-kind": [gvk.to_json()],
        "x-kubernetes-preserve-unknown-fields": true,
    })
}
