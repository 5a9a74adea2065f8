//! A CRD version's kind and list schemas as apiextensions-apiserver 1.37.2
//! publishes them (`pkg/controller/openapi/builder`):
//!
//! - the version's `openAPIV3Schema` as a structural schema (`NewStructural` then
//!   `ToKubeOpenAPI`: only the fields a structural schema has, `false` and empty
//!   values left out),
//! - unfolded: an `x-kubernetes-int-or-string` node gets
//!   `anyOf: [{type: integer}, {type: string}]` unless it has that pattern already,
//! - for OpenAPI v2 made safe for kubectl (`ToStructuralOpenAPIV2`: no junctors, a
//!   nullable node loses its type, properties and items, a node preserving unknown
//!   fields its properties and items and an `object`/item-less `array` type,
//!   nullable properties are not required) with every `default` pruned, and a root
//!   that preserves unknown fields published as just `type: object`,
//! - `metadata` (ObjectMeta), `apiVersion` and `kind` at the root, and on every
//!   `x-kubernetes-embedded-resource` node (not below one preserving unknown fields
//!   in v2), which also requires `kind` and `apiVersion`,
//! - the `x-kubernetes-group-version-kind` and `x-kubernetes-selectable-fields`
//!   extensions.
//!
//! A version without a schema (or one upstream can't make structural) is
//! published as `type: object`.

use serde_json::{Map, Value, json};

use crate::builtin::{
    API_VERSION_DESC, KIND_DESC, LIST_META, LIST_META_DESC, OBJECT_META, OBJECT_META_DESC,
    custom_schema_name,
};
use crate::convert::{V2_PREFIX, V3_PREFIX};
use crate::{Gvk, ServedResource};

const EMBEDDED_API_VERSION_DESC: &str = "apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const EMBEDDED_KIND_DESC: &str = "kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
const CONVENTIONS: &str =
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md";

const PRESERVE: &str = "x-kubernetes-preserve-unknown-fields";
const EMBEDDED: &str = "x-kubernetes-embedded-resource";
const INT_OR_STRING: &str = "x-kubernetes-int-or-string";

/// Which document a schema is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// Swagger 2.0 (`/openapi/v2`): refs to `#/definitions/`, kubectl-safe.
    V2,
    /// OpenAPI 3.0 (`/openapi/v3/...`): refs to `#/components/schemas/`.
    V3,
}

impl Dialect {
    /// `{$ref, description}` in v2, `{allOf: [{$ref}], description}` in v3.
    fn ref_with_description(self, name: &str, description: &str) -> Value {
        match self {
            Dialect::V2 => {
                json!({"$ref": format!("{V2_PREFIX}{name}"), "description": description})
            }
            Dialect::V3 => json!({
                "allOf": [{"$ref": format!("{V3_PREFIX}{name}")}],
                "description": description,
            }),
        }
    }
}

/// The kind's schema, as published in `dialect`'s documents.
pub(crate) fn kind_schema(r: &ServedResource, dialect: Dialect) -> Value {
    let structural = r.schema.as_ref().and_then(|s| structural(s, false));
    let mut out = match structural {
        Some(s) if !(dialect == Dialect::V2 && is_true(&s, PRESERVE)) => {
            let mut s = unfold(s);
            if dialect == Dialect::V2 {
                to_v2(&mut s);
                prune_defaults(&mut s);
            }
            let props = properties_mut(&mut s);
            props.insert(
                "metadata".into(),
                dialect.ref_with_description(OBJECT_META, OBJECT_META_DESC),
            );
            props.insert(
                "apiVersion".into(),
                json!({"description": API_VERSION_DESC, "type": "string"}),
            );
            props.insert(
                "kind".into(),
                json!({"description": KIND_DESC, "type": "string"}),
            );
            add_embedded_properties(&mut s, dialect);
            s
        }
        _ => {
            let mut m = Map::new();
            m.insert("type".into(), json!("object"));
            m
        }
    };
    out.insert(
        "x-kubernetes-group-version-kind".into(),
        json!([r.gvk().to_json()]),
    );
    add_selectable_fields(&mut out, r);
    Value::Object(out)
}

