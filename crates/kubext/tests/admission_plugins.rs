//! kube-apiserver's compiled-in admission plugins as kubext runs them
//! (ServiceAccount, Priority, DefaultTolerationSeconds, DefaultStorageClass,
//! DefaultIngressClass, AlwaysDeny) and the flags that turn them on and off.
//! Expected values from the plugins' sources under
//! `plugin/pkg/admission/` and their tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use testkit::Server;

fn get_json(s: &Server, args: &[&str]) -> Value {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "json"]);
    serde_json::from_str(&s.kubectl_ok(&all)).unwrap()
}

fn create(s: &Server, manifest: &Value) -> std::process::Output {
    s.kubectl_with_stdin(&["create", "-f", "-"], Some(&manifest.to_string()))
}

fn pod(name: &str, spec: Value) -> Value {
    let mut spec = spec;
    spec["containers"] = json!([{"name": "app", "image": "busybox:1.36"}, {"name": "side", "image": "busybox:1.36"}]);
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
}

const TOKEN_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

#[test]
fn pods_run_as_a_service_account_with_its_token_volume() {
    let s = Server::builder().start().expect("kubext starts");
    // A pod in a namespace created a moment ago waits for its `default` account.
    s.kubectl_ok(&["create", "namespace", "fresh"]);
    let out = s.kubectl_with_stdin(
        &["create", "-n", "fresh", "-f", "-"],
        Some(&pod("p", json!({})).to_string()),
    );
    assert!(out.status.success(), "{out:?}");
    let p = get_json(&s, &["pod", "p", "-n", "fresh"]);
    let spec = &p["spec"];
    assert_eq!(spec["serviceAccountName"], "default");
    // v1's deprecated field reads back as the account name.
    assert_eq!(spec["serviceAccount"], "default");
    let volumes = spec["volumes"].as_array().unwrap();
    assert_eq!(volumes.len(), 1, "{spec}");
    let name = volumes[0]["name"].as_str().unwrap();
    assert!(
        name.starts_with("kube-api-access-") && name.len() == "kube-api-access-".len() + 5,
        "{name}"
    );
    // plugin/pkg/admission/serviceaccount TokenVolumeSource.
    assert_eq!(
        volumes[0]["projected"],
        json!({
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
            ],
        })
    );
    for container in spec["containers"].as_array().unwrap() {
        assert_eq!(
            container["volumeMounts"],
            json!([{"name": name, "readOnly": true, "mountPath": TOKEN_PATH}]),
            "{container}"
        );
    }

    // The pod's opt-out wins; then the account's.
    create(
        &s,
        &pod("quiet", json!({"automountServiceAccountToken": false})),
    );
    let quiet = get_json(&s, &["pod", "quiet"]);
    assert!(quiet["spec"].get("volumes").is_none(), "{quiet}");
    s.apply(
        r#"{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "builder"},
            "automountServiceAccountToken": false, "imagePullSecrets": [{"name": "regcred"}]}"#,
    );
    create(&s, &pod("built", json!({"serviceAccountName": "builder"})));
    let built = get_json(&s, &["pod", "built"]);
    assert!(built["spec"].get("volumes").is_none(), "{built}");
    assert_eq!(
        built["spec"]["imagePullSecrets"],
        json!([{"name": "regcred"}])
    );

    // A missing account is a 403 with upstream's message.
    let out = create(&s, &pod("lost", json!({"serviceAccountName": "missing"})));
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            r#"pods "lost" is forbidden: error looking up service account default/missing: serviceaccount "missing" not found"#
        ),
        "{stderr}"
    );
}

