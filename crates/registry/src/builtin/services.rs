//! Services: upstream's defaults (`SetDefaults_Service`, IP families), and the
//! allocation of cluster IPs and node ports from the configured ranges.
//!
//! The allocated set is what the stored Services hold (read from the watch cache
//! at allocation time) plus what writes in flight in this process have reserved;
//! a reservation ends when its write is stored or fails. IPv4 single-stack only.

use apimachinery::{ErrorList, FieldError, FieldPath, StatusError, meta};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::net::Ipv4Addr;
use std::sync::Arc;

use crate::resource::{Allocation, Allocator, Strategy};

fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

pub struct Services;

const SERVICE_TYPES: [&str; 4] = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];

/// `SetDefaults_Service` and the IP-family defaults of upstream's service storage.
fn set_defaults(obj: &mut Value) {
    if !obj.get("spec").is_some_and(Value::is_object) {
        obj["spec"] = json!({});
    }
    let spec = &mut obj["spec"];
    if str_at(spec, "/type").is_empty() {
        spec["type"] = json!("ClusterIP");
    }
    match str_at(spec, "/sessionAffinity") {
        "" | "None" => {
            spec["sessionAffinity"] = json!("None");
            if let Some(map) = spec.as_object_mut() {
                map.remove("sessionAffinityConfig");
            }
        }
        "ClientIP"
            if spec
                .pointer("/sessionAffinityConfig/clientIP/timeoutSeconds")
                .is_none() =>
        {
            spec["sessionAffinityConfig"] = json!({"clientIP": {"timeoutSeconds": 10800}});
        }
        _ => {}
    }
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for port in ports.iter_mut().filter(|p| p.is_object()) {
            if str_at(port, "/protocol").is_empty() {
                port["protocol"] = json!("TCP");
            }
            let target_unset = match port.get("targetPort") {
                None | Some(Value::Null) => true,
                Some(Value::Number(n)) => n.as_i64() == Some(0),
                Some(Value::String(s)) => s.is_empty(),
                _ => false,
            };
            if target_unset && let Some(p) = port.get("port").cloned() {
                port["targetPort"] = p;
            }
        }
    }
    let kind = str_at(spec, "/type").to_string();
    let externally_accessible = matches!(kind.as_str(), "NodePort" | "LoadBalancer")
        || (kind == "ClusterIP"
            && spec
                .get("externalIPs")
                .and_then(Value::as_array)
                .is_some_and(|ips| !ips.is_empty()));
    if externally_accessible && str_at(spec, "/externalTrafficPolicy").is_empty() {
        spec["externalTrafficPolicy"] = json!("Cluster");
    }
    if kind != "ExternalName" && str_at(spec, "/internalTrafficPolicy").is_empty() {
        spec["internalTrafficPolicy"] = json!("Cluster");
    }
    if kind == "LoadBalancer" && spec.get("allocateLoadBalancerNodePorts").is_none() {
        spec["allocateLoadBalancerNodePorts"] = json!(true);
    }
}

impl Strategy for Services {
    fn prepare_status_update(&self, new: &mut Value, old: &Value) {
        crate::resource::take_status_and_metadata(new, old);
    }

    fn field(&self, obj: &Value, field: &str) -> Option<String> {
        super::field_labels::value("", "Service", obj, field)
    }

    /// `SetDefaults_Service` runs where upstream decodes a body: what it sets
    /// is the writer's in managedFields (cluster IPs, IP families and node
    /// ports, allocated later, are not).
    fn default(&self, obj: &mut Value) {
        set_defaults(obj);
    }

    fn prepare_create(&self, obj: &mut Value) {
        set_defaults(obj);
        if let Some(o) = obj.as_object_mut() {
            o.remove("status");
        }
        obj["status"] = json!({"loadBalancer": {}});
    }

