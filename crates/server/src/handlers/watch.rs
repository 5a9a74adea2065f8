//! Watch responses: newline-delimited JSON events streamed from the watch cache.
//! The body takes events from the cache's bounded queue as the connection asks
//! for them (see [`Pump`]); it ends on timeout, server shutdown, client
//! disconnect, when the resource is retired (its CRD changed or went away), or
//! when the cache ends the watcher (it fell behind: the client relists).
//!
//! Hot path: no task per watch, only the connection's; events are encoded once
//! per version and shared.

use bytes::Bytes;
use futures::task::AtomicWaker;
use http::{Response, StatusCode, header};
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use apimachinery::StatusError;
use apimachinery::selector::field::{FieldOp, FieldRequirement, FieldSelector};
use registry::Object;
use storage::{WatchItem, Watcher};

use super::call::Call;
use crate::catalog::Served;
use crate::encode::{self, TableOptions};
use crate::lifecycle::{Lifecycle, Phase};
use crate::negotiate::Output;
use crate::response::{Body, Chunk};

type Result<T> = std::result::Result<T, StatusError>;

/// Queued events are sent as one body chunk up to about this size: bursts
/// cost one write.
const COALESCE_BYTES: usize = 8 * 1024;
/// kube-apiserver's default --min-request-timeout; watches end between 1x and 2x.
const MIN_REQUEST_TIMEOUT: u64 = 1800;

/// Upstream computes `timeoutSeconds * 1s` in int64 nanoseconds and lets it wrap:
/// zero means a random timeout between 1x and 2x --min-request-timeout, a negative
/// product ends the watch at once.
fn watch_timeout(seconds: Option<i64>) -> Duration {
    match seconds.unwrap_or(0).wrapping_mul(1_000_000_000) {
        0 => Duration::from_secs(MIN_REQUEST_TIMEOUT + rand_below(MIN_REQUEST_TIMEOUT)),
        nanos if nanos < 0 => Duration::ZERO,
        nanos => Duration::from_nanos(nanos.unsigned_abs()),
    }
}

/// A watch of one object by name (the deprecated `watch/…/{name}` path):
/// upstream's `ListResource` turns the name into the field selector, and
/// refuses a request that also has one.
fn one_object(name: &str, selector: Option<FieldSelector>) -> Result<FieldSelector> {
    if selector.is_some_and(|s| !s.is_empty()) {
        return Err(StatusError::bad_request(
            "both a name and a field selector provided; please provide one or the other.",
        ));
    }
    Ok(FieldSelector::new(vec![FieldRequirement {
        field: "metadata.name".into(),
        op: FieldOp::Eq,
        value: name.into(),
    }]))
}

/// How long before its deadline a watch that allows bookmarks gets one
/// (upstream's cacher: `deadline - 2s`, when that is still to come).
const BOOKMARK_BEFORE_DEADLINE: Duration = Duration::from_secs(2);

/// A timer that sends the watch a bookmark [`BOOKMARK_BEFORE_DEADLINE`]
/// before `deadline`; `None` when that time has passed already. Aborted
/// with the watch's body.
fn bookmark_before(
    deadline: tokio::time::Instant,
    bookmarker: storage::Bookmarker,
) -> Option<AbortOnDrop> {
    let at = deadline.checked_sub(BOOKMARK_BEFORE_DEADLINE)?;
    (at > tokio::time::Instant::now()).then(|| {
        AbortOnDrop(tokio::spawn(async move {
            tokio::time::sleep_until(at).await;
            bookmarker.send();
        }))
    })
}

/// A task that ends with its owner.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// `now + timeout`, saturating: `timeoutSeconds` may be as large as `i64::MAX`.
fn deadline_after(timeout: Duration) -> tokio::time::Instant {
    let now = tokio::time::Instant::now();
    now.checked_add(timeout)
        .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 24 * 3600))
}

