//! Authorization: may this user do this? kubext itself allows every authenticated
//! user (RBAC is a later step); an aggregated API server built on this crate asks
//! its main server instead (SubjectAccessReview, see `kubext-apiserver`).

use apimachinery::{GroupResource, StatusError};

use crate::authn::UserInfo;
use crate::request_info::RequestInfo;

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
    pub fn of(info: &'a RequestInfo, path: &'a str, user: &'a UserInfo) -> Self {
        Attributes {
            user,
            verb: info.verb.as_str(),
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

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Denied, or no opinion; the reason (possibly empty) ends the 403 message.
    Deny(String),
}

#[async_trait::async_trait]
pub trait Authorizer: Send + Sync + 'static {
    async fn authorize(&self, attributes: &Attributes<'_>) -> Decision;
}

/// kubext's policy until RBAC: authenticated users may do anything.
pub struct AllowAuthenticated;

#[async_trait::async_trait]
impl Authorizer for AllowAuthenticated {
    async fn authorize(&self, attributes: &Attributes<'_>) -> Decision {
        if attributes.user.is_anonymous() {
            Decision::Deny(String::new())
        } else {
            Decision::Allow
        }
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
        return StatusError::new(403, "Forbidden", format!("forbidden: {message}"));
    }
    StatusError::forbidden(&GroupResource::new(a.group, a.resource), a.name, &message)
}

#[cfg(test)]
mod tests {
    use super::*;

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
