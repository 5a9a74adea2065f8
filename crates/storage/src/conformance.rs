//! The backend conformance suite: one set of behavioural cases every [`Backend`]
//! must pass, so the memory, SQLite and etcd backends cannot drift apart.
//!
//! Why a suite in the library rather than per-backend tests: the API server relies
//! on exact etcd semantics (revisions, compare-and-swap errors, compaction, watch
//! replay). Each case here asserts exact revisions and errors, and every backend's
//! test file runs all of them with one line:
//!
//! ```ignore
//! kubext_storage::conformance_tests!(std::sync::Arc::new(MemoryBackend::new()));
//! ```
//!
//! The macro expands to one `#[tokio::test]` per case (so a failure names the
//! case); the test crate must depend on `tokio`. Its argument is evaluated once per
//! case and must give a fresh, empty backend as a [`Fixture`]: an `Arc<B>`, or a
//! tuple `(Arc<B>, guard)` whose guard (a temporary directory, a server process)
//! outlives the backend.
//!
//! Revisions are asserted relative to the revision the backend had when the case
//! started (memory and SQLite start at 0, a fresh etcd at 1), so a case needs only
//! that nothing else writes to the backend while it runs.
//!
//! Failures are reported by panicking, as in any test: this module is test code
//! that lives in the library so that other crates can run it.
#![allow(
    clippy::expect_used,
    reason = "test code (behind the `conformance` feature): a failed expectation is a failed case"
)]

use bytes::Bytes;
use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::backend::{Backend, Error, Event, KeyValue, Range, Result};

/// Something that provides the backend under test and keeps whatever it needs alive.
pub trait Fixture: Send + 'static {
    fn backend(&self) -> Arc<dyn Backend>;
}

impl<B: Backend> Fixture for Arc<B> {
    fn backend(&self) -> Arc<dyn Backend> {
        self.clone()
    }
}

impl<F: Fixture, G: Send + 'static> Fixture for (F, G) {
    fn backend(&self) -> Arc<dyn Backend> {
        self.0.backend()
    }
}

/// One conformance case: takes a fresh, empty backend and panics on a violation.
pub type Case = fn(Arc<dyn Backend>) -> BoxFuture<'static, ()>;

macro_rules! cases {
    ($($name:ident),* $(,)?) => {
        /// Every case, by name, in the order [`run_all`] runs them.
        pub const CASES: &[(&str, Case)] = &[$((stringify!($name), |b| Box::pin($name(b)))),*];
    };
}

cases!(
    fresh_backend_is_empty,
    create_and_get,
    create_existing_fails,
    update_checks_mod_revision,
    delete_with_and_without_precondition,
    failed_writes_do_not_advance_revision,
    range_prefix_limit_and_count,
    range_at_past_revision,
    range_at_compacted_revision_fails,
    range_at_future_revision_fails,
    watch_from_start_sees_every_event,
    watch_from_mid_revision_replays_later_events,
    watch_from_compacted_revision_fails,
    concurrent_creates_get_consecutive_revisions,
    concurrent_updates_have_one_winner,
    large_values_round_trip,
    unicode_and_slash_keys_round_trip,
    compaction_keeps_latest_values,
);

/// Run every case, each on a fresh fixture from `make`, in one test. Prefer
/// [`conformance_tests!`](crate::conformance_tests), which makes one test per case.
pub async fn run_all<F, Fut, X>(make: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = X>,
    X: Fixture,
{
    for (name, case) in CASES {
        eprintln!("conformance case: {name}");
        let fixture = make().await;
        let backend = fixture.backend();
        case(backend.clone()).await;
        backend.close().await;
        drop(fixture);
    }
}

/// Expand to one `#[tokio::test]` per conformance case, run on a fresh backend from
/// `$make` (evaluated inside each test; see [`Fixture`]), plus a test that checks
/// the macro lists every case in [`CASES`].
#[macro_export]
macro_rules! conformance_tests {
    ($make:expr $(,)?) => {
        $crate::conformance_tests!(@cases ($make)
            fresh_backend_is_empty,
            create_and_get,
            create_existing_fails,
            update_checks_mod_revision,
            delete_with_and_without_precondition,
            failed_writes_do_not_advance_revision,
            range_prefix_limit_and_count,
            range_at_past_revision,
            range_at_compacted_revision_fails,
            range_at_future_revision_fails,
            watch_from_start_sees_every_event,
            watch_from_mid_revision_replays_later_events,
            watch_from_compacted_revision_fails,
            concurrent_creates_get_consecutive_revisions,
            concurrent_updates_have_one_winner,
            large_values_round_trip,
            unicode_and_slash_keys_round_trip,
            compaction_keeps_latest_values,
        );
    };
    (@cases ($make:expr) $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let fixture = $make;
                let backend = $crate::conformance::Fixture::backend(&fixture);
                $crate::conformance::$case(backend.clone()).await;
                $crate::Backend::close(&*backend).await;
                drop(backend);
                drop(fixture);
            }
        )*

        #[test]
        fn conformance_macro_lists_every_case() {
            let listed: &[&str] = &[$(stringify!($case)),*];
            let all: Vec<&str> = $crate::conformance::CASES.iter().map(|(name, _)| *name).collect();
            assert_eq!(listed, &all[..], "conformance_tests! and CASES disagree");
        }
    };
}

