//! What an extension server takes from its main server: whom to trust (the
//! `kube-system/extension-apiserver-authentication` ConfigMap), who a bearer
//! token stands for (TokenReviews) and who may do what (SubjectAccessReviews).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, TokenReviewStatus};
use parking_lot::Mutex;
use serde_json::{Value, json};
use server::authn::TokenReviewer;
use server::authz::{Attributes, Authorizer, Decision};
use server::front_proxy::FrontProxyConfig;
use server::user::UserInfo;

/// The main server's trust settings, with its CAs written to files.
pub struct Trust {
    pub client_ca_file: PathBuf,
    pub front_proxy: FrontProxyConfig,
}

/// Read the main server's authentication ConfigMap and keep its CAs in `dir`.
pub async fn trust(client: &kube::Client, dir: &Path) -> Result<Trust> {
    let cms: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(
        client.clone(),
        "kube-system",
        &kube::api::ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("", "v1", "ConfigMap"),
            "configmaps",
        ),
    );
    let cm = cms
        .get("extension-apiserver-authentication")
        .await
        .context(
            "cannot read kube-system/extension-apiserver-authentication from the main server",
        )?;
    let data = &cm.data["data"];
    let text = |key: &str| data[key].as_str().unwrap_or_default().to_string();
    let list = |key: &str| -> Result<Vec<String>> {
        let raw = text(key);
        if raw.is_empty() {
            return Ok(Vec::new());
        }
        serde_json::from_str(&raw).with_context(|| format!("{key}: not a JSON list of strings"))
    };
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let write = |name: &str, pem: String| -> Result<PathBuf> {
        if pem.is_empty() {
            return Err(anyhow!("the main server publishes no {name}"));
        }
        let path = dir.join(name);
        std::fs::write(&path, pem).with_context(|| format!("cannot write {}", path.display()))?;
        Ok(path)
    };
    Ok(Trust {
        client_ca_file: write("client-ca.crt", text("client-ca-file"))?,
        front_proxy: FrontProxyConfig {
            requestheader_client_ca_file: Some(write(
                "requestheader-client-ca.crt",
                text("requestheader-client-ca-file"),
            )?),
            allowed_names: list("requestheader-allowed-names")?,
            username_headers: list("requestheader-username-headers")?,
            group_headers: list("requestheader-group-headers")?,
            extra_headers_prefix: list("requestheader-extra-headers-prefix")?,
            // Published by servers that forward UIDs (1.33); absent before.
            uid_headers: list("requestheader-uid-headers")?,
            ..FrontProxyConfig::default()
        },
    })
}

/// How long an answer is reused (upstream's delegating authenticator's and
/// authorizer's defaults, for answers both ways).
const CACHE_TTL: Duration = Duration::from_secs(10);

/// At most this many answers are kept: beyond it (a flood of distinct
/// tokens), older ones are forgotten.
const MAX_ANSWERS: usize = 4096;

/// The main server's answers, each reused for [`CACHE_TTL`].
struct Answers<V> {
    entries: Mutex<HashMap<String, (V, Instant)>>,
}

impl<V: Clone> Answers<V> {
    fn new() -> Self {
        Answers {
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn get(&self, question: &str) -> Option<V> {
        let entries = self.entries.lock();
        let (answer, at) = entries.get(question)?;
        (at.elapsed() < CACHE_TTL).then(|| answer.clone())
    }

    fn put(&self, question: String, answer: V) {
        let mut entries = self.entries.lock();
        entries.retain(|_, (_, at)| at.elapsed() < CACHE_TTL);
        if entries.len() >= MAX_ANSWERS {
            entries.clear();
        }
        entries.insert(question, (answer, Instant::now()));
    }
}

/// How long a review may take before the request is refused (upstream's
/// `--authentication-token-webhook` and delegating defaults).
const REVIEW_TIMEOUT: Duration = Duration::from_secs(10);

/// Authentication of bearer tokens by TokenReview to the main server, answers
/// (authenticated or not) cached; a failed review is not cached and refuses
/// the request (401), as upstream's delegating authenticator does.
pub struct TokenReviews {
    reviews: kube::Api<TokenReview>,
    answers: Answers<Option<UserInfo>>,
}

impl TokenReviews {
    pub fn new(client: kube::Client) -> Self {
        TokenReviews {
            reviews: kube::Api::all(client),
            answers: Answers::new(),
        }
    }

    async fn ask(&self, token: &str) -> Result<Option<UserInfo>> {
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: token.to_string(),
                audiences: None,
            },
            ..Default::default()
        };
        let created = tokio::time::timeout(
            REVIEW_TIMEOUT,
            self.reviews.create(&Default::default(), &review),
        )
        .await
        .map_err(|_| anyhow!("no answer within {REVIEW_TIMEOUT:?}"))??;
        Ok(created.status.and_then(reviewed_user))
    }
}

/// The user an answered review names, if it authenticated the token.
fn reviewed_user(status: TokenReviewStatus) -> Option<UserInfo> {
    if status.authenticated != Some(true) {
        return None;
    }
    let user = status.user?;
    Some(UserInfo {
        name: user.username?,
        uid: user.uid.unwrap_or_default(),
        groups: user.groups.unwrap_or_default(),
        extra: user.extra.unwrap_or_default(),
    })
}

#[async_trait::async_trait]
impl TokenReviewer for TokenReviews {
    async fn review(&self, token: &str) -> Option<UserInfo> {
        if let Some(answer) = self.answers.get(token) {
            return answer;
        }
        match self.ask(token).await {
            Ok(answer) => {
                self.answers.put(token.to_string(), answer.clone());
                answer
            }
            Err(e) => {
                tracing::warn!(error = %e, "TokenReview failed");
                None
            }
        }
    }
}