    fn prepare_update(&self, new: &mut Value, old: &Value) {
        keep_allocated_ips(new, old);
        set_defaults(new);
        if let Some(status) = old.get("status") {
            new["status"] = status.clone();
        }
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let mut errs = Vec::new();
        let spec = FieldPath::new("spec");
        let kind = str_at(obj, "/spec/type");
        if !SERVICE_TYPES.contains(&kind) {
            errs.push(FieldError::not_supported(
                &spec.child("type"),
                json!(kind),
                &SERVICE_TYPES,
            ));
        }
        let ports = obj.pointer("/spec/ports").and_then(Value::as_array);
        if ports.is_none_or(Vec::is_empty)
            && kind != "ExternalName"
            && str_at(obj, "/spec/clusterIP") != "None"
        {
            errs.push(FieldError::required(&spec.child("ports"), ""));
        }
        for (i, port) in ports.into_iter().flatten().enumerate() {
            let path = spec.child("ports").index(i);
            match port.get("port").and_then(Value::as_i64) {
                Some(p) if (1..=65535).contains(&p) => {}
                Some(p) => errs.push(FieldError::invalid(
                    &path.child("port"),
                    json!(p),
                    "must be between 1 and 65535, inclusive",
                )),
                None => errs.push(FieldError::required(&path.child("port"), "")),
            }
            if ports.is_some_and(|p| p.len() > 1)
                && port
                    .get("name")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
            {
                errs.push(FieldError::required(&path.child("name"), ""));
            }
        }
        for (i, ip) in cluster_ips(obj).iter().enumerate() {
            if ip != "None" && ip.parse::<std::net::IpAddr>().is_err() {
                errs.push(FieldError::invalid(
                    &spec.child("clusterIPs").index(i),
                    json!(ip),
                    "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                ));
            }
        }
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        let mut errs = self.validate(new);
        errs.extend(validate_cluster_ips_unchanged(new, old));
        errs
    }

    fn row(&self, obj: &Value) -> Vec<Value> {
        let ports: Vec<String> = obj
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|p| {
                let proto = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
                let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
                match p.get("nodePort").and_then(Value::as_i64) {
                    Some(node) => format!("{port}:{node}/{proto}"),
                    None => format!("{port}/{proto}"),
                }
            })
            .collect();
        let selector: Vec<String> = obj
            .pointer("/spec/selector")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
            .collect();
        let cluster_ip = str_at(obj, "/spec/clusterIP");
        let or_none = |s: String| if s.is_empty() { "<none>".into() } else { s };
        vec![
            json!(str_at(obj, "/spec/type")),
            json!(or_none(cluster_ip.to_string())),
            json!("<none>"),
            json!(or_none(ports.join(","))),
            json!(or_none(selector.join(","))),
        ]
    }
}

/// `spec.clusterIPs`, or `[spec.clusterIP]` when only that is given.
fn cluster_ips(obj: &Value) -> Vec<String> {
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

/// Go's `%#v` of a `[]string`: `[]string{"10.0.0.5"}`.
fn go_strings(items: &[String]) -> String {
    let quoted: Vec<String> = items
        .iter()
        .map(|s| apimachinery::gofmt::quote(s))
        .collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// An update that leaves the allocated cluster IPs out keeps them (upstream's
/// `patchAllocatedValues`, before validation): re-applying a manifest without
/// `clusterIP` is not an attempt to unset it.
fn keep_allocated_ips(new: &mut Value, old: &Value) {
    let has_ip = |svc: &Value| str_at(svc, "/spec/type") != "ExternalName";
    if !has_ip(new) || !has_ip(old) {
        return;
    }
    let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let empty = |v: Option<&Value>| match v {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        _ => false,
    };
    for field in ["clusterIP", "clusterIPs"] {
        let kept = old.pointer(&format!("/spec/{field}"));
        if let Some(kept) = kept.filter(|k| !empty(Some(k)))
            && empty(spec.get(field))
        {
            spec.insert(field.into(), kept.clone());
        }
    }
}

/// Cluster IPs may not change once set (upstream `validateUpgradeDowngradeClusterIPs`).
fn validate_cluster_ips_unchanged(new: &Value, old: &Value) -> ErrorList {
    let (new_type, old_type) = (str_at(new, "/spec/type"), str_at(old, "/spec/type"));
    if new_type == "ExternalName" || old_type == "ExternalName" {
        return Vec::new();
    }
    let (new_ips, old_ips) = (cluster_ips(new), cluster_ips(old));
    if old_ips.is_empty() {
        return Vec::new();
    }
    let path = FieldPath::new("spec").child("clusterIPs").index(0);
    if new_ips.is_empty() {
        return vec![FieldError::invalid_go(
            &path,
            "[]string(nil)",
            "primary clusterIP can not be unset",
        )];
    }
    if new_ips[0] != old_ips[0] {
        return vec![FieldError::invalid_go(
            &path,
            &go_strings(&new_ips),
            "may not change once set",
        )];
    }
    Vec::new()
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

impl ServiceRanges {
    /// `10.0.0.0/24` and `30000-32767`.
    pub fn parse(cluster_ip_range: &str, node_port_range: &str) -> Result<Self, String> {
        let (addr, prefix) = cluster_ip_range.split_once('/').ok_or_else(|| {
            format!("--service-cluster-ip-range {cluster_ip_range:?}: expected an IPv4 CIDR such as 10.0.0.0/24")
        })?;
        let addr: Ipv4Addr = addr.parse().map_err(|_| {
            format!(
                "--service-cluster-ip-range {cluster_ip_range:?}: only IPv4 ranges are supported"
            )
        })?;
        let prefix: u8 = prefix
            .parse()
            .ok()
            .filter(|p| (8..=30).contains(p))
            .ok_or_else(|| {
                format!("--service-cluster-ip-range {cluster_ip_range:?}: the prefix must be between /8 and /30")
            })?;
        let (low, high) = node_port_range
            .split_once('-')
            .and_then(|(a, b)| Some((a.trim().parse::<u16>().ok()?, b.trim().parse::<u16>().ok()?)))
            .filter(|(a, b)| a <= b)
            .ok_or_else(|| {
                format!("--service-node-port-range {node_port_range:?}: expected a range such as 30000-32767")
            })?;
        let mask = u32::MAX << (32 - prefix);
        Ok(ServiceRanges {
            network: u32::from(addr) & mask,
            prefix,
            node_ports: (low, high),
        })
    }

    /// The first host address: the `default/kubernetes` Service's cluster IP.
    /// `--service-cluster-ip-range` as CIDR notation (`10.0.0.0/24`).
    pub fn cluster_cidr(&self) -> String {
        format!("{}/{}", Ipv4Addr::from(self.network), self.prefix)
    }

    pub fn first_ip(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.network + 1)
    }

    fn size(&self) -> u32 {
        1u32 << (32 - self.prefix)
    }

    /// Host addresses: network + 1 ..= broadcast - 1.
    fn contains(&self, ip: u32) -> bool {
        ip > self.network && ip < self.network + self.size() - 1
    }

    fn contains_port(&self, port: i64) -> bool {
        (i64::from(self.node_ports.0)..=i64::from(self.node_ports.1)).contains(&port)
    }
}

/// Allocates cluster IPs and node ports for Services.
pub struct ServiceAllocator {
    ranges: ServiceRanges,
    pending: Arc<Mutex<Pending>>,
}

#[derive(Default)]
struct Pending {
    ips: HashSet<u32>,
    ports: HashSet<u16>,
}

/// What one write reserved, released when the write is done.
struct Reserved {
    pending: Arc<Mutex<Pending>>,
    ips: Vec<u32>,
    ports: Vec<u16>,
}

impl Drop for Reserved {
    fn drop(&mut self) {
        let mut pending = self.pending.lock();
        for ip in &self.ips {
            pending.ips.remove(ip);
        }
        for port in &self.ports {
            pending.ports.remove(port);
        }
    }
}

/// What other Services hold.
#[derive(Default)]
struct InUse {
    ips: HashSet<u32>,
    ports: HashSet<u16>,
}

impl InUse {
    fn of(existing: &mut dyn Iterator<Item = &Value>) -> Self {
        let mut used = InUse::default();
        for svc in existing {
            for ip in cluster_ips(svc) {
                if let Ok(ip) = ip.parse::<Ipv4Addr>() {
                    used.ips.insert(u32::from(ip));
                }
            }
            used.ports.extend(node_ports(svc));
        }
        used
    }
}

fn node_ports(svc: &Value) -> impl Iterator<Item = u16> + '_ {
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

impl ServiceAllocator {
    pub fn new(ranges: ServiceRanges) -> Self {
        ServiceAllocator {
            ranges,
            pending: Default::default(),
        }
    }

    fn cluster_ip(
        &self,
        obj: &mut Value,
        old: Option<&Value>,
        taken: &mut Taken<'_>,
    ) -> Result<(), StatusError> {
        let spec = &mut obj["spec"];
        if str_at(spec, "/type") == "ExternalName" {
            if let Some(map) = spec.as_object_mut() {
                for field in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
                    map.remove(field);
                }
            }
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
            Some(requested) => Some(taken.request_ip(requested)?),
            None => Some(taken.next_ip()?),
        };
        if let Some(ip) = ip {
            ips = vec![Ipv4Addr::from(ip).to_string()];
        }
        if let Some(primary) = ips.first() {
            spec["clusterIP"] = json!(primary);
            spec["clusterIPs"] = json!(ips);
        }
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
        Ok(())
    }

    fn node_ports(
        &self,
        obj: &mut Value,
        old: Option<&Value>,
        taken: &mut Taken<'_>,
    ) -> Result<(), StatusError> {
        if !needs_node_ports(&obj["spec"]) {
            return Ok(());
        }
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
        let Some(ports) = obj.pointer_mut("/spec/ports").and_then(Value::as_array_mut) else {
            return Ok(());
        };
        // Entries with the same port number (TCP and UDP 53) share one node port.
        let mut by_port: Vec<(i64, u16)> = Vec::new();
        for (i, port) in ports.iter_mut().enumerate() {
            let number = port.get("port").and_then(Value::as_i64).unwrap_or(0);
            let requested = port
                .get("nodePort")
                .and_then(Value::as_i64)
                .filter(|p| *p != 0);
            let kept = old_ports
                .iter()
                .find(|(name, _)| name == str_at(port, "/name"))
                .map(|(_, p)| *p);
            let node_port = match (requested, kept) {
                (Some(p), Some(k)) if p == i64::from(k) => k,
                (Some(p), _) => taken.request_port(p, i)?,
                (None, Some(k)) => k,
                (None, None) => match by_port.iter().find(|(n, _)| *n == number) {
                    Some((_, shared)) => *shared,
                    None => taken.next_port()?,
                },
            };
            by_port.push((number, node_port));
            port["nodePort"] = json!(node_port);
        }
        Ok(())
    }
}

/// One allocation's view of the pool: in use by other Services, reserved by
/// other writes in flight, and what this write has taken so far.
struct Taken<'a> {
    /// The Service being written, for error messages.
    name: String,
    ranges: ServiceRanges,
    in_use: InUse,
    pending: parking_lot::MutexGuard<'a, Pending>,
    reserved: Reserved,
}

impl Taken<'_> {
    fn ip_taken(&self, ip: u32) -> bool {
        self.in_use.ips.contains(&ip) || self.pending.ips.contains(&ip)
    }

