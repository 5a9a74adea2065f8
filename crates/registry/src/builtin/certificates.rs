//! certificates.k8s.io/v1 CertificateSigningRequests (upstream's
//! `pkg/registry/certificates/certificates` strategies and
//! `pkg/apis/certificates/validation`): the requesting user is recorded in
//! `spec` on create whatever the client sent, `spec` never changes afterwards,
//! `/status` writes the certificate (once) and conditions other than Approved
//! and Denied, `/approval` writes the conditions. The `approve` and `sign`
//! permissions on `signers` are the admission plugins' (`kubext-admission`).
//! The request's PEM block is checked for its type, not parsed as x509.

use apimachinery::DynamicObject;
use apimachinery::gofmt::quote;
use apimachinery::validation::{is_dns1123_label, is_dns1123_subdomain};
use apimachinery::{ErrorList, FieldError, FieldPath, Subresource};
use serde_json::{Map, Value, json};

use super::printers;
use crate::options::RequestContext;
use crate::resource::{Prepared, Strategy};

const APPROVED: &str = "Approved";
const DENIED: &str = "Denied";
const FAILED: &str = "Failed";

/// `certificates.KeyUsage` values, sorted as upstream lists them.
const USAGES: [&str; 23] = [
    "any",
    "cert sign",
    "client auth",
    "code signing",
    "content commitment",
    "crl sign",
    "data encipherment",
    "decipher only",
    "digital signature",
    "email protection",
    "encipher only",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "key agreement",
    "key encipherment",
    "microsoft sgc",
    "netscape sgc",
    "ocsp signing",
    "s/mime",
    "server auth",
    "signing",
    "timestamping",
];

pub struct Csrs;

impl Strategy for Csrs {
    /// Users cannot create pre-approved requests: `status` starts empty.
    fn prepare_create(&self, obj: &mut DynamicObject) -> Prepared {
        obj["status"] = json!({});
        Prepared::BodyChanged
    }

    /// Who asked is the authenticated user, not what the body claims.
    fn prepare_create_for(&self, obj: &mut DynamicObject, ctx: &RequestContext) -> Prepared {
        self.prepare_create(obj);
        if !obj.get("spec").is_some_and(Value::is_object) {
            obj["spec"] = json!({});
        }
        let Some(spec) = obj["spec"].as_object_mut() else {
            return Prepared::BodyChanged;
        };
        for field in ["username", "uid", "groups", "extra"] {
            spec.remove(field);
        }
        if !ctx.user.is_empty() {
            spec.insert("username".into(), json!(ctx.user));
        }
        if !ctx.uid.is_empty() {
            spec.insert("uid".into(), json!(ctx.uid));
        }
        if !ctx.groups.is_empty() {
            spec.insert("groups".into(), json!(ctx.groups));
        }
        if !ctx.extra.is_empty() {
            spec.insert("extra".into(), json!(ctx.extra));
        }
        Prepared::BodyChanged
    }

    /// The main resource changes only metadata.
    fn prepare_update(&self, new: &mut DynamicObject, old: &DynamicObject) {
        for part in ["spec", "status"] {
            match old.get(part) {
                Some(v) => new[part] = v.clone(),
                None => {
                    if let Some(map) = new.as_object_mut() {
                        map.remove(part);
                    }
                }
            }
        }
    }

    /// `/status`: the spec is kept and Approved/Denied conditions stay as
    /// they were unless one was added or removed (validation refuses that);
    /// metadata is written as sent.
    fn prepare_status_update(&self, new: &mut DynamicObject, old: &DynamicObject) {
        new["spec"] = old.get("spec").cloned().unwrap_or(json!({}));
        for kind in [APPROVED, DENIED] {
            preserve_conditions(new, old, kind);
        }
        populate_condition_timestamps(new, old);
    }

    fn subresource_update(
        &self,
        subresource: &Subresource,
        new: &mut DynamicObject,
        old: &DynamicObject,
    ) -> Option<ErrorList> {
        if *subresource != Subresource::Approval {
            return None;
        }
        populate_condition_timestamps(new, old);
        let conditions = new.pointer("/status/conditions").cloned();
        let metadata = std::mem::take(&mut new.metadata);
        *new = old.clone();
        new.metadata = metadata;
        if !new.get("status").is_some_and(Value::is_object) {
            new["status"] = json!({});
        }
        match conditions {
            Some(c) => new["status"]["conditions"] = c,
            None => {
                if let Some(status) = new["status"].as_object_mut() {
                    status.remove("conditions");
                }
            }
        }
        let mut errs = validate_csr(new);
        errs.extend(update_rules(new, old, Rules::Approval));
        Some(errs)
    }

