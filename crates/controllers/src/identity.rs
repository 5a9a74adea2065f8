//! API server identity Leases, as every kube-apiserver keeps one: a Lease
//! `kube-system/apiserver-<hash>` labelled `apiserver.kubernetes.io/identity:
//! kube-apiserver` and `kubernetes.io/hostname`, renewed every 10 s with a
//! duration of an hour, deleted at start (a previous run's) and at graceful
//! shutdown; and the garbage collector every replica runs, which deletes those
//! whose `renewTime + leaseDurationSeconds` has passed (upstream checks hourly).
//!
//! Upstream's name hashes the host name (and the component), so two replicas
//! on one machine would share a Lease. kubext keeps the shape (`apiserver-` and
//! 26 base32 characters of a SHA-256) and hashes the advertised address and
//! port as well: one Lease per replica, the same one across a replica's
//! restarts.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use apimachinery::meta;
use registry::options::DeleteOptions;
use serde_json::{Value, json};

use runtime::leader::hostname;
use runtime::{Resources, system_context};

/// The label that marks identity Leases, and its value for kube-apiserver.
pub const IDENTITY_LABEL: &str = "apiserver.kubernetes.io/identity";
pub const COMPONENT: &str = "kube-apiserver";
const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";
/// Where peers reach this server (upstream sets it with the
/// UnknownVersionInteroperabilityProxy feature, on by default since 1.36).
const PEER_ADDRESS_ANNOTATION: &str = "kubernetes.io/peer-advertise-address";
pub const NAMESPACE: &str = "kube-system";
const MANAGER: &str = "kube-apiserver";

/// Upstream's `IdentityLease*` values (exposed there only to integration
/// tests; kubext's flags change them for tests).
#[derive(Debug, Clone)]
pub struct Timings {
    /// `leaseDurationSeconds` (upstream: 3600).
    pub duration: Duration,
    /// How often the Lease is renewed (upstream: 10 s).
    pub renew_interval: Duration,
    /// How often expired Leases are looked for (upstream: 3600 s).
    pub gc_period: Duration,
}

impl Default for Timings {
    fn default() -> Self {
        Timings {
            duration: Duration::from_secs(3600),
            renew_interval: Duration::from_secs(10),
            gc_period: Duration::from_secs(3600),
        }
    }
}

/// `apiserver-` and the lower-case, unpadded base32 of the first 16 bytes of
/// the SHA-256 of the length-prefixed host name, component and (kubext's
/// addition) advertised address.
pub fn lease_name(hostname: &str, advertised: SocketAddr) -> String {
    let mut data = Vec::new();
    for part in [hostname, COMPONENT, &advertised.to_string()] {
        let len = u16::try_from(part.len()).unwrap_or(u16::MAX);
        data.extend_from_slice(&len.to_be_bytes());
        data.extend_from_slice(&part.as_bytes()[..usize::from(len)]);
    }
    let hash = ring::digest::digest(&ring::digest::SHA256, &data);
    format!("apiserver-{}", base32_lower(&hash.as_ref()[..16]))
}

/// RFC 4648 base32, lower case, without padding.
fn base32_lower(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for &byte in bytes {
        buffer = (buffer << 8) | u32::from(byte);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(char::from(ALPHABET[((buffer >> bits) & 31) as usize]));
        }
    }
    if bits > 0 {
        out.push(char::from(ALPHABET[((buffer << (5 - bits)) & 31) as usize]));
    }
    out
}

/// This replica's identity Lease.
pub struct IdentityLease<R: Resources> {
    pub resources: Arc<R>,
    pub name: String,
    /// `<name>_<uuid>`: this run of the replica.
    pub holder: String,
    pub hostname: String,
    pub advertised: SocketAddr,
    pub timings: Timings,
    /// Set by [`IdentityLease::stop`]: no renewal after it.
    stopped: AtomicBool,
    /// A renewal and the final delete never interleave.
    renewing: tokio::sync::Mutex<()>,
}

