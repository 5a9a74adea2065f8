//! The schema-driven decoder: protobuf wire bytes + a [`Message`] table → JSON.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Map, Value};

use crate::table::{Card, Emit, Kind, Message};
use crate::wire::{Fields, WireValue, read_varint};
use crate::{DecodeError, format};

/// Nesting limit for messages (the deepest built-in type nests ~15 levels).
pub(crate) const MAX_DEPTH: usize = 100;

pub(crate) const WIRE_VARINT: u8 = 0;
pub(crate) const WIRE_FIXED64: u8 = 1;
pub(crate) const WIRE_LEN: u8 = 2;

/// What has been seen on the wire for one field of a message being decoded.
enum Acc<'a> {
    /// Scalars and well-known types: the last occurrence wins.
    Last(WireValue<'a>),
    /// Nested messages: every occurrence is merged, which for protobuf is the
    /// same as decoding the concatenation of the occurrences.
    Parts(Vec<&'a [u8]>),
    /// Repeated fields.
    Items(Vec<Value>),
    /// Maps; a later duplicate key replaces an earlier one.
    Entries(Map<String, Value>),
}

/// Decodes one encoded message as described by `msg` into a JSON object.
pub(crate) fn decode_message(
    msg: &'static Message,
    buf: &[u8],
    depth: usize,
) -> Result<Map<String, Value>, DecodeError> {
    if depth > MAX_DEPTH {
        return Err(DecodeError::TooDeep);
    }
    let mut accs: Vec<Option<Acc<'_>>> = Vec::new();
    accs.resize_with(msg.fields.len(), || None);

    for item in Fields::new(buf) {
        let (number, value) = item?;
        // Unknown fields are skipped; the iterator already consumed them.
        let Some((idx, field)) = msg.field(number) else {
            continue;
        };
        let slot = &mut accs[idx];
        let at = |e: DecodeError| e.within(name_of(field.json, field.card));
        match field.card {
            Card::One if !is_message_kind(field.kind) => {
                expect_wire(field.kind, &value).map_err(at)?;
                *slot = Some(Acc::Last(value));
            }
            Card::One | Card::Inline => {
                let WireValue::Len(bytes) = value else {
                    return Err(at(wrong_wire(WIRE_LEN, &value)));
                };
                match slot {
                    Some(Acc::Parts(parts)) => parts.push(bytes),
                    _ => *slot = Some(Acc::Parts(vec![bytes])),
                }
            }
            Card::Repeated => {
                if !matches!(slot, Some(Acc::Items(_))) {
                    *slot = Some(Acc::Items(Vec::new()));
                }
                let Some(Acc::Items(items)) = slot else {
                    continue;
                };
                let index = items.len();
                let at_item = |e: DecodeError| at(e.within(&format!("[{index}]")));
                match (field.kind, value) {
                    // Packed repeated scalars (proto2 Kubernetes types are unpacked,
                    // but accept both as protobuf requires).
                    (Kind::Bool | Kind::Int32 | Kind::Int64, WireValue::Len(mut packed)) => {
                        while !packed.is_empty() {
                            let v = read_varint(&mut packed).map_err(at_item)?;
                            let v = decode_value(field.kind, WireValue::Varint(v), depth)
                                .map_err(at_item)?;
                            items.push(v);
                        }
                    }
                    (kind, value) => {
                        let v = decode_value(kind, value, depth).map_err(at_item)?;
                        items.push(v);
                    }
                }
            }
            Card::Map => {
                let WireValue::Len(entry) = value else {
                    return Err(at(wrong_wire(WIRE_LEN, &value)));
                };
                if !matches!(slot, Some(Acc::Entries(_))) {
                    *slot = Some(Acc::Entries(Map::new()));
                }
                let Some(Acc::Entries(entries)) = slot else {
                    continue;
                };
                let (key, v) = decode_map_entry(field.kind, entry, depth).map_err(at)?;
                entries.insert(key, v);
            }
        }
    }

    let mut out = Map::new();
    let mut inlined = Vec::new();
    for (field, acc) in msg.fields.iter().zip(accs) {
        let Some(acc) = acc else { continue };
        let at = |e: DecodeError| e.within(name_of(field.json, field.card));
        match acc {
            Acc::Last(value) => {
                let v = decode_value(field.kind, value, depth).map_err(at)?;
                if keep(field.kind, field.emit, &v) {
                    out.insert(field.json.to_string(), v);
                }
            }
            Acc::Parts(parts) => {
                let joined;
                let bytes = match parts.as_slice() {
                    [one] => *one,
                    many => {
                        joined = many.concat();
                        &joined
                    }
                };
                match (field.kind, field.card) {
                    (Kind::Msg(inner), Card::Inline) => {
                        inlined.push(decode_message(inner, bytes, depth + 1).map_err(at)?);
                    }
                    (kind, _) => {
                        let v = decode_value(kind, WireValue::Len(bytes), depth).map_err(at)?;
                        if keep(field.kind, field.emit, &v) {
                            out.insert(field.json.to_string(), v);
                        }
                    }
                }
            }
            Acc::Items(items) => {
                if !items.is_empty() {
                    out.insert(field.json.to_string(), Value::Array(items));
                }
            }
            Acc::Entries(entries) => {
                if !entries.is_empty() {
                    out.insert(field.json.to_string(), Value::Object(entries));
                }
            }
        }
    }
    // Go's encoding/json: a field of the outer struct wins over an embedded one.
    for obj in inlined {
        for (k, v) in obj {
            out.entry(k).or_insert(v);
        }
    }
    Ok(out)
}

fn name_of(json: &'static str, card: Card) -> &'static str {
    if card == Card::Inline {
        "(inline)"
    } else {
        json
    }
}

/// A map entry message: key = 1 (string), value = 2. Missing parts take the
/// zero value, as in Go.
fn decode_map_entry(
    kind: Kind,
    entry: &[u8],
    depth: usize,
) -> Result<(String, Value), DecodeError> {
    let mut key = String::new();
    let mut value = None;
    for item in Fields::new(entry) {
        match item? {
            (1, WireValue::Len(k)) => key = String::from_utf8_lossy(k).into_owned(),
            (1, other) => return Err(wrong_wire(WIRE_LEN, &other)),
            (2, v) => value = Some(v),
            _ => {}
        }
    }
    let value = value.unwrap_or_else(|| zero_wire(kind));
    let v = decode_value(kind, value, depth).map_err(|e| e.within(&format!("[{key}]")))?;
    Ok((key, v))
}

/// Kinds whose repeated occurrences of one (non-repeated) field are merged.
fn is_message_kind(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Msg(_)
            | Kind::SchemaOrBool(_)
            | Kind::SchemaOrArray(_)
            | Kind::SchemaOrStringArray(_)
    )
}

/// The wire type values of `kind` are written with.
pub(crate) fn wire_type_of(kind: Kind) -> u8 {
    match kind {
        Kind::Bool | Kind::Int32 | Kind::Int64 => WIRE_VARINT,
        Kind::Double => WIRE_FIXED64,
        _ => WIRE_LEN,
    }
}

fn zero_wire(kind: Kind) -> WireValue<'static> {
    match wire_type_of(kind) {
        WIRE_VARINT => WireValue::Varint(0),
        WIRE_FIXED64 => WireValue::Fixed64(0),
        _ => WireValue::Len(&[]),
    }
}

