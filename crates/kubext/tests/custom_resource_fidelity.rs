//! Custom resources where kubext answered differently from kube-apiserver 1.33
//! (issue 30): CRD defaults and storedVersions, metadata decode errors, printer
//! columns after a declared `Age`, CEL paths under maps and runtime errors, and
//! pruning by the storage version's schema. Expected values from upstream's
//! source (apiextensions' defaults and strategy, the CRD handler's decoder,
//! `tableconvertor`, the CEL validator, cel-go).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{get_accepting, json_of, send_body};
use serde_json::{Value, json};
use testkit::Server;

fn established(server: &Server, crd: &str) {
    server.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        &format!("crd/{crd}"),
        "--timeout=10s",
    ]);
}

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

fn two_version_crd(storage: &str) -> Value {
    let schema = |extra: Value| {
        json!({"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": extra}}}})
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.fidelity.example.com"},
        "spec": {
            "group": "fidelity.example.com",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "kind": "Gadget"},
            "versions": [
                {"name": "v1", "served": true, "storage": storage == "v1",
                 "schema": schema(json!({"name": {"type": "string"}, "legacy": {"type": "string"}}))},
                {"name": "v2", "served": true, "storage": storage == "v2",
                 "schema": schema(json!({"name": {"type": "string"}}))},
            ],
        },
    })
}

/// Creates the Gadget CRD with `storage` as its storage version, once it is
/// established: the create's answer.
async fn create_gadgets(server: &Server, client: &kube::Client, storage: &str) -> Value {
    let (code, body) = send_body(
        client,
        "POST",
        CRDS,
        "application/json",
        &two_version_crd(storage),
    )
    .await;
    assert_eq!(code, 201, "{}", String::from_utf8_lossy(&body));
    established(server, "gadgets.fidelity.example.com");
    json_of(&body)
}

/// Upstream's `SetDefaults_CustomResourceDefinitionSpec` and its strategy's
/// `PrepareForUpdate`: `listKind` and `singular` defaulted, and a new storage
/// version appended to `status.storedVersions` in the update's own answer.
#[tokio::test]
async fn crd_names_defaulted_and_stored_versions_follow_the_storage_version() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let created = create_gadgets(&server, &client, "v1").await;
    assert_eq!(created["spec"]["names"]["listKind"], "GadgetList");
    assert_eq!(created["spec"]["names"]["singular"], "gadget");
    assert_eq!(created["status"]["storedVersions"], json!(["v1"]));

    let (_, body) = send_body(
        &client,
        "GET",
        &format!("{CRDS}/gadgets.fidelity.example.com"),
        "application/json",
        &json!(null),
    )
    .await;
    let mut crd = json_of(&body);
    assert_eq!(crd["spec"]["names"]["listKind"], "GadgetList");
    crd["spec"]["versions"][0]["storage"] = json!(false);
    crd["spec"]["versions"][1]["storage"] = json!(true);
    let (code, body) = send_body(
        &client,
        "PUT",
        &format!("{CRDS}/gadgets.fidelity.example.com"),
        "application/json",
        &crd,
    )
    .await;
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(
        json_of(&body)["status"]["storedVersions"],
        json!(["v1", "v2"])
    );
}

/// kube-rs's `crd_derive_multi`: once v2 (without `legacy`) is the storage
/// version, a v1 apply carrying `legacy` is stored pruned by v2's schema and
/// answered converted back to v1, without it.
#[tokio::test]
async fn writes_in_another_version_are_pruned_by_the_storage_schema() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    create_gadgets(&server, &client, "v2").await;
    let v1 = "/apis/fidelity.example.com/v1/namespaces/default/gadgets";
    let v2 = "/apis/fidelity.example.com/v2/namespaces/default/gadgets";
    let (code, body) = send_body(
        &client,
        "PATCH",
        &format!("{v1}/g?fieldManager=test"),
        "application/apply-patch+yaml",
        &json!({"apiVersion": "fidelity.example.com/v1", "kind": "Gadget",
                "metadata": {"name": "g"}, "spec": {"name": "n", "legacy": "old"}}),
    )
    .await;
    assert_eq!(code, 201, "{}", String::from_utf8_lossy(&body));
    let answer = json_of(&body);
    assert_eq!(answer["apiVersion"], "fidelity.example.com/v1");
    assert_eq!(answer["spec"], json!({"name": "n"}));
    let (_, body) = send_body(&client, "GET", &format!("{v2}/g"), "", &json!(null)).await;
    assert_eq!(json_of(&body)["spec"], json!({"name": "n"}));
}

