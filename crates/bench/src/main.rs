//! `kubext-bench`: how fast is a real kubext on each storage backend, and how close
//! does it get to the raw storage underneath?
//!
//! For each backend it starts fresh `kubext` processes (via `testkit`) and measures
//! start-to-ready time, RSS, creates/s and latency with C concurrent kube-rs
//! requests and GET/LIST latency for ConfigMaps and for custom resources (a CRD with
//! a validating, defaulting schema), watch delivery latency with W open watches,
//! and then the raw storage ceiling (the same creates straight into a
//! `MemoryBackend`, a `SqliteBackend` or the same etcd) in the same run. Then the
//! CRD phase and the aggregation phase (proxy overhead against a second kubext as
//! the extension server; discovery while another extension server hangs).
//!
//! `--versus upstream` runs the same phases against upstream's kube-apiserver
//! and kube-controller-manager on an etcd, kubext on the same etcd binary and
//! kubext on its embedded store instead, and prints kubext's ratio to upstream
//! for each figure (`versus`).
//!
//! ```text
//! cargo build --release -p kubext -p kubext-bench
//! target/release/kubext-bench [--backends memory,embedded,etcd] [--objects N]
//!     [--concurrency C] [--watchers W] [--quick] [--json] [--versus upstream]
//! ```
//!
//! Everything runs on 127.0.0.1; every loop is bounded in count and time.

mod aggregation;
mod authorization;
mod callgrind;
mod cel;
mod cpu;
mod crds;
mod handle;
mod kubext;
mod launcher;
mod plan;
mod procfs;
mod raw;
mod report;
mod requests;
mod slow_watchers;
mod stats;
mod upstream;
mod versus;
mod webhooks;

use anyhow::{Context, Result};
use clap::{Parser, ValueEnum};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use testkit::{Etcd, Storage};

use crate::launcher::Launcher;
use crate::plan::Plan;

#[derive(Parser, Debug)]
#[command(
    name = "kubext-bench",
    about = "Benchmark a real kubext per storage backend against the raw storage ceiling"
)]
struct Args {
    /// Backends to measure, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "memory,embedded,etcd")]
    backends: Vec<BackendKind>,
    /// ConfigMaps (≈1 KiB each) to create [default: 10000, --quick: 1000].
    #[arg(long)]
    objects: Option<usize>,
    /// Concurrent create requests.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Watches open during the watch phase [default: 1000, --quick: 100].
    #[arg(long)]
    watchers: Option<usize>,
    /// Creates made flat out while the watchers are open [default: 500, --quick: 200].
    #[arg(long)]
    watch_objects: Option<usize>,
    /// Watches that never read, open while creates go on [default: 1000, --quick: 100].
    #[arg(long)]
    slow_watchers: Option<usize>,
    /// Creates made while the slow watches are open [default: 3000, --quick: 1500].
    #[arg(long)]
    slow_events: Option<usize>,
    /// Fresh starts for the start-to-ready median.
    #[arg(long, default_value_t = 5)]
    starts: usize,
    /// Small sizes and short budgets (a smoke run of well under a minute).
    #[arg(long)]
    quick: bool,
    /// Print the results as JSON on stdout (the table then goes to stderr).
    #[arg(long)]
    json: bool,
    /// CRDs to create in the CRD phase (0 skips it) [default: 2000, --quick: 100].
    #[arg(long)]
    crds: Option<usize>,
    /// Skip the authorization phase (RBAC against AlwaysAllow)
    #[arg(long)]
    skip_authorization: bool,
    /// Skip the CEL phase (creates with ten validation rules against none).
    #[arg(long)]
    skip_cel: bool,
    /// Skip the aggregation phase (proxy overhead, discovery with a hanging backend).
    #[arg(long)]
    skip_aggregation: bool,
    /// Skip the instruction counts (a kubext under `valgrind --tool=callgrind`).
    #[arg(long)]
    skip_callgrind: bool,
    /// Requests per phase of the instruction counts [default: 200, --quick: 50].
    #[arg(long)]
    callgrind_requests: Option<usize>,
    /// Keep each instruction-count phase's profile in this directory (for
    /// `callgrind_annotate`).
    #[arg(long)]
    callgrind_out: Option<PathBuf>,
    /// Skip the webhook phase (creates through a validating webhook, reads
    /// through a conversion webhook).
    #[arg(long)]
    skip_webhooks: bool,
    /// Measure side by side with upstream: kube-apiserver + kube-controller-manager
    /// on an etcd, kubext on the same etcd binary, kubext on its embedded store
    /// (instead of --backends and the other phases; --skip-aggregation applies).
    #[arg(long, value_enum)]
    versus: Option<Versus>,
    /// kube-apiserver for --versus [default: `scripts/upstream kube-apiserver`].
    #[arg(long)]
    upstream_apiserver: Option<PathBuf>,
    /// kube-controller-manager for --versus [default: `scripts/upstream
    /// kube-controller-manager`].
    #[arg(long)]
    upstream_controller_manager: Option<PathBuf>,
    /// The etcd every server of --versus stores in [default: `scripts/upstream etcd`].
    #[arg(long)]
    upstream_etcd: Option<PathBuf>,
    /// CRDs to create on upstream with --versus (--crds counts kubext's)
    /// [default: 100, --quick: 20].
    #[arg(long)]
    upstream_crds: Option<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Versus {
    /// kube-apiserver and kube-controller-manager (`scripts/upstream`'s release).
    Upstream,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BackendKind {
    Memory,
    Embedded,
    Etcd,
}

impl BackendKind {
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Memory => "memory",
            BackendKind::Embedded => "embedded",
            BackendKind::Etcd => "etcd",
        }
    }
}

