//! GET of an object and of a collection (LIST).

use http::Response;

use super::call::{Call, Result, object_response};
use crate::encode::{self, ListMeta};
use crate::negotiate::Output;
use crate::response::{self, Body};

pub async fn get(call: &Call<'_>) -> Result<Response<Body>> {
    let obj = call.served.store.get(&call.ctx, &call.info.name).await?;
    Ok(object_response(call, 200, &obj, &[]))
}

pub async fn list(call: &Call<'_>) -> Result<Response<Body>> {
    let opts = call.query.list_options()?;
    let result = call.served.store.list(&call.ctx, opts).await?;
    let meta = ListMeta {
        resource_version: result.resource_version,
        continue_token: result.continue_token,
        remaining: result.remaining,
    };
    if matches!(call.output, Output::Json) {
        let chunks = encode::JsonListChunks::new(call.rtype(), result.items, &meta);
        let accept = call.accept_encoding.as_deref();
        let content_type = call.output.content_type();
        let len = chunks.body_len();
        if len > encode::LIST_CHUNK && !response::gzips(accept, len) {
            return Ok(response::streamed(200, &content_type, chunks));
        }
        return Ok(response::maybe_gzip(
            accept,
            200,
            &content_type,
            chunks.whole(),
        ));
    }
    let body = encode::list(
        &call.output,
        call.rtype(),
        &result.items,
        &meta,
        &call.table,
    );
    Ok(response::maybe_gzip(
        call.accept_encoding.as_deref(),
        200,
        &call.output.content_type(),
        body,
    ))
}
