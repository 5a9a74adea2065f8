//! Fully populated objects of every hand-checked kind, with the JSON that
//! Kubernetes uses for them (written out by hand from the upstream API types).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use k8s_pb::api::{apps, authentication, coordination, core, discovery, events, policy};
use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Value, json};

pub struct Case {
    pub name: &'static str,
    pub api_version: &'static str,
    pub kind: &'static str,
    pub body: Vec<u8>,
    pub expected: Value,
}

fn case(
    name: &'static str,
    api_version: &'static str,
    kind: &'static str,
    object: &impl prost::Message,
    expected: Value,
) -> Case {
    Case {
        name,
        api_version,
        kind,
        body: envelope(api_version, kind, object),
        expected,
    }
}

fn int_port(port: i32) -> Option<IntOrString> {
    // Go writes all three fields of the non-pointer struct.
    Some(IntOrString {
        r#type: Some(0),
        int_val: Some(port),
        str_val: s(""),
    })
}

fn str_port(name: &str) -> Option<IntOrString> {
    Some(IntOrString {
        r#type: Some(1),
        int_val: Some(0),
        str_val: s(name),
    })
}

fn object_ref(kind: &str, name: &str) -> Option<core::v1::ObjectReference> {
    Some(core::v1::ObjectReference {
        kind: s(kind),
        namespace: s("default"),
        name: s(name),
        uid: s("0b9c2d8e-1c4f-4a8e-9a57-3f0d2c1b7e61"),
        api_version: s("v1"),
        resource_version: s("42"),
        field_path: s("spec.containers{app}"),
    })
}

fn object_ref_json(kind: &str, name: &str) -> Value {
    json!({
        "kind": kind,
        "namespace": "default",
        "name": name,
        "uid": "0b9c2d8e-1c4f-4a8e-9a57-3f0d2c1b7e61",
        "apiVersion": "v1",
        "resourceVersion": "42",
        "fieldPath": "spec.containers{app}",
    })
}

/// ObjectMeta with every field populated.
fn full_meta() -> Option<meta::ObjectMeta> {
    Some(meta::ObjectMeta {
        name: s("web"),
        generate_name: s("web-"),
        namespace: s("prod"),
        self_link: s(""),
        uid: s("6e0f8f43-3b1e-4b5e-8f3a-2c9d1f7a4b10"),
        resource_version: s("12345"),
        generation: Some(3),
        creation_timestamp: time(T0),
        deletion_timestamp: time(T0 + 3600),
        deletion_grace_period_seconds: Some(0),
        labels: map(&[("app", s("web").unwrap()), ("tier", String::new())]),
        annotations: map(&[("note", "a \"quoted\" value\nwith newline".to_string())]),
        owner_references: vec![
            meta::OwnerReference {
                api_version: s("apps/v1"),
                kind: s("ReplicaSet"),
                name: s("web-7d4b9c"),
                uid: s("d7d2a3b4-9f5e-4c1a-8b7d-6e5f4a3b2c1d"),
                controller: Some(true),
                block_owner_deletion: Some(false),
            },
            meta::OwnerReference {
                api_version: s("v1"),
                kind: s("ConfigMap"),
                name: s("cfg"),
                uid: s("u2"),
                controller: None,
                block_owner_deletion: None,
            },
        ],
        finalizers: strings(&["example.com/cleanup", "kubernetes"]),
        managed_fields: vec![meta::ManagedFieldsEntry {
            manager: s("kubectl-create"),
            operation: s("Update"),
            api_version: s("v1"),
            time: time(T0),
            fields_type: s("FieldsV1"),
            fields_v1: Some(meta::FieldsV1 {
                raw: Some(br#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}}}"#.to_vec()),
            }),
            subresource: s(""),
        }],
    })
}

fn full_meta_json() -> Value {
    json!({
        "name": "web",
        "generateName": "web-",
        "namespace": "prod",
        "uid": "6e0f8f43-3b1e-4b5e-8f3a-2c9d1f7a4b10",
        "resourceVersion": "12345",
        "generation": 3,
        "creationTimestamp": "2026-11-21T19:30:00Z",
        "deletionTimestamp": "2026-11-21T20:30:00Z",
        "deletionGracePeriodSeconds": 0,
        "labels": {"app": "web", "tier": ""},
        "annotations": {"note": "a \"quoted\" value\nwith newline"},
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "web-7d4b9c",
                "uid": "d7d2a3b4-9f5e-4c1a-8b7d-6e5f4a3b2c1d",
                "controller": true,
                "blockOwnerDeletion": false,
            },
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "cfg", "uid": "u2"},
        ],
        "finalizers": ["example.com/cleanup", "kubernetes"],
        "managedFields": [{
            "manager": "kubectl-create",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2026-11-21T19:30:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}},
        }],
    })
}

