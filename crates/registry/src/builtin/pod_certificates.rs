//! certificates.k8s.io/v1 PodCertificateRequests (upstream's
//! `ValidatePodCertificateRequestCreate` and the strategy of
//! `pkg/registry/certificates/podcertificaterequest`): a kubelet's request
//! for a pod's certificate, its spec fixed at creation. The stub PKCS#10
//! request is parsed with `x509-parser` (key type and size, signature).
//! Status updates (the signer's answer) are not validated here.

use apimachinery::DynamicObject;
use apimachinery::gofmt::quote;
use apimachinery::validation::{
    FIELD_IMMUTABLE_ERROR_MSG, TOTAL_ANNOTATION_SIZE_LIMIT_B, is_dns1123_subdomain,
    is_qualified_name,
};
use apimachinery::{ErrorList, FieldError, FieldPath};
use base64::Engine;
use serde_json::{Value, json};
use x509_parser::prelude::{FromDer, X509CertificationRequest, X509Error};
use x509_parser::public_key::PublicKey;

use super::certificates::validate_signer_name;
use super::gojson::{self, Form, Go, INT_PTR, Member, RAW, STR, STRING_MAP};
use super::json_fields::{field, object, spec_of, str_of};

const MIN_MAX_EXPIRATION: i64 = 60 * 60;
const KUBERNETES_MAX_MAX_EXPIRATION: i64 = 24 * 60 * 60;
const MAX_MAX_EXPIRATION: i64 = 91 * 24 * 60 * 60;
const MAX_UID_LENGTH: usize = 128;
const MAX_STUB_REQUEST_SIZE: usize = 10 * 1024;

/// `certificates.PodCertificateRequestSpec` (the internal type, with the
/// deprecated key fields v1 no longer has).
const SPEC: Go = Go::Struct(&[
    Member::new("signerName", "SignerName", false, &STR),
    Member::new("podName", "PodName", false, &STR),
    Member::new("podUID", "PodUID", false, &STR),
    Member::new("serviceAccountName", "ServiceAccountName", false, &STR),
    Member::new("serviceAccountUID", "ServiceAccountUID", false, &STR),
    Member::new("nodeName", "NodeName", false, &STR),
    Member::new("nodeUID", "NodeUID", false, &STR),
    Member::new(
        "maxExpirationSeconds",
        "MaxExpirationSeconds",
        true,
        &INT_PTR,
    ),
    Member::new("pkixPublicKey", "PKIXPublicKey", true, &RAW),
    Member::new("proofOfPossession", "ProofOfPossession", true, &RAW),
    Member::new("stubPKCS10Request", "StubPKCS10Request", false, &RAW),
    Member::new(
        "unverifiedUserAnnotations",
        "UnverifiedUserAnnotations",
        true,
        &STRING_MAP,
    ),
]);

/// `SetObjectDefaults_PodCertificateRequest`: certificates for a day.
pub(super) fn default_request(obj: &mut DynamicObject) {
    let Some(spec) = obj
        .as_object_mut()
        .map(|o| o.entry("spec").or_insert_with(|| json!({})))
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    if spec.get("maxExpirationSeconds").is_none_or(Value::is_null) {
        spec.insert("maxExpirationSeconds".into(), json!(86400));
    }
}

/// `ValidatePodCertificateRequestCreate` (metadata is the store's).
pub(super) fn pod_certificate_request(obj: &DynamicObject) -> ErrorList {
    let spec = spec_of(obj);
    let path = FieldPath::new("spec");
    let signer = str_of(spec, "signerName");
    let mut errs = validate_signer_name(&path.child("signerName"), signer);
    if let Some(annotations) = object(spec, "unverifiedUserAnnotations") {
        errs.extend(user_annotations(
            annotations,
            &path.child("unverifiedUserAnnotations"),
        ));
    }
    for (name, uid) in [
        ("podName", "podUID"),
        ("serviceAccountName", "serviceAccountUID"),
        ("nodeName", "nodeUID"),
    ] {
        errs.extend(name_and_uid(spec, name, uid, &path));
    }
    let Some(max) = field(spec, "maxExpirationSeconds") else {
        errs.push(FieldError::required(
            &path.child("maxExpirationSeconds"),
            "must be set",
        ));
        return errs;
    };
    errs.extend(max_expiration(
        max,
        signer,
        &path.child("maxExpirationSeconds"),
    ));
    match stub_request(spec) {
        Some(der) => errs.extend(validate_stub(&der, &path.child("stubPKCS10Request"))),
        None => errs.push(FieldError::invalid_omitted(
            &path,
            "exactly one of (stubPKCS10Request) or (pkixPublicKey, proofOfPossession) must be set",
        )),
    }
    errs
}

