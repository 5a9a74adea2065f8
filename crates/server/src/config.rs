//! Server configuration (what `kubext serve` flags turn into).

use std::net::IpAddr;
use std::path::PathBuf;
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
    pub tls_cert_file: Option<PathBuf>,
    pub tls_private_key_file: Option<PathBuf>,
    pub client_ca_file: Option<PathBuf>,
    pub token_auth_file: Option<PathBuf>,
    pub compaction_interval: Duration,
    pub bookmark_interval: Duration,
    pub shutdown_grace: Duration,
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
            tls_cert_file: None,
            tls_private_key_file: None,
            client_ca_file: None,
            token_auth_file: None,
            compaction_interval: Duration::from_secs(300),
            bookmark_interval: Duration::from_secs(60),
            shutdown_grace: Duration::from_secs(10),
        }
    }
}
