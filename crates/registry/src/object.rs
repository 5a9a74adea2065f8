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

use bytes::{BufMut, Bytes, BytesMut};
use parking_lot::Mutex;
use serde_json::Value;
use std::sync::{Arc, Weak};

use apimachinery::{json, meta};

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
}

impl Object {
    /// The object `value` (encoded now; the tree itself is not kept).
    pub fn new(value: Value) -> Self {
        Object::from_json(kept_encoding(&value, json::MetadataMembers::All))
    }

    /// The object stored as `stored` (by [`encode_for_storage`]) at `revision`:
    /// its bytes with `resourceVersion` spliced in as metadata's first member,
    /// instead of serializing the object again. `None` if `stored` does not
    /// start as that encoding does.
    pub fn from_stored(stored: &[u8], revision: i64) -> Option<Object> {
        let at = metadata_members_at(stored)?;
        let version = revision.to_string();
        let mut json = tls_copy_buffer(stored.len() + version.len() + 22);
        json.put_slice(&stored[..at]);
        json.put_slice(b"\"resourceVersion\":\"");
        json.put_slice(version.as_bytes());
        json.put_u8(b'"');
        if stored.get(at) != Some(&b'}') {
            json.put_u8(b',');
        }
        json.put_slice(&stored[at..]);
        Some(Object::from_json(json.freeze()))
    }

    /// The object whose JSON encoding is `json`.
    pub fn from_json(json: Bytes) -> Self {
        Object {
            json,
            decoded: Mutex::new(Weak::new()),
            presented: Mutex::new(Vec::new()),
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
    /// the rest.
    pub fn head(&self) -> Head {
        self.leading_head()
            .unwrap_or_else(|| self.read().unwrap_or_default())
    }

    /// The head from the front of an encoding that starts with its type meta
    /// and metadata (as this process writes every object): what follows
    /// `metadata` (the bulk of most objects) is not even scanned.
    fn leading_head(&self) -> Option<Head> {
        let (mut kind, mut api_version) = (None, None);
        let at = leading(&self.json).find_map(|member| match member {
            Leading::Kind(k) => {
                kind = Some(k);
                None
            }
            Leading::ApiVersion(v) => {
                api_version = Some(v);
                None
            }
            Leading::MetadataAt(at) => Some(at),
        })?;
        // Type meta written after metadata (another writer's order) would be
        // missed: only a front with all three is read this way.
        let (kind, api_version) = (kind?, api_version?);
        // One value is read and the rest left unread: no end-of-input check.
        let metadata = HeadMeta::read_front(&self.json[at..])?;
        Some(Head {
            kind: kind.to_string(),
            api_version: api_version.to_string(),
            metadata,
        })
    }

    /// `metadata.resourceVersion` as a revision: read where
    /// [`Object::from_stored`] splices it (metadata's first member) without
    /// decoding the object, which every watch event of a controller needs;
    /// decoded from the whole object otherwise.
    pub fn revision(&self) -> Option<i64> {
        let metadata_at = leading(&self.json).find_map(|member| match member {
            Leading::MetadataAt(at) => Some(at),
            _ => None,
        });
        let spliced = metadata_at
            .and_then(|at| self.json[at..].strip_prefix(b"{\"resourceVersion\":\""))
            .and_then(|rest| {
                let end = rest.iter().position(|b| *b == b'"')?;
                std::str::from_utf8(&rest[..end]).ok()?.parse().ok()
            });
        spliced.or_else(|| {
            meta::parse_resource_version(meta::resource_version(&self.value()))
                .ok()
                .flatten()
        })
    }

    /// A typed view of some of the object's fields, decoded from its JSON
    /// (fields `T` does not name are skipped without being built).
    pub fn read<T: serde::de::DeserializeOwned>(&self) -> serde_json::Result<T> {
        serde_json::from_slice(&self.json)
    }

    /// `apiVersion`, read from the front of the encoding (where this process
    /// writes it, after `kind`) without decoding the object.
    pub fn api_version(&self) -> std::borrow::Cow<'_, str> {
        let leading_version = leading(&self.json).find_map(|member| match member {
            Leading::ApiVersion(v) => Some(v),
            _ => None,
        });
        match leading_version {
            Some(v) => std::borrow::Cow::Borrowed(v),
            None => std::borrow::Cow::Owned(meta::api_version(&self.value()).to_string()),
        }
    }
}

/// The fields controllers read of every object, decoded straight from its
/// JSON: the rest is skipped, not built into a tree (a fraction of the cost
/// of [`Object::value`]). Metadata is validated on every write, so these
/// shapes hold for every kind.
#[derive(Debug, Default, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct Head {
    pub kind: String,
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    pub metadata: HeadMeta,
}

