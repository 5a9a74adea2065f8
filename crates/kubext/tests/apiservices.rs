//! `apiregistration.k8s.io/v1` APIServices: validation with kube-aggregator's
//! messages, the status subresource, and the local APIServices kubext keeps for every
//! group-version it serves (built-in and from CRDs).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use testkit::Server;

fn apiservices(client: kube::Client) -> Api<DynamicObject> {
    Api::all_with(
        client,
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("apiregistration.k8s.io", "v1", "APIService"),
            "apiservices",
        ),
    )
}

fn object(v: Value) -> DynamicObject {
    serde_json::from_value(v).unwrap()
}

/// Poll until `check` holds for the named APIService (or its absence).
async fn eventually(
    api: &Api<DynamicObject>,
    name: &str,
    check: impl Fn(Option<&DynamicObject>) -> bool,
) -> Option<DynamicObject> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let found = api.get_opt(name).await.unwrap();
        if check(found.as_ref()) {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "{name}: condition not reached: {found:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn local_apiservices_follow_the_served_group_versions() {
    let server = Server::builder().start().unwrap();
    let api = apiservices(server.client().await.unwrap());
    let core = eventually(&api, "v1.", |o| o.is_some()).await.unwrap();
    assert_eq!(core.data["spec"]["groupPriorityMinimum"], 18000);
    assert_eq!(
        core.metadata.labels.unwrap()["kube-aggregator.kubernetes.io/automanaged"],
        "onstart"
    );
    let condition = &core.data["status"]["conditions"][0];
    assert_eq!(condition["type"], "Available");
    assert_eq!(condition["status"], "True");
    assert_eq!(condition["reason"], "Local");
    assert_eq!(
        condition["message"],
        "Local APIServices are always available"
    );
    eventually(&api, "v1.coordination.k8s.io", |o| o.is_some()).await;
    // The aggregator's own group has none.
    assert!(
        api.get_opt("v1.apiregistration.k8s.io")
            .await
            .unwrap()
            .is_none()
    );

    let table = server.kubectl_ok(&["get", "apiservices"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "SERVICE", "AVAILABLE", "AGE"]);
    let line = table
        .lines()
        .find(|l| l.starts_with("v1.coordination.k8s.io "))
        .unwrap();
    assert_eq!(line.split_whitespace().nth(1), Some("Local"));
    assert_eq!(line.split_whitespace().nth(2), Some("True"));

    // A CRD's group-version gets one (priorities 1000/100) and loses it with the CRD.
    server.apply(
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.things.example.com}
spec:
  group: things.example.com
  scope: Namespaced
  names: {plural: widgets, kind: Widget}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
"#,
    );
    let custom = eventually(&api, "v1.things.example.com", |o| o.is_some())
        .await
        .unwrap();
    assert_eq!(custom.data["spec"]["groupPriorityMinimum"], 1000);
    assert_eq!(custom.data["spec"]["versionPriority"], 100);
    assert_eq!(
        custom.metadata.labels.unwrap()["kube-aggregator.kubernetes.io/automanaged"],
        "true"
    );
    server.kubectl_ok(&["delete", "crd", "widgets.things.example.com"]);
    eventually(&api, "v1.things.example.com", |o| o.is_none()).await;

    // A user's APIService is left alone by the registration.
    let user = object(json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1alpha1.wardle.example.com"},
        "spec": {
            "group": "wardle.example.com", "version": "v1alpha1",
            "groupPriorityMinimum": 1000, "versionPriority": 15,
            "service": {"namespace": "wardle", "name": "api"},
            "insecureSkipTLSVerify": true,
        },
    }));
    let created = api.create(&PostParams::default(), &user).await.unwrap();
    assert_eq!(
        created.data["spec"]["service"]["port"], 443,
        "port defaults to 443"
    );
    assert_eq!(created.data["status"], json!({}));
    server.apply(
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.things.example.com}
spec:
  group: things.example.com
  scope: Namespaced
  names: {plural: gadgets, kind: Gadget}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
