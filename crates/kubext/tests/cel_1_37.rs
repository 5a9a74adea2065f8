//! CEL as kube-apiserver 1.37 has it, black-box: CRD rules using cel-go's
//! lists extension (`lists.range`, `slice`, `flatten`, `distinct`,
//! `reverse`, `sort`, `sortBy`), the optional library's `first`, `last` and
//! `optional.unwrap`, and the semver library (new expressions compile in
//! 1.36's environment, which has it) are accepted and enforced; the lists
//! library's `includes` (new in 1.37's environment) is refused in a CRD
//! being written; ill-typed uses are refused with cel-go's messages; list
//! functions whose cost has no bound exceed the budget. Failed rules show a
//! scalar's value, and leave out an object's or an array's; rules print as
//! Go's JSON in CRD errors. Every expected message below is what
//! kube-apiserver 1.37.2 answered to the same request.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{get_accepting, json_of, send_body};
use serde_json::{Value, json};
use testkit::Server;

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const GROUP: &str = "cel137.example.com";
const COST: &str = "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";

/// A namespaced CRD `<plural>.cel137.example.com` of kind `<Singular>`.
fn crd(plural: &str, schema: Value) -> Value {
    let singular = plural.trim_end_matches('s');
    let mut kind = singular.to_string();
    kind[..1].make_ascii_uppercase();
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{GROUP}")},
        "spec": {"group": GROUP, "scope": "Namespaced",
            "names": {"plural": plural, "singular": singular, "kind": kind,
                "listKind": format!("{kind}List")},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": schema}}]}})
}

/// `{spec: {...}}` with `rules` on `spec` (strings, or whole rules).
fn spec_rules(rules: &[Value]) -> Value {
    json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-validations": rules,
        "properties": {
            "ints": {"type": "array", "maxItems": 10, "items": {"type": "integer"}},
            "names": {"type": "array", "maxItems": 5,
                "items": {"type": "string", "maxLength": 10}},
            "count": {"type": "integer"}}}}})
}

fn rule(r: &str) -> Value {
    json!({"rule": r})
}

/// The lists CRD: rules with the lists extension, the optional library and
/// semver, on `spec` and on its fields.
fn lists_schema() -> Value {
    json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.names.sortBy(n, n.size()).first().orValue('').size() <= 3",
                "message": "the shortest name is too long"},
            {"rule": "self.ints.slice(0, 1).size() == 1"},
            {"rule": "self.nested.flatten().distinct().size() == self.nested.flatten().size()",
                "message": "nested values must be unique"},
            {"rule": "self.names.reverse()[0] == self.names[self.names.size() - 1]"},
            {"rule": "semver(self.version, true).major() >= 1", "fieldPath": ".version"},
            {"rule": "self.anys.sort() == self.anys"},
            {"rule": "optional.unwrap(self.names.map(n, n.size() > 1 ? optional.of(n) : optional.none())).size() == self.names.size()",
                "message": "names must be longer than 1"}],
        "properties": {
            "ints": {"type": "array", "maxItems": 10, "items": {"type": "integer"},
                "x-kubernetes-validations": [
                    {"rule": "self.sort() == self", "message": "ints must be sorted"},
                    {"rule": "self.distinct() == self",
                        "messageExpression": "self.size() > 5 ? 'many duplicates' : 'duplicates'"}]},
            "names": {"type": "array", "maxItems": 5,
                "items": {"type": "string", "maxLength": 10},
                "x-kubernetes-validations": [{"rule": "self.distinct().size() == self.size()",
                    "reason": "FieldValueDuplicate"}]},
            "nested": {"type": "array", "maxItems": 3,
                "items": {"type": "array", "maxItems": 3, "items": {"type": "integer"}}},
            "version": {"type": "string", "maxLength": 20, "x-kubernetes-validations": [
                {"rule": "isSemver(self, true)", "message": "must be a semantic version"}]},
            "count": {"type": "integer", "x-kubernetes-validations": [
                {"rule": "self in lists.range(5)", "message": "count must be below 5"}]},
            "ratio": {"type": "number", "x-kubernetes-validations": [{"rule": "self < 1.0"}]},
            "on": {"type": "boolean", "x-kubernetes-validations": [{"rule": "!self"}]},
            "anys": {"type": "array", "maxItems": 5,
                "items": {"x-kubernetes-int-or-string": true, "maxLength": 5}}}}}})
}

async fn setup() -> (Server, kube::Client) {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    (server, client)
}

/// POSTs `body` to `uri`: the status code and the answer.
async fn post(client: &kube::Client, uri: &str, body: &Value) -> (u16, Value) {
    let (code, bytes) = send_body(client, "POST", uri, "application/json", body).await;
    (code, json_of(&bytes))
}

