//! The kinds new in kube-apiserver 1.37 served from the kinds table:
//! resource.k8s.io's DeviceClasses, ResourceClaims, ResourceClaimTemplates,
//! ResourceSlices and DeviceTaintRules; ClusterTrustBundles and
//! PodCertificateRequests; VolumeAttributesClasses, CSINodes (now with
//! `/status`) and StorageVersionMigrations. Defaults, strategy rules and
//! validation answers are compared with kube-apiserver 1.37.2's: every
//! expected message below is what it answered to the same request.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::*;

use serde_json::{Value, json};
use testkit::Server;

const DNS_LABEL: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS_SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS_SUBDOMAIN_CASELESS: &str = "an RFC 1123 subdomain must consist of alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'Example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_VALUE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const NAME_PART: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const REQUEST_REF: &str = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'";

const RESOURCE: &str = "/apis/resource.k8s.io/v1";
const CLAIMS: &str = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims";
const TEMPLATES: &str = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates";
const CERTIFICATES: &str = "/apis/certificates.k8s.io/v1";
const PCRS: &str = "/apis/certificates.k8s.io/v1/namespaces/default/podcertificaterequests";
const STORAGE: &str = "/apis/storage.k8s.io/v1";
const MIGRATIONS: &str = "/apis/storagemigration.k8s.io/v1/storageversionmigrations";

async fn setup() -> (Server, kube::Client) {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    (server, client)
}

/// A request with a JSON body: the status code and the answer.
async fn send(client: &kube::Client, method: &str, uri: &str, body: &Value) -> (u16, Value) {
    let (code, bytes) = send_body(client, method, uri, "application/json", body).await;
    (code, json_of(&bytes))
}

async fn get(client: &kube::Client, uri: &str) -> Value {
    let (code, _, bytes) = get_accepting(client, uri, "application/json").await;
    assert_eq!(code, 200, "GET {uri}");
    json_of(&bytes)
}

/// Creates `body` in `collection`; the created object.
async fn create(client: &kube::Client, collection: &str, body: Value) -> Value {
    let (code, created) = send(client, "POST", collection, &body).await;
    assert_eq!(code, 201, "{created}");
    created
}

/// `body` is refused with a 422 whose message is `kind "name" is invalid: `
/// followed by `errors` (bracketed when several), one cause per error.
async fn refused(client: &kube::Client, method: &str, uri: &str, body: Value, errors: &[&str]) {
    let (code, status) = send(client, method, uri, &body).await;
    assert_eq!(code, 422, "{status}");
    let message = status["message"].as_str().unwrap();
    let (_, listed) = message.split_once(" is invalid: ").unwrap();
    let expected = match errors {
        [one] => one.to_string(),
        many => format!("[{}]", many.join(", ")),
    };
    assert_eq!(listed, expected);
    let causes = status["details"]["causes"].as_array().unwrap();
    let fields: Vec<&str> = causes
        .iter()
        .map(|c| c["field"].as_str().unwrap())
        .collect();
    let expected_fields: Vec<&str> = errors
        .iter()
        .map(|e| e.split_once(": ").unwrap().0)
        .collect();
    assert_eq!(fields, expected_fields);
}

/// `collection`'s object `name` read back, changed by `change`, PUT.
async fn update(client: &kube::Client, uri: &str, change: impl FnOnce(&mut Value)) -> (u16, Value) {
    let mut obj = get(client, uri).await;
    change(&mut obj);
    send(client, "PUT", uri, &obj).await
}

fn object(api_version: &str, kind: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name}, "spec": spec})
}

fn claim(name: &str, devices: Value) -> Value {
    object(
        "resource.k8s.io/v1",
        "ResourceClaim",
        name,
        json!({"devices": devices}),
    )
}

