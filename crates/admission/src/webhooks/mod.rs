//! Admission webhooks: kube-apiserver 1.33's MutatingAdmissionWebhook and
//! ValidatingAdmissionWebhook. [`Webhooks`] holds every configuration's
//! webhooks compiled (rebuilt when a configuration changes), picks those that
//! apply to a write (rules with `matchPolicy`, namespace and object
//! selectors, CEL match conditions), calls them over `kubext-webhook`'s
//! pooled TLS clients — mutating webhooks in order with reinvocation,
//! validating ones in parallel — and turns their answers into patches,
//! denials, warnings and audit annotations with upstream's messages, codes
//! and failure policies.
//!
//! Invariant: a call costs at most its webhook's `timeoutSeconds`; nothing
//! is compiled per request.

mod hook;
mod metrics;
mod review;

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use apimachinery::status::StatusDetails;
use apimachinery::{GroupResource, Status, StatusError, meta};
use cel_rules::Bindings;
use parking_lot::RwLock;
use serde_json::{Value, json};

use registry::{AdmittedObject, Attributes, ObjectJson, Operation};
use webhook::{CallError, Caller, ClientError};

use crate::Objects;
use crate::reinvocation::{Reinvocation, Round};
use hook::Hook;
pub use hook::condition_errors;
use review::{Answer, Invocation};

/// Every configuration's webhooks, in upstream's order: configurations by
/// name, webhooks as listed.
#[derive(Default)]
struct Hooks {
    mutating: Vec<Hook>,
    validating: Vec<Hook>,
}

/// The compiled webhooks, and admission by them.
#[derive(Default)]
pub struct Webhooks {
    hooks: RwLock<Arc<Hooks>>,
    /// Calls them (a connection pool per client configuration and address).
    caller: OnceLock<Caller>,
    objects: OnceLock<Arc<dyn Objects>>,
}

fn compile_all(configurations: &[Value]) -> Vec<Hook> {
    let mut sorted: Vec<&Value> = configurations.iter().collect();
    sorted.sort_by_key(|c| meta::str_field(c, "name"));
    let mut hooks = Vec::new();
    for configuration in sorted {
        let name = meta::name(configuration);
        let listed = configuration.get("webhooks").and_then(Value::as_array);
        for hook in listed.into_iter().flatten() {
            let index = hooks.len();
            hooks.push(Hook::compile(name, hook, index));
        }
    }
    hooks
}

/// The outcome of one webhook for a request.
enum Called {
    /// Not called (no match, a false condition, or failed open).
    Skipped,
    /// Called; a mutating webhook's patched object, if it changed it.
    Answered(Option<Value>),
}

/// Why a call produced no answer: upstream's `ErrCallingWebhook`.
struct CallFailure {
    /// After `failed calling webhook "x": `.
    reason: String,
    /// The metrics' `code` label (0: no HTTP status).
    code: u16,
    elapsed: std::time::Duration,
}

impl CallFailure {
    /// A failure before anything was sent.
    fn before_call(reason: &str, code: u16) -> CallFailure {
        CallFailure {
            reason: reason.to_string(),
            code,
            elapsed: std::time::Duration::ZERO,
        }
    }
}

/// Upstream's `ToStatusErr`: the webhook's own status, as a failure, 400 at least.
fn rejection(hook: &str, status: Option<&Value>) -> StatusError {
    let status = status.cloned().unwrap_or(Value::Null);
    let text = |field: &str| status.get(field).and_then(Value::as_str).unwrap_or("");
    let detail = match (text("message"), text("reason")) {
        ("", "") => String::new(),
        ("", reason) => reason.to_string(),
        (message, _) => message.to_string(),
    };
    let message = if detail.is_empty() {
        format!("admission webhook {hook:?} denied the request without explanation")
    } else {
        format!("admission webhook {hook:?} denied the request: {detail}")
    };
    let code = status
        .get("code")
        .and_then(Value::as_u64)
        .map_or(400, |c| if c < 400 { 400 } else { c as u16 });
    let details = status
        .get("details")
        .and_then(|d| serde_json::from_value::<StatusDetails>(d.clone()).ok());
    StatusError(Box::new(Status {
        kind: "Status".into(),
        api_version: "v1".into(),
        status: Some("Failure".into()),
        message,
        reason: text("reason").to_string(),
        details,
        code,
        ..Default::default()
    }))
}

