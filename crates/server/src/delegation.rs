//! Requests another server answers. The aggregator claims the group-versions of
//! service-backed APIServices; the filter chain hands such a request (and the
//! discovery document of a claimed group-version) to the `Delegation` after
//! authentication and authorization, instead of routing it here.

use http::{Request, Response};
use hyper::body::Incoming;

use crate::response::Body;
use crate::user::UserInfo;

/// What another server's claim on a group-version looks like right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// Requests are forwarded.
    Available,
    /// Claimed, but nothing answers: requests get 503.
    Unavailable,
}

#[async_trait::async_trait]
pub trait Delegation: Send + Sync + 'static {
    /// Whether, and how, `group/version` is served elsewhere.
    fn claim(&self, group: &str, version: &str) -> Option<Claim>;

    /// Answer a request for a claimed group-version on behalf of `user`.
    async fn forward(
        &self,
        group: &str,
        version: &str,
        req: Request<Incoming>,
        user: &UserInfo,
    ) -> Response<Body>;
}
