//! APIService registration (kube-aggregator's autoregister + crdregistration): every
//! group-version this server serves itself gets a local APIService, so
//! `kubectl get apiservices` and aggregated-discovery clients see it. Built-in ones
//! carry `kube-aggregator.kubernetes.io/automanaged: onstart`, those of custom
//! resources `"true"` (priorities 1000/100) and go away with their CRD.

use std::collections::BTreeMap;
use std::time::Duration;

use apimachinery::meta;
use registry::GenericStore;
use registry::builtin::apiregistration::{AUTOMANAGED_LABEL, builtin_priority};
use serde_json::{Value, json};

use crate::{Error, api};
use runtime::{self, Reconciler, WorkQueue};

const MANAGER: &str = "kubext-apiservice-registration";

/// A group-version served here: built in, or from a CRD.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct LocalGroupVersion {
    pub group: String,
    pub version: String,
    pub builtin: bool,
}

/// The APIServices the served group-versions call for, by name.
pub fn desired(served: &[LocalGroupVersion]) -> BTreeMap<String, Value> {
    served
        .iter()
        // The aggregator's own group has no APIService.
        .filter(|gv| gv.group != "apiregistration.k8s.io")
        .filter_map(|gv| {
            let (group_priority, version_priority, managed) = if gv.builtin {
                let (g, v) = builtin_priority(&gv.group, &gv.version)?;
                (g, v, "onstart")
            } else {
                (1000, 100, "true")
            };
            let name = format!("{}.{}", gv.version, gv.group);
            let apiservice = json!({
                "apiVersion": "apiregistration.k8s.io/v1",
                "kind": "APIService",
                "metadata": {"name": name, "labels": {AUTOMANAGED_LABEL: managed}},
                "spec": {
                    "group": gv.group,
                    "version": gv.version,
                    "groupPriorityMinimum": group_priority,
                    "versionPriority": version_priority,
                },
            });
            Some((name, apiservice))
        })
        .collect()
}

fn is_automanaged(obj: &Value) -> bool {
    meta::labels(obj)
        .and_then(|l| l.get(AUTOMANAGED_LABEL))
        .is_some()
}

/// Create what is missing, correct managed specs that drifted, and delete managed
/// APIServices nobody serves any more. APIServices without the automanaged label
/// (registered by users) are never touched.
pub async fn sync(store: &GenericStore, desired: &BTreeMap<String, Value>) -> Result<(), Error> {
    let ctx = runtime::system_context("", MANAGER);
    let existing = store
        .list(&ctx, registry::ListOptions::default())
        .await
        .map_err(api("listing APIServices"))?;
    let mut seen = std::collections::HashSet::new();
    for item in &existing.items {
        let name = meta::name(&item.value()).to_string();
        seen.insert(name.clone());
        match desired.get(&name) {
            Some(want)
                if is_automanaged(&item.value())
                    && item.value().get("spec") != want.get("spec") =>
            {
                let spec = want["spec"].clone();
                store
                    .update_with(&ctx, &name, |current| {
                        let mut next = current.clone();
                        next["spec"] = spec.clone();
                        Ok(next)
                    })
                    .await
                    .map_err(api(format!("updating APIService {name}")))?;
            }
            None if is_automanaged(&item.value()) => {
                match store.delete(&ctx, &name, &Default::default()).await {
                    Ok(_) => {}
                    Err(e) if e.code() == 404 => {}
                    Err(e) => return Err(api(format!("deleting APIService {name}"))(e)),
                }
            }
            _ => {}
        }
    }
    for (name, want) in desired.iter().filter(|(n, _)| !seen.contains(*n)) {
        match store.create(&ctx, want.clone()).await {
            Ok(_) => {}
            Err(e) if e.code() == 409 => {}
            Err(e) => return Err(api(format!("creating APIService {name}"))(e)),
        }
    }
    Ok(())
}

/// Keep APIServices in line with what `served` returns, whenever `changed` fires
/// (a failed sync is retried with backoff).
pub async fn run<F>(
    store: std::sync::Arc<GenericStore>,
    changed: tokio::sync::watch::Receiver<u64>,
    served: F,
) where
    F: Fn() -> Vec<LocalGroupVersion> + Send + Sync + 'static,
{
    let queue = WorkQueue::new(Duration::from_millis(100), Duration::from_secs(10));
    let feed = runtime::follow_changes(changed, queue.clone(), ());
    runtime::run(
        std::sync::Arc::new(Registration { store, served }),
        queue,
        1,
        feed,
    )
    .await;
}

/// The whole set is one key: every sync compares everything.
struct Registration<F> {
    store: std::sync::Arc<GenericStore>,
    served: F,
}

#[async_trait::async_trait]
impl<F> Reconciler for Registration<F>
where
    F: Fn() -> Vec<LocalGroupVersion> + Send + Sync + 'static,
{
    type Key = ();
    type Error = Error;

    fn name(&self) -> &'static str {
        "apiservice-registration"
    }

    async fn reconcile(&self, _: &()) -> Result<(), Error> {
        sync(&self.store, &desired(&(self.served)())).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_and_custom_group_versions() {
        let gv = |g: &str, v: &str, builtin| LocalGroupVersion {
            group: g.into(),
            version: v.into(),
            builtin,
        };
        let want = desired(&[
            gv("", "v1", true),
            gv("apiregistration.k8s.io", "v1", true),
            gv("coordination.k8s.io", "v1", true),
            gv("stable.example.com", "v1", false),
        ]);
        assert_eq!(
            want.keys().collect::<Vec<_>>(),
            vec!["v1.", "v1.coordination.k8s.io", "v1.stable.example.com"]
        );
        assert_eq!(want["v1."]["spec"]["groupPriorityMinimum"], 18000);
        assert_eq!(
            want["v1."]["metadata"]["labels"][AUTOMANAGED_LABEL],
            "onstart"
        );
        let custom = &want["v1.stable.example.com"];
        assert_eq!(custom["spec"]["groupPriorityMinimum"], 1000);
        assert_eq!(custom["spec"]["versionPriority"], 100);
        assert_eq!(custom["metadata"]["labels"][AUTOMANAGED_LABEL], "true");
    }
}
