//! The registry's operations that are not plain writes, over the memory
//! backend: pod binding (`BindingREST`), eviction (`EvictionREST`), the Scale
//! subresource and the reviews, with kube-apiserver's outcomes and texts
//! (`pkg/registry/core/pod/storage`, `pkg/registry/authentication`,
//! `pkg/registry/authorization`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Mutex;

use kubext_registry as registry;

use serde_json::{Value, json};

use apimachinery::{StatusError, Subresource};
use registry::pods::binding::{bind_legacy, bind_pod};
use registry::pods::eviction::{Evicted, evict};
use registry::reviews::{AccessAnswer, AccessQuestion, ReviewAuthority, ReviewedUser, review};
use registry::scale::{Scale, ScaleChange};
use registry::{GenericStore, RequestContext};

mod common;
use common::{Fixture, ctx, value};

fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
}

fn binding(pod: &str, target: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Binding",
        "metadata": {"name": pod, "annotations": {"scheduled-by": "test"}}, "target": target})
}

fn status_ctx() -> RequestContext {
    RequestContext {
        subresource: Subresource::Status,
        ..ctx()
    }
}

/// Write `status` through the status subresource.
async fn set_status(store: &GenericStore, name: &str, status: Value) -> Value {
    let mut obj = value(&store.get(&ctx(), name).await.unwrap());
    obj["status"] = status;
    value(&store.update(&status_ctx(), name, obj).await.unwrap())
}

fn message(err: &StatusError) -> (u16, &str, &str) {
    (err.code(), err.reason(), err.status().message.as_str())
}

// ---------------------------------------------------------------- binding

#[tokio::test]
async fn binding_assigns_the_node_and_marks_the_pod_scheduled() {
    let fixture = Fixture::new().await;
    let pods = fixture.store("", "pods");
    pods.create(&ctx(), pod("p")).await.unwrap();
    bind_pod(&pods, &ctx(), "p", &binding("p", json!({"name": "n1"})))
        .await
        .unwrap();
    let bound = fixture.stored(&pods, "p").await.unwrap();
    assert_eq!(bound["spec"]["nodeName"], json!("n1"));
    // The Binding's annotations are merged into the pod's.
    assert_eq!(
        bound["metadata"]["annotations"],
        json!({"scheduled-by": "test"})
    );
    let scheduled = &bound["status"]["conditions"][0];
    assert_eq!(
        (
            &scheduled["type"],
            &scheduled["status"],
            &scheduled["lastProbeTime"]
        ),
        (&json!("PodScheduled"), &json!("True"), &Value::Null)
    );
    assert!(scheduled["lastTransitionTime"].is_string());
    // Binding is the server's own write: nobody is credited in managedFields.
    assert!(bound["metadata"].get("managedFields").is_none());
}

#[tokio::test]
async fn binding_is_refused_as_upstream_refuses_it() {
    let fixture = Fixture::new().await;
    let pods = fixture.store("", "pods");
    pods.create(&ctx(), pod("p")).await.unwrap();
    let mut gated = pod("gated");
    gated["spec"]["schedulingGates"] = json!([{"name": "wait"}]);
    pods.create(&ctx(), gated).await.unwrap();
    let mut held = pod("held");
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    pods.create(&ctx(), held).await.unwrap();
    pods.delete(&ctx(), "held", &Default::default())
        .await
        .unwrap();
    bind_pod(&pods, &ctx(), "p", &binding("p", json!({"name": "n1"})))
        .await
        .unwrap();

    let cases = [
        (
            "p",
            binding("other", json!({"name": "n1"})),
            (
                400,
                "BadRequest",
                "name in URL does not match name in Binding object",
            ),
        ),
        (
            "p",
            binding("p", json!({"name": "n2"})),
            (
                409,
                "Conflict",
                "Operation cannot be fulfilled on pods/binding \"p\": pod p is already assigned to node \"n1\"",
            ),
        ),
        (
            "gated",
            binding("gated", json!({"name": "n1"})),
            (
                409,
                "Conflict",
                "Operation cannot be fulfilled on pods/binding \"gated\": pod gated has non-empty .spec.schedulingGates",
            ),
        ),
        (
            "held",
            binding("held", json!({"name": "n1"})),
            (
                409,
                "Conflict",
                "Operation cannot be fulfilled on pods/binding \"held\": pod held is being deleted, cannot be assigned to a host",
            ),
        ),
        (
            "gated",
            binding("gated", json!({"kind": "Pod", "name": "n1"})),
            (
                422,
                "Invalid",
                "Binding \"gated\" is invalid: target.kind: Unsupported value: \"Pod\": supported values: \"Node\", \"<empty>\"",
            ),
        ),
        (
            "gated",
            binding("gated", json!({})),
            (
                422,
                "Invalid",
                "Binding \"gated\" is invalid: target.name: Required value",
            ),
        ),
        (
            "missing",
            binding("missing", json!({"name": "n1"})),
            (404, "NotFound", "pods \"missing\" not found"),
        ),
    ];
    for (url_name, body, expected) in cases {
        let err = bind_pod(&pods, &ctx(), url_name, &body).await.unwrap_err();
        assert_eq!(message(&err), expected, "{body}");
    }
    // Nothing changed the refused pods.
    let gated = fixture.stored(&pods, "gated").await.unwrap();
    assert!(gated["spec"].get("nodeName").is_none());
}