/// The list kind's schema (OpenAPI 3.0 form; the v2 form is its Swagger 2.0
/// conversion).
pub(crate) fn list_schema(r: &ServedResource) -> Value {
    let item = custom_schema_name(&r.gvk());
    let list_gvk = Gvk::new(&r.group, &r.version, &r.list_kind);
    let mut out = json!({
        "description": format!("{} is a list of {}", r.list_kind, r.kind),
        "properties": {
            "apiVersion": {"description": API_VERSION_DESC, "type": "string"},
            "items": {
                "description": format!("List of {}. More info: {CONVENTIONS}", r.plural),
                "items": {"$ref": format!("{V3_PREFIX}{item}")},
                "type": "array",
            },
            "kind": {"description": KIND_DESC, "type": "string"},
            "metadata": Dialect::V3.ref_with_description(LIST_META, LIST_META_DESC),
        },
        "required": ["items"],
        "type": "object",
        "x-kubernetes-group-version-kind": [list_gvk.to_json()],
    });
    if let Value::Object(m) = &mut out {
        add_selectable_fields(m, r);
    }
    out
}

fn add_selectable_fields(s: &mut Map<String, Value>, r: &ServedResource) {
    if !r.selectable_fields.is_empty() {
        let fields: Vec<Value> = r
            .selectable_fields
            .iter()
            .map(|f| json!({"fieldPath": f.trim_start_matches('.')}))
            .collect();
        s.insert(
            "x-kubernetes-selectable-fields".into(),
            Value::Array(fields),
        );
    }
}

fn is_true(s: &Map<String, Value>, key: &str) -> bool {
    s.get(key) == Some(&Value::Bool(true))
}

fn properties_mut(s: &mut Map<String, Value>) -> &mut Map<String, Value> {
    let props = s
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if !props.is_object() {
        *props = Value::Object(Map::new());
    }
    match props {
        Value::Object(m) => m,
        _ => unreachable!("just made an object"),
    }
}

/// The types upstream accepts (`SchemaHasInvalidTypes`).
const TYPES: [&str; 6] = ["string", "number", "integer", "boolean", "array", "object"];

fn non_empty_str(v: &Value) -> bool {
    v.as_str().is_some_and(|s| !s.is_empty())
}

fn non_empty_array(v: &Value) -> bool {
    v.as_array().is_some_and(|a| !a.is_empty())
}

/// A CRD schema node as `NewStructural(...).ToKubeOpenAPI()` writes it back
/// (`nested`: inside `allOf`/`anyOf`/`oneOf`/`not`, where `additionalProperties`
/// is not written). `None` where upstream gives up on the whole schema (an
/// unsupported keyword, `items` as an array, an unknown type).
fn structural(s: &Value, nested: bool) -> Option<Map<String, Value>> {
    let m = s.as_object()?;
    let mut out = Map::new();
    for (k, v) in m {
        let kept = match k.as_str() {
            "id" | "$schema" | "$ref" | "patternProperties" | "dependencies" | "definitions" => {
                let empty = v.is_null()
                    || v.as_str() == Some("")
                    || v.as_object().is_some_and(Map::is_empty);
                if !empty {
                    return None;
                }
                None
            }
            "additionalItems" if !v.is_null() => return None,
            "type" => match v.as_str() {
                Some(t) if TYPES.contains(&t) => Some(v.clone()),
                Some("") | None => None,
                Some(_) => return None,
            },
            "description" | "title" | "format" | "pattern" => non_empty_str(v).then(|| v.clone()),
            "default" | "example" => (!v.is_null()).then(|| go_json(v)),
            "nullable" | "exclusiveMaximum" | "exclusiveMinimum" | "uniqueItems" | PRESERVE
            | EMBEDDED | INT_OR_STRING => (v == &Value::Bool(true)).then(|| v.clone()),
            "maximum" | "minimum" | "multipleOf" | "maxLength" | "minLength" | "maxItems"
            | "minItems" | "maxProperties" | "minProperties" => v.is_number().then(|| go_json(v)),
            "enum" => non_empty_array(v).then(|| go_json(v)),
            "required" | "x-kubernetes-list-map-keys" => non_empty_array(v).then(|| v.clone()),
            "x-kubernetes-list-type" | "x-kubernetes-map-type" => v.is_string().then(|| v.clone()),
            "externalDocs" => v.as_object().map(|docs| {
                docs.iter()
                    .filter(|(k, v)| {
                        matches!(k.as_str(), "description" | "url") && non_empty_str(v)
                    })
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            }),
            "x-kubernetes-validations" => v
                .as_array()
                .filter(|rules| !rules.is_empty())
                .map(|rules| rules.iter().map(validation_rule).collect()),
            "allOf" | "anyOf" | "oneOf" => match v.as_array() {
                Some(branches) if !branches.is_empty() => Some(Value::Array(
                    branches
                        .iter()
                        .map(|b| structural(b, true).map(Value::Object))
                        .collect::<Option<_>>()?,
                )),
                _ => None,
            },
            "not" if !v.is_null() => Some(Value::Object(structural(v, true)?)),
            "items" => match v {
                Value::Null => None,
                Value::Array(_) => return None,
                _ => Some(Value::Object(structural(v, nested)?)),
            },
            "properties" => match v.as_object() {
                Some(props) if !props.is_empty() => Some(Value::Object(
                    props
                        .iter()
                        .map(|(name, p)| {
                            Some((name.clone(), Value::Object(structural(p, nested)?)))
                        })
                        .collect::<Option<_>>()?,
                )),
                _ => None,
            },
            // Not written inside junctors (nor allowed there).
            "additionalProperties" => match v {
                Value::Bool(_) => (!nested).then(|| v.clone()),
                Value::Object(_) => {
                    let schema = structural(v, nested)?;
                    (!nested).then_some(Value::Object(schema))
                }
                _ => None,
            },
            _ => None,
        };
        if let Some(kept) = kept {
            out.insert(k.clone(), kept);
        }
    }
    Some(out)
}

