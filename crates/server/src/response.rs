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

pub fn error(err: &StatusError) -> Response<Body> {
    json(err.code(), err.to_json())
}

pub fn text(code: u16, body: &'static str) -> Response<Body> {
    respond(code, "text/plain; charset=utf-8", body)
}

/// Gzip `body` if the client accepts it and it is large enough to be worth it.
pub fn maybe_gzip(
    accept_encoding: Option<&str>,
    code: u16,
    content_type: &str,
    body: Bytes,
) -> Response<Body> {
    let wants_gzip =
        accept_encoding.is_some_and(|a| a.split(',').any(|e| e.trim().starts_with("gzip")));
    if wants_gzip && body.len() >= GZIP_THRESHOLD {
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
