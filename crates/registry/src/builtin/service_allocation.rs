//! Cluster IPs and node ports for Services, allocated in the store so that
//! every replica on one etcd hands out each value once (kube-apiserver 1.37's
//! allocators):
//! - a cluster IP is held by a `networking.k8s.io/v1` IPAddress named after
//!   it, created before the Service is stored; the create fails when any
//!   writer, on any replica, holds the address already;
//! - node ports are one bitmap under `ranges/servicenodeports` (upstream's
//!   RangeAllocation), changed by compare-and-swap.
//!
//! A write takes what it needs first, then is stored: stored, it releases what
//! an update gave up; failed, it releases what it took. The repair loops
//! (`controlplane::service_repair`) mend what a crash between the two leaves.
//! IPv4 single-stack only, from `--service-cluster-ip-range`.

use apimachinery::DynamicObject;
use apimachinery::{FieldError, FieldPath, StatusError};
use base64::Engine;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::sync::{Arc, OnceLock};

use crate::options::{DeleteOptions, RequestContext};
use crate::resource::{Allocation, AllocationPool, Allocator, Reservation, ResourceType};
use crate::store::GenericStore;

/// The IPAddress label naming the allocator that manages it (upstream's
/// `ipallocator.ControllerName`): the repair loop leaves others alone.
pub const MANAGED_BY: &str = "ipallocator.k8s.io";
pub const MANAGED_BY_LABEL: &str = "ipaddress.kubernetes.io/managed-by";
const FAMILY_LABEL: &str = "ipaddress.kubernetes.io/ip-family";
/// How many times a node-port write retries after losing a race.
const MAX_BITMAP_RETRIES: usize = 64;

fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The ranges Services allocate from (`--service-cluster-ip-range`,
/// `--service-node-port-range`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServiceRanges {
    network: u32,
    prefix: u8,
    node_ports: (u16, u16),
}

impl Default for ServiceRanges {
    fn default() -> Self {
        ServiceRanges {
            network: u32::from(Ipv4Addr::new(10, 0, 0, 0)),
            prefix: 24,
            node_ports: (30000, 32767),
        }
    }
}

/// Why `--service-cluster-ip-range` or `--service-node-port-range` was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RangeError {
    #[error("--service-cluster-ip-range {0:?}: expected an IPv4 CIDR such as 10.0.0.0/24")]
    NotACidr(String),
    #[error("--service-cluster-ip-range {0:?}: only IPv4 ranges are supported")]
    NotIpv4(String),
    #[error("--service-cluster-ip-range {0:?}: the prefix must be between /8 and /30")]
    Prefix(String),
    #[error("--service-node-port-range {0:?}: expected a range such as 30000-32767")]
    NodePorts(String),
}

impl ServiceRanges {
    /// `10.0.0.0/24` and `30000-32767`.
    pub fn parse(cluster_ip_range: &str, node_port_range: &str) -> Result<Self, RangeError> {
        let cidr = || cluster_ip_range.to_string();
        let (addr, prefix) = cluster_ip_range
            .split_once('/')
            .ok_or_else(|| RangeError::NotACidr(cidr()))?;
        let addr: Ipv4Addr = addr.parse().map_err(|_| RangeError::NotIpv4(cidr()))?;
        let prefix: u8 = prefix
            .parse()
            .ok()
            .filter(|p| (8..=30).contains(p))
            .ok_or_else(|| RangeError::Prefix(cidr()))?;
        let (low, high) = node_port_range
            .split_once('-')
            .and_then(|(a, b)| Some((a.trim().parse::<u16>().ok()?, b.trim().parse::<u16>().ok()?)))
            .filter(|(a, b)| a <= b)
            .ok_or_else(|| RangeError::NodePorts(node_port_range.to_string()))?;
        let mask = u32::MAX << (32 - prefix);
        Ok(ServiceRanges {
            network: u32::from(addr) & mask,
            prefix,
            node_ports: (low, high),
        })
    }

    /// `--service-cluster-ip-range` as CIDR notation (`10.0.0.0/24`).
    pub fn cluster_cidr(&self) -> String {
        format!("{}/{}", Ipv4Addr::from(self.network), self.prefix)
    }

    /// The first host address: the `default/kubernetes` Service's cluster IP.
    pub fn first_ip(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.network + 1)
    }

    fn size(&self) -> u32 {
        1u32 << (32 - self.prefix)
    }

    /// Host addresses: network + 1 ..= broadcast - 1.
    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        let ip = u32::from(ip);
        ip > self.network && ip < self.network + self.size() - 1
    }

    pub fn contains_port(&self, port: i64) -> bool {
        (i64::from(self.node_ports.0)..=i64::from(self.node_ports.1)).contains(&port)
    }

    /// `30000-32767`, as upstream's RangeAllocation records it.
    pub fn node_port_range(&self) -> String {
        format!("{}-{}", self.node_ports.0, self.node_ports.1)
    }
}

