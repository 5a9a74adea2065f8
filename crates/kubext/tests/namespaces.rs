//! Namespace deletion: every namespaced type's objects go, custom resources
//! included; objects with finalizers hold the namespace until released, and the
//! namespace reports progress in upstream's conditions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use serde_json::{Value, json};
use testkit::Server;

const GADGETS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.ns.example.com}
spec:
  group: ns.example.com
  scope: Namespaced
  names: {plural: gadgets, kind: Gadget}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
"#;

fn condition(ns: &Namespace, kind: &str) -> Option<Value> {
    let v = serde_json::to_value(ns).unwrap();
    v.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
        .cloned()
}

#[tokio::test]
async fn namespace_deletion_removes_everything_and_reports_progress() {
    let server = Server::builder().start().unwrap();
    server.apply(GADGETS);
    server.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/gadgets.ns.example.com",
    ]);
    let client = server.client().await.unwrap();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "doomed"}})).unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "doomed");
    let held: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "held", "finalizers": ["example.com/hold"]}, "data": {"k": "v"}}))
    .unwrap();
    cms.create(&PostParams::default(), &held).await.unwrap();
    let gadgets: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "doomed",
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("ns.example.com", "v1", "Gadget"),
            "gadgets",
        ),
    );
    for name in ["g1", "g2"] {
        let g: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "ns.example.com/v1", "kind": "Gadget", "metadata": {"name": name}}))
        .unwrap();
        gadgets.create(&PostParams::default(), &g).await.unwrap();
    }

    server.kubectl_ok(&["delete", "namespace", "doomed", "--wait=false"]);
    // The custom resources go; the held ConfigMap stays and is reported.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let ns = namespaces.get("doomed").await.unwrap();
        let remaining = condition(&ns, "NamespaceContentRemaining");
        let finalizers = condition(&ns, "NamespaceFinalizersRemaining");
        let gadgets_left = gadgets.list(&Default::default()).await.unwrap().items.len();
        if gadgets_left == 0
            && remaining.as_ref().is_some_and(|c| {
                c["message"] == "Some resources are remaining: configmaps. has 1 resource instances"
            })
        {
            assert_eq!(remaining.unwrap()["reason"], "SomeResourcesRemain");
            let finalizers = finalizers.unwrap();
            assert_eq!(finalizers["status"], "True");
            assert_eq!(
                finalizers["message"],
                "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
            );
            assert_eq!(
                condition(&ns, "NamespaceDeletionContentFailure").unwrap()["reason"],
                "ContentDeleted"
            );
            assert_eq!(ns.status.unwrap().phase.as_deref(), Some("Terminating"));
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no progress reported: {:?}",
            ns.status
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Nothing new may be created meanwhile.
    let err = cms
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "late"}})).unwrap(),
        )
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("because it is being terminated"),
        "{err}"
    );
    // Released, the ConfigMap goes and so does the namespace.
    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while namespaces.get_opt("doomed").await.unwrap().is_some() {
        assert!(Instant::now() < deadline, "namespace not deleted");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
