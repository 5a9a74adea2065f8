//! Table tests for strategic merge patch with the shapes kubectl and
//! controllers send. Expected orders follow upstream's algorithm (new items
//! a patch adds go first unless `$setElementOrder` says otherwise).

use kubext_patch::{PatchError, PatchSchema, Strategy, builtin_schema, common_schema, strategic};
use serde_json::{Value, json};

enum Want {
    Doc(Value),
    Err(PatchError),
}

struct Case {
    name: &'static str,
    schema: PatchSchema,
    doc: Value,
    patch: Value,
    want: Want,
}

/// Pod-like metadata for container tests (kubext does not serve Pods; the
/// tags are those of k8s.io/api core/v1).
fn pod_schema() -> PatchSchema {
    common_schema()
        .list("spec.containers", Strategy::Merge, "name")
        .list("spec.containers.env", Strategy::Merge, "name")
        .list("spec.containers.ports", Strategy::Merge, "containerPort")
        .field(
            "spec.volumes",
            kubext_patch::FieldMeta {
                retain_keys: true,
                ..kubext_patch::FieldMeta::merge("name")
            },
        )
}

fn deployment_schema() -> PatchSchema {
    common_schema().retain_keys("spec.strategy").list(
        "spec.template.spec.containers",
        Strategy::Merge,
        "name",
    )
}

fn cm(meta: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}})
}

fn pod(containers: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": containers}})
}

fn svc(ports: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
        "spec": {"type": "ClusterIP", "selector": {"app": "a"}, "ports": ports}
    })
}

fn invalid(msg: &str) -> Want {
    Want::Err(PatchError::Invalid(msg.into()))
}

fn malformed(msg: &str) -> Want {
    Want::Err(PatchError::Malformed(msg.into()))
}

