//! Forwarding a request to another HTTP server, as a reverse proxy does: the
//! hop-by-hop headers and the caller's credentials dropped, bodies streamed
//! both ways, an upgraded connection (exec, WebSockets) bridged. The
//! aggregator's proxy sends through its pooled clients; the `proxy`
//! subresources (`handlers::proxy`) dial one connection per request
//! ([`send`]) and word what fails as Go's transport does (`dial tcp
//! 10.0.0.1:10250: connect: connection refused`).

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::StreamExt;
use http::{HeaderMap, HeaderName, Request, Response};
use http_body_util::{BodyExt, BodyStream, StreamBody};
use hyper::body::Incoming;
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use webhook::tls::{AcceptAny, provider};

use crate::front_proxy::FrontProxyConfig;
use crate::response::{Body, Chunk};

/// Go's dialer timeout (`utilnet.SetTransportDefaults`).
const DIAL_TIMEOUT: Duration = Duration::from_secs(30);
/// Go's `TLSHandshakeTimeout` of the same defaults.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The client's address, kept on proxied requests for `X-Forwarded-For`.
#[derive(Debug, Clone, Copy)]
pub struct ClientIp(pub IpAddr);

/// Whether the request asks to switch protocols (`Connection: Upgrade`).
pub fn wants_upgrade(h: &HeaderMap) -> bool {
    h.contains_key(http::header::UPGRADE)
        && h.get_all(http::header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
}

/// Headers that describe one hop, not the message (RFC 9110 §7.6.1, Go's
/// `ReverseProxy` list); an upgrade keeps `Connection` and `Upgrade` so the
/// backend can switch protocols.
pub fn strip_hop_by_hop(h: &mut HeaderMap, upgrade: bool) {
    let named: Vec<HeaderName> = h
        .get_all(http::header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|t| HeaderName::from_bytes(t.trim().as_bytes()).ok())
        .filter(|n| !(upgrade && n == http::header::UPGRADE))
        .collect();
    for name in named {
        h.remove(name);
    }
    for name in [
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
    ] {
        h.remove(name);
    }
    if !upgrade {
        h.remove(http::header::CONNECTION);
        h.remove(http::header::UPGRADE);
    }
}

/// Drop credentials and any identity headers the client tried to set (what
/// upstream's authentication filter removes once a request is authenticated).
pub fn strip_identity(h: &mut HeaderMap, cfg: &FrontProxyConfig) {
    h.remove(http::header::AUTHORIZATION);
    let names: Vec<HeaderName> = h.keys().cloned().collect();
    for name in names {
        let n = name.as_str();
        let spoofed = cfg
            .username_headers
            .iter()
            .chain(&cfg.group_headers)
            .chain(&cfg.uid_headers)
            .any(|x| n.eq_ignore_ascii_case(x))
            || n.eq_ignore_ascii_case(UID_HEADER)
            || cfg
                .extra_headers_prefix
                .iter()
                .any(|p| n.starts_with(&p.to_ascii_lowercase()))
            || n.starts_with("impersonate-");
        if spoofed {
            h.remove(&name);
        }
    }
}

/// The header the aggregator sends the caller's UID in (upstream 1.33, its
/// `RemoteRequestHeaderUID` feature on by default), when the UID is known.
pub const UID_HEADER: &str = "X-Remote-Uid";

/// The backend's body as ours, frame by frame. A backend that breaks mid-body ends
/// the stream there (our body type cannot carry an error; the client sees a short
/// body or, for a watch, the end of the watch).
pub fn streamed(body: Incoming) -> Body {
    let frames = BodyStream::new(body)
        .take_while(|f| std::future::ready(f.is_ok()))
        .filter_map(|f| std::future::ready(f.ok()))
        .map(|frame| Ok::<_, std::convert::Infallible>(frame.map_data(Chunk::from)));
    StreamBody::new(frames).boxed_unsync()
}

/// Copy bytes both ways between an upgraded client and backend connection (exec,
/// attach, port-forward) until either side closes.
pub async fn bridge(client: OnUpgrade, backend: OnUpgrade) {
    let (Ok(client), Ok(backend)) = (client.await, backend.await) else {
        return;
    };
    let mut client = TokioIo::new(client);
    let mut backend = TokioIo::new(backend);
    if let Err(e) = tokio::io::copy_bidirectional(&mut client, &mut backend).await {
        tracing::debug!(error = %e, "upgraded proxy connection ended");
    }
}

/// How a backend is spoken to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tls {
    /// Plain HTTP.
    None,
    /// TLS, any certificate taken (upstream's proxy transport: pods and
    /// Services are addressed by IP, so no name could be checked).
    Insecure,
    /// TLS checked against the system's roots (upstream's kubelet transport
    /// without `--kubelet-certificate-authority`).
    SystemRoots,
}

