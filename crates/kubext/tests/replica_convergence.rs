//! Configuration written through one replica takes effect on another sharing its
//! etcd, within a bound: admission policies, webhook configurations and
//! APIServices (CRDs and RBAC rules: `ha.rs`). Each time is printed; docs/high-availability.md
//! quotes them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};
use testkit::{Etcd, Server, Storage};

/// Upstream's informers bring configuration to every kube-apiserver within
/// about a second; a replica's cache follows etcd's watch just as fast.
const BOUND: Duration = Duration::from_secs(5);

fn replica(etcd: &Etcd) -> Server {
    Server::builder()
        .storage(Storage::Etcd(etcd.endpoint()))
        .start()
        .unwrap()
}

async fn create(client: &kube::Client, api_version: &str, kind: &str, plural: &str, body: Value) {
    let (group, version) = api_version.split_once('/').unwrap();
    let resource =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let object: DynamicObject = serde_json::from_value(body).unwrap();
    api.create(&PostParams::default(), &object).await.unwrap();
}

/// A dry-run ConfigMap create through `client`: the error's message, if any.
async fn dry_run_create(client: &kube::Client, labels: Value) -> Option<String> {
    let api: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(client.clone(), "default");
    let cm =
        serde_json::from_value(json!({"metadata": {"generateName": "probe-", "labels": labels}}))
            .unwrap();
    let pp = PostParams {
        dry_run: true,
        ..Default::default()
    };
    api.create(&pp, &cm).await.err().map(|e| e.to_string())
}

async fn converge(what: &str, mut done: impl AsyncFnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !done().await {
        assert!(started.elapsed() < BOUND, "{what}: not within {BOUND:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let took = started.elapsed();
    eprintln!("convergence: {what}: {took:?}");
    took
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configuration_written_on_one_replica_takes_effect_on_the_other() {
    let etcd = Etcd::start().unwrap();
    let (a, b) = (replica(&etcd), replica(&etcd));
    let (on_a, on_b) = (a.client().await.unwrap(), b.client().await.unwrap());
    assert_eq!(dry_run_create(&on_b, json!({"deny": "yes"})).await, None);

    // A ValidatingAdmissionPolicy and its binding.
    create(
        &on_a,
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicy",
        "validatingadmissionpolicies",
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "no-deny-label"},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["configmaps"]}]},
                "validations": [{"expression": "!('deny' in object.metadata.?labels.orValue({}))",
                                  "message": "denied by policy"}],
            },
        }),
    )
    .await;
    create(
        &on_a,
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicyBinding",
        "validatingadmissionpolicybindings",
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": "no-deny-label"},
            "spec": {"policyName": "no-deny-label", "validationActions": ["Deny"]},
        }),
    )
    .await;
    converge("a ValidatingAdmissionPolicy", async || {
        dry_run_create(&on_b, json!({"deny": "yes"}))
            .await
            .is_some_and(|e| e.contains("denied by policy"))
    })
    .await;

    // A webhook configuration: the other replica starts calling the webhook
    // (here nothing listens, and the policy is Fail).
    create(
        &on_a,
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "nobody-home"},
            "webhooks": [{
                "name": "nobody.kubext.io",
                "clientConfig": {"url": "https://127.0.0.1:1/validate"},
                "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                           "resources": ["configmaps"]}],
                "objectSelector": {"matchLabels": {"webhook": "on"}},
                "failurePolicy": "Fail", "sideEffects": "None", "timeoutSeconds": 1,
                "admissionReviewVersions": ["v1"],
            }],
        }),
    )
    .await;
    converge("a ValidatingWebhookConfiguration", async || {
        dry_run_create(&on_b, json!({"webhook": "on"}))
            .await
            .is_some_and(|e| e.contains("failed calling webhook \"nobody.kubext.io\""))
    })
    .await;

    // An APIService: the other replica routes its group-version (to a
    // Service that does not exist: upstream's 503, no longer a 404).
    create(
        &on_a,
        "apiregistration.k8s.io/v1",
        "APIService",
        "apiservices",
        json!({
            "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": "v1alpha1.convergence.kubext.io"},
            "spec": {"group": "convergence.kubext.io", "version": "v1alpha1",
                     "service": {"namespace": "default", "name": "missing", "port": 443},
                     "insecureSkipTLSVerify": true, "groupPriorityMinimum": 1000, "versionPriority": 15},
        }),
    )
    .await;
    converge("an APIService", async || {
        let request = http::Request::get("/apis/convergence.kubext.io/v1alpha1")
            .body(Vec::new())
            .unwrap();
        match on_b.request_text(request).await {
            Err(kube::Error::Api(status)) => status.code == 503,
            _ => false,
        }
    })
    .await;
}

/// A paged list started on one replica continues on another from the same
/// snapshot: objects written after the first page are not in later pages, and
/// every object of the snapshot is listed exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paged_list_continues_on_another_replica() {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ListParams;
    let etcd = Etcd::start().unwrap();
    let (a, b) = (replica(&etcd), replica(&etcd));
    let (on_a, on_b) = (a.client().await.unwrap(), b.client().await.unwrap());
    let api_a: Api<ConfigMap> = Api::namespaced(on_a.clone(), "default");
    let api_b: Api<ConfigMap> = Api::namespaced(on_b.clone(), "default");
    let cm = |name: String| -> ConfigMap {
        serde_json::from_value(json!({"metadata": {"name": name, "labels": {"paged": "yes"}}}))
            .unwrap()
    };
    for i in 0..30 {
        api_a
            .create(&PostParams::default(), &cm(format!("page-{i:02}")))
            .await
            .unwrap();
    }
    let params = ListParams::default().labels("paged=yes").limit(7);
    let first = api_a.list(&params).await.unwrap();
    let snapshot = first.metadata.resource_version.clone().unwrap();
    let mut names: Vec<String> = first
        .items
        .iter()
        .map(|c| c.metadata.name.clone().unwrap())
        .collect();
    // Written after the snapshot, through the replica that continues.
    api_b
        .create(&PostParams::default(), &cm("page-zz".into()))
        .await
        .unwrap();
    let mut token = first.metadata.continue_;
    let mut pages = 1;
    while let Some(t) = token.filter(|t| !t.is_empty()) {
        // Alternate: B, A, B, …
        let api = if pages % 2 == 1 { &api_b } else { &api_a };
        let page = api.list(&params.clone().continue_token(&t)).await.unwrap();
        assert_eq!(
            page.metadata.resource_version.as_deref(),
            Some(snapshot.as_str())
        );
        names.extend(page.items.iter().map(|c| c.metadata.name.clone().unwrap()));
        token = page.metadata.continue_;
        pages += 1;
    }
    let expected: Vec<String> = (0..30).map(|i| format!("page-{i:02}")).collect();
    assert_eq!(names, expected);
    assert_eq!(pages, 5);
}
