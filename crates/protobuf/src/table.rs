//! Static descriptions of protobuf messages: which field number carries which
//! JSON field, and how its value is shaped on the wire and in JSON.
//!
//! The tables themselves live in the generated [`crate::schema`] module.

/// One protobuf message (a Go API struct).
#[derive(Debug)]
pub(crate) struct Message {
    /// `package/version.GoType` (for tests and debugging).
    #[cfg_attr(not(test), allow(dead_code))]
    pub name: &'static str,
    /// Sorted by field number.
    pub fields: &'static [Field],
}

impl Message {
    pub(crate) fn field(&self, number: u32) -> Option<(usize, &'static Field)> {
        let idx = self
            .fields
            .binary_search_by_key(&number, |f| f.number)
            .ok()?;
        self.fields.get(idx).map(|f| (idx, f))
    }
}

/// One field of a [`Message`].
#[derive(Debug)]
pub(crate) struct Field {
    pub number: u32,
    /// The Go JSON name (empty for [`Card::Inline`]).
    pub json: &'static str,
    pub kind: Kind,
    pub card: Card,
    pub emit: Emit,
}

/// Compact constructor used by the generated tables.
pub(crate) const fn f(
    number: u32,
    json: &'static str,
    kind: Kind,
    card: Card,
    emit: Emit,
) -> Field {
    Field {
        number,
        json,
        kind,
        card,
        emit,
    }
}

/// The type of a single value (for repeated fields: of each element; for maps:
/// of each value — map keys are always strings).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    /// `string` (and Go string types such as `types.UID`) → JSON string.
    Str,
    /// `[]byte` → base64 JSON string, as Go's `encoding/json` writes it.
    Bytes,
    /// `bool` → JSON bool.
    Bool,
    /// `int32` varint (Go truncates to 32 bits) → JSON number.
    Int32,
    /// `int64` varint → JSON number.
    Int64,
    /// `metav1.Time` {seconds=1, nanos=2} → RFC 3339 with seconds precision.
    Time,
    /// `metav1.MicroTime` {seconds=1, nanos=2} → RFC 3339 with microseconds.
    MicroTime,
    /// `metav1.Duration` {duration=1 (ns)} → Go duration string ("1m30s").
    /// No built-in API type uses it today, but the decoder supports it.
    #[allow(dead_code)]
    Duration,
    /// `intstr.IntOrString` {type=1, intVal=2, strVal=3} → number or string.
    IntOrString,
    /// `resource.Quantity` {string=1} → string.
    Quantity,
    /// `metav1.FieldsV1` {Raw=1} → the raw bytes parsed as JSON.
    FieldsV1,
    /// `runtime.RawExtension` {raw=1} → the raw bytes parsed as JSON.
    RawExtension,
    /// `float64` (wire type 1) → JSON number, as Go's encoding/json writes it.
    Double,
    /// apiextensions' `JSON` {raw=1} → the raw bytes parsed as JSON.
    Json,
    /// `JSONSchemaPropsOrBool` {allows=1, schema=2} → the schema, else the bool.
    SchemaOrBool(&'static Message),
    /// `JSONSchemaPropsOrArray` {schema=1, jSONSchemas=2} → the array of
    /// schemas when it has any, else the schema (null when neither).
    SchemaOrArray(&'static Message),
    /// `JSONSchemaPropsOrStringArray` {schema=1, property=2} → the strings when
    /// there are any, else the schema (null when neither).
    SchemaOrStringArray(&'static Message),
    /// A nested message → JSON object.
    Msg(&'static Message),
    /// A Go named slice type (`type ExtraValue []string`), which go-to-protobuf
    /// wraps in a message with the elements in field 1 → JSON array.
    List(&'static Message),
}

/// How often a field occurs and how it appears in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Card {
    /// A single value.
    One,
    /// Go slice → JSON array (packed or unpacked on the wire).
    Repeated,
    /// Go `map[string]T` → JSON object (map entries: key=1, value=2).
    Map,
    /// An embedded Go struct with `json:",inline"`: a nested message on the
    /// wire whose fields are merged into the parent JSON object.
    Inline,
}

/// When a decoded single value is written to JSON (mirrors Go's
/// `encoding/json` for the field's Go type and tag).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Emit {
    /// Pointer fields and fields without `omitempty`: always written when present
    /// on the wire (Go writes non-pointer scalars even when zero).
    Always,
    /// Non-pointer field with `omitempty`: dropped when the value is an empty
    /// string, zero number, `false` or empty bytes. Structs are kept (Go never
    /// omits them; a zero `Time` becomes `null`).
    OmitEmpty,
    /// Field with `omitzero`: like `OmitEmpty`, and also dropped when it is a
    /// zero time or an empty struct.
    OmitZero,
}
