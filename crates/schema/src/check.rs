//! "Is this a structural schema" and related CRD schema checks (upstream
//! `apiextensions/validation` `ValidateCustomResourceDefinitionOpenAPISchema`,
//! `schema.ValidateStructural` and `defaulting.ValidateDefaults`), on the raw
//! `openAPIV3Schema` JSON.

use apimachinery::{ErrorList, FieldError, FieldPath};
use serde_json::{Map, Value};

use crate::structural::Structural;

/// Options of the CRD version the schema belongs to.
#[derive(Debug, Clone, Copy, Default)]
pub struct StructuralOptions {
    /// The version enables the status subresource: the root may only have
    /// `properties`, `required`, `description`, `type` and `x-kubernetes-*`.
    pub status_subresource: bool,
}

/// All errors of `schema` (an `openAPIV3Schema`), paths under `path`
/// (e.g. `spec.versions[0].schema.openAPIV3Schema`).
pub fn structural_errors(schema: &Value, path: &FieldPath) -> ErrorList {
    structural_errors_with(schema, path, StructuralOptions::default())
}

/// As [`structural_errors`], with version options.
pub fn structural_errors_with(
    schema: &Value,
    path: &FieldPath,
    opts: StructuralOptions,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(root) = schema.as_object() else {
        errs.push(FieldError::invalid(
            path,
            schema.clone(),
            "must be an object",
        ));
        return errs;
    };
    if opts.status_subresource {
        status_root_checks(root, path, &mut errs);
    }
    if flag(root, "nullable") {
        errs.push(FieldError::forbidden(
            &path.child("nullable"),
            "nullable cannot be true at the root",
        ));
    }
    openapi_checks(root, path, Ssv::default(), true, &mut errs);
    // upstream cannot build a structural schema from array-form items; that
    // error is hidden behind the ones above.
    if has_array_items(root) {
        return errs;
    }
    let mut structural = ErrorList::new();
    invariants(root, Level::Root, path, &mut structural);
    structural_completeness(root, path, &mut structural);
    structural.sort_by_key(|e| e.to_string());
    let structural_ok = structural.is_empty();
    errs.extend(structural);
    if structural_ok {
        defaults(root, path, true, &mut errs);
    }
    errs
}

/// JSON names of the fields upstream allows at the root with the status
/// subresource, and upstream's Go names for the message.
const ROOT_FIELDS: [(&str, &str); 22] = [
    ("description", "Description"),
    ("type", "Type"),
    ("format", "Format"),
    ("title", "Title"),
    ("maximum", "Maximum"),
    ("exclusiveMaximum", "ExclusiveMaximum"),
    ("minimum", "Minimum"),
    ("exclusiveMinimum", "ExclusiveMinimum"),
    ("maxLength", "MaxLength"),
    ("minLength", "MinLength"),
    ("pattern", "Pattern"),
    ("maxItems", "MaxItems"),
    ("minItems", "MinItems"),
    ("uniqueItems", "UniqueItems"),
    ("multipleOf", "MultipleOf"),
    ("required", "Required"),
    ("items", "Items"),
    ("properties", "Properties"),
    ("externalDocs", "ExternalDocs"),
    ("example", "Example"),
    (
        "x-kubernetes-preserve-unknown-fields",
        "XPreserveUnknownFields",
    ),
    ("x-kubernetes-validations", "XValidations"),
];

/// Go's zero values are skipped by upstream's reflection-based check.
fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Number(_) => false,
    }
}

fn status_root_checks(root: &Map<String, Value>, path: &FieldPath, errs: &mut ErrorList) {
    // upstream walks JSONSchemaProps' fields in declaration order, where `type`
    // precedes every field it rejects, and stops at the first failure
    if let Some(t) = root.get("type").filter(|t| !is_zero(t))
        && ty(root) != "object"
    {
        errs.push(FieldError::invalid(
            &path.child("type"),
            t.clone(),
            "only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled",
        ));
        return;
    }
    let disallowed = root
        .iter()
        .any(|(k, v)| !is_zero(v) && !ROOT_FIELDS.iter().any(|(j, _)| j == k));
    if disallowed {
        let names: Vec<&str> = ROOT_FIELDS.iter().map(|(_, g)| *g).collect();
        errs.push(FieldError::invalid(
            path,
            Value::Object(root.clone()),
            &format!(
                "only [{}] fields are allowed at the root of the schema if the status subresource is enabled",
                names.join(" ")
            ),
        ));
    }
}

