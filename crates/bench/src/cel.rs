//! The CEL phase: what validation rules and admission policies cost. In
//! process, the time to compile and check a real project's rules (Gateway
//! API's Gateway CRD, as tests use it); end to end in one run, sequential
//! creates of a custom resource whose schema has ten rules, of the same
//! resource without them, and without them but under a ValidatingAdmissionPolicy
//! with the same ten expressions.

use anyhow::{Context, Result};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::{Server, Storage};

use crate::cpu::Meter;
use crate::stats::Latencies;

/// Gateway API's standard Gateway CRD (the test data of `tests/cel.rs`).
const GATEWAYS: &str = include_str!("../../kubext/tests/data/gateway-api/gateways.yaml");

/// The ten rules: comparisons, string functions, a regex, a list macro, a
/// plain comparison — all ten run on every create.
const RULES: &[&str] = &[
    "self.minReplicas <= self.maxReplicas",
    "self.maxReplicas < 1000",
    "self.name.startsWith('w-')",
    "size(self.name) < 64",
    "self.name.matches('^[a-z0-9-]+$')",
    "self.tags.all(t, size(t) < 32)",
    "!self.tags.exists(t, t == 'forbidden')",
    "self.mode in ['fast', 'safe']",
    "self.mode != 'fast' || self.maxReplicas <= 100",
    "self.minReplicas >= 0",
];

pub struct ModeResult {
    pub latencies: Latencies,
    pub cpu_per_create: Option<Duration>,
    pub per_sec: f64,
}

pub struct CelResult {
    pub gateway_rules: usize,
    pub gateway_compile: Duration,
    pub creates: usize,
    pub with_rules: ModeResult,
    pub without_rules: ModeResult,
    pub with_policy: ModeResult,
}

/// What the creates run against.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    NoRules,
    Rules,
    Policy,
}

/// The ten rules as a policy's validations on `object.spec`.
fn policy() -> String {
    let validations: Vec<Value> = RULES
        .iter()
        .map(|r| json!({"expression": r.replace("self.", "object.spec.")}))
        .collect();
    let policy = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "widgets.bench.example.com"},
        "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": ["bench.example.com"],
            "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["widgets"]}]},
            "validations": validations}});
    let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "widgets"},
        "spec": {"policyName": "widgets.bench.example.com", "validationActions": ["Deny"]}});
    json!({"apiVersion": "v1", "kind": "List", "items": [policy, binding]}).to_string()
}

fn crd(rules: bool) -> Value {
    let validations: Vec<Value> = if rules {
        RULES.iter().map(|r| json!({"rule": r})).collect()
    } else {
        Vec::new()
    };
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.bench.example.com"},
        "spec": {"group": "bench.example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "x-kubernetes-validations": validations,
                        "properties": {
                            "name": {"type": "string", "maxLength": 63},
                            "mode": {"type": "string", "maxLength": 8, "default": "safe"},
                            "minReplicas": {"type": "integer"},
                            "maxReplicas": {"type": "integer"},
                            "tags": {"type": "array", "maxItems": 16,
                                "items": {"type": "string", "maxLength": 31}}}}}}}}]}})
}

/// Every `x-kubernetes-validations` rule of the Gateway CRD's first version,
/// and the time to check and compile them all (what a CRD write costs).
fn gateway_compile() -> Result<(usize, Duration)> {
    let crd: Value = serde_saphyr::from_str(GATEWAYS).context("parsing the Gateway CRD")?;
    let raw = crd
        .pointer("/spec/versions/0/schema/openAPIV3Schema")
        .context("no schema")?;
    let schema = schema::structural::Structural::compile(raw)
        .map_err(|e| anyhow::anyhow!("structural schema: {e:?}"))?;
    let rules = serde_json::to_string(raw)?.matches("\"rule\"").count();
    let rounds = 20u32;
    let started = Instant::now();
    for _ in 0..rounds {
        let errors = cel_rules::compile_errors(&schema, &apimachinery::FieldPath::root());
        anyhow::ensure!(errors.is_empty(), "Gateway rules refused: {errors:?}");
        std::hint::black_box(cel_rules::RuleSet::compile(&schema));
    }
    Ok((rules, started.elapsed() / rounds))
}

