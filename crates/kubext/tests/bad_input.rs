//! Garbage in, Kubernetes errors out: random and malformed bodies of every content
//! type get a 4xx `Status`, never a 5xx, a panic or a dropped connection, and the
//! server keeps serving.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use serde_json::Value;
use testkit::Server;

/// A small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }

    fn bytes(&mut self, max: usize) -> Vec<u8> {
        let len = (self.next() % max as u64) as usize;
        (0..len).map(|_| self.next() as u8).collect()
    }
}

/// Mutations of a valid ConfigMap: broken JSON, wrong types, odd metadata.
fn mutated_json(rng: &mut Rng) -> Vec<u8> {
    let valid = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fuzz","labels":{"a":"b"}},"data":{"k":"v"}}"#;
    let fragments = [
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":5}}"#,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":[]}"#,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"k":7}}"#,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","finalizers":"nope"}}"#,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","labels":{"":""}}}"#,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","resourceVersion":"abc"}}"#,
        r#"[1,2,3]"#,
        r#"null"#,
        r#""just a string""#,
        r#"{"kind":"ConfigMap"}"#,
        r#"{"apiVersion":"v1"}"#,
    ];
    match rng.next() % 3 {
        0 => {
            let mut b = valid.as_bytes().to_vec();
            let cut = (rng.next() % b.len() as u64) as usize;
            b.truncate(cut);
            b
        }
        1 => rng.pick(&fragments).as_bytes().to_vec(),
        _ => rng.bytes(300),
    }
}

#[tokio::test]
async fn random_bodies_get_client_errors_and_the_server_survives() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    // An object to PUT and PATCH against.
    server.kubectl_ok(&["create", "configmap", "fuzz", "--from-literal=k=v"]);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let targets = [
        ("POST", "/api/v1/namespaces/default/configmaps"),
        ("PUT", "/api/v1/namespaces/default/configmaps/fuzz"),
        ("PATCH", "/api/v1/namespaces/default/configmaps/fuzz"),
        ("POST", "/api/v1/namespaces"),
        (
            "DELETE",
            "/api/v1/namespaces/default/configmaps/fuzz-missing",
        ),
    ];
    let content_types = [
        "application/json",
        "application/yaml",
        "application/vnd.kubernetes.protobuf",
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
        "application/apply-patch+yaml",
    ];
    for i in 0..300 {
        let (method, path) = targets[(rng.next() % targets.len() as u64) as usize];
        let content_type = rng.pick(&content_types);
        let mut body = mutated_json(&mut rng);
        if content_type.contains("protobuf") && rng.next().is_multiple_of(2) {
            let mut framed = b"k8s\0".to_vec();
            framed.extend(body);
            body = framed;
        }
        let sep = if path.contains('?') { '&' } else { '?' };
        let uri = format!("{path}{sep}fieldManager=fuzz");
        let req = http::Request::builder()
            .method(method)
            .uri(&uri)
            .header("content-type", content_type)
            .body(kube::client::Body::from(body.clone()))
            .unwrap();
        let resp = client.send(req).await.unwrap_or_else(|e| {
            panic!(
                "request {i} ({method} {content_type}) failed at the transport level: {e}\n{}",
                server.log()
            )
        });
        let code = resp.status().as_u16();
        let bytes = http_body_util::BodyExt::collect(resp.into_body())
            .await
            .unwrap()
            .to_bytes();
        assert!(
            code < 500,
            "request {i}: {method} {path} {content_type} {:?} → {code}: {}",
            String::from_utf8_lossy(&body),
            String::from_utf8_lossy(&bytes)
        );
        if code >= 400 {
            let status: Value = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                panic!(
                    "request {i}: error body is not JSON ({e}): {}",
                    String::from_utf8_lossy(&bytes)
                )
            });
            assert_eq!(status["kind"], "Status", "request {i}: {status}");
            assert_eq!(status["code"].as_u64(), Some(u64::from(code)));
        }
    }
    let ready = client
        .request_text(http::Request::get("/readyz").body(vec![]).unwrap())
        .await
        .unwrap();
    assert_eq!(ready, "ok");
    // The stored object is still intact and readable.
    let out = server.kubectl_ok(&[
        "get",
        "configmap",
        "fuzz",
        "-o",
        "jsonpath={.metadata.name}",
    ]);
    assert_eq!(out, "fuzz");
}

