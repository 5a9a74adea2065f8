//! Encoding objects and lists in the negotiated representation. JSON lists are
//! spliced from each object's cached bytes rather than re-serialized.
//!
//! Hot path: every response body; objects' cached bytes are spliced, not re-serialized.

use bytes::{BufMut, Bytes};
use serde_json::{Value, json};
use std::sync::Arc;

use registry::encoding::tls_copy_buffer;
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
        Output::Protobuf => protobuf_bytes(&obj.value()),
    }
}

/// Any value (an object, a list, a Status) in the negotiated representation,
/// newline-terminated as JSON.
pub fn value(output: &Output, value: &Value) -> Bytes {
    match output {
        Output::Yaml => Bytes::from(to_yaml(value)),
        Output::Protobuf => protobuf_bytes(value),
        // `to_bytes` ends with the one newline Go's encoder writes.
        _ => to_bytes(value),
    }
}

/// `value` as protobuf. Only kinds with a protobuf form are negotiated to
/// protobuf; a value that does not fit its kind's fields is a server bug,
/// answered as an internal error Status in protobuf.
fn protobuf_bytes(value: &Value) -> Bytes {
    match protobuf::encode(value) {
        Ok(body) => Bytes::from(body),
        Err(e) => {
            tracing::error!(error = %e, "encoding an answer as protobuf");
            let status = apimachinery::StatusError::internal(format!("encoding as protobuf: {e}"));
            let status: Value = serde_json::from_slice(&status.to_json()).unwrap_or_default();
            Bytes::from(protobuf::encode(&status).unwrap_or_default())
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
        Output::Protobuf => {
            let decoded: Vec<Arc<Value>> = items.iter().map(|o| o.value()).collect();
            let items: Vec<&Value> = decoded.iter().map(|v| v.as_ref()).collect();
            protobuf_bytes(&json!({
                "kind": rtype.list_kind(),
                "apiVersion": rtype.api_version(),
                "metadata": list_metadata(meta),
                "items": items,
            }))
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
    JsonListChunks::new(rtype, items.to_vec(), meta).whole()
}

/// Chunks of a streamed JSON list body.
pub const LIST_CHUNK: usize = 64 * 1024;

/// A JSON list's body in chunks of about `chunk` bytes, each made when the
/// connection asks for it from the objects' cached bytes: a large LIST holds
/// references to cached objects and a chunk, not a copy of the whole response
/// (upstream's streaming list encoding).
pub struct JsonListChunks {
    head: Option<String>,
    items: std::vec::IntoIter<Arc<Object>>,
    chunk: usize,
    first_item: bool,
    done: bool,
}

impl JsonListChunks {
    pub fn new(rtype: &ResourceType, items: Vec<Arc<Object>>, meta: &ListMeta) -> Self {
        let head = format!(
            "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{},\"items\":[",
            Value::String(rtype.list_kind()),
            Value::String(rtype.api_version()),
            list_metadata(meta)
        );
        JsonListChunks {
            head: Some(head),
            items: items.into_iter(),
            chunk: LIST_CHUNK,
            first_item: true,
            done: false,
        }
    }

    /// The whole body in one buffer.
    pub fn whole(mut self) -> Bytes {
        self.chunk = usize::MAX;
        self.next().unwrap_or_default()
    }

    /// The body's size, without making it.
    pub fn body_len(&self) -> usize {
        let head = self.head.as_ref().map_or(0, String::len);
        head + self
            .items
            .as_slice()
            .iter()
            .map(|o| o.json().len() + 1)
            .sum::<usize>()
            + 3
    }
}

impl Iterator for JsonListChunks {
    type Item = Bytes;

    fn next(&mut self) -> Option<Bytes> {
        if self.done {
            return None;
        }
        // One exact buffer for a whole body; else a chunk and its last object.
        let capacity = if self.chunk == usize::MAX {
            self.body_len()
        } else {
            self.chunk + 16 * 1024
        };
        let mut buf = tls_copy_buffer(capacity);
        if let Some(head) = self.head.take() {
            buf.put_slice(head.as_bytes());
        }
        while buf.len() < self.chunk {
            let Some(o) = self.items.next() else {
                buf.put_slice(b"]}\n");
                self.done = true;
                break;
            };
            if !std::mem::take(&mut self.first_item) {
                buf.put_u8(b',');
            }
            buf.put_slice(o.json());
        }
        Some(buf.freeze())
    }
}

/// A JSON response body, newline-terminated as Go's JSON encoder writes it.
pub fn to_bytes(v: &Value) -> Bytes {
    let mut json = apimachinery::meta::to_json_vec(v);
    json.push(b'\n');
    Bytes::from(json)
}

/// `json` newline-terminated (a copy), for a response body.
pub fn with_newline(json: &Bytes) -> Bytes {
    let mut buf = tls_copy_buffer(json.len() + 1);
    buf.put_slice(json);
    buf.put_u8(b'\n');
    buf.freeze()
}
