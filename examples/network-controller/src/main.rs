//! network-controller: an operator for the seeds' `Network` resource
//! (`samplecrd.k8s.io/v1`), built on kube-rs's `Controller`, `finalizer` helper and
//! events `Recorder`. It reads `KUBECONFIG` like any client; see README.md.

mod network;
mod reconcile;
mod webhook;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, Result};
use clap::{Parser, ValueEnum};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Patch, PatchParams};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::{Controller, watcher};
use kube::{Api, Client, CustomResourceExt};
use kube_lease_manager::LeaseManagerBuilder;

use network::Network;
use reconcile::{Context, MANAGER, error_policy, reconcile};

/// Keep every Network's allocation in its status and in a ConfigMap.
#[derive(Parser)]
#[command(version)]
struct Args {
    /// Do not install (server-side apply) the Network CRD at start.
    #[arg(long)]
    no_install_crd: bool,
    /// Namespace of the leader-election Lease.
    #[arg(long, default_value = "default")]
    lease_namespace: String,
    /// Name of the leader-election Lease; replicas with the same one take turns.
    #[arg(long, default_value = "network-controller")]
    lease_name: String,
    /// This replica's name in the Lease [default: <hostname>-<pid>].
    #[arg(long)]
    identity: Option<String>,
    /// Log format.
    #[arg(long, value_enum, default_value = "text")]
    log_format: LogFormat,
    /// Print the CRD as JSON and exit (for `kubectl apply -f -`).
    #[arg(long)]
    print_crd: bool,
    /// Serve a validating admission webhook for Networks on this address
    /// (e.g. `127.0.0.1:0`) and register it with the API server.
    #[arg(long)]
    webhook_addr: Option<std::net::SocketAddr>,
    /// The host the API server reaches the webhook at (its certificate's
    /// name) [default: the address's IP].
    #[arg(long)]
    webhook_host: Option<String>,
}

#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    init_logging(args.log_format);
    if args.print_crd {
        print!("{}", serde_json::to_string_pretty(&Network::crd())?);
        return Ok(());
    }
    let client = Client::try_default()
        .await
        .context("no Kubernetes API to talk to (KUBECONFIG)")?;
    if !args.no_install_crd {
        install_crd(&client).await?;
    }
    if let Some(addr) = args.webhook_addr {
        let host = args.webhook_host.unwrap_or_else(|| addr.ip().to_string());
        webhook::start(client.clone(), addr, &host).await?;
    }
    let identity = args.identity.unwrap_or_else(default_identity);
    let lease = LeaseManagerBuilder::new(client.clone(), &args.lease_name)
        .with_namespace(&args.lease_namespace)
        .with_identity(&identity)
        .with_duration(15)
        .with_grace(5)
        .build()
        .await
        .context("leader election")?;
    let (mut leading, election) = lease.watch().await;
    tracing::info!(%identity, lease = %args.lease_name, "waiting to lead");
    loop {
        tokio::select! {
            led = leading.wait_for(|l| *l) => {
                led.context("leader election stopped")?;
            }
            _ = shutdown_signal() => break,
        }
        tracing::info!(%identity, "leading: starting the controller");
        tokio::select! {
            () = run_controller(client.clone(), &identity) => break,
            _ = leading.wait_for(|l| !*l) => tracing::warn!("lost the lease: controller stopped"),
        }
    }
    // Dropping the receiver releases the Lease for the next replica.
    drop(leading);
    let _ = tokio::time::timeout(Duration::from_secs(5), election).await;
    tracing::info!("stopped");
    Ok(())
}

/// Run the controller until a shutdown signal.
async fn run_controller(client: Client, identity: &str) {
    let ctx = Arc::new(Context {
        client: client.clone(),
        recorder: Recorder::new(
            client.clone(),
            Reporter {
                controller: MANAGER.into(),
                instance: Some(identity.to_string()),
            },
        ),
        failures: Mutex::default(),
    });
    Controller::new(
        Api::<Network>::all(client.clone()),
        watcher::Config::default(),
    )
    .owns(Api::<ConfigMap>::all(client), watcher::Config::default())
    .graceful_shutdown_on(shutdown_signal())
    .run(reconcile, error_policy, ctx)
    .for_each(|result| async move {
        if let Err(e) = result {
            tracing::debug!(error = %e, "reconcile error");
        }
    })
    .await;
}

/// Server-side apply the Network CRD and wait until it is established.
async fn install_crd(client: &Client) -> Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = Network::crd();
    let name = crd.metadata.name.clone().unwrap_or_default();
    crds.patch(
        &name,
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(&crd),
    )
    .await
    .context("installing the Network CRD")?;
    let established = kube::runtime::wait::await_condition(
        crds,
        &name,
        kube::runtime::wait::conditions::is_crd_established(),
    );
    tokio::time::timeout(Duration::from_secs(30), established)
        .await
        .context("the Network CRD was not established within 30 s")??;
    tracing::info!(crd = %name, "CRD installed");
    Ok(())
}

fn default_identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "network-controller".into());
    format!("{host}-{}", std::process::id())
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}
