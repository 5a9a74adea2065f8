//! The `proxy` subresources of pods, Services and Nodes, black-box, with
//! kube-apiserver 1.37.2's answers (measured in a cluster without kubelets):
//! discovery, names that resolve to nothing (503/500/404/400 as upstream),
//! a Service's ready pod endpoint and a pod's IP proxied to a local HTTP
//! server (path, query, headers, redirects), a Node's kubelet port dialed
//! and refused, and RBAC's `proxy` subresource verbs per method.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::{IpAddr, SocketAddr};

use serde_json::{Value, json};
use testkit::Server;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn server() -> Server {
    Server::builder().start().expect("kubext starts")
}

/// `(code, body)` of `method path` with extra `headers` and a text body.
async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, http::HeaderMap, String) {
    let mut req = http::Request::builder().method(method).uri(path);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req
        .body(kube::client::Body::from(body.as_bytes().to_vec()))
        .unwrap();
    let resp = client.send(req).await.unwrap();
    let code = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    (code, headers, String::from_utf8_lossy(&bytes).into_owned())
}

async fn get(client: &kube::Client, path: &str) -> (u16, Value) {
    let (code, _, body) = send(client, "GET", path, &[], "").await;
    (code, common::json_of(body.as_bytes()))
}

async fn create(client: &kube::Client, path: &str, obj: Value) {
    let (code, body) = common::send_body(client, "POST", path, "application/json", &obj).await;
    assert_eq!(code, 201, "{path}: {}", String::from_utf8_lossy(&body));
}

/// The Status kube-apiserver answers, without details.
fn status(code: u16, reason: &str, message: &str) -> Value {
    let mut s = json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": message, "reason": reason, "code": code});
    if reason.is_empty() {
        s.as_object_mut().unwrap().remove("reason");
    }
    s
}

/// This machine's address on its default route: global unicast, as
/// EndpointSlices and upstream's proxies want (not loopback).
fn local_ip() -> Option<IpAddr> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("192.0.2.1:9").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

/// An HTTP/1.1 server on every address that answers each request with what
/// it received as JSON (`/redirect`: a 302 to `/target`), a CORS header and
/// `X-Echo`; anything that is not HTTP (a TLS handshake) gets a 400.
async fn echo_server() -> u16 {
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((conn, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(echo(conn));
        }
    });
    port
}

