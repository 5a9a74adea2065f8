//! Go-flavoured rendering of JSON values for error messages.
//!
//! Upstream builds many patch error messages with `fmt`'s `%v` on decoded
//! `interface{}` values (`map[name:a]`, `[a b]`, `<nil>`) and with Go type
//! names (`map[string]interface {}`). Reproducing that keeps our messages
//! recognisable to clients and to people comparing against a real cluster.

use serde_json::Value;

/// The coarse Go dynamic type a decoded JSON value would have upstream
/// (Kubernetes decodes whole numbers as `int64`, others as `float64`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GoKind {
    Nil,
    Bool,
    Int,
    Float,
    String,
    Slice,
    Map,
}

pub(crate) fn go_kind(v: &Value) -> GoKind {
    match v {
        Value::Null => GoKind::Nil,
        Value::Bool(_) => GoKind::Bool,
        Value::Number(n) if n.is_f64() => GoKind::Float,
        Value::Number(_) => GoKind::Int,
        Value::String(_) => GoKind::String,
        Value::Array(_) => GoKind::Slice,
        Value::Object(_) => GoKind::Map,
    }
}

/// `reflect.TypeOf(v).String()` for a decoded JSON value.
pub(crate) fn go_type_name(v: &Value) -> &'static str {
    match go_kind(v) {
        GoKind::Nil => "<nil>",
        GoKind::Bool => "bool",
        GoKind::Int => "int64",
        GoKind::Float => "float64",
        GoKind::String => "string",
        GoKind::Slice => "[]interface {}",
        GoKind::Map => "map[string]interface {}",
    }
}

/// `fmt.Sprintf("%v", v)` for a decoded JSON value.
pub(crate) fn sprint(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v);
    out
}

/// `fmt.Sprintf("%v", list)` for a list of values.
pub(crate) fn sprint_list(items: &[Value]) -> String {
    let mut out = String::new();
    write_list(&mut out, items);
    out
}

fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => out.push_str(&format_float(f)),
            _ => out.push_str(&n.to_string()),
        },
        Value::String(s) => out.push_str(s),
        Value::Array(items) => write_list(out, items),
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push_str("map[");
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(k);
                out.push(':');
                write_value(out, &map[k.as_str()]);
            }
            out.push(']');
        }
    }
}

fn write_list(out: &mut String, items: &[Value]) {
    out.push('[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        write_value(out, item);
    }
    out.push(']');
}

pub(crate) use apimachinery::gofmt::format_float;

pub(crate) use apimachinery::gofmt::quote;

/// Length of `json.Marshal(v)` in Go: compact, with `<`, `>`, `&`, U+2028 and
/// U+2029 escaped as `\uXXXX`. Used for the JSON patch copy-size limit.
pub(crate) fn go_json_len(v: &Value) -> usize {
    let compact = serde_json::to_string(v).unwrap_or_default();
    let extra: usize = compact
        .chars()
        .map(|c| match c {
            '<' | '>' | '&' => 5,
            '\u{2028}' | '\u{2029}' => 3,
            _ => 0,
        })
        .sum();
    compact.len() + extra
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sprint_matches_go_percent_v() {
        assert_eq!(
            sprint(&json!({"b": [1, "x"], "a": null})),
            "map[a:<nil> b:[1 x]]"
        );
        assert_eq!(sprint(&json!(true)), "true");
        assert_eq!(
            sprint_list(&[json!("a"), json!({"name": "b"})]),
            "[a map[name:b]]"
        );
    }

    #[test]
    fn floats_follow_strconv_g() {
        assert_eq!(format_float(1.5), "1.5");
        assert_eq!(format_float(999_999.0), "999999");
        assert_eq!(format_float(1_000_000.0), "1e+06");
        assert_eq!(format_float(1_234_567.0), "1.234567e+06");
        assert_eq!(format_float(0.0001), "0.0001");
        assert_eq!(format_float(0.00001), "1e-05");
        assert_eq!(format_float(-2.5e-7), "-2.5e-07");
    }

    #[test]
    fn go_json_len_counts_html_escapes() {
        assert_eq!(go_json_len(&json!("a<b")), "\"a\\u003cb\"".len());
        assert_eq!(go_json_len(&json!({"a": 1})), 7);
    }
}
