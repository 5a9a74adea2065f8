//! The service-account issuer's OpenID Connect discovery documents, as
//! kube-apiserver serves them: `/.well-known/openid-configuration` names the
//! issuer and where its keys are, `/openid/v1/jwks` holds the public keys that
//! verify its tokens. Relying parties outside the cluster (a cloud's workload
//! identity, Vault, an OIDC library) verify service-account tokens with them.
//! Rendered once at start, byte for byte as Go's `encoding/json` writes
//! go-jose's structs (their member order, no trailing newline).

use anyhow::{Result, bail};
use base64::Engine;
use bytes::Bytes;

use apimachinery::json::write_str;
use x509_parser::prelude::FromDer;

/// The configuration path (OIDC Discovery 1.0).
pub const CONFIGURATION_PATH: &str = "/.well-known/openid-configuration";
/// The key set path, the default `jwks_uri`'s.
pub const KEYSET_PATH: &str = "/openid/v1/jwks";

/// The two documents, rendered.
#[derive(Debug, Clone)]
pub struct IssuerDiscovery {
    pub configuration: Bytes,
    pub keyset: Bytes,
}

/// One verifying key as a JWK: kubext signs with EC P-256 keys (ES256).
struct EcKey {
    kid: String,
    x: Vec<u8>,
    y: Vec<u8>,
}

impl IssuerDiscovery {
    /// The documents for `issuer`, whose keys are at `jwks_uri`, verified by
    /// the keys in `public_pems` (PEM SPKI, each with its upstream key id).
    /// Refused as upstream refuses them (the endpoints are then not served):
    /// an issuer that is not an `https` URL without query and fragment.
    pub fn render(issuer: &str, jwks_uri: &str, public_pems: &[(String, String)]) -> Result<Self> {
        check_issuer(issuer)?;
        if !jwks_uri.starts_with("https://") {
            bail!("jwksURI requires https scheme, parsed as: {jwks_uri}");
        }
        let keys = public_pems
            .iter()
            .map(|(kid, pem)| EcKey::from_pem(kid, pem))
            .collect::<Result<Vec<_>>>()?;
        if keys.is_empty() {
            bail!("no keys provided for validating keyset");
        }
        Ok(IssuerDiscovery {
            configuration: configuration(issuer, jwks_uri).into(),
            keyset: keyset(&keys).into(),
        })
    }
}

/// The issuer must be an OIDC issuer identifier (OIDC Discovery 1.0, 3).
fn check_issuer(issuer: &str) -> Result<()> {
    let Some(rest) = issuer.strip_prefix("https://") else {
        bail!("issuer URL must use https scheme, got: {issuer}");
    };
    if rest.contains('?') {
        bail!("issuer URL may not include a query, got: {issuer}");
    }
    if rest.contains('#') {
        bail!("issuer URL may not include a fragment, got: {issuer}");
    }
    Ok(())
}

/// go-jose's `openIDMetadata`, in its member order.
fn configuration(issuer: &str, jwks_uri: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(b"{\"issuer\":");
    write_str(&mut out, issuer);
    out.extend_from_slice(b",\"jwks_uri\":");
    write_str(&mut out, jwks_uri);
    // Only ID tokens, public subjects, and the one algorithm kubext signs with.
    out.extend_from_slice(
        b",\"response_types_supported\":[\"id_token\"],\"subject_types_supported\":[\"public\"],\
          \"id_token_signing_alg_values_supported\":[\"ES256\"]}",
    );
    out
}

/// go-jose's `JSONWebKeySet` of public keys, each in `rawJSONWebKey`'s order.
fn keyset(keys: &[EcKey]) -> Vec<u8> {
    let base64 = &base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut out = Vec::with_capacity(256 * keys.len());
    out.extend_from_slice(b"{\"keys\":[");
    for (i, key) in keys.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"use\":\"sig\",\"kty\":\"EC\",\"kid\":");
        write_str(&mut out, &key.kid);
        out.extend_from_slice(b",\"crv\":\"P-256\",\"alg\":\"ES256\",\"x\":");
        write_str(&mut out, &base64.encode(&key.x));
        out.extend_from_slice(b",\"y\":");
        write_str(&mut out, &base64.encode(&key.y));
        out.push(b'}');
    }
    out.extend_from_slice(b"]}");
    out
}

