//! Group/version/kind/resource names.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct GroupVersion {
    pub group: String,
    pub version: String,
}

impl GroupVersion {
    pub fn new(group: &str, version: &str) -> Self {
        GroupVersion {
            group: group.into(),
            version: version.into(),
        }
    }

    /// Parse an `apiVersion` value: `v1` or `apps/v1`.
    pub fn parse(api_version: &str) -> Self {
        match api_version.split_once('/') {
            Some((g, v)) => Self::new(g, v),
            None => Self::new("", api_version),
        }
    }

    /// The `apiVersion` string: `v1` for the core group, `group/version` otherwise.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

impl fmt::Display for GroupVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.api_version())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct GroupVersionKind {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl GroupVersionKind {
    pub fn new(group: &str, version: &str, kind: &str) -> Self {
        GroupVersionKind {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        }
    }

    pub fn api_version(&self) -> String {
        GroupVersion::new(&self.group, &self.version).api_version()
    }
}

/// A group-qualified resource, displayed as upstream does: `configmaps`, `leases.coordination.k8s.io`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct GroupResource {
    pub group: String,
    pub resource: String,
}

impl GroupResource {
    pub fn new(group: &str, resource: &str) -> Self {
        GroupResource {
            group: group.into(),
            resource: resource.into(),
        }
    }
}

impl fmt::Display for GroupResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.resource)
        } else {
            write!(f, "{}.{}", self.resource, self.group)
        }
    }
}
