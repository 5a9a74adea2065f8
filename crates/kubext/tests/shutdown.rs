//! Graceful termination for rolling restarts, in kube-apiserver's order: on
//! SIGTERM `/readyz` fails its `shutdown` check at once while requests are
//! served through `--shutdown-delay-duration`; then the listener closes,
//! watches end cleanly, requests in flight finish, and the process exits 0.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use testkit::Server;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const DELAY: Duration = Duration::from_secs(3);

/// `GET path`: the status code and body, or `None` when no answer came.
async fn get(client: &kube::Client, path: &str) -> Option<(u16, String)> {
    let req = http::Request::get(path).body(Vec::new()).unwrap();
    let resp = tokio::time::timeout(Duration::from_secs(2), client.send(req.map(Into::into)))
        .await
        .ok()?
        .ok()?;
    let code = resp.status().as_u16();
    let body = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .ok()?
        .to_bytes();
    Some((code, String::from_utf8_lossy(&body).into_owned()))
}

/// A TLS connection to `server` as the admin.
async fn tls(
    server_addr: std::net::SocketAddr,
    config: Arc<rustls::ClientConfig>,
) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
    let tcp = TcpStream::connect(server_addr).await?;
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    tokio_rustls::TlsConnector::from(config)
        .connect(name, tcp)
        .await
}

/// Read an HTTP/1.1 response until the server closes the connection.
async fn read_to_close<S: tokio::io::AsyncRead + Unpin>(stream: &mut S) -> String {
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_drains_like_kube_apiserver() {
    let mut server = Server::builder()
        .arg(format!("--shutdown-delay-duration={}s", DELAY.as_secs()))
        .start()
        .unwrap();
    let client = server.client().await.unwrap();
    let addr = server.addr;
    let tls_config = Arc::new(common::admin_tls_config(&server));
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let rv = common::listed_resource_version(&configmaps).await;
    let sigterm_at = Instant::now() + Duration::from_millis(500);

    // An open watch: it sees what is written during the delay, then ends cleanly.
    let mut stream = configmaps
        .watch(&WatchParams::default().timeout(300), &rv)
        .await
        .unwrap()
        .boxed();
    let watching = tokio::spawn(async move {
        let mut seen = Vec::new();
        loop {
            match stream.try_next().await {
                Ok(Some(WatchEvent::Added(cm))) => seen.push(cm.metadata.name.unwrap()),
                Ok(Some(WatchEvent::Error(e))) => {
                    return (seen, Err(format!("{e:?}")), Instant::now());
                }
                Ok(Some(_)) => {}
                Ok(None) => return (seen, Ok(()), Instant::now()),
                Err(e) => return (seen, Err(e.to_string()), Instant::now()),
            }
        }
    });

    // A steady trickle of writes over the kept-alive connection.
    let writes = {
        let configmaps = configmaps.clone();
        tokio::spawn(async move {
            let mut results = Vec::new();
            for i in 0.. {
                let started = Instant::now();
                if started > sigterm_at + DELAY + Duration::from_secs(1) {
                    break;
                }
                let cm = common::cm(&format!("during-{i}"));
                let result = tokio::time::timeout(
                    Duration::from_secs(3),
                    configmaps.create(&PostParams::default(), &cm),
                )
                .await;
                results.push((started, matches!(result, Ok(Ok(_)))));
                tokio::time::sleep(Duration::from_millis(150)).await;
            }
            results
        })
    };

    // /readyz polled as a load balancer does.
    let probes = {
        let client = client.clone();
        tokio::spawn(async move {
            let mut seen = Vec::new();
            while Instant::now() < sigterm_at + DELAY - Duration::from_millis(500) {
                let at = Instant::now();
                seen.push((at, get(&client, "/readyz").await));
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            seen
        })
    };

    // A request in flight across the end of the delay: its body arrives after
    // the server stopped accepting, and it is still answered.
    let in_flight = {
        let tls_config = tls_config.clone();
        tokio::spawn(async move {
            let body = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"in-flight"}}"#;
            let mut conn = tls(addr, tls_config.clone()).await.unwrap();
            let head = format!(
                "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: localhost\r\n\
                 Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                body.len()
            );
            conn.write_all(head.as_bytes()).await.unwrap();
            conn.write_all(&body[..10]).await.unwrap();
            conn.flush().await.unwrap();
            tokio::time::sleep_until((sigterm_at + DELAY + Duration::from_millis(700)).into())
                .await;
            // New connections are refused by now.
            let refused = tls(addr, tls_config).await.is_err();
            conn.write_all(&body[10..]).await.unwrap();
            conn.flush().await.unwrap();
            (refused, read_to_close(&mut conn).await)
        })
    };

    // Looked at once during the delay: liveness, verbose readiness, a new client.
    let during = {
        let kubeconfig = server.kubeconfig.clone();
        let client = client.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until((sigterm_at + Duration::from_secs(1)).into()).await;
            let livez = get(&client, "/livez").await;
            let verbose = get(&client, "/readyz?verbose").await;
            let single = get(&client, "/readyz/shutdown").await;
            let config = kube::Config::from_custom_kubeconfig(
                kube::config::Kubeconfig::read_from(&kubeconfig).unwrap(),
                &Default::default(),
            )
            .await
            .unwrap();
            let fresh = kube::Client::try_from(config).unwrap();
            let fresh_ok = Api::<ConfigMap>::namespaced(fresh, "default")
                .list(&ListParams::default())
                .await
                .is_ok();
            (livez, verbose, single, fresh_ok)
        })
    };

    let (status, exited_at) = tokio::task::spawn_blocking(move || {
        std::thread::sleep(sigterm_at.saturating_duration_since(Instant::now()));
        let status = server.terminate(Duration::from_secs(20)).unwrap();
        (status, Instant::now())
    })
    .await
    .unwrap();

    assert!(status.success(), "exit status {status:?}");
    let took = exited_at - sigterm_at;
    assert!(
        took >= DELAY && took < DELAY + Duration::from_secs(5),
        "exited {took:?} after SIGTERM"
    );

    // Unready at once, with upstream's body; ready before.
    let probes = probes.await.unwrap();
    let first_unready = probes
        .iter()
        .find(|(_, answer)| answer.as_ref().is_some_and(|(code, _)| *code == 500))
        .expect("/readyz went 500");
    assert!(
        first_unready.0 < sigterm_at + Duration::from_millis(300),
        "/readyz 500 only {:?} after SIGTERM",
        first_unready.0 - sigterm_at
    );
    assert_eq!(
        first_unready.1.as_ref().unwrap().1,
        "[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]kubext-ready ok\n\
         [-]shutdown failed: reason withheld\nreadyz check failed\n"
    );
    for (at, answer) in &probes {
        let code = answer.as_ref().map(|(code, _)| *code);
        if *at < sigterm_at - Duration::from_millis(50) {
            assert_eq!(code, Some(200), "/readyz before SIGTERM");
        } else if *at > sigterm_at + Duration::from_millis(300) {
            assert_eq!(code, Some(500), "/readyz during the delay");
        }
    }

    let (livez, verbose, single, fresh_ok) = during.await.unwrap();
    assert_eq!(
        livez,
        Some((200, "ok".to_string())),
        "/livez during the delay"
    );
    let (code, body) = verbose.unwrap();
    assert_eq!(code, 500);
    assert!(
        body.contains("[-]shutdown failed: reason withheld\n"),
        "{body}"
    );
    assert_eq!(
        single,
        Some((
            500,
            "internal server error: process is shutting down\n".to_string()
        ))
    );
    assert!(fresh_ok, "a new connection during the delay is served");

    // Writes during the delay all succeeded.
    let writes = writes.await.unwrap();
    let during_delay: Vec<_> = writes
        .iter()
        .filter(|(at, _)| *at > sigterm_at && *at < sigterm_at + DELAY - Duration::from_millis(300))
        .collect();
    assert!(
        during_delay.len() >= 8,
        "{} writes during the delay",
        during_delay.len()
    );
    assert!(
        during_delay.iter().all(|(_, ok)| *ok),
        "every write during the delay succeeded: {during_delay:?}"
    );

    // The watch saw them, and ended cleanly once the delay was over.
    let (seen, end, ended_at) = watching.await.unwrap();
    assert_eq!(end, Ok(()), "the watch ended cleanly");
    assert!(
        ended_at >= sigterm_at + DELAY,
        "the watch ended {:?} after SIGTERM, before the delay was over",
        ended_at - sigterm_at
    );
    // (A write acknowledged in the last instant may reach the watch after it
    // ended: its client resumes from the last resourceVersion elsewhere.)
    for (i, (at, ok)) in writes.iter().enumerate() {
        if *ok && *at < sigterm_at + DELAY - Duration::from_millis(300) {
            let name = format!("during-{i}");
            assert!(seen.contains(&name), "the watch saw {name}: {seen:?}");
        }
    }

    let (refused, answer) = in_flight.await.unwrap();
    assert!(refused, "a new connection after the delay was refused");
    assert!(
        answer.starts_with("HTTP/1.1 201"),
        "the in-flight request was answered: {answer}"
    );
}

