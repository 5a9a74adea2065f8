//! A highly available kubext for tests (issue 34): an etcd cluster, kubext
//! replicas on their own loopback addresses (127.0.0.1, 127.0.0.2, …) and one
//! `--secure-port`, and HAProxy in front of them as a TCP load balancer.
//!
//! The replicas share one PKI as kube-apiserver replicas share theirs: the first
//! replica generates the CA, the admin's client certificate, the front-proxy CA
//! and the service-account key in its data dir; the others start with copies of
//! them and each signs its own serving certificate with the shared CA (valid for
//! its address and for 127.0.0.1, where the load balancer listens). So one
//! kubeconfig works against every replica and the load balancer, and a
//! service-account token issued by one replica is accepted by all.
//!
//! HAProxy passes TLS through (`mode tcp`), balances round-robin, and checks each
//! replica's `/readyz` over HTTPS every 500 ms (down after 2 failures, up after 2
//! successes); a connection refused by a dead replica is retried on another
//! (`retries`, `option redispatch`), as a production configuration for
//! kube-apiserver does.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! let mut rig = kubext_testkit::ha::Rig::builder().start().await?;
//! let client = rig.lb_client().await?;
//! rig.replicas[1].kill9();
//! rig.replicas[1].restart()?;
//! # Ok(()) }
//! ```

use crate::{Builder, EtcdCluster, Server, Storage};
use anyhow::{Context, Result, anyhow, bail};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How to start a [`Rig`].
pub struct RigBuilder {
    replicas: usize,
    etcd_members: usize,
    args: Vec<String>,
    log_filter: Option<String>,
}

impl RigBuilder {
    /// How many kubext replicas (default 3; at most 250).
    pub fn replicas(mut self, n: usize) -> Self {
        self.replicas = n;
        self
    }

    /// How many etcd members (default 3).
    pub fn etcd_members(mut self, n: usize) -> Self {
        self.etcd_members = n;
        self
    }

    /// A flag every replica gets (e.g. `--service-cluster-ip-range`).
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// The replicas' `KUBEXT_LOG` filter (see [`Builder::log_filter`]).
    pub fn log_filter(mut self, filter: impl Into<String>) -> Self {
        self.log_filter = Some(filter.into());
        self
    }

    /// Start etcd, the replicas and the load balancer, and wait until the load
    /// balancer sees every replica ready and answers `/readyz` itself.
    pub async fn start(self) -> Result<Rig> {
        let rig = tokio::task::spawn_blocking(move || self.start_blocking()).await??;
        rig.wait_lb_ready(Duration::from_secs(20)).await?;
        Ok(rig)
    }

    fn start_blocking(self) -> Result<Rig> {
        if self.replicas == 0 || self.replicas > 250 {
            bail!("a rig has 1 to 250 replicas, not {}", self.replicas);
        }
        let etcd = EtcdCluster::start(self.etcd_members)?;
        let dir = tempfile::Builder::new().prefix("kubext-ha").tempdir()?;
        let ips: Vec<Ipv4Addr> = (1..=self.replicas as u8)
            .map(|n| Ipv4Addr::new(127, 0, 0, n))
            .collect();
        let mut last = anyhow!("no attempt");
        // The shared port (and the load balancer's) are picked free but may be
        // taken before kubext or HAProxy binds them: start over on others.
        // Any other failure ends the start.
        for attempt in 0..3 {
            if attempt > 0
                && !format!("{last:#}")
                    .to_lowercase()
                    .contains("already in use")
            {
                break;
            }
            let base = dir.path().join(format!("attempt-{attempt}"));
            let port = match free_port_on(&ips) {
                Ok(p) => p,
                Err(e) => {
                    last = e;
                    continue;
                }
            };
            let replicas = match self.start_replicas(&etcd, &base, &ips, port) {
                Ok(r) => r,
                Err(e) => {
                    last = e;
                    continue;
                }
            };
            let backends: Vec<(String, String)> = replicas
                .iter()
                .map(|r| (r.name.clone(), format!("{}:{port}", r.ip)))
                .collect();
            let lb = match HaProxy::start(&base.join("haproxy"), &backends) {
                Ok(lb) => lb,
                Err(e) => {
                    last = e;
                    continue;
                }
            };
            let lb_kubeconfig = base.join("lb.kubeconfig");
            let first = std::fs::read_to_string(&replicas[0].server().kubeconfig)?;
            std::fs::write(
                &lb_kubeconfig,
                retarget(&first, &format!("https://127.0.0.1:{}", lb.port))?,
            )?;
            let rig = Rig {
                lb,
                replicas,
                etcd,
                port,
                lb_kubeconfig,
                dir,
            };
            rig.lb
                .wait_for(Duration::from_secs(20), "every replica up", |states| {
                    states.iter().all(|(_, s)| s == "UP")
                })?;
            return Ok(rig);
        }
        Err(last.context("the HA rig did not start"))
    }