/// `spec.clusterIPs`, or `[spec.clusterIP]` when only that is given.
pub fn cluster_ips(obj: &Value) -> Vec<String> {
    let listed: Vec<String> = obj
        .pointer("/spec/clusterIPs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(String::from)
        .collect();
    if !listed.is_empty() {
        return listed;
    }
    match str_at(obj, "/spec/clusterIP") {
        "" => Vec::new(),
        ip => vec![ip.to_string()],
    }
}

/// The cluster IPs a stored Service holds (not `None`, not an ExternalName's).
pub fn held_ips(svc: &Value) -> Vec<Ipv4Addr> {
    if str_at(svc, "/spec/type") == "ExternalName" {
        return Vec::new();
    }
    cluster_ips(svc)
        .iter()
        .filter_map(|ip| ip.parse().ok())
        .collect()
}

/// The node ports a stored Service holds.
pub fn held_node_ports(svc: &Value) -> impl Iterator<Item = u16> + '_ {
    svc.pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| p.get("nodePort").and_then(Value::as_u64))
        .chain(
            svc.pointer("/spec/healthCheckNodePort")
                .and_then(Value::as_u64),
        )
        .filter_map(|p| u16::try_from(p).ok())
}

fn needs_node_ports(spec: &Value) -> bool {
    match str_at(spec, "/type") {
        "NodePort" => true,
        "LoadBalancer" => spec.get("allocateLoadBalancerNodePorts") != Some(&Value::Bool(false)),
        _ => false,
    }
}

/// Go's `%#v` of a `[]string`: `[]string{"10.0.0.5"}`.
pub(crate) fn go_strings(items: &[String]) -> String {
    let quoted: Vec<String> = items
        .iter()
        .map(|s| apimachinery::gofmt::quote(s))
        .collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// The identity the server's own writes of allocation objects carry (upstream
/// writes them through its loopback client, as `kube-apiserver`).
pub fn system_context() -> RequestContext {
    RequestContext {
        user: "system:apiserver".into(),
        groups: vec!["system:masters".into()],
        field_manager: "kube-apiserver".into(),
        ..Default::default()
    }
}

/// The IPAddress upstream's allocator creates for `ip` held by Service
/// `namespace/name`.
pub fn ip_address(ip: Ipv4Addr, namespace: &str, name: &str) -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "IPAddress",
        "metadata": {
            "name": ip.to_string(),
            "labels": {FAMILY_LABEL: "IPv4", MANAGED_BY_LABEL: MANAGED_BY},
        },
        "spec": {"parentRef": {"resource": "services", "namespace": namespace, "name": name}},
    })
}

/// The cluster IP pool: IPAddress objects.
#[derive(Clone)]
pub struct IpPool {
    addresses: Arc<GenericStore>,
    ranges: ServiceRanges,
}

impl IpPool {
    pub fn new(addresses: GenericStore, ranges: ServiceRanges) -> Self {
        IpPool {
            addresses: Arc::new(addresses),
            ranges,
        }
    }

    fn held(&self, ip: Ipv4Addr) -> bool {
        let key = self.addresses.key("", &ip.to_string());
        self.addresses.storage().get(&key).is_some()
    }

    /// Create the IPAddress for `ip`; `Ok(false)` when another holds it.
    pub async fn take(
        &self,
        ip: Ipv4Addr,
        namespace: &str,
        name: &str,
    ) -> Result<bool, StatusError> {
        match self
            .addresses
            .create(&system_context(), ip_address(ip, namespace, name))
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if e.code() == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Delete the IPAddress of `ip` (gone already is fine).
    pub async fn release(&self, ip: Ipv4Addr) {
        let deleted = self
            .addresses
            .delete(
                &system_context(),
                &ip.to_string(),
                &DeleteOptions::default(),
            )
            .await;
        if let Err(e) = deleted
            && e.code() != 404
        {
            tracing::warn!(%ip, error = %e, "cannot release a cluster IP");
        }
    }

    /// Upstream starts at a random address above a reserved lower band (which
    /// static requests such as 10.0.0.1 use), then tries the band. Addresses
    /// the cache shows held are skipped; a create that loses a race to another
    /// replica moves on to the next.
    async fn take_next(&self, namespace: &str, name: &str) -> Result<Ipv4Addr, StatusError> {
        let hosts = self.ranges.size() - 2;
        let offset = if hosts <= 16 {
            0
        } else {
            (hosts / 16).clamp(16, 256)
        };
        let first = self.ranges.network + 1;
        let bands = [(first + offset)..(first + hosts), first..(first + offset)];
        for band in bands {
            for ip in from_random(band).map(Ipv4Addr::from) {
                if !self.held(ip) && self.take(ip, namespace, name).await? {
                    return Ok(ip);
                }
            }
        }
        Err(StatusError::internal(format!(
            "failed to allocate a serviceIP for Service {}: range is full",
            apimachinery::gofmt::quote(name)
        )))
    }
}

/// The values of `range`, starting at a random one and wrapping.
fn from_random(range: std::ops::Range<u32>) -> impl Iterator<Item = u32> {
    let len = range.end.saturating_sub(range.start);
    let start = if len == 0 {
        0
    } else {
        rand::random_range(0..len)
    };
    (0..len).map(move |i| range.start + (start + i) % len)
}

/// The node port bitmap (upstream's RangeAllocation at `ranges/servicenodeports`).
#[derive(Clone)]
pub struct NodePortPool {
    storage: Arc<crate::object::Storage>,
    key: String,
    ranges: ServiceRanges,
}

/// The ports a bitmap holds and the revision it was read at (0: absent).
pub struct NodePortSnapshot {
    pub ports: BTreeSet<u16>,
    pub revision: i64,
}

impl NodePortPool {
    pub fn new(pool: &AllocationPool, ranges: ServiceRanges) -> Self {
        NodePortPool {
            storage: pool.storage.clone(),
            key: format!("{}/ranges/servicenodeports", pool.prefix),
            ranges,
        }
    }

