//! The backend conformance suite on the in-memory reference backend.

use bytes::Bytes;
use futures::StreamExt;
use kubext_storage::memory::MemoryBackend;
use kubext_storage::{Backend, Event};
use std::sync::Arc;

kubext_storage::conformance_tests!(Arc::new(MemoryBackend::new()));

/// `run_all` (the single-test form of the suite) runs every case.
#[tokio::test]
async fn run_all_runs_every_case() {
    kubext_storage::conformance::run_all(|| async { Arc::new(MemoryBackend::new()) }).await;
}

/// `share`: the store keeps the caller's buffer, not a copy, for that version
/// of that key, in reads and in the history a watch replays; other versions
/// and keys keep their own.
#[tokio::test]
async fn a_shared_value_replaces_the_stores_own_copy() {
    let backend = MemoryBackend::new();
    let first = backend.create("/k/a", Bytes::from("a1")).await.unwrap();
    let other = backend.create("/k/b", Bytes::from("b1")).await.unwrap();
    let second = backend
        .update("/k/a", Bytes::from("a2"), first)
        .await
        .unwrap();
    let shared = Bytes::from("a2 with its version");
    backend.share("/k/a", second, &shared);
    // Not what `/k/a` holds at that revision: nothing changes.
    backend.share("/k/a", other, &Bytes::from("b1 under the wrong key"));

    let got = backend.get("/k/a").await.unwrap().unwrap();
    assert_eq!(got.value, shared);
    assert_eq!(got.value.as_ptr(), shared.as_ptr(), "the same buffer");
    let values = |kvs: Vec<kubext_storage::KeyValue>| -> Vec<Bytes> {
        kvs.into_iter().map(|kv| kv.value).collect()
    };
    let latest = backend.range("/k/", "/k0", 0, 0).await.unwrap();
    assert_eq!(values(latest.kvs), [shared.clone(), Bytes::from("b1")]);
    let before = backend.range("/k/", "/k0", first, 0).await.unwrap();
    assert_eq!(values(before.kvs), [Bytes::from("a1")]);

    let mut watch = backend.watch(0).unwrap();
    let replayed: Vec<Bytes> = watch
        .next()
        .await
        .unwrap()
        .unwrap()
        .into_iter()
        .map(|event| match event {
            Event::Put { kv, .. } => kv.value,
            Event::Delete { .. } => panic!("no deletes were made"),
        })
        .collect();
    assert_eq!(replayed, ["a1", "b1", "a2 with its version"]);
    assert_eq!(replayed[2].as_ptr(), shared.as_ptr(), "the same buffer");
}

/// After a compaction the log starts later: `share` still finds the event.
#[tokio::test]
async fn a_value_shared_after_a_compaction_is_what_a_watch_replays() {
    let backend = MemoryBackend::new();
    let first = backend.create("/k/a", Bytes::from("a1")).await.unwrap();
    let second = backend.create("/k/b", Bytes::from("b1")).await.unwrap();
    backend.compact(first).await.unwrap();
    let third = backend
        .update("/k/b", Bytes::from("b2"), second)
        .await
        .unwrap();
    let shared = Bytes::from("b2 with its version");
    backend.share("/k/b", third, &shared);
    let mut watch = backend.watch(first).unwrap();
    let batch = watch.next().await.unwrap().unwrap();
    let Some(Event::Put { kv, prev }) = batch.last() else {
        panic!("the update is replayed: {batch:?}");
    };
    assert_eq!(kv.value.as_ptr(), shared.as_ptr(), "the same buffer");
    assert_eq!(
        prev.as_ref().map(|p| p.value.clone()),
        Some(Bytes::from("b1"))
    );
}
