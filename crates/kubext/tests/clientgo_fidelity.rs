//! Places where client-go (the Go test module, run against kubext and against
//! kube-apiserver 1.33) found kubext answering differently, each checked
//! against upstream's values.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{get_accepting, json_of, send_body, send_raw};
use serde_json::{Value, json};
use testkit::Server;

const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// GET `uri` with `accept`; the answer's code and JSON.
async fn get(client: &kube::Client, uri: &str, accept: &str) -> (u16, Value) {
    let (code, _, bytes) = get_accepting(client, uri, accept).await;
    (code, json_of(&bytes))
}

/// Every resource of an aggregated discovery list, by (group, version, resource).
fn aggregated_resources(list: &Value) -> Vec<((String, String, String), Value)> {
    let mut out = Vec::new();
    for group in list["items"].as_array().unwrap() {
        let name = group["metadata"]["name"].as_str().unwrap_or_default();
        for version in group["versions"].as_array().unwrap() {
            let v = version["version"].as_str().unwrap();
            for r in version["resources"].as_array().unwrap() {
                let resource = r["resource"].as_str().unwrap();
                out.push(((name.into(), v.into(), resource.into()), r.clone()));
            }
        }
    }
    out
}

fn find<'a>(list: &'a [((String, String, String), Value)], gvr: (&str, &str, &str)) -> &'a Value {
    list.iter()
        .find(|((g, v, r), _)| (g.as_str(), v.as_str(), r.as_str()) == gvr)
        .map(|(_, r)| r)
        .unwrap_or_else(|| panic!("{gvr:?} not in aggregated discovery"))
}

/// The entries named `name` or `name/...` of a legacy `APIResourceList`.
fn legacy_entries(list: &Value, name: &str) -> Vec<Value> {
    let prefix = format!("{name}/");
    list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| {
            let n = r["name"].as_str().unwrap();
            n == name || n.starts_with(&prefix)
        })
        .cloned()
        .collect()
}

/// `ValidatePatchOptions` + `errors.NewInvalid(PatchOptions)` (handlers/patch.go):
/// an apply without `fieldManager` is a 422 on `PatchOptions.meta.k8s.io ""`,
/// `force` is refused on other patches, and every problem of the options is
/// reported at once; create's options check `fieldManager` too.
#[tokio::test]
async fn a_write_with_invalid_options_is_an_invalid_options_object() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let cm = "/api/v1/namespaces/default/configmaps/applied";
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "applied"}, "data": {"k": "v"}});
    let (code, body) = send_body(
        &client,
        "PATCH",
        cm,
        "application/apply-patch+yaml",
        &config,
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        json_of(&body),
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
            "reason": "Invalid",
            "details": {"group": "meta.k8s.io", "kind": "PatchOptions", "causes": [{
                "reason": "FieldValueRequired",
                "message": "Required value: is required for apply patch",
                "field": "fieldManager",
            }]},
            "code": 422,
        })
    );
    // Nothing was created; with a manager the same apply creates it.
    let (code, _) = get(&client, cm, "application/json").await;
    assert_eq!(code, 404);
    let (code, body) = send_body(
        &client,
        "PATCH",
        &format!("{cm}?fieldManager=tester"),
        "application/apply-patch+yaml; charset=utf-8",
        &config,
    )
    .await;
    assert_eq!(code, 201, "{}", String::from_utf8_lossy(&body));

    // `force` belongs to apply; the options' errors come together, in
    // upstream's order.
    let (code, body) = send_body(
        &client,
        "PATCH",
        &format!("{cm}?force=false&fieldValidation=Loose"),
        "application/merge-patch+json",
        &json!({"data": {"k": "w"}}),
    )
    .await;
    assert_eq!(code, 422);
    let status = json_of(&body);
    assert_eq!(
        status["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: [force: Forbidden: may not be specified for non-apply patch, fieldValidation: Unsupported value: \"Loose\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"]"
    );
    assert_eq!(
        status["details"]["causes"][0],
        json!({"reason": "FieldValueForbidden",
               "message": "Forbidden: may not be specified for non-apply patch", "field": "force"})
    );

    // `ValidateCreateOptions`: a field manager of at most 128 bytes.
    let long = "m".repeat(129);
    let (code, body) = send_body(
        &client,
        "POST",
        &format!("/api/v1/namespaces/default/configmaps?fieldManager={long}"),
        "application/json",
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "long"}}),
    )
    .await;
    assert_eq!(code, 422);
    let status = json_of(&body);
    assert_eq!(
        status["message"],
        "CreateOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long: may not be more than 128 bytes"
    );
    assert_eq!(status["details"]["kind"], "CreateOptions");
}

