//! Reviews answered per request and never stored: `TokenReview` and
//! `SelfSubjectReview` (who is this?), `SubjectAccessReview` and friends (may they?).
//! Extension API servers delegate authentication and authorization through them,
//! and `kubectl auth can-i` / `whoami` use them.
//!
//! Access reviews ask the server's own authorizer (for SubjectAccessReview the
//! whole chain, `system:masters` included, as upstream); SelfSubjectRulesReview
//! asks its `RuleResolver`.

use serde_json::{Value, json};

use apimachinery::{ErrorList, FieldError, FieldPath, StatusError, meta};
use registry::RequestContext;

use crate::api::Api;
use crate::authn::UserInfo;
use crate::authz::{Attributes, Decision};

pub async fn review(api: &Api, ctx: &RequestContext, mut obj: Value) -> Result<Value, StatusError> {
    let status = match meta::kind(&obj) {
        "TokenReview" => token_review(api, &obj)?,
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
            decide(api, &spec_user(&obj), &obj).await
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
            decide(api, &spec_user(&obj), &obj).await
        }
        "SelfSubjectAccessReview" => {
            validate_access_review(&obj, false)?;
            decide(api, &UserInfo::of_context(ctx), &obj).await
        }
        "SelfSubjectRulesReview" => {
            let namespace = str_at(&obj, "/spec/namespace");
            if namespace.is_empty() {
                return Err(StatusError::bad_request("no namespace on request"));
            }
            let status = api
                .rules
                .rules_review(&UserInfo::of_context(ctx), namespace);
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

fn token_review(api: &Api, obj: &Value) -> Result<Value, StatusError> {
    let token = str_at(obj, "/spec/token");
    if token.is_empty() {
        return Err(StatusError::bad_request(
            "token is required for TokenReview in authentication",
        ));
    }
    let audiences = obj.pointer("/spec/audiences").cloned().unwrap_or(json!([]));
    Ok(
        match api.authn.token_for(token, audiences_of(obj).as_deref()) {
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
fn validate_access_review(obj: &Value, needs_subject: bool) -> Result<(), StatusError> {
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
fn spec_user(obj: &Value) -> UserInfo {
    let extra = obj
        .pointer("/spec/extra")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), string_list(Some(v))))
                .collect()
        })
        .unwrap_or_default();
    UserInfo {
        name: str_at(obj, "/spec/user").to_string(),
        uid: str_at(obj, "/spec/uid").to_string(),
        groups: string_list(obj.pointer("/spec/groups")),
        extra,
    }
}

/// Ask the server's authorizer what the review's attributes ask.
async fn decide(api: &Api, user: &UserInfo, obj: &Value) -> Value {
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
    let attributes = Attributes {
        user,
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
    let decision = api.authorizer.authorize(&attributes).await;
    let mut status = json!({"allowed": decision.is_allowed()});
    if matches!(decision, Decision::Deny(_)) {
        status["denied"] = json!(true);
    }
    if !decision.reason().is_empty() {
        status["reason"] = json!(decision.reason());
    }
    status
}