// ---------------------------------------------------------------------------------
// Helpers

type EventStream = BoxStream<'static, Result<Vec<Event>>>;

/// How long a watch may take to deliver an expected event.
const WAIT: Duration = Duration::from_secs(10);
/// How long a watch must stay silent to count as having nothing more.
const QUIET: Duration = Duration::from_millis(200);

fn val(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn kv(key: &str, value: impl AsRef<[u8]>, create_revision: i64, mod_revision: i64) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Bytes::copy_from_slice(value.as_ref()),
        create_revision,
        mod_revision,
    }
}

fn put(kv: KeyValue, prev: Option<KeyValue>) -> Event {
    Event::Put { kv, prev }
}

fn del(revision: i64, prev: KeyValue) -> Event {
    Event::Delete { revision, prev }
}

/// Deterministic bytes covering every byte value (including NUL).
fn pseudo_random(len: usize, seed: u64) -> Bytes {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect::<Vec<u8>>()
        .into()
}

async fn revision(b: &Arc<dyn Backend>) -> i64 {
    b.current_revision().await.expect("current_revision")
}

async fn create(b: &Arc<dyn Backend>, key: &str, value: &str) -> i64 {
    b.create(key, val(value))
        .await
        .unwrap_or_else(|e| panic!("create {key}: {e:?}"))
}

async fn update(b: &Arc<dyn Backend>, key: &str, value: &str, expected: i64) -> i64 {
    b.update(key, val(value), expected)
        .await
        .unwrap_or_else(|e| panic!("update {key} at {expected}: {e:?}"))
}

async fn delete(b: &Arc<dyn Backend>, key: &str, expected: Option<i64>) -> (i64, KeyValue) {
    b.delete(key, expected)
        .await
        .unwrap_or_else(|e| panic!("delete {key} (expected {expected:?}): {e:?}"))
}

async fn get(b: &Arc<dyn Backend>, key: &str) -> Option<KeyValue> {
    b.get(key)
        .await
        .unwrap_or_else(|e| panic!("get {key}: {e:?}"))
}

async fn range(b: &Arc<dyn Backend>, prefix: &str, revision: i64, limit: i64) -> Range {
    let end = crate::prefix_end(prefix);
    b.range(prefix, &end, revision, limit)
        .await
        .unwrap_or_else(|e| panic!("range {prefix} at {revision} limit {limit}: {e:?}"))
}

async fn range_err(b: &Arc<dyn Backend>, prefix: &str, revision: i64) -> Error {
    let end = crate::prefix_end(prefix);
    match b.range(prefix, &end, revision, 0).await {
        Ok(r) => panic!("range {prefix} at {revision} should fail, got {r:?}"),
        Err(e) => e,
    }
}

fn watch(b: &Arc<dyn Backend>, after: i64) -> EventStream {
    b.watch(after)
        .unwrap_or_else(|e| panic!("watch after {after}: {e:?}"))
}

fn watch_err(b: &Arc<dyn Backend>, after: i64) -> Error {
    match b.watch(after) {
        Ok(_) => panic!("watch after {after} should fail"),
        Err(e) => e,
    }
}

/// Read exactly `n` events (across however many batches), in strictly increasing
/// revision order; fail on an error, the stream ending, extra events or a timeout.
async fn take_events(stream: &mut EventStream, n: usize) -> Vec<Event> {
    let mut out: Vec<Event> = Vec::with_capacity(n);
    while out.len() < n {
        let next = tokio::time::timeout(WAIT, stream.next()).await;
        let batch = match next {
            Err(_) => panic!("timed out after {} of {n} events: {out:?}", out.len()),
            Ok(None) => panic!("watch ended after {} of {n} events: {out:?}", out.len()),
            Ok(Some(Err(e))) => panic!("watch failed after {} of {n} events: {e:?}", out.len()),
            Ok(Some(Ok(batch))) => batch,
        };
        out.extend(batch);
    }
    assert_eq!(out.len(), n, "more events than expected: {out:?}");
    for pair in out.windows(2) {
        assert!(
            pair[0].revision() < pair[1].revision(),
            "events out of order or duplicated: {pair:?}"
        );
    }
    out
}

