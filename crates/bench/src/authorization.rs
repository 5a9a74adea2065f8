//! The authorization phase: what RBAC costs a request. One in-process number —
//! the time of one RBAC decision against a policy of 1,000 Roles and 1,000
//! RoleBindings (plus the bootstrap policy) — and one end-to-end pair in the
//! same run: sequential GETs by a token user of a server with that policy
//! under `--authorization-mode=RBAC`, and of one with `AlwaysAllow`.

use anyhow::{Context, Result};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::{Server, Storage};

use crate::cpu::Meter;
use crate::stats::Latencies;

pub struct ModeResult {
    pub latencies: Latencies,
    /// Server CPU per GET.
    pub cpu_per_get: Option<Duration>,
    pub per_sec: f64,
}

pub struct AuthorizationResult {
    pub roles: usize,
    pub gets: usize,
    /// One `Policy::decide` for a user with a binding, and for one without.
    pub decide_allowed: Duration,
    pub decide_denied: Duration,
    pub rbac: ModeResult,
    pub always_allow: ModeResult,
}

const NAMESPACES: usize = 50;

/// `roles` Roles and RoleBindings spread over namespaces, each binding another
/// user and group, and the one that lets `bench` read ConfigMaps in `default`.
fn policy_objects(roles: usize) -> Vec<Value> {
    let mut objects = Vec::new();
    for i in 0..roles {
        let ns = format!("ns-{}", i % NAMESPACES);
        objects.push(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": format!("role-{i}"), "namespace": ns},
            "rules": [{"apiGroups": ["", "apps"], "resources": ["configmaps", "secrets", "deployments"],
                       "verbs": ["get", "list", "watch"]}]}));
        objects.push(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": format!("binding-{i}"), "namespace": ns},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": format!("role-{i}")},
            "subjects": [
                {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": format!("user-{i}")},
                {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": format!("group-{}", i % 100)}]}));
    }
    objects.push(
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "bench-reader", "namespace": "default"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}),
    );
    objects.push(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "bench-reader", "namespace": "default"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "bench-reader"},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "bench"}]}));
    objects
}

/// Time one decision, averaged over many.
fn time_decisions(policy: &rbac::Policy, user: &str, groups: &[String]) -> Duration {
    let request = rbac::rules::Request {
        verb: "get",
        is_resource: true,
        api_group: "",
        resource: "configmaps",
        subresource: "",
        name: "bench",
        path: "",
    };
    let who = rbac::policy::User { name: user, groups };
    let rounds = 100_000u32;
    let started = Instant::now();
    for _ in 0..rounds {
        std::hint::black_box(policy.decide(&who, "default", &request).is_ok());
    }
    started.elapsed() / rounds
}

async fn serve_and_get(mode: &str, objects: &str, gets: usize) -> Result<ModeResult> {
    let dir = tempfile::tempdir()?;
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "bench-token,bench,1000,\"bench-group\"\n")?;
    let server = Server::builder()
        .storage(Storage::Memory)
        .arg(format!("--token-auth-file={}", tokens.display()))
        .arg(format!("--authorization-mode={mode}"))
        .start()
        .with_context(|| format!("starting kubext with {mode}"))?;
    let namespaces: String = (0..NAMESPACES)
        .map(|i| format!("apiVersion: v1\nkind: Namespace\nmetadata: {{name: ns-{i}}}\n---\n"))
        .collect();
    server.apply(&namespaces);
    server.apply(objects);
    server.kubectl_ok(&["create", "configmap", "bench", "--from-literal=k=v"]);
    server.wait_until_allowed(&["get", "configmaps/bench", "--as", "bench"]);
    let mut config = server.client_config().await?;
    config.auth_info = kube::config::AuthInfo {
        token: Some("bench-token".to_string().into()),
        ..Default::default()
    };
    let client = kube::Client::try_from(config)?;
    let get = || async {
        let req =
            http::Request::get("/api/v1/namespaces/default/configmaps/bench").body(Vec::new())?;
        let started = Instant::now();
        client.request_text(req).await?;
        Ok::<_, anyhow::Error>(started.elapsed())
    };
    for _ in 0..100 {
        get().await?;
    }
    let meter = Meter::start(server.pid().as_slice(), None);
    let mut samples = Vec::with_capacity(gets);
    for _ in 0..gets {
        samples.push(get().await?);
    }
    let split = meter.finish();
    let cpu_per_get = split
        .server
        .map(|cores| Duration::from_secs_f64(cores * split.wall.as_secs_f64() / gets as f64));
    Ok(ModeResult {
        latencies: Latencies::new(samples),
        cpu_per_get,
        per_sec: gets as f64 / split.wall.as_secs_f64(),
    })
}

pub async fn measure(roles: usize, gets: usize) -> Result<AuthorizationResult> {
    let objects = policy_objects(roles);
    let list = json!({"apiVersion": "v1", "kind": "List", "items": objects}).to_string();
    // In process: the policy as kubext builds it, bootstrap roles included.
    let bootstrap: Vec<Value> = rbac::bootstrap::cluster_roles()
        .into_iter()
        .chain(rbac::bootstrap::cluster_role_bindings())
        .collect();
    let mut all = rbac::policy::Objects::default();
    for o in objects.iter().chain(&bootstrap) {
        all.push(o);
    }
    let policy = rbac::Policy::build(&all);
    let authenticated = ["system:authenticated".to_string()];
    let decide_allowed = time_decisions(&policy, "bench", &authenticated);
    let decide_denied = time_decisions(&policy, "stranger", &authenticated);

    let rbac = serve_and_get("RBAC", &list, gets).await?;
    let always_allow = serve_and_get("AlwaysAllow", &list, gets).await?;
    Ok(AuthorizationResult {
        roles,
        gets,
        decide_allowed,
        decide_denied,
        rbac,
        always_allow,
    })
}

fn us(d: Option<Duration>) -> String {
    d.map_or("-".into(), |d| format!("{:.1} µs", d.as_secs_f64() * 1e6))
}

pub fn print(r: &AuthorizationResult) {
    eprintln!();
    eprintln!(
        "Authorization ({} Roles + {} RoleBindings over {NAMESPACES} namespaces, plus the bootstrap policy)   goal",
        r.roles, r.roles
    );
    eprintln!(
        "  RBAC decision, allowed / denied        {} / {}   a few µs",
        us(Some(r.decide_allowed)),
        us(Some(r.decide_denied))
    );
    for (name, m) in [("RBAC", &r.rbac), ("AlwaysAllow", &r.always_allow)] {
        eprintln!(
            "  {name:<12} {} GETs: {:.0}/s, p50 / p99 {} / {}, server CPU {} per GET",
            r.gets,
            m.per_sec,
            us(m.latencies.p50()),
            us(m.latencies.p99()),
            us(m.cpu_per_get)
        );
    }
    if let (Some(a), Some(b)) = (r.rbac.cpu_per_get, r.always_allow.cpu_per_get) {
        eprintln!(
            "  server CPU added by RBAC per GET       {:.1} µs",
            (a.as_secs_f64() - b.as_secs_f64()) * 1e6
        );
    }
}
