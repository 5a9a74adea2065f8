//! kubext on an etcd that speaks mutual TLS (`--client-cert-auth`, as production
//! etcd runs): `--etcd-cafile`, `--etcd-certfile` and `--etcd-keyfile` reach it, and
//! a missing client certificate, a CA that did not sign etcd's certificate or an
//! unusable file stop the start with one line naming the flag or the endpoint.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use testkit::{Etcd, Server, Storage};

fn configmap(name: &str) -> ConfigMap {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "data": {"k": "v"},
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn kubext_on_mutual_tls_etcd_serves_and_reports_it_healthy() {
    let etcd = Etcd::start_tls().unwrap();
    let tls = etcd.tls.as_ref().unwrap();
    let mut builder = Server::builder().storage(Storage::Etcd(etcd.endpoint()));
    for flag in tls.flags() {
        builder = builder.arg(flag);
    }
    let server = builder.start().unwrap();

    server.kubectl_ok(&["create", "configmap", "first", "--from-literal=k=v"]);
    let got = server.kubectl_ok(&["get", "configmap", "first", "-o", "jsonpath={.data.k}"]);
    assert_eq!(got, "v");

    let api: Api<ConfigMap> = Api::namespaced(server.client().await.unwrap(), "default");
    let list = api.list(&ListParams::default()).await.unwrap();
    assert!(
        list.items
            .iter()
            .any(|c| c.metadata.name.as_deref() == Some("first"))
    );
    let rv = list.metadata.resource_version.unwrap();
    let mut watch = api
        .watch(&WatchParams::default().timeout(10), &rv)
        .await
        .unwrap()
        .boxed();
    api.create(&PostParams::default(), &configmap("second"))
        .await
        .unwrap();
    let event = tokio::time::timeout(Duration::from_secs(10), watch.try_next())
        .await
        .expect("a watch event within 10 s")
        .unwrap();
    match event {
        Some(WatchEvent::Added(cm)) => assert_eq!(cm.metadata.name.as_deref(), Some("second")),
        other => panic!("expected ADDED second, got {other:?}"),
    }

    let statuses = server.kubectl_ok(&["get", "componentstatuses", "etcd-0"]);
    assert!(statuses.contains("Healthy"), "{statuses}");
    assert_eq!(server.kubectl_ok(&["get", "--raw", "/readyz/etcd"]), "ok");
}

/// Run `kubext serve` on `etcd_servers` with `flags`; it must fail: its stderr.
fn failed_start(etcd_servers: &str, flags: &[String]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(testkit::kubext_binary().unwrap())
        .args(["serve", "--storage", "etcd", "--secure-port", "0"])
        .arg("--data-dir")
        .arg(dir.path())
        .arg("--etcd-servers")
        .arg(etcd_servers)
        .args(flags)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("kubext still running after 30 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let output = child.wait_with_output().unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line in:\n{stderr}"))
        .to_owned()
}

fn flag(name: &str, path: &Path) -> String {
    format!("--{name}={}", path.display())
}

#[test]
fn without_a_client_certificate_the_start_fails_naming_the_endpoint() {
    let etcd = Etcd::start_tls().unwrap();
    let tls = etcd.tls.as_ref().unwrap();
    let error = failed_start(&etcd.endpoint(), &[flag("etcd-cafile", &tls.ca_file)]);
    assert!(
        error.starts_with(&format!("error: cannot reach etcd at {}", etcd.endpoint())),
        "{error}"
    );
    assert!(
        error.ends_with(&format!(
            "etcd unreachable at {}: TLS handshake failed: received fatal alert: BadCertificate",
            etcd.endpoint()
        )),
        "{error}"
    );
}

#[test]
fn a_ca_that_did_not_sign_etcds_certificate_fails_the_start() {
    let etcd = Etcd::start_tls().unwrap();
    let tls = etcd.tls.as_ref().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let other_ca = dir.path().join("other-ca.crt");
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    std::fs::write(&other_ca, params.self_signed(&key).unwrap().pem()).unwrap();
    let error = failed_start(
        &etcd.endpoint(),
        &[
            flag("etcd-cafile", &other_ca),
            flag("etcd-certfile", &tls.client_cert_file),
            flag("etcd-keyfile", &tls.client_key_file),
        ],
    );
    assert!(
        error.starts_with(&format!("error: cannot reach etcd at {}", etcd.endpoint())),
        "{error}"
    );
    assert!(
        error.ends_with(&format!(
            "etcd unreachable at {}: TLS handshake failed: invalid peer certificate: UnknownIssuer",
            etcd.endpoint()
        )),
        "{error}"
    );

    // Without --etcd-cafile the system's roots are trusted, which did not sign it either.
    let error = failed_start(
        &etcd.endpoint(),
        &[
            flag("etcd-certfile", &tls.client_cert_file),
            flag("etcd-keyfile", &tls.client_key_file),
        ],
    );
    assert!(
        error.ends_with("TLS handshake failed: invalid peer certificate: UnknownIssuer"),
        "{error}"
    );
}

/// Checked before connecting: no etcd needed.
#[test]
fn unusable_files_fail_the_start_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let endpoint = "https://127.0.0.1:1";
    let missing = dir.path().join("missing.crt");
    let error = failed_start(endpoint, &[flag("etcd-cafile", &missing)]);
    assert_eq!(
        error,
        format!(
            "error: --etcd-cafile {}: cannot read: No such file or directory (os error 2)",
            missing.display()
        )
    );

    let garbage = dir.path().join("garbage.pem");
    std::fs::write(&garbage, "not a certificate\n").unwrap();
    let error = failed_start(endpoint, &[flag("etcd-cafile", &garbage)]);
    assert_eq!(
        error,
        format!(
            "error: --etcd-cafile {}: no PEM certificate in it",
            garbage.display()
        )
    );

    // A certificate with another certificate's key.
    let pem = |name: &str| {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let (cert_path, key_path) = (
            dir.path().join(format!("{name}.crt")),
            dir.path().join(format!("{name}.key")),
        );
        std::fs::write(&cert_path, cert.pem()).unwrap();
        std::fs::write(&key_path, key.serialize_pem()).unwrap();
        (cert_path, key_path)
    };
    let (cert, _) = pem("one");
    let (_, other_key) = pem("two");
    let error = failed_start(
        endpoint,
        &[
            flag("etcd-certfile", &cert),
            flag("etcd-keyfile", &other_key),
        ],
    );
    assert_eq!(
        error,
        format!(
            "error: --etcd-keyfile {}: not the key of --etcd-certfile {}",
            other_key.display(),
            cert.display()
        )
    );
}
