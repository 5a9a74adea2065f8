//! The filter chain: every request passes these stages, in this order, here and
//! nowhere else.
//!
//! 1. **Authentication** — who is asking: the connection's client certificate
//!    (worked out once per TLS connection), front-proxy headers, bearer tokens;
//!    `system:anonymous` without credentials (`--anonymous-auth`). Invalid
//!    credentials fail with 401, everywhere.
//! 2. **Audit** — requests the audit policy selects (by the authenticated
//!    user) are recorded: the impersonated user, the authorization decision,
//!    the response; every answer carries an `Audit-Id`.
//! 3. **Impersonation** — `Impersonate-*` headers make the request act as
//!    another identity if the caller may `impersonate` it (403 otherwise).
//! 4. **Authorization** — may this user do this: every request goes to the
//!    `Authorizer` (non-resource paths with the lower-cased HTTP method as
//!    verb). Fails with 403.
//! 5. **Timeout** — requests that are not long-running are bounded by
//!    `--request-timeout` (504).
//! 6. **Routing** — a claimed group-version goes to its `Delegation` (the
//!    aggregator's proxy), resource paths to `handlers::serve` (its verb
//!    handlers run **admission** inside the registry's write path: namespace
//!    lifecycle, then each type's `Admission`), everything else to `endpoints`.
//!
//! Every answer then gets the standard headers and is counted in the metrics.
//!
//! Hot path: every request passes here; stages allocate nothing they do not need.

use std::sync::Arc;

use http::{Request, Response, header};
use hyper::body::Incoming;

use apimachinery::{StatusError, Subresource, Verb};

use crate::api::Api;
use crate::audit;
use crate::authn::{Authenticated, PeerIdentity};
use crate::authz::{self, Attributes, Decision};
use crate::boxed::BoxedRequest;
use crate::delegation::Claim;
use crate::impersonation::{self, Refused};
use crate::lifecycle::{self, Phase};
use crate::query::Query;
use crate::request_info::{self, RequestInfo};
use crate::response::{self, Body};
use crate::user::UserInfo;
use crate::{endpoints, handlers};

#[cfg(test)]
mod tests;

/// A stage's early answer (an error `Status`, usually); boxed, as only the
/// unhappy path builds one.
type Rejected = Box<Response<Body>>;

fn reject(error: &StatusError) -> Rejected {
    Box::new(response::error(error))
}

/// What every stage may look at: parsed once, when the request arrives.
pub struct Scope {
    pub info: RequestInfo,
    pub path: String,
    pub query: Query,
    /// The authenticated user's name, kept only for the debug log line.
    user: Option<String>,
}

impl Scope {
    fn of(req: &Request<Incoming>) -> Scope {
        let path = req.uri().path().to_string();
        let query = Query::parse(req.uri().query());
        let info = request_info::parse(req.method().as_str(), &path, query.flag("watch"));
        Scope {
            info,
            path,
            query,
            user: None,
        }
    }
}

/// The request's audit ID: the client's `Audit-ID`, kept as given, or a new
/// UUID. Taken before the chain runs, as upstream's outermost filter
/// (`WithAuditInit`) takes it: even a panic's answer carries it.
pub fn audit_id(req: &Request<Incoming>) -> String {
    Audit::id(req)
}

/// The `Audit-Id` header of the request's answer.
pub fn set_audit_id(resp: &mut Response<Body>, audit_id: &str) {
    if let Ok(id) = http::HeaderValue::from_str(audit_id) {
        resp.headers_mut().insert(AUDIT_ID, id);
    }
}

/// Run `req`, whose audit ID is `audit_id` ([`audit_id`]), through the chain.
pub async fn handle(
    api: Arc<Api>,
    req: BoxedRequest,
    peer: &PeerIdentity,
    audit_id: &str,
) -> Response<Body> {
    let mut scope = Scope::of(&req);
    let long_running = Timeout::is_long_running(&scope.info, &req);
    let refused = match api.lifecycle.phase() {
        Phase::NotAcceptingNewRequest => ShuttingDown::refuse(&api, &req, &scope, long_running),
        _ => None,
    };
    // Counted while it runs: termination waits for these to finish.
    let _in_flight = (!long_running).then(|| api.lifecycle.track());
    let mut resp = match refused {
        Some(refused) => *refused,
        None => match stages(&api, req, &mut scope, peer, audit_id, long_running).await {
            Ok(resp) => resp,
            Err(rejected) => *rejected,
        },
    };
    response::add_standard_headers(&mut resp);
    set_audit_id(&mut resp, audit_id);
    let code = resp.status().as_u16();
    api.metrics.observe(&scope.info, code);
    if !matches!(scope.info.verb, Verb::None | Verb::Watch) {
        let user = scope.user.as_deref().unwrap_or("system:anonymous");
        tracing::debug!(verb = %scope.info.verb, path = %scope.path, code, user = %user, "request");
    }
    resp
}

