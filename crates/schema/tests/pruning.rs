//! Table-driven pruning and defaulting tests.

use kubext_schema::defaulting::prune_non_nullable_nulls;
use kubext_schema::{Structural, default, prune};
use serde_json::{Value, json};

struct PruneCase {
    name: &'static str,
    schema: Value,
    root: bool,
    obj: Value,
    want: Value,
    pruned: &'static [&'static str],
}

fn prune_cases() -> Vec<PruneCase> {
    let spec_schema = json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"a": {"type": "string"}, "list": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "integer"}}}}}}
    }});
    vec![
        PruneCase {
            name: "unknown fields removed, root meta kept",
            schema: spec_schema.clone(),
            root: true,
            obj: json!({"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "n", "whatever": 1}, "spec": {"a": "x", "foo": 1}, "extra": true}),
            want: json!({"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "n", "whatever": 1}, "spec": {"a": "x"}}),
            pruned: &["extra", "spec.foo"],
        },
        PruneCase {
            name: "array items pruned with index paths",
            schema: spec_schema.clone(),
            root: true,
            obj: json!({"spec": {"list": [{"x": 1, "y": 2}, {"z": 3}]}}),
            want: json!({"spec": {"list": [{"x": 1}, {}]}}),
            pruned: &["spec.list[0].y", "spec.list[1].z"],
        },
        PruneCase {
            name: "non-root value drops apiVersion/kind/metadata too",
            schema: json!({"type": "object", "properties": {"a": {"type": "string"}}}),
            root: false,
            obj: json!({"a": "x", "kind": "K", "b": 1}),
            want: json!({"a": "x"}),
            // as upstream, top-level apiVersion/kind/metadata are dropped silently
            pruned: &["b"],
        },
        PruneCase {
            name: "preserve-unknown-fields keeps unknowns but prunes known subtrees",
            schema: json!({"type": "object", "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                "properties": {"known": {"type": "object", "properties": {"k": {"type": "string"}}}}}}}),
            root: true,
            obj: json!({"spec": {"anything": {"deep": 1}, "known": {"k": "v", "drop": 1}}}),
            want: json!({"spec": {"anything": {"deep": 1}, "known": {"k": "v"}}}),
            pruned: &["spec.known.drop"],
        },
        PruneCase {
            name: "additionalProperties schema prunes values",
            schema: json!({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {"type": "object", "properties": {"a": {"type": "string"}}}}}}),
            root: true,
            obj: json!({"m": {"k1": {"a": "x", "b": "y"}, "k2": {}}}),
            want: json!({"m": {"k1": {"a": "x"}, "k2": {}}}),
            pruned: &["m.k1.b"],
        },
        PruneCase {
            name: "embedded resource keeps apiVersion/kind/metadata, metadata pruned to ObjectMeta",
            schema: json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "template": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "object", "properties": {"c": {"type": "string"}}}}}}}}}),
            root: true,
            obj: json!({"spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}, "bogus": 1}, "spec": {"c": "x", "d": "y"}, "status": {}}}}),
            want: json!({"spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}}, "spec": {"c": "x"}}}}),
            // Embedded metadata last, as upstream's coercion (after pruning) finds it.
            pruned: &[
                "spec.template.spec.d",
                "spec.template.status",
                "spec.template.metadata.bogus",
            ],
        },
        PruneCase {
            name: "embedded resource with preserve-unknown-fields",
            schema: json!({"type": "object", "properties": {"t": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}}),
            root: true,
            obj: json!({"t": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "bogus": 1}, "spec": {"any": 1}}}),
            want: json!({"t": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"any": 1}}}),
            pruned: &["t.metadata.bogus"],
        },
        PruneCase {
            name: "scalars and nulls untouched",
            schema: json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "object", "nullable": true}}}),
            root: true,
            obj: json!({"a": "x", "b": null}),
            want: json!({"a": "x", "b": null}),
            pruned: &[],
        },
    ]
}

