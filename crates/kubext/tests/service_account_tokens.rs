//! Legacy service-account token Secrets, as the Kubernetes docs create them
//! ("Manually create a long-lived API token for a ServiceAccount"): the token
//! controller fills a `kubernetes.io/service-account-token` Secret (token, CA,
//! namespace, the account's uid), the token authenticates as the account (kube-rs
//! and kubectl) under RBAC, labels its Secret with its last use, and stops
//! authenticating when the Secret goes or its token changes; Secrets naming a
//! missing account are deleted, as are an account's tokens when it goes. With two
//! replicas on one etcd, only the leader writes the token and both accept it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use base64::Engine;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use kube::api::{Api, DeleteParams, ListParams};
use serde_json::{Value, json};
use testkit::{Etcd, Server, Storage};

const TOKEN_TYPE: &str = "kubernetes.io/service-account-token";

/// The docs' Secret for ServiceAccount `account`.
fn token_secret(name: &str, account: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  annotations:\n    kubernetes.io/service-account.name: {account}\ntype: {TOKEN_TYPE}\n"
    )
}

/// A kube-rs client of `server` that authenticates with `token` only.
async fn client_with_token(server: &Server, token: &str) -> kube::Client {
    let mut config = server.client_config().await.unwrap();
    config.auth_info = kube::config::AuthInfo {
        token: Some(token.to_string().into()),
        ..Default::default()
    };
    kube::Client::try_from(config).unwrap()
}

/// Poll `attempt` every 100 ms for up to 10 s.
async fn eventually<T, F: std::future::Future<Output = Option<T>>>(
    what: &str,
    mut attempt: impl FnMut() -> F,
) -> T {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(done) = attempt().await {
            return done;
        }
        assert!(Instant::now() < deadline, "{what} within 10 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn data(secret: &Secret, key: &str) -> Option<String> {
    let bytes = secret.data.as_ref()?.get(key)?;
    Some(String::from_utf8(bytes.0.clone()).unwrap())
}

/// The Secret `name` once the controller put a token in it, and the token.
async fn populated(secrets: &Api<Secret>, name: &str) -> (Secret, String) {
    eventually(&format!("a token in {name}"), || async {
        let secret = secrets.get(name).await.ok()?;
        let token = data(&secret, "token")?;
        Some((secret, token))
    })
    .await
}

fn claims(token: &str) -> (Value, Value) {
    let part = |i: usize| {
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token.split('.').nth(i).unwrap())
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    };
    (part(0), part(1))
}

async fn gone(secrets: &Api<Secret>, name: &str) {
    eventually(&format!("{name} deleted"), || async {
        secrets.get_opt(name).await.unwrap().is_none().then_some(())
    })
    .await;
}

/// Listing pods as the token's user: the answer's status code.
async fn list_pods(client: &kube::Client) -> u16 {
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(client.clone(), "default");
    match pods.list(&ListParams::default()).await {
        Ok(_) => 200,
        Err(kube::Error::Api(status)) => status.code,
        Err(e) => panic!("{e}"),
    }
}