    fn port_taken(&self, port: u16) -> bool {
        self.in_use.ports.contains(&port) || self.pending.ports.contains(&port)
    }

    fn take_ip(&mut self, ip: u32) -> u32 {
        self.pending.ips.insert(ip);
        self.reserved.ips.push(ip);
        ip
    }

    fn take_port(&mut self, port: u16) -> u16 {
        self.pending.ports.insert(port);
        self.reserved.ports.push(port);
        port
    }

    fn request_ip(&mut self, requested: &str) -> Result<u32, StatusError> {
        let failed = |why: &str| {
            StatusError::invalid(
                "",
                "Service",
                &self.name,
                &vec![FieldError::invalid_go(
                    &FieldPath::new("spec").child("clusterIPs"),
                    &go_strings(&[requested.to_string()]),
                    &format!("failed to allocate IP {requested}: {why}"),
                )],
            )
        };
        let ip = requested
            .parse::<Ipv4Addr>()
            .map(u32::from)
            .ok()
            .filter(|ip| self.ranges.contains(*ip))
            .ok_or_else(|| failed("the provided network does not match the current range"))?;
        if self.ip_taken(ip) {
            return Err(failed("provided IP is already allocated"));
        }
        Ok(self.take_ip(ip))
    }

    /// Upstream starts at a random address above a reserved lower band (which
    /// static requests such as 10.0.0.1 use), then tries the band.
    fn next_ip(&mut self) -> Result<u32, StatusError> {
        let hosts = self.ranges.size() - 2;
        let offset = if hosts <= 16 {
            0
        } else {
            (hosts / 16).clamp(16, 256)
        };
        let first = self.ranges.network + 1;
        let upper = (first + offset)..(first + hosts);
        let lower = first..(first + offset);
        let found = scan_from_random(upper, |ip| !self.ip_taken(ip))
            .or_else(|| scan_from_random(lower, |ip| !self.ip_taken(ip)));
        match found {
            Some(ip) => Ok(self.take_ip(ip)),
            None => Err(StatusError::internal(
                "failed to allocate a serviceIP: range is full",
            )),
        }
    }

