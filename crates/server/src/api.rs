//! The request pipeline, top to bottom in one place: authentication, routing
//! (non-resource paths, discovery, resources), and every error as a Status.

use bytes::Bytes;
use http::{Method, Request, Response, header};
use hyper::body::Incoming;
use parking_lot::RwLock;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::watch;

use apimachinery::{StatusError, Verb};
use registry::{ResourceType, Storage};

use crate::aggregator::discovery::RemoteGroupVersion;
use crate::aggregator::proxy::Remote;
use crate::authn::{Authenticator, PeerIdentity, UserInfo};
use crate::authz::{self, Attributes, Authorizer, Decision};
use crate::catalog::{Catalog, Served};
use crate::metrics::Metrics;
use crate::negotiate::parse_accept;
use crate::request_info::{self, RequestInfo};
use crate::response::{self, Body};
use crate::{openapi, resources};

/// Shared state of a running server.
pub struct Api {
    catalog: RwLock<Arc<Catalog>>,
    pub storage: Arc<Storage>,
    pub authn: Authenticator,
    pub ready: AtomicBool,
    /// Flips to true when the server is shutting down (watches end).
    pub shutdown: watch::Receiver<bool>,
    pub metrics: Metrics,
    /// Built-in resources; custom resources are added to these on every CRD change.
    builtins: Vec<Arc<Served>>,
    storage_prefix: String,
    /// Bumped on every catalog change (controllers that follow the served set).
    catalog_changes: watch::Sender<u64>,
    pub authorizer: Arc<dyn Authorizer>,
    /// What discovery shows of extension servers; also serializes catalog builds.
    remote_discovery: parking_lot::Mutex<Vec<RemoteGroupVersion>>,
    /// Group-versions claimed by extension API servers (the aggregator's routes).
    pub remotes: crate::aggregator::proxy::Remotes,
    /// Identity header names sent to extension servers.
    pub front_proxy_headers: crate::config::FrontProxyConfig,
    /// Bound on requests that are not long-running (`--request-timeout`).
    pub request_timeout: std::time::Duration,
}

/// Watches and connection upgrades may outlive `--request-timeout` (upstream's
/// long-running check: watch and the connect verbs).
fn is_long_running(info: &RequestInfo, req: &Request<Incoming>) -> bool {
    info.verb == Verb::Watch
        || matches!(
            info.subresource.as_str(),
            "exec" | "attach" | "portforward" | "proxy" | "log"
        )
        || req.headers().contains_key(header::UPGRADE)
}

/// What upstream's timeout filter writes when a request outlives
/// `--request-timeout` (a Status without `kind`, as it builds it by hand).
fn request_timed_out() -> Response<Body> {
    response::json(
        504,
        Bytes::from_static(
            b"{\"metadata\":{},\"status\":\"Failure\",\"message\":\"Timeout: request did not complete within the allotted timeout\",\"reason\":\"Timeout\",\"details\":{},\"code\":504}\n",
        ),
    )
}

/// Paths anyone may read (upstream's system:public-info-viewer).
const PUBLIC_PATHS: &[&str] = &["/healthz", "/livez", "/readyz", "/version"];

impl Api {
    pub fn new(
        storage: Arc<Storage>,
        storage_prefix: &str,
        authn: Authenticator,
        shutdown: watch::Receiver<bool>,
        front_proxy_headers: crate::config::FrontProxyConfig,
        types: Vec<Arc<ResourceType>>,
        authorizer: Arc<dyn Authorizer>,
    ) -> Self {
        let builtins: Vec<Arc<Served>> = types
            .into_iter()
            .map(|t| served(t, &storage, storage_prefix))
            .collect();
        Api {
            catalog: RwLock::new(Arc::new(Catalog::build(
                &Catalog::default(),
                builtins.clone(),
                &[],
            ))),
            storage,
            authn,
            ready: AtomicBool::new(false),
            shutdown,
            metrics: Metrics::default(),
            builtins,
            storage_prefix: storage_prefix.to_string(),
            catalog_changes: watch::Sender::new(0),
            remotes: Default::default(),
            remote_discovery: Default::default(),
            front_proxy_headers,
            authorizer,
            request_timeout: std::time::Duration::from_secs(60),
        }
    }

