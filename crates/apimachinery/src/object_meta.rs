//! Typed `ObjectMeta` (k8s.io/apimachinery's `metav1.ObjectMeta`) and the
//! object it heads ([`DynamicObject`]: typed metadata, untyped body).
//!
//! kube-apiserver decodes every body's `metadata` into its Go struct (custom
//! resources' too: apiextensions coerces it through the same type), so a
//! member's JSON type, its `omitempty`, and its place on the wire are the
//! struct's. Here they are too: [`ObjectMeta::from_value`] refuses what Go's
//! decoder refuses (in its words, [`crate::meta_decode`]), drops what it drops
//! (unknown members, `null`s), keeps times as Go writes them back (UTC, whole
//! seconds), and [`ObjectMeta::write_json`] writes the members in the struct's
//! order, omitting what Go omits, byte for byte as encoding/json writes them.
//!
//! [`ObjectMeta::write_json`] runs once per object written: it writes the
//! bytes straight into the caller's buffer, no `Value` built on the way.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// `metav1.ObjectMeta`, field for field in the Go struct's order. Strings Go
/// tags `omitempty` are empty when absent; pointers are `Option`s.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ObjectMeta {
    pub name: String,
    pub generate_name: String,
    pub namespace: String,
    pub self_link: String,
    pub uid: String,
    pub resource_version: String,
    pub generation: i64,
    /// RFC 3339 text as Go writes it (`2024-01-01T00:00:00Z`: UTC, whole
    /// seconds; [`ObjectMeta::from_value`] normalizes what it reads). Go's zero
    /// time is `None` here (`omitzero`).
    pub creation_timestamp: Option<String>,
    /// As `creation_timestamp`; Go's zero time ([`ZERO_TIME`]) is kept, and
    /// written `null`, as Go writes a pointer to a zero `Time`.
    pub deletion_timestamp: Option<String>,
    pub deletion_grace_period_seconds: Option<i64>,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub owner_references: Vec<OwnerReference>,
    pub finalizers: Vec<String>,
    pub managed_fields: Vec<ManagedFieldsEntry>,
}

/// `metav1.OwnerReference`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OwnerReference {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
    pub controller: Option<bool>,
    pub block_owner_deletion: Option<bool>,
}

/// `metav1.ManagedFieldsEntry`; `fields_v1` is the opaque `FieldsV1` document.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ManagedFieldsEntry {
    pub manager: String,
    pub operation: String,
    pub api_version: String,
    /// As [`ObjectMeta::deletion_timestamp`].
    pub time: Option<String>,
    pub fields_type: String,
    pub fields_v1: Option<FieldsV1>,
    pub subresource: String,
}

/// `metav1.FieldsV1`, which Go keeps as the raw bytes of any JSON value: as
/// decoded from a request or the store, or as the field manager wrote it
/// (a create's entry is written once, as text, and never built as a tree).
#[derive(Debug, Clone)]
pub enum FieldsV1 {
    Value(Value),
    /// Compact JSON of an object tree of objects (a field set), its keys
    /// escaped as Go escapes them: written as it is by either encoder.
    Text(Box<str>),
}

impl FieldsV1 {
    /// The document as a JSON value (the text parsed).
    pub fn to_value(&self) -> Value {
        match self {
            FieldsV1::Value(v) => v.clone(),
            FieldsV1::Text(text) => Self::parse(text),
        }
    }

    pub fn into_value(self) -> Value {
        match self {
            FieldsV1::Value(v) => v,
            FieldsV1::Text(text) => Self::parse(&text),
        }
    }

    /// A `Text` is valid JSON by construction; `Null` would only hide a
    /// writer's bug, which the field manager's tests catch.
    fn parse(text: &str) -> Value {
        serde_json::from_str(text).unwrap_or(Value::Null)
    }

    /// Appends the document: a value as `write` writes it, text as it is.
    fn write_with(&self, out: &mut Vec<u8>, write: fn(&mut Vec<u8>, &Value)) {
        match self {
            FieldsV1::Value(v) => write(out, v),
            FieldsV1::Text(text) => out.extend_from_slice(text.as_bytes()),
        }
    }
}

/// Equal as JSON documents, whichever way each is held.
impl PartialEq for FieldsV1 {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (FieldsV1::Value(a), FieldsV1::Value(b)) => a == b,
            (FieldsV1::Text(a), FieldsV1::Text(b)) => a == b,
            _ => self.to_value() == other.to_value(),
        }
    }
}

/// Go's zero `metav1.Time` as text: a `deletionTimestamp` or managed fields'
/// `time` that is this is written `null`, a `creationTimestamp` not at all.
pub const ZERO_TIME: &str = "0001-01-01T00:00:00Z";

/// A `metadata` Go's decoder refuses, with its message
/// (`json: cannot unmarshal number into Go struct field ObjectMeta.labels of type string`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MetaDecodeError(pub String);

impl From<MetaDecodeError> for crate::status::StatusError {
    fn from(e: MetaDecodeError) -> Self {
        crate::status::StatusError::bad_request(e.0)
    }
}

/// A new object's `metadata.uid` (and a request's audit ID): a random
/// UUID, lower-case and hyphenated as `Uuid`'s `Display` writes it, but by
/// the uuid crate's encoder: through the formatter it cost half of a
/// create's metadata filling.
pub fn new_uid() -> String {
    uuid_text(uuid::Uuid::new_v4())
}

/// `id.to_string()`, written without the formatting machinery.
fn uuid_text(id: uuid::Uuid) -> String {
    let mut buf = uuid::Uuid::encode_buffer();
    String::from(&*id.hyphenated().encode_lower(&mut buf))
}

/// An object as the registry works on it: typed metadata and the rest of the
/// JSON (`apiVersion`, `kind`, `spec`, `status`, … — always a JSON object,
/// never holding `metadata`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DynamicObject {
    /// Boxed: an object moves by value through a write's async steps, and
    /// each move copied the whole metadata.
    pub metadata: Box<ObjectMeta>,
    pub body: Value,
}

impl ObjectMeta {
    /// Decode a body's `metadata` as Go's decoder would into `metav1.ObjectMeta`.
    /// `prefix` is the JSON path of `metadata` as the decoder saw it
    /// (`metadata.` for built-in kinds, empty for custom resources). A
    /// `metadata` that is not an object is refused in the words Go uses when
    /// it decodes `metadata` alone (a custom resource's); for a built-in kind's
    /// words see [`ObjectMeta::from_value_in`].
    pub fn from_value(metadata: Value, prefix: &str) -> Result<Self, MetaDecodeError> {
        Self::from_value_in(metadata, prefix, "")
    }

