//! flowcontrol.apiserver.k8s.io/v1 FlowSchemas and PriorityLevelConfigurations
//! (upstream's `pkg/apis/flowcontrol/validation/validation.go` at v1.37.2 and
//! the declarative rules of `pkg/apis/flowcontrol/v1/zz_generated.validations.go`).
//!
//! A PriorityLevelConfiguration's strategy embeds `rest.DeclarativeValidation`
//! and `DeclarativeValidationBeta` is on in 1.37: the handwritten errors marked
//! `MarkCoveredByDeclarative` (the `type`/`limited`/`exempt` and
//! `limitResponse` union checks) give way to the declarative ones at the same
//! field and of the same type, which carry no detail (`spec.limited: Required
//! value`) and come after every handwritten error
//! (`ValidateDeclarativelyWithMigrationChecks`). The declarative rules ratchet
//! on update: unchanged parts are not checked again, and a covered handwritten
//! error without a declarative counterpart stays. FlowSchemas have only
//! handwritten rules (their declarative ones are metadata's alpha checks).
//!
//! A write that changes `status` can only be a `/status` one (a main-resource
//! update keeps the stored status), which upstream validates with the status
//! rules alone (`Validate*StatusUpdate`).

use apimachinery::DynamicObject;
use apimachinery::field::BadValue;
use apimachinery::gofmt::quote;
use apimachinery::validation::{name_is_dns_subdomain, validate_namespace_name};
use apimachinery::{ErrorList, FieldError, FieldPath};
use serde_json::{Value, json};

use super::gojson::{self, BOOL, Form, Go, INT, INT_PTR, Member, STR, STRINGS};
use super::json_fields::{field, int_of, list, semantic_eq, spec_of, str_of};

/// `flowcontrol.FlowSchemaMaxMatchingPrecedence`.
const MAX_MATCHING_PRECEDENCE: i64 = 10_000;
/// `priorityLevelConfigurationQueuingMaxQueues` (10^7).
const MAX_QUEUES: i64 = 10_000_000;
/// `shufflesharding.MaxHashBits`.
const MAX_HASH_BITS: f64 = 60.0;
/// The v1beta3 round-trip annotation, forbidden on the internal object.
const PRESERVE_ZERO_SHARES: &str = "flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares";
/// `nsErrIntro`.
const NS_ERR_INTRO: &str = "each member of this list must be '*' or a DNS-1123 label; ";

const DISTINGUISHER_METHODS: &[&str] = &["ByNamespace", "ByUser"];
const VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "proxy",
    "update",
    "watch",
];
const SUBJECT_KINDS: &[&str] = &["Group", "ServiceAccount", "User"];
const ENABLEMENTS: &[&str] = &["Exempt", "Limited"];
const LIMIT_RESPONSE_TYPES: &[&str] = &["Queue", "Reject"];

// ---------------------------------------------------------------------------
// The internal types, as `field.Invalid` marshals them (and as
// `apiequality.Semantic.DeepEqual` compares them: pointers nil or not,
// slices nil or empty alike).

const QUEUING: Go = Go::Struct(&[
    Member::new("queues", "Queues", true, &INT),
    Member::new("handSize", "HandSize", true, &INT),
    Member::new("queueLengthLimit", "QueueLengthLimit", true, &INT),
]);
const QUEUING_PTR: Go = Go::Ptr(&QUEUING);
const LIMIT_RESPONSE: Go = Go::Struct(&[
    Member::new("type", "Type", false, &STR),
    Member::new("queuing", "Queuing", true, &QUEUING_PTR),
]);
const LIMITED: Go = Go::Struct(&[
    Member::new(
        "nominalConcurrencyShares",
        "NominalConcurrencyShares",
        true,
        &INT,
    ),
    Member::new("limitResponse", "LimitResponse", true, &LIMIT_RESPONSE),
    Member::new("lendablePercent", "LendablePercent", true, &INT_PTR),
    Member::new(
        "borrowingLimitPercent",
        "BorrowingLimitPercent",
        true,
        &INT_PTR,
    ),
]);
const LIMITED_PTR: Go = Go::Ptr(&LIMITED);
const EXEMPT: Go = Go::Struct(&[
    Member::new(
        "nominalConcurrencyShares",
        "NominalConcurrencyShares",
        true,
        &INT_PTR,
    ),
    Member::new("lendablePercent", "LendablePercent", true, &INT_PTR),
]);
const EXEMPT_PTR: Go = Go::Ptr(&EXEMPT);
const PLC_SPEC: Go = Go::Struct(&[
    Member::new("type", "Type", false, &STR),
    Member::new("limited", "Limited", true, &LIMITED_PTR),
    Member::new("exempt", "Exempt", true, &EXEMPT_PTR),
]);

const NAMED: Go = Go::Struct(&[Member::new("name", "Name", false, &STR)]);
const NAMED_PTR: Go = Go::Ptr(&NAMED);
const SERVICE_ACCOUNT: Go = Go::Ptr(&Go::Struct(&[
    Member::new("namespace", "Namespace", false, &STR),
    Member::new("name", "Name", false, &STR),
]));
const SUBJECT: Go = Go::Struct(&[
    Member::new("kind", "Kind", false, &STR),
    Member::new("user", "User", true, &NAMED_PTR),
    Member::new("group", "Group", true, &NAMED_PTR),
    Member::new("serviceAccount", "ServiceAccount", true, &SERVICE_ACCOUNT),
]);
const RESOURCE_RULE: Go = Go::Struct(&[
    Member::new("verbs", "Verbs", false, &STRINGS),
    Member::new("apiGroups", "APIGroups", false, &STRINGS),
    Member::new("resources", "Resources", false, &STRINGS),
    Member::new("clusterScope", "ClusterScope", true, &BOOL),
    Member::new("namespaces", "Namespaces", false, &STRINGS),
]);
const NON_RESOURCE_RULE: Go = Go::Struct(&[
    Member::new("verbs", "Verbs", false, &STRINGS),
    Member::new("nonResourceURLs", "NonResourceURLs", false, &STRINGS),
]);
const RULE: Go = Go::Struct(&[
    Member::new("subjects", "Subjects", false, &Go::Slice(&SUBJECT)),
    Member::new(
        "resourceRules",
        "ResourceRules",
        true,
        &Go::Slice(&RESOURCE_RULE),
    ),
    Member::new(
        "nonResourceRules",
        "NonResourceRules",
        true,
        &Go::Slice(&NON_RESOURCE_RULE),
    ),
]);
const DISTINGUISHER: Go = Go::Struct(&[Member::new("type", "Type", false, &STR)]);
const FS_SPEC: Go = Go::Struct(&[
    Member::new(
        "priorityLevelConfiguration",
        "PriorityLevelConfiguration",
        false,
        &NAMED,
    ),
    Member::new("matchingPrecedence", "MatchingPrecedence", true, &INT),
    Member::new(
        "distinguisherMethod",
        "DistinguisherMethod",
        true,
        &Go::Ptr(&DISTINGUISHER),
    ),
    Member::new("rules", "Rules", true, &Go::Slice(&RULE)),
]);

/// The mandatory objects' specs (`bootstrap.Mandatory*` of
/// k8s.io/apiserver v0.37.2, as `internalbootstrap` converts them).
fn mandatory_plc_spec(name: &str) -> Option<Value> {
    match name {
        "exempt" => Some(json!({
            "type": "Exempt",
            "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0},
        })),
        "catch-all" => Some(json!({
            "type": "Limited",
            "limited": {
                "nominalConcurrencyShares": 5,
                "lendablePercent": 0,
                "limitResponse": {"type": "Reject"},
            },
        })),
        _ => None,
    }
}