#[test]
fn pruning_table() {
    let mut failures = Vec::new();
    for case in prune_cases() {
        let s = Structural::compile(&case.schema).expect(case.name);
        let mut obj = case.obj.clone();
        let pruned = prune(&mut obj, &s, case.root);
        if obj != case.want || pruned != case.pruned {
            failures.push(format!(
                "{}: got {obj} {pruned:?}, want {} {:?}",
                case.name, case.want, case.pruned
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

struct DefaultCase {
    name: &'static str,
    schema: Value,
    obj: Value,
    want: Value,
}

fn default_cases() -> Vec<DefaultCase> {
    vec![
        DefaultCase {
            name: "missing fields defaulted",
            schema: json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "replicas": {"type": "integer", "default": 1}, "name": {"type": "string", "default": "x"}}}}}),
            obj: json!({"spec": {"name": "given"}}),
            want: json!({"spec": {"name": "given", "replicas": 1}}),
        },
        DefaultCase {
            name: "object default then nested defaults",
            schema: json!({"type": "object", "properties": {"spec": {"type": "object", "default": {}, "properties": {
                "a": {"type": "string", "default": "A"}}}}}),
            obj: json!({}),
            want: json!({"spec": {"a": "A"}}),
        },
        DefaultCase {
            name: "null of non-nullable field is defaulted",
            schema: json!({"type": "object", "properties": {"a": {"type": "string", "default": "d"}}}),
            obj: json!({"a": null}),
            want: json!({"a": "d"}),
        },
        DefaultCase {
            name: "null of nullable field is kept",
            schema: json!({"type": "object", "properties": {"a": {"type": "string", "nullable": true, "default": "d"}}}),
            obj: json!({"a": null}),
            want: json!({"a": null}),
        },
        DefaultCase {
            name: "array items defaulted",
            schema: json!({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "object", "properties": {
                "p": {"type": "string", "default": "TCP"}}}}}}),
            obj: json!({"l": [{}, {"p": "UDP"}]}),
            want: json!({"l": [{"p": "TCP"}, {"p": "UDP"}]}),
        },
        DefaultCase {
            name: "null array items get item default",
            schema: json!({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "string", "default": "x"}}}}),
            obj: json!({"l": [null, "y"]}),
            want: json!({"l": ["x", "y"]}),
        },
        DefaultCase {
            name: "additionalProperties values defaulted",
            schema: json!({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {"type": "object", "properties": {
                "v": {"type": "integer", "default": 3}}}}}}),
            obj: json!({"m": {"a": {}, "b": {"v": 1}}}),
            want: json!({"m": {"a": {"v": 3}, "b": {"v": 1}}}),
        },
        DefaultCase {
            name: "unknown fields are not defaulted into",
            schema: json!({"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "string", "default": "x"}}}}}),
            obj: json!({"z": {}}),
            want: json!({"z": {}}),
        },
    ]
}

#[test]
fn defaulting_table() {
    let mut failures = Vec::new();
    for case in default_cases() {
        let s = Structural::compile(&case.schema).expect(case.name);
        let mut obj = case.obj.clone();
        default(&mut obj, &s);
        if obj != case.want {
            failures.push(format!("{}: got {obj}, want {}", case.name, case.want));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn non_nullable_nulls_without_defaults_are_pruned() {
    let s = Structural::compile(&json!({"type": "object", "properties": {
        "a": {"type": "string"}, "b": {"type": "string", "nullable": true}, "c": {"type": "object", "properties": {"d": {"type": "integer"}}}}}))
    .unwrap();
    let mut obj = json!({"a": null, "b": null, "c": {"d": null}});
    prune_non_nullable_nulls(&mut obj, &s);
    assert_eq!(obj, json!({"b": null, "c": {}}));
}

#[test]
fn root_metadata_is_pruned_to_object_meta_on_request() {
    let mut obj = json!({"metadata": {"name": "a", "labels": {"x": "y"}, "foo": 1}, "spec": {}});
    let pruned = kubext_schema::prune_root_metadata(&mut obj);
    assert_eq!(pruned, vec!["metadata.foo".to_string()]);
    assert_eq!(
        obj,
        json!({"metadata": {"name": "a", "labels": {"x": "y"}}, "spec": {}})
    );
}