/// Authorization by SubjectAccessReview to the main server, answers cached.
pub struct SubjectAccessReviews {
    client: kube::Client,
    answers: Answers<Decision>,
}

impl SubjectAccessReviews {
    pub fn new(client: kube::Client) -> Self {
        SubjectAccessReviews {
            client,
            answers: Answers::new(),
        }
    }

    async fn ask(&self, spec: &Value) -> Decision {
        let review = json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": spec,
        });
        let request = http::Request::post("/apis/authorization.k8s.io/v1/subjectaccessreviews")
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(serde_json::to_vec(&review).unwrap_or_default());
        let answer = match request {
            Ok(request) => self.client.request::<Value>(request).await,
            Err(e) => return Decision::NoOpinion(e.to_string()),
        };
        match answer {
            Ok(review) if review.pointer("/status/allowed") == Some(&json!(true)) => {
                Decision::Allow(
                    review
                        .pointer("/status/reason")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                )
            }
            Ok(review) => {
                let reason = review
                    .pointer("/status/reason")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                if review.pointer("/status/denied") == Some(&json!(true)) {
                    Decision::Deny(reason)
                } else {
                    Decision::NoOpinion(reason)
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "SubjectAccessReview failed");
                Decision::NoOpinion(format!("error asking the main server: {e}"))
            }
        }
    }
}

/// The review's spec for `a`.
fn spec(a: &Attributes<'_>) -> Value {
    let mut spec = json!({
        "user": a.user.name,
        "groups": a.user.groups,
    });
    if !a.user.uid.is_empty() {
        spec["uid"] = json!(a.user.uid);
    }
    if !a.user.extra.is_empty() {
        spec["extra"] = json!(a.user.extra);
    }
    if a.is_resource {
        spec["resourceAttributes"] = json!({
            "namespace": a.namespace,
            "verb": a.verb,
            "group": a.group,
            "version": a.version,
            "resource": a.resource,
            "subresource": a.subresource,
            "name": a.name,
        });
    } else {
        spec["nonResourceAttributes"] = json!({"path": a.path, "verb": a.verb});
    }
    spec
}

#[async_trait::async_trait]
impl Authorizer for SubjectAccessReviews {
    async fn authorize(&self, attributes: &Attributes<'_>) -> Decision {
        let spec = spec(attributes);
        let key = spec.to_string();
        if let Some(decision) = self.answers.get(&key) {
            return decision;
        }
        let decision = self.ask(&spec).await;
        self.answers.put(key, decision.clone());
        decision
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::authentication::v1::UserInfo as ReviewedUser;

    #[test]
    fn an_authenticated_review_names_its_user_and_no_other_does() {
        let reviewed = ReviewedUser {
            username: Some("system:serviceaccount:default:reader".into()),
            uid: Some("8f0e".into()),
            groups: Some(vec!["system:serviceaccounts".into()]),
            extra: Some(
                [(
                    "authentication.kubernetes.io/pod-name".to_string(),
                    vec!["p".to_string()],
                )]
                .into(),
            ),
        };
        let status = |authenticated, user: Option<ReviewedUser>| TokenReviewStatus {
            authenticated,
            user,
            ..Default::default()
        };
        assert_eq!(
            reviewed_user(status(Some(true), Some(reviewed.clone()))),
            Some(UserInfo {
                name: "system:serviceaccount:default:reader".into(),
                uid: "8f0e".into(),
                groups: vec!["system:serviceaccounts".into()],
                extra: [(
                    "authentication.kubernetes.io/pod-name".to_string(),
                    vec!["p".to_string()]
                )]
                .into(),
            })
        );
        assert_eq!(
            reviewed_user(status(Some(false), Some(reviewed.clone()))),
            None
        );
        assert_eq!(reviewed_user(status(None, Some(reviewed))), None);
        assert_eq!(reviewed_user(status(Some(true), None)), None);
    }

    #[test]
    fn answers_are_bounded_in_number() {
        let answers = Answers::new();
        for n in 0..MAX_ANSWERS + 10 {
            answers.put(format!("token-{n}"), n);
        }
        assert!(answers.entries.lock().len() <= MAX_ANSWERS);
        assert_eq!(
            answers.get(&format!("token-{}", MAX_ANSWERS + 9)),
            Some(MAX_ANSWERS + 9)
        );
        assert_eq!(answers.get("never-asked"), None);
    }

    #[test]
    fn reviews_carry_the_user_and_the_request() {
        let user = UserInfo {
            name: "alice".into(),
            groups: vec!["devs".into()],
            extra: [("scopes".to_string(), vec!["read".to_string()])].into(),
            ..Default::default()
        };
        let a = Attributes {
            user: &user,
            verb: "list",
            group: "wardle.example.com",
            version: "v1alpha1",
            resource: "flunders",
            subresource: "",
            namespace: "default",
            name: "",
            path: "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders",
            is_resource: true,
        };
        assert_eq!(
            spec(&a),
            json!({
                "user": "alice",
                "groups": ["devs"],
                "extra": {"scopes": ["read"]},
                "resourceAttributes": {
                    "namespace": "default", "verb": "list", "group": "wardle.example.com",
                    "version": "v1alpha1", "resource": "flunders", "subresource": "", "name": "",
                },
            })
        );
        let path = Attributes {
            is_resource: false,
            path: "/healthz",
            verb: "get",
            ..a
        };
        assert_eq!(
            spec(&path)["nonResourceAttributes"],
            json!({"path": "/healthz", "verb": "get"})
        );
    }
}
