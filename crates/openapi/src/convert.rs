//! Schema dialect conversions: JSON Schema 2020-12 (schemars's output) to the
//! OpenAPI 3.0 shape kube-apiserver serves, and OpenAPI 3.0 to Swagger 2.0.

use serde_json::{Map, Value, json};

pub(crate) const V3_PREFIX: &str = "#/components/schemas/";
pub(crate) const V2_PREFIX: &str = "#/definitions/";

/// Keywords OpenAPI 3.0 schemas don't have (and that kubectl ignores).
const DROPPED: &[&str] = &[
    "$schema",
    "$id",
    "$defs",
    "definitions",
    "$comment",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    "propertyNames",
    "contains",
    "minContains",
    "maxContains",
];

/// The component name a `$ref` points at (`#/$defs/X`, `#/definitions/X`,
/// `#/components/schemas/X` all give `X`).
pub(crate) fn ref_name(r: &str) -> &str {
    for prefix in [V3_PREFIX, V2_PREFIX, "#/$defs/"] {
        if let Some(name) = r.strip_prefix(prefix) {
            return name;
        }
    }
    r.rsplit('/').next().unwrap_or(r)
}

fn is_null_schema(s: &Value) -> bool {
    match s {
        Value::Object(m) => {
            m.get("type").and_then(Value::as_str) == Some("null")
                || m.get("const") == Some(&Value::Null)
                || m.get("enum") == Some(&json!([null]))
        }
        _ => false,
    }
}

/// Converts a JSON Schema 2020-12 schema to OpenAPI 3.0: refs point at
/// `#/components/schemas/`, nullability is dropped (optional fields are simply not
/// `required`), `type: [T, "null"]` becomes `type: T`, `anyOf`/`oneOf` with a null
/// branch collapse to the other branch, `const` becomes a one-value `enum`, and a
/// `$ref` with siblings is wrapped as `allOf: [{$ref}]` (as upstream does).
pub(crate) fn to_oas3(schema: Value) -> Value {
    match schema {
        Value::Bool(true) => Value::Object(Map::new()),
        Value::Bool(false) => json!({"not": {}}),
        Value::Object(m) => Value::Object(object_to_oas3(m)),
        other => other,
    }
}

