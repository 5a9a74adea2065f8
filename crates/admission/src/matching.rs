//! Which requests a policy or binding applies to: `matchConstraints` /
//! `matchResources` — resource rules (operations, API groups and versions,
//! resources with `*` and subresources, scope), exclusions, and namespace and
//! object label selectors — as upstream's matcher decides.

use apimachinery::meta;
use apimachinery::selector::LabelSelector;
use serde_json::{Map, Value};

use registry::{Attributes, Operation};

/// One `resourceRules` entry.
#[derive(Debug)]
struct Rule {
    operations: Vec<String>,
    groups: Vec<String>,
    versions: Vec<String>,
    resources: Vec<String>,
    scope: String,
}

/// A compiled `matchResources`.
#[derive(Debug)]
pub struct Matcher {
    rules: Vec<Rule>,
    excluded: Vec<Rule>,
    /// `matchPolicy: Equivalent` (the default): a rule naming another served
    /// version of the resource matches too.
    equivalent: bool,
    namespace_selector: LabelSelector,
    object_selector: LabelSelector,
}

fn strings(v: &Value, field: &str) -> Vec<String> {
    v.get(field)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

fn rules(v: &Value, field: &str) -> Vec<Rule> {
    v.get(field)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|r| Rule {
                    operations: strings(r, "operations"),
                    groups: strings(r, "apiGroups"),
                    versions: strings(r, "apiVersions"),
                    resources: strings(r, "resources"),
                    scope: r
                        .get("scope")
                        .and_then(Value::as_str)
                        .unwrap_or("*")
                        .to_string(),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A `namespaceSelector` or `objectSelector` that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {error}")]
pub struct SelectorError {
    pub field: &'static str,
    pub error: apimachinery::selector::SelectorError,
}

fn selector(v: &Value, field: &'static str) -> Result<LabelSelector, SelectorError> {
    match v.get(field) {
        None | Some(Value::Null) => Ok(LabelSelector::everything()),
        Some(s) => LabelSelector::from_json(s).map_err(|error| SelectorError { field, error }),
    }
}

impl Matcher {
    /// From `matchConstraints`/`matchResources`; `None` for a binding without
    /// one (it matches what its policy matches).
    pub fn compile(v: &Value) -> Result<Matcher, SelectorError> {
        Ok(Matcher {
            rules: rules(v, "resourceRules"),
            excluded: rules(v, "excludeResourceRules"),
            equivalent: v.get("matchPolicy").and_then(Value::as_str) != Some("Exact"),
            namespace_selector: selector(v, "namespaceSelector")?,
            object_selector: selector(v, "objectSelector")?,
        })
    }

    /// Whether `a` is selected; `namespace` is the request's Namespace object.
    /// A binding without rules matches any resource its policy does.
    pub fn matches(
        &self,
        a: &Attributes<'_>,
        namespace: Option<&Value>,
        rules_required: bool,
        other_versions: &dyn Fn() -> Vec<String>,
    ) -> bool {
        self.select(a, namespace, rules_required, other_versions)
            .is_some()
    }

    /// As [`Matcher::matches`], telling how: `Some(None)` at the request's
    /// version, `Some(Some(v))` through another served version `v` of the
    /// resource (`matchPolicy: Equivalent`).
    pub fn select(
        &self,
        a: &Attributes<'_>,
        namespace: Option<&Value>,
        rules_required: bool,
        other_versions: &dyn Fn() -> Vec<String>,
    ) -> Option<Option<String>> {
        let resource = Resource::of(a);
        // The request's own version first; the resource's other served
        // versions only when that does not match (and the policy allows).
        let exact = |r: &Rule| r.matches(&resource, resource.version);
        let matched = if (!rules_required && self.rules.is_empty()) || self.rules.iter().any(exact)
        {
            Some(None)
        } else if self.equivalent {
            let others = other_versions();
            others
                .into_iter()
                .find(|v| self.rules.iter().any(|r| r.matches(&resource, v)))
                .map(Some)
        } else {
            None
        };
        if matched.is_none() || self.excluded.iter().any(exact) {
            return None;
        }
        // Cluster-scoped objects other than namespaces pass any namespace
        // selector; a namespace is matched by its own labels.
        let namespace_labels = if a.rtype.group.is_empty() && a.rtype.plural == "namespaces" {
            labels(a.object().or(a.old_object))
        } else if a.rtype.namespaced {
            labels(namespace)
        } else {
            None
        };
        if (a.rtype.namespaced || a.rtype.plural == "namespaces")
            && !self.namespace_selector.matches(namespace_labels)
        {
            return None;
        }
        // The object selector matches the new or the old object.
        let selected = [a.object(), a.old_object]
            .into_iter()
            .flatten()
            .any(|o| self.object_selector.matches(labels(Some(o))))
            || (a.object().is_none() && a.old_object.is_none());
        selected.then_some(matched).flatten()
    }
}

fn labels(v: Option<&Value>) -> Option<&Map<String, Value>> {
    meta::labels(v?)
}

/// The request as rules see it.
struct Resource<'a> {
    operation: &'static str,
    group: &'a str,
    version: &'a str,
    /// `deployments` or `deployments/scale`.
    resource: String,
    namespaced: bool,
}

impl<'a> Resource<'a> {
    fn of(a: &'a Attributes<'_>) -> Resource<'a> {
        let sub = a.ctx.subresource.as_str();
        let resource = if sub.is_empty() {
            a.rtype.plural.clone()
        } else {
            format!("{}/{sub}", a.rtype.plural)
        };
        Resource {
            operation: match a.operation {
                Operation::Create => "CREATE",
                Operation::Update => "UPDATE",
                Operation::Delete => "DELETE",
            },
            group: &a.rtype.group,
            version: &a.rtype.version,
            resource,
            namespaced: a.rtype.namespaced,
        }
    }
}

fn any_or(list: &[String], value: &str) -> bool {
    list.iter().any(|v| v == "*" || v == value)
}

impl Rule {
    /// Whether the rule matches the request, taken at `version`.
    fn matches(&self, r: &Resource<'_>, version: &str) -> bool {
        any_or(&self.operations, r.operation)
            && any_or(&self.groups, r.group)
            && any_or(&self.versions, version)
            && self
                .resources
                .iter()
                .any(|pattern| resource_matches(pattern, &r.resource))
            && match self.scope.as_str() {
                "Cluster" => !r.namespaced,
                "Namespaced" => r.namespaced,
                _ => true,
            }
    }
}

/// `*` (every resource, no subresources), `*/*` (everything), `pods`,
/// `pods/*` (pods and each of its subresources), `*/status`, `pods/status`.
fn resource_matches(pattern: &str, resource: &str) -> bool {
    let (p_res, p_sub) = pattern.split_once('/').unwrap_or((pattern, ""));
    let (res, sub) = resource.split_once('/').unwrap_or((resource, ""));
    (p_res == "*" || p_res == res) && (p_sub == "*" || p_sub == sub)
}

#[cfg(test)]
mod tests {
    use super::resource_matches;

    #[test]
    fn resource_patterns_match_as_upstreams() {
        assert!(resource_matches("*", "pods"));
        assert!(!resource_matches("*", "pods/status"));
        assert!(resource_matches("*/*", "pods"));
        assert!(resource_matches("*/*", "pods/status"));
        assert!(resource_matches("pods/*", "pods/status"));
        assert!(resource_matches("pods/*", "pods"));
        assert!(!resource_matches("pods", "pods/status"));
        assert!(resource_matches("*/status", "deployments/status"));
        assert!(!resource_matches("configmaps", "pods"));
    }
}
