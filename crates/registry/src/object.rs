//! The cached form of a stored object: its JSON, encoded once, and its
//! decoded form only while somebody uses it.
//!
//! Why: the watch cache keeps every current object. A decoded
//! `serde_json::Value` costs several times the object's JSON (a map node is
//! ~600 bytes however few its keys), so the cache keeps the bytes GET, LIST
//! and watch send, and decodes when a reader needs the tree (selectors,
//! updates, tables), sharing one decoded tree among concurrent readers.
//!
//! Hot path: every read shares these, by `Arc`.

use bytes::Bytes;
use parking_lot::Mutex;
use serde_json::Value;
use std::sync::{Arc, Weak};

use apimachinery::meta;

use crate::encoding::{self, Head};

/// How many served versions' presentations an object keeps.
const MAX_PRESENTATIONS: usize = 4;

/// A stored object as readers see it: `metadata.resourceVersion` already set.
#[derive(Debug)]
pub struct Object {
    /// The JSON encoding, shared by every reader and watcher.
    json: Bytes,
    /// The decoded tree while some reader holds it.
    decoded: Mutex<Weak<Value>>,
    /// This object version as other served versions present it, by
    /// [`crate::ResourceType::presentation`]: converted, pruned and defaulted once,
    /// then shared by every GET, LIST and watcher of that version.
    /// `None`: that presentation is the stored form itself (checked once).
    presented: Mutex<Vec<(u64, Option<Arc<Object>>)>>,
    /// `metadata.resourceVersion` as a revision, known when the object is
    /// made (every controller's reflector asks it of every event);
    /// [`NO_REVISION`] when there is none (packed beside `plain_metadata`).
    revision: i64,
    /// The encoder's word that the metadata holds no `deletionTimestamp`,
    /// `finalizers` or `ownerReferences`: its head is read up to `uid` and
    /// no further ([`Object::head`]; the garbage collector reads every
    /// written object's).
    plain_metadata: bool,
}

/// [`Object::revision`]'s none: revisions are never negative.
const NO_REVISION: i64 = -1;

impl Object {
    /// The object `value` (encoded now; the tree itself is not kept).
    pub fn new(value: Value) -> Self {
        let revision = revision_of(&value);
        Object::with_revision(encoding::encode_served(&value), revision)
    }

    /// The object stored as `stored` (by [`encode_for_storage`](encoding::encode_for_storage)) at `revision`:
    /// its bytes with `resourceVersion` spliced in after `uid`, as `ObjectMeta`'s order puts it,
    /// instead of serializing the object again. `None` if `stored` does not
    /// start as that encoding does.
    pub fn from_stored(stored: &[u8], revision: i64) -> Option<Object> {
        encoding::splice_revision(stored, revision)
            .map(|json| Object::with_revision(json, Some(revision)))
    }

    /// [`Object::from_stored`] of bytes this process has just encoded for
    /// storage (a write's answer; [`encoding::splice_own_revision`]).
    pub fn from_written(stored: &encoding::Encoded, revision: i64) -> Option<Object> {
        let json = stored.spliced(revision)?;
        Some(Object {
            plain_metadata: stored.plain_metadata(),
            ..Object::with_revision(json, Some(revision))
        })
    }

    /// The object whose JSON encoding is `json` (another writer's bytes: its
    /// revision is read from them now).
    pub fn from_json(json: Bytes) -> Self {
        let revision = encoding::read_revision(&json).or_else(|| {
            apimachinery::json::from_slice(&json)
                .ok()
                .and_then(|value| revision_of(&value))
        });
        Object::with_revision(json, revision)
    }

    fn with_revision(json: Bytes, revision: Option<i64>) -> Self {
        Object {
            json,
            decoded: Mutex::new(Weak::new()),
            presented: Mutex::new(Vec::new()),
            revision: revision.filter(|r| *r >= 0).unwrap_or(NO_REVISION),
            plain_metadata: false,
        }
    }