fn object_to_oas3(mut m: Map<String, Value>) -> Map<String, Value> {
    for k in DROPPED {
        m.remove(*k);
    }
    // Nullable unions: drop the null branch before converting the branches (a
    // converted `{type: null}` would be indistinguishable from `{}`).
    for k in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = m.get_mut(k) {
            branches.retain(|s| !is_null_schema(s));
            match branches.len() {
                0 => {
                    m.remove(k);
                }
                1 => {
                    let only = branches.remove(0);
                    m.remove(k);
                    if let Value::Object(only) = only {
                        for (key, v) in only {
                            m.entry(key).or_insert(v);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    if let Some(Value::String(r)) = m.get_mut("$ref") {
        *r = format!("{V3_PREFIX}{}", ref_name(r));
    }

    match m.get("type") {
        Some(Value::Array(types)) => {
            let non_null: Vec<Value> = types
                .iter()
                .filter(|t| t.as_str() != Some("null"))
                .cloned()
                .collect();
            match non_null.as_slice() {
                [] => {
                    m.remove("type");
                }
                [one] => {
                    m.insert("type".into(), one.clone());
                }
                many => {
                    let branches: Vec<Value> = many.iter().map(|t| json!({"type": t})).collect();
                    m.remove("type");
                    if !m.contains_key("anyOf") {
                        m.insert("anyOf".into(), Value::Array(branches));
                    }
                }
            }
        }
        Some(Value::String(t)) if t == "null" => {
            m.remove("type");
        }
        _ => {}
    }

    if let Some(c) = m.remove("const") {
        m.entry("enum").or_insert_with(|| json!([c]));
    }
    if let Some(Value::Array(mut examples)) = m.remove("examples")
        && !examples.is_empty()
        && !m.contains_key("example")
    {
        m.insert("example".into(), examples.swap_remove(0));
    }
    for (exclusive, bound) in [
        ("exclusiveMinimum", "minimum"),
        ("exclusiveMaximum", "maximum"),
    ] {
        if let Some(n @ Value::Number(_)) = m.get(exclusive).cloned() {
            m.insert(bound.into(), n);
            m.insert(exclusive.into(), Value::Bool(true));
        }
    }
    if let Some(Value::Array(prefix)) = m.remove("prefixItems")
        && !m.contains_key("items")
    {
        m.insert(
            "items".into(),
            prefix.into_iter().next().unwrap_or_else(|| json!({})),
        );
    }
    // A tuple `items: [a, b]` (draft 4-7) has no OpenAPI 3.0 form; keep the first.
    if let Some(Value::Array(items)) = m.get_mut("items") {
        let first = items.drain(..).next().unwrap_or_else(|| json!({}));
        m.insert("items".into(), first);
    }

    if let Some(Value::Object(props)) = m.get_mut("properties") {
        for v in props.values_mut() {
            *v = to_oas3(v.take());
        }
    }
    for k in ["additionalProperties", "items", "not"] {
        if let Some(v) = m.get_mut(k)
            && !v.is_boolean()
        {
            *v = to_oas3(v.take());
        }
    }
    if let Some(Value::Bool(false)) = m.get("not") {
        m.remove("not");
    }
    for k in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = m.get_mut(k) {
            for v in branches.iter_mut() {
                *v = to_oas3(v.take());
            }
        }
    }

    wrap_ref(m)
}

/// `{$ref, description, ...}` → `{allOf: [{$ref}], description, ...}`.
pub(crate) fn wrap_ref(mut m: Map<String, Value>) -> Map<String, Value> {
    if m.len() > 1
        && let Some(r) = m.remove("$ref")
    {
        let mut all = vec![json!({ "$ref": r })];
        if let Some(Value::Array(existing)) = m.remove("allOf") {
            all.extend(existing);
        }
        m.insert("allOf".into(), Value::Array(all));
    }
    m
}

/// Converts an OpenAPI 3.0 schema (as produced here) to Swagger 2.0: refs point at
/// `#/definitions/`, a single-`$ref` `allOf` is unwrapped back to `$ref` with
/// siblings (upstream's v2 shape), and 3.0-only keywords are dropped.
pub(crate) fn to_swagger2(schema: &Value) -> Value {
    let Value::Object(m) = schema else {
        return schema.clone();
    };
    let mut out = Map::new();
    for (k, v) in m {
        match k.as_str() {
            "$ref" => {
                let name = v.as_str().map(ref_name).unwrap_or_default();
                out.insert(k.clone(), Value::String(format!("{V2_PREFIX}{name}")));
            }
            "allOf" => match v.as_array().map(Vec::as_slice) {
                Some([only])
                    if only.get("$ref").is_some() && only.as_object().map(Map::len) == Some(1) =>
                {
                    let name = only
                        .get("$ref")
                        .and_then(Value::as_str)
                        .map(ref_name)
                        .unwrap_or_default();
                    out.insert("$ref".into(), Value::String(format!("{V2_PREFIX}{name}")));
                }
                Some(branches) => {
                    out.insert(
                        k.clone(),
                        Value::Array(branches.iter().map(to_swagger2).collect()),
                    );
                }
                None => {}
            },
            "properties" => {
                if let Value::Object(props) = v {
                    let props = props
                        .iter()
                        .map(|(name, s)| (name.clone(), to_swagger2(s)))
                        .collect();
                    out.insert(k.clone(), Value::Object(props));
                }
            }
            "additionalProperties" | "items" => {
                out.insert(k.clone(), to_swagger2(v));
            }
            // No Swagger 2.0 form.
            "anyOf" | "oneOf" | "not" | "nullable" | "deprecated" | "writeOnly" => {}
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    if !out.contains_key("type")
        && out.get("format").and_then(Value::as_str) == Some("int-or-string")
    {
        out.insert("type".into(), json!("string"));
    }
    Value::Object(out)
}

/// Every `$ref` target name under `v`, in document order.
pub(crate) fn collect_refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                if k == "$ref" {
                    if let Some(r) = v.as_str() {
                        out.push(ref_name(r));
                    }
                } else {
                    collect_refs(v, out);
                }
            }
        }
        Value::Array(a) => {
            for v in a {
                collect_refs(v, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nullable_and_ref_siblings() {
        let s = json!({
            "type": "object",
            "properties": {
                "a": {"type": ["string", "null"]},
                "b": {"anyOf": [{"$ref": "#/$defs/B"}, {"type": "null"}], "description": "bee"},
                "c": {"$ref": "#/$defs/C"},
                "d": {"const": "x"},
                "e": {"type": "array", "items": {"$ref": "#/$defs/E"}},
                "f": true,
            },
            "$schema": "https://json-schema.org/draft/2020-12/schema",
        });
        let out = to_oas3(s);
        assert_eq!(
            out,
            json!({
                "type": "object",
                "properties": {
                    "a": {"type": "string"},
                    "b": {"allOf": [{"$ref": "#/components/schemas/B"}], "description": "bee"},
                    "c": {"$ref": "#/components/schemas/C"},
                    "d": {"enum": ["x"]},
                    "e": {"type": "array", "items": {"$ref": "#/components/schemas/E"}},
                    "f": {},
                },
            })
        );
        let v2 = to_swagger2(&out);
        assert_eq!(
            v2["properties"]["b"],
            json!({"$ref": "#/definitions/B", "description": "bee"})
        );
        assert_eq!(
            v2["properties"]["e"]["items"],
            json!({"$ref": "#/definitions/E"})
        );
    }

    #[test]
    fn int_or_string_in_v2() {
        let v3 =
            json!({"format": "int-or-string", "oneOf": [{"type": "integer"}, {"type": "string"}]});
        assert_eq!(
            to_swagger2(&v3),
            json!({"format": "int-or-string", "type": "string"})
        );
    }
}
