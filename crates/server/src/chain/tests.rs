//! The filter chain in process: a request in, a response out, over an
//! in-memory pipe (no process, no socket) to the same per-request entry the
//! server uses (`server::handle_catching_panics`), with an `Api` over the
//! memory backend. Time is tokio's paused clock where it matters (request
//! timeouts, watch ends and bookmarks), never a sleep.
//!
//! Expected bodies are kube-apiserver's (its filters' texts: `WithAuthentication`'s
//! 401, `responsewriters.Forbidden`, `WithTimeoutForNonLongRunningRequests`,
//! `WithPanicRecovery`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

use crate::api::{Api, Serving};
use crate::authn::{Authenticator, PeerIdentity, TokenReviewer};
use crate::authz::{Attributes, Authorizer, Decision, NoRules};
use crate::front_proxy::FrontProxyConfig;
use crate::lifecycle::{Lifecycle, Phase, ShutdownOptions};

/// Tokens the harness knows: an administrator and a user with no rights.
const TOKENS: &str = "admin-token,admin,1,\"system:masters\"\nalice-token,alice,2,\"\"\n";
const ADMIN: &str = "Bearer admin-token";
const ALICE: &str = "Bearer alice-token";

/// Allows `system:masters`, has no opinion on anyone else, panics on the
/// path `/panic`; remembers what it was asked.
#[derive(Default)]
struct TestAuthorizer {
    asked: Mutex<Vec<Asked>>,
}

/// The attributes the chain asked about, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Asked {
    user: String,
    verb: String,
    group: String,
    version: String,
    resource: String,
    subresource: String,
    namespace: String,
    name: String,
    path: String,
    is_resource: bool,
}

#[async_trait::async_trait]
impl Authorizer for TestAuthorizer {
    async fn authorize(&self, a: &Attributes<'_>) -> Decision {
        assert!(a.path != "/panic", "a handler's panic, as a test asks");
        if let Ok(mut asked) = self.asked.lock() {
            asked.push(Asked {
                user: a.user.name.clone(),
                verb: a.verb.into(),
                group: a.group.into(),
                version: a.version.into(),
                resource: a.resource.into(),
                subresource: a.subresource.into(),
                namespace: a.namespace.into(),
                name: a.name.into(),
                path: a.path.into(),
                is_resource: a.is_resource,
            });
        }
        if a.user.groups.iter().any(|g| g == "system:masters") {
            Decision::allow()
        } else {
            Decision::NoOpinion(String::new())
        }
    }
}

struct Harness {
    api: Arc<Api>,
    authorizer: Arc<TestAuthorizer>,
    _tokens: tempfile::NamedTempFile,
}

/// A self-signed CA: the authenticator needs one to verify client
/// certificates against (none are presented here).
fn ca_pem() -> String {
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.self_signed(&key).expect("self-signed").pem()
}

impl Harness {
    async fn new() -> Harness {
        Self::with(|api| api).await
    }

    async fn with(configure: impl FnOnce(Api) -> Api) -> Harness {
        Self::build(ShutdownOptions::default(), None, configure).await
    }

