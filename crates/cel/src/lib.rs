//! CEL as kube-apiserver 1.37 has it, on the `cel` crate. For CRD validation
//! rules (`x-kubernetes-validations`): every rule of a schema type-checked
//! and cost-estimated when the CRD is written (`compile_errors`, in 1.36's
//! environment unless the rule was already stored: `Preexisting`), compiled
//! once per CRD version (`RuleSet::compile`, in 1.37's), evaluated per write
//! with `self` (and `oldSelf` for transition rules) under the runtime cost
//! limits (`RuleSet::budgeted`), reported as upstream reports them — the
//! node's path (or the rule's `fieldPath`), the value (left out for objects
//! and arrays), `message`, `messageExpression` or `failed rule: <rule>`,
//! `reason`. For admission policies: free-standing `Expression`s over JSON
//! values, and the object types mutations construct (`ObjectTypes`).
//!
//! Runtime costs are estimates (the `cel` crate has no cost hooks): an
//! evaluation is charged its static estimate, or its estimate from the actual
//! value when that would break a limit.
//!
//! Invariant: pure; compiled programs are shared by `Arc` and never rebuilt
//! per request.

mod check;
mod cost;
mod decls;
mod direct;
mod errors;
mod expression;
pub mod library;
mod list_types;
mod objects;
mod types;
mod values;

use std::sync::{Arc, LazyLock};

use apimachinery::{ErrorList, FieldError, FieldPath};
use cel::objects::Value as CelValue;
use cel::{Context, Env, Program};
use schema::structural::{AdditionalProperties, Structural, ValidationRule};
use schema::{NodeContext, RuleContext, RuleEvaluator};
use serde_json::json;

pub use crate::expression::{
    Bindings, CompileError, Evaluated, EvaluationError, Expected, Expression, TypeCheckIssues,
};
pub use crate::library::authz::{Authorize, AuthzCheck, AuthzDecision};
pub use crate::objects::ObjectTypes;

use crate::cost::Limits;
use crate::decls::Declarations;
use crate::types::Type;

/// One compiled rule.
struct Compiled {
    program: Result<Program, String>,
    /// The rule for direct evaluation, when it is in `direct`'s subset.
    direct: Option<direct::Rule>,
    message_expression: Option<Program>,
    uses_old_self: bool,
    /// The static estimate (the most any admissible value can cost).
    static_cost: u64,
}

/// Every rule of a schema, compiled.
pub struct RuleSet {
    env: Arc<Env>,
    /// By rule source (looked up per rule evaluation: a fast hash).
    rules: foldhash::HashMap<String, Compiled>,
}

/// The environment rules run in: CEL's standard library, the string
/// extensions and Kubernetes' libraries (kube-apiserver's base environment).
fn environment() -> Arc<Env> {
    static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| Arc::new(build_environment()));
    ENV.clone()
}

/// A new base environment (object types are added to one for mutations).
fn build_environment() -> Env {
    let mut env = Env::stdlib();
    // Only fails on a duplicate declaration, which the standard library has not.
    let _ = env.add_extension(cel::extensions::strings);
    library::register(&mut env);
    env
}

/// The checker's view of the same environment (for stored expressions:
/// serving them; 1.37's environment).
fn declarations() -> &'static Declarations {
    static DECLARATIONS: LazyLock<Declarations> = LazyLock::new(Declarations::kubernetes);
    &DECLARATIONS
}

/// The checker's view for expressions being written (a CRD or a policy):
/// 1.36's environment.
fn new_declarations() -> &'static Declarations {
    static DECLARATIONS: LazyLock<Declarations> = LazyLock::new(Declarations::for_new_expressions);
    &DECLARATIONS
}

/// A rule compiled and type-checked against its node's type, or why not (the
/// detail upstream puts in the CRD's error).
struct Checked {
    program: Result<Program, String>,
    message_expression: Result<Option<Program>, String>,
    /// Estimated maximum costs of the rule and of its message expression.
    cost: u64,
    message_cost: u64,
}

/// Parses and checks one expression: the program, its type and its
/// estimated cost, or upstream's `<what>compilation failed: …` detail.
fn compile_expression(
    env: &Env,
    decls: &Declarations,
    source: &str,
    variables: &[(&str, Type)],
    limits: &Limits,
    what: &str,
) -> Result<(Program, Type, u64), String> {
    let program = env.compile(source).map_err(|e| {
        format!(
            "{what}compilation failed: {}",
            check::parse_errors(&e, source)
        )
    })?;
    let checked = check::check(
        program.expression(),
        program.source_info(),
        variables,
        decls,
    )
    .map_err(|issues| format!("{what}compilation failed: {issues}"))?;
    let cost = cost::estimate(program.expression(), &checked.types, limits);
    Ok((program, checked.result, cost))
}

fn compile_rule(
    env: &Env,
    decls: &Declarations,
    rule: &ValidationRule,
    self_type: &Type,
    limits: &Limits,
) -> Checked {
    compile_rule_in(env, [decls, decls], rule, self_type, limits)
}

