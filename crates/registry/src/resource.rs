//! What the generic store needs to know about one kind of resource.

use crate::managed_fields::{FieldSet, Tracking};
use crate::options::RequestContext;
use apimachinery::{DynamicObject, ErrorList, GroupResource, GroupVersionKind};
use serde_json::Value;
use std::borrow::Cow;

/// What a strategy's preparation of a new object did to its body (metadata
/// aside): the store writes Go's zero fields again only into a body that may
/// have changed (a ConfigMap's create is spared a second pass).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prepared {
    BodyUnchanged,
    /// Changed, or perhaps changed: the zero fields are written again.
    BodyChanged,
}

/// Per-type behaviour (upstream's `RESTCreateStrategy`/`RESTUpdateStrategy`).
/// Writes hand the strategy the object as the registry holds it: typed
/// metadata and the JSON body ([`DynamicObject`]). What reads stored objects
/// (field selectors, table rows, version conversion) and what checks a body
/// as decoded ([`Strategy::prune`]) read JSON. Defaults fit types without
/// special rules.
pub trait Strategy: Send + Sync + 'static {
    /// Defaults applied where upstream decodes a body: before mutating
    /// admission (webhooks see defaulted objects) and again on what it
    /// returns. `prepare_*` may default once more after their own changes.
    fn default(&self, _obj: &mut DynamicObject) {}

    /// Normalize a new object before validation (e.g. drop `status`), and
    /// say whether the body may have changed.
    fn prepare_create(&self, _obj: &mut DynamicObject) -> Prepared {
        Prepared::BodyUnchanged
    }

    /// [`Strategy::prepare_create`] for types that record who asked
    /// (CertificateSigningRequests' `spec.username`).
    fn prepare_create_for(&self, obj: &mut DynamicObject, _ctx: &RequestContext) -> Prepared {
        self.prepare_create(obj)
    }

    /// Carry over what a main-resource update must not change (e.g. `status`).
    fn prepare_update(&self, _new: &mut DynamicObject, _old: &DynamicObject) {}

    /// The messages for a `name` (`prefix`: a `generateName`) where the rule
    /// depends on the object itself (ClusterTrustBundles are named after their
    /// signer); `None` applies the type's `name_validation`.
    fn name_errors(&self, _obj: &DynamicObject, _name: &str, _prefix: bool) -> Option<Vec<String>> {
        None
    }

    /// Type-specific validation of a new object (metadata is validated generically).
    fn validate(&self, _obj: &DynamicObject) -> ErrorList {
        Vec::new()
    }

    /// Type-specific validation of an update (immutable fields and the like).
    fn validate_update(&self, new: &DynamicObject, _old: &DynamicObject) -> ErrorList {
        self.validate(new)
    }

    /// Non-fatal warnings returned as `Warning` headers.
    fn warnings(&self, _obj: &DynamicObject) -> Vec<String> {
        Vec::new()
    }

    /// The value of a selectable field beyond `metadata.name`/`metadata.namespace`;
    /// `None` when the field is not selectable for this type.
    fn field(&self, _obj: &Value, _field: &str) -> Option<String> {
        None
    }

    /// Table cells after `Name`, matching `ResourceType::columns`.
    fn row(&self, _obj: &Value) -> Vec<Value> {
        Vec::new()
    }

    /// Convert a stored object into the version this resource serves;
    /// `None` when the stored form is the served form (most types).
    fn convert_from_storage(&self, _obj: &Value) -> Option<Value> {
        None
    }

    /// Whether [`Strategy::convert_from_storage`] may change `stored` (a cheap
    /// check, made without decoding it, for every object read): objects served
    /// as stored skip the presentation cache.
    fn converts_on_read(&self, _stored: &crate::Object) -> bool {
        false
    }

    /// Convert a served object into the stored form; `None` when they are the same.
    fn to_storage(&self, _obj: &Value) -> Option<Value> {
        None
    }

    /// Whether [`Strategy::to_storage`] is `None` for every object (most
    /// types): writes then store the typed object as it is, never writing it
    /// out as JSON to ask.
    fn stored_as_served(&self) -> bool {
        true
    }

    /// Remove fields the type's schema does not know, returning their paths
    /// (for `fieldValidation`); `None` when the type has no such schema here
    /// (built-ins are checked against their OpenAPI documents instead).
    fn prune(&self, _obj: &mut Value) -> Option<Vec<String>> {
        None
    }

    /// Whether something besides `metadata.finalizers` holds up deletion
    /// (namespaces: `spec.finalizers`).
    fn deletion_blocked(&self, _obj: &DynamicObject) -> bool {
        false
    }

    /// Why objects named `name` may not be deleted at all (a 403's reason;
    /// upstream's PriorityClass store refuses the system classes).
    fn refuse_delete(&self, _name: &str) -> Option<&'static str> {
        None
    }

    /// The warning a DELETE that names no propagation policy gets (Jobs, whose
    /// pods are orphaned by default).
    fn default_propagation_warning(&self) -> Option<&'static str> {
        None
    }

    /// Adjust an object whose deletion is pending (namespaces: phase Terminating).
    fn prepare_delete(&self, _obj: &mut DynamicObject) {}

    /// An update through a subresource this type prepares and validates
    /// itself (pods' `resize`): `new` made what that subresource may write,
    /// and the errors of its own validation. `None` for the others.
    fn subresource_update(
        &self,
        _subresource: &apimachinery::Subresource,
        _new: &mut DynamicObject,
        _old: &DynamicObject,
    ) -> Option<ErrorList> {
        None
    }

    /// Whether annotation changes bump `metadata.generation` as spec changes
    /// do (Deployments: their annotations are copied to ReplicaSets).
    fn annotations_bump_generation(&self) -> bool {
        false
    }

    /// Whether a DELETE that names no propagation policy orphans dependents
    /// (upstream's `DefaultGarbageCollectionPolicy` of `OrphanDependents`).
    fn orphans_by_default(&self) -> bool {
        false
    }

    /// Upstream's `CheckGracefulDelete`: for a type deleted gracefully (pods),
    /// the seconds `obj` is kept, marked, before it goes (`requested` is the
    /// DeleteOptions' `gracePeriodSeconds`); 0 deletes it at once. `None` for
    /// types deleted at once.
    fn graceful_delete_period(&self, _obj: &DynamicObject, _requested: Option<i64>) -> Option<i64> {
        None
    }

    /// On a status-subresource update: take only `status` from `new`.
    fn prepare_status_update(&self, new: &mut DynamicObject, old: &DynamicObject) {
        take_status(new, old);
    }
}

