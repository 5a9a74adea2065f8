//! The `proxy` subresources of pods, Services and Nodes (upstream's
//! `ProxyREST` connecters). The name (`name`, `name:port`,
//! `scheme:name:port`) is resolved as upstream's `ResourceLocation`s resolve
//! it — a pod's IP; a ready endpoint of the Service's EndpointSlices that is
//! one of its pods; the Node's kubelet — and the request goes there as
//! `UpgradeAwareHandler` sends it: the path after `proxy/` and the query, the
//! caller's headers less credentials and hop-by-hop ones, `X-Forwarded-For`
//! and `X-Forwarded-Uri`; the answer streamed back with a redirect's
//! `Location` put under the proxy path and CORS headers dropped. What cannot
//! be reached is upstream's 503 (`error trying to reach service: dial tcp
//! ...`). Unlike upstream, links in HTML answers are not rewritten.

use std::net::IpAddr;
use std::sync::Arc;

use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, Uri, header};
use hyper::body::Incoming;
use serde_json::Value;

use apimachinery::{StatusError, Subresource, meta};
use registry::{RequestContext, ResourceType};

use super::call::Result;
use crate::api::Api;
use crate::catalog::Served;
use crate::forward::{self, Backend, ClientIp, Tls};
use crate::request_info::RequestInfo;
use crate::response::{self, Body};
use crate::user::UserInfo;

/// The kubelet's port when a Node reports none (`ports.KubeletPort`).
const DEFAULT_KUBELET_PORT: i64 = 10250;

/// The Node address types tried in order (kube-apiserver's default
/// `--kubelet-preferred-address-types`).
const PREFERRED_ADDRESS_TYPES: [&str; 5] = [
    "Hostname",
    "InternalDNS",
    "InternalIP",
    "ExternalDNS",
    "ExternalIP",
];

/// CORS headers of the backend's answer (upstream's `removeCORSHeaders`).
const CORS_HEADERS: [&str; 4] = [
    "access-control-allow-credentials",
    "access-control-allow-headers",
    "access-control-allow-methods",
    "access-control-allow-origin",
];

/// Whether `{resource}/{name}/proxy` is answered here.
pub fn handles(rtype: &ResourceType, info: &RequestInfo) -> bool {
    rtype.group.is_empty()
        && info.subresource == Subresource::Proxy
        && matches!(rtype.plural.as_str(), "pods" | "services" | "nodes")
}

pub async fn serve(
    api: &Api,
    info: &RequestInfo,
    user: &UserInfo,
    req: Request<Incoming>,
) -> Result<Response<Body>> {
    let ctx = context(user, info);
    let backend = match info.resource.as_str() {
        "services" => service_backend(api, &ctx, id(info, "service")?).await?,
        "nodes" => node_backend(api, &ctx, id(info, "node")?).await?,
        _ => pod_backend(api, &ctx, id(info, "pod")?).await?,
    };
    let path = ProxyPath::of(info, req.uri());
    if path.location.is_empty() && matches!(*req.method(), Method::GET | Method::HEAD) {
        return Ok(to_directory(req.uri()));
    }
    send(api, &backend, &path, req).await
}

/// Who asks, where: for reading the objects the name points at.
fn context(user: &UserInfo, info: &RequestInfo) -> RequestContext {
    RequestContext {
        user: user.name.clone(),
        groups: user.groups.clone(),
        uid: user.uid.clone(),
        extra: user.extra.clone(),
        namespace: info.namespace.to_string(),
        ..Default::default()
    }
}

/// `name`, `name:port` or `scheme:name:port` (`utilnet.SplitSchemeNamePort`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Id<'a> {
    scheme: &'a str,
    name: &'a str,
    port: &'a str,
}

impl<'a> Id<'a> {
    fn parse(id: &'a str) -> Option<Id<'a>> {
        let parts: Vec<&str> = id.split(':').collect();
        let (scheme, name, port) = match parts.as_slice() {
            [name] => ("", *name, ""),
            [name, port] => ("", *name, *port),
            [scheme, name, port] => (*scheme, *name, *port),
            _ => return None,
        };
        (!name.is_empty() && matches!(scheme, "" | "http" | "https")).then_some(Id {
            scheme,
            name,
            port,
        })
    }

    /// How the scheme asked for is spoken: HTTPS without a certificate check
    /// (upstream's proxy transport), else HTTP.
    fn tls(&self) -> Tls {
        if self.scheme == "https" {
            Tls::Insecure
        } else {
            Tls::None
        }
    }
}

fn id<'a>(info: &'a RequestInfo, kind: &str) -> Result<Id<'a>> {
    Id::parse(&info.name)
        .ok_or_else(|| StatusError::bad_request(format!("invalid {kind} request {:?}", info.name)))
}