/// The `request` variable of match conditions.
fn request_variable(a: &Attributes<'_>) -> Value {
    crate::request(a)
}

impl Webhooks {
    pub fn new() -> Webhooks {
        Webhooks::default()
    }

    /// Where namespaces and kinds are read from, and what calls webhooks.
    pub fn attach(&self, objects: Arc<dyn Objects>, caller: Caller) {
        let _ = self.objects.set(objects);
        let _ = self.caller.set(caller);
    }

    /// Replace the webhooks with those of these configurations.
    pub fn set(&self, validating: &[Value], mutating: &[Value]) {
        *self.hooks.write() = Arc::new(Hooks {
            mutating: compile_all(mutating),
            validating: compile_all(validating),
        });
        // Pools of configurations that changed are not reused.
        if let Some(caller) = self.caller.get() {
            caller.clear();
        }
    }

    /// The Prometheus text of the metrics of calls out (admission and
    /// conversion webhooks).
    pub fn render_metrics(&self, out: &mut String) {
        if let Some(caller) = self.caller.get() {
            caller.metrics.render(out);
        }
    }

    fn observe(&self, call: &metrics::Call<'_>) {
        if let Some(caller) = self.caller.get() {
            metrics::observe(&caller.metrics, call);
        }
    }

    fn snapshot(&self) -> Arc<Hooks> {
        self.hooks.read().clone()
    }

    /// Whether there is a mutating webhook (else its round has nothing to do).
    pub(crate) fn any_mutating(&self) -> bool {
        !self.hooks.read().mutating.is_empty()
    }

    /// Whether [`Self::validate`] has a webhook to call for `a`: a validating
    /// one, or on a delete a mutating one.
    pub(crate) fn validates(&self, a: &Attributes<'_>) -> bool {
        let hooks = self.hooks.read();
        !hooks.validating.is_empty()
            || (a.operation == Operation::Delete && !hooks.mutating.is_empty())
    }

    /// Mutating webhooks on a create or update, in order: `object` is
    /// changed in place. In round 0 every one that applies is called; a
    /// change asks for a reinvocation round in which the `IfNeeded` ones
    /// called before it (all of them, if policies changed the object in
    /// between) are called again. Whether the object changed.
    pub(crate) async fn mutate_round(
        &self,
        a: &Attributes<'_>,
        object: &mut AdmittedObject<'_>,
        state: &mut Reinvocation,
        round: Round,
    ) -> Result<bool, StatusError> {
        let hooks = self.snapshot();
        if hooks.mutating.is_empty() {
            return Ok(false);
        }
        let object = object.json();
        if round == Round::Reinvocation
            && state.webhook_output.as_ref().is_some_and(|o| o != object)
        {
            state
                .webhooks_to_call
                .extend(state.webhooks_invoked.iter().copied());
        }
        let namespace = self.namespace_of(a).await;
        let mut changed_any = false;
        for hook in &hooks.mutating {
            if round == Round::Reinvocation && !state.webhooks_to_call.contains(&hook.index) {
                continue;
            }
            let json = ObjectJson::Json(object);
            let view = Attributes {
                object: Some(&json),
                ..*a
            };
            let called = self
                .call(hook, true, &view, namespace.as_ref(), round.number())
                .await?;
            let Called::Answered(changed) = called else {
                continue;
            };
            if let Some(changed) = changed {
                *object = changed;
                changed_any = true;
                state.needed = true;
                state
                    .webhooks_to_call
                    .extend(state.webhooks_invoked.iter().copied());
            }
            if hook.reinvoke && !state.webhooks_invoked.contains(&hook.index) {
                state.webhooks_invoked.push(hook.index);
            }
        }
        state.webhook_output = Some(object.clone());
        Ok(changed_any)
    }

    /// Validating webhooks (and, on delete, mutating ones, which may only
    /// look): all that apply are called at once; the first failure in
    /// webhook order is the answer.
    pub async fn validate(&self, a: &Attributes<'_>) -> Result<(), StatusError> {
        let hooks = self.snapshot();
        let on_delete = a.operation == Operation::Delete && !hooks.mutating.is_empty();
        if hooks.validating.is_empty() && !on_delete {
            return Ok(());
        }
        let namespace = self.namespace_of(a).await;
        if a.operation == Operation::Delete {
            for hook in &hooks.mutating {
                self.call(hook, true, a, namespace.as_ref(), 0).await?;
            }
        }
        let calls = hooks
            .validating
            .iter()
            .map(|hook| self.call(hook, false, a, namespace.as_ref(), 0));
        for outcome in futures::future::join_all(calls).await {
            outcome?;
        }
        Ok(())
    }

