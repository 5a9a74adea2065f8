//! Request bodies as upstream's strict decoding sees them (`fieldValidation`):
//! duplicate fields in JSON and YAML, unknown fields in a built-in kind's
//! JSON in the body's own order, and server-side apply's typed check.
//!
//! Hot path: a body is parsed once ([`decode`]), into the value serde_json
//! would build, noting whether any object repeats a key. Everything else here
//! runs only for a body that has something to report: a repeated key, or
//! unknown fields the schema walk found.
//!
//! What upstream reports, measured against kube-apiserver 1.37.2:
//! - a built-in kind's JSON (`sigs.k8s.io/json` into the Go type): unknown
//!   and duplicate fields as the decoder meets them (`unknown field
//!   "spec.x"`, `duplicate field "spec.replicas"`), nothing inside unknown
//!   fields or values decoded whole (RawExtension, Quantity);
//! - a custom resource's JSON (decoded into `map[string]interface{}`): every
//!   duplicate, in document order, then the unknown fields;
//! - YAML (either): the YAML decoder's error first (`yaml: unmarshal
//!   errors:\n  line 9: key "foo" already set in map`, one line per repeat,
//!   the line of the repeated value), then the unknown fields;
//! - server-side apply: undeclared fields fail the apply whatever
//!   `fieldValidation` says (structured-merge-diff, a 500), duplicates are
//!   the YAML decoder's (`error strict decoding patch: ...`).

use std::fmt::{self, Write as _};

use bytes::Bytes;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use apimachinery::StatusError;
use apimachinery::gofmt;
use apimachinery::meta;
use apimachinery::strict::{ValueSeed, field_path, push_strict_error};
use registry::ResourceType;

use crate::negotiate::{self, BodyKind};

/// The start of the YAML decoder's strict error, as upstream words it.
const YAML_ERRORS: &str = "yaml: unmarshal errors:\n";

/// A decoded body, kept for its strict errors.
pub struct Body {
    pub kind: BodyKind,
    pub bytes: Bytes,
    /// An object in it repeats a key (the last value was kept).
    pub duplicates: bool,
}

impl Body {
    fn is_yaml(&self) -> bool {
        matches!(self.kind, BodyKind::Yaml | BodyKind::ApplyPatch)
    }
}

/// [`negotiate::decode`], noting repeated keys instead of refusing them:
/// upstream keeps the last, and reports them as `fieldValidation` says.
pub fn decode(kind: BodyKind, bytes: Bytes) -> Result<(Value, Body), StatusError> {
    let parsed = match kind {
        BodyKind::Yaml | BodyKind::ApplyPatch => {
            let text = std::str::from_utf8(&bytes).map_err(|_| {
                StatusError::bad_request("the body of the request is not valid UTF-8")
            })?;
            parse_yaml(text).map_err(|e| format!("yaml: {e}"))
        }
        BodyKind::Protobuf => {
            let value = negotiate::decode(kind, &bytes)?;
            return Ok((
                value,
                Body {
                    kind,
                    bytes,
                    duplicates: false,
                },
            ));
        }
        _ => apimachinery::strict::from_json_slice(&bytes)
            .map_err(|e| format!("json parse error: {e}")),
    };
    let (value, duplicates) = parsed.map_err(|e| {
        StatusError::bad_request(format!(
            "the object provided is unrecognized: couldn't get version/kind; {e}"
        ))
    })?;
    Ok((
        value,
        Body {
            kind,
            bytes,
            duplicates,
        },
    ))
}

/// The YAML parser's options: repeated keys passed on to the value's
/// visitor, which keeps the last and notes them.
fn yaml_options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        duplicate_keys: serde_saphyr::DuplicateKeyPolicy::PassThrough,
    }
}

fn parse_yaml(text: &str) -> Result<(Value, bool), serde_saphyr::Error> {
    let (value, duplicates) = apimachinery::strict::noting_duplicates(|| {
        serde_saphyr::with_deserializer_from_str_with_options(text, yaml_options(), |de| {
            ValueSeed.deserialize(de)
        })
    });
    Ok((value?, duplicates))
}

