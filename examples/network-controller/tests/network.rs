//! The operator and kubext (embedded store) as real processes: create → Ready and
//! a ConfigMap, update → recomputed, invalid spec → `Invalid` and a Warning Event,
//! malformed CIDR → refused by the schema, restart → no duplicate work, delete →
//! ConfigMap collected and finalizer released.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use testkit::{Server, Storage};

struct Operator {
    child: Child,
    log: PathBuf,
}

impl Operator {
    fn start(kubeconfig: &Path, dir: &Path, n: usize) -> Operator {
        Operator::start_with(kubeconfig, dir, n, &[])
    }

    fn start_with(kubeconfig: &Path, dir: &Path, n: usize, args: &[&str]) -> Operator {
        let log = dir.join(format!("operator-{n}.log"));
        let child = Command::new(env!("CARGO_BIN_EXE_network-controller"))
            .args(args)
            .env("KUBECONFIG", kubeconfig)
            .env("RUST_LOG", "info,network_controller=debug")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        Operator { child, log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGTERM, then wait: a graceful stop releases the Lease.
    fn stop(&mut self) {
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("--- operator log ---\n{}", self.log());
        }
    }
}

fn get_json(server: &Server, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    serde_json::from_str(&server.kubectl_ok(&all)).unwrap()
}

fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn condition(network: &Value, kind: &str) -> Value {
    network["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == kind).cloned())
        .unwrap_or(Value::Null)
}

fn network(cidr: &str, gateway: &str) -> String {
    format!(
        "apiVersion: samplecrd.k8s.io/v1\nkind: Network\nmetadata: {{name: office, namespace: default}}\nspec: {{cidr: \"{cidr}\", gateway: \"{gateway}\"}}\n"
    )
}

fn events(server: &Server) -> Vec<Value> {
    let list = get_json(server, &["get", "events.v1.events.k8s.io", "-n", "default"]);
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["regarding"]["name"] == "office")
        .cloned()
        .collect()
}

#[test]
fn the_operator_keeps_networks_allocated() {
    let dir = tempfile::tempdir().unwrap();
    let kubext = Server::builder()
        .storage(Storage::Embedded)
        .start()
        .unwrap();
    let mut operator = Operator::start(&kubext.kubeconfig, dir.path(), 1);
    // The operator installs its CRD.
    eventually("the CRD", || {
        kubext
            .kubectl(&["get", "crd", "networks.samplecrd.k8s.io"])
            .status
            .success()
    });
    kubext.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/networks.samplecrd.k8s.io",
    ]);
    // It leads through its Lease.
    eventually("the Lease", || {
        kubext
            .kubectl(&["get", "lease", "network-controller"])
            .status
            .success()
    });
    let lease = get_json(&kubext, &["get", "lease", "network-controller"]);
    let pid = operator.child.id();
    assert!(
        lease["spec"]["holderIdentity"]
            .as_str()
            .is_some_and(|h| h.ends_with(&format!("-{pid}"))),
        "{lease}"
    );

    kubext.apply(&network("192.168.0.0/16", "192.168.0.1"));
    eventually("Ready", || {
        condition(&get_json(&kubext, &["get", "network", "office"]), "Ready")["status"] == "True"
    });
    let net = get_json(&kubext, &["get", "network", "office"]);
    assert_eq!(net["status"]["usableHosts"], 65534);
    assert_eq!(net["status"]["broadcast"], "192.168.255.255");
    assert_eq!(net["status"]["observedGeneration"], 1);
    assert_eq!(condition(&net, "Invalid")["status"], "False");
    assert_eq!(
        net["metadata"]["finalizers"][0],
        "samplecrd.k8s.io/network-controller"
    );
    let cm = get_json(&kubext, &["get", "configmap", "network-office"]);
    assert_eq!(cm["data"]["firstUsable"], "192.168.0.1");
    assert_eq!(cm["data"]["lastUsable"], "192.168.255.254");
    assert_eq!(cm["metadata"]["ownerReferences"][0]["kind"], "Network");
    assert_eq!(cm["metadata"]["ownerReferences"][0]["controller"], true);
    let table = kubext.kubectl_ok(&["get", "networks"]);
    assert!(
        table.contains("READY") && table.contains("65534"),
        "{table}"
    );
    eventually("the Allocated event", || {
        events(&kubext).iter().any(|e| e["reason"] == "Allocated")
    });

    // Update: recomputed.
    kubext.apply(&network("10.0.0.0/24", "10.0.0.1"));
    eventually("recomputed", || {
        get_json(&kubext, &["get", "network", "office"])["status"]["usableHosts"] == 254
    });
    assert_eq!(
        get_json(&kubext, &["get", "network", "office"])["status"]["observedGeneration"],
        2
    );
    eventually("the ConfigMap follows", || {
        get_json(&kubext, &["get", "configmap", "network-office"])["data"]["broadcast"]
            == "10.0.0.255"
    });

    // A gateway outside the network: Invalid, with a Warning Event.
    kubext.apply(&network("10.0.0.0/24", "10.0.1.1"));
    eventually("Invalid", || {
        condition(&get_json(&kubext, &["get", "network", "office"]), "Invalid")["status"] == "True"
    });
    let net = get_json(&kubext, &["get", "network", "office"]);
    let invalid = condition(&net, "Invalid");
    assert_eq!(invalid["reason"], "GatewayOutsideCIDR");
    assert_eq!(
        invalid["message"],
        "gateway 10.0.1.1 is not a usable address of 10.0.0.0/24 (10.0.0.1–10.0.0.254)"
    );
    assert_eq!(condition(&net, "Ready")["status"], "False");
    eventually("the Warning event", || {
        events(&kubext)
            .iter()
            .any(|e| e["reason"] == "GatewayOutsideCIDR" && e["type"] == "Warning")
    });
    // A malformed CIDR never gets in: the schema refuses it.
    let out = kubext.kubectl_with_stdin(
        &["apply", "-f", "-"],
        Some(&network("10.0.0/24", "10.0.0.1")),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("spec.cidr in body should match"), "{err}");

    // Back to valid; then a restart changes nothing.
    kubext.apply(&network("10.0.0.0/24", "10.0.0.1"));
    eventually("Ready again", || {
        condition(&get_json(&kubext, &["get", "network", "office"]), "Ready")["status"] == "True"
    });
    std::thread::sleep(Duration::from_millis(500));
    let rv = |args: &[&str]| get_json(&kubext, args)["metadata"]["resourceVersion"].clone();
    let (net_rv, cm_rv) = (
        rv(&["get", "network", "office"]),
        rv(&["get", "configmap", "network-office"]),
    );
    let event_count = events(&kubext).len();
    operator.stop();
    let operator = Operator::start(&kubext.kubeconfig, dir.path(), 2);
    eventually("the new operator looked at the network", || {
        operator.log().contains("up to date")
    });
    assert_eq!(
        rv(&["get", "network", "office"]),
        net_rv,
        "the Network was written again"
    );
    assert_eq!(
        rv(&["get", "configmap", "network-office"]),
        cm_rv,
        "the ConfigMap was written again"
    );
    assert_eq!(
        events(&kubext).len(),
        event_count,
        "events were recorded again"
    );

    // Delete: the finalizer runs, the ConfigMap is collected.
    kubext.kubectl_ok(&["delete", "network", "office", "--timeout=30s"]);
    eventually("the ConfigMap collected", || {
        !kubext
            .kubectl(&["get", "configmap", "network-office"])
            .status
            .success()
    });
    eventually("the Released event", || {
        events(&kubext).iter().any(|e| e["reason"] == "Released")
    });
}

