//! Mutating admission policies at work: every MutatingAdmissionPolicy whose
//! constraints and binding match the request changes the object in turn —
//! its mutations evaluated (with `object` as mutated so far) into an apply
//! configuration, merged as server-side apply merges, or a JSON patch,
//! applied — once, and once more (in the chain's reinvocation round) for
//! `reinvocationPolicy: IfNeeded` policies when a later policy or webhook
//! changed the object.

use serde_json::Value;

use apimachinery::StatusError;
use cel_rules::Bindings;
use registry::{AdmittedObject, Attributes, ObjectJson};

use crate::policy::{MutatingPolicy, PatchType};
use crate::reinvocation::{Reinvocation, Round};
use crate::{Denial, Entry, Policies};

const MUTATING: &str = "MutatingAdmissionPolicy";

impl Policies {
    /// Apply the mutating policies to `object`: every matching one in round
    /// 0 (`IfNeeded` ones recorded with their output), and in the
    /// reinvocation round those `IfNeeded` ones whose output was changed
    /// since. Whether the object changed.
    pub(crate) async fn mutate_round(
        &self,
        a: &Attributes<'_>,
        object: &mut AdmittedObject<'_>,
        state: &mut Reinvocation,
        round: Round,
    ) -> Result<bool, StatusError> {
        let entries = self.mutating.read().clone();
        if entries.is_empty() {
            return Ok(false);
        }
        let object = object.json();
        let namespace = self.namespace_of(a).await;
        let request = crate::request(a);
        let before_round = object.clone();
        match round {
            Round::First => {
                for (position, entry) in entries.iter().enumerate() {
                    let before = object.clone();
                    self.mutate_by(entry, a, namespace.as_ref(), &request, object)
                        .await
                        .map_err(|d| d.into_error(a))?;
                    if *object != before && !state.policies.is_empty() {
                        // A policy that ran before asked to see later changes.
                        state.needed = true;
                    }
                    if entry.policy.as_ref().is_ok_and(|p| p.reinvoke) {
                        state.policies.push((position, object.clone()));
                    }
                }
            }
            Round::Reinvocation => {
                for (position, after) in std::mem::take(&mut state.policies) {
                    if *object != after
                        && let Some(entry) = entries.get(position)
                    {
                        self.mutate_by(entry, a, namespace.as_ref(), &request, object)
                            .await
                            .map_err(|d| d.into_error(a))?;
                    }
                }
            }
        }
        Ok(*object != before_round)
    }

    async fn mutate_by(
        &self,
        entry: &Entry<MutatingPolicy>,
        a: &Attributes<'_>,
        namespace: Option<&Value>,
        request: &Value,
        object: &mut Value,
    ) -> Result<(), Denial> {
        // Match against the object as mutated so far.
        let current = object.clone();
        let current = ObjectJson::Json(&current);
        let seen = Attributes {
            object: Some(&current),
            ..*a
        };
        let applicable = self
            .applicable(
                MUTATING,
                entry,
                |p: &MutatingPolicy| &p.common,
                &seen,
                namespace,
            )
            .await?;
        let Ok(policy) = &entry.policy else {
            return Ok(());
        };
        let fail = |binding: &str, message: String| Denial {
            kind: MUTATING,
            policy: entry.name.clone(),
            binding: Some(binding.to_string()),
            message,
            reason: "Invalid".into(),
        };
        for (binding, params) in applicable.bindings {
            for param in &params {
                for mutation in &policy.mutations {
                    let current = object.clone();
                    let mut bindings = Bindings::with_object_types(&policy.types);
                    bindings.bind("object", Some(&current));
                    bindings.bind("oldObject", a.old_object);
                    bindings.bind("request", Some(request));
                    bindings.bind("params", param.as_ref());
                    bindings.bind("namespaceObject", namespace);
                    if let Some(authorize) = self.objects.get().and_then(|o| o.authorizer(a.ctx)) {
                        bindings.bind_authorizer("authorizer", authorize);
                    }
                    let outcome = match crate::prepare(&policy.common, &mut bindings) {
                        Ok(false) => break,
                        Ok(true) => apply(mutation, &bindings, &current, a),
                        Err(e) => Err(e),
                    };
                    match outcome {
                        Ok(mutated) => *object = mutated,
                        Err(_) if policy.common.ignore_failures => {}
                        Err(e) => return Err(fail(&binding.name, e)),
                    }
                }
            }
        }
        Ok(())
    }
}

/// The object after one mutation.
fn apply(
    mutation: &crate::policy::Mutation,
    bindings: &Bindings<'_, '_>,
    object: &Value,
    a: &Attributes<'_>,
) -> Result<Value, String> {
    let result = mutation
        .expression
        .evaluate(bindings)
        .map_err(|e| format!("expression '{}' resulted in error: {e}", mutation.source))?;
    let json = result.to_json().ok_or_else(|| {
        format!(
            "expression '{}' resulted in an unsupported value: {}",
            mutation.source,
            result.type_name()
        )
    })?;
    match mutation.patch_type {
        PatchType::JsonPatch => {
            patch::json_patch::apply(object, &json).map_err(|e| format!("JSON Patch: {e}"))
        }
        PatchType::ApplyConfiguration => {
            if !json.is_object() {
                return Err(format!(
                    "apply configuration must evaluate to an object, got {}",
                    result.type_name()
                ));
            }
            Ok(registry::apply::merge_configuration(
                object,
                &json,
                a.rtype.patch_schema(),
            ))
        }
    }
}
