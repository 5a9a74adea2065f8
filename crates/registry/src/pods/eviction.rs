//! `pods/{name}/eviction` (upstream's `EvictionREST.Create`): a pod that
//! cannot be disrupted further (terminal, pending, deleting) or that no
//! PodDisruptionBudget covers is deleted; a covering budget must allow the
//! disruption, and records it.

use serde_json::{Value, json};

use apimachinery::{GroupResource, StatusError, Subresource, meta};

use crate::options::{DeleteOptions, ListOptions, RequestContext};
use crate::store::GenericStore;

type Result<T> = std::result::Result<T, StatusError>;

/// What an eviction that did not fail did.
#[derive(Debug, PartialEq, Eq)]
pub enum Evicted {
    /// The pod was marked `DisruptionTarget` and deleted.
    Deleted,
    /// More than one budget covers the pod: upstream answers a bare 500
    /// `Status` (no reason) with [`MULTIPLE_BUDGETS`], and deletes nothing.
    MultipleBudgets,
}

/// The message of [`Evicted::MultipleBudgets`].
pub const MULTIPLE_BUDGETS: &str = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.";

/// Evict `pod` (as currently stored) as `eviction` asks. `budgets` is the
/// PodDisruptionBudget store, when that type is served.
pub async fn evict(
    pods: &GenericStore,
    budgets: Option<&GenericStore>,
    ctx: &RequestContext,
    pod: &Value,
    eviction: &Value,
) -> Result<Evicted> {
    let name = meta::name(pod).to_string();
    if !meta::name(eviction).is_empty() && meta::name(eviction) != name {
        return Err(StatusError::bad_request(
            "name in URL does not match name in Eviction object",
        ));
    }
    let phase = pod
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("");
    let ignores_budgets = matches!(phase, "Succeeded" | "Failed" | "Pending")
        || meta::deletion_timestamp(pod).is_some();
    if !ignores_budgets && let Some(budgets) = budgets {
        match covering_budgets(budgets, ctx, pod).await?.as_slice() {
            [] => {}
            [budget] => take_disruption(budgets, ctx, budget, &name).await?,
            _ => return Ok(Evicted::MultipleBudgets),
        }
    }
    if !ctx.dry_run {
        let mut ctx = ctx.clone();
        ctx.subresource = Subresource::Status;
        pods.update_with(&ctx, &name, |current| {
            let mut next = current.clone();
            super::set_condition(
                &mut next,
                json!({"type": "DisruptionTarget", "status": "True", "lastProbeTime": null,
                    "reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting"}),
            );
            Ok(next)
        })
        .await?;
    }
    let mut options = DeleteOptions {
        precondition_uid: Some(meta::uid(pod).to_string()),
        ..Default::default()
    };
    if let Some(delete_options) = eviction.get("deleteOptions") {
        options.grace_period_seconds = delete_options
            .get("gracePeriodSeconds")
            .and_then(Value::as_i64);
    }
    pods.delete(ctx, &name, &options).await?;
    Ok(Evicted::Deleted)
}

/// The PodDisruptionBudgets of the pod's namespace whose selector matches it.
async fn covering_budgets(
    budgets: &GenericStore,
    ctx: &RequestContext,
    pod: &Value,
) -> Result<Vec<Value>> {
    let list = budgets.list(ctx, ListOptions::default()).await?;
    Ok(list
        .items
        .iter()
        .map(|o| o.to_value())
        .filter(|budget| {
            budget
                .pointer("/spec/selector")
                .and_then(|s| apimachinery::selector::LabelSelector::from_json(s).ok())
                .is_some_and(|s| !s.is_empty() && s.matches(meta::labels(pod)))
        })
        .collect())
}

/// Upstream's `checkAndDecrement`: a budget that allows a disruption allows
/// one less, and records the pod as disrupted (for the disruption controller
/// to confirm); written before the pod is deleted, retried on conflicts.
async fn take_disruption(
    budgets: &GenericStore,
    ctx: &RequestContext,
    budget: &Value,
    pod: &str,
) -> Result<()> {
    check_budget(budget)?;
    let mut ctx = ctx.clone();
    ctx.subresource = Subresource::Status;
    budgets
        .update_with(&ctx, meta::name(budget), |current| {
            check_budget(current)?;
            let mut next = current.clone();
            let allowed = current["status"]["disruptionsAllowed"].as_i64().unwrap_or(0) - 1;
            next["status"]["disruptionsAllowed"] = json!(allowed);
            if allowed == 0 {
                let observed = current["status"]["observedGeneration"].clone();
                super::set_condition(
                    &mut next,
                    json!({"type": "DisruptionAllowed", "status": "False",
                        "reason": "InsufficientPods", "message": "", "observedGeneration": observed}),
                );
            }
            let disrupted = &mut next["status"]["disruptedPods"];
            if !disrupted.is_object() {
                *disrupted = json!({});
            }
            disrupted[pod] = json!(apimachinery::time::now_rfc3339());
            Ok(next)
        })
        .await?;
    Ok(())
}

/// Upstream's most disrupted pods a budget records before evictions stop
/// (`MaxDisruptedPodSize`).
const MAX_DISRUPTED_PODS: usize = 2000;

/// Whether `budget` allows a disruption now: 429 while no controller has
/// counted it or it allows nothing, 403 when its status cannot be trusted.
fn check_budget(budget: &Value) -> Result<()> {
    let name = meta::name(budget);
    let status = &budget["status"];
    let forbidden = |why: &str| {
        StatusError::forbidden(
            &GroupResource::new("policy", "poddisruptionbudget"),
            name,
            why,
        )
    };
    if status["disruptionsAllowed"].as_i64().unwrap_or(0) < 0
        && status["observedGeneration"].as_i64().unwrap_or(0) >= meta::generation(budget)
    {
        return Err(forbidden("pdb disruptions allowed is negative"));
    }
    if status["disruptedPods"]
        .as_object()
        .is_some_and(|p| p.len() > MAX_DISRUPTED_PODS)
    {
        return Err(forbidden(
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        ));
    }
    let observed = status["observedGeneration"].as_i64().unwrap_or(0);
    let (message, retry_after) = if observed < meta::generation(budget) {
        (
            format!("The disruption budget {name} is still being processed by the server."),
            10,
        )
    } else if status["disruptionsAllowed"].as_i64().unwrap_or(0) <= 0 {
        (
            format!(
                "The disruption budget {name} needs {} healthy pods and has {} currently",
                status["desiredHealthy"].as_i64().unwrap_or(0),
                status["currentHealthy"].as_i64().unwrap_or(0)
            ),
            0,
        )
    } else {
        return Ok(());
    };
    Err(StatusError::new(
        429,
        "TooManyRequests",
        "Cannot evict pod as it would violate the pod's disruption budget.",
    )
    .with_causes(vec![apimachinery::status::StatusCause {
        reason: "DisruptionBudget".into(),
        message,
        field: String::new(),
    }])
    .with_retry_after(retry_after))
}
