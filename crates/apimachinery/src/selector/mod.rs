//! Label and field selectors, parsed and matched exactly as kube-apiserver 1.32
//! does (`k8s.io/apimachinery/pkg/labels` and `.../pkg/fields`), including
//! its error texts, which clients show to users verbatim.

pub mod field;
pub mod label;

pub use field::{FieldOp, FieldRequirement, FieldSelector, field_value};
pub use label::{LabelSelector, Operator, Requirement};

/// Why a selector could not be parsed or built. `Display` is upstream's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// A label requirement failed to parse or validate.
    #[error("unable to parse requirement: {0}")]
    Requirement(String),
    /// Label selector syntax between requirements (`found ',', expected: ...`).
    #[error("{0}")]
    Syntax(String),
    /// A requirement built from parts (e.g. a `metav1.LabelSelector`) was rejected.
    #[error("{0}")]
    Invalid(String),
    /// A `matchExpressions[].operator` that is not In/NotIn/Exists/DoesNotExist.
    #[error("{} is not a valid label selector operator", crate::gofmt::quote(.0))]
    UnknownOperator(String),
    /// A field selector term without a recognized operator.
    #[error("invalid selector: '{selector}'; can't understand '{term}'")]
    FieldTerm { selector: String, term: String },
    /// A field selector value with a backslash not followed by `\`, `,` or `=`.
    #[error("invalid field selector: invalid escape sequence: {0}")]
    InvalidEscape(String),
    /// A field selector value with a bare `,` or `=`. Upstream prints the code
    /// point as a number (Go's `%v` of a rune); so do we.
    #[error("invalid field selector: unescaped character in value: {}", u32::from(*.0))]
    UnescapedChar(char),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_quote_escapes_like_go() {
        let cases = [
            ("abc", r#""abc""#),
            ("a\"b", r#""a\"b""#),
            ("a\\b", r#""a\\b""#),
            ("\n\t", r#""\n\t""#),
            ("\u{0}", r#""\x00""#),
            ("\u{7f}", r#""\x7f""#),
            ("é", "\"é\""),
        ];
        for (input, want) in cases {
            assert_eq!(crate::gofmt::quote(input), want, "{input:?}");
        }
    }

    #[test]
    fn error_messages() {
        let cases = [
            (
                SelectorError::Requirement("x".into()),
                "unable to parse requirement: x",
            ),
            (
                SelectorError::UnknownOperator("Foo".into()),
                r#""Foo" is not a valid label selector operator"#,
            ),
            (
                SelectorError::FieldTerm {
                    selector: "a,b".into(),
                    term: "b".into(),
                },
                "invalid selector: 'a,b'; can't understand 'b'",
            ),
            (
                SelectorError::InvalidEscape("\\x".into()),
                "invalid field selector: invalid escape sequence: \\x",
            ),
            (
                SelectorError::UnescapedChar('='),
                "invalid field selector: unescaped character in value: 61",
            ),
        ];
        for (err, want) in cases {
            assert_eq!(err.to_string(), want);
        }
    }
}
