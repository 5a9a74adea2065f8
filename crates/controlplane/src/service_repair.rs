//! Upstream's repair loops for Service allocations (`ipallocator/controller`
//! `RepairIPAddress`, `portallocator/controller` `Repair`), run by every
//! replica as every kube-apiserver runs them: once at start, before the
//! server reports ready, then every `--service-repair-interval`. Every write
//! they make is conflict-safe (an IPAddress create fails if another replica
//! made it; the node port bitmap is written by compare-and-swap), so replicas
//! repairing at once agree.
//!
//! They mend what a crash between taking a value and storing the Service
//! leaves, and Services stored before allocation moved into the store:
//! - a Service's cluster IP without an IPAddress gets one; an IPAddress naming
//!   another Service is made to name the holder;
//! - an IPAddress of this allocator whose Service is gone (or does not hold
//!   it) is deleted once older than the request timeout (a create in flight
//!   stores its IPAddress before the Service);
//! - the node port bitmap gets every port a Service holds; a port no Service
//!   holds is released after three repairs that found it leaked.
//!
//! Upstream also records Events for what it repairs; kubext logs them.

use std::collections::{BTreeSet, HashMap};
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, anyhow};
use apimachinery::meta;
use registry::builtin::ServiceRanges;
use registry::builtin::service_allocation::{
    IpPool, MANAGED_BY, MANAGED_BY_LABEL, NodePortPool, held_ips, held_node_ports,
};
use registry::{AllocationPool, GenericStore, Object};
use serde_json::Value;
use server::api::Api;

/// Upstream releases a leaked port after this many repairs found it leaked
/// (`numRepairsBeforeLeakCleanup`): a create in flight has set its bit
/// before its Service is stored.
const REPAIRS_BEFORE_LEAK_CLEANUP: u32 = 3;
/// An IPAddress newer than its Service may belong to a create whose Service
/// write is failing; upstream waits this long before judging it.
const REVERT_GRACE: Duration = Duration::from_secs(5);

/// What one repair changed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Repaired {
    pub ip_addresses_created: usize,
    pub ip_addresses_deleted: usize,
    pub node_ports_added: usize,
    pub node_ports_released: usize,
}

pub struct ServiceRepair {
    services: GenericStore,
    ip_addresses: GenericStore,
    ips: IpPool,
    ports: NodePortPool,
    ranges: ServiceRanges,
    /// How long an IPAddress may wait for its Service (the request timeout).
    orphan_grace: Duration,
    /// Ports found leaked, with how many repairs found them so.
    leaked_ports: HashMap<u16, u32>,
}

impl ServiceRepair {
    pub fn new(api: &Api, ranges: ServiceRanges, orphan_grace: Duration) -> Result<Self> {
        let catalog = api.catalog();
        let store = |group: &str, plural: &str| -> Result<GenericStore> {
            catalog
                .lookup(group, "v1", plural)
                .map(|s| s.store.clone_handle())
                .ok_or_else(|| anyhow!("{plural} are not served"))
        };
        let services = store("", "services")?;
        let ip_addresses = store("networking.k8s.io", "ipaddresses")?;
        let pool = AllocationPool {
            storage: services.storage().clone(),
            prefix: services.prefix().to_string(),
        };
        Ok(ServiceRepair {
            ips: IpPool::new(ip_addresses.clone_handle(), ranges),
            ports: NodePortPool::new(&pool, ranges),
            services,
            ip_addresses,
            ranges,
            orphan_grace,
            leaked_ports: HashMap::new(),
        })
    }

    /// Repair now, then every `interval`, forever.
    pub async fn run(mut self, interval: Duration) {
        loop {
            tokio::time::sleep(interval).await;
            if let Err(e) = self.repair().await {
                tracing::warn!(error = %e, "service allocation repair failed");
            }
        }
    }

    /// One pass of both loops.
    pub async fn repair(&mut self) -> Result<Repaired> {
        self.services
            .storage()
            .sync()
            .await
            .map_err(|e| anyhow!("{e}"))?;
        let services = self.stored(&self.services);
        let mut repaired = Repaired::default();
        self.repair_ips(&services, &mut repaired).await?;
        self.repair_node_ports(&services, &mut repaired).await?;
        if repaired != Repaired::default() {
            tracing::info!(?repaired, "service allocations repaired");
        }
        Ok(repaired)
    }

    fn stored(&self, store: &GenericStore) -> Vec<Arc<Value>> {
        store
            .storage()
            .list(&store.collection(""), None, 0, &|_: &str, _: &Object| true)
            .items
            .iter()
            .map(|e| e.object.value())
            .collect()
    }

