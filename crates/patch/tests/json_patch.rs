//! Table tests for RFC 6902 JSON patch with kube-apiserver 1.32 (evanphx
//! json-patch v4.12.0) semantics, including the quirks clients rely on.

use kubext_patch::PatchError;
use kubext_patch::json_patch::{self, JsonPatch, MAX_COPY_BYTES};
use serde_json::{Value, json};

enum Want {
    Doc(Value),
    Failed(&'static str),
    Malformed(&'static str),
}

struct Case {
    name: &'static str,
    doc: Value,
    patch: Value,
    want: Want,
}

fn case(name: &'static str, doc: Value, patch: Value, want: Want) -> Case {
    Case {
        name,
        doc,
        patch,
        want,
    }
}

fn cm() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "x", "namespace": "default", "labels": {"a": "1"}},
        "data": {"k": "v", "list": "x"}
    })
}

/// `doc` with `value` set at `pointer` (the parent must exist).
fn with(mut doc: Value, pointer: &str, value: Value) -> Value {
    let (parent, key) = pointer.rsplit_once('/').unwrap_or(("", pointer));
    if let Some(Value::Object(m)) = doc.pointer_mut(parent) {
        m.insert(key.to_string(), value);
    }
    doc
}

fn cases() -> Vec<Case> {
    use Want::*;
    vec![
        // kube-runtime's finalizer helper: test-null then add.
        case(
            "kube-runtime add finalizer to object without finalizers",
            cm(),
            json!([
                {"op": "test", "path": "/metadata/finalizers", "value": null},
                {"op": "add", "path": "/metadata/finalizers", "value": ["x"]}
            ]),
            Doc(with(cm(), "/metadata/finalizers", json!(["x"]))),
        ),
        case(
            "kube-runtime test-null fails once finalizers exist",
            with(cm(), "/metadata/finalizers", json!(["y"])),
            json!([
                {"op": "test", "path": "/metadata/finalizers", "value": null},
                {"op": "add", "path": "/metadata/finalizers", "value": ["x"]}
            ]),
            Failed("testing value /metadata/finalizers failed: test failed"),
        ),
        case(
            "kube-runtime append finalizer then remove by index after test",
            with(cm(), "/metadata/finalizers", json!(["a", "x"])),
            json!([
                {"op": "test", "path": "/metadata/finalizers/1", "value": "x"},
                {"op": "remove", "path": "/metadata/finalizers/1"}
            ]),
            Doc(with(cm(), "/metadata/finalizers", json!(["a"]))),
        ),
        case(
            "test of missing key with absent value passes",
            cm(),
            json!([{"op": "test", "path": "/metadata/finalizers"}]),
            Doc(cm()),
        ),
        case(
            "test of existing value against null fails",
            cm(),
            json!([{"op": "test", "path": "/data/k", "value": null}]),
            Failed("testing value /data/k failed: test failed"),
        ),
        case(
            "test of missing key with a value fails",
            cm(),
            json!([{"op": "test", "path": "/data/nope", "value": "v"}]),
            Failed("testing value /data/nope failed: test failed"),
        ),
        case(
            "test below a missing parent",
            cm(),
            json!([{"op": "test", "path": "/spec/x", "value": null}]),
            Failed("test operation does not apply: is missing path: /spec/x: missing value"),
        ),
        case(
            "test of whole objects compares structurally",
            cm(),
            json!([{"op": "test", "path": "/metadata/labels", "value": {"a": "1"}}]),
            Doc(cm()),
        ),
        case(
            "test of whole document",
            json!({"a": 1}),
            json!([{"op": "test", "path": "", "value": {"a": 1}}]),
            Doc(json!({"a": 1})),
        ),
        case(
            "test distinguishes 1 and 1.0 like evanphx",
            json!({"a": 1}),
            json!([{"op": "test", "path": "/a", "value": 1.0}]),
            Failed("testing value /a failed: test failed"),
        ),
        case(
            "add creates a key",
            cm(),
            json!([{"op": "add", "path": "/metadata/labels/b", "value": "2"}]),
            Doc(with(cm(), "/metadata/labels", json!({"a": "1", "b": "2"}))),
        ),
        case(
            "add overwrites an existing key",
            cm(),
            json!([{"op": "add", "path": "/data/k", "value": "w"}]),
            Doc(with(cm(), "/data/k", json!("w"))),
        ),
        case(
            "add with missing parent",
            cm(),
            json!([{"op": "add", "path": "/metadata/x/y", "value": 1}]),
            Failed(
                "add operation does not apply: doc is missing path: \"/metadata/x/y\": missing value",
            ),
        ),
        case(
            "add through a scalar parent",
            cm(),
            json!([{"op": "add", "path": "/data/k/y", "value": 1}]),
            Failed(
                "add operation does not apply: doc is missing path: \"/data/k/y\": missing value",
            ),
        ),
        case(
            "add to the document root path fails",
            cm(),
            json!([{"op": "add", "path": "", "value": {}}]),
            Failed("add operation does not apply: doc is missing path: \"\": missing value"),
        ),
        case(
            "add - appends",
            json!({"l": [1, 2]}),
            json!([{"op": "add", "path": "/l/-", "value": 3}]),
            Doc(json!({"l": [1, 2, 3]})),
        ),
        case(
            "add at index inserts",
            json!({"l": [1, 2]}),
            json!([{"op": "add", "path": "/l/1", "value": 9}]),
            Doc(json!({"l": [1, 9, 2]})),
        ),
        case(
            "add at len appends",
            json!({"l": [1, 2]}),
            json!([{"op": "add", "path": "/l/2", "value": 9}]),
            Doc(json!({"l": [1, 2, 9]})),
        ),
        case(
            "add at -1 appends (negative indices count from the end)",
            json!({"l": [1, 2]}),
            json!([{"op": "add", "path": "/l/-1", "value": 9}]),
            Doc(json!({"l": [1, 2, 9]})),
        ),
        case(
            "add out of range",
            json!({"l": [1]}),
            json!([{"op": "add", "path": "/l/3", "value": 9}]),
            Failed(
                "error in add for path: '/l/3': Unable to access invalid index: 3: invalid index referenced",
            ),
        ),
        case(
            "add with a non-numeric index",
            json!({"l": [1]}),
            json!([{"op": "add", "path": "/l/x", "value": 9}]),
            Failed(
                "error in add for path: '/l/x': value was not a proper array index: 'x': strconv.Atoi: parsing \"x\": invalid syntax",
            ),
        ),
        case(
            "add without value adds null",
            json!({}),
            json!([{"op": "add", "path": "/a"}]),
            Doc(json!({"a": null})),
        ),
        case(
            "remove a key",
            cm(),
            json!([{"op": "remove", "path": "/data/list"}]),
            Doc(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "x", "namespace": "default", "labels": {"a": "1"}},
                "data": {"k": "v"}
            })),
        ),
        case(
            "remove a missing key",
            cm(),
            json!([{"op": "remove", "path": "/metadata/x"}]),
            Failed(
                "error in remove for path: '/metadata/x': Unable to remove nonexistent key: x: missing value",
            ),
        ),
        case(
            "remove below a missing parent",
            cm(),
            json!([{"op": "remove", "path": "/metadata/x/y"}]),
            Failed(
                "remove operation does not apply: doc is missing path: \"/metadata/x/y\": missing value",
            ),
        ),
        case(
            "remove array element",
            json!({"l": ["a", "b", "c"]}),
            json!([{"op": "remove", "path": "/l/1"}]),
            Doc(json!({"l": ["a", "c"]})),
        ),
        case(
            "remove last array element by -1",
            json!({"l": ["a", "b", "c"]}),
            json!([{"op": "remove", "path": "/l/-1"}]),
            Doc(json!({"l": ["a", "b"]})),
        ),
        case(
            "remove out of range",
            json!({"l": ["a"]}),
            json!([{"op": "remove", "path": "/l/1"}]),
            Failed(
                "error in remove for path: '/l/1': Unable to access invalid index: 1: invalid index referenced",
            ),
        ),
        case(
            "replace an existing key",
            cm(),
            json!([{"op": "replace", "path": "/data/k", "value": "w"}]),
            Doc(with(cm(), "/data/k", json!("w"))),
        ),
        case(
            "replace of a missing key in an existing object adds it (evanphx v4)",
            cm(),
            json!([{"op": "replace", "path": "/data/new", "value": "n"}]),
            Doc(with(
                cm(),
                "/data",
                json!({"k": "v", "list": "x", "new": "n"}),
            )),
        ),
        case(
            "replace below a missing parent",
            cm(),
            json!([{"op": "replace", "path": "/spec/x", "value": 1}]),
            Failed("replace operation does not apply: doc is missing path: /spec/x: missing value"),
        ),
        case(
            "replace out of range index",
            json!({"l": [1]}),
            json!([{"op": "replace", "path": "/l/1", "value": 2}]),
            Failed("replace operation does not apply: doc is missing key: /l/1: missing value"),
        ),
        case(
            "replace the whole document",
            cm(),
            json!([{"op": "replace", "path": "", "value": {"a": 1}}]),
            Doc(json!({"a": 1})),
        ),
        case(
            "replace the whole document with a scalar is a no-op (v4.12.0)",
            json!({"a": 1}),
            json!([{"op": "replace", "path": "", "value": 5}]),
            Doc(json!({"a": 1})),
        ),
        case(
            "move between objects",
            json!({"a": {"x": 1}, "b": {}}),
            json!([{"op": "move", "from": "/a/x", "path": "/b/y"}]),
            Doc(json!({"a": {}, "b": {"y": 1}})),
        ),
        case(
            "move within an array",
            json!({"l": ["all", "grass", "cows", "eat"]}),
            json!([{"op": "move", "from": "/l/1", "path": "/l/3"}]),
            Doc(json!({"l": ["all", "cows", "eat", "grass"]})),
        ),
        case(
            "move from a missing key",
            json!({"a": {}}),
            json!([{"op": "move", "from": "/a/x", "path": "/b"}]),
            Failed(
                "error in move for path: 'x': Unable to remove nonexistent key: x: missing value",
            ),
        ),
        case(
            "copy a value",
            json!({"a": {"x": [1]}}),
            json!([{"op": "copy", "from": "/a/x", "path": "/b"}]),
            Doc(json!({"a": {"x": [1]}, "b": [1]})),
        ),
        case(
            "copy from a missing key copies null (evanphx v4)",
            json!({"a": {}}),
            json!([{"op": "copy", "from": "/a/x", "path": "/b"}]),
            Doc(json!({"a": {}, "b": null})),
        ),
        case(
            "copy into an array index past the end",
            json!({"l": ["a"]}),
            json!([{"op": "copy", "from": "/l/0", "path": "/l/2"}]),
            Failed(
                "error while adding value during copy: Unable to access invalid index: 2: invalid index referenced",
            ),
        ),
        case(
            "JSON pointer escapes ~0 and ~1",
            json!({"metadata": {"annotations": {"example.com/a~b": "1"}}}),
            json!([
                {"op": "test", "path": "/metadata/annotations/example.com~1a~0b", "value": "1"},
                {"op": "replace", "path": "/metadata/annotations/example.com~1a~0b", "value": "2"}
            ]),
            Doc(json!({"metadata": {"annotations": {"example.com/a~b": "2"}}})),
        ),
        case(
            "a path without leading slash ignores its first segment",
            json!({"a": 1}),
            json!([{"op": "add", "path": "zzz/b", "value": 2}]),
            Doc(json!({"a": 1, "b": 2})),
        ),
        case(
            "operations apply in order and stop at the first failure",
            json!({"a": 1}),
            json!([
                {"op": "add", "path": "/b", "value": 2},
                {"op": "remove", "path": "/c"},
                {"op": "add", "path": "/d", "value": 4}
            ]),
            Failed(
                "error in remove for path: '/c': Unable to remove nonexistent key: c: missing value",
            ),
        ),
        case(
            "missing op",
            json!({}),
            json!([{"path": "/a", "value": 1}]),
            Failed("Unexpected kind: unknown"),
        ),
        case(
            "null operation",
            json!({}),
            json!([null]),
            Failed("Unexpected kind: unknown"),
        ),
        case(
            "unknown op",
            json!({}),
            json!([{"op": "merge", "path": "/a", "value": 1}]),
            Failed("Unexpected kind: merge"),
        ),
        case(
            "missing path",
            json!({}),
            json!([{"op": "add", "value": 1}]),
            Failed("add operation failed to decode path: missing value"),
        ),
        case(
            "missing from",
            json!({}),
            json!([{"op": "copy", "path": "/a"}]),
            Failed(
                "copy operation failed to decode from: operation, missing from field: missing value",
            ),
        ),
        case(
            "patch that is not an array",
            json!({}),
            json!({"op": "add"}),
            Malformed(
                "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp",
            ),
        ),
        case(
            "operation that is not an object",
            json!({}),
            json!([1]),
            Malformed(
                "error decoding patch: json: cannot unmarshal number into Go value of type handlers.jsonPatchOp",
            ),
        ),
        case(
            "op that is not a string",
            json!({}),
            json!([{"op": 1, "path": "/a"}]),
            Malformed(
                "error decoding patch: json: cannot unmarshal number into Go struct field jsonPatchOp.op of type string",
            ),
        ),
        case(
            "path that is not a string",
            json!({}),
            json!([{"op": "add", "path": ["a"]}]),
            Malformed(
                "error decoding patch: json: cannot unmarshal array into Go struct field jsonPatchOp.path of type string",
            ),
        ),
        case("empty patch", cm(), json!([]), Doc(cm())),
        case("null patch is empty", cm(), Value::Null, Doc(cm())),
    ]
}