/// With `--shutdown-send-retry-after`, the listener stays open after the delay
/// while requests are in flight, and new requests get upstream's 429.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn send_retry_after_answers_429_until_drained() {
    let mut server = Server::builder()
        .arg("--shutdown-delay-duration=1s")
        .arg("--shutdown-send-retry-after")
        .start()
        .unwrap();
    let addr = server.addr;
    let tls_config = Arc::new(common::admin_tls_config(&server));
    // Keeps a request in flight until its body arrives.
    let body = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"slow"}}"#;
    let mut slow = tls(addr, tls_config.clone()).await.unwrap();
    let head = format!(
        "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: localhost\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    slow.write_all(head.as_bytes()).await.unwrap();
    slow.write_all(&body[..10]).await.unwrap();
    slow.flush().await.unwrap();

    let terminated = tokio::task::spawn_blocking(move || server.terminate(Duration::from_secs(20)));
    tokio::time::sleep(Duration::from_millis(1600)).await;
    let ask = |path: &'static str| {
        let tls_config = tls_config.clone();
        async move {
            let mut conn = tls(addr, tls_config).await.unwrap();
            let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n");
            conn.write_all(request.as_bytes()).await.unwrap();
            read_to_close(&mut conn).await
        }
    };
    let refused = ask("/api/v1/namespaces").await;
    let head = refused.to_ascii_lowercase();
    assert!(refused.starts_with("HTTP/1.1 429"), "{refused}");
    assert!(head.contains("\r\nretry-after: 5\r\n"), "{refused}");
    assert!(head.contains("\r\nconnection: close\r\n"), "{refused}");
    assert!(
        refused.ends_with("\r\n\r\nThe apiserver is shutting down, please try again later.\n"),
        "{refused}"
    );
    // Probes are still answered.
    let probe = ask("/livez").await;
    assert!(probe.starts_with("HTTP/1.1 200"), "{probe}");

    slow.write_all(&body[10..]).await.unwrap();
    slow.flush().await.unwrap();
    let answer = read_to_close(&mut slow).await;
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
    let status = terminated.await.unwrap().unwrap();
    assert!(status.success(), "exit status {status:?}");
}
