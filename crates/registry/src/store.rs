//! The generic store: create/get/list/watch/update/delete with Kubernetes object
//! semantics (system metadata, optimistic concurrency, finalizers, dry run,
//! no-op detection), for any `ResourceType`.
//!
//! Hot path: `get` and `list` read the watch cache; writes go to the backend once.

use serde_json::{Value, json};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use apimachinery::object_meta::ManagedFieldsEntry;
use apimachinery::options::PropagationPolicy;
use apimachinery::validation::validate_typed_object_meta;
use apimachinery::{
    DynamicObject, ErrorList, FieldError, FieldPath, StatusError, Subresource, meta, time,
};
use storage::{Entry, WatchStart, Watcher};

use crate::encoding::{Encoded, encode_for_storage, encode_typed_for_storage};
use crate::errors::to_status;
use crate::managed_fields;
use crate::object::Object;
use crate::options::{
    ContinueToken, DeleteOptions, ListOptions, ReadFreshness, RequestContext, WatchOptions,
};
use crate::resource::{
    AdmittedObject, Allocation, AllocationPool, Attributes, GlobalAdmission, ObjectJson, Operation,
    Prepared, ResourceType,
};

pub use crate::object::Storage;

type Result<T> = std::result::Result<T, StatusError>;

/// How many times an unconditional update retries after losing a race.
const MAX_CONFLICT_RETRIES: usize = 16;

pub struct GenericStore {
    pub rtype: Arc<ResourceType>,
    storage: Arc<Storage>,
    /// Key prefix, e.g. `/registry`.
    prefix: String,
    /// Admission for every type (policies), after the type's own.
    global_admission: Option<Arc<dyn GlobalAdmission>>,
    /// The namespace version a create last found active.
    active_namespace: ActiveNamespace,
}

pub struct ListResult {
    pub items: Vec<Arc<Object>>,
    pub resource_version: i64,
    pub continue_token: Option<String>,
    pub remaining: Option<i64>,
}

/// A written body as the registry holds it: typed metadata and the JSON
/// body, and the request's `managedFields` as sent (Go's decoder tells `[]`,
/// a reset, from none, which the typed list cannot: they stay JSON until the
/// field manager reads them).
pub struct Incoming {
    pub object: DynamicObject,
    pub managed_fields: Option<Value>,
}

/// What a PUT did ([`GenericStore::replace`]).
pub struct Replaced {
    pub object: Arc<Object>,
    /// The object did not exist and was created (HTTP 201).
    pub created: bool,
}

/// What a DELETE did.
pub struct DeleteOutcome {
    pub object: Value,
    /// False when finalizers keep the object around (HTTP 202).
    pub deleted: bool,
}

impl GenericStore {
    pub fn new(rtype: Arc<ResourceType>, storage: Arc<Storage>, prefix: &str) -> Self {
        GenericStore {
            rtype,
            storage,
            prefix: prefix.trim_end_matches('/').to_string(),
            global_admission: None,
            active_namespace: ActiveNamespace::default(),
        }
    }

    /// This store with admission for every type run on its writes.
    pub fn with_global_admission(mut self, admission: Option<Arc<dyn GlobalAdmission>>) -> Self {
        self.global_admission = admission;
        self
    }

    /// A written body as the registry holds it ([`Incoming`]). A body that
    /// is not a JSON object is a 400.
    pub fn decode(&self, mut obj: Value) -> Result<Incoming> {
        if !obj.is_object() {
            return Err(StatusError::bad_request(
                "the body of the request must be an object",
            ));
        }
        let managed_fields = meta::member_mut(&mut obj)
            .and_then(Value::as_object_mut)
            .and_then(|md| md.remove("managedFields"));
        let prefix = if self.rtype.structured {
            "metadata."
        } else {
            ""
        };
        Ok(Incoming {
            object: DynamicObject::from_value(obj, prefix)?,
            managed_fields,
        })
    }

    fn typed(&self, obj: Value) -> Result<(DynamicObject, Option<Value>)> {
        let Incoming {
            object,
            managed_fields,
        } = self.decode(obj)?;
        Ok((object, managed_fields))
    }

    /// A stored (or presented) object as the registry holds it.
    fn typed_stored(&self, obj: &Value) -> Result<DynamicObject> {
        let prefix = if self.rtype.structured {
            "metadata."
        } else {
            ""
        };
        DynamicObject::from_value(obj.clone(), prefix).map_err(|e| StatusError::internal(e.0))
    }

    /// Decode-time defaulting, the writer's managedFields, then mutating
    /// admission for every type, before the type's own preparation: the
    /// order of upstream's handlers, whose field manager credits the writer
    /// with what it sent (defaulted), not with what admission, the strategy
    /// or allocation add. What admission adds outside a custom resource's
    /// schema is pruned, as upstream prunes when it stores the object.
    /// The field manager and admission read JSON: the object is written out
    /// for them once and read back.
    async fn mutate_globally(
        &self,
        operation: Operation,
        name: &str,
        object: &mut DynamicObject,
        request_managed: Option<Value>,
        old_object: Option<&Value>,
        ctx: &RequestContext,
    ) -> Result<()> {
        self.default(object);
        self.record_write(ctx, object, request_managed, old_object);
        let Some(admission) = &self.global_admission else {
            return Ok(());
        };
        // The object goes as `object` (mutable); `attributes.object` is
        // unset rather than a copy made for every write.
        let attributes = Attributes {
            operation,
            rtype: &self.rtype,
            name,
            object: None,
            old_object,
            ctx,
        };
        let mut admitted = AdmittedObject::new(object);
        let mutated = admission.mutate(&attributes, &mut admitted).await?;
        let Some(mut value) = admitted.into_json() else {
            return Ok(());
        };
        if mutated {
            self.rtype.strategy.prune(&mut value);
        }
        let prefix = if self.rtype.structured {
            "metadata."
        } else {
            ""
        };
        *object = DynamicObject::from_value(value, prefix)?;
        if mutated {
            self.default(object);
        }
        Ok(())
    }

    /// Decode-time defaults, and for built-in kinds the fields Go's encoder
    /// writes although they are zero (upstream's objects pass through Go types).
    fn default(&self, object: &mut DynamicObject) {
        self.rtype.strategy.default(object);
        self.write_zero_fields(object);
    }

    fn write_zero_fields(&self, object: &mut DynamicObject) {
        if self.rtype.structured {
            crate::zero_fields::fill_body(
                &self.rtype.group,
                &self.rtype.version,
                &self.rtype.kind,
                &mut object.body,
            );
        }
    }

    async fn admit_globally(
        &self,
        operation: Operation,
        name: &str,
        object: Option<&ObjectJson<'_>>,
        old_object: Option<&Value>,
        ctx: &RequestContext,
    ) -> Result<()> {
        let Some(admission) = &self.global_admission else {
            return Ok(());
        };
        let attributes = Attributes {
            operation,
            rtype: &self.rtype,
            name,
            object,
            old_object,
            ctx,
        };
        admission.admit(&attributes).await
    }

    /// Another handle on the same resource and storage.
    pub fn clone_handle(&self) -> Self {
        GenericStore {
            rtype: self.rtype.clone(),
            storage: self.storage.clone(),
            prefix: self.prefix.clone(),
            global_admission: self.global_admission.clone(),
            active_namespace: ActiveNamespace::default(),
        }
    }

