//! Admission webhooks, black-box: a real kubext calls a real HTTPS webhook
//! server (testkit's, after upstream's e2e webhook) through a Service's
//! EndpointSlice or a URL, with the caBundle checked. Denials, patches,
//! ordering, warnings, selectors, match conditions, failure policies,
//! timeouts, dry run, reinvocation, `matchPolicy`, the AdmissionReview sent,
//! and the exemption of webhook configurations — with upstream's messages
//! and codes (`test/e2e/apimachinery/webhook.go`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use testkit::Server;
use testkit::webhook::WebhookServer;

use common::api_error;

const NAMESPACE: &str = "webhooks";
const SERVICE: &str = "e2e-test-webhook";

/// A kubext and a webhook server behind Service `webhooks/e2e-test-webhook`.
struct Fixture {
    server: Server,
    hooks: WebhookServer,
}

fn fixture() -> Fixture {
    fixture_with(Server::builder())
}

fn fixture_with(builder: testkit::Builder) -> Fixture {
    let server = builder.start().unwrap();
    let hooks = WebhookServer::start(&[&format!("{SERVICE}.{NAMESPACE}.svc")]).unwrap();
    server.apply(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NAMESPACE}}}\n"
    ));
    let (service, slice) = hooks.service_manifests(NAMESPACE, SERVICE);
    server.apply(&service.to_string());
    server.apply(&slice.to_string());
    Fixture { server, hooks }
}

impl Fixture {
    /// A webhook on CREATE/UPDATE of ConfigMaps calling `path` through the Service.
    fn hook(&self, name: &str, path: &str, extra: Value) -> Value {
        let mut hook = json!({
            "name": name,
            "clientConfig": self.hooks.service_config(NAMESPACE, SERVICE, path),
            "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1", "v1beta1"],
        });
        for (k, v) in extra.as_object().unwrap() {
            hook[k] = v.clone();
        }
        hook
    }

    fn configure(&self, kind: &str, name: &str, hooks: Vec<Value>) {
        let config = json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": name}, "webhooks": hooks,
        });
        self.server.apply(&config.to_string());
    }
}

fn configmap(name: &str, data: Value) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": data})).unwrap()
}

