//! Compact JSON for `serde_json::Value` trees: byte for byte what
//! `serde_json::to_vec` writes, but with strings escaped by a SIMD scan
//! (serde_json looks every byte up in a table: two-thirds of the cost of
//! encoding an object with a 1 KiB payload), and objects written in the member
//! order kube-apiserver writes them ([`encode_object`]): built-in kinds in
//! their Go structs' order, custom resources as Go writes the maps of an
//! `unstructured.Unstructured` (every object's members sorted, Go's number
//! text).

use serde_json::{Map, Value};

use crate::json_order;

/// `serde_json::from_slice`, with UTF-8 checked once for the whole input
/// ([`text`]) instead of string by string as serde_json checks a slice: the
/// same values, and for invalid UTF-8 the same errors (such input takes
/// serde_json's own path).
pub fn from_slice<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> serde_json::Result<T> {
    match text(bytes) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(bytes),
    }
}

/// A whole body as text, if it is UTF-8: `std::str::from_utf8`'s answer,
/// checked 32 bytes at a time (simdutf8) where std checks a word, a quarter
/// of its instructions on a ConfigMap's body.
pub fn text(bytes: &[u8]) -> Result<&str, simdutf8::basic::Utf8Error> {
    simdutf8::basic::from_utf8(bytes)
}

/// Writes `value` as compact JSON.
pub fn write_value(out: &mut Vec<u8>, value: &Value) {
    write_any::<false>(out, value);
}

/// [`write_value`], numbers as serde_json writes them or, with `GO_NUMBERS`,
/// as kube-apiserver writes an unstructured object's ([`write_go_number`]).
/// Objects' members come in the map's order: sorted, as Go sorts a map's
/// keys (byte order).
fn write_any<const GO_NUMBERS: bool>(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) if GO_NUMBERS => write_go_number(out, n),
        // Integers and floats exactly as serde_json formats them (itoa, ryu).
        Value::Number(n) => serde_json::to_writer(&mut *out, n).unwrap_or(()),
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_any::<GO_NUMBERS>(out, item);
            }
            out.push(b']');
        }
        Value::Object(map) => write_members::<GO_NUMBERS>(out, map.iter()),
    }
}

/// Writes `{…}` with these members, in this order.
fn write_members<'a, const GO_NUMBERS: bool>(
    out: &mut Vec<u8>,
    members: impl Iterator<Item = (&'a String, &'a Value)>,
) {
    out.push(b'{');
    for (i, (key, value)) in members.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, key);
        out.push(b':');
        write_any::<GO_NUMBERS>(out, value);
    }
    out.push(b'}');
}

/// A number of a custom resource as kube-apiserver writes it. Its
/// unstructured objects hold a JSON integer that fits an `int64` as one and
/// every other number as a `float64` (sigs.k8s.io/json), which Go writes as
/// `strconv` does with format `'f'`, or `'e'` below 1e-6 and from 1e21 on
/// (`1e+21`, `1e-7`), in the fewest digits that read back the same; and
/// every answer is the object read back from its stored JSON, where a
/// float's integral text (`1.0` stored as `1`, `-0.0` as `-0`) reads back as
/// an integer. So: `1.0` and `1e2` are written `1` and `100`, `-0.0` is
/// `0`, an integer beyond `int64` loses its low digits
/// (`12345678901234567890` is `12345678901234567000`).
fn write_go_number(out: &mut Vec<u8>, n: &serde_json::Number) {
    match (n.as_i64(), n.as_f64()) {
        (Some(_), _) => serde_json::to_writer(&mut *out, n).unwrap_or(()),
        (None, Some(f)) => write_go_float(out, f),
        (None, None) => serde_json::to_writer(&mut *out, n).unwrap_or(()),
    }
}

/// `f` as Go's encoding/json writes a `float64`, then read back as kube-apiserver
/// reads stored JSON (`-0` is the integer 0). Rust's shortest round-trip
/// digits are Go's; only the exponent's form differs (`e21` for Go's `e+21`).
fn write_go_float(out: &mut Vec<u8>, f: f64) {
    use std::io::Write;
    if f == 0.0 {
        out.push(b'0');
        return;
    }
    let abs = f.abs();
    if (1e-6..1e21).contains(&abs) {
        let _ = write!(out, "{f}");
        return;
    }
    let start = out.len();
    let _ = write!(out, "{f:e}");
    // Go's exponent is signed: `1e+21`, `1.5e+300` (`1e-7` is the same).
    if let Some(e) = out[start..].iter().position(|&b| b == b'e')
        && out.get(start + e + 1) != Some(&b'-')
    {
        out.insert(start + e + 1, b'+');
    }
}

