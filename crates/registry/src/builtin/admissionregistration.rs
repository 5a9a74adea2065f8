//! `admissionregistration.k8s.io/v1` ValidatingAdmissionPolicy and
//! ValidatingAdmissionPolicyBinding: upstream's defaults, structural
//! validation and table columns. What the objects mean (compiling their CEL,
//! admitting requests) lives in `kubext-admission`.

use apimachinery::DynamicObject;
use serde_json::{Value, json};

use apimachinery::{ErrorList, FieldError, FieldPath};

use crate::resource::{Prepared, Strategy, TableColumn};

pub const GROUP: &str = "admissionregistration.k8s.io";

pub struct Policies;
pub struct PolicyBindings;

pub fn policy_columns() -> Vec<TableColumn> {
    vec![
        TableColumn::new(
            "Validations",
            "integer",
            "Validations indicates the number of validation rules defined in this configuration",
        ),
        TableColumn::new(
            "ParamKind",
            "string",
            "ParamKind specifies the kind of resources used to parameterize this policy",
        ),
    ]
}

pub fn binding_columns() -> Vec<TableColumn> {
    vec![
        TableColumn::new(
            "PolicyName",
            "string",
            "PolicyName indicates the policy definition which the policy binding binded to",
        ),
        TableColumn::new(
            "ParamRef",
            "string",
            "ParamRef indicates the param resource which sets the configuration param",
        ),
    ]
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn list<'a>(v: &'a Value, pointer: &str) -> &'a [Value] {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Upstream's defaults for `matchConstraints`/`matchResources`.
fn default_match_resources(m: &mut Value) {
    let Some(m) = m.as_object_mut() else {
        return;
    };
    m.entry("matchPolicy").or_insert(json!("Equivalent"));
    m.entry("namespaceSelector").or_insert(json!({}));
    m.entry("objectSelector").or_insert(json!({}));
    for rules in ["resourceRules", "excludeResourceRules"] {
        if let Some(rules) = m.get_mut(rules).and_then(Value::as_array_mut) {
            for rule in rules.iter_mut().filter_map(Value::as_object_mut) {
                rule.entry("scope").or_insert(json!("*"));
            }
        }
    }
}

fn supported(value: &str, allowed: &[&str], path: &FieldPath, errs: &mut ErrorList) {
    if !allowed.contains(&value) {
        errs.push(FieldError::not_supported(path, json!(value), allowed));
    }
}

/// `resourceRules` entries: operations and resources as upstream requires.
fn validate_rules(rules: &[Value], path: &FieldPath, errs: &mut ErrorList) {
    for (i, rule) in rules.iter().enumerate() {
        let at = path.index(i);
        for (field, what) in [
            (
                "apiGroups",
                "resource rules must supply at least one api group",
            ),
            (
                "apiVersions",
                "resource rules must supply at least one api version",
            ),
            (
                "resources",
                "resource rules must supply at least one resource",
            ),
        ] {
            if list(rule, &format!("/{field}")).is_empty() {
                errs.push(FieldError::required(&at.child(field), what));
            }
        }
        for (j, op) in list(rule, "/operations").iter().enumerate() {
            supported(
                op.as_str().unwrap_or(""),
                &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"],
                &at.child("operations").index(j),
                errs,
            );
        }
        supported(
            str_at(rule, "/scope"),
            &["*", "Cluster", "Namespaced"],
            &at.child("scope"),
            errs,
        );
    }
}

/// What validating and mutating policies share: `matchConstraints`,
/// `failurePolicy`, `paramKind`.
fn validate_common(obj: &Value, errs: &mut ErrorList) {
    let spec = FieldPath::new("spec");
    match obj.pointer("/spec/matchConstraints") {
        None | Some(Value::Null) => {
            errs.push(FieldError::required(&spec.child("matchConstraints"), ""))
        }
        Some(m) => {
            let at = spec.child("matchConstraints");
            if list(m, "/resourceRules").is_empty() {
                errs.push(FieldError::required(&at.child("resourceRules"), ""));
            }
            validate_rules(list(m, "/resourceRules"), &at.child("resourceRules"), errs);
            validate_rules(
                list(m, "/excludeResourceRules"),
                &at.child("excludeResourceRules"),
                errs,
            );
            supported(
                str_at(m, "/matchPolicy"),
                &["Equivalent", "Exact"],
                &at.child("matchPolicy"),
                errs,
            );
        }
    }
    supported(
        str_at(obj, "/spec/failurePolicy"),
        &["Fail", "Ignore"],
        &spec.child("failurePolicy"),
        errs,
    );
    if let Some(pk) = obj.pointer("/spec/paramKind").filter(|v| !v.is_null()) {
        let at = spec.child("paramKind");
        for field in ["apiVersion", "kind"] {
            if str_at(pk, &format!("/{field}")).is_empty() {
                errs.push(FieldError::required(&at.child(field), ""));
            }
        }
    }
}

