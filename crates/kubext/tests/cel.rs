//! CRD validation rules (`x-kubernetes-validations`), black-box: rules run on
//! create and update with upstream's messages and paths, transition rules on
//! updates only, rules are skipped behind blocking schema errors, a rule that
//! does not compile is refused when the CRD is written, and a real project's
//! CRD (Gateway API) enforces its own rules. Partial: issue 13 continues (type
//! checking, cost, Kubernetes' CEL libraries).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use testkit::Server;

const WIDGETS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.cel.example.com}
spec:
  group: cel.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-validations:
        - rule: "self.metadata.name.startsWith('w-')"
          message: "widget names start with w-"
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: "self.minReplicas <= self.maxReplicas"
              message: "minReplicas must not exceed maxReplicas"
            - rule: "self.maxReplicas != 13"
              # Bounded: a string() of unknown size would exceed the cost budget.
              messageExpression: "'maxReplicas may not be ' + (self.maxReplicas == 13 ? '13' : 'this')"
            - rule: "!has(self.color) || self.color != 'black'"
              fieldPath: ".color"
              reason: FieldValueForbidden
            properties:
              minReplicas: {type: integer}
              maxReplicas: {type: integer}
              color: {type: string, enum: [red, green, black]}
              size:
                type: string
                x-kubernetes-validations:
                - rule: "self == oldSelf"
                  message: "size is immutable"
"#;