#[allow(clippy::too_many_lines)]
fn cases() -> Vec<Case> {
    let cm_schema = || builtin_schema("", "v1", "ConfigMap");
    let svc_schema = || builtin_schema("", "v1", "Service");
    let c = |name, schema, doc, patch, want| Case {
        name,
        schema,
        doc,
        patch,
        want,
    };
    vec![
        c(
            "kubectl label",
            cm_schema(),
            cm(json!({"name": "x", "labels": {"a": "1"}})),
            json!({"metadata": {"labels": {"b": "2"}}}),
            Want::Doc(cm(json!({"name": "x", "labels": {"a": "1", "b": "2"}}))),
        ),
        c(
            "null deletes a label",
            cm_schema(),
            cm(json!({"name": "x", "labels": {"a": "1", "b": "2"}})),
            json!({"metadata": {"labels": {"b": null}}}),
            Want::Doc(cm(json!({"name": "x", "labels": {"a": "1"}}))),
        ),
        c(
            "finalizers are a set union; new items go first",
            cm_schema(),
            cm(json!({"name": "x", "finalizers": ["a", "b"]})),
            json!({"metadata": {"finalizers": ["c", "a"]}}),
            Want::Doc(cm(json!({"name": "x", "finalizers": ["c", "a", "b"]}))),
        ),
        c(
            "finalizer already present keeps live order",
            cm_schema(),
            cm(json!({"name": "x", "finalizers": ["a", "b"]})),
            json!({"metadata": {"finalizers": ["b"]}}),
            Want::Doc(cm(json!({"name": "x", "finalizers": ["a", "b"]}))),
        ),
        c(
            "kubectl add finalizer with $setElementOrder",
            cm_schema(),
            cm(json!({"name": "x", "finalizers": ["a", "b"]})),
            json!({"metadata": {"$setElementOrder/finalizers": ["a", "b", "c"], "finalizers": ["c"]}}),
            Want::Doc(cm(json!({"name": "x", "finalizers": ["a", "b", "c"]}))),
        ),
        c(
            "kubectl remove finalizer with $deleteFromPrimitiveList",
            cm_schema(),
            cm(json!({"name": "x", "finalizers": ["a", "b", "c"]})),
            json!({"metadata": {
                "$setElementOrder/finalizers": ["a", "c"],
                "$deleteFromPrimitiveList/finalizers": ["b"]
            }}),
            Want::Doc(cm(json!({"name": "x", "finalizers": ["a", "c"]}))),
        ),
        c(
            "$deleteFromPrimitiveList alone",
            cm_schema(),
            cm(json!({"name": "x", "finalizers": ["a", "b"]})),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a", "zzz"]}}),
            Want::Doc(cm(json!({"name": "x", "finalizers": ["b"]}))),
        ),
        c(
            "$setElementOrder alone reorders",
            cm_schema(),
            cm(json!({"name": "x", "finalizers": ["a", "b"]})),
            json!({"metadata": {"$setElementOrder/finalizers": ["b", "a"]}}),
            Want::Doc(cm(json!({"name": "x", "finalizers": ["b", "a"]}))),
        ),
        c(
            "$setElementOrder for a list the object lacks",
            cm_schema(),
            cm(json!({"name": "x"})),
            json!({"metadata": {"$setElementOrder/finalizers": ["b", "a"], "finalizers": ["b", "a"]}}),
            Want::Doc(cm(json!({"name": "x", "finalizers": ["b", "a"]}))),
        ),
        c(
            "$setElementOrder with nothing to order is dropped",
            cm_schema(),
            cm(json!({"name": "x"})),
            json!({"metadata": {"$setElementOrder/finalizers": ["a"]}}),
            Want::Doc(cm(json!({"name": "x"}))),
        ),
        c(
            "$setElementOrder that disagrees with the patch list",
            cm_schema(),
            cm(json!({"name": "x", "finalizers": ["a", "b"]})),
            json!({"metadata": {"$setElementOrder/finalizers": ["a", "b"], "finalizers": ["c"]}}),
            invalid(
                "The order in patch list:\n[c]\n doesn't match $setElementOrder list:\n[a b]\n",
            ),
        ),
        c(
            "ownerReferences merge by uid",
            cm_schema(),
            cm(json!({"name": "x", "ownerReferences": [
                {"uid": "1", "name": "a", "kind": "K"},
                {"uid": "2", "name": "b", "kind": "K"}
            ]})),
            json!({"metadata": {"ownerReferences": [{"uid": "2", "controller": true}]}}),
            Want::Doc(cm(json!({"name": "x", "ownerReferences": [
                {"uid": "1", "name": "a", "kind": "K"},
                {"uid": "2", "name": "b", "kind": "K", "controller": true}
            ]}))),
        ),
        c(
            "ownerReference deleted with $patch: delete",
            cm_schema(),
            cm(json!({"name": "x", "ownerReferences": [{"uid": "1"}, {"uid": "2"}]})),
            json!({"metadata": {"ownerReferences": [{"uid": "1", "$patch": "delete"}]}}),
            Want::Doc(cm(json!({"name": "x", "ownerReferences": [{"uid": "2"}]}))),
        ),
        c(
            "managedFields are atomic",
            cm_schema(),
            cm(json!({"name": "x", "managedFields": [{"manager": "a"}, {"manager": "b"}]})),
            json!({"metadata": {"managedFields": [{"manager": "c"}]}}),
            Want::Doc(cm(
                json!({"name": "x", "managedFields": [{"manager": "c"}]}),
            )),
        ),
        c(
            "service ports merge by port",
            svc_schema(),
            svc(json!([
                {"name": "http", "port": 80, "targetPort": 8080},
                {"name": "https", "port": 443}
            ])),
            json!({"spec": {"ports": [{"port": 80, "targetPort": 9090}, {"name": "alt", "port": 8443}]}}),
            Want::Doc(svc(json!([
                {"name": "http", "port": 80, "targetPort": 9090},
                {"name": "alt", "port": 8443},
                {"name": "https", "port": 443}
            ]))),
        ),
        c(
            "service port deleted with $patch: delete",
            svc_schema(),
            svc(json!([{"name": "http", "port": 80}, {"name": "https", "port": 443}])),
            json!({"spec": {"ports": [{"port": 443, "$patch": "delete"}]}}),
            Want::Doc(svc(json!([{"name": "http", "port": 80}]))),
        ),
        c(
            "service ports replaced with $patch: replace",
            svc_schema(),
            svc(json!([{"name": "http", "port": 80}, {"name": "https", "port": 443}])),
            json!({"spec": {"ports": [{"$patch": "replace"}, {"name": "dns", "port": 53}]}}),
            Want::Doc(svc(json!([{"name": "dns", "port": 53}]))),
        ),
        c(
            "service port without merge key",
            svc_schema(),
            svc(json!([{"name": "http", "port": 80}])),
            json!({"spec": {"ports": [{"name": "x"}]}}),
            invalid("map: map[name:x] does not contain declared merge key: port"),
        ),
        c(
            "status.conditions merge by type",
            svc_schema(),
            json!({"status": {"conditions": [
                {"type": "Ready", "status": "False"},
                {"type": "X", "status": "True"}
            ]}}),
            json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
            Want::Doc(json!({"status": {"conditions": [
                {"type": "Ready", "status": "True"},
                {"type": "X", "status": "True"}
            ]}})),
        ),
        c(
            "containers merge by name with $patch: delete",
            pod_schema(),
            pod(json!([
                {"name": "app", "image": "app:v1"},
                {"name": "sidecar", "image": "side:v1"}
            ])),
            json!({"spec": {"containers": [
                {"name": "sidecar", "$patch": "delete"},
                {"name": "app", "image": "app:v2"}
            ]}}),
            Want::Doc(pod(json!([{"name": "app", "image": "app:v2"}]))),
        ),
        c(
            "nested env merges by name; the new item goes first",
            pod_schema(),
            pod(json!([{"name": "app", "env": [{"name": "A", "value": "1"}]}])),
            json!({"spec": {"containers": [{"name": "app", "env": [{"name": "B", "value": "2"}]}]}}),
            Want::Doc(pod(json!([{"name": "app", "env": [
                {"name": "B", "value": "2"},
                {"name": "A", "value": "1"}
            ]}]))),
        ),
        c(
            "kubectl apply-style $setElementOrder/containers",
            pod_schema(),
            pod(json!([{"name": "app", "image": "a:1"}, {"name": "side", "image": "s:1"}])),
            json!({"spec": {
                "$setElementOrder/containers": [{"name": "app"}, {"name": "new"}, {"name": "side"}],
                "containers": [{"name": "new", "image": "n:1"}, {"name": "side", "image": "s:2"}]
            }}),
            Want::Doc(pod(json!([
                {"name": "app", "image": "a:1"},
                {"name": "new", "image": "n:1"},
                {"name": "side", "image": "s:2"}
            ]))),
        ),
        c(
            // Upstream deletes in place in the live list's backing array, so
            // the server order `$setElementOrder` consults has shifted: `d`
            // ends up before the new `c`.
            "$setElementOrder after an in-place delete follows upstream",
            pod_schema(),
            pod(json!([{"name": "a"}, {"name": "b", "image": "b"}, {"name": "d", "image": "d"}])),
            json!({"spec": {
                "$setElementOrder/containers": [{"name": "b"}, {"name": "c"}],
                "containers": [{"name": "c"}, {"name": "a", "$patch": "delete"}]
            }}),
            Want::Doc(pod(json!([
                {"name": "b", "image": "b"},
                {"name": "d", "image": "d"},
                {"name": "c"}
            ]))),
        ),
        c(
            "container null field deletes it",
            pod_schema(),
            pod(json!([{"name": "app", "image": "a:1", "command": ["x"]}])),
            json!({"spec": {"containers": [{"name": "app", "command": null}]}}),
            Want::Doc(pod(json!([{"name": "app", "image": "a:1"}]))),
        ),
        c(
            "$patch: merge is rejected in lists",
            pod_schema(),
            pod(json!([{"name": "app"}])),
            json!({"spec": {"containers": [{"$patch": "merge"}]}}),
            invalid("merging lists cannot yet be specified in the patch"),
        ),
        c(
            "$patch: replace on a map",
            cm_schema(),
            cm(json!({"name": "x", "labels": {"a": "1", "b": "2"}})),
            json!({"metadata": {"labels": {"$patch": "replace", "z": "9"}}}),
            Want::Doc(cm(json!({"name": "x", "labels": {"z": "9"}}))),
        ),
        c(
            "$patch: delete on a map empties it",
            cm_schema(),
            cm(json!({"name": "x", "annotations": {"a": "1"}})),
            json!({"metadata": {"annotations": {"$patch": "delete"}}}),
            Want::Doc(cm(json!({"name": "x", "annotations": {}}))),
        ),
        c(
            "$patch: delete map for a missing field is dropped",
            cm_schema(),
            cm(json!({"name": "x"})),
            json!({"metadata": {"annotations": {"$patch": "delete"}}}),
            Want::Doc(cm(json!({"name": "x"}))),
        ),
        c(
            "$patch: merge is rejected in maps",
            cm_schema(),
            cm(json!({"name": "x", "labels": {}})),
            json!({"metadata": {"labels": {"$patch": "merge"}}}),
            invalid("unknown patch type: merge in map: map[$patch:merge]"),
        ),
        c(
            "$retainKeys drops unlisted live keys",
            deployment_schema(),
            json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}),
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
            Want::Doc(json!({"spec": {"strategy": {"type": "Recreate"}}})),
        ),
        c(
            "$retainKeys must list every patched key",
            deployment_schema(),
            json!({"spec": {"strategy": {"type": "RollingUpdate"}}}),
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}}),
            malformed("invalid patch format of retainKeys"),
        ),
        c(
            "$retainKeys must be a list",
            deployment_schema(),
            json!({"spec": {"strategy": {"type": "RollingUpdate"}}}),
            json!({"spec": {"strategy": {"$retainKeys": "type"}}}),
            malformed("invalid patch format of retainKeys"),
        ),
        c(
            "retainKeys merge list item (volumes)",
            pod_schema(),
            json!({"spec": {"volumes": [{"name": "v", "emptyDir": {}}]}}),
            json!({"spec": {"volumes": [{"name": "v", "$retainKeys": ["name", "secret"], "secret": {"secretName": "s"}}]}}),
            Want::Doc(json!({"spec": {"volumes": [{"name": "v", "secret": {"secretName": "s"}}]}})),
        ),
        c(
            "malformed $deleteFromPrimitiveList key",
            cm_schema(),
            cm(json!({"name": "x", "finalizers": ["a"]})),
            json!({"metadata": {"$deleteFromPrimitiveList": ["a"]}}),
            malformed("invalid patch format of primitive list"),
        ),
        c(
            "malformed $setElementOrder key",
            cm_schema(),
            cm(json!({"name": "x", "finalizers": ["a"]})),
            json!({"metadata": {"$setElementOrderfinalizers": ["a"]}}),
            malformed("invalid patch format of setElementOrder list"),
        ),
        c(
            "atomic list (Endpoints subsets) is replaced",
            builtin_schema("", "v1", "Endpoints"),
            json!({"subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]}),
            json!({"subsets": [{"addresses": [{"ip": "10.0.0.2"}]}]}),
            Want::Doc(json!({"subsets": [{"addresses": [{"ip": "10.0.0.2"}]}]})),
        ),
        c(
            "EndpointSlice lists are atomic",
            builtin_schema("discovery.k8s.io", "v1", "EndpointSlice"),
            json!({"endpoints": [{"addresses": ["10.0.0.1"]}], "ports": [{"port": 80}]}),
            json!({"endpoints": [{"addresses": ["10.0.0.2"]}]}),
            Want::Doc(json!({"endpoints": [{"addresses": ["10.0.0.2"]}], "ports": [{"port": 80}]})),
        ),
        c(
            "ServiceAccount secrets merge by name, imagePullSecrets are atomic",
            builtin_schema("", "v1", "ServiceAccount"),
            json!({"secrets": [{"name": "a"}], "imagePullSecrets": [{"name": "p"}]}),
            json!({"secrets": [{"name": "b"}], "imagePullSecrets": [{"name": "q"}]}),
            Want::Doc(
                json!({"secrets": [{"name": "b"}, {"name": "a"}], "imagePullSecrets": [{"name": "q"}]}),
            ),
        ),
        c(
            "Namespace spec.finalizers are atomic",
            builtin_schema("", "v1", "Namespace"),
            json!({"spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}),
            json!({"spec": {"finalizers": []}}),
            Want::Doc(json!({"spec": {"finalizers": []}, "status": {"phase": "Active"}})),
        ),
        c(
            "Lease spec scalars",
            builtin_schema("coordination.k8s.io", "v1", "Lease"),
            json!({"spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}),
            json!({"spec": {"holderIdentity": "b", "renewTime": "2024-01-01T00:00:00.000000Z"}}),
            Want::Doc(json!({"spec": {
                "holderIdentity": "b", "leaseDurationSeconds": 15,
                "renewTime": "2024-01-01T00:00:00.000000Z"
            }})),
        ),
        c(
            "new nested values lose their nulls",
            cm_schema(),
            cm(json!({"name": "x"})),
            json!({"spec": {"a": null, "b": {"c": null, "d": 1}}}),
            Want::Doc(json!({
                "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},
                "data": {"k": "v"}, "spec": {"b": {"d": 1}}
            })),
        ),
        c(
            "directives in new values never leak",
            deployment_schema(),
            json!({"spec": {"replicas": 1}}),
            json!({"spec": {"template": {"spec": {
                "$setElementOrder/containers": [{"name": "a"}],
                "containers": [{"name": "a", "$retainKeys": ["name"]}, {"name": "gone", "$patch": "delete"}]
            }}}}),
            Want::Doc(
                json!({"spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "a"}]}}}}),
            ),
        ),
        c(
            "type change replaces",
            cm_schema(),
            json!({"data": {"k": "v"}}),
            json!({"data": ["x"]}),
            Want::Doc(json!({"data": ["x"]})),
        ),
        c(
            "list element types must agree",
            cm_schema(),
            cm(json!({"name": "x", "finalizers": ["a"]})),
            json!({"metadata": {"finalizers": [1]}}),
            invalid("list element types are not identical: [[a] [1]]"),
        ),
        c(
            "lists of lists are unprocessable",
            cm_schema(),
            cm(json!({"name": "x", "finalizers": []})),
            json!({"metadata": {"finalizers": [["a"]]}}),
            Want::Err(PatchError::Failed(
                "lists of lists are not supported".into(),
            )),
        ),
        c(
            "empty patch",
            cm_schema(),
            cm(json!({"name": "x"})),
            json!({}),
            Want::Doc(cm(json!({"name": "x"}))),
        ),
        c(
            "null patch",
            cm_schema(),
            cm(json!({"name": "x"})),
            Value::Null,
            Want::Doc(cm(json!({"name": "x"}))),
        ),
        c(
            "patch must be an object",
            cm_schema(),
            cm(json!({"name": "x"})),
            json!(["x"]),
            malformed("json: cannot unmarshal array into Go value of type map[string]interface {}"),
        ),
        c(
            "whole-object $patch: delete",
            cm_schema(),
            cm(json!({"name": "x"})),
            json!({"$patch": "delete"}),
            Want::Doc(json!({})),
        ),
    ]
}

#[test]
fn table() {
    for case in cases() {
        let got = strategic::apply(&case.doc, &case.patch, &case.schema);
        match (&case.want, got) {
            (Want::Doc(want), Ok(got)) => assert_eq!(&got, want, "{}", case.name),
            (Want::Err(want), Err(got)) => assert_eq!(&got, want, "{}", case.name),
            (_, got) => panic!("{}: unexpected {got:?}", case.name),
        }
    }
}

#[test]
fn error_statuses() {
    let schema = builtin_schema("", "v1", "ConfigMap");
    let doc = cm(json!({"name": "x", "finalizers": ["a"]}));
    let status = |patch: Value| {
        strategic::apply(&doc, &patch, &schema)
            .map(|_| 200)
            .unwrap_or_else(|e| e.http_status())
    };
    assert_eq!(
        status(json!({"metadata": {"$deleteFromPrimitiveList": []}})),
        400
    );
    assert_eq!(status(json!({"metadata": {"finalizers": [1]}})), 500);
    assert_eq!(status(json!({"metadata": {"labels": {"a": "b"}}})), 200);
}

#[test]
fn bytes_entry_point() {
    let schema = builtin_schema("", "v1", "ConfigMap");
    let doc = cm(json!({"name": "x"}));
    assert!(matches!(
        strategic::apply_slice(&doc, b"{", &schema),
        Err(PatchError::Malformed(_))
    ));
    let got = strategic::apply_slice(&doc, br#"{"data":{"k":"w"}}"#, &schema);
    assert_eq!(got.map(|v| v["data"]["k"].clone()), Ok(json!("w")));
}
