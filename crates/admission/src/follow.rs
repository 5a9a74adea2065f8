//! Keeps [`Policies`] and [`Webhooks`] current: recompiled after every
//! change to an admission policy, binding or webhook configuration (a burst
//! of changes is one rebuild).

use std::sync::Arc;

use apimachinery::StatusError;
use registry::{GenericStore, ListOptions};
use runtime::{self, Event, Reconciler, WorkQueue};
use serde_json::Value;

use crate::{Policies, Webhooks};

/// The stores policies are read from.
#[derive(Clone)]
pub struct Stores {
    pub policies: Arc<GenericStore>,
    pub bindings: Arc<GenericStore>,
    pub mutating_policies: Arc<GenericStore>,
    pub mutating_bindings: Arc<GenericStore>,
    /// CustomResourceDefinitions: the schemas policies are type-checked against.
    pub crds: Arc<GenericStore>,
}

const MANAGER: &str = "kubext-admission";

async fn list(store: &GenericStore) -> Result<Vec<Value>, StatusError> {
    let ctx = runtime::system_context("", MANAGER);
    store
        .list(&ctx, ListOptions::default())
        .await
        .map(|l| l.items.iter().map(|o| o.to_value()).collect())
}

impl Policies {
    /// Recompile from what the stores hold now.
    pub async fn rebuild(&self, stores: &Stores) -> Result<(), StatusError> {
        let policies = list(&stores.policies).await?;
        let bindings = list(&stores.bindings).await?;
        self.set(&policies, &bindings);
        let crds = list(&stores.crds).await?;
        crate::type_checking::write(&stores.policies, &policies, &crds, self.objects.get()).await;
        let policies = list(&stores.mutating_policies).await?;
        let bindings = list(&stores.mutating_bindings).await?;
        self.set_mutating(&policies, &bindings);
        Ok(())
    }
}

struct Follower {
    policies: Arc<Policies>,
    stores: Stores,
}

#[async_trait::async_trait]
impl Reconciler for Follower {
    type Key = ();
    type Error = StatusError;

    fn name(&self) -> &'static str {
        "admission-policies"
    }

    async fn reconcile(&self, _: &()) -> Result<(), StatusError> {
        self.policies.rebuild(&self.stores).await
    }
}

/// Keep `policies` current (forever).
pub async fn follow(policies: Arc<Policies>, stores: Stores) {
    let queue = WorkQueue::new(
        std::time::Duration::from_millis(100),
        std::time::Duration::from_secs(5),
    );
    let any = |_: &Event| vec![()];
    let (a, b, c, d) = (
        runtime::follow(stores.policies.clone(), MANAGER, queue.clone(), any),
        runtime::follow(stores.bindings.clone(), MANAGER, queue.clone(), any),
        runtime::follow(
            stores.mutating_policies.clone(),
            MANAGER,
            queue.clone(),
            any,
        ),
        runtime::follow(
            stores.mutating_bindings.clone(),
            MANAGER,
            queue.clone(),
            any,
        ),
    );
    let feed = async move {
        tokio::join!(a, b, c, d);
    };
    runtime::run(Arc::new(Follower { policies, stores }), queue, 1, feed).await;
}

/// The stores webhook configurations are read from.
#[derive(Clone)]
pub struct WebhookStores {
    pub validating: Arc<GenericStore>,
    pub mutating: Arc<GenericStore>,
}

impl Webhooks {
    /// Recompile from what the stores hold now.
    pub async fn rebuild(&self, stores: &WebhookStores) -> Result<(), StatusError> {
        let validating = list(&stores.validating).await?;
        let mutating = list(&stores.mutating).await?;
        self.set(&validating, &mutating);
        Ok(())
    }
}

struct WebhookFollower {
    webhooks: Arc<Webhooks>,
    stores: WebhookStores,
}

#[async_trait::async_trait]
impl Reconciler for WebhookFollower {
    type Key = ();
    type Error = StatusError;

    fn name(&self) -> &'static str {
        "admission-webhooks"
    }

    async fn reconcile(&self, _: &()) -> Result<(), StatusError> {
        self.webhooks.rebuild(&self.stores).await
    }
}

/// Keep `webhooks` current (forever).
pub async fn follow_webhooks(webhooks: Arc<Webhooks>, stores: WebhookStores) {
    let queue = WorkQueue::new(
        std::time::Duration::from_millis(50),
        std::time::Duration::from_secs(5),
    );
    let any = |_: &Event| vec![()];
    let (a, b) = (
        runtime::follow(stores.validating.clone(), MANAGER, queue.clone(), any),
        runtime::follow(stores.mutating.clone(), MANAGER, queue.clone(), any),
    );
    let feed = async move {
        tokio::join!(a, b);
    };
    runtime::run(
        Arc::new(WebhookFollower { webhooks, stores }),
        queue,
        1,
        feed,
    )
    .await;
}
