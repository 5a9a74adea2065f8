//! A ValidatingAdmissionPolicy compiled: its matcher, match conditions,
//! variables, validations and audit annotations as CEL expressions, compiled
//! once per policy generation; and its bindings.

use apimachinery::selector::LabelSelector;
use apimachinery::{ErrorList, FieldError, FieldPath};
use cel_rules::{Expected, Expression};
use serde_json::{Value, json};

use crate::matching::Matcher;

/// What the policy's expressions may name.
pub const VARIABLES: &[&str] = &[
    "object",
    "oldObject",
    "request",
    "params",
    "namespaceObject",
    "authorizer",
    "variables",
];

pub struct Validation {
    pub source: String,
    pub expression: Expression,
    pub message: String,
    pub message_expression: Option<Expression>,
    /// `Invalid` unless set.
    pub reason: String,
}

pub struct Policy {
    /// `failurePolicy: Ignore`.
    pub ignore_failures: bool,
    /// `paramKind` (`apiVersion`, `kind`).
    pub param_kind: Option<(String, String)>,
    pub matcher: Matcher,
    pub match_conditions: Vec<(String, Expression)>,
    pub variables: Vec<(String, Expression)>,
    pub validations: Vec<Validation>,
    /// `auditAnnotations`: key and value expression (its source, compiled).
    pub audit_annotations: Vec<(String, String, Expression)>,
}

/// How a binding finds its parameters.
pub enum ParamRef {
    Named {
        namespace: String,
        name: String,
    },
    Selected {
        namespace: String,
        selector: LabelSelector,
    },
}

pub struct Binding {
    pub name: String,
    pub matcher: Option<Matcher>,
    pub param_ref: Option<ParamRef>,
    /// `parameterNotFoundAction: Allow`.
    pub allow_missing_params: bool,
    pub deny: bool,
    pub warn: bool,
    pub audit: bool,
    /// The binding's `validationActions`, as written (for audit records).
    pub actions: Vec<String>,
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn list<'a>(v: &'a Value, pointer: &str) -> &'a [Value] {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Every expression of a policy compiled, and upstream's errors for those
/// that do not compile (`spec.validations[0].expression: Invalid value: …`).
pub fn compile(obj: &Value) -> Result<Policy, ErrorList> {
    let mut errs = ErrorList::new();
    let spec = FieldPath::new("spec");
    let mut compile_at = |source: &str, at: FieldPath, expected: Expected| match Expression::compile(
        source, VARIABLES, expected,
    ) {
        Ok(e) => Some(e),
        Err(detail) => {
            errs.push(FieldError::invalid(&at, json!(source), &detail));
            None
        }
    };
    let named = |pointer: &str,
                 field: &str,
                 compile_at: &mut dyn FnMut(&str, FieldPath, Expected) -> Option<Expression>,
                 expected: Expected| {
        list(obj, pointer)
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let at = spec.child(field).index(i).child("expression");
                let e = compile_at(str_at(c, "/expression"), at, expected)?;
                Some((str_at(c, "/name").to_string(), e))
            })
            .collect::<Vec<_>>()
    };
    let match_conditions = named(
        "/spec/matchConditions",
        "matchConditions",
        &mut compile_at,
        Expected::Bool,
    );
    let variables = named(
        "/spec/variables",
        "variables",
        &mut compile_at,
        Expected::Any,
    );
    let mut validations = Vec::new();
    for (i, v) in list(obj, "/spec/validations").iter().enumerate() {
        let at = spec.child("validations").index(i);
        let source = str_at(v, "/expression");
        let expression = compile_at(source, at.child("expression"), Expected::Bool);
        let message_source = str_at(v, "/messageExpression");
        let message_expression = if message_source.is_empty() {
            None
        } else {
            compile_at(
                message_source,
                at.child("messageExpression"),
                Expected::String,
            )
        };
        if let Some(expression) = expression {
            validations.push(Validation {
                source: source.trim().to_string(),
                expression,
                message: str_at(v, "/message").to_string(),
                message_expression,
                reason: str_at(v, "/reason").to_string(),
            });
        }
    }
    let mut audit_annotations = Vec::new();
    for (i, a) in list(obj, "/spec/auditAnnotations").iter().enumerate() {
        let at = spec
            .child("auditAnnotations")
            .index(i)
            .child("valueExpression");
        let source = str_at(a, "/valueExpression");
        if let Some(e) = compile_at(source, at, Expected::Any) {
            audit_annotations.push((str_at(a, "/key").to_string(), source.trim().to_string(), e));
        }
    }
    let matcher = match Matcher::compile(
        obj.pointer("/spec/matchConstraints")
            .unwrap_or(&Value::Null),
    ) {
        Ok(m) => Some(m),
        Err(e) => {
            errs.push(FieldError::invalid(
                &spec.child("matchConstraints"),
                Value::Null,
                &e,
            ));
            None
        }
    };
    let (Some(matcher), true) = (matcher, errs.is_empty()) else {
        return Err(errs);
    };
    let param_kind = obj
        .pointer("/spec/paramKind")
        .filter(|v| !v.is_null())
        .map(|pk| {
            (
                str_at(pk, "/apiVersion").to_string(),
                str_at(pk, "/kind").to_string(),
            )
        });
    Ok(Policy {
        ignore_failures: str_at(obj, "/spec/failurePolicy") == "Ignore",
        param_kind,
        matcher,
        match_conditions,
        variables,
        validations,
        audit_annotations,
    })
}

/// A binding, or why it cannot be used.
pub fn compile_binding(obj: &Value) -> Result<Binding, String> {
    let matcher = match obj.pointer("/spec/matchResources").filter(|v| !v.is_null()) {
        Some(m) => Some(Matcher::compile(m)?),
        None => None,
    };
    let param_ref = match obj.pointer("/spec/paramRef").filter(|v| !v.is_null()) {
        None => None,
        Some(p) => {
            let namespace = str_at(p, "/namespace").to_string();
            match p.get("selector").filter(|s| !s.is_null()) {
                Some(s) => Some(ParamRef::Selected {
                    namespace,
                    selector: LabelSelector::from_json(s).map_err(|e| e.to_string())?,
                }),
                None => Some(ParamRef::Named {
                    namespace,
                    name: str_at(p, "/name").to_string(),
                }),
            }
        }
    };
    let actions: Vec<&str> = list(obj, "/spec/validationActions")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    Ok(Binding {
        name: str_at(obj, "/metadata/name").to_string(),
        matcher,
        param_ref,
        allow_missing_params: str_at(obj, "/spec/paramRef/parameterNotFoundAction") == "Allow",
        deny: actions.contains(&"Deny"),
        warn: actions.contains(&"Warn"),
        audit: actions.contains(&"Audit"),
        actions: actions.iter().map(|a| a.to_string()).collect(),
    })
}
