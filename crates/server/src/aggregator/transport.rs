//! TLS connections to extension API servers: the aggregator's front-proxy client
//! certificate, the APIService's `caBundle` checked against `<service>.<namespace>.svc`
//! (or `insecureSkipTLSVerify`), HTTP/1.1, bounded by a timeout. Built when an
//! APIService or its endpoints change, not per request.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

use crate::pki::CertPair;
use crate::tls::{certs, private_key, provider};

/// How to reach one extension server.
#[derive(Clone)]
pub struct Backend {
    connector: tokio_rustls::TlsConnector,
    server_name: ServerName<'static>,
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
        Ok(Backend {
            connector: tokio_rustls::TlsConnector::from(Arc::new(config)),
            server_name: ServerName::try_from(server_name.to_string())
                .map_err(|e| e.to_string())?,
            address,
        })
    }

    pub fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.address)
    }

    /// GET `path`; the status and body, or why there is none.
    pub async fn get(&self, path: &str, timeout: Duration) -> Result<(u16, Bytes), String> {
        tokio::time::timeout(timeout, self.get_inner(path))
            .await
            .map_err(|_| format!("timed out after {}s", timeout.as_secs()))?
    }

    /// A new HTTP/1.1 connection, bounded by `timeout` to establish.
    async fn connect<B>(
        &self,
        timeout: Duration,
    ) -> Result<hyper::client::conn::http1::SendRequest<B>, String>
    where
        B: hyper::body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let connect = async {
            let tcp = tokio::net::TcpStream::connect(&self.address)
                .await
                .map_err(|e| format!("dial tcp {}: {e}", self.address))?;
            let tls = self
                .connector
                .connect(self.server_name.clone(), tcp)
                .await
                .map_err(|e| format!("tls: {e}"))?;
            let (sender, conn) =
                hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls))
                    .await
                    .map_err(|e| e.to_string())?;
            // Upgrades (exec, port-forward) pass through the same connection.
            tokio::spawn(conn.with_upgrades());
            Ok(sender)
        };
        tokio::time::timeout(timeout, connect)
            .await
            .map_err(|_| format!("dial tcp {}: timed out after {}s", self.address, timeout.as_secs()))?
    }

    /// Send `req` and return the backend's response with its body unread (streamed).
    pub async fn send<B>(
        &self,
        req: http::Request<B>,
        connect_timeout: Duration,
    ) -> Result<http::Response<hyper::body::Incoming>, String>
    where
        B: hyper::body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let mut sender = self.connect(connect_timeout).await?;
        sender.send_request(req).await.map_err(|e| e.to_string())
    }

    async fn get_inner(&self, path: &str) -> Result<(u16, Bytes), String> {
        let mut sender = self.connect(Duration::from_secs(3600)).await?;
        let req = http::Request::get(path)
            .header(http::header::HOST, &self.address)
            .header(http::header::ACCEPT, "application/json")
            .body(Empty::<Bytes>::new())
            .map_err(|e| e.to_string())?;
        let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
        let code = resp.status().as_u16();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        Ok((code, body))
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
