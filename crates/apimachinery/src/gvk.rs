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
            [self.group.as_str(), "/", &self.version].concat()
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

/// Kubernetes version ordering for discovery: GA before beta before alpha, higher
/// numbers first within each, and non-Kubernetes-style versions last, alphabetically.
/// Returns `Ordering::Less` when `a` should be listed first.
pub fn compare_versions(a: &str, b: &str) -> std::cmp::Ordering {
    fn key(v: &str) -> (u8, i64, i64, String) {
        let Some(rest) = v.strip_prefix('v') else {
            return (3, 0, 0, v.to_string());
        };
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let Ok(major) = digits.parse::<i64>() else {
            return (3, 0, 0, v.to_string());
        };
        let tail = &rest[digits.len()..];
        let level = |prefix: &str, rank: u8| {
            tail.strip_prefix(prefix)
                .and_then(|n| n.parse::<i64>().ok())
                .map(|minor| (rank, -major, -minor, String::new()))
        };
        if tail.is_empty() {
            return (0, -major, 0, String::new());
        }
        level("beta", 1)
            .or_else(|| level("alpha", 2))
            .unwrap_or((3, 0, 0, v.to_string()))
    }
    key(a).cmp(&key(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_aware_version_order() {
        let mut v = vec![
            "v11alpha2",
            "foo1",
            "v10",
            "v12alpha1",
            "v3beta1",
            "v1",
            "v2",
            "v10beta3",
            "foo10",
            "v1beta1",
        ];
        v.sort_by(|a, b| compare_versions(a, b));
        assert_eq!(
            v,
            vec![
                "v10",
                "v2",
                "v1",
                "v10beta3",
                "v3beta1",
                "v1beta1",
                "v12alpha1",
                "v11alpha2",
                "foo1",
                "foo10"
            ]
        );
    }
}