/// The CRD handler decodes `metadata` into Go's `ObjectMeta`: a label whose
/// value is a number is a 400 decode error, not a 422.
#[tokio::test]
async fn metadata_of_the_wrong_type_is_a_decode_error() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    create_gadgets(&server, &client, "v1").await;
    let (code, body) = send_body(
        &client,
        "POST",
        "/apis/fidelity.example.com/v1/namespaces/default/gadgets",
        "application/json",
        &json!({"apiVersion": "fidelity.example.com/v1", "kind": "Gadget",
                "metadata": {"name": "g", "labels": {"app": 1}}}),
    )
    .await;
    assert_eq!(code, 400, "{}", String::from_utf8_lossy(&body));
    let status = json_of(&body);
    assert_eq!(status["reason"], "BadRequest");
    assert_eq!(
        status["message"],
        "Gadget in version \"v1\" cannot be handled as a Gadget: json: cannot unmarshal number into Go struct field ObjectMeta.labels of type string"
    );
    // Not an object at all: the CRD handler decodes `metadata` alone
    // (kube-apiserver 1.37.2's text).
    let (code, body) = send_body(
        &client,
        "POST",
        "/apis/fidelity.example.com/v1/namespaces/default/gadgets",
        "application/json",
        &json!({"apiVersion": "fidelity.example.com/v1", "kind": "Gadget", "metadata": ["g"]}),
    )
    .await;
    assert_eq!(code, 400, "{}", String::from_utf8_lossy(&body));
    assert_eq!(
        json_of(&body)["message"],
        "Gadget in version \"v1\" cannot be handled as a Gadget: json: cannot unmarshal array into Go value of type v1.ObjectMeta"
    );
}

/// Gateway API's GatewayClass declares `Age` (type date) before a wide
/// `Description`: each cell sits under its own column (`tableconvertor`), an
/// absent value is a null cell.
#[tokio::test]
async fn table_cells_line_up_with_a_declared_age_column() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    server.apply(include_str!("data/gateway-api/gatewayclasses.yaml"));
    established(&server, "gatewayclasses.gateway.networking.k8s.io");
    server.apply(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: one}\n\
         spec: {controllerName: example.com/gateway, description: the first class}\n",
    );
    server.apply(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: two}\n\
         spec: {controllerName: example.com/gateway}\n",
    );
    let req = http::Request::get("/apis/gateway.networking.k8s.io/v1/gatewayclasses")
        .header(
            "accept",
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        )
        .body(Vec::new())
        .unwrap();
    let table: Value = client.request(req).await.unwrap();
    let names: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["Name", "Controller", "Accepted", "Age", "Description"]
    );
    let rows = table["rows"].as_array().unwrap();
    let one = &rows[0]["cells"];
    assert_eq!(one.as_array().unwrap().len(), names.len(), "{one}");
    assert_eq!(one[0], "one");
    assert_eq!(one[1], "example.com/gateway");
    assert_eq!(one[2], "Unknown"); // the schema's default status condition
    assert!(one[3].as_str().unwrap().ends_with('s'), "{one}");
    assert_eq!(one[4], "the first class");
    assert_eq!(rows[1]["cells"][4], Value::Null);
    assert_eq!(rows[1]["cells"].as_array().unwrap().len(), names.len());

    let wide = server.kubectl_ok(&["get", "gatewayclasses", "-o", "wide"]);
    let line = wide.lines().find(|l| l.starts_with("one ")).unwrap();
    assert!(line.trim_end().ends_with("the first class"), "{wide}");
}

const RULES_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: rules.fidelity.example.com
spec:
  group: fidelity.example.com
  scope: Namespaced
  names: {plural: rules, kind: Rule}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              workloadSelector:
                type: object
                properties:
                  matchLabels:
                    type: object
                    additionalProperties:
                      type: string
                      maxLength: 63
                      x-kubernetes-validations:
                      - rule: self.size() <= 3
                        message: label values are short
              either:
                type: object
                x-kubernetes-validations:
                - rule: self.a == 1 || self.b == 1
                properties:
                  a: {type: integer}
                  b: {type: integer}
              named:
                type: object
                x-kubernetes-validations:
                - rule: self.c == 1
                  message: c must be one
                properties:
                  c: {type: integer}
"#;

