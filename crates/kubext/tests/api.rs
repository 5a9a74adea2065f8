//! Black-box API machinery tests over HTTPS with kube-rs (raw requests where the
//! exact status code, headers and Status body matter).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::*;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use serde_json::{Value, json};
use testkit::Server;

async fn setup() -> (Server, kube::Client) {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    (server, client)
}

/// Send a raw request; return (status, headers, body).
async fn raw(
    client: &kube::Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
    accept: &str,
) -> (u16, http::HeaderMap, Vec<u8>) {
    let mut req = http::Request::builder().method(method).uri(path);
    if !content_type.is_empty() {
        req = req.header("content-type", content_type);
    }
    if !accept.is_empty() {
        req = req.header("accept", accept);
    }
    let resp = client
        .send(req.body(kube::client::Body::from(body)).unwrap())
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    (status, headers, bytes.to_vec())
}

fn status_of(body: &[u8]) -> Value {
    let v: Value = serde_json::from_slice(body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(body)));
    assert_eq!(v["kind"], "Status", "{v}");
    v
}

#[tokio::test]
async fn crud_and_optimistic_concurrency() {
    let (_s, client) = setup().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let created = api.create(&PostParams::default(), &cm("a")).await.unwrap();
    let rv = created.metadata.resource_version.clone().unwrap();
    assert!(created.metadata.uid.is_some() && created.metadata.creation_timestamp.is_some());

    let mut stale = created.clone();
    let mut fresh = created.clone();
    fresh.data = Some([("k".to_string(), "w".to_string())].into());
    let updated = api
        .replace("a", &PostParams::default(), &fresh)
        .await
        .unwrap();
    assert_ne!(
        updated.metadata.resource_version.as_deref(),
        Some(rv.as_str())
    );

    stale.data = Some([("k".to_string(), "stale".to_string())].into());
    let err = api_error(
        api.replace("a", &PostParams::default(), &stale)
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 409);
    assert_eq!(err.reason, "Conflict");
    assert_eq!(
        err.message,
        r#"Operation cannot be fulfilled on configmaps "a": the object has been modified; please apply your changes to the latest version and try again"#
    );

    // A no-op update does not write.
    let again = api
        .replace("a", &PostParams::default(), &updated)
        .await
        .unwrap();
    assert_eq!(
        again.metadata.resource_version,
        updated.metadata.resource_version
    );

    let err = api_error(
        api.create(&PostParams::default(), &cm("a"))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (err.code, err.reason.as_str(), err.message.as_str()),
        (409, "AlreadyExists", r#"configmaps "a" already exists"#)
    );

    api.delete("a", &DeleteParams::default()).await.unwrap();
    let err = api_error(api.get("a").await.unwrap_err());
    assert_eq!(
        (err.code, err.reason.as_str(), err.message.as_str()),
        (404, "NotFound", r#"configmaps "a" not found"#)
    );
}

#[tokio::test]
async fn patches_of_every_kind() {
    let (_s, client) = setup().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    api.create(&PostParams::default(), &cm("p")).await.unwrap();
    let pp = PatchParams::default();
    api.patch("p", &pp, &Patch::Merge(json!({"data": {"m": "1"}})))
        .await
        .unwrap();
    api.patch(
        "p",
        &pp,
        &Patch::Strategic(json!({"metadata": {"labels": {"s": "1"}}})),
    )
    .await
    .unwrap();
    let jp: json_patch_ops::Ops =
        serde_json::from_value(json!([{"op": "add", "path": "/data/j", "value": "1"}])).unwrap();
    api.patch("p", &pp, &Patch::Json::<()>(jp)).await.unwrap();
    let applied = api
        .patch(
            "p",
            &PatchParams::apply("tester"),
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"}})),
        )
        .await
        .unwrap();
    let data = applied.data.unwrap();
    assert_eq!(data.get("m").map(String::as_str), Some("1"));
    assert_eq!(data.get("j").map(String::as_str), Some("1"));
    assert_eq!(data.get("a").map(String::as_str), Some("1"));
    assert_eq!(
        applied
            .metadata
            .labels
            .unwrap()
            .get("s")
            .map(String::as_str),
        Some("1")
    );
    let managers: Vec<String> = applied
        .metadata
        .managed_fields
        .unwrap()
        .into_iter()
        .filter_map(|m| m.manager)
        .collect();
    assert!(managers.iter().any(|m| m == "tester"), "{managers:?}");

    // kube-runtime's finalizer helper: `test` of a missing path against null passes.
    let ops: json_patch_ops::Ops = serde_json::from_value(json!([
        {"op": "test", "path": "/metadata/finalizers", "value": null},
        {"op": "add", "path": "/metadata/finalizers", "value": ["example.com/f"]}
    ]))
    .unwrap();
    let with_finalizer = api.patch("p", &pp, &Patch::Json::<()>(ops)).await.unwrap();
    assert_eq!(
        with_finalizer.metadata.finalizers.unwrap(),
        vec!["example.com/f".to_string()]
    );

    // A failing JSON patch is a 422.
    let ops: json_patch_ops::Ops =
        serde_json::from_value(json!([{"op": "test", "path": "/data/m", "value": "2"}])).unwrap();
    let err = api_error(
        api.patch("p", &pp, &Patch::Json::<()>(ops))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 422, "{err:?}");
}

/// The JSON patch type kube's `Patch::Json` takes.
mod json_patch_ops {
    pub type Ops = json_patch::Patch;
}

#[tokio::test]
async fn bad_input_gets_kubernetes_errors() {
    let (_s, client) = setup().await;
    let path = "/api/v1/namespaces/default/configmaps";
    let (code, _, body) = raw(
        &client,
        "POST",
        path,
        "application/json",
        b"{not json".to_vec(),
        "",
    )
    .await;
    assert_eq!(code, 400);
    assert_eq!(status_of(&body)["reason"], "BadRequest");

    let wrong = json!({"apiVersion": "v2", "kind": "ConfigMap", "metadata": {"name": "x"}});
    let (code, _, body) = raw(
        &client,
        "POST",
        path,
        "application/json",
        serde_json::to_vec(&wrong).unwrap(),
        "",
    )
    .await;
    assert_eq!(code, 400, "{}", String::from_utf8_lossy(&body));
    assert!(
        status_of(&body)["message"]
            .as_str()
            .unwrap()
            .contains("does not match the expected API version")
    );

    let invalid = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "UPPER", "labels": {"bad key!": "v"}}});
    let (code, _, body) = raw(
        &client,
        "POST",
        path,
        "application/json",
        serde_json::to_vec(&invalid).unwrap(),
        "",
    )
    .await;
    assert_eq!(code, 422);
    let status = status_of(&body);
    assert_eq!(status["reason"], "Invalid");
    let fields: Vec<&str> = status["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["field"].as_str().unwrap())
        .collect();
    assert!(fields.contains(&"metadata.name"), "{fields:?}");
    assert!(fields.contains(&"metadata.labels"), "{fields:?}");

    let (code, _, body) = raw(&client, "POST", path, "text/plain", b"hello".to_vec(), "").await;
    assert_eq!(code, 415, "{}", String::from_utf8_lossy(&body));
    status_of(&body);

    let big = vec![b' '; 4 * 1024 * 1024];
    let (code, _, body) = raw(&client, "POST", path, "application/json", big, "").await;
    assert_eq!(code, 413);
    assert_eq!(status_of(&body)["reason"], "RequestEntityTooLarge");

    for missing in [
        "/api/v1/widgets",
        "/apis/nope.example.com/v1/things",
        "/apis/coordination.k8s.io/v9/leases",
    ] {
        let (code, _, body) = raw(&client, "GET", missing, "", vec![], "").await;
        assert_eq!(code, 404, "{missing}");
        assert_eq!(status_of(&body)["reason"], "NotFound");
    }
    // A cluster-scoped resource under a namespace path is a 404 too.
    let (code, _, _) = raw(
        &client,
        "GET",
        "/api/v1/namespaces/default/namespaces",
        "",
        vec![],
        "",
    )
    .await;
    assert_eq!(code, 404);
    let (code, _, _) = raw(
        &client,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/kube-root-ca.crt",
        "application/xml",
        b"<x/>".to_vec(),
        "",
    )
    .await;
    assert_eq!(code, 415);
    // Built-in kinds are served in protobuf too (client-go's typed clients
    // ask for it first), as kube-apiserver serves them.
    let (code, headers, body) = raw(
        &client,
        "GET",
        path,
        "",
        vec![],
        "application/vnd.kubernetes.protobuf",
    )
    .await;
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(
        headers["content-type"],
        "application/vnd.kubernetes.protobuf"
    );
    let list = protobuf::decode(&body).unwrap();
    assert_eq!(list["kind"], "ConfigMapList");
    assert_eq!(list["apiVersion"], "v1");
    // What no serializer of the resource offers is refused, in go-restful's
    // words (a collection path also serves watch streams).
    let (code, _, body) = raw(&client, "GET", path, "", vec![], "application/cbor").await;
    assert_eq!(code, 406, "{}", String::from_utf8_lossy(&body));
    let status = status_of(&body);
    assert_eq!(
        status["message"],
        "406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, application/vnd.kubernetes.protobuf, application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
    );
    assert_eq!(status["details"], json!({}));
    let (code, _, body) = raw(
        &client,
        "GET",
        &format!("{path}/absent"),
        "",
        vec![],
        "application/xml",
    )
    .await;
    assert_eq!(code, 406);
    assert_eq!(
        status_of(&body)["message"],
        "406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, application/vnd.kubernetes.protobuf"
    );
}

