//! CustomResourceDefinitions (first slice): registration, Established status,
//! discovery, serving custom resources with kubectl and kube-rs, and routes that
//! come and go with the CRD.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use serde_json::json;
use testkit::Server;

const CRONTAB_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab, shortNames: [ct], categories: [all]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {cronSpec: {type: string}, replicas: {type: integer}}}
          status: {type: object, properties: {ready: {type: boolean}}}
"#;

/// Wait until the CRD is Established (served).
fn established(server: &Server, crd: &str) {
    server.kubectl_ok(&["wait", "--for=condition=Established", crd, "--timeout=10s"]);
}

fn install_crontab(server: &Server) {
    server.apply(CRONTAB_CRD);
    established(server, "crd/crontabs.stable.example.com");
}

#[test]
fn crd_becomes_established_and_serves_instances_to_kubectl() {
    let server = Server::builder().start().unwrap();
    install_crontab(&server);
    let status = server.kubectl_ok(&[
        "get",
        "crd",
        "crontabs.stable.example.com",
        "-o",
        "jsonpath={.status.acceptedNames.kind} {.status.storedVersions}",
    ]);
    assert_eq!(status, r#"CronTab ["v1"]"#);
    let resources = server.kubectl_ok(&["api-resources", "--api-group=stable.example.com"]);
    assert!(
        resources.contains("crontabs") && resources.contains("ct") && resources.contains("CronTab"),
        "{resources}"
    );
    let cr = "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: my-cron\nspec:\n  cronSpec: '* * * * */5'\n  replicas: 3\n";
    server.apply(cr);
    // shortName, singular, plural.group and category all resolve.
    for name in [
        "ct",
        "crontab",
        "crontabs.stable.example.com",
        "crontabs.v1.stable.example.com",
    ] {
        let got = server.kubectl_ok(&["get", name, "-o", "name"]);
        assert_eq!(got.trim(), "crontab.stable.example.com/my-cron", "{name}");
    }
    assert!(
        server
            .kubectl_ok(&["get", "all", "-o", "name"])
            .contains("crontab.stable.example.com/my-cron")
    );
    assert_eq!(
        server.kubectl_ok(&["get", "ct", "my-cron", "-o", "jsonpath={.spec.replicas}"]),
        "3"
    );
    server.kubectl_ok(&["delete", "ct", "my-cron"]);
}

#[tokio::test]
async fn custom_resources_with_kube_rs_status_and_generation() {
    let server = Server::builder().start().unwrap();
    install_crontab(&server);
    let client = server.client().await.unwrap();
    let gvk = GroupVersionKind::gvk("stable.example.com", "v1", "CronTab");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "crontabs");
    let api: Api<DynamicObject> = Api::namespaced_with(client, "default", &ar);
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": "c1"},
        "spec": {"cronSpec": "*/1 * * * *"},
        "status": {"ready": true},
    }))
    .unwrap();
    let created = api.create(&PostParams::default(), &obj).await.unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    assert!(
        created.data.get("status").is_none(),
        "status is dropped on create with the status subresource"
    );
    let status = api
        .patch_status(
            "c1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": true}, "spec": {"cronSpec": "ignored"}})),
        )
        .await
        .unwrap();
    assert_eq!(status.data["status"]["ready"], true);
    assert_eq!(status.data["spec"]["cronSpec"], "*/1 * * * *");
    assert_eq!(
        status.metadata.generation,
        Some(1),
        "status writes do not bump generation"
    );
    let spec = api
        .patch(
            "c1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"cronSpec": "*/2 * * * *"}})),
        )
        .await
        .unwrap();
    assert_eq!(spec.metadata.generation, Some(2));
    assert_eq!(
        spec.data["status"]["ready"], true,
        "main writes keep status"
    );
}

