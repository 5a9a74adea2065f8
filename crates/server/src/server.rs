//! Start-up, the TLS accept loop and graceful shutdown.

use anyhow::{Context, Result, anyhow};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::graceful::GracefulShutdown;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;

use registry::{JsonCodec, Storage};
use storage::{Backend, StoreOptions};

use crate::api::{Api, Serving};
use crate::authn::Authenticator;
use crate::config::{Config, StorageKind};
use crate::front_proxy::FrontProxy;
use crate::lifecycle::Phase;
use crate::pki::{self, Pki};
use crate::response;

/// A started server.
pub struct Running {
    pub addr: SocketAddr,
    pub kubeconfig: PathBuf,
    pub api: Arc<Api>,
    hooks: Vec<PreShutdownHook>,
    /// Tells the accept loop to stop listening, and how long connections
    /// then get to finish.
    stop_listening: tokio::sync::oneshot::Sender<Duration>,
    done: tokio::task::JoinHandle<()>,
}

/// Work that runs when termination starts, before the server stops accepting
/// requests (it may still write through it): upstream's pre-shutdown hooks.
pub struct PreShutdownHook {
    pub name: &'static str,
    pub run: futures::future::BoxFuture<'static, ()>,
}

/// A pre-shutdown hook that has not finished in this long is left behind
/// (upstream's lease controllers bound their clean-up by 10 s too).
const HOOK_TIMEOUT: Duration = Duration::from_secs(10);

/// How long connections get to finish once the listener closed in
/// `--shutdown-send-retry-after` mode (upstream: 2 s, time for HTTP/2's GOAWAY).
const RETRY_AFTER_CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

/// Log one of upstream's `[graceful-termination]` events.
fn termination_event(name: &str, since: Instant) {
    tracing::info!(
        event = name,
        elapsed_ms = since.elapsed().as_millis() as u64,
        "[graceful-termination] shutdown event"
    );
}

impl Running {
    /// Terminate gracefully, in kube-apiserver's order (see `lifecycle`):
    /// unready at once and the pre-shutdown hooks, serving through
    /// `--shutdown-delay-duration`, then no new requests, watches ended,
    /// in-flight requests finished within `--request-timeout`, storage closed.
    pub async fn shutdown(self) {
        let since = Instant::now();
        let lifecycle = self.api.lifecycle.clone();
        let options = lifecycle.options.clone();
        lifecycle.advance(Phase::ShutdownInitiated);
        termination_event("ShutdownInitiated", since);
        let hooks = tokio::spawn(run_hooks(self.hooks, since));
        tokio::time::sleep(options.delay).await;
        termination_event("AfterShutdownDelayDuration", since);
        let _ = hooks.await;
        lifecycle.spread_watch_ends(self.api.storage.watcher_count());
        lifecycle.advance(Phase::NotAcceptingNewRequest);
        termination_event("NotAcceptingNewRequest", since);
        let request_bound = self.api.request_timeout;
        let watch_grace = options.watch_termination_grace_period;
        if options.send_retry_after {
            // Listening on, answering 429, until what is in flight is done.
            drained(&lifecycle, request_bound, since).await;
            let _ = self
                .stop_listening
                .send(RETRY_AFTER_CLOSE_TIMEOUT.max(watch_grace));
        } else {
            let _ = self.stop_listening.send(request_bound.max(watch_grace));
            drained(&lifecycle, request_bound, since).await;
        }
        let _ = self.done.await;
        tracing::info!(
            elapsed_ms = since.elapsed().as_millis() as u64,
            "[graceful-termination] apiserver is exiting"
        );
    }
}

/// Run the pre-shutdown hooks side by side, each within [`HOOK_TIMEOUT`].
async fn run_hooks(hooks: Vec<PreShutdownHook>, since: Instant) {
    futures::future::join_all(hooks.into_iter().map(|hook| async move {
        if tokio::time::timeout(HOOK_TIMEOUT, hook.run).await.is_err() {
            tracing::warn!(
                hook = hook.name,
                "pre-shutdown hook did not finish within {HOOK_TIMEOUT:?}"
            );
        }
    }))
    .await;
    termination_event("PreShutdownHooksStopped", since);
}

