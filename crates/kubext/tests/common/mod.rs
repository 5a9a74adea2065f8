//! Fixtures shared by the black-box test files.
#![allow(dead_code, clippy::unwrap_used)]

use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::json;

/// A small ConfigMap named `name`.
pub fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}})).unwrap()
}

/// A response body as JSON (anything else fails the test, showing the body).
pub fn json_of(bytes: &[u8]) -> serde_json::Value {
    serde_json::from_slice(bytes)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(bytes)))
}

/// The Status of an API error (anything else fails the test).
pub fn api_error(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// Send a JSON (or patch) body; the status code and the raw response body.
pub async fn send_body(
    client: &kube::Client,
    method: &str,
    uri: &str,
    content_type: &str,
    body: &serde_json::Value,
) -> (u16, bytes::Bytes) {
    let (code, _, bytes) = send_raw(
        client,
        method,
        uri,
        content_type,
        serde_json::to_vec(body).unwrap(),
    )
    .await;
    (code, bytes)
}

/// Send raw bytes; the status code, headers and raw response body.
pub async fn send_raw(
    client: &kube::Client,
    method: &str,
    uri: &str,
    content_type: &str,
    body: Vec<u8>,
) -> (u16, http::HeaderMap, bytes::Bytes) {
    let req = http::Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", content_type)
        .body(kube::client::Body::from(body))
        .unwrap();
    let resp = client.send(req).await.unwrap();
    let code = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    (code, headers, bytes)
}

/// GET `uri` with `Accept: accept`; the status code, headers and raw body.
pub async fn get_accepting(
    client: &kube::Client,
    uri: &str,
    accept: &str,
) -> (u16, http::HeaderMap, bytes::Bytes) {
    let req = http::Request::get(uri)
        .header("accept", accept)
        .body(kube::client::Body::empty())
        .unwrap();
    let resp = client.send(req).await.unwrap();
    let code = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    (code, headers, bytes)
}

/// A rustls client config that trusts `server`'s CA and presents its admin
/// certificate (for raw TLS and HTTP/2 connections).
pub fn admin_tls_config(server: &testkit::Server) -> rustls::ClientConfig {
    admin_tls_config_with(
        server,
        rustls::crypto::ring::default_provider(),
        rustls::DEFAULT_VERSIONS,
    )
}

/// [`admin_tls_config`] offering only `provider`'s cipher suites and `versions`.
pub fn admin_tls_config_with(
    server: &testkit::Server,
    provider: rustls::crypto::CryptoProvider,
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> rustls::ClientConfig {
    let pki = server.data_dir.join("pki");
    let read = |f: &str| std::fs::read(pki.join(f)).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut read("ca.crt").as_slice()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let certs: Vec<_> = rustls_pemfile::certs(&mut read("admin.crt").as_slice())
        .map(Result::unwrap)
        .collect();
    let key = rustls_pemfile::private_key(&mut read("admin.key").as_slice())
        .unwrap()
        .unwrap();
    rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(provider))
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(roots)
        .with_client_auth_cert(certs, key)
        .unwrap()
}

/// `status.userInfo` of a SelfSubjectReview made with `client`, or the error code.
pub async fn whoami(client: &kube::Client) -> Result<serde_json::Value, u16> {
    let body = serde_json::to_vec(&json!({
        "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}))
    .unwrap();
    let req = http::Request::post("/apis/authentication.k8s.io/v1/selfsubjectreviews")
        .header("content-type", "application/json")
        .body(body)
        .unwrap();
    match client.request::<serde_json::Value>(req).await {
        Ok(review) => Ok(review["status"]["userInfo"].clone()),
        Err(kube::Error::Api(status)) => Err(status.code),
        Err(e) => panic!("{e}"),
    }
}

/// The resource version a list of `api` reads at: a watch from it sees what
/// happens next.
pub async fn listed_resource_version<K>(api: &kube::Api<K>) -> String
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.list(&kube::api::ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap()
}

/// The payload of burst object `i`: small and large ones alternate (a
/// large one is framed in three shared buffers, small queued ones join one
/// chunk).
pub fn burst_payload(i: usize) -> String {
    let repeat = if i.is_multiple_of(2) { 10 } else { 5000 };
    format!("{i:04}").repeat(repeat)
}

/// Poll `check` every 50 ms until it holds; fail the test after 20 s.
pub async fn until(what: &str, check: impl AsyncFn() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !check().await {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting: {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Wait until the object `name` is gone.
pub async fn gone<K>(api: &kube::Api<K>, name: &str)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    until(&format!("{name} deleted"), async || {
        api.get_opt(name).await.unwrap().is_none()
    })
    .await;
}

/// Who holds kubext's controllers' Lease (`kube-system/kubext-controllers`).
pub async fn controllers_lease_holder(client: &kube::Client) -> Option<String> {
    let leases: kube::Api<k8s_openapi::api::coordination::v1::Lease> =
        kube::Api::namespaced(client.clone(), "kube-system");
    leases
        .get_opt("kubext-controllers")
        .await
        .ok()
        .flatten()
        .and_then(|l| l.spec?.holder_identity)
}

/// The first holder of the controllers' Lease, waited for up to 20 s.
pub async fn first_controllers_lease_holder(client: &kube::Client) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        if let Some(holder) = controllers_lease_holder(client).await {
            return holder;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "nobody took the lease"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// Create ConfigMap `owner-<suffix>` and its dependent `dependent-<suffix>`,
/// then delete the owner: the garbage collector is to delete the dependent.
pub async fn orphan_a_dependent(client: &kube::Client, suffix: &str) {
    let cms: kube::Api<ConfigMap> = kube::Api::namespaced(client.clone(), "default");
    let pp = kube::api::PostParams::default();
    let owner = cms
        .create(&pp, &cm(&format!("owner-{suffix}")))
        .await
        .unwrap();
    let dependent: ConfigMap = serde_json::from_value(json!({"metadata": {
        "name": format!("dependent-{suffix}"),
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": format!("owner-{suffix}"),
                             "uid": owner.metadata.uid.unwrap()}]}}))
    .unwrap();
    cms.create(&pp, &dependent).await.unwrap();
    cms.delete(&format!("owner-{suffix}"), &Default::default())
        .await
        .unwrap();
}