    fn validate(&self, obj: &DynamicObject) -> ErrorList {
        validate_csr(obj)
    }

    /// The main resource keeps spec and status, so only `/status`'s rules can
    /// fail here.
    fn validate_update(&self, new: &DynamicObject, old: &DynamicObject) -> ErrorList {
        let mut errs = validate_csr(new);
        errs.extend(update_rules(new, old, Rules::Status));
        errs
    }

    fn field(&self, obj: &Value, field: &str) -> Option<String> {
        super::field_labels::value(
            "certificates.k8s.io",
            "CertificateSigningRequest",
            obj,
            field,
        )
    }

    fn row(&self, obj: &Value) -> Vec<Value> {
        printers::printer("certificates.k8s.io", "CertificateSigningRequest")
            .map_or_else(Vec::new, |p| (p.row)(obj))
    }
}

fn conditions(obj: &Value) -> &[Value] {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn of_type<'a>(obj: &'a Value, kind: &str) -> Vec<&'a Value> {
    conditions(obj)
        .iter()
        .filter(|c| text(c, "type") == kind)
        .collect()
}

/// `preserveConditionInstances`: when the number of `kind` conditions is
/// unchanged, the stored ones are put back in their places.
fn preserve_conditions(new: &mut Value, old: &Value, kind: &str) {
    let stored: Vec<Value> = of_type(old, kind).into_iter().cloned().collect();
    if of_type(new, kind).len() != stored.len() {
        return;
    }
    let Some(list) = new
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    let mut stored = stored.into_iter();
    for c in list.iter_mut().filter(|c| text(c, "type") == kind) {
        if let Some(s) = stored.next() {
            *c = s;
        }
    }
}

/// `populateConditionTimestamps`: a condition without `lastUpdateTime` is
/// updated now; without `lastTransitionTime` it transitioned when a stored
/// condition of its type and status did, else now.
fn populate_condition_timestamps(new: &mut Value, old: &Value) {
    let now = apimachinery::time::now_rfc3339();
    let Some(list) = new
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for c in list.iter_mut() {
        let Some(map) = c.as_object_mut() else {
            continue;
        };
        let unset = |m: &Map<String, Value>, k: &str| {
            m.get(k).and_then(Value::as_str).is_none_or(str::is_empty)
        };
        if unset(map, "lastUpdateTime") {
            map.insert("lastUpdateTime".into(), json!(now));
        }
        if unset(map, "lastTransitionTime") {
            let (kind, status) = (
                map.get("type").cloned().unwrap_or(Value::Null),
                map.get("status").cloned().unwrap_or(Value::Null),
            );
            let earlier = conditions(old)
                .iter()
                .find(|o| o.get("type") == Some(&kind) && o.get("status") == Some(&status))
                .and_then(|o| o.get("lastTransitionTime"))
                .filter(|t| t.as_str().is_some_and(|t| !t.is_empty()))
                .cloned();
            map.insert(
                "lastTransitionTime".into(),
                earlier.unwrap_or_else(|| json!(now)),
            );
        }
    }
}

/// `ValidateCertificateSigningRequestCreate` (the request's PEM type, usages,
/// signer name, expiration, conditions).
fn validate_csr(obj: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let path = FieldPath::new("spec");
    validate_request(text(spec, "request"), &path.child("request"), &mut errs);
    validate_usages(spec, &path.child("usages"), &mut errs);
    let signer = text(spec, "signerName");
    if signer == "kubernetes.io/legacy-unknown" {
        errs.push(FieldError::invalid(
            &path.child("signerName"),
            json!(signer),
            "the legacy signerName is not allowed via this API version",
        ));
    } else {
        errs.extend(validate_signer_name(&path.child("signerName"), signer));
    }
    if let Some(seconds) = spec.get("expirationSeconds").and_then(Value::as_i64)
        && seconds < 600
    {
        errs.push(FieldError::invalid(
            &path.child("expirationSeconds"),
            json!(seconds),
            "may not specify a duration less than 600 seconds (10 minutes)",
        ));
    }
    validate_conditions(
        obj,
        &FieldPath::new("status").child("conditions"),
        &mut errs,
    );
    errs
}

