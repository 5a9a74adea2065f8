//! The watch cache: an in-memory, always-current view of a backend that serves
//! reads and watches without touching the database.
//!
//! One task follows the backend's watch stream and applies each batch: it decodes
//! each value once (through the caller's `Codec`), updates the map, appends to the
//! bounded history (for watches that resume from a revision; it keeps encoded
//! objects, not decoded ones, and decodes again on replay) and fans the event out
//! to watchers with `try_send`. Writers never wait for watchers: a watcher whose
//! queue is full is ended, and its client relists.
//!
//! When the backend's watch breaks (etcd restarted, its member lost), the task
//! reconnects with backoff and resumes after the last applied revision; watchers
//! keep their streams. If that history was compacted meanwhile it relists and ends
//! every watcher. Until the cache is current again it reports itself unhealthy.
//!
//! Hot path: `get`, `list`, fan-out. No awaits while a lock is held.
//!
//! Hot path: every read and watch event; no IO, writers never wait for watchers.

use bytes::Bytes;
use foldhash::HashMap;
use futures::StreamExt;
use parking_lot::{Mutex, RwLock};
use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

use crate::backend::{Backend, Error, Event, KeyValue, Range, Result};
use crate::backoff::Backoff;
use objects::Objects;

/// Turns stored bytes into the caller's object type, once per event.
pub trait Codec: Send + Sync + 'static {
    type Object: Send + Sync + 'static;
    /// Decode `value` stored at `key`, as of `revision` (the caller typically
    /// stamps it into the object as its resourceVersion).
    fn decode(&self, key: &str, value: &[u8], revision: i64) -> Result<Self::Object, DecodeError>;

    /// The same object as of another revision (a deletion or an object leaving a
    /// watcher's selector is reported with the event's revision).
    fn restamp(&self, object: &Self::Object, revision: i64) -> Self::Object;

    /// Bytes that `decode` turns back into `object` at its own revision. History
    /// keeps these (ideally shared with the object, not a copy) instead of the
    /// backend's bytes, so a cached object's encoding is held once.
    fn encode(&self, object: &Self::Object) -> Bytes;
}

/// Stored bytes a [`Codec`] could not turn into an object; the cache reports
/// it as [`Error::Corrupt`] with the key.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DecodeError(Box<dyn std::error::Error + Send + Sync>);

impl DecodeError {
    /// Why the bytes do not decode: a parser's error, or a message.
    pub fn new(cause: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        DecodeError(cause.into())
    }
}

impl From<String> for DecodeError {
    fn from(message: String) -> Self {
        DecodeError::new(message)
    }
}

/// A cached key: its decoded object and revisions.
#[derive(Debug)]
pub struct Entry<O> {
    pub key: Arc<str>,
    pub object: Arc<O>,
    pub create_revision: i64,
    pub mod_revision: i64,
}

impl<O> Entry<O> {
    /// The entry as history keeps it: the object's encoding, not the object.
    fn key_value<C: Codec<Object = O>>(&self, codec: &C) -> KeyValue {
        KeyValue {
            key: self.key.clone(),
            value: codec.encode(&self.object),
            create_revision: self.create_revision,
            mod_revision: self.mod_revision,
        }
    }
}

/// One change as history keeps it: stored bytes, decoded again only when a watch
/// resumes from an older revision. A decoded object is many times its JSON, and
/// history holds every version superseded within the window.
struct HistoryEvent {
    revision: i64,
    key: Arc<str>,
    /// The new state; `None` for a deletion.
    current: Option<KeyValue>,
    /// The state it replaced.
    prev: Option<KeyValue>,
}

/// One applied change, decoded, as it is dispatched to watchers.
struct CacheEvent<O> {
    revision: i64,
    key: Arc<str>,
    /// The new state; `None` for a deletion.
    current: Option<Arc<Entry<O>>>,
    /// The state it replaced, decoded at its own revision.
    prev: Option<Arc<Entry<O>>>,
    /// The previous state re-stamped with this event's revision, made on first use
    /// (deletions, and objects leaving a watcher's selector).
    prev_at_event: std::sync::OnceLock<Option<Arc<O>>>,
}

/// A writer's decoded object for one key, kept until the cache applies its revision.
type Written<O> = (Arc<str>, Arc<O>);

/// A backend event decoded, before it is linked to the state it replaces.
struct Decoded<O> {
    revision: i64,
    key: Arc<str>,
    current: Option<Arc<Entry<O>>>,
    raw_prev: Option<KeyValue>,
}

/// What a watcher receives.
#[derive(Debug)]
pub enum WatchItem<O> {
    Added(Arc<O>),
    Modified(Arc<O>),
    Deleted(Arc<O>),
    /// Every event up to this revision has been delivered.
    Bookmark(i64),
}

/// Where a watch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchStart {
    /// Synthetic `Added` events for the current state, then changes.
    CurrentState,
    /// Only changes after this revision (resuming); 410 if compacted.
    After(i64),
}

/// Which objects a watch or list takes: given each object's key and the
/// object (a selector on name or namespace reads the key alone).
pub type Predicate<O> = Arc<dyn Fn(&str, &O) -> bool + Send + Sync>;

/// A running watch: first the items in `initial`, then whatever `events` yields.
/// `events` closes when the watcher fell behind or the store shut down.
pub struct Watcher<O> {
    pub initial: Vec<WatchItem<O>>,
    /// The revision the initial state (or resume point) corresponds to.
    pub revision: i64,
    pub events: mpsc::Receiver<WatchItem<O>>,
    _guard: WatcherGuard<O>,
}

impl<O: Send + Sync + 'static> Watcher<O> {
    /// A handle that queues a bookmark for this watcher when asked, and does
    /// nothing once the watcher is gone.
    pub fn bookmarker(&self) -> Bookmarker {
        let guard = &self._guard;
        let registry = Arc::downgrade(&guard.registry);
        let (prefix, id) = (guard.prefix.clone(), guard.id);
        Bookmarker(Box::new(move || {
            if let Some(registry) = registry.upgrade() {
                registry.lock().bookmark(&prefix, id);
            }
        }))
    }
}

/// Queues a bookmark for one watcher ([`Watcher::bookmarker`]): upstream
/// sends one 2 s before a watch's deadline, so a client resumes from the
/// latest revision, not from its last event's.
pub struct Bookmarker(Box<dyn Fn() + Send + Sync>);

impl Bookmarker {
    /// A bookmark at the last revision offered to every watcher, behind the
    /// events already queued; nothing if the watch did not ask for
    /// bookmarks, has not reached that revision, or is gone.
    pub fn send(&self) {
        (self.0)();
    }
}

/// Unregisters the watcher when the receiving side goes away.
struct WatcherGuard<O> {
    id: u64,
    prefix: Arc<str>,
    registry: Arc<Mutex<Watchers<O>>>,
}

impl<O> Drop for WatcherGuard<O> {
    fn drop(&mut self) {
        self.registry.lock().remove(&self.prefix, self.id);
    }
}

/// One registered watcher, typed by the store's object: events are offered
/// without type erasure.
struct Slot<O> {
    id: u64,
    /// Events at or before this revision are already in the watcher's initial state.
    start: i64,
    bookmarks: bool,
    sender: mpsc::Sender<WatchItem<O>>,
    predicate: Predicate<O>,
}