async fn echo(mut conn: tokio::net::TcpStream) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        let Ok(n @ 1..) = conn.read(&mut chunk).await else {
            return;
        };
        buf.extend_from_slice(&chunk[..n]);
        if !buf[0].is_ascii_uppercase() {
            let _ = conn
                .write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
                .await;
            return;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let request_line: Vec<&str> = lines.next().unwrap_or("").split(' ').collect();
    let headers: serde_json::Map<String, Value> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_ascii_lowercase(), json!(v.trim())))
        .collect();
    let length: usize = headers
        .get("content-length")
        .and_then(Value::as_str)
        .and_then(|l| l.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let Ok(n @ 1..) = conn.read(&mut chunk).await else {
            return;
        };
        body.extend_from_slice(&chunk[..n]);
    }
    let target = request_line.get(1).copied().unwrap_or("");
    let answer = if target == "/redirect" {
        "HTTP/1.1 302 Found\r\nLocation: /target\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            .to_string()
    } else {
        let echoed = json!({"method": request_line[0], "target": target, "headers": headers,
            "body": String::from_utf8_lossy(&body)})
        .to_string();
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Echo: yes\r\n\
             Access-Control-Allow-Origin: *\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{echoed}",
            echoed.len()
        )
    };
    let _ = conn.write_all(answer.as_bytes()).await;
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    std::net::TcpListener::bind("0.0.0.0:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

const SERVICES: &str = "/api/v1/namespaces/default/services";

#[tokio::test]
async fn proxy_subresources_are_discovered_as_upstream() {
    let s = server();
    let client = s.client().await.unwrap();
    let (_, legacy) = get(&client, "/api/v1").await;
    let entry = |name: &str| {
        legacy["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} not discovered"))
    };
    let verbs = json!(["create", "delete", "get", "patch", "update"]);
    assert_eq!(
        entry("nodes/proxy"),
        json!({"name": "nodes/proxy", "singularName": "", "namespaced": false,
            "kind": "NodeProxyOptions", "verbs": verbs})
    );
    assert_eq!(
        entry("services/proxy"),
        json!({"name": "services/proxy", "singularName": "", "namespaced": true,
            "kind": "ServiceProxyOptions", "verbs": verbs})
    );

    let (_, _, body) = common::get_accepting(
        &client,
        "/api",
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
    )
    .await;
    let aggregated = common::json_of(&body);
    let subresources = |resource: &str| {
        aggregated["items"][0]["versions"][0]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["resource"] == resource)
            .unwrap()["subresources"]
            .clone()
    };
    let proxy = |kind: &str| {
        json!({"subresource": "proxy",
            "responseKind": {"group": "", "version": "", "kind": kind}, "verbs": verbs})
    };
    let status = |kind: &str| {
        json!({"subresource": "status",
            "responseKind": {"group": "", "version": "", "kind": kind},
            "verbs": ["get", "patch", "update"]})
    };
    assert_eq!(
        subresources("nodes"),
        json!([proxy("NodeProxyOptions"), status("Node")])
    );
    assert_eq!(
        subresources("services"),
        json!([proxy("ServiceProxyOptions"), status("Service")])
    );
}

#[tokio::test]
async fn services_without_ready_endpoints_answer_as_upstream() {
    let s = server();
    let client = s.client().await.unwrap();
    create(
        &client,
        SERVICES,
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "empty"},
            "spec": {"ports": [{"name": "web", "port": 80}]}}),
    )
    .await;
    let no_endpoints = |name: &str| {
        status(
            503,
            "ServiceUnavailable",
            &format!("no endpoints available for service \"{name}\""),
        )
    };
    for (id, want) in [
        ("nope", (503, no_endpoints("nope"))),
        ("empty", (503, no_endpoints("empty"))),
        ("empty:web", (503, no_endpoints("empty"))),
        ("empty:80", (503, no_endpoints("empty"))),
        ("https:empty:80", (503, no_endpoints("empty"))),
        (
            "empty:81",
            (
                503,
                status(
                    503,
                    "ServiceUnavailable",
                    "no service port 81 found for service \"empty\"",
                ),
            ),
        ),
        (
            "web:80",
            (
                404,
                json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": "services \"web\" not found", "reason": "NotFound",
                    "details": {"name": "web", "kind": "services"}, "code": 404}),
            ),
        ),
        (
            "ftp:empty:80",
            (
                400,
                status(
                    400,
                    "BadRequest",
                    "invalid service request \"ftp:empty:80\"",
                ),
            ),
        ),
    ] {
        let path = format!("{SERVICES}/{id}/proxy/x");
        assert_eq!(get(&client, &path).await, want, "{path}");
    }
    // Without a path, and with other methods, the same.
    let (code, _, body) = send(&client, "POST", &format!("{SERVICES}/nope/proxy"), &[], "x").await;
    assert_eq!(
        (code, common::json_of(body.as_bytes())),
        (503, no_endpoints("nope"))
    );
}

