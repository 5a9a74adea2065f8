//! The schema-driven encoder: an object's JSON form + a [`Message`] table →
//! protobuf wire bytes, as Go's generated `Marshal` writes them.
//!
//! Go's generated code writes fields in field-number order; non-pointer
//! scalars and structs always (zero values included), pointers, slices, maps
//! and `[]byte` only when set; map entries sorted by key. A field absent from
//! the JSON is therefore written as its zero value when the table says it is a
//! non-pointer (`Emit::OmitEmpty`/`OmitZero`: Go's JSON dropped it) and left
//! out otherwise.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Map, Value};

use crate::decode::{WIRE_FIXED64, WIRE_LEN, WIRE_VARINT};
use crate::error::EncodeError;
use crate::format;
use crate::table::{Card, Emit, Kind, Message};

/// Encodes `obj` as message `msg`, appending to `out`.
pub(crate) fn encode_message(
    msg: &'static Message,
    obj: &Map<String, Value>,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    for field in msg.fields {
        let at = |e: EncodeError| e.within(field.json);
        match field.card {
            Card::Inline => {
                let Kind::Msg(inner) = field.kind else {
                    continue;
                };
                nested(out, field.number, |buf| encode_message(inner, obj, buf))?;
            }
            Card::One => match obj.get(field.json).filter(|v| !v.is_null()) {
                Some(value) => encode_value(field.kind, field.number, value, out).map_err(at)?,
                // Go's JSON dropped a non-pointer field's zero value (or
                // wrote a zero time as null); its protobuf has it.
                None if field.emit != Emit::Always => encode_zero(field.kind, field.number, out),
                None => {}
            },
            Card::Repeated => {
                for (i, item) in array(obj.get(field.json)).map_err(at)?.iter().enumerate() {
                    encode_value(field.kind, field.number, item, out)
                        .map_err(|e| at(e.within(&format!("[{i}]"))))?;
                }
            }
            Card::Map => {
                let Some(entries) = object(obj.get(field.json)).map_err(at)? else {
                    continue;
                };
                let mut keys: Vec<&String> = entries.keys().collect();
                keys.sort();
                for key in keys {
                    nested(out, field.number, |entry| {
                        put_bytes(entry, 1, key.as_bytes());
                        encode_value(field.kind, 2, &entries[key], entry)
                    })
                    .map_err(|e| at(e.within(&format!("[{key}]"))))?;
                }
            }
        }
    }
    Ok(())
}

/// The zero value of a non-pointer field Go writes although JSON left it out.
fn encode_zero(kind: Kind, number: u32, out: &mut Vec<u8>) {
    match kind {
        Kind::Str => put_bytes(out, number, b""),
        Kind::Bool | Kind::Int32 | Kind::Int64 => put_varint_field(out, number, 0),
        Kind::Msg(inner) => {
            // A zero struct: its own non-pointer fields, zero.
            let _ = nested(out, number, |buf| encode_message(inner, &Map::new(), buf));
        }
        // A zero Time or MicroTime marshals to no bytes.
        Kind::Time | Kind::MicroTime => put_bytes(out, number, b""),
        Kind::IntOrString => put_bytes(out, number, &[0x08, 0, 0x10, 0, 0x1a, 0]),
        Kind::Quantity => put_bytes(out, number, &[0x0a, 1, b'0']),
        // []byte, float64 pointers, raw JSON: nil, not written.
        _ => {}
    }
}

