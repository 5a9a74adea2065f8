//! Black-box tests: a real kubext process driven by the real kubectl.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;
use testkit::Server;

fn server() -> Server {
    Server::builder().start().expect("kubext starts")
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn get_namespaces_lists_bootstrap_namespaces() {
    let s = server();
    let out = s.kubectl_ok(&["get", "namespaces", "-o", "name"]);
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        assert!(
            out.contains(&format!("namespace/{ns}")),
            "{ns} missing from:\n{out}"
        );
    }
    let table = s.kubectl_ok(&["get", "ns", "default"]);
    assert!(table.starts_with("NAME"), "table header: {table}");
    assert!(table.contains("Active"), "{table}");
}

#[test]
fn configmap_lifecycle_with_kubectl() {
    let s = server();
    let manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\n  labels: {app: web}\ndata:\n  k: v\n";
    let out = s.kubectl_with_stdin(&["create", "-f", "-"], Some(manifest));
    assert!(out.status.success(), "{}", stderr(&out));
    s.kubectl_ok(&["label", "configmap", "demo", "tier=frontend"]);
    s.kubectl_ok(&["annotate", "configmap", "demo", "note=hello"]);
    s.kubectl_ok(&["patch", "configmap", "demo", "-p", r#"{"data":{"x":"y"}}"#]);
    s.kubectl_ok(&[
        "patch",
        "configmap",
        "demo",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/data/z","value":"1"}]"#,
    ]);
    s.kubectl_ok(&[
        "patch",
        "configmap",
        "demo",
        "--type=merge",
        "-p",
        r#"{"data":{"k":null}}"#,
    ]);
    let data = s.kubectl_ok(&["get", "cm", "demo", "-o", "jsonpath={.data}"]);
    assert_eq!(data, r#"{"x":"y","z":"1"}"#);
    let labels = s.kubectl_ok(&[
        "get",
        "cm",
        "-l",
        "app=web,tier in (frontend)",
        "-o",
        "name",
    ]);
    assert_eq!(labels.trim(), "configmap/demo");
    let none = s.kubectl_ok(&["get", "cm", "-l", "app!=web", "-o", "name"]);
    assert!(!none.contains("demo"), "{none}");
    let described = s.kubectl_ok(&["describe", "configmap", "demo"]);
    assert!(
        described.contains("tier=frontend") && described.contains("note: hello"),
        "{described}"
    );
    s.kubectl_ok(&["delete", "configmap", "demo"]);
    let out = s.kubectl(&["get", "configmap", "demo"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(r#"Error from server (NotFound): configmaps "demo" not found"#),
        "{}",
        stderr(&out)
    );
}

#[test]
fn imperative_create_commands_send_protobuf() {
    let s = server();
    s.kubectl_ok(&["create", "configmap", "lit", "--from-literal=a=b"]);
    s.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "sec",
        "--from-literal=password=hunter2",
    ]);
    s.kubectl_ok(&["create", "namespace", "team-a"]);
    s.kubectl_ok(&["create", "serviceaccount", "robot", "-n", "team-a"]);
    let pw = s.kubectl_ok(&["get", "secret", "sec", "-o", "jsonpath={.data.password}"]);
    assert_eq!(pw, "aHVudGVyMg==");
    assert_eq!(
        s.kubectl_ok(&["get", "cm", "lit", "-o", "jsonpath={.data.a}"]),
        "b"
    );
    let sa = s.kubectl_ok(&["get", "sa", "-n", "team-a", "-o", "name"]);
    assert!(sa.contains("serviceaccount/robot"), "{sa}");
}

#[test]
fn apply_client_side_and_server_side() {
    let s = server();
    let v1 =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  a: '1'\n  b: '2'\n";
    let v2 = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  a: '1'\n";
    let out = s.kubectl_with_stdin(&["apply", "-f", "-"], Some(v1));
    assert!(out.status.success(), "{}", stderr(&out));
    let out = s.kubectl_with_stdin(&["apply", "-f", "-"], Some(v2));
    assert!(out.status.success(), "{}", stderr(&out));
    // Client-side apply removes what the last-applied configuration no longer has.
    assert_eq!(
        s.kubectl_ok(&["get", "cm", "applied", "-o", "jsonpath={.data}"]),
        r#"{"a":"1"}"#
    );

    let ssa = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  a: '1'\n";
    let out = s.kubectl_with_stdin(&["apply", "--server-side", "-f", "-"], Some(ssa));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("serverside-applied"));
    let managers = s.kubectl_ok(&[
        "get",
        "cm",
        "ssa",
        "--show-managed-fields",
        "-o",
        "jsonpath={.metadata.managedFields[*].manager}",
    ]);
    assert!(managers.contains("kubectl"), "{managers}");
}

#[test]
fn api_resources_lists_builtins() {
    let s = server();
    let out = s.kubectl_ok(&["api-resources"]);
    for line in [
        "configmaps",
        "namespaces",
        "secrets",
        "serviceaccounts",
        "services",
        "endpoints",
        "events",
        "leases",
        "endpointslices",
    ] {
        assert!(out.contains(line), "{line} missing:\n{out}");
    }
    let short = s.kubectl_ok(&["get", "cm", "-n", "kube-system", "-o", "name"]);
    assert!(short.contains("configmap/kube-root-ca.crt"), "{short}");
}

#[test]
fn errors_read_like_kube_apiserver() {
    let s = server();
    let out = s.kubectl(&["create", "configmap", "x", "-n", "nowhere"]);
    assert!(
        stderr(&out).contains(r#"namespaces "nowhere" not found"#),
        "{}",
        stderr(&out)
    );
    let bad = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Bad_Name\n";
    let out = s.kubectl_with_stdin(&["create", "-f", "-"], Some(bad));
    let err = stderr(&out);
    assert!(
        err.contains(
            r#"ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name""#
        ),
        "{err}"
    );
    s.kubectl_ok(&["create", "configmap", "dup"]);
    let out = s.kubectl(&["create", "configmap", "dup"]);
    assert!(
        stderr(&out).contains(r#"configmaps "dup" already exists"#),
        "{}",
        stderr(&out)
    );
}

#[test]
fn get_watch_streams_changes() {
    let s = server();
    let mut watch = Command::new(std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".into()))
        .args([
            "get",
            "configmaps",
            "--watch",
            "--output-watch-events",
            "--request-timeout=20s",
        ])
        .env("KUBECONFIG", &s.kubeconfig)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
    // A table header, then the initial state.
    let header = lines.next().unwrap().unwrap();
    assert!(
        header.starts_with("EVENT") && header.contains("NAME") && header.contains("DATA"),
        "{header}"
    );
    let first = lines.next().unwrap().unwrap();
    assert!(
        first.starts_with("ADDED") && first.contains("kube-root-ca.crt"),
        "{first}"
    );
    s.kubectl_ok(&["create", "configmap", "watched"]);
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    let mut seen = false;
    for line in lines.by_ref() {
        let line = line.unwrap();
        if line.starts_with("ADDED") && line.contains("watched") {
            seen = true;
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no ADDED event");
    }
    assert!(seen);
    s.kubectl_ok(&["delete", "configmap", "watched"]);
    let deleted = lines
        .map_while(Result::ok)
        .any(|l| l.starts_with("DELETED") && l.contains("watched"));
    let _ = watch.kill();
    let _ = watch.wait();
    assert!(deleted, "no DELETED event");
}

#[test]
fn namespace_deletion_removes_its_contents() {
    let s = server();
    s.kubectl_ok(&["create", "namespace", "doomed"]);
    s.kubectl_ok(&["create", "configmap", "c1", "-n", "doomed"]);
    s.kubectl_ok(&["delete", "namespace", "doomed", "--timeout=30s"]);
    let out = s.kubectl(&["get", "namespace", "doomed"]);
    assert!(
        stderr(&out).contains(r#"namespaces "doomed" not found"#),
        "{}",
        stderr(&out)
    );
    let left = s.kubectl_ok(&["get", "configmaps", "-n", "doomed", "-o", "name"]);
    assert!(left.trim().is_empty(), "{left}");
}

#[test]
fn explain_and_field_validation() {
    let s = server();
    let out = s.kubectl_ok(&["explain", "configmap.data"]);
    assert!(
        out.contains("KIND:") && out.contains("ConfigMap") && out.contains("FIELD: data"),
        "{out}"
    );
    let out = s.kubectl_ok(&["explain", "service.spec.ports"]);
    assert!(out.contains("targetPort"), "{out}");
    // kubectl asks for strict server-side validation: unknown fields are rejected.
    let bad = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: strict\ndataa:\n  a: b\n";
    let out = s.kubectl_with_stdin(&["create", "-f", "-"], Some(bad));
    let err = stderr(&out);
    assert!(!out.status.success());
    assert!(
        err.contains(r#"strict decoding error: unknown field "dataa""#),
        "{err}"
    );
    // --validate=warn keeps the object and warns; the unknown field is dropped.
    let out = s.kubectl_with_stdin(&["create", "--validate=warn", "-f", "-"], Some(bad));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(r#"unknown field "dataa""#),
        "{}",
        stderr(&out)
    );
    let stored = s.kubectl_ok(&["get", "cm", "strict", "-o", "json"]);
    assert!(!stored.contains("dataa"), "{stored}");
}

/// The kubectl of the release kubext serves (`KUBECTL`, which `./dev test`
/// builds) finds no version skew: its minor is the server's, and it prints
/// no `WARNING: version difference`.
#[test]
fn kubectl_of_the_served_release_sees_no_version_skew() {
    let s = server();
    let out = s.kubectl_with_stdin(&["version", "-o", "json"], None);
    assert!(out.status.success(), "{}", stderr(&out));
    let versions: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("kubectl version -o json");
    let (client, server) = (&versions["clientVersion"], &versions["serverVersion"]);
    assert_eq!(server["major"], "1", "{versions}");
    assert_eq!(server["minor"], "37", "{versions}");
    assert!(
        server["gitVersion"]
            .as_str()
            .is_some_and(|v| v.starts_with("v1.37.") && v.contains("-kubext")),
        "{versions}"
    );
    assert_eq!(
        client["minor"], server["minor"],
        "set KUBECTL to a kubectl 1.37 (./dev test builds one with scripts/upstream kubectl)"
    );
    let plain = s.kubectl_with_stdin(&["version"], None);
    assert!(plain.status.success(), "{}", stderr(&plain));
    assert!(
        !stderr(&plain).contains("version difference"),
        "{}",
        stderr(&plain)
    );
}

/// Every kubectl minor version the image ships talks to kubext.
#[test]
fn kubectl_versions_1_27_to_1_33() {
    let s = server();
    for minor in 27..=33 {
        let bin = format!("/usr/lib/google-cloud-sdk/bin/kubectl.1.{minor}");
        if !std::path::Path::new(&bin).exists() {
            panic!("{bin} is missing");
        }
        let run = |args: &[&str], stdin: Option<&str>| {
            let out = s.run_kubectl(&bin, args, stdin);
            assert!(
                out.status.success(),
                "kubectl 1.{minor} {args:?}: {}",
                stderr(&out)
            );
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let name = format!("v{minor}");
        run(&["create", "configmap", &name, "--from-literal=k=v"], None);
        let manifest = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: applied\n"
        );
        run(&["apply", "-f", "-"], Some(&manifest));
        assert_eq!(
            run(&["get", "cm", &name, "-o", "jsonpath={.data.k}"], None),
            "applied"
        );
        assert!(run(&["explain", "configmap"], None).contains("ConfigMap"));
        run(&["delete", "configmap", &name], None);
    }
}

/// Built-in kinds' patch metadata comes from upstream's OpenAPI: a Service's
/// `spec.selector` is an atomic map (`+mapType=atomic`), owned whole by
/// server-side apply.
#[test]
fn server_side_apply_owns_a_service_selector_whole() {
    let server = server();
    let manifest = "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: default}\nspec:\n  selector: {app: web}\n  ports: [{port: 80, protocol: TCP}]\n";
    let out = server.kubectl_with_stdin(
        &[
            "apply",
            "--server-side",
            "--field-manager=tester",
            "-f",
            "-",
        ],
        Some(manifest),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let svc: serde_json::Value = serde_json::from_str(&server.kubectl_ok(&[
        "get",
        "service",
        "web",
        "-o",
        "json",
        "--show-managed-fields",
    ]))
    .unwrap();
    let entry = svc["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == "tester")
        .unwrap()
        .clone();
    let spec = &entry["fieldsV1"]["f:spec"];
    assert_eq!(spec["f:selector"], serde_json::json!({}), "{entry}");
}
