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
