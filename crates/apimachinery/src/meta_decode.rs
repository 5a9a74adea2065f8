//! What Go's JSON decoder refuses in `metadata`: kube-apiserver decodes a body's
//! `metadata` into `metav1.ObjectMeta`, so a member of the wrong JSON type (a label
//! whose value is a number) or a time `time.Parse` refuses fails the decode, a 400
//! BadRequest, before any validation runs. The message is encoding/json's
//! `UnmarshalTypeError` (its `Struct` the innermost struct: `OwnerReference` for
//! an owner reference's members) or `time.ParseError`'s.
//!
//! Which error Go answers when there are several: a member of the wrong type is
//! saved and decoding goes on (the first one saved is answered at the end), but
//! an error from a time's `UnmarshalJSON` stops the decode at once and is
//! answered instead. Members are visited in key order: as Go visits them for a
//! custom resource (its `metadata` is re-encoded from a Go map, keys sorted,
//! before it is decoded); a built-in kind's body is decoded in the order it was
//! sent, which a `serde_json::Map` does not keep.

use serde_json::{Number, Value};

/// A struct inside `ObjectMeta` (an item of one of its lists) whose members
/// are checked too.
struct GoStruct {
    /// Its name in messages about its members (`OwnerReference`).
    name: &'static str,
    /// The list's type and the item's, as messages name them.
    list: &'static str,
    item: &'static str,
    member: fn(&str) -> Option<GoType>,
}

static OWNER_REFERENCE: GoStruct = GoStruct {
    name: "OwnerReference",
    list: "[]v1.OwnerReference",
    item: "v1.OwnerReference",
    member: owner_reference_member,
};

static MANAGED_FIELDS_ENTRY: GoStruct = GoStruct {
    name: "ManagedFieldsEntry",
    list: "[]v1.ManagedFieldsEntry",
    item: "v1.ManagedFieldsEntry",
    member: managed_fields_member,
};

/// The Go type of an `ObjectMeta` member, as the decoder names it.
#[derive(Clone, Copy)]
enum GoType {
    /// A string kind, by the name of its type (`string`, `types.UID`).
    String(&'static str),
    Int64,
    Bool,
    /// `metav1.Time`: its `UnmarshalJSON` decodes a string and parses it with
    /// `time.Parse(time.RFC3339, …)`; its errors end the decode at once.
    Time,
    StringMap,
    StringList,
    StructList(&'static GoStruct),
}

const STRING: GoType = GoType::String("string");

impl GoType {
    fn name(self) -> &'static str {
        match self {
            GoType::String(name) => name,
            GoType::Int64 => "int64",
            GoType::Bool => "bool",
            // What the time's `UnmarshalJSON` decodes the JSON value into.
            GoType::Time => "string",
            GoType::StringMap => "map[string]string",
            GoType::StringList => "[]string",
            GoType::StructList(item) => item.list,
        }
    }
}

fn object_meta_member(field: &str) -> Option<GoType> {
    Some(match field {
        "name" | "generateName" | "namespace" | "selfLink" | "resourceVersion" => STRING,
        "uid" => GoType::String("types.UID"),
        "generation" | "deletionGracePeriodSeconds" => GoType::Int64,
        "creationTimestamp" | "deletionTimestamp" => GoType::Time,
        "labels" | "annotations" => GoType::StringMap,
        "finalizers" => GoType::StringList,
        "ownerReferences" => GoType::StructList(&OWNER_REFERENCE),
        "managedFields" => GoType::StructList(&MANAGED_FIELDS_ENTRY),
        _ => return None,
    })
}

fn owner_reference_member(field: &str) -> Option<GoType> {
    Some(match field {
        "apiVersion" | "kind" | "name" => STRING,
        "uid" => GoType::String("types.UID"),
        "controller" | "blockOwnerDeletion" => GoType::Bool,
        _ => return None,
    })
}

/// `fieldsV1` is raw JSON (`FieldsV1.UnmarshalJSON` takes any value).
fn managed_fields_member(field: &str) -> Option<GoType> {
    Some(match field {
        "manager" | "apiVersion" | "fieldsType" | "subresource" => STRING,
        "operation" => GoType::String("v1.ManagedFieldsOperationType"),
        "time" => GoType::Time,
        _ => return None,
    })
}

/// How encoding/json names a JSON value in its errors (`number 1.5` for a
/// number that does not fit an integer type).
fn json_kind(value: &Value, into: GoType, custom: bool) -> String {
    match value {
        Value::String(_) => "string".into(),
        Value::Bool(_) => "bool".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
        Value::Number(n) if matches!(into, GoType::Int64) => match int64(n, custom) {
            Err(text) => format!("number {text}"),
            Ok(_) => format!("number {n}"),
        },
        Value::Number(_) => "number".into(),
        Value::Null => "null".into(),
    }
}

/// A JSON number as Go decodes it into an `int64`, or the number's text as
/// Go's error quotes it. `custom`: the metadata of a custom resource, which Go
/// decoded into a map first (numbers that are not `int64`s become `float64`s)
/// and encoded again, so `1.0` is `1` and `1e20` is `100000000000000000000`;
/// a built-in kind's number is its literal (`serde_json`'s text of it here:
/// the literal itself is gone, `1e20` reads `100000000000000000000.0`).
pub(crate) fn int64(n: &Number, custom: bool) -> Result<i64, String> {
    if let Some(i) = n.as_i64() {
        return Ok(i);
    }
    if !custom {
        return Err(n.to_string());
    }
    let text = go_float(n.as_f64().unwrap_or_default());
    text.parse().map_err(|_| text)
}

/// A `float64` as encoding/json writes it: the shortest text that reads back
/// as the same number, in exponent form below 1e-6 and from 1e21 (`1e+21`,
/// `1.5e-7`).
fn go_float(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let text = format!("{f:e}");
        match text.split_once('e') {
            Some((mantissa, exponent)) if !exponent.starts_with('-') => {
                format!("{mantissa}e+{exponent}")
            }
            _ => text,
        }
    } else {
        format!("{f}")
    }
}