#[tokio::test]
async fn nodes_answer_as_a_cluster_without_kubelets() {
    let s = server();
    let client = s.client().await.unwrap();
    let node = |name: &str, addresses: Value, port: u16| {
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"addresses": addresses,
                "daemonEndpoints": {"kubeletEndpoint": {"Port": port}}}})
    };
    create(&client, "/api/v1/nodes", node("n1", json!([]), 0)).await;
    create(
        &client,
        "/api/v1/nodes",
        node(
            "odd",
            json!([{"type": "Foo", "address": "1.2.3.4"}, {"type": "Bar", "address": "5.6.7.8"}]),
            0,
        ),
    )
    .await;
    create(
        &client,
        "/api/v1/nodes",
        node(
            "loopback",
            json!([{"type": "InternalIP", "address": "127.0.0.1"}]),
            1,
        ),
    )
    .await;
    let cases = [
        (
            "n1",
            500,
            status(500, "", "no preferred addresses found; known addresses: []"),
        ),
        (
            "n1:99",
            500,
            status(500, "", "no preferred addresses found; known addresses: []"),
        ),
        (
            "odd",
            500,
            status(
                500,
                "",
                "no preferred addresses found; known addresses: [{Foo 1.2.3.4} {Bar 5.6.7.8}]",
            ),
        ),
        (
            "n2",
            404,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "nodes \"n2\" not found", "reason": "NotFound",
                "details": {"name": "n2", "kind": "nodes"}, "code": 404}),
        ),
        (
            "loopback",
            400,
            status(400, "BadRequest", "address not allowed"),
        ),
        (
            "a:b:c:d",
            400,
            status(400, "BadRequest", "invalid node request \"a:b:c:d\""),
        ),
    ];
    for (id, code, want) in cases {
        let path = format!("/api/v1/nodes/{id}/proxy/x");
        assert_eq!(get(&client, &path).await, (code, want), "{path}");
    }

    // A node with a routable address: its kubelet port is dialed (and
    // refused), as is another port asked for.
    let Some(ip) = local_ip() else {
        eprintln!("no non-loopback address: the dialing cases are skipped");
        return;
    };
    let port = closed_port();
    let addresses = json!([{"type": "InternalIP", "address": ip.to_string()}]);
    create(&client, "/api/v1/nodes", node("closed", addresses, port)).await;
    let refused = status(
        503,
        "ServiceUnavailable",
        &format!(
            "error trying to reach service: dial tcp {}: connect: connection refused",
            SocketAddr::new(ip, port)
        ),
    );
    for id in [
        "closed",
        &format!("closed:{port}"),
        &format!("http:closed:{port}"),
    ] {
        let path = format!("/api/v1/nodes/{id}/proxy/metrics");
        assert_eq!(get(&client, &path).await, (503, refused.clone()), "{path}");
    }
    let path = "/api/v1/nodes/closed:99999/proxy/x";
    assert_eq!(
        get(&client, path).await,
        (
            503,
            status(
                503,
                "ServiceUnavailable",
                "error trying to reach service: dial tcp: address 99999: invalid port"
            )
        )
    );
}

