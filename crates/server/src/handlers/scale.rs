//! The `scale` subresource: an `autoscaling/v1` Scale view of a resource's replica
//! fields. Reads build the Scale from the object; writes (PUT, or any patch of the
//! Scale) set the object's spec replicas through the generic store.

use bytes::Bytes;
use http::Response;
use serde_json::{Value, json};

use apimachinery::{FieldError, FieldPath, StatusError, Subresource, meta};
use registry::ScalePaths;

use super::call::Call;
use crate::negotiate::{self, BodyKind};
use crate::response::{self, Body};

type Result<T> = std::result::Result<T, StatusError>;

fn segments(path: &str) -> impl Iterator<Item = &str> {
    path.trim_start_matches('.')
        .split('.')
        .filter(|s| !s.is_empty())
}

fn read<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    segments(path).try_fold(obj, |node, s| node.get(s))
}

fn write(obj: &mut Value, path: &str, value: Value) {
    let parts: Vec<&str> = segments(path).collect();
    let Some((last, parents)) = parts.split_last() else {
        return;
    };
    let mut node = obj;
    for p in parents {
        if !node.get(*p).is_some_and(Value::is_object) {
            node[*p] = json!({});
        }
        node = &mut node[*p];
    }
    node[*last] = value;
}

/// The Scale for an object.
fn scale_of(obj: &Value, paths: &ScalePaths) -> Value {
    let md = obj.get("metadata").cloned().unwrap_or(json!({}));
    let metadata: serde_json::Map<String, Value> = [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ]
    .iter()
    .filter_map(|k| md.get(*k).map(|v| (k.to_string(), v.clone())))
    .collect();
    let mut status =
        json!({"replicas": read(obj, &paths.status_replicas).and_then(Value::as_i64).unwrap_or(0)});
    if let Some(sel) = paths
        .label_selector
        .as_deref()
        .and_then(|p| read(obj, p))
        .and_then(selector_text)
    {
        status["selector"] = json!(sel);
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": {"replicas": read(obj, &paths.spec_replicas).and_then(Value::as_i64).unwrap_or(0)},
        "status": status,
    })
}

/// A custom resource's selector path holds the selector as text; a built-in
/// kind's (`spec.selector`) a `metav1.LabelSelector`, shown as upstream's
/// `LabelSelectorAsSelector(…).String()`.
fn selector_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Object(_) => apimachinery::selector::LabelSelector::from_json(value)
            .ok()
            .map(|s| s.to_string()),
        _ => None,
    }
}

fn desired_replicas(scale: &Value) -> Result<i64> {
    let replicas = scale
        .pointer("/spec/replicas")
        .cloned()
        .unwrap_or(Value::Null);
    match replicas.as_i64() {
        Some(r) if r >= 0 && r <= i64::from(i32::MAX) => Ok(r),
        _ => Err(StatusError::invalid(
            "autoscaling",
            "Scale",
            "",
            &vec![FieldError::invalid(
                &FieldPath::new("spec").child("replicas"),
                replicas,
                "must be greater than or equal to 0",
            )],
        )),
    }
}

pub async fn serve(
    call: &Call<'_>,
    content_type: Option<&str>,
    body: Bytes,
) -> Result<Response<Body>> {
    let Some(paths) = call.rtype().scale.clone() else {
        return Err(StatusError::path_not_found());
    };
    let store = &call.served.store;
    let name = &call.info.name;
    if call.info.verb == apimachinery::Verb::Get {
        let obj = store.get(&call.ctx, name).await?;
        return Ok(scale_response(call, &scale_of(&obj.value(), &paths)));
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
    let is_update = call.info.verb == apimachinery::Verb::Update;
    let mut ctx = call.ctx.clone();
    ctx.subresource = Subresource::Scale;
    let updated = store
        .update_with(&ctx, name, |current| {
            let scale = scale_of(current, &paths);
            let desired = if is_update {
                input.clone()
            } else {
                match kind {
                    BodyKind::JsonPatch => patch::json_patch::apply(&scale, &input),
                    _ => patch::merge_patch::apply(&scale, &input),
                }
                .map_err(|e| StatusError::new(422, "Invalid", e.to_string()))?
            };
            let wanted_rv = meta::resource_version(&desired);
            if !wanted_rv.is_empty() && wanted_rv != meta::resource_version(current) {
                return Err(StatusError::modified(&call.rtype().group_resource(), name));
            }
            let mut next = current.clone();
            write(
                &mut next,
                &paths.spec_replicas,
                json!(desired_replicas(&desired)?),
            );
            Ok(next)
        })
        .await?;
    Ok(scale_response(call, &scale_of(&updated.value(), &paths)))
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