async fn stages(
    api: &Api,
    mut req: BoxedRequest,
    scope: &mut Scope,
    peer: &PeerIdentity,
    audit_id: &str,
    long_running: bool,
) -> Result<Response<Body>, Rejected> {
    // A proxied request names its client to the backend (`X-Forwarded-For`).
    if scope.info.subresource == Subresource::Proxy
        && let Some(ip) = peer.remote_ip
    {
        req.extensions_mut().insert(crate::forward::ClientIp(ip));
    }
    let user = match Authentication::authenticate(api, peer, &req).await {
        Ok(user) => user,
        Err(rejected) => {
            Audit::unauthenticated(api, scope, &req, peer, audit_id);
            return Err(rejected);
        }
    };
    let audit = Audit::begin(api, scope, &req, peer, audit_id, &user);
    let answered = authorized_stages(api, req, scope, user, audit.as_ref(), long_running).await;
    match audit {
        None => answered,
        Some(audit) => Ok(Audit::finish(audit, answered, long_running).await),
    }
}

/// Impersonation, authorization, the timeout and routing.
async fn authorized_stages(
    api: &Api,
    mut req: BoxedRequest,
    scope: &mut Scope,
    user: UserInfo,
    audit: Option<&audit::Audit>,
    long_running: bool,
) -> Result<Response<Body>, Rejected> {
    let (user, original) = if impersonation::asks(req.headers()) {
        Impersonation::apply(api, &mut req, user).await?
    } else {
        (user, None)
    };
    if let (Some(audit), Some(_)) = (audit, &original) {
        audit.impersonated(&user);
    }
    if tracing::enabled!(tracing::Level::DEBUG) {
        scope.user = Some(user.name.clone());
    }
    let delegated = Routing::delegated(api, scope);
    Authorization::authorize(api, scope, req.method(), &user, audit).await?;
    if let Some(audit) = audit {
        req.extensions_mut().insert(audit.body.clone());
        req.extensions_mut().insert(audit.annotations.clone());
    }
    let query = std::mem::take(&mut scope.query);
    // Boxed once: the handler's future is large, and moved by value it would be
    // copied into every future that awaits it (built in the box: see `boxed`).
    let routed =
        crate::boxed::pin_in_place(|| Routing::route(api, req, scope, query, user, delegated));
    if long_running {
        Ok(routed.await)
    } else {
        Timeout::bound(api, routed).await
    }
}

/// Before the stages, once the server stopped accepting requests (see
/// `lifecycle`): what upstream's `WithRetryAfter` and `WithWaitGroup` filters
/// answer instead of serving. Health probes, metrics scrapes and other
/// kube-apiservers are served to the end.
struct ShuttingDown;

impl ShuttingDown {
    fn refuse(
        api: &Api,
        req: &Request<Incoming>,
        scope: &Scope,
        long_running: bool,
    ) -> Option<Rejected> {
        let user_agent = req
            .headers()
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok());
        if lifecycle::exempt(&scope.path, user_agent) {
            return None;
        }
        if api.lifecycle.options.send_retry_after {
            return Some(Box::new(Self::retry_after(req.version())));
        }
        // Upgraded connections (exec, port-forward) run on; watches end now,
        // and a new one would end at once.
        if long_running && scope.info.verb != Verb::Watch {
            return None;
        }
        let mut resp = response::error(&StatusError::service_unavailable(
            "apiserver is shutting down",
        ));
        let headers = resp.headers_mut();
        headers.insert(header::RETRY_AFTER, http::HeaderValue::from_static("1"));
        headers.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            http::HeaderValue::from_static("nosniff"),
        );
        Some(Box::new(resp))
    }

    /// `--shutdown-send-retry-after`'s answer: 429, retry in 5 s, and over
    /// HTTP/1 the connection closes after it (HTTP/2 has no such header; the
    /// connection gets its GOAWAY when the listener closes).
    fn retry_after(version: http::Version) -> Response<Body> {
        let mut resp = response::respond(
            429,
            "text/plain; charset=utf-8",
            "The apiserver is shutting down, please try again later.\n",
        );
        let headers = resp.headers_mut();
        headers.insert(header::RETRY_AFTER, http::HeaderValue::from_static("5"));
        headers.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            http::HeaderValue::from_static("nosniff"),
        );
        if version < http::Version::HTTP_2 {
            headers.insert(header::CONNECTION, http::HeaderValue::from_static("close"));
        }
        resp
    }
}

