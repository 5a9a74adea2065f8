//! rustls server configuration: serving certificate, optional client certificates
//! (verified against the cluster CA and `--client-ca-file`), ALPN h2 + http/1.1.

use anyhow::{Context, Result, anyhow};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use std::sync::Arc;

pub fn certs(pem: &str) -> Result<Vec<CertificateDer<'static>>> {
    let certs: Vec<_> = rustls_pemfile::certs(&mut pem.as_bytes())
        .collect::<Result<_, _>>()
        .context("invalid PEM certificate")?;
    if certs.is_empty() {
        return Err(anyhow!("no certificate found in PEM data"));
    }
    Ok(certs)
}

pub fn private_key(pem: &str) -> Result<PrivateKeyDer<'static>> {
    rustls_pemfile::private_key(&mut pem.as_bytes())
        .context("invalid PEM private key")?
        .ok_or_else(|| anyhow!("no private key found in PEM data"))
}

pub use webhook::tls::provider;

/// The serving side's cipher suites: AES-128-GCM first, chosen over the client's order.
/// kube-apiserver's Go TLS does the same for clients that prefer AES-GCM (every client
/// on hardware with AES instructions; Go falls back to ChaCha20 only for clients that
/// prefer it). AES-128 runs 10 rounds to AES-256's 14, and every byte of a watch event
/// or a LIST is encrypted once per connection.
fn serving_provider() -> Arc<rustls::crypto::CryptoProvider> {
    let mut provider = rustls::crypto::ring::default_provider();
    provider
        .cipher_suites
        .sort_by_key(|suite| !is_aes_128_gcm(suite.suite()));
    Arc::new(provider)
}

fn is_aes_128_gcm(suite: rustls::CipherSuite) -> bool {
    use rustls::CipherSuite as S;
    matches!(
        suite,
        S::TLS13_AES_128_GCM_SHA256
            | S::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
            | S::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
    )
}

/// Server config. `client_cas` are the PEM bundles client certificates may chain to.
pub fn server_config(
    cert_pem: &str,
    key_pem: &str,
    client_cas: &[String],
) -> Result<rustls::ServerConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for bundle in client_cas {
        for cert in certs(bundle)? {
            roots.add(cert).context("invalid client CA certificate")?;
        }
    }
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
        .allow_unauthenticated()
        .build()
        .context("building client certificate verifier")?;
    let mut config = rustls::ServerConfig::builder_with_provider(serving_provider())
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs(cert_pem)?, private_key(key_pem)?)
        .context("serving certificate and key do not match")?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    config.ignore_client_order = true;
    Ok(config)
}