/// The message of the 422 that refuses `body`.
async fn refused(client: &kube::Client, uri: &str, body: &Value) -> String {
    let (code, status) = post(client, uri, body).await;
    assert_eq!(code, 422, "{status}");
    status["message"].as_str().unwrap().to_string()
}

/// Creates the CRD and waits until it is established. (Polled here:
/// `kubectl wait` fails on the `null` conditions a CRD is created with.)
async fn create_crd(client: &kube::Client, plural: &str, schema: Value) {
    let (code, created) = post(client, CRDS, &crd(plural, schema)).await;
    assert_eq!(code, 201, "{created}");
    let uri = format!("{CRDS}/{plural}.{GROUP}");
    for _ in 0..100 {
        let (_, _, bytes) = get_accepting(client, &uri, "application/json").await;
        let conditions = json_of(&bytes)["status"]["conditions"].clone();
        let established = conditions
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Established" && c["status"] == "True");
        if established {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("{plural}.{GROUP} not established");
}

/// A custom resource of the CRD `plural` named `name`.
fn resource(plural: &str, name: &str, spec: Value) -> Value {
    let mut kind = plural.trim_end_matches('s').to_string();
    kind[..1].make_ascii_uppercase();
    json!({"apiVersion": format!("{GROUP}/v1"), "kind": kind,
        "metadata": {"name": name}, "spec": spec})
}

fn resources(plural: &str) -> String {
    format!("/apis/{GROUP}/v1/namespaces/default/{plural}")
}

/// The causes of a refusal, as `reason field: message`, sorted (upstream
/// reports a node's properties in Go's map order).
fn causes(status: &Value) -> Vec<String> {
    let mut all: Vec<String> = status["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{} {}: {}",
                c["reason"].as_str().unwrap(),
                c["field"].as_str().unwrap(),
                c["message"].as_str().unwrap()
            )
        })
        .collect();
    all.sort();
    all
}

#[tokio::test]
async fn list_extension_rules_are_enforced_as_upstreams() {
    let (_server, client) = setup().await;
    create_crd(&client, "lists", lists_schema()).await;
    let uri = resources("lists");
    let (code, created) = post(
        &client,
        &uri,
        &resource(
            "lists",
            "valid",
            json!({"ints": [1, 2, 3], "names": ["ab", "abc"], "nested": [[1], [2, 3]],
                "version": "v1.2.3", "count": 3, "ratio": 0.5, "on": false, "anys": [1, 2]}),
        ),
    )
    .await;
    assert_eq!(code, 201, "{created}");

    // Failed rules: an object's or an array's value left out, a scalar's
    // shown; runtime errors name the node's type as before.
    let (code, status) = post(
        &client,
        &uri,
        &resource(
            "lists",
            "invalid",
            json!({"ints": [3, 1, 1], "names": ["abcd", "abcd", "x"], "nested": [[1], [1]],
                "version": "0.1.x", "count": 7, "ratio": 1.5, "on": true, "anys": [1, "a"]}),
        ),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    let mut expected = vec![
        "FieldValueInvalid spec: Invalid value: nested values must be unique",
        "FieldValueInvalid spec: Invalid value: \"object\": Invalid character(s) found in patch number \"x\" evaluating rule: semver(self.version, true).major() >= 1",
        "FieldValueInvalid spec: Invalid value: \"object\": list elements must have the same type evaluating rule: self.anys.sort() == self.anys",
        "FieldValueInvalid spec: Invalid value: names must be longer than 1",
        "FieldValueInvalid spec.ints: Invalid value: ints must be sorted",
        "FieldValueInvalid spec.ints: Invalid value: duplicates",
        "FieldValueDuplicate spec.names: Duplicate value",
        "FieldValueInvalid spec.version: Invalid value: \"0.1.x\": must be a semantic version",
        "FieldValueInvalid spec.count: Invalid value: 7: count must be below 5",
        "FieldValueInvalid spec.ratio: Invalid value: 1.5: failed rule: self < 1.0",
        "FieldValueInvalid spec.on: Invalid value: true: failed rule: !self",
    ];
    expected.sort_unstable();
    assert_eq!(causes(&status), expected);
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .starts_with("List.cel137.example.com \"invalid\" is invalid: [spec: Invalid value: nested values must be unique, spec: Invalid value: \"object\": Invalid character(s)"),
        "{status}"
    );

    assert_eq!(
        refused(
            &client,
            &uri,
            &resource(
                "lists",
                "empty-ints",
                json!({"ints": [], "names": ["ab"], "nested": [], "version": "1.0.0",
                    "count": 0, "anys": ["b", "a"]}),
            ),
        )
        .await,
        "List.cel137.example.com \"empty-ints\" is invalid: [spec: Invalid value: \"object\": cannot slice(0, 1), list is length 0 evaluating rule: self.ints.slice(0, 1).size() == 1, spec: Invalid value: failed rule: self.anys.sort() == self.anys]"
    );
    assert_eq!(
        refused(
            &client,
            &uri,
            &resource(
                "lists",
                "duplicates",
                json!({"ints": [1], "names": ["ab", "abc", "ab"], "nested": [],
                    "version": "1.0.0", "count": 0, "anys": []}),
            ),
        )
        .await,
        "List.cel137.example.com \"duplicates\" is invalid: spec.names: Duplicate value"
    );

    create_crd(
        &client,
        "firstlasts",
        spec_rules(&[rule(
            "self.ints.first().orValue(0) <= self.ints.last().orValue(0)",
        )]),
    )
    .await;
    let uri = resources("firstlasts");
    let (code, created) = post(
        &client,
        &uri,
        &resource("firstlasts", "ok", json!({"ints": [1, 2]})),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        refused(
            &client,
            &uri,
            &resource("firstlasts", "bad", json!({"ints": [3, 2]}))
        )
        .await,
        "Firstlast.cel137.example.com \"bad\" is invalid: spec: Invalid value: failed rule: self.ints.first().orValue(0) <= self.ints.last().orValue(0)"
    );
}

