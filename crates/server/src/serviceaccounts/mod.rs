//! Service-account tokens: `serviceaccounts/<name>/token` (TokenRequest) issues
//! signed JWTs with kube-apiserver's claims, and the authenticator accepts them
//! while the ServiceAccount (same uid) exists; `legacy`: the long-lived tokens of
//! `kubernetes.io/service-account-token` Secrets, signed here for the token
//! controller and accepted while their Secret holds them. Keys:
//! `--service-account-signing-key-file` and `--service-account-key-file`, else a key
//! pair generated in the data dir.

pub mod discovery;
pub mod legacy;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use base64::Engine;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use apimachinery::{ErrorList, FieldError, FieldPath, StatusError};

use crate::pki::KeyPairPem;
use crate::user::UserInfo;

/// The `--service-account-*` and `--api-audiences` flags.
#[derive(Debug, Clone)]
pub struct ServiceAccountConfig {
    pub issuer: String,
    /// Audiences the API accepts; empty means the issuer.
    pub api_audiences: Vec<String>,
    pub signing_key_file: Option<PathBuf>,
    pub key_files: Vec<PathBuf>,
    /// Longest lifetime a TokenRequest gets (longer requests are shortened).
    pub max_token_expiration: Option<Duration>,
    /// Serve the issuer's OpenID Connect discovery documents, as kube-apiserver
    /// does (an extension server does not).
    pub issuer_discovery: bool,
    /// `--service-account-jwks-uri` [default: `https://<advertised address>/openid/v1/jwks`].
    pub jwks_uri: Option<String>,
    /// The address the default `jwks_uri` names (`--advertise-address`)
    /// [default: the bound address, or 127.0.0.1 when bound to all].
    pub advertise_address: Option<std::net::IpAddr>,
}

impl Default for ServiceAccountConfig {
    fn default() -> Self {
        ServiceAccountConfig {
            issuer: "https://kubernetes.default.svc.cluster.local".into(),
            api_audiences: Vec::new(),
            signing_key_file: None,
            key_files: Vec::new(),
            max_token_expiration: None,
            issuer_discovery: false,
            jwks_uri: None,
            advertise_address: None,
        }
    }
}

impl ServiceAccountConfig {
    /// The `jwks_uri` of the discovery document for a server bound to `bound`.
    pub fn jwks_uri_for(&self, bound: std::net::SocketAddr) -> String {
        if let Some(uri) = &self.jwks_uri {
            return uri.clone();
        }
        let ip = match self.advertise_address {
            Some(ip) => ip,
            None if bound.ip().is_unspecified() => std::net::IpAddr::from([127, 0, 0, 1]),
            None => bound.ip(),
        };
        let address = std::net::SocketAddr::new(ip, bound.port());
        format!("https://{address}{}", discovery::KEYSET_PATH)
    }
}

/// The objects a token is checked against, as the watch cache holds them (no IO
/// per request).
pub trait TokenObjects: Send + Sync {
    fn service_account(&self, namespace: &str, name: &str) -> Option<Arc<Value>>;
    fn secret(&self, namespace: &str, name: &str) -> Option<Arc<Value>>;
}

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    aud: Vec<String>,
    exp: i64,
    iat: i64,
    nbf: i64,
    iss: String,
    jti: String,
    sub: String,
    #[serde(rename = "kubernetes.io")]
    kubernetes: KubernetesClaims,
}

#[derive(Debug, Serialize, Deserialize)]
struct KubernetesClaims {
    namespace: String,
    serviceaccount: ObjectRef,
}

#[derive(Debug, Serialize, Deserialize)]
struct ObjectRef {
    name: String,
    uid: String,
}

/// Issues and checks service-account tokens.
pub struct Tokens {
    signing: EncodingKey,
    key_id: String,
    verifying: Vec<DecodingKey>,
    /// Each verifying key's id and PEM, for the discovery key set.
    public_keys: Vec<(String, String)>,
    issuer: String,
    audiences: Vec<String>,
    max_expiration: Option<Duration>,
    objects: Arc<dyn TokenObjects>,
    /// Told when a legacy token is used (the Secret's last-used label); set once
    /// the server that can write Secrets exists.
    legacy_use: OnceLock<Arc<dyn legacy::LegacyTokenUse>>,
}

fn read(path: &PathBuf, flag: &str) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {flag} {}", path.display()))
}

