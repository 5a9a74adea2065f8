//! Pod subresources of a cluster without kubelets, as kube-apiserver answers
//! them (`pkg/registry/core/pod/storage`, `pkg/registry/core/pod/rest`):
//! `binding` and `eviction` are stored operations; `log` of an unscheduled pod
//! is empty (204); `exec`, `attach` and `portforward` need a host. (`proxy`
//! is the `proxy` module's.)

use bytes::Bytes;
use http::Response;
use serde_json::{Value, json};

use apimachinery::{GroupResource, StatusError, Subresource, meta};
use registry::options::DeleteOptions;

use super::call::{Call, Result};
use crate::negotiate;
use crate::response::{self, Body};

/// Whether `pods/{sub}` is answered here.
pub fn handles(call: &Call<'_>) -> bool {
    call.rtype().group.is_empty()
        && call.rtype().plural == "pods"
        && matches!(
            call.info.subresource,
            Subresource::Binding
                | Subresource::Eviction
                | Subresource::Log
                | Subresource::Exec
                | Subresource::Attach
                | Subresource::PortForward
        )
}

pub async fn serve(
    call: &Call<'_>,
    content_type: Option<&str>,
    body: Bytes,
) -> Result<Response<Body>> {
    let pod = call.served.store.get(&call.ctx, &call.info.name).await?;
    let pod = &pod.value();
    match call.info.subresource {
        Subresource::Binding => {
            let binding = decode(content_type, &body)?;
            if meta::name(&binding) != meta::name(pod) {
                return Err(StatusError::bad_request(
                    "name in URL does not match name in Binding object",
                ));
            }
            bind(call, &call.served.store, &binding).await
        }
        Subresource::Eviction => evict(call, pod, &decode(content_type, &body)?).await,
        Subresource::Log => {
            choose_container(call, pod)?;
            node_connection(call, pod).await?;
            // A pod no node runs has no log: upstream streams nothing (204).
            Ok(response::respond(204, "text/plain", Bytes::new()))
        }
        Subresource::Exec | Subresource::Attach => {
            choose_container(call, pod)?;
            node_connection(call, pod).await?;
            Err(no_kubelet(pod))
        }
        _ => {
            // PortForward
            node_connection(call, pod).await?;
            Err(no_kubelet(pod))
        }
    }
}

fn decode(content_type: Option<&str>, body: &[u8]) -> Result<Value> {
    negotiate::decode(negotiate::body_kind(content_type)?, body)
}

fn containers(pod: &Value, field: &str) -> Vec<String> {
    pod.pointer(&format!("/spec/{field}"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_string))
        .collect()
}

/// Upstream's `validateContainer`: the `container` parameter, or the pod's
/// only container.
fn choose_container(call: &Call<'_>, pod: &Value) -> Result<String> {
    let name = meta::name(pod);
    let regular = containers(pod, "containers");
    let all: Vec<String> = containers(pod, "initContainers")
        .into_iter()
        .chain(regular.iter().cloned())
        .chain(containers(pod, "ephemeralContainers"))
        .collect();
    match call.query.get("container").filter(|c| !c.is_empty()) {
        Some(wanted) if all.iter().any(|c| c == wanted) => Ok(wanted.to_string()),
        Some(wanted) => Err(StatusError::bad_request(format!(
            "container {wanted} is not valid for pod {name}"
        ))),
        None => match regular.as_slice() {
            [only] => Ok(only.clone()),
            [] => Err(StatusError::bad_request(format!(
                "a container name must be specified for pod {name}"
            ))),
            _ => Err(StatusError::bad_request(format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                all.join(" ")
            ))),
        },
    }
}

/// Upstream's `GetConnectionInfo` up to the kubelet: an unscheduled pod has no
/// host (`Ok` for `log`, whose caller answers empty), a scheduled one needs its
/// Node.
async fn node_connection(call: &Call<'_>, pod: &Value) -> Result<()> {
    let node = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("");
    if node.is_empty() {
        return match call.info.subresource {
            Subresource::Log => Ok(()),
            _ => Err(StatusError::bad_request(format!(
                "pod {} does not have a host assigned",
                meta::name(pod)
            ))),
        };
    }
    let nodes = call
        .api
        .catalog()
        .lookup("", "v1", "nodes")
        .cloned()
        .ok_or_else(|| StatusError::internal("nodes are not served"))?;
    let ctx = registry::RequestContext {
        namespace: String::new(),
        ..call.ctx.clone()
    };
    nodes.store.get(&ctx, node).await?;
    Err(no_kubelet(pod))
}

