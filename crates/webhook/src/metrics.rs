//! Metrics of calls out, in the Prometheus text format under upstream's
//! names: counters and histograms with labels, registered by their users
//! (admission webhooks, conversion webhooks) through [`Metrics`]. Calls out
//! cost milliseconds, so one lock per observation is fine here.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::Duration;

use parking_lot::Mutex;

/// A metric family: its name, help text and, for histograms, buckets.
pub struct Family {
    pub name: &'static str,
    pub help: &'static str,
    /// `None`: a counter.
    pub buckets: Option<&'static [f64]>,
}

#[derive(Default)]
struct Series {
    /// Counters: the count. Histograms: observations per bucket, then count.
    buckets: Vec<u64>,
    count: u64,
    sum: f64,
}

/// A family and its series by rendered labels.
type Recorded = (&'static Family, BTreeMap<String, Series>);

/// Every family's series, by family name and rendered labels.
#[derive(Default)]
pub struct Metrics {
    families: Mutex<BTreeMap<&'static str, Recorded>>,
}

/// Labels as Prometheus writes them, sorted by name.
pub fn labels(pairs: &[(&str, &str)]) -> String {
    let mut pairs = pairs.to_vec();
    pairs.sort_by_key(|(k, _)| *k);
    let rendered: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\"")))
        .collect();
    rendered.join(",")
}

impl Metrics {
    /// Add one to counter `family` for `labels`.
    pub fn inc(&self, family: &'static Family, labels: String) {
        let mut families = self.families.lock();
        let (_, series) = families
            .entry(family.name)
            .or_insert_with(|| (family, BTreeMap::new()));
        series.entry(labels).or_default().count += 1;
    }

    /// Observe `elapsed` in histogram `family` for `labels`.
    pub fn observe(&self, family: &'static Family, labels: String, elapsed: Duration) {
        let buckets = family.buckets.unwrap_or(&[]);
        let seconds = elapsed.as_secs_f64();
        let mut families = self.families.lock();
        let (_, series) = families
            .entry(family.name)
            .or_insert_with(|| (family, BTreeMap::new()));
        let s = series.entry(labels).or_default();
        if s.buckets.len() != buckets.len() {
            s.buckets = vec![0; buckets.len()];
        }
        for (i, le) in buckets.iter().enumerate() {
            if seconds <= *le {
                s.buckets[i] += 1;
            }
        }
        s.count += 1;
        s.sum += seconds;
    }

    /// Every series recorded so far.
    pub fn render(&self, out: &mut String) {
        for (name, (family, series)) in self.families.lock().iter() {
            let kind = if family.buckets.is_some() {
                "histogram"
            } else {
                "counter"
            };
            let _ = writeln!(out, "# HELP {name} {}\n# TYPE {name} {kind}", family.help);
            for (labels, s) in series {
                let Some(buckets) = family.buckets else {
                    let _ = writeln!(out, "{name}{{{labels}}} {}", s.count);
                    continue;
                };
                let sep = if labels.is_empty() { "" } else { "," };
                for (le, n) in buckets.iter().zip(&s.buckets) {
                    let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{le}\"}} {n}");
                }
                let _ = writeln!(
                    out,
                    "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}\n{name}_sum{{{labels}}} {}\n{name}_count{{{labels}}} {}",
                    s.count, s.sum, s.count
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static CALLS: Family = Family {
        name: "calls_total",
        help: "Calls.",
        buckets: None,
    };
    static LATENCY: Family = Family {
        name: "call_seconds",
        help: "Latency.",
        buckets: Some(&[0.1, 1.0]),
    };

    #[test]
    fn counters_and_histograms_render_as_prometheus_text() {
        let m = Metrics::default();
        m.inc(&CALLS, labels(&[("name", "a"), ("code", "200")]));
        m.inc(&CALLS, labels(&[("code", "200"), ("name", "a")]));
        m.observe(
            &LATENCY,
            labels(&[("name", "a")]),
            Duration::from_millis(500),
        );
        let mut out = String::new();
        m.render(&mut out);
        assert!(
            out.contains("calls_total{code=\"200\",name=\"a\"} 2\n"),
            "{out}"
        );
        assert!(
            out.contains("call_seconds_bucket{name=\"a\",le=\"0.1\"} 0\n"),
            "{out}"
        );
        assert!(
            out.contains("call_seconds_bucket{name=\"a\",le=\"1\"} 1\n"),
            "{out}"
        );
        assert!(out.contains("call_seconds_count{name=\"a\"} 1\n"), "{out}");
    }
}