/// Wait until no request that is not long-running is in flight, at most `bound`.
async fn drained(lifecycle: &crate::lifecycle::Lifecycle, bound: Duration, since: Instant) {
    let deadline = Instant::now() + bound;
    while lifecycle.in_flight() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    match lifecycle.in_flight() {
        0 => termination_event("InFlightRequestsDrained", since),
        left => tracing::warn!(
            in_flight = left,
            "[graceful-termination] requests still in flight after {bound:?}"
        ),
    }
}

/// A server that is bound and has its state, but does not answer yet: what runs
/// next to it (controllers, bootstrap objects) starts here, before it reports
/// ready.
pub struct Prepared {
    pub api: Arc<Api>,
    pub addr: SocketAddr,
    pub pki: Pki,
    pub front_proxy: FrontProxy,
    /// The CAs that verify client certificates (published for extension servers).
    pub client_cas: Vec<String>,
    listener: TcpListener,
    tls: rustls::ServerConfig,
    trust_pem: String,
    data_dir: PathBuf,
    storage_kind: StorageKind,
    /// Registered while what runs next to the server starts (behind a shared
    /// reference to it).
    hooks: parking_lot::Mutex<Vec<PreShutdownHook>>,
    started: Instant,
}

/// Serve `serving` with nothing running next to it.
pub async fn start(config: Config, serving: Serving) -> Result<Running> {
    prepare(config, serving)
        .await?
        .serve(tokio::spawn(async {}))
}

/// Open storage, load or create the certificates, bind, and build the server's
/// state.
pub async fn prepare(config: Config, serving: Serving) -> Result<Prepared> {
    let started = Instant::now();
    prepare_data_dir(&config)?;
    let backend = open_backend(&config).await?;
    let options = StoreOptions {
        prefix: format!("{}/", config.etcd_prefix.trim_end_matches('/')),
        compaction_interval: config.compaction_interval,
        bookmark_interval: config.bookmark_interval,
        ..Default::default()
    };
    let storage = Storage::open(backend, JsonCodec, options)
        .await
        .context("loading storage")?;
    let pki = Pki::load_or_create(&config.data_dir.join("pki"), &serving_hosts(&config))?;
    let client_cas = client_ca_bundle(&config, &pki)?;
    let front_proxy = FrontProxy::resolve(&config.front_proxy, &pki)?;
    // The handshake accepts certificates of either CA; authentication then decides
    // what each proves.
    let handshake_cas = [
        &client_cas[..],
        std::slice::from_ref(&front_proxy.requestheader_ca_pem),
    ]
    .concat();
    let (tls, trust_pem) = tls_config(&config, &pki, &handshake_cas)?;
    let tokens = Arc::new(crate::serviceaccounts::Tokens::new(
        &config.service_accounts,
        &pki.service_account_key,
        Arc::new(CachedObjects {
            storage: storage.clone(),
            prefix: config.etcd_prefix.trim_end_matches('/').to_string(),
        }),
    )?);
    let authn = Authenticator::new(
        config.token_auth_file.as_deref(),
        &client_cas,
        &front_proxy.requestheader_ca_pem,
        &config.front_proxy,
    )?
    .with_service_accounts(tokens.clone());

    let listener = bind(&config).await?;
    let addr = listener.local_addr()?;
    let lifecycle = Arc::new(crate::lifecycle::Lifecycle::new(config.shutdown.clone()));
    let api = Arc::new(
        Api::new(storage, &config.etcd_prefix, authn, lifecycle, serving)
            .with_request_timeout(config.request_timeout)
            .with_anonymous(config.anonymous_auth)
            .with_audit(open_audit(&config)?)
            .with_issuer_discovery(issuer_discovery(&config, &tokens, addr)),
    );
    let weak_api = Arc::downgrade(&api);
    let secrets: crate::serviceaccounts::legacy::SecretsStore = Arc::new(move || {
        let api = weak_api.upgrade()?;
        let catalog = api.catalog();
        let served = catalog.lookup("", "v1", "secrets")?;
        Some(served.store.clone_handle())
    });
    tokens.record_legacy_use(Arc::new(
        crate::serviceaccounts::legacy::LastUsedLabel::new(secrets),
    ));
    Ok(Prepared {
        api,
        addr,
        pki,
        front_proxy,
        client_cas,
        listener,
        tls,
        trust_pem,
        data_dir: config.data_dir,
        storage_kind: config.storage,
        hooks: Default::default(),
        started,
    })
}

