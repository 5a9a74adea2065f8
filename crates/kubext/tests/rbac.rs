//! RBAC, impersonation and anonymous access, black-box: default deny, grants
//! through each kind of binding, ClusterRole aggregation of a CRD's role into
//! `view`, escalation refused unless held or granted `escalate`/`bind`,
//! impersonation only with the `impersonate` verb, anonymous requests seeing
//! only what `system:public-info-viewer` allows. Messages are upstream's.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::{Value, json};
use testkit::Server;

/// A server with token-file users alice (group devs) and bob.
fn server_with_users(extra_args: &[&str]) -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(
        &tokens,
        "alice-token,alice,1001,\"devs\"\nbob-token,bob,1002\n",
    )
    .unwrap();
    let mut builder = Server::builder().arg(format!("--token-auth-file={}", tokens.display()));
    for arg in extra_args {
        builder = builder.arg(*arg);
    }
    (builder.start().unwrap(), dir)
}

/// A kube-rs client of `server` with `token` only (`None`: no credentials).
async fn client_with(server: &Server, token: Option<&str>) -> kube::Client {
    let mut config = server.client_config().await.unwrap();
    config.auth_info = kube::config::AuthInfo {
        token: token.map(|t| t.to_string().into()),
        ..Default::default()
    };
    kube::Client::try_from(config).unwrap()
}

/// `(status code, body bytes)` of a request with extra `headers`.
async fn send_raw(
    client: &kube::Client,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> (u16, Vec<u8>) {
    let mut req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req.body(kube::client::Body::from(body)).unwrap();
    let resp = client.send(req).await.unwrap();
    let code = resp.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    (code, bytes.to_vec())
}

/// `(status code, body)` of a request; a body that is not JSON as a string.
async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let bytes = body
        .map(|b| serde_json::to_vec(&b).unwrap())
        .unwrap_or_default();
    let (code, bytes) = send_raw(client, method, path, &[], bytes).await;
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    (code, body)
}

/// kubectl's stderr, for a command that must fail.
fn kubectl_err(server: &Server, args: &[&str]) -> String {
    let out = server.kubectl(args);
    assert!(
        !out.status.success(),
        "kubectl {} succeeded",
        args.join(" ")
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Poll `check` until it holds (RBAC follows changes within milliseconds).
async fn eventually(what: &str, mut check: impl AsyncFnMut() -> bool) {
    for _ in 0..500 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{what} did not happen within 10 s");
}

#[tokio::test]
async fn service_account_tokens_are_denied_until_a_binding_grants() {
    let server = Server::builder().start().unwrap();
    let token = server.kubectl_ok(&["create", "token", "default"]);
    let sa = client_with(&server, Some(token.trim())).await;

    let (code, body) = send(&sa, "GET", "/api/v1/namespaces/default/secrets", None).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        r#"secrets is forbidden: User "system:serviceaccount:default:default" cannot list resource "secrets" in API group "" in the namespace "default""#
    );
    assert_eq!(body["details"], json!({"kind": "secrets"}));
    let (code, body) = send(
        &sa,
        "DELETE",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/anything",
        None,
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        r#"customresourcedefinitions.apiextensions.k8s.io "anything" is forbidden: User "system:serviceaccount:default:default" cannot delete resource "customresourcedefinitions" in API group "apiextensions.k8s.io" at the cluster scope"#
    );
    let (code, _) = send(
        &sa,
        "PATCH",
        "/apis/apiregistration.k8s.io/v1/apiservices/v1.",
        Some(json!({"spec": {"service": {"namespace": "default", "name": "evil"}}})),
    )
    .await;
    assert_eq!(code, 403);
    // Discovery and its own identity are open to every authenticated user.
    assert_eq!(send(&sa, "GET", "/apis", None).await.0, 200);

    // A RoleBinding to a Role grants in its namespace only.
    server.kubectl_ok(&[
        "create",
        "role",
        "secret-reader",
        "--verb=get,list",
        "--resource=secrets",
        "-n",
        "default",
    ]);
    server.kubectl_ok(&[
        "create",
        "rolebinding",
        "sa-reads-secrets",
        "--role=secret-reader",
        "--serviceaccount=default:default",
        "-n",
        "default",
    ]);
    eventually("the RoleBinding grants", async || {
        send(&sa, "GET", "/api/v1/namespaces/default/secrets", None)
            .await
            .0
            == 200
    })
    .await;
    assert_eq!(
        send(&sa, "GET", "/api/v1/namespaces/kube-system/secrets", None)
            .await
            .0,
        403
    );
    // A ClusterRoleBinding grants everywhere.
    server.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "sa-views",
        "--clusterrole=view",
        "--serviceaccount=default:default",
    ]);
    eventually("the ClusterRoleBinding grants", async || {
        send(
            &sa,
            "GET",
            "/api/v1/namespaces/kube-system/configmaps",
            None,
        )
        .await
        .0 == 200
    })
    .await;
    // view does not include secrets.
    assert_eq!(
        send(&sa, "GET", "/api/v1/namespaces/kube-system/secrets", None)
            .await
            .0,
        403
    );
}

