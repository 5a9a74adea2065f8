//! A computed type (objects made when asked, like metrics-server's) served by an
//! extension server built with this library, in process, against a real kubext as
//! its main server; read with kube-rs and kubectl.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use kubext_apiserver::{ApiServer, Provider, StatusError};
use serde_json::{Value, json};
use testkit::Server;

const GREETING: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: greetings.hello.example.com}
spec:
  group: hello.example.com
  scope: Namespaced
  names: {plural: greetings, kind: Greeting}
  versions:
  - name: v1
    served: true
    storage: true
    additionalPrinterColumns:
    - {name: Text, type: string, jsonPath: .text}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          text: {type: string}
          asked: {type: integer}
"#;

/// Two greetings per namespace; `asked` counts the lists, so each answer is new.
#[derive(Default)]
struct Greetings(AtomicU64);

#[async_trait::async_trait]
impl Provider for Greetings {
    async fn list(&self, namespace: &str) -> Result<Vec<Value>, StatusError> {
        let asked = self.0.fetch_add(1, Ordering::Relaxed) + 1;
        Ok(["hello", "bye"]
            .iter()
            .map(|word| {
                json!({
                    "metadata": {"name": word, "namespace": namespace, "labels": {"word": word}},
                    "text": format!("{word}, {namespace}"),
                    "asked": asked,
                })
            })
            .collect())
    }
}

// Multi-threaded: kubectl runs blocking while the in-process server answers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn computed_objects_are_served_read_only() {
    let kubext = Server::builder().start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let running = ApiServer::new("hello-apiserver")
        .computed(
            &serde_saphyr::from_str(GREETING).unwrap(),
            Arc::new(Greetings::default()),
        )
        .unwrap()
        .main_server(kubext.client_config().await.unwrap())
        .data_dir(dir.path())
        .port(0)
        .start()
        .await
        .unwrap();
    // The extension server's own admin, authorized by kubext (SubjectAccessReview).
    let kubeconfig = kube::config::Kubeconfig::read_from(&running.kubeconfig).unwrap();
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    config.default_retry = false;
    let client = kube::Client::try_from(config).unwrap();
    let get = |path: &str| {
        let client = client.clone();
        let path = path.to_string();
        async move {
            let req = http::Request::get(path).body(vec![]).unwrap();
            client.request::<Value>(req).await
        }
    };

    let list = get("/apis/hello.example.com/v1/namespaces/default/greetings")
        .await
        .unwrap();
    assert_eq!(list["kind"], "GreetingList");
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["apiVersion"], "hello.example.com/v1");
    assert_eq!(items[0]["kind"], "Greeting");
    assert_eq!(items[0]["text"], "hello, default");
    // Computed on every request.
    let again = get("/apis/hello.example.com/v1/namespaces/default/greetings")
        .await
        .unwrap();
    assert_ne!(again["items"][0]["asked"], items[0]["asked"]);

    let one = get("/apis/hello.example.com/v1/namespaces/kube-system/greetings/bye")
        .await
        .unwrap();
    assert_eq!(one["text"], "bye, kube-system");
    let selected =
        get("/apis/hello.example.com/v1/namespaces/default/greetings?labelSelector=word%3Dbye")
            .await
            .unwrap();
    assert_eq!(selected["items"].as_array().unwrap().len(), 1);

    match get("/apis/hello.example.com/v1/namespaces/default/greetings/nope").await {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 404);
            assert_eq!(s.message, r#"greetings.hello.example.com "nope" not found"#);
        }
        other => panic!("{other:?}"),
    }
    for (method, path) in [
        (
            "POST",
            "/apis/hello.example.com/v1/namespaces/default/greetings",
        ),
        (
            "GET",
            "/apis/hello.example.com/v1/namespaces/default/greetings?watch=true",
        ),
        (
            "DELETE",
            "/apis/hello.example.com/v1/namespaces/default/greetings/hello",
        ),
    ] {
        let req = http::Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", "application/json")
            .body(br#"{"metadata":{"name":"x"}}"#.to_vec())
            .unwrap();
        match client.request::<Value>(req).await {
            Err(kube::Error::Api(s)) => assert_eq!(s.code, 405, "{method} {path}: {s:?}"),
            other => panic!("{method} {path}: {other:?}"),
        }
    }

    // Discovery says what can be done; kubectl prints the columns.
    let discovery = get("/apis/hello.example.com/v1").await.unwrap();
    assert_eq!(discovery["resources"][0]["verbs"], json!(["get", "list"]));
    let out = std::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&running.kubeconfig)
        .args(["get", "greetings", "-n", "default"])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("TEXT") && table.contains("hello, default"),
        "{table}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    running.shutdown().await;
}
