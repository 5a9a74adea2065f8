//! Connection-level faults are bounded as in kube-apiserver: connections that
//! never finish a handshake or a request's headers are closed after its 32 s
//! `ReadHeaderTimeout` (an idle keep-alive connection is kept for its 90 s
//! `IdleTimeout`), a body that never arrives ends with `--request-timeout`,
//! and running out of file descriptors neither spins the accept loop nor stops
//! the server for good. The cipher suite is chosen as Go's TLS chooses it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};
use testkit::Server;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Upstream's `ReadHeaderTimeout`, and how late a close may come.
const READ_HEADER_TIMEOUT: Duration = Duration::from_secs(32);
const SLACK: Duration = Duration::from_secs(6);

/// How long until the peer closes `stream` (reading and dropping whatever it sends).
async fn closed_after<S: tokio::io::AsyncRead + Unpin>(
    stream: &mut S,
    limit: Duration,
) -> Duration {
    let started = Instant::now();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(
            limit.saturating_sub(started.elapsed()),
            stream.read(&mut buf),
        )
        .await
        {
            Ok(Ok(0)) | Ok(Err(_)) => return started.elapsed(),
            Ok(Ok(_)) => continue,
            Err(_) => panic!("the connection was still open after {limit:?}"),
        }
    }
}

async fn tls(server: &Server) -> tokio_rustls::client::TlsStream<TcpStream> {
    tls_over(server, TcpStream::connect(server.addr).await.unwrap()).await
}

/// A TLS connection whose socket takes in little: the server's sends back up soon
/// after the client stops reading, as over a slow network.
async fn tls_small_window(server: &Server) -> tokio_rustls::client::TlsStream<TcpStream> {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    tls_over(server, socket.connect(server.addr).await.unwrap()).await
}

async fn tls_over(server: &Server, tcp: TcpStream) -> tokio_rustls::client::TlsStream<TcpStream> {
    let connector =
        tokio_rustls::TlsConnector::from(std::sync::Arc::new(common::admin_tls_config(server)));
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    connector.connect(name, tcp).await.unwrap()
}

#[tokio::test]
async fn silent_and_trickling_connections_are_closed_after_the_header_timeout() {
    let server = Server::builder().start().unwrap();
    let limit = READ_HEADER_TIMEOUT + SLACK;
    // No ClientHello at all.
    let silent_tcp = async {
        let mut tcp = TcpStream::connect(server.addr).await.unwrap();
        closed_after(&mut tcp, limit).await
    };
    // A TLS session that never sends a request.
    let silent_tls = async {
        let mut stream = tls(&server).await;
        closed_after(&mut stream, limit).await
    };
    // Request headers a byte a second (HTTP/1.1 over TLS).
    let trickle = async {
        let stream = tls(&server).await;
        let (mut reader, mut writer) = tokio::io::split(stream);
        let head = b"GET /api/v1/namespaces HTTP/1.1\r\nHost: localhost\r\nX-Slow: ";
        let writing = async move {
            for byte in head.iter().chain(std::iter::repeat(&b'a')) {
                if writer.write_all(&[*byte]).await.is_err() || writer.flush().await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        };
        tokio::select! {
            _ = writing => panic!("the writer stopped first"),
            closed = closed_after(&mut reader, limit) => closed,
        }
    };
    let (tcp, tls_idle, trickled) = tokio::join!(silent_tcp, silent_tls, trickle);
    for (what, after) in [("tcp", tcp), ("tls", tls_idle), ("trickle", trickled)] {
        assert!(
            after >= READ_HEADER_TIMEOUT - Duration::from_secs(2),
            "{what}: closed too early ({after:?})"
        );
    }
    // The server still serves.
    let client = server.client().await.unwrap();
    assert!(common::whoami(&client).await.is_ok());
}

/// The head and body of one HTTP/1.1 answer with a `Content-Length`.
async fn answer<S: tokio::io::AsyncRead + Unpin>(stream: &mut S) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&got).to_string();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .and_then(|n| n.trim().parse::<usize>().ok())
                .expect("a Content-Length");
            if body.len() >= length {
                return text;
            }
        }
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf))
            .await
            .expect("an answer within 10 s")
            .unwrap();
        assert!(n > 0, "closed without an answer: {text}");
        got.extend_from_slice(&buf[..n]);
    }
}

