//! Go's `encoding/json` text of API values where upstream's messages embed
//! them (`field.Invalid` and `field.Duplicate` marshal a bad value that is no
//! string, number or bool): struct members in Go's field order, either with
//! the versioned types' JSON names and `omitempty` (declarative validation
//! runs on the versioned object) or with the internal types' Go field names,
//! every member written and nil as `null` (handwritten validation runs on the
//! internal object). A type's shape is data: a [`Go`] per type.
//!
//! Strings are escaped as Go escapes them (`<`, `>` and `&` as `\u003c`...).
//! Raw JSON (`RawExtension`) is written compact with sorted keys; upstream
//! keeps the client's key order.

use serde_json::Value;

/// A Go type as `encoding/json` writes it.
pub(super) enum Go {
    /// A string (and quantities): `""` when unset.
    Str,
    /// Any integer: `0` when unset.
    Int,
    /// A `bool`: `false` when unset.
    Bool,
    /// A pointer: `null` when unset.
    Ptr(&'static Go),
    /// A slice: `null` when unset.
    Slice(&'static Go),
    /// A map (keys sorted, as Go writes them): `null` when unset.
    Map(&'static Go),
    /// A struct value, its members in Go's order (embedded structs flattened).
    Struct(&'static [Member]),
    /// JSON written as given: a `RawExtension`, a `[]byte` (base64 text).
    Raw,
}

/// One member of a struct.
pub(super) struct Member {
    json: &'static str,
    /// The internal type's Go field name; `None` where the internal type has
    /// JSON tags too (`metav1` types), so `omitempty` applies in both forms.
    go: Option<&'static str>,
    omitempty: bool,
    ty: &'static Go,
}

impl Member {
    /// A member named `json` in the versioned type and `go` in the internal one.
    pub(super) const fn new(
        json: &'static str,
        go: &'static str,
        omitempty: bool,
        ty: &'static Go,
    ) -> Self {
        Member {
            json,
            go: Some(go),
            omitempty,
            ty,
        }
    }

    /// A member of a type that has the same JSON tags in both forms.
    pub(super) const fn tagged(json: &'static str, omitempty: bool, ty: &'static Go) -> Self {
        Member {
            json,
            go: None,
            omitempty,
            ty,
        }
    }
}

pub(super) const STR: Go = Go::Str;
pub(super) const INT: Go = Go::Int;
pub(super) const BOOL: Go = Go::Bool;
pub(super) const RAW: Go = Go::Raw;
pub(super) const STRINGS: Go = Go::Slice(&STR);
pub(super) const STRING_MAP: Go = Go::Map(&STR);
pub(super) const INT_PTR: Go = Go::Ptr(&INT);
pub(super) const BOOL_PTR: Go = Go::Ptr(&BOOL);
pub(super) const STR_PTR: Go = Go::Ptr(&STR);

/// Which struct members are written, and under which names.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Form {
    /// `k8s.io/api` types: JSON names, `omitempty` honoured.
    Versioned,
    /// `pkg/apis/<group>` types: Go field names, every member written.
    Internal,
}

/// `json.Marshal` of `value` (absent or `null`: Go's zero value) as a `ty`.
pub(super) fn render(value: Option<&Value>, ty: &Go, form: Form) -> String {
    let mut out = String::new();
    write(&mut out, value.filter(|v| !v.is_null()), ty, form);
    out
}

fn write(out: &mut String, value: Option<&Value>, ty: &Go, form: Form) {
    match (ty, value) {
        (Go::Str, Some(Value::String(s))) => out.push_str(&go_string(s)),
        (Go::Str, None) => out.push_str("\"\""),
        (Go::Int, None) => out.push('0'),
        (Go::Bool, None) => out.push_str("false"),
        (Go::Ptr(_) | Go::Slice(_) | Go::Map(_) | Go::Raw, None) => out.push_str("null"),
        (Go::Ptr(inner), Some(v)) => write(out, Some(v), inner, form),
        (Go::Slice(item), Some(Value::Array(items))) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(out, Some(v).filter(|v| !v.is_null()), item, form);
            }
            out.push(']');
        }
        (Go::Map(item), Some(Value::Object(map))) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&go_string(k));
                out.push(':');
                write(out, Some(v).filter(|v| !v.is_null()), item, form);
            }
            out.push('}');
        }
        (Go::Struct(members), v) => write_struct(out, v, members, form),
        (_, Some(v)) => raw(out, v),
    }
}

fn write_struct(out: &mut String, value: Option<&Value>, members: &[Member], form: Form) {
    out.push('{');
    let mut first = true;
    for m in members {
        let v = value.and_then(|v| v.get(m.json)).filter(|v| !v.is_null());
        let honours_omitempty = form == Form::Versioned || m.go.is_none();
        if m.omitempty && honours_omitempty && is_empty(v, m.ty) {
            continue;
        }
        if !first {
            out.push(',');
        }
        first = false;
        let name = match form {
            Form::Versioned => m.json,
            Form::Internal => m.go.unwrap_or(m.json),
        };
        out.push_str(&go_string(name));
        out.push(':');
        write(out, v, m.ty, form);
    }
    out.push('}');
}

/// What `omitempty` leaves out: zero scalars, nil pointers, empty slices and
/// maps (never a struct value).
fn is_empty(value: Option<&Value>, ty: &Go) -> bool {
    match (ty, value) {
        (Go::Struct(_), _) => false,
        (_, None) => true,
        (Go::Ptr(_), Some(_)) => false,
        (_, Some(Value::String(s))) => s.is_empty(),
        (_, Some(Value::Number(n))) => n.as_f64() == Some(0.0),
        (_, Some(Value::Bool(b))) => !b,
        (_, Some(Value::Array(a))) => a.is_empty(),
        (_, Some(Value::Object(m))) => m.is_empty(),
        (_, Some(Value::Null)) => true,
    }
}

/// Compact JSON, strings escaped as Go escapes them.
fn raw(out: &mut String, value: &Value) {
    match value {
        Value::String(s) => out.push_str(&go_string(s)),
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                raw(out, v);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&go_string(k));
                out.push(':');
                raw(out, v);
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// A JSON string as `encoding/json` escapes it (HTML-safe).
pub(super) fn go_string(s: &str) -> String {
    let json = Value::from(s).to_string();
    if !json.contains(['<', '>', '&', '\u{2028}', '\u{2029}']) {
        return json;
    }
    json.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PAIR: Go = Go::Struct(&[
        Member::new("name", "Name", false, &STR),
        Member::new("count", "Count", true, &INT),
        Member::new("items", "Items", true, &STRINGS),
        Member::new("flag", "Flag", true, &BOOL_PTR),
    ]);

    #[test]
    fn versioned_honours_omitempty_and_internal_writes_every_member() {
        let v = json!({"items": ["<a>"], "name": "x", "flag": false});
        assert_eq!(
            render(Some(&v), &PAIR, Form::Versioned),
            r#"{"name":"x","items":["\u003ca\u003e"],"flag":false}"#
        );
        assert_eq!(
            render(Some(&json!({})), &PAIR, Form::Internal),
            r#"{"Name":"","Count":0,"Items":null,"Flag":null}"#
        );
    }
}