#[test]
fn priority_comes_from_the_named_or_the_global_default_class() {
    let s = Server::builder().start().expect("kubext starts");
    create(
        &s,
        &pod(
            "critical",
            json!({"priorityClassName": "system-cluster-critical"}),
        ),
    );
    let critical = get_json(&s, &["pod", "critical"]);
    // scheduling.SystemCriticalPriority.
    assert_eq!(critical["spec"]["priority"], 2000000000);
    assert_eq!(critical["spec"]["preemptionPolicy"], "PreemptLowerPriority");

    let out = create(&s, &pod("unknown", json!({"priorityClassName": "nope"})));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr
            .contains(r#"pods "unknown" is forbidden: no PriorityClass with name nope was found"#),
        "{stderr}"
    );
    let out = create(
        &s,
        &pod(
            "claims",
            json!({"priorityClassName": "system-cluster-critical", "priority": 7}),
        ),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the integer value of priority (7) must not be provided in pod spec; priority admission controller computed 2000000000 from the given PriorityClass name"),
        "{stderr}"
    );

    // Without a class, the global default's.
    s.apply(
        r#"{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": "everyone"}, "value": 1000, "globalDefault": true,
            "preemptionPolicy": "Never"}"#,
    );
    create(&s, &pod("plain", json!({})));
    let plain = get_json(&s, &["pod", "plain"]);
    assert_eq!(plain["spec"]["priorityClassName"], "everyone");
    assert_eq!(plain["spec"]["priority"], 1000);
    assert_eq!(plain["spec"]["preemptionPolicy"], "Never");
}

#[test]
fn claims_and_ingresses_get_the_default_class() {
    let s = Server::builder().start().expect("kubext starts");
    s.apply(
        r#"{"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": "standard", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            "provisioner": "example.com/disk"}"#,
    );
    s.apply(
        r#"{"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
            "metadata": {"name": "nginx", "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"}},
            "spec": {"controller": "k8s.io/ingress-nginx"}}"#,
    );
    let claim = |name: &str, class: Option<&str>| {
        let mut c = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}});
        if let Some(class) = class {
            c["spec"]["storageClassName"] = json!(class);
        }
        c
    };
    create(&s, &claim("data", None));
    create(&s, &claim("static", Some("")));
    assert_eq!(
        get_json(&s, &["pvc", "data"])["spec"]["storageClassName"],
        "standard"
    );
    // An explicit "" asks for no class: kept.
    assert_eq!(
        get_json(&s, &["pvc", "static"])["spec"]["storageClassName"],
        ""
    );
    create(
        &s,
        &json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "web"},
            "spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}}),
    );
    assert_eq!(
        get_json(&s, &["ingress", "web"])["spec"]["ingressClassName"],
        "nginx"
    );
}

fn serve_fails(args: &[&str]) -> String {
    let data = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(testkit::kubext_binary().unwrap())
        .args(["serve", "--secure-port=0", "--data-dir"])
        .arg(data.path())
        .args(args)
        .output()
        .unwrap();
    assert!(!out.status.success());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn the_admission_plugin_flags_turn_plugins_on_and_off() {
    let quiet = Server::builder()
        .arg("--disable-admission-plugins=ServiceAccount,DefaultTolerationSeconds")
        .start()
        .expect("kubext starts");
    create(&quiet, &pod("p", json!({})));
    let p = get_json(&quiet, &["pod", "p"]);
    assert!(p["spec"].get("serviceAccountName").is_none(), "{p}");
    assert!(p["spec"].get("volumes").is_none(), "{p}");
    assert!(p["spec"].get("tolerations").is_none(), "{p}");
    // Priority stays on.
    assert_eq!(p["spec"]["priority"], 0);

    // AlwaysDeny refuses every write with upstream's message, the control
    // plane's own first: the start fails and says why.
    let stderr = serve_fails(&["--enable-admission-plugins=AlwaysDeny"]);
    assert!(
        stderr.contains(
            r#"namespaces "default" is forbidden: admission control is denying all modifications"#
        ),
        "{stderr}"
    );
    let stderr = serve_fails(&[
        "--enable-admission-plugins=AlwaysDeny",
        "--disable-admission-plugins=AlwaysDeny",
    ]);
    assert!(
        stderr.contains(
            "[AlwaysDeny] in enable-admission-plugins and disable-admission-plugins overlapped"
        ),
        "{stderr}"
    );
}
