//! The service-account token controller (kube-controller-manager's
//! `serviceaccount-token`): a Secret of type `kubernetes.io/service-account-token`
//! naming a ServiceAccount in its `kubernetes.io/service-account.name` annotation
//! gets a legacy token for that account (`data.token`, signed by the server that
//! holds the key), the cluster CA (`data.ca.crt`), its namespace
//! (`data.namespace`) and the account's uid annotation. A token Secret whose
//! account is missing, or has another uid than the Secret's annotation says, is
//! deleted; so are an account's token Secrets when the account goes. A deleted
//! token Secret is dropped from its account's `secrets` list.
//!
//! As upstream: the token is written once (a Secret that has one keeps it), the
//! CA whenever it differs, the namespace when missing; deletions carry the
//! Secret's uid as a precondition. Runs on the controllers' leader only.

use foldhash::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use apimachinery::meta;
use base64::Engine;
use registry::options::DeleteOptions;
use registry::{GenericStore, ListOptions, RequestContext};
use serde_json::{Value, json};

use crate::{Error, api};
use runtime::{self, Event, Reconciler, Reflector, WorkQueue};
use runtime::{Resources, system_context};

pub const SECRET_TYPE: &str = "kubernetes.io/service-account-token";
pub const NAME_ANNOTATION: &str = "kubernetes.io/service-account.name";
pub const UID_ANNOTATION: &str = "kubernetes.io/service-account.uid";

const MANAGER: &str = "kubext-tokens-controller";
/// Upstream's `--concurrent-serviceaccount-token-syncs` default is 5.
const WORKERS: usize = 4;
const RETRY: Duration = Duration::from_millis(100);
const MAX_RETRY: Duration = Duration::from_secs(30);

/// Who a token is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenSubject {
    pub namespace: String,
    pub service_account: String,
    pub service_account_uid: String,
    /// The Secret it is written to (a claim of the token).
    pub secret: String,
}

/// Signing failed; the key lives with the server.
#[derive(Debug, thiserror::Error)]
#[error("signing the token: {0}")]
pub struct SignError(pub String);

/// Signs legacy tokens (with the service-account signing key, which stays with
/// the server's authenticator).
pub trait TokenSigner: Send + Sync + 'static {
    fn sign(&self, subject: &TokenSubject) -> Result<String, SignError>;
}

/// What a worker reconciles.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Key {
    /// A ServiceAccount that changed or went: when it is gone (or replaced by
    /// another uid), its token Secrets go.
    Account {
        namespace: String,
        name: String,
        uid: String,
    },
    /// A token Secret, with the account its annotations named when it was seen
    /// (what a deleted Secret's account reference is removed from; a live
    /// Secret is judged by its current annotations).
    Token {
        namespace: String,
        name: String,
        uid: String,
        account: String,
        account_uid: String,
    },
}

pub struct TokensController<R: Resources> {
    pub resources: Arc<R>,
    pub signer: Arc<dyn TokenSigner>,
    /// PEM of the cluster CA, written as `ca.crt` (empty: none written).
    pub root_ca: String,
}

// ---------------------------------------------------------------------------
// Decisions: pure functions of the objects.

fn annotation<'a>(object: &'a Value, key: &str) -> &'a str {
    meta::annotations(object)
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

pub fn is_token_secret(secret: &Value) -> bool {
    secret.get("type").and_then(Value::as_str) == Some(SECRET_TYPE)
}

/// Whether `secret` is a token of the account `name` with `uid` (upstream's
/// `IsServiceAccountToken`: the name must match, the uid only if annotated).
pub fn is_token_of(secret: &Value, name: &str, uid: &str) -> bool {
    let annotated_uid = annotation(secret, UID_ANNOTATION);
    is_token_secret(secret)
        && annotation(secret, NAME_ANNOTATION) == name
        && (annotated_uid.is_empty() || annotated_uid == uid)
}