/// `ValidatePodCertificateRequestUpdate`: the spec never changes (shown as
/// the internal Go struct).
pub(super) fn pod_certificate_request_update(
    new: &DynamicObject,
    old: &DynamicObject,
) -> ErrorList {
    let spec = |o: &Value| gojson::render(o.get("spec"), &SPEC, Form::Internal);
    let shown = spec(new);
    if shown == spec(old) {
        return ErrorList::new();
    }
    vec![FieldError::invalid_go(
        &FieldPath::new("spec"),
        &shown,
        FIELD_IMMUTABLE_ERROR_MSG,
    )]
}

/// A pod's, service account's or node's name (DNS subdomains, as upstream's
/// name rules for those kinds) and its UID (set, at most 128 bytes).
fn name_and_uid(spec: &Value, name: &str, uid: &str, path: &FieldPath) -> ErrorList {
    let value = str_of(spec, name);
    let mut errs: ErrorList = is_dns1123_subdomain(value)
        .iter()
        .map(|msg| FieldError::invalid(&path.child(name), json!(value), msg))
        .collect();
    let value = str_of(spec, uid);
    if value.is_empty() {
        errs.push(FieldError::invalid(
            &path.child(uid),
            json!(""),
            "must not be empty",
        ));
    }
    if value.len() > MAX_UID_LENGTH {
        errs.push(FieldError::too_long(&path.child(uid), MAX_UID_LENGTH));
    }
    errs
}

/// At least an hour; at most a day for the project's signers, 91 days for others.
fn max_expiration(max: &Value, signer: &str, path: &FieldPath) -> ErrorList {
    let host = signer.split('/').next().unwrap_or("");
    let kubernetes = host == "kubernetes.io" || host.ends_with(".kubernetes.io");
    let upper = if kubernetes {
        KUBERNETES_MAX_MAX_EXPIRATION
    } else {
        MAX_MAX_EXPIRATION
    };
    let seconds = max.as_i64().unwrap_or(0);
    if (MIN_MAX_EXPIRATION..=upper).contains(&seconds) {
        return ErrorList::new();
    }
    vec![FieldError::invalid(
        path,
        json!(seconds),
        &format!("must be in the range [{MIN_MAX_EXPIRATION}, {upper}]"),
    )]
}

/// `ValidateUserAnnotations`: domain-prefixed keys (in any case), within the
/// annotations' size limit.
fn user_annotations(annotations: &serde_json::Map<String, Value>, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut size = 0;
    for (key, value) in annotations {
        size += key.len() + value.as_str().map_or(0, str::len);
        let key = key.to_lowercase();
        if key.is_empty() {
            errs.push(FieldError::required(path, ""));
            continue;
        }
        let msgs = is_qualified_name(&key);
        if !msgs.is_empty() {
            errs.extend(
                msgs.iter()
                    .map(|m| FieldError::invalid(path, json!(key), m)),
            );
        } else if key.split('/').count() != 2 {
            errs.push(FieldError::invalid(
                path,
                json!(key),
                &format!(
                    "must be a domain-prefixed key (such as {})",
                    quote("acme.io/foo")
                ),
            ));
        }
    }
    if size > TOTAL_ANNOTATION_SIZE_LIMIT_B {
        errs.push(FieldError::too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT_B));
    }
    errs
}

/// The stub request's bytes, `None` when there are none (undecodable base64
/// is rejected when the body is decoded upstream).
fn stub_request(spec: &Value) -> Option<Vec<u8>> {
    let text = str_of(spec, "stubPKCS10Request");
    let der = base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap_or_default();
    (!der.is_empty()).then_some(der)
}