    /// The bitmap as the cache has it (read after a sync for a consistent view).
    pub async fn read(&self) -> Result<NodePortSnapshot, StatusError> {
        self.storage.sync().await.map_err(storage_failed)?;
        Ok(self.snapshot())
    }

    fn snapshot(&self) -> NodePortSnapshot {
        match self.storage.get(&self.key) {
            Some(entry) => NodePortSnapshot {
                ports: decode_bitmap(&entry.object.value()),
                revision: entry.mod_revision,
            },
            None => NodePortSnapshot {
                ports: BTreeSet::new(),
                revision: 0,
            },
        }
    }

    /// Write `ports` over the bitmap read at `revision`; `Ok(false)` when
    /// another writer changed it since.
    pub async fn write(&self, ports: &BTreeSet<u16>, revision: i64) -> Result<bool, StatusError> {
        let bytes = encode_bitmap(&self.ranges, ports);
        let written = if revision == 0 {
            self.storage.create(&self.key, bytes).await
        } else {
            self.storage.update(&self.key, bytes, revision).await
        };
        match written {
            Ok(_) => Ok(true),
            Err(storage::Error::Conflict { .. } | storage::Error::AlreadyExists(_)) => Ok(false),
            Err(storage::Error::NotFound(_)) => Ok(false),
            Err(e) => Err(storage_failed(e)),
        }
    }

    /// Apply `change` to the bitmap until the write wins a race.
    async fn update<T>(
        &self,
        mut change: impl FnMut(&mut BTreeSet<u16>) -> Result<T, StatusError>,
    ) -> Result<T, StatusError> {
        let mut snapshot = self.read().await?;
        for _ in 0..MAX_BITMAP_RETRIES {
            let outcome = change(&mut snapshot.ports)?;
            if self.write(&snapshot.ports, snapshot.revision).await? {
                return Ok(outcome);
            }
            snapshot = self.read().await?;
        }
        Err(too_many_changes())
    }

    pub async fn release(&self, ports: &[u16]) {
        if ports.is_empty() {
            return;
        }
        let released = self
            .update(|held| {
                for port in ports {
                    held.remove(port);
                }
                Ok(())
            })
            .await;
        if let Err(e) = released {
            tracing::warn!(?ports, error = %e, "cannot release node ports");
        }
    }
}

fn too_many_changes() -> StatusError {
    StatusError::internal("failed to allocate a nodePort: too many concurrent changes")
}

fn storage_failed(error: storage::Error) -> StatusError {
    crate::errors::to_status(error, &apimachinery::GroupResource::new("", "services"), "")
}

/// The stored RangeAllocation: `data` is Go's `big.Int.Bytes()` of a bitmap
/// whose bit `i` is port `low + i`.
fn encode_bitmap(ranges: &ServiceRanges, ports: &BTreeSet<u16>) -> bytes::Bytes {
    let low = ranges.node_ports.0;
    let offsets: Vec<usize> = ports
        .iter()
        .filter(|p| ranges.contains_port(i64::from(**p)))
        .map(|p| usize::from(p - low))
        .collect();
    let len = offsets.last().map_or(0, |top| top / 8 + 1);
    let mut data = vec![0u8; len];
    for offset in offsets {
        data[len - 1 - offset / 8] |= 1 << (offset % 8);
    }
    let object = json!({
        "kind": "RangeAllocation",
        "apiVersion": "v1",
        "metadata": {"creationTimestamp": null},
        "range": ranges.node_port_range(),
        "data": base64::engine::general_purpose::STANDARD.encode(&data),
    });
    bytes::Bytes::from(object.to_string())
}

fn decode_bitmap(stored: &Value) -> BTreeSet<u16> {
    let low = str_at(stored, "/range")
        .split_once('-')
        .and_then(|(low, _)| low.parse::<u32>().ok())
        .unwrap_or(0);
    let data = base64::engine::general_purpose::STANDARD
        .decode(str_at(stored, "/data"))
        .unwrap_or_default();
    let mut ports = BTreeSet::new();
    for (from_end, byte) in data.iter().rev().enumerate() {
        for bit in 0..8 {
            if byte & (1 << bit) != 0
                && let Ok(port) = u16::try_from(low + (from_end * 8 + bit) as u32)
            {
                ports.insert(port);
            }
        }
    }
    ports
}

/// Allocates cluster IPs and node ports for Services, in the store.
pub struct ServiceAllocator {
    ranges: ServiceRanges,
    ip_addresses: OnceLock<Arc<ResourceType>>,
}

impl ServiceAllocator {
    pub fn new(ranges: ServiceRanges) -> Self {
        ServiceAllocator {
            ranges,
            ip_addresses: OnceLock::new(),
        }
    }

    /// The IPAddress type whose objects hold cluster IPs (known once every
    /// built-in type is).
    pub fn use_ip_addresses(&self, rtype: Arc<ResourceType>) {
        let _ = self.ip_addresses.set(rtype);
    }