/// A built-in kind's `/status` write as most of upstream's status strategies
/// make it: the old `spec` (and every other field) back, the new metadata
/// kept, so a status patch may change labels and annotations (custom
/// resources' and admission policies' may not: [`take_status`]).
pub fn take_status_and_metadata(new: &mut DynamicObject, old: &DynamicObject) {
    let metadata = std::mem::take(&mut new.metadata);
    take_status(new, old);
    new.metadata = metadata;
}

/// `new` becomes `old` with `new`'s status (a status-subresource write).
pub fn take_status(new: &mut DynamicObject, old: &DynamicObject) {
    let status = new.remove("status");
    *new = old.clone();
    match status {
        Some(status) => new.insert("status", status),
        None => {
            new.remove("status");
        }
    }
}

/// The kinds whose `/status` writes reset all of `metadata` besides `spec`
/// (upstream's newer status strategies); custom resources' do too.
const STATUS_RESETS_METADATA: &[(&str, &str)] = &[
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    ("apiregistration.k8s.io", "APIService"),
    ("certificates.k8s.io", "PodCertificateRequest"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
    ("internal.apiserver.k8s.io", "StorageVersion"),
    ("lifecycle.k8s.io", "Eviction"),
    ("lifecycle.k8s.io", "EvictionRequest"),
    ("networking.k8s.io", "ServiceCIDR"),
    ("resource.k8s.io", "DeviceTaintRule"),
    ("resource.k8s.io", "ResourceClaim"),
    ("resource.k8s.io", "ResourcePoolStatusRequest"),
    ("scheduling.k8s.io", "CompositePodGroup"),
    ("scheduling.k8s.io", "PodGroup"),
    ("storage.k8s.io", "CSINode"),
    ("storage.k8s.io", "VolumeAttachment"),
    ("storagemigration.k8s.io", "StorageVersionMigration"),
];

/// A printer column of `as=Table` output (after `Name`).
#[derive(Debug, Clone)]
pub struct TableColumn {
    pub name: Cow<'static, str>,
    pub type_: Cow<'static, str>,
    pub format: Cow<'static, str>,
    pub description: Cow<'static, str>,
    pub priority: i32,
    /// Where the table puts its own `Age` cell ([`TableColumn::age`]); never a
    /// column a type or CRD declares, even one named `Age`.
    marks_age: bool,
    /// Where the table puts its own `Name` cell ([`TableColumn::name_cell`]),
    /// for types whose table does not begin with it (events).
    marks_name: bool,
}

impl TableColumn {
    pub const fn new(name: &'static str, type_: &'static str, description: &'static str) -> Self {
        TableColumn {
            name: Cow::Borrowed(name),
            type_: Cow::Borrowed(type_),
            format: Cow::Borrowed(""),
            description: Cow::Borrowed(description),
            priority: 0,
            marks_age: false,
            marks_name: false,
        }
    }

    /// A column defined at run time (a CRD's additionalPrinterColumns).
    pub fn owned(
        name: String,
        type_: String,
        format: String,
        description: String,
        priority: i32,
    ) -> Self {
        TableColumn {
            name: Cow::Owned(name),
            type_: Cow::Owned(type_),
            format: Cow::Owned(format),
            description: Cow::Owned(description),
            priority,
            marks_age: false,
            marks_name: false,
        }
    }

    pub const fn wide(mut self) -> Self {
        self.priority = 1;
        self
    }

    /// `Age` placed among a type's columns where upstream's printer puts it
    /// (its cell is the table's, not the type's `row`).
    pub const fn age() -> Self {
        let mut column = TableColumn::new("Age", "string", "");
        column.marks_age = true;
        column
    }

    pub fn is_age(&self) -> bool {
        self.marks_age
    }

    /// `Name` placed among a type's columns where upstream's printer puts it
    /// (its cell is the table's, not the type's `row`); without one, `Name`
    /// comes first.
    pub const fn name_cell() -> Self {
        TableColumn {
            name: Cow::Borrowed("Name"),
            type_: Cow::Borrowed("string"),
            format: Cow::Borrowed("name"),
            description: Cow::Borrowed(""),
            priority: 0,
            marks_age: false,
            marks_name: true,
        }
    }

    pub fn is_name(&self) -> bool {
        self.marks_name
    }
}

/// Which labels a type's field selectors accept (upstream's field label
/// conversion functions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldLabels {
    /// No conversion function registered (`DefaultMetaV1FieldSelectorConversion`):
    /// `metadata.name` and `metadata.namespace`, cluster-scoped kinds too (where
    /// a namespace compares as empty).
    Metadata,
    /// The kind's own conversion function: exactly `selectable_fields`.
    Registered(FieldLabelRefusal),
    /// Custom resources: `metadata.name`, `metadata.namespace` when namespaced,
    /// and the CRD's `selectableFields`.
    CustomResource,
}

