//! Server-side apply on custom resources: field ownership follows the CRD schema's
//! list and map types, conflicts name every field, `force` takes ownership, apply
//! creates, and writes through `status` and `scale` are tracked per subresource.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use serde_json::{Value, json};
use testkit::Server;

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gateways.net.example.com
spec:
  group: net.example.com
  scope: Namespaced
  names: {plural: gateways, kind: Gateway}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              replicas: {type: integer}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [port, protocol]
                items:
                  type: object
                  required: [port, protocol]
                  properties:
                    port: {type: integer}
                    protocol: {type: string}
                    name: {type: string}
              tags: {type: array, x-kubernetes-list-type: set, items: {type: string}}
              args: {type: array, items: {type: string}}
              selector:
                type: object
                x-kubernetes-map-type: atomic
                additionalProperties: {type: string}
          status:
            type: object
            properties:
              replicas: {type: integer}
              phase: {type: string}
"#;

fn api(server: &Server, client: kube::Client) -> Api<DynamicObject> {
    server.apply(CRD);
    server.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/gateways.net.example.com",
        "--timeout=10s",
    ]);
    let gvk = GroupVersionKind::gvk("net.example.com", "v1", "Gateway");
    Api::namespaced_with(
        client,
        "default",
        &ApiResource::from_gvk_with_plural(&gvk, "gateways"),
    )
}

fn gateway(spec: Value) -> Patch<Value> {
    Patch::Apply(json!({
        "apiVersion": "net.example.com/v1",
        "kind": "Gateway",
        "metadata": {"name": "gw"},
        "spec": spec,
    }))
}

fn by(manager: &str) -> PatchParams {
    PatchParams::apply(manager)
}

/// `metadata.managedFields` as (manager, operation, subresource, fieldsV1).
fn managed(obj: &DynamicObject) -> Vec<(String, String, String, Value)> {
    obj.metadata
        .managed_fields
        .iter()
        .flatten()
        .map(|e| {
            (
                e.manager.clone().unwrap_or_default(),
                e.operation.clone().unwrap_or_default(),
                e.subresource.clone().unwrap_or_default(),
                serde_json::to_value(&e.fields_v1).unwrap(),
            )
        })
        .collect()
}

fn fields_of(obj: &DynamicObject, manager: &str, subresource: &str) -> Value {
    managed(obj)
        .into_iter()
        .find(|(m, _, s, _)| m == manager && s == subresource)
        .map(|(_, _, _, f)| f)
        .unwrap_or_else(|| panic!("no entry for {manager}/{subresource}: {:?}", managed(obj)))
}

