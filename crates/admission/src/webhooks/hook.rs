//! One webhook of a Validating- or MutatingWebhookConfiguration, compiled when
//! the configuration changes: its matcher, match conditions (CEL), failure
//! policy, timeout, AdmissionReview version, side effects, reinvocation and
//! where to call it.

use std::time::Duration;

use base64::Engine;
use cel_rules::{Expected, Expression};
use serde_json::Value;

use crate::matching::Matcher;

/// What a webhook's match conditions may name (upstream declares
/// `namespaceObject` and leaves it null for webhooks).
const VARIABLES: &[&str] = &[
    "object",
    "oldObject",
    "request",
    "namespaceObject",
    "authorizer",
];

/// Where a webhook is called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `clientConfig.url`: `host:port` to connect to, the host to verify, the path.
    Url {
        url: String,
        address: String,
        host: String,
        path: String,
    },
    /// `clientConfig.service`, resolved per call through its endpoints.
    Service {
        namespace: String,
        name: String,
        port: i64,
        path: String,
    },
}

impl Target {
    fn of(config: &Value) -> Result<Target, String> {
        if let Some(url) = config.get("url").and_then(Value::as_str) {
            let rest = url
                .strip_prefix("https://")
                .ok_or_else(|| format!("Unparsable URL: {url}"))?;
            let (authority, path) = match rest.find('/') {
                Some(i) => (&rest[..i], &rest[i..]),
                None => (rest, ""),
            };
            let (host, port) = split_host_port(authority);
            return Ok(Target::Url {
                url: url.to_string(),
                address: format!("{host}:{port}"),
                host: host.trim_matches(['[', ']']).to_string(),
                path: path.to_string(),
            });
        }
        let Some(service) = config.get("service").filter(|s| s.is_object()) else {
            return Err("webhook configuration must have either service or URL".into());
        };
        let text = |f: &str| service.get(f).and_then(Value::as_str).unwrap_or("");
        Ok(Target::Service {
            namespace: text("namespace").to_string(),
            name: text("name").to_string(),
            port: service.get("port").and_then(Value::as_i64).unwrap_or(443),
            path: text("path").to_string(),
        })
    }

    /// The URL upstream's errors quote (`https://<svc>.<ns>.svc:<port><path>`).
    pub fn url(&self) -> String {
        match self {
            Target::Url { url, .. } => url.clone(),
            Target::Service {
                namespace,
                name,
                port,
                path,
            } => format!("https://{name}.{namespace}.svc:{port}{path}"),
        }
    }

    /// The name the server's certificate must carry.
    pub fn server_name(&self) -> String {
        match self {
            Target::Url { host, .. } => host.clone(),
            Target::Service {
                namespace, name, ..
            } => format!("{name}.{namespace}.svc"),
        }
    }

    pub fn path(&self) -> &str {
        match self {
            Target::Url { path, .. } | Target::Service { path, .. } => path,
        }
    }
}

/// `host:port` with 443 when no port is given; IPv6 hosts keep their brackets.
fn split_host_port(authority: &str) -> (&str, &str) {
    if let Some(end) = authority.find(']') {
        let host = &authority[..=end];
        return (
            host,
            authority[end + 1..].strip_prefix(':').unwrap_or("443"),
        );
    }
    match authority.rsplit_once(':') {
        Some((host, port)) => (host, port),
        None => (authority, "443"),
    }
}

/// The AdmissionReview version a webhook is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReviewVersion {
    V1,
    V1beta1,
}

/// One `matchConditions` entry.
pub struct Condition {
    pub source: String,
    pub expression: Expression,
}

/// A compiled webhook.
pub struct Hook {
    /// The configuration's name.
    pub configuration: String,
    pub name: String,
    /// Position among every hook of its kind (audit annotation keys).
    pub index: usize,
    /// Its rules and selectors, or why a selector does not parse.
    pub matcher: Result<Matcher, String>,
    /// Match conditions, or why one does not compile.
    pub conditions: Result<Vec<Condition>, String>,
    pub ignore_failures: bool,
    pub timeout: Duration,
    /// `None`: no version this server speaks.
    pub review_version: Option<ReviewVersion>,
    /// `sideEffects` is None or NoneOnDryRun (the webhook may see dry runs).
    pub dry_run_safe: bool,
    pub side_effects_set: bool,
    /// `reinvocationPolicy: IfNeeded`.
    pub reinvoke: bool,
    pub target: Result<Target, String>,
    /// PEM.
    pub ca_bundle: Vec<u8>,
    /// The client configuration (the key of its connection pool).
    pub client_key: String,
}