/// The watch delivers nothing more (for now).
async fn assert_quiet(stream: &mut EventStream) {
    match tokio::time::timeout(QUIET, stream.next()).await {
        Err(_) => {}
        Ok(Some(Ok(batch))) if batch.is_empty() => {}
        Ok(other) => panic!("expected no more events, got {other:?}"),
    }
}

fn conflict(key: &str, current: KeyValue) -> Error {
    Error::Conflict {
        key: key.into(),
        current: Some(Box::new(current)),
    }
}

// ---------------------------------------------------------------------------------
// Cases

/// A fresh backend holds no keys, and a latest read is served at the current revision.
pub async fn fresh_backend_is_empty(b: Arc<dyn Backend>) {
    let base = revision(&b).await;
    assert!(base >= 0, "negative revision {base}");
    let all = range(&b, "/", 0, 0).await;
    assert_eq!(
        all,
        Range {
            kvs: vec![],
            more: false,
            count: 0,
            revision: base
        }
    );
    assert_eq!(get(&b, "/missing").await, None);
    assert_eq!(
        revision(&b).await,
        base,
        "reads do not advance the revision"
    );
}

/// Each create gets the next revision, as both create and mod revision.
pub async fn create_and_get(b: Arc<dyn Backend>) {
    let base = revision(&b).await;
    let r1 = create(&b, "/a", "1").await;
    assert_eq!(r1, base + 1);
    assert_eq!(get(&b, "/a").await, Some(kv("/a", "1", r1, r1)));
    assert_eq!(revision(&b).await, r1);

    let r2 = create(&b, "/b", "2").await;
    assert_eq!(r2, base + 2);
    assert_eq!(get(&b, "/b").await, Some(kv("/b", "2", r2, r2)));

    let r3 = b
        .create("/empty", Bytes::new())
        .await
        .expect("create empty value");
    assert_eq!(r3, base + 3);
    assert_eq!(get(&b, "/empty").await, Some(kv("/empty", "", r3, r3)));

    assert_eq!(revision(&b).await, base + 3);
    assert_eq!(
        get(&b, "/a").await,
        Some(kv("/a", "1", r1, r1)),
        "others untouched"
    );
    assert_eq!(get(&b, "/c").await, None);
}

/// Creating a key that exists fails with `AlreadyExists` and changes nothing.
pub async fn create_existing_fails(b: Arc<dyn Backend>) {
    let base = revision(&b).await;
    let r1 = create(&b, "/dup", "first").await;
    let err = b
        .create("/dup", val("second"))
        .await
        .expect_err("duplicate create");
    assert_eq!(err, Error::AlreadyExists("/dup".into()));
    assert_eq!(get(&b, "/dup").await, Some(kv("/dup", "first", r1, r1)));
    assert_eq!(revision(&b).await, base + 1);
}

/// Update is a compare-and-swap on the mod revision; the create revision is kept.
pub async fn update_checks_mod_revision(b: Arc<dyn Backend>) {
    let base = revision(&b).await;
    let r1 = create(&b, "/u", "v1").await;
    let r2 = update(&b, "/u", "v2", r1).await;
    assert_eq!(r2, base + 2);
    assert_eq!(get(&b, "/u").await, Some(kv("/u", "v2", r1, r2)));

    // Stale expectation: Conflict carrying what is stored now.
    let err = b
        .update("/u", val("v3"), r1)
        .await
        .expect_err("stale update");
    assert_eq!(err, conflict("/u", kv("/u", "v2", r1, r2)));
    // An expectation from the future conflicts too.
    let err = b
        .update("/u", val("v3"), r2 + 10)
        .await
        .expect_err("future update");
    assert_eq!(err, conflict("/u", kv("/u", "v2", r1, r2)));

    let err = b
        .update("/missing", val("x"), r1)
        .await
        .expect_err("update missing");
    assert_eq!(err, Error::NotFound("/missing".into()));

    assert_eq!(
        revision(&b).await,
        r2,
        "failed updates do not advance the revision"
    );
    let r3 = update(&b, "/u", "v3", r2).await;
    assert_eq!(r3, base + 3);
    assert_eq!(get(&b, "/u").await, Some(kv("/u", "v3", r1, r3)));
}

