//! TLS connections to webhooks and extension API servers: a `caBundle` checked
//! against the server name (`<service>.<namespace>.svc`, or the URL's host),
//! the system's roots when there is none, `insecureSkipTLSVerify`, an optional
//! client certificate (the aggregator's front-proxy identity), HTTP/1.1 over
//! pooled keep-alive connections. Built when a configuration or its endpoints
//! change, not per request.

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

use rustls::pki_types::PrivateKeyDer;

use crate::tls::{AcceptAny, provider};

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// What is sent to a backend: a client's body, streamed, a buffered one, or nothing.
pub type OutBody = BoxBody<Bytes, BoxError>;

/// Time to open a TCP connection to a backend.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Idle keep-alive connections are closed after this long.
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// Why a TLS client for a backend cannot be built (a configuration's fault;
/// the texts are what callers report in conditions and field errors).
#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    /// The caBundle's PEM does not parse, or holds no certificate.
    #[error("caBundle: {0}")]
    CaBundlePem(PemError),
    /// A caBundle certificate is not usable as a root.
    #[error("caBundle: {0}")]
    CaBundleRoot(rustls::Error),
    /// The caBundle's roots do not make a verifier.
    #[error("caBundle: {0}")]
    CaBundleVerifier(rustls::client::VerifierBuilderError),
    /// The client certificate's or key's PEM does not parse.
    #[error("{0}")]
    ClientPem(PemError),
    /// The client certificate and key do not go together.
    #[error("client certificate: {0}")]
    ClientCertificate(rustls::Error),
    /// The name the server's certificate must carry is not a DNS name or IP.
    #[error("{0}")]
    ServerName(#[from] rustls::pki_types::InvalidDnsNameError),
    /// rustls refuses the protocol versions.
    #[error("{0}")]
    Protocol(rustls::Error),
}

/// Why PEM data gives no certificate or key.
#[derive(Debug, thiserror::Error)]
pub enum PemError {
    #[error("invalid PEM certificate: {0}")]
    Certificate(std::io::Error),
    #[error("no certificate found in PEM data")]
    NoCertificate,
    #[error("invalid PEM private key: {0}")]
    PrivateKey(std::io::Error),
    #[error("no private key found in PEM data")]
    NoPrivateKey,
}