#[test]
fn a_rolebinding_to_a_clusterrole_grants_in_its_namespace() {
    let server = Server::builder().start().unwrap();
    server.kubectl_ok(&["create", "namespace", "team"]);
    server.kubectl_ok(&[
        "create",
        "rolebinding",
        "alice-edit",
        "--clusterrole=edit",
        "--user=alice",
        "-n",
        "team",
    ]);
    server.wait_until_allowed(&["create", "configmaps", "-n", "team", "--as", "alice"]);
    server.kubectl_ok(&["create", "configmap", "mine", "-n", "team", "--as", "alice"]);
    let err = kubectl_err(
        &server,
        &[
            "create",
            "configmap",
            "mine",
            "-n",
            "default",
            "--as",
            "alice",
        ],
    );
    assert!(
        err.contains(r#"configmaps is forbidden: User "alice" cannot create resource "configmaps" in API group "" in the namespace "default""#),
        "{err}"
    );
    // Table output of bindings: upstream's columns.
    let wide = server.kubectl_ok(&[
        "get",
        "rolebinding",
        "alice-edit",
        "-n",
        "team",
        "-o",
        "wide",
    ]);
    let header: Vec<&str> = wide.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    );
    assert!(wide.contains("ClusterRole/edit"), "{wide}");
    // Role references cannot change.
    let err = kubectl_err(
        &server,
        &[
            "patch",
            "rolebinding",
            "alice-edit",
            "-n",
            "team",
            "--type=merge",
            "-p",
            r#"{"roleRef":{"name":"view"}}"#,
        ],
    );
    assert!(
        err.contains(r#"roleRef: Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"ClusterRole", Name:"view"}: cannot change roleRef"#),
        "{err}"
    );
}

#[test]
fn a_crds_aggregated_role_extends_view() {
    let server = Server::builder().start().unwrap();
    server.apply(
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: crontabs.stable.example.com}
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: crontab-viewer
  labels: {rbac.authorization.k8s.io/aggregate-to-view: "true"}
rules:
- {apiGroups: [stable.example.com], resources: [crontabs], verbs: [get, list, watch]}
"#,
    );
    server.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "carol-views",
        "--clusterrole=view",
        "--user=carol",
    ]);
    server.wait_until_allowed(&[
        "list",
        "crontabs.stable.example.com",
        "-n",
        "default",
        "--as",
        "carol",
    ]);
    let view = server.kubectl_ok(&["get", "clusterrole", "view", "-o", "json"]);
    let view: Value = serde_json::from_str(&view).unwrap();
    assert!(
        view["rules"].as_array().unwrap().contains(
            &json!({"apiGroups": ["stable.example.com"], "resources": ["crontabs"], "verbs": ["get", "list", "watch"]})
        ),
        "{view}"
    );
    // edit and admin aggregate view in turn.
    server.wait_until_allowed(&[
        "list",
        "crontabs.stable.example.com",
        "--as",
        "dave",
        "--as-group",
        "system:masters",
    ]);
    let admin: Value =
        serde_json::from_str(&server.kubectl_ok(&["get", "clusterrole", "admin", "-o", "json"]))
            .unwrap();
    let has_crontabs = |role: &Value| {
        role["rules"]
            .as_array()
            .is_some_and(|r| r.iter().any(|r| r["resources"] == json!(["crontabs"])))
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut admin = admin;
    while !has_crontabs(&admin) {
        assert!(
            std::time::Instant::now() < deadline,
            "admin never aggregated view's rules"
        );
        std::thread::sleep(Duration::from_millis(50));
        admin = serde_json::from_str(&server.kubectl_ok(&[
            "get",
            "clusterrole",
            "admin",
            "-o",
            "json",
        ]))
        .unwrap();
    }
}

