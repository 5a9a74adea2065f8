//! TokenReview, SelfSubjectReview and the access reviews: what extension API
//! servers delegate to, and what `kubectl auth whoami` / `can-i` use. Answers are
//! truthful for kubext today: authenticated users may do everything, anonymous nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use serde_json::{Value, json};
use testkit::Server;

async fn post(client: &kube::Client, path: &str, body: Value) -> (u16, Value) {
    let (code, bytes) = common::send_body(client, "POST", path, "application/json", &body).await;
    (code, serde_json::from_slice(&bytes).unwrap())
}

#[tokio::test]
async fn token_and_access_reviews() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "s3cret,alice,1001,\"devs,ops\"\n").unwrap();
    let server = Server::builder()
        .arg(format!("--token-auth-file={}", tokens.display()))
        .start()
        .unwrap();
    let client = server.client().await.unwrap();

    let review = |token: &str| {
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
               "spec": {"token": token, "audiences": ["https://kubext"]}})
    };
    let (code, body) = post(
        &client,
        "/apis/authentication.k8s.io/v1/tokenreviews",
        review("s3cret"),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["status"]["authenticated"], true);
    assert_eq!(body["status"]["user"]["username"], "alice");
    assert_eq!(body["status"]["user"]["uid"], "1001");
    assert_eq!(
        body["status"]["user"]["groups"],
        json!(["devs", "ops", "system:authenticated"])
    );
    assert_eq!(body["status"]["audiences"], json!(["https://kubext"]));
    let (code, body) = post(
        &client,
        "/apis/authentication.k8s.io/v1/tokenreviews",
        review("wrong"),
    )
    .await;
    assert_eq!(code, 201);
    assert!(
        body["status"]
            .get("authenticated")
            .is_none_or(|a| a == false),
        "{body}"
    );
    let (code, body) = post(
        &client,
        "/apis/authentication.k8s.io/v1/tokenreviews",
        review(""),
    )
    .await;
    assert_eq!(code, 400, "{body}");
    assert_eq!(
        body["message"],
        "token is required for TokenReview in authentication"
    );

    let sar = |spec: Value| json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec});
    let attrs = json!({"verb": "list", "group": "wardle.example.com", "resource": "flunders", "namespace": "default"});
    let (code, body) = post(
        &client,
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        sar(json!({"user": "alice", "groups": ["devs"], "resourceAttributes": attrs})),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    // RBAC grants alice nothing yet: not allowed, no reason, not denied outright.
    assert_eq!(body["status"], json!({"allowed": false}), "{body}");
    // (Applied rather than `kubectl create clusterrole`: kubectl checks the
    // resource against discovery, and flunders are not served here.)
    server.apply(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: flunder-reader}\nrules:\n- {apiGroups: [wardle.example.com], resources: [flunders], verbs: [list]}\n",
    );
    server.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "devs-read-flunders",
        "--clusterrole=flunder-reader",
        "--group=devs",
    ]);
    // RBAC follows the new binding within milliseconds.
    let mut body = json!({});
    for _ in 0..500 {
        body = post(
            &client,
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            sar(json!({"user": "alice", "groups": ["devs"], "resourceAttributes": attrs})),
        )
        .await
        .1;
        if body["status"]["allowed"] == true {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(
        body["status"],
        json!({"allowed": true, "reason": "RBAC: allowed by ClusterRoleBinding \"devs-read-flunders\" of ClusterRole \"flunder-reader\" to Group \"devs\""}),
        "{body}"
    );
    // system:masters may do anything, with no reason given (upstream's privileged group).
    let (_, body) = post(
        &client,
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        sar(json!({"user": "root", "groups": ["system:masters"], "resourceAttributes": attrs})),
    )
    .await;
    assert_eq!(body["status"], json!({"allowed": true}), "{body}");
    let (_, body) = post(
        &client,
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        sar(json!({"user": "system:anonymous", "groups": ["system:unauthenticated"], "resourceAttributes": attrs})),
    )
    .await;
    assert_eq!(body["status"]["allowed"], false);
    let (code, body) = post(
        &client,
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        sar(json!({})),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.starts_with("SubjectAccessReview.authorization.k8s.io \"\" is invalid: "),
        "{message}"
    );
    assert!(message.contains("spec.resourceAttributes: Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified"), "{message}");
    assert!(
        message.contains(
            "spec.user: Invalid value: \"\": at least one of user or group must be specified"
        ),
        "{message}"
    );

    // Reviews are create-only.
    let req = http::Request::get("/apis/authentication.k8s.io/v1/tokenreviews")
        .body(kube::client::Body::empty())
        .unwrap();
    assert_eq!(client.send(req).await.unwrap().status().as_u16(), 405);

    // Discovery lists them with the create verb only.
    let req = http::Request::get("/apis/authorization.k8s.io/v1")
        .body(vec![])
        .unwrap();
    let doc: Value = serde_json::from_str(&client.request_text(req).await.unwrap()).unwrap();
    let sars = doc["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "subjectaccessreviews")
        .unwrap();
    assert_eq!(sars["verbs"], json!(["create"]));
}

#[test]
fn kubectl_auth_whoami_and_can_i() {
    let server = Server::builder().start().unwrap();
    let whoami = server.kubectl_ok(&[
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username}",
    ]);
    assert_eq!(whoami, "kubext-admin");
    assert_eq!(
        server
            .kubectl_ok(&["auth", "can-i", "create", "configmaps"])
            .trim(),
        "yes"
    );
    let list = server.kubectl_ok(&["auth", "can-i", "--list"]);
    assert!(list.lines().any(|l| l.starts_with("*.*")), "{list}");
}
