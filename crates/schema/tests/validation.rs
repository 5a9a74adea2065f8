//! Table-driven validation tests: (schema, object, old, expected errors).

use apimachinery::{ErrorList, FieldPath};
use kubext_schema::{
    AdditionalProperties, Below, RuleContext, RuleEvaluator, Structural, validate, validate_with,
};
use serde_json::{Value, json};

struct Case {
    name: &'static str,
    spec: Value,
    obj: Value,
    old: Option<Value>,
    want: &'static [&'static str],
}

/// Root schema `{type: object, properties: {spec: <spec>}}`.
fn root(spec: Value) -> Value {
    json!({"type": "object", "properties": {"spec": spec}})
}

fn obj_with(props: Value) -> Value {
    json!({"type": "object", "properties": props})
}

fn c(name: &'static str, spec: Value, obj: Value, want: &'static [&'static str]) -> Case {
    Case {
        name,
        spec,
        obj,
        old: None,
        want,
    }
}

fn cases() -> Vec<Case> {
    vec![
        c(
            "valid object",
            obj_with(json!({"replicas": {"type": "integer"}})),
            json!({"spec": {"replicas": 3}}),
            &[],
        ),
        c(
            "integer given a string",
            obj_with(json!({"replicas": {"type": "integer"}})),
            json!({"spec": {"replicas": "three"}}),
            &[
                r#"spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string""#,
            ],
        ),
        c(
            "string given an integer",
            obj_with(json!({"name": {"type": "string"}})),
            json!({"spec": {"name": 5}}),
            &[
                r#"spec.name: Invalid value: "integer": spec.name in body must be of type string: "integer""#,
            ],
        ),
        c(
            "object given an array",
            obj_with(json!({"o": {"type": "object"}})),
            json!({"spec": {"o": []}}),
            &[r#"spec.o: Invalid value: "array": spec.o in body must be of type object: "array""#],
        ),
        c(
            "boolean given a number",
            obj_with(json!({"b": {"type": "boolean"}})),
            json!({"spec": {"b": 1.5}}),
            &[
                r#"spec.b: Invalid value: "number": spec.b in body must be of type boolean: "number""#,
            ],
        ),
        c(
            "integer given a float",
            obj_with(json!({"i": {"type": "integer"}})),
            json!({"spec": {"i": 1.5}}),
            &[
                r#"spec.i: Invalid value: "number": spec.i in body must be of type integer: "number""#,
            ],
        ),
        c(
            "integer accepts 3.0",
            obj_with(json!({"i": {"type": "integer"}})),
            json!({"spec": {"i": 3.0}}),
            &[],
        ),
        c(
            "number accepts integers",
            obj_with(json!({"n": {"type": "number"}})),
            json!({"spec": {"n": 3}}),
            &[],
        ),
        c(
            "pattern",
            obj_with(json!({"alpha": {"type": "string", "pattern": "^[0-9]+$"}})),
            json!({"spec": {"alpha": "abc"}}),
            &[r#"spec.alpha: Invalid value: "abc": spec.alpha in body should match '^[0-9]+$'"#],
        ),
        c(
            "pattern ok",
            obj_with(json!({"alpha": {"type": "string", "pattern": "^[0-9]+$"}})),
            json!({"spec": {"alpha": "123"}}),
            &[],
        ),
        c(
            "enum",
            obj_with(json!({"color": {"type": "string", "enum": ["red", "blue"]}})),
            json!({"spec": {"color": "qux"}}),
            &[r#"spec.color: Unsupported value: "qux": supported values: "red", "blue""#],
        ),
        c(
            "enum of integers",
            obj_with(json!({"n": {"type": "integer", "enum": [1, 2]}})),
            json!({"spec": {"n": 3}}),
            &[r#"spec.n: Unsupported value: 3: supported values: "1", "2""#],
        ),
        c(
            "required in array items",
            obj_with(
                json!({"bars": {"type": "array", "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}}}),
            ),
            json!({"spec": {"bars": [{}]}}),
            &["spec.bars[0].name: Required value"],
        ),
        c(
            "maximum",
            obj_with(json!({"size": {"type": "integer", "maximum": 10}})),
            json!({"spec": {"size": 11}}),
            &["spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10"],
        ),
        c(
            "exclusive maximum",
            obj_with(json!({"size": {"type": "integer", "maximum": 10, "exclusiveMaximum": true}})),
            json!({"spec": {"size": 10}}),
            &["spec.size: Invalid value: 10: spec.size in body should be less than 10"],
        ),
        c(
            "minimum",
            obj_with(json!({"size": {"type": "integer", "minimum": 0}})),
            json!({"spec": {"size": -1}}),
            &[
                "spec.size: Invalid value: -1: spec.size in body should be greater than or equal to 0",
            ],
        ),
        c(
            "exclusive minimum float",
            obj_with(json!({"r": {"type": "number", "minimum": 0.5, "exclusiveMinimum": true}})),
            json!({"spec": {"r": 0.5}}),
            &["spec.r: Invalid value: 0.5: spec.r in body should be greater than 0.5"],
        ),
        c(
            // As kube-apiserver 1.37.2 answers: in a number schema integer
            // data meets the bound truncated; an integer schema cannot hold
            // 10.5 at all (an error of its own) and compares as floats.
            "integer data is compared with truncated bounds",
            obj_with(json!({"n": {"type": "integer", "maximum": 10.5},
                "f": {"type": "number", "maximum": 10.5},
                "g": {"type": "number", "maximum": 10.5}})),
            json!({"spec": {"n": 11, "f": 10.75, "g": 11}}),
            &[
                "spec.f: Invalid value: 10.75: spec.f in body should be less than or equal to 10.5",
                "spec.g: Invalid value: 11: spec.g in body should be less than or equal to 10",
                "<nil>: Invalid value: \"\": Maximum boundary value must be of type integer (default format) in spec.n",
                "spec.n: Invalid value: 11: spec.n in body should be less than or equal to 10.5",
            ],
        ),
        c(
            "float bounds print like Go's %v",
            obj_with(json!({"f": {"type": "number", "minimum": 1000000}})),
            json!({"spec": {"f": 0.5}}),
            &[
                "spec.f: Invalid value: 0.5: spec.f in body should be greater than or equal to 1e+06",
            ],
        ),
        c(
            "multipleOf float",
            obj_with(json!({"f": {"type": "number", "multipleOf": 0.5}})),
            json!({"spec": {"f": 1.25}}),
            &["spec.f: Invalid value: 1.25: spec.f in body should be a multiple of 0.5"],
        ),
        c(
            // Upstream decodes `3.0` as a float64: a "number" that integer schemas
            // accept when it is whole and within 2^53 (go-openapi's rule).
            "integral floats are numbers integer schemas accept",
            obj_with(json!({"s": {"type": "string"}, "e": {"type": "integer", "enum": [1, 2]}})),
            json!({"spec": {"s": 3.0, "e": 2.0}}),
            &[
                r#"spec.s: Invalid value: "number": spec.s in body must be of type string: "number""#,
            ],
        ),
        c(
            "integers beyond int64 and 2^53 are not integers",
            obj_with(
                json!({"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}}),
            ),
            json!({"spec": {"a": 9223372036854775808_u64, "b": 1e30, "c": 9007199254740991.0}}),
            &[
                r#"spec.a: Invalid value: "number": spec.a in body must be of type integer: "number""#,
                r#"spec.b: Invalid value: "number": spec.b in body must be of type integer: "number""#,
            ],
        ),
        c(
            "multipleOf",
            obj_with(json!({"n": {"type": "integer", "multipleOf": 5}})),
            json!({"spec": {"n": 7}}),
            &["spec.n: Invalid value: 7: spec.n in body should be a multiple of 5"],
        ),
        c(
            "maxLength",
            obj_with(json!({"name": {"type": "string", "maxLength": 5}})),
            json!({"spec": {"name": "abcdef"}}),
            &["spec.name: Too long: may not be more than 5 bytes"],
        ),
        c(
            "maxLength counts characters",
            obj_with(json!({"name": {"type": "string", "maxLength": 2}})),
            json!({"spec": {"name": "éé"}}),
            &[],
        ),
        c(
            "minLength",
            obj_with(json!({"name": {"type": "string", "minLength": 2}})),
            json!({"spec": {"name": "a"}}),
            &[
                r#"spec.name: Invalid value: "a": spec.name in body should be at least 2 chars long"#,
            ],
        ),
        c(
            "maxItems",
            obj_with(json!({"l": {"type": "array", "maxItems": 2, "items": {"type": "integer"}}})),
            json!({"spec": {"l": [1, 2, 3]}}),
            // upstream renders the count too: "Too many: 3: must have at most 2 items";
            // the shared FieldError omits it.
            &["spec.l: Too many: 3: must have at most 2 items"],
        ),
        c(
            "minItems",
            obj_with(json!({"l": {"type": "array", "minItems": 1, "items": {"type": "integer"}}})),
            json!({"spec": {"l": []}}),
            &["spec.l: Invalid value: 0: spec.l in body should have at least 1 items"],
        ),
        c(
            "maxProperties",
            obj_with(
                json!({"m": {"type": "object", "maxProperties": 1, "additionalProperties": {"type": "string"}}}),
            ),
            json!({"spec": {"m": {"a": "x", "b": "y"}}}),
            &["spec.m: Too many: 2: must have at most 1 items"],
        ),
        c(
            "minProperties",
            obj_with(
                json!({"m": {"type": "object", "minProperties": 1, "additionalProperties": {"type": "string"}}}),
            ),
            json!({"spec": {"m": {}}}),
            &["spec.m: Invalid value: 0: spec.m in body should have at least 1 properties"],
        ),
        c(
            "additionalProperties values",
            obj_with(
                json!({"labels": {"type": "object", "additionalProperties": {"type": "string"}}}),
            ),
            json!({"spec": {"labels": {"foo": 1, "bar": "ok"}}}),
            &[
                r#"spec.labels.foo: Invalid value: "integer": spec.labels.foo in body must be of type string: "integer""#,
            ],
        ),
        c(
            "nullable null ok",
            obj_with(json!({"x": {"type": "string", "nullable": true}})),
            json!({"spec": {"x": null}}),
            &[],
        ),
        c(
            "non-nullable null",
            obj_with(json!({"x": {"type": "string"}})),
            json!({"spec": {"x": null}}),
            &[r#"spec.x: Invalid value: "null": spec.x in body must be of type string: "null""#],
        ),
        c(
            "int-or-string accepts both",
            obj_with(
                json!({"p": {"x-kubernetes-int-or-string": true}, "q": {"x-kubernetes-int-or-string": true}}),
            ),
            json!({"spec": {"p": 80, "q": "http"}}),
            &[],
        ),
        c(
            "int-or-string rejects boolean via its anyOf",
            obj_with(
                json!({"p": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]}}),
            ),
            json!({"spec": {"p": true}}),
            &[
                r#": Invalid value: "": "spec.p" must validate at least one schema (anyOf)"#,
                r#"spec.p: Invalid value: "boolean": spec.p in body must be of type integer,string: "boolean""#,
                r#"spec.p: Invalid value: "boolean": spec.p in body must be of type integer: "boolean""#,
            ],
        ),
        c(
            // Upstream types int-or-string as ["integer","string"]
            // (apiextensions-apiserver's validation_test.go).
            "bare int-or-string is typed integer,string",
            obj_with(
                json!({"p": {"x-kubernetes-int-or-string": true}, "q": {"x-kubernetes-int-or-string": true}, "r": {"x-kubernetes-int-or-string": true}, "ok": {"x-kubernetes-int-or-string": true}}),
            ),
            json!({"spec": {"p": {"a": 1}, "q": null, "r": 1.2, "ok": 42}}),
            &[
                r#"spec.p: Invalid value: "object": spec.p in body must be of type integer,string: "object""#,
                r#"spec.q: Invalid value: "null": spec.q in body must be of type integer,string: "null""#,
                r#"spec.r: Invalid value: "number": spec.r in body must be of type integer,string: "number""#,
            ],
        ),
        c(
            "format date-time",
            obj_with(json!({"t": {"type": "string", "format": "date-time"}})),
            json!({"spec": {"t": "yesterday"}}),
            &[
                r#"spec.t: Invalid value: "yesterday": spec.t in body must be of type date-time: "yesterday""#,
            ],
        ),
        c(
            "formats valid",
            obj_with(json!({
                "a": {"type": "string", "format": "date-time"},
                "b": {"type": "string", "format": "date"},
                "c": {"type": "string", "format": "uuid"},
                "d": {"type": "string", "format": "ipv4"},
                "e": {"type": "string", "format": "ipv6"},
                "f": {"type": "string", "format": "cidr"},
                "g": {"type": "string", "format": "byte"},
                "h": {"type": "string", "format": "email"},
                "i": {"type": "string", "format": "hostname"},
                "j": {"type": "string", "format": "uri"},
                "k": {"type": "integer", "format": "int32"},
                "l": {"type": "integer", "format": "int64"},
                "m": {"type": "string", "format": "something-unknown"}
            })),
            json!({"spec": {
                "a": "2024-01-02T03:04:05Z", "b": "2024-02-29", "c": "123e4567-e89b-12d3-a456-426614174000",
                "d": "10.0.0.1", "e": "::1", "f": "10.0.0.0/8", "g": "aGVsbG8=", "h": "a@b.com",
                "i": "example.com", "j": "https://example.com/x", "k": 5, "l": 5, "m": "anything"
            }}),
            &[],
        ),
        c(
            "formats invalid",
            obj_with(json!({
                "b": {"type": "string", "format": "date"},
                "c": {"type": "string", "format": "uuid"},
                "d": {"type": "string", "format": "ipv4"},
                "e": {"type": "string", "format": "ipv6"},
                "f": {"type": "string", "format": "cidr"},
                "g": {"type": "string", "format": "byte"},
                "h": {"type": "string", "format": "email"},
                "i": {"type": "string", "format": "hostname"}
            })),
            json!({"spec": {
                "b": "2023-02-29", "c": "nope", "d": "::1", "e": "1.2.3.4", "f": "10.0.0.0/40",
                "g": "!!", "h": "no-at", "i": "-bad-"
            }}),
            &[
                r#"spec.b: Invalid value: "2023-02-29": spec.b in body must be of type date: "2023-02-29""#,
                r#"spec.c: Invalid value: "nope": spec.c in body must be of type uuid: "nope""#,
                r#"spec.d: Invalid value: "::1": spec.d in body must be of type ipv4: "::1""#,
                r#"spec.e: Invalid value: "1.2.3.4": spec.e in body must be of type ipv6: "1.2.3.4""#,
                r#"spec.f: Invalid value: "10.0.0.0/40": spec.f in body must be of type cidr: "10.0.0.0/40""#,
                r#"spec.g: Invalid value: "!!": spec.g in body must be of type byte: "!!""#,
                r#"spec.h: Invalid value: "no-at": spec.h in body must be of type email: "no-at""#,
                r#"spec.i: Invalid value: "-bad-": spec.i in body must be of type hostname: "-bad-""#,
            ],
        ),
        c(
            "date-time needs a T and a zone",
            obj_with(
                json!({"a": {"type": "string", "format": "date-time"}, "b": {"type": "string", "format": "date-time"}, "c": {"type": "string", "format": "date-time"}}),
            ),
            json!({"spec": {"a": "2024-01-02 03:04:05Z", "b": "2024-01-02T03:04:05", "c": "2024-01-02t03:04:05.123+01:00"}}),
            &[
                r#"spec.a: Invalid value: "2024-01-02 03:04:05Z": spec.a in body must be of type date-time: "2024-01-02 03:04:05Z""#,
                r#"spec.b: Invalid value: "2024-01-02T03:04:05": spec.b in body must be of type date-time: "2024-01-02T03:04:05""#,
            ],
        ),
        c(
            "format mismatch on a non-string value names the format",
            obj_with(
                json!({"t": {"type": "string", "format": "date-time"}, "u": {"type": "string", "format": "uuid"}}),
            ),
            json!({"spec": {"t": 5, "u": 1.5}}),
            &[
                r#"spec.t: Invalid value: "int64": spec.t in body must be of type date-time: "int64""#,
                r#"spec.u: Invalid value: "float64": spec.u in body must be of type uuid: "float64""#,
            ],
        ),
        c(
            "format on non-numeric type skips the type check for strings",
            obj_with(json!({"b": {"type": "boolean", "format": "byte"}})),
            json!({"spec": {"b": "aGk="}}),
            &[],
        ),
        c(
            "byte rejects the empty string, hostname rejects long labels",
            obj_with(
                json!({"g": {"type": "string", "format": "byte"}, "h": {"type": "string", "format": "hostname"}}),
            ),
            json!({"spec": {"g": "", "h": format!("{}.com", "a".repeat(64))}}),
            &[
                r#"spec.g: Invalid value: "": spec.g in body must be of type byte: """#,
                "HOSTNAME",
            ],
        ),
        c(
            "root-level required and types",
            json!({"type": "object", "required": ["x"], "properties": {"x": {"type": "string"}}}),
            json!({"spec": {}}),
            &["spec.x: Required value"],
        ),
        c(
            "list-type set duplicates",
            obj_with(
                json!({"tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}}),
            ),
            json!({"spec": {"tags": ["a", "b", "a", "b"]}}),
            &[
                r#"spec.tags[2]: Duplicate value: "a""#,
                r#"spec.tags[3]: Duplicate value: "b""#,
            ],
        ),
        c(
            "list-type map duplicate keys",
            obj_with(
                json!({"ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}}}),
            ),
            json!({"spec": {"ports": [{"name": "http", "port": 80}, {"name": "http", "port": 81}]}}),
            &[r#"spec.ports[1]: Duplicate value: map[string]interface {}{"name":"http"}"#],
        ),
        c(
            "list-type map multiple keys (defaults are applied before validation)",
            obj_with(
                json!({"ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port", "protocol"],
                "items": {"type": "object", "required": ["port"], "properties": {"port": {"type": "integer"}, "protocol": {"type": "string", "default": "TCP"}}}}}),
            ),
            json!({"spec": {"ports": [{"port": 80, "protocol": "TCP"}, {"port": 80, "protocol": "TCP"}, {"port": 80, "protocol": "UDP"}, {"port": 80, "protocol": "TCP"}]}}),
            &[
                r#"spec.ports[1]: Duplicate value: map[string]interface {}{"port":80, "protocol":"TCP"}"#,
            ],
        ),
        c(
            "list-type map non-object item",
            obj_with(
                json!({"ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}}}}}),
            ),
            json!({"spec": {"ports": [{"name": "a"}, "x", 3, {}, null]}}),
            &[
                r#"spec.ports[1]: Invalid value: "x": must be an object for an array of list-type map"#,
                r#"spec.ports[1]: Invalid value: "string": spec.ports[1] in body must be of type object: "string""#,
                r#"spec.ports[2]: Invalid value: "integer": spec.ports[2] in body must be of type object: "integer""#,
                r#"spec.ports[4]: Invalid value: "null": spec.ports[4] in body must be of type object: "null""#,
            ],
        ),
        c(
            "list-type map items without keys are duplicates of each other",
            obj_with(
                json!({"ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}}}}}),
            ),
            json!({"spec": {"ports": [{}, null, {"name": "a"}]}}),
            &[
                "spec.ports[1]: Duplicate value: map[string]interface {}{}",
                r#"spec.ports[1]: Invalid value: "null": spec.ports[1] in body must be of type object: "null""#,
            ],
        ),
        c(
            "list-type set inside additionalProperties uses key paths",
            obj_with(
                json!({"m": {"type": "object", "additionalProperties": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "integer"}}}}),
            ),
            json!({"spec": {"m": {"k": [1, 1, 1]}}}),
            &["spec.m[k][1]: Duplicate value: 1"],
        ),
        c(
            "embedded resource checks",
            obj_with(
                json!({"template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}),
            ),
            json!({"spec": {"template": {"metadata": {"name": "Bad_Name"}}}}),
            &[
                "spec.template.apiVersion: Required value",
                "spec.template.kind: Required value",
            ],
        ),
        c(
            "embedded resource bad kind and labels",
            obj_with(
                json!({"template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}),
            ),
            json!({"spec": {"template": {"apiVersion": "a/b/c", "kind": "", "metadata": {"labels": {"a b": "c"}}}}}),
            &[
                r#"spec.template.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c"#,
                "spec.template.kind: Required value",
                r#"spec.template.metadata.labels: Invalid value: "a b": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"#,
            ],
        ),
        c(
            "embedded resource ok",
            obj_with(
                json!({"template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}),
            ),
            json!({"spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}}}),
            &[],
        ),
        c(
            "collects all errors",
            json!({"type": "object", "required": ["a", "b"], "properties": {
                "a": {"type": "integer", "minimum": 1}, "b": {"type": "string"}, "c": {"type": "string", "maxLength": 1}}}),
            json!({"spec": {"a": 0, "c": "xx"}}),
            &[
                "spec.a: Invalid value: 0: spec.a in body should be greater than or equal to 1",
                "spec.b: Required value",
                "spec.c: Too long: may not be more than 1 byte",
            ],
        ),
        c(
            "oneOf none valid",
            obj_with(json!({"x": {"type": "integer", "oneOf": [{"minimum": 10}, {"maximum": 1}]}})),
            json!({"spec": {"x": 5}}),
            &[
                r#": Invalid value: "": "spec.x" must validate one and only one schema (oneOf). Found none valid"#,
                "spec.x: Invalid value: 5: spec.x in body should be greater than or equal to 10",
            ],
        ),
        c(
            // Gateway API's address shape: of the failing branches upstream reports
            // the one where most validators applied (kube-openapi's MatchCount),
            // not the one with the fewest errors.
            "oneOf reports the branch with the most validators applied",
            obj_with(json!({"addresses": {"type": "array", "items": {
                "type": "object",
                "properties": {"type": {"type": "string"}, "value": {"type": "string"}},
                "oneOf": [
                    {"properties": {"type": {"enum": ["IPAddress"]}, "value": {"anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]}}},
                    {"properties": {"type": {"not": {"enum": ["IPAddress"]}}}},
                ],
            }}})),
            json!({"spec": {"addresses": [{"type": "IPAddress", "value": "x"}]}}),
            &[
                r#": Invalid value: "": "spec.addresses[0]" must validate one and only one schema (oneOf). Found none valid"#,
                r#": Invalid value: "": "spec.addresses[0].value" must validate at least one schema (anyOf)"#,
                r#"spec.addresses[0].value: Invalid value: "x": spec.addresses[0].value in body must be of type ipv4: "x""#,
            ],
        ),
        c(
            "not",
            obj_with(json!({"x": {"type": "string", "not": {"enum": ["forbidden"]}}})),
            json!({"spec": {"x": "forbidden"}}),
            &[r#": Invalid value: "": "spec.x" must not validate the schema (not)"#],
        ),
        c(
            "allOf",
            obj_with(
                json!({"x": {"type": "string", "allOf": [{"minLength": 2}, {"maxLength": 3}]}}),
            ),
            json!({"spec": {"x": "a"}}),
            &[
                r#": Invalid value: "": "spec.x" must validate all the schemas (allOf)"#,
                r#"spec.x: Invalid value: "a": spec.x in body should be at least 2 chars long"#,
            ],
        ),
        c(
            "nested arrays of objects",
            obj_with(
                json!({"m": {"type": "array", "items": {"type": "array", "items": {"type": "object", "properties": {"v": {"type": "integer", "maximum": 1}}}}}}),
            ),
            json!({"spec": {"m": [[{"v": 1}], [{"v": 2}]]}}),
            &[
                "spec.m[1][0].v: Invalid value: 2: spec.m[1][0].v in body should be less than or equal to 1",
            ],
        ),
        Case {
            name: "ratcheting: unchanged invalid value is not reported",
            spec: obj_with(
                json!({"size": {"type": "integer", "maximum": 10}, "other": {"type": "string"}}),
            ),
            obj: json!({"spec": {"size": 11, "other": "new"}}),
            old: Some(json!({"spec": {"size": 11, "other": "old"}})),
            want: &[],
        },
        Case {
            name: "ratcheting: changed invalid value is reported",
            spec: obj_with(json!({"size": {"type": "integer", "maximum": 10}})),
            obj: json!({"spec": {"size": 12}}),
            old: Some(json!({"spec": {"size": 11}})),
            want: &[
                "spec.size: Invalid value: 12: spec.size in body should be less than or equal to 10",
            ],
        },
        Case {
            name: "ratcheting: list-map items correlate by key",
            spec: obj_with(
                json!({"ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "port": {"type": "integer", "maximum": 100}}}}}),
            ),
            obj: json!({"spec": {"ports": [{"name": "b", "port": 200}, {"name": "a", "port": 300}]}}),
            old: Some(json!({"spec": {"ports": [{"name": "a", "port": 300}]}})),
            want: &[
                "spec.ports[0].port: Invalid value: 200: spec.ports[0].port in body should be less than or equal to 100",
            ],
        },
        Case {
            name: "ratcheting: list-type errors in old skip the list checks",
            spec: obj_with(
                json!({"tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}}),
            ),
            obj: json!({"spec": {"tags": ["b", "b"]}}),
            old: Some(json!({"spec": {"tags": ["a", "a"]}})),
            want: &[],
        },
        Case {
            name: "ratcheting: valid old list, new duplicates reported",
            spec: obj_with(
                json!({"tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}}),
            ),
            obj: json!({"spec": {"tags": ["b", "b"]}}),
            old: Some(json!({"spec": {"tags": ["a"]}})),
            want: &[r#"spec.tags[1]: Duplicate value: "b""#],
        },
        Case {
            name: "ratcheting: set duplicates already present",
            spec: obj_with(
                json!({"tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}, "x": {"type": "string"}}),
            ),
            obj: json!({"spec": {"tags": ["a", "a"], "x": "1"}}),
            old: Some(json!({"spec": {"tags": ["a", "a"], "x": "2"}})),
            want: &[],
        },
    ]
}

fn sorted(errs: &ErrorList) -> Vec<String> {
    let mut v: Vec<String> = errs.iter().map(ToString::to_string).collect();
    v.sort();
    v
}

#[test]
fn validation_table() {
    let mut failures = Vec::new();
    for case in cases() {
        let schema = Structural::compile(&root(case.spec.clone())).expect(case.name);
        let errs = validate(&case.obj, case.old.as_ref(), &schema, &FieldPath::root());
        let mut got: Vec<String> = sorted(&errs)
            .into_iter()
            .map(|e| {
                // long generated values are matched by a placeholder
                if e.contains("must be of type hostname") && e.len() > 150 {
                    "HOSTNAME".to_string()
                } else {
                    e
                }
            })
            .collect();
        got.sort();
        let mut want: Vec<String> = case.want.iter().map(|s| s.to_string()).collect();
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

/// A schema whose nodes all claim to carry everything (`Below::default`):
/// the validation walks skip nothing.
fn walked_in_full(s: &mut Structural) {
    s.below = Below::default();
    for p in s.properties.values_mut() {
        walked_in_full(p);
    }
    if let Some(items) = &mut s.items {
        walked_in_full(items);
    }
    if let Some(AdditionalProperties::Schema(ap)) = &mut s.additional_properties {
        walked_in_full(ap);
    }
}

/// The walks that skip nodes by their compiled summary (`Structural::below`)
/// find what walking every node finds, over every case of the table (and
/// the summary does skip: a schema without list types or embedded
/// resources says so).
#[test]
fn skipping_by_the_summary_finds_what_the_full_walk_finds() {
    for case in cases() {
        let schema = Structural::compile(&root(case.spec.clone())).expect(case.name);
        let mut full = schema.clone();
        walked_in_full(&mut full);
        for old in [None, case.old.as_ref()] {
            assert_eq!(
                sorted(&validate(&case.obj, old, &schema, &FieldPath::root())),
                sorted(&validate(&case.obj, old, &full, &FieldPath::root())),
                "{}",
                case.name
            );
        }
    }
    let plain = Structural::compile(&root(json!({"type": "object", "properties": {
        "a": {"type": "array", "items": {"type": "string"}}}})))
    .unwrap();
    assert_eq!(
        plain.below,
        Below {
            list_types: false,
            embedded: false,
            defaults: false
        }
    );
}

/// Defaulting skips the values under nodes without defaults and gives what
/// walking every node gives: defaults deep in one subtree, none in its
/// siblings, nulls on both sides, under properties, items and
/// additionalProperties.
#[test]
fn defaulting_by_the_summary_gives_what_the_full_walk_gives() {
    let with_default = json!({"type": "object", "properties": {
        "deep": {"type": "object", "properties": {"d": {"type": "integer", "default": 3}}}}});
    let without = json!({"type": "object", "properties": {"n": {"type": "string"},
        "o": {"type": "object", "properties": {"p": {"type": "integer"}}}}});
    let schema = json!({"type": "object", "properties": {
        "a": with_default,
        "b": without,
        "l": {"type": "array", "items": with_default},
        "m": {"type": "object", "additionalProperties": with_default},
        "s": {"type": "array", "items": {"type": "string", "default": "x"}},
        "q": {"type": "array", "items": without},
    }});
    let objects = [
        json!({}),
        json!({"a": {}, "b": {}, "l": [{}, null], "m": {"k": {}}, "s": [null, "y"], "q": [{}]}),
        json!({"a": {"deep": null}, "b": {"n": null, "o": null}, "l": [{"deep": {}}]}),
        json!({"a": {"deep": {"d": null}}, "b": {"o": {"p": null}}, "m": {"k": {"deep": {}}}}),
        json!({"a": null, "b": null, "l": null, "m": null, "s": null, "q": null}),
    ];
    let compiled = Structural::compile(&schema).unwrap();
    let mut full = compiled.clone();
    walked_in_full(&mut full);
    assert!(!compiled.properties["b"].below.defaults);
    for object in objects {
        let (mut skipping, mut walking) = (object.clone(), object.clone());
        kubext_schema::default(&mut skipping, &compiled);
        kubext_schema::default(&mut walking, &full);
        assert_eq!(skipping, walking, "{object}");
    }
}

#[test]
fn path_prefix_is_applied() {
    let schema =
        Structural::compile(&json!({"type": "object", "properties": {"a": {"type": "integer"}}}))
            .unwrap();
    let errs = validate(&json!({"a": "x"}), None, &schema, &FieldPath::new("spec"));
    assert_eq!(
        sorted(&errs),
        vec![
            r#"spec.a: Invalid value: "string": a in body must be of type integer: "string""#
                .to_string()
        ]
    );
}

type Call = (String, String, Option<Value>, bool);

struct Recorder(std::cell::RefCell<Vec<Call>>);

impl RuleEvaluator for Recorder {
    fn evaluate(&self, ctx: &RuleContext<'_>) -> ErrorList {
        self.0.borrow_mut().push((
            ctx.rule.rule.clone(),
            ctx.path.to_string(),
            ctx.old_self.cloned(),
            ctx.unchanged,
        ));
        if !ctx.unchanged && ctx.self_value.as_i64().is_some_and(|v| v > 5) {
            let e = apimachinery::FieldError::invalid(
                ctx.path,
                ctx.self_value.clone(),
                &ctx.rule.message,
            );
            vec![e]
        } else {
            vec![]
        }
    }
}

#[test]
fn rule_evaluator_is_called_per_node() {
    let schema = Structural::compile(&root(obj_with(json!({
        "n": {"type": "integer", "x-kubernetes-validations": [
            {"rule": "self <= 5", "message": "must be at most 5", "reason": "FieldValueInvalid", "optionalOldSelf": true}
        ]},
        "m": {"type": "integer", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "immutable"}]}
    }))))
    .unwrap();
    let rule = &schema.properties["spec"].properties["n"]
        .extensions
        .validations[0];
    assert_eq!(rule.reason, "FieldValueInvalid");
    assert_eq!(rule.optional_old_self, Some(true));
    let rec = Recorder(Default::default());
    let errs = validate_with(
        &json!({"spec": {"n": 7, "m": 1}}),
        Some(&json!({"spec": {"n": 4, "m": 1}})),
        &schema,
        &FieldPath::root(),
        Some(&rec),
    );
    assert_eq!(
        sorted(&errs),
        vec!["spec.n: Invalid value: 7: must be at most 5".to_string()]
    );
    let mut calls = rec.0.borrow().clone();
    calls.sort_by(|a, b| b.1.cmp(&a.1));
    assert_eq!(
        calls,
        vec![
            (
                "self <= 5".to_string(),
                "spec.n".to_string(),
                Some(json!(4)),
                false
            ),
            (
                "self == oldSelf".to_string(),
                "spec.m".to_string(),
                Some(json!(1)),
                true
            ),
        ]
    );
}

#[test]
fn compile_rejects_bad_pattern() {
    let err = Structural::compile(
        &json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "("}}}),
    );
    assert!(err.is_err());
}

#[test]
fn root_kind_and_embedded_checks_are_not_ratcheted() {
    let schema = Structural::compile(&json!({"type": "object", "properties": {
        "kind": {"type": "string", "pattern": "^K$"},
        "t": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
        "n": {"type": "integer", "maximum": 1}
    }}))
    .unwrap();
    // an entirely unchanged object ratchets everything but embedded checks
    let same = json!({"kind": "X", "t": {}, "n": 5});
    let errs = validate(&same, Some(&same), &schema, &FieldPath::root());
    assert_eq!(
        sorted(&errs),
        vec![
            "t.apiVersion: Required value".to_string(),
            "t.kind: Required value".to_string()
        ]
    );
    // otherwise the root kind is validated even if unchanged
    let new = json!({"kind": "X", "t": {}, "n": 6});
    let errs = validate(&new, Some(&same), &schema, &FieldPath::root());
    assert_eq!(
        sorted(&errs),
        vec![
            r#"kind: Invalid value: "X": kind in body should match '^K$'"#.to_string(),
            "n: Invalid value: 6: n in body should be less than or equal to 1".to_string(),
            "t.apiVersion: Required value".to_string(),
            "t.kind: Required value".to_string(),
        ]
    );
}
