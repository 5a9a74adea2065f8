//! Built-in kinds where kubext answered differently from kube-apiserver 1.33
//! (issue 30), each against upstream's values (`pkg/apis/*/validation`, the
//! registry's stores and strategies, `/version`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{json_of, send_body};
use serde_json::{Value, json};
use testkit::Server;

/// POST `body` to `uri`; the answer's code and JSON.
async fn post(client: &kube::Client, uri: &str, body: Value) -> (u16, Value) {
    let (code, bytes) = send_body(client, "POST", uri, "application/json", &body).await;
    (code, json_of(&bytes))
}

/// The causes of a 422, as `field: message` pairs.
fn causes(status: &Value) -> Vec<(String, String)> {
    status["details"]["causes"]
        .as_array()
        .unwrap_or_else(|| panic!("no causes: {status}"))
        .iter()
        .map(|c| {
            (
                c["field"].as_str().unwrap_or("").to_string(),
                c["message"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn job(restart_policy: &str) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
           "spec": {"template": {"spec": {"restartPolicy": restart_policy,
               "containers": [{"name": "c", "image": "busybox"}]}}}})
}

/// `validateJobSpec` (1.33): a template's restartPolicy of Always is "Required
/// value: valid values: OnFailure, Never", reported once, on create and on an
/// update (whose other error, the immutable template, comes with it once).
#[tokio::test]
async fn job_restart_policy_always_is_refused_once() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let jobs = "/apis/batch/v1/namespaces/default/jobs";
    let (code, status) = post(&client, jobs, job("Always")).await;
    assert_eq!(code, 422, "{status}");
    let required = (
        "spec.template.spec.restartPolicy".to_string(),
        "Required value: valid values: \"OnFailure\", \"Never\"".to_string(),
    );
    assert_eq!(
        status["message"],
        "Job.batch \"j\" is invalid: spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""
    );
    assert_eq!(causes(&status), std::slice::from_ref(&required));

    let (code, created) = post(&client, jobs, job("Never")).await;
    assert_eq!(code, 201, "{created}");
    let mut changed = created.clone();
    changed["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
    let (code, body) = send_body(
        &client,
        "PUT",
        &format!("{jobs}/j"),
        "application/json",
        &changed,
    )
    .await;
    assert_eq!(code, 422);
    let causes = causes(&json_of(&body));
    assert!(causes.contains(&required), "{causes:?}");
    let mut unique = causes.clone();
    unique.dedup();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        causes.len(),
        "an error reported twice: {causes:?}"
    );
}

/// `ValidatePersistentVolumeClaimSpec`: at least one access mode.
#[tokio::test]
async fn persistent_volume_claims_need_an_access_mode() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let (code, status) = post(
        &client,
        "/api/v1/namespaces/default/persistentvolumeclaims",
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c"},
               "spec": {"resources": {"requests": {"storage": "1Gi"}}}}),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "PersistentVolumeClaim \"c\" is invalid: spec.accessModes: Required value: at least 1 access mode is required"
    );
    let (code, status) = post(
        &client,
        "/api/v1/namespaces/default/persistentvolumeclaims",
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c"},
               "spec": {"accessModes": ["ReadWriteOnce"]}}),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "PersistentVolumeClaim \"c\" is invalid: spec.resources[storage]: Required value"
    );
}

/// `ValidateRuntimeClassUpdate`: the handler is immutable.
#[tokio::test]
async fn runtime_class_handler_is_immutable() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let uri = "/apis/node.k8s.io/v1/runtimeclasses";
    let (code, created) = post(
        &client,
        uri,
        json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
               "metadata": {"name": "gvisor"}, "handler": "runsc"}),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    let mut changed = created.clone();
    changed["handler"] = json!("kata");
    let (code, body) = send_body(
        &client,
        "PUT",
        &format!("{uri}/gvisor"),
        "application/json",
        &changed,
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        json_of(&body)["message"],
        "RuntimeClass.node.k8s.io \"gvisor\" is invalid: handler: Invalid value: \"kata\": field is immutable"
    );
}

