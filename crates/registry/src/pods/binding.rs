//! `pods/{name}/binding` and the legacy `bindings` collection (upstream's
//! `BindingREST` and `LegacyBindingREST`): assign a pod to a node and mark it
//! scheduled, through the pod store with the `binding` subresource (which
//! skips the Pod strategy and managedFields, as upstream's direct write does).

use serde_json::{Value, json};

use apimachinery::{FieldError, FieldPath, GroupResource, StatusError, Subresource, meta};

use crate::options::RequestContext;
use crate::store::GenericStore;

type Result<T> = std::result::Result<T, StatusError>;

/// `POST pods/{pod}/binding`: `binding` must name the pod of the URL.
pub async fn bind_pod(
    pods: &GenericStore,
    ctx: &RequestContext,
    pod: &str,
    binding: &Value,
) -> Result<()> {
    if meta::name(binding) != pod {
        return Err(StatusError::bad_request(
            "name in URL does not match name in Binding object",
        ));
    }
    bind(pods, ctx, binding).await
}

/// `POST namespaces/{ns}/bindings`: binds the pod the Binding names (which
/// must exist), as `pods/{name}/binding` does.
pub async fn bind_legacy(pods: &GenericStore, ctx: &RequestContext, binding: &Value) -> Result<()> {
    let mut ctx = ctx.clone();
    ctx.subresource = Subresource::None;
    pods.get(&ctx, meta::name(binding)).await?;
    bind(pods, &ctx, binding).await
}

/// `BindingREST.Create`: the pod gets the target node, the Binding's
/// annotations and a `PodScheduled` condition; refused (409) when it is
/// being deleted, already bound or still gated.
async fn bind(pods: &GenericStore, ctx: &RequestContext, binding: &Value) -> Result<()> {
    let name = meta::name(binding).to_string();
    if binding.get("kind").and_then(Value::as_str) != Some("Binding") {
        return Err(StatusError::bad_request(format!(
            "not a Binding object: {binding}"
        )));
    }
    let target = &binding["target"];
    let errors = validate_target(target);
    if !errors.is_empty() {
        return Err(StatusError::invalid("", "Binding", &name, &errors));
    }
    let node = target["name"].as_str().unwrap_or("").to_string();
    let annotations = meta::annotations(binding).cloned();
    let mut ctx = ctx.clone();
    ctx.subresource = Subresource::Binding;
    pods.update_with(&ctx, &name, |current| {
        let mut next = current.clone();
        if meta::deletion_timestamp(current).is_some() {
            return Err(conflict(
                &name,
                format!("pod {name} is being deleted, cannot be assigned to a host"),
            ));
        }
        let assigned = current
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !assigned.is_empty() {
            return Err(conflict(
                &name,
                format!("pod {name} is already assigned to node {assigned:?}"),
            ));
        }
        let gated = current
            .pointer("/spec/schedulingGates")
            .and_then(Value::as_array)
            .is_some_and(|g| !g.is_empty());
        if gated {
            return Err(conflict(
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
        super::set_condition(
            &mut next,
            json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null}),
        );
        Ok(next)
    })
    .await?;
    Ok(())
}

fn conflict(name: &str, detail: String) -> StatusError {
    StatusError::conflict(&GroupResource::new("", "pods/binding"), name, &detail)
}

/// `ValidatePodBinding`.
fn validate_target(target: &Value) -> apimachinery::ErrorList {
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
