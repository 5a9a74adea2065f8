//! PUT of a missing object, through a real kube-rs client against a running
//! kubext: the kinds whose upstream strategies allow create on update
//! (`AllowCreateOnUpdate`: Leases, Services, Endpoints, Events, LimitRanges,
//! RuntimeClasses, RBAC's four kinds) create it, as a create; the others
//! (ConfigMaps among them) answer upstream's 404, and a PATCH never creates.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::json;
use testkit::Server;

fn lease(metadata: serde_json::Value, holder: &str) -> Lease {
    serde_json::from_value(json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata,
        "spec": {"holderIdentity": holder},
    }))
    .unwrap()
}

/// The refused request's (code, reason, message).
fn refusal<T: std::fmt::Debug>(result: kube::Result<T>) -> (u16, String, String) {
    match result {
        Err(kube::Error::Api(status)) => (status.code, status.reason, status.message),
        other => panic!("not refused: {other:?}"),
    }
}

async fn client() -> (Server, Client) {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    (server, client)
}

/// A Lease PUT to a name nothing holds is created (system metadata of its
/// own, the body's resourceVersion no precondition); the next PUT updates it.
#[tokio::test]
async fn a_lease_put_to_a_missing_name_creates_it() {
    let (_server, client) = client().await;
    let leases: Api<Lease> = Api::namespaced(client, "default");
    let body = lease(json!({"name": "l", "resourceVersion": "7"}), "a");
    let created = leases
        .replace("l", &PostParams::default(), &body)
        .await
        .unwrap();
    let uid = created.metadata.uid.clone().expect("a uid");
    assert!(created.metadata.creation_timestamp.is_some());
    assert_ne!(created.metadata.resource_version.as_deref(), Some("7"));
    assert_eq!(leases.get("l").await.unwrap(), created);

    let mut changed = created.clone();
    changed.spec.as_mut().unwrap().holder_identity = Some("b".into());
    let updated = leases
        .replace("l", &PostParams::default(), &changed)
        .await
        .unwrap();
    assert_eq!(updated.metadata.uid.as_deref(), Some(uid.as_str()));
    assert_eq!(updated.spec.unwrap().holder_identity.as_deref(), Some("b"));
}

/// The create on update is a create: a namespace that does not exist is
/// NamespaceLifecycle's 404, a uid in the body a precondition nothing meets.
#[tokio::test]
async fn a_lease_created_on_update_is_admitted_as_a_create() {
    let (_server, client) = client().await;
    let nowhere: Api<Lease> = Api::namespaced(client.clone(), "nope");
    assert_eq!(
        refusal(
            nowhere
                .replace(
                    "l",
                    &PostParams::default(),
                    &lease(json!({"name": "l"}), "a")
                )
                .await
        ),
        (
            404,
            "NotFound".to_string(),
            "namespaces \"nope\" not found".to_string()
        )
    );
    let leases: Api<Lease> = Api::namespaced(client, "default");
    let (code, reason, _) = refusal(
        leases
            .replace(
                "l",
                &PostParams::default(),
                &lease(json!({"name": "l", "uid": "A"}), "a"),
            )
            .await,
    );
    assert_eq!((code, reason.as_str()), (409, "Conflict"));
    assert!(leases.get_opt("l").await.unwrap().is_none());
}

/// ConfigMaps do not create on update: upstream's 404.
#[tokio::test]
async fn a_config_map_put_to_a_missing_name_is_404() {
    let (_server, client) = client().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let body: ConfigMap = serde_json::from_value(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "missing"}}),
    )
    .unwrap();
    assert_eq!(
        refusal(cms.replace("missing", &PostParams::default(), &body).await),
        (
            404,
            "NotFound".to_string(),
            "configmaps \"missing\" not found".to_string()
        )
    );
}