#[tokio::test]
async fn list_pagination_keeps_one_snapshot() {
    let (_s, client) = setup().await;
    let ns: Api<Namespace> = Api::all(client.clone());
    ns.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "pages"}})).unwrap(),
    )
    .await
    .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client, "pages");
    // The root CA publisher adds its ConfigMap to the new namespace soon after.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while api.get_opt("kube-root-ca.crt").await.unwrap().is_none() {
        assert!(std::time::Instant::now() < deadline, "no kube-root-ca.crt");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    for i in 0..7 {
        api.create(&PostParams::default(), &cm(&format!("c{i}")))
            .await
            .unwrap();
    }
    let first = api.list(&ListParams::default().limit(3)).await.unwrap();
    assert_eq!(first.items.len(), 3);
    // 7 configmaps + kube-root-ca.crt = 8.
    assert_eq!(first.metadata.remaining_item_count, Some(5));
    let rv = first.metadata.resource_version.clone().unwrap();
    // Writes after the first page do not show up in later pages.
    api.create(&PostParams::default(), &cm("zz-late"))
        .await
        .unwrap();
    let token = first.metadata.continue_.clone().unwrap();
    let second = api
        .list(&ListParams::default().limit(3).continue_token(&token))
        .await
        .unwrap();
    assert_eq!(
        second.metadata.resource_version.as_deref(),
        Some(rv.as_str())
    );
    let third = api
        .list(
            &ListParams::default()
                .limit(3)
                .continue_token(second.metadata.continue_.as_ref().unwrap()),
        )
        .await
        .unwrap();
    assert!(third.metadata.continue_.is_none());
    let names: Vec<String> = first
        .items
        .iter()
        .chain(&second.items)
        .chain(&third.items)
        .map(|c| c.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names.len(), 8, "{names:?}");
    assert!(!names.contains(&"zz-late".to_string()));
}