/// How a registered conversion function words a label it refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldLabelRefusal {
    /// `field label not supported: <label>`
    NotSupported,
    /// `field label "<label>" not supported for <Kind>` (Jobs)
    NotSupportedForKind,
}

/// A field selector's label a type does not accept, in the words of the
/// conversion function that refuses it (see [`FieldLabelRefusal`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldLabelError {
    /// No conversion function registered.
    #[error("{0:?} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"")]
    NotKnown(String),
    #[error("field label {label:?} not supported for {kind}")]
    NotSupportedForKind { label: String, kind: String },
    #[error("field label not supported: {0}")]
    NotSupported(String),
}

/// Where it reaches a client (a list's or watch's field selector): 400.
impl From<FieldLabelError> for apimachinery::StatusError {
    fn from(err: FieldLabelError) -> Self {
        apimachinery::StatusError::bad_request(err.to_string())
    }
}

/// Everything the server and generic store need to serve one resource at one version.
pub struct ResourceType {
    /// Unique per constructed type (a CRD change builds new ones): the key under
    /// which objects cache how this type presents them.
    pub presentation: u64,
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub singular: String,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub namespaced: bool,
    /// Storage path under the prefix, e.g. `configmaps` or `apiregistration.k8s.io/apiservices`.
    pub storage_path: String,
    pub has_status: bool,
    /// `metadata.generation` is bumped on every change outside status/metadata.
    pub tracks_generation: bool,
    /// DELETE answers with the deleted object instead of a `Status` (upstream's
    /// `ReturnDeletedObject`, set for some core types).
    pub return_deleted_object: bool,
    /// PUT may leave out `metadata.resourceVersion` (upstream's
    /// `AllowUnconditionalUpdate`; custom resources, CRDs and APIServices may not).
    pub allow_unconditional_update: bool,
    /// PUT of a missing object creates it (upstream's `AllowCreateOnUpdate`;
    /// for built-in kinds `builtin::strategy_rules::creates_on_update`).
    pub allow_create_on_update: bool,
    /// Columns after `Name` for `as=Table`; `Age` is added unless `age_column` is off.
    /// Built-in kinds' definitions (texts, types, formats) are upstream's measured
    /// ones (`data/printer-columns.json`, see [`crate::table::column_definitions`]);
    /// these give the layout the rows follow.
    pub columns: Vec<TableColumn>,
    /// Add the `Age` column (custom resources list their own columns instead).
    pub age_column: bool,
    /// Which field labels field selectors accept, and how others are refused.
    pub field_labels: FieldLabels,
    /// Field labels accepted besides what [`ResourceType::field_labels`] always
    /// accepts (a kind's registered labels; a CRD's `selectableFields`).
    pub selectable_fields: Vec<String>,
    /// Name validator: DNS subdomain for most types.
    pub name_validation: fn(&str, bool) -> Vec<String>,
    /// OpenAPI v3 schema published for this type (custom resources); built-ins
    /// have theirs in the `openapi` crate.
    pub openapi_schema: Option<Value>,
    /// The list kind when it is not `<kind>List` (a CRD's `names.listKind`).
    pub list_kind_name: Option<String>,
    /// When set, creates are refused with 405 and this message (e.g. while the
    /// CRD of a custom resource is terminating).
    pub refuse_create: Option<String>,
    /// Built-in kinds are Go structs upstream: strategic merge patch works, and
    /// an empty object has `metadata`/`spec`/`status` structs. Custom resources
    /// are unstructured: strategic merge is refused (415) and an empty object is `{}`.
    pub structured: bool,
    /// How lists and maps merge and are owned (strategic merge, server-side apply,
    /// managedFields): built-in tags, or a CRD schema's `x-kubernetes-list-type`s.
    /// Built on first use (most kinds are never patched or applied): see
    /// [`ResourceType::patch_schema`].
    patch_schema: std::sync::OnceLock<patch::PatchSchema>,
    /// [`ResourceType::new_object`], made on first use.
    new_object: std::sync::OnceLock<Value>,
    /// [`ResourceType::reset_fields`] of the main resource (every create and
    /// update through it), made on first use.
    main_reset_fields: std::sync::OnceLock<FieldSet>,
    /// A `Warning` header on every request to this version (deprecated versions).
    pub deprecation_warning: Option<String>,
    /// The `scale` subresource (custom resources that declare one).
    pub scale: Option<ScalePaths>,
    /// The verbs served (discovery, OpenAPI, routing): all of them for stored
    /// resources, `create` only for reviews computed per request.
    pub verbs: &'static [&'static str],
    pub strategy: Box<dyn Strategy>,
    /// Subresources besides `status` and `scale`.
    pub extra_subresources: &'static [ExtraSubresource],
    /// Listed in discovery as apiextensions-apiserver lists a CRD's types:
    /// `responseKind` names the group and version, `status` comes before
    /// `scale`. Off for types served as upstream's generic installer serves
    /// them (built-ins, an extension server's types): kinds of the resource's
    /// own group-version leave group and version empty, and subresources are
    /// sorted by name.
    pub custom_resource_discovery: bool,
    /// The group-version objects are kept in: discovery's `storageVersionHash`
    /// is computed from it (upstream's storage version).
    pub storage_version: StorageVersion,
    /// Set for a computed type: reads go to the provider, nothing is stored.
    pub provider: Option<std::sync::Arc<dyn Provider>>,
    /// Validating admission for writes of this type.
    pub admission: Option<std::sync::Arc<dyn Admission>>,
    /// Allocation from a pool shared by every object of the type.
    pub allocator: Option<std::sync::Arc<dyn Allocator>>,
    /// Conversion between versions that calls out (a CRD's conversion webhook).
    pub converter: Option<std::sync::Arc<dyn Converter>>,
    /// Creates need their namespace to exist here and not be terminating. Off for
    /// an aggregated API server's types: namespaces live on the main server.
    pub namespace_lifecycle: bool,
}

