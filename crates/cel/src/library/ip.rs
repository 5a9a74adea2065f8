//! Kubernetes' IP and CIDR libraries (`library.IP`, `library.CIDR`): `ip`,
//! `isIP`, `ip.isCanonical`, `cidr`, `isCIDR`, their members and `string`,
//! parsing as Go's `net/netip` does, less IPv4-mapped IPv6 addresses and
//! zones, which upstream rejects.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use cel::common::types::STRING_TYPE;
use cel::{DeclarationError, Env, ExecutionError};

use super::{
    Args, Ret, boolean, error, global, int, member, opaque, opaque_arg, opaque_type, string,
    string_arg,
};

const IP: &str = "net.IP";
const CIDR: &str = "net.CIDR";

pub(crate) const DECLARATIONS: &[&str] = &[
    "ip(string) -> net.IP",
    "isIP(string) -> bool",
    "ip.isCanonical(string) -> bool",
    "[net.IP].family() -> int",
    "[net.IP].isUnspecified() -> bool",
    "[net.IP].isLoopback() -> bool",
    "[net.IP].isLinkLocalMulticast() -> bool",
    "[net.IP].isLinkLocalUnicast() -> bool",
    "[net.IP].isGlobalUnicast() -> bool",
    "string(net.IP) -> string",
    "cidr(string) -> net.CIDR",
    "isCIDR(string) -> bool",
    "[net.CIDR].containsIP(string) -> bool",
    "[net.CIDR].containsIP(net.IP) -> bool",
    "[net.CIDR].containsCIDR(string) -> bool",
    "[net.CIDR].containsCIDR(net.CIDR) -> bool",
    "[net.CIDR].ip() -> net.IP",
    "[net.CIDR].prefixLength() -> int",
    "[net.CIDR].masked() -> net.CIDR",
    "string(net.CIDR) -> string",
];

pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let ip = || opaque_type(IP);
    let cidr = || opaque_type(CIDR);
    let s = || vec![STRING_TYPE];
    global(env, "ip", "string_to_ip", s(), to_ip)?;
    global(env, "isIP", "is_ip", s(), is_ip)?;
    global(env, "ip.isCanonical", "ip_is_canonical", s(), is_canonical)?;
    member(env, "family", "ip_family", ip(), vec![], family)?;
    member(
        env,
        "isUnspecified",
        "ip_is_unspecified",
        ip(),
        vec![],
        is_unspecified,
    )?;
    member(
        env,
        "isLoopback",
        "ip_is_loopback",
        ip(),
        vec![],
        is_loopback,
    )?;
    member(
        env,
        "isLinkLocalMulticast",
        "ip_is_link_local_multicast",
        ip(),
        vec![],
        is_link_local_multicast,
    )?;
    member(
        env,
        "isLinkLocalUnicast",
        "ip_is_link_local_unicast",
        ip(),
        vec![],
        is_link_local_unicast,
    )?;
    member(
        env,
        "isGlobalUnicast",
        "ip_is_global_unicast",
        ip(),
        vec![],
        is_global_unicast,
    )?;
    global(env, "string", "ip_to_string", vec![ip()], ip_to_string)?;
    global(env, "cidr", "string_to_cidr", s(), to_cidr)?;
    global(env, "isCIDR", "is_cidr", s(), is_cidr)?;
    member(
        env,
        "containsIP",
        "cidr_contains_ip_string",
        cidr(),
        s(),
        contains_ip_string,
    )?;
    member(
        env,
        "containsIP",
        "cidr_contains_ip_ip",
        cidr(),
        vec![ip()],
        contains_ip,
    )?;
    member(
        env,
        "containsCIDR",
        "cidr_contains_cidr_string",
        cidr(),
        s(),
        contains_cidr_string,
    )?;
    member(
        env,
        "containsCIDR",
        "cidr_contains_cidr",
        cidr(),
        vec![cidr()],
        contains_cidr,
    )?;
    member(env, "ip", "cidr_ip", cidr(), vec![], cidr_ip)?;
    member(
        env,
        "prefixLength",
        "cidr_prefix_length",
        cidr(),
        vec![],
        prefix_length,
    )?;
    member(env, "masked", "cidr_masked", cidr(), vec![], masked)?;
    global(
        env,
        "string",
        "cidr_to_string",
        vec![cidr()],
        cidr_to_string,
    )?;
    Ok(())
}

/// A `net.IP`: an IPv4 or IPv6 address, neither IPv4-mapped nor zoned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ip(IpAddr);

impl cel::objects::Opaque for Ip {
    fn runtime_type_name(&self) -> &str {
        IP
    }
}

/// A `net.CIDR`: an address and a prefix length, the address unmasked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    bits: u8,
}

impl cel::objects::Opaque for Cidr {
    fn runtime_type_name(&self) -> &str {
        CIDR
    }
}

