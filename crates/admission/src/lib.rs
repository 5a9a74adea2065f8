//! Admission policies: kube-apiserver 1.33's ValidatingAdmissionPolicy with
//! its bindings, on `kubext-cel`. [`Policies`] holds the compiled policies
//! (rebuilt by the control plane whenever a policy or binding changes) and
//! admits every write of every resource: it matches policy and binding to the
//! request, fetches parameters, evaluates match conditions, variables and
//! validations, and denies, warns or lets pass as the binding says — with
//! upstream's messages, codes and failure policies. [`PolicyCheck`] refuses a
//! policy whose expressions do not compile when it is written.
//!
//! Expressions are compiled with their variables dyn, and type-checked
//! against the schemas of the resources a policy names into
//! `status.typeChecking`.
//!
//! Invariant: policies are compiled when they change, never per request.

mod follow;
pub mod in_tree;
mod matching;
mod mutating;
mod policy;
mod reinvocation;
mod type_checking;
mod webhooks;

use std::sync::Arc;

use apimachinery::{GroupResource, StatusCause, StatusError, meta};
use cel_rules::{Bindings, Evaluated};
use parking_lot::RwLock;
use serde_json::{Value, json};

use registry::{Admission, AdmittedObject, Attributes, GlobalAdmission, Operation, RequestContext};

pub use follow::{Stores, WebhookStores, follow, follow_webhooks};
pub use policy::VARIABLES;
use policy::{Binding, Common, MutatingPolicy, ParamRef, Policy};
pub use webhooks::Webhooks;

const VALIDATING: &str = "ValidatingAdmissionPolicy";

/// The objects admission reads besides the one written.
#[async_trait::async_trait]
pub trait Objects: Send + Sync + 'static {
    /// The Namespace named so.
    async fn namespace(&self, name: &str) -> Option<Value>;

    /// Objects of `api_version`/`kind` in `namespace` ("" for all or
    /// cluster-scoped): the one named `name`, or those whose labels `selector`
    /// matches. An error when the kind is not served.
    async fn find(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: Option<&str>,
        selector: Option<&apimachinery::selector::LabelSelector>,
    ) -> Result<Vec<Value>, FindError>;

    /// The kind served as `group/version`'s `resource`.
    fn kind_of(&self, group: &str, version: &str, resource: &str) -> Option<String>;

    /// The other versions `group`'s `resource` is served in (what
    /// `matchPolicy: Equivalent` matches too).
    fn other_versions(&self, group: &str, resource: &str, version: &str) -> Vec<String>;

    /// What answers the `authorizer` variable's checks for the requesting
    /// user.
    fn authorizer(&self, ctx: &RequestContext) -> Option<Arc<dyn cel_rules::Authorize>>;
}

