//! The direct evaluator against the `cel` crate: whenever it answers, the
//! crate answers the same over the same values.

use std::sync::atomic::{AtomicUsize, Ordering};

use cel::objects::Value as CelValue;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use schema::structural::Structural;
use serde_json::{Value, json};

use super::compile;

fn schema(v: Value) -> Structural {
    Structural::compile(&v).unwrap()
}

/// The schema every generated rule runs against (as the node's `self`).
fn test_schema() -> Structural {
    let object = json!({"type": "object", "properties": {
        "s": {"type": "string"}, "i": {"type": "integer"}}});
    schema(json!({"type": "object", "properties": {
        "i": {"type": "integer"},
        "j": {"type": "integer"},
        "n": {"type": "number"},
        "s": {"type": "string"},
        "t": {"type": "string"},
        "b": {"type": "boolean"},
        "by": {"type": "string", "format": "byte"},
        "ts": {"type": "string", "format": "date-time"},
        "du": {"type": "string", "format": "duration"},
        "ios": {"x-kubernetes-int-or-string": true},
        "tags": {"type": "array", "x-kubernetes-list-type": "set",
            "items": {"type": "string"}},
        "nums": {"type": "array", "items": {"type": "integer"}},
        "objs": {"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "properties": {
                "name": {"type": "string"}, "v": {"type": "integer"}}}},
        "m": {"type": "object", "additionalProperties": {"type": "string"}},
        "o": object,
        "any": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        "emb": {"type": "object", "x-kubernetes-embedded-resource": true,
            "x-kubernetes-preserve-unknown-fields": true},
        "metadata": {"type": "object"},
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
    }}))
}

/// A generator driven by a sequence of choices (proptest shrinks the
/// sequence, and so the rule and the values).
struct Gen<'c> {
    choices: &'c [u32],
    at: usize,
}

impl Gen<'_> {
    fn pick(&mut self, n: usize) -> usize {
        let c = self.choices.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        c as usize % n
    }

    fn one<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.pick(from.len())]
    }

    /// A field a rule selects: an object's member or a rule-only name.
    fn field_name(&mut self) -> &'static str {
        let i = self.pick(OBJECT_FIELDS.len() + RULE_ONLY_FIELDS.len());
        match OBJECT_FIELDS.get(i) {
            Some(member) => member,
            None => RULE_ONLY_FIELDS[i - OBJECT_FIELDS.len()],
        }
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.pick(100) < percent
    }
}

/// The members a generated object may have (each with values of its own kind).
const OBJECT_FIELDS: [&str; 22] = [
    "i",
    "j",
    "n",
    "s",
    "t",
    "b",
    "by",
    "ts",
    "du",
    "ios",
    "tags",
    "nums",
    "objs",
    "m",
    "o",
    "any",
    "emb",
    "metadata",
    "apiVersion",
    "kind",
    "a-b",
    "zz",
];
/// What generated rules select beside an object's members (written as a
/// rule writes them): names no object has, and escaped ones.
const RULE_ONLY_FIELDS: [&str; 8] = [
    "name",
    "v",
    "x",
    "a",
    "`a-b`",
    "a__dash__b",
    "labels",
    "generateName",
];
const STRINGS: &[&str] = &[
    "''",
    "'a'",
    "'-'",
    "'forbidden'",
    "'πέντε'",
    "'a-b'",
    "'1h'",
    "'YWJj'",
    "'2020-01-01T00:00:00Z'",
    "'\\u00e9'",
];
const INTS: &[&str] = &[
    "0",
    "1",
    "-1",
    "1000",
    "2",
    "5",
    "9223372036854775807",
    "-9223372036854775807",
];
/// Literals the evaluator leaves to the crate.
const OTHER_LITERALS: &[&str] = &["1.0", "2.5", "3u", "null", "b'a'", "-0.0"];
const UNSUPPORTED: &[&str] = &[
    "self.i + 1 > 2",
    "self.s.matches('^a')",
    "self.tags.map(x, x).size() > 0",
    "self.tags[0] == 'a'",
    "int(self.ios) > 0",
    "type(self.i) == int",
    "self.objs.all(i, x, x.v > 0)",
    "sets.contains(self.tags, ['a'])",
    "self.?i.orValue(0) > 0",
    "self.tags.filter(x, x == 'a').size() == 1",
    "string(self.i) == '1'",
    "self.s.lowerAscii() == 'a'",
    "{'a': 1}.a == 1",
];

