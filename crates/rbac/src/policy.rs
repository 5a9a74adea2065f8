//! The RBAC policy as the authorizer reads it: every Role, ClusterRole,
//! RoleBinding and ClusterRoleBinding, built into one immutable snapshot with
//! bindings indexed by subject, so a decision looks only at the bindings that
//! name the user or one of its groups (upstream walks them all).
//!
//! Hot path: every request is decided here; nothing is allocated on the way to
//! an allow but the reason string.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use crate::rules::{PolicyRule, Request};

/// `rbac.authorization.k8s.io/v1` Subject.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Subject {
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub api_group: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: String,
}

/// `rbac.authorization.k8s.io/v1` RoleRef.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RoleRef {
    #[serde(default)]
    pub api_group: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
}

#[derive(Debug, Clone, Deserialize)]
struct Meta {
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BindingObject {
    metadata: Meta,
    #[serde(default)]
    role_ref: RoleRef,
    #[serde(default, deserialize_with = "null_is_empty")]
    subjects: Vec<Subject>,
}

#[derive(Debug, Clone, Deserialize)]
struct RoleObject {
    metadata: Meta,
    #[serde(default, deserialize_with = "null_is_empty")]
    rules: Vec<PolicyRule>,
}

fn null_is_empty<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Vec<T>, D::Error> {
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

/// The rules of a role, shared by every binding of it.
type Rules = Arc<[PolicyRule]>;

/// One binding; `namespace` is empty for ClusterRoleBindings.
#[derive(Debug)]
struct Binding {
    name: String,
    namespace: String,
    role_ref: RoleRef,
    subjects: Vec<Subject>,
}

/// Who a binding's subject is, as the index keys it: service accounts by the
/// user name their tokens carry.
enum SubjectKey {
    User(String),
    Group(String),
}

const SA_PREFIX: &str = "system:serviceaccount:";

/// An immutable snapshot of the RBAC objects.
#[derive(Debug, Default)]
pub struct Policy {
    cluster_roles: HashMap<String, Rules>,
    /// namespace → name → rules.
    roles: HashMap<String, HashMap<String, Rules>>,
    /// Ordered by (namespace, name): cluster bindings first.
    bindings: Vec<Binding>,
    /// User name → indices into `bindings` (ascending); service accounts by
    /// their user name.
    by_user: HashMap<String, Vec<usize>>,
    /// Group name → indices into `bindings` (ascending).
    by_group: HashMap<String, Vec<usize>>,
}

/// The four kinds' objects, as JSON.
#[derive(Default)]
pub struct Objects<'a> {
    pub cluster_roles: Vec<&'a Value>,
    pub roles: Vec<&'a Value>,
    pub cluster_role_bindings: Vec<&'a Value>,
    pub role_bindings: Vec<&'a Value>,
}

impl<'a> Objects<'a> {
    /// Add an object of any of the four kinds (by its `kind`); others are
    /// ignored.
    pub fn push(&mut self, object: &'a Value) {
        if let Some(list) = self.list_for(object) {
            list.push(object);
        }
    }

    fn list_for(&mut self, object: &Value) -> Option<&mut Vec<&'a Value>> {
        match object["kind"].as_str()? {
            "ClusterRole" => Some(&mut self.cluster_roles),
            "Role" => Some(&mut self.roles),
            "ClusterRoleBinding" => Some(&mut self.cluster_role_bindings),
            "RoleBinding" => Some(&mut self.role_bindings),
            _ => None,
        }
    }

    /// Add `object` unless one of its kind, namespace and name is there.
    pub fn push_missing(&mut self, object: &'a Value) {
        let key = |v: &Value| {
            (
                apimachinery::meta::namespace(v).to_string(),
                apimachinery::meta::name(v).to_string(),
            )
        };
        let Some(list) = self.list_for(object) else {
            return;
        };
        if !list.iter().any(|present| key(present) == key(object)) {
            list.push(object);
        }
    }
}

/// A binding that applies, and the subject that made it apply.
pub struct Grant<'p> {
    binding: &'p Binding,
    subject: &'p Subject,
}

