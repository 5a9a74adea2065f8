//! Helpers shared by the integration tests: building protobuf bodies the way
//! client-go does, from k8s-pb's prost structs.
#![allow(dead_code, clippy::unwrap_used)]

use k8s_pb::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use prost::Message;

pub mod cases;

/// `k8s\0` + `runtime.Unknown{typeMeta, raw, contentEncoding: "", contentType: ""}`,
/// exactly as client-go's protobuf serializer writes it.
pub fn envelope(api_version: &str, kind: &str, object: &impl Message) -> Vec<u8> {
    envelope_raw(api_version, kind, object.encode_to_vec())
}

pub fn envelope_raw(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: s(api_version),
            kind: s(kind),
        }),
        raw: Some(raw),
        content_encoding: s(""),
        content_type: s(""),
    };
    let mut out = b"k8s\0".to_vec();
    unknown.encode(&mut out).unwrap();
    out
}

pub fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

pub fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

pub fn map<V: Clone>(entries: &[(&str, V)]) -> std::collections::BTreeMap<String, V> {
    entries
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

pub fn time(seconds: i64) -> Option<Time> {
    Some(Time {
        seconds: Some(seconds),
        nanos: Some(0),
    })
}

pub fn micro_time(seconds: i64, nanos: i32) -> Option<MicroTime> {
    Some(MicroTime {
        seconds: Some(seconds),
        nanos: Some(nanos),
    })
}

/// 2026-11-21T19:30:00Z
pub const T0: i64 = 1_795_289_400;

/// ObjectMeta as Go's generated marshaller writes it for an object that only
/// has a name (and namespace): every non-pointer field is on the wire, with its
/// zero value, and the zero creationTimestamp is an empty message.
pub fn go_meta(name: &str, namespace: &str) -> Option<ObjectMeta> {
    Some(ObjectMeta {
        name: s(name),
        generate_name: s(""),
        namespace: s(namespace),
        self_link: s(""),
        uid: s(""),
        resource_version: s(""),
        generation: Some(0),
        creation_timestamp: Some(Time::default()),
        ..Default::default()
    })
}

/// Asserts `decode(body) == expected`, printing both on mismatch.
pub fn assert_decodes(case: &str, body: &[u8], expected: serde_json::Value) {
    let got = match kubext_protobuf::decode(body) {
        Ok(v) => v,
        Err(e) => panic!("{case}: decode failed: {e}"),
    };
    assert_eq!(
        got,
        expected,
        "{case}:\n got: {}\nwant: {}",
        serde_json::to_string_pretty(&got).unwrap(),
        serde_json::to_string_pretty(&expected).unwrap()
    );
}