struct Watchers<O> {
    by_prefix: HashMap<Arc<str>, Vec<Slot<O>>>,
    /// The lengths of the prefixes registered, modulo 64, as bits: a key's
    /// prefix of a length not among them is not looked up. A bit is set when
    /// a prefix is registered and cleared only with every prefix (a stale
    /// bit costs a lookup, no more).
    prefix_lengths: u64,
    /// Every event up to here has been offered to every watcher.
    dispatched: i64,
    count: usize,
}

impl<O> Watchers<O> {
    fn new(dispatched: i64) -> Self {
        Watchers {
            by_prefix: HashMap::default(),
            prefix_lengths: 0,
            dispatched,
            count: 0,
        }
    }

    /// Queue a bookmark at the dispatched revision for one watcher (see
    /// [`Bookmarker::send`]); a full queue skips it, as upstream skips a
    /// bookmark a busy watcher cannot take.
    fn bookmark(&mut self, prefix: &str, id: u64) {
        let revision = self.dispatched;
        if let Some(slot) = self
            .by_prefix
            .get(prefix)
            .and_then(|slots| slots.iter().find(|s| s.id == id))
            .filter(|s| s.bookmarks && revision >= s.start)
        {
            let _ = slot.sender.try_send(WatchItem::Bookmark(revision));
        }
    }

    fn remove(&mut self, prefix: &str, id: u64) {
        if let Some(slots) = self.by_prefix.get_mut(prefix) {
            let before = slots.len();
            slots.retain(|s| s.id != id);
            self.count -= before - slots.len();
            if slots.is_empty() {
                self.by_prefix.remove(prefix);
            }
        }
    }
}

#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Only keys under this prefix are cached.
    pub prefix: String,
    /// How long history is kept for resuming watches (and how often the backend is compacted).
    pub compaction_interval: Duration,
    /// At most this many events of history.
    pub history_limit: usize,
    /// Queue length per watcher before it is ended as too slow.
    pub watcher_queue: usize,
    /// How often watchers that asked for bookmarks get one.
    pub bookmark_interval: Duration,
    /// How long a consistent read waits for the cache to catch up with the backend
    /// (then 503, and the watch is taken for stalled and reconnected).
    pub sync_timeout: Duration,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            prefix: "/registry/".into(),
            compaction_interval: Duration::from_secs(300),
            history_limit: 100_000,
            watcher_queue: 1024,
            bookmark_interval: Duration::from_secs(60),
            sync_timeout: Duration::from_secs(10),
        }
    }
}

struct State<O> {
    revision: i64,
    objects: Objects<Arc<Entry<O>>>,
    history: VecDeque<HistoryEvent>,
    /// Events after this revision are in `history`.
    history_start: i64,
}

/// A backend plus its watch cache.
pub struct Store<C: Codec> {
    backend: Arc<dyn Backend>,
    codec: Arc<C>,
    options: StoreOptions,
    state: RwLock<State<C::Object>>,
    watchers: Arc<Mutex<Watchers<C::Object>>>,
    /// The revision the cache has applied, for [`Store::wait_for`]; waiters
    /// are told when it moves (an atomic and one `Notify`: a `watch`
    /// channel's send costs ten times as much, on every event).
    applied: std::sync::atomic::AtomicI64,
    applied_moved: tokio::sync::Notify,
    next_watcher: AtomicU64,
    failed: Mutex<Option<Error>>,
    /// Told when a consistent read found the backend ahead of a cache that stopped
    /// receiving events: the follow task then reconnects the watch.
    stalled: Arc<tokio::sync::Notify>,
    /// Set by `close`: a watch that ends is then not reconnected.
    closed: std::sync::atomic::AtomicBool,
    /// Objects their writer already decoded, with their revisions, taken by the
    /// follow task instead of decoding the stored bytes again (a few: the
    /// writes in flight; a list is cheaper than a map's nodes).
    written: Mutex<Vec<(i64, Written<C::Object>)>>,
}

impl<C: Codec> Store<C> {
    /// Load the current state from `backend` and start following it.
    pub async fn open(
        backend: Arc<dyn Backend>,
        codec: C,
        options: StoreOptions,
    ) -> Result<Arc<Self>> {
        let end = crate::prefix_end(&options.prefix);
        let initial = backend.range(&options.prefix, &end, 0, 0).await?;
        let codec = Arc::new(codec);
        let mut objects = Objects::default();
        for kv in initial.kvs {
            let entry = decode_entry(&*codec, &kv)?;
            objects.insert(kv.key.clone(), Arc::new(entry));
        }
        let store = Arc::new(Store {
            backend: backend.clone(),
            codec,
            state: RwLock::new(State {
                revision: initial.revision,
                objects,
                history: VecDeque::new(),
                history_start: initial.revision,
            }),
            watchers: Arc::new(Mutex::new(Watchers::new(initial.revision))),
            applied: std::sync::atomic::AtomicI64::new(initial.revision),
            applied_moved: tokio::sync::Notify::new(),
            next_watcher: AtomicU64::new(1),
            failed: Mutex::new(None),
            stalled: Arc::new(tokio::sync::Notify::new()),
            closed: Default::default(),
            written: Mutex::new(Vec::new()),
            options,
        });
        let stream = backend.watch(initial.revision)?;
        let stalled = store.stalled.clone();
        tokio::spawn(follow(Arc::downgrade(&store), stream, stalled));
        tokio::spawn(bookmarks(Arc::downgrade(&store)));
        tokio::spawn(compactor(Arc::downgrade(&store)));
        Ok(store)
    }