    async fn repair_ips(&self, services: &[Arc<Value>], repaired: &mut Repaired) -> Result<()> {
        let addresses: HashMap<String, Arc<Value>> = self
            .stored(&self.ip_addresses)
            .into_iter()
            .map(|a| (meta::name(&a).to_string(), a))
            .collect();
        let mut holders: HashMap<Ipv4Addr, &Value> = HashMap::new();
        for svc in services {
            for ip in held_ips(svc) {
                holders.insert(ip, svc);
                if !self.ranges.contains(ip) {
                    tracing::warn!(
                        service = %qualified(svc),
                        %ip,
                        "ClusterIPOutOfRange: the cluster IP is not within the service CIDR; please recreate the Service"
                    );
                    continue;
                }
                match addresses.get(&ip.to_string()) {
                    None => {
                        tracing::warn!(service = %qualified(svc), %ip, "ClusterIPNotAllocated: the cluster IP is not allocated; repairing");
                        if self
                            .ips
                            .take(ip, meta::namespace(svc), meta::name(svc))
                            .await?
                        {
                            repaired.ip_addresses_created += 1;
                        }
                    }
                    Some(address) if !refers_to(address, svc) => {
                        tracing::warn!(service = %qualified(svc), %ip, "ClusterIPNotAllocated: the cluster IP has a wrong reference; repairing");
                        self.ips.release(ip).await;
                        if self
                            .ips
                            .take(ip, meta::namespace(svc), meta::name(svc))
                            .await?
                        {
                            repaired.ip_addresses_created += 1;
                        }
                    }
                    Some(_) => {}
                }
            }
        }
        let by_name: HashMap<(&str, &str), &Value> = services
            .iter()
            .map(|svc| ((meta::namespace(svc), meta::name(svc)), svc.as_ref()))
            .collect();
        for (name, address) in &addresses {
            let Ok(ip) = name.parse::<Ipv4Addr>() else {
                continue;
            };
            if !holders.contains_key(&ip) && self.orphaned(address, &by_name) {
                tracing::warn!(%ip, "IPAddressNotAllocated: the IPAddress appears to have leaked; cleaning up");
                self.ips.release(ip).await;
                repaired.ip_addresses_deleted += 1;
            }
        }
        Ok(())
    }

    /// Whether this allocator's `address`, held by no Service, is old enough
    /// that no write in flight can still store the Service naming it: the
    /// request timeout when its Service is missing (or an ExternalName that
    /// may be turning into a ClusterIP), a few seconds when it exists but
    /// holds another address (a create answered 409 is reverting).
    fn orphaned(&self, address: &Value, services: &HashMap<(&str, &str), &Value>) -> bool {
        let labels = meta::labels(address);
        let managed = labels
            .and_then(|l| l.get(MANAGED_BY_LABEL))
            .and_then(Value::as_str)
            == Some(MANAGED_BY);
        if !managed {
            return false;
        }
        let parent = |field: &str| {
            address
                .pointer("/spec/parentRef")
                .and_then(|p| p.get(field))
                .and_then(Value::as_str)
                .unwrap_or("")
        };
        if !parent("group").is_empty() || parent("resource") != "services" {
            return true;
        }
        let age = age(address);
        match services.get(&(parent("namespace"), parent("name"))) {
            None => age > self.orphan_grace,
            Some(svc) if str_at(svc, "/spec/type") == "ExternalName" => age > self.orphan_grace,
            Some(_) => age > REVERT_GRACE,
        }
    }

    async fn repair_node_ports(
        &mut self,
        services: &[Arc<Value>],
        repaired: &mut Repaired,
    ) -> Result<()> {
        let held: BTreeSet<u16> = services
            .iter()
            .flat_map(|svc| held_node_ports(svc).collect::<Vec<_>>())
            .filter(|p| self.ranges.contains_port(i64::from(*p)))
            .collect();
        for _ in 0..16 {
            let snapshot = self.ports.read().await.map_err(|e| anyhow!("{e}"))?;
            let mut wanted = held.clone();
            let mut leaked = HashMap::new();
            for port in snapshot.ports.difference(&held) {
                let seen = self.leaked_ports.get(port).copied().unwrap_or(0) + 1;
                if seen < REPAIRS_BEFORE_LEAK_CLEANUP {
                    wanted.insert(*port);
                    leaked.insert(*port, seen);
                } else {
                    tracing::warn!(
                        port,
                        "PortNotAllocated: the node port appears to have leaked; cleaning up"
                    );
                }
            }
            let added = held.difference(&snapshot.ports).count();
            let released = snapshot.ports.difference(&wanted).count();
            if wanted == snapshot.ports
                || self
                    .ports
                    .write(&wanted, snapshot.revision)
                    .await
                    .map_err(|e| anyhow!("{e}"))?
            {
                if added > 0 {
                    tracing::warn!(
                        added,
                        "PortNotAllocated: node ports held by Services were not allocated; repaired"
                    );
                }
                self.leaked_ports = leaked;
                repaired.node_ports_added += added;
                repaired.node_ports_released += released;
                return Ok(());
            }
        }
        Err(anyhow!("the node port bitmap kept changing"))
    }
}

/// Whether an IPAddress names `svc` as its parent.
fn refers_to(address: &Value, svc: &Value) -> bool {
    let parent = address.pointer("/spec/parentRef");
    let field = |name: &str| {
        parent
            .and_then(|p| p.get(name))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    field("group").is_empty()
        && field("resource") == "services"
        && field("namespace") == meta::namespace(svc)
        && field("name") == meta::name(svc)
}

fn age(obj: &Value) -> Duration {
    meta::str_field(obj, "creationTimestamp")
        .and_then(apimachinery::time::age)
        .unwrap_or_default()
}

fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn qualified(svc: &Value) -> String {
    format!("{}/{}", meta::namespace(svc), meta::name(svc))
}