#[tokio::test]
async fn an_idle_keep_alive_connection_outlives_the_header_timeout() {
    // kube-apiserver keeps an idle keep-alive connection for its 90 s
    // `IdleTimeout`, as clients keep theirs: one idle for longer than the 32 s
    // header timeout still serves the next request.
    let server = Server::builder().start().unwrap();
    let mut stream = tls(&server).await;
    let request = b"GET /version HTTP/1.1\r\nHost: localhost\r\n\r\n";
    for pause in [Duration::ZERO, READ_HEADER_TIMEOUT + SLACK] {
        tokio::time::sleep(pause).await;
        stream.write_all(request).await.unwrap();
        let text = answer(&mut stream).await;
        assert!(text.starts_with("HTTP/1.1 200"), "after {pause:?}: {text}");
        assert!(text.contains("\"gitVersion\""), "{text}");
    }
}

#[tokio::test]
async fn request_heads_up_to_the_http1_buffer_are_served_larger_ones_get_431() {
    // The HTTP/1 buffer that bounds what a watcher that stops reading holds
    // (64 KiB) also bounds request heads: a 48 KiB header (far beyond
    // bearer tokens and impersonation headers) is served; a 128 KiB one is
    // refused as Go refuses heads beyond its limit, 431.
    let server = Server::builder().start().unwrap();
    for (size, status) in [(48 * 1024, "200"), (128 * 1024, "431")] {
        let stream = tls(&server).await;
        let request = format!(
            "GET /version HTTP/1.1\r\nHost: localhost\r\nX-Padding: {}\r\n\r\n",
            "a".repeat(size)
        );
        // The server answers 431 and closes without reading the rest of a
        // head it refuses, so the write may fail with a broken pipe: write
        // and read at once, and judge by the answer alone.
        let (mut reader, mut writer) = tokio::io::split(stream);
        let write = async {
            let written = writer.write_all(request.as_bytes()).await;
            written.is_ok()
        };
        let read = async {
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = tokio::time::timeout(Duration::from_secs(10), reader.read(&mut buf))
                    .await
                    .expect("an answer within 10 s")
                    .unwrap_or(0);
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
            got
        };
        let (written, got) = tokio::join!(write, read);
        assert!(
            written || status == "431",
            "a {size}-byte head was not taken in"
        );
        let text = String::from_utf8_lossy(&got);
        assert!(
            text.starts_with(&format!("HTTP/1.1 {status}")),
            "a {size}-byte header: {text}"
        );
    }
}

#[tokio::test]
async fn a_body_that_never_arrives_ends_with_the_request_timeout() {
    let server = Server::builder()
        .arg("--request-timeout=2s")
        .start()
        .unwrap();
    let mut stream = tls(&server).await;
    let head = "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"metadata\":";
    stream.write_all(head.as_bytes()).await.unwrap();
    let started = Instant::now();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&answer).contains("\"code\":504") {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf))
            .await
            .expect("an answer within 10 s")
            .unwrap();
        assert!(
            n > 0,
            "closed without an answer: {}",
            String::from_utf8_lossy(&answer)
        );
        answer.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 504"), "{text}");
    assert!(
        text.contains(r#"{"metadata":{},"status":"Failure","message":"Timeout: request did not complete within the allotted timeout","reason":"Timeout","details":{},"code":504}"#),
        "{text}"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
}

/// `Max open files` soft and hard limits of a process.
fn open_files_limits(pid: u32) -> (String, String) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    let fields: Vec<&str> = line.split_whitespace().collect();
    (fields[3].to_string(), fields[4].to_string())
}

/// User plus system CPU time of a process, from `/proc/<pid>/stat` (in ticks).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