/// Where a member is: the struct holding it, the `ObjectMeta` member, and
/// the member of that member's item.
#[derive(Clone, Copy)]
struct At<'a> {
    owner: &'static str,
    field: &'a str,
    member: Option<&'a str>,
}

struct Decoder<'p> {
    prefix: &'p str,
    custom: bool,
    /// The first member of the wrong type.
    saved: Option<String>,
}

impl Decoder<'_> {
    fn message(&self, found: &str, at: At, into: &str) -> String {
        let At {
            owner,
            field,
            member,
        } = at;
        let prefix = self.prefix;
        match member {
            Some(member) => format!(
                "json: cannot unmarshal {found} into Go struct field {owner}.{prefix}{field}.{member} of type {into}"
            ),
            None => format!(
                "json: cannot unmarshal {found} into Go struct field {owner}.{prefix}{field} of type {into}"
            ),
        }
    }

    /// Notes a member of the wrong type (`type_name`: as Go names the type
    /// it was decoded into), unless one was noted before.
    fn save(&mut self, value: &Value, into: GoType, at: At, type_name: &str) {
        if self.saved.is_none() {
            let found = json_kind(value, into, self.custom);
            self.saved = Some(self.message(&found, at, type_name));
        }
    }

    /// Checks `value`, decoded into `into`; `Err`: an error that ends the decode.
    fn check(&mut self, value: &Value, at: At, into: GoType) -> Result<(), String> {
        match (into, value) {
            // Go leaves the field (or map value, list item) zero.
            (_, Value::Null)
            | (GoType::String(_), Value::String(_))
            | (GoType::Bool, Value::Bool(_)) => {}
            (GoType::Int64, Value::Number(n)) => {
                if int64(n, self.custom).is_err() {
                    self.save(value, into, at, into.name());
                }
            }
            (GoType::Time, Value::String(s)) => {
                parse_time(s)?;
            }
            (GoType::Time, other) => {
                return Err(self.message(&json_kind(other, into, self.custom), at, "string"));
            }
            (GoType::StringMap, Value::Object(entries)) => {
                for v in entries.values() {
                    self.check(v, at, STRING)?;
                }
            }
            (GoType::StringList, Value::Array(items)) => {
                for v in items {
                    self.check(v, at, STRING)?;
                }
            }
            (GoType::StructList(item), Value::Array(items)) => {
                for v in items {
                    match v {
                        Value::Null => {}
                        Value::Object(members) => {
                            for (name, v) in members {
                                if let Some(want) = (item.member)(name) {
                                    let at = At {
                                        owner: item.name,
                                        field: at.field,
                                        member: Some(name),
                                    };
                                    self.check(v, at, want)?;
                                }
                            }
                        }
                        other => self.save(other, into, at, item.item),
                    }
                }
            }
            (into, other) => self.save(other, into, at, into.name()),
        }
        Ok(())
    }
}

