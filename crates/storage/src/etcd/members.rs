//! The etcd members behind one backend, a client each, and which of them answer.
//!
//! etcd-client's balancer keeps sending requests to a member that stops answering
//! without closing its connections (frozen by SIGSTOP, a stuck disk, a half-open
//! partition: TCP still connects), so each such request waits for its deadline.
//! Here every member has a client of its own and we choose: requests go round-robin
//! to the members in rotation; a slow request has its member probed (a
//! serializable read, answered without raft), and a member that does not answer a
//! probe within [`PROBE_TIMEOUT`], or has no leader, leaves the rotation. A task
//! probes it every [`PROBE_INTERVAL`]; any answer brings it back.

use etcd_client::{
    Client, ConnectOptions, GetOptions, KvClient, ResponseHeader, TlsOptions, WatchClient,
};
use futures::future::{BoxFuture, FutureExt, Shared};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::time::Instant;

/// How long a probe may take: a live member answers a serializable read in
/// milliseconds, even while its raft log is busy.
pub(super) const PROBE_TIMEOUT: Duration = Duration::from_millis(400);
/// How often a member out of rotation is probed.
const PROBE_INTERVAL: Duration = Duration::from_millis(500);
/// A probe this recent speaks for its member (many slow requests share one).
const PROBE_FRESH: Duration = Duration::from_millis(100);
/// The largest response we accept (a full list of a big resource can be large).
const MAX_MESSAGE_SIZE: usize = 1 << 30;

/// What a probe found.
#[derive(Clone, Debug)]
pub(super) enum Probe {
    /// It answered, in this raft term.
    Alive(u64),
    /// No answer in time, no leader, or unreachable.
    Down(String),
    /// The TLS handshake failed (a certificate rejected either way): trying
    /// again will not help.
    Refused(String),
}

type SharedProbe = Shared<BoxFuture<'static, Probe>>;

/// One etcd member and its own clients: requests, the watch and probes each have a
/// connection, so that a large range's answer delays neither watch events nor
/// probes (both are judged by how soon they arrive).
pub(super) struct Member {
    pub(super) endpoint: String,
    pub(super) kv: KvClient,
    pub(super) watch: WatchClient,
    prober: KvClient,
    probe_key: Vec<u8>,
    /// Out of rotation (mirrors `health.down_since`, read without the lock).
    down: AtomicBool,
    /// The raft term of its last answer; a higher one means a new leader.
    term: AtomicU64,
    health: Mutex<Health>,
    /// Counts the times it left the rotation; a watch on it ends when it does.
    left: tokio::sync::watch::Sender<u64>,
    /// The backend's: probing stops once it is closed.
    closed: Arc<AtomicBool>,
}

struct Health {
    /// Out of rotation since then.
    down_since: Option<Instant>,
    /// The last probe, with when it started.
    probe: Option<(Instant, SharedProbe)>,
}

impl Member {
    /// A client for `endpoint` alone (it connects lazily: nothing is sent yet).
    async fn connect(
        endpoint: &str,
        options: ConnectOptions,
        probe_key: &[u8],
        closed: Arc<AtomicBool>,
    ) -> Result<Arc<Member>, etcd_client::Error> {
        let connect = || Client::connect([endpoint], Some(options.clone()));
        let (requests, watch, probes) = (connect().await?, connect().await?, connect().await?);
        Ok(Arc::new(Member {
            endpoint: endpoint.to_owned(),
            kv: requests
                .kv_client()
                .max_decoding_message_size(MAX_MESSAGE_SIZE),
            watch: watch
                .watch_client()
                .max_decoding_message_size(MAX_MESSAGE_SIZE),
            prober: probes.kv_client(),
            probe_key: probe_key.to_vec(),
            down: AtomicBool::new(false),
            term: AtomicU64::new(0),
            health: Mutex::new(Health {
                down_since: None,
                probe: None,
            }),
            left: tokio::sync::watch::channel(0).0,
            closed,
        }))
    }

    pub(super) fn is_up(&self) -> bool {
        !self.down.load(Ordering::Acquire)
    }

    /// The raft term it last answered in (0 before its first answer).
    pub(super) fn term(&self) -> u64 {
        self.term.load(Ordering::Acquire)
    }

