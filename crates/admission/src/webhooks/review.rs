//! The `AdmissionReview` a webhook is sent (v1 or v1beta1, every request
//! field upstream fills in) and the checks its answer must pass, with
//! upstream's messages (`expected response.uid=…`).

use base64::Engine;
use serde_json::{Map, Value, json};

use registry::{Attributes, Operation};

use webhook::ReviewVersion;

/// What one call is about: the request, and the version (and kind) the
/// webhook matched it in — another served version under `matchPolicy:
/// Equivalent`.
pub struct Invocation<'a> {
    pub attributes: &'a Attributes<'a>,
    pub version: &'a str,
    pub kind: &'a str,
    pub object: Option<&'a Value>,
    pub old_object: Option<&'a Value>,
}

fn api_version(version: ReviewVersion) -> String {
    version.api_version("admission.k8s.io")
}

/// The request's options (`CreateOptions`, `UpdateOptions`, `DeleteOptions`).
fn options(a: &Attributes<'_>) -> Value {
    let kind = match a.operation {
        Operation::Create => "CreateOptions",
        Operation::Update => "UpdateOptions",
        Operation::Delete => "DeleteOptions",
    };
    let mut options = json!({"kind": kind, "apiVersion": "meta.k8s.io/v1"});
    if a.ctx.dry_run {
        options["dryRun"] = json!(["All"]);
    }
    if a.operation != Operation::Delete && !a.ctx.field_manager.is_empty() {
        options["fieldManager"] = json!(a.ctx.field_manager);
    }
    options
}

/// The body POSTed to the webhook.
pub fn request_body(version: ReviewVersion, uid: &str, call: &Invocation<'_>) -> Vec<u8> {
    let a = call.attributes;
    let rtype = a.rtype;
    let request_kind = json!({"group": rtype.group, "version": rtype.version, "kind": rtype.kind});
    let request_resource =
        json!({"group": rtype.group, "version": rtype.version, "resource": rtype.plural});
    let ctx = a.ctx;
    let mut request = Map::new();
    request.insert("uid".into(), json!(uid));
    request.insert(
        "kind".into(),
        json!({"group": rtype.group, "version": call.version, "kind": call.kind}),
    );
    request.insert(
        "resource".into(),
        json!({"group": rtype.group, "version": call.version, "resource": rtype.plural}),
    );
    let subresource = ctx.subresource.as_str();
    if !subresource.is_empty() {
        request.insert("subResource".into(), json!(subresource));
        request.insert("requestSubResource".into(), json!(subresource));
    }
    request.insert("requestKind".into(), request_kind);
    request.insert("requestResource".into(), request_resource);
    if !a.name.is_empty() {
        request.insert("name".into(), json!(a.name));
    }
    if !ctx.namespace.is_empty() {
        request.insert("namespace".into(), json!(ctx.namespace));
    }
    request.insert("operation".into(), json!(a.operation.as_str()));
    let mut user = json!({"username": ctx.user});
    if !ctx.uid.is_empty() {
        user["uid"] = json!(ctx.uid);
    }
    if !ctx.groups.is_empty() {
        user["groups"] = json!(ctx.groups);
    }
    if !ctx.extra.is_empty() {
        user["extra"] = json!(ctx.extra);
    }
    request.insert("userInfo".into(), user);
    request.insert("object".into(), call.object.cloned().unwrap_or(Value::Null));
    request.insert(
        "oldObject".into(),
        call.old_object.cloned().unwrap_or(Value::Null),
    );
    request.insert("dryRun".into(), json!(ctx.dry_run));
    request.insert("options".into(), options(a));
    let review = json!({
        "kind": "AdmissionReview",
        "apiVersion": api_version(version),
        "request": request,
    });
    serde_json::to_vec(&review).unwrap_or_default()
}

/// A webhook's verified answer.
#[derive(Debug, Default)]
pub struct Answer {
    pub allowed: bool,
    /// `response.status` (a `metav1.Status`), when given.
    pub status: Option<Value>,
    /// A JSON patch (decoded from base64), when given.
    pub patch: Option<Vec<u8>>,
    pub warnings: Vec<String>,
    pub audit_annotations: Vec<(String, String)>,
}

/// Why an answer is not one: `received invalid webhook response: …`.
fn invalid(detail: impl std::fmt::Display) -> AnswerError {
    AnswerError::Invalid(detail.to_string())
}

/// Why a webhook's answer is refused: the reason of a failed call, in
/// upstream's words.
#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    /// The body is not an AdmissionReview.
    #[error("failed to call webhook: {0}")]
    Undecodable(serde_json::Error),
    /// The review breaks a rule of the protocol (the detail says which).
    #[error("received invalid webhook response: {0}")]
    Invalid(String),
    /// A mutating webhook's `patchType` other than `JSONPatch`.
    #[error("unsupported patch type {0:?}")]
    UnsupportedPatchType(String),
    /// `patch` is not base64.
    #[error("failed to call webhook: illegal base64 data: {0}")]
    PatchEncoding(base64::DecodeError),
}

