//! `fieldValidation` as kube-apiserver 1.37.2 answers it (every expected text
//! below was measured against one): unknown and duplicate fields of JSON and
//! YAML bodies, built-in kinds and custom resources, Strict (a 400 naming
//! them all, in upstream's order), Warn (a `Warning` each, on failures too)
//! and Ignore (the last of a repeat kept); server-side apply's typed check
//! (undeclared fields fail the apply with a 500 whatever the directive) and
//! its YAML duplicates. Upstream's conformance tests (`FieldValidation`) make
//! the same requests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{json_of, send_raw};
use serde_json::{Value, json};
use testkit::Server;

const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";

/// Upstream's conformance test body: an unknown field, then a repeated one.
const DEPLOYMENT: &str = r#"{
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "my-dep", "labels": {"app": "nginx"}},
    "spec": {
        "unknownField": "foo",
        "replicas": 2,
        "replicas": 3,
        "selector": {"matchLabels": {"app": "nginx"}},
        "template": {
            "metadata": {"labels": {"app": "nginx"}},
            "spec": {"containers": [{"name": "nginx", "image": "nginx:latest"}]}
        }
    }
}"#;

/// Three CRDs as upstream's tests write them: served as v1beta1 and v1,
/// cluster-scoped, with a status subresource.
fn crd(plural_prefix: &str, schema: Value) -> Value {
    let versions: Vec<Value> = [("v1beta1", false), ("v1", true)]
        .iter()
        .map(|(name, storage)| {
            json!({"name": name, "served": true, "storage": storage,
                   "subresources": {"status": {}},
                   "schema": {"openAPIV3Schema": schema}})
        })
        .collect();
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural_prefix}s.mygroup.example.com")},
        "spec": {
            "group": "mygroup.example.com",
            "versions": versions,
            "names": {"plural": format!("{plural_prefix}s"), "singular": plural_prefix,
                      "kind": plural_prefix, "listKind": format!("{plural_prefix}List")},
            "scope": "Cluster",
        }
    })
}

fn ports() -> Value {
    json!({
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
        "items": {
            "type": "object",
            "required": ["containerPort", "protocol"],
            "properties": {
                "containerPort": {"type": "integer", "format": "int32"},
                "hostIP": {"type": "string"},
                "hostPort": {"type": "integer", "format": "int32"},
                "name": {"type": "string"},
                "protocol": {"type": "string"},
            }
        }
    })
}

/// `fva`: a schema that declares `spec` only; `fvb`: `spec` keeps unknown
/// fields and has an embedded resource; `fvc`: `spec` keeps unknown fields.
fn crds() -> [Value; 3] {
    let cron =
        json!({"type": "string", "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$"});
    let a = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "foo": {"type": "string"}, "cronSpec": cron, "ports": ports()}}}});
    let b = json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-preserve-unknown-fields": true, "properties": {
            "template": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {
                "metadata": {"type": "object", "properties": {"name": {"type": "string"}}},
                "spec": {"type": "object"}}},
            "foo": {"type": "string"}, "cronSpec": cron, "ports": ports()}}}});
    let c = json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-preserve-unknown-fields": true, "properties": {
            "foo": {"type": "string"}, "cronSpec": cron, "ports": ports()}}}});
    [crd("fva", a), crd("fvb", b), crd("fvc", c)]
}

async fn start() -> (Server, kube::Client) {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    for crd in crds() {
        let (code, _, body) = send_raw(
            &client,
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            "application/json",
            serde_json::to_vec(&crd).unwrap(),
        )
        .await;
        assert_eq!(code, 201, "{}", String::from_utf8_lossy(&body));
        let name = crd["metadata"]["name"].as_str().unwrap();
        server.kubectl_ok(&[
            "wait",
            "--for=condition=Established",
            &format!("crd/{name}"),
            "--timeout=20s",
        ]);
    }
    (server, client)
}

/// The `Warning` header texts (`299 - "..."`), unescaped.
fn warnings(headers: &http::HeaderMap) -> Vec<String> {
    headers
        .get_all("warning")
        .iter()
        .map(|v| {
            let v = v.to_str().unwrap();
            let quoted = v.strip_prefix("299 - ").unwrap();
            serde_json::from_str::<String>(quoted).unwrap()
        })
        .collect()
}

struct Answer {
    code: u16,
    warnings: Vec<String>,
    body: Value,
}

impl Answer {
    fn message(&self) -> &str {
        self.body["message"].as_str().unwrap_or_default()
    }
}