/// Where a request goes: a host (an IP or a name) and port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backend {
    pub host: String,
    pub port: u16,
    pub tls: Tls,
}

impl Backend {
    /// `host:port`, an IPv6 host in brackets (Go's `net.JoinHostPort`).
    pub fn authority(&self) -> String {
        join_host_port(&self.host, &self.port.to_string())
    }
}

/// Go's `net.JoinHostPort`.
pub fn join_host_port(host: &str, port: &str) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Why a request sent on to a backend got no answer, in Go's transport's
/// words (the text a 503's `error trying to reach service: …` carries).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ForwardError {
    /// The backend's host name does not resolve.
    #[error("dial tcp: lookup {host}: no such host")]
    NoSuchHost { host: String },
    /// No address of the host took the connection (the last one's cause).
    #[error("dial tcp {authority}: {cause}")]
    Dial { authority: String, cause: String },
    #[error("net/http: TLS handshake timeout")]
    HandshakeTimeout,
    /// The TLS configuration or handshake failed.
    #[error("tls: {0}")]
    Tls(String),
    /// The connection broke or closed without an answer (`EOF`).
    #[error("{0}")]
    Exchange(String),
}

/// Send `req` (origin-form URI, its own `Host`) to `backend` over a new
/// HTTP/1.1 connection that allows upgrades; the answer with its body unread.
/// The error is Go's transport's words for what failed.
pub async fn send<B>(backend: &Backend, req: Request<B>) -> Result<Response<Incoming>, ForwardError>
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let tcp = dial(backend).await?;
    let config = match backend.tls {
        Tls::None => return exchange(tcp, req).await,
        Tls::Insecure => insecure_config()?,
        Tls::SystemRoots => system_roots_config()?,
    };
    let name = server_name(&backend.host)?;
    let handshake = tokio_rustls::TlsConnector::from(config).connect(name, tcp);
    let tls = tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, handshake)
        .await
        .map_err(|_| ForwardError::HandshakeTimeout)?
        .map_err(|e| tls_error(&e))?;
    exchange(tls, req).await
}

/// One request on a new connection, whose task ends with it (or with the
/// upgraded connection).
async fn exchange<IO, B>(io: IO, req: Request<B>) -> Result<Response<Incoming>, ForwardError>
where
    IO: AsyncRead + AsyncWrite + Send + Unpin + 'static,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| ForwardError::Exchange(e.to_string()))?;
    tokio::spawn(async move {
        if let Err(e) = conn.with_upgrades().await {
            tracing::debug!(error = %e, "proxied connection ended");
        }
    });
    sender
        .send_request(req)
        .await
        .map_err(|e| response_error(&e))
}

/// A TCP connection to the first of the host's addresses that answers.
async fn dial(backend: &Backend) -> Result<TcpStream, ForwardError> {
    let authority = backend.authority();
    let no_such_host = || ForwardError::NoSuchHost {
        host: backend.host.clone(),
    };
    let addrs: Vec<SocketAddr> = match backend.host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, backend.port)],
        Err(_) => tokio::net::lookup_host((backend.host.as_str(), backend.port))
            .await
            .map_err(|_| no_such_host())?
            .collect(),
    };
    let mut last = no_such_host();
    for addr in addrs {
        match tokio::time::timeout(DIAL_TIMEOUT, TcpStream::connect(addr)).await {
            Ok(Ok(tcp)) => {
                let _ = tcp.set_nodelay(true);
                return Ok(tcp);
            }
            Ok(Err(e)) => {
                last = ForwardError::Dial {
                    authority: authority.clone(),
                    cause: dial_cause(&e),
                }
            }
            Err(_) => {
                last = ForwardError::Dial {
                    authority: authority.clone(),
                    cause: "i/o timeout".into(),
                }
            }
        }
    }
    Err(last)
}