fn served(api: &Api, group: &str, plural: &str) -> Result<Arc<Served>> {
    api.catalog()
        .lookup(group, "v1", plural)
        .cloned()
        .ok_or_else(|| StatusError::internal(format!("{plural} are not served")))
}

async fn get(api: &Api, ctx: &RequestContext, plural: &str, name: &str) -> Result<Value> {
    let obj = served(api, "", plural)?.store.get(ctx, name).await?;
    Ok(obj.to_value())
}

/// A port as the dialer takes it.
fn port_number(port: &str) -> Result<u16> {
    port.parse().map_err(|_| {
        StatusError::service_unavailable(format!(
            "error trying to reach service: dial tcp: address {port}: invalid port"
        ))
    })
}

/// Go's `IP.IsGlobalUnicast`: not unspecified, loopback, link-local,
/// multicast or broadcast.
fn is_global_unicast(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            !(v4.is_unspecified()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_multicast()
                || v4.is_broadcast())
        }
        IpAddr::V6(v6) => {
            !(v6.is_unspecified()
                || v6.is_loopback()
                || v6.is_multicast()
                || v6.is_unicast_link_local())
        }
    }
}

// Services.

/// Upstream's service `ResourceLocation`: a port number is the Service's port
/// of that number (by its name); then a ready endpoint serving the port of
/// that name, that is one of the Service's pods.
async fn service_backend(api: &Api, ctx: &RequestContext, id: Id<'_>) -> Result<Backend> {
    let port_name = match id.port.parse::<i64>() {
        Ok(number) => {
            let service = get(api, ctx, "services", id.name).await?;
            service_port_name(&service, number).ok_or_else(|| {
                StatusError::service_unavailable(format!(
                    "no service port {number} found for service {:?}",
                    id.name
                ))
            })?
        }
        Err(_) => id.port.to_string(),
    };
    let slices = endpoint_slices(api, ctx, id.name).await?;
    for (endpoint, ip, port) in endpoint_candidates(&slices, &port_name) {
        if is_pod_address(api, ctx, endpoint, ip).await {
            return Ok(Backend {
                host: ip.to_string(),
                port: port_number(&port.to_string())?,
                tls: id.tls(),
            });
        }
    }
    Err(no_endpoints(id.name))
}

fn no_endpoints(service: &str) -> StatusError {
    StatusError::service_unavailable(format!("no endpoints available for service {service:?}"))
}

/// The name of the Service's port `number`.
fn service_port_name(service: &Value, number: i64) -> Option<String> {
    array(service, "/spec/ports")
        .iter()
        .find(|p| p.get("port").and_then(Value::as_i64) == Some(number))
        .map(|p| str_at(p, "/name").to_string())
}

/// The Service's EndpointSlices (`kubernetes.io/service-name`), IPv4 first
/// (the cluster's primary family, as upstream orders them).
async fn endpoint_slices(api: &Api, ctx: &RequestContext, service: &str) -> Result<Vec<Value>> {
    let Ok(slices) = served(api, "discovery.k8s.io", "endpointslices") else {
        return Ok(Vec::new());
    };
    let list = slices
        .store
        .list(ctx, registry::ListOptions::default())
        .await?;
    let mut slices: Vec<Value> = list
        .items
        .iter()
        .map(|o| o.to_value())
        .filter(|s| {
            meta::labels(s)
                .and_then(|l| l.get("kubernetes.io/service-name"))
                .and_then(Value::as_str)
                .unwrap_or("")
                == service
        })
        .collect();
    slices.sort_by_key(|s| str_at(s, "/addressType") != "IPv4");
    Ok(slices)
}