    /// The decoded object, shared with whoever else holds it now.
    pub fn value(&self) -> Arc<Value> {
        let mut decoded = self.decoded.lock();
        if let Some(value) = decoded.upgrade() {
            return value;
        }
        let value = Arc::new(self.decode());
        *decoded = Arc::downgrade(&value);
        value
    }

    /// The decoded object, owned (a copy to change).
    pub fn to_value(&self) -> Value {
        match self.decoded.lock().upgrade() {
            Some(value) => Value::clone(&value),
            None => self.decode(),
        }
    }

    fn decode(&self) -> Value {
        // The bytes were encoded from a Value by this process or decoded
        // once already: they parse.
        apimachinery::json::from_slice(&self.json).unwrap_or(Value::Null)
    }

    /// The object as presentation `key` shows it, if made already.
    pub fn presentation(self: &Arc<Self>, key: u64) -> Option<Arc<Object>> {
        let cache = self.presented.lock();
        cache
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, p)| p.clone().unwrap_or_else(|| self.clone()))
    }

    /// Keep `value` as the object as presentation `key` shows it (`None`: the
    /// stored form is the presented form).
    pub fn keep_presentation(self: &Arc<Self>, key: u64, value: Option<Value>) -> Arc<Object> {
        let presented = value.map(|v| Arc::new(Object::new(v)));
        // The object itself is not kept (a cycle): `None` stands for it. A few
        // suffice (served versions); types replaced by a CRD change age out.
        let mut cache = self.presented.lock();
        if cache.len() >= MAX_PRESENTATIONS {
            cache.remove(0);
        }
        cache.push((key, presented.clone()));
        presented.unwrap_or_else(|| self.clone())
    }

    /// The JSON encoding, shared by every reader and watcher.
    pub fn json(&self) -> &Bytes {
        &self.json
    }

    /// Kind, apiVersion and the metadata controllers follow, without decoding
    /// the rest (its strings borrowed from the encoding where they are there
    /// as they are).
    pub fn head(&self) -> Head<'_> {
        let read = match self.plain_metadata {
            true => encoding::read_plain_head,
            false => encoding::read_head,
        };
        read(&self.json).unwrap_or_else(|| self.read().unwrap_or_default())
    }

    /// `metadata.name` and `metadata.namespace`, read from the encoding's
    /// front where it can be (a controller filtering every event by name).
    pub fn name_and_namespace(&self) -> (std::borrow::Cow<'_, str>, std::borrow::Cow<'_, str>) {
        use std::borrow::Cow;
        match encoding::read_name_and_namespace(&self.json) {
            Some((name, namespace)) => (Cow::Borrowed(name), Cow::Borrowed(namespace)),
            None => {
                let head = self.head();
                (head.metadata.name, head.metadata.namespace)
            }
        }
    }

    /// `metadata.namespace` if `metadata.name` is `name` (a controller
    /// filtering every event by name: an object named otherwise is told so by
    /// its encoding's bytes, and read no further).
    pub fn namespace_if_named(&self, name: &str) -> Option<std::borrow::Cow<'_, str>> {
        if encoding::named_otherwise(&self.json, name) {
            return None;
        }
        let (object_name, namespace) = self.name_and_namespace();
        (object_name == name).then_some(namespace)
    }

    /// `metadata.resourceVersion` as a revision.
    pub fn revision(&self) -> Option<i64> {
        (self.revision != NO_REVISION).then_some(self.revision)
    }

    /// A typed view of some of the object's fields, decoded from its JSON
    /// (fields `T` does not name are skipped without being built).
    pub fn read<T: serde::de::DeserializeOwned>(&self) -> serde_json::Result<T> {
        serde_json::from_slice(&self.json)
    }

    /// `apiVersion`, read from the front of the encoding (where this process
    /// writes it, after `kind`) without decoding the object.
    pub fn api_version(&self) -> std::borrow::Cow<'_, str> {
        match encoding::read_api_version(&self.json) {
            Some(v) => std::borrow::Cow::Borrowed(v),
            None => std::borrow::Cow::Owned(meta::api_version(&self.value()).to_string()),
        }
    }
}

