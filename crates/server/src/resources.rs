//! Resource requests: scope checks, body decoding, and the verbs.

use bytes::Bytes;
use http::{Request, Response, header};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::{Value, json};
use std::sync::Arc;

use apimachinery::options::{DeleteOptionsBody, PropagationPolicy};
use apimachinery::{StatusError, Subresource, Verb, meta};
use registry::options::DeleteOptions;
use registry::{Object, RequestContext, ResourceType};

use crate::api::Api;
use crate::authn::UserInfo;
use crate::catalog::Served;
use crate::encode::{self, ListMeta, TableOptions};
use crate::negotiate::{self, BodyKind, Output};
use crate::query::Query;
use crate::request_info::RequestInfo;
use crate::response::{self, Body};
use crate::{patching, watch};

/// Upstream's limit on request bodies.
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;
/// Past this, an oversized body is no longer drained before answering 413.
const DRAIN_LIMIT: usize = 32 * 1024 * 1024;

type Result<T> = std::result::Result<T, StatusError>;

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
}

impl Call<'_> {
    pub fn rtype(&self) -> &ResourceType {
        &self.served.rtype
    }
}

pub async fn serve(
    api: &Api,
    req: Request<Incoming>,
    info: &RequestInfo,
    user: UserInfo,
    query: Query,
) -> Response<Body> {
    let Some(served) = api
        .catalog()
        .lookup(&info.group, &info.version, &info.resource)
        .cloned()
    else {
        return response::error(&StatusError::path_not_found());
    };
    let deprecation = served.rtype.deprecation_warning.clone();
    let mut resp = match serve_inner(api, served, req, info, user, query).await {
        Ok(resp) => resp,
        Err(e) => response::error(&e),
    };
    // Deprecated versions warn on every request, as upstream does.
    if let Some(warning) = &deprecation {
        response::add_warnings(&mut resp, std::slice::from_ref(warning));
    }
    resp
}

async fn serve_inner(
    api: &Api,
    served: Arc<Served>,
    req: Request<Incoming>,
    info: &RequestInfo,
    user: UserInfo,
    query: Query,
) -> Result<Response<Body>> {
    check_scope(&served.rtype, info)?;
    let headers = req.headers();
    let header_str = |h: header::HeaderName| {
        headers
            .get(h)
            .and_then(|v| v.to_str().ok())
            .map(String::from)
    };
    let output = negotiate::negotiate(header_str(header::ACCEPT).as_deref())?;
    let field_manager = query
        .get("fieldManager")
        .map(String::from)
        .unwrap_or_else(|| default_manager(header_str(header::USER_AGENT).as_deref()));
    let ctx = RequestContext {
        user: user.name.clone(),
        groups: user.groups.clone(),
        uid: user.uid.clone(),
        extra: user.extra.clone(),
        namespace: if served.rtype.namespaced {
            info.namespace.clone()
        } else {
            String::new()
        },
        dry_run: query.dry_run()?,
        field_manager,
        subresource: info.subresource.clone(),
    };
    let table = TableOptions {
        include_object: query.get("includeObject").unwrap_or("").to_string(),
        no_headers: false,
    };
    let content_type = header_str(header::CONTENT_TYPE);
    if let Some(options_kind) = write_options_kind(info.verb) {
        query.check_field_validation(options_kind)?;
    }
    let call = Call {
        api,
        served,
        info,
        query,
        output,
        table,
        ctx,
        accept_encoding: header_str(header::ACCEPT_ENCODING),
    };
    if info.subresource == Subresource::Token {
        let body = read_body(req.into_body()).await?;
        return token_request(&call, content_type.as_deref(), &body).await;
    }
    if info.subresource == Subresource::Scale {
        let body = read_body(req.into_body()).await?;
        return crate::scale::serve(&call, content_type.as_deref(), body).await;
    }
    if let Some(provider) = call.rtype().provider.clone() {
        return crate::computed::serve(&call, provider.as_ref()).await;
    }
    if !call.rtype().is_stored() {
        return match info.verb {
            Verb::Create => {
                let obj = decode_object(&call, content_type.as_deref(), req.into_body()).await?;
                let reviewed = crate::reviews::review(api, &call.ctx, obj)?;
                Ok(object_response(&call, 201, &Object::new(reviewed), &[]))
            }
            _ => Err(StatusError::method_not_allowed(
                "the server does not allow this method on the requested resource",
            )),
        };
    }
    match info.verb {
        Verb::Get => get(&call).await,
        Verb::List => list(&call).await,
        Verb::Watch => watch::serve(&call).await,
        Verb::Create => create(&call, content_type.as_deref(), req.into_body()).await,
        Verb::Update => update(&call, content_type.as_deref(), req.into_body()).await,
        Verb::Patch => {
            patching::patch(
                &call,
                content_type.as_deref(),
                read_body(req.into_body()).await?,
            )
            .await
        }
        Verb::Delete => delete(&call, content_type.as_deref(), req.into_body()).await,
        Verb::DeleteCollection => {
            delete_collection(&call, content_type.as_deref(), req.into_body()).await
        }
        _ => Err(StatusError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        )),
    }
}