/// Conversion between a resource's versions by a call out of the server (a
/// CRD's conversion webhook). The store converts through it an object stored
/// in another version before the strategy's [`Strategy::convert_from_storage`]
/// (pruning, read-time defaults), and an object written in another version
/// than the storage version before storing it.
#[async_trait::async_trait]
pub trait Converter: Send + Sync + 'static {
    /// The `apiVersion` objects are stored in.
    fn storage_api_version(&self) -> &str;

    /// Every object of `objects` in `api_version` (those already in it as
    /// they are), in order; one call for all of them.
    async fn convert(
        &self,
        objects: Vec<&Value>,
        api_version: &str,
    ) -> Result<Vec<Value>, apimachinery::StatusError>;
}

/// Where an [`Allocator`] keeps its pool: the storage (and key prefix) its
/// type is stored in, shared by every replica on one etcd.
#[derive(Clone)]
pub struct AllocationPool {
    pub storage: std::sync::Arc<crate::object::Storage>,
    pub prefix: String,
}

/// Hands out values from a pool shared by every object of a type (Services:
/// cluster IPs and node ports) when objects are written. The pool lives in
/// the store, so that replicas on one etcd hand out each value once.
#[async_trait::async_trait]
pub trait Allocator: Send + Sync + 'static {
    /// Fill in and take from the pool what `obj` needs. `old` is the stored
    /// object on updates. A dry run checks without taking. The returned
    /// [`Allocation`] is finished when the write is stored or has failed.
    async fn allocate(
        &self,
        pool: &AllocationPool,
        obj: &mut DynamicObject,
        old: Option<&DynamicObject>,
        dry_run: bool,
    ) -> Result<Allocation, apimachinery::StatusError>;

    /// Give back what a deleted object held.
    async fn release(&self, pool: &AllocationPool, obj: &DynamicObject);
}

/// What one write took from a pool and what it gave up.
#[async_trait::async_trait]
pub trait Reservation: Send + Sync + 'static {
    /// The write was stored: release what it gave up (an update's old values).
    async fn commit(self: Box<Self>);
    /// The write failed: release what it took.
    async fn revert(self: Box<Self>);
}

/// One write's [`Reservation`], finished by [`Allocation::finish`]. Dropped
/// unfinished (the request was cancelled), it is reverted in the background.
pub struct Allocation(Option<Box<dyn Reservation>>);

impl std::fmt::Debug for Allocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Allocation")
    }
}

