//! Watches that never read: what they cost the server while writes go on.
//!
//! Each watch is a raw HTTPS request on a socket with a small receive buffer
//! (the kernel would otherwise absorb megabytes per connection on loopback);
//! after the response headers nothing more is read. The server must keep the
//! cost of such a watcher a small constant: its queues are bounded in bytes, and
//! the cache ends a watcher that falls too far behind.

use anyhow::{Result, bail};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube::client::ConfigExt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use crate::handle::Handle;
use crate::plan::Plan;
use crate::requests;
use crate::stats;

const NS: &str = "bench-slow";
const PER_REQUEST: Duration = Duration::from_secs(15);
/// The client side's socket receive buffer (the kernel doubles it).
const CLIENT_RECEIVE_BUFFER: u32 = 4096;

#[derive(Debug, Clone, Default)]
pub struct SlowWatchers {
    pub opened: usize,
    /// Events written while they were open.
    pub events: usize,
    /// RSS growth from as many creates made with no slow watcher open: what
    /// the objects themselves cost.
    pub baseline_growth: Option<u64>,
    pub rss_before: Option<u64>,
    pub rss_open: Option<u64>,
    pub rss_after_writes: Option<u64>,
    /// Live heap: growth from the baseline writes, before the watches open,
    /// after the writes.
    pub heap_baseline_growth: Option<u64>,
    pub heap_before: Option<u64>,
    pub heap_after_writes: Option<u64>,
    /// Watches the server still had registered after the writes (the rest it
    /// ended for falling behind).
    pub registered_after: Option<u64>,
}

impl SlowWatchers {
    /// RSS added per watcher once the writes are done, in bytes, less what the
    /// same writes cost without slow watchers.
    pub fn bytes_per_watcher(&self) -> Option<f64> {
        self.per_watcher(
            self.rss_before?,
            self.rss_after_writes?,
            self.baseline_growth?,
        )
    }

    /// The same in live heap bytes.
    pub fn heap_per_watcher(&self) -> Option<f64> {
        self.per_watcher(
            self.heap_before?,
            self.heap_after_writes?,
            self.heap_baseline_growth?,
        )
    }

    fn per_watcher(&self, before: u64, after: u64, baseline: u64) -> Option<f64> {
        let watchers = after.saturating_sub(before) as f64 - baseline as f64;
        (self.opened > 0).then(|| watchers.max(0.0) / self.opened as f64)
    }
}

pub async fn measure(plan: &Plan, server: &Handle, payload: &Arc<String>) -> Result<SlowWatchers> {
    let client = server.client()?;
    requests::create_namespace(&client, NS).await?;
    let writer: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let tls = TlsConnector::from(Arc::new(server.config.rustls_client_config()?));
    let mut out = SlowWatchers::default();
    requests::settle().await;
    let baseline_before = server.rss();
    let heap_baseline_before = requests::heap(&writer).await;
    create_config_maps(plan, &writer, payload, "b").await;
    requests::settle().await;
    out.rss_before = server.rss();
    out.heap_before = requests::heap(&writer).await;
    out.heap_baseline_growth = out
        .heap_before
        .zip(heap_baseline_before)
        .map(|(after, before)| after.saturating_sub(before));
    out.baseline_growth = out
        .rss_before
        .zip(baseline_before)
        .map(|(after, before)| after.saturating_sub(before));
    // Watch from now: the baseline's events are not theirs to deliver.
    let rv = requests::current_resource_version(&writer).await?;

    let path = format!(
        "/api/v1/namespaces/{NS}/configmaps?watch=true&resourceVersion={rv}&timeoutSeconds=600"
    );
    let mut held = Vec::with_capacity(plan.slow_watchers);
    for _ in 0..plan.slow_watchers {
        let opened = open(&tls, server.addr, &path, server.bearer.as_deref());
        match tokio::time::timeout(PER_REQUEST, opened).await {
            Ok(Ok(stream)) => held.push(stream),
            Ok(Err(e)) => bail!("open a slow watch: {e:#}"),
            Err(_) => bail!("open a slow watch: timed out"),
        }
    }
    out.opened = held.len();
    requests::settle().await;
    out.rss_open = server.rss();

    out.events = create_config_maps(plan, &writer, payload, "s").await;
    // Give the fan-out time to fill every queue it is going to fill.
    tokio::time::sleep(Duration::from_secs(2)).await;
    out.rss_after_writes = server.rss();
    out.heap_after_writes = requests::heap(&writer).await;
    out.registered_after = requests::metric(&client, "apiserver_registered_watchers")
        .await
        .map(|v| v as u64);
    drop(held);
    Ok(out)
}

/// `plan.slow_events` ConfigMaps named `{prefix}-N`, as fast as the
/// concurrency allows; returns how many were made.
async fn create_config_maps(
    plan: &Plan,
    writer: &Api<ConfigMap>,
    payload: &Arc<String>,
    prefix: &'static str,
) -> usize {
    let writer = writer.clone();
    let payload = payload.clone();
    let made = stats::run(
        plan.slow_events,
        plan.concurrency,
        plan.write_budget * 2,
        PER_REQUEST,
        move |i| {
            let writer = writer.clone();
            let cm = requests::config_map(&format!("{prefix}-{i:06}"), &payload);
            async move {
                writer.create(&PostParams::default(), &cm).await?;
                Ok(())
            }
        },
    )
    .await;
    made.samples.len()
}

/// A watch request whose response headers have arrived, and nothing read since.
async fn open(
    tls: &TlsConnector,
    addr: SocketAddr,
    path: &str,
    bearer: Option<&str>,
) -> Result<TlsStream<tokio::net::TcpStream>> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.set_recv_buffer_size(CLIENT_RECEIVE_BUFFER)?;
    let tcp = socket.connect(addr).await?;
    let name = rustls::pki_types::ServerName::from(addr.ip());
    let mut stream = tls.connect(name, tcp).await?;
    let authorization = bearer
        .map(|token| format!("Authorization: Bearer {token}\r\n"))
        .unwrap_or_default();
    stream
        .write_all(
            format!(
                "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json\r\n{authorization}\r\n"
            )
            .as_bytes(),
        )
        .await?;
    // Read the status line and headers, a byte at a time so nothing after them is.
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        anyhow::ensure!(head.len() < 16 * 1024, "response headers too long");
        head.push(stream.read_u8().await?);
    }
    let status = String::from_utf8_lossy(&head);
    anyhow::ensure!(
        status.starts_with("HTTP/1.1 200"),
        "watch answered {}",
        status.lines().next().unwrap_or_default()
    );
    Ok(stream)
}