    /// Stop following the backend and close it (at shutdown).
    pub async fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.backend.close().await;
    }

    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    pub fn codec(&self) -> &C {
        &self.codec
    }

    /// The newest revision the cache has applied.
    pub fn revision(&self) -> i64 {
        self.state.read().revision
    }

    /// Whether the cache is following the backend (false while its watch is broken
    /// and being reconnected; readiness reports it).
    pub fn is_healthy(&self) -> bool {
        self.failed.lock().is_none()
    }

    /// Why the cache is not following the backend, if it is not.
    pub fn health_error(&self) -> Option<Error> {
        self.failed.lock().clone()
    }

    /// Number of watchers currently registered.
    pub fn watcher_count(&self) -> usize {
        self.watchers.lock().count
    }

    /// Wait until the cache has applied `revision` (or `timeout` passes).
    pub async fn wait_for(&self, revision: i64, timeout: Duration) -> Result<()> {
        // Fast path: almost always already there.
        if self.applied.load(Ordering::Acquire) >= revision {
            return Ok(());
        }
        let reached = tokio::time::timeout(timeout, async {
            loop {
                let moved = self.applied_moved.notified();
                tokio::pin!(moved);
                // Waiting before looking: a move after the look wakes it.
                moved.as_mut().enable();
                if self.applied.load(Ordering::Acquire) >= revision {
                    return;
                }
                moved.await;
            }
        })
        .await;
        match reached {
            Ok(()) => Ok(()),
            Err(_) => match self.failed.lock().clone() {
                Some(e) => Err(e),
                None => Err(Error::Unavailable(format!(
                    "timed out waiting for revision {revision} (at {})",
                    self.revision()
                ))),
            },
        }
    }

    /// Make the cache at least as new as the backend's latest commit (a consistent read).
    pub async fn sync(&self) -> Result<i64> {
        let revision = self.backend.current_revision().await?;
        let caught_up = self.wait_for(revision, self.options.sync_timeout).await;
        if caught_up.is_err() && self.is_healthy() {
            // The backend is ahead but no event came: the watch stalled silently
            // (its member frozen or cut off without noticing). Open a new one.
            tracing::warn!(
                revision,
                at = self.revision(),
                "storage watch stalled; reconnecting"
            );
            self.stalled.notify_one();
        }
        caught_up.map(|()| revision)
    }

    pub fn get(&self, key: &str) -> Option<Arc<Entry<C::Object>>> {
        self.state.read().objects.get(key).cloned()
    }

    /// Objects under `prefix` after `start_after`, those passing `predicate`,
    /// at most `limit` (0 = all). Returns (items, revision, remaining matching count
    /// when limited).
    pub fn list(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
        predicate: &dyn Fn(&str, &C::Object) -> bool,
    ) -> CachedList<C::Object> {
        let state = self.state.read();
        let end = crate::prefix_end(prefix);
        let lower = match start_after {
            Some(k) => Bound::Excluded(k),
            None => Bound::Included(prefix),
        };
        let mut items = Vec::new();
        let mut remaining = 0usize;
        for (key, entry) in state.objects.range(lower, Bound::Excluded(end.as_str())) {
            if !predicate(key, &entry.object) {
                continue;
            }
            if limit > 0 && items.len() >= limit {
                remaining += 1;
            } else {
                items.push(entry.clone());
            }
        }
        CachedList {
            items,
            revision: state.revision,
            remaining,
        }
    }

    /// Count of objects under `prefix` (no filtering; cheap enough for metrics).
    pub fn count(&self, prefix: &str) -> usize {
        let state = self.state.read();
        let end = crate::prefix_end(prefix);
        state
            .objects
            .range(Bound::Included(prefix), Bound::Excluded(end.as_str()))
            .count()
    }

    /// A read at a past revision, from the backend (paged lists continuing a snapshot).
    pub async fn range_at(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        revision: i64,
        limit: i64,
    ) -> Result<Vec<Arc<Entry<C::Object>>>> {
        let end = crate::prefix_end(prefix);
        let start = match start_after {
            Some(k) => format!("{k}\0"),
            None => prefix.to_string(),
        };
        let Range { kvs, .. } = self.backend.range(&start, &end, revision, limit).await?;
        kvs.iter()
            .map(|kv| decode_entry(&*self.codec, kv).map(Arc::new))
            .collect()
    }

    pub async fn create(&self, key: &str, value: Bytes) -> Result<i64> {
        self.backend.create(key, value).await
    }

    pub async fn update(&self, key: &str, value: Bytes, expected: i64) -> Result<i64> {
        self.backend.update(key, value, expected).await
    }

    pub async fn delete(&self, key: &str, expected: Option<i64>) -> Result<(i64, KeyValue)> {
        self.backend.delete(key, expected).await
    }

    /// Hand the cache the decoded form of what was just written at `revision`
    /// (it must be exactly what decoding the stored bytes would give).
    pub fn remember(&self, key: &str, revision: i64, object: Arc<C::Object>) {
        // A backend holding its values in memory keeps the cache's encoding
        // of the object instead of its own copy.
        self.backend
            .share(key, revision, &self.codec.encode(&object));
        let mut written = self.written.lock();
        if self.revision() < revision {
            let remembered = (key.into(), object);
            match written.iter_mut().find(|(r, _)| *r == revision) {
                Some((_, slot)) => *slot = remembered,
                None => written.push((revision, remembered)),
            }
        }
    }

    /// Decode a raw value (e.g. the `current` of a conflict) the way the cache does.
    pub fn decode(&self, kv: &KeyValue) -> Result<Arc<Entry<C::Object>>> {
        decode_entry(&*self.codec, kv).map(Arc::new)
    }

    /// Start watching keys under `prefix` whose objects pass `predicate`.
    pub async fn watch(
        &self,
        prefix: &str,
        start: WatchStart,
        predicate: Predicate<C::Object>,
        bookmarks: bool,
    ) -> Result<Watcher<C::Object>> {
        if let WatchStart::After(rv) = start {
            // A resource version from the future: wait briefly, as upstream does.
            self.wait_for(rv, Duration::from_secs(3))
                .await
                .map_err(|_| Error::FutureRevision {
                    requested: rv,
                    current: self.revision(),
                })?;
        }
        let (tx, rx) = mpsc::channel(self.options.watcher_queue);
        let id = self.next_watcher.fetch_add(1, Ordering::Relaxed);
        let prefix: Arc<str> = prefix.into();
        // Register while the state is locked: an event applied after the snapshot is
        // then dispatched to this watcher, and one applied before is in the snapshot
        // (dispatch skips revisions up to `start`). Registering after unlocking
        // would lose an event applied in between.
        let (initial, revision) = {
            let state = self.state.read();
            let initial = match start {
                WatchStart::CurrentState => initial_state(&state, &prefix, &*predicate),
                WatchStart::After(rv) => replay(&state, &prefix, rv, &*predicate, &*self.codec)?,
            };
            let mut watchers = self.watchers.lock();
            watchers.count += 1;
            watchers.prefix_lengths |= length_bit(prefix.len());
            watchers
                .by_prefix
                .entry(prefix.clone())
                .or_default()
                .push(Slot {
                    id,
                    start: state.revision,
                    bookmarks,
                    sender: tx,
                    predicate,
                });
            (initial, state.revision)
        };
        Ok(Watcher {
            initial,
            revision,
            events: rx,
            _guard: WatcherGuard {
                id,
                prefix,
                registry: self.watchers.clone(),
            },
        })
    }

    /// Apply one batch from the backend and fan it out.
    fn apply(&self, batch: Vec<Event>) {
        // Decode outside the lock (the expensive part); link each event to the state
        // it replaces inside it, so events of one batch see each other.
        // Into a list of its own: collected in place, the batch's would be
        // shrunk to fit (a reallocation per batch).
        let mut decoded: Vec<Decoded<C::Object>> = Vec::with_capacity(batch.len());
        decoded.extend(batch.into_iter().filter_map(|e| self.decode_event(e)));
        let Some(last) = decoded.last().map(|d| d.revision) else {
            return;
        };
        let mut events = Vec::with_capacity(decoded.len());
        {
            let mut state = self.state.write();
            for d in decoded {
                // The entry replaced, found by the one walk of the map that
                // puts or removes the new state.
                let replaced = match &d.current {
                    Some(entry) => state.objects.insert(d.key.clone(), entry.clone()),
                    None => state.objects.remove(&d.key),
                };
                let prev = replaced.or_else(|| {
                    d.raw_prev
                        .and_then(|p| decode_entry(&*self.codec, &p).ok().map(Arc::new))
                });
                let event = CacheEvent {
                    revision: d.revision,
                    key: d.key,
                    current: d.current,
                    prev,
                    prev_at_event: std::sync::OnceLock::new(),
                };
                state.history.push_back(HistoryEvent {
                    revision: event.revision,
                    key: event.key.clone(),
                    current: event.current.as_ref().map(|e| e.key_value(&*self.codec)),
                    prev: event.prev.as_ref().map(|e| e.key_value(&*self.codec)),
                });
                events.push(event);
            }
            state.revision = state.revision.max(last);
            while state.history.len() > self.options.history_limit {
                if let Some(old) = state.history.pop_front() {
                    state.history_start = old.revision;
                }
            }
        }
        self.applied.store(last, Ordering::Release);
        self.applied_moved.notify_waiters();
        {
            // Anything remembered for an applied revision is no longer needed.
            let mut written = self.written.lock();
            if !written.is_empty() {
                written.retain(|(r, _)| *r > last);
            }
        }
        self.dispatch(&events, last);
    }

    /// The writer's decoded object for this exact write, if it left one.
    fn take_written(&self, kv: &KeyValue) -> Option<Arc<C::Object>> {
        let mut written = self.written.lock();
        let at = written.iter().position(|(r, _)| *r == kv.mod_revision)?;
        if written[at].1.0 != kv.key {
            return None;
        }
        Some(written.swap_remove(at).1.1)
    }

    fn decode_event(&self, event: Event) -> Option<Decoded<C::Object>> {
        let revision = event.revision();
        let key = event.key().clone();
        if !key.starts_with(self.options.prefix.as_str()) {
            return None;
        }
        let (current, raw_prev) = match event {
            Event::Put { kv, prev } => {
                let entry = match self.take_written(&kv) {
                    Some(object) => Entry {
                        key: kv.key.clone(),
                        object,
                        create_revision: kv.create_revision,
                        mod_revision: kv.mod_revision,
                    },
                    None => match decode_entry(&*self.codec, &kv) {
                        Ok(e) => e,
                        Err(e) => {
                            tracing::error!(key = %kv.key, error = %e, "undecodable value in storage; skipping");
                            return None;
                        }
                    },
                };
                (Some(Arc::new(entry)), prev)
            }
            Event::Delete { prev, .. } => (None, Some(prev)),
        };
        Some(Decoded {
            revision,
            key,
            current,
            raw_prev,
        })
    }

    fn dispatch(&self, events: &[CacheEvent<C::Object>], last: i64) {
        let mut watchers = self.watchers.lock();
        for event in events {
            for prefix in key_prefixes(&event.key) {
                if watchers.prefix_lengths & length_bit(prefix.len()) == 0 {
                    continue;
                }
                let Some(slots) = watchers.by_prefix.get_mut(prefix) else {
                    continue;
                };
                let before = slots.len();
                slots.retain(|slot| self.offer(slot, event));
                let ended = before - slots.len();
                if ended > 0 {
                    tracing::debug!(prefix, ended, "ended watchers that fell behind");
                    if slots.is_empty() {
                        watchers.by_prefix.remove(prefix);
                    }
                    watchers.count -= ended;
                }
            }
        }
        watchers.dispatched = last;
    }

    /// Offer one event to one watcher; false if the watcher must be ended.
    fn offer(&self, slot: &Slot<C::Object>, event: &CacheEvent<C::Object>) -> bool {
        if event.revision <= slot.start {
            return true;
        }
        let Some(item) = self.item_for(slot, event) else {
            return true;
        };
        slot.sender.try_send(item).is_ok()
    }

    fn item_for(
        &self,
        slot: &Slot<C::Object>,
        event: &CacheEvent<C::Object>,
    ) -> Option<WatchItem<C::Object>> {
        let matches = |o: &C::Object| (slot.predicate)(&event.key, o);
        let now = event
            .current
            .as_ref()
            .map(|e| matches(&e.object))
            .unwrap_or(false);
        let before = event
            .prev
            .as_ref()
            .map(|e| matches(&e.object))
            .unwrap_or(false);
        match (&event.current, now, before) {
            (Some(cur), true, true) => Some(WatchItem::Modified(cur.object.clone())),
            (Some(cur), true, false) => Some(WatchItem::Added(cur.object.clone())),
            (_, false, true) => self.prev_at_event(event).map(WatchItem::Deleted),
            _ => None,
        }
    }

    fn prev_at_event(&self, event: &CacheEvent<C::Object>) -> Option<Arc<C::Object>> {
        event
            .prev_at_event
            .get_or_init(|| {
                let prev = event.prev.as_ref()?;
                Some(Arc::new(self.codec.restamp(&prev.object, event.revision)))
            })
            .clone()
    }

    fn send_bookmarks(&self) {
        let mut watchers = self.watchers.lock();
        let revision = watchers.dispatched;
        let mut ended = 0;
        for slots in watchers.by_prefix.values_mut() {
            let before = slots.len();
            // A watcher that started past the last dispatched revision waits for the next.
            slots.retain(|s| {
                !s.bookmarks
                    || revision < s.start
                    || s.sender.try_send(WatchItem::Bookmark(revision)).is_ok()
            });
            ended += before - slots.len();
        }
        watchers.by_prefix.retain(|_, s| !s.is_empty());
        watchers.count -= ended;
    }

    /// The backend's watch broke: reads that wait for the cache fail with this
    /// until it follows again. Watchers stay registered (a resumed watch loses no
    /// event); only a relist ends them.
    fn disconnected(&self, error: &Error) {
        let mut failed = self.failed.lock();
        if failed.is_none() {
            tracing::warn!(%error, "storage watch broke; reconnecting");
        }
        *failed = Some(Error::Unavailable(format!(
            "watch cache is not following storage: {error}"
        )));
    }

    fn reconnected(&self) {
        if self.failed.lock().take().is_some() {
            tracing::info!(revision = self.revision(), "storage watch resumed");
        }
    }

    /// Watch the backend again after the last applied revision; if that history is
    /// gone (`relist`), load the current state instead. Returns the stream and the
    /// backend's revision the cache must reach to be current again.
    async fn resume(&self, relist: bool) -> Result<(EventStream, i64)> {
        if !relist {
            let target = self.backend.current_revision().await?;
            match self.backend.watch(self.revision()) {
                Ok(stream) => return Ok((stream, target)),
                Err(Error::Compacted { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        self.relist().await
    }

    /// Replace the cached state by the backend's current one and end every watcher
    /// (their clients relist, as upstream's cacher makes them do after a relist).
    async fn relist(&self) -> Result<(EventStream, i64)> {
        let end = crate::prefix_end(&self.options.prefix);
        let range = self.backend.range(&self.options.prefix, &end, 0, 0).await?;
        let stream = self.backend.watch(range.revision)?;
        let mut objects = Objects::default();
        for kv in range.kvs {
            match decode_entry(&*self.codec, &kv) {
                Ok(entry) => {
                    objects.insert(kv.key.clone(), Arc::new(entry));
                }
                Err(e) => tracing::error!(error = %e, "undecodable value in storage; skipping"),
            }
        }
        self.replace(range.revision, objects);
        Ok((stream, range.revision))
    }

    fn replace(&self, revision: i64, objects: Objects<Arc<Entry<C::Object>>>) {
        let ended = {
            let mut state = self.state.write();
            state.objects = objects;
            state.history.clear();
            state.revision = state.revision.max(revision);
            state.history_start = state.revision;
            // Same lock order as `watch`: state, then watchers.
            let mut watchers = self.watchers.lock();
            watchers.by_prefix.clear();
            watchers.prefix_lengths = 0;
            watchers.dispatched = state.revision;
            std::mem::take(&mut watchers.count)
        };
        self.applied.store(self.revision(), Ordering::Release);
        self.applied_moved.notify_waiters();
        self.written.lock().clear();
        tracing::warn!(
            revision,
            ended,
            "storage history was compacted; relisted and ended all watches"
        );
    }

    /// Revision to compact to: the oldest history we still promise to keep.
    fn trim_history(&self, keep_after: i64) {
        let mut state = self.state.write();
        while state
            .history
            .front()
            .is_some_and(|e| e.revision <= keep_after)
        {
            if let Some(old) = state.history.pop_front() {
                state.history_start = old.revision;
            }
        }
        state.history_start = state.history_start.max(keep_after);
    }
}

pub struct CachedList<O> {
    pub items: Vec<Arc<Entry<O>>>,
    pub revision: i64,
    /// Matching objects past `limit`.
    pub remaining: usize,
}

fn decode_entry<C: Codec>(codec: &C, kv: &KeyValue) -> Result<Entry<C::Object>> {
    let object = codec
        .decode(&kv.key, &kv.value, kv.mod_revision)
        .map_err(|e| Error::Corrupt(format!("{}: {e}", kv.key)))?;
    Ok(Entry {
        key: kv.key.clone(),
        object: Arc::new(object),
        create_revision: kv.create_revision,
        mod_revision: kv.mod_revision,
    })
}

fn initial_state<O>(
    state: &State<O>,
    prefix: &str,
    predicate: &dyn Fn(&str, &O) -> bool,
) -> Vec<WatchItem<O>> {
    let end = crate::prefix_end(prefix);
    state
        .objects
        .range(Bound::Included(prefix), Bound::Excluded(end.as_str()))
        .filter(|(key, e)| predicate(key, &e.object))
        .map(|(_, e)| WatchItem::Added(e.object.clone()))
        .collect()
}

fn replay<C: Codec>(
    state: &State<C::Object>,
    prefix: &str,
    after: i64,
    predicate: &dyn Fn(&str, &C::Object) -> bool,
    codec: &C,
) -> Result<Vec<WatchItem<C::Object>>> {
    if after < state.history_start {
        return Err(Error::Compacted {
            requested: after,
            compacted: state.history_start,
        });
    }
    let from = state.history.partition_point(|e| e.revision <= after);
    // The cached object when it is still current, else the stored bytes decoded.
    let object = |kv: &KeyValue| -> Option<Arc<C::Object>> {
        match state.objects.get(&kv.key) {
            Some(e) if e.mod_revision == kv.mod_revision => Some(e.object.clone()),
            _ => match codec.decode(&kv.key, &kv.value, kv.mod_revision) {
                Ok(o) => Some(Arc::new(o)),
                Err(e) => {
                    tracing::error!(key = %kv.key, error = %e, "undecodable value in history; skipping");
                    None
                }
            },
        }
    };
    let mut items = Vec::new();
    for event in state.history.iter().skip(from) {
        if !event.key.starts_with(prefix) {
            continue;
        }
        let current = event.current.as_ref().and_then(object);
        let prev = event.prev.as_ref().and_then(object);
        let now = current.as_ref().is_some_and(|o| predicate(&event.key, o));
        let before = prev.as_ref().is_some_and(|o| predicate(&event.key, o));
        match (current, prev) {
            (Some(cur), _) if now && before => items.push(WatchItem::Modified(cur)),
            (Some(cur), _) if now => items.push(WatchItem::Added(cur)),
            (_, Some(prev)) if before => {
                items.push(WatchItem::Deleted(Arc::new(
                    codec.restamp(&prev, event.revision),
                )));
            }
            _ => {}
        }
    }
    Ok(items)
}

/// The cached objects by key: in order for lists and watches' initial
/// state, and by hash for point reads (a GET; every create reads its
/// namespace): keys share long prefixes (`/registry/configmaps/<ns>/…`), and
/// an ordered map's lookup compares a dozen or more of them in full. Behaves
/// as a `BTreeMap` would (held to one by a test).
mod objects {
    use foldhash::HashMap;
    use std::collections::BTreeMap;
    use std::ops::Bound;
    use std::sync::Arc;

    pub(super) struct Objects<V> {
        ordered: BTreeMap<Arc<str>, V>,
        /// The same entries, by hash.
        by_key: HashMap<Arc<str>, V>,
    }

    impl<V> Default for Objects<V> {
        fn default() -> Self {
            Objects {
                ordered: BTreeMap::new(),
                by_key: HashMap::default(),
            }
        }
    }

    impl<V: Clone> Objects<V> {
        pub(super) fn get(&self, key: &str) -> Option<&V> {
            self.by_key.get(key)
        }

        /// Put `value` at `key`; what it replaced.
        pub(super) fn insert(&mut self, key: Arc<str>, value: V) -> Option<V> {
            let replaced = self.by_key.insert(key.clone(), value.clone());
            self.ordered.insert(key, value);
            replaced
        }

        pub(super) fn remove(&mut self, key: &str) -> Option<V> {
            let removed = self.by_key.remove(key)?;
            self.ordered.remove(key);
            Some(removed)
        }

        /// Entries with keys within the bounds, in order.
        pub(super) fn range<'a>(
            &'a self,
            lower: Bound<&str>,
            upper: Bound<&str>,
        ) -> impl Iterator<Item = (&'a Arc<str>, &'a V)> + 'a {
            self.ordered.range::<str, _>((lower, upper))
        }
    }

    #[cfg(test)]
    mod tests {
        use super::Objects;
        use std::collections::BTreeMap;
        use std::ops::Bound;
        use std::sync::Arc;

        /// Random inserts and removals on `Objects` and on a `BTreeMap`
        /// (the plain way) leave them equal, for every kind of read.
        #[test]
        fn objects_behave_as_an_ordered_map() {
            let mut next = crate::testing::xorshift(0x9e37_79b9_7f4a_7c15_u64);
            let key = crate::testing::registry_key;
            for _ in 0..20 {
                let mut objects: Objects<u64> = Objects::default();
                let mut plain: BTreeMap<Arc<str>, u64> = BTreeMap::new();
                for step in 0..400 {
                    let k: Arc<str> = key(next(120)).into();
                    match next(8) {
                        0..=3 => assert_eq!(objects.insert(k.clone(), step), plain.insert(k, step)),
                        4 => assert_eq!(objects.remove(&k), plain.remove(&k)),
                        _ => {
                            assert_eq!(objects.get(&k), plain.get(&k));
                            let (a, b) = (key(next(120)), key(next(120)));
                            let (a, b) = if a <= b { (a, b) } else { (b, a) };
                            let bounds = [
                                (Bound::Included(a.as_str()), Bound::Excluded(b.as_str())),
                                (Bound::Excluded(a.as_str()), Bound::Excluded(b.as_str())),
                            ];
                            // Both ends excluded and equal: a range a `BTreeMap` refuses.
                            for (lower, upper) in bounds.into_iter().take(1 + usize::from(a != b)) {
                                let got: Vec<_> = objects.range(lower, upper).collect();
                                let want: Vec<_> = plain.range::<str, _>((lower, upper)).collect();
                                assert_eq!(got, want);
                            }
                        }
                    }
                }
                let all: Vec<_> = objects.range(Bound::Unbounded, Bound::Unbounded).collect();
                let want: Vec<_> = plain.iter().collect();
                assert_eq!(all, want);
                assert_eq!(objects.by_key.len(), plain.len());
            }
        }
    }
}

/// A prefix's length among [`Watchers::prefix_lengths`].
fn length_bit(len: usize) -> u64 {
    1 << (len % 64)
}

/// `/registry/configmaps/ns/x` → `/`, `/registry/`, `/registry/configmaps/`, `/registry/configmaps/ns/`, and the key itself.
fn key_prefixes(key: &str) -> impl Iterator<Item = &str> {
    slashes(key.as_bytes())
        .map(move |i| &key[..=i])
        .chain(std::iter::once(key))
}

/// Where the `/`s of `bytes` are, in order, found eight bytes at a time
/// (keys are short: a vector search's call per `/` costs more, and a byte
/// loop more still).
fn slashes(bytes: &[u8]) -> impl Iterator<Item = usize> + '_ {
    const LOWS: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const SLASHES: u64 = 0x2f2f_2f2f_2f2f_2f2f;
    let mut words = bytes.chunks(8);
    // The word's `/`s still to report (each its byte's high bit), and where
    // the word starts.
    let (mut found, mut at) = (0u64, 0usize);
    let mut next_at = 0;
    std::iter::from_fn(move || {
        while found == 0 {
            let chunk = words.next()?;
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            // Bytes equal to `/` become zero; a byte is zero iff neither its
            // low seven bits (added to 0x7f, no carry out of the byte) nor
            // its high bit are set.
            let x = u64::from_le_bytes(word) ^ SLASHES;
            found = !(((x & LOWS) + LOWS) | x | LOWS);
            at = next_at;
            next_at += 8;
        }
        let i = at + found.trailing_zeros() as usize / 8;
        found &= found - 1;
        Some(i)
    })
}