/// `apiVersion` and `kind` as Go prints a GroupVersionKind.
fn gvk_text(review: &Value) -> String {
    let api_version = review
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = review.get("kind").and_then(Value::as_str).unwrap_or("");
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    format!("{group}/{version}, Kind={kind}")
}

/// Check the webhook's answer as upstream does; the error is the reason of
/// a failed call.
pub fn verify(
    version: ReviewVersion,
    uid: &str,
    body: &[u8],
    mutating: bool,
) -> Result<Answer, AnswerError> {
    let review: Value = serde_json::from_slice(body).map_err(AnswerError::Undecodable)?;
    let Some(response) = review.get("response").filter(|r| r.is_object()) else {
        return Err(invalid("webhook response was absent"));
    };
    let text = |field: &str| response.get(field).and_then(Value::as_str);
    let patch = text("patch").filter(|p| !p.is_empty());
    let patch_type = response.get("patchType").filter(|t| !t.is_null());
    if version == ReviewVersion::V1 {
        let got = text("uid").unwrap_or("");
        if got != uid {
            return Err(invalid(format!(
                "expected response.uid={uid:?}, got {got:?}"
            )));
        }
        if review.get("apiVersion").and_then(Value::as_str) != Some("admission.k8s.io/v1")
            || review.get("kind").and_then(Value::as_str) != Some("AdmissionReview")
        {
            return Err(invalid(format!(
                "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {}",
                gvk_text(&review)
            )));
        }
        match (mutating, patch.is_some(), patch_type) {
            (true, true, None) => {
                return Err(invalid(
                    "webhook returned response.patch but not response.patchType",
                ));
            }
            (true, false, Some(_)) => {
                return Err(invalid(
                    "webhook returned response.patchType but not response.patch",
                ));
            }
            (true, true, Some(t)) if t.as_str() != Some("JSONPatch") => {
                let t = t.as_str().unwrap_or("");
                return Err(if t.is_empty() {
                    invalid(format!(
                        "webhook returned invalid response.patchType of {t:?}"
                    ))
                } else {
                    AnswerError::UnsupportedPatchType(t.to_string())
                });
            }
            (false, true, _) => {
                return Err(invalid("validating webhook may not return response.patch"));
            }
            (false, false, Some(_)) => {
                return Err(invalid(
                    "validating webhook may not return response.patchType",
                ));
            }
            _ => {}
        }
    }
    let patch = match patch {
        Some(p) if mutating => Some(
            base64::engine::general_purpose::STANDARD
                .decode(p)
                .map_err(AnswerError::PatchEncoding)?,
        ),
        _ => None,
    };
    let warnings = response
        .get("warnings")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(String::from)
        .collect();
    let audit_annotations = response
        .get("auditAnnotations")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect();
    Ok(Answer {
        allowed: response.get("allowed").and_then(Value::as_bool) == Some(true),
        status: response.get("status").filter(|s| s.is_object()).cloned(),
        patch,
        warnings,
        audit_annotations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn review(response: Value) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response,
        }))
        .unwrap()
    }

    #[test]
    fn v1_answers_are_checked_as_upstream() {
        let v1 = ReviewVersion::V1;
        let err = verify(
            v1,
            "u1",
            &review(json!({"uid": "u2", "allowed": true})),
            false,
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            err,
            "received invalid webhook response: expected response.uid=\"u1\", got \"u2\""
        );
        let err = verify(v1, "u1", b"{\"kind\":\"AdmissionReview\"}", false)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "received invalid webhook response: webhook response was absent"
        );
        let no_gvk = serde_json::to_vec(&json!({"response": {"uid": "u1"}})).unwrap();
        assert_eq!(
            verify(v1, "u1", &no_gvk, false).unwrap_err().to_string(),
            "received invalid webhook response: expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got /, Kind="
        );
        let patched = review(json!({"uid": "u1", "allowed": true, "patch": "W10="}));
        assert_eq!(
            verify(v1, "u1", &patched, true).unwrap_err().to_string(),
            "received invalid webhook response: webhook returned response.patch but not response.patchType"
        );
        assert_eq!(
            verify(v1, "u1", &patched, false).unwrap_err().to_string(),
            "received invalid webhook response: validating webhook may not return response.patch"
        );
        let ok = review(
            json!({"uid": "u1", "allowed": true, "patch": "W10=", "patchType": "JSONPatch", "warnings": ["w"]}),
        );
        let answer = verify(v1, "u1", &ok, true).unwrap();
        assert!(answer.allowed);
        assert_eq!(answer.patch.as_deref(), Some(&b"[]"[..]));
        assert_eq!(answer.warnings, ["w"]);
    }

    #[test]
    fn v1beta1_answers_skip_uid_and_kind_checks() {
        let body = serde_json::to_vec(&json!({"response": {"allowed": false}})).unwrap();
        let answer = verify(ReviewVersion::V1beta1, "u1", &body, false).unwrap();
        assert!(!answer.allowed);
    }
}
