//! Namespace lifecycle: every namespace gets a `default` ServiceAccount and the
//! `kube-root-ca.crt` ConfigMap; a deleted namespace is emptied (honouring each
//! object's finalizers), then its `kubernetes` finalizer is removed and it goes.

use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

use apimachinery::meta;
use registry::options::DeleteOptions;
use registry::{ListOptions, WatchOptions};
use storage::WatchItem;

use crate::{Resources, system_context};

const MANAGER: &str = "kubext-namespace-controller";
const RETRY: Duration = Duration::from_millis(500);

pub struct NamespaceController<R: Resources> {
    pub resources: Arc<R>,
    /// PEM of the cluster CA published in `kube-root-ca.crt`.
    pub root_ca: String,
}

impl<R: Resources> NamespaceController<R> {
    /// Run forever: follow namespace events and act on each.
    pub async fn run(self: Arc<Self>) {
        loop {
            if let Err(e) = self.clone().watch_once().await {
                tracing::warn!(error = %e, "namespace controller watch ended; restarting");
            }
            tokio::time::sleep(RETRY).await;
        }
    }

    async fn watch_once(self: Arc<Self>) -> Result<(), String> {
        let namespaces = self
            .resources
            .store("", "namespaces")
            .ok_or("namespaces not served")?;
        let ctx = system_context("", MANAGER);
        let mut watcher = namespaces
            .watch(&ctx, WatchOptions::default())
            .await
            .map_err(|e| e.to_string())?;
        for item in std::mem::take(&mut watcher.initial) {
            self.clone().on_event(item);
        }
        while let Some(item) = watcher.events.recv().await {
            self.clone().on_event(item);
        }
        Ok(())
    }

    fn on_event(self: Arc<Self>, item: WatchItem<registry::Object>) {
        let (WatchItem::Added(ns) | WatchItem::Modified(ns)) = item else {
            return;
        };
        let name = meta::name(&ns.value).to_string();
        if meta::deletion_timestamp(&ns.value).is_some() {
            tokio::spawn(async move { self.finalize(&name).await });
        } else {
            tokio::spawn(async move { self.populate(&name).await });
        }
    }

    /// Create what every namespace must contain (idempotent).
    pub async fn populate(&self, namespace: &str) {
        let ctx = system_context(namespace, MANAGER);
        let wanted = [
            (
                "serviceaccounts",
                json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}),
            ),
            (
                "configmaps",
                json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "kube-root-ca.crt", "annotations": {"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}},
                    "data": {"ca.crt": self.root_ca},
                }),
            ),
        ];
        for (plural, obj) in wanted {
            let Some(store) = self.resources.store("", plural) else {
                continue;
            };
            match store.get(&ctx, meta::name(&obj)).await {
                Ok(_) => continue,
                Err(e) if e.code() != 404 => continue,
                Err(_) => {}
            }
            match store.create(&ctx, obj).await {
                Ok(_) => {}
                // Already there, or the namespace is going away meanwhile.
                Err(e) if matches!(e.code(), 409 | 403 | 404) => {}
                Err(e) => {
                    tracing::warn!(namespace, plural, error = %e, "cannot create namespace default object")
                }
            }
        }
    }

    /// Delete everything in a terminating namespace, then let the namespace go.
    async fn finalize(&self, namespace: &str) {
        let mut delay = RETRY;
        loop {
            match self.empty(namespace).await {
                Ok(0) => break,
                Ok(remaining) => {
                    tracing::debug!(namespace, remaining, "namespace content remaining")
                }
                Err(e) => {
                    tracing::warn!(namespace, error = %e, "namespace cleanup failed; retrying")
                }
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(5));
        }
        let Some(namespaces) = self.resources.store("", "namespaces") else {
            return;
        };
        let mut ctx = system_context("", MANAGER);
        ctx.subresource = Some("finalize".into());
        let result = namespaces
            .update_with(&ctx, namespace, |current| {
                let mut next = current.clone();
                let kept: Vec<Value> = current
                    .pointer("/spec/finalizers")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter(|f| f.as_str() != Some("kubernetes"))
                    .cloned()
                    .collect();
                next["spec"]["finalizers"] = json!(kept);
                Ok(next)
            })
            .await;
        match result {
            Ok(_) => tracing::info!(namespace, "namespace finalized"),
            Err(e) if e.code() == 404 => {}
            Err(e) => tracing::warn!(namespace, error = %e, "cannot finalize namespace"),
        }
    }

    /// One pass of deletions; returns how many objects still exist.
    async fn empty(&self, namespace: &str) -> Result<usize, apimachinery::StatusError> {
        let ctx = system_context(namespace, MANAGER);
        let mut remaining = 0;
        for store in self.resources.namespaced() {
            let items = store.list(&ctx, ListOptions::default()).await?.items;
            for item in &items {
                if meta::deletion_timestamp(&item.value).is_some() {
                    remaining += 1;
                    continue;
                }
                match store
                    .delete(&ctx, meta::name(&item.value), &DeleteOptions::default())
                    .await
                {
                    Ok(outcome) if !outcome.deleted => remaining += 1,
                    Ok(_) => {}
                    Err(e) if e.code() == 404 => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(remaining)
    }
}