/// A built-in kind's whole body is decoded into its Go type, so metadata of
/// the wrong type is a 400 naming `ObjectMeta.metadata.<field>`.
#[tokio::test]
async fn built_in_metadata_of_the_wrong_type_is_a_decode_error() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let (code, status) = post(
        &client,
        "/api/v1/namespaces/default/configmaps",
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "c", "annotations": {"a": true}}}),
    )
    .await;
    assert_eq!(code, 400, "{status}");
    assert_eq!(
        status["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.annotations of type string"
    );
    // Not an object at all: Go names the kind's field (kube-apiserver 1.37.2's text).
    let (code, status) = post(
        &client,
        "/api/v1/namespaces/default/configmaps",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": "c"}),
    )
    .await;
    assert_eq!(code, 400, "{status}");
    assert_eq!(
        status["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot unmarshal string into Go struct field ConfigMap.metadata of type v1.ObjectMeta"
    );
}

/// A quantity Go's decoder refuses (kube-apiserver 1.37.2 side by side, its
/// answers below): a create or replace is a 400 decode error, a patch a 422
/// on the field `patch` showing what was decoded (the patched object's JSON,
/// or a strategic merge patch as Go prints a map), and nothing is stored.
#[tokio::test]
async fn quantities_go_cannot_decode_are_refused() {
    const REFUSED: &str = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    for limit in [json!("nonsense"), json!(true), json!("")] {
        let (code, status) = post(
            &client,
            "/api/v1/namespaces/default/pods",
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                   "spec": {"containers": [{"name": "c", "image": "i",
                       "resources": {"limits": {"cpu": limit}}}]}}),
        )
        .await;
        assert_eq!(code, 400, "{status}");
        assert_eq!(
            status["message"],
            format!("Pod in version \"v1\" cannot be handled as a Pod: {REFUSED}")
        );
    }

    let quotas = "/api/v1/namespaces/default/resourcequotas";
    let (code, created) = post(
        &client,
        quotas,
        json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
               "spec": {"hard": {"pods": "10"}}}),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    let quota = format!("{quotas}/q");
    let mut replaced = created.clone();
    replaced["spec"]["hard"]["pods"] = json!("bad");
    let (code, bytes) = send_body(&client, "PUT", &quota, "application/json", &replaced).await;
    assert_eq!(code, 400);
    assert_eq!(
        json_of(&bytes)["message"],
        format!("ResourceQuota in version \"v1\" cannot be handled as a ResourceQuota: {REFUSED}")
    );

    let (code, bytes) = send_body(
        &client,
        "PATCH",
        &quota,
        "application/strategic-merge-patch+json",
        &json!({"spec": {"hard": {"pods": "nonsense", "cpu": 1.5,
                                  "x": [1, "a", true, null, {"b": 2}]}}}),
    )
    .await;
    assert_eq!(code, 422);
    let shown = r#"map[spec:map[hard:map[cpu:1.5 pods:nonsense x:[1 a true <nil> map[b:2]]]]]"#;
    assert_eq!(
        json_of(&bytes),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": format!(" \"\" is invalid: patch: Invalid value: \"{shown}\": {REFUSED}"),
               "reason": "Invalid",
               "details": {"causes": [{"reason": "FieldValueInvalid",
                   "message": format!("Invalid value: \"{shown}\": {REFUSED}"), "field": "patch"}]},
               "code": 422})
    );

    // A merge patch shows the patched object as Go writes it: the object
    // as read, its quantities replaced.
    let (_, current) = send_body(&client, "GET", &quota, "application/json", &Value::Null).await;
    let current = std::str::from_utf8(&current).unwrap().trim_end();
    let patched = current.replace(
        r#""hard":{"pods":"10"}"#,
        r#""hard":{"cpu":"bad","pods":"5"}"#,
    );
    assert_ne!(patched, current);
    let (code, bytes) = send_body(
        &client,
        "PATCH",
        &quota,
        "application/merge-patch+json",
        &json!({"spec": {"hard": {"cpu": "bad", "pods": "5"}}}),
    )
    .await;
    assert_eq!(code, 422);
    let quoted = serde_json::to_string(&patched).unwrap();
    assert_eq!(
        json_of(&bytes)["message"],
        format!(" \"\" is invalid: patch: Invalid value: {quoted}: {REFUSED}")
    );

    let (_, after) = send_body(&client, "GET", &quota, "application/json", &Value::Null).await;
    assert_eq!(json_of(&after)["spec"], json!({"hard": {"pods": "10"}}));
}