/// The kube-rs user's path for webhooks: the operator serves its own
/// validating webhook over TLS and registers it; kubext calls it on every
/// write of a Network.
#[test]
fn the_operators_own_webhook_refuses_networks_it_cannot_allocate() {
    let dir = tempfile::tempdir().unwrap();
    let kubext = Server::builder().start().unwrap();
    let _operator = Operator::start_with(
        &kubext.kubeconfig,
        dir.path(),
        1,
        &["--webhook-addr", "127.0.0.1:0"],
    );
    eventually("the webhook is registered", || {
        kubext
            .kubectl(&[
                "get",
                "validatingwebhookconfiguration",
                "networks.samplecrd.k8s.io",
            ])
            .status
            .success()
    });
    kubext.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/networks.samplecrd.k8s.io",
    ]);
    let mut refused = String::new();
    eventually("refused at admission", || {
        let out = kubext.kubectl_with_stdin(
            &["create", "-f", "-"],
            Some(&network("10.0.0.0/24", "10.0.1.1")),
        );
        if out.status.success() {
            kubext.kubectl(&["delete", "network", "office"]);
            return false;
        }
        refused = String::from_utf8_lossy(&out.stderr).into_owned();
        true
    });
    assert!(
        refused.contains("admission webhook \"networks.samplecrd.k8s.io\" denied the request: GatewayOutsideCIDR: gateway 10.0.1.1 is not a usable address of 10.0.0.0/24 (10.0.0.1–10.0.0.254)"),
        "{refused}"
    );
    // Valid networks pass, and updates are checked too.
    kubext.apply(&network("10.0.0.0/24", "10.0.0.1"));
    let out = kubext.kubectl_with_stdin(
        &["apply", "-f", "-"],
        Some(&network("10.0.0.0/24", "10.0.2.1")),
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("GatewayOutsideCIDR"));
}