/// What is left once a pod's node is known: kubext runs no kubelet to reach.
fn no_kubelet(pod: &Value) -> StatusError {
    let node = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("");
    if node.is_empty() {
        return StatusError::bad_request(format!(
            "pod {} does not have a host assigned",
            meta::name(pod)
        ));
    }
    StatusError::service_unavailable(format!(
        "no kubelet serves node {node:?}: kubext runs no kubelets"
    ))
}

fn binding_conflict(name: &str, detail: String) -> StatusError {
    StatusError::conflict(&GroupResource::new("", "pods/binding"), name, &detail)
}

/// Whether this is a create of the legacy `bindings` resource.
pub fn handles_legacy_binding(call: &Call<'_>) -> bool {
    call.rtype().group.is_empty() && call.rtype().plural == "bindings"
}

/// `POST /api/v1/namespaces/{ns}/bindings` (`LegacyBindingREST`): binds the
/// pod the Binding names, as `pods/{name}/binding` does.
pub async fn legacy_binding(
    call: &Call<'_>,
    content_type: Option<&str>,
    body: Bytes,
) -> Result<Response<Body>> {
    if call.info.verb != apimachinery::Verb::Create {
        return Err(StatusError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    }
    let binding = decode(content_type, &body)?;
    let catalog = call.api.catalog();
    let pods = catalog
        .lookup("", "v1", "pods")
        .ok_or_else(|| StatusError::internal("pods are not served"))?;
    let mut ctx = call.ctx.clone();
    ctx.subresource = Subresource::None;
    pods.store.get(&ctx, meta::name(&binding)).await?;
    bind(call, &pods.store, &binding).await
}

/// `pods/{name}/binding` (`BindingREST.Create`): assign the pod `binding`
/// names to a node and mark it scheduled; 201 with a Success Status.
async fn bind(
    call: &Call<'_>,
    pods: &registry::GenericStore,
    binding: &Value,
) -> Result<Response<Body>> {
    let name = meta::name(binding).to_string();
    if binding.get("kind").and_then(Value::as_str) != Some("Binding") {
        return Err(StatusError::bad_request(format!(
            "not a Binding object: {binding}"
        )));
    }
    let target = &binding["target"];
    let errors = validate_binding_target(target);
    if !errors.is_empty() {
        return Err(StatusError::invalid("", "Binding", &name, &errors));
    }
    let node = target["name"].as_str().unwrap_or("").to_string();
    let annotations = binding
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .cloned();
    let mut ctx = call.ctx.clone();
    ctx.subresource = Subresource::Binding;
    pods.update_with(&ctx, &name, |current| {
        let mut next = current.clone();
        if meta::deletion_timestamp(current).is_some() {
            return Err(binding_conflict(
                &name,
                format!("pod {name} is being deleted, cannot be assigned to a host"),
            ));
        }
        let assigned = current
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !assigned.is_empty() {
            return Err(binding_conflict(
                &name,
                format!("pod {name} is already assigned to node {assigned:?}"),
            ));
        }
        let gated = current
            .pointer("/spec/schedulingGates")
            .and_then(Value::as_array)
            .is_some_and(|g| !g.is_empty());
        if gated {
            return Err(binding_conflict(
                &name,
                format!("pod {name} has non-empty .spec.schedulingGates"),
            ));
        }
        next["spec"]["nodeName"] = json!(node);
        if let Some(annotations) = &annotations {
            let md = meta::metadata_mut(&mut next);
            let existing = md.entry("annotations").or_insert_with(|| json!({}));
            if let Some(existing) = existing.as_object_mut() {
                existing.extend(annotations.clone());
            }
        }
        set_condition(
            &mut next,
            json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null}),
        );
        Ok(next)
    })
    .await?;
    Ok(created_status())
}

