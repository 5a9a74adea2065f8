//! MutatingAdmissionPolicy (`admissionregistration.k8s.io/v1`, as 1.34
//! serves it), black-box with kubectl: a JSON patch labels ConfigMaps, an
//! apply configuration defaults a custom resource's field (merged by the
//! schema's list keys), match conditions pick what is mutated, mutations run
//! before validation (so validating policies see their result), and
//! expressions that do not compile are refused.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use testkit::{Server, eventually};

/// Create `manifest` until `check` holds for the stored object (policies are
/// compiled moments after they are written); the object as JSON.
fn created_until(
    server: &Server,
    kind: &str,
    name: &str,
    manifest: &str,
    check: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    eventually("mutated", || {
        server.apply(manifest);
        let out = server.kubectl_ok(&["get", kind, name, "-o", "json"]);
        let obj: serde_json::Value = serde_json::from_str(&out).unwrap();
        if check(&obj) {
            return Some(obj);
        }
        server.kubectl_ok(&["delete", kind, name]);
        None
    })
}

#[test]
fn json_patches_and_match_conditions() {
    let server = Server::builder().start().unwrap();
    server.apply(
        r#"
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: label-configmaps.example.com}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}
  matchConditions:
  - name: not-excluded
    expression: "!has(object.metadata.labels) || !('skip' in object.metadata.labels)"
  reinvocationPolicy: Never
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: >
        has(object.metadata.labels)
        ? [JSONPatch{op: 'add', path: '/metadata/labels/owner', value: request.userInfo.username}]
        : [JSONPatch{op: 'add', path: '/metadata/labels', value: {'owner': request.userInfo.username}}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: label-configmaps}
spec:
  policyName: label-configmaps.example.com
"#,
    );
    let obj = created_until(
        &server,
        "configmap",
        "labelled",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: labelled, namespace: default}\n",
        |o| o.pointer("/metadata/labels/owner").is_some(),
    );
    assert_eq!(obj["metadata"]["labels"]["owner"], "kubext-admin");
    // The match condition excludes this one.
    server.apply("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: skipped, namespace: default, labels: {skip: \"yes\"}}\n");
    let out = server.kubectl_ok(&[
        "get",
        "configmap",
        "skipped",
        "-o",
        "jsonpath={.metadata.labels}",
    ]);
    assert!(!out.contains("owner"), "{out}");
    // Documented in OpenAPI (kubectl explain), listed with upstream's columns.
    let explained = server.kubectl_ok(&["explain", "mutatingadmissionpolicies.spec.mutations"]);
    assert!(explained.contains("patchType"), "{explained}");
    let table = server.kubectl_ok(&["get", "mutatingadmissionpolicies"]);
    assert!(
        table.contains("MUTATIONS") && table.contains("label-configmaps.example.com   1"),
        "{table}"
    );
}

#[test]
fn apply_configurations_merge_and_run_before_validation() {
    let server = Server::builder().start().unwrap();
    server.apply(
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: fleets.mutate.example.com}
spec:
  group: mutate.example.com
  scope: Namespaced
  names: {plural: fleets, singular: fleet, kind: Fleet}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [replicas]
            properties:
              replicas: {type: integer, minimum: 1}
              ships:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    crew: {type: integer}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: fleet-defaults.example.com}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: ["mutate.example.com"], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["fleets"]}
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        Object{spec: Object.spec{
          replicas: has(object.spec.replicas) ? object.spec.replicas : 2,
          ships: [Object.spec.ships{name: 'flagship', crew: 40}]}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: fleet-defaults}
spec:
  policyName: fleet-defaults.example.com
"#,
    );
    server.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/fleets.mutate.example.com",
        "--timeout=10s",
    ]);
    // `replicas` is required: only the mutation (before validation) lets the
    // object in. The ships list merges by name with what was sent.
    let obj = created_until(
        &server,
        "fleet",
        "armada",
        "apiVersion: mutate.example.com/v1\nkind: Fleet\nmetadata: {name: armada, namespace: default}\nspec: {ships: [{name: scout, crew: 3}]}\n",
        |_| true,
    );
    assert_eq!(obj["spec"]["replicas"], 2, "{obj}");
    let ships: Vec<&str> = obj["spec"]["ships"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(ships, ["scout", "flagship"], "{obj}");
}

#[test]
fn mutating_policies_that_do_not_compile_are_refused() {
    let server = Server::builder().start().unwrap();
    let out = server.kubectl_with_stdin(
        &["create", "-f", "-"],
        Some(
            r#"
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: broken.example.com}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration: {expression: "Deployment{spec: 1}"}
"#,
        ),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("spec.mutations[0].applyConfiguration.expression: Invalid value: \"Deployment{spec: 1}\": compilation failed: ERROR: <input>:1:11: undeclared reference to 'Deployment'"),
        "{err}"
    );
}
