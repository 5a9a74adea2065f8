//! Duplicate object keys in request bodies, as upstream's strict decoding
//! (`sigs.k8s.io/json`'s `UnmarshalStrict`) reports them.
//!
//! serde_json keeps the last of a repeated key silently, and so does
//! upstream's lenient decoder; its strict one also names each repeat
//! (`duplicate field "spec.replicas"`). A body is parsed once, by
//! [`ValueSeed`]: the `Value` serde_json would build, and a flag raised when
//! an object repeats a key. Only a body that raised it is read again
//! ([`duplicate_fields`]) for the repeats' paths.
//!
//! Hot path: every create's and update's body goes through [`ValueSeed`],
//! which does `Value`'s own `Deserialize`'s work (measured with callgrind:
//! about 1 % more on a 1 KiB ConfigMap) and sets a flag only on a repeat.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Upstream's strict decoder stops collecting errors at this many.
pub const MAX_STRICT_ERRORS: usize = 100;

/// Builds the `serde_json::Value` of any self-describing input (JSON, YAML),
/// exactly as `Value`'s own `Deserialize` does (the last of a repeated key
/// kept), noting a repeated key for [`noting_duplicates`]. (Stateless, as
/// `Value`'s own visitor: a parse costs the same.)
#[derive(Clone, Copy)]
pub struct ValueSeed;

thread_local! {
    /// Set when [`ValueSeed`] meets a repeated key on this thread.
    static DUPLICATES: Cell<bool> = const { Cell::new(false) };
}

/// Run a parse with [`ValueSeed`]: its result, and whether an object in it
/// repeated a key.
pub fn noting_duplicates<R>(parse: impl FnOnce() -> R) -> (R, bool) {
    DUPLICATES.with(|d| d.set(false));
    let result = parse();
    (result, DUPLICATES.with(Cell::get))
}

impl<'de> DeserializeSeed<'de> for ValueSeed {
    type Value = Value;

    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    #[inline]
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    #[inline]
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Value, E> {
        let de = de::value::I128Deserializer::<E>::new(v);
        <Number as de::Deserialize>::deserialize(de).map(Value::Number)
    }

    #[inline]
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Value, E> {
        let de = de::value::U128Deserializer::<E>::new(v);
        <Number as de::Deserialize>::deserialize(de).map(Value::Number)
    }

    #[inline]
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    #[inline]
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(String::from(v)))
    }

    #[inline]
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    #[inline]
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    #[inline]
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.deserialize(deserializer)
    }

    #[inline]
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    #[inline]
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    #[inline]
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(self)?;
            match members.entry(key) {
                serde_json::map::Entry::Vacant(e) => {
                    e.insert(value);
                }
                serde_json::map::Entry::Occupied(mut e) => {
                    e.insert(value);
                    DUPLICATES.with(|d| d.set(true));
                }
            }
        }
        Ok(Value::Object(members))
    }
}

/// A JSON body as `Value` (what [`crate::json::from_slice`] gives), and
/// whether an object in it repeats a key.
pub fn from_json_slice(bytes: &[u8]) -> serde_json::Result<(Value, bool)> {
    let (value, duplicates) = noting_duplicates(|| {
        // UTF-8 checked once for the whole input, as `json::from_slice` does.
        match crate::json::text(bytes) {
            Ok(text) => {
                let mut de = serde_json::Deserializer::from_str(text);
                let value = ValueSeed.deserialize(&mut de)?;
                de.end().map(|()| value)
            }
            Err(_) => {
                let mut de = serde_json::Deserializer::from_slice(bytes);
                let value = ValueSeed.deserialize(&mut de)?;
                de.end().map(|()| value)
            }
        }
    });
    Ok((value?, duplicates))
}

/// The repeated keys of a JSON document decoded without a schema (upstream
/// decodes custom resources into `map[string]interface{}`), in document
/// order, as upstream's strict errors name them: `duplicate field
/// "spec.foo"`, `duplicate field "spec.ports[0].protocol"`. Each text once,
/// at most [`MAX_STRICT_ERRORS`]. Empty for input that does not parse.
pub fn duplicate_fields(bytes: &[u8]) -> Vec<String> {
    let mut scan = Scan {
        path: String::new(),
        errors: Vec::new(),
    };
    let mut de = serde_json::Deserializer::from_slice(bytes);
    match DupSeed(&mut scan).deserialize(&mut de) {
        Ok(()) => scan.errors,
        Err(_) => Vec::new(),
    }
}