    fn request_port(&mut self, port: i64, index: usize) -> Result<u16, StatusError> {
        let path = FieldPath::new("spec")
            .child("ports")
            .index(index)
            .child("nodePort");
        let invalid = |why: String| {
            StatusError::invalid(
                "",
                "Service",
                &self.name,
                &vec![FieldError::invalid(&path, json!(port), &why)],
            )
        };
        if !self.ranges.contains_port(port) {
            let (low, high) = self.ranges.node_ports;
            return Err(invalid(format!(
                "provided port is not in the valid range. The range of valid ports is {low}-{high}"
            )));
        }
        let port = u16::try_from(port).map_err(|_| invalid("out of range".into()))?;
        if self.port_taken(port) {
            return Err(invalid("provided port is already allocated".into()));
        }
        Ok(self.take_port(port))
    }

    fn next_port(&mut self) -> Result<u16, StatusError> {
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
        let upper = (low + offset)..(high + 1);
        let lower = low..(low + offset);
        let free = |p: u32| u16::try_from(p).is_ok_and(|p| !self.port_taken(p));
        let found = scan_from_random(upper, free).or_else(|| scan_from_random(lower, free));
        match found.and_then(|p| u16::try_from(p).ok()) {
            Some(port) => Ok(self.take_port(port)),
            None => Err(StatusError::internal(
                "failed to allocate a nodePort: range is full",
            )),
        }
    }
}

