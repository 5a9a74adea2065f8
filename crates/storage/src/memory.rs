//! In-memory backend: a multi-version map with etcd semantics. Nothing is durable.
//! Used for `--storage memory` (test servers) and as the reference in the conformance suite.

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use parking_lot::Mutex;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use tokio::sync::mpsc;

use crate::backend::{Backend, Error, Event, KeyValue, Range, Result};

/// One version of a key: `None` marks a deletion (a tombstone).
#[derive(Debug, Clone)]
struct Version {
    revision: i64,
    kv: Option<KeyValue>,
}

#[derive(Default)]
struct Inner {
    revision: i64,
    compacted: i64,
    keys: BTreeMap<Arc<str>, Vec<Version>>,
    /// Every event since `compacted`, for watches that start in the past.
    log: VecDeque<Event>,
    subscribers: Vec<mpsc::UnboundedSender<Vec<Event>>>,
}

#[derive(Default)]
pub struct MemoryBackend {
    inner: Mutex<Inner>,
}

impl MemoryBackend {
    pub fn new() -> Self {
        Self::default()
    }
}

impl Inner {
    fn latest(&self, key: &str) -> Option<&KeyValue> {
        self.keys.get(key)?.last()?.kv.as_ref()
    }

    fn at(&self, versions: &[Version], revision: i64) -> Option<KeyValue> {
        let idx = versions.partition_point(|v| v.revision <= revision);
        versions.get(idx.checked_sub(1)?)?.kv.clone()
    }

    fn commit(&mut self, key: &str, kv: Option<KeyValue>) -> i64 {
        let revision = self.revision + 1;
        self.revision = revision;
        let prev = self.latest(key).cloned();
        let event = match (&kv, prev) {
            (Some(kv), prev) => Event::Put {
                kv: kv.clone(),
                prev,
            },
            (None, Some(prev)) => Event::Delete { revision, prev },
            (None, None) => unreachable!("deleting a missing key is rejected before commit"),
        };
        let key: Arc<str> = match &kv {
            Some(kv) => kv.key.clone(),
            None => event.key().clone(),
        };
        self.keys
            .entry(key)
            .or_default()
            .push(Version { revision, kv });
        self.log.push_back(event.clone());
        self.subscribers
            .retain(|s| s.send(vec![event.clone()]).is_ok());
        revision
    }

    /// Keep `value` as what `key` holds at `revision`: in its version and in
    /// the log's event (a later update's `prev` keeps the bytes it has).
    fn share(&mut self, key: &str, revision: i64, value: &Bytes) {
        if let Some(versions) = self.keys.get_mut(key)
            && let Ok(at) = versions.binary_search_by_key(&revision, |v| v.revision)
            && let Some(kv) = &mut versions[at].kv
        {
            kv.value = value.clone();
        }
        // The log holds one event per revision since the compaction, in order.
        let first = self.log.front().map_or(revision, Event::revision);
        if let Ok(at) = usize::try_from(revision - first)
            && let Some(Event::Put { kv, .. }) = self.log.get_mut(at)
            && kv.mod_revision == revision
            && &*kv.key == key
        {
            kv.value = value.clone();
        }
    }

    fn check_revision(&self, revision: i64) -> Result<i64> {
        if revision == 0 {
            return Ok(self.revision);
        }
        if revision < self.compacted {
            return Err(Error::Compacted {
                requested: revision,
                compacted: self.compacted,
            });
        }
        if revision > self.revision {
            return Err(Error::FutureRevision {
                requested: revision,
                current: self.revision,
            });
        }
        Ok(revision)
    }
}

#[async_trait]
impl Backend for MemoryBackend {
    async fn current_revision(&self) -> Result<i64> {
        Ok(self.inner.lock().revision)
    }

    async fn get(&self, key: &str) -> Result<Option<KeyValue>> {
        Ok(self.inner.lock().latest(key).cloned())
    }

    async fn range(&self, start: &str, end: &str, revision: i64, limit: i64) -> Result<Range> {
        let inner = self.inner.lock();
        let revision = inner.check_revision(revision)?;
        let mut out = Range {
            revision,
            ..Default::default()
        };
        let live = inner
            .keys
            .range::<str, _>((
                std::ops::Bound::Included(start),
                std::ops::Bound::Excluded(end),
            ))
            .filter_map(|(_, versions)| inner.at(versions, revision));
        for kv in live {
            out.count += 1;
            if limit > 0 && out.kvs.len() as i64 >= limit {
                out.more = true;
            } else {
                out.kvs.push(kv);
            }
        }
        Ok(out)
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<i64> {
        let mut inner = self.inner.lock();
        if inner.latest(key).is_some() {
            return Err(Error::AlreadyExists(key.into()));
        }
        let revision = inner.revision + 1;
        let kv = KeyValue {
            key: key.into(),
            value,
            create_revision: revision,
            mod_revision: revision,
        };
        Ok(inner.commit(key, Some(kv)))
    }

    async fn update(&self, key: &str, value: Bytes, expected: i64) -> Result<i64> {
        let mut inner = self.inner.lock();
        let current = inner
            .latest(key)
            .cloned()
            .ok_or_else(|| Error::NotFound(key.into()))?;
        if current.mod_revision != expected {
            return Err(Error::Conflict {
                key: key.into(),
                current: Some(Box::new(current)),
            });
        }
        let kv = KeyValue {
            key: current.key.clone(),
            value,
            create_revision: current.create_revision,
            mod_revision: inner.revision + 1,
        };
        Ok(inner.commit(key, Some(kv)))
    }

    async fn delete(&self, key: &str, expected: Option<i64>) -> Result<(i64, KeyValue)> {
        let mut inner = self.inner.lock();
        let current = inner
            .latest(key)
            .cloned()
            .ok_or_else(|| Error::NotFound(key.into()))?;
        if expected.is_some_and(|e| e != current.mod_revision) {
            return Err(Error::Conflict {
                key: key.into(),
                current: Some(Box::new(current)),
            });
        }
        Ok((inner.commit(key, None), current))
    }

    fn watch(&self, after: i64) -> Result<BoxStream<'static, Result<Vec<Event>>>> {
        let mut inner = self.inner.lock();
        if after + 1 < inner.compacted {
            return Err(Error::Compacted {
                requested: after + 1,
                compacted: inner.compacted,
            });
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let backlog: Vec<Event> = inner
            .log
            .iter()
            .filter(|e| e.revision() > after)
            .cloned()
            .collect();
        if !backlog.is_empty() {
            let _ = tx.send(backlog);
        }
        inner.subscribers.push(tx);
        let stream = futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|batch| (Ok(batch), rx))
        });
        Ok(Box::pin(stream))
    }

    /// The cache keeps every current object's encoding: sharing it halves
    /// what a stored object costs this store.
    fn share(&self, key: &str, revision: i64, value: &Bytes) {
        self.inner.lock().share(key, revision, value);
    }

    async fn compact(&self, revision: i64) -> Result<()> {
        let mut inner = self.inner.lock();
        if revision <= inner.compacted {
            return Ok(());
        }
        inner.check_revision(revision)?;
        inner.compacted = revision;
        while inner.log.front().is_some_and(|e| e.revision() <= revision) {
            inner.log.pop_front();
        }
        inner.keys.retain(|_, versions| {
            // Keep the newest version at or before `revision` and all later ones.
            let keep_from = versions
                .partition_point(|v| v.revision <= revision)
                .saturating_sub(1);
            versions.drain(..keep_from);
            !(versions.len() == 1 && versions[0].kv.is_none())
        });
        Ok(())
    }
}