#[tokio::test]
async fn list_types_from_the_schema_decide_ownership() {
    let server = Server::builder().start().unwrap();
    let gws = api(&server, server.client().await.unwrap());

    // Apply creates the object.
    let created = gws
        .patch(
            "gw",
            &by("alice"),
            &gateway(json!({
                "ports": [{"port": 80, "protocol": "TCP", "name": "web"}],
                "tags": ["a"],
                "args": ["--one"],
                "selector": {"app": "x"},
            })),
        )
        .await
        .unwrap();
    let alice = fields_of(&created, "alice", "");
    assert!(
        alice["f:spec"]["f:ports"]
            .get(r#"k:{"port":80,"protocol":"TCP"}"#)
            .is_some(),
        "map list items keyed by both keys: {alice}"
    );
    assert!(alice["f:spec"]["f:tags"].get(r#"v:"a""#).is_some());
    assert_eq!(
        alice["f:spec"]["f:args"],
        json!({}),
        "atomic list owned whole"
    );
    assert_eq!(
        alice["f:spec"]["f:selector"],
        json!({}),
        "atomic map owned whole"
    );

    // Another manager adds items to the map list and the set without conflict.
    let merged = gws
        .patch(
            "gw",
            &by("bob"),
            &gateway(json!({
                "ports": [{"port": 80, "protocol": "UDP", "name": "dns"}],
                "tags": ["b"],
            })),
        )
        .await
        .unwrap();
    assert_eq!(
        merged.data["spec"]["ports"],
        json!([
            {"port": 80, "protocol": "TCP", "name": "web"},
            {"port": 80, "protocol": "UDP", "name": "dns"},
        ])
    );
    assert_eq!(merged.data["spec"]["tags"], json!(["a", "b"]));

    // Changing alice's item field, her atomic list and her atomic map conflicts,
    // one cause per field.
    let err = gws
        .patch(
            "gw",
            &by("bob"),
            &gateway(json!({
                "ports": [{"port": 80, "protocol": "TCP", "name": "http"}],
                "args": ["--two"],
                "selector": {"app": "y"},
            })),
        )
        .await
        .unwrap_err();
    let status = common::api_error(err);
    assert_eq!(status.code, 409, "{status:?}");
    assert_eq!(status.reason, "Conflict");
    let mut fields: Vec<String> = status
        .details
        .unwrap()
        .causes
        .into_iter()
        .map(|c| c.field)
        .collect();
    fields.sort();
    assert_eq!(
        fields,
        vec![
            ".spec.args",
            r#".spec.ports[port=80,protocol="TCP"].name"#,
            ".spec.selector",
        ]
    );
    assert!(
        status
            .message
            .starts_with("Apply failed with 3 conflicts: conflicts with \"alice\":"),
        "{}",
        status.message
    );

    // force moves ownership; the atomic map is replaced, not merged.
    let forced = gws
        .patch(
            "gw",
            &by("bob").force(),
            &gateway(json!({
                "ports": [
                    {"port": 80, "protocol": "TCP", "name": "http"},
                    {"port": 80, "protocol": "UDP", "name": "dns"},
                ],
                "tags": ["b"],
                "args": ["--two"],
                "selector": {"tier": "y"},
            })),
        )
        .await
        .unwrap();
    assert_eq!(forced.data["spec"]["selector"], json!({"tier": "y"}));
    let alice = fields_of(&forced, "alice", "");
    assert!(alice["f:spec"].get("f:args").is_none(), "{alice}");
    assert!(alice["f:spec"].get("f:selector").is_none(), "{alice}");

    // alice stops applying her tag: it is removed; bob's stays.
    let pruned = gws
        .patch(
            "gw",
            &by("alice"),
            &gateway(json!({"ports": [{"port": 80, "protocol": "TCP"}]})),
        )
        .await
        .unwrap();
    assert_eq!(pruned.data["spec"]["tags"], json!(["b"]));
}

#[tokio::test]
async fn status_and_scale_writes_are_tracked_per_subresource() {
    let server = Server::builder().start().unwrap();
    let gws = api(&server, server.client().await.unwrap());
    gws.patch(
        "gw",
        &by("owner"),
        &gateway(json!({"replicas": 1, "tags": ["t"]})),
    )
    .await
    .unwrap();

    // Applying status through the main resource is ignored; through /status it is
    // recorded with subresource "status".
    let status_apply = Patch::Apply(json!({
        "apiVersion": "net.example.com/v1",
        "kind": "Gateway",
        "metadata": {"name": "gw"},
        "status": {"phase": "Ready", "replicas": 1},
    }));
    let obj = gws
        .patch_status("gw", &by("status-writer"), &status_apply)
        .await
        .unwrap();
    assert_eq!(obj.data["status"]["phase"], "Ready");
    let entry = managed(&obj)
        .into_iter()
        .find(|(m, _, _, _)| m == "status-writer")
        .unwrap();
    assert_eq!((entry.1.as_str(), entry.2.as_str()), ("Apply", "status"));
    assert!(
        entry.3["f:status"].get("f:phase").is_some(),
        "{:?}",
        entry.3
    );

    // A merge patch of status by another manager is an Update on "status".
    let obj = gws
        .patch_status(
            "gw",
            &PatchParams {
                field_manager: Some("updater".into()),
                ..Default::default()
            },
            &Patch::Merge(json!({"status": {"phase": "Degraded"}})),
        )
        .await
        .unwrap();
    let entry = managed(&obj)
        .into_iter()
        .find(|(m, _, _, _)| m == "updater")
        .unwrap_or_else(|| panic!("no updater entry: {:?}", managed(&obj)));
    assert_eq!((entry.1.as_str(), entry.2.as_str()), ("Update", "status"));
    // It took the field over from the applier.
    assert!(
        fields_of(&obj, "status-writer", "status")["f:status"]
            .get("f:phase")
            .is_none()
    );

    // kubectl scale writes through /scale.
    server.kubectl_ok(&["scale", "gateways/gw", "--replicas=3"]);
    let obj = gws.get("gw").await.unwrap();
    assert_eq!(obj.data["spec"]["replicas"], 3);
    let scaled = managed(&obj)
        .into_iter()
        .find(|(_, op, sub, _)| op == "Update" && sub == "scale")
        .unwrap_or_else(|| panic!("no scale entry: {:?}", managed(&obj)));
    assert!(
        scaled.3["f:spec"].get("f:replicas").is_some(),
        "{:?}",
        scaled.3
    );
    // The owner's apply of replicas lost that field to the scale write.
    let owner = fields_of(&obj, "owner", "");
    assert!(owner["f:spec"].get("f:replicas").is_none(), "{owner}");
    assert!(owner["f:spec"].get("f:tags").is_some(), "{owner}");
}
