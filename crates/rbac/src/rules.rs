//! RBAC's rule algebra, pure: does a `PolicyRule` allow a request (upstream's
//! `RuleAllows`), which of a set of rules another set does not cover (`Covers`,
//! for escalation checks), and upstream's compact text of a rule.

use serde::{Deserialize, Serialize};

/// `rbac.authorization.k8s.io/v1` PolicyRule.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRule {
    #[serde(default, deserialize_with = "null_is_empty")]
    pub verbs: Vec<String>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_is_empty"
    )]
    pub api_groups: Vec<String>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_is_empty"
    )]
    pub resources: Vec<String>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_is_empty"
    )]
    pub resource_names: Vec<String>,
    #[serde(
        default,
        rename = "nonResourceURLs",
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_is_empty"
    )]
    pub non_resource_urls: Vec<String>,
}

fn null_is_empty<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(Option::<Vec<String>>::deserialize(d)?.unwrap_or_default())
}

/// What a request asks, as RBAC sees it.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub verb: &'a str,
    pub is_resource: bool,
    pub api_group: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub name: &'a str,
    /// Non-resource requests only.
    pub path: &'a str,
}

const ALL: &str = "*";

fn any_or(list: &[String], wanted: &str) -> bool {
    list.iter().any(|v| v == ALL || v == wanted)
}

impl PolicyRule {
    /// Upstream's `RuleAllows`.
    pub fn allows(&self, r: &Request<'_>) -> bool {
        if !any_or(&self.verbs, r.verb) {
            return false;
        }
        if !r.is_resource {
            return self.non_resource_url_matches(r.path);
        }
        any_or(&self.api_groups, r.api_group)
            && self.resource_matches(r.resource, r.subresource)
            && (self.resource_names.is_empty() || self.resource_names.iter().any(|n| n == r.name))
    }

    /// `*`, the exact `resource[/subresource]`, or `*/subresource`. `pods/*`
    /// means nothing special upstream, and nothing here.
    fn resource_matches(&self, resource: &str, subresource: &str) -> bool {
        self.resources.iter().any(|rule| {
            rule == ALL
                || match rule.split_once('/') {
                    None => subresource.is_empty() && rule == resource,
                    Some((rule_resource, rule_sub)) => {
                        !subresource.is_empty()
                            && rule_sub == subresource
                            && (rule_resource == resource || rule_resource == ALL)
                    }
                }
        })
    }

    fn non_resource_url_matches(&self, path: &str) -> bool {
        self.non_resource_urls.iter().any(|rule| {
            rule == ALL
                || rule == path
                || rule
                    .strip_suffix('*')
                    .is_some_and(|prefix| path.starts_with(prefix.trim_end_matches('*')))
        })
    }

    /// Upstream's `CompactString`: `{APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}`.
    pub fn compact_string(&self) -> String {
        let list = |v: &[String]| {
            let quoted: Vec<String> = v.iter().map(|s| format!("{s:?}")).collect();
            format!("[{}]", quoted.join(" "))
        };
        let mut parts = Vec::new();
        for (label, values) in [
            ("APIGroups", &self.api_groups),
            ("Resources", &self.resources),
            ("NonResourceURLs", &self.non_resource_urls),
            ("ResourceNames", &self.resource_names),
            ("Verbs", &self.verbs),
        ] {
            if !values.is_empty() {
                parts.push(format!("{label}:{}", list(values)));
            }
        }
        format!("{{{}}}", parts.join(", "))
    }

    /// Upstream's `BreakdownRule`: one rule per group × resource × verb (× name),
    /// or per URL × verb.
    fn atoms(&self) -> Vec<PolicyRule> {
        let one = |v: &String| vec![v.clone()];
        let mut atoms = Vec::new();
        for group in &self.api_groups {
            for resource in &self.resources {
                for verb in &self.verbs {
                    if self.resource_names.is_empty() {
                        atoms.push(PolicyRule {
                            verbs: one(verb),
                            api_groups: one(group),
                            resources: one(resource),
                            ..Default::default()
                        });
                    }
                    for name in &self.resource_names {
                        atoms.push(PolicyRule {
                            verbs: one(verb),
                            api_groups: one(group),
                            resources: one(resource),
                            resource_names: one(name),
                            ..Default::default()
                        });
                    }
                }
            }
        }
        for url in &self.non_resource_urls {
            for verb in &self.verbs {
                atoms.push(PolicyRule {
                    verbs: one(verb),
                    non_resource_urls: one(url),
                    ..Default::default()
                });
            }
        }
        atoms
    }

