//! kube-apiserver's compiled-in admission plugins as kubext runs them
//! (ServiceAccount, Priority, DefaultTolerationSeconds, DefaultStorageClass,
//! DefaultIngressClass, LimitRanger, AlwaysDeny) and the flags that turn them
//! on and off. Expected values from the plugins' sources under
//! `plugin/pkg/admission/` and their tests, and messages as a kube-apiserver
//! 1.37.2 answered them.
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

fn refused(s: &Server, manifest: &Value) -> String {
    let out = create(s, manifest);
    assert!(!out.status.success(), "{manifest} was created");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A pod of one container `c` with these resources.
fn sized(name: &str, resources: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "busybox", "resources": resources}]}})
}

fn resources(cpu: &str, memory: &str, storage: &str) -> Value {
    json!({"cpu": cpu, "memory": memory, "ephemeral-storage": storage})
}

// test/e2e/scheduling/limit_range.go's conformance test, then the Pod and
// PersistentVolumeClaim items; each refusal in kube-apiserver 1.37.2's words.
#[test]
fn limit_ranges_default_and_bound_pods_and_claims() {
    let s = Server::builder().start().expect("kubext starts");
    let range = json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "limit-range"},
        "spec": {"limits": [{"type": "Container",
            "min": resources("50m", "100Mi", "100Gi"), "max": resources("500m", "500Mi", "500Gi"),
            "default": resources("500m", "500Mi", "500Gi"),
            "defaultRequest": resources("100m", "200Mi", "200Gi")}]}});
    s.apply(&range.to_string());

    // Without resources: the defaults, and an annotation naming them.
    create(&s, &sized("pod-no-resources", json!({})));
    let p = get_json(&s, &["pod", "pod-no-resources"]);
    assert_eq!(
        p["spec"]["containers"][0]["resources"],
        json!({"requests": resources("100m", "200Mi", "200Gi"),
            "limits": resources("500m", "500Mi", "500Gi")})
    );
    assert_eq!(
        p["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
        "LimitRanger plugin set: cpu, ephemeral-storage, memory request for container c; cpu, ephemeral-storage, memory limit for container c"
    );
    // A limit without a request was its request already.
    create(
        &s,
        &sized(
            "pod-partial-resources",
            json!({"requests": {"memory": "150Mi", "ephemeral-storage": "150Gi"},
                "limits": {"cpu": "300m"}}),
        ),
    );
    let p = get_json(&s, &["pod", "pod-partial-resources"]);
    assert_eq!(
        p["spec"]["containers"][0]["resources"],
        json!({"requests": resources("300m", "150Mi", "150Gi"),
            "limits": resources("300m", "500Mi", "500Gi")})
    );
    assert_eq!(
        p["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
        "LimitRanger plugin set: ephemeral-storage, memory limit for container c"
    );

    let below = sized(
        "pfpod",
        json!({"requests": resources("10m", "50Mi", "50Gi")}),
    );
    let stderr = refused(&s, &below);
    assert!(
        stderr.contains(r#"pods "pfpod" is forbidden: [minimum cpu usage per Container is 50m, but request is 10m, minimum ephemeral-storage usage per Container is 100Gi, but request is 50Gi, minimum memory usage per Container is 100Mi, but request is 50Mi]"#),
        "{stderr}"
    );
    // (kube-apiserver's pod validation refuses this one first: requests
    // above the defaulted limits.)
    let above = sized(
        "pfpod",
        json!({"requests": resources("600m", "600Mi", "600Gi")}),
    );
    refused(&s, &above);

    // A changed LimitRange holds for the next pod, a deleted one no more.
    s.kubectl_ok(&[
        "patch",
        "limitrange",
        "limit-range",
        "--type=json",
        "-p",
        r#"[{"op": "replace", "path": "/spec/limits/0/min", "value": {"cpu": "9m", "memory": "49Mi", "ephemeral-storage": "49Gi"}}]"#,
    ]);
    let out = create(&s, &below);
    assert!(out.status.success(), "{out:?}");
    refused(&s, &above);
    s.kubectl_ok(&["delete", "limitrange", "limit-range"]);
    let mut above = above;
    above["metadata"]["name"] = json!("pfpod2");
    let out = create(&s, &above);
    assert!(out.status.success(), "{out:?}");
    let p = get_json(&s, &["pod", "pfpod2"]);
    assert!(p["metadata"].get("annotations").is_none(), "{p}");

    // Pod items bound the pod's totals; quantities written canonically.
    s.apply(
        r#"{"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr"},
            "spec": {"limits": [
                {"type": "Pod", "min": {"cpu": "0.05"}, "max": {"memory": "1Gi"}, "maxLimitRequestRatio": {"memory": "1.5"}},
                {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "10Gi"}}]}}"#,
    );
    for (name, resources, message) in [
        (
            "p1",
            json!({}),
            "[minimum cpu usage per Pod is 50m.  No request is specified, maximum memory usage per Pod is 1Gi.  No limit is specified, memory max limit to request ratio per Pod is 1500m, but no request is specified or request is 0]",
        ),
        (
            "p2",
            json!({"requests": {"cpu": "10m"}}),
            "[minimum cpu usage per Pod is 50m, but request is 10m, maximum memory usage per Pod is 1Gi.  No limit is specified, memory max limit to request ratio per Pod is 1500m, but no request is specified or request is 0]",
        ),
        (
            "p3",
            json!({"requests": {"cpu": "1e3", "memory": "1Gi"}, "limits": {"memory": "2Gi"}}),
            "[maximum memory usage per Pod is 1Gi, but limit is 2Gi, memory max limit to request ratio per Pod is 1500m, but provided ratio is 2.000000]",
        ),
        (
            "p4",
            json!({"requests": {"cpu": "0.5", "memory": "100Mi"}, "limits": {"memory": "1000Mi"}}),
            "memory max limit to request ratio per Pod is 1500m, but provided ratio is 10.000000",
        ),
    ] {
        let stderr = refused(&s, &sized(name, resources));
        let expected = format!(r#"pods "{name}" is forbidden: {message}"#);
        assert!(stderr.contains(&expected), "{stderr}");
    }
    // Init containers count by their largest need; sidecars add up.
    let app = json!({"name": "c", "image": "busybox", "resources":
        {"requests": {"cpu": "10m", "memory": "600Mi"}, "limits": {"memory": "700Mi"}}});
    let mut side = app.clone();
    side["name"] = json!("d");
    let p6 = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p6"}, "spec": {
        "initContainers": [{"name": "i", "image": "busybox", "resources":
            {"requests": {"cpu": "100m", "memory": "1.5Gi"}, "limits": {"memory": "1.5Gi"}}}],
        "containers": [app, side]}});
    let stderr = refused(&s, &p6);
    assert!(
        stderr.contains(
            r#"pods "p6" is forbidden: maximum memory usage per Pod is 1Gi, but limit is 1536Mi"#
        ),
        "{stderr}"
    );

    let claim = |name: &str, storage: &str| {
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": storage}}}})
    };
    let stderr = refused(&s, &claim("c1", "500Mi"));
    assert!(
        stderr.contains(r#"persistentvolumeclaims "c1" is forbidden: minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi"#),
        "{stderr}"
    );
    let stderr = refused(&s, &claim("c2", "100Gi"));
    assert!(
        stderr.contains(r#"persistentvolumeclaims "c2" is forbidden: maximum storage usage per PersistentVolumeClaim is 10Gi, but request is 100Gi"#),
        "{stderr}"
    );
    let out = create(&s, &claim("c3", "5Gi"));
    assert!(out.status.success(), "{out:?}");
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
        .arg("--disable-admission-plugins=ServiceAccount,DefaultTolerationSeconds,LimitRanger")
        .start()
        .expect("kubext starts");
    quiet.apply(
        r#"{"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr"},
            "spec": {"limits": [{"type": "Container", "default": {"cpu": "1"}, "min": {"memory": "1Gi"}}]}}"#,
    );
    create(&quiet, &pod("p", json!({})));
    let p = get_json(&quiet, &["pod", "p"]);
    assert!(p["spec"].get("serviceAccountName").is_none(), "{p}");
    assert!(p["spec"].get("volumes").is_none(), "{p}");
    assert!(p["spec"].get("tolerations").is_none(), "{p}");
    assert_eq!(p["spec"]["containers"][0]["resources"], json!({}), "{p}");
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
