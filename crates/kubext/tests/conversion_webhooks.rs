//! CRD conversion webhooks, black-box: a real kubext converts custom
//! resources between two versions through a real HTTPS webhook (testkit's,
//! after upstream's e2e `crd-conversion-webhook`: v1 `hostPort` ⇄ v2
//! `host`/`port`) on get, list (one review per page), watch, create, update,
//! server-side apply, with objects stored in several versions; failures carry
//! upstream's messages and stay contained to the CRD's other versions
//! (`test/e2e/apimachinery/crd_conversion_webhook.go`,
//! `apiextensions-apiserver/test/integration/conversion`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use futures::StreamExt;
use kube::api::{ApiResource, DynamicObject, ListParams, PostParams, WatchEvent, WatchParams};
use kube::{Api, Client};
use serde_json::{Value, json};
use testkit::Server;
use testkit::webhook::WebhookServer;

use common::api_error;

const NAMESPACE: &str = "webhooks";
const SERVICE: &str = "e2e-test-crd-conversion-webhook";

fn crd(group: &str, path: &str, hooks: &WebhookServer, storage: &str) -> String {
    let schema = |props: Value| json!({"openAPIV3Schema": {"type": "object", "properties": props}});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("e2e-test-crds.{group}")},
        "spec": {
            "group": group, "scope": "Namespaced",
            "names": {"plural": "e2e-test-crds", "singular": "e2e-test-crd", "kind": "E2eTestCrd", "listKind": "E2eTestCrdList"},
            "versions": [
                {"name": "v1", "served": true, "storage": storage == "v1",
                 "schema": schema(json!({"hostPort": {"type": "string"}}))},
                {"name": "v2", "served": true, "storage": storage == "v2",
                 "schema": schema(json!({"host": {"type": "string"}, "port": {"type": "string"}}))},
            ],
            "conversion": {"strategy": "Webhook", "webhook": {
                "clientConfig": hooks.service_config(NAMESPACE, SERVICE, path),
                "conversionReviewVersions": ["v1", "v1beta1"],
            }},
        },
    })
    .to_string()
}

/// A kubext with the webhook server behind Service `webhooks/e2e-test-crd-conversion-webhook`.
fn fixture() -> (Server, WebhookServer) {
    let server = Server::builder().start().unwrap();
    let hooks = WebhookServer::start(&[&format!("{SERVICE}.{NAMESPACE}.svc")]).unwrap();
    server.apply(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NAMESPACE}}}\n"
    ));
    let (service, slice) = hooks.service_manifests(NAMESPACE, SERVICE);
    server.apply(&service.to_string());
    server.apply(&slice.to_string());
    (server, hooks)
}

fn api(client: &Client, group: &str, version: &str) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: format!("{group}/{version}"),
        kind: "E2eTestCrd".into(),
        plural: "e2e-test-crds".into(),
    };
    Api::namespaced_with(client.clone(), "default", &resource)
}

fn object(group: &str, version: &str, name: &str, fields: Value) -> DynamicObject {
    let mut obj = json!({"apiVersion": format!("{group}/{version}"), "kind": "E2eTestCrd", "metadata": {"name": name}});
    for (k, v) in fields.as_object().unwrap() {
        obj[k] = v.clone();
    }
    serde_json::from_value(obj).unwrap()
}

/// Install the CRD and wait until a create at v2 (converted to the storage
/// version v1) works, as upstream's e2e test waits.
async fn install(server: &Server, client: &Client, group: &str, manifest: &str) {
    server.apply(manifest);
    server.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        &format!("crd/e2e-test-crds.{group}"),
    ]);
    let v2 = api(client, group, "v2");
    for _ in 0..100 {
        if v2
            .create(
                &PostParams::default(),
                &object(group, "v2", "stub", json!({})),
            )
            .await
            .is_ok()
        {
            v2.delete("stub", &Default::default()).await.unwrap();
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the custom resource was never served at v2");
}

fn field<'a>(obj: &'a DynamicObject, name: &str) -> Option<&'a str> {
    obj.data.get(name).and_then(Value::as_str)
}

