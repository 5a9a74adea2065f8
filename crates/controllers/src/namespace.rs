//! Namespace lifecycle: every namespace gets a `default` ServiceAccount and the
//! `kube-root-ca.crt` ConfigMap; a deleted namespace is emptied (honouring each
//! object's finalizers), then its `kubernetes` finalizer is removed and it goes.

use serde_json::{Value, json};
use std::collections::BTreeMap;
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
    /// Objects served elsewhere (extension API servers), deleted too.
    pub remote: Option<Arc<dyn RemoteContent>>,
}

/// Namespaced objects that live outside this server's storage.
#[async_trait::async_trait]
pub trait RemoteContent: Send + Sync + 'static {
    /// Delete what `namespace` holds; what is left, by `<resource>.<group>`, and
    /// what failed. Sources that cannot be reached are skipped, not waited for.
    async fn empty(&self, namespace: &str) -> (BTreeMap<String, usize>, Vec<String>);
}

impl<R: Resources> NamespaceController<R> {
    /// Run forever: follow namespace events and act on each.
    pub async fn run(self: Arc<Self>) {
        crate::runtime::keep_running("namespace", || self.clone().watch_once()).await;
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

    /// Delete everything in a terminating namespace, reporting progress in its
    /// conditions, then let the namespace go.
    async fn finalize(&self, namespace: &str) {
        let mut delay = RETRY;
        loop {
            let pass = self.empty(namespace).await;
            self.report(namespace, &pass).await;
            if pass.done() {
                break;
            }
            tracing::debug!(
                namespace,
                remaining = pass.remaining.values().sum::<usize>(),
                "namespace content remaining"
            );
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

    /// One pass of deletions over every namespaced type.
    async fn empty(&self, namespace: &str) -> Pass {
        let ctx = system_context(namespace, MANAGER);
        let mut pass = Pass::default();
        if let Some(remote) = &self.remote {
            let (remaining, failures) = remote.empty(namespace).await;
            pass.remaining.extend(remaining);
            pass.failures.extend(failures);
        }
        for store in self.resources.namespaced() {
            let rtype = &store.rtype;
            let resource = format!("{}.{}", rtype.plural, rtype.group);
            let items = match store.list(&ctx, ListOptions::default()).await {
                Ok(list) => list.items,
                Err(e) => {
                    pass.failures.push(format!("{resource}: {e}"));
                    continue;
                }
            };
            for item in &items {
                let left = if meta::deletion_timestamp(&item.value).is_some() {
                    Some(item.value.clone())
                } else {
                    match store
                        .delete(&ctx, meta::name(&item.value), &DeleteOptions::default())
                        .await
                    {
                        Ok(outcome) if !outcome.deleted => Some(outcome.object),
                        Ok(_) => None,
                        Err(e) if e.code() == 404 => None,
                        Err(e) => {
                            pass.failures
                                .push(format!("{resource} {}: {e}", meta::name(&item.value)));
                            Some(item.value.clone())
                        }
                    }
                };
                if let Some(left) = left {
                    *pass.remaining.entry(resource.clone()).or_default() += 1;
                    for finalizer in meta::finalizers(&left) {
                        *pass.finalizers.entry(finalizer.to_string()).or_default() += 1;
                    }
                }
            }
        }
        pass
    }

    /// Write upstream's deletion conditions to the namespace's status (when they
    /// change).
    async fn report(&self, namespace: &str, pass: &Pass) {
        let Some(namespaces) = self.resources.store("", "namespaces") else {
            return;
        };
        let mut ctx = system_context("", MANAGER);
        ctx.subresource = Some("status".into());
        let wanted = pass.conditions();
        let result = namespaces
            .update_with(&ctx, namespace, |current| {
                let mut next = current.clone();
                let old = current
                    .pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                let now = apimachinery::time::now_rfc3339();
                let conditions: Vec<Value> = wanted
                    .iter()
                    .map(|(kind, status, reason, message)| {
                        let previous = old.iter().find(|c| c["type"] == *kind);
                        let since = previous
                            .filter(|c| c["status"] == *status)
                            .and_then(|c| c.get("lastTransitionTime").cloned())
                            .unwrap_or_else(|| json!(now));
                        json!({"type": kind, "status": status, "lastTransitionTime": since,
                               "reason": reason, "message": message})
                    })
                    .collect();
                let same = conditions.len() == old.len()
                    && conditions.iter().zip(&old).all(|(a, b)| {
                        ["type", "status", "reason", "message"]
                            .iter()
                            .all(|k| a[k] == b[k])
                    });
                if !same {
                    next["status"]["conditions"] = json!(conditions);
                }
                Ok(next)
            })
            .await;
        if let Err(e) = result
            && e.code() != 404
        {
            tracing::warn!(namespace, error = %e, "cannot record namespace deletion progress");
        }
    }
}

/// What one deletion pass left.
#[derive(Debug, Default)]
struct Pass {
    /// `<resource>.<group>` → objects still there.
    remaining: BTreeMap<String, usize>,
    /// Finalizer → objects still carrying it.
    finalizers: BTreeMap<String, usize>,
    failures: Vec<String>,
}

impl Pass {
    fn done(&self) -> bool {
        self.remaining.is_empty() && self.failures.is_empty()
    }

    /// Upstream's conditions: (type, status, reason, message).
    fn conditions(&self) -> Vec<(&'static str, &'static str, &'static str, String)> {
        let list = |m: &BTreeMap<String, usize>, word: &str| {
            m.iter()
                .map(|(k, n)| format!("{k} {word} {n} resource instances"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        vec![
            (
                "NamespaceDeletionDiscoveryFailure",
                "False",
                "ResourcesDiscovered",
                "All resources successfully discovered".into(),
            ),
            (
                "NamespaceDeletionGroupVersionParsingFailure",
                "False",
                "ParsedGroupVersions",
                "All legacy kube types successfully parsed".into(),
            ),
            if self.failures.is_empty() {
                (
                    "NamespaceDeletionContentFailure",
                    "False",
                    "ContentDeleted",
                    "All content successfully deleted, may be waiting on finalization".into(),
                )
            } else {
                (
                    "NamespaceDeletionContentFailure",
                    "True",
                    "ContentDeletionFailed",
                    format!(
                        "Failed to delete all resource types, {} remaining: {}",
                        self.failures.len(),
                        self.failures.join(", ")
                    ),
                )
            },
            if self.remaining.is_empty() {
                (
                    "NamespaceContentRemaining",
                    "False",
                    "ContentRemoved",
                    "All content successfully removed".into(),
                )
            } else {
                (
                    "NamespaceContentRemaining",
                    "True",
                    "SomeResourcesRemain",
                    format!(
                        "Some resources are remaining: {}",
                        list(&self.remaining, "has")
                    ),
                )
            },
            if self.finalizers.is_empty() {
                (
                    "NamespaceFinalizersRemaining",
                    "False",
                    "ContentHasNoFinalizers",
                    "All content-preserving finalizers finished".into(),
                )
            } else {
                (
                    "NamespaceFinalizersRemaining",
                    "True",
                    "SomeFinalizersRemain",
                    format!(
                        "Some content in the namespace has finalizers remaining: {}",
                        list(&self.finalizers, "in")
                    ),
                )
            },
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_read_like_upstreams() {
        let mut pass = Pass::default();
        pass.remaining.insert("configmaps.".into(), 1);
        pass.remaining
            .insert("crontabs.stable.example.com".into(), 2);
        pass.finalizers.insert("example.com/hold".into(), 1);
        let c = pass.conditions();
        assert_eq!(
            c[3].3,
            "Some resources are remaining: configmaps. has 1 resource instances, crontabs.stable.example.com has 2 resource instances"
        );
        assert_eq!(
            c[4].3,
            "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
        );
        assert!(!pass.done());
        assert_eq!(Pass::default().conditions()[3].2, "ContentRemoved");
        assert!(Pass::default().done());
    }
}
