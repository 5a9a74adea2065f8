//! Namespace lifecycle: every namespace gets a `default` ServiceAccount and the
//! `kube-root-ca.crt` ConfigMap; a deleted namespace is emptied (honouring each
//! object's finalizers), then its `kubernetes` finalizer is removed and it goes.

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use apimachinery::meta;
use registry::options::DeleteOptions;
use registry::{GenericStore, ListOptions, RequestContext};

use crate::{Error, api};
use runtime::{self, Event, Reconciler, Reflector, WorkQueue};
use runtime::{Resources, system_context};

const MANAGER: &str = "kubext-namespace-controller";

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
    /// Run forever: reconcile every namespace that changes (on the controller
    /// runtime: one key per namespace, failed passes retried with per-namespace
    /// backoff).
    pub async fn run(self: Arc<Self>) {
        let Some(namespaces) = self.resources.store("", "namespaces") else {
            tracing::error!("namespaces are not served; the namespace controller does not run");
            return;
        };
        let queue = WorkQueue::new(Duration::from_millis(100), Duration::from_secs(5));
        let namespaces = runtime::follow(Reflector::new(namespaces, MANAGER), queue.clone(), names);
        // A default object deleted or changed is put back, as the service
        // account controller and the root CA publisher of kube-controller-
        // manager do: its namespace is reconciled again.
        let default_objects = DEFAULT_OBJECTS.map(|(plural, name)| {
            let store = self.resources.store("", plural);
            let queue = queue.clone();
            async move {
                match store {
                    // Only the default object's events: not every ConfigMap write.
                    Some(store) => {
                        let reflector = Reflector::named(store, name, MANAGER);
                        runtime::follow(reflector, queue, |e| namespaces_of(e, name)).await
                    }
                    None => std::future::pending().await,
                }
            }
        });
        let [service_accounts, root_ca] = default_objects;
        // Each feed a task of its own: an event wakes the one it is for (a
        // `join!` of them would poll all three for every ConfigMap written).
        let feed = async {
            let mut feeds = tokio::task::JoinSet::new();
            feeds.spawn(namespaces);
            feeds.spawn(service_accounts);
            feeds.spawn(root_ca);
            while let Some(ended) = feeds.join_next().await {
                if let Err(error) = ended
                    && error.is_panic()
                {
                    std::panic::resume_unwind(error.into_panic());
                }
            }
        };
        runtime::run(self, queue, WORKERS, feed).await;
    }

    /// Empty a terminating namespace pass by pass, then let it go; make sure a
    /// live one has its default objects.
    async fn reconcile_namespace(&self, name: &str) -> Result<(), Error> {
        let Some(namespaces) = self.resources.store("", "namespaces") else {
            return Err(Error::NotServed("namespaces"));
        };
        let namespace = match namespaces.get(&system_context("", MANAGER), name).await {
            Ok(namespace) => namespace,
            Err(e) if e.code() == 404 => return Ok(()),
            Err(e) => return Err(api(format!("reading namespace {name}"))(e)),
        };
        if meta::deletion_timestamp(&namespace.value()).is_none() {
            self.populate(name).await;
            return Ok(());
        }
        let pass = self.empty(name).await;
        self.report(name, &pass).await;
        if !pass.done() {
            return Err(Error::NamespaceNotEmpty {
                remaining: pass.remaining.values().sum(),
                failures: pass.failures.len(),
            });
        }
        self.finalize(name).await
    }

    /// Create what every namespace must contain, and put the root CA back
    /// into a `kube-root-ca.crt` that lost it (idempotent).
    pub async fn populate(&self, namespace: &str) {
        let ctx = system_context(namespace, MANAGER);
        let wanted = [
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": DEFAULT_SERVICE_ACCOUNT}}),
            json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": ROOT_CA_CONFIG_MAP, "annotations": {DESCRIPTION_ANNOTATION: ROOT_CA_DESCRIPTION}},
                "data": {"ca.crt": self.root_ca},
            }),
        ];
        for ((plural, _), obj) in DEFAULT_OBJECTS.into_iter().zip(wanted) {
            let Some(store) = self.resources.store("", plural) else {
                continue;
            };
            match store.get(&ctx, meta::name(&obj)).await {
                Ok(current) if plural == "configmaps" => {
                    self.restore_root_ca(&store, &ctx, &current.value()).await;
                    continue;
                }
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

    /// The root CA publisher's repair: `data` is exactly the CA, and the
    /// description annotation is there.
    async fn restore_root_ca(&self, store: &GenericStore, ctx: &RequestContext, current: &Value) {
        let data = json!({"ca.crt": self.root_ca});
        let described = meta::annotations(current)
            .and_then(|a| a.get(DESCRIPTION_ANNOTATION))
            .and_then(Value::as_str)
            .is_some_and(|d| !d.is_empty());
        if current.get("data") == Some(&data) && described {
            return;
        }
        let result = store
            .update_with(ctx, ROOT_CA_CONFIG_MAP, |current| {
                let mut next = current.clone();
                next["data"] = data.clone();
                let metadata = meta::metadata_mut(&mut next);
                if !metadata.get("annotations").is_some_and(Value::is_object) {
                    metadata.insert("annotations".into(), json!({}));
                }
                let annotations = &mut metadata["annotations"];
                if annotations
                    .get(DESCRIPTION_ANNOTATION)
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
                {
                    annotations[DESCRIPTION_ANNOTATION] = json!(ROOT_CA_DESCRIPTION);
                }
                Ok(next)
            })
            .await;
        if let Err(e) = result
            && !matches!(e.code(), 404 | 409)
        {
            tracing::warn!(namespace = %ctx.namespace, error = %e, "cannot restore kube-root-ca.crt");
        }
    }

    /// Remove the `kubernetes` finalizer of an emptied namespace.
    async fn finalize(&self, namespace: &str) -> Result<(), Error> {
        let Some(namespaces) = self.resources.store("", "namespaces") else {
            return Err(Error::NotServed("namespaces"));
        };
        let mut ctx = system_context("", MANAGER);
        ctx.subresource = apimachinery::Subresource::Finalize;
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
            Ok(_) => {
                tracing::info!(namespace, "namespace finalized");
                Ok(())
            }
            Err(e) if e.code() == 404 => Ok(()),
            Err(e) => Err(api(format!("finalizing namespace {namespace}"))(e)),
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
                let left = if meta::deletion_timestamp(&item.value()).is_some() {
                    Some(item.to_value())
                } else {
                    match store
                        .delete(&ctx, meta::name(&item.value()), &DeleteOptions::default())
                        .await
                    {
                        Ok(outcome) if !outcome.deleted => Some(outcome.object),
                        Ok(_) => None,
                        Err(e) if e.code() == 404 => None,
                        Err(e) => {
                            pass.failures
                                .push(format!("{resource} {}: {e}", meta::name(&item.value())));
                            Some(item.to_value())
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
        ctx.subresource = apimachinery::Subresource::Status;
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

#[async_trait::async_trait]
impl<R: Resources> Reconciler for NamespaceController<R> {
    type Key = String;
    type Error = Error;

    fn name(&self) -> &'static str {
        "namespace"
    }

    async fn reconcile(&self, name: &String) -> Result<(), Error> {
        self.reconcile_namespace(name).await
    }

    fn in_progress(&self, error: &Error) -> bool {
        matches!(error, Error::NamespaceNotEmpty { .. })
    }
}

/// Namespaces are reconciled independently; a few at once keep one slow
/// namespace from holding up the rest.
const WORKERS: usize = 4;

/// The namespaces an event concerns.
/// The objects every namespace holds, by plural and name.
const DEFAULT_OBJECTS: [(&str, &str); 2] = [
    ("serviceaccounts", DEFAULT_SERVICE_ACCOUNT),
    ("configmaps", ROOT_CA_CONFIG_MAP),
];
const DEFAULT_SERVICE_ACCOUNT: &str = "default";
const ROOT_CA_CONFIG_MAP: &str = "kube-root-ca.crt";
const DESCRIPTION_ANNOTATION: &str = "kubernetes.io/description";
const ROOT_CA_DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

/// The namespaces whose default object `name` changed or went.
fn namespaces_of(event: &Event, name: &str) -> Vec<String> {
    // A restart lists every object; the namespaces' own feed covers them.
    let (Event::Applied(obj) | Event::Deleted(obj)) = event else {
        return Vec::new();
    };
    // Every ConfigMap write passes here: look at the name, not the object.
    match obj.namespace_if_named(name) {
        Some(namespace) => vec![namespace.into_owned()],
        None => Vec::new(),
    }
}

fn names(event: &Event) -> Vec<String> {
    match event {
        Event::Restarted(all) => all
            .iter()
            .map(|ns| meta::name(&ns.value()).to_string())
            .collect(),
        Event::Applied(ns) | Event::Deleted(ns) => vec![meta::name(&ns.value()).to_string()],
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