    fn pools(&self, pool: &AllocationPool) -> Result<Pools, StatusError> {
        let rtype = self
            .ip_addresses
            .get()
            .ok_or_else(|| StatusError::internal("the IPAddress type is not known"))?;
        let addresses = GenericStore::new(rtype.clone(), pool.storage.clone(), &pool.prefix);
        Ok(Pools {
            ips: IpPool::new(addresses, self.ranges),
            ports: NodePortPool::new(pool, self.ranges),
        })
    }
}

#[derive(Clone)]
struct Pools {
    ips: IpPool,
    ports: NodePortPool,
}

/// What one Service write took and gave up.
struct ServiceReservation {
    pools: Pools,
    taken_ips: Vec<Ipv4Addr>,
    taken_ports: Vec<u16>,
    given_up_ips: Vec<Ipv4Addr>,
    given_up_ports: Vec<u16>,
}

impl ServiceReservation {
    async fn release(pools: &Pools, ips: &[Ipv4Addr], ports: &[u16]) {
        for ip in ips {
            pools.ips.release(*ip).await;
        }
        pools.ports.release(ports).await;
    }
}

#[async_trait::async_trait]
impl Reservation for ServiceReservation {
    async fn commit(self: Box<Self>) {
        Self::release(&self.pools, &self.given_up_ips, &self.given_up_ports).await;
    }

    async fn revert(self: Box<Self>) {
        Self::release(&self.pools, &self.taken_ips, &self.taken_ports).await;
    }
}

/// One Service write's allocation in progress.
struct Write<'a> {
    name: String,
    namespace: String,
    dry_run: bool,
    ranges: ServiceRanges,
    reservation: &'a mut ServiceReservation,
}