    /// Upstream's `ruleCovers`: does this (owner) rule grant all of `atom`?
    fn covers(&self, atom: &PolicyRule) -> bool {
        let has_all = |owner: &[String], wanted: &[String]| {
            owner.iter().any(|o| o == ALL) || wanted.iter().all(|w| owner.contains(w))
        };
        let resources = self.resources.iter().any(|o| o == ALL)
            || atom.resources.iter().all(|wanted| {
                self.resources.contains(wanted)
                    || wanted.split_once('/').is_some_and(|(_, sub)| {
                        self.resources
                            .iter()
                            .any(|o| o.strip_prefix("*/") == Some(sub))
                    })
            });
        let names = if atom.resource_names.is_empty() {
            self.resource_names.is_empty()
        } else {
            self.resource_names.is_empty()
                || atom
                    .resource_names
                    .iter()
                    .all(|n| self.resource_names.contains(n))
        };
        let urls = atom.non_resource_urls.iter().all(|wanted| {
            self.non_resource_urls.iter().any(|o| {
                o == wanted || o.ends_with('*') && wanted.starts_with(o.trim_end_matches('*'))
            })
        });
        has_all(&self.verbs, &atom.verbs)
            && has_all(&self.api_groups, &atom.api_groups)
            && resources
            && names
            && urls
    }
}

/// The parts of `wanted` that no rule of `owned` grants (upstream's `Covers`),
/// in breakdown order; empty when `owned` covers everything.
pub fn uncovered(owned: &[PolicyRule], wanted: &[PolicyRule]) -> Vec<PolicyRule> {
    wanted
        .iter()
        .flat_map(PolicyRule::atoms)
        .filter(|atom| !owned.iter().any(|rule| rule.covers(atom)))
        .collect()
}

