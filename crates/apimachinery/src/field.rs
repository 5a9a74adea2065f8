//! Field paths and field errors (`field.ErrorList` upstream), formatted with
//! upstream's texts, e.g. `spec.bars[0].name: Required value`.

use serde_json::Value;
use std::fmt;

/// A path to a field: `metadata.labels[app]`, `spec.ports[0].port`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldPath(String);

impl FieldPath {
    pub fn new(root: &str) -> Self {
        FieldPath(root.to_string())
    }

    pub fn root() -> Self {
        FieldPath(String::new())
    }

    // Paths are built for every field validated, not only failing ones:
    // joined by hand, a fraction of what `format!` costs.
    pub fn child(&self, name: &str) -> Self {
        if self.0.is_empty() {
            return FieldPath(name.to_string());
        }
        self.joined(&[".", name])
    }

    pub fn index(&self, i: usize) -> Self {
        self.joined(&["[", itoa::Buffer::new().format(i), "]"])
    }

    pub fn key(&self, k: &str) -> Self {
        self.joined(&["[", k, "]"])
    }

    fn joined(&self, parts: &[&str]) -> Self {
        let len = self.0.len() + parts.iter().map(|p| p.len()).sum::<usize>();
        let mut path = String::with_capacity(len);
        path.push_str(&self.0);
        parts.iter().for_each(|p| path.push_str(p));
        FieldPath(path)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A field path made only when something is reported there: walks over a
/// whole object pass these down instead of building a [`FieldPath`] for every
/// field, most of which validate.
#[derive(Debug, Clone, Copy)]
pub enum LazyPath<'a> {
    At(&'a FieldPath),
    Child(&'a LazyPath<'a>, &'a str),
    Key(&'a LazyPath<'a>, &'a str),
    Index(&'a LazyPath<'a>, usize),
    /// A map's value under an `additionalProperties` schema: kube-openapi's
    /// schema errors name it as a child (`.k`), CEL rule errors as a key
    /// (`[k]`, `field.Path.Key`); see [`LazyPath::keyed`].
    MapValue(&'a LazyPath<'a>, &'a str),
}

impl<'a> LazyPath<'a> {
    pub fn child(&'a self, name: &'a str) -> LazyPath<'a> {
        LazyPath::Child(self, name)
    }

    pub fn key(&'a self, k: &'a str) -> LazyPath<'a> {
        LazyPath::Key(self, k)
    }

    pub fn index(&'a self, i: usize) -> LazyPath<'a> {
        LazyPath::Index(self, i)
    }

    pub fn map_value(&'a self, k: &'a str) -> LazyPath<'a> {
        LazyPath::MapValue(self, k)
    }

    /// The path as CEL rule errors write it: map values as keys.
    pub fn keyed(&self) -> String {
        match self {
            LazyPath::At(path) => path.0.clone(),
            LazyPath::Child(parent, name) if parent.is_empty() => (*name).to_string(),
            LazyPath::Child(parent, name) => format!("{}.{name}", parent.keyed()),
            LazyPath::Key(parent, k) | LazyPath::MapValue(parent, k) => {
                format!("{}[{k}]", parent.keyed())
            }
            LazyPath::Index(parent, i) => format!("{}[{i}]", parent.keyed()),
        }
    }

    /// Whether the path renders as nothing (the empty root, or empty names
    /// under it).
    pub fn is_empty(&self) -> bool {
        match self {
            LazyPath::At(path) => path.0.is_empty(),
            LazyPath::Child(parent, name) | LazyPath::MapValue(parent, name) => {
                name.is_empty() && parent.is_empty()
            }
            LazyPath::Key(..) | LazyPath::Index(..) => false,
        }
    }

    /// The path itself.
    pub fn build(&self) -> FieldPath {
        match self {
            LazyPath::At(path) => (*path).clone(),
            LazyPath::Child(parent, name) | LazyPath::MapValue(parent, name) => {
                parent.build().child(name)
            }
            LazyPath::Key(parent, k) => parent.build().key(k),
            LazyPath::Index(parent, i) => parent.build().index(*i),
        }
    }
}

/// As the built path renders.
impl fmt::Display for LazyPath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LazyPath::At(path) => f.write_str(&path.0),
            LazyPath::Child(parent, name) | LazyPath::MapValue(parent, name)
                if parent.is_empty() =>
            {
                f.write_str(name)
            }
            LazyPath::Child(parent, name) | LazyPath::MapValue(parent, name) => {
                write!(f, "{parent}.{name}")
            }
            LazyPath::Key(parent, k) => write!(f, "{parent}[{k}]"),
            LazyPath::Index(parent, i) => write!(f, "{parent}[{i}]"),
        }
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorType {
    NotFound,
    Required,
    Duplicate,
    Invalid,
    NotSupported,
    Forbidden,
    TooLong,
    TooMany,
    Internal,
    TypeInvalid,
}

impl ErrorType {
    fn text(&self) -> &'static str {
        match self {
            ErrorType::NotFound => "Not found",
            ErrorType::Required => "Required value",
            ErrorType::Duplicate => "Duplicate value",
            ErrorType::Invalid => "Invalid value",
            ErrorType::NotSupported => "Unsupported value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::TooLong => "Too long",
            ErrorType::TooMany => "Too many",
            ErrorType::Internal => "Internal error",
            ErrorType::TypeInvalid => "Invalid value",
        }
    }
}

/// One validation failure at one field.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    pub kind: ErrorType,
    pub field: String,
    pub bad_value: Option<BadValue>,
    pub detail: String,
}

