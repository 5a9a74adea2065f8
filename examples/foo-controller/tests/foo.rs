//! The operator and kubext as real processes, walking through sample-controller's
//! README: the CRD and upstream's `example-foo.yaml` → an owned nginx Deployment
//! with kubext's defaults; scaling the Foo scales the Deployment; the Deployment's
//! status (written here as the deployment controller would) reaches the Foo's;
//! `Synced` events; a Deployment the Foo does not own is left alone with an
//! `ErrResourceExists` Warning; deleting the Foo lets the garbage collector delete
//! its Deployment.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(
    clippy::disallowed_names,
    reason = "the resource is called Foo, as upstream"
)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use testkit::{Server, eventually};

const BINARY: &str = env!("CARGO_BIN_EXE_foo-controller");

/// Upstream's `artifacts/examples/example-foo.yaml`, verbatim.
const EXAMPLE_FOO: &str = "\
apiVersion: samplecontroller.k8s.io/v1alpha1
kind: Foo
metadata:
  name: example-foo
spec:
  deploymentName: example-foo
  replicas: 1
";

struct Operator {
    child: Child,
    log: PathBuf,
}

impl Operator {
    fn start(kubeconfig: &Path, dir: &Path) -> Operator {
        let log = dir.join("foo-controller.log");
        let child = Command::new(BINARY)
            .env("KUBECONFIG", kubeconfig)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        Operator { child, log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("--- operator log ---\n{}", self.log());
        }
    }
}

fn get(server: &Server, args: &[&str]) -> Option<Value> {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    let out = server.kubectl(&all);
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).unwrap())
}

fn get_ok(server: &Server, args: &[&str]) -> Value {
    get(server, args).unwrap_or_else(|| panic!("kubectl get {args:?} failed"))
}

/// The events.k8s.io/v1 Events about the Foo `name`.
fn events_about(server: &Server, name: &str) -> Vec<Value> {
    let list = get_ok(server, &["get", "events.v1.events.k8s.io"]);
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["regarding"]["kind"] == "Foo" && e["regarding"]["name"] == name)
        .cloned()
        .collect()
}

fn has_event(server: &Server, foo: &str, type_: &str, reason: &str, note: &str) -> bool {
    events_about(server, foo)
        .iter()
        .any(|e| e["type"] == type_ && e["reason"] == reason && e["note"] == note)
}