#[tokio::test]
async fn the_legacy_bindings_collection_binds_the_pod_the_binding_names() {
    let fixture = Fixture::new().await;
    let pods = fixture.store("", "pods");
    pods.create(&ctx(), pod("p")).await.unwrap();
    bind_legacy(
        &pods,
        &ctx(),
        &binding("p", json!({"kind": "Node", "name": "n1"})),
    )
    .await
    .unwrap();
    let bound = fixture.stored(&pods, "p").await.unwrap();
    assert_eq!(bound["spec"]["nodeName"], json!("n1"));
    let err = bind_legacy(&pods, &ctx(), &binding("nope", json!({"name": "n1"})))
        .await
        .unwrap_err();
    assert_eq!(message(&err), (404, "NotFound", "pods \"nope\" not found"));
}

// ---------------------------------------------------------------- eviction

/// Pods `p` (running, labelled `app: web`) and the PodDisruptionBudget store.
async fn eviction_fixture() -> (Fixture, GenericStore, GenericStore) {
    let fixture = Fixture::new().await;
    let pods = fixture.store("", "pods");
    let budgets = fixture.store("policy", "poddisruptionbudgets");
    pods.create(&ctx(), pod("p")).await.unwrap();
    set_status(&pods, "p", json!({"phase": "Running"})).await;
    (fixture, pods, budgets)
}

/// A budget over `app: web` whose status the disruption controller wrote.
async fn budget(budgets: &GenericStore, name: &str, status: Value) {
    budgets
        .create(
            &ctx(),
            json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                "metadata": {"name": name},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}),
        )
        .await
        .unwrap();
    set_status(budgets, name, status).await;
}

fn eviction() -> Value {
    json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p"}})
}

async fn current(store: &GenericStore, name: &str) -> Value {
    value(&store.get(&ctx(), name).await.unwrap())
}

#[tokio::test]
async fn a_pod_no_budget_covers_is_evicted() {
    let (fixture, pods, budgets) = eviction_fixture().await;
    let running = current(&pods, "p").await;
    let evicted = evict(&pods, Some(&budgets), &ctx(), &running, &eviction())
        .await
        .unwrap();
    assert_eq!(evicted, Evicted::Deleted);
    assert_eq!(fixture.stored(&pods, "p").await, None);
}

