//! Calling a webhook named by a `clientConfig` (admission webhooks, CRD
//! conversion webhooks): the target (`url`, or `service` resolved per call
//! through the Service's endpoints), a pooled TLS client per client
//! configuration and address, the caBundle, a bounded POST, and the failure
//! worded as Go's REST client words it (`Post "https://…": context deadline
//! exceeded`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use parking_lot::Mutex;
use serde_json::Value;

use crate::Backend;
use crate::client::{TlsSetupError, response_error};
use crate::service::{Unresolved, resolve};

/// Where Services and their endpoints are read from.
#[async_trait::async_trait]
pub trait Directory: Send + Sync + 'static {
    /// The Service `namespace/name` and its EndpointSlices (or its v1
    /// Endpoints as slices).
    async fn service_endpoints(&self, namespace: &str, name: &str) -> (Option<Value>, Vec<Value>);
}

/// Where a webhook is called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `clientConfig.url`: `host:port` to connect to, the host to verify, the path.
    Url {
        url: String,
        address: String,
        host: String,
        path: String,
    },
    /// `clientConfig.service`, resolved per call through its endpoints.
    Service {
        namespace: String,
        name: String,
        port: i64,
        path: String,
    },
}

/// Why a `clientConfig` names no target (upstream's words).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// A `url` that is not `https://…` (as written).
    #[error("Unparsable URL: {0}")]
    UnparsableUrl(String),
    #[error("webhook configuration must have either service or URL")]
    NoServiceOrUrl,
}

impl Target {
    /// The target of a `clientConfig`.
    pub fn of(config: &Value) -> Result<Target, TargetError> {
        if let Some(url) = config.get("url").and_then(Value::as_str) {
            let rest = url
                .strip_prefix("https://")
                .ok_or_else(|| TargetError::UnparsableUrl(url.to_string()))?;
            let (authority, path) = match rest.find('/') {
                Some(i) => (&rest[..i], &rest[i..]),
                None => (rest, ""),
            };
            let (host, port) = split_host_port(authority);
            let path = clean_path(path);
            return Ok(Target::Url {
                url: format!("https://{authority}{path}"),
                address: format!("{host}:{port}"),
                host: host.trim_matches(['[', ']']).to_string(),
                path,
            });
        }
        let Some(service) = config.get("service").filter(|s| s.is_object()) else {
            return Err(TargetError::NoServiceOrUrl);
        };
        let text = |f: &str| service.get(f).and_then(Value::as_str).unwrap_or("");
        Ok(Target::Service {
            namespace: text("namespace").to_string(),
            name: text("name").to_string(),
            port: service.get("port").and_then(Value::as_i64).unwrap_or(443),
            path: clean_path(text("path")),
        })
    }

    /// The URL upstream's errors quote (`https://<svc>.<ns>.svc:<port><path>`).
    pub fn url(&self) -> String {
        match self {
            Target::Url { url, .. } => url.clone(),
            Target::Service {
                namespace,
                name,
                port,
                path,
            } => format!("https://{name}.{namespace}.svc:{port}{path}"),
        }
    }

    /// The name the server's certificate must carry.
    pub fn server_name(&self) -> String {
        match self {
            Target::Url { host, .. } => host.clone(),
            Target::Service {
                namespace, name, ..
            } => format!("{name}.{namespace}.svc"),
        }
    }

    pub fn path(&self) -> &str {
        match self {
            Target::Url { path, .. } | Target::Service { path, .. } => path,
        }
    }
}

/// The request path as upstream's REST client builds it (`path.Join`, so Go's
/// `path.Clean`): repeated slashes collapsed, `.` and `..` resolved, no
/// trailing slash; empty stays empty. envtest writes `https://host:port//path`.
fn clean_path(path: &str) -> String {
    if path.is_empty() {
        return String::new();
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    format!("/{}", parts.join("/"))
}

/// `host:port` with 443 when no port is given; IPv6 hosts keep their brackets.
fn split_host_port(authority: &str) -> (&str, &str) {
    if let Some(end) = authority.find(']') {
        let host = &authority[..=end];
        return (
            host,
            authority[end + 1..].strip_prefix(':').unwrap_or("443"),
        );
    }
    match authority.rsplit_once(':') {
        Some((host, port)) => (host, port),
        None => (authority, "443"),
    }
}

/// The review versions (`admissionReviewVersions`, `conversionReviewVersions`)
/// kubext speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReviewVersion {
    V1,
    V1beta1,
}

impl ReviewVersion {
    /// The first of `versions` (a webhook's list) kubext speaks.
    pub fn first_known(versions: Option<&Value>) -> Option<ReviewVersion> {
        versions
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find_map(|v| match v.as_str() {
                Some("v1") => Some(ReviewVersion::V1),
                Some("v1beta1") => Some(ReviewVersion::V1beta1),
                _ => None,
            })
    }

    /// `group/<this version>`.
    pub fn api_version(self, group: &str) -> String {
        match self {
            ReviewVersion::V1 => format!("{group}/v1"),
            ReviewVersion::V1beta1 => format!("{group}/v1beta1"),
        }
    }
}

/// A webhook's `clientConfig`, ready to call.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub target: Result<Target, TargetError>,
    /// PEM (empty: the system's roots).
    pub ca_bundle: Vec<u8>,
    /// The configuration as written: the key of its connection pool.
    key: String,
}

