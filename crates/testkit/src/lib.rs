//! Test harness: start a real `kubext` process (memory, embedded or etcd storage)
//! on a free loopback port and talk to it with kube-rs or kubectl.
//!
//! Operator authors can use it the same way kubext's own tests do:
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! let server = kubext_testkit::Server::builder().start()?;
//! let client = server.client().await?;
//! # Ok(()) }
//! ```

pub mod ha;
pub mod webhook;

use anyhow::{Context, Result, anyhow, bail};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Which storage the server runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Storage {
    Memory,
    Embedded,
    /// etcd at this endpoint (see [`Etcd`]).
    Etcd(String),
}

#[derive(Clone)]
pub struct Builder {
    binary: Option<PathBuf>,
    secure_port: u16,
    storage: Storage,
    data_dir: Option<PathBuf>,
    extra_args: Vec<String>,
    log_filter: Option<String>,
}

/// A running kubext, killed (SIGKILL) when dropped.
pub struct Server {
    child: Option<Child>,
    pub data_dir: PathBuf,
    pub kubeconfig: PathBuf,
    pub addr: SocketAddr,
    /// Keeps a temporary data dir alive for the server's lifetime.
    _tmp: Option<tempfile::TempDir>,
    stderr_log: PathBuf,
}

/// Where the kubext binary is: `$KUBEXT_BIN`, else next to the running test binary
/// (`target/<profile>/kubext`).
/// Retry `attempt` every 100 ms until it returns `Some` (for what the server
/// does moments after a write: controllers, compiled policies); the test
/// fails with `what` after 10 s.
pub fn eventually<T>(what: &str, mut attempt: impl FnMut() -> Option<T>) -> T {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(done) = attempt() {
            return done;
        }
        assert!(std::time::Instant::now() < deadline, "{what} within 10 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

pub fn kubext_binary() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("KUBEXT_BIN") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe()?;
    for dir in exe.ancestors().skip(1).take(3) {
        let candidate = dir.join("kubext");
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    bail!("kubext binary not found; build it (`cargo build -p kubext`) or set KUBEXT_BIN")
}

impl Server {
    pub fn builder() -> Builder {
        Builder {
            binary: None,
            secure_port: 0,
            storage: Storage::Memory,
            data_dir: None,
            extra_args: Vec::new(),
            log_filter: None,
        }
    }

    /// A kube-rs client authenticated as the admin. It does not retry 429/503/504
    /// answers (kube-rs does by default), so tests see what the server said.
    pub async fn client(&self) -> Result<kube::Client> {
        let config = self.client_config().await?;
        Ok(kube::Client::try_from(config)?)
    }

    /// The admin's client configuration (no retries), for tests that change it:
    /// other credentials, extra headers.
    pub async fn client_config(&self) -> Result<kube::Config> {
        let kubeconfig = kube::config::Kubeconfig::read_from(&self.kubeconfig)?;
        let mut config = kube::Config::from_custom_kubeconfig(
            kubeconfig,
            &kube::config::KubeConfigOptions::default(),
        )
        .await?;
        config.default_retry = false;
        Ok(config)
    }

    /// Run kubectl (`$KUBECTL` or `kubectl`) against this server.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_with_stdin(args, None)
    }

    pub fn kubectl_with_stdin(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let kubectl = std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".into());
        self.run_kubectl(&kubectl, args, stdin)
    }

    /// Run a specific kubectl binary (e.g. another version) against this server.
    pub fn run_kubectl(&self, kubectl: &str, args: &[&str], stdin: Option<&str>) -> Output {
        let mut child = Command::new(kubectl)
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", &self.data_dir)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {kubectl}: {e}"));
        if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
            let _ = pipe.write_all(input.as_bytes());
        }
        child
            .wait_with_output()
            .unwrap_or_else(|e| panic!("kubectl did not finish: {e}"))
    }

    /// Run kubectl and return stdout, failing the test with stderr if it fails.
    /// A `kubectl wait` that reads `status.conditions` before any controller
    /// wrote them (a new CRD's are `null`, as on kube-apiserver) is retried
    /// for up to 10 s: kubectl refuses the null instead of waiting.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut out = self.kubectl(args);
        while args.first() == Some(&"wait")
            && !out.status.success()
            && String::from_utf8_lossy(&out.stderr).contains(".status.conditions accessor error")
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(50));
            out = self.kubectl(args);
        }
        assert!(
            out.status.success(),
            "kubectl {} failed:\n{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Wait (up to 10 s) until `kubectl auth can-i <can_i>` answers yes: RBAC
    /// follows new roles and bindings within milliseconds, not in the same
    /// request. `can_i` usually ends with `--as <user>`.
    pub fn wait_until_allowed(&self, can_i: &[&str]) {
        let args: Vec<&str> = ["auth", "can-i"].iter().chain(can_i).copied().collect();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let out = self.kubectl(&args);
            if String::from_utf8_lossy(&out.stdout).trim() == "yes" {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "kubectl {} did not say yes within 10 s",
                args.join(" ")
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// `kubectl apply -f -` with this manifest, failing the test if kubectl fails.
    pub fn apply(&self, manifest: &str) -> String {
        let out = self.kubectl_with_stdin(&["apply", "-f", "-"], Some(manifest));
        assert!(
            out.status.success(),
            "kubectl apply failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The server's log so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr_log).unwrap_or_default()
    }

    /// SIGKILL the server (no graceful shutdown).
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM and wait for a graceful exit; returns the exit status.
    pub fn terminate(&mut self, timeout: Duration) -> Result<std::process::ExitStatus> {
        let mut child = self.child.take().ok_or_else(|| anyhow!("not running"))?;
        Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status()?;
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = child.try_wait()? {
                return Ok(status);
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                bail!("kubext did not exit within {timeout:?} after SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill9();
        // A failing test shows the server's side of the story (the harness captures
        // this and prints it only for failures).
        if std::thread::panicking() {
            eprintln!("--- kubext log ---\n{}", self.log());
        }
    }
}

impl Builder {
    pub fn binary(mut self, path: impl Into<PathBuf>) -> Self {
        self.binary = Some(path.into());
        self
    }

    pub fn storage(mut self, storage: Storage) -> Self {
        self.storage = storage;
        self
    }

    /// `--secure-port` (default 0: a free port the server picks).
    pub fn secure_port(mut self, port: u16) -> Self {
        self.secure_port = port;
        self
    }

    /// Use this data dir (kept after the server stops) instead of a temporary one.
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.data_dir = Some(dir.into());
        self
    }

    /// The server's `KUBEXT_LOG` filter (default: the test's `KUBEXT_LOG`, else
    /// `info`), e.g. `info,kubext_server::chain=debug` to log every request.
    pub fn log_filter(mut self, filter: impl Into<String>) -> Self {
        self.log_filter = Some(filter.into());
        self
    }

    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.extra_args.push(arg.into());
        self
    }

    /// Start the server and wait until it is ready.
    pub fn start(self) -> Result<Server> {
        let binary = match self.binary {
            Some(b) => b,
            None => kubext_binary()?,
        };
        let (tmp, data_dir) = match self.data_dir {
            Some(d) => (None, d),
            None => {
                let t = tempfile::Builder::new().prefix("kubext-test").tempdir()?;
                let p = t.path().to_path_buf();
                (Some(t), p)
            }
        };
        std::fs::create_dir_all(&data_dir)?;
        let stderr_log = data_dir.join("kubext.log");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&stderr_log)?;
        let mut cmd = Command::new(&binary);
        cmd.arg("serve")
            .arg("--data-dir")
            .arg(&data_dir)
            .arg("--secure-port")
            .arg(self.secure_port.to_string());
        match &self.storage {
            Storage::Memory => {
                cmd.args(["--storage", "memory"]);
            }
            Storage::Embedded => {
                cmd.args(["--storage", "embedded"]);
            }
            Storage::Etcd(endpoint) => {
                cmd.args(["--storage", "etcd", "--etcd-servers", endpoint]);
            }
        }
        let mut child = cmd
            .args(&self.extra_args)
            .env(
                "KUBEXT_LOG",
                self.log_filter
                    .or_else(|| std::env::var("KUBEXT_LOG").ok())
                    .unwrap_or_else(|| "info".into()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .with_context(|| format!("cannot run {}", binary.display()))?;
        let stdout = child.stdout.take().ok_or_else(|| anyhow!("no stdout"))?;
        let (kubeconfig, addr) = read_ready_lines(stdout).with_context(|| {
            let _ = child.kill();
            format!(
                "kubext did not become ready; log:\n{}",
                std::fs::read_to_string(&stderr_log).unwrap_or_default()
            )
        })?;
        Ok(Server {
            child: Some(child),
            data_dir,
            kubeconfig,
            addr,
            _tmp: tmp,
            stderr_log,
        })
    }
}

/// Read `kubeconfig: …` and `listening: https://…` from a server's stdout (kubext,
/// or an extension server printing the same lines).
pub fn read_ready_lines(stdout: impl Read + Send + 'static) -> Result<(PathBuf, SocketAddr)> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut kubeconfig = None;
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(p) = line.strip_prefix("kubeconfig: ") {
                kubeconfig = Some(PathBuf::from(p));
            } else if let Some(a) = line.strip_prefix("listening: https://") {
                let _ = tx.send((kubeconfig.take(), a.parse::<SocketAddr>().ok()));
            }
        }
    });
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok((Some(k), Some(a))) => Ok((k, a)),
        Ok(_) => bail!("unexpected start-up output"),
        Err(_) => bail!("timed out waiting for kubext to start"),
    }
}

