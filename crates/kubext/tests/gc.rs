//! Garbage collection through ownerReferences: background, foreground (with
//! blockOwnerDeletion) and orphan propagation with `kubectl delete --cascade`,
//! dangling references, custom resources as owners and dependents, and namespaced
//! dependents of cluster-scoped owners.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::{gone, until};

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use serde_json::{Value, json};
use testkit::Server;

const WIDGETS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.gc.example.com}
spec:
  group: gc.example.com
  scope: Cluster
  names: {plural: widgets, kind: Widget}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
"#;

fn owner_ref(api_version: &str, kind: &str, name: &str, uid: &str, block: bool) -> Value {
    json!({"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "blockOwnerDeletion": block})
}

/// A ConfigMap owned by `owners`, with optional finalizers.
fn dependent(name: &str, owners: Vec<Value>, finalizers: &[&str]) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name, "ownerReferences": owners, "finalizers": finalizers},
        "data": {"k": "v"},
    }))
    .unwrap()
}

fn uid<K: kube::Resource>(o: &K) -> String {
    o.meta().uid.clone().unwrap()
}

#[tokio::test]
async fn background_deletion_collects_dependents_of_any_type() {
    let server = Server::builder().start().unwrap();
    server.apply(WIDGETS);
    server.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/widgets.gc.example.com",
    ]);
    let client = server.client().await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let widgets: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("gc.example.com", "v1", "Widget"),
            "widgets",
        ),
    );
    let pp = PostParams::default();

    // A ConfigMap owning a Secret and a ConfigMap.
    let owner = cms
        .create(&pp, &dependent("owner", vec![], &[]))
        .await
        .unwrap();
    let by_owner = owner_ref("v1", "ConfigMap", "owner", &uid(&owner), false);
    cms.create(&pp, &dependent("child", vec![by_owner.clone()], &[]))
        .await
        .unwrap();
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "child-secret", "ownerReferences": [by_owner]},
        "stringData": {"k": "v"},
    }))
    .unwrap();
    secrets.create(&pp, &secret).await.unwrap();
    // A cluster-scoped custom resource owning a namespaced ConfigMap.
    let widget: DynamicObject = serde_json::from_value(
        json!({"apiVersion": "gc.example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}),
    )
    .unwrap();
    let widget = widgets.create(&pp, &widget).await.unwrap();
    let by_widget = owner_ref("gc.example.com/v1", "Widget", "w", &uid(&widget), false);
    cms.create(&pp, &dependent("widget-child", vec![by_widget], &[]))
        .await
        .unwrap();

    // Owners still there: nothing is collected.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(cms.get_opt("child").await.unwrap().is_some());
    assert!(cms.get_opt("widget-child").await.unwrap().is_some());

    server.kubectl_ok(&["delete", "configmap", "owner"]);
    gone(&cms, "child").await;
    gone(&secrets, "child-secret").await;
    server.kubectl_ok(&["delete", "widget", "w"]);
    gone(&cms, "widget-child").await;

    // A reference to an owner that never existed, or that lives in another
    // namespace (owners are looked up in the dependent's namespace): dangling.
    let elsewhere = Api::<ConfigMap>::namespaced(client.clone(), "kube-public")
        .create(&pp, &dependent("elsewhere", vec![], &[]))
        .await
        .unwrap();
    cms.create(
        &pp,
        &dependent(
            "dangling",
            vec![owner_ref(
                "v1",
                "ConfigMap",
                "ghost",
                "00000000-0000-0000-0000-000000000000",
                false,
            )],
            &[],
        ),
    )
    .await
    .unwrap();
    cms.create(
        &pp,
        &dependent(
            "cross-namespace",
            vec![owner_ref(
                "v1",
                "ConfigMap",
                "elsewhere",
                &uid(&elsewhere),
                false,
            )],
            &[],
        ),
    )
    .await
    .unwrap();
    gone(&cms, "dangling").await;
    gone(&cms, "cross-namespace").await;
    // One standing owner of two keeps a dependent.
    let a = cms.create(&pp, &dependent("a", vec![], &[])).await.unwrap();
    let b = cms.create(&pp, &dependent("b", vec![], &[])).await.unwrap();
    cms.create(
        &pp,
        &dependent(
            "shared",
            vec![
                owner_ref("v1", "ConfigMap", "a", &uid(&a), false),
                owner_ref("v1", "ConfigMap", "b", &uid(&b), false),
            ],
            &[],
        ),
    )
    .await
    .unwrap();
    server.kubectl_ok(&["delete", "configmap", "a"]);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(cms.get_opt("shared").await.unwrap().is_some());
    server.kubectl_ok(&["delete", "configmap", "b"]);
    gone(&cms, "shared").await;
}

#[tokio::test]
async fn foreground_deletion_waits_for_blocking_dependents() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let pp = PostParams::default();
    let owner = cms
        .create(&pp, &dependent("owner", vec![], &[]))
        .await
        .unwrap();
    // A blocking dependent held by a finalizer of its own, and a plain one.
    cms.create(
        &pp,
        &dependent(
            "held",
            vec![owner_ref("v1", "ConfigMap", "owner", &uid(&owner), true)],
            &["example.com/hold"],
        ),
    )
    .await
    .unwrap();
    cms.create(
        &pp,
        &dependent(
            "plain",
            vec![owner_ref("v1", "ConfigMap", "owner", &uid(&owner), false)],
            &[],
        ),
    )
    .await
    .unwrap();

    server.kubectl_ok(&[
        "delete",
        "configmap",
        "owner",
        "--cascade=foreground",
        "--wait=false",
    ]);
    gone(&cms, "plain").await;
    until("held is being deleted", async || {
        let held = cms.get("held").await.unwrap();
        held.metadata.deletion_timestamp.is_some()
    })
    .await;
    // The owner waits for the blocking dependent, with upstream's finalizer.
    let waiting = cms.get("owner").await.unwrap();
    assert!(waiting.metadata.deletion_timestamp.is_some());
    assert_eq!(
        waiting.metadata.finalizers.as_deref(),
        Some(&["foregroundDeletion".to_string()][..])
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(cms.get_opt("owner").await.unwrap().is_some());
    // Release the dependent: it goes, then the owner.
    cms.patch(
        "held",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    gone(&cms, "held").await;
    gone(&cms, "owner").await;
}

#[tokio::test]
async fn orphan_deletion_releases_dependents() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let pp = PostParams::default();
    let owner = cms
        .create(&pp, &dependent("owner", vec![], &[]))
        .await
        .unwrap();
    let other = cms
        .create(&pp, &dependent("other", vec![], &[]))
        .await
        .unwrap();
    cms.create(
        &pp,
        &dependent(
            "kept",
            vec![
                owner_ref("v1", "ConfigMap", "owner", &uid(&owner), true),
                owner_ref("v1", "ConfigMap", "other", &uid(&other), false),
            ],
            &[],
        ),
    )
    .await
    .unwrap();
    server.kubectl_ok(&["delete", "configmap", "owner", "--cascade=orphan"]);
    gone(&cms, "owner").await;
    let kept = cms.get("kept").await.unwrap();
    let refs: Vec<String> = kept
        .metadata
        .owner_references
        .unwrap_or_default()
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(refs, ["other"]);
    // The deprecated orphanDependents=true means the same.
    let owner = cms
        .create(&pp, &dependent("owner2", vec![], &[]))
        .await
        .unwrap();
    cms.create(
        &pp,
        &dependent(
            "kept2",
            vec![owner_ref("v1", "ConfigMap", "owner2", &uid(&owner), false)],
            &[],
        ),
    )
    .await
    .unwrap();
    let (code, _) = common::send_body(
        &client,
        "DELETE",
        "/api/v1/namespaces/default/configmaps/owner2",
        "application/json",
        &json!({"kind": "DeleteOptions", "apiVersion": "v1", "orphanDependents": true}),
    )
    .await;
    // The deletion waits for the orphan finalizer; upstream answers 202 only for
    // an explicit `orphanDependents: false` (endpoints/handlers/delete.go).
    assert_eq!(code, 200);
    gone(&cms, "owner2").await;
    let kept2 = cms.get("kept2").await.unwrap();
    assert!(
        kept2
            .metadata
            .owner_references
            .unwrap_or_default()
            .is_empty()
    );
}

/// A pod of `job`, as the Job controller would create it.
fn job_pod(name: &str, job: &str, uid: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name,
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job, "uid": uid,
            "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}})
}

#[tokio::test]
async fn batch_v1_jobs_orphan_their_pods_unless_told_otherwise() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(client.clone(), "default");
    let job_uid = |name: &str| {
        server.kubectl_ok(&["create", "job", name, "--image=busybox:1.36"]);
        server.kubectl_ok(&["get", "job", name, "-o", "jsonpath={.metadata.uid}"])
    };
    // The Job strategy's DefaultGarbageCollectionPolicy for batch/v1:
    // OrphanDependents, so a plain DELETE leaves the pods.
    let uid = job_uid("plain");
    server.apply(&job_pod("plain-pod", "plain", &uid).to_string());
    let (code, _) = common::send_body(
        &client,
        "DELETE",
        "/apis/batch/v1/namespaces/default/jobs/plain",
        "application/json",
        &json!({"kind": "DeleteOptions", "apiVersion": "v1"}),
    )
    .await;
    assert_eq!(code, 200);
    let jobs: Api<k8s_openapi::api::batch::v1::Job> = Api::namespaced(client.clone(), "default");
    gone(&jobs, "plain").await;
    until("plain-pod released", async || {
        pods.get("plain-pod")
            .await
            .unwrap()
            .metadata
            .owner_references
            .unwrap_or_default()
            .is_empty()
    })
    .await;
    // kubectl asks for background propagation: the pods go with the Job.
    let uid = job_uid("cascaded");
    server.apply(&job_pod("cascaded-pod", "cascaded", &uid).to_string());
    server.kubectl_ok(&["delete", "job", "cascaded"]);
    gone(&pods, "cascaded-pod").await;
}