    /// [`ObjectMeta::from_value`] for the `metadata` of an object of Go type
    /// `kind` (a built-in kind: `ConfigMap`), which Go's message names when
    /// `metadata` is not an object and `prefix` is not empty:
    /// `json: cannot unmarshal string into Go struct field ConfigMap.metadata
    /// of type v1.ObjectMeta` (a custom resource's: `… into Go value of type
    /// v1.ObjectMeta`).
    pub fn from_value_in(
        metadata: Value,
        prefix: &str,
        kind: &str,
    ) -> Result<Self, MetaDecodeError> {
        match &metadata {
            Value::Object(_) => {}
            // Go leaves the struct zero.
            Value::Null => return Ok(Self::default()),
            other => {
                let found = json_type(other);
                let path = prefix.trim_end_matches('.');
                return Err(MetaDecodeError(if path.is_empty() || kind.is_empty() {
                    format!("json: cannot unmarshal {found} into Go value of type v1.ObjectMeta")
                } else {
                    format!(
                        "json: cannot unmarshal {found} into Go struct field {kind}.{path} of type v1.ObjectMeta"
                    )
                }));
            }
        }
        if let Some(message) = crate::meta_decode::decode_error(&metadata, prefix) {
            return Err(MetaDecodeError(message));
        }
        let Value::Object(map) = metadata else {
            return Ok(Self::default());
        };
        // Every member is of its Go type now (or null).
        let custom = prefix.is_empty();
        let mut meta = Self::default();
        for (key, value) in map {
            match key.as_str() {
                "name" => meta.name = string(value),
                "generateName" => meta.generate_name = string(value),
                "namespace" => meta.namespace = string(value),
                "selfLink" => meta.self_link = string(value),
                "uid" => meta.uid = string(value),
                "resourceVersion" => meta.resource_version = string(value),
                "generation" => meta.generation = int64(&value, custom).unwrap_or(0),
                "creationTimestamp" => {
                    // `omitzero`: Go's zero time is no time.
                    meta.creation_timestamp = time(value).filter(|t| t != ZERO_TIME);
                }
                "deletionTimestamp" => meta.deletion_timestamp = time(value),
                "deletionGracePeriodSeconds" => {
                    meta.deletion_grace_period_seconds = int64(&value, custom);
                }
                "labels" => meta.labels = string_map(value),
                "annotations" => meta.annotations = string_map(value),
                "ownerReferences" => {
                    meta.owner_references = structs(value, OwnerReference::from_map);
                }
                "finalizers" => meta.finalizers = strings(value),
                "managedFields" => {
                    meta.managed_fields = structs(value, ManagedFieldsEntry::from_map);
                }
                _ => {}
            }
        }
        Ok(meta)
    }

    /// [`ObjectMeta::to_value`], moving the members rather than copying.
    pub fn into_value(self) -> Value {
        let mut map = Map::new();
        put_string(&mut map, "name", self.name);
        put_string(&mut map, "generateName", self.generate_name);
        put_string(&mut map, "namespace", self.namespace);
        put_string(&mut map, "selfLink", self.self_link);
        put_string(&mut map, "uid", self.uid);
        put_string(&mut map, "resourceVersion", self.resource_version);
        if self.generation != 0 {
            map.insert("generation".into(), self.generation.into());
        }
        if let Some(t) = self.creation_timestamp.filter(|t| t != ZERO_TIME) {
            map.insert("creationTimestamp".into(), t.into());
        }
        if let Some(t) = &self.deletion_timestamp {
            map.insert("deletionTimestamp".into(), time_value(t));
        }
        if let Some(s) = self.deletion_grace_period_seconds {
            map.insert("deletionGracePeriodSeconds".into(), s.into());
        }
        put_string_map(&mut map, "labels", self.labels);
        put_string_map(&mut map, "annotations", self.annotations);
        if !self.owner_references.is_empty() {
            let refs = self.owner_references.iter().map(OwnerReference::to_value);
            map.insert("ownerReferences".into(), Value::Array(refs.collect()));
        }
        if !self.finalizers.is_empty() {
            let list = self.finalizers.into_iter().map(Value::String);
            map.insert("finalizers".into(), Value::Array(list.collect()));
        }
        if !self.managed_fields.is_empty() {
            let list = self
                .managed_fields
                .into_iter()
                .map(ManagedFieldsEntry::into_value);
            map.insert("managedFields".into(), Value::Array(list.collect()));
        }
        Value::Object(map)
    }

    /// The metadata as a JSON object with the members Go would write.
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        put_str(&mut map, "name", &self.name);
        put_str(&mut map, "generateName", &self.generate_name);
        put_str(&mut map, "namespace", &self.namespace);
        put_str(&mut map, "selfLink", &self.self_link);
        put_str(&mut map, "uid", &self.uid);
        put_str(&mut map, "resourceVersion", &self.resource_version);
        if self.generation != 0 {
            map.insert("generation".into(), self.generation.into());
        }
        if let Some(t) = self
            .creation_timestamp
            .as_deref()
            .filter(|t| *t != ZERO_TIME)
        {
            map.insert("creationTimestamp".into(), t.into());
        }
        if let Some(t) = &self.deletion_timestamp {
            map.insert("deletionTimestamp".into(), time_value(t));
        }
        if let Some(s) = self.deletion_grace_period_seconds {
            map.insert("deletionGracePeriodSeconds".into(), s.into());
        }
        put_map(&mut map, "labels", &self.labels);
        put_map(&mut map, "annotations", &self.annotations);
        if !self.owner_references.is_empty() {
            let refs = self.owner_references.iter().map(OwnerReference::to_value);
            map.insert("ownerReferences".into(), Value::Array(refs.collect()));
        }
        if !self.finalizers.is_empty() {
            let list = self.finalizers.iter().map(|f| Value::String(f.clone()));
            map.insert("finalizers".into(), Value::Array(list.collect()));
        }
        if !self.managed_fields.is_empty() {
            let list = self.managed_fields.iter().map(ManagedFieldsEntry::to_value);
            map.insert("managedFields".into(), Value::Array(list.collect()));
        }
        Value::Object(map)
    }

    /// Appends the metadata's JSON exactly as Go's encoding/json writes
    /// `metav1.ObjectMeta` (k8s.io/apimachinery v0.37): the struct's field
    /// order, `omitempty` members left out when empty (`creationTimestamp`
    /// when zero), an owner reference's `apiVersion`, `kind`, `name` and `uid`
    /// always, map keys sorted, strings HTML-safe escaped
    /// ([`crate::json::write_str`]), `fieldsV1` as [`crate::json::write_value`]
    /// writes it. The same members as [`ObjectMeta::to_value`].
    pub fn write_json(&self, out: &mut Vec<u8>) {
        self.write_json_with(out, crate::json::MetadataMembers::All);
    }

    /// [`ObjectMeta::write_json`], leaving `resourceVersion` out when
    /// `members` says so (the stored encoding).
    /// Where `resourceVersion` goes when it is left out.
    pub fn write_json_with(
        &self,
        out: &mut Vec<u8>,
        members: crate::json::MetadataMembers,
    ) -> Option<crate::json::RevisionSlot> {
        let mut w = Members::open(out);
        w.str(b"\"name\":", &self.name);
        w.str(b"\"generateName\":", &self.generate_name);
        w.str(b"\"namespace\":", &self.namespace);
        w.str(b"\"selfLink\":", &self.self_link);
        w.str(b"\"uid\":", &self.uid);
        let slot = w.resource_version(members, &self.resource_version);
        if self.generation != 0 {
            w.key(b"\"generation\":");
            w.int(self.generation);
        }
        if let Some(t) = self
            .creation_timestamp
            .as_deref()
            .filter(|t| *t != ZERO_TIME)
        {
            w.key(b"\"creationTimestamp\":");
            crate::json::write_str(w.out, t);
        }
        if let Some(t) = &self.deletion_timestamp {
            w.key(b"\"deletionTimestamp\":");
            w.time(t);
        }
        if let Some(s) = self.deletion_grace_period_seconds {
            w.key(b"\"deletionGracePeriodSeconds\":");
            w.int(s);
        }
        w.map(b"\"labels\":", &self.labels);
        w.map(b"\"annotations\":", &self.annotations);
        w.list(b"\"ownerReferences\":", &self.owner_references, |out, r| {
            r.write_json(out)
        });
        w.list(b"\"finalizers\":", &self.finalizers, |out, f| {
            crate::json::write_str(out, f)
        });
        w.list(b"\"managedFields\":", &self.managed_fields, |out, entry| {
            entry.write_json(out)
        });
        w.close();
        slot
    }
}