#[test]
fn escalation_is_refused_unless_held_or_granted_escalate_and_bind() {
    let server = Server::builder().start().unwrap();
    // alice may manage roles and bindings in default, and read configmaps.
    server.kubectl_ok(&[
        "create",
        "role",
        "rbac-manager",
        "--verb=create,update,get,list",
        "--resource=roles,rolebindings",
        "-n",
        "default",
    ]);
    server.kubectl_ok(&[
        "create",
        "role",
        "cm-reader",
        "--verb=get,list",
        "--resource=configmaps",
        "-n",
        "default",
    ]);
    for role in ["rbac-manager", "cm-reader"] {
        server.kubectl_ok(&[
            "create",
            "rolebinding",
            &format!("alice-{role}"),
            &format!("--role={role}"),
            "--user=alice",
            "-n",
            "default",
        ]);
    }
    server.wait_until_allowed(&["create", "roles", "-n", "default", "--as", "alice"]);
    server.wait_until_allowed(&["list", "configmaps", "-n", "default", "--as", "alice"]);

    // What alice holds, she may grant.
    server.kubectl_ok(&[
        "create",
        "role",
        "cm-get",
        "--verb=get",
        "--resource=configmaps",
        "-n",
        "default",
        "--as",
        "alice",
    ]);
    // What she does not, she may not.
    let err = kubectl_err(
        &server,
        &[
            "create",
            "role",
            "secrets-too",
            "--verb=get,list",
            "--resource=secrets,configmaps",
            "-n",
            "default",
            "--as",
            "alice",
        ],
    );
    assert!(
        err.contains(
            "roles.rbac.authorization.k8s.io \"secrets-too\" is forbidden: user \"alice\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"list\"]}"
        ),
        "{err}"
    );
    // Nor bind a role whose permissions she lacks.
    let err = kubectl_err(
        &server,
        &[
            "create",
            "rolebinding",
            "bob-admin",
            "--clusterrole=admin",
            "--user=bob",
            "-n",
            "default",
            "--as",
            "alice",
        ],
    );
    assert!(
        err.contains("rolebindings.rbac.authorization.k8s.io \"bob-admin\" is forbidden: user \"alice\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:"),
        "{err}"
    );
    // A binding of what she holds is fine.
    server.kubectl_ok(&[
        "create",
        "rolebinding",
        "bob-cm",
        "--role=cm-get",
        "--user=bob",
        "-n",
        "default",
        "--as",
        "alice",
    ]);

    // `escalate` on roles and `bind` on a named ClusterRole lift the checks.
    server.apply(
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: escalator, namespace: default}
rules:
- {apiGroups: [rbac.authorization.k8s.io], resources: [roles], verbs: [escalate]}
- {apiGroups: [rbac.authorization.k8s.io], resources: [clusterroles], verbs: [bind], resourceNames: [admin]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-escalator, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: escalator}
subjects: [{kind: User, name: alice, apiGroup: rbac.authorization.k8s.io}]
"#,
    );
    server.wait_until_allowed(&["escalate", "roles", "-n", "default", "--as", "alice"]);
    server.kubectl_ok(&[
        "create",
        "role",
        "secrets-too",
        "--verb=get,list",
        "--resource=secrets",
        "-n",
        "default",
        "--as",
        "alice",
    ]);
    server.wait_until_allowed(&[
        "bind",
        "clusterroles/admin",
        "-n",
        "default",
        "--as",
        "alice",
    ]);
    server.kubectl_ok(&[
        "create",
        "rolebinding",
        "bob-admin",
        "--clusterrole=admin",
        "--user=bob",
        "-n",
        "default",
        "--as",
        "alice",
    ]);
}