pub async fn serve(call: &Call<'_>) -> Result<Response<Body>> {
    let mut opts = call.query.watch_options()?;
    if !call.info.name.is_empty() {
        opts.field_selector = Some(one_object(&call.info.name, opts.field_selector)?);
    }
    let timeout = watch_timeout(call.query.timeout_seconds()?);
    let initial_events_end = opts.send_initial_events;
    let encoder = EventEncoder {
        output: call.output.clone(),
        served: call.served.clone(),
        table: call.table.clone(),
    };
    tracing::debug!(resource = %call.served.rtype.plural, namespace = %call.ctx.namespace, rv = ?opts.resource_version, ?timeout, "watch");
    let bookmarks = opts.bookmarks;
    let body = match call.served.store.watch(&call.ctx, opts).await {
        Ok(watcher) => {
            let deadline = deadline_after(timeout);
            let pre_deadline = bookmarks.then(|| bookmark_before(deadline, watcher.bookmarker()));
            let ends = Ends {
                deadline: Box::pin(tokio::time::sleep_until(deadline)),
                shutdown: call.api.lifecycle.subscribe(),
                lifecycle: call.api.lifecycle.clone(),
                retired: call.served.retired.subscribe(),
            };
            let mut pump = Pump::new(watcher, encoder, initial_events_end, ends);
            pump.pre_deadline = pre_deadline.flatten();
            pump.body()
        }
        // A resume point that is too old is reported in-stream, as upstream does.
        Err(e) if e.code() == 410 => {
            let frame = encoder.error(&e);
            StreamBody::new(futures::stream::once(async { Ok(Frame::data(frame)) })).boxed_unsync()
        }
        Err(e) => return Err(e),
    };
    let mut resp = Response::new(body);
    *resp.status_mut() = StatusCode::OK;
    if let Ok(v) = http::HeaderValue::from_str(&call.output.watch_content_type()) {
        resp.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    Ok(resp)
}

fn rand_below(n: u64) -> u64 {
    u64::from(uuid::Uuid::new_v4().as_u128() as u32) % n.max(1)
}

/// What ends a watch besides the client and the cache.
struct Ends {
    /// One timer for the watch's life (not one per event).
    deadline: std::pin::Pin<Box<tokio::time::Sleep>>,
    /// Server shutdown: the watch ends once the server stops accepting
    /// requests (after its place in the spread of watch ends).
    shutdown: tokio::sync::watch::Receiver<Phase>,
    lifecycle: Arc<Lifecycle>,
    /// The resource was replaced or removed (its CRD changed or went away).
    retired: tokio::sync::watch::Receiver<bool>,
}

impl Ends {
    /// The deadline passed, the server is shutting down, or the resource went.
    async fn reached(mut self) {
        let lifecycle = self.lifecycle;
        let mut shutdown = self.shutdown;
        let stopping = async move {
            let _ = shutdown
                .wait_for(|p| *p >= Phase::NotAcceptingNewRequest)
                .await;
            let delay = lifecycle.watch_end_delay();
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
        };
        tokio::select! {
            _ = self.deadline.as_mut() => {}
            () = stopping => {}
            _ = self.retired.wait_for(|r| *r) => {}
        }
    }
}

/// A watch's body: the watcher's events framed as the connection asks for
/// them. The connection's own task polls it (no task or channel of the
/// watch's own between the cache's queue and the socket), so an event is
/// encoded only once the connection can take it and waits in the watcher's
/// queue as a shared object, not as this watcher's bytes. It ends on the
/// watch's deadline, server shutdown, the resource's retirement, the cache
/// ending the watcher (it fell behind: the client relists) or an event that
/// cannot be presented; a client that goes away drops it.
struct Pump {
    watcher: Watcher<Object>,
    encoder: EventEncoder,
    initial: std::vec::IntoIter<WatchItem<Object>>,
    /// The `initial-events-end` bookmark, still to be sent.
    bookmark: bool,
    /// What ends the watch, one future for its whole life (not one made
    /// per event), polled only when it woke (see [`EndsWake`]).
    ends: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>,
    ends_wake: Arc<EndsWake>,
    /// The waker `ends` is polled with: made once.
    ends_waker: Waker,
    done: bool,
    /// The bookmark before the deadline, still to come (its timer).
    pre_deadline: Option<AbortOnDrop>,
}

impl Pump {
    fn new(
        mut watcher: Watcher<Object>,
        encoder: EventEncoder,
        initial_events_end: bool,
        ends: Ends,
    ) -> Pump {
        let ends_wake = Arc::new(EndsWake {
            // Polled first to register its wakers.
            woken: AtomicBool::new(true),
            task: AtomicWaker::new(),
        });
        Pump {
            initial: std::mem::take(&mut watcher.initial).into_iter(),
            watcher,
            encoder,
            bookmark: initial_events_end,
            ends: Box::pin(ends.reached()),
            ends_waker: Waker::from(ends_wake.clone()),
            ends_wake,
            done: false,
            pre_deadline: None,
        }
    }

    fn body(self) -> Body {
        // Boxed: the stream moves its state into each step's future and back.
        let frames = futures::stream::unfold(Box::new(self), |mut pump| async move {
            let frames = pump.next().await?;
            Some((Ok(Frame::data(frames)), pump))
        });
        StreamBody::new(frames).boxed_unsync()
    }

    /// The next chunk of the body; `None` once the watch has ended.
    async fn next(&mut self) -> Option<Chunk> {
        if self.done {
            return None;
        }
        if let Some(item) = self.initial.next() {
            let (frame, last) = self.encoder.frame(&item).await;
            self.done = last;
            return Some(frame);
        }
        if std::mem::take(&mut self.bookmark) {
            return Some(self.encoder.bookmark(self.watcher.revision, true));
        }
        let item = std::future::poll_fn(|cx| self.poll_event(cx)).await?;
        let (mut frames, mut last) = self.encoder.frame(&item).await;
        // Events already queued behind this one go out in the same HTTP chunk
        // and write (and TLS record): one wake-up and one syscall for a burst,
        // not one each. The frames are not copied together: a connection that
        // cannot take them holds the frames its watch shares with others.
        while !last && frames.len() < COALESCE_BYTES {
            let Ok(next) = self.watcher.events.try_recv() else {
                break;
            };
            let (frame, ends_watch) = self.encoder.frame(&next).await;
            frames.append(frame);
            last = ends_watch;
        }
        self.done = last;
        Some(frames)
    }

    /// The next event, or `None` once the watch has ended. What ends the
    /// watch (a timer and two channels) is polled only after it woke, not for
    /// every event: a flag check per event instead.
    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<WatchItem<Object>>> {
        if self.ends_wake.woken.swap(false, Ordering::AcqRel) {
            let mut ends_cx = Context::from_waker(&self.ends_waker);
            if self.ends.as_mut().poll(&mut ends_cx).is_ready() {
                return Poll::Ready(None);
            }
        }
        let event = self.watcher.events.poll_recv(cx);
        if event.is_pending() {
            // The task waiting now is the one an end wakes; an end that came
            // before it was registered is seen here.
            self.ends_wake.task.register(cx.waker());
            if self.ends_wake.woken.load(Ordering::Acquire) {
                cx.waker().wake_by_ref();
            }
        }
        event
    }
}

/// A watch event's `type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EventType {
    Added,
    Modified,
    Deleted,
    Bookmark,
    Error,
}