#[test]
fn table() {
    for c in cases() {
        let got = json_patch::apply(&c.doc, &c.patch);
        match (&c.want, got) {
            (Want::Doc(want), Ok(got)) => assert_eq!(&got, want, "{}", c.name),
            (Want::Failed(want), Err(PatchError::Failed(got))) => {
                assert_eq!(got, *want, "{}", c.name)
            }
            (Want::Malformed(want), Err(PatchError::Malformed(got))) => {
                assert_eq!(got, *want, "{}", c.name)
            }
            (_, got) => panic!("{}: unexpected {got:?}", c.name),
        }
    }
}

#[test]
fn bytes_entry_point_rejects_bad_json_as_malformed() {
    let err = json_patch::apply_slice(&json!({}), b"[{").expect_err("must fail");
    assert!(matches!(&err, PatchError::Malformed(m) if m.starts_with("error decoding patch: ")));
    assert_eq!(err.http_status(), 400);
    let ok = json_patch::apply_slice(&json!({}), br#"[{"op":"add","path":"/a","value":1}]"#);
    assert_eq!(ok, Ok(json!({"a": 1})));
}

#[test]
fn decoded_patch_exposes_its_length_for_the_operation_limit() {
    let p = JsonPatch::from_value(
        &json!([{"op": "test", "path": "/a"}, {"op": "remove", "path": "/a"}]),
    );
    assert_eq!(p.map(|p| p.len()), Ok(2));
    assert!(JsonPatch::from_value(&json!([])).is_ok_and(|p| p.is_empty()));
}

#[test]
fn copies_are_limited_like_json_patch_max_copy_bytes() {
    let big = "A".repeat(MAX_COPY_BYTES / 2);
    let doc = json!({"a": big});
    let one = json!([{"op": "copy", "from": "/a", "path": "/b"}]);
    assert!(json_patch::apply(&doc, &one).is_ok());
    let two = json!([
        {"op": "copy", "from": "/a", "path": "/b"},
        {"op": "copy", "from": "/a", "path": "/c"}
    ]);
    let err = json_patch::apply(&doc, &two).expect_err("must fail");
    assert_eq!(err.http_status(), 422);
    assert!(
        err.message()
            .starts_with("Unable to complete the copy, the accumulated size increase of copy is "),
        "{err}"
    );
}

#[test]
fn failures_map_to_422() {
    let err = json_patch::apply(&json!({}), &json!([{"op": "remove", "path": "/x"}]))
        .expect_err("must fail");
    assert_eq!(err.http_status(), 422);
}