#[test]
fn deleting_the_crd_removes_its_routes_and_invalid_crds_are_rejected() {
    let server = Server::builder().start().unwrap();
    install_crontab(&server);
    server.kubectl_ok(&["delete", "crd", "crontabs.stable.example.com"]);
    let out = server.kubectl(&[
        "get",
        "--raw",
        "/apis/stable.example.com/v1/namespaces/default/crontabs",
    ]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("NotFound"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bad = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: wrong\nspec:\n  group: nodot\n  scope: Galaxy\n  names: {plural: things, kind: Thing}\n  versions:\n  - {name: v1, served: true, storage: false, schema: {openAPIV3Schema: {type: object}}}\n";
    let out = server.kubectl_with_stdin(&["create", "-f", "-"], Some(bad));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(r#"The CustomResourceDefinition "wrong" is invalid"#),
        "{err}"
    );
    assert!(
        err.contains(
            "spec.group: Invalid value: \"nodot\": should be a domain with at least one dot"
        ),
        "{err}"
    );
    assert!(
        err.contains("must have exactly one version marked as storage version"),
        "{err}"
    );
}

#[test]
fn crds_are_served_again_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::builder()
        .storage(testkit::Storage::Embedded)
        .data_dir(dir.path())
        .start()
        .unwrap();
    install_crontab(&server);
    server
        .terminate(std::time::Duration::from_secs(10))
        .unwrap();
    let server = Server::builder()
        .storage(testkit::Storage::Embedded)
        .data_dir(dir.path())
        .start()
        .unwrap();
    // Served as soon as the server reports ready.
    let out = server.kubectl_ok(&["get", "crontabs", "-o", "name"]);
    assert!(out.trim().is_empty(), "{out}");
}

#[tokio::test]
async fn deleting_a_crd_deletes_its_instances_first() {
    let server = Server::builder().start().unwrap();
    install_crontab(&server);
    let client = server.client().await.unwrap();
    let gvk = GroupVersionKind::gvk("stable.example.com", "v1", "CronTab");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "crontabs");
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    let held: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": "held", "finalizers": ["example.com/hold"]},
    }))
    .unwrap();
    api.create(&PostParams::default(), &held).await.unwrap();
    let plain: DynamicObject = serde_json::from_value(json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "plain"}})).unwrap();
    api.create(&PostParams::default(), &plain).await.unwrap();

    server.kubectl_ok(&[
        "delete",
        "crd",
        "crontabs.stable.example.com",
        "--wait=false",
    ]);
    // Terminating: instances are deleted (the held one waits for its finalizer) and
    // new ones are refused.
    let crds: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
            "customresourcedefinitions",
        ),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let crd = crds.get("crontabs.stable.example.com").await.unwrap();
        let terminating = crd.data["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "Terminating" && c["status"] == "True");
        if terminating && api.get_opt("plain").await.unwrap().is_none() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "CRD never started terminating: {:?}",
            crd.data["status"]
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let err = api
        .create(&PostParams::default(), &plain)
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 405);
            assert_eq!(
                s.message,
                "create not allowed while custom resource definition is terminating"
            );
        }
        other => panic!("{other:?}"),
    }
    // Releasing the instance's finalizer lets the CRD go.
    api.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while crds
        .get_opt("crontabs.stable.example.com")
        .await
        .unwrap()
        .is_some()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "CRD was never removed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // Re-creating it shows no old instances.
    install_crontab(&server);
    let out = server.kubectl_ok(&["get", "crontabs", "-o", "name"]);
    assert!(out.trim().is_empty(), "{out}");
}

#[test]
fn printer_columns_render_in_kubectl_tables() {
    let server = Server::builder().start().unwrap();
    let crd = CRONTAB_CRD.replace(
        "    subresources: {status: {}}\n",
        "    subresources: {status: {}}\n    additionalPrinterColumns:\n    - {name: Spec, type: string, jsonPath: .spec.cronSpec}\n    - {name: Replicas, type: integer, jsonPath: .spec.replicas}\n    - {name: Ready, type: string, jsonPath: '.status.conditions[?(@.type==\"Ready\")].status', priority: 1}\n    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}\n",
    );
    server.apply(&crd);
    established(&server, "crd/crontabs.stable.example.com");
    let cr = "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: c1\nspec:\n  cronSpec: '*/5 * * * *'\n  replicas: 2\n";
    server.apply(cr);
    let table = server.kubectl_ok(&["get", "crontabs"]);
    let mut lines = table.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(header, vec!["NAME", "SPEC", "REPLICAS", "AGE"], "{table}");
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(&row[..2], &["c1", "*/5"], "{table}");
    let wide = server.kubectl_ok(&["get", "crontabs", "-o", "wide"]);
    assert!(
        wide.lines().next().unwrap().contains("READY"),
        "priority > 0 columns only with -o wide:\n{wide}"
    );
}