impl Strategy for Policies {
    /// `SetDefaults_ValidatingAdmissionPolicySpec` and `SetDefaults_MatchResources`,
    /// applied where upstream decodes (so managedFields list them).
    fn default(&self, obj: &mut DynamicObject) {
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            spec.entry("failurePolicy").or_insert(json!("Fail"));
            if let Some(m) = spec.get_mut("matchConstraints") {
                default_match_resources(m);
            }
        }
    }

    fn prepare_create(&self, obj: &mut DynamicObject) -> Prepared {
        if let Some(o) = obj.as_object_mut() {
            o.remove("status");
        }
        Prepared::BodyChanged
    }

    fn prepare_update(&self, new: &mut DynamicObject, old: &DynamicObject) {
        self.prepare_create(new);
        if let (Some(status), Some(o)) = (old.get("status"), new.as_object_mut()) {
            o.insert("status".into(), status.clone());
        }
    }

    fn validate(&self, obj: &DynamicObject) -> ErrorList {
        let mut errs = ErrorList::new();
        let spec = FieldPath::new("spec");
        if list(obj, "/spec/validations").is_empty()
            && list(obj, "/spec/auditAnnotations").is_empty()
        {
            errs.push(FieldError::required(
                &spec.child("validations"),
                "validations or auditAnnotations must contain at least one item",
            ));
        }
        validate_common(obj, &mut errs);
        for (i, v) in list(obj, "/spec/validations").iter().enumerate() {
            let at = spec.child("validations").index(i);
            if str_at(v, "/expression").trim().is_empty() {
                errs.push(FieldError::required(
                    &at.child("expression"),
                    "expression is not specified",
                ));
            }
            let reason = str_at(v, "/reason");
            if !reason.is_empty() {
                supported(
                    reason,
                    &[
                        "Unauthorized",
                        "Forbidden",
                        "Invalid",
                        "RequestEntityTooLarge",
                    ],
                    &at.child("reason"),
                    &mut errs,
                );
            }
        }
        for (i, v) in list(obj, "/spec/variables").iter().enumerate() {
            let at = spec.child("variables").index(i);
            if str_at(v, "/name").is_empty() {
                errs.push(FieldError::required(
                    &at.child("name"),
                    "name is not specified",
                ));
            }
            if str_at(v, "/expression").trim().is_empty() {
                errs.push(FieldError::required(
                    &at.child("expression"),
                    "expression is not specified",
                ));
            }
        }
        errs
    }

    fn row(&self, obj: &Value) -> Vec<Value> {
        let kind = match obj.pointer("/spec/paramKind").filter(|v| !v.is_null()) {
            Some(pk) => format!("{}/{}", str_at(pk, "/apiVersion"), str_at(pk, "/kind")),
            None => "<unset>".into(),
        };
        vec![json!(list(obj, "/spec/validations").len()), json!(kind)]
    }
}

impl Strategy for PolicyBindings {
    /// Upstream's v1 defaults (`SetDefaults_MatchResources`; a paramRef's
    /// parameterNotFoundAction has none: it is required), where it decodes
    /// (so managedFields list them).
    fn default(&self, obj: &mut DynamicObject) {
        if let Some(m) = obj.pointer_mut("/spec/matchResources") {
            default_match_resources(m);
        }
    }

    fn validate(&self, obj: &DynamicObject) -> ErrorList {
        let mut errs = ErrorList::new();
        let spec = FieldPath::new("spec");
        if str_at(obj, "/spec/policyName").is_empty() {
            errs.push(FieldError::required(&spec.child("policyName"), ""));
        }
        let actions = list(obj, "/spec/validationActions");
        if actions.is_empty() {
            errs.push(FieldError::required(
                &spec.child("validationActions"),
                "at least one validation action is required",
            ));
        }
        let names: Vec<&str> = actions.iter().filter_map(Value::as_str).collect();
        for (i, a) in names.iter().enumerate() {
            supported(
                a,
                &["Audit", "Deny", "Warn"],
                &spec.child("validationActions").index(i),
                &mut errs,
            );
        }
        if names.contains(&"Deny") && names.contains(&"Warn") {
            errs.push(FieldError::invalid(
                &spec.child("validationActions"),
                json!(names),
                "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
            ));
        }
        if let Some(p) = obj.pointer("/spec/paramRef").filter(|v| !v.is_null()) {
            let at = spec.child("paramRef");
            let named = !str_at(p, "/name").is_empty();
            let selected = p.get("selector").is_some_and(|s| !s.is_null());
            if named == selected {
                errs.push(FieldError::forbidden(
                    &at.child("name"),
                    "name and selector are mutually exclusive",
                ));
            }
            // Required: v1 has no default for it.
            match str_at(p, "/parameterNotFoundAction") {
                "" => errs.push(FieldError::required(
                    &at.child("parameterNotFoundAction"),
                    "",
                )),
                action => supported(
                    action,
                    &["Allow", "Deny"],
                    &at.child("parameterNotFoundAction"),
                    &mut errs,
                ),
            }
        }
        if let Some(m) = obj.pointer("/spec/matchResources").filter(|v| !v.is_null()) {
            let at = spec.child("matchResources");
            validate_rules(
                list(m, "/resourceRules"),
                &at.child("resourceRules"),
                &mut errs,
            );
            validate_rules(
                list(m, "/excludeResourceRules"),
                &at.child("excludeResourceRules"),
                &mut errs,
            );
        }
        errs
    }