/// `rule` compiled with the declarations `[of the rule, of its message
/// expression]`.
fn compile_rule_in(
    env: &Env,
    [decls, message_decls]: [&Declarations; 2],
    rule: &ValidationRule,
    self_type: &Type,
    limits: &Limits,
) -> Checked {
    let old_self_type = if rule.optional_old_self.unwrap_or(false) {
        Type::optional(self_type.clone())
    } else {
        self_type.clone()
    };
    let variables = [("self", self_type.clone()), ("oldSelf", old_self_type)];
    let program = compile_expression(env, decls, &rule.rule, &variables, limits, "").and_then(
        |(program, result, cost)| match result {
            Type::Bool => Ok((program, cost)),
            _ => Err("cel expression must evaluate to a bool".to_string()),
        },
    );
    // As upstream, a message expression is compiled only for a rule that
    // compiles.
    let message_expression = if rule.message_expression.is_empty() || program.is_err() {
        Ok(None)
    } else {
        compile_expression(
            env,
            message_decls,
            &rule.message_expression,
            &variables,
            limits,
            "messageExpression ",
        )
        .and_then(|(program, result, cost)| match result {
            Type::String => Ok(Some((program, cost))),
            _ => Err("messageExpression must evaluate to a string".to_string()),
        })
    };
    let cost = program.as_ref().map_or(0, |(_, c)| *c);
    let message_cost = match &message_expression {
        Ok(Some((_, c))) => *c,
        _ => 0,
    };
    let program = program.map(|(p, _)| p);
    let message_expression = message_expression.map(|m| m.map(|(p, _)| p));
    Checked {
        program,
        message_expression,
        cost,
        message_cost,
    }
}

impl RuleSet {
    /// Compile every rule of `schema`; `None` when it has none.
    pub fn compile(schema: &Structural) -> Option<RuleSet> {
        if !schema::has_validation_rules(schema) {
            return None;
        }
        let env = environment();
        let mut rules = foldhash::HashMap::default();
        walk(
            schema,
            true,
            &FieldPath::root(),
            Some(1),
            &mut |node, resource_root, self_type, _, _| {
                let limits = Limits::of_node(node, resource_root);
                for rule in &node.extensions.validations {
                    rules.entry(rule.rule.clone()).or_insert_with(|| {
                        let checked = compile_rule(&env, declarations(), rule, self_type, &limits);
                        let uses_old_self = checked
                            .program
                            .as_ref()
                            .is_ok_and(|p| p.references().has_variable("oldSelf"));
                        let direct = checked
                            .program
                            .as_ref()
                            .ok()
                            .and_then(|p| direct::compile(p.expression(), declarations()));
                        Compiled {
                            program: checked.program,
                            direct,
                            message_expression: checked.message_expression.ok().flatten(),
                            uses_old_self,
                            static_cost: checked.cost,
                        }
                    });
                }
            },
        );
        Some(RuleSet { env, rules })
    }
}

/// The expressions of a CRD being updated that its stored version already
/// had (`rule`s and `messageExpression`s, anywhere in its schemas): upstream
/// compiles those in the environment of stored expressions, so that an
/// update keeping them is not refused for what the environment of new
/// expressions lacks (ratcheting).
#[derive(Debug, Default, Clone)]
pub struct Preexisting {
    rules: std::collections::HashSet<String>,
    message_expressions: std::collections::HashSet<String>,
}

impl Preexisting {
    /// The expressions of a stored CRD (`spec.validation` and every
    /// version's schema).
    pub fn of_crd(crd: &serde_json::Value) -> Preexisting {
        let mut found = Preexisting::default();
        if let Some(s) = crd.pointer("/spec/validation/openAPIV3Schema") {
            found.collect(s);
        }
        let versions = crd.pointer("/spec/versions").and_then(|v| v.as_array());
        for v in versions.into_iter().flatten() {
            if let Some(s) = v.pointer("/schema/openAPIV3Schema") {
                found.collect(s);
            }
        }
        found
    }

    /// The rules of `schema` and of every schema nested in it.
    fn collect(&mut self, schema: &serde_json::Value) {
        use serde_json::Value;
        let Some(object) = schema.as_object() else {
            return;
        };
        let rules = object
            .get("x-kubernetes-validations")
            .and_then(Value::as_array);
        for rule in rules.into_iter().flatten() {
            let text = |k: &str| rule.get(k).and_then(Value::as_str).unwrap_or("");
            self.rules.insert(text("rule").to_string());
            if !text("messageExpression").is_empty() {
                self.message_expressions
                    .insert(text("messageExpression").to_string());
            }
        }
        for key in [
            "properties",
            "patternProperties",
            "definitions",
            "dependencies",
        ] {
            if let Some(Value::Object(m)) = object.get(key) {
                m.values().for_each(|s| self.collect(s));
            }
        }
        for key in ["items", "additionalProperties", "additionalItems", "not"] {
            match object.get(key) {
                Some(Value::Array(a)) => a.iter().for_each(|s| self.collect(s)),
                Some(s) => self.collect(s),
                None => {}
            }
        }
        for key in ["allOf", "anyOf", "oneOf"] {
            if let Some(Value::Array(a)) = object.get(key) {
                a.iter().for_each(|s| self.collect(s));
            }
        }
    }

    /// The declarations for a rule and for its message expression.
    fn declarations(&self, rule: &ValidationRule) -> [&'static Declarations; 2] {
        let pick = |stored: bool| {
            if stored {
                declarations()
            } else {
                new_declarations()
            }
        };
        [
            pick(self.rules.contains(&rule.rule)),
            pick(self.message_expressions.contains(&rule.message_expression)),
        ]
    }
}

/// The errors of every rule of `schema` that does not compile, type-check or
/// fit its cost budget, at `schema_path`
/// (`spec.versions[0].schema.openAPIV3Schema`) as upstream reports them when
/// a CRD is created.
pub fn compile_errors(schema: &Structural, schema_path: &FieldPath) -> ErrorList {
    compile_errors_updating(schema, schema_path, &Preexisting::default())
}