/// Pick a free loopback port (racy by nature; callers retry).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(0)
}

/// A private etcd server in a temp dir, SIGKILLed on drop. Alone, or one member of
/// an [`EtcdCluster`].
pub struct Etcd {
    child: Option<Child>,
    dir: tempfile::TempDir,
    pub client_port: u16,
    peer_port: u16,
    name: String,
    /// `--initial-cluster`: every member's `name=peer-url`.
    initial_cluster: String,
    /// Clients speak mutual TLS ([`Etcd::start_tls`]).
    pub tls: Option<EtcdTls>,
    /// Plain-HTTP `/health` and `/metrics` (`--listen-metrics-urls`) under TLS.
    metrics_port: Option<u16>,
}

/// The PEM files of an etcd started by [`Etcd::start_tls`]: a CA, the server's
/// certificate for 127.0.0.1 and a client certificate, all signed by the CA.
pub struct EtcdTls {
    pub ca_file: PathBuf,
    pub client_cert_file: PathBuf,
    pub client_key_file: PathBuf,
    server_cert_file: PathBuf,
    server_key_file: PathBuf,
}

impl EtcdTls {
    /// kubext's flags to reach it: `--etcd-cafile`, `--etcd-certfile`, `--etcd-keyfile`.
    pub fn flags(&self) -> Vec<String> {
        vec![
            format!("--etcd-cafile={}", self.ca_file.display()),
            format!("--etcd-certfile={}", self.client_cert_file.display()),
            format!("--etcd-keyfile={}", self.client_key_file.display()),
        ]
    }