/// Delete returns the deleted value; a later create starts a new life for the key.
pub async fn delete_with_and_without_precondition(b: Arc<dyn Backend>) {
    let base = revision(&b).await;
    let ra = create(&b, "/d/a", "a").await;
    let rb = create(&b, "/d/b", "b").await;

    let err = b
        .delete("/d/a", Some(rb))
        .await
        .expect_err("wrong precondition");
    assert_eq!(err, conflict("/d/a", kv("/d/a", "a", ra, ra)));
    assert_eq!(get(&b, "/d/a").await, Some(kv("/d/a", "a", ra, ra)));

    let (r3, prev) = delete(&b, "/d/a", Some(ra)).await;
    assert_eq!(r3, base + 3);
    assert_eq!(prev, kv("/d/a", "a", ra, ra));
    assert_eq!(get(&b, "/d/a").await, None);

    let (r4, prev) = delete(&b, "/d/b", None).await;
    assert_eq!(r4, base + 4);
    assert_eq!(prev, kv("/d/b", "b", rb, rb));
    assert_eq!(get(&b, "/d/b").await, None);

    let err = b
        .delete("/d/a", None)
        .await
        .expect_err("delete deleted key");
    assert_eq!(err, Error::NotFound("/d/a".into()));
    let err = b
        .delete("/d/a", Some(ra))
        .await
        .expect_err("delete deleted key with precondition");
    assert_eq!(err, Error::NotFound("/d/a".into()));
    let err = b
        .delete("/d/never", None)
        .await
        .expect_err("delete missing");
    assert_eq!(err, Error::NotFound("/d/never".into()));
    assert_eq!(revision(&b).await, r4);

    // Re-created: a new create revision, not the old one.
    let r5 = create(&b, "/d/a", "again").await;
    assert_eq!(r5, base + 5);
    assert_eq!(get(&b, "/d/a").await, Some(kv("/d/a", "again", r5, r5)));
    let err = b
        .update("/d/a", val("x"), ra)
        .await
        .expect_err("update with old life's revision");
    assert_eq!(err, conflict("/d/a", kv("/d/a", "again", r5, r5)));
}

/// Every kind of failed write leaves the revision alone; the next write gets exactly +1.
pub async fn failed_writes_do_not_advance_revision(b: Arc<dyn Backend>) {
    let base = revision(&b).await;
    let r1 = create(&b, "/f/a", "a").await;
    assert_eq!(r1, base + 1);

    assert!(matches!(
        b.create("/f/a", val("x")).await,
        Err(Error::AlreadyExists(_))
    ));
    assert!(matches!(
        b.update("/f/a", val("x"), r1 + 100).await,
        Err(Error::Conflict { .. })
    ));
    assert!(matches!(
        b.update("/f/none", val("x"), r1).await,
        Err(Error::NotFound(_))
    ));
    assert!(matches!(
        b.delete("/f/a", Some(r1 + 1)).await,
        Err(Error::Conflict { .. })
    ));
    assert!(matches!(
        b.delete("/f/none", None).await,
        Err(Error::NotFound(_))
    ));
    assert_eq!(revision(&b).await, r1);
    assert_eq!(range(&b, "/f/", 0, 0).await.revision, r1);

    let r2 = create(&b, "/f/b", "b").await;
    assert_eq!(r2, base + 2);
    let r3 = update(&b, "/f/a", "a2", r1).await;
    assert_eq!(r3, base + 3);
    let (r4, _) = delete(&b, "/f/b", Some(r2)).await;
    assert_eq!(r4, base + 4);
    assert_eq!(revision(&b).await, base + 4);
}

/// Range is `[start, end)` in key order, with limit, `more` and the full count.
pub async fn range_prefix_limit_and_count(b: Arc<dyn Backend>) {
    let base = revision(&b).await;
    // Out of key order on purpose; the neighbours must stay outside the range.
    let mut revs = HashMap::new();
    for name in ["3", "1", "5", "2", "4"] {
        let key = format!("/r/a/{name}");
        revs.insert(key.clone(), create(&b, &key, &format!("v{name}")).await);
    }
    create(&b, "/r/a", "prefix without slash").await;
    create(&b, "/r/a0", "the prefix end itself").await;
    create(&b, "/r/b/1", "other prefix").await;
    let current = revision(&b).await;
    assert_eq!(current, base + 8);

    let expected: Vec<KeyValue> = (1..=5)
        .map(|i| {
            let key = format!("/r/a/{i}");
            let rev = revs[&key];
            kv(&key, format!("v{i}"), rev, rev)
        })
        .collect();

    let all = range(&b, "/r/a/", 0, 0).await;
    assert_eq!(
        all,
        Range {
            kvs: expected.clone(),
            more: false,
            count: 5,
            revision: current
        }
    );

    let first = range(&b, "/r/a/", 0, 2).await;
    assert_eq!(
        first,
        Range {
            kvs: expected[..2].to_vec(),
            more: true,
            count: 5,
            revision: current
        }
    );
    for limit in [5, 6, 100] {
        let r = range(&b, "/r/a/", 0, limit).await;
        assert_eq!(r.kvs, expected, "limit {limit}");
        assert!(!r.more, "limit {limit}: nothing more");
        assert_eq!(r.count, 5, "limit {limit}");
    }

    // Continuing after a key (as paged lists do), at the first page's revision.
    let end = crate::prefix_end("/r/a/");
    let next = b
        .range("/r/a/2\0", &end, first.revision, 2)
        .await
        .expect("continue range");
    assert_eq!(
        next,
        Range {
            kvs: expected[2..4].to_vec(),
            more: true,
            count: 3,
            revision: current
        }
    );

    let none = range(&b, "/r/none/", 0, 0).await;
    assert_eq!(
        none,
        Range {
            kvs: vec![],
            more: false,
            count: 0,
            revision: current
        }
    );
    let everything = range(&b, "/r/", 0, 0).await;
    assert_eq!(everything.count, 8);
    let keys: Vec<&str> = everything.kvs.iter().map(|kv| &*kv.key).collect();
    assert_eq!(
        keys,
        [
            "/r/a", "/r/a/1", "/r/a/2", "/r/a/3", "/r/a/4", "/r/a/5", "/r/a0", "/r/b/1"
        ]
    );
}