/// `compile_errors` for a CRD update whose stored version had `preexisting`.
pub fn compile_errors_updating(
    schema: &Structural,
    schema_path: &FieldPath,
    preexisting: &Preexisting,
) -> ErrorList {
    let env = environment();
    let mut errs = ErrorList::new();
    // (cost, where) of every expression, for the CRD's total.
    let mut costs: Vec<(u64, FieldPath)> = Vec::new();
    walk(
        schema,
        true,
        schema_path,
        Some(1),
        &mut |node, resource_root, self_type, path, cardinality| {
            let limits = Limits::of_node(node, resource_root);
            let cardinality = cardinality.unwrap_or_else(|| limits.max_cardinality());
            for (i, rule) in node.extensions.validations.iter().enumerate() {
                if rule.rule.trim().is_empty() {
                    continue;
                }
                let decls = preexisting.declarations(rule);
                let checked = compile_rule_in(&env, decls, rule, self_type, &limits);
                let at = path.child("x-kubernetes-validations").index(i);
                let rule_cost = checked.cost.saturating_mul(cardinality);
                if rule_cost > cost::PER_EXPRESSION_LIMIT {
                    let message = cost::exceeds_message(
                        "estimated rule cost",
                        rule_cost,
                        cost::PER_EXPRESSION_LIMIT,
                    );
                    errs.push(FieldError::forbidden(&at.child("rule"), &message));
                }
                costs.push((rule_cost, at.child("rule")));
                if let Err(detail) = checked.program {
                    errs.push(FieldError::invalid_go(
                        &at.child("rule"),
                        &go_rule(rule),
                        &detail,
                    ));
                }
                match checked.message_expression {
                    Err(detail) => errs.push(FieldError::invalid_go(
                        &at.child("messageExpression"),
                        &go_rule(rule),
                        &detail,
                    )),
                    Ok(Some(_)) => {
                        if checked.message_cost > cost::PER_EXPRESSION_LIMIT {
                            let message = cost::exceeds_message(
                                "estimated messageExpression cost",
                                checked.message_cost,
                                cost::PER_EXPRESSION_LIMIT,
                            );
                            errs.push(FieldError::forbidden(
                                &at.child("messageExpression"),
                                &message,
                            ));
                        }
                        costs.push((checked.message_cost, at.child("messageExpression")));
                    }
                    Ok(None) => {}
                }
            }
        },
    );
    let total = costs
        .iter()
        .fold(0u64, |sum, (c, _)| sum.saturating_add(*c));
    if total > cost::PER_CRD_LIMIT {
        // The most expensive four of those that make at least 1% of the
        // limit.
        costs.retain(|(cost, _)| *cost >= cost::PER_CRD_LIMIT / 100);
        costs.sort_by_key(|(cost, _)| std::cmp::Reverse(*cost));
        for (_, at) in costs.iter().take(4) {
            errs.push(FieldError::forbidden(
                at,
                "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
            ));
        }
        let message = cost::exceeds_message(
            "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
            total,
            cost::PER_CRD_LIMIT,
        );
        errs.push(FieldError::forbidden(schema_path, &message));
    }
    errs
}

/// A rule as kube-apiserver 1.37 prints upstream's
/// `apiextensions.ValidationRule` in errors: Go's JSON of the struct (field
/// names as members, absent pointers `null`).
fn go_rule(rule: &ValidationRule) -> String {
    let optional = |s: &str| (!s.is_empty()).then(|| s.to_string());
    let members = [
        ("Rule", json!(rule.rule)),
        ("Message", json!(rule.message)),
        ("MessageExpression", json!(rule.message_expression)),
        ("Reason", json!(optional(&rule.reason))),
        ("FieldPath", json!(rule.field_path)),
        ("OptionalOldSelf", json!(rule.optional_old_self)),
    ];
    let members: Vec<String> = members
        .iter()
        .map(|(name, value)| format!("\"{name}\":{}", go_json(value)))
        .collect();
    format!("{{{}}}", members.join(","))
}

