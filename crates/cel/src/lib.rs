//! CEL for CRD validation rules (`x-kubernetes-validations`), on the `cel`
//! crate: every rule of a schema compiled once (`RuleSet::compile`, per CRD
//! version), evaluated per write with `self` (and `oldSelf` for transition
//! rules), reported as kube-apiserver 1.33 reports them — the node's path (or
//! the rule's `fieldPath`), the schema type as the value, `message`,
//! `messageExpression` or `failed rule: <rule>`, `reason`.
//!
//! Partial (issue 13): no type checking against the schema, no cost
//! estimation or runtime cost limit, and none of Kubernetes' CEL libraries
//! beyond the standard library and string extensions.
//!
//! Invariant: pure; compiled programs are shared by `Arc` and never rebuilt
//! per request.

use std::collections::HashMap;
use std::sync::Arc;

use apimachinery::{ErrorList, FieldError, FieldPath};
use cel::objects::{Key, Map, Value as CelValue};
use cel::{Context, Env, Program};
use schema::structural::{AdditionalProperties, Structural, ValidationRule};
use schema::{RuleContext, RuleEvaluator};
use serde_json::{Value, json};

/// One compiled rule.
struct Compiled {
    program: Result<Program, String>,
    message_expression: Option<Program>,
    uses_old_self: bool,
}

/// Every rule of a schema, compiled.
pub struct RuleSet {
    env: Arc<Env>,
    /// By rule source.
    rules: HashMap<String, Compiled>,
}

/// The environment rules compile and run in: CEL's standard library and the
/// string extensions (kube-apiserver's base environment has both).
fn environment() -> Arc<Env> {
    let mut env = Env::stdlib();
    // Only fails on a duplicate declaration, which the standard library has not.
    let _ = env.add_extension(cel::extensions::strings);
    Arc::new(env)
}

impl RuleSet {
    /// Compile every rule of `schema`; `None` when it has none.
    pub fn compile(schema: &Structural) -> Option<RuleSet> {
        if !schema::has_validation_rules(schema) {
            return None;
        }
        let env = environment();
        let mut rules = HashMap::new();
        collect(schema, &mut |rule: &ValidationRule| {
            rules.entry(rule.rule.clone()).or_insert_with(|| {
                let program = env.compile(&rule.rule).map_err(|e| e.to_string());
                let uses_old_self = program
                    .as_ref()
                    .is_ok_and(|p| p.references().has_variable("oldSelf"));
                let message_expression = (!rule.message_expression.is_empty())
                    .then(|| env.compile(&rule.message_expression).ok())
                    .flatten();
                Compiled {
                    program,
                    message_expression,
                    uses_old_self,
                }
            });
        });
        Some(RuleSet { env, rules })
    }
}