type EventStream = futures::stream::BoxStream<'static, Result<Vec<Event>>>;

/// Apply the backend's watch stream for as long as the store lives. When the stream
/// fails or ends, reconnect with backoff and resume after the last applied revision
/// (or relist when that history was compacted); also when `stalled` says a
/// consistent read waited for events that never came. `catch_up` is the backend
/// revision the cache must reach before it reports itself healthy again.
async fn follow<C: Codec>(
    store: std::sync::Weak<Store<C>>,
    mut stream: EventStream,
    stalled: Arc<tokio::sync::Notify>,
) {
    // 100 ms doubling to 5 s, jittered so replicas sharing one etcd don't
    // reconnect in lockstep.
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(5));
    let mut catch_up: Option<i64> = None;
    // One wait for a stall, kept across events (not made and dropped per event).
    let mut stall = std::pin::pin!(stalled.notified());
    loop {
        if let Some(target) = catch_up {
            let Some(s) = store.upgrade() else { return };
            if s.revision() >= target {
                s.reconnected();
                backoff.reset();
                catch_up = None;
            }
        }
        // Events first, without drawing a random order per event: a stall
        // is news only while no event comes.
        let next = tokio::select! {
            biased;
            next = stream.next() => next,
            () = stall.as_mut() => {
                stall.set(stalled.notified());
                Some(Err(Error::Unavailable(
                    "storage watch stalled: the backend is ahead and no event came".into(),
                )))
            }
        };
        let error = match next {
            Some(Ok(batch)) => {
                let Some(s) = store.upgrade() else { return };
                s.apply(batch);
                continue;
            }
            Some(Err(e)) => e,
            None => Error::Unavailable("storage watch stream ended".into()),
        };
        // Closing ends memory and SQLite streams: nothing to reconnect to.
        if store
            .upgrade()
            .is_none_or(|s| s.closed.load(Ordering::Acquire))
        {
            return;
        }
        // A stream that was following ends when its member fails: another member
        // can take over at once. Back off only if it keeps failing.
        let at_once = catch_up.is_none();
        let Some((next, target)) = reconnect(&store, error, &mut backoff, at_once).await else {
            return;
        };
        stream = next;
        catch_up = Some(target);
    }
}

