//! ValidatingAdmissionPolicy and its bindings, black-box with kubectl:
//! policies deny (with upstream's message and code), warn, select by
//! namespace labels, read parameters, guard deletes of custom resources, and
//! refuse expressions that do not compile.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use testkit::{Server, eventually};

/// Run `create -f -` until it fails (policies are compiled moments after they
/// are written); its stderr.
fn refused(server: &Server, manifest: &str) -> String {
    eventually("refused", || {
        let out = server.kubectl_with_stdin(&["create", "-f", "-"], Some(manifest));
        if !out.status.success() {
            return Some(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        // Created before the policy was in force: remove it and try again.
        server.kubectl_with_stdin(&["delete", "-f", "-"], Some(manifest));
        None
    })
}

const SMALL_CONFIGMAPS: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: small-configmaps.example.com}
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["configmaps"]
  validations:
  - expression: "!has(object.data) || size(object.data) <= 2"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: small-configmaps-binding}
spec:
  policyName: small-configmaps.example.com
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels: {environment: test}
"#;

fn configmap(namespace: &str, keys: usize) -> String {
    let data: Vec<String> = (0..keys).map(|i| format!("k{i}: v")).collect();
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: big, namespace: {namespace}}}\ndata: {{{}}}\n",
        data.join(", ")
    )
}

#[test]
fn a_binding_denies_in_the_namespaces_it_selects() {
    let server = Server::builder().start().unwrap();
    server.apply(
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: test, labels: {environment: test}}\n",
    );
    server.apply(SMALL_CONFIGMAPS);
    let err = refused(&server, &configmap("test", 3));
    assert!(
        err.contains("ValidatingAdmissionPolicy 'small-configmaps.example.com' with binding 'small-configmaps-binding' denied request: failed expression: !has(object.data) || size(object.data) <= 2"),
        "{err}"
    );
    // 422 Invalid by default, as upstream.
    let raw = server.kubectl_with_stdin(
        &["create", "--raw", "/api/v1/namespaces/test/configmaps", "-f", "-"],
        Some(r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"raw"},"data":{"a":"1","b":"2","c":"3"}}"#),
    );
    let raw_err = String::from_utf8_lossy(&raw.stderr);
    assert!(
        raw_err.contains("The configmaps \"raw\" is invalid: : ValidatingAdmissionPolicy"),
        "{raw_err}"
    );
    // Small enough, or in a namespace the binding does not select: admitted.
    server.apply(&configmap("test", 2));
    server.apply(&configmap("default", 3));
    // Policy objects are listed with upstream's columns.
    let table = server.kubectl_ok(&["get", "validatingadmissionpolicies"]);
    assert!(
        table.contains("VALIDATIONS") && table.contains("PARAMKIND"),
        "{table}"
    );
    assert!(
        table.contains("small-configmaps.example.com   1             <unset>"),
        "{table}"
    );
}

#[test]
fn parameters_messages_reasons_and_warnings() {
    let server = Server::builder().start().unwrap();
    server.apply(
        r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: naming, namespace: default}
data: {prefix: team-}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: naming.example.com}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["serviceaccounts"]
  matchConditions:
  - name: not-default
    expression: "object.metadata.name != 'default'"
  variables:
  - name: prefix
    expression: "params.data.prefix"
  validations:
  - expression: "object.metadata.name.startsWith(variables.prefix)"
    messageExpression: "'name must start with ' + variables.prefix"
    reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: naming-deny}
spec:
  policyName: naming.example.com
  validationActions: [Deny]
  paramRef: {name: naming, namespace: default, parameterNotFoundAction: Deny}
  matchResources:
    namespaceSelector:
      matchLabels: {kubernetes.io/metadata.name: default}