/// A range at a past revision sees the values of then: later updates and creates
/// are invisible, later deletes are not yet deleted.
pub async fn range_at_past_revision(b: Arc<dyn Backend>) {
    let r1 = create(&b, "/p/a", "a1").await;
    let r2 = create(&b, "/p/b", "b1").await;
    let r3 = update(&b, "/p/a", "a2", r1).await;
    let (r4, _) = delete(&b, "/p/b", Some(r2)).await;
    let r5 = create(&b, "/p/c", "c1").await;
    let r6 = create(&b, "/p/b", "b2").await;

    let at = |rev: i64, kvs: Vec<KeyValue>| Range {
        count: kvs.len() as i64,
        kvs,
        more: false,
        revision: rev,
    };
    assert_eq!(
        range(&b, "/p/", r1, 0).await,
        at(r1, vec![kv("/p/a", "a1", r1, r1)])
    );
    assert_eq!(
        range(&b, "/p/", r2, 0).await,
        at(r2, vec![kv("/p/a", "a1", r1, r1), kv("/p/b", "b1", r2, r2)])
    );
    assert_eq!(
        range(&b, "/p/", r3, 0).await,
        at(r3, vec![kv("/p/a", "a2", r1, r3), kv("/p/b", "b1", r2, r2)])
    );
    assert_eq!(
        range(&b, "/p/", r4, 0).await,
        at(r4, vec![kv("/p/a", "a2", r1, r3)])
    );
    assert_eq!(
        range(&b, "/p/", r5, 0).await,
        at(r5, vec![kv("/p/a", "a2", r1, r3), kv("/p/c", "c1", r5, r5)])
    );
    let latest = at(
        r6,
        vec![
            kv("/p/a", "a2", r1, r3),
            kv("/p/b", "b2", r6, r6),
            kv("/p/c", "c1", r5, r5),
        ],
    );
    assert_eq!(range(&b, "/p/", r6, 0).await, latest);
    assert_eq!(range(&b, "/p/", 0, 0).await, latest);

    // Limits apply at past revisions too.
    let limited = range(&b, "/p/", r2, 1).await;
    assert_eq!(
        limited,
        Range {
            kvs: vec![kv("/p/a", "a1", r1, r1)],
            more: true,
            count: 2,
            revision: r2
        }
    );
}

/// Reads before the compaction revision fail with `Compacted`; at it they work.
pub async fn range_at_compacted_revision_fails(b: Arc<dyn Backend>) {
    let r1 = create(&b, "/k/a", "a1").await;
    let r2 = update(&b, "/k/a", "a2", r1).await;
    let r3 = create(&b, "/k/b", "b").await;
    let r4 = update(&b, "/k/a", "a3", r2).await;
    b.compact(r3).await.expect("compact");

    for requested in [r1, r2] {
        assert_eq!(
            range_err(&b, "/k/", requested).await,
            Error::Compacted {
                requested,
                compacted: r3
            }
        );
    }
    assert_eq!(
        range(&b, "/k/", r3, 0).await,
        Range {
            kvs: vec![kv("/k/a", "a2", r1, r2), kv("/k/b", "b", r3, r3)],
            more: false,
            count: 2,
            revision: r3
        }
    );
    assert_eq!(
        range(&b, "/k/", 0, 0).await,
        Range {
            kvs: vec![kv("/k/a", "a3", r1, r4), kv("/k/b", "b", r3, r3)],
            more: false,
            count: 2,
            revision: r4
        }
    );
    assert_eq!(revision(&b).await, r4, "compaction is not a write");
}

/// Reads after the current revision fail with `FutureRevision`.
pub async fn range_at_future_revision_fails(b: Arc<dyn Backend>) {
    let r1 = create(&b, "/x/a", "a").await;
    assert_eq!(
        range_err(&b, "/x/", r1 + 1).await,
        Error::FutureRevision {
            requested: r1 + 1,
            current: r1
        }
    );
    assert_eq!(
        range_err(&b, "/x/", r1 + 1000).await,
        Error::FutureRevision {
            requested: r1 + 1000,
            current: r1
        }
    );
    assert_eq!(
        range(&b, "/x/", r1, 0).await.kvs,
        vec![kv("/x/a", "a", r1, r1)]
    );
}