/// Retry `Store::resume` with backoff until it succeeds (None once the store is
/// gone); the first try without waiting if `at_once`.
async fn reconnect<C: Codec>(
    store: &std::sync::Weak<Store<C>>,
    mut error: Error,
    backoff: &mut Backoff,
    mut at_once: bool,
) -> Option<(EventStream, i64)> {
    loop {
        let relist = matches!(error, Error::Compacted { .. });
        store.upgrade()?.disconnected(&error);
        if !std::mem::take(&mut at_once) {
            tokio::time::sleep(backoff.next_delay()).await;
        }
        match store.upgrade()?.resume(relist).await {
            Ok(resumed) => return Some(resumed),
            Err(e) => {
                tracing::debug!(error = %e, "storage watch reconnect failed");
                // A failed relist must be retried as a relist.
                if !relist {
                    error = e;
                }
            }
        }
    }
}

async fn bookmarks<C: Codec>(store: std::sync::Weak<Store<C>>) {
    let interval = match store.upgrade() {
        Some(s) => s.options.bookmark_interval,
        None => return,
    };
    let mut tick = tokio::time::interval(interval);
    tick.tick().await;
    loop {
        tick.tick().await;
        let Some(store) = store.upgrade() else { return };
        store.send_bookmarks();
    }
}

