//! Escalation prevention on writes of roles and bindings (upstream's
//! `policybased` storages): a user may only create or change a role whose
//! permissions it holds itself (or with the `escalate` verb on it), and only
//! bind a role whose permissions it holds (or with the `bind` verb on it).
//! `system:masters` may do anything. Runs as the four types' `Admission`.

use std::sync::{Arc, OnceLock};

use serde_json::Value;

use apimachinery::{GroupResource, StatusError, meta};
use registry::{Admission, Operation, RequestContext};
use server::authz::{Attributes, Authorizer};
use server::user::UserInfo;

use crate::Rbac;
use crate::policy::{RoleRef, User};
use crate::rules::{PolicyRule, compact, uncovered};

const GROUP: &str = "rbac.authorization.k8s.io";

/// Which of the four kinds a check guards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Role,
    ClusterRole,
    RoleBinding,
    ClusterRoleBinding,
}

impl Kind {
    fn plural(self) -> &'static str {
        match self {
            Kind::Role => "roles",
            Kind::ClusterRole => "clusterroles",
            Kind::RoleBinding => "rolebindings",
            Kind::ClusterRoleBinding => "clusterrolebindings",
        }
    }
}

/// The escalation check of one kind. `authorizer` is the server's whole
/// authorizer (asked about `escalate` and `bind`); it is set once the server's
/// authorizer exists, which is built after the types.
pub struct EscalationCheck {
    kind: Kind,
    rbac: Arc<Rbac>,
    authorizer: Arc<OnceLock<Arc<dyn Authorizer>>>,
}

impl EscalationCheck {
    pub fn new(
        kind: Kind,
        rbac: Arc<Rbac>,
        authorizer: Arc<OnceLock<Arc<dyn Authorizer>>>,
    ) -> Self {
        EscalationCheck {
            kind,
            rbac,
            authorizer,
        }
    }

    /// Whether the authorizer allows `verb` on `resource` named `name`.
    async fn allowed(
        &self,
        user: &UserInfo,
        verb: &str,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> bool {
        let Some(authorizer) = self.authorizer.get() else {
            return false;
        };
        let attributes = Attributes {
            user,
            verb,
            group: GROUP,
            version: "*",
            resource,
            subresource: "",
            namespace,
            name,
            path: "",
            is_resource: true,
        };
        authorizer.authorize(&attributes).await.is_allowed()
    }

    /// Upstream's `ConfirmNoEscalation`: `user` must hold every rule of `wanted`
    /// in `namespace`.
    fn confirm_no_escalation(
        &self,
        user: &UserInfo,
        namespace: &str,
        wanted: &[PolicyRule],
    ) -> Result<(), String> {
        let policy = self.rbac.policy();
        let (owned, errors) = policy.rules_for(
            &User {
                name: &user.name,
                groups: &user.groups,
            },
            namespace,
        );
        let missing = uncovered(&owned, wanted);
        if missing.is_empty() {
            return Ok(());
        }
        let mut lines: Vec<String> = compact(missing)
            .iter()
            .map(PolicyRule::compact_string)
            .collect();
        lines.sort();
        lines.dedup();
        let groups: Vec<String> = user.groups.iter().map(|g| format!("{g:?}")).collect();
        let mut message = format!(
            "user {:?} (groups=[{}]) is attempting to grant RBAC permissions not currently held:\n{}",
            user.name,
            groups.join(" "),
            lines.join("\n")
        );
        if !errors.is_empty() {
            message.push_str(&format!("; resolution errors: [{}]", errors.join(" ")));
        }
        Err(message)
    }

    fn forbidden(&self, name: &str, message: &str) -> StatusError {
        StatusError::forbidden(
            &GroupResource::new(GROUP, self.kind.plural()),
            name,
            message,
        )
    }

    async fn check_role(
        &self,
        new: &Value,
        old: Option<&Value>,
        ctx: &RequestContext,
    ) -> Result<(), StatusError> {
        if old.is_some_and(|old| {
            old.get("rules") == new.get("rules")
                && old.get("aggregationRule") == new.get("aggregationRule")
        }) {
            return Ok(());
        }
        let user = UserInfo::of_context(ctx);
        let name = meta::name(new);
        let namespace = meta::namespace(new);
        // A create's request has no name yet (upstream asks with its RequestInfo).
        let asked_name = if old.is_some() { name } else { "" };
        if self
            .allowed(&user, "escalate", self.kind.plural(), namespace, asked_name)
            .await
        {
            return Ok(());
        }
        let rules: Vec<PolicyRule> = new
            .get("rules")
            .cloned()
            .and_then(|r| serde_json::from_value(r).ok())
            .unwrap_or_default();
        self.confirm_no_escalation(&user, namespace, &rules)
            .map_err(|message| self.forbidden(name, &message))?;
        let aggregates = |v: &Value| {
            v.pointer("/aggregationRule/clusterRoleSelectors")
                .and_then(Value::as_array)
                .is_some_and(|s| !s.is_empty())
        };
        if self.kind == Kind::ClusterRole && (aggregates(new) || old.is_some_and(aggregates)) {
            let everything = [
                PolicyRule {
                    verbs: vec!["*".into()],
                    api_groups: vec!["*".into()],
                    resources: vec!["*".into()],
                    ..Default::default()
                },
                PolicyRule {
                    verbs: vec!["*".into()],
                    non_resource_urls: vec!["*".into()],
                    ..Default::default()
                },
            ];
            if self.confirm_no_escalation(&user, "", &everything).is_err() {
                return Err(self.forbidden(
                    name,
                    "must have cluster-admin privileges to use the aggregationRule",
                ));
            }
        }
        Ok(())
    }

    async fn check_binding(
        &self,
        new: &Value,
        old: Option<&Value>,
        ctx: &RequestContext,
    ) -> Result<(), StatusError> {
        if old.is_some_and(|old| {
            old.get("roleRef") == new.get("roleRef") && old.get("subjects") == new.get("subjects")
        }) {
            return Ok(());
        }
        let user = UserInfo::of_context(ctx);
        let name = meta::name(new);
        let namespace = meta::namespace(new);
        let role_ref: RoleRef = new
            .get("roleRef")
            .cloned()
            .and_then(|r| serde_json::from_value(r).ok())
            .unwrap_or_default();
        let role_resource = match role_ref.kind.as_str() {
            "ClusterRole" => Some("clusterroles"),
            "Role" => Some("roles"),
            _ => None,
        };
        if let Some(resource) = role_resource
            && self
                .allowed(&user, "bind", resource, namespace, &role_ref.name)
                .await
        {
            return Ok(());
        }
        let rules = self
            .rbac
            .policy()
            .role_rules(&role_ref, namespace)
            .map_err(|_| {
                let plural = role_resource.unwrap_or("clusterroles");
                StatusError::not_found(&GroupResource::new(GROUP, plural), &role_ref.name)
            })?;
        self.confirm_no_escalation(&user, namespace, &rules)
            .map_err(|message| self.forbidden(name, &message))
    }
}

#[async_trait::async_trait]
impl Admission for EscalationCheck {
    async fn admit(
        &self,
        _operation: Operation,
        new: &Value,
        old: Option<&Value>,
        ctx: &RequestContext,
    ) -> Result<(), StatusError> {
        if ctx.groups.iter().any(|g| g == "system:masters") {
            return Ok(());
        }
        match self.kind {
            Kind::Role | Kind::ClusterRole => self.check_role(new, old, ctx).await,
            Kind::RoleBinding | Kind::ClusterRoleBinding => self.check_binding(new, old, ctx).await,
        }
    }
}
