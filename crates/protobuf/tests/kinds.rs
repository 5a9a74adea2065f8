//! Data-driven tests: for each covered kind, a value built with k8s-pb's prost
//! structs is encoded the way client-go sends it and must decode to the JSON
//! that Kubernetes itself uses for the same object (written out by hand).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::cases::cases;
use common::*;
use k8s_pb::api::core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use serde_json::json;

#[test]
fn kinds_decode_to_upstream_json() {
    let cases = cases();
    for c in &cases {
        assert!(
            kubext_protobuf::supports(c.api_version, c.kind),
            "{}: supports({}, {}) is false",
            c.name,
            c.api_version,
            c.kind
        );
        let tm = kubext_protobuf::type_meta(&c.body).unwrap();
        assert_eq!(
            (tm.api_version.as_str(), tm.kind.as_str()),
            (c.api_version, c.kind)
        );
        assert_decodes(c.name, &c.body, c.expected.clone());
    }
}

/// Every body stays decodable if the envelope or the object carries fields
/// this decoder does not know (newer clients): they are skipped by wire type.
#[test]
fn unknown_fields_are_skipped() {
    for c in cases() {
        let raw = {
            let tm = kubext_protobuf::type_meta(&c.body).unwrap();
            assert_eq!(tm.kind, c.kind);
            // Re-encode: unknown fields of all wire types before and after.
            let unknown: &[u8] = &[
                0xf8, 0x07, 0x96, 0x01, // field 127 varint 150
                0xf9, 0x07, 1, 2, 3, 4, 5, 6, 7, 8, // field 127 fixed64
                0xfa, 0x07, 0x03, b'a', b'b', b'c', // field 127 len
                0xfd, 0x07, 1, 2, 3, 4, // field 127 fixed32
            ];
            let inner = object_bytes(&c.body);
            [unknown, inner.as_slice(), unknown].concat()
        };
        let body = envelope_raw(c.api_version, c.kind, raw);
        assert_decodes(c.name, &body, c.expected.clone());
    }
}

/// The `raw` bytes inside a body built by [`envelope`].
fn object_bytes(body: &[u8]) -> Vec<u8> {
    use prost::Message as _;
    let unknown = k8s_pb::apimachinery::pkg::runtime::Unknown::decode(&body[4..]).unwrap();
    unknown.raw.unwrap()
}

#[test]
fn unsupported_kind_is_reported() {
    let body = envelope_raw("example.com/v1", "Widget", vec![]);
    let err = kubext_protobuf::decode(&body).unwrap_err();
    assert_eq!(
        err,
        kubext_protobuf::DecodeError::UnsupportedKind {
            api_version: "example.com/v1".into(),
            kind: "Widget".into()
        }
    );
    assert!(!kubext_protobuf::supports("example.com/v1", "Widget"));
    assert!(!kubext_protobuf::supports("apps/v1", "ConfigMap"));
    assert!(kubext_protobuf::supports(
        "storage.k8s.io/v1",
        "DeleteOptions"
    ));
}

#[test]
fn merged_message_occurrences_and_last_scalar_wins() {
    use prost::Message as _;
    // Two ConfigMap encodings concatenated: protobuf merges them.
    let a = core::v1::ConfigMap {
        metadata: Some(meta::ObjectMeta {
            name: s("first"),
            labels: map(&[("a", "1".to_string())]),
            ..Default::default()
        }),
        data: map(&[("k", "old".to_string()), ("x", "1".to_string())]),
        ..Default::default()
    };
    let b = core::v1::ConfigMap {
        metadata: Some(meta::ObjectMeta {
            name: s("second"),
            labels: map(&[("b", "2".to_string())]),
            ..Default::default()
        }),
        data: map(&[("k", "new".to_string())]),
        immutable: Some(true),
        ..Default::default()
    };
    let raw = [a.encode_to_vec(), b.encode_to_vec()].concat();
    assert_decodes(
        "merged",
        &envelope_raw("v1", "ConfigMap", raw),
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "second", "labels": {"a": "1", "b": "2"}},
            "data": {"k": "new", "x": "1"},
            "immutable": true,
        }),
    );
}