fn wrong_wire(expected: u8, found: &WireValue<'_>) -> DecodeError {
    DecodeError::WrongWireType {
        expected,
        found: found.wire_type(),
    }
}

fn expect_wire(kind: Kind, value: &WireValue<'_>) -> Result<(), DecodeError> {
    let expected = wire_type_of(kind);
    if value.wire_type() == expected {
        Ok(())
    } else {
        Err(wrong_wire(expected, value))
    }
}

/// Decodes a single value of `kind`.
fn decode_value(kind: Kind, value: WireValue<'_>, depth: usize) -> Result<Value, DecodeError> {
    expect_wire(kind, &value)?;
    let (varint, bytes) = match value {
        WireValue::Varint(v) | WireValue::Fixed64(v) => (v, &[][..]),
        WireValue::Len(b) => (0, b),
        other => return Err(wrong_wire(WIRE_LEN, &other)),
    };
    Ok(match kind {
        Kind::Str => Value::String(String::from_utf8_lossy(bytes).into_owned()),
        Kind::Bytes => Value::String(BASE64.encode(bytes)),
        Kind::Bool => Value::Bool(varint != 0),
        // Go decodes int32 fields by truncating the (sign-extended) varint.
        Kind::Int32 => Value::from(varint as i32),
        Kind::Int64 => Value::from(varint as i64),
        Kind::Time => {
            let (seconds, _nanos) = timestamp(bytes)?;
            // An empty message is Go's zero time; JSON null, like MarshalJSON.
            if bytes.is_empty() {
                Value::Null
            } else {
                format::time(seconds)
                    .map_err(DecodeError::InvalidValue)?
                    .map_or(Value::Null, Value::String)
            }
        }
        Kind::MicroTime => {
            let (seconds, nanos) = timestamp(bytes)?;
            if bytes.is_empty() {
                Value::Null
            } else {
                format::micro_time(seconds, nanos)
                    .map_err(DecodeError::InvalidValue)?
                    .map_or(Value::Null, Value::String)
            }
        }
        Kind::Duration => {
            let mut nanos = 0i64;
            for item in Fields::new(bytes) {
                match item? {
                    (1, WireValue::Varint(v)) => nanos = v as i64,
                    (1, other) => return Err(wrong_wire(WIRE_VARINT, &other)),
                    _ => {}
                }
            }
            Value::String(format::go_duration(nanos))
        }
        Kind::IntOrString => int_or_string(bytes)?,
        Kind::Quantity => {
            // Go's zero Quantity marshals as "0".
            let mut s = Value::String("0".to_string());
            for item in Fields::new(bytes) {
                match item? {
                    (1, WireValue::Len(b)) => {
                        s = Value::String(String::from_utf8_lossy(b).into_owned());
                    }
                    (1, other) => return Err(wrong_wire(WIRE_LEN, &other)),
                    _ => {}
                }
            }
            s
        }
        Kind::Double => format::go_float(f64::from_bits(varint)),
        Kind::Json => embedded_json(raw_field(bytes)?, "JSON", depth, false)?,
        Kind::SchemaOrBool(schema) => schema_or_bool(bytes, schema, depth)?,
        Kind::SchemaOrArray(schema) => schema_or_list(bytes, schema, depth, Kind::Msg(schema))?,
        Kind::SchemaOrStringArray(schema) => schema_or_list(bytes, schema, depth, Kind::Str)?,
        Kind::FieldsV1 => embedded_json(raw_field(bytes)?, "FieldsV1", depth, false)?,
        Kind::RawExtension => embedded_json(raw_field(bytes)?, "RawExtension", depth, true)?,
        Kind::Msg(msg) => Value::Object(decode_message(msg, bytes, depth + 1)?),
        Kind::List(wrapper) => {
            let mut obj = decode_message(wrapper, bytes, depth + 1)?;
            // A nil Go slice marshals as null.
            obj.remove("items").unwrap_or(Value::Null)
        }
    })
}

