//! Legacy service-account tokens: the long-lived JWTs kube-controller-manager's
//! token controller writes into `kubernetes.io/service-account-token` Secrets
//! (issuer `kubernetes/serviceaccount`, no expiry, no audience, the Secret's name
//! among the claims). kube-apiserver's legacy validator (lookup on, its default)
//! accepts one only while its Secret exists, is not being deleted and holds this
//! very token, and its ServiceAccount exists with the uid it names; a Secret
//! labelled `kubernetes.io/legacy-token-invalid-since` refuses it. A token that
//! authenticates gets its Secret labelled `kubernetes.io/legacy-token-last-used:
//! <UTC date>` (LegacyServiceAccountTokenTracking, GA).
//!
//! Not done: upstream's audit annotations (`authentication.k8s.io/legacy-token*`),
//! its warning for auto-generated tokens and its metrics; upstream's 10 s cache of
//! successful token authentications (kubext checks every request, so a revoked
//! token stops at once).

use std::collections::HashSet;
use std::sync::Arc;

use base64::Engine;
use jsonwebtoken::{Algorithm, Validation};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use apimachinery::meta;

use super::Tokens;
use crate::user::UserInfo;

/// The issuer of legacy tokens.
pub const ISSUER: &str = "kubernetes/serviceaccount";
/// The UTC date a Secret's token last authenticated.
pub const LAST_USED_LABEL: &str = "kubernetes.io/legacy-token-last-used";
/// Set (by upstream's token cleaner) on a Secret whose token must not be used.
pub const INVALID_SINCE_LABEL: &str = "kubernetes.io/legacy-token-invalid-since";

/// Who a legacy token is for: what kube-controller-manager puts in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacySubject {
    pub namespace: String,
    pub service_account: String,
    pub service_account_uid: String,
    /// The Secret the token is written to.
    pub secret: String,
}

/// A legacy token's claims. Fields in name order: go-jose writes the claims as
/// a Go map, whose keys `encoding/json` sorts.
#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    aud: Option<Audiences>,
    iss: String,
    #[serde(rename = "kubernetes.io/serviceaccount/namespace", default)]
    namespace: String,
    #[serde(rename = "kubernetes.io/serviceaccount/secret.name", default)]
    secret_name: String,
    #[serde(rename = "kubernetes.io/serviceaccount/service-account.name", default)]
    service_account_name: String,
    #[serde(rename = "kubernetes.io/serviceaccount/service-account.uid", default)]
    service_account_uid: String,
    #[serde(default)]
    sub: String,
}

/// `aud`: one string or a list (RFC 7519).
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
enum Audiences {
    One(String),
    Many(Vec<String>),
}

impl Audiences {
    fn list(self) -> Vec<String> {
        match self {
            Audiences::One(a) => vec![a],
            Audiences::Many(list) => list,
        }
    }
}

/// Why a legacy token was refused: upstream's error texts (logged; the client
/// gets a plain 401 `Unauthorized`, as from kube-apiserver).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Rejection {
    #[error("invalid signature")]
    Signature,
    #[error("token audiences {token} is invalid for the target audiences {target}")]
    Audience { token: String, target: String },
    #[error("{0} claim is missing")]
    MissingClaim(&'static str),
    #[error("sub claim is invalid")]
    Subject,
    #[error("Token has been invalidated")]
    Invalidated,
    #[error("Token does not match server's copy")]
    Mismatch,
    #[error("serviceaccounts \"{0}\" not found")]
    NoServiceAccount(String),
    #[error("ServiceAccount {namespace}/{name} has been deleted")]
    ServiceAccountDeleted { namespace: String, name: String },
    #[error("ServiceAccount UID ({actual}) does not match claim ({claim})")]
    Uid { actual: String, claim: String },
    #[error(
        "the token in secret {namespace}/{secret} for service account {namespace}/{service_account} has been marked invalid. Use tokens from the TokenRequest API or manually created secret-based tokens, or remove the '{INVALID_SINCE_LABEL}' label from the secret to temporarily allow use of this token"
    )]
    MarkedInvalid {
        namespace: String,
        secret: String,
        service_account: String,
    },
}

