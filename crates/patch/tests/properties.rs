//! Property tests: identities that must hold for any input, and "never
//! panics" for arbitrary (often nonsensical) patch documents.

use kubext_patch::{PatchSchema, builtin_schema, json_patch, merge_patch, strategic};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Keys without directives.
fn plain_key() -> impl Strategy<Value = String> {
    prop_oneof![Just("a".to_string()), Just("b".to_string()), "[a-z]{1,2}"]
}

/// Null-free JSON without `$` keys.
fn plain_value() -> impl Strategy<Value = Value> {
    scalar(false).prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(plain_key(), inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn plain_object() -> impl Strategy<Value = Value> {
    prop::collection::btree_map(plain_key(), plain_value(), 0..6)
        .prop_map(|m| Value::Object(m.into_iter().collect()))
}

/// A plain object plus some top-level deletions (`key: null`).
fn plain_patch_object() -> impl Strategy<Value = Value> {
    (plain_object(), prop::collection::vec(plain_key(), 0..3)).prop_map(|(mut p, deletes)| {
        if let Value::Object(m) = &mut p {
            for k in deletes {
                m.insert(k, Value::Null);
            }
        }
        p
    })
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("a".to_string()),
        Just("b".to_string()),
        Just("metadata".to_string()),
        Just("finalizers".to_string()),
        Just("name".to_string()),
        Just("$patch".to_string()),
        Just("$retainKeys".to_string()),
        Just("$setElementOrder/finalizers".to_string()),
        Just("$deleteFromPrimitiveList/finalizers".to_string()),
        "[a-z~/]{0,4}",
    ]
}

fn scalar(with_null: bool) -> BoxedStrategy<Value> {
    let base = prop_oneof![
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        "[a-z]{0,3}".prop_map(Value::String),
        Just(json!("delete")),
        Just(json!("replace")),
    ];
    if with_null {
        prop_oneof![base, Just(Value::Null)].boxed()
    } else {
        base.boxed()
    }
}

/// Arbitrary JSON with kubernetes-ish keys (nulls optional).
fn json_value(with_null: bool) -> impl Strategy<Value = Value> {
    scalar(with_null).prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn object(with_null: bool) -> impl Strategy<Value = Value> {
    prop::collection::btree_map(key(), json_value(with_null), 0..6)
        .prop_map(|m| Value::Object(m.into_iter().collect()))
}

/// A plausible-looking JSON patch: ops with random paths into the document.
fn json_patch_doc() -> impl Strategy<Value = Value> {
    let op = prop_oneof![
        Just("add"),
        Just("remove"),
        Just("replace"),
        Just("move"),
        Just("copy"),
        Just("test"),
        Just("bogus"),
    ];
    let path = prop::collection::vec(
        prop_oneof![key(), Just("-".to_string()), "-?[0-9]{1,2}"],
        0..4,
    )
    .prop_map(|segs| segs.iter().map(|s| format!("/{s}")).collect::<String>());
    let operation = (op, path.clone(), path, json_value(true)).prop_map(
        |(op, path, from, value)| json!({"op": op, "path": path, "from": from, "value": value}),
    );
    prop_oneof![
        prop::collection::vec(operation, 0..6).prop_map(Value::Array),
        json_value(true),
    ]
}

fn contains_directive_key(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.iter().any(|(k, v)| {
            k == "$patch"
                || k == "$retainKeys"
                || k.starts_with("$setElementOrder")
                || k.starts_with("$deleteFromPrimitiveList")
                || contains_directive_key(v)
        }),
        Value::Array(items) => items.iter().any(contains_directive_key),
        _ => false,
    }
}

proptest! {
    // No regression files: integration tests have no lib.rs to sit beside.
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn empty_json_patch_is_identity(doc in object(true)) {
        prop_assert_eq!(json_patch::apply(&doc, &json!([])), Ok(doc));
    }

    #[test]
    fn merge_patch_create_round_trips(a in object(false), b in object(false)) {
        let patch = merge_patch::create(&a, &b);
        prop_assert_eq!(merge_patch::apply(&a, &patch), Ok(b));
    }

    #[test]
    fn merge_patch_create_of_equal_is_empty(a in object(true)) {
        prop_assert_eq!(merge_patch::create(&a, &a), json!({}));
    }

    #[test]
    fn json_patch_never_panics(doc in object(true), patch in json_patch_doc()) {
        let _ = json_patch::apply(&doc, &patch);
    }

    #[test]
    fn json_patch_bytes_never_panic(doc in object(true), bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        let _ = json_patch::apply_slice(&doc, &bytes);
    }

    #[test]
    fn merge_patch_never_panics(doc in json_value(true), patch in json_value(true)) {
        let _ = merge_patch::apply(&doc, &patch);
        let _ = merge_patch::create(&doc, &patch);
    }

    #[test]
    fn strategic_never_panics_and_never_leaks_directives(
        doc in object(true),
        patch in json_value(true),
    ) {
        let schema = builtin_schema("", "v1", "Service")
            .list("a", kubext_patch::Strategy::Merge, "name")
            .set("b")
            .set("metadata.finalizers");
        if let Ok(out) = strategic::apply(&doc, &patch, &schema) {
            prop_assert!(!contains_directive_key(&out) || contains_directive_key(&doc));
        }
    }

    /// Without list strategies or directives, strategic merge patch is JSON
    /// merge patch.
    #[test]
    fn strategic_without_schema_is_merge_patch(doc in plain_object(), patch in plain_patch_object()) {
        let smp = strategic::apply(&doc, &patch, &PatchSchema::new());
        let merge = merge_patch::apply(&doc, &patch);
        prop_assert_eq!(smp, merge);
    }
}
