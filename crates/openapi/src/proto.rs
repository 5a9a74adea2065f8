//! The Swagger 2.0 document in gnostic's protobuf encoding (`openapi.v2.Document`
//! of github.com/google/gnostic-models/openapiv2/OpenAPIv2.proto), which is the only
//! form kubectl accepts from `/openapi/v2`: client-go asks for
//! `application/com.github.proto-openapi.spec.v2@v1.0+protobuf` and unmarshals the
//! body as protobuf (whatever the response's `Content-Type`, as long as Go can parse it). kubectl reads definitions (explain in 1.27/1.28, client-side
//! validation and apply when v3 is unavailable) and the PATCH operations' GVK
//! extension and parameters (the v2 field-validation check).
//!
//! Vendor extensions are `NamedAny{name, Any{yaml}}`; JSON is valid YAML, so the
//! values are written as JSON text.

use serde_json::{Map, Value};

/// The `Content-Type` of the protobuf document (what upstream answers; Go's mime
/// parser rejects the `@` form clients put in `Accept`).
pub const V2_PROTOBUF_CONTENT_TYPE: &str =
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// The `Accept` media types that ask for the protobuf document (client-go sends
/// the first).
pub const V2_PROTOBUF_ACCEPT: [&str; 2] = [
    "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
];

/// A protobuf message being written.
#[derive(Default)]
struct Pb(Vec<u8>);

impl Pb {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8 & 0x7f) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn key(&mut self, field: u32, wire: u8) {
        self.varint((u64::from(field) << 3) | u64::from(wire));
    }

    fn bytes(&mut self, field: u32, b: &[u8]) {
        self.key(field, 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    /// A proto3 string (omitted when empty).
    fn string(&mut self, field: u32, s: &str) {
        if !s.is_empty() {
            self.bytes(field, s.as_bytes());
        }
    }

    fn opt_string(&mut self, field: u32, v: Option<&Value>) {
        if let Some(s) = v.and_then(Value::as_str) {
            self.string(field, s);
        }
    }

    fn strings(&mut self, field: u32, v: Option<&Value>) {
        for s in v.and_then(Value::as_array).into_iter().flatten() {
            if let Some(s) = s.as_str() {
                // Repeated strings keep empty elements.
                self.bytes(field, s.as_bytes());
            }
        }
    }

    /// A proto3 bool (omitted when false).
    fn boolean(&mut self, field: u32, b: bool) {
        if b {
            self.key(field, 0);
            self.varint(1);
        }
    }

    /// An embedded message (always written, so present-but-empty oneof members
    /// survive).
    fn message(&mut self, field: u32, f: impl FnOnce(&mut Pb)) {
        let mut inner = Pb::default();
        f(&mut inner);
        self.bytes(field, &inner.0);
    }
}

/// `openapi.v2.Any{yaml}`.
fn any(pb: &mut Pb, v: &Value) {
    pb.string(2, &v.to_string());
}

/// `repeated NamedAny vendor_extension` from the `x-` keys of `m`.
fn vendor_extensions(pb: &mut Pb, field: u32, m: &Map<String, Value>) {
    for (k, v) in m {
        if k.starts_with("x-") {
            pb.message(field, |na| {
                na.string(1, k);
                na.message(2, |a| any(a, v));
            });
        }
    }
}

fn schema(pb: &mut Pb, s: &Value) {
    let Some(m) = s.as_object() else {
        return;
    };
    pb.opt_string(1, m.get("$ref"));
    pb.opt_string(2, m.get("format"));
    pb.opt_string(3, m.get("title"));
    pb.opt_string(4, m.get("description"));
    pb.boolean(
        16,
        m.get("uniqueItems").and_then(Value::as_bool) == Some(true),
    );
    pb.strings(19, m.get("required"));
    for e in m
        .get("enum")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        pb.message(20, |a| any(a, e));
    }
    match m.get("additionalProperties") {
        Some(Value::Bool(b)) => pb.message(21, |item| {
            // `oneof`: an explicit `false` must still be present.
            item.key(2, 0);
            item.varint(u64::from(*b));
        }),
        Some(additional) => pb.message(21, |item| item.message(1, |s| schema(s, additional))),
        None => {}
    }
    match m.get("type") {
        Some(Value::String(t)) => pb.message(22, |ti| ti.string(1, t)),
        Some(types @ Value::Array(_)) => pb.message(22, |ti| ti.strings(1, Some(types))),
        _ => {}
    }
    if let Some(items) = m.get("items") {
        pb.message(23, |ii| {
            match items {
                Value::Array(list) => {
                    for i in list {
                        ii.message(1, |s| schema(s, i));
                    }
                }
                one => ii.message(1, |s| schema(s, one)),
            };
        });
    }
    for branch in m
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        pb.message(24, |s| schema(s, branch));
    }
    if let Some(Value::Object(props)) = m.get("properties") {
        pb.message(25, |p| {
            for (name, prop) in props {
                p.message(1, |ns| {
                    ns.string(1, name);
                    ns.message(2, |s| schema(s, prop));
                });
            }
        });
    }
    pb.boolean(27, m.get("readOnly").and_then(Value::as_bool) == Some(true));
    vendor_extensions(pb, 31, m);
}