"#,
    );
    let err = refused(
        &server,
        "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: robot, namespace: default}\n",
    );
    assert!(
        err.contains("ValidatingAdmissionPolicy 'naming.example.com' with binding 'naming-deny' denied request: name must start with team-"),
        "{err}"
    );
    assert!(err.contains("Error from server (Forbidden)"), "{err}");
    server.apply(
        "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: team-robot, namespace: default}\n",
    );

    // A Warn binding in another namespace: admitted, with a warning.
    server.apply(
        r#"
apiVersion: v1
kind: Namespace
metadata: {name: relaxed}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: naming-warn}
spec:
  policyName: naming.example.com
  validationActions: [Warn]
  paramRef: {name: naming, namespace: default, parameterNotFoundAction: Deny}
  matchResources:
    namespaceSelector:
      matchLabels: {kubernetes.io/metadata.name: relaxed}
"#,
    );
    eventually("a warning", || {
        let out = server.kubectl_with_stdin(
            &["create", "-f", "-"],
            Some("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: robot, namespace: relaxed}\n"),
        );
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        if stderr.contains("Warning: Validation failed for ValidatingAdmissionPolicy 'naming.example.com' with binding 'naming-warn': name must start with team-") {
            return Some(());
        }
        server.kubectl_ok(&["delete", "serviceaccount", "robot", "-n", "relaxed"]);
        None
    });

    // The parameter gone: the Deny binding refuses everything it matches.
    server.kubectl_ok(&["delete", "configmap", "naming"]);
    let err = refused(
        &server,
        "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: team-other, namespace: default}\n",
    );
    assert!(
        err.contains("no params found for policy binding with `Deny` parameterNotFoundAction"),
        "{err}"
    );
}

#[test]
fn deletes_of_custom_resources_are_guarded() {
    let server = Server::builder().start().unwrap();
    server.apply(
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: vaults.policy.example.com}
spec:
  group: policy.example.com
  scope: Namespaced
  names: {plural: vaults, singular: vault, kind: Vault}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: protected.example.com}
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: ["policy.example.com"]
      apiVersions: ["*"]
      operations: ["DELETE"]
      resources: ["*"]
  validations:
  - expression: "!has(oldObject.metadata.labels) || !('protected' in oldObject.metadata.labels)"
    message: protected vaults cannot be deleted
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: protected}
spec:
  policyName: protected.example.com
  validationActions: [Deny]
"#,
    );
    server.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/vaults.policy.example.com",
        "--timeout=10s",
    ]);
    server.apply(
        "apiVersion: policy.example.com/v1\nkind: Vault\nmetadata: {name: gold, labels: {protected: \"yes\"}}\n---\napiVersion: policy.example.com/v1\nkind: Vault\nmetadata: {name: tin}\n",
    );
    let err = eventually("gold protected", || {
        let out = server.kubectl(&["delete", "vault", "gold"]);
        if !out.status.success() {
            return Some(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        server.apply(
            "apiVersion: policy.example.com/v1\nkind: Vault\nmetadata: {name: gold, labels: {protected: \"yes\"}}\n",
        );
        None
    });
    assert!(
        err.contains("The vaults \"gold\" is invalid: : ValidatingAdmissionPolicy 'protected.example.com' with binding 'protected' denied request: protected vaults cannot be deleted"),
        "{err}"
    );
    server.kubectl_ok(&["delete", "vault", "tin"]);
}

#[test]
fn policies_whose_expressions_do_not_compile_are_refused() {
    let server = Server::builder().start().unwrap();
    let out = server.kubectl_with_stdin(
        &["create", "-f", "-"],
        Some(
            r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: broken.example.com}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}
  validations:
  - expression: "object.x in [1, 2, "
  - expression: "objects.x == 1"
"#,
        ),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains(r#"spec.validations[0].expression: Invalid value: "object.x in [1, 2, ": compilation failed: ERROR: <input>:1:20: Syntax error: missing ']' at '<EOF>'"#),
        "{err}"
    );
    assert!(
        err.contains("spec.validations[1].expression: Invalid value: \"objects.x == 1\": compilation failed: ERROR: <input>:1:1: undeclared reference to 'objects' (in container '')"),
        "{err}"
    );
    // Structural errors, with upstream's messages.
    let out = server.kubectl_with_stdin(
        &["create", "-f", "-"],
        Some(
            "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata: {name: b}\nspec: {policyName: p}\n",
        ),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "spec.validationActions: Required value: at least one validation action is required"
        ),
        "{err}"
    );
}