/// Told when a legacy token authenticates, with its Secret's namespace, name
/// and uid.
pub trait LegacyTokenUse: Send + Sync {
    fn record(&self, namespace: &str, secret: &str, uid: &str);
}

impl Tokens {
    /// Sign a legacy token for `subject` with the service-account signing key.
    pub fn sign_legacy(
        &self,
        subject: &LegacySubject,
    ) -> Result<String, jsonwebtoken::errors::Error> {
        let claims = Claims {
            aud: None,
            iss: ISSUER.to_string(),
            namespace: subject.namespace.clone(),
            secret_name: subject.secret.clone(),
            service_account_name: subject.service_account.clone(),
            service_account_uid: subject.service_account_uid.clone(),
            sub: username(&subject.namespace, &subject.service_account),
        };
        jsonwebtoken::encode(&self.header(), &claims, &self.signing)
    }

    /// The ServiceAccount a legacy token stands for, checked as upstream's
    /// legacy validator checks it.
    pub(super) fn authenticate_legacy(
        &self,
        token: &str,
        audiences: Option<&[String]>,
    ) -> Result<UserInfo, Rejection> {
        let mut validation = Validation::new(Algorithm::ES256);
        validation.set_issuer(&[ISSUER]);
        // Legacy tokens never expire and carry no audience.
        validation.required_spec_claims.clear();
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = false;
        let claims = self
            .verifying
            .iter()
            .find_map(|key| jsonwebtoken::decode::<Claims>(token, key, &validation).ok())
            .ok_or(Rejection::Signature)?
            .claims;
        let Claims {
            aud,
            namespace,
            secret_name,
            service_account_name: name,
            service_account_uid: uid,
            sub,
            ..
        } = claims;
        self.check_audiences(aud.map(Audiences::list).unwrap_or_default(), audiences)?;
        for (value, claim) in [
            (&sub, "sub"),
            (&namespace, "namespace"),
            (&secret_name, "secretName"),
            (&name, "serviceAccountName"),
            (&uid, "serviceAccountUID"),
        ] {
            if value.is_empty() {
                return Err(Rejection::MissingClaim(claim));
            }
        }
        if sub != username(&namespace, &name) {
            return Err(Rejection::Subject);
        }
        let secret = self
            .objects
            .secret(&namespace, &secret_name)
            .filter(|s| meta::deletion_timestamp(s).is_none())
            .ok_or(Rejection::Invalidated)?;
        if !same_bytes(&stored_token(&secret), token.as_bytes()) {
            return Err(Rejection::Mismatch);
        }
        let account = self
            .objects
            .service_account(&namespace, &name)
            .ok_or_else(|| Rejection::NoServiceAccount(name.clone()))?;
        if meta::deletion_timestamp(&account).is_some() {
            return Err(Rejection::ServiceAccountDeleted {
                namespace: namespace.clone(),
                name: name.clone(),
            });
        }
        if meta::uid(&account) != uid {
            return Err(Rejection::Uid {
                actual: meta::uid(&account).to_string(),
                claim: uid,
            });
        }
        // Upstream notes the use even of a token it then refuses.
        self.note_use(&secret);
        if label(&secret, INVALID_SINCE_LABEL).is_some_and(|since| !since.is_empty()) {
            return Err(Rejection::MarkedInvalid {
                namespace,
                secret: secret_name,
                service_account: name,
            });
        }
        Ok(UserInfo {
            name: username(&namespace, &name),
            uid,
            groups: vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{namespace}"),
            ],
            extra: Default::default(),
        })
    }

    /// A token without audiences is meant for the API's; it must share one
    /// with those asked for (a TokenReview's, else the API's).
    fn check_audiences(
        &self,
        token: Vec<String>,
        requested: Option<&[String]>,
    ) -> Result<(), Rejection> {
        let token = if token.is_empty() {
            self.audiences.clone()
        } else {
            token
        };
        let requested = requested.unwrap_or(&self.audiences);
        if token.iter().any(|a| requested.contains(a)) {
            return Ok(());
        }
        Err(Rejection::Audience {
            token: go_quoted(&token),
            target: go_quoted(requested),
        })
    }

    /// Label the Secret with today's date unless it says today or tomorrow
    /// already (upstream's tolerance for clocks a day apart).
    fn note_use(&self, secret: &Value) {
        let Some(recorder) = self.legacy_use.get() else {
            return;
        };
        if !needs_last_used(label(secret, LAST_USED_LABEL), jiff::Timestamp::now()) {
            return;
        }
        recorder.record(
            meta::namespace(secret),
            meta::name(secret),
            meta::uid(secret),
        );
    }
}

