//! The availability controller: for every APIService backed by a service, resolve a
//! ready endpoint (as kube-apiserver does with `--enable-aggregator-routing`), check
//! the backend's discovery document over TLS, and record the `Available` condition
//! with kube-aggregator's reasons and messages. Checks run concurrently and are
//! bounded by a timeout, so one slow backend never delays the others.

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use bytes::Bytes;
use serde_json::{Value, json};

use apimachinery::meta;
use registry::{GenericStore, Object};
use runtime::{self, Event, Reconciler, WorkQueue};

use crate::proxy::{Remote, Remotes};
use server::front_proxy::FrontProxyConfig;
use server::pki::CertPair;
use server::remote_discovery::RemoteGroupVersion;
use server::user::UserInfo;
use webhook::Backend;
use webhook::service::{Unresolved, slices_of_endpoints};

const MANAGER: &str = "kubext-apiservice-availability";
/// Between rounds of checks when nothing changes.
const INTERVAL: Duration = Duration::from_secs(2);
/// Upper bound of one discovery check.
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// Why an APIService is not available: (reason, message), upstream's texts.
pub type Unavailable = (&'static str, String);

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// Whether `slice` belongs to Service `name` (its `kubernetes.io/service-name`).
fn slice_of(slice: &Value, name: &str) -> bool {
    meta::labels(slice)
        .and_then(|l| l.get("kubernetes.io/service-name"))
        .and_then(Value::as_str)
        == Some(name)
}

/// A ready `ip:port` of the APIService's service, from the Service and its
/// EndpointSlices; why not in kube-aggregator's words otherwise.
pub fn resolve(
    apiservice: &Value,
    service: Option<&Value>,
    slices: &[Value],
) -> Result<String, Unavailable> {
    let (ns, name) = (
        str_at(apiservice, "/spec/service/namespace"),
        str_at(apiservice, "/spec/service/name"),
    );
    let port = apiservice
        .pointer("/spec/service/port")
        .and_then(Value::as_i64)
        .unwrap_or(443);
    webhook::service::resolve(service, port, slices).map_err(|why| match why {
        Unresolved::ServiceNotFound => (
            "ServiceNotFound",
            format!("service/{name} in {ns:?} is not present"),
        ),
        Unresolved::NoPort { port } => (
            "ServicePortError",
            format!("service/{name} in {ns:?} is not listening on port {port}"),
        ),
        Unresolved::NoEndpoints => (
            "EndpointsNotFound",
            format!("cannot find endpoints for service/{name} in {ns:?}"),
        ),
        Unresolved::NoReadyAddress { port_name } => (
            "MissingEndpoints",
            format!(
                "endpoints for service/{name} in {ns:?} have no addresses with port name {port_name:?}"
            ),
        ),
    })
}

/// The backend of an APIService: its TLS client, rebuilt only when the APIService
/// (resourceVersion) or the resolved address changes.
#[derive(Default)]
struct Backends(HashMap<String, (String, Backend)>);

impl Backends {
    /// Keep only the clients of these APIServices.
    fn retain(&mut self, apiservices: &[Value]) {
        let names: HashSet<&str> = apiservices.iter().map(meta::name).collect();
        self.0.retain(|name, _| names.contains(name.as_str()));
    }

    fn get(
        &mut self,
        apiservice: &Value,
        address: &str,
        client: &CertPair,
    ) -> Result<Backend, String> {
        let name = meta::name(apiservice).to_string();
        let key = format!("{}|{address}", meta::resource_version(apiservice));
        if let Some((k, b)) = self.0.get(&name)
            && *k == key
        {
            return Ok(b.clone());
        }
        let ca = str_at(apiservice, "/spec/caBundle");
        let ca = base64::engine::general_purpose::STANDARD
            .decode(ca)
            .map_err(|e| format!("caBundle: {e}"))?;
        let insecure =
            apiservice.pointer("/spec/insecureSkipTLSVerify") == Some(&Value::Bool(true));
        let server_name = format!(
            "{}.{}.svc",
            str_at(apiservice, "/spec/service/name"),
            str_at(apiservice, "/spec/service/namespace")
        );
        let backend = Backend::new(
            address.to_string(),
            &server_name,
            &ca,
            insecure,
            Some((&client.cert_pem, &client.key_pem)),
        )
        .map_err(|e| e.to_string())?;
        self.0.insert(name, (key, backend.clone()));
        Ok(backend)
    }
}

/// The stores the controller reads and writes.
pub struct Stores {
    pub apiservices: Arc<GenericStore>,
    pub services: Arc<GenericStore>,
    pub endpointslices: Arc<GenericStore>,
    pub endpoints: Arc<GenericStore>,
}

/// The objects of `store` that `keep` wants (only those are decoded).
async fn list(store: &GenericStore, keep: impl Fn(&Object) -> bool) -> Vec<Value> {
    let ctx = runtime::system_context("", MANAGER);
    store
        .list(&ctx, registry::ListOptions::default())
        .await
        .map(|l| {
            l.items
                .iter()
                .filter(|o| keep(o))
                .map(|o| o.to_value())
                .collect()
        })
        .unwrap_or_default()
}

/// APIServices served by a Service (local ones, one per built-in and CRD
/// group-version, are not checked), told without decoding the object.
fn service_backed(apiservice: &Object) -> bool {
    #[derive(serde::Deserialize)]
    struct ApiService {
        spec: Option<Spec>,
    }
    #[derive(serde::Deserialize)]
    struct Spec {
        service: Option<serde_json::Map<String, Value>>,
    }
    // Most have none: no `service` member when no `"service"` string is there
    // (within another string, its quotes would be escaped).
    memchr::memmem::find(apiservice.json(), br#""service""#).is_some()
        && apiservice
            .read::<ApiService>()
            .is_ok_and(|a| a.spec.and_then(|s| s.service).is_some())
}

fn any(_: &Object) -> bool {
    true
}

/// Check every service-backed APIService, forever — again when an APIService,
/// Service or endpoint changes, else every 2 s (backends come and go without
/// telling) — and tell the proxy where each claimed group-version goes.
pub async fn run(
    stores: Stores,
    client: CertPair,
    headers: FrontProxyConfig,
    remotes: Remotes,
    publish: impl Fn(Vec<RemoteGroupVersion>) + Send + Sync + 'static,
    leadership: runtime::leader::Leadership,
) {
    // Checks ask as upstream's aggregator does: a system:masters identity, so the
    // answer does not depend on the backend's authorization.
    let mut identity = http::HeaderMap::new();
    let checker = UserInfo {
        name: "system:kube-aggregator".into(),
        groups: vec!["system:masters".into()],
        ..Default::default()
    };
    crate::proxy::add_identity(&mut identity, &checker, &headers);
    let queue = WorkQueue::new(INTERVAL, INTERVAL);
    // Local APIServices (one per CRD group-version) come and go with CRDs; only
    // service-backed ones matter here.
    let follow = |store: &Arc<GenericStore>, matters: fn(&Object) -> bool| {
        let reflector = runtime::Reflector::new(store.clone(), MANAGER);
        runtime::follow(reflector, queue.clone(), move |e| round_if(e, matters))
    };
    let (apiservices, services, slices, endpoints, ticks) = (
        follow(&stores.apiservices, service_backed),
        follow(&stores.services, any),
        follow(&stores.endpointslices, any),
        follow(&stores.endpoints, any),
        runtime::every(INTERVAL, queue.clone(), ()),
    );
    let feed = async move {
        tokio::join!(apiservices, services, slices, endpoints, ticks);
    };
    let availability = Availability {
        stores,
        client,
        identity,
        remotes,
        publish,
        leadership,
        round: Default::default(),
    };
    runtime::run(Arc::new(availability), queue, 1, feed).await;
}

/// A round of checks is the one key: it looks at every APIService.
fn round_if(event: &Event, matters: fn(&Object) -> bool) -> Vec<()> {
    let relevant = match event {
        Event::Restarted(all) => all.iter().any(|o| matters(o)),
        Event::Applied(o) | Event::Deleted(o) => matters(o),
    };
    if relevant { vec![()] } else { Vec::new() }
}

struct Availability<P> {
    stores: Stores,
    client: CertPair,
    identity: http::HeaderMap,
    remotes: Remotes,
    publish: P,
    leadership: runtime::leader::Leadership,
    /// What rounds keep: backends' clients and last documents (one worker: never
    /// contended).
    round: tokio::sync::Mutex<Round>,
}

#[derive(Default)]
struct Round {
    backends: Backends,
    documents: HashMap<(String, String), Documents>,
}

#[async_trait::async_trait]
impl<P: Fn(Vec<RemoteGroupVersion>) + Send + Sync + 'static> Reconciler for Availability<P> {
    type Key = ();
    type Error = Infallible;

    fn name(&self) -> &'static str {
        "apiservice-availability"
    }

    /// A round never fails: what cannot be reached is reported as unavailable.
    async fn reconcile(&self, _: &()) -> Result<(), Infallible> {
        let mut round = self.round.lock().await;
        let round = &mut *round;
        let apiservices = list(&self.stores.apiservices, service_backed).await;
        // Only the namespaces of those services are decoded (a round runs every
        // 2 s; most clusters have no service-backed APIService at all).
        let namespaces: HashSet<&str> = apiservices
            .iter()
            .map(|a| str_at(a, "/spec/service/namespace"))
            .collect();
        let in_namespaces = |o: &Object| {
            !namespaces.is_empty() && namespaces.contains(&*o.head().metadata.namespace)
        };
        let services = list(&self.stores.services, in_namespaces).await;
        let slices = list(&self.stores.endpointslices, in_namespaces).await;
        let endpoints = list(&self.stores.endpoints, in_namespaces).await;
        let mut checks = Vec::new();
        for a in &apiservices {
            let (ns, name) = (
                str_at(a, "/spec/service/namespace"),
                str_at(a, "/spec/service/name"),
            );
            let service = services
                .iter()
                .find(|s| meta::namespace(s) == ns && meta::name(s) == name);
            let own: Vec<Value> = slices
                .iter()
                .filter(|s| meta::namespace(s) == ns && slice_of(s, name))
                .cloned()
                .collect();
            // Without EndpointSlices, a v1 Endpoints object of the same name will do.
            let own = if own.is_empty() {
                endpoints
                    .iter()
                    .find(|e| meta::namespace(e) == ns && meta::name(e) == name)
                    .map(slices_of_endpoints)
                    .unwrap_or_default()
            } else {
                own
            };
            let target = resolve(a, service, &own).and_then(|addr| {
                round
                    .backends
                    .get(a, &addr, &self.client)
                    .map_err(|e| ("FailedDiscoveryCheck", e))
            });
            checks.push(check(a.clone(), target, &self.identity));
        }
        let checked = futures::future::join_all(checks).await;
        refresh_documents(&checked, &mut round.documents, &self.identity).await;
        let mut claimed = HashMap::new();
        let mut discovered = Vec::new();
        let mut results = Vec::new();
        for c in checked {
            let a = &c.apiservice;
            let gv = (
                str_at(a, "/spec/group").to_string(),
                str_at(a, "/spec/version").to_string(),
            );
            let known = round.documents.get(&gv);
            discovered.push(RemoteGroupVersion {
                group: gv.0.clone(),
                version: gv.1.clone(),
                group_priority: int_at(a, "/spec/groupPriorityMinimum"),
                version_priority: int_at(a, "/spec/versionPriority"),
                resources: known.map(|k| k.discovery.clone()),
                fresh: c.discovery.is_some(),
                openapi_v3: known.and_then(|k| k.openapi_v3.clone()),
                openapi_v2: known.and_then(|k| k.openapi_v2.clone()),
            });
            let remote = match c.backend {
                Some(b) if c.condition["status"] == "True" => Remote::Available(Box::new(b)),
                _ => Remote::Unavailable,
            };
            claimed.insert(gv, remote);
            results.push((c.apiservice, c.condition));
        }
        // Documents and clients of APIServices that went away are forgotten.
        round.documents.retain(|gv, _| claimed.contains_key(gv));
        round.backends.retain(&apiservices);
        // Routes and discovery first: a client that sees Available=True can use the
        // group-version.
        self.remotes.replace(claimed);
        (self.publish)(discovered);
        // Every replica routes; only the leader records what it found.
        if *self.leadership.borrow() {
            for (apiservice, condition) in results {
                write_condition(&self.stores.apiservices, &apiservice, condition).await;
            }
        }
        Ok(())
    }
}