"#,
    );
    eventually(&api, "v1.things.example.com", |o| o.is_some()).await;
    assert!(
        api.get_opt("v1alpha1.wardle.example.com")
            .await
            .unwrap()
            .is_some()
    );
    // The availability controller has looked at it by now (it reacts to changes).
    available(
        &api,
        "v1alpha1.wardle.example.com",
        "False",
        "ServiceNotFound",
    )
    .await;
    let line = server.kubectl_ok(&[
        "get",
        "apiservice",
        "v1alpha1.wardle.example.com",
        "--no-headers",
    ]);
    let cells: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(
        &cells[..4],
        [
            "v1alpha1.wardle.example.com",
            "wardle/api",
            "False",
            "(ServiceNotFound)"
        ]
    );
}

#[tokio::test]
async fn invalid_apiservices_get_kube_aggregators_messages() {
    let server = Server::builder().start().unwrap();
    let api = apiservices(server.client().await.unwrap());
    let invalid = |name: &str, spec: Value| {
        object(json!({
            "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": name}, "spec": spec,
        }))
    };
    let cases = [
        (
            invalid(
                "v1.wrong.example.com",
                json!({"group": "right.example.com", "version": "v1", "groupPriorityMinimum": 0, "versionPriority": 1001}),
            ),
            vec![
                "metadata.name: Invalid value: \"v1.wrong.example.com\": must be `spec.version+\".\"+spec.group`: \"v1.right.example.com\"",
                "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000",
                "spec.versionPriority: Invalid value: 1001: must be positive and less than 1000",
            ],
        ),
        (
            invalid(
                "v2.",
                json!({"version": "v2", "groupPriorityMinimum": 1, "versionPriority": 1, "caBundle": "YWJj", "insecureSkipTLSVerify": true}),
            ),
            vec![
                "spec.group: Required value: only v1 may have an empty group and it better be legacy kube",
                "spec.caBundle: Invalid value: \"3 bytes\": local APIServices may not have a caBundle",
                "spec.insecureSkipTLSVerify: Invalid value: true: local APIServices may not have insecureSkipTLSVerify",
            ],
        ),
        (
            invalid(
                "v1.x.example.com",
                json!({"group": "x.example.com", "version": "v1", "groupPriorityMinimum": 1, "versionPriority": 1,
                       "service": {"port": 70000}, "caBundle": "YWJj", "insecureSkipTLSVerify": true}),
            ),
            vec![
                "spec.service.namespace: Required value",
                "spec.service.name: Required value",
                "spec.service.port: Invalid value: 70000: port is not valid: must be between 1 and 65535, inclusive",
                "spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present",
            ],
        ),
    ];
    for (obj, messages) in cases {
        let status = common::api_error(api.create(&PostParams::default(), &obj).await.unwrap_err());
        assert_eq!(status.code, 422, "{status:?}");
        for m in messages {
            assert!(
                status.message.contains(m),
                "missing {m:?} in {}",
                status.message
            );
        }
    }

    // Status writes are validated too, and spec is kept from the stored object.
    let ok = invalid(
        "v1.ok.example.com",
        json!({"group": "ok.example.com", "version": "v1", "groupPriorityMinimum": 100, "versionPriority": 10,
               "service": {"namespace": "ns", "name": "svc", "port": 8443}, "insecureSkipTLSVerify": true}),
    );
    api.create(&PostParams::default(), &ok).await.unwrap();
    let status = json!({"status": {"conditions": [{"type": "Available", "status": "Maybe", "reason": "X", "message": ""}]}});
    let err = api
        .patch_status(
            "v1.ok.example.com",
            &Default::default(),
            &kube::api::Patch::Merge(&status),
        )
        .await
        .unwrap_err();
    let err = common::api_error(err);
    assert_eq!(err.code, 422);
    assert!(
        err.message.contains("status.conditions[0].status: Unsupported value: \"Maybe\": supported values: \"True\", \"False\", \"Unknown\""),
        "{}",
        err.message
    );
    let status = json!({
        "spec": {"versionPriority": 999},
        "status": {"conditions": [{"type": "Available", "status": "False", "reason": "ServiceNotFound", "message": "service/svc in \"ns\" is not present"}]},
    });
    let updated = api
        .patch_status(
            "v1.ok.example.com",
            &Default::default(),
            &kube::api::Patch::Merge(&status),
        )
        .await
        .unwrap();
    assert_eq!(updated.data["spec"]["versionPriority"], 10);
    let line = server.kubectl_ok(&["get", "apiservice", "v1.ok.example.com", "--no-headers"]);
    assert!(line.contains("False (ServiceNotFound)"), "{line}");
}