fn mandatory_fs_spec(name: &str) -> Option<Value> {
    let everything = |groups: &[&str]| {
        json!([{
            "subjects": groups
                .iter()
                .map(|g| json!({"kind": "Group", "group": {"name": g}}))
                .collect::<Vec<_>>(),
            "resourceRules": [{
                "verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                "clusterScope": true, "namespaces": ["*"],
            }],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
        }])
    };
    match name {
        "exempt" => Some(json!({
            "priorityLevelConfiguration": {"name": "exempt"},
            "matchingPrecedence": 1,
            "rules": everything(&["system:masters"]),
        })),
        "catch-all" => Some(json!({
            "priorityLevelConfiguration": {"name": "catch-all"},
            "matchingPrecedence": 10000,
            "distinguisherMethod": {"type": "ByUser"},
            "rules": everything(&["system:unauthenticated", "system:authenticated"]),
        })),
        _ => None,
    }
}

/// `apiequality.Semantic.DeepEqual` of two values of `ty`: Go's zero values
/// equal absent members, nil pointers differ from set ones, empty slices
/// equal nil ones.
fn same(a: Option<&Value>, b: Option<&Value>, ty: &Go) -> bool {
    let canonical = |v: Option<&Value>| {
        let v = v.map(without_empty_lists);
        gojson::render(v.as_ref(), ty, Form::Internal)
    };
    canonical(a) == canonical(b)
}

fn without_empty_lists(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !matches!(v, Value::Array(a) if a.is_empty()))
                .map(|(k, v)| (k.clone(), without_empty_lists(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_empty_lists).collect()),
        other => other.clone(),
    }
}

/// `field.Invalid` of a value that is no plain string, number or bool
/// (marshalled by `encoding/json`).
fn invalid_json(path: &FieldPath, value: Option<&Value>, ty: &Go, detail: &str) -> FieldError {
    FieldError::invalid_go(path, &gojson::render(value, ty, Form::Internal), detail)
}

/// `field.NotSupported` of a value shown as Go shows it.
fn not_supported_go(path: &FieldPath, shown: String, supported: &[&str]) -> FieldError {
    let mut err = FieldError::not_supported(path, Value::Null, supported);
    err.bad_value = Some(BadValue::Go(shown));
    err
}

/// A Go `string` value (`%q`).
fn invalid_str(path: &FieldPath, value: &str, detail: &str) -> FieldError {
    FieldError::invalid_go(path, &quote(value), detail)
}

/// A named string type (`SubjectKind`, `PriorityLevelEnablement`...):
/// marshalled as JSON.
fn go_json_str(value: &str) -> String {
    gojson::go_string(value)
}

fn present<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    field(v, key)
}

fn name_of(obj: &DynamicObject) -> &str {
    &obj.metadata.name
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    list(v, key)
        .iter()
        .map(|s| s.as_str().unwrap_or("").to_string())
        .collect()
}

fn has_wildcard(items: &[String]) -> bool {
    items.iter().any(|s| s == "*")
}

fn status_written(new: &Value, old: &Value) -> bool {
    !semantic_eq(new.get("status"), old.get("status"))
}

// ---------------------------------------------------------------------------
// Status (both kinds)

/// `ValidateFlowSchemaStatus` / `ValidatePriorityLevelConfigurationStatus`:
/// condition types present and distinct.
fn conditions(obj: &Value) -> ErrorList {
    let path = FieldPath::new("status").child("conditions");
    let status = obj.get("status").unwrap_or(&Value::Null);
    let mut seen: Vec<&str> = Vec::new();
    let mut errs = ErrorList::new();
    for (i, condition) in list(status, "conditions").iter().enumerate() {
        let kind = str_of(condition, "type");
        if seen.contains(&kind) {
            errs.push(FieldError::duplicate_go(
                &path.index(i).child("type"),
                &go_json_str(kind),
            ));
        }
        seen.push(kind);
        if kind.is_empty() {
            errs.push(FieldError::required(&path.index(i).child("type"), ""));
        }
    }
    errs
}

// ---------------------------------------------------------------------------
// FlowSchema

/// `ValidateFlowSchema` (metadata is the store's): the spec, the mandatory
/// schemas' fixed specs, the status.
pub(super) fn flow_schema(obj: &DynamicObject) -> ErrorList {
    let name = name_of(obj);
    let spec = spec_of(obj);
    let spec_path = FieldPath::new("spec");
    let mut errs = flow_schema_spec(name, spec, &spec_path);
    if let Some(mandatory) = mandatory_fs_spec(name)
        && !same(Some(spec), Some(&mandatory), &FS_SPEC)
    {
        errs.push(invalid_json(
            &spec_path,
            Some(spec),
            &FS_SPEC,
            &format!("spec of '{name}' must equal the fixed value"),
        ));
    }
    errs.extend(conditions(obj));
    errs
}

/// `ValidateFlowSchemaUpdate` (the create rules), or on a `/status` write
/// `ValidateFlowSchemaStatusUpdate`.
pub(super) fn flow_schema_update(new: &DynamicObject, old: &DynamicObject) -> ErrorList {
    if status_written(new, old) {
        return conditions(new);
    }
    flow_schema(new)
}

/// `ValidateFlowSchemaSpec`.
fn flow_schema_spec(name: &str, spec: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let precedence = int_of(spec, "matchingPrecedence").unwrap_or(0);
    let precedence_path = path.child("matchingPrecedence");
    if precedence <= 0 {
        errs.push(FieldError::invalid(
            &precedence_path,
            json!(precedence),
            "must be a positive value",
        ));
    }
    if precedence > MAX_MATCHING_PRECEDENCE {
        errs.push(FieldError::invalid(
            &precedence_path,
            json!(precedence),
            &format!("must not be greater than {MAX_MATCHING_PRECEDENCE}"),
        ));
    }
    if precedence == 1 && name != "exempt" {
        errs.push(FieldError::invalid(
            &precedence_path,
            json!(precedence),
            "only the schema named 'exempt' may have matchingPrecedence 1",
        ));
    }
    if let Some(method) = present(spec, "distinguisherMethod")
        && !DISTINGUISHER_METHODS.contains(&str_of(method, "type"))
    {
        errs.push(not_supported_go(
            &path.child("distinguisherMethod").child("type"),
            gojson::render(Some(method), &DISTINGUISHER, Form::Internal),
            DISTINGUISHER_METHODS,
        ));
    }
    let level_path = path.child("priorityLevelConfiguration").child("name");
    let level = spec
        .get("priorityLevelConfiguration")
        .map_or("", |p| str_of(p, "name"));
    if level.is_empty() {
        errs.push(FieldError::required(
            &level_path,
            "must reference a priority level",
        ));
    } else {
        for msg in name_is_dns_subdomain(level, false) {
            errs.push(invalid_str(&level_path, level, &msg));
        }
    }
    for (i, rule) in list(spec, "rules").iter().enumerate() {
        errs.extend(policy_rules(rule, &path.child("rules").index(i)));
    }
    errs
}

/// `ValidateFlowSchemaPolicyRulesWithSubjects`.
fn policy_rules(rule: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let subjects = list(rule, "subjects");
    if subjects.is_empty() {
        errs.push(FieldError::required(
            &path.child("subjects"),
            "subjects must contain at least one value",
        ));
    }
    for (i, subject) in subjects.iter().enumerate() {
        errs.extend(flow_subject(subject, &path.child("subjects").index(i)));
    }
    let resource_rules = list(rule, "resourceRules");
    let non_resource_rules = list(rule, "nonResourceRules");
    if resource_rules.is_empty() && non_resource_rules.is_empty() {
        errs.push(FieldError::required(
            path,
            "at least one of resourceRules and nonResourceRules has to be non-empty",
        ));
    }
    for (i, r) in resource_rules.iter().enumerate() {
        errs.extend(resource_rule(r, &path.child("resourceRules").index(i)));
    }
    for (i, r) in non_resource_rules.iter().enumerate() {
        errs.extend(non_resource_rule(
            r,
            &path.child("nonResourceRules").index(i),
        ));
    }
    errs
}

