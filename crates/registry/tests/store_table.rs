//! `GenericStore`'s create, update, delete and watch paths over the memory
//! backend, one table row per case, in the style of upstream's
//! `k8s.io/apiserver/pkg/registry/generic/registry/store_test.go`: each row
//! gives the stored object(s) before, the request and its options, and the
//! expected stored object or `Status` (code, reason, message).
//!
//! Expected values are upstream's: its store tests' outcomes, and the texts of
//! `k8s.io/apiserver`'s store, `rest.BeforeCreate`/`BeforeDelete` and the
//! watch cache (quoted per row where they are not obvious).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use kubext_registry as registry;

use serde_json::{Value, json};

use apimachinery::options::PropagationPolicy;
use apimachinery::{StatusError, Subresource};
use registry::options::DeleteOptions;
use registry::{Object, RequestContext, Storage, WatchOptions};
use storage::StoreOptions;
use storage::WatchItem;

mod common;
use common::{Fixture, ctx, value};

fn dry_run() -> RequestContext {
    RequestContext {
        dry_run: true,
        ..ctx()
    }
}

fn configmap(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
}

fn deployment(name: &str, replicas: i64) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    })
}

/// A pod; `node` set makes it scheduled (deleted gracefully).
fn pod(name: &str, node: Option<&str>) -> Value {
    let mut pod = json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "nginx"}], "terminationGracePeriodSeconds": 30},
    });
    if let Some(node) = node {
        pod["spec"]["nodeName"] = json!(node);
    }
    pod
}

fn replication_controller(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": name},
        "spec": {"selector": {"app": "x"}, "template": {"metadata": {"labels": {"app": "x"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
}

fn with_metadata(mut obj: Value, metadata: Value) -> Value {
    for (k, v) in metadata.as_object().unwrap() {
        obj["metadata"][k] = v.clone();
    }
    obj
}

/// The expected `Status` of a refused request; `{uid}` and `{rv}` in the
/// message stand for the stored object's.
struct Refusal {
    code: u16,
    reason: &'static str,
    message: &'static str,
}

fn assert_refused(row: &str, err: &StatusError, want: &Refusal, stored: Option<&Value>) {
    let fill = |text: &str| match stored {
        Some(obj) => text
            .replace("{uid}", obj["metadata"]["uid"].as_str().unwrap_or(""))
            .replace(
                "{rv}",
                obj["metadata"]["resourceVersion"].as_str().unwrap_or(""),
            ),
        None => text.to_string(),
    };
    let status = err.status();
    assert_eq!(
        (status.code, status.reason.as_str(), status.message.as_str()),
        (want.code, want.reason, fill(want.message).as_str()),
        "row {row:?}"
    );
}

/// `obj` with what the server chooses (uid, times, resourceVersion) replaced
/// by placeholders, so rows can state the rest exactly.
fn normalized(obj: &Value) -> Value {
    let mut obj = obj.clone();
    if let Some(md) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        for (field, placeholder) in [
            ("uid", "<uid>"),
            ("creationTimestamp", "<time>"),
            ("deletionTimestamp", "<time>"),
            ("resourceVersion", "<rv>"),
        ] {
            if md.contains_key(field) {
                md.insert(field.into(), json!(placeholder));
            }
        }
    }
    obj
}

// ---------------------------------------------------------------- create

struct CreateRow {
    name: &'static str,
    existing: Option<Value>,
    ctx: RequestContext,
    input: Value,
    /// The stored object afterwards (normalized), or `None` if nothing is.
    stored: Option<Value>,
    refused: Option<Refusal>,
}

#[tokio::test]
async fn create() {
    let rows = vec![
        CreateRow {
            name: "system metadata is set; what the client sent of it is wiped",
            existing: None,
            ctx: ctx(),
            input: with_metadata(
                configmap("foo", json!({"a": "b"})),
                json!({"uid": "client-uid", "creationTimestamp": "2001-01-01T00:00:00Z",
                    "deletionTimestamp": "2001-01-01T00:00:00Z", "deletionGracePeriodSeconds": 5,
                    "generation": 7}),
            ),
            stored: Some(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                // A kind without a spec does not track generation: upstream's
                // BeforeCreate leaves the client's to the strategy, which keeps it.
                "metadata": {"name": "foo", "namespace": "test", "uid": "<uid>",
                    "creationTimestamp": "<time>", "resourceVersion": "<rv>", "generation": 7},
                "data": {"a": "b"},
            })),
            refused: None,
        },
        CreateRow {
            name: "kinds with a spec start at generation 1",
            existing: None,
            ctx: ctx(),
            input: deployment("web", 2),
            stored: None, // checked below: the whole Deployment is defaulted
            refused: None,
        },
        CreateRow {
            name: "a name taken is 409 AlreadyExists",
            existing: Some(configmap("foo", json!({"a": "1"}))),
            ctx: ctx(),
            input: configmap("foo", json!({"a": "2"})),
            stored: Some(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "foo", "namespace": "test", "uid": "<uid>",
                    "creationTimestamp": "<time>", "resourceVersion": "<rv>"},
                "data": {"a": "1"},
            })),
            refused: Some(Refusal {
                code: 409,
                reason: "AlreadyExists",
                message: "configmaps \"foo\" already exists",
            }),
        },
        CreateRow {
            name: "the body's namespace must be the request's",
            existing: None,
            ctx: ctx(),
            input: with_metadata(configmap("foo", json!({})), json!({"namespace": "other"})),
            stored: None,
            refused: Some(Refusal {
                code: 400,
                reason: "BadRequest",
                message: "the namespace of the provided object does not match the namespace sent on the request",
            }),
        },
        CreateRow {
            name: "a namespace that does not exist is 404 (NamespaceLifecycle)",
            existing: None,
            ctx: RequestContext {
                namespace: "missing".into(),
                ..ctx()
            },
            input: configmap("foo", json!({})),
            stored: None,
            refused: Some(Refusal {
                code: 404,
                reason: "NotFound",
                message: "namespaces \"missing\" not found",
            }),
        },
        CreateRow {
            // Upstream's etcd3 store: storage.ErrResourceVersionSetOnCreate,
            // an internal error.
            name: "a resourceVersion on a create is refused",
            existing: None,
            ctx: ctx(),
            input: with_metadata(configmap("foo", json!({})), json!({"resourceVersion": "5"})),
            stored: None,
            refused: Some(Refusal {
                code: 500,
                reason: "InternalError",
                message: "Internal error occurred: resourceVersion should not be set on objects to be created",
            }),
        },
        CreateRow {
            name: "dry run answers the object and stores nothing",
            existing: None,
            ctx: dry_run(),
            input: configmap("foo", json!({"a": "b"})),
            stored: None,
            refused: None,
        },
        CreateRow {
            name: "dry run still sees a name taken",
            existing: Some(configmap("foo", json!({}))),
            ctx: dry_run(),
            input: configmap("foo", json!({"a": "b"})),
            // Go's `omitempty` drops the empty data map.
            stored: Some(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "foo", "namespace": "test", "uid": "<uid>",
                    "creationTimestamp": "<time>", "resourceVersion": "<rv>"},
            })),
            refused: Some(Refusal {
                code: 409,
                reason: "AlreadyExists",
                message: "configmaps \"foo\" already exists",
            }),
        },
    ];
    for row in rows {
        let fixture = Fixture::new().await;
        let kind = row.input["kind"].as_str().unwrap().to_string();
        let store = match kind.as_str() {
            "ConfigMap" => fixture.store("", "configmaps"),
            _ => fixture.store("apps", "deployments"),
        };
        if let Some(existing) = row.existing {
            store.create(&ctx(), existing).await.unwrap();
        }
        let name = row.input["metadata"]["name"].as_str().unwrap().to_string();
        let result = store.create(&row.ctx, row.input).await;
        let stored = fixture.stored(&store, &name).await;
        match (&row.refused, result) {
            (Some(want), Err(err)) => assert_refused(row.name, &err, want, stored.as_ref()),
            (Some(_), Ok(obj)) => panic!("row {:?}: created {}", row.name, value(&obj)),
            (None, Err(err)) => panic!("row {:?}: {err:?}", row.name),
            (None, Ok(answered)) => {
                let answered = value(&answered);
                if row.ctx.dry_run {
                    assert_eq!(stored, None, "row {:?}: dry run stored", row.name);
                    assert_eq!(answered["metadata"]["name"], json!(name));
                    assert!(answered["metadata"].get("resourceVersion").is_none());
                    continue;
                }
                // What the create answers is what is stored.
                assert_eq!(Some(&answered), stored.as_ref(), "row {:?}", row.name);
                if kind == "Deployment" {
                    assert_eq!(answered["metadata"]["generation"], json!(1));
                    continue;
                }
            }
        }
        if kind == "ConfigMap" {
            assert_eq!(
                stored.as_ref().map(normalized),
                row.stored,
                "row {:?}",
                row.name
            );
        }
    }
}