impl<R: Resources> IdentityLease<R> {
    pub fn new(resources: Arc<R>, advertised: SocketAddr, timings: Timings) -> Self {
        let hostname = hostname();
        let name = lease_name(&hostname, advertised);
        IdentityLease {
            resources,
            holder: format!("{name}_{}", uuid::Uuid::new_v4()),
            name,
            hostname,
            advertised,
            timings,
            stopped: AtomicBool::new(false),
            renewing: tokio::sync::Mutex::new(()),
        }
    }

    /// Delete a previous run's Lease, then create and renew this one forever.
    pub async fn run(self: Arc<Self>) {
        tracing::info!(lease = %self.name, "deleting old identity lease on startup");
        self.remove().await;
        let mut latest: Option<Value> = None;
        loop {
            {
                let _one = self.renewing.lock().await;
                if self.stopped.load(Ordering::Acquire) {
                    return;
                }
                match self.renew(latest.take()).await {
                    Ok(lease) => latest = Some(lease),
                    Err(e) => {
                        tracing::warn!(lease = %self.name, error = %e, "cannot renew the identity lease")
                    }
                }
            }
            tokio::time::sleep(jittered(self.timings.renew_interval)).await;
        }
    }

    /// Stop renewing and delete the Lease (at graceful shutdown).
    pub async fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
        let _one = self.renewing.lock().await;
        self.remove().await;
    }

    /// Delete the Lease.
    async fn remove(&self) {
        let Some(leases) = self.resources.store("coordination.k8s.io", "leases") else {
            return;
        };
        let ctx = system_context(NAMESPACE, MANAGER);
        match leases
            .delete(&ctx, &self.name, &DeleteOptions::default())
            .await
        {
            Ok(_) => {}
            Err(e) if e.code() == 404 => {}
            Err(e) => {
                tracing::warn!(lease = %self.name, error = %e, "cannot delete the identity lease")
            }
        }
    }

    /// Renew `latest` (the Lease as last written), or the stored one, or
    /// create it; the Lease as stored now.
    async fn renew(&self, latest: Option<Value>) -> Result<Value, apimachinery::StatusError> {
        let leases = self
            .resources
            .store("coordination.k8s.io", "leases")
            .ok_or_else(|| apimachinery::StatusError::internal("leases are not served"))?;
        let ctx = system_context(NAMESPACE, MANAGER);
        let current = match latest {
            Some(lease) => lease,
            None => match leases.get(&ctx, &self.name).await {
                Ok(lease) => lease.to_value(),
                Err(e) if e.code() == 404 => {
                    let created = leases.create(&ctx, self.fresh()).await?;
                    return Ok(created.to_value());
                }
                Err(e) => return Err(e),
            },
        };
        let mut next = current;
        self.stamp(&mut next);
        match leases.update(&ctx, &self.name, next).await {
            Ok(updated) => Ok(updated.to_value()),
            // Deleted or written by someone else (a GC that judged it
            // expired): start again from what is stored.
            Err(e) if e.code() == 409 || e.code() == 404 => Box::pin(self.renew(None)).await,
            Err(e) => Err(e),
        }
    }

    fn fresh(&self) -> Value {
        let mut lease = json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": NAMESPACE},
            "spec": {"holderIdentity": self.holder},
        });
        self.stamp(&mut lease);
        lease
    }

    /// What every renewal writes: duration, renew time, labels, annotation.
    fn stamp(&self, lease: &mut Value) {
        lease["spec"]["leaseDurationSeconds"] = json!(self.timings.duration.as_secs());
        lease["spec"]["renewTime"] = json!(micro_time(jiff::Timestamp::now()));
        let metadata = meta::metadata_mut(lease);
        let labels = metadata.entry("labels").or_insert(Value::Null);
        labels[IDENTITY_LABEL] = json!(COMPONENT);
        labels[HOSTNAME_LABEL] = json!(self.hostname);
        metadata.entry("annotations").or_insert(Value::Null)[PEER_ADDRESS_ANNOTATION] =
            json!(self.advertised.to_string());
    }
}

/// Delete identity Leases that expired, now and every `period`, forever
/// (upstream's apiserver lease garbage collector; every replica runs it).
pub async fn collect_garbage<R: Resources>(resources: Arc<R>, period: Duration) {
    loop {
        if let Err(e) = collect_once(resources.as_ref()).await {
            tracing::warn!(error = %e, "identity lease garbage collection failed");
        }
        tokio::time::sleep(period).await;
    }
}