impl Write<'_> {
    fn invalid(&self, errors: Vec<FieldError>) -> StatusError {
        StatusError::invalid("", "Service", &self.name, &errors)
    }

    /// A requested cluster IP: in range and free (a dry run checks the range
    /// only, as upstream's dry-run allocator does).
    async fn request_ip(&mut self, requested: &str) -> Result<Ipv4Addr, StatusError> {
        let failed = |why: &str| {
            vec![FieldError::invalid_go(
                &FieldPath::new("spec").child("clusterIPs"),
                &go_strings(&[requested.to_string()]),
                &format!("failed to allocate IP {requested}: {why}"),
            )]
        };
        let ip = requested
            .parse::<Ipv4Addr>()
            .ok()
            .filter(|ip| self.ranges.contains(*ip))
            .ok_or_else(|| {
                self.invalid(failed(
                    "the provided network does not match the current range",
                ))
            })?;
        if self.dry_run {
            return Ok(ip);
        }
        let pool = self.reservation.pools.ips.clone();
        if !pool.take(ip, &self.namespace, &self.name).await? {
            return Err(self.invalid(failed("provided IP is already allocated")));
        }
        self.reservation.taken_ips.push(ip);
        Ok(ip)
    }

    /// A free cluster IP (a dry run answers the range's network address
    /// without looking, as upstream's does).
    async fn next_ip(&mut self) -> Result<Ipv4Addr, StatusError> {
        if self.dry_run {
            return Ok(Ipv4Addr::from(self.ranges.network));
        }
        let pool = self.reservation.pools.ips.clone();
        let ip = pool.take_next(&self.namespace, &self.name).await?;
        self.reservation.taken_ips.push(ip);
        Ok(ip)
    }

    async fn cluster_ip(
        &mut self,
        obj: &mut Value,
        old: Option<&Value>,
    ) -> Result<(), StatusError> {
        let spec = &mut obj["spec"];
        if str_at(spec, "/type") == "ExternalName" {
            if let Some(map) = spec.as_object_mut() {
                for field in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
                    map.remove(field);
                }
            }
            self.reservation
                .given_up_ips
                .extend(old.map(held_ips).unwrap_or_default());
            return Ok(());
        }
        let mut ips = cluster_ips(&json!({"spec": &*spec}));
        // An update that leaves the cluster IP out keeps the old one.
        if ips.is_empty()
            && let Some(old) = old
        {
            ips = cluster_ips(old);
        }
        let headless = ips.first().is_some_and(|ip| ip == "None");
        let unchanged = old.is_some_and(|o| cluster_ips(o).first() == ips.first());
        let ip = match ips.first() {
            _ if headless || unchanged => None,
            Some(requested) => Some(self.request_ip(&requested.clone()).await?),
            None => Some(self.next_ip().await?),
        };
        if let Some(ip) = ip {
            ips = vec![ip.to_string()];
        }
        let spec = &mut obj["spec"];
        if let Some(primary) = ips.first() {
            spec["clusterIP"] = json!(primary);
            spec["clusterIPs"] = json!(ips);
        }
        fill_ip_families(spec, old, headless);
        Ok(())
    }

    async fn node_ports(
        &mut self,
        obj: &mut Value,
        old: Option<&Value>,
    ) -> Result<(), StatusError> {
        let old_ports: Vec<(String, u16)> = old
            .filter(|o| needs_node_ports(&o["spec"]))
            .and_then(|o| o.pointer("/spec/ports").and_then(Value::as_array))
            .into_iter()
            .flatten()
            .filter_map(|p| {
                let port = p.get("nodePort").and_then(Value::as_u64)?;
                Some((str_at(p, "/name").to_string(), u16::try_from(port).ok()?))
            })
            .collect();
        let old_health = old
            .filter(|o| needs_health_check(&o["spec"]))
            .and_then(|o| port_at(o, "/spec/healthCheckNodePort"));
        let mut wanted = Vec::new();
        if needs_node_ports(&obj["spec"]) {
            let entries = obj.pointer("/spec/ports").and_then(Value::as_array);
            for (index, port) in entries.into_iter().flatten().enumerate() {
                wanted.push(Wanted {
                    purpose: Purpose::Entry {
                        index,
                        number: port.get("port").and_then(Value::as_i64).unwrap_or(0),
                    },
                    requested: port
                        .get("nodePort")
                        .and_then(Value::as_i64)
                        .filter(|p| *p != 0),
                    kept: old_ports
                        .iter()
                        .find(|(name, _)| name == str_at(port, "/name"))
                        .map(|(_, p)| *p),
                });
            }
        }
        if needs_health_check(&obj["spec"]) {
            wanted.push(Wanted {
                purpose: Purpose::HealthCheck,
                requested: obj
                    .pointer("/spec/healthCheckNodePort")
                    .and_then(Value::as_i64)
                    .filter(|p| *p != 0),
                kept: old_health,
            });
        } else if old_health.is_some()
            && obj.pointer("/spec/healthCheckNodePort")
                == old.and_then(|o| o.pointer("/spec/healthCheckNodePort"))
            && let Some(spec) = obj["spec"].as_object_mut()
        {
            // Upstream's strategy drops the field a type change made
            // meaningless, unless the writer changed it.
            spec.remove("healthCheckNodePort");
        }
        let chosen = self.choose_ports(&wanted).await?;
        for (w, node_port) in wanted.iter().zip(&chosen.ports) {
            match w.purpose {
                Purpose::Entry { index, .. } => {
                    obj["spec"]["ports"][index]["nodePort"] = json!(node_port)
                }
                Purpose::HealthCheck => obj["spec"]["healthCheckNodePort"] = json!(node_port),
            }
        }
        self.reservation.taken_ports.extend(chosen.taken);
        let given_up = old_ports
            .iter()
            .map(|(_, p)| *p)
            .chain(old_health)
            .filter(|p| !chosen.ports.contains(p));
        self.reservation.given_up_ports.extend(given_up);
        Ok(())
    }

    /// Pick every entry's node port against the bitmap and record the new
    /// ones in one compare-and-swap (a dry run checks without writing).
    async fn choose_ports(&self, wanted: &[Wanted]) -> Result<ChosenPorts, StatusError> {
        let pool = &self.reservation.pools.ports;
        for _ in 0..MAX_BITMAP_RETRIES {
            let mut snapshot = pool.read().await?;
            let chosen = self.pick_ports(wanted, &mut snapshot.ports)?;
            if self.dry_run
                || chosen.taken.is_empty()
                || pool.write(&snapshot.ports, snapshot.revision).await?
            {
                return Ok(chosen);
            }
        }
        Err(too_many_changes())
    }

    fn pick_ports(
        &self,
        wanted: &[Wanted],
        held: &mut BTreeSet<u16>,
    ) -> Result<ChosenPorts, StatusError> {
        // Entries with the same port number (TCP and UDP 53) share one node port.
        let mut by_number: Vec<(i64, u16)> = Vec::new();
        let mut chosen = ChosenPorts::default();
        for w in wanted {
            let shared = match w.purpose {
                Purpose::Entry { number, .. } => by_number
                    .iter()
                    .find(|(n, _)| *n == number)
                    .map(|(_, p)| *p),
                Purpose::HealthCheck => None,
            };
            let node_port = match (w.requested, w.kept, shared) {
                (Some(p), Some(k), _) if p == i64::from(k) => k,
                (Some(p), ..) => {
                    let port =
                        take_port(&self.ranges, p, held).map_err(|why| self.refused(w, p, why))?;
                    chosen.taken.push(port);
                    port
                }
                (None, Some(k), _) => k,
                (None, None, Some(shared)) => shared,
                (None, None, None) => {
                    let port = self.next_port(held)?;
                    chosen.taken.push(port);
                    port
                }
            };
            if let Purpose::Entry { number, .. } = w.purpose {
                by_number.push((number, node_port));
            }
            chosen.ports.push(node_port);
        }
        Ok(chosen)
    }

    /// A requested node port refused, in upstream's words for its purpose.
    fn refused(&self, wanted: &Wanted, port: i64, why: PortRefused) -> StatusError {
        match wanted.purpose {
            Purpose::Entry { index, .. } => {
                let path = FieldPath::new("spec")
                    .child("ports")
                    .index(index)
                    .child("nodePort");
                self.invalid(vec![FieldError::invalid(
                    &path,
                    json!(port),
                    &why.to_string(),
                )])
            }
            Purpose::HealthCheck => StatusError::internal(format!(
                "failed to allocate requested HealthCheck NodePort {port}: {why}"
            )),
        }
    }

    /// Upstream's order: a random start above a lower band, then the band.
    fn next_port(&self, held: &mut BTreeSet<u16>) -> Result<u16, StatusError> {
        let (low, high) = (
            u32::from(self.ranges.node_ports.0),
            u32::from(self.ranges.node_ports.1),
        );
        let size = high - low + 1;
        let offset = if size <= 16 {
            0
        } else {
            (size / 32).clamp(16, 128)
        };
        let found = from_random((low + offset)..(high + 1))
            .chain(from_random(low..(low + offset)))
            .filter_map(|p| u16::try_from(p).ok())
            .find(|p| !held.contains(p));
        match found {
            Some(port) => {
                held.insert(port);
                Ok(port)
            }
            None => Err(StatusError::internal(
                "failed to allocate a nodePort: range is full",
            )),
        }
    }
}

/// A node port a Service needs: as requested, as the old object had it (an
/// entry: the same port name), or new.
struct Wanted {
    purpose: Purpose,
    requested: Option<i64>,
    kept: Option<u16>,
}

#[derive(Clone, Copy)]
enum Purpose {
    /// `spec.ports[index]`, whose `port` is `number`.
    Entry { index: usize, number: i64 },
    /// `spec.healthCheckNodePort` (a LoadBalancer with local traffic only).
    HealthCheck,
}

