//! Watches that never read: what they cost the server while writes go on.
//!
//! Each watch is opened through kube-rs and its stream is never polled, so the
//! client stops reading its connection once its buffers are full. The server must
//! keep the cost of such a watcher a small constant (its queues are bounded in
//! bytes, and the cache ends a watcher that falls too far behind).

use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams, WatchParams};
use std::sync::Arc;
use std::time::Duration;
use testkit::Server;
use tokio::sync::watch;

use crate::kubext::{self, Plan};
use crate::stats;

const NS: &str = "bench-slow";
const PER_REQUEST: Duration = Duration::from_secs(15);

#[derive(Debug, Clone, Default)]
pub struct SlowWatchers {
    pub opened: usize,
    /// Events written while they were open.
    pub events: usize,
    pub rss_before: Option<u64>,
    pub rss_open: Option<u64>,
    pub rss_after_writes: Option<u64>,
    /// Watches the server still had registered after the writes (the rest it
    /// ended for falling behind).
    pub registered_after: Option<u64>,
}

impl SlowWatchers {
    /// RSS added per watcher once the writes are done, in bytes, less what the
    /// objects written cost (`bytes_per_object`, measured by the create phase).
    pub fn bytes_per_watcher(&self, bytes_per_object: f64) -> Option<f64> {
        let grew = self.rss_after_writes?.saturating_sub(self.rss_before?) as f64;
        let watchers = grew - bytes_per_object * self.events as f64;
        (self.opened > 0).then(|| watchers.max(0.0) / self.opened as f64)
    }
}

pub async fn measure(plan: &Plan, server: &Server, payload: &Arc<String>) -> Result<SlowWatchers> {
    let client = server.client().await?;
    kubext::create_namespace(&client, NS).await?;
    let writer: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let rv = writer
        .list(&ListParams::default().limit(1))
        .await?
        .metadata
        .resource_version
        .context("list without resourceVersion")?;
    let mut out = SlowWatchers::default();
    kubext::settle().await;
    out.rss_before = kubext::rss(server, &client).await;

    // Their own runtime and clients: kube-rs speaks HTTP/1.1, one connection per watch.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("bench-slow-watchers")
        .enable_all()
        .build()
        .context("slow watcher runtime")?;
    let (release, released) = watch::channel(false);
    let outcome = async {
        let clients = plan.slow_watchers.div_ceil(250).max(1);
        let mut watch_clients = Vec::with_capacity(clients);
        for _ in 0..clients {
            let kubeconfig = server.kubeconfig.clone();
            watch_clients.push(runtime.spawn(kubext::client_for(kubeconfig)).await??);
        }
        let mut opened = Vec::with_capacity(plan.slow_watchers);
        for w in 0..plan.slow_watchers {
            let api: Api<ConfigMap> = Api::namespaced(watch_clients[w % clients].clone(), NS);
            let rv = rv.clone();
            let mut released = released.clone();
            opened.push(runtime.spawn(async move {
                let params = WatchParams::default().timeout(600);
                let stream = tokio::time::timeout(PER_REQUEST * 2, api.watch(&params, &rv)).await;
                let ok = matches!(stream, Ok(Ok(_)));
                let (tx, rx) = tokio::sync::oneshot::channel();
                let _ = tx.send(ok);
                // Hold the stream, unread, until released.
                tokio::spawn(async move {
                    let _stream = stream;
                    let _ = released.wait_for(|r| *r).await;
                });
                rx.await.unwrap_or(false)
            }));
        }
        for task in opened {
            if task.await.unwrap_or(false) {
                out.opened += 1;
            }
        }
        kubext::settle().await;
        out.rss_open = kubext::rss(server, &client).await;

        let writes = {
            let writer = writer.clone();
            let payload = payload.clone();
            stats::run(
                plan.slow_events,
                plan.concurrency,
                plan.write_budget * 2,
                PER_REQUEST,
                move |i| {
                    let writer = writer.clone();
                    let cm = kubext::config_map(&format!("s-{i:06}"), &payload);
                    async move {
                        writer.create(&PostParams::default(), &cm).await?;
                        Ok(())
                    }
                },
            )
            .await
        };
        out.events = writes.samples.len();
        // Give the fan-out time to fill every queue it is going to fill.
        tokio::time::sleep(Duration::from_secs(2)).await;
        out.rss_after_writes = kubext::rss(server, &client).await;
        out.registered_after = kubext::metric(&client, "apiserver_registered_watchers")
            .await
            .map(|v| v as u64);
        anyhow::Ok(())
    }
    .await;
    let _ = release.send(true);
    runtime.shutdown_background();
    outcome?;
    Ok(out)
}