/// Upstream's `names.SimpleNameGenerator`: the base (at most 58 bytes, so the
/// name fits 63) and five characters of `utilrand`'s alphabet.
#[tokio::test]
async fn create_generates_names_from_generate_name() {
    let alphabet = "bcdfghjklmnpqrstvwxz2456789";
    let long_base = format!("{}-", "a".repeat(61));
    for (base, kept) in [("foo-", "foo-"), (long_base.as_str(), &long_base[..58])] {
        let fixture = Fixture::new().await;
        let store = fixture.store("", "configmaps");
        let input = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"generateName": base}});
        let created = value(&store.create(&ctx(), input).await.unwrap());
        let name = created["metadata"]["name"].as_str().unwrap();
        assert_eq!(name.len(), kept.len() + 5, "{name}");
        let (prefix, suffix) = name.split_at(kept.len());
        assert_eq!(prefix, kept);
        assert!(suffix.chars().all(|c| alphabet.contains(c)), "{name}");
        assert_eq!(created["metadata"]["generateName"], json!(base));
        assert_eq!(fixture.stored(&store, name).await, Some(created));
    }
}

// ---------------------------------------------------------------- update

enum Change {
    /// PUT of the stored object changed by this function.
    Put(fn(&mut Value)),
    /// PUT of this object (no stored object is read).
    PutObject(Value),
    /// A write of the status subresource.
    Status(fn(&mut Value)),
}

struct UpdateRow {
    name: &'static str,
    existing: Option<Value>,
    ctx: RequestContext,
    change: Change,
    /// Whether the resourceVersion changes (a write happened).
    written: bool,
    generation: Option<i64>,
    refused: Option<Refusal>,
}

