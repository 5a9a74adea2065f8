//! The `Foo` resource of kubernetes/sample-controller (`samplecontroller.k8s.io/v1alpha1`,
//! upstream's `pkg/apis/samplecontroller/v1alpha1/types.go` and
//! `artifacts/examples/crd.yaml`), as a kube-rs `CustomResource`.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A Foo asks for an nginx Deployment named `deploymentName` with `replicas` pods.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "samplecontroller.k8s.io",
    version = "v1alpha1",
    kind = "Foo",
    plural = "foos",
    namespaced,
    status = "FooStatus",
    printcolumn = r#"{"name":"Deployment","type":"string","jsonPath":".spec.deploymentName"}"#,
    printcolumn = r#"{"name":"Replicas","type":"integer","jsonPath":".spec.replicas"}"#,
    printcolumn = r#"{"name":"Available","type":"integer","jsonPath":".status.availableReplicas"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct FooSpec {
    /// The name of the Deployment to create in the Foo's namespace. Upstream's
    /// schema does not require it; the controller ignores a Foo without one.
    #[serde(default)]
    pub deployment_name: String,
    /// The Deployment's replicas (1–10, as upstream's schema says); when unset the
    /// Deployment's own default (1) applies and is never corrected.
    #[schemars(range(min = 1, max = 10))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
}

/// What the controller last saw of the Deployment.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FooStatus {
    /// The Deployment's `status.availableReplicas`.
    #[serde(default)]
    pub available_replicas: i32,
}
