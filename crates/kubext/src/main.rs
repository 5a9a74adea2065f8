//! `kubext`: flags → `controlplane::Config` → `controlplane::start`. Thin by design.

// The one module allowed `unsafe`: a global allocator cannot be written without it.
#[allow(unsafe_code)]
mod heap;
mod inert_flags;
mod kube_apiserver;

use anyhow::Result;

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "kubext",
    version,
    about = "A Kubernetes-API-compatible control plane for CRDs and aggregated APIs"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the Kubernetes API over HTTPS.
    #[command(
        after_help = "Every other flag of kube-apiserver 1.33 is accepted too (started as kube-apiserver, --help lists them): each is logged as changing nothing in kubext. docs/serving.md lists them."
    )]
    Serve(Box<ServeArgs>),
}

#[derive(Clone, Copy, ValueEnum)]
enum StorageArg {
    /// SQLite database inside --data-dir (durable, zero set-up).
    Embedded,
    /// In memory only: everything is lost on exit (test servers).
    Memory,
    /// An etcd cluster given by --etcd-servers.
    Etcd,
}

#[derive(Clone, Copy, ValueEnum)]
enum EndpointReconcilerArg {
    Lease,
    MasterCount,
    None,
}

#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Directory for the database, generated certificates and admin.kubeconfig
    /// [default: --cert-dir when given, else ./kubext-data].
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// IP address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    bind_address: IpAddr,
    /// HTTPS port; 0 picks a free port (see the kubeconfig line printed at start).
    /// Given twice, the last one counts (as kube-apiserver's flags).
    #[arg(long, default_value_t = 6443, overrides_with = "secure_port")]
    secure_port: u16,
    /// Storage backend [default: etcd when --etcd-servers is given and the
    /// first endpoint answers as etcd, else embedded].
    #[arg(long, value_enum)]
    storage: Option<StorageArg>,
    /// Comma-separated etcd endpoints [default with --storage etcd: http://127.0.0.1:2379].
    #[arg(long, value_delimiter = ',')]
    etcd_servers: Vec<String>,
    /// Key prefix for everything kubext stores.
    #[arg(long, default_value = "/registry")]
    etcd_prefix: String,
    /// SSL Certificate Authority file used to secure etcd communication (PEM;
    /// `https://` endpoints are checked against it, else against the system's roots).
    #[arg(long)]
    etcd_cafile: Option<PathBuf>,
    /// SSL certification file used to secure etcd communication (PEM: the client
    /// certificate shown to `https://` endpoints).
    #[arg(long, requires = "etcd_keyfile")]
    etcd_certfile: Option<PathBuf>,
    /// SSL key file used to secure etcd communication (PEM: the key of --etcd-certfile).
    #[arg(long, requires = "etcd_certfile")]
    etcd_keyfile: Option<PathBuf>,
    /// Serving certificate (PEM). Without it, one is generated into the data dir.
    #[arg(long, requires = "tls_private_key_file")]
    tls_cert_file: Option<PathBuf>,
    /// Private key of --tls-cert-file (PEM).
    #[arg(long, requires = "tls_cert_file")]
    tls_private_key_file: Option<PathBuf>,
    /// Directory holding the serving certificate as apiserver.crt and
    /// apiserver.key (kube-apiserver's; used unless --tls-cert-file is given),
    /// and the default --data-dir.
    #[arg(long)]
    cert_dir: Option<PathBuf>,
    /// Accepted for kube-apiserver compatibility: kubext runs no pods and does
    /// not refuse privileged containers either way.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set)]
    allow_privileged: bool,
    /// Admission plugins to turn on besides the default ones (kube-apiserver's
    /// names, comma-separated or repeated). kubext runs LimitRanger,
    /// ServiceAccount, Priority, DefaultTolerationSeconds, RuntimeClass,
    /// DefaultStorageClass, StorageObjectInUseProtection, DefaultIngressClass,
    /// CertificateApproval, CertificateSigning, AlwaysDeny and the admission
    /// policy and webhook plugins; other names are accepted and do nothing.
    #[arg(long, value_delimiter = ',')]
    enable_admission_plugins: Vec<String>,
    /// Admission plugins to turn off (kube-apiserver's names, comma-separated
    /// or repeated). NamespaceLifecycle stays on.
    #[arg(long, value_delimiter = ',')]
    disable_admission_plugins: Vec<String>,
    /// The IP address on which to advertise the apiserver to members of the
    /// cluster (default/kubernetes's Endpoints and EndpointSlice, the identity
    /// Lease). If blank, the --bind-address will be used; if that is unspecified,
    /// 127.0.0.1.
    #[arg(long)]
    advertise_address: Option<IpAddr>,
    /// Use an endpoint reconciler (master-count, lease, none): lease lists every
    /// live replica sharing the storage in default/kubernetes (master-count is
    /// deprecated and taken as lease); none writes no Endpoints.
    #[arg(long, value_enum, default_value = "lease")]
    endpoint_reconciler_type: EndpointReconcilerArg,
    /// kubext only (upstream fixes it at 3600): leaseDurationSeconds of this
    /// server's identity Lease in kube-system.
    #[arg(long, default_value_t = 3600, value_parser = clap::value_parser!(u64).range(1..))]
    identity_lease_duration_seconds: u64,
    /// kubext only (upstream fixes it at 10s): how often the identity Lease is renewed.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    identity_lease_renew_interval: Duration,
    /// kubext only (upstream fixes it at 1h): how often expired identity Leases
    /// are deleted.
    #[arg(long, default_value = "1h", value_parser = parse_duration)]
    identity_lease_gc_period: Duration,
    /// Accepted for kube-apiserver compatibility (key=value pairs); kubext's
    /// features are fixed.
    #[arg(long, value_delimiter = ',')]
    feature_gates: Vec<String>,
    /// Accepted for kube-apiserver compatibility (key=value pairs); kubext
    /// serves the group-versions a default kube-apiserver 1.33 serves.
    #[arg(long, value_delimiter = ',')]
    runtime_config: Vec<String>,
    /// Extra CA bundle (PEM) for client certificates; the generated CA is always trusted.
    #[arg(long)]
    client_ca_file: Option<PathBuf>,
    /// Static bearer tokens, kube-apiserver's CSV format: token,user,uid,"group1,group2".
    #[arg(long)]
    token_auth_file: Option<PathBuf>,
    /// Client certificate (PEM) the aggregator presents to extension API servers;
    /// generated from a separate front-proxy CA in the data dir when unset.
    #[arg(long, requires = "proxy_client_key_file")]
    proxy_client_cert_file: Option<PathBuf>,
    /// Private key (PEM) of --proxy-client-cert-file.
    #[arg(long, requires = "proxy_client_cert_file")]
    proxy_client_key_file: Option<PathBuf>,
    /// CA bundle (PEM) extension servers use to verify the aggregator's client
    /// certificate, published in kube-system/extension-apiserver-authentication;
    /// the generated front-proxy CA when unset.
    #[arg(long)]
    requestheader_client_ca_file: Option<PathBuf>,
    /// Client certificate common names allowed to pass user identity headers.
    #[arg(long, value_delimiter = ',', default_value = "front-proxy-client")]
    requestheader_allowed_names: Vec<String>,
    /// Headers carrying the user name of proxied requests.
    #[arg(long, value_delimiter = ',', default_value = "X-Remote-User")]
    requestheader_username_headers: Vec<String>,
    /// Headers carrying the groups of proxied requests.
    #[arg(long, value_delimiter = ',', default_value = "X-Remote-Group")]
    requestheader_group_headers: Vec<String>,
    /// Header prefixes carrying the extra attributes of proxied requests.
    #[arg(long, value_delimiter = ',', default_value = "X-Remote-Extra-")]
    requestheader_extra_headers_prefix: Vec<String>,
    /// Headers carrying the UID of proxied requests (e.g. X-Remote-Uid); none by default.
    #[arg(long, value_delimiter = ',')]
    requestheader_uid_headers: Vec<String>,
    /// CIDR (IPv4) Services get cluster IPs from; the first address is default/kubernetes's.
    #[arg(long, default_value = "10.0.0.0/24")]
    service_cluster_ip_range: String,
    /// Port range NodePort and LoadBalancer Services get node ports from.
    #[arg(long, default_value = "30000-32767")]
    service_node_port_range: String,
    /// How often every replica repairs Service allocations: creates missing
    /// IPAddresses, deletes leaked ones (older than --request-timeout), and
    /// rebuilds the node port bitmap (kube-apiserver's fixed 3 minutes; kubext only).
    #[arg(long, default_value = "3m0s", value_parser = parse_duration)]
    service_repair_interval: Duration,
    /// With etcd storage: how long the controllers' Lease
    /// (kube-system/kubext-controllers) keeps other replicas out after its
    /// holder last renewed it (kube-controller-manager's flag).
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    leader_elect_lease_duration: Duration,
    /// How long the controllers' leader keeps leading while it cannot renew
    /// its Lease (kube-controller-manager's flag).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    leader_elect_renew_deadline: Duration,
    /// How often replicas try to take the controllers' Lease and its holder
    /// renews it (kube-controller-manager's flag).
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    leader_elect_retry_period: Duration,
    /// Bound on requests other than watches and connection upgrades (504 after it).
    /// At shutdown, in-flight requests get this long to finish.
    #[arg(long, default_value = "1m0s", value_parser = parse_duration)]
    request_timeout: Duration,
    /// Time to delay the termination. During that time the server keeps serving
    /// requests normally. The endpoints /healthz and /livez will return success,
    /// but /readyz immediately returns failure. Graceful termination starts after
    /// this delay has elapsed. This can be used to allow load balancer to stop
    /// sending traffic to this server.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    shutdown_delay_duration: Duration,
    /// If true the HTTP Server will continue listening until all non long running
    /// request(s) in flight have been drained, during this window all incoming
    /// requests will be rejected with a status code 429 and a 'Retry-After'
    /// response header, in addition 'Connection: close' response header is set in
    /// order to tear down the TCP connection when idle.
    #[arg(long, default_value_t = false, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", action = clap::ArgAction::Set)]
    shutdown_send_retry_after: bool,
    /// The longest the ending of open watches is spread over during the graceful
    /// shutdown (at least 200 a second, as upstream drains them). kubext always ends
    /// watches cleanly when it stops accepting requests; 0 ends them all at once.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    shutdown_watch_termination_grace_period: Duration,
    /// The `iss` of service-account tokens, and the default audience.
    #[arg(long, default_value = "https://kubernetes.default.svc.cluster.local")]
    service_account_issuer: String,
    /// Audiences the API accepts in service-account tokens [default: the issuer].
    #[arg(long, value_delimiter = ',')]
    api_audiences: Vec<String>,
    /// PEM (PKCS#8 EC P-256) private key that signs service-account tokens
    /// [default: generated in <data-dir>/pki/sa.key].
    #[arg(long)]
    service_account_signing_key_file: Option<PathBuf>,
    /// More PEM public keys whose service-account tokens are accepted (repeatable).
    #[arg(long)]
    service_account_key_file: Vec<PathBuf>,
    /// Longest lifetime a TokenRequest is granted (e.g. 24h) [default: as requested].
    #[arg(long, value_parser = parse_duration)]
    service_account_max_token_expiration: Option<Duration>,
    /// The `jwks_uri` the issuer's discovery document
    /// (/.well-known/openid-configuration) names, for relying parties that
    /// reach the keys elsewhere [default: https://<advertise-address>:<secure-port>/openid/v1/jwks].
    #[arg(long)]
    service_account_jwks_uri: Option<String>,
    /// How much history is kept for resuming watches and continuing lists; older
    /// revisions are compacted (410 Gone), as kube-apiserver's
    /// `--etcd-compaction-interval` (`--compaction-interval` is an alias).
    #[arg(long = "etcd-compaction-interval", alias = "compaction-interval", default_value = "5m", value_parser = parse_duration)]
    compaction_interval: Duration,
    /// How often watchers that allow bookmarks receive one.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    bookmark_interval: Duration,
    /// Log format: human-readable text or one JSON object per line.
    #[arg(long, value_enum, default_value = "text")]
    log_format: LogFormat,
    /// Ordered list of authorizers (comma-separated): RBAC, AlwaysAllow, AlwaysDeny.
    /// Members of system:masters are always allowed.
    #[arg(long, default_value = "RBAC", value_delimiter = ',', value_parser = controlplane::AuthorizationMode::parse)]
    authorization_mode: Vec<controlplane::AuthorizationMode>,
    /// Serve requests without credentials as system:anonymous (group
    /// system:unauthenticated); with false they get 401. Invalid credentials are
    /// always 401.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    anonymous_auth: bool,
    /// Audit policy (audit.k8s.io/v1 Policy, YAML or JSON): which requests are
    /// recorded, at which level. Needs --audit-log-path.
    #[arg(long)]
    audit_policy_file: Option<PathBuf>,
    /// Where audit events go, one JSON line each; '-' means standard out. Written
    /// from a queue of 10000 events: requests never wait for the disk, and events
    /// that do not fit are dropped and counted (apiserver_audit_error_total).
    #[arg(long)]
    audit_log_path: Option<PathBuf>,
    /// Days to keep rotated audit log files (0: no limit).
    #[arg(long, default_value_t = 0)]
    audit_log_maxage: u64,
    /// Rotated audit log files to keep (0: no limit).
    #[arg(long, default_value_t = 0)]
    audit_log_maxbackup: usize,
    /// Megabytes of audit log before it is rotated (0: 100).
    #[arg(long, default_value_t = 0)]
    audit_log_maxsize: u64,
}