    fn generate(dir: &Path) -> Result<EtcdTls> {
        let ca_key = rcgen::KeyPair::generate()?;
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new())?;
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "etcd-test-ca");
        let ca_cert = ca_params.self_signed(&ca_key)?;
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let leaf = |name: &str,
                    usage: rcgen::ExtendedKeyUsagePurpose|
         -> Result<(String, String)> {
            let key = rcgen::KeyPair::generate()?;
            let mut params =
                rcgen::CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".into()])?;
            params
                .distinguished_name
                .push(rcgen::DnType::CommonName, name);
            params.extended_key_usages = vec![usage];
            Ok((params.signed_by(&key, &issuer)?.pem(), key.serialize_pem()))
        };
        let (server_cert, server_key) = leaf("etcd", rcgen::ExtendedKeyUsagePurpose::ServerAuth)?;
        let (client_cert, client_key) = leaf("kubext", rcgen::ExtendedKeyUsagePurpose::ClientAuth)?;
        let tls = EtcdTls {
            ca_file: dir.join("ca.crt"),
            client_cert_file: dir.join("client.crt"),
            client_key_file: dir.join("client.key"),
            server_cert_file: dir.join("server.crt"),
            server_key_file: dir.join("server.key"),
        };
        for (path, pem) in [
            (&tls.ca_file, ca_cert.pem()),
            (&tls.client_cert_file, client_cert),
            (&tls.client_key_file, client_key),
            (&tls.server_cert_file, server_cert),
            (&tls.server_key_file, server_key),
        ] {
            std::fs::write(path, pem)?;
        }
        Ok(tls)
    }
}

