//! Service-account tokens: `serviceaccounts/<name>/token` (TokenRequest) issues
//! signed JWTs with kube-apiserver's claims, and the authenticator accepts them
//! while the ServiceAccount (same uid) exists. Keys: `--service-account-signing-key-file`
//! and `--service-account-key-file`, else a key pair generated in the data dir.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use base64::Engine;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use apimachinery::{ErrorList, FieldError, FieldPath, StatusError};

use crate::authn::UserInfo;
use crate::pki::KeyPairPem;

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
}

impl Default for ServiceAccountConfig {
    fn default() -> Self {
        ServiceAccountConfig {
            issuer: "https://kubernetes.default.svc.cluster.local".into(),
            api_audiences: Vec::new(),
            signing_key_file: None,
            key_files: Vec::new(),
            max_token_expiration: None,
        }
    }
}

/// The uid of ServiceAccount `namespace/name`, if it exists.
pub type ServiceAccountLookup = Arc<dyn Fn(&str, &str) -> Option<String> + Send + Sync>;

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
    issuer: String,
    audiences: Vec<String>,
    max_expiration: Option<Duration>,
    lookup: ServiceAccountLookup,
}

fn read(path: &PathBuf, flag: &str) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {flag} {}", path.display()))
}

impl Tokens {
    pub fn new(
        config: &ServiceAccountConfig,
        generated: &KeyPairPem,
        lookup: ServiceAccountLookup,
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
        let digest = ring::digest::digest(&ring::digest::SHA256, public_pems[0].as_bytes());
        Ok(Tokens {
            signing: EncodingKey::from_ec_pem(private_pem.as_bytes())
                .map_err(|e| anyhow!("service-account signing key: {e}"))?,
            key_id: base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest.as_ref()),
            verifying,
            issuer: config.issuer.clone(),
            audiences: if config.api_audiences.is_empty() {
                vec![config.issuer.clone()]
            } else {
                config.api_audiences.clone()
            },
            max_expiration: config.max_token_expiration,
            lookup,
        })
    }

    /// The user a token stands for, if it is ours, current, meant for one of
    /// `audiences` (the API's when `None`) and its ServiceAccount still exists.
    pub fn authenticate(&self, token: &str, audiences: Option<&[String]>) -> Option<UserInfo> {
        if token.split('.').count() != 3 {
            return None;
        }
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
        let uid = (self.lookup)(&k.namespace, &k.serviceaccount.name)?;
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
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.key_id.clone());
        let token = jsonwebtoken::encode(&header, &claims, &self.signing)
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
