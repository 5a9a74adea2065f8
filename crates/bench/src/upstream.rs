//! Upstream's control plane for the side-by-side run: kube-apiserver and
//! kube-controller-manager (which does what kubext's own controllers do) on an
//! etcd, as `scripts/upstream` builds them, with a static admin token, a
//! service-account key, and a front-proxy CA and client certificate for the
//! aggregation layer, all generated into a temporary directory.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::handle::Handle;

/// The admin's token, in `system:masters`.
const TOKEN: &str = "kubext-bench-admin-token";
/// The common name of the aggregator's client certificate.
const FRONT_PROXY_CLIENT: &str = "front-proxy-client";
/// How long kube-apiserver may take to become ready.
const READY_WITHIN: Duration = Duration::from_secs(180);

/// Where upstream's programs are.
#[derive(Debug, Clone)]
pub struct Binaries {
    pub apiserver: PathBuf,
    pub controller_manager: PathBuf,
    pub etcd: PathBuf,
}

impl Binaries {
    /// The given paths, else `scripts/upstream`'s builds (made when missing,
    /// which needs Go).
    pub fn locate(
        apiserver: Option<PathBuf>,
        controller_manager: Option<PathBuf>,
        etcd: Option<PathBuf>,
    ) -> Result<Binaries> {
        let find = |given: Option<PathBuf>, program: &str| match given {
            Some(path) if path.is_file() => Ok(path),
            Some(path) => bail!("no {program} at {}", path.display()),
            None => built(program),
        };
        Ok(Binaries {
            apiserver: find(apiserver, "kube-apiserver")?,
            controller_manager: find(controller_manager, "kube-controller-manager")?,
            etcd: find(etcd, "etcd")?,
        })
    }
}

/// The repository's `scripts/upstream`.
fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/upstream")
}

/// `scripts/upstream <program>`'s path (its default release: the one kubext
/// serves): cached, else built (minutes; needs Go).
fn built(program: &str) -> Result<PathBuf> {
    let script = script();
    anyhow::ensure!(
        script.is_file(),
        "no {} to build upstream's {program}; pass its path by flag",
        script.display()
    );
    let run = |args: &[&str]| {
        Command::new(&script)
            .args(args)
            .stderr(Stdio::inherit())
            .output()
    };
    let cached = run(&["--cached", program])?;
    let out = if cached.status.success() {
        cached
    } else {
        let go = Command::new("go").arg("version").output();
        if !go.is_ok_and(|o| o.status.success()) {
            bail!(
                "upstream's {program} is not built and Go is missing: install Go \
                 (https://go.dev/dl/) so that scripts/upstream can build it, or pass its path by flag"
            );
        }
        eprintln!("building upstream's {program} with scripts/upstream (minutes) …");
        run(&[program])?
    };
    anyhow::ensure!(out.status.success(), "scripts/upstream {program} failed");
    let path = String::from_utf8(out.stdout)?;
    Ok(PathBuf::from(path.trim()))
}

/// What every start shares: the token file, the service-account key, and the
/// front-proxy CA with its client certificate.
struct Files {
    dir: tempfile::TempDir,
}

impl Files {
    fn write() -> Result<Files> {
        let dir = tempfile::Builder::new()
            .prefix("kubext-bench-upstream")
            .tempdir()?;
        let path = |name: &str| dir.path().join(name);
        std::fs::write(
            path("tokens.csv"),
            format!("{TOKEN},admin,admin-uid,\"system:masters\"\n"),
        )?;
        // ES256: kube-apiserver signs and verifies tokens with an ECDSA key as
        // well as with an RSA one (the public half on its own: its reader of
        // public keys takes no PKCS#8 private key).
        let sa = rcgen::KeyPair::generate()?;
        std::fs::write(path("sa.key"), sa.serialize_pem())?;
        std::fs::write(path("sa.pub"), sa.public_key_pem())?;
        let (ca, cert, key) = front_proxy()?;
        std::fs::write(path("front-proxy-ca.crt"), ca)?;
        std::fs::write(path("front-proxy-client.crt"), cert)?;
        std::fs::write(path("front-proxy-client.key"), key)?;
        Ok(Files { dir })
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }
}