/// The CEL validator walks a map's values with `field.Path.Key`; runtime errors
/// read as cel-go's, the left operand's for `||`, followed by the rule's message
/// or, without one, the rule.
#[tokio::test]
async fn cel_errors_name_map_keys_and_read_as_cel_go() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    server.apply(RULES_CRD);
    established(&server, "rules.fidelity.example.com");
    let create = |spec: Value| {
        let client = client.clone();
        async move {
            let (code, body) = send_body(
                &client,
                "POST",
                "/apis/fidelity.example.com/v1/namespaces/default/rules",
                "application/json",
                &json!({"apiVersion": "fidelity.example.com/v1", "kind": "Rule",
                        "metadata": {"name": "r"}, "spec": spec}),
            )
            .await;
            assert_eq!(code, 422, "{}", String::from_utf8_lossy(&body));
            json_of(&body)["message"].as_str().unwrap().to_string()
        }
    };
    assert_eq!(
        create(json!({"workloadSelector": {"matchLabels": {"app": "long"}}})).await,
        "Rule.fidelity.example.com \"r\" is invalid: spec.workloadSelector.matchLabels[app]: Invalid value: \"long\": label values are short"
    );
    assert_eq!(
        create(json!({"either": {}})).await,
        "Rule.fidelity.example.com \"r\" is invalid: spec.either: Invalid value: \"object\": no such key: a evaluating rule: self.a == 1 || self.b == 1"
    );
    assert_eq!(
        create(json!({"named": {}})).await,
        "Rule.fidelity.example.com \"r\" is invalid: spec.named: Invalid value: \"object\": no such key: c evaluating rule: c must be one"
    );
}

/// Custom resources have no protobuf form: a client that asks for protobuf
/// first gets JSON, one that accepts protobuf alone a 406 in the CRD
/// handler's words, as a protobuf Status (kube-apiserver 1.33.13's answers).
#[tokio::test]
async fn custom_resources_are_never_protobuf() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    create_gadgets(&server, &client, "v1").await;
    let list = "/apis/fidelity.example.com/v1/namespaces/default/gadgets";
    let get = |accept: &'static str| {
        let client = client.clone();
        async move {
            let (code, headers, body) = get_accepting(&client, list, accept).await;
            let content_type = headers["content-type"].to_str().unwrap().to_string();
            (code, content_type, body)
        }
    };
    let (code, content_type, body) =
        get("application/vnd.kubernetes.protobuf,application/json").await;
    assert_eq!((code, content_type.as_str()), (200, "application/json"));
    assert_eq!(json_of(&body)["kind"], "GadgetList");
    let (code, content_type, body) = get("application/vnd.kubernetes.protobuf").await;
    assert_eq!(
        (code, content_type.as_str()),
        (406, "application/vnd.kubernetes.protobuf")
    );
    assert_eq!(
        protobuf::decode(&body).unwrap()["message"],
        "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
    );
}