/// Create until the webhook's effect shows (configurations take effect
/// moments after they are written): the error it ends with.
async fn denied(api: &Api<ConfigMap>, cm: &ConfigMap) -> kube::core::Status {
    for _ in 0..100 {
        match api.create(&PostParams::default(), cm).await {
            Err(e) => return api_error(e),
            Ok(_) => {
                let name = cm.metadata.name.as_deref().unwrap();
                api.delete(name, &DeleteParams::default()).await.unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
    panic!("never denied");
}

/// Create `cm` (then delete it) until `done` holds for what was created:
/// configurations take effect moments after they are written.
async fn created_until(
    api: &Api<ConfigMap>,
    cm: &ConfigMap,
    done: impl Fn(&ConfigMap) -> bool,
) -> ConfigMap {
    let name = cm.metadata.name.as_deref().unwrap();
    for _ in 0..100 {
        let created = api.create(&PostParams::default(), cm).await.unwrap();
        api.delete(name, &DeleteParams::default()).await.unwrap();
        if done(&created) {
            return created;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the webhooks never took effect");
}

#[tokio::test]
async fn a_validating_webhook_denies_with_upstreams_message_and_sees_the_whole_request() {
    let f = fixture();
    f.server.apply("apiVersion: v1\nkind: Namespace\nmetadata: {name: skipped, labels: {skip-webhook-admission: 'yes'}}\n");
    f.configure(
        "ValidatingWebhookConfiguration",
        "deny-configmaps",
        vec![f.hook(
            "deny-unwanted-configmap-data.k8s.io",
            "/configmaps",
            json!({"namespaceSelector": {"matchExpressions": [{"key": "skip-webhook-admission", "operator": "NotIn", "values": ["yes"]}]}}),
        )],
    );
    let client = f.server.client().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let bad = configmap(
        "disallowed",
        json!({"webhook-e2e-test": "webhook-disallow"}),
    );
    let status = denied(&api, &bad).await;
    assert_eq!(status.code, 400);
    assert_eq!(
        status.message,
        "admission webhook \"deny-unwanted-configmap-data.k8s.io\" denied the request: the configmap contains unwanted key and value"
    );

    // Updates by PUT and by strategic merge patch are checked too.
    let allowed = api
        .create(
            &PostParams::default(),
            &configmap("allowed", json!({"k": "v"})),
        )
        .await
        .unwrap();
    let mut changed = allowed.clone();
    changed.data = Some(
        [(
            "webhook-e2e-test".to_string(),
            "webhook-disallow".to_string(),
        )]
        .into(),
    );
    let err = api_error(
        api.replace("allowed", &PostParams::default(), &changed)
            .await
            .unwrap_err(),
    );
    assert!(
        err.message
            .contains("the configmap contains unwanted key and value"),
        "{err:?}"
    );
    let patch = json!({"data": {"webhook-e2e-test": "webhook-disallow"}});
    let err = api_error(
        api.patch(
            "allowed",
            &PatchParams::default(),
            &Patch::Strategic(&patch),
        )
        .await
        .unwrap_err(),
    );
    assert!(
        err.message
            .contains("the configmap contains unwanted key and value"),
        "{err:?}"
    );

    // A namespace the selector leaves out is not checked.
    let skipped: Api<ConfigMap> = Api::namespaced(client, "skipped");
    skipped.create(&PostParams::default(), &bad).await.unwrap();

    // What the webhook was sent (upstream's AdmissionReview v1).
    let requests = f.hooks.requests_to("/configmaps");
    let create = requests
        .iter()
        .map(|r| &r["review"])
        .find(|r| r["request"]["name"] == "allowed" && r["request"]["operation"] == "CREATE")
        .expect("the create of `allowed` was reviewed");
    assert_eq!(create["apiVersion"], "admission.k8s.io/v1");
    let request = &create["request"];
    assert_eq!(
        request["kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert_eq!(
        request["resource"],
        json!({"group": "", "version": "v1", "resource": "configmaps"})
    );
    assert_eq!(request["requestKind"], request["kind"]);
    assert_eq!(request["requestResource"], request["resource"]);
    assert_eq!(request["namespace"], "default");
    assert_eq!(request["userInfo"]["username"], "kubext-admin");
    assert!(
        request["userInfo"]["groups"]
            .as_array()
            .unwrap()
            .contains(&json!("system:masters"))
    );
    assert_eq!(request["object"]["metadata"]["name"], "allowed");
    assert_eq!(request["oldObject"], Value::Null);
    assert_eq!(request["dryRun"], false);
    assert_eq!(request["options"]["kind"], "CreateOptions");
    assert_eq!(request["uid"].as_str().unwrap().len(), 36);
    assert!(
        requests.iter().all(|r| r["query"] == "timeout=10s"),
        "{requests:?}"
    );
    let update = requests
        .iter()
        .map(|r| &r["review"]["request"])
        .find(|r| r["name"] == "allowed" && r["operation"] == "UPDATE")
        .expect("the update was reviewed");
    assert_eq!(update["oldObject"]["data"], json!({"k": "v"}));
    assert_eq!(update["options"]["kind"], "UpdateOptions");
    // Namespaces the selector leaves out never reach the webhook.
    assert!(
        requests
            .iter()
            .all(|r| r["review"]["request"]["namespace"] != "skipped")
    );
}

#[tokio::test]
async fn mutating_webhooks_run_in_order_each_seeing_the_last_patch() {
    let f = fixture();
    let stage = |n: u32| {
        json!({
            "name": format!("adding-configmap-data-stage-{n}.k8s.io"),
            "clientConfig": f.hooks.url_config("/mutating-configmaps"),
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
            "sideEffects": "None",
            // The second stage speaks only v1beta1.
            "admissionReviewVersions": if n == 1 { json!(["v1", "v1beta1"]) } else { json!(["v1beta1"]) },
            "matchConditions": [{"name": "not-skip-me", "expression": "object.metadata.name != 'skip-me'"}],
        })
    };
    f.configure(
        "MutatingWebhookConfiguration",
        "mutate-configmaps",
        vec![stage(1), stage(2)],
    );
    let client = f.server.client().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let start = json!({"mutation-start": "yes"});
    let mutated = created_until(&api, &configmap("mutated", start.clone()), |cm| {
        cm.data.as_ref().unwrap().len() > 1
    })
    .await;
    assert_eq!(
        serde_json::to_value(&mutated.data).unwrap(),
        json!({"mutation-start": "yes", "mutation-stage-1": "yes", "mutation-stage-2": "yes"})
    );
    // A match condition that is false skips both webhooks.
    let skipped = api
        .create(&PostParams::default(), &configmap("skip-me", start.clone()))
        .await
        .unwrap();
    assert_eq!(serde_json::to_value(&skipped.data).unwrap(), start);
    let stage2 = f.hooks.requests_to("/mutating-configmaps");
    assert!(
        stage2
            .iter()
            .any(|r| r["review"]["apiVersion"] == "admission.k8s.io/v1beta1")
    );
    assert!(
        stage2
            .iter()
            .all(|r| r["review"]["request"]["name"] != "skip-me")
    );

    // The skip is counted, as upstream's match-condition metrics do.
    let metrics = f.server.kubectl_ok(&["get", "--raw", "/metrics"]);
    assert!(
        metrics.contains("apiserver_admission_match_condition_exclusions_total{kind=\"webhook\",name=\"adding-configmap-data-stage-1.k8s.io\",operation=\"CREATE\",type=\"admit\"} 1"),
        "{metrics}"
    );

    // Namespace lifecycle comes first: a write into a missing namespace is a
    // 404 and no webhook hears of it.
    let missing: Api<ConfigMap> = Api::namespaced(f.server.client().await.unwrap(), "missing");
    let status = api_error(
        missing
            .create(&PostParams::default(), &configmap("m", start.clone()))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (status.code, status.message.as_str()),
        (404, "namespaces \"missing\" not found")
    );
    assert!(
        f.hooks
            .requests_to("/mutating-configmaps")
            .iter()
            .all(|r| r["review"]["request"]["namespace"] != "missing")
    );
}

/// Audit events of `log` for the request with `audit_id`, once complete.
async fn audit_event(log: &std::path::Path, audit_id: &str) -> Value {
    for _ in 0..100 {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let event = text
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|e| e["auditID"] == audit_id && e["stage"] == "ResponseComplete");
        if let Some(event) = event {
            return event;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("no audit event for {audit_id}");
}

#[tokio::test]
async fn warnings_and_audit_annotations_pass_through() {
    let dir = tempfile::tempdir().unwrap();
    let (policy, log) = (dir.path().join("policy.yaml"), dir.path().join("audit.log"));
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Request\n  namespaces: [default]\n- level: Metadata\n",
    )
    .unwrap();
    let f = fixture_with(
        Server::builder()
            .arg(format!("--audit-policy-file={}", policy.display()))
            .arg(format!("--audit-log-path={}", log.display())),
    );
    f.server
        .apply("apiVersion: v1\nkind: Namespace\nmetadata: {name: metadata-only}\n");
    f.configure(
        "MutatingWebhookConfiguration",
        "stage",
        vec![f.hook(
            "adding-configmap-data-stage-1.k8s.io",
            "/mutating-configmaps",
            json!({}),
        )],
    );
    f.configure(
        "ValidatingWebhookConfiguration",
        "warn",
        vec![f.hook("warn.example.com", "/warn", json!({}))],
    );
    let client = f.server.client().await.unwrap();
    let body = serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "warned"}, "data": {"mutation-start": "yes"}}))
    .unwrap();
    let create = |namespace: &'static str| {
        let (client, body) = (client.clone(), body.clone());
        async move {
            let (code, headers, created) = common::send_raw(
                &client,
                "POST",
                &format!("/api/v1/namespaces/{namespace}/configmaps"),
                "application/json",
                body,
            )
            .await;
            assert_eq!(code, 201);
            Api::<ConfigMap>::namespaced(client, namespace)
                .delete("warned", &DeleteParams::default())
                .await
                .unwrap();
            let mutated = serde_json::from_slice::<Value>(&created).unwrap()["data"]
                .get("mutation-stage-1")
                .is_some();
            (headers, mutated)
        }
    };
    let mut in_force = None;
    for _ in 0..100 {
        let (headers, mutated) = create("default").await;
        if mutated && headers.get("warning").is_some() {
            in_force = Some(headers);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let headers = in_force.expect("the webhooks never took effect");
    // The webhook repeats its first warning: sent once, as upstream.
    let warnings: Vec<&str> = headers
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect();
    assert_eq!(
        warnings,
        [
            "299 - \"this object is watched\"",
            "299 - \"second warning\""
        ]
    );
    // Audit annotations: the validating webhook's own under its name, and
    // upstream's for the mutation (its patch only at level Request).
    let event = audit_event(&log, headers["audit-id"].to_str().unwrap()).await;
    let annotations = &event["annotations"];
    assert_eq!(annotations["warn.example.com/checked"], "yes", "{event}");
    assert_eq!(
        annotations["mutation.webhook.admission.k8s.io/round_0_index_0"],
        r#"{"configuration":"stage","webhook":"adding-configmap-data-stage-1.k8s.io","mutated":true}"#
    );
    assert_eq!(
        annotations["patch.webhook.admission.k8s.io/round_0_index_0"],
        r#"{"configuration":"stage","webhook":"adding-configmap-data-stage-1.k8s.io","patch":[{"op":"add","path":"/data/mutation-stage-1","value":"yes"}],"patchType":"JSONPatch"}"#
    );
    let (headers, _) = create("metadata-only").await;
    let event = audit_event(&log, headers["audit-id"].to_str().unwrap()).await;
    assert!(
        event["annotations"]
            .get("mutation.webhook.admission.k8s.io/round_0_index_0")
            .is_some()
    );
    assert_eq!(
        event["annotations"].get("patch.webhook.admission.k8s.io/round_0_index_0"),
        None,
        "{event}"
    );
}

#[tokio::test]
async fn failure_policies_timeouts_and_bad_answers() {
    let f = fixture();
    let hook = |name: &str, path: &str, extra: Value| {
        let mut h = f.hook(name, path, extra);
        h["namespaceSelector"] = json!({"matchLabels": {"kubernetes.io/metadata.name": name.split('.').next().unwrap()}});
        h
    };
    let namespaces = [
        "slow-fail",
        "slow-ignore",
        "slow-default",
        "untrusted",
        "wrong-uid",
        "not-json",
    ];
    for ns in namespaces {
        f.server.apply(&format!(
            "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n"
        ));
    }
    let mut untrusted = hook("untrusted.k8s.io", "/always-allow", json!({}));
    untrusted["clientConfig"]
        .as_object_mut()
        .unwrap()
        .remove("caBundle");
    f.configure(
        "ValidatingWebhookConfiguration",
        "failures",
        vec![
            hook(
                "slow-fail.k8s.io",
                "/always-allow-delay-5s",
                json!({"timeoutSeconds": 1, "failurePolicy": "Fail"}),
            ),
            hook(
                "slow-ignore.k8s.io",
                "/always-allow-delay-5s",
                json!({"timeoutSeconds": 1, "failurePolicy": "Ignore"}),
            ),
            hook("slow-default.k8s.io", "/always-allow-delay-5s", json!({})),
            untrusted,
            hook("wrong-uid.k8s.io", "/wrong-uid", json!({})),
            hook("not-json.k8s.io", "/not-json", json!({})),
        ],
    );
    let client = f.server.client().await.unwrap();
    let in_ns = |ns: &str| Api::<ConfigMap>::namespaced(client.clone(), ns);
    let cm = configmap("c", json!({}));

    // Timeout 1 s, Fail: 500 with the URL and the timeout in the message.
    let started = std::time::Instant::now();
    let status = denied(&in_ns("slow-fail"), &cm).await;
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert_eq!(status.code, 500);
    assert_eq!(status.reason, "InternalError");
    assert_eq!(
        status.message,
        format!(
            "Internal error occurred: failed calling webhook \"slow-fail.k8s.io\": failed to call webhook: Post \"https://{SERVICE}.{NAMESPACE}.svc:443/always-allow-delay-5s?timeout=1s\": context deadline exceeded"
        )
    );
    // Timeout 1 s, Ignore: admitted; the default 10 s: the 5 s webhook answers in time.
    in_ns("slow-ignore")
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
    in_ns("slow-default")
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();

    // No caBundle: the system's roots do not trust the test CA, fail closed.
    let status = denied(&in_ns("untrusted"), &cm).await;
    assert_eq!(
        (status.code, status.reason.as_str()),
        (500, "InternalError")
    );
    assert!(
        status
            .message
            .contains("failed calling webhook \"untrusted.k8s.io\": failed to call webhook: Post"),
        "{status:?}"
    );

    let status = denied(&in_ns("wrong-uid"), &cm).await;
    assert!(
        status.message.starts_with("Internal error occurred: failed calling webhook \"wrong-uid.k8s.io\": received invalid webhook response: expected response.uid=\"")
            && status.message.ends_with("\", got \"wrong\""),
        "{status:?}"
    );
    let status = denied(&in_ns("not-json"), &cm).await;
    assert!(
        status
            .message
            .contains("failed calling webhook \"not-json.k8s.io\": failed to call webhook: "),
        "{status:?}"
    );

    // The calls are counted.
    let metrics = f.server.kubectl_ok(&["get", "--raw", "/metrics"]);
    assert!(metrics.contains("apiserver_admission_webhook_fail_open_count{name=\"slow-ignore.k8s.io\",type=\"validating\"} 1"), "{metrics}");
    assert!(metrics.contains("apiserver_admission_webhook_request_total{code=\"200\",name=\"slow-default.k8s.io\",operation=\"CREATE\",rejected=\"false\",type=\"validating\"} 1"), "{metrics}");
    assert!(metrics.contains("apiserver_admission_webhook_admission_duration_seconds_count{name=\"slow-default.k8s.io\",operation=\"CREATE\",rejected=\"false\",type=\"validating\"} 1"), "{metrics}");
}

#[tokio::test]
async fn webhooks_never_see_webhook_configurations() {
    let f = fixture();
    let rules = json!([{"operations": ["CREATE", "DELETE"], "apiGroups": ["admissionregistration.k8s.io"], "apiVersions": ["*"], "resources": ["validatingwebhookconfigurations", "mutatingwebhookconfigurations"]}]);
    let deny = f.hook(
        "deny-webhook-configuration-deletions.k8s.io",
        "/always-deny",
        json!({"rules": rules.clone()}),
    );
    let label = f.hook(
        "add-label-to-webhook-configurations.k8s.io",
        "/add-label",
        json!({"rules": rules}),
    );
    f.configure(
        "ValidatingWebhookConfiguration",
        "deny-deletions",
        vec![deny],
    );
    f.configure("MutatingWebhookConfiguration", "add-label", vec![label]);
    // A ConfigMap webhook to know the configurations are in force.
    f.configure(
        "ValidatingWebhookConfiguration",
        "marker",
        vec![f.hook("marker.k8s.io", "/always-deny", json!({}))],
    );
    let client = f.server.client().await.unwrap();
    denied(
        &Api::namespaced(client, "default"),
        &configmap("m", json!({})),
    )
    .await;

    let dummy = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "dummy"},
        "webhooks": [f.hook("dummy.k8s.io", "/always-allow", json!({"rules": [{"operations": ["CREATE"], "apiGroups": ["none"], "apiVersions": ["v1"], "resources": ["nothing"]}]}))],
    });
    f.server.apply(&dummy.to_string());
    let labels = f.server.kubectl_ok(&[
        "get",
        "validatingwebhookconfiguration",
        "dummy",
        "-o",
        "jsonpath={.metadata.labels}",
    ]);
    assert!(!labels.contains("added-label"), "{labels}");
    f.server
        .kubectl_ok(&["delete", "validatingwebhookconfiguration", "dummy"]);
    assert!(f.hooks.requests_to("/add-label").is_empty());
}