/// `v` as Go's `json.Marshal` writes it: `<`, `>`, `&`, U+2028 and U+2029
/// escaped.
fn go_json(v: &serde_json::Value) -> String {
    let mut out = String::new();
    for c in v.to_string().chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// What `walk` calls: node, whether it is a resource root, its CEL type, its
/// schema path, its cardinality.
type NodeVisitor<'a> = dyn FnMut(&Structural, bool, &Type, &FieldPath, Option<u64>) + 'a;

/// Calls `f` with every node of `s` that has rules and a CEL type, that
/// type, the node's path in the schema (`properties[spec].items`) and how
/// many such nodes one object can have (`None`: unbounded).
fn walk(
    s: &Structural,
    resource_root: bool,
    path: &FieldPath,
    cardinality: Option<u64>,
    f: &mut NodeVisitor<'_>,
) {
    // Children first, in upstream's order (additional properties,
    // properties, items), then the node: the order of upstream's errors.
    let bounded = |max: Option<i64>| {
        cardinality
            .zip(max)
            .map(|(c, m)| c.saturating_mul(u64::try_from(m).unwrap_or(0)))
    };
    if let Some(AdditionalProperties::Schema(ap)) = &s.additional_properties {
        let at = path.child("additionalProperties");
        let c = bounded(s.validation.max_properties);
        walk(ap, ap.extensions.embedded_resource, &at, c, f);
    }
    for (name, p) in &s.properties {
        let at = path.child("properties").key(name);
        walk(p, p.extensions.embedded_resource, &at, cardinality, f);
    }
    if let Some(items) = &s.items {
        let at = path.child("items");
        let c = bounded(s.validation.max_items);
        walk(items, items.extensions.embedded_resource, &at, c, f);
    }
    if !s.extensions.validations.is_empty()
        && let Some(t) = Type::of_schema(s, resource_root)
    {
        f(s, resource_root, &t, path, cardinality);
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
        let node = NodeContext {
            rules: std::slice::from_ref(ctx.rule),
            schema: ctx.schema,
            self_value: ctx.self_value,
            old_self: ctx.old_self,
            path: ctx.path,
            unchanged: ctx.unchanged,
        };
        self.evaluate_node(&node)
    }

    /// `self` and `oldSelf` are converted once per node, for all its rules.
    fn evaluate_node(&self, node: &NodeContext<'_>) -> ErrorList {
        let mut activation = None;
        let mut errs = ErrorList::new();
        for rule in node.rules {
            errs.extend(self.evaluate_rule(node, rule, &mut activation, None));
        }
        errs
    }
}

/// An evaluation's estimate from the actual value's sizes (the rule is
/// checked again for its types: rare, so nothing is kept per rule).
fn actual_cost(program: &Program, node: &NodeContext<'_>, rule: &ValidationRule) -> Option<u64> {
    let self_type = Type::of_schema(node.schema, node.path.as_str().is_empty())?;
    let old_self_type = if rule.optional_old_self.unwrap_or(false) {
        Type::optional(self_type.clone())
    } else {
        self_type.clone()
    };
    let variables = [("self", self_type), ("oldSelf", old_self_type)];
    let checked = check::check(
        program.expression(),
        program.source_info(),
        &variables,
        declarations(),
    )
    .ok()?;
    let limits = Limits::of_value(node.self_value, Some(node.schema));
    Some(cost::estimate(
        program.expression(),
        &checked.types,
        &limits,
    ))
}

/// The rules of one request under kube-apiserver's runtime cost budget
/// (`RuntimeCELCostBudget`, 10M): each evaluation is charged its static
/// estimate, or, when that would overrun what is left, its estimate from the
/// actual value's sizes; once the budget is spent, no further rule runs.
pub struct Budgeted<'r> {
    rules: &'r RuleSet,
    remaining: std::cell::Cell<i64>,
}

/// The longest message a `messageExpression` may evaluate to
/// (`MaxEvaluatedMessageExpressionSizeBytes`).
const MAX_MESSAGE_EXPRESSION_BYTES: usize = 5 * 1024;

/// kube-apiserver's per-request budget for CRD validation rules.
const RUNTIME_BUDGET: i64 = 10_000_000;

/// `self` (and `oldSelf`) of a node as CEL variables.
fn activation<'a>(
    env: Arc<Env>,
    self_value: &'a serde_json::Value,
    old_self: Option<&'a serde_json::Value>,
    schema: &'a Structural,
    resource_root: bool,
) -> Context<'a, 'a> {
    let mut activation = Context::with_env(env);
    activation.add_variable_as_val(
        "self",
        values::to_val(self_value, Some(schema), resource_root),
    );
    if let Some(old) = old_self {
        activation.add_variable_as_val("oldSelf", values::to_val(old, Some(schema), resource_root));
    }
    activation
}

impl RuleSet {
    /// An evaluator for one request, under the runtime cost budget.
    pub fn budgeted(&self) -> Budgeted<'_> {
        Budgeted {
            rules: self,
            remaining: std::cell::Cell::new(RUNTIME_BUDGET),
        }
    }
}

fn out_of_budget(node: &NodeContext<'_>) -> FieldError {
    FieldError::invalid(
        &node_path(node.path),
        json!(node.schema.type_),
        "validation failed due to running out of cost budget, no further validation rules will be run",
    )
}

impl RuleEvaluator for Budgeted<'_> {
    fn evaluate(&self, ctx: &RuleContext<'_>) -> ErrorList {
        let node = NodeContext {
            rules: std::slice::from_ref(ctx.rule),
            schema: ctx.schema,
            self_value: ctx.self_value,
            old_self: ctx.old_self,
            path: ctx.path,
            unchanged: ctx.unchanged,
        };
        self.evaluate_node(&node)
    }

    fn evaluate_node(&self, node: &NodeContext<'_>) -> ErrorList {
        if self.remaining.get() <= 0 {
            return vec![out_of_budget(node)];
        }
        let mut activation = None;
        let mut errs = ErrorList::new();
        for rule in node.rules {
            errs.extend(self.rules.evaluate_rule(
                node,
                rule,
                &mut activation,
                Some(&self.remaining),
            ));
            if self.remaining.get() < 0 {
                break;
            }
        }
        errs
    }
}