/// A custom resource list is an `unstructured.UnstructuredList` upstream,
/// which encoding/json writes sorted like its items, list metadata too, and
/// whose `continue` the store always sets ("" on a last page):
/// kube-apiserver 1.37.2's recorded
/// `{"apiVersion":…,"items":[…],"kind":"WidgetList","metadata":{"continue":"","resourceVersion":"…"}}`
/// (docs/research/serialization). A built-in kind's list stays its Go
/// struct: kind, apiVersion, metadata (resourceVersion, continue,
/// remainingItemCount), items.
#[tokio::test]
async fn custom_resource_lists_are_written_as_unstructured_lists() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    create_gadgets(&server, &client, "v1").await;
    let gadgets = "/apis/fidelity.example.com/v1/namespaces/default/gadgets";
    let get = |uri: String, accept: &'static str| {
        let client = client.clone();
        async move {
            let (code, _, body) = get_accepting(&client, &uri, accept).await;
            assert_eq!(code, 200, "{uri}: {}", String::from_utf8_lossy(&body));
            String::from_utf8(body.to_vec()).unwrap()
        }
    };
    let list = |query: &str| get(format!("{gadgets}{query}"), "application/json");
    // The list's metadata as it was served (the bytes are then compared whole).
    let metadata = |body: &str| {
        let v = json_of(body.as_bytes());
        let s = |k: &str| v["metadata"][k].as_str().unwrap_or_default().to_string();
        (s("resourceVersion"), s("continue"))
    };
    let wrapped = |items: &[&str], metadata: &str| {
        format!(
            "{{\"apiVersion\":\"fidelity.example.com/v1\",\"items\":[{}],\"kind\":\"GadgetList\",\"metadata\":{metadata}}}\n",
            items.join(",")
        )
    };

    let empty = list("").await;
    let (rv, _) = metadata(&empty);
    assert_eq!(
        empty,
        wrapped(
            &[],
            &format!("{{\"continue\":\"\",\"resourceVersion\":\"{rv}\"}}")
        )
    );

    // Each item as a GET of it answers (without the final newline).
    let mut items = Vec::new();
    for (name, size) in [("a", 10), ("b", 70_000)] {
        let gadget = json!({"apiVersion": "fidelity.example.com/v1", "kind": "Gadget",
            "metadata": {"name": name}, "spec": {"name": "x".repeat(size)}});
        let (code, body) = send_body(&client, "POST", gadgets, "application/json", &gadget).await;
        assert_eq!(code, 201, "{}", String::from_utf8_lossy(&body));
        let item = get(format!("{gadgets}/{name}"), "application/json").await;
        items.push(item.trim_end_matches('\n').to_string());
    }
    let (a, b) = (items[0].as_str(), items[1].as_str());

    // Longer than a streamed list's chunk (the body is sent in pieces).
    let whole = list("").await;
    let (rv, _) = metadata(&whole);
    assert_eq!(
        whole,
        wrapped(
            &[a, b],
            &format!("{{\"continue\":\"\",\"resourceVersion\":\"{rv}\"}}")
        )
    );

    let first = list("?limit=1").await;
    let (rv, token) = metadata(&first);
    assert!(!token.is_empty(), "{first}");
    assert_eq!(
        first,
        wrapped(
            &[a],
            &format!(
                "{{\"continue\":\"{token}\",\"remainingItemCount\":1,\"resourceVersion\":\"{rv}\"}}"
            )
        )
    );
    let last = list(&format!("?limit=1&continue={token}")).await;
    assert_eq!(
        last,
        wrapped(
            &[b],
            &format!("{{\"continue\":\"\",\"resourceVersion\":\"{rv}\"}}")
        )
    );

    // YAML's maps are sorted anyway; `continue` is there as in JSON.
    let yaml = get(format!("{gadgets}?limit=1"), "application/yaml").await;
    assert!(
        yaml.starts_with("apiVersion: fidelity.example.com/v1\nitems:\n"),
        "{yaml}"
    );
    assert!(
        yaml.contains("\nkind: GadgetList\nmetadata:\n  continue: "),
        "{yaml}"
    );

    // A built-in kind's page: ListMeta's struct order.
    let configmaps = "/api/v1/namespaces/default/configmaps";
    for name in ["list-a", "list-b"] {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
        let (code, body) = send_body(&client, "POST", configmaps, "application/json", &cm).await;
        assert_eq!(code, 201, "{}", String::from_utf8_lossy(&body));
    }
    let page = get(format!("{configmaps}?limit=1"), "application/json").await;
    let v = json_of(page.as_bytes());
    let md = &v["metadata"];
    let item = get(
        format!(
            "{configmaps}/{}",
            v["items"][0]["metadata"]["name"].as_str().unwrap()
        ),
        "application/json",
    )
    .await;
    assert_eq!(
        page,
        format!(
            "{{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{{\"resourceVersion\":\"{}\",\"continue\":\"{}\",\"remainingItemCount\":{}}},\"items\":[{}]}}\n",
            md["resourceVersion"].as_str().unwrap(),
            md["continue"].as_str().unwrap(),
            md["remainingItemCount"],
            item.trim_end_matches('\n')
        )
    );

    // DELETE of the collection answers the list of what it deleted.
    let req = http::Request::delete(gadgets)
        .body(kube::client::Body::empty())
        .unwrap();
    let resp = client.send(req).await.unwrap();
    assert_eq!(resp.status(), 200);
    let body = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    let body = String::from_utf8(body.to_vec()).unwrap();
    let (rv, _) = metadata(&body);
    assert!(
        body.starts_with("{\"apiVersion\":\"fidelity.example.com/v1\",\"items\":[{"),
        "{body}"
    );
    assert!(
        body.ends_with(&format!(
            "}}],\"kind\":\"GadgetList\",\"metadata\":{{\"continue\":\"\",\"resourceVersion\":\"{rv}\"}}}}\n"
        )),
        "{body}"
    );
}