/// Times in metadata are Go's `metav1.Time`: kube-apiserver 1.37.2 answers
/// a managedFields `time` of `2024-01-01T00:00:00.5+02:00` with
/// `2023-12-31T22:00:00Z` (UTC, whole seconds), and refuses a time Go's
/// parser refuses with its message.
#[tokio::test]
async fn metadata_times_are_written_back_as_go_writes_them() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let entry = |time: &str| {
        json!([{"manager": "other", "operation": "Update", "apiVersion": "v1", "time": time,
                "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}}])
    };
    let (code, created) = post(
        &client,
        "/api/v1/namespaces/default/configmaps",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "times"},
               "data": {"a": "1"}}),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    // An update's managedFields, when valid, replace the live ones.
    let mut update = created.clone();
    update["metadata"]["managedFields"] = entry("2024-01-01T00:00:00.5+02:00");
    update["data"]["b"] = json!("2");
    let (code, body) = send_body(
        &client,
        "PUT",
        "/api/v1/namespaces/default/configmaps/times?fieldManager=test",
        "application/json",
        &update,
    )
    .await;
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    let updated = json_of(&body);
    let other = updated["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == "other")
        .cloned();
    assert_eq!(
        other.map(|e| e["time"].clone()),
        Some(json!("2023-12-31T22:00:00Z")),
        "{updated}"
    );
    let (code, status) = post(
        &client,
        "/api/v1/namespaces/default/configmaps",
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "bad-time", "managedFields": entry("x")}}),
    )
    .await;
    assert_eq!(code, 400, "{status}");
    assert_eq!(
        status["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: parsing time \"x\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"x\" as \"2006\""
    );
}

/// `/version` names the release whose API is served (1.37), with the
/// compatibility-version fields kube-apiserver 1.37.2 fills.
#[tokio::test]
async fn version_matches_the_served_release() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let (code, body) = send_body(&client, "GET", "/version", "", &json!(null)).await;
    assert_eq!(code, 200);
    let version = json_of(&body);
    assert_eq!(
        (&version["major"], &version["minor"]),
        (&json!("1"), &json!("37"))
    );
    assert_eq!(version["emulationMinor"], "37");
    assert_eq!(version["minCompatibilityMinor"], "36");
    assert!(
        version["gitVersion"]
            .as_str()
            .unwrap()
            .starts_with("v1.37."),
        "{version}"
    );
    let kubectl = server.kubectl_ok(&["version", "-o", "json"]);
    let kubectl: Value = serde_json::from_str(&kubectl).unwrap();
    assert_eq!(kubectl["serverVersion"]["minor"], "37");
}