async fn send(client: &kube::Client, method: &str, uri: &str, ctype: &str, body: &str) -> Answer {
    let (code, headers, bytes) = send_raw(client, method, uri, ctype, body.into()).await;
    Answer {
        code,
        warnings: warnings(&headers),
        body: json_of(&bytes),
    }
}

#[tokio::test]
async fn field_validation_as_upstream_answers_it() {
    let (_server, client) = start().await;
    typed_json(&client).await;
    typed_yaml(&client).await;
    custom_resource_bodies(&client).await;
    apply_custom_resources(&client).await;
    apply_built_in_kinds(&client).await;
}

/// A built-in kind's JSON: unknown and duplicate fields as the typed decoder
/// meets them.
async fn typed_json(client: &kube::Client) {
    let uri = |fv: &str| format!("{DEPLOYMENTS}?dryRun=All&fieldValidation={fv}");
    let a = send(
        client,
        "POST",
        &uri("Strict"),
        "application/json",
        DEPLOYMENT,
    )
    .await;
    assert_eq!(a.code, 400);
    assert_eq!(a.body["reason"], "BadRequest");
    assert_eq!(
        a.message(),
        r#"Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: unknown field "spec.unknownField", duplicate field "spec.replicas""#
    );
    let a = send(client, "POST", &uri("Warn"), "application/json", DEPLOYMENT).await;
    assert_eq!(a.code, 201);
    assert_eq!(
        a.warnings,
        [
            r#"unknown field "spec.unknownField""#,
            r#"duplicate field "spec.replicas""#
        ]
    );
    assert_eq!(a.body["spec"]["replicas"], 3);
    let a = send(
        client,
        "POST",
        &uri("Ignore"),
        "application/json",
        DEPLOYMENT,
    )
    .await;
    assert_eq!(a.code, 201);
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
    assert_eq!(a.body["spec"]["replicas"], 3);
    // The default is Warn.
    let a = send(client, "POST", &uri(""), "application/json", DEPLOYMENT).await;
    assert_eq!(a.warnings.len(), 2, "{:?}", a.warnings);

    // Document order, repeats in maps and list items, nothing looked for
    // inside an unknown field, a repeated unknown field named once.
    let body = r#"{"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "my-dep2", "labels": {"app": "nginx", "app": "x"}, "zzz": 1, "name": "my-dep2"},
        "spec": {"zzz": {"a": 1, "a": 2}, "aaa": 1, "zzz": 2, "replicas": 1,
            "selector": {"matchLabels": {"app": "x"}},
            "template": {"metadata": {"labels": {"app": "x"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:latest", "name": "n2",
                    "resources": {"limits": {"cpu": "1", "cpu": "2"}}}], "containers": []}},
            "strategy": {"type": "Recreate", "type": "Recreate"}}}"#;
    let found = [
        r#"duplicate field "metadata.labels.app""#,
        r#"unknown field "metadata.zzz""#,
        r#"duplicate field "metadata.name""#,
        r#"unknown field "spec.zzz""#,
        r#"unknown field "spec.aaa""#,
        r#"duplicate field "spec.template.spec.containers[0].name""#,
        r#"duplicate field "spec.template.spec.containers[0].resources.limits.cpu""#,
        r#"duplicate field "spec.template.spec.containers""#,
        r#"duplicate field "spec.strategy.type""#,
    ];
    let a = send(client, "POST", &uri("Strict"), "application/json", body).await;
    assert_eq!(a.code, 400);
    assert_eq!(
        a.message(),
        format!(
            r#"Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: {}"#,
            found.join(", ")
        )
    );
    // Warn: the warnings go with the failure too (the last `containers` is empty).
    let a = send(client, "POST", &uri("Warn"), "application/json", body).await;
    assert_eq!(a.code, 422);
    assert_eq!(
        a.message(),
        r#"Deployment.apps "my-dep2" is invalid: spec.template.spec.containers: Required value"#
    );
    assert_eq!(a.warnings, found);

    // PUT is decoded the same way.
    let a = send(
        client,
        "POST",
        DEPLOYMENTS,
        "application/json",
        &DEPLOYMENT.replace(r#""unknownField": "foo","#, ""),
    )
    .await;
    assert_eq!(a.code, 201, "{}", a.body);
    let put = DEPLOYMENT.replace(
        r#""name": "my-dep","#,
        &format!(
            r#""name": "my-dep", "resourceVersion": {},"#,
            a.body["metadata"]["resourceVersion"]
        ),
    );
    let put_uri = |fv: &str| format!("{DEPLOYMENTS}/my-dep?fieldValidation={fv}");
    let a = send(client, "PUT", &put_uri("Strict"), "application/json", &put).await;
    assert_eq!(a.code, 400);
    assert_eq!(
        a.message(),
        r#"Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: unknown field "spec.unknownField", duplicate field "spec.replicas""#
    );
    let a = send(client, "PUT", &put_uri("Warn"), "application/json", &put).await;
    assert_eq!(a.code, 200);
    assert_eq!(
        a.warnings,
        [
            r#"unknown field "spec.unknownField""#,
            r#"duplicate field "spec.replicas""#
        ]
    );
}

