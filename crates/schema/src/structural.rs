//! The `Structural` schema: a compiled, typed view of a CRD version's
//! `openAPIV3Schema` (upstream `apiextensions-apiserver/pkg/apiserver/schema`).

use std::collections::BTreeMap;

use regex::Regex;
use serde_json::{Map, Value};

/// Errors compiling a schema (a schema that passed [`crate::structural_errors`]
/// normally compiles; these guard against malformed input).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SchemaError {
    #[error("{path}: must be an object")]
    NotAnObject { path: String },
    #[error("{path}.pattern: invalid regular expression {pattern:?}: {message}")]
    InvalidPattern {
        path: String,
        pattern: String,
        message: String,
    },
}

/// `additionalProperties`: a bool or a schema.
#[derive(Debug, Clone)]
pub enum AdditionalProperties {
    Bool(bool),
    Schema(Box<Structural>),
}

/// One `x-kubernetes-validations` entry, kept raw for a CEL evaluator.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ValidationRule {
    pub rule: String,
    pub message: String,
    pub message_expression: String,
    pub reason: String,
    pub field_path: String,
    pub optional_old_self: Option<bool>,
}

/// A compiled `pattern`: the source text (used in messages) and its regex.
#[derive(Debug, Clone)]
pub struct Pattern {
    pub source: String,
    pub regex: Regex,
}

/// Value validations (upstream `ValueValidation`).
#[derive(Debug, Clone, Default)]
pub struct ValueValidation {
    pub format: Option<String>,
    pub maximum: Option<f64>,
    pub exclusive_maximum: bool,
    pub minimum: Option<f64>,
    pub exclusive_minimum: bool,
    pub multiple_of: Option<f64>,
    pub max_length: Option<i64>,
    pub min_length: Option<i64>,
    pub pattern: Option<Pattern>,
    pub max_items: Option<i64>,
    pub min_items: Option<i64>,
    pub unique_items: bool,
    pub max_properties: Option<i64>,
    pub min_properties: Option<i64>,
    pub required: Vec<String>,
    pub enum_values: Option<Vec<Value>>,
    pub all_of: Vec<Structural>,
    pub any_of: Vec<Structural>,
    pub one_of: Vec<Structural>,
    pub not: Option<Box<Structural>>,
}

/// The `x-kubernetes-*` extensions.
#[derive(Debug, Clone, Default)]
pub struct Extensions {
    pub preserve_unknown_fields: bool,
    pub embedded_resource: bool,
    pub int_or_string: bool,
    pub list_type: Option<String>,
    pub list_map_keys: Vec<String>,
    pub map_type: Option<String>,
    pub validations: Vec<ValidationRule>,
}

/// A structural schema node.
#[derive(Debug, Clone, Default)]
pub struct Structural {
    /// `type`; empty when unset.
    pub type_: String,
    pub nullable: bool,
    pub default: Option<Value>,
    pub description: String,
    /// Boxed: a map node holds room for 11 entries, and a `Structural` is large.
    pub properties: BTreeMap<String, Box<Structural>>,
    pub items: Option<Box<Structural>>,
    pub additional_properties: Option<AdditionalProperties>,
    pub extensions: Extensions,
    pub validation: ValueValidation,
    /// What this node and the nodes under it carry, worked out when compiled.
    pub below: Below,
}

/// What a schema node or any node under it (its properties, items and
/// `additionalProperties` schema: where the validation walks go) carries, so
/// a walk for a check skips the values under nodes without it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Below {
    /// `x-kubernetes-list-type: set` or `map`.
    pub list_types: bool,
    /// `x-kubernetes-embedded-resource`.
    pub embedded: bool,
    /// A `default`.
    pub defaults: bool,
}

impl Default for Below {
    /// Everything: a node built by hand, not compiled, is walked in full.
    fn default() -> Self {
        Below {
            list_types: true,
            embedded: true,
            defaults: true,
        }
    }
}

impl Below {
    /// A node's summary, from its own extensions and its children's summaries.
    fn of(s: &Structural) -> Below {
        let own = Below {
            list_types: s.is_list_set() || s.is_list_map(),
            embedded: s.extensions.embedded_resource,
            defaults: s.default.is_some(),
        };
        let ap = match &s.additional_properties {
            Some(AdditionalProperties::Schema(ap)) => Some(&**ap),
            _ => None,
        };
        s.properties
            .values()
            .map(|p| &**p)
            .chain(s.items.as_deref())
            .chain(ap)
            .fold(own, |acc, child| Below {
                list_types: acc.list_types || child.below.list_types,
                embedded: acc.embedded || child.below.embedded,
                defaults: acc.defaults || child.below.defaults,
            })
    }
}