/// What a backend last said about its group-version.
struct Documents {
    discovery: Bytes,
    openapi_v3: Option<Bytes>,
    openapi_v2: Option<Bytes>,
    openapi_fetched: Instant,
}

/// OpenAPI documents are fetched again this often, or when discovery changes.
const OPENAPI_REFRESH: Duration = Duration::from_secs(60);

/// Record fresh discovery documents, and fetch the OpenAPI documents of the
/// group-versions whose discovery changed or whose OpenAPI is due.
async fn refresh_documents(
    checked: &[Checked],
    documents: &mut HashMap<(String, String), Documents>,
    identity: &http::HeaderMap,
) {
    let mut due = Vec::new();
    for c in checked {
        let (Some(discovery), Some(backend)) = (&c.discovery, &c.backend) else {
            continue;
        };
        let group = str_at(&c.apiservice, "/spec/group");
        let version = str_at(&c.apiservice, "/spec/version");
        let stale = documents
            .get(&(group.to_string(), version.to_string()))
            .is_none_or(|d| {
                d.discovery != *discovery || d.openapi_fetched.elapsed() > OPENAPI_REFRESH
            });
        if stale {
            due.push(async move {
                let get = |path: String| async move {
                    match backend.get(&path, identity, CHECK_TIMEOUT).await {
                        Ok((200, body)) => Some(body),
                        _ => None,
                    }
                };
                let (v3, v2) = futures::join!(
                    get(format!("/openapi/v3/apis/{group}/{version}")),
                    get("/openapi/v2".to_string())
                );
                (
                    (group.to_string(), version.to_string()),
                    discovery.clone(),
                    v3,
                    v2,
                )
            });
        } else if let Some(d) = documents.get_mut(&(group.to_string(), version.to_string())) {
            d.discovery = discovery.clone();
        }
    }
    for (gv, discovery, openapi_v3, openapi_v2) in futures::future::join_all(due).await {
        documents.insert(
            gv,
            Documents {
                discovery,
                openapi_v3,
                openapi_v2,
                openapi_fetched: Instant::now(),
            },
        );
    }
}

