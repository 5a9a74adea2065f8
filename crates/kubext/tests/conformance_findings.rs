//! What upstream's conformance suite (`./dev conformance`, docs/conformance.md)
//! found kubext doing differently from kube-apiserver 1.37.2, each checked
//! here on its own: the conformance run is the yardstick, these are the tests
//! that keep each fix. Expected messages are kube-apiserver 1.37.2's answers
//! to the same requests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::*;

use serde_json::{Value, json};
use testkit::Server;

async fn setup() -> (Server, kube::Client) {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    (server, client)
}

async fn send(client: &kube::Client, method: &str, uri: &str, body: &Value) -> (u16, Value) {
    let (code, bytes) = send_body(client, method, uri, "application/json", body).await;
    (code, json_of(&bytes))
}

async fn patch(client: &kube::Client, uri: &str, body: &Value) -> (u16, Value) {
    let (code, bytes) = send_body(client, "PATCH", uri, "application/merge-patch+json", body).await;
    (code, json_of(&bytes))
}

async fn get(client: &kube::Client, uri: &str) -> (u16, Value) {
    let (code, _, bytes) = get_accepting(client, uri, "application/json").await;
    (code, json_of(&bytes))
}

// table_conversion.go: "should return a 406 for a backend which does not
// implement metadata": a review has no Table form; the handler refuses in
// the words of content negotiation, not go-restful's.
#[tokio::test]
async fn reviews_have_no_table_form() {
    let (_server, client) = setup().await;
    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"nonResourceAttributes": {"path": "/", "verb": "get"}}});
    let request = http::Request::post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")
        .header("Content-Type", "application/json")
        .header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .body(serde_json::to_vec(&review).unwrap())
        .unwrap();
    let status: Value = match client.request::<Value>(request).await {
        Err(kube::Error::Api(s)) => serde_json::to_value(s).unwrap(),
        other => panic!("expected a 406, got {other:?}"),
    };
    assert_eq!(status["code"], 406);
    assert_eq!(status["reason"], "NotAcceptable");
    assert_eq!(
        status["message"],
        "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
    );
    // Objects keep theirs, and `as=Foo` on them is refused the same way.
    let (code, _, _) = get_accepting(
        &client,
        "/api/v1/namespaces/default/configmaps",
        "application/json;as=Table;v=v1;g=meta.k8s.io",
    )
    .await;
    assert_eq!(code, 200);
    let (code, _, bytes) = get_accepting(
        &client,
        "/api/v1/namespaces/default",
        "application/json;as=Foo;v=v1;g=meta.k8s.io",
    )
    .await;
    assert_eq!(code, 406);
    assert_eq!(
        json_of(&bytes)["message"],
        "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
    );
}

// ingress.go, cronjob.go, service.go, namespace.go "…status" tests: a patch of
// `/status` may change labels and annotations of built-in kinds (their status
// strategies put back only the spec); a pod's owner references stay.
#[tokio::test]
async fn status_writes_keep_metadata_changes_of_builtin_kinds() {
    let (_server, client) = setup().await;
    let ingress = json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": "web"},
        "spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}});
    let (code, _) = send(
        &client,
        "POST",
        "/apis/networking.k8s.io/v1/namespaces/default/ingresses",
        &ingress,
    )
    .await;
    assert_eq!(code, 201);
    let (code, patched) = patch(
        &client,
        "/apis/networking.k8s.io/v1/namespaces/default/ingresses/web/status",
        &json!({"metadata": {"annotations": {"patchedstatus": "true"}},
            "spec": {"defaultBackend": {"service": {"name": "other", "port": {"number": 81}}}},
            "status": {"loadBalancer": {"ingress": [{"ip": "169.1.1.1"}]}}}),
    )
    .await;
    assert_eq!(code, 200, "{patched}");
    assert_eq!(patched["metadata"]["annotations"]["patchedstatus"], "true");
    assert_eq!(
        patched["status"]["loadBalancer"]["ingress"][0]["ip"],
        "169.1.1.1"
    );
    assert_eq!(patched["spec"]["defaultBackend"]["service"]["name"], "web");

    let (code, _) = send(
        &client,
        "POST",
        "/api/v1/namespaces",
        &json!({"metadata": {"name": "status-meta"}}),
    )
    .await;
    assert_eq!(code, 201);
    let (code, patched) = patch(
        &client,
        "/api/v1/namespaces/status-meta/status",
        &json!({"metadata": {"annotations": {"patchedstatus": "true"}}}),
    )
    .await;
    assert_eq!(code, 200, "{patched}");
    assert_eq!(patched["metadata"]["annotations"]["patchedstatus"], "true");

    // A real owner: the garbage collector deletes pods of dangling ones.
    let (code, owner) = send(
        &client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &json!({"metadata": {"name": "owner"}}),
    )
    .await;
    assert_eq!(code, 201);
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "owned", "ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}]},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
    let (code, created) = send(&client, "POST", "/api/v1/namespaces/default/pods", &pod).await;
    assert_eq!(code, 201, "{created}");
    let (code, patched) = patch(
        &client,
        "/api/v1/namespaces/default/pods/owned/status",
        &json!({"metadata": {"labels": {"seen": "yes"}, "ownerReferences": []}}),
    )
    .await;
    assert_eq!(code, 200, "{patched}");
    assert_eq!(patched["metadata"]["labels"]["seen"], "yes");
    assert_eq!(
        patched["metadata"]["ownerReferences"],
        created["metadata"]["ownerReferences"]
    );
}

