//! PATCH: JSON patch, merge patch, strategic merge patch and server-side apply.

use bytes::Bytes;
use http::Response;
use serde_json::Value;

use apimachinery::options::FieldValidation;
use apimachinery::{StatusError, Subresource, meta};
use patch::PatchError;

use super::call::{
    Call, check_type, drop_unknown_fields, object_response, validate_fields, with_warnings,
};
use crate::negotiate::{self, BodyKind};
use crate::response::Body;
use crate::strict;

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
    let mut source = None;
    let patch_doc = match kind {
        BodyKind::Json | BodyKind::Yaml | BodyKind::Protobuf => {
            return Err(StatusError::unsupported_media_type(
                negotiate::patch_media_types(call.rtype().structured),
            ));
        }
        BodyKind::ApplyPatch => {
            let (doc, body) = strict::decode(kind, body)?;
            source = Some(body);
            doc
        }
        _ => serde_json::from_slice::<Value>(&body)
            .map_err(|e| StatusError::bad_request(format!("error decoding patch: {e}")))?,
    };
    if kind != BodyKind::JsonPatch && !patch_doc.is_object() {
        return Err(StatusError::bad_request("patch body must be a JSON object"));
    }
    if let Some(source) = source {
        return apply(call, patch_doc, &source).await;
    }
    if kind == BodyKind::StrategicMergePatch && !call.rtype().structured {
        return Err(StatusError::unsupported_media_type(
            negotiate::patch_media_types(false),
        ));
    }
    let json_patch = match kind {
        BodyKind::JsonPatch => Some(decode_json_patch(&patch_doc)?),
        _ => None,
    };
    let schema = call.rtype().patch_schema();
    let rtype = call.rtype();
    let warnings = std::sync::Mutex::new(Vec::new());
    let mutate = |current: &Value| -> Result<Value> {
        let mut patched = match (&json_patch, kind) {
            (Some(ops), _) => ops.apply(current),
            (None, BodyKind::MergePatch) => patch::merge_patch::apply(current, &patch_doc),
            (None, _) => patch::strategic::apply(current, &patch_doc, schema),
        }
        .map_err(patch_error)?;
        check_type(rtype, &patched)?;
        check_patched_quantities(rtype, kind, &patch_doc, &patched)?;
        let found = validate_fields(call, &mut patched, None)?;
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
    Ok(object_response(call, 200, &updated, &warnings))
}

/// A patched built-in object whose quantity Go's decoder refuses: upstream's
/// 422 on the field `patch`, showing what it decoded: the patched object's
/// JSON (JSON and merge patches), or the patch itself as Go prints a map
/// (strategic merge patches).
fn check_patched_quantities(
    rtype: &registry::ResourceType,
    kind: BodyKind,
    patch_doc: &Value,
    patched: &Value,
) -> Result<()> {
    if !rtype.structured {
        return Ok(());
    }
    let Some(err) = registry::quantity_error(&rtype.group, &rtype.version, &rtype.kind, patched)
    else {
        return Ok(());
    };
    let shown = match kind {
        BodyKind::StrategicMergePatch => apimachinery::gofmt::plain(patch_doc),
        _ => String::from_utf8_lossy(&apimachinery::json::encode_object(
            patched,
            apimachinery::json::MetadataMembers::All,
        ))
        .into_owned(),
    };
    let error = apimachinery::FieldError::invalid_go(
        &apimachinery::FieldPath::new("patch"),
        &apimachinery::gofmt::quote(&shown),
        &err.to_string(),
    );
    Err(StatusError::invalid("", "", "", &vec![error]))
}

/// Decode a JSON patch once (not per retry) and enforce upstream's operation limit.
fn decode_json_patch(doc: &Value) -> Result<patch::json_patch::JsonPatch> {
    let ops = patch::json_patch::JsonPatch::from_value(doc).map_err(patch_error)?;
    if ops.len() > patch::json_patch::MAX_OPERATIONS {
        return Err(StatusError::too_large(format!(
            "The allowed maximum operations in a JSON patch is {}, got {}",
            patch::json_patch::MAX_OPERATIONS,
            ops.len()
        )));
    }
    Ok(ops)
}