fn int_at(v: &Value, pointer: &str) -> i64 {
    v.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// What one check found.
struct Checked {
    apiservice: Value,
    /// The `Available` condition.
    condition: Value,
    backend: Option<Backend>,
    /// The backend's discovery document, when it answered with one.
    discovery: Option<Bytes>,
}

/// Check one APIService's backend.
async fn check(
    apiservice: Value,
    target: Result<Backend, Unavailable>,
    identity: &http::HeaderMap,
) -> Checked {
    let condition = |status: &str, reason: &str, message: &str| json!({"type": "Available", "status": status, "reason": reason, "message": message});
    let backend = target.as_ref().ok().cloned();
    let mut discovery = None;
    let result = match target {
        Err((reason, message)) => condition("False", reason, &message),
        Ok(backend) => {
            let path = format!(
                "/apis/{}/{}",
                str_at(&apiservice, "/spec/group"),
                str_at(&apiservice, "/spec/version")
            );
            let url = backend.url(&path);
            match backend.get(&path, identity, CHECK_TIMEOUT).await {
                Ok((200, body)) => {
                    discovery = Some(body);
                    condition("True", "Passed", "all checks passed")
                }
                Ok((code, _)) => condition(
                    "False",
                    "FailedDiscoveryCheck",
                    &format!(
                        "failing or missing response from {url}: bad status from {url}: {code}"
                    ),
                ),
                Err(e) => condition(
                    "False",
                    "FailedDiscoveryCheck",
                    &format!("failing or missing response from {url}: {e}"),
                ),
            }
        }
    };
    Checked {
        apiservice,
        condition: result,
        backend,
        discovery,
    }
}

/// Record `condition` unless the stored one already says the same (the transition
/// time changes only with the status).
async fn write_condition(store: &GenericStore, apiservice: &Value, mut condition: Value) {
    let current = apiservice
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Available"));
    let same = |c: &Value, k: &str| c.get(k) == condition.get(k);
    if let Some(c) = current {
        if same(c, "status") && same(c, "reason") && same(c, "message") {
            return;
        }
        condition["lastTransitionTime"] = if same(c, "status") {
            c["lastTransitionTime"].clone()
        } else {
            json!(apimachinery::time::now_rfc3339())
        };
    } else {
        condition["lastTransitionTime"] = json!(apimachinery::time::now_rfc3339());
    }
    let mut ctx = runtime::system_context("", MANAGER);
    ctx.subresource = apimachinery::Subresource::Status;
    let name = meta::name(apiservice).to_string();
    let result = store
        .update_with(&ctx, &name, |live| {
            let mut next = live.clone();
            let mut conditions: Vec<Value> = live
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            conditions.retain(|c| c["type"] != "Available");
            conditions.push(condition.clone());
            next["status"] = json!({"conditions": conditions});
            Ok(next)
        })
        .await;
    if let Err(e) = result
        && e.code() != 404
    {
        tracing::warn!(apiservice = %name, error = %e, "cannot record availability");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apiservice() -> Value {
        json!({"metadata": {"name": "v1alpha1.wardle.example.com"},
               "spec": {"group": "wardle.example.com", "version": "v1alpha1",
                        "service": {"namespace": "wardle", "name": "api", "port": 443}}})
    }

    #[test]
    fn only_apiservices_with_a_service_are_checked() {
        let backed = |v: Value| service_backed(&Object::new(v));
        assert!(backed(apiservice()));
        let local = json!({"metadata": {"name": "v1.apps", "labels": {"service": "service"}},
                           "spec": {"group": "apps", "version": "v1", "service": null}});
        assert!(!backed(local));
        assert!(!backed(
            json!({"metadata": {"name": "v1."}, "spec": {"version": "v1"}})
        ));
    }

    #[test]
    fn endpoints_resolve_like_slices() {
        let svc = json!({"spec": {"ports": [{"name": "https", "port": 443}]}});
        let endpoints = json!({"subsets": [
            {"notReadyAddresses": [{"ip": "10.0.0.9"}], "ports": [{"name": "https", "port": 9443}]},
            {"addresses": [{"ip": "10.0.0.1"}], "notReadyAddresses": [{"ip": "10.0.0.2"}],
             "ports": [{"name": "https", "port": 8443}]},
        ]});
        let slices = slices_of_endpoints(&endpoints);
        assert_eq!(slices.len(), 2);
        assert_eq!(
            resolve(&apiservice(), Some(&svc), &slices).unwrap(),
            "10.0.0.1:8443"
        );
        assert!(slices_of_endpoints(&json!({})).is_empty());
    }

    #[test]
    fn resolution_reasons_follow_upstream() {
        let a = apiservice();
        assert_eq!(
            resolve(&a, None, &[]).unwrap_err(),
            (
                "ServiceNotFound",
                "service/api in \"wardle\" is not present".into()
            )
        );
        let svc = json!({"spec": {"ports": [{"name": "https", "port": 8443}]}});
        assert_eq!(
            resolve(&a, Some(&svc), &[]).unwrap_err(),
            (
                "ServicePortError",
                "service/api in \"wardle\" is not listening on port 443".into()
            )
        );
        let svc = json!({"spec": {"ports": [{"name": "https", "port": 443}]}});
        assert_eq!(
            resolve(&a, Some(&svc), &[]).unwrap_err(),
            (
                "EndpointsNotFound",
                "cannot find endpoints for service/api in \"wardle\"".into()
            )
        );
        let not_ready = json!({"ports": [{"name": "https", "port": 9443}],
            "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": false}}]});
        assert_eq!(
            resolve(&a, Some(&svc), std::slice::from_ref(&not_ready)).unwrap_err(),
            ("MissingEndpoints", "endpoints for service/api in \"wardle\" have no addresses with port name \"https\"".into())
        );
        let ready = json!({"ports": [{"name": "https", "port": 9443}],
            "endpoints": [{"addresses": ["10.0.0.2"]}]});
        assert_eq!(
            resolve(&a, Some(&svc), &[not_ready, ready]).unwrap(),
            "10.0.0.2:9443"
        );
    }
}