impl Prepared {
    /// Run `hook` when termination starts (see [`PreShutdownHook`]).
    pub fn on_shutdown(
        &self,
        name: &'static str,
        hook: impl std::future::Future<Output = ()> + Send + 'static,
    ) {
        self.hooks.lock().push(PreShutdownHook {
            name,
            run: Box::pin(hook),
        });
    }

    /// Write the kubeconfig, report ready and serve. `background` (what runs next
    /// to the server) is stopped at shutdown, before storage closes.
    pub fn serve(self, background: tokio::task::JoinHandle<()>) -> Result<Running> {
        let kubeconfig = pki::kubeconfig_path(&self.data_dir);
        let host = match self.addr.ip() {
            ip if ip.is_unspecified() => "127.0.0.1".to_string(),
            std::net::IpAddr::V6(ip) => format!("[{ip}]"),
            ip => ip.to_string(),
        };
        let server_url = format!("https://{host}:{}", self.addr.port());
        pki::write_private(
            &kubeconfig,
            &pki::kubeconfig(&server_url, &self.trust_pem, &self.pki.admin),
        )?;
        self.api.ready.store(true, Ordering::Release);
        tracing::info!(
            address = %self.addr,
            kubeconfig = %kubeconfig.display(),
            storage = ?self.storage_kind,
            startup_ms = self.started.elapsed().as_millis() as u64,
            "{} is ready; use KUBECONFIG={}",
            self.api.name,
            kubeconfig.display()
        );
        let (stop_listening, stop) = tokio::sync::oneshot::channel();
        let done = tokio::spawn(serve(
            self.listener,
            tokio_rustls::TlsAcceptor::from(Arc::new(self.tls)),
            self.api.clone(),
            stop,
            background,
        ));
        Ok(Running {
            addr: self.addr,
            kubeconfig,
            api: self.api,
            hooks: self.hooks.into_inner(),
            stop_listening,
            done,
        })
    }
}

/// ServiceAccounts and Secrets as the watch cache holds them (no IO per request).
struct CachedObjects {
    storage: Arc<registry::Storage>,
    prefix: String,
}

impl CachedObjects {
    fn get(&self, plural: &str, namespace: &str, name: &str) -> Option<Arc<serde_json::Value>> {
        let prefix = &self.prefix;
        let entry = self
            .storage
            .get(&format!("{prefix}/{plural}/{namespace}/{name}"))?;
        Some(entry.object.value())
    }
}

impl crate::serviceaccounts::TokenObjects for CachedObjects {
    fn service_account(&self, namespace: &str, name: &str) -> Option<Arc<serde_json::Value>> {
        self.get("serviceaccounts", namespace, name)
    }

    fn secret(&self, namespace: &str, name: &str) -> Option<Arc<serde_json::Value>> {
        self.get("secrets", namespace, name)
    }
}

/// The auditor `--audit-policy-file` and `--audit-log-path` ask for (both, or
/// nothing is recorded, as upstream).
fn open_audit(config: &Config) -> Result<Option<Arc<crate::audit::Auditor>>> {
    let (Some(policy_file), Some(log)) = (&config.audit.policy_file, &config.audit.log) else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(policy_file)
        .with_context(|| format!("reading --audit-policy-file {}", policy_file.display()))?;
    let policy = crate::audit::Policy::parse(&text)
        .map_err(|e| anyhow!("--audit-policy-file {}: {e}", policy_file.display()))?;
    let backend = crate::audit::LogBackend::open(log.clone())
        .with_context(|| format!("opening --audit-log-path {}", log.path.display()))?;
    Ok(Some(crate::audit::Auditor::new(policy, backend)))
}

