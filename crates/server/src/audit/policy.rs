//! The audit policy (`audit.k8s.io/v1` Policy): rules tried in order, the
//! first that matches gives the level; no match is `None`. Matching follows
//! upstream's checker: users and groups of the authenticated (not the
//! impersonated) user, verbs, resources by exact group with `*`, `*/sub` and
//! `res/*` forms and resource names, namespaces, non-resource URLs with a
//! trailing `*`.

use serde::Deserialize;

/// How much of a request is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
pub enum Level {
    None,
    Metadata,
    Request,
    RequestResponse,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }
}

/// When in a request's life an event is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Stage {
    RequestReceived,
    ResponseStarted,
    ResponseComplete,
    Panic,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::RequestReceived => "RequestReceived",
            Stage::ResponseStarted => "ResponseStarted",
            Stage::ResponseComplete => "ResponseComplete",
            Stage::Panic => "Panic",
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GroupResources {
    #[serde(default)]
    group: String,
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    resource_names: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Rule {
    level: Level,
    #[serde(default)]
    users: Vec<String>,
    #[serde(default)]
    user_groups: Vec<String>,
    #[serde(default)]
    verbs: Vec<String>,
    #[serde(default)]
    resources: Vec<GroupResources>,
    #[serde(default)]
    namespaces: Vec<String>,
    #[serde(default, rename = "nonResourceURLs")]
    non_resource_urls: Vec<String>,
    #[serde(default)]
    omit_stages: Vec<Stage>,
    #[serde(default)]
    omit_managed_fields: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    rules: Vec<Rule>,
    #[serde(default)]
    omit_stages: Vec<Stage>,
    #[serde(default)]
    omit_managed_fields: bool,
}

/// What the policy says of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub level: Level,
    pub omit_stages: Vec<Stage>,
    pub omit_managed_fields: bool,
}

/// What a request is, as the policy matches it.
pub struct Request<'a> {
    /// `None` when authentication failed.
    pub user: Option<(&'a str, &'a [String])>,
    pub verb: &'a str,
    pub is_resource: bool,
    pub group: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    pub path: &'a str,
}

/// Why a policy file is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    #[error("invalid audit policy: {0}")]
    Decode(String),
    #[error(
        "unknown group version field {0:?} in policy (want apiVersion audit.k8s.io/v1, kind Policy)"
    )]
    UnknownVersion(String),
    #[error("loaded illegal policy with 0 rules")]
    NoRules,
    #[error("rules[{0}]{1}")]
    Rule(usize, RuleProblem),
}

/// What is wrong with one rule; its text follows `rules[i]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleProblem {
    #[error(": rules cannot apply to both regular resources and non-resource URLs")]
    ResourcesAndUrls,
    #[error(".nonResourceURLs: non-resource URL rules must begin with a '/' character")]
    UrlWithoutSlash,
    #[error(
        ".nonResourceURLs: non-resource URL wildcards '*' must be the final character of the rule"
    )]
    InnerWildcard,
    #[error(".resources[{0}].resourceNames: using resourceNames requires at least one resource")]
    NamesWithoutResource(usize),
}

impl Rule {
    fn check(&self) -> Result<(), RuleProblem> {
        if !self.non_resource_urls.is_empty()
            && (!self.resources.is_empty() || !self.namespaces.is_empty())
        {
            return Err(RuleProblem::ResourcesAndUrls);
        }
        for url in &self.non_resource_urls {
            if !url.starts_with('/') && url != "*" {
                return Err(RuleProblem::UrlWithoutSlash);
            }
            if url.trim_end_matches('*').contains('*') {
                return Err(RuleProblem::InnerWildcard);
            }
        }
        match self
            .resources
            .iter()
            .position(|gr| !gr.resource_names.is_empty() && gr.resources.is_empty())
        {
            Some(j) => Err(RuleProblem::NamesWithoutResource(j)),
            None => Ok(()),
        }
    }
}

impl Policy {
    /// Parse and check a policy file's content (YAML or JSON).
    pub fn parse(text: &str) -> Result<Policy, PolicyError> {
        let policy: Policy =
            serde_saphyr::from_str(text).map_err(|e| PolicyError::Decode(e.to_string()))?;
        if policy.api_version != "audit.k8s.io/v1" || policy.kind != "Policy" {
            return Err(PolicyError::UnknownVersion(policy.api_version));
        }
        if policy.rules.is_empty() {
            return Err(PolicyError::NoRules);
        }
        for (i, rule) in policy.rules.iter().enumerate() {
            rule.check()
                .map_err(|problem| PolicyError::Rule(i, problem))?;
        }
        Ok(policy)
    }

    pub fn decide(&self, r: &Request<'_>) -> Decision {
        match self.rules.iter().find(|rule| rule.matches(r)) {
            Some(rule) => Decision {
                level: rule.level,
                omit_stages: self
                    .omit_stages
                    .iter()
                    .chain(&rule.omit_stages)
                    .copied()
                    .collect(),
                omit_managed_fields: rule.omit_managed_fields.unwrap_or(self.omit_managed_fields),
            },
            None => Decision {
                level: Level::None,
                omit_stages: self.omit_stages.clone(),
                omit_managed_fields: self.omit_managed_fields,
            },
        }
    }
}