/// Why the objects a binding's `paramRef` names could not be read (the
/// detail of upstream's `failed to configure binding: …`).
#[derive(Debug, thiserror::Error)]
pub enum FindError {
    /// No objects attached yet.
    #[error("the server is starting")]
    Starting,
    #[error("the server is stopping")]
    Stopping,
    /// The policy's `paramKind` is not served.
    #[error("failed to find resource referenced by paramKind: '{api_version}, Kind={kind}'")]
    NotServed { api_version: String, kind: String },
    /// Reading them failed.
    #[error("{0}")]
    Read(#[from] apimachinery::StatusError),
}

/// A policy and its bindings, or why the policy cannot be used.
struct Entry<P> {
    name: String,
    policy: Result<P, String>,
    ignore_failures: bool,
    bindings: Vec<Result<Binding, (String, policy::BindingError)>>,
}

/// The compiled policies, and admission by them.
pub struct Policies {
    validating: RwLock<Arc<Vec<Entry<Policy>>>>,
    mutating: RwLock<Arc<Vec<Entry<MutatingPolicy>>>>,
    /// Attached once the server exists (it serves the objects).
    objects: std::sync::OnceLock<Arc<dyn Objects>>,
}

/// Compiles each policy with its bindings.
fn entries<P>(
    policies: &[Value],
    bindings: &[Value],
    compile: fn(&Value, bool) -> Result<P, apimachinery::ErrorList>,
) -> Vec<Entry<P>> {
    policies
        .iter()
        .map(|p| {
            let name = meta::name(p).to_string();
            let ignore_failures =
                p.pointer("/spec/failurePolicy").and_then(Value::as_str) == Some("Ignore");
            let compiled = compile(p, true).map_err(|errs| {
                errs.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            });
            let bindings = bindings
                .iter()
                .filter(|b| b.pointer("/spec/policyName").and_then(Value::as_str) == Some(&name))
                .map(|b| policy::compile_binding(b).map_err(|e| (meta::name(b).to_string(), e)))
                .collect();
            Entry {
                name,
                policy: compiled,
                ignore_failures,
                bindings,
            }
        })
        .collect()
}

/// The bindings of a policy that apply to a request, each with the
/// parameters to evaluate it with (`None`: no parameter), and the version the
/// policy matched through, when not the request's.
#[derive(Default)]
struct Applicable<'e> {
    through: Option<String>,
    bindings: Vec<(&'e Binding, Vec<Option<Value>>)>,
}

/// `object` as `group/version` presents it.
fn as_version(object: &Value, group: &str, version: &str) -> Value {
    let mut converted = object.clone();
    converted["apiVersion"] = if group.is_empty() {
        json!(version)
    } else {
        json!(format!("{group}/{version}"))
    };
    converted
}

/// A decision to deny, with what upstream reports.
struct Denial {
    /// `ValidatingAdmissionPolicy` or `MutatingAdmissionPolicy`.
    kind: &'static str,
    policy: String,
    binding: Option<String>,
    message: String,
    reason: String,
}

impl Default for Policies {
    fn default() -> Self {
        Policies::new()
    }
}

impl Policies {
    pub fn new() -> Policies {
        Policies {
            validating: RwLock::new(Arc::new(Vec::new())),
            mutating: RwLock::new(Arc::new(Vec::new())),
            objects: std::sync::OnceLock::new(),
        }
    }

    /// Where parameters and namespaces are read from.
    pub fn attach(&self, objects: Arc<dyn Objects>) {
        let _ = self.objects.set(objects);
    }

    /// Replace the validating policies with these (ValidatingAdmissionPolicy
    /// and ValidatingAdmissionPolicyBinding objects).
    pub fn set(&self, policies: &[Value], bindings: &[Value]) {
        *self.validating.write() = Arc::new(entries(policies, bindings, policy::compile));
    }

    /// Replace the mutating policies with these (MutatingAdmissionPolicy and
    /// MutatingAdmissionPolicyBinding objects).
    pub fn set_mutating(&self, policies: &[Value], bindings: &[Value]) {
        *self.mutating.write() = Arc::new(entries(policies, bindings, policy::compile_mutating));
    }

    fn snapshot(&self) -> Arc<Vec<Entry<Policy>>> {
        self.validating.read().clone()
    }

    /// Whether there is a mutating policy (else its round has nothing to do).
    fn any_mutating(&self) -> bool {
        !self.mutating.read().is_empty()
    }

