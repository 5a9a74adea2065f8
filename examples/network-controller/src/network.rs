//! The `Network` resource of the seeds (`samplecrd.k8s.io/v1`), and the address
//! arithmetic its controller does.

use std::net::Ipv4Addr;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A network: an IPv4 address range and its gateway.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "samplecrd.k8s.io",
    version = "v1",
    kind = "Network",
    plural = "networks",
    namespaced,
    status = "NetworkStatus",
    shortname = "net",
    printcolumn = r#"{"name":"CIDR","type":"string","jsonPath":".spec.cidr"}"#,
    printcolumn = r#"{"name":"Gateway","type":"string","jsonPath":".spec.gateway"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Usable","type":"integer","jsonPath":".status.usableHosts"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
pub struct NetworkSpec {
    /// The address range in CIDR notation, e.g. `192.168.0.0/16`.
    #[schemars(pattern(r"^(\d{1,3}\.){3}\d{1,3}/\d{1,2}$"))]
    pub cidr: String,
    /// The gateway's IPv4 address; it must lie inside `cidr`.
    #[schemars(pattern(r"^(\d{1,3}\.){3}\d{1,3}$"))]
    pub gateway: String,
}

/// What the controller computed for the spec it last saw.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkStatus {
    /// `Ready` (allocated) and `Invalid` (the spec cannot be allocated).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The generation this status describes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broadcast: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_usable: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_usable: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usable_hosts: Option<u64>,
}

/// The addresses of a valid network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allocation {
    pub network: Ipv4Addr,
    pub prefix: u8,
    pub broadcast: Ipv4Addr,
    pub first_usable: Ipv4Addr,
    pub last_usable: Ipv4Addr,
    pub usable_hosts: u64,
}

/// Why a spec cannot be allocated: a condition reason and a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}: {message}")]
pub struct Invalid {
    pub reason: &'static str,
    pub message: String,
}

fn invalid(reason: &'static str, message: String) -> Invalid {
    Invalid { reason, message }
}

/// Allocate `spec`: the network and broadcast addresses, the usable range, and a
/// check that the gateway is a usable address of it. /31 and /32 follow RFC 3021:
/// every address is usable.
pub fn allocate(spec: &NetworkSpec) -> Result<Allocation, Invalid> {
    let (address, prefix) = spec.cidr.split_once('/').ok_or_else(|| {
        invalid(
            "MalformedCIDR",
            format!("{:?} is not in CIDR notation", spec.cidr),
        )
    })?;
    let address: Ipv4Addr = address.parse().map_err(|_| {
        invalid(
            "MalformedCIDR",
            format!("{address:?} is not an IPv4 address"),
        )
    })?;
    let prefix: u8 = prefix.parse().ok().filter(|p| *p <= 32).ok_or_else(|| {
        invalid(
            "MalformedCIDR",
            format!("prefix length {prefix:?} is not 0–32"),
        )
    })?;
    let gateway: Ipv4Addr = spec.gateway.parse().map_err(|_| {
        invalid(
            "MalformedGateway",
            format!("{:?} is not an IPv4 address", spec.gateway),
        )
    })?;
    let mask = if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - prefix)
    };
    let network = u32::from(address) & mask;
    let broadcast = network | !mask;
    let (first, last) = if prefix >= 31 {
        (network, broadcast)
    } else {
        (network + 1, broadcast - 1)
    };
    let allocation = Allocation {
        network: network.into(),
        prefix,
        broadcast: broadcast.into(),
        first_usable: first.into(),
        last_usable: last.into(),
        usable_hosts: u64::from(last - first) + 1,
    };
    let g = u32::from(gateway);
    if g < first || g > last {
        return Err(invalid(
            "GatewayOutsideCIDR",
            format!(
                "gateway {gateway} is not a usable address of {}/{prefix} ({}–{})",
                allocation.network, allocation.first_usable, allocation.last_usable
            ),
        ));
    }
    Ok(allocation)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(cidr: &str, gateway: &str) -> NetworkSpec {
        NetworkSpec {
            cidr: cidr.into(),
            gateway: gateway.into(),
        }
    }

    #[test]
    fn allocations() {
        let a = allocate(&spec("192.168.0.0/16", "192.168.0.1")).unwrap();
        assert_eq!(a.network, Ipv4Addr::new(192, 168, 0, 0));
        assert_eq!(a.broadcast, Ipv4Addr::new(192, 168, 255, 255));
        assert_eq!(a.first_usable, Ipv4Addr::new(192, 168, 0, 1));
        assert_eq!(a.last_usable, Ipv4Addr::new(192, 168, 255, 254));
        assert_eq!(a.usable_hosts, 65534);
        // Host bits in the CIDR are cleared.
        let a = allocate(&spec("10.1.2.3/24", "10.1.2.254")).unwrap();
        assert_eq!(a.network, Ipv4Addr::new(10, 1, 2, 0));
        assert_eq!(a.usable_hosts, 254);
        let a = allocate(&spec("10.0.0.0/31", "10.0.0.1")).unwrap();
        assert_eq!(a.usable_hosts, 2);
        let a = allocate(&spec("0.0.0.0/0", "8.8.8.8")).unwrap();
        assert_eq!(a.usable_hosts, (1 << 32) - 2);
    }

    #[test]
    fn invalid_specs_say_why() {
        let reason = |c: &str, g: &str| allocate(&spec(c, g)).unwrap_err().reason;
        assert_eq!(reason("192.168.0.0/16", "10.0.0.1"), "GatewayOutsideCIDR");
        assert_eq!(
            reason("192.168.0.0/16", "192.168.0.0"),
            "GatewayOutsideCIDR"
        );
        assert_eq!(
            reason("192.168.0.0/16", "192.168.255.255"),
            "GatewayOutsideCIDR"
        );
        assert_eq!(reason("300.1.1.1/8", "300.1.1.2"), "MalformedCIDR");
        assert_eq!(reason("10.0.0.0/33", "10.0.0.1"), "MalformedCIDR");
        assert_eq!(reason("10.0.0.0", "10.0.0.1"), "MalformedCIDR");
        assert_eq!(reason("10.0.0.0/8", "10.0.0"), "MalformedGateway");
        assert_eq!(
            allocate(&spec("192.168.0.0/16", "10.0.0.1"))
                .unwrap_err()
                .message,
            "gateway 10.0.0.1 is not a usable address of 192.168.0.0/16 (192.168.0.1–192.168.255.254)"
        );
    }
}