/// Upstream's `CompactRules`: atoms of one group and resource (and the same
/// name, if any) merged into one rule with all their verbs.
pub fn compact(rules: Vec<PolicyRule>) -> Vec<PolicyRule> {
    let mut out: Vec<PolicyRule> = Vec::new();
    for rule in rules {
        let simple = rule.api_groups.len() == 1
            && rule.resources.len() == 1
            && rule.resource_names.len() <= 1
            && rule.non_resource_urls.is_empty();
        let same = out.iter_mut().find(|r| {
            simple
                && r.non_resource_urls.is_empty()
                && r.api_groups == rule.api_groups
                && r.resources == rule.resources
                && r.resource_names == rule.resource_names
        });
        match same {
            Some(existing) => {
                for verb in rule.verbs {
                    if !existing.verbs.contains(&verb) {
                        existing.verbs.push(verb);
                    }
                }
            }
            None => out.push(rule),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> PolicyRule {
        let v = |s: &[&str]| s.iter().map(|s| s.to_string()).collect();
        PolicyRule {
            verbs: v(verbs),
            api_groups: v(groups),
            resources: v(resources),
            ..Default::default()
        }
    }

    fn resource<'a>(
        verb: &'a str,
        group: &'a str,
        resource: &'a str,
        sub: &'a str,
        name: &'a str,
    ) -> Request<'a> {
        Request {
            verb,
            is_resource: true,
            api_group: group,
            resource,
            subresource: sub,
            name,
            path: "",
        }
    }

    fn path<'a>(verb: &'a str, path: &'a str) -> Request<'a> {
        Request {
            verb,
            is_resource: false,
            api_group: "",
            resource: "",
            subresource: "",
            name: "",
            path,
        }
    }

    #[test]
    fn resources_and_subresources_match_as_upstream() {
        let pods = rule(&["get"], &[""], &["pods"]);
        assert!(pods.allows(&resource("get", "", "pods", "", "p")));
        assert!(
            !pods.allows(&resource("get", "", "pods", "log", "p")),
            "pods is not pods/log"
        );
        assert!(!pods.allows(&resource("list", "", "pods", "", "")));
        assert!(!pods.allows(&resource("get", "apps", "pods", "", "p")));
        let log = rule(&["get"], &[""], &["pods/log"]);
        assert!(log.allows(&resource("get", "", "pods", "log", "p")));
        assert!(!log.allows(&resource("get", "", "pods", "", "p")));
        let any_scale = rule(&["patch"], &["*"], &["*/scale"]);
        assert!(any_scale.allows(&resource("patch", "apps", "deployments", "scale", "d")));
        assert!(!any_scale.allows(&resource("patch", "apps", "deployments", "", "d")));
        let pods_star = rule(&["get"], &[""], &["pods/*"]);
        assert!(
            !pods_star.allows(&resource("get", "", "pods", "log", "p")),
            "pods/* is no wildcard"
        );
        let everything = rule(&["*"], &["*"], &["*"]);
        assert!(everything.allows(&resource("delete", "x.io", "things", "status", "t")));
    }

    #[test]
    fn resource_names_restrict_named_requests_only() {
        let mut named = rule(&["get", "list"], &[""], &["configmaps"]);
        named.resource_names = vec!["one".into()];
        assert!(named.allows(&resource("get", "", "configmaps", "", "one")));
        assert!(!named.allows(&resource("get", "", "configmaps", "", "two")));
        assert!(
            !named.allows(&resource("list", "", "configmaps", "", "")),
            "a list has no name"
        );
    }

    #[test]
    fn non_resource_urls_match_exactly_or_by_star_prefix() {
        let mut r = PolicyRule {
            verbs: vec!["get".into()],
            non_resource_urls: vec!["/healthz".into(), "/apis/*".into()],
            ..Default::default()
        };
        assert!(r.allows(&path("get", "/healthz")));
        assert!(!r.allows(&path("get", "/healthz/ping")));
        assert!(r.allows(&path("get", "/apis/")));
        assert!(r.allows(&path("get", "/apis/apps/v1")));
        assert!(!r.allows(&path("get", "/apis")));
        assert!(!r.allows(&path("post", "/healthz")));
        assert!(
            !r.allows(&resource("get", "", "healthz", "", "")),
            "URLs never match resources"
        );
        r.non_resource_urls = vec!["*".into()];
        assert!(r.allows(&path("get", "/anything")));
    }

    #[test]
    fn uncovered_rules_are_what_escalation_reports() {
        let owned = vec![
            rule(&["get", "list"], &[""], &["pods"]),
            rule(&["*"], &["apps"], &["*/scale"]),
        ];
        let wanted = vec![
            rule(&["get", "list", "watch"], &[""], &["pods"]),
            rule(&["update"], &["apps"], &["deployments/scale"]),
            rule(&["create"], &["apps"], &["deployments"]),
        ];
        let missing = compact(uncovered(&owned, &wanted));
        let lines: Vec<String> = missing.iter().map(PolicyRule::compact_string).collect();
        assert_eq!(
            lines,
            [
                r#"{APIGroups:[""], Resources:["pods"], Verbs:["watch"]}"#,
                r#"{APIGroups:["apps"], Resources:["deployments"], Verbs:["create"]}"#,
            ]
        );
        assert!(uncovered(&[rule(&["*"], &["*"], &["*"])], &wanted).is_empty());
        // A named grant does not cover an unnamed one.
        let mut named = rule(&["get"], &[""], &["pods"]);
        named.resource_names = vec!["p".into()];
        assert_eq!(
            uncovered(&[named.clone()], &[rule(&["get"], &[""], &["pods"])]).len(),
            1
        );
        assert!(uncovered(&[rule(&["get"], &[""], &["pods"])], &[named]).is_empty());
    }

    #[test]
    fn compact_strings_read_like_upstreams() {
        let mut r = rule(&["get", "list"], &[""], &["pods"]);
        assert_eq!(
            r.compact_string(),
            r#"{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}"#
        );
        r.resource_names = vec!["web".into()];
        assert_eq!(
            r.compact_string(),
            r#"{APIGroups:[""], Resources:["pods"], ResourceNames:["web"], Verbs:["get" "list"]}"#
        );
        let url = PolicyRule {
            verbs: vec!["get".into()],
            non_resource_urls: vec!["/healthz".into()],
            ..Default::default()
        };
        assert_eq!(
            url.compact_string(),
            r#"{NonResourceURLs:["/healthz"], Verbs:["get"]}"#
        );
    }
}