    async fn namespace_of(&self, a: &Attributes<'_>) -> Option<Value> {
        match self.objects.get() {
            Some(objects) if a.rtype.namespaced && !a.ctx.namespace.is_empty() => {
                objects.namespace(&a.ctx.namespace).await
            }
            _ => None,
        }
    }

    /// The version (and its kind) `hook` applies to `a` in, if it does.
    fn select(
        &self,
        hook: &Hook,
        a: &Attributes<'_>,
        namespace: Option<&Value>,
    ) -> Result<Option<(String, String)>, StatusError> {
        let matcher = hook.matcher.as_ref().map_err(StatusError::internal)?;
        let objects = self.objects.get();
        let others = || match objects {
            Some(o) => o.other_versions(&a.rtype.group, &a.rtype.plural, &a.rtype.version),
            None => Vec::new(),
        };
        let Some(through) = matcher.select(a, namespace, true, &others) else {
            return Ok(None);
        };
        Ok(Some(match through {
            None => (a.rtype.version.clone(), a.rtype.kind.clone()),
            Some(version) => {
                let kind = objects
                    .and_then(|o| o.kind_of(&a.rtype.group, &version, &a.rtype.plural))
                    .ok_or_else(|| {
                        StatusError::internal(format!(
                            "unable to convert to {}/{version}, Resource={}: unknown kind",
                            a.rtype.group, a.rtype.plural
                        ))
                    })?;
                (version, kind)
            }
        }))
    }

    /// Whether `hook`'s match conditions let it be called; an error when one
    /// fails to evaluate and none is false (upstream: 403 unless ignored).
    fn conditions_hold(
        &self,
        hook: &Hook,
        mutating: bool,
        a: &Attributes<'_>,
    ) -> Result<bool, StatusError> {
        let conditions = match &hook.conditions {
            Ok(c) if c.is_empty() => return Ok(true),
            Ok(c) => c,
            Err(e) => return self.condition_error(hook, a, e.to_string()),
        };
        let started = Instant::now();
        let request = request_variable(a);
        let mut bindings = Bindings::default();
        bindings.bind("object", a.object());
        bindings.bind("oldObject", a.old_object);
        bindings.bind("request", Some(&request));
        bindings.bind("namespaceObject", None);
        if let Some(authorize) = self.objects.get().and_then(|o| o.authorizer(a.ctx)) {
            bindings.bind_authorizer("authorizer", authorize);
        }
        let mut errors = Vec::new();
        let mut excluded = false;
        for condition in conditions {
            match condition
                .expression
                .evaluate(&bindings)
                .map(|v| v.as_bool())
            {
                Ok(Some(true)) => {}
                Ok(Some(false)) => {
                    excluded = true;
                    break;
                }
                Ok(None) => errors.push(format!(
                    "expression '{}' resulted in error: must evaluate to bool",
                    condition.source
                )),
                Err(e) => errors.push(format!(
                    "expression '{}' resulted in error: {e}",
                    condition.source
                )),
            }
        }
        if let Some(caller) = self.caller.get() {
            metrics::observe_conditions(
                &caller.metrics,
                &metrics::Conditions {
                    name: &hook.name,
                    mutating,
                    operation: a.operation.as_str(),
                    elapsed: started.elapsed(),
                    errors: errors.len(),
                    excluded,
                },
            );
        }
        // Any false condition skips the webhook, whatever failed to evaluate.
        match (excluded, errors.len()) {
            (true, _) => Ok(false),
            (false, 0) => Ok(true),
            (false, 1) => self.condition_error(hook, a, errors.remove(0)),
            (false, _) => self.condition_error(hook, a, format!("[{}]", errors.join(", "))),
        }
    }