    /// It answered: back in rotation, and its term noted.
    pub(super) fn answered(&self, header: Option<&ResponseHeader>) {
        if let Some(header) = header {
            self.term.fetch_max(header.raft_term(), Ordering::AcqRel);
        }
        if self.is_up() {
            return;
        }
        let mut health = self.health.lock();
        self.down.store(false, Ordering::Release);
        if let Some(since) = health.down_since.take() {
            tracing::info!(
                endpoint = %self.endpoint,
                after = ?since.elapsed(),
                "etcd member answers again; back in rotation"
            );
        }
    }

    /// Take it out of rotation (if it is in) and probe it until it answers.
    pub(super) fn mark_down(self: &Arc<Self>, why: &str) {
        {
            let mut health = self.health.lock();
            if health.down_since.is_some() {
                return;
            }
            health.down_since = Some(Instant::now());
            self.down.store(true, Ordering::Release);
        }
        tracing::warn!(endpoint = %self.endpoint, %why, "etcd member out of rotation");
        self.left.send_modify(|n| *n += 1);
        tokio::spawn(probe_until_up(Arc::downgrade(self)));
    }

    /// Notified when it leaves the rotation.
    pub(super) fn on_leaving(&self) -> tokio::sync::watch::Receiver<u64> {
        self.left.subscribe()
    }

    /// Whether it answers now: one probe shared by every caller while it runs (and
    /// for [`PROBE_FRESH`] after). Probes run as tasks, so a caller that stops
    /// waiting leaves no verdict half made.
    pub(super) fn check(self: &Arc<Self>) -> SharedProbe {
        let mut health = self.health.lock();
        if let Some((started, probe)) = &health.probe
            && (probe.peek().is_none() || started.elapsed() < PROBE_FRESH)
        {
            return probe.clone();
        }
        let task = tokio::spawn(self.clone().probe());
        let probe = async move {
            task.await
                .unwrap_or_else(|e| Probe::Down(format!("probe failed: {e}")))
        }
        .boxed()
        .shared();
        health.probe = Some((Instant::now(), probe.clone()));
        probe
    }

    /// A serializable count of one key: needs no quorum, only a live member that
    /// has a leader (require-leader is set on every request).
    async fn probe(self: Arc<Self>) -> Probe {
        let mut kv = self.prober.clone();
        let options = GetOptions::new().with_count_only().with_serializable();
        let read = kv.get(self.probe_key.clone(), Some(options));
        let why = match tokio::time::timeout(PROBE_TIMEOUT, read).await {
            Ok(Ok(resp)) => {
                self.answered(resp.header());
                return Probe::Alive(self.term());
            }
            Ok(Err(e)) => {
                let (why, handshake) = cause(&e);
                if handshake {
                    self.mark_down(&why);
                    return Probe::Refused(why);
                }
                why
            }
            Err(_) => format!("no answer to a probe within {PROBE_TIMEOUT:?}"),
        };
        self.mark_down(&why);
        Probe::Down(why)
    }
}

/// A failed request's innermost cause ("invalid peer certificate: UnknownIssuer",
/// "Connection refused"), not tonic's "transport error" and a debug dump; and
/// whether it is the TLS handshake's (tokio-rustls reports those as `InvalidData`).
fn cause(e: &etcd_client::Error) -> (String, bool) {
    use std::error::Error as _;
    let mut next = match e {
        etcd_client::Error::GRpcStatus(status) => status.source(),
        etcd_client::Error::TransportError(transport) => transport.source(),
        _ => None,
    };
    let mut innermost = None;
    while let Some(cause) = next {
        innermost = Some(cause);
        next = cause.source();
    }
    match innermost {
        Some(cause) => {
            let handshake = cause
                .downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::InvalidData);
            let what = match handshake {
                true => "TLS handshake failed",
                false => "connection failed",
            };
            (format!("{what}: {cause}"), handshake)
        }
        None => (e.to_string(), false),
    }
}

/// Probe a member out of rotation until it answers (it is then back, see
/// [`Member::answered`]), the backend closes, or the member is dropped.
async fn probe_until_up(member: Weak<Member>) {
    loop {
        tokio::time::sleep(PROBE_INTERVAL).await;
        let Some(member) = member.upgrade() else {
            return;
        };
        if member.is_up() || member.closed.load(Ordering::Acquire) {
            return;
        }
        if let Probe::Alive(_) = member.check().await {
            return;
        }
    }
}