#[test]
fn selectable_fields_filter_lists() {
    let server = Server::builder().start().unwrap();
    let crd = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: shirts.stable.example.com}
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: shirts, singular: shirt, kind: Shirt}
  versions:
  - name: v1
    served: true
    storage: true
    selectableFields:
    - jsonPath: .spec.color
    - jsonPath: .spec.size
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {color: {type: string}, size: {type: string}}}
"#;
    server.apply(crd);
    established(&server, "crd/shirts.stable.example.com");
    for (name, color, size) in [("a", "blue", "S"), ("b", "blue", "M"), ("c", "red", "M")] {
        let cr = format!(
            "apiVersion: stable.example.com/v1\nkind: Shirt\nmetadata:\n  name: {name}\nspec:\n  color: {color}\n  size: {size}\n"
        );
        server.apply(&cr);
    }
    let blue = server.kubectl_ok(&[
        "get",
        "shirts",
        "--field-selector=spec.color=blue",
        "-o",
        "name",
    ]);
    assert_eq!(blue.lines().count(), 2, "{blue}");
    let blue_m = server.kubectl_ok(&[
        "get",
        "shirts",
        "--field-selector=spec.color=blue,spec.size=M",
        "-o",
        "name",
    ]);
    assert_eq!(blue_m.trim(), "shirt.stable.example.com/b");
    let out = server.kubectl(&["get", "shirts", "--field-selector=spec.fabric=silk"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("field label not supported: spec.fabric"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn multiple_versions_without_conversion_webhook() {
    let server = Server::builder().start().unwrap();
    let crd = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - {name: v1alpha1, served: false, storage: false, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
  - {name: v1beta1, served: true, storage: false, deprecated: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
"#;
    server.apply(crd);
    established(&server, "crd/widgets.example.com");
    let client = server.client().await.unwrap();
    let send = |method: &str, path: &str, ct: &str, body: &str| {
        let req = http::Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", ct)
            .body(kube::client::Body::from(body.as_bytes().to_vec()))
            .unwrap();
        let client = client.clone();
        async move {
            let resp = client.send(req).await.unwrap();
            let code = resp.status().as_u16();
            let warning = resp
                .headers()
                .get("warning")
                .map(|w| w.to_str().unwrap().to_string());
            let bytes = http_body_util::BodyExt::collect(resp.into_body())
                .await
                .unwrap()
                .to_bytes();
            (
                code,
                warning,
                serde_json::from_slice::<serde_json::Value>(&bytes).unwrap_or_default(),
            )
        }
    };
    let beta = "/apis/example.com/v1beta1/namespaces/default/widgets";
    let v1 = "/apis/example.com/v1/namespaces/default/widgets";
    let (code, warning, created) = send("POST", beta, "application/json", r#"{"apiVersion":"example.com/v1beta1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":1}}"#).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["apiVersion"], "example.com/v1beta1");
    assert_eq!(
        warning.as_deref(),
        Some(r#"299 - "example.com/v1beta1 Widget is deprecated""#)
    );
    let (_, warning, got) = send("GET", &format!("{v1}/w"), "", "").await;
    assert_eq!(
        got["apiVersion"], "example.com/v1",
        "read through v1: converted"
    );
    assert!(warning.is_none());
    let (_, _, got) = send("GET", &format!("{beta}/w"), "", "").await;
    assert_eq!(got["apiVersion"], "example.com/v1beta1");
    let (code, _, _) = send(
        "GET",
        "/apis/example.com/v1alpha1/namespaces/default/widgets",
        "",
        "",
    )
    .await;
    assert_eq!(code, 404, "unserved versions are not routed");
    let (code, _, status) = send(
        "PATCH",
        &format!("{v1}/w"),
        "application/strategic-merge-patch+json",
        r#"{"spec":{"size":2}}"#,
    )
    .await;
    assert_eq!(code, 415, "{status}");
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .contains("application/merge-patch+json")
    );
    let preferred = server.kubectl_ok(&["get", "--raw", "/apis/example.com"]);
    assert!(
        preferred
            .contains(r#""preferredVersion":{"groupVersion":"example.com/v1","version":"v1"}"#),
        "{preferred}"
    );
}

#[test]
fn scale_subresource_works_with_kubectl_scale() {
    let server = Server::builder().start().unwrap();
    let crd = CRONTAB_CRD.replace(
        "    subresources: {status: {}}\n",
        "    subresources:\n      status: {}\n      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas, labelSelectorPath: .status.labelSelector}\n",
    );
    server.apply(&crd);
    established(&server, "crd/crontabs.stable.example.com");
    let cr = "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: c1\nspec:\n  cronSpec: x\n  replicas: 1\n";
    server.apply(cr);
    server.kubectl_ok(&["scale", "crontab", "c1", "--replicas=5"]);
    assert_eq!(
        server.kubectl_ok(&["get", "ct", "c1", "-o", "jsonpath={.spec.replicas}"]),
        "5"
    );
    let scale = server.kubectl_ok(&[
        "get",
        "--raw",
        "/apis/stable.example.com/v1/namespaces/default/crontabs/c1/scale",
    ]);
    let scale: serde_json::Value = serde_json::from_str(&scale).unwrap();
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["apiVersion"], "autoscaling/v1");
    assert_eq!(scale["spec"]["replicas"], 5);
    assert_eq!(
        server.kubectl_ok(&["get", "ct", "c1", "-o", "jsonpath={.metadata.generation}"]),
        "2"
    );
    let out = server.kubectl(&["scale", "crontab", "c1", "--replicas=-1"]);
    assert!(!out.status.success());
    let resources = server.kubectl_ok(&["get", "--raw", "/apis/stable.example.com/v1"]);
    assert!(resources.contains("crontabs/scale"), "{resources}");
}

#[test]
fn conflicting_names_are_not_accepted_until_freed() {
    let server = Server::builder().start().unwrap();
    install_crontab(&server);
    let rival = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: crontabz.stable.example.com}
spec:
  group: stable.example.com
  scope: Namespaced
  # singular would default to "crontab", whose conflict upstream reports first.
  names: {plural: crontabz, singular: crontabz, kind: CronTab}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
"#;
    let out = server.kubectl_with_stdin(&["create", "-f", "-"], Some(rival));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let jsonpath = r#"jsonpath={.status.conditions[?(@.type=="NamesAccepted")].status} {.status.conditions[?(@.type=="NamesAccepted")].reason} {.status.conditions[?(@.type=="NamesAccepted")].message}"#;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let got = server.kubectl_ok(&["get", "crd", "crontabz.stable.example.com", "-o", jsonpath]);
        if got == r#"False KindConflict "CronTab" is already in use"# {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never reported the conflict: {got}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = server.kubectl(&[
        "get",
        "--raw",
        "/apis/stable.example.com/v1/namespaces/default/crontabz",
    ]);
    assert!(
        !out.status.success(),
        "a CRD whose names are not accepted is not served"
    );
    // Freeing the name lets the second CRD in.
    server.kubectl_ok(&["delete", "crd", "crontabs.stable.example.com"]);
    established(&server, "crd/crontabz.stable.example.com");
    server.kubectl_ok(&[
        "get",
        "--raw",
        "/apis/stable.example.com/v1/namespaces/default/crontabz",
    ]);
}

const VALIDATED_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
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
            required: [name]
            properties:
              name: {type: string, pattern: '^[a-z]+$'}
              replicas: {type: integer, minimum: 1, maximum: 10, default: 1}
              color: {type: string, enum: [red, blue]}
"#;

#[test]
fn schemas_validate_prune_and_default_custom_resources() {
    let server = Server::builder().start().unwrap();
    server.apply(VALIDATED_CRD);
    established(&server, "crd/gadgets.example.com");
    let create = |yaml: &str, extra: &[&str]| {
        let mut args = vec!["create", "-f", "-"];
        args.extend_from_slice(extra);
        server.kubectl_with_stdin(&args, Some(yaml))
    };
    // Every error of the request in one 422, with upstream's texts and field paths.
    let bad = "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: bad}\nspec: {replicas: many, color: qux}\n";
    let out = create(bad, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains(r#"The Gadget "bad" is invalid"#), "{err}");
    assert!(err.contains(r#"spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string""#), "{err}");
    assert!(
        err.contains(r#"spec.color: Unsupported value: "qux": supported values: "red", "blue""#),
        "{err}"
    );
    assert!(err.contains("spec.name: Required value"), "{err}");
    // Unknown fields: kubectl asks for Strict validation.
    let unknown = "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: extra}\nspec: {name: abc, foo: 1}\n";
    let out = create(unknown, &[]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(r#"unknown field "spec.foo""#),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Without validation the unknown field is pruned, and defaults apply.
    let out = create(unknown, &["--validate=false"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let spec = server.kubectl_ok(&["get", "gadget", "extra", "-o", "jsonpath={.spec}"]);
    assert_eq!(spec, r#"{"name":"abc","replicas":1}"#);
    // A default added to the schema later shows up on existing objects when read.
    let with_color_default =
        VALIDATED_CRD.replace("enum: [red, blue]}", "enum: [red, blue], default: blue}");
    server.apply(&with_color_default);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while server.kubectl_ok(&["get", "gadget", "extra", "-o", "jsonpath={.spec.color}"]) != "blue" {
        assert!(
            std::time::Instant::now() < deadline,
            "new default not applied on read"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

async fn get_json(client: &kube::Client, path: &str) -> serde_json::Value {
    let req = http::Request::get(path).body(Vec::new()).unwrap();
    serde_json::from_str(&client.request_text(req).await.unwrap()).unwrap()
}

/// `(hash in the /openapi/v3 index, document)` of the CronTab group-version.
async fn crontab_openapi(client: &kube::Client) -> Option<(String, serde_json::Value)> {
    let index = get_json(client, "/openapi/v3").await;
    let url = index["paths"]["apis/stable.example.com/v1"]["serverRelativeURL"].as_str()?;
    let hash = url.split_once("?hash=")?.1.to_string();
    Some((hash, get_json(client, url).await))
}

#[tokio::test]
async fn openapi_publishes_each_crd_version_and_follows_changes() {
    let server = Server::builder().start().unwrap();
    install_crontab(&server);
    let client = server.client().await.unwrap();
    let (hash, doc) = crontab_openapi(&client)
        .await
        .expect("CronTab in the index");
    let schema = &doc["components"]["schemas"]["com.example.stable.v1.CronTab"];
    assert_eq!(
        schema["x-kubernetes-group-version-kind"],
        json!([{"group": "stable.example.com", "kind": "CronTab", "version": "v1"}])
    );
    assert_eq!(
        schema["properties"]["metadata"]["allOf"][0]["$ref"],
        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    assert!(
        doc["components"]["schemas"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]
            ["properties"]["labels"]["description"]
            .is_string(),
        "ObjectMeta carries its descriptions"
    );
    assert!(
        schema["properties"]["spec"]["properties"]
            .get("color")
            .is_none()
    );

    // A new field with a description: published, with a new hash (how fast is the
    // benchmark's business; this bound only catches "never").
    let changed = CRONTAB_CRD.replace(
        "spec: {type: object, properties: {cronSpec: {type: string},",
        "spec: {type: object, properties: {color: {type: string, description: The colour of the tab.}, cronSpec: {type: string},",
    );
    assert_ne!(changed, CRONTAB_CRD);
    server.apply(&changed);
    let started = std::time::Instant::now();
    loop {
        let (new_hash, doc) = crontab_openapi(&client).await.unwrap();
        let color = &doc["components"]["schemas"]["com.example.stable.v1.CronTab"]["properties"]["spec"]
            ["properties"]["color"];
        // The index and the document are two reads: the change may land between them.
        if color.is_object() && new_hash != hash {
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "OpenAPI not updated"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let explained = server.kubectl_ok(&["explain", "crontabs.spec.color"]);
    assert!(explained.contains("The colour of the tab."), "{explained}");
}

#[tokio::test]
async fn embedded_resources_are_pruned_and_validated() {
    let server = Server::builder().start().unwrap();
    server.apply(
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: deployers.apps.example.com}
spec:
  group: apps.example.com
  scope: Namespaced
  names: {plural: deployers, kind: Deployer}
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
              template:
                type: object
                x-kubernetes-embedded-resource: true
                properties:
                  data: {type: object, additionalProperties: {type: string}}
"#,
    );
    established(&server, "crd/deployers.apps.example.com");
    let gvk = GroupVersionKind::gvk("apps.example.com", "v1", "Deployer");
    let api: Api<DynamicObject> = Api::namespaced_with(
        server.client().await.unwrap(),
        "default",
        &ApiResource::from_gvk_with_plural(&gvk, "deployers"),
    );
    let obj = |template: serde_json::Value| -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "apps.example.com/v1",
            "kind": "Deployer",
            "metadata": {"name": "d"},
            "spec": {"template": template},
        }))
        .unwrap()
    };
    let created = api
        .create(
            &PostParams::default(),
            &obj(json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "inner", "labels": {"a": "b"}, "bogus": 1},
                "data": {"k": "v"},
                "extra": true,
            })),
        )
        .await
        .unwrap();
    assert_eq!(
        created.data["spec"]["template"],
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "inner", "labels": {"a": "b"}},
            "data": {"k": "v"},
        }),
        "unknown fields pruned, metadata pruned to ObjectMeta"
    );
    let err = api
        .create(
            &PostParams::default(),
            &obj(json!({"apiVersion": "v1", "metadata": {"name": "a/b"}})),
        )
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("expected an API error")
    };
    assert_eq!(status.code, 422);
    assert!(
        status
            .message
            .contains("spec.template.kind: Required value"),
        "{}",
        status.message
    );
    assert!(
        status
            .message
            .contains("spec.template.metadata.name: Invalid value: \"a/b\""),
        "{}",
        status.message
    );
}

/// kubectl validates a `List` client-side against `/openapi/v2`, so the CRD kind's
/// published schema must accept real CRDs; `explain` reads it too.
#[test]
fn kubectl_validates_and_explains_the_crd_kind() {
    let server = Server::builder().start().unwrap();
    let crd = |i: usize| {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("things{i}.g.example.com")},
            "spec": {
                "group": "g.example.com",
                "scope": "Namespaced",
                "names": {"plural": format!("things{i}"), "kind": format!("Thing{i}")},
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {
                            "size": {"type": "integer", "default": 1},
                            "tags": {"type": "array", "items": {"type": "string"}},
                        }},
                    }}},
                }],
            },
        })
    };
    let list = json!({"apiVersion": "v1", "kind": "List", "items": [crd(0), crd(1)]});
    let out = server.kubectl_with_stdin(&["create", "-f", "-"], Some(&list.to_string()));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let explained = server.kubectl_ok(&["explain", "crd.spec.versions.schema.openAPIV3Schema"]);
    assert!(explained.contains("JSONSchemaProps"), "{explained}");
    // An unknown field in a CRD is still caught (server-side, Strict).
    let mut bad = crd(2);
    bad["spec"]["bogus"] = json!(true);
    let out = server.kubectl_with_stdin(&["create", "-f", "-"], Some(&bad.to_string()));
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unknown field \"spec.bogus\""), "{stderr}");
}