#[tokio::test]
async fn dry_run_calls_side_effect_free_webhooks_with_dry_run_set() {
    let f = fixture();
    f.configure(
        "ValidatingWebhookConfiguration",
        "dry",
        vec![f.hook(
            "deny-unwanted-configmap-data.k8s.io",
            "/configmaps",
            json!({"sideEffects": "NoneOnDryRun"}),
        )],
    );
    let client = f.server.client().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let bad = configmap("dry", json!({"webhook-e2e-test": "webhook-disallow"}));
    denied(&api, &bad).await;
    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let err = api_error(api.create(&dry, &bad).await.unwrap_err());
    assert!(err.message.contains("denied the request"), "{err:?}");
    let last = f.hooks.requests_to("/configmaps").pop().unwrap();
    assert_eq!(last["review"]["request"]["dryRun"], true);
    assert_eq!(
        last["review"]["request"]["options"]["dryRun"],
        json!(["All"])
    );
}

#[tokio::test]
async fn reinvocation_if_needed_calls_a_webhook_again_after_a_later_change() {
    let f = fixture();
    let creates = json!([{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]);
    let count = |policy: &str| {
        f.hook(
            "count-calls.k8s.io",
            "/count-calls",
            json!({"rules": creates, "reinvocationPolicy": policy}),
        )
    };
    let stage = f.hook(
        "adding-configmap-data-stage-1.k8s.io",
        "/mutating-configmaps",
        json!({"rules": creates}),
    );
    f.configure(
        "MutatingWebhookConfiguration",
        "a-count",
        vec![count("IfNeeded"), stage.clone()],
    );
    let client = f.server.client().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let start = configmap("counted", json!({"mutation-start": "yes"}));
    let calls = |cm: &ConfigMap| {
        cm.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("calls"))
            .cloned()
    };
    let created = created_until(&api, &start, |cm| calls(cm).is_some()).await;
    // The later webhook changed the object, so the IfNeeded one ran twice.
    assert_eq!(calls(&created).as_deref(), Some("2"));
    assert_eq!(created.data.unwrap()["mutation-stage-1"], "yes");

    f.configure(
        "MutatingWebhookConfiguration",
        "a-count",
        vec![count("Never"), stage],
    );
    let once = created_until(&api, &start, |cm| calls(cm).as_deref() == Some("1")).await;
    assert_eq!(once.data.unwrap()["mutation-stage-1"], "yes");
}

