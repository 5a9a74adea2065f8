//! flowcontrol.apiserver.k8s.io/v1 PriorityLevelConfigurations and
//! FlowSchemas refused as kube-apiserver 1.37.2 refuses them, through a real
//! kubext and a real client. Every expected message below is verbatim what a
//! kube-apiserver v1.37.2 (`.cache/upstream/bin`, on etcd 3.6.16, no
//! controller manager) answered to the same request on 2026-11-29: the
//! 422's `message`, and one cause per listed error whose `field` and
//! `message` are the error split at its first `: ` (the `reason` follows the
//! error's type). The PLC union checks are declarative in 1.37 (beta,
//! enforced): `spec.limited: Required value` with no detail, listed after
//! the handwritten errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::*;

use serde_json::{Value, json};
use testkit::Server;

const PLCS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations";
const FLOW_SCHEMAS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas";
const PLC: &str = "PriorityLevelConfiguration.flowcontrol.apiserver.k8s.io";
const FS: &str = "FlowSchema.flowcontrol.apiserver.k8s.io";

const DNS_SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS_LABEL: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const NS_INTRO: &str = "each member of this list must be '*' or a DNS-1123 label; ";
const VERBS: &str = r#"supported values: "create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch""#;

async fn setup() -> (Server, kube::Client) {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    (server, client)
}

fn plc(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
           "metadata": {"name": name}, "spec": spec})
}

fn fs(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
           "metadata": {"name": name}, "spec": spec})
}

async fn send(client: &kube::Client, method: &str, uri: &str, body: &Value) -> (u16, Value) {
    let (code, bytes) = send_body(client, method, uri, "application/json", body).await;
    (code, json_of(&bytes))
}

/// `body` is refused with upstream's 422: `kind "name" is invalid: ` and
/// `errors` (bracketed when several), one cause per error.
async fn refused(
    client: &kube::Client,
    method: &str,
    uri: &str,
    body: Value,
    kind: &str,
    errors: &[&str],
) {
    let name = body["metadata"]["name"].as_str().unwrap().to_string();
    let (code, status) = send(client, method, uri, &body).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(status["reason"], "Invalid");
    let listed = match errors {
        [one] => one.to_string(),
        many => format!("[{}]", many.join(", ")),
    };
    assert_eq!(
        status["message"].as_str().unwrap(),
        format!("{kind} \"{name}\" is invalid: {listed}")
    );
    let causes: Vec<(String, String, String)> = status["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or("").to_string();
            (s("reason"), s("field"), s("message"))
        })
        .collect();
    let expected: Vec<(String, String, String)> = errors
        .iter()
        .map(|e| {
            let (field, message) = e.split_once(": ").unwrap();
            let reason = [
                ("Required value", "FieldValueRequired"),
                ("Forbidden", "FieldValueForbidden"),
                ("Invalid value", "FieldValueInvalid"),
                ("Unsupported value", "FieldValueNotSupported"),
                ("Duplicate value", "FieldValueDuplicate"),
            ]
            .iter()
            .find(|(prefix, _)| message.starts_with(prefix))
            .map(|(_, reason)| reason.to_string())
            .unwrap();
            (reason, field.to_string(), message.to_string())
        })
        .collect();
    assert_eq!(causes, expected);
}

