//! Answers of a real kube-apiserver v1.37.2 (`scripts/upstream
//! kube-apiserver`, on etcd), fetched once as JSON and once as protobuf
//! (`tests/data/kube-apiserver-1.37/<name>.{json,pb}`): encoding the JSON
//! must give upstream's protobuf bytes exactly, and decoding the protobuf
//! must give the JSON back.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;

const CASES: &[&str] = &[
    "configmap",
    "configmap-list",
    "deployment",
    "scale",
    "lease",
    "crd",
    "clusterrole",
    "status-not-found",
    "namespace",
    "service",
];

fn data(name: &str) -> (Value, Vec<u8>) {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/kube-apiserver-1.37"
    );
    let json = std::fs::read(format!("{dir}/{name}.json")).expect("json fixture");
    let pb = std::fs::read(format!("{dir}/{name}.pb")).expect("protobuf fixture");
    (serde_json::from_slice(&json).expect("fixture is JSON"), pb)
}

/// The offset of the first differing byte, for a readable failure.
fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
    a.iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .or((a.len() != b.len()).then(|| a.len().min(b.len())))
}

#[test]
fn encoding_upstreams_json_gives_its_protobuf_bytes() {
    let mut failures = Vec::new();
    for name in CASES {
        let (json, pb) = data(name);
        let ours = kubext_protobuf::encode(&json).unwrap_or_else(|e| panic!("{name}: {e}"));
        if let Some(at) = first_difference(&ours, &pb) {
            let window =
                |b: &[u8]| format!("{:02x?}", &b[at.saturating_sub(8)..(at + 16).min(b.len())]);
            failures.push(format!(
                "{name}: {} bytes, upstream {}; first difference at {at}: ours {} upstream {}",
                ours.len(),
                pb.len(),
                window(&ours),
                window(&pb)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn decoding_upstreams_protobuf_gives_its_json() {
    for name in CASES {
        let (mut json, pb) = data(name);
        let decoded = kubext_protobuf::decode(&pb).unwrap_or_else(|e| panic!("{name}: {e}"));
        // A list's items carry no apiVersion and kind in either form.
        if let Some(items) = json.get_mut("items").and_then(Value::as_array_mut) {
            for item in items {
                assert!(item.get("kind").is_none(), "{name}");
            }
        }
        assert_eq!(decoded, json, "{name}");
    }
}

#[test]
fn a_watch_frame_is_length_delimited_around_the_encoded_object() {
    let (_, pb) = data("configmap");
    let frame = kubext_protobuf::encode_watch_event("ADDED", &pb);
    let len = u32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
    assert_eq!(len, frame.len() - 4);
    // WatchEvent {type = 1 "ADDED", object = 2 RawExtension {raw = 1 <pb>}}.
    assert_eq!(&frame[4..11], b"\x0a\x05ADDED");
    assert!(frame.ends_with(&pb));
}
