//! Resource requests: the catalog lookup, scope checks and the `Call`, then one
//! module per verb (or subresource) handler. Handlers depend on `call`, never
//! on this dispatcher or on each other.

mod call;
mod computed;
mod delete;
mod patch;
mod pods;
mod proxy;
mod read;
mod reviews;
mod scale;
mod token;
mod watch;
mod write;

pub use call::MAX_BODY_BYTES;

use http::{Request, Response, header};
use std::sync::Arc;

use apimachinery::{StatusError, Subresource, Verb};
use registry::{Object, RequestContext, ResourceType};

use crate::api::Api;
use crate::catalog::Served;
use crate::encode::TableOptions;
use crate::negotiate;
use crate::query::Query;
use crate::request_info::RequestInfo;
use crate::response::{self, Body};
use crate::user::UserInfo;
use call::{Call, Result, decode_object, object_response};

pub async fn serve(
    api: &Api,
    req: crate::boxed::BoxedRequest,
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
    // Errors are answered in protobuf to clients that asked for it first
    // (set from the request's `Accept` before anything can fail).
    let mut protobuf_errors = false;
    let served_inner = serve_inner(api, served, req, info, user, query, &mut protobuf_errors);
    let mut resp = match served_inner.await {
        Ok(resp) => resp,
        Err(e) if protobuf_errors => response::error_as_protobuf(&e),
        Err(e) => response::error(&e),
    };
    // Deprecated versions warn on every request, as upstream does.
    if let Some(warning) = &deprecation {
        response::add_warnings(&mut resp, std::slice::from_ref(warning));
    }
    resp
}

/// Whether the endpoint answers as a Table or PartialObjectMetadata: upstream's
/// storages of objects and their `status` and `scale` convert; reviews,
/// tokens, bindings, evictions and the other subresources do not.
fn converts_to_tables(rtype: &registry::ResourceType, info: &RequestInfo) -> bool {
    rtype.verbs.contains(&"get")
        && matches!(
            info.subresource,
            Subresource::None | Subresource::Status | Subresource::Scale
        )
}

/// Who words a 406 for this request (see [`negotiate::not_acceptable`]).
fn refuser(rtype: &registry::ResourceType, info: &RequestInfo) -> negotiate::Refuser {
    if !rtype.structured {
        negotiate::Refuser::CustomResource
    } else if info.name.is_empty() && info.subresource.is_none() {
        negotiate::Refuser::BuiltinCollection
    } else {
        negotiate::Refuser::BuiltinObject
    }
}