/// A watch from the start (0 on a fresh memory or SQLite backend) sees every
/// event in order, with previous values; live and replayed watches agree.
pub async fn watch_from_start_sees_every_event(b: Arc<dyn Backend>) {
    let base = revision(&b).await;
    let mut live = watch(&b, base);

    let r1 = create(&b, "/w/a", "1").await;
    assert!(
        b.create("/w/a", val("dup")).await.is_err(),
        "failed writes make no events"
    );
    let r2 = update(&b, "/w/a", "2", r1).await;
    let r3 = create(&b, "/w/b", "x").await;
    assert!(b.update("/w/b", val("y"), r1).await.is_err());
    let (r4, _) = delete(&b, "/w/a", None).await;
    let r5 = create(&b, "/w/a", "3").await;
    let (r6, _) = delete(&b, "/w/b", Some(r3)).await;
    assert_eq!(r6, base + 6);

    let expected = vec![
        put(kv("/w/a", "1", r1, r1), None),
        put(kv("/w/a", "2", r1, r2), Some(kv("/w/a", "1", r1, r1))),
        put(kv("/w/b", "x", r3, r3), None),
        del(r4, kv("/w/a", "2", r1, r2)),
        put(kv("/w/a", "3", r5, r5), None),
        del(r6, kv("/w/b", "x", r3, r3)),
    ];
    assert_eq!(take_events(&mut live, 6).await, expected, "live watch");
    let mut replay = watch(&b, base);
    assert_eq!(
        take_events(&mut replay, 6).await,
        expected,
        "replayed watch"
    );
    assert_quiet(&mut live).await;
    assert_quiet(&mut replay).await;

    // Both continue with live events.
    let r7 = update(&b, "/w/a", "4", r5).await;
    let next = vec![put(kv("/w/a", "4", r5, r7), Some(kv("/w/a", "3", r5, r5)))];
    assert_eq!(take_events(&mut live, 1).await, next);
    assert_eq!(take_events(&mut replay, 1).await, next);
}

/// A watch from a past revision replays only later events, then follows live ones
/// with no gap and no duplicate.
pub async fn watch_from_mid_revision_replays_later_events(b: Arc<dyn Backend>) {
    let r1 = create(&b, "/m/a", "a1").await;
    let r2 = update(&b, "/m/a", "a2", r1).await;
    let r3 = create(&b, "/m/b", "b1").await;
    let (r4, _) = delete(&b, "/m/a", Some(r2)).await;

    let mut w = watch(&b, r2);
    assert_eq!(
        take_events(&mut w, 2).await,
        vec![
            put(kv("/m/b", "b1", r3, r3), None),
            del(r4, kv("/m/a", "a2", r1, r2)),
        ]
    );
    assert_quiet(&mut w).await;

    let mut at_head = watch(&b, r4);
    let r5 = update(&b, "/m/b", "b2", r3).await;
    let expected = vec![put(
        kv("/m/b", "b2", r3, r5),
        Some(kv("/m/b", "b1", r3, r3)),
    )];
    assert_eq!(take_events(&mut w, 1).await, expected);
    assert_eq!(take_events(&mut at_head, 1).await, expected);
    assert_quiet(&mut w).await;
    assert_quiet(&mut at_head).await;

    let mut last_only = watch(&b, r5 - 1);
    assert_eq!(take_events(&mut last_only, 1).await, expected);
}

/// A watch that needs compacted history fails with `Compacted`
/// (`requested` is the first revision it needed); one from the compaction
/// revision works.
pub async fn watch_from_compacted_revision_fails(b: Arc<dyn Backend>) {
    let base = revision(&b).await;
    let r1 = create(&b, "/c/1", "1").await;
    let r2 = create(&b, "/c/2", "2").await;
    let r3 = create(&b, "/c/3", "3").await;
    let r4 = create(&b, "/c/4", "4").await;
    b.compact(r3).await.expect("compact");

    assert_eq!(
        watch_err(&b, base),
        Error::Compacted {
            requested: base + 1,
            compacted: r3
        }
    );
    assert_eq!(
        watch_err(&b, r1),
        Error::Compacted {
            requested: r2,
            compacted: r3
        }
    );

    let mut w = watch(&b, r3);
    assert_eq!(
        take_events(&mut w, 1).await,
        vec![put(kv("/c/4", "4", r4, r4), None)]
    );
    let r5 = create(&b, "/c/5", "5").await;
    assert_eq!(
        take_events(&mut w, 1).await,
        vec![put(kv("/c/5", "5", r5, r5), None)]
    );
    assert_quiet(&mut w).await;
}