    /// The first replica creates the PKI; the others start with copies of it
    /// (but their own serving certificates), two at a time.
    fn start_replicas(
        &self,
        etcd: &EtcdCluster,
        base: &Path,
        ips: &[Ipv4Addr],
        port: u16,
    ) -> Result<Vec<Replica>> {
        let mut replicas: Vec<Replica> = ips
            .iter()
            .enumerate()
            .map(|(i, ip)| {
                let data_dir = base.join(format!("r{}", i + 1));
                let mut builder = Server::builder()
                    .storage(Storage::Etcd(etcd.endpoints()))
                    .data_dir(&data_dir)
                    .secure_port(port)
                    .arg("--bind-address")
                    .arg(ip.to_string())
                    .arg("--advertise-address")
                    .arg(ip.to_string());
                for a in &self.args {
                    builder = builder.arg(a.clone());
                }
                if let Some(f) = &self.log_filter {
                    builder = builder.log_filter(f.clone());
                }
                Replica {
                    name: format!("r{}", i + 1),
                    ip: *ip,
                    data_dir,
                    builder,
                    server: None,
                }
            })
            .collect();
        let (first, rest) = replicas
            .split_first_mut()
            .ok_or_else(|| anyhow!("no replicas"))?;
        first.restart()?;
        let pki = first.data_dir.join("pki");
        for r in rest.iter() {
            copy_shared_pki(&pki, &r.data_dir.join("pki"))?;
        }
        std::thread::scope(|scope| {
            rest.iter_mut()
                .map(|r| scope.spawn(|| r.restart()))
                .collect::<Vec<_>>()
                .into_iter()
                .try_for_each(|h| h.join().map_err(|_| anyhow!("a start panicked"))?)
        })?;
        Ok(replicas)
    }
}

/// Copy a PKI directory but for the serving certificate (each replica makes its
/// own, for its own address, signed by the shared CA).
fn copy_shared_pki(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("serving.") || !entry.file_type()?.is_file() {
            continue;
        }
        std::fs::copy(entry.path(), to.join(&*name))
            .with_context(|| format!("copying {}", entry.path().display()))?;
    }
    Ok(())
}