    fn condition_error(
        &self,
        hook: &Hook,
        a: &Attributes<'_>,
        error: String,
    ) -> Result<bool, StatusError> {
        if hook.ignore_failures {
            tracing::warn!(webhook = %hook.name, %error, "match condition failed; webhook skipped");
            return Ok(false);
        }
        let gr = GroupResource::new(&a.rtype.group, &a.rtype.plural);
        Err(StatusError::forbidden(&gr, a.name, &error))
    }

    /// Call `hook` about `a` if it applies; `round` 1 is a reinvocation.
    async fn call(
        &self,
        hook: &Hook,
        mutating: bool,
        a: &Attributes<'_>,
        namespace: Option<&Value>,
        round: usize,
    ) -> Result<Called, StatusError> {
        let Some((version, kind)) = self.select(hook, a, namespace)? else {
            return Ok(Called::Skipped);
        };
        if !self.conditions_hold(hook, mutating, a)? {
            return Ok(Called::Skipped);
        }
        if a.ctx.dry_run {
            if !hook.side_effects_set {
                let failure = CallFailure::before_call("Webhook SideEffects is nil", 400);
                return self.failed(hook, mutating, a, round, failure);
            }
            if !hook.dry_run_safe {
                return Err(StatusError::bad_request(format!(
                    "admission webhook {:?} does not support dry run",
                    hook.name
                )));
            }
        }
        let Some(review_version) = hook.review_version else {
            let failure = CallFailure::before_call(
                "could not create admission objects: webhook does not accept known AdmissionReview versions (v1, v1beta1)",
                400,
            );
            return self.failed(hook, mutating, a, round, failure);
        };
        // Under `matchPolicy: Equivalent` the webhook sees the object in the
        // version its rules name.
        let converted =
            |o: Option<&Value>| o.map(|o| crate::as_version(o, &a.rtype.group, &version));
        let (object, old_object) = if version == a.rtype.version {
            (a.object().cloned(), a.old_object.cloned())
        } else {
            (converted(a.object()), converted(a.old_object))
        };
        let invocation = Invocation {
            attributes: a,
            version: &version,
            kind: &kind,
            object: object.as_ref(),
            old_object: old_object.as_ref(),
        };
        let uid = apimachinery::object_meta::new_uid();
        let body = review::request_body(review_version, &uid, &invocation);
        let started = Instant::now();
        let answer = match self.post(hook, body).await {
            Ok(body) => {
                review::verify(review_version, &uid, &body, mutating).map_err(|e| e.to_string())
            }
            Err(CallError::Client(e)) => Err(format!("could not get REST client: {e}")),
            Err(CallError::Request(e)) => Err(format!("failed to call webhook: {e}")),
        };
        let answer = match answer {
            Ok(answer) => answer,
            Err(reason) => {
                let failure = CallFailure {
                    reason,
                    code: 0,
                    elapsed: started.elapsed(),
                };
                return self.failed(hook, mutating, a, round, failure);
            }
        };
        self.observe(&metrics::Call {
            name: &hook.name,
            mutating,
            operation: a.operation.as_str(),
            elapsed: started.elapsed(),
            code: if answer.allowed {
                200
            } else {
                rejection(&hook.name, answer.status.as_ref()).code()
            },
            rejected: !answer.allowed,
            error_type: "no_error",
        });
        self.record(hook, a, &answer);
        if !answer.allowed {
            return Err(rejection(&hook.name, answer.status.as_ref()));
        }
        if !mutating {
            return Ok(Called::Answered(None));
        }
        let patched = self.patch(hook, object.as_ref(), answer.patch.as_deref())?;
        let changed = patched.filter(|p| Some(p) != object.as_ref()).map(|mut p| {
            // Back in the request's version.
            if version != a.rtype.version
                && let Some(o) = a.object()
            {
                p["apiVersion"] = o.get("apiVersion").cloned().unwrap_or(Value::Null);
            }
            p
        });
        // Upstream's annotations, fields in its structs' order.
        let names = format!(
            "\"configuration\":{},\"webhook\":{}",
            json!(hook.configuration),
            json!(hook.name)
        );
        let key = format!("round_{round}_index_{}", hook.index);
        a.ctx.audit_annotations.add(
            format!("mutation.webhook.admission.k8s.io/{key}"),
            format!("{{{names},\"mutated\":{}}}", changed.is_some()),
        );
        if let Some(patch) = answer
            .patch
            .as_deref()
            .and_then(|p| serde_json::from_slice::<Value>(p).ok())
            .filter(|p| p.as_array().is_some_and(|ops| !ops.is_empty()))
        {
            a.ctx.audit_annotations.add_at_request_level(
                format!("patch.webhook.admission.k8s.io/{key}"),
                format!("{{{names},\"patch\":{patch},\"patchType\":\"JSONPatch\"}}"),
            );
        }
        Ok(Called::Answered(changed))
    }

