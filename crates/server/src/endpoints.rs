//! The paths that are not resources: health, version, metrics, discovery and
//! OpenAPI, answered from prebuilt documents (the catalog snapshot) without IO.

use bytes::Bytes;
use http::{Method, Request, Response, header};
use hyper::body::Incoming;
use std::sync::atomic::Ordering;

use apimachinery::StatusError;

use crate::api::Api;
use crate::lifecycle::Phase;
use crate::negotiate::parse_accept;
use crate::openapi;
use crate::response::{self, Body};
use crate::serviceaccounts::discovery::{CONFIGURATION_PATH, IssuerDiscovery, KEYSET_PATH};

pub fn serve(api: &Api, req: &Request<Incoming>, path: &str) -> Response<Body> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return response::error(&StatusError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({} {path})",
            req.method()
        )));
    }
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let path = path.trim_end_matches('/');
    if let Some(check) = path.strip_prefix("/readyz/")
        && let Some(resp) = readyz_check(api, check)
    {
        return resp;
    }
    match path {
        "/healthz" | "/livez" | "/healthz/ping" | "/livez/ping" => response::text(200, "ok"),
        "/readyz" => readyz(api, req.uri().query()),
        "/version" => response::json(200, version_json()),
        "/metrics" => {
            let mut text = api.metrics.render(&api.storage);
            if let Some(audit) = &api.audit {
                audit.render_metrics(&mut text);
            }
            if let Some(admission) = &api.admission {
                admission.render_metrics(&mut text);
            }
            response::respond(200, "text/plain; version=0.0.4", text)
        }
        "/api" | "/apis" => discovery_root(api, path, accept),
        CONFIGURATION_PATH | KEYSET_PATH if let Some(documents) = &api.issuer_discovery => {
            issuer_discovery(documents, path)
        }
        p if p.starts_with("/openapi/") => openapi::serve(api, p, accept),
        p => discovery_group(api, p),
    }
}

/// The service-account issuer's discovery documents, as kube-apiserver
/// answers them: cacheable for an hour by anyone (relying parties outside the
/// cluster), the key set as `application/jwk-set+json` (RFC 7517).
fn issuer_discovery(documents: &IssuerDiscovery, path: &str) -> Response<Body> {
    let (content_type, document) = if path == KEYSET_PATH {
        ("application/jwk-set+json", &documents.keyset)
    } else {
        ("application/json", &documents.configuration)
    };
    let mut resp = response::respond(200, content_type, document.clone());
    resp.headers_mut().insert(
        header::CACHE_CONTROL,
        http::HeaderValue::from_static("public, max-age=3600"),
    );
    resp
}

/// `/readyz`'s checks, in upstream's order; each says why it fails, if it does.
fn readyz_checks(api: &Api) -> [(&'static str, Option<String>); 5] {
    let storage = api.storage.health_error().map(|e| e.to_string());
    let started = (!api.ready.load(Ordering::Acquire)).then(|| "not started yet".to_string());
    let shutdown = (api.lifecycle.phase() >= Phase::ShutdownInitiated)
        .then(|| "process is shutting down".to_string());
    [
        ("ping", None),
        ("log", None),
        ("etcd", storage),
        ("kubext-ready", started),
        ("shutdown", shutdown),
    ]
}

/// `/readyz` as upstream's health handler answers it: `ok`, or with `?verbose`
/// or on failure a `[+]`/`[-]` line per check (a failure's reason goes to the
/// log, not to the public answer); `?exclude=<check>` skips one. Storage is
/// not ready while the watch cache is not following it (its watch broke and is
/// being reconnected): reads would only wait and fail. The `shutdown` check
/// fails from the moment a termination signal arrives (see `lifecycle`).
fn readyz(api: &Api, query: Option<&str>) -> Response<Body> {
    let mut verbose = false;
    let mut excluded: Vec<String> = Vec::new();
    for (key, value) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        match &*key {
            "verbose" => verbose = true,
            "exclude" => excluded.push(value.into_owned()),
            _ => {}
        }
    }
    let mut out = String::new();
    let mut failed = Vec::new();
    for (name, failure) in readyz_checks(api) {
        if let Some(i) = excluded.iter().position(|e| e == name) {
            excluded.remove(i);
            out.push_str(&format!("[+]{name} excluded: ok\n"));
            continue;
        }
        match failure {
            Some(reason) => {
                tracing::debug!(check = name, %reason, "readyz check failed");
                out.push_str(&format!("[-]{name} failed: reason withheld\n"));
                failed.push(name);
            }
            None => out.push_str(&format!("[+]{name} ok\n")),
        }
    }
    if !excluded.is_empty() {
        let quoted: Vec<String> = excluded.iter().map(|e| format!("{e:?}")).collect();
        out.push_str(&format!(
            "warn: some health checks cannot be excluded: no matches for {}\n",
            quoted.join(",")
        ));
    }
    if !failed.is_empty() {
        return plain_text(500, format!("{out}readyz check failed\n"));
    }
    if !verbose {
        return plain_text(200, "ok".to_string());
    }
    plain_text(200, format!("{out}readyz check passed\n"))
}

