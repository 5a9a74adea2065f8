//! The bootstrap policy (kube-apiserver's `rbac/bootstrap-roles` post-start
//! hook): the default ClusterRoles, ClusterRoleBindings, and the Roles and
//! RoleBindings of `kube-system` and `kube-public`, created when missing and
//! reconciled when present — missing rules, subjects, labels and annotations
//! added, nothing removed, a binding whose roleRef changed re-created — unless
//! the object carries `rbac.authorization.kubernetes.io/autoupdate: "false"`.
//! The rules of aggregated roles (admin, edit, view) are left to the
//! aggregation controller.

use serde_json::{Map, Value, json};

use apimachinery::meta;
use registry::GenericStore;
use registry::options::DeleteOptions;

use crate::Stores;
use crate::rules::{PolicyRule, uncovered};

const AUTOUPDATE: &str = "rbac.authorization.kubernetes.io/autoupdate";
const MANAGER: &str = "kube-apiserver";

const CLUSTER_ROLES: &[&str] = &[
    include_str!("../data/cluster-roles.json"),
    include_str!("../data/controller-roles.json"),
];
const CLUSTER_ROLE_BINDINGS: &[&str] = &[
    include_str!("../data/cluster-role-bindings.json"),
    include_str!("../data/controller-role-bindings.json"),
];
const ROLES: &[&str] = &[include_str!("../data/namespace-roles.json")];
const ROLE_BINDINGS: &[&str] = &[include_str!("../data/namespace-role-bindings.json")];

/// The objects of the bootstrap `List` documents, in order.
fn items(documents: &[&str]) -> Vec<Value> {
    documents
        .iter()
        .filter_map(|doc| match serde_json::from_str::<Value>(doc) {
            Ok(list) => Some(list),
            Err(e) => {
                tracing::error!(error = %e, "bootstrap policy data does not parse");
                None
            }
        })
        .flat_map(|list| list["items"].as_array().cloned().unwrap_or_default())
        .collect()
}

/// Every bootstrap object, with its kind.
pub fn objects() -> Vec<Value> {
    [CLUSTER_ROLES, ROLES, CLUSTER_ROLE_BINDINGS, ROLE_BINDINGS]
        .iter()
        .flat_map(|documents| items(documents))
        .collect()
}

/// The bootstrap ClusterRoles (for tests and the benchmark).
pub fn cluster_roles() -> Vec<Value> {
    items(CLUSTER_ROLES)
}

/// The bootstrap ClusterRoleBindings (for tests and the benchmark).
pub fn cluster_role_bindings() -> Vec<Value> {
    items(CLUSTER_ROLE_BINDINGS)
}

/// Create or reconcile the whole bootstrap policy; returns what failed. All
/// objects at once: on a durable store their writes share commits.
pub async fn reconcile(stores: &Stores) -> Vec<String> {
    let mut work = Vec::new();
    for (store, documents, reconcile) in [
        (
            &stores.cluster_roles,
            CLUSTER_ROLES,
            reconcile_role as Reconcile,
        ),
        (&stores.roles, ROLES, reconcile_role),
        (
            &stores.cluster_role_bindings,
            CLUSTER_ROLE_BINDINGS,
            reconcile_binding,
        ),
        (&stores.role_bindings, ROLE_BINDINGS, reconcile_binding),
    ] {
        for expected in items(documents) {
            work.push(ensure(store, expected, reconcile));
        }
    }
    futures::future::join_all(work)
        .await
        .into_iter()
        .filter_map(Result::err)
        .collect()
}

/// What changes an existing object needs: `None` if none, `Some(None)` to
/// re-create it, `Some(Some(next))` to update it.
type Reconcile = fn(&Value, &Value) -> Option<Option<Value>>;

async fn ensure(store: &GenericStore, expected: Value, reconcile: Reconcile) -> Result<(), String> {
    let name = meta::name(&expected).to_string();
    let namespace = meta::namespace(&expected).to_string();
    let ctx = runtime::system_context(&namespace, MANAGER);
    let describe =
        |e: &dyn std::fmt::Display| format!("{} {namespace}/{name}: {e}", store.rtype.plural);
    let existing = match store.get(&ctx, &name).await {
        Ok(existing) => existing.to_value(),
        Err(e) if e.code() == 404 => {
            return match store.create(&ctx, expected).await {
                Ok(_) => Ok(()),
                Err(e) if e.code() == 409 => Ok(()),
                Err(e) => Err(describe(&e)),
            };
        }
        Err(e) => return Err(describe(&e)),
    };
    if meta::annotations(&existing)
        .and_then(|a| a.get(AUTOUPDATE))
        .and_then(Value::as_str)
        == Some("false")
    {
        return Ok(());
    }
    match reconcile(&expected, &existing) {
        None => Ok(()),
        Some(Some(next)) => store
            .update_with(&ctx, &name, |_| Ok(next.clone()))
            .await
            .map(|_| ())
            .map_err(|e| describe(&e)),
        Some(None) => {
            let opts = DeleteOptions::default();
            store
                .delete(&ctx, &name, &opts)
                .await
                .map_err(|e| describe(&e))?;
            store
                .create(&ctx, expected)
                .await
                .map(|_| ())
                .map_err(|e| describe(&e))
        }
    }
}