#[tokio::test]
async fn priority_levels_are_refused_as_upstream() {
    let (_server, client) = setup().await;
    let c = &client;
    refused(
        c,
        "POST",
        PLCS,
        plc("p1", json!({"type": "Limited"})),
        PLC,
        &["spec.limited: Required value"],
    )
    .await;
    refused(
        c,
        "POST",
        PLCS,
        plc(
            "p1",
            json!({"type": "Limited", "limited": {"limitResponse": {}}}),
        ),
        PLC,
        &["spec.limited.limitResponse.type: Required value"],
    )
    .await;
    refused(
        c,
        "POST",
        PLCS,
        plc(
            "p1",
            json!({"type": "Limited", "exempt": {},
                   "limited": {"limitResponse": {"type": "Reject", "queuing": {}}}}),
        ),
        PLC,
        &[
            "spec.exempt: Forbidden",
            "spec.limited.limitResponse.queuing: Forbidden",
        ],
    )
    .await;
    refused(
        c,
        "POST",
        PLCS,
        plc("p1", json!({})),
        PLC,
        &["spec.type: Required value"],
    )
    .await;
    refused(
        c,
        "POST",
        PLCS,
        plc(
            "p1",
            json!({"type": "Foo", "limited": {"limitResponse": {"type": "Queue"}}, "exempt": {}}),
        ),
        PLC,
        &[
            r#"spec.type: Unsupported value: "Foo": supported values: "Exempt", "Limited""#,
            "spec.exempt: Forbidden",
            "spec.limited: Forbidden",
            "spec.limited.limitResponse.queuing: Required value",
        ],
    )
    .await;
    // The mandatory `exempt` level: only `spec.exempt` may differ.
    refused(
        c,
        "POST",
        PLCS,
        plc(
            "exempt",
            json!({"type": "Exempt", "limited": {"limitResponse": {"type": "Reject"}},
                   "exempt": {"nominalConcurrencyShares": -1, "lendablePercent": 101}}),
        ),
        PLC,
        &[
            "spec.exempt.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer",
            "spec.exempt.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive",
            r#"spec: Invalid value: {"Type":"Exempt","Limited":{"NominalConcurrencyShares":30,"LimitResponse":{"Type":"Reject","Queuing":null},"LendablePercent":0,"BorrowingLimitPercent":null},"Exempt":{"NominalConcurrencyShares":-1,"LendablePercent":101}}: spec of 'exempt' except the 'spec.exempt' field must equal the fixed value"#,
            "spec.limited: Forbidden",
        ],
    )
    .await;
    refused(
        c,
        "POST",
        PLCS,
        plc(
            "p2",
            json!({"type": "Limited", "limited": {"nominalConcurrencyShares": -3,
                "lendablePercent": -1, "borrowingLimitPercent": -2,
                "limitResponse": {"type": "Queue",
                    "queuing": {"queues": 128, "handSize": 10, "queueLengthLimit": -1}}}}),
        ),
        PLC,
        &[
            "spec.limited.nominalConcurrencyShares: Invalid value: -3: must be a non-negative integer",
            "spec.limited.limitResponse.queuing.queueLengthLimit: Invalid value: -1: must be positive",
            "spec.limited.limitResponse.queuing.handSize: Invalid value: 10: required entropy bits of deckSize 128 and handSize 10 should not be greater than 60",
            "spec.limited.lendablePercent: Invalid value: -1: must be between 0 and 100, inclusive",
            "spec.limited.borrowingLimitPercent: Invalid value: -2: if specified, must be a non-negative integer",
        ],
    )
    .await;
    let queuing = |q: Value| {
        plc(
            "p2",
            json!({"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": q}}}),
        )
    };
    refused(
        c,
        "POST",
        PLCS,
        queuing(json!({"queues": 2147483647, "handSize": 3})),
        PLC,
        &[
            "spec.limited.limitResponse.queuing.queues: Invalid value: 2147483647: must not be greater than 10000000",
            "spec.limited.limitResponse.queuing.handSize: Invalid value: 3: required entropy bits of deckSize 2147483647 and handSize 3 should not be greater than 60",
        ],
    )
    .await;
    refused(
        c,
        "POST",
        PLCS,
        queuing(json!({"queues": 7, "handSize": 8})),
        PLC,
        &["spec.limited.limitResponse.queuing.handSize: Invalid value: 8: should not be greater than queues (7)"],
    )
    .await;
    refused(
        c,
        "POST",
        PLCS,
        queuing(json!({"queues": -7, "handSize": -8})),
        PLC,
        &[
            "spec.limited.limitResponse.queuing.queues: Invalid value: -7: must be positive",
            "spec.limited.limitResponse.queuing.handSize: Invalid value: -8: must be positive",
        ],
    )
    .await;
    refused(
        c,
        "POST",
        PLCS,
        plc(
            "p2",
            json!({"type": "Limited", "limited": {"limitResponse": {"type": "Drop", "queuing": {}}}}),
        ),
        PLC,
        &[
            r#"spec.limited.limitResponse.type: Unsupported value: "Drop": supported values: "Queue", "Reject""#,
            "spec.limited.limitResponse.queuing: Forbidden",
        ],
    )
    .await;
    let mut annotated = plc("p2", json!({"type": "Exempt"}));
    annotated["metadata"]["annotations"] =
        json!({"flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares": ""});
    refused(c, "POST", PLCS, annotated, PLC, &[
        "metadata.annotations: Forbidden: annotation 'flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares' is forbidden",
        r#"spec.type: Invalid value: "Exempt": must be 'Exempt' if and only if `name` is 'exempt'"#,
    ])
    .await;
    // A set pointer is not its zero: `borrowingLimitPercent: 0` differs
    // from the mandatory catch-all's nil.
    refused(
        c,
        "POST",
        PLCS,
        plc(
            "catch-all",
            json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 5,
                   "borrowingLimitPercent": 0, "limitResponse": {"type": "Reject"}}}),
        ),
        PLC,
        &[
            r#"spec: Invalid value: {"Type":"Limited","Limited":{"NominalConcurrencyShares":5,"LimitResponse":{"Type":"Reject","Queuing":null},"LendablePercent":0,"BorrowingLimitPercent":0},"Exempt":null}: spec of 'catch-all' must equal the fixed value"#,
        ],
    )
    .await;
    refused(
        c,
        "POST",
        PLCS,
        plc(
            "Bad_Name",
            json!({"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}}),
        ),
        PLC,
        &[&format!(
            r#"metadata.name: Invalid value: "Bad_Name": {DNS_SUBDOMAIN}"#
        )],
    )
    .await;
}

#[tokio::test]
async fn flow_schemas_are_refused_as_upstream() {
    let (_server, client) = setup().await;
    let c = &client;
    refused(
        c,
        "POST",
        FLOW_SCHEMAS,
        fs(
            "f1",
            json!({"priorityLevelConfiguration": {"name": ""}, "matchingPrecedence": -5,
                   "distinguisherMethod": {"type": "ByFoo"}, "rules": [{}]}),
        ),
        FS,
        &[
            "spec.matchingPrecedence: Invalid value: -5: must be a positive value",
            r#"spec.distinguisherMethod.type: Unsupported value: {"Type":"ByFoo"}: supported values: "ByNamespace", "ByUser""#,
            "spec.priorityLevelConfiguration.name: Required value: must reference a priority level",
            "spec.rules[0].subjects: Required value: subjects must contain at least one value",
            "spec.rules[0]: Required value: at least one of resourceRules and nonResourceRules has to be non-empty",
        ],
    )
    .await;
    let everything = json!({
        "priorityLevelConfiguration": {"name": "Sys+++"},
        "matchingPrecedence": 10001,
        "rules": [{
            "subjects": [
                {"kind": "ServiceAccount", "user": {"name": ""}, "group": {"name": "g"}},
                {"kind": "User"},
                {"kind": "Group", "serviceAccount": {"name": "x", "namespace": "y"}, "group": {"name": ""}},
                {"kind": "FooKind"},
                {},
                {"kind": "ServiceAccount", "serviceAccount": {"name": "Bad_SA"}},
                {"kind": "ServiceAccount", "serviceAccount": {"name": "", "namespace": "-ns"}},
                {"kind": "ServiceAccount", "serviceAccount": {"name": "*", "namespace": "ns"}},
            ],
            "resourceRules": [
                {"verbs": ["*", "create"], "apiGroups": ["*", "tak"], "resources": ["*", "tok"], "namespaces": ["foo", "*"]},
                {"verbs": ["feed", "get"], "apiGroups": [], "resources": []},
                {"verbs": [], "apiGroups": ["a"], "resources": ["b"], "namespaces": ["-foo", "Bar", "ok"]},
                {"verbs": ["get"], "apiGroups": ["a"], "resources": ["b"], "clusterScope": true, "namespaces": ["*"]},
            ],
            "nonResourceRules": [
                {"verbs": ["*", "get"], "nonResourceURLs": ["*", "tik"]},
                {"verbs": [], "nonResourceURLs": []},
                {"verbs": ["yell"], "nonResourceURLs": ["", "foo", "/a b", "//x", "/a/*/b", "/a*", "/a/**", "/", "/ok/*", "*/"]},
            ],
        }],
    });
    let subjects = "spec.rules[0].subjects";
    let rr = "spec.rules[0].resourceRules";
    let nr = "spec.rules[0].nonResourceRules";
    let errors = [
        "spec.matchingPrecedence: Invalid value: 10001: must not be greater than 10000".to_string(),
        format!(
            r#"spec.priorityLevelConfiguration.name: Invalid value: "Sys+++": {DNS_SUBDOMAIN}"#
        ),
        format!(
            "{subjects}[0].serviceAccount: Required value: serviceAccount is required when subject kind is 'ServiceAccount'"
        ),
        format!("{subjects}[0].user: Forbidden: user is forbidden when subject kind is not 'User'"),
        format!(
            "{subjects}[0].group: Forbidden: group is forbidden when subject kind is not 'Group'"
        ),
        format!("{subjects}[1].user: Required value: user is required when subject kind is 'User'"),
        format!("{subjects}[2].group.name: Required value"),
        format!(
            "{subjects}[2].serviceAccount: Forbidden: serviceAccount is forbidden when subject kind is not 'ServiceAccount'"
        ),
        format!(
            r#"{subjects}[3].kind: Unsupported value: "FooKind": supported values: "Group", "ServiceAccount", "User""#
        ),
        format!(
            r#"{subjects}[4].kind: Unsupported value: "": supported values: "Group", "ServiceAccount", "User""#
        ),
        format!(r#"{subjects}[5].serviceAccount.name: Invalid value: "Bad_SA": {DNS_SUBDOMAIN}"#),
        format!(
            "{subjects}[5].serviceAccount.namespace: Required value: must specify namespace for service account"
        ),
        format!("{subjects}[6].serviceAccount.name: Required value"),
        format!(r#"{subjects}[6].serviceAccount.namespace: Invalid value: "-ns": {DNS_LABEL}"#),
        format!(
            r#"{rr}[0].verbs: Invalid value: ["*","create"]: if '*' is present, must not specify other verbs"#
        ),
        format!(
            r#"{rr}[0].apiGroups: Invalid value: ["*","tak"]: if '*' is present, must not specify other api groups"#
        ),
        format!(
            r#"{rr}[0].resources: Invalid value: ["*","tok"]: if '*' is present, must not specify other resources"#
        ),
        format!(
            r#"{rr}[0].namespaces: Invalid value: ["foo","*"]: if '*' is present, must not specify other namespaces"#
        ),
        format!(r#"{rr}[1].verbs: Unsupported value: ["feed","get"]: {VERBS}"#),
        format!(
            "{rr}[1].apiGroups: Required value: resource rules must supply at least one api group"
        ),
        format!(
            "{rr}[1].resources: Required value: resource rules must supply at least one resource"
        ),
        format!(
            "{rr}[1].namespaces: Required value: resource rules that are not cluster scoped must supply at least one namespace"
        ),
        format!("{rr}[2].verbs: Required value: verbs must contain at least one value"),
        format!(r#"{rr}[2].namespaces[0]: Invalid value: "-foo": {NS_INTRO}{DNS_LABEL}"#),
        format!(r#"{rr}[2].namespaces[1]: Invalid value: "Bar": {NS_INTRO}{DNS_LABEL}"#),
        format!(
            r#"{nr}[0].verbs: Invalid value: ["*","get"]: if '*' is present, must not specify other verbs"#
        ),
        format!(
            r#"{nr}[0].nonResourceURLs: Invalid value: ["*","tik"]: if '*' is present, must not specify other non-resource URLs"#
        ),
        format!("{nr}[1].verbs: Required value: verbs must contain at least one value"),
        format!(
            "{nr}[1].nonResourceURLs: Required value: nonResourceURLs must contain at least one value"
        ),
        format!(r#"{nr}[2].verbs: Unsupported value: ["yell"]: {VERBS}"#),
        format!(r#"{nr}[2].nonResourceURLs[0]: Invalid value: "": must not be empty"#),
        format!(r#"{nr}[2].nonResourceURLs[1]: Invalid value: "foo": must start with slash"#),
        format!(
            r#"{nr}[2].nonResourceURLs[2]: Invalid value: "/a b": must not contain white-space"#
        ),
        format!(
            r#"{nr}[2].nonResourceURLs[3]: Invalid value: "//x": must not contain double slash"#
        ),
        format!(
            r#"{nr}[2].nonResourceURLs[4]: Invalid value: "/a/*/b": wildcard can only do suffix matching"#
        ),
        format!(
            r#"{nr}[2].nonResourceURLs[5]: Invalid value: "/a*": wildcard can only do suffix matching"#
        ),
        format!(
            r#"{nr}[2].nonResourceURLs[6]: Invalid value: "/a/**": wildcard can only do suffix matching"#
        ),
        format!(r#"{nr}[2].nonResourceURLs[9]: Invalid value: "*/": must start with slash"#),
    ];
    let errors: Vec<&str> = errors.iter().map(String::as_str).collect();
    refused(c, "POST", FLOW_SCHEMAS, fs("f1", everything), FS, &errors).await;
    refused(
        c,
        "POST",
        FLOW_SCHEMAS,
        fs("f1", json!({"priorityLevelConfiguration": {"name": "x"}, "matchingPrecedence": 1, "rules": []})),
        FS,
        &["spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1"],
    )
    .await;
    refused(
        c,
        "POST",
        FLOW_SCHEMAS,
        fs("f1", json!({"priorityLevelConfiguration": {"name": "x"}, "distinguisherMethod": {}})),
        FS,
        &[r#"spec.distinguisherMethod.type: Unsupported value: {"Type":""}: supported values: "ByNamespace", "ByUser""#],
    )
    .await;
    // The mandatory catch-all schema, its spec as Go marshals the internal
    // type (HTML-escaped strings).
    let rule = json!({
        "subjects": [{"kind": "Group", "group": {"name": "system:unauthenticated"}},
                     {"kind": "Group", "group": {"name": "<x&>"}}],
        "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": true, "namespaces": ["*"]}],
        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": []}],
    });
    refused(
        c,
        "POST",
        FLOW_SCHEMAS,
        fs("catch-all", json!({"priorityLevelConfiguration": {"name": "catch-all"},
                               "matchingPrecedence": 10000, "rules": [rule]})),
        FS,
        &[
            "spec.rules[0].nonResourceRules[0].nonResourceURLs: Required value: nonResourceURLs must contain at least one value",
            r#"spec: Invalid value: {"PriorityLevelConfiguration":{"Name":"catch-all"},"MatchingPrecedence":10000,"DistinguisherMethod":null,"Rules":[{"Subjects":[{"Kind":"Group","User":null,"Group":{"Name":"system:unauthenticated"},"ServiceAccount":null},{"Kind":"Group","User":null,"Group":{"Name":"\u003cx\u0026\u003e"},"ServiceAccount":null}],"ResourceRules":[{"Verbs":["*"],"APIGroups":["*"],"Resources":["*"],"ClusterScope":true,"Namespaces":["*"]}],"NonResourceRules":[{"Verbs":["*"],"NonResourceURLs":[]}]}]}: spec of 'catch-all' must equal the fixed value"#,
        ],
    )
    .await;
}

#[tokio::test]
async fn updates_and_status_writes_are_refused_as_upstream() {
    let (_server, client) = setup().await;
    let c = &client;
    let good = plc(
        "good",
        json!({"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {}}}}),
    );
    let (code, created) = send(c, "POST", PLCS, &good).await;
    assert_eq!(code, 201, "{created}");
    let good_uri = format!("{PLCS}/good");
    refused(
        c,
        "PUT",
        &good_uri,
        plc(
            "good",
            json!({"type": "Limited", "limited": {"nominalConcurrencyShares": -1,
                   "limitResponse": {"type": "Reject", "queuing": {"queues": 1}}}}),
        ),
        PLC,
        &[
            "spec.limited.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer",
            "spec.limited.limitResponse.queuing: Forbidden",
        ],
    )
    .await;
    refused(
        c,
        "PUT",
        &good_uri,
        plc("good", json!({"type": "Exempt", "limited": {"limitResponse": {"type": "Queue"}}})),
        PLC,
        &[
            r#"spec.type: Invalid value: "Exempt": must be 'Exempt' if and only if `name` is 'exempt'"#,
            "spec.limited: Forbidden",
            "spec.limited.limitResponse.queuing: Required value",
        ],
    )
    .await;
    // A status write: only the status rules (the spec sent is ignored).
    let mut status = plc("good", json!({"type": "Exempt"}));
    status["status"] = json!({"conditions": [{"type": "A", "status": "True"},
        {"type": "A", "status": "False"}, {"status": "True"}]});
    refused(
        c,
        "PUT",
        &format!("{good_uri}/status"),
        status,
        PLC,
        &[
            r#"status.conditions[1].type: Duplicate value: "A""#,
            "status.conditions[2].type: Required value",
        ],
    )
    .await;

    let (code, created) = send(
        c,
        "POST",
        FLOW_SCHEMAS,
        &fs(
            "fgood",
            json!({"priorityLevelConfiguration": {"name": "good"}}),
        ),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    let fgood_uri = format!("{FLOW_SCHEMAS}/fgood");
    refused(
        c,
        "PUT",
        &fgood_uri,
        fs("fgood", json!({"priorityLevelConfiguration": {"name": "good"}, "matchingPrecedence": 1})),
        FS,
        &["spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1"],
    )
    .await;
    let mut status = fs("fgood", json!({"priorityLevelConfiguration": {"name": ""}}));
    status["status"] = json!({"conditions": [{"type": "A", "status": "True"},
        {"type": "A", "status": "False"}, {"status": "True"}]});
    refused(
        c,
        "PUT",
        &format!("{fgood_uri}/status"),
        status,
        FS,
        &[
            r#"status.conditions[1].type: Duplicate value: "A""#,
            "status.conditions[2].type: Required value",
        ],
    )
    .await;

    // The mandatory `exempt` level's `spec.exempt` may change.
    let exempt = plc(
        "exempt",
        json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": 10, "lendablePercent": 5}}),
    );
    let (code, answer) = send(c, "PUT", &format!("{PLCS}/exempt"), &exempt).await;
    assert_eq!(code, 200, "{answer}");
}

/// The API Priority and Fairness objects kubext creates at startup (the
/// mandatory and suggested ones of upstream's bootstrap) pass validation:
/// all are there, as on kube-apiserver 1.37.2.
#[tokio::test]
async fn the_bootstrap_objects_are_all_accepted() {
    let (_server, client) = setup().await;
    let names = async |uri: &str| {
        let (code, _, bytes) = get_accepting(&client, uri, "application/json").await;
        assert_eq!(code, 200);
        let mut names: Vec<String> = json_of(&bytes)["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        names.sort();
        names
    };
    until("the bootstrap objects", async || {
        names(PLCS).await.len() == 8 && names(FLOW_SCHEMAS).await.len() == 11
    })
    .await;
    assert_eq!(
        names(PLCS).await,
        [
            "catch-all",
            "exempt",
            "global-default",
            "leader-election",
            "node-high",
            "system",
            "workload-high",
            "workload-low"
        ]
    );
    assert_eq!(
        names(FLOW_SCHEMAS).await,
        [
            "catch-all",
            "exempt",
            "global-default",
            "kube-controller-manager",
            "kube-scheduler",
            "kube-system-service-accounts",
            "probes",
            "service-accounts",
            "system-leader-election",
            "system-node-high",
            "system-nodes"
        ]
    );
}