/// A built-in kind's YAML: the YAML decoder's repeats first (the line of
/// the repeated value; a map's inner repeats before its own), then the
/// unknown fields in key order.
async fn typed_yaml(client: &kube::Client) {
    let body = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: my-dep3
  labels:
    app: nginx
    app: nginx
  zzz: 1
spec:
  zzz: {a: 1, a: 2}
  replicas: 1
  replicas: 2
  aaa: 1
  selector:
    matchLabels: {app: nginx}
  template:
    metadata:
      labels: {app: nginx}
    spec:
      containers:
      - name: nginx
        image: nginx
        name: nginx
";
    let uri = |fv: &str| format!("{DEPLOYMENTS}?dryRun=All&fieldValidation={fv}");
    let a = send(client, "POST", &uri("Strict"), "application/yaml", body).await;
    assert_eq!(a.code, 400);
    assert_eq!(
        a.message(),
        "Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding error: yaml: unmarshal errors:\n  line 7: key \"app\" already set in map\n  line 10: key \"a\" already set in map\n  line 12: key \"replicas\" already set in map\n  line 23: key \"name\" already set in map, unknown field \"metadata.zzz\", unknown field \"spec.aaa\", unknown field \"spec.zzz\""
    );
    let a = send(client, "POST", &uri("Warn"), "application/yaml", body).await;
    assert_eq!(a.code, 201);
    assert_eq!(
        a.warnings,
        [
            r#"line 7: key "app" already set in map"#,
            r#"line 10: key "a" already set in map"#,
            r#"line 12: key "replicas" already set in map"#,
            r#"line 23: key "name" already set in map"#,
            r#"unknown field "metadata.zzz""#,
            r#"unknown field "spec.aaa""#,
            r#"unknown field "spec.zzz""#,
        ]
    );
    assert_eq!(a.body["spec"]["replicas"], 2);
    let a = send(client, "POST", &uri("Ignore"), "application/yaml", body).await;
    assert_eq!(a.code, 201, "{}", a.body);
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
    assert_eq!(a.body["spec"]["replicas"], 2);
}

/// A custom resource's body: every repeat (in document order), then the
/// unknown fields: root metadata's, the pruned ones (sorted), embedded
/// resources' metadata.
async fn custom_resource_bodies(client: &kube::Client) {
    let uri = |fv: &str| {
        format!("/apis/mygroup.example.com/v1beta1/fvbs?dryRun=All&fieldValidation={fv}")
    };
    let body = r#"{"apiVersion":"mygroup.example.com/v1beta1","kind":"fvb",
        "metadata":{"name":"x","zmeta":1,"labels":{"a":"b","a":"c"}},"zroot":1,
        "spec":{"foo":"a","foo":"b","template":{"apiVersion":"v1","kind":"K",
            "metadata":{"name":"nn","bogus":1,"name":"m"},"zz":{"q":1,"q":2}},
            "ports":[{"containerPort":1,"protocol":"TCP","protocol":"UDP"}]},"aroot":2}"#;
    let found = [
        r#"duplicate field "metadata.labels.a""#,
        r#"duplicate field "spec.foo""#,
        r#"duplicate field "spec.template.metadata.name""#,
        r#"duplicate field "spec.template.zz.q""#,
        r#"duplicate field "spec.ports[0].protocol""#,
        r#"unknown field "metadata.zmeta""#,
        r#"unknown field "aroot""#,
        r#"unknown field "spec.template.zz""#,
        r#"unknown field "zroot""#,
        r#"unknown field "spec.template.metadata.bogus""#,
    ];
    let a = send(client, "POST", &uri("Strict"), "application/json", body).await;
    assert_eq!(a.code, 400);
    assert_eq!(
        a.message(),
        format!(
            r#"fvb in version "v1beta1" cannot be handled as a fvb: strict decoding error: {}"#,
            found.join(", ")
        )
    );
    let a = send(client, "POST", &uri("Warn"), "application/json", body).await;
    assert_eq!(a.code, 201);
    assert_eq!(a.warnings, found);
    assert_eq!(
        a.body["spec"],
        json!({"foo": "b", "ports": [{"containerPort": 1, "protocol": "UDP"}],
               "template": {"apiVersion": "v1", "kind": "K", "metadata": {"name": "m"}}})
    );
    assert_eq!(a.body["metadata"]["labels"], json!({"a": "c"}));

    let yaml = "apiVersion: mygroup.example.com/v1beta1
