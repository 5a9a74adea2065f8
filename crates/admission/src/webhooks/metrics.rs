//! Admission webhook metrics under upstream's names: calls and their latency
//! (`apiserver_admission_webhook_request_total`,
//! `apiserver_admission_webhook_admission_duration_seconds`), rejections
//! (`apiserver_admission_webhook_rejection_count`) and calls failed open
//! (`apiserver_admission_webhook_fail_open_count`).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::Duration;

use parking_lot::Mutex;

/// Upstream's buckets for webhook latency, in seconds.
const BUCKETS: [f64; 8] = [0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10.0, 25.0];

/// `validating` or `admit` (upstream's `type` label).
pub fn type_label(mutating: bool) -> &'static str {
    if mutating { "admit" } else { "validating" }
}

#[derive(Default)]
struct Histogram {
    buckets: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

#[derive(Default)]
struct State {
    /// (name, type, operation, code, rejected) → calls.
    requests: BTreeMap<(String, &'static str, &'static str, u16, bool), u64>,
    /// (name, type, operation, rejected) → latency.
    durations: BTreeMap<(String, &'static str, &'static str, bool), Histogram>,
    /// (name, type, operation, error_type, rejection_code) → rejections.
    rejections: BTreeMap<(String, &'static str, &'static str, &'static str, u16), u64>,
    /// (name, type) → calls failed open.
    fail_open: BTreeMap<(String, &'static str), u64>,
}

/// What one call did, for the metrics.
pub struct Call<'a> {
    pub name: &'a str,
    pub mutating: bool,
    pub operation: &'static str,
    pub elapsed: Duration,
    /// The HTTP code (200 on an answer; the error's code on a failure; 0 for an
    /// internal error).
    pub code: u16,
    pub rejected: bool,
    /// `calling_webhook_error`, `apiserver_internal_error` or `no_error`.
    pub error_type: &'static str,
}

#[derive(Default)]
pub struct Metrics(Mutex<State>);

impl Metrics {
    pub fn observe(&self, call: &Call<'_>) {
        let ty = type_label(call.mutating);
        let mut state = self.0.lock();
        *state
            .requests
            .entry((
                call.name.to_string(),
                ty,
                call.operation,
                call.code,
                call.rejected,
            ))
            .or_default() += 1;
        let h = state
            .durations
            .entry((call.name.to_string(), ty, call.operation, call.rejected))
            .or_default();
        let seconds = call.elapsed.as_secs_f64();
        for (i, le) in BUCKETS.iter().enumerate() {
            if seconds <= *le {
                h.buckets[i] += 1;
            }
        }
        h.count += 1;
        h.sum += seconds;
        if call.rejected {
            *state
                .rejections
                .entry((
                    call.name.to_string(),
                    ty,
                    call.operation,
                    call.error_type,
                    call.code.min(600),
                ))
                .or_default() += 1;
        }
    }

    pub fn failed_open(&self, name: &str, mutating: bool) {
        *self
            .0
            .lock()
            .fail_open
            .entry((name.to_string(), type_label(mutating)))
            .or_default() += 1;
    }

    /// The Prometheus text of every series.
    pub fn render(&self, out: &mut String) {
        let state = self.0.lock();
        let _ = writeln!(
            out,
            "# HELP apiserver_admission_webhook_request_total Admission webhook request total, identified by name and broken out for each admission type (validating or mutating) and operation. Additional labels specify whether the request was rejected or not and an HTTP status code. Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.\n# TYPE apiserver_admission_webhook_request_total counter"
        );
        for ((name, ty, op, code, rejected), n) in &state.requests {
            let _ = writeln!(
                out,
                "apiserver_admission_webhook_request_total{{code=\"{code}\",name=\"{name}\",operation=\"{op}\",rejected=\"{rejected}\",type=\"{ty}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "# HELP apiserver_admission_webhook_admission_duration_seconds Admission webhook latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).\n# TYPE apiserver_admission_webhook_admission_duration_seconds histogram"
        );
        for ((name, ty, op, rejected), h) in &state.durations {
            let labels =
                format!("name=\"{name}\",operation=\"{op}\",rejected=\"{rejected}\",type=\"{ty}\"");
            for (le, n) in BUCKETS.iter().zip(h.buckets) {
                let _ = writeln!(
                    out,
                    "apiserver_admission_webhook_admission_duration_seconds_bucket{{{labels},le=\"{le}\"}} {n}"
                );
            }
            let _ = writeln!(
                out,
                "apiserver_admission_webhook_admission_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}\napiserver_admission_webhook_admission_duration_seconds_sum{{{labels}}} {}\napiserver_admission_webhook_admission_duration_seconds_count{{{labels}}} {}",
                h.count, h.sum, h.count
            );
        }
        let _ = writeln!(
            out,
            "# HELP apiserver_admission_webhook_rejection_count Admission webhook rejection count, identified by name and broken out for each admission type (validating or admit) and operation. Additional labels specify an error type (calling_webhook_error or apiserver_internal_error if an error occurred; no_error otherwise) and optionally a non-zero rejection code if the webhook rejects the request with an HTTP status code (honored by the apiserver when the code is greater or equal to 400). Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.\n# TYPE apiserver_admission_webhook_rejection_count counter"
        );
        for ((name, ty, op, error_type, code), n) in &state.rejections {
            let _ = writeln!(
                out,
                "apiserver_admission_webhook_rejection_count{{error_type=\"{error_type}\",name=\"{name}\",operation=\"{op}\",rejection_code=\"{code}\",type=\"{ty}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "# HELP apiserver_admission_webhook_fail_open_count Admission webhook fail open count, identified by name and broken out for each admission type (validating or admit).\n# TYPE apiserver_admission_webhook_fail_open_count counter"
        );
        for ((name, ty), n) in &state.fail_open {
            let _ = writeln!(
                out,
                "apiserver_admission_webhook_fail_open_count{{name=\"{name}\",type=\"{ty}\"}} {n}"
            );
        }
    }
}