#[tokio::test]
async fn selectors_and_field_selectors() {
    let (_s, client) = setup().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for (name, env) in [("a", "prod"), ("b", "dev"), ("c", "prod")] {
        let obj: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": name, "labels": {"env": env}}}))
                .unwrap();
        api.create(&PostParams::default(), &obj).await.unwrap();
    }
    let names = |l: kube::core::ObjectList<ConfigMap>| {
        l.items
            .into_iter()
            .map(|c| c.metadata.name.unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(
            api.list(&ListParams::default().labels("env=prod"))
                .await
                .unwrap()
        ),
        vec!["a", "c"]
    );
    assert_eq!(
        names(
            api.list(&ListParams::default().labels("env in (dev),!missing"))
                .await
                .unwrap()
        ),
        vec!["b"]
    );
    assert_eq!(
        names(
            api.list(&ListParams::default().fields("metadata.name=c"))
                .await
                .unwrap()
        ),
        vec!["c"]
    );
    let err = api_error(
        api.list(&ListParams::default().fields("spec.bogus=1"))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 400);
    // ConfigMaps register no field label conversion: upstream's default one.
    assert_eq!(
        err.message,
        "\"spec.bogus\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
    );
    let all: Api<ConfigMap> = Api::all(client);
    let in_default = all
        .list(&ListParams::default().fields("metadata.namespace=default"))
        .await
        .unwrap();
    assert_eq!(in_default.items.len(), 4);
}

#[tokio::test]
async fn watch_reports_selector_transitions_and_resumes() {
    let (_s, client) = setup().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let start = listed_resource_version(&api).await;
    let mut events = api
        .watch(
            &WatchParams::default().labels("watched=yes").timeout(30),
            &start,
        )
        .await
        .unwrap()
        .boxed();
    let obj: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "w", "labels": {"watched": "yes"}}}))
            .unwrap();
    api.create(&PostParams::default(), &obj).await.unwrap();
    assert!(
        matches!(events.try_next().await.unwrap(), Some(WatchEvent::Added(c)) if c.metadata.name.as_deref() == Some("w"))
    );
    api.patch(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"watched": "no"}}})),
    )
    .await
    .unwrap();
    assert!(
        matches!(
            events.try_next().await.unwrap(),
            Some(WatchEvent::Deleted(_))
        ),
        "leaving the selector is a DELETED"
    );
    api.patch(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"watched": "yes"}}})),
    )
    .await
    .unwrap();
    assert!(
        matches!(events.try_next().await.unwrap(), Some(WatchEvent::Added(_))),
        "entering the selector is an ADDED"
    );

    // Resuming from the start revision replays everything since.
    let mut replay = api
        .watch(&WatchParams::default().timeout(30), &start)
        .await
        .unwrap()
        .boxed();
    let mut kinds = Vec::new();
    for _ in 0..3 {
        match replay.try_next().await.unwrap().unwrap() {
            WatchEvent::Added(_) => kinds.push("ADDED"),
            WatchEvent::Modified(_) => kinds.push("MODIFIED"),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(kinds, vec!["ADDED", "MODIFIED", "MODIFIED"]);
}

#[tokio::test]
async fn watch_list_ends_initial_events_with_annotated_bookmark() {
    let (_s, client) = setup().await;
    let path = "/api/v1/namespaces/kube-system/configmaps?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=5";
    let (code, _, body) = raw(&client, "GET", path, "", vec![], "application/json").await;
    assert_eq!(code, 200);
    let lines: Vec<Value> = body
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    // kube-system holds what kube-apiserver 1.37 and its controllers put
    // there: the authentication configuration, the legacy-token tracking
    // ConfigMap and kube-root-ca.crt.
    let added: Vec<&str> = lines
        .iter()
        .take_while(|l| l["type"] == "ADDED")
        .map(|l| l["object"]["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        added,
        [
            "extension-apiserver-authentication",
            "kube-apiserver-legacy-service-account-token-tracking",
            "kube-root-ca.crt"
        ]
    );
    let bookmark = &lines[added.len()];
    assert_eq!(bookmark["type"], "BOOKMARK");
    assert_eq!(
        bookmark["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
}

/// kube-apiserver still serves the deprecated `watch/` paths: a collection's
/// events, or one object's by name (its name as the field selector; a
/// field selector as well is a 400 with upstream's message).
#[tokio::test]
async fn legacy_watch_paths_watch_a_collection_or_one_object() {
    let (_s, client) = setup().await;
    let names = |body: &[u8]| -> Vec<String> {
        body.split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice::<Value>(l).unwrap())
            .inspect(|e| assert_eq!(e["type"], "ADDED", "{e}"))
            .map(|e| {
                e["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    let path = "/api/v1/watch/namespaces/kube-system/configmaps?timeoutSeconds=1";
    let (code, _, body) = raw(&client, "GET", path, "", vec![], "application/json").await;
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(
        names(&body),
        [
            "extension-apiserver-authentication",
            "kube-apiserver-legacy-service-account-token-tracking",
            "kube-root-ca.crt"
        ]
    );
    let path = "/api/v1/watch/namespaces/kube-system/configmaps/kube-root-ca.crt?timeoutSeconds=1";
    let (code, _, body) = raw(&client, "GET", path, "", vec![], "application/json").await;
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(names(&body), ["kube-root-ca.crt"]);
    let path = "/api/v1/watch/namespaces/kube-system/configmaps/kube-root-ca.crt?fieldSelector=metadata.name%3Dx";
    let (code, _, body) = raw(&client, "GET", path, "", vec![], "application/json").await;
    assert_eq!(code, 400);
    assert_eq!(
        status_of(&body)["message"],
        "both a name and a field selector provided; please provide one or the other."
    );
}

/// A DELETE answers upstream's `Status` (the generic store's: `Success`, the
/// resource, name and uid as details) in its Go struct's member order, as
/// kube-apiserver writes it.
#[tokio::test]
async fn a_delete_answers_a_status_in_go_member_order() {
    let (_s, client) = setup().await;
    let body = serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "delme"}}))
    .unwrap();
    let (code, _, created) = raw(
        &client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        "application/json",
        body,
        "application/json",
    )
    .await;
    assert_eq!(code, 201);
    let created: Value = serde_json::from_slice(&created).unwrap();
    let uid = created["metadata"]["uid"].as_str().unwrap();
    let (code, _, answer) = raw(
        &client,
        "DELETE",
        "/api/v1/namespaces/default/configmaps/delme",
        "",
        vec![],
        "application/json",
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(
        String::from_utf8(answer).unwrap(),
        format!(
            "{{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{{}},\"status\":\"Success\",\"details\":{{\"name\":\"delme\",\"kind\":\"configmaps\",\"uid\":\"{uid}\"}}}}\n"
        )
    );
}

#[tokio::test]
async fn finalizers_hold_deletion_until_removed() {
    let (_s, client) = setup().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let obj: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "f", "finalizers": ["example.com/hold"]}}),
    )
    .unwrap();
    api.create(&PostParams::default(), &obj).await.unwrap();
    let pending = api.delete("f", &DeleteParams::default()).await.unwrap();
    let pending = pending
        .left()
        .expect("object returned while finalizers remain");
    assert!(pending.metadata.deletion_timestamp.is_some());
    assert!(api.get("f").await.is_ok());
    api.patch(
        "f",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    let err = api_error(api.get("f").await.unwrap_err());
    assert_eq!(err.code, 404);
}

#[tokio::test]
async fn dry_run_and_generate_name() {
    let (_s, client) = setup().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let pp = PostParams {
        dry_run: true,
        ..Default::default()
    };
    api.create(&pp, &cm("dry")).await.unwrap();
    assert_eq!(api_error(api.get("dry").await.unwrap_err()).code, 404);
    let generated: ConfigMap =
        serde_json::from_value(json!({"metadata": {"generateName": "gen-"}})).unwrap();
    let made = api
        .create(&PostParams::default(), &generated)
        .await
        .unwrap();
    let name = made.metadata.name.unwrap();
    assert!(name.starts_with("gen-") && name.len() == 9, "{name}");
}

#[tokio::test]
async fn content_negotiation() {
    let (_s, client) = setup().await;
    let path = "/api/v1/namespaces/kube-system/configmaps/kube-root-ca.crt";
    let (code, headers, body) = raw(&client, "GET", path, "", vec![], "application/yaml").await;
    assert_eq!(code, 200);
    assert_eq!(headers["content-type"], "application/yaml");
    assert!(String::from_utf8_lossy(&body).contains("kind: ConfigMap"));
    let table_accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    let (_, _, body) = raw(
        &client,
        "GET",
        "/api/v1/namespaces",
        "",
        vec![],
        table_accept,
    )
    .await;
    let table: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(table["kind"], "Table");
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(columns, vec!["Name", "Status", "Age"]);
    let pom = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json";
    let (_, _, body) = raw(&client, "GET", "/api/v1/namespaces", "", vec![], pom).await;
    let list: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(list["kind"], "PartialObjectMetadataList");
    assert!(list["items"][0].get("spec").is_none());
    let (_, _, body) = raw(
        &client,
        "GET",
        path,
        "",
        vec![],
        "application/vnd.kubernetes.protobuf,application/json",
    )
    .await;
    assert_eq!(protobuf::decode(&body).unwrap()["kind"], "ConfigMap");
    // Errors too, as a protobuf Status.
    let (code, headers, body) = raw(
        &client,
        "GET",
        "/api/v1/namespaces/kube-system/configmaps/absent",
        "",
        vec![],
        "application/vnd.kubernetes.protobuf,application/json",
    )
    .await;
    assert_eq!(code, 404);
    assert_eq!(
        headers["content-type"],
        "application/vnd.kubernetes.protobuf"
    );
    let status = protobuf::decode(&body).unwrap();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["message"], r#"configmaps "absent" not found"#);
}

#[tokio::test]
async fn discovery_documents() {
    let (_s, client) = setup().await;
    let (code, headers, body) = raw(
        &client,
        "GET",
        "/apis",
        "",
        vec![],
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
    )
    .await;
    assert_eq!(code, 200);
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .contains("as=APIGroupDiscoveryList")
    );
    let doc: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(doc["kind"], "APIGroupDiscoveryList");
    let groups: Vec<&str> = doc["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["metadata"]["name"].as_str().unwrap())
        .collect();
    assert!(
        groups.contains(&"coordination.k8s.io") && groups.contains(&"discovery.k8s.io"),
        "{groups:?}"
    );
    let (_, _, body) = raw(&client, "GET", "/api/v1", "", vec![], "").await;
    let v1: Value = serde_json::from_slice(&body).unwrap();
    let cm = v1["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "configmaps")
        .unwrap();
    assert_eq!(cm["shortNames"], json!(["cm"]));
    assert_eq!(cm["namespaced"], true);
    let (code, _, _) = raw(&client, "GET", "/version", "", vec![], "").await;
    assert_eq!(code, 200);
    let discovered = kube::discovery::Discovery::new(client).run().await.unwrap();
    assert!(
        discovered
            .groups()
            .any(|g| g.name() == "coordination.k8s.io")
    );
}

#[tokio::test]
async fn namespace_lifecycle() {
    let (_s, client) = setup().await;
    let ns: Api<Namespace> = Api::all(client.clone());
    ns.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "life"}})).unwrap(),
    )
    .await
    .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "life");
    let obj: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "held", "finalizers": ["example.com/x"]}}),
    )
    .unwrap();
    cms.create(&PostParams::default(), &obj).await.unwrap();
    ns.delete("life", &DeleteParams::default()).await.unwrap();
    let terminating = ns.get("life").await.unwrap();
    let uid = terminating.metadata.uid.clone().unwrap();
    assert_eq!(
        terminating.status.unwrap().phase.as_deref(),
        Some("Terminating")
    );
    let err = api_error(
        cms.create(&PostParams::default(), &cm("late"))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 403);
    assert!(
        err.message.contains("because it is being terminated"),
        "{}",
        err.message
    );
    // The finalizer holds the namespace until it is released.
    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    let gone = kube::runtime::wait::await_condition(
        ns.clone(),
        "life",
        kube::runtime::wait::conditions::is_deleted(&uid),
    );
    tokio::time::timeout(std::time::Duration::from_secs(20), gone)
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn large_responses_are_gzipped_on_request() {
    let (_s, client) = setup().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let big: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "big"}, "data": {"blob": "x".repeat(300 * 1024)}}),
    )
    .unwrap();
    api.create(&PostParams::default(), &big).await.unwrap();
    let path = "/api/v1/namespaces/default/configmaps/big";
    let mut req = http::Request::get(path).header("accept-encoding", "gzip");
    req = req.header("accept", "application/json");
    let resp = client
        .send(req.body(kube::client::Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(
        resp.headers()
            .get("content-encoding")
            .map(|v| v.to_str().unwrap()),
        Some("gzip")
    );
    let compressed = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    assert!(
        compressed.len() < 100 * 1024,
        "compressed to {} bytes",
        compressed.len()
    );
    let mut plain = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(&compressed[..]),
        &mut plain,
    )
    .unwrap();
    assert!(plain.contains("\"name\":\"big\""));
    // Small responses are not compressed.
    let (_, headers, _) = raw(
        &client,
        "GET",
        "/api/v1/namespaces/default/configmaps/kube-root-ca.crt",
        "",
        vec![],
        "",
    )
    .await;
    assert!(headers.get("content-encoding").is_none());
}