kind: fvb
metadata:
  name: x
  zmeta: 1
  labels: {a: b, a: c}
zroot: 1
spec:
  foo: a
  foo: b
  template:
    apiVersion: v1
    kind: K
    metadata:
      name: nn
      bogus: 1
  bar:
    x: 1
  bar:
    z: 1
    z: 2
aroot: 2
";
    let a = send(client, "POST", &uri("Strict"), "application/yaml", yaml).await;
    assert_eq!(a.code, 400);
    assert_eq!(
        a.message(),
        "fvb in version \"v1beta1\" cannot be handled as a fvb: strict decoding error: yaml: unmarshal errors:\n  line 6: key \"a\" already set in map\n  line 10: key \"foo\" already set in map\n  line 21: key \"z\" already set in map\n  line 20: key \"bar\" already set in map, unknown field \"metadata.zmeta\", unknown field \"aroot\", unknown field \"zroot\", unknown field \"spec.template.metadata.bogus\""
    );
    let a = send(client, "POST", &uri("Ignore"), "application/yaml", yaml).await;
    assert_eq!(a.code, 201, "{}", a.body);
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
    assert_eq!(a.body["spec"]["bar"], json!({"z": 2}));
}

const CRON_AND_PORTS: &str = "  cronSpec: \"* * * * */5\"
  ports:
  - name: x
    containerPort: 80
    protocol: TCP";

fn cr(kind: &str, rest: &str) -> String {
    format!(
        "\napiVersion: mygroup.example.com/v1beta1\nkind: {kind}\nmetadata:\n  name: mytest\n{rest}"
    )
}

fn apply_uri(plural: &str, fv: &str) -> String {
    format!(
        "/apis/mygroup.example.com/v1beta1/{plural}/mytest?fieldManager=field_validation_mgr&dryRun=All&fieldValidation={fv}"
    )
}