/// Where `resourceVersion` goes in an encoding written without it: the
/// offset in the output, and whether a metadata member comes before it (then
/// it follows a comma). Known to the writer, so a write's answer needs no
/// scan to put the revision there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RevisionSlot {
    pub at: usize,
    pub after_member: bool,
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
/// `managedFields`), the object's other members in their own order, except
/// that a built-in kind's members, at every depth, come in its Go struct's
/// field order as kube-apiserver writes them ([`crate::json_order`]; members
/// its struct does not have follow in their own order). Not an object:
/// written as it is.
///
/// A custom resource (an `apiVersion` of no built-in group,
/// [`is_unstructured_api_version`]) is written as kube-apiserver writes its
/// `unstructured.Unstructured`: a map encoded by encoding/json, so every
/// object's members sorted by name at every depth (`apiVersion`, `kind`,
/// `metadata`, …; `metadata`'s and each managedFields entry's too) and its
/// numbers as Go's ([`write_go_number`]).
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
    let orders = json_order::orders();
    let root = match (leading[1], leading[0]) {
        (Some((_, Value::String(api_version))), Some((_, Value::String(kind)))) => {
            orders.kind(api_version, kind)
        }
        _ => None,
    };
    if root.is_none()
        && let Some((_, Value::String(api_version))) = leading[1]
        && is_unstructured_api_version(api_version)
    {
        return write_unstructured(out, map, metadata);
    }
    out.push(b'{');
    let mut written = 0;
    for (key, value) in leading.into_iter().flatten() {
        member_key(out, &mut written, key);
        match value {
            Value::Object(md) if key == "metadata" => {
                let object_meta = root.and_then(|_| orders.object_meta());
                out.push(b'{');
                for (i, (key, value)) in metadata_in_order(md, metadata).enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    write_str(out, key);
                    out.push(b':');
                    // Only these two of ObjectMeta's members hold structs.
                    let typed = match key.as_str() {
                        "ownerReferences" | "managedFields" => {
                            object_meta.and_then(|m| m.member(key))
                        }
                        _ => None,
                    };
                    write_typed(out, value, typed, orders);
                }
                out.push(b'}');
            }
            _ => write_value(out, value),
        }
    }
    match root {
        Some(root) => write_root_members(out, &mut written, map, root, orders),
        None => {
            for (key, value) in map.iter().filter(|(k, _)| leading_rank(k).is_none()) {
                member_key(out, &mut written, key);
                write_value(out, value);
            }
        }
    }
    out.push(b'}');
}

/// The members of a built-in kind's object after `kind`, `apiVersion` and
/// `metadata`, in its Go struct's order (members it does not have after).
fn write_root_members(
    out: &mut Vec<u8>,
    written: &mut usize,
    map: &Map<String, Value>,
    root: &json_order::Struct,
    orders: &json_order::Orders,
) {
    let leading = map.keys().filter(|k| leading_rank(k).is_some()).count();
    let before = *written;
    for (name, typed) in &root.members {
        if leading_rank(name).is_some() {
            continue;
        }
        if let Some(value) = map.get(*name) {
            member_key(out, written, name);
            write_typed(out, value, *typed, orders);
        }
    }
    if *written - before + leading < map.len() {
        let unknown = map
            .iter()
            .filter(|(k, _)| leading_rank(k).is_none() && !root.has(k));
        for (key, value) in unknown {
            member_key(out, written, key);
            write_value(out, value);
        }
    }
}

/// [`encode_object_into`] of a [`crate::DynamicObject`]: the bytes it writes
/// for `obj.to_value()` (a test holds the two equal), the metadata written
/// straight from its typed fields, so no JSON is built for it on a write.
/// An object of a kind whose order is unknown is written the plain way.
///
/// Where `resourceVersion` goes, when it is left out and the metadata was
/// written from the typed fields.
pub fn encode_dynamic_into(
    out: &mut Vec<u8>,
    obj: &crate::DynamicObject,
    metadata: MetadataMembers,
) -> Option<RevisionSlot> {
    let Value::Object(map) = &obj.body else {
        encode_object_into(out, &obj.to_value(), metadata);
        return None;
    };
    let text = |key: &str| map.get(key).and_then(Value::as_str);
    let orders = json_order::orders();
    let root = match (text("apiVersion"), text("kind")) {
        (Some(api_version), Some(kind)) => orders.kind(api_version, kind),
        _ => None,
    };
    let unstructured = text("apiVersion").is_some_and(is_unstructured_api_version);
    let mut written = 0;
    let slot = match root {
        None if unstructured => {
            // Sorted members: `metadata` goes where its name falls.
            out.push(b'{');
            let mut slot = None;
            let mut metadata_written = false;
            for (key, value) in map {
                if !metadata_written && key.as_str() > "metadata" {
                    member_key(out, &mut written, "metadata");
                    slot = obj.metadata.write_json_sorted(out, metadata);
                    metadata_written = true;
                }
                member_key(out, &mut written, key);
                write_any::<true>(out, value);
            }
            if !metadata_written {
                member_key(out, &mut written, "metadata");
                slot = obj.metadata.write_json_sorted(out, metadata);
            }
            slot
        }
        None => {
            encode_object_into(out, &obj.to_value(), metadata);
            return None;
        }
        Some(root) => {
            out.push(b'{');
            for key in ["kind", "apiVersion"] {
                if let Some(value) = map.get(key) {
                    member_key(out, &mut written, key);
                    write_value(out, value);
                }
            }
            member_key(out, &mut written, "metadata");
            let slot = obj.metadata.write_json_with(out, metadata);
            write_root_members(out, &mut written, map, root, orders);
            slot
        }
    };
    out.push(b'}');
    slot
}