/// `ValidatePodBinding`.
fn validate_binding_target(target: &Value) -> apimachinery::ErrorList {
    use apimachinery::{FieldError, FieldPath};
    let mut errors = Vec::new();
    let kind = target.get("kind").and_then(Value::as_str).unwrap_or("");
    if !kind.is_empty() && kind != "Node" {
        errors.push(FieldError::not_supported(
            &FieldPath::new("target").child("kind"),
            json!(kind),
            &["Node", "<empty>"],
        ));
    }
    if target
        .get("name")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        errors.push(FieldError::required(
            &FieldPath::new("target").child("name"),
            "",
        ));
    }
    errors
}

/// `podutil.UpdatePodCondition`: replace the condition of the same type,
/// with a new transition time when its status changes.
/// Sets `condition` in `obj`'s `status.conditions`, its transition time kept
/// unless its status changes.
fn set_condition(obj: &mut Value, mut condition: Value) {
    let now = apimachinery::time::now_rfc3339();
    let status = obj
        .as_object_mut()
        .map(|p| p.entry("status").or_insert_with(|| json!({})));
    let Some(conditions) = status.and_then(|s| {
        if !s.is_object() {
            *s = json!({});
        }
        let c = s.as_object_mut()?.entry("conditions").or_insert(json!([]));
        if !c.is_array() {
            *c = json!([]);
        }
        c.as_array_mut()
    }) else {
        return;
    };
    match conditions
        .iter_mut()
        .find(|c| c["type"] == condition["type"])
    {
        Some(existing) => {
            condition["lastTransitionTime"] = if existing["status"] == condition["status"] {
                existing["lastTransitionTime"].clone()
            } else {
                json!(now)
            };
            *existing = condition;
        }
        None => {
            condition["lastTransitionTime"] = json!(now);
            conditions.push(condition);
        }
    }
}

fn created_status() -> Response<Body> {
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201});
    let mut bytes = serde_json::to_vec(&body).unwrap_or_default();
    bytes.push(b'\n');
    response::json(201, bytes)
}

/// `pods/{name}/eviction` (`EvictionREST.Create`): pods that cannot be
/// disrupted further (terminal, pending, deleting) or that no
/// PodDisruptionBudget covers are deleted; a covering budget must allow it.
async fn evict(call: &Call<'_>, pod: &Value, eviction: &Value) -> Result<Response<Body>> {
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
    if !ignores_budgets {
        let budgets = covering_budgets(call, pod).await?;
        match budgets.as_slice() {
            [] => {}
            [budget] => take_disruption(call, budget, &name).await?,
            _ => {
                let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                    "status": "Failure", "code": 500,
                    "message": "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."});
                return Ok(response::json(
                    500,
                    serde_json::to_vec(&body).unwrap_or_default(),
                ));
            }
        }
    }
    if !call.ctx.dry_run {
        let mut ctx = call.ctx.clone();
        ctx.subresource = Subresource::Status;
        call.served
            .store
            .update_with(&ctx, &name, |current| {
                let mut next = current.clone();
                set_condition(
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
    call.served.store.delete(&call.ctx, &name, &options).await?;
    Ok(created_status())
}

/// The PodDisruptionBudgets of the pod's namespace whose selector matches it.
async fn covering_budgets(call: &Call<'_>, pod: &Value) -> Result<Vec<Value>> {
    let Some(budgets) = call
        .api
        .catalog()
        .lookup("policy", "v1", "poddisruptionbudgets")
        .cloned()
    else {
        return Ok(Vec::new());
    };
    let list = budgets
        .store
        .list(&call.ctx, registry::ListOptions::default())
        .await?;
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
async fn take_disruption(call: &Call<'_>, budget: &Value, pod: &str) -> Result<()> {
    check_budget(budget)?;
    let catalog = call.api.catalog();
    let Some(budgets) = catalog.lookup("policy", "v1", "poddisruptionbudgets") else {
        return Ok(());
    };
    let mut ctx = call.ctx.clone();
    ctx.subresource = Subresource::Status;
    budgets
        .store
        .update_with(&ctx, meta::name(budget), |current| {
            check_budget(current)?;
            let mut next = current.clone();
            let allowed = current["status"]["disruptionsAllowed"].as_i64().unwrap_or(0) - 1;
            next["status"]["disruptionsAllowed"] = json!(allowed);
            if allowed == 0 {
                let observed = current["status"]["observedGeneration"].clone();
                set_condition(
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