#[tokio::test]
async fn resource_claims_default_requests_and_validate_them_in_two_passes() {
    let (_s, client) = setup().await;
    let created = create(
        &client,
        CLAIMS,
        claim(
            "gpu",
            json!({"requests": [
                {"name": "a", "exactly": {"deviceClassName": "gpu.example.com",
                    "tolerations": [{"key": "k"}],
                    "derivedAttributes": [{"name": "example.com/x", "expression": "1"}]}},
                {"name": "b", "firstAvailable": [{"name": "s", "deviceClassName": "x", "allocationMode": "All"}]},
            ]}),
        ),
    )
    .await;
    // Defaults; the alpha `derivedAttributes` dropped; status cleared.
    assert_eq!(
        created["spec"]["devices"]["requests"],
        json!([
            {"name": "a", "exactly": {"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount",
                "count": 1, "tolerations": [{"key": "k", "operator": "Equal"}]}},
            {"name": "b", "firstAvailable": [{"name": "s", "deviceClassName": "x", "allocationMode": "All"}]},
        ])
    );
    assert_eq!(created["status"], json!({}));

    refused(
        &client,
        "POST",
        CLAIMS,
        claim("empty-request", json!({"requests": [{}]})),
        &[
            &format!(r#"spec.devices.requests[0].name: Invalid value: "": {DNS_LABEL}"#),
            "spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable` is required",
        ],
    )
    .await;
    // Handwritten errors first, then the declarative tags' (duplicates shown as
    // the versioned item's JSON).
    refused(
        &client,
        "POST",
        CLAIMS,
        claim(
            "sub-requests",
            json!({"requests": [{"name": "a", "firstAvailable": [
                {"name": "s", "deviceClassName": "x"}, {"name": "s"}, {"name": "", "deviceClassName": "Q"}
            ]}]}),
        ),
        &[
            &format!(
                r#"spec.devices.requests[0].firstAvailable[2].name: Invalid value: "": {DNS_LABEL}"#
            ),
            r#"spec.devices.requests[0].firstAvailable[1]: Duplicate value: {"name":"s","deviceClassName":"","allocationMode":"ExactCount","count":1}"#,
            "spec.devices.requests[0].firstAvailable[1].deviceClassName: Required value",
            &format!(
                r#"spec.devices.requests[0].firstAvailable[2].deviceClassName: Invalid value: "Q": {DNS_SUBDOMAIN}"#
            ),
        ],
    )
    .await;
    refused(
        &client,
        "POST",
        CLAIMS,
        claim(
            "modes",
            json!({"requests": [
                {"name": "a", "exactly": {"deviceClassName": "x", "allocationMode": "Some"}},
                {"name": "b", "exactly": {"deviceClassName": "x", "count": -2}},
                {"name": "c", "exactly": {"deviceClassName": "x", "allocationMode": "All", "count": 3}},
                {"name": "d", "exactly": {"deviceClassName": "x"}, "firstAvailable": [{"name": "e", "deviceClassName": "y"}]},
            ]}),
        ),
        &[
            "spec.devices.requests[1].exactly.count: Invalid value: -2: must be greater than zero",
            "spec.devices.requests[2].exactly.count: Invalid value: 3: must not be specified when allocationMode is 'All'",
            "spec.devices.requests[3]: Invalid value: null: exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set",
            r#"spec.devices.requests[0].exactly.allocationMode: Unsupported value: "Some": supported values: "All", "ExactCount""#,
        ],
    )
    .await;
    refused(
        &client,
        "POST",
        CLAIMS,
        claim(
            "tolerations",
            json!({"requests": [{"name": "a", "exactly": {"deviceClassName": "x", "tolerations": [
                {"operator": "Bogus", "effect": "Bad"},
                {"key": "a b", "operator": "Exists", "value": "v"},
                {"operator": "Equal", "value": "-x-"},
            ]}}]}),
        ),
        &[
            "spec.devices.requests[0].exactly.tolerations[1].value: Invalid value: \"v\": must be empty for operator `Exists`",
            &format!(
                r#"spec.devices.requests[0].exactly.tolerations[2].value: Invalid value: "-x-": {LABEL_VALUE}"#
            ),
            r#"spec.devices.requests[0].exactly.tolerations[0].operator: Unsupported value: "Bogus": supported values: "Equal", "Exists""#,
            r#"spec.devices.requests[0].exactly.tolerations[0].effect: Unsupported value: "Bad": supported values: "NoExecute", "NoSchedule", "None""#,
            &format!(
                r#"spec.devices.requests[0].exactly.tolerations[1].key: Invalid value: "a b": {NAME_PART}"#
            ),
        ],
    )
    .await;
    refused(
        &client,
        "POST",
        CLAIMS,
        claim(
            "constraints",
            json!({"requests": [{"name": "a", "exactly": {"deviceClassName": "x"}}], "constraints": [
                {},
                {"requests": ["b", "a", "a", "a/b/c"], "matchAttribute": "nodomain"},
                {"distinctAttribute": "/x"},
            ]}),
        ),
        &[
            r#"spec.devices.constraints[0]: Required value: exactly one of "matchAttribute" or "distinctAttribute" is required, but multiple fields are set"#,
            &format!(r#"spec.devices.constraints[1].requests[0]: Invalid value: "b": {REQUEST_REF}"#),
            &format!(
                r#"spec.devices.constraints[1].requests[3]: Invalid value: "a/b/c": {REQUEST_REF}"#
            ),
            r#"spec.devices.constraints[1].requests[2]: Duplicate value: "a""#,
            r#"spec.devices.constraints[1].matchAttribute: Invalid value: "nodomain": a fully qualified name must be a domain and a name separated by a slash"#,
            r#"spec.devices.constraints[2].distinctAttribute: Invalid value: "": prefix must not be empty"#,
        ],
    )
    .await;
    refused(
        &client,
        "POST",
        CLAIMS,
        claim(
            "config",
            json!({"requests": [{"name": "a", "exactly": {"deviceClassName": "x"}}], "config": [
                {},
                {"requests": ["zz"], "opaque": {"driver": "", "parameters": {}}},
                {"opaque": {"driver": "Bad_Driver", "parameters": [1]}},
                {"opaque": {"driver": "d.example.com"}},
            ]}),
        ),
        &[
            "spec.devices.config[0].opaque: Required value",
            &format!(r#"spec.devices.config[1].requests[0]: Invalid value: "zz": {REQUEST_REF}"#),
            r#"spec.devices.config[2].opaque.parameters: Invalid value: "<value omitted>": must be a valid JSON object"#,
            "spec.devices.config[3].opaque.parameters: Required value",
            "spec.devices.config[1].opaque.driver: Required value",
            &format!(
                r#"spec.devices.config[2].opaque.driver: Invalid value: "Bad_Driver": {DNS_SUBDOMAIN_CASELESS}"#
            ),
        ],
    )
    .await;
    let many: Vec<Value> = (0..33)
        .map(|i| json!({"name": format!("r{i}"), "exactly": {"deviceClassName": "x"}}))
        .collect();
    refused(
        &client,
        "POST",
        CLAIMS,
        claim("many", json!({"requests": many})),
        &["spec.devices.requests: Too many: 33: must have at most 32 items"],
    )
    .await;

    // The spec never changes (the tags' error shows no value); metadata may.
    let uri = format!("{CLAIMS}/gpu");
    let (code, status) = update(&client, &uri, |c| {
        c["spec"]["devices"]["requests"][0]["name"] = json!("z");
    })
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        status["message"],
        r#"ResourceClaim.resource.k8s.io "gpu" is invalid: spec: Invalid value: null: field is immutable"#
    );
    let (code, updated) = update(&client, &uri, |c| {
        c["metadata"]["labels"] = json!({"a": "b"});
        c["status"] = json!({"reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]});
    })
    .await;
    assert_eq!(code, 200, "{updated}");
    assert_eq!(
        updated["status"],
        json!({}),
        "status is written through /status"
    );
}

#[tokio::test]
async fn resource_claim_templates_validate_their_metadata_and_keep_their_spec() {
    let (_s, client) = setup().await;
    let template =
        |name: &str, spec: Value| object("resource.k8s.io/v1", "ResourceClaimTemplate", name, spec);
    let created = create(
        &client,
        TEMPLATES,
        template(
            "t",
            json!({"metadata": {"labels": {"a": "b"}}, "spec": {"devices": {"requests": [
                {"name": "r", "exactly": {"deviceClassName": "c"}},
                {"name": "s", "firstAvailable": [{"name": "t", "deviceClassName": "c", "allocationMode": "All"}]},
            ]}}}),
        ),
    )
    .await;
    assert_eq!(
        created["spec"]["spec"]["devices"]["requests"][0]["exactly"],
        json!({"deviceClassName": "c", "allocationMode": "ExactCount", "count": 1})
    );
    refused(
        &client,
        "POST",
        TEMPLATES,
        template(
            "bad",
            json!({"metadata": {"labels": {"a b": "c"}, "name": "x", "annotations": {"A_": "b"}},
                "spec": {"devices": {"requests": [{"name": "r", "exactly": {}}, {"name": "r"}]}}}),
        ),
        &[
            &format!(r#"spec.metadata.annotations: Invalid value: "A_": {NAME_PART}"#),
            &format!(r#"spec.metadata.labels: Invalid value: "a b": {NAME_PART}"#),
            "spec.metadata.name: Forbidden: cannot be set",
            "spec.spec.devices.requests[0].exactly.deviceClassName: Required value",
            "spec.spec.devices.requests[1]: Required value: exactly one of `exactly` or `firstAvailable` is required",
            r#"spec.spec.devices.requests[1]: Duplicate value: {"name":"r"}"#,
        ],
    )
    .await;
    // The spec is immutable, shown as the internal Go struct.
    let uri = format!("{TEMPLATES}/t");
    let (code, status) = update(&client, &uri, |t| {
        t["spec"]["spec"]["devices"]["requests"][0]["name"] = json!("z");
    })
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        status["message"],
        r#"ResourceClaimTemplate.resource.k8s.io "t" is invalid: spec: Invalid value: {"labels":{"a":"b"},"Spec":{"Devices":{"Requests":[{"Name":"z","Exactly":{"DeviceClassName":"c","Selectors":null,"AllocationMode":"ExactCount","Count":1,"AdminAccess":null,"Tolerations":null,"Capacity":null,"DerivedAttributes":null},"FirstAvailable":null},{"Name":"s","Exactly":null,"FirstAvailable":[{"Name":"t","DeviceClassName":"c","Selectors":null,"AllocationMode":"All","Count":0,"Tolerations":null,"Capacity":null,"DerivedAttributes":null}]}],"Constraints":null,"Config":null}}}: field is immutable"#
    );
    let (code, _) = update(&client, &uri, |t| {
        t["metadata"]["labels"] = json!({"c": "d"});
    })
    .await;
    assert_eq!(code, 200);
}

#[tokio::test]
async fn device_classes_validate_selectors_config_and_extended_resources() {
    let (_s, client) = setup().await;
    let classes = format!("{RESOURCE}/deviceclasses");
    let class = |name: &str, spec: Value| object("resource.k8s.io/v1", "DeviceClass", name, spec);
    let created = create(&client, &classes, class("gpu", json!({}))).await;
    assert_eq!(created["metadata"]["generation"], 1);
    assert_eq!(created["spec"], json!({}));
    refused(
        &client,
        "POST",
        &classes,
        class(
            "bad",
            json!({"selectors": [{}, {"cel": {"expression": "x".repeat(10241)}}],
                "config": [{}, {"opaque": {"driver": "Bad_D", "parameters": {"a": 1}}}],
                "extendedResourceName": "nodomain"}),
        ),
        &[
            "spec.selectors[0].cel: Required value",
            "spec.selectors[1].cel.expression: Too long: may not be more than 10240 bytes",
            "spec.config[0].opaque: Required value",
            &format!(r#"spec.config[1].opaque.driver: Invalid value: "Bad_D": {DNS_SUBDOMAIN_CASELESS}"#),
            r#"spec.extendedResourceName: Invalid value: "nodomain": a name must be a domain-prefixed path, such as 'example.com/my-prop'"#,
        ],
    )
    .await;
    // The name is the tags' rule now: reported after the spec's errors.
    refused(
        &client,
        "POST",
        &classes,
        class("Dc_Bad_Name", json!({"config": [{}]})),
        &[
            "spec.config[0].opaque: Required value",
            &format!(r#"metadata.name: Invalid value: "Dc_Bad_Name": {DNS_SUBDOMAIN}"#),
        ],
    )
    .await;
    refused(
        &client,
        "POST",
        &classes,
        class("ext", json!({"extendedResourceName": "kubernetes.io/foo"})),
        &[
            r#"spec.extendedResourceName: Invalid value: "kubernetes.io/foo": must not have "kubernetes.io/" domain"#,
        ],
    )
    .await;
    let uri = format!("{classes}/gpu");
    let (code, updated) = update(&client, &uri, |c| {
        c["spec"]["extendedResourceName"] = json!("example.com/gpu");
    })
    .await;
    assert_eq!(code, 200, "{updated}");
    assert_eq!(updated["metadata"]["generation"], 2);
    let (code, deleted) = send(&client, "DELETE", &uri, &json!({})).await;
    assert_eq!(
        (code, deleted["kind"].as_str()),
        (200, Some("DeviceClass")),
        "the deleted object is returned"
    );
}

fn slice(name: &str, spec: Value) -> Value {
    object("resource.k8s.io/v1", "ResourceSlice", name, spec)
}

#[tokio::test]
async fn resource_slices_reach_nodes_one_way_and_describe_devices() {
    let (_s, client) = setup().await;
    let slices = format!("{RESOURCE}/resourceslices");
    let pool = json!({"name": "pool", "resourceSliceCount": 1});
    let created = create(
        &client,
        &slices,
        slice(
            "ok",
            json!({"driver": "dra.example.com", "pool": pool, "nodeName": "node-1",
                "skipNodeOperations": ["All"],
                "devices": [{"name": "d0", "attributes": {"model": {"string": "a"}, "example.com/v": {"version": "1.0.0"}},
                    "capacity": {"mem": {"value": "1Gi"}}, "taints": [{"key": "k", "effect": "NoSchedule"}]}]}),
        ),
    )
    .await;
    let spec = &created["spec"];
    assert_eq!(spec["pool"]["generation"], 0);
    assert!(spec.get("skipNodeOperations").is_none(), "an alpha field");
    let taint = &spec["devices"][0]["taints"][0];
    assert!(
        taint["timeAdded"].as_str().unwrap().ends_with('Z'),
        "{taint}"
    );

    refused(
        &client,
        "POST",
        &slices,
        slice("empty", json!({})),
        &[
            "spec.driver: Required value",
            "spec.pool.name: Required value",
            "spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero",
            "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required",
        ],
    )
    .await;
    refused(
        &client,
        "POST",
        &slices,
        slice(
            "many-ways",
            json!({"driver": "d.example.com", "pool": pool, "nodeName": "n", "allNodes": true,
                "nodeSelector": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "a", "operator": "In", "values": ["b"]}]},
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["x"]}]}]}}),
        ),
        &[
            r#"spec.nodeSelector.nodeSelectorTerms: Invalid value: [{"MatchExpressions":[{"Key":"a","Operator":"In","Values":["b"]}],"MatchFields":null},{"MatchExpressions":null,"MatchFields":[{"Key":"metadata.name","Operator":"In","Values":["x"]}]}]: must have exactly one node selector term"#,
            "spec: Invalid value: \"{`nodeName`, `nodeSelector`, `allNodes`}\": exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set",
        ],
    )
    .await;
    refused(
        &client,
        "POST",
        &slices,
        slice(
            "devices",
            json!({"driver": "d.example.com", "pool": pool, "allNodes": true, "devices": [
                {"name": "Bad_Name", "attributes": {"v": {"version": "1.0"}, "x": {}, "y": {"int": 1, "bool": true}},
                    "capacity": {"c1": {"value": "1", "requestPolicy": {"default": "1"}}}},
                {"name": "d1", "taints": [{"key": "k", "effect": "Bad"}, {"key": "", "effect": ""}], "nodeName": "n"},
                {"name": "d1"},
            ]}),
        ),
        &[
            &format!(r#"spec.devices[0].name: Invalid value: "Bad_Name": {DNS_LABEL}"#),
            r#"spec.devices[0].attributes[v].version: Invalid value: "1.0": must be a string compatible with semver.org spec 2.0.0"#,
            "spec.devices[0].capacity[c1].requestPolicy: Forbidden: allowMultipleAllocations must be true",
            r#"spec.devices[1].taints[1].key: Invalid value: "": name part must be non-empty"#,
            &format!(r#"spec.devices[1].taints[1].key: Invalid value: "": {NAME_PART}"#),
            "spec.devices[1]: Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec",
            r#"spec.devices[2]: Duplicate value: "d1""#,
            "spec.devices[0].attributes[x]: Invalid value: \"\": must specify one of: `int`, `bool`, `string`, `version`, `ints`, `bools`, `strings`, `versions`",
            "spec.devices[0].attributes[y]: Invalid value: \"{int, bool}\": must specify exactly one of: `int`, `bool`, `string`, `version`, `ints`, `bools`, `strings`, `versions`",
            r#"spec.devices[1].taints[0].effect: Unsupported value: "Bad": supported values: "NoExecute", "NoSchedule", "None""#,
            "spec.devices[1].taints[1].effect: Required value",
        ],
    )
    .await;
    refused(
        &client,
        "POST",
        &slices,
        slice(
            "counters",
            json!({"driver": "d.example.com", "pool": pool,
                "sharedCounters": [{"name": "cs", "counters": {"mem": {"value": "1"}}}, {"name": "cs"}, {"name": "Bad"}]}),
        ),
        &[
            "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required",
            r#"spec.sharedCounters[1]: Duplicate value: {"name":"cs"}"#,
            "spec.sharedCounters[1].counters: Required value",
            &format!(r#"spec.sharedCounters[2].name: Invalid value: "Bad": {DNS_LABEL}"#),
            "spec.sharedCounters[2].counters: Required value",
        ],
    )
    .await;
    refused(
        &client,
        "POST",
        &slices,
        slice(
            "binding",
            json!({"driver": "d.example.com", "pool": pool, "allNodes": true, "devices": [
                {"name": "a", "bindingConditions": ["x", "x"], "bindingFailureConditions": ["x"]},
                {"name": "b", "bindingFailureConditions": ["y"]},
            ]}),
        ),
        &[
            r#"spec.devices[0].bindingConditions[1]: Duplicate value: "x""#,
            r#"spec.devices[0].bindingFailureConditions[0]: Invalid value: "x": bindingFailureConditions must not overlap with bindingConditions"#,
            "spec.devices[1].bindingConditions: Invalid value: null: bindingConditions are required to use bindingFailureConditions",
        ],
    )
    .await;

    // The driver, pool name and node name never change; the pool's generation does.
    let uri = format!("{slices}/ok");
    let (code, status) = update(&client, &uri, |s| {
        s["spec"]["driver"] = json!("other.example.com");
        s["spec"]["pool"]["name"] = json!("other");
        s["spec"]["nodeName"] = json!("node-2");
    })
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        status["message"],
        r#"ResourceSlice.resource.k8s.io "ok" is invalid: [spec.pool.name: Invalid value: "other": field is immutable, spec.driver: Invalid value: "other.example.com": field is immutable, spec.nodeName: Invalid value: "node-2": field is immutable]"#
    );
    let (code, updated) = update(&client, &uri, |s| {
        s["spec"]["pool"]["generation"] = json!(5)
    })
    .await;
    assert_eq!((code, &updated["metadata"]["generation"]), (200, &json!(2)));

    // Uppercase driver names are allowed, with upstream's warning.
    let body = slice(
        "upper",
        json!({"driver": "Dra.Example.com", "pool": pool, "allNodes": true}),
    );
    let (code, headers, _) = send_raw(
        &client,
        "POST",
        &slices,
        "application/json",
        serde_json::to_vec(&body).unwrap(),
    )
    .await;
    let warning = r#"299 - "spec.driver: driver names should be lowercase; \"Dra.Example.com\" contains uppercase characters""#;
    assert_eq!(code, 201);
    assert_eq!(headers["warning"], warning);
    // Upstream's WarningsOnUpdate warns the same (strategy.go), for an update
    // however it comes: a PATCH as a PUT.
    let patched = send_raw(
        &client,
        "PATCH",
        &format!("{slices}/upper"),
        "application/merge-patch+json",
        serde_json::to_vec(&json!({"spec": {"pool": {"generation": 2}}})).unwrap(),
    )
    .await;
    assert_eq!(
        (patched.0, &patched.1["warning"]),
        (200, &warning.parse().unwrap())
    );
    let mut current = get(&client, &format!("{slices}/upper")).await;
    current["spec"]["pool"]["generation"] = json!(3);
    let put = send_raw(
        &client,
        "PUT",
        &format!("{slices}/upper"),
        "application/json",
        serde_json::to_vec(&current).unwrap(),
    )
    .await;
    assert_eq!((put.0, &put.1["warning"]), (200, &warning.parse().unwrap()));
}

#[tokio::test]
async fn device_taint_rules_time_their_taints() {
    let (_s, client) = setup().await;
    let rules = format!("{RESOURCE}/devicetaintrules");
    let rule =
        |name: &str, spec: Value| object("resource.k8s.io/v1", "DeviceTaintRule", name, spec);
    let mut body = rule(
        "r",
        json!({"taint": {"key": "example.com/k", "effect": "NoSchedule"}}),
    );
    body["status"] = json!({"conditions": [{"type": "X", "status": "True", "reason": "R", "message": "m", "lastTransitionTime": "2020-01-01T00:00:00Z"}]});
    let created = create(&client, &rules, body).await;
    assert_eq!(created["status"], json!({}), "status is cleared");
    assert_eq!(created["metadata"]["generation"], 1);
    let added = created["spec"]["taint"]["timeAdded"].clone();
    assert!(added.as_str().unwrap().ends_with('Z'), "{added}");

    refused(
        &client,
        "POST",
        &rules,
        rule("empty", json!({})),
        &[
            r#"spec.taint.key: Invalid value: "": name part must be non-empty"#,
            &format!(r#"spec.taint.key: Invalid value: "": {NAME_PART}"#),
            "spec.taint.effect: Required value",
        ],
    )
    .await;
    refused(
        &client,
        "POST",
        &rules,
        rule(
            "bad",
            json!({"deviceSelector": {"driver": "Bad_D", "pool": "a//b", "device": "Dev"},
                "taint": {"key": "a b", "value": "-v-", "effect": "Boom"}}),
        ),
        &[
            &format!(r#"spec.deviceSelector.driver: Invalid value: "Bad_D": {DNS_SUBDOMAIN}"#),
            &format!(r#"spec.deviceSelector.pool: Invalid value: "": {DNS_SUBDOMAIN}"#),
            &format!(r#"spec.deviceSelector.device: Invalid value: "Dev": {DNS_LABEL}"#),
            &format!(r#"spec.taint.key: Invalid value: "a b": {NAME_PART}"#),
            &format!(r#"spec.taint.value: Invalid value: "-v-": {LABEL_VALUE}"#),
            r#"spec.taint.effect: Unsupported value: "Boom": supported values: "NoExecute", "NoSchedule", "None""#,
        ],
    )
    .await;

    // A new effect is a new taint: `timeAdded` moves unless the client moved it.
    let uri = format!("{rules}/r");
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let (code, updated) = update(&client, &uri, |r| {
        r["spec"]["taint"]["effect"] = json!("NoExecute");
    })
    .await;
    assert_eq!(code, 200, "{updated}");
    assert_ne!(updated["spec"]["taint"]["timeAdded"], added);
    assert_eq!(updated["metadata"]["generation"], 2);
    let (_, updated) = update(&client, &uri, |r| {
        r["spec"]["taint"]["effect"] = json!("None");
        r["spec"]["taint"]["timeAdded"] = json!("2021-01-01T00:00:00Z");
    })
    .await;
    assert_eq!(
        updated["spec"]["taint"]["timeAdded"],
        "2021-01-01T00:00:00Z"
    );
}

/// A self-signed certificate, a CA's or a leaf's, as PEM.
fn certificate(ca: bool) -> String {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    if ca {
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    }
    params.self_signed(&key).unwrap().pem()
}

#[tokio::test]
async fn cluster_trust_bundles_are_named_after_their_signer_and_hold_ca_certificates() {
    let (_s, client) = setup().await;
    let bundles = format!("{CERTIFICATES}/clustertrustbundles");
    let ca = certificate(true);
    let bundle = |name: &str, spec: Value| {
        object("certificates.k8s.io/v1", "ClusterTrustBundle", name, spec)
    };
    create(
        &client,
        &bundles,
        bundle("plain", json!({"trustBundle": ca})),
    )
    .await;
    let signed = json!({"signerName": "example.com/signer", "trustBundle": ca});
    create(
        &client,
        &bundles,
        bundle("example.com:signer:foo", signed.clone()),
    )
    .await;
    let invalid =
        |detail: &str| format!(r#"spec.trustBundle: Invalid value: "<value omitted>": {detail}"#);
    let cases: Vec<(Value, Vec<String>)> = vec![
        (
            bundle("plain:colon", json!({"trustBundle": ca})),
            vec![r#"metadata.name: Invalid value: "plain:colon": ClusterTrustBundle without signer name must not have ":" in its name"#.into()],
        ),
        (
            bundle("wrong-prefix", signed.clone()),
            vec![r#"metadata.name: Invalid value: "wrong-prefix": ClusterTrustBundle for signerName example.com/signer must be named with prefix example.com:signer:"#.into()],
        ),
        (
            bundle("example.com:signer:Bad_Suffix", signed.clone()),
            vec![format!(r#"metadata.name: Invalid value: "example.com:signer:Bad_Suffix": {DNS_SUBDOMAIN}"#)],
        ),
        (
            bundle("bad:signer", json!({"signerName": "bad", "trustBundle": ca})),
            vec![r#"spec.signerName: Invalid value: "bad": must be a fully qualified domain and path of the form 'example.com/signer-name'"#.into()],
        ),
        (
            bundle("empty", json!({"trustBundle": "not a pem"})),
            vec![invalid("at least one trust anchor must be provided")],
        ),
        (
            bundle("leaf", json!({"trustBundle": certificate(false)})),
            vec![invalid("entry 0 does not have the CA bit set")],
        ),
        (
            bundle("twice", json!({"trustBundle": format!("{ca}{ca}")})),
            vec![invalid("duplicate trust anchor (indices [0 1])")],
        ),
        (
            bundle(
                "key",
                json!({"trustBundle": format!("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n{ca}")}),
            ),
            vec![invalid("entry 0 has bad block type: PRIVATE KEY")],
        ),
        (
            bundle(
                "garbled",
                json!({"trustBundle": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"}),
            ),
            vec![invalid("entry 0 does not parse as X.509")],
        ),
    ];
    for (body, errors) in cases {
        let errors: Vec<&str> = errors.iter().map(String::as_str).collect();
        refused(&client, "POST", &bundles, body, &errors).await;
    }
    let (code, status) = update(&client, &format!("{bundles}/example.com:signer:foo"), |b| {
        b["spec"]["signerName"] = json!("example.com/other");
    })
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        status["message"],
        r#"ClusterTrustBundle.certificates.k8s.io "example.com:signer:foo" is invalid: [metadata.name: Invalid value: "example.com:signer:foo": ClusterTrustBundle for signerName example.com/other must be named with prefix example.com:other:, spec.signerName: Invalid value: "example.com/other": field is immutable]"#
    );
}

/// A stub PKCS#10 request for an Ed25519 key, and one for a 2048-bit RSA
/// key (both from openssl).
const ED25519_CSR: &str = "MH8wMwIBADAAMCowBQYDK2VwAyEA8aFz0UoHKzo//wxxsc0IpUiqMIAAVHrangiACBlb7tagADAFBgMrZXADQQD+Uo3811ZnAaTX++vluHvjRoZqpETd6+bUr5i1EkYgciAsemeuZ1RHhvv0pXMpDSfH/9N5YNjNjq7qcJJ6A4EB";
const RSA_2048_CSR: &str = "MIICUTCCATkCAQAwDDEKMAgGA1UEAwwBeDCCASIwDQYJKoZIhvcNAQEBBQADggEPADCCAQoCggEBAKibLclcQxoK9tNxlMJbFM6PNeZkHC8nGahLADrk8VqUmUf85Rj2kusk4J/BVfyaU7llyQPtxNthLlHcOlCIdR8H4dJxTOi+m/v18JAODktL7V+zYnAH2Kf0w12ie0x+mLMJMBg2zrH49EqZmKGDfj41YuxcyKF6FanEuI0AXjY+7qU6UmLwHv884fWS8OPoXZlMgttTYQcDtFgtRZgAHG5/miSAxNfqDOjNUCEU4j2fhtl6arVd6MGXRU2aU9x1mzq4zjfuzJR+oHed1E0v7/lNrXjkwC3IYBTgBOgF6EXGBm/XgiSaBhOkmi50p2AOQy5s9mz1igM59N0T/OlehtcCAwEAAaAAMA0GCSqGSIb3DQEBCwUAA4IBAQBVpNL9NMAbCGagjwm8V5SzIEY+YczzHdxA2hOCOQB5QrpDx/bFrbwQ/2gYX0Sht/Hr6kAhRLK/qqH44Hl0++3EoTaOvb/2mu7e1kCdk8UigCpafJYWsY4GL625TMi3lc3oEC+wpjnj1vTD9YksDu2TpE16RKMNi7enc/cYnD3g2HWMvwXA/GRQDTREWbTUXNphfrGtJcQQLV/DqCtoIp3DDnHvm3MSt1xwKgRIzU31EVhY5LjU9BjAm62HdG6czFEv0ZqrM7SlgKzrN2wyRGoCbe0iIshCOTW7waud2lR3zEJGFw2qT44dRfmyBaIPAI+kmrI/4L2kJdsZWdJN9ozM";

#[tokio::test]
async fn pod_certificate_requests_check_their_spec_once() {
    use base64::Engine;
    let (_s, client) = setup().await;
    let request = |name: &str, changes: Value| {
        let mut spec = json!({"signerName": "example.com/foo", "podName": "p", "podUID": "pu",
            "serviceAccountName": "sa", "serviceAccountUID": "su", "nodeName": "n", "nodeUID": "nu",
            "stubPKCS10Request": ED25519_CSR});
        for (k, v) in changes.as_object().unwrap() {
            spec[k] = v.clone();
        }
        object(
            "certificates.k8s.io/v1",
            "PodCertificateRequest",
            name,
            spec,
        )
    };
    let mut body = request("ok", json!({}));
    body["status"] = json!({"certificateChain": "x"});
    let created = create(&client, PCRS, body).await;
    assert_eq!(created["spec"]["maxExpirationSeconds"], 86400);
    assert_eq!(created["status"], json!({}), "status is cleared");
    // An ECDSA P-256 request signed as rcgen signs it passes.
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    let der = params.serialize_request(&key).unwrap();
    let p256 = base64::engine::general_purpose::STANDARD.encode(der.der());
    create(
        &client,
        PCRS,
        request("p256", json!({"stubPKCS10Request": p256})),
    )
    .await;

    refused(
        &client,
        "POST",
        PCRS,
        object(
            "certificates.k8s.io/v1",
            "PodCertificateRequest",
            "empty",
            json!({}),
        ),
        &[
            "spec.signerName: Required value",
            &format!(r#"spec.podName: Invalid value: "": {DNS_SUBDOMAIN}"#),
            r#"spec.podUID: Invalid value: "": must not be empty"#,
            &format!(r#"spec.serviceAccountName: Invalid value: "": {DNS_SUBDOMAIN}"#),
            r#"spec.serviceAccountUID: Invalid value: "": must not be empty"#,
            &format!(r#"spec.nodeName: Invalid value: "": {DNS_SUBDOMAIN}"#),
            r#"spec.nodeUID: Invalid value: "": must not be empty"#,
            "spec: Invalid value: exactly one of (stubPKCS10Request) or (pkixPublicKey, proofOfPossession) must be set",
        ],
    )
    .await;
    let cases = [
        (
            json!({"signerName": "kubernetes.io/foo", "maxExpirationSeconds": 86401}),
            "spec.maxExpirationSeconds: Invalid value: 86401: must be in the range [3600, 86400]",
        ),
        (
            json!({"maxExpirationSeconds": 91 * 86400 + 1}),
            "spec.maxExpirationSeconds: Invalid value: 7862401: must be in the range [3600, 7862400]",
        ),
        (
            json!({"podUID": "u".repeat(129)}),
            "spec.podUID: Too long: may not be more than 128 bytes",
        ),
        (
            json!({"stubPKCS10Request": "anVuaw=="}),
            "spec.stubPKCS10Request: Invalid value: must be a valid PKCS#10 CSR",
        ),
        (
            json!({"stubPKCS10Request": RSA_2048_CSR}),
            r#"spec.stubPKCS10Request: Invalid value: "2048-bit modulus": RSA keys must have modulus size 3072 or 4096"#,
        ),
        (
            json!({"stubPKCS10Request": ED25519_CSR.replace("4EB", "4EA")}),
            "spec.stubPKCS10Request: Invalid value: invalid signature",
        ),
        (
            json!({"unverifiedUserAnnotations": {"nodomain": "x", "Example.COM/ok": "y"}}),
            r#"spec.unverifiedUserAnnotations: Invalid value: "nodomain": must be a domain-prefixed key (such as "acme.io/foo")"#,
        ),
    ];
    for (i, (changes, error)) in cases.into_iter().enumerate() {
        let body = request(&format!("bad-{i}"), changes);
        refused(&client, "POST", PCRS, body, &[error]).await;
    }
    // The spec never changes (shown as the internal Go struct); the status is kept.
    let uri = format!("{PCRS}/ok");
    let (code, status) = update(&client, &uri, |r| r["spec"]["podName"] = json!("q")).await;
    assert_eq!(code, 422);
    assert_eq!(
        status["message"],
        format!(
            r#"PodCertificateRequest.certificates.k8s.io "ok" is invalid: spec: Invalid value: {{"SignerName":"example.com/foo","PodName":"q","PodUID":"pu","ServiceAccountName":"sa","ServiceAccountUID":"su","NodeName":"n","NodeUID":"nu","MaxExpirationSeconds":86400,"PKIXPublicKey":null,"ProofOfPossession":null,"StubPKCS10Request":"{ED25519_CSR}","UnverifiedUserAnnotations":null}}: field is immutable"#
        )
    );
    let (code, updated) = update(&client, &uri, |r| {
        r["metadata"]["labels"] = json!({"a": "b"});
        r["status"] = json!({"notBefore": "2020-01-01T00:00:00Z"});
    })
    .await;
    assert_eq!((code, &updated["status"]), (200, &json!({})));
}

#[tokio::test]
async fn volume_attributes_classes_are_fixed_once_created() {
    let (_s, client) = setup().await;
    let classes = format!("{STORAGE}/volumeattributesclasses");
    let class = |name: &str, fields: Value| {
        let mut c = json!({"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttributesClass", "metadata": {"name": name}});
        for (k, v) in fields.as_object().unwrap() {
            c[k] = v.clone();
        }
        c
    };
    create(
        &client,
        &classes,
        class(
            "fast",
            json!({"driverName": "csi.example.com", "parameters": {"iops": "100"}}),
        ),
    )
    .await;
    refused(
        &client,
        "POST",
        &classes,
        class("empty", json!({})),
        &[
            "driverName: Required value",
            "parameters: Required value: must contain at least one key/value pair",
        ],
    )
    .await;
    refused(
        &client,
        "POST",
        &classes,
        class(
            "bad",
            json!({"driverName": "Bad Driver!", "parameters": {"": "x"}}),
        ),
        &[
            &format!(r#"driverName: Invalid value: "bad driver!": {NAME_PART}"#),
            r#"parameters: Invalid value: "": field can not be empty."#,
        ],
    )
    .await;
    let (code, status) = update(&client, &format!("{classes}/fast"), |c| {
        c["driverName"] = json!("other.example.com");
        c["parameters"] = json!({"iops": "200"});
    })
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        status["message"],
        r#"VolumeAttributesClass.storage.k8s.io "fast" is invalid: [driverName: Forbidden: updates to driverName are forbidden., parameters: Forbidden: updates to parameters are forbidden.]"#
    );
}

#[tokio::test]
async fn csi_nodes_keep_status_apart_and_drivers_fixed() {
    let (_s, client) = setup().await;
    let nodes = format!("{STORAGE}/csinodes");
    let node = |name: &str, spec: Value| object("storage.k8s.io/v1", "CSINode", name, spec);
    let mut body = node(
        "node-1",
        json!({"drivers": [{"name": "csi.example.com", "nodeID": "n1",
            "topologyKeys": ["topology.example.com/zone"], "allocatable": {"count": 3}}]}),
    );
    body["status"] = json!({"storageHealth": [{"name": "x"}]});
    let created = create(&client, &nodes, body).await;
    assert_eq!(created["status"], json!({}), "status is reset on create");
    refused(
        &client,
        "POST",
        &nodes,
        node(
            "node-2",
            json!({"drivers": [{"name": "", "nodeID": ""},
                {"name": "Bad_D", "nodeID": "x", "allocatable": {"count": -1}, "topologyKeys": ["k", "k"]},
                {"name": "Bad_D", "nodeID": "y"}]}),
        ),
        &[
            "spec.drivers[0].name: Required value",
            "spec.drivers[0].nodeID: Required value",
            &format!(r#"spec.drivers[1].name: Invalid value: "Bad_D": {DNS_SUBDOMAIN}"#),
            "spec.drivers[1].allocatable.count: Invalid value: -1: must be greater than or equal to 0",
            r#"spec.drivers[1]: Duplicate value: "k""#,
            &format!(r#"spec.drivers[2].name: Invalid value: "Bad_D": {DNS_SUBDOMAIN}"#),
            r#"spec.drivers[2].name: Duplicate value: "Bad_D""#,
        ],
    )
    .await;
    let uri = format!("{nodes}/node-1");
    let (code, status) = update(&client, &uri, |n| {
        n["spec"]["drivers"][0]["nodeID"] = json!("n2")
    })
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        status["message"],
        r#"CSINode.storage.k8s.io "node-1" is invalid: spec.drivers: Invalid value: {"Name":"csi.example.com","NodeID":"n2","TopologyKeys":["topology.example.com/zone"],"Allocatable":null}: field is immutable"#
    );
    // The allocatable count may change; a main-resource update keeps the status.
    let (code, updated) = update(&client, &uri, |n| {
        n["spec"]["drivers"][0]["allocatable"] = json!({"count": 9});
        n["status"] = json!({"storageHealth": [{"name": "y"}]});
    })
    .await;
    assert_eq!(code, 200, "{updated}");
    assert_eq!(updated["spec"]["drivers"][0]["allocatable"]["count"], 9);
    assert_eq!(updated["status"], json!({}));
    // `/status` keeps the spec (storageHealth is behind an alpha gate).
    let (code, written) = update(&client, &format!("{uri}/status"), |n| {
        n["status"] = json!({"storageHealth": [{"name": "z"}]});
        n["spec"]["drivers"] = json!([]);
    })
    .await;
    assert_eq!(code, 200, "{written}");
    assert_eq!(written["status"], json!({}));
    assert_eq!(written["spec"]["drivers"][0]["nodeID"], "n1");
}

#[tokio::test]
async fn storage_version_migrations_name_a_resource_and_record_progress() {
    let (_s, client) = setup().await;
    let migration = |name: &str, spec: Value| {
        object(
            "storagemigration.k8s.io/v1",
            "StorageVersionMigration",
            name,
            spec,
        )
    };
    let mut body = migration(
        "deployments",
        json!({"resource": {"group": "apps", "resource": "deployments"}}),
    );
    body["status"] = json!({"resourceVersion": "12"});
    let created = create(&client, MIGRATIONS, body).await;
    assert_eq!(created["status"], json!({}));
    refused(
        &client,
        "POST",
        MIGRATIONS,
        migration("empty", json!({})),
        &["spec.resource.resource: Required value: resource is required to be set"],
    )
    .await;
    refused(
        &client,
        "POST",
        MIGRATIONS,
        migration(
            "bad",
            json!({"resource": {"group": "Bad_Group", "resource": "Deployments"}}),
        ),
        &[
            r#"spec.resource.resource: Invalid value: "Deployments": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"#,
            &format!(r#"spec.resource.group: Invalid value: "Bad_Group": {DNS_SUBDOMAIN}"#),
        ],
    )
    .await;
    let uri = format!("{MIGRATIONS}/deployments");
    let (code, status) = update(&client, &uri, |m| {
        m["spec"]["resource"]["resource"] = json!("replicasets");
    })
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        status["message"],
        r#"StorageVersionMigration.storagemigration.k8s.io "deployments" is invalid: spec: Invalid value: {"Resource":{"group":"apps","resource":"replicasets"}}: field is immutable"#
    );
    let status_uri = format!("{uri}/status");
    let condition = |kind: &str| json!({"type": kind, "status": "True", "reason": "R", "message": "", "lastTransitionTime": "2020-01-01T00:00:00Z"});
    refused(
        &client,
        "PUT",
        &status_uri,
        {
            let mut m = get(&client, &uri).await;
            m["status"] = json!({"resourceVersion": "abc", "conditions": [condition("Succeeded"), condition("Failed")]});
            m
        },
        &[
            r#"status.resourceVersion: Invalid value: "abc": resource version is not well formed: abc"#,
            r#"status.conditions: Invalid value: [{"type":"Succeeded","status":"True","lastTransitionTime":"2020-01-01T00:00:00Z","reason":"R","message":""},{"type":"Failed","status":"True","lastTransitionTime":"2020-01-01T00:00:00Z","reason":"R","message":""}]: Both success and failed conditions cannot be true at the same time"#,
        ],
    )
    .await;
    let (code, _) = update(&client, &status_uri, |m| {
        m["status"] = json!({"resourceVersion": "15"});
    })
    .await;
    assert_eq!(code, 200);
    let (code, status) = update(&client, &status_uri, |m| {
        m["status"] = json!({"resourceVersion": "16"});
    })
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        status["message"],
        r#"StorageVersionMigration.storagemigration.k8s.io "deployments" is invalid: status.resourceVersion: Invalid value: "16": field is immutable"#
    );
}
