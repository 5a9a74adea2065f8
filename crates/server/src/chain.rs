//! The filter chain: every request passes these stages, in this order, here and
//! nowhere else.
//!
//! 1. **Authentication** — who is asking: the connection's client certificate
//!    (worked out once per TLS connection), front-proxy headers, bearer tokens;
//!    `system:anonymous` without credentials (`--anonymous-auth`). Invalid
//!    credentials fail with 401, everywhere.
//! 2. **Impersonation** — `Impersonate-*` headers make the request act as
//!    another identity if the caller may `impersonate` it (403 otherwise).
//! 3. **Audit** — the place the audit log's stage takes.
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
use std::time::Instant;

use http::{Request, Response, header};
use hyper::body::Incoming;

use apimachinery::{StatusError, Verb};

use crate::api::Api;
use crate::authn::{Authenticated, PeerIdentity, UserInfo};
use crate::authz::{self, Attributes, Decision};
use crate::delegation::Claim;
use crate::impersonation::{self, Refused};
use crate::query::Query;
use crate::request_info::{self, RequestInfo};
use crate::response::{self, Body};
use crate::{endpoints, handlers};

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

/// Run `req` through the chain.
pub async fn handle(api: Arc<Api>, req: Request<Incoming>, peer: &PeerIdentity) -> Response<Body> {
    let started = Instant::now();
    let mut scope = Scope::of(&req);
    let mut resp = match stages(&api, req, &mut scope, peer).await {
        Ok(resp) => resp,
        Err(rejected) => *rejected,
    };
    response::add_standard_headers(&mut resp);
    let code = resp.status().as_u16();
    api.metrics.observe(&scope.info, code, started.elapsed());
    if !matches!(scope.info.verb, Verb::None | Verb::Watch) {
        let user = scope.user.as_deref().unwrap_or("system:anonymous");
        tracing::debug!(verb = %scope.info.verb, path = %scope.path, code, user = %user, "request");
    }
    resp
}

async fn stages(
    api: &Api,
    req: Request<Incoming>,
    scope: &mut Scope,
    peer: &PeerIdentity,
) -> Result<Response<Body>, Rejected> {
    let user = Authentication::authenticate(api, peer, &req)?;
    let (req, user, _original) = Impersonation::apply(api, req, user).await?;
    if tracing::enabled!(tracing::Level::DEBUG) {
        scope.user = Some(user.name.clone());
    }
    let delegated = Routing::delegated(api, scope);
    Authorization::authorize(api, scope, req.method(), &user).await?;
    let long_running = Timeout::is_long_running(&scope.info, &req);
    let query = std::mem::take(&mut scope.query);
    let routed = Routing::route(api, req, scope, query, user, delegated);
    if long_running {
        Ok(routed.await)
    } else {
        Timeout::bound(api, routed).await
    }
}

/// Stage 1: who is asking.
struct Authentication;

impl Authentication {
    fn authenticate(
        api: &Api,
        peer: &PeerIdentity,
        req: &Request<Incoming>,
    ) -> Result<UserInfo, Rejected> {
        match api.authn.authenticate(peer, req.headers()) {
            Authenticated::User(user) => Ok(user),
            Authenticated::Nobody if api.anonymous => Ok(UserInfo::anonymous()),
            Authenticated::Nobody | Authenticated::Invalid => {
                Err(reject(&StatusError::unauthorized("Unauthorized")))
            }
        }
    }
}

/// Stage 2: act as someone else, if allowed to.
struct Impersonation;

impl Impersonation {
    /// The request and the user it acts as, and the authenticated user when
    /// that is someone else.
    async fn apply(
        api: &Api,
        mut req: Request<Incoming>,
        user: UserInfo,
    ) -> Result<(Request<Incoming>, UserInfo, Option<UserInfo>), Rejected> {
        let uri = req.uri().to_string();
        match impersonation::apply(api.authorizer.as_ref(), req.headers_mut(), &uri, user).await {
            Ok((user, original)) => Ok((req, user, original)),
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

/// Stage 4: may this user do this.
struct Authorization;

impl Authorization {
    async fn authorize(
        api: &Api,
        scope: &Scope,
        method: &http::Method,
        user: &UserInfo,
    ) -> Result<(), Rejected> {
        let attributes = Attributes::of(&scope.info, &scope.path, method, user);
        match api.authorizer.authorize(&attributes).await {
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
        tokio::time::timeout(api.request_timeout, routed)
            .await
            .map_err(|_| Self::timed_out())
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
            .then(|| (info.group.clone(), info.version.clone()));
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
        req: Request<Incoming>,
        scope: &Scope,
        query: Query,
        user: UserInfo,
        delegated: Option<(String, String)>,
    ) -> Response<Body> {
        if let (Some((group, version)), Some(delegation)) = (delegated, &api.delegation) {
            return delegation.forward(&group, &version, req, &user).await;
        }
        if scope.info.is_resource {
            return handlers::serve(api, req, &scope.info, user, query).await;
        }
        endpoints::serve(api, &req, &scope.path)
    }
}
