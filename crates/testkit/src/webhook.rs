//! A real admission webhook server for tests: a Python process (stdlib only)
//! serving HTTPS with a certificate from its own CA, valid for the Service
//! names given and for 127.0.0.1. Its handlers follow upstream's e2e webhook
//! (`/always-deny`, `/configmaps`, `/mutating-configmaps`, …; see
//! `webhook_server.py`); every AdmissionReview it receives is recorded.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use base64::Engine;
use serde_json::{Value, json};

const SCRIPT: &str = include_str!("webhook_server.py");

pub struct WebhookServer {
    pub port: u16,
    /// The CA that signed the server's certificate (PEM).
    pub ca_pem: String,
    child: Child,
    dir: tempfile::TempDir,
}

impl Drop for WebhookServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A CA and a serving certificate it signed for `names` (and 127.0.0.1).
fn certificates(names: &[&str]) -> Result<(String, String, String)> {
    let ca_key = rcgen::KeyPair::generate()?;
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "webhook-test-ca");
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let mut sans: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    sans.extend(["127.0.0.1".to_string(), "localhost".to_string()]);
    let key = rcgen::KeyPair::generate()?;
    let cert = rcgen::CertificateParams::new(sans)?.signed_by(&key, &issuer)?;
    Ok((ca_cert.pem(), cert.pem(), key.serialize_pem()))
}

impl WebhookServer {
    /// Start one whose certificate is valid for `names` (e.g.
    /// `e2e-test-webhook.<namespace>.svc`) and 127.0.0.1.
    pub fn start(names: &[&str]) -> Result<WebhookServer> {
        let dir = tempfile::tempdir()?;
        let (ca_pem, cert, key) = certificates(names)?;
        let (script, cert_path, key_path) = (
            dir.path().join("webhook_server.py"),
            dir.path().join("tls.crt"),
            dir.path().join("tls.key"),
        );
        std::fs::write(&script, SCRIPT)?;
        std::fs::write(&cert_path, cert)?;
        std::fs::write(&key_path, key)?;
        let mut child = Command::new("python3")
            .arg(&script)
            .arg(&cert_path)
            .arg(&key_path)
            .arg(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("cannot run python3 (the webhook test server)")?;
        let stdout = child.stdout.take().context("webhook server stdout")?;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(port) = line.strip_prefix("port ") {
                    let _ = tx.send(port.trim().parse::<u16>().ok());
                }
            }
        });
        let port = match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(Some(port)) => port,
            _ => {
                let _ = child.kill();
                bail!("the webhook test server did not start");
            }
        };
        Ok(WebhookServer {
            port,
            ca_pem,
            child,
            dir,
        })
    }

    /// The CA as a `caBundle` (base64 of the PEM).
    pub fn ca_bundle(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.ca_pem)
    }

    /// `clientConfig` by URL for `path`.
    pub fn url_config(&self, path: &str) -> Value {
        json!({"url": format!("https://127.0.0.1:{}{path}", self.port), "caBundle": self.ca_bundle()})
    }

    /// `clientConfig` through Service `namespace/name` (port 443) for `path`.
    pub fn service_config(&self, namespace: &str, name: &str, path: &str) -> Value {
        json!({
            "service": {"namespace": namespace, "name": name, "path": path},
            "caBundle": self.ca_bundle(),
        })
    }

    /// A Service `namespace/name` on port 443 and the EndpointSlice that puts
    /// this server behind it.
    pub fn service_manifests(&self, namespace: &str, name: &str) -> (Value, Value) {
        let service = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"ports": [{"name": "https", "port": 443, "targetPort": self.port}]},
        });
        let slice = json!({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": format!("{name}-1"), "namespace": namespace,
                         "labels": {"kubernetes.io/service-name": name}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}],
            "ports": [{"name": "https", "port": self.port, "protocol": "TCP"}],
        });
        (service, slice)
    }

    /// Every request received so far: `{path, query, review}`.
    pub fn requests(&self) -> Vec<Value> {
        let path: PathBuf = self.dir.path().join("requests.jsonl");
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// How many connections clients opened so far.
    pub fn connections(&self) -> usize {
        std::fs::read_to_string(self.dir.path().join("connections"))
            .unwrap_or_default()
            .lines()
            .count()
    }

    /// The requests received on `path`.
    pub fn requests_to(&self, path: &str) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| r["path"] == path)
            .collect()
    }
}