/// Why a requested node port cannot be had (upstream's allocator errors).
#[derive(Debug)]
enum PortRefused {
    NotInRange(ServiceRanges),
    Allocated,
}

impl std::fmt::Display for PortRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PortRefused::NotInRange(ranges) => write!(
                f,
                "provided port is not in the valid range. The range of valid ports is {}",
                ranges.node_port_range()
            ),
            PortRefused::Allocated => f.write_str("provided port is already allocated"),
        }
    }
}

/// Take `port` from `held`.
fn take_port(
    ranges: &ServiceRanges,
    port: i64,
    held: &mut BTreeSet<u16>,
) -> Result<u16, PortRefused> {
    let port = u16::try_from(port)
        .ok()
        .filter(|p| ranges.contains_port(i64::from(*p)))
        .ok_or(PortRefused::NotInRange(*ranges))?;
    if !held.insert(port) {
        return Err(PortRefused::Allocated);
    }
    Ok(port)
}

/// Upstream's `NeedsHealthCheck`: a LoadBalancer that routes to local
/// endpoints only.
fn needs_health_check(spec: &Value) -> bool {
    str_at(spec, "/type") == "LoadBalancer" && str_at(spec, "/externalTrafficPolicy") == "Local"
}

fn port_at(obj: &Value, pointer: &str) -> Option<u16> {
    obj.pointer(pointer)
        .and_then(Value::as_u64)
        .and_then(|p| u16::try_from(p).ok())
        .filter(|p| *p != 0)
}

#[derive(Default)]
struct ChosenPorts {
    /// Per entry.
    ports: Vec<u16>,
    /// Newly taken from the bitmap.
    taken: Vec<u16>,
}

/// `ipFamilyPolicy` and `ipFamilies` as upstream's service storage defaults them.
fn fill_ip_families(spec: &mut Value, old: Option<&Value>, headless: bool) {
    let selectorless = spec
        .get("selector")
        .and_then(Value::as_object)
        .is_none_or(|s| s.is_empty());
    if spec.get("ipFamilyPolicy").is_none_or(Value::is_null) {
        let policy = match old.and_then(|o| o.pointer("/spec/ipFamilyPolicy")) {
            Some(p) => p.clone(),
            None if headless && selectorless => json!("RequireDualStack"),
            None => json!("SingleStack"),
        };
        spec["ipFamilyPolicy"] = policy;
    }
    if spec
        .get("ipFamilies")
        .is_none_or(|f| f.as_array().is_none_or(Vec::is_empty))
    {
        spec["ipFamilies"] = if str_at(spec, "/ipFamilyPolicy") == "SingleStack" {
            json!(["IPv4"])
        } else {
            json!(["IPv4", "IPv6"])
        };
    }
}

#[async_trait::async_trait]
impl Allocator for ServiceAllocator {
    async fn allocate(
        &self,
        pool: &AllocationPool,
        obj: &mut DynamicObject,
        old: Option<&DynamicObject>,
        dry_run: bool,
    ) -> Result<Allocation, StatusError> {
        let old = old.map(|o| &o.body);
        let mut reservation = ServiceReservation {
            pools: self.pools(pool)?,
            taken_ips: Vec::new(),
            taken_ports: Vec::new(),
            given_up_ips: Vec::new(),
            given_up_ports: Vec::new(),
        };
        let mut write = Write {
            name: obj.metadata.name.clone(),
            namespace: obj.metadata.namespace.clone(),
            dry_run,
            ranges: self.ranges,
            reservation: &mut reservation,
        };
        let mut filled = write.cluster_ip(&mut obj.body, old).await;
        if filled.is_ok() {
            filled = write.node_ports(&mut obj.body, old).await;
        }
        if dry_run {
            return filled.map(|()| Allocation::nothing());
        }
        match filled {
            Ok(()) => Ok(Allocation::new(reservation)),
            Err(e) => {
                Box::new(reservation).revert().await;
                Err(e)
            }
        }
    }