/// The `authorizer` variable asks the server's authorizer (RBAC) about the
/// requesting user.
#[test]
fn the_authorizer_variable_asks_rbac() {
    let server = Server::builder().start().unwrap();
    server.apply(
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: configmap-writer, namespace: default}
rules:
- {apiGroups: [""], resources: ["configmaps"], verbs: ["create", "get", "list"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-writes, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: configmap-writer}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: secret-readers-only.example.com}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}
  validations:
  - expression: "authorizer.group('').resource('secrets').namespace(object.metadata.namespace).check('list').allowed()"
    messageExpression: "'only secret readers may create configmaps, not ' + request.userInfo.username"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: secret-readers-only}
spec:
  policyName: secret-readers-only.example.com
  validationActions: [Deny]
"#,
    );
    server.wait_until_allowed(&["create", "configmaps", "--as", "alice"]);
    let manifest =
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-alice, namespace: default}\n";
    let err = eventually("alice refused", || {
        let out =
            server.kubectl_with_stdin(&["create", "--as", "alice", "-f", "-"], Some(manifest));
        if !out.status.success() {
            return Some(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        server.kubectl_ok(&["delete", "configmap", "from-alice"]);
        None
    });
    assert!(
        err.contains("denied request: only secret readers may create configmaps, not alice"),
        "{err}"
    );
    // The admin may list secrets: admitted.
    server.apply(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-admin, namespace: default}\n",
    );
}

/// `Audit` actions and `auditAnnotations` land in the request's audit event
/// (upstream's keys: `validation.policy.admission.k8s.io/validation_failure`,
/// `<policy>/<key>`).
#[test]
fn audit_actions_and_annotations_are_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("audit.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  resources: [{group: \"\", resources: [\"configmaps\"]}]\n",
    )
    .unwrap();
    let log = dir.path().join("audit.log");
    let server = Server::builder()
        .arg(format!("--audit-policy-file={}", policy.display()))
        .arg(format!("--audit-log-path={}", log.display()))
        .start()
        .unwrap();
    server.apply(
        r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: tidy-configmaps.example.com}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}
  validations:
  - expression: "!has(object.data) || !('junk' in object.data)"
    message: no junk
  auditAnnotations:
  - key: size
    valueExpression: "has(object.data) ? string(size(object.data)) : null"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: tidy-configmaps}
spec:
  policyName: tidy-configmaps.example.com
  validationActions: [Audit]
"#,
    );
    // Audit only: admitted, recorded. Retry until the policy is in force.
    let event = eventually("the audit record", || {
        server.kubectl_ok(&["create", "configmap", "junky", "--from-literal=junk=1"]);
        let events: Vec<serde_json::Value> = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let found = events.into_iter().find(|e| {
            e["verb"] == "create"
                && e["stage"] == "ResponseComplete"
                && e["annotations"]["tidy-configmaps.example.com/size"] == "1"
        });
        if found.is_none() {
            server.kubectl_ok(&["delete", "configmap", "junky"]);
        }
        found
    });
    let failure: serde_json::Value = serde_json::from_str(
        event["annotations"]["validation.policy.admission.k8s.io/validation_failure"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        failure,
        serde_json::json!([{"expressionIndex": 0, "message": "no junk",
            "validationActions": ["Audit"], "binding": "tidy-configmaps",
            "policy": "tidy-configmaps.example.com"}])
    );
}

/// A policy's status once its type checking is written.
fn type_checked_status(server: &Server, policy: &str) -> serde_json::Value {
    let status = eventually("type checking", || {
        let out = server.kubectl_ok(&[
            "get",
            "validatingadmissionpolicy",
            policy,
            "-o",
            "jsonpath={.status}",
        ]);
        out.contains("typeChecking").then_some(out)
    });
    serde_json::from_str(&status).unwrap()
}

