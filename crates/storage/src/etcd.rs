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

use async_trait::async_trait;
use bytes::Bytes;
use etcd_client::{
    Client, CompactionOptions, Compare, CompareOp, ConnectOptions, DeleteOptions, EventType,
    GetOptions, KvClient, Txn, TxnOp, TxnOpResponse, WatchClient, WatchOptions, WatchStream,
};
use futures::stream::BoxStream;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use crate::backend::{Backend, Error, Event, KeyValue, Range, Result};

/// The largest response we accept (a full list of a big resource can be large).
const MAX_MESSAGE_SIZE: usize = 1 << 30;
/// Default per-request deadline; see [`EtcdBackend::with_request_timeout`].
const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Pause before sending again a request no member processed.
const RESEND_DELAY: Duration = Duration::from_millis(20);
/// How long to wait for etcd to report its compaction revision.
const COMPACTION_PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// A [`Backend`] on etcd v3. Cheap to share behind an `Arc`.
pub struct EtcdBackend {
    kv: KvClient,
    watch: WatchClient,
    /// Scope of `watch`.
    prefix: String,
    /// The endpoints as given, for error messages.
    endpoints: String,
    request_timeout: Duration,
    /// How often a request no member processed is sent (twice per endpoint, plus one).
    attempts: usize,
    /// The highest compaction revision this process has seen (by compacting or
    /// from etcd's answers); lets `watch` fail early like the other backends.
    compacted: Arc<AtomicI64>,
    closed: AtomicBool,
}

/// What an etcd call failed with, before it becomes a trait [`Error`].
enum Failure {
    Etcd(etcd_client::Error),
    Timeout,
}