impl Allocation {
    pub fn new(reservation: impl Reservation) -> Self {
        Allocation(Some(Box::new(reservation)))
    }

    /// Nothing taken, nothing given up.
    pub fn nothing() -> Self {
        Allocation(None)
    }

    /// Commit when the write was `stored`, else revert.
    pub async fn finish(mut self, stored: bool) {
        let Some(reservation) = self.0.take() else {
            return;
        };
        if stored {
            reservation.commit().await;
        } else {
            reservation.revert().await;
        }
    }
}

impl Drop for Allocation {
    fn drop(&mut self) {
        if let Some(reservation) = self.0.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(reservation.revert());
        }
    }
}

/// What a write does, for admission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
}

impl Operation {
    /// As admission names it (`CREATE`).
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }
}

/// One write as admission that applies to every resource sees it.
pub struct Attributes<'a> {
    pub operation: Operation,
    pub rtype: &'a ResourceType,
    pub name: &'a str,
    /// The object written (`None` on delete).
    pub object: Option<&'a ObjectJson<'a>>,
    /// The stored object (updates and deletes).
    pub old_object: Option<&'a Value>,
    pub ctx: &'a RequestContext,
}

impl Attributes<'_> {
    /// The object written as JSON ([`ObjectJson::get`]); `None` on delete.
    pub fn object(&self) -> Option<&Value> {
        self.object.map(ObjectJson::get)
    }
}

/// Admission for writes of every type (admission policies, webhooks), after
/// each type's own checks. It may add warnings to `ctx.warnings`.
#[async_trait::async_trait]
pub trait GlobalAdmission: Send + Sync + 'static {
    /// Mutating admission: may change `object` (the object written, before
    /// the type's defaulting and validation; `attributes.object` is unset).
    /// Whether it changed it.
    async fn mutate(
        &self,
        _attributes: &Attributes<'_>,
        _object: &mut AdmittedObject<'_>,
    ) -> Result<bool, apimachinery::StatusError> {
        Ok(false)
    }

    /// Validating admission, on the final object.
    async fn admit(&self, attributes: &Attributes<'_>) -> Result<(), apimachinery::StatusError>;

    /// Its metrics, in the Prometheus text format (served in `/metrics`).
    fn render_metrics(&self, _out: &mut String) {}
}

/// A written object as validating admission reads it: JSON, written out
/// from the typed object on first read (most writes meet no plugin, policy
/// or webhook that reads it).
pub enum ObjectJson<'a> {
    Typed {
        typed: &'a DynamicObject,
        json: std::sync::OnceLock<Value>,
    },
    Json(&'a Value),
}

impl<'a> ObjectJson<'a> {
    pub fn typed(typed: &'a DynamicObject) -> Self {
        ObjectJson::Typed {
            typed,
            json: std::sync::OnceLock::new(),
        }
    }

    pub fn get(&self) -> &Value {
        match self {
            ObjectJson::Typed { typed, json } => json.get_or_init(|| typed.to_value()),
            ObjectJson::Json(json) => json,
        }
    }
}

/// The object a write's mutating admission may change. Admission reads and
/// patches JSON, and most writes meet no plugin, policy or webhook that
/// applies: the object is written out as JSON only when one asks for it
/// ([`AdmittedObject::json`]), and the store reads it back then.
pub struct AdmittedObject<'a> {
    typed: &'a mut DynamicObject,
    json: Option<Value>,
}

impl<'a> AdmittedObject<'a> {
    pub fn new(typed: &'a mut DynamicObject) -> Self {
        AdmittedObject { typed, json: None }
    }

    /// The object as JSON, written out on first use.
    pub fn json(&mut self) -> &mut Value {
        self.json
            .get_or_insert_with(|| std::mem::take(self.typed).into_value())
    }

    /// The JSON admission saw and may have changed; `None` when nothing
    /// asked for it (the typed object is as it was).
    pub fn into_json(self) -> Option<Value> {
        self.json
    }
}

/// Validating admission: the last word on a write, after defaulting and
/// validation, with the final object (and the stored one for updates). Unlike a
/// [`Strategy`], it may look at other objects (e.g. a policy kept in another type).
#[async_trait::async_trait]
pub trait Admission: Send + Sync + 'static {
    async fn admit(
        &self,
        operation: Operation,
        new: &Value,
        old: Option<&Value>,
        ctx: &RequestContext,
    ) -> Result<(), apimachinery::StatusError>;
}

/// Objects computed when asked (like metrics-server's) instead of stored: served
/// read-only (`get`, `list`).
#[async_trait::async_trait]
pub trait Provider: Send + Sync + 'static {
    /// Every object in `namespace` ("" for all namespaces, or a cluster-scoped type).
    async fn list(&self, namespace: &str) -> Result<Vec<Value>, apimachinery::StatusError>;

    /// One object; `None` is a 404.
    async fn get(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, apimachinery::StatusError> {
        Ok(self
            .list(namespace)
            .await?
            .into_iter()
            .find(|o| apimachinery::meta::name(o) == name))
    }
}

