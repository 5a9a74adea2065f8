//! OpenAPI documents for kubext's served resources: `/openapi/v3` (index),
//! `/openapi/v3/<group-version>` (OpenAPI 3.0) and `/openapi/v2` (Swagger 2.0).
//!
//! Pure: no HTTP, no async. Component schemas of the built-in kinds are generated
//! once (lazily, process-wide) from k8s-openapi's `schemars` implementations, which
//! carry the Kubernetes field descriptions, and converted to the shape upstream
//! kube-apiserver serves: upstream component names (`io.k8s.api.core.v1.ConfigMap`),
//! `$ref`s with siblings wrapped as `allOf: [{$ref}]`, the
//! `x-kubernetes-group-version-kind` extension on kinds and lists, and the
//! strategic-merge / list-type extensions kubectl reads.
//!
//! kubectl uses these documents to
//! - decide whether the server does field validation: the PATCH operation carrying
//!   `x-kubernetes-group-version-kind` = the GVK must list a `fieldValidation`
//!   parameter ([`Documents`], [`v3_group_version`]);
//! - `kubectl explain` (component schemas found by their GVK extension);
//! - client-side `kubectl apply` (strategic-merge metadata, and the patch operation's
//!   `application/strategic-merge-patch+json` request body);
//! - `/openapi/v2` only as gnostic protobuf ([`v2_protobuf`]): kubectl 1.27/1.28
//!   `explain` always loads it, and kubectl falls back to it when v3 is unavailable;
//!
//! and the server can use [`unknown_fields`] / [`builtin_unknown_fields`] (and
//! [`builtin_schema_node`], to walk a body in its own order) for
//! `fieldValidation=Strict|Warn` on built-in kinds, and
//! [`builtin_apply_errors`] / [`custom_apply_errors`] for server-side apply's
//! typed check of a configuration.
//!
//! Generating every document is cheap but not free (a few milliseconds in a release
//! build); build a [`Documents`] once per set of served resources and cache it.

mod builtin;
mod convert;
mod crd;
mod docs;
mod params;
mod paths;
mod proto;
mod smd;
mod validate;

use serde_json::Value;

pub use builtin::{BuiltinKind, builtin_components, builtin_kinds};
pub use docs::{
    Documents, GroupVersionDocument, bytes_hash, group_version_document, gv_path, source_hash, v2,
    v2_documents, v3_group_version, v3_index, v3_index_json,
};
pub use proto::{V2_PROTOBUF_ACCEPT, V2_PROTOBUF_CONTENT_TYPE, v2_protobuf};
pub use smd::{ApplyError, Finding, PathStep, builtin_apply_errors, custom_apply_errors};
pub use validate::{
    Member, SchemaNode, builtin_schema_node, builtin_unknown_fields, builtin_unknown_fields_of,
    find_schema, strict_decoding_error, unknown_field_warnings, unknown_fields,
};

/// `info.title` of every document.
pub const INFO_TITLE: &str = "Kubernetes";
/// `info.version` of every document: the served minor, as kube-apiserver
/// writes it (`1.37`, checked against 1.37.2).
pub const INFO_VERSION: &str = "1.37";

/// The kube verbs a resource can serve, as in discovery.
pub const ALL_VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// One resource the server serves at one group-version, as the server's catalog
/// describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServedResource {
    /// `""` for the core group.
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub namespaced: bool,
    /// Serves the `/status` subresource (get/update/patch, per `verbs`).
    pub has_status: bool,
    /// Kube verbs (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
    /// `deletecollection`); operations are only documented for these.
    pub verbs: Vec<String>,
    /// A CRD version's `openAPIV3Schema`, published as apiextensions-apiserver
    /// publishes it. When `None`, the built-in schema for the GVK is used if there
    /// is one; else a custom resource's kind is `type: object`, and any other kind
    /// accepts any fields (`x-kubernetes-preserve-unknown-fields`).
    pub schema: Option<Value>,
    /// The list kind (a CRD's `names.listKind`; `<kind>List` by default).
    pub list_kind: String,
    /// A CRD version's `selectableFields` (`spec.color`), published as the
    /// `x-kubernetes-selectable-fields` extension.
    pub selectable_fields: Vec<String>,
    /// Subresources besides `status` (`scale`, `eviction`, `proxy`, ...).
    pub subresources: Vec<Subresource>,
    /// Documented as apiextensions-apiserver documents a CRD's versions (fixed
    /// operations, no watch paths, JSON and YAML only), rather than as
    /// kube-apiserver's generic installer documents a resource's storage.
    pub custom_resource: bool,
    /// DELETE answers the deleted object rather than a `Status` (upstream's
    /// `MayReturnFullObjectDeleter` storages).
    pub delete_returns_object: bool,
}

