//! Proxying a claimed group-version to its extension API server: the caller is
//! authenticated here and its identity travels as `X-Remote-*` headers next to the
//! aggregator's front-proxy client certificate; whatever identity headers the client
//! sent are dropped. Bodies stream both ways without buffering (watches included).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use http::{HeaderName, HeaderValue, Request, Response};
use http_body::Frame;
use http_body_util::{BodyExt, BodyStream, StreamBody};
use hyper::body::Incoming;
use parking_lot::RwLock;

use apimachinery::StatusError;

use super::transport::Backend;
use crate::authn::UserInfo;
use crate::config::FrontProxyConfig;
use crate::response::{self, Body};

/// Time to reach a backend; responses themselves are not bounded (watches).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Where a group-version claimed by a service-backed APIService goes, as the
/// availability controller last found it.
#[derive(Clone)]
pub enum Remote {
    Available(Backend),
    Unavailable,
}

/// Claimed group-versions, shared by the availability controller and the proxy.
#[derive(Clone, Default)]
pub struct Remotes(Arc<RwLock<HashMap<(String, String), Remote>>>);

impl Remotes {
    pub fn get(&self, group: &str, version: &str) -> Option<Remote> {
        self.0
            .read()
            .get(&(group.to_string(), version.to_string()))
            .cloned()
    }

    pub fn replace(&self, all: HashMap<(String, String), Remote>) {
        *self.0.write() = all;
    }
}

/// Forward `req` for `user` to `remote`.
pub async fn serve(
    remote: Remote,
    req: Request<Incoming>,
    user: &UserInfo,
    headers: &FrontProxyConfig,
) -> Response<Body> {
    let Remote::Available(backend) = remote else {
        return response::error(&StatusError::service_unavailable("service unavailable"));
    };
    let (mut parts, body) = req.into_parts();
    strip_identity(&mut parts.headers, headers);
    add_identity(&mut parts.headers, user, headers);
    if let Ok(host) = HeaderValue::from_str(&backend.address) {
        parts.headers.insert(http::header::HOST, host);
    }
    // The backend speaks HTTP/1.1: keep only the path and query of the URI.
    if let Some(pq) = parts.uri.path_and_query().cloned() {
        parts.uri = http::Uri::from(pq);
    }
    parts.version = http::Version::HTTP_11;
    match backend
        .send(Request::from_parts(parts, body), CONNECT_TIMEOUT)
        .await
    {
        Ok(resp) => {
            let (parts, body) = resp.into_parts();
            Response::from_parts(parts, streamed(body))
        }
        Err(e) => {
            tracing::warn!(backend = %backend.address, error = %e, "proxy error");
            response::error(&StatusError::service_unavailable(format!(
                "error trying to reach service: {e}"
            )))
        }
    }
}

/// The backend's body as ours, frame by frame; a broken backend ends the stream.
fn streamed(body: Incoming) -> Body {
    let frames = BodyStream::new(body)
        .take_while(|f| std::future::ready(f.is_ok()))
        .filter_map(|f| std::future::ready(f.ok()))
        .map(Ok::<Frame<bytes::Bytes>, std::convert::Infallible>);
    StreamBody::new(frames).boxed_unsync()
}

/// Drop credentials and any identity headers the client tried to set.
fn strip_identity(h: &mut http::HeaderMap, cfg: &FrontProxyConfig) {
    h.remove(http::header::AUTHORIZATION);
    let names: Vec<HeaderName> = h.keys().cloned().collect();
    for name in names {
        let n = name.as_str();
        let spoofed = cfg
            .username_headers
            .iter()
            .chain(&cfg.group_headers)
            .any(|x| n.eq_ignore_ascii_case(x))
            || cfg
                .extra_headers_prefix
                .iter()
                .any(|p| n.to_ascii_lowercase().starts_with(&p.to_ascii_lowercase()))
            || n.starts_with("impersonate-");
        if spoofed {
            h.remove(&name);
        }
    }
}

fn add_identity(h: &mut http::HeaderMap, user: &UserInfo, cfg: &FrontProxyConfig) {
    let header = |s: &str| HeaderName::from_bytes(s.as_bytes()).ok();
    if let (Some(name), Ok(value)) = (
        cfg.username_headers.first().and_then(|s| header(s)),
        HeaderValue::from_str(&user.name),
    ) {
        h.insert(name, value);
    }
    if let Some(name) = cfg.group_headers.first().and_then(|s| header(s)) {
        for group in &user.groups {
            if let Ok(value) = HeaderValue::from_str(group) {
                h.append(name.clone(), value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_identity_headers_are_replaced() {
        let cfg = FrontProxyConfig::default();
        let mut h = http::HeaderMap::new();
        h.insert("x-remote-user", HeaderValue::from_static("system:admin"));
        h.insert("X-Remote-Group", HeaderValue::from_static("system:masters"));
        h.insert("x-remote-extra-scopes", HeaderValue::from_static("all"));
        h.insert("impersonate-user", HeaderValue::from_static("root"));
        h.insert("authorization", HeaderValue::from_static("Bearer x"));
        h.insert("accept", HeaderValue::from_static("application/json"));
        strip_identity(&mut h, &cfg);
        let user = UserInfo {
            name: "alice".into(),
            uid: String::new(),
            groups: vec!["devs".into(), "system:authenticated".into()],
        };
        add_identity(&mut h, &user, &cfg);
        assert_eq!(h.get("x-remote-user").unwrap(), "alice");
        let groups: Vec<&str> = h
            .get_all("x-remote-group")
            .iter()
            .map(|v| v.to_str().unwrap())
            .collect();
        assert_eq!(groups, ["devs", "system:authenticated"]);
        assert!(h.get("x-remote-extra-scopes").is_none());
        assert!(h.get("impersonate-user").is_none());
        assert!(h.get("authorization").is_none());
        assert_eq!(h.get("accept").unwrap(), "application/json");
    }
}