/// Waits until the CRD is established. (`kubectl wait` fails at once on the
/// `null` conditions a CRD is created with: tried again until it can wait.)
fn established(server: &Server, crd: &str) {
    let target = format!("crd/{crd}");
    let args = [
        "wait",
        "--for=condition=Established",
        target.as_str(),
        "--timeout=10s",
    ];
    for _ in 0..50 {
        if server.kubectl(&args).status.success() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    server.kubectl_ok(&args);
}

fn widget(name: &str, spec: &str) -> String {
    format!(
        "apiVersion: cel.example.com/v1\nkind: Widget\nmetadata: {{name: {name}, namespace: default}}\nspec: {spec}\n"
    )
}

fn create_err(server: &Server, manifest: &str) -> String {
    let out = server.kubectl_with_stdin(&["create", "-f", "-"], Some(manifest));
    assert!(!out.status.success(), "created: {manifest}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn with_widgets() -> Server {
    let server = Server::builder().start().unwrap();
    server.apply(WIDGETS);
    established(&server, "widgets.cel.example.com");
    server
}

#[test]
fn rules_run_on_create_with_upstreams_messages() {
    let server = with_widgets();
    server.apply(&widget("w-ok", "{minReplicas: 1, maxReplicas: 3}"));
    let err = create_err(
        &server,
        &widget("w-one", "{minReplicas: 5, maxReplicas: 3}"),
    );
    assert!(
        err.contains(r#"The Widget "w-one" is invalid: spec: Invalid value: minReplicas must not exceed maxReplicas"#),
        "{err}"
    );
    let err = create_err(
        &server,
        &widget("w-two", "{minReplicas: 1, maxReplicas: 13, color: black}"),
    );
    assert!(
        err.contains(r#"spec: Invalid value: maxReplicas may not be 13"#),
        "{err}"
    );
    assert!(
        err.contains(
            r#"spec.color: Forbidden: failed rule: !has(self.color) || self.color != 'black'"#
        ),
        "{err}"
    );
    let err = create_err(
        &server,
        &widget("x-three", "{minReplicas: 1, maxReplicas: 2}"),
    );
    assert!(
        err.contains(r#"<nil>: Invalid value: widget names start with w-"#),
        "{err}"
    );
    // An enum violation blocks the rules.
    let err = create_err(
        &server,
        &widget("w-four", "{minReplicas: 5, maxReplicas: 1, color: blue}"),
    );
    assert!(
        err.contains(r#"spec.color: Unsupported value: "blue""#),
        "{err}"
    );
    assert!(
        err.contains("some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"),
        "{err}"
    );
    assert!(!err.contains("minReplicas must not exceed"), "{err}");
}

#[test]
fn transition_rules_run_on_updates_only() {
    let server = with_widgets();
    server.apply(&widget(
        "w-sized",
        "{minReplicas: 1, maxReplicas: 2, size: small}",
    ));
    server.apply(&widget(
        "w-sized",
        "{minReplicas: 1, maxReplicas: 5, size: small}",
    ));
    let out = server.kubectl_with_stdin(
        &["apply", "-f", "-"],
        Some(&widget(
            "w-sized",
            "{minReplicas: 1, maxReplicas: 5, size: large}",
        )),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(r#"spec.size: Invalid value: "large": size is immutable"#),
        "{err}"
    );
}

/// Rules are parsed and type-checked against the schema when the CRD is
/// written; every rule's error comes back in one response, with cel-go's
/// messages (the CRD validation rules docs quote `self == true` on an
/// integer: `ERROR: <input>:1:6: found no matching overload for '_==_' applied
/// to '(int, bool)'`).
#[test]
fn rules_that_do_not_compile_or_type_check_are_refused_with_the_crd() {
    let server = Server::builder().start().unwrap();
    let bad = WIDGETS
        .replace("self.maxReplicas != 13", "self.maxReplicas !=== 13")
        .replace(
            "self.minReplicas <= self.maxReplicas",
            "self.replicas <= self.maxReplicas",
        )
        .replace("self == oldSelf", "self == true")
        .replace("!has(self.color) || self.color != 'black'", "self.color")
        .replace(
            "message: \"minReplicas must not exceed maxReplicas\"",
            "messageExpression: \"self.minReplicas\"",
        );
    let out = server.kubectl_with_stdin(&["create", "-f", "-"], Some(&bad));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    let rule = |i: usize| format!("openAPIV3Schema.properties[spec].x-kubernetes-validations[{i}]");
    for expected in [
        format!("{}.rule: Invalid value: {{\"Rule\":\"self.replicas \\u003c= self.maxReplicas\"", rule(0)),
        "compilation failed: ERROR: <input>:1:5: undefined field 'replicas'".to_string(),
        format!("{}.rule: Invalid value: {{\"Rule\":\"self.maxReplicas !=== 13\"", rule(1)),
        "compilation failed: ERROR: <input>:1:20: Syntax error:".to_string(),
        format!("{}.rule: Invalid value: {{\"Rule\":\"self.color\"", rule(2)),
        "cel expression must evaluate to a bool".to_string(),
        "openAPIV3Schema.properties[spec].properties[size].x-kubernetes-validations[0].rule".to_string(),
        "compilation failed: ERROR: <input>:1:6: found no matching overload for '_==_' applied to '(string, bool)'".to_string(),
    ] {
        assert!(err.contains(&expected), "{expected}\n---\n{err}");
    }
    // The message expression of a rule that does not compile is not
    // compiled (nor reported).
    assert!(
        !err.contains(&format!("{}.messageExpression", rule(0))),
        "{err}"
    );
    // A CRD that does type-check is accepted as before.
    server.apply(WIDGETS);
}

/// A rule whose estimated cost exceeds the per-expression budget is refused
/// with upstream's message; bounding the list makes the same rule acceptable.
#[test]
fn rules_over_their_cost_budget_are_refused_until_bounded() {
    let server = Server::builder().start().unwrap();
    let crd = |max_items: &str| {
        format!(
            r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: tags.cel.example.com}}
spec:
  group: cel.example.com
  scope: Namespaced
  names: {{plural: tags, singular: tag, kind: Tag}}
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
            properties:
              names:
                type: array
                {max_items}
                items: {{type: string, maxLength: 63}}
                x-kubernetes-validations:
                - rule: "self.all(x, self.exists_one(y, x == y))"
                  message: names must be unique
"#
        )
    };
    let out = server.kubectl_with_stdin(&["create", "-f", "-"], Some(&crd("")));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("openAPIV3Schema.properties[spec].properties[names].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"),
        "{err}"
    );
    server.apply(&crd("maxItems: 16"));
}

/// The Gateway API's own rules (its v1.x CRD, test data) now hold.
#[test]
fn the_gateway_apis_rules_are_enforced() {
    let server = Server::builder().start().unwrap();
    server.apply(include_str!("data/gateway-api/gateways.yaml"));
    established(&server, "gateways.gateway.networking.k8s.io");
    let gateway = |listeners: &str| {
        format!(
            "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {{name: g, namespace: default}}\nspec:\n  gatewayClassName: example\n  listeners: {listeners}\n"
        )
    };
    let err = create_err(
        &server,
        &gateway("[{name: tcp, protocol: TCP, port: 9000, hostname: example.com}]"),
    );
    assert!(
        err.contains(r#"spec.listeners: Invalid value: hostname must not be specified for protocols ['TCP', 'UDP']"#),
        "{err}"
    );
    let err = create_err(
        &server,
        &gateway("[{name: a, protocol: HTTP, port: 80}, {name: b, protocol: HTTP, port: 80}]"),
    );
    assert!(
        err.contains("Combination of port, protocol and hostname must be unique for each listener"),
        "{err}"
    );
    server.apply(&gateway(
        "[{name: web, protocol: HTTP, port: 80, hostname: example.com}]",
    ));
}

/// Rules on `status` run on writes through the status subresource.
#[test]
fn status_rules_run_on_the_status_subresource() {
    let server = Server::builder().start().unwrap();
    server.apply(
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: jobs.cel.example.com}
spec:
  group: cel.example.com
  scope: Namespaced
  names: {plural: jobs, singular: job, kind: Job}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {parallelism: {type: integer}}}
          status:
            type: object
            x-kubernetes-validations:
            - rule: "self.succeeded <= 10"
              message: "at most 10 succeed"
            properties:
              succeeded: {type: integer}
"#,
    );
    established(&server, "jobs.cel.example.com");
    server.apply("apiVersion: cel.example.com/v1\nkind: Job\nmetadata: {name: j, namespace: default}\nspec: {parallelism: 1}\n");
    server.kubectl_ok(&[
        "patch",
        "jobs.cel.example.com",
        "j",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"succeeded":3}}"#,
    ]);
    let out = server.kubectl(&[
        "patch",
        "jobs.cel.example.com",
        "j",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"succeeded":11}}"#,
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(r#"status: Invalid value: at most 10 succeed"#),
        "{err}"
    );
}

/// Rules run on writes through the scale subresource too: the scaled object
/// is validated as a whole (upstream's CR strategy validates scale updates).
#[test]
fn rules_run_on_the_scale_subresource() {
    let server = Server::builder().start().unwrap();
    server.apply(
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: pools.cel.example.com}
spec:
  group: cel.example.com
  scope: Namespaced
  names: {plural: pools, singular: pool, kind: Pool}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: "self.replicas <= 5"
              message: "at most 5 replicas"
            properties:
              replicas: {type: integer}
          status: {type: object, properties: {replicas: {type: integer}}}
"#,
    );
    established(&server, "pools.cel.example.com");
    server.apply(
        "apiVersion: cel.example.com/v1\nkind: Pool\nmetadata: {name: p, namespace: default}\nspec: {replicas: 1}\n",
    );
    server.kubectl_ok(&["scale", "pool/p", "--replicas=4"]);
    let out = server.kubectl(&["scale", "pool/p", "--replicas=9"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(r#"spec: Invalid value: at most 5 replicas"#),
        "{err}"
    );
    let replicas = server.kubectl_ok(&["get", "pool/p", "-o", "jsonpath={.spec.replicas}"]);
    assert_eq!(replicas.trim(), "4");
}