    async fn build(
        shutdown: ShutdownOptions,
        token_reviewer: Option<Arc<dyn TokenReviewer>>,
        configure: impl FnOnce(Api) -> Api,
    ) -> Harness {
        let tokens = tempfile::NamedTempFile::new().expect("token file");
        std::fs::write(tokens.path(), TOKENS).expect("token file");
        let ca = ca_pem();
        let authn = Authenticator::new(
            Some(tokens.path()),
            std::slice::from_ref(&ca),
            &ca,
            &FrontProxyConfig::default(),
        )
        .expect("authenticator");
        let storage = registry::Storage::open(
            Arc::new(storage::memory::MemoryBackend::new()),
            registry::JsonCodec,
            storage::StoreOptions::default(),
        )
        .await
        .expect("storage");
        let authorizer = Arc::new(TestAuthorizer::default());
        let serving = Serving {
            name: "test".into(),
            types: registry::builtin::resource_types(),
            authorizer: authorizer.clone(),
            rules: Arc::new(NoRules),
            delegation: None,
            admission: None,
            token_reviewer,
        };
        let lifecycle = Arc::new(Lifecycle::new(shutdown));
        let api = Arc::new(configure(Api::new(
            storage,
            "/registry",
            authn,
            lifecycle,
            serving,
        )));
        let harness = Harness {
            api,
            authorizer,
            _tokens: tokens,
        };
        let namespace =
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}});
        let (status, _, body) = harness
            .send(request(
                Method::POST,
                "/api/v1/namespaces",
                Some(ADMIN),
                Some(namespace),
            ))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body:?}");
        harness.authorizer.asked.lock().expect("lock").clear();
        harness
    }

    /// Send `req` over a fresh in-memory connection; the response, its body
    /// still streaming.
    async fn open(&self, req: Request<Full<Bytes>>) -> http::Response<Incoming> {
        let (client, server) = tokio::io::duplex(1 << 20);
        let api = self.api.clone();
        let peer = Arc::new(PeerIdentity::default());
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let handled =
                    crate::server::handle_catching_panics(api.clone(), Box::new(req), peer.clone());
                async move { Ok::<_, std::convert::Infallible>(handled.await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(server), service)
                .await;
        });
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(client))
            .await
            .expect("handshake");
        tokio::spawn(connection);
        sender.send_request(req).await.expect("response")
    }

    /// Send `req`; the status, headers and whole body.
    async fn send(&self, req: Request<Full<Bytes>>) -> (StatusCode, HeaderMap, Bytes) {
        let (parts, body) = self.open(req).await.into_parts();
        let body = body.collect().await.expect("body").to_bytes();
        (parts.status, parts.headers, body)
    }

    fn asked(&self) -> Vec<Asked> {
        self.authorizer.asked.lock().expect("lock").clone()
    }
}

fn request(
    method: Method,
    uri: &str,
    authorization: Option<&str>,
    body: Option<Value>,
) -> Request<Full<Bytes>> {
    let mut builder = Request::builder().method(method).uri(uri);
    if let Some(authorization) = authorization {
        builder = builder.header(http::header::AUTHORIZATION, authorization);
    }
    let body = match body {
        Some(body) => {
            builder = builder.header(http::header::CONTENT_TYPE, "application/json");
            Bytes::from(body.to_string())
        }
        None => Bytes::new(),
    };
    builder.body(Full::new(body)).expect("request")
}

fn content_type(headers: &HeaderMap) -> &str {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

#[tokio::test]
async fn credentials_that_prove_nothing_are_401_everywhere() {
    let harness = Harness::new().await;
    // Upstream's `unauthorized` responder writes this Status.
    let expected = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"Unauthorized\",\"reason\":\"Unauthorized\",\"code\":401}\n";
    for path in ["/api/v1/namespaces", "/healthz", "/apis/apps/v1"] {
        let (status, headers, body) = harness
            .send(request(Method::GET, path, Some("Bearer wrong"), None))
            .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}");
        assert_eq!(content_type(&headers), "application/json", "{path}");
        assert_eq!(body, expected, "{path}");
        // Every answer carries an audit ID, refusals too.
        assert!(headers.contains_key("audit-id"), "{path}");
    }
    // Nobody was asked to authorize what was never authenticated.
    assert_eq!(harness.asked(), vec![]);
}