    /// Whether there is a validating policy.
    fn any_validating(&self) -> bool {
        !self.validating.read().is_empty()
    }
}

/// Policies never apply to the objects that configure admission.
fn exempt(a: &Attributes<'_>) -> bool {
    a.rtype.group == "admissionregistration.k8s.io"
}

/// The `request` variable (an AdmissionRequest).
fn request(a: &Attributes<'_>) -> Value {
    let kind = json!({"group": a.rtype.group, "version": a.rtype.version, "kind": a.rtype.kind});
    let resource =
        json!({"group": a.rtype.group, "version": a.rtype.version, "resource": a.rtype.plural});
    let ctx = a.ctx;
    json!({
        "kind": kind, "resource": resource, "requestKind": kind, "requestResource": resource,
        "subResource": ctx.subresource.as_str(),
        "name": a.name, "namespace": ctx.namespace, "operation": a.operation.as_str(),
        "userInfo": {"username": ctx.user, "uid": ctx.uid, "groups": ctx.groups, "extra": ctx.extra},
        "dryRun": ctx.dry_run,
    })
}

/// The `failed expression` message or its configured replacement.
fn failure_message(v: &policy::Validation, bindings: &Bindings<'_, '_>) -> String {
    if let Some(m) = &v.message_expression
        && let Ok(evaluated) = m.evaluate(bindings)
        && let Some(s) = evaluated.as_str()
        && !s.trim().is_empty()
    {
        return s.trim().to_string();
    }
    if v.message.is_empty() {
        format!("failed expression: {}", v.source)
    } else {
        v.message.clone()
    }
}

/// A validation that failed: its message, reason and index.
struct Failure {
    message: String,
    reason: String,
    index: usize,
}

/// Whether the policy's match conditions hold (an error is an evaluation
/// error); its variables are bound when they do.
fn prepare(policy: &Common, bindings: &mut Bindings<'_, '_>) -> Result<bool, String> {
    for (name, condition) in &policy.match_conditions {
        match condition.evaluate(bindings).map(|v| v.as_bool()) {
            Ok(Some(true)) => {}
            Ok(Some(false)) => return Ok(false),
            Ok(None) => {
                return Err(format!("matchCondition '{name}' must evaluate to bool"));
            }
            Err(e) => return Err(format!("failed to evaluate matchCondition '{name}': {e}")),
        }
    }
    for (name, expression) in &policy.variables {
        if let Ok(value) = expression.evaluate(bindings) {
            bindings.bind_variable(name, value);
        }
    }
    Ok(true)
}

/// The first of the policy's validations that fails, or an evaluation error.
fn validate(policy: &Policy, bindings: &Bindings<'_, '_>) -> Result<Option<Failure>, String> {
    for (index, v) in policy.validations.iter().enumerate() {
        match v
            .expression
            .evaluate(bindings)
            .map(|e: Evaluated| e.as_bool())
        {
            Ok(Some(true)) => {}
            Ok(Some(false)) => {
                let reason = if v.reason.is_empty() {
                    "Invalid"
                } else {
                    &v.reason
                };
                return Ok(Some(Failure {
                    message: failure_message(v, bindings),
                    reason: reason.to_string(),
                    index,
                }));
            }
            Ok(None) => {
                return Err(format!(
                    "expression '{}' resulted in error: must evaluate to bool",
                    v.source
                ));
            }
            Err(e) => {
                return Err(format!("expression '{}' resulted in error: {e}", v.source));
            }
        }
    }
    Ok(None)
}

fn code_of(reason: &str) -> u16 {
    match reason {
        "Unauthorized" => 401,
        "Forbidden" => 403,
        "RequestEntityTooLarge" => 413,
        _ => 422,
    }
}

impl Denial {
    fn into_error(self, a: &Attributes<'_>) -> StatusError {
        let message = match &self.binding {
            Some(b) => format!(
                "{} '{}' with binding '{b}' denied request: {}",
                self.kind, self.policy, self.message
            ),
            None => format!(
                "{} '{}' denied request: {}",
                self.kind, self.policy, self.message
            ),
        };
        let gr = GroupResource::new(&a.rtype.group, &a.rtype.plural);
        let mut err = StatusError::forbidden(&gr, a.name, &message);
        err.0.code = code_of(&self.reason);
        err.0.reason = self.reason;
        err.with_causes(vec![StatusCause {
            message,
            ..Default::default()
        }])
    }
}

impl Policies {
    /// The policy's `auditAnnotations`, recorded as `<policy>/<key>`; one
    /// that fails to evaluate denies unless failures are ignored.
    fn annotate(
        &self,
        entry: &Entry<Policy>,
        policy: &Policy,
        binding: &Binding,
        bindings: &Bindings<'_, '_>,
        a: &Attributes<'_>,
    ) -> Option<Denial> {
        for (key, source, expression) in &policy.audit_annotations {
            let error = match expression.evaluate(bindings) {
                Ok(v) if v.is_null() => continue,
                Ok(v) => match v.as_str() {
                    Some(value) => {
                        a.ctx
                            .audit_annotations
                            .add(format!("{}/{key}", entry.name), value.to_string());
                        continue;
                    }
                    None => format!(
                        "valueExpression '{source}' resulted in unsupported return type: {}. Return type must be either string or null.",
                        v.type_name()
                    ),
                },
                Err(e) => format!("valueExpression '{source}' resulted in error: {e}"),
            };
            if !policy.common.ignore_failures {
                return Some(Denial {
                    kind: VALIDATING,
                    policy: entry.name.clone(),
                    binding: Some(binding.name.clone()),
                    message: error,
                    reason: "Invalid".into(),
                });
            }
        }
        None
    }