const WIDGETS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.discovery.example.com}
spec:
  group: discovery.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#;

/// Aggregated discovery as upstream builds it: built-in kinds through the
/// generic installer (`ConvertGroupVersionIntoToDiscovery`: `responseKind`
/// group and version empty unless the kind is another group's, subresources
/// in path order), a CRD's types through apiextensions-apiserver's discovery
/// controller (group and version named, `status` before `scale`). Every
/// built-in resource is compared with upstream's own document
/// (`docs/research/builtin-kinds/discovery/aggregated_v2.json`, v1.37.2).
#[tokio::test]
async fn aggregated_discovery_names_other_groups_kinds_only() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let (code, apis) = get(&client, "/apis", AGGREGATED).await;
    assert_eq!(code, 200);
    let apis = aggregated_resources(&apis);
    let deployments = find(&apis, ("apps", "v1", "deployments"));
    assert_eq!(
        deployments["responseKind"],
        json!({"group": "", "version": "", "kind": "Deployment"})
    );
    assert_eq!(
        deployments["subresources"],
        json!([
            {"subresource": "scale", "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
             "verbs": ["get", "patch", "update"]},
            {"subresource": "status", "responseKind": {"group": "", "version": "", "kind": "Deployment"},
             "verbs": ["get", "patch", "update"]},
        ])
    );

    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/research/builtin-kinds/discovery/aggregated_v2.json"
    );
    let upstream: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let upstream = aggregated_resources(&upstream);
    let mut compared = 0;
    for (gvr, theirs) in &upstream {
        if let Some((_, ours)) = apis.iter().find(|(k, _)| k == gvr) {
            assert_eq!(ours, theirs, "{gvr:?}");
            compared += 1;
        }
    }
    assert!(compared >= 40, "only {compared} resources compared");

    // The core group: pods' subresources by name, another group's kind named.
    let (code, api) = get(&client, "/api", AGGREGATED).await;
    assert_eq!(code, 200);
    let api = aggregated_resources(&api);
    let pods = find(&api, ("", "v1", "pods"));
    assert_eq!(
        pods["responseKind"],
        json!({"group": "", "version": "", "kind": "Pod"})
    );
    let names: Vec<&str> = pods["subresources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["subresource"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "attach",
            "binding",
            "ephemeralcontainers",
            "eviction",
            "exec",
            "log",
            "portforward",
            "proxy",
            "resize",
            "status"
        ]
    );
    assert_eq!(
        pods["subresources"][3]["responseKind"],
        json!({"group": "policy", "version": "v1", "kind": "Eviction"})
    );
    assert_eq!(
        pods["subresources"][0]["responseKind"],
        json!({"group": "", "version": "", "kind": "PodAttachOptions"})
    );
    assert_eq!(
        find(&api, ("", "v1", "serviceaccounts"))["subresources"][0]["responseKind"],
        json!({"group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"})
    );

    // Legacy discovery lists subresources in the same order, and group and
    // version only where they differ (`omitempty`).
    let (code, apps) = get(&client, "/apis/apps/v1", "application/json").await;
    assert_eq!(code, 200);
    let names: Vec<Value> = legacy_entries(&apps, "deployments")
        .iter()
        .map(|r| r["name"].clone())
        .collect();
    assert_eq!(
        names,
        ["deployments", "deployments/scale", "deployments/status"]
    );
    let (code, core) = get(&client, "/api/v1", "application/json").await;
    assert_eq!(code, 200);
    let pods = legacy_entries(&core, "pods");
    assert_eq!(pods[1]["name"], "pods/attach");
    assert_eq!(
        pods[1],
        json!({"name": "pods/attach", "singularName": "", "namespaced": true,
               "kind": "PodAttachOptions", "verbs": ["create", "get"]})
    );
    assert_eq!(pods.last().unwrap()["name"], "pods/status");

    // A CRD's type: as apiextensions-apiserver lists it.
    let out = server.kubectl_with_stdin(&["apply", "-f", "-"], Some(WIDGETS));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let widgets = loop {
        let (_, apis) = get(&client, "/apis", AGGREGATED).await;
        let found = aggregated_resources(&apis)
            .into_iter()
            .find(|((g, _, r), _)| g == "discovery.example.com" && r == "widgets");
        if let Some((_, widgets)) = found {
            break widgets;
        }
        assert!(Instant::now() < deadline, "widgets never discovered");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let kind = json!({"group": "discovery.example.com", "version": "v1", "kind": "Widget"});
    assert_eq!(widgets["responseKind"], kind);
    assert_eq!(
        widgets["subresources"],
        json!([
            {"subresource": "status", "responseKind": kind, "verbs": ["get", "patch", "update"]},
            {"subresource": "scale", "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
             "verbs": ["get", "patch", "update"]},
        ])
    );
}

