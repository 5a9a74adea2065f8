//! Fixtures shared by the black-box test files.
#![allow(dead_code, clippy::unwrap_used)]

use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::json;

/// A small ConfigMap named `name`.
pub fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}})).unwrap()
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
    let req = http::Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", content_type)
        .body(kube::client::Body::from(serde_json::to_vec(body).unwrap()))
        .unwrap();
    let resp = client.send(req).await.unwrap();
    let code = resp.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    (code, bytes)
}
