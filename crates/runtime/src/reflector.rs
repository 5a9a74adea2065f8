//! The reflector: list a store, then watch it from the listed revision; when the
//! watch ends (the cache gave up on a slow watcher, storage reconnected), resume
//! after the last revision seen; when that revision was compacted (410), list
//! again. kube-runtime's watcher, as an explicit state machine over a
//! `GenericStore` (one resource) or a storage prefix (every object under it,
//! whatever its type: the garbage collector's whole keyspace). Failures wait
//! with backoff; `next` never gives up.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use apimachinery::selector::{FieldOp, FieldRequirement, FieldSelector};
use registry::{GenericStore, Object, RequestContext, Storage, WatchOptions};
use storage::{Backoff, WatchItem, WatchStart, Watcher};

/// What the reflector saw.
#[derive(Debug, Clone)]
pub enum Event {
    /// The complete current state (the first list, or a list after 410): what is
    /// not in it is gone.
    Restarted(Vec<Arc<Object>>),
    /// Created or changed.
    Applied(Arc<Object>),
    Deleted(Arc<Object>),
}

enum State {
    /// Nothing known yet, or history lost: list.
    Empty,
    /// Following the store after `revision`; `pending` are events the watch
    /// delivered with its start (a resumed watch's catch-up).
    Watching {
        revision: i64,
        pending: VecDeque<WatchItem<Object>>,
        watcher: Watcher<Object>,
    },
    /// The watch ended after `revision`: resume there.
    Resuming { revision: i64 },
}

/// What a reflector follows.
enum Source {
    /// One resource's objects, through its store (the first list is a
    /// consistent read); with `name`, only the objects of that name (the
    /// store's watch leaves out the others' events, so a controller that
    /// cares for one name is not woken by every write of the resource).
    Store {
        store: Arc<GenericStore>,
        name: Option<String>,
    },
    /// Every object stored under `prefix`, whatever its type (the first list
    /// is a consistent read too).
    Keyspace {
        storage: Arc<Storage>,
        prefix: String,
    },
}

/// Why a watch could not start.
#[derive(Debug, thiserror::Error)]
enum StartError {
    #[error(transparent)]
    Store(apimachinery::StatusError),
    #[error(transparent)]
    Storage(storage::Error),
}

impl StartError {
    /// The revision to resume after is no longer in the history (410 Gone).
    fn compacted(&self) -> bool {
        match self {
            StartError::Store(e) => e.code() == 410,
            StartError::Storage(e) => matches!(e, storage::Error::Compacted { .. }),
        }
    }
}

pub struct Reflector {
    source: Source,
    ctx: RequestContext,
    state: State,
    backoff: Backoff,
}

impl Reflector {
    /// Follow `store`; `manager` names the controller in logs.
    pub fn new(store: Arc<GenericStore>, manager: &str) -> Self {
        Self::of(Source::Store { store, name: None }, manager)
    }

    /// Follow the objects of `store` named `name` (in any namespace).
    pub fn named(store: Arc<GenericStore>, name: &str, manager: &str) -> Self {
        let name = Some(name.to_string());
        Self::of(Source::Store { store, name }, manager)
    }

    /// Follow every object `storage` holds under `prefix`.
    pub fn keyspace(storage: Arc<Storage>, prefix: impl Into<String>, manager: &str) -> Self {
        let prefix = prefix.into();
        Self::of(Source::Keyspace { storage, prefix }, manager)
    }

    fn of(source: Source, manager: &str) -> Self {
        Reflector {
            source,
            ctx: crate::system_context("", manager),
            state: State::Empty,
            backoff: Backoff::new(Duration::from_millis(100), Duration::from_secs(30)),
        }
    }

