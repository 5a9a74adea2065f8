//! `admissionregistration.k8s.io/v1` ValidatingWebhookConfiguration and
//! MutatingWebhookConfiguration: upstream's defaults, validation (field paths
//! and messages of `pkg/apis/admissionregistration/validation`) and table
//! columns. Calling the webhooks lives in `kubext-admission`.

use apimachinery::DynamicObject;
use std::collections::HashSet;

use serde_json::{Value, json};

use apimachinery::gofmt::quote;
use apimachinery::validation::{
    is_dns1035_label, is_dns1123_subdomain, is_qualified_name, validate_label_selector,
};
use apimachinery::webhook_config::validate_client_config;
use apimachinery::{ErrorList, FieldError, FieldPath};

use crate::resource::{Strategy, TableColumn};

/// Either kind of webhook configuration.
pub struct WebhookConfigurations {
    pub mutating: bool,
}

pub fn columns() -> Vec<TableColumn> {
    vec![TableColumn::new(
        "Webhooks",
        "integer",
        "Webhooks indicates the number of webhooks registered in this configuration",
    )]
}

const MAX_MATCH_CONDITIONS: usize = 64;

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn list<'a>(v: &'a Value, field: &str) -> &'a [Value] {
    v.get(field)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn strings<'a>(v: &'a Value, field: &str) -> Vec<&'a str> {
    list(v, field).iter().filter_map(Value::as_str).collect()
}

/// Go's `%#v` of a `[]string`.
fn go_strings(values: &[&str]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| quote(v)).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

fn webhooks_mut(obj: &mut Value) -> impl Iterator<Item = &mut serde_json::Map<String, Value>> {
    obj.get_mut("webhooks")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}

impl WebhookConfigurations {
    /// Upstream's v1 defaults (`SetDefaults_ValidatingWebhook` and friends).
    fn set_defaults(&self, obj: &mut Value) {
        let mutating = self.mutating;
        for hook in webhooks_mut(obj) {
            hook.entry("failurePolicy").or_insert(json!("Fail"));
            hook.entry("matchPolicy").or_insert(json!("Equivalent"));
            hook.entry("namespaceSelector").or_insert(json!({}));
            hook.entry("objectSelector").or_insert(json!({}));
            hook.entry("timeoutSeconds").or_insert(json!(10));
            if mutating {
                hook.entry("reinvocationPolicy").or_insert(json!("Never"));
            }
            if let Some(rules) = hook.get_mut("rules").and_then(Value::as_array_mut) {
                for rule in rules.iter_mut().filter_map(Value::as_object_mut) {
                    rule.entry("scope").or_insert(json!("*"));
                }
            }
            if let Some(service) = hook
                .get_mut("clientConfig")
                .and_then(|c| c.get_mut("service"))
                .and_then(Value::as_object_mut)
            {
                service.entry("port").or_insert(json!(443));
            }
        }
    }

    fn validate_all(&self, obj: &Value, old: Option<&Value>) -> ErrorList {
        let mut errs = ErrorList::new();
        let webhooks = list(obj, "webhooks");
        let old_hooks = old.map_or(&[][..], |o| list(o, "webhooks"));
        // On update, rules an existing object already broke are not enforced.
        let old_names_unique = unique_names(old_hooks);
        let old_lacks_known_version = old_hooks
            .iter()
            .any(|h| !has_known_review_version(&strings(h, "admissionReviewVersions")));
        let old_side_effects: HashSet<&str> = old_hooks
            .iter()
            .map(|h| str_at(h, "/sideEffects"))
            .collect();
        let mut seen = HashSet::new();
        for (i, hook) in webhooks.iter().enumerate() {
            let at = FieldPath::new("webhooks").index(i);
            let name = str_at(hook, "/name");
            if !seen.insert(name) && (old.is_none() || old_names_unique) {
                errs.push(FieldError::duplicate(&at.child("name"), json!(name)));
            }
            errs.extend(validate_fully_qualified_name(name, &at.child("name")));
            self.validate_webhook(hook, &at, &old_side_effects, &mut errs);
            validate_review_versions(
                &strings(hook, "admissionReviewVersions"),
                &at.child("admissionReviewVersions"),
                old_lacks_known_version,
                &mut errs,
            );
        }
        errs
    }