impl ObjectMeta {
    /// The metadata as kube-apiserver writes an unstructured object's (a
    /// custom resource's): the members [`ObjectMeta::to_value`] has, sorted by
    /// name at every depth, numbers as Go writes them; `resourceVersion` left
    /// out when `members` says so. Equal to writing `to_value()` sorted
    /// (`tests::sorted_as_the_json_is`), without building it.
    /// Where `resourceVersion` goes when it is left out.
    pub fn write_json_sorted(
        &self,
        out: &mut Vec<u8>,
        members: crate::json::MetadataMembers,
    ) -> Option<crate::json::RevisionSlot> {
        let mut w = Members::open(out);
        w.map(b"\"annotations\":", &self.annotations);
        if let Some(t) = self
            .creation_timestamp
            .as_deref()
            .filter(|t| *t != ZERO_TIME)
        {
            w.key(b"\"creationTimestamp\":");
            crate::json::write_str(w.out, t);
        }
        if let Some(seconds) = self.deletion_grace_period_seconds {
            w.key(b"\"deletionGracePeriodSeconds\":");
            w.int(seconds);
        }
        if let Some(t) = &self.deletion_timestamp {
            w.key(b"\"deletionTimestamp\":");
            w.time(t);
        }
        w.list(b"\"finalizers\":", &self.finalizers, |out, f| {
            crate::json::write_str(out, f)
        });
        w.str(b"\"generateName\":", &self.generate_name);
        if self.generation != 0 {
            w.key(b"\"generation\":");
            w.int(self.generation);
        }
        w.map(b"\"labels\":", &self.labels);
        w.list(b"\"managedFields\":", &self.managed_fields, |out, entry| {
            entry.write_json_sorted(out)
        });
        w.str(b"\"name\":", &self.name);
        w.str(b"\"namespace\":", &self.namespace);
        w.list(b"\"ownerReferences\":", &self.owner_references, |out, r| {
            r.write_json_sorted(out)
        });
        let slot = w.resource_version(members, &self.resource_version);
        w.str(b"\"selfLink\":", &self.self_link);
        w.str(b"\"uid\":", &self.uid);
        w.close();
        slot
    }
}

impl OwnerReference {
    /// [`OwnerReference::to_value`] written sorted.
    fn write_json_sorted(&self, out: &mut Vec<u8>) {
        let mut w = Members::open(out);
        w.required(b"\"apiVersion\":", &self.api_version);
        w.bool(b"\"blockOwnerDeletion\":", self.block_owner_deletion);
        w.bool(b"\"controller\":", self.controller);
        w.required(b"\"kind\":", &self.kind);
        w.required(b"\"name\":", &self.name);
        w.required(b"\"uid\":", &self.uid);
        w.close();
    }
}

impl ManagedFieldsEntry {
    /// [`ManagedFieldsEntry::to_value`] written sorted, `fieldsV1` with Go's
    /// numbers.
    fn write_json_sorted(&self, out: &mut Vec<u8>) {
        let mut w = Members::open(out);
        w.str(b"\"apiVersion\":", &self.api_version);
        w.str(b"\"fieldsType\":", &self.fields_type);
        if let Some(f) = &self.fields_v1 {
            w.key(b"\"fieldsV1\":");
            f.write_with(w.out, crate::json::write_unstructured_value);
        }
        w.str(b"\"manager\":", &self.manager);
        w.str(b"\"operation\":", &self.operation);
        w.str(b"\"subresource\":", &self.subresource);
        if let Some(t) = &self.time {
            w.key(b"\"time\":");
            w.time(t);
        }
        w.close();
    }
}

/// Writes a JSON object's members, each after a comma but the first.
struct Members<'a> {
    out: &'a mut Vec<u8>,
    empty: bool,
}

impl<'a> Members<'a> {
    fn open(out: &'a mut Vec<u8>) -> Self {
        out.push(b'{');
        Self { out, empty: true }
    }

    /// Starts a member: `key` is its `"name":`.
    #[inline]
    fn key(&mut self, key: &[u8]) {
        if !self.empty {
            self.out.push(b',');
        }
        self.empty = false;
        self.out.extend_from_slice(key);
    }

    /// An `omitempty` string.
    #[inline]
    fn str(&mut self, key: &[u8], value: &str) {
        if !value.is_empty() {
            self.key(key);
            crate::json::write_str(self.out, value);
        }
    }

    /// `resourceVersion`, or (left out) where it would go.
    fn resource_version(
        &mut self,
        members: crate::json::MetadataMembers,
        version: &str,
    ) -> Option<crate::json::RevisionSlot> {
        match members {
            crate::json::MetadataMembers::All => {
                self.str(b"\"resourceVersion\":", version);
                None
            }
            crate::json::MetadataMembers::WithoutResourceVersion => {
                Some(crate::json::RevisionSlot {
                    at: self.out.len(),
                    after_member: !self.empty,
                })
            }
        }
    }

    /// A required string (Go writes it even when empty).
    #[inline]
    fn required(&mut self, key: &[u8], value: &str) {
        self.key(key);
        crate::json::write_str(self.out, value);
    }

    fn int(&mut self, value: i64) {
        self.out
            .extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
    }

    fn bool(&mut self, key: &[u8], value: Option<bool>) {
        if let Some(value) = value {
            self.key(key);
            self.out
                .extend_from_slice(if value { b"true" } else { b"false" });
        }
    }

    /// A `*metav1.Time`'s value: `null` for the zero time.
    fn time(&mut self, text: &str) {
        if text == ZERO_TIME {
            self.out.extend_from_slice(b"null");
        } else {
            crate::json::write_str(self.out, text);
        }
    }

