//! POST (create) and PUT (update).

use http::Response;
use hyper::body::Incoming;

use super::call::{Call, Result, decode_body, object_response, validate_fields, with_warnings};
use crate::authz::{Attributes, Decision};
use crate::response::Body;
use crate::user::UserInfo;
use apimachinery::StatusError;

pub async fn create(
    call: &Call<'_>,
    content_type: Option<&str>,
    body: Incoming,
) -> Result<Response<Body>> {
    let (mut obj, body) = decode_body(call, content_type, body).await?;
    let fields = validate_fields(call, &mut obj, Some(&body))?;
    let created = call.served.store.create(&call.ctx, obj).await;
    let result = created.map(|created| object_response(call, 201, &created, &fields));
    with_warnings(call, result, &fields)
}

pub async fn update(
    call: &Call<'_>,
    content_type: Option<&str>,
    body: Incoming,
) -> Result<Response<Body>> {
    let (mut obj, body) = decode_body(call, content_type, body).await?;
    let fields = validate_fields(call, &mut obj, Some(&body))?;
    authorize_create_on_update(call).await?;
    let replaced = call
        .served
        .store
        .replace(&call.ctx, &call.info.name, obj)
        .await;
    let result = replaced.map(|replaced| {
        let code = if replaced.created { 201 } else { 200 };
        object_response(call, code, &replaced.object, &fields)
    });
    with_warnings(call, result, &fields)
}

/// A PUT that would create the object (a kind whose upstream strategy allows
/// create on update) also needs `create` permission: upstream's update
/// handler asks the authorizer (`withAuthorization`) and refuses with a
/// Forbidden naming the object and the authorizer's reason.
async fn authorize_create_on_update(call: &Call<'_>) -> Result<()> {
    let rtype = call.rtype();
    if !rtype.allow_create_on_update {
        return Ok(());
    }
    match call.served.store.get(&call.ctx, &call.info.name).await {
        Err(e) if e.code() == 404 => {}
        _ => return Ok(()),
    }
    let ctx = &call.ctx;
    let user = UserInfo {
        name: ctx.user.clone(),
        uid: ctx.uid.clone(),
        groups: ctx.groups.clone(),
        extra: ctx.extra.clone(),
    };
    let info = call.info;
    let attributes = Attributes {
        user: &user,
        verb: "create",
        group: &info.group,
        version: &info.version,
        resource: &info.resource,
        subresource: info.subresource.as_str(),
        namespace: &info.namespace,
        name: &info.name,
        path: "",
        is_resource: true,
    };
    match call.api.authorizer.authorize(&attributes).await {
        Decision::Allow(_) => Ok(()),
        denied => Err(StatusError::forbidden(
            &rtype.group_resource(),
            &info.name,
            denied.reason(),
        )),
    }
}