    async fn params(
        &self,
        policy: &Common,
        binding: &Binding,
        ctx: &RequestContext,
    ) -> Result<Vec<Value>, FindError> {
        let (Some((api_version, kind)), Some(param_ref)) = (&policy.param_kind, &binding.param_ref)
        else {
            return Ok(Vec::new());
        };
        let (namespace, name, selector) = match param_ref {
            ParamRef::Named { namespace, name } => (namespace, Some(name.as_str()), None),
            ParamRef::Selected {
                namespace,
                selector,
            } => (namespace, None, Some(selector)),
        };
        // An unset namespace means the request's, for namespaced params.
        let namespace = if namespace.is_empty() {
            &ctx.namespace
        } else {
            namespace
        };
        match self.objects.get() {
            Some(objects) => {
                objects
                    .find(api_version, kind, namespace, name, selector)
                    .await
            }
            None => Err(FindError::Starting),
        }
    }

    /// What of `entry` applies to the request (see [`Applicable`]); a
    /// binding or policy that cannot be used denies as its failure policy
    /// says.
    async fn applicable<'e, P>(
        &self,
        kind: &'static str,
        entry: &'e Entry<P>,
        common: impl Fn(&P) -> &Common,
        a: &Attributes<'_>,
        namespace: Option<&Value>,
    ) -> Result<Applicable<'e>, Denial> {
        let deny = |binding: Option<&str>, message: String| Denial {
            kind,
            policy: entry.name.clone(),
            binding: binding.map(String::from),
            message,
            reason: "Invalid".into(),
        };
        let policy = match &entry.policy {
            Ok(p) => common(p),
            Err(e) if !entry.ignore_failures && !entry.bindings.is_empty() => {
                return Err(deny(None, format!("failed to configure policy: {e}")));
            }
            Err(_) => return Ok(Applicable::default()),
        };
        let others = || match self.objects.get() {
            Some(o) => o.other_versions(&a.rtype.group, &a.rtype.plural, &a.rtype.version),
            None => Vec::new(),
        };
        let Some(through) = policy.matcher.select(a, namespace, true, &others) else {
            return Ok(Applicable::default());
        };
        let mut applicable = Applicable {
            through,
            bindings: Vec::new(),
        };
        for binding in &entry.bindings {
            let binding = match binding {
                Ok(b) => b,
                Err((name, e)) if !policy.ignore_failures => {
                    return Err(deny(
                        Some(name),
                        format!("failed to configure binding: {e}"),
                    ));
                }
                Err(_) => continue,
            };
            if let Some(m) = &binding.matcher
                && !m.matches(a, namespace, false, &others)
            {
                continue;
            }
            let params = match self.params(policy, binding, a.ctx).await {
                Ok(p) => p,
                Err(e) if !policy.ignore_failures => {
                    return Err(deny(
                        Some(&binding.name),
                        format!("failed to configure binding: {e}"),
                    ));
                }
                Err(_) => continue,
            };
            let params: Vec<Option<Value>> = if policy.param_kind.is_some()
                && binding.param_ref.is_some()
            {
                if params.is_empty() {
                    if binding.allow_missing_params {
                        continue;
                    }
                    return Err(deny(
                            Some(&binding.name),
                            "failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction".into(),
                        ));
                }
                params.into_iter().map(Some).collect()
            } else {
                vec![None]
            };
            applicable.bindings.push((binding, params));
        }
        Ok(applicable)
    }

    /// The policy's verdict on a request it applies to (`applicable`).
    fn admit_by(
        &self,
        entry: &Entry<Policy>,
        a: &Attributes<'_>,
        applicable: Applicable<'_>,
        base: &Bindings<'_, '_>,
    ) -> Option<Denial> {
        let Ok(policy) = &entry.policy else {
            return None;
        };
        // Matched through another version: the objects as that version shows
        // them (custom resources convert by their apiVersion alone).
        let converted = applicable.through.as_deref().map(|v| {
            (
                a.object().map(|o| as_version(o, &a.rtype.group, v)),
                a.old_object.map(|o| as_version(o, &a.rtype.group, v)),
            )
        });
        for (binding, params) in applicable.bindings {
            for param in &params {
                let mut bindings = base.child();
                bindings.bind("params", param.as_ref());
                if let Some((object, old_object)) = &converted {
                    bindings.bind("object", object.as_ref());
                    bindings.bind("oldObject", old_object.as_ref());
                }
                let failed = match prepare(&policy.common, &mut bindings) {
                    Ok(false) => continue,
                    Ok(true) => match validate(policy, &bindings) {
                        Ok(None) => None,
                        Ok(Some(failure)) => Some(failure),
                        Err(_) if policy.common.ignore_failures => None,
                        Err(e) => Some(Failure {
                            message: e,
                            reason: "Invalid".into(),
                            index: 0,
                        }),
                    },
                    Err(_) if policy.common.ignore_failures => continue,
                    Err(e) => Some(Failure {
                        message: e,
                        reason: "Invalid".into(),
                        index: 0,
                    }),
                };
                if let Some(denial) = self.annotate(entry, policy, binding, &bindings, a) {
                    return Some(denial);
                }
                let Some(failed) = failed else {
                    continue;
                };
                if binding.warn {
                    a.ctx.warnings.add(format!(
                        "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {}",
                        entry.name, binding.name, failed.message
                    ));
                }
                if binding.audit {
                    let record = json!([{
                        "expressionIndex": failed.index,
                        "message": failed.message,
                        "validationActions": binding.actions,
                        "binding": binding.name,
                        "policy": entry.name,
                    }]);
                    a.ctx.audit_annotations.add(
                        "validation.policy.admission.k8s.io/validation_failure".into(),
                        record.to_string(),
                    );
                }
                if binding.deny {
                    return Some(Denial {
                        kind: VALIDATING,
                        policy: entry.name.clone(),
                        binding: Some(binding.name.clone()),
                        message: failed.message,
                        reason: failed.reason,
                    });
                }
            }
        }
        None
    }
}