/// Knows one token, carol's; remembers what it was asked.
#[derive(Default)]
struct TestReviewer {
    asked: Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl TokenReviewer for TestReviewer {
    async fn review(&self, token: &str) -> Option<crate::user::UserInfo> {
        self.asked.lock().expect("lock").push(token.to_string());
        (token == "carols-token").then(|| crate::user::UserInfo {
            name: "carol".into(),
            groups: vec!["system:masters".into()],
            ..Default::default()
        })
    }
}

#[tokio::test]
async fn tokens_the_server_did_not_issue_are_asked_of_its_reviewer() {
    let reviewer = Arc::new(TestReviewer::default());
    let harness = Harness::build(ShutdownOptions::default(), Some(reviewer.clone()), |api| {
        api
    })
    .await;
    let (status, _, body) = harness
        .send(request(
            Method::GET,
            "/api/v1/namespaces",
            Some("Bearer carols-token"),
            None,
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{body:?}");
    assert_eq!(harness.asked()[0].user, "carol");
    // A token the reviewer does not know is 401, as any credential that
    // proves nothing.
    let (status, _, body) = harness
        .send(request(
            Method::GET,
            "/api/v1/namespaces",
            Some("Bearer wrong"),
            None,
        ))
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        body,
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"Unauthorized\",\"reason\":\"Unauthorized\",\"code\":401}\n"
    );
    // Tokens the server issued itself, and requests without one, are not
    // asked about.
    let (status, _, _) = harness
        .send(request(
            Method::GET,
            "/api/v1/namespaces",
            Some(ADMIN),
            None,
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    harness
        .send(request(Method::GET, "/api/v1/namespaces", None, None))
        .await;
    assert_eq!(
        *reviewer.asked.lock().expect("lock"),
        ["carols-token", "wrong"]
    );
}

#[tokio::test]
async fn no_credentials_are_anonymous_unless_anonymous_auth_is_off() {
    let harness = Harness::new().await;
    let (status, _, body) = harness
        .send(request(Method::GET, "/api/v1/namespaces", None, None))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body:?}");
    assert_eq!(harness.asked()[0].user, "system:anonymous");

    let closed = Harness::with(|api| api.with_anonymous(false)).await;
    let (status, _, _) = closed
        .send(request(Method::GET, "/api/v1/namespaces", None, None))
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn refused_authorization_is_403_with_upstreams_message() {
    let harness = Harness::new().await;
    let cases = [
        (
            Method::GET,
            "/api/v1/namespaces/default/configmaps",
            "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"configmaps is forbidden: User \\\"alice\\\" cannot list resource \\\"configmaps\\\" in API group \\\"\\\" in the namespace \\\"default\\\"\",\"reason\":\"Forbidden\",\"details\":{\"kind\":\"configmaps\"},\"code\":403}\n",
        ),
        (
            Method::DELETE,
            "/apis/apps/v1/namespaces/default/deployments/web",
            "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"deployments.apps \\\"web\\\" is forbidden: User \\\"alice\\\" cannot delete resource \\\"deployments\\\" in API group \\\"apps\\\" in the namespace \\\"default\\\"\",\"reason\":\"Forbidden\",\"details\":{\"name\":\"web\",\"group\":\"apps\",\"kind\":\"deployments\"},\"code\":403}\n",
        ),
        (
            Method::GET,
            "/api/v1/nodes/n1/status",
            "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"nodes \\\"n1\\\" is forbidden: User \\\"alice\\\" cannot get resource \\\"nodes/status\\\" in API group \\\"\\\" at the cluster scope\",\"reason\":\"Forbidden\",\"details\":{\"name\":\"n1\",\"kind\":\"nodes\"},\"code\":403}\n",
        ),
        (
            Method::GET,
            "/metrics",
            "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"forbidden: User \\\"alice\\\" cannot get path \\\"/metrics\\\"\",\"reason\":\"Forbidden\",\"details\":{},\"code\":403}\n",
        ),
    ];
    for (method, path, expected) in cases {
        let (status, headers, body) = harness.send(request(method, path, Some(ALICE), None)).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}");
        assert_eq!(content_type(&headers), "application/json", "{path}");
        assert_eq!(String::from_utf8_lossy(&body), expected, "{path}");
    }
}

/// What the chain asks the authorizer is upstream's RequestInfo of the path
/// (`k8s.io/apiserver/pkg/endpoints/request.RequestInfoFactory`).
#[tokio::test]
async fn the_authorizer_is_asked_about_the_request_as_upstream_parses_it() {
    let harness = Harness::new().await;
    let resource = |verb: &str,
                    group: &str,
                    version: &str,
                    resource: &str,
                    sub: &str,
                    ns: &str,
                    name: &str| Asked {
        user: "alice".into(),
        verb: verb.into(),
        group: group.into(),
        version: version.into(),
        resource: resource.into(),
        subresource: sub.into(),
        namespace: ns.into(),
        name: name.into(),
        path: String::new(),
        is_resource: true,
    };
    let rows = [
        (
            Method::GET,
            "/api/v1/namespaces/default/pods/p/log",
            resource("get", "", "v1", "pods", "log", "default", "p"),
        ),
        (
            Method::GET,
            "/api/v1/namespaces/default/configmaps?watch=true",
            resource("watch", "", "v1", "configmaps", "", "default", ""),
        ),
        (
            Method::GET,
            "/api/v1/namespaces/default/configmaps?watch=1",
            resource("watch", "", "v1", "configmaps", "", "default", ""),
        ),
        (
            Method::GET,
            "/api/v1/configmaps",
            resource("list", "", "v1", "configmaps", "", "", ""),
        ),
        (
            Method::DELETE,
            "/apis/apps/v1/namespaces/ns/deployments",
            resource(
                "deletecollection",
                "apps",
                "v1",
                "deployments",
                "",
                "ns",
                "",
            ),
        ),
        (
            Method::POST,
            "/apis/apps/v1/namespaces/ns/deployments",
            resource("create", "apps", "v1", "deployments", "", "ns", ""),
        ),
        (
            Method::PUT,
            "/apis/apps/v1/namespaces/ns/deployments/web/scale",
            resource("update", "apps", "v1", "deployments", "scale", "ns", "web"),
        ),
        (
            Method::PATCH,
            "/api/v1/namespaces/ns/configmaps/c",
            resource("patch", "", "v1", "configmaps", "", "ns", "c"),
        ),
        // A namespace's own path names the namespace both ways.
        (
            Method::GET,
            "/api/v1/namespaces/ns",
            resource("get", "", "v1", "namespaces", "", "ns", "ns"),
        ),
        (
            Method::GET,
            "/api/v1/namespaces/ns/pods/p/proxy/a/b",
            resource("get", "", "v1", "pods", "proxy", "ns", "p"),
        ),
        (
            Method::GET,
            "/api",
            Asked {
                is_resource: false,
                ..resource("get", "", "", "", "", "", "")
            },
        ),
        (
            Method::POST,
            "/apis/apps",
            Asked {
                is_resource: false,
                ..resource("post", "", "", "", "", "", "")
            },
        ),
    ];
    for (method, path, mut expected) in rows {
        // Upstream's attributes carry the URL's path for every request.
        expected.path = path.split('?').next().unwrap_or(path).to_string();
        harness.authorizer.asked.lock().expect("lock").clear();
        let (status, _, _) = harness.send(request(method, path, Some(ALICE), None)).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}");
        assert_eq!(harness.asked(), vec![expected], "{path}");
    }
}

/// `WithTimeoutForNonLongRunningRequests`: a request still running at
/// `--request-timeout` is answered 504 with the filter's hand-built Status;
/// long-running requests (watches) are not bounded by it.
#[tokio::test(start_paused = true)]
async fn a_request_that_outlives_the_request_timeout_is_504() {
    let harness = Harness::with(|api| api.with_request_timeout(Duration::from_secs(1))).await;
    let started = tokio::time::Instant::now();
    // A list at a revision the store has not reached waits (3 s) for it.
    let (status, headers, body) = harness
        .send(request(
            Method::GET,
            "/api/v1/namespaces/default/configmaps?resourceVersion=999999&resourceVersionMatch=NotOlderThan",
            Some(ADMIN),
            None,
        ))
        .await;
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(started.elapsed(), Duration::from_secs(1));
    assert_eq!(content_type(&headers), "application/json");
    assert_eq!(
        body,
        "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"Timeout: request did not complete within the allotted timeout\",\"reason\":\"Timeout\",\"details\":{},\"code\":504}\n"
    );

    // A watch outlives it.
    let response = harness
        .open(request(
            Method::GET,
            "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=5",
            Some(ADMIN),
            None,
        ))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let started = tokio::time::Instant::now();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    assert_eq!(body, "");
}

/// `WithPanicRecovery`: a panic anywhere in the chain is answered 500 with
/// `http.Error`'s plain text; the server goes on serving.
#[tokio::test]
async fn a_panic_is_500_and_the_server_goes_on() {
    let harness = Harness::new().await;
    let (status, headers, body) = harness
        .send(request(Method::GET, "/panic", Some(ADMIN), None))
        .await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(content_type(&headers), "text/plain; charset=utf-8");
    assert_eq!(
        headers.get("x-content-type-options").map(|v| v.as_bytes()),
        Some(&b"nosniff"[..])
    );
    // `WithAuditInit` is outside the panic recovery: the answer has its ID.
    let audit_id = headers.get("audit-id").map(|v| v.to_str().unwrap());
    assert!(
        audit_id.is_some_and(|id| uuid::Uuid::parse_str(id).is_ok()),
        "{audit_id:?}"
    );
    assert_eq!(
        body,
        "This request caused apiserver to panic. Look in the logs for details.\n"
    );
    let (status, _, _) = harness
        .send(request(
            Method::GET,
            "/api/v1/namespaces",
            Some(ADMIN),
            None,
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
}

/// Once a terminating server stops accepting requests: upstream's
/// `WithWaitGroup` answers 503 with `Retry-After: 1`, or with
/// `--shutdown-send-retry-after` its `WithRetryAfter` answers 429 (retry in
/// 5 s, and the HTTP/1 connection closes); health probes and metrics are
/// served to the end.
#[tokio::test]
async fn a_server_that_stopped_accepting_refuses_new_requests() {
    let harness = Harness::new().await;
    harness.api.lifecycle.advance(Phase::NotAcceptingNewRequest);
    let (status, headers, body) = harness
        .send(request(
            Method::GET,
            "/api/v1/namespaces",
            Some(ADMIN),
            None,
        ))
        .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        headers.get("retry-after").map(|v| v.as_bytes()),
        Some(&b"1"[..])
    );
    assert_eq!(
        body,
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"apiserver is shutting down\",\"reason\":\"ServiceUnavailable\",\"code\":503}\n"
    );
    let (status, _, _) = harness
        .send(request(Method::GET, "/healthz", Some(ADMIN), None))
        .await;
    assert_eq!(status, StatusCode::OK);

    let retry_after = ShutdownOptions {
        send_retry_after: true,
        ..Default::default()
    };
    let harness = Harness::build(retry_after, None, |api| api).await;
    harness.api.lifecycle.advance(Phase::NotAcceptingNewRequest);
    let (status, headers, body) = harness
        .send(request(
            Method::GET,
            "/api/v1/namespaces",
            Some(ADMIN),
            None,
        ))
        .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(content_type(&headers), "text/plain; charset=utf-8");
    assert_eq!(
        headers.get("retry-after").map(|v| v.as_bytes()),
        Some(&b"5"[..])
    );
    assert_eq!(
        headers.get("connection").map(|v| v.as_bytes()),
        Some(&b"close"[..])
    );
    assert_eq!(
        body,
        "The apiserver is shutting down, please try again later.\n"
    );
}

/// One watch event's type and resourceVersion, and when (since the watch
/// started) it arrived.
async fn watch_frames(mut body: Incoming) -> Vec<(String, String, Duration)> {
    let started = tokio::time::Instant::now();
    let mut frames = Vec::new();
    let mut pending = Vec::new();
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame.expect("frame").into_data() else {
            continue;
        };
        pending.extend_from_slice(&data);
        while let Some(end) = pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            let event: Value = serde_json::from_slice(&line).expect("an event");
            frames.push((
                event["type"].as_str().unwrap_or("").to_string(),
                event["object"]["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                started.elapsed(),
            ));
        }
    }
    frames.push(("END".into(), String::new(), started.elapsed()));
    frames
}

/// The watch cache's bookmarks (`cacheWatcher.nextBookmarkTime`): about
/// every minute with the revision everything up to has been sent, one 2 s
/// before the deadline, and the watch ends at `timeoutSeconds`.
#[tokio::test(start_paused = true)]
async fn a_watch_gets_bookmarks_every_minute_and_ends_at_its_timeout() {
    let harness = Harness::new().await;
    let configmap = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
    let (status, _, created) = harness
        .send(request(
            Method::POST,
            "/api/v1/namespaces/default/configmaps",
            Some(ADMIN),
            Some(configmap),
        ))
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let created: Value = serde_json::from_slice(&created).expect("json");
    let rv = created["metadata"]["resourceVersion"]
        .as_str()
        .expect("rv")
        .to_string();
    let response = harness
        .open(request(
            Method::GET,
            "/api/v1/namespaces/default/configmaps?watch=1&allowWatchBookmarks=true&timeoutSeconds=150",
            Some(ADMIN),
            None,
        ))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let frames = watch_frames(response.into_body()).await;
    let s = |v: &str| v.to_string();
    assert_eq!(frames[0], (s("ADDED"), rv.clone(), Duration::ZERO));
    let bookmarks = &frames[1..frames.len() - 1];
    assert_eq!(bookmarks.len(), 3, "{frames:?}");
    for (bookmark, due) in bookmarks.iter().zip([60, 120, 148]) {
        assert_eq!(
            (bookmark.0.as_str(), bookmark.1.as_str()),
            ("BOOKMARK", rv.as_str())
        );
        let at = bookmark.2.as_secs();
        assert!(
            (due - 1..=due).contains(&at),
            "bookmark at {at}s: {frames:?}"
        );
    }
    assert_eq!(
        frames.last(),
        Some(&(s("END"), String::new(), Duration::from_secs(150)))
    );
}