impl Structural {
    /// Compiles an `openAPIV3Schema` JSON value. Patterns are compiled once here.
    pub fn compile(schema: &Value) -> Result<Structural, SchemaError> {
        compile_at(schema, "openAPIV3Schema")
    }

    /// The schema for the value under `key` of an object of this schema:
    /// `properties[key]`, else an `additionalProperties` schema.
    pub fn property(&self, key: &str) -> Option<&Structural> {
        self.properties
            .get(key)
            .map(|s| &**s)
            .or(match &self.additional_properties {
                Some(AdditionalProperties::Schema(s)) => Some(s),
                _ => None,
            })
    }

    /// Whether the list is `x-kubernetes-list-type: map`.
    pub fn is_list_map(&self) -> bool {
        self.extensions.list_type.as_deref() == Some("map")
    }

    /// Whether the list is `x-kubernetes-list-type: set`.
    pub fn is_list_set(&self) -> bool {
        self.extensions.list_type.as_deref() == Some("set")
    }
}

/// Compiles a schema `pattern` (Go RE2 syntax) with Go's semantics for the
/// Perl classes: `\d`, `\w`, `\s` and `\b` are ASCII-only in Go, Unicode-aware
/// in Rust's `regex`, so they are rewritten to their ASCII forms.
pub fn go_regex(pattern: &str) -> Result<Regex, regex::Error> {
    Regex::new(&ascii_perl_classes(pattern))
}

fn ascii_perl_classes(p: &str) -> String {
    let mut out = String::with_capacity(p.len() + 16);
    let mut chars = p.chars().peekable();
    let mut in_class = false;
    // characters consumed since the class opened (`]` first is literal)
    let mut class_len = 0usize;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(n) = chars.next() else {
                    out.push('\\');
                    break;
                };
                let rep = match (n, in_class) {
                    ('d', false) => Some("[0-9]"),
                    ('D', _) => Some("[^0-9]"),
                    ('w', false) => Some("[0-9A-Za-z_]"),
                    ('W', _) => Some("[^0-9A-Za-z_]"),
                    ('s', false) => Some("[\\t\\n\\f\\r ]"),
                    ('S', _) => Some("[^\\t\\n\\f\\r ]"),
                    ('d', true) => Some("0-9"),
                    ('w', true) => Some("0-9A-Za-z_"),
                    ('s', true) => Some("\\t\\n\\f\\r "),
                    ('b', false) => Some("(?-u:\\b)"),
                    ('B', false) => Some("(?-u:\\B)"),
                    _ => None,
                };
                match rep {
                    Some(r) => out.push_str(r),
                    None => {
                        out.push('\\');
                        out.push(n);
                    }
                }
                if in_class {
                    class_len += 1;
                }
            }
            '[' if !in_class => {
                in_class = true;
                class_len = 0;
                out.push(c);
                if chars.peek() == Some(&'^') {
                    out.push('^');
                    chars.next();
                }
            }
            '[' if in_class && chars.peek() == Some(&':') => {
                // POSIX class such as [[:alpha:]]: copy through its closing `]`
                out.push(c);
                for d in chars.by_ref() {
                    out.push(d);
                    if d == ']' {
                        break;
                    }
                }
                class_len += 1;
            }
            ']' if in_class && class_len > 0 => {
                in_class = false;
                out.push(c);
            }
            _ => {
                if in_class {
                    class_len += 1;
                }
                out.push(c);
            }
        }
    }
    out
}

/// Compile a convenient `Structural` (same as [`Structural::compile`]).
pub fn compile(schema: &Value) -> Result<Structural, SchemaError> {
    Structural::compile(schema)
}

