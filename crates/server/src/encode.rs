//! Encoding objects and lists in the negotiated representation. JSON lists are
//! spliced from each object's cached bytes rather than re-serialized.
//!
//! Hot path: every response body; objects' cached bytes are spliced, not re-serialized.

use bytes::{BufMut, Bytes};
use serde_json::{Value, json};
use std::sync::Arc;

use apimachinery::json;
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

impl ListMeta {
    /// The continue token, if any and not empty.
    fn continue_token(&self) -> Option<&str> {
        self.continue_token.as_deref().filter(|c| !c.is_empty())
    }
}

/// A list's `metadata` as a typed list's `ListMeta` holds it (members only
/// when set; a `Value`'s map has no order of its own).
fn list_metadata(meta: &ListMeta) -> Value {
    let mut m = json!({"resourceVersion": meta.resource_version.to_string()});
    if let Some(c) = meta.continue_token() {
        m["continue"] = json!(c);
    }
    if let Some(r) = meta.remaining {
        m["remainingItemCount"] = json!(r);
    }
    m
}

/// The `metadata` of `rtype`'s list as kube-apiserver serves it: a custom
/// resource's list is an `unstructured.UnstructuredList`, whose `continue`
/// the store always sets (`APIObjectVersioner.UpdateList`: "" on a last
/// page), a built-in kind's a `ListMeta`, which leaves an empty one out.
pub fn served_list_metadata(rtype: &ResourceType, meta: &ListMeta) -> Value {
    let mut m = list_metadata(meta);
    if !rtype.structured {
        m["continue"] = json!(meta.continue_token().unwrap_or_default());
    }
    m
}

/// [`served_list_metadata`] as JSON: `ListMeta`'s members in its struct's
/// order (resourceVersion, continue, remainingItemCount), or an
/// unstructured list's map sorted as encoding/json writes it (continue,
/// remainingItemCount, resourceVersion).
fn write_list_metadata(out: &mut Vec<u8>, rtype: &ResourceType, meta: &ListMeta) {
    let resource_version = Some(("resourceVersion", json!(meta.resource_version.to_string())));
    let remaining = meta.remaining.map(|r| ("remainingItemCount", json!(r)));
    let members = if rtype.structured {
        let continue_token = meta.continue_token().map(|c| ("continue", json!(c)));
        [resource_version, continue_token, remaining]
    } else {
        let continue_token = json!(meta.continue_token().unwrap_or_default());
        [
            Some(("continue", continue_token)),
            remaining,
            resource_version,
        ]
    };
    out.push(b'{');
    for (i, (key, value)) in members.iter().flatten().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        json::write_str(out, key);
        out.push(b':');
        json::write_value(out, value);
    }
    out.push(b'}');
}

