//! Reviews answered per request and never stored (upstream's
//! `pkg/registry/authentication/{tokenreview,selfsubjectreview}` and
//! `pkg/registry/authorization/*`): `TokenReview` and `SelfSubjectReview`
//! (who is this?), `SubjectAccessReview` and its local and self variants
//! (may they?), `SelfSubjectRulesReview` (what may I?).
//!
//! What a review asks of authentication and authorization goes through
//! [`ReviewAuthority`], which the server implements with its own
//! authenticator, authorizer (for SubjectAccessReview the whole chain,
//! `system:masters` included, as upstream) and rule resolver.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use apimachinery::{ErrorList, FieldError, FieldPath, StatusError, meta};

use crate::options::RequestContext;

type Result<T> = std::result::Result<T, StatusError>;

/// A user a review names or proves.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReviewedUser {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl ReviewedUser {
    /// The user a request is made by.
    pub fn of_context(ctx: &RequestContext) -> Self {
        ReviewedUser {
            name: ctx.user.clone(),
            uid: ctx.uid.clone(),
            groups: ctx.groups.clone(),
            extra: ctx.extra.clone(),
        }
    }
}

/// What an access review asks about: a request on a resource, or on a
/// non-resource path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccessQuestion<'a> {
    pub verb: &'a str,
    pub group: &'a str,
    /// `*` when the review names none.
    pub version: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    /// The non-resource path ("" for resource requests).
    pub path: &'a str,
    pub is_resource: bool,
}

/// What the authorizer decided, with its reason (possibly empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccessAnswer {
    Allow(String),
    /// Denied outright (`status.denied`).
    Deny(String),
    NoOpinion(String),
}