/// `ParametersItem`: a parameter or a reference to a shared one.
fn parameters_item(pb: &mut Pb, p: &Value) {
    let Some(m) = p.as_object() else {
        return;
    };
    if let Some(r) = m.get("$ref").and_then(Value::as_str) {
        pb.message(2, |jr| jr.string(1, r));
        return;
    }
    pb.message(1, |param| parameter(param, m));
}

/// `Parameter`.
fn parameter(param: &mut Pb, m: &Map<String, Value>) {
    let str_of = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("");
    let required = m.get("required").and_then(Value::as_bool) == Some(true);
    let unique = m.get("uniqueItems").and_then(Value::as_bool) == Some(true);
    match str_of("in") {
        "body" => param.message(1, |b| {
            b.string(1, str_of("description"));
            b.string(2, str_of("name"));
            b.string(3, "body");
            b.boolean(4, required);
            if let Some(s) = m.get("schema") {
                b.message(5, |sch| schema(sch, s));
            }
            vendor_extensions(b, 6, m);
        }),
        location => param.message(2, |nb| {
            // Header 1, formData 2, query 3, path 4; the sub-schemas share
            // required/in/description/name, then differ by one field
            // (`allow_empty_value` in query and formData).
            let (oneof, has_allow_empty) = match location {
                "header" => (1, false),
                "formData" => (2, true),
                "path" => (4, false),
                _ => (3, true),
            };
            let shift = u32::from(has_allow_empty);
            nb.message(oneof, |q| {
                q.boolean(1, required);
                q.string(2, location);
                q.string(3, str_of("description"));
                q.string(4, str_of("name"));
                q.string(5 + shift, str_of("type"));
                q.string(6 + shift, str_of("format"));
                q.boolean(19 + shift, unique);
                vendor_extensions(q, 22 + shift, m);
            });
        }),
    }
}

fn operation(pb: &mut Pb, op: &Map<String, Value>) {
    pb.strings(1, op.get("tags"));
    pb.opt_string(2, op.get("summary"));
    pb.opt_string(3, op.get("description"));
    pb.opt_string(5, op.get("operationId"));
    pb.strings(6, op.get("produces"));
    pb.strings(7, op.get("consumes"));
    for p in op
        .get("parameters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        pb.message(8, |pi| parameters_item(pi, p));
    }
    if let Some(Value::Object(responses)) = op.get("responses") {
        pb.message(9, |rs| {
            for (code, r) in responses {
                rs.message(1, |nrv| {
                    nrv.string(1, code);
                    nrv.message(2, |rv| {
                        if let Some(reference) = r.get("$ref").and_then(Value::as_str) {
                            rv.message(2, |jr| jr.string(1, reference));
                        } else {
                            rv.message(1, |resp| {
                                resp.opt_string(1, r.get("description"));
                                if let Some(s) = r.get("schema") {
                                    resp.message(2, |si| si.message(1, |sch| schema(sch, s)));
                                }
                            });
                        }
                    });
                });
            }
        });
    }
    pb.strings(10, op.get("schemes"));
    pb.boolean(
        11,
        op.get("deprecated").and_then(Value::as_bool) == Some(true),
    );
    vendor_extensions(pb, 13, op);
}