impl EtcdBackend {
    /// Connect to etcd at `endpoints` (e.g. `http://127.0.0.1:2379`) and check that it
    /// answers a linearizable read within `timeout`; `Error::Unavailable` otherwise.
    /// `prefix` (e.g. `/registry`) scopes watches; keys are always full keys.
    pub async fn connect(endpoints: &[String], prefix: &str, timeout: Duration) -> Result<Self> {
        let shown = endpoints.join(",");
        let unreachable =
            |why: String| Error::Unavailable(format!("etcd unreachable at {shown}: {why}"));
        if endpoints.is_empty() {
            return Err(unreachable("no endpoints configured".into()));
        }
        // One deadline for building the client and the first answer.
        let deadline = tokio::time::Instant::now() + timeout;
        let options = ConnectOptions::new()
            .with_connect_timeout(timeout)
            .with_keep_alive(Duration::from_secs(15), Duration::from_secs(10))
            .with_require_leader(true);
        let client = match tokio::time::timeout_at(
            deadline,
            Client::connect(endpoints, Some(options)),
        )
        .await
        {
            Ok(Ok(client)) => client,
            Ok(Err(e)) => return Err(unreachable(e.to_string())),
            Err(_) => return Err(unreachable(format!("no connection within {timeout:?}"))),
        };
        let backend = EtcdBackend {
            kv: client
                .kv_client()
                .max_decoding_message_size(MAX_MESSAGE_SIZE),
            watch: client
                .watch_client()
                .max_decoding_message_size(MAX_MESSAGE_SIZE),
            prefix: prefix.to_owned(),
            endpoints: shown.clone(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            attempts: 2 * endpoints.len() + 1,
            compacted: Arc::new(AtomicI64::new(0)),
            closed: AtomicBool::new(false),
        };
        let mut kv = backend.kv.clone();
        let probe = kv.get(
            backend.probe_key(),
            Some(GetOptions::new().with_count_only()),
        );
        match tokio::time::timeout_at(deadline, probe).await {
            Ok(Ok(_)) => Ok(backend),
            Ok(Err(e)) => Err(unreachable(e.to_string())),
            Err(_) => Err(unreachable(format!("no answer within {timeout:?}"))),
        }
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

    /// A single key for cheap reads that only want a response header (etcd
    /// rejects an empty key).
    fn probe_key(&self) -> &[u8] {
        if self.prefix.is_empty() {
            b"/"
        } else {
            self.prefix.as_bytes()
        }
    }

    /// Run one KV request (`op` on a clone of the client) under the request deadline.
    /// The client balances over every endpoint and may pick a member that is down
    /// or has no leader; no member processed such a request, so it is sent again (a
    /// few times, then that error is the answer: all of etcd may be down).
    async fn call<T, F, Fut>(&self, op: F) -> std::result::Result<T, Failure>
    where
        F: Fn(KvClient) -> Fut,
        Fut: Future<Output = std::result::Result<T, etcd_client::Error>>,
    {
        if self.closed.load(Ordering::Acquire) {
            return Err(Failure::Etcd(etcd_client::Error::Internal(
                "backend closed".into(),
            )));
        }
        let attempts = async {
            let mut attempt = 1;
            loop {
                match op(self.kv.clone()).await {
                    Err(e) if never_sent(&e) && attempt < self.attempts => {
                        attempt += 1;
                        tokio::time::sleep(RESEND_DELAY).await;
                    }
                    result => return result,
                }
            }
        };
        match tokio::time::timeout(self.request_timeout, attempts).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(Failure::Etcd(e)),
            Err(_) => Err(Failure::Timeout),
        }
    }

    /// Like `call`, with every failure mapped to `Unavailable`.
    async fn request<T, F, Fut>(&self, name: &str, op: F) -> Result<T>
    where
        F: Fn(KvClient) -> Fut,
        Fut: Future<Output = std::result::Result<T, etcd_client::Error>>,
    {
        self.call(op).await.map_err(|f| self.unavailable(name, f))
    }

    fn unavailable(&self, op: &str, failure: Failure) -> Error {
        match failure {
            Failure::Etcd(e) => Error::Unavailable(format!("etcd {op} at {}: {e}", self.endpoints)),
            Failure::Timeout => Error::Unavailable(format!(
                "etcd {op} at {}: no answer within {:?}",
                self.endpoints, self.request_timeout
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
            let mut stream = self
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

/// The request was not processed by any etcd member, so it is safe to send again,
/// even a write: no connection to the member picked, or the member rejected it for
/// having no leader (etcd checks require-leader before handling a request; a
/// partitioned member answers every request so).
fn never_sent(e: &etcd_client::Error) -> bool {
    match e {
        etcd_client::Error::GRpcStatus(status) => {
            status.message().contains("connect error")
                || status.message() == "etcdserver: no leader"
        }
        _ => false,
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

type TxnFuture = std::pin::Pin<
    Box<
        dyn Future<Output = std::result::Result<etcd_client::TxnResponse, etcd_client::Error>>
            + Send,
    >,
>;

/// A request sending `txn` (again, when no member processed it).
fn txn_op(txn: &Txn) -> impl Fn(KvClient) -> TxnFuture + '_ {
    move |mut kv| {
        let txn = txn.clone();
        Box::pin(async move { kv.txn(txn).await })
    }
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
    Running(Box<WatchStream>),
    Done,
}

/// What a watch stream needs besides its state.
struct WatchCtx {
    client: WatchClient,
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
}

impl WatchState {
    /// Advance to the next item of the stream.
    async fn next(self, ctx: &WatchCtx) -> Option<(Result<Vec<Event>>, WatchState)> {
        let mut stream = match self {
            WatchState::Done => return None,
            WatchState::Running(stream) => stream,
            WatchState::Start => {
                let mut client = ctx.client.clone();
                let open = client.watch(ctx.prefix.as_bytes(), Some(ctx.options.clone()));
                match tokio::time::timeout(ctx.timeout, open).await {
                    Ok(Ok(stream)) => Box::new(stream),
                    Ok(Err(e)) => return ctx.unavailable(e),
                    Err(_) => {
                        return ctx.unavailable(format!("not opened within {:?}", ctx.timeout));
                    }
                }
            }
        };
        loop {
            let resp = match stream.message().await {
                Ok(Some(resp)) => resp,
                Ok(None) => return ctx.unavailable("stream closed by the server"),
                Err(e) => return ctx.unavailable(e),
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

#[async_trait]
impl Backend for EtcdBackend {
    async fn current_revision(&self) -> Result<i64> {
        let options = GetOptions::new().with_count_only();
        let resp = self
            .request("read", |mut kv| {
                let options = options.clone();
                async move { kv.get(self.probe_key(), Some(options)).await }
            })
            .await?;
        header_revision(resp.header())
    }

    async fn get(&self, key: &str) -> Result<Option<KeyValue>> {
        let mut resp = self
            .request("get", |mut kv| async move { kv.get(key, None).await })
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
        let get = |mut kv: KvClient| {
            let options = options.clone();
            async move { kv.get(start, Some(options)).await }
        };
        let mut resp = match self.call(get).await {
            Ok(resp) => resp,
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
        let txn = Txn::new()
            .when([Compare::create_revision(key, CompareOp::Equal, 0)])
            .and_then([TxnOp::put(key, value.to_vec(), None)]);
        let resp = self.request("create", txn_op(&txn)).await?;
        if !resp.succeeded() {
            return Err(Error::AlreadyExists(key.into()));
        }
        header_revision(resp.header())
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
        let resp = self.request("update", txn_op(&txn)).await?;
        if resp.succeeded() {
            return header_revision(resp.header());
        }
        match txn_current(&resp)? {
            None => Err(Error::NotFound(key.into())),
            Some(current) => Err(Error::Conflict {
                key: key.into(),
                current: Some(Box::new(current)),
            }),
        }
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
        let resp = self.request("delete", txn_op(&txn)).await?;
        if !resp.succeeded() {
            return match txn_current(&resp)? {
                None => Err(Error::NotFound(key.into())),
                Some(current) => Err(Error::Conflict {
                    key: key.into(),
                    current: Some(Box::new(current)),
                }),
            };
        }
        let revision = header_revision(resp.header())?;
        let prev = resp.op_responses().into_iter().find_map(|op| match op {
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
            client: self.watch.clone(),
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
        match self
            .call(|mut kv| {
                let options = options.clone();
                async move { kv.compact(revision, Some(options)).await }
            })
            .await
        {
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
