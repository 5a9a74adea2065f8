//! JSON values as CEL values, converted once per evaluation and borrowing the
//! JSON's strings: integers are `int`, numbers `double` (also when integral),
//! strings by their schema's `format` bytes, timestamps or durations, objects
//! maps keyed by their escaped property names; at a resource root only
//! `apiVersion`, `kind`, `metadata.name` and `metadata.generateName` are
//! visible.
//!
//! Hot path: every rule and policy evaluation converts its variables here.

use std::borrow::Cow;
use std::collections::HashMap;

use apimachinery::meta;
use cel::common::types::{
    CelBool, CelBytes, CelDouble, CelDuration, CelInt, CelList, CelMap, CelMapKey, CelNull,
    CelString, CelTimestamp,
};
use cel::common::value::Val;
use schema::structural::{AdditionalProperties, Structural};
use serde_json::Value;

use crate::list_types::{Matching, TypedList};
use crate::types;

/// `v` under schema `s` (`None`: no schema, as for admission policies).
pub(crate) fn to_val<'a>(
    v: &'a Value,
    s: Option<&Structural>,
    resource_root: bool,
) -> Box<dyn Val + 'a> {
    match v {
        Value::Null => Box::new(CelNull),
        Value::Bool(b) => Box::new(CelBool::from(*b)),
        Value::Number(n) => {
            let number = s.is_some_and(|s| s.type_ == "number");
            match n.as_i64() {
                Some(i) if !number => Box::new(CelInt::from(i)),
                _ => Box::new(CelDouble::from(n.as_f64().unwrap_or(f64::NAN))),
            }
        }
        Value::String(st) => {
            formatted(st, s).unwrap_or_else(|| Box::new(CelString::from(st.as_str())))
        }
        Value::Array(a) => {
            let items = s.and_then(|s| s.items.as_deref());
            let embedded = items.is_some_and(|i| i.extensions.embedded_resource);
            let list: Vec<Box<dyn Val + 'a>> =
                a.iter().map(|i| to_val(i, items, embedded)).collect();
            let list = CelList::from(list);
            match s.and_then(|s| s.extensions.list_type.as_deref()) {
                Some("set") => Box::new(TypedList::new(list, Matching::Set)),
                Some("map") => {
                    // Keys as the elements' (escaped) field names.
                    let keys = s
                        .map(|s| {
                            s.extensions
                                .list_map_keys
                                .iter()
                                .filter_map(|k| types::escape(k))
                                .collect()
                        })
                        .unwrap_or_default();
                    Box::new(TypedList::new(list, Matching::Map(keys)))
                }
                _ => Box::new(list),
            }
        }
        Value::Object(o) => {
            // Properties are fields, escaped; additionalProperties are map keys.
            let escaped = s.is_some_and(|s| {
                !matches!(
                    s.additional_properties,
                    Some(AdditionalProperties::Schema(_))
                )
            });
            let mut map: HashMap<CelMapKey<'a>, Box<dyn Val + 'a>> =
                HashMap::with_capacity(o.len());
            for (k, val) in o {
                if resource_root && k == "metadata" {
                    continue;
                }
                let key = if escaped {
                    match types::escape_cow(k) {
                        Some(key) => key,
                        None => continue,
                    }
                } else {
                    Cow::Borrowed(k.as_str())
                };
                let child = s.and_then(|s| s.property(k));
                let embedded = child.is_some_and(|c| c.extensions.embedded_resource);
                map.insert(key_of(key), to_val(val, child, embedded));
            }
            if resource_root && let Some(md) = meta::metadata(v) {
                let mut visible: HashMap<CelMapKey<'a>, Box<dyn Val + 'a>> = HashMap::new();
                for k in ["name", "generateName"] {
                    if let Some((key, v)) = md.get_key_value(k) {
                        visible.insert(CelMapKey::from(key.as_str()), to_val(v, None, false));
                    }
                }
                map.insert(CelMapKey::from("metadata"), Box::new(CelMap::from(visible)));
            }
            Box::new(CelMap::from(map))
        }
    }
}

fn key_of(key: Cow<'_, str>) -> CelMapKey<'_> {
    match key {
        Cow::Borrowed(k) => CelMapKey::from(k),
        Cow::Owned(k) => CelMapKey::from(k),
    }
}

/// A string of a `format` CEL has a type for; `None` when it is not one or
/// does not parse (schema validation reports that).
fn formatted<'a>(st: &str, s: Option<&Structural>) -> Option<Box<dyn Val + 'a>> {
    use base64::Engine;
    Some(match s?.validation.format.as_deref()? {
        "byte" => Box::new(CelBytes::from(
            base64::engine::general_purpose::STANDARD.decode(st).ok()?,
        )),
        "date-time" => Box::new(CelTimestamp::from(
            chrono::DateTime::parse_from_rfc3339(st).ok()?,
        )),
        "date" => {
            let day = chrono::NaiveDate::parse_from_str(st, "%Y-%m-%d").ok()?;
            Box::new(CelTimestamp::from(
                day.and_hms_opt(0, 0, 0)?.and_utc().fixed_offset(),
            ))
        }
        "duration" => Box::new(CelDuration::from(parse_duration(st)?)),
        _ => return None,
    })
}

/// A `format: duration` string (Go's `time.ParseDuration` syntax: `1h30m`,
/// `1.5s`, `-2ms`).
pub(crate) fn parse_duration(st: &str) -> Option<chrono::Duration> {
    let (negative, mut rest) = match st.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, st.strip_prefix('+').unwrap_or(st)),
    };
    if rest == "0" {
        return Some(chrono::Duration::zero());
    }
    let mut nanos: f64 = 0.0;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .filter(|&i| i > 0)?;
        let number: f64 = rest[..number_end].parse().ok()?;
        rest = &rest[number_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        nanos += number * scale;
        rest = &rest[unit_end..];
    }
    let nanos = if negative { -nanos } else { nanos };
    Some(chrono::Duration::nanoseconds(nanos as i64))
}
