//! The binary's operational contract: flags, start-up errors, health endpoints,
//! graceful shutdown.
#![allow(clippy::unwrap_used)]

use futures::TryStreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, WatchParams};
use std::process::Command;
use std::time::Duration;
use testkit::{Server, kubext_binary};

fn kubext(args: &[&str]) -> std::process::Output {
    Command::new(kubext_binary().unwrap())
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn help_explains_every_flag() {
    let out = kubext(&["serve", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--data-dir",
        "--bind-address",
        "--secure-port",
        "--storage",
        "--etcd-servers",
        "--etcd-prefix",
        "--tls-cert-file",
        "--tls-private-key-file",
        "--client-ca-file",
        "--token-auth-file",
    ] {
        assert!(help.contains(flag), "{flag} missing from --help:\n{help}");
    }
}

#[test]
fn port_in_use_is_a_clear_error() {
    let first = Server::builder().start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let port = first.addr.port().to_string();
    let out = kubext(&[
        "serve",
        "--storage",
        "memory",
        "--data-dir",
        dir.path().to_str().unwrap(),
        "--secure-port",
        &port,
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("address already in use"), "{err}");
}

#[test]
fn unwritable_data_dir_is_a_clear_error() {
    let out = kubext(&[
        "serve",
        "--data-dir",
        "/dev/null/kubext",
        "--secure-port",
        "0",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/dev/null/kubext"), "{err}");
}

#[test]
fn unreachable_etcd_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let endpoint = format!("http://127.0.0.1:{}", testkit::free_port());
    let out = kubext(&[
        "serve",
        "--storage",
        "etcd",
        "--etcd-servers",
        &endpoint,
        "--data-dir",
        dir.path().to_str().unwrap(),
        "--secure-port",
        "0",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("etcd") && err.contains(&endpoint), "{err}");
}

#[tokio::test]
async fn health_version_and_metrics_endpoints() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    for path in ["/healthz", "/livez", "/readyz"] {
        let body = client
            .request_text(http::Request::get(path).body(vec![]).unwrap())
            .await
            .unwrap();
        assert_eq!(body, "ok", "{path}");
    }
    let version: serde_json::Value = client
        .request(http::Request::get("/version").body(vec![]).unwrap())
        .await
        .unwrap();
    assert_eq!(version["major"], "1");
    let metrics = client
        .request_text(http::Request::get("/metrics").body(vec![]).unwrap())
        .await
        .unwrap();
    assert!(metrics.contains("apiserver_request_total"), "{metrics}");
    assert!(metrics.contains("process_resident_memory_bytes"));
}

#[tokio::test]
async fn sigterm_ends_watches_and_exits_cleanly() {
    let mut server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut watch = api
        .watch(&WatchParams::default().timeout(300), "0")
        .await
        .unwrap()
        .boxed();
    // The initial state arrives; then SIGTERM.
    assert!(watch.try_next().await.unwrap().is_some());
    let status = server.terminate(Duration::from_secs(10)).unwrap();
    assert!(status.success(), "exit status {status:?}");
    // The watch ended with the server instead of hanging.
    let rest = tokio::time::timeout(Duration::from_secs(5), async {
        while let Ok(Some(_)) = watch.try_next().await {}
    })
    .await;
    assert!(rest.is_ok(), "watch did not end on shutdown");
}

use futures::StreamExt;