#[tokio::test]
async fn a_token_secret_authenticates_as_its_service_account_until_deleted() {
    let server = Server::builder().start().unwrap();
    let admin = server.client().await.unwrap();
    let secrets: Api<Secret> = Api::namespaced(admin.clone(), "default");
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), "default");
    server.kubectl_ok(&["create", "serviceaccount", "build-robot"]);
    server.apply(&token_secret("build-robot-secret", "build-robot"));
    let (secret, token) = populated(&secrets, "build-robot-secret").await;

    // What kube-controller-manager writes: the token, the cluster CA, the
    // namespace, the account's uid.
    let account = accounts.get("build-robot").await.unwrap();
    let account_uid = account.metadata.uid.clone().unwrap();
    let ca = std::fs::read_to_string(server.data_dir.join("pki/ca.crt")).unwrap();
    assert_eq!(data(&secret, "ca.crt").as_deref(), Some(ca.as_str()));
    assert_eq!(data(&secret, "namespace").as_deref(), Some("default"));
    let annotations = secret.metadata.annotations.clone().unwrap();
    assert_eq!(
        annotations["kubernetes.io/service-account.uid"],
        account_uid
    );
    assert_eq!(
        annotations["kubernetes.io/service-account.name"],
        "build-robot"
    );
    let (header, payload) = claims(&token);
    assert_eq!(header["alg"], "ES256");
    assert_eq!(
        payload,
        json!({
            "iss": "kubernetes/serviceaccount",
            "kubernetes.io/serviceaccount/namespace": "default",
            "kubernetes.io/serviceaccount/secret.name": "build-robot-secret",
            "kubernetes.io/serviceaccount/service-account.name": "build-robot",
            "kubernetes.io/serviceaccount/service-account.uid": account_uid,
            "sub": "system:serviceaccount:default:build-robot",
        })
    );
    // `kubectl describe secret` shows the three keys.
    let described = server.kubectl_ok(&["describe", "secret", "build-robot-secret"]);
    for line in ["ca.crt:", "namespace:  7 bytes", "token:"] {
        assert!(described.contains(line), "{described}");
    }

    // `kubectl auth whoami` as the token.
    let as_robot = client_with_token(&server, &token).await;
    let user = common::whoami(&as_robot).await.unwrap();
    assert_eq!(
        user["username"],
        "system:serviceaccount:default:build-robot"
    );
    assert_eq!(user["uid"], account_uid.as_str());
    assert_eq!(
        user["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ])
    );
    assert!(user.get("extra").is_none(), "{user}");
    let kubeconfig = server.data_dir.join("robot.kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: k, cluster: {{server: 'https://{}', certificate-authority: '{}'}}}}]\nusers: [{{name: robot, user: {{token: '{token}'}}}}]\ncontexts: [{{name: k, context: {{cluster: k, user: robot}}}}]\ncurrent-context: k\n",
            server.addr,
            server.data_dir.join("pki/ca.crt").display()
        ),
    )
    .unwrap();
    let out =
        std::process::Command::new(std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".into()))
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args([
                "auth",
                "whoami",
                "-o",
                "jsonpath={.status.userInfo.username}",
            ])
            .output()
            .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "system:serviceaccount:default:build-robot",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // RBAC applies to it: forbidden until a RoleBinding grants it.
    assert_eq!(list_pods(&as_robot).await, 403);
    server.kubectl_ok(&[
        "create",
        "role",
        "pod-reader",
        "--verb=list",
        "--resource=pods",
    ]);
    server.kubectl_ok(&[
        "create",
        "rolebinding",
        "build-robot-reads-pods",
        "--role=pod-reader",
        "--serviceaccount=default:build-robot",
    ]);
    eventually("the binding to apply", || async {
        (list_pods(&as_robot).await == 200).then_some(())
    })
    .await;

    // Its use is recorded on the Secret (kube-apiserver's last-used label).
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    // Upstream leaves a label of today or tomorrow (clocks a day apart) alone.
    let (today, tomorrow) = (civil_date(now), civil_date(now + 86_400));
    let labelled = eventually("the last-used label", || async {
        let secret = secrets.get("build-robot-secret").await.ok()?;
        let label = secret
            .metadata
            .labels
            .as_ref()?
            .get("kubernetes.io/legacy-token-last-used")?
            .clone();
        Some((secret, label))
    })
    .await;
    let (labelled, label) = labelled;
    assert!(
        label == today || label == tomorrow,
        "{label} (today {today})"
    );
    let managers: Vec<String> = labelled
        .metadata
        .managed_fields
        .unwrap()
        .into_iter()
        .filter_map(|m| m.manager)
        .collect();
    assert!(
        managers.iter().any(|m| m == "kube-apiserver"),
        "{managers:?}"
    );
    let tracking = server.kubectl_ok(&[
        "get",
        "configmap",
        "-n",
        "kube-system",
        "kube-apiserver-legacy-service-account-token-tracking",
        "-o",
        "jsonpath={.data.since}",
    ]);
    assert_eq!(tracking.len(), "2026-01-01".len(), "{tracking}");

    // TokenReview: for the API's audiences, not for another.
    let review = |audiences: Value| {
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
               "spec": {"token": token, "audiences": audiences}})
    };
    let reviewed = server.kubectl_with_stdin(
        &["create", "-f", "-", "-o", "json"],
        Some(&review(json!([])).to_string()),
    );
    let reviewed: Value = serde_json::from_slice(&reviewed.stdout).unwrap();
    assert_eq!(reviewed["status"]["authenticated"], true);
    assert_eq!(
        reviewed["status"]["user"]["username"],
        "system:serviceaccount:default:build-robot"
    );
    let reviewed = server.kubectl_with_stdin(
        &["create", "-f", "-", "-o", "json"],
        Some(&review(json!(["vault"])).to_string()),
    );
    let reviewed: Value = serde_json::from_slice(&reviewed.stdout).unwrap();
    assert_ne!(reviewed["status"]["authenticated"], true, "{reviewed}");

    // Deleting the Secret revokes the token as soon as this server's cache has
    // seen it go (upstream: up to 10 s later, its token cache's lifetime): 401,
    // upstream's body.
    secrets
        .delete("build-robot-secret", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the token refused", || async {
        (common::whoami(&as_robot).await == Err(401)).then_some(())
    })
    .await;
    let (code, body) = common::send_body(
        &as_robot,
        "GET",
        "/api/v1/namespaces/default/pods",
        "application/json",
        &json!(null),
    )
    .await;
    assert_eq!(code, 401);
    assert_eq!(
        common::json_of(&body),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "Unauthorized", "reason": "Unauthorized", "code": 401})
    );
}