    /// Bound non-long-running requests by `timeout` instead of the default 60 s.
    pub fn with_request_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// kubext's own types: the built-ins and CustomResourceDefinitions.
    pub fn kubext_types(
        service_ranges: registry::builtin::ServiceRanges,
    ) -> Vec<Arc<ResourceType>> {
        registry::builtin::resource_types_with(service_ranges)
            .into_iter()
            .chain(std::iter::once(
                Arc::new(apiextensions::crd_resource_type()),
            ))
            .collect()
    }

    /// Fires after every catalog change.
    pub fn catalog_changes(&self) -> watch::Receiver<u64> {
        self.catalog_changes.subscribe()
    }

    /// Every group-version served here, and whether it is built in.
    pub fn local_group_versions(&self) -> Vec<controllers::apiservices::LocalGroupVersion> {
        let builtin: std::collections::HashSet<(&str, &str)> = self
            .builtins
            .iter()
            .map(|s| (s.rtype.group.as_str(), s.rtype.version.as_str()))
            .collect();
        let catalog = self.catalog();
        catalog
            .groups
            .iter()
            .flat_map(|(group, versions)| versions.iter().map(move |v| (group.clone(), v.clone())))
            .map(
                |(group, version)| controllers::apiservices::LocalGroupVersion {
                    builtin: builtin.contains(&(group.as_str(), version.as_str())),
                    group,
                    version,
                },
            )
            .collect()
    }

    /// Serve these custom resource types (replacing the previous set) next to the built-ins.
    pub fn publish_custom(&self, types: Vec<Arc<ResourceType>>) {
        // Held while building: the catalog has two writers (this and
        // `publish_remote`), each building on the catalog it read.
        let remotes = self.remote_discovery.lock();
        // Types that did not change keep their bound store (compiled once per CRD change).
        let previous = self.catalog();
        let custom = types.into_iter().map(|t| {
            previous
                .lookup(&t.group, &t.version, &t.plural)
                .filter(|s| Arc::ptr_eq(&s.rtype, &t))
                .cloned()
                .unwrap_or_else(|| served(t, &self.storage, &self.storage_prefix))
        });
        let all: Vec<Arc<Served>> = self.builtins.iter().cloned().chain(custom).collect();
        let kept: std::collections::HashSet<*const Served> = all.iter().map(Arc::as_ptr).collect();
        self.set_catalog(Catalog::build(&previous, all, &remotes));
        for gone in previous
            .served()
            .filter(|s| !kept.contains(&Arc::as_ptr(s)))
        {
            gone.retired.send_replace(true);
        }
    }

    /// Serve these extension servers' group-versions in discovery (unless nothing
    /// changed).
    pub fn publish_remote(&self, remotes: Vec<RemoteGroupVersion>) {
        let mut current = self.remote_discovery.lock();
        if *current == remotes {
            return;
        }
        let previous = self.catalog();
        let served = previous.served().cloned().collect();
        self.set_catalog(Catalog::build(&previous, served, &remotes));
        *current = remotes;
    }

    /// The extension servers' group-versions discovery shows.
    pub fn remote_group_versions(&self) -> Vec<RemoteGroupVersion> {
        self.remote_discovery.lock().clone()
    }

    pub fn catalog(&self) -> Arc<Catalog> {
        self.catalog.read().clone()
    }

    pub fn set_catalog(&self, catalog: Catalog) {
        *self.catalog.write() = Arc::new(catalog);
        self.catalog_changes.send_modify(|n| *n += 1);
    }

    pub async fn handle(
        self: Arc<Self>,
        req: Request<Incoming>,
        peer: &PeerIdentity,
    ) -> Response<Body> {
        let started = std::time::Instant::now();
        let method = req.method().clone();
        let path = req.uri().path().to_string();
        let user = self.authn.authenticate(peer, req.headers());
        // Only kept for the debug log line.
        let user_name = tracing::enabled!(tracing::Level::DEBUG).then(|| {
            user.as_ref()
                .map_or_else(|| "system:anonymous".into(), |u| u.name.clone())
        });
        let query = crate::query::Query::parse(req.uri().query());
        let info = request_info::parse(method.as_str(), &path, query.flag("watch"));
        let mut resp = match user {
            None if !is_public(&path) => {
                response::error(&StatusError::unauthorized("Unauthorized"))
            }
            user => {
                let user = user.unwrap_or_else(UserInfo::anonymous);
                if is_long_running(&info, &req) {
                    self.route(req, &info, &path, user, query).await
                } else {
                    let timeout = self.request_timeout;
                    match tokio::time::timeout(timeout, self.route(req, &info, &path, user, query))
                        .await
                    {
                        Ok(resp) => resp,
                        Err(_) => request_timed_out(),
                    }
                }
            }
        };
        response::add_standard_headers(&mut resp);
        self.metrics
            .observe(&info, resp.status().as_u16(), started.elapsed());
        if !matches!(info.verb, Verb::None | Verb::Watch) {
            tracing::debug!(verb = %info.verb, %path, code = resp.status().as_u16(), user = %user_name.as_deref().unwrap_or_default(), "request");
        }
        resp
    }