    /// Start watching: with the current state, or after `revision`.
    async fn start(&self, after: Option<i64>) -> Result<Watcher<Object>, StartError> {
        match &self.source {
            Source::Store { store, name } => {
                let opts = WatchOptions {
                    resource_version: after,
                    field_selector: name.as_ref().map(|name| {
                        FieldSelector::new(vec![FieldRequirement {
                            field: "metadata.name".into(),
                            op: FieldOp::Eq,
                            value: name.clone(),
                        }])
                    }),
                    ..Default::default()
                };
                store
                    .watch(&self.ctx, opts)
                    .await
                    .map_err(StartError::Store)
            }
            Source::Keyspace { storage, prefix } => {
                let start = match after {
                    Some(revision) => WatchStart::After(revision),
                    // A consistent list, as a store's.
                    None => {
                        storage.sync().await.map_err(StartError::Storage)?;
                        WatchStart::CurrentState
                    }
                };
                storage
                    .watch(prefix, start, Arc::new(|_, _| true), false)
                    .await
                    .map_err(StartError::Storage)
            }
        }
    }

    /// The next event. Cancel-safe while watching: a `select!` that drops this
    /// future loses no event.
    pub async fn next(&mut self) -> Event {
        loop {
            if let Some(event) = self.step().await {
                return event;
            }
        }
    }

    /// An event that is ready now, without waiting (to drain a burst).
    pub fn try_next(&mut self) -> Option<Event> {
        loop {
            let State::Watching {
                pending, watcher, ..
            } = &mut self.state
            else {
                return None;
            };
            let item = pending
                .pop_front()
                .or_else(|| watcher.events.try_recv().ok())?;
            if let Some(event) = self.observe(item) {
                return Some(event);
            }
        }
    }

    async fn step(&mut self) -> Option<Event> {
        match &mut self.state {
            State::Empty => match self.start(None).await {
                Ok(mut watcher) => {
                    self.backoff.reset();
                    let objects = std::mem::take(&mut watcher.initial)
                        .into_iter()
                        .filter_map(|item| match item {
                            WatchItem::Added(o) | WatchItem::Modified(o) => Some(o),
                            _ => None,
                        })
                        .collect();
                    self.state = State::Watching {
                        revision: watcher.revision,
                        pending: VecDeque::new(),
                        watcher,
                    };
                    Some(Event::Restarted(objects))
                }
                Err(error) => {
                    self.wait(&error).await;
                    None
                }
            },
            State::Resuming { revision } => {
                let revision = *revision;
                match self.start(Some(revision)).await {
                    Ok(mut watcher) => {
                        self.backoff.reset();
                        self.state = State::Watching {
                            revision,
                            pending: std::mem::take(&mut watcher.initial).into(),
                            watcher,
                        };
                    }
                    // History compacted: only a list knows the state now.
                    Err(error) if error.compacted() => self.state = State::Empty,
                    Err(error) => self.wait(&error).await,
                }
                None
            }
            State::Watching {
                revision,
                pending,
                watcher,
            } => {
                let item = match pending.pop_front() {
                    Some(item) => Some(item),
                    None => watcher.events.recv().await,
                };
                match item {
                    Some(item) => self.observe(item),
                    None => {
                        self.state = State::Resuming {
                            revision: *revision,
                        };
                        None
                    }
                }
            }
        }
    }

    /// Advance the revision past `item`; the event it is, if any.
    fn observe(&mut self, item: WatchItem<Object>) -> Option<Event> {
        let State::Watching { revision, .. } = &mut self.state else {
            return None;
        };
        let (at, event) = match item {
            WatchItem::Added(o) | WatchItem::Modified(o) => {
                (revision_of(&o), Some(Event::Applied(o)))
            }
            WatchItem::Deleted(o) => (revision_of(&o), Some(Event::Deleted(o))),
            WatchItem::Bookmark(at) => (at, None),
        };
        *revision = at.max(*revision);
        event
    }