impl Tokens {
    pub fn new(
        config: &ServiceAccountConfig,
        generated: &KeyPairPem,
        objects: Arc<dyn TokenObjects>,
    ) -> Result<Tokens> {
        let (private_pem, mut public_pems) = match &config.signing_key_file {
            Some(path) => {
                let private = read(path, "--service-account-signing-key-file")?;
                let public = rcgen::KeyPair::from_pem(&private)
                    .context("--service-account-signing-key-file: not a PKCS#8 EC key")?
                    .public_key_pem();
                (private, vec![public])
            }
            None => (
                generated.private_pem.clone(),
                vec![generated.public_pem.clone()],
            ),
        };
        for path in &config.key_files {
            public_pems.push(read(path, "--service-account-key-file")?);
        }
        let verifying = public_pems
            .iter()
            .map(|pem| DecodingKey::from_ec_pem(pem.as_bytes()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| anyhow!("service-account public key: {e}"))?;
        let public_keys = public_pems
            .iter()
            .map(|pem| Ok((key_id(pem)?, pem.clone())))
            .collect::<Result<Vec<_>>>()?;
        Ok(Tokens {
            signing: EncodingKey::from_ec_pem(private_pem.as_bytes())
                .map_err(|e| anyhow!("service-account signing key: {e}"))?,
            key_id: public_keys[0].0.clone(),
            verifying,
            public_keys,
            issuer: config.issuer.clone(),
            audiences: if config.api_audiences.is_empty() {
                vec![config.issuer.clone()]
            } else {
                config.api_audiences.clone()
            },
            max_expiration: config.max_token_expiration,
            objects,
            legacy_use: OnceLock::new(),
        })
    }

    /// The issuer's discovery documents, naming `jwks_uri`.
    pub fn issuer_discovery(&self, jwks_uri: &str) -> Result<discovery::IssuerDiscovery> {
        discovery::IssuerDiscovery::render(&self.issuer, jwks_uri, &self.public_keys)
    }

    /// Tell `recorder` whenever a legacy token authenticates (set once).
    pub fn record_legacy_use(&self, recorder: Arc<dyn legacy::LegacyTokenUse>) {
        let _ = self.legacy_use.set(recorder);
    }

    /// A JWS header as go-jose writes kube-apiserver's: algorithm and key id.
    fn header(&self) -> Header {
        Header {
            typ: None,
            kid: Some(self.key_id.clone()),
            ..Header::new(Algorithm::ES256)
        }
    }

    /// The user a token stands for, if it is ours, current, meant for one of
    /// `audiences` (the API's when `None`) and what it names still exists.
    /// Tokens are told apart by their (unverified) issuer, as upstream's
    /// authenticators each claim only their own.
    pub fn authenticate(&self, token: &str, audiences: Option<&[String]>) -> Option<UserInfo> {
        match unverified_issuer(token)? {
            iss if iss == legacy::ISSUER => match self.authenticate_legacy(token, audiences) {
                Ok(user) => Some(user),
                Err(rejection) => {
                    tracing::debug!(%rejection, "legacy service-account token refused");
                    None
                }
            },
            iss if iss == self.issuer => self.authenticate_bound(token, audiences),
            _ => None,
        }
    }

    fn authenticate_bound(&self, token: &str, audiences: Option<&[String]>) -> Option<UserInfo> {
        let mut validation = Validation::new(Algorithm::ES256);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(audiences.unwrap_or(&self.audiences));
        validation.validate_nbf = true;
        validation.leeway = 0;
        let claims = self.verifying.iter().find_map(|key| {
            jsonwebtoken::decode::<Claims>(token, key, &validation)
                .ok()
                .map(|d| d.claims)
        })?;
        let k = &claims.kubernetes;
        let sa = self
            .objects
            .service_account(&k.namespace, &k.serviceaccount.name)?;
        let uid = apimachinery::meta::uid(&sa).to_string();
        if uid != k.serviceaccount.uid {
            return None;
        }
        Some(UserInfo {
            name: format!(
                "system:serviceaccount:{}:{}",
                k.namespace, k.serviceaccount.name
            ),
            uid,
            groups: vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{}", k.namespace),
            ],
            extra: BTreeMap::from([(
                "authentication.kubernetes.io/credential-id".to_string(),
                vec![format!("JTI={}", claims.jti)],
            )]),
        })
    }