impl EcKey {
    /// The coordinates of a P-256 public key in PEM SPKI.
    fn from_pem(kid: &str, pem: &str) -> Result<EcKey> {
        let der = super::public_key_der(pem)?;
        let (_, spki) = x509_parser::x509::SubjectPublicKeyInfo::from_der(&der)
            .map_err(|e| anyhow::anyhow!("service-account public key: {e}"))?;
        let curve = spki
            .algorithm
            .parameters
            .as_ref()
            .and_then(|p| p.as_oid().ok());
        if curve != Some(x509_parser::oid_registry::OID_EC_P256) {
            bail!("service-account public key: not an EC P-256 key");
        }
        // An uncompressed point: 0x04, then x and y (32 bytes each).
        let point = spki.subject_public_key.data.as_ref();
        match point {
            [0x04, coordinates @ ..] if coordinates.len() == 64 => Ok(EcKey {
                kid: kid.to_string(),
                x: coordinates[..32].to_vec(),
                y: coordinates[32..].to_vec(),
            }),
            _ => bail!("service-account public key: not an uncompressed P-256 point"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// kube-controller-manager 1.37.2's key of `key_ids_are_upstreams`; the
    /// key set is what go-jose v4.1.9's `JSONWebKeySet` marshals to for it
    /// (kube-apiserver's `/openid/v1/jwks`), run once to get it.
    const PEM: &str = "-----BEGIN PUBLIC KEY-----\n\
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEY2cCohjyh/9Gr3uRk0xsHDffjQOS\n\
Ro5cwuNASTU6jizg0ooLubxbMkn/yS8zt6WLj3BgE3sQWNqF+mOxJpNDDA==\n\
-----END PUBLIC KEY-----\n";
    const KID: &str = "Eh2rnca461T4ahsJMwgpv_cdYQdnS3ND4COKAW_zB_E";

    #[test]
    fn documents_are_written_as_kube_apiserver_writes_them() {
        let discovery = IssuerDiscovery::render(
            "https://kubernetes.default.svc.cluster.local",
            "https://10.0.0.1:6443/openid/v1/jwks",
            &[(KID.to_string(), PEM.to_string())],
        )
        .unwrap();
        assert_eq!(
            discovery.configuration,
            r#"{"issuer":"https://kubernetes.default.svc.cluster.local","jwks_uri":"https://10.0.0.1:6443/openid/v1/jwks","response_types_supported":["id_token"],"subject_types_supported":["public"],"id_token_signing_alg_values_supported":["ES256"]}"#
        );
        assert_eq!(
            discovery.keyset,
            r#"{"keys":[{"use":"sig","kty":"EC","kid":"Eh2rnca461T4ahsJMwgpv_cdYQdnS3ND4COKAW_zB_E","crv":"P-256","alg":"ES256","x":"Y2cCohjyh_9Gr3uRk0xsHDffjQOSRo5cwuNASTU6jiw","y":"4NKKC7m8WzJJ_8kvM7eli49wYBN7EFjahfpjsSaTQww"}]}"#
        );
    }

    #[test]
    fn issuers_that_are_not_oidc_identifiers_are_refused() {
        let keys = [(KID.to_string(), PEM.to_string())];
        let uri = "https://a/openid/v1/jwks";
        for (issuer, error) in [
            (
                "kubernetes.default.svc",
                "issuer URL must use https scheme, got: kubernetes.default.svc",
            ),
            (
                "http://issuer",
                "issuer URL must use https scheme, got: http://issuer",
            ),
            (
                "https://issuer?x=1",
                "issuer URL may not include a query, got: https://issuer?x=1",
            ),
            (
                "https://issuer#x",
                "issuer URL may not include a fragment, got: https://issuer#x",
            ),
        ] {
            let refused = IssuerDiscovery::render(issuer, uri, &keys).unwrap_err();
            assert_eq!(refused.to_string(), error);
        }
        let refused =
            IssuerDiscovery::render("https://issuer", "http://a/jwks", &keys).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "jwksURI requires https scheme, parsed as: http://a/jwks"
        );
    }
}
