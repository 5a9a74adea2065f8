//! A ValidatingAdmissionPolicy compiled: its matcher, match conditions,
//! variables, validations and audit annotations as CEL expressions, compiled
//! once per policy generation; and its bindings.

use apimachinery::meta;
use apimachinery::selector::LabelSelector;
use apimachinery::{ErrorList, FieldError, FieldPath};
use cel_rules::{Expected, Expression, ObjectTypes};
use serde_json::{Value, json};

use crate::matching::{Matcher, SelectorError};

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

/// What validating and mutating policies share: failure policy, parameters,
/// matching, match conditions and variables.
pub struct Common {
    /// `failurePolicy: Ignore`.
    pub ignore_failures: bool,
    /// `paramKind` (`apiVersion`, `kind`).
    pub param_kind: Option<(String, String)>,
    pub matcher: Matcher,
    pub match_conditions: Vec<(String, Expression)>,
    pub variables: Vec<(String, Expression)>,
}

/// A ValidatingAdmissionPolicy.
pub struct Policy {
    pub common: Common,
    pub validations: Vec<Validation>,
    /// `auditAnnotations`: key and value expression (its source, compiled).
    pub audit_annotations: Vec<(String, String, Expression)>,
}

/// How a mutation changes the object.
pub enum PatchType {
    /// Merged as server-side apply merges.
    ApplyConfiguration,
    JsonPatch,
}

pub struct Mutation {
    pub patch_type: PatchType,
    pub source: String,
    pub expression: Expression,
}

/// A MutatingAdmissionPolicy.
pub struct MutatingPolicy {
    pub common: Common,
    /// `reinvocationPolicy: IfNeeded`.
    pub reinvoke: bool,
    pub mutations: Vec<Mutation>,
    /// The object types its mutations construct.
    pub types: ObjectTypes,
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

/// Compiles expressions, collecting upstream's errors for those that do not
/// compile (`spec.validations[0].expression: Invalid value: …`).
struct Compiler {
    errs: ErrorList,
    /// Compiling stored policies (to serve them), not ones being written.
    stored: bool,
}

impl Compiler {
    fn compile(&mut self, source: &str, at: FieldPath, expected: Expected) -> Option<Expression> {
        let compiled = if self.stored {
            Expression::compile_stored(source, VARIABLES, expected)
        } else {
            Expression::compile(source, VARIABLES, expected)
        };
        match compiled {
            Ok(e) => Some(e),
            Err(detail) => {
                self.errs
                    .push(FieldError::invalid(&at, json!(source), &detail.to_string()));
                None
            }
        }
    }

    /// `matchConditions` or `variables`: named expressions.
    fn named(&mut self, obj: &Value, field: &str, expected: Expected) -> Vec<(String, Expression)> {
        let at = FieldPath::new("spec").child(field);
        list(obj, &format!("/spec/{field}"))
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let e = self.compile(
                    str_at(c, "/expression"),
                    at.index(i).child("expression"),
                    expected,
                )?;
                Some((str_at(c, "/name").to_string(), e))
            })
            .collect()
    }

    fn common(&mut self, obj: &Value) -> Option<Common> {
        let match_conditions = self.named(obj, "matchConditions", Expected::Bool);
        let variables = self.named(obj, "variables", Expected::Any);
        let constraints = obj
            .pointer("/spec/matchConstraints")
            .unwrap_or(&Value::Null);
        let matcher = match Matcher::compile(constraints) {
            Ok(m) => m,
            Err(e) => {
                let at = FieldPath::new("spec").child("matchConstraints");
                self.errs
                    .push(FieldError::invalid(&at, Value::Null, &e.to_string()));
                return None;
            }
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
        Some(Common {
            ignore_failures: str_at(obj, "/spec/failurePolicy") == "Ignore",
            param_kind,
            matcher,
            match_conditions,
            variables,
        })
    }
}

/// A ValidatingAdmissionPolicy compiled, or upstream's errors; `stored`: one
/// already stored (to serve), else one being written.
pub fn compile(obj: &Value, stored: bool) -> Result<Policy, ErrorList> {
    let mut c = Compiler {
        errs: ErrorList::new(),
        stored,
    };
    let spec = FieldPath::new("spec");
    let common = c.common(obj);
    let mut validations = Vec::new();
    for (i, v) in list(obj, "/spec/validations").iter().enumerate() {
        let at = spec.child("validations").index(i);
        let source = str_at(v, "/expression");
        let expression = c.compile(source, at.child("expression"), Expected::Bool);
        let message_source = str_at(v, "/messageExpression");
        let message_expression = if message_source.is_empty() {
            None
        } else {
            c.compile(
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
        if let Some(e) = c.compile(source, at, Expected::Any) {
            audit_annotations.push((str_at(a, "/key").to_string(), source.trim().to_string(), e));
        }
    }
    match common {
        Some(common) if c.errs.is_empty() => Ok(Policy {
            common,
            validations,
            audit_annotations,
        }),
        _ => Err(c.errs),
    }
}

/// A MutatingAdmissionPolicy compiled, or upstream's errors (`stored` as
/// for [`compile`]).
pub fn compile_mutating(obj: &Value, stored: bool) -> Result<MutatingPolicy, ErrorList> {
    let mut c = Compiler {
        errs: ErrorList::new(),
        stored,
    };
    let spec = FieldPath::new("spec");
    let common = c.common(obj);
    let mut mutations = Vec::new();
    let mut sources = Vec::new();
    for (i, m) in list(obj, "/spec/mutations").iter().enumerate() {
        let (patch_type, field) = match str_at(m, "/patchType") {
            "JSONPatch" => (PatchType::JsonPatch, "jsonPatch"),
            _ => (PatchType::ApplyConfiguration, "applyConfiguration"),
        };
        let source = str_at(m, &format!("/{field}/expression"));
        let at = spec
            .child("mutations")
            .index(i)
            .child(field)
            .child("expression");
        if let Some(expression) = c.compile(source, at, Expected::Any) {
            sources.push(source);
            mutations.push(Mutation {
                patch_type,
                source: source.trim().to_string(),
                expression,
            });
        }
    }
    match common {
        Some(common) if c.errs.is_empty() => Ok(MutatingPolicy {
            common,
            reinvoke: str_at(obj, "/spec/reinvocationPolicy") == "IfNeeded",
            types: ObjectTypes::for_expressions(&sources),
            mutations,
        }),
        _ => Err(c.errs),
    }
}

/// Why a binding cannot be used (the detail of upstream's `failed to
/// configure binding: …`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BindingError {
    /// A selector of `matchResources`.
    #[error(transparent)]
    MatchResources(#[from] SelectorError),
    /// `paramRef.selector`.
    #[error("{0}")]
    ParamSelector(apimachinery::selector::SelectorError),
}

/// A binding, or why it cannot be used.
pub fn compile_binding(obj: &Value) -> Result<Binding, BindingError> {
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
                    selector: LabelSelector::from_json(s).map_err(BindingError::ParamSelector)?,
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
        name: meta::name(obj).to_string(),
        matcher,
        param_ref,
        allow_missing_params: str_at(obj, "/spec/paramRef/parameterNotFoundAction") == "Allow",
        deny: actions.contains(&"Deny"),
        warn: actions.contains(&"Warn"),
        audit: actions.contains(&"Audit"),
        actions: actions.iter().map(|a| a.to_string()).collect(),
    })
}