#[tokio::test]
async fn a_ready_pod_endpoint_is_proxied_to() {
    let Some(ip) = local_ip() else {
        eprintln!("no non-loopback address: skipped");
        return;
    };
    let backend = echo_server().await;
    let s = server();
    let client = s.client().await.unwrap();
    create(
        &client,
        SERVICES,
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "live"},
            "spec": {"ports": [{"name": "web", "port": 80}, {"name": "https", "port": 443}]}}),
    )
    .await;
    create(
        &client,
        "/api/v1/namespaces/default/pods",
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "backend"},
            "spec": {"containers": [{"name": "c", "image": "x", "ports": [{"containerPort": backend}]}]}}),
    )
    .await;
    let (code, body) = common::send_body(
        &client,
        "PATCH",
        "/api/v1/namespaces/default/pods/backend/status",
        "application/merge-patch+json",
        &json!({"status": {"podIP": ip.to_string(), "podIPs": [{"ip": ip.to_string()}]}}),
    )
    .await;
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    // One endpoint that is not ready, one that is no pod, then the pod.
    create(
        &client,
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "live-1", "labels": {"kubernetes.io/service-name": "live"}},
        "addressType": if ip.is_ipv4() { "IPv4" } else { "IPv6" },
        "ports": [{"name": "web", "port": backend}, {"name": "https", "port": backend}],
        "endpoints": [
            {"addresses": [ip.to_string()], "conditions": {"ready": false},
                "targetRef": {"kind": "Pod", "namespace": "default", "name": "backend"}},
            {"addresses": [ip.to_string()]},
            {"addresses": [ip.to_string()], "conditions": {"ready": true},
                "targetRef": {"kind": "Pod", "namespace": "default", "name": "backend"}},
        ]}),
    )
    .await;

    // The path after `proxy/` and the query go to the backend; credentials
    // and hop-by-hop headers do not; the forwarded headers are upstream's.
    let prefix = format!("{SERVICES}/live:80/proxy");
    let (code, headers, body) = send(
        &client,
        "POST",
        &format!("{prefix}/a%2Fb/./c%20d/?q=1&r=2"),
        &[
            ("content-type", "text/plain"),
            ("authorization", "Bearer not-for-the-backend"),
            ("x-remote-user", "eve"),
            ("x-forwarded-for", "192.0.2.77"),
            ("x-custom", "1"),
        ],
        "hello",
    )
    .await;
    assert_eq!(code, 200, "{body}");
    let echoed = common::json_of(body.as_bytes());
    assert_eq!(echoed["method"], "POST");
    assert_eq!(echoed["target"], "/a/b/c%20d/?q=1&r=2");
    assert_eq!(echoed["body"], "hello");
    let sent = &echoed["headers"];
    assert_eq!(sent["x-custom"], "1");
    assert_eq!(sent["content-type"], "text/plain");
    assert_eq!(sent["x-forwarded-uri"], format!("{prefix}/a/b/c%20d/"));
    assert!(
        sent["x-forwarded-for"]
            .as_str()
            .unwrap()
            .starts_with("192.0.2.77, "),
        "{sent}"
    );
    assert!(sent.get("authorization").is_none(), "{sent}");
    assert!(sent.get("x-remote-user").is_none(), "{sent}");
    assert!(sent.get("host").is_some(), "{sent}");
    assert_eq!(headers["x-echo"], "yes");
    assert!(headers.get("access-control-allow-origin").is_none());

    // By port name and scheme; `https` to a plain HTTP server fails the handshake.
    let (code, _, body) = send(
        &client,
        "GET",
        &format!("{SERVICES}/live:web/proxy/x"),
        &[],
        "",
    )
    .await;
    assert_eq!(
        (code, common::json_of(body.as_bytes())["target"].clone()),
        (200, json!("/x"))
    );
    assert_eq!(
        get(&client, &format!("{SERVICES}/https:live:443/proxy/x")).await,
        (
            503,
            status(
                503,
                "ServiceUnavailable",
                "error trying to reach service: tls: first record does not look like a TLS handshake"
            )
        )
    );
    // No port named "" on the slice.
    assert_eq!(
        get(&client, &format!("{SERVICES}/live/proxy/x")).await,
        (
            503,
            status(
                503,
                "ServiceUnavailable",
                "no endpoints available for service \"live\""
            )
        )
    );

    // A request that ends at `proxy` is sent to `proxy/`; a redirect to the
    // backend's own path stays under the proxy path.
    let (code, headers, _) = send(&client, "GET", &format!("{prefix}?x=1"), &[], "").await;
    assert_eq!(code, 301);
    assert_eq!(headers["location"], format!("{prefix}/?x=1"));
    let (code, headers, _) = send(&client, "GET", &format!("{prefix}/redirect"), &[], "").await;
    assert_eq!(code, 302);
    assert_eq!(headers["location"], format!("{prefix}/target"));

    // A pod's IP, on its first container port or the one asked for.
    for id in ["backend", &format!("backend:{backend}")] {
        let path = format!("/api/v1/namespaces/default/pods/{id}/proxy/p");
        let (code, _, body) = send(&client, "DELETE", &path, &[], "").await;
        assert_eq!(code, 200, "{path}: {body}");
        assert_eq!(common::json_of(body.as_bytes())["method"], "DELETE");
    }
}

