//! CEL types as the checker sees them, and the type a structural schema node
//! has in CEL (upstream's `SchemaDeclType`): objects with their properties as
//! fields, `additionalProperties` as maps, `x-kubernetes-int-or-string` as
//! dyn, strings by `format` as bytes, timestamps or durations.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use schema::structural::{AdditionalProperties, Structural};

/// A CEL type.
#[derive(Debug, Clone, PartialEq)]
pub enum Type {
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Null,
    Duration,
    Timestamp,
    /// A type as a value, the kind of a value (`type(x)`, `string`).
    Kind,
    Dyn,
    List(Box<Type>),
    Map(Box<Type>, Box<Type>),
    Optional(Box<Type>),
    /// A schema object: its fields by (escaped) name.
    Object(Arc<Object>),
    /// A library's opaque type, by its upstream name (`net.IP`).
    Opaque(String),
    /// A type parameter of a declaration (`A`, `T`).
    Param(char),
    /// One `[key or index, value]` pair of a two-variable comprehension's
    /// range (the macros' `@kubext_entries`): checked precisely, a list at
    /// run time.
    Entry(Box<Type>, Box<Type>),
}

/// A schema object type.
#[derive(Debug, Clone, PartialEq)]
pub struct Object {
    /// `selfType0.spec.template`: the object's path from `self`.
    pub name: String,
    pub fields: BTreeMap<String, Type>,
}

impl Type {
    pub fn list(t: Type) -> Type {
        Type::List(Box::new(t))
    }

    pub fn map(k: Type, v: Type) -> Type {
        Type::Map(Box::new(k), Box::new(v))
    }

    pub fn optional(t: Type) -> Type {
        Type::Optional(Box::new(t))
    }

    /// The type of the CEL value of a node of `s` (`None`: not visible to CEL,
    /// as an array without `items`); `resource_root` adds the fields every
    /// resource root has (`apiVersion`, `kind`, `metadata.name`,
    /// `metadata.generateName`).
    pub fn of_schema(s: &Structural, resource_root: bool) -> Option<Type> {
        of_schema_at(s, resource_root, "selfType0")
    }

    /// A whole object of a resource with schema `s`, as admission sees it:
    /// `apiVersion`, `kind`, any `metadata`, and the schema's fields.
    pub fn of_resource(s: &Structural) -> Option<Type> {
        let Type::Object(o) = of_schema_at(s, false, "Object")? else {
            return None;
        };
        let mut fields = o.fields.clone();
        fields.insert("apiVersion".into(), Type::String);
        fields.insert("kind".into(), Type::String);
        fields.insert("metadata".into(), Type::Dyn);
        Some(Type::Object(Arc::new(Object {
            name: o.name.clone(),
            fields,
        })))
    }
}

fn of_schema_at(s: &Structural, resource_root: bool, name: &str) -> Option<Type> {
    if s.extensions.int_or_string {
        return Some(Type::Dyn);
    }
    match s.type_.as_str() {
        "array" => {
            let items = s.items.as_deref()?;
            let item = of_schema_at(items, items.extensions.embedded_resource, name)?;
            Some(Type::list(item))
        }
        "object" => {
            if let Some(AdditionalProperties::Schema(values)) = &s.additional_properties {
                let v = of_schema_at(values, values.extensions.embedded_resource, name)?;
                return Some(Type::map(Type::String, v));
            }
            let mut fields = BTreeMap::new();
            for (property, schema) in &s.properties {
                let Some(field) = escape(property) else {
                    continue;
                };
                let child_name = format!("{name}.{field}");
                if let Some(t) =
                    of_schema_at(schema, schema.extensions.embedded_resource, &child_name)
                {
                    fields.insert(field, t);
                }
            }
            if resource_root {
                fields.insert("apiVersion".into(), Type::String);
                fields.insert("kind".into(), Type::String);
                let metadata = fields.entry("metadata".into()).or_insert_with(|| Type::Dyn);
                *metadata = Type::Object(Arc::new(Object {
                    name: format!("{name}.metadata"),
                    fields: BTreeMap::from([
                        ("name".into(), Type::String),
                        ("generateName".into(), Type::String),
                    ]),
                }));
            }
            Some(Type::Object(Arc::new(Object {
                name: name.to_string(),
                fields,
            })))
        }
        "string" => Some(match s.validation.format.as_deref() {
            Some("byte") => Type::Bytes,
            Some("duration") => Type::Duration,
            Some("date" | "date-time") => Type::Timestamp,
            _ => Type::String,
        }),
        "boolean" => Some(Type::Bool),
        "number" => Some(Type::Double),
        "integer" => Some(Type::Int),
        _ => None,
    }
}

