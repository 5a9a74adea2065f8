//! Two kubext replicas on one etcd: one holds the `kube-system/kubext-controllers`
//! Lease and runs the writing controllers (here: the garbage collector); killed,
//! the other takes the lease over and the controllers run there.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use testkit::{Etcd, Server, Storage};

mod common;
use common::{controllers_lease_holder, first_controllers_lease_holder, orphan_a_dependent};

/// The identity a replica announced in its log.
fn identity(server: &Server) -> String {
    let log = server.log();
    let line = log
        .lines()
        .find(|l| l.contains("leader election for kubext's controllers"))
        .unwrap_or_else(|| panic!("no identity in the log:\n{log}"));
    line.split("identity=")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

/// The dependent left by [`orphan_a_dependent`] is (eventually) collected.
async fn collected(client: &kube::Client, suffix: &str) {
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let deadline = Instant::now() + Duration::from_secs(20);
    while cms
        .get_opt(&format!("dependent-{suffix}"))
        .await
        .unwrap()
        .is_some()
    {
        assert!(
            Instant::now() < deadline,
            "dependent-{suffix} not collected"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn the_other_replica_takes_over_the_controllers() {
    let etcd = Etcd::start().unwrap();
    let mut a = Server::builder()
        .storage(Storage::Etcd(etcd.endpoint()))
        .start()
        .unwrap();
    let mut b = Server::builder()
        .storage(Storage::Etcd(etcd.endpoint()))
        .start()
        .unwrap();
    let (id_a, id_b) = (identity(&a), identity(&b));
    assert_ne!(id_a, id_b);
    let (client_a, client_b) = (a.client().await.unwrap(), b.client().await.unwrap());

    let first = first_controllers_lease_holder(&client_a).await;
    assert!(first == id_a || first == id_b, "{first}");
    // Both replicas agree, and the controllers run (a write through either works).
    assert_eq!(
        controllers_lease_holder(&client_b).await.as_deref(),
        Some(first.as_str())
    );
    orphan_a_dependent(&client_b, "before").await;
    collected(&client_b, "before").await;

    let (survivor, survivor_id) = if first == id_a {
        a.kill9();
        (&client_b, id_b)
    } else {
        b.kill9();
        (&client_a, id_a)
    };
    // Until the lease expires nobody collects garbage: the survivor is not the
    // leader yet (the lease was renewed at most 2 s ago and lasts 15 s).
    orphan_a_dependent(survivor, "after").await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let cms: Api<ConfigMap> = Api::namespaced(survivor.clone(), "default");
    assert!(
        cms.get_opt("dependent-after").await.unwrap().is_some(),
        "a follower collected garbage"
    );
    // Within a lease duration and a retry period, the survivor leads.
    let deadline = Instant::now() + Duration::from_secs(40);
    while controllers_lease_holder(survivor).await.as_deref() != Some(survivor_id.as_str()) {
        assert!(
            Instant::now() < deadline,
            "the survivor never took the lease"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let leases: Api<Lease> = Api::namespaced(survivor.clone(), "kube-system");
    let lease = leases
        .get("kubext-controllers")
        .await
        .unwrap()
        .spec
        .unwrap();
    assert_eq!(lease.lease_transitions, Some(1));
    assert_eq!(lease.lease_duration_seconds, Some(15));
    collected(survivor, "after").await;
}

/// kube-controller-manager's leader election flags set the Lease's timings, and
/// a leader that terminates gracefully releases the Lease (client-go's
/// ReleaseOnCancel): the other replica leads at its next try, not after the
/// lease duration.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminated_leader_releases_the_lease() {
    let etcd = Etcd::start().unwrap();
    let replica = || {
        Server::builder()
            .storage(Storage::Etcd(etcd.endpoint()))
            .arg("--leader-elect-lease-duration=8s")
            .arg("--leader-elect-renew-deadline=5s")
            .arg("--leader-elect-retry-period=1s")
            .start()
            .unwrap()
    };
    let (mut a, mut b) = (replica(), replica());
    let (id_a, id_b) = (identity(&a), identity(&b));
    let (client_a, client_b) = (a.client().await.unwrap(), b.client().await.unwrap());
    let first = first_controllers_lease_holder(&client_a).await;
    let leases: Api<Lease> = Api::namespaced(client_a.clone(), "kube-system");
    let spec = leases
        .get("kubext-controllers")
        .await
        .unwrap()
        .spec
        .unwrap();
    assert_eq!(spec.lease_duration_seconds, Some(8));

    let (leader, survivor, survivor_id) = if first == id_a {
        (&mut a, &client_b, id_b)
    } else {
        (&mut b, &client_a, id_a)
    };
    let stopped = Instant::now();
    let status = leader.terminate(Duration::from_secs(20)).unwrap();
    assert!(status.success(), "{status}");
    assert!(
        leader.log().contains("released the lease"),
        "{}",
        leader.log()
    );
    while controllers_lease_holder(survivor).await.as_deref() != Some(survivor_id.as_str()) {
        assert!(
            stopped.elapsed() < Duration::from_secs(6),
            "the survivor did not take the released lease before it would have expired"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!("takeover after a graceful stop: {:?}", stopped.elapsed());
    orphan_a_dependent(survivor, "released").await;
    collected(survivor, "released").await;
}

#[test]
fn leader_election_flags_are_checked_as_kube_controller_managers() {
    let out = std::process::Command::new(testkit::kubext_binary().unwrap())
        .args([
            "serve",
            "--leader-elect-lease-duration=5s",
            "--leader-elect-renew-deadline=5s",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("leaseDuration must be greater than renewDeadline"),
        "{stderr}"
    );
}