#[tokio::test]
async fn update() {
    let rows = vec![
        UpdateRow {
            name: "a change is written with a new resourceVersion",
            existing: Some(configmap("foo", json!({"a": "1"}))),
            ctx: ctx(),
            change: Change::Put(|o| o["data"]["a"] = json!("2")),
            written: true,
            generation: None,
            refused: None,
        },
        UpdateRow {
            // Upstream's TestNoOpUpdates: the object is answered, not written.
            name: "an update that changes nothing keeps the resourceVersion",
            existing: Some(configmap("foo", json!({"a": "1"}))),
            ctx: ctx(),
            change: Change::Put(|_| {}),
            written: false,
            generation: None,
            refused: None,
        },
        UpdateRow {
            name: "a stale resourceVersion is 409 Conflict",
            existing: Some(configmap("foo", json!({"a": "1"}))),
            ctx: ctx(),
            change: Change::Put(|o| {
                o["metadata"]["resourceVersion"] = json!("1");
                o["data"]["a"] = json!("2");
            }),
            written: false,
            generation: None,
            refused: Some(Refusal {
                code: 409,
                reason: "Conflict",
                message: "Operation cannot be fulfilled on configmaps \"foo\": the object has been modified; please apply your changes to the latest version and try again",
            }),
        },
        UpdateRow {
            // ConfigMaps allow unconditional updates (AllowUnconditionalUpdate).
            name: "no resourceVersion updates whatever is stored",
            existing: Some(configmap("foo", json!({"a": "1"}))),
            ctx: ctx(),
            change: Change::Put(|o| {
                o["metadata"]
                    .as_object_mut()
                    .unwrap()
                    .remove("resourceVersion");
                o["data"]["a"] = json!("2");
            }),
            written: true,
            generation: None,
            refused: None,
        },
        UpdateRow {
            // TestStoreUpdate: no create on update for types that do not allow it.
            name: "an object that does not exist is 404",
            existing: None,
            ctx: ctx(),
            change: Change::PutObject(configmap("foo", json!({}))),
            written: false,
            generation: None,
            refused: Some(Refusal {
                code: 404,
                reason: "NotFound",
                message: "configmaps \"foo\" not found",
            }),
        },
        UpdateRow {
            // TestStoreUpdate: not even a body naming a uid and a
            // resourceVersion ("created previously") is a 409 then.
            name: "an object that does not exist is 404 whatever the body names",
            existing: None,
            ctx: ctx(),
            change: Change::PutObject(with_metadata(
                configmap("foo", json!({})),
                json!({"uid": "A", "resourceVersion": "7"}),
            )),
            written: false,
            generation: None,
            refused: Some(Refusal {
                code: 404,
                reason: "NotFound",
                message: "configmaps \"foo\" not found",
            }),
        },
        UpdateRow {
            // Upstream's checkName: `metadata.name` is how the object is named.
            name: "a body without a name is 400",
            existing: Some(configmap("foo", json!({}))),
            ctx: ctx(),
            change: Change::Put(|o| {
                o["metadata"].as_object_mut().unwrap().remove("name");
            }),
            written: false,
            generation: None,
            refused: Some(Refusal {
                code: 400,
                reason: "BadRequest",
                message: "the name of the object (foo based on URL) was undeterminable: name must be provided",
            }),
        },
        UpdateRow {
            name: "the body's name must be the URL's",
            existing: Some(configmap("foo", json!({}))),
            ctx: ctx(),
            change: Change::Put(|o| o["metadata"]["name"] = json!("bar")),
            written: false,
            generation: None,
            refused: Some(Refusal {
                code: 400,
                reason: "BadRequest",
                message: "the name of the object (bar) does not match the name on the URL (foo)",
            }),
        },
        UpdateRow {
            name: "dry run answers the change and writes nothing",
            existing: Some(configmap("foo", json!({"a": "1"}))),
            ctx: dry_run(),
            change: Change::Put(|o| o["data"]["a"] = json!("2")),
            written: false,
            generation: None,
            refused: None,
        },
        UpdateRow {
            name: "a spec change bumps generation",
            existing: Some(deployment("web", 1)),
            ctx: ctx(),
            change: Change::Put(|o| o["spec"]["replicas"] = json!(3)),
            written: true,
            generation: Some(2),
            refused: None,
        },
        UpdateRow {
            name: "a metadata change does not bump generation",
            existing: Some(deployment("web", 1)),
            ctx: ctx(),
            change: Change::Put(|o| o["metadata"]["labels"] = json!({"x": "y"})),
            written: true,
            generation: Some(1),
            refused: None,
        },
        UpdateRow {
            name: "a status write does not bump generation",
            existing: Some(deployment("web", 1)),
            ctx: ctx(),
            change: Change::Status(|o| {
                o["status"] = json!({"observedGeneration": 1, "replicas": 1})
            }),
            written: true,
            generation: Some(1),
            refused: None,
        },
    ];
    for row in rows {
        let fixture = Fixture::new().await;
        let (store, name) = match &row.existing {
            Some(obj) if obj["kind"] == "Deployment" => {
                (fixture.store("apps", "deployments"), "web")
            }
            _ => (fixture.store("", "configmaps"), "foo"),
        };
        let before = match row.existing {
            Some(obj) => Some(value(&store.create(&ctx(), obj).await.unwrap())),
            None => None,
        };
        let revision = synced_revision(&fixture.storage).await;
        let result = match row.change {
            Change::Put(change) => {
                let mut obj = before.clone().unwrap();
                change(&mut obj);
                store.update(&row.ctx, name, obj).await
            }
            Change::PutObject(obj) => store.update(&row.ctx, name, obj).await,
            Change::Status(change) => {
                let ctx = RequestContext {
                    subresource: Subresource::Status,
                    ..row.ctx.clone()
                };
                let mut obj = before.clone().unwrap();
                change(&mut obj);
                store.update(&ctx, name, obj).await
            }
        };
        let after = fixture.stored(&store, name).await;
        let rv = |o: &Option<Value>| o.as_ref().map(|o| o["metadata"]["resourceVersion"].clone());
        match (&row.refused, result) {
            (Some(want), Err(err)) => assert_refused(row.name, &err, want, after.as_ref()),
            (Some(_), Ok(obj)) => panic!("row {:?}: updated to {}", row.name, value(&obj)),
            (None, Err(err)) => panic!("row {:?}: {err:?}", row.name),
            (None, Ok(answered)) => {
                let answered = value(&answered);
                if row.ctx.dry_run {
                    assert_eq!(answered["data"]["a"], json!("2"), "row {:?}", row.name);
                } else {
                    assert_eq!(Some(&answered), after.as_ref(), "row {:?}", row.name);
                }
                if let Some(generation) = row.generation {
                    assert_eq!(
                        answered["metadata"]["generation"],
                        json!(generation),
                        "row {:?}",
                        row.name
                    );
                }
            }
        }
        assert_eq!(
            rv(&after) != rv(&before),
            row.written,
            "row {:?}: resourceVersion {:?} → {:?}",
            row.name,
            rv(&before),
            rv(&after)
        );
        assert_eq!(
            synced_revision(&fixture.storage).await != revision,
            row.written,
            "row {:?}: the store's revision",
            row.name
        );
    }
}

