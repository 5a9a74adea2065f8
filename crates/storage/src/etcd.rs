//! etcd backend: the `Backend` trait on an etcd v3 cluster through `etcd-client`.
//!
//! Keys are passed to etcd unchanged (they already carry the `/registry` prefix);
//! `prefix` only scopes the watch stream and the compaction probe. Writes are
//! transactions that compare revisions, so every trait error (`AlreadyExists`,
//! `NotFound`, `Conflict`) is decided by etcd atomically. Reads are linearizable.
//! Transport and server failures become `Error::Unavailable`; a broken watch stream
//! ends with one `Err(Error::Unavailable)` item, and the caller (the watch cache)
//! opens a new one from its last revision. Every request carries etcd's
//! require-leader flag (Go's `WithRequireLeader`), so a member that lost its leader
//! (partitioned, or quorum gone) cancels watches and fails requests at once instead
//! of serving a stalled stream.
//!
//! A member that stops answering without closing anything (frozen) is found by
//! probes and taken out of rotation (`members`); requests waiting on it are sent to
//! another member (`requests`), and the watch on it ends within ~0.6 s: it asks
//! for progress when the stream is quiet and expects an answer. A write sent again
//! after an attempt that got no answer recognises its own earlier success (the
//! stored value is ours) or fails with `Error::Timeout`: applied or not, unknown.

mod members;
mod requests;

use async_trait::async_trait;
use bytes::Bytes;
use etcd_client::{
    Certificate, CompactionOptions, Compare, CompareOp, ConnectOptions, DeleteOptions, EventType,
    GetOptions, Identity, TlsOptions, Txn, TxnOp, TxnOpResponse, WatchOptions, WatchRequestSender,
    WatchResponse, WatchResponseStream,
};
use futures::stream::BoxStream;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;
use tokio::time::Instant;

use crate::backend::{Backend, Error, Event, KeyValue, Range, Result};
use members::{Member, Members, NoAnswer};
use requests::{Answer, Failure, Headed, Kind};

/// Default per-request deadline; see [`EtcdBackend::with_request_timeout`].
const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long to wait for etcd to report its compaction revision.
const COMPACTION_PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// HTTP/2 keep-alive: etcd sends GOAWAY to clients that ping more often than its
/// `--grpc-keepalive-min-time` (5 s), so this only finds dead connections; frozen
/// members are found by probes and progress requests.
const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(10);
const KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(5);
/// A watch stream quiet this long asks its member for progress, and takes the
/// member for frozen when nothing arrives within a probe's timeout after.
const WATCH_QUIET: Duration = Duration::from_millis(200);
const PROGRESS_TIMEOUT: Duration = members::PROBE_TIMEOUT;

/// TLS for `https://` endpoints (kube-apiserver's `--etcd-cafile`,
/// `--etcd-certfile`, `--etcd-keyfile`), as PEM. `http://` endpoints ignore it.
#[derive(Debug, Clone, Default)]
pub struct Tls {
    /// CA bundle the members' certificates must chain to; the system's roots
    /// without it (as kube-apiserver).
    pub ca: Option<Vec<u8>>,
    /// Client certificate and its key, for members that require client certificates.
    pub identity: Option<(Vec<u8>, Vec<u8>)>,
}

impl Tls {
    fn options(&self) -> TlsOptions {
        let options = match &self.ca {
            Some(ca) => TlsOptions::new().ca_certificate(Certificate::from_pem(ca)),
            None => TlsOptions::new().with_native_roots(),
        };
        match &self.identity {
            Some((cert, key)) => options.identity(Identity::from_pem(cert, key)),
            None => options,
        }
    }
}

/// A [`Backend`] on etcd v3. Cheap to share behind an `Arc`.
pub struct EtcdBackend {
    members: Arc<Members>,
    /// Scope of `watch`.
    prefix: String,
    /// The endpoints as given, for error messages.
    endpoints: String,
    request_timeout: Duration,
    /// The highest compaction revision this process has seen (by compacting or
    /// from etcd's answers); lets `watch` fail early like the other backends.
    compacted: Arc<AtomicI64>,
    closed: Arc<AtomicBool>,
}