#[tokio::test]
async fn a_budget_that_allows_a_disruption_records_it_and_allows_one_less() {
    let (fixture, pods, budgets) = eviction_fixture().await;
    budget(
        &budgets,
        "pdb",
        json!({"observedGeneration": 1, "disruptionsAllowed": 1, "currentHealthy": 2,
            "desiredHealthy": 1, "expectedPods": 2}),
    )
    .await;
    let running = current(&pods, "p").await;
    let evicted = evict(&pods, Some(&budgets), &ctx(), &running, &eviction())
        .await
        .unwrap();
    assert_eq!(evicted, Evicted::Deleted);
    assert_eq!(fixture.stored(&pods, "p").await, None);
    let status = &current(&budgets, "pdb").await["status"];
    assert_eq!(status["disruptionsAllowed"], json!(0));
    assert!(status["disruptedPods"]["p"].is_string(), "{status}");
    let condition = status["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "DisruptionAllowed")
        .unwrap();
    assert_eq!(
        (&condition["status"], &condition["reason"]),
        (&json!("False"), &json!("InsufficientPods"))
    );
}

#[tokio::test]
async fn a_budget_that_allows_nothing_is_429_and_the_pod_stays() {
    let (fixture, pods, budgets) = eviction_fixture().await;
    budget(
        &budgets,
        "pdb",
        json!({"observedGeneration": 1, "disruptionsAllowed": 0, "currentHealthy": 1,
            "desiredHealthy": 2, "expectedPods": 1}),
    )
    .await;
    let running = current(&pods, "p").await;
    let err = evict(&pods, Some(&budgets), &ctx(), &running, &eviction())
        .await
        .unwrap_err();
    assert_eq!(
        message(&err),
        (
            429,
            "TooManyRequests",
            "Cannot evict pod as it would violate the pod's disruption budget."
        )
    );
    let details = err.status().details.as_ref().unwrap();
    assert_eq!(details.causes[0].reason, "DisruptionBudget");
    assert_eq!(
        details.causes[0].message,
        "The disruption budget pdb needs 2 healthy pods and has 1 currently"
    );
    assert_eq!(details.retry_after_seconds, None);
    assert!(fixture.stored(&pods, "p").await.is_some());
}

#[tokio::test]
async fn a_budget_its_controller_has_not_seen_is_429_retry_in_10_seconds() {
    let (_fixture, pods, budgets) = eviction_fixture().await;
    // observedGeneration 0 < generation 1: not yet processed.
    budget(&budgets, "pdb", json!({"disruptionsAllowed": 1})).await;
    let running = current(&pods, "p").await;
    let err = evict(&pods, Some(&budgets), &ctx(), &running, &eviction())
        .await
        .unwrap_err();
    let details = err.status().details.as_ref().unwrap();
    assert_eq!(err.code(), 429);
    assert_eq!(
        details.causes[0].message,
        "The disruption budget pdb is still being processed by the server."
    );
    assert_eq!(details.retry_after_seconds, Some(10));
}

#[tokio::test]
async fn two_covering_budgets_evict_nothing() {
    let (fixture, pods, budgets) = eviction_fixture().await;
    let allows = json!({"observedGeneration": 1, "disruptionsAllowed": 1});
    budget(&budgets, "a", allows.clone()).await;
    budget(&budgets, "b", allows).await;
    let running = current(&pods, "p").await;
    let evicted = evict(&pods, Some(&budgets), &ctx(), &running, &eviction())
        .await
        .unwrap();
    assert_eq!(evicted, Evicted::MultipleBudgets);
    assert!(fixture.stored(&pods, "p").await.is_some());
}

/// Upstream's `canIgnorePDB`: pending and finished pods are evicted whatever
/// the budgets say.
#[tokio::test]
async fn a_pending_pod_ignores_budgets() {
    let (fixture, pods, budgets) = eviction_fixture().await;
    budget(
        &budgets,
        "pdb",
        json!({"observedGeneration": 1, "disruptionsAllowed": 0}),
    )
    .await;
    let pending = set_status(&pods, "p", json!({"phase": "Pending"})).await;
    let evicted = evict(&pods, Some(&budgets), &ctx(), &pending, &eviction())
        .await
        .unwrap();
    assert_eq!(evicted, Evicted::Deleted);
    assert_eq!(fixture.stored(&pods, "p").await, None);
}

// ---------------------------------------------------------------- scale

#[tokio::test]
async fn a_scale_write_sets_the_replicas_and_checks_its_resource_version() {
    let fixture = Fixture::new().await;
    let deployments = fixture.store("apps", "deployments");
    deployments
        .create(
            &ctx(),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}},
                        "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
        )
        .await
        .unwrap();
    let scale = Scale::of(&deployments).unwrap();
    let before = scale.get(&ctx(), "web").await.unwrap();
    assert_eq!(before["spec"], json!({"replicas": 1}));
    assert_eq!(
        before["status"],
        json!({"replicas": 0, "selector": "app=web"})
    );

    let after = scale
        .update(
            &ctx(),
            "web",
            &ScaleChange::MergePatch(json!({"spec": {"replicas": 3}})),
        )
        .await
        .unwrap();
    assert_eq!(after["spec"], json!({"replicas": 3}));
    let stored = fixture.stored(&deployments, "web").await.unwrap();
    assert_eq!(stored["spec"]["replicas"], json!(3));
    // A spec change through scale bumps the Deployment's generation.
    assert_eq!(stored["metadata"]["generation"], json!(2));

    // A Scale naming an old resourceVersion is a conflict.
    let mut stale = before.clone();
    stale["spec"]["replicas"] = json!(5);
    let err = scale
        .update(&ctx(), "web", &ScaleChange::Replace(stale))
        .await
        .unwrap_err();
    assert_eq!(
        message(&err),
        (
            409,
            "Conflict",
            "Operation cannot be fulfilled on deployments.apps \"web\": the object has been modified; please apply your changes to the latest version and try again"
        )
    );
    let err = scale
        .update(
            &ctx(),
            "web",
            &ScaleChange::JsonPatch(
                json!([{"op": "replace", "path": "/spec/replicas", "value": -1}]),
            ),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), 422);
    // ConfigMaps have no scale subresource.
    assert!(Scale::of(&fixture.store("", "configmaps")).is_none());
}