#[tokio::test]
async fn proxy_requests_are_authorized_per_method() {
    let s = server();
    let client = s.client().await.unwrap();
    let as_alice = [("impersonate-user", "alice")];
    let path = format!("{SERVICES}/web:80/proxy/x");
    let forbidden = |verb: &str, resource: &str, name: &str, scope: &str| {
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": format!("{resource}s \"{name}\" is forbidden: User \"alice\" cannot {verb} resource \"{resource}s/proxy\" in API group \"\" {scope}"),
            "reason": "Forbidden", "details": {"name": name, "kind": format!("{resource}s")}, "code": 403})
    };
    let (code, _, body) = send(&client, "GET", &path, &as_alice, "").await;
    assert_eq!(
        (code, common::json_of(body.as_bytes())),
        (
            403,
            forbidden("get", "service", "web:80", "in the namespace \"default\"")
        )
    );
    let (code, _, body) = send(&client, "POST", "/api/v1/nodes/n1/proxy", &as_alice, "").await;
    assert_eq!(
        (code, common::json_of(body.as_bytes())),
        (
            403,
            forbidden("create", "node", "n1", "at the cluster scope")
        )
    );
    let (code, _, body) = send(
        &client,
        "DELETE",
        "/api/v1/nodes/n1/proxy/a/b",
        &as_alice,
        "",
    )
    .await;
    assert_eq!(
        (code, common::json_of(body.as_bytes())),
        (
            403,
            forbidden("delete", "node", "n1", "at the cluster scope")
        )
    );

    // `get` on `services/proxy` lets GET through, not PUT.
    create(
        &client,
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "proxy-get"},
            "rules": [{"apiGroups": [""], "resources": ["services/proxy"], "verbs": ["get"]}]}),
    )
    .await;
    create(
        &client,
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "alice-proxy-get"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "proxy-get"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]}),
    )
    .await;
    let answer = || async {
        let (code, _, body) = send(&client, "GET", &path, &as_alice, "").await;
        (code, body)
    };
    let mut last = answer().await;
    for _ in 0..50 {
        if last.0 != 403 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        last = answer().await;
    }
    assert_eq!(
        (last.0, common::json_of(last.1.as_bytes())),
        (
            404,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "services \"web\" not found", "reason": "NotFound",
                "details": {"name": "web", "kind": "services"}, "code": 404})
        )
    );
    let (code, _, body) = send(&client, "PUT", &path, &as_alice, "").await;
    assert_eq!(
        (code, common::json_of(body.as_bytes())),
        (
            403,
            forbidden(
                "update",
                "service",
                "web:80",
                "in the namespace \"default\""
            )
        )
    );
}

#[tokio::test]
async fn pods_without_a_routable_address_are_not_proxied_to() {
    let s = server();
    let client = s.client().await.unwrap();
    create(
        &client,
        "/api/v1/namespaces/default/pods",
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pending"},
            "spec": {"containers": [{"name": "c", "image": "x"}]}}),
    )
    .await;
    let pods = "/api/v1/namespaces/default/pods";
    for (id, code, want) in [
        (
            "pending",
            400,
            status(400, "BadRequest", "address not allowed"),
        ),
        (
            "a:b:c:d",
            400,
            status(400, "BadRequest", "invalid pod request \"a:b:c:d\""),
        ),
        (
            "nope:80",
            404,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "pods \"nope\" not found", "reason": "NotFound",
                "details": {"name": "nope", "kind": "pods"}, "code": 404}),
        ),
    ] {
        let path = format!("{pods}/{id}/proxy/x");
        assert_eq!(get(&client, &path).await, (code, want), "{path}");
    }
}