/// The strict errors of a create's or update's body, in upstream's order:
/// `unknown` are the unknown fields the schema walk found (for a custom
/// resource in upstream's order already; a built-in kind's in key order).
/// Empty when there is nothing to report.
pub fn strict_errors(rtype: &ResourceType, body: &Body, unknown: &[String]) -> Vec<String> {
    let unknown_texts = || {
        unknown
            .iter()
            .map(|f| format!("unknown field {}", gofmt::quote(f)))
    };
    let mut errors = Vec::new();
    if body.is_yaml() {
        let duplicates = if body.duplicates {
            std::str::from_utf8(&body.bytes)
                .map(yaml_duplicates)
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        if !duplicates.is_empty() {
            errors.push(format!("{YAML_ERRORS}  {}", duplicates.join("\n  ")));
        }
        errors.extend(unknown_texts());
        return errors;
    }
    if body.kind != BodyKind::Json || (!body.duplicates && unknown.is_empty()) {
        errors.extend(unknown_texts());
        return errors;
    }
    let gvk = openapi::Gvk::new(&rtype.group, &rtype.version, &rtype.kind);
    match openapi::builtin_schema_node(&gvk).filter(|_| rtype.structured) {
        // Read again in the body's order, with the type's schema.
        Some(root) => match typed_errors(&body.bytes, root) {
            Some(found) => found,
            None => unknown_texts().collect(),
        },
        None => {
            if body.duplicates {
                errors = apimachinery::strict::duplicate_fields(&body.bytes);
            }
            errors.extend(unknown_texts());
            errors
        }
    }
}

/// `<Kind> in version "<version>" cannot be handled as a <Kind>: strict
/// decoding error: ...` (a 400).
pub fn strict_error(rtype: &ResourceType, errors: &[String]) -> StatusError {
    StatusError::bad_request(format!(
        "{kind} in version \"{version}\" cannot be handled as a {kind}: strict decoding error: {}",
        errors.join(", "),
        kind = rtype.kind,
        version = rtype.version,
    ))
}

/// The `Warning` texts for strict errors: one each, the YAML decoder's error
/// one per line (upstream's `parseYAMLWarnings`).
pub fn warnings(errors: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for e in errors {
        match e.strip_prefix(YAML_ERRORS) {
            Some(lines) => out.extend(lines.split('\n').map(|l| l.trim().to_string())),
            None => out.push(e.clone()),
        }
    }
    out
}

/// An apply configuration's repeated keys, as upstream's apply answers them
/// (`fieldValidation=Strict`: a 400; `Warn`: [`warnings`] of it).
pub fn apply_duplicates(body: &Body) -> Option<String> {
    if !body.duplicates {
        return None;
    }
    let lines = yaml_duplicates(std::str::from_utf8(&body.bytes).ok()?);
    (!lines.is_empty()).then(|| format!("{YAML_ERRORS}  {}", lines.join("\n  ")))
}

/// Upstream's 400 for an apply configuration with repeated keys.
pub fn apply_duplicates_error(duplicates: &str) -> StatusError {
    StatusError::bad_request(format!(
        "error strict decoding patch: error converting YAML to JSON: {duplicates}"
    ))
}

// ---------------------------------------------------------------------------
// A built-in kind's JSON, in the body's order
// ---------------------------------------------------------------------------

/// Unknown and duplicate fields of a built-in kind's JSON body as upstream's
/// typed decoder meets them; `None` if the body does not parse.
fn typed_errors(bytes: &[u8], root: openapi::SchemaNode) -> Option<Vec<String>> {
    let mut scan = TypedScan {
        path: String::new(),
        errors: Vec::new(),
    };
    let mut de = serde_json::Deserializer::from_slice(bytes);
    TypedSeed {
        scan: &mut scan,
        node: Some(root),
    }
    .deserialize(&mut de)
    .ok()?;
    Some(scan.errors)
}

struct TypedScan {
    /// Upstream's strict field stack: `spec.ports[0]`.
    path: String,
    errors: Vec<String>,
}

impl TypedScan {
    fn error(&mut self, what: &str, key: &str) {
        let error = format!("{what} {}", gofmt::quote(&field_path(&self.path, key)));
        push_strict_error(&mut self.errors, error);
    }
}

/// One value and its schema node (`None`: decoded whole, not looked into).
struct TypedSeed<'a> {
    scan: &'a mut TypedScan,
    node: Option<openapi::SchemaNode>,
}