/// The store's revision once its cache has seen every write.
async fn synced_revision(storage: &Storage) -> i64 {
    storage.sync().await.unwrap();
    storage.revision()
}

/// Upstream's `GuaranteedUpdate` with the body's uid as a precondition.
#[tokio::test]
async fn update_with_another_uid_is_a_precondition_conflict() {
    let fixture = Fixture::new().await;
    let store = fixture.store("", "configmaps");
    let created = value(
        &store
            .create(&ctx(), configmap("foo", json!({})))
            .await
            .unwrap(),
    );
    let mut changed = created.clone();
    changed["metadata"]["uid"] = json!("A");
    changed["data"] = json!({"a": "b"});
    let err = store.update(&ctx(), "foo", changed).await.unwrap_err();
    let uid = created["metadata"]["uid"].as_str().unwrap();
    assert_eq!(
        (err.code(), err.reason(), err.status().message.clone()),
        (
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on configmaps \"foo\": StorageError: invalid object, Code: 4, Key: /registry/configmaps/test/foo, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: A, UID in object meta: {uid}"
            )
        )
    );
    assert_eq!(fixture.stored(&store, "foo").await, Some(created));
}

// ------------------------------------------------------ create on update

fn lease(name: &str, holder: &str) -> Value {
    json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": name},
        "spec": {"holderIdentity": holder}})
}

/// A PUT ([`registry::GenericStore::replace`]) of a kind that may create on
/// update (upstream's `AllowCreateOnUpdate`), in the style of upstream's
/// `TestStoreUpdate` and `TestStoreCreateOnUpdateHooks`.
struct PutRow {
    name: &'static str,
    /// The store written: group and resource.
    resource: (&'static str, &'static str),
    existing: Option<Value>,
    ctx: RequestContext,
    input: Value,
    /// Whether the answer says it created the object (HTTP 201).
    created: bool,
    /// The stored object afterwards (normalized); `None`: nothing is stored.
    stored: Option<Value>,
    refused: Option<Refusal>,
}

fn stored_lease(holder: &str) -> Value {
    json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "l", "namespace": "test", "uid": "<uid>",
            "creationTimestamp": "<time>", "resourceVersion": "<rv>"},
        "spec": {"holderIdentity": holder},
    })
}

#[tokio::test]
async fn create_on_update() {
    const LEASES: (&str, &str) = ("coordination.k8s.io", "leases");
    let rows = vec![
        PutRow {
            name: "a missing Lease is created",
            resource: LEASES,
            existing: None,
            ctx: ctx(),
            input: lease("l", "a"),
            created: true,
            stored: Some(stored_lease("a")),
            refused: None,
        },
        PutRow {
            // The storage's GuaranteedUpdate checks only the uid; the
            // resourceVersion is cleared before the object is stored
            // (kube-apiserver 1.37.2 answers 201).
            name: "a resourceVersion in the body is no precondition: created without it",
            resource: LEASES,
            existing: None,
            ctx: ctx(),
            input: with_metadata(lease("l", "a"), json!({"resourceVersion": "7"})),
            created: true,
            stored: Some(stored_lease("a")),
            refused: None,
        },
        PutRow {
            name: "system metadata the client sent is wiped, as on a create",
            resource: LEASES,
            existing: None,
            ctx: ctx(),
            input: with_metadata(
                lease("l", "a"),
                json!({"creationTimestamp": "2001-01-01T00:00:00Z",
                    "deletionTimestamp": "2001-01-01T00:00:00Z", "deletionGracePeriodSeconds": 3,
                    "generation": 5}),
            ),
            created: true,
            // Leases track no generation: the client's is kept (as POST keeps it).
            stored: Some(with_metadata(stored_lease("a"), json!({"generation": 5}))),
            refused: None,
        },
        PutRow {
            // Preconditions.Check against the empty object GuaranteedUpdate
            // starts from, in upstream's storage error.
            name: "a uid in the body is a precondition the missing object fails",
            resource: LEASES,
            existing: None,
            ctx: ctx(),
            input: with_metadata(lease("l", "a"), json!({"uid": "A"})),
            created: false,
            stored: None,
            refused: Some(Refusal {
                code: 409,
                reason: "Conflict",
                message: "Operation cannot be fulfilled on leases.coordination.k8s.io \"l\": StorageError: invalid object, Code: 4, Key: /registry/leases/test/l, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: A, UID in object meta: ",
            }),
        },
        PutRow {
            name: "the create is validated as a create",
            resource: LEASES,
            existing: None,
            ctx: ctx(),
            input: json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": "l"}, "spec": {"leaseDurationSeconds": -1}}),
            created: false,
            stored: None,
            refused: Some(Refusal {
                code: 422,
                reason: "Invalid",
                message: "Lease.coordination.k8s.io \"l\" is invalid: spec.leaseDurationSeconds: Invalid value: -1: must be greater than 0",
            }),
        },
        PutRow {
            name: "a namespace that does not exist is 404, as on a create",
            resource: LEASES,
            existing: None,
            ctx: RequestContext {
                namespace: "nope".into(),
                ..ctx()
            },
            input: lease("l", "a"),
            created: false,
            stored: None,
            refused: Some(Refusal {
                code: 404,
                reason: "NotFound",
                message: "namespaces \"nope\" not found",
            }),
        },
        PutRow {
            name: "dry run answers the object it would create and stores nothing",
            resource: LEASES,
            existing: None,
            ctx: dry_run(),
            input: lease("l", "a"),
            created: true,
            stored: None,
            refused: None,
        },
        PutRow {
            name: "an existing Lease is updated",
            resource: LEASES,
            existing: Some(lease("l", "a")),
            ctx: ctx(),
            input: lease("l", "b"),
            created: false,
            stored: Some(stored_lease("b")),
            refused: None,
        },
        PutRow {
            name: "a Role (rbac's strategy) is created",
            resource: ("rbac.authorization.k8s.io", "roles"),
            existing: None,
            ctx: ctx(),
            input: json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "l"}, "rules": []}),
            created: true,
            stored: Some(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "l", "namespace": "test", "uid": "<uid>",
                    "creationTimestamp": "<time>", "resourceVersion": "<rv>"},
                "rules": [],
            })),
            refused: None,
        },
        PutRow {
            // TestStoreUpdate: a type that does not create on update.
            name: "a missing ConfigMap is 404",
            resource: ("", "configmaps"),
            existing: None,
            ctx: ctx(),
            input: configmap("l", json!({})),
            created: false,
            stored: None,
            refused: Some(Refusal {
                code: 404,
                reason: "NotFound",
                message: "configmaps \"l\" not found",
            }),
        },
    ];
    for row in rows {
        let fixture = Fixture::new().await;
        let store = fixture.store(row.resource.0, row.resource.1);
        if let Some(obj) = row.existing {
            store.create(&ctx(), obj).await.unwrap();
        }
        let result = store.replace(&row.ctx, "l", row.input).await;
        let after = fixture.stored(&store, "l").await;
        assert_eq!(
            after.as_ref().map(normalized),
            row.stored,
            "row {:?}: stored",
            row.name
        );
        match (&row.refused, result) {
            (Some(want), Err(err)) => assert_refused(row.name, &err, want, None),
            (Some(_), Ok(put)) => panic!("row {:?}: answered {}", row.name, value(&put.object)),
            (None, Err(err)) => panic!("row {:?}: {err:?}", row.name),
            (None, Ok(put)) => {
                assert_eq!(put.created, row.created, "row {:?}: created", row.name);
                let answered = value(&put.object);
                if row.ctx.dry_run {
                    // Named and stamped as it would be, without a revision.
                    assert!(answered["metadata"]["uid"].is_string(), "{answered}");
                    assert!(answered["metadata"].get("resourceVersion").is_none());
                } else {
                    assert_eq!(Some(&answered), after.as_ref(), "row {:?}", row.name);
                }
            }
        }
    }
}

