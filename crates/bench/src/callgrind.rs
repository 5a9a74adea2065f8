//! Instructions per request, counted by `valgrind --tool=callgrind` on a
//! kubext running under it: unlike CPU time, the same count whatever else the
//! machine is doing.
//!
//! The server runs the whole fixed workload under callgrind. Before each
//! phase the counters are zeroed (`callgrind_control -z`) and after it they are
//! read (`callgrind_control -e`), so start-up, set-up and warm-up are not counted.
//! Requests are made one at a time by this process (not counted), with keep-alive.

use anyhow::{Context, Result, bail};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, ListParams, PostParams, WatchEvent, WatchParams};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use testkit::{Server, Storage};

use crate::kubext;
use crate::requests::{config_map, create_namespace, current_resource_version};

/// Instructions per ConfigMap create: about 30 µs at 3 instructions per ns.
const CREATE_GOAL: f64 = 90_000.0;
/// Custom resources (schema validation and defaulting): 40 µs at the same rate.
const CUSTOM_CREATE_GOAL: f64 = 120_000.0;
/// Per watch event delivered: 1 µs.
const EVENT_GOAL: f64 = 3_000.0;

const NS: &str = "bench-callgrind";
const WATCH_NS: &str = "bench-callgrind-watch";

/// Instructions (callgrind's `Ir`) per request of each phase.
#[derive(Debug, Clone, Default)]
pub struct Counts {
    pub requests: usize,
    pub watchers: usize,
    pub configmap_create: Option<f64>,
    pub custom_create: Option<f64>,
    pub configmap_get: Option<f64>,
    pub list_100: Option<f64>,
    /// Per event delivered to one watcher, the creates' own count taken out.
    pub watch_event: Option<f64>,
}

