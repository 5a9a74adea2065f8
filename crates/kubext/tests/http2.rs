//! Watches over HTTP/2 (ALPN h2), as client-go makes them: many multiplexed over one
//! connection, and bursts of events framed in several shared buffers.
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

#[tokio::test]
async fn a_burst_of_small_and_large_events_arrives_whole_over_http2() {
    const BURST: usize = 40;
    let server = Server::builder().start().unwrap();
    let send = h2_connection(&server).await;
    let uri = |path: &str| format!("https://localhost:{}{path}", server.addr.port());
    let request = |method: http::Method, path: &str, body: String| {
        http::Request::builder()
            .method(method)
            .uri(uri(path))
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body)))
            .unwrap()
    };
    let list = send
        .clone()
        .send_request(request(
            http::Method::GET,
            "/api/v1/namespaces/default/configmaps",
            String::new(),
        ))
        .await
        .unwrap();
    let list: serde_json::Value =
        serde_json::from_slice(&list.into_body().collect().await.unwrap().to_bytes()).unwrap();
    let rv = list["metadata"]["resourceVersion"].as_str().unwrap();
    let watch = send
        .clone()
        .send_request(request(
            http::Method::GET,
            &format!(
                "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}&timeoutSeconds=60"
            ),
            String::new(),
        ))
        .await
        .unwrap();
    assert_eq!(watch.status(), 200);
    let creates = (0..BURST).map(|i| {
        let mut send = send.clone();
        let body = serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("burst-{i}")},
            "data": {"payload": common::burst_payload(i)},
        });
        let req = request(
            http::Method::POST,
            "/api/v1/namespaces/default/configmaps",
            body.to_string(),
        );
        async move { send.send_request(req).await.unwrap().status() }
    });
    for status in futures::future::join_all(creates).await {
        assert_eq!(status, 201);
    }
    let mut body = watch.into_body();
    let mut stream = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    while seen.len() < BURST {
        let frame = tokio::time::timeout(Duration::from_secs(20), body.frame())
            .await
            .expect("watch stalled")
            .expect("watch ended")
            .unwrap();
        let Ok(data) = frame.into_data() else {
            continue;
        };
        stream.extend_from_slice(&data);
        while let Some(end) = stream.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = stream.drain(..=end).collect();
            let event: serde_json::Value = serde_json::from_slice(&line).unwrap();
            assert_eq!(event["type"], "ADDED");
            let name = event["object"]["metadata"]["name"].as_str().unwrap();
            let i: usize = name["burst-".len()..].parse().unwrap();
            assert_eq!(
                event["object"]["data"]["payload"],
                common::burst_payload(i),
                "object {i}"
            );
            assert!(seen.insert(i), "object {i} twice");
        }
    }
}