impl EventType {
    /// The event's `type`.
    fn name(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
            EventType::Bookmark => "BOOKMARK",
            EventType::Error => "ERROR",
        }
    }

    /// The event's JSON up to its object.
    fn prefix(self) -> &'static [u8] {
        match self {
            EventType::Added => br#"{"type":"ADDED","object":"#,
            EventType::Modified => br#"{"type":"MODIFIED","object":"#,
            EventType::Deleted => br#"{"type":"DELETED","object":"#,
            EventType::Bookmark => br#"{"type":"BOOKMARK","object":"#,
            EventType::Error => br#"{"type":"ERROR","object":"#,
        }
    }
}

/// What closes an event's JSON, and the newline that ends its line.
const EVENT_END: &[u8] = b"}\n";

/// The waker a watch's [`Ends`] are polled with: it marks them woken, then
/// wakes the connection's task.
struct EndsWake {
    woken: AtomicBool,
    task: AtomicWaker,
}

impl Wake for EndsWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.task.wake();
    }
}

struct EventEncoder {
    output: Output,
    served: Arc<Served>,
    table: TableOptions,
}

impl EventEncoder {
    /// The frame of `item`, and whether it ends the watch (an object that
    /// cannot be presented, e.g. its conversion webhook failed: an `ERROR`
    /// event, then the client relists).
    async fn frame(&mut self, item: &WatchItem<Object>) -> (Chunk, bool) {
        match self.item(item).await {
            Ok(frame) => (frame, false),
            Err(e) => (self.error(&e), true),
        }
    }