/// The offending value as the message shows it.
#[derive(Debug, Clone, PartialEq)]
pub enum BadValue {
    /// A JSON value, rendered as upstream renders unstructured values.
    Json(Value),
    /// Already in Go's `%#v` form, where a typed Go value prints differently
    /// (an `int64` zero is `0x0`).
    Go(String),
}

impl From<Value> for BadValue {
    fn from(v: Value) -> Self {
        BadValue::Json(v)
    }
}

pub type ErrorList = Vec<FieldError>;

impl FieldError {
    fn new(kind: ErrorType, path: &FieldPath, bad_value: Option<Value>, detail: &str) -> Self {
        FieldError {
            kind,
            field: path.0.clone(),
            bad_value: bad_value.map(BadValue::Json),
            detail: detail.to_string(),
        }
    }

    /// `Invalid value` with a value in Go's own rendering (e.g. `0x0`).
    pub fn invalid_go(path: &FieldPath, go_value: &str, detail: &str) -> Self {
        FieldError {
            kind: ErrorType::Invalid,
            field: path.0.clone(),
            bad_value: Some(BadValue::Go(go_value.to_string())),
            detail: detail.to_string(),
        }
    }

    /// `Invalid value` whose value upstream leaves out (`field.OmitValueType`):
    /// `Invalid value: <detail>`.
    pub fn invalid_omitted(path: &FieldPath, detail: &str) -> Self {
        Self::new(ErrorType::Invalid, path, None, detail)
    }

    /// `Duplicate value` with a value in Go's own rendering (a struct's JSON).
    pub fn duplicate_go(path: &FieldPath, go_value: &str) -> Self {
        FieldError {
            kind: ErrorType::Duplicate,
            field: path.0.clone(),
            bad_value: Some(BadValue::Go(go_value.to_string())),
            detail: String::new(),
        }
    }

    pub fn required(path: &FieldPath, detail: &str) -> Self {
        Self::new(ErrorType::Required, path, None, detail)
    }

    pub fn invalid(path: &FieldPath, value: Value, detail: &str) -> Self {
        Self::new(ErrorType::Invalid, path, Some(value), detail)
    }

    pub fn forbidden(path: &FieldPath, detail: &str) -> Self {
        Self::new(ErrorType::Forbidden, path, None, detail)
    }

    pub fn duplicate(path: &FieldPath, value: Value) -> Self {
        Self::new(ErrorType::Duplicate, path, Some(value), "")
    }

    pub fn not_found(path: &FieldPath, value: Value) -> Self {
        Self::new(ErrorType::NotFound, path, Some(value), "")
    }

    pub fn type_invalid(path: &FieldPath, value: Value, detail: &str) -> Self {
        Self::new(ErrorType::TypeInvalid, path, Some(value), detail)
    }

    pub fn internal(path: &FieldPath, detail: &str) -> Self {
        Self::new(ErrorType::Internal, path, None, detail)
    }

    /// `Unsupported value: "qux": supported values: "a", "b"`.
    pub fn not_supported(path: &FieldPath, value: Value, supported: &[&str]) -> Self {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(ErrorType::NotSupported, path, Some(value), &detail)
    }

    /// `Too long: may not be more than 63 bytes` (upstream 1.32 wording).
    pub fn too_long(path: &FieldPath, max: usize) -> Self {
        Self::new(
            ErrorType::TooLong,
            path,
            None,
            &format!("may not be more than {max} bytes"),
        )
    }

    /// `Too long: may not be more than 63 characters` (declarative
    /// validation's `maxLength`, which counts characters).
    pub fn too_long_characters(path: &FieldPath, max: usize) -> Self {
        Self::new(
            ErrorType::TooLong,
            path,
            None,
            &format!("may not be more than {max} characters"),
        )
    }

    pub fn too_many(path: &FieldPath, actual: usize, max: usize) -> Self {
        Self::new(
            ErrorType::TooMany,
            path,
            Some(Value::from(actual)),
            &format!("must have at most {max} items"),
        )
    }

    /// The message without the leading `field: ` (used for `StatusCause.message`).
    pub fn message_without_field(&self) -> String {
        let mut s = self.kind.text().to_string();
        match &self.bad_value {
            Some(BadValue::Json(v)) => {
                s.push_str(": ");
                s.push_str(&render_value(v));
            }
            Some(BadValue::Go(v)) => {
                s.push_str(": ");
                s.push_str(v);
            }
            None => {}
        }
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

/// Go's `%#v`-like rendering upstream uses for bad values: strings quoted, numbers bare.
fn render_value(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Null => "null".into(),
        other => other.to_string(),
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Go prints `field: body` even for an empty field (`: Invalid value: …`).
        write!(f, "{}: {}", self.field, self.message_without_field())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn formats_like_upstream() {
        let p = FieldPath::new("spec").child("bars").index(0).child("name");
        assert_eq!(
            FieldError::required(&p, "").to_string(),
            "spec.bars[0].name: Required value"
        );
        assert_eq!(
            FieldError::not_supported(
                &FieldPath::new("spec").child("x"),
                json!("qux"),
                &["a", "b"]
            )
            .to_string(),
            "spec.x: Unsupported value: \"qux\": supported values: \"a\", \"b\""
        );
        assert_eq!(
            FieldError::invalid(
                &FieldPath::new("metadata").child("labels").key("a b"),
                json!("a b"),
                "bad"
            )
            .to_string(),
            "metadata.labels[a b]: Invalid value: \"a b\": bad"
        );
    }
}