/// `metadata.resourceVersion` of a decoded object, as a revision.
fn revision_of(value: &Value) -> Option<i64> {
    meta::parse_resource_version(meta::resource_version(value))
        .ok()
        .flatten()
}

/// Decodes stored JSON and stamps the revision in as `resourceVersion`.
pub struct JsonCodec;

/// The watch cache of one storage prefix, over [`JsonCodec`]'s objects.
pub type Storage = storage::Store<JsonCodec>;

impl storage::Codec for JsonCodec {
    type Object = Object;

    fn decode(
        &self,
        _key: &str,
        value: &[u8],
        revision: i64,
    ) -> Result<Object, storage::DecodeError> {
        // What `encode_for_storage` wrote gets its version spliced in: a copy
        // instead of a parse and an encode (the cache decodes every write another
        // process, or a backend faster than the writer's answer, reports).
        if encoding::spliceable(value)
            && let Some(object) = Object::from_stored(value, revision)
        {
            return Ok(object);
        }
        let mut v: Value =
            apimachinery::json::from_slice(value).map_err(storage::DecodeError::new)?;
        meta::set_resource_version(&mut v, revision);
        Ok(Object::new(v))
    }

    fn restamp(&self, object: &Object, revision: i64) -> Object {
        let mut v = object.to_value();
        meta::set_resource_version(&mut v, revision);
        Object::new(v)
    }