pub fn cases() -> Vec<Case> {
    let mut cases = Vec::new();

    // --- core/v1 ConfigMap -------------------------------------------------
    cases.push(case(
        "configmap as sent by kubectl create configmap",
        "v1",
        "ConfigMap",
        &core::v1::ConfigMap {
            metadata: go_meta("game-config", "default"),
            immutable: None,
            data: map(&[("a", "1".to_string()), ("empty", String::new())]),
            binary_data: map(&[("bin", vec![0u8, 1, 2, 0xff]), ("none", vec![])]),
        },
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "game-config", "namespace": "default"},
            "data": {"a": "1", "empty": ""},
            "binaryData": {"bin": "AAEC/w==", "none": ""},
        }),
    ));
    cases.push(case(
        "configmap with full metadata and immutable=false",
        "v1",
        "ConfigMap",
        &core::v1::ConfigMap {
            metadata: full_meta(),
            immutable: Some(false),
            ..Default::default()
        },
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": full_meta_json(),
            "immutable": false,
        }),
    ));

    // --- core/v1 Secret ----------------------------------------------------
    cases.push(case(
        "secret with binary data",
        "v1",
        "Secret",
        &core::v1::Secret {
            metadata: go_meta("creds", ""),
            immutable: Some(true),
            data: map(&[
                ("password", b"s3cr\xffet".to_vec()),
                ("tls.key", vec![0u8; 5]),
            ]),
            string_data: map(&[("user", "admin".to_string())]),
            r#type: s("kubernetes.io/basic-auth"),
        },
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "creds"},
            "immutable": true,
            "data": {"password": "czNjcv9ldA==", "tls.key": "AAAAAAA="},
            "stringData": {"user": "admin"},
            "type": "kubernetes.io/basic-auth",
        }),
    ));
    cases.push(case(
        "secret with empty type (omitempty)",
        "v1",
        "Secret",
        &core::v1::Secret {
            metadata: go_meta("empty", "ns"),
            r#type: s(""),
            ..Default::default()
        },
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "empty", "namespace": "ns"},
        }),
    ));

    // --- core/v1 Namespace -------------------------------------------------
    cases.push(case(
        "namespace",
        "v1",
        "Namespace",
        &core::v1::Namespace {
            metadata: go_meta("team-a", ""),
            spec: Some(core::v1::NamespaceSpec {
                finalizers: strings(&["kubernetes"]),
            }),
            status: Some(core::v1::NamespaceStatus {
                phase: s("Terminating"),
                conditions: vec![core::v1::NamespaceCondition {
                    r#type: s("NamespaceDeletionContentFailure"),
                    status: s("False"),
                    last_transition_time: time(T0),
                    reason: s("ContentDeleted"),
                    message: s("All content successfully deleted"),
                }],
            }),
        },
        json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "team-a"},
            "spec": {"finalizers": ["kubernetes"]},
            "status": {
                "phase": "Terminating",
                "conditions": [{
                    "type": "NamespaceDeletionContentFailure",
                    "status": "False",
                    "lastTransitionTime": "2026-11-21T19:30:00Z",
                    "reason": "ContentDeleted",
                    "message": "All content successfully deleted",
                }],
            },
        }),
    ));
    cases.push(case(
        "namespace as sent by kubectl create namespace",
        "v1",
        "Namespace",
        &core::v1::Namespace {
            metadata: go_meta("dev", ""),
            spec: Some(core::v1::NamespaceSpec::default()),
            status: Some(core::v1::NamespaceStatus {
                phase: s(""),
                conditions: vec![],
            }),
        },
        json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "dev"},
            "spec": {},
            "status": {},
        }),
    ));

    // --- core/v1 ServiceAccount --------------------------------------------
    cases.push(case(
        "serviceaccount",
        "v1",
        "ServiceAccount",
        &core::v1::ServiceAccount {
            metadata: go_meta("builder", "ci"),
            secrets: vec![core::v1::ObjectReference {
                kind: s(""),
                namespace: s(""),
                name: s("builder-token"),
                uid: s(""),
                api_version: s(""),
                resource_version: s(""),
                field_path: s(""),
            }],
            image_pull_secrets: vec![core::v1::LocalObjectReference {
                name: s("registry"),
            }],
            automount_service_account_token: Some(false),
        },
        json!({
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "builder", "namespace": "ci"},
            "secrets": [{"name": "builder-token"}],
            "imagePullSecrets": [{"name": "registry"}],
            "automountServiceAccountToken": false,
        }),
    ));

    // --- core/v1 Service ---------------------------------------------------
    cases.push(case(
        "service with int and string targetPorts",
        "v1",
        "Service",
        &core::v1::Service {
            metadata: go_meta("web", "default"),
            spec: Some(core::v1::ServiceSpec {
                ports: vec![
                    core::v1::ServicePort {
                        name: s("http"),
                        protocol: s("TCP"),
                        app_protocol: s("http"),
                        port: Some(80),
                        target_port: int_port(8080),
                        node_port: Some(30080),
                    },
                    core::v1::ServicePort {
                        name: s("metrics"),
                        protocol: s("TCP"),
                        app_protocol: None,
                        port: Some(9090),
                        target_port: str_port("metrics"),
                        node_port: Some(0),
                    },
                ],
                selector: map(&[("app", "web".to_string())]),
                cluster_ip: s("10.96.0.10"),
                cluster_ips: strings(&["10.96.0.10", "fd00::10"]),
                r#type: s("NodePort"),
                external_ips: strings(&["192.0.2.1"]),
                session_affinity: s("ClientIP"),
                load_balancer_ip: s(""),
                load_balancer_source_ranges: strings(&["10.0.0.0/8"]),
                external_name: s(""),
                external_traffic_policy: s("Local"),
                health_check_node_port: Some(0),
                publish_not_ready_addresses: Some(false),
                session_affinity_config: Some(core::v1::SessionAffinityConfig {
                    client_ip: Some(core::v1::ClientIpConfig {
                        timeout_seconds: Some(10800),
                    }),
                }),
                ip_families: strings(&["IPv4", "IPv6"]),
                ip_family_policy: s("PreferDualStack"),
                allocate_load_balancer_node_ports: Some(false),
                load_balancer_class: None,
                internal_traffic_policy: s("Cluster"),
                traffic_distribution: s("PreferClose"),
            }),
            status: Some(core::v1::ServiceStatus {
                load_balancer: Some(core::v1::LoadBalancerStatus {
                    ingress: vec![core::v1::LoadBalancerIngress {
                        ip: s("203.0.113.7"),
                        hostname: s("lb.example.com"),
                        ip_mode: s("VIP"),
                        ports: vec![core::v1::PortStatus {
                            port: Some(80),
                            protocol: s("TCP"),
                            error: s("CertificateError"),
                        }],
                    }],
                }),
                conditions: vec![meta::Condition {
                    r#type: s("Ready"),
                    status: s("True"),
                    observed_generation: Some(2),
                    last_transition_time: time(T0),
                    reason: s("Provisioned"),
                    message: s(""),
                }],
            }),
        },
        json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "ports": [
                    {
                        "name": "http",
                        "protocol": "TCP",
                        "appProtocol": "http",
                        "port": 80,
                        "targetPort": 8080,
                        "nodePort": 30080,
                    },
                    {
                        "name": "metrics",
                        "protocol": "TCP",
                        "port": 9090,
                        "targetPort": "metrics",
                    },
                ],
                "selector": {"app": "web"},
                "clusterIP": "10.96.0.10",
                "clusterIPs": ["10.96.0.10", "fd00::10"],
                "type": "NodePort",
                "externalIPs": ["192.0.2.1"],
                "sessionAffinity": "ClientIP",
                "loadBalancerSourceRanges": ["10.0.0.0/8"],
                "externalTrafficPolicy": "Local",
                "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}},
                "ipFamilies": ["IPv4", "IPv6"],
                "ipFamilyPolicy": "PreferDualStack",
                "allocateLoadBalancerNodePorts": false,
                "internalTrafficPolicy": "Cluster",
                "trafficDistribution": "PreferClose",
            },
            "status": {
                "loadBalancer": {
                    "ingress": [{
                        "ip": "203.0.113.7",
                        "hostname": "lb.example.com",
                        "ipMode": "VIP",
                        "ports": [{"port": 80, "protocol": "TCP", "error": "CertificateError"}],
                    }],
                },
                "conditions": [{
                    "type": "Ready",
                    "status": "True",
                    "observedGeneration": 2,
                    "lastTransitionTime": "2026-11-21T19:30:00Z",
                    "reason": "Provisioned",
                    "message": "",
                }],
            },
        }),
    ));
    cases.push(case(
        "service as sent by kubectl create service clusterip",
        "v1",
        "Service",
        &core::v1::Service {
            metadata: Some(meta::ObjectMeta {
                labels: map(&[("app", "my-svc".to_string())]),
                ..go_meta("my-svc", "").unwrap()
            }),
            spec: Some(core::v1::ServiceSpec {
                ports: vec![core::v1::ServicePort {
                    name: s("5678-8080"),
                    protocol: s("TCP"),
                    app_protocol: None,
                    port: Some(5678),
                    target_port: int_port(8080),
                    node_port: Some(0),
                }],
                selector: map(&[("app", "my-svc".to_string())]),
                cluster_ip: s(""),
                r#type: s("ClusterIP"),
                session_affinity: s(""),
                load_balancer_ip: s(""),
                external_name: s(""),
                external_traffic_policy: s(""),
                health_check_node_port: Some(0),
                publish_not_ready_addresses: Some(false),
                ..Default::default()
            }),
            status: Some(core::v1::ServiceStatus {
                load_balancer: Some(core::v1::LoadBalancerStatus::default()),
                conditions: vec![],
            }),
        },
        json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "my-svc", "labels": {"app": "my-svc"}},
            "spec": {
                "ports": [{"name": "5678-8080", "protocol": "TCP", "port": 5678, "targetPort": 8080}],
                "selector": {"app": "my-svc"},
                "type": "ClusterIP",
            },
            "status": {"loadBalancer": {}},
        }),
    ));

    // --- core/v1 Endpoints -------------------------------------------------
    cases.push(case(
        "endpoints",
        "v1",
        "Endpoints",
        &core::v1::Endpoints {
            metadata: go_meta("web", "default"),
            subsets: vec![core::v1::EndpointSubset {
                addresses: vec![core::v1::EndpointAddress {
                    ip: s("10.244.1.5"),
                    hostname: s("web-0"),
                    node_name: s("node-1"),
                    target_ref: object_ref("Pod", "web-0"),
                }],
                not_ready_addresses: vec![core::v1::EndpointAddress {
                    ip: s("10.244.2.9"),
                    hostname: s(""),
                    node_name: None,
                    target_ref: None,
                }],
                ports: vec![core::v1::EndpointPort {
                    name: s("http"),
                    port: Some(8080),
                    protocol: s("TCP"),
                    app_protocol: s("kubernetes.io/h2c"),
                }],
            }],
        },
        json!({
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": "web", "namespace": "default"},
            "subsets": [{
                "addresses": [{
                    "ip": "10.244.1.5",
                    "hostname": "web-0",
                    "nodeName": "node-1",
                    "targetRef": object_ref_json("Pod", "web-0"),
                }],
                "notReadyAddresses": [{"ip": "10.244.2.9"}],
                "ports": [{
                    "name": "http",
                    "port": 8080,
                    "protocol": "TCP",
                    "appProtocol": "kubernetes.io/h2c",
                }],
            }],
        }),
    ));

    // --- core/v1 Event -----------------------------------------------------
    cases.push(case(
        "core event",
        "v1",
        "Event",
        &core::v1::Event {
            metadata: go_meta("web-0.17a", "default"),
            involved_object: object_ref("Pod", "web-0"),
            reason: s("Pulled"),
            message: s("Successfully pulled image"),
            source: Some(core::v1::EventSource {
                component: s("kubelet"),
                host: s("node-1"),
            }),
            first_timestamp: time(T0),
            last_timestamp: time(T0 + 60),
            count: Some(2),
            r#type: s("Normal"),
            event_time: micro_time(T0, 123_456_789),
            series: Some(core::v1::EventSeries {
                count: Some(2),
                last_observed_time: micro_time(T0 + 60, 5_000),
            }),
            action: s("Pulling"),
            related: object_ref("Node", "node-1"),
            reporting_component: s("kubelet"),
            reporting_instance: s("node-1"),
        },
        json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "web-0.17a", "namespace": "default"},
            "involvedObject": object_ref_json("Pod", "web-0"),
            "reason": "Pulled",
            "message": "Successfully pulled image",
            "source": {"component": "kubelet", "host": "node-1"},
            "firstTimestamp": "2026-11-21T19:30:00Z",
            "lastTimestamp": "2026-11-21T19:31:00Z",
            "count": 2,
            "type": "Normal",
            "eventTime": "2026-11-21T19:30:00.123456Z",
            "series": {"count": 2, "lastObservedTime": "2026-11-21T19:31:00.000005Z"},
            "action": "Pulling",
            "related": object_ref_json("Node", "node-1"),
            "reportingComponent": "kubelet",
            "reportingInstance": "node-1",
        }),
    ));
    cases.push(case(
        "core event as written by an old client-go recorder (zero times are null)",
        "v1",
        "Event",
        &core::v1::Event {
            metadata: go_meta("web-0.17b", "default"),
            involved_object: Some(core::v1::ObjectReference {
                kind: s("Pod"),
                name: s("web-0"),
                ..Default::default()
            }),
            reason: s("Started"),
            message: s(""),
            source: Some(core::v1::EventSource {
                component: s(""),
                host: s(""),
            }),
            first_timestamp: time(T0),
            last_timestamp: time(T0),
            count: Some(1),
            r#type: s("Normal"),
            event_time: Some(meta::MicroTime::default()),
            series: None,
            action: s(""),
            related: None,
            reporting_component: s(""),
            reporting_instance: s(""),
        },
        json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "web-0.17b", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "web-0"},
            "reason": "Started",
            "source": {},
            "firstTimestamp": "2026-11-21T19:30:00Z",
            "lastTimestamp": "2026-11-21T19:30:00Z",
            "count": 1,
            "type": "Normal",
            "eventTime": null,
            "reportingComponent": "",
            "reportingInstance": "",
        }),
    ));

    // --- discovery.k8s.io/v1 EndpointSlice ---------------------------------
    cases.push(case(
        "endpointslice",
        "discovery.k8s.io/v1",
        "EndpointSlice",
        &discovery::v1::EndpointSlice {
            metadata: go_meta("web-abc12", "default"),
            address_type: s("IPv4"),
            endpoints: vec![discovery::v1::Endpoint {
                addresses: strings(&["10.244.1.5"]),
                conditions: Some(discovery::v1::EndpointConditions {
                    ready: Some(false),
                    serving: Some(true),
                    terminating: Some(false),
                }),
                hostname: s("web-0"),
                target_ref: object_ref("Pod", "web-0"),
                deprecated_topology: map(&[("kubernetes.io/hostname", "node-1".to_string())]),
                node_name: s("node-1"),
                zone: s("zone-a"),
                hints: Some(discovery::v1::EndpointHints {
                    for_zones: vec![discovery::v1::ForZone { name: s("zone-a") }],
                    for_nodes: vec![discovery::v1::ForNode { name: s("node-1") }],
                }),
            }],
            ports: vec![discovery::v1::EndpointPort {
                name: s("http"),
                protocol: s("TCP"),
                port: Some(8080),
                app_protocol: s("http"),
            }],
        },
        json!({
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {"name": "web-abc12", "namespace": "default"},
            "addressType": "IPv4",
            "endpoints": [{
                "addresses": ["10.244.1.5"],
                "conditions": {"ready": false, "serving": true, "terminating": false},
                "hostname": "web-0",
                "targetRef": object_ref_json("Pod", "web-0"),
                "deprecatedTopology": {"kubernetes.io/hostname": "node-1"},
                "nodeName": "node-1",
                "zone": "zone-a",
                "hints": {"forZones": [{"name": "zone-a"}], "forNodes": [{"name": "node-1"}]},
            }],
            "ports": [{"name": "http", "protocol": "TCP", "port": 8080, "appProtocol": "http"}],
        }),
    ));

    // --- coordination.k8s.io/v1 Lease --------------------------------------
    cases.push(case(
        "lease with microtime",
        "coordination.k8s.io/v1",
        "Lease",
        &coordination::v1::Lease {
            metadata: go_meta("kube-controller-manager", "kube-system"),
            spec: Some(coordination::v1::LeaseSpec {
                holder_identity: s("cm-1_4f1c"),
                lease_duration_seconds: Some(15),
                acquire_time: micro_time(T0, 123_456_789),
                renew_time: micro_time(T0 + 10, 999_999),
                lease_transitions: Some(0),
                strategy: s("OldestEmulationVersion"),
                preferred_holder: s("cm-2"),
            }),
        },
        json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "kube-controller-manager", "namespace": "kube-system"},
            "spec": {
                "holderIdentity": "cm-1_4f1c",
                "leaseDurationSeconds": 15,
                "acquireTime": "2026-11-21T19:30:00.123456Z",
                "renewTime": "2026-11-21T19:30:10.000999Z",
                "leaseTransitions": 0,
                "strategy": "OldestEmulationVersion",
                "preferredHolder": "cm-2",
            },
        }),
    ));

    // --- events.k8s.io/v1 Event --------------------------------------------
    cases.push(case(
        "events.k8s.io event",
        "events.k8s.io/v1",
        "Event",
        &events::v1::Event {
            metadata: go_meta("web-0.18c", "default"),
            event_time: micro_time(T0, 1_000),
            series: Some(events::v1::EventSeries {
                count: Some(3),
                last_observed_time: micro_time(T0 + 60, 0),
            }),
            reporting_controller: s("kubernetes.io/kubelet"),
            reporting_instance: s("node-1"),
            action: s("Pulling"),
            reason: s("Pulled"),
            regarding: object_ref("Pod", "web-0"),
            related: None,
            note: s("pulled image"),
            r#type: s("Normal"),
            deprecated_source: Some(core::v1::EventSource {
                component: s(""),
                host: s(""),
            }),
            deprecated_first_timestamp: Some(meta::Time::default()),
            deprecated_last_timestamp: time(T0),
            deprecated_count: Some(0),
        },
        json!({
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": "web-0.18c", "namespace": "default"},
            "eventTime": "2026-11-21T19:30:00.000001Z",
            "series": {"count": 3, "lastObservedTime": "2026-11-21T19:31:00.000000Z"},
            "reportingController": "kubernetes.io/kubelet",
            "reportingInstance": "node-1",
            "action": "Pulling",
            "reason": "Pulled",
            "regarding": object_ref_json("Pod", "web-0"),
            "note": "pulled image",
            "type": "Normal",
            "deprecatedSource": {},
            "deprecatedFirstTimestamp": null,
            "deprecatedLastTimestamp": "2026-11-21T19:30:00Z",
        }),
    ));

    // --- authentication.k8s.io/v1 TokenRequest -----------------------------
    cases.push(case(
        "tokenrequest as sent by kubectl create token",
        "authentication.k8s.io/v1",
        "TokenRequest",
        &authentication::v1::TokenRequest {
            metadata: go_meta("", ""),
            spec: Some(authentication::v1::TokenRequestSpec {
                audiences: strings(&["https://kubernetes.default.svc"]),
                expiration_seconds: Some(3600),
                bound_object_ref: Some(authentication::v1::BoundObjectReference {
                    kind: s("Pod"),
                    api_version: s("v1"),
                    name: s("web-0"),
                    u_id: s("0b9c2d8e-1c4f-4a8e-9a57-3f0d2c1b7e61"),
                }),
            }),
            status: Some(authentication::v1::TokenRequestStatus {
                token: s(""),
                expiration_timestamp: Some(meta::Time::default()),
            }),
        },
        json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "metadata": {},
            "spec": {
                "audiences": ["https://kubernetes.default.svc"],
                "expirationSeconds": 3600,
                "boundObjectRef": {
                    "kind": "Pod",
                    "apiVersion": "v1",
                    "name": "web-0",
                    "uid": "0b9c2d8e-1c4f-4a8e-9a57-3f0d2c1b7e61",
                },
            },
            "status": {"token": "", "expirationTimestamp": null},
        }),
    ));

    // --- meta/v1 DeleteOptions ---------------------------------------------
    let delete_options = meta::DeleteOptions {
        grace_period_seconds: Some(0),
        preconditions: Some(meta::Preconditions {
            uid: s("6e0f8f43-3b1e-4b5e-8f3a-2c9d1f7a4b10"),
            resource_version: s("12345"),
        }),
        orphan_dependents: Some(false),
        propagation_policy: s("Foreground"),
        dry_run: strings(&["All"]),
        ignore_store_read_error_with_cluster_breaking_potential: Some(true),
    };
    for api_version in ["v1", "apps/v1", "meta.k8s.io/v1"] {
        cases.push(case(
            "deleteoptions",
            api_version,
            "DeleteOptions",
            &delete_options,
            json!({
                "apiVersion": api_version,
                "kind": "DeleteOptions",
                "gracePeriodSeconds": 0,
                "preconditions": {
                    "uid": "6e0f8f43-3b1e-4b5e-8f3a-2c9d1f7a4b10",
                    "resourceVersion": "12345",
                },
                "orphanDependents": false,
                "propagationPolicy": "Foreground",
                "dryRun": ["All"],
                "ignoreStoreReadErrorWithClusterBreakingPotential": true,
            }),
        ));
    }

    // --- policy/v1 PodDisruptionBudget (LabelSelector) ---------------------
    cases.push(case(
        "poddisruptionbudget with label selector",
        "policy/v1",
        "PodDisruptionBudget",
        &policy::v1::PodDisruptionBudget {
            metadata: go_meta("web", "default"),
            spec: Some(policy::v1::PodDisruptionBudgetSpec {
                min_available: Some(IntOrString {
                    r#type: Some(1),
                    int_val: Some(0),
                    str_val: s("50%"),
                }),
                selector: Some(meta::LabelSelector {
                    match_labels: map(&[("app", "web".to_string())]),
                    match_expressions: vec![meta::LabelSelectorRequirement {
                        key: s("tier"),
                        operator: s("In"),
                        values: strings(&["frontend", "backend"]),
                    }],
                }),
                max_unavailable: None,
                unhealthy_pod_eviction_policy: s("AlwaysAllow"),
            }),
            status: None,
        },
        json!({
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "minAvailable": "50%",
                "selector": {
                    "matchLabels": {"app": "web"},
                    "matchExpressions": [
                        {"key": "tier", "operator": "In", "values": ["frontend", "backend"]},
                    ],
                },
                "unhealthyPodEvictionPolicy": "AlwaysAllow",
            },
        }),
    ));

    // --- apps/v1 Deployment (inline structs, quantities) -------------------
    cases.push(case(
        "deployment with probes, volumes and resources",
        "apps/v1",
        "Deployment",
        &apps::v1::Deployment {
            metadata: go_meta("nginx", "default"),
            spec: Some(apps::v1::DeploymentSpec {
                replicas: Some(2),
                selector: Some(meta::LabelSelector {
                    match_labels: map(&[("app", "nginx".to_string())]),
                    match_expressions: vec![],
                }),
                template: Some(core::v1::PodTemplateSpec {
                    metadata: Some(meta::ObjectMeta {
                        labels: map(&[("app", "nginx".to_string())]),
                        creation_timestamp: Some(meta::Time::default()),
                        ..Default::default()
                    }),
                    spec: Some(core::v1::PodSpec {
                        volumes: vec![core::v1::Volume {
                            name: s("cfg"),
                            volume_source: Some(core::v1::VolumeSource {
                                config_map: Some(core::v1::ConfigMapVolumeSource {
                                    local_object_reference: Some(
                                        core::v1::LocalObjectReference { name: s("nginx-cfg") },
                                    ),
                                    items: vec![core::v1::KeyToPath {
                                        key: s("nginx.conf"),
                                        path: s("nginx.conf"),
                                        mode: Some(0o644),
                                    }],
                                    default_mode: Some(0o420),
                                    optional: None,
                                }),
                                ..Default::default()
                            }),
                        }],
                        containers: vec![core::v1::Container {
                            name: s("nginx"),
                            image: s("nginx:1.27"),
                            ports: vec![core::v1::ContainerPort {
                                name: s("http"),
                                host_port: Some(0),
                                container_port: Some(80),
                                protocol: s("TCP"),
                                host_ip: s(""),
                            }],
                            resources: Some(core::v1::ResourceRequirements {
                                limits: map(&[(
                                    "memory",
                                    Quantity { string: s("128Mi") },
                                )]),
                                requests: map(&[("cpu", Quantity { string: s("250m") })]),
                                claims: vec![],
                            }),
                            readiness_probe: Some(core::v1::Probe {
                                handler: Some(core::v1::ProbeHandler {
                                    http_get: Some(core::v1::HttpGetAction {
                                        path: s("/healthz"),
                                        port: str_port("http"),
                                        host: s(""),
                                        scheme: s("HTTP"),
                                        http_headers: vec![],
                                    }),
                                    ..Default::default()
                                }),
                                initial_delay_seconds: Some(5),
                                timeout_seconds: Some(1),
                                period_seconds: Some(10),
                                success_threshold: Some(1),
                                failure_threshold: Some(3),
                                termination_grace_period_seconds: None,
                            }),
                            env: vec![core::v1::EnvVar {
                                name: s("MODE"),
                                value: s(""),
                                value_from: Some(core::v1::EnvVarSource {
                                    config_map_key_ref: Some(core::v1::ConfigMapKeySelector {
                                        local_object_reference: Some(
                                            core::v1::LocalObjectReference { name: s("nginx-cfg") },
                                        ),
                                        key: s("mode"),
                                        optional: Some(true),
                                    }),
                                    ..Default::default()
                                }),
                            }],
                            image_pull_policy: s("IfNotPresent"),
                            stdin: Some(false),
                            ..Default::default()
                        }],
                        ..Default::default()
                    }),
                }),
                strategy: Some(apps::v1::DeploymentStrategy {
                    r#type: s("RollingUpdate"),
                    rolling_update: Some(apps::v1::RollingUpdateDeployment {
                        max_unavailable: int_port(0),
                        max_surge: str_port("25%"),
                    }),
                }),
                min_ready_seconds: Some(0),
                revision_history_limit: Some(10),
                paused: Some(false),
                progress_deadline_seconds: Some(600),
            }),
            status: Some(apps::v1::DeploymentStatus::default()),
        },
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "nginx", "namespace": "default"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "nginx"}},
                "template": {
                    "metadata": {"labels": {"app": "nginx"}},
                    "spec": {
                        "volumes": [{
                            "name": "cfg",
                            "configMap": {
                                "name": "nginx-cfg",
                                "items": [{"key": "nginx.conf", "path": "nginx.conf", "mode": 420}],
                                "defaultMode": 272,
                            },
                        }],
                        "containers": [{
                            "name": "nginx",
                            "image": "nginx:1.27",
                            "ports": [{"name": "http", "containerPort": 80, "protocol": "TCP"}],
                            "resources": {
                                "limits": {"memory": "128Mi"},
                                "requests": {"cpu": "250m"},
                            },
                            "readinessProbe": {
                                "httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"},
                                "initialDelaySeconds": 5,
                                "timeoutSeconds": 1,
                                "periodSeconds": 10,
                                "successThreshold": 1,
                                "failureThreshold": 3,
                            },
                            "env": [{
                                "name": "MODE",
                                "valueFrom": {
                                    "configMapKeyRef": {"name": "nginx-cfg", "key": "mode", "optional": true},
                                },
                            }],
                            "imagePullPolicy": "IfNotPresent",
                        }],
                    },
                },
                "strategy": {
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "25%"},
                },
                "revisionHistoryLimit": 10,
                "progressDeadlineSeconds": 600,
            },
            "status": {},
        }),
    ));

    cases
}