    /// An `omitempty` `map[string]string` (Go sorts its keys; so does a
    /// `BTreeMap`, byte by byte).
    fn map(&mut self, key: &[u8], entries: &BTreeMap<String, String>) {
        if entries.is_empty() {
            return;
        }
        self.key(key);
        self.out.push(b'{');
        for (i, (k, v)) in entries.iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            crate::json::write_str(self.out, k);
            self.out.push(b':');
            crate::json::write_str(self.out, v);
        }
        self.out.push(b'}');
    }

    /// An `omitempty` list, each item written by `write`.
    fn list<T>(&mut self, key: &[u8], items: &[T], write: impl Fn(&mut Vec<u8>, &T)) {
        if items.is_empty() {
            return;
        }
        self.key(key);
        self.out.push(b'[');
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            write(self.out, item);
        }
        self.out.push(b']');
    }

    fn close(self) {
        self.out.push(b'}');
    }
}

impl OwnerReference {
    fn from_map(mut map: Map<String, Value>) -> Self {
        let mut take = |key: &str| map.remove(key).map(string).unwrap_or_default();
        let (api_version, kind, name, uid) =
            (take("apiVersion"), take("kind"), take("name"), take("uid"));
        Self {
            api_version,
            kind,
            name,
            uid,
            controller: map.get("controller").and_then(Value::as_bool),
            block_owner_deletion: map.get("blockOwnerDeletion").and_then(Value::as_bool),
        }
    }

    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        // Required members: Go writes them even when empty.
        map.insert("apiVersion".into(), self.api_version.as_str().into());
        map.insert("kind".into(), self.kind.as_str().into());
        map.insert("name".into(), self.name.as_str().into());
        map.insert("uid".into(), self.uid.as_str().into());
        if let Some(c) = self.controller {
            map.insert("controller".into(), c.into());
        }
        if let Some(b) = self.block_owner_deletion {
            map.insert("blockOwnerDeletion".into(), b.into());
        }
        Value::Object(map)
    }

    /// Appends the reference's JSON as Go writes it (see [`ObjectMeta::write_json`]).
    pub fn write_json(&self, out: &mut Vec<u8>) {
        let mut w = Members::open(out);
        w.required(b"\"apiVersion\":", &self.api_version);
        w.required(b"\"kind\":", &self.kind);
        w.required(b"\"name\":", &self.name);
        w.required(b"\"uid\":", &self.uid);
        w.bool(b"\"controller\":", self.controller);
        w.bool(b"\"blockOwnerDeletion\":", self.block_owner_deletion);
        w.close();
    }
}

impl ManagedFieldsEntry {
    /// A `managedFields` list (written by the field manager, or sent and
    /// checked by [`crate::meta_decode`]) as Go decodes it: `null` items
    /// are empty entries, anything but a list none.
    pub fn list_from_value(list: Value) -> Vec<Self> {
        structs(list, Self::from_map)
    }

    fn from_map(mut map: Map<String, Value>) -> Self {
        let mut take = |key: &str| map.remove(key).map(string).unwrap_or_default();
        let (manager, operation, api_version, fields_type, subresource) = (
            take("manager"),
            take("operation"),
            take("apiVersion"),
            take("fieldsType"),
            take("subresource"),
        );
        Self {
            manager,
            operation,
            api_version,
            time: map.remove("time").and_then(time),
            fields_type,
            fields_v1: map
                .remove("fieldsV1")
                .filter(|v| !v.is_null())
                .map(FieldsV1::Value),
            subresource,
        }
    }

    pub fn to_value(&self) -> Value {
        self.clone().into_value()
    }

    /// [`ManagedFieldsEntry::to_value`], moving the members (`fieldsV1`
    /// above all) rather than copying.
    pub fn into_value(self) -> Value {
        let mut map = Map::new();
        put_string(&mut map, "manager", self.manager);
        put_string(&mut map, "operation", self.operation);
        put_string(&mut map, "apiVersion", self.api_version);
        if let Some(t) = &self.time {
            map.insert("time".into(), time_value(t));
        }
        put_string(&mut map, "fieldsType", self.fields_type);
        if let Some(f) = self.fields_v1 {
            map.insert("fieldsV1".into(), f.into_value());
        }
        put_string(&mut map, "subresource", self.subresource);
        Value::Object(map)
    }

    /// Appends the entry's JSON as Go writes it (see [`ObjectMeta::write_json`]).
    pub fn write_json(&self, out: &mut Vec<u8>) {
        let mut w = Members::open(out);
        w.str(b"\"manager\":", &self.manager);
        w.str(b"\"operation\":", &self.operation);
        w.str(b"\"apiVersion\":", &self.api_version);
        if let Some(t) = &self.time {
            w.key(b"\"time\":");
            w.time(t);
        }
        w.str(b"\"fieldsType\":", &self.fields_type);
        if let Some(f) = &self.fields_v1 {
            w.key(b"\"fieldsV1\":");
            f.write_with(w.out, crate::json::write_value);
        }
        w.str(b"\"subresource\":", &self.subresource);
        w.close();
    }
}

impl DynamicObject {
    /// Split an object into typed metadata and the rest. A body that is not a
    /// JSON object is kept as it is (the caller's checks refuse it). The
    /// metadata is decoded by [`ObjectMeta::from_value_in`], the body's `kind`
    /// naming its Go type.
    pub fn from_value(mut object: Value, prefix: &str) -> Result<Self, MetaDecodeError> {
        let metadata = match object.as_object_mut() {
            Some(map) => map.remove("metadata").unwrap_or(Value::Null),
            None => Value::Null,
        };
        let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
        let metadata = ObjectMeta::from_value_in(metadata, prefix, kind)?;
        Ok(Self {
            metadata: Box::new(metadata),
            body: object,
        })
    }

    /// The whole object as JSON (metadata written back as Go would write it).
    pub fn to_value(&self) -> Value {
        let mut object = self.body.clone();
        if let Some(map) = object.as_object_mut() {
            map.insert("metadata".into(), self.metadata.to_value());
        }
        object
    }

    /// [`DynamicObject::to_value`], moving the members rather than copying.
    pub fn into_value(self) -> Value {
        let mut object = self.body;
        if let Some(map) = object.as_object_mut() {
            map.insert("metadata".into(), self.metadata.into_value());
        }
        object
    }

    /// Set a member of the body (`status`, `spec`, …); a body that is not a
    /// JSON object becomes one.
    pub fn insert(&mut self, key: &str, value: Value) {
        if !self.body.is_object() {
            self.body = Value::Object(Map::new());
        }
        if let Value::Object(map) = &mut self.body {
            map.insert(key.to_owned(), value);
        }
    }

    /// Remove a member of the body.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        self.body.as_object_mut()?.remove(key)
    }

    pub fn api_version(&self) -> &str {
        self.body
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    pub fn kind(&self) -> &str {
        self.body.get("kind").and_then(Value::as_str).unwrap_or("")
    }
}

