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
        Object::from_json(kept_bytes(meta::to_json_vec(&value)))
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
        serde_json::from_slice(&self.json).unwrap_or(Value::Null)
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

    /// `apiVersion`, read from the front of the encoding (where this process
    /// writes it, after `kind`) without decoding the object.
    pub fn api_version(&self) -> std::borrow::Cow<'_, str> {
        match leading_api_version(&self.json) {
            Some(v) => std::borrow::Cow::Borrowed(v),
            None => std::borrow::Cow::Owned(meta::api_version(&self.value()).to_string()),
        }
    }
}

/// `apiVersion` among the first two fields of `json` (`{"kind":"…","apiVersion":"…"`,
/// as `meta::to_json_vec` writes), if it is there as a plain string.
fn leading_api_version(json: &[u8]) -> Option<&str> {
    let mut rest = json.strip_prefix(b"{")?;
    for _ in 0..2 {
        let (key, after_key) = plain_string(rest)?;
        let (value, after_value) = plain_string(after_key.strip_prefix(b":")?)?;
        if key == "apiVersion" {
            return Some(value);
        }
        rest = after_value.strip_prefix(b",")?;
    }
    None
}

/// A JSON string without escapes at the start of `bytes`, and what follows it.
fn plain_string(bytes: &[u8]) -> Option<(&str, &[u8])> {
    let body = bytes.strip_prefix(b"\"")?;
    let end = body.iter().position(|&b| b == b'"' || b == b'\\')?;
    if body[end] != b'"' {
        return None;
    }
    Some((std::str::from_utf8(&body[..end]).ok()?, &body[end + 1..]))
}

/// Decodes stored JSON and stamps the revision in as `resourceVersion`.
pub struct JsonCodec;

impl storage::Codec for JsonCodec {
    type Object = Object;

    fn decode(&self, _key: &str, value: &[u8], revision: i64) -> Result<Object, String> {
        let mut v: Value = serde_json::from_slice(value).map_err(|e| e.to_string())?;
        meta::set_resource_version(&mut v, revision);
        Ok(Object::new(v))
    }

    fn restamp(&self, object: &Object, revision: i64) -> Object {
        let mut v = object.to_value();
        meta::set_resource_version(&mut v, revision);
        Object::new(v)
    }
}

/// The bytes stored for an object: everything but `resourceVersion`
/// (the revision is the version; storing it would make every value stale).
/// Serialized without copying the object.
pub fn encode_for_storage(obj: &Value) -> Bytes {
    kept_bytes(serde_json::to_vec(&WithoutResourceVersion(obj)).unwrap_or_default())
}

/// Bytes kept as long as the object is cached: without the spare capacity
/// the serializer's doubling left (up to half again their size).
fn kept_bytes(mut encoded: Vec<u8>) -> Bytes {
    encoded.shrink_to_fit();
    Bytes::from(encoded)
}

struct WithoutResourceVersion<'a>(&'a Value);

impl serde::Serialize for WithoutResourceVersion<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let Value::Object(top) = self.0 else {
            return self.0.serialize(serializer);
        };
        let mut map = serializer.serialize_map(Some(top.len()))?;
        for (k, v) in top {
            match (k.as_str(), v) {
                ("metadata", Value::Object(md)) => {
                    map.serialize_entry(k, &MetadataEntries(md))?;
                }
                _ => map.serialize_entry(k, v)?,
            }
        }
        map.end()
    }
}

struct MetadataEntries<'a>(&'a serde_json::Map<String, Value>);

impl serde::Serialize for MetadataEntries<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        for (k, v) in self
            .0
            .iter()
            .filter(|(k, _)| k.as_str() != "resourceVersion")
        {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn stored_form_omits_resource_version_only() {
        let obj = serde_json::json!({"kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "7"}, "data": {"resourceVersion": "x"}});
        let stored: Value = serde_json::from_slice(&encode_for_storage(&obj)).unwrap();
        assert_eq!(
            stored,
            serde_json::json!({"kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"resourceVersion": "x"}})
        );
    }
}