/// A write's answer, with what recognising it as our own needs.
struct Written {
    resp: etcd_client::TxnResponse,
    /// An earlier attempt may have applied it (see [`Answer::uncertain`]).
    uncertain: bool,
    /// A revision etcd had reached before the write was first sent.
    before: i64,
}

impl EtcdBackend {
    /// Connect to etcd at `endpoints` (e.g. `http://127.0.0.1:2379`) and check that it
    /// answers a linearizable read within `timeout`; `Error::Unavailable` otherwise.
    /// `prefix` (e.g. `/registry`) scopes watches; keys are always full keys.
    pub async fn connect(endpoints: &[String], prefix: &str, timeout: Duration) -> Result<Self> {
        Self::connect_tls(endpoints, prefix, timeout, &Tls::default()).await
    }

    /// [`EtcdBackend::connect`], with `tls` for every `https://` endpoint's clients.
    pub async fn connect_tls(
        endpoints: &[String],
        prefix: &str,
        timeout: Duration,
        tls: &Tls,
    ) -> Result<Self> {
        let shown = endpoints.join(",");
        let unreachable =
            |why: String| Error::Unavailable(format!("etcd unreachable at {shown}: {why}"));
        if endpoints.is_empty() {
            return Err(unreachable("no endpoints configured".into()));
        }
        // One deadline for building the clients and the first answer.
        let deadline = Instant::now() + timeout;
        let options = ConnectOptions::new()
            .with_connect_timeout(timeout)
            .with_keep_alive(KEEP_ALIVE_INTERVAL, KEEP_ALIVE_TIMEOUT)
            .with_keep_alive_while_idle(false)
            .with_require_leader(true);
        let probe_key = probe_key(prefix).as_bytes();
        let closed = Arc::new(AtomicBool::new(false));
        let tls = tls.options();
        let members = Members::connect(endpoints, &options, &tls, probe_key, &closed);
        let members = match tokio::time::timeout_at(deadline, members).await {
            Ok(Ok(members)) => Arc::new(members),
            Ok(Err(e)) => return Err(unreachable(e.to_string())),
            Err(_) => return Err(unreachable(format!("no connection within {timeout:?}"))),
        };
        members
            .first_answer(deadline)
            .await
            .map_err(|no| match no {
                NoAnswer::Timeout(why) => {
                    unreachable(format!("no answer within {timeout:?}: {why}"))
                }
                NoAnswer::Refused(why) => unreachable(why),
            })?;
        Ok(EtcdBackend {
            members,
            prefix: prefix.to_owned(),
            endpoints: shown.clone(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            compacted: Arc::new(AtomicI64::new(0)),
            closed,
        })
    }

    /// Deadline for each request after connecting (default 30s). Watch streams
    /// have no deadline, only their creation does.
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The prefix watches are scoped to.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    fn probe_key(&self) -> &[u8] {
        probe_key(&self.prefix).as_bytes()
    }

    /// Send one request (`op` on a member) until a member answers (see `requests`).
    async fn call<T, F, Fut>(&self, kind: Kind, op: F) -> std::result::Result<Answer<T>, Failure>
    where
        T: Headed,
        F: Fn(&Arc<Member>) -> Fut,
        Fut: Future<Output = std::result::Result<T, etcd_client::Error>>,
    {
        if self.closed.load(Ordering::Acquire) {
            return Err(Failure::Unanswered("backend closed".into()));
        }
        self.members.run(kind, self.request_timeout, op).await
    }

    /// A read, with every failure mapped to `Unavailable`.
    async fn read<T, F, Fut>(&self, name: &str, op: F) -> Result<T>
    where
        T: Headed,
        F: Fn(&Arc<Member>) -> Fut,
        Fut: Future<Output = std::result::Result<T, etcd_client::Error>>,
    {
        match self.call(Kind::Read, op).await {
            Ok(answer) => Ok(answer.value),
            Err(failure) => Err(self.unavailable(name, failure)),
        }
    }

    /// A transaction that writes, with what recognising it as ours needs.
    async fn write(&self, name: &str, txn: Txn) -> Result<Written> {
        let before = self.members.seen_revision();
        let send = |member: &Arc<Member>| {
            let (mut kv, txn) = (member.kv.clone(), txn.clone());
            async move { kv.txn(txn).await }
        };
        match self.call(Kind::Write, send).await {
            Ok(answer) => Ok(Written {
                resp: answer.value,
                uncertain: answer.uncertain,
                before,
            }),
            Err(failure) => Err(self.unavailable(name, failure)),
        }
    }

    fn unavailable(&self, op: &str, failure: Failure) -> Error {
        let at = &self.endpoints;
        match failure {
            Failure::Etcd(e) => Error::Unavailable(format!("etcd {op} at {at}: {e}")),
            Failure::Unanswered(why) => Error::Unavailable(format!("etcd {op} at {at}: {why}")),
            Failure::Uncertain(why) => Error::Timeout(format!(
                "etcd {op} at {at}: no answer, it may have been applied: {why}"
            )),
        }
    }

    fn note_compacted(&self, revision: i64) {
        self.compacted.fetch_max(revision, Ordering::AcqRel);
    }

    /// etcd's current compaction revision. Its errors don't carry it, but a watch
    /// that starts at revision 1 is cancelled with it (only meaningful once etcd
    /// has compacted past 1). Falls back to what this process has seen.
    async fn compaction_revision(&self, requested: i64) -> i64 {
        let known = self.compacted.load(Ordering::Acquire);
        let probe = async {
            let member = self.members.pick(&mut members::Tried::default());
            let mut stream = member
                .watch
                .clone()
                .watch(
                    self.probe_key(),
                    Some(WatchOptions::new().with_start_revision(1)),
                )
                .await
                .ok()?;
            while let Ok(Some(resp)) = stream.message().await {
                if resp.compact_revision() != 0 {
                    return Some(resp.compact_revision());
                }
                if resp.canceled() {
                    return None;
                }
            }
            None
        };
        match tokio::time::timeout(COMPACTION_PROBE_TIMEOUT, probe).await {
            Ok(Some(revision)) => {
                self.note_compacted(revision);
                revision
            }
            _ if known > requested => known,
            _ => requested + 1,
        }
    }

    /// Map a failed range read, turning etcd's compaction and future-revision
    /// answers into their trait errors.
    async fn range_failure(&self, failure: Failure, requested: i64) -> Error {
        match &failure {
            Failure::Etcd(e) if is_compacted(e) => Error::Compacted {
                requested,
                compacted: self.compaction_revision(requested).await,
            },
            Failure::Etcd(e) if is_future(e) => match self.current_revision().await {
                Ok(current) => Error::FutureRevision { requested, current },
                Err(e) => e,
            },
            _ => self.unavailable("range", failure),
        }
    }
}

fn is_compacted(e: &etcd_client::Error) -> bool {
    e.to_string()
        .contains("required revision has been compacted")
}

fn is_future(e: &etcd_client::Error) -> bool {
    e.to_string()
        .contains("required revision is a future revision")
}

/// A single key for cheap reads that only want a response header (etcd rejects
/// an empty key).
fn probe_key(prefix: &str) -> &str {
    if prefix.is_empty() { "/" } else { prefix }
}

fn header_revision(header: Option<&etcd_client::ResponseHeader>) -> Result<i64> {
    header
        .map(|h| h.revision())
        .ok_or_else(|| Error::Corrupt("etcd response without a header".into()))
}

/// Convert an owned etcd key-value without copying the value.
fn owned_kv(kv: etcd_client::KeyValue) -> Result<KeyValue> {
    let (create_revision, mod_revision) = (kv.create_revision(), kv.mod_revision());
    let (key, value) = kv.into_key_value();
    let key = String::from_utf8(key)
        .map_err(|e| Error::Corrupt(format!("non-UTF-8 key in etcd: {e}")))?;
    Ok(KeyValue {
        key: key.into(),
        value: Bytes::from(value),
        create_revision,
        mod_revision,
    })
}

fn borrowed_kv(kv: &etcd_client::KeyValue) -> Result<KeyValue> {
    let key = kv
        .key_str()
        .map_err(|e| Error::Corrupt(format!("non-UTF-8 key in etcd: {e}")))?;
    Ok(KeyValue {
        key: key.into(),
        value: Bytes::copy_from_slice(kv.value()),
        create_revision: kv.create_revision(),
        mod_revision: kv.mod_revision(),
    })
}

/// The value a failed transaction read in its `else` branch, if any.
fn txn_current(resp: &etcd_client::TxnResponse) -> Result<Option<KeyValue>> {
    for op in resp.op_responses() {
        if let TxnOpResponse::Get(mut get) = op {
            return get.take_kvs().into_iter().next().map(owned_kv).transpose();
        }
    }
    Ok(None)
}

fn map_event(event: &etcd_client::Event) -> Result<Event> {
    let kv = event
        .kv()
        .ok_or_else(|| Error::Corrupt("etcd watch event without a key".into()))?;
    let kv = borrowed_kv(kv)?;
    let prev = event.prev_kv().map(borrowed_kv).transpose()?;
    Ok(match event.event_type() {
        EventType::Put => Event::Put { kv, prev },
        EventType::Delete => {
            let revision = kv.mod_revision;
            let prev = prev.unwrap_or_else(|| {
                // etcd omits prev_kv when that revision is already compacted.
                tracing::warn!(key = %kv.key, revision, "etcd delete event without its previous value");
                KeyValue {
                    key: kv.key.clone(),
                    value: Bytes::new(),
                    create_revision: 0,
                    mod_revision: 0,
                }
            });
            Event::Delete { revision, prev }
        }
    })
}

/// The states of one backend watch stream.
enum WatchState {
    /// Not yet opened (opened on first poll: `Backend::watch` is not async).
    Start,
    Running(Box<Following>),
    Done,
}

/// What a watch stream needs besides its state.
struct WatchCtx {
    members: Arc<Members>,
    options: WatchOptions,
    prefix: String,
    endpoints: String,
    /// Deadline for opening the stream.
    timeout: Duration,
    /// The first revision asked for.
    start: i64,
    compacted: Arc<AtomicI64>,
}

impl WatchCtx {
    fn unavailable(&self, why: impl std::fmt::Display) -> Option<(Result<Vec<Event>>, WatchState)> {
        let msg = format!("etcd watch at {}: {why}", self.endpoints);
        Some((Err(Error::Unavailable(msg)), WatchState::Done))
    }

