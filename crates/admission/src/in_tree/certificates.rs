//! CertificateApproval and CertificateSigning: approving a
//! CertificateSigningRequest (`/approval`) needs `approve`, and writing its
//! certificate or conditions (`/status`) needs `sign`, on the `signers`
//! resource named by its signer, or by the signer's domain and `/*`
//! (upstream's `IsAuthorizedForSignerName`).

use cel_rules::{Authorize, AuthzCheck};
use serde_json::Value;

/// The stored request's `spec.signerName`.
pub fn signer_name(old: Option<&Value>) -> &str {
    old.and_then(|o| o.pointer("/spec/signerName"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Whether a `/status` write changes what only a signer may write.
pub fn status_changed(new: Option<&Value>, old: Option<&Value>) -> bool {
    let part = |o: Option<&Value>, p: &str| o.and_then(|o| o.pointer(p)).cloned();
    ["/status/certificate", "/status/conditions"]
        .iter()
        .any(|p| part(new, p) != part(old, p))
}

/// Whether the requesting user may `verb` the signer: by its name, else by
/// its domain's wildcard.
pub fn may(authorize: Option<&dyn Authorize>, verb: &str, signer: &str) -> bool {
    let Some(authorize) = authorize else {
        return false;
    };
    let domain = signer.split('/').next().unwrap_or("");
    [signer.to_string(), format!("{domain}/*")]
        .into_iter()
        .any(|name| {
            authorize
                .check(&AuthzCheck {
                    verb: verb.into(),
                    group: "certificates.k8s.io".into(),
                    resource: "signers".into(),
                    name,
                    ..AuthzCheck::default()
                })
                .allowed
        })
}
