//! Field selectors: the `fieldSelector` query syntax (`fields.ParseSelector`).
//!
//! Only `=`, `==` and `!=` exist; terms are ANDed. In values, `\`, `,` and `=`
//! are escaped with a backslash; field names are never escaped (upstream
//! splits each term at its first operator).

use std::fmt;

use serde_json::Value;

use super::SelectorError;

/// Field selector operators (`==` parses as `Eq` and prints as `=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldOp {
    Eq,
    NotEq,
}

/// One `field=value` / `field!=value` term, value unescaped.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldRequirement {
    pub field: String,
    pub op: FieldOp,
    pub value: String,
}

impl FieldRequirement {
    /// Whether the object's value for `field` (None reads as "") satisfies this term.
    pub fn matches_value(&self, actual: Option<&str>) -> bool {
        let equal = actual.unwrap_or("") == self.value;
        match self.op {
            FieldOp::Eq => equal,
            FieldOp::NotEq => !equal,
        }
    }
}

/// Upstream's term `String()`: `field=escaped` or `field!=escaped`.
impl fmt::Display for FieldRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.op {
            FieldOp::Eq => "=",
            FieldOp::NotEq => "!=",
        };
        write!(f, "{}{op}{}", self.field, escape_value(&self.value))
    }
}

/// A conjunction of field terms; empty matches everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// Matches every object.
    pub fn everything() -> Self {
        Self::default()
    }

    /// From parts, normalized as parsing would: ordered by term text, and terms
    /// whose field and value are both empty dropped (upstream's `Transform`).
    pub fn new(mut requirements: Vec<FieldRequirement>) -> Self {
        requirements.retain(|r| !(r.field.is_empty() && r.value.is_empty()));
        requirements.sort_by_cached_key(ToString::to_string);
        FieldSelector { requirements }
    }

    /// Parses the `fieldSelector` query syntax, as upstream's `fields.ParseSelector`.
    /// Whitespace is not trimmed: `a = b` is field `a ` and value ` b`, as upstream.
    pub fn parse(selector: &str) -> Result<Self, SelectorError> {
        let mut terms = split_terms(selector);
        terms.sort_unstable();
        let mut requirements = Vec::with_capacity(terms.len());
        for term in terms.into_iter().filter(|t| !t.is_empty()) {
            let Some((field, op, raw)) = split_term(term) else {
                return Err(SelectorError::FieldTerm {
                    selector: selector.to_string(),
                    term: term.to_string(),
                });
            };
            let value = unescape_value(raw)?;
            if !(field.is_empty() && value.is_empty()) {
                requirements.push(FieldRequirement {
                    field: field.to_string(),
                    op,
                    value,
                });
            }
        }
        Ok(FieldSelector { requirements })
    }

    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    /// True when the selector does not restrict anything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The fields referenced, so callers can reject unsupported ones
    /// (`field label not supported: ...`) before matching.
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.requirements.iter().map(|r| r.field.as_str())
    }

    /// Whether every term holds; `get` returns an object's field value (owned
    /// or borrowed), and a missing field compares as the empty string.
    pub fn matches<S: AsRef<str>>(&self, get: impl Fn(&str) -> Option<S>) -> bool {
        self.requirements
            .iter()
            .all(|r| r.matches_value(get(&r.field).as_ref().map(AsRef::as_ref)))
    }

    /// The value `field` must equal, if some `=` term pins it (for indexes).
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.field == field && r.op == FieldOp::Eq)
            .map(|r| r.value.as_str())
    }
}

/// Upstream's `String()`: terms joined by `,`.
impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for FieldSelector {
    type Err = SelectorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// Reads a dotted path (`metadata.name`, `spec.nodeName`, `type`) from a JSON
/// object and renders it the way field selectors compare it: strings as is,
/// booleans `true`/`false`, numbers in decimal. Anything else is None.
pub fn field_value(obj: &Value, path: &str) -> Option<String> {
    let value = path.split('.').try_fold(obj, |cur, seg| cur.get(seg))?;
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Escapes `\`, `,` and `=` so a value can be embedded in a selector.
pub fn escape_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Reverses [`escape_value`]; unknown escapes and bare `,`/`=` are errors.
pub fn unescape_value(raw: &str) -> Result<String, SelectorError> {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e @ ('\\' | ',' | '=')) => out.push(e),
                Some(e) => return Err(SelectorError::InvalidEscape(format!("\\{e}"))),
                None => return Err(SelectorError::InvalidEscape("\\".into())),
            },
            ',' | '=' => return Err(SelectorError::UnescapedChar(c)),
            c => out.push(c),
        }
    }
    Ok(out)
}

/// Splits at commas not preceded by a backslash; escapes stay in the terms.
fn split_terms(selector: &str) -> Vec<&str> {
    if selector.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in selector.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            ',' => {
                terms.push(&selector[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    terms.push(&selector[start..]);
    terms
}

/// Splits a term at its first operator; `!=` and `==` win over `=`.
fn split_term(term: &str) -> Option<(&str, FieldOp, &str)> {
    const OPERATORS: [(&str, FieldOp); 3] = [
        ("!=", FieldOp::NotEq),
        ("==", FieldOp::Eq),
        ("=", FieldOp::Eq),
    ];
    term.char_indices().find_map(|(i, _)| {
        let rest = &term[i..];
        OPERATORS
            .iter()
            .find(|(op, _)| rest.starts_with(op))
            .map(|(op, kind)| (&term[..i], *kind, &rest[op.len()..]))
    })
}

#[cfg(test)]
mod tests;
