//! Compact JSON for `serde_json::Value` trees: byte for byte what
//! `serde_json::to_vec` writes, but with strings escaped by a SIMD scan
//! (serde_json looks every byte up in a table: two-thirds of the cost of
//! encoding an object with a 1 KiB payload), and objects written in the member
//! order kube-apiserver writes them ([`encode_object`]).

use serde_json::{Map, Value};

/// `serde_json::from_slice`, with UTF-8 checked once for the whole input (a
/// word at a time) instead of string by string as serde_json checks a slice:
/// the same values, and for invalid UTF-8 the same errors (such input takes
/// serde_json's own path).
pub fn from_slice<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> serde_json::Result<T> {
    match std::str::from_utf8(bytes) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(bytes),
    }
}

/// Writes `value` as compact JSON.
pub fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        // Integers and floats exactly as serde_json formats them (itoa, ryu).
        Value::Number(n) => serde_json::to_writer(&mut *out, n).unwrap_or(()),
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, item);
            }
            out.push(b']');
        }
        Value::Object(map) => write_members(out, map.iter()),
    }
}

/// Writes `{…}` with these members, in this order.
fn write_members<'a>(out: &mut Vec<u8>, members: impl Iterator<Item = (&'a String, &'a Value)>) {
    out.push(b'{');
    for (i, (key, value)) in members.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, key);
        out.push(b':');
        write_value(out, value);
    }
    out.push(b'}');
}

/// Which `metadata` members an encoding keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetadataMembers {
    All,
    /// Everything but `resourceVersion` (the storage revision is the version).
    WithoutResourceVersion,
}

/// `ObjectMeta`'s members in its Go struct's order, which is how
/// kube-apiserver writes them: `managedFields`, the bulkiest, last.
pub const OBJECT_META_ORDER: [&str; 15] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// The members every object's encoding starts with, in this order (`TypeMeta`
/// and `ObjectMeta` lead every typed object upstream).
pub const LEADING_MEMBERS: [&str; 3] = ["kind", "apiVersion", "metadata"];

/// An object's JSON: `kind`, `apiVersion` and `metadata` first, `metadata`'s
/// members in `ObjectMeta`'s order (any it does not know before
/// `managedFields`), the object's other members in their own order. Not an
/// object: written as it is.
pub fn encode_object(obj: &Value, metadata: MetadataMembers) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    encode_object_into(&mut out, obj, metadata);
    out
}

/// [`encode_object`], appended to `out`.
pub fn encode_object_into(out: &mut Vec<u8>, obj: &Value, metadata: MetadataMembers) {
    let out = &mut *out;
    let Value::Object(map) = obj else {
        write_value(out, obj);
        return;
    };
    // Each key is classified once by a `match` (member by member lookups
    // would search the map again for each name).
    let mut leading = [None; LEADING_MEMBERS.len()];
    for member in map {
        if let Some(at) = leading_rank(member.0) {
            leading[at] = Some(member);
        }
    }
    let rest = map.iter().filter(|(k, _)| leading_rank(k).is_none());
    out.push(b'{');
    for (i, (key, value)) in leading.into_iter().flatten().chain(rest).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, key);
        out.push(b':');
        match value {
            Value::Object(md) if key == "metadata" => {
                write_members(out, metadata_in_order(md, metadata))
            }
            _ => write_value(out, value),
        }
    }
    out.push(b'}');
}

/// Where `key` is in [`LEADING_MEMBERS`].
fn leading_rank(key: &str) -> Option<usize> {
    match key {
        "kind" => Some(0),
        "apiVersion" => Some(1),
        "metadata" => Some(2),
        _ => None,
    }
}

/// Where `key` is in [`OBJECT_META_ORDER`].
fn object_meta_rank(key: &str) -> Option<usize> {
    let rank = match key {
        "name" => 0,
        "generateName" => 1,
        "namespace" => 2,
        "selfLink" => 3,
        "uid" => 4,
        "resourceVersion" => 5,
        "generation" => 6,
        "creationTimestamp" => 7,
        "deletionTimestamp" => 8,
        "deletionGracePeriodSeconds" => 9,
        "labels" => 10,
        "annotations" => 11,
        "ownerReferences" => 12,
        "finalizers" => 13,
        "managedFields" => 14,
        _ => return None,
    };
    Some(rank)
}

/// `metadata`'s members as [`encode_object`] writes them.
fn metadata_in_order(
    md: &Map<String, Value>,
    keep: MetadataMembers,
) -> impl Iterator<Item = (&String, &Value)> {
    let mut known = [None; OBJECT_META_ORDER.len()];
    for member in md {
        if let Some(at) = object_meta_rank(member.0) {
            known[at] = Some(member);
        }
    }
    if keep == MetadataMembers::WithoutResourceVersion {
        known[RESOURCE_VERSION_RANK] = None;
    }
    // Members it does not know go before managedFields, the last.
    let managed = known[OBJECT_META_ORDER.len() - 1].take();
    let unknown = md.iter().filter(|(k, _)| object_meta_rank(k).is_none());
    known.into_iter().flatten().chain(unknown).chain(managed)
}