/// Encodes one value of `kind` as field `number`.
fn encode_value(
    kind: Kind,
    number: u32,
    value: &Value,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    match kind {
        Kind::Str => put_bytes(out, number, string(value)?.as_bytes()),
        Kind::Bytes => {
            let decoded = BASE64
                .decode(string(value)?)
                .map_err(|e| EncodeError::invalid(format!("not base64: {e}")))?;
            put_bytes(out, number, &decoded);
        }
        Kind::Bool => {
            let b = value
                .as_bool()
                .ok_or_else(|| expected("a boolean", value))?;
            put_varint_field(out, number, u64::from(b));
        }
        Kind::Int32 | Kind::Int64 => put_varint_field(out, number, integer(value)? as u64),
        Kind::Double => {
            let f = value.as_f64().ok_or_else(|| expected("a number", value))?;
            put_tag(out, number, WIRE_FIXED64);
            out.extend_from_slice(&f.to_bits().to_le_bytes());
        }
        Kind::Time | Kind::MicroTime => {
            let mut timestamp = Vec::new();
            if let Some(text) = value.as_str() {
                let (seconds, nanos) = format::parse_rfc3339(text).ok_or_else(|| {
                    EncodeError::invalid(format!("{text:?} is not an RFC 3339 time"))
                })?;
                let nanos = if matches!(kind, Kind::Time) { 0 } else { nanos };
                put_varint_field(&mut timestamp, 1, seconds as u64);
                put_varint_field(&mut timestamp, 2, i64::from(nanos) as u64);
            } else if !value.is_null() {
                return Err(expected("a time string", value));
            }
            put_bytes(out, number, &timestamp);
        }
        Kind::Duration => {
            return Err(EncodeError::invalid(
                "metav1.Duration is not encoded".to_string(),
            ));
        }
        Kind::IntOrString => {
            let mut buf = Vec::new();
            match value {
                Value::String(s) => {
                    put_varint_field(&mut buf, 1, 1);
                    put_varint_field(&mut buf, 2, 0);
                    put_bytes(&mut buf, 3, s.as_bytes());
                }
                _ => {
                    put_varint_field(&mut buf, 1, 0);
                    put_varint_field(&mut buf, 2, integer(value)? as u64);
                    put_bytes(&mut buf, 3, b"");
                }
            }
            put_bytes(out, number, &buf);
        }
        Kind::Quantity => {
            let text = match value {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                other => return Err(expected("a quantity", other)),
            };
            nested(out, number, |buf| {
                put_bytes(buf, 1, text.as_bytes());
                Ok(())
            })?;
        }
        Kind::FieldsV1 | Kind::RawExtension | Kind::Json => {
            let raw = serde_json::to_vec(value).map_err(|e| EncodeError::invalid(e.to_string()))?;
            nested(out, number, |buf| {
                put_bytes(buf, 1, &raw);
                Ok(())
            })?;
        }
        Kind::Msg(inner) => {
            let obj = value
                .as_object()
                .ok_or_else(|| expected("an object", value))?;
            nested(out, number, |buf| encode_message(inner, obj, buf))?;
        }
        Kind::List(wrapper) => {
            let mut items = Map::new();
            items.insert("items".to_string(), value.clone());
            nested(out, number, |buf| encode_message(wrapper, &items, buf))?;
        }
        Kind::SchemaOrBool(schema) => nested(out, number, |buf| match value {
            Value::Bool(b) => {
                put_varint_field(buf, 1, u64::from(*b));
                Ok(())
            }
            _ => {
                put_varint_field(buf, 1, 1);
                encode_value(Kind::Msg(schema), 2, value, buf)
            }
        })?,
        Kind::SchemaOrArray(schema) => nested(out, number, |buf| match value {
            Value::Array(items) => items
                .iter()
                .try_for_each(|item| encode_value(Kind::Msg(schema), 2, item, buf)),
            _ => encode_value(Kind::Msg(schema), 1, value, buf),
        })?,
        Kind::SchemaOrStringArray(schema) => nested(out, number, |buf| match value {
            Value::Array(items) => items
                .iter()
                .try_for_each(|item| encode_value(Kind::Str, 2, item, buf)),
            _ => encode_value(Kind::Msg(schema), 1, value, buf),
        })?,
    }
    Ok(())
}

fn string(value: &Value) -> Result<&str, EncodeError> {
    value.as_str().ok_or_else(|| expected("a string", value))
}

fn integer(value: &Value) -> Result<i64, EncodeError> {
    value
        .as_i64()
        .or_else(|| {
            value
                .as_f64()
                .filter(|f| f.fract() == 0.0)
                .map(|f| f as i64)
        })
        .ok_or_else(|| expected("an integer", value))
}

fn array(value: Option<&Value>) -> Result<&[Value], EncodeError> {
    match value {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(other) => Err(expected("an array", other)),
    }
}

fn object(value: Option<&Value>) -> Result<Option<&Map<String, Value>>, EncodeError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(entries)) => Ok(Some(entries)),
        Some(other) => Err(expected("an object", other)),
    }
}

fn expected(what: &str, found: &Value) -> EncodeError {
    let found = match found {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    EncodeError::invalid(format!("expected {what}, found {found}"))
}

/// Writes field `number` as a length-delimited message built by `build`.
fn nested(
    out: &mut Vec<u8>,
    number: u32,
    build: impl FnOnce(&mut Vec<u8>) -> Result<(), EncodeError>,
) -> Result<(), EncodeError> {
    let mut buf = Vec::new();
    build(&mut buf)?;
    put_bytes(out, number, &buf);
    Ok(())
}

fn put_tag(out: &mut Vec<u8>, number: u32, wire_type: u8) {
    put_varint(out, (u64::from(number) << 3) | u64::from(wire_type));
}

fn put_varint_field(out: &mut Vec<u8>, number: u32, value: u64) {
    put_tag(out, number, WIRE_VARINT);
    put_varint(out, value);
}

pub(crate) fn put_bytes(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    put_tag(out, number, WIRE_LEN);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

pub(crate) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}