/// The body's JSON, read and written as any `Value` (`object.pointer("/spec")`,
/// `object["status"]`). The metadata is not in it: read `object.metadata`.
impl std::ops::Deref for DynamicObject {
    type Target = Value;

    fn deref(&self) -> &Value {
        &self.body
    }
}

impl std::ops::DerefMut for DynamicObject {
    fn deref_mut(&mut self) -> &mut Value {
        &mut self.body
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::String(_) => "string",
        Value::Bool(_) => "bool",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Number(_) => "number",
        Value::Null => "null",
    }
}

fn string(value: Value) -> String {
    match value {
        Value::String(s) => s,
        _ => String::new(),
    }
}

/// A `metav1.Time` member Go's decoder accepted (`null`: `None`), as Go
/// writes it back: UTC, whole seconds (the text kept when it is that already).
fn time(value: Value) -> Option<String> {
    let Value::String(text) = value else {
        return None;
    };
    let seconds = crate::meta_decode::parse_time(&text).ok()?;
    if seconds == crate::meta_decode::ZERO_TIME_SECONDS {
        return Some(ZERO_TIME.to_owned());
    }
    // Of the texts Go parses, those of 20 bytes ending `Z` are exactly the
    // ones it writes (`2024-01-01T00:00:00Z`: a shorter hour needs a
    // fraction, of two bytes at least; an offset ends with a digit).
    if text.len() == ZERO_TIME.len() && text.ends_with('Z') {
        return Some(text);
    }
    let mut normal = Vec::with_capacity(ZERO_TIME.len() + 1);
    crate::meta_decode::append_time(&mut normal, seconds);
    // ASCII digits and separators only.
    String::from_utf8(normal).ok()
}

/// A `*metav1.Time` as Go writes it: `null` for the zero time.
fn time_value(text: &str) -> Value {
    if text == ZERO_TIME {
        Value::Null
    } else {
        text.into()
    }
}

/// Rewrite the time members of a decoded `metadata` (checked already by
/// [`crate::meta_decode::decode_error`]) as Go writes them back after its
/// decode: UTC, whole seconds; a zero `creationTimestamp` gone (`omitzero`),
/// a zero `deletionTimestamp` or managedFields `time` `null`. For code that
/// keeps objects as JSON: [`ObjectMeta::from_value`] does the same.
pub fn normalize_times(object: &mut Value) {
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    // One pass over the members: most metadata has none of them.
    let mut zero_created = false;
    for (member, value) in metadata.iter_mut() {
        match member.as_str() {
            "creationTimestamp" => match time(value.take()).filter(|t| t != ZERO_TIME) {
                Some(t) => *value = t.into(),
                None => zero_created = true,
            },
            "deletionTimestamp" => normalize_pointer_time(value),
            "managedFields" => {
                for entry in value.as_array_mut().into_iter().flatten() {
                    if let Some(at) = entry.get_mut("time") {
                        normalize_pointer_time(at);
                    }
                }
            }
            _ => {}
        }
    }
    if zero_created {
        metadata.remove("creationTimestamp");
    }
}

/// A `*metav1.Time` member as Go writes it back (see [`normalize_times`]).
fn normalize_pointer_time(value: &mut Value) {
    if value.is_string() {
        *value = time(value.take()).map_or(Value::Null, |t| time_value(&t));
    }
}

fn int64(value: &Value, custom: bool) -> Option<i64> {
    crate::meta_decode::int64(value.as_number()?, custom).ok()
}

fn string_map(value: Value) -> BTreeMap<String, String> {
    match value {
        Value::Object(map) => map.into_iter().map(|(k, v)| (k, string(v))).collect(),
        _ => BTreeMap::new(),
    }
}

fn strings(value: Value) -> Vec<String> {
    match value {
        Value::Array(items) => items.into_iter().map(string).collect(),
        _ => Vec::new(),
    }
}