/// The request is a base64 PEM `CERTIFICATE REQUEST` block (upstream prints
/// the bytes as Go's `%#v`).
fn validate_request(request: &str, path: &FieldPath, errs: &mut ErrorList) {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(request)
        .unwrap_or_default();
    let pem = String::from_utf8_lossy(&bytes);
    if pem.contains("-----BEGIN CERTIFICATE REQUEST-----") {
        return;
    }
    errs.push(FieldError::invalid_go(
        path,
        &go_bytes(&bytes),
        "PEM block type must be CERTIFICATE REQUEST",
    ));
}

/// Go's `%#v` of a `[]byte`.
fn go_bytes(bytes: &[u8]) -> String {
    let items: Vec<String> = bytes.iter().map(|b| format!("0x{b:x}")).collect();
    format!("[]byte{{{}}}", items.join(", "))
}

fn validate_usages(spec: &Value, path: &FieldPath, errs: &mut ErrorList) {
    let usages = spec
        .get("usages")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    if usages.is_empty() {
        errs.push(FieldError::required(path, ""));
    }
    let mut seen: Vec<&str> = Vec::new();
    for (i, usage) in usages.iter().enumerate() {
        let usage = usage.as_str().unwrap_or("");
        if !USAGES.contains(&usage) {
            errs.push(FieldError::not_supported(
                &path.index(i),
                json!(usage),
                &USAGES,
            ));
        }
        if seen.contains(&usage) {
            errs.push(FieldError::duplicate(&path.index(i), json!(usage)));
        } else {
            seen.push(usage);
        }
    }
}

/// `ValidateSignerName`: `<domain>/<path>`, the domain made of DNS labels
/// (at least two), the path of DNS subdomains.
pub(super) fn validate_signer_name(path: &FieldPath, signer: &str) -> ErrorList {
    const SUBDOMAIN_MAX: usize = 253;
    const SIGNER_MAX: usize = SUBDOMAIN_MAX + (SUBDOMAIN_MAX + 63 + 1) + 1;
    let mut errs = ErrorList::new();
    if signer.is_empty() {
        errs.push(FieldError::required(path, ""));
        return errs;
    }
    let segments: Vec<&str> = signer.split('/').collect();
    let [domain, rest] = segments.as_slice() else {
        errs.push(FieldError::invalid(
            path,
            json!(signer),
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        ));
        return errs;
    };
    if domain.len() > SUBDOMAIN_MAX {
        errs.push(FieldError::too_long(path, SUBDOMAIN_MAX));
    }
    let labels: Vec<&str> = domain.split('.').collect();
    if let Some((label, msgs)) = labels
        .iter()
        .map(|l| (l, is_dns1123_label(l)))
        .find(|(_, msgs)| !msgs.is_empty())
    {
        for msg in msgs {
            let detail = format!("validating label {}: {msg}", quote(label));
            errs.push(FieldError::invalid(path, json!(domain), &detail));
        }
    }
    if labels.len() < 2 {
        errs.push(FieldError::invalid(
            path,
            json!(domain),
            "should be a domain with at least two segments separated by dots",
        ));
    }
    if let Some((label, msgs)) = rest
        .split('.')
        .map(|l| (l, is_dns1123_subdomain(l)))
        .find(|(_, msgs)| !msgs.is_empty())
    {
        for msg in msgs {
            let detail = format!("validating label {}: {msg}", quote(label));
            errs.push(FieldError::invalid(path, json!(rest), &detail));
        }
    }
    if signer.len() > SIGNER_MAX {
        errs.push(FieldError::too_long(path, SIGNER_MAX));
    }
    errs
}

/// `validateConditions`: a type and status each; Approved, Denied and Failed
/// only `True`; Approved and Denied exclusive; each type once.
fn validate_conditions(obj: &Value, path: &FieldPath, errs: &mut ErrorList) {
    let (mut approved, mut denied) = (false, false);
    let mut seen: Vec<&str> = Vec::new();
    for (i, c) in conditions(obj).iter().enumerate() {
        let at = path.index(i);
        let kind = text(c, "type");
        let status = text(c, "status");
        if kind.is_empty() {
            errs.push(FieldError::required(&at.child("type"), ""));
        }
        if status.is_empty() {
            errs.push(FieldError::required(&at.child("status"), ""));
        } else if matches!(kind, APPROVED | DENIED | FAILED) {
            if status != "True" {
                errs.push(FieldError::not_supported(
                    &at.child("status"),
                    json!(status),
                    &["True"],
                ));
            }
        } else if !matches!(status, "False" | "True" | "Unknown") {
            errs.push(FieldError::not_supported(
                &at.child("status"),
                json!(status),
                &["False", "True", "Unknown"],
            ));
        }
        let exclusive = match kind {
            APPROVED => {
                approved = true;
                denied
            }
            DENIED => {
                denied = true;
                approved
            }
            _ => false,
        };
        if exclusive {
            errs.push(FieldError::invalid(
                &at.child("type"),
                json!(kind),
                "Approved and Denied conditions are mutually exclusive",
            ));
        }
        if seen.contains(&kind) {
            errs.push(FieldError::duplicate(&at.child("type"), json!(kind)));
        } else if !kind.is_empty() {
            seen.push(kind);
        }
    }
}