/// Words CEL reserves, which a property named so is escaped from
/// (`__namespace__`).
const RESERVED: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// As [`escape`], borrowing the name when it needs no escaping (most do not).
pub fn escape_cow(property: &str) -> Option<std::borrow::Cow<'_, str>> {
    let plain = property.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && property
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !property.contains("__")
        && !RESERVED.contains(&property);
    if plain {
        return Some(std::borrow::Cow::Borrowed(property));
    }
    escape(property).map(std::borrow::Cow::Owned)
}

/// A property name as a CEL field name (upstream's `Escape`): reserved words
/// as `__word__`, `__`, `.`, `-` and `/` spelled out; `None` when it cannot be
/// one (a leading digit, any other character).
pub fn escape(property: &str) -> Option<String> {
    if property.is_empty() || property.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    if RESERVED.contains(&property) {
        return Some(format!("__{property}__"));
    }
    let mut out = String::with_capacity(property.len());
    let mut rest = property;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("__") {
            out.push_str("__underscores__");
            rest = after;
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == '_' => out.push(c),
            _ => return None,
        }
        rest = &rest[c.len_utf8()..];
    }
    Some(out)
}

impl fmt::Display for Type {
    /// As cel-go prints types in its messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Bool => f.write_str("bool"),
            Type::Int => f.write_str("int"),
            Type::Uint => f.write_str("uint"),
            Type::Double => f.write_str("double"),
            Type::String => f.write_str("string"),
            Type::Bytes => f.write_str("bytes"),
            Type::Null => f.write_str("null_type"),
            Type::Duration => f.write_str("google.protobuf.Duration"),
            Type::Timestamp => f.write_str("google.protobuf.Timestamp"),
            Type::Kind => f.write_str("type"),
            Type::Dyn => f.write_str("dyn"),
            Type::List(t) => write!(f, "list({t})"),
            Type::Map(k, v) => write!(f, "map({k}, {v})"),
            Type::Optional(t) => write!(f, "optional_type({t})"),
            Type::Object(o) => f.write_str(&o.name),
            Type::Opaque(name) => f.write_str(name),
            Type::Param(c) => write!(f, "{c}"),
            Type::Entry(..) => f.write_str("list(dyn)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn property_names_escape_as_upstreams() {
        // Upstream's escaping table (apiserver/pkg/cel/escaping_test.go).
        for (name, escaped) in [
            ("foo", Some("foo")),
            ("namespace", Some("__namespace__")),
            ("a-b", Some("a__dash__b")),
            ("a.b", Some("a__dot__b")),
            ("a/b", Some("a__slash__b")),
            ("a__b", Some("a__underscores__b")),
            ("a___b", Some("a__underscores___b")),
            ("1a", None),
            ("a:b", None),
            ("", None),
        ] {
            assert_eq!(escape(name).as_deref(), escaped, "{name}");
        }
    }

    #[test]
    fn schema_types_map_to_cel_types() {
        let s = Structural::compile(&json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "replicas": {"type": "integer"},
                "ratio": {"type": "number"},
                "port": {"x-kubernetes-int-or-string": true},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "names": {"type": "array", "items": {"type": "string"}},
                "when": {"type": "string", "format": "date-time"},
                "every": {"type": "string", "format": "duration"},
                "blob": {"type": "string", "format": "byte"}}}}}))
        .unwrap();
        let Some(Type::Object(root)) = Type::of_schema(&s, true) else {
            panic!("root is an object")
        };
        let Type::Object(spec) = &root.fields["spec"] else {
            panic!("spec is an object")
        };
        let field = |n: &str| spec.fields[n].to_string();
        assert_eq!(field("replicas"), "int");
        assert_eq!(field("ratio"), "double");
        assert_eq!(field("port"), "dyn");
        assert_eq!(field("labels"), "map(string, string)");
        assert_eq!(field("names"), "list(string)");
        assert_eq!(field("when"), "google.protobuf.Timestamp");
        assert_eq!(field("every"), "google.protobuf.Duration");
        assert_eq!(field("blob"), "bytes");
        assert!(root.fields.contains_key("apiVersion"));
        assert_eq!(root.fields["metadata"].to_string(), "selfType0.metadata");
    }
}