    async fn wait(&mut self, error: &StartError) {
        let delay = self.backoff.next_delay();
        let following = match &self.source {
            Source::Store { store, .. } => store.rtype.plural.as_str(),
            Source::Keyspace { prefix, .. } => prefix.as_str(),
        };
        tracing::warn!(following, %error, ?delay, "reflector: cannot watch; retrying");
        tokio::time::sleep(delay).await;
    }
}

fn revision_of(object: &Object) -> i64 {
    object.revision().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{configmaps, core, create, storage};
    use apimachinery::meta;

    fn names(objects: &[Arc<Object>]) -> Vec<String> {
        let mut names: Vec<String> = objects
            .iter()
            .map(|o| meta::name(&o.value()).to_string())
            .collect();
        names.sort_unstable();
        names
    }

    fn applied_name(event: Event) -> String {
        match event {
            Event::Applied(o) => meta::name(&o.value()).to_string(),
            other => panic!("expected Applied, got {other:?}"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn lists_then_follows() {
        let store = configmaps(1024, 1000).await;
        create(&store, "a").await;
        let mut reflector = Reflector::new(store.clone(), "test");
        match reflector.next().await {
            Event::Restarted(all) => assert_eq!(names(&all), ["a"]),
            other => panic!("{other:?}"),
        }
        create(&store, "b").await;
        assert_eq!(applied_name(reflector.next().await), "b");
    }

    #[tokio::test(start_paused = true)]
    async fn resumes_after_an_ended_watch_without_listing_again() {
        let store = configmaps(4, 1000).await;
        let mut reflector = Reflector::new(store.clone(), "test");
        assert!(matches!(reflector.next().await, Event::Restarted(_)));
        // More events than the watcher's queue holds: the cache ends the watch.
        for i in 0..10 {
            create(&store, &format!("cm-{i}")).await;
        }
        let mut seen = Vec::new();
        while seen.len() < 10 {
            match reflector.next().await {
                Event::Applied(o) => seen.push(meta::name(&o.value()).to_string()),
                other => panic!("a resumed watch replays events, got {other:?}"),
            }
        }
        let mut want: Vec<String> = (0..10).map(|i| format!("cm-{i}")).collect();
        seen.sort();
        want.sort();
        assert_eq!(seen, want);
    }

    #[tokio::test(start_paused = true)]
    async fn lists_again_when_its_revision_was_compacted() {
        let store = configmaps(4, 3).await;
        let mut reflector = Reflector::new(store.clone(), "test");
        assert!(matches!(reflector.next().await, Event::Restarted(_)));
        // The watch is ended and the history keeps only the last 3 events: the
        // revision to resume from is gone (410), so the state comes as a new list.
        for i in 0..10 {
            create(&store, &format!("cm-{i}")).await;
        }
        loop {
            match reflector.next().await {
                Event::Applied(_) => continue,
                Event::Restarted(all) => {
                    assert_eq!(all.len(), 10);
                    break;
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_keyspace_reflector_follows_every_type_and_lists_again_after_410() {
        let storage = storage(4, 3).await;
        let (configmaps, secrets) = (core(&storage, "configmaps"), core(&storage, "secrets"));
        create(&configmaps, "a").await;
        create(&secrets, "s").await;
        let mut reflector = Reflector::keyspace(storage.clone(), "/registry/", "test");
        match reflector.next().await {
            Event::Restarted(all) => assert_eq!(names(&all), ["a", "s"]),
            other => panic!("{other:?}"),
        }
        create(&secrets, "t").await;
        assert_eq!(applied_name(reflector.next().await), "t");
        // As with a store: the watch is ended, its revision compacted (storage's
        // own error, not a 410 Status), and the state comes as a new list.
        for i in 0..10 {
            create(&configmaps, &format!("cm-{i}")).await;
        }
        loop {
            match reflector.next().await {
                Event::Applied(_) => continue,
                Event::Restarted(all) => {
                    assert_eq!(all.len(), 13);
                    break;
                }
                other => panic!("{other:?}"),
            }
        }
    }
}
