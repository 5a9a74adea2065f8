//! CEL rules declared in Rust with kube-rs (`derive(CustomResource,
//! KubeSchema)`, `#[x_kube(validation = …)]`): the derived CRD installs, and
//! its rules — a root rule on the name, an object rule, a transition rule with
//! a message — are enforced on create and update with upstream's 422 errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::{CustomResource, CustomResourceExt, KubeSchema};
use serde::{Deserialize, Serialize};
use testkit::Server;

#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug)]
#[kube(
    group = "cel.kube.rs",
    version = "v1",
    kind = "Limiter",
    namespaced,
    validation = "self.metadata.name.startsWith('lim-')"
)]
#[x_kube(validation = "self.min <= self.max")]
pub struct LimiterSpec {
    min: i32,
    max: i32,
    #[x_kube(validation = Rule::new("self == oldSelf").message("mode is immutable"))]
    mode: String,
}

fn status_message(err: kube::Error) -> (u16, String) {
    match err {
        kube::Error::Api(status) => (status.code, status.message),
        other => panic!("not an API error: {other}"),
    }
}

#[tokio::test]
async fn derived_rules_are_enforced() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &Limiter::crd())
        .await
        .unwrap();
    let established = await_condition(
        crds,
        "limiters.cel.kube.rs",
        conditions::is_crd_established(),
    );
    tokio::time::timeout(Duration::from_secs(10), established)
        .await
        .unwrap()
        .unwrap();

    let api: Api<Limiter> = Api::namespaced(client, "default");
    let spec = |min, max, mode: &str| LimiterSpec {
        min,
        max,
        mode: mode.into(),
    };
    api.create(
        &PostParams::default(),
        &Limiter::new("lim-a", spec(1, 5, "fast")),
    )
    .await
    .unwrap();

    let (code, message) = status_message(
        api.create(
            &PostParams::default(),
            &Limiter::new("lim-b", spec(9, 5, "fast")),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(code, 422);
    assert!(
        message.contains(r#"spec: Invalid value: failed rule: self.min <= self.max"#),
        "{message}"
    );

    let (code, message) = status_message(
        api.create(
            &PostParams::default(),
            &Limiter::new("other", spec(1, 5, "fast")),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(code, 422);
    assert!(
        message.contains(
            r#"<nil>: Invalid value: failed rule: self.metadata.name.startsWith('lim-')"#
        ),
        "{message}"
    );

    let (code, message) = status_message(
        api.patch(
            "lim-a",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"mode": "slow"}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(code, 422);
    assert!(
        message.contains(r#"spec.mode: Invalid value: "slow": mode is immutable"#),
        "{message}"
    );
}
