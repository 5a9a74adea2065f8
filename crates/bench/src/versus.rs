//! `--versus upstream`: the same phases, in one run, against upstream's
//! kube-apiserver with kube-controller-manager on an etcd, against kubext on the
//! same etcd binary (an etcd of its own, fresh), and against kubext on its
//! embedded store; each figure for each server, and kubext's ratio to upstream
//! next to the goal.

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use testkit::{Etcd, Storage};

use crate::aggregation::{self, ProxyResult};
use crate::crds::{self, CrdResult};
use crate::kubext::{self, KubextResult};
use crate::launcher::{Launcher, Started};
use crate::plan::Plan;
use crate::report::{self, Machine, PICKS, Pick};
use crate::upstream::{self, Binaries};
use crate::{cpu, stats::Latencies};

/// What the side-by-side run needs beyond the plan.
pub struct Versus {
    pub binaries: Binaries,
    pub kubext: PathBuf,
    /// CRDs created on each kubext.
    pub crds: usize,
    /// CRDs created on upstream (each costs it MiBs and an OpenAPI rebuild).
    pub upstream_crds: usize,
    /// GETs each way through the aggregation proxy.
    pub proxy_gets: usize,
}

/// The servers, in the table's order.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Contender {
    Upstream,
    KubextEtcd,
    KubextEmbedded,
}

impl Contender {
    const ALL: [Contender; 3] = [
        Contender::Upstream,
        Contender::KubextEtcd,
        Contender::KubextEmbedded,
    ];

    fn name(self) -> &'static str {
        match self {
            Contender::Upstream => "upstream",
            Contender::KubextEtcd => "kubext etcd",
            Contender::KubextEmbedded => "kubext embedded",
        }
    }
}

/// Everything measured on one server.
#[derive(Default)]
struct Column {
    measured: KubextResult,
    crds: Option<CrdResult>,
    proxy: Option<ProxyResult>,
    problems: Vec<String>,
    elapsed: Duration,
}

pub async fn run(
    v: &Versus,
    plan: &Plan,
    machine: &Machine,
    run_id: &str,
    json: bool,
) -> Result<()> {
    let started = Instant::now();
    let mut columns = Vec::new();
    for contender in Contender::ALL {
        eprintln!("== {} ==", contender.name());
        columns.push(measure(v, plan, contender, run_id).await);
    }
    let figures = figures(plan, &columns);
    let table = table(v, plan, machine, &figures, &columns, started.elapsed());
    if json {
        eprintln!("{table}");
        println!(
            "{}",
            serde_json::to_string_pretty(&to_json(&figures, &columns))?
        );
    } else {
        println!("{table}");
    }
    Ok(())
}

/// Every phase on `contender`: the main phases on one server, the CRDs and the
/// aggregation proxy each on a fresh one.
async fn measure(v: &Versus, plan: &Plan, contender: Contender, run_id: &str) -> Column {
    let t = Instant::now();
    let etcd = match contender {
        Contender::KubextEmbedded => None,
        _ => match start_etcd(&v.binaries.etcd).await {
            Ok(etcd) => Some(etcd),
            Err(e) => return Column::failed(format!("etcd: {e:#}")),
        },
    };
    let launcher = match launcher(v, contender, etcd.as_ref()) {
        Ok(l) => l,
        Err(e) => return Column::failed(format!("{e:#}")),
    };
    let mut column = Column {
        measured: kubext::measure(plan, &launcher, run_id).await,
        ..Column::default()
    };
    let crds = match contender {
        Contender::Upstream => v.upstream_crds,
        _ => v.crds,
    };
    if crds > 0 {
        eprintln!("  CRDs: {crds} on a fresh server");
        match crd_phase(&launcher, &format!("{run_id}-crds"), crds).await {
            Ok(r) => column.crds = Some(r),
            Err(e) => column.problems.push(format!("CRD phase: {e:#}")),
        }
    }
    if v.proxy_gets > 0 {
        eprintln!("  aggregation: {} GETs each way", v.proxy_gets);
        match proxy_phase(&launcher, &format!("{run_id}-aggregation"), v.proxy_gets).await {
            Ok(r) => column.proxy = Some(r),
            Err(e) => column.problems.push(format!("aggregation phase: {e:#}")),
        }
    }
    column.elapsed = t.elapsed();
    column
}