fn username(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}

fn label<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    meta::labels(object)?.get(key)?.as_str()
}

/// The Secret's `data.token`, decoded.
fn stored_token(secret: &Value) -> Vec<u8> {
    secret
        .pointer("/data/token")
        .and_then(Value::as_str)
        .and_then(|t| base64::engine::general_purpose::STANDARD.decode(t).ok())
        .unwrap_or_default()
}

/// Equal bytes, compared in time that does not depend on where they differ.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Go's `%q` of a `[]string`: `["a" "b"]`.
fn go_quoted(list: &[String]) -> String {
    let quoted: Vec<String> = list.iter().map(|a| format!("{a:?}")).collect();
    format!("[{}]", quoted.join(" "))
}

/// The UTC date of `now`, as the label writes it.
fn utc_date(now: jiff::Timestamp) -> jiff::civil::Date {
    now.to_zoned(jiff::tz::TimeZone::UTC).date()
}

/// Whether a last-used label of `current` must be rewritten at `now`.
fn needs_last_used(current: Option<&str>, now: jiff::Timestamp) -> bool {
    let today = utc_date(now);
    let tomorrow = today.tomorrow().ok();
    let current = current.unwrap_or_default();
    current != today.to_string() && tomorrow.is_none_or(|t| current != t.to_string())
}

/// Writes the last-used label, as kube-apiserver (its field manager) does with
/// a merge patch: in the background, one write per Secret at a time, only while
/// the Secret (same uid) still needs it.
pub(crate) struct LastUsedLabel {
    secrets: SecretsStore,
    /// Secrets (`namespace/name`) being labelled.
    pending: Arc<parking_lot::Mutex<HashSet<String>>>,
}

/// The Secrets store as of now (`None` once the server is gone or when it
/// serves no Secrets): the catalog changes, so it is looked up per write.
pub(crate) type SecretsStore = Arc<dyn Fn() -> Option<registry::GenericStore> + Send + Sync>;

impl LastUsedLabel {
    pub fn new(secrets: SecretsStore) -> Self {
        LastUsedLabel {
            secrets,
            pending: Default::default(),
        }
    }
}

impl LegacyTokenUse for LastUsedLabel {
    fn record(&self, namespace: &str, secret: &str, uid: &str) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let key = format!("{namespace}/{secret}");
        if !self.pending.lock().insert(key.clone()) {
            return;
        }
        let (secrets, pending) = (self.secrets.clone(), self.pending.clone());
        let (namespace, secret, uid) = (namespace.to_string(), secret.to_string(), uid.to_string());
        runtime.spawn(async move {
            if let Err(error) = label_last_used(&secrets, &namespace, &secret, &uid).await {
                tracing::warn!(%namespace, %secret, %error, "labelling a legacy token's last use");
            }
            pending.lock().remove(&key);
        });
    }
}