/// `ValidateFlowSchemaSubject`: the member of the subject's kind, and no other.
fn flow_subject(subject: &Value, path: &FieldPath) -> ErrorList {
    let forbidden = |member: &str, kind: &str| {
        FieldError::forbidden(
            &path.child(member),
            &format!("{member} is forbidden when subject kind is not '{kind}'"),
        )
    };
    let mut errs = ErrorList::new();
    let (user, group, account) = (
        present(subject, "user"),
        present(subject, "group"),
        present(subject, "serviceAccount"),
    );
    match str_of(subject, "kind") {
        "ServiceAccount" => {
            errs.extend(service_account_subject(
                account,
                &path.child("serviceAccount"),
            ));
            if user.is_some() {
                errs.push(forbidden("user", "User"));
            }
            if group.is_some() {
                errs.push(forbidden("group", "Group"));
            }
        }
        "User" => {
            errs.extend(named_subject(user, "user", "User", &path.child("user")));
            if account.is_some() {
                errs.push(forbidden("serviceAccount", "ServiceAccount"));
            }
            if group.is_some() {
                errs.push(forbidden("group", "Group"));
            }
        }
        "Group" => {
            errs.extend(named_subject(group, "group", "Group", &path.child("group")));
            if account.is_some() {
                errs.push(forbidden("serviceAccount", "ServiceAccount"));
            }
            if user.is_some() {
                errs.push(forbidden("user", "User"));
            }
        }
        other => errs.push(not_supported_go(
            &path.child("kind"),
            go_json_str(other),
            SUBJECT_KINDS,
        )),
    }
    errs
}

/// `ValidateServiceAccountSubject`: a name (`*` for all, else a DNS
/// subdomain) and a namespace.
fn service_account_subject(subject: Option<&Value>, path: &FieldPath) -> ErrorList {
    let Some(subject) = subject else {
        return vec![FieldError::required(
            path,
            "serviceAccount is required when subject kind is 'ServiceAccount'",
        )];
    };
    let mut errs = ErrorList::new();
    let name = str_of(subject, "name");
    if name.is_empty() {
        errs.push(FieldError::required(&path.child("name"), ""));
    } else if name != "*" {
        for msg in name_is_dns_subdomain(name, false) {
            errs.push(invalid_str(&path.child("name"), name, &msg));
        }
    }
    let namespace = str_of(subject, "namespace");
    if namespace.is_empty() {
        errs.push(FieldError::required(
            &path.child("namespace"),
            "must specify namespace for service account",
        ));
    } else {
        for msg in validate_namespace_name(namespace, false) {
            errs.push(invalid_str(&path.child("namespace"), namespace, &msg));
        }
    }
    errs
}

/// `ValidateUserSubject` / `ValidateGroupSubject`: present, with a name.
fn named_subject(subject: Option<&Value>, member: &str, kind: &str, path: &FieldPath) -> ErrorList {
    match subject {
        None => vec![FieldError::required(
            path,
            &format!("{member} is required when subject kind is '{kind}'"),
        )],
        Some(s) if str_of(s, "name").is_empty() => {
            vec![FieldError::required(&path.child("name"), "")]
        }
        Some(_) => Vec::new(),
    }
}

/// The verbs of either kind of rule: some, `*` alone, or supported ones.
fn verbs(rule: &Value, path: &FieldPath) -> Option<FieldError> {
    let verbs = strings(rule, "verbs");
    let path = path.child("verbs");
    if verbs.is_empty() {
        Some(FieldError::required(
            &path,
            "verbs must contain at least one value",
        ))
    } else if has_wildcard(&verbs) {
        (verbs.len() > 1).then(|| {
            invalid_json(
                &path,
                rule.get("verbs"),
                &STRINGS,
                "if '*' is present, must not specify other verbs",
            )
        })
    } else if verbs.iter().any(|v| !VERBS.contains(&v.as_str())) {
        Some(not_supported_go(
            &path,
            gojson::render(rule.get("verbs"), &STRINGS, Form::Internal),
            VERBS,
        ))
    } else {
        None
    }
}

/// `ValidateFlowSchemaNonResourcePolicyRule`.
fn non_resource_rule(rule: &Value, path: &FieldPath) -> ErrorList {
    let mut errs: ErrorList = verbs(rule, path).into_iter().collect();
    let urls = strings(rule, "nonResourceURLs");
    let urls_path = path.child("nonResourceURLs");
    if urls.is_empty() {
        errs.push(FieldError::required(
            &urls_path,
            "nonResourceURLs must contain at least one value",
        ));
    } else if has_wildcard(&urls) {
        if urls.len() > 1 {
            errs.push(invalid_json(
                &urls_path,
                rule.get("nonResourceURLs"),
                &STRINGS,
                "if '*' is present, must not specify other non-resource URLs",
            ));
        }
    } else {
        for (i, url) in urls.iter().enumerate() {
            if let Some(msg) = non_resource_url_problem(url) {
                errs.push(invalid_str(&urls_path.index(i), url, msg));
            }
        }
    }
    errs
}

/// `ValidateNonResourceURLPath`: a slash first, no white space, no double
/// slash, a wildcard only as the last segment.
fn non_resource_url_problem(path: &str) -> Option<&'static str> {
    if path.is_empty() {
        return Some("must not be empty");
    }
    if path == "/" {
        return None;
    }
    if !path.starts_with('/') {
        return Some("must start with slash");
    }
    if path.contains(' ') {
        return Some("must not contain white-space");
    }
    if path.contains("//") {
        return Some("must not contain double slash");
    }
    let wildcards = path.matches('*').count();
    if wildcards > 1 || (wildcards == 1 && !path.ends_with("/*")) {
        return Some("wildcard can only do suffix matching");
    }
    None
}

/// `ValidateFlowSchemaResourcePolicyRule`.
fn resource_rule(rule: &Value, path: &FieldPath) -> ErrorList {
    let mut errs: ErrorList = verbs(rule, path).into_iter().collect();
    for (key, what) in [("apiGroups", "api group"), ("resources", "resource")] {
        let items = strings(rule, key);
        if items.is_empty() {
            errs.push(FieldError::required(
                &path.child(key),
                &format!("resource rules must supply at least one {what}"),
            ));
        } else if items.len() > 1 && has_wildcard(&items) {
            errs.push(invalid_json(
                &path.child(key),
                rule.get(key),
                &STRINGS,
                &format!("if '*' is present, must not specify other {what}s"),
            ));
        }
    }
    let namespaces = strings(rule, "namespaces");
    let ns_path = path.child("namespaces");
    let cluster_scope = rule
        .get("clusterScope")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if namespaces.is_empty() && !cluster_scope {
        errs.push(FieldError::required(
            &ns_path,
            "resource rules that are not cluster scoped must supply at least one namespace",
        ));
    } else if has_wildcard(&namespaces) {
        if namespaces.len() > 1 {
            errs.push(invalid_json(
                &ns_path,
                rule.get("namespaces"),
                &STRINGS,
                "if '*' is present, must not specify other namespaces",
            ));
        }
    } else {
        for (i, ns) in namespaces.iter().enumerate() {
            for msg in validate_namespace_name(ns, false) {
                errs.push(invalid_str(
                    &ns_path.index(i),
                    ns,
                    &format!("{NS_ERR_INTRO}{msg}"),
                ));
            }
        }
    }
    errs
}

// ---------------------------------------------------------------------------
// PriorityLevelConfiguration

/// A handwritten error, and whether it is `MarkCoveredByDeclarative`.
type Handwritten = Vec<(FieldError, bool)>;

/// `ValidatePriorityLevelConfiguration` merged with the declarative rules,
/// for a create.
pub(super) fn priority_level_configuration(obj: &DynamicObject) -> ErrorList {
    merge(plc_handwritten(obj), plc_declarative(obj, None))
}

