//! Service-account tokens: TokenRequest (`kubectl create token`) issues signed JWTs
//! that authenticate as the ServiceAccount (kube-rs and kubectl), honour audiences
//! and expiry, stop working when the ServiceAccount goes, survive restarts, and
//! pass TokenReview.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use serde_json::{Value, json};
use testkit::Server;

/// A kube-rs client of `server` that authenticates with `token` only.
async fn client_with_token(server: &Server, token: &str) -> kube::Client {
    let mut config = server.client_config().await.unwrap();
    config.auth_info = kube::config::AuthInfo {
        token: Some(token.to_string().into()),
        ..Default::default()
    };
    kube::Client::try_from(config).unwrap()
}

async fn post(client: &kube::Client, path: &str, body: Value) -> Result<Value, kube::core::Status> {
    let req = http::Request::post(path)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&body).unwrap())
        .unwrap();
    client.request::<Value>(req).await.map_err(|e| match e {
        kube::Error::Api(s) => *s,
        e => panic!("{e}"),
    })
}

#[tokio::test]
async fn service_account_tokens_authenticate_until_revoked() {
    let dir = tempfile::tempdir().unwrap();
    // Embedded storage: the ServiceAccount (and its uid) survives the restart below.
    let server = Server::builder()
        .storage(testkit::Storage::Embedded)
        .data_dir(dir.path())
        .start()
        .unwrap();
    let token = server
        .kubectl_ok(&["create", "token", "default"])
        .trim()
        .to_string();
    assert_eq!(token.split('.').count(), 3, "{token}");

    // kube-rs with the token: the ServiceAccount's identity.
    let as_sa = client_with_token(&server, &token).await;
    let user = common::whoami(&as_sa).await.unwrap();
    assert_eq!(user["username"], "system:serviceaccount:default:default");
    assert_eq!(
        user["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ])
    );
    let sa: Value =
        serde_json::from_str(&server.kubectl_ok(&["get", "sa", "default", "-o", "json"])).unwrap();
    assert_eq!(user["uid"], sa["metadata"]["uid"]);
    assert!(
        user["extra"]["authentication.kubernetes.io/credential-id"][0]
            .as_str()
            .unwrap()
            .starts_with("JTI=")
    );

    // kubectl with a kubeconfig holding only the token.
    let kubeconfig = dir.path().join("sa.kubeconfig");
    let ca = dir.path().join("pki/ca.crt");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: k, cluster: {{server: 'https://{}', certificate-authority: '{}'}}}}]\nusers: [{{name: sa, user: {{token: '{token}'}}}}]\ncontexts: [{{name: k, context: {{cluster: k, user: sa}}}}]\ncurrent-context: k\n",
            server.addr,
            ca.display()
        ),
    )
    .unwrap();
    let out =
        std::process::Command::new(std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".into()))
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["auth", "whoami"])
            .output()
            .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        printed.contains("system:serviceaccount:default:default"),
        "{printed}{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // TokenReview accepts it, and a token for another audience only for that one.
    let admin = server.client().await.unwrap();
    let review = |token: &str, audiences: Value| json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token, "audiences": audiences}});
    let reviewed = post(
        &admin,
        "/apis/authentication.k8s.io/v1/tokenreviews",
        review(&token, json!([])),
    )
    .await
    .unwrap();
    assert_eq!(reviewed["status"]["authenticated"], true);
    assert_eq!(
        reviewed["status"]["user"]["username"],
        "system:serviceaccount:default:default"
    );
    let vault = server
        .kubectl_ok(&["create", "token", "default", "--audience", "vault"])
        .trim()
        .to_string();
    assert_eq!(
        common::whoami(&client_with_token(&server, &vault).await).await,
        Err(401)
    );
    let reviewed = post(
        &admin,
        "/apis/authentication.k8s.io/v1/tokenreviews",
        review(&vault, json!(["vault"])),
    )
    .await
    .unwrap();
    assert_eq!(reviewed["status"]["authenticated"], true);

    // Bad requests get field errors; unknown ServiceAccounts a 404.
    let err = post(
        &admin,
        "/api/v1/namespaces/default/serviceaccounts/default/token",
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 100}}),
    )
    .await
    .unwrap_err();
    assert_eq!(err.code, 422);
    assert!(err.message.contains("spec.expirationSeconds: Invalid value: 100: may not specify a duration less than 10 minutes"), "{}", err.message);
    let out = server.kubectl(&["create", "token", "nobody"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains(r#"serviceaccounts "nobody" not found"#));

    // Discovery lists the subresource.
    let core = server.kubectl_ok(&["get", "--raw", "/api/v1"]);
    let core: Value = serde_json::from_str(&core).unwrap();
    let sub = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "serviceaccounts/token")
        .unwrap();
    assert_eq!(sub["kind"], "TokenRequest");
    assert_eq!(sub["verbs"], json!(["create"]));

    // An expired token, signed with the right key, is refused.
    let key = std::fs::read(dir.path().join("pki/sa.key")).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let expired = jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256),
        &json!({
            "aud": ["https://kubernetes.default.svc.cluster.local"], "iss": "https://kubernetes.default.svc.cluster.local",
            "exp": now - 60, "iat": now - 4000, "nbf": now - 4000, "jti": "x",
            "sub": "system:serviceaccount:default:default",
            "kubernetes.io": {"namespace": "default", "serviceaccount": {"name": "default", "uid": sa["metadata"]["uid"]}},
        }),
        &jsonwebtoken::EncodingKey::from_ec_pem(&key).unwrap(),
    )
    .unwrap();
    assert_eq!(
        common::whoami(&client_with_token(&server, &expired).await).await,
        Err(401)
    );

    // Tokens survive a restart (the keys live in the data dir)...
    drop(server);
    let server = Server::builder()
        .storage(testkit::Storage::Embedded)
        .data_dir(dir.path())
        .start()
        .unwrap();
    assert!(
        common::whoami(&client_with_token(&server, &token).await)
            .await
            .is_ok()
    );
    // ...but not their ServiceAccount: deleted, or replaced by a new one.
    server.kubectl_ok(&["create", "serviceaccount", "robot"]);
    let robot = server
        .kubectl_ok(&["create", "token", "robot"])
        .trim()
        .to_string();
    let as_robot = client_with_token(&server, &robot).await;
    assert!(common::whoami(&as_robot).await.is_ok());
    server.kubectl_ok(&["delete", "serviceaccount", "robot"]);
    assert_eq!(common::whoami(&as_robot).await, Err(401));
    server.kubectl_ok(&["create", "serviceaccount", "robot"]);
    assert_eq!(common::whoami(&as_robot).await, Err(401));
}

