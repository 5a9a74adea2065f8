//! Serving configuration: what kube-apiserver's serving, storage and
//! authentication flags turn into.

use std::net::IpAddr;
use std::path::PathBuf;

use crate::front_proxy::FrontProxyConfig;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageKind {
    Embedded,
    Memory,
    Etcd,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub data_dir: PathBuf,
    pub bind_address: IpAddr,
    /// 0 picks a free port.
    pub secure_port: u16,
    pub storage: StorageKind,
    pub etcd_servers: Vec<String>,
    pub etcd_prefix: String,
    /// TLS to `https://` etcd endpoints (kube-apiserver's `--etcd-cafile`,
    /// `--etcd-certfile`, `--etcd-keyfile`).
    pub etcd_tls: EtcdTlsFiles,
    pub tls_cert_file: Option<PathBuf>,
    pub tls_private_key_file: Option<PathBuf>,
    pub client_ca_file: Option<PathBuf>,
    pub token_auth_file: Option<PathBuf>,
    pub compaction_interval: Duration,
    pub bookmark_interval: Duration,
    /// `--shutdown-delay-duration` and the other termination flags.
    pub shutdown: crate::lifecycle::ShutdownOptions,
    pub front_proxy: FrontProxyConfig,
    /// Service-account token issuing and checking.
    pub service_accounts: crate::serviceaccounts::ServiceAccountConfig,
    /// Extra names for the generated serving certificate (e.g. `api.wardle.svc`, the
    /// name an aggregator verifies an extension server's certificate against).
    pub serving_hosts: Vec<String>,
    /// Bound on non-long-running requests (`--request-timeout`).
    pub request_timeout: Duration,
    /// Requests without credentials are `system:anonymous` (`--anonymous-auth`).
    pub anonymous_auth: bool,
    pub audit: AuditConfig,
}

/// `--audit-policy-file` and `--audit-log-*`.
#[derive(Debug, Clone, Default)]
pub struct AuditConfig {
    pub policy_file: Option<PathBuf>,
    pub log: Option<crate::audit::LogOptions>,
}

/// PEM files for TLS to etcd; without `ca_file` the system's roots are trusted.
#[derive(Debug, Clone, Default)]
pub struct EtcdTlsFiles {
    pub ca_file: Option<PathBuf>,
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            data_dir: PathBuf::from("kubext-data"),
            bind_address: IpAddr::from([127, 0, 0, 1]),
            secure_port: 6443,
            storage: StorageKind::Embedded,
            etcd_servers: vec!["http://127.0.0.1:2379".into()],
            etcd_prefix: "/registry".into(),
            etcd_tls: EtcdTlsFiles::default(),
            tls_cert_file: None,
            tls_private_key_file: None,
            client_ca_file: None,
            token_auth_file: None,
            compaction_interval: Duration::from_secs(300),
            bookmark_interval: Duration::from_secs(60),
            request_timeout: Duration::from_secs(60),
            anonymous_auth: true,
            audit: AuditConfig::default(),
            shutdown: Default::default(),
            front_proxy: FrontProxyConfig::default(),
            serving_hosts: Vec::new(),
            service_accounts: Default::default(),
        }
    }
}