/// Drain a watch stream until it ends; panics if it is still open after `secs`.
use futures::StreamExt as _;

async fn watch_ends<S: futures::Stream + Unpin>(mut stream: S, secs: u64, what: &str) -> usize {
    let mut events = 0;
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        match tokio::time::timeout_at(deadline, stream.next()).await {
            Ok(Some(_)) => events += 1,
            Ok(None) => return events,
            Err(_) => panic!("watch still open after {secs}s: {what}"),
        }
    }
}

#[tokio::test]
async fn open_watches_end_when_their_crd_changes_or_goes() {
    let server = Server::builder().start().unwrap();
    install_crontab(&server);
    let client = server.client().await.unwrap();
    let gvk = GroupVersionKind::gvk("stable.example.com", "v1", "CronTab");
    let api: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &ApiResource::from_gvk_with_plural(&gvk, "crontabs"),
    );
    let tab: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": "t"}, "spec": {"cronSpec": "* * * * */5"},
    }))
    .unwrap();
    api.create(&PostParams::default(), &tab).await.unwrap();

    // A spec change (a new printer column) replaces the served type: the watch ends.
    let stream = api
        .watch(&kube::api::WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    let crds: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
            "customresourcedefinitions",
        ),
    );
    crds.patch(
        "crontabs.stable.example.com",
        &PatchParams::default(),
        &Patch::Json::<()>(
            serde_json::from_value(json!([{
                "op": "add",
                "path": "/spec/versions/0/additionalPrinterColumns",
                "value": [{"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"}],
            }]))
            .unwrap(),
        ),
    )
    .await
    .unwrap();
    watch_ends(stream, 5, "after a CRD spec change").await;

    // Deleting the CRD: the instance's DELETED event, then the end of the stream.
    let stream = api
        .watch(&kube::api::WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    crds.delete("crontabs.stable.example.com", &Default::default())
        .await
        .unwrap();
    let events = watch_ends(stream, 10, "after the CRD was deleted").await;
    assert!(events >= 1, "the instance's deletion was delivered first");
}