/// Where a type's objects are stored, as discovery's `storageVersionHash` tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StorageVersion {
    /// In the type's own group-version.
    Own,
    /// In another group-version of the same kind (upstream stores
    /// `events.k8s.io/v1` Events as core `v1`, CRDs as `v1beta1`, a custom
    /// resource in its CRD's storage version).
    Other { group: String, version: String },
    /// Never stored (reviews, computed types): no hash.
    None,
}

/// A subresource served by a handler of its own (e.g. `serviceaccounts/token`),
/// listed in discovery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtraSubresource {
    pub name: &'static str,
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub verbs: &'static [&'static str],
}

/// The verbs of a computed resource.
pub const READ_VERBS: &[&str] = &["get", "list"];

/// Every verb of a stored resource.
pub const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// Where a resource keeps what `autoscaling/v1` Scale shows (simple `.a.b` paths).
#[derive(Debug, Clone, PartialEq)]
pub struct ScalePaths {
    pub spec_replicas: String,
    pub status_replicas: String,
    pub label_selector: Option<String>,
}

impl ResourceType {
    /// Defaults for a resource description; callers override what differs.
    pub fn new(
        group: &str,
        version: &str,
        kind: &str,
        plural: &str,
        namespaced: bool,
        strategy: Box<dyn Strategy>,
    ) -> Self {
        static NEXT_PRESENTATION: std::sync::atomic::AtomicU64 =
            std::sync::atomic::AtomicU64::new(1);
        ResourceType {
            presentation: NEXT_PRESENTATION.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: plural.into(),
            singular: kind.to_lowercase(),
            short_names: Vec::new(),
            categories: Vec::new(),
            namespaced,
            storage_path: plural.into(),
            has_status: false,
            tracks_generation: false,
            return_deleted_object: false,
            field_labels: FieldLabels::Metadata,
            allow_unconditional_update: true,
            allow_create_on_update: false,
            allocator: None,
            converter: None,
            columns: Vec::new(),
            age_column: true,
            selectable_fields: Vec::new(),
            name_validation: apimachinery::validation::name_is_dns_subdomain,
            openapi_schema: None,
            list_kind_name: None,
            refuse_create: None,
            structured: true,
            patch_schema: std::sync::OnceLock::new(),
            new_object: std::sync::OnceLock::new(),
            main_reset_fields: std::sync::OnceLock::new(),
            deprecation_warning: None,
            scale: None,
            verbs: ALL_VERBS,
            strategy,
            admission: None,
            provider: None,
            storage_version: StorageVersion::Own,
            extra_subresources: &[],
            custom_resource_discovery: false,
            namespace_lifecycle: true,
        }
    }

    /// How lists and maps merge and are owned: a built-in kind's from upstream's
    /// patch metadata (walked on first use), or what [`Self::set_patch_schema`] set.
    pub fn patch_schema(&self) -> &patch::PatchSchema {
        self.patch_schema
            .get_or_init(|| patch::builtin_schema(&self.group, &self.version, &self.kind))
    }

    /// A schema of its own (a CRD version's list and map types).
    pub fn set_patch_schema(&mut self, schema: patch::PatchSchema) {
        self.patch_schema = std::sync::OnceLock::from(schema);
    }

    pub fn gvk(&self) -> GroupVersionKind {
        GroupVersionKind::new(&self.group, &self.version, &self.kind)
    }

    pub fn group_resource(&self) -> GroupResource {
        GroupResource::new(&self.group, &self.plural)
    }

    /// `group/version` (`version` for the core group); every write asks.
    pub fn api_version(&self) -> String {
        self.api_version_text().into_owned()
    }

    /// Whether `text` is [`Self::api_version`], compared without building it.
    pub fn is_api_version(&self, text: &str) -> bool {
        match text.split_once('/') {
            Some((group, version)) => {
                !self.group.is_empty() && group == self.group && version == self.version
            }
            None => self.group.is_empty() && text == self.version,
        }
    }