    /// Open the stream on a member that answers.
    async fn open(&self) -> std::result::Result<Following, String> {
        let open = |member: &Arc<Member>| {
            let (mut client, options) = (member.watch.clone(), self.options.clone());
            let prefix = self.prefix.clone();
            async move { client.watch(prefix, Some(options)).await }
        };
        match self.members.run(Kind::Read, self.timeout, open).await {
            Ok(answer) => Ok(Following::new(answer.member, answer.value)),
            Err(Failure::Etcd(e)) => Err(e.to_string()),
            Err(Failure::Unanswered(why) | Failure::Uncertain(why)) => Err(why),
        }
    }
}

/// An open watch stream on one member, and what tells that the member froze: a
/// stream that is quiet for [`WATCH_QUIET`] asks for progress (etcd answers at
/// once with its revision) and gives up when nothing arrives within
/// [`PROGRESS_TIMEOUT`]; it also ends when a request finds its member frozen.
struct Following {
    member: Arc<Member>,
    requests: WatchRequestSender,
    responses: WatchResponseStream,
    leaving: tokio::sync::watch::Receiver<u64>,
    last_message: Instant,
    /// When progress was asked for, if it has not come yet.
    asked: Option<Instant>,
}

impl Following {
    fn new(member: Arc<Member>, stream: etcd_client::WatchStream) -> Following {
        let (requests, responses) = stream.split();
        Following {
            leaving: member.on_leaving(),
            member,
            requests,
            responses,
            last_message: Instant::now(),
            asked: None,
        }
    }