/// Replace the value at a random path of `v` with an odd one.
fn mutate_value(v: &mut Value, rng: &mut Rng) {
    let odd = [
        serde_json::json!(null),
        serde_json::json!(0),
        serde_json::json!(-1),
        serde_json::json!(1.5),
        serde_json::json!(""),
        serde_json::json!("x"),
        serde_json::json!(true),
        serde_json::json!([]),
        serde_json::json!({}),
        serde_json::json!([{}]),
        serde_json::json!({"type": "object"}),
        serde_json::json!({"type": "string", "pattern": "("}),
        serde_json::json!({"$ref": "#/x"}),
        serde_json::json!("x".repeat(5000)),
    ];
    let mut node = v;
    loop {
        let children = match node {
            Value::Object(m) if !m.is_empty() => m.len(),
            Value::Array(a) if !a.is_empty() => a.len(),
            _ => 0,
        };
        // Stop here sometimes, or at a leaf.
        if children == 0 || rng.next().is_multiple_of(4) {
            *node = odd[(rng.next() % odd.len() as u64) as usize].clone();
            return;
        }
        let i = (rng.next() % children as u64) as usize;
        node = match node {
            Value::Object(m) => m.values_mut().nth(i).unwrap(),
            Value::Array(a) => &mut a[i],
            _ => unreachable!(),
        };
    }
}

const FUZZ_CRD: &str = r#"{
  "apiVersion": "apiextensions.k8s.io/v1",
  "kind": "CustomResourceDefinition",
  "metadata": {"name": "fuzzes.fuzz.example.com"},
  "spec": {
    "group": "fuzz.example.com",
    "scope": "Namespaced",
    "names": {"plural": "fuzzes", "singular": "fuzz", "kind": "Fuzz", "shortNames": ["fz"]},
    "versions": [{
      "name": "v1", "served": true, "storage": true,
      "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
      "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}],
      "selectableFields": [{"jsonPath": ".spec.color"}],
      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
          "size": {"type": "integer", "minimum": 0, "default": 1},
          "color": {"type": "string", "enum": ["red", "blue"]},
          "replicas": {"type": "integer"},
          "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}}
        }},
        "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}
      }}}
    }]
  }
}"#;

