//! POST (create) and PUT (update).

use http::Response;
use hyper::body::Incoming;

use super::call::{Call, Result, decode_body, object_response, validate_fields, with_warnings};
use crate::response::Body;

pub async fn create(
    call: &Call<'_>,
    content_type: Option<&str>,
    body: Incoming,
) -> Result<Response<Body>> {
    let (mut obj, body) = decode_body(call, content_type, body).await?;
    let fields = validate_fields(call, &mut obj, Some(&body))?;
    let mut warnings = fields.clone();
    warnings.extend(call.rtype().strategy.warnings(&obj));
    let created = call.served.store.create(&call.ctx, obj).await;
    let result = created.map(|created| object_response(call, 201, &created, &warnings));
    with_warnings(call, result, &fields)
}

pub async fn update(
    call: &Call<'_>,
    content_type: Option<&str>,
    body: Incoming,
) -> Result<Response<Body>> {
    let (mut obj, body) = decode_body(call, content_type, body).await?;
    let fields = validate_fields(call, &mut obj, Some(&body))?;
    let mut warnings = fields.clone();
    warnings.extend(call.rtype().strategy.warnings(&obj));
    let updated = call
        .served
        .store
        .update(&call.ctx, &call.info.name, obj)
        .await;
    let result = updated.map(|updated| object_response(call, 200, &updated, &warnings));
    with_warnings(call, result, &fields)
}