/// Go's words for a failed `connect(2)`.
fn dial_cause(e: &std::io::Error) -> String {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::ConnectionRefused => "connect: connection refused".into(),
        ErrorKind::HostUnreachable => "connect: no route to host".into(),
        ErrorKind::NetworkUnreachable => "connect: network is unreachable".into(),
        ErrorKind::TimedOut => "i/o timeout".into(),
        _ => format!("connect: {e}"),
    }
}

/// Go's words for a failed TLS handshake, where rustls has an equivalent.
fn tls_error(e: &std::io::Error) -> ForwardError {
    let rustls = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>());
    ForwardError::Tls(match rustls {
        Some(rustls::Error::InvalidMessage(_)) => {
            "first record does not look like a TLS handshake".into()
        }
        Some(rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer)) => {
            "failed to verify certificate: x509: certificate signed by unknown authority".into()
        }
        Some(other) => other.to_string(),
        None => e.to_string(),
    })
}

/// Go's words for a backend that took the connection but gave no answer.
fn response_error(e: &hyper::Error) -> ForwardError {
    ForwardError::Exchange(if e.is_incomplete_message() {
        "EOF".into()
    } else {
        e.to_string()
    })
}

fn server_name(host: &str) -> Result<ServerName<'static>, ForwardError> {
    ServerName::try_from(host.to_string()).map_err(|e| ForwardError::Tls(e.to_string()))
}

type Config = Result<Arc<rustls::ClientConfig>, ForwardError>;

/// A client configuration of ring's default protocol versions.
fn builder()
-> Result<rustls::ConfigBuilder<rustls::ClientConfig, rustls::WantsVerifier>, ForwardError> {
    rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| ForwardError::Tls(e.to_string()))
}

/// The proxy transport's TLS: no certificate check (`InsecureSkipVerify`).
fn insecure_config() -> Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let config = builder()?
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AcceptAny))
                .with_no_client_auth();
            Ok(Arc::new(config))
        })
        .clone()
}

/// The kubelet transport's TLS: the system's roots (read once).
fn system_roots_config() -> Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let mut roots = rustls::RootCertStore::empty();
            roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
            let config = builder()?
                .with_root_certificates(roots)
                .with_no_client_auth();
            Ok(Arc::new(config))
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_by_hop_headers_and_those_connection_names_go() {
        let mut h = HeaderMap::new();
        h.insert("connection", "x-drop, keep-alive".parse().unwrap());
        h.insert("x-drop", "1".parse().unwrap());
        h.insert("keep-alive", "5".parse().unwrap());
        h.insert("proxy-authorization", "Basic x".parse().unwrap());
        h.insert("cookie", "a=b".parse().unwrap());
        strip_hop_by_hop(&mut h, false);
        assert_eq!(h.len(), 1, "{h:?}");
        assert_eq!(h.get("cookie").unwrap(), "a=b");
    }

    #[test]
    fn an_upgrade_keeps_its_headers() {
        let mut h = HeaderMap::new();
        h.insert("connection", "Upgrade".parse().unwrap());
        h.insert("upgrade", "websocket".parse().unwrap());
        assert!(wants_upgrade(&h));
        strip_hop_by_hop(&mut h, true);
        assert_eq!(h.get("upgrade").unwrap(), "websocket");
        assert_eq!(h.get("connection").unwrap(), "Upgrade");
    }

    #[tokio::test]
    async fn a_refused_dial_is_worded_as_go_words_it() {
        // A port just released: nothing listens there.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let backend = Backend {
            host: "127.0.0.1".into(),
            port,
            tls: Tls::None,
        };
        let req = Request::new(http_body_util::Empty::<bytes::Bytes>::new());
        let err = send(&backend, req).await.unwrap_err();
        assert_eq!(
            err,
            ForwardError::Dial {
                authority: format!("127.0.0.1:{port}"),
                cause: "connect: connection refused".into()
            }
        );
        assert_eq!(
            err.to_string(),
            format!("dial tcp 127.0.0.1:{port}: connect: connection refused")
        );
        assert_eq!(join_host_port("::1", "80"), "[::1]:80");
    }
}