/// The strategy's `ValidateUpdate` (the create rules, the declarative ones
/// ratcheting), or on a `/status` write
/// `ValidatePriorityLevelConfigurationStatusUpdate` (the spec is the stored
/// one, which the declarative rules leave alone).
pub(super) fn priority_level_configuration_update(
    new: &DynamicObject,
    old: &DynamicObject,
) -> ErrorList {
    if status_written(new, old) {
        return conditions(new);
    }
    merge(plc_handwritten(new), plc_declarative(new, Some(old)))
}

/// `ValidateDeclarativelyWithMigrationChecks` with beta rules enforced:
/// covered handwritten errors matched by a declarative one (same type, same
/// field) drop out, the declarative errors follow the rest.
fn merge(handwritten: Handwritten, declarative: ErrorList) -> ErrorList {
    let mut errs: ErrorList = handwritten
        .into_iter()
        .filter(|(e, covered)| {
            !covered
                || !declarative
                    .iter()
                    .any(|d| d.kind == e.kind && d.field == e.field)
        })
        .map(|(e, _)| e)
        .collect();
    errs.extend(declarative);
    errs
}

fn plc_handwritten(obj: &DynamicObject) -> Handwritten {
    let name = name_of(obj);
    let mut errs = Handwritten::new();
    if obj.metadata.annotations.contains_key(PRESERVE_ZERO_SHARES) {
        errs.push((
            FieldError::forbidden(
                &FieldPath::new("metadata").child("annotations"),
                &format!("annotation '{PRESERVE_ZERO_SHARES}' is forbidden"),
            ),
            false,
        ));
    }
    let spec = spec_of(obj);
    let spec_path = FieldPath::new("spec");
    plc_spec(spec, name, &spec_path, &mut errs);
    if let Some(mandatory) = mandatory_plc_spec(name) {
        // `ValidateIfMandatoryPriorityLevelConfigurationObject`: `exempt`'s
        // own member may change.
        let (have, message) = if name == "exempt" {
            let mut have = spec.as_object().cloned().unwrap_or_default();
            have.insert("exempt".into(), mandatory["exempt"].clone());
            (
                Value::Object(have),
                format!(
                    "spec of '{name}' except the 'spec.exempt' field must equal the fixed value"
                ),
            )
        } else {
            (
                spec.clone(),
                format!("spec of '{name}' must equal the fixed value"),
            )
        };
        if !same(Some(&have), Some(&mandatory), &PLC_SPEC) {
            errs.push((
                invalid_json(&spec_path, Some(spec), &PLC_SPEC, &message),
                false,
            ));
        }
    }
    errs.extend(conditions(obj).into_iter().map(|e| (e, false)));
    errs
}

/// `ValidatePriorityLevelConfigurationSpec`.
fn plc_spec(spec: &Value, name: &str, path: &FieldPath, errs: &mut Handwritten) {
    let kind = str_of(spec, "type");
    if (name == "exempt") != (kind == "Exempt") {
        errs.push((
            FieldError::invalid_go(
                &path.child("type"),
                &go_json_str(kind),
                "must be 'Exempt' if and only if `name` is 'exempt'",
            ),
            false,
        ));
    }
    let (limited, exempt) = (present(spec, "limited"), present(spec, "exempt"));
    match kind {
        "Exempt" => {
            if limited.is_some() {
                errs.push((
                    FieldError::forbidden(
                        &path.child("limited"),
                        "must be nil if the type is not Limited",
                    ),
                    true,
                ));
            }
            if let Some(exempt) = exempt {
                exempt_config(exempt, &path.child("exempt"), errs);
            }
        }
        "Limited" => {
            if exempt.is_some() {
                errs.push((
                    FieldError::forbidden(
                        &path.child("exempt"),
                        "must be nil if the type is Limited",
                    ),
                    true,
                ));
            }
            match limited {
                None => errs.push((
                    FieldError::required(
                        &path.child("limited"),
                        "must not be empty when type is Limited",
                    ),
                    true,
                )),
                Some(limited) => limited_config(limited, &path.child("limited"), errs),
            }
        }
        "" => errs.push((FieldError::required(&path.child("type"), ""), true)),
        other => errs.push((
            not_supported_go(&path.child("type"), go_json_str(other), ENABLEMENTS),
            false,
        )),
    }
}

/// `ValidateLimitedPriorityLevelConfiguration`.
fn limited_config(limited: &Value, path: &FieldPath, errs: &mut Handwritten) {
    let shares = int_of(limited, "nominalConcurrencyShares").unwrap_or(0);
    if shares < 0 {
        errs.push((
            FieldError::invalid(
                &path.child("nominalConcurrencyShares"),
                json!(shares),
                "must be a non-negative integer",
            ),
            false,
        ));
    }
    let response = limited.get("limitResponse").unwrap_or(&Value::Null);
    limit_response(response, &path.child("limitResponse"), errs);
    lendable_percent(limited, path, errs);
    if let Some(limit) = int_of(limited, "borrowingLimitPercent").filter(|l| *l < 0) {
        errs.push((
            FieldError::invalid(
                &path.child("borrowingLimitPercent"),
                json!(limit),
                "if specified, must be a non-negative integer",
            ),
            false,
        ));
    }
}

fn lendable_percent(config: &Value, path: &FieldPath, errs: &mut Handwritten) {
    if let Some(percent) = int_of(config, "lendablePercent").filter(|p| !(0..=100).contains(p)) {
        errs.push((
            FieldError::invalid(
                &path.child("lendablePercent"),
                json!(percent),
                "must be between 0 and 100, inclusive",
            ),
            false,
        ));
    }
}

/// `ValidateExemptPriorityLevelConfiguration`.
fn exempt_config(exempt: &Value, path: &FieldPath, errs: &mut Handwritten) {
    if let Some(shares) = int_of(exempt, "nominalConcurrencyShares").filter(|s| *s < 0) {
        errs.push((
            FieldError::invalid(
                &path.child("nominalConcurrencyShares"),
                json!(shares),
                "must be a non-negative integer",
            ),
            false,
        ));
    }
    lendable_percent(exempt, path, errs);
}

/// `ValidateLimitResponse`.
fn limit_response(response: &Value, path: &FieldPath, errs: &mut Handwritten) {
    let queuing = present(response, "queuing");
    match str_of(response, "type") {
        "Reject" => {
            if queuing.is_some() {
                errs.push((
                    FieldError::forbidden(
                        &path.child("queuing"),
                        "must be nil if limited.limitResponse.type is not Limited",
                    ),
                    true,
                ));
            }
        }
        "Queue" => match queuing {
            None => errs.push((
                FieldError::required(
                    &path.child("queuing"),
                    "must not be empty if limited.limitResponse.type is Limited",
                ),
                true,
            )),
            Some(queuing) => {
                let path = path.child("queuing");
                errs.extend(
                    queuing_config(queuing, &path)
                        .into_iter()
                        .map(|e| (e, false)),
                );
            }
        },
        "" => errs.push((FieldError::required(&path.child("type"), ""), true)),
        other => errs.push((
            not_supported_go(
                &path.child("type"),
                go_json_str(other),
                LIMIT_RESPONSE_TYPES,
            ),
            false,
        )),
    }
}