impl Grant<'_> {
    /// Upstream's reason for an allow: `RBAC: allowed by ClusterRoleBinding "x"
    /// of ClusterRole "y" to User "z"`.
    pub fn reason(&self) -> String {
        let b = self.binding;
        let subject = describe_subject(self.subject, &b.namespace);
        if b.namespace.is_empty() {
            format!(
                "RBAC: allowed by ClusterRoleBinding {:?} of {} {:?} to {subject}",
                b.name, b.role_ref.kind, b.role_ref.name
            )
        } else {
            format!(
                "RBAC: allowed by RoleBinding {:?} of {} {:?} to {subject}",
                format!("{}/{}", b.name, b.namespace),
                b.role_ref.kind,
                b.role_ref.name
            )
        }
    }
}

fn describe_subject(s: &Subject, binding_namespace: &str) -> String {
    if s.kind == "ServiceAccount" {
        let ns = if s.namespace.is_empty() {
            binding_namespace
        } else {
            &s.namespace
        };
        format!("{} {:?}", s.kind, format!("{}/{}", s.name, ns))
    } else {
        format!("{} {:?}", s.kind, s.name)
    }
}

/// The user a decision is about.
pub struct User<'a> {
    pub name: &'a str,
    pub groups: &'a [String],
}

impl Policy {
    pub fn build(objects: &Objects<'_>) -> Policy {
        let parse_roles = |values: &[&Value]| -> Vec<RoleObject> {
            values
                .iter()
                .filter_map(|v| RoleObject::deserialize(*v).ok())
                .collect()
        };
        let cluster_roles = parse_roles(&objects.cluster_roles)
            .into_iter()
            .map(|r| (r.metadata.name, Rules::from(r.rules)))
            .collect();
        let mut roles: HashMap<String, HashMap<String, Rules>> = HashMap::new();
        for r in parse_roles(&objects.roles) {
            roles
                .entry(r.metadata.namespace)
                .or_default()
                .insert(r.metadata.name, Rules::from(r.rules));
        }
        let mut bindings: Vec<Binding> = objects
            .cluster_role_bindings
            .iter()
            .chain(&objects.role_bindings)
            .filter_map(|v| BindingObject::deserialize(*v).ok())
            .map(|b| Binding {
                name: b.metadata.name,
                namespace: b.metadata.namespace,
                role_ref: b.role_ref,
                subjects: b.subjects,
            })
            .collect();
        bindings.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        let mut by_user: HashMap<String, Vec<usize>> = HashMap::new();
        let mut by_group: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, binding) in bindings.iter().enumerate() {
            for subject in &binding.subjects {
                let entry = match subject_key(subject, &binding.namespace) {
                    Some(SubjectKey::User(name)) => by_user.entry(name).or_default(),
                    Some(SubjectKey::Group(name)) => by_group.entry(name).or_default(),
                    None => continue,
                };
                if entry.last() != Some(&i) {
                    entry.push(i);
                }
            }
        }
        Policy {
            cluster_roles,
            roles,
            bindings,
            by_user,
            by_group,
        }
    }

    /// The bindings that apply to `user` in `namespace` (cluster bindings, then
    /// the namespace's), in order.
    fn applicable<'p>(&'p self, user: &User<'_>, namespace: &str) -> Vec<Grant<'p>> {
        let mut indices: Vec<usize> = Vec::new();
        if let Some(found) = self.by_user.get(user.name) {
            indices.extend(found);
        }
        for group in user.groups {
            if let Some(found) = self.by_group.get(group.as_str()) {
                indices.extend(found);
            }
        }
        indices.sort_unstable();
        indices.dedup();
        indices
            .into_iter()
            .map(|i| &self.bindings[i])
            .filter(|b| b.namespace.is_empty() || b.namespace == namespace)
            .filter_map(|binding| {
                let subject = binding
                    .subjects
                    .iter()
                    .find(|s| applies(s, &binding.namespace, user))?;
                Some(Grant { binding, subject })
            })
            .collect()
    }

    fn role(&self, namespace: &str, name: &str) -> Option<&Rules> {
        self.roles.get(namespace)?.get(name)
    }

    /// The rules a binding grants, or upstream's lister error.
    fn rules_of(&self, binding: &Binding) -> Result<&Rules, RoleRefError> {
        let r = &binding.role_ref;
        let found = match r.kind.as_str() {
            "ClusterRole" => self.cluster_roles.get(&r.name),
            "Role" => self.role(&binding.namespace, &r.name),
            other => return Err(RoleRefError::UnsupportedKind(other.to_string())),
        };
        found.ok_or_else(|| RoleRefError::NotFound {
            resource: if r.kind == "Role" {
                "role"
            } else {
                "clusterrole"
            },
            name: r.name.clone(),
        })
    }

    /// Upstream's RBAC decision: `Ok(reason)` when a rule allows `request`,
    /// else `Err(reason)` ("" or the resolution errors).
    pub fn decide(
        &self,
        user: &User<'_>,
        namespace: &str,
        request: &Request<'_>,
    ) -> Result<String, NotAllowed> {
        let mut errors: Vec<RoleRefError> = Vec::new();
        for grant in self.applicable(user, namespace) {
            match self.rules_of(grant.binding) {
                Ok(rules) if rules.iter().any(|rule| rule.allows(request)) => {
                    return Ok(grant.reason());
                }
                Ok(_) => {}
                Err(e) => {
                    if !errors.contains(&e) {
                        errors.push(e);
                    }
                }
            }
        }
        Err(NotAllowed(errors))
    }

    /// Every rule `user` holds in `namespace` (cluster-wide ones too), and the
    /// resolution errors met (upstream's `RulesFor`).
    pub fn rules_for(&self, user: &User<'_>, namespace: &str) -> (Vec<PolicyRule>, Vec<String>) {
        let mut rules = Vec::new();
        let mut errors = Vec::new();
        for grant in self.applicable(user, namespace) {
            match self.rules_of(grant.binding) {
                Ok(found) => rules.extend(found.iter().cloned()),
                Err(e) => errors.push(e.to_string()),
            }
        }
        (rules, errors)
    }

    /// The rules a role reference grants in `namespace`, or upstream's storage
    /// error for a missing role.
    pub fn role_rules(
        &self,
        role_ref: &RoleRef,
        namespace: &str,
    ) -> Result<Vec<PolicyRule>, RoleRefError> {
        let found = match role_ref.kind.as_str() {
            "ClusterRole" => self.cluster_roles.get(&role_ref.name),
            "Role" => self.role(namespace, &role_ref.name),
            other => return Err(RoleRefError::UnsupportedKind(other.to_string())),
        };
        found
            .map(|r| r.to_vec())
            .ok_or_else(|| RoleRefError::NotFound {
                resource: if role_ref.kind == "Role" {
                    "roles"
                } else {
                    "clusterroles"
                },
                name: role_ref.name.clone(),
            })
    }
}