/// A Service created by a PUT takes its cluster IP as a POST's does.
#[tokio::test]
async fn a_service_created_on_update_is_allocated_a_cluster_ip() {
    let fixture = Fixture::new().await;
    let store = fixture.store("", "services");
    let input = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
        "spec": {"ports": [{"port": 80}]}});
    let put = store.replace(&ctx(), "s", input).await.unwrap();
    assert!(put.created);
    let service = value(&put.object);
    let ip = service["spec"]["clusterIP"].as_str().unwrap();
    assert!(ip.starts_with("10.0.0."), "{service}");
    assert_eq!(service["spec"]["clusterIPs"], json!([ip]));
    let addresses = fixture.store("networking.k8s.io", "ipaddresses");
    assert!(addresses.get(&ctx(), ip).await.is_ok(), "IPAddress {ip}");
}

/// Upstream's patcher passes no create on update: a PATCH of a missing
/// Lease is 404.
#[tokio::test]
async fn a_patch_never_creates() {
    let fixture = Fixture::new().await;
    let store = fixture.store("coordination.k8s.io", "leases");
    let err = store
        .update_with(&ctx(), "l", |_| Ok(lease("l", "a")))
        .await
        .unwrap_err();
    assert_eq!(
        (err.code(), err.status().message.as_str()),
        (404, "leases.coordination.k8s.io \"l\" not found")
    );
    assert_eq!(fixture.stored(&store, "l").await, None);
}