/// A field selector's answer: the names listed, or the refusal's code and message.
async fn select(
    client: &kube::Client,
    collection: &str,
    selector: &str,
) -> Result<Vec<String>, (u16, String)> {
    let uri = format!(
        "{collection}?fieldSelector={}",
        selector.replace('=', "%3D")
    );
    let (code, body) = send_body(client, "GET", &uri, "", &json!(null)).await;
    let answer = json_of(&body);
    if code != 200 {
        return Err((code, answer["message"].as_str().unwrap_or("").to_string()));
    }
    Ok(answer["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
        .collect())
}

/// Each kind's field label conversion function and `GetAttrs`
/// (`pkg/apis/*/v1/conversion.go`, the registry strategies): kube-rs's
/// `cordon` and a `spec.unschedulable` selector, pods by node and phase (and
/// the legacy `spec.host`), Jobs' own refusal, kinds without a conversion
/// function, and events.k8s.io's names for the stored core Event's fields.
#[tokio::test]
async fn field_selectors_of_built_in_kinds_as_upstream() {
    use k8s_openapi::api::core::v1::Node;
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    for name in ["n1", "n2"] {
        let (code, _) = post(
            &client,
            "/api/v1/nodes",
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}),
        )
        .await;
        assert_eq!(code, 201);
    }
    let nodes: kube::Api<Node> = kube::Api::all(client.clone());
    nodes.cordon("n1").await.unwrap();
    assert_eq!(
        select(&client, "/api/v1/nodes", "spec.unschedulable=true")
            .await
            .unwrap(),
        ["n1"]
    );
    assert_eq!(
        select(&client, "/api/v1/nodes", "spec.unschedulable=false")
            .await
            .unwrap(),
        ["n2"]
    );
    assert_eq!(
        select(&client, "/api/v1/nodes", "metadata.namespace=")
            .await
            .unwrap_err(),
        (
            400,
            "field label not supported: metadata.namespace".to_string()
        )
    );

    for (name, node) in [("bound", "n2"), ("free", "")] {
        let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
        if !node.is_empty() {
            pod["spec"]["nodeName"] = json!(node);
        }
        let (code, body) = post(&client, "/api/v1/namespaces/default/pods", pod).await;
        assert_eq!(code, 201, "{body}");
    }
    let pods = "/api/v1/namespaces/default/pods";
    assert_eq!(
        select(&client, pods, "spec.nodeName=n2").await.unwrap(),
        ["bound"]
    );
    assert_eq!(
        select(&client, pods, "spec.host=n2").await.unwrap(),
        ["bound"]
    );
    assert_eq!(
        select(&client, pods, "spec.nodeName=").await.unwrap(),
        ["free"]
    );
    assert_eq!(
        select(&client, pods, "status.phase=Pending")
            .await
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        select(&client, pods, "spec.hostNetwork=false")
            .await
            .unwrap()
            .len(),
        2
    );

    assert_eq!(
        select(
            &client,
            "/apis/batch/v1/namespaces/default/jobs",
            "spec.bogus=1"
        )
        .await
        .unwrap_err(),
        (
            400,
            "field label \"spec.bogus\" not supported for Job".to_string()
        )
    );
    assert_eq!(
        select(&client, "/apis/apps/v1/namespaces/default/replicasets", "status.replicas=0").await.unwrap_err(),
        (400, "\"status.replicas\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"".to_string())
    );
    // A cluster-scoped kind without a conversion function accepts
    // metadata.namespace, which is empty on every object.
    assert!(
        select(
            &client,
            "/apis/storage.k8s.io/v1/storageclasses",
            "metadata.namespace="
        )
        .await
        .is_ok()
    );

    let (code, body) = post(
        &client,
        "/apis/events.k8s.io/v1/namespaces/default/events",
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
               "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "example.com/c",
               "reportingInstance": "i", "action": "Made", "reason": "Made", "type": "Normal",
               "regarding": {"kind": "Pod", "namespace": "default", "name": "bound"}}),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let events = "/apis/events.k8s.io/v1/namespaces/default/events";
    assert_eq!(
        select(&client, events, "regarding.kind=Pod").await.unwrap(),
        ["e"]
    );
    assert_eq!(
        select(&client, events, "reportingController=example.com/c")
            .await
            .unwrap(),
        ["e"]
    );
    assert_eq!(
        select(
            &client,
            "/api/v1/namespaces/default/events",
            "source=example.com/c"
        )
        .await
        .unwrap(),
        ["e"]
    );
    assert_eq!(
        select(&client, events, "source=x").await.unwrap_err(),
        (400, "field label not supported: source".to_string())
    );
}

/// A PKCS#10 request for `cn`, base64 as `spec.request` carries it.
fn certificate_request(cn: &str) -> String {
    use base64::Engine;
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, cn);
    let pem = params.serialize_request(&key).unwrap().pem().unwrap();
    base64::engine::general_purpose::STANDARD.encode(pem)
}