fn has_array_items(m: &Map<String, Value>) -> bool {
    if m.get("items").is_some_and(Value::is_array) {
        return true;
    }
    let mut children: Vec<&Map<String, Value>> = props(m).into_iter().map(|(_, s)| s).collect();
    children.extend(obj(m, "items"));
    children.extend(obj(m, "additionalProperties"));
    children.extend(obj(m, "not"));
    children.extend(junctors(m).into_iter().map(|(_, _, s)| s));
    children.into_iter().any(has_array_items)
}

/// upstream's `specStandardValidatorV3` state while recursing.
#[derive(Clone, Default)]
struct Ssv {
    inside_resource_meta: bool,
    /// `Some(reason)` when defaults are forbidden here.
    forbid_defaults: Option<String>,
}

fn obj<'a>(m: &'a Map<String, Value>, k: &str) -> Option<&'a Map<String, Value>> {
    m.get(k).and_then(Value::as_object)
}

fn ty(m: &Map<String, Value>) -> &str {
    m.get("type").and_then(Value::as_str).unwrap_or("")
}

fn flag(m: &Map<String, Value>, k: &str) -> bool {
    m.get(k).and_then(Value::as_bool).unwrap_or(false)
}

fn strs(m: &Map<String, Value>, k: &str) -> Vec<String> {
    m.get(k)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn props(m: &Map<String, Value>) -> Vec<(&String, &Map<String, Value>)> {
    obj(m, "properties")
        .map(|p| {
            p.iter()
                .filter_map(|(k, v)| v.as_object().map(|o| (k, o)))
                .collect()
        })
        .unwrap_or_default()
}

fn junctors(m: &Map<String, Value>) -> Vec<(String, usize, &Map<String, Value>)> {
    let mut out = Vec::new();
    for j in ["allOf", "anyOf", "oneOf"] {
        if let Some(a) = m.get(j).and_then(Value::as_array) {
            for (i, s) in a.iter().enumerate() {
                if let Some(o) = s.as_object() {
                    out.push((j.to_string(), i, o));
                }
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------
// ValidateCustomResourceDefinitionOpenAPISchema (every node, junctors included)

const OPENAPI_V3_TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];

fn openapi_checks(
    m: &Map<String, Value>,
    p: &FieldPath,
    ssv: Ssv,
    is_root: bool,
    errs: &mut ErrorList,
) {
    let t0 = ty(m);
    if !t0.is_empty() && !OPENAPI_V3_TYPES.contains(&t0) {
        errs.push(FieldError::not_supported(
            &p.child("type"),
            Value::from(t0),
            &OPENAPI_V3_TYPES,
        ));
    }
    if let Some(reason) = &ssv.forbid_defaults
        && m.get("default").is_some_and(|d| !d.is_null())
    {
        errs.push(FieldError::forbidden(
            &p.child("default"),
            &format!("must not be set {reason}"),
        ));
    }
    let forbidden = [
        ("id", "id is not supported"),
        ("additionalItems", "additionalItems is not supported"),
        ("patternProperties", "patternProperties is not supported"),
        ("definitions", "definitions is not supported"),
        ("dependencies", "dependencies is not supported"),
        ("$ref", "$ref is not supported"),
    ];
    for (k, msg) in forbidden {
        let present = match m.get(k) {
            None | Some(Value::Null) => false,
            Some(Value::String(s)) => !s.is_empty(),
            Some(Value::Object(o)) => k == "additionalItems" || !o.is_empty(),
            Some(_) => true,
        };
        if present {
            errs.push(FieldError::forbidden(&p.child(k), msg));
        }
    }
    if ty(m) == "null" {
        errs.push(FieldError::forbidden(
            &p.child("type"),
            "type cannot be set to null, use nullable as an alternative",
        ));
    }
    if m.get("items").is_some_and(Value::is_array) {
        errs.push(FieldError::forbidden(
            &p.child("items"),
            "items must be a schema object and not an array",
        ));
    }
    if ssv.inside_resource_meta && flag(m, "x-kubernetes-embedded-resource") {
        errs.push(FieldError::forbidden(
            &p.child("x-kubernetes-embedded-resource"),
            "must not be used inside of resource meta",
        ));
    }
    if flag(m, "uniqueItems") {
        errs.push(FieldError::forbidden(
            &p.child("uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    if let Some(ap) = m.get("additionalProperties")
        && !props(m).is_empty()
        && (ap.is_object() || ap == &Value::Bool(false))
    {
        errs.push(FieldError::forbidden(
            &p.child("additionalProperties"),
            "additionalProperties and properties are mutual exclusive",
        ));
    }
    if m.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        errs.push(FieldError::invalid(
            &p.child("x-kubernetes-preserve-unknown-fields"),
            Value::Bool(false),
            "must be true or undefined",
        ));
    }
    let t = ty(m);
    if let Some(mt) = m.get("x-kubernetes-map-type").and_then(Value::as_str) {
        if t != "object" {
            type_must_be(t, "object", "x-kubernetes-map-type is specified", p, errs);
        }
        if mt != "atomic" && mt != "granular" {
            errs.push(FieldError::not_supported(
                &p.child("x-kubernetes-map-type"),
                Value::from(mt),
                &["atomic", "granular"],
            ));
        }
    }
    let list_type = m.get("x-kubernetes-list-type").and_then(Value::as_str);
    let keys = strs(m, "x-kubernetes-list-map-keys");
    if let Some(lt) = list_type {
        if t != "array" {
            type_must_be(t, "array", "x-kubernetes-list-type is specified", p, errs);
        } else if lt == "set"
            && let Some(is) = obj(m, "items")
        {
            match ty(is) {
                "array" => {
                    if let Some(ilt) = is.get("x-kubernetes-list-type").and_then(Value::as_str)
                        && ilt != "atomic"
                    {
                        errs.push(FieldError::invalid(
                            &p.child("items").child("x-kubernetes-list-type"),
                            Value::from(ilt),
                            "must be atomic as item of a list with x-kubernetes-list-type=set",
                        ));
                    }
                }
                "object" => {
                    let mt = is.get("x-kubernetes-map-type").and_then(Value::as_str);
                    if mt != Some("atomic") {
                        // upstream reports the items' list type here (a nil pointer: "null")
                        let lt = is.get("x-kubernetes-list-type").and_then(Value::as_str);
                        errs.push(FieldError::invalid(
                            &p.child("items").child("x-kubernetes-map-type"),
                            Value::from(lt.unwrap_or("null")),
                            "must be atomic as item of a list with x-kubernetes-list-type=set",
                        ));
                    }
                }
                _ => {}
            }
        }
        if !matches!(lt, "atomic" | "set" | "map") {
            errs.push(FieldError::not_supported(
                &p.child("x-kubernetes-list-type"),
                Value::from(lt),
                &["atomic", "set", "map"],
            ));
        }
        if lt == "map" {
            list_map_checks(m, &keys, p, errs);
        }
    }
    if !keys.is_empty() {
        let msg = "must be map if x-kubernetes-list-map-keys is non-empty";
        match list_type {
            None => errs.push(FieldError::required(
                &p.child("x-kubernetes-list-type"),
                msg,
            )),
            Some("map") => {}
            Some(lt) => errs.push(FieldError::invalid(
                &p.child("x-kubernetes-list-type"),
                Value::from(lt),
                msg,
            )),
        }
    }
    rule_checks(m, p, errs);
    map_list_keys_map_set(m, list_type, &keys, p, errs);
    // recurse
    let emb = flag(m, "x-kubernetes-embedded-resource");
    for (k, s) in props(m) {
        let mut sub = ssv.clone();
        if (is_root || emb) && matches!(k.as_str(), "metadata" | "kind" | "apiVersion") {
            sub.inside_resource_meta = true;
            if is_root {
                sub.forbid_defaults = Some(format!("in top-level {k}"));
            }
        }
        openapi_checks(s, &p.child("properties").key(k), sub, false, errs);
    }
    if let Some(is) = obj(m, "items") {
        openapi_checks(is, &p.child("items"), ssv.clone(), false, errs);
    }
    if let Some(ap) = obj(m, "additionalProperties") {
        let mut sub = ssv.clone();
        if ssv.inside_resource_meta {
            sub.forbid_defaults =
                Some("inside additionalProperties applying to object metadata".to_string());
        }
        openapi_checks(ap, &p.child("additionalProperties"), sub, false, errs);
    }
    if let Some(n) = obj(m, "not") {
        openapi_checks(n, &p.child("not"), ssv.clone(), false, errs);
    }
    for (j, i, s) in junctors(m) {
        openapi_checks(s, &p.child(&j).index(i), ssv.clone(), false, errs);
    }
}

fn rule_checks(m: &Map<String, Value>, p: &FieldPath, errs: &mut ErrorList) {
    let Some(rules) = m.get("x-kubernetes-validations").and_then(Value::as_array) else {
        return;
    };
    let newline = |s: &str| s.contains('\n') || s.contains('\r');
    for (i, r) in rules.iter().enumerate() {
        let rp = p.child("x-kubernetes-validations").index(i);
        let rule = r.get("rule").and_then(Value::as_str).unwrap_or("");
        let msg = r.get("message").and_then(Value::as_str).unwrap_or("");
        let (tr, tm) = (rule.trim(), msg.trim());
        if tr.is_empty() {
            errs.push(FieldError::required(
                &rp.child("rule"),
                "rule is not specified",
            ));
        } else if !msg.is_empty() && tm.is_empty() {
            errs.push(FieldError::invalid(
                &rp.child("message"),
                Value::from(msg),
                "message must be non-empty if specified",
            ));
        } else if newline(tm) {
            errs.push(FieldError::invalid(
                &rp.child("message"),
                Value::from(msg),
                "message must not contain line breaks",
            ));
        } else if newline(tr) && tm.is_empty() {
            errs.push(FieldError::required(
                &rp.child("message"),
                "message must be specified if rule contains line breaks",
            ));
        }
    }
}

/// upstream `validateMapListKeysMapSet`.
fn map_list_keys_map_set(
    m: &Map<String, Value>,
    list_type: Option<&str>,
    keys: &[String],
    p: &FieldPath,
    errs: &mut ErrorList,
) {
    let Some(is) = obj(m, "items") else { return };
    let Some(lt) = list_type.filter(|lt| matches!(*lt, "set" | "map")) else {
        return;
    };
    if flag(is, "nullable") {
        errs.push(FieldError::forbidden(
            &p.child("items").child("nullable"),
            &format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
        ));
    }
    if lt != "map" {
        return;
    }
    let required = strs(is, "required");
    for k in keys {
        let Some(s) = obj(is, "properties").and_then(|ip| obj(ip, k)) else {
            continue;
        };
        let kp = p.child("items").child("properties").key(k);
        if s.get("default").is_none_or(Value::is_null) && !required.contains(k) {
            errs.push(FieldError::required(
                &kp.child("default"),
                "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
            ));
        }
        if flag(s, "nullable") {
            errs.push(FieldError::forbidden(
                &kp.child("nullable"),
                "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
            ));
        }
    }
}

fn type_must_be(t: &str, want: &str, why: &str, p: &FieldPath, errs: &mut ErrorList) {
    let msg = format!("must be {want} if {why}");
    if t.is_empty() {
        errs.push(FieldError::required(&p.child("type"), &msg));
    } else {
        errs.push(FieldError::invalid(&p.child("type"), Value::from(t), &msg));
    }
}

fn list_map_checks(m: &Map<String, Value>, keys: &[String], p: &FieldPath, errs: &mut ErrorList) {
    if keys.is_empty() {
        errs.push(FieldError::required(
            &p.child("x-kubernetes-list-map-keys"),
            "must not be empty if x-kubernetes-list-type is map",
        ));
    }
    let Some(items) = m.get("items") else {
        errs.push(FieldError::required(
            &p.child("items"),
            "must have a schema if x-kubernetes-list-type is map",
        ));
        return;
    };
    let Some(is) = items.as_object() else {
        errs.push(FieldError::invalid(
            &p.child("items"),
            items.clone(),
            "must only have a single schema if x-kubernetes-list-type is map",
        ));
        return;
    };
    if ty(is) != "object" {
        errs.push(FieldError::invalid(
            &p.child("items").child("type"),
            Value::from(ty(is)),
            "must be object if parent array's x-kubernetes-list-type is map",
        ));
        return;
    }
    let item_props = obj(is, "properties");
    let keys_value = Value::from(keys.to_vec());
    let mut seen: Vec<&String> = Vec::new();
    for k in keys {
        let kp = p.child("items").child("properties").key(k);
        match item_props.and_then(|ip| obj(ip, k)) {
            Some(s) => {
                if matches!(ty(s), "array" | "object") {
                    errs.push(FieldError::invalid(
                        &kp.child("type"),
                        Value::from(ty(is)),
                        "must be a scalar type if parent array's x-kubernetes-list-type is map",
                    ));
                }
            }
            None => errs.push(FieldError::invalid(
                &p.child("x-kubernetes-list-map-keys"),
                keys_value.clone(),
                "entries must all be names of item properties",
            )),
        }
        if seen.contains(&k) {
            errs.push(FieldError::invalid(
                &p.child("x-kubernetes-list-map-keys"),
                keys_value.clone(),
                "must not contain duplicate entries",
            ));
        }
        seen.push(k);
    }
}

// ---------------------------------------------------------------------------
// ValidateStructural: invariants

#[derive(Clone, Copy, PartialEq)]
enum Level {
    Root,
    Item,
    Field,
}

fn is_type_only(s: &Value, t: &str) -> bool {
    s.as_object()
        .is_some_and(|o| o.len() == 1 && o.get("type").and_then(Value::as_str) == Some(t))
}

fn is_int_or_string_any_of(m: &Map<String, Value>) -> bool {
    flag(m, "x-kubernetes-int-or-string")
        && m.get("anyOf").and_then(Value::as_array).is_some_and(|a| {
            a.len() == 2 && is_type_only(&a[0], "integer") && is_type_only(&a[1], "string")
        })
}

fn is_int_or_string_all_of(m: &Map<String, Value>) -> bool {
    flag(m, "x-kubernetes-int-or-string")
        && m.get("allOf")
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .and_then(Value::as_object)
            .is_some_and(|first| {
                let mut f = first.clone();
                f.insert("x-kubernetes-int-or-string".into(), Value::Bool(true));
                is_int_or_string_any_of(&f)
            })
}

fn invariants(m: &Map<String, Value>, lvl: Level, p: &FieldPath, errs: &mut ErrorList) {
    let t = ty(m);
    if t == "array" && !m.get("items").is_some_and(Value::is_object) {
        errs.push(FieldError::required(&p.child("items"), "must be specified"));
    }
    if let Some(is) = obj(m, "items") {
        invariants(is, Level::Item, &p.child("items"), errs);
    }
    for (k, s) in props(m) {
        invariants(s, Level::Field, &p.child("properties").key(k), errs);
    }
    if m.contains_key("additionalProperties") {
        if lvl == Level::Root {
            errs.push(FieldError::forbidden(
                &p.child("additionalProperties"),
                "must not be used at the root",
            ));
        }
        if let Some(ap) = obj(m, "additionalProperties") {
            invariants(ap, Level::Field, &p.child("additionalProperties"), errs);
        }
    }
    let ios = flag(m, "x-kubernetes-int-or-string");
    let emb = flag(m, "x-kubernetes-embedded-resource");
    let puf = flag(m, "x-kubernetes-preserve-unknown-fields");
    if ios && puf {
        errs.push(FieldError::invalid(
            &p.child("x-kubernetes-preserve-unknown-fields"),
            Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if ios && emb {
        errs.push(FieldError::invalid(
            &p.child("x-kubernetes-embedded-resource"),
            Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    // value validations (junctors)
    value_validation(
        m,
        is_int_or_string_any_of(m),
        is_int_or_string_all_of(m),
        lvl,
        p,
        errs,
    );
    if emb && t != "object" {
        type_must_be(
            t,
            "object",
            "x-kubernetes-embedded-resource is true",
            p,
            errs,
        );
    } else if t.is_empty() && !ios && !puf {
        let msg = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(FieldError::required(&p.child("type"), msg));
    }
    if emb && m.contains_key("additionalProperties") {
        errs.push(FieldError::forbidden(
            &p.child("additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !t.is_empty() && t != "object" {
        errs.push(FieldError::invalid(
            &p.child("type"),
            Value::from(t),
            "must be object at the root",
        ));
    }
    let check_meta = lvl == Level::Root || emb;
    let pp = obj(m, "properties");
    if check_meta {
        for k in ["kind", "apiVersion"] {
            if let Some(s) = pp.and_then(|pp| obj(pp, k))
                && ty(s) != "string"
            {
                errs.push(FieldError::invalid(
                    &p.child("properties").key(k).child("type"),
                    Value::from(ty(s)),
                    "must be string",
                ));
            }
        }
    }
    if let Some(meta) = pp.and_then(|pp| obj(pp, "metadata")) {
        let mp = p.child("properties").key("metadata");
        if check_meta && ty(meta) != "object" {
            errs.push(FieldError::invalid(
                &mp.child("type"),
                Value::from(ty(meta)),
                "must be object",
            ));
        }
        if lvl == Level::Root && !root_metadata_ok(meta) {
            errs.push(FieldError::forbidden(
                &mp,
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            ));
        }
    }
    if emb && !puf && props(m).is_empty() {
        errs.push(FieldError::required(
            &p.child("properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// Root `metadata` may only restrict `name` and `generateName`.
fn root_metadata_ok(meta: &Map<String, Value>) -> bool {
    meta.iter().all(|(k, v)| match k.as_str() {
        "type" | "default" => true,
        "properties" => v
            .as_object()
            .is_some_and(|p| p.keys().all(|k| k == "name" || k == "generateName")),
        _ => false,
    })
}

fn value_validation(
    m: &Map<String, Value>,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    lvl: Level,
    p: &FieldPath,
    errs: &mut ErrorList,
) {
    for (j, i, s) in junctors(m) {
        let skip = match j.as_str() {
            "anyOf" => {
                if skip_any_of {
                    continue;
                }
                false
            }
            "allOf" => skip_first_all_of_any_of && i == 0,
            _ => false,
        };
        nested(s, skip, lvl, &p.child(&j).index(i), errs);
    }
    if let Some(n) = obj(m, "not") {
        nested(n, false, lvl, &p.child("not"), errs);
    }
    if let Some(pat) = m.get("pattern").and_then(Value::as_str)
        && let Err(e) = crate::structural::go_regex(pat)
    {
        errs.push(FieldError::invalid(
            &p.child("pattern"),
            Value::from(pat),
            &format!("must be a valid regular expression, but isn't: {e}"),
        ));
    }
}

fn nested(
    m: &Map<String, Value>,
    skip_any_of: bool,
    lvl: Level,
    p: &FieldPath,
    errs: &mut ErrorList,
) {
    value_validation(m, skip_any_of, false, lvl, p, errs);
    if let Some(is) = obj(m, "items") {
        nested(is, false, lvl, &p.child("items"), errs);
    }
    for (k, s) in props(m) {
        nested(s, false, Level::Field, &p.child("properties").key(k), errs);
    }
    let nonempty_str = |k: &str| {
        m.get(k)
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
    };
    if nonempty_str("type") {
        errs.push(FieldError::forbidden(
            &p.child("type"),
            "must be empty to be structural",
        ));
    }
    if m.contains_key("additionalProperties") {
        errs.push(FieldError::forbidden(
            &p.child("additionalProperties"),
            "must be undefined to be structural",
        ));
    }
    if m.get("default").is_some_and(|d| !d.is_null()) {
        errs.push(FieldError::forbidden(
            &p.child("default"),
            "must be undefined to be structural",
        ));
    }
    if m.contains_key("externalDocs") {
        errs.push(FieldError::forbidden(
            &p.child("externalDocs"),
            "must be undefined to be structural",
        ));
    }
    for k in ["title", "description"] {
        if nonempty_str(k) {
            errs.push(FieldError::forbidden(
                &p.child(k),
                "must be empty to be structural",
            ));
        }
    }
    let falses = [
        "nullable",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
    ];
    for k in falses {
        if flag(m, k) {
            errs.push(FieldError::forbidden(
                &p.child(k),
                "must be false to be structural",
            ));
        }
    }
    if !strs(m, "x-kubernetes-list-map-keys").is_empty() {
        errs.push(FieldError::forbidden(
            &p.child("x-kubernetes-list-map-keys"),
            "must be empty to be structural",
        ));
    }
    for k in ["x-kubernetes-list-type", "x-kubernetes-map-type"] {
        if m.get(k).is_some_and(|v| !v.is_null()) {
            errs.push(FieldError::forbidden(
                &p.child(k),
                "must be undefined to be structural",
            ));
        }
    }
    if m.get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
    {
        errs.push(FieldError::forbidden(
            &p.child("x-kubernetes-validations"),
            "must be empty to be structural",
        ));
    }
    if obj(m, "properties").is_some_and(|pp| pp.contains_key("metadata")) {
        errs.push(FieldError::forbidden(
            &p.child("properties").key("metadata"),
            "must not be specified in a nested context",
        ));
    }
}

// ---------------------------------------------------------------------------
// ValidateStructural: completeness

fn structural_completeness(s: &Map<String, Value>, p: &FieldPath, errs: &mut ErrorList) {
    if let Some(is) = obj(s, "items") {
        structural_completeness(is, &p.child("items"), errs);
    }
    for (k, ps) in props(s) {
        structural_completeness(ps, &p.child("properties").key(k), errs);
    }
    if let Some(ap) = obj(s, "additionalProperties") {
        structural_completeness(ap, &p.child("additionalProperties"), errs);
    }
    completeness(s, s, p, p, errs);
}

fn completeness(
    v: &Map<String, Value>,
    s: &Map<String, Value>,
    sp: &FieldPath,
    vp: &FieldPath,
    errs: &mut ErrorList,
) {
    for (j, i, n) in junctors(v) {
        nested_completeness(n, Some(s), sp, &vp.child(&j).index(i), errs);
    }
    if let Some(n) = obj(v, "not") {
        nested_completeness(n, Some(s), sp, &vp.child("not"), errs);
    }
}

fn nested_completeness(
    v: &Map<String, Value>,
    s: Option<&Map<String, Value>>,
    sp: &FieldPath,
    vp: &FieldPath,
    errs: &mut ErrorList,
) {
    let Some(s) = s else {
        errs.push(FieldError::required(
            sp,
            &format!("because it is defined in {vp}"),
        ));
        return;
    };
    completeness(v, s, sp, vp, errs);
    if let Some(vi) = obj(v, "items") {
        nested_completeness(
            vi,
            obj(s, "items"),
            &sp.child("items"),
            &vp.child("items"),
            errs,
        );
    }
    for (k, vf) in props(v) {
        let vkp = vp.child("properties").key(k);
        match obj(s, "properties").and_then(|sp| obj(sp, k)) {
            Some(sf) => {
                nested_completeness(vf, Some(sf), &sp.child("properties").key(k), &vkp, errs)
            }
            None => match obj(s, "additionalProperties") {
                Some(ap) => {
                    nested_completeness(vf, Some(ap), &sp.child("additionalProperties"), &vkp, errs)
                }
                None => errs.push(FieldError::required(
                    &sp.child("properties").key(k),
                    &format!("because it is defined in {vkp}"),
                )),
            },
        }
    }
}

// ---------------------------------------------------------------------------
// ValidateDefaults

fn defaults(m: &Map<String, Value>, p: &FieldPath, root: bool, errs: &mut ErrorList) {
    for (k, s) in props(m) {
        let kp = p.child("properties").key(k);
        if root && matches!(k.as_str(), "metadata" | "kind" | "apiVersion") {
            continue;
        }
        defaults(s, &kp, false, errs);
    }
    if let Some(is) = obj(m, "items") {
        defaults(is, &p.child("items"), false, errs);
    }
    if let Some(ap) = obj(m, "additionalProperties") {
        defaults(ap, &p.child("additionalProperties"), false, errs);
    }
    let Some(d) = m.get("default").filter(|d| !d.is_null()) else {
        return;
    };
    let Ok(s) = Structural::compile(&Value::Object(m.clone())) else {
        return;
    };
    let dp = p.child("default");
    let mut pruned = d.clone();
    crate::pruning::prune(&mut pruned, &s, s.extensions.embedded_resource);
    if &pruned != d {
        errs.push(FieldError::invalid(
            &dp,
            d.clone(),
            "must not have unknown fields",
        ));
        return;
    }
    errs.extend(crate::validate::validate_embedded(d, &s, &dp));
    errs.extend(crate::validate::validate_values_only(d, &s, &dp));
    errs.extend(crate::validate::validate_list_types(d, None, &s, &dp));
}