fn structs<T: Default>(value: Value, from_map: fn(Map<String, Value>) -> T) -> Vec<T> {
    match value {
        Value::Array(items) => items
            .into_iter()
            .map(|item| match item {
                Value::Object(map) => from_map(map),
                _ => T::default(),
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn put_str(map: &mut Map<String, Value>, key: &str, value: &str) {
    if !value.is_empty() {
        map.insert(key.into(), value.into());
    }
}

fn put_string(map: &mut Map<String, Value>, key: &str, value: String) {
    if !value.is_empty() {
        map.insert(key.into(), Value::String(value));
    }
}

fn put_string_map(map: &mut Map<String, Value>, key: &str, entries: BTreeMap<String, String>) {
    if !entries.is_empty() {
        let object = entries.into_iter().map(|(k, v)| (k, Value::String(v)));
        map.insert(key.into(), Value::Object(object.collect()));
    }
}

fn put_map(map: &mut Map<String, Value>, key: &str, entries: &BTreeMap<String, String>) {
    if !entries.is_empty() {
        let object = entries
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())));
        map.insert(key.into(), Value::Object(object.collect()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::{MetadataMembers, encode_object};
    use crate::json_order::tests::{compact, fixtures_dir};
    use proptest::prelude::*;
    use serde_json::json;

    fn written(meta: &ObjectMeta) -> String {
        let mut out = Vec::new();
        meta.write_json(&mut out);
        String::from_utf8(out).unwrap()
    }

    /// Go's bytes for these `metadata`: decoded by sigs.k8s.io/json (the
    /// case-sensitive decoder kube-apiserver uses) into k8s.io/apimachinery
    /// v0.37.2's `metav1.ObjectMeta` and written by encoding/json's `Marshal`
    /// (go1.26.8, kube-apiserver v1.37.2's Go): empty members left out
    /// (`deletionGracePeriodSeconds: 0` kept), an owner reference's four
    /// required members written empty, `null`s dropped (in a map or list:
    /// `""`), keys sorted, HTML-safe escapes, times in UTC without fraction,
    /// Go's zero time omitted (`creationTimestamp`) or `null` (pointers).
    #[test]
    fn written_as_go_writes_them() {
        for (input, go) in [
            (r#"{}"#, r#"{}"#),
            (
                r#"{"name":"","generation":0,"labels":{},"annotations":{},"ownerReferences":[],"finalizers":[],"managedFields":[],"creationTimestamp":null,"deletionTimestamp":null,"deletionGracePeriodSeconds":null}"#,
                r#"{}"#,
            ),
            (
                r#"{"name":"a<b>&c","generateName":"\"q\"\\","namespace":"\u2028\u2029","selfLink":"\u0001\u001f\b\f\r","uid":"é€😀","resourceVersion":"'`","labels":{"b":"<","a":"&","B":">","é":"x","a<":"\n","":""},"annotations":{"z\u2028":"\t"},"finalizers":["<f>","",null]}"#,
                r#"{"name":"a\u003cb\u003e\u0026c","generateName":"\"q\"\\","namespace":"\u2028\u2029","selfLink":"\u0001\u001f\b\f\r","uid":"é€😀","resourceVersion":"'`","labels":{"":"","B":"\u003e","a":"\u0026","a\u003c":"\n","b":"\u003c","é":"x"},"annotations":{"z\u2028":"\t"},"finalizers":["\u003cf\u003e","",""]}"#,
            ),
            (
                r#"{"generation":-5,"deletionGracePeriodSeconds":0,"ownerReferences":[{},{"controller":false,"blockOwnerDeletion":true,"uid":"<u>","name":"n","kind":"K","apiVersion":"v1"},null],"managedFields":[{},null,{"subresource":"status","fieldsV1":{"f:a<":{},"f:b":{".":{},"k:{\"x\":\"&\"}":{}}},"fieldsType":"FieldsV1","time":"2024-01-01T00:00:00.5+02:00","apiVersion":"v1","operation":"Apply","manager":"m\u2028"}]}"#,
                r#"{"generation":-5,"deletionGracePeriodSeconds":0,"ownerReferences":[{"apiVersion":"","kind":"","name":"","uid":""},{"apiVersion":"v1","kind":"K","name":"n","uid":"\u003cu\u003e","controller":false,"blockOwnerDeletion":true},{"apiVersion":"","kind":"","name":"","uid":""}],"managedFields":[{},{},{"manager":"m\u2028","operation":"Apply","apiVersion":"v1","time":"2023-12-31T22:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:a\u003c":{},"f:b":{".":{},"k:{\"x\":\"\u0026\"}":{}}},"subresource":"status"}]}"#,
            ),
            (
                r#"{"creationTimestamp":"2024-06-30T23:59:59.999-00:30","deletionTimestamp":"2024-01-01T1:02:03,25Z"}"#,
                r#"{"creationTimestamp":"2024-07-01T00:29:59Z","deletionTimestamp":"2024-01-01T01:02:03Z"}"#,
            ),
            (
                r#"{"creationTimestamp":"0001-01-01T00:00:00Z","deletionTimestamp":"0001-01-01T01:00:00+01:00","managedFields":[{"time":"0001-01-01T00:00:00Z"}]}"#,
                r#"{"deletionTimestamp":null,"managedFields":[{"time":null}]}"#,
            ),
            (
                r#"{"creationTimestamp":"0000-01-01T00:00:00+24:60","deletionTimestamp":"9999-12-31T23:59:59-24:00"}"#,
                r#"{"creationTimestamp":"-0001-12-30T23:00:00Z","deletionTimestamp":"10000-01-01T23:59:59Z"}"#,
            ),
            (
                r#"{"creationTimestamp":"2024-02-29T12:00:00+00:00","deletionTimestamp":"2100-03-01T00:00:00-00:01","managedFields":[{"time":"1969-12-31T23:59:59.999999999Z","fieldsV1":["x",1,-2.5,true,null,{"<":">"}]}]}"#,
                r#"{"creationTimestamp":"2024-02-29T12:00:00Z","deletionTimestamp":"2100-03-01T00:01:00Z","managedFields":[{"time":"1969-12-31T23:59:59Z","fieldsV1":["x",1,-2.5,true,null,{"\u003c":"\u003e"}]}]}"#,
            ),
            (
                r#"{"name":"x","unknown":{"a":1},"Name":"y","labels":{"k":null}}"#,
                r#"{"name":"x","labels":{"k":""}}"#,
            ),
            (
                r#"{"generation":9223372036854775807,"deletionGracePeriodSeconds":-9223372036854775808,"ownerReferences":[{"controller":null,"blockOwnerDeletion":false}]}"#,
                r#"{"generation":9223372036854775807,"deletionGracePeriodSeconds":-9223372036854775808,"ownerReferences":[{"apiVersion":"","kind":"","name":"","uid":"","blockOwnerDeletion":false}]}"#,
            ),
        ] {
            let meta =
                ObjectMeta::from_value(serde_json::from_str(input).unwrap(), "metadata.").unwrap();
            assert_eq!(written(&meta), go, "{input}");
            let go: Value = serde_json::from_str(go).unwrap();
            assert_eq!(meta.to_value(), go, "{input}");
        }
    }

    /// k8s.io/api v0.37.2's round-trip fixtures (`testdata/HEAD/*.json`, in
    /// the Go module cache; skipped when absent): every `ObjectMeta` in them
    /// (an object's `metadata`, a template's), every member set, as Go wrote
    /// it. Read and written again, each is the same bytes.
    #[test]
    fn go_fixtures_metadata_is_written_byte_for_byte() {
        let Some(dir) = fixtures_dir() else {
            eprintln!("skipped: no k8s.io/api@v0.37.2/testdata in the Go module cache");
            return;
        };
        let mut paths: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        paths.sort();
        let (mut objects, mut nested) = (0, 0);
        let mut failures = Vec::new();
        for path in paths {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let go = compact(&std::fs::read_to_string(&path).unwrap());
            for (at, written_by_go) in metadata_members(&go) {
                let value: Value = serde_json::from_str(written_by_go).unwrap();
                // `ListMeta` (a Status's) is not `ObjectMeta`.
                if value.get("generateName").is_none() {
                    continue;
                }
                if at == 1 {
                    objects += 1;
                } else {
                    nested += 1;
                }
                let meta = ObjectMeta::from_value(value, "metadata.").unwrap();
                let ours = written(&meta);
                if ours != written_by_go {
                    failures.push(format!(
                        "{name}:\n  go:     {written_by_go}\n  kubext: {ours}"
                    ));
                }
                let again = ObjectMeta::from_value(meta.to_value(), "metadata.").unwrap();
                assert_eq!(again, meta, "{name}");
            }
        }
        eprintln!("{objects} objects' and {nested} nested ObjectMetas compared");
        assert!(objects > 150 && nested > 20, "{objects} and {nested}");
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    /// A UID is written as `Uuid`'s `Display` writes it.
    #[test]
    fn uids_read_as_displayed_uuids() {
        for id in [
            uuid::Uuid::nil(),
            uuid::Uuid::max(),
            uuid::Uuid::from_u128(0x0123_4567_89ab_cdef_fedc_ba98_7654_3210),
            uuid::Uuid::new_v4(),
        ] {
            assert_eq!(uuid_text(id), id.to_string());
        }
        let uid = new_uid();
        assert_eq!(
            uuid::Uuid::parse_str(&uid).map(|u| u.get_version_num()),
            Ok(4)
        );
    }

    /// kube-apiserver's answers (`meta_decode::recorded_answers`) through
    /// `from_value`: the same as `decode_error`'s.
    #[test]
    fn decode_errors_are_go_s() {
        let decode = |meta: &Value, prefix: &str| {
            ObjectMeta::from_value(meta.clone(), prefix)
                .err()
                .map(|e| e.0)
        };
        let (both, differ) = crate::meta_decode::recorded_answers();
        for (meta, want) in both {
            for prefix in ["metadata.", ""] {
                let want = want.map(|w| w.replace("{p}", prefix));
                assert_eq!(decode(&meta, prefix), want, "{prefix} {meta}");
            }
        }
        for (meta, built_in, custom) in differ {
            if let Some(built_in) = built_in {
                assert_eq!(decode(&meta, "metadata.").as_deref(), built_in, "{meta}");
            }
            assert_eq!(decode(&meta, "").as_deref(), custom, "{meta}");
        }
        // What Go decoded from a custom resource's `float64`s.
        let meta = ObjectMeta::from_value(
            json!({"generation": 1.0, "deletionGracePeriodSeconds": -0.0}),
            "",
        )
        .unwrap();
        assert_eq!(
            (meta.generation, meta.deletion_grace_period_seconds),
            (1, Some(0))
        );
    }

    /// kube-apiserver v1.37.2's answers to POSTs of a ConfigMap, a
    /// Deployment and a custom resource whose `metadata` is not an object (a
    /// built-in's body is decoded into its Go struct, a custom resource's
    /// `metadata` alone); `null` leaves it empty (the answer: 422, a name is
    /// required).
    #[test]
    fn metadata_that_is_not_an_object() {
        for (metadata, found) in [
            (json!("x"), "string"),
            (json!(5), "number"),
            (json!(1.5), "number"),
            (json!([]), "array"),
            (json!(true), "bool"),
        ] {
            let built_in = ObjectMeta::from_value_in(metadata.clone(), "metadata.", "ConfigMap");
            assert_eq!(
                built_in.unwrap_err().0,
                format!(
                    "json: cannot unmarshal {found} into Go struct field ConfigMap.metadata of type v1.ObjectMeta"
                )
            );
            let deployment =
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata});
            assert_eq!(
                DynamicObject::from_value(deployment, "metadata.")
                    .unwrap_err()
                    .0,
                format!(
                    "json: cannot unmarshal {found} into Go struct field Deployment.metadata of type v1.ObjectMeta"
                )
            );
            assert_eq!(
                ObjectMeta::from_value(metadata, "").unwrap_err().0,
                format!("json: cannot unmarshal {found} into Go value of type v1.ObjectMeta")
            );
        }
        assert_eq!(
            ObjectMeta::from_value_in(Value::Null, "metadata.", "ConfigMap"),
            Ok(ObjectMeta::default())
        );
        assert_eq!(
            ObjectMeta::from_value(Value::Null, ""),
            Ok(ObjectMeta::default())
        );
        let object = DynamicObject::from_value(json!({"kind": "ConfigMap"}), "metadata.").unwrap();
        assert_eq!(object.metadata, Box::default());
    }

    /// kube-apiserver v1.37.2 answered an update of a ConfigMap (and of a
    /// custom resource) whose managed fields entry's `time` was
    /// `2024-01-01T00:00:00.5+02:00` with `2023-12-31T22:00:00Z`, and one
    /// whose `time` was `0001-01-01T00:00:00Z` (or `…00.5Z`) with `null`.
    #[test]
    fn times_are_kept_as_go_writes_them() {
        let meta = ObjectMeta::from_value(
            json!({"managedFields": [
                {"manager": "m", "time": "2024-01-01T00:00:00.5+02:00"},
                {"manager": "z", "time": "0001-01-01T00:00:00Z"},
                {"manager": "h", "time": "0001-01-01T00:00:00.5Z"},
                {"manager": "n", "time": null}
            ]}),
            "metadata.",
        )
        .unwrap();
        let times: Vec<_> = meta
            .managed_fields
            .iter()
            .map(|e| e.time.as_deref())
            .collect();
        assert_eq!(
            times,
            [
                Some("2023-12-31T22:00:00Z"),
                Some(ZERO_TIME),
                Some(ZERO_TIME),
                None
            ]
        );
        assert_eq!(
            written(&meta),
            r#"{"managedFields":[{"manager":"m","time":"2023-12-31T22:00:00Z"},{"manager":"z","time":null},{"manager":"h","time":null},{"manager":"n"}]}"#
        );
        // Go reads its own `null` back as no time: so does `from_value`.
        let again = ObjectMeta::from_value(meta.to_value(), "metadata.").unwrap();
        assert_eq!(again.managed_fields[1].time, None);
        let meta = ObjectMeta::from_value(
            json!({"creationTimestamp": "0001-01-01T00:00:00Z",
                   "deletionTimestamp": "2024-01-01T00:00:00Z"}),
            "",
        )
        .unwrap();
        assert_eq!(meta.creation_timestamp, None);
        assert_eq!(
            meta.deletion_timestamp.as_deref(),
            Some("2024-01-01T00:00:00Z")
        );
        let zero = ObjectMeta {
            creation_timestamp: Some(ZERO_TIME.into()),
            ..ObjectMeta::default()
        };
        assert_eq!(written(&zero), "{}");
        assert_eq!(zero.to_value(), json!({}));
    }

    /// Strings with what Go escapes (and what it does not), in every member.
    fn text() -> impl Strategy<Value = String> {
        let special = prop::sample::select(vec![
            '<', '>', '&', '"', '\\', '\'', '/', '\u{2028}', '\u{2029}', '\u{7f}', '\n', '\u{1}',
            'é', '€', '😀',
        ]);
        let char = prop_oneof![4 => prop::char::range('a', 'z'), 2 => special, 1 => any::<char>()];
        prop::collection::vec(char, 0..8).prop_map(|chars| chars.into_iter().collect())
    }

    /// A time as Go writes it (not the zero time, which Go does not read back).
    fn time_text() -> impl Strategy<Value = String> {
        (crate::meta_decode::ZERO_TIME_SECONDS + 1..253_402_300_800).prop_map(|seconds| {
            let mut out = Vec::new();
            crate::meta_decode::append_time(&mut out, seconds);
            String::from_utf8(out).unwrap()
        })
    }

    /// A `fieldsV1` document (floats that print and read back exactly).
    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (any::<i32>(), 0..4).prop_map(|(n, k)| Value::from(f64::from(n) / f64::from(1 << k))),
            text().prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(text(), inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn owner_reference() -> impl Strategy<Value = OwnerReference> {
        (
            text(),
            text(),
            text(),
            text(),
            any::<Option<bool>>(),
            any::<Option<bool>>(),
        )
            .prop_map(
                |(api_version, kind, name, uid, controller, block_owner_deletion)| OwnerReference {
                    api_version,
                    kind,
                    name,
                    uid,
                    controller,
                    block_owner_deletion,
                },
            )
    }

    fn managed_fields_entry() -> impl Strategy<Value = ManagedFieldsEntry> {
        let fields = json_value().prop_filter("null is no fieldsV1", |v| !v.is_null());
        (
            (text(), text(), text()),
            prop::option::of(time_text()),
            text(),
            prop::option::of(fields),
            text(),
        )
            .prop_map(
                |((manager, operation, api_version), time, fields_type, fields_v1, subresource)| {
                    ManagedFieldsEntry {
                        manager,
                        operation,
                        api_version,
                        time,
                        fields_type,
                        fields_v1: fields_v1.map(FieldsV1::Value),
                        subresource,
                    }
                },
            )
    }

    fn object_meta() -> impl Strategy<Value = ObjectMeta> {
        let strings = (text(), text(), text(), text(), text(), text());
        let scalars = (
            any::<i64>(),
            prop::option::of(time_text()),
            prop::option::of(time_text()),
            any::<Option<i64>>(),
        );
        let maps = (
            prop::collection::btree_map(text(), text(), 0..4),
            prop::collection::btree_map(text(), text(), 0..4),
        );
        let lists = (
            prop::collection::vec(owner_reference(), 0..3),
            prop::collection::vec(text(), 0..3),
            prop::collection::vec(managed_fields_entry(), 0..3),
        );
        (strings, scalars, maps, lists).prop_map(
            |(
                (name, generate_name, namespace, self_link, uid, resource_version),
                (generation, creation_timestamp, deletion_timestamp, deletion_grace_period_seconds),
                (labels, annotations),
                (owner_references, finalizers, managed_fields),
            )| ObjectMeta {
                name,
                generate_name,
                namespace,
                self_link,
                uid,
                resource_version,
                generation,
                creation_timestamp,
                deletion_timestamp,
                deletion_grace_period_seconds,
                labels,
                annotations,
                owner_references,
                finalizers,
                managed_fields,
            },
        )
    }

    proptest! {
        /// An object written from its typed metadata ([`crate::json::encode_dynamic_into`])
        /// is written as its JSON is, for built-in kinds (Go's struct order),
        /// custom resources (sorted, the metadata falling among the body's
        /// members by name) and kinds of unknown order, with and without
        /// `resourceVersion`.
        #[test]
        fn sorted_as_the_json_is(meta in object_meta(), spec in json_value()) {
            let bodies = [
                json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"b": "2", "a": "1"}, "zzz": spec.clone()}),
                json!({"kind": "Pod", "apiVersion": "v1", "spec": {"containers": [{"name": "c", "image": "i", "resources": {}}]}, "status": {}}),
                json!({"apiVersion": "example.com/v1", "kind": "Widget", "spec": spec.clone(), "aaa": 1.0, "status": {"x": 1e21}}),
                json!({"apiVersion": "example.com/v1", "kind": "Widget", "zzz": spec.clone()}),
                json!({"apiVersion": "v1", "kind": "NoSuchKind", "spec": spec}),
            ];
            for body in bodies {
                let typed = DynamicObject { metadata: Box::new(meta.clone()), body };
                for members in [MetadataMembers::All, MetadataMembers::WithoutResourceVersion] {
                    let mut written = Vec::new();
                    crate::json::encode_dynamic_into(&mut written, &typed, members);
                    let plain = encode_object(&typed.to_value(), members);
                    prop_assert_eq!(String::from_utf8(written).unwrap(), String::from_utf8(plain).unwrap());
                }
            }
        }

        /// `to_value` is read back as it was (by both decoders' rules);
        /// `write_json` writes that value, appended to what `out` held, and
        /// the bytes the crate's Go-order object encoder writes for it.
        #[test]
        fn written_and_read_back(meta in object_meta()) {
            let value = meta.to_value();
            prop_assert_eq!(&meta.clone().into_value(), &value);
            prop_assert_eq!(&ObjectMeta::from_value(value.clone(), "metadata.").unwrap(), &meta);
            prop_assert_eq!(&ObjectMeta::from_value(value.clone(), "").unwrap(), &meta);
            let mut out = b"[".to_vec();
            meta.write_json(&mut out);
            let json = std::str::from_utf8(&out[1..]).unwrap();
            prop_assert_eq!(serde_json::from_str::<Value>(json).unwrap(), value.clone());
            let object = json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": value});
            let encoded = encode_object(&object, MetadataMembers::All);
            prop_assert_eq!(
                String::from_utf8(encoded).unwrap(),
                format!(r#"{{"kind":"ConfigMap","apiVersion":"v1","metadata":{json}}}"#)
            );
        }
    }

    /// Each member named `metadata` in a compact JSON document whose value is
    /// an object: its depth (1: the document's own) and its text.
    fn metadata_members(doc: &str) -> Vec<(usize, &str)> {
        let b = doc.as_bytes();
        let mut found = Vec::new();
        let (mut depth, mut i) = (0, 0);
        while i < b.len() {
            match b[i] {
                b'"' => {
                    let end = string_end(b, i);
                    if &doc[i..end] == "\"metadata\"" && doc[end..].starts_with(":{") {
                        let start = end + 1;
                        found.push((depth, &doc[start..start + object_len(&b[start..])]));
                    }
                    i = end;
                    continue;
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' => depth -= 1,
                _ => {}
            }
            i += 1;
        }
        found
    }

    /// Where the string starting at `start` ends (after its closing quote).
    fn string_end(b: &[u8], start: usize) -> usize {
        let mut i = start + 1;
        while b[i] != b'"' {
            i += if b[i] == b'\\' { 2 } else { 1 };
        }
        i + 1
    }

    /// The length of the object `b` starts with.
    fn object_len(b: &[u8]) -> usize {
        let (mut depth, mut i) = (0, 0);
        loop {
            match b[i] {
                b'"' => {
                    i = string_end(b, i);
                    continue;
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        return i + 1;
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }

    /// Times kept as JSON read back as Go writes them (kube-apiserver 1.37.2
    /// answers a managedFields `time` of `2024-01-01T00:00:00.5+02:00` with
    /// `2023-12-31T22:00:00Z`, a zero one with `null`), the same as through
    /// the typed decode.
    #[test]
    fn times_kept_as_json_are_normalized_as_go_normalizes_them() {
        let metadata = serde_json::json!({
            "name": "a",
            "creationTimestamp": "0001-01-01T00:00:00Z",
            "deletionTimestamp": "2024-01-01T00:00:00.5+02:00",
            "managedFields": [
                {"manager": "m", "time": "2024-01-01T00:00:00.5+02:00"},
                {"manager": "z", "time": "0001-01-01T00:00:00.5Z"},
                {"manager": "n"}
            ]
        });
        let typed = ObjectMeta::from_value(metadata.clone(), "").unwrap();
        let mut object = serde_json::json!({ "metadata": metadata });
        normalize_times(&mut object);
        let metadata = object["metadata"].take();
        assert_eq!(
            metadata,
            serde_json::json!({
                "name": "a",
                "deletionTimestamp": "2023-12-31T22:00:00Z",
                "managedFields": [
                    {"manager": "m", "time": "2023-12-31T22:00:00Z"},
                    {"manager": "z", "time": null},
                    {"manager": "n"}
                ]
            })
        );
        let mut written = Vec::new();
        typed.write_json(&mut written);
        let reparsed: Value = serde_json::from_slice(&written).unwrap();
        assert_eq!(reparsed, metadata);
    }
}