// service_accounts.go "should guarantee kube-root-ca.crt exist in any
// namespace": deleted, it comes back; its data changed, it is put back. The
// default ServiceAccount is recreated too (kube-controller-manager's
// serviceaccount controller).
#[tokio::test]
async fn namespace_defaults_are_put_back() {
    let (_server, client) = setup().await;
    let root_ca = "/api/v1/namespaces/default/configmaps/kube-root-ca.crt";
    let (code, original) = get(&client, root_ca).await;
    assert_eq!(code, 200);
    let (code, _) = send(&client, "DELETE", root_ca, &json!({})).await;
    assert_eq!(code, 200);
    until("kube-root-ca.crt to come back", async || {
        get(&client, root_ca).await.0 == 200
    })
    .await;
    let (code, _) = patch(&client, root_ca, &json!({"data": {"ca.crt": ""}})).await;
    assert_eq!(code, 200);
    until("kube-root-ca.crt to be repaired", async || {
        get(&client, root_ca).await.1["data"] == original["data"]
    })
    .await;
    let account = "/api/v1/namespaces/default/serviceaccounts/default";
    let (code, _) = send(&client, "DELETE", account, &json!({})).await;
    assert_eq!(code, 200);
    until("the default ServiceAccount to come back", async || {
        get(&client, account).await.0 == 200
    })
    .await;
}

// runtimeclass.go: the RuntimeClass admission plugin refuses a pod naming a
// class that does not exist (also on dry run) and copies a class's overhead.
#[tokio::test]
async fn runtime_classes_are_admitted_as_upstream() {
    let (_server, client) = setup().await;
    let pod = |class: &str| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": format!("with-{class}")},
            "spec": {"runtimeClassName": class, "containers": [{"name": "c", "image": "busybox"}]}})
    };
    let (code, status) = send(
        &client,
        "POST",
        "/api/v1/namespaces/default/pods?dryRun=All",
        &pod("missing"),
    )
    .await;
    assert_eq!(code, 403, "{status}");
    assert_eq!(
        status["message"],
        "pods \"with-missing\" is forbidden: pod rejected: RuntimeClass \"missing\" not found"
    );
    let class = json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
        "metadata": {"name": "padded"}, "handler": "runc",
        "overhead": {"podFixed": {"cpu": "250m", "memory": "120Mi"}}});
    let (code, _) = send(
        &client,
        "POST",
        "/apis/node.k8s.io/v1/runtimeclasses",
        &class,
    )
    .await;
    assert_eq!(code, 201);
    let (code, created) = send(
        &client,
        "POST",
        "/api/v1/namespaces/default/pods",
        &pod("padded"),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        created["spec"]["overhead"],
        json!({"cpu": "250m", "memory": "120Mi"})
    );
}