    /// What one webhook must satisfy besides its name's uniqueness and its
    /// review versions, in upstream's order. `old_side_effects`: the classes
    /// the stored object already used (still accepted on update).
    fn validate_webhook(
        &self,
        hook: &Value,
        at: &FieldPath,
        old_side_effects: &HashSet<&str>,
        errs: &mut ErrorList,
    ) {
        for (i, rule) in list(hook, "rules").iter().enumerate() {
            validate_rule(rule, &at.child("rules").index(i), errs);
        }
        let mut choice = |field: &str, allowed: &[&str]| {
            if let Some(v) = hook.get(field).and_then(Value::as_str)
                && !allowed.contains(&v)
            {
                errs.push(FieldError::not_supported(
                    &at.child(field),
                    json!(v),
                    allowed,
                ));
            }
        };
        choice("failurePolicy", &["Fail", "Ignore"]);
        choice("matchPolicy", &["Equivalent", "Exact"]);
        match hook.get("sideEffects").and_then(Value::as_str) {
            None => errs.push(FieldError::required(
                &at.child("sideEffects"),
                "must specify one of None, NoneOnDryRun",
            )),
            Some("None" | "NoneOnDryRun") => {}
            Some(s) if old_side_effects.contains(s) && matches!(s, "Some" | "Unknown") => {}
            Some(s) => errs.push(FieldError::not_supported(
                &at.child("sideEffects"),
                json!(s),
                &["None", "NoneOnDryRun"],
            )),
        }
        if let Some(t) = hook.get("timeoutSeconds").and_then(Value::as_i64)
            && !(1..=30).contains(&t)
        {
            errs.push(FieldError::invalid(
                &at.child("timeoutSeconds"),
                json!(t),
                "the timeout value must be between 1 and 30 seconds",
            ));
        }
        for selector in ["namespaceSelector", "objectSelector"] {
            if let Some(s) = hook.get(selector).filter(|s| !s.is_null()) {
                errs.extend(validate_label_selector(s, &at.child(selector)));
            }
        }
        errs.extend(validate_client_config(
            hook.get("clientConfig").unwrap_or(&Value::Null),
            &at.child("clientConfig"),
        ));
        if self.mutating
            && let Some(v) = hook.get("reinvocationPolicy").and_then(Value::as_str)
            && !["IfNeeded", "Never"].contains(&v)
        {
            errs.push(FieldError::not_supported(
                &at.child("reinvocationPolicy"),
                json!(v),
                &["IfNeeded", "Never"],
            ));
        }
        validate_match_conditions(list(hook, "matchConditions"), at, errs);
    }
}

fn unique_names(hooks: &[Value]) -> bool {
    let mut seen = HashSet::new();
    hooks.iter().all(|h| seen.insert(str_at(h, "/name")))
}

/// `IsFullyQualifiedName`: a DNS subdomain of at least three segments.
fn validate_fully_qualified_name(name: &str, path: &FieldPath) -> ErrorList {
    if name.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let problems = is_dns1123_subdomain(name);
    if !problems.is_empty() {
        return vec![FieldError::invalid(path, json!(name), &problems.join(","))];
    }
    if name.split('.').count() < 3 {
        return vec![FieldError::invalid(
            path,
            json!(name),
            "should be a domain with at least three segments separated by dots",
        )];
    }
    Vec::new()
}

fn has_known_review_version(versions: &[&str]) -> bool {
    versions.iter().any(|v| matches!(*v, "v1" | "v1beta1"))
}

/// `admissionReviewVersions` (and a CRD's `conversionReviewVersions`).
pub fn validate_review_versions(
    versions: &[&str],
    path: &FieldPath,
    relaxed: bool,
    errs: &mut ErrorList,
) {
    if versions.is_empty() {
        errs.push(FieldError::required(
            path,
            "must specify one of v1, v1beta1",
        ));
        return;
    }
    let mut seen = HashSet::new();
    for (j, v) in versions.iter().enumerate() {
        if !seen.insert(*v) {
            errs.push(FieldError::invalid(
                &path.index(j),
                json!(v),
                "duplicate version",
            ));
            continue;
        }
        for problem in is_dns1035_label(v) {
            errs.push(FieldError::invalid(&path.index(j), json!(v), &problem));
        }
    }
    if !relaxed && !has_known_review_version(versions) {
        errs.push(FieldError::invalid_go(
            path,
            &go_strings(versions),
            "must include at least one of v1, v1beta1",
        ));
    }
}