impl Policies {
    /// The Namespace object of a namespaced request.
    async fn namespace_of(&self, a: &Attributes<'_>) -> Option<Value> {
        match self.objects.get() {
            Some(objects) if a.rtype.namespaced && !a.ctx.namespace.is_empty() => {
                objects.namespace(&a.ctx.namespace).await
            }
            _ => None,
        }
    }
}

#[async_trait::async_trait]
impl GlobalAdmission for Policies {
    async fn mutate(
        &self,
        a: &Attributes<'_>,
        object: &mut AdmittedObject<'_>,
    ) -> Result<bool, StatusError> {
        if exempt(a) {
            return Ok(false);
        }
        let mut state = reinvocation::Reinvocation::default();
        let mut changed = self
            .mutate_round(a, object, &mut state, reinvocation::Round::First)
            .await?;
        if state.needed {
            changed |= self
                .mutate_round(a, object, &mut state, reinvocation::Round::Reinvocation)
                .await?;
        }
        Ok(changed)
    }

    async fn admit(&self, a: &Attributes<'_>) -> Result<(), StatusError> {
        if exempt(a) {
            return Ok(());
        }
        let entries = self.snapshot();
        if entries.is_empty() {
            return Ok(());
        }
        let namespace = self.namespace_of(a).await;
        let request = request(a);
        // The request's variables, converted once, when a policy first
        // applies (most writes meet none).
        let mut base: Option<Bindings<'_, '_>> = None;
        for entry in entries.iter() {
            let applicable = self
                .applicable(
                    VALIDATING,
                    entry,
                    |p: &Policy| &p.common,
                    a,
                    namespace.as_ref(),
                )
                .await
                .map_err(|denial| denial.into_error(a))?;
            if applicable.bindings.is_empty() {
                continue;
            }
            let base = base.get_or_insert_with(|| {
                let mut base = Bindings::default();
                base.bind("object", a.object());
                base.bind("oldObject", a.old_object);
                base.bind("request", Some(&request));
                base.bind("namespaceObject", namespace.as_ref());
                if let Some(authorize) = self.objects.get().and_then(|o| o.authorizer(a.ctx)) {
                    base.bind_authorizer("authorizer", authorize);
                }
                base
            });
            if let Some(denial) = self.admit_by(entry, a, applicable, base) {
                return Err(denial.into_error(a));
            }
        }
        Ok(())
    }
}

/// Admission for every write, in upstream's plugin order: the compiled-in
/// mutating plugins, mutating policies, mutating webhooks (and once more what
/// asked to be reinvoked); then (after the type's defaulting and validation)
/// the compiled-in validating plugins upstream orders first (LimitRanger),
/// validating policies, validating webhooks, the other compiled-in
/// validating plugins. Each stage runs when its plugin is on.
pub struct Chain {
    pub in_tree: Arc<in_tree::InTree>,
    pub policies: Arc<Policies>,
    pub webhooks: Arc<Webhooks>,
}

