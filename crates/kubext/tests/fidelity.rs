//! Places where kubext answered differently from kube-apiserver 1.33 (issue 10),
//! each checked against upstream's values: bodies without type metadata, DELETE
//! answers, kubectl's move to server-side apply, `default/kubernetes`, Service
//! allocation, wire details and request limits.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{json_of, send_body, send_raw};
use k8s_openapi::api::core::v1::{Endpoints, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::{Value, json};
use testkit::Server;

const WIDGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.fidelity.example.com
spec:
  group: fidelity.example.com
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
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              replicas: {type: integer}
              count: {type: integer}
          status: {type: object, properties: {replicas: {type: integer}}}
"#;

fn install_widgets(server: &Server) {
    server.apply(WIDGET_CRD);
    server.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/widgets.fidelity.example.com",
        "--timeout=10s",
    ]);
}

const WIDGETS: &str = "/apis/fidelity.example.com/v1/namespaces/default/widgets";

#[tokio::test]
async fn bodies_without_type_meta_take_it_from_the_url_for_built_ins_only() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    // What the Python client's namespace helpers and kopf's events send.
    let (code, body) = send_body(
        &client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        "application/json",
        &json!({"metadata": {"name": "untyped"}, "data": {"a": "b"}}),
    )
    .await;
    assert_eq!(code, 201, "{}", String::from_utf8_lossy(&body));
    let created = json_of(&body);
    assert_eq!(
        (created["kind"].as_str(), created["apiVersion"].as_str()),
        (Some("ConfigMap"), Some("v1"))
    );
    let (code, _) = send_body(
        &client,
        "POST",
        "/api/v1/namespaces",
        "application/json",
        &json!({"metadata": {"name": "untyped-ns"}}),
    )
    .await;
    assert_eq!(code, 201);

    // Custom resources are decoded as unstructured objects: the kind is required.
    install_widgets(&server);
    let (code, body) = send_body(
        &client,
        "POST",
        WIDGETS,
        "application/json",
        &json!({"metadata": {"name": "w"}}),
    )
    .await;
    assert_eq!(code, 400);
    assert!(
        json_of(&body)["message"]
            .as_str()
            .unwrap()
            .contains("Object 'Kind' is missing"),
        "{}",
        String::from_utf8_lossy(&body)
    );
}

#[tokio::test]
async fn delete_answers_a_status_or_the_object_as_upstream_stores_do() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    install_widgets(&server);

    // Custom resources: a Status whose details name the resource (plural).
    let (code, body) = send_body(
        &client,
        "POST",
        WIDGETS,
        "application/json",
        &json!({"apiVersion": "fidelity.example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}),
    )
    .await;
    assert_eq!(code, 201);
    let uid = json_of(&body)["metadata"]["uid"].clone();
    let (code, _, body) = send_raw(
        &client,
        "DELETE",
        &format!("{WIDGETS}/w"),
        "application/json",
        vec![],
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(
        json_of(&body),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
               "details": {"name": "w", "group": "fidelity.example.com", "kind": "widgets", "uid": uid}})
    );

    // ConfigMaps: the same, without a group for the core group.
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(client.clone(), "default");
    cms.create(&PostParams::default(), &common::cm("c"))
        .await
        .unwrap();
    let (code, _, body) = send_raw(
        &client,
        "DELETE",
        "/api/v1/namespaces/default/configmaps/c",
        "application/json",
        vec![],
    )
    .await;
    assert_eq!(code, 200);
    let status = json_of(&body);
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["details"]["kind"], "configmaps");
    assert!(status["details"].get("group").is_none(), "{status}");

    // Services and ServiceAccounts return the deleted object (kube-rs's
    // `delete` gives `Either::Left(object)`).
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let svc: Service = serde_json::from_value(json!({
        "metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}}))
    .unwrap();
    services.create(&PostParams::default(), &svc).await.unwrap();
    let deleted = services
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    let object = deleted.left().expect("the deleted Service comes back");
    assert_eq!(object.metadata.name.as_deref(), Some("web"));
    let sas: Api<k8s_openapi::api::core::v1::ServiceAccount> =
        Api::namespaced(client.clone(), "default");
    sas.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "robot"}})).unwrap(),
    )
    .await
    .unwrap();
    assert!(
        sas.delete("robot", &DeleteParams::default())
            .await
            .unwrap()
            .is_left()
    );

    // A deletion held by a finalizer answers the object with 200; 202 only for
    // the deprecated `orphanDependents: false`.
    for (name, options, want) in [
        ("held", json!({}), 200),
        ("held-orphan", json!({"orphanDependents": false}), 202),
    ] {
        let mut cm = common::cm(name);
        cm.metadata.finalizers = Some(vec!["example.com/hold".into()]);
        cms.create(&PostParams::default(), &cm).await.unwrap();
        let (code, _, body) = send_raw(
            &client,
            "DELETE",
            &format!("/api/v1/namespaces/default/configmaps/{name}"),
            "application/json",
            serde_json::to_vec(&options).unwrap(),
        )
        .await;
        assert_eq!(code, want, "{name}: {}", String::from_utf8_lossy(&body));
        let held = json_of(&body);
        assert_eq!(held["kind"], "ConfigMap");
        assert!(held["metadata"]["deletionTimestamp"].is_string());
    }
}

