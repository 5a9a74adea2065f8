//! The backend trait: etcd's data model reduced to what an API server needs.

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use std::sync::Arc;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A stored key with its revisions (etcd's `mvccpb.KeyValue`).
#[derive(Debug, Clone, PartialEq)]
pub struct KeyValue {
    pub key: Arc<str>,
    pub value: Bytes,
    pub create_revision: i64,
    pub mod_revision: i64,
}

/// One committed change, as a watch delivers it.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// Created or updated; `prev` is the value it replaced.
    Put {
        kv: KeyValue,
        prev: Option<KeyValue>,
    },
    /// Deleted at `revision`; `prev` is the last value.
    Delete { revision: i64, prev: KeyValue },
}

impl Event {
    pub fn revision(&self) -> i64 {
        match self {
            Event::Put { kv, .. } => kv.mod_revision,
            Event::Delete { revision, .. } => *revision,
        }
    }

    pub fn key(&self) -> &Arc<str> {
        match self {
            Event::Put { kv, .. } => &kv.key,
            Event::Delete { prev, .. } => &prev.key,
        }
    }
}

/// The answer to a range read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Range {
    pub kvs: Vec<KeyValue>,
    /// More keys exist in the range past the last one returned.
    pub more: bool,
    /// How many keys the whole range holds at `revision` (from `start`).
    pub count: i64,
    /// The revision the read was served at.
    pub revision: i64,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    #[error("key not found: {0}")]
    NotFound(String),
    #[error("key already exists: {0}")]
    AlreadyExists(String),
    /// Compare-and-swap failed; `current` is what is stored now (if anything).
    #[error("revision conflict on {key}")]
    Conflict {
        key: String,
        current: Option<Box<KeyValue>>,
    },
    #[error("required revision {requested} has been compacted (compacted at {compacted})")]
    Compacted { requested: i64, compacted: i64 },
    #[error("required revision {requested} is a future revision (current {current})")]
    FutureRevision { requested: i64, current: i64 },
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// A write that got no answer in time: it may or may not have been applied.
    #[error("storage timeout: {0}")]
    Timeout(String),
    #[error("corrupt storage: {0}")]
    Corrupt(String),
}

/// A revisioned key-value store with etcd semantics: one global, strictly
/// increasing revision; every successful write increments it by one.
#[async_trait]
pub trait Backend: Send + Sync + 'static {
    /// The latest committed revision (linearizable).
    async fn current_revision(&self) -> Result<i64>;

    /// The latest value of `key`.
    async fn get(&self, key: &str) -> Result<Option<KeyValue>>;

    /// Keys in `[start, end)` as of `revision` (0 = latest), at most `limit` (0 = all).
    async fn range(&self, start: &str, end: &str, revision: i64, limit: i64) -> Result<Range>;

    /// Create `key`; fails with `AlreadyExists` if it exists. Returns the new revision.
    async fn create(&self, key: &str, value: Bytes) -> Result<i64>;

    /// Replace `key` if its mod revision is `expected`; `NotFound` or `Conflict` otherwise.
    async fn update(&self, key: &str, value: Bytes, expected: i64) -> Result<i64>;

    /// Delete `key` (if its mod revision is `expected`, when given). Returns the
    /// deletion revision and the deleted value.
    async fn delete(&self, key: &str, expected: Option<i64>) -> Result<(i64, KeyValue)>;

    /// Every event with a revision greater than `after`, in revision order, in batches.
    /// Fails with `Compacted` if that history is gone.
    fn watch(&self, after: i64) -> Result<BoxStream<'static, Result<Vec<Event>>>>;

    /// Discard history before `revision`.
    async fn compact(&self, revision: i64) -> Result<()>;

    /// `value` decodes to the object written to `key` at `revision` (the same
    /// object; its bytes may differ, say by carrying its resource version). A
    /// store that holds its values in memory may keep `value` instead of its
    /// own copy, so that it shares one buffer with the cache; others ignore it.
    fn share(&self, _key: &str, _revision: i64, _value: &Bytes) {}

    /// Flush and release resources; later calls may fail with `Unavailable`.
    async fn close(&self) {}
}