    /// The next response; `Err` when the stream broke or its member stopped answering.
    async fn message(&mut self) -> std::result::Result<WatchResponse, String> {
        loop {
            let wake = match self.asked {
                None => self.last_message + WATCH_QUIET,
                Some(at) => at + PROGRESS_TIMEOUT,
            };
            tokio::select! {
                biased;
                message = self.responses.message() => {
                    (self.last_message, self.asked) = (Instant::now(), None);
                    return match message {
                        Ok(Some(resp)) => Ok(resp),
                        Ok(None) => Err("stream closed by the server".into()),
                        Err(e) => Err(e.to_string()),
                    };
                }
                _ = self.leaving.changed() => {
                    return Err(format!("{} stopped answering", self.member.endpoint));
                }
                () = tokio::time::sleep_until(wake) => {
                    if self.asked.is_some() {
                        return Err(self.frozen());
                    }
                    // A send fails only when the stream is gone; the next read says why.
                    let _ = self.requests.request_progress().await;
                    self.asked = Some(Instant::now());
                }
            }
        }
    }

    /// The member did not answer a progress request: out of rotation.
    fn frozen(&self) -> String {
        let why = format!(
            "{} did not answer a watch progress request within {PROGRESS_TIMEOUT:?}",
            self.member.endpoint
        );
        self.member.mark_down(&why);
        why
    }
}

impl WatchState {
    /// Advance to the next item of the stream.
    async fn next(self, ctx: &WatchCtx) -> Option<(Result<Vec<Event>>, WatchState)> {
        let mut stream = match self {
            WatchState::Done => return None,
            WatchState::Running(stream) => stream,
            WatchState::Start => match ctx.open().await {
                Ok(stream) => Box::new(stream),
                Err(why) => return ctx.unavailable(why),
            },
        };
        loop {
            let resp = match stream.message().await {
                Ok(resp) => resp,
                Err(why) => return ctx.unavailable(why),
            };
            if resp.compact_revision() != 0 {
                let compacted = resp.compact_revision();
                ctx.compacted.fetch_max(compacted, Ordering::AcqRel);
                let err = Error::Compacted {
                    requested: ctx.start,
                    compacted,
                };
                return Some((Err(err), WatchState::Done));
            }
            if resp.canceled() {
                return ctx.unavailable(format!("cancelled by etcd: {}", resp.cancel_reason()));
            }
            if resp.events().is_empty() {
                // The `created` answer or a progress notification.
                continue;
            }
            let batch: Result<Vec<Event>> = resp.events().iter().map(map_event).collect();
            return match batch {
                Ok(batch) => Some((Ok(batch), WatchState::Running(stream))),
                Err(e) => Some((Err(e), WatchState::Done)),
            };
        }
    }
}

/// A write sent again found that an attempt without answer had applied it.
fn recognised(op: &str, key: &str, revision: i64) -> i64 {
    tracing::info!(
        op,
        key,
        revision,
        "etcd write sent again: an earlier attempt applied it"
    );
    revision
}

/// A write that an attempt without answer may have applied.
fn unknown_outcome(op: &str, key: &str) -> Error {
    Error::Timeout(format!(
        "etcd {op} of {key}: an attempt got no answer and may have been applied"
    ))
}

/// What a create that found `current` in its place answers. After an attempt
/// without answer (`uncertain`) the key may be that attempt's doing; `before` is a
/// revision etcd had reached before the create was first sent.
fn failed_create(
    key: &str,
    value: &[u8],
    current: Option<KeyValue>,
    uncertain: bool,
    before: i64,
) -> Result<i64> {
    match current {
        // Our value, never updated since: that attempt created it.
        Some(current)
            if uncertain
                && current.value == value
                && current.create_revision == current.mod_revision =>
        {
            Ok(recognised("create", key, current.mod_revision))
        }
        // Created after the write was first sent: perhaps by that attempt.
        Some(current) if uncertain && current.create_revision > before => {
            Err(unknown_outcome("create", key))
        }
        _ => Err(Error::AlreadyExists(key.into())),
    }
}

/// What an update that did not find `expected` answers (`current` is the key now).
fn failed_update(
    key: &str,
    value: &[u8],
    expected: i64,
    current: Option<KeyValue>,
    uncertain: bool,
) -> Result<i64> {
    match current {
        // Our value, written after `expected`: an attempt without answer wrote it.
        Some(current) if uncertain && current.value == value && current.mod_revision > expected => {
            Ok(recognised("update", key, current.mod_revision))
        }
        // Changed or deleted since: perhaps after that attempt was applied.
        _ if uncertain => Err(unknown_outcome("update", key)),
        None => Err(Error::NotFound(key.into())),
        Some(current) => Err(Error::Conflict {
            key: key.into(),
            current: Some(Box::new(current)),
        }),
    }
}

/// Why a delete that did not find `expected` failed (`current` is the key now).
fn failed_delete(
    key: &str,
    expected: Option<i64>,
    current: Option<KeyValue>,
    uncertain: bool,
) -> Error {
    match current {
        // Gone, or created again since `expected`: perhaps deleted by an attempt
        // without answer.
        None if uncertain => unknown_outcome("delete", key),
        Some(current) if uncertain && expected.is_none_or(|e| current.create_revision > e) => {
            unknown_outcome("delete", key)
        }
        None => Error::NotFound(key.into()),
        Some(current) => Error::Conflict {
            key: key.into(),
            current: Some(Box::new(current)),
        },
    }
}

#[async_trait]
impl Backend for EtcdBackend {
    async fn current_revision(&self) -> Result<i64> {
        let options = GetOptions::new().with_count_only();
        let resp = self
            .read("read", |member| {
                let (mut kv, options) = (member.kv.clone(), options.clone());
                async move { kv.get(self.probe_key(), Some(options)).await }
            })
            .await?;
        header_revision(resp.header())
    }