/// GET `path` with `client`; status, headers and body.
async fn get(client: &kube::Client, path: &str) -> (u16, http::HeaderMap, Value) {
    let (code, headers, body) = common::send_raw(client, "GET", path, "", Vec::new()).await;
    let body = serde_json::from_slice(&body)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&body)));
    (code, headers, body)
}

/// The issuer's OpenID Connect discovery documents, as kube-apiserver serves
/// them: to service accounts (the bootstrap policy's
/// `system:service-account-issuer-discovery`), cacheable, the key set as a JWK
/// set whose key verifies the issuer's tokens. go/serviceaccounts checks the
/// same with go-oidc, a relying party's library.
#[tokio::test]
async fn the_issuer_publishes_its_discovery_documents() {
    let server = Server::builder().start().unwrap();
    let token = server
        .kubectl_ok(&["create", "token", "default"])
        .trim()
        .to_string();
    let as_sa = client_with_token(&server, &token).await;

    let (code, headers, configuration) = get(&as_sa, "/.well-known/openid-configuration").await;
    assert_eq!(code, 200, "{configuration}");
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(headers["cache-control"], "public, max-age=3600");
    assert_eq!(
        configuration,
        json!({
            "issuer": "https://kubernetes.default.svc.cluster.local",
            "jwks_uri": format!("https://127.0.0.1:{}/openid/v1/jwks", server.addr.port()),
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["ES256"],
        })
    );

    let (code, headers, keyset) = get(&as_sa, "/openid/v1/jwks").await;
    assert_eq!(code, 200, "{keyset}");
    assert_eq!(headers["content-type"], "application/jwk-set+json");
    assert_eq!(headers["cache-control"], "public, max-age=3600");
    let [key] = keyset["keys"].as_array().unwrap().as_slice() else {
        panic!("{keyset}");
    };
    let header = jsonwebtoken::decode_header(&token).unwrap();
    assert_eq!(key["kid"].as_str(), header.kid.as_deref());
    assert_eq!(
        (&key["kty"], &key["crv"], &key["alg"], &key["use"]),
        (
            &json!("EC"),
            &json!("P-256"),
            &json!("ES256"),
            &json!("sig")
        )
    );
    // The published key verifies the token.
    let decoding = jsonwebtoken::DecodingKey::from_ec_components(
        key["x"].as_str().unwrap(),
        key["y"].as_str().unwrap(),
    )
    .unwrap();
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::ES256);
    validation.set_audience(&["https://kubernetes.default.svc.cluster.local"]);
    validation.set_issuer(&["https://kubernetes.default.svc.cluster.local"]);
    let claims = jsonwebtoken::decode::<Value>(&token, &decoding, &validation)
        .unwrap()
        .claims;
    assert_eq!(claims["sub"], "system:serviceaccount:default:default");

    // Only service accounts (and admins) are granted the documents by default.
    let mut config = server.client_config().await.unwrap();
    config.auth_info = kube::config::AuthInfo::default();
    let anonymous = kube::Client::try_from(config).unwrap();
    let (code, _, refused) = get(&anonymous, "/openid/v1/jwks").await;
    assert_eq!(code, 403);
    assert_eq!(
        refused["message"],
        r#"forbidden: User "system:anonymous" cannot get path "/openid/v1/jwks""#
    );
}

/// `--service-account-jwks-uri` names where relying parties fetch the keys; an
/// issuer that is not an https URL leaves the documents unserved (with
/// kube-apiserver's warning), and the server serves on.
#[tokio::test]
async fn the_jwks_uri_flag_and_an_issuer_the_documents_cannot_be_made_for() {
    let server = Server::builder()
        .arg("--service-account-jwks-uri=https://keys.example.com/jwks")
        .start()
        .unwrap();
    let admin = server.client().await.unwrap();
    let (code, _, configuration) = get(&admin, "/.well-known/openid-configuration").await;
    assert_eq!(code, 200);
    assert_eq!(configuration["jwks_uri"], "https://keys.example.com/jwks");

    let server = Server::builder()
        .arg("--service-account-issuer=kubernetes.default.svc")
        .start()
        .unwrap();
    let admin = server.client().await.unwrap();
    for path in ["/.well-known/openid-configuration", "/openid/v1/jwks"] {
        let (code, _, body) = get(&admin, path).await;
        assert_eq!(code, 404, "{path}: {body}");
    }
    assert!(
        server.log().contains("Could not construct pre-rendered responses for ServiceAccountIssuerDiscovery endpoints. Endpoints will not be enabled."),
        "{}",
        server.log()
    );
}