/// A value of an unstructured object (a custom resource's), as Go writes
/// it: members sorted, Go's numbers.
pub(crate) fn write_unstructured_value(out: &mut Vec<u8>, value: &Value) {
    write_any::<true>(out, value);
}

/// kube-apiserver's own API groups, sorted: those of the kinds it serves
/// ([`crate::json_order`]'s table; a unit test holds the two together) and
/// those of the types it writes without serving them (admission and
/// discovery documents, tables, audit events). An object of any other group
/// is a custom resource.
const BUILT_IN_GROUPS: [&str; 30] = [
    "admission.k8s.io",
    "admissionregistration.k8s.io",
    "apidiscovery.k8s.io",
    "apiextensions.k8s.io",
    "apiregistration.k8s.io",
    "apiserver.k8s.io",
    "apps",
    "audit.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
    "events.k8s.io",
    "extensions",
    "flowcontrol.apiserver.k8s.io",
    "imagepolicy.k8s.io",
    "internal.apiserver.k8s.io",
    "lifecycle.k8s.io",
    "meta.k8s.io",
    "networking.k8s.io",
    "node.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "resource.k8s.io",
    "scheduling.k8s.io",
    "storage.k8s.io",
    "storagemigration.k8s.io",
];

/// Whether objects of `api_version` are custom resources, which
/// kube-apiserver holds unstructured and writes sorted ([`encode_object`]):
/// a group that is none of its own (`v1`, the core group's, is).
pub fn is_unstructured_api_version(api_version: &str) -> bool {
    api_version
        .split_once('/')
        .is_some_and(|(group, _)| BUILT_IN_GROUPS.binary_search(&group).is_err())
}

/// A custom resource as kube-apiserver writes it: its map's members in
/// their (sorted) order at every depth, Go's numbers, `metadata` without
/// `resourceVersion` when `keep` says so.
fn write_unstructured(out: &mut Vec<u8>, map: &Map<String, Value>, keep: MetadataMembers) {
    out.push(b'{');
    let mut written = 0;
    for (key, value) in map {
        member_key(out, &mut written, key);
        match value {
            Value::Object(md)
                if key == "metadata" && keep == MetadataMembers::WithoutResourceVersion =>
            {
                write_members::<true>(out, md.iter().filter(|(k, _)| *k != "resourceVersion"));
            }
            _ => write_any::<true>(out, value),
        }
    }
    out.push(b'}');
}

/// Writes `value`, which Go holds as `typed` (`None`: no struct inside), its
/// structs' members in their Go order.
fn write_typed(
    out: &mut Vec<u8>,
    value: &Value,
    typed: Option<json_order::Typed>,
    orders: &json_order::Orders,
) {
    let Some(typed) = typed else {
        return write_value(out, value);
    };
    let inner = || {
        Some(json_order::Typed {
            wrappers: &typed.wrappers[2..],
            id: typed.id,
        })
    };
    match (typed.wrappers.get(..2), value) {
        (Some("[]"), Value::Array(items)) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_typed(out, item, inner(), orders);
            }
            out.push(b']');
        }
        (Some("{}"), Value::Object(map)) => {
            out.push(b'{');
            for (i, (key, value)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, key);
                out.push(b':');
                write_typed(out, value, inner(), orders);
            }
            out.push(b'}');
        }
        (None, Value::Object(map)) => write_struct(out, map, orders.get(typed.id), orders),
        _ => write_value(out, value),
    }
}