impl Chain {
    /// kube-apiserver's default plugins.
    pub fn new() -> Chain {
        Chain::with_plugins(in_tree::Plugins::default())
    }

    pub fn with_plugins(plugins: in_tree::Plugins) -> Chain {
        Chain {
            in_tree: Arc::new(in_tree::InTree::new(plugins)),
            policies: Arc::new(Policies::new()),
            webhooks: Arc::new(Webhooks::new()),
        }
    }

    /// Where they read the objects they need; what calls webhooks.
    pub fn attach(&self, objects: Arc<dyn Objects>, caller: webhook::Caller) {
        self.in_tree.attach(objects.clone());
        self.policies.attach(objects.clone());
        self.webhooks.attach(objects, caller);
    }

    fn on(&self, plugin: in_tree::Plugin) -> bool {
        self.in_tree.plugins().is_on(plugin)
    }
}

impl Default for Chain {
    fn default() -> Self {
        Chain::new()
    }
}

#[async_trait::async_trait]
impl GlobalAdmission for Chain {
    async fn mutate(
        &self,
        a: &Attributes<'_>,
        object: &mut AdmittedObject<'_>,
    ) -> Result<bool, StatusError> {
        let mut changed = self.in_tree.mutate(a, object).await?;
        if exempt(a) {
            return Ok(changed);
        }
        let (policies, webhooks) = (
            self.on(in_tree::MUTATING_ADMISSION_POLICY),
            self.on(in_tree::MUTATING_ADMISSION_WEBHOOK),
        );
        // Round 0, then (when a later change asks for it) the reinvocation
        // round: upstream's chain runs every mutating plugin once more.
        let mut state = reinvocation::Reinvocation::default();
        for round in [
            reinvocation::Round::First,
            reinvocation::Round::Reinvocation,
        ] {
            if round == reinvocation::Round::Reinvocation && !state.needed {
                break;
            }
            // Each boxed, and only when there is something to call: the
            // rounds' futures are large, and this one is boxed and moved on
            // every write.
            if policies && self.policies.any_mutating() {
                changed |=
                    Box::pin(self.policies.mutate_round(a, object, &mut state, round)).await?;
            }
            if webhooks && self.webhooks.any_mutating() {
                changed |=
                    Box::pin(self.webhooks.mutate_round(a, object, &mut state, round)).await?;
            }
        }
        Ok(changed)
    }

    async fn admit(&self, a: &Attributes<'_>) -> Result<(), StatusError> {
        self.in_tree.validate_before_policies(a).await?;
        if !exempt(a) {
            // Boxed only when called, as in `mutate`.
            if self.on(in_tree::VALIDATING_ADMISSION_POLICY) && self.policies.any_validating() {
                Box::pin(self.policies.admit(a)).await?;
            }
            if self.on(in_tree::VALIDATING_ADMISSION_WEBHOOK) && self.webhooks.validates(a) {
                Box::pin(self.webhooks.validate(a)).await?;
            }
        }
        self.in_tree.validate(a)
    }

    fn render_metrics(&self, out: &mut String) {
        self.webhooks.render_metrics(out);
    }
}

/// Refuses an admission policy whose expressions do not compile (422, each
/// expression's path and cel-go's message).
pub enum PolicyCheck {
    Validating,
    Mutating,
    /// A webhook configuration's match conditions.
    Webhooks(&'static str),
}

#[async_trait::async_trait]
impl Admission for PolicyCheck {
    async fn admit(
        &self,
        _operation: Operation,
        new: &Value,
        _old: Option<&Value>,
        _ctx: &RequestContext,
    ) -> Result<(), StatusError> {
        let (kind, errs) = match self {
            PolicyCheck::Validating => (VALIDATING, policy::compile(new, false).err()),
            PolicyCheck::Mutating => (
                "MutatingAdmissionPolicy",
                policy::compile_mutating(new, false).err(),
            ),
            PolicyCheck::Webhooks(kind) => {
                let errs = webhooks::condition_errors(new);
                (*kind, (!errs.is_empty()).then_some(errs))
            }
        };
        match errs {
            None => Ok(()),
            Some(errs) => {
                let name = meta::name(new);
                Err(StatusError::invalid(
                    "admissionregistration.k8s.io",
                    kind,
                    name,
                    &errs,
                ))
            }
        }
    }
}
