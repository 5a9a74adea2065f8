//! The `Call` every verb handler works on (the request as the handlers need
//! it), and what several handlers share: reading and decoding bodies, type and
//! field checks, the object response.
//!
//! Hot path: every resource request builds a `Call`.

use bytes::Bytes;
use http::Response;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::Value;
use std::sync::Arc;

use apimachinery::options::FieldValidation;
use apimachinery::{StatusError, meta};
use registry::{Object, RequestContext, ResourceType};

use crate::api::Api;
use crate::catalog::Served;
use crate::encode::{self, TableOptions};
use crate::negotiate::{self, BodyKind, Output};
use crate::query::Query;
use crate::request_info::RequestInfo;
use crate::response::{self, Body};
use crate::strict;

/// Upstream's limit on request bodies.
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// Past this, an oversized body is no longer drained before answering 413.
const DRAIN_LIMIT: usize = 32 * 1024 * 1024;

pub type Result<T> = std::result::Result<T, StatusError>;

/// Everything a verb handler needs about the request.
pub struct Call<'a> {
    pub api: &'a Api,
    pub served: Arc<Served>,
    pub info: &'a RequestInfo,
    pub query: Query,
    pub output: Output,
    pub table: TableOptions,
    pub ctx: RequestContext,
    pub accept_encoding: Option<String>,
    /// Set when the request is audited: where the decoded body goes.
    pub audit_body: Option<crate::audit::BodyCapture>,
}

impl Call<'_> {
    /// Read the body, keeping a copy for the audit log when audited.
    pub async fn read_body(&self, body: Incoming) -> Result<Bytes> {
        let bytes = read_body(body).await?;
        if let Some(capture) = &self.audit_body {
            capture.keep_bytes(&bytes);
        }
        Ok(bytes)
    }

    pub fn rtype(&self) -> &ResourceType {
        &self.served.rtype
    }
}

pub async fn read_body(mut body: Incoming) -> Result<Bytes> {
    // Most bodies come in one frame: kept as it came, not copied.
    let mut first: Option<Bytes> = None;
    let mut rest = bytes::BytesMut::new();
    let mut total = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            StatusError::bad_request(format!("failed to read the request body: {e}"))
        })?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        total += data.len();
        if total <= MAX_BODY_BYTES {
            match first.take() {
                None if rest.is_empty() => first = Some(data),
                earlier => {
                    if let Some(earlier) = earlier {
                        rest.extend_from_slice(&earlier);
                    }
                    rest.extend_from_slice(&data);
                }
            }
        } else if total > DRAIN_LIMIT {
            break;
        }
    }
    if total > MAX_BODY_BYTES {
        // The rest was read and dropped so the client sees the 413 instead of a reset.
        return Err(StatusError::too_large(format!(
            "Request entity too large: limit is {MAX_BODY_BYTES}"
        )));
    }
    Ok(first.unwrap_or_else(|| rest.freeze()))
}

/// Check that a decoded body is the object this endpoint serves.
pub fn check_type(rtype: &ResourceType, obj: &Value) -> Result<()> {
    if !obj.is_object() {
        return Err(StatusError::bad_request(
            "the body of the request must be a JSON object",
        ));
    }
    let (kind, api_version) = (meta::kind(obj), meta::api_version(obj));
    if kind.is_empty() {
        return Err(StatusError::bad_request(format!(
            "Object 'Kind' is missing in '{obj}'"
        )));
    }
    if api_version.is_empty() {
        return Err(StatusError::bad_request(format!(
            "Object 'apiVersion' is missing in '{obj}'"
        )));
    }
    if !rtype.is_api_version(api_version) {
        return Err(StatusError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({expected})",
            expected = rtype.api_version_text()
        )));
    }
    if kind != rtype.kind {
        return Err(StatusError::bad_request(format!(
            "the object provided is unrecognized (must be of type {}): kind {kind:?} does not match",
            rtype.kind
        )));
    }
    Ok(())
}

