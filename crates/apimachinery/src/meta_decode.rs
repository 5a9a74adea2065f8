//! What Go's JSON decoder refuses in `metadata`: kube-apiserver decodes a body's
//! `metadata` into `metav1.ObjectMeta`, so a member of the wrong JSON type (a label
//! whose value is a number) fails the decode, a 400 BadRequest, before any
//! validation runs. The message is encoding/json's `UnmarshalTypeError`.

use serde_json::Value;

/// The Go type of an `ObjectMeta` member, as the decoder names it.
#[derive(Clone, Copy)]
enum GoType {
    String,
    Int64,
    Bool,
    StringMap,
    StringList,
    /// A list of structs (`[]v1.OwnerReference`) whose members are checked too.
    StructList(&'static str, fn(&str) -> Option<GoType>),
}

impl GoType {
    fn name(self) -> &'static str {
        match self {
            GoType::String => "string",
            GoType::Int64 => "int64",
            GoType::Bool => "bool",
            GoType::StringMap => "map[string]string",
            GoType::StringList => "[]string",
            GoType::StructList(name, _) => name,
        }
    }
}

fn object_meta_member(field: &str) -> Option<GoType> {
    Some(match field {
        "name" | "generateName" | "namespace" | "selfLink" | "uid" | "resourceVersion" => {
            GoType::String
        }
        "generation" | "deletionGracePeriodSeconds" => GoType::Int64,
        "labels" | "annotations" => GoType::StringMap,
        "finalizers" => GoType::StringList,
        "ownerReferences" => GoType::StructList("[]v1.OwnerReference", owner_reference_member),
        "managedFields" => GoType::StructList("[]v1.ManagedFieldsEntry", managed_fields_member),
        _ => return None,
    })
}

fn owner_reference_member(field: &str) -> Option<GoType> {
    Some(match field {
        "apiVersion" | "kind" | "name" | "uid" => GoType::String,
        "controller" | "blockOwnerDeletion" => GoType::Bool,
        _ => return None,
    })
}

fn managed_fields_member(field: &str) -> Option<GoType> {
    Some(match field {
        "manager" | "operation" | "apiVersion" | "fieldsType" | "subresource" => GoType::String,
        _ => return None,
    })
}

/// How encoding/json names a JSON value in its errors (`number 1.5` for a
/// number that does not fit an integer type).
fn json_kind(value: &Value, into: GoType) -> String {
    match value {
        Value::String(_) => "string".into(),
        Value::Bool(_) => "bool".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
        Value::Number(n) if matches!(into, GoType::Int64) => format!("number {n}"),
        Value::Number(_) => "number".into(),
        Value::Null => "null".into(),
    }
}

/// Whether `value` decodes into `into` on its own (null always does: Go leaves
/// the field zero).
fn fits(value: &Value, into: GoType) -> bool {
    match (value, into) {
        (Value::Null, _) => true,
        (Value::String(_), GoType::String) => true,
        (Value::Bool(_), GoType::Bool) => true,
        (Value::Number(n), GoType::Int64) => n.is_i64(),
        (Value::Object(_), GoType::StringMap) => true,
        (Value::Array(_), GoType::StringList | GoType::StructList(..)) => true,
        _ => false,
    }
}

/// The first member of `metadata` Go's decoder refuses, as its message:
/// `json: cannot unmarshal number into Go struct field ObjectMeta.<prefix>labels
/// of type string`. `prefix` is the JSON path of `metadata` as the decoder saw it:
/// `metadata.` when the whole object was decoded into a Go type (built-in
/// kinds), empty when `metadata` alone was (custom resources).
pub fn decode_error(metadata: &Value, prefix: &str) -> Option<String> {
    let map = metadata.as_object()?;
    let refuse = |value: &Value, field: &str, into: GoType| {
        Some(format!(
            "json: cannot unmarshal {} into Go struct field ObjectMeta.{prefix}{field} of type {}",
            json_kind(value, into),
            into.name()
        ))
    };
    for (field, value) in map {
        let Some(into) = object_meta_member(field) else {
            continue;
        };
        if !fits(value, into) {
            return refuse(value, field, into);
        }
        match (into, value) {
            (GoType::StringMap, Value::Object(entries)) => {
                if let Some(bad) = entries.values().find(|v| !fits(v, GoType::String)) {
                    return refuse(bad, field, GoType::String);
                }
            }
            (GoType::StringList, Value::Array(items)) => {
                if let Some(bad) = items.iter().find(|v| !fits(v, GoType::String)) {
                    return refuse(bad, field, GoType::String);
                }
            }
            (GoType::StructList(list_type, member), Value::Array(items)) => {
                let item_type = list_type.trim_start_matches("[]");
                for item in items {
                    let Some(members) = item.as_object() else {
                        if item.is_null() {
                            continue;
                        }
                        return Some(format!(
                            "json: cannot unmarshal {} into Go struct field ObjectMeta.{prefix}{field} of type {item_type}",
                            json_kind(item, into),
                        ));
                    };
                    for (name, v) in members {
                        if let Some(want) = member(name)
                            && !fits(v, want)
                        {
                            return refuse(v, &format!("{field}.{name}"), want);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Messages as kube-apiserver answers them (its users quote them verbatim:
    /// a custom resource's `ObjectMeta.labels`, a built-in's
    /// `ObjectMeta.metadata.annotations`).
    #[test]
    fn go_decoder_messages() {
        let cases = [
            (
                json!({"labels": {"app": 1}}),
                "",
                Some(
                    "json: cannot unmarshal number into Go struct field ObjectMeta.labels of type string",
                ),
            ),
            (
                json!({"annotations": {"a": true}}),
                "metadata.",
                Some(
                    "json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.annotations of type string",
                ),
            ),
            (
                json!({"annotations": "x"}),
                "metadata.",
                Some(
                    "json: cannot unmarshal string into Go struct field ObjectMeta.metadata.annotations of type map[string]string",
                ),
            ),
            (
                json!({"name": 5}),
                "metadata.",
                Some(
                    "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.name of type string",
                ),
            ),
            (
                json!({"generation": 1.5}),
                "",
                Some(
                    "json: cannot unmarshal number 1.5 into Go struct field ObjectMeta.generation of type int64",
                ),
            ),
            (
                json!({"finalizers": ["a", 2]}),
                "",
                Some(
                    "json: cannot unmarshal number into Go struct field ObjectMeta.finalizers of type string",
                ),
            ),
            (
                json!({"ownerReferences": [{"controller": "yes"}]}),
                "",
                Some(
                    "json: cannot unmarshal string into Go struct field ObjectMeta.ownerReferences.controller of type bool",
                ),
            ),
            (
                json!({"ownerReferences": {}}),
                "",
                Some(
                    "json: cannot unmarshal object into Go struct field ObjectMeta.ownerReferences of type []v1.OwnerReference",
                ),
            ),
            (
                json!({"labels": null, "name": "ok", "unknown": 1}),
                "",
                None,
            ),
            (json!({"labels": {"a": null}}), "", None),
        ];
        for (meta, prefix, want) in cases {
            assert_eq!(decode_error(&meta, prefix).as_deref(), want, "{meta}");
        }
    }
}