#[tokio::test]
async fn custom_resources_are_converted_on_every_read_and_write() {
    let (server, hooks) = fixture();
    let client = server.client().await.unwrap();
    let group = "stable.example.com";
    install(
        &server,
        &client,
        group,
        &crd(group, "/crdconvert", &hooks, "v1"),
    )
    .await;
    let (v1, v2) = (api(&client, group, "v1"), api(&client, group, "v2"));

    // Created at v1, read at v2 (upstream's "convert from CR v1 to CR v2").
    v1.create(
        &PostParams::default(),
        &object(
            group,
            "v1",
            "cr-instance-1",
            json!({"hostPort": "localhost:8080"}),
        ),
    )
    .await
    .unwrap();
    let read = v2.get("cr-instance-1").await.unwrap();
    assert_eq!(
        read.types.as_ref().unwrap().api_version,
        "stable.example.com/v2"
    );
    assert_eq!(
        (field(&read, "host"), field(&read, "port")),
        (Some("localhost"), Some("8080"))
    );
    assert_eq!(field(&read, "hostPort"), None);

    // Created at v2: stored at v1, and read back to v2 for the answer (two
    // reviews, as upstream).
    let before = hooks.requests_to("/crdconvert").len();
    let created = v2
        .create(
            &PostParams::default(),
            &object(
                group,
                "v2",
                "cr-instance-2",
                json!({"host": "example.com", "port": "443"}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(field(&created, "host"), Some("example.com"));
    let desired: Vec<Value> = hooks.requests_to("/crdconvert")[before..]
        .iter()
        .map(|r| r["review"]["request"]["desiredAPIVersion"].clone())
        .collect();
    assert_eq!(desired, ["stable.example.com/v1", "stable.example.com/v2"]);
    assert_eq!(
        field(&v1.get("cr-instance-2").await.unwrap(), "hostPort"),
        Some("example.com:443")
    );

    // A list at v2 converts the items it has not presented before in one
    // review (cr-instance-1 and cr-instance-2 were, by the get and the
    // create above).
    for name in ["batch-1", "batch-2"] {
        v1.create(
            &PostParams::default(),
            &object(group, "v1", name, json!({"hostPort": "b:1"})),
        )
        .await
        .unwrap();
    }
    let before = hooks.requests_to("/crdconvert").len();
    let listed = v2.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 4);
    assert!(
        listed
            .items
            .iter()
            .all(|o| field(o, "host").is_some() && field(o, "hostPort").is_none())
    );
    let reviews: Vec<Value> = hooks.requests_to("/crdconvert").split_off(before);
    assert_eq!(reviews.len(), 1, "{reviews:?}");
    let request = &reviews[0]["review"]["request"];
    assert_eq!(
        reviews[0]["review"]["apiVersion"],
        "apiextensions.k8s.io/v1"
    );
    assert_eq!(request["desiredAPIVersion"], "stable.example.com/v2");
    let names: Vec<&str> = request["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["batch-1", "batch-2"]);
    // Listed again: presented already, no review.
    v2.list(&ListParams::default()).await.unwrap();
    assert_eq!(hooks.requests_to("/crdconvert").len(), before + 1);

    // An update through v2 (converted both ways).
    let mut changed = v2.get("cr-instance-1").await.unwrap();
    changed.data["port"] = json!("9090");
    v2.replace("cr-instance-1", &PostParams::default(), &changed)
        .await
        .unwrap();
    assert_eq!(
        field(&v1.get("cr-instance-1").await.unwrap(), "hostPort"),
        Some("localhost:9090")
    );

    // Server-side apply at v2.
    let applied = server.kubectl_with_stdin(
        &["apply", "--server-side", "-f", "-"],
        Some("apiVersion: stable.example.com/v2\nkind: E2eTestCrd\nmetadata: {name: applied, namespace: default}\nhost: applied.example.com\nport: '80'\n"),
    );
    assert!(applied.status.success(), "{applied:?}");
    assert_eq!(
        field(&v1.get("applied").await.unwrap(), "hostPort"),
        Some("applied.example.com:80")
    );

    // A watch at v2 sees converted objects.
    let mut events = v2
        .watch(&WatchParams::default().timeout(5), "0")
        .await
        .unwrap()
        .boxed();
    let mut seen = 0;
    while let Some(event) = events.next().await {
        if let WatchEvent::Added(o) = event.unwrap() {
            assert_eq!(
                o.types.as_ref().unwrap().api_version,
                "stable.example.com/v2"
            );
            assert!(field(&o, "host").is_some(), "{o:?}");
            seen += 1;
            if seen == 5 {
                break;
            }
        }
    }
    assert_eq!(seen, 5);

    // Storage version changes to v2: objects stored in both versions are
    // listed in either (upstream's "non-homogeneous list").
    server.apply(&crd(group, "/crdconvert", &hooks, "v2"));
    // Stored at v2 once the change took effect: the create at v1 was sent
    // to the webhook to be converted to v2.
    let stored_at_v2 = |hooks: &WebhookServer| {
        hooks.requests_to("/crdconvert").iter().any(|r| {
            let request = &r["review"]["request"];
            request["desiredAPIVersion"] == "stable.example.com/v2"
                && request["objects"][0]["metadata"]["name"] == "cr-instance-3"
                && request["objects"][0]["apiVersion"] == "stable.example.com/v1"
        })
    };
    for _ in 0..100 {
        v1.create(
            &PostParams::default(),
            &object(
                group,
                "v1",
                "cr-instance-3",
                json!({"hostPort": "localhost:7070"}),
            ),
        )
        .await
        .unwrap();
        if stored_at_v2(&hooks) {
            break;
        }
        v1.delete("cr-instance-3", &Default::default())
            .await
            .unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(stored_at_v2(&hooks));
    let at_v1 = v1.list(&ListParams::default()).await.unwrap();
    assert_eq!(at_v1.items.len(), 6);
    assert!(
        at_v1
            .items
            .iter()
            .all(|o| field(o, "hostPort").is_some() && field(o, "host").is_none()),
        "{at_v1:?}"
    );
    let at_v2 = v2.list(&ListParams::default()).await.unwrap();
    assert!(
        at_v2
            .items
            .iter()
            .all(|o| field(o, "host").is_some() && field(o, "hostPort").is_none()),
        "{at_v2:?}"
    );
}

#[tokio::test]
async fn a_failing_conversion_webhook_fails_only_its_crds_other_versions() {
    let (server, hooks) = fixture();
    let client = server.client().await.unwrap();
    let (good, bad) = ("good.example.com", "bad.example.com");
    install(
        &server,
        &client,
        good,
        &crd(good, "/crdconvert", &hooks, "v1"),
    )
    .await;
    server.apply(&crd(bad, "/convert-fail", &hooks, "v1"));
    server.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        &format!("crd/e2e-test-crds.{bad}"),
    ]);
    let (v1, v2) = (api(&client, bad, "v1"), api(&client, bad, "v2"));
    // The storage version needs no conversion.
    v1.create(
        &PostParams::default(),
        &object(bad, "v1", "stored", json!({"hostPort": "a:1"})),
    )
    .await
    .unwrap();
    let expected = "conversion webhook for bad.example.com/v1, Kind=E2eTestCrd failed: custom webhook conversion error";
    let status = api_error(v2.get("stored").await.unwrap_err());
    assert_eq!((status.code, status.message.as_str()), (500, expected));
    let status = api_error(v2.list(&ListParams::default()).await.unwrap_err());
    assert_eq!((status.code, status.message.as_str()), (500, expected));
    let status = api_error(
        v2.create(
            &PostParams::default(),
            &object(bad, "v2", "new", json!({"host": "a", "port": "1"})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(status.code, 500);
    assert_eq!(
        status.message,
        "conversion webhook for bad.example.com/v2, Kind=E2eTestCrd failed: custom webhook conversion error"
    );
    // A watch at v2 ends with an ERROR event carrying the failure.
    let mut events = v2
        .watch(&WatchParams::default().timeout(5), "0")
        .await
        .unwrap()
        .boxed();
    match events.next().await {
        Some(Ok(WatchEvent::Error(e))) => assert_eq!(e.message, expected),
        other => panic!("expected an error event, got {other:?}"),
    }

    let metrics = server.kubectl_ok(&["get", "--raw", "/metrics"]);
    assert!(
        metrics.contains("apiserver_conversion_webhook_request_total{failure_type=\"conversion_webhook_partial_response_failure\",result=\"failure\"} 4"),
        "{metrics}"
    );
    assert!(
        metrics.contains("apiserver_crd_conversion_webhook_duration_seconds_count{crd_name=\"e2e-test-crds.bad.example.com\",from_version=\"v1\",succeeded=\"false\",to_version=\"v2\"} 3"),
        "{metrics}"
    );

    // Everything else keeps working: the storage version, the other CRD,
    // discovery.
    assert_eq!(
        field(&v1.get("stored").await.unwrap(), "hostPort"),
        Some("a:1")
    );
    assert_eq!(
        v1.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );
    let other = api(&client, good, "v2");
    other
        .create(
            &PostParams::default(),
            &object(good, "v2", "fine", json!({"host": "h", "port": "2"})),
        )
        .await
        .unwrap();
    assert_eq!(
        field(
            &api(&client, good, "v1").get("fine").await.unwrap(),
            "hostPort"
        ),
        Some("h:2")
    );
    let resources =
        server.kubectl_ok(&["api-resources", "--api-group=bad.example.com", "-o", "name"]);
    assert!(
        resources.contains("e2e-test-crds.bad.example.com"),
        "{resources}"
    );

    // A webhook that cannot be reached at all: bounded, and the same
    // containment, for an object never read at v2 (those read are cached).
    api(&client, good, "v1")
        .create(
            &PostParams::default(),
            &object(good, "v1", "unread", json!({"hostPort": "u:3"})),
        )
        .await
        .unwrap();
    drop(hooks);
    let started = std::time::Instant::now();
    let status = api_error(other.get("unread").await.unwrap_err());
    assert!(started.elapsed() < std::time::Duration::from_secs(31));
    assert_eq!(status.code, 500);
    assert!(status.message.starts_with("conversion webhook for good.example.com/v1, Kind=E2eTestCrd failed: Post \"https://e2e-test-crd-conversion-webhook.webhooks.svc:443/crdconvert\": "), "{status:?}");
    assert_eq!(
        field(
            &api(&client, good, "v1").get("fine").await.unwrap(),
            "hostPort"
        ),
        Some("h:2")
    );
}

#[tokio::test]
async fn converted_objects_keep_their_identity_and_metadata() {
    let (server, hooks) = fixture();
    let client = server.client().await.unwrap();
    let cases = [
        (
            "uid.example.com",
            "/convert-uid",
            "returned invalid object: must have the same UID: ",
        ),
        (
            "none.example.com",
            "/convert-none",
            "returned 0 objects, expected 1",
        ),
        (
            "rejected.example.com",
            "/convert-http-error",
            "failed: the server rejected our request for an unknown reason",
        ),
    ];
    for (group, path, _) in cases {
        server.apply(&crd(group, path, &hooks, "v1"));
    }
    for (group, _, message) in cases {
        server.kubectl_ok(&[
            "wait",
            "--for=condition=Established",
            &format!("crd/e2e-test-crds.{group}"),
        ]);
        let v2 = api(&client, group, "v2");
        let mut status = None;
        for _ in 0..100 {
            match v2
                .create(
                    &PostParams::default(),
                    &object(group, "v2", "x", json!({"host": "a", "port": "1"})),
                )
                .await
            {
                Err(e) => {
                    let s = api_error(e);
                    if s.code == 500 {
                        status = Some(s);
                        break;
                    }
                }
                Ok(_) => panic!("{group}: the create succeeded"),
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        let status = status.unwrap();
        assert!(
            status.message.starts_with(&format!(
                "conversion webhook for {group}/v2, Kind=E2eTestCrd "
            )) && status.message.contains(message),
            "{group}: {status:?}"
        );
    }

    // Labels and annotations a webhook sets survive; other metadata does not.
    let group = "metadata.example.com";
    install(
        &server,
        &client,
        group,
        &crd(group, "/convert-metadata", &hooks, "v1"),
    )
    .await;
    api(&client, group, "v1")
        .create(
            &PostParams::default(),
            &object(group, "v1", "m", json!({"hostPort": "a:1"})),
        )
        .await
        .unwrap();
    let read = api(&client, group, "v2").get("m").await.unwrap();
    assert_eq!(read.metadata.labels.as_ref().unwrap()["converted"], "yes");
    assert_eq!(read.metadata.finalizers, None);
    assert_eq!(read.metadata.generation, Some(1));
    let raw: Value = serde_json::from_str(&server.kubectl_ok(&[
        "get",
        "--raw",
        "/apis/metadata.example.com/v2/namespaces/default/e2e-test-crds/m",
    ]))
    .unwrap();
    assert_eq!(raw["metadata"].get("garbage"), None);
}

#[test]
fn conversion_settings_are_validated_as_upstream() {
    let server = Server::builder().start().unwrap();
    let manifest = r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
      "metadata": {"name": "things.invalid.example.com"},
      "spec": {"group": "invalid.example.com", "scope": "Namespaced",
        "names": {"plural": "things", "kind": "Thing"},
        "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object"}}}],
        "conversion": {"strategy": "Webhook", "webhook": {"clientConfig": {"url": "http://example.com/convert", "caBundle": "bm90IGEgY2VydGlmaWNhdGU="}, "conversionReviewVersions": ["v3"]}}}}"#;
    let out = server.kubectl_with_stdin(&["create", "-f", "-"], Some(manifest));
    let err = String::from_utf8_lossy(&out.stderr);
    for expected in [
        "spec.conversion.webhookClientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
        "spec.conversion.webhookClientConfig.caBundle: Invalid value: \"bm90IGEgY2VydGlmaWNhdGU=\"",
        "spec.conversion.conversionReviewVersions: Invalid value: []string{\"v3\"}: must include at least one of v1, v1beta1",
    ] {
        assert!(err.contains(expected), "missing {expected:?} in {err}");
    }
}