pub fn etcd_binary() -> PathBuf {
    let path = std::env::var_os("ETCD_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/etcd"));
    assert!(
        path.exists(),
        "etcd binary not found at {} — install it (Debian: `apt-get install etcd-server`) or set ETCD_BIN",
        path.display()
    );
    path
}

impl Etcd {
    pub fn start() -> Result<Etcd> {
        Etcd::start_with(&etcd_binary())
    }

    /// Start this etcd binary (another release than [`etcd_binary`]'s).
    pub fn start_with(binary: &Path) -> Result<Etcd> {
        Etcd::start_as(binary, false)
    }

    /// Start one that serves clients over TLS and requires a client certificate
    /// signed by its CA (`--client-cert-auth`), as production etcd does; its
    /// files are in [`Etcd::tls`], its endpoint is `https://`.
    pub fn start_tls() -> Result<Etcd> {
        Etcd::start_as(&etcd_binary(), true)
    }

    fn start_as(binary: &Path, tls: bool) -> Result<Etcd> {
        let mut last = String::new();
        for _ in 0..5 {
            let mut etcd = Etcd::member("test")?;
            if tls {
                etcd.tls = Some(EtcdTls::generate(etcd.dir.path())?);
                etcd.metrics_port = Some(free_port());
            }
            etcd.initial_cluster = format!("test={}", etcd.peer_url());
            etcd.spawn(binary)?;
            match etcd.wait_ready() {
                Ok(()) => return Ok(etcd),
                Err(e) => last = e.to_string(),
            }
        }
        bail!("etcd did not start: {last}")
    }

    /// A member not yet started, on free ports, with its own data dir.
    fn member(name: &str) -> Result<Etcd> {
        Ok(Etcd {
            child: None,
            dir: tempfile::Builder::new().prefix("kubext-etcd").tempdir()?,
            client_port: free_port(),
            peer_port: free_port(),
            name: name.into(),
            initial_cluster: String::new(),
            tls: None,
            metrics_port: None,
        })
    }