impl RuleSet {
    /// The variables of a node's rules, built when the first rule runs
    /// (borrowing the node's values).
    fn activation<'s, 'a>(
        &self,
        node: &NodeContext<'a>,
        slot: &'s mut Option<Context<'a, 'a>>,
    ) -> &'s Context<'a, 'a> {
        slot.get_or_insert_with(|| {
            activation(
                self.env.clone(),
                node.self_value,
                node.old_self,
                node.schema,
                node.path.as_str().is_empty(),
            )
        })
    }

    fn evaluate_rule<'a>(
        &self,
        node: &NodeContext<'a>,
        rule: &ValidationRule,
        slot: &mut Option<Context<'a, 'a>>,
        budget: Option<&std::cell::Cell<i64>>,
    ) -> ErrorList {
        let Some(compiled) = self.rules.get(&rule.rule) else {
            return ErrorList::new();
        };
        // Built only for an error: most rules pass.
        let schema_type = || json!(node.schema.type_);
        // A failed rule shows the value, but not an object's or an array's.
        let failed_value = || match node.schema.type_.as_str() {
            "object" | "array" => None,
            _ => Some(node.self_value.clone()),
        };
        let path = || node_path(node.path);
        let program = match &compiled.program {
            Ok(p) => p,
            Err(e) => {
                return vec![FieldError::invalid(
                    &path(),
                    schema_type(),
                    &format!("rule compile error: {e}"),
                )];
            }
        };
        let optional_old_self = rule.optional_old_self.unwrap_or(false);
        if compiled.uses_old_self && node.old_self.is_none() && !optional_old_self {
            return ErrorList::new();
        }
        // Ratcheting: an unchanged node's failing rules that do not look at
        // oldSelf are not errors.
        if node.unchanged && !compiled.uses_old_self {
            return ErrorList::new();
        }
        // What this evaluation may cost: the static estimate, or — when that
        // is more than one call's limit or than the request has left — the
        // estimate from the actual value's sizes (upstream counts the
        // evaluation itself; the `cel` crate cannot).
        let left = budget.map_or(i64::MAX, std::cell::Cell::get);
        let mut charge = compiled.static_cost;
        let over = |c: u64| c > cost::PER_CALL_LIMIT || i64::try_from(c).map_or(true, |c| c > left);
        if over(charge)
            && let Some(actual) = actual_cost(program, node, rule)
        {
            charge = charge.min(actual);
        }
        if charge > cost::PER_CALL_LIMIT {
            return vec![FieldError::invalid(
                &path(),
                schema_type(),
                &format!(
                    "call cost exceeds limit for rule: {}",
                    message_or_default(rule)
                ),
            )];
        }
        if let Some(budget) = budget {
            let charge = i64::try_from(charge).unwrap_or(i64::MAX);
            if charge > budget.get() {
                budget.set(-1);
                return vec![out_of_budget(node)];
            }
            budget.set(budget.get() - charge);
        }
        // The common shapes are answered without the interpreter when the
        // answer is certain; anything else (errors included) is the crate's.
        let direct = compiled
            .direct
            .as_ref()
            .filter(|_| !optional_old_self)
            .and_then(|d| {
                d.evaluate(
                    node.self_value,
                    node.old_self,
                    node.schema,
                    node.path.as_str().is_empty(),
                )
            });
        let outcome = match direct {
            Some(b) => Ok(CelValue::Bool(b)),
            None => program.execute(self.activation(node, slot)),
        };
        match outcome {
            Ok(CelValue::Bool(true)) => ErrorList::new(),
            Ok(CelValue::Bool(false)) => {
                let activation = self.activation(node, slot);
                let detail = compiled
                    .message_expression
                    .as_ref()
                    .and_then(|m| match m.execute(activation) {
                        Ok(CelValue::String(s)) => {
                            let s = s.trim();
                            let usable = !s.is_empty()
                                && s.len() <= MAX_MESSAGE_EXPRESSION_BYTES
                                && !s.contains('\n');
                            usable.then(|| s.to_string())
                        }
                        _ => None,
                    })
                    .unwrap_or_else(|| message_or_default(rule));
                let at = with_field_path(node.path, &rule.field_path);
                let with_value = |kind: apimachinery::field::ErrorType, detail: &str| FieldError {
                    kind,
                    field: at.to_string(),
                    bad_value: failed_value().map(apimachinery::field::BadValue::Json),
                    detail: detail.to_string(),
                };
                vec![match rule.reason.as_str() {
                    "FieldValueForbidden" => FieldError::forbidden(&at, &detail),
                    "FieldValueRequired" => FieldError::required(&at, &detail),
                    "FieldValueDuplicate" => {
                        with_value(apimachinery::field::ErrorType::Duplicate, "")
                    }
                    _ => with_value(apimachinery::field::ErrorType::Invalid, &detail),
                }]
            }
            Ok(other) => vec![FieldError::invalid(
                &path(),
                schema_type(),
                &format!(
                    "rule did not evaluate to a bool ({other:?}) evaluating rule: {}",
                    rule_error_string(rule)
                ),
            )],
            Err(e) => vec![FieldError::invalid(
                &path(),
                schema_type(),
                &format!(
                    "{} evaluating rule: {}",
                    errors::runtime_error(program, self.activation(node, slot), e),
                    rule_error_string(rule)
                ),
            )],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

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
                "spec: Invalid value: failed rule: self.maxReplicas < 100",
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
                "spec: Invalid value: minReplicas must not exceed maxReplicas",
                "spec: Invalid value: maxReplicas may not be 42",
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
            ["spec.name: Invalid value: \"b\": name is immutable"]
        );
    }

    #[test]
    fn root_rules_see_name_but_not_other_metadata() {
        let s = schema(json!({"type": "object", "x-kubernetes-validations": [
            {"rule": "self.metadata.name.startsWith('my-')"}]}));
        assert_eq!(
            errors(
                &s,
                json!({"metadata": {"name": "other", "labels": {"a": "b"}}}),
                None
            ),
            ["<nil>: Invalid value: failed rule: self.metadata.name.startsWith('my-')"]
        );
        let labels = schema(json!({"type": "object", "x-kubernetes-validations": [
            {"rule": "!has(self.metadata.labels)"}]}));
        let errs = compile_errors(&labels, &FieldPath::new("openAPIV3Schema"));
        assert_eq!(
            errs[0].to_string(),
            "openAPIV3Schema.x-kubernetes-validations[0].rule: Invalid value: \
             {\"Rule\":\"!has(self.metadata.labels)\",\"Message\":\"\",\
             \"MessageExpression\":\"\",\"Reason\":null,\"FieldPath\":\"\",\
             \"OptionalOldSelf\":null}: compilation failed: \
             ERROR: <input>:1:5: undefined field 'labels'\n | !has(self.metadata.labels)\n | ....^"
        );
    }

    #[test]
    fn runtime_errors_name_the_rule() {
        let s = schema(
            json!({"type": "object", "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": [{"rule": "self.n == 1", "message": "n must be 1"}],
            "properties": {"n": {"type": "integer"}}}}}),
        );
        let errs = errors(&s, json!({"spec": {}}), None);
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0].starts_with("spec: Invalid value: \"object\": "),
            "{errs:?}"
        );
        assert!(
            errs[0].ends_with(" evaluating rule: n must be 1"),
            "{errs:?}"
        );
    }

    /// Rules written with Kubernetes' libraries and two-variable
    /// comprehensions type-check; misuse is reported as cel-go reports it.
    #[test]
    fn library_calls_type_check() {
        let s = |rules: &[&str]| {
            let rules: Vec<Value> = rules.iter().map(|r| json!({"rule": r})).collect();
            schema(
                json!({"type": "object", "x-kubernetes-validations": rules, "properties": {
                "s": {"type": "string", "maxLength": 64},
                "q": {"x-kubernetes-int-or-string": true},
                "counts": {"type": "object", "maxProperties": 8,
                    "additionalProperties": {"type": "integer"}},
                "names": {"type": "array", "maxItems": 8,
                    "items": {"type": "string", "maxLength": 16}}}}),
            )
        };
        let good = s(&[
            "self.counts.all(k, v, v > 0 && k != '')",
            "self.names.exists(i, v, i > 0 && v == 'a')",
            "url(self.s).getHost() == 'example.com'",
            "quantity(self.s).isLessThan(quantity('1Gi'))",
            "type(self.q) == string ? self.q.endsWith('%') : self.q > 0",
            "!isIP(self.s) || ip(self.s).family() == 4",
            "self.s.find('[0-9]+') != ''",
            "!format.dns1123Label().validate(self.s).hasValue()",
            "self.names.isSorted() && sets.contains(self.names, ['a'])",
            "cidr('10.0.0.0/8').containsIP(self.s)",
        ]);
        let errs = compile_errors(&good, &FieldPath::new("openAPIV3Schema"));
        assert!(errs.is_empty(), "{errs:?}");
        let bad = s(&[
            "self.s.isSorted()",
            "self.names.sum() > 0",
            "self.counts.all(k, v, v.startsWith('a'))",
        ]);
        let errs: Vec<String> = compile_errors(&bad, &FieldPath::new("openAPIV3Schema"))
            .iter()
            .map(|e| e.to_string())
            .collect();
        assert!(
            errs[0].contains("ERROR: <input>:1:16: found no matching overload for 'isSorted' applied to 'string.()'"),
            "{errs:?}"
        );
        assert!(
            errs[1].contains("found no matching overload for 'sum' applied to 'list(string).()'"),
            "{errs:?}"
        );
        // Constant patterns must parse (upstream's literal validators).
        let literal: Vec<String> =
            compile_errors(&s(&["self.s.matches(')')"]), &FieldPath::new("x"))
                .iter()
                .map(|e| e.to_string())
                .collect();
        assert!(
            literal[0]
                .contains("compilation failed: ERROR: <input>:1:16: invalid matches argument"),
            "{literal:?}"
        );
        // Two-variable comprehensions know their variables' types.
        assert!(
            errs[2]
                .contains("found no matching overload for 'startsWith' applied to 'int.(string)'"),
            "{errs:?}"
        );
    }

    /// A rule whose estimate allows more than one call's budget is bounded
    /// by the actual value: stopped on a large list, run on a small one.
    #[test]
    fn runaway_rules_are_stopped_by_the_per_call_limit() {
        let s = schema(json!({"type": "object", "properties": {"names": {
            "type": "array", "maxItems": 500, "items": {"type": "string", "maxLength": 16},
            "x-kubernetes-validations": [{"rule": "self.all(x, self.exists_one(y, x == y))",
                "message": "names must be unique"}]}}}));
        // Accepted when the CRD is written (between the per-call and the
        // per-expression limits).
        assert!(compile_errors(&s, &FieldPath::new("openAPIV3Schema")).is_empty());
        let names =
            |n: usize| json!({"names": (0..n).map(|i| format!("n{i}")).collect::<Vec<_>>()});
        assert!(errors(&s, names(50), None).is_empty());
        assert_eq!(
            errors(&s, names(500), None),
            [
                "names: Invalid value: \"array\": call cost exceeds limit for rule: names must be unique"
            ]
        );
    }

    /// 1.37 compiles new rules in 1.36's environment: the semver library
    /// (1.33's) is there; the lists library's `includes` (1.37's) is not —
    /// a rule using it is refused when written, unless the stored CRD
    /// already had it (ratcheting), and evaluated once stored.
    #[test]
    fn includes_is_for_stored_rules_only() {
        let s = schema(json!({"type": "object", "properties": {
            "v": {"type": "string", "maxLength": 32, "x-kubernetes-validations": [
                {"rule": "semver(self).isGreaterThan(semver('1.0.0'))"}]},
            "tags": {"type": "array", "maxItems": 4,
                "items": {"type": "string", "maxLength": 8},
                "x-kubernetes-validations": [{"rule": "self.includes('a')",
                    "messageExpression": "[string(size(self))].includes('2') ? 'two' : 'tags'"}]}}}));
        let errs: Vec<String> = compile_errors(&s, &FieldPath::new("x"))
            .iter()
            .map(|e| e.to_string())
            .collect();
        // (The message expression of a rule that does not compile is not
        // compiled.)
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0].starts_with(
                "x.properties[tags].x-kubernetes-validations[0].rule: Invalid value: "
            ) && errs[0].ends_with(
                ": compilation failed: ERROR: <input>:1:14: undeclared reference to 'includes' (in container '')\n | self.includes('a')\n | .............^"
            ),
            "{errs:?}"
        );
        // An update keeping the rule accepts it; the message expression is
        // new.
        let stored = json!({"spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema":
            {"type": "object", "properties": {"other": {"type": "array", "items": {
                "type": "string", "x-kubernetes-validations": [{"rule": "self.includes('a')"}]}}}}}}]}});
        let preexisting = Preexisting::of_crd(&stored);
        let errs = compile_errors_updating(&s, &FieldPath::new("x"), &preexisting);
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0].to_string().contains(
                "x-kubernetes-validations[0].messageExpression: Invalid value: {\"Rule\":\"self.includes('a')\""
            ) && errs[0].to_string().contains(
                ": messageExpression compilation failed: ERROR: <input>:1:30: undeclared reference to 'includes' (in container '')"
            ),
            "{errs:?}"
        );
        assert!(errors(&s, json!({"v": "1.2.0", "tags": ["a", "b"]}), None).is_empty());
        assert_eq!(
            errors(&s, json!({"v": "0.9.0", "tags": ["b", "c"]}), None),
            [
                "tags: Invalid value: two",
                "v: Invalid value: \"0.9.0\": failed rule: semver(self).isGreaterThan(semver('1.0.0'))",
            ]
        );
    }

    /// Macros' errors are worded as cel-go words each (kube-apiserver
    /// 1.37.2's answers), with the source line and a caret.
    #[test]
    fn macro_errors_read_as_cel_gos() {
        let cases = [
            (
                "self.map(n.x, n) == self",
                "ERROR: <input>:1:11: argument is not an identifier\n | self.map(n.x, n) == self\n | ..........^",
            ),
            (
                "self.filter(n.x, n > 0) == self",
                "ERROR: <input>:1:14: argument is not an identifier",
            ),
            (
                "self.all(n.x, n > 0)",
                "ERROR: <input>:1:11: argument must be a simple name",
            ),
            (
                "self.first().optMap(n.x, n).hasValue()",
                "ERROR: <input>:1:22: optMap() variable name must be a simple identifier",
            ),
            (
                "self.first().optFlatMap(n.x, optional.of(n)).hasValue()",
                "ERROR: <input>:1:26: optFlatMap() variable name must be a simple identifier",
            ),
            (
                "self.all(i.x, v, v > 0)",
                "ERROR: <input>:1:11: argument must be a simple name",
            ),
            (
                "self.sortBy(n.x, n) == self",
                "ERROR: <input>:1:14: argument is not an identifier",
            ),
        ];
        for (rule, error) in cases {
            let s = schema(
                json!({"type": "array", "maxItems": 4, "items": {"type": "integer"},
                "x-kubernetes-validations": [{"rule": rule}]}),
            );
            let errs = compile_errors(&s, &FieldPath::new("x"));
            assert!(
                errs.first().is_some_and(|e| e
                    .to_string()
                    .contains(&format!("compilation failed: {error}"))),
                "{rule}: {errs:?}"
            );
        }
    }

    /// A failed rule shows the value of a scalar (as Go prints it), not an
    /// object's or an array's; `FieldValueDuplicate` likewise.
    #[test]
    fn failed_rules_show_scalar_values() {
        let s = schema(json!({"type": "object", "properties": {
            "i": {"type": "integer", "x-kubernetes-validations": [{"rule": "self < 0"}]},
            "b": {"type": "boolean", "x-kubernetes-validations": [
                {"rule": "!self", "reason": "FieldValueDuplicate"}]},
            "o": {"type": "object", "x-kubernetes-validations": [
                {"rule": "false", "reason": "FieldValueDuplicate"}]}}}));
        assert_eq!(
            errors(&s, json!({"i": 3, "b": true, "o": {}}), None),
            [
                "b: Duplicate value: true",
                "i: Invalid value: 3: failed rule: self < 0",
                "o: Duplicate value",
            ]
        );
    }

    /// Upstream's own cases for `x-kubernetes-preserve-unknown-fields`
    /// (apiextensions-apiserver schema/cel/validation_test.go, "unknown
    /// fields"): unknown fields cannot be selected but count in equality;
    /// typeless properties are not visible at all.
    #[test]
    fn preserved_unknown_fields_as_upstreams_tests_expect() {
        let unknown = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        let typeless = json!({"x-kubernetes-preserve-unknown-fields": true});
        let props = json!({
            "withUnknown": unknown,
            "withUnknownList": {"type": "array", "items": unknown},
            "withUnknownFieldList": {"type": "array", "items": {"type": "object",
                "properties": {"fieldOfUnknownType": typeless}}},
            "anyvalList": {"type": "array", "items": typeless},
            "anyvalMap": {"type": "object", "additionalProperties": typeless},
            "anyvalField1": typeless,
            "anyvalField2": typeless,
        });
        let object = json!({
            "withUnknown": {"field1": "a", "field2": 1},
            "withUnknownList": [{"field1": "a"}, {"field1": "b"}, {"field1": "b"},
                {"field2": 1}, {"field2": 1}],
            "withUnknownFieldList": [{"fieldOfUnknownType": "a"},
                {"fieldOfUnknownType": 1}, {"fieldOfUnknownType": 1}],
            "anyvalList": [1, "a"], "anyvalMap": {"k": "1"},
            "anyvalField1": 1, "anyvalField2": "a",
        });
        for valid in [
            "has(self.withUnknown)",
            "self.withUnknownList.size() == 5",
            "self.withUnknownList[0] != self.withUnknownList[1]",
            "self.withUnknownList[1] == self.withUnknownList[2]",
            "self.withUnknownList[3] == self.withUnknownList[4]",
            "self.withUnknownFieldList[0] != self.withUnknownFieldList[1]",
            "self.withUnknownFieldList[1] == self.withUnknownFieldList[2]",
        ] {
            let s = schema(json!({"type": "object", "properties": props,
                "x-kubernetes-validations": [{"rule": valid}]}));
            assert!(
                compile_errors(&s, &FieldPath::new("x")).is_empty(),
                "{valid}"
            );
            assert!(errors(&s, object.clone(), None).is_empty(), "{valid}");
        }
        for (rule, error) in [
            ("has(self.withUnknown.field1)", "undefined field 'field1'"),
            ("has(self.anyvalList)", "undefined field 'anyvalList'"),
            ("has(self.anyvalMap)", "undefined field 'anyvalMap'"),
            ("has(self.anyvalField1)", "undefined field 'anyvalField1'"),
            ("has(self.anyvalField2)", "undefined field 'anyvalField2'"),
        ] {
            let s = schema(json!({"type": "object", "properties": props,
                "x-kubernetes-validations": [{"rule": rule}]}));
            let errs = compile_errors(&s, &FieldPath::new("x"));
            assert!(
                errs.first().is_some_and(|e| e.to_string().contains(error)),
                "{rule}: {errs:?}"
            );
        }
    }

    /// `set` and `map` lists compare as upstream's: in any order (a map
    /// list's elements matched by key); the rest of the list behaves as any.
    #[test]
    fn set_and_map_lists_compare_regardless_of_order() {
        let s = schema(json!({"type": "object", "properties": {
            "tags": {"type": "array", "x-kubernetes-list-type": "set",
                "items": {"type": "string"},
                "x-kubernetes-validations": [
                    {"rule": "self == oldSelf", "message": "tags are immutable"},
                    {"rule": "size(self) == 2 && self.all(t, t != '') && 'a' in self && self[0] != ''"}]},
            "ports": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {
                    "name": {"type": "string"}, "port": {"type": "integer"}}},
                "x-kubernetes-validations": [
                    {"rule": "self == oldSelf", "message": "ports are immutable"}]}}}));
        let old = json!({"tags": ["a", "b"],
            "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]});
        let reordered = json!({"tags": ["b", "a"],
            "ports": [{"name": "https", "port": 443}, {"name": "http", "port": 80}]});
        assert!(errors(&s, reordered, Some(old.clone())).is_empty());
        let changed = json!({"tags": ["c", "b"],
            "ports": [{"name": "https", "port": 8443}, {"name": "http", "port": 80}]});
        assert_eq!(
            errors(&s, changed, Some(old)),
            [
                "ports: Invalid value: ports are immutable",
                "tags: Invalid value: tags are immutable",
                "tags: Invalid value: failed rule: size(self) == 2 && self.all(t, t != '') && 'a' in self && self[0] != ''",
            ]
        );
    }

    /// A request's rules share kube-apiserver's runtime budget (10M): here
    /// sixteen O(n²) rules, each within one call's limit (722,104 estimated),
    /// spend it on 300 tags, and the rest do not run; on 10 tags they all run.
    #[test]
    fn a_requests_rules_share_the_runtime_budget() {
        let rules: Vec<Value> = (0..16)
            .map(|i| json!({"rule": format!("self.tags.all(x, self.tags.exists_one(y, x == y)) || {i} < 0")}))
            .collect();
        let s = schema(json!({"type": "object", "x-kubernetes-validations": rules,
            "properties": {"tags": {"type": "array", "maxItems": 300,
                "items": {"type": "string", "maxLength": 8}}}}));
        let rules = RuleSet::compile(&s).unwrap();
        let tags =
            |n: usize| json!({"tags": (0..n).map(|i| format!("tag-{i:04}")).collect::<Vec<_>>()});
        let run = |v: Value| -> Vec<String> {
            schema::evaluate_rules(&v, None, &s, &FieldPath::root(), &rules.budgeted())
                .iter()
                .map(|e| e.to_string())
                .collect()
        };
        assert!(run(tags(10)).is_empty());
        assert_eq!(
            run(tags(300)),
            [
                "<nil>: Invalid value: \"object\": validation failed due to running out of cost budget, no further validation rules will be run"
            ]
        );
    }
}