impl Column {
    fn failed(problem: String) -> Column {
        Column {
            problems: vec![problem],
            ..Column::default()
        }
    }
}

async fn start_etcd(binary: &Path) -> Result<Etcd> {
    let binary = binary.to_owned();
    tokio::task::spawn_blocking(move || Etcd::start_with(&binary))
        .await?
        .context("start etcd")
}

fn launcher(v: &Versus, contender: Contender, etcd: Option<&Etcd>) -> Result<Launcher> {
    let kubext = |storage, etcd_pid| Launcher::Kubext {
        binary: v.kubext.clone(),
        storage,
        etcd_pid,
    };
    Ok(match (contender, etcd) {
        (Contender::KubextEmbedded, _) => kubext(Storage::Embedded, None),
        (Contender::KubextEtcd, Some(etcd)) => kubext(Storage::Etcd(etcd.endpoint()), etcd.pid()),
        (Contender::Upstream, Some(etcd)) => {
            Launcher::Upstream(upstream::Launcher::new(v.binaries.clone(), etcd)?)
        }
        (_, None) => bail!("no etcd for {}", contender.name()),
    })
}

/// A fresh server whose controllers have started.
async fn fresh(launcher: &Launcher, tag: &str) -> Result<Started> {
    let (server, _) = launcher.start(tag).await?;
    server.settle().await?;
    Ok(server)
}

async fn crd_phase(launcher: &Launcher, tag: &str, n: usize) -> Result<CrdResult> {
    let server = fresh(launcher, tag).await?;
    crds::measure_on(&server.handle, n)
        .await
        .with_context(|| format!("server log tail: {}", server.log_tail(5)))
}

async fn proxy_phase(launcher: &Launcher, tag: &str, gets: usize) -> Result<ProxyResult> {
    let server = fresh(launcher, tag).await?;
    aggregation::proxy(&server.handle, gets)
        .await
        .with_context(|| format!("server log tail: {}", server.log_tail(5)))
}

/// What a figure counts.
#[derive(Clone, Copy)]
enum Unit {
    Seconds,
    Bytes,
    PerSecond,
    Micros,
    Count,
}

