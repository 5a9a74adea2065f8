//! kube-apiserver's `--etcd-cafile`, `--etcd-certfile` and `--etcd-keyfile`, read and
//! checked before connecting: a missing file, a bad PEM or a key that is not the
//! certificate's stops the start naming its flag, instead of surfacing later as a
//! TLS failure on every connection.

use std::path::{Path, PathBuf};

use rustls::pki_types::CertificateDer;

use crate::config::EtcdTlsFiles;

/// What is wrong with one of the flags' files.
#[derive(Debug, thiserror::Error)]
pub enum EtcdTlsError {
    // `error`, not `source`: the message says it already, `{:#}` would repeat it.
    #[error("--{flag} {}: cannot read: {error}", path.display())]
    Read {
        flag: &'static str,
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("--{flag} {}: {why}", path.display())]
    Invalid {
        flag: &'static str,
        path: PathBuf,
        why: String,
    },
    #[error("--etcd-certfile and --etcd-keyfile must be given together")]
    Unpaired,
}

/// The PEM contents of `files`, checked.
pub fn load(files: &EtcdTlsFiles) -> Result<storage::etcd::Tls, EtcdTlsError> {
    let ca = match &files.ca_file {
        Some(path) => {
            let pem = read("etcd-cafile", path)?;
            certificates("etcd-cafile", path, &pem)?;
            Some(pem)
        }
        None => None,
    };
    let identity = match (&files.cert_file, &files.key_file) {
        (Some(cert_path), Some(key_path)) => {
            let cert = read("etcd-certfile", cert_path)?;
            let key = read("etcd-keyfile", key_path)?;
            check_pair(cert_path, &cert, key_path, &key)?;
            Some((cert, key))
        }
        (None, None) => None,
        _ => return Err(EtcdTlsError::Unpaired),
    };
    Ok(storage::etcd::Tls { ca, identity })
}

fn read(flag: &'static str, path: &Path) -> Result<Vec<u8>, EtcdTlsError> {
    std::fs::read(path).map_err(|error| EtcdTlsError::Read {
        flag,
        path: path.to_owned(),
        error,
    })
}

fn invalid(flag: &'static str, path: &Path, why: impl Into<String>) -> EtcdTlsError {
    EtcdTlsError::Invalid {
        flag,
        path: path.to_owned(),
        why: why.into(),
    }
}

/// Every certificate in `pem`, each one parsed (at least one).
fn certificates(
    flag: &'static str,
    path: &Path,
    pem: &[u8],
) -> Result<Vec<CertificateDer<'static>>, EtcdTlsError> {
    let certs = rustls_pemfile::certs(&mut &pem[..])
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(flag, path, format!("bad PEM: {e}")))?;
    if certs.is_empty() {
        return Err(invalid(flag, path, "no PEM certificate in it"));
    }
    for cert in &certs {
        // A trust anchor is what every certificate must at least parse as.
        rustls::RootCertStore::empty()
            .add(cert.clone())
            .map_err(|e| invalid(flag, path, format!("not a valid certificate: {e}")))?;
    }
    Ok(certs)
}

/// The client certificate parses and `key` is its private key.
fn check_pair(
    cert_path: &Path,
    cert: &[u8],
    key_path: &Path,
    key: &[u8],
) -> Result<(), EtcdTlsError> {
    let certs = certificates("etcd-certfile", cert_path, cert)?;
    let der = rustls_pemfile::private_key(&mut &key[..])
        .map_err(|e| invalid("etcd-keyfile", key_path, format!("bad PEM: {e}")))?
        .ok_or_else(|| invalid("etcd-keyfile", key_path, "no PEM private key in it"))?;
    let signing = rustls::crypto::ring::sign::any_supported_type(&der)
        .map_err(|e| invalid("etcd-keyfile", key_path, format!("unusable key: {e}")))?;
    rustls::sign::CertifiedKey::new(certs, signing)
        .keys_match()
        .map_err(|_| {
            let why = format!("not the key of --etcd-certfile {}", cert_path.display());
            invalid("etcd-keyfile", key_path, why)
        })
}