/// Upstream's namespace storage has no collection deleter: discovery lists no
/// `deletecollection` and `DELETE /api/v1/namespaces` has no route (go-restful's
/// 405, as a generic server response with empty details).
#[tokio::test]
async fn namespaces_cannot_be_deleted_as_a_collection() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let verbs = json!([
        "create", "delete", "get", "list", "patch", "update", "watch"
    ]);
    let (_, core) = get(&client, "/api/v1", "application/json").await;
    assert_eq!(legacy_entries(&core, "namespaces")[0]["verbs"], verbs);
    let (_, api) = get(&client, "/api", AGGREGATED).await;
    assert_eq!(
        find(&aggregated_resources(&api), ("", "v1", "namespaces"))["verbs"],
        verbs
    );

    let (code, body) = send_body(
        &client,
        "POST",
        "/api/v1/namespaces",
        "application/json",
        &json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "kept", "labels": {"sweep": "yes"}}}),
    )
    .await;
    assert_eq!(code, 201, "{}", String::from_utf8_lossy(&body));
    let (code, _, body) = send_raw(
        &client,
        "DELETE",
        "/api/v1/namespaces?labelSelector=sweep%3Dyes",
        "application/json",
        Vec::new(),
    )
    .await;
    assert_eq!(code, 405);
    assert_eq!(
        json_of(&body),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "the server does not allow this method on the requested resource",
               "reason": "MethodNotAllowed", "details": {}, "code": 405})
    );
    let (code, kept) = get(&client, "/api/v1/namespaces/kept", "application/json").await;
    assert_eq!(code, 200);
    assert!(kept["metadata"]["deletionTimestamp"].is_null(), "{kept}");
}