/// kubext ÷ upstream must be at least or at most this.
#[derive(Clone, Copy)]
enum Goal {
    AtLeast(f64, &'static str),
    AtMost(f64, &'static str),
}

impl Goal {
    fn text(self) -> &'static str {
        match self {
            Goal::AtLeast(_, text) | Goal::AtMost(_, text) => text,
        }
    }

    fn ratio(self) -> f64 {
        match self {
            Goal::AtLeast(r, _) | Goal::AtMost(r, _) => r,
        }
    }
}

const CREATES: Goal = Goal::AtLeast(3.0, ">= 3×");
const MEMORY: Goal = Goal::AtMost(0.2, "<= 1/5");
const CPU: Goal = Goal::AtMost(1.0 / 3.0, "<= 1/3");
const START: Goal = Goal::AtMost(0.02, "<= 1/50");

/// One row: a figure of each server.
struct Figure {
    label: String,
    unit: Unit,
    values: [Option<f64>; 3],
    goal: Option<Goal>,
}

impl Figure {
    /// kubext on etcd and on the embedded store ÷ upstream (counts are not
    /// compared).
    fn ratios(&self) -> [Option<f64>; 2] {
        let upstream = self.values[0].filter(|u| *u != 0.0 && !matches!(self.unit, Unit::Count));
        [1, 2].map(|i| Some(self.values[i]? / upstream?))
    }
}

fn figure(
    columns: &[Column],
    label: impl Into<String>,
    unit: Unit,
    goal: Option<Goal>,
    value: impl Fn(&Column) -> Option<f64>,
) -> Figure {
    Figure {
        label: label.into(),
        unit,
        values: std::array::from_fn(|i| columns.get(i).and_then(&value)),
        goal,
    }
}

/// One of the read phases of a kind of object.
type ReadPhase = fn(&kubext::ObjectPhases) -> Option<&kubext::Phase>;

/// A quantile of latencies.
type Quantile = fn(&Latencies) -> Option<Duration>;

/// The quantiles every latency is shown at.
const QUANTILES: [(&str, Quantile); 2] = [("p50", Latencies::p50), ("p99", Latencies::p99)];

fn secs(d: Option<Duration>) -> Option<f64> {
    d.map(|d| d.as_secs_f64())
}

/// Microseconds of `part`'s CPU per operation over a phase.
fn cpu_us(split: &cpu::Split, part: fn(&cpu::Split) -> Option<f64>, ops: usize) -> Option<f64> {
    let cores = part(split)?;
    (ops > 0).then(|| cores * split.wall.as_secs_f64() / ops as f64 * 1e6)
}

fn figures(plan: &Plan, c: &[Column]) -> Vec<Figure> {
    let mut out = vec![
        figure(
            c,
            format!("start-to-ready (median of {})", plan.starts),
            Unit::Seconds,
            Some(START),
            |c| secs(c.measured.start_to_ready.p50()),
        ),
        figure(c, "RSS idle", Unit::Bytes, None, |c| {
            c.measured.rss_idle.map(|b| b as f64)
        }),
    ];
    for (what, pick) in PICKS {
        object_figures(&mut out, plan, c, what, pick);
    }
    watch_figures(&mut out, plan, c);
    crd_figures(&mut out, c);
    aggregation_figures(&mut out, c);
    out
}

/// Memory, creates, CPU per create, GET and LIST latencies of one kind of object.
fn object_figures(out: &mut Vec<Figure>, plan: &Plan, c: &[Column], what: &str, pick: Pick) {
    let creates = move |c: &Column, part: fn(&cpu::Split) -> Option<f64>| {
        let phases = pick(&c.measured);
        cpu_us(
            phases.creates_cpu.as_ref()?,
            part,
            phases.creates.as_ref()?.ok,
        )
    };
    out.push(figure(
        c,
        format!("{what}: RSS per object at {}", plan.objects),
        Unit::Bytes,
        Some(MEMORY),
        move |c| pick(&c.measured).bytes_per_object(),
    ));
    out.push(figure(
        c,
        format!("  creates/s (C={})", plan.concurrency),
        Unit::PerSecond,
        Some(CREATES),
        move |c| pick(&c.measured).creates.as_ref()?.ops_per_sec,
    ));
    out.push(figure(
        c,
        "  server CPU per create",
        Unit::Micros,
        Some(CPU),
        move |c| creates(c, |s| s.server),
    ));
    out.push(figure(
        c,
        "  etcd CPU per create",
        Unit::Micros,
        None,
        move |c| creates(c, |s| s.etcd),
    ));
    let reads: [(&str, ReadPhase); 3] = [
        ("GET", |p| p.gets.as_ref()),
        ("LIST limit=100", |p| p.lists_small.as_ref()),
        ("LIST all", |p| p.lists_all.as_ref()),
    ];
    for (read, phase) in reads {
        for (q, quantile) in QUANTILES {
            out.push(figure(
                c,
                format!("  {read} {q}"),
                Unit::Seconds,
                None,
                move |c| secs(quantile(&phase(pick(&c.measured))?.latencies)),
            ));
        }
    }
}

fn watch_figures(out: &mut Vec<Figure>, plan: &Plan, c: &[Column]) {
    out.push(figure(
        c,
        format!("watch events delivered/s, {} watchers", plan.watchers),
        Unit::PerSecond,
        None,
        |c| c.measured.watch.as_ref()?.delivered_per_sec,
    ));
    out.push(figure(
        c,
        "  server CPU per event, less the creates",
        Unit::Micros,
        Some(CPU),
        |c| report::net_event_cpu(&c.measured),
    ));
    // kube-apiserver ends a watch whose client falls behind (its cacher waits a
    // short budget for a full buffer): those watchers' later events are not
    // delivered, and the two figures above count only what was.
    out.push(figure(
        c,
        "  watches the server ended early",
        Unit::Count,
        None,
        |c| c.measured.watch.as_ref().map(|w| w.ended_early as f64),
    ));
    out.push(figure(
        c,
        format!(
            "RSS per slow watcher ({}), less the writes",
            plan.slow_watchers
        ),
        Unit::Bytes,
        None,
        |c| report::slow_watcher_bytes(&c.measured),
    ));
}

/// One of the CRD phase's latencies.
type CrdLatencies = fn(&CrdResult) -> &Latencies;

fn crd_figures(out: &mut Vec<Figure>, c: &[Column]) {
    out.push(figure(
        c,
        "CRDs created one after another",
        Unit::Count,
        None,
        |c| c.crds.as_ref().map(|r| r.crds as f64),
    ));
    out.push(figure(
        c,
        "  RSS per CRD, overall",
        Unit::Bytes,
        None,
        |c| c.crds.as_ref().map(CrdResult::rss_per_crd),
    ));
    out.push(figure(
        c,
        "  RSS per CRD, second half (slope)",
        Unit::Bytes,
        Some(MEMORY),
        |c| c.crds.as_ref().map(CrdResult::rss_slope),
    ));
    let latencies: [(&str, CrdLatencies); 2] = [
        ("servable", |r| &r.servable),
        ("in OpenAPI v3", |r| &r.in_openapi),
    ];
    for (what, pick) in latencies {
        for (q, quantile) in QUANTILES {
            out.push(figure(
                c,
                format!("  create → {what} {q}"),
                Unit::Seconds,
                None,
                move |c| secs(quantile(pick(c.crds.as_ref()?))),
            ));
        }
    }
}

fn aggregation_figures(out: &mut Vec<Figure>, c: &[Column]) {
    out.push(figure(
        c,
        "aggregation proxy: added at p50",
        Unit::Seconds,
        None,
        |c| c.proxy.as_ref()?.added_p50(),
    ));
    out.push(figure(
        c,
        "  GET through the aggregator p50",
        Unit::Seconds,
        None,
        |c| secs(c.proxy.as_ref()?.proxied.p50()),
    ));
    out.push(figure(
        c,
        "  GET straight to the extension server p50",
        Unit::Seconds,
        None,
        |c| secs(c.proxy.as_ref()?.direct.p50()),
    ));
}

fn show(unit: Unit, value: Option<f64>) -> String {
    let Some(v) = value else {
        return "-".into();
    };
    match unit {
        Unit::Seconds if v.abs() < 1e-3 => format!("{:.0} µs", v * 1e6),
        Unit::Seconds if v.abs() < 1e-2 => format!("{:.2} ms", v * 1e3),
        Unit::Seconds if v.abs() < 1.0 => format!("{:.1} ms", v * 1e3),
        Unit::Seconds => format!("{v:.2} s"),
        Unit::Bytes if v.abs() < (1 << 20) as f64 => format!("{:.1} KiB", v / 1024.0),
        Unit::Bytes => format!("{:.1} MiB", v / (1 << 20) as f64),
        Unit::PerSecond => format!("{v:.0}/s"),
        Unit::Micros => format!("{v:.1} µs"),
        Unit::Count => format!("{v:.0}"),
    }
}

/// A ratio with two or three significant digits.
fn times(ratio: Option<f64>) -> String {
    match ratio {
        None => "-".into(),
        Some(r) if r.abs() >= 10.0 => format!("{r:.0}×"),
        Some(r) if r.abs() >= 1.0 => format!("{r:.1}×"),
        Some(r) if r.abs() >= 0.1 => format!("{r:.2}×"),
        Some(r) => format!("{r:.3}×"),
    }
}

fn date() -> String {
    std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map_or_else(|| "unknown".into(), |d| d.trim().to_owned())
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

fn table(
    v: &Versus,
    plan: &Plan,
    machine: &Machine,
    figures: &[Figure],
    columns: &[Column],
    total: Duration,
) -> String {
    let header = [
        "",
        "upstream",
        "kubext etcd",
        "kubext embedded",
        "ratio",
        "goal",
    ];
    let mut rows: Vec<[String; 6]> = vec![header.map(String::from)];
    for f in figures {
        let [a, b, c] = f.values.map(|v| show(f.unit, v));
        let [re, rb] = f.ratios();
        let ratio = if re.or(rb).is_some() {
            format!("{} / {}", times(re), times(rb))
        } else {
            "-".into()
        };
        let goal = f.goal.map_or("", Goal::text).to_owned();
        rows.push([f.label.clone(), a, b, c, ratio, goal]);
    }
    let widths: [usize; 6] =
        std::array::from_fn(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "kubext-bench --versus upstream: objects={} (≈1 KiB ConfigMaps) concurrency={} watchers={} \
         slow-watchers={} CRDs: kubext {}, upstream {}",
        plan.objects, plan.concurrency, plan.watchers, plan.slow_watchers, v.crds, v.upstream_crds
    );
    let _ = writeln!(out, "{}", machine.line());
    let _ = writeln!(
        out,
        "{}; upstream: {} + {}; etcd: {} (a fresh one per server on etcd); kubext: {}",
        date(),
        file_name(&v.binaries.apiserver),
        file_name(&v.binaries.controller_manager),
        file_name(&v.binaries.etcd),
        v.kubext.display()
    );
    let _ = writeln!(
        out,
        "upstream's RSS and CPU: kube-apiserver + kube-controller-manager; \
         ratio: kubext ÷ upstream, on etcd / on the embedded store"
    );
    let _ = writeln!(out);
    for (i, row) in rows.iter().enumerate() {
        let mut line = String::new();
        for (cell, width) in row.iter().zip(widths) {
            let pad = width.saturating_sub(cell.chars().count());
            let _ = write!(line, "{cell}{}  ", " ".repeat(pad));
        }
        let _ = writeln!(out, "{}", line.trim_end());
        if i == 0 {
            let _ = writeln!(out, "{}", "-".repeat(line.trim_end().chars().count()));
        }
    }
    let _ = writeln!(out);
    for (contender, column) in Contender::ALL.iter().zip(columns) {
        for line in notes(column) {
            let _ = writeln!(out, "{}: {line}", contender.name());
        }
    }
    let _ = write!(
        out,
        "total wall time: {:.0} s; load average at end {}",
        total.as_secs_f64(),
        report::loadavg()
    );
    out
}

/// What went wrong on one server, and deliveries short of what was due.
fn notes(column: &Column) -> Vec<String> {
    let mut notes: Vec<String> = report::first_errors(&column.measured)
        .into_iter()
        .filter_map(|(what, e)| Some(format!("first {what} error: {}", e?)))
        .collect();
    if let Some(w) = &column.measured.watch {
        let received = w.delivery.len() + w.paced_delivery.len();
        if received < w.expected || w.ended_early > 0 {
            notes.push(format!(
                "watch events received {received} of {}, {} watches ended early",
                w.expected, w.ended_early
            ));
        }
    }
    notes.extend(column.measured.problems.iter().cloned());
    notes.extend(column.problems.iter().cloned());
    notes.push(format!("phases took {:.0} s", column.elapsed.as_secs_f64()));
    notes
}

fn to_json(figures: &[Figure], columns: &[Column]) -> Value {
    let figures: Vec<Value> = figures
        .iter()
        .map(|f| {
            let [upstream, etcd, embedded] = f.values;
            let [ratio_etcd, ratio_embedded] = f.ratios();
            json!({
                "figure": f.label.trim(),
                "unit": match f.unit {
                    Unit::Seconds => "s",
                    Unit::Bytes => "bytes",
                    Unit::PerSecond => "per_s",
                    Unit::Micros => "µs",
                    Unit::Count => "count",
                },
                "upstream": upstream,
                "kubext_etcd": etcd,
                "kubext_embedded": embedded,
                "ratio_etcd": ratio_etcd,
                "ratio_embedded": ratio_embedded,
                "goal": f.goal.map(|g| json!({"text": g.text(), "ratio": g.ratio()})),
            })
        })
        .collect();
    let notes: serde_json::Map<String, Value> = Contender::ALL
        .iter()
        .zip(columns)
        .map(|(c, column)| (c.name().to_owned(), json!(notes(column))))
        .collect();
    json!({"figures": figures, "notes": notes})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_are_kubext_over_upstream_and_counts_are_not_compared() {
        let rate = Figure {
            label: "creates/s".into(),
            unit: Unit::PerSecond,
            values: [Some(100.0), Some(300.0), None],
            goal: Some(CREATES),
        };
        assert_eq!(rate.ratios(), [Some(3.0), None]);
        let count = Figure {
            unit: Unit::Count,
            ..rate
        };
        assert_eq!(count.ratios(), [None, None]);
    }

    #[test]
    fn figures_are_shown_in_their_units() {
        assert_eq!(times(Some(0.0204)), "0.020×");
        assert_eq!(times(Some(12.3)), "12×");
        assert_eq!(show(Unit::Seconds, Some(0.000_15)), "150 µs");
        assert_eq!(show(Unit::Seconds, Some(3.72)), "3.72 s");
        assert_eq!(show(Unit::Bytes, Some(2048.0)), "2.0 KiB");
        assert_eq!(show(Unit::Bytes, Some(3.0 * 1024.0 * 1024.0)), "3.0 MiB");
        assert_eq!(show(Unit::Micros, None), "-");
    }
}