/// A LIST larger than a chunk is streamed (chunked, no Content-Length) to
/// clients that do not take gzip, and whole (gzipped) to those that do; both
/// hold every item, in order, as one JSON document.
#[tokio::test]
async fn large_lists_stream_in_chunks() {
    let (server, client) = setup().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for i in 0..40 {
        let cm: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": format!("cm-{i:02}")},
            "data": {"blob": "y".repeat(4 * 1024)}
        }))
        .unwrap();
        api.create(&PostParams::default(), &cm).await.unwrap();
    }
    let (code, headers, body) = raw(
        &client,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        "",
        vec![],
        "application/json",
    )
    .await;
    assert_eq!(code, 200);
    assert!(headers.get("content-length").is_none(), "{headers:?}");
    assert!(body.len() > 160 * 1024);
    let list: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(list["kind"], "ConfigMapList");
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .filter(|n| n.starts_with("cm-"))
        .collect();
    let want: Vec<String> = (0..40).map(|i| format!("cm-{i:02}")).collect();
    assert_eq!(names, want);
    // kubectl takes gzip (Go's transport asks for it) and reads the same list.
    let out = server.kubectl_ok(&["get", "configmaps", "-n", "default", "-o", "name"]);
    assert_eq!(
        out.lines()
            .filter(|l| l.starts_with("configmap/cm-"))
            .count(),
        40
    );
}

