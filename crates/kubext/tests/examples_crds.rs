//! The seeds' CRDs (`examples/crds/`) applied with kubectl, and their instances used
//! the way the seeds describe.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use testkit::Server;

fn example(file: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/crds")
        .join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Apply the CRD (the first document), wait until it is served, then the instances.
fn install(server: &Server, file: &str) {
    let text = example(file);
    let (crd, instances) = text.split_once("\n---\n").unwrap();
    server.apply(crd);
    let name = crd
        .lines()
        .find_map(|l| l.trim().strip_prefix("name: "))
        .unwrap();
    server.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        &format!("crd/{name}"),
        "--timeout=10s",
    ]);
    server.apply(instances);
}

#[test]
fn virtual_service_by_category_and_short_name() {
    let server = Server::builder().start().unwrap();
    install(&server, "virtualservice.yaml");
    let by_category = server.kubectl_ok(&["get", "istio-io", "-o", "name"]);
    assert_eq!(
        by_category.trim(),
        "virtualservice.networking.istio.io/reviews-route"
    );
    let hosts = server.kubectl_ok(&[
        "get",
        "vs",
        "reviews-route",
        "-o",
        "jsonpath={.spec.hosts[0]}",
    ]);
    assert_eq!(hosts, "reviews.prod.svc.cluster.local");
    // Unknown fields inside the open spec are kept.
    let route = server.kubectl_ok(&[
        "get",
        "vs",
        "reviews-route",
        "-o",
        "jsonpath={.spec.http[0].name}",
    ]);
    assert_eq!(route, "reviews-v2-routes");
    let table = server.kubectl_ok(&["get", "virtualservices"]);
    assert!(table.lines().next().unwrap().contains("HOSTS"), "{table}");
}

#[test]
fn crontab_validation_scale_and_explain() {
    let server = Server::builder().start().unwrap();
    install(&server, "crontab.yaml");
    server.kubectl_ok(&["scale", "ct", "my-new-cron-object", "--replicas=5"]);
    assert_eq!(
        server.kubectl_ok(&[
            "get",
            "ct",
            "my-new-cron-object",
            "-o",
            "jsonpath={.spec.replicas}"
        ]),
        "5"
    );
    let bad = "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {name: bad}\nspec: {cronSpec: 'not a cron', replicas: 20}\n";
    let out = server.kubectl_with_stdin(&["apply", "-f", "-"], Some(bad));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("spec.cronSpec in body should match"), "{err}");
    assert!(
        err.contains("spec.replicas in body should be less than or equal to 10"),
        "{err}"
    );
    let explained = server.kubectl_ok(&["explain", "crontab.spec"]);
    assert!(explained.contains("cronSpec"), "{explained}");
}

#[test]
fn network_requires_a_valid_cidr_and_gateway() {
    let server = Server::builder().start().unwrap();
    install(&server, "network.yaml");
    let row = server.kubectl_ok(&["get", "networks"]);
    assert!(
        row.contains("192.168.0.0/16") && row.contains("192.168.0.1"),
        "{row}"
    );
    let bad = "apiVersion: samplecrd.k8s.io/v1\nkind: Network\nmetadata: {name: bad}\nspec: {cidr: nonsense}\n";
    let out = server.kubectl_with_stdin(&["apply", "-f", "-"], Some(bad));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("spec.gateway: Required value"), "{err}");
    assert!(err.contains("spec.cidr in body should match"), "{err}");
}

#[test]
fn shirts_are_selected_by_their_fields() {
    let server = Server::builder().start().unwrap();
    install(&server, "shirt.yaml");
    let blue_m = server.kubectl_ok(&[
        "get",
        "shirts",
        "--field-selector",
        "spec.color=blue,spec.size=M",
        "-o",
        "name",
    ]);
    assert_eq!(blue_m.trim(), "shirt.stable.example.com/example2");
    let not_blue = server.kubectl_ok(&[
        "get",
        "shirts",
        "--field-selector",
        "spec.color!=blue",
        "-o",
        "name",
    ]);
    assert_eq!(not_blue.trim(), "shirt.stable.example.com/example3");
}

#[test]
fn vertical_pod_autoscaler_in_two_versions() {
    let server = Server::builder().start().unwrap();
    install(&server, "verticalpodautoscaler.yaml");
    let through_old = server.kubectl(&[
        "get",
        "verticalpodautoscalers.v1beta1.autoscaling.k8s.io",
        "my-rec-vpa",
        "-o",
        "jsonpath={.apiVersion}",
    ]);
    assert_eq!(
        String::from_utf8_lossy(&through_old.stdout),
        "autoscaling.k8s.io/v1beta1"
    );
    assert!(
        String::from_utf8_lossy(&through_old.stderr).contains("deprecated"),
        "{}",
        String::from_utf8_lossy(&through_old.stderr)
    );
    assert_eq!(
        server.kubectl_ok(&[
            "get",
            "vpa",
            "my-rec-vpa",
            "-o",
            "jsonpath={.spec.updatePolicy.updateMode}"
        ]),
        "Off"
    );
    let bad = "apiVersion: autoscaling.k8s.io/v1beta2\nkind: VerticalPodAutoscaler\nmetadata: {name: bad}\nspec: {targetRef: {kind: Deployment, name: x}, updatePolicy: {updateMode: Sometimes}}\n";
    let out = server.kubectl_with_stdin(&["apply", "-f", "-"], Some(bad));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(r#"Unsupported value: "Sometimes""#),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
