//! Admission wired into kubext: the chain of admission policies and webhooks
//! bound to every store, their expressions checked when written, the
//! parameters, namespaces and webhook Services they need read from the
//! catalog, and the followers that recompile them.

use std::sync::{Arc, Weak};

use anyhow::{Result, anyhow};
use apimachinery::selector::LabelSelector;
use registry::{ListOptions, RequestContext, ResourceType};
use serde_json::Value;
use server::api::Api;
use server::authz::{Authorizer, Decision};
use server::user::UserInfo;

use admission::Chain;

/// `types` with admission policies' and webhook configurations' expressions
/// checked on write.
pub fn guard(types: Vec<Arc<ResourceType>>) -> Vec<Arc<ResourceType>> {
    types
        .into_iter()
        .map(|t| {
            let check = match (t.group.as_str(), t.kind.as_str()) {
                (registry::builtin::admissionregistration::GROUP, "ValidatingAdmissionPolicy") => {
                    admission::PolicyCheck::Validating
                }
                (registry::builtin::admissionregistration::GROUP, "MutatingAdmissionPolicy") => {
                    admission::PolicyCheck::Mutating
                }
                (
                    registry::builtin::admissionregistration::GROUP,
                    "ValidatingWebhookConfiguration",
                ) => admission::PolicyCheck::Webhooks("ValidatingWebhookConfiguration"),
                (
                    registry::builtin::admissionregistration::GROUP,
                    "MutatingWebhookConfiguration",
                ) => admission::PolicyCheck::Webhooks("MutatingWebhookConfiguration"),
                _ => return t,
            };
            crate::with(t, |t| t.admission = Some(Arc::new(check)))
        })
        .collect()
}

/// Objects read through the server's catalog; checks asked of its authorizer.
struct CatalogObjects {
    api: Weak<Api>,
    authorizer: Arc<dyn Authorizer>,
}

/// The `authorizer` variable of one request: the server's authorizer, asked
/// for the requesting user (or the service account a check names).
struct RequestAuthorizer {
    authorizer: Arc<dyn Authorizer>,
    user: UserInfo,
}

impl cel_rules::Authorize for RequestAuthorizer {
    fn check(&self, check: &cel_rules::AuthzCheck) -> cel_rules::AuthzDecision {
        let account;
        let user = match &check.service_account {
            Some((namespace, name)) => {
                account = UserInfo {
                    name: format!("system:serviceaccount:{namespace}:{name}"),
                    groups: vec![
                        "system:serviceaccounts".into(),
                        format!("system:serviceaccounts:{namespace}"),
                        "system:authenticated".into(),
                    ],
                    ..Default::default()
                };
                &account
            }
            None => &self.user,
        };
        let attributes = server::authz::Attributes {
            user,
            verb: &check.verb,
            group: &check.group,
            version: "*",
            resource: &check.resource,
            subresource: &check.subresource,
            namespace: &check.namespace,
            name: &check.name,
            path: &check.path,
            is_resource: check.path.is_empty(),
        };
        // RBAC answers at once; an authorizer that must wait (a webhook)
        // blocks this worker thread, as cel functions cannot await.
        let decision = {
            use futures::FutureExt;
            let pending = self.authorizer.authorize(&attributes);
            match pending.now_or_never() {
                Some(d) => d,
                None => tokio::task::block_in_place(|| {
                    tokio::runtime::Handle::current()
                        .block_on(self.authorizer.authorize(&attributes))
                }),
            }
        };
        match decision {
            Decision::Allow(reason) => cel_rules::AuthzDecision {
                allowed: true,
                reason,
                error: String::new(),
            },
            Decision::Deny(reason) | Decision::NoOpinion(reason) => cel_rules::AuthzDecision {
                allowed: false,
                reason,
                error: String::new(),
            },
        }
    }
}

fn system() -> RequestContext {
    runtime::system_context("", "kubext-admission")
}

#[async_trait::async_trait]
impl admission::Objects for CatalogObjects {
    fn authorizer(&self, ctx: &RequestContext) -> Option<Arc<dyn cel_rules::Authorize>> {
        Some(Arc::new(RequestAuthorizer {
            authorizer: self.authorizer.clone(),
            user: UserInfo {
                name: ctx.user.clone(),
                uid: ctx.uid.clone(),
                groups: ctx.groups.clone(),
                extra: ctx.extra.clone(),
            },
        }))
    }

