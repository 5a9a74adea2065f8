//! Replicas on one etcd show themselves as kube-apiserver's do: each keeps
//! its identity Lease `kube-system/apiserver-<hash>` (renewed; an expired one
//! is garbage-collected, a terminated replica deletes its own), and
//! `default/kubernetes`'s Endpoints and EndpointSlice list every live replica
//! (a terminated one leaves at once, a killed one when its entry expires).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Endpoints;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, ListParams};
use testkit::{Etcd, Server, Storage};

const IDENTITY: &str = "apiserver.kubernetes.io/identity=kube-apiserver";

fn replica(etcd: &Etcd, args: &[String]) -> Server {
    let mut builder = Server::builder().storage(Storage::Etcd(etcd.endpoint()));
    for arg in args {
        builder = builder.arg(arg.clone());
    }
    builder.start().unwrap()
}

/// The identity Leases, by the address they announce.
async fn identity_leases(client: &kube::Client) -> Vec<Lease> {
    Api::<Lease>::namespaced(client.clone(), "kube-system")
        .list(&ListParams::default().labels(IDENTITY))
        .await
        .unwrap()
        .items
}

fn lease_of(leases: &[Lease], addr: SocketAddr) -> Option<&Lease> {
    leases.iter().find(|l| {
        l.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("kubernetes.io/peer-advertise-address"))
            == Some(&addr.to_string())
    })
}