/// Upstream's conformance tests' applies: undeclared fields fail whatever
/// the directive; repeated keys are the YAML decoder's.
async fn apply_custom_resources(client: &kube::Client) {
    const APPLY: &str = "application/apply-patch+yaml";
    // An unknown root field.
    let body = cr(
        "fva",
        &format!("unknownField: unknown\nspec:\n  foo: foo1\n{CRON_AND_PORTS}"),
    );
    for fv in ["Strict", "Warn", "Ignore"] {
        let a = send(client, "PATCH", &apply_uri("fvas", fv), APPLY, &body).await;
        assert_eq!(a.code, 500, "{fv}");
        assert_eq!(
            a.body,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": "failed to create typed patch object (/mytest; mygroup.example.com/v1beta1, Kind=fva): .unknownField: field not declared in schema",
                   "code": 500})
        );
    }
    // Unknown metadata fields, at the root and in an embedded resource (a
    // `spec` that keeps unknown fields takes `apiversion` in `template`).
    let body = cr(
        "fvb",
        &format!(
            "  unknownMeta: unknown\nspec:\n  template:\n    apiversion: foo/v1\n    kind: Sub\n    metadata:\n        unknownSubMeta: unknown\n        name: subobject\n        namespace: default\n  foo: foo1\n{CRON_AND_PORTS}"
        ),
    );
    let a = send(client, "PATCH", &apply_uri("fvbs", "Strict"), APPLY, &body).await;
    assert_eq!(a.code, 500);
    assert_eq!(
        a.message(),
        "failed to create typed patch object (/mytest; mygroup.example.com/v1beta1, Kind=fvb): errors:\n  .metadata.unknownMeta: field not declared in schema\n  .spec.template.metadata.unknownSubMeta: field not declared in schema"
    );
    // What the typed check takes and the schema does not keep is dropped
    // without a word.
    let body = cr(
        "fvb",
        "spec:\n  template:\n    apiVersion: foo/v1\n    kind: Sub\n    zz: 1\n    spec: {a: 1}\n    metadata:\n      name: x\n  other: 1\n",
    );
    for fv in ["Strict", "Warn"] {
        let a = send(client, "PATCH", &apply_uri("fvbs", fv), APPLY, &body).await;
        assert_eq!(a.code, 201, "{}", a.body);
        assert!(a.warnings.is_empty(), "{:?}", a.warnings);
        assert_eq!(
            a.body["spec"],
            json!({"other": 1, "template": {"apiVersion": "foo/v1", "kind": "Sub",
                   "metadata": {"name": "x"}, "spec": {}}})
        );
    }
    // `status` the schema does not declare.
    let a = send(
        client,
        "PATCH",
        &apply_uri("fvas", "Ignore"),
        APPLY,
        &cr("fva", "status:\n  zz: 1\n"),
    )
    .await;
    assert_eq!(a.code, 500);
    assert_eq!(
        a.message(),
        "failed to create typed patch object (/mytest; mygroup.example.com/v1beta1, Kind=fva): .status: field not declared in schema"
    );
    // Associative lists: repeated keys, items without any key.
    let body = cr(
        "fva",
        "spec:\n  ports:\n  - containerPort: 1\n    name: a\n  - containerPort: 1\n    protocol: TCP\n    hostPort: 1\n  - containerPort: 1\n    protocol: TCP\n",
    );
    let a = send(client, "PATCH", &apply_uri("fvas", "Strict"), APPLY, &body).await;
    assert_eq!(
        a.message(),
        "failed to create typed patch object (/mytest; mygroup.example.com/v1beta1, Kind=fva): .spec.ports: duplicate entries for key [containerPort=1,protocol=\"TCP\"]"
    );
    let a = send(
        client,
        "PATCH",
        &apply_uri("fvas", "Strict"),
        APPLY,
        &cr("fva", "spec:\n  ports:\n  - name: a\n"),
    )
    .await;
    assert_eq!(
        a.message(),
        "failed to create typed patch object (/mytest; mygroup.example.com/v1beta1, Kind=fva): .spec.ports: element 0: associative list with keys has an element that omits all key fields [\"containerPort\" \"protocol\"] (and doesn't have default values for any key fields)"
    );

    // A repeated key where unknown fields are kept (line 9: `foo: foo2`).
    let body = cr(
        "fvc",
        &format!("spec:\n  unknown: uk1\n  foo: foo1\n  foo: foo2\n{CRON_AND_PORTS}"),
    );
    let a = send(client, "PATCH", &apply_uri("fvcs", "Strict"), APPLY, &body).await;
    assert_eq!(a.code, 400);
    assert_eq!(
        a.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "error strict decoding patch: error converting YAML to JSON: yaml: unmarshal errors:\n  line 9: key \"foo\" already set in map",
               "reason": "BadRequest", "code": 400})
    );
    let a = send(client, "PATCH", &apply_uri("fvcs", "Warn"), APPLY, &body).await;
    assert_eq!(a.code, 201);
    assert_eq!(a.warnings, [r#"line 9: key "foo" already set in map"#]);
    assert_eq!(a.body["spec"]["foo"], "foo2");
    assert_eq!(a.body["spec"]["unknown"], "uk1");
    let a = send(client, "PATCH", &apply_uri("fvcs", "Ignore"), APPLY, &body).await;
    assert_eq!(a.code, 201);
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
    assert_eq!(a.body["spec"]["foo"], "foo2");
}

/// Server-side apply of built-in kinds: the same typed check, paths with
/// list items by key (a key's default standing in), JSON bodies read as YAML.
async fn apply_built_in_kinds(client: &kube::Client) {
    const APPLY: &str = "application/apply-patch+yaml";
    let uri =
        |fv: &str| format!("{DEPLOYMENTS}/my-dep4?fieldManager=m&dryRun=All&fieldValidation={fv}");
    let deployment = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: my-dep4
  labels: {app: nginx}
spec:
  replicas: 1
  replicas: 2
  selector:
    matchLabels: {app: nginx}
  template:
    metadata:
      labels: {app: nginx}
    spec:
      containers:
      - name: nginx
        image: nginx
";
    let a = send(client, "PATCH", &uri("Strict"), APPLY, deployment).await;
    assert_eq!(a.code, 400);
    assert_eq!(
        a.message(),
        "error strict decoding patch: error converting YAML to JSON: yaml: unmarshal errors:\n  line 8: key \"replicas\" already set in map"
    );
    let a = send(client, "PATCH", &uri("Warn"), APPLY, deployment).await;
    assert_eq!(a.code, 201);
    assert_eq!(a.warnings, [r#"line 8: key "replicas" already set in map"#]);
    assert_eq!(a.body["spec"]["replicas"], 2);
    let a = send(client, "PATCH", &uri("Ignore"), APPLY, deployment).await;
    assert_eq!((a.code, a.warnings.len()), (201, 0));

    let unknown = deployment.replace("  replicas: 2\n", "  unknownField: 2\n");
    for fv in ["Strict", "Ignore"] {
        let a = send(client, "PATCH", &uri(fv), APPLY, &unknown).await;
        assert_eq!(a.code, 500);
        assert_eq!(a.body.get("reason"), None);
        assert_eq!(
            a.message(),
            "failed to create typed patch object (/my-dep4; apps/v1, Kind=Deployment): .spec.unknownField: field not declared in schema"
        );
    }
    let in_item = deployment.replace("  replicas: 2\n", "").replace(
        "        image: nginx\n",
        "        image: nginx\n        bogus: 1\n",
    );
    let a = send(client, "PATCH", &uri("Strict"), APPLY, &in_item).await;
    assert_eq!(
        a.message(),
        "failed to create typed patch object (/my-dep4; apps/v1, Kind=Deployment): .spec.template.spec.containers[name=\"nginx\"].bogus: field not declared in schema"
    );
    let twice = deployment.replace("  replicas: 2\n", "").replace(
        "      - name: nginx\n        image: nginx\n",
        "      - name: nginx\n        image: nginx\n      - name: nginx\n        image: x\n",
    );
    let a = send(client, "PATCH", &uri("Strict"), APPLY, &twice).await;
    assert_eq!(
        a.message(),
        "failed to create typed patch object (/my-dep4; apps/v1, Kind=Deployment): .spec.template.spec.containers: duplicate entries for key [name=\"nginx\"]"
    );
    let meta = deployment.replace("  replicas: 2\n", "").replacen(
        "  labels: {app: nginx}\n",
        "  labels: {app: nginx}\n  namespace: default\n  bogus: 1\n",
        1,
    );
    let a = send(client, "PATCH", &uri("Strict"), APPLY, &meta).await;
    assert_eq!(
        a.message(),
        "failed to create typed patch object (default/my-dep4; apps/v1, Kind=Deployment): .metadata.bogus: field not declared in schema"
    );
    // JSON is YAML to the apply decoder: its repeats are on line 1.
    let json_body = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"my-dep4","labels":{"app":"nginx"}},"spec":{"replicas":1,"replicas":2,"selector":{"matchLabels":{"app":"nginx"}},"template":{"metadata":{"labels":{"app":"nginx"}},"spec":{"containers":[{"name":"nginx","image":"nginx"}]}}}}"#;
    let a = send(client, "PATCH", &uri("Warn"), APPLY, json_body).await;
    assert_eq!(a.code, 201);
    assert_eq!(a.warnings, [r#"line 1: key "replicas" already set in map"#]);

    // A key field left out takes its default (Service ports' protocol).
    let service = "apiVersion: v1\nkind: Service\nmetadata:\n  name: svc\nspec:\n  ports:\n  - port: 80\n    bad: 1\n  - port: 80\n    protocol: TCP\n";
    let a = send(
        client,
        "PATCH",
        "/api/v1/namespaces/default/services/svc?fieldManager=m&dryRun=All&fieldValidation=Strict",
        APPLY,
        service,
    )
    .await;
    assert_eq!(
        a.message(),
        "failed to create typed patch object (/svc; /v1, Kind=Service): errors:\n  .spec.ports[port=80,protocol=\"TCP\"].bad: field not declared in schema\n  .spec.ports: duplicate entries for key [port=80,protocol=\"TCP\"]"
    );
    let configmap = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  finalizers: [a/b, a/b, {x: 1}]\ndata: {a: b}\n";
    let a = send(
        client,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/cm?fieldManager=m&dryRun=All&fieldValidation=Ignore",
        APPLY,
        configmap,
    )
    .await;
    assert_eq!(
        a.message(),
        "failed to create typed patch object (/cm; /v1, Kind=ConfigMap): errors:\n  .metadata.finalizers: duplicate entries for key [=\"a/b\"]\n  .metadata.finalizers: element 2: associative list without keys has an element that's a map type"
    );
}
