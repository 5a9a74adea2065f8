//! A server under measurement, whichever it is: how to reach it (URL and
//! credentials), its processes (CPU time and memory from `/proc`), and how to
//! start a fresh one of a kind — a kubext on one of its stores, or upstream's
//! kube-apiserver with kube-controller-manager. Phases take a [`Handle`], so the
//! same code measures every server.

use anyhow::Result;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use testkit::{Server, Storage};

use crate::{cpu, procfs, upstream};

/// How to reach a running server and which processes are it.
pub struct Handle {
    /// URL and credentials (no retries: phases see what the server said).
    pub config: kube::Config,
    pub addr: SocketAddr,
    /// The bearer token raw requests must send, when the credentials are a token
    /// (else the config's client certificate proves who we are).
    pub bearer: Option<String>,
    /// The server's processes: kubext; or kube-apiserver and kube-controller-manager,
    /// whose CPU time and memory count together.
    pub pids: Vec<u32>,
    /// The etcd it stores in, for etcd's CPU time.
    pub etcd_pid: Option<u32>,
    /// The CA of the client certificate the server presents to extension servers.
    pub front_proxy_ca: PathBuf,
}

impl Handle {
    pub fn client(&self) -> Result<kube::Client> {
        Ok(kube::Client::try_from(self.config.clone())?)
    }

    /// Resident memory of all the server's processes.
    pub fn rss(&self) -> Option<u64> {
        self.pids.iter().map(|&p| procfs::rss(p)).sum()
    }

    /// Start a new peak from the current RSS; returns that RSS when every
    /// process accepted it.
    pub fn reset_peak(&self) -> Option<u64> {
        self.pids
            .iter()
            .all(|&p| procfs::reset_peak(p))
            .then(|| self.rss())
            .flatten()
    }

    /// The processes' peaks since [`Handle::reset_peak`], added (an upper bound
    /// of the peak of their sum).
    pub fn peak_rss(&self) -> Option<u64> {
        self.pids.iter().map(|&p| procfs::peak_rss(p)).sum()
    }

    /// CPU accounting of the server and its etcd from now.
    pub fn meter(&self) -> cpu::Meter {
        cpu::Meter::start(&self.pids, self.etcd_pid)
    }

    /// A kubext started by testkit: its admin kubeconfig, its generated front-proxy CA.
    pub async fn of_kubext(server: &Server, etcd_pid: Option<u32>) -> Result<Handle> {
        Ok(Handle {
            config: server.client_config().await?,
            addr: server.addr,
            bearer: None,
            pids: server.pid().into_iter().collect(),
            etcd_pid,
            front_proxy_ca: server.data_dir.join("pki/front-proxy-ca.crt"),
        })
    }
}

/// Starts fresh servers of one kind.
pub enum Launcher {
    Kubext {
        binary: PathBuf,
        storage: Storage,
        etcd_pid: Option<u32>,
    },
    Upstream(upstream::Launcher),
}

/// A started server: its handle and the processes, stopped when dropped.
pub struct Started {
    pub handle: Handle,
    processes: Processes,
}

enum Processes {
    Kubext(Server),
    Upstream(upstream::ControlPlane),
}

impl Launcher {
    /// A fresh server (on etcd, under a prefix of its own named by `tag`) and the
    /// time from spawning it to its being ready.
    pub async fn start(&self, tag: &str) -> Result<(Started, Duration)> {
        match self {
            Launcher::Kubext {
                binary,
                storage,
                etcd_pid,
            } => {
                let (server, took) = start_kubext(binary.clone(), storage.clone(), tag).await?;
                let handle = Handle::of_kubext(&server, *etcd_pid).await?;
                let processes = Processes::Kubext(server);
                Ok((Started { handle, processes }, took))
            }
            Launcher::Upstream(launcher) => {
                let (control_plane, handle, took) = launcher.start(tag).await?;
                let processes = Processes::Upstream(control_plane);
                Ok((Started { handle, processes }, took))
            }
        }
    }
}

impl Started {
    /// Wait until the server's controllers have started (upstream: the
    /// controller manager has synced and made the default ServiceAccount).
    pub async fn settle(&self) -> Result<()> {
        match &self.processes {
            Processes::Kubext(_) => Ok(()),
            Processes::Upstream(_) => upstream::settle(&self.handle).await,
        }
    }

    /// The last lines of the server's log, for failure reports.
    pub fn log_tail(&self, lines: usize) -> String {
        let log = match &self.processes {
            Processes::Kubext(server) => server.log(),
            Processes::Upstream(control_plane) => control_plane.log(),
        };
        let tail: Vec<&str> = log.lines().rev().take(lines).collect();
        tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
    }
}

/// Start a fresh kubext; returns it and the spawn → ready-line time.
async fn start_kubext(binary: PathBuf, storage: Storage, tag: &str) -> Result<(Server, Duration)> {
    // A private etcd prefix, so every server starts empty.
    let prefix = matches!(storage, Storage::Etcd(_)).then(|| format!("/kubext-bench-{tag}"));
    tokio::task::spawn_blocking(move || {
        let mut builder = Server::builder().binary(binary).storage(storage);
        if let Some(prefix) = prefix {
            builder = builder.arg(format!("--etcd-prefix={prefix}"));
        }
        let started = Instant::now();
        let server = builder.start()?;
        Ok((server, started.elapsed()))
    })
    .await?
}
