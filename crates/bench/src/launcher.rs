//! Fresh servers of one kind, each behind a [`Handle`]: a kubext on one of
//! its stores, or upstream's kube-apiserver with kube-controller-manager.

use anyhow::Result;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use testkit::{Server, Storage};

use crate::handle::Handle;
use crate::upstream;

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
