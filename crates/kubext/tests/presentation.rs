//! One presentation boundary for get, list and watch: an object read through a
//! version other than its stored one is converted to that version, pruned to its
//! schema and given its read-time defaults, whichever verb reads it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures::{StreamExt, TryStreamExt};
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
    WatchEvent, WatchParams,
};
use serde_json::{Value, json};
use testkit::Server;

const SHAPES_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: shapes.presentation.example.com}
spec:
  group: presentation.example.com
  scope: Namespaced
  names: {plural: shapes, singular: shape, kind: Shape}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}, color: {type: string}}}
  - name: v2
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              outline: {type: string, default: solid}
"#;

fn shapes(client: &kube::Client, version: &str) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("presentation.example.com", version, "Shape"),
        "shapes",
    );
    Api::namespaced_with(client.clone(), "default", &resource)
}

/// What reading through v2 must show of an object stored as v1.
fn assert_v2_shape(object: &DynamicObject, size: i64) {
    let v = serde_json::to_value(object).unwrap();
    assert_eq!(v["apiVersion"], "presentation.example.com/v2", "{v}");
    assert_eq!(v["spec"]["size"], size, "{v}");
    assert_eq!(v["spec"]["outline"], "solid", "v2's default: {v}");
    assert!(
        v["spec"].get("color").is_none(),
        "v1's field is pruned: {v}"
    );
}

async fn next_object(
    stream: &mut (impl futures::Stream<Item = kube::Result<WatchEvent<DynamicObject>>> + Unpin),
) -> (String, DynamicObject) {
    loop {
        let event = tokio::time::timeout(std::time::Duration::from_secs(10), stream.try_next())
            .await
            .expect("a watch event within 10 s")
            .unwrap()
            .expect("the watch is open");
        match event {
            WatchEvent::Added(o) => return ("ADDED".into(), o),
            WatchEvent::Modified(o) => return ("MODIFIED".into(), o),
            WatchEvent::Deleted(o) => return ("DELETED".into(), o),
            WatchEvent::Bookmark(_) => continue,
            WatchEvent::Error(e) => panic!("watch error: {e:?}"),
        }
    }
}

#[tokio::test]
async fn every_read_of_another_version_converts_prunes_and_defaults() {
    let server = Server::builder().start().unwrap();
    server.apply(SHAPES_CRD);
    server.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/shapes.presentation.example.com",
        "--timeout=10s",
    ]);
    let client = server.client().await.unwrap();
    let (v1, v2) = (shapes(&client, "v1"), shapes(&client, "v2"));
    let square: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "presentation.example.com/v1", "kind": "Shape",
        "metadata": {"name": "square"}, "spec": {"size": 4, "color": "red"}}))
    .unwrap();
    v1.create(&PostParams::default(), &square).await.unwrap();

    assert_v2_shape(&v2.get("square").await.unwrap(), 4);
    let listed = v2.list(&ListParams::default()).await.unwrap();
    assert_v2_shape(&listed.items[0], 4);

    // Watches present the same shape: initial state, and changes made through v1.
    let mut watch = v2
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    let (kind, first) = next_object(&mut watch).await;
    assert_eq!(kind, "ADDED");
    assert_v2_shape(&first, 4);
    v1.patch(
        "square",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"size": 5}})),
    )
    .await
    .unwrap();
    let (kind, changed) = next_object(&mut watch).await;
    assert_eq!(kind, "MODIFIED");
    assert_v2_shape(&changed, 5);
    v1.delete("square", &Default::default()).await.unwrap();
    let (kind, deleted) = next_object(&mut watch).await;
    assert_eq!(kind, "DELETED");
    assert_v2_shape(&deleted, 5);

    // Read through its own version nothing is lost.
    let circle: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "presentation.example.com/v1", "kind": "Shape",
        "metadata": {"name": "circle"}, "spec": {"size": 1, "color": "blue"}}))
    .unwrap();
    v1.create(&PostParams::default(), &circle).await.unwrap();
    let stored = serde_json::to_value(v1.get("circle").await.unwrap()).unwrap();
    assert_eq!(stored["spec"], json!({"size": 1, "color": "blue"}));
}

#[tokio::test]
async fn events_v1_watches_stream_events_v1_objects() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let events_v1: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("events.k8s.io", "v1", "Event"),
            "events",
        ),
    );
    let mut watch = events_v1
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    let core_event: k8s_openapi::api::core::v1::Event = serde_json::from_value(json!({
        "metadata": {"name": "e1"},
        "involvedObject": {"kind": "ConfigMap", "name": "c", "namespace": "default", "apiVersion": "v1"},
        "reason": "Tested", "message": "shaped as events.k8s.io/v1", "type": "Normal",
    }))
    .unwrap();
    Api::<k8s_openapi::api::core::v1::Event>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &core_event)
        .await
        .unwrap();
    let (kind, event) = next_object(&mut watch).await;
    assert_eq!(kind, "ADDED");
    let v: Value = serde_json::to_value(&event).unwrap();
    assert_eq!(v["apiVersion"], "events.k8s.io/v1", "{v}");
    assert_eq!(v["note"], "shaped as events.k8s.io/v1", "{v}");
    assert_eq!(v["regarding"]["name"], "c", "{v}");
    assert!(
        v.get("message").is_none() && v.get("involvedObject").is_none(),
        "{v}"
    );
}