    fn kind_of(&self, group: &str, version: &str, resource: &str) -> Option<String> {
        let api = self.api.upgrade()?;
        let catalog = api.catalog();
        let served = catalog.lookup(group, version, resource)?;
        Some(served.rtype.kind.clone())
    }

    fn other_versions(&self, group: &str, resource: &str, version: &str) -> Vec<String> {
        let Some(api) = self.api.upgrade() else {
            return Vec::new();
        };
        let catalog = api.catalog();
        catalog
            .served()
            .filter(|s| s.rtype.group == group && s.rtype.plural == resource)
            .map(|s| s.rtype.version.clone())
            .filter(|v| v != version)
            .collect()
    }

    async fn namespace(&self, name: &str) -> Option<Value> {
        let api = self.api.upgrade()?;
        let catalog = api.catalog();
        let served = catalog.lookup("", "v1", "namespaces")?;
        let ns = served.store.get(&system(), name).await.ok()?;
        Some(ns.to_value())
    }

    async fn find(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: Option<&str>,
        selector: Option<&LabelSelector>,
    ) -> Result<Vec<Value>, admission::FindError> {
        let api = self.api.upgrade().ok_or(admission::FindError::Stopping)?;
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let catalog = api.catalog();
        let served = catalog
            .served()
            .find(|s| s.rtype.group == group && s.rtype.version == version && s.rtype.kind == kind)
            .ok_or_else(|| admission::FindError::NotServed {
                api_version: api_version.to_string(),
                kind: kind.to_string(),
            })?;
        let mut ctx = system();
        if served.rtype.namespaced {
            ctx.namespace = namespace.to_string();
        }
        match name {
            Some(name) => match served.store.get(&ctx, name).await {
                Ok(o) => Ok(vec![o.to_value()]),
                Err(e) if e.code() == 404 => Ok(Vec::new()),
                Err(e) => Err(e.into()),
            },
            None => {
                let opts = ListOptions {
                    label_selector: selector.cloned(),
                    ..Default::default()
                };
                let listed = served.store.list(&ctx, opts).await?;
                Ok(listed.items.iter().map(|o| o.to_value()).collect())
            }
        }
    }
}

/// Compile the stored policies and webhook configurations, then keep them
/// current.
pub async fn start(
    api: &Arc<Api>,
    authorizer: Arc<dyn Authorizer>,
    chain: &Chain,
    caller: webhook::Caller,
) -> Result<tokio::task::JoinHandle<()>> {
    chain.attach(
        Arc::new(CatalogObjects {
            api: Arc::downgrade(api),
            authorizer,
        }),
        caller,
    );
    let catalog = api.catalog();
    let store = |version: &str, plural: &str| {
        catalog
            .lookup(
                registry::builtin::admissionregistration::GROUP,
                version,
                plural,
            )
            .map(|s| Arc::new(s.store.clone_handle()))
            .ok_or_else(|| anyhow!("{plural} are not served"))
    };
    let stores = admission::Stores {
        policies: store("v1", "validatingadmissionpolicies")?,
        bindings: store("v1", "validatingadmissionpolicybindings")?,
        mutating_policies: store("v1", "mutatingadmissionpolicies")?,
        mutating_bindings: store("v1", "mutatingadmissionpolicybindings")?,
        crds: catalog
            .lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
            .map(|s| Arc::new(s.store.clone_handle()))
            .ok_or_else(|| anyhow!("customresourcedefinitions are not served"))?,
    };
    let webhook_stores = admission::WebhookStores {
        validating: store("v1", "validatingwebhookconfigurations")?,
        mutating: store("v1", "mutatingwebhookconfigurations")?,
    };
    chain
        .policies
        .rebuild(&stores)
        .await
        .map_err(|e| anyhow!("reading admission policies: {e}"))?;
    chain
        .webhooks
        .rebuild(&webhook_stores)
        .await
        .map_err(|e| anyhow!("reading webhook configurations: {e}"))?;
    let (policies, webhooks) = (chain.policies.clone(), chain.webhooks.clone());
    Ok(tokio::spawn(async move {
        tokio::join!(
            admission::follow(policies, stores),
            admission::follow_webhooks(webhooks, webhook_stores)
        );
    }))
}