#[derive(Debug, Default, PartialEq)]
pub struct HeadMeta {
    pub name: String,
    pub namespace: String,
    pub uid: String,
    pub deletion_timestamp: Option<String>,
    pub finalizers: Option<Vec<String>>,
    pub owner_references: Option<Vec<HeadOwner>>,
}

impl<'de> serde::Deserialize<'de> for HeadMeta {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut meta = HeadMeta::default();
        d.deserialize_map(HeadMetaReader {
            meta: &mut meta,
            stop_at_managed_fields: false,
            stopped: &mut false,
        })?;
        Ok(meta)
    }
}

impl HeadMeta {
    /// Reads the metadata object at the front of `json`, stopping at
    /// `managedFields` (the bulk of most metadata) when it comes after `uid`:
    /// then it is last, as `ObjectMeta`'s order puts it and this process
    /// writes it, with every member the head needs already read. The sorted
    /// order of older encodings puts `uid` after it, and is read in full.
    fn read_front(json: &[u8]) -> Option<HeadMeta> {
        Self::scan_front(json).or_else(|| Self::parse_front(json))
    }

    /// [`HeadMeta::read_front`] for metadata as this process writes it:
    /// members scanned in place, strings without escapes taken as they are,
    /// only the lists the head keeps decoded and other containers skipped.
    /// Anything else (escapes, `null`s, whitespace) is `None`, left to
    /// [`HeadMeta::parse_front`].
    fn scan_front(json: &[u8]) -> Option<HeadMeta> {
        let mut meta = HeadMeta::default();
        let mut uid_read = false;
        let mut rest = json.strip_prefix(b"{")?;
        if rest.first() == Some(&b'}') {
            return Some(meta);
        }
        loop {
            let (key, after_key) = plain_bytes(rest)?;
            let value = after_key.strip_prefix(b":")?;
            let plain = |slot: &mut String| -> Option<&[u8]> {
                let (s, after) = plain_string(value)?;
                *slot = s.to_string();
                Some(after)
            };
            rest = match key {
                b"managedFields" if uid_read => return Some(meta),
                b"name" => plain(&mut meta.name)?,
                b"namespace" => plain(&mut meta.namespace)?,
                b"uid" => {
                    uid_read = true;
                    plain(&mut meta.uid)?
                }
                b"deletionTimestamp" => {
                    let (s, after) = plain_string(value)?;
                    meta.deletion_timestamp = Some(s.to_string());
                    after
                }
                b"finalizers" => {
                    let (list, after) = json_value_at(value)?;
                    meta.finalizers = Some(list);
                    after
                }
                b"ownerReferences" => {
                    let (list, after) = json_value_at(value)?;
                    meta.owner_references = Some(list);
                    after
                }
                _ if value.first() == Some(&b'"') => plain_bytes(value)?.1,
                _ => json_value_at::<serde::de::IgnoredAny>(value)?.1,
            };
            match rest.split_first()? {
                (b',', after) => rest = after,
                (b'}', _) => return Some(meta),
                _ => return None,
            }
        }
    }

    /// [`HeadMeta::read_front`] by serde, for any member order and escapes.
    fn parse_front(json: &[u8]) -> Option<HeadMeta> {
        use serde::Deserializer;
        let mut meta = HeadMeta::default();
        let mut stopped = false;
        let read = serde_json::Deserializer::from_slice(json).deserialize_map(HeadMetaReader {
            meta: &mut meta,
            stop_at_managed_fields: true,
            stopped: &mut stopped,
        });
        // Stopping leaves the map unfinished, which serde_json reports.
        (read.is_ok() || stopped).then_some(meta)
    }
}

#[derive(serde::Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum HeadMetaKey {
    Name,
    Namespace,
    Uid,
    DeletionTimestamp,
    Finalizers,
    OwnerReferences,
    ManagedFields,
    #[serde(other)]
    Other,
}