    fn row(&self, obj: &Value) -> Vec<Value> {
        let param_ref = match obj.pointer("/spec/paramRef").filter(|v| !v.is_null()) {
            Some(p) if !str_at(p, "/namespace").is_empty() => {
                format!("{}/{}", str_at(p, "/namespace"), str_at(p, "/name"))
            }
            Some(p) if !str_at(p, "/name").is_empty() => str_at(p, "/name").to_string(),
            Some(_) => "*/*".into(),
            None => "<unset>".into(),
        };
        vec![json!(str_at(obj, "/spec/policyName")), json!(param_ref)]
    }
}

/// MutatingAdmissionPolicy (`v1beta1`, as 1.34 serves it).
pub struct MutatingPolicies;
/// MutatingAdmissionPolicyBinding (`v1beta1`).
pub struct MutatingPolicyBindings;

pub fn mutating_policy_columns() -> Vec<TableColumn> {
    vec![
        TableColumn::new(
            "Mutations",
            "integer",
            "Mutation indicates the number of mutations rules defined in this configuration",
        ),
        TableColumn::new(
            "ParamKind",
            "string",
            "ParamKind specifies the kind of resources used to parameterize this policy",
        ),
    ]
}

impl Strategy for MutatingPolicies {
    /// `SetDefaults_MutatingAdmissionPolicySpec` (failurePolicy only:
    /// `reinvocationPolicy` is required) and `SetDefaults_MatchResources`,
    /// where upstream decodes (so managedFields list them).
    fn default(&self, obj: &mut DynamicObject) {
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            spec.entry("failurePolicy").or_insert(json!("Fail"));
            if let Some(m) = spec.get_mut("matchConstraints") {
                default_match_resources(m);
            }
        }
    }

    fn validate(&self, obj: &DynamicObject) -> ErrorList {
        let mut errs = ErrorList::new();
        let spec = FieldPath::new("spec");
        let mutations = list(obj, "/spec/mutations");
        if mutations.is_empty() {
            errs.push(FieldError::required(
                &spec.child("mutations"),
                "mutations must contain at least one item",
            ));
        }
        for (i, m) in mutations.iter().enumerate() {
            let at = spec.child("mutations").index(i);
            let patch_type = str_at(m, "/patchType");
            supported(
                patch_type,
                &["ApplyConfiguration", "JSONPatch"],
                &at.child("patchType"),
                &mut errs,
            );
            let field = match patch_type {
                "ApplyConfiguration" => "applyConfiguration",
                "JSONPatch" => "jsonPatch",
                _ => continue,
            };
            if str_at(m, &format!("/{field}/expression")).trim().is_empty() {
                errs.push(FieldError::required(
                    &at.child(field).child("expression"),
                    "",
                ));
            }
        }
        validate_common(obj, &mut errs);
        match str_at(obj, "/spec/reinvocationPolicy") {
            "" => errs.push(FieldError::required(&spec.child("reinvocationPolicy"), "")),
            policy => supported(
                policy,
                &["IfNeeded", "Never"],
                &spec.child("reinvocationPolicy"),
                &mut errs,
            ),
        }
        errs
    }

    fn row(&self, obj: &Value) -> Vec<Value> {
        let kind = match obj.pointer("/spec/paramKind").filter(|v| !v.is_null()) {
            Some(pk) => format!("{}/{}", str_at(pk, "/apiVersion"), str_at(pk, "/kind")),
            None => "<unset>".into(),
        };
        vec![json!(list(obj, "/spec/mutations").len()), json!(kind)]
    }
}

impl Strategy for MutatingPolicyBindings {
    fn default(&self, obj: &mut DynamicObject) {
        PolicyBindings.default(obj);
    }

    fn validate(&self, obj: &DynamicObject) -> ErrorList {
        let mut errs = ErrorList::new();
        if str_at(obj, "/spec/policyName").is_empty() {
            errs.push(FieldError::required(
                &FieldPath::new("spec").child("policyName"),
                "",
            ));
        }
        errs
    }

    fn row(&self, obj: &Value) -> Vec<Value> {
        PolicyBindings.row(obj)
    }
}