/// `validateStubPKCS10Request`: a PKCS#10 request for an Ed25519, ECDSA
/// (P-256, P-384, P-521) or RSA (3072 or 4096 bits) key, properly signed.
fn validate_stub(der: &[u8], path: &FieldPath) -> ErrorList {
    let omitted = |detail: &str| vec![FieldError::invalid_omitted(path, detail)];
    if der.len() > MAX_STUB_REQUEST_SIZE {
        return vec![FieldError::too_long(path, MAX_STUB_REQUEST_SIZE)];
    }
    let Ok(([], request)) = X509CertificationRequest::from_der(der) else {
        return omitted("must be a valid PKCS#10 CSR");
    };
    if let Some(err) = key_error(&request, path) {
        return vec![err];
    }
    match request.verify_signature() {
        Err(X509Error::SignatureVerificationError) => omitted("invalid signature"),
        // An algorithm `ring` cannot check (Go can) passes here.
        _ => ErrorList::new(),
    }
}

/// The key type and size rules.
fn key_error(request: &X509CertificationRequest, path: &FieldPath) -> Option<FieldError> {
    let spki = &request.certification_request_info.subject_pki;
    let algorithm = spki.algorithm.algorithm.to_id_string();
    match (algorithm.as_str(), spki.parsed()) {
        (ED25519, _) => None,
        (EC_PUBLIC_KEY, _) => {
            let curve = spki.algorithm.parameters.as_ref()?.as_oid().ok()?;
            match curve.to_id_string().as_str() {
                P256 | P384 | P521 => None,
                P224 => Some(FieldError::invalid(
                    path,
                    json!("curve P-224"),
                    "elliptic public keys must use curve P256, P384, or P521",
                )),
                _ => Some(FieldError::invalid_omitted(
                    path,
                    "must be a valid PKCS#10 CSR",
                )),
            }
        }
        (_, Ok(PublicKey::RSA(key))) => {
            let bytes = key.modulus.iter().skip_while(|b| **b == 0).count();
            let bits = bytes * 8;
            (bits != 3072 && bits != 4096).then(|| {
                FieldError::invalid(
                    path,
                    json!(format!("{bits}-bit modulus")),
                    "RSA keys must have modulus size 3072 or 4096",
                )
            })
        }
        _ => Some(FieldError::invalid_omitted(
            path,
            "unknown public key type; supported types are Ed25519, ECDSA, and RSA",
        )),
    }
}

const ED25519: &str = "1.3.101.112";
const EC_PUBLIC_KEY: &str = "1.2.840.10045.2.1";
const P224: &str = "1.3.132.0.33";
const P256: &str = "1.2.840.10045.3.1.7";
const P384: &str = "1.3.132.0.34";
const P521: &str = "1.3.132.0.35";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_shown_as_the_internal_struct() {
        let spec = json!({"spec": {"signerName": "example.com/foo", "podName": "q", "maxExpirationSeconds": 86400, "stubPKCS10Request": "AAAA"}});
        assert_eq!(
            gojson::render(spec.get("spec"), &SPEC, Form::Internal),
            r#"{"SignerName":"example.com/foo","PodName":"q","PodUID":"","ServiceAccountName":"","ServiceAccountUID":"","NodeName":"","NodeUID":"","MaxExpirationSeconds":86400,"PKIXPublicKey":null,"ProofOfPossession":null,"StubPKCS10Request":"AAAA","UnverifiedUserAnnotations":null}"#
        );
    }

    #[test]
    fn expiration_ranges() {
        let p = FieldPath::new("m");
        assert!(max_expiration(&json!(86400), "kubernetes.io/x", &p).is_empty());
        assert_eq!(
            max_expiration(&json!(86401), "kubernetes.io/x", &p)[0].to_string(),
            "m: Invalid value: 86401: must be in the range [3600, 86400]"
        );
        assert!(max_expiration(&json!(86401), "example.com/x", &p).is_empty());
    }
}