/// 50 concurrent creates get 50 distinct, consecutive revisions, and a watch
/// sees them in revision order.
pub async fn concurrent_creates_get_consecutive_revisions(b: Arc<dyn Backend>) {
    const N: usize = 50;
    let base = revision(&b).await;
    let mut w = watch(&b, base);
    let tasks: Vec<_> = (0..N)
        .map(|i| {
            let b = b.clone();
            tokio::spawn(async move {
                let key = format!("/conc/{i:02}");
                let rev = b
                    .create(&key, val(&format!("v{i}")))
                    .await
                    .unwrap_or_else(|e| panic!("concurrent create {key}: {e:?}"));
                (key, rev)
            })
        })
        .collect();
    let mut by_key = HashMap::new();
    for task in tasks {
        let (key, rev) = task.await.expect("create task panicked");
        by_key.insert(key, rev);
    }
    let mut revs: Vec<i64> = by_key.values().copied().collect();
    revs.sort_unstable();
    assert_eq!(revs, (base + 1..=base + N as i64).collect::<Vec<_>>());
    assert_eq!(revision(&b).await, base + N as i64);

    for (key, &rev) in &by_key {
        let stored = get(&b, key).await.expect("created key exists");
        assert_eq!(
            (stored.create_revision, stored.mod_revision),
            (rev, rev),
            "{key}"
        );
    }
    let events = take_events(&mut w, N).await;
    for event in &events {
        assert_eq!(by_key[&**event.key()], event.revision(), "{event:?}");
        assert!(matches!(event, Event::Put { prev: None, .. }), "{event:?}");
    }
    assert_eq!(range(&b, "/conc/", 0, 0).await.count, N as i64);
}