impl Rule {
    fn matches(&self, r: &Request<'_>) -> bool {
        if !self.users.is_empty()
            && !r
                .user
                .is_some_and(|(name, _)| self.users.iter().any(|u| u == name))
        {
            return false;
        }
        if !self.user_groups.is_empty()
            && !r
                .user
                .is_some_and(|(_, groups)| groups.iter().any(|g| self.user_groups.contains(g)))
        {
            return false;
        }
        if !self.verbs.is_empty() && !self.verbs.iter().any(|v| v == r.verb) {
            return false;
        }
        if !self.namespaces.is_empty() || !self.resources.is_empty() {
            return r.is_resource && self.matches_resource(r);
        }
        if !self.non_resource_urls.is_empty() {
            return !r.is_resource
                && self.non_resource_urls.iter().any(|url| {
                    url == "*"
                        || url == r.path
                        || url.ends_with('*') && r.path.starts_with(url.trim_end_matches('*'))
                });
        }
        true
    }

    fn matches_resource(&self, r: &Request<'_>) -> bool {
        if !self.namespaces.is_empty() && !self.namespaces.iter().any(|n| n == r.namespace) {
            return false;
        }
        if self.resources.is_empty() {
            return true;
        }
        let combined = if r.subresource.is_empty() {
            r.resource.to_string()
        } else {
            format!("{}/{}", r.resource, r.subresource)
        };
        self.resources.iter().any(|gr| {
            if gr.group != r.group {
                return false;
            }
            if gr.resources.is_empty() {
                return true;
            }
            if !gr.resource_names.is_empty() && !gr.resource_names.iter().any(|n| n == r.name) {
                return false;
            }
            gr.resources.iter().any(|res| {
                res == "*"
                    || *res == combined
                    || res
                        .strip_prefix("*/")
                        .is_some_and(|sub| sub == r.subresource)
                    || res
                        .strip_suffix("/*")
                        .is_some_and(|parent| parent == r.resource)
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: RequestResponse
  resources:
  - group: ""
    resources: ["pods"]
- level: Metadata
  resources:
  - group: ""
    resources: ["pods/log", "pods/status"]
- level: None
  resources:
  - group: ""
    resources: ["configmaps"]
    resourceNames: ["controller-leader"]
- level: None
  users: ["system:kube-proxy"]
  verbs: ["watch"]
  resources:
  - group: ""
    resources: ["endpoints", "services"]
- level: None
  userGroups: ["system:authenticated"]
  nonResourceURLs: ["/api*", "/version"]
- level: Request
  resources:
  - group: ""
    resources: ["configmaps"]
  namespaces: ["kube-system"]
- level: Metadata
  omitStages: ["ResponseStarted"]
"#;

    fn resource<'a>(
        verb: &'a str,
        resource: &'a str,
        sub: &'a str,
        ns: &'a str,
        name: &'a str,
    ) -> Request<'a> {
        Request {
            user: Some(("alice", &[])),
            verb,
            is_resource: true,
            group: "",
            resource,
            subresource: sub,
            namespace: ns,
            name,
            path: "",
        }
    }

    #[test]
    fn the_docs_example_policy_decides_as_upstream() {
        let p = Policy::parse(POLICY).unwrap();
        let level = |r: &Request<'_>| p.decide(r).level;
        assert_eq!(
            level(&resource("get", "pods", "", "default", "p")),
            Level::RequestResponse
        );
        assert_eq!(
            level(&resource("get", "pods", "log", "default", "p")),
            Level::Metadata
        );
        assert_eq!(
            level(&resource(
                "update",
                "configmaps",
                "",
                "default",
                "controller-leader"
            )),
            Level::None
        );
        assert_eq!(
            level(&resource(
                "update",
                "configmaps",
                "",
                "kube-system",
                "other"
            )),
            Level::Request
        );
        assert_eq!(
            level(&resource("update", "configmaps", "", "default", "other")),
            Level::Metadata
        );
        let groups = ["system:authenticated".to_string()];
        let path = |p: &'static str| Request {
            user: Some(("alice", &groups)),
            verb: "get",
            is_resource: false,
            group: "",
            resource: "",
            subresource: "",
            namespace: "",
            name: "",
            path: p,
        };
        assert_eq!(level(&path("/apis/apps")), Level::None);
        assert_eq!(level(&path("/healthz")), Level::Metadata);
        let decision = p.decide(&path("/healthz"));
        assert_eq!(
            decision.omit_stages,
            [Stage::RequestReceived, Stage::ResponseStarted]
        );
    }

    #[test]
    fn bad_policies_are_refused_with_upstreams_messages() {
        assert_eq!(
            Policy::parse("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []\n")
                .unwrap_err()
                .to_string(),
            "loaded illegal policy with 0 rules"
        );
        assert_eq!(
            Policy::parse("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n- level: None\n  nonResourceURLs: [healthz]\n")
                .unwrap_err()
                .to_string(),
            "rules[1].nonResourceURLs: non-resource URL rules must begin with a '/' character"
        );
        assert_eq!(
            Policy::parse("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  resources: [{group: '', resources: [pods]}, {resourceNames: [a]}]\n")
                .unwrap_err()
                .to_string(),
            "rules[0].resources[1].resourceNames: using resourceNames requires at least one resource"
        );
        assert!(
            Policy::parse(
                "apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules:\n- level: Metadata\n"
            )
            .is_err()
        );
    }
}