/// Go durations: `300` (seconds), `300s`, `5m`, `1h`, `250ms`, `1m0s`, `1h30m`.
fn parse_duration(s: &str) -> Result<Duration, String> {
    let invalid = || format!("invalid duration {s:?} (use e.g. 250ms, 30s, 5m, 1h, 1m30s)");
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse().map(Duration::from_secs).map_err(|_| invalid());
    }
    let mut total = Duration::ZERO;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .ok_or_else(invalid)?;
        let n: u64 = rest[..digits].parse().map_err(|_| invalid())?;
        let unit_len = rest[digits..]
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len() - digits);
        let unit = match &rest[digits..digits + unit_len] {
            "ms" => Duration::from_millis(n),
            "s" => Duration::from_secs(n),
            "m" => Duration::from_secs(n * 60),
            "h" => Duration::from_secs(n * 3600),
            _ => return Err(invalid()),
        };
        total += unit;
        rest = &rest[digits + unit_len..];
    }
    if total.is_zero() && s.is_empty() {
        return Err(invalid());
    }
    Ok(total)
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("KUBEXT_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colours only for a terminal: log files and collectors get plain text.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// The storage to use: as asked, or etcd when `--etcd-servers` names one
/// that answers, else the embedded store.
async fn choose_storage(args: &ServeArgs) -> server::StorageKind {
    let asked = match args.storage {
        Some(storage) => storage,
        None if args.etcd_servers.is_empty() => StorageArg::Embedded,
        None if kube_apiserver::answers_as_etcd(&args.etcd_servers).await => StorageArg::Etcd,
        None => {
            tracing::info!(
                etcd_servers = ?args.etcd_servers,
                "no etcd answers at --etcd-servers; using the embedded store"
            );
            StorageArg::Embedded
        }
    };
    match asked {
        StorageArg::Embedded => server::StorageKind::Embedded,
        StorageArg::Memory => server::StorageKind::Memory,
        StorageArg::Etcd => server::StorageKind::Etcd,
    }
}

async fn serve(args: ServeArgs) -> Result<()> {
    let leader_election = leader_election_timings(&args)?;
    let admission_plugins = controlplane::AdmissionPlugins::from_flags(
        &args.enable_admission_plugins,
        &args.disable_admission_plugins,
    )
    .map_err(anyhow::Error::msg)?;
    let storage = choose_storage(&args).await;
    let (tls_cert_file, tls_private_key_file) = match (&args.tls_cert_file, &args.cert_dir) {
        (None, Some(dir)) => kube_apiserver::serving_certificate(dir).unzip(),
        _ => (args.tls_cert_file, args.tls_private_key_file),
    };
    let data_dir = args
        .data_dir
        .or(args.cert_dir)
        .unwrap_or_else(|| PathBuf::from("./kubext-data"));
    let etcd_servers = if args.etcd_servers.is_empty() {
        vec!["http://127.0.0.1:2379".to_string()]
    } else {
        args.etcd_servers
    };
    let config = controlplane::Config {
        server: server::Config {
            data_dir,
            bind_address: args.bind_address,
            secure_port: args.secure_port,
            storage,
            etcd_servers,
            etcd_prefix: args.etcd_prefix,
            etcd_tls: server::config::EtcdTlsFiles {
                ca_file: args.etcd_cafile,
                cert_file: args.etcd_certfile,
                key_file: args.etcd_keyfile,
            },
            tls_cert_file,
            tls_private_key_file,
            client_ca_file: args.client_ca_file,
            token_auth_file: args.token_auth_file,
            compaction_interval: args.compaction_interval,
            bookmark_interval: args.bookmark_interval,
            front_proxy: server::front_proxy::FrontProxyConfig {
                proxy_client_cert_file: args.proxy_client_cert_file,
                proxy_client_key_file: args.proxy_client_key_file,
                requestheader_client_ca_file: args.requestheader_client_ca_file,
                allowed_names: args.requestheader_allowed_names,
                username_headers: args.requestheader_username_headers,
                group_headers: args.requestheader_group_headers,
                extra_headers_prefix: args.requestheader_extra_headers_prefix,
                uid_headers: args.requestheader_uid_headers,
            },
            request_timeout: args.request_timeout,
            shutdown: server::lifecycle::ShutdownOptions {
                delay: args.shutdown_delay_duration,
                send_retry_after: args.shutdown_send_retry_after,
                watch_termination_grace_period: args.shutdown_watch_termination_grace_period,
            },
            anonymous_auth: args.anonymous_auth,
            audit: server::config::AuditConfig {
                policy_file: args.audit_policy_file,
                log: args.audit_log_path.map(|path| server::audit::LogOptions {
                    path,
                    max_age_days: args.audit_log_maxage,
                    max_backups: args.audit_log_maxbackup,
                    max_size_mb: args.audit_log_maxsize,
                }),
            },
            service_accounts: server::serviceaccounts::ServiceAccountConfig {
                issuer: args.service_account_issuer,
                api_audiences: args.api_audiences,
                signing_key_file: args.service_account_signing_key_file,
                key_files: args.service_account_key_file,
                max_token_expiration: args.service_account_max_token_expiration,
                issuer_discovery: true,
                jwks_uri: args.service_account_jwks_uri,
                advertise_address: args.advertise_address,
            },
            ..Default::default()
        },
        service_ranges: registry::builtin::ServiceRanges::parse(
            &args.service_cluster_ip_range,
            &args.service_node_port_range,
        )
        .map_err(anyhow::Error::msg)?,
        service_repair_interval: args.service_repair_interval,
        leader_election,
        authorization_modes: args.authorization_mode,
        admission_plugins,
        replica: controlplane::Replica {
            advertise_address: args.advertise_address,
            endpoint_reconciler: match args.endpoint_reconciler_type {
                EndpointReconcilerArg::Lease => controlplane::ReconcilerType::Lease,
                EndpointReconcilerArg::MasterCount => {
                    tracing::warn!(
                        "--endpoint-reconciler-type=master-count is deprecated; kubext reconciles by leases"
                    );
                    controlplane::ReconcilerType::Lease
                }
                EndpointReconcilerArg::None => controlplane::ReconcilerType::None,
            },
            identity_lease: controlplane::IdentityLeaseTimings {
                duration: Duration::from_secs(args.identity_lease_duration_seconds),
                renew_interval: args.identity_lease_renew_interval,
                gc_period: args.identity_lease_gc_period,
            },
        },
    };
    let running = controlplane::start(config).await?;
    // Machine-readable line for scripts and test harnesses.
    println!("kubeconfig: {}", running.kubeconfig.display());
    println!("listening: https://{}", running.addr);
    server::wait_for_shutdown_signal().await;
    tracing::info!("signal received; shutting down gracefully");
    // As kube-apiserver: a second signal ends the process at once.
    tokio::spawn(async {
        server::wait_for_shutdown_signal().await;
        tracing::warn!("second signal received; exiting at once");
        std::process::exit(1);
    });
    running.shutdown().await;
    Ok(())
}

fn asks_for_help(args: &[std::ffi::OsString]) -> bool {
    args.iter().skip(1).any(|a| a == "--help" || a == "-h")
}

/// kube-apiserver flags kubext accepted without a use for them.
fn log_set_aside(flags: &[inert_flags::SetAside]) {
    for flag in flags {
        let value = flag.value.as_deref().unwrap_or("true");
        if flag.name == "enable-aggregator-routing" {
            // What the flag turns on upstream is what kubext always does.
            tracing::info!(
                flag = %flag.name, value,
                "kubext always routes aggregated APIs to a Service's endpoints (there is no kube-proxy)"
            );
        } else {
            tracing::warn!(
                flag = %flag.name, value,
                "kube-apiserver flag accepted; it changes nothing in kubext"
            );
        }
    }
}

/// Raise the soft open-files limit to the hard one, as Go's runtime does for
/// kube-apiserver: every watch and connection is a file descriptor.
fn raise_open_files_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        let raised = rustix::process::Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        };
        if let Err(e) = setrlimit(Resource::Nofile, raised) {
            tracing::warn!(error = %e, "cannot raise the open-files limit");
        }
    }
}