async fn serve_inner(
    api: &Api,
    served: Arc<Served>,
    req: crate::boxed::BoxedRequest,
    info: &RequestInfo,
    user: UserInfo,
    query: Query,
    protobuf_errors: &mut bool,
) -> Result<Response<Body>> {
    let (parts, body) = req.into_parts();
    let wanted = Wanted::of(&parts.headers);
    // (Custom resources' too: their Status has a protobuf form.)
    *protobuf_errors = matches!(
        negotiate::negotiate(wanted.accept, true, true),
        Ok(negotiate::Output::Protobuf)
    );
    check_scope(&served.rtype, info)?;
    // Proxied requests take any media type and query: they are the backend's.
    if proxy::handles(&served.rtype, info) {
        return proxy::serve(api, info, &user, Request::from_parts(parts, body)).await;
    }
    let output = negotiate::negotiate(
        wanted.accept,
        served.protobuf,
        converts_to_tables(&served.rtype, info),
    )
    .map_err(|refusal| negotiate::not_acceptable(refuser(&served.rtype, info), refusal))?;
    let field_manager = query
        .get("fieldManager")
        .map(String::from)
        .unwrap_or_else(|| default_manager(wanted.user_agent));
    // The user is the call's from here on: moved, not copied.
    let UserInfo {
        name,
        groups,
        uid,
        extra,
    } = user;
    let ctx = RequestContext {
        user: name,
        groups,
        uid,
        extra,
        namespace: if served.rtype.namespaced {
            info.namespace.to_string()
        } else {
            String::new()
        },
        dry_run: query.dry_run()?,
        field_manager,
        subresource: info.subresource.clone(),
        warnings: Default::default(),
        audit_annotations: parts
            .extensions
            .get::<registry::AuditAnnotations>()
            .cloned()
            .unwrap_or_default(),
    };
    let table = TableOptions {
        include_object: query.get("includeObject").unwrap_or("").to_string(),
        no_headers: false,
    };
    let content_type = wanted.content_type;
    if let Some(options_kind) = write_options_kind(info.verb) {
        let patch_type = (info.verb == Verb::Patch).then(|| content_type.unwrap_or(""));
        query.check_write_options(options_kind, patch_type)?;
    }
    let call = Call {
        api,
        served,
        info,
        query,
        output,
        table,
        ctx,
        accept_encoding: wanted.accept_encoding.map(String::from),
        audit_body: parts.extensions.get::<crate::audit::BodyCapture>().cloned(),
    };
    if info.subresource == Subresource::Token {
        let body = call.read_body(body).await?;
        return token::token_request(&call, content_type, &body).await;
    }
    if pods::handles_legacy_binding(&call) {
        let body = call.read_body(body).await?;
        return pods::legacy_binding(&call, content_type, body).await;
    }
    if pods::handles(&call) {
        let body = call.read_body(body).await?;
        return pods::serve(&call, content_type, body).await;
    }
    if info.subresource == Subresource::Scale {
        let body = call.read_body(body).await?;
        return scale::serve(&call, content_type, body).await;
    }
    if let Some(provider) = call.rtype().provider.clone() {
        return computed::serve(&call, provider.as_ref()).await;
    }
    if !call.rtype().is_stored() {
        return match info.verb {
            Verb::Create => {
                let obj = decode_object(&call, content_type, body).await?;
                let reviewed = reviews::review(api, &call.ctx, obj).await?;
                Ok(object_response(&call, 201, &Object::new(reviewed), &[]))
            }
            _ => Err(StatusError::method_not_allowed(
                "the server does not allow this method on the requested resource",
            )),
        };
    }
    // A write the resource does not serve has no route upstream (namespaces
    // have no collection deleter).
    if info.subresource.is_none()
        && matches!(
            info.verb,
            Verb::Create | Verb::Update | Verb::Patch | Verb::Delete | Verb::DeleteCollection
        )
        && !call.rtype().verbs.contains(&info.verb.as_str())
    {
        return Err(StatusError::no_route_for_method());
    }
    match info.verb {
        Verb::Get => read::get(&call).await,
        Verb::List => read::list(&call).await,
        Verb::Watch => watch::serve(&call).await,
        Verb::Create => write::create(&call, content_type, body).await,
        Verb::Update => write::update(&call, content_type, body).await,
        Verb::Patch => patch::patch(&call, content_type, call.read_body(body).await?).await,
        Verb::Delete => delete::delete(&call, content_type, body).await,
        Verb::DeleteCollection => delete::delete_collection(&call, content_type, body).await,
        _ => Err(StatusError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        )),
    }
}

/// The request headers serving reads, found in one pass over the headers
/// rather than one hashed lookup each: each name's first value, as
/// `HeaderMap::get` finds it, as text (`None` where that is not text).
#[derive(Debug, Default, PartialEq, Eq)]
struct Wanted<'a> {
    accept: Option<&'a str>,
    content_type: Option<&'a str>,
    user_agent: Option<&'a str>,
    accept_encoding: Option<&'a str>,
}