impl ClientConfig {
    pub fn of(config: &Value) -> ClientConfig {
        let ca_bundle = config
            .get("caBundle")
            .and_then(Value::as_str)
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            .unwrap_or_default();
        ClientConfig {
            target: Target::of(config),
            ca_bundle,
            key: config.to_string(),
        }
    }
}

/// Why a call produced no answer.
#[derive(Debug)]
pub enum CallError {
    /// The configuration cannot be called (`webhook configuration must have
    /// either service or URL`, a bad caBundle).
    Client(ClientError),
    /// The request failed: `Post "<url>": <why>`, or what the server's
    /// non-2xx answer means.
    Request(String),
}

/// Why there is no client to call a configuration with.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error(transparent)]
    Tls(#[from] TlsSetupError),
    /// The caller is not attached yet (the server is still starting).
    #[error("not attached")]
    NotAttached,
}

/// Calls webhooks; clones share the connection pools.
#[derive(Clone)]
pub struct Caller {
    clients: Arc<Mutex<HashMap<String, Backend>>>,
    directory: Arc<dyn Directory>,
    /// What its users count about their calls (served in `/metrics`).
    pub metrics: Arc<crate::metrics::Metrics>,
}

impl Caller {
    pub fn new(directory: Arc<dyn Directory>) -> Caller {
        Caller {
            clients: Default::default(),
            directory,
            metrics: Default::default(),
        }
    }

    /// Forget every pool (configurations changed).
    pub fn clear(&self) {
        self.clients.lock().clear();
    }

    /// POST `body` (JSON) to the webhook, bounded by `timeout`; `query` is
    /// appended to the path (admission's `?timeout=10s`). The answer's body.
    pub async fn post(
        &self,
        config: &ClientConfig,
        query: &str,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<Bytes, CallError> {
        let target = config
            .target
            .as_ref()
            .map_err(|e| CallError::Client(e.clone().into()))?;
        let url = format!("{}{query}", target.url());
        let request_error =
            |e: &dyn std::fmt::Display| CallError::Request(format!("Post {url:?}: {e}"));
        let address = self.address(target).await.map_err(|e| request_error(&e))?;
        let client = self
            .client(config, target, &address)
            .map_err(|e| CallError::Client(e.into()))?;
        let path = match target.path() {
            "" => format!("/{query}"),
            p => format!("{p}{query}"),
        };
        let (code, body) = client
            .post_json(&path, body.into(), timeout)
            .await
            .map_err(|e| request_error(&e))?;
        if !(200..300).contains(&code) {
            return Err(CallError::Request(response_error(code, &body)));
        }
        Ok(body)
    }

    /// Where to connect: the URL's host, or a ready endpoint of the Service.
    async fn address(&self, target: &Target) -> Result<String, String> {
        let (namespace, name, port) = match target {
            Target::Url { address, .. } => return Ok(address.clone()),
            Target::Service {
                namespace,
                name,
                port,
                ..
            } => (namespace, name, *port),
        };
        let (service, slices) = self.directory.service_endpoints(namespace, name).await;
        resolve(service.as_ref(), port, &slices).map_err(|why| match why {
            Unresolved::ServiceNotFound => format!("service {name:?} not found"),
            Unresolved::NoPort { port } => {
                format!("no service port {port} found for service {name:?}")
            }
            Unresolved::NoEndpoints | Unresolved::NoReadyAddress { .. } => {
                format!("no endpoints available for service {name:?}")
            }
        })
    }

    /// The pooled client for `config` at `address`.
    fn client(
        &self,
        config: &ClientConfig,
        target: &Target,
        address: &str,
    ) -> Result<Backend, TlsSetupError> {
        let key = format!("{}|{address}", config.key);
        let mut clients = self.clients.lock();
        if let Some(client) = clients.get(&key) {
            return Ok(client.clone());
        }
        let client = Backend::new(
            address.to_string(),
            &target.server_name(),
            &config.ca_bundle,
            false,
            None,
        )?;
        clients.insert(key, client.clone());
        Ok(client)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn targets() {
        let url = Target::of(&json!({"url": "https://127.0.0.1:8443/validate"})).unwrap();
        assert_eq!(url.server_name(), "127.0.0.1");
        assert_eq!(url.path(), "/validate");
        assert!(matches!(&url, Target::Url { address, .. } if address == "127.0.0.1:8443"));
        let bare = Target::of(&json!({"url": "https://webhook.example.com"})).unwrap();
        assert!(
            matches!(&bare, Target::Url { address, .. } if address == "webhook.example.com:443")
        );
        let svc =
            Target::of(&json!({"service": {"name": "w", "namespace": "n", "path": "/p"}})).unwrap();
        assert_eq!(svc.url(), "https://w.n.svc:443/p");
        assert_eq!(svc.server_name(), "w.n.svc");
        // envtest's `https://%s/%s` of a kubebuilder path: cleaned as upstream's
        // REST client joins it.
        let envtest =
            Target::of(&json!({"url": "https://127.0.0.1:9443//mutate-v1-widget"})).unwrap();
        assert_eq!(envtest.path(), "/mutate-v1-widget");
        assert_eq!(envtest.url(), "https://127.0.0.1:9443/mutate-v1-widget");
    }
}
