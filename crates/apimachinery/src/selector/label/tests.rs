//! Label selector parsing and matching, table and property tests.

use super::*;
use proptest::prelude::*;
use serde_json::json;

/// The label-value message, as it appears inside selector errors.
const VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const NAME_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const OPS: &str = "in, notin, =, ==, !=, gt, lt";

fn labels(pairs: &[(&str, &str)]) -> Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect()
}

#[test]
fn parse_prints_back_canonically() {
    // input -> upstream's String() of the parsed selector
    let cases = [
        ("", ""),
        ("x=a,y=b,z=c", "x=a,y=b,z=c"),
        ("x!=a,y=b", "x!=a,y=b"),
        ("x=", "x="),
        ("x= ", "x="),
        ("x=,z= ", "x=,z="),
        ("x= ,z= ", "x=,z="),
        ("!x", "!x"),
        ("x>1", "x>1"),
        ("x>1,z<5", "x>1,z<5"),
        ("x==a", "x==a"),
        ("  a  in  ( b , a , a )  ", "a in (a,b)"),
        ("a notin ()", "a notin ()"),
        ("a in (,x)", "a in (,x)"),
        ("a in (x,)", "a in (,x)"),
        ("a in (x,,y)", "a in (,x,y)"),
        ("z,!y,x=1", "x=1,!y,z"),
        ("x=a,a=x", "a=x,x=a"),
        ("in=notin", "in=notin"),
        ("a in (in,notin)", "a in (in,notin)"),
        ("example.com/app=web", "example.com/app=web"),
        ("a\tin\n(b)", "a in (b)"),
        ("a\u{0}", "a"),
        ("\u{0}garbage", ""),
        ("\u{0}=", ""),
    ];
    for (input, want) in cases {
        let sel = LabelSelector::parse(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
        assert_eq!(sel.to_string(), want, "{input:?}");
    }
}

#[test]
fn parse_errors_match_upstream() {
    let cases: Vec<(&str, String)> = vec![
        ("x=a||y=b", format!("unable to parse requirement: values[0][x]: Invalid value: \"a||y\": {VALUE_MSG}")),
        ("x==a==b", "found '==', expected: ',' or 'end of string'".into()),
        ("!x=a", "found '=', expected: ',' or 'end of string'".into()),
        (
            "x<a",
            "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer".into(),
        ),
        ("x>", "unable to parse requirement: values[0]: Invalid value: \"\": for 'Gt', 'Lt' operators, the value must be an integer".into()),
        ("x y", format!("unable to parse requirement: found 'y', expected: {OPS}")),
        ("x (", format!("unable to parse requirement: found '(', expected: {OPS}")),
        ("x !", format!("unable to parse requirement: found '!', expected: {OPS}")),
        ("x in y", "unable to parse requirement: found 'y' expected: '('".into()),
        ("x in (", "unable to parse requirement: found '', expected: ',', ')' or identifier".into()),
        ("x in (a", "unable to parse requirement: found '', expected: ',' or ')'".into()),
        ("x in (a,", "unable to parse requirement: found '', expected: ',', or identifier".into()),
        ("x in (a b)", "unable to parse requirement: found 'b', expected: ',' or ')'".into()),
        ("x=(", "unable to parse requirement: found '(', expected: identifier".into()),
        ("a,", "found '', expected: identifier after ','".into()),
        ("a,,b", "found ',', expected: identifier after ','".into()),
        (",a", "found ',', expected: !, identifier, or 'end of string'".into()),
        ("=a", "found '=', expected: !, identifier, or 'end of string'".into()),
        ("!", "unable to parse requirement: found '', expected: identifier".into()),
        ("!!a", "unable to parse requirement: found '!', expected: identifier".into()),
        ("a\u{0}garbage", format!("unable to parse requirement: found 'garbage', expected: {OPS}")),
        ("a b", format!("unable to parse requirement: found 'b', expected: {OPS}")),
        ("-a", format!("unable to parse requirement: <nil>: Invalid value: \"-a\": {NAME_MSG}")),
        (
            "/a",
            "unable to parse requirement: <nil>: Invalid value: \"/a\": prefix part must be non-empty".into(),
        ),
        ("a=-b", format!("unable to parse requirement: values[0][a]: Invalid value: \"-b\": {VALUE_MSG}")),
        (
            "a in (-b,-c)",
            format!(
                "unable to parse requirement: [values[0][a]: Invalid value: \"-b\": {VALUE_MSG}, values[1][a]: Invalid value: \"-c\": {VALUE_MSG}]"
            ),
        ),
    ];
    for (input, want) in cases {
        let err = LabelSelector::parse(input).expect_err(input);
        assert_eq!(err.to_string(), want, "{input:?}");
    }
    let long = "v".repeat(64);
    let err = LabelSelector::parse(&format!("a={long}")).expect_err("too long");
    assert_eq!(
        err.to_string(),
        format!(
            "unable to parse requirement: values[0][a]: Invalid value: \"{long}\": must be no more than 63 characters"
        )
    );
}

/// Selector, labels, whether it matches.
type MatchCase<'a> = (&'a str, &'a [(&'a str, &'a str)], bool);

#[test]
fn matches_table() {
    let set = [("foo", "bar"), ("baz", "blah"), ("n", "5")];
    // selector, labels, expected
    let cases: &[MatchCase] = &[
        ("", &[("x", "y")], true),
        ("", &[], true),
        ("x=y", &[("x", "y")], true),
        ("x=y,z=w", &[("x", "y"), ("z", "w")], true),
        ("x!=y,z!=w", &[("x", "z"), ("z", "a")], true),
        ("notin=in", &[("notin", "in")], true),
        ("x", &[("x", "z")], true),
        ("!x", &[("y", "z")], true),
        ("x>1", &[("x", "2")], true),
        ("x<1", &[("x", "0")], true),
        ("x=z", &[], false),
        ("x=y", &[("x", "z")], false),
        ("x=y,z=w", &[("x", "w"), ("z", "w")], false),
        ("x!=y,z!=w", &[("x", "z"), ("z", "w")], false),
        ("x", &[("y", "z")], false),
        ("!x", &[("x", "z")], false),
        ("x>1", &[("x", "0")], false),
        ("x<1", &[("x", "2")], false),
        ("x>1", &[("x", "two")], false),
        ("x>1", &[], false),
        ("x=", &[("x", "")], true),
        ("x=", &[], false),
        ("x!=", &[], true),
        ("x in (a,b)", &[("x", "b")], true),
        ("x in (a,b)", &[("x", "c")], false),
        ("x in (a,b)", &[], false),
        ("x notin (a,b)", &[], true),
        ("x notin (a,b)", &[("x", "a")], false),
        ("x in ()", &[("x", "")], true),
        ("foo=bar", &set, true),
        ("baz=blah", &set, true),
        ("foo=bar,baz=blah", &set, true),
        ("foo=blah", &set, false),
        ("baz=bar", &set, false),
        ("foo=bar,foobar=bar,baz=blah", &set, false),
        ("n>4,n<6", &set, true),
    ];
    for (selector, pairs, want) in cases {
        let sel = LabelSelector::parse(selector).expect(selector);
        let map = labels(pairs);
        assert_eq!(sel.matches(Some(&map)), *want, "{selector:?} on {pairs:?}");
        if pairs.is_empty() {
            assert_eq!(sel.matches(None), *want, "{selector:?} on no labels");
        }
    }
}

#[test]
fn non_string_label_values_compare_by_json_text() {
    let map: Map<String, Value> = [("n".to_string(), json!(3)), ("b".to_string(), json!(true))]
        .into_iter()
        .collect();
    let sel = LabelSelector::parse("n=3,b=true,n>2").expect("valid");
    assert!(sel.matches(Some(&map)));
}

#[test]
fn empty_and_exact_match() {
    assert!(LabelSelector::parse("").expect("valid").is_empty());
    assert!(LabelSelector::everything().is_empty());
    assert!(!LabelSelector::nothing().is_empty());
    assert!(!LabelSelector::nothing().matches(None));
    let sel = LabelSelector::parse("a=1,b in (2),c in (3,4),d").expect("valid");
    assert_eq!(sel.requires_exact_match("a"), Some("1"));
    assert_eq!(sel.requires_exact_match("b"), Some("2"));
    assert_eq!(sel.requires_exact_match("c"), None);
    assert_eq!(sel.requires_exact_match("d"), None);
    assert_eq!(sel.requires_exact_match("e"), None);
}

#[test]
fn matches_with_custom_lookup() {
    let sel = LabelSelector::parse("app=web,!legacy").expect("valid");
    let store = std::collections::BTreeMap::from([("app", "web")]);
    assert!(sel.matches_with(|k| store.get(k).copied()));
    assert!(!sel.matches_with(|k| (k == "legacy").then_some("x")));
}

#[test]
fn from_json_table() {
    let cases = [
        (json!(null), Ok("")),
        (json!({}), Ok("")),
        (json!({"matchLabels": {"b": "2", "a": "1"}}), Ok("a=1,b=2")),
        (
            json!({"matchExpressions": [
                {"key": "z", "operator": "In", "values": ["y", "x"]},
                {"key": "a", "operator": "DoesNotExist"},
                {"key": "m", "operator": "NotIn", "values": ["q"]},
                {"key": "e", "operator": "Exists", "values": []}
            ]}),
            Ok("!a,e,m notin (q),z in (x,y)"),
        ),
        (
            json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}),
            Err(r#""Gt" is not a valid label selector operator"#.to_string()),
        ),
        (
            json!({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}),
            Err("values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty".into()),
        ),
        (
            json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x", "y"]}]}),
            Err(r#"values: Invalid value: []string{"x", "y"}: values set must be empty for exists and does not exist"#.into()),
        ),
        (
            json!({"matchLabels": {"a": "-x"}}),
            Err(format!("values[0][a]: Invalid value: \"-x\": {VALUE_MSG}")),
        ),
        (
            json!({"matchLabels": {"-a": "x"}}),
            Err(format!("key: Invalid value: \"-a\": {NAME_MSG}")),
        ),
        (
            json!({"matchExpressions": [{"key": "a", "operator": "In", "values": ["ok", "-x"]}]}),
            Err(format!("values[1][a]: Invalid value: \"-x\": {VALUE_MSG}")),
        ),
        (json!("a=b"), Err("Invalid value: \"a=b\": must be of type object".into())),
        (
            json!({"matchLabels": {"a": 1}}),
            Err("matchLabels.a: Invalid value: 1: must be of type string".into()),
        ),
    ];
    for (input, want) in cases {
        let got = LabelSelector::from_json(&input)
            .map(|s| s.to_string())
            .map_err(|e| e.to_string());
        let want = want.map(str::to_string);
        assert_eq!(got, want, "{input}");
    }
}

#[test]
fn from_json_null_matches_nothing_and_empty_everything() {
    let nothing = LabelSelector::from_json(&json!(null)).expect("valid");
    let everything = LabelSelector::from_json(&json!({"matchLabels": {}})).expect("valid");
    let map = labels(&[("a", "b")]);
    assert!(!nothing.matches(Some(&map)));
    assert!(everything.matches(Some(&map)));
    assert!(everything.is_empty());
}

#[test]
fn requirement_new_validates_arity() {
    let cases = [
        (
            Operator::Equals,
            vec![],
            r#"values: Invalid value: []string(nil): exact-match compatibility requires one single value"#,
        ),
        (
            Operator::NotEquals,
            vec!["a", "b"],
            r#"values: Invalid value: []string{"a", "b"}: exact-match compatibility requires one single value"#,
        ),
        (
            Operator::GreaterThan,
            vec!["1", "x"],
            r#"[values: Invalid value: []string{"1", "x"}: for 'Gt', 'Lt' operators, exactly one value is required, values[1]: Invalid value: "x": for 'Gt', 'Lt' operators, the value must be an integer]"#,
        ),
    ];
    for (op, values, want) in cases {
        let values = values.into_iter().map(String::from).collect();
        let err = Requirement::new("k", op, values).expect_err("invalid");
        assert_eq!(err.to_string(), want, "{op:?}");
    }
    let ok = Requirement::new("k", Operator::In, vec!["b".into(), "a".into(), "b".into()])
        .expect("valid");
    assert_eq!(ok.values(), ["a", "b"]);
    assert_eq!(ok.to_string(), "k in (a,b)");
}

// ---------------------------------------------------------------------------
// Properties.

fn key_strategy() -> impl Strategy<Value = String> {
    let name = "[A-Za-z0-9]([-A-Za-z0-9_.]{0,20}[A-Za-z0-9])?";
    let prefix = proptest::option::of("[a-z0-9]([-a-z0-9]{0,8}[a-z0-9])?(\\.[a-z0-9]{1,5}){0,2}");
    let special = prop::sample::select(vec!["in".to_string(), "notin".to_string()]);
    prop_oneof![
        4 => (prefix, name).prop_map(|(p, n)| p.map_or(n.clone(), |p| format!("{p}/{n}"))),
        1 => special,
    ]
}

fn value_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "([A-Za-z0-9]([-A-Za-z0-9_.]{0,20}[A-Za-z0-9])?)?",
        1 => prop::sample::select(vec!["in".to_string(), "notin".to_string(), String::new()]),
    ]
}