// ---------------------------------------------------------------- reviews

/// Knows one token; allows `alice` to get pods, denies `mallory` outright,
/// has no opinion otherwise; remembers what it was asked.
#[derive(Default)]
struct FakeAuthority {
    asked: Mutex<Vec<Question>>,
}

/// Who was asked about: user, verb, resource, namespace, version.
type Question = (String, String, String, String, String);

#[async_trait::async_trait]
impl ReviewAuthority for FakeAuthority {
    fn authenticate_token(
        &self,
        token: &str,
        audiences: Option<&[String]>,
    ) -> Option<ReviewedUser> {
        (token == "good" && audiences.is_none_or(|a| a.iter().any(|a| a == "api"))).then(|| {
            ReviewedUser {
                name: "alice".into(),
                uid: "u-1".into(),
                groups: vec!["devs".into()],
                extra: Default::default(),
            }
        })
    }

    async fn authorize(&self, user: &ReviewedUser, q: &AccessQuestion<'_>) -> AccessAnswer {
        self.asked.lock().unwrap().push((
            user.name.clone(),
            q.verb.into(),
            q.resource.into(),
            q.namespace.into(),
            q.version.into(),
        ));
        match (user.name.as_str(), q.verb, q.resource) {
            ("alice", "get", "pods") => AccessAnswer::Allow("granted".into()),
            ("mallory", ..) => AccessAnswer::Deny("banned".into()),
            _ => AccessAnswer::NoOpinion(String::new()),
        }
    }

    fn rules_review(&self, user: &ReviewedUser, namespace: &str) -> Value {
        json!({"for": user.name, "namespace": namespace})
    }
}

fn access_review(kind: &str, spec: Value) -> Value {
    json!({"apiVersion": "authorization.k8s.io/v1", "kind": kind, "metadata": {}, "spec": spec})
}

#[tokio::test]
async fn token_reviews_answer_who_the_token_proves() {
    let authority = FakeAuthority::default();
    let requester = ctx();
    let ask = |spec: Value| {
        review(
            &authority,
            &requester,
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "metadata": {}, "spec": spec}),
        )
    };
    let answered = ask(json!({"token": "good", "audiences": ["api"]}))
        .await
        .unwrap();
    assert_eq!(
        answered["status"],
        json!({"authenticated": true, "user": {"username": "alice", "uid": "u-1", "groups": ["devs"]},
            "audiences": ["api"]})
    );
    assert_eq!(answered["metadata"], json!({"creationTimestamp": null}));
    let refused = ask(json!({"token": "bad"})).await.unwrap();
    assert_eq!(refused["status"], json!({"user": {}}));
    let err = ask(json!({})).await.unwrap_err();
    assert_eq!(
        message(&err),
        (
            400,
            "BadRequest",
            "token is required for TokenReview in authentication"
        )
    );
}

