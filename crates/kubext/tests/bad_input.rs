//! Garbage in, Kubernetes errors out: random and malformed bodies of every content
//! type get a 4xx `Status`, never a 5xx, a panic or a dropped connection, and the
//! server keeps serving.
#![allow(clippy::unwrap_used)]

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
