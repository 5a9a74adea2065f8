//! Whole-schema tests: a fully populated random message is generated from
//! every root table, decoded, and the JSON must survive a round trip through
//! k8s-openapi's typed structs unchanged. That checks every JSON name and
//! value shape in the generated tables against an independent source (field
//! numbers are checked against k8s-pb by the generator). Also decoder edge
//! cases that need the internal tables.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};

use crate::table::{Card, Emit, Field, Kind, Message, f};
use crate::{DecodeError, MAGIC, schema};

// ---------------------------------------------------------------------------
// A tiny protobuf writer and a deterministic PRNG.

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_varint(out: &mut Vec<u8>, number: u32, v: u64) {
    varint(out, u64::from(number) << 3);
    varint(out, v);
}

fn put_len(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    varint(out, (u64::from(number) << 3) | 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut tm = Vec::new();
    put_len(&mut tm, 1, api_version.as_bytes());
    put_len(&mut tm, 2, kind.as_bytes());
    let mut out = MAGIC.to_vec();
    put_len(&mut out, 1, &tm);
    put_len(&mut out, 2, raw);
    put_len(&mut out, 3, b"");
    put_len(&mut out, 4, b"");
    out
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn string(&mut self) -> String {
        let len = 1 + self.below(8) as usize;
        let chars = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._/";
        let mut s: String = (0..len)
            .map(|_| chars[self.below(chars.len() as u64) as usize] as char)
            .collect();
        if self.below(8) == 0 {
            s.push_str("ü\"\\\n"); // non-ASCII and JSON escapes
        }
        s
    }
    fn nonzero(&mut self) -> u64 {
        loop {
            let v = self.next();
            if v != 0 {
                return v;
            }
        }
    }
}

/// Fields newer than the Kubernetes version k8s-openapi is built for in this
/// workspace (1.37), which k8s-openapi would drop: `tools/gen_schema.py
/// --fields-only` at that version vs. the generated tag. None while both are
/// 1.37.
const NEWER_THAN_OPENAPI: &[(&str, &str)] = &[];

const MAX_GEN_DEPTH: usize = 24;

fn gen_message(msg: &'static Message, rng: &mut Rng, depth: usize) -> Vec<u8> {
    let mut out = Vec::new();
    if depth > MAX_GEN_DEPTH {
        return out;
    }
    // JSON schemas nest themselves in many fields: keep them shallow.
    if msg.name == "apiextensions/v1.JSONSchemaProps" && depth > 6 {
        return out;
    }
    for field in msg.fields {
        if NEWER_THAN_OPENAPI.contains(&(msg.name, field.json)) {
            continue;
        }
        match field.card {
            Card::One => gen_value(&mut out, field, rng, depth),
            Card::Inline => {
                let Kind::Msg(inner) = field.kind else {
                    panic!("inline non-message in {}", msg.name)
                };
                let bytes = gen_message(inner, rng, depth + 1);
                put_len(&mut out, field.number, &bytes);
            }
            Card::Repeated => {
                for _ in 0..1 + rng.below(2) {
                    gen_value(&mut out, field, rng, depth);
                }
            }
            Card::Map => {
                for _ in 0..1 + rng.below(2) {
                    let mut entry = Vec::new();
                    put_len(&mut entry, 1, rng.string().as_bytes());
                    gen_value(
                        &mut entry,
                        &f(2, "", field.kind, Card::One, Emit::Always),
                        rng,
                        depth,
                    );
                    put_len(&mut out, field.number, &entry);
                }
            }
        }
    }
    out
}

fn gen_value(out: &mut Vec<u8>, field: &Field, rng: &mut Rng, depth: usize) {
    let n = field.number;
    match field.kind {
        Kind::Str => put_len(out, n, rng.string().as_bytes()),
        Kind::Bytes => {
            let bytes: Vec<u8> = (0..1 + rng.below(6)).map(|_| rng.next() as u8).collect();
            put_len(out, n, &bytes);
        }
        Kind::Bool => put_varint(out, n, 1),
        // Negative int32s are sign-extended to ten bytes, as Go writes them.
        Kind::Int32 => put_varint(out, n, i64::from(rng.nonzero() as i32 | 1) as u64),
        Kind::Int64 => put_varint(out, n, rng.nonzero()),
        Kind::Time | Kind::MicroTime => {
            let mut ts = Vec::new();
            put_varint(&mut ts, 1, rng.below(253_402_300_800));
            put_varint(&mut ts, 2, rng.below(1_000_000_000));
            put_len(out, n, &ts);
        }
        Kind::Duration => {
            let mut d = Vec::new();
            put_varint(&mut d, 1, rng.next());
            put_len(out, n, &d);
        }
        Kind::IntOrString => {
            let mut ios = Vec::new();
            if rng.below(2) == 0 {
                put_varint(&mut ios, 1, 0);
                put_varint(&mut ios, 2, i64::from(rng.next() as i32) as u64);
            } else {
                put_varint(&mut ios, 1, 1);
                put_len(&mut ios, 3, rng.string().as_bytes());
            }
            put_len(out, n, &ios);
        }
        Kind::Quantity => {
            let q = ["1", "250m", "1.5Gi", "2e3", "100Ki"][rng.below(5) as usize];
            let mut b = Vec::new();
            put_len(&mut b, 1, q.as_bytes());
            put_len(out, n, &b);
        }
        Kind::FieldsV1 | Kind::RawExtension => {
            let mut b = Vec::new();
            put_len(
                &mut b,
                1,
                br#"{"f:spec":{".":{},"f:x":{}},"n":[1,2.5,"s",null,true]}"#,
            );
            put_len(out, n, &b);
        }
        Kind::Msg(inner) | Kind::List(inner) => {
            let bytes = gen_message(inner, rng, depth + 1);
            put_len(out, n, &bytes);
        }
        Kind::Double => {
            varint(out, (u64::from(n) << 3) | 1);
            out.extend_from_slice(
                &[0.5f64, 3.0, 1e300][rng.below(3) as usize]
                    .to_bits()
                    .to_le_bytes(),
            );
        }
        Kind::Json => {
            let mut b = Vec::new();
            put_len(&mut b, 1, br#"{"a":[1,2.5,"s",null,true]}"#);
            put_len(out, n, &b);
        }
        Kind::SchemaOrBool(schema) => {
            let mut b = Vec::new();
            put_varint(&mut b, 1, 1);
            if rng.below(2) == 0 {
                put_len(&mut b, 2, &gen_message(schema, rng, depth + 1));
            }
            put_len(out, n, &b);
        }
        Kind::SchemaOrArray(schema) | Kind::SchemaOrStringArray(schema) => {
            let mut b = Vec::new();
            put_len(&mut b, 1, &gen_message(schema, rng, depth + 1));
            put_len(out, n, &b);
        }
    }
}

// ---------------------------------------------------------------------------
// Round trip through k8s-openapi.

fn through<T: serde::de::DeserializeOwned + serde::Serialize>(v: &Value) -> Result<Value, String> {
    let typed: T = serde_json::from_value(v.clone()).map_err(|e| e.to_string())?;
    serde_json::to_value(&typed).map_err(|e| e.to_string())
}

macro_rules! openapi_types {
    ($($av:literal, $kind:literal => $ty:ty;)*) => {
        fn through_openapi(api_version: &str, kind: &str, v: &Value) -> Option<Result<Value, String>> {
            match (api_version, kind) {
                $(($av, $kind) => Some(through::<$ty>(v)),)*
                _ => None,
            }
        }
    };
}

openapi_types! {
    "v1", "ConfigMap" => k8s_openapi::api::core::v1::ConfigMap;
    "v1", "Secret" => k8s_openapi::api::core::v1::Secret;
    "v1", "Namespace" => k8s_openapi::api::core::v1::Namespace;
    "v1", "ServiceAccount" => k8s_openapi::api::core::v1::ServiceAccount;
    "v1", "Service" => k8s_openapi::api::core::v1::Service;
    "v1", "Endpoints" => k8s_openapi::api::core::v1::Endpoints;
    "v1", "Event" => k8s_openapi::api::core::v1::Event;
    "v1", "Pod" => k8s_openapi::api::core::v1::Pod;
    "v1", "PodTemplate" => k8s_openapi::api::core::v1::PodTemplate;
    "v1", "ReplicationController" => k8s_openapi::api::core::v1::ReplicationController;
    "v1", "PersistentVolumeClaim" => k8s_openapi::api::core::v1::PersistentVolumeClaim;
    "v1", "PersistentVolume" => k8s_openapi::api::core::v1::PersistentVolume;
    "v1", "Node" => k8s_openapi::api::core::v1::Node;
    "v1", "ResourceQuota" => k8s_openapi::api::core::v1::ResourceQuota;
    "v1", "LimitRange" => k8s_openapi::api::core::v1::LimitRange;
    "v1", "Binding" => k8s_openapi::api::core::v1::Binding;
    "apps/v1", "Deployment" => k8s_openapi::api::apps::v1::Deployment;
    "apps/v1", "ReplicaSet" => k8s_openapi::api::apps::v1::ReplicaSet;
    "apps/v1", "StatefulSet" => k8s_openapi::api::apps::v1::StatefulSet;
    "apps/v1", "DaemonSet" => k8s_openapi::api::apps::v1::DaemonSet;
    "apps/v1", "ControllerRevision" => k8s_openapi::api::apps::v1::ControllerRevision;
    "batch/v1", "Job" => k8s_openapi::api::batch::v1::Job;
    "batch/v1", "CronJob" => k8s_openapi::api::batch::v1::CronJob;
    "autoscaling/v1", "Scale" => k8s_openapi::api::autoscaling::v1::Scale;
    "rbac.authorization.k8s.io/v1", "Role" => k8s_openapi::api::rbac::v1::Role;
    "rbac.authorization.k8s.io/v1", "ClusterRole" => k8s_openapi::api::rbac::v1::ClusterRole;
    "rbac.authorization.k8s.io/v1", "RoleBinding" => k8s_openapi::api::rbac::v1::RoleBinding;
    "rbac.authorization.k8s.io/v1", "ClusterRoleBinding" => k8s_openapi::api::rbac::v1::ClusterRoleBinding;
    "policy/v1", "PodDisruptionBudget" => k8s_openapi::api::policy::v1::PodDisruptionBudget;
    "policy/v1", "Eviction" => k8s_openapi::api::policy::v1::Eviction;
    "scheduling.k8s.io/v1", "PriorityClass" => k8s_openapi::api::scheduling::v1::PriorityClass;
    "networking.k8s.io/v1", "Ingress" => k8s_openapi::api::networking::v1::Ingress;
    "networking.k8s.io/v1", "IngressClass" => k8s_openapi::api::networking::v1::IngressClass;
    "networking.k8s.io/v1", "NetworkPolicy" => k8s_openapi::api::networking::v1::NetworkPolicy;
    "discovery.k8s.io/v1", "EndpointSlice" => k8s_openapi::api::discovery::v1::EndpointSlice;
    "coordination.k8s.io/v1", "Lease" => k8s_openapi::api::coordination::v1::Lease;
    "events.k8s.io/v1", "Event" => k8s_openapi::api::events::v1::Event;
    "authentication.k8s.io/v1", "TokenRequest" => k8s_openapi::api::authentication::v1::TokenRequest;
    "authentication.k8s.io/v1", "TokenReview" => k8s_openapi::api::authentication::v1::TokenReview;
    "authentication.k8s.io/v1", "SelfSubjectReview" => k8s_openapi::api::authentication::v1::SelfSubjectReview;
    "authorization.k8s.io/v1", "SubjectAccessReview" => k8s_openapi::api::authorization::v1::SubjectAccessReview;
    "authorization.k8s.io/v1", "SelfSubjectAccessReview" => k8s_openapi::api::authorization::v1::SelfSubjectAccessReview;
    "authorization.k8s.io/v1", "LocalSubjectAccessReview" => k8s_openapi::api::authorization::v1::LocalSubjectAccessReview;
    "authorization.k8s.io/v1", "SelfSubjectRulesReview" => k8s_openapi::api::authorization::v1::SelfSubjectRulesReview;
    "certificates.k8s.io/v1", "CertificateSigningRequest" => k8s_openapi::api::certificates::v1::CertificateSigningRequest;
    "storage.k8s.io/v1", "StorageClass" => k8s_openapi::api::storage::v1::StorageClass;
    "storage.k8s.io/v1", "CSIDriver" => k8s_openapi::api::storage::v1::CSIDriver;
    "storage.k8s.io/v1", "CSINode" => k8s_openapi::api::storage::v1::CSINode;
    "storage.k8s.io/v1", "CSIStorageCapacity" => k8s_openapi::api::storage::v1::CSIStorageCapacity;
    "storage.k8s.io/v1", "VolumeAttachment" => k8s_openapi::api::storage::v1::VolumeAttachment;
    "autoscaling/v1", "HorizontalPodAutoscaler" => k8s_openapi::api::autoscaling::v1::HorizontalPodAutoscaler;
    "autoscaling/v2", "HorizontalPodAutoscaler" => k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
    "flowcontrol.apiserver.k8s.io/v1", "FlowSchema" => k8s_openapi::api::flowcontrol::v1::FlowSchema;
    "flowcontrol.apiserver.k8s.io/v1", "PriorityLevelConfiguration" => k8s_openapi::api::flowcontrol::v1::PriorityLevelConfiguration;
    "node.k8s.io/v1", "RuntimeClass" => k8s_openapi::api::node::v1::RuntimeClass;
    "networking.k8s.io/v1", "IPAddress" => k8s_openapi::api::networking::v1::IPAddress;
    "certificates.k8s.io/v1", "ClusterTrustBundle" => k8s_openapi::api::certificates::v1::ClusterTrustBundle;
    "certificates.k8s.io/v1", "PodCertificateRequest" => k8s_openapi::api::certificates::v1::PodCertificateRequest;
    "storage.k8s.io/v1", "VolumeAttributesClass" => k8s_openapi::api::storage::v1::VolumeAttributesClass;
    "admissionregistration.k8s.io/v1", "MutatingAdmissionPolicy" => k8s_openapi::api::admissionregistration::v1::MutatingAdmissionPolicy;
    "admissionregistration.k8s.io/v1", "MutatingAdmissionPolicyBinding" => k8s_openapi::api::admissionregistration::v1::MutatingAdmissionPolicyBinding;
    "resource.k8s.io/v1", "DeviceClass" => k8s_openapi::api::resource::v1::DeviceClass;
    "resource.k8s.io/v1", "DeviceTaintRule" => k8s_openapi::api::resource::v1::DeviceTaintRule;
    "resource.k8s.io/v1", "ResourceClaim" => k8s_openapi::api::resource::v1::ResourceClaim;
    "resource.k8s.io/v1", "ResourceClaimTemplate" => k8s_openapi::api::resource::v1::ResourceClaimTemplate;
    "resource.k8s.io/v1", "ResourceSlice" => k8s_openapi::api::resource::v1::ResourceSlice;
    "storagemigration.k8s.io/v1", "StorageVersionMigration" => k8s_openapi::api::storagemigration::v1::StorageVersionMigration;
    "v1", "ComponentStatus" => k8s_openapi::api::core::v1::ComponentStatus;
    "v1", "Status" => k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
    "apiextensions.k8s.io/v1", "CustomResourceDefinition" => k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    "apiregistration.k8s.io/v1", "APIService" => k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
    "networking.k8s.io/v1", "ServiceCIDR" => k8s_openapi::api::networking::v1::ServiceCIDR;
    "admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration" => k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
    "admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration" => k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
    "admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy" => k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicy;
    "admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding" => k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicyBinding;
    "meta.k8s.io/v1", "DeleteOptions" => k8s_openapi::apimachinery::pkg::apis::meta::v1::DeleteOptions;
}

/// First difference between two JSON values, as a path.
fn diff(path: &str, a: &Value, b: &Value) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x {
                match y.get(k) {
                    None => return Some(format!("{path}.{k}: dropped by k8s-openapi ({va})")),
                    Some(vb) => {
                        if let Some(d) = diff(&format!("{path}.{k}"), va, vb) {
                            return Some(d);
                        }
                    }
                }
            }
            // k8s-openapi writes apiVersion/kind for every embedded resource
            // (e.g. StatefulSet.spec.volumeClaimTemplates[]), but TypeMeta has no
            // protobuf field: Go loses it on the wire too and omits it in JSON.
            let nested = path.contains('.');
            y.keys()
                .filter(|k| !(nested && (*k == "apiVersion" || *k == "kind")))
                .find(|k| !x.contains_key(*k))
                .map(|k| format!("{path}.{k}: added by k8s-openapi ({})", y[k]))
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (va, vb))| diff(&format!("{path}[{i}]"), va, vb)),
        _ if a == b => None,
        // k8s-openapi writes a float64 3 as 3.0, Go as 3: the same number.
        (Value::Number(x), Value::Number(y)) if x.as_f64() == y.as_f64() => None,
        _ => Some(format!("{path}: {a} became {b}")),
    }
}

