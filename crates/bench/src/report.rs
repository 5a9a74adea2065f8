//! The aligned text table and the JSON document.

use serde_json::{Value, json};
use std::fmt::Write;
use std::time::Duration;

use crate::BackendReport;
use crate::cpu;
use crate::kubext::{KubextResult, ObjectPhases, Phase};
use crate::plan::Plan;
use crate::stats::Latencies;

/// Goal for start-to-ready.
const START_GOAL: Duration = Duration::from_millis(200);
/// Goal for kubext creates/s ÷ raw creates/s.
const RATIO_GOAL: f64 = 0.80;

pub struct Machine {
    pub cpus: usize,
    pub model: String,
    pub kernel: String,
    /// `/proc/loadavg` when the run began: other work on the box skews every number.
    pub load_start: String,
}

/// The 1, 5 and 15 minute load averages.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

impl Machine {
    pub fn detect() -> Self {
        let cpus = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0);
        let model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_owned())
            })
            .unwrap_or_else(|| "unknown CPU".into());
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_owned())
            .unwrap_or_else(|_| "unknown".into());
        Machine {
            cpus,
            model,
            kernel,
            load_start: loadavg(),
        }
    }

    pub fn line(&self) -> String {
        format!(
            "machine: {} CPUs, {}, Linux {}; load average at start {}",
            self.cpus, self.model, self.kernel, self.load_start
        )
    }
}

fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms >= 1000.0 {
        format!("{:.2} s", ms / 1e3)
    } else if ms >= 100.0 {
        format!("{ms:.0} ms")
    } else if ms >= 10.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.2} ms")
    }
}

fn mib(bytes: Option<u64>) -> String {
    bytes.map_or_else(na, |b| format!("{:.1} MiB", b as f64 / (1 << 20) as f64))
}

fn na() -> String {
    "-".into()
}

fn rate(r: Option<f64>) -> String {
    r.map_or_else(na, |r| format!("{r:.0}/s"))
}

fn p50_p99(l: &Latencies) -> String {
    match (l.p50(), l.p99()) {
        (Some(a), Some(b)) => format!("{} / {}", ms(a), ms(b)),
        _ => na(),
    }
}

fn phase_rate(p: Option<&Phase>) -> String {
    match p {
        Some(p) => {
            let mut s = rate(p.ops_per_sec);
            if p.cut_short {
                s.push_str(" (cut)");
            }
            s
        }
        None => na(),
    }
}

fn phase_lat(p: Option<&Phase>) -> String {
    p.map_or_else(na, |p| p50_p99(&p.latencies))
}

/// Average cores used by the server, etcd and this benchmark, e.g. `1.2/-/0.7`.
fn cores(s: &cpu::Split) -> String {
    let f = |c: Option<f64>| c.map_or_else(na, |c| format!("{c:.2}"));
    format!("{}/{}/{}", f(s.server), f(s.etcd), f(s.bench))
}

/// CPU microseconds per operation, from average cores over the phase.
fn per_op(s: &cpu::Split, ops: usize) -> String {
    let per = |c: Option<f64>| {
        c.filter(|_| ops > 0).map_or_else(na, |c| {
            format!("{:.1}", c * s.wall.as_secs_f64() / ops as f64 * 1e6)
        })
    };
    format!("{}/{}/{}", per(s.server), per(s.etcd), per(s.bench))
}

fn cores_json(s: &cpu::Split) -> Value {
    json!({"server": s.server, "etcd": s.etcd, "bench": s.bench, "wall_ms": s.wall.as_secs_f64() * 1e3})
}

/// kubext creates/s of the objects `pick` selects ÷ raw creates/s.
fn ratio(r: &BackendReport, pick: Pick) -> Option<f64> {
    let kubext = pick(r.kubext.as_ref()?).creates.as_ref()?.ops_per_sec?;
    let raw = r.raw.as_ref()?.creates.ops_per_sec?;
    Some(kubext / raw)
}

