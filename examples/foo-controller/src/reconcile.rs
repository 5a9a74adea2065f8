//! Reconcile a Foo the way sample-controller's `syncHandler` does: ensure its
//! Deployment exists and is controlled by it, correct the Deployment's replicas,
//! copy `availableReplicas` into the Foo's status, and record Events.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference};
use kube::api::{ObjectMeta, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType, Recorder};
use kube::{Api, Client, Resource, ResourceExt};

use crate::foo::{Foo, FooStatus};

/// Upstream's `controllerAgentName`: the Events' reporting controller and the
/// field manager of every write.
pub const CONTROLLER_AGENT_NAME: &str = "sample-controller";
/// Event reason when a Foo is synced successfully (upstream's `SuccessSynced`).
pub const SUCCESS_SYNCED: &str = "Synced";
/// Event reason when a Foo fails to sync because a Deployment of the same name
/// already exists (upstream's `ErrResourceExists`).
pub const ERR_RESOURCE_EXISTS: &str = "ErrResourceExists";
/// Event message of a successful sync (upstream's `MessageResourceSynced`).
pub const MESSAGE_RESOURCE_SYNCED: &str = "Foo synced successfully";
/// Upstream's informers resync every 30 s, which requeues every Foo.
const RESYNC: Duration = Duration::from_secs(30);

/// Upstream's `MessageResourceExists` (`Resource %q already exists and is not
/// managed by Foo`).
pub fn message_resource_exists(name: &str) -> String {
    format!("Resource {name:?} already exists and is not managed by Foo")
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("{0}")]
    ResourceExists(String),
    #[error("{0} has no namespace or uid")]
    NotStored(String),
}

pub struct Context {
    pub client: Client,
    pub recorder: Recorder,
    /// Consecutive failures per Foo, for the backoff.
    pub failures: Mutex<HashMap<String, u32>>,
}

fn key(foo: &Foo) -> String {
    format!("{}/{}", foo.namespace().unwrap_or_default(), foo.name_any())
}

pub async fn reconcile(foo: Arc<Foo>, ctx: Arc<Context>) -> Result<Action, Error> {
    let key = key(&foo);
    let action = sync(&foo, &ctx, &key).await?;
    // Upstream's `workqueue.Forget`: the next failure starts the backoff afresh.
    if let Ok(mut failures) = ctx.failures.lock() {
        failures.remove(&key);
    }
    Ok(action)
}

/// Upstream's `DefaultControllerRateLimiter` per item: 5 ms, 10 ms, 20 ms …
/// at most 1000 s.
pub fn error_policy(foo: Arc<Foo>, error: &Error, ctx: Arc<Context>) -> Action {
    let key = key(&foo);
    let attempts = ctx.failures.lock().map_or(1, |mut f| {
        let n = f.entry(key.clone()).or_insert(0);
        *n += 1;
        *n
    });
    let delay = Duration::from_millis(5 << attempts.saturating_sub(1).min(20))
        .min(Duration::from_secs(1000));
    tracing::warn!(foo = %key, %error, attempts, retry_in = ?delay, "error syncing, requeuing");
    Action::requeue(delay)
}

async fn sync(foo: &Foo, ctx: &Context, key: &str) -> Result<Action, Error> {
    let deployment_name = &foo.spec.deployment_name;
    if deployment_name.is_empty() {
        // Upstream absorbs this error rather than retrying: the next change of
        // the Foo queues it again.
        tracing::error!("{key}: deployment name must be specified");
        return Ok(Action::await_change());
    }
    let namespace = foo
        .namespace()
        .ok_or_else(|| Error::NotStored(key.to_string()))?;
    let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &namespace);
    let params = PostParams {
        field_manager: Some(CONTROLLER_AGENT_NAME.into()),
        ..Default::default()
    };

    // Get the Deployment named in the spec; create it if it does not exist.
    let mut deployment = match deployments.get_opt(deployment_name).await? {
        Some(d) => d,
        None => {
            tracing::info!(foo = %key, deployment = %deployment_name, "creating the deployment");
            deployments.create(&params, &new_deployment(foo)?).await?
        }
    };

    // A Deployment this Foo does not control is left alone.
    if !is_controlled_by(&deployment, foo) {
        let message = message_resource_exists(deployment_name);
        record(ctx, foo, EventType::Warning, ERR_RESOURCE_EXISTS, &message).await;
        return Err(Error::ResourceExists(message));
    }

    // Correct the replicas if the Foo names a number and the Deployment differs.
    if let Some(replicas) = foo.spec.replicas
        && deployment.spec.replicas != Some(replicas)
    {
        tracing::info!(
            foo = %key,
            replicas,
            deployment_replicas = ?deployment.spec.replicas,
            "updating the deployment"
        );
        // Upstream updates with the whole desired Deployment; the observed
        // resourceVersion makes a concurrent change a conflict (and a retry).
        let mut desired = new_deployment(foo)?;
        desired.metadata.resource_version = deployment.metadata.resource_version.clone();
        deployment = deployments
            .replace(deployment_name, &params, &desired)
            .await?;
    }

    update_foo_status(foo, &deployment, ctx, &namespace, &params).await?;
    record(
        ctx,
        foo,
        EventType::Normal,
        SUCCESS_SYNCED,
        MESSAGE_RESOURCE_SYNCED,
    )
    .await;
    Ok(Action::requeue(RESYNC))
}

