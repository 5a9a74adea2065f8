//! Building responses: bodies, Status errors, encodings.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::UnsyncBoxBody};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::io::{IoSlice, Write};

use apimachinery::StatusError;

pub type Body = UnsyncBoxBody<Chunk, Infallible>;

/// A piece of a response body: one buffer, or several sent as one HTTP chunk
/// and one write without being copied together. A watch's queued events are
/// frames shared with its other watchers; a connection that cannot take them
/// holds references, not a copy of its own.
#[derive(Clone, Debug, Default)]
pub struct Chunk {
    /// Empty only when the whole chunk is.
    head: Bytes,
    /// Never holds an empty buffer.
    tail: VecDeque<Bytes>,
    len: usize,
}

impl Chunk {
    /// `bytes` sent after what the chunk holds.
    pub fn push(&mut self, bytes: Bytes) {
        if bytes.is_empty() {
            return;
        }
        self.len += bytes.len();
        if self.head.is_empty() {
            self.head = bytes;
        } else {
            self.tail.push_back(bytes);
        }
    }

    /// `other`'s parts sent after this chunk's.
    pub fn append(&mut self, other: Chunk) {
        self.push(other.head);
        for part in other.tail {
            self.push(part);
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn next_part(&mut self) {
        self.head = self.tail.pop_front().unwrap_or_default();
    }
}

impl From<Bytes> for Chunk {
    fn from(bytes: Bytes) -> Chunk {
        Chunk {
            len: bytes.len(),
            head: bytes,
            tail: VecDeque::new(),
        }
    }
}

impl Buf for Chunk {
    fn remaining(&self) -> usize {
        self.len
    }

    fn chunk(&self) -> &[u8] {
        &self.head
    }

    fn advance(&mut self, mut cnt: usize) {
        assert!(
            cnt <= self.len,
            "advanced {cnt} past the chunk's {}",
            self.len
        );
        self.len -= cnt;
        while cnt > 0 {
            if cnt < self.head.len() {
                self.head.advance(cnt);
                return;
            }
            cnt -= self.head.len();
            self.next_part();
        }
    }

    fn chunks_vectored<'a>(&'a self, dst: &mut [IoSlice<'a>]) -> usize {
        if self.len == 0 {
            return 0;
        }
        let parts = std::iter::once(&self.head).chain(&self.tail);
        let mut filled = 0;
        for (slot, part) in dst.iter_mut().zip(parts) {
            *slot = IoSlice::new(part);
            filled += 1;
        }
        filled
    }

    fn copy_to_bytes(&mut self, len: usize) -> Bytes {
        if len <= self.head.len() {
            self.len -= len;
            let taken = self.head.split_to(len);
            if self.head.is_empty() {
                self.next_part();
            }
            return taken;
        }
        let mut copy = BytesMut::with_capacity(len);
        copy.put(self.take(len));
        copy.freeze()
    }
}

/// Responses at least this large are gzipped for clients that accept it (upstream's threshold).
const GZIP_THRESHOLD: usize = 128 * 1024;

pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(Chunk::from(bytes.into())).boxed_unsync()
}

pub fn respond(code: u16, content_type: &str, body: impl Into<Bytes>) -> Response<Body> {
    respond_chunk(code, content_type, Chunk::from(body.into()))
}

/// [`respond`] with a body of several buffers, sent without being copied
/// together.
pub fn respond_chunk(code: u16, content_type: &str, body: Chunk) -> Response<Body> {
    let mut resp = Response::new(Full::new(body).boxed_unsync());
    *resp.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if let Some(v) = content_type_value(content_type) {
        resp.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    resp
}

/// `HeaderValue::from_str(content_type).ok()`, the common types without the
/// check and copy (prebuilt values share their static bytes).
fn content_type_value(content_type: &str) -> Option<HeaderValue> {
    const JSON: HeaderValue = HeaderValue::from_static("application/json");
    const YAML: HeaderValue = HeaderValue::from_static("application/yaml");
    const PROTOBUF: HeaderValue = HeaderValue::from_static(protobuf::CONTENT_TYPE);
    const TEXT: HeaderValue = HeaderValue::from_static("text/plain; charset=utf-8");
    Some(match content_type {
        "application/json" => JSON,
        "application/yaml" => YAML,
        protobuf::CONTENT_TYPE => PROTOBUF,
        "text/plain; charset=utf-8" => TEXT,
        other => return HeaderValue::from_str(other).ok(),
    })
}

pub fn json(code: u16, body: impl Into<Bytes>) -> Response<Body> {
    respond(code, "application/json", body)
}

/// A `Status` body, newline-terminated as Go's JSON encoder writes it.
pub fn error(err: &StatusError) -> Response<Body> {
    let mut body = err.to_json();
    body.push(b'\n');
    let mut resp = json(err.code(), body);
    if let Some(seconds) = err
        .status()
        .details
        .as_ref()
        .and_then(|d| d.retry_after_seconds)
    {
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    resp
}

/// A `Status` body in protobuf, for clients that asked for protobuf first.
pub fn error_as_protobuf(err: &StatusError) -> Response<Body> {
    let status: serde_json::Value = serde_json::from_slice(&err.to_json()).unwrap_or_default();
    match protobuf::encode(&status) {
        Ok(body) => {
            let mut resp = error(err);
            *resp.body_mut() = full(body);
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(protobuf::CONTENT_TYPE),
            );
            resp
        }
        Err(_) => error(err),
    }
}

/// Headers upstream puts on every response (unless the handler set them): API
/// answers must not be cached by intermediaries; plain-text errors and 403s (Go's
/// `http.Error` and the authorization filter) must not be content-sniffed.
pub fn add_standard_headers(resp: &mut Response<Body>) {
    let plain_text_error = resp.status().as_u16() >= 400
        && resp
            .headers()
            .get(header::CONTENT_TYPE)
            .is_some_and(|c| c.as_bytes().starts_with(b"text/plain"));
    let nosniff = plain_text_error || resp.status() == StatusCode::FORBIDDEN;
    let headers = resp.headers_mut();
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-cache, private"));
    if nosniff {
        headers
            .entry(header::X_CONTENT_TYPE_OPTIONS)
            .or_insert(HeaderValue::from_static("nosniff"));
    }
}

pub fn text(code: u16, body: &'static str) -> Response<Body> {
    respond(code, "text/plain; charset=utf-8", body)
}

/// A body sent as `chunks` yields them (chunked transfer encoding), each made
/// when the connection can take it.
pub fn streamed(
    code: u16,
    content_type: &str,
    chunks: impl Iterator<Item = Bytes> + Send + 'static,
) -> Response<Body> {
    let frames = futures::stream::iter(chunks.map(|b| Ok(http_body::Frame::data(Chunk::from(b)))));
    let mut resp = Response::new(http_body_util::StreamBody::new(frames).boxed_unsync());
    *resp.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if let Ok(v) = HeaderValue::from_str(content_type) {
        resp.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    resp
}

/// Whether a response of `len` bytes is gzipped for this `Accept-Encoding`.
pub fn gzips(accept_encoding: Option<&str>, len: usize) -> bool {
    len >= GZIP_THRESHOLD
        && accept_encoding.is_some_and(|a| a.split(',').any(|e| e.trim().starts_with("gzip")))
}

/// Gzip `body` if the client accepts it and it is large enough to be worth it.
pub fn maybe_gzip(
    accept_encoding: Option<&str>,
    code: u16,
    content_type: &str,
    body: Bytes,
) -> Response<Body> {
    if gzips(accept_encoding, body.len()) {
        let mut enc = flate2::write::GzEncoder::new(
            Vec::with_capacity(body.len() / 4),
            flate2::Compression::fast(),
        );
        if enc.write_all(&body).is_ok()
            && let Ok(compressed) = enc.finish()
        {
            let mut resp = respond(code, content_type, compressed);
            resp.headers_mut()
                .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            return resp;
        }
    }
    respond(code, content_type, body)
}

/// Attach `Warning: 299 - "..."` headers.
pub fn add_warnings(resp: &mut Response<Body>, warnings: &[String]) {
    for w in warnings {
        let escaped = w.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(v) = HeaderValue::from_str(&format!("299 - \"{escaped}\"")) {
            resp.headers_mut().append(header::WARNING, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parts of several sizes, an empty one among them.
    fn parts() -> (Chunk, Vec<u8>) {
        let mut chunk = Chunk::from(Bytes::from_static(b"ab"));
        for part in ["", "cde", "f", "ghij"] {
            chunk.push(Bytes::from_static(part.as_bytes()));
        }
        (chunk, b"abcdefghij".to_vec())
    }

    fn read_by_chunk(mut chunk: Chunk) -> Vec<u8> {
        let mut out = Vec::new();
        while chunk.has_remaining() {
            let piece = chunk.chunk();
            assert!(!piece.is_empty(), "an empty chunk() before the end");
            out.extend_from_slice(piece);
            let n = piece.len();
            chunk.advance(n);
        }
        out
    }

    fn read_vectored(chunk: &Chunk) -> Vec<u8> {
        let mut slots = [IoSlice::new(&[]); 8];
        let n = chunk.chunks_vectored(&mut slots);
        slots[..n].iter().flat_map(|s| s.iter().copied()).collect()
    }

    #[test]
    fn a_chunk_reads_as_its_parts_joined_from_any_point() {
        let (chunk, joined) = parts();
        assert_eq!(chunk.len(), joined.len());
        for at in 0..=joined.len() {
            let mut rest = chunk.clone();
            rest.advance(at);
            assert_eq!(rest.remaining(), joined.len() - at);
            assert_eq!(read_vectored(&rest), joined[at..], "vectored from {at}");
            assert_eq!(
                read_by_chunk(rest.clone()),
                joined[at..],
                "chunk by chunk from {at}"
            );
            for take in 0..=rest.remaining() {
                let mut taking = rest.clone();
                let taken = taking.copy_to_bytes(take);
                assert_eq!(taken, joined[at..at + take], "copy of {take} from {at}");
                assert_eq!(read_by_chunk(taking), joined[at + take..]);
            }
        }
    }

    #[test]
    fn prebuilt_content_types_equal_the_parsed_ones() {
        for content_type in [
            "application/json",
            "application/yaml",
            protobuf::CONTENT_TYPE,
            "text/plain; charset=utf-8",
            "application/json;as=Table;v=v1;g=meta.k8s.io",
            "",
            "bad\nvalue",
        ] {
            assert_eq!(
                content_type_value(content_type),
                HeaderValue::from_str(content_type).ok(),
                "{content_type:?}"
            );
        }
    }

    #[test]
    fn chunks_vectored_fills_only_the_slots_it_has() {
        let (chunk, _) = parts();
        let mut slots = [IoSlice::new(&[]); 2];
        assert_eq!(chunk.chunks_vectored(&mut slots), 2);
        assert_eq!((&slots[0][..], &slots[1][..]), (&b"ab"[..], &b"cde"[..]));
        assert_eq!(Chunk::default().chunks_vectored(&mut slots), 0);
    }

    #[test]
    fn parts_are_sent_without_being_copied() {
        let shared = Bytes::from(vec![7u8; 4096]);
        let mut chunk = Chunk::from(Bytes::from_static(b"x"));
        chunk.push(shared.clone());
        let mut slots = [IoSlice::new(&[]); 4];
        assert_eq!(chunk.chunks_vectored(&mut slots), 2);
        assert_eq!(slots[1].as_ptr(), shared.as_ptr());
    }
}
