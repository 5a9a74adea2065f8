//! Building responses: bodies, Status errors, encodings.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::UnsyncBoxBody};
use std::convert::Infallible;
use std::io::Write;

use apimachinery::StatusError;

pub type Body = UnsyncBoxBody<Bytes, Infallible>;

/// Responses at least this large are gzipped for clients that accept it (upstream's threshold).
const GZIP_THRESHOLD: usize = 128 * 1024;

pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed_unsync()
}

pub fn respond(code: u16, content_type: &str, body: impl Into<Bytes>) -> Response<Body> {
    let mut resp = Response::new(full(body));
    *resp.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if let Ok(v) = HeaderValue::from_str(content_type) {
        resp.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    resp
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
    let frames = futures::stream::iter(chunks.map(|b| Ok(http_body::Frame::data(b))));
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
