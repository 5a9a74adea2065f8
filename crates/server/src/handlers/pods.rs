//! Pod subresources over HTTP: decode the body, call the registry's pod
//! operations (`registry::pods`: `binding` and `eviction` are stored
//! operations, `log`/`exec`/`attach`/`portforward` have no kubelet to reach),
//! encode what they answer. (`proxy` is the `proxy` module's.)

use bytes::Bytes;
use http::Response;
use serde_json::{Value, json};

use apimachinery::{StatusError, Subresource};
use registry::pods::{binding, connection, eviction};

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
    let pods = &call.served.store;
    let pod = pods.get(&call.ctx, &call.info.name).await?.value();
    let connection = match call.info.subresource {
        Subresource::Binding => {
            let binding = decode(content_type, &body)?;
            binding::bind_pod(pods, &call.ctx, &call.info.name, &binding).await?;
            return Ok(created_status());
        }
        Subresource::Eviction => {
            let asked = decode(content_type, &body)?;
            let budgets = served(call, "policy", "v1", "poddisruptionbudgets");
            let evicted = eviction::evict(
                pods,
                budgets.as_ref().map(|b| &b.store),
                &call.ctx,
                &pod,
                &asked,
            )
            .await?;
            return Ok(match evicted {
                eviction::Evicted::Deleted => created_status(),
                eviction::Evicted::MultipleBudgets => multiple_budgets(),
            });
        }
        Subresource::Log => connection::Connection::Log,
        Subresource::Exec => connection::Connection::Exec,
        Subresource::Attach => connection::Connection::Attach,
        _ => connection::Connection::PortForward,
    };
    let nodes = served(call, "", "v1", "nodes");
    let container = call.query.get("container");
    connection::connect(
        nodes.as_ref().map(|n| &n.store),
        &call.ctx,
        &pod,
        connection,
        container,
    )
    .await?;
    // A pod no node runs has no log: upstream streams nothing (204).
    Ok(response::respond(204, "text/plain", Bytes::new()))
}

/// Another resource, when it is served.
fn served(
    call: &Call<'_>,
    group: &str,
    version: &str,
    plural: &str,
) -> Option<std::sync::Arc<crate::catalog::Served>> {
    call.api.catalog().lookup(group, version, plural).cloned()
}

fn decode(content_type: Option<&str>, body: &[u8]) -> Result<Value> {
    negotiate::decode(negotiate::body_kind(content_type)?, body)
}

/// Whether this is a create of the legacy `bindings` resource.
pub fn handles_legacy_binding(call: &Call<'_>) -> bool {
    call.rtype().group.is_empty() && call.rtype().plural == "bindings"
}

/// `POST /api/v1/namespaces/{ns}/bindings`.
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
    let pods = served(call, "", "v1", "pods")
        .ok_or_else(|| StatusError::internal("pods are not served"))?;
    binding::bind_legacy(&pods.store, &call.ctx, &binding).await?;
    Ok(created_status())
}

/// Binding and eviction answer 201 with a Success Status.
fn created_status() -> Response<Body> {
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201});
    let mut bytes = serde_json::to_vec(&body).unwrap_or_default();
    bytes.push(b'\n');
    response::json(201, bytes)
}

/// Upstream's answer to an eviction more than one budget covers: a 500
/// Status without a reason (nor a trailing newline).
fn multiple_budgets() -> Response<Body> {
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "code": 500, "message": eviction::MULTIPLE_BUDGETS});
    response::json(500, serde_json::to_vec(&body).unwrap_or_default())
}
