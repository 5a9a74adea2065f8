//! Malformed input must give a `DecodeError`, never a panic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::cases::cases;
use common::*;
use kubext_protobuf::{DecodeError, decode, type_meta};
use proptest::prelude::*;

#[test]
fn wrong_magic_is_rejected() {
    let good = cases().remove(0).body;
    for bad in [
        &b""[..],
        b"k8s",
        b"k8s\x01",
        b"K8S\0",
        b"{\"apiVersion\":\"v1\"}",
        &good[1..],
    ] {
        assert_eq!(decode(bad), Err(DecodeError::BadMagic), "{bad:?}");
        assert_eq!(type_meta(bad), Err(DecodeError::BadMagic), "{bad:?}");
    }
    let mut flipped = good.clone();
    flipped[3] = b'!';
    assert_eq!(decode(&flipped), Err(DecodeError::BadMagic));
    assert_eq!(
        DecodeError::BadMagic.to_string(),
        "not a Kubernetes protobuf message: the body does not start with the \"k8s\\x00\" prefix"
    );
}

#[test]
fn envelope_errors() {
    // Magic only: an empty Unknown has no apiVersion/kind.
    assert_eq!(decode(b"k8s\0"), Err(DecodeError::MissingTypeMeta));

    let mut with_encoding = envelope_raw("v1", "ConfigMap", vec![]);
    with_encoding.extend_from_slice(&[0x1a, 4, b'g', b'z', b'i', b'p']);
    assert_eq!(
        decode(&with_encoding),
        Err(DecodeError::UnsupportedContentEncoding("gzip".into()))
    );

    let mut with_type = envelope_raw("v1", "ConfigMap", vec![]);
    with_type.extend_from_slice(&[0x22, 16]);
    with_type.extend_from_slice(b"application/json");
    assert_eq!(
        decode(&with_type),
        Err(DecodeError::UnsupportedContentType(
            "application/json".into()
        ))
    );

    let mut protobuf_type = envelope_raw("v1", "ConfigMap", vec![]);
    protobuf_type.extend_from_slice(&[0x22, 35]);
    protobuf_type.extend_from_slice(b"application/vnd.kubernetes.protobuf");
    assert_eq!(
        decode(&protobuf_type).unwrap(),
        serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap"})
    );
}

/// Every strict prefix of a valid body that cuts into the object is an error.
#[test]
fn truncated_input_is_an_error() {
    for c in cases() {
        let body = &c.body;
        // The envelope ends with contentEncoding="" and contentType="" (2 bytes each);
        // before them is the raw field holding the object.
        let raw_end = body.len() - 4;
        let raw_len = {
            use prost::Message as _;
            let unknown = k8s_pb::apimachinery::pkg::runtime::Unknown::decode(&body[4..]).unwrap();
            unknown.raw.unwrap().len()
        };
        let raw_start = raw_end - raw_len;
        for n in 0..body.len() {
            let result = decode(&body[..n]);
            if n < 4 {
                assert_eq!(result, Err(DecodeError::BadMagic));
            } else if n > raw_start && n < raw_end {
                let err = result.unwrap_err();
                assert_eq!(
                    err.root_cause(),
                    &DecodeError::Truncated,
                    "{}: {n}: {err}",
                    c.name
                );
            }
        }
        // Truncating the raw object itself (a valid envelope around a cut
        // message) is an error too, unless the cut falls between fields.
        let raw = &body[raw_start..raw_end];
        for n in 0..raw.len() {
            let _ = decode(&envelope_raw(c.api_version, c.kind, raw[..n].to_vec()));
        }
    }
}

fn supported_kinds() -> Vec<(&'static str, &'static str)> {
    vec![
        ("v1", "ConfigMap"),
        ("v1", "Secret"),
        ("v1", "Service"),
        ("v1", "Pod"),
        ("v1", "Event"),
        ("v1", "Node"),
        ("v1", "PersistentVolume"),
        ("apps/v1", "Deployment"),
        ("apps/v1", "ControllerRevision"),
        ("batch/v1", "CronJob"),
        ("discovery.k8s.io/v1", "EndpointSlice"),
        ("coordination.k8s.io/v1", "Lease"),
        ("authentication.k8s.io/v1", "TokenRequest"),
        ("v1", "DeleteOptions"),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_bytes_after_magic_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..512)) {
        let body = [&b"k8s\0"[..], &tail].concat();
        let _ = decode(&body);
        let _ = type_meta(&body);
    }

    #[test]
    fn random_objects_of_supported_kinds_never_panic(
        kind in proptest::sample::select(supported_kinds()),
        raw in proptest::collection::vec(any::<u8>(), 0..512),
    ) {
        let _ = decode(&envelope_raw(kind.0, kind.1, raw));
    }

    #[test]
    fn mutated_valid_bodies_never_panic(
        case_idx in 0usize..64,
        edits in proptest::collection::vec((any::<usize>(), any::<u8>(), 0u8..3), 1..8),
    ) {
        let all = cases();
        let mut body = all[case_idx % all.len()].body.clone();
        for (pos, byte, op) in edits {
            let pos = 4 + pos % (body.len() - 3);
            match op {
                0 if pos < body.len() => body[pos] = byte,
                1 => body.insert(pos.min(body.len()), byte),
                _ if pos < body.len() => { body.remove(pos); }
                _ => {}
            }
        }
        let _ = decode(&body);
    }
}