#[test]
fn configurations_are_validated_defaulted_and_printed_as_upstream() {
    let server = Server::builder().start().unwrap();
    let resources = server.kubectl_ok(&[
        "api-resources",
        "--api-group=admissionregistration.k8s.io",
        "-o",
        "name",
    ]);
    assert!(
        resources.contains("validatingwebhookconfigurations.admissionregistration.k8s.io"),
        "{resources}"
    );
    assert!(
        resources.contains("mutatingwebhookconfigurations.admissionregistration.k8s.io"),
        "{resources}"
    );
    let invalid = r#"{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
      "metadata": {"name": "invalid"},
      "webhooks": [{"name": "bad", "clientConfig": {"url": "http://example.com/x"},
        "timeoutSeconds": 31, "admissionReviewVersions": ["v1"],
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
        "matchConditions": [{"name": "c", "expression": "object.metadata.name == [] bad expression"}]}]}"#;
    let out = server.kubectl_with_stdin(&["create", "-f", "-"], Some(invalid));
    let err = String::from_utf8_lossy(&out.stderr);
    for expected in [
        "The ValidatingWebhookConfiguration \"invalid\" is invalid",
        "webhooks[0].name: Invalid value: \"bad\": should be a domain with at least three segments separated by dots",
        "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
        "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
        "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
    ] {
        assert!(err.contains(expected), "missing {expected:?} in {err}");
    }
    let bad_condition = invalid
        .replace("\"bad\"", "\"ok.example.com\"")
        .replace("http://", "https://")
        .replace("31", "5")
        .replace(
            "\"admissionReviewVersions\"",
            "\"sideEffects\": \"None\", \"admissionReviewVersions\"",
        );
    let out = server.kubectl_with_stdin(&["create", "-f", "-"], Some(&bad_condition));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("webhooks[0].matchConditions[0].expression: Invalid value: \"object.metadata.name == [] bad expression\": compilation failed: ERROR: <input>:1:"), "{err}");

    let good = bad_condition.replace("== [] bad expression", "!= 'x'");
    server.kubectl_with_stdin(&["create", "-f", "-"], Some(&good));
    let created: Value = serde_json::from_str(&server.kubectl_ok(&[
        "get",
        "validatingwebhookconfiguration",
        "invalid",
        "-o",
        "json",
    ]))
    .unwrap();
    let hook = &created["webhooks"][0];
    assert_eq!(hook["failurePolicy"], "Fail");
    assert_eq!(hook["matchPolicy"], "Equivalent");
    assert_eq!(hook["namespaceSelector"], json!({}));
    assert_eq!(hook["objectSelector"], json!({}));
    assert_eq!(hook["rules"][0]["scope"], "*");
    assert_eq!(created["metadata"]["generation"], 1);
    let table = server.kubectl_ok(&["get", "validatingwebhookconfigurations"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "WEBHOOKS", "AGE"]);
    assert!(
        table.lines().nth(1).unwrap().starts_with("invalid "),
        "{table}"
    );
}