/// Selects one kind of object's phases.
pub type Pick = fn(&KubextResult) -> &ObjectPhases;

pub const PICKS: [(&str, Pick); 2] = [
    ("ConfigMaps", |k| &k.configmaps),
    ("custom resources", |k| &k.custom),
];

/// Issue 16's goals. Memory per ≈1 KiB object, over what the server held before.
const BYTES_PER_OBJECT_GOAL: &str = "<= 3 KiB";
/// Server CPU per create: ConfigMaps, and custom resources of a schema that
/// validates and defaults.
const CREATE_CPU_GOALS: [&str; 2] = ["<= 30 µs", "<= 40 µs"];
const LIST_ALL_GOAL: &str = "<= 30 ms";
const WATCH_EVENT_GOAL: &str = "<= 1 µs";
/// A watcher that stops reading holds at most its bounded queues: hyper's 64 KiB,
/// rustls' 32 KiB and a few frames.
const SLOW_WATCHER_GOAL: &str = "<= 128 KiB";

/// RSS per slow watcher, less what the same writes cost without them.
pub fn slow_watcher_bytes(k: &KubextResult) -> Option<f64> {
    k.slow_watchers.as_ref()?.bytes_per_watcher()
}

/// Server CPU per watch event delivered, once the CPU the same creates cost
/// without watchers (the ConfigMap create phase's per-create figure) is taken out.
pub fn net_event_cpu(k: &KubextResult) -> Option<f64> {
    let w = k.watch.as_ref()?;
    let total = w.cpu.server? * w.cpu.wall.as_secs_f64();
    let create = {
        let c = k.configmaps.creates_cpu.as_ref()?;
        let n = k.configmaps.creates.as_ref()?.ok;
        (n > 0).then(|| c.server.unwrap_or(0.0) * c.wall.as_secs_f64() / n as f64)?
    };
    let events = w.delivery.len();
    (events > 0).then(|| (total - create * w.writes.ok as f64).max(0.0) / events as f64 * 1e6)
}

/// Each phase's first error, by phase (`None` where it had none).
pub fn first_errors(kr: &KubextResult) -> Vec<(&'static str, Option<String>)> {
    let first = |p: &Option<Phase>| p.as_ref().and_then(|p| p.first_error.clone());
    vec![
        ("ConfigMap creates", first(&kr.configmaps.creates)),
        ("ConfigMap gets", first(&kr.configmaps.gets)),
        ("ConfigMap lists", first(&kr.configmaps.lists_small)),
        ("ConfigMap list all", first(&kr.configmaps.lists_all)),
        ("custom resource creates", first(&kr.custom.creates)),
        ("custom resource gets", first(&kr.custom.gets)),
        ("custom resource lists", first(&kr.custom.lists_small)),
        ("custom resource list all", first(&kr.custom.lists_all)),
        (
            "watch writes",
            kr.watch.as_ref().and_then(|w| w.writes.first_error.clone()),
        ),
        (
            "watchers",
            kr.watch.as_ref().and_then(|w| w.first_error.clone()),
        ),
    ]
}

fn kib(bytes: Option<f64>) -> String {
    bytes.map_or_else(na, |b| format!("{:.1} KiB", b / 1024.0))
}

