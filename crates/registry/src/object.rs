//! The cached form of a stored object: parsed once, serialized at most once.

use bytes::Bytes;
use serde_json::Value;
use std::sync::OnceLock;

use apimachinery::meta;

/// A stored object as readers see it: `metadata.resourceVersion` already set.
#[derive(Debug)]
pub struct Object {
    pub value: Value,
    json: OnceLock<Bytes>,
}

impl Object {
    pub fn new(value: Value) -> Self {
        Object {
            value,
            json: OnceLock::new(),
        }
    }

    /// The JSON encoding, computed on first use and shared by every reader and watcher.
    pub fn json(&self) -> &Bytes {
        self.json
            .get_or_init(|| Bytes::from(serde_json::to_vec(&self.value).unwrap_or_default()))
    }
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
}

/// The bytes stored for an object: everything but `resourceVersion`
/// (the revision is the version; storing it would make every value stale).
pub fn encode_for_storage(mut obj: Value) -> Bytes {
    meta::remove(&mut obj, "resourceVersion");
    Bytes::from(serde_json::to_vec(&obj).unwrap_or_default())
}