/// `JSONSchemaPropsOrBool {allows = 1, schema = 2}`: the schema when there
/// is one, else the bool.
fn schema_or_bool(
    bytes: &[u8],
    schema: &'static Message,
    depth: usize,
) -> Result<Value, DecodeError> {
    let mut parts = Vec::new();
    let mut allows = false;
    for item in Fields::new(bytes) {
        match item? {
            (2, WireValue::Len(b)) => parts.push(b),
            (1, WireValue::Varint(v)) => allows = v != 0,
            (1, other) => return Err(wrong_wire(WIRE_VARINT, &other)),
            (2, other) => return Err(wrong_wire(WIRE_LEN, &other)),
            _ => {}
        }
    }
    if parts.is_empty() {
        return Ok(Value::Bool(allows));
    }
    Ok(Value::Object(decode_message(
        schema,
        &parts.concat(),
        depth + 1,
    )?))
}

/// `JSONSchemaPropsOr{Array,StringArray} {schema = 1, items = 2}`: the items
/// when there are any, else the schema, else null.
fn schema_or_list(
    bytes: &[u8],
    schema: &'static Message,
    depth: usize,
    item: Kind,
) -> Result<Value, DecodeError> {
    let mut parts = Vec::new();
    let mut items = Vec::new();
    for field in Fields::new(bytes) {
        match field? {
            (1, WireValue::Len(b)) => parts.push(b),
            (2, value) => items.push(decode_value(item, value, depth + 1)?),
            (1, other) => return Err(wrong_wire(WIRE_LEN, &other)),
            _ => {}
        }
    }
    if !items.is_empty() {
        return Ok(Value::Array(items));
    }
    if parts.is_empty() {
        return Ok(Value::Null);
    }
    Ok(Value::Object(decode_message(
        schema,
        &parts.concat(),
        depth + 1,
    )?))
}