#[tokio::test]
async fn running_out_of_file_descriptors_backs_off_and_recovers() {
    // A low hard limit (the server raises its soft limit to it, as Go does).
    let dir = tempfile::tempdir().unwrap();
    let wrapper = dir.path().join("kubext-limited");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec prlimit --nofile=64:128 {} \"$@\"\n",
            testkit::kubext_binary().unwrap().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let server = Server::builder().binary(&wrapper).start().unwrap();
    let pid = server.pid().unwrap();
    assert_eq!(open_files_limits(pid), ("128".into(), "128".into()));

    // Hold more connections than the server has descriptors for.
    let mut held = Vec::new();
    for _ in 0..200 {
        if let Ok(Ok(tcp)) =
            tokio::time::timeout(Duration::from_secs(2), TcpStream::connect(server.addr)).await
        {
            held.push(tcp);
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = cpu_ticks(pid);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let spent = cpu_ticks(pid) - before;
    // A spinning accept loop burns ~300 ticks (100 Hz) in 3 s.
    assert!(
        spent < 60,
        "the server spent {spent} ticks in 3 s while out of descriptors"
    );

    drop(held);
    let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> =
        kube::Api::all(server.client().await.unwrap());
    let deadline = Instant::now() + Duration::from_secs(40);
    while namespaces.list(&Default::default()).await.is_err() {
        assert!(Instant::now() < deadline, "the server did not recover");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// RSS growth of a fresh server while `watchers` clients watch ConfigMaps and
/// never read, and 2,000 ConfigMaps of 8 KiB are created (more than socket
/// buffers and a watcher's queue hold, so the cache gives up on every watcher).
async fn rss_growth_with_stalled_watchers(watchers: usize) -> u64 {
    let server = Server::builder().start().unwrap();
    let pid = server.pid().unwrap();
    let mut stalled = Vec::new();
    for _ in 0..watchers {
        let mut stream = tls_small_window(&server).await;
        stream
            .write_all(b"GET /api/v1/namespaces/default/configmaps?watch=true HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .await
            .unwrap();
        stalled.push(stream);
    }
    let before = rss_kib(pid);
    let cms: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::namespaced(server.client().await.unwrap(), "default");
    let payload = "x".repeat(8 * 1024);
    for i in 0..2000 {
        let mut cm = common::cm(&format!("cm-{i}"));
        cm.data = Some([("k".to_string(), payload.clone())].into());
        cms.create(&Default::default(), &cm).await.unwrap();
    }
    // Let every watcher be ended (the pump notices within a second).
    tokio::time::sleep(Duration::from_secs(2)).await;
    let growth = rss_kib(pid).saturating_sub(before);
    drop(stalled);
    growth
}

#[tokio::test]
async fn watchers_that_never_read_cost_a_bounded_amount() {
    const WATCHERS: u64 = 200;
    let baseline = rss_growth_with_stalled_watchers(0).await;
    let with_watchers = rss_growth_with_stalled_watchers(WATCHERS as usize).await;
    let per_watcher = with_watchers.saturating_sub(baseline) / WATCHERS;
    // Each watcher may hold a few encoded frames, a TLS send buffer and HTTP
    // buffers, but not copies of the events it fell behind on (which cost
    // ~900 KiB per watcher here before they were bounded).
    assert!(
        per_watcher < 350,
        "{per_watcher} KiB per stalled watcher (baseline growth {baseline} KiB, with watchers {with_watchers} KiB)"
    );
}

/// The suite the server chooses when the client offers `suites` (in that order of
/// preference) over `version`.
async fn negotiated_suite(
    server: &Server,
    suites: &[rustls::CipherSuite],
    version: &'static rustls::SupportedProtocolVersion,
) -> rustls::CipherSuite {
    let mut provider = rustls::crypto::ring::default_provider();
    provider.cipher_suites = suites
        .iter()
        .map(|wanted| {
            *rustls::crypto::ring::ALL_CIPHER_SUITES
                .iter()
                .find(|suite| suite.suite() == *wanted)
                .unwrap()
        })
        .collect();
    let config = common::admin_tls_config_with(server, provider, &[version]);
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let tcp = TcpStream::connect(server.addr).await.unwrap();
    let tls = connector.connect(name, tcp).await.unwrap();
    tls.get_ref().1.negotiated_cipher_suite().unwrap().suite()
}

/// Go's crypto/tls (so kube-apiserver) serves AES-128-GCM to a client that prefers
/// AES-GCM, whichever AES-GCM suite the client lists first, and honours a client that
/// offers only other suites.
#[tokio::test]
async fn the_server_chooses_aes_128_gcm_over_the_clients_order_as_go_does() {
    use rustls::CipherSuite as S;
    let server = Server::builder().start().unwrap();
    let tls13 = &rustls::version::TLS13;
    let tls12 = &rustls::version::TLS12;
    let aes256_first = [
        S::TLS13_AES_256_GCM_SHA384,
        S::TLS13_AES_128_GCM_SHA256,
        S::TLS13_CHACHA20_POLY1305_SHA256,
    ];
    assert_eq!(
        negotiated_suite(&server, &aes256_first, tls13).await,
        S::TLS13_AES_128_GCM_SHA256
    );
    let aes256_only = [S::TLS13_AES_256_GCM_SHA384];
    assert_eq!(
        negotiated_suite(&server, &aes256_only, tls13).await,
        S::TLS13_AES_256_GCM_SHA384
    );
    let chacha_only = [S::TLS13_CHACHA20_POLY1305_SHA256];
    assert_eq!(
        negotiated_suite(&server, &chacha_only, tls13).await,
        S::TLS13_CHACHA20_POLY1305_SHA256
    );
    let tls12_aes256_first = [
        S::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        S::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        S::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        S::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    ];
    let chosen = negotiated_suite(&server, &tls12_aes256_first, tls12).await;
    assert!(
        matches!(
            chosen,
            S::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 | S::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
        ),
        "{chosen:?}"
    );
}

/// A body that arrives in pieces (chunked, or a `Content-Length` body written
/// in parts) is read whole: each piece is a frame of its own on the server.
#[tokio::test]
async fn a_body_sent_in_pieces_is_read_whole() {
    let server = Server::builder().start().unwrap();
    let payload = "x".repeat(3000);
    let body = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"NAME"}},"data":{{"payload":"{payload}"}}}}"#
    );
    let pieces = |body: &str| -> Vec<String> {
        let bytes = body.as_bytes();
        bytes
            .chunks(700)
            .map(|c| String::from_utf8(c.to_vec()).unwrap())
            .collect()
    };
    let path = "/api/v1/namespaces/default/configmaps";
    for (name, chunked) in [("chunked", true), ("in-parts", false)] {
        let body = body.replace("NAME", name);
        let mut stream = tls(&server).await;
        let framing = if chunked {
            "Transfer-Encoding: chunked".to_string()
        } else {
            format!("Content-Length: {}", body.len())
        };
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n{framing}\r\n\r\n"
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.flush().await.unwrap();
        for piece in pieces(&body) {
            let piece = if chunked {
                format!("{:x}\r\n{piece}\r\n", piece.len())
            } else {
                piece
            };
            stream.write_all(piece.as_bytes()).await.unwrap();
            stream.flush().await.unwrap();
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if chunked {
            stream.write_all(b"0\r\n\r\n").await.unwrap();
            stream.flush().await.unwrap();
        }
        let text = answer(&mut stream).await;
        assert!(text.starts_with("HTTP/1.1 201"), "{name}: {text}");
        // The object and Go's encoder's newline, within the Content-Length.
        assert!(text.ends_with("}\n"), "{name}: {text}");
        let client = server.client().await.unwrap();
        let maps: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
            kube::Api::namespaced(client, "default");
        let stored = maps.get(name).await.unwrap();
        assert_eq!(
            stored.data.unwrap_or_default().get("payload"),
            Some(&payload),
            "{name}"
        );
    }
}