    async fn route(
        &self,
        req: Request<Incoming>,
        info: &RequestInfo,
        path: &str,
        user: UserInfo,
        query: crate::query::Query,
    ) -> Response<Body> {
        let remote = self.claimed(info, path);
        if remote.is_some() || info.is_resource {
            let attributes = Attributes::of(info, path, &user);
            if let Decision::Deny(reason) = self.authorizer.authorize(&attributes).await {
                return response::error(&authz::forbidden(&attributes, &reason));
            }
        }
        if let Some(remote) = remote {
            return crate::aggregator::proxy::serve(remote, req, &user, &self.front_proxy_headers)
                .await;
        }
        if info.is_resource {
            return resources::serve(self, req, info, user, query).await;
        }
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
            "/readyz" | "/readyz/ping" => self.readyz(),
            "/version" => response::json(200, version_json()),
            "/metrics" => response::respond(
                200,
                "text/plain; version=0.0.4",
                self.metrics.render(&self.storage),
            ),
            "/api" | "/apis" => self.discovery_root(path, accept),
            p if p.starts_with("/openapi/") => openapi::serve(self, p, accept),
            p => self.discovery_group(p),
        }
    }

    /// `/readyz` in upstream's format: a `[-]<check> failed` line per failing check.
    /// Storage is not ready while the watch cache is not following it (its watch
    /// broke and is being reconnected): reads would only wait and fail.
    fn readyz(&self) -> Response<Body> {
        let mut failed = Vec::new();
        if let Some(error) = self.storage.health_error() {
            tracing::debug!(%error, "readyz: etcd check failed");
            failed.push("[-]etcd failed: reason withheld");
        }
        if !self.ready.load(Ordering::Acquire) || *self.shutdown.borrow() {
            failed.push("[-]kubext-ready failed: not ready");
        }
        if failed.is_empty() {
            return response::text(200, "ok");
        }
        let body = format!("{}\nreadyz check failed", failed.join("\n"));
        response::respond(500, "text/plain; charset=utf-8", body)
    }

    fn discovery_root(&self, path: &str, accept: &str) -> Response<Body> {
        let catalog = self.catalog();
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

    /// The extension server a request goes to: resources of a claimed group-version
    /// and its discovery document.
    fn claimed(&self, info: &RequestInfo, path: &str) -> Option<Remote> {
        if info.is_resource {
            return (!info.group.is_empty())
                .then(|| self.remotes.get(&info.group, &info.version))
                .flatten();
        }
        match path.trim_matches('/').split('/').collect::<Vec<_>>()[..] {
            // A backend that is down still has its last discovery document served.
            ["apis", group, version] => self.remotes.get(group, version).filter(|r| {
                matches!(r, Remote::Available(_))
                    || self
                        .catalog()
                        .group_version_discovery(group, version)
                        .is_none()
            }),
            _ => None,
        }
    }

    fn discovery_group(&self, path: &str) -> Response<Body> {
        let catalog = self.catalog();
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

/// A resource type bound to storage.
fn served(rtype: Arc<ResourceType>, storage: &Arc<Storage>, prefix: &str) -> Arc<Served> {
    let store = registry::GenericStore::new(rtype.clone(), storage.clone(), prefix);
    Arc::new(Served::new(rtype, store))
}

fn is_public(path: &str) -> bool {
    let p = path.trim_end_matches('/');
    PUBLIC_PATHS
        .iter()
        .any(|pp| p == *pp || p.starts_with(&format!("{pp}/")))
}

fn version_json() -> &'static str {
    concat!(
        "{\"major\":\"1\",\"minor\":\"32\",\"gitVersion\":\"v1.32.0-kubext.",
        env!("CARGO_PKG_VERSION"),
        "\",\"gitCommit\":\"\",\"gitTreeState\":\"clean\",\"buildDate\":\"1970-01-01T00:00:00Z\",",
        "\"goVersion\":\"rust\",\"compiler\":\"rustc\",\"platform\":\"linux/amd64\"}"
    )
}