/// `includes` is in 1.37's environment only: a CRD being written may not use
/// it (its message expression is not compiled once the rule fails).
#[tokio::test]
async fn includes_is_refused_in_a_new_crd() {
    let (_server, client) = setup().await;
    let schema = spec_rules(&[json!({"rule": "self.names.includes('a')",
        "messageExpression": "[string(size(self.names))].includes('2') ? 'two' : 'names'"})]);
    assert_eq!(
        refused(&client, CRDS, &crd("includes", schema)).await,
        "CustomResourceDefinition.apiextensions.k8s.io \"includes.cel137.example.com\" is invalid: spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: {\"Rule\":\"self.names.includes('a')\",\"Message\":\"\",\"MessageExpression\":\"[string(size(self.names))].includes('2') ? 'two' : 'names'\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}: compilation failed: ERROR: <input>:1:20: undeclared reference to 'includes' (in container '')\n | self.names.includes('a')\n | ...................^"
    );
}

#[tokio::test]
async fn ill_typed_list_functions_are_refused_with_cel_gos_messages() {
    let (_server, client) = setup().await;
    let rules = [
        "self.ints.flatten() == self.ints",
        "self.names.sort().sum() == ''",
        "self.names.sortBy(n.x, n) == self.names",
        "[1].first() == 1",
        "self.names.reverse() == 'a'",
        "self.ints.slice(0, '1') == self.ints",
        "self.count.sort() == self.count",
        "self.names.sortBy(n, [n]) == self.names",
    ];
    let schema = spec_rules(&rules.map(rule));
    let message = refused(&client, CRDS, &crd("illtypeds", schema)).await;
    let at = |i: usize, rule: &str| {
        format!(
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[{i}].rule: Invalid value: {{\"Rule\":\"{rule}\",\"Message\":\"\",\"MessageExpression\":\"\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}}: compilation failed: "
        )
    };
    let details = [
        "ERROR: <input>:1:18: found no matching overload for 'flatten' applied to 'list(int).()'\n | self.ints.flatten() == self.ints\n | .................^",
        "ERROR: <input>:1:22: found no matching overload for 'sum' applied to 'list(string).()'\n | self.names.sort().sum() == ''\n | .....................^",
        "ERROR: <input>:1:20: argument is not an identifier\n | self.names.sortBy(n.x, n) == self.names\n | ...................^",
        "ERROR: <input>:1:13: found no matching overload for '_==_' applied to '(optional_type(int), int)'\n | [1].first() == 1\n | ............^",
        "ERROR: <input>:1:22: found no matching overload for '_==_' applied to '(list(string), string)'\n | self.names.reverse() == 'a'\n | .....................^",
        "ERROR: <input>:1:16: found no matching overload for 'slice' applied to 'list(int).(int, string)'\n | self.ints.slice(0, '1') == self.ints\n | ...............^",
        "ERROR: <input>:1:16: found no matching overload for 'sort' applied to 'int.()'\n | self.count.sort() == self.count\n | ...............^",
        "ERROR: <input>:1:18: found no matching overload for '@sortByAssociatedKeys' applied to 'list(string).(list(list(string)))'\n | self.names.sortBy(n, [n]) == self.names\n | .................^",
    ];
    let errors: Vec<String> = rules
        .iter()
        .zip(details)
        .enumerate()
        .map(|(i, (rule, detail))| format!("{}{detail}", at(i, rule)))
        .collect();
    assert_eq!(
        message,
        format!(
            "CustomResourceDefinition.apiextensions.k8s.io \"illtypeds.cel137.example.com\" is invalid: [{}]",
            errors.join(", ")
        )
    );
    assert_eq!(
        refused(
            &client,
            CRDS,
            &crd(
                "sortbyliterals",
                spec_rules(&[rule("'abc'.sortBy(e, e) == 'abc'")])
            )
        )
        .await,
        "CustomResourceDefinition.apiextensions.k8s.io \"sortbyliterals.cel137.example.com\" is invalid: spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: {\"Rule\":\"'abc'.sortBy(e, e) == 'abc'\",\"Message\":\"\",\"MessageExpression\":\"\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}: compilation failed: ERROR: <input>:1:1: sortBy can only be applied to a list, identifier, comprehension, call or select expression\n | 'abc'.sortBy(e, e) == 'abc'\n | ^"
    );
    // A message expression is compiled for a rule that compiles only; rules
    // print as Go's JSON (`<` escaped).
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.replicas <= self.maxReplicas", "messageExpression": "self.minReplicas"},
            {"rule": "self.maxReplicas > 0", "messageExpression": "self.minReplicas"},
            {"rule": "self.maxReplicas > 1", "messageExpression": "'a' + self.nope"}],
        "properties": {"minReplicas": {"type": "integer"}, "maxReplicas": {"type": "integer"}}}}});
    assert_eq!(
        refused(&client, CRDS, &crd("msgexprs", schema)).await,
        "CustomResourceDefinition.apiextensions.k8s.io \"msgexprs.cel137.example.com\" is invalid: [spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: {\"Rule\":\"self.replicas \\u003c= self.maxReplicas\",\"Message\":\"\",\"MessageExpression\":\"self.minReplicas\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}: compilation failed: ERROR: <input>:1:5: undefined field 'replicas'\n | self.replicas <= self.maxReplicas\n | ....^, spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[1].messageExpression: Invalid value: {\"Rule\":\"self.maxReplicas \\u003e 0\",\"Message\":\"\",\"MessageExpression\":\"self.minReplicas\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}: messageExpression must evaluate to a string, spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[2].messageExpression: Invalid value: {\"Rule\":\"self.maxReplicas \\u003e 1\",\"Message\":\"\",\"MessageExpression\":\"'a' + self.nope\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}: messageExpression compilation failed: ERROR: <input>:1:11: undefined field 'nope'\n | 'a' + self.nope\n | ..........^]"
    );
}

