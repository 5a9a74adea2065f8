//! Who a request is made by, as authentication found and impersonation,
//! authorization, audit and the registry see it. Its own module: every
//! layer that names a user depends on it, and it on nothing of theirs.

use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    /// Extra attributes (`X-Remote-Extra-<key>` from a front proxy).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    pub fn anonymous() -> Self {
        UserInfo {
            name: "system:anonymous".into(),
            groups: vec!["system:unauthenticated".into()],
            ..Default::default()
        }
    }

    /// The user a registry request is made by.
    pub fn of_context(ctx: &registry::RequestContext) -> Self {
        UserInfo {
            name: ctx.user.clone(),
            uid: ctx.uid.clone(),
            groups: ctx.groups.clone(),
            extra: ctx.extra.clone(),
        }
    }

    pub fn is_anonymous(&self) -> bool {
        self.name == "system:anonymous"
    }

    pub(crate) fn authenticated(mut self) -> Self {
        if !self.groups.iter().any(|g| g == "system:authenticated") {
            self.groups.push("system:authenticated".into());
        }
        self
    }
}
