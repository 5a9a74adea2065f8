//! kube-rs against a real kubext: runtime watchers (bookmarks, 410 relists),
//! metadata-only access, and the events Recorder.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::*;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Event as CoreEvent};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use kube::core::PartialObjectMeta;
use kube::runtime::events::{Event as RecordedEvent, EventType, Recorder, Reporter};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use std::time::Duration;
use testkit::Server;

async fn next_within<S: futures::Stream + Unpin>(s: &mut S, secs: u64) -> S::Item {
    tokio::time::timeout(Duration::from_secs(secs), s.next())
        .await
        .expect("stream stalled")
        .expect("stream ended")
}

#[tokio::test]
async fn watcher_sees_changes_and_bookmarks() {
    let server = Server::builder()
        .arg("--bookmark-interval=200ms")
        .start()
        .unwrap();
    let client = server.client().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut stream = watcher(api.clone(), watcher::Config::default()).boxed();
    // Initial list: Init, InitApply(kube-root-ca.crt), InitDone.
    let mut saw_init_done = false;
    while !saw_init_done {
        saw_init_done = matches!(
            next_within(&mut stream, 10).await.unwrap(),
            watcher::Event::InitDone
        );
    }
    api.create(&PostParams::default(), &cm("live"))
        .await
        .unwrap();
    match next_within(&mut stream, 10).await.unwrap() {
        watcher::Event::Apply(o) => assert_eq!(o.name_any(), "live"),
        other => panic!("unexpected {other:?}"),
    }
    // Bookmarks arrive on the raw watch API when allowed.
    let rv = listed_resource_version(&api).await;
    let mut raw = api
        .watch(&WatchParams::default().timeout(10), &rv)
        .await
        .unwrap()
        .boxed();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        assert!(tokio::time::Instant::now() < deadline, "no bookmark");
        if let WatchEvent::Bookmark(b) = raw.try_next().await.unwrap().unwrap() {
            assert!(
                b.metadata.resource_version.parse::<i64>().unwrap() >= rv.parse::<i64>().unwrap()
            );
            break;
        }
    }
}

#[tokio::test]
async fn compacted_resource_version_forces_a_relist() {
    let server = Server::builder()
        .arg("--compaction-interval=300ms")
        .start()
        .unwrap();
    let client = server.client().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let old_rv = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let other: Api<ConfigMap> = Api::namespaced(client.clone(), "kube-system");
    for i in 0..3 {
        other
            .create(&PostParams::default(), &cm(&format!("churn{i}")))
            .await
            .unwrap();
    }
    // Two compaction rounds later the old revision's history is gone.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let mut stream = api
        .watch(&WatchParams::default().timeout(5), &old_rv)
        .await
        .unwrap()
        .boxed();
    match stream.try_next().await.unwrap() {
        Some(WatchEvent::Error(e)) => {
            assert_eq!(e.code, 410, "{e:?}");
            assert!(
                e.message.contains("too old resource version"),
                "{}",
                e.message
            );
        }
        other => panic!("expected a 410 ERROR event, got {other:?}"),
    }

    // kube-runtime's watcher recovers by relisting: a short server-side timeout ends
    // its watch, the resume revision is compacted by then, and it starts over.
    let mut events = watcher(
        api.clone(),
        watcher::Config::default().timeout(1).disable_bookmarks(),
    )
    .boxed();
    let mut lists_done = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while lists_done < 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "watcher never relisted"
        );
        let event = match tokio::time::timeout(Duration::from_secs(10), events.next()).await {
            Ok(e) => e.expect("watcher stream ended"),
            Err(_) => panic!("watcher stalled; server log:\n{}", server.log()),
        };
        // A 410 surfaces as an error item before the relist; anything else is a bug.
        if let Err(e) = &event {
            assert!(
                e.to_string().contains("410") || e.to_string().contains("too old"),
                "{e}"
            );
        }
        if let Ok(watcher::Event::InitDone) = event {
            lists_done += 1;
            // Move the global revision past the list's, so the resume point gets compacted.
            other
                .create(&PostParams::default(), &cm(&format!("tick{lists_done}")))
                .await
                .unwrap();
        }
    }
}