#[tokio::test]
async fn compacted_continue_token_is_410_expired() {
    let server = Server::builder()
        .arg("--compaction-interval=300ms")
        .start()
        .unwrap();
    let client = server.client().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client, "kube-system");
    for i in 0..3 {
        api.create(&PostParams::default(), &cm(&format!("c{i}")))
            .await
            .unwrap();
    }
    let first = api.list(&ListParams::default().limit(1)).await.unwrap();
    let token = first.metadata.continue_.unwrap();
    api.create(&PostParams::default(), &cm("later"))
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    let err = api_error(
        api.list(&ListParams::default().limit(1).continue_token(&token))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (410, "Expired"), "{err:?}");
    assert!(
        err.message
            .contains("The provided continue parameter is too old"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn secrets_fold_string_data_and_namespaces_get_defaults() {
    let (_s, client) = setup().await;
    let ns: Api<Namespace> = Api::all(client.clone());
    ns.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "fresh"}})).unwrap(),
    )
    .await
    .unwrap();
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client.clone(), "fresh");
    let s: k8s_openapi::api::core::v1::Secret =
        serde_json::from_value(json!({"metadata": {"name": "s"}, "stringData": {"user": "admin"}}))
            .unwrap();
    let created = secrets.create(&PostParams::default(), &s).await.unwrap();
    assert_eq!(created.type_.as_deref(), Some("Opaque"));
    assert_eq!(created.data.unwrap()["user"].0, b"admin".to_vec());
    assert!(created.string_data.is_none(), "stringData is write-only");
    // The namespace controller adds the default ServiceAccount and root CA ConfigMap.
    let sas: Api<k8s_openapi::api::core::v1::ServiceAccount> =
        Api::namespaced(client.clone(), "fresh");
    let cms: Api<ConfigMap> = Api::namespaced(client, "fresh");
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while sas.get_opt("default").await.unwrap().is_none()
        || cms.get_opt("kube-root-ca.crt").await.unwrap().is_none()
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "namespace defaults never appeared"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let ca = cms.get("kube-root-ca.crt").await.unwrap().data.unwrap();
    assert!(ca["ca.crt"].contains("BEGIN CERTIFICATE"));
}