/// Stage 1: who is asking.
struct Authentication;

impl Authentication {
    async fn authenticate(
        api: &Api,
        peer: &PeerIdentity,
        req: &Request<Incoming>,
    ) -> Result<UserInfo, Rejected> {
        let authenticated = match api.authn.authenticate(peer, req.headers()) {
            Authenticated::UnknownToken => api.authn.review(req.headers()).await,
            known => known,
        };
        match authenticated {
            Authenticated::User(user) => Ok(user),
            Authenticated::Nobody if api.anonymous => Ok(UserInfo::anonymous()),
            Authenticated::Nobody | Authenticated::Invalid | Authenticated::UnknownToken => {
                Err(reject(&StatusError::unauthorized("Unauthorized")))
            }
        }
    }
}

/// Stage 3: act as someone else, if allowed to.
struct Impersonation;

impl Impersonation {
    /// The user the request acts as, and the authenticated user when that is
    /// someone else (`impersonation::asks` tells when to ask).
    async fn apply(
        api: &Api,
        req: &mut Request<Incoming>,
        user: UserInfo,
    ) -> Result<(UserInfo, Option<UserInfo>), Rejected> {
        // A cheap copy (shared bytes): rendered only for an error.
        let uri = req.uri().clone();
        match impersonation::apply(api.authorizer.as_ref(), req.headers_mut(), &uri, user).await {
            Ok(applied) => Ok(applied),
            Err(Refused::Forbidden(error)) => Err(reject(&error)),
            Err(Refused::Internal(message)) => {
                let mut resp =
                    response::respond(500, "text/plain; charset=utf-8", format!("{message}\n"));
                resp.headers_mut().insert(
                    header::HeaderName::from_static("x-content-type-options"),
                    http::HeaderValue::from_static("nosniff"),
                );
                Err(Box::new(resp))
            }
        }
    }
}

/// Stage 2: record the request in the audit log, if the policy says so.
struct Audit;

/// The response header carrying the request's audit ID (Go writes `Audit-Id`).
const AUDIT_ID: http::HeaderName = http::HeaderName::from_static("audit-id");

impl Audit {
    /// The client's `Audit-ID`, kept as given, or a new UUID.
    fn id(req: &Request<Incoming>) -> String {
        req.headers()
            .get(AUDIT_ID)
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.is_empty())
            .map_or_else(apimachinery::object_meta::new_uid, str::to_string)
    }

    fn arrival<'a>(
        scope: &'a Scope,
        req: &'a Request<Incoming>,
        peer: &PeerIdentity,
        audit_id: &'a str,
        request_uri: &'a str,
    ) -> audit::Arrival<'a> {
        let verb = authz::request_verb(&scope.info, req.method());
        let mut source_ips: Vec<String> = req
            .headers()
            .get("x-forwarded-for")
            .and_then(|v| v.to_str().ok())
            .into_iter()
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .filter(|ip| ip.parse::<std::net::IpAddr>().is_ok())
            .map(String::from)
            .collect();
        if let Some(remote) = peer.remote_ip.map(|ip| ip.to_string())
            && source_ips.last() != Some(&remote)
        {
            source_ips.push(remote);
        }
        audit::Arrival {
            info: &scope.info,
            request_uri,
            verb,
            path: &scope.path,
            user_agent: req
                .headers()
                .get(header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or(""),
            source_ips,
            audit_id,
        }
    }

    fn begin(
        api: &Api,
        scope: &Scope,
        req: &Request<Incoming>,
        peer: &PeerIdentity,
        audit_id: &str,
        user: &UserInfo,
    ) -> Option<audit::Audit> {
        let auditor = api.audit.as_ref()?;
        let uri = request_uri(req);
        auditor.begin(Self::arrival(scope, req, peer, audit_id, &uri), user, None)
    }

    fn unauthenticated(
        api: &Api,
        scope: &Scope,
        req: &Request<Incoming>,
        peer: &PeerIdentity,
        audit_id: &str,
    ) {
        if let Some(auditor) = &api.audit {
            let uri = request_uri(req);
            let status = serde_json::json!({"status": "Failure", "message": "Unauthorized", "reason": "Unauthorized", "code": 401});
            auditor.unauthenticated(Self::arrival(scope, req, peer, audit_id, &uri), &status);
        }
    }

    /// Record the answer: a whole one is read (it is in memory already) for its
    /// status and, by level, its object; a streamed one (a watch) is recorded as
    /// started now and complete when its body ends.
    async fn finish(
        audit: audit::Audit,
        answered: Result<Response<Body>, Rejected>,
        long_running: bool,
    ) -> Response<Body> {
        let resp = match answered {
            Ok(resp) => resp,
            Err(rejected) => *rejected,
        };
        let code = resp.status().as_u16();
        if long_running && code < 300 {
            audit.responded(code, None);
            audit.started();
            let (parts, body) = resp.into_parts();
            let guard = CompleteOnDrop(audit);
            let body = http_body_util::BodyExt::map_frame(body, move |frame| {
                let _ = &guard;
                frame
            });
            return Response::from_parts(parts, http_body_util::BodyExt::boxed_unsync(body));
        }
        let (parts, body) = resp.into_parts();
        let bytes = http_body_util::BodyExt::collect(body)
            .await
            .map(|c| c.to_bytes())
            .unwrap_or_default();
        let encoded = parts.headers.contains_key(header::CONTENT_ENCODING);
        audit.responded(code, (!encoded).then_some(&bytes[..]));
        if long_running {
            audit.started();
        }
        audit.complete();
        Response::from_parts(parts, response::full(bytes))
    }
}