/// Creates, GETs and LISTs of one kind of object.
fn object_rows(
    row: &mut impl FnMut(String, &dyn Fn(&BackendReport) -> String, &'static str),
    plan: &Plan,
    what: &str,
    pick: Pick,
    create_cpu_goal: &'static str,
) {
    let phases = |r: &BackendReport| {
        r.kubext
            .as_ref()
            .map(|k| pick(k).clone())
            .unwrap_or_default()
    };
    row(
        format!("{what}: creates/s (C={})", plan.concurrency),
        &|r| phase_rate(phases(r).creates.as_ref()),
        "",
    );
    row(
        "  RSS per object (after creates - before)".into(),
        &|r| kib(phases(r).bytes_per_object()),
        BYTES_PER_OBJECT_GOAL,
    );
    row(
        "  live heap per object".into(),
        &|r| kib(phases(r).heap_per_object()),
        BYTES_PER_OBJECT_GOAL,
    );
    row(
        "  create p50 / p99".into(),
        &|r| phase_lat(phases(r).creates.as_ref()),
        "",
    );
    row(
        "  cores: server/etcd/bench".into(),
        &|r| phases(r).creates_cpu.as_ref().map_or_else(na, cores),
        "",
    );
    row(
        "  CPU µs per create: server/etcd/bench".into(),
        &|r| {
            let p = phases(r);
            match (&p.creates_cpu, &p.creates) {
                (Some(c), Some(created)) => per_op(c, created.ok),
                _ => na(),
            }
        },
        create_cpu_goal,
    );
    row(
        "  GET p50 / p99 (serial)".into(),
        &|r| phase_lat(phases(r).gets.as_ref()),
        "",
    );
    row(
        "  LIST limit=100 p50 / p99".into(),
        &|r| phase_lat(phases(r).lists_small.as_ref()),
        "",
    );
    row(
        format!("  LIST all {} p50 / p99 (body, not decoded)", plan.objects),
        &|r| phase_lat(phases(r).lists_all.as_ref()),
        LIST_ALL_GOAL,
    );
    row(
        "  LIST all: peak RSS over before".into(),
        &|r| mib(phases(r).lists_all_peak),
        "",
    );
}

/// The report as an aligned table: one column per backend.
pub fn table(plan: &Plan, machine: &Machine, reports: &[BackendReport], total: Duration) -> String {
    let k = |r: &BackendReport| r.kubext.clone().unwrap_or_default();
    let mut rows: Vec<(String, Vec<String>, &str)> = Vec::new();
    let mut row = |label: String, f: &dyn Fn(&BackendReport) -> String, goal: &'static str| {
        rows.push((label, reports.iter().map(f).collect(), goal));
    };
    row(
        format!("start-to-ready (median of {})", plan.starts),
        &|r| k(r).start_to_ready.p50().map_or_else(na, ms),
        "< 200 ms",
    );
    row(
        "start-to-ready (max)".into(),
        &|r| k(r).start_to_ready.quantile(1.0).map_or_else(na, ms),
        "",
    );
    row("RSS idle".into(), &|r| mib(k(r).rss_idle), "");
    row(
        format!("RSS after {} ConfigMaps", plan.objects),
        &|r| mib(k(r).rss_loaded),
        "",
    );
    row(
        format!("RSS after {} custom resources", plan.objects),
        &|r| mib(k(r).rss_custom),
        "",
    );
    row(
        format!("RSS with {} watchers", plan.watchers),
        &|r| mib(k(r).rss_watchers),
        "",
    );
    for ((what, pick), goal) in PICKS.into_iter().zip(CREATE_CPU_GOALS) {
        object_rows(&mut row, plan, what, pick, goal);
    }
    row(
        "watches open / setup time".into(),
        &|r| {
            k(r).watch.map_or_else(na, |w| {
                format!(
                    "{}/{} in {}",
                    w.established,
                    w.established + w.failed,
                    w.setup.map_or_else(na, ms)
                )
            })
        },
        "",
    );
    row(
        format!("creates/s with watchers (C={})", plan.concurrency),
        &|r| {
            let kr = k(r);
            let base = kr.configmaps.creates.as_ref().and_then(|p| p.ops_per_sec);
            kr.watch.map_or_else(na, |w| {
                let mut s = phase_rate(Some(&w.writes));
                if let (Some(with), Some(base)) = (w.writes.ops_per_sec, base) {
                    let _ = write!(s, " ({:.0} %)", with / base * 100.0);
                }
                s
            })
        },
        "no collapse",
    );
    row(
        "  cores: server/etcd/bench".into(),
        &|r| k(r).watch.map_or_else(na, |w| cores(&w.cpu)),
        "",
    );
    row(
        "create p50 / p99 with watchers".into(),
        &|r| k(r).watch.map_or_else(na, |w| p50_p99(&w.writes.latencies)),
        "",
    );
    row(
        "watch delivery p50 / p99 (flat out)".into(),
        &|r| k(r).watch.map_or_else(na, |w| p50_p99(&w.delivery)),
        "",
    );
    row(
        format!("watch delivery p50 / p99 (paced, {})", plan.paced_objects),
        &|r| k(r).watch.map_or_else(na, |w| p50_p99(&w.paced_delivery)),
        "",
    );
    row(
        "watch events delivered/s (flat out)".into(),
        &|r| k(r).watch.map_or_else(na, |w| rate(w.delivered_per_sec)),
        "",
    );
    row(
        "  CPU µs per event: server/etcd/bench".into(),
        &|r| {
            k(r).watch
                .map_or_else(na, |w| per_op(&w.cpu, w.delivery.len()))
        },
        "",
    );
    row(
        "  server CPU µs per event, less the creates".into(),
        &|r| {
            let kr = k(r);
            net_event_cpu(&kr).map_or_else(na, |us| format!("{us:.2}"))
        },
        WATCH_EVENT_GOAL,
    );
    row(
        "watch events received".into(),
        &|r| {
            k(r).watch.map_or_else(na, |w| {
                format!(
                    "{}/{}",
                    w.delivery.len() + w.paced_delivery.len(),
                    w.expected
                )
            })
        },
        "all",
    );
    row(
        "watches ended early".into(),
        &|r| k(r).watch.map_or_else(na, |w| w.ended_early.to_string()),
        "0",
    );
    row(
        "slow watchers open / events written".into(),
        &|r| {
            k(r).slow_watchers
                .map_or_else(na, |s| format!("{} / {}", s.opened, s.events))
        },
        "",
    );
    row(
        "  RSS: before / open / after the writes".into(),
        &|r| {
            k(r).slow_watchers.map_or_else(na, |s| {
                format!(
                    "{} / {} / {}",
                    mib(s.rss_before),
                    mib(s.rss_open),
                    mib(s.rss_after_writes)
                )
            })
        },
        "",
    );
    row(
        "  RSS per slow watcher, less the writes".into(),
        &|r| kib(slow_watcher_bytes(&k(r))),
        SLOW_WATCHER_GOAL,
    );
    row(
        "  live heap per slow watcher, less the writes".into(),
        &|r| kib(k(r).slow_watchers.and_then(|s| s.heap_per_watcher())),
        SLOW_WATCHER_GOAL,
    );
    row(
        "  still registered (the rest were ended)".into(),
        &|r| {
            k(r).slow_watchers
                .and_then(|s| s.registered_after)
                .map_or_else(na, |n| n.to_string())
        },
        "",
    );
    row(
        format!("raw storage creates/s (C={})", plan.concurrency),
        &|r| {
            r.raw
                .as_ref()
                .map_or_else(na, |raw| phase_rate(Some(&raw.creates)))
        },
        "",
    );
    row(
        "  CPU µs per create: -/etcd/bench".into(),
        &|r| {
            r.raw
                .as_ref()
                .map_or_else(na, |raw| per_op(&raw.cpu, raw.creates.ok))
        },
        "",
    );
    for (what, pick) in PICKS {
        row(
            format!("kubext ÷ raw creates/s ({what})"),
            &|r| ratio(r, pick).map_or_else(na, |x| format!("{:.1} %", x * 100.0)),
            ">= 80 %",
        );
    }
    row(
        "request errors".into(),
        &|r| {
            let kr = k(r);
            let mut n = 0;
            for p in kr.configmaps.all().chain(kr.custom.all()) {
                n += p.errors;
            }
            if let Some(w) = &kr.watch {
                n += w.writes.errors + w.failed;
            }
            if let Some(raw) = &r.raw {
                n += raw.creates.errors;
            }
            n.to_string()
        },
        "0",
    );
    row("phase wall time".into(), &|r| ms(r.elapsed), "");

    let header: Vec<String> = reports.iter().map(|r| r.kind.name().to_owned()).collect();
    let label_w = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
    let col_w: Vec<usize> = (0..reports.len())
        .map(|i| {
            rows.iter()
                .map(|r| r.1[i].chars().count())
                .chain([header[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();

    let mut out = String::new();
    let _ = writeln!(
        out,
        "kubext-bench: objects={} (≈1 KiB ConfigMaps) concurrency={} watchers={} watch-objects={}",
        plan.objects, plan.concurrency, plan.watchers, plan.watch_objects
    );
    let _ = writeln!(out, "{}", machine.line());
    let _ = writeln!(out);
    let pad = |s: &str, w: usize| format!("{s}{}", " ".repeat(w.saturating_sub(s.chars().count())));
    let mut line = pad("", label_w);
    for (h, w) in header.iter().zip(&col_w) {
        line.push_str("  ");
        line.push_str(&pad(h, *w));
    }
    line.push_str("  goal");
    let _ = writeln!(out, "{}", line.trim_end());
    let _ = writeln!(out, "{}", "-".repeat(line.trim_end().chars().count()));
    for (label, cells, goal) in &rows {
        let mut line = pad(label, label_w);
        for (c, w) in cells.iter().zip(&col_w) {
            line.push_str("  ");
            line.push_str(&pad(c, *w));
        }
        line.push_str("  ");
        line.push_str(goal);
        let _ = writeln!(out, "{}", line.trim_end());
    }
    let _ = writeln!(out);
    for r in reports {
        if let Some(raw) = &r.raw {
            let mut s = format!("{}: raw value {} bytes", r.kind.name(), raw.value_bytes);
            if let Some(note) = &raw.note {
                let _ = write!(s, "; {note}");
            }
            let _ = writeln!(out, "{s}");
        }
        let kr = k(r);
        if let Some(s) = kr.start_to_ready.p50()
            && s > START_GOAL
        {
            let _ = writeln!(
                out,
                "{}: start-to-ready above the {} goal",
                r.kind.name(),
                ms(START_GOAL)
            );
        }
        for (what, pick) in PICKS {
            if let Some(x) = ratio(r, pick)
                && x < RATIO_GOAL
            {
                let _ = writeln!(
                    out,
                    "{}: kubext reaches {:.1} % of the raw storage ceiling with {what} (goal {:.0} %)",
                    r.kind.name(),
                    x * 100.0,
                    RATIO_GOAL * 100.0
                );
            }
        }
        let mut firsts = first_errors(&kr);
        firsts.push((
            "raw",
            r.raw
                .as_ref()
                .and_then(|raw| raw.creates.first_error.clone()),
        ));
        for (what, e) in firsts {
            if let Some(e) = e {
                let _ = writeln!(out, "{}: first {what} error: {e}", r.kind.name());
            }
        }
        for p in &r.problems {
            let _ = writeln!(out, "{}: {p}", r.kind.name());
        }
    }
    let _ = write!(
        out,
        "total wall time: {}; load average at end {}",
        ms(total),
        loadavg()
    );
    out
}

fn lat_json(l: &Latencies) -> Value {
    let m = |d: Option<Duration>| d.map(|d| d.as_secs_f64() * 1e3);
    json!({"samples": l.len(), "p50_ms": m(l.p50()), "p99_ms": m(l.p99()), "max_ms": m(l.quantile(1.0))})
}

fn phase_json(p: &Phase) -> Value {
    json!({
        "ok": p.ok,
        "errors": p.errors,
        "first_error": p.first_error,
        "cut_short": p.cut_short,
        "ops_per_sec": p.ops_per_sec,
        "latency": lat_json(&p.latencies),
    })
}

fn objects_json(p: &ObjectPhases) -> Value {
    json!({
        "creates": p.creates.as_ref().map(phase_json),
        "creates_cores": p.creates_cpu.as_ref().map(cores_json),
        "rss_before_bytes": p.rss_before,
        "rss_created_bytes": p.rss_created,
        "rss_bytes_per_object": p.bytes_per_object(),
        "heap_bytes_per_object": p.heap_per_object(),
        "lists_all_peak_rss_growth_bytes": p.lists_all_peak,
        "gets": p.gets.as_ref().map(phase_json),
        "lists_limit_100": p.lists_small.as_ref().map(phase_json),
        "lists_all": p.lists_all.as_ref().map(phase_json),
    })
}

/// The report as JSON (milliseconds, bytes, operations per second).
pub fn json(plan: &Plan, machine: &Machine, reports: &[BackendReport]) -> Value {
    let backends: Vec<Value> = reports
        .iter()
        .map(|r| {
            let kubext = r.kubext.as_ref().map(|k| {
                json!({
                    "start_to_ready": lat_json(&k.start_to_ready),
                    "rss_idle_bytes": k.rss_idle,
                    "rss_loaded_bytes": k.rss_loaded,
                    "rss_custom_bytes": k.rss_custom,
                    "rss_watchers_bytes": k.rss_watchers,
                    "configmaps": objects_json(&k.configmaps),
                    "custom_resources": objects_json(&k.custom),
                    "watch": k.watch.as_ref().map(|w| json!({
                        "established": w.established,
                        "failed": w.failed,
                        "setup_ms": w.setup.map(|d| d.as_secs_f64() * 1e3),
                        "server_registered_watchers": w.server_watchers,
                        "writes": phase_json(&w.writes),
                        "delivery": lat_json(&w.delivery),
                        "paced_delivery": lat_json(&w.paced_delivery),
                        "cores": cores_json(&w.cpu),
                        "delivered_per_sec": w.delivered_per_sec,
                        "expected_deliveries": w.expected,
                        "ended_early": w.ended_early,
                        "first_error": w.first_error,
                        "server_cpu_us_per_event_less_creates": net_event_cpu(k),
                    })),
                    "slow_watchers": k.slow_watchers.as_ref().map(|s| json!({
                        "opened": s.opened,
                        "events": s.events,
                        "rss_before_bytes": s.rss_before,
                        "rss_open_bytes": s.rss_open,
                        "rss_after_writes_bytes": s.rss_after_writes,
                        "baseline_growth_bytes": s.baseline_growth,
                        "rss_bytes_per_watcher_less_writes": slow_watcher_bytes(k),
                        "heap_bytes_per_watcher_less_writes": s.heap_per_watcher(),
                        "registered_after": s.registered_after,
                    })),
                })
            });
            json!({
                "backend": r.kind.name(),
                "kubext": kubext,
                "raw": r.raw.as_ref().map(|raw| json!({
                    "creates": phase_json(&raw.creates),
                    "value_bytes": raw.value_bytes,
                    "cores": cores_json(&raw.cpu),
                    "note": raw.note,
                })),
                "kubext_over_raw_creates": ratio(r, PICKS[0].1),
                "kubext_over_raw_custom_resource_creates": ratio(r, PICKS[1].1),
                "problems": r.problems,
                "elapsed_ms": r.elapsed.as_secs_f64() * 1e3,
            })
        })
        .collect();
    json!({
        "machine": {"cpus": machine.cpus, "model": machine.model, "kernel": machine.kernel,
            "load_start": machine.load_start, "load_end": loadavg()},
        "plan": {
            "objects": plan.objects,
            "concurrency": plan.concurrency,
            "watchers": plan.watchers,
            "watch_objects": plan.watch_objects,
            "paced_objects": plan.paced_objects,
            "starts": plan.starts,
            "gets": plan.gets,
            "lists_limit_100": plan.lists_small,
            "lists_all": plan.lists_all,
        },
        "backends": backends,
    })
}
