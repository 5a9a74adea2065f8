//! Field selector parsing and matching, table and property tests.

use super::*;
use proptest::prelude::*;
use serde_json::json;

fn req(field: &str, op: FieldOp, value: &str) -> FieldRequirement {
    FieldRequirement {
        field: field.into(),
        op,
        value: value.into(),
    }
}

/// Input, expected requirements as (field, op, value), expected printed form.
type ParseCase<'a> = (&'a str, &'a [(&'a str, FieldOp, &'a str)], &'a str);

#[test]
fn parse_table() {
    use FieldOp::{Eq, NotEq};
    let cases: &[ParseCase] = &[
        ("", &[], ""),
        ("a=b", &[("a", Eq, "b")], "a=b"),
        ("a==b", &[("a", Eq, "b")], "a=b"),
        ("a!=b", &[("a", NotEq, "b")], "a!=b"),
        ("x=a,y=b", &[("x", Eq, "a"), ("y", Eq, "b")], "x=a,y=b"),
        ("y=b,x=a", &[("x", Eq, "a"), ("y", Eq, "b")], "x=a,y=b"),
        ("a=b,,c=d", &[("a", Eq, "b"), ("c", Eq, "d")], "a=b,c=d"),
        ("a=", &[("a", Eq, "")], "a="),
        ("a=b!c", &[("a", Eq, "b!c")], "a=b!c"),
        (r"a=x\,y\=z\\", &[("a", Eq, r"x,y=z\")], r"a=x\,y\=z\\"),
        (
            "metadata.name=foo",
            &[("metadata.name", Eq, "foo")],
            "metadata.name=foo",
        ),
        ("a = b", &[("a ", Eq, " b")], "a = b"),
        ("=", &[], ""),
        ("!=", &[], ""),
        ("=x", &[("", Eq, "x")], "=x"),
        ("é=ü", &[("é", Eq, "ü")], "é=ü"),
    ];
    for (input, want, printed) in cases {
        let sel = FieldSelector::parse(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
        let want: Vec<_> = want.iter().map(|(f, op, v)| req(f, *op, v)).collect();
        assert_eq!(sel.requirements(), want.as_slice(), "{input:?}");
        assert_eq!(sel.to_string(), *printed, "{input:?}");
    }
}

#[test]
fn parse_errors_table() {
    let cases = [
        ("a", "invalid selector: 'a'; can't understand 'a'"),
        ("x=1,b", "invalid selector: 'x=1,b'; can't understand 'b'"),
        (
            "a!==b",
            "invalid field selector: unescaped character in value: 61",
        ),
        (
            "a=b=c",
            "invalid field selector: unescaped character in value: 61",
        ),
        (
            r"a=b\,c,d",
            "invalid selector: 'a=b\\,c,d'; can't understand 'd'",
        ),
        (
            r"a=b\x",
            "invalid field selector: invalid escape sequence: \\x",
        ),
        (
            r"a=b\!",
            "invalid field selector: invalid escape sequence: \\!",
        ),
        (
            r"a=b\",
            "invalid field selector: invalid escape sequence: \\",
        ),
    ];
    for (input, want) in cases {
        let err = FieldSelector::parse(input).expect_err(input);
        assert_eq!(err.to_string(), want, "{input:?}");
    }
}

#[test]
fn matches_table() {
    let pod = json!({
        "metadata": {"name": "web-1", "namespace": "default"},
        "spec": {"nodeName": "node-a", "unschedulable": false, "replicas": 3},
        "status": {"phase": "Running"},
        "type": "Warning",
    });
    let cases = [
        ("", true),
        ("metadata.name=web-1", true),
        ("metadata.name==web-1", true),
        ("metadata.name!=web-1", false),
        ("metadata.name=web-1,status.phase=Running", true),
        ("metadata.name=web-1,status.phase=Pending", false),
        ("spec.nodeName=", false),
        ("spec.missing=", true),
        ("spec.missing!=", false),
        ("spec.missing!=x", true),
        ("spec.unschedulable=false", true),
        ("spec.replicas=3", true),
        ("type=Warning", true),
        ("metadata=", true),
    ];
    for (selector, want) in cases {
        let sel = FieldSelector::parse(selector).expect(selector);
        assert_eq!(sel.matches(|f| field_value(&pod, f)), want, "{selector:?}");
    }
}

#[test]
fn field_value_table() {
    let obj = json!({
        "metadata": {"name": "n"},
        "spec": {"nodeName": "a", "flag": true, "count": 7, "ratio": 1.5, "list": [1], "none": null},
        "involvedObject": {"kind": "Pod"},
        "type": "Normal",
    });
    let cases = [
        ("metadata.name", Some("n")),
        ("spec.nodeName", Some("a")),
        ("spec.flag", Some("true")),
        ("spec.count", Some("7")),
        ("spec.ratio", Some("1.5")),
        ("involvedObject.kind", Some("Pod")),
        ("type", Some("Normal")),
        ("spec.list", None),
        ("spec.none", None),
        ("spec", None),
        ("spec.nodeName.deeper", None),
        ("nope", None),
        ("", None),
    ];
    for (path, want) in cases {
        assert_eq!(field_value(&obj, path).as_deref(), want, "{path:?}");
    }
}

#[test]
fn fields_and_exact_match() {
    let sel = FieldSelector::parse("spec.nodeName=a,metadata.name!=b").expect("valid");
    let fields: Vec<&str> = sel.fields().collect();
    assert_eq!(fields, ["metadata.name", "spec.nodeName"]);
    assert_eq!(sel.requires_exact_match("spec.nodeName"), Some("a"));
    assert_eq!(sel.requires_exact_match("metadata.name"), None);
    assert!(!sel.is_empty());
    assert!(FieldSelector::parse("").expect("valid").is_empty());
}

#[test]
fn escape_round_trip_table() {
    for raw in ["", "plain", r"a\b", "a,b", "a=b", r"\\,,==", "!x"] {
        assert_eq!(
            unescape_value(&escape_value(raw)).as_deref(),
            Ok(raw),
            "{raw:?}"
        );
    }
}

fn requirement_strategy() -> impl Strategy<Value = FieldRequirement> {
    (
        "[a-zA-Z][a-zA-Z.]{0,15}",
        prop::sample::select(vec![FieldOp::Eq, FieldOp::NotEq]),
        any::<String>(),
    )
        .prop_map(|(field, op, value)| FieldRequirement { field, op, value })
}

proptest! {
    #[test]
    fn display_then_parse_round_trips(reqs in prop::collection::vec(requirement_strategy(), 0..6)) {
        let sel = FieldSelector::new(reqs);
        let text = sel.to_string();
        let parsed = FieldSelector::parse(&text);
        prop_assert_eq!(parsed.as_ref().ok(), Some(&sel), "text {:?}: {:?}", text, parsed);
    }

    #[test]
    fn parse_never_panics(input in any::<String>()) {
        let _ = FieldSelector::parse(&input);
    }

    #[test]
    fn parse_never_panics_on_selector_like_text(input in r"[a-c!=,\\ é.]{0,24}") {
        if let Ok(sel) = FieldSelector::parse(&input) {
            let _ = sel.to_string();
        }
    }

    #[test]
    fn equality_matches_exactly_equal_values(value in proptest::option::of("[ab]{0,2}")) {
        let sel = FieldSelector::parse("a=b").expect("valid");
        let got = sel.matches(|f| if f == "a" { value.clone() } else { None });
        prop_assert_eq!(got, value.as_deref() == Some("b"));
    }
}