#[tokio::test]
async fn metadata_only_list_and_watch() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    api.create(&PostParams::default(), &cm("meta"))
        .await
        .unwrap();
    let list = api.list_metadata(&ListParams::default()).await.unwrap();
    assert!(list.items.iter().any(|m| m.name_any() == "meta"));
    let meta_api: Api<PartialObjectMeta<ConfigMap>> =
        Api::namespaced(api.clone().into_client(), "default");
    let mut stream = watcher(meta_api, watcher::Config::default())
        .applied_objects()
        .boxed();
    let first = next_within(&mut stream, 10).await.unwrap();
    assert_eq!(
        first.types.as_ref().map(|t| t.kind.as_str()),
        Some("PartialObjectMetadata")
    );
    api.create(&PostParams::default(), &cm("meta2"))
        .await
        .unwrap();
    loop {
        if next_within(&mut stream, 10).await.unwrap().name_any() == "meta2" {
            break;
        }
    }
}

#[tokio::test]
async fn events_recorder_publishes_and_series() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let obj = api
        .create(&PostParams::default(), &cm("observed"))
        .await
        .unwrap();
    let reporter = Reporter {
        controller: "kubext-test".into(),
        instance: Some("test-0".into()),
    };
    let recorder = Recorder::new(client.clone(), reporter);
    let event = RecordedEvent {
        type_: EventType::Normal,
        reason: "Tested".into(),
        note: Some("hello from kube-rs".into()),
        action: "Testing".into(),
        secondary: None,
    };
    let reference = obj.object_ref(&());
    recorder.publish(&event, &reference).await.unwrap();
    recorder.publish(&event, &reference).await.unwrap();
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    let listed = events.list(&ListParams::default()).await.unwrap();
    let ours = listed
        .items
        .iter()
        .find(|e| e.reason.as_deref() == Some("Tested"))
        .expect("event recorded");
    assert_eq!(ours.note.as_deref(), Some("hello from kube-rs"));
    assert_eq!(ours.series.as_ref().map(|s| s.count), Some(2));
    // The same event through core/v1, with its field names.
    let core: Api<CoreEvent> = Api::namespaced(client, "default");
    let via_core = core.get(&ours.name_any()).await.unwrap();
    assert_eq!(via_core.message.as_deref(), Some("hello from kube-rs"));
    assert_eq!(via_core.involved_object.name.as_deref(), Some("observed"));
    assert_eq!(via_core.reporting_component.as_deref(), Some("kubext-test"));
}

#[tokio::test]
async fn a_burst_of_small_and_large_objects_arrives_whole_and_in_order() {
    const BURST: usize = 40;
    let server = Server::builder().start().unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client().await.unwrap(), "default");
    let rv = listed_resource_version(&api).await;
    let mut events = api
        .watch(&WatchParams::default().timeout(60), &rv)
        .await
        .unwrap()
        .boxed();
    futures::future::try_join_all((0..BURST).map(|i| {
        let api = api.clone();
        async move {
            let mut object = cm(&format!("burst-{i}"));
            object.data = Some([("payload".to_string(), burst_payload(i))].into());
            api.create(&PostParams::default(), &object).await
        }
    }))
    .await
    .unwrap();
    let mut seen = std::collections::BTreeSet::new();
    let mut last_rv = 0;
    while seen.len() < BURST {
        let WatchEvent::Added(o) = next_within(&mut events, 20).await.unwrap() else {
            panic!("only ADDED events expected");
        };
        let rv: i64 = o.resource_version().unwrap().parse().unwrap();
        assert!(rv > last_rv, "events in revision order");
        last_rv = rv;
        let i: usize = o.name_any()["burst-".len()..].parse().unwrap();
        assert_eq!(o.data.unwrap()["payload"], burst_payload(i), "object {i}");
        assert!(seen.insert(i), "object {i} twice");
    }
}