/// Schemas and the definitions a real kube-apiserver 1.37.2 publishes for them
/// (measured), shared with the openapi crate's unit tests.
const CRD_OPENAPI_1_37_2: &str = include_str!("../../openapi/tests/data/crd_openapi_1_37_2.json");

/// upstream's `definitionName`: the group's labels reversed, version, kind.
fn definition_name(group: &str, version: &str, kind: &str) -> String {
    let reversed: Vec<&str> = group.split('.').rev().collect();
    format!("{}.{version}.{kind}", reversed.join("."))
}

/// What conformance's crd_publish_openapi tests check (`waitForDefinition`), and
/// more: every CRD's kind (and list) definition in `/openapi/v2` and its
/// `/openapi/v3` component equal kube-apiserver 1.37.2's for the same schema —
/// nullable, preserve-unknown-fields, int-or-string, embedded resources,
/// junctors, defaults, list/map types, validation rules, a listKind and
/// selectable fields.
#[tokio::test]
async fn crd_openapi_definitions_are_kube_apiserver_1_37_2s() {
    let measured: serde_json::Value = serde_json::from_str(CRD_OPENAPI_1_37_2).unwrap();
    let cases = measured["cases"].as_array().unwrap();
    let crds: Vec<serde_json::Value> = cases
        .iter()
        .map(|c| {
            let mut version = json!({
                "name": c["version"], "served": true, "storage": true,
                "schema": {"openAPIV3Schema": c["schema"]},
            });
            if let Some(fields) = c["selectableFields"].as_array().filter(|f| !f.is_empty()) {
                let fields: Vec<_> = fields.iter().map(|f| json!({"jsonPath": f})).collect();
                version["selectableFields"] = json!(fields);
            }
            json!({
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": format!("{}.{}", c["plural"].as_str().unwrap(), c["group"].as_str().unwrap())},
                "spec": {
                    "group": c["group"], "scope": "Namespaced",
                    "names": {"plural": c["plural"], "kind": c["kind"], "listKind": c["listKind"]},
                    "versions": [version],
                },
            })
        })
        .collect();
    let server = Server::builder().start().unwrap();
    let list = json!({"apiVersion": "v1", "kind": "List", "items": crds});
    let out = server.kubectl_with_stdin(
        &["create", "--validate=false", "-f", "-"],
        Some(&list.to_string()),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    server.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd",
        "--all",
        "--timeout=20s",
    ]);
    let client = server.client().await.unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let v2 = loop {
        let v2 = get_json(&client, "/openapi/v2").await;
        let published = cases.iter().all(|c| {
            let name = definition_name(
                c["group"].as_str().unwrap(),
                c["version"].as_str().unwrap(),
                c["kind"].as_str().unwrap(),
            );
            v2["definitions"].get(&name).is_some()
        });
        if published {
            break v2;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "CRDs not in /openapi/v2"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    for c in cases {
        let (group, version) = (c["group"].as_str().unwrap(), c["version"].as_str().unwrap());
        let kind = definition_name(group, version, c["kind"].as_str().unwrap());
        let list = definition_name(group, version, c["listKind"].as_str().unwrap());
        let v3 = get_json(&client, &format!("/openapi/v3/apis/{group}/{version}")).await;
        assert_eq!(v3["info"]["title"], "Kubernetes CRD Swagger");
        let v3 = &v3["components"]["schemas"];
        assert_eq!(v2["definitions"][&kind], c["v2"]["kind"], "v2 {kind}");
        assert_eq!(v3[&kind], c["v3"]["kind"], "v3 {kind}");
        if c["v2"].get("list").is_some() {
            assert_eq!(v2["definitions"][&list], c["v2"]["list"], "v2 {list}");
            assert_eq!(v3[&list], c["v3"]["list"], "v3 {list}");
        }
    }
    // The e2e test's CRD without validation schema: `type: object` once its
    // GVK extension is dropped, and kubectl explain has no description.
    let empty = &v2["definitions"]["com.example.oa-empty.v1.E2eTestEmpty"];
    assert_eq!(
        empty.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["type", "x-kubernetes-group-version-kind"]
    );
    let explained = server.kubectl_ok(&["explain", "e2etestemptys"]);
    assert!(
        explained.contains("DESCRIPTION:\n    <empty>"),
        "{explained}"
    );
    // A listKind names the lists served, too.
    let sels = server.kubectl_ok(&["get", "--raw", "/apis/oa-selectable.example.com/v1/sels"]);
    assert!(sels.contains(r#""kind":"SelCollection""#), "{sels}");
}