/// CertificateSigningRequests as upstream's strategy and admission plugins
/// handle them: the requester recorded whatever the body claims, `kubectl
/// certificate approve` through `/approval`, and approval refused to a user
/// who may update `/approval` but not `approve` the signer.
#[tokio::test]
async fn certificate_signing_requests_record_the_requester_and_are_approved() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let me = common::whoami(&client).await.unwrap();
    let csrs = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
    let csr = |name: &str| {
        json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
               "metadata": {"name": name},
               "spec": {"request": certificate_request("alice"),
                        "signerName": "example.com/signer", "usages": ["client auth"],
                        "username": "mallory", "groups": ["system:masters"]},
               "status": {"conditions": [{"type": "Approved", "status": "True"}]}})
    };
    let (code, created) = post(&client, csrs, csr("one")).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["spec"]["username"], me["username"]);
    assert_eq!(created["spec"]["groups"], me["groups"]);
    assert_eq!(created["status"], json!({}));

    let out = server.kubectl_ok(&["certificate", "approve", "one"]);
    assert!(out.contains("approved"), "{out}");
    let approved = server.kubectl_ok(&["get", "csr", "one", "-o", "json"]);
    let approved: Value = serde_json::from_str(&approved).unwrap();
    let condition = &approved["status"]["conditions"][0];
    assert_eq!(condition["type"], "Approved");
    assert_eq!(condition["reason"], "KubectlApprove");
    assert!(condition["lastTransitionTime"].is_string(), "{condition}");

    // bob may update /approval but not approve example.com/ signers.
    server.apply(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: csr-approver}\n\
         rules:\n- {apiGroups: [certificates.k8s.io], resources: [certificatesigningrequests, certificatesigningrequests/approval], verbs: [get, list, update]}\n\
         ---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: bob-approves}\n\
         roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: csr-approver}\n\
         subjects:\n- {apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}\n",
    );
    let (code, _) = post(&client, csrs, csr("two")).await;
    assert_eq!(code, 201);
    server.wait_until_allowed(&["update", "certificatesigningrequests/approval", "--as=bob"]);
    let out = server.kubectl(&["certificate", "approve", "two", "--as=bob"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("certificatesigningrequests.certificates.k8s.io \"two\" is forbidden: user not permitted to approve requests with signerName \"example.com/signer\""),
        "{stderr}"
    );
    server.apply(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: example-signer}\n\
         rules:\n- {apiGroups: [certificates.k8s.io], resources: [signers], resourceNames: [example.com/*], verbs: [approve]}\n\
         ---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: bob-signer}\n\
         roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: example-signer}\n\
         subjects:\n- {apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}\n",
    );
    // The policy is rebuilt shortly after a change.
    testkit::eventually("bob approves", || {
        server
            .kubectl(&["certificate", "approve", "two", "--as=bob"])
            .status
            .success()
            .then_some(())
    });

    // Discovery lists the subresource as upstream's does.
    let (_, body) = send_body(
        &client,
        "GET",
        "/apis/certificates.k8s.io/v1",
        "",
        &json!(null),
    )
    .await;
    let resources = json_of(&body)["resources"].clone();
    let approval = resources
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "certificatesigningrequests/approval")
        .unwrap_or_else(|| panic!("{resources}"));
    assert_eq!(approval["verbs"], json!(["get", "patch", "update"]));
}

/// `pods/ephemeralcontainers` (upstream's `EphemeralContainersStrategy`):
/// kube-rs's `patch_ephemeral_containers` and `kubectl debug` add containers,
/// `ValidatePodEphemeralContainersUpdate` refuses removing one or setting what
/// an ephemeral container may not have, and the pod's other updates still work.
#[tokio::test]
async fn ephemeral_containers_are_added_through_their_subresource() {
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{Patch, PatchParams, PostParams};
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let pods: kube::Api<Pod> = kube::Api::namespaced(client.clone(), "default");
    let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}}))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let patched = pods
        .patch_ephemeral_containers(
            "p",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"ephemeralContainers": [
                {"name": "debugger", "image": "busybox", "targetContainerName": "c"}]}})),
        )
        .await
        .unwrap();
    let ephemeral = patched.spec.unwrap().ephemeral_containers.unwrap();
    assert_eq!(ephemeral[0].name, "debugger");
    assert_eq!(
        ephemeral[0].termination_message_policy.as_deref(),
        Some("File")
    );

    let out = server.kubectl_ok(&["debug", "p", "--image=busybox", "-c", "second"]);
    assert!(!out.contains("error"), "{out}");
    let pod = pods.get("p").await.unwrap();
    let names: Vec<String> = pod
        .spec
        .as_ref()
        .unwrap()
        .ephemeral_containers
        .as_ref()
        .unwrap()
        .iter()
        .map(|c| c.name.clone())
        .collect();
    assert_eq!(names, ["debugger", "second"]);

    let uri = "/api/v1/namespaces/default/pods/p/ephemeralcontainers";
    let mut removed = serde_json::to_value(&pod).unwrap();
    removed["spec"]["ephemeralContainers"] = json!([removed["spec"]["ephemeralContainers"][1]]);
    let (code, body) = send_body(&client, "PUT", uri, "application/json", &removed).await;
    assert_eq!(code, 422);
    assert_eq!(
        causes(&json_of(&body)),
        [(
            "spec.ephemeralContainers".to_string(),
            "Forbidden: existing ephemeral containers \"debugger\" may not be removed\n"
                .to_string()
        )]
    );
    let mut with_ports = serde_json::to_value(&pod).unwrap();
    with_ports["spec"]["ephemeralContainers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "third", "image": "busybox", "ports": [{"containerPort": 80}]}));
    let (code, body) = send_body(&client, "PUT", uri, "application/json", &with_ports).await;
    assert_eq!(code, 422);
    assert_eq!(
        causes(&json_of(&body)),
        [(
            "spec.ephemeralContainers[2].ports".to_string(),
            "Forbidden: cannot be set for an Ephemeral Container".to_string()
        )]
    );

    // A pod with ephemeral containers takes ordinary updates.
    pods.patch(
        "p",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"debugged": "yes"}}})),
    )
    .await
    .unwrap();
}

/// Go's encoding of zero values (issue 30): what kubectl reads back carries the
/// fields kube-apiserver writes although the request left them out, and so do
/// the create's managedFields.
#[tokio::test]
async fn objects_carry_the_zero_values_go_writes() {
    let server = Server::builder().start().unwrap();
    server.kubectl_ok(&["create", "deployment", "web", "--image=nginx"]);
    let deployment: Value = serde_json::from_str(&server.kubectl_ok(&[
        "get",
        "deployment",
        "web",
        "-o",
        "json",
        "--show-managed-fields",
    ]))
    .unwrap();
    let template = &deployment["spec"]["template"];
    assert_eq!(template["spec"]["containers"][0]["resources"], json!({}));
    // Since 1.35 a zero creationTimestamp is `omitzero`: a template has none
    // (kube-apiserver 1.37.2's answer, crates/protobuf/tests/data).
    assert!(
        !template["metadata"]
            .as_object()
            .unwrap()
            .contains_key("creationTimestamp"),
        "{template}"
    );
    let fields = deployment["metadata"]["managedFields"][0]["fieldsV1"].to_string();
    assert!(fields.contains(r#""f:resources":{}"#), "{fields}");

    let client = server.client().await.unwrap();
    let (code, service) = post(
        &client,
        "/api/v1/namespaces/default/services",
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
               "spec": {"ports": [{"port": 80}]}}),
    )
    .await;
    assert_eq!(code, 201, "{service}");
    assert_eq!(service["status"], json!({"loadBalancer": {}}));
}

/// kube-apiserver's API Priority and Fairness configuration producer: the
/// mandatory and suggested FlowSchemas and PriorityLevelConfigurations exist
/// from the start, with the auto-update annotation, and each FlowSchema's
/// `Dangling` condition (kubectl's MISSINGPL column) says its level exists.
#[tokio::test]
async fn flow_control_configuration_is_bootstrapped() {
    let server = Server::builder().start().unwrap();
    let names = |resource: &str| {
        let out = server.kubectl_ok(&["get", resource, "-o", "jsonpath={.items[*].metadata.name}"]);
        let mut names: Vec<String> = out.split_whitespace().map(String::from).collect();
        names.sort();
        names
    };
    assert_eq!(
        names("prioritylevelconfigurations"),
        [
            "catch-all",
            "exempt",
            "global-default",
            "leader-election",
            "node-high",
            "system",
            "workload-high",
            "workload-low"
        ]
    );
    let schemas = names("flowschemas");
    for expected in [
        "exempt",
        "catch-all",
        "probes",
        "system-leader-election",
        "global-default",
        "service-accounts",
    ] {
        assert!(
            schemas.iter().any(|s| s == expected),
            "{expected} in {schemas:?}"
        );
    }
    let exempt: Value =
        serde_json::from_str(&server.kubectl_ok(&["get", "flowschema", "exempt", "-o", "json"]))
            .unwrap();
    assert_eq!(
        exempt["metadata"]["annotations"]["apf.kubernetes.io/autoupdate-spec"],
        "true"
    );
    let table = server.kubectl_ok(&["get", "flowschema", "catch-all"]);
    let row = table.lines().nth(1).unwrap();
    assert!(row.split_whitespace().last() == Some("False"), "{table}");
}

/// Upstream's stores with `ReturnDeletedObject` answer a DELETE with the
/// deleted object (Pods, PVCs, PodTemplates, StorageClasses, …); the others
/// with a `Success` Status naming the resource.
#[tokio::test]
async fn delete_answers_the_object_where_upstreams_store_does() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let cases = [
        (
            "/api/v1/namespaces/default/pods",
            json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "x"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}),
            "Pod",
        ),
        (
            "/api/v1/namespaces/default/podtemplates",
            json!({"apiVersion": "v1", "kind": "PodTemplate",
            "metadata": {"name": "x"}, "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}),
            "PodTemplate",
        ),
        (
            "/apis/storage.k8s.io/v1/storageclasses",
            json!({"apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass", "metadata": {"name": "x"}, "provisioner": "example.com/p"}),
            "StorageClass",
        ),
        (
            "/api/v1/namespaces/default/resourcequotas",
            json!({"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": "x"}}),
            "ResourceQuota",
        ),
        (
            "/api/v1/namespaces/default/configmaps",
            json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "x"}}),
            "Status",
        ),
        (
            "/apis/apps/v1/namespaces/default/controllerrevisions",
            json!({"apiVersion": "apps/v1",
            "kind": "ControllerRevision", "metadata": {"name": "x"}, "revision": 1}),
            "Status",
        ),
    ];
    for (collection, object, answered) in cases {
        let (code, body) = post(&client, collection, object).await;
        assert_eq!(code, 201, "{body}");
        let (code, _, body) = common::send_raw(
            &client,
            "DELETE",
            &format!("{collection}/x"),
            "",
            Vec::new(),
        )
        .await;
        assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
        let answer = json_of(&body);
        assert_eq!(answer["kind"], answered, "{collection}: {answer}");
        if answered == "Status" {
            assert_eq!(answer["status"], "Success");
        } else {
            assert_eq!(answer["metadata"]["name"], "x");
        }
    }
}

/// Upstream's store wrappers around DELETE: the system PriorityClasses are
/// never deleted (403), and deleting a Job without a propagation policy warns
/// that its pods are kept.
#[tokio::test]
async fn deleting_system_priority_classes_is_refused_and_jobs_warn() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let (code, _, body) = common::send_raw(
        &client,
        "DELETE",
        "/apis/scheduling.k8s.io/v1/priorityclasses/system-node-critical",
        "",
        Vec::new(),
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(
        json_of(&body)["message"],
        "priorityclasses.scheduling.k8s.io \"system-node-critical\" is forbidden: this is a system priority class and cannot be deleted"
    );

    let jobs = "/apis/batch/v1/namespaces/default/jobs";
    for name in ["a", "b"] {
        let mut job = job("Never");
        job["metadata"]["name"] = json!(name);
        assert_eq!(post(&client, jobs, job).await.0, 201);
    }
    let warning = "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning";
    let (code, headers, _) =
        common::send_raw(&client, "DELETE", &format!("{jobs}/a"), "", Vec::new()).await;
    assert_eq!(code, 200);
    let warnings: Vec<&str> = headers
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect();
    assert_eq!(warnings, [format!("299 - \"{warning}\"")], "{headers:?}");
    let (code, headers, _) = common::send_raw(
        &client,
        "DELETE",
        &format!("{jobs}/b?propagationPolicy=Background"),
        "",
        Vec::new(),
    )
    .await;
    assert_eq!(code, 200);
    assert!(headers.get("warning").is_none(), "{headers:?}");
}