/// Upstream's `RandomEndpoint` in order: each endpoint not marked unready,
/// of each slice port named `port_name` that has a number; its first address.
fn endpoint_candidates<'a>(
    slices: &'a [Value],
    port_name: &'a str,
) -> impl Iterator<Item = (&'a Value, &'a str, i64)> + 'a {
    slices.iter().flat_map(move |slice| {
        array(slice, "/ports")
            .iter()
            .filter(move |p| p.get("name").and_then(Value::as_str) == Some(port_name))
            .filter_map(|p| p.get("port").and_then(Value::as_i64))
            .flat_map(move |port| {
                array(slice, "/endpoints")
                    .iter()
                    .filter(|e| e.pointer("/conditions/ready") != Some(&Value::Bool(false)))
                    .filter_map(move |e| {
                        let ip = e.pointer("/addresses/0").and_then(Value::as_str)?;
                        Some((e, ip, port))
                    })
            })
    })
}

/// Upstream's `isValidAddress`: the endpoint names a pod of the request's
/// namespace that has the address among its IPs.
async fn is_pod_address(api: &Api, ctx: &RequestContext, endpoint: &Value, ip: &str) -> bool {
    let Some(target) = endpoint.get("targetRef").filter(|t| t.is_object()) else {
        return false;
    };
    if str_at(target, "/namespace") != ctx.namespace {
        return false;
    }
    let Ok(pod) = get(api, ctx, "pods", str_at(target, "/name")).await else {
        return false;
    };
    array(&pod, "/status/podIPs")
        .iter()
        .any(|p| str_at(p, "/ip") == ip)
}

// Nodes.

/// Upstream's node `ResourceLocation`: the kubelet (HTTPS) on the Node's
/// preferred address, or another port of it in the scheme asked for.
async fn node_backend(api: &Api, ctx: &RequestContext, id: Id<'_>) -> Result<Backend> {
    let node = get(api, ctx, "nodes", id.name).await?;
    let host = preferred_address(&node)?;
    let kubelet_port = match node
        .pointer("/status/daemonEndpoints/kubeletEndpoint/Port")
        .and_then(Value::as_i64)
    {
        Some(port) if port > 0 => port,
        _ => DEFAULT_KUBELET_PORT,
    };
    check_proxyable_hostname(&host).await?;
    let kubelet_port = kubelet_port.to_string();
    let (port, tls) = if id.port.is_empty() || id.port == kubelet_port {
        (kubelet_port.as_str(), Tls::SystemRoots)
    } else {
        (id.port, id.tls())
    };
    Ok(Backend {
        port: port_number(port)?,
        host,
        tls,
    })
}

/// `nodeutil.GetPreferredNodeAddress`: the first address of the first
/// preferred type the Node reports.
fn preferred_address(node: &Value) -> Result<String> {
    let addresses = array(node, "/status/addresses");
    PREFERRED_ADDRESS_TYPES
        .iter()
        .find_map(|wanted| {
            addresses
                .iter()
                .find(|a| str_at(a, "/type") == *wanted)
                .map(|a| str_at(a, "/address").to_string())
        })
        .ok_or_else(|| {
            let known: Vec<String> = addresses
                .iter()
                .map(|a| format!("{{{} {}}}", str_at(a, "/type"), str_at(a, "/address")))
                .collect();
            StatusError::new(
                500,
                "",
                format!(
                    "no preferred addresses found; known addresses: [{}]",
                    known.join(" ")
                ),
            )
        })
}

/// Upstream's `isProxyableHostname`: every address the host resolves to is
/// global unicast.
async fn check_proxyable_hostname(host: &str) -> Result<()> {
    let ips: Vec<IpAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![ip],
        Err(_) => tokio::net::lookup_host((host, 0))
            .await
            .map_err(|_| StatusError::bad_request(format!("lookup {host}: no such host")))?
            .map(|addr| addr.ip())
            .collect(),
    };
    if ips.is_empty() {
        return Err(StatusError::bad_request("no addresses for hostname"));
    }
    if !ips.into_iter().all(is_global_unicast) {
        return Err(StatusError::bad_request("address not allowed"));
    }
    Ok(())
}

// Pods.

/// Upstream's pod `ResourceLocation`: the pod's first IP, if routable, on the
/// port asked for or its first container's first port.
async fn pod_backend(api: &Api, ctx: &RequestContext, id: Id<'_>) -> Result<Backend> {
    let pod = get(api, ctx, "pods", id.name).await?;
    let ip = str_at(&pod, "/status/podIPs/0/ip");
    if !ip.parse().is_ok_and(is_global_unicast) {
        return Err(StatusError::bad_request("address not allowed"));
    }
    let first_port = array(&pod, "/spec/containers")
        .iter()
        .find_map(|c| c.pointer("/ports/0/containerPort").and_then(Value::as_i64))
        .map(|p| p.to_string());
    let default_port = if id.scheme == "https" { "443" } else { "80" };
    let port = match (id.port, &first_port) {
        ("", Some(first)) => first.as_str(),
        ("", None) => default_port,
        (port, _) => port,
    };
    Ok(Backend {
        host: ip.to_string(),
        port: port_number(port)?,
        tls: id.tls(),
    })
}

