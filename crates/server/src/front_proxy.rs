//! The aggregator's identity towards extension API servers (its front-proxy client
//! certificate) and the `kube-system/extension-apiserver-authentication` ConfigMap
//! that tells them whom to trust, in kube-apiserver's format.

use anyhow::{Context, Result, anyhow};
use serde_json::{Value, json};

use std::path::PathBuf;

use crate::pki::{CertPair, Pki};

/// How this server proves itself to extension API servers (the aggregator's client
/// certificate) and what it tells them to trust: kube-apiserver's
/// `--proxy-client-*` and `--requestheader-*` flags. Files left unset are generated
/// in the data dir at first start, from a front-proxy CA of their own.
#[derive(Debug, Clone)]
pub struct FrontProxyConfig {
    pub proxy_client_cert_file: Option<PathBuf>,
    pub proxy_client_key_file: Option<PathBuf>,
    pub requestheader_client_ca_file: Option<PathBuf>,
    pub allowed_names: Vec<String>,
    pub username_headers: Vec<String>,
    pub group_headers: Vec<String>,
    pub extra_headers_prefix: Vec<String>,
    /// Headers carrying the user's UID (`--requestheader-uid-headers`; empty by
    /// default, as upstream). The aggregator always sends `X-Remote-Uid`.
    pub uid_headers: Vec<String>,
}

impl Default for FrontProxyConfig {
    fn default() -> Self {
        FrontProxyConfig {
            proxy_client_cert_file: None,
            proxy_client_key_file: None,
            requestheader_client_ca_file: None,
            allowed_names: vec!["front-proxy-client".into()],
            username_headers: vec!["X-Remote-User".into()],
            group_headers: vec!["X-Remote-Group".into()],
            extra_headers_prefix: vec!["X-Remote-Extra-".into()],
            uid_headers: Vec::new(),
        }
    }
}

pub const CONFIGMAP_NAMESPACE: &str = "kube-system";
pub const CONFIGMAP_NAME: &str = "extension-apiserver-authentication";

/// The resolved front-proxy settings: flags, else the generated PKI.
pub struct FrontProxy {
    /// Presented to extension servers when proxying.
    pub client: CertPair,
    /// Signs `client`; extension servers verify the proxy against it.
    pub requestheader_ca_pem: String,
    pub config: FrontProxyConfig,
}

fn read(path: &std::path::Path, flag: &str) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {flag} {}", path.display()))
}

impl FrontProxy {
    pub fn resolve(config: &FrontProxyConfig, pki: &Pki) -> Result<FrontProxy> {
        let client = match (
            &config.proxy_client_cert_file,
            &config.proxy_client_key_file,
        ) {
            (Some(c), Some(k)) => CertPair {
                cert_pem: read(c, "--proxy-client-cert-file")?,
                key_pem: read(k, "--proxy-client-key-file")?,
            },
            (None, None) => pki.front_proxy_client.clone(),
            _ => {
                return Err(anyhow!(
                    "--proxy-client-cert-file and --proxy-client-key-file must be given together"
                ));
            }
        };
        let requestheader_ca_pem = match &config.requestheader_client_ca_file {
            Some(path) => read(path, "--requestheader-client-ca-file")?,
            None => pki.front_proxy_ca.cert_pem.clone(),
        };
        Ok(FrontProxy {
            client,
            requestheader_ca_pem,
            config: config.clone(),
        })
    }

    /// `kube-system/extension-apiserver-authentication`; `client_ca_pem` is the
    /// bundle that verifies client certificates (list values are JSON arrays, as
    /// upstream writes them).
    pub fn authentication_configmap(&self, client_ca_pem: &str) -> Value {
        let list = |v: &[String]| serde_json::to_string(v).unwrap_or_else(|_| "[]".into());
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": CONFIGMAP_NAME, "namespace": CONFIGMAP_NAMESPACE},
            "data": {
                "client-ca-file": client_ca_pem,
                "requestheader-client-ca-file": self.requestheader_ca_pem,
                "requestheader-allowed-names": list(&self.config.allowed_names),
                "requestheader-username-headers": list(&self.config.username_headers),
                "requestheader-group-headers": list(&self.config.group_headers),
                "requestheader-extra-headers-prefix": list(&self.config.extra_headers_prefix),
                "requestheader-uid-headers": list(&self.config.uid_headers),
            },
        })
    }
}