/// Which update path: `/status` may set the certificate once but not touch
/// Approved/Denied; `/approval` may add or change those.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rules {
    Status,
    Approval,
}

/// `validateCertificateSigningRequestUpdate`'s rules between versions.
fn update_rules(new: &Value, old: &Value, rules: Rules) -> ErrorList {
    let mut errs = ErrorList::new();
    let path = FieldPath::new("status").child("conditions");
    for kind in [APPROVED, DENIED, FAILED] {
        let (now, before) = (of_type(new, kind), of_type(old, kind));
        if now.len() < before.len() {
            errs.push(FieldError::forbidden(
                &path,
                &format!("updates may not remove a condition of type {}", quote(kind)),
            ));
        } else if rules == Rules::Status && kind != FAILED {
            if now.len() > before.len() {
                errs.push(FieldError::forbidden(
                    &path,
                    &format!("updates may not add a condition of type {}", quote(kind)),
                ));
            } else if now != before {
                // Upstream appends a go-cmp diff, which cannot be reproduced.
                errs.push(FieldError::forbidden(
                    &path,
                    &format!("updates may not modify a condition of type {}", quote(kind)),
                ));
            }
        }
    }
    let certificate = |o: &Value| {
        o.pointer("/status/certificate")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let (now, before) = (certificate(new), certificate(old));
    if rules == Rules::Status && !before.is_empty() && now != before {
        errs.push(FieldError::forbidden(
            &FieldPath::new("status").child("certificate"),
            "updates may not modify existing certificate content",
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(errs: ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    /// `ValidateSignerName`'s and the conditions' messages (upstream's
    /// `validation_test.go` cases).
    #[test]
    fn signer_names_and_conditions_as_upstream() {
        let path = FieldPath::new("spec").child("signerName");
        assert!(validate_signer_name(&path, "example.com/signer").is_empty());
        assert_eq!(
            messages(validate_signer_name(&path, "example.com")),
            [
                "spec.signerName: Invalid value: \"example.com\": must be a fully qualified domain and path of the form 'example.com/signer-name'"
            ]
        );
        assert_eq!(
            messages(validate_signer_name(&path, "example/signer")),
            [
                "spec.signerName: Invalid value: \"example\": should be a domain with at least two segments separated by dots"
            ]
        );
        let csr = json!({"status": {"conditions": [
            {"type": "Approved", "status": "True"},
            {"type": "Denied", "status": "False"},
            {"type": "Approved", "status": "True"},
        ]}});
        let mut errs = ErrorList::new();
        validate_conditions(
            &csr,
            &FieldPath::new("status").child("conditions"),
            &mut errs,
        );
        assert_eq!(
            messages(errs),
            [
                "status.conditions[1].status: Unsupported value: \"False\": supported values: \"True\"",
                "status.conditions[1].type: Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive",
                "status.conditions[2].type: Invalid value: \"Approved\": Approved and Denied conditions are mutually exclusive",
                "status.conditions[2].type: Duplicate value: \"Approved\"",
            ]
        );
    }

    #[test]
    fn status_may_not_touch_approval_and_approval_may_not_remove_it() {
        let old = json!({"status": {"conditions": [{"type": "Approved", "status": "True"}]}});
        let none = json!({"status": {}});
        assert_eq!(
            messages(update_rules(&none, &old, Rules::Approval)),
            [
                "status.conditions: Forbidden: updates may not remove a condition of type \"Approved\""
            ]
        );
        assert_eq!(
            messages(update_rules(&old, &none, Rules::Status)),
            ["status.conditions: Forbidden: updates may not add a condition of type \"Approved\""]
        );
        assert!(update_rules(&old, &none, Rules::Approval).is_empty());
    }
}