// The request's path.

/// Where on the backend a proxy request goes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ProxyPath {
    /// The request's path through `proxy`: what `X-Forwarded-Uri` and
    /// redirects on the backend are put under.
    prefix: String,
    /// The rest, decoded and cleaned, escaped again; `/`-led, or empty when
    /// the request ends at `proxy`.
    location: String,
    query: Option<String>,
}

impl ProxyPath {
    fn of(info: &RequestInfo, uri: &Uri) -> ProxyPath {
        let raw = uri.path();
        let segments: Vec<&str> = raw.split('/').filter(|s| !s.is_empty()).collect();
        // api/v1 or apis/{group}/{version}, namespaces/{ns}, {resource}/{name}/proxy.
        let base = if info.prefix == "api" { 2 } else { 3 };
        let at = base + if info.namespaced_path { 2 } else { 0 } + 2;
        let prefix = format!("/{}", segments[..(at + 1).min(segments.len())].join("/"));
        let rest = segments
            .get(at + 1..)
            .map(|rest| rest.join("/"))
            .unwrap_or_default();
        let decoded = crate::authn::percent_decode(&rest);
        let mut location = match clean(&decoded) {
            cleaned if cleaned.is_empty() => String::new(),
            cleaned => escape_path(&format!("/{cleaned}")),
        };
        let trailing = raw.ends_with('/') || decoded.ends_with('/');
        if trailing && !location.ends_with('/') {
            location.push('/');
        }
        ProxyPath {
            prefix,
            location,
            query: uri.query().map(str::to_string),
        }
    }

    /// The backend request's origin-form target.
    fn target(&self) -> String {
        let path = if self.location.is_empty() {
            "/"
        } else {
            &self.location
        };
        match &self.query {
            Some(q) => format!("{path}?{q}"),
            None => path.to_string(),
        }
    }

    /// `X-Forwarded-Uri`: the prefix joined with the backend path.
    fn forwarded_uri(&self) -> String {
        let mut uri = format!("{}{}", self.prefix, self.location.trim_end_matches('/'));
        if self.location.ends_with('/') {
            uri.push('/');
        }
        uri
    }
}

/// Go's `path.Clean` of a relative path, without the leading `..`s it keeps
/// (they cannot leave the backend's root anyway); empty for the root.
fn clean(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            s => out.push(s),
        }
    }
    out.join("/")
}

/// Go's path escaping (`url.URL.EscapedPath`): unreserved characters and
/// `$&+,/:;=@` stay, the rest become `%XX`.
fn escape_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~$&+,/:;=@".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A request that ends at `proxy` is sent to `proxy/` first (upstream's
/// `proxyRedirectsforRootPath`).
fn to_directory(uri: &Uri) -> Response<Body> {
    let location = match uri.query().filter(|q| !q.is_empty()) {
        Some(q) => format!("{}/?{q}", uri.path()),
        None => format!("{}/", uri.path()),
    };
    let mut resp = Response::new(response::full(bytes::Bytes::new()));
    *resp.status_mut() = StatusCode::MOVED_PERMANENTLY;
    if let Ok(value) = HeaderValue::from_str(&location) {
        resp.headers_mut().insert(header::LOCATION, value);
    }
    resp
}

// Forwarding.

