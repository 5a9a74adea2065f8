//! A kube-rs operator's view: a `#[derive(CustomResource)]` type installs its CRD,
//! and a `Controller` reconciles instances and writes their status.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::wait::{await_condition, conditions};
use kube::{CustomResource, CustomResourceExt, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;
use testkit::Server;

#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "stable.example.com",
    version = "v1",
    kind = "CronTab",
    namespaced,
    status = "CronTabStatus",
    shortname = "ct"
)]
#[kube(printcolumn = r#"{"name":"Spec","type":"string","jsonPath":".spec.cronSpec"}"#)]
pub struct CronTabSpec {
    cron_spec: String,
    replicas: i32,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
pub struct CronTabStatus {
    observed_replicas: i32,
}

async fn reconcile(obj: Arc<CronTab>, client: Arc<kube::Client>) -> Result<Action, kube::Error> {
    let api: Api<CronTab> = Api::namespaced((*client).clone(), &obj.namespace().unwrap());
    let status = serde_json::json!({"status": {"observed_replicas": obj.spec.replicas}});
    api.patch_status(
        &obj.name_any(),
        &PatchParams::default(),
        &Patch::Merge(status),
    )
    .await?;
    Ok(Action::await_change())
}

fn error_policy(_: Arc<CronTab>, _: &kube::Error, _: Arc<kube::Client>) -> Action {
    Action::requeue(Duration::from_millis(200))
}

#[tokio::test]
async fn derived_crd_and_controller_round_trip() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &CronTab::crd())
        .await
        .unwrap();
    let established = await_condition(
        crds,
        "crontabs.stable.example.com",
        conditions::is_crd_established(),
    );
    tokio::time::timeout(Duration::from_secs(10), established)
        .await
        .unwrap()
        .unwrap();

    let api: Api<CronTab> = Api::namespaced(client.clone(), "default");
    let controller = Controller::new(api.clone(), Default::default())
        .run(reconcile, error_policy, Arc::new(client.clone()))
        .for_each(|_| async {});
    let driver = tokio::spawn(controller);

    let tab = CronTab::new(
        "nightly",
        CronTabSpec {
            cron_spec: "0 3 * * *".into(),
            replicas: 4,
        },
    );
    api.create(&PostParams::default(), &tab).await.unwrap();
    let reconciled = await_condition(api.clone(), "nightly", |o: Option<&CronTab>| {
        o.and_then(|o| o.status.as_ref())
            .is_some_and(|s| s.observed_replicas == 4)
    });
    tokio::time::timeout(Duration::from_secs(15), reconciled)
        .await
        .unwrap()
        .unwrap();
    // The printer column from the derive shows in kubectl.
    let table = server.kubectl_ok(&["get", "ct"]);
    assert!(table.lines().next().unwrap().contains("SPEC"), "{table}");
    driver.abort();
}