#[tokio::test]
async fn deletecollection_preconditions_and_yaml_bodies() {
    let (_s, client) = setup().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    // YAML request body.
    let yaml = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\n  labels: {batch: one}\ndata:\n  k: v\n".to_vec();
    let (code, _, body) = raw(
        &client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        "application/yaml",
        yaml,
        "",
    )
    .await;
    assert_eq!(code, 201, "{}", String::from_utf8_lossy(&body));
    for name in ["d1", "d2"] {
        let obj: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": name, "labels": {"batch": "one"}}}))
                .unwrap();
        api.create(&PostParams::default(), &obj).await.unwrap();
    }
    // Preconditions: a wrong uid is a 409 and deletes nothing.
    let dp = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: Some("not-the-uid".into()),
            resource_version: None,
        }),
        ..Default::default()
    };
    let err = api_error(api.delete("d1", &dp).await.unwrap_err());
    assert_eq!(err.code, 409);
    // Upstream's `BeforeDelete` names the kind (a GroupResource of the kind).
    assert!(
        err.message.starts_with(
            "Operation cannot be fulfilled on ConfigMap \"d1\": the UID in the precondition (not-the-uid) does not match the UID in record ("
        ),
        "{}",
        err.message
    );
    let deleted = api
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels("batch=one"),
        )
        .await
        .unwrap();
    let names: Vec<String> = deleted
        .left()
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert_eq!(names, vec!["d1", "d2", "from-yaml"]);
    let left = api
        .list(&ListParams::default().labels("batch=one"))
        .await
        .unwrap();
    assert!(left.items.is_empty());
    assert!(
        api.get("kube-root-ca.crt").await.is_ok(),
        "unselected objects stay"
    );
}