    /// The key prefix (e.g. `/registry`) this store writes under.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    pub fn storage(&self) -> &Arc<Storage> {
        &self.storage
    }

    pub fn key(&self, namespace: &str, name: &str) -> String {
        // Every request builds one: joined, not formatted.
        let path = &self.rtype.storage_path;
        let mut key = String::with_capacity(
            self.prefix.len() + path.len() + namespace.len() + name.len() + 3,
        );
        key.push_str(&self.prefix);
        key.push('/');
        key.push_str(path);
        if self.rtype.namespaced {
            key.push('/');
            key.push_str(namespace);
        }
        key.push('/');
        key.push_str(name);
        key
    }

    /// Take what `obj` needs from its type's shared pool (Services: cluster
    /// IPs, node ports), in the store.
    async fn allocate(
        &self,
        obj: &mut DynamicObject,
        old: Option<&DynamicObject>,
        dry_run: bool,
    ) -> Result<Allocation> {
        let Some(allocator) = &self.rtype.allocator else {
            return Ok(Allocation::nothing());
        };
        allocator.allocate(&self.pool(), obj, old, dry_run).await
    }

    /// Give back what a deleted object held from its type's pool.
    async fn release(&self, obj: &DynamicObject) {
        if let Some(allocator) = &self.rtype.allocator {
            allocator.release(&self.pool(), obj).await;
        }
    }

    fn pool(&self) -> AllocationPool {
        AllocationPool {
            storage: self.storage.clone(),
            prefix: self.prefix.clone(),
        }
    }

    /// Key prefix of a collection: one namespace, or all.
    pub fn collection(&self, namespace: &str) -> String {
        if self.rtype.namespaced && !namespace.is_empty() {
            format!("{}/{}/{namespace}/", self.prefix, self.rtype.storage_path)
        } else {
            format!("{}/{}/", self.prefix, self.rtype.storage_path)
        }
    }

    fn storage_error(&self, err: storage::Error, name: &str) -> StatusError {
        to_status(err, &self.rtype.group_resource(), name)
    }

    fn not_found(&self, name: &str) -> StatusError {
        StatusError::not_found(&self.rtype.group_resource(), name)
    }

    async fn sync(&self) -> Result<()> {
        self.storage
            .sync()
            .await
            .map(|_| ())
            .map_err(|e| self.storage_error(e, ""))
    }

    async fn current(&self, ctx: &RequestContext, name: &str) -> Result<Arc<Entry<Object>>> {
        self.sync().await?;
        self.storage
            .get(&self.key(&ctx.namespace, name))
            .ok_or_else(|| self.not_found(name))
    }

    pub async fn get(&self, ctx: &RequestContext, name: &str) -> Result<Arc<Object>> {
        self.present(&self.current(ctx, name).await?.object).await
    }

    /// The presentation boundary: a stored object as this type serves it
    /// (converted, pruned, read-time defaults), made once per object version and
    /// served version, shared by get, list and watch. Objects served as
    /// stored are shared as they are.
    pub async fn present(&self, obj: &Arc<Object>) -> Result<Arc<Object>> {
        // Most objects are served as stored: no allocation on that path.
        if !self.rtype.strategy.converts_on_read(obj) {
            return Ok(obj.clone());
        }
        let mut presented = self.present_all(std::slice::from_ref(obj)).await?;
        Ok(presented.pop().unwrap_or_else(|| obj.clone()))
    }

    /// [`GenericStore::present`] for many objects: those a converter must
    /// convert go to it in one call.
    pub async fn present_all(&self, objects: &[Arc<Object>]) -> Result<Vec<Arc<Object>>> {
        let strategy = &self.rtype.strategy;
        let key = self.rtype.presentation;
        let mut presented: Vec<Option<Arc<Object>>> = objects
            .iter()
            .map(|o| {
                if !strategy.converts_on_read(o) {
                    Some(o.clone())
                } else {
                    o.presentation(key)
                }
            })
            .collect();
        if let Some(converter) = &self.rtype.converter {
            let served_api_version = self.rtype.api_version();
            let outside: Vec<usize> = (0..objects.len())
                .filter(|&i| {
                    presented[i].is_none() && objects[i].api_version() != served_api_version
                })
                .collect();
            if !outside.is_empty() {
                let decoded: Vec<Arc<Value>> =
                    outside.iter().map(|&i| objects[i].value()).collect();
                let values = decoded.iter().map(|v| v.as_ref()).collect();
                let converted = converter.convert(values, &served_api_version).await?;
                for (&i, value) in outside.iter().zip(converted) {
                    let value = strategy.convert_from_storage(&value).unwrap_or(value);
                    presented[i] = Some(objects[i].keep_presentation(key, Some(value)));
                }
            }
        }
        Ok(presented
            .into_iter()
            .zip(objects)
            .map(|(p, o)| {
                p.unwrap_or_else(|| {
                    o.keep_presentation(key, strategy.convert_from_storage(&o.value()))
                })
            })
            .collect())
    }

    /// The stored bytes for a served object, and its stored form when it was
    /// converted (written in another version than the storage one).
    async fn encode(&self, obj: &DynamicObject) -> Result<(Encoded, Option<Value>)> {
        if let Some(converter) = &self.rtype.converter
            && obj.api_version() != converter.storage_api_version()
        {
            let storage_version = converter.storage_api_version().to_string();
            let served = obj.to_value();
            let mut converted = converter.convert(vec![&served], &storage_version).await?;
            let stored = converted.pop().unwrap_or(Value::Null);
            return Ok((Encoded::unplaced(encode_for_storage(&stored)), Some(stored)));
        }
        if !self.rtype.strategy.stored_as_served()
            && let Some(converted) = self.rtype.strategy.to_storage(&obj.to_value())
        {
            // Answered from what was stored, converted back (a field the
            // storage version lacks is gone, as upstream answers).
            return Ok((
                Encoded::unplaced(encode_for_storage(&converted)),
                Some(converted),
            ));
        }
        Ok((encode_typed_for_storage(obj), None))
    }

    /// What a write answers: the object as written at `revision`. One a
    /// converter stored in another version is read back through it, as
    /// upstream decodes the stored object for its answer (the presentation
    /// is then cached for later reads).
    async fn answer(
        &self,
        key: &str,
        revision: i64,
        served: DynamicObject,
        stored: Option<Value>,
        bytes: &Encoded,
    ) -> Result<Arc<Object>> {
        match stored {
            Some(stored) => {
                let stored = self.written(key, revision, stored);
                self.present(&stored).await
            }
            None if self.typed_stored_as_served(&served) => {
                // The stored bytes are the served object but for its version.
                let object = Object::from_written(bytes, revision)
                    .map(Arc::new)
                    .unwrap_or_else(|| self.written(key, revision, served.into_value()));
                self.storage.remember(key, revision, object.clone());
                Ok(object)
            }
            None => Ok(self.written(key, revision, served.into_value())),
        }
    }

    /// Whether `obj` (served) is also its stored form.
    fn stored_as_served(&self, obj: &Value) -> bool {
        match &self.rtype.converter {
            Some(converter) => meta::api_version(obj) == converter.storage_api_version(),
            None => {
                self.rtype.strategy.stored_as_served()
                    || self.rtype.strategy.to_storage(obj).is_none()
            }
        }
    }

    /// [`Self::stored_as_served`] of a typed object, written out as JSON only
    /// for a type that converts what it stores.
    fn typed_stored_as_served(&self, obj: &DynamicObject) -> bool {
        match &self.rtype.converter {
            Some(converter) => obj.api_version() == converter.storage_api_version(),
            None => {
                self.rtype.strategy.stored_as_served()
                    || self.rtype.strategy.to_storage(&obj.to_value()).is_none()
            }
        }
    }

    /// A predicate for label and field selectors (the fields were checked at parse time).
    pub fn predicate(
        &self,
        labels: Option<apimachinery::selector::LabelSelector>,
        fields: Option<apimachinery::selector::FieldSelector>,
    ) -> storage::cache::Predicate<Object> {
        let rtype = self.rtype.clone();
        // Empty selectors match everything: no object is decoded for them.
        let labels = labels.filter(|l| !l.is_empty());
        let fields = fields.filter(|f| !f.is_empty());
        if labels.is_none() && fields.is_none() {
            return Arc::new(|_: &str, _: &Object| true);
        }
        Arc::new(move |key: &str, o: &Object| {
            selected(&rtype, labels.as_ref(), fields.as_ref(), key, o)
        })
    }

    /// Reject selectors on fields this type does not support (400, upstream's text).
    pub fn check_field_selector(
        &self,
        fields: Option<&apimachinery::selector::FieldSelector>,
    ) -> Result<()> {
        if let Some(f) = fields {
            for field in f.fields() {
                self.rtype.check_field_label(field)?;
            }
        }
        Ok(())
    }

    pub async fn list(&self, ctx: &RequestContext, opts: ListOptions) -> Result<ListResult> {
        self.check_field_selector(opts.field_selector.as_ref())?;
        let has_selector = opts.label_selector.as_ref().is_some_and(|l| !l.is_empty())
            || opts
                .field_selector
                .as_ref()
                .is_some_and(|f| !f.requirements().is_empty());
        let predicate = self.predicate(opts.label_selector, opts.field_selector);
        let prefix = self.collection(&ctx.namespace);
        let limit = opts.limit;

        // Continuing a paged list: the same snapshot revision, after the last
        // key; a token whose revision was compacted away is answered 410 with
        // one to go on from the latest (`rv: -1`), inconsistently.
        if let Some(token) = &opts.continue_token {
            let start = format!("{prefix}{}", token.start);
            if token.rv == ContinueToken::LATEST {
                let page = self.storage.list(&prefix, Some(&start), limit, &*predicate);
                return self
                    .page_result(
                        page.items,
                        page.revision,
                        page.remaining,
                        &prefix,
                        has_selector,
                    )
                    .await;
            }
            return self
                .list_at(
                    &prefix,
                    Some(&start),
                    token.rv,
                    limit,
                    &*predicate,
                    has_selector,
                )
                .await
                .map_err(|e| match e.code() {
                    410 => expired_continue(&token.start),
                    _ => e,
                });
        }
        match opts.freshness {
            ReadFreshness::Latest => self.sync().await?,
            ReadFreshness::Any => {}
            ReadFreshness::NotOlderThan(rv) => self
                .storage
                .wait_for(rv, Duration::from_secs(3))
                .await
                .map_err(|_| {
                    StatusError::timeout(format!(
                        "Too large resource version: {rv}, current: {}",
                        self.storage.revision()
                    ))
                })?,
            ReadFreshness::Exact(rv) if rv != self.storage.revision() => {
                return self
                    .list_at(&prefix, None, rv, limit, &*predicate, has_selector)
                    .await;
            }
            ReadFreshness::Exact(_) => {}
        }
        let page = self.storage.list(&prefix, None, limit, &*predicate);
        self.page_result(
            page.items,
            page.revision,
            page.remaining,
            &prefix,
            has_selector,
        )
        .await
    }

    /// A page from the backend at a past revision; filtering happens here, so
    /// keep reading until the page is full or the range is exhausted.
    async fn list_at(
        &self,
        prefix: &str,
        start: Option<&str>,
        rv: i64,
        limit: usize,
        predicate: &(dyn Fn(&str, &Object) -> bool + Send + Sync),
        has_selector: bool,
    ) -> Result<ListResult> {
        let entries = self
            .storage
            .range_at(prefix, start, rv, 0)
            .await
            .map_err(|e| match e {
                storage::Error::Compacted { .. } => expired_list(),
                other => self.storage_error(other, ""),
            })?;
        let mut items = Vec::new();
        let mut remaining = 0;
        for entry in entries {
            if !predicate(&entry.key, &entry.object) {
                continue;
            }
            if limit > 0 && items.len() >= limit {
                remaining += 1;
            } else {
                items.push(entry);
            }
        }
        self.page_result(items, rv, remaining, prefix, has_selector)
            .await
    }

    async fn page_result(
        &self,
        entries: Vec<Arc<Entry<Object>>>,
        revision: i64,
        remaining: usize,
        prefix: &str,
        has_selector: bool,
    ) -> Result<ListResult> {
        let continue_token = (remaining > 0).then(|| {
            let last = entries.last().map(|e| &e.key[prefix.len()..]).unwrap_or("");
            ContinueToken::new(revision, last).encode()
        });
        let stored: Vec<Arc<Object>> = entries.iter().map(|e| e.object.clone()).collect();
        Ok(ListResult {
            items: self.present_all(&stored).await?,
            resource_version: revision,
            continue_token,
            // Upstream only knows the count when no selector filters the range.
            remaining: (remaining > 0 && !has_selector).then_some(remaining as i64),
        })
    }

    pub async fn watch(&self, ctx: &RequestContext, opts: WatchOptions) -> Result<Watcher<Object>> {
        self.check_field_selector(opts.field_selector.as_ref())?;
        let predicate = self.predicate(opts.label_selector, opts.field_selector);
        let start = match opts.resource_version {
            // "0" and unset both start with the current state; unset is consistent.
            None => {
                self.sync().await?;
                WatchStart::CurrentState
            }
            Some(0) => WatchStart::CurrentState,
            Some(rv) if opts.send_initial_events => {
                self.storage
                    .wait_for(rv, Duration::from_secs(3))
                    .await
                    .map_err(|e| self.storage_error(e, ""))?;
                WatchStart::CurrentState
            }
            Some(rv) => WatchStart::After(rv),
        };
        self.storage
            .watch(
                &self.collection(&ctx.namespace),
                start,
                predicate,
                opts.bookmarks,
            )
            .await
            .map_err(|e| match e {
                storage::Error::Compacted {
                    requested,
                    compacted,
                } => StatusError::expired(format!(
                    "too old resource version: {requested} ({compacted})"
                )),
                other => self.storage_error(other, ""),
            })
    }

    /// Check that the namespace of a new object exists and is not terminating.
    async fn admit_namespace(&self, namespace: &str) -> Result<()> {
        if !self.rtype.namespaced || !self.rtype.namespace_lifecycle {
            return Ok(());
        }
        let key = [self.prefix.as_str(), "/namespaces/", namespace].concat();
        // The cache is almost always current; only a miss needs a consistent read
        // (the namespace may have been created a moment ago, or by another replica).
        let ns = match self.storage.get(&key) {
            Some(ns) => Some(ns),
            None => {
                self.sync().await?;
                self.storage.get(&key)
            }
        };
        let Some(ns) = ns else {
            return Err(StatusError::not_found(
                &apimachinery::GroupResource::new("", "namespaces"),
                namespace,
            ));
        };
        if self.active_namespace.terminating(&ns) {
            return Err(StatusError::forbidden(
                &self.rtype.group_resource(),
                "",
                &format!(
                    "unable to create new content in namespace {namespace} because it is being terminated"
                ),
            )
            .with_causes(vec![apimachinery::StatusCause {
                reason: "NamespaceTerminating".into(),
                message: format!("namespace {namespace} is being terminated"),
                field: "metadata.namespace".into(),
            }]));
        }
        Ok(())
    }

    fn validate_new(&self, obj: &DynamicObject) -> ErrorList {
        let mut errs = self.validate_metadata(obj);
        errs.extend(self.rtype.strategy.validate(obj));
        errs
    }

    fn validate_metadata(&self, obj: &DynamicObject) -> ErrorList {
        let by_type = self.rtype.name_validation;
        let name_errors = |name: &str, prefix: bool| {
            self.rtype
                .strategy
                .name_errors(obj, name, prefix)
                .unwrap_or_else(|| by_type(name, prefix))
        };
        validate_typed_object_meta(
            &obj.metadata,
            self.rtype.namespaced,
            name_errors,
            &FieldPath::new("metadata"),
        )
    }

    fn invalid(&self, name: &str, errs: &ErrorList) -> StatusError {
        StatusError::invalid(&self.rtype.group, &self.rtype.kind, name, errs)
    }

    pub async fn create(&self, ctx: &RequestContext, obj: Value) -> Result<Arc<Object>> {
        if let Some(reason) = &self.rtype.refuse_create {
            return Err(StatusError::method_not_allowed(reason.clone()));
        }
        self.create_decoded(ctx, self.decode(obj)?).await
    }

    /// [`Self::create`] of a body [`Self::decode`] decoded.
    pub async fn create_decoded(
        &self,
        ctx: &RequestContext,
        incoming: Incoming,
    ) -> Result<Arc<Object>> {
        if let Some(reason) = &self.rtype.refuse_create {
            return Err(StatusError::method_not_allowed(reason.clone()));
        }
        let Incoming {
            object: mut obj,
            managed_fields: managed,
        } = incoming;
        self.set_namespace(ctx, &mut obj)?;
        if !obj.metadata.resource_version.is_empty() {
            return Err(StatusError::internal(
                "resourceVersion should not be set on objects to be created",
            ));
        }
        if obj.metadata.name.is_empty() && !obj.metadata.generate_name.is_empty() {
            obj.metadata.name = generated_name(&obj.metadata.generate_name);
        }
        let name = obj.metadata.name.clone();
        match self.create_named(ctx, obj, managed).await? {
            Created::Stored(object) => Ok(object),
            Created::NameTaken => Err(self
                .name_taken(&self.key(&ctx.namespace, &name), &name)
                .await),
        }
    }

    /// A create once the object is named and in its namespace: a POST's, or
    /// a PUT's of a missing object (upstream's create on update).
    async fn create_named(
        &self,
        ctx: &RequestContext,
        mut obj: DynamicObject,
        managed: Option<Value>,
    ) -> Result<Created> {
        let name = obj.metadata.name.clone();
        wipe_system_metadata(&mut obj);
        // Namespace lifecycle comes first, as upstream's plugin order has it:
        // no admission webhook hears of writes into a missing namespace.
        self.admit_namespace(&ctx.namespace).await?;
        self.mutate_globally(Operation::Create, &name, &mut obj, managed, None, ctx)
            .await?;
        self.fill_create_metadata(&mut obj);
        if self.rtype.strategy.prepare_create_for(&mut obj, ctx) == Prepared::BodyChanged {
            self.write_zero_fields(&mut obj);
        }
        let errs = self.validate_new(&obj);
        if !errs.is_empty() {
            return Err(self.invalid(&obj.metadata.name, &errs));
        }
        self.warn(ctx, &obj);
        let allocation = self.allocate(&mut obj, None, ctx.dry_run).await?;
        let created = self.admit_and_create(ctx, obj).await;
        allocation
            .finish(matches!(created, Ok(Created::Stored(_))))
            .await;
        created
    }

    /// The end of a create, once the object holds what it allocated.
    async fn admit_and_create(
        &self,
        ctx: &RequestContext,
        mut obj: DynamicObject,
    ) -> Result<Created> {
        if let Some(admission) = &self.rtype.admission {
            admission
                .admit(Operation::Create, &obj.to_value(), None, ctx)
                .await?;
        }
        let name = obj.metadata.name.clone();
        self.admit_globally(
            Operation::Create,
            &name,
            Some(&ObjectJson::typed(&obj)),
            None,
            ctx,
        )
        .await?;
        // A PUT's body may name a resourceVersion; admission saw it, the
        // object created has none of it (upstream's storage clears it).
        obj.metadata.resource_version.clear();
        let key = self.key(&ctx.namespace, &name);
        if ctx.dry_run {
            self.sync().await?;
            if self.storage.get(&key).is_some() {
                return Ok(Created::NameTaken);
            }
            return Ok(Created::Stored(Arc::new(Object::new(obj.into_value()))));
        }
        let (bytes, stored) = self.encode(&obj).await?;
        let revision = match self.storage.create(&key, bytes.bytes.clone()).await {
            Ok(revision) => revision,
            Err(storage::Error::AlreadyExists(_)) => return Ok(Created::NameTaken),
            Err(e) => return Err(self.storage_error(e, &name)),
        };
        self.answer(&key, revision, obj, stored, &bytes)
            .await
            .map(Created::Stored)
    }

    /// A create's `AlreadyExists`; upstream's store says so when the name is
    /// taken by an object still being deleted.
    async fn name_taken(&self, key: &str, name: &str) -> StatusError {
        let mut error = StatusError::already_exists(&self.rtype.group_resource(), name);
        // The cache may not have seen the write that marked it yet.
        if let Err(e) = self.sync().await {
            return e;
        }
        let deleting = |e: &Entry<Object>| meta::deletion_timestamp(&e.object.value()).is_some();
        if self.storage.get(key).is_some_and(|e| deleting(&e)) {
            error.0.message = format!("object is being deleted: {}", error.0.message);
        }
        error
    }

    /// The object as written at `revision`, shared with the watch cache so the
    /// cache need not decode the stored bytes, and its JSON is serialized once
    /// for the response and every watcher.
    fn written(&self, key: &str, revision: i64, mut obj: Value) -> Arc<Object> {
        meta::set_resource_version(&mut obj, revision);
        let stored_as_served = self.stored_as_served(&obj);
        let object = Arc::new(Object::new(obj));
        if stored_as_served {
            self.storage.remember(key, revision, object.clone());
        }
        object
    }

    fn set_namespace(&self, ctx: &RequestContext, obj: &mut DynamicObject) -> Result<()> {
        if !self.rtype.namespaced {
            obj.metadata.namespace.clear();
            return Ok(());
        }
        let body_ns = &obj.metadata.namespace;
        if !body_ns.is_empty() && *body_ns != ctx.namespace {
            return Err(StatusError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        obj.metadata.namespace.clone_from(&ctx.namespace);
        Ok(())
    }

    fn fill_create_metadata(&self, obj: &mut DynamicObject) {
        let md = &mut obj.metadata;
        md.uid = apimachinery::object_meta::new_uid();
        md.creation_timestamp = Some(time::now_rfc3339());
        // Kinds that do not track generation keep what the client sent:
        // upstream's `BeforeCreate` leaves it to the strategy.
        if self.rtype.tracks_generation {
            md.generation = 1;
        }
    }

    /// PUT: replace the object (or its status, for the status subresource);
    /// [`Self::replace`], for callers that need not know whether it created.
    pub async fn update(
        &self,
        ctx: &RequestContext,
        name: &str,
        obj: Value,
    ) -> Result<Arc<Object>> {
        self.replace(ctx, name, obj).await.map(|r| r.object)
    }

    /// PUT, saying whether it created the object: a type that creates on
    /// update (upstream's `AllowCreateOnUpdate`) creates a missing object
    /// through its main resource, as a create (its strategy, validation and
    /// admission); other types answer 404.
    pub async fn replace(&self, ctx: &RequestContext, name: &str, obj: Value) -> Result<Replaced> {
        self.set_namespace_for_update(ctx, name, &obj)?;
        let requested_rv = meta::resource_version(&obj).to_string();
        meta::parse_resource_version(&requested_rv).map_err(|e| {
            self.invalid(
                name,
                &vec![FieldError::invalid(
                    &FieldPath::new("metadata").child("resourceVersion"),
                    json!(requested_rv),
                    &e.to_string(),
                )],
            )
        })?;
        let unconditional = requested_rv.is_empty() || requested_rv == "0";
        let requested_uid = meta::uid(&obj).to_string();
        let mutate = |current: &Value| -> Result<Value> {
            // Upstream's update preconditions: a uid in the body must be the object's.
            if !requested_uid.is_empty() && requested_uid != meta::uid(current) {
                return Err(self.uid_precondition_failed(
                    ctx,
                    name,
                    &requested_uid,
                    meta::uid(current),
                ));
            }
            if unconditional && !self.rtype.allow_unconditional_update {
                // Upstream names the resource (plural) here, not the kind.
                return Err(StatusError::invalid(
                    &self.rtype.group,
                    &self.rtype.plural,
                    name,
                    &vec![FieldError::invalid_go(
                        &FieldPath::new("metadata").child("resourceVersion"),
                        "0x0",
                        "must be specified for an update",
                    )],
                ));
            }
            Ok(obj.clone())
        };
        let creates = self.rtype.allow_create_on_update && ctx.subresource == Subresource::None;
        for _ in 0..MAX_CONFLICT_RETRIES {
            match self.modify(ctx, name, &mutate).await? {
                Modified::Written(object) => {
                    return Ok(Replaced {
                        object,
                        created: false,
                    });
                }
                Modified::Missing if !creates => return Err(self.not_found(name)),
                Modified::Missing => {}
            }
            // Upstream's `GuaranteedUpdate` checks the body's uid against
            // the empty object it starts from; a resourceVersion in the body
            // is no precondition there.
            if !requested_uid.is_empty() {
                return Err(self.uid_precondition_failed(ctx, name, &requested_uid, ""));
            }
            let (mut new, managed) = self.typed(obj.clone())?;
            self.set_namespace(ctx, &mut new)?;
            match self.create_named(ctx, new, managed).await? {
                Created::Stored(object) => {
                    return Ok(Replaced {
                        object,
                        created: true,
                    });
                }
                // Another writer created it first: update theirs.
                Created::NameTaken => {}
            }
        }
        Err(StatusError::modified(&self.rtype.group_resource(), name))
    }

    /// The 409 when the body's uid is not the stored object's (`actual`:
    /// empty when there is none): upstream's storage layer checks it, and its
    /// `StorageError` (an invalid object, code 4, at the object's key) is the
    /// conflict's text (kube-apiserver 1.37.2).
    fn uid_precondition_failed(
        &self,
        ctx: &RequestContext,
        name: &str,
        wanted: &str,
        actual: &str,
    ) -> StatusError {
        StatusError::conflict(
            &self.rtype.group_resource(),
            name,
            &format!(
                "StorageError: invalid object, Code: 4, Key: {}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: {wanted}, UID in object meta: {actual}",
                self.key(&ctx.namespace, name)
            ),
        )
    }

    fn set_namespace_for_update(
        &self,
        ctx: &RequestContext,
        name: &str,
        obj: &Value,
    ) -> Result<()> {
        if !obj.is_object() {
            return Err(StatusError::bad_request(
                "the body of the request must be an object",
            ));
        }
        let body_name = meta::name(obj);
        if body_name.is_empty() {
            return Err(StatusError::bad_request(format!(
                "the name of the object ({name} based on URL) was undeterminable: name must be provided"
            )));
        }
        if body_name != name {
            return Err(StatusError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        let body_ns = meta::namespace(obj);
        if self.rtype.namespaced && !body_ns.is_empty() && body_ns != ctx.namespace {
            return Err(StatusError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        Ok(())
    }

    /// Read-modify-write with compare-and-swap. `mutate` gets the current object and
    /// returns the desired one; it runs again if another writer got there first
    /// (unless the desired object names a resourceVersion: then it must be the current one).
    /// A missing object is 404: a PATCH never creates (upstream's patcher).
    pub async fn update_with(
        &self,
        ctx: &RequestContext,
        name: &str,
        mutate: impl Fn(&Value) -> Result<Value>,
    ) -> Result<Arc<Object>> {
        match self.modify(ctx, name, &mutate).await? {
            Modified::Written(object) => Ok(object),
            Modified::Missing => Err(self.not_found(name)),
        }
    }

    /// [`Self::update_with`]'s loop, telling a missing object (found so, or
    /// gone before the write) from the errors.
    async fn modify(
        &self,
        ctx: &RequestContext,
        name: &str,
        mutate: &impl Fn(&Value) -> Result<Value>,
    ) -> Result<Modified> {
        let key = self.key(&ctx.namespace, name);
        self.sync().await?;
        let Some(mut current) = self.storage.get(&key) else {
            return Ok(Modified::Missing);
        };
        for _ in 0..MAX_CONFLICT_RETRIES {
            let presented = self.present(&current.object).await?;
            let old_value = presented.value();
            let old = old_value.as_ref();
            let mut new = mutate(old)?;
            let wanted_rv = meta::resource_version(&new);
            if !wanted_rv.is_empty() && wanted_rv != current.mod_revision.to_string() {
                return Err(StatusError::modified(&self.rtype.group_resource(), name));
            }
            self.set_namespace_for_update(ctx, name, &new)?;
            if self.rtype.namespaced {
                meta::set_str(&mut new, "namespace", &ctx.namespace);
            }
            let (mut new, managed) = self.typed(new)?;
            let old_typed = self.typed_stored(old)?;
            self.mutate_globally(Operation::Update, name, &mut new, managed, Some(old), ctx)
                .await?;
            self.prepare_update(ctx, &mut new, &old_typed)?;
            let allocation = self
                .allocate(&mut new, Some(&old_typed), ctx.dry_run)
                .await?;
            let finalized =
                new.metadata.deletion_timestamp.is_some() && !self.deletion_pending(&new);
            let written = self
                .admit_and_write(
                    ctx,
                    name,
                    Target {
                        key: &key,
                        current: &current,
                        presented: &presented,
                    },
                    (new, finalized),
                    (old, &old_typed),
                )
                .await;
            allocation
                .finish(matches!(written, Ok(Written::Stored(_))))
                .await;
            match written? {
                Written::Stored(object) => return Ok(Modified::Written(object)),
                Written::Conflict(latest) => current = latest,
                Written::Gone => return Ok(Modified::Missing),
            }
        }
        Err(StatusError::modified(&self.rtype.group_resource(), name))
    }

    /// The end of one attempt of [`Self::update_with`], once `new` holds what
    /// it allocated: admission, then the compare-and-swap write (or the delete
    /// of an object whose last finalizer went).
    async fn admit_and_write(
        &self,
        ctx: &RequestContext,
        name: &str,
        target: Target<'_>,
        (mut new, finalized): (DynamicObject, bool),
        (old, old_typed): (&Value, &DynamicObject),
    ) -> Result<Written> {
        let Target {
            key,
            current,
            presented,
        } = target;
        if is_noop(old_typed, &new) {
            return Ok(Written::Stored(presented.clone()));
        }
        if let Some(admission) = &self.rtype.admission {
            admission
                .admit(Operation::Update, &new.to_value(), Some(old), ctx)
                .await?;
        }
        let json = ObjectJson::typed(&new);
        self.admit_globally(Operation::Update, name, Some(&json), Some(old), ctx)
            .await?;
        drop(json);
        if ctx.dry_run {
            return Ok(Written::Stored(Arc::new(Object::new(new.into_value()))));
        }
        let result = if finalized {
            self.storage
                .delete(key, Some(current.mod_revision))
                .await
                .map(|(revision, _)| (revision, None, Encoded::unplaced(bytes::Bytes::new())))
        } else {
            let (bytes, stored) = self.encode(&new).await?;
            self.storage
                .update(key, bytes.bytes.clone(), current.mod_revision)
                .await
                .map(|revision| (revision, stored, bytes))
        };
        match result {
            Ok((revision, ..)) if finalized => {
                new.metadata.resource_version = revision.to_string();
                self.release(&new).await;
                Ok(Written::Stored(Arc::new(Object::new(new.into_value()))))
            }
            Ok((revision, stored, bytes)) => self
                .answer(key, revision, new, stored, &bytes)
                .await
                .map(Written::Stored),
            Err(storage::Error::Conflict {
                current: Some(kv), ..
            }) => self
                .storage
                .decode(&kv)
                .map(Written::Conflict)
                .map_err(|e| self.storage_error(e, name)),
            Err(storage::Error::Conflict { current: None, .. })
            | Err(storage::Error::NotFound(_)) => Ok(Written::Gone),
            Err(e) => Err(self.storage_error(e, name)),
        }
    }

    /// Credit the request's field manager with the change from `live` (for
    /// a create, an empty object of the type) to `obj`, less the fields the
    /// write's strategy resets; `request_managed` is what the request sent
    /// (see [`Incoming`]). Writes through `pods/binding` are the server's
    /// own: upstream records nothing for them. The field manager reads the
    /// body and the typed metadata (written out as JSON beside the body but
    /// for a create from no entries); what it writes back is the list of
    /// entries.
    fn record_write(
        &self,
        ctx: &RequestContext,
        obj: &mut DynamicObject,
        request_managed: Option<Value>,
        live: Option<&Value>,
    ) {
        if ctx.field_manager.is_empty() || ctx.subresource == Subresource::Binding {
            obj.metadata.managed_fields =
                request_managed.map_or_else(Vec::new, ManagedFieldsEntry::list_from_value);
            return;
        }
        let api_version = self.rtype.api_version_text();
        let writer = managed_fields::Writer {
            manager: &ctx.field_manager,
            api_version: &api_version,
            subresource: ctx.subresource.as_str(),
        };
        let tracking = self.rtype.tracking(&ctx.subresource);
        obj.metadata.managed_fields =
            managed_fields::record_dynamic(obj, request_managed, live, &writer, &tracking);
    }

    /// Finalizers (or a type-specific rule) keep a deleted object around.
    fn deletion_pending(&self, obj: &DynamicObject) -> bool {
        !obj.metadata.finalizers.is_empty() || self.rtype.strategy.deletion_blocked(obj)
    }

    /// System fields, strategy rules and validation for an update. The
    /// managedFields were recorded before (see [`Self::mutate_globally`]):
    /// the strategy's rules, which may start from the old object, keep them.
    fn prepare_update(
        &self,
        ctx: &RequestContext,
        new: &mut DynamicObject,
        old: &DynamicObject,
    ) -> Result<()> {
        let status_only = ctx.subresource == Subresource::Status;
        let mut own_validation = None;
        let managed = std::mem::take(&mut new.metadata.managed_fields);
        match ctx.subresource {
            Subresource::Status => self.rtype.strategy.prepare_status_update(new, old),
            // The server's own operation (`pods/{name}/binding`): the handler
            // built the object; upstream writes it without the type's rules.
            Subresource::Binding => {}
            ref sub => match self.rtype.strategy.subresource_update(sub, new, old) {
                Some(errs) => own_validation = Some(errs),
                None => self.rtype.strategy.prepare_update(new, old),
            },
        }
        new.metadata.managed_fields = managed;
        carry_system_metadata(&mut new.metadata, &old.metadata);
        if ctx.subresource == Subresource::Binding {
            return Ok(());
        }
        self.write_zero_fields(new);
        // Upstream's semantic equality: no annotations equal empty ones.
        let annotations_changed = || {
            self.rtype.strategy.annotations_bump_generation()
                && old.metadata.annotations != new.metadata.annotations
        };
        if self.rtype.tracks_generation
            && !status_only
            && (spec_changed(old, new) || annotations_changed())
        {
            new.metadata.generation = old.metadata.generation + 1;
        }
        let mut errs = apimachinery::validation::validate_typed_object_meta_update(
            &new.metadata,
            &old.metadata,
            &FieldPath::new("metadata"),
        );
        if errs.is_empty() {
            errs = match own_validation {
                Some(errs) => errs,
                // Upstream's `BeforeUpdate`: the common metadata checks, then the
                // strategy's `ValidateUpdate` (which repeats the create rules
                // where upstream's does), never the create validation as well.
                None => {
                    let mut errs = self.validate_metadata(new);
                    errs.extend(self.rtype.strategy.validate_update(new, old));
                    errs
                }
            };
        }
        if !errs.is_empty() {
            return Err(self.invalid(&old.metadata.name, &errs));
        }
        self.warn(ctx, new);
        Ok(())
    }

    /// The type's warnings about a valid object written through its main
    /// resource, after mutating admission's and before validating
    /// admission's (upstream's `BeforeCreate`/`BeforeUpdate` add them there).
    fn warn(&self, ctx: &RequestContext, obj: &DynamicObject) {
        if ctx.subresource == Subresource::None {
            for warning in self.rtype.strategy.warnings(obj) {
                ctx.warnings.add(warning);
            }
        }
    }

    /// Upstream's `deletionFinalizersForGarbageCollection`: the garbage
    /// collector's finalizers (`orphan`, `foregroundDeletion`) as the delete
    /// leaves them: the request's policy decides, else the one the object
    /// already has, else the type's default (`orphan` for types that orphan
    /// by default). `None` when they stay as they are.
    fn finalizers_for_deletion(
        &self,
        obj: &DynamicObject,
        opts: &DeleteOptions,
    ) -> Option<Vec<String>> {
        const ORPHAN: &str = "orphan";
        const FOREGROUND: &str = "foregroundDeletion";
        let existing: Vec<&str> = obj.metadata.finalizers.iter().map(String::as_str).collect();
        let first_of_the_two = existing.iter().find(|f| **f == ORPHAN || **f == FOREGROUND);
        let (orphan, foreground) = match opts.propagation_policy {
            Some(PropagationPolicy::Orphan) => (true, false),
            Some(PropagationPolicy::Foreground) => (false, true),
            Some(PropagationPolicy::Background) => (false, false),
            None => match first_of_the_two {
                Some(f) => (*f == ORPHAN, *f == FOREGROUND),
                None => (self.rtype.strategy.orphans_by_default(), false),
            },
        };
        let mut next: Vec<String> = existing
            .iter()
            .filter(|f| **f != ORPHAN && **f != FOREGROUND)
            .map(|f| f.to_string())
            .collect();
        if orphan {
            next.push(ORPHAN.into());
        }
        if foreground {
            next.push(FOREGROUND.into());
        }
        let same =
            next.len() == existing.len() && next.iter().all(|f| existing.contains(&f.as_str()));
        (!same).then_some(next)
    }

    pub async fn delete(
        &self,
        ctx: &RequestContext,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<DeleteOutcome> {
        let key = self.key(&ctx.namespace, name);
        let gr = self.rtype.group_resource();
        if let Some(reason) = self.rtype.strategy.refuse_delete(name) {
            return Err(StatusError::forbidden(&gr, name, reason));
        }
        if opts.propagation_policy.is_none()
            && let Some(warning) = self.rtype.strategy.default_propagation_warning()
        {
            ctx.warnings.add(warning.to_string());
        }
        for _ in 0..MAX_CONFLICT_RETRIES {
            let current = self.current(ctx, name).await?;
            let served = self.present(&current.object).await?.to_value();
            check_preconditions(&served, opts, &self.rtype, name)?;
            self.admit_globally(Operation::Delete, name, None, Some(&served), ctx)
                .await?;
            let mut obj = self.typed_stored(&served)?;
            if obj.metadata.deletion_timestamp.is_none()
                && let Some(finalizers) = self.finalizers_for_deletion(&obj, opts)
            {
                obj.metadata.finalizers = finalizers;
            }
            let marked = match graceful_deletion(self.rtype.strategy.as_ref(), &obj, opts) {
                Grace::Pending => {
                    return Ok(DeleteOutcome {
                        object: obj.into_value(),
                        deleted: false,
                    });
                }
                Grace::Mark { timestamp, period } => Some((timestamp, period)),
                Grace::Now if self.deletion_pending(&obj) => {
                    if obj.metadata.deletion_timestamp.is_some() {
                        return Ok(DeleteOutcome {
                            object: obj.into_value(),
                            deleted: false,
                        });
                    }
                    let period = opts.grace_period_seconds.unwrap_or(0);
                    Some((time::now_rfc3339(), period))
                }
                Grace::Now => None,
            };
            if let Some((timestamp, period)) = marked {
                let mut pending = obj;
                let first = pending.metadata.deletion_timestamp.is_none();
                let md = &mut pending.metadata;
                md.deletion_timestamp = Some(timestamp);
                md.deletion_grace_period_seconds = Some(period);
                if first && (self.rtype.tracks_generation || md.generation > 0) {
                    md.generation += 1;
                }
                self.rtype.strategy.prepare_delete(&mut pending);
                if ctx.dry_run {
                    return Ok(DeleteOutcome {
                        object: pending.into_value(),
                        deleted: false,
                    });
                }
                match self
                    .storage
                    .update(
                        &key,
                        self.encode(&pending).await?.0.bytes,
                        current.mod_revision,
                    )
                    .await
                {
                    Ok(rev) => {
                        pending.metadata.resource_version = rev.to_string();
                        return Ok(DeleteOutcome {
                            object: pending.into_value(),
                            deleted: false,
                        });
                    }
                    Err(storage::Error::Conflict { .. }) => continue,
                    Err(e) => return Err(self.storage_error(e, name)),
                }
            }
            if ctx.dry_run {
                return Ok(DeleteOutcome {
                    object: obj.into_value(),
                    deleted: true,
                });
            }
            match self.storage.delete(&key, Some(current.mod_revision)).await {
                Ok((rev, _)) => {
                    obj.metadata.resource_version = rev.to_string();
                    self.release(&obj).await;
                    return Ok(DeleteOutcome {
                        object: obj.into_value(),
                        deleted: true,
                    });
                }
                Err(storage::Error::Conflict { .. }) => continue,
                Err(e) => return Err(self.storage_error(e, name)),
            }
        }
        Err(StatusError::modified(&gr, name))
    }

    pub async fn delete_collection(
        &self,
        ctx: &RequestContext,
        list: ListOptions,
        opts: &DeleteOptions,
    ) -> Result<Vec<Value>> {
        let items = self
            .list(
                ctx,
                ListOptions {
                    limit: 0,
                    continue_token: None,
                    ..list
                },
            )
            .await?
            .items;
        let mut deleted = Vec::with_capacity(items.len());
        for item in items {
            let mut item_ctx = ctx.clone();
            let value = item.value();
            item_ctx.namespace = meta::namespace(&value).to_string();
            match self.delete(&item_ctx, meta::name(&value), opts).await {
                Ok(outcome) => deleted.push(outcome.object),
                Err(e) if e.code() == 404 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(deleted)
    }
}

/// How one attempt of an update ended.
enum Written {
    Stored(Arc<Object>),
    /// Another writer got there first: the object as it now is.
    Conflict(Arc<Entry<Object>>),
    /// Deleted since it was read.
    Gone,
}

/// How a read-modify-write ended.
enum Modified {
    Written(Arc<Object>),
    /// There is no such object (or it went before the write).
    Missing,
}

/// How a create ended: stored (or, in a dry run, checked), or the name was
/// found taken (an error for a POST; for a PUT, the object to update).
enum Created {
    Stored(Arc<Object>),
    NameTaken,
}

/// What a DELETE does to an object of a type deleted gracefully.
enum Grace {
    /// Deleted now (or kept by finalizers, as any type).
    Now,
    /// Already terminating and the request does not shorten that: unchanged.
    Pending,
    /// Kept, terminating at `timestamp` after `period` seconds.
    Mark { timestamp: String, period: i64 },
}

/// Upstream's `BeforeDelete`: a first graceful delete marks the object for
/// the strategy's period (0: deleted now); a pending one may only be
/// shortened, and a period of 0 (or none recorded) deletes it.
fn graceful_deletion(
    strategy: &dyn crate::Strategy,
    obj: &DynamicObject,
    opts: &DeleteOptions,
) -> Grace {
    let requested = opts.grace_period_seconds;
    let Some(since) = obj.metadata.deletion_timestamp.as_deref() else {
        return match strategy.graceful_delete_period(obj, requested) {
            Some(period) if period > 0 => Grace::Mark {
                timestamp: time::rfc3339_after(period),
                period,
            },
            _ => Grace::Now,
        };
    };
    if strategy.graceful_delete_period(obj, requested).is_none() {
        return Grace::Now;
    }
    let recorded = obj.metadata.deletion_grace_period_seconds.unwrap_or(0);
    match requested {
        _ if recorded == 0 => Grace::Now,
        Some(0) => Grace::Now,
        Some(period) if period < recorded => shortened(since, recorded, period),
        _ => Grace::Pending,
    }
}

/// The deadline moved back by the difference; one already past becomes now,
/// with one second left for whoever finishes the deletion.
fn shortened(since: &str, recorded: i64, period: i64) -> Grace {
    let now = jiff::Timestamp::now();
    let deadline = time::parse(since)
        .and_then(|t| {
            t.checked_add(jiff::SignedDuration::from_secs(period - recorded))
                .ok()
        })
        .unwrap_or(now);
    if deadline < now {
        return Grace::Mark {
            timestamp: time::format_rfc3339(now),
            period: 1,
        };
    }
    Grace::Mark {
        timestamp: time::format_rfc3339(deadline),
        period,
    }
}

/// The 410 of a continue token too old to list consistently, carrying one
/// that goes on after `start` at the latest revision.
fn expired_continue(start: &str) -> StatusError {
    let mut error = expired_list();
    error.0.metadata.insert(
        "continue".into(),
        Value::String(ContinueToken::new(ContinueToken::LATEST, start).encode()),
    );
    error
}

fn expired_list() -> StatusError {
    StatusError::expired(
        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
    )
}

fn check_preconditions(
    obj: &Value,
    opts: &DeleteOptions,
    rtype: &ResourceType,
    name: &str,
) -> Result<()> {
    // Upstream's `BeforeDelete`, which names the kind where a resource goes.
    let gr = apimachinery::GroupResource::new(&rtype.group, &rtype.kind);
    if let Some(uid) = &opts.precondition_uid
        && uid != meta::uid(obj)
    {
        return Err(StatusError::conflict(
            &gr,
            name,
            &format!(
                "the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                meta::uid(obj)
            ),
        ));
    }
    if let Some(rv) = &opts.precondition_resource_version
        && rv != meta::resource_version(obj)
    {
        return Err(StatusError::conflict(
            &gr,
            name,
            &format!(
                "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({}). The object might have been modified",
                meta::resource_version(obj)
            ),
        ));
    }
    Ok(())
}

/// Upstream's `WipeObjectMetaSystemFields` on a create, before anything
/// sees the object (uid and creationTimestamp are set after admission).
fn wipe_system_metadata(obj: &mut DynamicObject) {
    let md = &mut obj.metadata;
    md.uid.clear();
    md.creation_timestamp = None;
    md.deletion_timestamp = None;
    md.deletion_grace_period_seconds = None;
    md.self_link.clear();
}

/// Fields clients may not change through an update.
fn carry_system_metadata(new: &mut apimachinery::ObjectMeta, old: &apimachinery::ObjectMeta) {
    new.resource_version.clone_from(&old.resource_version);
    new.uid.clone_from(&old.uid);
    new.creation_timestamp.clone_from(&old.creation_timestamp);
    new.deletion_timestamp.clone_from(&old.deletion_timestamp);
    new.deletion_grace_period_seconds = old.deletion_grace_period_seconds;
    new.generation = old.generation;
    new.self_link.clear();
}

/// Whether anything outside metadata and status changed (what bumps `generation`).
fn spec_changed(old: &DynamicObject, new: &DynamicObject) -> bool {
    fn spec_members(o: &DynamicObject) -> impl Iterator<Item = (&String, &Value)> {
        let members = o.as_object().into_iter().flatten();
        members.filter(|(k, _)| !matches!(k.as_str(), "status" | "apiVersion" | "kind"))
    }
    spec_members(old).count() != spec_members(new).count()
        || spec_members(old).any(|(k, v)| new.get(k) != Some(v))
}

/// An update that changes nothing but bookkeeping is not written
/// (resourceVersion stays): the same body, and the same metadata but for
/// `resourceVersion` and managedFields' times.
fn is_noop(old: &DynamicObject, new: &DynamicObject) -> bool {
    let bookkeeping_aside = |meta: &apimachinery::ObjectMeta| {
        let mut meta = meta.clone();
        meta.resource_version.clear();
        meta.managed_fields.iter_mut().for_each(|e| e.time = None);
        meta
    };
    old.body == new.body && bookkeeping_aside(&old.metadata) == bookkeeping_aside(&new.metadata)
}

/// Where an update writes: the object's key, its entry as read, and that
/// entry as served (what a no-op update answers).
struct Target<'a> {
    key: &'a str,
    current: &'a Entry<Object>,
    presented: &'a Arc<Object>,
}

/// Upstream's `SimpleNameGenerator`: the base cut to 58 bytes, so that the
/// name fits 63, and a random suffix.
fn generated_name(base: &str) -> String {
    const MAX_BASE: usize = 63 - 5;
    let mut end = base.len().min(MAX_BASE);
    while !base.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{}", &base[..end], random_suffix())
}

/// Five characters of upstream's name generator alphabet (`generateName`,
/// `kube-api-access-*`).
pub fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let bytes = *uuid::Uuid::new_v4().as_bytes();
    bytes[..5]
        .iter()
        .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
        .collect()
}

/// Whether a Namespace is `Terminating`, read without decoding the whole object
/// (every create in the namespace asks).
/// [`namespace_terminating`] of a cached namespace, remembered for the last
/// version found active: every create in a namespace reads it, and it
/// changes rarely. A revision is one write to one key, so the same
/// `mod_revision` is the same namespace version (revisions start at 1: 0 is
/// none).
#[derive(Default)]
struct ActiveNamespace(std::sync::atomic::AtomicI64);

impl ActiveNamespace {
    fn terminating(&self, ns: &Entry<Object>) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        if self.0.load(Relaxed) == ns.mod_revision {
            return false;
        }
        let terminating = namespace_terminating(&ns.object);
        if !terminating {
            self.0.store(ns.mod_revision, Relaxed);
        }
        terminating
    }
}

fn namespace_terminating(ns: &Object) -> bool {
    // Almost every namespace is active: a phase of `Terminating` cannot be
    // there when the word is not, unless written with escapes.
    // Searchers built once: building one costs more than a search here.
    static TERMINATING: LazyLock<memchr::memmem::Finder<'static>> =
        LazyLock::new(|| memchr::memmem::Finder::new(b"Terminating"));
    static ESCAPE: LazyLock<memchr::memmem::Finder<'static>> =
        LazyLock::new(|| memchr::memmem::Finder::new(b"\\u"));
    let json = ns.json();
    if TERMINATING.find(json).is_none() && ESCAPE.find(json).is_none() {
        return false;
    }
    #[derive(serde::Deserialize)]
    struct Namespace {
        status: Option<Status>,
    }
    #[derive(serde::Deserialize)]
    struct Status {
        phase: Option<String>,
    }
    match ns.read::<Namespace>() {
        Ok(ns) => ns.status.and_then(|s| s.phase).as_deref() == Some("Terminating"),
        Err(_) => ns.value().pointer("/status/phase") == Some(&json!("Terminating")),
    }
}

/// Whether `o`, stored at `key`, is selected by `labels` and `fields`. Name
/// and namespace are read from the key (`…/namespace/name`, as the store
/// writes every object): a watch of one name decodes no other object, nor
/// scans it (the whole object is decoded only for labels or other fields).
fn selected(
    rtype: &ResourceType,
    labels: Option<&apimachinery::selector::LabelSelector>,
    fields: Option<&apimachinery::selector::FieldSelector>,
    key: &str,
    o: &Object,
) -> bool {
    let decoded = std::cell::OnceCell::new();
    let value = || decoded.get_or_init(|| o.value());
    labels.is_none_or(|l| l.matches(meta::labels(value())))
        && fields.is_none_or(|f| {
            f.matches(|field| match field {
                "metadata.name" => Some(std::borrow::Cow::Borrowed(
                    key_name_and_namespace(rtype, key).0,
                )),
                "metadata.namespace" => Some(std::borrow::Cow::Borrowed(
                    key_name_and_namespace(rtype, key).1,
                )),
                _ => rtype
                    .field_value(value(), field)
                    .map(std::borrow::Cow::Owned),
            })
        })
}

/// The name and namespace (`""` for a cluster-scoped type) a key names.
fn key_name_and_namespace<'k>(rtype: &ResourceType, key: &'k str) -> (&'k str, &'k str) {
    // Split at an ASCII `/`, so at character boundaries; memrchr, not
    // `rsplit_once`'s char searcher (every name-selected watcher asks this
    // of every event of its type).
    let split_last =
        |s: &'k str| memchr::memrchr(b'/', s.as_bytes()).map(|at| (&s[..at], &s[at + 1..]));
    let (parent, name) = split_last(key).unwrap_or(("", key));
    let namespace = match rtype.namespaced {
        true => split_last(parent).map_or("", |(_, ns)| ns),
        false => "",
    };
    (name, namespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_namespace_terminates_by_its_phase_however_written() {
        let ns = |json: &'static [u8]| Object::from_json(bytes::Bytes::from_static(json));
        assert!(!namespace_terminating(&ns(
            br#"{"kind":"Namespace","metadata":{"name":"a"},"status":{"phase":"Active"}}"#
        )));
        assert!(!namespace_terminating(&ns(
            br#"{"metadata":{"name":"Terminating"},"status":{"phase":"Active"}}"#
        )));
        assert!(namespace_terminating(&ns(
            br#"{"metadata":{"name":"a"},"status":{"phase":"Terminating"}}"#
        )));
        assert!(namespace_terminating(&ns(
            br#"{"metadata":{"name":"a"},"status":{"phase":"\u0054erminating"}}"#
        )));
    }

    /// Selection reads name and namespace from the key the store writes an
    /// object at as decoding the object would (namespaced or not), beside
    /// labels and other fields.
    #[test]
    fn selection_by_name_reads_as_the_decoded_object() {
        use apimachinery::selector::{FieldSelector, LabelSelector};
        let rtype = |plural: &str| {
            crate::builtin::resource_types()
                .into_iter()
                .find(|t| t.group.is_empty() && t.plural == plural)
                .unwrap()
        };
        let objects: [(&str, &'static [u8]); 5] = [
            ("secrets", br#"{"kind":"Secret","apiVersion":"v1","metadata":{"name":"a","namespace":"x","labels":{"k":"v"}},"type":"t"}"#),
            ("secrets", br#"{"kind":"Secret","apiVersion":"v1","metadata":{"name":"\u0061","namespace":"y"},"type":"u"}"#),
            ("secrets", br#"{"kind":"Secret","apiVersion":"v1","metadata":{"namespace":"x","name":"b"}}"#),
            ("secrets", br#"{"kind":"Secret","apiVersion":"v1","metadata":{"name":"ab","namespace":"x"}}"#),
            ("namespaces", br#"{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"x","labels":{"k":"v"}}}"#),
        ];
        let field_selectors = [
            "metadata.name=a",
            "metadata.name!=a",
            "metadata.name=x",
            "metadata.namespace=x",
            "metadata.namespace=",
            "metadata.name=a,metadata.namespace=x",
            "metadata.name=ab,type=t",
            "type=u",
        ];
        for (plural, json) in objects {
            let rtype = rtype(plural);
            let o = Object::from_json(bytes::Bytes::from_static(json));
            let value = o.value();
            let key = match meta::namespace(&value) {
                "" => format!("/registry/{plural}/{}", meta::name(&value)),
                ns => format!("/registry/{plural}/{ns}/{}", meta::name(&value)),
            };
            for fields in field_selectors {
                let fields = FieldSelector::parse(fields).unwrap();
                if fields.fields().any(|f| rtype.check_field_label(f).is_err()) {
                    continue;
                }
                for labels in [None, Some(LabelSelector::parse("k=v").unwrap())] {
                    let plain = labels
                        .as_ref()
                        .is_none_or(|l| l.matches(meta::labels(&value)))
                        && fields.matches(|f| rtype.field_value(&value, f));
                    let got = selected(&rtype, labels.as_ref(), Some(&fields), &key, &o);
                    assert_eq!(got, plain, "{fields} {labels:?} {key}");
                }
            }
        }
    }

    /// The remembered answer is the plain one, whatever order versions of
    /// namespaces are asked about in.
    #[test]
    fn a_remembered_active_namespace_answers_as_the_plain_check() {
        let phases = ["Active", "Terminating", "\\u0054erminating", ""];
        let entry = |revision: i64| {
            let phase = phases[(revision as usize * 7) % phases.len()];
            let json = format!(
                r#"{{"kind":"Namespace","metadata":{{"name":"n{}"}},"status":{{"phase":"{phase}"}}}}"#,
                revision % 3
            );
            Entry {
                key: format!("/registry/namespaces/n{}", revision % 3).into(),
                object: Arc::new(Object::from_json(bytes::Bytes::from(json))),
                create_revision: 1,
                mod_revision: revision,
            }
        };
        let remembered = ActiveNamespace::default();
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..500 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let ns = entry(1 + (seed % 12) as i64);
            assert_eq!(
                remembered.terminating(&ns),
                namespace_terminating(&ns.object),
                "{:?}",
                ns.object.json()
            );
        }
    }
}