/// `fieldValidation`: unknown fields, and the fields `body` repeats, are an
/// error (Strict), a warning each (Warn, the default) or silently dropped,
/// the last of a repeat kept (Ignore). Built-in types never keep unknown
/// fields. `body` is what a create or update sent (`None` for a patched
/// object: its unknown fields only).
pub fn validate_fields(
    call: &Call<'_>,
    obj: &mut Value,
    body: Option<&strict::Body>,
) -> Result<Vec<String>> {
    let rtype = call.rtype();
    let (unknown, pruned) = unknown_fields(rtype, obj);
    if unknown.is_empty() && !body.is_some_and(|b| b.duplicates) {
        return Ok(Vec::new());
    }
    let directive = call.query.field_validation()?;
    let errors = match (directive, body) {
        (FieldValidation::Ignore, _) => Vec::new(),
        (_, Some(body)) => strict::strict_errors(rtype, body, &unknown),
        (_, None) => unknown
            .iter()
            .map(|f| format!("unknown field {}", apimachinery::gofmt::quote(f)))
            .collect(),
    };
    if directive == FieldValidation::Strict && !errors.is_empty() {
        return Err(strict::strict_error(rtype, &errors));
    }
    if !pruned {
        for path in &unknown {
            remove_path(obj, path);
        }
    }
    Ok(strict::warnings(&errors))
}

/// The fields of `obj` its type's schema does not know, in the order
/// upstream reports them, and whether they are gone from `obj` already
/// (custom resources are pruned; built-in kinds' fields are only found).
fn unknown_fields(rtype: &ResourceType, obj: &mut Value) -> (Vec<String>, bool) {
    let (group, version, kind) = (&rtype.group, &rtype.version, &rtype.kind);
    if let Some(unknown) = openapi::builtin_unknown_fields_of(group, version, kind, obj) {
        return (unknown, false);
    }
    let mut unknown = rtype.strategy.prune(obj).unwrap_or_default();
    // Upstream decodes root metadata first, then prunes the rest.
    unknown.sort_by_key(|path| !path.starts_with("metadata."));
    (unknown, true)
}

/// Drop the fields `obj`'s type does not know, without a word (what a
/// server-side apply's configuration keeps past its typed check).
pub fn drop_unknown_fields(rtype: &ResourceType, obj: &mut Value) {
    let (unknown, pruned) = unknown_fields(rtype, obj);
    if !pruned {
        for path in &unknown {
            remove_path(obj, path);
        }
    }
}

/// Remove the field at a dotted path with indices (`spec.ports[0].bogus`).
pub fn remove_path(obj: &mut Value, path: &str) {
    let mut segments: Vec<(&str, Option<usize>)> = Vec::new();
    for part in path.split('.') {
        match part.split_once('[') {
            Some((name, rest)) => segments.push((name, rest.trim_end_matches(']').parse().ok())),
            None => segments.push((part, None)),
        }
    }
    let Some(((last, last_idx), parents)) = segments.split_last() else {
        return;
    };
    let mut node = obj;
    for (name, idx) in parents {
        let Some(next) = node.get_mut(*name) else {
            return;
        };
        node = match idx {
            Some(i) => match next.get_mut(*i) {
                Some(n) => n,
                None => return,
            },
            None => next,
        };
    }
    if last_idx.is_none()
        && let Some(map) = node.as_object_mut()
    {
        map.remove(*last);
    }
}

pub async fn decode_object(
    call: &Call<'_>,
    content_type: Option<&str>,
    body: Incoming,
) -> Result<Value> {
    decode_body(call, content_type, body)
        .await
        .map(|(obj, _)| obj)
}

/// The object a create or update sent, and the body it came from (for
/// [`validate_fields`]).
pub async fn decode_body(
    call: &Call<'_>,
    content_type: Option<&str>,
    body: Incoming,
) -> Result<(Value, strict::Body)> {
    let kind = negotiate::body_kind(content_type)?;
    if !matches!(kind, BodyKind::Json | BodyKind::Yaml | BodyKind::Protobuf) {
        return Err(StatusError::unsupported_media_type(
            &negotiate::OBJECT_MEDIA_TYPES,
        ));
    }
    let bytes = read_body(body).await?;
    let (mut obj, body) = strict::decode(kind, bytes)?;
    default_type(call.rtype(), &mut obj);
    check_type(call.rtype(), &obj)?;
    check_metadata_decodes(call.rtype(), &obj)?;
    check_quantities_decode(call.rtype(), &obj)?;
    apimachinery::object_meta::normalize_times(&mut obj);
    if let Some(capture) = &call.audit_body {
        capture.keep(&obj);
    }
    Ok((obj, body))
}