    pub fn endpoint(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.client_port)
    }

    /// Where plain-HTTP `/health` and `/metrics` answer.
    fn http_port(&self) -> u16 {
        self.metrics_port.unwrap_or(self.client_port)
    }

    fn peer_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.peer_port)
    }

    /// Freeze (SIGSTOP) or thaw (SIGCONT) the server: its connections stay open
    /// but nothing answers, like a member cut off by a partition.
    pub fn freeze(&self, frozen: bool) {
        if let Some(c) = &self.child {
            let signal = if frozen { "-STOP" } else { "-CONT" };
            let _ = Command::new("kill")
                .arg(signal)
                .arg(c.id().to_string())
                .status();
        }
    }

    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// The process id, while it runs (for its CPU time and memory in `/proc`).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// How many watchers this member serves now (its `etcd_debugging_mvcc_watcher_total`
    /// metric); 0 if it does not answer.
    pub fn watcher_count(&self) -> u64 {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.http_port())) else {
            return 0;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        let _ = s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n");
        let mut body = String::new();
        let _ = s.read_to_string(&mut body);
        body.lines()
            .find_map(|l| l.strip_prefix("etcd_debugging_mvcc_watcher_total "))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .map_or(0, |v| v as u64)
    }

    /// SIGKILL the server (no chance to flush anything).
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Start again on the same data directory and ports.
    pub fn restart(&mut self) -> Result<()> {
        self.kill9();
        let binary = etcd_binary();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            self.spawn(&binary)?;
            match self.wait_ready() {
                Ok(()) => return Ok(()),
                // The old process's ports may take a moment to be released.
                Err(e) if Instant::now() > deadline => return Err(e),
                Err(_) => {
                    self.kill9();
                    std::thread::sleep(Duration::from_millis(200));
                }
            }
        }
    }

    fn spawn(&mut self, binary: &Path) -> Result<()> {
        let client = self.endpoint();
        let peer = self.peer_url();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("etcd.log"))?;
        let mut command = Command::new(binary);
        if let (Some(tls), Some(metrics)) = (&self.tls, self.metrics_port) {
            command
                .arg(format!("--cert-file={}", tls.server_cert_file.display()))
                .arg(format!("--key-file={}", tls.server_key_file.display()))
                .arg(format!("--trusted-ca-file={}", tls.ca_file.display()))
                .arg("--client-cert-auth")
                .arg(format!("--listen-metrics-urls=http://127.0.0.1:{metrics}"));
        }
        let child = command
            .arg(format!("--name={}", self.name))
            .arg(format!(
                "--data-dir={}",
                self.dir.path().join("data").display()
            ))
            .arg(format!("--listen-client-urls={client}"))
            .arg(format!("--advertise-client-urls={client}"))
            .arg(format!("--listen-peer-urls={peer}"))
            .arg(format!("--initial-advertise-peer-urls={peer}"))
            .arg(format!("--initial-cluster={}", self.initial_cluster))
            .arg("--initial-cluster-state=new")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()?;
        self.child = Some(child);
        Ok(())
    }

    /// Ready when `/health` answers `"health":"true"`.
    fn wait_ready(&mut self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                bail!("etcd exited with {status}");
            }
            if let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.http_port())) {
                let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                let _ = s.write_all(b"GET /health HTTP/1.0\r\n\r\n");
                let mut body = String::new();
                let _ = s.read_to_string(&mut body);
                if body.contains("\"health\":\"true\"") {
                    return Ok(());
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        bail!("etcd not healthy within 30s")
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// A private etcd cluster of several members on free loopback ports. Members are
/// started, killed and restarted one by one through [`EtcdCluster::members`].
pub struct EtcdCluster {
    pub members: Vec<Etcd>,
}

impl EtcdCluster {
    /// Start `size` members and wait until each reports healthy (a leader is elected).
    pub fn start(size: usize) -> Result<EtcdCluster> {
        let binary = etcd_binary();
        let mut last = String::new();
        for _ in 0..3 {
            let mut members = (0..size)
                .map(|i| Etcd::member(&format!("m{i}")))
                .collect::<Result<Vec<_>>>()?;
            let initial_cluster = members
                .iter()
                .map(|m| format!("{}={}", m.name, m.peer_url()))
                .collect::<Vec<_>>()
                .join(",");
            for m in &mut members {
                m.initial_cluster = initial_cluster.clone();
                m.spawn(&binary)?;
            }
            match members.iter_mut().try_for_each(Etcd::wait_ready) {
                Ok(()) => return Ok(EtcdCluster { members }),
                // A port taken between picking and binding: start over on new ones.
                Err(e) => last = e.to_string(),
            }
        }
        bail!("etcd cluster did not start: {last}")
    }

    /// Every member's client URL, comma-separated (for `--etcd-servers`).
    pub fn endpoints(&self) -> String {
        self.members
            .iter()
            .map(Etcd::endpoint)
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// How an aggregator is to trust an extension server's serving certificate.
pub enum BackendTls<'a> {
    /// `insecureSkipTLSVerify: true`.
    Insecure,
    /// `caBundle`: this PEM, checked against `<name>.<namespace>.svc`.
    CaBundle(&'a [u8]),
}

/// Manifests registering an extension server that listens on 127.0.0.1:`port` for
/// `group/version`: a Service `name` in `namespace` (no selector), its
/// EndpointSlice, and the APIService (priorities 1000/15). The namespace must exist.
pub fn extension_registration(
    namespace: &str,
    name: &str,
    group: &str,
    version: &str,
    port: u16,
    tls: BackendTls<'_>,
) -> String {
    use base64::Engine;
    let trust = match tls {
        BackendTls::Insecure => "insecureSkipTLSVerify: true".to_string(),
        BackendTls::CaBundle(pem) => format!(
            "caBundle: {}",
            base64::engine::general_purpose::STANDARD.encode(pem)
        ),
    };
    format!(
        r#"
apiVersion: v1
kind: Service
metadata: {{name: {name}, namespace: {namespace}}}
spec: {{ports: [{{port: 443, protocol: TCP}}]}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {{name: {name}-1, namespace: {namespace}, labels: {{kubernetes.io/service-name: {name}}}}}
addressType: IPv4
ports: [{{port: {port}, protocol: TCP}}]
endpoints: [{{addresses: ["127.0.0.1"], conditions: {{ready: true}}}}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {{name: {version}.{group}}}
spec:
  group: {group}
  version: {version}
  groupPriorityMinimum: 1000
  versionPriority: 15
  {trust}
  service: {{namespace: {namespace}, name: {name}}}
"#
    )
}