/// `Timestamp {seconds = 1, nanos = 2}` (missing fields are zero).
fn timestamp(bytes: &[u8]) -> Result<(i64, i32), DecodeError> {
    let (mut seconds, mut nanos) = (0i64, 0i32);
    for item in Fields::new(bytes) {
        match item? {
            (1, WireValue::Varint(v)) => seconds = v as i64,
            (2, WireValue::Varint(v)) => nanos = v as i32,
            (1 | 2, other) => return Err(wrong_wire(WIRE_VARINT, &other)),
            _ => {}
        }
    }
    Ok((seconds, nanos))
}

/// `IntOrString {type = 1 (0 = Int, 1 = String), intVal = 2, strVal = 3}`.
fn int_or_string(bytes: &[u8]) -> Result<Value, DecodeError> {
    let (mut ty, mut int_val, mut str_val) = (0i64, 0i32, "".into());
    for item in Fields::new(bytes) {
        match item? {
            (1, WireValue::Varint(v)) => ty = v as i64,
            (2, WireValue::Varint(v)) => int_val = v as i32,
            (3, WireValue::Len(b)) => str_val = String::from_utf8_lossy(b),
            (1 | 2, other) => return Err(wrong_wire(WIRE_VARINT, &other)),
            (3, other) => return Err(wrong_wire(WIRE_LEN, &other)),
            _ => {}
        }
    }
    match ty {
        0 => Ok(Value::from(int_val)),
        1 => Ok(Value::String(str_val.into_owned())),
        other => Err(DecodeError::InvalidValue(format!(
            "IntOrString has impossible type {other} (0 = int, 1 = string)"
        ))),
    }
}

/// The `raw = 1` bytes of `FieldsV1` / `RawExtension`.
fn raw_field(bytes: &[u8]) -> Result<&[u8], DecodeError> {
    let mut raw: &[u8] = &[];
    for item in Fields::new(bytes) {
        match item? {
            (1, WireValue::Len(b)) => raw = b,
            (1, other) => return Err(wrong_wire(WIRE_LEN, &other)),
            _ => {}
        }
    }
    Ok(raw)
}

/// Raw bytes that Go's MarshalJSON would write verbatim: JSON text. Empty →
/// null. A `RawExtension` may also hold a nested protobuf object.
fn embedded_json(
    raw: &[u8],
    what: &str,
    depth: usize,
    allow_protobuf: bool,
) -> Result<Value, DecodeError> {
    if raw.is_empty() {
        return Ok(Value::Null);
    }
    if allow_protobuf && raw.starts_with(&crate::MAGIC) {
        return crate::decode_at_depth(raw, depth + 1);
    }
    if raw.starts_with(&[0xd9, 0xd9, 0xf7]) {
        return Err(DecodeError::InvalidValue(format!(
            "{what} holds CBOR, which is not supported"
        )));
    }
    serde_json::from_slice(raw)
        .map_err(|e| DecodeError::InvalidValue(format!("{what} is not valid JSON: {e}")))
}

/// Whether Go's `encoding/json` would write this field (see [`Emit`]).
fn keep(kind: Kind, emit: Emit, v: &Value) -> bool {
    let scalar = matches!(
        kind,
        Kind::Str | Kind::Bytes | Kind::Bool | Kind::Int32 | Kind::Int64 | Kind::Double
    );
    let empty_scalar = scalar
        && match v {
            Value::String(s) => s.is_empty(),
            Value::Bool(b) => !b,
            Value::Number(n) => n.as_i64() == Some(0),
            _ => false,
        };
    match emit {
        Emit::Always => true,
        Emit::OmitEmpty => !empty_scalar,
        Emit::OmitZero => {
            let zero_struct = match v {
                Value::Null => true,
                Value::Object(o) => o.is_empty(),
                _ => false,
            };
            !(empty_scalar || zero_struct)
        }
    }
}