fn data_bytes(secret: &Value, key: &str) -> Vec<u8> {
    secret
        .pointer(&format!(
            "/data/{}",
            key.replace('~', "~0").replace('/', "~1")
        ))
        .and_then(Value::as_str)
        .and_then(|v| base64::engine::general_purpose::STANDARD.decode(v).ok())
        .unwrap_or_default()
}

/// What a token Secret lacks (upstream's `secretUpdateNeeded`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Needs {
    pub ca: bool,
    pub namespace: bool,
    pub token: bool,
}

impl Needs {
    pub fn of(secret: &Value, root_ca: &str) -> Needs {
        Needs {
            ca: !root_ca.is_empty() && data_bytes(secret, "ca.crt") != root_ca.as_bytes(),
            namespace: data_bytes(secret, "namespace").is_empty(),
            token: data_bytes(secret, "token").is_empty(),
        }
    }

    pub fn any(self) -> bool {
        self.ca || self.namespace || self.token
    }
}

/// `secret` with what it `needs` filled in and the account's annotations.
pub fn populate(
    secret: &mut Value,
    needs: Needs,
    root_ca: &str,
    token: Option<&str>,
    account: &Value,
) {
    let b64 = |s: &str| json!(base64::engine::general_purpose::STANDARD.encode(s));
    let namespace = meta::namespace(secret).to_string();
    let object = meta::metadata_mut(secret);
    let annotations = object.entry("annotations").or_insert_with(|| json!({}));
    if !annotations.is_object() {
        *annotations = json!({});
    }
    annotations[NAME_ANNOTATION] = json!(meta::name(account));
    annotations[UID_ANNOTATION] = json!(meta::uid(account));
    if !secret.get("data").is_some_and(Value::is_object) {
        secret["data"] = json!({});
    }
    let data = &mut secret["data"];
    if needs.ca {
        data["ca.crt"] = b64(root_ca);
    }
    if needs.namespace {
        data["namespace"] = b64(&namespace);
    }
    if let (true, Some(token)) = (needs.token, token) {
        data["token"] = b64(token);
    }
}

/// The key of a token Secret event, if it is one the controller follows
/// (upstream's filter and key check: the type, a named account).
fn token_key(secret: &Value) -> Option<Key> {
    let account = annotation(secret, NAME_ANNOTATION);
    (is_token_secret(secret) && !account.is_empty()).then(|| Key::Token {
        namespace: meta::namespace(secret).to_string(),
        name: meta::name(secret).to_string(),
        uid: meta::uid(secret).to_string(),
        account: account.to_string(),
        account_uid: annotation(secret, UID_ANNOTATION).to_string(),
    })
}

fn account_key(account: &Value) -> Option<Key> {
    let uid = meta::uid(account);
    (!uid.is_empty()).then(|| Key::Account {
        namespace: meta::namespace(account).to_string(),
        name: meta::name(account).to_string(),
        uid: uid.to_string(),
    })
}

type ObjectName = (String, String);

fn object_name(object: &Value) -> ObjectName {
    (
        meta::namespace(object).to_string(),
        meta::name(object).to_string(),
    )
}