/// Where `resourceVersion` is in [`OBJECT_META_ORDER`].
const RESOURCE_VERSION_RANK: usize = 5;

/// Writes `s` as a JSON string, escaped as serde_json escapes: `"` and `\\`,
/// and control characters (short forms where JSON has them, else `\\u00xx`).
/// The scan for what needs escaping is SIMD (`json-escape-simd`, sonic-rs's
/// kernel): ten times fewer instructions than a table lookup per byte.
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    json_escape_simd::escape_into(s, out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn same_as_serde_json(value: &Value) {
        let mut ours = Vec::new();
        write_value(&mut ours, value);
        assert_eq!(
            String::from_utf8(ours).unwrap(),
            serde_json::to_string(value).unwrap()
        );
    }

    #[test]
    fn decoding_gives_serde_jsons_values_and_errors() {
        let inputs: [&[u8]; 9] = [
            br#"{"a":"\u00e9\ud83d\ude00","b":[1,2.5,-3e2,null,true],"c":{}}"#,
            "{\"é\":\"😀 plain\"}".as_bytes(),
            b"{\"a\":\"\xff\"}",
            b"{\"a\":\"\xc3\"}",
            b"{\"a\":1,}",
            br#"{"a":"\ud800"}"#,
            b"{\"a\":\n\"x\"\n",
            b"",
            b"[1] 2",
        ];
        for input in inputs {
            let ours = from_slice::<Value>(input).map_err(|e| e.to_string());
            let theirs = serde_json::from_slice::<Value>(input).map_err(|e| e.to_string());
            assert_eq!(ours, theirs, "{}", String::from_utf8_lossy(input));
        }
    }

    #[test]
    fn member_ranks_are_the_orders_positions() {
        for (i, key) in OBJECT_META_ORDER.iter().enumerate() {
            assert_eq!(object_meta_rank(key), Some(i), "{key}");
        }
        assert_eq!(OBJECT_META_ORDER[RESOURCE_VERSION_RANK], "resourceVersion");
        for (i, key) in LEADING_MEMBERS.iter().enumerate() {
            assert_eq!(leading_rank(key), Some(i), "{key}");
        }
        assert_eq!(object_meta_rank("Name"), None);
        assert_eq!(leading_rank("spec"), None);
    }

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let mut every_byte: String = (0u8..0x80).map(char::from).collect();
        every_byte.push_str("é€😀\u{2028}<>&'\u{7f}");
        for s in [
            String::new(),
            "plain".into(),
            "exactly8".into(),
            "sixteen bytes!!!".into(),
            every_byte.clone(),
            every_byte.repeat(3),
            // An escaped byte at every offset of a word, and after a borrow.
            "\"\\\n\u{1}\u{1f}ab\u{0}".into(),
            "abcdefg\"".into(),
            "\u{1}bcdefgh\"".into(),
            " !\u{1f}\u{20}#[]\\".into(),
        ] {
            for offset in 0..9 {
                let shifted = format!("{}{s}", "x".repeat(offset));
                same_as_serde_json(&Value::String(shifted));
            }
        }
    }

    #[test]
    fn values_are_written_as_serde_json_writes_them() {
        same_as_serde_json(&json!({
            "a": [1, -2, 3.5, 1e21, 0.1, null, true, false, u64::MAX, i64::MIN],
            "nested": {"empty": {}, "list": [], "s": "x\"y"},
            "z": "last"
        }));
        same_as_serde_json(&json!([[], {}, "", 0]));
    }

    #[test]
    fn objects_lead_with_type_meta_and_metadata_in_object_meta_order() {
        let obj = json!({
            "data": {"k": "v"},
            "apiVersion": "v1",
            "metadata": {
                "managedFields": [{"manager": "m"}],
                "uid": "u",
                "labels": {"a": "b"},
                "resourceVersion": "7",
                "name": "n",
                "zUnknown": 1,
                "namespace": "ns"
            },
            "kind": "ConfigMap",
            "binaryData": {}
        });
        let all = String::from_utf8(encode_object(&obj, MetadataMembers::All)).unwrap();
        assert_eq!(
            all,
            r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"n","namespace":"ns","uid":"u","resourceVersion":"7","labels":{"a":"b"},"zUnknown":1,"managedFields":[{"manager":"m"}]},"binaryData":{},"data":{"k":"v"}}"#
        );
        let stored =
            String::from_utf8(encode_object(&obj, MetadataMembers::WithoutResourceVersion))
                .unwrap();
        assert_eq!(stored, all.replace(r#""resourceVersion":"7","#, ""));
        assert_eq!(
            serde_json::from_str::<Value>(&all).unwrap(),
            obj,
            "the same object"
        );
        assert_eq!(encode_object(&json!("s"), MetadataMembers::All), b"\"s\"");
        assert_eq!(
            encode_object(&json!({"metadata": 1}), MetadataMembers::All),
            br#"{"metadata":1}"#
        );
    }
}
