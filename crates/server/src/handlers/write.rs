//! POST (create) and PUT (update).

use http::Response;
use hyper::body::Incoming;

use super::call::{Call, Result, decode_object, object_response, validate_fields};
use crate::response::Body;

pub async fn create(
    call: &Call<'_>,
    content_type: Option<&str>,
    body: Incoming,
) -> Result<Response<Body>> {
    let mut obj = decode_object(call, content_type, body).await?;
    let mut warnings = validate_fields(call, &mut obj)?;
    warnings.extend(call.rtype().strategy.warnings(&obj));
    let created = call.served.store.create(&call.ctx, obj).await?;
    Ok(object_response(call, 201, &created, &warnings))
}

pub async fn update(
    call: &Call<'_>,
    content_type: Option<&str>,
    body: Incoming,
) -> Result<Response<Body>> {
    let mut obj = decode_object(call, content_type, body).await?;
    let mut warnings = validate_fields(call, &mut obj)?;
    warnings.extend(call.rtype().strategy.warnings(&obj));
    let updated = call
        .served
        .store
        .update(&call.ctx, &call.info.name, obj)
        .await?;
    Ok(object_response(call, 200, &updated, &warnings))
}