/// `ValidatePriorityLevelQueuingConfiguration`: positive lengths, and
/// shuffle sharding's bounds.
fn queuing_config(queuing: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let limit = int_of(queuing, "queueLengthLimit").unwrap_or(0);
    if limit <= 0 {
        errs.push(FieldError::invalid(
            &path.child("queueLengthLimit"),
            json!(limit),
            "must be positive",
        ));
    }
    let queues = int_of(queuing, "queues").unwrap_or(0);
    let queues_path = path.child("queues");
    if queues <= 0 {
        errs.push(FieldError::invalid(
            &queues_path,
            json!(queues),
            "must be positive",
        ));
    } else if queues > MAX_QUEUES {
        errs.push(FieldError::invalid(
            &queues_path,
            json!(queues),
            &format!("must not be greater than {MAX_QUEUES}"),
        ));
    }
    let hand = int_of(queuing, "handSize").unwrap_or(0);
    let hand_path = path.child("handSize");
    if hand <= 0 {
        errs.push(FieldError::invalid(
            &hand_path,
            json!(hand),
            "must be positive",
        ));
    } else if hand > queues {
        errs.push(FieldError::invalid(
            &hand_path,
            json!(hand),
            &format!("should not be greater than queues ({queues})"),
        ));
    } else if required_entropy_bits(queues, hand) > MAX_HASH_BITS {
        errs.push(FieldError::invalid(
            &hand_path,
            json!(hand),
            &format!(
                "required entropy bits of deckSize {queues} and handSize {hand} should not be greater than {MAX_HASH_BITS}"
            ),
        ));
    }
    errs
}

/// `shufflesharding.RequiredEntropyBits`: `ceil(log2(deck) * hand)`, with
/// Go's `math.Log2` (exact for powers of two).
fn required_entropy_bits(deck: i64, hand: i64) -> f64 {
    (go_log2(deck as f64) * hand as f64).ceil()
}

fn go_log2(x: f64) -> f64 {
    // Go: frac, exp := Frexp(x); if frac == 0.5 { return exp-1 };
    // return Log(frac)*(1/Ln2) + exp.
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i64 - 1022;
    let frac = f64::from_bits((bits & !(0x7ff << 52)) | (1022 << 52));
    if frac == 0.5 {
        return (exp - 1) as f64;
    }
    frac.ln() * (1.0 / std::f64::consts::LN_2) + exp as f64
}

/// The declarative rules of `Validate_PriorityLevelConfigurationSpec` and
/// below (all `+k8s:beta`), on the v1 object; `old` on update, where
/// unchanged parts are skipped.
fn plc_declarative(obj: &Value, old: Option<&Value>) -> ErrorList {
    let spec = spec_of(obj);
    let old_spec = old.map(spec_of);
    if let Some(old_spec) = old_spec
        && same(Some(spec), Some(old_spec), &PLC_SPEC)
    {
        return Vec::new();
    }
    let path = FieldPath::new("spec");
    let mut errs = ErrorList::new();
    let kind = str_of(spec, "type");
    let old_kind = old_spec.map(|s| str_of(s, "type"));
    let (limited, exempt) = (present(spec, "limited"), present(spec, "exempt"));
    let old_member = |key: &str| old_spec.and_then(|s| present(s, key));
    // The `exempt` and `limited` union members, by `type`.
    let unchanged = |key: &str, ty: &Go| {
        old_kind == Some(kind) && same(present(spec, key), old_member(key), ty)
    };
    if !unchanged("exempt", &EXEMPT_PTR) && kind != "Exempt" && exempt.is_some() {
        errs.push(FieldError::forbidden(&path.child("exempt"), ""));
    }
    if !unchanged("limited", &LIMITED_PTR) {
        match (kind, limited) {
            ("Limited", None) => errs.push(FieldError::required(&path.child("limited"), "")),
            (k, Some(_)) if k != "Limited" => {
                errs.push(FieldError::forbidden(&path.child("limited"), ""));
            }
            _ => {}
        }
    }
    if old_kind != Some(kind) && kind.is_empty() {
        errs.push(FieldError::required(&path.child("type"), ""));
    }
    if let Some(limited) = limited
        && !(old_spec.is_some() && same(Some(limited), old_member("limited"), &LIMITED_PTR))
    {
        let old_response =
            old_member("limited").map(|l| l.get("limitResponse").unwrap_or(&Value::Null));
        let response = limited.get("limitResponse").unwrap_or(&Value::Null);
        if !old_response.is_some_and(|o| same(Some(response), Some(o), &LIMIT_RESPONSE)) {
            errs.extend(limit_response_declarative(
                response,
                old_response,
                &path.child("limited").child("limitResponse"),
            ));
        }
    }
    errs
}