#[tokio::test]
async fn access_reviews_ask_the_authorizer_about_their_subject() {
    let authority = FakeAuthority::default();
    let sar = |user: &str, verb: &str| {
        access_review(
            "SubjectAccessReview",
            json!({"user": user, "resourceAttributes": {"verb": verb, "resource": "pods", "namespace": "ns"}}),
        )
    };
    let allowed = review(&authority, &ctx(), sar("alice", "get"))
        .await
        .unwrap();
    assert_eq!(
        allowed["status"],
        json!({"allowed": true, "reason": "granted"})
    );
    let no_opinion = review(&authority, &ctx(), sar("alice", "delete"))
        .await
        .unwrap();
    assert_eq!(no_opinion["status"], json!({"allowed": false}));
    let denied = review(&authority, &ctx(), sar("mallory", "get"))
        .await
        .unwrap();
    assert_eq!(
        denied["status"],
        json!({"allowed": false, "denied": true, "reason": "banned"})
    );

    // The local review takes the URL's namespace; the self review, the requester.
    let local = access_review(
        "LocalSubjectAccessReview",
        json!({"user": "alice", "resourceAttributes": {"verb": "get", "resource": "pods"}}),
    );
    let answered = review(&authority, &ctx(), local).await.unwrap();
    assert_eq!(
        answered["spec"]["resourceAttributes"]["namespace"],
        json!("test")
    );
    let own = access_review(
        "SelfSubjectAccessReview",
        json!({"resourceAttributes": {"verb": "list", "resource": "pods", "version": "v1"}}),
    );
    review(&authority, &ctx(), own).await.unwrap();
    let s = |v: &str| v.to_string();
    assert_eq!(
        authority.asked.lock().unwrap().clone(),
        vec![
            (s("alice"), s("get"), s("pods"), s("ns"), s("*")),
            (s("alice"), s("delete"), s("pods"), s("ns"), s("*")),
            (s("mallory"), s("get"), s("pods"), s("ns"), s("*")),
            (s("alice"), s("get"), s("pods"), s("test"), s("*")),
            (s("admin"), s("list"), s("pods"), s(""), s("v1")),
        ]
    );

    let elsewhere = access_review(
        "LocalSubjectAccessReview",
        json!({"user": "alice", "resourceAttributes": {"verb": "get", "namespace": "other"}}),
    );
    let err = review(&authority, &ctx(), elsewhere).await.unwrap_err();
    assert_eq!(
        message(&err),
        (
            400,
            "BadRequest",
            "spec.resourceAttributes.namespace must match namespace: test"
        )
    );
    // Upstream's ValidateSubjectAccessReviewSpec: one kind of attributes, and a subject.
    let err = review(
        &authority,
        &ctx(),
        access_review("SubjectAccessReview", json!({})),
    )
    .await
    .unwrap_err();
    assert_eq!(
        message(&err),
        (
            422,
            "Invalid",
            "SubjectAccessReview.authorization.k8s.io \"\" is invalid: [spec.resourceAttributes: Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified, spec.user: Invalid value: \"\": at least one of user or group must be specified]"
        )
    );
}

#[tokio::test]
async fn self_reviews_answer_about_the_requester() {
    let authority = FakeAuthority::default();
    let whoami = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview", "metadata": {}});
    let answered = review(&authority, &ctx(), whoami).await.unwrap();
    assert_eq!(
        answered["status"],
        json!({"userInfo": {"username": "admin", "groups": ["system:masters"]}})
    );
    let rules = access_review("SelfSubjectRulesReview", json!({"namespace": "ns"}));
    let answered = review(&authority, &ctx(), rules).await.unwrap();
    // A fresh object: the spec is not echoed.
    assert_eq!(answered["spec"], json!({}));
    assert_eq!(
        answered["status"],
        json!({"for": "admin", "namespace": "ns"})
    );
    let err = review(
        &authority,
        &ctx(),
        access_review("SelfSubjectRulesReview", json!({})),
    )
    .await
    .unwrap_err();
    assert_eq!(
        message(&err),
        (400, "BadRequest", "no namespace on request")
    );
}