/// Extension servers read whom to trust from this ConfigMap, as with kube-apiserver.
#[tokio::test]
async fn extension_apiserver_authentication_configmap() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::builder().data_dir(dir.path()).start().unwrap();
    let client = server.client().await.unwrap();
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(client, "kube-system");
    let cm = cms.get("extension-apiserver-authentication").await.unwrap();
    let data = cm.data.unwrap();
    let pki = dir.path().join("pki");
    let read = |f: &str| std::fs::read_to_string(pki.join(f)).unwrap();
    assert_eq!(
        data["requestheader-client-ca-file"],
        read("front-proxy-ca.crt")
    );
    assert!(data["client-ca-file"].contains(&read("ca.crt")));
    assert_eq!(
        data["requestheader-allowed-names"],
        r#"["front-proxy-client"]"#
    );
    assert_eq!(
        data["requestheader-username-headers"],
        r#"["X-Remote-User"]"#
    );
    assert_eq!(data["requestheader-group-headers"], r#"["X-Remote-Group"]"#);
    assert_eq!(
        data["requestheader-extra-headers-prefix"],
        r#"["X-Remote-Extra-"]"#
    );
    // The generated front-proxy client certificate exists next to its CA.
    assert!(read("front-proxy-client.crt").contains("BEGIN CERTIFICATE"));
    drop(server);

    // Flags change what is published, on the next start.
    let server = Server::builder()
        .data_dir(dir.path())
        .arg("--requestheader-allowed-names=aggregator,front-proxy-client")
        .arg("--requestheader-username-headers=X-Remote-User,X-Forwarded-User")
        .start()
        .unwrap();
    let data = authentication_configmap(&server).await;
    assert_eq!(
        data["requestheader-allowed-names"],
        r#"["aggregator","front-proxy-client"]"#
    );
    assert_eq!(
        data["requestheader-username-headers"],
        r#"["X-Remote-User","X-Forwarded-User"]"#
    );
}

/// The data of `kube-system/extension-apiserver-authentication`.
async fn authentication_configmap(server: &Server) -> std::collections::BTreeMap<String, String> {
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(server.client().await.unwrap(), "kube-system");
    cms.get("extension-apiserver-authentication")
        .await
        .unwrap()
        .data
        .unwrap()
}

/// A client of `server` presenting the certificate `<stem>.crt` of `pki` and
/// sending `headers` with every request.
async fn client_as(
    server: &Server,
    pki: &std::path::Path,
    stem: &str,
    headers: &[(&str, &str)],
) -> kube::Client {
    use base64::Engine;
    let read = |ext: &str| std::fs::read(pki.join(format!("{stem}.{ext}"))).unwrap();
    let b64 = |b: Vec<u8>| base64::engine::general_purpose::STANDARD.encode(b);
    let mut config = server.client_config().await.unwrap();
    config.auth_info.client_certificate = None;
    config.auth_info.client_key = None;
    config.auth_info.client_certificate_data = Some(b64(read("crt")));
    config.auth_info.client_key_data = Some(b64(read("key")).into());
    config.headers = headers
        .iter()
        .map(|(k, v)| (k.parse().unwrap(), v.parse().unwrap()))
        .collect();
    kube::Client::try_from(config).unwrap()
}

