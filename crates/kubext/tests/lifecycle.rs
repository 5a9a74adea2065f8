//! The binary's operational contract: flags, start-up errors, health endpoints,
//! graceful shutdown.
#![allow(clippy::unwrap_used, clippy::expect_used)]

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
        "--proxy-client-cert-file",
        "--proxy-client-key-file",
        "--requestheader-client-ca-file",
        "--requestheader-allowed-names",
        "--requestheader-username-headers",
        "--requestheader-group-headers",
        "--requestheader-extra-headers-prefix",
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

/// `kubext_heap_live_bytes` counts what the server holds: the objects it keeps
/// in its cache and store make it grow by at least their size.
#[tokio::test]
async fn metrics_report_the_live_heap() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let heap = || async {
        let text = client
            .request_text(http::Request::get("/metrics").body(vec![]).unwrap())
            .await
            .unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix("kubext_heap_live_bytes "))
            .expect("kubext_heap_live_bytes in /metrics")
            .trim()
            .parse::<u64>()
            .unwrap()
    };
    let before = heap().await;
    assert!(
        before > 1 << 20,
        "a running server holds more than 1 MiB: {before}"
    );
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for i in 0..100 {
        let cm: ConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": {"name": format!("held-{i}")},
            "data": {"blob": "z".repeat(8 * 1024)}
        }))
        .unwrap();
        api.create(&Default::default(), &cm).await.unwrap();
    }
    let after = heap().await;
    assert!(
        after >= before + 100 * 8 * 1024,
        "100 objects of 8 KiB kept: heap {before} -> {after}"
    );
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

#[tokio::test]
async fn static_tokens_authenticate_and_unknown_ones_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "s3cret,alice,1001,\"devs,ops\"\n").unwrap();
    let server = Server::builder()
        .arg(format!("--token-auth-file={}", tokens.display()))
        .start()
        .unwrap();
    let ca = std::fs::read_to_string(server.data_dir.join("pki/ca.crt")).unwrap();
    let client_with = |token: &str| {
        let mut config = kube::Config::new(format!("https://{}", server.addr).parse().unwrap());
        config.root_cert = Some(vec![
            rustls_pemfile::certs(&mut ca.as_bytes())
                .next()
                .unwrap()
                .unwrap()
                .to_vec(),
        ]);
        config.auth_info.token = Some(token.to_string().into());
        kube::Client::try_from(config).unwrap()
    };
    let alice: Api<ConfigMap> = Api::namespaced(client_with("s3cret"), "default");
    // Authenticated, but RBAC grants a token-file user nothing by itself.
    match alice.get("kube-root-ca.crt").await.unwrap_err() {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 403);
            assert_eq!(
                s.message,
                r#"configmaps "kube-root-ca.crt" is forbidden: User "alice" cannot get resource "configmaps" in API group "" in the namespace "default""#
            );
        }
        other => panic!("expected 403, got {other:?}"),
    }
    server.kubectl_ok(&[
        "create",
        "rolebinding",
        "devs-view",
        "--clusterrole=view",
        "--group=devs",
        "-n",
        "default",
    ]);
    server.wait_until_allowed(&[
        "get",
        "configmaps",
        "-n",
        "default",
        "--as",
        "alice",
        "--as-group",
        "devs",
    ]);
    assert!(alice.get("kube-root-ca.crt").await.is_ok());
    let stranger: Api<ConfigMap> = Api::namespaced(client_with("wrong"), "default");
    match stranger.get("kube-root-ca.crt").await.unwrap_err() {
        kube::Error::Api(s) => assert_eq!(s.code, 401),
        other => panic!("expected 401, got {other:?}"),
    }
}

#[test]
fn given_serving_certificate_is_used() {
    let dir = tempfile::tempdir().unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let params =
        rcgen::CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .unwrap();
    let cert = params.self_signed(&key).unwrap();
    let (crt_path, key_path) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    std::fs::write(&crt_path, cert.pem()).unwrap();
    std::fs::write(&key_path, key.serialize_pem()).unwrap();
    let server = Server::builder()
        .arg(format!("--tls-cert-file={}", crt_path.display()))
        .arg(format!("--tls-private-key-file={}", key_path.display()))
        .start()
        .unwrap();
    // kubectl verifies the server against the given certificate (written into the kubeconfig).
    let out = server.kubectl_ok(&["get", "ns", "default", "-o", "name"]);
    assert_eq!(out.trim(), "namespace/default");
}

#[test]
fn client_certificates_from_a_given_ca_authenticate() {
    let dir = tempfile::tempdir().unwrap();
    // An outside CA and a client certificate it signed (CN=bob, O=devs).
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "outside-ca");
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let bob_key = rcgen::KeyPair::generate().unwrap();
    let mut bob = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    bob.distinguished_name
        .push(rcgen::DnType::CommonName, "bob");
    bob.distinguished_name
        .push(rcgen::DnType::OrganizationName, "devs");
    let bob_cert = bob.signed_by(&bob_key, &issuer).unwrap();
    let ca_path = dir.path().join("client-ca.crt");
    std::fs::write(&ca_path, ca_cert.pem()).unwrap();
    let server = Server::builder()
        .arg(format!("--client-ca-file={}", ca_path.display()))
        .start()
        .unwrap();
    std::fs::write(dir.path().join("bob.crt"), bob_cert.pem()).unwrap();
    std::fs::write(dir.path().join("bob.key"), bob_key.serialize_pem()).unwrap();
    // A kubeconfig for bob: the server's CA, bob's certificate and key.
    let kubeconfig = dir.path().join("bob.kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: k\n  cluster:\n    server: https://{}\n    certificate-authority: {}\nusers:\n- name: bob\n  user:\n    client-certificate: {}\n    client-key: {}\ncontexts:\n- name: k\n  context: {{cluster: k, user: bob}}\ncurrent-context: k\n",
            server.addr,
            server.data_dir.join("pki/ca.crt").display(),
            dir.path().join("bob.crt").display(),
            dir.path().join("bob.key").display(),
        ),
    )
    .unwrap();
    let as_bob = || {
        Command::new(std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".into()))
            .args([
                "--kubeconfig",
                kubeconfig.to_str().unwrap(),
                "get",
                "ns",
                "default",
                "-o",
                "name",
            ])
            .output()
            .unwrap()
    };
    // Authenticated by the certificate, but not allowed anything yet.
    let denied = as_bob();
    assert!(
        String::from_utf8_lossy(&denied.stderr).contains(
            r#"namespaces "default" is forbidden: User "bob" cannot get resource "namespaces" in API group "" in the namespace "default""#
        ),
        "{}",
        String::from_utf8_lossy(&denied.stderr)
    );
    server.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "bob-view",
        "--clusterrole=view",
        "--user=bob",
    ]);
    server.wait_until_allowed(&["get", "namespaces", "--as", "bob"]);
    let out = as_bob();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "namespace/default"
    );
}