/// `req.URL.RequestURI()`: the path and the raw query.
fn request_uri(req: &Request<Incoming>) -> String {
    req.uri().path_and_query().map_or_else(
        || req.uri().path().to_string(),
        |pq| pq.as_str().to_string(),
    )
}

/// Emits ResponseComplete when a streamed body ends (is dropped).
struct CompleteOnDrop(audit::Audit);

impl Drop for CompleteOnDrop {
    fn drop(&mut self) {
        self.0.complete();
    }
}

/// Stage 4: may this user do this.
struct Authorization;

impl Authorization {
    async fn authorize(
        api: &Api,
        scope: &Scope,
        method: &http::Method,
        user: &UserInfo,
        audit: Option<&audit::Audit>,
    ) -> Result<(), Rejected> {
        let attributes = Attributes::of(&scope.info, &scope.path, method, user);
        let decision = match api.authorizer.decide_now(&attributes) {
            Some(decision) => decision,
            None => api.authorizer.authorize(&attributes).await,
        };
        if let Some(audit) = audit {
            audit.authorized(decision.is_allowed(), decision.reason());
        }
        match decision {
            Decision::Allow(_) => Ok(()),
            denied => Err(reject(&authz::forbidden(&attributes, denied.reason()))),
        }
    }
}

/// Stage 5: no request that is not long-running outlives `--request-timeout`.
struct Timeout;

impl Timeout {
    /// Upstream's long-running check: watches and the connect verbs.
    fn is_long_running(info: &RequestInfo, req: &Request<Incoming>) -> bool {
        info.verb == Verb::Watch
            || info.subresource.is_connection()
            || req.headers().contains_key(header::UPGRADE)
    }

    async fn bound(
        api: &Api,
        routed: impl Future<Output = Response<Body>>,
    ) -> Result<Response<Body>, Rejected> {
        Self::within(api.request_timeout, routed)
            .await
            .ok_or_else(Self::timed_out)
    }

    /// `tokio::time::timeout(limit, work)` (`None` when it ran out), with its
    /// timer made only if `work` is not done when first polled: most answers
    /// are, and a timer made is registered and torn down for nothing. The
    /// deadline is taken where the plain timeout takes it.
    async fn within<T>(limit: std::time::Duration, work: impl Future<Output = T>) -> Option<T> {
        use std::task::Poll;
        let deadline = tokio::time::Instant::now().checked_add(limit);
        let mut work = std::pin::pin!(work);
        let mut timer = std::pin::pin!(None::<tokio::time::Sleep>);
        std::future::poll_fn(|cx| {
            let had_budget_before = tokio::task::coop::has_budget_remaining();
            if let Poll::Ready(done) = work.as_mut().poll(cx) {
                return Poll::Ready(Some(done));
            }
            // A deadline past what `Instant` holds is none (as tokio's).
            let Some(deadline) = deadline else {
                return Poll::Pending;
            };
            if timer.is_none() {
                timer.set(Some(tokio::time::sleep_until(deadline)));
            }
            let Some(sleep) = timer.as_mut().as_pin_mut() else {
                return Poll::Pending;
            };
            // As tokio's: work that used up the task's budget does not keep
            // the timer from being checked.
            let fired = if had_budget_before && !tokio::task::coop::has_budget_remaining() {
                std::pin::pin!(tokio::task::coop::unconstrained(sleep)).poll(cx)
            } else {
                sleep.poll(cx)
            };
            fired.map(|()| None)
        })
        .await
    }