/// Why a request to a backend produced no answer, in Go's client's words.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// The request could not be built (a bad header, say).
    #[error("{0}")]
    Build(#[from] http::Error),
    /// The request's path and query do not make a URI with the backend's address.
    #[error("{0}")]
    Uri(#[from] http::uri::InvalidUri),
    /// No TCP connection: `dial tcp <address>: <cause>`.
    #[error("dial tcp {address}: {cause}")]
    Dial { address: String, cause: String },
    /// The TLS handshake failed.
    #[error("tls: {cause}")]
    Handshake { cause: String },
    /// The exchange failed after connecting (the innermost cause).
    #[error("{0}")]
    Exchange(String),
    /// The answer's body could not be read.
    #[error("{0}")]
    Body(hyper::Error),
    /// A webhook call ran out of time (Go's context's words).
    #[error("context deadline exceeded")]
    DeadlineExceeded,
    /// A GET (or other bodiless call) ran out of time.
    #[error("timed out after {}s", .0.as_secs())]
    TimedOut(Duration),
}

/// How to reach one webhook or extension server; clones share one connection pool.
#[derive(Clone)]
pub struct Backend {
    client: Client<hyper_rustls::HttpsConnector<HttpConnector>, OutBody>,
    pub address: String,
}

impl Backend {
    /// Connections to `address` (`host:port`) whose certificate must be valid
    /// for `server_name`, issued by `ca_bundle` (PEM; the system's roots when
    /// empty), unless `insecure`. `client`: a PEM certificate and key to present.
    pub fn new(
        address: String,
        server_name: &str,
        ca_bundle: &[u8],
        insecure: bool,
        client: Option<(&str, &str)>,
    ) -> Result<Backend, TlsSetupError> {
        let builder = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(TlsSetupError::Protocol)?;
        let builder = if insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AcceptAny))
        } else {
            let roots = Arc::new(roots(ca_bundle)?);
            let webpki =
                rustls::client::WebPkiServerVerifier::builder_with_provider(roots, provider())
                    .build()
                    .map_err(TlsSetupError::CaBundleVerifier)?;
            let pinned = if ca_bundle.iter().all(u8::is_ascii_whitespace) {
                Vec::new()
            } else {
                certs(&String::from_utf8_lossy(ca_bundle)).map_err(TlsSetupError::CaBundlePem)?
            };
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(BundleVerifier { webpki, pinned }))
        };
        let config = match client {
            Some((cert, key)) => builder
                .with_client_auth_cert(
                    certs(cert).map_err(TlsSetupError::ClientPem)?,
                    private_key(key).map_err(TlsSetupError::ClientPem)?,
                )
                .map_err(TlsSetupError::ClientCertificate)?,
            None => builder.with_no_client_auth(),
        };
        let server_name = ServerName::try_from(server_name.to_string())?;
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

    /// POST `body` (JSON) to `path`, bounded by `timeout`: the status and body,
    /// or why there is none (Go's client's words; a timeout is `context
    /// deadline exceeded`).
    pub async fn post_json(
        &self,
        path: &str,
        body: Bytes,
        timeout: Duration,
    ) -> Result<(u16, Bytes), RequestError> {
        let req = http::Request::builder()
            .method(http::Method::POST)
            .uri(path)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json, */*")
            .header(http::header::USER_AGENT, "kube-apiserver-admission")
            .body(
                http_body_util::Full::new(body)
                    .map_err(|e| match e {})
                    .boxed(),
            )?;
        self.exchange(req, timeout)
            .await
            .map_err(|_| RequestError::DeadlineExceeded)?
    }

    /// Send `req` and read the whole answer, bounded by `timeout` (`Err(())`
    /// when it runs out).
    async fn exchange(
        &self,
        req: http::Request<OutBody>,
        timeout: Duration,
    ) -> Result<Result<(u16, Bytes), RequestError>, ()> {
        let exchange = async {
            let resp = self.send(req).await?;
            let code = resp.status().as_u16();
            let body = resp
                .into_body()
                .collect()
                .await
                .map_err(RequestError::Body)?;
            Ok((code, body.to_bytes()))
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| ())
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
    ) -> Result<(u16, Bytes), RequestError> {
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
    ) -> Result<(u16, Bytes), RequestError> {
        let mut req = http::Request::builder()
            .method(method)
            .uri(path)
            .header(http::header::ACCEPT, "application/json")
            .body(Empty::new().map_err(|e| match e {}).boxed())?;
        req.headers_mut().extend(headers.clone());
        self.exchange(req, timeout)
            .await
            .map_err(|_| RequestError::TimedOut(timeout))?
    }

    /// Send `req` (its path and query; the authority is this backend's) and return the
    /// response with its body unread, to be streamed.
    pub async fn send(
        &self,
        mut req: http::Request<OutBody>,
    ) -> Result<http::Response<Incoming>, RequestError> {
        let path = req.uri().path_and_query().map_or("/", |pq| pq.as_str());
        *req.uri_mut() = self.url(path).parse()?;
        req.headers_mut().remove(http::header::HOST);
        self.client
            .request(req)
            .await
            .map_err(|e| describe(&self.address, &e))
    }
}

/// A request error as Go's client would put it: `dial tcp <addr>: ...` for the
/// network, `tls: ...` for the handshake, the innermost cause otherwise.
fn describe(address: &str, e: &hyper_util::client::legacy::Error) -> RequestError {
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
        RequestError::Dial {
            address: address.to_string(),
            cause,
        }
    } else if e.is_connect() {
        RequestError::Handshake { cause }
    } else {
        RequestError::Exchange(cause)
    }
}

fn certs(pem: &str) -> Result<Vec<CertificateDer<'static>>, PemError> {
    rustls_pemfile::certs(&mut pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(PemError::Certificate)
}

fn private_key(pem: &str) -> Result<PrivateKeyDer<'static>, PemError> {
    rustls_pemfile::private_key(&mut pem.as_bytes())
        .map_err(PemError::PrivateKey)?
        .ok_or(PemError::NoPrivateKey)
}

/// The certificates of `ca_bundle` (PEM), or the system's when it is empty
/// (upstream: an empty caBundle leaves the default roots).
fn roots(ca_bundle: &[u8]) -> Result<rustls::RootCertStore, TlsSetupError> {
    let mut roots = rustls::RootCertStore::empty();
    if ca_bundle.iter().all(u8::is_ascii_whitespace) {
        let native = rustls_native_certs::load_native_certs();
        roots.add_parsable_certificates(native.certs);
        return Ok(roots);
    }
    let pem = String::from_utf8_lossy(ca_bundle);
    let found = certs(&pem).map_err(TlsSetupError::CaBundlePem)?;
    if found.is_empty() {
        return Err(TlsSetupError::CaBundlePem(PemError::NoCertificate));
    }
    for cert in found {
        roots.add(cert).map_err(TlsSetupError::CaBundleRoot)?;
    }
    Ok(roots)
}

/// Whether `ca_bundle` (PEM) holds at least one certificate rustls accepts as
/// a root; why not otherwise (CRD conversion webhooks' caBundle check).
pub fn check_ca_bundle(ca_bundle: &[u8]) -> Result<(), TlsSetupError> {
    roots(ca_bundle).map(|_| ())
}

/// The caBundle's roots, and — as Go's `x509.Verify` allows — a server
/// certificate that is itself in the bundle (envtest's webhook server gives
/// its own certificate as the CA), valid for the name asked for.
#[derive(Debug)]
struct BundleVerifier {
    webpki: Arc<rustls::client::WebPkiServerVerifier>,
    pinned: Vec<CertificateDer<'static>>,
}

impl ServerCertVerifier for BundleVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verified =
            self.webpki
                .verify_server_cert(end_entity, intermediates, server_name, ocsp, now);
        match verified {
            Err(_)
                if self
                    .pinned
                    .iter()
                    .any(|c| c.as_ref() == end_entity.as_ref()) =>
            {
                let parsed = rustls::server::ParsedCertificate::try_from(end_entity)?;
                rustls::client::verify_server_name(&parsed, server_name)?;
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// What Go's REST client says of a non-2xx answer: the message of a `Status`
/// body, else its generic text for the code (`the server rejected our
/// request for an unknown reason`).
pub fn response_error(code: u16, body: &[u8]) -> String {
    if let Ok(serde_json::Value::Object(status)) = serde_json::from_slice(body)
        && status.get("kind").and_then(serde_json::Value::as_str) == Some("Status")
        && let Some(message) = status.get("message").and_then(serde_json::Value::as_str)
    {
        return message.to_string();
    }
    let text = String::from_utf8_lossy(body);
    match code {
        400 => "the server rejected our request for an unknown reason".into(),
        401 => "Unauthorized".into(),
        403 => "forbidden".into(),
        404 => "the server could not find the requested resource".into(),
        409 => "the server reported a conflict".into(),
        429 => "the server has received too many requests and has asked us to try again later"
            .into(),
        500 => format!(
            "an error on the server ({:?}) has prevented the request from succeeding",
            text.trim()
        ),
        503 => "the server is currently unable to handle the request".into(),
        504 => "the server was unable to return a response in the time allotted, but may still be processing the request".into(),
        _ => format!(
            "the server responded with the status code {code} but did not return more information"
        ),
    }
}