/// Copy the Deployment's `availableReplicas` into the Foo's status through the
/// status subresource (upstream's `updateFooStatus`); nothing is written when it
/// is already there.
async fn update_foo_status(
    foo: &Foo,
    deployment: &Deployment,
    ctx: &Context,
    namespace: &str,
    params: &PostParams,
) -> Result<(), Error> {
    let status = FooStatus {
        available_replicas: deployment
            .status
            .as_ref()
            .and_then(|s| s.available_replicas)
            .unwrap_or(0),
    };
    if foo.status.as_ref() == Some(&status) {
        return Ok(());
    }
    let mut copy = foo.clone();
    copy.status = Some(status);
    Api::<Foo>::namespaced(ctx.client.clone(), namespace)
        .replace_status(&foo.name_any(), params, &copy)
        .await?;
    Ok(())
}

/// Upstream's `metav1.IsControlledBy`: the Deployment's controller reference
/// points at this Foo (by uid).
fn is_controlled_by(deployment: &Deployment, foo: &Foo) -> bool {
    let Some(uid) = foo.meta().uid.as_deref() else {
        return false;
    };
    deployment
        .owner_references()
        .iter()
        .any(|r| r.controller == Some(true) && r.uid == uid)
}

/// Upstream's `newDeployment`: nginx pods labelled `app: nginx`,
/// `controller: <foo>`, owned by the Foo (controller, blocking its deletion).
pub fn new_deployment(foo: &Foo) -> Result<Deployment, Error> {
    // Upstream's `metav1.NewControllerRef`; kube-rs leaves blockOwnerDeletion out.
    let owner = OwnerReference {
        block_owner_deletion: Some(true),
        ..foo
            .controller_owner_ref(&())
            .ok_or_else(|| Error::NotStored(key(foo)))?
    };
    let labels = BTreeMap::from([
        ("app".to_string(), "nginx".to_string()),
        ("controller".to_string(), foo.name_any()),
    ]);
    Ok(Deployment {
        metadata: ObjectMeta {
            name: Some(foo.spec.deployment_name.clone()),
            namespace: foo.namespace(),
            owner_references: Some(vec![owner]),
            ..Default::default()
        },
        spec: DeploymentSpec {
            replicas: foo.spec.replicas,
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..Default::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "nginx".into(),
                        image: Some("nginx:latest".into()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            },
            ..Default::default()
        },
        ..Default::default()
    })
}

/// Events are best effort: a failure is logged, not retried.
async fn record(ctx: &Context, foo: &Foo, type_: EventType, reason: &str, note: &str) {
    let event = Event {
        type_,
        reason: reason.into(),
        note: Some(note.into()),
        action: "Sync".into(),
        secondary: None,
    };
    if let Err(e) = ctx.recorder.publish(&event, &foo.object_ref(&())).await {
        tracing::warn!(error = %e, "cannot record event");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::foo::FooSpec;

    fn foo() -> Foo {
        let mut foo = Foo::new(
            "example-foo",
            FooSpec {
                deployment_name: "example-foo".into(),
                replicas: Some(1),
            },
        );
        foo.metadata.namespace = Some("default".into());
        foo.metadata.uid = Some("1234".into());
        foo
    }

    #[test]
    fn new_deployment_is_upstreams() {
        let d = serde_json::to_value(new_deployment(&foo()).unwrap()).unwrap();
        assert_eq!(d["metadata"]["name"], "example-foo");
        assert_eq!(d["metadata"]["namespace"], "default");
        let owner = &d["metadata"]["ownerReferences"][0];
        assert_eq!(owner["apiVersion"], "samplecontroller.k8s.io/v1alpha1");
        assert_eq!(owner["kind"], "Foo");
        assert_eq!(owner["name"], "example-foo");
        assert_eq!(owner["uid"], "1234");
        assert_eq!(owner["controller"], true);
        assert_eq!(owner["blockOwnerDeletion"], true);
        let labels = serde_json::json!({"app": "nginx", "controller": "example-foo"});
        assert_eq!(d["spec"]["selector"]["matchLabels"], labels);
        assert_eq!(d["spec"]["template"]["metadata"]["labels"], labels);
        assert_eq!(d["spec"]["replicas"], 1);
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"],
            serde_json::json!([{"name": "nginx", "image": "nginx:latest"}])
        );
        assert!(is_controlled_by(&new_deployment(&foo()).unwrap(), &foo()));
        let mut other = foo();
        other.metadata.uid = Some("5678".into());
        assert!(!is_controlled_by(&new_deployment(&foo()).unwrap(), &other));
    }

    #[test]
    fn messages_are_upstreams() {
        assert_eq!(
            message_resource_exists("web"),
            r#"Resource "web" already exists and is not managed by Foo"#
        );
    }
}