/// The error Go's decoder answers for this `metadata` object, as its message:
/// `json: cannot unmarshal number into Go struct field ObjectMeta.<prefix>labels
/// of type string`, `parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot
/// parse "x" as "2006"`. `prefix` is the JSON path of `metadata` as the decoder
/// saw it: `metadata.` when the whole object was decoded into a Go type
/// (built-in kinds), empty when `metadata` alone was (custom resources). Not an
/// object: `None` (see [`crate::object_meta::ObjectMeta::from_value_in`]).
pub fn decode_error(metadata: &Value, prefix: &str) -> Option<String> {
    let map = metadata.as_object()?;
    let mut decoder = Decoder {
        prefix,
        custom: prefix.is_empty(),
        saved: None,
    };
    for (field, value) in map {
        let Some(into) = object_meta_member(field) else {
            continue;
        };
        let at = At {
            owner: "ObjectMeta",
            field,
            member: None,
        };
        if let Err(message) = decoder.check(value, at, into) {
            return Some(message);
        }
    }
    decoder.saved
}

/// Go's zero `time.Time` (January 1, year 1, UTC) in Unix seconds: `IsZero`,
/// so `metav1.Time` writes it as `null` (omitted where tagged `omitzero`).
pub(crate) const ZERO_TIME_SECONDS: i64 = -62_135_596_800;

/// The layout `time.RFC3339`, as `time.ParseError` quotes it.
const RFC3339: &str = "2006-01-02T15:04:05Z07:00";

