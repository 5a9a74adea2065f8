//! The storage protection finalizers end to end: StorageObjectInUseProtection
//! puts `kubernetes.io/pvc-protection`, `pv-protection` and `vac-protection`
//! on new claims, volumes and volume attributes classes (as kube-apiserver
//! 1.37.2 answers), and kubext's protection controllers (kube-controller-manager's
//! pvc-, pv- and vac-protection) remove them once the object is being deleted
//! and nothing uses it: a claim while a scheduled pod names it, a volume while
//! it is `Bound`, a class while a claim or volume names it. Expected behaviour
//! observed with kube-controller-manager 1.33.13 against kube-apiserver 1.37.2
//! (the pvc and pv controllers; vac-protection and the `Unused` condition from
//! upstream's 1.37.2 sources).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::{gone, until};

use k8s_openapi::api::core::v1::{Namespace, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::VolumeAttributesClass;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use testkit::Server;

const PVC: &str = "kubernetes.io/pvc-protection";
const PV: &str = "kubernetes.io/pv-protection";
const VAC: &str = "kubernetes.io/vac-protection";

async fn create<K>(api: &Api<K>, object: Value) -> K
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    api.create(
        &PostParams::default(),
        &serde_json::from_value(object).unwrap(),
    )
    .await
    .unwrap()
}

fn finalizers<K: kube::Resource>(object: &K) -> Vec<String> {
    object.meta().finalizers.clone().unwrap_or_default()
}

/// Delete `name` (kept by its finalizer: answered with the object).
async fn delete<K>(api: &Api<K>, name: &str)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.delete(name, &DeleteParams::default()).await.unwrap();
}

/// `name` is still there, being deleted, held by `finalizer`.
async fn held<K>(api: &Api<K>, name: &str, finalizer: &str)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let object = api.get(name).await.unwrap();
    assert!(object.meta().deletion_timestamp.is_some(), "{name}");
    assert_eq!(finalizers(&object), [finalizer], "{name}");
}

fn claim(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
           "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
}

/// A pod with `claim` as a volume, on `node` (`None`: not scheduled).
fn pod(name: &str, claim: &str, node: Option<&str>) -> Value {
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"automountServiceAccountToken": false,
                 "containers": [{"name": "app", "image": "busybox:1.36"}],
                 "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]}});
    if let Some(node) = node {
        pod["spec"]["nodeName"] = json!(node);
    }
    pod
}

fn volume(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
           "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                    "hostPath": {"path": "/tmp/data"}}})
}

async fn set_phase<K>(api: &Api<K>, name: &str, phase: &str)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": phase}})),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn claims_are_kept_while_a_scheduled_pod_uses_them() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client, "default");

    // kube-apiserver 1.37.2 answers a create with the finalizer.
    let data = create(&claims, claim("data")).await;
    assert_eq!(finalizers(&data), [PVC]);
    for name in ["idle", "loose", "kept", "marker", "marker-2"] {
        create(&claims, claim(name)).await;
    }

    // Unused: gone as soon as it is deleted.
    delete(&claims, "idle").await;
    gone(&claims, "idle").await;

    // A pod no node runs does not hold its claim (kubelet would not start it).
    create(&pods, pod("unscheduled", "loose", None)).await;
    delete(&claims, "loose").await;
    gone(&claims, "loose").await;

    // A scheduled pod holds it, running or finished.
    create(&pods, pod("user", "data", Some("node-1"))).await;
    set_phase(&pods, "user", "Running").await;
    create(&pods, pod("finished", "kept", Some("node-1"))).await;
    set_phase(&pods, "finished", "Succeeded").await;
    delete(&claims, "data").await;
    delete(&claims, "kept").await;
    // A marker deleted after them has gone through the controller too.
    delete(&claims, "marker").await;
    gone(&claims, "marker").await;
    held(&claims, "data", PVC).await;
    held(&claims, "kept", PVC).await;
    // Deleted gracefully, the pod is still there (no kubelet): still held.
    delete(&pods, "user").await;
    assert!(
        pods.get("user")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some()
    );
    delete(&claims, "marker-2").await;
    gone(&claims, "marker-2").await;
    held(&claims, "data", PVC).await;
    // The pods gone, their claims go.
    let now = DeleteParams {
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    pods.delete("finished", &now).await.unwrap();
    gone(&claims, "kept").await;
    pods.delete("user", &now).await.unwrap();
    gone(&claims, "data").await;
}