/// A policy that names a custom resource explicitly is type-checked against
/// its schema: what the schema lacks is reported in `status.typeChecking`
/// (the policy still serves), with the generation observed.
#[test]
fn type_checking_warnings_name_what_the_schema_lacks() {
    let server = Server::builder().start().unwrap();
    server.apply(
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gauges.policy.example.com}
spec:
  group: policy.example.com
  scope: Namespaced
  names: {plural: gauges, singular: gauge, kind: Gauge}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {replicas: {type: integer}}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: gauges.example.com}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: ["policy.example.com"], apiVersions: ["v1"], operations: ["CREATE"], resources: ["gauges"]}
  validations:
  - expression: "object.spec.replicas < 10 && object.metadata.name != ''"
  - expression: "object.spec.replicaz > 1"
"#,
    );
    let status = type_checked_status(&server, "gauges.example.com");
    assert_eq!(status["observedGeneration"], 1, "{status}");
    let warnings = status["typeChecking"]["expressionWarnings"]
        .as_array()
        .unwrap();
    assert_eq!(warnings.len(), 1, "{status}");
    assert_eq!(warnings[0]["fieldRef"], "spec.validations[1].expression");
    assert_eq!(
        warnings[0]["warning"],
        "policy.example.com/v1, Kind=Gauge: ERROR: <input>:1:12: undefined field 'replicaz'\n | object.spec.replicaz > 1\n | ...........^"
    );

    // Built-in kinds too, from their OpenAPI schemas.
    server.apply(
        r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: configmaps.example.com}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}
  validations:
  - expression: "!has(object.data) || object.data.size() < 5"
  - expression: "object.dat.size() > 0"
"#,
    );
    let status = type_checked_status(&server, "configmaps.example.com");
    assert_eq!(
        status["typeChecking"]["expressionWarnings"],
        serde_json::json!([{"fieldRef": "spec.validations[1].expression",
            "warning": "v1, Kind=ConfigMap: ERROR: <input>:1:7: undefined field 'dat'\n | object.dat.size() > 0\n | ......^"}])
    );
}

/// `matchPolicy: Equivalent` (the default) matches a request made through
/// another served version of the named resource, and evaluates the object as
/// the named version; `Exact` does not match.
#[test]
fn equivalent_versions_match_unless_exact() {
    let server = Server::builder().start().unwrap();
    let policy = |name: &str, match_policy: &str| {
        format!(
            r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {{name: {name}}}
spec:
  matchConstraints:
    matchPolicy: {match_policy}
    resourceRules:
    - {{apiGroups: ["policy.example.com"], apiVersions: ["v1"], operations: ["CREATE"], resources: ["dials"]}}
  validations:
  - expression: "object.metadata.name != 'forbidden-' + '{match_policy}'.lowerAscii()"
    messageExpression: "'{match_policy} matched, as ' + object.apiVersion"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {{name: {name}}}
spec:
  policyName: {name}
  validationActions: [Deny]
"#
        )
    };
    server.apply(
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: dials.policy.example.com}
spec:
  group: policy.example.com
  scope: Namespaced
  names: {plural: dials, singular: dial, kind: Dial}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
  - {name: v2, served: true, storage: false, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
"#,
    );
    server.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/dials.policy.example.com",
        "--timeout=10s",
    ]);
    server.apply(&policy("exact.example.com", "Exact"));
    server.apply(&policy("equivalent.example.com", "Equivalent"));
    let dial = |name: &str| {
        format!(
            "apiVersion: policy.example.com/v2\nkind: Dial\nmetadata: {{name: {name}, namespace: default}}\n"
        )
    };
    let err = refused(&server, &dial("forbidden-equivalent"));
    // Evaluated on the object as the matched version (v1) presents it.
    assert!(
        err.contains("Equivalent matched, as policy.example.com/v1"),
        "{err}"
    );
    // Once the Equivalent policy is in force the Exact one (written first)
    // is too; through v2 it does not match.
    server.apply(&dial("forbidden-exact"));
}
