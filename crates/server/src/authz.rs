//! Authorization: may this user do this? The `Authorizer` trait and the
//! building blocks every server composes: `PrivilegedGroups` (`system:masters`
//! may do anything), `AlwaysAllow`, `AlwaysDeny`, `Union` (the first opinion
//! wins, as `--authorization-mode=A,B` does). kubext adds RBAC (`kubext-rbac`);
//! an aggregated API server built on this crate asks its main server
//! (SubjectAccessReview, see `kubext-apiserver`).

use apimachinery::{GroupResource, StatusError};

use crate::request_info::RequestInfo;
use crate::user::UserInfo;

/// What is asked, in SubjectAccessReview's terms.
#[derive(Debug, Clone, Copy)]
pub struct Attributes<'a> {
    pub user: &'a UserInfo,
    pub verb: &'a str,
    pub group: &'a str,
    pub version: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    /// Set for non-resource requests (`/healthz`, `/apis`, ...).
    pub path: &'a str,
    pub is_resource: bool,
}

impl<'a> Attributes<'a> {
    /// A request's attributes; a non-resource request's verb is its HTTP
    /// method, lower-cased (upstream's RequestInfo).
    pub fn of(
        info: &'a RequestInfo,
        path: &'a str,
        method: &http::Method,
        user: &'a UserInfo,
    ) -> Self {
        Attributes {
            user,
            verb: request_verb(info, method),
            group: &info.group,
            version: &info.version,
            resource: &info.resource,
            subresource: info.subresource.as_str(),
            namespace: &info.namespace,
            name: &info.name,
            path,
            is_resource: info.is_resource,
        }
    }
}

/// A request's verb as authorization and audit name it: the resource verb, or
/// for non-resource requests the lower-cased HTTP method.
pub fn request_verb(info: &RequestInfo, method: &http::Method) -> &'static str {
    if info.is_resource {
        info.verb.as_str()
    } else {
        method_verb(method)
    }
}

/// `get` for GET and so on; an extension method is `unknown`.
fn method_verb(method: &http::Method) -> &'static str {
    match *method {
        http::Method::GET => "get",
        http::Method::HEAD => "head",
        http::Method::POST => "post",
        http::Method::PUT => "put",
        http::Method::PATCH => "patch",
        http::Method::DELETE => "delete",
        http::Method::OPTIONS => "options",
        _ => "unknown",
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Allowed; the reason (possibly empty) goes to the audit log.
    Allow(String),
    /// Denied outright: later authorizers are not asked.
    Deny(String),
    /// Neither: the next authorizer decides; the last one's reason (possibly
    /// empty) ends the 403 message.
    NoOpinion(String),
}

impl Decision {
    pub fn allow() -> Decision {
        Decision::Allow(String::new())
    }

    pub fn is_allowed(&self) -> bool {
        matches!(self, Decision::Allow(_))
    }

    /// Why it was decided so (possibly empty).
    pub fn reason(&self) -> &str {
        match self {
            Decision::Allow(reason) | Decision::Deny(reason) | Decision::NoOpinion(reason) => {
                reason
            }
        }
    }
}

#[async_trait::async_trait]
pub trait Authorizer: Send + Sync + 'static {
    async fn authorize(&self, attributes: &Attributes<'_>) -> Decision;

    /// What [`Self::authorize`] decides, when that needs no waiting (no IO,
    /// no lock awaited): asked first, it spares the boxed futures of the
    /// common answers. `None`: ask `authorize`.
    fn decide_now(&self, _attributes: &Attributes<'_>) -> Option<Decision> {
        None
    }
}

/// Upstream's privileged-groups authorizer: members of these groups
/// (`system:masters`) may do anything; everyone else is left to the next.
pub struct PrivilegedGroups(pub Vec<String>);

impl PrivilegedGroups {
    pub fn masters() -> Self {
        PrivilegedGroups(vec!["system:masters".into()])
    }
}

#[async_trait::async_trait]
impl Authorizer for PrivilegedGroups {
    async fn authorize(&self, attributes: &Attributes<'_>) -> Decision {
        self.decide(attributes)
    }

    fn decide_now(&self, attributes: &Attributes<'_>) -> Option<Decision> {
        Some(self.decide(attributes))
    }
}