/// `/readyz/<check>`: one check, `ok` or upstream's `internal server error: <why>`.
fn readyz_check(api: &Api, name: &str) -> Option<Response<Body>> {
    let (_, failure) = readyz_checks(api).into_iter().find(|(n, _)| *n == name)?;
    Some(match failure {
        Some(reason) => plain_text(500, format!("internal server error: {reason}\n")),
        None => plain_text(200, "ok".to_string()),
    })
}

/// A health answer: plain text, never sniffed.
fn plain_text(code: u16, body: String) -> Response<Body> {
    let mut resp = response::respond(code, "text/plain; charset=utf-8", body);
    resp.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        http::HeaderValue::from_static("nosniff"),
    );
    resp
}

fn discovery_root(api: &Api, path: &str, accept: &str) -> Response<Body> {
    let catalog = api.catalog();
    let d = &catalog.discovery;
    if wants_aggregated(accept) {
        let body = if path == "/api" {
            &d.aggregated_api
        } else {
            &d.aggregated_apis
        };
        let mut resp = response::respond(200, AGGREGATED_V2, body.clone());
        resp.headers_mut()
            .insert(header::VARY, http::HeaderValue::from_static("Accept"));
        return resp;
    }
    response::json(
        200,
        if path == "/api" {
            d.api.clone()
        } else {
            d.apis.clone()
        },
    )
}

fn discovery_group(api: &Api, path: &str) -> Response<Body> {
    let catalog = api.catalog();
    let d = &catalog.discovery;
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let found: Option<Bytes> = match parts.as_slice() {
        ["api", "v1"] => Some(d.core_v1.clone()),
        ["apis", group] => catalog.group_discovery(group),
        ["apis", group, version] => catalog.group_version_discovery(group, version),
        _ => None,
    };
    match found {
        Some(body) => response::json(200, body),
        None => response::error(&StatusError::path_not_found()),
    }
}

const AGGREGATED_V2: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Whether the client asked for aggregated discovery v2 before any legacy type.
fn wants_aggregated(accept: &str) -> bool {
    for m in parse_accept(accept) {
        match (m.param("as"), m.param("g"), m.param("v")) {
            (Some("APIGroupDiscoveryList"), Some("apidiscovery.k8s.io"), Some("v2")) => {
                return true;
            }
            (Some(_), _, _) => continue,
            _ => return false,
        }
    }
    false
}

fn version_json() -> &'static str {
    concat!(
        "{\"major\":\"1\",\"minor\":\"37\",\"emulationMajor\":\"1\",\"emulationMinor\":\"37\",",
        "\"minCompatibilityMajor\":\"1\",\"minCompatibilityMinor\":\"36\",\"gitVersion\":\"v1.37.2-kubext.",
        env!("CARGO_PKG_VERSION"),
        "\",\"gitCommit\":\"\",\"gitTreeState\":\"clean\",\"buildDate\":\"1970-01-01T00:00:00Z\",",
        "\"goVersion\":\"rust\",\"compiler\":\"rustc\",\"platform\":\"linux/amd64\"}"
    )
}