/// `netip.ParseAddr`, its error as Go words it (near enough: the reason may
/// differ).
fn parse_addr(raw: &str) -> Result<(IpAddr, bool), String> {
    let fail = |why: &str| Err(format!("ParseAddr({raw:?}): {why}"));
    if raw.is_empty() {
        return fail("unable to parse IP");
    }
    if let Some((addr, zone)) = raw.split_once('%') {
        return match addr.parse::<Ipv6Addr>() {
            Ok(_) if zone.is_empty() => fail("zone must be a non-empty string"),
            Ok(a) => Ok((IpAddr::V6(a), true)),
            Err(_) => fail("unexpected character"),
        };
    }
    if raw.contains(':') {
        return match raw.parse::<Ipv6Addr>() {
            Ok(a) => Ok((IpAddr::V6(a), false)),
            Err(_) => fail("unable to parse IPv6 address"),
        };
    }
    match raw.parse::<Ipv4Addr>() {
        Ok(a) => Ok((IpAddr::V4(a), false)),
        Err(_) => {
            let fields: Vec<&str> = raw.split('.').collect();
            if fields
                .iter()
                .any(|f| f.len() > 1 && f.starts_with('0') && f.bytes().all(|b| b.is_ascii_digit()))
            {
                fail("IPv4 field has octet with leading zero")
            } else if fields
                .iter()
                .any(|f| f.parse::<u32>().is_ok_and(|n| n > 255))
            {
                fail("IPv4 field has value >255")
            } else {
                fail("unable to parse IP")
            }
        }
    }
}

fn is_4in6(addr: &IpAddr) -> bool {
    matches!(addr, IpAddr::V6(a) if a.to_ipv4_mapped().is_some())
}

/// Upstream's `parseIPAddr`.
fn parse_ip(raw: &str) -> Result<Ip, String> {
    let (addr, zoned) = parse_addr(raw).map_err(|e| {
        format!("IP Address {raw:?} parse error during conversion from string: {e}")
    })?;
    if zoned {
        return Err(format!("IP address {raw:?} with zone value is not allowed"));
    }
    if is_4in6(&addr) {
        return Err(format!("IPv4-mapped IPv6 address {raw:?} is not allowed"));
    }
    Ok(Ip(addr))
}

/// `netip.ParsePrefix`.
fn parse_prefix(raw: &str) -> Result<Cidr, String> {
    let fail = |why: String| Err(format!("netip.ParsePrefix({raw:?}): {why}"));
    let Some(i) = raw.rfind('/') else {
        return fail("no '/'".to_owned());
    };
    let (addr, zoned) = match parse_addr(&raw[..i]) {
        Ok(a) => a,
        Err(e) => return fail(e),
    };
    if zoned {
        return fail("IPv6 zones cannot be present in a prefix".to_owned());
    }
    let bits_str = &raw[i + 1..];
    let bad_bits = || format!("bad bits after slash: {bits_str:?}");
    if bits_str.len() > 1 && !(b'1'..=b'9').contains(&bits_str.as_bytes()[0]) {
        return fail(bad_bits());
    }
    let Ok(bits) = bits_str.parse::<u32>() else {
        return fail(bad_bits());
    };
    if !bits_str.bytes().all(|b| b.is_ascii_digit()) {
        return fail(bad_bits());
    }
    let max = if addr.is_ipv4() { 32 } else { 128 };
    if bits > max {
        return fail("prefix length out of range".to_owned());
    }
    Ok(Cidr {
        addr,
        bits: bits as u8,
    })
}

/// Upstream's `parseCIDR`.
fn parse_cidr(raw: &str) -> Result<Cidr, String> {
    let cidr = parse_prefix(raw)
        .map_err(|e| format!("network address parse error during conversion from string: {e}"))?;
    if is_4in6(&cidr.addr) {
        return Err(format!("IPv4-mapped IPv6 address {raw:?} is not allowed"));
    }
    Ok(cidr)
}

/// Go's `Addr.String`: dotted quads, RFC 5952 for IPv6.
fn addr_string(addr: &IpAddr) -> String {
    match addr {
        IpAddr::V4(a) => a.to_string(),
        IpAddr::V6(a) => {
            let segments = a.segments();
            // The longest run of two zero groups or more, the first on a tie.
            let (mut best, mut best_len, mut run, mut run_len) = (0, 0, 0, 0);
            for (i, s) in segments.iter().enumerate() {
                if *s == 0 {
                    if run_len == 0 {
                        run = i;
                    }
                    run_len += 1;
                    if run_len > best_len {
                        best = run;
                        best_len = run_len;
                    }
                } else {
                    run_len = 0;
                }
            }
            let hex = |s: &[u16]| {
                s.iter()
                    .map(|g| format!("{g:x}"))
                    .collect::<Vec<_>>()
                    .join(":")
            };
            if best_len >= 2 {
                format!(
                    "{}::{}",
                    hex(&segments[..best]),
                    hex(&segments[best + best_len..])
                )
            } else {
                hex(&segments)
            }
        }
    }
}