    async fn item(&mut self, item: &WatchItem<Object>) -> Result<Chunk> {
        let (event, obj) = match item {
            WatchItem::Added(o) => (EventType::Added, o),
            WatchItem::Modified(o) => (EventType::Modified, o),
            WatchItem::Deleted(o) => (EventType::Deleted, o),
            WatchItem::Bookmark(rv) => return Ok(self.bookmark(*rv, false)),
        };
        // The same presentation as get and list: this version's shape and defaults.
        let obj = self.served.store.present(obj).await?;
        // JSON is the cached bytes themselves.
        let body = encode::object(&self.output, &self.served.rtype, &obj, &self.table);
        // Tables carry column definitions only in the first event.
        self.table.no_headers = true;
        Ok(self.frame_of(event, &body))
    }

    /// An event's frame in the watch's representation.
    fn frame_of(&self, event: EventType, object: &Bytes) -> Chunk {
        match self.output {
            Output::Protobuf => Chunk::from(Bytes::from(protobuf::encode_watch_event(
                event.name(),
                object,
            ))),
            _ => frame(event, object),
        }
    }

    fn bookmark(&self, revision: i64, initial_events_end: bool) -> Chunk {
        let mut metadata = json!({"resourceVersion": revision.to_string()});
        if initial_events_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let (kind, api_version) = match &self.output {
            Output::PartialMetadata(v) => (
                "PartialObjectMetadata".to_string(),
                format!("meta.k8s.io/{v}"),
            ),
            _ => (
                self.served.rtype.kind.clone(),
                self.served.rtype.api_version(),
            ),
        };
        let obj: Value = json!({"kind": kind, "apiVersion": api_version, "metadata": metadata});
        self.frame_of(EventType::Bookmark, &self.encoded(&obj))
    }

    fn error(&self, err: &StatusError) -> Chunk {
        let status: Value = serde_json::from_slice(&err.to_json()).unwrap_or_default();
        self.frame_of(EventType::Error, &self.encoded(&status))
    }

    /// A bookmark's object or an error's Status: JSON, or protobuf.
    fn encoded(&self, value: &Value) -> Bytes {
        match self.output {
            Output::Protobuf => encode::value(&self.output, value),
            _ => encode::to_bytes(value),
        }
    }
}

/// The event line of `object`'s encoding, in three parts: two constants
/// and the encoding itself. A JSON object's encoding is the cache's bytes,
/// shared by every watcher and never copied (nor kept a second time by a
/// watcher that cannot take them).
fn frame(event: EventType, object: &Bytes) -> Chunk {
    let end = object.len() - usize::from(object.ends_with(b"\n"));
    let mut frame = Chunk::from(Bytes::from_static(event.prefix()));
    frame.push(object.slice(..end));
    frame.push(Bytes::from_static(EVENT_END));
    frame
}

#[cfg(test)]
mod tests {
    use super::*;

    fn joined(chunk: Chunk) -> Vec<u8> {
        let mut chunk = chunk;
        let mut out = Vec::new();
        while bytes::Buf::has_remaining(&chunk) {
            let piece = bytes::Buf::chunk(&chunk).to_vec();
            bytes::Buf::advance(&mut chunk, piece.len());
            out.extend(piece);
        }
        out
    }

    #[test]
    fn a_frame_is_the_event_line_and_holds_the_objects_bytes() {
        let json = Bytes::from_static(b"{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\"}}\n");
        let added = frame(EventType::Added, &json);
        let mut slots = [std::io::IoSlice::new(&[]); 4];
        assert_eq!(bytes::Buf::chunks_vectored(&added, &mut slots), 3);
        // The object part is the cached bytes themselves, not a copy.
        assert_eq!(slots[1].as_ptr(), json.as_ptr());
        assert_eq!(
            joined(added),
            b"{\"type\":\"ADDED\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\"}}}\n"
        );
        // An encoding without the trailing newline makes the same line.
        let bare = json.slice(..json.len() - 1);
        assert_eq!(
            joined(frame(EventType::Deleted, &bare)),
            joined(frame(EventType::Deleted, &json))
        );
    }
}
