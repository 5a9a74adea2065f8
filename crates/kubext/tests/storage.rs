//! Every storage backend behind a real kubext: the same API behaviour, persistence
//! across restarts, and no acknowledged write lost to `kill -9`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::*;

use futures::TryStreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use serde_json::json;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use testkit::{Etcd, Server, Storage};

/// The same CRUD + watch scenario on any backend.
async fn exercise(server: &Server) {
    let client = server.client().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let created = api
        .create(&PostParams::default(), &cm("smoke"))
        .await
        .unwrap();
    let rv = created.metadata.resource_version.clone().unwrap();
    let mut watch = api
        .watch(
            &WatchParams::default()
                .fields("metadata.name=smoke")
                .timeout(10),
            &rv,
        )
        .await
        .unwrap()
        .boxed();
    api.patch(
        "smoke",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "w"}})),
    )
    .await
    .unwrap();
    match watch.try_next().await.unwrap() {
        Some(WatchEvent::Modified(o)) => assert_eq!(o.data.unwrap()["k"], "w"),
        other => panic!("expected MODIFIED, got {other:?}"),
    }
    let listed = api.list(&ListParams::default()).await.unwrap();
    assert!(
        listed
            .items
            .iter()
            .any(|c| c.metadata.name.as_deref() == Some("smoke"))
    );
    api.delete("smoke", &DeleteParams::default()).await.unwrap();
    assert!(matches!(
        watch.try_next().await.unwrap(),
        Some(WatchEvent::Deleted(_))
    ));

    // And kubectl, on the same backend.
    server.kubectl_ok(&["create", "configmap", "kc", "--from-literal=a=b"]);
    let manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kc\ndata:\n  a: c\n";
    let out = server.kubectl_with_stdin(
        &["apply", "--server-side", "--force-conflicts", "-f", "-"],
        Some(manifest),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        server.kubectl_ok(&["get", "cm", "kc", "-o", "jsonpath={.data.a}"]),
        "c"
    );
    server.kubectl_ok(&["delete", "configmap", "kc"]);
}

use futures::StreamExt;

#[tokio::test]
async fn memory_backend_serves_the_api() {
    let server = Server::builder().storage(Storage::Memory).start().unwrap();
    exercise(&server).await;
}

#[tokio::test]
async fn embedded_backend_serves_the_api_and_persists() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::builder()
        .storage(Storage::Embedded)
        .data_dir(dir.path())
        .start()
        .unwrap();
    exercise(&server).await;
    let api: Api<ConfigMap> = Api::namespaced(server.client().await.unwrap(), "default");
    let kept = api
        .create(&PostParams::default(), &cm("kept"))
        .await
        .unwrap();
    let status = server.terminate(Duration::from_secs(10)).unwrap();
    assert!(
        status.success(),
        "graceful exit: {status:?}\n{}",
        server.log()
    );
    let server = Server::builder()
        .storage(Storage::Embedded)
        .data_dir(dir.path())
        .start()
        .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client().await.unwrap(), "default");
    let again = api.get("kept").await.unwrap();
    assert_eq!(again.metadata.uid, kept.metadata.uid);
    let next = api
        .create(&PostParams::default(), &cm("after-restart"))
        .await
        .unwrap();
    let rv = |c: &ConfigMap| {
        c.metadata
            .resource_version
            .as_ref()
            .unwrap()
            .parse::<i64>()
            .unwrap()
    };
    assert!(rv(&next) > rv(&kept), "revisions continue after a restart");
}

#[tokio::test]
async fn etcd_backend_serves_the_api_and_persists() {
    let etcd = Etcd::start().unwrap();
    let mut server = Server::builder()
        .storage(Storage::Etcd(etcd.endpoint()))
        .start()
        .unwrap();
    exercise(&server).await;
    let api: Api<ConfigMap> = Api::namespaced(server.client().await.unwrap(), "default");
    api.create(&PostParams::default(), &cm("kept"))
        .await
        .unwrap();
    server.terminate(Duration::from_secs(10)).unwrap();
    let server = Server::builder()
        .storage(Storage::Etcd(etcd.endpoint()))
        .start()
        .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client().await.unwrap(), "default");
    assert!(api.get("kept").await.is_ok());
}

