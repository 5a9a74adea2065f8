//! Connection upgrades (what `kubectl exec`/`port-forward` use) pass through the
//! aggregator: a client's `Connection: Upgrade` request reaches the extension
//! server, its `101 Switching Protocols` comes back, and bytes then flow both ways.
//! The extension server here is a minimal one written for this test: kubext itself
//! serves no upgradable resource.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::rt::TokioIo;
use testkit::Server;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const DISCOVERY: &str = r#"{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"echo.example.com/v1","resources":[{"name":"pipes","singularName":"pipe","namespaced":true,"kind":"Pipe","verbs":["get"]}]}"#;

/// Answers discovery, and switches `Upgrade: echo` requests to a byte echo.
async fn echo_server() -> u16 {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".into()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(
                    |mut req: http::Request<hyper::body::Incoming>| async move {
                        if req.headers().get("upgrade").map(|v| v.as_bytes()) == Some(b"echo") {
                            let upgrade = hyper::upgrade::on(&mut req);
                            tokio::spawn(async move {
                                let mut io = TokioIo::new(upgrade.await.unwrap());
                                let mut buf = [0u8; 64];
                                while let Ok(n) = io.read(&mut buf).await {
                                    if n == 0 || io.write_all(&buf[..n]).await.is_err() {
                                        break;
                                    }
                                }
                            });
                            let resp = http::Response::builder()
                                .status(101)
                                .header("connection", "Upgrade")
                                .header("upgrade", "echo")
                                .body(Full::new(Bytes::new()))
                                .unwrap();
                            return Ok::<_, Infallible>(resp);
                        }
                        let resp = http::Response::builder()
                            .header("content-type", "application/json")
                            .body(Full::new(Bytes::from(DISCOVERY)))
                            .unwrap();
                        Ok(resp)
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), service)
                    .with_upgrades()
                    .await;
            });
        }
    });
    port
}

/// A raw HTTP/1.1 TLS connection to kubext as the admin.
async fn admin_tls(server: &Server) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    let config = common::admin_tls_config(server);
    let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(
            rustls::pki_types::ServerName::try_from("localhost").unwrap(),
            tcp,
        )
        .await
        .unwrap()
}

// Multi-threaded: the in-process echo server answers while kubectl blocks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upgrades_pass_through_the_aggregator() {
    let server = Server::builder().start().unwrap();
    let port = echo_server().await;
    server.apply(&testkit::extension_registration(
        "default",
        "echo",
        "echo.example.com",
        "v1",
        port,
        testkit::BackendTls::Insecure,
    ));
    server.kubectl_ok(&[
        "wait",
        "--for=condition=Available",
        "apiservice/v1.echo.example.com",
        "--timeout=30s",
    ]);

    let mut tls = admin_tls(&server).await;
    tls.write_all(
        b"GET /apis/echo.example.com/v1/namespaces/default/pipes/one/attach HTTP/1.1\r\n\
          Host: localhost\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n",
    )
    .await
    .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(10), tls.read(&mut byte))
            .await
            .expect("the switch arrives")
            .unwrap();
        assert_eq!(
            n,
            1,
            "connection closed after {:?}",
            String::from_utf8_lossy(&head)
        );
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head);
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    assert!(
        head.to_ascii_lowercase().contains("upgrade: echo"),
        "{head}"
    );
    for message in [&b"ping"[..], b"pong and more"] {
        tls.write_all(message).await.unwrap();
        let mut echoed = vec![0u8; message.len()];
        tokio::time::timeout(Duration::from_secs(10), tls.read_exact(&mut echoed))
            .await
            .expect("the echo arrives")
            .unwrap();
        assert_eq!(echoed, message);
    }
}