fn mask(addr: &IpAddr, bits: u8) -> IpAddr {
    match addr {
        IpAddr::V4(a) => {
            let m = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(u32::from(*a) & m))
        }
        IpAddr::V6(a) => {
            let m = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(u128::from(*a) & m))
        }
    }
}

impl Cidr {
    fn contains(&self, ip: &IpAddr) -> bool {
        self.addr.is_ipv4() == ip.is_ipv4() && mask(ip, self.bits) == mask(&self.addr, self.bits)
    }

    fn contains_cidr(&self, other: &Cidr) -> bool {
        self.bits <= other.bits && self.contains(&other.addr)
    }
}

fn ip_arg(args: &Args<'_, '_>, i: usize) -> Result<Ip, ExecutionError> {
    opaque_arg::<Ip>(args, i, IP)
}

fn cidr_arg(args: &Args<'_, '_>, i: usize) -> Result<Cidr, ExecutionError> {
    opaque_arg::<Cidr>(args, i, CIDR)
}

fn to_ip<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    opaque(parse_ip(string_arg(&args, 0)?).map_err(|e| error("ip", e))?)
}

fn is_ip<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    boolean(parse_ip(string_arg(&args, 0)?).is_ok())
}

fn is_canonical<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let s = string_arg(&args, 0)?;
    let ip = parse_ip(s).map_err(|e| error("ip.isCanonical", e))?;
    boolean(addr_string(&ip.0) == s)
}

fn family<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    int(if ip_arg(&args, 0)?.0.is_ipv4() { 4 } else { 6 })
}

fn is_unspecified<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    boolean(ip_arg(&args, 0)?.0.is_unspecified())
}

fn is_loopback<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    boolean(ip_arg(&args, 0)?.0.is_loopback())
}

fn is_link_local_multicast<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    boolean(match ip_arg(&args, 0)?.0 {
        IpAddr::V4(a) => a.octets()[..3] == [224, 0, 0],
        IpAddr::V6(a) => a.segments()[0] == 0xff02,
    })
}

fn link_local_unicast(addr: &IpAddr) -> bool {
    match addr {
        IpAddr::V4(a) => a.octets()[..2] == [169, 254],
        IpAddr::V6(a) => a.segments()[0] & 0xffc0 == 0xfe80,
    }
}

fn is_link_local_unicast<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    boolean(link_local_unicast(&ip_arg(&args, 0)?.0))
}

/// Go's `Addr.IsGlobalUnicast`: private and ULA addresses included.
fn is_global_unicast<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let addr = ip_arg(&args, 0)?.0;
    let global = match addr {
        IpAddr::V4(a) => {
            a != Ipv4Addr::BROADCAST && !a.is_unspecified() && !a.is_loopback() && !a.is_multicast()
        }
        IpAddr::V6(a) => !a.is_unspecified() && !a.is_loopback() && !a.is_multicast(),
    };
    boolean(global && !link_local_unicast(&addr))
}

fn ip_to_string<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    string(addr_string(&ip_arg(&args, 0)?.0))
}

fn to_cidr<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let c = parse_cidr(string_arg(&args, 0)?).map_err(|e| {
        error(
            "cidr",
            format!("network address parse error during conversion from string: {e}"),
        )
    })?;
    opaque(c)
}

fn is_cidr<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    boolean(parse_cidr(string_arg(&args, 0)?).is_ok())
}

fn contains_ip_string<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let ip = parse_ip(string_arg(&args, 1)?).map_err(|e| error("containsIP", e))?;
    boolean(cidr_arg(&args, 0)?.contains(&ip.0))
}

fn contains_ip<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    boolean(cidr_arg(&args, 0)?.contains(&ip_arg(&args, 1)?.0))
}

fn contains_cidr_string<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let other = parse_cidr(string_arg(&args, 1)?).map_err(|e| {
        error(
            "containsCIDR",
            format!("network address parse error during conversion from string: {e}"),
        )
    })?;
    boolean(cidr_arg(&args, 0)?.contains_cidr(&other))
}

fn contains_cidr<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    boolean(cidr_arg(&args, 0)?.contains_cidr(&cidr_arg(&args, 1)?))
}

fn cidr_ip<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    opaque(Ip(cidr_arg(&args, 0)?.addr))
}

fn prefix_length<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    int(i64::from(cidr_arg(&args, 0)?.bits))
}

fn masked<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let c = cidr_arg(&args, 0)?;
    opaque(Cidr {
        addr: mask(&c.addr, c.bits),
        bits: c.bits,
    })
}

fn cidr_to_string<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let c = cidr_arg(&args, 0)?;
    string(format!("{}/{}", addr_string(&c.addr), c.bits))
}