#[tokio::test]
async fn identity_headers_count_only_from_a_trusted_front_proxy() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::builder().data_dir(dir.path()).start().unwrap();
    let pki = dir.path().join("pki");
    let asserted = [
        ("X-Remote-User", "alice"),
        ("X-Remote-Group", "devs"),
        ("X-Remote-Group", "ops"),
        ("X-Remote-Extra-Example.com%2fScopes", "read"),
        ("X-Remote-Extra-Example.com%2fScopes", "write"),
    ];
    // The front-proxy client certificate vouches for the user in the headers.
    let proxy = client_as(&server, &pki, "front-proxy-client", &asserted).await;
    let user = common::whoami(&proxy).await.unwrap();
    assert_eq!(user["username"], "alice", "{user}");
    assert_eq!(
        user["groups"],
        json!(["devs", "ops", "system:authenticated"])
    );
    assert_eq!(
        user["extra"],
        json!({"example.com/scopes": ["read", "write"]})
    );
    // Without a username header the proxy's certificate proves nothing (it is not
    // signed by a client CA).
    let bare = client_as(&server, &pki, "front-proxy-client", &[]).await;
    assert_eq!(common::whoami(&bare).await, Err(401));
    // A client certificate of the cluster CA cannot assert identities: the headers
    // are ignored and the certificate's own user counts.
    let admin = common::whoami(&server.client().await.unwrap())
        .await
        .unwrap();
    let spoofing = client_as(&server, &pki, "admin", &asserted).await;
    assert_eq!(common::whoami(&spoofing).await.unwrap(), admin);
    drop(server);

    // A proxy certificate whose name is not allowed is not believed either.
    let server = Server::builder()
        .data_dir(dir.path())
        .arg("--requestheader-allowed-names=aggregator")
        .start()
        .unwrap();
    let proxy = client_as(&server, &pki, "front-proxy-client", &asserted).await;
    assert_eq!(common::whoami(&proxy).await, Err(401));
    drop(server);

    // The UID counts only from the headers --requestheader-uid-headers names.
    let with_uid = [("X-Remote-User", "alice"), ("X-Remote-Uid", "1234")];
    let server = Server::builder().data_dir(dir.path()).start().unwrap();
    let proxy = client_as(&server, &pki, "front-proxy-client", &with_uid).await;
    assert!(common::whoami(&proxy).await.unwrap().get("uid").is_none());
    drop(server);
    let server = Server::builder()
        .data_dir(dir.path())
        .arg("--requestheader-uid-headers=X-Remote-Uid")
        .start()
        .unwrap();
    let proxy = client_as(&server, &pki, "front-proxy-client", &with_uid).await;
    assert_eq!(common::whoami(&proxy).await.unwrap()["uid"], "1234");
    let data = authentication_configmap(&server).await;
    assert_eq!(data["requestheader-uid-headers"], r#"["X-Remote-Uid"]"#);
}

/// Poll the `Available` condition until it has `status` (and `reason`).
async fn available(api: &Api<DynamicObject>, name: &str, status: &str, reason: &str) -> Value {
    let obj = eventually(api, name, |o| {
        o.and_then(|o| o.data["status"]["conditions"].as_array().cloned())
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Available" && c["status"] == status && c["reason"] == reason)
    })
    .await
    .unwrap();
    obj.data["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Available")
        .cloned()
        .unwrap()
}

/// GET `path` with `accept`, as JSON.
async fn get_json(client: &kube::Client, path: &str, accept: &str) -> Value {
    let req = http::Request::get(path)
        .header("accept", accept)
        .body(vec![])
        .unwrap();
    serde_json::from_str(&client.request_text(req).await.unwrap()).unwrap()
}

/// The first version of `group` in aggregated discovery (`/apis`, v2).
async fn aggregated_version(client: &kube::Client, group: &str) -> Value {
    let list = get_json(
        client,
        "/apis",
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
    )
    .await;
    let found = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == group)
        .unwrap_or_else(|| panic!("{group} not in aggregated discovery"));
    found["versions"][0].clone()
}