/// A role reference that does not resolve (upstream's lister errors).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RoleRefError {
    #[error("unsupported role reference kind: {0:?}")]
    UnsupportedKind(String),
    /// `resource` as upstream names it there: `role`/`clusterrole` in a
    /// decision's reason, `roles`/`clusterroles` for a role reference's rules.
    #[error("{resource}.rbac.authorization.k8s.io {name:?} not found")]
    NotFound {
        resource: &'static str,
        name: String,
    },
}

/// Why RBAC allows nothing: the role references that did not resolve, none
/// when no rule matched. Displayed as upstream's reason (`""`, `RBAC: …`,
/// `RBAC: [a, b]`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", reason(.0))]
pub struct NotAllowed(pub Vec<RoleRefError>);

fn reason(errors: &[RoleRefError]) -> String {
    match errors {
        [] => String::new(),
        [one] => format!("RBAC: {one}"),
        many => {
            let texts: Vec<String> = many.iter().map(ToString::to_string).collect();
            format!("RBAC: [{}]", texts.join(", "))
        }
    }
}

fn subject_key(s: &Subject, binding_namespace: &str) -> Option<SubjectKey> {
    match s.kind.as_str() {
        "User" => Some(SubjectKey::User(s.name.clone())),
        "Group" => Some(SubjectKey::Group(s.name.clone())),
        "ServiceAccount" => {
            let ns = if s.namespace.is_empty() {
                binding_namespace
            } else {
                &s.namespace
            };
            (!ns.is_empty()).then(|| SubjectKey::User(format!("{SA_PREFIX}{ns}:{}", s.name)))
        }
        _ => None,
    }
}

