//! The `scale` subresource over HTTP: decode the Scale (or the patch of one),
//! call `registry::scale`, encode the Scale it answers.

use bytes::Bytes;
use http::Response;
use serde_json::Value;

use apimachinery::StatusError;
use registry::scale::{Scale, ScaleChange};

use super::call::Call;
use crate::negotiate::{self, BodyKind};
use crate::response::{self, Body};

type Result<T> = std::result::Result<T, StatusError>;

pub async fn serve(
    call: &Call<'_>,
    content_type: Option<&str>,
    body: Bytes,
) -> Result<Response<Body>> {
    let scale = Scale::of(&call.served.store).ok_or_else(StatusError::path_not_found)?;
    let name = &call.info.name;
    if call.info.verb == apimachinery::Verb::Get {
        return Ok(scale_response(call, &scale.get(&call.ctx, name).await?));
    }
    let kind = negotiate::body_kind(content_type)?;
    let input = match kind {
        BodyKind::JsonPatch => serde_json::from_slice::<Value>(&body)
            .map_err(|e| StatusError::bad_request(format!("error decoding patch: {e}")))?,
        // A Scale body: JSON (merge and apply patches too), YAML or protobuf.
        _ => negotiate::decode(
            if matches!(kind, BodyKind::Yaml | BodyKind::Protobuf) {
                kind
            } else {
                BodyKind::Json
            },
            &body,
        )?,
    };
    let change = if call.info.verb == apimachinery::Verb::Update {
        ScaleChange::Replace(input)
    } else if kind == BodyKind::JsonPatch {
        ScaleChange::JsonPatch(input)
    } else {
        ScaleChange::MergePatch(input)
    };
    let updated = scale.update(&call.ctx, name, &change).await?;
    Ok(scale_response(call, &updated))
}

/// Scale responses are JSON, YAML or protobuf (never a Table).
fn scale_response(call: &Call<'_>, scale: &Value) -> Response<Body> {
    let content_type = call.output.content_type_of_values();
    response::respond(
        200,
        &content_type,
        crate::encode::value(&call.output, scale),
    )
}