/// Concurrent compare-and-swaps from the same revision: exactly one wins.
pub async fn concurrent_updates_have_one_winner(b: Arc<dyn Backend>) {
    const N: usize = 20;
    let r1 = create(&b, "/cas", "start").await;
    let tasks: Vec<_> = (0..N)
        .map(|i| {
            let b = b.clone();
            tokio::spawn(async move { (i, b.update("/cas", val(&format!("w{i}")), r1).await) })
        })
        .collect();
    let mut winners = Vec::new();
    let mut conflicts = Vec::new();
    for task in tasks {
        match task.await.expect("update task panicked") {
            (i, Ok(rev)) => winners.push((i, rev)),
            (_, Err(Error::Conflict { key, current })) => conflicts.push((key, current)),
            (i, Err(e)) => panic!("update {i}: unexpected {e:?}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one winner: {winners:?}");
    let (i, rev) = winners[0];
    assert_eq!(rev, r1 + 1);
    let stored = kv("/cas", format!("w{i}"), r1, rev);
    assert_eq!(get(&b, "/cas").await, Some(stored.clone()));
    assert_eq!(conflicts.len(), N - 1);
    for (key, current) in conflicts {
        assert_eq!(key, "/cas");
        assert_eq!(current.as_deref(), Some(&stored));
    }
    assert_eq!(revision(&b).await, r1 + 1);
}

/// Values of a mebibyte (with every byte value, NUL included) round-trip through
/// get, range, delete and watch.
pub async fn large_values_round_trip(b: Arc<dyn Backend>) {
    let base = revision(&b).await;
    let big = pseudo_random(1 << 20, 7);
    let bigger = pseudo_random((1 << 20) + 1, 11);
    let r1 = b.create("/big/a", big.clone()).await.expect("create 1 MiB");
    let r2 = b
        .update("/big/a", bigger.clone(), r1)
        .await
        .expect("update 1 MiB");

    let first = KeyValue {
        key: "/big/a".into(),
        value: big,
        create_revision: r1,
        mod_revision: r1,
    };
    let second = KeyValue {
        value: bigger,
        mod_revision: r2,
        ..first.clone()
    };
    assert_eq!(get(&b, "/big/a").await, Some(second.clone()));
    assert_eq!(range(&b, "/big/", 0, 0).await.kvs, vec![second.clone()]);
    assert_eq!(range(&b, "/big/", r1, 0).await.kvs, vec![first.clone()]);
    let (r3, prev) = delete(&b, "/big/a", None).await;
    assert_eq!(prev, second);

    let mut w = watch(&b, base);
    assert_eq!(
        take_events(&mut w, 3).await,
        vec![
            put(first.clone(), None),
            put(second.clone(), Some(first)),
            del(r3, second),
        ]
    );
}

/// Keys with non-ASCII characters, repeated or trailing slashes, spaces and tabs
/// round-trip exactly and sort bytewise.
pub async fn unicode_and_slash_keys_round_trip(b: Arc<dyn Backend>) {
    let keys = [
        "/u/configmaps/default/héllo",
        "/u/configmaps/日本語/名前",
        "/u/configmaps/ns/emoji-🚀-key",
        "/u/ключ/значение",
        "/u/a//double//slash",
        "/u/trailing/",
        "/u/spaces in key/and\ttab",
        "/u/zz",
    ];
    let mut revs = HashMap::new();
    for key in keys {
        let value = format!("value of {key} ✓");
        revs.insert(key, create(&b, key, &value).await);
    }
    for key in keys {
        let rev = revs[key];
        assert_eq!(
            get(&b, key).await,
            Some(kv(key, format!("value of {key} ✓"), rev, rev)),
            "{key}"
        );
    }
    let mut sorted = keys.to_vec();
    sorted.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    let all = range(&b, "/u/", 0, 0).await;
    let got: Vec<&str> = all.kvs.iter().map(|kv| &*kv.key).collect();
    assert_eq!(got, sorted);

    // A prefix range over a non-ASCII segment.
    let jp = range(&b, "/u/configmaps/日本語/", 0, 0).await;
    assert_eq!(jp.kvs.len(), 1);
    assert_eq!(&*jp.kvs[0].key, "/u/configmaps/日本語/名前");

    let (rd, _) = delete(&b, "/u/ключ/значение", None).await;
    let mut w = watch(&b, rd - 1);
    let events = take_events(&mut w, 1).await;
    assert_eq!(&**events[0].key(), "/u/ключ/значение");
}

/// Compaction discards history but never the latest values; writes, compare-and-swap
/// and watches continue; compacting backwards is a no-op, forwards past the
/// current revision fails.
pub async fn compaction_keeps_latest_values(b: Arc<dyn Backend>) {
    let base = revision(&b).await;
    let r1 = create(&b, "/cp/a", "a1").await;
    let r2 = update(&b, "/cp/a", "a2", r1).await;
    let r3 = create(&b, "/cp/b", "b1").await;
    let r4 = create(&b, "/cp/c", "c1").await;
    let (r5, _) = delete(&b, "/cp/c", None).await;

    b.compact(r4).await.expect("compact r4");
    let a2 = kv("/cp/a", "a2", r1, r2);
    let b1 = kv("/cp/b", "b1", r3, r3);
    assert_eq!(
        range(&b, "/cp/", r4, 0).await.kvs,
        vec![a2.clone(), b1.clone(), kv("/cp/c", "c1", r4, r4)]
    );
    assert_eq!(
        range(&b, "/cp/", r5, 0).await.kvs,
        vec![a2.clone(), b1.clone()]
    );
    assert_eq!(
        range_err(&b, "/cp/", r3).await,
        Error::Compacted {
            requested: r3,
            compacted: r4
        }
    );
    assert_eq!(get(&b, "/cp/a").await, Some(a2.clone()));
    assert_eq!(get(&b, "/cp/c").await, None);

    // Compare-and-swap against a revision from before the compaction still works.
    let r6 = update(&b, "/cp/a", "a3", r2).await;
    assert_eq!(r6, base + 6);

    b.compact(r2)
        .await
        .expect("compacting backwards is a no-op");
    b.compact(r4).await.expect("compacting again is a no-op");
    assert_eq!(
        range(&b, "/cp/", r4, 0).await.kvs.len(),
        3,
        "still readable at r4"
    );
    assert_eq!(
        b.compact(r6 + 1).await.expect_err("compact the future"),
        Error::FutureRevision {
            requested: r6 + 1,
            current: r6
        }
    );

    let (r7, prev) = delete(&b, "/cp/b", Some(r3)).await;
    assert_eq!(prev, b1);
    b.compact(r7)
        .await
        .expect("compact to the current revision");
    let a3 = kv("/cp/a", "a3", r1, r6);
    assert_eq!(
        range(&b, "/cp/", 0, 0).await,
        Range {
            kvs: vec![a3.clone()],
            more: false,
            count: 1,
            revision: r7
        }
    );
    assert_eq!(range(&b, "/cp/", r7, 0).await.kvs, vec![a3.clone()]);
    assert_eq!(
        range_err(&b, "/cp/", r6).await,
        Error::Compacted {
            requested: r6,
            compacted: r7
        }
    );
    assert_eq!(get(&b, "/cp/a").await, Some(a3));
    assert_eq!(get(&b, "/cp/b").await, None);
    assert_eq!(revision(&b).await, r7);

    // Writes continue at the next revision; deleted keys start a new life.
    let r8 = create(&b, "/cp/c", "c2").await;
    assert_eq!(r8, base + 8);
    assert_eq!(get(&b, "/cp/c").await, Some(kv("/cp/c", "c2", r8, r8)));
    let mut w = watch(&b, r7);
    assert_eq!(
        take_events(&mut w, 1).await,
        vec![put(kv("/cp/c", "c2", r8, r8), None)]
    );
    assert_eq!(
        watch_err(&b, base),
        Error::Compacted {
            requested: base + 1,
            compacted: r7
        }
    );
}