    async fn release(&self, pool: &AllocationPool, obj: &DynamicObject) {
        let Ok(pools) = self.pools(pool) else {
            return;
        };
        let ports: Vec<u16> = held_node_ports(obj).collect();
        ServiceReservation::release(&pools, &held_ips(obj), &ports).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::options::RequestContext;
    use storage::memory::MemoryBackend;

    /// Services and IPAddresses over one memory store, as a server has them.
    struct Fixture {
        services: GenericStore,
        addresses: GenericStore,
        ports: NodePortPool,
    }

    async fn fixture(ranges: ServiceRanges) -> Fixture {
        let storage = storage::Store::open(
            Arc::new(MemoryBackend::new()),
            crate::object::JsonCodec,
            storage::StoreOptions::default(),
        )
        .await
        .unwrap();
        let types = crate::builtin::resource_types_with(ranges);
        let find = |plural: &str| types.iter().find(|t| t.plural == plural).unwrap().clone();
        let services = GenericStore::new(find("services"), storage.clone(), "/registry");
        let addresses = GenericStore::new(find("ipaddresses"), storage.clone(), "/registry");
        GenericStore::new(find("namespaces"), storage.clone(), "/registry")
            .create(
                &RequestContext::default(),
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}),
            )
            .await
            .unwrap();
        let pool = AllocationPool {
            storage,
            prefix: "/registry".into(),
        };
        Fixture {
            services,
            addresses,
            ports: NodePortPool::new(&pool, ranges),
        }
    }

    fn ctx() -> RequestContext {
        RequestContext {
            namespace: "default".into(),
            user: "admin".into(),
            groups: vec!["system:masters".into()],
            ..Default::default()
        }
    }

    fn svc(name: &str, spec: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec})
    }

    impl Fixture {
        async fn create(&self, name: &str, spec: Value) -> Result<Value, StatusError> {
            self.services
                .create(&ctx(), svc(name, spec))
                .await
                .map(|o| o.to_value())
        }

        async fn address(&self, ip: &str) -> Option<Value> {
            let ctx = RequestContext::default();
            self.addresses
                .get(&ctx, ip)
                .await
                .ok()
                .map(|o| o.to_value())
        }

        async fn node_ports(&self) -> BTreeSet<u16> {
            self.ports.read().await.unwrap().ports
        }
    }

    #[tokio::test]
    async fn a_cluster_ip_is_an_ip_address_object_named_after_it() {
        let f = fixture(ServiceRanges::default()).await;
        let a = f
            .create("a", json!({"ports": [{"port": 80}]}))
            .await
            .unwrap();
        let ip = a["spec"]["clusterIP"].as_str().unwrap().to_string();
        let octet: u8 = ip.rsplit('.').next().unwrap().parse().unwrap();
        assert!((17..=254).contains(&octet), "{ip} is in the upper band");
        assert_eq!(a["spec"]["clusterIPs"], json!([ip]));
        assert_eq!(a["spec"]["ipFamilies"], json!(["IPv4"]));
        assert_eq!(a["spec"]["ipFamilyPolicy"], "SingleStack");
        let address = f.address(&ip).await.expect("an IPAddress holds it");
        assert_eq!(
            address["metadata"]["labels"],
            json!({"ipaddress.kubernetes.io/ip-family": "IPv4",
                   "ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io"})
        );
        assert_eq!(
            address["spec"]["parentRef"],
            json!({"resource": "services", "namespace": "default", "name": "a"})
        );

        // Held: the same address again is upstream's 422.
        let err = f
            .create("b", json!({"clusterIP": ip, "ports": [{"port": 80}]}))
            .await
            .unwrap_err();
        assert_eq!(
            err.status().message,
            format!(
                "Service \"b\" is invalid: spec.clusterIPs: Invalid value: []string{{\"{ip}\"}}: failed to allocate IP {ip}: provided IP is already allocated"
            )
        );
        let err = f
            .create(
                "c",
                json!({"clusterIP": "10.1.0.9", "ports": [{"port": 80}]}),
            )
            .await
            .unwrap_err();
        assert!(
            err.status().message.ends_with("failed to allocate IP 10.1.0.9: the provided network does not match the current range"),
            "{}",
            err.status().message
        );

        // Deleted: released, and the address can be asked for again.
        f.services
            .delete(&ctx(), "a", &Default::default())
            .await
            .unwrap();
        assert!(f.address(&ip).await.is_none());
        f.create("b", json!({"clusterIP": ip, "ports": [{"port": 80}]}))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn a_failed_create_gives_its_address_back() {
        let f = fixture(ServiceRanges::default()).await;
        f.create(
            "a",
            json!({"clusterIP": "10.0.0.5", "ports": [{"port": 80}]}),
        )
        .await
        .unwrap();
        // The name is taken: the address the second create took is released.
        let err = f
            .create(
                "a",
                json!({"clusterIP": "10.0.0.200", "ports": [{"port": 80}]}),
            )
            .await
            .unwrap_err();
        assert_eq!(err.code(), 409, "{}", err.status().message);
        assert!(f.address("10.0.0.200").await.is_none());
        // A dry run takes nothing; its answer names the range's network
        // address, as upstream's dry-run allocator does.
        let mut dry = ctx();
        dry.dry_run = true;
        let planned = f
            .services
            .create(&dry, svc("d", json!({"ports": [{"port": 80}]})))
            .await
            .unwrap()
            .to_value();
        assert_eq!(planned["spec"]["clusterIP"], "10.0.0.0");
        let held = f
            .addresses
            .storage()
            .list("/registry/ipaddresses/", None, 0, &|_, _| true);
        assert_eq!(held.items.len(), 1);
    }

    #[tokio::test]
    async fn the_range_runs_full_with_upstreams_error() {
        let f = fixture(ServiceRanges::parse("10.0.0.0/29", "30000-30001").unwrap()).await;
        for i in 0..6 {
            f.create(&format!("s{i}"), json!({"ports": [{"port": 80}]}))
                .await
                .unwrap();
        }
        let err = f
            .create("s6", json!({"ports": [{"port": 80}]}))
            .await
            .unwrap_err();
        assert_eq!(err.code(), 500);
        assert_eq!(
            err.status().message,
            "Internal error occurred: failed to allocate a serviceIP for Service \"s6\": range is full"
        );
    }

    #[tokio::test]
    async fn node_ports_live_in_the_bitmap() {
        let f = fixture(ServiceRanges::default()).await;
        let a = f
            .create(
                "a",
                json!({"type": "NodePort", "ports": [
                    {"name": "dns", "port": 53, "protocol": "UDP"},
                    {"name": "dns-tcp", "port": 53, "protocol": "TCP"},
                    {"name": "web", "port": 80, "nodePort": 30080}]}),
            )
            .await
            .unwrap();
        let shared = a["spec"]["ports"][0]["nodePort"].as_u64().unwrap() as u16;
        assert_eq!(a["spec"]["ports"][1]["nodePort"], shared);
        assert_eq!(a["spec"]["ports"][2]["nodePort"], 30080);
        assert_eq!(f.node_ports().await, [shared, 30080].into_iter().collect());

        let err = f
            .create(
                "b",
                json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}),
            )
            .await
            .unwrap_err();
        assert_eq!(
            err.status().message,
            "Service \"b\" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated"
        );
        let err = f
            .create(
                "b",
                json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 80}]}),
            )
            .await
            .unwrap_err();
        assert_eq!(
            err.status().message,
            "Service \"b\" is invalid: spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range. The range of valid ports is 30000-32767"
        );
        // The failed creates took nothing, not even their cluster IPs.
        assert_eq!(f.node_ports().await.len(), 2);
        assert_eq!(
            f.addresses
                .storage()
                .list("/registry/ipaddresses/", None, 0, &|_, _| true)
                .items
                .len(),
            1
        );

        // An update keeps what it had, and gives back what it drops.
        let mut update = a.clone();
        update["spec"]["type"] = json!("ClusterIP");
        for port in update["spec"]["ports"].as_array_mut().unwrap() {
            port.as_object_mut().unwrap().remove("nodePort");
        }
        let updated = f
            .services
            .update(&ctx(), "a", update)
            .await
            .unwrap()
            .to_value();
        assert_eq!(updated["spec"]["clusterIP"], a["spec"]["clusterIP"]);
        assert!(f.node_ports().await.is_empty());
    }

    #[test]
    fn the_bitmap_is_go_big_int_bytes() {
        let ranges = ServiceRanges::default();
        let ports: BTreeSet<u16> = [30000, 30009, 32767].into_iter().collect();
        let stored: Value = serde_json::from_slice(&encode_bitmap(&ranges, &ports)).unwrap();
        assert_eq!(stored["range"], "30000-32767");
        let data = base64::engine::general_purpose::STANDARD
            .decode(stored["data"].as_str().unwrap())
            .unwrap();
        // Bit 2767 is the top bit of the first of 346 big-endian bytes.
        assert_eq!(data.len(), 346);
        assert_eq!(data[0], 0x80);
        assert_eq!(data[data.len() - 1], 0x01);
        assert_eq!(data[data.len() - 2], 0x02);
        assert_eq!(decode_bitmap(&stored), ports);
        let empty: Value =
            serde_json::from_slice(&encode_bitmap(&ranges, &BTreeSet::new())).unwrap();
        assert_eq!(empty["data"], "");
        assert!(decode_bitmap(&empty).is_empty());
    }

    #[test]
    fn ranges_parse() {
        let r = ServiceRanges::parse("10.96.0.0/12", "30000-32767").unwrap();
        assert_eq!(r.first_ip(), Ipv4Addr::new(10, 96, 0, 1));
        assert_eq!(r.cluster_cidr(), "10.96.0.0/12");
        assert!(r.contains(Ipv4Addr::new(10, 111, 255, 254)));
        assert!(!r.contains(Ipv4Addr::new(10, 111, 255, 255)));
        let refused =
            |cidr: &str, ports: &str| ServiceRanges::parse(cidr, ports).unwrap_err().to_string();
        assert_eq!(
            refused("fd00::/108", "30000-32767"),
            "--service-cluster-ip-range \"fd00::/108\": only IPv4 ranges are supported"
        );
        assert_eq!(
            refused("10.0.0.0", "30000-32767"),
            "--service-cluster-ip-range \"10.0.0.0\": expected an IPv4 CIDR such as 10.0.0.0/24"
        );
        assert_eq!(
            refused("10.0.0.0/31", "30000-32767"),
            "--service-cluster-ip-range \"10.0.0.0/31\": the prefix must be between /8 and /30"
        );
        assert_eq!(
            refused("10.0.0.0/24", "32767-30000"),
            "--service-node-port-range \"32767-30000\": expected a range such as 30000-32767"
        );
    }

    #[tokio::test]
    async fn a_local_load_balancer_gets_a_health_check_node_port() {
        let f = fixture(ServiceRanges::default()).await;
        let lb = f
            .create(
                "lb",
                json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local",
                       "ports": [{"port": 80}]}),
            )
            .await
            .unwrap();
        let health = lb["spec"]["healthCheckNodePort"].as_u64().unwrap() as u16;
        let entry = lb["spec"]["ports"][0]["nodePort"].as_u64().unwrap() as u16;
        assert_ne!(health, entry);
        assert_eq!(f.node_ports().await, [health, entry].into_iter().collect());

        let err = f
            .create(
                "other",
                json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local",
                       "healthCheckNodePort": health, "ports": [{"port": 80}]}),
            )
            .await
            .unwrap_err();
        assert_eq!(err.code(), 500);
        assert_eq!(
            err.status().message,
            format!(
                "Internal error occurred: failed to allocate requested HealthCheck NodePort {health}: provided port is already allocated"
            )
        );
        assert_eq!(
            f.node_ports().await.len(),
            2,
            "the failed create took nothing"
        );

        // Cluster-wide traffic needs no health check: released and dropped.
        let mut update = lb.clone();
        update["spec"]["externalTrafficPolicy"] = json!("Cluster");
        let updated = f
            .services
            .update(&ctx(), "lb", update)
            .await
            .unwrap()
            .to_value();
        assert!(updated["spec"].get("healthCheckNodePort").is_none());
        assert_eq!(f.node_ports().await, [entry].into_iter().collect());
    }
}