struct HeadMetaReader<'a> {
    meta: &'a mut HeadMeta,
    stop_at_managed_fields: bool,
    stopped: &'a mut bool,
}

impl<'de> serde::de::Visitor<'de> for HeadMetaReader<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("object metadata")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        use serde::de::IgnoredAny;
        let mut uid_read = false;
        while let Some(key) = map.next_key()? {
            let meta = &mut *self.meta;
            match key {
                HeadMetaKey::Name => meta.name = map.next_value()?,
                HeadMetaKey::Namespace => meta.namespace = map.next_value()?,
                HeadMetaKey::Uid => {
                    meta.uid = map.next_value()?;
                    uid_read = true;
                }
                HeadMetaKey::DeletionTimestamp => meta.deletion_timestamp = map.next_value()?,
                HeadMetaKey::Finalizers => meta.finalizers = map.next_value()?,
                HeadMetaKey::OwnerReferences => meta.owner_references = map.next_value()?,
                HeadMetaKey::ManagedFields if self.stop_at_managed_fields && uid_read => {
                    *self.stopped = true;
                    return Ok(());
                }
                HeadMetaKey::ManagedFields | HeadMetaKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

#[derive(Debug, Default, PartialEq, serde::Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct HeadOwner {
    pub uid: String,
    pub block_owner_deletion: Option<bool>,
}

impl Head {
    /// The head of a decoded object, as [`Object::head`] reads it from JSON.
    pub fn of(value: &Value) -> Head {
        use serde::Deserialize;
        Head::deserialize(value).unwrap_or_default()
    }
}

/// One of the members this process writes first in every encoding
/// (`{"kind":…,"apiVersion":…,"metadata":…`, either of the first two may be
/// missing).
enum Leading<'a> {
    Kind(&'a str),
    ApiVersion(&'a str),
    /// Where metadata's value starts.
    MetadataAt(usize),
}

/// The leading members at the front of `json`, in order, as far as they are
/// there as plain strings; nothing else is read, and a caller stops reading
/// once it has what it wants.
fn leading(json: &[u8]) -> impl Iterator<Item = Leading<'_>> {
    let mut rest = json.strip_prefix(b"{");
    std::iter::from_fn(move || {
        let (key, after_key) = plain_bytes(rest.take()?)?;
        let value_at = after_key.strip_prefix(b":")?;
        if key == b"metadata" {
            return Some(Leading::MetadataAt(json.len() - value_at.len()));
        }
        let (value, after_value) = plain_string(value_at)?;
        rest = after_value.strip_prefix(b",");
        match key {
            b"kind" => Some(Leading::Kind(value)),
            b"apiVersion" => Some(Leading::ApiVersion(value)),
            _ => None,
        }
    })
}

/// The JSON value at the start of `bytes` decoded as `T`, and what follows it.
fn json_value_at<'de, T: serde::Deserialize<'de>>(bytes: &'de [u8]) -> Option<(T, &'de [u8])> {
    let mut values = serde_json::Deserializer::from_slice(bytes).into_iter::<T>();
    let value = values.next()?.ok()?;
    Some((value, &bytes[values.byte_offset()..]))
}

/// A JSON string without escapes at the start of `bytes`, and what follows it.
fn plain_string(bytes: &[u8]) -> Option<(&str, &[u8])> {
    let (body, rest) = plain_bytes(bytes)?;
    Some((std::str::from_utf8(body).ok()?, rest))
}

/// [`plain_string`]'s bytes, for keys only compared.
fn plain_bytes(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let body = bytes.strip_prefix(b"\"")?;
    let end = memchr::memchr2(b'"', b'\\', body)?;
    (body[end] == b'"').then(|| (&body[..end], &body[end + 1..]))
}

/// Decodes stored JSON and stamps the revision in as `resourceVersion`.
pub struct JsonCodec;

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
        if spliceable(value)
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

/// Whether stored bytes are well-formed JSON without a `resourceVersion` key
/// anywhere (inside a JSON string the quotes would be escaped), so splicing one
/// in cannot duplicate a key. Checked without building anything.
fn spliceable(value: &[u8]) -> bool {
    // Built once: building a searcher costs more than a search of most objects.
    static VERSION_KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"resourceVersion\":"));
    VERSION_KEY.find(value).is_none()
        && serde_json::from_slice::<serde::de::IgnoredAny>(value).is_ok()
}