fn roots() -> Vec<(&'static str, &'static str, &'static Message)> {
    // Lists are their items' messages (and `tests/upstream_bytes.rs` checks
    // lists against kube-apiserver's bytes).
    let mut roots: Vec<_> = schema::ROOTS
        .iter()
        .filter(|(_, kind, _)| !kind.ends_with("List"))
        .copied()
        .collect();
    roots.extend(
        schema::ANY_VERSION_ROOTS
            .iter()
            .map(|(k, m)| ("meta.k8s.io/v1", *k, *m)),
    );
    roots
}

#[test]
fn every_root_round_trips_through_k8s_openapi() {
    let mut failures = Vec::new();
    for (i, (api_version, kind, msg)) in roots().into_iter().enumerate() {
        for seed in 0..8u64 {
            let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (seed << 8) ^ i as u64);
            let raw = gen_message(msg, &mut rng, 0);
            let body = envelope(api_version, kind, &raw);
            let decoded = match crate::decode(&body) {
                Ok(v) => v,
                Err(e) => {
                    failures.push(format!("{api_version} {kind}: decode: {e}"));
                    continue;
                }
            };
            match through_openapi(api_version, kind, &decoded) {
                None => failures.push(format!("{api_version} {kind}: no k8s-openapi type listed")),
                Some(Err(e)) => failures.push(format!("{api_version} {kind}: k8s-openapi: {e}")),
                Some(Ok(back)) => {
                    if let Some(d) = diff(kind, &decoded, &back) {
                        failures.push(format!("{api_version} {kind}: {d}"));
                    }
                }
            }
        }
    }
    failures.dedup();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn tables_are_sorted_and_well_formed() {
    fn check(msg: &'static Message, seen: &mut Vec<&'static str>) {
        if seen.contains(&msg.name) {
            return;
        }
        seen.push(msg.name);
        assert!(
            msg.fields.windows(2).all(|w| w[0].number < w[1].number),
            "{}: fields not sorted by number",
            msg.name
        );
        for field in msg.fields {
            assert_eq!(
                field.card == Card::Inline,
                field.json.is_empty(),
                "{}",
                msg.name
            );
            if let Kind::Msg(inner) | Kind::List(inner) = field.kind {
                check(inner, seen);
            }
        }
    }
    let mut seen = Vec::new();
    for (_, _, msg) in roots() {
        check(msg, &mut seen);
    }
    assert!(seen.len() > 300, "only {} messages reachable", seen.len());
}

