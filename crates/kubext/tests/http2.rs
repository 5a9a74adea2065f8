//! Many watches multiplexed over one HTTP/2 connection (ALPN h2), as client-go does.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::sync::Arc;
use std::time::Duration;
use testkit::Server;

const WATCHERS: usize = 200;

/// An HTTP/2-only TLS connection authenticated with the admin certificate.
async fn h2_connection(server: &Server) -> hyper::client::conn::http2::SendRequest<Full<Bytes>> {
    let mut config = common::admin_tls_config(server);
    config.alpn_protocols = vec![b"h2".to_vec()];
    let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .unwrap();
    assert_eq!(
        tls.get_ref().1.alpn_protocol(),
        Some(&b"h2"[..]),
        "server must negotiate h2"
    );
    let (send, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
            .await
            .unwrap();
    tokio::spawn(conn);
    send
}

#[tokio::test]
async fn many_watches_share_one_http2_connection() {
    let server = Server::builder().start().unwrap();
    let send = h2_connection(&server).await;
    let uri = |path: &str| format!("https://localhost:{}{path}", server.addr.port());
    let mut watches = Vec::new();
    for _ in 0..WATCHERS {
        let mut send = send.clone();
        let req = http::Request::get(uri(
            "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=0&timeoutSeconds=30",
        ))
        .body(Full::new(Bytes::new()))
        .unwrap();
        watches.push(tokio::spawn(async move {
            let mut body = send.send_request(req).await.unwrap().into_body();
            let mut seen = Vec::new();
            while let Some(frame) = body.frame().await {
                if let Ok(data) = frame.unwrap().into_data() {
                    seen.extend_from_slice(&data);
                    if String::from_utf8_lossy(&seen).contains("\"name\":\"multiplexed\"") {
                        return true;
                    }
                }
            }
            false
        }));
    }
    // Create through the same connection once every watch is open.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut create = send.clone();
    let body = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"multiplexed"}}"#;
    let req = http::Request::post(uri("/api/v1/namespaces/default/configmaps"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    let resp = create.send_request(req).await.unwrap();
    assert_eq!(resp.status(), 201);
    for w in watches {
        assert!(
            tokio::time::timeout(Duration::from_secs(20), w)
                .await
                .unwrap()
                .unwrap(),
            "a watcher missed the event"
        );
    }
}
