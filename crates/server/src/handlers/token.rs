//! `serviceaccounts/{name}/token`: a TokenRequest answered with a signed token.

use bytes::Bytes;
use http::Response;
use serde_json::Value;

use apimachinery::StatusError;

use super::call::{Call, Result};
use crate::negotiate;
use crate::response::{self, Body};

/// `serviceaccounts/<name>/token`: a TokenRequest answered with a signed token.
pub async fn token_request(
    call: &Call<'_>,
    content_type: Option<&str>,
    body: &[u8],
) -> Result<Response<Body>> {
    let request = negotiate::decode(negotiate::body_kind(content_type)?, body)?;
    if let Some(kind) = request.get("kind").and_then(Value::as_str)
        && kind != "TokenRequest"
    {
        return Err(StatusError::bad_request(format!(
            "the body must be a TokenRequest, not a {kind}"
        )));
    }
    let tokens = call.api.authn.service_account_tokens().ok_or_else(|| {
        StatusError::service_unavailable("service-account tokens are not configured")
    })?;
    let sa = call.served.store.get(&call.ctx, &call.info.name).await?;
    let answer = tokens.request(&sa.value(), &request)?;
    Ok(response::json(
        201,
        Bytes::from(serde_json::to_vec(&answer).unwrap_or_default()),
    ))
}