// ---------------------------------------------------------------------------
// Edge cases of single values, through a test-only message.

static TEST_LIST: Message = Message {
    name: "test.List",
    fields: &[f(1, "items", Kind::Str, Card::Repeated, Emit::Always)],
};

static TEST_MSG: Message = Message {
    name: "test.Msg",
    fields: &[
        f(1, "duration", Kind::Duration, Card::One, Emit::Always),
        f(2, "time", Kind::Time, Card::One, Emit::OmitEmpty),
        f(3, "timeOmitZero", Kind::Time, Card::One, Emit::OmitZero),
        f(4, "micro", Kind::MicroTime, Card::One, Emit::Always),
        f(5, "ios", Kind::IntOrString, Card::One, Emit::OmitEmpty),
        f(6, "quantity", Kind::Quantity, Card::One, Emit::Always),
        f(7, "fields", Kind::FieldsV1, Card::One, Emit::Always),
        f(8, "raw", Kind::RawExtension, Card::One, Emit::Always),
        f(9, "extra", Kind::List(&TEST_LIST), Card::Map, Emit::Always),
        f(10, "ints", Kind::Int32, Card::Repeated, Emit::Always),
        f(11, "name", Kind::Str, Card::One, Emit::OmitEmpty),
        f(12, "count", Kind::Int64, Card::One, Emit::OmitEmpty),
        f(13, "flag", Kind::Bool, Card::One, Emit::OmitEmpty),
        f(14, "keep", Kind::Str, Card::One, Emit::Always),
        f(15, "child", Kind::Msg(&TEST_MSG), Card::One, Emit::OmitZero),
        f(16, "bytes", Kind::Bytes, Card::Map, Emit::Always),
    ],
};