/// The built-in kinds whose strategies' `AllowCreateOnUpdate` is true
/// (kube-apiserver 1.37's `pkg/registry`), as served; LeaseCandidates are
/// not served.
#[test]
fn the_kinds_that_create_on_update_are_upstreams() {
    let mut kinds: Vec<(String, String)> = registry::builtin::resource_types()
        .iter()
        .filter(|t| t.allow_create_on_update)
        .map(|t| (t.group.clone(), t.kind.clone()))
        .collect();
    kinds.sort();
    kinds.dedup();
    let want = [
        ("", "Endpoints"),
        ("", "Event"),
        ("", "LimitRange"),
        ("", "Service"),
        ("coordination.k8s.io", "Lease"),
        ("events.k8s.io", "Event"),
        ("node.k8s.io", "RuntimeClass"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("rbac.authorization.k8s.io", "Role"),
        ("rbac.authorization.k8s.io", "RoleBinding"),
    ]
    .map(|(g, k)| (g.to_string(), k.to_string()));
    assert_eq!(kinds, want);
}

// ---------------------------------------------------------------- delete

struct DeleteRow {
    name: &'static str,
    existing: Value,
    ctx: RequestContext,
    options: DeleteOptions,
    /// `{uid}`/`{rv}`-filled preconditions: (uid, resourceVersion).
    preconditions: (Option<&'static str>, Option<&'static str>),
    /// Whether the answer says the object is gone.
    deleted: bool,
    /// Whether it is still stored after.
    kept: bool,
    /// The kept object's finalizers and `deletionGracePeriodSeconds`.
    finalizers: Vec<&'static str>,
    grace: Option<i64>,
    refused: Option<Refusal>,
}

impl Default for DeleteRow {
    fn default() -> Self {
        DeleteRow {
            name: "",
            existing: configmap("foo", json!({})),
            ctx: ctx(),
            options: DeleteOptions::default(),
            preconditions: (None, None),
            deleted: true,
            kept: false,
            finalizers: vec![],
            grace: None,
            refused: None,
        }
    }
}

fn grace(seconds: i64) -> DeleteOptions {
    DeleteOptions {
        grace_period_seconds: Some(seconds),
        ..Default::default()
    }
}

fn finalized(obj: Value, finalizers: &[&str]) -> Value {
    with_metadata(obj, json!({"finalizers": finalizers}))
}

#[tokio::test]
async fn delete() {
    let rows = vec![
        DeleteRow {
            name: "an object without finalizers goes at once",
            ..Default::default()
        },
        DeleteRow {
            name: "matching preconditions delete",
            preconditions: (Some("{uid}"), Some("{rv}")),
            ..Default::default()
        },
        DeleteRow {
            name: "another uid is a precondition conflict",
            preconditions: (Some("wrong"), None),
            deleted: false,
            kept: true,
            refused: Some(Refusal {
                code: 409,
                reason: "Conflict",
                message: "Operation cannot be fulfilled on ConfigMap \"foo\": the UID in the precondition (wrong) does not match the UID in record ({uid}). The object might have been deleted and then recreated",
            }),
            ..Default::default()
        },
        DeleteRow {
            name: "another resourceVersion is a precondition conflict",
            preconditions: (None, Some("1")),
            deleted: false,
            kept: true,
            refused: Some(Refusal {
                code: 409,
                reason: "Conflict",
                message: "Operation cannot be fulfilled on ConfigMap \"foo\": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record ({rv}). The object might have been modified",
            }),
            ..Default::default()
        },
        DeleteRow {
            name: "dry run deletes nothing",
            ctx: dry_run(),
            kept: true,
            ..Default::default()
        },
        DeleteRow {
            // TestNonGracefulStoreHandleFinalizers: marked, kept, grace 0.
            name: "finalizers keep the object, marked as deleting",
            existing: finalized(configmap("foo", json!({})), &["example.com/hold"]),
            deleted: false,
            kept: true,
            finalizers: vec!["example.com/hold"],
            grace: Some(0),
            ..Default::default()
        },
        DeleteRow {
            name: "finalizers and dry run: nothing is marked",
            existing: finalized(configmap("foo", json!({})), &["example.com/hold"]),
            ctx: dry_run(),
            deleted: false,
            kept: true,
            finalizers: vec!["example.com/hold"],
            grace: None,
            ..Default::default()
        },
        DeleteRow {
            name: "a scheduled pod is deleted gracefully, for its termination period",
            existing: pod("foo", Some("node-1")),
            deleted: false,
            kept: true,
            grace: Some(30),
            ..Default::default()
        },
        DeleteRow {
            name: "the request's grace period wins",
            existing: pod("foo", Some("node-1")),
            options: grace(5),
            deleted: false,
            kept: true,
            grace: Some(5),
            ..Default::default()
        },
        DeleteRow {
            name: "a grace period of 0 deletes a scheduled pod at once",
            existing: pod("foo", Some("node-1")),
            options: grace(0),
            ..Default::default()
        },
        DeleteRow {
            // Upstream's pod strategy: an unscheduled pod has no kubelet to wait for.
            name: "an unscheduled pod goes at once",
            existing: pod("foo", None),
            ..Default::default()
        },
    ];
    for row in rows {
        let fixture = Fixture::new().await;
        let store = match row.existing["kind"].as_str().unwrap() {
            "Pod" => fixture.store("", "pods"),
            _ => fixture.store("", "configmaps"),
        };
        let created = value(&store.create(&ctx(), row.existing.clone()).await.unwrap());
        let fill = |text: &str| {
            text.replace("{uid}", created["metadata"]["uid"].as_str().unwrap())
                .replace(
                    "{rv}",
                    created["metadata"]["resourceVersion"].as_str().unwrap(),
                )
        };
        let options = DeleteOptions {
            precondition_uid: row.preconditions.0.map(fill),
            precondition_resource_version: row.preconditions.1.map(fill),
            ..row.options
        };
        let result = store.delete(&row.ctx, "foo", &options).await;
        let after = fixture.stored(&store, "foo").await;
        assert_eq!(after.is_some(), row.kept, "row {:?}: kept", row.name);
        match (&row.refused, result) {
            (Some(want), Err(err)) => {
                assert_refused(row.name, &err, want, Some(&created));
                assert_eq!(after.as_ref(), Some(&created), "row {:?}", row.name);
            }
            (Some(_), Ok(_)) => panic!("row {:?}: deleted", row.name),
            (None, Err(err)) => panic!("row {:?}: {err:?}", row.name),
            (None, Ok(outcome)) => {
                assert_eq!(outcome.deleted, row.deleted, "row {:?}: deleted", row.name);
                let Some(after) = after else { continue };
                if row.ctx.dry_run {
                    assert_eq!(after, created, "row {:?}: dry run changed it", row.name);
                    continue;
                }
                // What the delete answers is the object as now stored.
                assert_eq!(outcome.object, after, "row {:?}", row.name);
                let md = &after["metadata"];
                let finalizers: Vec<&str> = md["finalizers"]
                    .as_array()
                    .map(|f| f.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                assert_eq!(finalizers, row.finalizers, "row {:?}", row.name);
                assert_eq!(
                    md["deletionGracePeriodSeconds"].as_i64(),
                    row.grace,
                    "row {:?}",
                    row.name
                );
                let deadline =
                    apimachinery::time::parse(md["deletionTimestamp"].as_str().unwrap()).unwrap();
                let expected = jiff::Timestamp::now()
                    .checked_add(jiff::SignedDuration::from_secs(row.grace.unwrap_or(0)))
                    .unwrap();
                let off = deadline.duration_since(expected).as_secs().abs();
                assert!(off <= 2, "row {:?}: deletionTimestamp {deadline}", row.name);
            }
        }
    }
}

/// Upstream's `BeforeDelete` on an object already being deleted gracefully:
/// a longer period changes nothing, a shorter one moves the deadline
/// earlier, 0 deletes it.
#[tokio::test]
async fn a_second_graceful_delete_may_only_shorten_the_period() {
    let fixture = Fixture::new().await;
    let pods = fixture.store("", "pods");
    pods.create(&ctx(), pod("foo", Some("node-1")))
        .await
        .unwrap();
    let first = pods.delete(&ctx(), "foo", &grace(30)).await.unwrap().object;

    let longer = pods.delete(&ctx(), "foo", &grace(60)).await.unwrap();
    assert!(!longer.deleted);
    assert_eq!(fixture.stored(&pods, "foo").await, Some(first.clone()));

    let shorter = pods.delete(&ctx(), "foo", &grace(10)).await.unwrap();
    assert!(!shorter.deleted);
    let after = fixture.stored(&pods, "foo").await.unwrap();
    assert_eq!(after["metadata"]["deletionGracePeriodSeconds"], json!(10));
    let at = |o: &Value| {
        apimachinery::time::parse(o["metadata"]["deletionTimestamp"].as_str().unwrap()).unwrap()
    };
    // The deadline moves back by the difference (30 - 10 seconds).
    let moved = at(&first).duration_since(at(&after)).as_secs();
    assert!((19..=21).contains(&moved), "moved by {moved}s");

    let now = pods.delete(&ctx(), "foo", &grace(0)).await.unwrap();
    assert!(now.deleted);
    assert_eq!(fixture.stored(&pods, "foo").await, None);
}

/// TestStoreCreate: creating an object while the old one is still being
/// deleted gracefully is `AlreadyExists`, its message saying so.
#[tokio::test]
async fn creating_over_an_object_being_deleted_says_so() {
    let fixture = Fixture::new().await;
    let pods = fixture.store("", "pods");
    pods.create(&ctx(), pod("foo", Some("node-1")))
        .await
        .unwrap();
    pods.delete(&ctx(), "foo", &grace(50)).await.unwrap();
    let err = pods
        .create(&ctx(), pod("foo", Some("node-2")))
        .await
        .unwrap_err();
    assert_eq!(
        (err.code(), err.reason(), err.status().message.as_str()),
        (
            409,
            "AlreadyExists",
            "object is being deleted: pods \"foo\" already exists"
        )
    );
}

/// One row of upstream's `TestStoreDeletionPropagation`.
struct PropagationRow {
    /// The kind orphans by default (`ReplicationController`) or has no
    /// default (`ConfigMap`).
    orphans_by_default: bool,
    existing: &'static [&'static str],
    policy: Option<PropagationPolicy>,
    /// The finalizers after, or `None`: deleted.
    expected: Option<&'static [&'static str]>,
}