    async fn get(&self, key: &str) -> Result<Option<KeyValue>> {
        let mut resp = self
            .read("get", |member| {
                let mut kv = member.kv.clone();
                async move { kv.get(key, None).await }
            })
            .await?;
        resp.take_kvs().into_iter().next().map(owned_kv).transpose()
    }

    async fn range(&self, start: &str, end: &str, revision: i64, limit: i64) -> Result<Range> {
        if end <= start {
            // An empty interval (etcd would read an empty end as "just `start`").
            let current = self.current_revision().await?;
            if revision > current {
                return Err(Error::FutureRevision {
                    requested: revision,
                    current,
                });
            }
            return Ok(Range {
                revision: if revision == 0 { current } else { revision },
                ..Default::default()
            });
        }
        let mut options = GetOptions::new().with_range(end).with_limit(limit.max(0));
        if revision != 0 {
            options = options.with_revision(revision);
        }
        let get = |member: &Arc<Member>| {
            let (mut kv, options) = (member.kv.clone(), options.clone());
            async move { kv.get(start, Some(options)).await }
        };
        let mut resp = match self.call(Kind::Read, get).await {
            Ok(answer) => answer.value,
            Err(failure) => return Err(self.range_failure(failure, revision).await),
        };
        let served = header_revision(resp.header())?;
        let kvs = resp
            .take_kvs()
            .into_iter()
            .map(owned_kv)
            .collect::<Result<Vec<_>>>()?;
        Ok(Range {
            kvs,
            more: resp.more(),
            count: resp.count(),
            revision: if revision == 0 { served } else { revision },
        })
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<i64> {
        // The `else` read lets a create sent again recognise its earlier success.
        let txn = Txn::new()
            .when([Compare::create_revision(key, CompareOp::Equal, 0)])
            .and_then([TxnOp::put(key, value.to_vec(), None)])
            .or_else([TxnOp::get(key, None)]);
        let written = self.write("create", txn).await?;
        if written.resp.succeeded() {
            return header_revision(written.resp.header());
        }
        let current = txn_current(&written.resp)?;
        failed_create(key, &value, current, written.uncertain, written.before)
    }

    async fn update(&self, key: &str, value: Bytes, expected: i64) -> Result<i64> {
        // `create_revision > 0` keeps `expected == 0` from creating a missing key.
        let txn = Txn::new()
            .when([
                Compare::create_revision(key, CompareOp::Greater, 0),
                Compare::mod_revision(key, CompareOp::Equal, expected),
            ])
            .and_then([TxnOp::put(key, value.to_vec(), None)])
            .or_else([TxnOp::get(key, None)]);
        let written = self.write("update", txn).await?;
        if written.resp.succeeded() {
            return header_revision(written.resp.header());
        }
        let current = txn_current(&written.resp)?;
        failed_update(key, &value, expected, current, written.uncertain)
    }

    async fn delete(&self, key: &str, expected: Option<i64>) -> Result<(i64, KeyValue)> {
        let mut when = vec![Compare::create_revision(key, CompareOp::Greater, 0)];
        if let Some(expected) = expected {
            when.push(Compare::mod_revision(key, CompareOp::Equal, expected));
        }
        let txn = Txn::new()
            .when(when)
            .and_then([TxnOp::delete(
                key,
                Some(DeleteOptions::new().with_prev_key()),
            )])
            .or_else([TxnOp::get(key, None)]);
        let written = self.write("delete", txn).await?;
        if !written.resp.succeeded() {
            let current = txn_current(&written.resp)?;
            return Err(failed_delete(key, expected, current, written.uncertain));
        }
        let revision = header_revision(written.resp.header())?;
        let prev = written
            .resp
            .op_responses()
            .into_iter()
            .find_map(|op| match op {
                TxnOpResponse::Delete(mut del) => del.take_prev_kvs().into_iter().next(),
                _ => None,
            });
        match prev {
            Some(prev) => Ok((revision, owned_kv(prev)?)),
            // The compare guaranteed the key existed; etcd always returns it.
            None => Err(Error::Corrupt(format!(
                "etcd deleted {key} without returning it"
            ))),
        }
    }

    fn watch(&self, after: i64) -> Result<BoxStream<'static, Result<Vec<Event>>>> {
        let start = after + 1;
        let compacted = self.compacted.load(Ordering::Acquire);
        if start < compacted {
            return Err(Error::Compacted {
                requested: start,
                compacted,
            });
        }
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Unavailable(format!(
                "etcd watch at {}: backend closed",
                self.endpoints
            )));
        }
        let options = WatchOptions::new()
            .with_prefix()
            .with_start_revision(start)
            .with_prev_key()
            .with_progress_notify();
        let ctx = Arc::new(WatchCtx {
            members: self.members.clone(),
            options,
            prefix: self.prefix.clone(),
            endpoints: self.endpoints.clone(),
            timeout: self.request_timeout,
            start,
            compacted: self.compacted.clone(),
        });
        let stream = futures::stream::unfold(WatchState::Start, move |state| {
            let ctx = ctx.clone();
            async move { state.next(&ctx).await }
        });
        Ok(Box::pin(stream))
    }

    async fn compact(&self, revision: i64) -> Result<()> {
        if revision <= 0 || revision <= self.compacted.load(Ordering::Acquire) {
            return Ok(());
        }
        let options = CompactionOptions::new();
        // Compacting twice is harmless: it is sent again like a read.
        let compact = |member: &Arc<Member>| {
            let (mut kv, options) = (member.kv.clone(), options.clone());
            async move { kv.compact(revision, Some(options)).await }
        };
        match self.call(Kind::Read, compact).await {
            Ok(_) => {
                self.note_compacted(revision);
                Ok(())
            }
            // Already compacted at or past `revision` (by another server): nothing to do.
            Err(Failure::Etcd(e)) if is_compacted(&e) => Ok(()),
            Err(Failure::Etcd(e)) if is_future(&e) => Err(Error::FutureRevision {
                requested: revision,
                current: self.current_revision().await?,
            }),
            Err(failure) => Err(self.unavailable("compact", failure)),
        }
    }

    async fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(value: &str, create_revision: i64, mod_revision: i64) -> Option<KeyValue> {
        Some(KeyValue {
            key: "/k".into(),
            value: Bytes::from(value.to_owned()),
            create_revision,
            mod_revision,
        })
    }

    fn unknown(result: &Error) -> bool {
        matches!(result, Error::Timeout(_))
    }

    #[test]
    fn a_create_sent_again_recognises_its_own_earlier_success() {
        // Answered at once: the key was there.
        assert!(matches!(
            failed_create("/k", b"ours", kv("ours", 7, 7), false, 5),
            Err(Error::AlreadyExists(_))
        ));
        // After an attempt without answer: our value, untouched since, is ours.
        assert_eq!(
            failed_create("/k", b"ours", kv("ours", 7, 7), true, 5),
            Ok(7)
        );
        // Another value, created before we first sent: not ours.
        assert!(matches!(
            failed_create("/k", b"ours", kv("theirs", 4, 4), true, 5),
            Err(Error::AlreadyExists(_))
        ));
        // Created after we first sent, then changed: ours or not, unknown.
        let changed = failed_create("/k", b"ours", kv("theirs", 7, 9), true, 5);
        assert!(unknown(&changed.unwrap_err()));
        let ours_changed = failed_create("/k", b"ours", kv("ours", 7, 9), true, 5);
        assert!(unknown(&ours_changed.unwrap_err()));
    }

    #[test]
    fn an_update_sent_again_recognises_its_own_earlier_success() {
        assert!(matches!(
            failed_update("/k", b"ours", 5, kv("theirs", 2, 6), false),
            Err(Error::Conflict { .. })
        ));
        assert!(matches!(
            failed_update("/k", b"ours", 5, None, false),
            Err(Error::NotFound(_))
        ));
        assert_eq!(
            failed_update("/k", b"ours", 5, kv("ours", 2, 6), true),
            Ok(6)
        );
        for current in [kv("theirs", 2, 6), None, kv("ours", 2, 5)] {
            let result = failed_update("/k", b"ours", 5, current, true);
            assert!(unknown(&result.unwrap_err()));
        }
    }

    #[test]
    fn a_delete_sent_again_reports_an_unknown_outcome_when_the_key_may_be_its_doing() {
        assert!(matches!(
            failed_delete("/k", Some(5), None, false),
            Error::NotFound(_)
        ));
        assert!(unknown(&failed_delete("/k", Some(5), None, true)));
        // Created again after `expected`: our delete may have come first.
        assert!(unknown(&failed_delete(
            "/k",
            Some(5),
            kv("new", 8, 8),
            true
        )));
        // The same object, changed: our delete was not applied.
        assert!(matches!(
            failed_delete("/k", Some(5), kv("changed", 2, 8), true),
            Error::Conflict { .. }
        ));
    }
}
