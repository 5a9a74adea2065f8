//! A server under measurement, whichever it is: how to reach it (URL and
//! credentials) and its processes (CPU time and memory from `/proc`). Phases
//! take a [`Handle`], so the same code measures every server; `launcher`
//! starts them.

use anyhow::Result;
use std::net::SocketAddr;
use std::path::PathBuf;
use testkit::Server;

use crate::{cpu, procfs};

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