impl PrivilegedGroups {
    fn decide(&self, attributes: &Attributes<'_>) -> Decision {
        if attributes.user.groups.iter().any(|g| self.0.contains(g)) {
            Decision::allow()
        } else {
            Decision::NoOpinion(String::new())
        }
    }
}

/// Non-resource paths anyone may reach (upstream's `path` authorizer, an
/// aggregated server's `/healthz`, `/livez`, `/readyz` and below); a trailing
/// `*` matches a prefix.
pub struct AllowPaths(pub Vec<String>);

impl AllowPaths {
    /// The health checks, as a delegating server allows them.
    pub fn health() -> Self {
        AllowPaths(
            [
                "/healthz",
                "/healthz/*",
                "/livez",
                "/livez/*",
                "/readyz",
                "/readyz/*",
            ]
            .map(String::from)
            .to_vec(),
        )
    }

    fn allows(&self, path: &str) -> bool {
        self.0
            .iter()
            .any(|allowed| match allowed.strip_suffix('*') {
                Some(prefix) => path.starts_with(prefix),
                None => path == allowed,
            })
    }
}

#[async_trait::async_trait]
impl Authorizer for AllowPaths {
    async fn authorize(&self, attributes: &Attributes<'_>) -> Decision {
        if !attributes.is_resource && self.allows(attributes.path) {
            Decision::allow()
        } else {
            Decision::NoOpinion(String::new())
        }
    }
}

/// What SelfSubjectRulesReview reports: the rules a user holds.
pub trait RuleResolver: Send + Sync + 'static {
    /// The review's `status` for `user` in `namespace`.
    fn rules_review(&self, user: &UserInfo, namespace: &str) -> serde_json::Value;
}

/// A server that cannot list rules (an aggregated server: its main server can).
pub struct NoRules;

impl RuleResolver for NoRules {
    fn rules_review(&self, _: &UserInfo, _: &str) -> serde_json::Value {
        serde_json::json!({"resourceRules": [], "nonResourceRules": [], "incomplete": true})
    }
}

impl RuleResolver for AlwaysAllow {
    fn rules_review(&self, _: &UserInfo, _: &str) -> serde_json::Value {
        serde_json::json!({
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": false,
        })
    }
}

/// `--authorization-mode=AlwaysAllow`: everyone may do anything, anonymous
/// requests included.
pub struct AlwaysAllow;

#[async_trait::async_trait]
impl Authorizer for AlwaysAllow {
    async fn authorize(&self, _: &Attributes<'_>) -> Decision {
        Decision::allow()
    }
}

/// `--authorization-mode=AlwaysDeny`.
pub struct AlwaysDeny;

#[async_trait::async_trait]
impl Authorizer for AlwaysDeny {
    async fn authorize(&self, _: &Attributes<'_>) -> Decision {
        Decision::Deny(String::new())
    }
}

/// Several authorizers in order: the first that allows or denies decides;
/// when all have no opinion, their reasons are joined (upstream's union).
pub struct Union(pub Vec<std::sync::Arc<dyn Authorizer>>);

#[async_trait::async_trait]
impl Authorizer for Union {
    async fn authorize(&self, attributes: &Attributes<'_>) -> Decision {
        let mut reasons = Vec::new();
        for authorizer in &self.0 {
            match authorizer.authorize(attributes).await {
                Decision::NoOpinion(reason) => {
                    if !reason.is_empty() {
                        reasons.push(reason);
                    }
                }
                decided => return decided,
            }
        }
        Decision::NoOpinion(reasons.join("\n"))
    }

    /// Decided now when every authorizer asked before one decides does.
    fn decide_now(&self, attributes: &Attributes<'_>) -> Option<Decision> {
        let mut reasons = Vec::new();
        for authorizer in &self.0 {
            match authorizer.decide_now(attributes)? {
                Decision::NoOpinion(reason) => {
                    if !reason.is_empty() {
                        reasons.push(reason);
                    }
                }
                decided => return Some(decided),
            }
        }
        Some(Decision::NoOpinion(reasons.join("\n")))
    }
}