fn requirement_strategy() -> impl Strategy<Value = Requirement> {
    let single = (
        prop::sample::select(vec![
            Operator::Equals,
            Operator::DoubleEquals,
            Operator::NotEquals,
        ]),
        value_strategy(),
    )
        .prop_map(|(op, v)| (op, vec![v]));
    let set = (
        prop::sample::select(vec![Operator::In, Operator::NotIn]),
        prop::collection::vec(value_strategy(), 1..4),
    );
    let unary = prop::sample::select(vec![Operator::Exists, Operator::DoesNotExist])
        .prop_map(|op| (op, vec![]));
    let int = (
        prop::sample::select(vec![Operator::GreaterThan, Operator::LessThan]),
        0i64..100_000,
    )
        .prop_map(|(op, n)| (op, vec![n.to_string()]));
    (key_strategy(), prop_oneof![single, set, unary, int]).prop_map(|(key, (op, values))| {
        Requirement::new(&key, op, values).expect("strategy yields valid requirements")
    })
}

proptest! {
    #[test]
    fn display_then_parse_round_trips(reqs in prop::collection::vec(requirement_strategy(), 0..6)) {
        let sel = LabelSelector::from_requirements(reqs);
        let text = sel.to_string();
        let parsed = LabelSelector::parse(&text);
        prop_assert_eq!(parsed.as_ref().ok(), Some(&sel), "text {:?}: {:?}", text, parsed);
    }

    #[test]
    fn parse_never_panics(input in any::<String>()) {
        let _ = LabelSelector::parse(&input);
    }

    #[test]
    fn parse_never_panics_on_selector_like_text(input in "[a-c!=<>(), \t\u{0}/.-]{0,24}|([a-z]{1,3}|in|notin|[!=<>(), ]){0,12}") {
        if let Ok(sel) = LabelSelector::parse(&input) {
            // Whatever parses prints to something that parses to the same.
            prop_assert_eq!(LabelSelector::parse(&sel.to_string()).ok(), Some(sel));
        }
    }

    #[test]
    fn equality_matches_exactly_the_equal_maps(
        pairs in prop::collection::btree_map(
            prop::sample::select(vec!["a", "b", "c"]),
            prop::sample::select(vec!["b", "a", "", "bb"]),
            0..3,
        )
    ) {
        let map: Map<String, Value> = pairs.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
        let sel = LabelSelector::parse("a=b").expect("valid");
        prop_assert_eq!(sel.matches(Some(&map)), pairs.get("a") == Some(&"b"));
    }
}
