//! Cluster IPs and node ports allocated through the store, as kube-apiserver
//! 1.37 allocates them: one IPAddress object per cluster IP and one node port
//! bitmap, so that two replicas on one etcd never hand out a value twice; and
//! the repair loops every replica runs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::IPAddress;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::json;
use testkit::{Etcd, Server, Storage};

fn service(name: &str, node_port: bool) -> Service {
    let kind = if node_port { "NodePort" } else { "ClusterIP" };
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"type": kind, "ports": [{"port": 80}]},
    }))
    .unwrap()
}

/// Each Service's cluster IP and node ports, by name.
async fn allocations(client: &kube::Client) -> BTreeMap<String, (String, Vec<i32>)> {
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    services
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|s| {
            let spec = s.spec.unwrap();
            let ports = spec
                .ports
                .unwrap_or_default()
                .iter()
                .filter_map(|p| p.node_port)
                .collect();
            (
                s.metadata.name.unwrap(),
                (spec.cluster_ip.unwrap_or_default(), ports),
            )
        })
        .collect()
}

async fn ip_address_parents(client: &kube::Client) -> BTreeMap<String, String> {
    let addresses: Api<IPAddress> = Api::all(client.clone());
    addresses
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|a| {
            let parent = a.spec.parent_ref;
            (
                a.metadata.name.unwrap(),
                format!(
                    "{}/{}/{}",
                    parent.resource,
                    parent.namespace.unwrap_or_default(),
                    parent.name
                ),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_never_hand_out_one_value_twice() {
    let etcd = Etcd::start().unwrap();
    // A /27 holds 30 addresses: 24 Services take most of them, so the
    // replicas' random picks meet often.
    let replica = || {
        Server::builder()
            .storage(Storage::Etcd(etcd.endpoint()))
            .arg("--service-cluster-ip-range=10.96.0.0/27")
            .arg("--service-node-port-range=30000-30031")
            .start()
            .unwrap()
    };
    let (a, b) = (replica(), replica());
    let clients = [a.client().await.unwrap(), b.client().await.unwrap()];
    let creates = (0..24).map(|i| {
        let api: Api<Service> = Api::namespaced(clients[i % 2].clone(), "default");
        async move {
            api.create(
                &PostParams::default(),
                &service(&format!("s{i}"), i % 3 == 0),
            )
            .await
        }
    });
    for created in futures::future::join_all(creates).await {
        created.unwrap();
    }
    let services = allocations(&clients[0]).await;
    assert_eq!(services.len(), 25, "24 and default/kubernetes");
    let ips: BTreeSet<&String> = services.values().map(|(ip, _)| ip).collect();
    assert_eq!(
        ips.len(),
        services.len(),
        "a cluster IP twice: {services:?}"
    );
    let ports: Vec<i32> = services.values().flat_map(|(_, p)| p.clone()).collect();
    let distinct: BTreeSet<&i32> = ports.iter().collect();
    assert_eq!(ports.len(), 8);
    assert_eq!(distinct.len(), ports.len(), "a node port twice: {ports:?}");

    // Every cluster IP is an IPAddress naming its Service, seen alike
    // through both replicas.
    let parents = ip_address_parents(&clients[1]).await;
    assert_eq!(parents, ip_address_parents(&clients[0]).await);
    for (name, (ip, _)) in &services {
        assert_eq!(parents.get(ip), Some(&format!("services/default/{name}")));
    }
    let listed = b.kubectl_ok(&["get", "ipaddresses", "10.96.0.1"]);
    assert_eq!(
        listed
            .lines()
            .map(str::split_whitespace)
            .map(Iterator::collect::<Vec<_>>)
            .collect::<Vec<_>>(),
        [
            vec!["NAME", "PARENTREF"],
            vec!["10.96.0.1", "services/default/kubernetes"]
        ]
    );
    let cidrs = b.kubectl_ok(&["get", "servicecidrs"]);
    assert!(cidrs.contains("kubernetes   10.96.0.0/27"), "{cidrs}");

    // A delete through one replica frees the address for the other.
    let (freed, _) = services["s0"].clone();
    let on_a: Api<Service> = Api::namespaced(clients[0].clone(), "default");
    on_a.delete("s0", &DeleteParams::default()).await.unwrap();
    assert!(!ip_address_parents(&clients[1]).await.contains_key(&freed));
    let on_b: Api<Service> = Api::namespaced(clients[1].clone(), "default");
    let mut again = service("again", false);
    again.spec.as_mut().unwrap().cluster_ip = Some(freed.clone());
    on_b.create(&PostParams::default(), &again).await.unwrap();
    // And a held one is refused with upstream's message.
    let mut taken = service("taken", false);
    taken.spec.as_mut().unwrap().cluster_ip = Some(freed.clone());
    let err = on_a
        .create(&PostParams::default(), &taken)
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("{err}")
    };
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        format!(
            "Service \"taken\" is invalid: spec.clusterIPs: Invalid value: []string{{\"{freed}\"}}: failed to allocate IP {freed}: provided IP is already allocated"
        )
    );
}

async fn until<T>(what: &str, limit: Duration, mut check: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(found) = check().await {
            return found;
        }
        assert!(Instant::now() < deadline, "{what} within {limit:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_repair_loop_mends_ip_addresses() {
    let server = Server::builder()
        .storage(Storage::Embedded)
        .arg("--service-repair-interval=1s")
        .arg("--request-timeout=3s")
        .start()
        .unwrap();
    let client = server.client().await.unwrap();
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let created = services
        .create(&PostParams::default(), &service("web", false))
        .await
        .unwrap();
    let ip = created.spec.unwrap().cluster_ip.unwrap();
    let addresses: Api<IPAddress> = Api::all(client.clone());

    // A Service's address deleted behind the allocator's back is put back.
    addresses
        .delete(&ip, &DeleteParams::default())
        .await
        .unwrap();
    let restored = until(
        "the IPAddress is recreated",
        Duration::from_secs(10),
        async || addresses.get_opt(&ip).await.unwrap(),
    )
    .await;
    assert_eq!(restored.spec.parent_ref.name, "web");

    // An address of the allocator no Service holds is deleted once older
    // than the request timeout; another's is left alone.
    let orphan = |name: &str, managed: bool| -> IPAddress {
        let labels = if managed {
            json!({"ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io"})
        } else {
            json!({"ipaddress.kubernetes.io/managed-by": "someone-else"})
        };
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": labels},
            "spec": {"parentRef": {"resource": "services", "namespace": "default", "name": "gone"}},
        }))
        .unwrap()
    };
    let pp = PostParams::default();
    addresses
        .create(&pp, &orphan("10.0.0.77", true))
        .await
        .unwrap();
    addresses
        .create(&pp, &orphan("10.0.0.78", false))
        .await
        .unwrap();
    let started = Instant::now();
    until(
        "the leaked IPAddress is deleted",
        Duration::from_secs(15),
        async || {
            addresses
                .get_opt("10.0.0.77")
                .await
                .unwrap()
                .is_none()
                .then_some(())
        },
    )
    .await;
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "deleted before the grace period: {:?}",
        started.elapsed()
    );
    assert!(addresses.get_opt("10.0.0.78").await.unwrap().is_some());
    assert!(server.log().contains("IPAddressNotAllocated"));
}