/// The keys of an event; `known` holds the key of every object seen, so a list
/// after lost history also reports what went meanwhile (an informer's deletes
/// on relist).
fn event_keys(
    known: &mut HashMap<ObjectName, Key>,
    event: &Event,
    key_of: fn(&Value) -> Option<Key>,
) -> Vec<Key> {
    match event {
        Event::Restarted(all) => {
            let before = std::mem::take(known);
            for object in all {
                let object = object.value();
                if let Some(key) = key_of(&object) {
                    known.insert(object_name(&object), key);
                }
            }
            let gone = before
                .into_iter()
                .filter(|(name, key)| known.get(name) != Some(key));
            let mut keys: Vec<Key> = gone.map(|(_, key)| key).collect();
            keys.extend(known.values().cloned());
            keys
        }
        Event::Applied(object) => {
            let object = object.value();
            let key = key_of(&object);
            match &key {
                Some(key) => known.insert(object_name(&object), key.clone()),
                None => known.remove(&object_name(&object)),
            };
            key.into_iter().collect()
        }
        Event::Deleted(object) => {
            let object = object.value();
            known.remove(&object_name(&object));
            key_of(&object).into_iter().collect()
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while holding it.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

// ---------------------------------------------------------------------------
// The controller.

impl<R: Resources> TokensController<R> {
    /// Run forever: follow ServiceAccounts and token Secrets.
    pub async fn run(self: Arc<Self>) {
        let (Some(accounts), Some(secrets)) = (
            self.resources.store("", "serviceaccounts"),
            self.resources.store("", "secrets"),
        ) else {
            tracing::error!(
                "serviceaccounts or secrets are not served; the token controller does not run"
            );
            return;
        };
        let queue = WorkQueue::new(RETRY, MAX_RETRY);
        let known_accounts = Mutex::new(HashMap::default());
        let known_secrets = Mutex::new(HashMap::default());
        let feed = async {
            tokio::join!(
                runtime::follow(Reflector::new(accounts, MANAGER), queue.clone(), |e| {
                    event_keys(&mut lock(&known_accounts), e, account_key)
                }),
                runtime::follow(Reflector::new(secrets, MANAGER), queue.clone(), |e| {
                    event_keys(&mut lock(&known_secrets), e, token_key)
                }),
            );
        };
        runtime::run(self.clone(), queue.clone(), WORKERS, feed).await;
    }

    fn store(&self, plural: &'static str) -> Result<Arc<GenericStore>, Error> {
        self.resources
            .store("", plural)
            .ok_or(Error::NotServed(plural))
    }

    /// `name` as it is now, if it exists (with `uid`, when one is given).
    async fn current(
        &self,
        plural: &'static str,
        ctx: &RequestContext,
        name: &str,
        uid: &str,
    ) -> Result<Option<Arc<Value>>, Error> {
        match self.store(plural)?.get(ctx, name).await {
            Ok(object) => {
                let object = object.value();
                Ok((uid.is_empty() || meta::uid(&object) == uid).then_some(object))
            }
            Err(e) if e.code() == 404 => Ok(None),
            Err(e) => Err(api(format!("reading {plural} {name}"))(e)),
        }
    }

    /// An account that changed or went: if it is gone, so are its tokens.
    async fn sync_account(&self, namespace: &str, name: &str, uid: &str) -> Result<(), Error> {
        let ctx = system_context(namespace, MANAGER);
        if self
            .current("serviceaccounts", &ctx, name, uid)
            .await?
            .is_some()
        {
            return Ok(());
        }
        let secrets = self.store("secrets")?;
        let list = secrets
            .list(&ctx, ListOptions::default())
            .await
            .map_err(api(format!("listing secrets of {namespace}")))?;
        for secret in &list.items {
            let secret = secret.value();
            if is_token_of(&secret, name, uid) {
                tracing::info!(
                    namespace,
                    secret = meta::name(&secret),
                    account = name,
                    "service account deleted; deleting its token"
                );
                self.delete_token(&ctx, &secret).await?;
            }
        }
        Ok(())
    }

    /// Delete a token Secret, only the one seen (its uid).
    async fn delete_token(&self, ctx: &RequestContext, secret: &Value) -> Result<(), Error> {
        let opts = DeleteOptions {
            precondition_uid: Some(meta::uid(secret).to_string()),
            ..Default::default()
        };
        let name = meta::name(secret);
        match self.store("secrets")?.delete(ctx, name, &opts).await {
            // Gone already, or another Secret by that name now.
            Err(e) if e.code() != 404 && e.code() != 409 => {
                Err(api(format!("deleting secret {name}"))(e))
            }
            _ => Ok(()),
        }
    }

    async fn sync_token(&self, key: &Key) -> Result<(), Error> {
        let Key::Token {
            namespace,
            name,
            uid,
            account,
            account_uid,
        } = key
        else {
            return Ok(());
        };
        let ctx = system_context(namespace, MANAGER);
        let Some(secret) = self.current("secrets", &ctx, name, uid).await? else {
            return self
                .forget_reference(&ctx, account, account_uid, name)
                .await;
        };
        // Looked up live, as upstream does on a cache miss.
        let (account, account_uid) = (
            annotation(&secret, NAME_ANNOTATION),
            annotation(&secret, UID_ANNOTATION),
        );
        if account.is_empty() {
            return Ok(());
        }
        let Some(account) = self
            .current("serviceaccounts", &ctx, account, account_uid)
            .await?
        else {
            tracing::info!(
                namespace,
                secret = name,
                account,
                "service account does not exist; deleting its token"
            );
            return self.delete_token(&ctx, &secret).await;
        };
        self.populate(&ctx, &secret, &account).await
    }

    /// Fill in what the Secret lacks (upstream's `generateTokenIfNeeded`).
    async fn populate(
        &self,
        ctx: &RequestContext,
        secret: &Value,
        account: &Value,
    ) -> Result<(), Error> {
        let needs = Needs::of(secret, &self.root_ca);
        if !needs.any() {
            return Ok(());
        }
        let name = meta::name(secret);
        let token = match needs.token {
            true => Some(self.signer.sign(&TokenSubject {
                namespace: meta::namespace(secret).to_string(),
                service_account: meta::name(account).to_string(),
                service_account_uid: meta::uid(account).to_string(),
                secret: name.to_string(),
            })?),
            false => None,
        };
        let uid = meta::uid(secret);
        let result = self
            .store("secrets")?
            .update_with(ctx, name, |current| {
                let mut next = current.clone();
                // Written only to the Secret seen, still naming this account.
                let still = meta::uid(current) == uid
                    && is_token_of(current, meta::name(account), meta::uid(account));
                let needs = Needs::of(current, &self.root_ca);
                if still && needs.any() {
                    populate(&mut next, needs, &self.root_ca, token.as_deref(), account);
                }
                Ok(next)
            })
            .await;
        match result {
            Ok(_) => {
                tracing::debug!(namespace = %ctx.namespace, secret = name, "populated service account token");
                Ok(())
            }
            // Deleted meanwhile: nothing to populate.
            Err(e) if e.code() == 404 => Ok(()),
            Err(e) => Err(api(format!("populating secret {name}"))(e)),
        }
    }

    /// A token Secret went: its account (same uid) no longer lists it.
    async fn forget_reference(
        &self,
        ctx: &RequestContext,
        account: &str,
        account_uid: &str,
        secret: &str,
    ) -> Result<(), Error> {
        let listed = |sa: &Value| {
            sa.get("secrets")
                .and_then(Value::as_array)
                .is_some_and(|refs| refs.iter().any(|r| r["name"] == secret))
        };
        let Some(current) = self
            .current("serviceaccounts", ctx, account, account_uid)
            .await?
        else {
            return Ok(());
        };
        if !listed(&current) {
            return Ok(());
        }
        let uid = meta::uid(&current).to_string();
        let result = self
            .store("serviceaccounts")?
            .update_with(ctx, account, |sa| {
                let mut next = sa.clone();
                if meta::uid(sa) == uid
                    && let Some(Value::Array(refs)) = next.get_mut("secrets")
                {
                    refs.retain(|r| r["name"] != secret);
                }
                Ok(next)
            })
            .await;
        match result {
            Err(e) if e.code() != 404 => Err(api(format!("updating serviceaccount {account}"))(e)),
            _ => Ok(()),
        }
    }
}

#[async_trait::async_trait]
impl<R: Resources> Reconciler for TokensController<R> {
    type Key = Key;
    type Error = Error;

    fn name(&self) -> &'static str {
        "serviceaccount-token"
    }

    async fn reconcile(&self, key: &Key) -> Result<(), Error> {
        match key {
            Key::Account {
                namespace,
                name,
                uid,
            } => self.sync_account(namespace, name, uid).await,
            Key::Token { .. } => self.sync_token(key).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(annotations: Value, data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Secret", "type": SECRET_TYPE,
               "metadata": {"name": "s", "namespace": "ns", "uid": "su", "annotations": annotations},
               "data": data})
    }

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    #[test]
    fn tokens_of_an_account_by_name_and_annotated_uid() {
        let named = secret(json!({NAME_ANNOTATION: "sa"}), json!({}));
        assert!(is_token_of(&named, "sa", "u1"));
        assert!(!is_token_of(&named, "other", "u1"));
        let with_uid = secret(
            json!({NAME_ANNOTATION: "sa", UID_ANNOTATION: "u1"}),
            json!({}),
        );
        assert!(is_token_of(&with_uid, "sa", "u1"));
        assert!(!is_token_of(&with_uid, "sa", "u2"));
        let mut opaque = named.clone();
        opaque["type"] = json!("Opaque");
        assert!(!is_token_of(&opaque, "sa", "u1"));
    }

    #[test]
    fn needs_what_is_missing_and_a_different_ca() {
        let empty = secret(json!({NAME_ANNOTATION: "sa"}), json!({}));
        assert_eq!(
            Needs::of(&empty, "CA"),
            Needs {
                ca: true,
                namespace: true,
                token: true
            }
        );
        assert!(!Needs::of(&empty, "").ca);
        let full = secret(
            json!({NAME_ANNOTATION: "sa"}),
            json!({"ca.crt": b64("CA"), "namespace": b64("ns"), "token": b64("t")}),
        );
        assert!(!Needs::of(&full, "CA").any());
        assert_eq!(
            Needs::of(&full, "new CA"),
            Needs {
                ca: true,
                ..Default::default()
            }
        );
    }

    #[test]
    fn populating_fills_data_and_annotations() {
        let account = json!({"metadata": {"name": "sa", "namespace": "ns", "uid": "u1"}});
        let mut s = secret(json!({NAME_ANNOTATION: "sa", "keep": "me"}), json!(null));
        let needs = Needs::of(&s, "CA");
        populate(&mut s, needs, "CA", Some("jwt"), &account);
        assert_eq!(
            s["data"],
            json!({"ca.crt": b64("CA"), "namespace": b64("ns"), "token": b64("jwt")})
        );
        assert_eq!(
            s["metadata"]["annotations"],
            json!({NAME_ANNOTATION: "sa", UID_ANNOTATION: "u1", "keep": "me"})
        );
        // A token already there is kept.
        let mut kept = secret(json!({NAME_ANNOTATION: "sa"}), json!({"token": b64("old")}));
        let needs = Needs::of(&kept, "CA");
        populate(&mut kept, needs, "CA", None, &account);
        assert_eq!(kept["data"]["token"], b64("old"));
    }

    #[test]
    fn keys_follow_annotations_and_relists_report_what_went() {
        let object = |v: Value| Arc::new(registry::Object::new(v));
        let mut known = HashMap::default();
        let s = secret(json!({NAME_ANNOTATION: "sa"}), json!({}));
        let keys = event_keys(&mut known, &Event::Applied(object(s.clone())), token_key);
        assert_eq!(keys.len(), 1);
        // Annotated with the uid: the new key replaces the old one.
        let annotated = secret(
            json!({NAME_ANNOTATION: "sa", UID_ANNOTATION: "u1"}),
            json!({}),
        );
        let keys = event_keys(
            &mut known,
            &Event::Applied(object(annotated.clone())),
            token_key,
        );
        assert_eq!(keys, token_key(&annotated).into_iter().collect::<Vec<_>>());
        // A relist without it reports it gone.
        let keys = event_keys(&mut known, &Event::Restarted(vec![]), token_key);
        assert_eq!(keys, token_key(&annotated).into_iter().collect::<Vec<_>>());
        assert!(known.is_empty());
        // Opaque Secrets are not followed.
        let mut opaque = s;
        opaque["type"] = json!("Opaque");
        assert!(event_keys(&mut known, &Event::Applied(object(opaque)), token_key).is_empty());
    }
}