/// `namespaces/{name}/finalize` (upstream's `FinalizeREST` with the finalize
/// strategy): discovered with verb `update`; a PUT takes everything but
/// `status` from the body, `spec.finalizers` checked as
/// `ValidateNamespaceFinalizeUpdate` checks them; the namespace controller
/// removes only its own `kubernetes` finalizer, and the namespace goes when
/// the last one is finalized away.
#[tokio::test]
async fn namespaces_are_finalized_through_their_finalize_subresource() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let (_, core) = get(&client, "/api/v1", "application/json").await;
    assert_eq!(
        legacy_entries(&core, "namespaces")[1..],
        [
            json!({"name": "namespaces/finalize", "singularName": "", "namespaced": false,
                   "kind": "Namespace", "verbs": ["update"]}),
            json!({"name": "namespaces/status", "singularName": "", "namespaced": false,
                   "kind": "Namespace", "verbs": ["get", "patch", "update"]}),
        ]
    );
    let (_, api) = get(&client, "/api", AGGREGATED).await;
    assert_eq!(
        find(&aggregated_resources(&api), ("", "v1", "namespaces"))["subresources"][0],
        json!({"subresource": "finalize", "verbs": ["update"],
               "responseKind": {"group": "", "version": "", "kind": "Namespace"}})
    );

    // Create keeps the finalizers asked for and adds `kubernetes`.
    let (code, body) = send_body(
        &client,
        "POST",
        "/api/v1/namespaces",
        "application/json",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "held"},
                "spec": {"finalizers": ["example.com/hold"]}}),
    )
    .await;
    assert_eq!(code, 201, "{}", String::from_utf8_lossy(&body));
    let created = json_of(&body);
    assert_eq!(
        created["spec"]["finalizers"],
        json!(["example.com/hold", "kubernetes"])
    );

    let finalize = "/api/v1/namespaces/held/finalize";
    let mut request = created.clone();
    request["spec"]["finalizers"] = json!(["kubernetes", "example.com/hold", "example.com/other"]);
    request["metadata"]["labels"]["team"] = json!("a");
    request["status"] = json!({"phase": "Terminating"});
    let (code, body) = send_body(&client, "PUT", finalize, "application/json", &request).await;
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    let finalized = json_of(&body);
    assert_eq!(
        finalized["spec"]["finalizers"],
        json!(["kubernetes", "example.com/hold", "example.com/other"])
    );
    assert_eq!(finalized["metadata"]["labels"]["team"], "a");
    assert_eq!(finalized["status"], json!({"phase": "Active"}));
    let managers = finalized["metadata"]["managedFields"].as_array().unwrap();
    assert!(
        managers.iter().any(|m| m["subresource"] == "finalize"),
        "{managers:?}"
    );

    // Names: qualified, or one of the standard finalizers.
    let mut bad = finalized.clone();
    bad["spec"]["finalizers"] = json!(["orphan", "hold", "Example.com/x"]);
    let (code, body) = send_body(&client, "PUT", finalize, "application/json", &bad).await;
    assert_eq!(code, 422);
    let status = json_of(&body);
    let fields: Vec<&str> = status["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        fields,
        ["spec.finalizers[1]", "spec.finalizers[2]"],
        "{status}"
    );
    assert_eq!(
        status["details"]["causes"][0]["message"],
        "Invalid value: \"hold\": name is neither a standard finalizer name nor is it fully qualified"
    );

    // Only PUT is served there.
    let (code, status) = get(&client, finalize, "application/json").await;
    assert_eq!(code, 405, "{status}");
    assert_eq!(status["reason"], "MethodNotAllowed");

    // Deleted: the namespace controller empties it and removes `kubernetes`,
    // the others hold it until they are finalized away.
    let (code, _, _) = send_raw(
        &client,
        "DELETE",
        "/api/v1/namespaces/held",
        "application/json",
        Vec::new(),
    )
    .await;
    assert_eq!(code, 200);
    let deadline = Instant::now() + Duration::from_secs(30);
    let terminating = loop {
        let (_, ns) = get(&client, "/api/v1/namespaces/held", "application/json").await;
        if ns["spec"]["finalizers"] == json!(["example.com/hold", "example.com/other"]) {
            break ns;
        }
        assert!(Instant::now() < deadline, "never finalized by kubext: {ns}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(terminating["status"]["phase"], "Terminating");
    let mut request = terminating.clone();
    request["spec"]["finalizers"] = json!(["example.com/other"]);
    let (code, body) = send_body(&client, "PUT", finalize, "application/json", &request).await;
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    let (code, still) = get(&client, "/api/v1/namespaces/held", "application/json").await;
    assert_eq!(code, 200);
    assert_eq!(still["spec"]["finalizers"], json!(["example.com/other"]));
    request = still;
    request["spec"]["finalizers"] = json!([]);
    let (code, body) = send_body(&client, "PUT", finalize, "application/json", &request).await;
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (code, _) = get(&client, "/api/v1/namespaces/held", "application/json").await;
        if code == 404 {
            break;
        }
        assert!(Instant::now() < deadline, "the finalized namespace stays");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
