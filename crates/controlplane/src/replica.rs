//! How a replica shows itself to clients and to the other replicas sharing its
//! storage: its address in `default/kubernetes`'s Endpoints and EndpointSlice
//! (`kubernetes_service`) and its identity Lease in `kube-system`
//! (`controllers::identity`, with the garbage collector of expired ones).
//! Both are taken back first thing at graceful shutdown (pre-shutdown hooks),
//! as kube-apiserver does.

use anyhow::Result;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use controllers::identity::{IdentityLease, Timings};
use registry::builtin::ServiceRanges;
use server::Prepared;

use crate::CatalogResources;
use crate::kubernetes_service::{self, ReconcilerType};

/// `--advertise-address`, `--endpoint-reconciler-type` and the identity
/// Lease's timings.
#[derive(Debug, Clone, Default)]
pub struct Replica {
    /// The address published to the cluster [default: the bind address, or
    /// 127.0.0.1 when bound to all interfaces].
    pub advertise_address: Option<IpAddr>,
    pub endpoint_reconciler: ReconcilerType,
    pub identity_lease: Timings,
}

impl Replica {
    /// The address `default/kubernetes` and the identity Lease name: the
    /// advertised IP (else the bound one, else loopback) and the bound port.
    pub fn advertised(&self, bound: SocketAddr) -> SocketAddr {
        let ip = match (self.advertise_address, bound.ip()) {
            (Some(ip), _) => ip,
            (None, ip) if ip.is_unspecified() => IpAddr::from([127, 0, 0, 1]),
            (None, ip) => ip,
        };
        SocketAddr::new(ip, bound.port())
    }
}

/// Publish `default/kubernetes` with this replica in it and start keeping it
/// and the identity Lease; registers their removal at shutdown. The task runs
/// the reconcilers and the Lease garbage collector.
pub async fn announce(
    prepared: &Prepared,
    ranges: &ServiceRanges,
    replica: &Replica,
) -> Result<tokio::task::JoinHandle<()>> {
    let api = &prepared.api;
    let address = replica.advertised(prepared.addr);
    let endpoints =
        kubernetes_service::publish(api, ranges, address, replica.endpoint_reconciler).await?;
    if let Some(endpoints) = &endpoints {
        let endpoints = endpoints.clone();
        prepared.on_shutdown("remove-kubernetes-endpoints", async move {
            endpoints.remove().await;
        });
    }
    let resources = Arc::new(CatalogResources(api.clone()));
    let lease = Arc::new(IdentityLease::new(
        resources.clone(),
        address,
        replica.identity_lease.clone(),
    ));
    tracing::info!(lease = %lease.name, holder = %lease.holder, "apiserver identity");
    let removal = lease.clone();
    prepared.on_shutdown(
        "stop-kube-apiserver-identity-lease-controller",
        async move {
            tracing::info!(lease = %removal.name, "cleaning up the identity lease on exit");
            removal.stop().await;
        },
    );
    let gc_period = replica.identity_lease.gc_period;
    Ok(tokio::spawn(async move {
        let reconcile = async {
            if let Some(endpoints) = endpoints {
                endpoints.run().await;
            }
        };
        tokio::join!(
            reconcile,
            lease.run(),
            controllers::identity::collect_garbage(resources, gc_period)
        );
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_advertised_address_wins_and_all_interfaces_mean_loopback() {
        let bound: SocketAddr = "0.0.0.0:6443".parse().unwrap();
        assert_eq!(
            Replica::default().advertised(bound),
            "127.0.0.1:6443".parse().unwrap()
        );
        let replica = Replica {
            advertise_address: Some("10.1.2.3".parse().unwrap()),
            ..Default::default()
        };
        assert_eq!(replica.advertised(bound), "10.1.2.3:6443".parse().unwrap());
        assert_eq!(
            Replica::default().advertised("127.0.0.2:7000".parse().unwrap()),
            "127.0.0.2:7000".parse().unwrap()
        );
    }
}