    /// POST `body` to the webhook with upstream's `?timeout=` query.
    async fn post(&self, hook: &Hook, body: Vec<u8>) -> Result<bytes::Bytes, CallError> {
        let caller = self
            .caller
            .get()
            .ok_or(CallError::Client(ClientError::NotAttached))?;
        let query = format!("?timeout={}s", hook.timeout.as_secs());
        caller.post(&hook.client, &query, body, hook.timeout).await
    }

    /// The warnings and audit annotations of an answer.
    fn record(&self, hook: &Hook, a: &Attributes<'_>, answer: &Answer) {
        for warning in &answer.warnings {
            if !warning.chars().any(char::is_control) {
                a.ctx.warnings.add(warning.clone());
            }
        }
        for (key, value) in &answer.audit_annotations {
            a.ctx
                .audit_annotations
                .add(format!("{}/{key}", hook.name), value.clone());
        }
    }

    /// `object` with the webhook's JSON patch applied (`None`: no change asked).
    fn patch(
        &self,
        hook: &Hook,
        object: Option<&Value>,
        patch: Option<&[u8]>,
    ) -> Result<Option<Value>, StatusError> {
        let Some(patch) = patch else {
            return Ok(None);
        };
        let ops = patch::json_patch::JsonPatch::from_slice(patch)
            .map_err(|e| StatusError::internal(e.to_string()))?;
        if ops.is_empty() {
            return Ok(None);
        }
        let Some(object) = object else {
            return Err(StatusError::internal(format!(
                "admission webhook {:?} attempted to modify the object, which is not supported for this operation",
                hook.name
            )));
        };
        ops.apply(object)
            .map(Some)
            .map_err(|e| StatusError::internal(e.to_string()))
    }

    /// A call that did not produce an answer: skipped under `failurePolicy:
    /// Ignore`, else 500 `failed calling webhook "x": <reason>`.
    fn failed(
        &self,
        hook: &Hook,
        mutating: bool,
        a: &Attributes<'_>,
        round: usize,
        failure: CallFailure,
    ) -> Result<Called, StatusError> {
        let message = format!("failed calling webhook {:?}: {}", hook.name, failure.reason);
        self.observe(&metrics::Call {
            name: &hook.name,
            mutating,
            operation: a.operation.as_str(),
            elapsed: failure.elapsed,
            code: failure.code,
            rejected: !hook.ignore_failures,
            error_type: "calling_webhook_error",
        });
        if !hook.ignore_failures {
            return Err(StatusError::internal(message));
        }
        tracing::warn!(webhook = %hook.name, error = %message, "webhook failed open");
        if let Some(caller) = self.caller.get() {
            metrics::failed_open(&caller.metrics, &hook.name, mutating);
        }
        let kind = if mutating { "mutation" } else { "validating" };
        a.ctx.audit_annotations.add(
            format!(
                "failed-open.{kind}.webhook.admission.k8s.io/round_{round}_index_{}",
                hook.index
            ),
            hook.name.clone(),
        );
        Ok(Called::Skipped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denials_as_upstream() {
        let err = rejection(
            "deny.example.com",
            Some(&json!({"message": "this webhook denies all requests", "code": 200})),
        );
        assert_eq!(err.code(), 400);
        assert_eq!(
            err.status().message,
            "admission webhook \"deny.example.com\" denied the request: this webhook denies all requests"
        );
        let err = rejection("deny.example.com", None);
        assert_eq!(
            err.status().message,
            "admission webhook \"deny.example.com\" denied the request without explanation"
        );
        let err = rejection(
            "deny.example.com",
            Some(&json!({"reason": "Forbidden", "code": 403})),
        );
        assert_eq!(err.code(), 403);
        assert_eq!(err.reason(), "Forbidden");
        assert_eq!(
            err.status().message,
            "admission webhook \"deny.example.com\" denied the request: Forbidden"
        );
    }
}
