//! The paths that are not resources: health, version, metrics, discovery and
//! OpenAPI, answered from prebuilt documents (the catalog snapshot) without IO.

use bytes::Bytes;
use http::{Method, Request, Response, header};
use hyper::body::Incoming;
use std::sync::atomic::Ordering;

use apimachinery::StatusError;

use crate::api::Api;
use crate::negotiate::parse_accept;
use crate::openapi;
use crate::response::{self, Body};

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
    match path {
        "/healthz" | "/livez" | "/healthz/ping" | "/livez/ping" => response::text(200, "ok"),
        "/readyz" | "/readyz/ping" => readyz(api),
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
        p if p.starts_with("/openapi/") => openapi::serve(api, p, accept),
        p => discovery_group(api, p),
    }
}

/// `/readyz` in upstream's format: a `[-]<check> failed` line per failing check.
/// Storage is not ready while the watch cache is not following it (its watch
/// broke and is being reconnected): reads would only wait and fail.
fn readyz(api: &Api) -> Response<Body> {
    let mut failed = Vec::new();
    if let Some(error) = api.storage.health_error() {
        tracing::debug!(%error, "readyz: etcd check failed");
        failed.push("[-]etcd failed: reason withheld");
    }
    if !api.ready.load(Ordering::Acquire) || *api.shutdown.borrow() {
        failed.push("[-]kubext-ready failed: not ready");
    }
    if failed.is_empty() {
        return response::text(200, "ok");
    }
    let body = format!("{}\nreadyz check failed", failed.join("\n"));
    response::respond(500, "text/plain; charset=utf-8", body)
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