fn prepare_data_dir(config: &Config) -> Result<()> {
    let dir = &config.data_dir;
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create data dir {}", dir.display()))?;
    let probe = dir.join(".kubext-write-test");
    std::fs::write(&probe, b"ok")
        .with_context(|| format!("data dir {} is not writable", dir.display()))?;
    let _ = std::fs::remove_file(probe);
    Ok(())
}

async fn open_backend(config: &Config) -> Result<Arc<dyn Backend>> {
    Ok(match config.storage {
        StorageKind::Memory => Arc::new(storage::memory::MemoryBackend::new()),
        StorageKind::Embedded => {
            let path = config.data_dir.join("kubext.db");
            Arc::new(
                storage::sqlite::SqliteBackend::open(&path)
                    .with_context(|| format!("cannot open embedded database {}", path.display()))?,
            )
        }
        #[cfg(feature = "etcd")]
        StorageKind::Etcd => {
            let tls = crate::etcd_tls::load(&config.etcd_tls)?;
            Arc::new(
                storage::etcd::EtcdBackend::connect_tls(
                    &config.etcd_servers,
                    &config.etcd_prefix,
                    Duration::from_secs(5),
                    &tls,
                )
                .await
                .with_context(|| {
                    format!("cannot reach etcd at {}", config.etcd_servers.join(","))
                })?,
            )
        }
        #[cfg(not(feature = "etcd"))]
        StorageKind::Etcd => {
            return Err(anyhow!(
                "this server was built without etcd support (kubext-server's `etcd` feature)"
            ));
        }
    })
}

/// The service-account issuer's discovery documents, if this server serves
/// them; an issuer they cannot be made for leaves them unserved, with
/// kube-apiserver's warning.
fn issuer_discovery(
    config: &Config,
    tokens: &crate::serviceaccounts::Tokens,
    bound: SocketAddr,
) -> Option<crate::serviceaccounts::discovery::IssuerDiscovery> {
    let accounts = &config.service_accounts;
    if !accounts.issuer_discovery {
        return None;
    }
    tokens
        .issuer_discovery(&accounts.jwks_uri_for(bound))
        .inspect_err(|e| {
            tracing::warn!(
                error = %e,
                "Could not construct pre-rendered responses for ServiceAccountIssuerDiscovery endpoints. Endpoints will not be enabled."
            )
        })
        .ok()
}

fn serving_hosts(config: &Config) -> Vec<String> {
    let mut hosts = vec!["localhost".to_string(), "127.0.0.1".into(), "::1".into()];
    let bind = config.bind_address.to_string();
    if !hosts.contains(&bind) && !config.bind_address.is_unspecified() {
        hosts.push(bind);
    }
    hosts.extend(config.serving_hosts.iter().cloned());
    hosts
}

/// The server's TLS config, and the PEM clients should trust (the generated CA, or
/// the given serving certificate chain).
fn tls_config(
    config: &Config,
    pki: &Pki,
    client_cas: &[String],
) -> Result<(rustls::ServerConfig, String)> {
    let (cert, key) = match (&config.tls_cert_file, &config.tls_private_key_file) {
        (Some(c), Some(k)) => (
            std::fs::read_to_string(c)
                .with_context(|| format!("reading --tls-cert-file {}", c.display()))?,
            std::fs::read_to_string(k)
                .with_context(|| format!("reading --tls-private-key-file {}", k.display()))?,
        ),
        (None, None) => (pki.serving.cert_pem.clone(), pki.serving.key_pem.clone()),
        _ => {
            return Err(anyhow!(
                "--tls-cert-file and --tls-private-key-file must be given together"
            ));
        }
    };
    let trust = if config.tls_cert_file.is_some() {
        cert.clone()
    } else {
        pki.ca.cert_pem.clone()
    };
    Ok((crate::tls::server_config(&cert, &key, client_cas)?, trust))
}