/// `kubectl` with a manifest on stdin; (success, stdout + stderr).
fn kubectl_stdin(server: &Server, args: &[&str], manifest: &str) -> (bool, String) {
    let out = server.kubectl_with_stdin(args, Some(manifest));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn server_side_apply_takes_over_from_client_side_apply() {
    let server = Server::builder().start().unwrap();
    let manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: handover\n  labels: {app: demo}\ndata:\n  a: one\n  b: two\n";
    server.apply(manifest);
    // Unchanged fields recorded in last-applied-configuration are not conflicts:
    // kubectl diff exits 0 (same) or 1 (differs: the annotation is rewritten),
    // never 2+ (an error such as 409).
    let out = server.kubectl_with_stdin(&["diff", "--server-side", "-f", "-"], Some(manifest));
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "kubectl diff --server-side: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let changed = manifest.replace("b: two", "b: three");
    let (ok, out) = kubectl_stdin(&server, &["apply", "--server-side", "-f", "-"], &changed);
    assert!(ok, "kubectl apply --server-side after kubectl apply: {out}");
    let live: Value = serde_json::from_str(&server.kubectl_ok(&[
        "get",
        "configmap",
        "handover",
        "-o",
        "json",
        "--show-managed-fields",
    ]))
    .unwrap();
    assert_eq!(live["data"], json!({"a": "one", "b": "three"}));
    let managers: Vec<&str> = live["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["manager"].as_str().unwrap())
        .collect();
    assert!(managers.contains(&"kubectl"), "{managers:?}");
    // The annotation now records the server-side apply (upstream's
    // lastAppliedUpdater), so client-side apply keeps working from it.
    let recorded: Value = serde_json::from_str(
        live["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(recorded["data"]["b"], "three");

    // A field someone else changed since is still a conflict.
    server.kubectl_ok(&[
        "patch",
        "configmap",
        "handover",
        "--type=merge",
        "-p",
        r#"{"data":{"a":"edited"}}"#,
    ]);
    let (ok, out) = kubectl_stdin(&server, &["apply", "--server-side", "-f", "-"], &changed);
    assert!(!ok, "{out}");
    assert!(out.contains("conflict") && out.contains(".data.a"), "{out}");
}

#[test]
fn last_applied_configuration_is_written_as_gos_json_encoder_writes_it() {
    // Upstream's lastAppliedUpdater encodes with encoding/json's Encoder:
    // `<`, `>`, `&` and U+2028/U+2029 escaped, a trailing newline.
    let server = Server::builder().start().unwrap();
    let manifest =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: escapes\ndata:\n  a: plain\n";
    server.apply(manifest);
    let changed = manifest.replace("a: plain", "a: \"x<y>&z\\u2028w\\u2029\"");
    let (ok, out) = kubectl_stdin(&server, &["apply", "--server-side", "-f", "-"], &changed);
    assert!(ok, "kubectl apply --server-side: {out}");
    let live: Value =
        serde_json::from_str(&server.kubectl_ok(&["get", "configmap", "escapes", "-o", "json"]))
            .unwrap();
    assert_eq!(live["data"]["a"], "x<y>&z\u{2028}w\u{2029}");
    let text = live["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
        .as_str()
        .unwrap();
    assert!(
        text.contains(r#""a":"x\u003cy\u003e\u0026z\u2028w\u2029""#),
        "{text}"
    );
    assert!(text.ends_with("}\n"), "{text:?}");
}

/// `default/kubernetes` of kind `K`, as JSON.
async fn default_kubernetes<K>(client: &kube::Client) -> Value
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let object = Api::<K>::namespaced(client.clone(), "default")
        .get("kubernetes")
        .await
        .unwrap();
    serde_json::to_value(object).unwrap()
}

#[tokio::test]
async fn the_kubernetes_service_points_at_this_server() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let port = i32::from(server.addr.port());
    let v = default_kubernetes::<Service>(&client).await;
    assert_eq!(
        v["metadata"]["labels"],
        json!({"component": "apiserver", "provider": "kubernetes"})
    );
    assert_eq!(v["spec"]["clusterIP"], "10.0.0.1");
    assert_eq!(v["spec"]["clusterIPs"], json!(["10.0.0.1"]));
    assert_eq!(
        v["spec"]["ports"],
        json!([{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}])
    );
    assert_eq!(v["spec"]["ipFamilies"], json!(["IPv4"]));
    let e = default_kubernetes::<Endpoints>(&client).await;
    assert_eq!(
        e["subsets"],
        json!([{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}])
    );
    let s = default_kubernetes::<EndpointSlice>(&client).await;
    assert_eq!(
        s["metadata"]["labels"],
        json!({"kubernetes.io/service-name": "kubernetes"})
    );
    assert_eq!(s["addressType"], "IPv4");
    assert_eq!(
        s["endpoints"],
        json!([{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}])
    );

    // Another range moves it.
    let other = Server::builder()
        .arg("--service-cluster-ip-range=10.96.0.0/12")
        .start()
        .unwrap();
    let svc = Api::<Service>::namespaced(other.client().await.unwrap(), "default")
        .get("kubernetes")
        .await
        .unwrap();
    assert_eq!(svc.spec.unwrap().cluster_ip.as_deref(), Some("10.96.0.1"));
}

#[tokio::test]
async fn services_are_defaulted_and_get_cluster_ips_and_node_ports() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let services: Api<kube::api::DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &kube::api::ApiResource::erase::<Service>(&()),
    );
    let create = |name: &str, spec: Value| {
        let services = services.clone();
        let obj = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec});
        async move {
            let created = services
                .create(
                    &PostParams::default(),
                    &serde_json::from_value(obj).unwrap(),
                )
                .await?;
            Ok::<Value, kube::Error>(serde_json::to_value(created).unwrap())
        }
    };
    let web = create(
        "web",
        json!({"selector": {"app": "web"}, "ports": [{"port": 80}]}),
    )
    .await
    .unwrap();
    let spec = &web["spec"];
    let ip: std::net::Ipv4Addr = spec["clusterIP"].as_str().unwrap().parse().unwrap();
    assert_eq!(&ip.octets()[..3], &[10, 0, 0]);
    assert_eq!(spec["clusterIPs"], json!([ip.to_string()]));
    assert_eq!(spec["ipFamilies"], json!(["IPv4"]));
    assert_eq!(spec["ipFamilyPolicy"], "SingleStack");
    assert_eq!(spec["internalTrafficPolicy"], "Cluster");
    assert_eq!(spec["sessionAffinity"], "None");
    assert_eq!(spec["type"], "ClusterIP");
    assert_eq!(
        spec["ports"],
        json!([{"port": 80, "protocol": "TCP", "targetPort": 80}])
    );

    // The same IP again: upstream's allocator message.
    let err = create(
        "copy",
        json!({"clusterIP": ip.to_string(), "ports": [{"port": 80}]}),
    )
    .await
    .unwrap_err();
    let status = common::api_error(err);
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        format!(
            "Service \"copy\" is invalid: spec.clusterIPs: Invalid value: []string{{\"{ip}\"}}: failed to allocate IP {ip}: provided IP is already allocated"
        )
    );
    // Released on delete.
    services
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    let copy = create(
        "copy",
        json!({"clusterIP": ip.to_string(), "ports": [{"port": 80}]}),
    )
    .await
    .unwrap();
    assert_eq!(copy["spec"]["clusterIP"], ip.to_string());

    // NodePort: a port from 30000-32767, never one another Service holds.
    let np = create("np", json!({"type": "NodePort", "ports": [{"port": 80}]}))
        .await
        .unwrap();
    let node_port = np["spec"]["ports"][0]["nodePort"].as_i64().unwrap();
    assert!((30000..=32767).contains(&node_port), "{node_port}");
    assert_eq!(np["spec"]["externalTrafficPolicy"], "Cluster");
    let err = create(
        "np2",
        json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": node_port}]}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        common::api_error(err).message,
        format!(
            "Service \"np2\" is invalid: spec.ports[0].nodePort: Invalid value: {node_port}: provided port is already allocated"
        )
    );
    let lb = create(
        "lb",
        json!({"type": "LoadBalancer", "ports": [{"port": 443}]}),
    )
    .await
    .unwrap();
    assert_eq!(lb["spec"]["allocateLoadBalancerNodePorts"], true);
    assert!(lb["spec"]["ports"][0]["nodePort"].is_i64());
    // Headless and ExternalName Services get no cluster IP.
    let headless = create(
        "headless",
        json!({"clusterIP": "None", "selector": {"app": "x"}, "ports": [{"port": 80}]}),
    )
    .await
    .unwrap();
    assert_eq!(headless["spec"]["clusterIPs"], json!(["None"]));
    let external = create(
        "ext",
        json!({"type": "ExternalName", "externalName": "db.example.com"}),
    )
    .await
    .unwrap();
    assert!(external["spec"].get("clusterIP").is_none(), "{external}");

    // The cluster IP cannot move.
    let mut moved = copy.clone();
    moved["spec"]["clusterIP"] = json!("10.0.0.200");
    moved["spec"]["clusterIPs"] = json!(["10.0.0.200"]);
    let err = services
        .replace(
            "copy",
            &PostParams::default(),
            &serde_json::from_value(moved).unwrap(),
        )
        .await
        .unwrap_err();
    assert_eq!(
        common::api_error(err).message,
        "Service \"copy\" is invalid: spec.clusterIPs[0]: Invalid value: []string{\"10.0.0.200\"}: may not change once set"
    );
}

