//! One webhook of a Validating- or MutatingWebhookConfiguration, compiled when
//! the configuration changes: its matcher, match conditions (CEL), failure
//! policy, timeout, AdmissionReview version, side effects, reinvocation and
//! its client configuration.

use std::time::Duration;

use cel_rules::{CompileError, Expected, Expression};
use serde_json::Value;

use crate::matching::{Matcher, SelectorError};
use webhook::ReviewVersion;

/// What a webhook's match conditions may name (upstream declares
/// `namespaceObject` and leaves it null for webhooks).
const VARIABLES: &[&str] = &[
    "object",
    "oldObject",
    "request",
    "namespaceObject",
    "authorizer",
];

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
    pub matcher: Result<Matcher, SelectorError>,
    /// Match conditions, or why one does not compile.
    pub conditions: Result<Vec<Condition>, CompileError>,
    pub ignore_failures: bool,
    pub timeout: Duration,
    /// `None`: no version this server speaks.
    pub review_version: Option<ReviewVersion>,
    /// `sideEffects` is None or NoneOnDryRun (the webhook may see dry runs).
    pub dry_run_safe: bool,
    pub side_effects_set: bool,
    /// `reinvocationPolicy: IfNeeded`.
    pub reinvoke: bool,
    pub client: webhook::ClientConfig,
}

fn text<'a>(v: &'a Value, field: &str) -> &'a str {
    v.get(field).and_then(Value::as_str).unwrap_or("")
}

impl Hook {
    /// Webhook `hook` of `configuration`, the `index`th of its kind.
    pub fn compile(configuration: &str, hook: &Value, index: usize) -> Hook {
        // The `rules` of a webhook are a policy's `resourceRules`.
        let mut match_resources = hook.clone();
        if let Some(m) = match_resources.as_object_mut()
            && let Some(rules) = m.remove("rules")
        {
            m.insert("resourceRules".into(), rules);
        }
        let matcher = Matcher::compile(&match_resources);
        let review_version = ReviewVersion::first_known(hook.get("admissionReviewVersions"));
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
            client: webhook::ClientConfig::of(hook.get("clientConfig").unwrap_or(&Value::Null)),
        }
    }
}

/// The match conditions, compiled as a stored configuration's are.
fn compile_conditions(hook: &Value) -> Result<Vec<Condition>, CompileError> {
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
                    &detail.to_string(),
                ));
            }
        }
    }
    errs
}
