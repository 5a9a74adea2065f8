//! Admission webhook metrics under upstream's names, kept by the webhook
//! client's [`webhook::metrics::Metrics`]: calls and their latency
//! (`apiserver_admission_webhook_request_total`,
//! `apiserver_admission_webhook_admission_duration_seconds`), rejections
//! (`apiserver_admission_webhook_rejection_count`) and calls failed open
//! (`apiserver_admission_webhook_fail_open_count`), and match conditions'
//! errors, exclusions and time (`apiserver_admission_match_condition_*`).

use std::time::Duration;

use webhook::metrics::{Family, Metrics, labels};

static REQUESTS: Family = Family {
    name: "apiserver_admission_webhook_request_total",
    help: "Admission webhook request total, identified by name and broken out for each admission type (validating or mutating) and operation. Additional labels specify whether the request was rejected or not and an HTTP status code. Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.",
    buckets: None,
};
static DURATION: Family = Family {
    name: "apiserver_admission_webhook_admission_duration_seconds",
    help: "Admission webhook latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).",
    buckets: Some(&[0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10.0, 25.0]),
};
static REJECTIONS: Family = Family {
    name: "apiserver_admission_webhook_rejection_count",
    help: "Admission webhook rejection count, identified by name and broken out for each admission type (validating or admit) and operation. Additional labels specify an error type (calling_webhook_error or apiserver_internal_error if an error occurred; no_error otherwise) and optionally a non-zero rejection code if the webhook rejects the request with an HTTP status code (honored by the apiserver when the code is greater or equal to 400). Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.",
    buckets: None,
};
static FAIL_OPEN: Family = Family {
    name: "apiserver_admission_webhook_fail_open_count",
    help: "Admission webhook fail open count, identified by name and broken out for each admission type (validating or admit).",
    buckets: None,
};

static CONDITION_ERRORS: Family = Family {
    name: "apiserver_admission_match_condition_evaluation_errors_total",
    help: "Admission match condition evaluation errors count, identified by name of resource containing the match condition and broken out for each kind containing matchConditions (webhook or policy), operation and admission type (validate or admit).",
    buckets: None,
};
static CONDITION_EXCLUSIONS: Family = Family {
    name: "apiserver_admission_match_condition_exclusions_total",
    help: "Admission match condition evaluation exclusions count, identified by name of resource containing the match condition and broken out for each kind containing matchConditions (webhook or policy), operation and admission type (validate or admit).",
    buckets: None,
};
static CONDITION_SECONDS: Family = Family {
    name: "apiserver_admission_match_condition_evaluation_seconds",
    help: "Admission match condition evaluation time in seconds, identified by name and broken out for each kind containing matchConditions (webhook or policy), operation and type (validate or admit).",
    buckets: Some(&[0.001, 0.005, 0.01, 0.025, 0.1, 0.2, 0.25]),
};

/// How a webhook's match conditions came out, for the metrics.
pub struct Conditions<'a> {
    pub name: &'a str,
    pub mutating: bool,
    pub operation: &'static str,
    pub elapsed: Duration,
    pub errors: usize,
    /// A condition was false: the webhook was not called.
    pub excluded: bool,
}

/// Match conditions' metrics (`type` is `validate` or `admit` here).
pub fn observe_conditions(metrics: &Metrics, c: &Conditions<'_>) {
    let ty = if c.mutating { "admit" } else { "validate" };
    let labels = || {
        labels(&[
            ("name", c.name),
            ("kind", "webhook"),
            ("type", ty),
            ("operation", c.operation),
        ])
    };
    for _ in 0..c.errors {
        metrics.inc(&CONDITION_ERRORS, labels());
    }
    if c.excluded {
        metrics.inc(&CONDITION_EXCLUSIONS, labels());
    }
    metrics.observe(&CONDITION_SECONDS, labels(), c.elapsed);
}

/// `validating` or `admit` (upstream's `type` label).
fn type_label(mutating: bool) -> &'static str {
    if mutating { "admit" } else { "validating" }
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

pub fn observe(metrics: &Metrics, call: &Call<'_>) {
    let ty = type_label(call.mutating);
    let code = call.code.min(600).to_string();
    let rejected = call.rejected.to_string();
    metrics.inc(
        &REQUESTS,
        labels(&[
            ("name", call.name),
            ("type", ty),
            ("operation", call.operation),
            ("code", &code),
            ("rejected", &rejected),
        ]),
    );
    metrics.observe(
        &DURATION,
        labels(&[
            ("name", call.name),
            ("type", ty),
            ("operation", call.operation),
            ("rejected", &rejected),
        ]),
        call.elapsed,
    );
    if call.rejected {
        metrics.inc(
            &REJECTIONS,
            labels(&[
                ("name", call.name),
                ("type", ty),
                ("operation", call.operation),
                ("error_type", call.error_type),
                ("rejection_code", &code),
            ]),
        );
    }
}

pub fn failed_open(metrics: &Metrics, name: &str, mutating: bool) {
    metrics.inc(
        &FAIL_OPEN,
        labels(&[("name", name), ("type", type_label(mutating))]),
    );
}
