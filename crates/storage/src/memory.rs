//! In-memory backend: a multi-version map with etcd semantics. Nothing is durable.
//! Used for `--storage memory` (test servers) and as the reference in the conformance suite.

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;
use tokio::sync::mpsc;

use crate::backend::{Backend, Error, Event, KeyValue, Range, Result};
use keys::Keys;

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
    keys: Keys<Vec<Version>>,
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

    /// Record `kv` (`None`: a deletion) as `key`'s next version, replacing
    /// `prev` (its latest value, which the caller looked up).
    fn commit(&mut self, key: &Arc<str>, kv: Option<KeyValue>, prev: Option<KeyValue>) -> i64 {
        let revision = self.revision + 1;
        self.revision = revision;
        let event = match (&kv, prev) {
            (Some(kv), prev) => Event::Put {
                kv: kv.clone(),
                prev,
            },
            (None, Some(prev)) => Event::Delete { revision, prev },
            (None, None) => unreachable!("deleting a missing key is rejected before commit"),
        };
        self.keys.get_or_default(key).push(Version { revision, kv });
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
            .range(start, end)
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
        let key: Arc<str> = key.into();
        let kv = KeyValue {
            key: key.clone(),
            value,
            create_revision: revision,
            mod_revision: revision,
        };
        Ok(inner.commit(&key, Some(kv), None))
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
        let key = current.key.clone();
        let kv = KeyValue {
            key: key.clone(),
            value,
            create_revision: current.create_revision,
            mod_revision: inner.revision + 1,
        };
        Ok(inner.commit(&key, Some(kv), Some(current)))
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
        let key = current.key.clone();
        Ok((inner.commit(&key, None, Some(current.clone())), current))
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

/// Every key's versions, found by hash for point operations (a create, an
/// update, `share`) and in order for ranges: keys share long prefixes
/// (`/registry/configmaps/<ns>/…`), and an ordered map's walk compares a
/// dozen or more of them in full per lookup. Behaves as a `BTreeMap` would
/// (held to one by a test); only inserting a key walks the ordered index.
mod keys {
    use foldhash::HashMap;
    use std::collections::BTreeSet;
    use std::ops::Bound;
    use std::sync::Arc;

    pub(super) struct Keys<V> {
        values: HashMap<Arc<str>, V>,
        /// The keys of `values`, in order.
        order: BTreeSet<Arc<str>>,
    }

    impl<V> Default for Keys<V> {
        fn default() -> Self {
            Keys {
                values: HashMap::default(),
                order: BTreeSet::new(),
            }
        }
    }

    impl<V: Default> Keys<V> {
        pub(super) fn get(&self, key: &str) -> Option<&V> {
            self.values.get(key)
        }

        pub(super) fn get_mut(&mut self, key: &str) -> Option<&mut V> {
            self.values.get_mut(key)
        }

        /// `key`'s value, a default one inserted if it has none.
        pub(super) fn get_or_default(&mut self, key: &Arc<str>) -> &mut V {
            match self.values.entry(key.clone()) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    self.order.insert(key.clone());
                    e.insert(V::default())
                }
            }
        }

        /// Keys in `[start, end)` with their values, in order.
        pub(super) fn range<'a>(
            &'a self,
            start: &str,
            end: &str,
        ) -> impl Iterator<Item = (&'a Arc<str>, &'a V)> + 'a {
            self.order
                .range::<str, _>((Bound::Included(start), Bound::Excluded(end)))
                .filter_map(|key| Some((key, self.values.get(key)?)))
        }

        /// Keep the keys for which `keep` says so.
        pub(super) fn retain(&mut self, mut keep: impl FnMut(&Arc<str>, &mut V) -> bool) {
            let order = &mut self.order;
            self.values.retain(|key, value| {
                let kept = keep(key, value);
                if !kept {
                    order.remove(key);
                }
                kept
            });
        }
    }

    #[cfg(test)]
    mod tests {
        use super::Keys;
        use std::collections::BTreeMap;
        use std::sync::Arc;

        /// Random operations on `Keys` and on a `BTreeMap` (the plain way)
        /// leave them equal, for every kind of read.
        #[test]
        fn keys_behave_as_an_ordered_map() {
            let mut next = crate::testing::xorshift(0x2545_f491_4f6c_dd1d_u64);
            let key = crate::testing::registry_key;
            for _ in 0..20 {
                let mut keys: Keys<Vec<u64>> = Keys::default();
                let mut plain: BTreeMap<String, Vec<u64>> = BTreeMap::new();
                for step in 0..400 {
                    let k = key(next(120));
                    match next(10) {
                        0..=4 => {
                            let arc: Arc<str> = k.as_str().into();
                            keys.get_or_default(&arc).push(step);
                            plain.entry(k).or_default().push(step);
                        }
                        5 => {
                            if let Some(v) = keys.get_mut(&k) {
                                v.push(step);
                            }
                            if let Some(v) = plain.get_mut(&k) {
                                v.push(step);
                            }
                        }
                        6 => {
                            let cut = next(400);
                            keys.retain(|_, v| v.first().is_some_and(|f| *f >= cut));
                            plain.retain(|_, v| v.first().is_some_and(|f| *f >= cut));
                        }
                        _ => {
                            assert_eq!(keys.get(&k), plain.get(&k));
                            let (a, b) = (key(next(120)), key(next(120)));
                            let (start, end) = if a <= b { (a, b) } else { (b, a) };
                            let got: Vec<(String, Vec<u64>)> = keys
                                .range(&start, &end)
                                .map(|(k, v)| (k.to_string(), v.clone()))
                                .collect();
                            let want: Vec<(String, Vec<u64>)> = plain
                                .range(start..end)
                                .map(|(k, v)| (k.clone(), v.clone()))
                                .collect();
                            assert_eq!(got, want);
                        }
                    }
                }
                let all: Vec<(String, Vec<u64>)> = keys
                    .range("", "\u{10ffff}")
                    .map(|(k, v)| (k.to_string(), v.clone()))
                    .collect();
                let want: Vec<(String, Vec<u64>)> = plain.into_iter().collect();
                assert_eq!(all, want);
                assert_eq!(keys.order.len(), keys.values.len());
            }
        }
    }
}
