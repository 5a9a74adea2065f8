//! The ClusterRole aggregation controller (kube-controller-manager's
//! `clusterrole-aggregation`): a ClusterRole with an `aggregationRule` gets the
//! rules of every ClusterRole its selectors match — selector by selector,
//! matching roles by name, duplicates dropped — so a CRD author's
//! `rbac.authorization.k8s.io/aggregate-to-view: "true"` role extends `view`.

use std::sync::Arc;

use serde_json::{Value, json};

use apimachinery::selector::LabelSelector;
use apimachinery::{StatusError, meta};
use registry::{GenericStore, ListOptions};
use runtime::{self, Event, Reconciler, WorkQueue};

const MANAGER: &str = "clusterrole-aggregation-controller";

/// The rules `role`'s aggregationRule selects from `all`; `None` if it has none.
pub fn aggregated_rules(
    role: &Value,
    all: &[&Value],
) -> Result<Option<Vec<Value>>, apimachinery::selector::SelectorError> {
    let Some(selectors) = role
        .pointer("/aggregationRule/clusterRoleSelectors")
        .and_then(Value::as_array)
    else {
        return Ok(None);
    };
    let mut sorted: Vec<&Value> = all.to_vec();
    sorted.sort_by(|a, b| meta::name(a).cmp(meta::name(b)));
    let mut rules: Vec<Value> = Vec::new();
    for selector in selectors {
        let selector = LabelSelector::from_json(selector)?;
        for other in &sorted {
            if meta::name(other) == meta::name(role) || !selector.matches(meta::labels(other)) {
                continue;
            }
            for rule in other
                .get("rules")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if !rules.contains(rule) {
                    rules.push(rule.clone());
                }
            }
        }
    }
    Ok(Some(rules))
}

/// Why a round of aggregation failed (logged by the runtime, then retried).
#[derive(Debug, thiserror::Error)]
pub enum AggregationError {
    /// Listing the ClusterRoles failed.
    #[error("{0}")]
    List(StatusError),
    /// An `aggregationRule` selector does not parse.
    #[error(transparent)]
    Selector(#[from] apimachinery::selector::SelectorError),
    /// Writing a ClusterRole's aggregated rules failed.
    #[error("aggregating clusterrole {name}: {error}")]
    Update { name: String, error: StatusError },
}

struct Aggregation {
    cluster_roles: Arc<GenericStore>,
}

#[async_trait::async_trait]
impl Reconciler for Aggregation {
    type Key = ();
    type Error = AggregationError;

    fn name(&self) -> &'static str {
        "clusterrole-aggregation"
    }

    async fn reconcile(&self, _: &()) -> Result<(), AggregationError> {
        self.aggregate().await
    }
}

impl Aggregation {
    async fn aggregate(&self) -> Result<(), AggregationError> {
        let ctx = runtime::system_context("", MANAGER);
        let list = self
            .cluster_roles
            .list(&ctx, ListOptions::default())
            .await
            .map_err(AggregationError::List)?;
        let decoded: Vec<Arc<Value>> = list.items.iter().map(|o| o.value()).collect();
        let all: Vec<&Value> = decoded.iter().map(|v| v.as_ref()).collect();
        for role in &all {
            let Some(rules) = aggregated_rules(role, &all)? else {
                continue;
            };
            let have = role
                .get("rules")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            if have == rules {
                continue;
            }
            let name = meta::name(role);
            let rules = json!(rules);
            self.cluster_roles
                .update_with(&ctx, name, |current| {
                    let mut next = current.clone();
                    next["rules"] = rules.clone();
                    Ok(next)
                })
                .await
                .map_err(|error| AggregationError::Update {
                    name: name.to_string(),
                    error,
                })?;
        }
        Ok(())
    }
}

/// Run forever: aggregate after every ClusterRole change.
pub async fn run(cluster_roles: Arc<GenericStore>) {
    let queue = WorkQueue::new(
        std::time::Duration::from_millis(100),
        std::time::Duration::from_secs(10),
    );
    let reflector = runtime::Reflector::new(cluster_roles.clone(), MANAGER);
    let feed = runtime::follow(reflector, queue.clone(), |_: &Event| vec![()]);
    runtime::run(Arc::new(Aggregation { cluster_roles }), queue, 1, feed).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selected_roles_rules_are_collected_in_name_order_without_duplicates() {
        let view = json!({"metadata": {"name": "view"}, "aggregationRule": {"clusterRoleSelectors": [
            {"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}}]}});
        let rule = |r: &str| json!({"verbs": ["get"], "apiGroups": ["x.io"], "resources": [r]});
        let b = json!({"metadata": {"name": "b", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
            "rules": [rule("bs"), rule("shared")]});
        let a = json!({"metadata": {"name": "a", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
            "rules": [rule("as"), rule("shared")]});
        let unrelated = json!({"metadata": {"name": "c"}, "rules": [rule("cs")]});
        let rules = aggregated_rules(&view, &[&view, &b, &unrelated, &a])
            .unwrap()
            .unwrap();
        assert_eq!(rules, vec![rule("as"), rule("shared"), rule("bs")]);
        assert_eq!(aggregated_rules(&unrelated, &[&unrelated]).unwrap(), None);
    }
}