impl Gen<'_> {
    /// A value expression over `vars` (the comprehension variables).
    fn operand(&mut self, vars: &[&str], depth: usize) -> String {
        match self.pick(if depth == 0 { 6 } else { 8 }) {
            0 | 1 => self.path(vars),
            2 => self.one(STRINGS).to_string(),
            3 => self.one(INTS).to_string(),
            4 => match self.pick(4) {
                0 => self.one(OTHER_LITERALS).to_string(),
                1 => "true".into(),
                2 => "false".into(),
                _ => self.list(vars),
            },
            5 => {
                let of = self.operand(vars, depth.saturating_sub(1));
                if self.chance(50) {
                    format!("size({of})")
                } else {
                    format!("({of}).size()")
                }
            }
            6 => format!(
                "({} ? {} : {})",
                self.rule(vars, depth - 1),
                self.operand(vars, depth - 1),
                self.operand(vars, depth - 1)
            ),
            _ => format!("({} + 1)", self.operand(vars, depth - 1)),
        }
    }

    /// An operand that is an int on well-typed values.
    fn typed_int(&mut self, vars: &[&str]) -> String {
        let var = vars.last().copied().unwrap_or("self");
        match self.pick(5) {
            0 => self.one(INTS).to_string(),
            1 => self
                .one(&["self.i", "self.j", "oldSelf.i", "self.o.i"])
                .to_string(),
            2 if self.chance(50) => format!("{var}.v"),
            2 => var.to_string(),
            3 => {
                let s = self.typed_string(vars);
                if self.chance(50) {
                    format!("size({s})")
                } else {
                    format!("{s}.size()")
                }
            }
            _ => format!(
                "size({})",
                self.one(&["self.tags", "self.nums", "oldSelf.tags", "[1, 2]"])
            ),
        }
    }

    /// An operand that is a string on well-typed values.
    fn typed_string(&mut self, vars: &[&str]) -> String {
        let var = vars.last().copied().unwrap_or("self");
        match self.pick(4) {
            0 => self.one(STRINGS).to_string(),
            1 => self
                .one(&[
                    "self.s",
                    "self.t",
                    "oldSelf.s",
                    "self.o.s",
                    "self.m.x",
                    "self.by",
                    "self.ts",
                    "self.du",
                    "self.ios",
                    "self.metadata.name",
                ])
                .to_string(),
            2 => var.to_string(),
            _ => format!("{var}.name"),
        }
    }

    fn path(&mut self, vars: &[&str]) -> String {
        let mut roots = vec!["self", "self", "self", "oldSelf"];
        roots.extend(vars.iter().flat_map(|v| [*v, *v]));
        let mut p = self.one(&roots).to_string();
        if self.chance(50) {
            // The well-typed fields, most often.
            p.push('.');
            p.push_str(self.one(&["i", "s", "t", "b", "tags", "nums", "objs", "o", "m"]));
        }
        for _ in 0..self.pick(3) {
            p.push('.');
            p.push_str(self.field_name());
        }
        p
    }

    fn list(&mut self, vars: &[&str]) -> String {
        match self.pick(6) {
            0 => "['a', 'b']".into(),
            1 => "[1, 2, 1000]".into(),
            2 => self
                .one(&["[1, 'a', true]", "['a', 1]", "[true, 'b', 2]"])
                .into(),
            3 => "[]".into(),
            4 => self
                .one(&["self.tags", "self.nums", "self.objs", "oldSelf.tags"])
                .into(),
            _ => self.path(vars),
        }
    }

    /// A bool expression (mostly) over `vars`.
    fn rule(&mut self, vars: &[&str], depth: usize) -> String {
        match self.pick(if depth == 0 { 7 } else { 13 }) {
            0 => self.one(&["true", "false"]).to_string(),
            1 => self.path(vars),
            2 if self.chance(60) => {
                // Well-typed, most likely.
                let op = self.one(&["==", "!=", "<", "<=", ">", ">="]);
                let (a, b) = if self.chance(50) {
                    (self.typed_int(vars), self.typed_int(vars))
                } else {
                    (self.typed_string(vars), self.typed_string(vars))
                };
                format!("{a} {op} {b}")
            }
            2 | 3 => {
                let op = self.one(&["==", "!=", "<", "<=", ">", ">="]);
                format!(
                    "{} {op} {}",
                    self.operand(vars, depth),
                    self.operand(vars, depth)
                )
            }
            4 if self.chance(30) => format!(
                "has({}.metadata.{})",
                self.one(&["self", "self.emb", "self.any"]),
                self.one(&["name", "generateName", "labels", "x"])
            ),
            4 => format!("has({}.{})", self.path(vars), self.field_name()),
            5 => {
                let f = self.one(&["startsWith", "endsWith", "contains"]);
                format!(
                    "{}.{f}({})",
                    self.operand(vars, depth),
                    self.operand(vars, depth)
                )
            }
            6 => {
                if self.chance(70) {
                    format!("{} in {}", self.operand(vars, depth), self.list(vars))
                } else {
                    self.one(UNSUPPORTED).to_string()
                }
            }
            7 => format!("!({})", self.rule(vars, depth - 1)),
            8 => format!(
                "({}) && ({})",
                self.rule(vars, depth - 1),
                self.rule(vars, depth - 1)
            ),
            9 => format!(
                "({}) || ({})",
                self.rule(vars, depth - 1),
                self.rule(vars, depth - 1)
            ),
            10 => format!(
                "({}) ? ({}) : ({})",
                self.rule(vars, depth - 1),
                self.rule(vars, depth - 1),
                self.rule(vars, depth - 1)
            ),
            _ => {
                let range = self.list(vars);
                let q = self.one(&["all", "exists", "exists_one", "existsOne"]);
                let var = self.one(&["x", "y", "x", "y", "self"]);
                let mut inner = vars.to_vec();
                inner.push(var);
                format!("{range}.{q}({var}, {})", self.rule(&inner, depth - 1))
            }
        }
    }

    /// Any JSON value.
    fn json(&mut self, depth: usize) -> Value {
        match self.pick(if depth == 0 { 9 } else { 11 }) {
            0 => Value::Null,
            1 => json!(self.chance(50)),
            2 => json!(self.small_int()),
            3 => json!([i64::MAX, i64::MIN, 1 << 53][self.pick(3)]),
            4 => json!(u64::MAX),
            5 => json!([1.0, 2.5, -0.0, 1e300, 3.0][self.pick(5)]),
            6..=8 => json!(self.string()),
            9 => Value::Array((0..self.pick(4)).map(|_| self.json(depth - 1)).collect()),
            _ => {
                let mut m = serde_json::Map::new();
                for _ in 0..self.pick(4) {
                    let k = self.one(&["s", "i", "name", "v", "x", "a-b", "metadata"]);
                    m.insert(k.to_string(), self.json(depth - 1));
                }
                Value::Object(m)
            }
        }
    }

    fn small_int(&mut self) -> i64 {
        [0, 1, -1, 2, 1000, 1001, 42][self.pick(7)]
    }

    fn string(&mut self) -> String {
        self.one(&[
            "",
            "a",
            "b",
            "-",
            "-x",
            "forbidden",
            "πέντε",
            "a-b",
            "1h",
            "YWJj",
            "2020-01-01T00:00:00Z",
            "é",
        ])
        .to_string()
    }

    /// A value of `field` as its schema has it, mostly.
    fn field(&mut self, field: &str) -> Value {
        if self.chance(25) {
            return self.json(2);
        }
        match field {
            "i" | "j" | "v" => json!(self.small_int()),
            "n" => {
                if self.chance(50) {
                    json!(self.small_int())
                } else {
                    json!(2.5)
                }
            }
            "b" => json!(self.chance(50)),
            "ios" => {
                if self.chance(50) {
                    json!(self.small_int())
                } else {
                    json!(self.string())
                }
            }
            "tags" => Value::Array((0..self.pick(4)).map(|_| json!(self.string())).collect()),
            "nums" => Value::Array((0..self.pick(4)).map(|_| json!(self.small_int())).collect()),
            "objs" => Value::Array(
                (0..self.pick(4))
                    .map(|_| {
                        let mut o = json!({"name": self.string(), "v": self.small_int()});
                        if self.chance(30) {
                            // One field missing or of another type.
                            let k = self.one(&["name", "v"]);
                            match self.pick(3) {
                                0 => o[k] = self.json(0),
                                _ => {
                                    o.as_object_mut().map(|o| o.remove(k));
                                }
                            }
                        }
                        o
                    })
                    .collect(),
            ),
            "m" => {
                let mut m = serde_json::Map::new();
                for _ in 0..self.pick(3) {
                    let k = self.one(&["x", "a", "a-b"]);
                    m.insert(k.to_string(), json!(self.string()));
                }
                Value::Object(m)
            }
            "o" => json!({"s": self.string(), "i": self.small_int()}),
            "any" | "emb" => {
                json!({"x": self.json(1), "metadata": {"name": self.string()}, "s": self.string()})
            }
            "metadata" => {
                let mut m = json!({"name": self.string(), "labels": {"a": "b"}});
                if self.chance(50) {
                    m["generateName"] = json!(self.string());
                }
                m
            }
            _ => json!(self.string()),
        }
    }

    fn object(&mut self) -> Value {
        let mut m = serde_json::Map::new();
        for f in OBJECT_FIELDS {
            if self.chance(75) {
                m.insert(f.to_string(), self.field(f));
            }
        }
        Value::Object(m)
    }
}