/// Why `time.Parse` refused a text.
#[derive(Debug, PartialEq)]
enum TimeError {
    /// `cannot parse "<the text from at>" as "<layout element>"`.
    Bad { at: usize, element: &'static str },
    /// `<what> out of range`.
    Range(&'static str),
    /// `extra text: "<the text from at>"`.
    Extra(usize),
}

/// `metav1.Time`'s parse: `time.Parse(time.RFC3339, s)` (Go's general layout
/// parser, more lenient than RFC 3339: a one-digit hour, a `,` before the
/// fraction, offsets up to ±24:60), as the instant in Unix seconds (the
/// fraction dropped: the JSON form has none), or `time.ParseError`'s message.
pub(crate) fn parse_time(s: &str) -> Result<i64, String> {
    parse_rfc3339(s.as_bytes()).map_err(|e| {
        let value = quote(s);
        match e {
            TimeError::Bad { at, element } => format!(
                "parsing time {value} as \"{RFC3339}\": cannot parse {} as \"{element}\"",
                quote(&s[at..])
            ),
            TimeError::Range(what) => format!("parsing time {value}: {what} out of range"),
            TimeError::Extra(at) => {
                format!("parsing time {value}: extra text: {}", quote(&s[at..]))
            }
        }
    })
}

/// Go's `time.parse` for the layout `2006-01-02T15:04:05Z07:00`, element by
/// element with its checks in its order (format.go).
fn parse_rfc3339(b: &[u8]) -> Result<i64, TimeError> {
    use TimeError::{Bad, Extra, Range};
    let digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    let value = |i: usize| i64::from(b[i] - b'0');
    // Go's `getnum`: one or two digits (`fixed`: two).
    let getnum = |i: usize, fixed: bool, element| {
        if !digit(i) {
            return Err(Bad { at: i, element });
        }
        if !digit(i + 1) {
            if fixed {
                return Err(Bad { at: i, element });
            }
            return Ok((value(i), i + 1));
        }
        Ok((value(i) * 10 + value(i + 1), i + 2))
    };
    let skip = |i: usize, byte: u8, element| match b.get(i) {
        Some(&c) if c == byte => Ok(i + 1),
        _ => Err(Bad { at: i, element }),
    };
    if b.len() < 4 || !b[..4].iter().all(u8::is_ascii_digit) {
        return Err(Bad {
            at: 0,
            element: "2006",
        });
    }
    let year = (0..4).fold(0, |y, i| y * 10 + value(i));
    let i = skip(4, b'-', "-")?;
    let (month, i) = getnum(i, true, "01")?;
    if !(1..=12).contains(&month) {
        return Err(Range("month"));
    }
    let i = skip(i, b'-', "-")?;
    let (day, i) = getnum(i, true, "02")?;
    let i = skip(i, b'T', "T")?;
    let (hour, i) = getnum(i, false, "15")?;
    if hour >= 24 {
        return Err(Range("hour"));
    }
    let i = skip(i, b':', ":")?;
    let (minute, i) = getnum(i, true, "04")?;
    if minute >= 60 {
        return Err(Range("minute"));
    }
    let i = skip(i, b':', ":")?;
    let (second, mut i) = getnum(i, true, "05")?;
    if second >= 60 {
        return Err(Range("second"));
    }
    // A fraction the layout does not name is allowed after the seconds.
    if matches!(b.get(i), Some(b'.' | b',')) && digit(i + 1) {
        i += 2;
        while digit(i) {
            i += 1;
        }
    }
    let offset = if b.get(i) == Some(&b'Z') {
        i += 1;
        0
    } else {
        let bad = Bad {
            at: i,
            element: "Z07:00",
        };
        let zone = &b[i..];
        if zone.len() < 6 || zone[3] != b':' {
            return Err(bad);
        }
        let two = |at: usize| {
            (zone[at].is_ascii_digit() && zone[at + 1].is_ascii_digit())
                .then(|| i64::from(zone[at] - b'0') * 10 + i64::from(zone[at + 1] - b'0'))
        };
        let hours = two(1);
        let minutes = hours.and_then(|_| two(4));
        // Go tests the ranges (with `>`: 24:60 passes) before the syntax.
        if minutes.unwrap_or(0) > 60 {
            return Err(Range("time zone offset minute"));
        }
        if hours.unwrap_or(0) > 24 {
            return Err(Range("time zone offset hour"));
        }
        let (Some(hours), Some(minutes)) = (hours, minutes) else {
            return Err(bad);
        };
        let seconds = (hours * 60 + minutes) * 60;
        let offset = match zone[0] {
            b'+' => seconds,
            b'-' => -seconds,
            _ => return Err(bad),
        };
        i += 6;
        offset
    };
    if i < b.len() {
        return Err(Extra(i));
    }
    if day < 1 || day > days_in(month, year) {
        return Err(Range("day"));
    }
    Ok(days_from_civil(year, month, day) * 86_400 + hour * 3_600 + minute * 60 + second - offset)
}

fn days_in(month: i64, year: i64) -> i64 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to this proleptic Gregorian date (H. Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The date of a day counted from 1970-01-01 (`civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let days = days + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// `metav1.Time`'s text of an instant in Unix seconds, as its `MarshalJSON`
/// writes it (`t.UTC().AppendFormat(b, time.RFC3339)`): UTC, whole seconds,
/// the year at least four digits (`-0001`, `10000`).
pub(crate) fn append_time(out: &mut Vec<u8>, seconds: i64) {
    let (year, month, day) = civil_from_days(seconds.div_euclid(86_400));
    let second_of_day = seconds.rem_euclid(86_400);
    if year < 0 {
        out.push(b'-');
    }
    let year = year.unsigned_abs();
    if year < 10_000 {
        out.extend_from_slice(&[
            b'0' + (year / 1_000) as u8,
            b'0' + (year / 100 % 10) as u8,
            b'0' + (year / 10 % 10) as u8,
            b'0' + (year % 10) as u8,
        ]);
    } else {
        out.extend_from_slice(itoa::Buffer::new().format(year).as_bytes());
    }
    let two = |n: i64| [b'0' + (n / 10) as u8, b'0' + (n % 10) as u8];
    let [m0, m1] = two(month);
    let [d0, d1] = two(day);
    let [h0, h1] = two(second_of_day / 3_600);
    let [i0, i1] = two(second_of_day / 60 % 60);
    let [s0, s1] = two(second_of_day % 60);
    out.extend_from_slice(&[
        b'-', m0, m1, b'-', d0, d1, b'T', h0, h1, b':', i0, i1, b':', s0, s1, b'Z',
    ]);
}

/// Go's `time` package's `quote`: `"…"` with `"` and `\` escaped and every
/// byte of a control or non-ASCII character as `\xNN`.
fn quote(s: &str) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if c < ' ' || !c.is_ascii() {
            let mut bytes = [0; 4];
            for byte in c.encode_utf8(&mut bytes).bytes() {
                let _ = write!(out, "\\x{byte:02x}");
            }
        } else {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out.push('"');
    out
}

/// kube-apiserver v1.37.2's answers to POSTs of a ConfigMap (a built-in
/// kind: prefix `metadata.`) and of a custom resource (prefix empty) with
/// these `metadata` (each also named `n`), the part after `<Kind> in version
/// "v1" cannot be handled as a <Kind>: `. `{p}` stands for the prefix; `None`:
/// created. `(metadata, both's answer)` or, where they differ, `(metadata,
/// the built-in's, the custom resource's)`: a custom resource's numbers are
/// `float64`s re-encoded by Go before the decode; a built-in's answer this
/// module cannot give is `None` (why: beside it).
#[cfg(test)]
#[allow(clippy::type_complexity)]
pub(crate) fn recorded_answers() -> (
    Vec<(Value, Option<&'static str>)>,
    Vec<(Value, Option<Option<&'static str>>, Option<&'static str>)>,
) {
    use serde_json::json;
    let uid =
        "json: cannot unmarshal number into Go struct field ObjectMeta.{p}uid of type types.UID";
    let both = vec![
        (
            json!({"labels": {"app": 1}}),
            Some(
                "json: cannot unmarshal number into Go struct field ObjectMeta.{p}labels of type string",
            ),
        ),
        (
            json!({"annotations": {"a": true}}),
            Some(
                "json: cannot unmarshal bool into Go struct field ObjectMeta.{p}annotations of type string",
            ),
        ),
        (
            json!({"annotations": "x"}),
            Some(
                "json: cannot unmarshal string into Go struct field ObjectMeta.{p}annotations of type map[string]string",
            ),
        ),
        (
            json!({"name": 5}),
            Some(
                "json: cannot unmarshal number into Go struct field ObjectMeta.{p}name of type string",
            ),
        ),
        (json!({"uid": 5}), Some(uid)),
        (
            json!({"generation": 1.5}),
            Some(
                "json: cannot unmarshal number 1.5 into Go struct field ObjectMeta.{p}generation of type int64",
            ),
        ),
        (
            json!({"generation": 1e-7}),
            Some(
                "json: cannot unmarshal number 1e-7 into Go struct field ObjectMeta.{p}generation of type int64",
            ),
        ),
        (json!({"generation": i64::MAX}), None),
        (
            json!({"deletionGracePeriodSeconds": "5"}),
            Some(
                "json: cannot unmarshal string into Go struct field ObjectMeta.{p}deletionGracePeriodSeconds of type int64",
            ),
        ),
        (
            json!({"deletionGracePeriodSeconds": 2.5}),
            Some(
                "json: cannot unmarshal number 2.5 into Go struct field ObjectMeta.{p}deletionGracePeriodSeconds of type int64",
            ),
        ),
        (
            json!({"finalizers": ["a", 2]}),
            Some(
                "json: cannot unmarshal number into Go struct field ObjectMeta.{p}finalizers of type string",
            ),
        ),
        (
            json!({"finalizers": "a"}),
            Some(
                "json: cannot unmarshal string into Go struct field ObjectMeta.{p}finalizers of type []string",
            ),
        ),
        (
            json!({"ownerReferences": [{"controller": "yes"}]}),
            Some(
                "json: cannot unmarshal string into Go struct field OwnerReference.{p}ownerReferences.controller of type bool",
            ),
        ),
        (
            json!({"ownerReferences": [{"controller": 1}]}),
            Some(
                "json: cannot unmarshal number into Go struct field OwnerReference.{p}ownerReferences.controller of type bool",
            ),
        ),
        (
            json!({"ownerReferences": [{"name": 1}]}),
            Some(
                "json: cannot unmarshal number into Go struct field OwnerReference.{p}ownerReferences.name of type string",
            ),
        ),
        (
            json!({"ownerReferences": [{"uid": 5}]}),
            Some(
                "json: cannot unmarshal number into Go struct field OwnerReference.{p}ownerReferences.uid of type types.UID",
            ),
        ),
        (
            json!({"ownerReferences": [5]}),
            Some(
                "json: cannot unmarshal number into Go struct field ObjectMeta.{p}ownerReferences of type v1.OwnerReference",
            ),
        ),
        (
            json!({"ownerReferences": {}}),
            Some(
                "json: cannot unmarshal object into Go struct field ObjectMeta.{p}ownerReferences of type []v1.OwnerReference",
            ),
        ),
        (
            json!({"managedFields": [{"manager": 1}]}),
            Some(
                "json: cannot unmarshal number into Go struct field ManagedFieldsEntry.{p}managedFields.manager of type string",
            ),
        ),
        (
            json!({"managedFields": [{"operation": 5}]}),
            Some(
                "json: cannot unmarshal number into Go struct field ManagedFieldsEntry.{p}managedFields.operation of type v1.ManagedFieldsOperationType",
            ),
        ),
        (
            json!({"managedFields": [{"time": 5}]}),
            Some(
                "json: cannot unmarshal number into Go struct field ManagedFieldsEntry.{p}managedFields.time of type string",
            ),
        ),
        (
            json!({"managedFields": [{"time": "x"}]}),
            Some(r#"parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot parse "x" as "2006""#),
        ),
        (
            json!({"managedFields": [{"fieldsV1": 5, "manager": "m"}]}),
            None,
        ),
        (
            json!({"managedFields": ["x"]}),
            Some(
                "json: cannot unmarshal string into Go struct field ObjectMeta.{p}managedFields of type v1.ManagedFieldsEntry",
            ),
        ),
        (
            json!({"creationTimestamp": "x"}),
            Some(r#"parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot parse "x" as "2006""#),
        ),
        (
            json!({"creationTimestamp": {}}),
            Some(
                "json: cannot unmarshal object into Go struct field ObjectMeta.{p}creationTimestamp of type string",
            ),
        ),
        (
            json!({"deletionTimestamp": 5}),
            Some(
                "json: cannot unmarshal number into Go struct field ObjectMeta.{p}deletionTimestamp of type string",
            ),
        ),
        (
            json!({"deletionTimestamp": "x"}),
            Some(r#"parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot parse "x" as "2006""#),
        ),
        (
            json!({"creationTimestamp": "2024-01-01"}),
            Some(
                r#"parsing time "2024-01-01" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "T""#,
            ),
        ),
        (
            json!({"creationTimestamp": "2024-01-01T00:00:00"}),
            Some(
                r#"parsing time "2024-01-01T00:00:00" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "Z07:00""#,
            ),
        ),
        (
            json!({"creationTimestamp": "2024-13-01T00:00:00Z"}),
            Some(r#"parsing time "2024-13-01T00:00:00Z": month out of range"#),
        ),
        (
            json!({"creationTimestamp": "2024-01-01T00:00:00Zjunk"}),
            Some(r#"parsing time "2024-01-01T00:00:00Zjunk": extra text: "junk""#),
        ),
        (
            json!({"creationTimestamp": "2024-02-30T00:00:00+25:00"}),
            Some(r#"parsing time "2024-02-30T00:00:00+25:00": time zone offset hour out of range"#),
        ),
        (
            json!({"creationTimestamp": "2024-02-30T00:00:00Zx"}),
            Some(r#"parsing time "2024-02-30T00:00:00Zx": extra text: "x""#),
        ),
        (
            json!({"creationTimestamp": "2024-1-01T00:00:00Z"}),
            Some(
                r#"parsing time "2024-1-01T00:00:00Z" as "2006-01-02T15:04:05Z07:00": cannot parse "1-01T00:00:00Z" as "01""#,
            ),
        ),
        (json!({"creationTimestamp": "2024-01-01T1:00:00Z"}), None),
        (
            json!({"creationTimestamp": "2024-01-01T24:00:00Z"}),
            Some(r#"parsing time "2024-01-01T24:00:00Z": hour out of range"#),
        ),
        (
            json!({"creationTimestamp": "2024-01-01T00:60:00Z"}),
            Some(r#"parsing time "2024-01-01T00:60:00Z": minute out of range"#),
        ),
        (
            json!({"creationTimestamp": "2024-01-01T00:00:00,5+01:00"}),
            None,
        ),
        (
            json!({"creationTimestamp": "2024-01-01T00:00:00+1:00"}),
            Some(
                r#"parsing time "2024-01-01T00:00:00+1:00" as "2006-01-02T15:04:05Z07:00": cannot parse "+1:00" as "Z07:00""#,
            ),
        ),
        (
            json!({"creationTimestamp": "2024-01-01T00:00:00 Z"}),
            Some(
                r#"parsing time "2024-01-01T00:00:00 Z" as "2006-01-02T15:04:05Z07:00": cannot parse " Z" as "Z07:00""#,
            ),
        ),
        (
            json!({"creationTimestamp": "\u{e9}\"\n"}),
            Some(
                r#"parsing time "\xc3\xa9\"\x0a" as "2006-01-02T15:04:05Z07:00": cannot parse "\xc3\xa9\"\x0a" as "2006""#,
            ),
        ),
        (
            json!({"creationTimestamp": ""}),
            Some(r#"parsing time "" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "2006""#),
        ),
        (
            json!({"creationTimestamp": null, "deletionTimestamp": null}),
            None,
        ),
        // A time's error ends the decode: it is answered over a member of the wrong type seen before.
        (
            json!({"labels": {"a": 1}, "creationTimestamp": "x"}),
            Some(r#"parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot parse "x" as "2006""#),
        ),
        (
            json!({"zz": 1, "annotations": {"a": 1}, "creationTimestamp": "x", "deletionTimestamp": 5}),
            Some(r#"parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot parse "x" as "2006""#),
        ),
        (
            json!({"managedFields": [{"time": "y", "manager": 5}], "labels": {"a": 1}}),
            Some(r#"parsing time "y" as "2006-01-02T15:04:05Z07:00": cannot parse "y" as "2006""#),
        ),
        (
            json!({"deletionTimestamp": "2024-01-01T00:00:00Z", "creationTimestamp": 5}),
            Some(
                "json: cannot unmarshal number into Go struct field ObjectMeta.{p}creationTimestamp of type string",
            ),
        ),
        (json!({"labels": null, "unknown": 1}), None),
        (json!({"labels": {"a": null}}), None),
    ];
    let differ = vec![
        (
            json!({"generation": u64::MAX}),
            Some(Some(
                "json: cannot unmarshal number 18446744073709551615 into Go struct field ObjectMeta.metadata.generation of type int64",
            )),
            Some(
                "json: cannot unmarshal number 18446744073709552000 into Go struct field ObjectMeta.generation of type int64",
            ),
        ),
        (
            json!({"generation": 1.0}),
            Some(Some(
                "json: cannot unmarshal number 1.0 into Go struct field ObjectMeta.metadata.generation of type int64",
            )),
            None,
        ),
        (
            // The built-in's answer quotes the literal sent (`number 1e21`);
            // serde_json's text of the number is `1e+21`.
            json!({"generation": 1e21}),
            None,
            Some(
                "json: cannot unmarshal number 1e+21 into Go struct field ObjectMeta.generation of type int64",
            ),
        ),
        (
            // The built-in's answer quotes the literal sent (`number
            // 9223372036854775807.0`), which a `Value` does not keep.
            json!({"generation": 9_223_372_036_854_775_807.0}),
            None,
            Some(
                "json: cannot unmarshal number 9223372036854776000 into Go struct field ObjectMeta.generation of type int64",
            ),
        ),
        (
            // Go visits a built-in's members in the order sent (its answer:
            // `labels`), a custom resource's sorted.
            json!({"name": "ok", "labels": {"a": 1}, "annotations": {"b": 2}}),
            None,
            Some(
                "json: cannot unmarshal number into Go struct field ObjectMeta.annotations of type string",
            ),
        ),
    ];
    (both, differ)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Messages as kube-apiserver answers them (its users quote them verbatim:
    /// a custom resource's `ObjectMeta.labels`, a built-in's
    /// `ObjectMeta.metadata.annotations`; an owner reference's members are
    /// `OwnerReference`'s).
    #[test]
    fn go_decoder_messages() {
        let (both, differ) = recorded_answers();
        for (meta, want) in both {
            for prefix in ["metadata.", ""] {
                let want = want.map(|w| w.replace("{p}", prefix));
                assert_eq!(decode_error(&meta, prefix), want, "{prefix} {meta}");
            }
        }
        for (meta, built_in, custom) in differ {
            if let Some(built_in) = built_in {
                assert_eq!(
                    decode_error(&meta, "metadata.").as_deref(),
                    built_in,
                    "{meta}"
                );
            }
            assert_eq!(decode_error(&meta, "").as_deref(), custom, "{meta}");
        }
        assert_eq!(decode_error(&json!("x"), ""), None);
    }

    /// Go's `time.Parse(time.RFC3339, …)` accepts what its general parser
    /// does; the instants are Go's (`t.Unix()`).
    #[test]
    fn times_parse_as_go_parses_them() {
        for (text, unix) in [
            ("1970-01-01T00:00:00Z", 0),
            ("2024-01-01T00:00:00.5+02:00", 1_704_060_000),
            ("2024-01-01T1:02:03,25Z", 1_704_070_923),
            ("2024-02-29T12:00:00+00:00", 1_709_208_000),
            ("0001-01-01T00:00:00Z", ZERO_TIME_SECONDS),
            ("0001-01-01T01:00:00+01:00", ZERO_TIME_SECONDS),
            ("9999-12-31T23:59:59-24:60", 253_402_390_799),
            ("0000-01-01T00:00:00+24:60", -62_167_309_200),
        ] {
            assert_eq!(parse_time(text), Ok(unix), "{text}");
        }
    }

    /// `metav1.Time`'s text: jiff's up to jiff's last instant (in 9999); for
    /// the first and last instants `time.Parse` reaches (years -1 and 10000),
    /// Go's (go1.26.8, `metav1.Time.MarshalJSON`).
    #[test]
    fn times_are_written_as_go_writes_them() {
        let text = |seconds| {
            let mut out = Vec::new();
            append_time(&mut out, seconds);
            String::from_utf8(out).unwrap()
        };
        let some = (ZERO_TIME_SECONDS..253_402_207_200).step_by(7_919_993);
        for seconds in some.chain([-1, 0, 951_782_400, 253_402_207_200]) {
            let jiff = jiff::Timestamp::from_second(seconds).unwrap();
            assert_eq!(
                text(seconds),
                jiff.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
            );
        }
        assert_eq!(text(-62_167_309_200), "-0001-12-30T23:00:00Z");
        assert_eq!(text(253_402_387_199), "10000-01-01T23:59:59Z");
    }

    #[test]
    fn days_and_dates_agree() {
        for days in (-800_000..3_000_000)
            .step_by(997)
            .chain([-719_528, 0, 59, 60])
        {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
            assert!((1..=12).contains(&m) && (1..=days_in(m, y)).contains(&d));
        }
    }

    #[test]
    fn go_floats() {
        for (f, go) in [
            (1e20, "100000000000000000000"),
            (1e21, "1e+21"),
            (1e-7, "1e-7"),
            (1.5e-7, "1.5e-7"),
            (2f64.powi(63), "9223372036854776000"),
            (1.0, "1"),
            (-0.0, "-0"),
            (1e300, "1e+300"),
        ] {
            assert_eq!(go_float(f), go);
        }
    }
}