/// The e2e tests' CRD `e2e-test-crds.<group>`, kind E2eTestCrd, served in
/// `versions` (the first stored), whose `data` has schema `data` (JSON).
fn crd(group: &str, versions: &[&str], data: &str) -> String {
    let versions: Vec<String> = versions
        .iter()
        .enumerate()
        .map(|(i, v)| {
            format!(
                "  - name: {v}\n    served: true\n    storage: {}\n    schema: {{openAPIV3Schema: {{type: object, properties: {{data: {data}}}}}}}\n",
                i == 0
            )
        })
        .collect();
    format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: e2e-test-crds.{group}}}\nspec:\n  group: {group}\n  scope: Namespaced\n  names: {{plural: e2e-test-crds, singular: e2e-test-crd, kind: E2eTestCrd}}\n  versions:\n{}",
        versions.concat()
    )
}

fn custom_resource(version: &str, name: &str, data: &str, labels: &str) -> String {
    format!(
        "apiVersion: webhook.example.com/{version}\nkind: E2eTestCrd\nmetadata: {{name: {name}, namespace: default, labels: {{{labels}}}}}\ndata: {{webhook-e2e-test: {data}}}\n"
    )
}

/// `kubectl create -f -` of `manifest`: its stderr when refused.
fn create(server: &Server, manifest: &str) -> Result<(), String> {
    let out = server.kubectl_with_stdin(&["create", "-f", "-"], Some(manifest));
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn custom_resources_are_checked_on_create_update_and_delete_in_every_version() {
    let f = fixture();
    f.server.apply(&crd(
        "webhook.example.com",
        &["v1", "v2"],
        r#"{type: object, additionalProperties: {type: string}}"#,
    ));
    f.server.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/e2e-test-crds.webhook.example.com",
    ]);
    let rules = json!([{"operations": ["CREATE", "UPDATE", "DELETE"], "apiGroups": ["webhook.example.com"], "apiVersions": ["v1"], "resources": ["e2e-test-crds"]}]);
    let deny = f.hook(
        "deny-unwanted-custom-resource-data.k8s.io",
        "/custom-resource",
        json!({"rules": rules}),
    );
    // Only objects labelled `exact: yes`, only in v1 itself.
    let exact = f.hook(
        "deny-exact.k8s.io",
        "/always-deny",
        json!({"rules": rules, "matchPolicy": "Exact", "objectSelector": {"matchLabels": {"exact": "yes"}}}),
    );
    f.configure(
        "ValidatingWebhookConfiguration",
        "deny-custom-resources",
        vec![deny, exact],
    );

    let err = testkit::eventually("the webhook denies", || {
        match create(
            &f.server,
            &custom_resource("v1", "bad", "webhook-disallow", ""),
        ) {
            Err(e) => Some(e),
            Ok(()) => {
                f.server.kubectl(&["delete", "e2e-test-crds", "bad"]);
                None
            }
        }
    });
    assert!(err.contains("admission webhook \"deny-unwanted-custom-resource-data.k8s.io\" denied the request: the custom resource contains unwanted data"), "{err}");

    // Updates are checked.
    create(&f.server, &custom_resource("v1", "cr", "allowed", "")).unwrap();
    let out = f.server.kubectl(&[
        "patch",
        "e2e-test-crds",
        "cr",
        "--type=merge",
        "-p",
        r#"{"data":{"webhook-e2e-test":"webhook-disallow"}}"#,
    ]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("the custom resource contains unwanted data")
    );

    // Deletes are checked against the stored object.
    create(
        &f.server,
        &custom_resource("v1", "keep", "webhook-nondeletable", ""),
    )
    .unwrap();
    let out = f.server.kubectl(&["delete", "e2e-test-crds", "keep"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "the custom resource cannot be deleted because it contains unwanted key and value"
        ),
        "{out:?}"
    );
    f.server.kubectl_ok(&[
        "patch",
        "e2e-test-crds",
        "keep",
        "--type=merge",
        "-p",
        r#"{"data":{"webhook-e2e-test":"fine"}}"#,
    ]);
    f.server.kubectl_ok(&["delete", "e2e-test-crds", "keep"]);
    let delete = f
        .hooks
        .requests_to("/custom-resource")
        .into_iter()
        .map(|r| r["review"]["request"].clone())
        .find(|r| r["operation"] == "DELETE")
        .unwrap();
    assert_eq!(delete["object"], Value::Null);
    assert_eq!(delete["oldObject"]["metadata"]["name"], "keep");
    assert_eq!(delete["options"]["kind"], "DeleteOptions");

    // Written through v2, the `Equivalent` webhook sees the object as v1.
    let err = create(
        &f.server,
        &custom_resource("v2", "bad2", "webhook-disallow", ""),
    )
    .unwrap_err();
    assert!(
        err.contains("the custom resource contains unwanted data"),
        "{err}"
    );
    let through_v2 = f
        .hooks
        .requests_to("/custom-resource")
        .into_iter()
        .map(|r| r["review"]["request"].clone())
        .find(|r| r["name"] == "bad2")
        .unwrap();
    assert_eq!(
        through_v2["kind"],
        json!({"group": "webhook.example.com", "version": "v1", "kind": "E2eTestCrd"})
    );
    assert_eq!(through_v2["requestKind"]["version"], "v2");
    assert_eq!(through_v2["resource"]["version"], "v1");
    assert_eq!(through_v2["requestResource"]["version"], "v2");
    assert_eq!(through_v2["object"]["apiVersion"], "webhook.example.com/v1");

    // The `Exact` webhook: only v1, only labelled objects.
    let err = create(
        &f.server,
        &custom_resource("v1", "labelled", "fine", "exact: 'yes'"),
    )
    .unwrap_err();
    assert!(err.contains("admission webhook \"deny-exact.k8s.io\" denied the request: this webhook denies all requests"), "{err}");
    create(
        &f.server,
        &custom_resource("v2", "labelled", "fine", "exact: 'yes'"),
    )
    .unwrap();
    create(&f.server, &custom_resource("v1", "unlabelled", "fine", "")).unwrap();
}