#[tokio::test]
async fn impersonation_needs_the_impersonate_verb() {
    let (server, _dir) = server_with_users(&[]);
    let alice = client_with(&server, Some("alice-token")).await;
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let whoami = |client: kube::Client, headers: Vec<(&'static str, &'static str)>| {
        let body = serde_json::to_vec(&review).unwrap();
        async move {
            let path = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
            let (code, bytes) = send_raw(&client, "POST", path, &headers, body).await;
            (code, String::from_utf8_lossy(&bytes).into_owned())
        }
    };
    let (code, body) = whoami(alice.clone(), vec![("Impersonate-User", "bob")]).await;
    assert_eq!(code, 403, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        body["message"],
        r#"users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope"#
    );
    assert_eq!(body["details"], json!({"name": "bob", "kind": "users"}));
    // A group without a user is an internal error, in plain text (upstream's).
    let (code, body) = whoami(alice.clone(), vec![("Impersonate-Group", "some-group")]).await;
    assert_eq!(code, 500);
    assert_eq!(
        body,
        "Internal Server Error: \"/apis/authentication.k8s.io/v1/selfsubjectreviews\": requested [{Group  some-group    }] without impersonating a user\n"
    );

    server.apply(
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: impersonate-bob}
rules:
- {apiGroups: [""], resources: [users], verbs: [impersonate], resourceNames: [bob]}
- {apiGroups: [""], resources: [groups], verbs: [impersonate], resourceNames: [testers]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: alice-impersonates-bob}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: impersonate-bob}
subjects: [{kind: User, name: alice, apiGroup: rbac.authorization.k8s.io}]
"#,
    );
    eventually("alice may impersonate bob", async || {
        whoami(alice.clone(), vec![("Impersonate-User", "bob")])
            .await
            .0
            == 201
    })
    .await;
    let (_, body) = whoami(
        alice.clone(),
        vec![
            ("Impersonate-User", "bob"),
            ("Impersonate-Group", "testers"),
        ],
    )
    .await;
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        body["status"]["userInfo"],
        json!({"username": "bob", "groups": ["testers", "system:authenticated"]})
    );
    // Only the named user and group.
    let (code, _) = whoami(alice.clone(), vec![("Impersonate-User", "carol")]).await;
    assert_eq!(code, 403);
    let (code, body) = whoami(
        alice,
        vec![
            ("Impersonate-User", "bob"),
            ("Impersonate-Group", "system:masters"),
        ],
    )
    .await;
    assert_eq!(code, 403, "{body}");
    // kubectl --as / --as-group go the same way.
    let out = server.kubectl_ok(&[
        "auth",
        "whoami",
        "--as",
        "bob",
        "--as-group",
        "devs",
        "-o",
        "jsonpath={.status.userInfo.groups}",
    ]);
    assert_eq!(out, r#"["devs","system:authenticated"]"#);
}

#[tokio::test]
async fn anonymous_requests_see_only_public_information() {
    let (server, _dir) = server_with_users(&[]);
    let anonymous = client_with(&server, None).await;
    for path in ["/healthz", "/livez", "/readyz", "/version"] {
        let (code, body) = send(&anonymous, "GET", path, None).await;
        assert_eq!(code, 200, "{path}: {body}");
    }
    let (code, body) = send(&anonymous, "GET", "/api", None).await;
    assert_eq!(code, 403);
    assert_eq!(
        body["message"],
        r#"forbidden: User "system:anonymous" cannot get path "/api""#
    );
    assert_eq!(body["details"], json!({}));
    let (code, body) = send(&anonymous, "GET", "/api/v1/namespaces", None).await;
    assert_eq!(code, 403);
    assert_eq!(
        body["message"],
        r#"namespaces is forbidden: User "system:anonymous" cannot list resource "namespaces" in API group "" at the cluster scope"#
    );
    // A token nobody issued is 401 everywhere, /healthz included.
    let stranger = client_with(&server, Some("nobody-issued-this")).await;
    let (code, body) = send(&stranger, "GET", "/healthz", None).await;
    assert_eq!(code, 401);
    assert_eq!(
        body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": "Unauthorized", "reason": "Unauthorized", "code": 401})
    );

    // With --anonymous-auth=false, no credentials are 401 too.
    let (closed, _dir) = server_with_users(&["--anonymous-auth=false"]);
    let anonymous = client_with(&closed, None).await;
    assert_eq!(send(&anonymous, "GET", "/healthz", None).await.0, 401);
}

#[tokio::test]
async fn always_allow_lets_everyone_do_everything() {
    let (server, _dir) = server_with_users(&["--authorization-mode=AlwaysAllow"]);
    let bob = client_with(&server, Some("bob-token")).await;
    assert_eq!(
        send(&bob, "GET", "/api/v1/namespaces/kube-system/secrets", None)
            .await
            .0,
        200
    );
    let anonymous = client_with(&server, None).await;
    assert_eq!(
        send(&anonymous, "GET", "/api/v1/namespaces", None).await.0,
        200
    );
    let rules = server.kubectl_ok(&["auth", "can-i", "--list", "--as", "bob"]);
    assert!(rules.lines().any(|l| l.starts_with("*.*")), "{rules}");
}

