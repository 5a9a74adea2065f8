//! kubext as a drop-in `kube-apiserver`: invoked under that name (a symlink
//! in controller-runtime envtest's `KUBEBUILDER_ASSETS`), it takes
//! kube-apiserver's command line without the `serve` subcommand, finds its
//! serving certificate in `--cert-dir`, keeps its state there, and uses the
//! etcd given by `--etcd-servers` when one answers, else its embedded store.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The name envtest (and scripts written for kube-apiserver) run.
const KUBE_APISERVER: &str = "kube-apiserver";

/// Whether the binary was started as `kube-apiserver`.
pub fn invoked_as_kube_apiserver() -> bool {
    std::env::args_os()
        .next()
        .as_deref()
        .and_then(|a| Path::new(a).file_name())
        .is_some_and(|name| name == KUBE_APISERVER)
}

/// The command line as `kubext` parses it: `serve` inserted when the binary
/// was started as `kube-apiserver`.
pub fn command_line() -> Vec<OsString> {
    let mut args: Vec<OsString> = std::env::args_os().collect();
    if invoked_as_kube_apiserver() {
        args.insert(1, "serve".into());
    }
    args
}

/// kube-apiserver reads `apiserver.crt`/`apiserver.key` from `--cert-dir`.
pub fn serving_certificate(cert_dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let (cert, key) = (
        cert_dir.join("apiserver.crt"),
        cert_dir.join("apiserver.key"),
    );
    (cert.is_file() && key.is_file()).then_some((cert, key))
}

/// How long an etcd endpoint has to answer before kubext keeps its own store.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Whether the first of `endpoints` is an etcd: a plain-HTTP endpoint must
/// answer `/version` as etcd does (envtest's `etcd` asset may be a stand-in
/// that only answers `/health`); HTTPS endpoints are taken as etcd (not probed:
/// that needs `--etcd-cafile` and the client certificate, and connecting reports
/// what fails).
pub async fn answers_as_etcd(endpoints: &[String]) -> bool {
    let Some(endpoint) = endpoints.first() else {
        return false;
    };
    let Some(address) = endpoint.strip_prefix("http://") else {
        return endpoint.starts_with("https://");
    };
    let address = address.trim_end_matches('/');
    tokio::time::timeout(PROBE_TIMEOUT, etcd_version(address))
        .await
        .ok()
        .flatten()
        .is_some_and(|body| body.contains("etcdserver"))
}

async fn etcd_version(address: &str) -> Option<String> {
    let mut stream = tokio::net::TcpStream::connect(address).await.ok()?;
    let request = format!("GET /version HTTP/1.0\r\nHost: {address}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut body = Vec::new();
    stream.take(8192).read_to_end(&mut body).await.ok()?;
    Some(String::from_utf8_lossy(&body).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_silent_or_foreign_endpoint_is_not_etcd() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let _ = conn
                    .write_all(b"HTTP/1.0 200 OK\r\n\r\n{\"health\":\"true\"}")
                    .await;
            }
        });
        assert!(!answers_as_etcd(&[format!("http://{address}")]).await);
        assert!(!answers_as_etcd(&[]).await);
    }
}
