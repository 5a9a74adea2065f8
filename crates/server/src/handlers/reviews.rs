//! Reviews (TokenReview, SubjectAccessReview and friends) over HTTP: the
//! handler decodes the review and encodes the answer; `registry::reviews`
//! answers it, asking this server's authenticator, authorizer and rule
//! resolver through [`registry::reviews::ReviewAuthority`], implemented here.

use serde_json::Value;

use apimachinery::StatusError;
use registry::RequestContext;
use registry::reviews::{AccessAnswer, AccessQuestion, ReviewAuthority, ReviewedUser};

use crate::api::Api;
use crate::authz::{Attributes, Decision};
use crate::user::UserInfo;

pub async fn review(api: &Api, ctx: &RequestContext, obj: Value) -> Result<Value, StatusError> {
    registry::reviews::review(&ServerAuthority(api), ctx, obj).await
}

/// The server's own authentication and authorization, as reviews ask them.
struct ServerAuthority<'a>(&'a Api);

fn user_info(user: &ReviewedUser) -> UserInfo {
    UserInfo {
        name: user.name.clone(),
        uid: user.uid.clone(),
        groups: user.groups.clone(),
        extra: user.extra.clone(),
    }
}

#[async_trait::async_trait]
impl ReviewAuthority for ServerAuthority<'_> {
    fn authenticate_token(
        &self,
        token: &str,
        audiences: Option<&[String]>,
    ) -> Option<ReviewedUser> {
        self.0
            .authn
            .token_for(token, audiences)
            .map(|user| ReviewedUser {
                name: user.name,
                uid: user.uid,
                groups: user.groups,
                extra: user.extra,
            })
    }

    async fn authorize(&self, user: &ReviewedUser, question: &AccessQuestion<'_>) -> AccessAnswer {
        let user = user_info(user);
        let attributes = Attributes {
            user: &user,
            verb: question.verb,
            group: question.group,
            version: question.version,
            resource: question.resource,
            subresource: question.subresource,
            namespace: question.namespace,
            name: question.name,
            path: question.path,
            is_resource: question.is_resource,
        };
        match self.0.authorizer.authorize(&attributes).await {
            Decision::Allow(reason) => AccessAnswer::Allow(reason),
            Decision::Deny(reason) => AccessAnswer::Deny(reason),
            Decision::NoOpinion(reason) => AccessAnswer::NoOpinion(reason),
        }
    }

    fn rules_review(&self, user: &ReviewedUser, namespace: &str) -> Value {
        self.0.rules.rules_review(&user_info(user), namespace)
    }
}