/// `serviceaccounts/<name>/token`: a TokenRequest answered with a signed token.
async fn token_request(
    call: &Call<'_>,
    content_type: Option<&str>,
    body: &[u8],
) -> Result<Response<Body>> {
    let request = negotiate::decode(negotiate::body_kind(content_type)?, body)?;
    if let Some(kind) = request.get("kind").and_then(Value::as_str)
        && kind != "TokenRequest"
    {
        return Err(StatusError::bad_request(format!(
            "the body must be a TokenRequest, not a {kind}"
        )));
    }
    let tokens = call.api.authn.service_account_tokens().ok_or_else(|| {
        StatusError::service_unavailable("service-account tokens are not configured")
    })?;
    let sa = call.served.store.get(&call.ctx, &call.info.name).await?;
    let answer = tokens.request(&sa.value, &request)?;
    Ok(response::json(
        201,
        Bytes::from(serde_json::to_vec(&answer).unwrap_or_default()),
    ))
}

/// The options type upstream validates a write's query parameters as.
fn write_options_kind(verb: Verb) -> Option<&'static str> {
    match verb {
        Verb::Create => Some("CreateOptions"),
        Verb::Update => Some("UpdateOptions"),
        Verb::Patch => Some("PatchOptions"),
        _ => None,
    }
}

/// Upstream derives the default field manager from the user agent's first segment.
fn default_manager(user_agent: Option<&str>) -> String {
    let ua = user_agent.unwrap_or("unknown");
    ua.split('/')
        .next()
        .unwrap_or(ua)
        .chars()
        .take(128)
        .collect()
}

/// Paths that name the wrong scope, or a subresource the type lacks, are 404s.
fn check_scope(rtype: &ResourceType, info: &RequestInfo) -> Result<()> {
    if !rtype.namespaced && info.namespaced_path {
        return Err(StatusError::path_not_found());
    }
    if rtype.namespaced
        && info.namespace.is_empty()
        && !matches!(info.verb, Verb::List | Verb::Watch)
    {
        return Err(StatusError::path_not_found());
    }
    match &info.subresource {
        Subresource::None => Ok(()),
        Subresource::Status
            if rtype.has_status && matches!(info.verb, Verb::Get | Verb::Update | Verb::Patch) =>
        {
            Ok(())
        }
        Subresource::Scale
            if rtype.scale.is_some()
                && matches!(info.verb, Verb::Get | Verb::Update | Verb::Patch) =>
        {
            Ok(())
        }
        sub if rtype
            .extra_subresources
            .iter()
            .any(|s| s.name == sub.as_str() && s.verbs.contains(&info.verb.as_str())) =>
        {
            Ok(())
        }
        _ => Err(StatusError::path_not_found()),
    }
}

