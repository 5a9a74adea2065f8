//! RBAC (`rbac.authorization.k8s.io/v1`) for kubext: the authorizer over an
//! indexed snapshot of the policy (`policy`), the rule algebra (`rules`), the
//! escalation checks on writes of roles and bindings (`escalation`), the
//! bootstrap policy created and reconciled at start (`bootstrap`), and the
//! ClusterRole aggregation controller (`aggregation`).
//!
//! Invariant: decisions read one immutable `Policy` snapshot, swapped whole
//! when a role or binding changes; no request waits for a rebuild.

pub mod aggregation;
pub mod bootstrap;
pub mod escalation;
pub mod policy;
pub mod rules;

use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use serde_json::{Value, json};

use apimachinery::StatusError;
use registry::{GenericStore, ListOptions};
use server::authz::{Attributes, Authorizer, Decision, RuleResolver};
use server::user::UserInfo;

pub use policy::Policy;
use policy::{Objects, User};
use rules::Request;

/// The RBAC authorizer: decides from the current `Policy` snapshot.
#[derive(Default)]
pub struct Rbac {
    policy: RwLock<Arc<Policy>>,
    /// Bootstrap objects that count before they are stored: the server is
    /// ready with the bootstrap policy in force while its objects are being
    /// written (a stored object of the same name wins).
    pending: RwLock<Vec<Value>>,
}

impl Rbac {
    pub fn new() -> Arc<Rbac> {
        Arc::new(Rbac::default())
    }

    pub fn policy(&self) -> Arc<Policy> {
        self.policy.read().clone()
    }

    pub fn set(&self, policy: Policy) {
        *self.policy.write() = Arc::new(policy);
    }

    /// Count `objects` until `bootstrapped`.
    pub fn bootstrapping(&self, objects: Vec<Value>) {
        *self.pending.write() = objects;
    }

    /// The bootstrap objects are stored: only stored objects count.
    pub fn bootstrapped(&self) {
        self.pending.write().clear();
    }

    /// Rebuild the snapshot from `stores` (and the pending bootstrap objects).
    pub async fn rebuild(&self, stores: &Stores) -> Result<(), StatusError> {
        let pending = self.pending.read().clone();
        self.set(stores.policy(&pending).await?);
        Ok(())
    }
}

impl RuleResolver for Rbac {
    /// SelfSubjectRulesReview's status for `user` in `namespace`.
    fn rules_review(&self, user: &UserInfo, namespace: &str) -> Value {
        let policy = self.policy();
        let (rules, errors) = policy.rules_for(&user_of(user), namespace);
        let resource_rules: Vec<Value> = rules
            .iter()
            .filter(|r| !r.resources.is_empty())
            .map(|r| {
                let mut v = json!({"verbs": r.verbs});
                for (key, list) in [
                    ("apiGroups", &r.api_groups),
                    ("resources", &r.resources),
                    ("resourceNames", &r.resource_names),
                ] {
                    if !list.is_empty() {
                        v[key] = json!(list);
                    }
                }
                v
            })
            .collect();
        let non_resource_rules: Vec<Value> = rules
            .iter()
            .filter(|r| !r.non_resource_urls.is_empty())
            .map(|r| json!({"verbs": r.verbs, "nonResourceURLs": r.non_resource_urls}))
            .collect();
        let mut status = json!({
            "resourceRules": resource_rules,
            "nonResourceRules": non_resource_rules,
            "incomplete": false,
        });
        match errors.len() {
            0 => {}
            1 => status["evaluationError"] = json!(errors[0]),
            _ => status["evaluationError"] = json!(format!("[{}]", errors.join(", "))),
        }
        status
    }
}

fn user_of(user: &UserInfo) -> User<'_> {
    User {
        name: &user.name,
        groups: &user.groups,
    }
}

#[async_trait::async_trait]
impl Authorizer for Rbac {
    async fn authorize(&self, a: &Attributes<'_>) -> Decision {
        let request = Request {
            verb: a.verb,
            is_resource: a.is_resource,
            api_group: a.group,
            resource: a.resource,
            subresource: a.subresource,
            name: a.name,
            path: a.path,
        };
        match self
            .policy()
            .decide(&user_of(a.user), a.namespace, &request)
        {
            Ok(reason) => Decision::Allow(reason),
            Err(not_allowed) => Decision::NoOpinion(not_allowed.to_string()),
        }
    }
}

/// The stores of the four RBAC kinds.
#[derive(Clone)]
pub struct Stores {
    pub cluster_roles: Arc<GenericStore>,
    pub roles: Arc<GenericStore>,
    pub cluster_role_bindings: Arc<GenericStore>,
    pub role_bindings: Arc<GenericStore>,
}

const MANAGER: &str = "kubext-rbac";

impl Stores {
    /// Build the policy from what the stores hold now, plus those of `pending`
    /// (objects with their `kind`) that are not stored yet.
    pub async fn policy(&self, pending: &[Value]) -> Result<Policy, StatusError> {
        let ctx = runtime::system_context("", MANAGER);
        let list = |store: &Arc<GenericStore>| {
            let (store, ctx) = (store.clone(), ctx.clone());
            async move {
                store
                    .list(&ctx, ListOptions::default())
                    .await
                    .map(|l| l.items)
            }
        };
        let (cluster_roles, roles, crbs, rbs) = (
            list(&self.cluster_roles).await?,
            list(&self.roles).await?,
            list(&self.cluster_role_bindings).await?,
            list(&self.role_bindings).await?,
        );
        let values = |items: &[Arc<registry::Object>]| -> Vec<Value> {
            items.iter().map(|o| o.to_value()).collect()
        };
        let (cluster_roles, roles, crbs, rbs) = (
            values(&cluster_roles),
            values(&roles),
            values(&crbs),
            values(&rbs),
        );
        let mut objects = Objects {
            cluster_roles: cluster_roles.iter().collect(),
            roles: roles.iter().collect(),
            cluster_role_bindings: crbs.iter().collect(),
            role_bindings: rbs.iter().collect(),
        };
        for object in pending {
            objects.push_missing(object);
        }
        Ok(Policy::build(&objects))
    }
}

/// `rbac`'s snapshot, rebuilt from the roles and bindings its stores hold.
struct Follower {
    rbac: Arc<Rbac>,
    stores: Stores,
}

#[async_trait::async_trait]
impl runtime::Snapshot for Follower {
    type Error = StatusError;

    fn name(&self) -> &'static str {
        "rbac-policy"
    }

    async fn rebuild(&self) -> Result<(), StatusError> {
        self.rbac.rebuild(&self.stores).await
    }
}

/// Build the snapshot now, then keep it current after every change to a role
/// or binding (forever).
pub async fn follow(rbac: Arc<Rbac>, stores: Stores) {
    let watched = vec![
        stores.cluster_roles.clone(),
        stores.roles.clone(),
        stores.cluster_role_bindings.clone(),
        stores.role_bindings.clone(),
    ];
    let follower = Arc::new(Follower { rbac, stores });
    runtime::keep_current(follower, watched, MANAGER, Duration::from_millis(100)).await;
}
