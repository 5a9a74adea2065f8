//! `status.typeChecking` of ValidatingAdmissionPolicies: each validation
//! expression checked again with `object` typed by the schema of every
//! resource the policy names explicitly (no wildcards, as upstream) — a custom
//! resource's from its CRD, a built-in kind's from its OpenAPI schema with the
//! references inlined — and what the checker finds written as expression
//! warnings (`apps/v1, Kind=Deployment: ERROR: <input>:…`), with the
//! generation seen.

use std::sync::Arc;

use apimachinery::meta;
use serde_json::{Value, json};

use cel_rules::Expression;
use registry::GenericStore;
use schema::structural::Structural;

use crate::Objects;
use crate::policy::VARIABLES;

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn strings<'a>(v: &'a Value, field: &str) -> Vec<&'a str> {
    v.get(field)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The custom resources a policy's rules name explicitly: `group/version`,
/// kind and schema.
fn named_types(
    policy: &Value,
    crds: &[Value],
    objects: Option<&Arc<dyn Objects>>,
) -> Vec<(String, String, Structural)> {
    let mut found = Vec::new();
    let rules = policy
        .pointer("/spec/matchConstraints/resourceRules")
        .and_then(Value::as_array);
    for rule in rules.into_iter().flatten() {
        let (groups, versions, resources) = (
            strings(rule, "apiGroups"),
            strings(rule, "apiVersions"),
            strings(rule, "resources"),
        );
        if [&groups, &versions, &resources]
            .iter()
            .any(|l| l.iter().any(|v| v.contains('*')))
        {
            continue;
        }
        for group in &groups {
            for version in &versions {
                for resource in &resources {
                    let plural = resource.split('/').next().unwrap_or("");
                    if let Some((kind, schema)) = builtin_schema(objects, group, version, plural) {
                        let gv = if group.is_empty() {
                            version.to_string()
                        } else {
                            format!("{group}/{version}")
                        };
                        found.push((gv, kind, schema));
                    }
                }
            }
        }
        for crd in crds {
            let group = str_at(crd, "/spec/group");
            let plural = str_at(crd, "/spec/names/plural");
            if !groups.contains(&group)
                || !resources
                    .iter()
                    .any(|r| r.split('/').next() == Some(plural))
            {
                continue;
            }
            let served = crd.pointer("/spec/versions").and_then(Value::as_array);
            for version in served.into_iter().flatten() {
                let name = str_at(version, "/name");
                let schema = version.pointer("/schema/openAPIV3Schema");
                if let (true, Some(Ok(s))) =
                    (versions.contains(&name), schema.map(Structural::compile))
                {
                    found.push((
                        format!("{group}/{name}"),
                        str_at(crd, "/spec/names/kind").to_string(),
                        s,
                    ));
                }
            }
        }
    }
    found
}

/// A built-in kind's schema, as a structural schema: its OpenAPI schema with
/// references inlined (to a bounded depth) and int-or-string marked as such.
fn builtin_schema(
    objects: Option<&Arc<dyn Objects>>,
    group: &str,
    version: &str,
    plural: &str,
) -> Option<(String, Structural)> {
    let kind = objects?.kind_of(group, version, plural)?;
    let components = openapi::builtin_components();
    let builtin = openapi::builtin_kinds()
        .iter()
        .find(|k| k.gvk.group == group && k.gvk.version == version && k.gvk.kind == kind)?;
    let schema = inline(components.get(&builtin.schema)?, components, 0);
    Some((kind, Structural::compile(&schema).ok()?))
}

/// `schema` with `$ref`s (and `allOf: [$ref]`) replaced by what they name.
fn inline(schema: &Value, components: &serde_json::Map<String, Value>, depth: usize) -> Value {
    const DEPTH: usize = 12;
    let Some(object) = schema.as_object() else {
        return schema.clone();
    };
    let reference = object
        .get("$ref")
        .or_else(|| object.get("allOf")?.as_array()?.first()?.get("$ref"))
        .and_then(Value::as_str);
    if let Some(reference) = reference {
        let name = reference.trim_start_matches("#/components/schemas/");
        return match components.get(name) {
            Some(_) if depth >= DEPTH => {
                json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
            }
            Some(target) => inline(target, components, depth + 1),
            None => json!({"x-kubernetes-preserve-unknown-fields": true}),
        };
    }
    if object.get("format").and_then(Value::as_str) == Some("int-or-string") {
        return json!({"x-kubernetes-int-or-string": true});
    }
    let mut out = serde_json::Map::new();
    for (k, v) in object {
        let v = match k.as_str() {
            "properties" => Value::Object(
                v.as_object()
                    .into_iter()
                    .flatten()
                    .map(|(name, p)| (name.clone(), inline(p, components, depth)))
                    .collect(),
            ),
            "items" | "additionalProperties" if v.is_object() => inline(v, components, depth),
            "description" | "x-kubernetes-group-version-kind" => continue,
            _ => v.clone(),
        };
        out.insert(k.clone(), v);
    }
    Value::Object(out)
}

/// The `status.typeChecking` a policy should have.
fn type_checking(policy: &Value, crds: &[Value], objects: Option<&Arc<dyn Objects>>) -> Value {
    let types = named_types(policy, crds, objects);
    let validations = policy
        .pointer("/spec/validations")
        .and_then(Value::as_array);
    let warnings: Vec<Value> = validations
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, v)| {
            let source = str_at(v, "/expression");
            let found: Vec<String> = types
                .iter()
                .filter_map(|(gv, kind, s)| {
                    Expression::check_against(source, VARIABLES, s)
                        .err()
                        .map(|issues| format!("{gv}, Kind={kind}: {issues}"))
                })
                .collect();
            (!found.is_empty()).then(|| {
                json!({"fieldRef": format!("spec.validations[{i}].expression"),
                    "warning": found.join("\n")})
            })
        })
        .collect();
    if warnings.is_empty() {
        json!({})
    } else {
        json!({"expressionWarnings": warnings})
    }
}

/// Write each policy's status where it differs from what it should be.
pub(crate) async fn write(
    store: &Arc<GenericStore>,
    policies: &[Value],
    crds: &[Value],
    objects: Option<&Arc<dyn Objects>>,
) {
    for policy in policies {
        let generation = meta::metadata(policy)
            .and_then(|m| m.get("generation"))
            .cloned()
            .unwrap_or(json!(1));
        let wanted = type_checking(policy, crds, objects);
        if policy.pointer("/status/typeChecking") == Some(&wanted)
            && policy.pointer("/status/observedGeneration") == Some(&generation)
        {
            continue;
        }
        let name = meta::name(policy);
        let mut ctx = runtime::system_context("", "kubext-admission");
        ctx.subresource = apimachinery::Subresource::Status;
        let result = store
            .update_with(&ctx, name, |current| {
                let mut next = current.clone();
                next["status"]["typeChecking"] = wanted.clone();
                next["status"]["observedGeneration"] = generation.clone();
                Ok(next)
            })
            .await;
        if let Err(e) = result
            && e.code() != 404
        {
            tracing::warn!(policy = name, error = %e, "cannot update the policy's type checking");
        }
    }
}