/// A JSON list's bytes before its items and after them. A built-in kind's
/// list is its Go struct: `{"kind":…,"apiVersion":…,"metadata":{…},"items":[`
/// … `]}`. A custom resource's is an unstructured list, a map that
/// encoding/json writes sorted like its items:
/// `{"apiVersion":…,"items":[` … `],"kind":…,"metadata":{…}}`.
fn json_list_ends(rtype: &ResourceType, meta: &ListMeta) -> (Vec<u8>, Vec<u8>) {
    let mut head = Vec::with_capacity(128);
    let mut tail = Vec::with_capacity(128);
    if rtype.structured {
        head.extend_from_slice(b"{\"kind\":");
        json::write_str(&mut head, &rtype.list_kind());
        head.extend_from_slice(b",\"apiVersion\":");
        json::write_str(&mut head, &rtype.api_version());
        head.extend_from_slice(b",\"metadata\":");
        write_list_metadata(&mut head, rtype, meta);
        head.extend_from_slice(b",\"items\":[");
        tail.extend_from_slice(b"]}");
    } else {
        head.extend_from_slice(b"{\"apiVersion\":");
        json::write_str(&mut head, &rtype.api_version());
        head.extend_from_slice(b",\"items\":[");
        tail.extend_from_slice(b"],\"kind\":");
        json::write_str(&mut tail, &rtype.list_kind());
        tail.extend_from_slice(b",\"metadata\":");
        write_list_metadata(&mut tail, rtype, meta);
        tail.push(b'}');
    }
    // Go's JSON encoder ends a value with a newline.
    tail.push(b'\n');
    (head, tail)
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
            // YAML's maps are sorted (upstream converts its JSON to YAML).
            let v = json!({
                "kind": rtype.list_kind(),
                "apiVersion": rtype.api_version(),
                "metadata": served_list_metadata(rtype, meta),
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
    head: Option<Vec<u8>>,
    /// What follows the items, to the final newline ([`json_list_ends`]).
    tail: Vec<u8>,
    items: std::vec::IntoIter<Arc<Object>>,
    chunk: usize,
    first_item: bool,
    done: bool,
}

impl JsonListChunks {
    pub fn new(rtype: &ResourceType, items: Vec<Arc<Object>>, meta: &ListMeta) -> Self {
        let (head, tail) = json_list_ends(rtype, meta);
        JsonListChunks {
            head: Some(head),
            tail,
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
        let head = self.head.as_ref().map_or(0, Vec::len);
        let items = self.items.as_slice();
        // A comma before every item but the first.
        let commas = if self.first_item {
            items.len().saturating_sub(1)
        } else {
            items.len()
        };
        head + items.iter().map(|o| o.json().len()).sum::<usize>() + commas + self.tail.len()
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
            buf.put_slice(&head);
        }
        while buf.len() < self.chunk {
            let Some(o) = self.items.next() else {
                buf.put_slice(&self.tail);
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

#[cfg(test)]
mod tests {
    use super::*;

    struct Plain;
    impl registry::Strategy for Plain {}

    fn configmaps() -> ResourceType {
        ResourceType::new("", "v1", "ConfigMap", "configmaps", true, Box::new(Plain))
    }

    /// A custom resource's type, as `apiextensions::custom_resource` makes it.
    fn widgets() -> ResourceType {
        let mut t = ResourceType::new(
            "example.com",
            "v1",
            "Widget",
            "widgets",
            true,
            Box::new(Plain),
        );
        t.structured = false;
        t
    }

    fn widget(name: &str) -> Arc<Object> {
        Arc::new(Object::new(json!({
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": name, "namespace": "default", "resourceVersion": "5"},
            "spec": {"size": 1},
        })))
    }

    fn meta(continue_token: Option<&str>, remaining: Option<i64>) -> ListMeta {
        ListMeta {
            resource_version: 7,
            continue_token: continue_token.map(String::from),
            remaining,
        }
    }

    /// The JSON list body whole and in chunks of a few bytes (the streamed
    /// answer of a large list), which must be the same bytes.
    fn json_body(rtype: &ResourceType, items: &[Arc<Object>], meta: &ListMeta) -> String {
        let whole = JsonListChunks::new(rtype, items.to_vec(), meta);
        let len = whole.body_len();
        let whole = whole.whole();
        assert_eq!(whole.len(), len, "body_len");
        let mut chunks = JsonListChunks::new(rtype, items.to_vec(), meta);
        chunks.chunk = 8;
        let streamed: Vec<u8> = chunks.flat_map(|c| c.to_vec()).collect();
        assert_eq!(streamed, whole.to_vec(), "chunked");
        String::from_utf8(whole.to_vec()).unwrap()
    }

    const WIDGET_A: &str = r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"a","namespace":"default","resourceVersion":"5"},"spec":{"size":1}}"#;

    /// kube-apiserver serves a custom resource list as an
    /// `unstructured.UnstructuredList`: a map that encoding/json writes
    /// sorted, list metadata included, whose `continue` the store always sets
    /// ("" on the last page) — kube-apiserver 1.37.2's recorded
    /// `WidgetList.serialization` ends `],"kind":"WidgetList","metadata":{"continue":"","resourceVersion":"RV"}}`.
    #[test]
    fn custom_resource_lists_are_unstructured_lists() {
        let rtype = widgets();
        assert_eq!(
            json_body(&rtype, &[], &meta(None, None)),
            "{\"apiVersion\":\"example.com/v1\",\"items\":[],\"kind\":\"WidgetList\",\"metadata\":{\"continue\":\"\",\"resourceVersion\":\"7\"}}\n"
        );
        assert_eq!(
            json_body(&rtype, &[widget("a")], &meta(None, None)),
            format!(
                "{{\"apiVersion\":\"example.com/v1\",\"items\":[{WIDGET_A}],\"kind\":\"WidgetList\",\"metadata\":{{\"continue\":\"\",\"resourceVersion\":\"7\"}}}}\n"
            )
        );
        assert_eq!(
            json_body(
                &rtype,
                &[widget("a")],
                &meta(Some("eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ"), Some(1))
            ),
            format!(
                "{{\"apiVersion\":\"example.com/v1\",\"items\":[{WIDGET_A}],\"kind\":\"WidgetList\",\"metadata\":{{\"continue\":\"eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ\",\"remainingItemCount\":1,\"resourceVersion\":\"7\"}}}}\n"
            )
        );
        // Many items, so that the chunks split between them.
        let many: Vec<Arc<Object>> = (0..5).map(|i| widget(&format!("w{i}"))).collect();
        let body = json_body(&rtype, &many, &meta(None, None));
        assert!(
            body.starts_with("{\"apiVersion\":\"example.com/v1\",\"items\":[{"),
            "{body}"
        );
        assert!(body.ends_with("}],\"kind\":\"WidgetList\",\"metadata\":{\"continue\":\"\",\"resourceVersion\":\"7\"}}\n"), "{body}");
        // The whole list the other ways it is written: YAML, and `list` for JSON.
        let yaml = list(
            &Output::Yaml,
            &rtype,
            &[],
            &meta(None, None),
            &TableOptions::default(),
        );
        assert_eq!(
            String::from_utf8(yaml.to_vec()).unwrap(),
            "apiVersion: example.com/v1\nitems: []\nkind: WidgetList\nmetadata:\n  continue: \"\"\n  resourceVersion: \"7\"\n"
        );
        let json = list(
            &Output::Json,
            &rtype,
            &[],
            &meta(None, None),
            &TableOptions::default(),
        );
        assert_eq!(json, json_body(&rtype, &[], &meta(None, None)));
    }

    /// A built-in kind's list is its Go struct: kind, apiVersion, metadata
    /// (`ListMeta`: resourceVersion, continue and remainingItemCount when
    /// set), items.
    #[test]
    fn builtin_lists_keep_their_struct_order() {
        let rtype = configmaps();
        let cm = Arc::new(Object::new(json!({
            "kind": "ConfigMap",
            "apiVersion": "v1",
            "metadata": {"name": "a", "namespace": "default", "resourceVersion": "5"},
            "data": {"k": "v"},
        })));
        assert_eq!(
            json_body(&rtype, &[], &meta(None, None)),
            "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"7\"},\"items\":[]}\n"
        );
        assert_eq!(
            json_body(&rtype, &[cm], &meta(Some("tok"), Some(1))),
            "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"7\",\"continue\":\"tok\",\"remainingItemCount\":1},\"items\":[{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"a\",\"namespace\":\"default\",\"resourceVersion\":\"5\"},\"data\":{\"k\":\"v\"}}]}\n"
        );
    }
}