#[tokio::test]
async fn a_claim_without_the_finalizer_gets_it_back() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    let volumes: Api<PersistentVolume> = Api::all(client);
    create(&claims, claim("c")).await;
    create(&volumes, volume("v")).await;
    // As the controllers add it to objects created while the plugin was off:
    // appended after the others.
    let only_mine = json!({"metadata": {"finalizers": ["example.com/mine"]}});
    let patched = claims
        .patch("c", &PatchParams::default(), &Patch::Merge(&only_mine))
        .await
        .unwrap();
    assert_eq!(finalizers(&patched), ["example.com/mine"]);
    volumes
        .patch(
            "v",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    until("the claim's finalizer added again", async || {
        finalizers(&claims.get("c").await.unwrap()) == ["example.com/mine", PVC]
    })
    .await;
    until("the volume's finalizer added again", async || {
        finalizers(&volumes.get("v").await.unwrap()) == [PV]
    })
    .await;
}

#[tokio::test]
async fn bound_volumes_are_kept() {
    let server = Server::builder().start().unwrap();
    let volumes: Api<PersistentVolume> = Api::all(server.client().await.unwrap());
    let v = create(&volumes, volume("bound")).await;
    assert_eq!(finalizers(&v), [PV]);
    create(&volumes, volume("marker")).await;
    set_phase(&volumes, "bound", "Bound").await;
    delete(&volumes, "bound").await;
    delete(&volumes, "marker").await;
    gone(&volumes, "marker").await;
    held(&volumes, "bound", PV).await;
    // Released by its claim: it goes.
    set_phase(&volumes, "bound", "Released").await;
    gone(&volumes, "bound").await;
}

#[tokio::test]
async fn classes_are_kept_while_claims_or_volumes_name_them() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let classes: Api<VolumeAttributesClass> = Api::all(client.clone());
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    let volumes: Api<PersistentVolume> = Api::all(client);
    for name in ["gold", "silver", "marker"] {
        let class = create(
            &classes,
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttributesClass",
                   "metadata": {"name": name}, "driverName": "disk.example.com",
                   "parameters": {"iops": "3000"}}),
        )
        .await;
        assert_eq!(finalizers(&class), [VAC]);
    }
    let mut c = claim("c");
    c["spec"]["volumeAttributesClassName"] = json!("gold");
    create(&claims, c).await;
    let mut v = volume("v");
    v["spec"]["volumeAttributesClassName"] = json!("silver");
    create(&volumes, v).await;

    for name in ["gold", "silver", "marker"] {
        delete(&classes, name).await;
    }
    gone(&classes, "marker").await;
    held(&classes, "gold", VAC).await;
    held(&classes, "silver", VAC).await;
    // The claim goes (no pod uses it): so does its class.
    delete(&claims, "c").await;
    gone(&claims, "c").await;
    gone(&classes, "gold").await;
    held(&classes, "silver", VAC).await;
    // The volume names another class now: released.
    volumes
        .patch(
            "v",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"volumeAttributesClassName": null}})),
        )
        .await
        .unwrap();
    gone(&classes, "silver").await;
}

#[tokio::test]
async fn a_namespace_with_claims_finishes_deleting() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    create(
        &namespaces,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "scratch"}}),
    )
    .await;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "scratch");
    let pods: Api<Pod> = Api::namespaced(client, "scratch");
    create(&claims, claim("one")).await;
    create(&claims, claim("two")).await;
    // The pod's service account is there once the namespace is populated.
    until("a pod created in the new namespace", async || {
        pods.create(
            &PostParams::default(),
            &serde_json::from_value(pod("p", "one", None)).unwrap(),
        )
        .await
        .is_ok()
    })
    .await;
    delete(&namespaces, "scratch").await;
    gone(&namespaces, "scratch").await;
}

/// PersistentVolumeClaimUnusedSinceTime (beta, on in 1.37): a bound claim's
/// `Unused` condition says whether a pod not terminated names it
/// (pvc_protection_controller.go's updateUnusedCondition).
#[tokio::test]
async fn bound_claims_say_whether_they_are_unused() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client, "default");
    create(&claims, claim("c")).await;
    let unused = async || -> Option<Value> {
        let c = serde_json::to_value(claims.get("c").await.unwrap()).unwrap();
        c["status"]["conditions"]
            .as_array()
            .and_then(|all| all.iter().find(|x| x["type"] == "Unused").cloned())
    };
    // Pending: no condition.
    set_phase(&claims, "c", "Bound").await;
    until("Unused=True", async || {
        unused().await.is_some_and(|c| c["status"] == "True")
    })
    .await;
    let condition = unused().await.unwrap();
    assert_eq!(condition["reason"], "NoPodsUsingPVC");
    assert_eq!(
        condition["message"],
        "No pods are currently referencing this PVC"
    );
    assert!(condition["lastTransitionTime"].is_string(), "{condition}");
    // Any pod not terminated, scheduled or not.
    create(&pods, pod("p", "c", None)).await;
    until("Unused=False", async || {
        unused().await.is_some_and(|c| c["status"] == "False")
    })
    .await;
    assert_eq!(unused().await.unwrap()["reason"], "PodUsingPVC");
    set_phase(&pods, "p", "Failed").await;
    until("Unused=True again", async || {
        unused().await.is_some_and(|c| c["status"] == "True")
    })
    .await;
}