    /// What upstream's timeout filter writes (a Status without `kind`, as it
    /// builds it by hand).
    fn timed_out() -> Rejected {
        Box::new(response::json(
            504,
            bytes::Bytes::from_static(
                b"{\"metadata\":{},\"status\":\"Failure\",\"message\":\"Timeout: request did not complete within the allotted timeout\",\"reason\":\"Timeout\",\"details\":{},\"code\":504}\n",
            ),
        ))
    }
}

/// Stage 6: who answers.
struct Routing;

impl Routing {
    /// The group-version another server answers this request for: resources of
    /// a claimed group-version, and its discovery document.
    fn delegated(api: &Api, scope: &Scope) -> Option<(String, String)> {
        let delegation = api.delegation.as_ref()?;
        let info = &scope.info;
        if info.is_resource {
            return (!info.group.is_empty()
                && delegation.claim(&info.group, &info.version).is_some())
            .then(|| (info.group.to_string(), info.version.to_string()));
        }
        let mut parts = scope.path.trim_matches('/').split('/');
        let (Some("apis"), Some(group), Some(version), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return None;
        };
        // A backend that is down still has its last discovery document served.
        let claim = delegation.claim(group, version)?;
        (claim == Claim::Available
            || api
                .catalog()
                .group_version_discovery(group, version)
                .is_none())
        .then(|| (group.to_string(), version.to_string()))
    }

    async fn route(
        api: &Api,
        req: BoxedRequest,
        scope: &Scope,
        query: Query,
        user: UserInfo,
        delegated: Option<(String, String)>,
    ) -> Response<Body> {
        if let (Some((group, version)), Some(delegation)) = (delegated, &api.delegation) {
            return delegation.forward(&group, &version, *req, &user).await;
        }
        if scope.info.is_resource {
            return handlers::serve(api, req, &scope.info, user, query).await;
        }
        endpoints::serve(api, &req, &scope.path)
    }
}

/// The stages' own shortcuts, each held equal to the plain way.
#[cfg(test)]
mod shortcut_tests {
    use super::*;
    use std::time::Duration;

    /// The request timeout's lazy timer answers as `tokio::time::timeout` does:
    /// at once, within the limit, past it, and with a limit too large for a
    /// deadline.
    #[tokio::test(start_paused = true)]
    async fn the_lazy_timeout_equals_tokios() {
        let limit = Duration::from_secs(60);
        let after = |d: Duration| async move {
            tokio::time::sleep(d).await;
            d
        };
        for d in [
            Duration::ZERO,
            Duration::from_secs(1),
            Duration::from_secs(59),
            Duration::from_secs(61),
            Duration::from_secs(600),
        ] {
            let start = tokio::time::Instant::now();
            let plain = tokio::time::timeout(limit, after(d)).await.ok();
            let plain_took = start.elapsed();
            let start = tokio::time::Instant::now();
            let lazy = Timeout::within(limit, after(d)).await;
            assert_eq!((lazy, start.elapsed()), (plain, plain_took), "{d:?}");
        }
        assert_eq!(
            Timeout::within(Duration::MAX, after(Duration::from_secs(3600))).await,
            Some(Duration::from_secs(3600))
        );
        assert_eq!(Timeout::within(limit, std::future::ready(7)).await, Some(7));
    }

    /// Work that uses up the task's budget on every poll still times out (as
    /// with tokio's timeout, which checks its timer unconstrained then).
    #[tokio::test]
    async fn busy_work_still_times_out() {
        let busy = async {
            loop {
                tokio::task::coop::consume_budget().await;
            }
        };
        let bounded = Timeout::within(Duration::from_millis(20), busy);
        let outcome = tokio::time::timeout(Duration::from_secs(10), bounded).await;
        assert_eq!(outcome.ok(), Some(None::<()>));
    }
}
