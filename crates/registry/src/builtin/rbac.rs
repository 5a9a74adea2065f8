//! `rbac.authorization.k8s.io/v1`: Role, ClusterRole, RoleBinding and
//! ClusterRoleBinding, with upstream's defaults, validation messages and table
//! columns. What the objects mean (authorization, escalation checks) lives in
//! `kubext-rbac`.

use apimachinery::DynamicObject;
use serde_json::{Value, json};

use apimachinery::validation::is_dns1123_subdomain;
use apimachinery::{ErrorList, FieldError, FieldPath};

use crate::resource::{Prepared, Strategy, TableColumn};

pub const GROUP: &str = "rbac.authorization.k8s.io";

/// Roles and ClusterRoles (`namespaced` tells them apart).
pub struct Roles {
    pub namespaced: bool,
}

/// RoleBindings and ClusterRoleBindings.
pub struct Bindings {
    pub namespaced: bool,
}

/// Roles and ClusterRoles have no printer of their own upstream: the default
/// table's `Created At`.
pub fn role_columns() -> Vec<TableColumn> {
    let mut created = TableColumn::new(
        "Created At",
        "date",
        "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
    );
    created.priority = 0;
    vec![created]
}

pub fn binding_columns(namespaced: bool) -> Vec<TableColumn> {
    let (role_doc, kind) = if namespaced {
        (
            "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.",
            "roleBinding",
        )
    } else {
        (
            "RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.",
            "clusterRoleBinding",
        )
    };
    let wide = |name: &'static str, description: String| {
        TableColumn::owned(name.into(), "string".into(), String::new(), description, 1)
    };
    vec![
        TableColumn::new("Role", "string", role_doc),
        wide("Users", format!("Users in the {kind}")),
        wide("Groups", format!("Groups in the {kind}")),
        wide("ServiceAccounts", format!("ServiceAccounts in the {kind}")),
    ]
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn list<'a>(v: &'a Value, field: &str) -> &'a [Value] {
    v.get(field)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Upstream's `ValidatePolicyRule`.