/// A subresource of a [`ServedResource`], as discovery lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct Subresource {
    pub name: String,
    /// The kind it reads and writes (`autoscaling/v1` `Scale`, `policy/v1`
    /// `Eviction`; the options kind of a connect subresource such as
    /// `PodExecOptions`).
    pub gvk: Gvk,
    /// Kube verbs, as in discovery.
    pub verbs: Vec<String>,
}

impl Subresource {
    pub fn new(name: &str, gvk: Gvk, verbs: &[&str]) -> Self {
        Subresource {
            name: name.into(),
            gvk,
            verbs: verbs.iter().map(|v| v.to_string()).collect(),
        }
    }

    /// `scale`: `autoscaling/v1` `Scale` with get, patch and update.
    pub fn scale() -> Self {
        Subresource::new(
            "scale",
            Gvk::new("autoscaling", "v1", "Scale"),
            &["get", "patch", "update"],
        )
    }

    pub fn has_verb(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }
}

impl ServedResource {
    /// A resource with every verb, no status subresource and no explicit schema.
    pub fn new(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) -> Self {
        ServedResource {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: plural.into(),
            namespaced,
            has_status: false,
            verbs: ALL_VERBS.iter().map(|v| v.to_string()).collect(),
            schema: None,
            list_kind: format!("{kind}List"),
            selectable_fields: Vec::new(),
            subresources: Vec::new(),
            custom_resource: false,
            delete_returns_object: false,
        }
    }

    pub fn with_status(mut self) -> Self {
        self.has_status = true;
        self
    }

    pub fn with_verbs(mut self, verbs: &[&str]) -> Self {
        self.verbs = verbs.iter().map(|v| v.to_string()).collect();
        self
    }

    pub fn with_schema(mut self, schema: Value) -> Self {
        self.schema = Some(schema);
        self
    }

    pub fn with_subresource(mut self, subresource: Subresource) -> Self {
        self.subresources.push(subresource);
        self
    }

    /// A CRD's version: documented as apiextensions-apiserver documents it.
    pub fn custom_resource(mut self) -> Self {
        self.custom_resource = true;
        self
    }

    pub fn deletes_returning_object(mut self) -> Self {
        self.delete_returns_object = true;
        self
    }

    pub fn gvk(&self) -> Gvk {
        Gvk::new(&self.group, &self.version, &self.kind)
    }

    pub fn has_verb(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }
}

/// A group, version and kind.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Gvk {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl Gvk {
    pub fn new(group: &str, version: &str, kind: &str) -> Self {
        Gvk {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        }
    }

    /// The `{group, kind, version}` object of `x-kubernetes-group-version-kind`.
    pub fn to_json(&self) -> Value {
        serde_json::json!({"group": self.group, "kind": self.kind, "version": self.version})
    }

    /// Whether a `{group, kind, version}` JSON object names this GVK.
    pub fn matches(&self, v: &Value) -> bool {
        v.get("group").and_then(Value::as_str).unwrap_or("") == self.group
            && v.get("version").and_then(Value::as_str) == Some(self.version.as_str())
            && v.get("kind").and_then(Value::as_str) == Some(self.kind.as_str())
    }
}