fn main() -> std::process::ExitCode {
    server::metrics::report_heap_with(heap::live_bytes);
    let args = kube_apiserver::command_line();
    let command = Cli::command();
    let serve_command = command.find_subcommand("serve");
    if kube_apiserver::invoked_as_kube_apiserver() && asks_for_help(&args) {
        print!("{}", inert_flags::UPSTREAM_HELP);
        if let Some(own) = serve_command {
            println!("\nkubext's own flags:\n{}", own.clone().render_long_help());
        }
        return std::process::ExitCode::SUCCESS;
    }
    if kube_apiserver::invoked_as_kube_apiserver() && args.iter().skip(1).any(|a| a == "--version")
    {
        println!("Kubernetes v1.37.2-kubext.{}", env!("CARGO_PKG_VERSION"));
        return std::process::ExitCode::SUCCESS;
    }
    // clap adds `--help` itself: it is never set aside.
    let own: Vec<String> = serve_command
        .into_iter()
        .flat_map(|c| c.get_arguments())
        .filter_map(|a| a.get_long().map(String::from))
        .chain(["help".to_string(), "h".to_string()])
        .collect();
    let (args, set_aside) = inert_flags::set_aside(args, &own);
    let cli = Cli::parse_from(args);
    let Command::Serve(args) = cli.command;
    init_logging(args.log_format);
    log_set_aside(&set_aside);
    raise_open_files_limit();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(*args)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// kube-controller-manager's checks of its leader election flags.
fn leader_election_timings(
    args: &ServeArgs,
) -> anyhow::Result<controlplane::LeaderElectionTimings> {
    let timings = controlplane::LeaderElectionTimings {
        lease_duration: args.leader_elect_lease_duration,
        renew_deadline: args.leader_elect_renew_deadline,
        retry_period: args.leader_elect_retry_period,
    };
    if timings.lease_duration <= timings.renew_deadline {
        anyhow::bail!("leaseDuration must be greater than renewDeadline");
    }
    if timings.renew_deadline.as_secs_f64() <= 1.2 * timings.retry_period.as_secs_f64() {
        anyhow::bail!("renewDeadline must be greater than retryPeriod*JitterFactor");
    }
    Ok(timings)
}