async fn label_last_used(
    secrets: &SecretsStore,
    namespace: &str,
    name: &str,
    uid: &str,
) -> Result<(), apimachinery::StatusError> {
    let Some(secrets) = secrets() else {
        return Ok(());
    };
    let ctx = registry::RequestContext {
        user: "system:apiserver".into(),
        groups: vec!["system:masters".into()],
        namespace: namespace.into(),
        field_manager: "kube-apiserver".into(),
        ..Default::default()
    };
    let now = jiff::Timestamp::now();
    let result = secrets
        .update_with(&ctx, name, |current| {
            let mut next = current.clone();
            if meta::uid(current) == uid && needs_last_used(label(current, LAST_USED_LABEL), now) {
                let labels = meta::metadata_mut(&mut next)
                    .entry("labels")
                    .or_insert_with(|| json!({}));
                if !labels.is_object() {
                    *labels = json!({});
                }
                labels[LAST_USED_LABEL] = json!(utc_date(now).to_string());
            }
            Ok(next)
        })
        .await;
    match result {
        Err(e) if e.code() != 404 => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::KeyPairPem;
    use crate::serviceaccounts::{ServiceAccountConfig, TokenObjects};

    /// One ServiceAccount and one Secret, as a test sets them.
    #[derive(Default)]
    struct Objects {
        account: parking_lot::Mutex<Option<Value>>,
        secret: parking_lot::Mutex<Option<Value>>,
    }

    impl TokenObjects for Objects {
        fn service_account(&self, namespace: &str, name: &str) -> Option<Arc<Value>> {
            let account = self.account.lock().clone()?;
            (meta::namespace(&account) == namespace && meta::name(&account) == name)
                .then(|| Arc::new(account))
        }

        fn secret(&self, namespace: &str, name: &str) -> Option<Arc<Value>> {
            let secret = self.secret.lock().clone()?;
            (meta::namespace(&secret) == namespace && meta::name(&secret) == name)
                .then(|| Arc::new(secret))
        }
    }

    fn key_pair() -> KeyPairPem {
        let key = rcgen::KeyPair::generate().unwrap();
        KeyPairPem {
            private_pem: key.serialize_pem(),
            public_pem: key.public_key_pem(),
        }
    }

    /// Tokens, the objects they are checked against, and a token for
    /// `robot`'s Secret `robot-token` as the controller writes it.
    fn setup() -> (Tokens, Arc<Objects>, String) {
        let objects = Arc::new(Objects::default());
        let tokens = Tokens::new(
            &ServiceAccountConfig::default(),
            &key_pair(),
            objects.clone(),
        )
        .unwrap();
        let token = tokens
            .sign_legacy(&LegacySubject {
                namespace: "ns".into(),
                service_account: "robot".into(),
                service_account_uid: "u1".into(),
                secret: "robot-token".into(),
            })
            .unwrap();
        *objects.account.lock() =
            Some(json!({"metadata": {"namespace": "ns", "name": "robot", "uid": "u1"}}));
        *objects.secret.lock() = Some(json!({
            "metadata": {"namespace": "ns", "name": "robot-token", "uid": "s1"},
            "type": "kubernetes.io/service-account-token",
            "data": {"token": base64::engine::general_purpose::STANDARD.encode(&token)},
        }));
        (tokens, objects, token)
    }

    #[test]
    fn a_legacy_token_is_its_account_while_secret_and_account_hold() {
        let (tokens, objects, token) = setup();
        let user = tokens.authenticate(&token, None).unwrap();
        assert_eq!(user.name, "system:serviceaccount:ns:robot");
        assert_eq!(user.uid, "u1");
        assert_eq!(
            user.groups,
            ["system:serviceaccounts", "system:serviceaccounts:ns"]
        );
        assert!(user.extra.is_empty());
        let refused = |objects: &Objects, change: &dyn Fn(&mut Value, &mut Value)| {
            let (account, secret) = (
                objects.account.lock().clone(),
                objects.secret.lock().clone(),
            );
            let (mut a, mut s) = (account.clone().unwrap(), secret.clone().unwrap());
            change(&mut a, &mut s);
            *objects.account.lock() = Some(a);
            *objects.secret.lock() = Some(s);
            let result = tokens.authenticate_legacy(&token, None).err();
            *objects.account.lock() = account;
            *objects.secret.lock() = secret;
            result
        };
        assert_eq!(
            refused(&objects, &|_, s| s["metadata"]["name"] = json!("other")),
            Some(Rejection::Invalidated)
        );
        assert_eq!(
            refused(&objects, &|_, s| s["metadata"]["deletionTimestamp"] =
                json!("2026-01-01T00:00:00Z")),
            Some(Rejection::Invalidated)
        );
        assert_eq!(
            refused(&objects, &|_, s| s["data"]["token"] = json!("eA==")),
            Some(Rejection::Mismatch)
        );
        assert_eq!(
            refused(&objects, &|a, _| a["metadata"]["name"] = json!("other"))
                .map(|r| r.to_string()),
            Some(r#"serviceaccounts "robot" not found"#.into())
        );
        assert_eq!(
            refused(&objects, &|a, _| a["metadata"]["uid"] = json!("u2")).map(|r| r.to_string()),
            Some("ServiceAccount UID (u2) does not match claim (u1)".into())
        );
        assert_eq!(
            refused(&objects, &|a, _| a["metadata"]["deletionTimestamp"] =
                json!("2026-01-01T00:00:00Z"))
            .map(|r| r.to_string()),
            Some("ServiceAccount ns/robot has been deleted".into())
        );
        assert!(matches!(
            refused(&objects, &|_, s| s["metadata"]["labels"] =
                json!({INVALID_SINCE_LABEL: "2026-01-01"})),
            Some(Rejection::MarkedInvalid { .. })
        ));
        assert!(tokens.authenticate(&token, None).is_some());
    }

    #[test]
    fn legacy_tokens_are_for_the_apis_audiences_only() {
        let (tokens, _, token) = setup();
        let api = ["https://kubernetes.default.svc.cluster.local".to_string()];
        assert!(tokens.authenticate(&token, Some(&api)).is_some());
        assert_eq!(
            tokens
                .authenticate_legacy(&token, Some(&["vault".to_string()]))
                .unwrap_err()
                .to_string(),
            r#"token audiences ["https://kubernetes.default.svc.cluster.local"] is invalid for the target audiences ["vault"]"#
        );
    }

    #[test]
    fn tokens_signed_by_another_key_or_with_changed_claims_are_refused() {
        let (tokens, _, token) = setup();
        let (other, _, forged) = setup();
        assert!(other.authenticate(&forged, None).is_some());
        assert_eq!(
            tokens.authenticate_legacy(&forged, None).unwrap_err(),
            Rejection::Signature
        );
        // Another payload under the same signature.
        let parts: Vec<&str> = token.split('.').collect();
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let payload = String::from_utf8(b64.decode(parts[1]).unwrap())
            .unwrap()
            .replace("robot-token", "other-token");
        let tampered = format!("{}.{}.{}", parts[0], b64.encode(payload), parts[2]);
        assert_eq!(
            tokens.authenticate_legacy(&tampered, None).unwrap_err(),
            Rejection::Signature
        );
    }

    #[test]
    fn legacy_tokens_carry_upstreams_header_and_claims() {
        let (_, _, token) = setup();
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let part = |i: usize| {
            String::from_utf8(b64.decode(token.split('.').nth(i).unwrap()).unwrap()).unwrap()
        };
        assert!(
            part(0).starts_with(r#"{"alg":"ES256","kid":""#),
            "{}",
            part(0)
        );
        // Byte for byte as go-jose writes them: keys sorted, nothing else.
        assert_eq!(
            part(1),
            r#"{"iss":"kubernetes/serviceaccount","kubernetes.io/serviceaccount/namespace":"ns","kubernetes.io/serviceaccount/secret.name":"robot-token","kubernetes.io/serviceaccount/service-account.name":"robot","kubernetes.io/serviceaccount/service-account.uid":"u1","sub":"system:serviceaccount:ns:robot"}"#
        );
    }

    #[test]
    fn last_used_is_rewritten_unless_today_or_tomorrow() {
        let now: jiff::Timestamp = "2026-11-28T23:59:59Z".parse().unwrap();
        assert!(needs_last_used(None, now));
        assert!(needs_last_used(Some("2026-11-27"), now));
        assert!(!needs_last_used(Some("2026-11-28"), now));
        assert!(!needs_last_used(Some("2026-11-29"), now));
        assert!(needs_last_used(Some("2026-11-30"), now));
        assert!(needs_last_used(Some("junk"), now));
    }

    #[test]
    fn audiences_print_as_go_does() {
        assert_eq!(go_quoted(&["a".into(), "b c".into()]), r#"["a" "b c"]"#);
    }

    #[test]
    fn bytes_compare() {
        assert!(same_bytes(b"abc", b"abc"));
        assert!(!same_bytes(b"abc", b"abd"));
        assert!(!same_bytes(b"abc", b"ab"));
        assert!(!same_bytes(b"", b"a"));
    }
}