/// The CAs that verify client certificates: the generated one, plus `--client-ca-file`.
fn client_ca_bundle(config: &Config, pki: &Pki) -> Result<Vec<String>> {
    let mut cas = vec![pki.ca.cert_pem.clone()];
    if let Some(path) = &config.client_ca_file {
        cas.push(
            std::fs::read_to_string(path)
                .with_context(|| format!("reading --client-ca-file {}", path.display()))?,
        );
    }
    Ok(cas)
}

async fn bind(config: &Config) -> Result<TcpListener> {
    let addr = SocketAddr::new(config.bind_address, config.secure_port);
    TcpListener::bind(addr).await.map_err(|e| match e.kind() {
        std::io::ErrorKind::AddrInUse => anyhow!(
            "cannot listen on {addr}: address already in use (is another kubext or kube-apiserver running? choose another --secure-port)"
        ),
        _ => anyhow!("cannot listen on {addr}: {e}"),
    })
}

/// Upstream's `ReadHeaderTimeout`: a connection must complete its TLS handshake
/// and send a request's headers within this long.
const READ_HEADER_TIMEOUT: Duration = Duration::from_secs(32);
/// Upstream's `IdleTimeout`: a keep-alive connection waiting for its next
/// request is kept this long, as clients keep theirs (client-go's and
/// hyper's pools: 90 s), so an idle client does not pay a new TLS handshake
/// (or meet a connection closed under its next request) after 32 s. hyper's
/// one timer covers the wait and the next request's headers, so those get
/// 90 s too; the first request's headers get 32 s.
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// Two full TLS records of encrypted, unsent bytes per connection.
const TLS_SEND_BUFFER: usize = 32 * 1024;
/// hyper's HTTP/1 buffer bound (default ~400 KiB): response bytes queued for a
/// client that stops reading, and the largest request head (upstream allows 1 MiB
/// of headers; 64 KiB is far beyond what clients send: bearer tokens and
/// impersonation headers are a few KiB). Smaller buffers here and in
/// [`TLS_SEND_BUFFER`] (24 and 16 KiB) kept a watcher that stops reading under
/// 128 KiB of heap, but cost a third more CPU per event delivered to watchers
/// that do read (more, smaller writes under backpressure).
const HTTP1_BUFFER: usize = 64 * 1024;

async fn serve(
    listener: TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    api: Arc<Api>,
    mut stop: tokio::sync::oneshot::Receiver<Duration>,
    background: tokio::task::JoinHandle<()>,
) {
    let graceful = GracefulShutdown::new();
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(IDLE_TIMEOUT)
        .max_buf_size(HTTP1_BUFFER);
    builder.http2().max_concurrent_streams(1000);
    let mut backoff = AcceptBackoff::default();
    let bound = loop {
        tokio::select! {
            accepted = listener.accept() => {
                let tcp = match accepted {
                    Ok((tcp, _peer)) => { backoff.reset(); tcp }
                    Err(e) => { backoff.wait(&e).await; continue; }
                };
                let _ = tcp.set_nodelay(true);
                let acceptor = acceptor.clone();
                let api = api.clone();
                let builder = builder.clone();
                let watcher = graceful.watcher();
                tokio::spawn(async move {
                    let remote_ip = tcp.peer_addr().ok().map(|a| a.ip());
                    let Ok(Ok(mut tls)) = tokio::time::timeout(READ_HEADER_TIMEOUT, acceptor.accept(tcp)).await else { return };
                    // What a client that stops reading can make this process hold
                    // in encrypted, unsent bytes (rustls's default is 64 KiB; less
                    // costs watch throughput in smaller writes).
                    tls.get_mut().1.set_buffer_limit(Some(TLS_SEND_BUFFER));
                    let mut identity = api.authn.peer(tls.get_ref().1.peer_certificates().unwrap_or_default());
                    identity.remote_ip = remote_ip;
                    let peer = Arc::new(identity);
                    let first_request = Arc::new(tokio::sync::Notify::new());
                    let seen = first_request.clone();
                    let service = hyper::service::service_fn(move |req| {
                        seen.notify_one();
                        let api = api.clone();
                        let peer = peer.clone();
                        // Boxed per request: hyper keeps a slot the size of this future
                        // for the connection's life, and the handler's state (~4 KiB)
                        // would stay allocated for every open watch and idle connection.
                        let handling =
                            crate::boxed::pin_in_place(|| handle_catching_panics(api, Box::new(req), peer));
                        async move { Ok::<_, std::convert::Infallible>(handling.await) }
                    });
                    let conn = builder.serve_connection_with_upgrades(TokioIo::new(tls), service);
                    let conn = watcher.watch(conn.into_owned());
                    // hyper bounds later requests' headers; the first one (and the
                    // protocol sniffing before it) is bounded here.
                    tokio::select! {
                        _ = conn => {}
                        () = no_request_within(READ_HEADER_TIMEOUT, &first_request) => {
                            tracing::debug!("closing a connection that sent no request within {READ_HEADER_TIMEOUT:?}");
                        }
                    }
                });
            }
            bound = &mut stop => break bound.unwrap_or_default(),
        }
    };
    drop(listener);
    tracing::info!(
        event = "HTTPServerStoppedListening",
        "[graceful-termination] shutdown event"
    );
    // Idle connections close now, busy ones after their response (HTTP/2:
    // GOAWAY); watch bodies are ending (see `lifecycle`).
    if tokio::time::timeout(bound, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            "[graceful-termination] some connections did not finish within {bound:?}; dropping them"
        );
    }
    background.abort();
    api.storage.close().await;
    tracing::info!("storage closed");
}

