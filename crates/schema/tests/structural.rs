//! Table-driven structural-schema checks: (schema, expected errors).

use apimachinery::FieldPath;
use kubext_schema::{StructuralOptions, structural_errors, structural_errors_with};
use serde_json::{Value, json};

const P: &str = "spec.versions[0].schema.openAPIV3Schema";

struct Case {
    name: &'static str,
    schema: Value,
    status: bool,
    want: Vec<String>,
}

fn c(name: &'static str, schema: Value, want: &[&str]) -> Case {
    Case {
        name,
        schema,
        status: false,
        want: want
            .iter()
            .map(|w| w.replace("P.", &format!("{P}.")))
            .collect(),
    }
}

fn obj(props: Value) -> Value {
    json!({"type": "object", "properties": props})
}

fn cases() -> Vec<Case> {
    vec![
        c(
            "valid schema",
            json!({"type": "object", "properties": {
                "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10}}},
                "spec": {"type": "object", "required": ["a"], "properties": {
                    "a": {"type": "string", "default": "x", "enum": ["x", "y"]},
                    "n": {"type": "integer", "format": "int32", "minimum": 0, "default": 3},
                    "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                    "port2": {"x-kubernetes-int-or-string": true, "allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}, {"pattern": "^[0-9a-z]+$"}]},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "any": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "tmpl": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
                    "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "protocol"],
                        "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "protocol": {"type": "string", "default": "TCP"}}}},
                    "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                    "both": {"type": "string", "anyOf": [{"pattern": "^a"}, {"maxLength": 3}]}
                }},
                "status": {"type": "object", "x-kubernetes-map-type": "atomic"}
            }}),
            &[],
        ),
        c(
            "field without type",
            obj(json!({"foo": {}})),
            &[
                "P.properties[foo].type: Required value: must not be empty for specified object fields",
            ],
        ),
        c(
            "root without type",
            json!({"properties": {"a": {"type": "string"}}}),
            &["P.type: Required value: must not be empty at the root"],
        ),
        c(
            "root not object",
            json!({"type": "string"}),
            &[r#"P.type: Invalid value: "string": must be object at the root"#],
        ),
        c(
            "array without items",
            obj(json!({"l": {"type": "array"}})),
            &["P.properties[l].items: Required value: must be specified"],
        ),
        c(
            "items without type",
            obj(json!({"l": {"type": "array", "items": {}}})),
            &[
                "P.properties[l].items.type: Required value: must not be empty for specified array items",
            ],
        ),
        c(
            "$ref forbidden",
            obj(json!({"a": {"type": "string", "$ref": "#/definitions/x"}})),
            &["P.properties[a].$ref: Forbidden: $ref is not supported"],
        ),
        c(
            "uniqueItems forbidden",
            obj(json!({"l": {"type": "array", "uniqueItems": true, "items": {"type": "string"}}})),
            &[
                "P.properties[l].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            ],
        ),
        c(
            "additionalProperties and properties",
            obj(
                json!({"m": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}}}),
            ),
            &[
                "P.properties[m].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive",
            ],
        ),
        c(
            "additionalProperties at the root",
            json!({"type": "object", "additionalProperties": {"type": "string"}}),
            &["P.additionalProperties: Forbidden: must not be used at the root"],
        ),
        c(
            "preserve-unknown-fields false",
            obj(json!({"a": {"type": "object", "x-kubernetes-preserve-unknown-fields": false}})),
            &[
                "P.properties[a].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined",
            ],
        ),
        c(
            "type null",
            obj(json!({"a": {"type": "null"}})),
            &[
                "P.properties[a].type: Forbidden: type cannot be set to null, use nullable as an alternative",
                r#"P.properties[a].type: Unsupported value: "null": supported values: "array", "boolean", "integer", "number", "object", "string""#,
            ],
        ),
        c(
            "items array",
            obj(json!({"l": {"type": "array", "items": [{"type": "string"}]}})),
            &["P.properties[l].items: Forbidden: items must be a schema object and not an array"],
        ),
        c(
            "types in anyOf",
            obj(
                json!({"a": {"type": "string", "anyOf": [{"type": "string"}, {"type": "integer"}]}}),
            ),
            &[
                "P.properties[a].anyOf[0].type: Forbidden: must be empty to be structural",
                "P.properties[a].anyOf[1].type: Forbidden: must be empty to be structural",
            ],
        ),
        c(
            "int-or-string without anyOf needs no type",
            obj(json!({"a": {"x-kubernetes-int-or-string": true}})),
            &[],
        ),
        c(
            "preserve-unknown-fields needs no type",
            obj(json!({"a": {"x-kubernetes-preserve-unknown-fields": true}})),
            &[],
        ),
        c(
            "unknown type",
            obj(json!({"a": {"type": "float"}})),
            &[
                r#"P.properties[a].type: Unsupported value: "float": supported values: "array", "boolean", "integer", "number", "object", "string""#,
            ],
        ),
        c(
            "nullable root",
            json!({"type": "object", "nullable": true}),
            &["P.nullable: Forbidden: nullable cannot be true at the root"],
        ),
        c(
            "embedded resource additionalProperties",
            obj(
                json!({"t": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true, "additionalProperties": {"type": "string"}}}),
            ),
            &[
                "P.properties[t].additionalProperties: Forbidden: must not be used if x-kubernetes-embedded-resource is set",
            ],
        ),
        c(
            "embedded resource inside metadata",
            obj(
                json!({"metadata": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}),
            ),
            &[
                "P.properties[metadata].x-kubernetes-embedded-resource: Forbidden: must not be used inside of resource meta",
                "P.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
            ],
        ),
        c(
            "defaults in top-level kind",
            obj(json!({"kind": {"type": "string", "default": "Foo"}})),
            &["P.properties[kind].default: Forbidden: must not be set in top-level kind"],
        ),
        c(
            "x-kubernetes-validations rule and message checks",
            obj(json!({"a": {"type": "string", "x-kubernetes-validations": [
                {"rule": " "}, {"rule": "self.size() > 1", "message": "  "}, {"rule": "a ||\n b"}, {"rule": "true", "message": "a\nb"}
            ]}})),
            &[
                "P.properties[a].x-kubernetes-validations[0].rule: Required value: rule is not specified",
                r#"P.properties[a].x-kubernetes-validations[1].message: Invalid value: "  ": message must be non-empty if specified"#,
                "P.properties[a].x-kubernetes-validations[2].message: Required value: message must be specified if rule contains line breaks",
                r#"P.properties[a].x-kubernetes-validations[3].message: Invalid value: "a\nb": message must not contain line breaks"#,
            ],
        ),
        c(
            "invalid pattern",
            obj(json!({"a": {"type": "string", "pattern": "(", "default": "x"}})),
            &["PATTERN"],
        ),
        c(
            "int-or-string with preserve",
            obj(
                json!({"a": {"x-kubernetes-int-or-string": true, "x-kubernetes-preserve-unknown-fields": true}}),
            ),
            &[
                "P.properties[a].x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if x-kubernetes-int-or-string is true",
            ],
        ),
        c(
            "forbidden generics in junctors",
            obj(
                json!({"a": {"type": "string", "oneOf": [{"description": "d", "nullable": true, "default": "x", "x-kubernetes-validations": [{"rule": "true"}]}], "not": {"title": "t"}}}),
            ),
            &[
                "P.properties[a].not.title: Forbidden: must be empty to be structural",
                "P.properties[a].oneOf[0].default: Forbidden: must be undefined to be structural",
                "P.properties[a].oneOf[0].description: Forbidden: must be empty to be structural",
                "P.properties[a].oneOf[0].nullable: Forbidden: must be false to be structural",
                "P.properties[a].oneOf[0].x-kubernetes-validations: Forbidden: must be empty to be structural",
            ],
        ),
        c(
            "metadata in nested context at the root",
            json!({"type": "object", "properties": {"metadata": {"type": "object"}}, "anyOf": [{"properties": {"metadata": {}}}]}),
            &[
                "P.anyOf[0].properties[metadata]: Forbidden: must not be specified in a nested context",
            ],
        ),
        c(
            "completeness",
            obj(
                json!({"a": {"type": "object", "anyOf": [{"properties": {"foo": {"minimum": 1}}}, {"items": {"maxLength": 1}}]}}),
            ),
            &[
                "P.properties[a].items: Required value: because it is defined in P.properties[a].anyOf[1].items",
                "P.properties[a].properties[foo]: Required value: because it is defined in P.properties[a].anyOf[0].properties[foo]",
            ],
        ),
        c(
            "embedded resource without object type",
            obj(
                json!({"t": {"x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}),
            ),
            &[
                "P.properties[t].type: Required value: must be object if x-kubernetes-embedded-resource is true",
            ],
        ),
        c(
            "embedded resource without properties",
            obj(json!({"t": {"type": "object", "x-kubernetes-embedded-resource": true}})),
            &[
                "P.properties[t].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
            ],
        ),
        c(
            "embedded resource kind must be string",
            obj(
                json!({"t": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"kind": {"type": "integer"}}}}),
            ),
            &[r#"P.properties[t].properties[kind].type: Invalid value: "integer": must be string"#],
        ),
        c(
            "root metadata restricting more than name",
            obj(
                json!({"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}),
            ),
            &[
                "P.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
            ],
        ),
        c(
            "root metadata not object",
            obj(json!({"metadata": {"type": "string"}})),
            &[r#"P.properties[metadata].type: Invalid value: "string": must be object"#],
        ),
        c(
            "root metadata default",
            obj(
                json!({"metadata": {"type": "object", "properties": {"name": {"type": "string", "default": "x"}}}}),
            ),
            &[
                "P.properties[metadata].properties[name].default: Forbidden: must not be set in top-level metadata",
            ],
        ),
        c(
            "list-type on non-array",
            obj(json!({"a": {"type": "string", "x-kubernetes-list-type": "set"}})),
            &[
                r#"P.properties[a].type: Invalid value: "string": must be array if x-kubernetes-list-type is specified"#,
            ],
        ),
        c(
            "unknown list-type",
            obj(
                json!({"l": {"type": "array", "x-kubernetes-list-type": "foo", "items": {"type": "string"}}}),
            ),
            &[
                r#"P.properties[l].x-kubernetes-list-type: Unsupported value: "foo": supported values: "atomic", "set", "map""#,
            ],
        ),
        c(
            "list-type map without keys",
            obj(
                json!({"l": {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object", "properties": {"a": {"type": "string"}}}}}),
            ),
            &[
                "P.properties[l].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map",
            ],
        ),
        c(
            "list-type map key neither required nor defaulted",
            obj(
                json!({"l": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}}}}}),
            ),
            &[
                "P.properties[l].items.properties[name].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
            ],
        ),
        c(
            "list-type map key unknown and items not object",
            obj(
                json!({"l": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["nope"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                "m": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a"], "items": {"type": "string"}}}),
            ),
            &[
                r#"P.properties[l].x-kubernetes-list-map-keys: Invalid value: ["nope"]: entries must all be names of item properties"#,
                r#"P.properties[m].items.type: Invalid value: "string": must be object if parent array's x-kubernetes-list-type is map"#,
            ],
        ),
        c(
            "list-map-keys without list-type map",
            obj(
                json!({"l": {"type": "array", "x-kubernetes-list-type": "atomic", "x-kubernetes-list-map-keys": ["a"], "items": {"type": "string"}}}),
            ),
            &[
                r#"P.properties[l].x-kubernetes-list-type: Invalid value: "atomic": must be map if x-kubernetes-list-map-keys is non-empty"#,
            ],
        ),
        c(
            "set of non-atomic objects",
            obj(
                json!({"l": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object", "properties": {"a": {"type": "string"}}}}}),
            ),
            &[
                r#"P.properties[l].items.x-kubernetes-map-type: Invalid value: "null": must be atomic as item of a list with x-kubernetes-list-type=set"#,
            ],
        ),
        c(
            "map-type on non-object and unknown",
            obj(json!({"a": {"type": "string", "x-kubernetes-map-type": "weird"}})),
            &[
                r#"P.properties[a].type: Invalid value: "string": must be object if x-kubernetes-map-type is specified"#,
                r#"P.properties[a].x-kubernetes-map-type: Unsupported value: "weird": supported values: "atomic", "granular""#,
            ],
        ),
        c(
            "invalid default",
            obj(
                json!({"a": {"type": "integer", "default": "x"}, "b": {"type": "string", "maxLength": 2, "default": "long"}}),
            ),
            &[
                r#"P.properties[a].default: Invalid value: "string":  in body must be of type integer: "string""#,
                "P.properties[b].default: Too long: may not be more than 2 bytes",
            ],
        ),
        c(
            "default with unknown fields",
            obj(
                json!({"o": {"type": "object", "properties": {"x": {"type": "string"}}, "default": {"y": 1}}}),
            ),
            &[r#"P.properties[o].default: Invalid value: {"y":1}: must not have unknown fields"#],
        ),
        c(
            "default of list-map with duplicate keys",
            obj(
                json!({"l": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
                "items": {"type": "object", "required": ["k"], "properties": {"k": {"type": "string"}}},
                "default": [{"k": "a"}, {"k": "a"}]}}),
            ),
            &[r#"P.properties[l].default[1]: Duplicate value: map[string]interface {}{"k":"a"}"#],
        ),
    ]
}

#[test]
fn structural_table() {
    let mut failures = Vec::new();
    for case in cases() {
        let errs = structural_errors_with(
            &case.schema,
            &FieldPath::new(P),
            StructuralOptions {
                status_subresource: case.status,
            },
        );
        let mut got: Vec<String> = errs
            .iter()
            .map(|e| {
                // regex error texts differ from Go's; compare the stable part
                let s = e.to_string();
                if s.contains("must be a valid regular expression") {
                    "PATTERN".to_string()
                } else {
                    s
                }
            })
            .collect();
        got.sort();
        let mut want = case.want.clone();
        want.sort();
        if got != want {
            failures.push(format!(
                "{}:\n  got:  {got:#?}\n  want: {want:#?}",
                case.name
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn status_subresource_restricts_the_root() {
    let ok = json!({"type": "object", "description": "d", "required": ["spec"], "properties": {"spec": {"type": "object"}}, "x-kubernetes-preserve-unknown-fields": true});
    let opts = StructuralOptions {
        status_subresource: true,
    };
    assert!(structural_errors_with(&ok, &FieldPath::new(P), opts).is_empty());
    let bad = json!({"type": "object", "maxProperties": 3});
    let errs = structural_errors_with(&bad, &FieldPath::new(P), opts);
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0].to_string().ends_with(
            "fields are allowed at the root of the schema if the status subresource is enabled"
        ),
        "{}",
        errs[0]
    );
    assert!(
        errs[0]
            .to_string()
            .contains("only [Description Type Format Title")
    );
    assert!(structural_errors(&bad, &FieldPath::new(P)).is_empty());
    let errs = structural_errors_with(&json!({"type": "string"}), &FieldPath::new(P), opts);
    let want = format!(
        "{P}.type: Invalid value: \"string\": only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled"
    );
    assert!(errs.iter().any(|e| e.to_string() == want), "{errs:?}");
}