/// Mutated CRDs and custom resources of every content type get 4xx `Status`es;
/// afterwards the server is ready, every stored CRD is either served or says why not
/// (never half-registered), and the original CRD and an instance still work.
#[tokio::test]
async fn mutated_crds_and_custom_resources_never_break_the_server() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    server.apply(FUZZ_CRD);
    server.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/fuzzes.fuzz.example.com",
        "--timeout=10s",
    ]);
    let base_crd: Value = serde_json::from_str(FUZZ_CRD).unwrap();
    let base_cr = serde_json::json!({
        "apiVersion": "fuzz.example.com/v1", "kind": "Fuzz",
        "metadata": {"name": "f"},
        "spec": {"size": 2, "color": "red", "replicas": 1, "items": [{"name": "a"}]},
    });
    let post = |path: &str, body: &Value| {
        http::Request::post(path)
            .header("content-type", "application/json")
            .body(kube::client::Body::from(serde_json::to_vec(body).unwrap()))
            .unwrap()
    };
    client
        .send(post(
            "/apis/fuzz.example.com/v1/namespaces/default/fuzzes",
            &base_cr,
        ))
        .await
        .unwrap();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let content_types = [
        "application/json",
        "application/merge-patch+json",
        "application/json-patch+json",
        "application/strategic-merge-patch+json",
        "application/apply-patch+yaml",
    ];
    let (mut accepted, mut refused) = (0, 0);
    for i in 0..300 {
        let crd = rng.next().is_multiple_of(2);
        let mut body = if crd {
            base_crd.clone()
        } else {
            base_cr.clone()
        };
        for _ in 0..=(rng.next() % 3) {
            mutate_value(&mut body, &mut rng);
        }
        if crd
            && rng.next().is_multiple_of(2)
            && let Some(meta) = body.get_mut("metadata").and_then(Value::as_object_mut)
        {
            // A new CRD rather than a change to the existing one.
            meta.insert("name".into(), Value::from(format!("f{i}.fuzz.example.com")));
        }
        let (collection, existing) = if crd {
            (
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions".to_string(),
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/fuzzes.fuzz.example.com"
                    .to_string(),
            )
        } else {
            (
                "/apis/fuzz.example.com/v1/namespaces/default/fuzzes".to_string(),
                "/apis/fuzz.example.com/v1/namespaces/default/fuzzes/f".to_string(),
            )
        };
        let (method, uri, content_type) = match rng.next() % 4 {
            0 => ("POST", collection, "application/json"),
            1 => ("PUT", existing, "application/json"),
            2 => ("PUT", format!("{existing}/status"), "application/json"),
            _ => ("PATCH", existing, rng.pick(&content_types)),
        };
        let body = if content_type == "application/json-patch+json" {
            serde_json::json!([{"op": "replace", "path": "/spec", "value": body["spec"]}])
        } else {
            body
        };
        let (code, bytes) = common::send_body(
            &client,
            method,
            &format!("{uri}?fieldManager=fuzz"),
            content_type,
            &body,
        )
        .await;
        // Upstream's one 500 here: server-side apply of fields the type does
        // not declare (its typed check, whatever `fieldValidation` says).
        let typed_check = content_type == "application/apply-patch+yaml"
            && String::from_utf8_lossy(&bytes).contains("failed to create typed patch object");
        assert!(
            code < 500 || (code == 500 && typed_check),
            "request {i}: {method} {uri} {content_type} {body} → {code}: {}",
            String::from_utf8_lossy(&bytes)
        );
        if code >= 400 {
            let status: Value = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(status["kind"], "Status", "request {i}: {status}");
            refused += 1;
        } else {
            accepted += 1;
        }
    }
    // The mutations exercise both paths.
    assert!(
        accepted > 10 && refused > 100,
        "{accepted} accepted, {refused} refused"
    );
    let ready = client
        .request_text(http::Request::get("/readyz").body(vec![]).unwrap())
        .await
        .unwrap();
    assert_eq!(ready, "ok");
    // Let the controller settle, then check every CRD: served iff Established.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let crds: Value = serde_json::from_str(
        &client
            .request_text(
                http::Request::get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
                    .body(vec![])
                    .unwrap(),
            )
            .await
            .unwrap(),
    )
    .unwrap();
    for crd in crds["items"].as_array().unwrap() {
        let name = crd["metadata"]["name"].as_str().unwrap();
        let established = crd["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Established" && c["status"] == "True");
        let group = crd["spec"]["group"].as_str().unwrap();
        let served = crd["spec"]["versions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|v| v["served"] == true)
            .map(|v| v["name"].as_str().unwrap())
            .next();
        if let Some(version) = served {
            let req = http::Request::get(format!("/apis/{group}/{version}"))
                .body(kube::client::Body::empty())
                .unwrap();
            let code = client.send(req).await.unwrap().status().as_u16();
            assert_eq!(code == 200, established, "{name}: discovery {code}, {crd}");
        }
    }
    // The instance is readable and the type still accepts valid writes.
    let out = server.kubectl_ok(&["get", "fz", "f", "-o", "jsonpath={.metadata.name}"]);
    assert_eq!(out, "f");
    let mut fresh = base_cr.clone();
    fresh["metadata"]["name"] = Value::from("g");
    let resp = client
        .send(post(
            "/apis/fuzz.example.com/v1/namespaces/default/fuzzes",
            &fresh,
        ))
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 201);
}