fn i64_of(m: &Map<String, Value>, k: &str) -> Option<i64> {
    m.get(k).and_then(|v| {
        v.as_i64()
            .or_else(|| v.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
    })
}

fn bool_of(m: &Map<String, Value>, k: &str) -> bool {
    m.get(k).and_then(Value::as_bool).unwrap_or(false)
}

fn str_of(m: &Map<String, Value>, k: &str) -> String {
    m.get(k)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn compile_list(
    m: &Map<String, Value>,
    k: &str,
    path: &str,
) -> Result<Vec<Structural>, SchemaError> {
    let mut out = Vec::new();
    if let Some(arr) = m.get(k).and_then(Value::as_array) {
        for (i, v) in arr.iter().enumerate() {
            out.push(compile_at(v, &format!("{path}.{k}[{i}]"))?);
        }
    }
    Ok(out)
}

fn compile_at(schema: &Value, path: &str) -> Result<Structural, SchemaError> {
    let Some(m) = schema.as_object() else {
        return Err(SchemaError::NotAnObject {
            path: path.to_string(),
        });
    };
    let mut s = Structural {
        type_: str_of(m, "type"),
        nullable: bool_of(m, "nullable"),
        default: m.get("default").cloned(),
        description: str_of(m, "description"),
        ..Default::default()
    };
    if let Some(props) = m.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            s.properties.insert(
                k.clone(),
                Box::new(compile_at(v, &format!("{path}.properties[{k}]"))?),
            );
        }
    }
    if let Some(items) = m.get("items") {
        if items.is_object() {
            s.items = Some(Box::new(compile_at(items, &format!("{path}.items"))?));
        } else if let Some(first) = items.as_array().and_then(|a| a.first()) {
            s.items = Some(Box::new(compile_at(first, &format!("{path}.items"))?));
        }
    }
    match m.get("additionalProperties") {
        Some(Value::Bool(b)) => s.additional_properties = Some(AdditionalProperties::Bool(*b)),
        Some(v @ Value::Object(_)) => {
            s.additional_properties = Some(AdditionalProperties::Schema(Box::new(compile_at(
                v,
                &format!("{path}.additionalProperties"),
            )?)))
        }
        _ => {}
    }
    let x = &mut s.extensions;
    x.preserve_unknown_fields = bool_of(m, "x-kubernetes-preserve-unknown-fields");
    x.embedded_resource = bool_of(m, "x-kubernetes-embedded-resource");
    x.int_or_string = bool_of(m, "x-kubernetes-int-or-string");
    x.list_type = m
        .get("x-kubernetes-list-type")
        .and_then(Value::as_str)
        .map(str::to_string);
    x.map_type = m
        .get("x-kubernetes-map-type")
        .and_then(Value::as_str)
        .map(str::to_string);
    x.list_map_keys = m
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    if let Some(rules) = m.get("x-kubernetes-validations").and_then(Value::as_array) {
        for r in rules.iter().filter_map(Value::as_object) {
            x.validations.push(ValidationRule {
                rule: str_of(r, "rule"),
                message: str_of(r, "message"),
                message_expression: str_of(r, "messageExpression"),
                reason: str_of(r, "reason"),
                field_path: str_of(r, "fieldPath"),
                optional_old_self: r.get("optionalOldSelf").and_then(Value::as_bool),
            });
        }
    }
    let v = &mut s.validation;
    v.format = m.get("format").and_then(Value::as_str).map(str::to_string);
    v.maximum = m.get("maximum").and_then(Value::as_f64);
    v.exclusive_maximum = bool_of(m, "exclusiveMaximum");
    v.minimum = m.get("minimum").and_then(Value::as_f64);
    v.exclusive_minimum = bool_of(m, "exclusiveMinimum");
    v.multiple_of = m.get("multipleOf").and_then(Value::as_f64);
    v.max_length = i64_of(m, "maxLength");
    v.min_length = i64_of(m, "minLength");
    if let Some(p) = m.get("pattern").and_then(Value::as_str) {
        let regex = go_regex(p).map_err(|e| SchemaError::InvalidPattern {
            path: path.to_string(),
            pattern: p.to_string(),
            message: e.to_string(),
        })?;
        v.pattern = Some(Pattern {
            source: p.to_string(),
            regex,
        });
    }
    v.max_items = i64_of(m, "maxItems");
    v.min_items = i64_of(m, "minItems");
    v.unique_items = bool_of(m, "uniqueItems");
    v.max_properties = i64_of(m, "maxProperties");
    v.min_properties = i64_of(m, "minProperties");
    v.required = m
        .get("required")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    v.enum_values = m.get("enum").and_then(Value::as_array).cloned();
    v.all_of = compile_list(m, "allOf", path)?;
    v.any_of = compile_list(m, "anyOf", path)?;
    v.one_of = compile_list(m, "oneOf", path)?;
    if let Some(n) = m.get("not") {
        v.not = Some(Box::new(compile_at(n, &format!("{path}.not"))?));
    }
    s.below = Below::of(&s);
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::go_regex;

    #[test]
    fn perl_classes_are_ascii_like_go() {
        let cases: &[(&str, &str, bool)] = &[
            (r"^\d+$", "123", true),
            (r"^\d+$", "١٢٣", false),
            (r"^[\d-]+$", "1-2", true),
            (r"^[^\d]+$", "abc", true),
            (r"^[^\d]+$", "a1", false),
            (r"^\w+$", "héllo", false),
            (r"^\w+$", "hello_1", true),
            (r"^\s$", "\u{a0}", false),
            (r"^[]a]+$", "]a", true),
            (r"^[[:alpha:]\d]+$", "a1", true),
            (r"\bfoo\b", "a foo b", true),
            (r"^\.\\d$", ".\\d", true),
            (r"^é+$", "éé", true),
        ];
        for (p, v, want) in cases {
            let re = go_regex(p).unwrap_or_else(|e| panic!("{p}: {e}"));
            assert_eq!(re.is_match(v), *want, "{p} on {v:?}");
        }
    }
}
