//! The audit log, black-box: `--audit-policy-file` and `--audit-log-path` record
//! a create at RequestResponse level, a denied request with the authorization
//! decision, a watch in three stages, an impersonated request with both users,
//! a request that failed authentication as one ResponseStarted event; every
//! answer carries an `Audit-Id`; `/metrics` counts events.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use testkit::Server;

const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: []
rules:
- level: None
  nonResourceURLs: ["/healthz*", "/readyz*", "/livez*", "/openapi*", "/api", "/apis*", "/version"]
- level: RequestResponse
  resources:
  - group: ""
    resources: ["configmaps"]
- level: Metadata
"#;

/// The log's events so far. A line still being written is left out: a reader
/// may see a write in part (the file grows a page at a time).
fn events(log: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let written = text.rfind('\n').map_or("", |end| &text[..end]);
    written
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// Wait until `pick` finds `count` events (the log is written by its own thread).
fn wait_for(log: &Path, count: usize, pick: impl Fn(&Value) -> bool) -> Vec<Value> {
    for _ in 0..200 {
        let found: Vec<Value> = events(log).into_iter().filter(&pick).collect();
        if found.len() >= count {
            return found;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!(
        "fewer than {count} matching events in {}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
}

fn audited_server() -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "alice-token,alice,1001\n").unwrap();
    let server = Server::builder()
        .arg(format!("--audit-policy-file={}", policy.display()))
        .arg(format!(
            "--audit-log-path={}",
            dir.path().join("audit/audit.log").display()
        ))
        .arg(format!("--token-auth-file={}", tokens.display()))
        .start()
        .unwrap();
    (server, dir)
}

#[test]
fn a_create_is_recorded_with_its_objects() {
    let (server, dir) = audited_server();
    let log = dir.path().join("audit/audit.log");
    server.kubectl_ok(&["create", "configmap", "audited", "--from-literal=k=v"]);
    let events = wait_for(&log, 2, |e| {
        e["verb"] == "create" && e["objectRef"]["resource"] == "configmaps"
    });
    let (received, complete) = (&events[0], &events[1]);
    assert_eq!(received["stage"], "RequestReceived");
    assert_eq!(complete["stage"], "ResponseComplete");
    assert_eq!(received["auditID"], complete["auditID"]);
    assert_eq!(
        received["requestReceivedTimestamp"],
        received["stageTimestamp"]
    );
    for e in [received, complete] {
        assert_eq!(e["kind"], "Event");
        assert_eq!(e["apiVersion"], "audit.k8s.io/v1");
        assert_eq!(e["level"], "RequestResponse");
        assert_eq!(e["user"]["username"], "kubext-admin");
        assert_eq!(e["sourceIPs"], json!(["127.0.0.1"]));
        assert!(
            e["userAgent"].as_str().unwrap().starts_with("kubectl/"),
            "{e}"
        );
    }
    assert!(received.get("responseStatus").is_none(), "{received}");
    assert!(
        received.get("annotations").is_none(),
        "annotations come after RequestReceived: {received}"
    );
    assert_eq!(
        complete["objectRef"],
        json!({"resource": "configmaps", "namespace": "default", "name": "audited", "apiVersion": "v1"})
    );
    assert_eq!(
        complete["responseStatus"],
        json!({"metadata": {}, "code": 201})
    );
    assert_eq!(complete["requestObject"]["data"], json!({"k": "v"}));
    assert_eq!(complete["responseObject"]["metadata"]["name"], "audited");
    assert!(complete["responseObject"]["metadata"]["uid"].is_string());
    assert_eq!(
        complete["annotations"]["authorization.k8s.io/decision"],
        "allow"
    );
    // Microsecond timestamps, in UTC.
    let ts = complete["stageTimestamp"].as_str().unwrap();
    assert_eq!(ts.len(), "2006-01-02T15:04:05.000000Z".len(), "{ts}");
    // `&` in the URI is escaped as Go writes it.
    let raw = std::fs::read_to_string(&log).unwrap();
    assert!(raw.contains("fieldManager=kubectl-create\\u0026"), "{raw}");
}

#[tokio::test]
async fn denials_impersonation_watches_and_failed_logins_are_recorded() {
    let (server, dir) = audited_server();
    let log = dir.path().join("audit/audit.log");

    // Denied, and impersonated: both users, the decision.
    let out = server.kubectl(&["get", "secrets", "-n", "default", "--as", "bob"]);
    assert!(!out.status.success());
    let denied = wait_for(&log, 1, |e| {
        e["stage"] == "ResponseComplete" && e["objectRef"]["resource"] == "secrets"
    });
    let denied = &denied[0];
    assert_eq!(denied["level"], "Metadata");
    assert_eq!(denied["user"]["username"], "kubext-admin");
    assert_eq!(
        denied["impersonatedUser"],
        json!({"username": "bob", "groups": ["system:authenticated"]})
    );
    assert_eq!(
        denied["annotations"]["authorization.k8s.io/decision"],
        "forbid"
    );
    assert_eq!(denied["responseStatus"]["code"], 403);
    assert_eq!(denied["responseStatus"]["reason"], "Forbidden");
    assert_eq!(
        denied["responseStatus"]["message"],
        r#"secrets is forbidden: User "bob" cannot list resource "secrets" in API group "" in the namespace "default""#
    );
    assert!(
        denied.get("responseObject").is_none(),
        "Metadata level: {denied}"
    );

    // A watch: RequestReceived, ResponseStarted, ResponseComplete, no objects.
    let client = server.client().await.unwrap();
    let req = http::Request::get(
        "/api/v1/namespaces/default/serviceaccounts?watch=true&timeoutSeconds=1",
    )
    .body(Vec::new())
    .unwrap();
    let resp = client
        .send(req.map(kube::client::Body::from))
        .await
        .unwrap();
    let audit_id = resp.headers()["audit-id"].to_str().unwrap().to_string();
    let _ = http_body_util::BodyExt::collect(resp.into_body()).await;
    let watch = wait_for(&log, 3, |e| e["auditID"] == audit_id.as_str());
    let stages: Vec<&str> = watch.iter().map(|e| e["stage"].as_str().unwrap()).collect();
    assert_eq!(
        stages,
        ["RequestReceived", "ResponseStarted", "ResponseComplete"]
    );
    assert_eq!(
        watch[1]["responseStatus"],
        json!({"metadata": {}, "code": 200})
    );
    assert!(
        watch
            .iter()
            .all(|e| e.get("responseObject").is_none() && e["verb"] == "watch")
    );

    // A client's Audit-ID is kept.
    let req = http::Request::get("/api/v1/namespaces/default/serviceaccounts/default")
        .header("Audit-ID", "my-own-id")
        .body(Vec::new())
        .unwrap();
    let resp = client
        .send(req.map(kube::client::Body::from))
        .await
        .unwrap();
    assert_eq!(resp.headers()["audit-id"], "my-own-id");
    wait_for(&log, 2, |e| e["auditID"] == "my-own-id");

    // A token nobody issued: one ResponseStarted event, no user.
    let mut config = server.client_config().await.unwrap();
    config.auth_info = kube::config::AuthInfo {
        token: Some("forged".to_string().into()),
        ..Default::default()
    };
    let forged = kube::Client::try_from(config).unwrap();
    let req = http::Request::get("/api/v1/namespaces/default/configmaps")
        .body(Vec::new())
        .unwrap();
    let resp = forged
        .send(req.map(kube::client::Body::from))
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    let failed_id = resp.headers()["audit-id"].to_str().unwrap().to_string();
    let failed = wait_for(&log, 1, |e| e["auditID"] == failed_id.as_str());
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["stage"], "ResponseStarted");
    assert_eq!(failed[0]["user"], json!({}));
    assert_eq!(
        failed[0]["responseStatus"],
        json!({"metadata": {}, "status": "Failure", "message": "Unauthorized", "reason": "Unauthorized", "code": 401})
    );

    // Paths the policy leaves out are not recorded.
    server.kubectl_ok(&["get", "--raw", "/healthz"]);
    assert!(events(&log).iter().all(|e| e["requestURI"] != "/healthz"));

    // /metrics counts events and levels.
    let metrics = server.kubectl_ok(&["get", "--raw", "/metrics"]);
    let total: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("apiserver_audit_event_total "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(total >= 6, "{total}");
    assert!(
        metrics.contains("apiserver_audit_error_total{plugin=\"log\"} 0"),
        "{metrics}"
    );
    assert!(
        metrics.contains("apiserver_audit_level_total{level=\"None\"}"),
        "{metrics}"
    );
}

#[test]
fn every_answer_carries_an_audit_id_even_without_audit() {
    let server = Server::builder().start().unwrap();
    let out = server.kubectl_ok(&["get", "--raw", "/healthz", "-v=8"]);
    assert_eq!(out.trim(), "ok");
    let out = server.kubectl(&["get", "ns", "default", "-v=8"]);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(log.contains("Audit-Id:"), "{log}");
}

#[test]
fn a_bad_policy_stops_the_start_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []\n",
    )
    .unwrap();
    let err = Server::builder()
        .arg(format!("--audit-policy-file={}", policy.display()))
        .arg(format!(
            "--audit-log-path={}",
            dir.path().join("audit.log").display()
        ))
        .start()
        .err()
        .expect("the server must not start");
    assert!(
        format!("{err:#}").contains("loaded illegal policy with 0 rules"),
        "{err:#}"
    );
}