    /// Answer a TokenRequest for the ServiceAccount `sa` (its stored object).
    pub fn request(&self, sa: &Value, request: &Value) -> Result<Value, StatusError> {
        let spec = request.get("spec").cloned().unwrap_or(json!({}));
        let path = FieldPath::new("spec");
        let mut errs: ErrorList = Vec::new();
        let requested = spec
            .get("expirationSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(3600);
        if requested < 600 {
            errs.push(FieldError::invalid(
                &path.child("expirationSeconds"),
                json!(requested),
                "may not specify a duration less than 10 minutes",
            ));
        } else if requested > 1 << 32 {
            errs.push(FieldError::invalid(
                &path.child("expirationSeconds"),
                json!(requested),
                "may not specify a duration larger than 2^32 seconds",
            ));
        }
        if spec.get("boundObjectRef").is_some_and(|b| !b.is_null()) {
            errs.push(FieldError::forbidden(
                &path.child("boundObjectRef"),
                "tokens bound to objects are not supported by kubext",
            ));
        }
        let name = apimachinery::meta::name(sa);
        if !errs.is_empty() {
            return Err(StatusError::invalid(
                "authentication.k8s.io",
                "TokenRequest",
                name,
                &errs,
            ));
        }
        let audiences: Vec<String> = match spec.get("audiences").and_then(Value::as_array) {
            Some(a) if !a.is_empty() => a
                .iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect(),
            _ => self.audiences.clone(),
        };
        let lifetime = self
            .max_expiration
            .map_or(requested, |max| requested.min(max.as_secs() as i64));
        let now = jiff::Timestamp::now().as_second();
        let namespace = apimachinery::meta::namespace(sa).to_string();
        let claims = Claims {
            aud: audiences.clone(),
            exp: now + lifetime,
            iat: now,
            nbf: now,
            iss: self.issuer.clone(),
            jti: uuid::Uuid::new_v4().to_string(),
            sub: format!("system:serviceaccount:{namespace}:{name}"),
            kubernetes: KubernetesClaims {
                namespace: namespace.clone(),
                serviceaccount: ObjectRef {
                    name: name.to_string(),
                    uid: apimachinery::meta::uid(sa).to_string(),
                },
            },
        };
        let token = jsonwebtoken::encode(&self.header(), &claims, &self.signing)
            .map_err(|e| StatusError::internal(format!("signing the token: {e}")))?;
        let expires = jiff::Timestamp::from_second(now + lifetime)
            .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
            .unwrap_or_default();
        Ok(json!({
            "kind": "TokenRequest",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"audiences": audiences, "expirationSeconds": lifetime, "boundObjectRef": null},
            "status": {"token": token, "expirationTimestamp": expires},
        }))
    }
}

/// The `iss` of a compact JWS, read without checking anything (to pick the
/// authenticator, as upstream's `hasCorrectIssuer`).
fn unverified_issuer(token: &str) -> Option<String> {
    let mut parts = token.split('.');
    let (Some(_), Some(payload), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .ok()?;
    #[derive(Deserialize)]
    struct Issuer {
        #[serde(default)]
        iss: String,
    }
    serde_json::from_slice::<Issuer>(&payload)
        .ok()
        .map(|c| c.iss)
}

/// Upstream's key id: the unpadded base64url SHA-256 of the public key's
/// PKIX DER (the body of its PEM).
fn key_id(public_pem: &str) -> Result<String> {
    let der = public_key_der(public_pem)?;
    let digest = ring::digest::digest(&ring::digest::SHA256, &der);
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest.as_ref()))
}

/// The DER body of a public key's PEM.
fn public_key_der(public_pem: &str) -> Result<Vec<u8>> {
    let body: String = public_pem
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .map(str::trim)
        .collect();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .context("service-account public key: not PEM")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_ids_are_upstreams() {
        // A P-256 public key and the `kid` kube-controller-manager 1.37.2 put in
        // the tokens it signed with its private half.
        let pem = "-----BEGIN PUBLIC KEY-----\n\
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEY2cCohjyh/9Gr3uRk0xsHDffjQOS\n\
Ro5cwuNASTU6jizg0ooLubxbMkn/yS8zt6WLj3BgE3sQWNqF+mOxJpNDDA==\n\
-----END PUBLIC KEY-----\n";
        assert_eq!(
            key_id(pem).unwrap(),
            "Eh2rnca461T4ahsJMwgpv_cdYQdnS3ND4COKAW_zB_E"
        );
    }

    #[test]
    fn issuers_are_read_from_the_payload() {
        let b64 = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        let token = format!(
            "{}.{}.sig",
            b64("{}"),
            b64(r#"{"iss":"kubernetes/serviceaccount"}"#)
        );
        assert_eq!(
            unverified_issuer(&token).as_deref(),
            Some("kubernetes/serviceaccount")
        );
        assert_eq!(unverified_issuer("a.b"), None);
        assert_eq!(unverified_issuer(&format!("{token}.x")), None);
    }
}