/// TestStoreDeletionPropagation, row for row: the garbage collector's
/// finalizers are replaced by the policy's (`deletionFinalizersForGarbageCollection`
/// drops both and adds back what the policy, else the object's own, else the
/// type's default asks); an object left with finalizers is marked deleting
/// with a grace period of 0 and a bumped generation.
#[tokio::test]
async fn delete_propagation() {
    use PropagationPolicy::{Background, Foreground, Orphan};
    const ORPHAN: &[&str] = &["orphan"];
    const FOREGROUND: &[&str] = &["foregroundDeletion"];
    let row = |orphans_by_default, existing, policy, expected| PropagationRow {
        orphans_by_default,
        existing,
        policy,
        expected,
    };
    let rows = [
        // No finalizers on the object.
        row(false, &[][..], Some(Foreground), Some(FOREGROUND)),
        row(true, &[], Some(Foreground), Some(FOREGROUND)),
        row(false, &[], Some(Background), None),
        row(true, &[], Some(Background), None),
        row(false, &[], Some(Orphan), Some(ORPHAN)),
        row(true, &[], Some(Orphan), Some(ORPHAN)),
        row(false, &[], None, None),
        row(true, &[], None, Some(ORPHAN)),
        // An orphan finalizer on the object.
        row(false, ORPHAN, Some(Foreground), Some(FOREGROUND)),
        row(true, ORPHAN, Some(Foreground), Some(FOREGROUND)),
        row(false, ORPHAN, Some(Background), None),
        row(true, ORPHAN, Some(Background), None),
        row(false, ORPHAN, Some(Orphan), Some(ORPHAN)),
        row(true, ORPHAN, Some(Orphan), Some(ORPHAN)),
        row(false, ORPHAN, None, Some(ORPHAN)),
        row(true, ORPHAN, None, Some(ORPHAN)),
        // A foregroundDeletion finalizer on the object.
        row(false, FOREGROUND, Some(Foreground), Some(FOREGROUND)),
        row(true, FOREGROUND, Some(Foreground), Some(FOREGROUND)),
        row(false, FOREGROUND, Some(Background), None),
        row(true, FOREGROUND, Some(Background), None),
        row(false, FOREGROUND, Some(Orphan), Some(ORPHAN)),
        row(true, FOREGROUND, Some(Orphan), Some(ORPHAN)),
        row(false, FOREGROUND, None, Some(FOREGROUND)),
        row(true, FOREGROUND, None, Some(FOREGROUND)),
        // Other finalizers stay, first.
        row(
            false,
            &["example.com/hold", "orphan"],
            Some(Foreground),
            Some(&["example.com/hold", "foregroundDeletion"]),
        ),
    ];
    let fixture = Fixture::new().await;
    let configmaps = fixture.store("", "configmaps");
    let controllers = fixture.store("", "replicationcontrollers");
    for (i, row) in rows.iter().enumerate() {
        let name = format!("obj-{i}");
        let (store, obj) = if row.orphans_by_default {
            (&controllers, replication_controller(&name))
        } else {
            (&configmaps, configmap(&name, json!({})))
        };
        let created = value(
            &store
                .create(&ctx(), finalized(obj, row.existing))
                .await
                .unwrap(),
        );
        let options = DeleteOptions {
            propagation_policy: row.policy,
            ..Default::default()
        };
        let outcome = store.delete(&ctx(), &name, &options).await.unwrap();
        let after = fixture.stored(store, &name).await;
        let title = format!(
            "existing {:?}, policy {:?}, orphans by default: {}",
            row.existing, row.policy, row.orphans_by_default
        );
        assert_eq!(outcome.deleted, row.expected.is_none(), "{title}");
        let Some(expected) = row.expected else {
            assert_eq!(after, None, "{title}");
            continue;
        };
        let after = after.unwrap_or_else(|| panic!("{title}: deleted"));
        let md = &after["metadata"];
        assert_eq!(md["finalizers"], json!(expected), "{title}");
        assert!(md["deletionTimestamp"].is_string(), "{title}");
        assert_eq!(md["deletionGracePeriodSeconds"], json!(0), "{title}");
        // Kinds that track generation (a spec) bump it when marked.
        if row.orphans_by_default {
            assert_eq!(
                md["generation"].as_i64(),
                created["metadata"]["generation"].as_i64().map(|g| g + 1),
                "{title}"
            );
        }
    }
}