async fn collect_once<R: Resources>(resources: &R) -> Result<(), apimachinery::StatusError> {
    let Some(leases) = resources.store("coordination.k8s.io", "leases") else {
        return Ok(());
    };
    let ctx = system_context(NAMESPACE, MANAGER);
    let listed = leases.list(&ctx, registry::ListOptions::default()).await?;
    let now = jiff::Timestamp::now();
    for lease in listed.items {
        let lease = lease.to_value();
        if meta::labels(&lease)
            .and_then(|l| l.get(IDENTITY_LABEL))
            .and_then(Value::as_str)
            != Some(COMPONENT)
            || !expired(&lease, now)
        {
            continue;
        }
        let name = meta::name(&lease);
        // Only the version judged expired: a renewal since then keeps it.
        let opts = DeleteOptions {
            precondition_resource_version: meta::str_field(&lease, "resourceVersion")
                .map(String::from),
            ..Default::default()
        };
        match leases.delete(&ctx, name, &opts).await {
            Ok(_) => tracing::info!(lease = name, "deleted an expired identity lease"),
            Err(e) if e.code() == 404 || e.code() == 409 => {}
            Err(e) => {
                tracing::warn!(lease = name, error = %e, "cannot delete an expired identity lease")
            }
        }
    }
    Ok(())
}

/// Upstream's `isLeaseExpired`: no renew time or duration, or their sum has
/// passed.
fn expired(lease: &Value, now: jiff::Timestamp) -> bool {
    let renewed = lease
        .pointer("/spec/renewTime")
        .and_then(Value::as_str)
        .and_then(|t| t.parse::<jiff::Timestamp>().ok());
    let duration = lease
        .pointer("/spec/leaseDurationSeconds")
        .and_then(Value::as_i64);
    match (renewed, duration) {
        (Some(renewed), Some(seconds)) => renewed
            .checked_add(jiff::SignedDuration::from_secs(seconds))
            .is_ok_and(|until| until < now),
        _ => true,
    }
}

/// `metav1.MicroTime`: RFC 3339 with microseconds.
fn micro_time(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// `interval` plus up to 4% (upstream's jitter), so replicas do not renew in step.
fn jittered(interval: Duration) -> Duration {
    let fraction = f64::from(uuid::Uuid::new_v4().as_u128() as u32) / f64::from(u32::MAX);
    interval + interval.mul_f64(0.04 * fraction)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base32_is_rfc4648_lower_case_without_padding() {
        // RFC 4648's test vectors.
        assert_eq!(base32_lower(b""), "");
        assert_eq!(base32_lower(b"f"), "my");
        assert_eq!(base32_lower(b"foobar"), "mzxw6ytboi");
    }

    #[test]
    fn names_keep_upstreams_shape_and_differ_per_address() {
        let a = lease_name("vm", "127.0.0.1:6443".parse().unwrap());
        let b = lease_name("vm", "127.0.0.2:6443".parse().unwrap());
        assert!(
            a.starts_with("apiserver-") && a.len() == "apiserver-".len() + 26,
            "{a}"
        );
        assert!(
            a[10..]
                .bytes()
                .all(|c| c.is_ascii_lowercase() || (b'2'..=b'7').contains(&c))
        );
        assert_ne!(a, b);
        assert_eq!(a, lease_name("vm", "127.0.0.1:6443".parse().unwrap()));
    }

    #[test]
    fn expiry_is_renew_time_plus_duration() {
        let now: jiff::Timestamp = "2026-01-01T12:00:00Z".parse().unwrap();
        let lease = |renewed: &str, seconds: i64| json!({"spec": {"renewTime": renewed, "leaseDurationSeconds": seconds}});
        assert!(!expired(&lease("2026-01-01T11:30:00.000000Z", 3600), now));
        assert!(expired(&lease("2026-01-01T10:59:59.000000Z", 3600), now));
        assert!(expired(&json!({"spec": {}}), now));
    }
}