/// The 403 kube-apiserver answers a denied request with.
pub fn forbidden(a: &Attributes<'_>, reason: &str) -> StatusError {
    let user = &a.user.name;
    let mut message = if !a.is_resource {
        format!("User {user:?} cannot {} path {:?}", a.verb, a.path)
    } else {
        let resource = if a.subresource.is_empty() {
            a.resource.to_string()
        } else {
            format!("{}/{}", a.resource, a.subresource)
        };
        let scope = if a.namespace.is_empty() {
            "at the cluster scope".to_string()
        } else {
            format!("in the namespace {:?}", a.namespace)
        };
        format!(
            "User {user:?} cannot {} resource {resource:?} in API group {:?} {scope}",
            a.verb, a.group
        )
    };
    if !reason.is_empty() {
        message = format!("{message}: {reason}");
    }
    if !a.is_resource {
        return StatusError::forbidden(&GroupResource::new("", ""), "", &message);
    }
    StatusError::forbidden(&GroupResource::new(a.group, a.resource), a.name, &message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Answers only when awaited, with a reason.
    struct Later(Decision);

    #[async_trait::async_trait]
    impl Authorizer for Later {
        async fn authorize(&self, _: &Attributes<'_>) -> Decision {
            self.0.clone()
        }
    }

    /// Asking `decide_now` first decides what `authorize` alone does.
    #[tokio::test]
    async fn deciding_now_equals_awaiting() {
        let masters = || Arc::new(PrivilegedGroups::masters()) as Arc<dyn Authorizer>;
        let later = |d: Decision| Arc::new(Later(d)) as Arc<dyn Authorizer>;
        let unions: Vec<Union> = vec![
            Union(vec![]),
            Union(vec![masters()]),
            Union(vec![masters(), later(Decision::Deny("no".into()))]),
            Union(vec![later(Decision::NoOpinion("first".into())), masters()]),
            Union(vec![
                masters(),
                Arc::new(PrivilegedGroups(vec!["ops".into()])),
                later(Decision::NoOpinion("rbac".into())),
            ]),
            Union(vec![
                Arc::new(Union(vec![masters()])),
                later(Decision::Allow("later".into())),
            ]),
        ];
        let users = [
            UserInfo {
                name: "admin".into(),
                groups: vec!["system:masters".into()],
                ..Default::default()
            },
            UserInfo {
                name: "op".into(),
                groups: vec!["ops".into()],
                ..Default::default()
            },
            UserInfo::default(),
        ];
        for (i, union) in unions.iter().enumerate() {
            for user in &users {
                let a = Attributes {
                    user,
                    verb: "get",
                    group: "",
                    version: "v1",
                    resource: "pods",
                    subresource: "",
                    namespace: "default",
                    name: "p",
                    path: "/api/v1/namespaces/default/pods/p",
                    is_resource: true,
                };
                let awaited = union.authorize(&a).await;
                let now = match union.decide_now(&a) {
                    Some(decision) => decision,
                    None => union.authorize(&a).await,
                };
                assert_eq!(now, awaited, "union {i}, {}", user.name);
            }
        }
    }

    #[test]
    fn forbidden_messages_read_like_kube_apiservers() {
        let user = UserInfo {
            name: "alice".into(),
            ..Default::default()
        };
        let a = Attributes {
            user: &user,
            verb: "get",
            group: "wardle.example.com",
            version: "v1alpha1",
            resource: "flunders",
            subresource: "",
            namespace: "default",
            name: "one",
            path: "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders/one",
            is_resource: true,
        };
        assert_eq!(
            forbidden(&a, "").status().message,
            r#"flunders.wardle.example.com "one" is forbidden: User "alice" cannot get resource "flunders" in API group "wardle.example.com" in the namespace "default""#
        );
        let cluster = Attributes {
            namespace: "",
            name: "",
            verb: "list",
            ..a
        };
        assert_eq!(
            forbidden(&cluster, "no RBAC policy matched")
                .status()
                .message,
            r#"flunders.wardle.example.com is forbidden: User "alice" cannot list resource "flunders" in API group "wardle.example.com" at the cluster scope: no RBAC policy matched"#
        );
        let path = Attributes {
            is_resource: false,
            path: "/metrics",
            ..a
        };
        assert_eq!(
            forbidden(&path, "").status().message,
            r#"forbidden: User "alice" cannot get path "/metrics""#
        );
    }
}