// ---------------------------------------------------------------- watch

/// An event as a row states it: type, name, resourceVersion.
fn event(item: &WatchItem<Object>) -> (String, String, String) {
    let (kind, obj) = match item {
        WatchItem::Added(o) => ("ADDED", value(o)),
        WatchItem::Modified(o) => ("MODIFIED", value(o)),
        WatchItem::Deleted(o) => ("DELETED", value(o)),
        WatchItem::Bookmark(rv) => return ("BOOKMARK".into(), String::new(), rv.to_string()),
    };
    (
        kind.into(),
        obj["metadata"]["name"].as_str().unwrap_or("").into(),
        obj["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or("")
            .into(),
    )
}

fn rv_of(obj: &Arc<Object>) -> i64 {
    value(obj)["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

/// The next `n` events, each within a second.
async fn next_events(
    watcher: &mut storage::Watcher<Object>,
    n: usize,
) -> Vec<(String, String, String)> {
    let mut events = Vec::new();
    for _ in 0..n {
        let item = tokio::time::timeout(std::time::Duration::from_secs(1), watcher.events.recv())
            .await
            .expect("an event within a second")
            .expect("the watch is open");
        events.push(event(&item));
    }
    events
}

#[tokio::test]
async fn watch_sees_creates_updates_and_deletes_in_order() {
    let fixture = Fixture::new().await;
    let store = fixture.store("", "configmaps");
    let existing = store
        .create(&ctx(), configmap("a", json!({})))
        .await
        .unwrap();
    let mut watcher = store.watch(&ctx(), WatchOptions::default()).await.unwrap();
    // Unset resourceVersion: the current state first, as ADDED.
    let initial: Vec<_> = watcher.initial.iter().map(event).collect();
    let s = |v: &str| v.to_string();
    assert_eq!(
        initial,
        vec![(s("ADDED"), s("a"), rv_of(&existing).to_string())]
    );

    let created = store
        .create(&ctx(), configmap("b", json!({})))
        .await
        .unwrap();
    let mut changed = value(&created);
    changed["data"] = json!({"k": "v"});
    let updated = store.update(&ctx(), "b", changed).await.unwrap();
    let deleted = store
        .delete(&ctx(), "b", &DeleteOptions::default())
        .await
        .unwrap();
    let deleted_rv = deleted.object["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        next_events(&mut watcher, 3).await,
        vec![
            (s("ADDED"), s("b"), rv_of(&created).to_string()),
            (s("MODIFIED"), s("b"), rv_of(&updated).to_string()),
            // A deletion's event carries the deletion's revision.
            (s("DELETED"), s("b"), deleted_rv),
        ]
    );
    // A watch of another namespace sees none of it.
    let other = RequestContext {
        namespace: "other".into(),
        ..ctx()
    };
    let watcher = store.watch(&other, WatchOptions::default()).await.unwrap();
    assert!(watcher.initial.is_empty());
}

#[tokio::test]
async fn watch_resumes_after_a_resource_version() {
    let fixture = Fixture::new().await;
    let store = fixture.store("", "configmaps");
    let first = store
        .create(&ctx(), configmap("a", json!({})))
        .await
        .unwrap();
    let second = store
        .create(&ctx(), configmap("b", json!({})))
        .await
        .unwrap();
    let third = store
        .create(&ctx(), configmap("c", json!({})))
        .await
        .unwrap();
    let mut watcher = store
        .watch(
            &ctx(),
            WatchOptions {
                resource_version: Some(rv_of(&first)),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    // Resuming replays what came after (from the cache's history), and no
    // state before.
    let s = |v: &str| v.to_string();
    let mut replayed: Vec<_> = watcher.initial.iter().map(event).collect();
    let pending = 2 - replayed.len();
    replayed.extend(next_events(&mut watcher, pending).await);
    assert_eq!(
        replayed,
        vec![
            (s("ADDED"), s("b"), rv_of(&second).to_string()),
            (s("ADDED"), s("c"), rv_of(&third).to_string()),
        ]
    );
}

/// The watch cache's `getAllEventsSinceLocked`: a resourceVersion older than
/// the history kept is `NewResourceExpired("too old resource version: %d
/// (%d)")`, the second number the oldest event's revision less one.
#[tokio::test]
async fn watch_from_a_revision_older_than_the_history_is_410_expired() {
    let fixture = Fixture::with_options(StoreOptions {
        history_limit: 2,
        ..Default::default()
    })
    .await;
    let store = fixture.store("", "configmaps");
    let first = store
        .create(&ctx(), configmap("a", json!({})))
        .await
        .unwrap();
    let mut last = first.clone();
    for name in ["b", "c", "d"] {
        last = store
            .create(&ctx(), configmap(name, json!({})))
            .await
            .unwrap();
    }
    let err = match store
        .watch(
            &ctx(),
            WatchOptions {
                resource_version: Some(rv_of(&first)),
                ..Default::default()
            },
        )
        .await
    {
        Ok(_) => panic!("a watch from a compacted revision started"),
        Err(err) => err,
    };
    // History keeps the last two events (c, d): the oldest is d's minus one.
    let oldest_kept = rv_of(&last) - 1;
    assert_eq!(
        (err.code(), err.reason(), err.status().message.clone()),
        (
            410,
            "Expired",
            format!(
                "too old resource version: {} ({})",
                rv_of(&first),
                oldest_kept - 1
            )
        )
    );
}