async fn send(
    api: &Api,
    backend: &Backend,
    path: &ProxyPath,
    mut req: Request<Incoming>,
) -> Result<Response<Body>> {
    let client_upgrade =
        forward::wants_upgrade(req.headers()).then(|| hyper::upgrade::on(&mut req));
    let request_host = request_host(&req);
    let client_ip = req.extensions().get::<ClientIp>().copied();
    let (mut parts, body) = req.into_parts();
    let headers = &mut parts.headers;
    forward::strip_hop_by_hop(headers, client_upgrade.is_some());
    forward::strip_identity(headers, api.authn.request_header_config());
    add_forwarded(headers, client_ip, path);
    // The backend sees the host the client addressed (HTTP/2 has no `Host`).
    if !headers.contains_key(header::HOST)
        && let Ok(host) = HeaderValue::from_str(&request_host)
    {
        headers.insert(header::HOST, host);
    }
    parts.uri = path
        .target()
        .parse()
        .map_err(|e| StatusError::bad_request(format!("invalid proxy path: {e}")))?;
    parts.version = http::Version::HTTP_11;
    parts.extensions = Default::default();
    let mut resp = forward::send(backend, Request::from_parts(parts, body))
        .await
        .map_err(|e| {
            StatusError::service_unavailable(format!("error trying to reach service: {e}"))
        })?;
    match client_upgrade {
        Some(client) if resp.status() == StatusCode::SWITCHING_PROTOCOLS => {
            tokio::spawn(forward::bridge(client, hyper::upgrade::on(&mut resp)));
        }
        _ => forward::strip_hop_by_hop(resp.headers_mut(), false),
    }
    let (mut parts, body) = resp.into_parts();
    for name in CORS_HEADERS {
        parts.headers.remove(name);
    }
    rewrite_location(&mut parts.headers, path, backend, &request_host);
    Ok(Response::from_parts(parts, forward::streamed(body)))
}

/// The host the client addressed (`Host`, or HTTP/2's `:authority`).
fn request_host(req: &Request<Incoming>) -> String {
    req.headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_string)
        .or_else(|| req.uri().authority().map(|a| a.to_string()))
        .unwrap_or_default()
}

/// What Go's reverse proxy and upstream's transport add: the client appended
/// to `X-Forwarded-For`, the request's path as `X-Forwarded-Uri`. The `Host`
/// stays the client's.
fn add_forwarded(headers: &mut HeaderMap, client: Option<ClientIp>, path: &ProxyPath) {
    if let Some(ClientIp(ip)) = client {
        let prior: Vec<&str> = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        let value = if prior.is_empty() {
            ip.to_string()
        } else {
            format!("{}, {ip}", prior.join(", "))
        };
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert("x-forwarded-for", value);
        }
    }
    if let Ok(value) = HeaderValue::from_str(&path.forwarded_uri()) {
        headers.insert("x-forwarded-uri", value);
    }
}

/// A redirect to the backend itself (a path, or its own or the client's
/// host) is put under the proxy path (upstream's `Transport.rewriteURL`);
/// relative ones and other hosts stay.
fn rewrite_location(headers: &mut HeaderMap, path: &ProxyPath, backend: &Backend, host: &str) {
    let Some(location) = headers.get(header::LOCATION).and_then(|l| l.to_str().ok()) else {
        return;
    };
    let rewritten = rewrite_url(location, &path.prefix, &backend.authority(), host);
    if let Ok(value) = HeaderValue::from_str(&rewritten) {
        headers.insert(header::LOCATION, value);
    }
}

fn rewrite_url(url: &str, prefix: &str, backend: &str, request_host: &str) -> String {
    let (rest, fragment) = split_at(url, '#');
    let (rest, query) = split_at(rest, '?');
    let (origin, host, path) = match rest.split_once("://") {
        Some((scheme, after)) if !scheme.contains('/') => {
            let (host, path) = after.split_at(after.find('/').unwrap_or(after.len()));
            (&rest[..scheme.len() + 3 + host.len()], host, path)
        }
        _ => ("", "", rest),
    };
    let other_host = !host.is_empty() && host != backend && host != request_host;
    if other_host || !path.starts_with('/') {
        return url.to_string();
    }
    let origin = if host == request_host { origin } else { "" };
    let path = if path.starts_with(prefix) {
        path.to_string()
    } else {
        let mut joined = format!("{prefix}/{}", clean(path));
        if path.ends_with('/') && !joined.ends_with('/') {
            joined.push('/');
        }
        joined
    };
    let query = query.map(|q| format!("?{q}")).unwrap_or_default();
    let fragment = fragment.map(|f| format!("#{f}")).unwrap_or_default();
    format!("{origin}{path}{query}{fragment}")
}

fn split_at(s: &str, c: char) -> (&str, Option<&str>) {
    match s.split_once(c) {
        Some((before, after)) => (before, Some(after)),
        None => (s, None),
    }
}