    /// [`Self::api_version`], borrowed for the core group (nothing to build).
    pub fn api_version_text(&self) -> std::borrow::Cow<'_, str> {
        if self.group.is_empty() {
            std::borrow::Cow::Borrowed(&self.version)
        } else {
            std::borrow::Cow::Owned([self.group.as_str(), "/", &self.version].concat())
        }
    }

    /// An empty object of this type as upstream's `New()` encodes it: for
    /// built-in kinds the fields Go writes although they are zero (`spec:
    /// {containers: null}`, `spec.pool.generation: 0`), for custom resources
    /// `{}`. A create's managedFields credit what differs from it.
    pub fn new_object(&self) -> &Value {
        self.new_object.get_or_init(|| {
            let mut empty = Value::Object(Default::default());
            if self.structured {
                crate::zero_fields::fill(&self.group, &self.version, &self.kind, &mut empty);
                // A Go type the table does not know (an extension server's):
                // its non-pointer `metadata`, `spec` and `status` structs.
                if empty.as_object().is_some_and(|m| m.is_empty()) {
                    empty = serde_json::json!({"metadata": {}, "spec": {}, "status": {}});
                }
            }
            empty
        })
    }

    /// The fields a write through `subresource` resets, which its writer is
    /// never credited with (upstream's `GetResetFields` of the strategy
    /// behind it): `status` through the main resource of a kind with a status
    /// subresource, `spec` (and for some kinds parts of `metadata`) through
    /// `/status`.
    pub fn reset_fields(&self, subresource: &apimachinery::Subresource) -> FieldSet {
        use apimachinery::Subresource as S;
        let kind = (self.group.as_str(), self.kind.as_str());
        let paths: &[&[&str]] = match subresource {
            S::None if kind == ("certificates.k8s.io", "CertificateSigningRequest") => {
                &[&["spec"], &["status"]]
            }
            S::None | S::Finalize if self.has_status => &[&["status"]],
            S::Status if kind == ("certificates.k8s.io", "CertificateSigningRequest") => {
                &[&["spec"], &["status", "conditions"]]
            }
            S::Approval if kind == ("certificates.k8s.io", "CertificateSigningRequest") => {
                &[&["spec"], &["status", "certificate"]]
            }
            S::Status if kind == ("apps", "Deployment") => &[&["spec"], &["metadata", "labels"]],
            S::Status if kind == ("", "Pod") => &[
                &["spec"],
                &["metadata", "deletionTimestamp"],
                &["metadata", "ownerReferences"],
            ],
            S::Status if !self.structured || STATUS_RESETS_METADATA.contains(&kind) => {
                &[&["metadata"], &["spec"]]
            }
            S::Status => &[&["spec"]],
            _ => &[],
        };
        crate::managed_fields::field_paths(paths)
    }

    /// How the field manager tracks writes through `subresource` (the main
    /// resource's reset fields worked out once).
    pub fn tracking(&self, subresource: &apimachinery::Subresource) -> Tracking<'_> {
        let reset = match subresource {
            apimachinery::Subresource::None => std::borrow::Cow::Borrowed(
                self.main_reset_fields
                    .get_or_init(|| self.reset_fields(subresource)),
            ),
            _ => std::borrow::Cow::Owned(self.reset_fields(subresource)),
        };
        Tracking {
            schema: self.patch_schema(),
            reset,
            empty: Some(self.new_object()),
        }
    }

    pub fn list_kind(&self) -> String {
        self.list_kind_name
            .clone()
            .unwrap_or_else(|| format!("{}List", self.kind))
    }

    pub fn verbs(&self) -> Vec<&'static str> {
        self.verbs.to_vec()
    }

    /// Whether objects of this type are stored (not reviews computed per request).
    pub fn is_stored(&self) -> bool {
        self.verbs.contains(&"get")
    }

    /// Whether `field` may be used in a field selector; if not, upstream's
    /// refusal (a 400 BadRequest).
    pub fn check_field_label(&self, field: &str) -> Result<(), FieldLabelError> {
        let listed = || self.selectable_fields.iter().any(|f| f == field);
        let accepted = match self.field_labels {
            FieldLabels::Metadata => matches!(field, "metadata.name" | "metadata.namespace"),
            FieldLabels::Registered(_) => listed(),
            FieldLabels::CustomResource => {
                field == "metadata.name"
                    || (field == "metadata.namespace" && self.namespaced)
                    || listed()
            }
        };
        if accepted {
            return Ok(());
        }
        let label = field.to_string();
        Err(match self.field_labels {
            FieldLabels::Metadata => FieldLabelError::NotKnown(label),
            FieldLabels::Registered(FieldLabelRefusal::NotSupportedForKind) => {
                FieldLabelError::NotSupportedForKind {
                    label,
                    kind: self.kind.clone(),
                }
            }
            _ => FieldLabelError::NotSupported(label),
        })
    }

    /// The value of a selectable field.
    pub fn field_value(&self, obj: &Value, field: &str) -> Option<String> {
        match field {
            "metadata.name" => Some(apimachinery::meta::name(obj).to_string()),
            "metadata.namespace" => Some(apimachinery::meta::namespace(obj).to_string()),
            _ => self.strategy.field(obj, field),
        }
    }
}

#[cfg(test)]
mod tests {
    use apimachinery::Subresource;
    use serde_json::json;

    use crate::managed_fields::field_paths;

    fn kind(group: &str, kind: &str) -> std::sync::Arc<super::ResourceType> {
        crate::builtin::resource_types()
            .into_iter()
            .find(|t| t.group == group && t.kind == kind)
            .unwrap_or_else(|| panic!("{group}/{kind} is served"))
    }