/// Upstream's path of a strict error: the field stack (`spec.ports[0]`),
/// then `.field` (or the field alone at the root).
pub fn field_path(stack: &str, field: &str) -> String {
    if stack.is_empty() {
        field.to_string()
    } else {
        [stack, ".", field].concat()
    }
}

/// Record `error` as upstream's strict decoder does: each text once, at
/// most [`MAX_STRICT_ERRORS`].
pub fn push_strict_error(errors: &mut Vec<String>, error: String) {
    if errors.len() < MAX_STRICT_ERRORS && !errors.contains(&error) {
        errors.push(error);
    }
}

struct Scan {
    /// Upstream's strict field stack: `spec.ports[0]`.
    path: String,
    errors: Vec<String>,
}

struct DupSeed<'a>(&'a mut Scan);

impl<'de> DeserializeSeed<'de> for DupSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for DupSeed<'_> {
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
        let scan = self.0;
        let mut i = 0usize;
        loop {
            let len = scan.path.len();
            scan.path.push('[');
            scan.path.push_str(itoa::Buffer::new().format(i));
            scan.path.push(']');
            let more = seq.next_element_seed(DupSeed(&mut *scan))?;
            scan.path.truncate(len);
            if more.is_none() {
                return Ok(());
            }
            i += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let scan = self.0;
        let mut seen: Vec<String> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            if seen.contains(&key) {
                let error = format!(
                    "duplicate field {}",
                    crate::gofmt::quote(&field_path(&scan.path, &key))
                );
                push_strict_error(&mut scan.errors, error);
            }
            let len = scan.path.len();
            if len > 0 {
                scan.path.push('.');
            }
            scan.path.push_str(&key);
            map.next_value_seed(DupSeed(&mut *scan))?;
            scan.path.truncate(len);
            seen.push(key);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_value_as_serde_json_and_duplicates_noticed() {
        for body in [
            r#"{"a":1,"b":[1,2.5,-3,"x",null,true,{"c":{}}],"d":18446744073709551615}"#,
            r#"{"n":1e300,"m":123456789012345678901234567890}"#,
            "[]",
            r#""s""#,
        ] {
            let (value, dup) = from_json_slice(body.as_bytes()).unwrap();
            assert_eq!(
                value,
                serde_json::from_str::<Value>(body).unwrap(),
                "{body}"
            );
            assert!(!dup, "{body}");
        }
        let body = r#"{"spec":{"replicas":2,"replicas":3}}"#;
        let (value, dup) = from_json_slice(body.as_bytes()).unwrap();
        assert_eq!(value, serde_json::json!({"spec": {"replicas": 3}}));
        assert!(dup);
        assert!(from_json_slice(b"{\"a\":1} x").is_err());
        assert_eq!(
            from_json_slice(b"{\"a\":").unwrap_err().to_string(),
            serde_json::from_slice::<Value>(b"{\"a\":")
                .unwrap_err()
                .to_string()
        );
    }

    #[test]
    fn duplicate_paths_as_upstream_names_them() {
        // Measured against kube-apiserver 1.37.2 (a custom resource).
        let body = r#"{"metadata":{"name":"x","labels":{"a":"b","a":"c"}},
            "spec":{"foo":"a","foo":"b","template":{"metadata":{"name":"n","name":"m"},
            "zz":{"q":1,"q":2}},"ports":[{"protocol":"TCP","protocol":"UDP"}]},"spec":{},"spec":{}}"#;
        assert_eq!(
            duplicate_fields(body.as_bytes()),
            [
                r#"duplicate field "metadata.labels.a""#,
                r#"duplicate field "spec.foo""#,
                r#"duplicate field "spec.template.metadata.name""#,
                r#"duplicate field "spec.template.zz.q""#,
                r#"duplicate field "spec.ports[0].protocol""#,
                r#"duplicate field "spec""#,
            ]
        );
        assert!(duplicate_fields(br#"{"a":[{"b":1},{"b":2}]}"#).is_empty());
    }
}