/// Poll `check` every 100 ms until it holds; how long that took.
async fn within<T>(
    what: &str,
    limit: Duration,
    mut check: impl AsyncFnMut() -> Option<T>,
) -> (T, Duration) {
    let started = Instant::now();
    loop {
        if let Some(done) = check().await {
            return (done, started.elapsed());
        }
        assert!(started.elapsed() < limit, "{what} within {limit:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_replica_keeps_an_identity_lease_and_expired_ones_are_collected() {
    let etcd = Etcd::start().unwrap();
    let fast_gc = ["--identity-lease-gc-period=1s".to_string()];
    let a = replica(&etcd, &fast_gc);
    // Short-lived: renewed every second, expired 3 s after its last renewal.
    let mut b = replica(
        &etcd,
        &[
            "--identity-lease-duration-seconds=3".into(),
            "--identity-lease-renew-interval=1s".into(),
        ],
    );
    let mut c = replica(&etcd, &[]);
    let client = a.client().await.unwrap();

    let (leases, _) = within(
        "three identity leases",
        Duration::from_secs(10),
        async || {
            let leases = identity_leases(&client).await;
            (leases.len() == 3).then_some(leases)
        },
    )
    .await;
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string();
    let mut names = Vec::new();
    for server in [&a, &b, &c] {
        let lease = lease_of(&leases, server.addr).expect("a lease per replica");
        let name = lease.metadata.name.clone().unwrap();
        assert!(
            name.starts_with("apiserver-") && name.len() == "apiserver-".len() + 26,
            "{name}"
        );
        let labels = lease.metadata.labels.clone().unwrap();
        assert_eq!(labels["apiserver.kubernetes.io/identity"], "kube-apiserver");
        assert_eq!(labels["kubernetes.io/hostname"], hostname);
        let spec = lease.spec.clone().unwrap();
        assert!(
            spec.holder_identity
                .unwrap()
                .starts_with(&format!("{name}_")),
            "holderIdentity is the name and a uuid"
        );
        assert!(spec.renew_time.is_some());
        names.push(name);
    }
    names.dedup();
    assert_eq!(
        names.len(),
        3,
        "one lease per replica on one host: {names:?}"
    );
    assert_eq!(
        lease_of(&leases, a.addr)
            .unwrap()
            .spec
            .as_ref()
            .unwrap()
            .lease_duration_seconds,
        Some(3600)
    );

    // Renewed: b's renewTime moves on.
    let renewed = |leases: &[Lease]| {
        lease_of(leases, b.addr)
            .and_then(|l| l.spec.clone()?.renew_time)
            .map(|t| t.0)
    };
    let first = renewed(&leases).unwrap();
    within("b's lease renewed", Duration::from_secs(5), async || {
        let now = renewed(&identity_leases(&client).await)?;
        (now > first).then_some(())
    })
    .await;

    // Killed: b's lease expires and the collector deletes it.
    b.kill9();
    let (_, took) = within(
        "b's expired lease collected",
        Duration::from_secs(15),
        async || {
            lease_of(&identity_leases(&client).await, b.addr)
                .is_none()
                .then_some(())
        },
    )
    .await;
    eprintln!("a killed replica's identity lease (3 s) was collected after {took:?}");
    assert!(
        took > Duration::from_secs(1),
        "collected only once expired ({took:?})"
    );

    // Terminated: c deletes its own lease on the way out (it had an hour left).
    let status = c.terminate(Duration::from_secs(20)).unwrap();
    assert!(status.success(), "{status:?}");
    let leases = identity_leases(&client).await;
    assert!(
        lease_of(&leases, c.addr).is_none(),
        "c's lease is gone: {leases:?}"
    );
    assert!(lease_of(&leases, a.addr).is_some());
}

/// `default/kubernetes`'s Endpoints: the addresses and the port.
async fn endpoints(client: &kube::Client) -> (Vec<String>, Option<i32>) {
    let e = Api::<Endpoints>::namespaced(client.clone(), "default")
        .get("kubernetes")
        .await
        .unwrap();
    let subset = e.subsets.unwrap_or_default().into_iter().next();
    let ips = subset
        .as_ref()
        .and_then(|s| s.addresses.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|a| a.ip)
        .collect();
    let port = subset
        .and_then(|s| s.ports)
        .and_then(|p| p.first().map(|p| p.port));
    (ips, port)
}

/// The EndpointSlice follows the Endpoints: the reconciler writes it second, as
/// upstream's does, so a reader may see the Endpoints first; it lists `want`
/// within a second of them.
async fn slice_follows(client: &kube::Client, want: &[String]) {
    within(
        "the EndpointSlice follows",
        Duration::from_secs(1),
        async || (slice_addresses(client).await == want).then_some(()),
    )
    .await;
}

async fn slice_addresses(client: &kube::Client) -> Vec<String> {
    let s = Api::<EndpointSlice>::namespaced(client.clone(), "default")
        .get("kubernetes")
        .await
        .unwrap();
    s.endpoints
        .unwrap_or_default()
        .into_iter()
        .flat_map(|e| e.addresses)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kubernetes_endpoints_list_every_live_replica() {
    let etcd = Etcd::start().unwrap();
    let port = testkit::free_port();
    let ips = ["127.0.0.1", "127.0.0.2", "127.0.0.3"];
    let mut replicas: Vec<Server> = ips
        .iter()
        .map(|ip| {
            replica(
                &etcd,
                &[
                    "--secure-port".into(),
                    port.to_string(),
                    "--bind-address".into(),
                    ip.to_string(),
                    "--advertise-address".into(),
                    ip.to_string(),
                ],
            )
        })
        .collect();
    let client = replicas[0].client().await.unwrap();
    let all: Vec<String> = ips.iter().map(|s| s.to_string()).collect();
    within("all three listed", Duration::from_secs(10), async || {
        (endpoints(&client).await == (all.clone(), Some(i32::from(port)))).then_some(())
    })
    .await;
    slice_follows(&client, &all).await;
    let slice = Api::<EndpointSlice>::namespaced(client.clone(), "default")
        .get("kubernetes")
        .await
        .unwrap();
    let ports = slice.ports.unwrap();
    assert_eq!(ports.len(), 1);
    assert_eq!(ports[0].port, Some(i32::from(port)));

    // SIGTERM: the replica takes itself out before it exits.
    let status = replicas[1].terminate(Duration::from_secs(20)).unwrap();
    assert!(status.success(), "{status:?}");
    let rest = vec!["127.0.0.1".to_string(), "127.0.0.3".to_string()];
    within(
        "127.0.0.2 gone at once",
        Duration::from_secs(1),
        async || (endpoints(&client).await.0 == rest).then_some(()),
    )
    .await;
    slice_follows(&client, &rest).await;

    // kill -9: gone once its entry expires (15 s after its last renewal,
    // which was at most 10 s ago).
    replicas[2].kill9();
    let (_, took) = within(
        "127.0.0.3 gone after the TTL",
        Duration::from_secs(20),
        async || (endpoints(&client).await.0 == ["127.0.0.1"]).then_some(()),
    )
    .await;
    eprintln!("a killed replica left the kubernetes endpoints after {took:?}");
    assert!(
        took > Duration::from_secs(4) && took < Duration::from_secs(17),
        "127.0.0.3 was listed for {took:?} after it was killed"
    );
    slice_follows(&client, &["127.0.0.1".to_string()]).await;
}

/// Test servers on `--secure-port 0` differ in port: they agree on the lowest,
/// and the Endpoints move to the other when that one terminates.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_on_different_ports_agree_on_one() {
    let etcd = Etcd::start().unwrap();
    let mut first = replica(&etcd, &[]);
    let second = replica(&etcd, &[]);
    let client = second.client().await.unwrap();
    let lowest = first.addr.port().min(second.addr.port());
    within(
        "the lowest port listed",
        Duration::from_secs(10),
        async || {
            (endpoints(&client).await == (vec!["127.0.0.1".into()], Some(i32::from(lowest))))
                .then_some(())
        },
    )
    .await;
    first.terminate(Duration::from_secs(20)).unwrap();
    within(
        "the survivor's port listed",
        Duration::from_secs(1),
        async || {
            let want = (
                vec!["127.0.0.1".into()],
                Some(i32::from(second.addr.port())),
            );
            (endpoints(&client).await == want).then_some(())
        },
    )
    .await;
}