fn path_item(pb: &mut Pb, item: &Map<String, Value>) {
    for (method, field) in [
        ("get", 2),
        ("put", 3),
        ("post", 4),
        ("delete", 5),
        ("options", 6),
        ("head", 7),
        ("patch", 8),
    ] {
        if let Some(Value::Object(op)) = item.get(method) {
            pb.message(field, |o| operation(o, op));
        }
    }
    for p in item
        .get("parameters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        pb.message(9, |pi| parameters_item(pi, p));
    }
    vendor_extensions(pb, 10, item);
}

/// Encodes a Swagger 2.0 document (as produced by [`crate::v2`]) as gnostic's
/// `openapi.v2.Document` protobuf.
pub fn v2_protobuf(doc: &Value) -> Vec<u8> {
    let mut pb = Pb::default();
    pb.opt_string(1, doc.get("swagger"));
    if let Some(info) = doc.get("info") {
        pb.message(2, |i| {
            i.opt_string(1, info.get("title"));
            i.opt_string(2, info.get("version"));
            i.opt_string(3, info.get("description"));
        });
    }
    pb.opt_string(4, doc.get("basePath"));
    pb.strings(5, doc.get("schemes"));
    pb.strings(6, doc.get("consumes"));
    pb.strings(7, doc.get("produces"));
    if let Some(Value::Object(paths)) = doc.get("paths") {
        pb.message(8, |ps| {
            for (path, item) in paths {
                if let Value::Object(item) = item {
                    ps.message(2, |npi| {
                        npi.string(1, path);
                        npi.message(2, |pi| path_item(pi, item));
                    });
                }
            }
        });
    }
    if let Some(Value::Object(defs)) = doc.get("definitions") {
        pb.message(9, |d| {
            for (name, s) in defs {
                d.message(1, |ns| {
                    ns.string(1, name);
                    ns.message(2, |sch| schema(sch, s));
                });
            }
        });
    }
    if let Some(Value::Object(params)) = doc.get("parameters") {
        pb.message(10, |pd| {
            for (name, p) in params {
                if let Value::Object(p) = p {
                    pd.message(1, |np| {
                        np.string(1, name);
                        np.message(2, |param| parameter(param, p));
                    });
                }
            }
        });
    }
    for req in doc
        .get("security")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Value::Object(req) = req {
            pb.message(12, |sr| {
                for (name, scopes) in req {
                    sr.message(1, |nsa| {
                        nsa.string(1, name);
                        nsa.message(2, |sa| sa.strings(1, Some(scopes)));
                    });
                }
            });
        }
    }
    if let Some(Value::Object(defs)) = doc.get("securityDefinitions") {
        pb.message(13, |sd| {
            for (name, def) in defs {
                sd.message(1, |nsd| {
                    nsd.string(1, name);
                    nsd.message(2, |item| {
                        if def.get("type").and_then(Value::as_str) == Some("apiKey") {
                            item.message(2, |k| {
                                k.string(1, "apiKey");
                                k.opt_string(2, def.get("name"));
                                k.opt_string(3, def.get("in"));
                                k.opt_string(4, def.get("description"));
                            });
                        }
                    });
                });
            }
        });
    }
    pb.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn encodes_fields() {
        let doc = json!({"swagger": "2.0", "info": {"title": "T", "version": "v"}});
        assert_eq!(
            v2_protobuf(&doc),
            [
                0x0a, 3, b'2', b'.', b'0', // swagger = 1
                0x12, 6, 0x0a, 1, b'T', 0x12, 1, b'v', // info = 2
            ]
        );
        let mut pb = Pb::default();
        pb.varint(300);
        assert_eq!(pb.0, [0xac, 0x02]);
    }
}