/// A kubeconfig's `server:` pointed elsewhere.
fn retarget(kubeconfig: &str, server: &str) -> Result<String> {
    let mut found = false;
    let out = kubeconfig
        .lines()
        .map(|l| match l.trim_start().strip_prefix("server: ") {
            Some(_) => {
                found = true;
                let indent = &l[..l.len() - l.trim_start().len()];
                format!("{indent}server: {server}")
            }
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    if !found {
        bail!("no server: line in the kubeconfig");
    }
    Ok(out + "\n")
}

/// A port free on every one of these addresses.
fn free_port_on(ips: &[Ipv4Addr]) -> Result<u16> {
    for _ in 0..20 {
        let port = crate::free_port();
        if port != 0 && ips.iter().all(|ip| TcpListener::bind((*ip, port)).is_ok()) {
            return Ok(port);
        }
    }
    bail!("no port free on {ips:?}")
}

/// One kubext replica: its address, data dir and flags, and its process while
/// it runs. Restarted with the same data dir and flags.
pub struct Replica {
    /// `r1`, `r2`, … (HAProxy's server names too).
    pub name: String,
    pub ip: Ipv4Addr,
    pub data_dir: PathBuf,
    builder: Builder,
    server: Option<Server>,
}

impl Replica {
    /// The running server (panics if the replica is down).
    pub fn server(&self) -> &Server {
        self.server
            .as_ref()
            .filter(|s| s.pid().is_some())
            .unwrap_or_else(|| panic!("replica {} is not running", self.name))
    }

    pub fn is_running(&self) -> bool {
        self.server.as_ref().is_some_and(|s| s.pid().is_some())
    }

    /// An admin client of this replica alone (no retries; see [`Server::client`]).
    pub async fn client(&self) -> Result<kube::Client> {
        self.server().client().await
    }

    pub async fn client_config(&self) -> Result<kube::Config> {
        self.server().client_config().await
    }

    /// SIGKILL the replica (no graceful shutdown).
    pub fn kill9(&mut self) {
        if let Some(s) = &mut self.server {
            s.kill9();
        }
    }

    /// SIGTERM and wait for the exit.
    pub fn terminate(&mut self, timeout: Duration) -> Result<std::process::ExitStatus> {
        self.server
            .as_mut()
            .ok_or_else(|| anyhow!("replica {} is not running", self.name))?
            .terminate(timeout)
    }

    /// (Re)start with the same data dir and flags (killing it first if it runs),
    /// and wait until it is ready. Blocks for as long as a start takes (about a
    /// second).
    pub fn restart(&mut self) -> Result<()> {
        self.kill9();
        let started = self
            .builder
            .clone()
            .start()
            .with_context(|| format!("starting replica {} on {}", self.name, self.ip))?;
        self.server = Some(started);
        Ok(())
    }

    /// The identity this replica's latest start announced for the
    /// `kube-system/kubext-controllers` Lease.
    pub fn identity(&self) -> Option<String> {
        self.log()
            .lines()
            .rev()
            .find(|l| l.contains("leader election for kubext's controllers"))
            .and_then(|l| l.split("identity=").nth(1))
            .and_then(|rest| rest.split_whitespace().next())
            .map(str::to_string)
    }

    /// Every log line this replica wrote, across restarts.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.data_dir.join("kubext.log")).unwrap_or_default()
    }
}

/// Three kubext replicas on an etcd cluster behind HAProxy. Everything is killed
/// when dropped (HAProxy first, etcd last).
pub struct Rig {
    pub lb: HaProxy,
    pub replicas: Vec<Replica>,
    pub etcd: EtcdCluster,
    /// The replicas' shared `--secure-port`.
    pub port: u16,
    lb_kubeconfig: PathBuf,
    /// Holds the data dirs; removed last.
    dir: tempfile::TempDir,
}

impl Rig {
    pub fn builder() -> RigBuilder {
        RigBuilder {
            replicas: 3,
            etcd_members: 3,
            args: Vec::new(),
            log_filter: None,
        }
    }

    /// The admin kubeconfig for the load balancer.
    pub fn lb_kubeconfig(&self) -> &Path {
        &self.lb_kubeconfig
    }

    pub fn lb_url(&self) -> String {
        format!("https://127.0.0.1:{}", self.lb.port)
    }

    /// The admin's client configuration for the load balancer (no retries).
    pub async fn lb_client_config(&self) -> Result<kube::Config> {
        let kubeconfig = kube::config::Kubeconfig::read_from(&self.lb_kubeconfig)?;
        let mut config = kube::Config::from_custom_kubeconfig(
            kubeconfig,
            &kube::config::KubeConfigOptions::default(),
        )
        .await?;
        config.default_retry = false;
        Ok(config)
    }

    /// An admin client through the load balancer. Each client has its own
    /// connections, which HAProxy spreads over the replicas as they open.
    pub async fn lb_client(&self) -> Result<kube::Client> {
        Ok(kube::Client::try_from(self.lb_client_config().await?)?)
    }

    /// Which replica announced this leader-election identity in its latest start.
    pub fn replica_with_identity(&self, identity: &str) -> Option<usize> {
        self.replicas
            .iter()
            .position(|r| r.identity().as_deref() == Some(identity))
    }

    /// The etcd leader's index in [`Rig::etcd`] (`None` while there is none or
    /// a member does not answer).
    pub fn etcd_leader(&self) -> Option<usize> {
        let mut leader = None;
        let mut ids = Vec::new();
        for (i, m) in self.etcd.members.iter().enumerate() {
            if !m.is_running() {
                continue;
            }
            let status = etcd_status(m.client_port)?;
            let follows = status["leader"].as_str()?.to_string();
            if leader.get_or_insert_with(|| follows.clone()) != &follows {
                return None;
            }
            ids.push((i, status["header"]["member_id"].as_str()?.to_string()));
        }
        let leader = leader?;
        ids.into_iter()
            .find(|(_, id)| *id == leader)
            .map(|(i, _)| i)
    }

    /// Run kubectl (`$KUBECTL` or `kubectl`) through the load balancer.
    pub fn kubectl(&self, args: &[&str]) -> std::process::Output {
        let kubectl = std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".into());
        Command::new(&kubectl)
            .args(args)
            .env("KUBECONFIG", &self.lb_kubeconfig)
            .env("HOME", self.dir.path())
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {kubectl}: {e}"))
    }

    /// Wait until `GET /readyz` through the load balancer answers `ok`.
    pub async fn wait_lb_ready(&self, timeout: Duration) -> Result<()> {
        let client = self.lb_client().await?;
        let deadline = Instant::now() + timeout;
        loop {
            let request = http::Request::get("/readyz").body(Vec::new())?;
            match client.request_text(request).await {
                Ok(body) if body.trim() == "ok" => return Ok(()),
                Ok(body) if Instant::now() > deadline => {
                    bail!("/readyz through the load balancer: {body}")
                }
                Err(e) if Instant::now() > deadline => {
                    bail!("/readyz through the load balancer: {e}")
                }
                _ => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        self.lb.kill();
        for r in &mut self.replicas {
            r.kill9();
        }
        if std::thread::panicking() {
            eprintln!("--- haproxy log ---\n{}", self.lb.log());
        }
    }
}

/// A member's `/v3/maintenance/status` through etcd's JSON gateway.
fn etcd_status(client_port: u16) -> Option<serde_json::Value> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", client_port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    let body = "{}";
    let request = format!(
        "POST /v3/maintenance/status HTTP/1.0\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(request.as_bytes()).ok()?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).ok()?;
    serde_json::from_str(answer.split_once("\r\n\r\n")?.1).ok()
}

/// Where HAProxy is: `$HAPROXY_BIN`, else `haproxy` on the PATH, else Debian's
/// `/usr/sbin/haproxy`.
pub fn haproxy_binary() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("HAPROXY_BIN") {
        return Ok(PathBuf::from(p));
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("haproxy"))
        .chain([PathBuf::from("/usr/sbin/haproxy")])
        .find(|p| p.is_file());
    on_path.ok_or_else(|| {
        anyhow!(
            "haproxy not found — install it (Debian: `apt-get install haproxy`; ./dev test does) or set HAPROXY_BIN"
        )
    })
}

/// HAProxy in TCP mode in front of some HTTPS servers, killed on drop.
pub struct HaProxy {
    child: Option<Child>,
    /// The port it listens on, on 127.0.0.1.
    pub port: u16,
    dir: PathBuf,
}

impl HaProxy {
    /// The configuration: TLS passed through, round-robin, each backend's
    /// `/readyz` checked over HTTPS.
    pub fn config(port: u16, socket: &Path, backends: &[(String, String)]) -> String {
        let mut cfg = format!(
            "global
    maxconn 4000
    stats socket {socket} mode 600 level admin
    log stderr format raw local0 info

defaults
    mode tcp
    log global
    timeout connect 2s
    timeout client 1h
    timeout server 1h
    timeout check 2s
    retries 3
    option redispatch

frontend kubext
    bind 127.0.0.1:{port}
    default_backend replicas

backend replicas
    balance roundrobin
    option httpchk GET /readyz
    http-check expect status 200
    default-server inter 500ms fall 2 rise 2
",
            socket = socket.display()
        );
        for (name, addr) in backends {
            cfg.push_str(&format!(
                "    server {name} {addr} check check-ssl verify none\n"
            ));
        }
        cfg
    }

    /// Write the configuration into `dir`, check it (`haproxy -c`), and start
    /// HAProxy in the foreground (`-db`) on a free port.
    pub fn start(dir: &Path, backends: &[(String, String)]) -> Result<HaProxy> {
        let binary = haproxy_binary()?;
        std::fs::create_dir_all(dir)?;
        let port = crate::free_port();
        let cfg_path = dir.join("haproxy.cfg");
        let socket = dir.join("haproxy.sock");
        std::fs::write(&cfg_path, Self::config(port, &socket, backends))?;
        let check = Command::new(&binary)
            .arg("-c")
            .arg("-f")
            .arg(&cfg_path)
            .output()
            .with_context(|| format!("cannot run {}", binary.display()))?;
        if !check.status.success() {
            bail!(
                "haproxy -c rejects {}:\n{}{}",
                cfg_path.display(),
                String::from_utf8_lossy(&check.stdout),
                String::from_utf8_lossy(&check.stderr)
            );
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("haproxy.log"))?;
        let child = Command::new(&binary)
            .arg("-f")
            .arg(&cfg_path)
            .arg("-db")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("cannot run {}", binary.display()))?;
        let mut lb = HaProxy {
            child: Some(child),
            port,
            dir: dir.to_path_buf(),
        };
        // Up when its stats socket answers (it has bound its port by then).
        let deadline = Instant::now() + Duration::from_secs(10);
        while lb.server_states().is_err() {
            if let Some(status) = lb.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                bail!("haproxy exited with {status}:\n{}", lb.log());
            }
            if Instant::now() > deadline {
                bail!("haproxy's stats socket did not answer:\n{}", lb.log());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(lb)
    }

    /// A command on the runtime API (the stats socket), e.g. `show stat`.
    pub fn command(&self, command: &str) -> Result<String> {
        let mut s = UnixStream::connect(self.dir.join("haproxy.sock"))?;
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        s.write_all(format!("{command}\n").as_bytes())?;
        let mut out = String::new();
        s.read_to_string(&mut out)?;
        Ok(out)
    }

    /// `show stat` as rows of (column → value) for the backend's servers.
    fn server_rows(&self) -> Result<Vec<Vec<(String, String)>>> {
        let stat = self.command("show stat")?;
        let mut lines = stat.lines();
        let header: Vec<String> = lines
            .next()
            .and_then(|h| h.strip_prefix("# "))
            .ok_or_else(|| anyhow!("unexpected show stat output: {stat}"))?
            .split(',')
            .map(str::to_string)
            .collect();
        Ok(lines
            .filter(|l| l.starts_with("replicas,") && !l.starts_with("replicas,BACKEND,"))
            .map(|l| {
                header
                    .iter()
                    .cloned()
                    .zip(l.split(',').map(str::to_string))
                    .collect()
            })
            .collect())
    }

    fn column(rows: Vec<Vec<(String, String)>>, column: &str) -> Vec<(String, String)> {
        rows.into_iter()
            .map(|row| {
                let get = |k: &str| {
                    row.iter()
                        .find(|(c, _)| c == k)
                        .map(|(_, v)| v.clone())
                        .unwrap_or_default()
                };
                (get("svname"), get(column))
            })
            .collect()
    }

    /// Each backend server's name and check status (`UP`, `DOWN`, `UP 1/2`, …).
    pub fn server_states(&self) -> Result<Vec<(String, String)>> {
        Ok(Self::column(self.server_rows()?, "status"))
    }

    /// Each backend server's name and its number of open sessions (connections
    /// passed through to it now).
    pub fn server_sessions(&self) -> Result<Vec<(String, u64)>> {
        Ok(Self::column(self.server_rows()?, "scur")
            .into_iter()
            .map(|(n, v)| (n, v.parse().unwrap_or(0)))
            .collect())
    }

    /// Wait until no backend server has a session open, so that sessions
    /// counted next are only those opened after this returns.
    pub fn wait_for_no_sessions(&self, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            let sessions = self.server_sessions()?;
            if sessions.iter().all(|(_, n)| *n == 0) {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("haproxy: sessions still open after {timeout:?}: {sessions:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Wait until `done` holds for the servers' states.
    pub fn wait_for(
        &self,
        timeout: Duration,
        what: &str,
        done: impl Fn(&[(String, String)]) -> bool,
    ) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            let states = self.server_states();
            if let Ok(s) = &states
                && done(s)
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "haproxy: not {what} within {timeout:?}: {states:?}\n{}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// HAProxy's log so far (health check transitions, errors).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("haproxy.log")).unwrap_or_default()
    }

    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for HaProxy {
    fn drop(&mut self) {
        self.kill();
    }
}
