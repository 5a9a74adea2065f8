//! The official Python client (`kubernetes` on PyPI, installed by `./dev test`)
//! against kubext: the calls its own e2e tests and kopf make, where kubext used
//! to answer differently from kube-apiserver (bodies without `kind`, DELETE
//! answers, the `default/kubernetes` Service).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use testkit::Server;

/// Run `script` with the Python client configured for `server`.
fn python(server: &Server, script: &str) -> String {
    let prelude = format!(
        "from kubernetes import client, config\nconfig.load_kube_config(config_file={:?})\n",
        server.kubeconfig.display().to_string()
    );
    let out = Command::new("python3")
        .arg("-c")
        .arg(format!("{prelude}{script}"))
        .output()
        .expect("python3 runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "python client script failed (is the `kubernetes` package installed? ./dev test installs it):\n{text}"
    );
    text
}

#[test]
fn python_client_namespaces_services_and_events() {
    let server = Server::builder().start().unwrap();
    let out = python(
        &server,
        r#"
core = client.CoreV1Api()
# The client's models leave `kind`/`apiVersion` out unless set.
ns = core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="py-e2e")))
assert ns.kind == "Namespace", ns.kind

svc = client.V1Service(
    metadata=client.V1ObjectMeta(name="frontend"),
    spec=client.V1ServiceSpec(selector={"app": "frontend"}, ports=[client.V1ServicePort(port=80, target_port=8080)]),
)
created = core.create_namespaced_service(namespace="py-e2e", body=svc)
assert created.spec.cluster_ip.startswith("10.0.0."), created.spec.cluster_ip
assert created.spec.ports[0].protocol == "TCP"
# Upstream's service store returns the deleted object (the client hands it
# over as a plain dict).
deleted = core.delete_namespaced_service(name="frontend", namespace="py-e2e")
deleted = deleted if isinstance(deleted, dict) else deleted.to_dict()
assert deleted["kind"] == "Service" and deleted["metadata"]["name"] == "frontend", deleted

# What kopf posts for every event it reports.
event = client.CoreV1Event(
    metadata=client.V1ObjectMeta(generate_name="kopf-event-"),
    involved_object=client.V1ObjectReference(kind="Namespace", name="py-e2e", api_version="v1"),
    reason="Logging", message="handled", type="Normal",
)
posted = core.create_namespaced_event(namespace="py-e2e", body=event)
assert posted.metadata.name.startswith("kopf-event-"), posted.metadata.name

kubernetes_svc = core.read_namespaced_service(name="kubernetes", namespace="default")
assert kubernetes_svc.spec.ports[0].port == 443
# Namespaces answer a DELETE with the namespace, now Terminating.
gone = core.delete_namespace(name="py-e2e")
gone = gone if isinstance(gone, dict) else gone.to_dict()
print("ok", gone["kind"], gone["status"]["phase"])
"#,
    );
    assert!(out.contains("ok Namespace Terminating"), "{out}");
}
