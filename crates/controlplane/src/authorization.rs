//! Authorization as `--authorization-mode` configures it: `system:masters`
//! first (always), then the modes in order; RBAC's escalation checks on the
//! four RBAC types; the bootstrap policy reconciled before the server reports
//! ready, then the policy snapshot and ClusterRole aggregation kept current.

use std::sync::{Arc, OnceLock};

use anyhow::{Result, anyhow};
use serde_json::{Value, json};

use rbac::Rbac;
use rbac::escalation::{EscalationCheck, Kind};
use registry::ResourceType;
use server::api::Api;
use server::authz::{AlwaysAllow, AlwaysDeny, Authorizer, PrivilegedGroups, RuleResolver, Union};
use server::user::UserInfo;

/// One `--authorization-mode` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthorizationMode {
    AlwaysAllow,
    AlwaysDeny,
    Rbac,
}

/// An `--authorization-mode` kubext does not have (as written).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("authorization-mode {0:?} is not supported (AlwaysAllow, AlwaysDeny, RBAC)")]
pub struct UnsupportedAuthorizationMode(pub String);

impl AuthorizationMode {
    /// kube-apiserver's spelling.
    pub fn parse(mode: &str) -> Result<AuthorizationMode, UnsupportedAuthorizationMode> {
        match mode {
            "AlwaysAllow" => Ok(AuthorizationMode::AlwaysAllow),
            "AlwaysDeny" => Ok(AuthorizationMode::AlwaysDeny),
            "RBAC" => Ok(AuthorizationMode::Rbac),
            other => Err(UnsupportedAuthorizationMode(other.to_string())),
        }
    }
}

/// The server's authorizer and what RBAC needs next to it.
pub struct Authorization {
    pub rbac: Option<Arc<Rbac>>,
    pub authorizer: Arc<dyn Authorizer>,
    pub rules: Arc<dyn RuleResolver>,
    /// Where the escalation checks find `authorizer` (they are built first).
    whole: Arc<OnceLock<Arc<dyn Authorizer>>>,
    /// Fired once the server is ready: the bootstrap objects are written then,
    /// off the start-up path.
    serving: Arc<tokio::sync::Notify>,
}

impl Authorization {
    pub fn new(modes: &[AuthorizationMode]) -> Authorization {
        let rbac = modes.contains(&AuthorizationMode::Rbac).then(Rbac::new);
        let mut chain: Vec<Arc<dyn Authorizer>> = vec![Arc::new(PrivilegedGroups::masters())];
        let mut resolvers: Vec<Arc<dyn RuleResolver>> = Vec::new();
        for mode in modes {
            match mode {
                AuthorizationMode::AlwaysAllow => {
                    chain.push(Arc::new(AlwaysAllow));
                    resolvers.push(Arc::new(AlwaysAllow));
                }
                AuthorizationMode::AlwaysDeny => chain.push(Arc::new(AlwaysDeny)),
                AuthorizationMode::Rbac => {
                    if let Some(rbac) = &rbac {
                        chain.push(rbac.clone());
                        resolvers.push(rbac.clone());
                    }
                }
            }
        }
        let authorizer: Arc<dyn Authorizer> = Arc::new(Union(chain));
        let whole = Arc::new(OnceLock::new());
        let _ = whole.set(authorizer.clone());
        Authorization {
            rbac,
            authorizer,
            rules: Arc::new(Resolvers(resolvers)),
            whole,
            serving: Arc::new(tokio::sync::Notify::new()),
        }
    }

    /// The server is ready: write the bootstrap policy's objects now.
    pub fn serving(&self) {
        self.serving.notify_one();
    }