/// Writes `map`, a value of Go struct `order`: its members in the struct's
/// order, then any the struct does not have in their own order.
///
/// Why a merge: the map's keys and the struct's sorted names are both in
/// byte order, so one pass over both places each present member at its Go
/// position (a lookup per struct member would search the map for every
/// absent one: most of a PodSpec's 43).
fn write_struct(
    out: &mut Vec<u8>,
    map: &Map<String, Value>,
    order: &json_order::Struct,
    orders: &json_order::Orders,
) {
    /// More members than this (none of 1.37's structs has) are looked up one by one.
    const MERGED: usize = 64;
    let members = &order.members;
    let mut present: [Option<&Value>; MERGED] = [None; MERGED];
    let mut unknown = false;
    let merged = members.len() <= MERGED;
    if merged {
        let mut names = order.sorted.iter().peekable();
        for (key, value) in map {
            while names.next_if(|(name, _)| *name < key.as_str()).is_some() {}
            match names.next_if(|(name, _)| *name == key.as_str()) {
                Some((_, rank)) => present[*rank as usize] = Some(value),
                None => unknown = true,
            }
        }
    }
    out.push(b'{');
    let mut written = 0;
    for (rank, (name, typed)) in members.iter().enumerate() {
        let value = if merged {
            present[rank]
        } else {
            map.get(*name)
        };
        if let Some(value) = value {
            member_key(out, &mut written, name);
            write_typed(out, value, *typed, orders);
        }
    }
    if unknown || (!merged && written < map.len()) {
        for (key, value) in map.iter().filter(|(k, _)| !order.has(k)) {
            member_key(out, &mut written, key);
            write_value(out, value);
        }
    }
    out.push(b'}');
}

/// Starts an object member: the comma after the `written` ones, `"key":`.
#[inline]
fn member_key(out: &mut Vec<u8>, written: &mut usize, key: &str) {
    if *written > 0 {
        out.push(b',');
    }
    *written += 1;
    write_str(out, key);
    out.push(b':');
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
pub fn object_meta_rank(key: &str) -> Option<usize> {
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

/// Whether `bytes` hold `<`, `>`, `&` or the lead byte of U+2028 and U+2029
/// (E2 80 A8/A9): most strings have none. Long ones are searched by
/// `memchr`'s vector kernels (a third of the word-at-a-time scan's
/// instructions on a 1 KiB value), shorter ones a word at a time, for which a
/// call to `memchr` costs more than the scan.
fn has_html_unsafe_byte(bytes: &[u8]) -> bool {
    /// From this length on, `memchr`'s setup pays for itself.
    const VECTOR_SCAN: usize = 256;
    if bytes.len() >= VECTOR_SCAN {
        return memchr::memchr3(b'<', b'>', b'&', bytes).is_some()
            || memchr::memchr(0xE2, bytes).is_some();
    }
    has_html_unsafe_word(bytes)
}

/// [`has_html_unsafe_byte`] a word at a time.
fn has_html_unsafe_word(bytes: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // Whether some byte of `word` is `byte` (exact: a byte of `x` is zero).
    let holds = |word: u64, byte: u8| {
        let x = word ^ (ONES * u64::from(byte));
        x.wrapping_sub(ONES) & !x & HIGHS != 0
    };
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let word = u64::from_le_bytes(word.try_into().unwrap_or_default());
        // `<` (3C) and `>` (3E) differ in one bit.
        if holds(word | (ONES * 0x02), b'>') | holds(word, b'&') | holds(word, 0xE2) {
            return true;
        }
    }
    words
        .remainder()
        .iter()
        .any(|&b| matches!(b, b'<' | b'>' | b'&' | 0xE2))
}

/// Writes `s` as a JSON string, escaped as Go's `encoding/json` escapes (what
/// kube-apiserver writes): `"` and `\\`, control characters (short forms
/// where JSON has them, else `\u00xx`), as serde_json does, and also `<`,
/// `>`, `&`, U+2028 and U+2029 as `\u003c`, `\u003e`, `\u0026`,
/// `\u2028` and `\u2029` (Go's HTML-safe escaping, on by default). The scan
/// for what needs escaping is SIMD (`json-escape-simd`, sonic-rs's kernel:
/// ten times fewer instructions than a table lookup per byte; a vectorized
/// scan for the HTML-unsafe characters, which most strings lack).
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    if let Some(short) = short_plain(s) {
        out.reserve(short.len() + 2);
        out.push(b'"');
        out.extend_from_slice(short);
        out.push(b'"');
        return;
    }
    write_str_scanned(out, s);
}

/// [`write_str`] of `prefix` followed by `s`, where `prefix` needs no
/// escaping (a field set's `f:` keys), without joining them first.
pub fn write_prefixed_str(out: &mut Vec<u8>, prefix: &str, s: &str) {
    if let Some(short) = short_plain(s) {
        out.reserve(prefix.len() + short.len() + 2);
        out.push(b'"');
        out.extend_from_slice(prefix.as_bytes());
        out.extend_from_slice(short);
        out.push(b'"');
        return;
    }
    let start = out.len();
    write_str_scanned(out, s);
    // After the opening quote.
    out.splice(start + 1..start + 1, prefix.bytes());
}