/// `Validate_LimitResponse`: `queuing` by `type` (compared by pointer:
/// unchanged only when absent both times), then `type` required.
fn limit_response_declarative(
    response: &Value,
    old: Option<&Value>,
    path: &FieldPath,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let kind = str_of(response, "type");
    let old_kind = old.map(|o| str_of(o, "type"));
    let queuing = present(response, "queuing");
    let unchanged = old_kind == Some(kind)
        && queuing.is_none()
        && old.and_then(|o| present(o, "queuing")).is_none();
    if !unchanged {
        match (kind, queuing) {
            ("Queue", None) => errs.push(FieldError::required(&path.child("queuing"), "")),
            (k, Some(_)) if k != "Queue" => {
                errs.push(FieldError::forbidden(&path.child("queuing"), ""));
            }
            _ => {}
        }
    }
    if old_kind != Some(kind) && kind.is_empty() {
        errs.push(FieldError::required(&path.child("type"), ""));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::typed_objects::typed;

    fn messages(errs: ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    fn fs(name: &str, spec: Value) -> Value {
        json!({"metadata": {"name": name}, "spec": spec, "status": {}})
    }

    fn plc(name: &str, spec: Value) -> Value {
        json!({"metadata": {"name": name}, "spec": spec, "status": {}})
    }

    /// A rule holding `subjects` and `resourceRules` as given, `*` else.
    fn rule(subjects: Value, resource_rules: Value) -> Value {
        json!({"subjects": subjects, "resourceRules": resource_rules})
    }

    fn group(name: &str) -> Value {
        json!([{"kind": "Group", "group": {"name": name}}])
    }

    fn all_resources() -> Value {
        json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"]}])
    }

    const DNS_SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    const DNS_LABEL: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

    /// `TestFlowSchemaValidation` (validation_test.go), one row per
    /// upstream case, with upstream's expected errors as Go prints them.
    #[test]
    fn flow_schema_validation_as_upstream() {
        let mandatory_exempt = mandatory_fs_spec("exempt").unwrap();
        let mut bad_exempt = mandatory_exempt.clone();
        bad_exempt["rules"][0]["nonResourceRules"][0]["nonResourceURLs"] = json!(["/"]);
        let mut bad_catch_all = mandatory_fs_spec("catch-all").unwrap();
        bad_catch_all["rules"][0]["nonResourceRules"][0]["nonResourceURLs"] = json!(["/"]);
        let ok = |subjects: Value, rules: Value| {
            json!({"priorityLevelConfiguration": {"name": "system-bar"},
                   "matchingPrecedence": 50, "rules": [rule(subjects, rules)]})
        };
        let cases: Vec<(&str, Value, Vec<String>)> = vec![
            (
                "missing both resource and non-resource policy-rule should fail",
                fs("system-foo", json!({"priorityLevelConfiguration": {"name": "system-bar"},
                    "matchingPrecedence": 50, "rules": [{"subjects": group("noxu")}]})),
                vec!["spec.rules[0]: Required value: at least one of resourceRules and nonResourceRules has to be non-empty".into()],
            ),
            (
                "normal flow-schema w/ * verbs/apiGroups/resources should work",
                fs("system-foo", ok(group("noxu"), all_resources())),
                vec![],
            ),
            (
                "malformed Subject union in ServiceAccount case",
                fs("system-foo", ok(
                    json!([{"kind": "ServiceAccount", "user": {"name": "fred"}, "group": {"name": "fred"}}]),
                    all_resources(),
                )),
                vec![
                    "spec.rules[0].subjects[0].serviceAccount: Required value: serviceAccount is required when subject kind is 'ServiceAccount'".into(),
                    "spec.rules[0].subjects[0].user: Forbidden: user is forbidden when subject kind is not 'User'".into(),
                    "spec.rules[0].subjects[0].group: Forbidden: group is forbidden when subject kind is not 'Group'".into(),
                ],
            ),
            (
                "Subject union malformed in User case",
                fs("system-foo", ok(
                    json!([{"kind": "User", "group": {"name": "fred"},
                            "serviceAccount": {"namespace": "s", "name": "n"}}]),
                    all_resources(),
                )),
                vec![
                    "spec.rules[0].subjects[0].user: Required value: user is required when subject kind is 'User'".into(),
                    "spec.rules[0].subjects[0].serviceAccount: Forbidden: serviceAccount is forbidden when subject kind is not 'ServiceAccount'".into(),
                    "spec.rules[0].subjects[0].group: Forbidden: group is forbidden when subject kind is not 'Group'".into(),
                ],
            ),
            (
                "malformed Subject union in Group case",
                fs("system-foo", ok(
                    json!([{"kind": "Group", "user": {"name": "fred"},
                            "serviceAccount": {"namespace": "s", "name": "n"}}]),
                    all_resources(),
                )),
                vec![
                    "spec.rules[0].subjects[0].group: Required value: group is required when subject kind is 'Group'".into(),
                    "spec.rules[0].subjects[0].serviceAccount: Forbidden: serviceAccount is forbidden when subject kind is not 'ServiceAccount'".into(),
                    "spec.rules[0].subjects[0].user: Forbidden: user is forbidden when subject kind is not 'User'".into(),
                ],
            ),
            ("exempt flow-schema should work", fs("exempt", mandatory_exempt), vec![]),
            (
                "bad exempt flow-schema should fail",
                fs("exempt", bad_exempt),
                vec![r#"spec: Invalid value: {"PriorityLevelConfiguration":{"Name":"exempt"},"MatchingPrecedence":1,"DistinguisherMethod":null,"Rules":[{"Subjects":[{"Kind":"Group","User":null,"Group":{"Name":"system:masters"},"ServiceAccount":null}],"ResourceRules":[{"Verbs":["*"],"APIGroups":["*"],"Resources":["*"],"ClusterScope":true,"Namespaces":["*"]}],"NonResourceRules":[{"Verbs":["*"],"NonResourceURLs":["/"]}]}]}: spec of 'exempt' must equal the fixed value"#.into()],
            ),
            (
                "bad catch-all flow-schema should fail",
                fs("catch-all", bad_catch_all),
                vec![r#"spec: Invalid value: {"PriorityLevelConfiguration":{"Name":"catch-all"},"MatchingPrecedence":10000,"DistinguisherMethod":{"Type":"ByUser"},"Rules":[{"Subjects":[{"Kind":"Group","User":null,"Group":{"Name":"system:unauthenticated"},"ServiceAccount":null},{"Kind":"Group","User":null,"Group":{"Name":"system:authenticated"},"ServiceAccount":null}],"ResourceRules":[{"Verbs":["*"],"APIGroups":["*"],"Resources":["*"],"ClusterScope":true,"Namespaces":["*"]}],"NonResourceRules":[{"Verbs":["*"],"NonResourceURLs":["/"]}]}]}: spec of 'catch-all' must equal the fixed value"#.into()],
            ),
            (
                "catch-all flow-schema should work",
                fs("catch-all", mandatory_fs_spec("catch-all").unwrap()),
                vec![],
            ),
            (
                "non-exempt flow-schema with matchingPrecedence==1 should fail",
                fs("fooey", json!({"matchingPrecedence": 1,
                    "priorityLevelConfiguration": {"name": "exempt"},
                    "rules": [{"subjects": group("system:masters"),
                               "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": true, "namespaces": ["*"]}]}]})),
                vec!["spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1".into()],
            ),
            (
                "flow-schema mixes * verbs/apiGroups/resources should fail",
                fs("system-foo", ok(group("noxu"), json!([{"verbs": ["*", "create"],
                    "apiGroups": ["*", "tak"], "resources": ["*", "tok"], "namespaces": ["*"]}]))),
                vec![
                    r#"spec.rules[0].resourceRules[0].verbs: Invalid value: ["*","create"]: if '*' is present, must not specify other verbs"#.into(),
                    r#"spec.rules[0].resourceRules[0].apiGroups: Invalid value: ["*","tak"]: if '*' is present, must not specify other api groups"#.into(),
                    r#"spec.rules[0].resourceRules[0].resources: Invalid value: ["*","tok"]: if '*' is present, must not specify other resources"#.into(),
                ],
            ),
            (
                "flow-schema mixes * non-resource URLs should fail",
                fs("system-foo", json!({"priorityLevelConfiguration": {"name": "system-bar"},
                    "matchingPrecedence": 50, "rules": [{"subjects": group("noxu"),
                    "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*", "tik"]}]}]})),
                vec![r#"spec.rules[0].nonResourceRules[0].nonResourceURLs: Invalid value: ["*","tik"]: if '*' is present, must not specify other non-resource URLs"#.into()],
            ),
            (
                "invalid subject kind should fail",
                fs("system-foo", ok(json!([{"kind": "FooKind"}]), all_resources())),
                vec![r#"spec.rules[0].subjects[0].kind: Unsupported value: "FooKind": supported values: "Group", "ServiceAccount", "User""#.into()],
            ),
            (
                "flow-schema w/ invalid verb should fail",
                fs("system-foo", ok(group("noxu"), json!([{"verbs": ["feed"],
                    "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"]}]))),
                vec![r#"spec.rules[0].resourceRules[0].verbs: Unsupported value: ["feed"]: supported values: "create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch""#.into()],
            ),
            (
                "flow-schema w/ invalid priority level configuration name should fail",
                fs("system-foo", json!({"priorityLevelConfiguration": {"name": "system+++$$"},
                    "matchingPrecedence": 50, "rules": [rule(group("noxu"), all_resources())]})),
                vec![format!(r#"spec.priorityLevelConfiguration.name: Invalid value: "system+++$$": {DNS_SUBDOMAIN}"#)],
            ),
            (
                "flow-schema w/ service-account kind missing namespace should fail",
                fs("system-foo", ok(json!([{"kind": "ServiceAccount", "serviceAccount": {"name": "noxu"}}]), all_resources())),
                vec!["spec.rules[0].subjects[0].serviceAccount.namespace: Required value: must specify namespace for service account".into()],
            ),
            (
                "flow-schema missing kind should fail",
                fs("system-foo", ok(json!([{"user": {"name": "noxu"}}]), all_resources())),
                vec![r#"spec.rules[0].subjects[0].kind: Unsupported value: "": supported values: "Group", "ServiceAccount", "User""#.into()],
            ),
            (
                "Omitted ResourceRule.Namespaces should fail",
                fs("system-foo", ok(group("noxu"), json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]))),
                vec!["spec.rules[0].resourceRules[0].namespaces: Required value: resource rules that are not cluster scoped must supply at least one namespace".into()],
            ),
            (
                "ClusterScope is allowed, with no Namespaces",
                fs("system-foo", ok(group("noxu"), json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": true}]))),
                vec![],
            ),
            (
                "NamespaceEvery may not be combined with particulars",
                fs("system-foo", ok(group("noxu"), json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["foo", "*"]}]))),
                vec![r#"spec.rules[0].resourceRules[0].namespaces: Invalid value: ["foo","*"]: if '*' is present, must not specify other namespaces"#.into()],
            ),
            (
                "ResourceRule.Namespaces must be well formed",
                fs("system-foo", ok(group("noxu"), json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["-foo"]}]))),
                vec![format!(r#"spec.rules[0].resourceRules[0].namespaces[0]: Invalid value: "-foo": {NS_ERR_INTRO}{DNS_LABEL}"#)],
            ),
            (
                "MatchingPrecedence must not be greater than 10000",
                fs("system-foo", json!({"priorityLevelConfiguration": {"name": "system-bar"},
                    "matchingPrecedence": 10001, "rules": [rule(group("noxu"), all_resources())]})),
                vec!["spec.matchingPrecedence: Invalid value: 10001: must not be greater than 10000".into()],
            ),
        ];
        for (name, obj, expected) in cases {
            assert_eq!(messages(flow_schema(&typed(&obj))), expected, "{name}");
        }
    }

    /// `TestValidateNonResourceURLPath`.
    #[test]
    fn non_resource_url_paths_as_upstream() {
        for (path, bad) in [
            ("", true),
            ("foo", true),
            ("/", false),
            ("//", true),
            ("/foo", false),
            ("/////", true),
            ("/apis/", false),
            ("/healthz/*", false),
            ("/healthz/*/foo", true),
            ("/healthz/foo bar", true),
            ("/health*", true),
            ("/health*/foo", true),
            ("/*/*", true),
        ] {
            assert_eq!(non_resource_url_problem(path).is_some(), bad, "{path:?}");
        }
    }

    /// Messages, each with whether it is covered by declarative validation.
    type Expected = Vec<(&'static str, bool)>;

    /// `TestPriorityLevelConfigurationValidation`'s handwritten errors
    /// (upstream compares them unordered; here in Go's order), each with
    /// whether it is `MarkCoveredByDeclarative`.
    #[test]
    fn priority_level_handwritten_as_upstream() {
        let limited_reject = json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 42,
            "limitResponse": {"type": "Reject"}}});
        let queue = |queues: i64, hand: i64| {
            json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 100,
                "limitResponse": {"type": "Queue", "queuing": {"queueLengthLimit": 100, "queues": queues, "handSize": hand}}}})
        };
        let exempt_bad3 = json!({"type": "Exempt", "exempt": {},
            "limited": {"nominalConcurrencyShares": 42, "limitResponse": {"type": "Reject"}}});
        let cases: Vec<(&str, Value, Expected)> = vec![
            (
                "exempt should work",
                plc("exempt", mandatory_plc_spec("exempt").unwrap()),
                vec![],
            ),
            (
                "wrong exempt spec should fail",
                plc("exempt", limited_reject.clone()),
                vec![
                    (
                        r#"spec.type: Invalid value: "Limited": must be 'Exempt' if and only if `name` is 'exempt'"#,
                        false,
                    ),
                    (
                        r#"spec: Invalid value: {"Type":"Limited","Limited":{"NominalConcurrencyShares":42,"LimitResponse":{"Type":"Reject","Queuing":null},"LendablePercent":null,"BorrowingLimitPercent":null},"Exempt":null}: spec of 'exempt' except the 'spec.exempt' field must equal the fixed value"#,
                        false,
                    ),
                ],
            ),
            (
                "admins are not allowed to repurpose the 'exempt' pl to a limited type",
                plc(
                    "exempt",
                    json!({"type": "Limited", "exempt": {},
                    "limited": {"nominalConcurrencyShares": 42, "limitResponse": {"type": "Reject"}}}),
                ),
                vec![
                    (
                        r#"spec.type: Invalid value: "Limited": must be 'Exempt' if and only if `name` is 'exempt'"#,
                        false,
                    ),
                    (
                        "spec.exempt: Forbidden: must be nil if the type is Limited",
                        true,
                    ),
                    (
                        r#"spec: Invalid value: {"Type":"Limited","Limited":{"NominalConcurrencyShares":42,"LimitResponse":{"Type":"Reject","Queuing":null},"LendablePercent":null,"BorrowingLimitPercent":null},"Exempt":{"NominalConcurrencyShares":null,"LendablePercent":null}}: spec of 'exempt' except the 'spec.exempt' field must equal the fixed value"#,
                        false,
                    ),
                ],
            ),
            (
                "admins are not allowed to change any field of the 'exempt' pl except 'Exempt'",
                plc("exempt", exempt_bad3),
                vec![
                    (
                        "spec.limited: Forbidden: must be nil if the type is not Limited",
                        true,
                    ),
                    (
                        r#"spec: Invalid value: {"Type":"Exempt","Limited":{"NominalConcurrencyShares":42,"LimitResponse":{"Type":"Reject","Queuing":null},"LendablePercent":null,"BorrowingLimitPercent":null},"Exempt":{"NominalConcurrencyShares":null,"LendablePercent":null}}: spec of 'exempt' except the 'spec.exempt' field must equal the fixed value"#,
                        false,
                    ),
                ],
            ),
            (
                "exempt priority level should have appropriate values for Exempt field",
                plc(
                    "exempt",
                    json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": -1, "lendablePercent": 101}}),
                ),
                vec![
                    (
                        "spec.exempt.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer",
                        false,
                    ),
                    (
                        "spec.exempt.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive",
                        false,
                    ),
                ],
            ),
            (
                "admins are allowed to change the Exempt field of the 'exempt' pl",
                plc(
                    "exempt",
                    json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": 10, "lendablePercent": 10}}),
                ),
                vec![],
            ),
            (
                "limited must not set exempt priority level configuration for borrowing",
                plc("broken-limited", json!({"type": "Limited", "exempt": {}})),
                vec![
                    (
                        "spec.exempt: Forbidden: must be nil if the type is Limited",
                        true,
                    ),
                    (
                        "spec.limited: Required value: must not be empty when type is Limited",
                        true,
                    ),
                ],
            ),
            (
                "limited requires more details",
                plc("broken-limited", json!({"type": "Limited"})),
                vec![(
                    "spec.limited: Required value: must not be empty when type is Limited",
                    true,
                )],
            ),
            (
                "max-in-flight should work",
                plc("max-in-flight", limited_reject.clone()),
                vec![],
            ),
            (
                "forbid queuing details when not queuing",
                plc(
                    "system-foo",
                    json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 100,
                    "limitResponse": {"type": "Reject", "queuing": {"queues": 512, "handSize": 4, "queueLengthLimit": 100}}}}),
                ),
                vec![(
                    "spec.limited.limitResponse.queuing: Forbidden: must be nil if limited.limitResponse.type is not Limited",
                    true,
                )],
            ),
            (
                "wrong backstop spec should fail",
                plc("catch-all", limited_reject),
                vec![(
                    r#"spec: Invalid value: {"Type":"Limited","Limited":{"NominalConcurrencyShares":42,"LimitResponse":{"Type":"Reject","Queuing":null},"LendablePercent":null,"BorrowingLimitPercent":null},"Exempt":null}: spec of 'catch-all' must equal the fixed value"#,
                    false,
                )],
            ),
            (
                "backstop should work",
                plc("catch-all", mandatory_plc_spec("catch-all").unwrap()),
                vec![],
            ),
            (
                "broken queuing level should fail",
                plc(
                    "system-foo",
                    json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 100,
                    "limitResponse": {"type": "Queue"}}}),
                ),
                vec![(
                    "spec.limited.limitResponse.queuing: Required value: must not be empty if limited.limitResponse.type is Limited",
                    true,
                )],
            ),
            (
                "normal customized priority level should work",
                plc("system-foo", queue(512, 4)),
                vec![],
            ),
            (
                "customized priority level w/ overflowing handSize/queues should fail 1",
                plc("system-foo", queue(512, 8)),
                vec![(
                    "spec.limited.limitResponse.queuing.handSize: Invalid value: 8: required entropy bits of deckSize 512 and handSize 8 should not be greater than 60",
                    false,
                )],
            ),
            (
                "customized priority level w/ overflowing handSize/queues should fail 2",
                plc("system-foo", queue(128, 10)),
                vec![(
                    "spec.limited.limitResponse.queuing.handSize: Invalid value: 10: required entropy bits of deckSize 128 and handSize 10 should not be greater than 60",
                    false,
                )],
            ),
            (
                "customized priority level w/ overflowing handSize/queues should fail 3",
                plc("system-foo", queue(i64::from(i32::MAX), 3)),
                vec![
                    (
                        "spec.limited.limitResponse.queuing.queues: Invalid value: 2147483647: must not be greater than 10000000",
                        false,
                    ),
                    (
                        "spec.limited.limitResponse.queuing.handSize: Invalid value: 3: required entropy bits of deckSize 2147483647 and handSize 3 should not be greater than 60",
                        false,
                    ),
                ],
            ),
            (
                "customized priority level w/ handSize=2 and queues=10^7 should work",
                plc("system-foo", queue(10_000_000, 2)),
                vec![],
            ),
            (
                "customized priority level w/ handSize greater than queues should fail",
                plc("system-foo", queue(7, 8)),
                vec![(
                    "spec.limited.limitResponse.queuing.handSize: Invalid value: 8: should not be greater than queues (7)",
                    false,
                )],
            ),
            (
                "the roundtrip annotation is forbidden",
                json!({"metadata": {"name": "with-roundtrip-annotation", "annotations": {PRESERVE_ZERO_SHARES: ""}},
                    "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 42, "limitResponse": {"type": "Reject"}}}}),
                vec![(
                    "metadata.annotations: Forbidden: annotation 'flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares' is forbidden",
                    false,
                )],
            ),
            (
                "spec.type empty should fail with required",
                plc("system-foo", json!({})),
                vec![("spec.type: Required value", true)],
            ),
            (
                "spec.limited.limitResponse.type empty should fail with required",
                plc(
                    "system-foo",
                    json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 42, "limitResponse": {}}}),
                ),
                vec![("spec.limited.limitResponse.type: Required value", true)],
            ),
        ];
        for (name, obj, expected) in cases {
            let got: Vec<(String, bool)> = plc_handwritten(&typed(&obj))
                .into_iter()
                .map(|(e, covered)| (e.to_string(), covered))
                .collect();
            let expected: Vec<(String, bool)> = expected
                .into_iter()
                .map(|(m, c)| (m.to_string(), c))
                .collect();
            assert_eq!(got, expected, "{name}");
        }
    }

    /// `TestValidateLimitedPriorityLevelConfiguration` and
    /// `...WithBorrowing` (v1 requests).
    #[test]
    fn limited_shares_and_borrowing_as_upstream() {
        let check = |extra: Value| {
            let mut limited =
                json!({"nominalConcurrencyShares": 1, "limitResponse": {"type": "Reject"}});
            for (k, v) in extra.as_object().unwrap() {
                limited[k] = v.clone();
            }
            let mut errs = Handwritten::new();
            limited_config(
                &limited,
                &FieldPath::new("spec").child("limited"),
                &mut errs,
            );
            errs.into_iter()
                .map(|(e, _)| e.to_string())
                .collect::<Vec<_>>()
        };
        assert!(check(json!({"nominalConcurrencyShares": 0})).is_empty());
        assert_eq!(
            check(json!({"nominalConcurrencyShares": -1})),
            [
                "spec.limited.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer"
            ]
        );
        for ok in [
            json!({}),
            json!({"lendablePercent": 0}),
            json!({"lendablePercent": 100}),
            json!({"borrowingLimitPercent": 0}),
            json!({"borrowingLimitPercent": 100}),
        ] {
            assert!(check(ok.clone()).is_empty(), "{ok}");
        }
        assert_eq!(
            check(json!({"lendablePercent": 101})),
            [
                "spec.limited.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive"
            ]
        );
        assert_eq!(
            check(json!({"borrowingLimitPercent": -1})),
            [
                "spec.limited.borrowingLimitPercent: Invalid value: -1: if specified, must be a non-negative integer"
            ]
        );
    }

    /// `TestValidateFlowSchemaStatus` / `TestValidatePriorityLevelConfigurationStatus`,
    /// through a `/status` write.
    #[test]
    fn status_conditions_as_upstream() {
        let old = plc(
            "p",
            json!({"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}}),
        );
        let mut new = old.clone();
        new["status"] = json!({"conditions": [{"type": "1"}, {"type": "1"}, {"status": "True"}]});
        let want = [
            r#"status.conditions[1].type: Duplicate value: "1""#,
            "status.conditions[2].type: Required value",
        ];
        assert_eq!(
            messages(priority_level_configuration_update(
                &typed(&new),
                &typed(&old)
            )),
            want
        );
        let old = fs(
            "f",
            json!({"priorityLevelConfiguration": {"name": "p"}, "matchingPrecedence": 5}),
        );
        let mut new = old.clone();
        new["status"] = json!({"conditions": [{"type": "1"}, {"type": "1"}, {"status": "True"}]});
        assert_eq!(
            messages(flow_schema_update(&typed(&new), &typed(&old))),
            want
        );
    }

    /// What a kube-apiserver 1.37.2 answered (see
    /// crates/kubext/tests/flowcontrol_validation.rs): declarative errors
    /// replace the covered handwritten ones and come last.
    #[test]
    fn declarative_errors_replace_covered_ones() {
        let cases = [
            (
                plc("p1", json!({"type": "Limited"})),
                vec!["spec.limited: Required value"],
            ),
            (
                plc(
                    "p1",
                    json!({"type": "Limited", "exempt": {},
                    "limited": {"limitResponse": {"type": "Reject", "queuing": {}}}}),
                ),
                vec![
                    "spec.exempt: Forbidden",
                    "spec.limited.limitResponse.queuing: Forbidden",
                ],
            ),
            (
                plc(
                    "p1",
                    json!({"type": "Foo", "limited": {"limitResponse": {"type": "Queue"}}, "exempt": {}}),
                ),
                vec![
                    r#"spec.type: Unsupported value: "Foo": supported values: "Exempt", "Limited""#,
                    "spec.exempt: Forbidden",
                    "spec.limited: Forbidden",
                    "spec.limited.limitResponse.queuing: Required value",
                ],
            ),
            (
                plc(
                    "exempt",
                    json!({"type": "Exempt",
                    "limited": {"nominalConcurrencyShares": 30, "lendablePercent": 0, "limitResponse": {"type": "Reject"}},
                    "exempt": {"nominalConcurrencyShares": -1, "lendablePercent": 101}}),
                ),
                vec![
                    "spec.exempt.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer",
                    "spec.exempt.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive",
                    r#"spec: Invalid value: {"Type":"Exempt","Limited":{"NominalConcurrencyShares":30,"LimitResponse":{"Type":"Reject","Queuing":null},"LendablePercent":0,"BorrowingLimitPercent":null},"Exempt":{"NominalConcurrencyShares":-1,"LendablePercent":101}}: spec of 'exempt' except the 'spec.exempt' field must equal the fixed value"#,
                    "spec.limited: Forbidden",
                ],
            ),
        ];
        for (obj, want) in cases {
            assert_eq!(
                messages(priority_level_configuration(&typed(&obj))),
                want,
                "{obj}"
            );
        }
    }

    /// On update the declarative rules skip what did not change, so a
    /// covered handwritten error of an unchanged part keeps its detail.
    #[test]
    fn declarative_rules_ratchet_on_update() {
        let old = plc(
            "p",
            json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 30,
            "lendablePercent": 0, "limitResponse": {"type": "Queue"}}}),
        );
        let mut new = old.clone();
        new["spec"]["limited"]["nominalConcurrencyShares"] = json!(-1);
        assert_eq!(
            messages(priority_level_configuration_update(
                &typed(&new),
                &typed(&old)
            )),
            [
                "spec.limited.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer",
                "spec.limited.limitResponse.queuing: Required value: must not be empty if limited.limitResponse.type is Limited",
            ]
        );
        assert_eq!(
            messages(priority_level_configuration_update(
                &typed(&old),
                &typed(&old)
            )),
            [
                "spec.limited.limitResponse.queuing: Required value: must not be empty if limited.limitResponse.type is Limited"
            ]
        );
    }

    #[test]
    fn entropy_bits_as_go() {
        assert_eq!(required_entropy_bits(512, 8), 72.0);
        assert_eq!(required_entropy_bits(64, 8), 48.0);
        assert_eq!(required_entropy_bits(10_000_000, 2), 47.0);
        assert_eq!(go_log2(1.0), 0.0);
        assert_eq!(go_log2(1024.0), 10.0);
    }
}