async fn serve_and_create(mode: Mode, creates: usize) -> Result<ModeResult> {
    let server = Server::builder()
        .storage(Storage::Memory)
        .start()
        .context("starting kubext")?;
    server.apply(&crd(mode == Mode::Rules).to_string());
    server.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/widgets.bench.example.com",
        "--timeout=30s",
    ]);
    if mode == Mode::Policy {
        server.apply(&policy());
    }
    let client = kube::Client::try_from(server.client_config().await?)?;
    let create = |i: usize| {
        let client = client.clone();
        async move {
            let body = json!({"apiVersion": "bench.example.com/v1", "kind": "Widget",
                "metadata": {"name": format!("w-{i}"), "namespace": "default"},
                "spec": {"name": format!("w-{i}"), "minReplicas": 1, "maxReplicas": 3,
                    "tags": ["a", "b", "c"]}});
            let req = http::Request::post("/apis/bench.example.com/v1/namespaces/default/widgets")
                .header("content-type", "application/json")
                .body(serde_json::to_vec(&body)?)?;
            let started = Instant::now();
            client.request_text(req).await?;
            Ok::<_, anyhow::Error>(started.elapsed())
        }
    };
    for i in 0..100 {
        create(i).await?;
    }
    if mode == Mode::Policy {
        // The policy is compiled moments after it is written: wait until it
        // refuses a widget that breaks a rule.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let bad = json!({"apiVersion": "bench.example.com/v1", "kind": "Widget",
                "metadata": {"generateName": "bad-", "namespace": "default"},
                "spec": {"name": "bad", "minReplicas": 1, "maxReplicas": 3, "tags": []}});
            let req = http::Request::post("/apis/bench.example.com/v1/namespaces/default/widgets")
                .header("content-type", "application/json")
                .body(serde_json::to_vec(&bad)?)?;
            if client.request_text(req).await.is_err() {
                break;
            }
            anyhow::ensure!(Instant::now() < deadline, "the policy never took effect");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let meter = Meter::start(server.pid().as_slice(), None);
    let mut samples = Vec::with_capacity(creates);
    for i in 0..creates {
        samples.push(create(100 + i).await?);
    }
    let split = meter.finish();
    let cpu_per_create = split
        .server
        .map(|cores| Duration::from_secs_f64(cores * split.wall.as_secs_f64() / creates as f64));
    Ok(ModeResult {
        latencies: Latencies::new(samples),
        cpu_per_create,
        per_sec: creates as f64 / split.wall.as_secs_f64(),
    })
}

pub async fn measure(creates: usize) -> Result<CelResult> {
    let (gateway_rules, gateway_compile) = gateway_compile()?;
    let with_rules = serve_and_create(Mode::Rules, creates).await?;
    let without_rules = serve_and_create(Mode::NoRules, creates).await?;
    let with_policy = serve_and_create(Mode::Policy, creates).await?;
    Ok(CelResult {
        gateway_rules,
        gateway_compile,
        creates,
        with_rules,
        without_rules,
        with_policy,
    })
}

fn us(d: Option<Duration>) -> String {
    d.map_or("-".into(), |d| format!("{:.1} µs", d.as_secs_f64() * 1e6))
}

pub fn print(r: &CelResult) {
    eprintln!();
    eprintln!("CEL validation rules");
    eprintln!(
        "  Gateway CRD: check + compile {} rules  {:.2} ms",
        r.gateway_rules,
        r.gateway_compile.as_secs_f64() * 1e3
    );
    for (name, m) in [
        ("10 rules", &r.with_rules),
        ("no rules", &r.without_rules),
        ("policy", &r.with_policy),
    ] {
        eprintln!(
            "  {name:<9} {} creates: {:.0}/s, p50 / p99 {} / {}, server CPU {} per create",
            r.creates,
            m.per_sec,
            us(m.latencies.p50()),
            us(m.latencies.p99()),
            us(m.cpu_per_create)
        );
    }
    if let (Some(a), Some(b)) = (r.with_rules.cpu_per_create, r.without_rules.cpu_per_create) {
        eprintln!(
            "  server CPU added by 10 rules per create {:.1} µs",
            (a.as_secs_f64() - b.as_secs_f64()) * 1e6
        );
    }
    if let (Some(a), Some(b)) = (r.with_policy.cpu_per_create, r.without_rules.cpu_per_create) {
        eprintln!(
            "  server CPU added by a 10-expression policy per create {:.1} µs",
            (a.as_secs_f64() - b.as_secs_f64()) * 1e6
        );
    }
}
