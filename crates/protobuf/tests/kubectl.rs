//! Request bodies captured from real kubectl 1.32 (`kubectl create …`,
//! `kubectl create token`, `kubectl auth can-i`, `kubectl auth whoami`)
//! against a recording server, next to the JSON kubectl prints for the same
//! object with `--dry-run=client -o json`. Decoding the protobuf body must give
//! that JSON.
//!
//! Expected difference, `null` in Go's JSON and absent in ours: Go writes nil
//! pointers without `omitempty` (`TokenRequest.spec.boundObjectRef`) as
//! `null`, while the decoder emits only what is on the wire.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use serde_json::Value;

/// Removes `null` members of `want` that `got` does not have at all.
fn drop_nulls_absent_from(want: &mut Value, got: &Value) {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            w.retain(|k, v| !v.is_null() || g.contains_key(k));
            for (k, v) in w.iter_mut() {
                if let Some(gv) = g.get(k) {
                    drop_nulls_absent_from(v, gv);
                }
            }
        }
        (Value::Array(w), Value::Array(g)) => {
            for (wv, gv) in w.iter_mut().zip(g) {
                drop_nulls_absent_from(wv, gv);
            }
        }
        _ => {}
    }
}

#[test]
fn kubectl_bodies_decode_to_kubectl_json() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/kubectl-1.32");
    let mut checked = 0;
    let mut failures = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for pb in entries
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "pb"))
    {
        let name = pb.file_stem().unwrap().to_string_lossy().into_owned();
        let body = std::fs::read(pb).unwrap();
        let got = match kubext_protobuf::decode(&body) {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!("{name}: {e}"));
                continue;
            }
        };
        let json_path = pb.with_extension("json");
        let mut want: Value = serde_json::from_slice(
            &std::fs::read(&json_path).unwrap_or_else(|e| panic!("{}: {e}", json_path.display())),
        )
        .unwrap();
        drop_nulls_absent_from(&mut want, &got);
        if got != want {
            failures.push(format!(
                "{name}:\n got: {}\nwant: {}",
                serde_json::to_string_pretty(&got).unwrap(),
                serde_json::to_string_pretty(&want).unwrap()
            ));
        }
        checked += 1;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked >= 20, "only {checked} fixtures");
}