/// Strings at most this long are scanned a byte at a time first: most keys
/// and values are short, and for them the SIMD kernel's setup and the HTML
/// scan cost more than the string (about 270 instructions a string against
/// 60; a create writes some forty).
const SHORT: usize = 32;

/// The bytes of `s` when it is short and needs no escaping at all.
#[inline]
fn short_plain(s: &str) -> Option<&[u8]> {
    let bytes = s.as_bytes();
    (bytes.len() <= SHORT && !may_escape(bytes)).then_some(bytes)
}

/// Whether some byte of `bytes` is [`ESCAPED`]: a word at a time (half the
/// instructions of a table lookup per byte), the rest by the table.
#[inline]
fn may_escape(bytes: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // Whether some byte of `word` is zero (exact as a yes or no).
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let word = u64::from_le_bytes(word.try_into().unwrap_or_default());
        let control = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
        let flagged = control
            | zero_byte(word ^ (ONES * u64::from(b'"')))
            | zero_byte(word ^ (ONES * u64::from(b'\\')))
            // `<` (3C) and `>` (3E) differ in one bit.
            | zero_byte((word | (ONES * 0x02)) ^ (ONES * u64::from(b'>')))
            | zero_byte(word ^ (ONES * u64::from(b'&')))
            | zero_byte(word ^ (ONES * 0xE2));
        if flagged != 0 {
            return true;
        }
    }
    words.remainder().iter().any(|&b| ESCAPED[usize::from(b)])
}

/// Whether Go's encoder may escape this byte: `"`, backslash, control characters,
/// `<`, `>`, `&`, and 0xE2 (the lead byte of U+2028 and U+2029).
const ESCAPED: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 0x20 {
        table[byte] = true;
        byte += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table[b'<' as usize] = true;
    table[b'>' as usize] = true;
    table[b'&' as usize] = true;
    table[0xE2] = true;
    table
};

