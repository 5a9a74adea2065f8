//! Admission policies wired into kubext: the compiled policies bound to every
//! store, their expressions checked when written, their parameters and
//! namespaces read from the catalog, and the follower that recompiles them.

use std::sync::{Arc, Weak};

use anyhow::{Result, anyhow};
use apimachinery::selector::LabelSelector;
use registry::{ListOptions, RequestContext, ResourceType};
use serde_json::Value;
use server::api::Api;

use admission::Policies;

/// `types` with ValidatingAdmissionPolicies' expressions checked on write.
pub fn guard(types: Vec<Arc<ResourceType>>) -> Vec<Arc<ResourceType>> {
    types
        .into_iter()
        .map(|t| {
            if t.group != registry::builtin::admissionregistration::GROUP
                || t.kind != "ValidatingAdmissionPolicy"
            {
                return t;
            }
            match Arc::try_unwrap(t) {
                Ok(mut t) => {
                    t.admission = Some(Arc::new(admission::PolicyCheck));
                    Arc::new(t)
                }
                Err(shared) => shared,
            }
        })
        .collect()
}

/// Objects read through the server's catalog.
struct CatalogObjects(Weak<Api>);

fn system() -> RequestContext {
    controllers::system_context("", "kubext-admission")
}

#[async_trait::async_trait]
impl admission::Objects for CatalogObjects {
    async fn namespace(&self, name: &str) -> Option<Value> {
        let api = self.0.upgrade()?;
        let catalog = api.catalog();
        let served = catalog.lookup("", "v1", "namespaces")?;
        let ns = served.store.get(&system(), name).await.ok()?;
        Some(ns.value.clone())
    }

    async fn find(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: Option<&str>,
        selector: Option<&LabelSelector>,
    ) -> Result<Vec<Value>, String> {
        let api = self.0.upgrade().ok_or("the server is stopping")?;
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let catalog = api.catalog();
        let served = catalog
            .served()
            .find(|s| s.rtype.group == group && s.rtype.version == version && s.rtype.kind == kind)
            .ok_or_else(|| {
                format!(
                    "failed to find resource referenced by paramKind: '{api_version}, Kind={kind}'"
                )
            })?;
        let mut ctx = system();
        if served.rtype.namespaced {
            ctx.namespace = namespace.to_string();
        }
        match name {
            Some(name) => match served.store.get(&ctx, name).await {
                Ok(o) => Ok(vec![o.value.clone()]),
                Err(e) if e.code() == 404 => Ok(Vec::new()),
                Err(e) => Err(e.to_string()),
            },
            None => {
                let opts = ListOptions {
                    label_selector: selector.cloned(),
                    ..Default::default()
                };
                let listed = served
                    .store
                    .list(&ctx, opts)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(listed.items.iter().map(|o| o.value.clone()).collect())
            }
        }
    }
}

/// Compile the stored policies, then keep them current.
pub async fn start(api: &Arc<Api>, policies: Arc<Policies>) -> Result<tokio::task::JoinHandle<()>> {
    policies.attach(Arc::new(CatalogObjects(Arc::downgrade(api))));
    let catalog = api.catalog();
    let store = |plural: &str| {
        catalog
            .lookup(
                registry::builtin::admissionregistration::GROUP,
                "v1",
                plural,
            )
            .map(|s| Arc::new(s.store.clone_handle()))
            .ok_or_else(|| anyhow!("{plural} are not served"))
    };
    let stores = admission::Stores {
        policies: store("validatingadmissionpolicies")?,
        bindings: store("validatingadmissionpolicybindings")?,
    };
    policies
        .rebuild(&stores)
        .await
        .map_err(|e| anyhow!("reading admission policies: {e}"))?;
    Ok(tokio::spawn(admission::follow(policies, stores)))
}