#[tokio::test]
async fn wire_details_match_upstream() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w"}, "data": {"z": "1", "a": "2"}});
    let (code, headers, body) = send_raw(
        &client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        "application/json",
        serde_json::to_vec(&cm).unwrap(),
    )
    .await;
    assert_eq!(code, 201);
    assert!(
        body.starts_with(br#"{"kind":"ConfigMap","apiVersion":"v1","#),
        "{}",
        String::from_utf8_lossy(&body)
    );
    assert!(body.ends_with(b"}\n"));
    assert_eq!(headers["cache-control"], "no-cache, private");
    // Metadata members in ObjectMeta's order, as kube-apiserver writes them:
    // name before namespace, uid, creationTimestamp, managedFields last.
    let (_, _, got) = send_raw(
        &client,
        "GET",
        "/api/v1/namespaces/default/configmaps/w",
        "",
        vec![],
    )
    .await;
    for body in [&body, &got] {
        let text = String::from_utf8_lossy(body);
        let at = |member: &str| {
            text.find(&format!("\"{member}\":"))
                .unwrap_or_else(|| panic!("no {member} in {text}"))
        };
        let order = [
            "name",
            "namespace",
            "uid",
            "creationTimestamp",
            "managedFields",
            "data",
        ];
        assert!(
            order.windows(2).all(|w| at(w[0]) < at(w[1])),
            "metadata members out of ObjectMeta's order: {text}"
        );
    }

    let (code, headers, body) = send_raw(
        &client,
        "GET",
        "/api/v1/namespaces/default/configmaps/missing",
        "application/json",
        vec![],
    )
    .await;
    assert_eq!(code, 404);
    assert!(body.starts_with(br#"{"kind":"Status","apiVersion":"v1","#));
    assert!(body.ends_with(b"}\n"), "Status bodies end with a newline");
    assert_eq!(headers["cache-control"], "no-cache, private");
    let (_, _, list) = send_raw(
        &client,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        "",
        vec![],
    )
    .await;
    assert!(list.ends_with(b"]}\n"));
}

#[tokio::test]
async fn request_limits_and_bad_parameters_get_upstreams_errors() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(client.clone(), "default");
    cms.create(&PostParams::default(), &common::cm("p"))
        .await
        .unwrap();
    let ops = |n: usize| {
        json!(
            (0..n)
                .map(|_| json!({"op": "test", "path": "/data/k", "value": "v"}))
                .collect::<Vec<_>>()
        )
    };
    let uri = "/api/v1/namespaces/default/configmaps/p";
    let (code, _) = send_body(
        &client,
        "PATCH",
        uri,
        "application/json-patch+json",
        &ops(10_000),
    )
    .await;
    assert_eq!(code, 200, "exactly 10000 operations are allowed");
    let (code, body) = send_body(
        &client,
        "PATCH",
        uri,
        "application/json-patch+json",
        &ops(10_001),
    )
    .await;
    assert_eq!(code, 413);
    assert_eq!(
        json_of(&body)["message"],
        "The allowed maximum operations in a JSON patch is 10000, got 10001"
    );

    let (code, _, body) = send_raw(
        &client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        ";;;===",
        serde_json::to_vec(&json!({"metadata": {"name": "x"}})).unwrap(),
    )
    .await;
    assert_eq!(code, 415, "{}", String::from_utf8_lossy(&body));
    assert_eq!(
        json_of(&body)["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"
    );

    let (code, body) = send_body(
        &client,
        "POST",
        "/api/v1/namespaces/default/configmaps?fieldValidation=Foo",
        "application/json",
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fv"}}),
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        json_of(&body)["message"],
        r#"CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Foo": supported values: "", "Ignore", "Strict", "Warn""#
    );

    // timeoutSeconds overflowing Go's int64 nanoseconds ends the watch at once
    // (no panic; the server keeps serving).
    let (code, _, _) = send_raw(
        &client,
        "GET",
        "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=9223372036854775807",
        "",
        vec![],
    )
    .await;
    assert_eq!(code, 200);
    cms.get("p").await.unwrap();
}

#[tokio::test]
async fn custom_resources_follow_upstreams_rules() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    install_widgets(&server);
    let crd: Value = serde_json::from_str(&server.kubectl_ok(&[
        "get",
        "crd",
        "widgets.fidelity.example.com",
        "-o",
        "json",
    ]))
    .unwrap();
    assert_eq!(crd["spec"]["conversion"], json!({"strategy": "None"}));
    // The create response already records the storage version.
    let (code, body) = send_body(
        &client,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "application/json",
        &sibling_crd(&crd, "sprockets", "Sprocket"),
    )
    .await;
    assert_eq!(code, 201, "{}", String::from_utf8_lossy(&body));
    assert_eq!(json_of(&body)["status"]["storedVersions"], json!(["v1"]));

    let widget = |name: &str, spec: Value| {
        json!({"apiVersion": "fidelity.example.com/v1", "kind": "Widget",
               "metadata": {"name": name, "bogus": "dropped"}, "spec": spec})
    };
    let (code, body) = send_body(
        &client,
        "POST",
        WIDGETS,
        "application/json",
        &widget("a", json!({"replicas": 1})),
    )
    .await;
    assert_eq!(code, 201, "{}", String::from_utf8_lossy(&body));
    let mut created = json_of(&body);
    assert!(
        created["metadata"].get("bogus").is_none(),
        "unknown metadata fields are dropped"
    );
    let (code, body) = send_body(
        &client,
        "POST",
        &format!("{WIDGETS}?fieldValidation=Strict"),
        "application/json",
        &widget("b", json!({})),
    )
    .await;
    assert_eq!(code, 400);
    assert!(
        json_of(&body)["message"]
            .as_str()
            .unwrap()
            .contains(r#"unknown field "metadata.bogus""#),
        "{}",
        String::from_utf8_lossy(&body)
    );

    // PUT without resourceVersion: custom resources allow no unconditional update.
    meta_remove(&mut created, "resourceVersion");
    let (code, body) = send_body(
        &client,
        "PUT",
        &format!("{WIDGETS}/a"),
        "application/json",
        &created,
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        json_of(&body)["message"],
        r#"widgets.fidelity.example.com "a" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"#
    );

    // Replicas must fit int32; integers beyond int64 are "number"s.
    let (code, body) = send_body(
        &client,
        "POST",
        WIDGETS,
        "application/json",
        &widget("big", json!({"replicas": 2147483648_i64})),
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        json_of(&body)["message"],
        r#"Widget.fidelity.example.com "big" is invalid: .spec.replicas: Invalid value: 2147483648: should be less than or equal to 2147483647"#
    );
    let (code, _, body) = send_raw(
        &client,
        "POST",
        WIDGETS,
        "application/json",
        br#"{"apiVersion":"fidelity.example.com/v1","kind":"Widget","metadata":{"name":"huge"},"spec":{"count":9223372036854775808}}"#.to_vec(),
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        json_of(&body)["message"],
        r#"Widget.fidelity.example.com "huge" is invalid: spec.count: Invalid value: "number": spec.count in body must be of type integer: "number""#
    );

    // Scale paths outside .spec/.status make the CRD invalid.
    let bad = WIDGET_CRD
        .replace(
            "widgets.fidelity.example.com",
            "gadgets.fidelity.example.com",
        )
        .replace(
            "plural: widgets, singular: widget, kind: Widget",
            "plural: gadgets, singular: gadget, kind: Gadget",
        )
        .replace(
            "specReplicasPath: .spec.replicas",
            "specReplicasPath: .foo.replicas",
        );
    let (ok, out) = kubectl_stdin(&server, &["create", "-f", "-"], &bad);
    assert!(!ok);
    assert!(
        out.contains(r#"spec.subresources.scale.specReplicasPath: Invalid value: ".foo.replicas": should be a json path under .spec"#),
        "{out}"
    );
}

/// A CRD with `crd`'s group and versions under other names, as a client posts it.
fn sibling_crd(crd: &Value, plural: &str, kind: &str) -> Value {
    let mut spec = crd["spec"].clone();
    spec["names"] = json!({"plural": plural, "kind": kind});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.fidelity.example.com")},
        "spec": spec,
    })
}

fn meta_remove(obj: &mut Value, field: &str) {
    if let Some(md) = obj["metadata"].as_object_mut() {
        md.remove(field);
    }
}

/// The CRD as JSON, or `None` once it is gone.
fn crd_json(server: &Server, name: &str) -> Option<Value> {
    let out = server.kubectl(&["get", "crd", name, "-o", "json"]);
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).unwrap())
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[test]
fn a_crd_deleted_recreated_and_deleted_again_goes_and_reports_progress() {
    let server = Server::builder().start().unwrap();
    let crd = "widgets.fidelity.example.com";
    install_widgets(&server);
    server.apply("apiVersion: fidelity.example.com/v1\nkind: Widget\nmetadata:\n  name: held\n  finalizers: [example.com/hold]\n");
    server.kubectl_ok(&["delete", "crd", crd, "--wait=false"]);
    // Held by the instance's finalizer: upstream's in-progress condition.
    wait_for("InstanceDeletionInProgress", || {
        crd_json(&server, crd).is_some_and(|c| {
            c["status"]["conditions"]
                .as_array()
                .unwrap()
                .iter()
                .any(|cond| {
                    cond["type"] == "Terminating"
                        && cond["status"] == "True"
                        && cond["reason"] == "InstanceDeletionInProgress"
                        && cond["message"] == "CustomResource deletion is in progress"
                })
        })
    });
    server.kubectl_ok(&[
        "patch",
        "widget",
        "held",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    wait_for("the CRD to go", || crd_json(&server, crd).is_none());

    // The same name again: deleting it must not wait on the old cleanup.
    install_widgets(&server);
    server.apply("apiVersion: fidelity.example.com/v1\nkind: Widget\nmetadata:\n  name: again\n");
    server.kubectl_ok(&["delete", "crd", crd, "--wait=false"]);
    wait_for("the re-created CRD to go", || {
        crd_json(&server, crd).is_none()
    });
}

#[test]
fn gateway_api_addresses_get_the_oneof_branch_upstream_reports() {
    let server = Server::builder().start().unwrap();
    let crd = include_str!("data/gateway-api/gateways.yaml");
    server.apply(crd);
    server.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/gateways.gateway.networking.k8s.io",
        "--timeout=10s",
    ]);
    let gateway = "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw}\nspec:\n  gatewayClassName: example\n  listeners: [{name: http, protocol: HTTP, port: 80}]\n  addresses: [{type: IPAddress, value: not-an-ip}]\n";
    let (ok, out) = kubectl_stdin(&server, &["create", "-f", "-"], gateway);
    assert!(!ok, "{out}");
    for expected in [
        r#""spec.addresses[0]" must validate one and only one schema (oneOf). Found none valid"#,
        r#""spec.addresses[0].value" must validate at least one schema (anyOf)"#,
        r#"spec.addresses[0].value: Invalid value: "not-an-ip": spec.addresses[0].value in body must be of type ipv4: "not-an-ip""#,
    ] {
        assert!(out.contains(expected), "missing {expected}\nin: {out}");
    }
    assert!(!out.contains("must not validate the schema (not)"), "{out}");
    let valid = gateway.replace("not-an-ip", "192.0.2.10");
    let (ok, out) = kubectl_stdin(&server, &["create", "-f", "-"], &valid);
    assert!(ok, "{out}");
}
