//! PATCH: JSON patch, merge patch, strategic merge patch and server-side apply.

use bytes::Bytes;
use http::Response;
use serde_json::Value;

use apimachinery::{StatusError, meta};
use patch::PatchError;

use crate::negotiate::{self, BodyKind};
use crate::resources::{Call, check_type, object_response, validate_fields};
use crate::response::Body;

type Result<T> = std::result::Result<T, StatusError>;

fn patch_error(e: PatchError) -> StatusError {
    match e {
        PatchError::Malformed(m) => StatusError::bad_request(m),
        PatchError::Failed(m) => StatusError::new(422, "Invalid", m),
        PatchError::Invalid(m) => StatusError::internal(m),
    }
}

pub async fn patch(
    call: &Call<'_>,
    content_type: Option<&str>,
    body: Bytes,
) -> Result<Response<Body>> {
    let kind = negotiate::body_kind(content_type)?;
    let patch_doc = match kind {
        BodyKind::Json | BodyKind::Yaml => {
            return Err(StatusError::unsupported_media_type(
                content_type.unwrap_or(""),
            ));
        }
        BodyKind::ApplyPatch => negotiate::decode(kind, &body)?,
        _ => serde_json::from_slice::<Value>(&body)
            .map_err(|e| StatusError::bad_request(format!("error decoding patch: {e}")))?,
    };
    if kind != BodyKind::JsonPatch && !patch_doc.is_object() {
        return Err(StatusError::bad_request("patch body must be a JSON object"));
    }
    if kind == BodyKind::ApplyPatch {
        return apply(call, patch_doc).await;
    }
    let schema = &call.served.patch_schema;
    let rtype = call.rtype();
    let warnings = std::sync::Mutex::new(Vec::new());
    let mutate = |current: &Value| -> Result<Value> {
        let mut patched = match kind {
            BodyKind::JsonPatch => patch::json_patch::apply(current, &patch_doc),
            BodyKind::MergePatch => patch::merge_patch::apply(current, &patch_doc),
            _ => patch::strategic::apply(current, &patch_doc, schema),
        }
        .map_err(patch_error)?;
        check_type(rtype, &patched)?;
        let found = validate_fields(call, &mut patched)?;
        if let Ok(mut w) = warnings.lock() {
            *w = found;
        }
        Ok(patched)
    };
    let updated = call
        .served
        .store
        .update_with(&call.ctx, &call.info.name, mutate)
        .await?;
    let warnings = warnings.into_inner().unwrap_or_default();
    Ok(object_response(call, 200, &updated, None, &warnings))
}

/// Server-side apply: the applied configuration is merged over the live object
/// (or creates it). Field ownership is recorded per manager; conflict detection
/// between managers is not implemented yet.
async fn apply(call: &Call<'_>, config: Value) -> Result<Response<Body>> {
    if call.query.get("fieldManager").is_none_or(str::is_empty) {
        return Err(StatusError::bad_request(
            "PATCH, application/apply-patch+yaml: fieldManager: Required value: is required for apply patch",
        ));
    }
    check_type(call.rtype(), &config)?;
    let name = meta::name(&config);
    if !name.is_empty() && name != call.info.name {
        return Err(StatusError::bad_request(format!(
            "the name of the object ({name}) does not match the name on the URL ({})",
            call.info.name
        )));
    }
    let merged = call
        .served
        .store
        .update_with(&call.ctx, &call.info.name, |current| {
            Ok(merge_applied(current, &config))
        })
        .await;
    match merged {
        Ok(updated) => Ok(object_response(call, 200, &updated, None, &[])),
        Err(e) if e.code() == 404 => {
            let mut obj = config.clone();
            meta::set_str(&mut obj, "name", &call.info.name);
            let created = call.served.store.create(&call.ctx, obj).await?;
            Ok(object_response(call, 201, &created, None, &[]))
        }
        Err(e) => Err(e),
    }
}

/// Overlay `config` onto `live`: maps merge recursively, everything else replaces.
fn merge_applied(live: &Value, config: &Value) -> Value {
    match (live, config) {
        (Value::Object(l), Value::Object(c)) => {
            let mut out = l.clone();
            for (k, v) in c {
                let merged = match l.get(k) {
                    Some(existing) => merge_applied(existing, v),
                    None => v.clone(),
                };
                out.insert(k.clone(), merged);
            }
            Value::Object(out)
        }
        _ => config.clone(),
    }
}