/// Whether `valgrind` and `callgrind_control` can be run.
pub fn available() -> bool {
    ["valgrind", "callgrind_control"].iter().all(|tool| {
        Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// Runs the workload; with `keep`, each phase's profile is dumped there
/// (`callgrind.out.<pid>.<n>`, for `callgrind_annotate`).
pub async fn measure(
    binary: &Path,
    requests: usize,
    watchers: usize,
    keep: Option<&Path>,
) -> Result<Counts> {
    let dir = tempfile::Builder::new()
        .prefix("kubext-callgrind")
        .tempdir()?;
    let out_dir = keep.unwrap_or(dir.path());
    std::fs::create_dir_all(out_dir)?;
    let wrapper = wrapper(dir.path(), out_dir, binary)?;
    let dump = keep.is_some();
    let server = tokio::task::spawn_blocking(move || {
        Server::builder()
            .binary(wrapper)
            .storage(Storage::Memory)
            .log_filter("warn")
            .start()
    })
    .await??;
    let pid = server.pid().context("no server pid")?;
    let client = server.client().await?;
    create_namespace(&client, NS).await?;
    create_namespace(&client, WATCH_NS).await?;
    let payload = kubext::payload(1024);
    let configmaps: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        NS,
        &kube::api::ApiResource::erase::<ConfigMap>(&()),
    );
    let items = kubext::install_bench_crd_in(&client, NS).await?;
    let mut out = Counts {
        requests,
        watchers,
        ..Counts::default()
    };

    // Warm up: connections, first-use caches, the allocator.
    for i in 0..20 {
        let name = format!("warm-{i}");
        configmaps
            .create(
                &PostParams::default(),
                &named(kubext::config_map_object(i, &payload), &name),
            )
            .await?;
        items
            .create(
                &PostParams::default(),
                &named(kubext::bench_item(i, &payload), &name),
            )
            .await?;
        configmaps.get(&name).await?;
    }
    spare_connections(&configmaps).await?;

    out.configmap_create = Some(
        per_request(pid, dump, requests, async {
            for i in 0..requests {
                configmaps
                    .create(
                        &PostParams::default(),
                        &kubext::config_map_object(i, &payload),
                    )
                    .await?;
            }
            Ok(())
        })
        .await?,
    );
    out.custom_create = Some(
        per_request(pid, dump, requests, async {
            for i in 0..requests {
                items
                    .create(&PostParams::default(), &kubext::bench_item(i, &payload))
                    .await?;
            }
            Ok(())
        })
        .await?,
    );
    out.configmap_get = Some(
        per_request(pid, dump, requests, async {
            for i in 0..requests {
                configmaps.get(&kubext::object_name(i)).await?;
            }
            Ok(())
        })
        .await?,
    );
    let lists = requests.div_ceil(10);
    out.list_100 = Some(
        per_request(pid, dump, lists, async {
            for _ in 0..lists {
                configmaps.list(&ListParams::default().limit(100)).await?;
            }
            Ok(())
        })
        .await?,
    );
    if watchers > 0 {
        let all = watch_phase(pid, dump, &client, &payload, requests, watchers).await?;
        let creates = out.configmap_create.unwrap_or(0.0) * requests as f64;
        out.watch_event = Some((all as f64 - creates).max(0.0) / (requests * watchers) as f64);
    }
    drop(server);
    Ok(out)
}

/// Opens several connections before counting: the client's pool opens one
/// whenever a request starts before the last one's connection is back in the
/// pool, and a TLS handshake (~1 M instructions) is no part of a request on a
/// kept-alive connection.
async fn spare_connections<K>(api: &Api<K>) -> Result<()>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let one = ListParams::default().limit(1);
    for _ in 0..3 {
        futures::future::try_join_all((0..4).map(|_| api.list(&one))).await?;
    }
    Ok(())
}

fn named(mut object: DynamicObject, name: &str) -> DynamicObject {
    object.metadata.name = Some(name.to_owned());
    object
}

/// Instructions the server spent on `work`, divided by `count`.
async fn per_request(
    pid: u32,
    dump: bool,
    count: usize,
    work: impl std::future::Future<Output = Result<()>>,
) -> Result<f64> {
    control(pid, &["-z"])?;
    work.await?;
    let total = instructions(pid, dump)?;
    Ok(total as f64 / count.max(1) as f64)
}

/// All the server's instructions while `watchers` watches each receive `creates` events.
async fn watch_phase(
    pid: u32,
    dump: bool,
    client: &kube::Client,
    payload: &str,
    creates: usize,
    watchers: usize,
) -> Result<u64> {
    let writer: Api<ConfigMap> = Api::namespaced(client.clone(), WATCH_NS);
    let rv = current_resource_version(&writer).await?;
    let received = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..watchers {
        let api = writer.clone();
        let mut stream = api
            .watch(&WatchParams::default().timeout(600), &rv)
            .await?
            .boxed();
        let received = received.clone();
        tasks.push(tokio::spawn(async move {
            while let Some(Ok(event)) = stream.next().await {
                if matches!(event, WatchEvent::Added(_)) {
                    received.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    // The watches hold their connections: one create first opens the writer's
    // own (a TLS handshake is no part of delivering events), and its events
    // are not counted.
    writer
        .create(&PostParams::default(), &config_map("w-warm-up", payload))
        .await?;
    wait_for(&received, watchers).await?;
    spare_connections(&writer).await?;
    received.store(0, Ordering::Relaxed);
    control(pid, &["-z"])?;
    for i in 0..creates {
        writer
            .create(
                &PostParams::default(),
                &config_map(&format!("w-{i:06}"), payload),
            )
            .await?;
    }
    wait_for(&received, creates * watchers).await?;
    let total = instructions(pid, dump)?;
    for task in tasks {
        task.abort();
    }
    Ok(total)
}

/// Wait (up to 2 minutes) until the watchers have received `want` events.
async fn wait_for(received: &AtomicUsize, want: usize) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(120);
    while received.load(Ordering::Relaxed) < want {
        if Instant::now() > deadline {
            bail!(
                "watchers received {} of {want} events",
                received.load(Ordering::Relaxed)
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// A script that runs kubext under callgrind with the arguments it is given.
fn wrapper(dir: &Path, out_dir: &Path, binary: &Path) -> Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("kubext-under-callgrind");
    let out = out_dir.join("callgrind.out.%p");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\nexec valgrind --tool=callgrind --callgrind-out-file='{}' '{}' \"$@\"\n",
            out.display(),
            binary.display()
        ),
    )?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    Ok(path)
}

fn control(pid: u32, args: &[&str]) -> Result<String> {
    let output = Command::new("callgrind_control")
        .args(args)
        .arg(pid.to_string())
        .output()
        .context("run callgrind_control")?;
    anyhow::ensure!(
        output.status.success(),
        "callgrind_control {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Instructions counted since the last zeroing, all threads together; with
/// `dump`, the profile of that span is also written out.
fn instructions(pid: u32, dump: bool) -> Result<u64> {
    let text = control(pid, &["-e", "Ir"])?;
    if dump {
        control(pid, &["-d"])?;
    }
    parse_totals(&text).with_context(|| format!("no instruction totals in: {text}"))
}

/// Sums the `Th N  1,234,567` lines under `Totals:`.
fn parse_totals(text: &str) -> Option<u64> {
    let mut lines = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("Totals:"));
    lines.next()?;
    let mut sum = 0;
    for line in lines {
        let mut fields = line.split_whitespace();
        if fields.next() != Some("Th") {
            continue;
        }
        let count = fields.nth(1)?.replace(',', "");
        sum += count.parse::<u64>().ok()?;
    }
    Some(sum)
}

fn thousands(x: f64) -> String {
    if x >= 10_000.0 {
        format!("{:.0} k", x / 1000.0)
    } else {
        format!("{:.1} k", x / 1000.0)
    }
}

/// The counts as text lines, each with its goal.
pub fn table(c: &Counts) -> String {
    use std::fmt::Write;
    let mut out = format!(
        "instructions per request (callgrind Ir; memory store; {} serial requests, {} watchers)\n",
        c.requests, c.watchers
    );
    let rows = [
        ("ConfigMap create", c.configmap_create, Some(CREATE_GOAL)),
        (
            "custom resource create",
            c.custom_create,
            Some(CUSTOM_CREATE_GOAL),
        ),
        ("ConfigMap GET", c.configmap_get, None),
        ("ConfigMap LIST limit=100", c.list_100, None),
        (
            "watch event delivered, less the create",
            c.watch_event,
            Some(EVENT_GOAL),
        ),
    ];
    for (what, value, goal) in rows {
        let goal = goal.map_or_else(String::new, |g| format!("<= {}", thousands(g)));
        let value = value.map_or_else(|| "-".into(), thousands);
        let _ = writeln!(out, "  {what:<42} {value:>10}  {goal}");
    }
    out
}

pub fn json(c: &Counts) -> serde_json::Value {
    serde_json::json!({
        "requests": c.requests,
        "watchers": c.watchers,
        "configmap_create": c.configmap_create,
        "custom_resource_create": c.custom_create,
        "configmap_get": c.configmap_get,
        "configmap_list_limit_100": c.list_100,
        "watch_event": c.watch_event,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn sums_every_thread() {
        let text = "PID 1: kubext\nsending command status internal to pid 1\n\n  Totals:     Ir \n   Th 1  300,025 \n   Th 2  1,000 \n";
        assert_eq!(super::parse_totals(text), Some(301_025));
    }
}