// sysctl.go "should reject invalid sysctls", and the host-namespace rules.
#[tokio::test]
async fn sysctls_are_validated() {
    let (_server, client) = setup().await;
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sysctl"},
        "spec": {"hostNetwork": true, "hostIPC": true, "securityContext": {"sysctls": [
            {"name": "foo-", "value": "bar"}, {"name": "kernel.shmmax", "value": "1"},
            {"name": "safe-and-unsafe", "value": "1"}, {"name": "bar..", "value": "42"},
            {"name": "a/b.c", "value": "1"}, {"name": "kernel.shmmax", "value": "2"},
            {"name": "", "value": "2"}, {"name": "net.ipv4.ip_forward", "value": "1"},
            {"name": "fs.mqueue.x", "value": "1"}]},
            "containers": [{"name": "c", "image": "busybox"}]}});
    let (code, status) = send(&client, "POST", "/api/v1/namespaces/default/pods", &pod).await;
    assert_eq!(code, 422, "{status}");
    let regex = "must have at most 253 characters and match regex ^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$";
    let causes: Vec<(String, String)> = status["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["field"].as_str().unwrap().to_string(),
                c["message"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let at = |i: usize| format!("spec.securityContext.sysctls[{i}].name");
    let ipc = "may not be specified when 'hostIPC' is true";
    let expected = vec![
        (at(0), format!("Invalid value: \"foo-\": {regex}")),
        (at(1), format!("Invalid value: \"kernel.shmmax\": {ipc}")),
        (at(3), format!("Invalid value: \"bar..\": {regex}")),
        (at(5), "Duplicate value: \"kernel.shmmax\"".to_string()),
        (at(5), format!("Invalid value: \"kernel.shmmax\": {ipc}")),
        (at(6), "Required value".to_string()),
        (
            at(7),
            "Invalid value: \"net.ipv4.ip_forward\": may not be specified when 'hostNetwork' is true"
                .to_string(),
        ),
        (at(8), format!("Invalid value: \"fs.mqueue.x\": {ipc}")),
    ];
    assert_eq!(causes, expected);
}

// service_cidrs.go: the default ServiceCIDR is there and ready; IPAddresses
// are named by canonical IPs.
#[tokio::test]
async fn service_cidrs_and_ip_addresses() {
    let (_server, client) = setup().await;
    let (code, cidr) = get(
        &client,
        "/apis/networking.k8s.io/v1/servicecidrs/kubernetes",
    )
    .await;
    assert_eq!(code, 200, "{cidr}");
    assert_eq!(cidr["spec"]["cidrs"], json!(["10.0.0.0/24"]));
    let ready = &cidr["status"]["conditions"][0];
    assert_eq!(ready["type"], "Ready");
    assert_eq!(ready["status"], "True");
    assert_eq!(ready["message"], "Kubernetes default Service CIDR is ready");
    // Its status strategy resets metadata (ResetObjectMetaForStatus), unlike
    // a Service's.
    let (code, patched) = patch(
        &client,
        "/apis/networking.k8s.io/v1/servicecidrs/kubernetes/status",
        &json!({"metadata": {"annotations": {"x": "y"}}}),
    )
    .await;
    assert_eq!(code, 200, "{patched}");
    assert_eq!(patched["metadata"].get("annotations"), None);
    let parent = json!({"group": "", "resource": "services", "namespace": "default", "name": "x"});
    for (name, error) in [
        ("fe80::42:1dff:fe84:f9e2", None),
        ("FE80::1", Some("must be in canonical form (\"fe80::1\")")),
        (
            "foo",
            Some("must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"),
        ),
        ("010.0.0.1", Some("must not have leading 0s")),
        (
            "::ffff:1.2.3.4",
            Some("must not be an IPv4-mapped IPv6 address"),
        ),
    ] {
        let body = json!({"apiVersion": "networking.k8s.io/v1", "kind": "IPAddress",
            "metadata": {"name": name}, "spec": {"parentRef": parent}});
        let (code, answer) = send(
            &client,
            "POST",
            "/apis/networking.k8s.io/v1/ipaddresses",
            &body,
        )
        .await;
        match error {
            None => assert_eq!(code, 201, "{answer}"),
            Some(error) => {
                assert_eq!(code, 422, "{answer}");
                assert_eq!(
                    answer["message"],
                    format!(
                        "IPAddress.networking.k8s.io \"{name}\" is invalid: metadata.name: Invalid value: \"{name}\": {error}"
                    )
                );
            }
        }
    }
}

// projected_podcertificate.go's MaxExpirationSeconds validations.
#[tokio::test]
async fn pod_certificate_lifetimes_are_bounded() {
    let (_server, client) = setup().await;
    for (seconds, signer, error) in [
        (
            3599,
            "example.com/spiffe",
            "if provided, maxExpirationSeconds must be >= 3600",
        ),
        (
            7_862_401,
            "example.com/spiffe",
            "if provided, maxExpirationSeconds must be <= 7862400",
        ),
        (
            86_401,
            "kubernetes.io/kube-apiserver-client",
            "if provided, maxExpirationSeconds must be <= 86400",
        ),
    ] {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "certs"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}],
                "volumes": [{"name": "tls", "projected": {"sources": [{"podCertificate": {
                    "signerName": signer, "keyType": "ECDSAP256",
                    "credentialBundlePath": "bundle.pem", "maxExpirationSeconds": seconds}}]}}]}});
        let (code, status) = send(&client, "POST", "/api/v1/namespaces/default/pods", &pod).await;
        assert_eq!(code, 422, "{status}");
        let cause = &status["details"]["causes"][0];
        assert_eq!(
            cause["field"],
            "spec.volumes[0].projected.sources[0].podCertificate.maxExpirationSeconds"
        );
        assert_eq!(
            cause["message"],
            format!("Invalid value: {seconds}: {error}")
        );
    }
}