/// Labels and annotations of `expected` that `existing` lacks (existing values win).
fn merge_metadata(expected: &Value, next: &mut Value) -> bool {
    let mut changed = false;
    for field in ["labels", "annotations"] {
        let Some(wanted) = meta::metadata(expected)
            .and_then(|m| m.get(field))
            .and_then(Value::as_object)
        else {
            continue;
        };
        let md = meta::metadata_mut(next);
        let have = md.entry(field).or_insert_with(|| Value::Object(Map::new()));
        if !have.is_object() {
            *have = Value::Object(Map::new());
        }
        if let Some(have) = have.as_object_mut() {
            for (k, v) in wanted {
                if !have.contains_key(k) {
                    have.insert(k.clone(), v.clone());
                    changed = true;
                }
            }
        }
    }
    changed
}

fn rules_of(v: &Value) -> Vec<PolicyRule> {
    v.get("rules")
        .cloned()
        .and_then(|r| serde_json::from_value(r).ok())
        .unwrap_or_default()
}

/// Upstream's role reconciliation: missing rules appended (as the uncovered
/// parts), aggregation selectors added.
fn reconcile_role(expected: &Value, existing: &Value) -> Option<Option<Value>> {
    let mut next = existing.clone();
    let mut changed = merge_metadata(expected, &mut next);
    let missing = uncovered(&rules_of(existing), &rules_of(expected));
    if !missing.is_empty() {
        let mut rules = existing
            .get("rules")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        rules.extend(missing.iter().filter_map(|r| serde_json::to_value(r).ok()));
        next["rules"] = json!(rules);
        changed = true;
    }
    match (
        expected.get("aggregationRule"),
        existing.get("aggregationRule"),
    ) {
        (None, Some(_)) => {
            if let Some(obj) = next.as_object_mut() {
                obj.remove("aggregationRule");
            }
            changed = true;
        }
        (Some(want), have) => {
            let selectors = |v: Option<&Value>| {
                v.and_then(|v| v.get("clusterRoleSelectors"))
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default()
            };
            let mut have_selectors = selectors(have);
            let before = have_selectors.len();
            for selector in selectors(Some(want)) {
                if !have_selectors.contains(&selector) {
                    have_selectors.push(selector);
                }
            }
            if have.is_none() || have_selectors.len() != before {
                next["aggregationRule"] = json!({"clusterRoleSelectors": have_selectors});
                changed = true;
            }
        }
        (None, None) => {}
    }
    changed.then_some(Some(next))
}

/// Upstream's binding reconciliation: a changed roleRef re-creates the
/// binding; missing subjects are appended.
fn reconcile_binding(expected: &Value, existing: &Value) -> Option<Option<Value>> {
    if expected.get("roleRef") != existing.get("roleRef") {
        return Some(None);
    }
    let mut next = existing.clone();
    let mut changed = merge_metadata(expected, &mut next);
    let mut subjects = existing
        .get("subjects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for subject in expected
        .get("subjects")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if !subjects.contains(subject) {
            subjects.push(subject.clone());
            changed = true;
        }
    }
    if changed {
        next["subjects"] = json!(subjects);
    }
    changed.then_some(Some(next))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bootstrap_data_parses_and_names_upstreams_roles() {
        let roles = cluster_roles();
        let names: Vec<&str> = roles.iter().map(meta::name).collect();
        for wanted in [
            "cluster-admin",
            "admin",
            "edit",
            "view",
            "system:discovery",
            "system:basic-user",
            "system:public-info-viewer",
            "system:aggregate-to-view",
            "system:auth-delegator",
            "system:kube-aggregator",
            "system:controller:namespace-controller",
        ] {
            assert!(names.contains(&wanted), "{wanted} missing from {names:?}");
        }
        let bindings = items(CLUSTER_ROLE_BINDINGS);
        assert!(bindings.iter().any(|b| {
            meta::name(b) == "system:public-info-viewer"
                && b["subjects"]
                    .as_array()
                    .is_some_and(|s| s.iter().any(|s| s["name"] == "system:unauthenticated"))
        }));
        let roles = items(ROLES);
        assert!(roles.iter().any(
            |r| meta::name(r) == "extension-apiserver-authentication-reader"
                && meta::namespace(r) == "kube-system"
        ));
        assert!(items(ROLE_BINDINGS).len() >= 5);
    }

    #[test]
    fn reconciling_adds_what_is_missing_and_keeps_the_rest() {
        let expected = json!({"metadata": {"name": "r", "labels": {"a": "1"}},
            "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]});
        let existing = json!({"metadata": {"name": "r", "labels": {"a": "mine"}},
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
                      {"verbs": ["delete"], "apiGroups": [""], "resources": ["secrets"]}]});
        let next = reconcile_role(&expected, &existing).unwrap().unwrap();
        assert_eq!(
            next["metadata"]["labels"]["a"], "mine",
            "existing labels win"
        );
        assert_eq!(next["rules"].as_array().unwrap().len(), 3, "{next}");
        assert_eq!(
            next["rules"][2],
            json!({"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]})
        );
        assert!(
            reconcile_role(&expected, &next).is_none(),
            "reconciled once is enough"
        );

        let binding = json!({"metadata": {"name": "b"}, "roleRef": {"kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "Group", "name": "g"}]});
        let other_ref =
            json!({"metadata": {"name": "b"}, "roleRef": {"kind": "ClusterRole", "name": "edit"}});
        assert_eq!(
            reconcile_binding(&binding, &other_ref),
            Some(None),
            "a changed roleRef is re-created"
        );
        let extra = json!({"metadata": {"name": "b"}, "roleRef": {"kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": "u"}]});
        let next = reconcile_binding(&binding, &extra).unwrap().unwrap();
        assert_eq!(next["subjects"].as_array().unwrap().len(), 2);
    }
}