/// A front-proxy CA and the client certificate it signed: (CA, cert, key) PEMs.
fn front_proxy() -> Result<(String, String, String)> {
    let ca_key = rcgen::KeyPair::generate()?;
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "kubext-bench-front-proxy-ca");
    let ca = ca_params.self_signed(&ca_key)?;
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new())?;
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, FRONT_PROXY_CLIENT);
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let key = rcgen::KeyPair::generate()?;
    let cert = params.signed_by(&key, &issuer)?;
    Ok((ca.pem(), cert.pem(), key.serialize_pem()))
}

/// Starts upstream control planes on one etcd, each under its own prefix.
pub struct Launcher {
    binaries: Binaries,
    etcd_endpoint: String,
    etcd_pid: Option<u32>,
    files: Files,
}

/// A running kube-apiserver and kube-controller-manager, killed when dropped.
pub struct ControlPlane {
    apiserver: Child,
    controller_manager: Child,
    /// Their serving certificates, kubeconfig and logs.
    dir: tempfile::TempDir,
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        for child in [&mut self.controller_manager, &mut self.apiserver] {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl ControlPlane {
    /// Both logs so far.
    pub fn log(&self) -> String {
        let read = |name: &str| std::fs::read_to_string(self.dir.path().join(name));
        let mut log = read("kube-apiserver.log").unwrap_or_default();
        log.push_str(&read("kube-controller-manager.log").unwrap_or_default());
        log
    }
}

impl Launcher {
    pub fn new(binaries: Binaries, etcd: &testkit::Etcd) -> Result<Launcher> {
        Ok(Launcher {
            binaries,
            etcd_endpoint: etcd.endpoint(),
            etcd_pid: etcd.pid(),
            files: Files::write()?,
        })
    }

    /// Start kube-apiserver (under etcd prefix `/upstream-bench-<tag>`), time it
    /// from spawn to `/readyz` answering 200, then start kube-controller-manager.
    pub async fn start(&self, tag: &str) -> Result<(ControlPlane, Handle, Duration)> {
        let dir = tempfile::Builder::new()
            .prefix("kubext-bench-kube-apiserver")
            .tempdir()?;
        let port = testkit::free_port();
        let log = |name: &str| std::fs::File::create(dir.path().join(name));
        let started = Instant::now();
        let mut apiserver = Command::new(&self.binaries.apiserver)
            .args(self.apiserver_args(dir.path(), port, tag))
            .stdin(Stdio::null())
            .stdout(log("kube-apiserver.log")?)
            .stderr(log("kube-apiserver.log")?)
            .spawn()
            .with_context(|| format!("cannot run {}", self.binaries.apiserver.display()))?;
        let handle = self.handle(port)?;
        if let Err(e) = wait_ready(&handle, &mut apiserver).await {
            let _ = apiserver.kill();
            let log =
                std::fs::read_to_string(dir.path().join("kube-apiserver.log")).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(10).collect();
            bail!("{e:#}; kube-apiserver's log ends: {tail:?}");
        }
        let took = started.elapsed();
        let kubeconfig = dir.path().join("kubeconfig");
        std::fs::write(&kubeconfig, kubeconfig_yaml(port))?;
        let controller_manager = Command::new(&self.binaries.controller_manager)
            .args(self.controller_manager_args(&kubeconfig))
            .stdin(Stdio::null())
            .stdout(log("kube-controller-manager.log")?)
            .stderr(log("kube-controller-manager.log")?)
            .spawn()
            .with_context(|| {
                format!("cannot run {}", self.binaries.controller_manager.display())
            })?;
        let handle = Handle {
            pids: vec![apiserver.id(), controller_manager.id()],
            ..handle
        };
        let control_plane = ControlPlane {
            apiserver,
            controller_manager,
            dir,
        };
        Ok((control_plane, handle, took))
    }

    fn apiserver_args(&self, dir: &Path, port: u16, tag: &str) -> Vec<String> {
        let f = |name| self.files.path(name);
        vec![
            format!("--etcd-servers={}", self.etcd_endpoint),
            format!("--etcd-prefix=/upstream-bench-{tag}"),
            format!("--token-auth-file={}", f("tokens.csv")),
            format!("--service-account-key-file={}", f("sa.pub")),
            format!("--service-account-signing-key-file={}", f("sa.key")),
            "--service-account-issuer=https://kubernetes.default.svc".into(),
            "--service-cluster-ip-range=10.0.0.0/24".into(),
            "--bind-address=127.0.0.1".into(),
            format!("--secure-port={port}"),
            format!("--cert-dir={}", dir.join("certs").display()),
            "--authorization-mode=RBAC".into(),
            format!("--proxy-client-cert-file={}", f("front-proxy-client.crt")),
            format!("--proxy-client-key-file={}", f("front-proxy-client.key")),
            format!("--requestheader-client-ca-file={}", f("front-proxy-ca.crt")),
            format!("--requestheader-allowed-names={FRONT_PROXY_CLIENT}"),
            "--requestheader-username-headers=X-Remote-User".into(),
            "--requestheader-group-headers=X-Remote-Group".into(),
            "--requestheader-extra-headers-prefix=X-Remote-Extra-".into(),
        ]
    }

    fn controller_manager_args(&self, kubeconfig: &Path) -> Vec<String> {
        vec![
            format!("--kubeconfig={}", kubeconfig.display()),
            format!(
                "--service-account-private-key-file={}",
                self.files.path("sa.key")
            ),
            "--leader-elect=false".into(),
            "--use-service-account-credentials=false".into(),
            "--controllers=*".into(),
            // No port of its own: several may run, and nothing here reads it.
            "--secure-port=0".into(),
        ]
    }

    /// The admin's handle on 127.0.0.1:`port` (kube-apiserver's self-signed
    /// serving certificate is not checked).
    fn handle(&self, port: u16) -> Result<Handle> {
        let mut config = kube::Config::new(format!("https://127.0.0.1:{port}").parse()?);
        config.accept_invalid_certs = true;
        config.auth_info.token = Some(TOKEN.to_owned().into());
        config.default_retry = false;
        Ok(Handle {
            config,
            addr: ([127, 0, 0, 1], port).into(),
            bearer: Some(TOKEN.into()),
            pids: Vec::new(),
            etcd_pid: self.etcd_pid,
            front_proxy_ca: self.files.dir.path().join("front-proxy-ca.crt"),
        })
    }
}

/// kube-controller-manager's kubeconfig: the admin token, the server unchecked.
fn kubeconfig_yaml(port: u16) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters: [{{name: upstream, cluster: {{server: 'https://127.0.0.1:{port}', insecure-skip-tls-verify: true}}}}]
users: [{{name: admin, user: {{token: {TOKEN}}}}}]
contexts: [{{name: upstream, context: {{cluster: upstream, user: admin}}}}]
current-context: upstream
"
    )
}

/// Poll `/readyz` until it answers 200 (or the process exits).
async fn wait_ready(handle: &Handle, apiserver: &mut Child) -> Result<()> {
    let client = handle.client()?;
    let deadline = Instant::now() + READY_WITHIN;
    loop {
        if let Some(status) = apiserver.try_wait()? {
            bail!("kube-apiserver exited with {status}");
        }
        let request = http::Request::get("/readyz").body(Vec::new())?;
        if let Ok(Ok(_)) =
            tokio::time::timeout(Duration::from_secs(2), client.request_text(request)).await
        {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "kube-apiserver not ready within {READY_WITHIN:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Wait until kube-controller-manager runs its controllers (its ServiceAccount
/// controller has made `default/default`), then let it finish starting.
pub async fn settle(handle: &Handle) -> Result<()> {
    use k8s_openapi::api::core::v1::ServiceAccount;
    let accounts: kube::Api<ServiceAccount> = kube::Api::namespaced(handle.client()?, "default");
    let deadline = Instant::now() + Duration::from_secs(120);
    while accounts.get_opt("default").await?.is_none() {
        anyhow::ensure!(
            Instant::now() < deadline,
            "kube-controller-manager made no default ServiceAccount within 120 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    Ok(())
}