/// A JSON value as Go writes it back after decoding it into `interface{}`:
/// numbers are float64, so a whole `1.0` is written `1`.
fn go_json(v: &Value) -> Value {
    match v {
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 1e15 => json!(f as i64),
            _ => v.clone(),
        },
        Value::Array(a) => Value::Array(a.iter().map(go_json).collect()),
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), go_json(v))).collect()),
        _ => v.clone(),
    }
}

/// One `x-kubernetes-validations` rule as `apiextensions/v1` writes it.
fn validation_rule(rule: &Value) -> Value {
    let mut out = Map::new();
    out.insert(
        "rule".into(),
        rule.get("rule").cloned().unwrap_or_else(|| json!("")),
    );
    if let Some(m) = rule.as_object() {
        for (k, v) in m {
            let keep = match k.as_str() {
                "message" | "messageExpression" | "fieldPath" => non_empty_str(v),
                "reason" | "optionalOldSelf" => !v.is_null(),
                _ => false,
            };
            if keep {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(out)
}

/// The children of a structural node that are structural nodes themselves.
fn for_each_child(s: &mut Map<String, Value>, mut f: impl FnMut(&mut Map<String, Value>)) {
    if let Some(Value::Object(items)) = s.get_mut("items") {
        f(items);
    }
    if let Some(Value::Object(props)) = s.get_mut("properties") {
        for p in props.values_mut() {
            if let Value::Object(p) = p {
                f(p);
            }
        }
    }
    if let Some(Value::Object(additional)) = s.get_mut("additionalProperties") {
        f(additional);
    }
}

/// `Structural.Unfold`: `x-kubernetes-int-or-string` as a junctor of the two types.
fn unfold(mut s: Map<String, Value>) -> Map<String, Value> {
    unfold_node(&mut s);
    s
}

fn unfold_node(s: &mut Map<String, Value>) {
    if is_true(s, INT_OR_STRING) {
        let pattern = json!([{"type": "integer"}, {"type": "string"}]);
        let any_of = s.get("anyOf") == Some(&pattern);
        let all_of = s
            .get("allOf")
            .and_then(|a| a.get(0))
            .and_then(|b| b.get("anyOf"))
            == Some(&pattern);
        if !any_of && !all_of {
            if s.contains_key("anyOf") {
                let mut all = vec![json!({"anyOf": pattern})];
                if let Some(Value::Array(existing)) = s.remove("allOf") {
                    all.extend(existing);
                }
                s.insert("allOf".into(), Value::Array(all));
            } else {
                s.insert("anyOf".into(), pattern);
            }
        }
    }
    for_each_child(s, unfold_node);
}

/// `ToStructuralOpenAPIV2`: each node decided before its children, on the
/// children's original `nullable`.
fn to_v2(s: &mut Map<String, Value>) {
    for k in ["allOf", "oneOf", "anyOf", "not"] {
        s.remove(k);
    }
    if s.remove("nullable") == Some(Value::Bool(true)) {
        s.remove("type");
        s.remove("items");
        s.remove("properties");
    }
    let preserve = is_true(s, PRESERVE);
    if preserve {
        s.remove("items");
        s.remove("properties");
    }
    let ty = s.get("type").and_then(Value::as_str);
    if (ty == Some("array") && !s.contains_key("items")) || (preserve && ty == Some("object")) {
        s.remove("type");
    }
    let nullable_props: Vec<String> = match s.get("properties") {
        Some(Value::Object(props)) => props
            .iter()
            .filter(|(_, p)| p.get("nullable") == Some(&Value::Bool(true)))
            .map(|(name, _)| name.clone())
            .collect(),
        _ => Vec::new(),
    };
    if let Some(Value::Array(required)) = s.get_mut("required") {
        required.retain(|r| {
            !r.as_str()
                .is_some_and(|r| nullable_props.iter().any(|p| p == r))
        });
        if required.is_empty() {
            s.remove("required");
        }
    }
    if s.get("additionalProperties")
        .and_then(|a| a.get("nullable"))
        == Some(&Value::Bool(true))
    {
        s.remove("required");
    }
    for_each_child(s, to_v2);
}

/// kube-openapi's `PruneDefaults` (v2 only).
fn prune_defaults(s: &mut Map<String, Value>) {
    s.remove("default");
    for_each_child(s, prune_defaults);
}

/// `addEmbeddedProperties`.
fn add_embedded_properties(s: &mut Map<String, Value>, dialect: Dialect) {
    for_each_child(s, |child| add_embedded_properties(child, dialect));
    if dialect == Dialect::V2 && is_true(s, PRESERVE) {
        return;
    }
    if !is_true(s, EMBEDDED) {
        return;
    }
    let props = properties_mut(s);
    props.insert(
        "apiVersion".into(),
        json!({"description": EMBEDDED_API_VERSION_DESC, "type": "string"}),
    );
    props.insert(
        "kind".into(),
        json!({"description": EMBEDDED_KIND_DESC, "type": "string"}),
    );
    props.insert(
        "metadata".into(),
        dialect.ref_with_description(OBJECT_META, OBJECT_META_DESC),
    );
    let required = s.entry("required").or_insert_with(|| json!([]));
    if let Value::Array(required) = required {
        for field in ["kind", "apiVersion"] {
            if !required.iter().any(|r| r == field) {
                required.push(json!(field));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::to_swagger2;

    /// Schemas and what kube-apiserver 1.37.2 published for them (measured).
    const MEASURED: &str = include_str!("../tests/data/crd_openapi_1_37_2.json");

    fn resource(case: &Value) -> ServedResource {
        let s = |k: &str| case[k].as_str().expect(k);
        let mut r = ServedResource::new(s("group"), s("version"), s("kind"), s("plural"), true)
            .custom_resource()
            .with_schema(case["schema"].clone());
        r.list_kind = s("listKind").to_string();
        r.selectable_fields = case["selectableFields"]
            .as_array()
            .expect("selectableFields")
            .iter()
            .map(|f| f.as_str().expect("path").to_string())
            .collect();
        r
    }

    #[test]
    fn kind_and_list_schemas_are_kube_apiserver_1_37_2s() {
        let measured: Value = serde_json::from_str(MEASURED).expect("fixture");
        let cases = measured["cases"].as_array().expect("cases");
        assert!(cases.len() >= 10);
        for case in cases {
            let r = resource(case);
            let what = format!("{}/{} {}", r.group, r.version, r.kind);
            assert_eq!(
                kind_schema(&r, Dialect::V2),
                case["v2"]["kind"],
                "v2 {what}"
            );
            assert_eq!(
                kind_schema(&r, Dialect::V3),
                case["v3"]["kind"],
                "v3 {what}"
            );
            if let Some(list) = case["v3"].get("list") {
                assert_eq!(&list_schema(&r), list, "v3 list {what}");
                assert_eq!(
                    &to_swagger2(&list_schema(&r)),
                    &case["v2"]["list"],
                    "v2 list {what}"
                );
            }
        }
    }

    fn crd(schema: Value) -> ServedResource {
        ServedResource::new("g.example.com", "v1", "Thing", "things", true)
            .custom_resource()
            .with_schema(schema)
    }

    fn spec_of(r: &ServedResource, dialect: Dialect) -> Value {
        kind_schema(r, dialect)["properties"]["spec"].clone()
    }

    #[test]
    fn preserving_unknown_fields_at_the_root_is_type_object_in_v2() {
        let r = crd(json!({"type": "object", PRESERVE: true, "description": "d",
            "properties": {"spec": {"type": "object"}}}));
        let gvk = json!([{"group": "g.example.com", "kind": "Thing", "version": "v1"}]);
        assert_eq!(
            kind_schema(&r, Dialect::V2),
            json!({"type": "object", "x-kubernetes-group-version-kind": gvk})
        );
        // v3 keeps the schema.
        let v3 = kind_schema(&r, Dialect::V3);
        assert_eq!(v3["description"], "d");
        assert_eq!(v3[PRESERVE], true);
        assert_eq!(v3["properties"]["spec"], json!({"type": "object"}));
        // No schema at all: `type: object` in both.
        let mut none = r.clone();
        none.schema = None;
        for dialect in [Dialect::V2, Dialect::V3] {
            assert_eq!(
                kind_schema(&none, dialect),
                json!({"type": "object", "x-kubernetes-group-version-kind": gvk})
            );
        }
    }

    #[test]
    fn nullable_and_preserved_nodes_in_v2() {
        let r = crd(json!({"type": "object", "properties": {"spec": {
            "type": "object",
            "required": ["a", "b", "c"],
            "properties": {
                "a": {"type": "string", "nullable": true},
                "b": {"type": "array", "items": {"type": "string", "nullable": true}},
                "c": {"type": "object", "nullable": true, "required": ["x"],
                      "properties": {"x": {"type": "string"}}},
                "m": {"type": "object", "required": ["k"],
                      "additionalProperties": {"type": "string", "nullable": true}},
                "p": {"type": "object", PRESERVE: true, "properties": {"x": {"type": "string"}}},
                "l": {"type": "array", PRESERVE: true, "items": {"type": "string"}},
            },
        }}}));
        assert_eq!(
            spec_of(&r, Dialect::V2),
            json!({
                "type": "object",
                "required": ["b"],
                "properties": {
                    "a": {},
                    "b": {"type": "array", "items": {}},
                    "c": {"required": ["x"]},
                    "m": {"type": "object", "additionalProperties": {}},
                    "p": {PRESERVE: true},
                    "l": {PRESERVE: true},
                },
            })
        );
        // v3 publishes them as written.
        assert_eq!(
            spec_of(&r, Dialect::V3)["properties"]["c"],
            json!({"type": "object", "nullable": true, "required": ["x"],
                   "properties": {"x": {"type": "string"}}})
        );
    }

    #[test]
    fn int_or_string_unfolds_in_v3_and_junctors_go_in_v2() {
        let ios = json!([{"type": "integer"}, {"type": "string"}]);
        let r = crd(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "plain": {INT_OR_STRING: true},
                "pattern": {INT_OR_STRING: true, "anyOf": ios},
                "other": {INT_OR_STRING: true, "anyOf": [{"maximum": 3}], "allOf": [{"pattern": "x"}]},
            }}}}),
        );
        let v3 = spec_of(&r, Dialect::V3);
        assert_eq!(
            v3["properties"]["plain"],
            json!({INT_OR_STRING: true, "anyOf": ios})
        );
        assert_eq!(
            v3["properties"]["pattern"],
            json!({INT_OR_STRING: true, "anyOf": ios})
        );
        assert_eq!(
            v3["properties"]["other"],
            json!({INT_OR_STRING: true, "anyOf": [{"maximum": 3}],
                   "allOf": [{"anyOf": ios}, {"pattern": "x"}]})
        );
        let v2 = spec_of(&r, Dialect::V2);
        for name in ["plain", "pattern", "other"] {
            assert_eq!(
                v2["properties"][name],
                json!({INT_OR_STRING: true}),
                "{name}"
            );
        }
    }

    #[test]
    fn embedded_resources_get_type_and_object_meta() {
        let r = crd(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "e": {"type": "object", EMBEDDED: true, "required": ["spec"],
                      "properties": {"spec": {"type": "object"}, "kind": {"type": "string"}}},
                "p": {"type": "object", EMBEDDED: true, PRESERVE: true},
            }}}}),
        );
        for dialect in [Dialect::V2, Dialect::V3] {
            let e = &spec_of(&r, dialect)["properties"]["e"];
            assert_eq!(e["required"], json!(["spec", "kind", "apiVersion"]));
            assert_eq!(e["properties"]["kind"]["description"], EMBEDDED_KIND_DESC);
            assert_eq!(
                e["properties"]["metadata"],
                dialect.ref_with_description(OBJECT_META, OBJECT_META_DESC)
            );
        }
        // Below a node that preserves unknown fields: only in v3.
        assert_eq!(
            spec_of(&r, Dialect::V2)["properties"]["p"],
            json!({EMBEDDED: true, PRESERVE: true})
        );
        let p = &spec_of(&r, Dialect::V3)["properties"]["p"];
        assert_eq!(p["required"], json!(["kind", "apiVersion"]));
        assert_eq!(p["type"], "object");
    }

    #[test]
    fn only_structural_fields_are_published() {
        let r = crd(json!({"type": "object", "properties": {"spec": {
            "type": "object",
            "nullable": false,
            "uniqueItems": false,
            "required": [],
            "properties": {
                "default": {"type": "number", "default": 2.0, "maximum": 10.0, "minimum": 0.5},
                "v": {"type": "string", "x-kubernetes-validations": [
                    {"rule": "self != ''", "message": "", "reason": "FieldValueInvalid", "optionalOldSelf": false}
                ]},
            },
            "x-kubernetes-embedded-resource": false,
            "somethingElse": 1,
        }}}));
        let v3 = spec_of(&r, Dialect::V3);
        assert_eq!(
            v3,
            json!({"type": "object", "properties": {
                "default": {"type": "number", "default": 2, "maximum": 10, "minimum": 0.5},
                "v": {"type": "string", "x-kubernetes-validations": [
                    {"rule": "self != ''", "reason": "FieldValueInvalid", "optionalOldSelf": false}
                ]},
            }})
        );
        // A property named `default` is not a default; defaults are pruned in v2.
        assert_eq!(
            spec_of(&r, Dialect::V2)["properties"]["default"],
            json!({"type": "number", "maximum": 10, "minimum": 0.5})
        );
        // Not structural (upstream gives up): `type: object`.
        let bad =
            crd(json!({"type": "object", "properties": {"a": {"type": "array", "items": [{}]}}}));
        assert_eq!(kind_schema(&bad, Dialect::V3)["properties"], Value::Null);
    }

    #[test]
    fn selectable_fields_and_list_kind() {
        let mut r = crd(json!({"type": "object"}));
        r.list_kind = "ThingCollection".into();
        r.selectable_fields = vec!["spec.color".into()];
        let fields = json!([{"fieldPath": "spec.color"}]);
        assert_eq!(
            kind_schema(&r, Dialect::V2)["x-kubernetes-selectable-fields"],
            fields
        );
        let list = list_schema(&r);
        assert_eq!(list["x-kubernetes-selectable-fields"], fields);
        assert_eq!(list["description"], "ThingCollection is a list of Thing");
        assert_eq!(
            list["x-kubernetes-group-version-kind"],
            json!([{"group": "g.example.com", "kind": "ThingCollection", "version": "v1"}])
        );
        assert_eq!(
            list["properties"]["items"]["description"],
            format!("List of things. More info: {CONVENTIONS}")
        );
    }
}