/// A second kubext plays the extension API server: it serves the group through a
/// CRD and trusts the aggregator's front-proxy CA for client certificates.
#[tokio::test]
async fn availability_follows_service_endpoints_and_the_backend() {
    let aggregator_dir = tempfile::tempdir().unwrap();
    let aggregator = Server::builder()
        .data_dir(aggregator_dir.path())
        .start()
        .unwrap();
    let front_proxy_ca = aggregator_dir.path().join("pki/front-proxy-ca.crt");
    let mut backend = Server::builder()
        .arg(format!(
            "--requestheader-client-ca-file={}",
            front_proxy_ca.display()
        ))
        .log_filter("info,kubext_server::chain=debug")
        .start()
        .unwrap();
    backend.apply(
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: flunders.wardle.example.com}
spec:
  group: wardle.example.com
  scope: Namespaced
  names: {plural: flunders, kind: Flunder}
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              reference: {type: string, description: The flunder's reference.}
"#,
    );
    backend.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/flunders.wardle.example.com",
    ]);

    let api = apiservices(aggregator.client().await.unwrap());
    aggregator.apply(
        r#"
apiVersion: v1
kind: Namespace
metadata: {name: wardle}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1alpha1.wardle.example.com}
spec:
  group: wardle.example.com
  version: v1alpha1
  groupPriorityMinimum: 19000
  versionPriority: 15
  insecureSkipTLSVerify: true
  service: {namespace: wardle, name: api}
