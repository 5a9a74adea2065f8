//! kubext as controller-runtime envtest's `kube-apiserver`: started under that
//! name with the exact arguments envtest passes (controller-runtime
//! `pkg/internal/testing/controlplane/apiserver.go` `defaultArgs` and
//! `CertAuthn.Configure`), the certificates it writes into `--cert-dir`
//! (`tinyca.go`: ECDSA P-256, PKCS#8), its readiness check (anonymous
//! `GET /healthz` until 200) and what it then does (the `default` namespace,
//! CRDs until discovered, a client certificate in `system:masters`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair,
};
use serde_json::{Value, json};

/// What envtest's TinyCA writes: a CA (`CN=envtest-environment, O=envtest`).
fn tiny_ca() -> (String, Issuer<'static, KeyPair>) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::default();
    params.distinguished_name = name("envtest-environment", &["envtest"]);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), Issuer::new(params, key))
}

fn name(cn: &str, orgs: &[&str]) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    for o in orgs {
        dn.push(DnType::OrganizationName, *o);
    }
    dn
}

/// A certificate and its PKCS#8 key, signed by `ca`.
fn leaf(
    ca: &Issuer<'_, KeyPair>,
    cn: &str,
    orgs: &[&str],
    sans: &[&str],
    usage: ExtendedKeyUsagePurpose,
) -> (String, String) {
    let key = KeyPair::generate().unwrap();
    let mut params =
        CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    params.distinguished_name = name(cn, orgs);
    params.extended_key_usages = vec![usage];
    let cert = params.signed_by(&key, ca).unwrap();
    (cert.pem(), key.serialize_pem())
}

struct Envtest {
    _dir: tempfile::TempDir,
    cert_dir: PathBuf,
    assets: PathBuf,
    serving_ca: String,
    admin: (String, String),
}

/// The cert dir and assets directory envtest prepares.
fn prepare() -> Envtest {
    let dir = tempfile::tempdir().unwrap();
    let cert_dir = dir.path().join("k8s_test_framework_1");
    let assets = dir.path().join("assets");
    std::fs::create_dir_all(&cert_dir).unwrap();
    std::fs::create_dir_all(&assets).unwrap();
    let write = |file: &str, content: &str| std::fs::write(cert_dir.join(file), content).unwrap();
    let (serving_ca, serving_issuer) = tiny_ca();
    let (cert, key) = leaf(
        &serving_issuer,
        "localhost",
        &["envtest"],
        &["localhost", "127.0.0.1"],
        ExtendedKeyUsagePurpose::ServerAuth,
    );
    write("apiserver.crt", &cert);
    write("apiserver.key", &key);
    let sa_key = KeyPair::generate().unwrap();
    let mut sa_params = CertificateParams::default();
    sa_params.distinguished_name = name("envtest-environment", &["envtest"]);
    sa_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    write(
        "sa-signer.crt",
        &sa_params.self_signed(&sa_key).unwrap().pem(),
    );
    write("sa-signer.key", &sa_key.serialize_pem());
    let (client_ca, client_issuer) = tiny_ca();
    write("client-cert-auth-ca.crt", &client_ca);
    let admin = leaf(
        &client_issuer,
        "admin",
        &["system:masters"],
        &[],
        ExtendedKeyUsagePurpose::ClientAuth,
    );
    std::os::unix::fs::symlink(
        testkit::kubext_binary().unwrap(),
        assets.join("kube-apiserver"),
    )
    .unwrap();
    Envtest {
        _dir: dir,
        cert_dir,
        assets,
        serving_ca,
        admin,
    }
}

/// envtest's arguments, sorted by flag name, one `--key=value` each.
fn envtest_args(cert_dir: &Path, port: u16, etcd: &str) -> Vec<String> {
    let cert = |f: &str| cert_dir.join(f).display().to_string();
    vec![
        "--allow-privileged=true".into(),
        "--authorization-mode=RBAC".into(),
        "--bind-address=127.0.0.1".into(),
        format!("--cert-dir={}", cert_dir.display()),
        format!("--client-ca-file={}", cert("client-cert-auth-ca.crt")),
        "--disable-admission-plugins=ServiceAccount".into(),
        format!("--etcd-servers={etcd}"),
        format!("--secure-port={port}"),
        format!("--service-account-issuer=https://127.0.0.1:{port}/"),
        format!("--service-account-key-file={}", cert("sa-signer.crt")),
        format!(
            "--service-account-signing-key-file={}",
            cert("sa-signer.key")
        ),
        "--service-cluster-ip-range=10.0.0.0/24".into(),
    ]
}

struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(env: &Envtest, args: &[String]) -> Process {
    let log = std::fs::File::create(env.cert_dir.join("kube-apiserver.log")).unwrap();
    Process(
        Command::new(env.assets.join("kube-apiserver"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap(),
    )
}

fn log(env: &Envtest) -> String {
    std::fs::read_to_string(env.cert_dir.join("kube-apiserver.log")).unwrap_or_default()
}

/// envtest's readiness poll: anonymous `GET /healthz`, certificate not
/// verified, every 100 ms until 200.
fn wait_healthy(env: &Envtest, port: u16) {
    let started = Instant::now();
    loop {
        let out = Command::new("curl")
            .args(["-sk", "-o", "/dev/null", "-w", "%{http_code}"])
            .arg(format!("https://127.0.0.1:{port}/healthz"))
            .output()
            .unwrap();
        if out.stdout == b"200" {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "not healthy within envtest's 20 s start timeout; log:\n{}",
            log(env)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A kubeconfig for envtest's `admin` user (client certificate, serving CA).
fn kubeconfig(env: &Envtest, port: u16) -> PathBuf {
    use base64::Engine;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let config = json!({
        "apiVersion": "v1", "kind": "Config", "current-context": "envtest",
        "clusters": [{"name": "envtest", "cluster": {
            "server": format!("https://127.0.0.1:{port}"),
            "certificate-authority-data": b64(&env.serving_ca)}}],
        "users": [{"name": "admin", "user": {
            "client-certificate-data": b64(&env.admin.0),
            "client-key-data": b64(&env.admin.1)}}],
        "contexts": [{"name": "envtest", "context": {"cluster": "envtest", "user": "admin"}}],
    });
    let path = env.cert_dir.join("admin.kubecfg");
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

fn kubectl(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> String {
    let mut child = Command::new("kubectl")
        .env("KUBECONFIG", kubeconfig)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(input) = stdin {
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: guestbooks.webapp.example.com}
spec:
  group: webapp.example.com
  scope: Namespaced
  names: {plural: guestbooks, singular: guestbook, kind: Guestbook}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"#;

#[test]
fn help_exits_zero_without_an_insecure_port() {
    let env = prepare();
    let out = Command::new(env.assets.join("kube-apiserver"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success(), "envtest fails on a non-zero --help");
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--cert-dir",
        "--allow-privileged",
        "--disable-admission-plugins",
        "--etcd-servers",
    ] {
        assert!(help.contains(flag), "{flag} missing from --help");
    }
    // envtest's probe is the regexp (?m)^\s*--insecure-port\b.
    assert!(
        !help
            .lines()
            .any(|l| l.trim_start().starts_with("--insecure-port")),
        "envtest would pass --insecure-port=0"
    );
}

#[test]
fn envtests_arguments_start_a_usable_api_server_without_etcd() {
    let env = prepare();
    let port = testkit::free_port();
    // envtest's etcd asset may be a stand-in: nothing that answers as etcd here.
    let etcd = format!("http://127.0.0.1:{}", testkit::free_port());
    let mut args = envtest_args(&env.cert_dir, port, &etcd);
    // What users add through Configure(): repeated flags accumulate.
    args.push("--disable-admission-plugins=MutatingAdmissionWebhook".into());
    args.push("--advertise-address=127.0.0.1".into());
    let _server = start(&env, &args);
    wait_healthy(&env, port);
    assert!(
        log(&env).contains("using the embedded store"),
        "{}",
        log(&env)
    );
    let kubeconfig = kubeconfig(&env, port);
    // The serving certificate is the one in --cert-dir (verified against its CA),
    // and the client certificate's O=system:masters may do everything.
    let ns: Value = serde_json::from_str(&kubectl(
        &kubeconfig,
        &["get", "namespace", "default", "-o", "json"],
        None,
    ))
    .unwrap();
    assert_eq!(ns["status"]["phase"], "Active");
    let whoami = kubectl(&kubeconfig, &["auth", "whoami", "-o", "json"], None);
    assert!(whoami.contains("system:masters"), "{whoami}");
    // State lives in the cert dir, not in the test's working directory.
    assert!(env.cert_dir.join("admin.kubeconfig").exists());

    // CRDs are installed and polled in discovery, as envtest's WaitForCRDs does.
    kubectl(&kubeconfig, &["apply", "-f", "-"], Some(CRD));
    let started = Instant::now();
    while !kubectl(
        &kubeconfig,
        &["get", "--raw", "/apis/webapp.example.com/v1"],
        None,
    )
    .contains("guestbooks")
    {
        assert!(started.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(50));
    }
    kubectl(
        &kubeconfig,
        &["create", "deployment", "web", "--image=nginx:1.27"],
        None,
    );
    let deployment: Value = serde_json::from_str(&kubectl(
        &kubeconfig,
        &["get", "deployment", "web", "-o", "json"],
        None,
    ))
    .unwrap();
    assert_eq!(deployment["spec"]["revisionHistoryLimit"], 10);
    // envtest turns the ServiceAccount plugin off: a pod gets no account or
    // token volume (other plugins, like DefaultTolerationSeconds, still run).
    kubectl(
        &kubeconfig,
        &["run", "box", "--image=busybox:1.36", "--restart=Never"],
        None,
    );
    let pod: Value = serde_json::from_str(&kubectl(
        &kubeconfig,
        &["get", "pod", "box", "-o", "json"],
        None,
    ))
    .unwrap();
    assert!(pod["spec"].get("serviceAccountName").is_none(), "{pod}");
    assert!(pod["spec"].get("volumes").is_none(), "{pod}");
    assert_eq!(pod["spec"]["tolerations"].as_array().map(Vec::len), Some(2));

    // Service-account tokens are signed with --service-account-signing-key-file
    // and verified with --service-account-key-file, which envtest points at a
    // certificate.
    kubectl(&kubeconfig, &["create", "serviceaccount", "robot"], None);
    let token = kubectl(&kubeconfig, &["create", "token", "robot"], None);
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
        "spec": {"token": token.trim()}});
    let answer: Value = serde_json::from_str(&kubectl(
        &kubeconfig,
        &["create", "-f", "-", "-o", "json"],
        Some(&review.to_string()),
    ))
    .unwrap();
    assert_eq!(answer["status"]["authenticated"], true, "{answer}");
    assert_eq!(
        answer["status"]["user"]["username"],
        "system:serviceaccount:default:robot"
    );
}

#[test]
fn a_real_etcd_at_etcd_servers_is_used() {
    let etcd = testkit::Etcd::start().unwrap();
    let env = prepare();
    let port = testkit::free_port();
    let _server = start(&env, &envtest_args(&env.cert_dir, port, &etcd.endpoint()));
    wait_healthy(&env, port);
    let kubeconfig = kubeconfig(&env, port);
    kubectl(
        &kubeconfig,
        &["create", "configmap", "kept", "--from-literal=a=b"],
        None,
    );
    let log = log(&env);
    assert!(log.contains("storage=Etcd"), "{log}");
}

#[test]
fn unknown_admission_plugins_stop_the_start_as_upstream() {
    let env = prepare();
    let port = testkit::free_port();
    let mut args = envtest_args(&env.cert_dir, port, "http://127.0.0.1:1");
    args.push("--enable-admission-plugins=NoSuchPlugin".into());
    let out = Command::new(env.assets.join("kube-apiserver"))
        .args(&args)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("enable-admission-plugins plugin \"NoSuchPlugin\" is unknown"),
        "{stderr}"
    );
}

/// Every flag of kube-apiserver 1.33's command line is accepted (issue 30):
/// the seeds' `--enable-aggregator-routing=true`, a log level with its value
/// apart, profiling, a shorthand. Each is logged; kubext's own flags still
/// apply; `--help` prints upstream's usage in pflag's format; a flag neither
/// knows still stops the start.
#[test]
fn every_kube_apiserver_flag_is_accepted() {
    let env = prepare();
    let port = testkit::free_port();
    let etcd = format!("http://127.0.0.1:{}", testkit::free_port());
    let mut args = envtest_args(&env.cert_dir, port, &etcd);
    for extra in [
        "--enable-aggregator-routing=true",
        "--v",
        "4",
        "--profiling=false",
        "--max-requests-inflight=800",
        "--endpoint-reconciler-type",
        "none",
    ] {
        args.push(extra.into());
    }
    let _server = start(&env, &args);
    wait_healthy(&env, port);
    let log = log(&env);
    assert!(
        log.contains("kubext always routes aggregated APIs"),
        "{log}"
    );
    assert!(log.contains("max-requests-inflight"), "{log}");

    let help = Command::new(env.assets.join("kube-apiserver"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for line in [
        "      --enable-aggregator-routing                        Turns on aggregator routing requests to endpoints IP rather than cluster IP.",
        "Etcd flags:",
    ] {
        assert!(help.contains(line), "{line:?} missing from --help");
    }
    let out = Command::new(env.assets.join("kube-apiserver"))
        .args(["--no-such-flag"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--no-such-flag"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
