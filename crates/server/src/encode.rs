//! Encoding objects and lists in the negotiated representation. JSON lists are
//! spliced from each object's cached bytes rather than re-serialized.
//!
//! Hot path: every response body; objects' cached bytes are spliced, not re-serialized.

use bytes::{BufMut, Bytes, BytesMut};
use serde_json::{Value, json};
use std::sync::Arc;

use registry::table;
use registry::{Object, ResourceType};

use crate::negotiate::{Output, to_yaml};

/// Options that shape Table output.
#[derive(Debug, Clone, Default)]
pub struct TableOptions {
    /// `includeObject`: None, Metadata (default) or Object.
    pub include_object: String,
    /// Omit column definitions (watch events after the first).
    pub no_headers: bool,
}

pub struct ListMeta {
    pub resource_version: i64,
    pub continue_token: Option<String>,
    pub remaining: Option<i64>,
}

fn list_metadata(meta: &ListMeta) -> Value {
    let mut m = json!({"resourceVersion": meta.resource_version.to_string()});
    if let Some(c) = &meta.continue_token {
        m["continue"] = json!(c);
    }
    if let Some(r) = meta.remaining {
        m["remainingItemCount"] = json!(r);
    }
    m
}

pub fn table(
    rtype: &ResourceType,
    objects: &[&Value],
    version: &str,
    metadata: Value,
    opts: &TableOptions,
) -> Value {
    let include = if opts.include_object.is_empty() {
        "Metadata"
    } else {
        opts.include_object.as_str()
    };
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| table::row(rtype, o, include))
        .collect();
    let mut t = json!({
        "kind": "Table",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": metadata,
        "rows": rows,
    });
    if !opts.no_headers {
        t["columnDefinitions"] = json!(table::column_definitions(rtype));
    }
    t
}

/// One object (GET, create, update, patch responses, and watch event objects).
pub fn object(output: &Output, rtype: &ResourceType, obj: &Object, opts: &TableOptions) -> Bytes {
    match output {
        // Without the newline: watch frames embed it (responses add it).
        Output::Json => obj.json().clone(),
        Output::Yaml => Bytes::from(to_yaml(&obj.value())),
        Output::Table(v) => {
            let value = obj.value();
            let md = json!({"resourceVersion": apimachinery::meta::resource_version(&value)});
            to_bytes(&table(rtype, &[&value], v, md, opts))
        }
        Output::PartialMetadata(v) => {
            let mut p = table::partial_object_metadata(&obj.value());
            p["apiVersion"] = json!(format!("meta.k8s.io/{v}"));
            to_bytes(&p)
        }
    }
}

pub fn list(
    output: &Output,
    rtype: &ResourceType,
    items: &[Arc<Object>],
    meta: &ListMeta,
    opts: &TableOptions,
) -> Bytes {
    match output {
        Output::Json => json_list(rtype, items, meta),
        Output::Yaml => {
            let decoded: Vec<Arc<Value>> = items.iter().map(|o| o.value()).collect();
            let items: Vec<&Value> = decoded.iter().map(|v| v.as_ref()).collect();
            let v = json!({
                "kind": rtype.list_kind(),
                "apiVersion": rtype.api_version(),
                "metadata": list_metadata(meta),
                "items": items,
            });
            Bytes::from(to_yaml(&v))
        }
        Output::Table(v) => {
            let decoded: Vec<Arc<Value>> = items.iter().map(|o| o.value()).collect();
            let values: Vec<&Value> = decoded.iter().map(|v| v.as_ref()).collect();
            to_bytes(&table(rtype, &values, v, list_metadata(meta), opts))
        }
        Output::PartialMetadata(v) => {
            let items: Vec<Value> = items
                .iter()
                .map(|o| {
                    let mut p = table::partial_object_metadata(&o.value());
                    p["apiVersion"] = json!(format!("meta.k8s.io/{v}"));
                    p
                })
                .collect();
            to_bytes(&json!({
                "kind": "PartialObjectMetadataList",
                "apiVersion": format!("meta.k8s.io/{v}"),
                "metadata": list_metadata(meta),
                "items": items,
            }))
        }
    }
}

fn json_list(rtype: &ResourceType, items: &[Arc<Object>], meta: &ListMeta) -> Bytes {
    let head = format!(
        "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{},\"items\":[",
        Value::String(rtype.list_kind()),
        Value::String(rtype.api_version()),
        list_metadata(meta)
    );
    let size: usize = items.iter().map(|o| o.json().len() + 1).sum();
    let mut buf = BytesMut::with_capacity(head.len() + size + 3);
    buf.put_slice(head.as_bytes());
    for (i, o) in items.iter().enumerate() {
        if i > 0 {
            buf.put_u8(b',');
        }
        buf.put_slice(o.json());
    }
    buf.put_slice(b"]}\n");
    buf.freeze()
}

/// A JSON response body, newline-terminated as Go's JSON encoder writes it.
pub fn to_bytes(v: &Value) -> Bytes {
    let mut json = apimachinery::meta::to_json_vec(v);
    json.push(b'\n');
    Bytes::from(json)
}

/// `json` newline-terminated (a copy), for a response body.
pub fn with_newline(json: &Bytes) -> Bytes {
    let mut buf = BytesMut::with_capacity(json.len() + 1);
    buf.put_slice(json);
    buf.put_u8(b'\n');
    buf.freeze()
}