/// Authentication and authorization as the server has them, for reviews.
#[async_trait::async_trait]
pub trait ReviewAuthority: Send + Sync {
    /// The user a bearer token proves (for `audiences`, when given), if any.
    fn authenticate_token(&self, token: &str, audiences: Option<&[String]>)
    -> Option<ReviewedUser>;
    /// What the server's authorizer decides for `user` asking `question`.
    async fn authorize(&self, user: &ReviewedUser, question: &AccessQuestion<'_>) -> AccessAnswer;
    /// A SelfSubjectRulesReview's `status` for `user` in `namespace`.
    fn rules_review(&self, user: &ReviewedUser, namespace: &str) -> Value;
}

/// Answer the review `obj` (a create of one of the review kinds) made by the
/// request `ctx`: the object with its `status` filled.
pub async fn review(
    authority: &dyn ReviewAuthority,
    ctx: &RequestContext,
    mut obj: Value,
) -> Result<Value> {
    let status = match meta::kind(&obj) {
        "TokenReview" => token_review(authority, &obj)?,
        "SelfSubjectReview" => {
            let mut user_info = user_json(&ctx.user, &ctx.groups);
            if !ctx.uid.is_empty() {
                user_info["uid"] = json!(ctx.uid);
            }
            if !ctx.extra.is_empty() {
                user_info["extra"] = json!(ctx.extra);
            }
            json!({"userInfo": user_info})
        }
        "SubjectAccessReview" => {
            validate_access_review(&obj, true)?;
            decide(authority, &spec_user(&obj), &obj).await
        }
        "LocalSubjectAccessReview" => {
            validate_access_review(&obj, true)?;
            let url_ns = &ctx.namespace;
            match obj.pointer_mut("/spec/resourceAttributes") {
                Some(Value::Object(attrs)) => {
                    let ns = attrs.get("namespace").and_then(Value::as_str).unwrap_or("");
                    if ns.is_empty() {
                        attrs.insert("namespace".into(), json!(url_ns));
                    } else if ns != url_ns {
                        return Err(StatusError::bad_request(format!(
                            "spec.resourceAttributes.namespace must match namespace: {url_ns}"
                        )));
                    }
                }
                _ => {
                    return Err(StatusError::bad_request(
                        "disallowed on this kind of request",
                    ));
                }
            }
            decide(authority, &spec_user(&obj), &obj).await
        }
        "SelfSubjectAccessReview" => {
            validate_access_review(&obj, false)?;
            decide(authority, &ReviewedUser::of_context(ctx), &obj).await
        }
        "SelfSubjectRulesReview" => {
            let namespace = str_at(&obj, "/spec/namespace");
            if namespace.is_empty() {
                return Err(StatusError::bad_request("no namespace on request"));
            }
            let status = authority.rules_review(&ReviewedUser::of_context(ctx), namespace);
            // Upstream answers with a fresh object: the spec is not echoed.
            obj["spec"] = json!({});
            status
        }
        other => {
            return Err(StatusError::bad_request(format!(
                "{other} is not a review kind"
            )));
        }
    };
    obj["status"] = status;
    meta::metadata_mut(&mut obj)
        .entry("creationTimestamp")
        .or_insert(Value::Null);
    Ok(obj)
}

fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn string_list(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(String::from)
        .collect()
}

/// `spec.audiences` of a TokenReview, when it names any.
fn audiences_of(review: &Value) -> Option<Vec<String>> {
    let list = string_list(review.pointer("/spec/audiences"));
    (!list.is_empty()).then_some(list)
}

fn user_json(name: &str, groups: &[String]) -> Value {
    json!({"username": name, "groups": groups})
}

fn token_review(authority: &dyn ReviewAuthority, obj: &Value) -> Result<Value> {
    let token = str_at(obj, "/spec/token");
    if token.is_empty() {
        return Err(StatusError::bad_request(
            "token is required for TokenReview in authentication",
        ));
    }
    let audiences = obj.pointer("/spec/audiences").cloned().unwrap_or(json!([]));
    Ok(
        match authority.authenticate_token(token, audiences_of(obj).as_deref()) {
            Some(user) => {
                let mut user_info = user_json(&user.name, &user.groups);
                if !user.uid.is_empty() {
                    user_info["uid"] = json!(user.uid);
                }
                if !user.extra.is_empty() {
                    user_info["extra"] = json!(user.extra);
                }
                json!({"authenticated": true, "user": user_info, "audiences": audiences})
            }
            None => json!({"user": {}}),
        },
    )
}

/// Upstream's `ValidateSubjectAccessReviewSpec` (and the self variant, which has no
/// user or groups).
fn validate_access_review(obj: &Value, needs_subject: bool) -> Result<()> {
    let spec = FieldPath::new("spec");
    let present = |p: &str| obj.pointer(p).is_some_and(|v| !v.is_null());
    let (resource, non_resource) = (
        present("/spec/resourceAttributes"),
        present("/spec/nonResourceAttributes"),
    );
    let mut errs = ErrorList::new();
    if resource && non_resource {
        errs.push(FieldError::invalid(
            &spec.child("nonResourceAttributes"),
            obj.pointer("/spec/nonResourceAttributes")
                .cloned()
                .unwrap_or(Value::Null),
            "cannot be specified in combination with resourceAttributes",
        ));
    }
    if !resource && !non_resource {
        // Go prints a nil pointer as the string "null".
        errs.push(FieldError::invalid(
            &spec.child("resourceAttributes"),
            json!("null"),
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        ));
    }
    if needs_subject
        && str_at(obj, "/spec/user").is_empty()
        && string_list(obj.pointer("/spec/groups")).is_empty()
    {
        errs.push(FieldError::invalid(
            &spec.child("user"),
            json!(""),
            "at least one of user or group must be specified",
        ));
    }
    if errs.is_empty() {
        return Ok(());
    }
    let (group, kind) = (
        meta::api_version(obj)
            .split('/')
            .next()
            .unwrap_or("")
            .to_string(),
        meta::kind(obj).to_string(),
    );
    Err(StatusError::invalid(&group, &kind, meta::name(obj), &errs))
}

/// The user a SubjectAccessReview asks about.
fn spec_user(obj: &Value) -> ReviewedUser {
    let extra = obj
        .pointer("/spec/extra")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), string_list(Some(v))))
                .collect()
        })
        .unwrap_or_default();
    ReviewedUser {
        name: str_at(obj, "/spec/user").to_string(),
        uid: str_at(obj, "/spec/uid").to_string(),
        groups: string_list(obj.pointer("/spec/groups")),
        extra,
    }
}

/// Ask the server's authorizer what the review's attributes ask; the
/// review's `status`.
async fn decide(authority: &dyn ReviewAuthority, user: &ReviewedUser, obj: &Value) -> Value {
    let at = |field: &str| str_at(obj, &format!("/spec/resourceAttributes/{field}"));
    let is_resource = obj
        .pointer("/spec/resourceAttributes")
        .is_some_and(|v| !v.is_null());
    let (verb, path) = if is_resource {
        (at("verb"), "")
    } else {
        (
            str_at(obj, "/spec/nonResourceAttributes/verb"),
            str_at(obj, "/spec/nonResourceAttributes/path"),
        )
    };
    let version = if at("version").is_empty() {
        "*"
    } else {
        at("version")
    };
    let question = AccessQuestion {
        verb,
        group: at("group"),
        version,
        resource: at("resource"),
        subresource: at("subresource"),
        namespace: at("namespace"),
        name: at("name"),
        path,
        is_resource,
    };
    let (allowed, denied, reason) = match authority.authorize(user, &question).await {
        AccessAnswer::Allow(reason) => (true, false, reason),
        AccessAnswer::Deny(reason) => (false, true, reason),
        AccessAnswer::NoOpinion(reason) => (false, false, reason),
    };
    let mut status = json!({"allowed": allowed});
    if denied {
        status["denied"] = json!(true);
    }
    if !reason.is_empty() {
        status["reason"] = json!(reason);
    }
    status
}
