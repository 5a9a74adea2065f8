//! TLS connections to extension API servers: the aggregator's front-proxy client
//! certificate, the APIService's `caBundle` checked against `<service>.<namespace>.svc`
//! (or `insecureSkipTLSVerify`), HTTP/1.1 over pooled keep-alive connections. Built
//! when an APIService or its endpoints change, not per request.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

use server::pki::CertPair;
use server::tls::{certs, private_key, provider};

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// What the aggregator sends to a backend: a client's body, streamed, or nothing.
pub type OutBody = BoxBody<Bytes, BoxError>;

/// Time to open a TCP connection to a backend.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Idle keep-alive connections are closed after this long.
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// How to reach one extension server; clones share one connection pool.
#[derive(Clone)]
pub struct Backend {
    client: Client<hyper_rustls::HttpsConnector<HttpConnector>, OutBody>,
    pub address: String,
}

impl Backend {
    /// `ca_bundle`: PEM; `None` with `insecure` skips verification.
    pub fn new(
        address: String,
        server_name: &str,
        ca_bundle: Option<&[u8]>,
        insecure: bool,
        client: &CertPair,
    ) -> Result<Backend, String> {
        let builder = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?;
        let builder = if insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AcceptAny))
        } else {
            let mut roots = rustls::RootCertStore::empty();
            let pem = String::from_utf8_lossy(ca_bundle.unwrap_or_default()).to_string();
            for cert in certs(&pem).map_err(|e| format!("caBundle: {e}"))? {
                roots.add(cert).map_err(|e| format!("caBundle: {e}"))?;
            }
            builder.with_root_certificates(roots)
        };
        let config = builder
            .with_client_auth_cert(
                certs(&client.cert_pem).map_err(|e| e.to_string())?,
                private_key(&client.key_pem).map_err(|e| e.to_string())?,
            )
            .map_err(|e| format!("front-proxy client certificate: {e}"))?;
        let server_name =
            ServerName::try_from(server_name.to_string()).map_err(|e| e.to_string())?;
        let mut tcp = HttpConnector::new();
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        tcp.set_connect_timeout(Some(CONNECT_TIMEOUT));
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(config)
            .https_only()
            .with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(server_name))
            .enable_http1()
            .wrap_connector(tcp);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(IDLE_TIMEOUT)
            .build(https);
        Ok(Backend { client, address })
    }

    pub fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.address)
    }

    /// GET `path` with `headers`; the status and body, or why there is none.
    pub async fn get(
        &self,
        path: &str,
        headers: &http::HeaderMap,
        timeout: Duration,
    ) -> Result<(u16, Bytes), String> {
        self.call(http::Method::GET, path, headers, timeout).await
    }

    /// `method` on `path` (no body) with `headers`, bounded by `timeout`; the status
    /// and body, or why there is none.
    pub async fn call(
        &self,
        method: http::Method,
        path: &str,
        headers: &http::HeaderMap,
        timeout: Duration,
    ) -> Result<(u16, Bytes), String> {
        let get = async {
            let mut req = http::Request::builder()
                .method(method)
                .uri(path)
                .header(http::header::ACCEPT, "application/json")
                .body(Empty::new().map_err(|e| match e {}).boxed())
                .map_err(|e| e.to_string())?;
            req.headers_mut().extend(headers.clone());
            let resp = self.send(req).await?;
            let code = resp.status().as_u16();
            let body = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| e.to_string())?;
            Ok((code, body.to_bytes()))
        };
        tokio::time::timeout(timeout, get)
            .await
            .map_err(|_| format!("timed out after {}s", timeout.as_secs()))?
    }

    /// Send `req` (its path and query; the authority is this backend's) and return the
    /// response with its body unread, to be streamed.
    pub async fn send(
        &self,
        mut req: http::Request<OutBody>,
    ) -> Result<http::Response<Incoming>, String> {
        let path = req.uri().path_and_query().map_or("/", |pq| pq.as_str());
        *req.uri_mut() = self.url(path).parse().map_err(|e| format!("{e}"))?;
        req.headers_mut().remove(http::header::HOST);
        self.client
            .request(req)
            .await
            .map_err(|e| describe(&self.address, &e))
    }
}

/// A request error as Go's client would put it: `dial tcp <addr>: ...` for the
/// network, `tls: ...` for the handshake, the innermost cause otherwise.
fn describe(address: &str, e: &hyper_util::client::legacy::Error) -> String {
    let mut chain: Vec<&(dyn std::error::Error + 'static)> = Vec::new();
    let mut next = std::error::Error::source(e);
    while let Some(err) = next {
        chain.push(err);
        next = err.source();
    }
    // hyper-util names its TCP failures "tcp connect error" and the like; any other
    // failure to connect happened in the TLS handshake.
    let is_tcp = chain.iter().any(|err| {
        let m = err.to_string();
        m.starts_with("tcp ") || m.starts_with("dns error")
    });
    let cause = chain
        .last()
        .map_or_else(|| e.to_string(), |c| c.to_string());
    if e.is_connect() && is_tcp {
        format!("dial tcp {address}: {cause}")
    } else if e.is_connect() {
        format!("tls: {cause}")
    } else {
        cause
    }
}

/// `insecureSkipTLSVerify: true`.
#[derive(Debug)]
struct AcceptAny;

impl ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        provider()
            .signature_verification_algorithms
            .supported_schemes()
    }
}