// garbage_collector.go "should not be blocked by dependency circle": three
// pods owning each other in a circle all go when one is deleted in the
// foreground.
#[tokio::test]
async fn foreground_deletion_cycles_end() {
    let (_server, client) = setup().await;
    let pods = "/api/v1/namespaces/default/pods";
    let mut uids = Vec::new();
    for name in ["pod1", "pod2", "pod3"] {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
        let (code, created) = send(&client, "POST", pods, &pod).await;
        assert_eq!(code, 201);
        uids.push(created["metadata"]["uid"].as_str().unwrap().to_string());
    }
    // pod1 <- pod3, pod2 <- pod1, pod3 <- pod2, all blocking.
    for (dependent, owner) in [(0, 2), (1, 0), (2, 1)] {
        let reference = json!({"apiVersion": "v1", "kind": "Pod",
            "name": format!("pod{}", owner + 1), "uid": uids[owner],
            "controller": true, "blockOwnerDeletion": true});
        let (code, _) = patch(
            &client,
            &format!("{pods}/pod{}", dependent + 1),
            &json!({"metadata": {"ownerReferences": [reference]}}),
        )
        .await;
        assert_eq!(code, 200);
    }
    let (code, _) = send(
        &client,
        "DELETE",
        &format!("{pods}/pod1"),
        &json!({"propagationPolicy": "Foreground", "preconditions": {"uid": uids[0]}}),
    )
    .await;
    assert_eq!(code, 200);
    until("every pod of the circle to go", async || {
        get(&client, pods).await.1["items"]
            .as_array()
            .is_some_and(Vec::is_empty)
    })
    .await;
}

// chunking.go "should support continue listing from the last key if the
// original version has been compacted away": the 410 carries a token that
// goes on after the same key at the latest revision.
#[tokio::test]
async fn compacted_continue_tokens_continue_inconsistently() {
    let server = Server::builder()
        .arg("--etcd-compaction-interval=300ms")
        .start()
        .unwrap();
    let client = server.client().await.unwrap();
    let collection = "/api/v1/namespaces/default/configmaps";
    for i in 0..6 {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("cm-{i}")}});
        assert_eq!(send(&client, "POST", collection, &cm).await.0, 201);
    }
    let (_, first) = get(&client, &format!("{collection}?limit=2")).await;
    let token = first["metadata"]["continue"].as_str().unwrap().to_string();
    // A write moves the revision on; compaction then passes the token's.
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm-9"}});
    assert_eq!(send(&client, "POST", collection, &cm).await.0, 201);
    let page = format!("{collection}?limit=2&continue={token}");
    until("the token's revision to be compacted", async || {
        get(&client, &page).await.0 == 410
    })
    .await;
    let (_, expired) = get(&client, &page).await;
    assert_eq!(expired["reason"], "Expired");
    assert!(
        expired["message"]
            .as_str()
            .unwrap()
            .starts_with("The provided continue parameter is too old")
    );
    let inconsistent = expired["metadata"]["continue"].as_str().unwrap();
    let (code, next) = get(
        &client,
        &format!("{collection}?limit=2&continue={inconsistent}"),
    )
    .await;
    assert_eq!(code, 200, "{next}");
    let names: Vec<&str> = next["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["cm-2", "cm-3"]);
    assert_ne!(
        next["metadata"]["resourceVersion"],
        first["metadata"]["resourceVersion"]
    );
}

// limit_range.go's pods above a LimitRange's max: kube-apiserver refuses the
// pod before admission when a request exceeds its limit (422, not
// LimitRanger's 403).
#[tokio::test]
async fn requests_stay_within_limits() {
    let (_server, client) = setup().await;
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "rq"},
        "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {
            "requests": {"cpu": "600m", "memory": "2Gi", "example.com/foo": "2"},
            "limits": {"cpu": "500m", "memory": "1Gi", "example.com/foo": "2"}}}]}});
    let (code, status) = send(&client, "POST", "/api/v1/namespaces/default/pods", &pod).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "Pod \"rq\" is invalid: [spec.containers[0].resources.requests: Invalid value: \"600m\": must be less than or equal to cpu limit of 500m, spec.containers[0].resources.requests: Invalid value: \"2Gi\": must be less than or equal to memory limit of 1Gi]"
    );
}