    /// `types` with RBAC's escalation checks on the four RBAC kinds.
    pub fn guard(&self, types: Vec<Arc<ResourceType>>) -> Vec<Arc<ResourceType>> {
        let Some(rbac) = &self.rbac else {
            return types;
        };
        types
            .into_iter()
            .map(|t| {
                let kind = match (t.group.as_str(), t.kind.as_str()) {
                    (registry::builtin::rbac::GROUP, "Role") => Kind::Role,
                    (registry::builtin::rbac::GROUP, "ClusterRole") => Kind::ClusterRole,
                    (registry::builtin::rbac::GROUP, "RoleBinding") => Kind::RoleBinding,
                    (registry::builtin::rbac::GROUP, "ClusterRoleBinding") => {
                        Kind::ClusterRoleBinding
                    }
                    _ => return t,
                };
                crate::with(t, |t| {
                    t.admission = Some(Arc::new(EscalationCheck::new(
                        kind,
                        rbac.clone(),
                        self.whole.clone(),
                    )))
                })
            })
            .collect()
    }

    /// Reconcile the bootstrap policy and build the first snapshot (before the
    /// server reports ready), then keep both current. `leadership` gates the
    /// aggregation controller's writes.
    pub async fn start(
        &self,
        api: &Api,
        leadership: runtime::leader::Leadership,
    ) -> Result<tokio::task::JoinHandle<()>> {
        let Some(rbac) = self.rbac.clone() else {
            return Ok(tokio::spawn(async {}));
        };
        let catalog = api.catalog();
        let store = |plural: &str| {
            catalog
                .lookup(registry::builtin::rbac::GROUP, "v1", plural)
                .map(|s| Arc::new(s.store.clone_handle()))
                .ok_or_else(|| anyhow!("{plural} are not served"))
        };
        let stores = rbac::Stores {
            cluster_roles: store("clusterroles")?,
            roles: store("roles")?,
            cluster_role_bindings: store("clusterrolebindings")?,
            role_bindings: store("rolebindings")?,
        };
        // The bootstrap policy is in force at once; its objects are written
        // next to the serving server (a fresh store has ~100 to write).
        rbac.bootstrapping(rbac::bootstrap::objects());
        rbac.rebuild(&stores)
            .await
            .map_err(|e| anyhow!("reading the RBAC policy: {e}"))?;
        let bootstrap = {
            let (rbac, stores, serving) = (rbac.clone(), stores.clone(), self.serving.clone());
            tokio::spawn(async move {
                serving.notified().await;
                for failure in rbac::bootstrap::reconcile(&stores).await {
                    tracing::warn!(%failure, "bootstrap policy: cannot reconcile");
                }
                rbac.bootstrapped();
                if let Err(error) = rbac.rebuild(&stores).await {
                    tracing::warn!(%error, "RBAC policy: cannot rebuild");
                }
            })
        };
        let follow = tokio::spawn(rbac::follow(rbac, stores.clone()));
        let cluster_roles = stores.cluster_roles.clone();
        let aggregation = tokio::spawn(runtime::leader::while_leading(
            leadership,
            "clusterrole-aggregation",
            move || rbac::aggregation::run(cluster_roles.clone()),
        ));
        Ok(tokio::spawn(async move {
            let _ = tokio::join!(bootstrap, follow, aggregation);
        }))
    }
}

/// The rules every mode reports, together (upstream's union of resolvers).
struct Resolvers(Vec<Arc<dyn RuleResolver>>);

impl RuleResolver for Resolvers {
    fn rules_review(&self, user: &UserInfo, namespace: &str) -> Value {
        let mut status = json!({"resourceRules": [], "nonResourceRules": [], "incomplete": false});
        let mut errors = Vec::new();
        for resolver in &self.0 {
            let part = resolver.rules_review(user, namespace);
            for key in ["resourceRules", "nonResourceRules"] {
                if let (Some(all), Some(more)) = (status[key].as_array_mut(), part[key].as_array())
                {
                    all.extend(more.iter().cloned());
                }
            }
            if part["incomplete"] == json!(true) {
                status["incomplete"] = json!(true);
            }
            if let Some(e) = part["evaluationError"].as_str() {
                errors.push(e.to_string());
            }
        }
        if !errors.is_empty() {
            status["evaluationError"] = json!(errors.join(", "));
        }
        status
    }
}