#[tokio::test]
async fn status_subresource_splits_spec_and_status() {
    let (_s, client) = setup().await;
    let api: Api<k8s_openapi::api::core::v1::Service> = Api::namespaced(client, "default");
    let svc: k8s_openapi::api::core::v1::Service = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"ports": [{"port": 80}], "selector": {"app": "web"}},
    }))
    .unwrap();
    api.create(&PostParams::default(), &svc).await.unwrap();
    let status = json!({"status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.1"}]}}, "spec": {"ports": [{"port": 9999}]}});
    let patched = api
        .patch_status("web", &PatchParams::default(), &Patch::Merge(status))
        .await
        .unwrap();
    assert_eq!(
        patched
            .status
            .unwrap()
            .load_balancer
            .unwrap()
            .ingress
            .unwrap()[0]
            .ip
            .as_deref(),
        Some("10.0.0.1")
    );
    assert_eq!(
        patched.spec.as_ref().unwrap().ports.as_ref().unwrap()[0].port,
        80,
        "spec ignored on status writes"
    );
    // A main-resource write cannot change status.
    let main = json!({"status": {"loadBalancer": {}}, "spec": {"selector": {"app": "web2"}}});
    let updated = api
        .patch("web", &PatchParams::default(), &Patch::Merge(main))
        .await
        .unwrap();
    assert_eq!(
        updated
            .status
            .unwrap()
            .load_balancer
            .unwrap()
            .ingress
            .unwrap()
            .len(),
        1
    );
    assert_eq!(updated.spec.unwrap().selector.unwrap()["app"], "web2");
}