/// Why no member answered at first: the last reason.
pub(super) enum NoAnswer {
    Timeout(String),
    Refused(String),
}

/// Every member of the cluster, in the order given.
pub(super) struct Members {
    list: Vec<Arc<Member>>,
    /// Where the next request starts looking (round-robin).
    next: AtomicUsize,
    /// The highest revision any answer carried: a lower bound of etcd's current one.
    seen_revision: AtomicI64,
}

impl Members {
    pub(super) async fn connect(
        endpoints: &[String],
        options: &ConnectOptions,
        tls: &TlsOptions,
        probe_key: &[u8],
        closed: &Arc<AtomicBool>,
    ) -> Result<Members, etcd_client::Error> {
        let mut list = Vec::with_capacity(endpoints.len());
        for endpoint in endpoints {
            // etcd-client refuses TLS options on `http://` endpoints, and would
            // turn one without a scheme into `https://`: only `https://` gets them.
            let options = match endpoint.starts_with("https://") {
                true => options.clone().with_tls(tls.clone()),
                false => options.clone(),
            };
            list.push(Member::connect(endpoint, options, probe_key, closed.clone()).await?);
        }
        Ok(Members {
            list,
            next: AtomicUsize::new(0),
            seen_revision: AtomicI64::new(0),
        })
    }

    /// Wait until some member answers a probe; the last reason none did, at
    /// `deadline` or as soon as every member refused the TLS handshake.
    pub(super) async fn first_answer(&self, deadline: Instant) -> Result<(), NoAnswer> {
        let mut why = String::from("no member probed");
        loop {
            let probes = self.list.iter().map(|m| m.check());
            let round = tokio::time::timeout_at(deadline, futures::future::join_all(probes));
            let Ok(results) = round.await else {
                return Err(NoAnswer::Timeout(why));
            };
            let several = self.list.len() > 1;
            let mut refused = 0;
            for (member, probe) in self.list.iter().zip(results) {
                let reason = match probe {
                    Probe::Alive(_) => return Ok(()),
                    Probe::Down(reason) => reason,
                    Probe::Refused(reason) => {
                        refused += 1;
                        reason
                    }
                };
                why = match several {
                    true => format!("{}: {reason}", member.endpoint),
                    false => reason,
                };
            }
            // Certificates rejected by every member: waiting changes nothing.
            if refused == self.list.len() {
                return Err(NoAnswer::Refused(why));
            }
            if tokio::time::timeout_at(deadline, tokio::time::sleep(PROBE_FRESH))
                .await
                .is_err()
            {
                return Err(NoAnswer::Timeout(why));
            }
        }
    }

    /// The member for a request's next attempt: the next one in rotation it has not
    /// `tried`; else one out of rotation it has not tried (it may be back); else,
    /// all tried, start over.
    pub(super) fn pick(&self, tried: &mut Tried) -> Arc<Member> {
        let n = self.list.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let order = (0..n).map(|i| (start + i) % n);
        let chosen = order
            .clone()
            .find(|&i| !tried.has(i) && self.list[i].is_up())
            .or_else(|| order.clone().find(|&i| !tried.has(i)))
            .unwrap_or_else(|| {
                *tried = Tried::default();
                start % n
            });
        tried.add(chosen);
        self.list[chosen].clone()
    }

    /// Note an answer's revision.
    pub(super) fn saw(&self, header: Option<&ResponseHeader>) {
        if let Some(header) = header {
            self.seen_revision
                .fetch_max(header.revision(), Ordering::AcqRel);
        }
    }

    /// The highest revision seen in any answer so far.
    pub(super) fn seen_revision(&self) -> i64 {
        self.seen_revision.load(Ordering::Acquire)
    }
}

/// The members one request has tried, by index (etcd clusters have a handful of
/// members; past 64, indexes share bits and a member may be tried again early).
#[derive(Default)]
pub(super) struct Tried(u64);

impl Tried {
    fn has(&self, i: usize) -> bool {
        self.0 & (1 << (i % 64)) != 0
    }

    fn add(&mut self, i: usize) {
        self.0 |= 1 << (i % 64);
    }
}
