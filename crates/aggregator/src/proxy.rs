//! Proxying a claimed group-version to its extension API server: the caller is
//! authenticated here and its identity travels as `X-Remote-*` headers next to the
//! aggregator's front-proxy client certificate; whatever identity headers the client
//! sent are dropped. Bodies stream both ways without buffering (watches included).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use http::{HeaderName, HeaderValue, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use parking_lot::RwLock;

use apimachinery::StatusError;

use server::delegation::{Claim, Delegation};
use server::forward::{
    UID_HEADER, bridge, streamed, strip_hop_by_hop, strip_identity, wants_upgrade,
};
use server::front_proxy::FrontProxyConfig;
use server::response::{self, Body};
use server::user::UserInfo;
use webhook::Backend;
use webhook::client::BoxError;

/// Time for a backend to start its answer; the body is not bounded (watches stream
/// for as long as they last).
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(60);

/// Where a group-version claimed by a service-backed APIService goes, as the
/// availability controller last found it.
#[derive(Clone)]
pub enum Remote {
    Available(Box<Backend>),
    Unavailable,
}

/// Claimed group-versions, shared by the availability controller and the filter
/// chain (as its `Delegation`), and the identity headers sent to backends.
#[derive(Clone)]
pub struct Remotes {
    routes: Arc<RwLock<HashMap<(String, String), Remote>>>,
    headers: Arc<FrontProxyConfig>,
}

impl Remotes {
    pub fn new(headers: FrontProxyConfig) -> Self {
        Remotes {
            routes: Default::default(),
            headers: Arc::new(headers),
        }
    }

    pub fn get(&self, group: &str, version: &str) -> Option<Remote> {
        self.routes
            .read()
            .get(&(group.to_string(), version.to_string()))
            .cloned()
    }

    pub fn replace(&self, all: HashMap<(String, String), Remote>) {
        *self.routes.write() = all;
    }
}

#[async_trait::async_trait]
impl Delegation for Remotes {
    fn claim(&self, group: &str, version: &str) -> Option<Claim> {
        self.get(group, version).map(|remote| match remote {
            Remote::Available(_) => Claim::Available,
            Remote::Unavailable => Claim::Unavailable,
        })
    }

    async fn forward(
        &self,
        group: &str,
        version: &str,
        req: Request<Incoming>,
        user: &UserInfo,
    ) -> Response<Body> {
        let remote = self.get(group, version).unwrap_or(Remote::Unavailable);
        serve(remote, req, user, &self.headers).await
    }
}

/// Forward `req` for `user` to `remote`.
async fn serve(
    remote: Remote,
    mut req: Request<Incoming>,
    user: &UserInfo,
    headers: &FrontProxyConfig,
) -> Response<Body> {
    let Remote::Available(backend) = remote else {
        return response::error(&StatusError::service_unavailable("service unavailable"));
    };
    let client_upgrade = wants_upgrade(req.headers()).then(|| hyper::upgrade::on(&mut req));
    let (mut parts, body) = req.into_parts();
    strip_hop_by_hop(&mut parts.headers, client_upgrade.is_some());
    strip_identity(&mut parts.headers, headers);
    add_identity(&mut parts.headers, user, headers);
    parts.version = http::Version::HTTP_11;
    let body = body.map_err(BoxError::from).boxed();
    let sent = tokio::time::timeout(
        RESPONSE_TIMEOUT,
        backend.send(Request::from_parts(parts, body)),
    )
    .await;
    let mut resp = match sent {
        Ok(Ok(resp)) => resp,
        Ok(Err(e)) => {
            tracing::warn!(backend = %backend.address, error = %e, "proxy error");
            return response::error(&StatusError::service_unavailable(format!(
                "error trying to reach service: {e}"
            )));
        }
        Err(_) => {
            return response::error(&StatusError::timeout(format!(
                "Timeout: the extension server at {} did not answer within {}s",
                backend.address,
                RESPONSE_TIMEOUT.as_secs()
            )));
        }
    };
    let upgraded = resp.status() == StatusCode::SWITCHING_PROTOCOLS;
    match client_upgrade {
        Some(client) if upgraded => {
            tokio::spawn(bridge(client, hyper::upgrade::on(&mut resp)));
        }
        _ => strip_hop_by_hop(resp.headers_mut(), false),
    }
    let (parts, body) = resp.into_parts();
    Response::from_parts(parts, streamed(body))
}

/// The caller's identity as the front proxy's headers.
pub fn add_identity(h: &mut http::HeaderMap, user: &UserInfo, cfg: &FrontProxyConfig) {
    let header = |s: &str| HeaderName::from_bytes(s.as_bytes()).ok();
    if !user.uid.is_empty()
        && let (Some(name), Ok(value)) = (
            header(cfg.uid_headers.first().map_or(UID_HEADER, String::as_str)),
            HeaderValue::from_str(&user.uid),
        )
    {
        h.insert(name, value);
    }
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
    let Some(prefix) = cfg.extra_headers_prefix.first() else {
        return;
    };
    for (key, values) in &user.extra {
        let Some(name) = header(&format!("{prefix}{}", escape_extra_key(key))) else {
            continue;
        };
        for value in values {
            if let Ok(value) = HeaderValue::from_str(value) {
                h.append(name.clone(), value);
            }
        }
    }
}

/// An extra key made safe for a header name: unreserved characters stay, the rest
/// become `%XX` (the receiver percent-decodes).
fn escape_extra_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for b in key.to_ascii_lowercase().bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
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
            groups: vec!["devs".into(), "system:authenticated".into()],
            extra: [(
                "example.com/scopes".to_string(),
                vec!["a".into(), "b".into()],
            )]
            .into(),
            ..Default::default()
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
        let scopes: Vec<&str> = h
            .get_all("x-remote-extra-example.com%2Fscopes")
            .iter()
            .map(|v| v.to_str().unwrap())
            .collect();
        assert_eq!(scopes, ["a", "b"]);
        assert_eq!(
            server::authn::percent_decode("example.com%2Fscopes"),
            "example.com/scopes"
        );
        assert!(h.get("impersonate-user").is_none());
        assert!(h.get("authorization").is_none());
        assert_eq!(h.get("accept").unwrap(), "application/json");
        assert!(h.get("x-remote-uid").is_none(), "no UID, no header");
    }

    #[test]
    fn the_callers_uid_travels_and_spoofed_ones_do_not() {
        let cfg = FrontProxyConfig::default();
        let mut h = http::HeaderMap::new();
        h.insert("x-remote-uid", HeaderValue::from_static("spoofed"));
        strip_identity(&mut h, &cfg);
        assert!(h.get("x-remote-uid").is_none());
        let user = UserInfo {
            name: "system:serviceaccount:default:robot".into(),
            uid: "4b8a5a4e-0000-4000-8000-000000000001".into(),
            ..Default::default()
        };
        add_identity(&mut h, &user, &cfg);
        assert_eq!(
            h.get("x-remote-uid").unwrap(),
            "4b8a5a4e-0000-4000-8000-000000000001"
        );
    }
}