    /// The object's own JSON: decoding it stamps the same resourceVersion again.
    fn encode(&self, object: &Object) -> Bytes {
        object.json.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::encode_for_storage;

    #[test]
    fn large_cached_encodings_start_32_bytes_past_a_cache_line() {
        let big = serde_json::json!({
            "kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"name": "big", "namespace": "default"},
            "data": {"payload": "x".repeat(16 * 1024)},
        });
        let stored = encode_for_storage(&big);
        assert_eq!(stored.as_ptr() as usize % 64, 32);
        let object = Object::from_stored(&stored, 7).unwrap();
        assert_eq!(object.json().as_ptr() as usize % 64, 32);
        assert_eq!(object.to_value()["metadata"]["resourceVersion"], "7");
        assert_eq!(Object::new(big).json().as_ptr() as usize % 64, 32);
    }

    // The spliced read equals the decoded one, wherever the version is.
    #[test]
    fn revisions_read_in_place_equal_the_decoded_ones() {
        let cm = serde_json::json!({
            "kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"name": "a", "namespace": "default", "uid": "u"},
            "data": {"k": "v"},
        });
        let decoded = |o: &Object| {
            meta::parse_resource_version(meta::resource_version(&o.value()))
                .ok()
                .flatten()
        };
        let stored = Object::from_stored(&encode_for_storage(&cm), 42).unwrap();
        assert_eq!(stored.revision(), Some(42));
        assert_eq!(stored.revision(), decoded(&stored));
        let mut later = cm.clone();
        later["metadata"]["resourceVersion"] = "17".into();
        let written = Object::new(later);
        assert_eq!(written.revision(), Some(17));
        assert_eq!(written.revision(), decoded(&written));
        let unversioned = Object::new(cm);
        assert_eq!(unversioned.revision(), decoded(&unversioned));
    }

    #[test]
    fn an_object_reads_its_api_version_without_decoding() {
        let obj = Object::new(
            serde_json::json!({"metadata": {"name": "a"}, "kind": "W", "apiVersion": "x.io/v1"}),
        );
        assert_eq!(obj.api_version(), "x.io/v1");
        let foreign = Object::from_json(Bytes::from_static(
            br#"{"kind":"W","apiVersion":"y.io/v2"}"#,
        ));
        assert_eq!(foreign.api_version(), "y.io/v2");
        assert_eq!(obj.value()["metadata"]["name"], "a");
    }

    #[test]
    fn the_head_reads_as_the_tree_does() {
        let value = serde_json::json!({
            "kind": "Pod", "apiVersion": "v1",
            "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "labels": {"a": "b"},
                "finalizers": ["x"], "deletionTimestamp": "2026-01-01T00:00:00Z",
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r",
                    "uid": "u0", "controller": true, "blockOwnerDeletion": true}]},
            "spec": {"containers": []}, "status": "anything"
        });
        let object = Object::new(value.clone());
        let head = object.head();
        assert_eq!(head, Head::of(&value));
        assert_eq!(head.metadata.uid, "u1");
        assert_eq!(head.metadata.finalizers, Some(vec!["x".to_string()]));
        assert_eq!(
            head.metadata.owner_references.unwrap()[0].block_owner_deletion,
            Some(true)
        );
        let bare = Object::new(serde_json::json!({"metadata": {"finalizers": null}}));
        let bare = bare.head();
        assert_eq!(bare, Head::default());
        // Metadata after the rest or before the type meta (other writers'
        // orders), and an escaped kind: read in full, with the same result.
        for foreign in [
            &br#"{"spec":{},"kind":"P\u006fd","metadata":{"name":"p","uid":"u1"},"apiVersion":"v1"}"#[..],
            br#"{"metadata":{"name":"p","uid":"u1"},"kind":"Pod","apiVersion":"v1"}"#,
        ] {
            let object = Object::from_json(Bytes::from_static(foreign));
            let head = object.head();
            assert_eq!((&*head.kind, &*head.api_version), ("Pod", "v1"));
            assert_eq!(head.metadata.uid, "u1");
        }
    }

    /// Told by the bytes or read in full, the answer is the name's.
    #[test]
    fn an_object_named_otherwise_has_no_namespace_for_that_name() {
        let mut objects: Vec<Object> = [
            serde_json::json!({"kind": "ConfigMap", "apiVersion": "v1",
                "metadata": {"name": "kube-root-ca.crt", "namespace": "a", "uid": "u"}}),
            serde_json::json!({"kind": "ConfigMap", "apiVersion": "v1",
                "metadata": {"name": "other", "namespace": "a", "uid": "u"}}),
            serde_json::json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"namespace": "a"}}),
            serde_json::json!({"apiVersion": "x.io/v1", "kind": "W",
                "metadata": {"name": "kube-root-ca.crt", "namespace": "b"}}),
        ]
        .into_iter()
        .map(Object::new)
        .collect();
        for foreign in [
            &br#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"kube-root-ca\u002ecrt","namespace":"c"}}"#[..],
            br#"{"metadata":{"name":"kube-root-ca.crt","namespace":"d"},"kind":"ConfigMap"}"#,
            b"{\"kind\":\"\xff\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"other\",\"namespace\":\"e\"}}",
        ] {
            objects.push(Object::from_json(Bytes::from_static(foreign)));
        }
        for object in &objects {
            for name in ["kube-root-ca.crt", "other", ""] {
                let (object_name, namespace) = object.name_and_namespace();
                let read = (object_name == name).then_some(namespace);
                assert_eq!(
                    object.namespace_if_named(name),
                    read,
                    "{name} {}",
                    String::from_utf8_lossy(object.json())
                );
            }
        }
        assert_eq!(
            objects[0].namespace_if_named("kube-root-ca.crt").as_deref(),
            Some("a")
        );
        assert_eq!(
            objects[4].namespace_if_named("kube-root-ca.crt").as_deref(),
            Some("c")
        );
    }

    #[test]
    fn the_head_read_stops_at_managed_fields_only_after_uid() {
        // This process's order: managedFields last, after uid. What follows
        // it is not read (here: not even well-formed).
        let ours = br#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","uid":"u1","ownerReferences":[{"uid":"u0"}],"managedFields":[{"manager":"m"}],"labels":"#;
        let object = Object::from_json(Bytes::from_static(ours));
        let head = object.head();
        assert_eq!((&*head.metadata.name, &*head.metadata.uid), ("p", "u1"));
        assert_eq!(head.metadata.owner_references.unwrap()[0].uid, "u0");
        // Sorted members (older encodings): uid and ownerReferences follow
        // managedFields and are still read.
        let sorted = br#"{"kind":"Pod","apiVersion":"v1","metadata":{"finalizers":["f"],"managedFields":[{"manager":"m"}],"name":"p","ownerReferences":[{"uid":"u0"}],"uid":"u1"},"spec":{}}"#;
        let object = Object::from_json(Bytes::from_static(sorted));
        let head = object.head();
        assert_eq!(head, Head::of(&serde_json::from_slice(sorted).unwrap()));
        assert_eq!(head.metadata.uid, "u1");
        assert_eq!(head.metadata.owner_references.unwrap()[0].uid, "u0");
        assert_eq!(head.metadata.finalizers, Some(vec!["f".to_string()]));
    }

    #[test]
    fn the_served_form_is_spliced_from_the_stored_one() {
        for value in [
            serde_json::json!({"data": {"k": "\"metadata\":{"}, "kind": "ConfigMap", "apiVersion": "v1",
                "metadata": {"name": "a", "resourceVersion": "3", "labels": {"x": "y"}}}),
            serde_json::json!({"apiVersion": "v1", "metadata": {}, "kind": "Namespace"}),
            serde_json::json!({"metadata": {"name": "no-type-meta"}, "spec": {"a": [1, 2]}}),
        ] {
            let stored = encode_for_storage(&value);
            let served = Object::from_stored(&stored, 42).expect("splices");
            let mut want = value.clone();
            meta::set_resource_version(&mut want, 42);
            assert_eq!(
                *served.value(),
                want,
                "{}",
                String::from_utf8_lossy(served.json())
            );
            assert_eq!(served.api_version(), meta::api_version(&value));
        }
        assert!(Object::from_stored(br#"{"spec":{},"metadata":{}}"#, 1).is_none());
        assert!(Object::from_stored(br#"[1]"#, 1).is_none());
    }

    #[test]
    fn decoding_stored_bytes_stamps_the_revision() {
        use storage::Codec;
        let value = serde_json::json!({"kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"name": "a"}, "data": {"k": "\"resourceVersion\":1"}});
        let spliced = JsonCodec
            .decode("k", &encode_for_storage(&value), 9)
            .unwrap();
        assert_eq!(spliced.value()["metadata"]["resourceVersion"], "9");
        assert_eq!(spliced.value()["data"], value["data"]);
        // What the memory store keeps once the cache shares it (`Backend::share`):
        // the object's own JSON decodes to the same object, its version once.
        let shared = JsonCodec
            .decode("k", &JsonCodec.encode(&spliced), 9)
            .unwrap();
        assert_eq!(shared.value(), spliced.value());
        let versions = memchr::memmem::find_iter(shared.json(), br#""resourceVersion":"#);
        assert_eq!(versions.count(), 1);
        // Foreign bytes: a version already stored, other member order, bad JSON.
        let foreign = br#"{"metadata":{"resourceVersion":"3","name":"a"},"kind":"X"}"#;
        let decoded = JsonCodec.decode("k", foreign, 9).unwrap();
        assert_eq!(decoded.value()["metadata"]["resourceVersion"], "9");
        assert_eq!(decoded.value()["kind"], "X");
        assert!(
            JsonCodec
                .decode("k", br#"{"kind":"X","metadata":{}"#, 9)
                .is_err()
        );
    }

    #[test]
    fn stored_form_omits_resource_version_only() {
        let obj = serde_json::json!({"kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "7"}, "data": {"resourceVersion": "x"}});
        let stored: Value = serde_json::from_slice(&encode_for_storage(&obj)).unwrap();
        assert_eq!(
            stored,
            serde_json::json!({"kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"resourceVersion": "x"}})
        );
    }
}
