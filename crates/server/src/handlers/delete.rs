//! DELETE of an object and of a collection, with `DeleteOptions` from the
//! query or the body, and upstream's answers (the object or a `Status`).

use http::Response;
use hyper::body::Incoming;
use serde_json::{Value, json};

use apimachinery::options::{DeleteOptionsBody, PropagationPolicy};
use apimachinery::{StatusError, meta};
use registry::options::DeleteOptions;
use registry::{Object, ResourceType};

use super::call::{Call, Result, object_response};
use crate::encode;
use crate::negotiate::{self, BodyKind};
use crate::response::{self, Body};

/// DELETE options come from the query and, optionally, a `DeleteOptions` body.
pub async fn delete_options(
    call: &Call<'_>,
    content_type: Option<&str>,
    body: Incoming,
) -> Result<DeleteOptions> {
    let mut opts = call.query.delete_options()?;
    let bytes = call.read_body(body).await?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(opts);
    }
    let decoded = match negotiate::body_kind(content_type)? {
        BodyKind::Protobuf => negotiate::decode(BodyKind::Protobuf, &bytes)?,
        _ => serde_json::from_slice(&bytes)
            .map_err(|e| StatusError::bad_request(format!("invalid DeleteOptions: {e}")))?,
    };
    let body: DeleteOptionsBody = serde_json::from_value(decoded)
        .map_err(|e| StatusError::bad_request(format!("invalid DeleteOptions: {e}")))?;
    if let Some(grace) = body.grace_period_seconds {
        opts.grace_period_seconds = Some(grace);
    }
    if let Some(policy) = &body.propagation_policy {
        opts.propagation_policy = Some(crate::query::parse_propagation_policy(policy)?);
    }
    // The deprecated form of `propagationPolicy: Orphan|Background`.
    if let Some(orphan) = body.orphan_dependents {
        opts.orphan_dependents = Some(orphan);
        if opts.propagation_policy.is_some() {
            return Err(StatusError::bad_request(
                "DeleteOptions: Invalid value: \"orphanDependents\": orphanDependents and propagationPolicy cannot both be set",
            ));
        }
        opts.propagation_policy = Some(PropagationPolicy::from_orphan_dependents(orphan));
    }
    if let Some(preconditions) = body.preconditions {
        opts.precondition_uid = preconditions.uid.or(opts.precondition_uid);
        opts.precondition_resource_version = preconditions
            .resource_version
            .or(opts.precondition_resource_version);
    }
    Ok(opts)
}

pub async fn delete(
    call: &Call<'_>,
    content_type: Option<&str>,
    body: Incoming,
) -> Result<Response<Body>> {
    let opts = delete_options(call, content_type, body).await?;
    let mut ctx = call.ctx.clone();
    if call.query.dry_run()? {
        ctx.dry_run = true;
    }
    let outcome = call
        .served
        .store
        .delete(&ctx, &call.info.name, &opts)
        .await?;
    // A pending deletion answers with the object; 202 only for the explicit,
    // deprecated `orphanDependents: false` (upstream's quirk).
    if !outcome.deleted {
        let code = if opts.orphan_dependents == Some(false) {
            202
        } else {
            200
        };
        return Ok(object_response(
            call,
            code,
            &Object::new(outcome.object),
            &[],
        ));
    }
    if call.rtype().return_deleted_object {
        return Ok(object_response(
            call,
            200,
            &Object::new(outcome.object),
            &[],
        ));
    }
    let status = deleted_status(call.rtype(), &call.info.name, &outcome.object);
    let mut resp = response::respond(
        200,
        &call.output.content_type_of_values(),
        encode::value(&call.output, &status),
    );
    response::add_warnings(&mut resp, &call.ctx.warnings.take());
    Ok(resp)
}

/// What a completed DELETE answers for most types: a `Success` Status whose
/// `details.kind` is the resource (plural), as upstream's store fills it in.
pub fn deleted_status(rtype: &ResourceType, name: &str, deleted: &Value) -> Value {
    let mut details = json!({"name": name, "kind": rtype.plural, "uid": meta::uid(deleted)});
    if !rtype.group.is_empty() {
        details["group"] = json!(rtype.group);
    }
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    })
}

pub async fn delete_collection(
    call: &Call<'_>,
    content_type: Option<&str>,
    body: Incoming,
) -> Result<Response<Body>> {
    let opts = delete_options(call, content_type, body).await?;
    let list_opts = call.query.list_options()?;
    let deleted = call
        .served
        .store
        .delete_collection(&call.ctx, list_opts, &opts)
        .await?;
    let rtype = call.rtype();
    let meta = encode::ListMeta {
        resource_version: call.api.storage.revision(),
        continue_token: None,
        remaining: None,
    };
    // Written sorted for a custom resource (an unstructured list, as the
    // objects are: `encode::value`).
    let list = json!({
        "kind": rtype.list_kind(),
        "apiVersion": rtype.api_version(),
        "metadata": encode::served_list_metadata(rtype, &meta),
        "items": deleted,
    });
    let mut resp = response::respond(
        200,
        &call.output.content_type_of_values(),
        encode::value(&call.output, &list),
    );
    response::add_warnings(&mut resp, &call.ctx.warnings.take());
    Ok(resp)
}