#[tokio::test]
async fn server_side_apply_tracks_owners_and_conflicts() {
    let (_s, client) = setup().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let config = |data: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": data});
    api.patch(
        "ssa",
        &PatchParams::apply("alice"),
        &Patch::Apply(config(json!({"x": "1", "y": "1"}))),
    )
    .await
    .unwrap();
    // Bob changing alice's field conflicts.
    let err = api_error(
        api.patch(
            "ssa",
            &PatchParams::apply("bob"),
            &Patch::Apply(config(json!({"x": "2"}))),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 409);
    assert_eq!(
        err.message,
        r#"Apply failed with 1 conflict: conflict with "alice": .data.x"#
    );
    let causes = err.details.unwrap().causes;
    assert_eq!(causes[0].field, ".data.x");
    assert_eq!(causes[0].reason, "FieldManagerConflict");
    // Setting the same value is shared ownership, not a conflict.
    api.patch(
        "ssa",
        &PatchParams::apply("bob"),
        &Patch::Apply(config(json!({"y": "1"}))),
    )
    .await
    .unwrap();
    // Forcing takes ownership.
    let forced = api
        .patch(
            "ssa",
            &PatchParams::apply("bob").force(),
            &Patch::Apply(config(json!({"x": "2", "y": "1"}))),
        )
        .await
        .unwrap();
    assert_eq!(forced.data.as_ref().unwrap()["x"], "2");
    // Alice drops y from her configuration: bob still owns it, so it stays; x is bob's now.
    let bare = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}});
    let kept = api
        .patch(
            "ssa",
            &PatchParams::apply("alice"),
            &Patch::Apply(bare.clone()),
        )
        .await
        .unwrap();
    assert_eq!(kept.data.as_ref().unwrap()["y"], "1");
    // Bob drops everything: fields nobody owns any more are removed.
    let emptied = api
        .patch("ssa", &PatchParams::apply("bob"), &Patch::Apply(bare))
        .await
        .unwrap();
    assert!(
        emptied.data.is_none_or(|d| d.is_empty()),
        "fields owned by nobody are removed"
    );
}

#[tokio::test]
async fn resource_version_match_semantics() {
    let (server, client) = setup().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let before = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let later = api
        .create(&PostParams::default(), &cm("later"))
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let path = |q: &str| format!("/api/v1/namespaces/default/configmaps?{q}");
    let names = |body: &[u8]| -> Vec<String> {
        let v: Value = serde_json::from_slice(body).unwrap();
        v["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    // Exact: the list as it was at that revision.
    let (code, _, body) = raw(
        &client,
        "GET",
        &path(&format!(
            "resourceVersion={before}&resourceVersionMatch=Exact"
        )),
        "",
        vec![],
        "",
    )
    .await;
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    assert!(!names(&body).contains(&"later".to_string()));
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["metadata"]["resourceVersion"], before.as_str());
    // NotOlderThan the create's revision: the cache waits until it has it.
    let (_, _, body) = raw(
        &client,
        "GET",
        &path(&format!(
            "resourceVersion={later}&resourceVersionMatch=NotOlderThan"
        )),
        "",
        vec![],
        "",
    )
    .await;
    assert!(names(&body).contains(&"later".to_string()));
    // "0" is whatever the cache has (no freshness promise): a 200 list.
    let (code, _, _) = raw(&client, "GET", &path("resourceVersion=0"), "", vec![], "").await;
    assert_eq!(code, 200);
    // Exact without a resourceVersion is a 400.
    let (code, _, _) = raw(
        &client,
        "GET",
        &path("resourceVersionMatch=Exact"),
        "",
        vec![],
        "",
    )
    .await;
    assert_eq!(code, 400);
    // A resourceVersion from the future times out with upstream's 504 (asked with
    // kubectl: kube-rs's client retries 504s).
    let out = server.kubectl(&[
        "get",
        "--raw",
        &path("resourceVersion=999999&resourceVersionMatch=NotOlderThan"),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Timeout") && err.contains("Too large resource version"),
        "{err}"
    );
}