#[test]
fn kubectl_auth_reconcile_and_can_i_list() {
    let server = Server::builder().start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("rbac.yaml");
    std::fs::write(
        &manifest,
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: cm-reader, namespace: default}
rules:
- {apiGroups: [""], resources: [configmaps], verbs: [get, list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: erin-reads, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: cm-reader}
subjects: [{kind: User, name: erin, apiGroup: rbac.authorization.k8s.io}]
"#,
    )
    .unwrap();
    let out = server.kubectl_ok(&["auth", "reconcile", "-f", manifest.to_str().unwrap()]);
    assert!(
        out.contains("role.rbac.authorization.k8s.io/cm-reader reconciled"),
        "{out}"
    );
    server.wait_until_allowed(&["list", "configmaps", "-n", "default", "--as", "erin"]);
    let list = server.kubectl_ok(&["auth", "can-i", "--list", "-n", "default", "--as", "erin"]);
    let row = list
        .lines()
        .find(|l| l.starts_with("configmaps "))
        .unwrap_or_else(|| panic!("{list}"));
    assert!(row.contains("[get list]"), "{row}");
    // The bootstrap policy lets every authenticated user review itself.
    assert!(
        list.lines()
            .any(|l| l.starts_with("selfsubjectaccessreviews.authorization.k8s.io")),
        "{list}"
    );
    // kubectl create clusterrole / clusterrolebinding.
    server.kubectl_ok(&[
        "create",
        "clusterrole",
        "ns-reader",
        "--verb=get,list",
        "--resource=namespaces",
    ]);
    server.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "erin-ns",
        "--clusterrole=ns-reader",
        "--user=erin",
    ]);
    server.wait_until_allowed(&["list", "namespaces", "--as", "erin"]);
    let created =
        server.kubectl_ok(&["get", "clusterrole", "ns-reader", "-o", "jsonpath={.rules}"]);
    assert_eq!(
        created,
        r#"[{"apiGroups":[""],"resources":["namespaces"],"verbs":["get","list"]}]"#
    );
    let delete = server.kubectl(&[
        "auth",
        "can-i",
        "delete",
        "configmaps",
        "-n",
        "default",
        "--as",
        "erin",
    ]);
    assert_eq!(String::from_utf8_lossy(&delete.stdout).trim(), "no");
}

#[test]
fn the_bootstrap_policy_is_reconciled_at_start_unless_protected() {
    let dir = tempfile::tempdir().unwrap();
    let start = || {
        Server::builder()
            .storage(testkit::Storage::Embedded)
            .data_dir(dir.path())
            .start()
            .unwrap()
    };
    let mut server = start();
    // Take a rule away from two bootstrap roles; protect one of them.
    for role in ["system:basic-user", "system:discovery"] {
        server.kubectl_ok(&[
            "patch",
            "clusterrole",
            role,
            "--type=json",
            "-p",
            r#"[{"op":"remove","path":"/rules/0"}]"#,
        ]);
    }
    server.kubectl_ok(&[
        "annotate",
        "--overwrite",
        "clusterrole",
        "system:discovery",
        "rbac.authorization.kubernetes.io/autoupdate=false",
    ]);
    // And a binding, which comes back whole.
    server.kubectl_ok(&["delete", "clusterrolebinding", "system:public-info-viewer"]);
    server.terminate(Duration::from_secs(10)).unwrap();

    let server = start();
    let rules = |role: &str| -> Value {
        serde_json::from_str(&server.kubectl_ok(&[
            "get",
            "clusterrole",
            role,
            "-o",
            "jsonpath={.rules}",
        ]))
        .unwrap()
    };
    assert!(
        rules("system:basic-user")
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["resources"]
                == json!([
                    "selfsubjectaccessreviews",
                    "selfsubjectrulesreviews",
                    "selfsubjectreviews"
                ])
                || r["resources"]
                    .as_array()
                    .is_some_and(|res| res.contains(&json!("selfsubjectaccessreviews")))),
        "the missing rule is back"
    );
    let discovery = rules("system:discovery");
    assert!(
        !discovery
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["nonResourceURLs"]
                .as_array()
                .is_some_and(|u| u.contains(&json!("/api")))),
        "a protected role is left alone: {discovery}"
    );
    server.kubectl_ok(&["get", "clusterrolebinding", "system:public-info-viewer"]);
}