/// Upstream's `appliesToUser`.
fn applies(s: &Subject, binding_namespace: &str, user: &User<'_>) -> bool {
    match s.kind.as_str() {
        "User" => user.name == s.name,
        "Group" => user.groups.contains(&s.name),
        "ServiceAccount" => {
            let ns = if s.namespace.is_empty() {
                binding_namespace
            } else {
                &s.namespace
            };
            !ns.is_empty()
                && user
                    .name
                    .strip_prefix(SA_PREFIX)
                    .and_then(|rest| rest.split_once(':'))
                    .is_some_and(|(user_ns, name)| user_ns == ns && name == s.name)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(objects: &[Value]) -> Policy {
        let mut o = Objects::default();
        for v in objects {
            o.push(v);
        }
        Policy::build(&o)
    }

    fn get_pods<'a>(verb: &'a str) -> Request<'a> {
        Request {
            verb,
            is_resource: true,
            api_group: "",
            resource: "pods",
            subresource: "",
            name: "",
            path: "",
        }
    }

    fn user<'a>(name: &'a str, groups: &'a [String]) -> User<'a> {
        User { name, groups }
    }

    #[test]
    fn bindings_grant_their_roles_rules_to_their_subjects() {
        let p = policy(&[
            json!({"kind": "ClusterRole", "metadata": {"name": "pod-reader"},
                   "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]}),
            json!({"kind": "Role", "metadata": {"name": "r", "namespace": "default"},
                   "rules": [{"verbs": ["create"], "apiGroups": [""], "resources": ["pods"]}]}),
            json!({"kind": "ClusterRoleBinding", "metadata": {"name": "readers"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "pod-reader"},
                   "subjects": [{"kind": "Group", "name": "devs"}]}),
            json!({"kind": "RoleBinding", "metadata": {"name": "rb", "namespace": "default"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
                   "subjects": [{"kind": "ServiceAccount", "name": "builder"}]}),
        ]);
        let devs = ["devs".to_string()];
        assert_eq!(
            p.decide(&user("alice", &devs), "default", &get_pods("list")),
            Ok(r#"RBAC: allowed by ClusterRoleBinding "readers" of ClusterRole "pod-reader" to Group "devs""#.into())
        );
        assert_eq!(
            p.decide(&user("alice", &[]), "default", &get_pods("list")),
            Err(NotAllowed(Vec::new()))
        );
        assert_eq!(
            p.decide(&user("alice", &devs), "default", &get_pods("create")),
            Err(NotAllowed(Vec::new()))
        );
        let sa = "system:serviceaccount:default:builder";
        assert_eq!(
            p.decide(&user(sa, &[]), "default", &get_pods("create")),
            Ok(r#"RBAC: allowed by RoleBinding "rb/default" of Role "r" to ServiceAccount "builder/default""#.into())
        );
        assert!(
            p.decide(&user(sa, &[]), "other", &get_pods("create"))
                .is_err(),
            "RoleBindings stay in their namespace"
        );
        assert!(
            p.decide(
                &user("system:serviceaccount:other:builder", &[]),
                "default",
                &get_pods("create")
            )
            .is_err()
        );
    }

    #[test]
    fn missing_roles_are_the_reason() {
        let p = policy(&[
            json!({"kind": "RoleBinding", "metadata": {"name": "rb", "namespace": "default"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "missing"},
            "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}]}),
        ]);
        assert_eq!(
            p.decide(&user("alice", &[]), "default", &get_pods("get"))
                .map_err(|e| e.to_string()),
            Err(r#"RBAC: role.rbac.authorization.k8s.io "missing" not found"#.into())
        );
    }

    #[test]
    fn service_account_subjects_of_cluster_bindings_need_a_namespace() {
        let p = policy(&[
            json!({"kind": "ClusterRole", "metadata": {"name": "all"},
                   "rules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]}),
            json!({"kind": "ClusterRoleBinding", "metadata": {"name": "b"},
                   "roleRef": {"kind": "ClusterRole", "name": "all"},
                   "subjects": [{"kind": "ServiceAccount", "name": "nons"}, {"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}]}),
        ]);
        assert!(
            p.decide(
                &user("system:serviceaccount::nons", &[]),
                "",
                &get_pods("get")
            )
            .is_err()
        );
        assert!(
            p.decide(
                &user("system:serviceaccount:ns:sa", &[]),
                "",
                &get_pods("get")
            )
            .is_ok()
        );
    }
}