#[test]
fn sample_controller_walkthrough() {
    let kubext = Server::builder().start().unwrap();

    // 1. The CRD (from --print-crd), then the operator, then upstream's example.
    let crd = Command::new(BINARY).arg("--print-crd").output().unwrap();
    assert!(crd.status.success());
    kubext.apply(&String::from_utf8(crd.stdout).unwrap());
    kubext.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/foos.samplecontroller.k8s.io",
    ]);
    let operator = Operator::start(&kubext.kubeconfig, &kubext.data_dir);
    kubext.apply(EXAMPLE_FOO);
    let foo = get_ok(&kubext, &["get", "foo", "example-foo"]);

    // 2. Its Deployment: upstream's newDeployment, owned by the Foo, defaulted
    // by kubext as kube-apiserver would.
    let deployment = eventually("the Deployment example-foo", || {
        get(&kubext, &["get", "deployment", "example-foo"])
    });
    let owner = &deployment["metadata"]["ownerReferences"];
    assert_eq!(
        owner,
        &json!([{
            "apiVersion": "samplecontroller.k8s.io/v1alpha1",
            "kind": "Foo",
            "name": "example-foo",
            "uid": foo["metadata"]["uid"],
            "controller": true,
            "blockOwnerDeletion": true,
        }]),
        "{deployment}"
    );
    let spec = &deployment["spec"];
    assert_eq!(spec["replicas"], 1);
    let labels = json!({"app": "nginx", "controller": "example-foo"});
    assert_eq!(spec["selector"]["matchLabels"], labels);
    assert_eq!(spec["template"]["metadata"]["labels"], labels);
    let container = &spec["template"]["spec"]["containers"][0];
    assert_eq!(container["name"], "nginx");
    assert_eq!(container["image"], "nginx:latest");
    assert_eq!(spec["strategy"]["type"], "RollingUpdate", "{deployment}");
    assert_eq!(spec["strategy"]["rollingUpdate"]["maxSurge"], "25%");
    assert_eq!(spec["revisionHistoryLimit"], 10);
    assert_eq!(spec["progressDeadlineSeconds"], 600);
    assert_eq!(container["imagePullPolicy"], "Always");
    let deployment_uid = deployment["metadata"]["uid"].clone();
    // Nothing is available yet, and the Foo says so.
    eventually("the Foo's status", || {
        let foo = get_ok(&kubext, &["get", "foo", "example-foo"]);
        (foo["status"]["availableReplicas"] == 0).then_some(())
    });

    // 3. Scale the Foo: the Deployment follows (the same one, updated).
    kubext.kubectl_ok(&[
        "patch",
        "foo",
        "example-foo",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":3}}"#,
    ]);
    let deployment = eventually("the Deployment scaled to 3", || {
        get(&kubext, &["get", "deployment", "example-foo"]).filter(|d| d["spec"]["replicas"] == 3)
    });
    assert_eq!(deployment["metadata"]["uid"], deployment_uid);
    assert_eq!(deployment["metadata"]["ownerReferences"], *owner);
    assert_eq!(deployment["spec"]["strategy"]["type"], "RollingUpdate");

    // 4. The deployment controller's part (kubext runs no pods): three available.
    kubext.kubectl_ok(&[
        "patch",
        "deployment",
        "example-foo",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":3,"updatedReplicas":3,"readyReplicas":3,"availableReplicas":3}}"#,
    ]);
    eventually("the Foo's availableReplicas 3", || {
        let foo = get_ok(&kubext, &["get", "foo", "example-foo"]);
        (foo["status"]["availableReplicas"] == 3).then_some(())
    });
    let table = kubext.kubectl_ok(&["get", "foos"]);
    assert!(
        table.contains("AVAILABLE") && table.contains("example-foo"),
        "{table}"
    );

    // 5. Synced events, reported as sample-controller.
    eventually("a Synced event", || {
        has_event(
            &kubext,
            "example-foo",
            "Normal",
            "Synced",
            "Foo synced successfully",
        )
        .then_some(())
    });
    let synced = events_about(&kubext, "example-foo");
    assert!(
        synced
            .iter()
            .all(|e| e["reportingController"] == "sample-controller"),
        "{synced:?}"
    );

    // 6. A Deployment no Foo owns, then a Foo naming it: left alone, with a Warning.
    kubext.kubectl_ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx:1.27",
        "--replicas=2",
    ]);
    let web = get_ok(&kubext, &["get", "deployment", "web"]);
    kubext.apply(
        "apiVersion: samplecontroller.k8s.io/v1alpha1\nkind: Foo\nmetadata: {name: squatter}\nspec: {deploymentName: web, replicas: 1}\n",
    );
    eventually("the ErrResourceExists event", || {
        has_event(
            &kubext,
            "squatter",
            "Warning",
            "ErrResourceExists",
            r#"Resource "web" already exists and is not managed by Foo"#,
        )
        .then_some(())
    });
    let after = get_ok(&kubext, &["get", "deployment", "web"]);
    assert_eq!(
        after["metadata"]["resourceVersion"], web["metadata"]["resourceVersion"],
        "the Deployment was written: {after}"
    );
    assert_eq!(after["spec"]["replicas"], 2);
    assert!(after["metadata"]["ownerReferences"].is_null(), "{after}");
    let squatter = get_ok(&kubext, &["get", "foo", "squatter"]);
    assert!(squatter["status"].is_null(), "{squatter}");
    assert!(!has_event(
        &kubext,
        "squatter",
        "Normal",
        "Synced",
        "Foo synced successfully"
    ));

    // A Foo without a deployment name is skipped (and logged), not retried.
    kubext.apply(
        "apiVersion: samplecontroller.k8s.io/v1alpha1\nkind: Foo\nmetadata: {name: nameless}\nspec: {replicas: 1}\n",
    );
    eventually("the missing name logged", || {
        operator
            .log()
            .contains("default/nameless: deployment name must be specified")
            .then_some(())
    });

    // 7. Delete the Foo (background propagation): the garbage collector deletes
    // its Deployment.
    kubext.kubectl_ok(&["delete", "foo", "example-foo", "--cascade=background"]);
    eventually("the Deployment collected", || {
        (!kubext
            .kubectl(&["get", "deployment", "example-foo"])
            .status
            .success())
        .then_some(())
    });
    // The Deployment the squatter never owned survives it.
    kubext.kubectl_ok(&["delete", "foo", "squatter"]);
    std::thread::sleep(Duration::from_millis(500));
    kubext.kubectl_ok(&["get", "deployment", "web"]);
}