/// [`write_str`] by the SIMD escape and the HTML scan (the plain way, which
/// the short path must equal).
fn write_str_scanned(out: &mut Vec<u8>, s: &str) {
    if !has_html_unsafe_byte(s.as_bytes()) {
        json_escape_simd::escape_into(s, out);
        return;
    }
    let start = out.len();
    json_escape_simd::escape_into(s, out);
    // The escaped text holds these characters only where `s` had them.
    let escaped = out.split_off(start);
    let mut at = 0;
    while at < escaped.len() {
        let (replacement, len): (&[u8], usize) = match &escaped[at..] {
            [b'<', ..] => (br"\u003c", 1),
            [b'>', ..] => (br"\u003e", 1),
            [b'&', ..] => (br"\u0026", 1),
            [0xE2, 0x80, 0xA8, ..] => (br"\u2028", 3),
            [0xE2, 0x80, 0xA9, ..] => (br"\u2029", 3),
            [byte, ..] => {
                out.push(*byte);
                at += 1;
                continue;
            }
            [] => break,
        };
        out.extend_from_slice(replacement);
        at += len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    proptest::proptest! {
        /// `text` gives std's answer: the same text for UTF-8, an error for
        /// anything else (bytes, and valid text with one byte broken at
        /// any place, past the vector width too).
        #[test]
        fn text_is_std_s_from_utf8(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
            valid in "\\PC{0,120}",
            at in 0usize..1000,
            broken in 0x80u8..=0xff,
        ) {
            proptest::prop_assert_eq!(text(&bytes).ok(), std::str::from_utf8(&bytes).ok());
            let mut damaged = valid.clone().into_bytes();
            damaged.extend_from_slice(b"0123456789abcdef0123456789abcdef0123456789abcdef");
            let at = at % damaged.len();
            damaged[at] = broken;
            proptest::prop_assert_eq!(text(valid.as_bytes()).ok(), Some(valid.as_str()));
            proptest::prop_assert_eq!(text(&damaged).is_ok(), std::str::from_utf8(&damaged).is_ok());
        }
    }

    /// A DELETE's answer, a `metav1.Status`, in its Go struct's order as
    /// kube-apiserver 1.37.2 writes it (`status` before `details`; the
    /// details' `name`, `group`, `kind`, `uid`; `code` last).
    #[test]
    fn a_status_is_written_in_its_go_struct_order() {
        let status = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": {"name": "delme", "group": "apps", "kind": "deployments", "uid": "u"},
            "code": 200,
        });
        assert_eq!(
            String::from_utf8(encode_object(&status, MetadataMembers::All)).unwrap(),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","details":{"name":"delme","group":"apps","kind":"deployments","uid":"u"},"code":200}"#
        );
    }

    /// The word-at-a-time check answers as the table does, with every byte
    /// value at every position of strings around a word's length.
    #[test]
    fn may_escape_answers_as_the_table() {
        for len in 1..=SHORT + 1 {
            for at in 0..len {
                for byte in 0..=255u8 {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = byte;
                    let table = bytes.iter().any(|&b| ESCAPED[usize::from(b)]);
                    assert_eq!(may_escape(&bytes), table, "{len} {at} {byte}");
                }
            }
        }
    }

    /// Both scans for HTML-unsafe bytes answer as a byte-by-byte check, at
    /// every length around the words' and the vector scan's boundaries and
    /// with the byte at every position.
    #[test]
    fn html_unsafe_scans_answer_as_a_byte_check() {
        let plain = |b: &[u8]| b.iter().any(|&c| matches!(c, b'<' | b'>' | b'&' | 0xE2));
        for len in (0..40).chain(240..300).chain([1024, 1031]) {
            let clean = vec![b'a'; len];
            assert!(!has_html_unsafe_byte(&clean) && !has_html_unsafe_word(&clean));
            for at in 0..len {
                for byte in [b'<', b'>', b'&', 0xE2, b'=', b'?', 0xE3, b'%'] {
                    let mut bytes = clean.clone();
                    bytes[at] = byte;
                    assert_eq!(
                        has_html_unsafe_byte(&bytes),
                        plain(&bytes),
                        "{len} {at} {byte}"
                    );
                    assert_eq!(
                        has_html_unsafe_word(&bytes),
                        plain(&bytes),
                        "{len} {at} {byte}"
                    );
                }
            }
        }
    }

    /// The short path writes what the SIMD path writes, for every short
    /// string over bytes that escape and bytes that do not (every pair, and
    /// pseudo-random strings up to and past [`SHORT`]).
    #[test]
    fn short_strings_are_written_as_the_scanned_path_writes_them() {
        let alphabet = [
            "a", "Z", "0", "-", ".", "/", "\"", "\\", "\n", "\u{1}", "\u{1f}", "<", ">", "&", "é",
            "\u{2028}", "\u{2029}", "\u{2027}", "€", "😀", " ",
        ];
        let check = |s: &str| {
            let (mut fast, mut plain) = (Vec::new(), Vec::new());
            write_str(&mut fast, s);
            write_str_scanned(&mut plain, s);
            assert_eq!(fast, plain, "{s:?}");
        };
        for a in alphabet {
            for b in alphabet {
                check(&format!("{a}{b}"));
            }
        }
        let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..20_000 {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let len = (seed >> 58) as usize;
            let s: String = (0..len)
                .map(|i| alphabet[((seed >> (i % 50)) as usize + i * 7) % alphabet.len()])
                .collect();
            check(&s);
        }
    }

    /// serde_json's text with Go's HTML-safe escapes on top (serde_json
    /// writes these characters only inside strings).
    fn same_as_serde_json(value: &Value) {
        let mut ours = Vec::new();
        write_value(&mut ours, value);
        let go = serde_json::to_string(value)
            .unwrap()
            .replace('<', r"\u003c")
            .replace('>', r"\u003e")
            .replace('&', r"\u0026")
            .replace('\u{2028}', r"\u2028")
            .replace('\u{2029}', r"\u2029");
        assert_eq!(String::from_utf8(ours).unwrap(), go);
    }

    /// A prefixed string is written as the joined string would be, short or
    /// long, plain or escaped, after what the buffer held.
    #[test]
    fn a_prefixed_string_is_written_as_the_joined_one() {
        let long = "x".repeat(40);
        let long_escaped = format!("{long}<\"\u{2028}");
        for s in [
            "",
            "name",
            "a<b",
            "q\"",
            long.as_str(),
            long_escaped.as_str(),
        ] {
            let mut joined = b"[".to_vec();
            write_str(&mut joined, &format!("f:{s}"));
            let mut prefixed = b"[".to_vec();
            write_prefixed_str(&mut prefixed, "f:", s);
            assert_eq!(prefixed, joined, "{s}");
        }
    }

    /// What Go's `json.Marshal` writes for these strings.
    #[test]
    fn html_characters_are_escaped_as_go_escapes_them() {
        for (s, go) in [
            (
                "<b> & 'q' \u{2028}\u{2029}",
                r#""\u003cb\u003e \u0026 'q' \u2028\u2029""#,
            ),
            ("a\"b\n\u{1}<", r#""a\"b\n\u0001\u003c""#),
            ("€ é", r#""€ é""#),
        ] {
            let mut out = b"x".to_vec();
            write_str(&mut out, s);
            assert_eq!(String::from_utf8(out).unwrap(), format!("x{go}"));
        }
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

    /// Go's encoding of this Pod (k8s.io/api v0.37.2's structs, as
    /// kube-apiserver writes it): members in the structs' order at every depth, inside metadata's managedFields and ownerReferences too;
    /// maps' keys sorted; a member the struct lacks after the known ones.
    #[test]
    fn built_in_kinds_are_written_in_go_field_order() {
        let pod = json!({
            "status": {"qosClass": "BestEffort", "phase": "Pending"},
            "spec": {"restartPolicy": "Always", "containers": [{"resources": {},
                "name": "c", "image": "busybox", "imagePullPolicy": "Always",
                "env": [{"value": "1", "name": "A"}]}],
                "nodeSelector": {"z": "1", "a": "2"}},
            "metadata": {"name": "p", "ownerReferences": [{"uid": "u", "name": "o",
                "kind": "K", "apiVersion": "v1", "controller": true}],
                "managedFields": [{"time": "t", "operation": "Update", "manager": "m",
                "fieldsV1": {"f:spec": {}}, "fieldsType": "FieldsV1", "apiVersion": "v1"}]},
            "apiVersion": "v1",
            "kind": "Pod",
            "zz": 1,
            "aa": 2
        });
        assert_eq!(
            String::from_utf8(encode_object(&pod, MetadataMembers::All)).unwrap(),
            concat!(
                r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","#,
                r#""ownerReferences":[{"apiVersion":"v1","kind":"K","name":"o","uid":"u","controller":true}],"#,
                r#""managedFields":[{"manager":"m","operation":"Update","apiVersion":"v1","time":"t","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}}}]},"#,
                r#""spec":{"containers":[{"name":"c","image":"busybox","env":[{"name":"A","value":"1"}],"resources":{},"imagePullPolicy":"Always"}],"#,
                r#""restartPolicy":"Always","nodeSelector":{"a":"2","z":"1"}},"#,
                r#""status":{"phase":"Pending","qosClass":"BestEffort"},"aa":2,"zz":1}"#
            )
        );
        // A kind of a built-in group the table does not have (an aggregated
        // server's) keeps type meta and metadata first, then its members'
        // own order.
        let unknown = json!({"kind": "Gadget", "apiVersion": "v1", "status": "Success",
            "details": {"name": "w", "kind": "widgets"}, "metadata": {}});
        assert_eq!(
            String::from_utf8(encode_object(&unknown, MetadataMembers::All)).unwrap(),
            r#"{"kind":"Gadget","apiVersion":"v1","metadata":{},"details":{"kind":"widgets","name":"w"},"status":"Success"}"#
        );
    }

    /// kube-apiserver 1.37.2's answer for this custom resource (a create
    /// answer, normalized: docs/research/serialization/upstream): every
    /// object's members sorted, metadata's and managedFields entries' and
    /// ownerReferences' too, `resourceVersion` between `ownerReferences` and
    /// `uid`; HTML escaped.
    #[test]
    fn custom_resources_are_written_as_go_writes_unstructured_objects() {
        let widget = json!({
            "kind": "Widget",
            "apiVersion": "serialization.kubext.dev/v1",
            "metadata": {
                "name": "owned", "namespace": "serialization", "uid": "UID",
                "resourceVersion": "RV", "generation": 1, "creationTimestamp": "TIME",
                "labels": {"b": "1", "a": "2"},
                "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "sparse",
                    "uid": "UID", "controller": true, "blockOwnerDeletion": true}],
                "finalizers": ["serialization.kubext.dev/keep"],
                "managedFields": [{"manager": "serialization.test", "operation": "Update",
                    "apiVersion": "serialization.kubext.dev/v1", "time": "TIME",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {".": {}, "f:size": {}}}}]
            },
            "spec": {"size": 1, "html": "<&>"}
        });
        let served = concat!(
            r#"{"apiVersion":"serialization.kubext.dev/v1","kind":"Widget","metadata":{"#,
            r#""creationTimestamp":"TIME","finalizers":["serialization.kubext.dev/keep"],"generation":1,"#,
            r#""labels":{"a":"2","b":"1"},"managedFields":[{"apiVersion":"serialization.kubext.dev/v1","#,
            r#""fieldsType":"FieldsV1","fieldsV1":{"f:spec":{".":{},"f:size":{}}},"manager":"serialization.test","#,
            r#""operation":"Update","time":"TIME"}],"name":"owned","namespace":"serialization","#,
            r#""ownerReferences":[{"apiVersion":"v1","blockOwnerDeletion":true,"controller":true,"#,
            r#""kind":"ConfigMap","name":"sparse","uid":"UID"}],"resourceVersion":"RV","uid":"UID"},"#,
            r#""spec":{"html":"\u003c\u0026\u003e","size":1}}"#
        );
        let all = String::from_utf8(encode_object(&widget, MetadataMembers::All)).unwrap();
        assert_eq!(all, served);
        let stored = String::from_utf8(encode_object(
            &widget,
            MetadataMembers::WithoutResourceVersion,
        ))
        .unwrap();
        assert_eq!(stored, served.replace(r#""resourceVersion":"RV","#, ""));
        assert_eq!(serde_json::from_str::<Value>(&all).unwrap(), widget);
        // The core group and built-in groups are not custom resources.
        for (api_version, unstructured) in [
            ("serialization.kubext.dev/v1", true),
            ("gateway.networking.k8s.io/v1", true),
            ("metrics.k8s.io/v1beta1", true),
            ("v1", false),
            ("apps/v1", false),
            ("networking.k8s.io/v1", false),
            ("meta.k8s.io/v1", false),
            ("", false),
        ] {
            assert_eq!(
                is_unstructured_api_version(api_version),
                unstructured,
                "{api_version}"
            );
        }
    }

    /// What Go writes for each number in an unstructured object once read
    /// back from its stored JSON (sigs.k8s.io/json's decoding, encoding/json's
    /// encoding, twice: measured with apimachinery v0.37.2).
    #[test]
    fn custom_resources_numbers_are_gos() {
        for (input, go) in [
            ("1.0", "1"),
            ("1e2", "100"),
            ("-0.0", "0"),
            ("-0", "0"),
            ("1.5", "1.5"),
            ("12345678901234567890", "12345678901234567000"),
            ("18446744073709551615", "18446744073709552000"),
            ("-9223372036854775809", "-9223372036854776000"),
            ("9223372036854775807", "9223372036854775807"),
            ("-9223372036854775808", "-9223372036854775808"),
            ("100000000000000000000", "100000000000000000000"),
            ("1e21", "1e+21"),
            ("-1e21", "-1e+21"),
            ("1.5e300", "1.5e+300"),
            ("1.7976931348623157e308", "1.7976931348623157e+308"),
            ("0.000001", "0.000001"),
            ("0.0000012345", "0.0000012345"),
            ("1e-7", "1e-7"),
            ("2.5e-7", "2.5e-7"),
            ("-2.5e-7", "-2.5e-7"),
            ("1e-10", "1e-10"),
            ("123e-20", "1.23e-18"),
            ("5e-324", "5e-324"),
            ("123456789.123456789", "123456789.12345679"),
            ("0.3333333333333333", "0.3333333333333333"),
            ("0.30000000000000004", "0.30000000000000004"),
            ("0.1", "0.1"),
            ("4.35", "4.35"),
            ("1e15", "1000000000000000"),
            ("1e16", "10000000000000000"),
        ] {
            let value: Value =
                serde_json::from_str(&format!(r#"{{"apiVersion":"x.io/v1","n":[{input}]}}"#))
                    .unwrap();
            let written = String::from_utf8(encode_object(&value, MetadataMembers::All)).unwrap();
            assert_eq!(
                written,
                format!(r#"{{"apiVersion":"x.io/v1","n":[{go}]}}"#),
                "{input}"
            );
        }
        // The largest float below 1e21 (serde_json, without its
        // `float_roundtrip`, reads the text `9.999999999999999e20` as 1e21).
        let value = json!({"apiVersion": "x.io/v1", "n": 9.999999999999999e20});
        assert_eq!(
            encode_object(&value, MetadataMembers::All),
            br#"{"apiVersion":"x.io/v1","n":999999999999999900000}"#
        );
    }

    /// Every group of the member-order table's kinds is one of
    /// [`BUILT_IN_GROUPS`], which is sorted (it is binary-searched).
    #[test]
    fn built_in_groups_hold_every_built_in_kinds_group() {
        assert!(BUILT_IN_GROUPS.windows(2).all(|w| w[0] < w[1]));
        let table = include_str!("../data/go-member-order.tsv");
        let mut kinds = 0;
        for line in table.lines().filter(|l| l.starts_with("kind\t")) {
            let api_version = line.split('\t').nth(1).unwrap();
            assert!(!is_unstructured_api_version(api_version), "{line}");
            kinds += 1;
        }
        assert!(kinds > 100, "{kinds} kinds");
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
            r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"n","namespace":"ns","uid":"u","resourceVersion":"7","labels":{"a":"b"},"zUnknown":1,"managedFields":[{"manager":"m"}]},"data":{"k":"v"},"binaryData":{}}"#
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