/// `rules[k]`: operations, groups, versions, resources (with subresources), scope.
fn validate_rule(rule: &Value, at: &FieldPath, errs: &mut ErrorList) {
    let operations = strings(rule, "operations");
    if operations.is_empty() {
        errs.push(FieldError::required(&at.child("operations"), ""));
    }
    if operations.len() > 1 && operations.contains(&"*") {
        errs.push(FieldError::invalid_go(
            &at.child("operations"),
            &go_strings(&operations),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, op) in operations.iter().enumerate() {
        if !["*", "CONNECT", "CREATE", "DELETE", "UPDATE"].contains(op) {
            errs.push(FieldError::not_supported(
                &at.child("operations").index(i),
                json!(op),
                &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"],
            ));
        }
    }
    for (field, what) in [("apiGroups", "API groups"), ("apiVersions", "API versions")] {
        let values = strings(rule, field);
        if values.is_empty() {
            errs.push(FieldError::required(&at.child(field), ""));
        }
        if values.len() > 1 && values.contains(&"*") {
            errs.push(FieldError::invalid_go(
                &at.child(field),
                &go_strings(&values),
                &format!("if '*' is present, must not specify other {what}"),
            ));
        }
    }
    for (i, v) in strings(rule, "apiVersions").iter().enumerate() {
        if v.is_empty() {
            errs.push(FieldError::required(&at.child("apiVersions").index(i), ""));
        }
    }
    validate_resources(&strings(rule, "resources"), &at.child("resources"), errs);
    if let Some(scope) = rule.get("scope").and_then(Value::as_str)
        && !["*", "Cluster", "Namespaced"].contains(&scope)
    {
        errs.push(FieldError::not_supported(
            &at.child("scope"),
            json!(scope),
            &["*", "Cluster", "Namespaced"],
        ));
    }
}

/// Resources with subresources: `x/*` and `*/x` exclude what they cover.
fn validate_resources(resources: &[&str], path: &FieldPath, errs: &mut ErrorList) {
    if resources.is_empty() {
        errs.push(FieldError::required(path, ""));
    }
    let mut wildcard_subresources = HashSet::new();
    let mut wildcard_resources = HashSet::new();
    let (mut double_wildcard, mut single_wildcard, mut plain) = (false, false, false);
    for (i, entry) in resources.iter().enumerate() {
        if entry.is_empty() {
            errs.push(FieldError::required(&path.index(i), ""));
            continue;
        }
        double_wildcard |= *entry == "*/*";
        single_wildcard |= *entry == "*";
        let Some((res, sub)) = entry.split_once('/') else {
            plain = *entry != "*";
            continue;
        };
        if wildcard_subresources.contains(res) {
            errs.push(FieldError::invalid(
                &path.index(i),
                json!(entry),
                &format!("if '{res}/*' is present, must not specify {entry}"),
            ));
        }
        if wildcard_resources.contains(sub) {
            errs.push(FieldError::invalid(
                &path.index(i),
                json!(entry),
                &format!("if '*/{sub}' is present, must not specify {entry}"),
            ));
        }
        if sub == "*" {
            wildcard_subresources.insert(res);
        }
        if res == "*" {
            wildcard_resources.insert(sub);
        }
    }
    if resources.len() > 1 && double_wildcard {
        errs.push(FieldError::invalid_go(
            path,
            &go_strings(resources),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if single_wildcard && plain {
        errs.push(FieldError::invalid_go(
            path,
            &go_strings(resources),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
}

/// `matchConditions`: at most 64, named uniquely, with an expression (whether
/// it compiles is checked by admission, which owns CEL).
fn validate_match_conditions(conditions: &[Value], at: &FieldPath, errs: &mut ErrorList) {
    let path = at.child("matchConditions");
    if conditions.len() > MAX_MATCH_CONDITIONS {
        errs.push(FieldError::too_many(
            &path,
            conditions.len(),
            MAX_MATCH_CONDITIONS,
        ));
    }
    let mut names = HashSet::new();
    for (j, condition) in conditions.iter().enumerate() {
        let at = path.index(j);
        let name = str_at(condition, "/name");
        if name.is_empty() {
            errs.push(FieldError::required(&at.child("name"), ""));
        } else {
            for problem in is_qualified_name(name) {
                errs.push(FieldError::invalid(
                    &at.child("name"),
                    json!(name),
                    &problem,
                ));
            }
            if !names.insert(name) {
                errs.push(FieldError::duplicate(&at.child("name"), json!(name)));
            }
        }
        if str_at(condition, "/expression").trim().is_empty() {
            errs.push(FieldError::required(&at.child("expression"), ""));
        }
    }
}

impl Strategy for WebhookConfigurations {
    /// Where upstream decodes a body, so managedFields list the defaults.
    fn default(&self, obj: &mut DynamicObject) {
        self.set_defaults(obj);
    }

    fn validate(&self, obj: &DynamicObject) -> ErrorList {
        self.validate_all(obj, None)
    }

    fn validate_update(&self, new: &DynamicObject, old: &DynamicObject) -> ErrorList {
        self.validate_all(new, Some(old))
    }

    fn row(&self, obj: &Value) -> Vec<Value> {
        vec![json!(list(obj, "webhooks").len())]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::typed_objects::{typed, with_typed};

    fn messages(obj: &Value) -> Vec<String> {
        let strategy = WebhookConfigurations { mutating: true };
        let mut obj = typed(obj);
        Strategy::default(&strategy, &mut obj);
        strategy
            .validate(&obj)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn hook(extra: Value) -> Value {
        let mut hook = json!({
            "name": "deny.example.com",
            "clientConfig": {"url": "https://127.0.0.1:8443/deny"},
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
        });
        for (k, v) in extra.as_object().into_iter().flatten() {
            hook[k] = v.clone();
        }
        json!({"metadata": {"name": "c"}, "webhooks": [hook]})
    }

    #[test]
    fn defaults_as_upstream() {
        let mut obj = hook(json!({"clientConfig": {"service": {"name": "s", "namespace": "n"}}}));
        with_typed(&mut obj, |o| {
            Strategy::default(&WebhookConfigurations { mutating: true }, o)
        });
        let h = &obj["webhooks"][0];
        assert_eq!(h["failurePolicy"], "Fail");
        assert_eq!(h["matchPolicy"], "Equivalent");
        assert_eq!(h["timeoutSeconds"], 10);
        assert_eq!(h["reinvocationPolicy"], "Never");
        assert_eq!(h["namespaceSelector"], json!({}));
        assert_eq!(h["rules"][0]["scope"], "*");
        assert_eq!(h["clientConfig"]["service"]["port"], 443);
    }

    #[test]
    fn upstream_messages() {
        assert!(messages(&hook(json!({}))).is_empty());
        assert_eq!(
            messages(&hook(json!({"name": "deny"}))),
            [
                "webhooks[0].name: Invalid value: \"deny\": should be a domain with at least three segments separated by dots"
            ]
        );
        assert_eq!(
            messages(&hook(json!({"timeoutSeconds": 31}))),
            [
                "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds"
            ]
        );
        assert_eq!(
            messages(&hook(json!({"sideEffects": null}))),
            ["webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun"]
        );
        assert_eq!(
            messages(&hook(json!({"sideEffects": "Some"}))),
            [
                "webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\""
            ]
        );
        assert_eq!(
            messages(&hook(json!({"admissionReviewVersions": ["v2"]}))),
            [
                "webhooks[0].admissionReviewVersions: Invalid value: []string{\"v2\"}: must include at least one of v1, v1beta1"
            ]
        );
        assert_eq!(
            messages(&hook(
                json!({"rules": [{"operations": ["*", "CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["*/*", "pods"]}]})
            )),
            [
                "webhooks[0].rules[0].operations: Invalid value: []string{\"*\", \"CREATE\"}: if '*' is present, must not specify other operations",
                "webhooks[0].rules[0].resources: Invalid value: []string{\"*/*\", \"pods\"}: if '*/*' is present, must not specify other resources",
            ]
        );
    }
}