/// Upstream decodes `metadata` into Go's `ObjectMeta` (a built-in kind's whole
/// body, a custom resource's `metadata` alone), so a member of the wrong JSON type
/// is a 400 decode error, not a validation error.
fn check_metadata_decodes(rtype: &ResourceType, obj: &Value) -> Result<()> {
    let prefix = if rtype.structured { "metadata." } else { "" };
    let error = match apimachinery::meta::member(obj) {
        None | Some(Value::Null) => None,
        Some(metadata @ Value::Object(_)) => {
            apimachinery::meta_decode::decode_error(metadata, prefix)
        }
        // Not an object at all (a string, an array): Go's message names the kind.
        Some(other) => apimachinery::ObjectMeta::from_value_in(other.clone(), prefix, &rtype.kind)
            .err()
            .map(|e| e.0),
    };
    match error {
        None => Ok(()),
        Some(err) => Err(cannot_be_handled(rtype, &err)),
    }
}

/// Upstream decodes a built-in kind's quantities into `resource.Quantity`, so
/// one that does not parse is a 400 decode error (`quantities must match the
/// regular expression …`), and nothing is stored that Go clients could not
/// read back.
fn check_quantities_decode(rtype: &ResourceType, obj: &Value) -> Result<()> {
    if !rtype.structured {
        return Ok(());
    }
    match registry::quantity_error(&rtype.group, &rtype.version, &rtype.kind, obj) {
        None => Ok(()),
        Some(err) => Err(cannot_be_handled(rtype, &err)),
    }
}

/// Upstream's decode error: `<Kind> in version "<version>" cannot be handled
/// as a <Kind>: <why>`, a 400.
fn cannot_be_handled(rtype: &ResourceType, why: &dyn std::fmt::Display) -> StatusError {
    StatusError::bad_request(format!(
        "{kind} in version \"{version}\" cannot be handled as a {kind}: {why}",
        kind = rtype.kind,
        version = rtype.version,
    ))
}

/// A body for a built-in type may leave out `apiVersion` and `kind`: upstream's
/// typed decoder takes them from the URL. Custom resources are decoded as
/// unstructured objects and must name them.
pub fn default_type(rtype: &ResourceType, obj: &mut Value) {
    let Some(map) = obj.as_object_mut().filter(|_| rtype.structured) else {
        return;
    };
    let missing = |v: Option<&Value>| v.and_then(Value::as_str).is_none_or(str::is_empty);
    if missing(map.get("kind")) {
        map.insert("kind".into(), Value::String(rtype.kind.clone()));
    }
    if missing(map.get("apiVersion")) {
        map.insert("apiVersion".into(), Value::String(rtype.api_version()));
    }
}

/// Encode one object in the negotiated representation.
pub fn object_response(
    call: &Call<'_>,
    code: u16,
    obj: &Object,
    warnings: &[String],
) -> Response<Body> {
    let body = encode::object(&call.output, call.rtype(), obj, &call.table);
    let (accept, content_type) = (call.accept_encoding.as_deref(), call.output.content_type());
    let mut resp = match call.output {
        // The object's own bytes and the newline as two buffers: no copy.
        Output::Json if !response::gzips(accept, body.len() + 1) => {
            let mut framed = response::Chunk::from(body);
            framed.push(Bytes::from_static(b"\n"));
            response::respond_chunk(code, &content_type, framed)
        }
        Output::Json => {
            response::maybe_gzip(accept, code, &content_type, encode::with_newline(&body))
        }
        _ => response::maybe_gzip(accept, code, &content_type, body),
    };
    response::add_warnings(&mut resp, warnings);
    response::add_warnings(&mut resp, &call.ctx.warnings.take());
    resp
}

/// A write's answer, with `warnings` on a failure too: upstream sends the
/// warnings a request collected (field validation's, admission's) whatever
/// the outcome.
pub fn with_warnings(
    call: &Call<'_>,
    result: Result<Response<Body>>,
    warnings: &[String],
) -> Result<Response<Body>> {
    let err = match result {
        Ok(resp) => return Ok(resp),
        Err(err) => err,
    };
    let mut warnings = warnings.to_vec();
    warnings.extend(call.ctx.warnings.take());
    if warnings.is_empty() {
        return Err(err);
    }
    let mut resp = if matches!(call.output, Output::Protobuf) {
        response::error_as_protobuf(&err)
    } else {
        response::error(&err)
    };
    response::add_warnings(&mut resp, &warnings);
    Ok(resp)
}
