//! Table tests for RFC 7386 merge patch application and creation as
//! kube-apiserver 1.32 (evanphx json-patch v4.12.0) does them.

use kubext_patch::PatchError;
use kubext_patch::merge_patch::{apply, create};
use serde_json::{Value, json};

/// (name, document, patch, expected result)
fn apply_cases() -> Vec<(&'static str, Value, Value, Value)> {
    vec![
        // RFC 7386 appendix A (object-shaped ones; kube-apiserver rejects the rest).
        (
            "rfc: replace",
            json!({"a": "b"}),
            json!({"a": "c"}),
            json!({"a": "c"}),
        ),
        (
            "rfc: add",
            json!({"a": "b"}),
            json!({"b": "c"}),
            json!({"a": "b", "b": "c"}),
        ),
        (
            "rfc: delete",
            json!({"a": "b"}),
            json!({"a": null}),
            json!({}),
        ),
        (
            "rfc: delete one of two",
            json!({"a": "b", "b": "c"}),
            json!({"a": null}),
            json!({"b": "c"}),
        ),
        (
            "rfc: list replaced by scalar",
            json!({"a": ["b"]}),
            json!({"a": "c"}),
            json!({"a": "c"}),
        ),
        (
            "rfc: scalar replaced by list",
            json!({"a": "c"}),
            json!({"a": ["b"]}),
            json!({"a": ["b"]}),
        ),
        (
            "rfc: nested merge with delete",
            json!({"a": {"b": "c"}}),
            json!({"a": {"b": "d", "c": null}}),
            json!({"a": {"b": "d"}}),
        ),
        (
            "rfc: lists are atomic",
            json!({"a": [{"b": "c"}]}),
            json!({"a": [1]}),
            json!({"a": [1]}),
        ),
        (
            "rfc: existing null kept",
            json!({"e": null}),
            json!({"a": 1}),
            json!({"a": 1, "e": null}),
        ),
        (
            "rfc: nulls pruned in new nested objects",
            json!({}),
            json!({"a": {"bb": {"ccc": null}}}),
            json!({"a": {"bb": {}}}),
        ),
        (
            "kubectl label",
            json!({"metadata": {"name": "x", "labels": {"a": "1"}}}),
            json!({"metadata": {"labels": {"b": "2"}}}),
            json!({"metadata": {"name": "x", "labels": {"a": "1", "b": "2"}}}),
        ),
        (
            "kubectl unlabel",
            json!({"metadata": {"name": "x", "labels": {"a": "1", "b": "2"}}}),
            json!({"metadata": {"labels": {"b": null}}}),
            json!({"metadata": {"name": "x", "labels": {"a": "1"}}}),
        ),
        (
            "finalizers are replaced, not merged",
            json!({"metadata": {"finalizers": ["a", "b"]}}),
            json!({"metadata": {"finalizers": ["c"]}}),
            json!({"metadata": {"finalizers": ["c"]}}),
        ),
        (
            "deleting a missing key is fine",
            json!({"a": 1}),
            json!({"b": null}),
            json!({"a": 1}),
        ),
        (
            "evanphx prunes nulls inside objects in lists that land on nothing",
            json!({}),
            json!({"l": [{"a": null, "b": 1}, null]}),
            json!({"l": [{"b": 1}, null]}),
        ),
        (
            "evanphx prunes nulls inside lists replacing a scalar",
            json!({"l": "x"}),
            json!({"l": [{"a": null}]}),
            json!({"l": [{}]}),
        ),
        (
            "evanphx keeps nulls inside lists replacing an object",
            json!({"l": {"x": 1}}),
            json!({"l": [{"a": null}]}),
            json!({"l": [{"a": null}]}),
        ),
        ("empty patch", json!({"a": 1}), json!({}), json!({"a": 1})),
        (
            "object patch onto a non-object document",
            json!([1, 2]),
            json!({"a": "b", "c": null}),
            json!({"a": "b"}),
        ),
    ]
}

#[test]
fn apply_table() {
    for (name, doc, patch, want) in apply_cases() {
        assert_eq!(apply(&doc, &patch), Ok(want), "{name}");
    }
}

#[test]
fn non_object_patches_are_bad_requests() {
    let cases = [
        (json!(null), "Invalid JSON Patch"),
        (
            json!("bar"),
            "error decoding patch: json: cannot unmarshal string into Go value of type map[string]interface {}",
        ),
        (
            json!(["c"]),
            "error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}",
        ),
    ];
    for (patch, want) in cases {
        let err = apply(&json!({"a": "foo"}), &patch).expect_err("must fail");
        assert_eq!(err, PatchError::Malformed(want.into()), "{patch}");
        assert_eq!(err.http_status(), 400);
    }
}

/// (name, original, modified, expected patch)
fn create_cases() -> Vec<(&'static str, Value, Value, Value)> {
    vec![
        (
            "replace key and nested key",
            json!({"title": "hello", "nested": {"one": 1, "two": 2}}),
            json!({"title": "goodbye", "nested": {"one": 2, "two": 2}}),
            json!({"title": "goodbye", "nested": {"one": 2}}),
        ),
        (
            "changed array replaced whole, unchanged omitted",
            json!({"array": ["one", "two"], "same": [1, 2, 3]}),
            json!({"array": ["one", "two", "three"], "same": [1, 2, 3]}),
            json!({"array": ["one", "two", "three"]}),
        ),
        (
            "deleted key becomes null",
            json!({"title": "hello", "nested": {"one": 1, "two": 2}}),
            json!({"title": "hello", "nested": {"one": 1}}),
            json!({"nested": {"two": null}}),
        ),
        (
            "removed object becomes null",
            json!({"a": {"b": 1}, "c": 1}),
            json!({"c": 1}),
            json!({"a": null}),
        ),
        (
            "no differences",
            json!({"a": {"b": [1]}}),
            json!({"a": {"b": [1]}}),
            json!({}),
        ),
        (
            "1 equals 1.0",
            json!({"a": 1}),
            json!({"a": 1.0}),
            json!({}),
        ),
        (
            "type change",
            json!({"a": {"b": 1}}),
            json!({"a": [1]}),
            json!({"a": [1]}),
        ),
        (
            "object added",
            json!({}),
            json!({"a": {"b": 1}}),
            json!({"a": {"b": 1}}),
        ),
        (
            "array of objects compared deeply",
            json!({"l": [{"a": 1}, {"b": 2}]}),
            json!({"l": [{"a": 1}, {"b": 3}]}),
            json!({"l": [{"a": 1}, {"b": 3}]}),
        ),
        (
            "label change on an object",
            json!({"metadata": {"name": "x", "labels": {"a": "1"}}, "data": {"k": "v"}}),
            json!({"metadata": {"name": "x", "labels": {"a": "2"}}, "data": {"k": "v"}}),
            json!({"metadata": {"labels": {"a": "2"}}}),
        ),
        (
            "non-objects: the modified value",
            json!([1]),
            json!([2]),
            json!([2]),
        ),
    ]
}

#[test]
fn create_table() {
    for (name, original, modified, want) in create_cases() {
        let patch = create(&original, &modified);
        assert_eq!(patch, want, "{name}");
        if original.is_object() && name != "1 equals 1.0" {
            assert_eq!(apply(&original, &patch), Ok(modified), "{name}: round trip");
        }
    }
}