/// Every interval, compact the backend to the revision seen one interval ago
/// (kube-apiserver's compactor does the same).
async fn compactor<C: Codec>(store: std::sync::Weak<Store<C>>) {
    let interval = match store.upgrade() {
        Some(s) => s.options.compaction_interval,
        None => return,
    };
    let mut last_seen: Option<(Instant, i64)> = None;
    let mut tick = tokio::time::interval(interval);
    loop {
        tick.tick().await;
        let Some(store) = store.upgrade() else { return };
        if let Some((_, revision)) = last_seen {
            match store.backend.compact(revision).await {
                Ok(()) => store.trim_history(revision),
                Err(e) => tracing::warn!(error = %e, revision, "compaction failed"),
            }
        }
        last_seen = Some((Instant::now(), store.revision()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemoryBackend;
    use tokio::sync::watch;

    struct Utf8;
    impl Codec for Utf8 {
        type Object = (String, i64);
        fn decode(
            &self,
            _key: &str,
            value: &[u8],
            revision: i64,
        ) -> Result<Self::Object, DecodeError> {
            Ok((String::from_utf8_lossy(value).into_owned(), revision))
        }
        fn restamp(&self, object: &Self::Object, revision: i64) -> Self::Object {
            (object.0.clone(), revision)
        }
        fn encode(&self, object: &Self::Object) -> Bytes {
            Bytes::from(object.0.clone())
        }
    }

    async fn store() -> Arc<Store<Utf8>> {
        Store::open(
            Arc::new(MemoryBackend::new()),
            Utf8,
            StoreOptions::default(),
        )
        .await
        .unwrap()
    }

    /// The slashes found a word at a time are those a byte loop finds, in
    /// keys of every length with slashes anywhere (and bytes that differ
    /// from `/` by one bit, or are above it by one).
    #[test]
    fn slashes_are_found_at_every_position() {
        let alphabet = [
            b'/',
            b'a',
            b'.',
            b'0',
            b'/' ^ 0x80,
            b'/' + 1,
            b'/' - 1,
            0xc3,
            0xa9,
            0x0f,
        ];
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        for len in 0..40 {
            for _ in 0..200 {
                let bytes: Vec<u8> = (0..len)
                    .map(|_| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        alphabet[(seed % alphabet.len() as u64) as usize]
                    })
                    .collect();
                let naive: Vec<usize> = (0..len).filter(|&i| bytes[i] == b'/').collect();
                assert_eq!(slashes(&bytes).collect::<Vec<_>>(), naive, "{bytes:?}");
            }
        }
    }

    #[test]
    fn a_keys_prefixes_end_at_each_slash_then_the_key() {
        for key in [
            "/registry/configmaps/ns/x",
            "",
            "/",
            "a",
            "//é/ü/",
            "/registry/ns/é",
        ] {
            let by_slash: Vec<&str> = key
                .match_indices('/')
                .map(|(i, _)| &key[..=i])
                .chain(std::iter::once(key))
                .collect();
            assert_eq!(key_prefixes(key).collect::<Vec<_>>(), by_slash, "{key}");
        }
        assert_eq!(
            key_prefixes("/registry/configmaps/ns/x").collect::<Vec<_>>(),
            [
                "/",
                "/registry/",
                "/registry/configmaps/",
                "/registry/configmaps/ns/",
                "/registry/configmaps/ns/x"
            ]
        );
    }

    #[tokio::test]
    async fn reads_follow_writes_after_sync() {
        let s = store().await;
        let rev = s.create("/registry/a/1", Bytes::from("one")).await.unwrap();
        s.sync().await.unwrap();
        let e = s.get("/registry/a/1").unwrap();
        assert_eq!(e.object.0, "one");
        assert_eq!(e.mod_revision, rev);
    }

    #[tokio::test]
    async fn watch_sees_selector_transitions() {
        let s = store().await;
        s.create("/registry/a/1", Bytes::from("red")).await.unwrap();
        s.sync().await.unwrap();
        let mut w = s
            .watch(
                "/registry/a/",
                WatchStart::CurrentState,
                Arc::new(|_: &str, o: &(String, i64)| o.0 == "red"),
                false,
            )
            .await
            .unwrap();
        assert!(matches!(&w.initial[..], [WatchItem::Added(o)] if o.0 == "red"));
        let e = s.get("/registry/a/1").unwrap();
        let rev = s
            .update("/registry/a/1", Bytes::from("blue"), e.mod_revision)
            .await
            .unwrap();
        match w.events.recv().await.unwrap() {
            WatchItem::Deleted(o) => assert_eq!(*o, ("red".to_string(), rev)),
            other => panic!("unexpected {other:?}"),
        }
        s.update("/registry/a/1", Bytes::from("red"), rev)
            .await
            .unwrap();
        assert!(matches!(
            w.events.recv().await.unwrap(),
            WatchItem::Added(_)
        ));
    }

    #[tokio::test]
    async fn slow_watcher_is_ended_without_blocking_writes() {
        let backend = Arc::new(MemoryBackend::new());
        let options = StoreOptions {
            watcher_queue: 2,
            ..Default::default()
        };
        let s = Store::open(backend, Utf8, options).await.unwrap();
        let mut w = s
            .watch(
                "/registry/",
                WatchStart::CurrentState,
                Arc::new(|_: &str, _: &_| true),
                false,
            )
            .await
            .unwrap();
        for i in 0..10 {
            s.create(&format!("/registry/k{i}"), Bytes::from("v"))
                .await
                .unwrap();
        }
        s.sync().await.unwrap();
        let mut received = 0;
        while w.events.recv().await.is_some() {
            received += 1;
        }
        assert_eq!(received, 2, "queue held two, then the watcher was ended");
        assert_eq!(s.watcher_count(), 0);
    }

    /// Objects that are their own encoding, shared (not copied) by `encode`.
    struct Shared;
    impl Codec for Shared {
        type Object = Bytes;
        fn decode(&self, _key: &str, value: &[u8], _revision: i64) -> Result<Bytes, DecodeError> {
            Ok(Bytes::copy_from_slice(value))
        }
        fn restamp(&self, object: &Bytes, _revision: i64) -> Bytes {
            object.clone()
        }
        fn encode(&self, object: &Bytes) -> Bytes {
            object.clone()
        }
    }

    #[tokio::test]
    async fn a_remembered_object_is_shared_with_a_backend_in_memory() {
        let backend = Arc::new(MemoryBackend::new());
        let s = Store::open(backend.clone(), Shared, StoreOptions::default())
            .await
            .unwrap();
        let rev = s.create("/registry/a/1", Bytes::from("one")).await.unwrap();
        let decoded = Arc::new(Bytes::copy_from_slice(b"one"));
        s.remember("/registry/a/1", rev, decoded.clone());
        s.sync().await.unwrap();
        let stored = backend.get("/registry/a/1").await.unwrap().unwrap();
        assert_eq!(stored.value.as_ptr(), decoded.as_ptr());
        let cached = s.get("/registry/a/1").unwrap();
        assert_eq!(cached.object.as_ptr(), decoded.as_ptr());
    }

    #[tokio::test]
    async fn resume_from_compacted_revision_fails() {
        let s = store().await;
        let r1 = s.create("/registry/a/1", Bytes::from("x")).await.unwrap();
        s.create("/registry/a/2", Bytes::from("y")).await.unwrap();
        s.sync().await.unwrap();
        let w = s
            .watch(
                "/registry/a/",
                WatchStart::After(r1),
                Arc::new(|_: &str, _: &_| true),
                false,
            )
            .await
            .unwrap();
        assert_eq!(w.initial.len(), 1);
        s.backend().compact(r1 + 1).await.unwrap();
        s.trim_history(r1 + 1);
        let err = s
            .watch(
                "/registry/a/",
                WatchStart::After(r1),
                Arc::new(|_: &str, _: &_| true),
                false,
            )
            .await
            .err()
            .unwrap();
        assert!(matches!(err, Error::Compacted { .. }));
    }

    /// Watches started while writes stream in see every write after their start:
    /// nothing applied between the snapshot and the registration is lost.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn watch_started_during_writes_misses_nothing() {
        let options = StoreOptions {
            watcher_queue: 10_000,
            ..Default::default()
        };
        let s = Store::open(Arc::new(MemoryBackend::new()), Utf8, options)
            .await
            .unwrap();
        let mut rev = s.create("/registry/a/1", Bytes::from("0")).await.unwrap();
        s.sync().await.unwrap();
        let writer = {
            let s = s.clone();
            tokio::spawn(async move {
                for i in 1..=1000 {
                    rev = s
                        .update("/registry/a/1", Bytes::from(i.to_string()), rev)
                        .await
                        .unwrap();
                }
                rev
            })
        };
        let mut watchers = Vec::new();
        while !writer.is_finished() {
            let w = s
                .watch(
                    "/registry/a/",
                    WatchStart::CurrentState,
                    Arc::new(|_: &str, _: &_| true),
                    false,
                )
                .await
                .unwrap();
            watchers.push(w);
            tokio::task::yield_now().await;
        }
        let last = writer.await.unwrap();
        s.sync().await.unwrap();
        for mut w in watchers {
            let mut seen = w.revision;
            while seen < last {
                match w.events.recv().await {
                    Some(WatchItem::Added(o) | WatchItem::Modified(o)) => {
                        assert_eq!(o.1, seen + 1, "watcher from {} skipped a write", w.revision);
                        seen = o.1;
                    }
                    other => panic!("unexpected {other:?}"),
                }
            }
        }
    }

    /// A watch resuming from an old revision replays superseded versions (decoded
    /// again from history's stored bytes) through its selector.
    #[tokio::test]
    async fn replay_decodes_superseded_versions() {
        let s = store().await;
        let r1 = s.create("/registry/a/1", Bytes::from("red")).await.unwrap();
        let r2 = s
            .update("/registry/a/1", Bytes::from("blue"), r1)
            .await
            .unwrap();
        let r3 = s
            .update("/registry/a/1", Bytes::from("red"), r2)
            .await
            .unwrap();
        let (r4, _) = s.delete("/registry/a/1", Some(r3)).await.unwrap();
        s.sync().await.unwrap();
        let w = s
            .watch(
                "/registry/a/",
                WatchStart::After(r1),
                Arc::new(|_: &str, o: &(String, i64)| o.0 == "red"),
                false,
            )
            .await
            .unwrap();
        let seen: Vec<(&str, String, i64)> = w
            .initial
            .iter()
            .map(|i| match i {
                WatchItem::Added(o) => ("ADDED", o.0.clone(), o.1),
                WatchItem::Modified(o) => ("MODIFIED", o.0.clone(), o.1),
                WatchItem::Deleted(o) => ("DELETED", o.0.clone(), o.1),
                WatchItem::Bookmark(r) => ("BOOKMARK", String::new(), *r),
            })
            .collect();
        assert_eq!(
            seen,
            vec![
                ("DELETED", "red".to_string(), r2),
                ("ADDED", "red".to_string(), r3),
                ("DELETED", "red".to_string(), r4),
            ]
        );
    }

    /// A memory backend whose watch streams can be cut and which can be "down"
    /// (reads and new watches fail), like an etcd being restarted.
    struct Flaky {
        inner: MemoryBackend,
        cut: watch::Sender<u32>,
        down: std::sync::atomic::AtomicBool,
        /// Watch streams opened while set go silent (open, no events) once cut.
        silent: std::sync::atomic::AtomicBool,
    }

    impl Flaky {
        fn new() -> Arc<Self> {
            Arc::new(Flaky {
                inner: MemoryBackend::new(),
                cut: watch::Sender::new(0),
                down: Default::default(),
                silent: Default::default(),
            })
        }

        /// Break every watch stream and refuse requests until `up`.
        fn go_down(&self) {
            self.down.store(true, Ordering::SeqCst);
            self.cut.send_modify(|g| *g += 1);
        }

        fn up(&self) {
            self.down.store(false, Ordering::SeqCst);
        }

        fn check(&self) -> Result<()> {
            match self.down.load(Ordering::SeqCst) {
                true => Err(Error::Unavailable("down".into())),
                false => Ok(()),
            }
        }
    }

    #[async_trait::async_trait]
    impl Backend for Flaky {
        async fn current_revision(&self) -> Result<i64> {
            self.check()?;
            self.inner.current_revision().await
        }
        async fn get(&self, key: &str) -> Result<Option<KeyValue>> {
            self.check()?;
            self.inner.get(key).await
        }
        async fn range(&self, start: &str, end: &str, revision: i64, limit: i64) -> Result<Range> {
            self.check()?;
            self.inner.range(start, end, revision, limit).await
        }
        async fn create(&self, key: &str, value: Bytes) -> Result<i64> {
            self.check()?;
            self.inner.create(key, value).await
        }
        async fn update(&self, key: &str, value: Bytes, expected: i64) -> Result<i64> {
            self.check()?;
            self.inner.update(key, value, expected).await
        }
        async fn delete(&self, key: &str, expected: Option<i64>) -> Result<(i64, KeyValue)> {
            self.check()?;
            self.inner.delete(key, expected).await
        }
        fn watch(&self, after: i64) -> Result<EventStream> {
            self.check()?;
            let mut cut = self.cut.subscribe();
            let stream = self.inner.watch(after)?.take_until(async move {
                let _ = cut.changed().await;
            });
            if self.silent.load(Ordering::SeqCst) {
                return Ok(stream.chain(futures::stream::pending()).boxed());
            }
            Ok(stream.boxed())
        }
        async fn compact(&self, revision: i64) -> Result<()> {
            self.inner.compact(revision).await
        }
    }

    async fn until_healthy(s: &Store<Utf8>, healthy: bool) {
        tokio::time::timeout(Duration::from_secs(10), async {
            while s.is_healthy() != healthy {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("health did not change within 10s");
    }

    fn all() -> Predicate<(String, i64)> {
        Arc::new(|_: &str, _: &_| true)
    }

    /// A store with one object and one watcher, whose backend then goes down.
    async fn watching_then_down() -> (Arc<Flaky>, Arc<Store<Utf8>>, Watcher<(String, i64)>) {
        let backend = Flaky::new();
        let s = Store::open(backend.clone(), Utf8, StoreOptions::default())
            .await
            .unwrap();
        s.create("/registry/a/1", Bytes::from("one")).await.unwrap();
        s.sync().await.unwrap();
        let w = s
            .watch("/registry/a/", WatchStart::CurrentState, all(), false)
            .await
            .unwrap();
        backend.go_down();
        until_healthy(&s, false).await;
        (backend, s, w)
    }

    /// A broken watch is resumed from the last applied revision: writes made while
    /// it was down reach the cache and the watchers that were already running.
    #[tokio::test]
    async fn broken_watch_resumes_and_keeps_watchers() {
        let (backend, s, mut w) = watching_then_down().await;
        assert!(matches!(s.sync().await, Err(Error::Unavailable(_))));
        // Written while the cache is disconnected (another replica, say).
        let r2 = backend
            .inner
            .create("/registry/a/2", Bytes::from("two"))
            .await
            .unwrap();
        backend.up();
        until_healthy(&s, true).await;
        assert_eq!(s.sync().await.unwrap(), r2);
        assert_eq!(s.get("/registry/a/2").unwrap().object.0, "two");
        match w.events.recv().await {
            Some(WatchItem::Added(o)) => assert_eq!(*o, ("two".to_string(), r2)),
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(s.watcher_count(), 1);
    }

    /// When the history to resume from was compacted meanwhile, the cache relists:
    /// its state is the backend's, and every watcher is ended (clients relist).
    #[tokio::test]
    async fn compacted_while_down_relists_and_ends_watchers() {
        let (backend, s, mut w) = watching_then_down().await;
        let inner = &backend.inner;
        let r2 = inner
            .create("/registry/a/2", Bytes::from("two"))
            .await
            .unwrap();
        inner.delete("/registry/a/1", None).await.unwrap();
        let r4 = inner
            .create("/registry/a/3", Bytes::from("3"))
            .await
            .unwrap();
        inner.compact(r4).await.unwrap();
        backend.up();
        until_healthy(&s, true).await;
        assert_eq!(s.sync().await.unwrap(), r4);
        assert!(s.get("/registry/a/1").is_none());
        assert_eq!(s.get("/registry/a/2").unwrap().mod_revision, r2);
        assert!(w.events.recv().await.is_none(), "the watcher was ended");
        assert_eq!(s.watcher_count(), 0);
        // Resuming from before the relist is a 410; new watches work.
        let err = s
            .watch("/registry/a/", WatchStart::After(r2), all(), false)
            .await
            .err();
        assert!(matches!(err, Some(Error::Compacted { .. })), "{err:?}");
        let mut fresh = s
            .watch("/registry/a/", WatchStart::CurrentState, all(), false)
            .await
            .unwrap();
        assert_eq!(fresh.initial.len(), 2);
        let r5 = s.create("/registry/a/5", Bytes::from("5")).await.unwrap();
        match fresh.events.recv().await {
            Some(WatchItem::Added(o)) => assert_eq!(o.1, r5),
            other => panic!("unexpected {other:?}"),
        }
    }

    /// A watch that silently stops delivering (its member frozen, say) is noticed
    /// by the next consistent read, which fails, and reconnected; reads then work.
    #[tokio::test]
    async fn stalled_watch_is_reconnected_by_a_consistent_read() {
        let backend = Flaky::new();
        backend.silent.store(true, Ordering::SeqCst);
        let options = StoreOptions {
            sync_timeout: Duration::from_millis(300),
            ..Default::default()
        };
        let s = Store::open(backend.clone(), Utf8, options).await.unwrap();
        backend.silent.store(false, Ordering::SeqCst);
        backend.cut.send_modify(|g| *g += 1);
        let r1 = s.create("/registry/a/1", Bytes::from("one")).await.unwrap();
        assert!(matches!(s.sync().await, Err(Error::Unavailable(_))));
        let started = Instant::now();
        while s.sync().await.is_err() {
            assert!(started.elapsed() < Duration::from_secs(5), "still stalled");
        }
        assert_eq!(s.get("/registry/a/1").unwrap().mod_revision, r1);
        assert!(s.is_healthy());
    }
}