/// Completes only if no request arrived within `timeout`.
async fn no_request_within(timeout: Duration, first_request: &tokio::sync::Notify) {
    if tokio::time::timeout(timeout, first_request.notified())
        .await
        .is_ok()
    {
        std::future::pending::<()>().await;
    }
}

/// Go's `http.Server` backs off on accept errors (5 ms doubling to 1 s) instead of
/// spinning, e.g. while file descriptors are exhausted.
#[derive(Default)]
struct AcceptBackoff {
    delay: Option<Duration>,
}

impl AcceptBackoff {
    fn reset(&mut self) {
        self.delay = None;
    }

    async fn wait(&mut self, error: &std::io::Error) {
        let delay = self.delay.map_or(Duration::from_millis(5), |d| {
            (d * 2).min(Duration::from_secs(1))
        });
        if self.delay.is_none() {
            tracing::warn!(%error, "accept failed; backing off");
        }
        self.delay = Some(delay);
        tokio::time::sleep(delay).await;
    }
}

/// A panic in a handler becomes a 500, not a dropped connection: upstream's
/// `WithPanicRecovery` answers with `http.Error`'s plain text.
pub(crate) async fn handle_catching_panics(
    api: Arc<Api>,
    req: crate::boxed::BoxedRequest,
    peer: Arc<crate::authn::PeerIdentity>,
) -> hyper::Response<response::Body> {
    let audit_id = crate::chain::audit_id(&req);
    // Polled where it is built (as `catch_unwind` would, without moving the
    // large future into its wrappers first).
    let mut handled = std::pin::pin!(crate::chain::handle(api, req, &peer, &audit_id));
    let caught = std::future::poll_fn(|cx| {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handled.as_mut().poll(cx))) {
            Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
            Ok(std::task::Poll::Ready(resp)) => std::task::Poll::Ready(Some(resp)),
            Err(_) => std::task::Poll::Ready(None),
        }
    })
    .await;
    match caught {
        Some(resp) => resp,
        None => {
            let mut resp = response::respond(
                500,
                "text/plain; charset=utf-8",
                "This request caused apiserver to panic. Look in the logs for details.\n",
            );
            resp.headers_mut().insert(
                http::header::X_CONTENT_TYPE_OPTIONS,
                http::HeaderValue::from_static("nosniff"),
            );
            crate::chain::set_audit_id(&mut resp, &audit_id);
            resp
        }
    }
}

/// Wait for SIGTERM or SIGINT (Ctrl-C).
pub async fn wait_for_shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        let _ = tokio::signal::ctrl_c().await;
        return;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}