/// Server-side apply: `registry::apply` merges the configuration into the live
/// object (or creates it), tracks field ownership per manager and reports
/// conflicts with other managers (409) unless `force=true`.
///
/// `fieldValidation` as upstream's apply has it: fields the type does not
/// declare fail the apply whatever it says (the typed check, a 500); what
/// the check lets through and the type does not keep (below an object that
/// preserves unknown fields) is dropped without a word; repeated keys are the
/// YAML decoder's errors (Strict: a 400 once the merge succeeded; Warn: a
/// warning each).
async fn apply(
    call: &Call<'_>,
    mut config: Value,
    source: &strict::Body,
) -> Result<Response<Body>> {
    // Present: the options' validation requires it for an apply.
    let manager = call
        .query
        .get("fieldManager")
        .unwrap_or_default()
        .to_string();
    check_type(call.rtype(), &config)?;
    registry::apply::check_config(&config)?;
    let name = meta::name(&config);
    if !name.is_empty() && name != call.info.name {
        return Err(StatusError::bad_request(format!(
            "the name of the object ({name}) does not match the name on the URL ({})",
            call.info.name
        )));
    }
    let directive = call.query.field_validation()?;
    let typed = strict::apply_typed_check(call.rtype(), &config).err();
    // A built-in kind's typed check leaves nothing its type does not know.
    if typed.is_none() && !call.rtype().structured {
        drop_unknown_fields(call.rtype(), &mut config);
    }
    let duplicates = match directive {
        FieldValidation::Ignore => None,
        _ => strict::apply_duplicates(source),
    };
    let warnings = match (&duplicates, directive) {
        (Some(d), FieldValidation::Warn) => strict::warnings(std::slice::from_ref(d)),
        _ => Vec::new(),
    };
    // Status is not applied through the main resource. Through `/status` the
    // rest is merged, and dropped by the status strategy: what its reset
    // fields (below) leave out is the applier's all the same, as upstream.
    let status_only = call.info.subresource == Subresource::Status;
    if call.rtype().has_status
        && !status_only
        && let Some(map) = config.as_object_mut()
    {
        map.remove("status");
    }
    let force = call.query.flag("force");
    let api_version = call.rtype().api_version();
    let gr = call.rtype().group_resource();
    // What the write's strategy resets is never the applier's.
    let tracking = call.rtype().tracking(&call.info.subresource);
    // Upstream warns once the merge succeeded (whatever happens next).
    let merged_once = std::sync::atomic::AtomicBool::new(false);
    let merge = |live: Option<&Value>| -> Result<Value> {
        if let Some(e) = &typed {
            return Err(e.clone());
        }
        let now = apimachinery::time::now_rfc3339();
        let writer = registry::managed_fields::Writer {
            manager: &manager,
            api_version: &api_version,
            subresource: call.info.subresource.as_str(),
        };
        let merged = registry::apply::apply(live, &config, &writer, force, &tracking, &now)
            .map_err(|conflicts| conflicts.to_status(&gr, &call.info.name))?;
        merged_once.store(true, std::sync::atomic::Ordering::Relaxed);
        match &duplicates {
            Some(d) if directive == FieldValidation::Strict => {
                Err(strict::apply_duplicates_error(d))
            }
            _ => Ok(merged),
        }
    };
    // managedFields are computed by `apply`; the store must not record an Update too.
    let mut ctx = call.ctx.clone();
    ctx.field_manager.clear();
    let updated = call
        .served
        .store
        .update_with(&ctx, &call.info.name, |current| merge(Some(current)))
        .await;
    let result = match updated {
        Ok(updated) => Ok(object_response(call, 200, &updated, &warnings)),
        Err(e) if e.code() == 404 && !status_only => match merge(None) {
            Ok(mut obj) => {
                meta::set_str(&mut obj, "name", &call.info.name);
                let created = call.served.store.create(&ctx, obj).await;
                created.map(|created| object_response(call, 201, &created, &warnings))
            }
            Err(e) => Err(e),
        },
        Err(e) => Err(e),
    };
    let merged = merged_once.load(std::sync::atomic::Ordering::Relaxed);
    with_warnings(call, result, if merged { &warnings } else { &[] })
}