    /// A strategy that says its preparation left the body alone did: the
    /// store skips the second pass of Go's zero fields on that word. Every
    /// built-in type, on bodies with a spec, a status and data.
    #[test]
    fn a_body_prepared_as_unchanged_is_unchanged() {
        let ctx = crate::RequestContext {
            user: "alice".into(),
            groups: vec!["system:authenticated".into()],
            ..Default::default()
        };
        let mut unchanged = 0;
        for rtype in crate::builtin::resource_types() {
            for body in [
                json!({}),
                json!({"spec": {"a": 1}, "status": {"phase": "x"}, "data": {"k": "v"}}),
                json!({"spec": null, "status": null, "stringData": {"k": "v"}}),
            ] {
                let mut value = body;
                value["apiVersion"] = json!(rtype.api_version());
                value["kind"] = json!(rtype.kind);
                value["metadata"] = json!({"name": "x", "namespace": "default"});
                let mut object = crate::builtin::typed_objects::typed(&value);
                let before = object.body.clone();
                if rtype.strategy.prepare_create_for(&mut object, &ctx)
                    == super::Prepared::BodyUnchanged
                {
                    assert_eq!(object.body, before, "{}", rtype.kind);
                    unchanged += 1;
                }
            }
        }
        // ConfigMaps at least keep the default preparation.
        assert!(unchanged >= 3, "{unchanged}");
    }

    /// `is_api_version` answers as comparing with the built `api_version`.
    #[test]
    fn api_version_compared_as_built() {
        let texts = [
            "v1",
            "v2",
            "apps/v1",
            "apps/v2",
            "/v1",
            "apps/",
            "apps",
            "apps/v1/x",
            "",
            "/",
            "batch/v1",
            "v1/apps",
        ];
        for rtype in [kind("", "ConfigMap"), kind("apps", "Deployment")] {
            for text in texts {
                assert_eq!(
                    rtype.is_api_version(text),
                    text == rtype.api_version(),
                    "{text:?} for {}",
                    rtype.api_version()
                );
            }
        }
    }

    /// Upstream's `GetResetFields` of the strategies behind each write.
    #[test]
    fn reset_fields_follow_upstreams_strategies() {
        let deployments = kind("apps", "Deployment");
        assert_eq!(
            deployments.reset_fields(&Subresource::None),
            field_paths(&[&["status"]])
        );
        assert_eq!(
            deployments.reset_fields(&Subresource::Status),
            field_paths(&[&["spec"], &["metadata", "labels"]])
        );
        assert!(deployments.reset_fields(&Subresource::Scale).is_empty());
        let pods = kind("", "Pod");
        assert_eq!(
            pods.reset_fields(&Subresource::Status),
            field_paths(&[
                &["spec"],
                &["metadata", "deletionTimestamp"],
                &["metadata", "ownerReferences"]
            ])
        );
        assert!(pods.reset_fields(&Subresource::Resize).is_empty());
        assert_eq!(
            kind("resource.k8s.io", "ResourceClaim").reset_fields(&Subresource::Status),
            field_paths(&[&["metadata"], &["spec"]])
        );
        assert_eq!(
            kind("certificates.k8s.io", "CertificateSigningRequest")
                .reset_fields(&Subresource::None),
            field_paths(&[&["spec"], &["status"]])
        );
        // No status subresource: nothing reset.
        assert!(
            kind("", "ConfigMap")
                .reset_fields(&Subresource::None)
                .is_empty()
        );
        assert_eq!(
            kind("", "Namespace").reset_fields(&Subresource::Finalize),
            field_paths(&[&["status"]])
        );
    }

    /// `New()` as Go encodes it: zero fields included.
    #[test]
    fn new_objects_hold_what_go_writes() {
        let slices = kind("resource.k8s.io", "ResourceSlice");
        let empty = slices.new_object();
        assert_eq!(empty["spec"]["pool"]["generation"], json!(0));
        assert_eq!(empty["spec"]["driver"], json!(""));
        assert_eq!(
            kind("", "Pod").new_object()["spec"]["containers"],
            json!(null)
        );
        assert_eq!(kind("", "ConfigMap").new_object(), &json!({"metadata": {}}));
    }

    /// Mutating admission sees the object as the store would write it out,
    /// and an object nobody asked for stays typed as it was.
    #[test]
    fn admitted_objects_are_written_out_only_when_asked() {
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "d", "labels": {"a": "b"},
                "managedFields": [{"manager": "m", "operation": "Update", "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:data": {}}, "time": "2024-01-01T00:00:00Z"}]},
            "data": {"k": "v"}});
        let typed = apimachinery::DynamicObject::from_value(object, "metadata.").unwrap();
        let mut untouched = typed.clone();
        assert_eq!(super::AdmittedObject::new(&mut untouched).into_json(), None);
        assert_eq!(untouched, typed);
        let mut asked = typed.clone();
        let mut admitted = super::AdmittedObject::new(&mut asked);
        admitted.json()["data"]["k"] = json!("changed");
        let mut expected = typed.to_value();
        expected["data"]["k"] = json!("changed");
        assert_eq!(admitted.into_json(), Some(expected));
    }
}
