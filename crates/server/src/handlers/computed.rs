//! Serving computed resources (a [`registry::Provider`]): `get` and `list` answered
//! by the provider, with label and field selectors, tables and every output format;
//! other verbs are 405.

use std::sync::Arc;

use apimachinery::{StatusError, Verb, meta};
use registry::{Object, Provider};
use serde_json::{Value, json};

use super::call::{Call, object_response};
use crate::encode::{self, ListMeta};
use crate::response::{self, Body};

type Result<T> = std::result::Result<T, StatusError>;

pub async fn serve(call: &Call<'_>, provider: &dyn Provider) -> Result<http::Response<Body>> {
    let namespace = call.ctx.namespace.as_str();
    match call.info.verb {
        Verb::Get => {
            let name = &call.info.name;
            let obj = provider
                .get(namespace, name)
                .await?
                .ok_or_else(|| StatusError::not_found(&call.rtype().group_resource(), name))?;
            Ok(object_response(
                call,
                200,
                &Object::new(typed(call, obj)),
                &[],
            ))
        }
        Verb::List => {
            let opts = call.query.list_options()?;
            let items: Vec<Arc<Object>> = provider
                .list(namespace)
                .await?
                .into_iter()
                .map(|o| typed(call, o))
                .filter(|o| {
                    opts.label_selector
                        .as_ref()
                        .is_none_or(|s| s.matches(meta::labels(o)))
                        && opts.field_selector.as_ref().is_none_or(|s| {
                            s.matches(|field| match field {
                                "metadata.name" => Some(meta::name(o).to_string()),
                                "metadata.namespace" => Some(meta::namespace(o).to_string()),
                                _ => None,
                            })
                        })
                })
                .map(|o| Arc::new(Object::new(o)))
                .collect();
            let body = encode::list(
                &call.output,
                call.rtype(),
                &items,
                &ListMeta {
                    resource_version: 0,
                    continue_token: None,
                    remaining: None,
                },
                &call.table,
            );
            Ok(response::maybe_gzip(
                call.accept_encoding.as_deref(),
                200,
                &call.output.content_type(),
                body,
            ))
        }
        verb => Err(StatusError::method_not_supported(
            &call.rtype().group_resource(),
            verb.as_str(),
        )),
    }
}

/// The provider's object with its `apiVersion` and `kind` filled in.
fn typed(call: &Call<'_>, mut obj: Value) -> Value {
    let t = call.rtype();
    if let Some(map) = obj.as_object_mut() {
        map.entry("apiVersion")
            .or_insert_with(|| json!(format!("{}/{}", t.group, t.version)));
        map.entry("kind").or_insert_with(|| json!(t.kind));
    }
    obj
}