impl<'de> DeserializeSeed<'de> for TypedSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TypedSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Some(items) = self.node.and_then(|n| n.items()) else {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            return Ok(());
        };
        let scan = self.scan;
        let mut i = 0usize;
        loop {
            let len = scan.path.len();
            let _ = write!(scan.path, "[{i}]");
            let more = seq.next_element_seed(TypedSeed {
                scan: &mut *scan,
                node: Some(items),
            })?;
            scan.path.truncate(len);
            if more.is_none() {
                return Ok(());
            }
            i += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Some(node) = self.node.filter(|n| !n.is_free()) else {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            return Ok(());
        };
        let scan = self.scan;
        let mut seen: Vec<String> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            match node.member(&key) {
                openapi::Member::Known(child) => {
                    if seen.contains(&key) {
                        scan.error("duplicate field", &key);
                    } else {
                        seen.push(key.clone());
                    }
                    let len = scan.path.len();
                    if len > 0 {
                        scan.path.push('.');
                    }
                    scan.path.push_str(&key);
                    map.next_value_seed(TypedSeed {
                        scan: &mut *scan,
                        node: Some(child),
                    })?;
                    scan.path.truncate(len);
                }
                openapi::Member::Free => {
                    map.next_value::<IgnoredAny>()?;
                }
                openapi::Member::Unknown => {
                    scan.error("unknown field", &key);
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// YAML's repeated keys
// ---------------------------------------------------------------------------

/// The YAML decoder's lines for repeated keys (go-yaml v2's strict mode, as
/// upstream's `YAMLToJSONStrict` runs it): `line 9: key "foo" already set
/// in map`, the line where the repeated value starts, a map's inner repeats
/// before its own. Empty when the text does not parse.
pub fn yaml_duplicates(text: &str) -> Vec<String> {
    let node = serde_saphyr::with_deserializer_from_str_with_options(text, yaml_options(), |de| {
        <YNode as de::Deserialize>::deserialize(de)
    });
    let mut out = Vec::new();
    if let Ok(node) = node {
        node.duplicates(&mut out);
    }
    out
}

/// A YAML node with what go-yaml tells keys apart by: their resolved values.
enum YNode {
    Map(Vec<(YKey, serde_saphyr::Spanned<YNode>)>),
    Seq(Vec<YNode>),
    Scalar,
}

#[derive(PartialEq)]
enum YKey {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    /// A map or list as a key (go-yaml refuses it).
    Other,
}

impl YKey {
    /// Go's `%#v` of the decoded key.
    fn go_syntax(&self) -> String {
        match self {
            YKey::Null => "<nil>".into(),
            YKey::Bool(b) => b.to_string(),
            YKey::Int(i) => i.to_string(),
            YKey::Float(f) => gofmt::format_float(*f),
            YKey::Str(s) => gofmt::quote(s),
            YKey::Other => "map[interface {}]interface {}{}".into(),
        }
    }
}

impl YNode {
    fn duplicates(&self, out: &mut Vec<String>) {
        match self {
            YNode::Map(entries) => {
                let mut seen: Vec<&YKey> = Vec::with_capacity(entries.len());
                for (key, value) in entries {
                    value.value.duplicates(out);
                    if seen.contains(&key) {
                        out.push(format!(
                            "line {}: key {} already set in map",
                            value.referenced.line(),
                            key.go_syntax()
                        ));
                    } else {
                        seen.push(key);
                    }
                }
            }
            YNode::Seq(items) => items.iter().for_each(|i| i.duplicates(out)),
            YNode::Scalar => {}
        }
    }
}

impl<'de> de::Deserialize<'de> for YNode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = YNode;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a YAML node")
    }

    fn visit_bool<E>(self, _: bool) -> Result<YNode, E> {
        Ok(YNode::Scalar)
    }

    fn visit_i64<E>(self, _: i64) -> Result<YNode, E> {
        Ok(YNode::Scalar)
    }

    fn visit_i128<E>(self, _: i128) -> Result<YNode, E> {
        Ok(YNode::Scalar)
    }

    fn visit_u64<E>(self, _: u64) -> Result<YNode, E> {
        Ok(YNode::Scalar)
    }

    fn visit_u128<E>(self, _: u128) -> Result<YNode, E> {
        Ok(YNode::Scalar)
    }

    fn visit_f64<E>(self, _: f64) -> Result<YNode, E> {
        Ok(YNode::Scalar)
    }

    fn visit_str<E>(self, _: &str) -> Result<YNode, E> {
        Ok(YNode::Scalar)
    }

    fn visit_bytes<E>(self, _: &[u8]) -> Result<YNode, E> {
        Ok(YNode::Scalar)
    }

    fn visit_unit<E>(self) -> Result<YNode, E> {
        Ok(YNode::Scalar)
    }

    fn visit_none<E>(self) -> Result<YNode, E> {
        Ok(YNode::Scalar)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<YNode, D::Error> {
        d.deserialize_any(NodeVisitor)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<YNode, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<YNode>()? {
            items.push(item);
        }
        Ok(YNode::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<YNode, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<YKey>()? {
            let value = map.next_value::<serde_saphyr::Spanned<YNode>>()?;
            entries.push((key, value));
        }
        Ok(YNode::Map(entries))
    }
}

impl<'de> de::Deserialize<'de> for YKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = YKey;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a YAML key")
    }

    fn visit_bool<E>(self, v: bool) -> Result<YKey, E> {
        Ok(YKey::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<YKey, E> {
        Ok(YKey::Int(v.into()))
    }

    fn visit_i128<E>(self, v: i128) -> Result<YKey, E> {
        Ok(YKey::Int(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<YKey, E> {
        Ok(YKey::Int(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<YKey, E> {
        Ok(YKey::Float(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<YKey, E> {
        Ok(YKey::Str(v.to_string()))
    }

    fn visit_unit<E>(self) -> Result<YKey, E> {
        Ok(YKey::Null)
    }

    fn visit_none<E>(self) -> Result<YKey, E> {
        Ok(YKey::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<YKey, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(YKey::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<YKey, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(YKey::Other)
    }
}

// ---------------------------------------------------------------------------
// Server-side apply's typed check
// ---------------------------------------------------------------------------

/// Server-side apply's conversion of the configuration with the type's
/// schema: fields it does not declare (and associative lists' repeated or
/// unkeyed items) fail the apply with upstream's 500 (no reason), whatever
/// `fieldValidation` says.
pub fn apply_typed_check(rtype: &ResourceType, config: &Value) -> Result<(), StatusError> {
    let errors = if rtype.structured {
        let gvk = openapi::Gvk::new(&rtype.group, &rtype.version, &rtype.kind);
        openapi::builtin_apply_errors(&gvk, config, rtype.patch_schema())
    } else {
        rtype
            .openapi_schema
            .as_ref()
            .map(|schema| openapi::custom_apply_errors(schema, config))
    };
    let errors = match errors {
        Some(errors) if !errors.is_empty() => errors,
        _ => return Ok(()),
    };
    let mut texts: Vec<String> = errors.iter().map(render_apply_error).collect();
    let text = if texts.len() == 1 {
        texts.remove(0)
    } else {
        format!("errors:\n  {}", texts.join("\n  "))
    };
    let str_at = |field: &str| meta::str_field(config, field).unwrap_or("");
    Err(StatusError::new(
        500,
        "",
        format!(
            "failed to create typed patch object ({}/{}; {}/{}, Kind={}): {text}",
            str_at("namespace"),
            str_at("name"),
            rtype.group,
            rtype.version,
            rtype.kind,
        ),
    ))
}

/// structured-merge-diff's `ValidationError`: `path: message`.
fn render_apply_error(e: &openapi::ApplyError) -> String {
    let message = match &e.kind {
        openapi::Finding::Undeclared => "field not declared in schema".to_string(),
        openapi::Finding::DuplicateEntries(step) => {
            format!("duplicate entries for key {}", render_step(step))
        }
        openapi::Finding::OmitsAllKeys { element, keys } => {
            let keys: Vec<String> = keys.iter().map(|k| gofmt::quote(k)).collect();
            format!(
                "element {element}: associative list with keys has an element that omits all key fields [{}] (and doesn't have default values for any key fields)",
                keys.join(" ")
            )
        }
        openapi::Finding::NullElement { element } => {
            format!("element {element}: associative list with keys may not have a null element")
        }
        openapi::Finding::NotAMap { element } => {
            format!("element {element}: associative list with keys may not have non-map elements")
        }
        openapi::Finding::MapInSet { element } => format!(
            "element {element}: associative list without keys has an element that's a map type"
        ),
        openapi::Finding::ListInSet { element } => {
            format!("element {element}: not supported: associative list with lists as elements")
        }
    };
    let path: String = e.path.iter().map(render_step).collect();
    if path.is_empty() {
        message
    } else {
        format!("{path}: {message}")
    }
}

/// A path element as structured-merge-diff prints it: `.name`,
/// `[port=80,protocol="TCP"]`, `[="a"]`, `[0]`.
fn render_step(step: &openapi::PathStep) -> String {
    match step {
        openapi::PathStep::Field(name) => format!(".{name}"),
        openapi::PathStep::Key(fields) => {
            let parts: Vec<String> = fields
                .iter()
                .map(|(k, v)| format!("{k}={}", go_value(v)))
                .collect();
            format!("[{}]", parts.join(","))
        }
        openapi::PathStep::Value(v) => format!("[={}]", go_value(v)),
        openapi::PathStep::Index(i) => format!("[{i}]"),
    }
}

/// structured-merge-diff's `value.ToString`.
fn go_value(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Number(n) if n.is_f64() => gofmt::format_float(n.as_f64().unwrap_or(0.0)),
        Value::Number(n) => n.to_string(),
        Value::String(s) => gofmt::quote(s),
        Value::Bool(b) => b.to_string(),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(go_value).collect();
            format!("[{}]", parts.join(","))
        }
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| format!("{k}={}", go_value(v)))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_repeats_as_go_yaml_reports_them() {
        // Measured against kube-apiserver 1.37.2.
        let text = "apiVersion: mygroup.example.com/v1beta1
kind: fvtestb
metadata:
  name: x
  zmeta: 1
  labels: {a: b, a: c}
zroot: 1
spec:
  foo: a
  foo: b
  template:
    apiVersion: v1
    kind: K
    metadata:
      name: nn
      bogus: 1
  bar:
    x: 1
  bar:
    y: 1
    y: 2
aroot: 2
";
        assert_eq!(
            yaml_duplicates(text),
            [
                r#"line 6: key "a" already set in map"#,
                r#"line 10: key "foo" already set in map"#,
                "line 21: key true already set in map",
                r#"line 20: key "bar" already set in map"#,
            ]
        );
        let (value, dup) = parse_yaml(text).unwrap();
        assert!(dup);
        assert_eq!(value["spec"]["foo"], "b");
        assert_eq!(value["spec"]["bar"], serde_json::json!({"y": 2}));
        // JSON is YAML: repeats on one line.
        assert_eq!(
            yaml_duplicates(r#"{"spec":{"replicas":1,"replicas":2}}"#),
            [r#"line 1: key "replicas" already set in map"#]
        );
        assert!(yaml_duplicates("a: 1\nb: {c: 1}\n").is_empty());
        assert_eq!(
            warnings(&[
                format!(
                    "{YAML_ERRORS}  line 6: key \"a\" already set in map\n  line 9: key \"b\" already set in map"
                ),
                "unknown field \"x\"".into()
            ]),
            [
                r#"line 6: key "a" already set in map"#,
                r#"line 9: key "b" already set in map"#,
                r#"unknown field "x""#
            ]
        );
    }
}