#[tokio::test]
async fn a_service_without_endpoints_fails_the_call() {
    let f = fixture();
    let mut hook = f.hook("nowhere.k8s.io", "/always-allow", json!({}));
    hook["clientConfig"]["service"]["name"] = json!("nowhere");
    f.server.apply(&format!("apiVersion: v1\nkind: Service\nmetadata: {{name: nowhere, namespace: {NAMESPACE}}}\nspec: {{ports: [{{port: 443}}]}}\n"));
    f.configure("ValidatingWebhookConfiguration", "nowhere", vec![hook]);
    let client = f.server.client().await.unwrap();
    let status = denied(
        &Api::namespaced(client, "default"),
        &configmap("c", json!({})),
    )
    .await;
    assert_eq!(
        status.message,
        format!(
            "Internal error occurred: failed calling webhook \"nowhere.k8s.io\": failed to call webhook: Post \"https://nowhere.{NAMESPACE}.svc:443/always-allow?timeout=10s\": no endpoints available for service \"nowhere\""
        )
    );
}

#[test]
fn fields_a_mutating_webhook_adds_outside_the_schema_are_pruned() {
    let f = fixture();
    // The schema knows the start and the first stage only.
    f.server.apply(&crd(
        "pruning.example.com",
        &["v1"],
        r#"{type: object, properties: {mutation-start: {type: string}, mutation-stage-1: {type: string}}}"#,
    ));
    f.server.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/e2e-test-crds.pruning.example.com",
    ]);
    let stage = |n: u32| {
        f.hook(
            &format!("mutate-custom-resource-data-stage-{n}.k8s.io"),
            "/mutating-custom-resource",
            json!({"rules": [{"operations": ["CREATE"], "apiGroups": ["pruning.example.com"], "apiVersions": ["v1"], "resources": ["e2e-test-crds"]}]}),
        )
    };
    f.configure(
        "MutatingWebhookConfiguration",
        "mutate-custom-resources",
        vec![stage(1), stage(2)],
    );
    let manifest = "apiVersion: pruning.example.com/v1\nkind: E2eTestCrd\nmetadata: {name: cr, namespace: default}\ndata: {mutation-start: 'yes'}\n";
    let data = testkit::eventually("the webhooks mutate", || {
        f.server
            .kubectl_with_stdin(&["create", "-f", "-"], Some(manifest));
        let data = f.server.kubectl_ok(&[
            "get",
            "e2e-test-crds.pruning.example.com",
            "cr",
            "-o",
            "jsonpath={.data}",
        ]);
        f.server
            .kubectl(&["delete", "e2e-test-crds.pruning.example.com", "cr"]);
        data.contains("mutation-stage-1").then_some(data)
    });
    let data: Value = serde_json::from_str(&data).unwrap();
    // Stage 2's key is not in the schema: pruned when stored, as upstream.
    assert_eq!(
        data,
        json!({"mutation-start": "yes", "mutation-stage-1": "yes"})
    );
    // ...though the second stage did add it.
    assert!(
        f.hooks
            .requests_to("/mutating-custom-resource")
            .iter()
            .any(|r| {
                r["review"]["request"]["name"] == "cr"
                    && r["review"]["request"]["object"]["data"]["mutation-stage-1"] == "yes"
            })
    );
}