fn decode_test(raw: &[u8]) -> Result<Value, DecodeError> {
    crate::decode::decode_message(&TEST_MSG, raw, 0).map(Value::Object)
}

fn sub(build: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut v = Vec::new();
    build(&mut v);
    v
}

#[test]
fn well_known_values() {
    let raw = sub(|o| {
        put_len(o, 1, &sub(|d| put_varint(d, 1, 90_500_000_000)));
        put_len(o, 2, &[]);
        put_len(o, 3, &[]);
        put_len(
            o,
            4,
            &sub(|t| {
                put_varint(t, 1, 1_795_289_400);
                put_varint(t, 2, 123_456_999);
            }),
        );
        put_len(
            o,
            5,
            &sub(|i| {
                put_varint(i, 1, 0);
                put_varint(i, 2, -5i64 as u64); // ten-byte negative int32
            }),
        );
        put_len(o, 6, &[]);
        put_len(o, 7, &[]);
        put_len(o, 8, &sub(|r| put_len(r, 1, b" [1, {\"a\": null}]")));
        put_len(
            o,
            9,
            &sub(|e| {
                put_len(e, 1, b"groups");
                put_len(
                    e,
                    2,
                    &sub(|l| {
                        put_len(l, 1, b"a");
                        put_len(l, 1, b"b");
                    }),
                );
            }),
        );
        put_len(o, 9, &sub(|e| put_len(e, 1, b"nil")));
        put_len(
            o,
            10,
            &sub(|p| {
                varint(p, 1);
                varint(p, 300);
                varint(p, -1i64 as u64);
            }),
        );
        put_varint(o, 10, 7);
        put_len(o, 11, b"");
        put_varint(o, 12, 0);
        put_varint(o, 13, 0);
        put_len(o, 14, b"");
        put_len(o, 15, &[]);
        put_len(o, 16, &sub(|e| put_len(e, 1, b"empty")));
    });
    assert_eq!(
        decode_test(&raw).unwrap(),
        json!({
            "duration": "1m30.5s",
            "time": null,
            "micro": "2026-11-21T19:30:00.123456Z",
            "ios": -5,
            "quantity": "0",
            "fields": null,
            "raw": [1, {"a": null}],
            "extra": {"groups": ["a", "b"], "nil": null},
            "ints": [1, 300, -1, 7],
            "keep": "",
            "bytes": {"empty": ""},
        })
    );
}