pub async fn read_body(mut body: Incoming) -> Result<Bytes> {
    let mut buf = bytes::BytesMut::new();
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
            buf.extend_from_slice(&data);
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
    Ok(buf.freeze())
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
    let expected = rtype.api_version();
    if api_version != expected {
        return Err(StatusError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({expected})"
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

/// `fieldValidation`: unknown fields are an error (Strict), a warning (Warn, the
/// default) or silently dropped (Ignore). Built-in types never keep them.
pub fn validate_fields(call: &Call<'_>, obj: &mut Value) -> Result<Vec<String>> {
    let rtype = call.rtype();
    let gvk = openapi::Gvk::new(&rtype.group, &rtype.version, &rtype.kind);
    let (unknown, pruned) = match openapi::builtin_unknown_fields(&gvk, obj) {
        Some(unknown) => (unknown, false),
        None => match rtype.strategy.prune(obj) {
            Some(unknown) => (unknown, true),
            None => return Ok(Vec::new()),
        },
    };
    if unknown.is_empty() {
        return Ok(Vec::new());
    }
    let directive = call.query.field_validation()?.unwrap_or("Warn");
    if directive == "Strict" {
        return Err(StatusError::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: {}",
            openapi::strict_decoding_error(&unknown),
            kind = rtype.kind,
            version = rtype.version,
        )));
    }
    if !pruned {
        for path in &unknown {
            remove_path(obj, path);
        }
    }
    Ok(if directive == "Ignore" {
        Vec::new()
    } else {
        openapi::unknown_field_warnings(&unknown)
    })
}

/// Remove the field at a dotted path with indices (`spec.ports[0].bogus`).
fn remove_path(obj: &mut Value, path: &str) {
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

async fn decode_object(
    call: &Call<'_>,
    content_type: Option<&str>,
    body: Incoming,
) -> Result<Value> {
    let kind = negotiate::body_kind(content_type)?;
    if !matches!(kind, BodyKind::Json | BodyKind::Yaml | BodyKind::Protobuf) {
        return Err(StatusError::unsupported_media_type(
            &negotiate::OBJECT_MEDIA_TYPES,
        ));
    }
    let bytes = read_body(body).await?;
    let mut obj = negotiate::decode(kind, &bytes)?;
    default_type(call.rtype(), &mut obj);
    check_type(call.rtype(), &obj)?;
    Ok(obj)
}

/// A body for a built-in type may leave out `apiVersion` and `kind`: upstream's
/// typed decoder takes them from the URL. Custom resources are decoded as
/// unstructured objects and must name them.
fn default_type(rtype: &ResourceType, obj: &mut Value) {
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
    let cached = matches!(call.output, Output::Json).then(|| obj.json());
    let mut body = encode::object(&call.output, call.rtype(), &obj.value, cached, &call.table);
    if matches!(call.output, Output::Json) {
        body = encode::with_newline(&body);
    }
    let mut resp = response::maybe_gzip(
        call.accept_encoding.as_deref(),
        code,
        &call.output.content_type(),
        body,
    );
    response::add_warnings(&mut resp, warnings);
    resp
}

async fn get(call: &Call<'_>) -> Result<Response<Body>> {
    let obj = call.served.store.get(&call.ctx, &call.info.name).await?;
    Ok(object_response(call, 200, &obj, &[]))
}

async fn list(call: &Call<'_>) -> Result<Response<Body>> {
    let opts = call.query.list_options()?;
    let result = call.served.store.list(&call.ctx, opts).await?;
    let meta = ListMeta {
        resource_version: result.resource_version,
        continue_token: result.continue_token,
        remaining: result.remaining,
    };
    let body = encode::list(
        &call.output,
        call.rtype(),
        &result.items,
        &meta,
        &call.table,
    );
    Ok(response::maybe_gzip(
        call.accept_encoding.as_deref(),
        200,
        &call.output.content_type(),
        body,
    ))
}

async fn create(
    call: &Call<'_>,
    content_type: Option<&str>,
    body: Incoming,
) -> Result<Response<Body>> {
    let mut obj = decode_object(call, content_type, body).await?;
    let mut warnings = validate_fields(call, &mut obj)?;
    warnings.extend(call.rtype().strategy.warnings(&obj));
    let created = call.served.store.create(&call.ctx, obj).await?;
    Ok(object_response(call, 201, &created, &warnings))
}

async fn update(
    call: &Call<'_>,
    content_type: Option<&str>,
    body: Incoming,
) -> Result<Response<Body>> {
    let mut obj = decode_object(call, content_type, body).await?;
    let mut warnings = validate_fields(call, &mut obj)?;
    warnings.extend(call.rtype().strategy.warnings(&obj));
    let updated = call
        .served
        .store
        .update(&call.ctx, &call.info.name, obj)
        .await?;
    Ok(object_response(call, 200, &updated, &warnings))
}

/// DELETE options come from the query and, optionally, a `DeleteOptions` body.
async fn delete_options(
    call: &Call<'_>,
    content_type: Option<&str>,
    body: Incoming,
) -> Result<DeleteOptions> {
    let mut opts = call.query.delete_options()?;
    let bytes = read_body(body).await?;
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

async fn delete(
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
    Ok(response::json(
        200,
        encode::to_bytes(&deleted_status(
            call.rtype(),
            &call.info.name,
            &outcome.object,
        )),
    ))
}

/// What a completed DELETE answers for most types: a `Success` Status whose
/// `details.kind` is the resource (plural), as upstream's store fills it in.
fn deleted_status(rtype: &ResourceType, name: &str, deleted: &Value) -> Value {
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

async fn delete_collection(
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
    let list = json!({
        "kind": rtype.list_kind(),
        "apiVersion": rtype.api_version(),
        "metadata": {"resourceVersion": call.api.storage.revision().to_string()},
        "items": deleted,
    });
    Ok(response::json(200, encode::to_bytes(&list)))
}