fn text<'a>(v: &'a Value, field: &str) -> &'a str {
    v.get(field).and_then(Value::as_str).unwrap_or("")
}

impl Hook {
    /// Webhook `hook` of `configuration`, the `index`th of its kind.
    pub fn compile(configuration: &str, hook: &Value, index: usize) -> Hook {
        let client_config = hook.get("clientConfig").cloned().unwrap_or(Value::Null);
        let ca_bundle = base64::engine::general_purpose::STANDARD
            .decode(text(&client_config, "caBundle"))
            .unwrap_or_default();
        // The `rules` of a webhook are a policy's `resourceRules`.
        let mut match_resources = hook.clone();
        if let Some(m) = match_resources.as_object_mut()
            && let Some(rules) = m.remove("rules")
        {
            m.insert("resourceRules".into(), rules);
        }
        let matcher = Matcher::compile(&match_resources);
        let review_version = hook
            .get("admissionReviewVersions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find_map(|v| match v.as_str() {
                Some("v1") => Some(ReviewVersion::V1),
                Some("v1beta1") => Some(ReviewVersion::V1beta1),
                _ => None,
            });
        let side_effects = hook.get("sideEffects").and_then(Value::as_str);
        Hook {
            configuration: configuration.to_string(),
            name: text(hook, "name").to_string(),
            index,
            matcher,
            conditions: compile_conditions(hook),
            ignore_failures: text(hook, "failurePolicy") == "Ignore",
            timeout: Duration::from_secs(
                hook.get("timeoutSeconds")
                    .and_then(Value::as_u64)
                    .unwrap_or(10)
                    .clamp(1, 30),
            ),
            review_version,
            dry_run_safe: matches!(side_effects, Some("None" | "NoneOnDryRun")),
            side_effects_set: side_effects.is_some(),
            reinvoke: text(hook, "reinvocationPolicy") == "IfNeeded",
            target: Target::of(&client_config),
            ca_bundle,
            client_key: client_config.to_string(),
        }
    }
}

/// The match conditions, compiled as a stored configuration's are.
fn compile_conditions(hook: &Value) -> Result<Vec<Condition>, String> {
    hook.get("matchConditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            let source = text(c, "expression");
            let expression = Expression::compile_stored(source, VARIABLES, Expected::Bool)?;
            Ok(Condition {
                source: source.to_string(),
                expression,
            })
        })
        .collect()
}

/// Errors of a configuration's match conditions being written (upstream's
/// `webhooks[i].matchConditions[j].expression: Invalid value: …`).
pub fn condition_errors(configuration: &Value) -> apimachinery::ErrorList {
    let mut errs = apimachinery::ErrorList::new();
    let hooks = configuration.get("webhooks").and_then(Value::as_array);
    for (i, hook) in hooks.into_iter().flatten().enumerate() {
        let conditions = hook.get("matchConditions").and_then(Value::as_array);
        for (j, c) in conditions.into_iter().flatten().enumerate() {
            let source = text(c, "expression");
            if source.trim().is_empty() {
                continue;
            }
            if let Err(detail) = Expression::compile(source, VARIABLES, Expected::Bool) {
                let at = apimachinery::FieldPath::new("webhooks")
                    .index(i)
                    .child("matchConditions")
                    .index(j)
                    .child("expression");
                errs.push(apimachinery::FieldError::invalid(
                    &at,
                    Value::String(source.to_string()),
                    &detail,
                ));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn targets() {
        let url = Target::of(&json!({"url": "https://127.0.0.1:8443/validate"})).unwrap();
        assert_eq!(url.server_name(), "127.0.0.1");
        assert_eq!(url.path(), "/validate");
        assert!(matches!(&url, Target::Url { address, .. } if address == "127.0.0.1:8443"));
        let bare = Target::of(&json!({"url": "https://webhook.example.com"})).unwrap();
        assert!(
            matches!(&bare, Target::Url { address, .. } if address == "webhook.example.com:443")
        );
        let svc =
            Target::of(&json!({"service": {"name": "w", "namespace": "n", "path": "/p"}})).unwrap();
        assert_eq!(svc.url(), "https://w.n.svc:443/p");
        assert_eq!(svc.server_name(), "w.n.svc");
    }
}
