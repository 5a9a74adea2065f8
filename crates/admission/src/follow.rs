//! Keeps [`Policies`] and [`Webhooks`] current: recompiled after every
//! change to an admission policy, binding or webhook configuration (a burst
//! of changes is one rebuild).

use std::sync::Arc;
use std::time::Duration;

use apimachinery::StatusError;
use registry::{GenericStore, ListOptions};
use runtime::{self, Snapshot};
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

/// The admission policies, recompiled from their stores.
struct Follower {
    policies: Arc<Policies>,
    stores: Stores,
}

#[async_trait::async_trait]
impl Snapshot for Follower {
    type Error = StatusError;

    fn name(&self) -> &'static str {
        "admission-policies"
    }

    async fn rebuild(&self) -> Result<(), StatusError> {
        self.policies.rebuild(&self.stores).await
    }
}

/// Keep `policies` current (forever).
pub async fn follow(policies: Arc<Policies>, stores: Stores) {
    let watched = vec![
        stores.policies.clone(),
        stores.bindings.clone(),
        stores.mutating_policies.clone(),
        stores.mutating_bindings.clone(),
    ];
    let follower = Arc::new(Follower { policies, stores });
    runtime::keep_current(follower, watched, MANAGER, Duration::from_millis(100)).await;
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

/// The webhook configurations, recompiled from their stores.
struct WebhookFollower {
    webhooks: Arc<Webhooks>,
    stores: WebhookStores,
}

#[async_trait::async_trait]
impl Snapshot for WebhookFollower {
    type Error = StatusError;

    fn name(&self) -> &'static str {
        "admission-webhooks"
    }

    async fn rebuild(&self) -> Result<(), StatusError> {
        self.webhooks.rebuild(&self.stores).await
    }
}

/// Keep `webhooks` current (forever).
pub async fn follow_webhooks(webhooks: Arc<Webhooks>, stores: WebhookStores) {
    let watched = vec![stores.validating.clone(), stores.mutating.clone()];
    let follower = Arc::new(WebhookFollower { webhooks, stores });
    runtime::keep_current(follower, watched, MANAGER, Duration::from_millis(50)).await;
}