"#,
    );
    let c = available(
        &api,
        "v1alpha1.wardle.example.com",
        "False",
        "ServiceNotFound",
    )
    .await;
    assert_eq!(c["message"], "service/api in \"wardle\" is not present");

    aggregator.apply(
        r#"
apiVersion: v1
kind: Service
metadata: {name: api, namespace: wardle}
spec:
  ports: [{name: https, port: 443, protocol: TCP}]
"#,
    );
    let c = available(
        &api,
        "v1alpha1.wardle.example.com",
        "False",
        "EndpointsNotFound",
    )
    .await;
    assert_eq!(
        c["message"],
        "cannot find endpoints for service/api in \"wardle\""
    );

    let slice = format!(
        r#"
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: api-1
  namespace: wardle
  labels: {{kubernetes.io/service-name: api}}
addressType: IPv4
ports: [{{name: https, port: {}, protocol: TCP}}]
endpoints: [{{addresses: ["127.0.0.1"], conditions: {{ready: true}}}}]
"#,
        backend.addr.port()
    );
    aggregator.apply(&slice);
    let c = available(&api, "v1alpha1.wardle.example.com", "True", "Passed").await;
    assert_eq!(c["message"], "all checks passed");
    let line = aggregator.kubectl_ok(&[
        "get",
        "apiservice",
        "v1alpha1.wardle.example.com",
        "--no-headers",
    ]);
    assert!(
        line.contains("wardle/api") && line.contains("True"),
        "{line}"
    );

    // Discovery shows the backend's group: in `/apis` ordered by priority (19000
    // puts it before every built-in group but the aggregator's own), and in
    // aggregated discovery with the backend's resources.
    let discovery_client = aggregator.client().await.unwrap();
    let apis = get_json(&discovery_client, "/apis", "application/json").await;
    let names: Vec<&str> = apis["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names[..2],
        ["apiregistration.k8s.io", "wardle.example.com"],
        "{names:?}"
    );
    let wardle = aggregated_version(&discovery_client, "wardle.example.com").await;
    assert_eq!(wardle["freshness"], "Current", "{wardle}");
    assert_eq!(wardle["resources"][0]["resource"], "flunders", "{wardle}");
    assert_eq!(wardle["resources"][0]["scope"], "Namespaced", "{wardle}");
    let listed = aggregator.kubectl_ok(&[
        "api-resources",
        "--api-group=wardle.example.com",
        "--no-headers",
    ]);
    assert!(listed.contains("flunders"), "{listed}");
    // OpenAPI: the backend's documents are merged, so kubectl explains its types
    // (v3), and the v2 document has its paths and definitions.
    let explained = aggregator.kubectl_ok(&["explain", "flunders.spec.reference"]);
    assert!(
        explained.contains("The flunder's reference."),
        "{explained}"
    );
    let v2 = get_json(&discovery_client, "/openapi/v2", "application/json").await;
    assert!(
        v2["paths"]
            .get("/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders")
            .is_some()
    );
    assert!(
        v2["definitions"]
            .get("com.example.wardle.v1alpha1.Flunder")
            .is_some()
    );

    // Requests for the group-version go through to the backend, streaming, as the
    // caller: identity headers the caller made up are replaced.
    let aggregator_client = aggregator.client().await.unwrap();
    let admin = common::whoami(&aggregator_client).await.unwrap();
    let mut spoofing = aggregator.client_config().await.unwrap();
    spoofing.headers = vec![
        ("x-remote-user".parse().unwrap(), "mallory".parse().unwrap()),
        (
            "x-remote-group".parse().unwrap(),
            "system:masters".parse().unwrap(),
        ),
    ];
    let spoofing = kube::Client::try_from(spoofing).unwrap();
    let flunders = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("wardle.example.com", "v1alpha1", "Flunder"),
        "flunders",
    );
    let via_aggregator: Api<DynamicObject> = Api::namespaced_with(spoofing, "default", &flunders);
    let on_backend: Api<DynamicObject> =
        Api::namespaced_with(backend.client().await.unwrap(), "default", &flunders);
    let flunder = |name: &str| {
        object(
            json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
                      "metadata": {"name": name}, "spec": {"reference": "x"}}),
        )
    };
    tokio::time::timeout(
        Duration::from_secs(20),
        via_aggregator.create(&PostParams::default(), &flunder("one")),
    )
    .await
    .expect("create through the proxy")
    .unwrap();
    assert!(
        on_backend.get_opt("one").await.unwrap().is_some(),
        "stored by the backend"
    );
    let created_by = backend
        .log()
        .lines()
        .find(|l| l.contains("verb=create") && l.contains("/flunders"))
        .map(String::from)
        .unwrap();
    let admin_name = admin["username"].as_str().unwrap();
    assert!(
        created_by.contains(&format!("user={admin_name}")),
        "{created_by}"
    );
    assert!(!backend.log().contains("mallory"));
    let listed = via_aggregator.list(&Default::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1);
    let mut events = futures::StreamExt::boxed(
        via_aggregator
            .watch(
                &kube::api::WatchParams::default().timeout(30),
                &listed.metadata.resource_version.unwrap(),
            )
            .await
            .unwrap(),
    );
    on_backend
        .create(&PostParams::default(), &flunder("two"))
        .await
        .unwrap();
    let event = tokio::time::timeout(
        Duration::from_secs(10),
        futures::TryStreamExt::try_next(&mut events),
    )
    .await
    .expect("the watch event arrives through the proxy")
    .unwrap();
    assert!(
        matches!(event, Some(kube::api::WatchEvent::Added(ref o)) if o.metadata.name.as_deref() == Some("two")),
        "{event:?}"
    );
    let discovery = aggregator_client
        .request_text(
            http::Request::get("/apis/wardle.example.com/v1alpha1")
                .body(vec![])
                .unwrap(),
        )
        .await
        .unwrap();
    assert!(discovery.contains("\"flunders\""), "{discovery}");

    // Verified TLS: the backend's certificate is not for api.wardle.svc.
    let ca = std::fs::read(backend.data_dir.join("pki/ca.crt")).unwrap();
    let ca = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, ca);
    let patch = json!({"spec": {"insecureSkipTLSVerify": false, "caBundle": ca}});
    api.patch(
        "v1alpha1.wardle.example.com",
        &Default::default(),
        &kube::api::Patch::Merge(&patch),
    )
    .await
    .unwrap();
    let c = available(
        &api,
        "v1alpha1.wardle.example.com",
        "False",
        "FailedDiscoveryCheck",
    )
    .await;
    let message = c["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!(
            "failing or missing response from https://127.0.0.1:{}/apis/wardle.example.com/v1alpha1: tls: ",
            backend.addr.port()
        )),
        "{message}"
    );
    assert!(message.contains("certificate"), "{message}");

    // Back to insecure, then the backend goes away.
    let patch = json!({"spec": {"insecureSkipTLSVerify": true, "caBundle": null}});
    api.patch(
        "v1alpha1.wardle.example.com",
        &Default::default(),
        &kube::api::Patch::Merge(&patch),
    )
    .await
    .unwrap();
    available(&api, "v1alpha1.wardle.example.com", "True", "Passed").await;
    backend.kill9();
    // A check in flight when the backend dies may end in a TLS EOF; the checks
    // after it find nothing listening.
    let gone = eventually(&api, "v1alpha1.wardle.example.com", |o| {
        o.and_then(|o| o.data["status"]["conditions"].as_array().cloned())
            .into_iter()
            .flatten()
            .any(|c| {
                c["type"] == "Available"
                    && c["status"] == "False"
                    && c["reason"] == "FailedDiscoveryCheck"
                    && c["message"]
                        .as_str()
                        .is_some_and(|m| m.contains("dial tcp"))
            })
    })
    .await;
    assert!(
        gone.is_some(),
        "the backend's absence is reported as a dial error"
    );
    // Discovery keeps the last document, marked stale, and never waits for the
    // backend. (client-go leaves stale group-versions out, so kubectl carries on
    // with everything else and no error.)
    let wardle = aggregated_version(&discovery_client, "wardle.example.com").await;
    assert_eq!(wardle["freshness"], "Stale", "{wardle}");
    assert_eq!(wardle["resources"][0]["resource"], "flunders", "{wardle}");
    let legacy = get_json(
        &discovery_client,
        "/apis/wardle.example.com/v1alpha1",
        "application/json",
    )
    .await;
    assert_eq!(legacy["resources"][0]["name"], "flunders", "{legacy}");
    let listed = aggregator.kubectl_ok(&["api-resources", "--no-headers"]);
    assert!(listed.contains("configmaps"), "{listed}");
    let out = aggregator.kubectl(&[
        "get",
        "--raw",
        "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("ServiceUnavailable"), "{err}");
    // Requests for an unavailable group-version get a 503 at once.
    let req = http::Request::get("/apis/wardle.example.com/v1alpha1/namespaces/default/flunders")
        .body(kube::client::Body::empty())
        .unwrap();
    let resp = aggregator_client.send(req).await.unwrap();
    assert_eq!(resp.status().as_u16(), 503);
    let bytes = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    let status: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(status["message"], "service unavailable");
    assert_eq!(status["reason"], "ServiceUnavailable");
    // Everything else keeps working.
    aggregator.kubectl_ok(&["get", "configmaps", "-A"]);
}

#[tokio::test]
async fn a_backend_that_never_answers_is_unavailable_and_harms_nothing_else() {
    let server = Server::builder().start().unwrap();
    // Accepts connections (the kernel does) and never says a word. Registered
    // through a v1 Endpoints object rather than an EndpointSlice.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    server.apply(&format!(
        r#"
apiVersion: v1
kind: Service
metadata: {{name: silent, namespace: default}}
spec: {{ports: [{{port: 443, protocol: TCP}}]}}
---
apiVersion: v1
kind: Endpoints
metadata: {{name: silent, namespace: default}}
subsets: [{{addresses: [{{ip: 127.0.0.1}}], ports: [{{port: {}, protocol: TCP}}]}}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {{name: v1.silent.example.com}}
spec:
  group: silent.example.com
  version: v1
  groupPriorityMinimum: 1000
  versionPriority: 15
  insecureSkipTLSVerify: true
  service: {{namespace: default, name: silent}}
"#,
        silent.local_addr().unwrap().port()
    ));
    let api = apiservices(server.client().await.unwrap());
    let c = available(
        &api,
        "v1.silent.example.com",
        "False",
        "FailedDiscoveryCheck",
    )
    .await;
    assert!(c["message"].as_str().unwrap().contains("timed out"), "{c}");
    // Its group-version is refused at once; everything else answers.
    let out = server.kubectl(&["get", "--raw", "/apis/silent.example.com/v1/foos"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("ServiceUnavailable"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    server.kubectl_ok(&["get", "configmaps", "-A"]);
    let listed = server.kubectl_ok(&["api-resources"]);
    assert!(listed.contains("apiservices"), "{listed}");
    // Namespace deletion does not wait for it (upstream's would block).
    server.kubectl_ok(&["create", "namespace", "scratch"]);
    server.kubectl_ok(&["delete", "namespace", "scratch", "--timeout=20s"]);
    drop(silent);
}