/// `lists.range(n)` of a value, and a join of a computed list, have no
/// bound: their estimates exceed every budget. Errors of nested rules come
/// before their parent's, as upstream walks the schema.
#[tokio::test]
async fn unbounded_list_functions_exceed_the_cost_budget() {
    let (_server, client) = setup().await;
    let schema = spec_rules(&[
        rule("lists.range(self.count).size() > 0"),
        rule("self.names.reverse().join(',') != ''"),
    ]);
    let rule_at = |i: usize| {
        format!(
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[{i}].rule"
        )
    };
    assert_eq!(
        refused(&client, CRDS, &crd("costs", schema)).await,
        format!(
            "CustomResourceDefinition.apiextensions.k8s.io \"costs.cel137.example.com\" is invalid: [{0}: Forbidden: estimated rule cost exceeds budget by factor of more than 100x {COST}, {1}: Forbidden: estimated rule cost exceeds budget by factor of more than 100x {COST}, {0}: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema, {1}: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema, spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x {COST}]",
            rule_at(0),
            rule_at(1)
        )
    );

    // A message expression concatenating a `string()` of unknown size, and
    // an equality of optionals of strings, are as unbounded.
    let mut schema = lists_schema();
    let spec = &mut schema["properties"]["spec"];
    spec["properties"]["ints"]["x-kubernetes-validations"][1]["messageExpression"] =
        json!("'duplicates: ' + string(self.size() - self.distinct().size())");
    spec["x-kubernetes-validations"][3]["rule"] =
        json!("self.names.reverse().last() == self.names.first()");
    let message_at = "spec.validation.openAPIV3Schema.properties[spec].properties[ints].x-kubernetes-validations[1].messageExpression";
    assert_eq!(
        refused(&client, CRDS, &crd("costlylists", schema)).await,
        format!(
            "CustomResourceDefinition.apiextensions.k8s.io \"costlylists.cel137.example.com\" is invalid: [{message_at}: Forbidden: estimated messageExpression cost exceeds budget by factor of more than 100x {COST}, {0}: Forbidden: estimated rule cost exceeds budget by factor of more than 100x {COST}, {message_at}: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema, {0}: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema, spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x {COST}]",
            rule_at(3)
        )
    );
}