/// A webhook's change reinvokes the mutating chain: an `IfNeeded` mutating
/// policy that ran before it runs again and sees the change (upstream
/// re-runs every mutating plugin once).
#[tokio::test]
async fn a_webhooks_change_reinvokes_if_needed_mutating_policies() {
    let f = fixture();
    let policy = |reinvocation: &str| {
        format!(
            r#"
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {{name: saw-stage-1.example.com}}
spec:
  reinvocationPolicy: {reinvocation}
  matchConstraints:
    resourceRules:
    - {{apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}}
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: >
        [JSONPatch{{op: 'add', path: '/metadata/labels', value: {{'saw-stage-1': 'mutation-stage-1' in object.data ? 'yes' : 'no'}}}}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {{name: saw-stage-1}}
spec:
  policyName: saw-stage-1.example.com
"#
        )
    };
    f.server.apply(&policy("IfNeeded"));
    f.configure(
        "MutatingWebhookConfiguration",
        "stage-1",
        vec![f.hook(
            "adding-configmap-data-stage-1.k8s.io",
            "/mutating-configmaps",
            json!({}),
        )],
    );
    let client = f.server.client().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let start = configmap("reinvoked", json!({"mutation-start": "yes"}));
    let saw = |cm: &ConfigMap| {
        cm.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("saw-stage-1"))
            .cloned()
    };
    // The policy ran first (no stage 1 yet), the webhook added stage 1,
    // and the policy ran again.
    let created = created_until(&api, &start, |cm| {
        cm.data.as_ref().unwrap().contains_key("mutation-stage-1") && saw(cm).is_some()
    })
    .await;
    assert_eq!(saw(&created).as_deref(), Some("yes"));
    // With `Never`, the policy's first answer stands.
    f.server.apply(&policy("Never"));
    let once = created_until(&api, &start, |cm| saw(cm).as_deref() == Some("no")).await;
    assert_eq!(once.data.unwrap()["mutation-stage-1"], "yes");
}