/// Whether `rule` compiles (the CRD write's check; syntax only: there is no
/// type checker yet).
pub fn check(rule: &str) -> Result<(), String> {
    environment()
        .compile(rule)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

fn collect(s: &Structural, f: &mut dyn FnMut(&ValidationRule)) {
    for rule in &s.extensions.validations {
        f(rule);
    }
    for p in s.properties.values() {
        collect(p, f);
    }
    if let Some(items) = &s.items {
        collect(items, f);
    }
    if let Some(AdditionalProperties::Schema(ap)) = &s.additional_properties {
        collect(ap, f);
    }
}

/// A JSON value as CEL sees it under `schema`: integers are `int`, numbers
/// `double` (also when integral), objects maps; at the resource root only
/// `apiVersion`, `kind`, `metadata.name` and `metadata.generateName` are visible.
fn to_cel(v: &Value, s: Option<&Structural>, resource_root: bool) -> CelValue {
    match v {
        Value::Null => CelValue::Null,
        Value::Bool(b) => CelValue::Bool(*b),
        Value::Number(n) => {
            let number = s.is_some_and(|s| s.type_ == "number");
            match n.as_i64() {
                Some(i) if !number => CelValue::Int(i),
                _ => CelValue::Float(n.as_f64().unwrap_or(f64::NAN)),
            }
        }
        Value::String(st) => CelValue::String(Arc::new(st.clone())),
        Value::Array(a) => {
            let items = s.and_then(|s| s.items.as_deref());
            CelValue::List(Arc::new(
                a.iter().map(|i| to_cel(i, items, false)).collect(),
            ))
        }
        Value::Object(o) => {
            let map: HashMap<Key, CelValue> = o
                .iter()
                .filter(|(k, _)| !resource_root || k.as_str() != "metadata")
                .map(|(k, val)| {
                    let child = s.and_then(|s| s.property(k));
                    (Key::String(Arc::new(k.clone())), to_cel(val, child, false))
                })
                .collect();
            let mut map = map;
            if resource_root && let Some(md) = o.get("metadata").and_then(Value::as_object) {
                let visible: HashMap<Key, CelValue> = ["name", "generateName"]
                    .iter()
                    .filter_map(|k| {
                        md.get(*k).map(|v| {
                            (
                                Key::String(Arc::new((*k).to_string())),
                                to_cel(v, None, false),
                            )
                        })
                    })
                    .collect();
                map.insert(
                    Key::String(Arc::new("metadata".into())),
                    CelValue::Map(Map {
                        map: Arc::new(visible),
                    }),
                );
            }
            CelValue::Map(Map { map: Arc::new(map) })
        }
    }
}

/// The path a rule's errors are reported at: the node's, `<nil>` at the root
/// (upstream prints a nil path so).
fn node_path(path: &FieldPath) -> FieldPath {
    if path.to_string().is_empty() {
        FieldPath::new("<nil>")
    } else {
        path.clone()
    }
}

/// The rule's `fieldPath` under `path` (`.spec.x` → `spec.x`).
fn with_field_path(path: &FieldPath, field_path: &str) -> FieldPath {
    let relative = field_path.trim_start_matches('.');
    if relative.is_empty() {
        return node_path(path);
    }
    if path.to_string().is_empty() {
        FieldPath::new(relative)
    } else {
        path.child(relative)
    }
}

/// `message`, or `failed rule: <rule>`.
fn message_or_default(rule: &ValidationRule) -> String {
    let message = rule.message.trim();
    if message.is_empty() {
        format!("failed rule: {}", rule.rule.trim())
    } else {
        message.to_string()
    }
}

/// `message` if set, else the rule (what runtime errors name).
fn rule_error_string(rule: &ValidationRule) -> String {
    let message = rule.message.trim();
    if message.is_empty() {
        rule.rule.trim().to_string()
    } else {
        message.to_string()
    }
}

impl RuleEvaluator for RuleSet {
    fn evaluate(&self, ctx: &RuleContext<'_>) -> ErrorList {
        let rule = ctx.rule;
        let Some(compiled) = self.rules.get(&rule.rule) else {
            return ErrorList::new();
        };
        let schema_type = json!(ctx.schema.type_);
        let path = node_path(ctx.path);
        let program = match &compiled.program {
            Ok(p) => p,
            Err(e) => {
                return vec![FieldError::invalid(
                    &path,
                    schema_type,
                    &format!("rule compile error: {e}"),
                )];
            }
        };
        let optional_old_self = rule.optional_old_self.unwrap_or(false);
        if compiled.uses_old_self && ctx.old_self.is_none() && !optional_old_self {
            return ErrorList::new();
        }
        // Ratcheting: an unchanged node's failing rules that do not look at
        // oldSelf are not errors.
        if ctx.unchanged && !compiled.uses_old_self {
            return ErrorList::new();
        }
        let resource_root = ctx.path.to_string().is_empty();
        let mut activation = Context::with_env(self.env.clone());
        activation.add_variable_from_value(
            "self",
            to_cel(ctx.self_value, Some(ctx.schema), resource_root),
        );
        if let Some(old) = ctx.old_self {
            activation
                .add_variable_from_value("oldSelf", to_cel(old, Some(ctx.schema), resource_root));
        }
        match program.execute(&activation) {
            Ok(CelValue::Bool(true)) => ErrorList::new(),
            Ok(CelValue::Bool(false)) => {
                let detail = compiled
                    .message_expression
                    .as_ref()
                    .and_then(|m| match m.execute(&activation) {
                        Ok(CelValue::String(s)) if !s.trim().is_empty() && !s.contains('\n') => {
                            Some(s.trim().to_string())
                        }
                        _ => None,
                    })
                    .unwrap_or_else(|| message_or_default(rule));
                let at = with_field_path(ctx.path, &rule.field_path);
                vec![match rule.reason.as_str() {
                    "FieldValueForbidden" => FieldError::forbidden(&at, &detail),
                    "FieldValueRequired" => FieldError::required(&at, &detail),
                    "FieldValueDuplicate" => FieldError::duplicate(&at, schema_type),
                    _ => FieldError::invalid(&at, schema_type, &detail),
                }]
            }
            Ok(other) => vec![FieldError::invalid(
                &path,
                schema_type,
                &format!(
                    "rule did not evaluate to a bool ({other:?}) evaluating rule: {}",
                    rule_error_string(rule)
                ),
            )],
            Err(e) => vec![FieldError::invalid(
                &path,
                schema_type,
                &format!("{e} evaluating rule: {}", rule_error_string(rule)),
            )],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(v: Value) -> Structural {
        Structural::compile(&v).unwrap()
    }

    fn errors(s: &Structural, new: Value, old: Option<Value>) -> Vec<String> {
        let rules = RuleSet::compile(s).unwrap();
        schema::evaluate_rules(&new, old.as_ref(), s, &FieldPath::root(), &rules)
            .iter()
            .map(|e| e.to_string())
            .collect()
    }

    #[test]
    fn failed_rules_read_like_upstreams() {
        let s = schema(
            json!({"type": "object", "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.minReplicas <= self.maxReplicas", "message": "minReplicas must not exceed maxReplicas"},
                {"rule": "self.maxReplicas < 100"},
                {"rule": "self.minReplicas > 0", "fieldPath": ".minReplicas", "reason": "FieldValueForbidden"},
                {"rule": "self.maxReplicas != 42", "messageExpression": "'maxReplicas may not be ' + string(self.maxReplicas)"}],
            "properties": {"minReplicas": {"type": "integer"}, "maxReplicas": {"type": "integer"}}}}}),
        );
        assert!(
            errors(
                &s,
                json!({"spec": {"minReplicas": 1, "maxReplicas": 3}}),
                None
            )
            .is_empty()
        );
        assert_eq!(
            errors(
                &s,
                json!({"spec": {"minReplicas": 0, "maxReplicas": 200}}),
                None
            ),
            [
                "spec: Invalid value: \"object\": failed rule: self.maxReplicas < 100",
                "spec.minReplicas: Forbidden: failed rule: self.minReplicas > 0",
            ]
        );
        assert_eq!(
            errors(
                &s,
                json!({"spec": {"minReplicas": 50, "maxReplicas": 42}}),
                None
            ),
            [
                "spec: Invalid value: \"object\": minReplicas must not exceed maxReplicas",
                "spec: Invalid value: \"object\": maxReplicas may not be 42",
            ]
        );
    }

    #[test]
    fn transition_rules_run_on_updates_only() {
        let s = schema(
            json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"name": {"type": "string",
                "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "name is immutable"}]}}}}}),
        );
        assert!(errors(&s, json!({"spec": {"name": "a"}}), None).is_empty());
        assert!(
            errors(
                &s,
                json!({"spec": {"name": "a"}}),
                Some(json!({"spec": {"name": "a"}}))
            )
            .is_empty()
        );
        assert_eq!(
            errors(
                &s,
                json!({"spec": {"name": "b"}}),
                Some(json!({"spec": {"name": "a"}}))
            ),
            ["spec.name: Invalid value: \"string\": name is immutable"]
        );
    }

    #[test]
    fn root_rules_see_name_but_not_other_metadata() {
        let s = schema(json!({"type": "object", "x-kubernetes-validations": [
            {"rule": "self.metadata.name.startsWith('my-')"},
            {"rule": "!has(self.metadata.labels)"}]}));
        assert_eq!(
            errors(
                &s,
                json!({"metadata": {"name": "other", "labels": {"a": "b"}}}),
                None
            ),
            ["<nil>: Invalid value: \"object\": failed rule: self.metadata.name.startsWith('my-')"]
        );
    }

    #[test]
    fn runtime_errors_name_the_rule() {
        let s = schema(
            json!({"type": "object", "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": [{"rule": "self.missing == 1", "message": "missing must be 1"}],
            "properties": {"n": {"type": "integer"}}}}}),
        );
        let errs = errors(&s, json!({"spec": {"n": 1}}), None);
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0].starts_with("spec: Invalid value: \"object\": "),
            "{errs:?}"
        );
        assert!(
            errs[0].ends_with(" evaluating rule: missing must be 1"),
            "{errs:?}"
        );
    }

    #[test]
    fn syntax_errors_are_compile_errors() {
        assert!(check("self.a ==== 1").is_err());
        assert!(check("self.a == 1 && size(self.b) < 3").is_ok());
    }
}