/// The bytes stored for an object: everything but `resourceVersion`
/// (the revision is the version; storing it would make every value stale).
/// Serialized without copying the object, `kind`, `apiVersion` and `metadata`
/// first so that [`Object::from_stored`] can splice the version back in.
pub fn encode_for_storage(obj: &Value) -> Bytes {
    kept_encoding(obj, json::MetadataMembers::WithoutResourceVersion)
}

/// `obj`'s encoding in bytes kept as long as the object is cached: exactly its
/// size. It is written into a warm buffer of this thread's and copied out
/// once, not grown by doubling (three reallocations for a 1.5 KiB object)
/// and then shrunk.
fn kept_encoding(obj: &Value, metadata: json::MetadataMembers) -> Bytes {
    /// Larger buffers are not kept for the next object.
    const KEPT_SCRATCH: usize = 256 * 1024;
    thread_local! {
        static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    SCRATCH.with_borrow_mut(|scratch| {
        scratch.clear();
        json::encode_object_into(scratch, obj, metadata);
        let mut kept = tls_copy_buffer(scratch.len());
        kept.put_slice(scratch);
        let kept = kept.freeze();
        if scratch.capacity() > KEPT_SCRATCH {
            *scratch = Vec::new();
        }
        kept
    })
}

/// An empty buffer of `capacity` for bytes that rustls will copy into a TLS
/// record, starting 32 bytes past a 64-byte boundary.
///
/// Why: glibc's memcpy copies several KiB with `rep movsb`, which on AMD Zen runs
/// about twenty times slower when the destination is 1 to 31 bytes ahead of the
/// source modulo 4 KiB (2.1 against 43 GB/s for 16 KiB, measured on the project's
/// machine). rustls' record buffers start on 64-byte (mostly page) boundaries and
/// the plaintext goes in a few bytes after (the record header, hyper's chunk-size
/// line), while a large buffer of ours would also start on a page boundary: the
/// slow case, for a quarter of a LIST-all's server CPU. From 32 past a boundary a
/// destination within the first 31 bytes of one is behind the source instead.
/// Cached objects' encodings are made so too: watch events send them as they are.
pub fn tls_copy_buffer(capacity: usize) -> BytesMut {
    const LINE: usize = 64;
    // glibc copies less than ~2 KiB (`x86_rep_movsb_threshold`) without `rep movsb`.
    const SMALL: usize = 2048;
    if capacity < SMALL {
        return BytesMut::with_capacity(capacity);
    }
    let mut buf = BytesMut::with_capacity(capacity + LINE);
    let skip = (LINE + LINE / 2 - buf.as_ptr() as usize % LINE) % LINE;
    buf.put_bytes(0, skip);
    bytes::Buf::advance(&mut buf, skip);
    buf
}

/// Where the members of `metadata` begin in an encoding that starts
/// `{"kind":…,"apiVersion":…,"metadata":{` (either of the first two may be
/// missing), as [`encode_for_storage`] writes it.
fn metadata_members_at(json: &[u8]) -> Option<usize> {
    let at = leading(json).find_map(|member| match member {
        Leading::MetadataAt(at) => Some(at),
        _ => None,
    })?;
    (json.get(at) == Some(&b'{')).then_some(at + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_copy_buffers_start_32_bytes_past_a_cache_line_with_the_capacity_asked_for() {
        for capacity in [2048, 4096, 80 * 1024] {
            let buf = tls_copy_buffer(capacity);
            assert_eq!(buf.as_ptr() as usize % 64, 32, "{capacity}");
            assert!(buf.capacity() >= capacity);
            assert!(buf.is_empty());
        }
    }

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
        let head = Object::new(value.clone()).head();
        assert_eq!(head, Head::of(&value));
        assert_eq!(head.metadata.uid, "u1");
        assert_eq!(head.metadata.finalizers, Some(vec!["x".to_string()]));
        assert_eq!(
            head.metadata.owner_references.unwrap()[0].block_owner_deletion,
            Some(true)
        );
        let bare = Object::new(serde_json::json!({"metadata": {"finalizers": null}})).head();
        assert_eq!(bare, Head::default());
        // Metadata after the rest or before the type meta (other writers'
        // orders), and an escaped kind: read in full, with the same result.
        for foreign in [
            &br#"{"spec":{},"kind":"P\u006fd","metadata":{"name":"p","uid":"u1"},"apiVersion":"v1"}"#[..],
            br#"{"metadata":{"name":"p","uid":"u1"},"kind":"Pod","apiVersion":"v1"}"#,
        ] {
            let head = Object::from_json(Bytes::from_static(foreign)).head();
            assert_eq!((head.kind.as_str(), head.api_version.as_str()), ("Pod", "v1"));
            assert_eq!(head.metadata.uid, "u1");
        }
    }

    #[test]
    fn the_scanned_head_is_the_parsed_head_or_none() {
        // This process's encodings are scanned; whatever the scan cannot
        // take as it is (escapes, nulls, whitespace) is left to serde, and
        // what it does take must be what serde reads.
        let ours = [
            serde_json::json!({"kind": "Pod", "apiVersion": "v1", "metadata": {
                "name": "p", "namespace": "ns", "uid": "u1", "generation": 3,
                "labels": {"a": "b", "c": "{\"}"}, "annotations": {},
                "deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["x", "y"],
                "ownerReferences": [{"uid": "u0", "blockOwnerDeletion": false, "kind": "K"}],
                "managedFields": [{"manager": "m"}], "zz": [1, {"b": null}]}}),
            serde_json::json!({"kind": "Namespace", "apiVersion": "v1", "metadata": {}}),
            serde_json::json!({"kind": "X", "apiVersion": "v1", "metadata": {"name": "no-uid", "labels": {"a": "b"}}}),
        ];
        for value in ours {
            let json = kept_encoding(&value, json::MetadataMembers::All);
            let at = metadata_members_at(&json).unwrap() - 1;
            let scanned = HeadMeta::scan_front(&json[at..]);
            assert!(scanned.is_some(), "{}", String::from_utf8_lossy(&json));
            assert_eq!(scanned, HeadMeta::parse_front(&json[at..]));
            assert_eq!(Object::from_json(json.clone()).head(), Head::of(&value));
        }
        for foreign in [
            &br#"{"name":"p\u0041","uid":"u"}"#[..],
            br#"{"name":"p", "uid":"u"}"#,
            br#"{"name":"p","deletionTimestamp":null,"uid":"u"}"#,
            br#"{"finalizers":null,"uid":"u"}"#,
            br#"{"uid":"u","name":"p","name":"q"}"#,
            br#"{"uid":"u""#,
            br#"{"uid":"u","labels":{"a":}}"#,
            br#"{}"#,
        ] {
            if let Some(scanned) = HeadMeta::scan_front(foreign) {
                assert_eq!(
                    Some(scanned),
                    HeadMeta::parse_front(foreign),
                    "{}",
                    String::from_utf8_lossy(foreign)
                );
            }
        }
        assert_eq!(HeadMeta::scan_front(br#"{"uid":"u""#), None);
        assert_eq!(
            HeadMeta::scan_front(br#"{"uid":"u","labels":{"a":}}"#),
            None
        );
    }

    #[test]
    fn the_head_read_stops_at_managed_fields_only_after_uid() {
        // This process's order: managedFields last, after uid. What follows
        // it is not read (here: not even well-formed).
        let ours = br#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","uid":"u1","ownerReferences":[{"uid":"u0"}],"managedFields":[{"manager":"m"}],"labels":"#;
        let head = Object::from_json(Bytes::from_static(ours)).head();
        assert_eq!(
            (head.metadata.name.as_str(), head.metadata.uid.as_str()),
            ("p", "u1")
        );
        assert_eq!(head.metadata.owner_references.unwrap()[0].uid, "u0");
        // Sorted members (older encodings): uid and ownerReferences follow
        // managedFields and are still read.
        let sorted = br#"{"kind":"Pod","apiVersion":"v1","metadata":{"finalizers":["f"],"managedFields":[{"manager":"m"}],"name":"p","ownerReferences":[{"uid":"u0"}],"uid":"u1"},"spec":{}}"#;
        let head = Object::from_json(Bytes::from_static(sorted)).head();
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
