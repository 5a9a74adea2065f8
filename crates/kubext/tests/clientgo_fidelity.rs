//! Places where client-go (the Go test module, run against kubext and against
//! kube-apiserver 1.33) found kubext answering differently, each checked
//! against upstream's values.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{json_of, send_body};
use serde_json::{Value, json};
use testkit::Server;

/// GET `uri` with `accept`; the answer's code and JSON.
async fn get(client: &kube::Client, uri: &str, accept: &str) -> (u16, Value) {
    let req = http::Request::get(uri)
        .header("accept", accept)
        .body(kube::client::Body::empty())
        .unwrap();
    let resp = client.send(req).await.unwrap();
    let code = resp.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    (code, json_of(&bytes))
}

/// `ValidatePatchOptions` + `errors.NewInvalid(PatchOptions)` (handlers/patch.go):
/// an apply without `fieldManager` is a 422 on `PatchOptions.meta.k8s.io ""`,
/// `force` is refused on other patches, and every problem of the options is
/// reported at once; create's options check `fieldManager` too.
#[tokio::test]
async fn a_write_with_invalid_options_is_an_invalid_options_object() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let cm = "/api/v1/namespaces/default/configmaps/applied";
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "applied"}, "data": {"k": "v"}});
    let (code, body) = send_body(
        &client,
        "PATCH",
        cm,
        "application/apply-patch+yaml",
        &config,
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        json_of(&body),
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
            "reason": "Invalid",
            "details": {"group": "meta.k8s.io", "kind": "PatchOptions", "causes": [{
                "reason": "FieldValueRequired",
                "message": "Required value: is required for apply patch",
                "field": "fieldManager",
            }]},
            "code": 422,
        })
    );
    // Nothing was created; with a manager the same apply creates it.
    let (code, _) = get(&client, cm, "application/json").await;
    assert_eq!(code, 404);
    let (code, body) = send_body(
        &client,
        "PATCH",
        &format!("{cm}?fieldManager=tester"),
        "application/apply-patch+yaml; charset=utf-8",
        &config,
    )
    .await;
    assert_eq!(code, 201, "{}", String::from_utf8_lossy(&body));

    // `force` belongs to apply; the options' errors come together, in
    // upstream's order.
    let (code, body) = send_body(
        &client,
        "PATCH",
        &format!("{cm}?force=false&fieldValidation=Loose"),
        "application/merge-patch+json",
        &json!({"data": {"k": "w"}}),
    )
    .await;
    assert_eq!(code, 422);
    let status = json_of(&body);
    assert_eq!(
        status["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: [force: Forbidden: may not be specified for non-apply patch, fieldValidation: Unsupported value: \"Loose\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"]"
    );
    assert_eq!(
        status["details"]["causes"][0],
        json!({"reason": "FieldValueForbidden",
               "message": "Forbidden: may not be specified for non-apply patch", "field": "force"})
    );

    // `ValidateCreateOptions`: a field manager of at most 128 bytes.
    let long = "m".repeat(129);
    let (code, body) = send_body(
        &client,
        "POST",
        &format!("/api/v1/namespaces/default/configmaps?fieldManager={long}"),
        "application/json",
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "long"}}),
    )
    .await;
    assert_eq!(code, 422);
    let status = json_of(&body);
    assert_eq!(
        status["message"],
        "CreateOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long: may not be more than 128 bytes"
    );
    assert_eq!(status["details"]["kind"], "CreateOptions");
}