/// Upstream's patcher never creates: a merge patch of a missing Lease is 404.
#[tokio::test]
async fn a_patch_of_a_missing_lease_is_404() {
    let (_server, client) = client().await;
    let leases: Api<Lease> = Api::namespaced(client, "default");
    let patch = Patch::Merge(json!({"spec": {"holderIdentity": "a"}}));
    assert_eq!(
        refusal(leases.patch("l", &PatchParams::default(), &patch).await),
        (
            404,
            "NotFound".to_string(),
            "leases.coordination.k8s.io \"l\" not found".to_string()
        )
    );
}

/// kube-apiserver answers a PUT that created its object 201 Created.
#[tokio::test]
async fn a_put_that_creates_is_answered_201() {
    let (_server, client) = client().await;
    let path = "/apis/coordination.k8s.io/v1/namespaces/default/leases/l";
    let put = || {
        let body = serde_json::to_vec(&lease(json!({"name": "l"}), "a")).unwrap();
        http::Request::put(path)
            .header("content-type", "application/json")
            .body(kube::client::Body::from(body))
            .unwrap()
    };
    let created = client.send(put()).await.unwrap();
    assert_eq!(created.status().as_u16(), 201);
    let updated = client.send(put()).await.unwrap();
    assert_eq!(updated.status().as_u16(), 200);
}

/// A PUT that would create needs `create` permission as well (upstream's
/// update handler asks the authorizer, `withAuthorization`): a user who may
/// only get and update Leases is refused with a Forbidden naming the Lease,
/// and may still update one that exists.
#[tokio::test]
async fn a_put_that_creates_needs_create_permission() {
    let (_server, client) = client().await;
    let rbac = |kind: &str, body: serde_json::Value| {
        let path = match kind {
            "Role" => "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
            _ => "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
        };
        http::Request::post(path)
            .header("content-type", "application/json")
            .body(kube::client::Body::from(serde_json::to_vec(&body).unwrap()))
            .unwrap()
    };
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "lease-updater"},
        "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                   "verbs": ["get", "update"]}]});
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "lease-updater"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "lease-updater"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "jane"}]});
    for (kind, body) in [("Role", role), ("RoleBinding", binding)] {
        let answer = client.send(rbac(kind, body)).await.unwrap();
        assert_eq!(answer.status().as_u16(), 201, "{kind}");
    }
    let put_as_jane = |name: &str| {
        let body = serde_json::to_vec(&lease(json!({"name": name}), "a")).unwrap();
        http::Request::put(format!(
            "/apis/coordination.k8s.io/v1/namespaces/default/leases/{name}"
        ))
        .header("content-type", "application/json")
        .header("impersonate-user", "jane")
        .body(kube::client::Body::from(body))
        .unwrap()
    };
    // The authorizer follows RBAC objects as they are written: wait until jane
    // may get the Lease (a 404, not a 403), so the refusal below is create's.
    let get_as_jane = || {
        http::Request::get("/apis/coordination.k8s.io/v1/namespaces/default/leases/l")
            .header("impersonate-user", "jane")
            .body(kube::client::Body::empty())
            .unwrap()
    };
    let mut tries = 0;
    while client.send(get_as_jane()).await.unwrap().status().as_u16() != 404 {
        tries += 1;
        assert!(tries < 100, "jane's Role never applied");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let refused = client.send(put_as_jane("l")).await.unwrap();
    assert_eq!(refused.status().as_u16(), 403);
    let body = http_body_util::BodyExt::collect(refused.into_body())
        .await
        .unwrap()
        .to_bytes();
    let status: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(status["reason"], "Forbidden", "{status}");
    let message = status["message"].as_str().unwrap();
    assert!(
        message.starts_with("leases.coordination.k8s.io \"l\" is forbidden:"),
        "{message}"
    );
    let leases: Api<Lease> = Api::namespaced(client.clone(), "default");
    assert_eq!(refusal(leases.get("l").await).0, 404);
    // The Lease exists: an update is all jane asks for.
    leases
        .create(&PostParams::default(), &lease(json!({"name": "l"}), "a"))
        .await
        .unwrap();
    let updated = client.send(put_as_jane("l")).await.unwrap();
    assert_eq!(updated.status().as_u16(), 200);
}