fn array<'a>(v: &'a Value, pointer: &str) -> &'a [Value] {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_split_as_upstream_splits_them() {
        let id = |s| Id::parse(s).map(|i| (i.scheme, i.name, i.port));
        assert_eq!(id("web"), Some(("", "web", "")));
        assert_eq!(id("web:80"), Some(("", "web", "80")));
        assert_eq!(id("https:web:443"), Some(("https", "web", "443")));
        assert_eq!(id("ftp:web:21"), None);
        assert_eq!(id(":80"), None);
        assert_eq!(id("a:b:c:d"), None);
    }

    fn path(p: &str) -> ProxyPath {
        let uri: Uri = p.parse().unwrap();
        let info = crate::request_info::parse("GET", uri.path(), false);
        ProxyPath::of(&info, &uri)
    }

    #[test]
    fn the_path_after_proxy_goes_to_the_backend() {
        let p = path("/api/v1/namespaces/default/services/web:80/proxy/a%2Fb/./c%20d/?q=1");
        assert_eq!(p.prefix, "/api/v1/namespaces/default/services/web:80/proxy");
        assert_eq!(p.location, "/a/b/c%20d/");
        assert_eq!(p.target(), "/a/b/c%20d/?q=1");
        assert_eq!(
            p.forwarded_uri(),
            "/api/v1/namespaces/default/services/web:80/proxy/a/b/c%20d/"
        );
        let root = path("/api/v1/nodes/n1/proxy");
        assert_eq!((root.location.as_str(), root.target()), ("", "/".into()));
        assert_eq!(path("/api/v1/nodes/n1/proxy/").location, "/");
    }

    #[test]
    fn redirects_to_the_backend_stay_under_the_proxy_path() {
        let prefix = "/api/v1/namespaces/default/services/web:80/proxy";
        let rewrite = |url: &str| rewrite_url(url, prefix, "10.0.0.5:8080", "kubext:6443");
        assert_eq!(rewrite("/target"), format!("{prefix}/target"));
        assert_eq!(
            rewrite("http://10.0.0.5:8080/a/?x=1"),
            format!("{prefix}/a/?x=1")
        );
        assert_eq!(
            rewrite("https://kubext:6443/b#f"),
            format!("https://kubext:6443{prefix}/b#f")
        );
        assert_eq!(rewrite(&format!("{prefix}/c")), format!("{prefix}/c"));
        assert_eq!(rewrite("relative"), "relative");
        assert_eq!(rewrite("http://example.com/x"), "http://example.com/x");
    }

    #[test]
    fn a_node_without_preferred_addresses_lists_the_ones_it_has() {
        let node = json!({"status": {"addresses": [
            {"type": "Foo", "address": "1.2.3.4"}, {"type": "Bar", "address": "5.6.7.8"}]}});
        let err = preferred_address(&node).unwrap_err();
        assert_eq!(
            err.status().message,
            "no preferred addresses found; known addresses: [{Foo 1.2.3.4} {Bar 5.6.7.8}]"
        );
        let node = json!({"status": {"addresses": [
            {"type": "ExternalIP", "address": "1.2.3.4"}, {"type": "InternalIP", "address": "10.0.0.1"}]}});
        assert_eq!(preferred_address(&node).unwrap(), "10.0.0.1");
    }

    #[test]
    fn only_ready_endpoints_of_the_named_port_are_candidates() {
        let slices = [json!({
            "ports": [{"name": "web", "port": 8080}, {"port": 9090}],
            "endpoints": [
                {"addresses": ["10.0.0.1"], "conditions": {"ready": false}},
                {"addresses": ["10.0.0.2"]},
            ],
        })];
        let found: Vec<(&str, i64)> = endpoint_candidates(&slices, "web")
            .map(|(_, ip, port)| (ip, port))
            .collect();
        assert_eq!(found, [("10.0.0.2", 8080)]);
        // An unnamed slice port matches no name, not even the empty one.
        assert_eq!(endpoint_candidates(&slices, "").count(), 0);
    }

    #[test]
    fn global_unicast_is_gos() {
        for (ip, global) in [
            ("127.0.0.1", false),
            ("169.254.1.1", false),
            ("0.0.0.0", false),
            ("224.0.0.1", false),
            ("10.0.0.1", true),
            ("192.0.2.2", true),
            ("::1", false),
            ("fe80::1", false),
            ("2001:db8::1", true),
        ] {
            assert_eq!(is_global_unicast(ip.parse().unwrap()), global, "{ip}");
        }
    }
}