#[tokio::test]
async fn two_replicas_on_one_etcd_see_each_others_writes() {
    let etcd = Etcd::start().unwrap();
    let a = Server::builder()
        .storage(Storage::Etcd(etcd.endpoint()))
        .start()
        .unwrap();
    let b = Server::builder()
        .storage(Storage::Etcd(etcd.endpoint()))
        .start()
        .unwrap();
    let api_a: Api<ConfigMap> = Api::namespaced(a.client().await.unwrap(), "default");
    let api_b: Api<ConfigMap> = Api::namespaced(b.client().await.unwrap(), "default");
    let rv = listed_resource_version(&api_b).await;
    let mut watch = api_b
        .watch(
            &WatchParams::default()
                .fields("metadata.name=shared")
                .timeout(10),
            &rv,
        )
        .await
        .unwrap()
        .boxed();
    api_a
        .create(&PostParams::default(), &cm("shared"))
        .await
        .unwrap();
    assert!(matches!(
        watch.try_next().await.unwrap(),
        Some(WatchEvent::Added(_))
    ));
    // A consistent read on B right after A's write sees it.
    api_a
        .create(&PostParams::default(), &cm("shared2"))
        .await
        .unwrap();
    assert!(api_b.get("shared2").await.is_ok());
}

/// Write continuously from several tasks, SIGKILL the server mid-stream, restart,
/// and check every acknowledged create is there.
async fn kill9_loses_no_acknowledged_write(mut server: Server, restart: impl FnOnce() -> Server) {
    let client = server.client().await.unwrap();
    let acked = Arc::new(Mutex::new(BTreeSet::new()));
    let mut writers = Vec::new();
    for w in 0..8 {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        let acked = acked.clone();
        writers.push(tokio::spawn(async move {
            for i in 0..10_000 {
                let name = format!("w{w}-{i}");
                match api.create(&PostParams::default(), &cm(&name)).await {
                    Ok(_) => {
                        acked.lock().unwrap().insert(name);
                    }
                    Err(_) => return,
                }
            }
        }));
    }
    // Let a good number of writes through, then pull the plug.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while acked.lock().unwrap().len() < 300 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "too few writes acknowledged"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.kill9();
    for w in writers {
        let _ = w.await;
    }
    let acked = acked.lock().unwrap().clone();
    let server = restart();
    let api: Api<ConfigMap> = Api::namespaced(server.client().await.unwrap(), "default");
    let present: BTreeSet<String> = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    let lost: Vec<_> = acked.difference(&present).collect();
    assert!(
        lost.is_empty(),
        "{} acknowledged writes lost, e.g. {:?}",
        lost.len(),
        lost.iter().take(5).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn embedded_kill9_loses_no_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let server = Server::builder()
        .storage(Storage::Embedded)
        .data_dir(&path)
        .start()
        .unwrap();
    kill9_loses_no_acknowledged_write(server, || {
        Server::builder()
            .storage(Storage::Embedded)
            .data_dir(&path)
            .start()
            .unwrap()
    })
    .await;
}

#[tokio::test]
async fn etcd_kill9_loses_no_acknowledged_write() {
    let etcd = Etcd::start().unwrap();
    let endpoint = etcd.endpoint();
    let server = Server::builder()
        .storage(Storage::Etcd(endpoint.clone()))
        .start()
        .unwrap();
    kill9_loses_no_acknowledged_write(server, || {
        Server::builder()
            .storage(Storage::Etcd(endpoint))
            .start()
            .unwrap()
    })
    .await;
}