/// What one case found.
enum Outcome {
    /// The rule did not parse.
    Unparsed,
    /// The rule is outside the subset.
    Unsupported,
    /// The evaluator left the case to the crate.
    Fallback,
    Answered,
}

/// One case: the evaluator's answer, when there is one, is the crate's.
fn check(
    rule: &str,
    self_value: &Value,
    old_self: Option<&Value>,
    s: &Structural,
    root: bool,
) -> Result<Outcome, String> {
    let Ok(program) = crate::environment().compile(rule) else {
        return Ok(Outcome::Unparsed);
    };
    let Some(direct) = compile(program.expression(), crate::declarations()) else {
        return Ok(Outcome::Unsupported);
    };
    let Some(answer) = direct.evaluate(self_value, old_self, s, root) else {
        return Ok(Outcome::Fallback);
    };
    let activation = crate::activation(crate::environment(), self_value, old_self, s, root);
    match program.execute(&activation) {
        Ok(CelValue::Bool(b)) if b == answer => Ok(Outcome::Answered),
        other => Err(format!(
            "rule {rule}: direct answered {answer}, the cel crate {other:?}\n\
             self: {self_value}\noldSelf: {old_self:?}\nresource root: {root}"
        )),
    }
}

#[test]
fn the_direct_answer_is_the_cel_crates() {
    let s = test_schema();
    let counts: [AtomicUsize; 4] = Default::default();
    let mut runner = TestRunner::new(Config {
        cases: 50000,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(
        &proptest::collection::vec(any::<u32>(), 0..400),
        |choices| {
            let mut g = Gen {
                choices: &choices,
                at: 0,
            };
            let depth = g.pick(4);
            let rule = g.rule(&[], depth);
            let self_value = g.object();
            let old_self = match g.pick(3) {
                0 => None,
                1 => Some(self_value.clone()),
                _ => Some(g.object()),
            };
            let root = g.chance(20);
            let outcome = check(&rule, &self_value, old_self.as_ref(), &s, root)
                .map_err(TestCaseError::fail)?;
            let i = match outcome {
                Outcome::Unparsed => 0,
                Outcome::Unsupported => 1,
                Outcome::Fallback => 2,
                Outcome::Answered => 3,
            };
            counts[i].fetch_add(1, Ordering::Relaxed);
            Ok(())
        },
    );
    if let Err(e) = result {
        panic!("{e}");
    }
    let [unparsed, unsupported, fallback, answered] = counts.map(|c| c.load(Ordering::Relaxed));
    eprintln!(
        "unparsed {unparsed}, unsupported {unsupported}, fallback {fallback}, answered {answered}"
    );
    // The property is not vacuous: a good part of the cases are answered,
    // and a good part left to the crate.
    let total = unparsed + unsupported + fallback + answered;
    assert!(answered * 5 >= total, "answered {answered} of {total}");
    assert!(fallback * 10 >= total, "fell back {fallback} of {total}");
    assert!(
        unsupported * 20 >= total,
        "unsupported {unsupported} of {total}"
    );
}

/// The benchmark CRD's node: answered on well-typed values, both ways.
#[test]
fn the_benchmark_rules_are_answered() {
    let s = schema(
        json!({"type": "object", "required": ["payload"], "properties": {
        "payload": {"type": "string", "maxLength": 4096},
        "replicas": {"type": "integer", "minimum": 0, "default": 1},
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "maxItems": 16,
            "items": {"type": "string", "maxLength": 63}}}}),
    );
    let rules = [
        "self.replicas <= 1000",
        "!self.payload.startsWith('-')",
        "!has(self.tags) || self.tags.all(t, t != 'forbidden')",
        "self.replicas == oldSelf.replicas",
        "size(self.payload) <= 4096 && self.tags.exists(t, t == 'a')",
        "self.tags.exists_one(t, t.endsWith('b')) && 'a' in self.tags",
    ];
    let good = json!({"payload": "xyz", "replicas": 1, "tags": ["a", "b"]});
    let bad = json!({"payload": "-xyz", "replicas": 1001, "tags": ["forbidden"]});
    for (value, want) in [(&good, true), (&bad, false)] {
        for rule in rules {
            let program = crate::environment().compile(rule).unwrap();
            let direct = compile(program.expression(), crate::declarations())
                .unwrap_or_else(|| panic!("{rule} is not in the subset"));
            assert_eq!(
                direct.evaluate(value, Some(&good), &s, false),
                Some(want),
                "{rule} on {value}"
            );
            assert!(matches!(
                check(rule, value, Some(&good), &s, false),
                Ok(Outcome::Answered)
            ));
        }
    }
    // Without `tags`, `has()` decides.
    let no_tags = json!({"payload": "x", "replicas": 0});
    let program = crate::environment().compile(rules[2]).unwrap();
    let direct = compile(program.expression(), crate::declarations()).unwrap();
    assert_eq!(direct.evaluate(&no_tags, None, &s, false), Some(true));
}

/// Left to the crate: what would be an error, or is not plainly an int, a
/// string or a bool.
#[test]
fn unusual_values_fall_back() {
    let s = test_schema();
    let answer = |rule: &str, value: Value, old: Option<Value>, root: bool| {
        let program = crate::environment().compile(rule).unwrap();
        let direct = compile(program.expression(), crate::declarations())
            .unwrap_or_else(|| panic!("{rule} is not in the subset"));
        let answer = direct.evaluate(&value, old.as_ref(), &s, root);
        // Whatever it is, it is the crate's.
        check(rule, &value, old.as_ref(), &s, root).unwrap();
        answer
    };
    // A missing field is an error.
    assert_eq!(answer("self.i <= 1000", json!({}), None, false), None);
    // `null`, a double, an integer beyond int64, a number node's integer.
    assert_eq!(
        answer("self.i <= 1000", json!({"i": null}), None, false),
        None
    );
    assert_eq!(
        answer("self.i <= 1000", json!({"i": 1.5}), None, false),
        None
    );
    assert_eq!(
        answer("self.i <= 1000", json!({"i": u64::MAX}), None, false),
        None
    );
    assert_eq!(answer("self.n <= 1000", json!({"n": 3}), None, false), None);
    // Strings that are bytes, timestamps or durations.
    assert_eq!(
        answer("self.by == 'YWJj'", json!({"by": "YWJj"}), None, false),
        None
    );
    assert_eq!(
        answer("self.du.startsWith('1')", json!({"du": "1h"}), None, false),
        None
    );
    // Mixed types, objects compared, no oldSelf.
    assert_eq!(
        answer("self.ios == 1", json!({"ios": "1"}), None, false),
        None
    );
    assert_eq!(
        answer(
            "self.o == oldSelf.o",
            json!({"o": {"s": "a"}}),
            Some(json!({"o": {"s": "a"}})),
            false
        ),
        None
    );
    assert_eq!(
        answer("self.i == oldSelf.i", json!({"i": 1}), None, false),
        None
    );
    // A resource root's metadata is not the JSON's.
    assert_eq!(
        answer(
            "has(self.metadata.labels)",
            json!({"metadata": {"labels": {}}}),
            None,
            true
        ),
        None
    );
    // Errors absorbed as the crate absorbs them.
    assert_eq!(
        answer("self.zz == 1 && false", json!({}), None, false),
        Some(false)
    );
    assert_eq!(
        answer("self.zz || true", json!({}), None, false),
        Some(true)
    );
    assert_eq!(
        answer(
            "self.nums.all(x, x > 0)",
            json!({"nums": [1.5, 0]}),
            None,
            false
        ),
        Some(false)
    );
    assert_eq!(
        answer(
            "self.nums.all(x, x > 0)",
            json!({"nums": [1.5, 1]}),
            None,
            false
        ),
        None
    );
    // Maps are not iterated.
    assert_eq!(
        answer(
            "self.m.all(k, k != 'a')",
            json!({"m": {"x": "y"}}),
            None,
            false
        ),
        None
    );
    // Present but null is present.
    assert_eq!(
        answer("has(self.s)", json!({"s": null}), None, false),
        Some(true)
    );
    // Outside the subset.
    for rule in UNSUPPORTED {
        let program = crate::environment().compile(rule).unwrap();
        assert!(
            compile(program.expression(), crate::declarations()).is_none(),
            "{rule}"
        );
    }
}