fn validate_rule(rule: &Value, namespaced: bool, path: &FieldPath, errs: &mut ErrorList) {
    let non_empty = |field: &str| !list(rule, field).is_empty();
    if !non_empty("verbs") {
        errs.push(FieldError::required(
            &path.child("verbs"),
            "verbs must contain at least one value",
        ));
    }
    if non_empty("nonResourceURLs") {
        let urls = rule.get("nonResourceURLs").cloned().unwrap_or(Value::Null);
        let urls_path = path.child("nonResourceURLs");
        if namespaced {
            errs.push(FieldError::invalid(
                &urls_path,
                urls.clone(),
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        if non_empty("apiGroups") || non_empty("resources") || non_empty("resourceNames") {
            errs.push(FieldError::invalid(
                &urls_path,
                urls,
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return;
    }
    if !non_empty("apiGroups") {
        errs.push(FieldError::required(
            &path.child("apiGroups"),
            "resource rules must supply at least one api group",
        ));
    }
    if !non_empty("resources") {
        errs.push(FieldError::required(
            &path.child("resources"),
            "resource rules must supply at least one resource",
        ));
    }
}

impl Strategy for Roles {
    fn validate(&self, obj: &DynamicObject) -> ErrorList {
        let mut errs = ErrorList::new();
        let rules = FieldPath::new("rules");
        for (i, rule) in list(obj, "rules").iter().enumerate() {
            validate_rule(rule, self.namespaced, &rules.index(i), &mut errs);
        }
        if let Some(aggregation) = obj.get("aggregationRule").filter(|v| !v.is_null()) {
            let path = FieldPath::new("aggregationRule").child("clusterRoleSelectors");
            let selectors = list(aggregation, "clusterRoleSelectors");
            if selectors.is_empty() {
                errs.push(FieldError::required(
                    &path,
                    "at least one clusterRoleSelector required if aggregationRule is non-nil",
                ));
            }
            for (i, selector) in selectors.iter().enumerate() {
                if apimachinery::selector::LabelSelector::from_json(selector).is_err() {
                    errs.push(FieldError::invalid(
                        &path.index(i),
                        selector.clone(),
                        "invalid label selector.",
                    ));
                }
            }
        }
        errs
    }

    fn row(&self, obj: &Value) -> Vec<Value> {
        vec![json!(
            apimachinery::meta::str_field(obj, "creationTimestamp").unwrap_or("")
        )]
    }
}

const SUBJECT_KINDS: [&str; 3] = ["ServiceAccount", "User", "Group"];

impl Bindings {
    fn validate_role_ref(&self, obj: &Value, errs: &mut ErrorList) {
        let path = FieldPath::new("roleRef");
        let api_group = str_at(obj, "/roleRef/apiGroup");
        if api_group != GROUP {
            errs.push(FieldError::not_supported(
                &path.child("apiGroup"),
                json!(api_group),
                &[GROUP],
            ));
        }
        let kind = str_at(obj, "/roleRef/kind");
        let kinds: &[&str] = if self.namespaced {
            &["Role", "ClusterRole"]
        } else {
            &["ClusterRole"]
        };
        if !kinds.contains(&kind) {
            errs.push(FieldError::not_supported(
                &path.child("kind"),
                json!(kind),
                kinds,
            ));
        }
        let name = str_at(obj, "/roleRef/name");
        if name.is_empty() {
            errs.push(FieldError::required(&path.child("name"), ""));
        } else {
            for message in apimachinery::validation::name_is_path_segment(name, false) {
                errs.push(FieldError::invalid(
                    &path.child("name"),
                    json!(name),
                    &message,
                ));
            }
        }
    }

    fn validate_subject(&self, subject: &Value, path: &FieldPath, errs: &mut ErrorList) {
        let name = str_at(subject, "/name");
        if name.is_empty() {
            errs.push(FieldError::required(&path.child("name"), ""));
        }
        let api_group = str_at(subject, "/apiGroup");
        match str_at(subject, "/kind") {
            "ServiceAccount" => {
                if !name.is_empty() {
                    for message in is_dns1123_subdomain(name) {
                        errs.push(FieldError::invalid(
                            &path.child("name"),
                            json!(name),
                            &message,
                        ));
                    }
                }
                if !api_group.is_empty() {
                    errs.push(FieldError::not_supported(
                        &path.child("apiGroup"),
                        json!(api_group),
                        &[""],
                    ));
                }
                if !self.namespaced && str_at(subject, "/namespace").is_empty() {
                    errs.push(FieldError::required(&path.child("namespace"), ""));
                }
            }
            "User" | "Group" => {
                if api_group != GROUP {
                    errs.push(FieldError::not_supported(
                        &path.child("apiGroup"),
                        json!(api_group),
                        &[GROUP],
                    ));
                }
            }
            other => {
                errs.push(FieldError::not_supported(
                    &path.child("kind"),
                    json!(other),
                    &SUBJECT_KINDS,
                ));
            }
        }
    }
}

impl Strategy for Bindings {
    /// Upstream's defaults: `roleRef.apiGroup` and the subjects' API groups.
    fn prepare_create(&self, obj: &mut DynamicObject) -> Prepared {
        default_binding(obj);
        Prepared::BodyChanged
    }

    fn prepare_update(&self, new: &mut DynamicObject, _old: &DynamicObject) {
        default_binding(new);
    }

    fn validate(&self, obj: &DynamicObject) -> ErrorList {
        let mut errs = ErrorList::new();
        self.validate_role_ref(obj, &mut errs);
        let subjects = FieldPath::new("subjects");
        for (i, subject) in list(obj, "subjects").iter().enumerate() {
            self.validate_subject(subject, &subjects.index(i), &mut errs);
        }
        errs
    }

    fn validate_update(&self, new: &DynamicObject, old: &DynamicObject) -> ErrorList {
        let mut errs = self.validate(new);
        if new.get("roleRef") != old.get("roleRef") {
            let role_ref = new.get("roleRef").cloned().unwrap_or(Value::Null);
            let printed = format!(
                "rbac.RoleRef{{APIGroup:{:?}, Kind:{:?}, Name:{:?}}}",
                str_at(&role_ref, "/apiGroup"),
                str_at(&role_ref, "/kind"),
                str_at(&role_ref, "/name")
            );
            errs.push(FieldError::invalid_go(
                &FieldPath::new("roleRef"),
                &printed,
                "cannot change roleRef",
            ));
        }
        errs
    }

    fn row(&self, obj: &Value) -> Vec<Value> {
        let mut users = Vec::new();
        let mut groups = Vec::new();
        let mut service_accounts = Vec::new();
        for s in list(obj, "subjects") {
            let name = str_at(s, "/name");
            match str_at(s, "/kind") {
                "User" => users.push(name.to_string()),
                "Group" => groups.push(name.to_string()),
                "ServiceAccount" => {
                    service_accounts.push(format!("{}/{name}", str_at(s, "/namespace")))
                }
                _ => {}
            }
        }
        vec![
            json!(format!(
                "{}/{}",
                str_at(obj, "/roleRef/kind"),
                str_at(obj, "/roleRef/name")
            )),
            json!(users.join(", ")),
            json!(groups.join(", ")),
            json!(service_accounts.join(", ")),
        ]
    }
}

fn default_binding(obj: &mut Value) {
    if let Some(role_ref) = obj.get_mut("roleRef").and_then(Value::as_object_mut)
        && role_ref
            .get("apiGroup")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
    {
        role_ref.insert("apiGroup".into(), json!(GROUP));
    }
    for subject in obj
        .get_mut("subjects")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        let Some(s) = subject.as_object_mut() else {
            continue;
        };
        if s.get("apiGroup")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
        {
            // A ServiceAccount's group is "", which is not written.
            if matches!(
                s.get("kind").and_then(Value::as_str),
                Some("User" | "Group")
            ) {
                s.insert("apiGroup".into(), json!(GROUP));
            }
        }
    }
}