/// `YYYY-MM-DD` of a Unix time (UTC).
fn civil_date(unix: i64) -> String {
    // Howard Hinnant's days-to-civil.
    let z = unix.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

#[tokio::test]
async fn a_changed_token_stops_authenticating_and_is_not_replaced() {
    let server = Server::builder().start().unwrap();
    let admin = server.client().await.unwrap();
    let secrets: Api<Secret> = Api::namespaced(admin.clone(), "default");
    server.kubectl_ok(&["create", "serviceaccount", "robot"]);
    server.apply(&token_secret("robot-token", "robot"));
    let (_, token) = populated(&secrets, "robot-token").await;
    let as_robot = client_with_token(&server, &token).await;
    assert!(common::whoami(&as_robot).await.is_ok());

    // Someone else's token in the Secret: the old one no longer matches, and the
    // controller leaves a Secret that has a token alone.
    let other = base64::engine::general_purpose::STANDARD.encode("not-a-jwt");
    server.kubectl_ok(&[
        "patch",
        "secret",
        "robot-token",
        "-p",
        &format!(r#"{{"data":{{"token":"{other}"}}}}"#),
    ]);
    eventually("the old token refused", || async {
        (common::whoami(&as_robot).await == Err(401)).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let secret = secrets.get("robot-token").await.unwrap();
    assert_eq!(data(&secret, "token").as_deref(), Some("not-a-jwt"));

    // Emptied, it gets a new token (and the CA, if it was taken away).
    server.kubectl_ok(&[
        "patch",
        "secret",
        "robot-token",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/data/token"},{"op":"remove","path":"/data/ca.crt"}]"#,
    ]);
    let (secret, renewed) = populated(&secrets, "robot-token").await;
    assert!(data(&secret, "ca.crt").is_some());
    assert!(
        common::whoami(&client_with_token(&server, &renewed).await)
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn tokens_of_missing_or_deleted_service_accounts_are_deleted() {
    let server = Server::builder().start().unwrap();
    let admin = server.client().await.unwrap();
    let secrets: Api<Secret> = Api::namespaced(admin.clone(), "default");
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), "default");

    // The account's name is required, as upstream validates it.
    let out = server.kubectl_with_stdin(
        &["create", "-f", "-"],
        Some(&format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: nameless\ntype: {TOKEN_TYPE}\n"
        )),
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        r#"The Secret "nameless" is invalid: metadata.annotations[kubernetes.io/service-account.name]: Required value"#
    );

    // A Secret naming an account that does not exist is deleted.
    server.apply(&token_secret("ghost-token", "ghost"));
    gone(&secrets, "ghost-token").await;

    // An account's tokens go with it; other Secrets stay.
    server.kubectl_ok(&["create", "serviceaccount", "robot"]);
    server.kubectl_ok(&["create", "serviceaccount", "other"]);
    server.apply(&token_secret("robot-token-1", "robot"));
    server.apply(&token_secret("robot-token-2", "robot"));
    server.apply(&token_secret("other-token", "other"));
    server.apply(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: robot-notes\n  annotations:\n    kubernetes.io/service-account.name: robot\ntype: Opaque\nstringData: {k: v}\n",
    );
    let (_, token) = populated(&secrets, "robot-token-1").await;
    populated(&secrets, "robot-token-2").await;
    populated(&secrets, "other-token").await;
    let as_robot = client_with_token(&server, &token).await;
    assert!(common::whoami(&as_robot).await.is_ok());
    accounts
        .delete("robot", &DeleteParams::default())
        .await
        .unwrap();
    gone(&secrets, "robot-token-1").await;
    gone(&secrets, "robot-token-2").await;
    assert!(secrets.get_opt("other-token").await.unwrap().is_some());
    assert!(secrets.get_opt("robot-notes").await.unwrap().is_some());
    // A new account by that name is not the old one.
    server.kubectl_ok(&["create", "serviceaccount", "robot"]);
    eventually("the old account's token refused", || async {
        (common::whoami(&as_robot).await == Err(401)).then_some(())
    })
    .await;

    // A Secret annotated with another uid than the account's is deleted.
    server.apply(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: stale-token\n  annotations:\n    kubernetes.io/service-account.name: other\n    kubernetes.io/service-account.uid: 00000000-0000-0000-0000-000000000000\ntype: kubernetes.io/service-account-token\n",
    );
    gone(&secrets, "stale-token").await;

    // A deleted token Secret leaves its account's `secrets` list.
    server.kubectl_ok(&[
        "patch",
        "serviceaccount",
        "other",
        "-p",
        r#"{"secrets":[{"name":"other-token"},{"name":"unrelated"}]}"#,
    ]);
    secrets
        .delete("other-token", &DeleteParams::default())
        .await
        .unwrap();
    eventually("other-token dropped from the account", || async {
        let account = accounts.get("other").await.ok()?;
        let names: Vec<String> = account
            .secrets
            .unwrap_or_default()
            .into_iter()
            .filter_map(|r| r.name)
            .collect();
        (names == ["unrelated"]).then_some(())
    })
    .await;
}

#[tokio::test]
async fn with_two_replicas_the_leader_writes_the_token_once_and_both_accept_it() {
    let etcd = Etcd::start().unwrap();
    let a = Server::builder()
        .storage(Storage::Etcd(etcd.endpoint()))
        .start()
        .unwrap();
    // The replicas must share the service-account key (as they would share a
    // PKI); each keeps its own CA here.
    let key = a.data_dir.join("pki/sa.key");
    let b = Server::builder()
        .storage(Storage::Etcd(etcd.endpoint()))
        .arg("--service-account-signing-key-file")
        .arg(key.display().to_string())
        .start()
        .unwrap();
    let (admin_a, admin_b) = (a.client().await.unwrap(), b.client().await.unwrap());
    let secrets: Api<Secret> = Api::namespaced(admin_b.clone(), "default");
    a.kubectl_ok(&["create", "serviceaccount", "build-robot"]);
    b.apply(&token_secret("build-robot-secret", "build-robot"));
    let (secret, token) = populated(&secrets, "build-robot-secret").await;

    // Written once: one update by the controller, and nothing after it.
    let writes = |secret: &Secret| {
        secret
            .metadata
            .managed_fields
            .iter()
            .flatten()
            .filter(|m| m.manager.as_deref() == Some("kubext-tokens-controller"))
            .count()
    };
    assert_eq!(writes(&secret), 1);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let later: Api<Secret> = Api::namespaced(admin_a.clone(), "default");
    let later = later.get("build-robot-secret").await.unwrap();
    assert_eq!(
        later.metadata.resource_version, secret.metadata.resource_version,
        "the Secret changed after it was populated"
    );
    assert_eq!(data(&later, "token").as_deref(), Some(token.as_str()));

    // Either replica accepts it.
    for server in [&a, &b] {
        let user = common::whoami(&client_with_token(server, &token).await)
            .await
            .unwrap();
        assert_eq!(
            user["username"],
            "system:serviceaccount:default:build-robot"
        );
    }
    // Deleted through one replica, refused by both (once each has seen it).
    secrets
        .delete("build-robot-secret", &DeleteParams::default())
        .await
        .unwrap();
    for server in [&a, &b] {
        let client = client_with_token(server, &token).await;
        eventually("the token refused", || async {
            (common::whoami(&client).await == Err(401)).then_some(())
        })
        .await;
    }
}
