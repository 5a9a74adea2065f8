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

/// The Python client's pod and ReplicationController calls (issue 30): a pod's
/// DELETE answers the Pod (upstream's pod store returns the deleted object),
/// and a ReplicationController carries `status.replicas: 0` as Go writes it,
/// which the client's models require.
#[test]
fn python_client_pods_and_replication_controllers() {
    let server = Server::builder().start().unwrap();
    let out = python(
        &server,
        r#"
core = client.CoreV1Api()
container = client.V1Container(name="c", image="busybox")
pod = client.V1Pod(metadata=client.V1ObjectMeta(name="p"), spec=client.V1PodSpec(containers=[container]))
core.create_namespaced_pod(namespace="default", body=pod)
deleted = core.delete_namespaced_pod(name="p", namespace="default")
assert isinstance(deleted, client.V1Pod), type(deleted)
assert deleted.metadata.name == "p"

template = client.V1PodTemplateSpec(metadata=client.V1ObjectMeta(labels={"app": "a"}),
                                    spec=client.V1PodSpec(containers=[container]))
rc = client.V1ReplicationController(metadata=client.V1ObjectMeta(name="rc"),
    spec=client.V1ReplicationControllerSpec(replicas=1, selector={"app": "a"}, template=template))
created = core.create_namespaced_replication_controller(namespace="default", body=rc)
assert created.status.replicas == 0, created.status
read = core.read_namespaced_replication_controller(name="rc", namespace="default")
assert read.status.replicas == 0
assert read.spec.template.spec.containers[0].resources is not None
print("ok")
"#,
    );
    assert!(out.contains("ok"), "{out}");
}