/// One backend's results.
pub struct BackendReport {
    pub kind: BackendKind,
    pub kubext: Option<kubext::KubextResult>,
    pub raw: Option<raw::RawResult>,
    pub problems: Vec<String>,
    pub elapsed: Duration,
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<()> {
    let binary = match testkit::kubext_binary() {
        Ok(b) if b.is_file() => b,
        _ => anyhow::bail!(
            "no kubext binary next to {} (or in $KUBEXT_BIN).\n\
             Build both first:  cargo build --release -p kubext -p kubext-bench\n\
             then run:          target/release/kubext-bench",
            std::env::current_exe()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        ),
    };
    if cfg!(debug_assertions) {
        eprintln!(
            "warning: kubext-bench is a debug build; numbers are only meaningful with --release"
        );
    }
    let plan = plan(&args);
    let machine = report::Machine::detect();
    eprintln!("{}", machine.line());
    eprintln!("kubext binary: {}", binary.display());
    let run_id = format!("{}-{}", std::process::id(), jitter());
    if args.versus.is_some() {
        let versus = versus_plan(&args, binary)?;
        return versus::run(&versus, &plan, &machine, &run_id, args.json).await;
    }

    let etcd = if args.backends.contains(&BackendKind::Etcd) {
        match start_etcd().await {
            Ok(e) => Some(e),
            Err(e) => {
                eprintln!("etcd: skipped ({e:#})");
                None
            }
        }
    } else {
        None
    };

    let etcd_pid = etcd.as_ref().and_then(Etcd::pid);

    let value = raw::stored_value(&kubext::payload(1024))?;
    let started = Instant::now();
    let mut reports = Vec::new();
    for &kind in &args.backends {
        let t = Instant::now();
        eprintln!("== {} ==", kind.name());
        let (storage, target) = match kind {
            BackendKind::Memory => (Storage::Memory, raw::Target::Memory),
            BackendKind::Embedded => (Storage::Embedded, raw::Target::Sqlite),
            BackendKind::Etcd => match &etcd {
                Some(e) => (Storage::Etcd(e.endpoint()), raw::Target::Etcd(e.endpoint())),
                None => {
                    reports.push(BackendReport {
                        kind,
                        kubext: None,
                        raw: None,
                        problems: vec!["etcd not available".into()],
                        elapsed: Duration::ZERO,
                    });
                    continue;
                }
            },
        };
        // CPU accounting of etcd only where etcd does the work.
        let etcd_pid = etcd_pid.filter(|_| kind == BackendKind::Etcd);
        let launcher = Launcher::Kubext {
            binary: binary.clone(),
            storage,
            etcd_pid,
        };
        let measured = kubext::measure(&plan, &launcher, &run_id).await;
        eprintln!(
            "  raw storage ceiling: {} creates, concurrency {}",
            plan.objects, plan.concurrency
        );
        let mut problems = measured.problems.clone();
        let raw = match raw::measure(
            target,
            plan.objects,
            plan.concurrency,
            plan.write_budget,
            value.clone(),
            etcd_pid,
        )
        .await
        {
            Ok(r) => Some(r),
            Err(e) => {
                problems.push(format!("raw: {e:#}"));
                None
            }
        };
        reports.push(BackendReport {
            kind,
            kubext: Some(measured),
            raw,
            problems,
            elapsed: t.elapsed(),
        });
    }
    drop(etcd);

    let instructions = instruction_counts(&args, &binary).await;
    let table = report::table(&plan, &machine, &reports, started.elapsed());
    let counted = instructions.as_ref().map(callgrind::table);
    if args.json {
        eprintln!("{table}");
        if let Some(c) = &counted {
            eprintln!("{c}");
        }
        let mut doc = report::json(&plan, &machine, &reports);
        doc["instructions"] = instructions
            .as_ref()
            .map_or(serde_json::Value::Null, callgrind::json);
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!("{table}");
        if let Some(c) = &counted {
            println!("{c}");
        }
    }
    let crd_count = args.crds.unwrap_or(if args.quick { 100 } else { 2000 });
    if crd_count > 0 {
        eprintln!("== CRDs: creating {crd_count} ==");
        match crds::measure(crd_count).await {
            Ok(r) => crds::print(&r),
            Err(e) => eprintln!("CRD phase failed: {e:#}"),
        }
    }
    if !args.skip_authorization {
        let gets = if args.quick { 2000 } else { 10000 };
        eprintln!("== Authorization: 1000 roles and bindings, {gets} GETs per mode ==");
        match authorization::measure(1000, gets).await {
            Ok(r) => authorization::print(&r),
            Err(e) => eprintln!("authorization phase failed: {e:#}"),
        }
    }
    if !args.skip_cel {
        let creates = if args.quick { 1000 } else { 5000 };
        eprintln!("== CEL: {creates} creates with ten rules and without ==");
        match cel::measure(creates).await {
            Ok(r) => cel::print(&r),
            Err(e) => eprintln!("CEL phase failed: {e:#}"),
        }
    }
    if !args.skip_webhooks {
        let requests = if args.quick { 500 } else { 2000 };
        eprintln!("== Webhooks: {requests} requests per mode ==");
        match webhooks::measure_all(requests).await {
            Ok(r) => webhooks::print(&r),
            Err(e) => eprintln!("webhook phase failed: {e:#}"),
        }
    }
    if !args.skip_aggregation {
        let gets = if args.quick { 300 } else { 2000 };
        eprintln!("== Aggregation: {gets} GETs each way ==");
        match aggregation::measure(gets).await {
            Ok(r) => aggregation::print(&r),
            Err(e) => eprintln!("aggregation phase failed: {e:#}"),
        }
    }
    Ok(())
}

/// The callgrind phase, unless skipped or valgrind is missing.
async fn instruction_counts(args: &Args, binary: &std::path::Path) -> Option<callgrind::Counts> {
    if args.skip_callgrind {
        return None;
    }
    if !callgrind::available() {
        eprintln!("instructions: skipped (valgrind or callgrind_control not found)");
        return None;
    }
    let requests = args
        .callgrind_requests
        .unwrap_or(if args.quick { 50 } else { 200 });
    eprintln!("== Instructions: {requests} requests per phase under callgrind ==");
    match callgrind::measure(binary, requests, 10, args.callgrind_out.as_deref()).await {
        Ok(c) => Some(c),
        Err(e) => {
            eprintln!("callgrind phase failed: {e:#}");
            None
        }
    }
}

/// The side-by-side run's servers and sizes.
fn versus_plan(args: &Args, kubext: PathBuf) -> Result<versus::Versus> {
    let binaries = upstream::Binaries::locate(
        args.upstream_apiserver.clone(),
        args.upstream_controller_manager.clone(),
        args.upstream_etcd.clone(),
    )?;
    Ok(versus::Versus {
        binaries,
        kubext,
        crds: args.crds.unwrap_or(if args.quick { 100 } else { 1000 }),
        upstream_crds: args
            .upstream_crds
            .unwrap_or(if args.quick { 20 } else { 100 }),
        proxy_gets: if args.skip_aggregation {
            0
        } else if args.quick {
            300
        } else {
            2000
        },
    })
}

fn plan(args: &Args) -> Plan {
    let quick = args.quick;
    let slower = if args.versus.is_some() { 6 } else { 1 };
    let pick = |given: Option<usize>, full: usize, small: usize| {
        given.unwrap_or(if quick { small } else { full })
    };
    Plan {
        starts: args.starts.max(1),
        objects: pick(args.objects, 10_000, 1000).max(1),
        concurrency: args.concurrency.max(1),
        gets: if quick { 200 } else { 1000 },
        lists_small: if quick { 30 } else { 200 },
        lists_all: if quick { 5 } else { 20 },
        watchers: pick(args.watchers, 1000, 100),
        watch_objects: pick(args.watch_objects, 500, 200),
        paced_objects: if quick { 10 } else { 20 },
        paced_interval: Duration::from_millis(if quick { 50 } else { 100 }),
        slow_watchers: pick(args.slow_watchers, 1000, 100),
        slow_events: pick(args.slow_events, 3000, 1500),
        // kube-apiserver creates and lists several times slower: every object
        // is still made and every sample taken.
        write_budget: Duration::from_secs(if quick { 8 } else { 30 }) * slower,
        read_budget: Duration::from_secs(if quick { 2 } else { 5 }) * slower,
    }
}

async fn start_etcd() -> Result<Etcd> {
    let path = std::env::var_os("ETCD_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/etcd"));
    anyhow::ensure!(
        path.is_file(),
        "no etcd binary at {} (install etcd-server or set ETCD_BIN)",
        path.display()
    );
    tokio::task::spawn_blocking(Etcd::start)
        .await?
        .context("start etcd")
}

/// A few bits that differ between runs, for unique etcd prefixes.
fn jitter() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() % 1_000_000)
        .unwrap_or(0)
}
