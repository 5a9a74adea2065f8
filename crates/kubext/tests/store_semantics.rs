//! The generic store's answers that `registry/tests/store_table.rs` found
//! differing from upstream's `store_test.go` (issue 35), seen through a real
//! kube-rs client against a running kubext: the texts are upstream's.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Client};
use serde_json::json;
use testkit::Server;

fn config_map(metadata: serde_json::Value) -> ConfigMap {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}))
        .unwrap()
}

/// The refused request's (code, reason, message).
fn refusal<T: std::fmt::Debug>(result: kube::Result<T>) -> (u16, String, String) {
    match result {
        Err(kube::Error::Api(status)) => (status.code, status.reason, status.message),
        other => panic!("not refused: {other:?}"),
    }
}

async fn config_maps() -> (Server, Api<ConfigMap>) {
    let server = Server::builder().start().unwrap();
    let client: Client = server.client().await.unwrap();
    (server, Api::namespaced(client, "default"))
}

/// Upstream's `GuaranteedUpdate` takes the body's uid as a precondition; its
/// storage error is the conflict's text (kube-apiserver 1.37.2's).
#[tokio::test]
async fn an_update_naming_another_uid_is_a_conflict() {
    let (_server, cms) = config_maps().await;
    let created = cms
        .create(&PostParams::default(), &config_map(json!({"name": "foo"})))
        .await
        .unwrap();
    let uid = created.metadata.uid.clone().unwrap();
    let mut changed = created.clone();
    changed.metadata.uid = Some("A".into());
    let refused = refusal(cms.replace("foo", &PostParams::default(), &changed).await);
    assert_eq!(
        refused,
        (
            409,
            "Conflict".to_string(),
            format!(
                "Operation cannot be fulfilled on configmaps \"foo\": StorageError: invalid object, Code: 4, Key: /registry/configmaps/default/foo, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: A, UID in object meta: {uid}"
            )
        )
    );
}

/// `names.SimpleNameGenerator`: a base longer than 58 bytes is cut to 58
/// before the 5 random characters.
#[tokio::test]
async fn a_long_generate_name_is_cut_to_58_bytes() {
    let (_server, cms) = config_maps().await;
    let base = "a".repeat(70);
    let created = cms
        .create(
            &PostParams::default(),
            &config_map(json!({"generateName": base})),
        )
        .await
        .unwrap();
    let name = created.metadata.name.unwrap();
    assert_eq!(name.len(), 63, "{name}");
    assert!(name.starts_with(&base[..58]), "{name}");
}

/// A create over a name whose object is still being deleted (held by a
/// finalizer) is refused as upstream's store refuses it.
#[tokio::test]
async fn a_create_over_an_object_being_deleted_says_so() {
    let (_server, cms) = config_maps().await;
    let held = json!({"name": "foo", "finalizers": ["example.com/hold"]});
    cms.create(&PostParams::default(), &config_map(held))
        .await
        .unwrap();
    cms.delete("foo", &DeleteParams::default()).await.unwrap();
    let refused = refusal(
        cms.create(&PostParams::default(), &config_map(json!({"name": "foo"})))
            .await,
    );
    assert_eq!(
        refused,
        (
            409,
            "AlreadyExists".to_string(),
            "object is being deleted: configmaps \"foo\" already exists".to_string()
        )
    );
}