#[tokio::test]
async fn malformed_owner_references_are_refused_and_the_collector_carries_on() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let pp = PostParams::default();
    let refused = |owners: Vec<Value>| {
        let cms = cms.clone();
        async move {
            let err = cms
                .create(&PostParams::default(), &dependent("bad", owners, &[]))
                .await
                .unwrap_err();
            let status = common::api_error(err);
            assert_eq!(status.code, 422, "{status:?}");
            status.message
        }
    };
    let message = refused(vec![
        json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "x"}),
    ])
    .await;
    assert!(
        message
            .contains(r#"metadata.ownerReferences.uid: Invalid value: "": uid must not be empty"#),
        "{message}"
    );
    let message = refused(vec![
        json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": "1", "controller": true}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "b", "uid": "2", "controller": true}),
    ])
    .await;
    assert!(
        message.contains("Only one reference can have Controller set to true"),
        "{message}"
    );
    // A dependent whose owner vanished and was recreated under the same name (new
    // uid) is still dangling, and the collector keeps working afterwards.
    let owner = cms
        .create(&pp, &dependent("owner", vec![], &[]))
        .await
        .unwrap();
    let old_uid = uid(&owner);
    cms.delete("owner", &Default::default()).await.unwrap();
    cms.create(&pp, &dependent("owner", vec![], &[]))
        .await
        .unwrap();
    cms.create(
        &pp,
        &dependent(
            "stale",
            vec![owner_ref("v1", "ConfigMap", "owner", &old_uid, false)],
            &[],
        ),
    )
    .await
    .unwrap();
    gone(&cms, "stale").await;
    assert!(
        cms.get_opt("owner").await.unwrap().is_some(),
        "the new owner stays"
    );
}