impl<'a> Wanted<'a> {
    fn of(headers: &'a http::HeaderMap) -> Wanted<'a> {
        let mut first: [Option<&'a http::HeaderValue>; 4] = [None; 4];
        for (name, value) in headers {
            let slot = if *name == header::ACCEPT {
                0
            } else if *name == header::CONTENT_TYPE {
                1
            } else if *name == header::USER_AGENT {
                2
            } else if *name == header::ACCEPT_ENCODING {
                3
            } else {
                continue;
            };
            first[slot].get_or_insert(value);
        }
        let text = |value: Option<&'a http::HeaderValue>| value.and_then(|v| v.to_str().ok());
        Wanted {
            accept: text(first[0]),
            content_type: text(first[1]),
            user_agent: text(first[2]),
            accept_encoding: text(first[3]),
        }
    }
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
/// At most 128 characters of it, cut once rather than collected a character
/// at a time (`/` is ASCII: cutting at its byte is cutting at a character).
fn default_manager(user_agent: Option<&str>) -> String {
    const MAX_CHARS: usize = 128;
    let ua = user_agent.unwrap_or("unknown");
    let first = &ua[..ua.bytes().position(|b| b == b'/').unwrap_or(ua.len())];
    // Fewer bytes than the limit are fewer characters too.
    let end = match first.len() <= MAX_CHARS {
        true => first.len(),
        false => first
            .char_indices()
            .nth(MAX_CHARS)
            .map_or(first.len(), |(i, _)| i),
    };
    first[..end].to_string()
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
        sub => match rtype
            .extra_subresources
            .iter()
            .find(|s| s.name == sub.as_str())
        {
            Some(s) if s.verbs.contains(&info.verb.as_str()) => Ok(()),
            // The path is served, not with this method (`GET namespaces/{name}/finalize`).
            Some(_) => Err(StatusError::no_route_for_method()),
            None => Err(StatusError::path_not_found()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::{HeaderMap, HeaderValue};

    #[test]
    fn default_managers_equal_the_collected_characters() {
        let plain = |user_agent: Option<&str>| -> String {
            let ua = user_agent.unwrap_or("unknown");
            ua.split('/')
                .next()
                .unwrap_or(ua)
                .chars()
                .take(128)
                .collect()
        };
        let long_ascii = "k".repeat(300);
        let long_wide = "é".repeat(200);
        let exactly = format!("{}/v1", "x".repeat(128));
        let wide_then_slash = format!("{}/v1", "ü".repeat(127));
        for ua in [
            None,
            Some(""),
            Some("/"),
            Some("kubectl/v1.37.0 (linux/amd64) kubernetes/abc"),
            Some("kube-bench"),
            Some("é/x"),
            Some(long_ascii.as_str()),
            Some(long_wide.as_str()),
            Some(exactly.as_str()),
            Some(wide_then_slash.as_str()),
        ] {
            assert_eq!(default_manager(ua), plain(ua), "{ua:?}");
        }
    }

    /// `Wanted::of` finds what a `HeaderMap::get` of each name finds.
    #[test]
    fn wanted_headers_equal_their_lookups() {
        let names = [
            header::ACCEPT,
            header::CONTENT_TYPE,
            header::USER_AGENT,
            header::ACCEPT_ENCODING,
        ];
        let text = |s: &str| HeaderValue::from_str(s).unwrap();
        let not_text = HeaderValue::from_bytes(b"caf\xc3\xa9").unwrap();
        let mut maps = vec![HeaderMap::new()];
        let mut all = HeaderMap::new();
        all.insert(header::HOST, text("localhost"));
        all.insert(header::ACCEPT, text("application/json"));
        all.insert(header::CONTENT_TYPE, text("application/yaml"));
        all.insert(header::USER_AGENT, text("kubectl/v1.37"));
        all.insert(header::ACCEPT_ENCODING, text("gzip"));
        all.insert(header::AUTHORIZATION, text("Bearer x"));
        maps.push(all.clone());
        let mut repeated = all.clone();
        repeated.append(header::ACCEPT, text("application/yaml"));
        repeated.append(header::USER_AGENT, not_text.clone());
        maps.push(repeated);
        let mut first_not_text = HeaderMap::new();
        first_not_text.append(header::ACCEPT, not_text.clone());
        first_not_text.append(header::ACCEPT, text("application/json"));
        first_not_text.insert(header::CONTENT_TYPE, text(""));
        maps.push(first_not_text);
        let mut custom = HeaderMap::new();
        custom.insert(
            http::HeaderName::from_static("x-accept"),
            text("application/json"),
        );
        custom.insert(header::ACCEPT_ENCODING, text("br"));
        maps.push(custom);
        for headers in &maps {
            let got = Wanted::of(headers);
            let plain: Vec<Option<&str>> = names
                .iter()
                .map(|n| headers.get(n).and_then(|v| v.to_str().ok()))
                .collect();
            assert_eq!(
                vec![
                    got.accept,
                    got.content_type,
                    got.user_agent,
                    got.accept_encoding
                ],
                plain,
                "{headers:?}"
            );
        }
    }
}