#[test]
fn go_zero_time_on_the_wire_is_null() {
    let zero = sub(|t| put_varint(t, 1, crate::format::GO_ZERO_TIME_UNIX as u64));
    let raw = sub(|o| {
        put_len(o, 2, &zero);
        put_len(o, 4, &zero);
    });
    assert_eq!(
        decode_test(&raw).unwrap(),
        json!({"time": null, "micro": null})
    );
}

#[test]
fn raw_extension_may_hold_a_protobuf_object() {
    let mut cm = Vec::new();
    put_len(
        &mut cm,
        2,
        &sub(|e| {
            put_len(e, 1, b"k");
            put_len(e, 2, b"v");
        }),
    );
    let nested = envelope("v1", "ConfigMap", &cm);
    let raw = sub(|o| put_len(o, 8, &sub(|r| put_len(r, 1, &nested))));
    assert_eq!(
        decode_test(&raw).unwrap(),
        json!({"raw": {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"}}})
    );
}

#[test]
fn invalid_values_are_errors_with_a_path() {
    let bad_ios = sub(|o| put_len(o, 5, &sub(|i| put_varint(i, 1, 7))));
    let err = decode_test(&bad_ios).unwrap_err();
    assert_eq!(err.path(), Some("ios"));
    assert!(err.to_string().contains("IntOrString"), "{err}");

    let bad_json = sub(|o| put_len(o, 7, &sub(|r| put_len(r, 1, b"{nope"))));
    assert!(matches!(
        decode_test(&bad_json).unwrap_err().root_cause(),
        DecodeError::InvalidValue(m) if m.contains("FieldsV1")
    ));

    let cbor = sub(|o| put_len(o, 8, &sub(|r| put_len(r, 1, &[0xd9, 0xd9, 0xf7, 0xa0]))));
    assert!(decode_test(&cbor).unwrap_err().to_string().contains("CBOR"));

    let far_future = sub(|o| put_len(o, 2, &sub(|t| put_varint(t, 1, 1 << 40))));
    assert!(
        decode_test(&far_future)
            .unwrap_err()
            .to_string()
            .contains("years")
    );

    let wrong_wire = sub(|o| put_varint(o, 11, 1));
    assert_eq!(
        decode_test(&wrong_wire).unwrap_err(),
        DecodeError::At {
            path: "name".into(),
            source: Box::new(DecodeError::WrongWireType {
                expected: 2,
                found: 0
            })
        }
    );

    let nested = sub(|o| {
        put_len(
            o,
            15,
            &sub(|c| put_len(c, 15, &sub(|g| put_len(g, 10, &[0x80])))),
        );
    });
    let err = decode_test(&nested).unwrap_err();
    assert_eq!(err.path(), Some("child.child.ints[0]"));
    assert_eq!(err.root_cause(), &DecodeError::Truncated);
    assert_eq!(
        err.to_string(),
        "child.child.ints[0]: truncated protobuf message"
    );
}

#[test]
fn omission_rules() {
    // OmitZero drops a zero time and an empty struct; OmitEmpty keeps a zero
    // IntOrString (Go never omits structs).
    let raw = sub(|o| {
        put_len(o, 3, &[]);
        put_len(o, 15, &[]);
        put_len(o, 5, &[]);
    });
    assert_eq!(decode_test(&raw).unwrap(), json!({"ios": 0}));
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let mut raw = Vec::new();
    for _ in 0..10_000 {
        let mut outer = Vec::new();
        put_len(&mut outer, 15, &raw);
        raw = outer;
    }
    assert_eq!(
        decode_test(&raw).unwrap_err().root_cause(),
        &DecodeError::TooDeep
    );

    // Nested RawExtension envelopes are bounded too.
    let mut body = envelope("v1", "ConfigMap", &[]);
    for _ in 0..200 {
        let mut rev = Vec::new();
        put_len(&mut rev, 2, &sub(|r| put_len(r, 1, &body)));
        body = envelope("apps/v1", "ControllerRevision", &rev);
    }
    assert_eq!(
        crate::decode(&body).unwrap_err().root_cause(),
        &DecodeError::TooDeep
    );
}