/// Upstream decodes a body with its defaults before admission: a mutating
/// webhook sees a Deployment with the fields `SetDefaults_Deployment` and the
/// pod-template defaulters fill.
#[tokio::test]
async fn mutating_webhooks_see_defaulted_objects() {
    let f = fixture();
    f.configure(
        "MutatingWebhookConfiguration",
        "see-deployments",
        vec![json!({
            "name": "see-deployments.k8s.io",
            "clientConfig": f.hooks.url_config("/always-allow"),
            "rules": [{"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        })],
    );
    let mut seen = Vec::new();
    for i in 0..100 {
        f.server.apply(&format!(
            r#"{{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {{"name": "web-{i}"}},
                "spec": {{"selector": {{"matchLabels": {{"app": "web"}}}},
                  "template": {{"metadata": {{"labels": {{"app": "web"}}}},
                    "spec": {{"containers": [{{"name": "web", "image": "nginx:1.27"}}]}}}}}}}}"#
        ));
        seen = f.hooks.requests_to("/always-allow");
        if !seen.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let object = &seen.first().expect("the webhook was called")["review"]["request"]["object"];
    assert_eq!(object["spec"]["replicas"], 1, "{object}");
    assert_eq!(object["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(object["spec"]["progressDeadlineSeconds"], 600);
    assert_eq!(object["spec"]["strategy"]["type"], "RollingUpdate");
    let pod = &object["spec"]["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Always");
    assert_eq!(pod["containers"][0]["imagePullPolicy"], "IfNotPresent");
}

/// An ExternalName Service is called at its name and the configured port, as
/// kube-apiserver's default service resolution (`ResolveCluster`) does, with
/// the certificate still checked against `<service>.<namespace>.svc`.
#[tokio::test]
async fn webhooks_behind_an_external_name_service_are_called_at_that_name() {
    let server = Server::builder().start().unwrap();
    let hooks = WebhookServer::start(&[&format!("external.{NAMESPACE}.svc")]).unwrap();
    server.apply(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NAMESPACE}}}\n"
    ));
    server.apply(&format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: external, namespace: {NAMESPACE}}}\n\
         spec: {{type: ExternalName, externalName: localhost}}\n"
    ));
    let config = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "external"},
        "webhooks": [{
            "name": "external.k8s.io",
            "clientConfig": {
                "service": {"namespace": NAMESPACE, "name": "external", "path": "/always-deny", "port": hooks.port},
                "caBundle": hooks.ca_bundle(),
            },
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        }],
    });
    server.apply(&config.to_string());
    let client = server.client().await.unwrap();
    let status = denied(
        &Api::namespaced(client, "default"),
        &configmap("x", json!({})),
    )
    .await;
    assert!(
        status.message.contains("this webhook denies all requests"),
        "{}",
        status.message
    );
    assert!(!hooks.requests().is_empty());
}