/// The first value in `range` (scanning from a random start, wrapping) that is free.
fn scan_from_random(range: std::ops::Range<u32>, free: impl Fn(u32) -> bool) -> Option<u32> {
    if range.is_empty() {
        return None;
    }
    let len = range.end - range.start;
    let start = rand::random_range(0..len);
    (0..len)
        .map(|i| range.start + (start + i) % len)
        .find(|v| free(*v))
}

impl Allocator for ServiceAllocator {
    fn allocate(
        &self,
        obj: &mut Value,
        old: Option<&Value>,
        existing: &mut dyn Iterator<Item = &Value>,
    ) -> Result<Allocation, StatusError> {
        let mut taken = Taken {
            name: meta::name(obj).to_string(),
            ranges: self.ranges,
            in_use: InUse::of(existing),
            pending: self.pending.lock(),
            reserved: Reserved {
                pending: self.pending.clone(),
                ips: Vec::new(),
                ports: Vec::new(),
            },
        };
        self.cluster_ip(obj, old, &mut taken)?;
        self.node_ports(obj, old, &mut taken)?;
        let Taken {
            pending, reserved, ..
        } = taken;
        // Unlock before `reserved` can be dropped (its drop locks again).
        drop(pending);
        Ok(Allocation::new(reserved))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc(name: &str, spec: Value) -> Value {
        let mut obj = json!({"metadata": {"name": name, "namespace": "default"}, "spec": spec});
        set_defaults(&mut obj);
        obj
    }

    fn allocate(
        allocator: &ServiceAllocator,
        obj: &mut Value,
        existing: &[Value],
    ) -> Result<Allocation, StatusError> {
        allocator.allocate(obj, None, &mut existing.iter())
    }

    #[test]
    fn defaults_match_upstream() {
        let obj = svc("a", json!({"ports": [{"port": 80}]}));
        assert_eq!(
            obj["spec"],
            json!({
                "type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
                "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
            })
        );
        let lb = svc(
            "b",
            json!({"type": "LoadBalancer", "ports": [{"port": 80, "targetPort": "http"}]}),
        );
        assert_eq!(lb["spec"]["externalTrafficPolicy"], "Cluster");
        assert_eq!(lb["spec"]["allocateLoadBalancerNodePorts"], true);
        assert_eq!(lb["spec"]["ports"][0]["targetPort"], "http");
        let ext = svc(
            "c",
            json!({"type": "ExternalName", "externalName": "x.example.com"}),
        );
        assert!(ext["spec"].get("internalTrafficPolicy").is_none());
    }

    #[test]
    fn cluster_ips_come_from_the_range_and_never_twice() {
        let allocator = ServiceAllocator::new(ServiceRanges::default());
        let mut a = svc("a", json!({"ports": [{"port": 80}]}));
        let held = allocate(&allocator, &mut a, &[]).unwrap();
        let ip: Ipv4Addr = a["spec"]["clusterIP"].as_str().unwrap().parse().unwrap();
        assert!(
            (17..=254).contains(&ip.octets()[3]),
            "{ip} is in the upper band"
        );
        assert_eq!(a["spec"]["clusterIPs"], json!([ip.to_string()]));
        assert_eq!(a["spec"]["ipFamilies"], json!(["IPv4"]));
        assert_eq!(a["spec"]["ipFamilyPolicy"], "SingleStack");

        // Reserved while its write is in flight, then held by the stored object.
        let mut b = svc(
            "b",
            json!({"clusterIP": ip.to_string(), "ports": [{"port": 80}]}),
        );
        let err = allocate(&allocator, &mut b, &[]).unwrap_err();
        assert_eq!(
            err.status().message,
            format!(
                "Service \"b\" is invalid: spec.clusterIPs: Invalid value: []string{{\"{ip}\"}}: failed to allocate IP {ip}: provided IP is already allocated"
            )
        );
        drop(held);
        assert!(allocate(&allocator, &mut b.clone(), &[a.clone()]).is_err());
        assert!(allocate(&allocator, &mut b, &[]).is_ok());

        let mut outside = svc(
            "c",
            json!({"clusterIP": "192.168.0.5", "ports": [{"port": 80}]}),
        );
        assert!(
            allocate(&allocator, &mut outside, &[])
                .unwrap_err()
                .status()
                .message
                .ends_with("failed to allocate IP 192.168.0.5: the provided network does not match the current range")
        );
        let mut headless = svc("d", json!({"clusterIP": "None", "selector": {"app": "x"}}));
        allocate(&allocator, &mut headless, &[]).unwrap();
        assert_eq!(headless["spec"]["clusterIPs"], json!(["None"]));
        assert_eq!(headless["spec"]["ipFamilyPolicy"], "SingleStack");
    }

    #[test]
    fn node_ports_are_allocated_for_node_port_services() {
        let allocator = ServiceAllocator::new(ServiceRanges::default());
        let mut a = svc(
            "a",
            json!({"type": "NodePort", "ports": [{"name": "dns-tcp", "port": 53}, {"name": "dns-udp", "port": 53, "protocol": "UDP"}, {"name": "web", "port": 80, "nodePort": 30080}]}),
        );
        let _held = allocate(&allocator, &mut a, &[]).unwrap();
        let ports = a["spec"]["ports"].as_array().unwrap();
        let dns = ports[0]["nodePort"].as_u64().unwrap();
        assert!((30086..=32767).contains(&dns));
        assert_eq!(
            ports[1]["nodePort"], dns,
            "same port number, same node port"
        );
        assert_eq!(ports[2]["nodePort"], 30080);

        let mut b = svc(
            "b",
            json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}),
        );
        assert_eq!(
            allocate(&allocator, &mut b, &[a.clone()])
                .unwrap_err()
                .status()
                .message,
            "Service \"b\" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated"
        );
        let mut c = svc(
            "c",
            json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 80}]}),
        );
        assert_eq!(
            allocate(&allocator, &mut c, &[])
                .unwrap_err()
                .status()
                .message,
            "Service \"c\" is invalid: spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range. The range of valid ports is 30000-32767"
        );
    }

    #[test]
    fn updates_keep_what_was_allocated() {
        let allocator = ServiceAllocator::new(ServiceRanges::default());
        let mut old = svc(
            "a",
            json!({"type": "NodePort", "ports": [{"name": "web", "port": 80}]}),
        );
        drop(allocate(&allocator, &mut old, &[]).unwrap());
        let mut new = svc(
            "a",
            json!({"type": "NodePort", "ports": [{"name": "web", "port": 80}]}),
        );
        drop(
            allocator
                .allocate(&mut new, Some(&old), &mut std::iter::empty())
                .unwrap(),
        );
        assert_eq!(new["spec"]["clusterIP"], old["spec"]["clusterIP"]);
        assert_eq!(
            new["spec"]["ports"][0]["nodePort"],
            old["spec"]["ports"][0]["nodePort"]
        );
        let mut moved = new.clone();
        moved["spec"]["clusterIP"] = json!("10.0.0.99");
        moved["spec"]["clusterIPs"] = json!(["10.0.0.99"]);
        assert_eq!(
            validate_cluster_ips_unchanged(&moved, &old)[0].to_string(),
            "spec.clusterIPs[0]: Invalid value: []string{\"10.0.0.99\"}: may not change once set"
        );
    }

    #[test]
    fn ranges_parse() {
        let r = ServiceRanges::parse("10.96.0.0/12", "30000-32767").unwrap();
        assert_eq!(r.first_ip(), Ipv4Addr::new(10, 96, 0, 1));
        assert!(ServiceRanges::parse("fd00::/108", "30000-32767").is_err());
        assert!(ServiceRanges::parse("10.0.0.0/24", "32767-30000").is_err());
    }
}
