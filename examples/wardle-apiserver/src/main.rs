//! wardle-apiserver: Kubernetes' sample-apiserver (`wardle.example.com/v1alpha1`
//! Flunder and Fischer) as an aggregated API server written with kubext-apiserver.
//! Register it with kubext (or kube-apiserver) through a Service, an EndpointSlice
//! and an APIService; see README.md.

mod ban_flunder;
mod types;

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use apiserver::{ApiServer, StorageKind};
use clap::Parser;

/// Serve wardle.example.com/v1alpha1 (Flunder, Fischer) for an aggregator.
#[derive(Parser)]
#[command(version)]
struct Args {
    /// Kubeconfig of the main API server (whose authentication ConfigMap is trusted
    /// and which answers SubjectAccessReviews). Default: $KUBECONFIG, then ~/.kube/config.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    bind_address: IpAddr,
    /// HTTPS port; 0 picks a free one.
    #[arg(long, default_value_t = 8443)]
    secure_port: u16,
    /// Generated certificates, the admin kubeconfig and the embedded database.
    #[arg(long, default_value = "wardle-data")]
    data_dir: PathBuf,
    /// Where Flunders and Fischers are kept.
    #[arg(long, value_enum, default_value = "embedded")]
    storage: Storage,
    /// Names for the serving certificate, checked by the aggregator against the
    /// APIService's caBundle as `<service>.<namespace>.svc`.
    #[arg(long, value_delimiter = ',', default_value = "api.wardle.svc")]
    serving_host: Vec<String>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Storage {
    /// A database file in the data dir.
    Embedded,
    /// Nothing survives a restart.
    Memory,
}

#[tokio::main]
async fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("WARDLE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let main_server = main_server_config(args.kubeconfig.as_deref()).await?;
    let mut server = ApiServer::new("wardle-apiserver")
        .resource_yaml(types::FLUNDER)?
        .resource_yaml(types::FISCHER)?
        .main_server(main_server)
        .data_dir(args.data_dir)
        .bind_address(args.bind_address)
        .port(args.secure_port)
        .storage(match args.storage {
            Storage::Embedded => StorageKind::Embedded,
            Storage::Memory => StorageKind::Memory,
        });
    for host in &args.serving_host {
        server = server.serving_host(host);
    }
    let objects = server.objects();
    let server = server.admission("flunders", Arc::new(ban_flunder::BanFlunder { objects }));
    let running = server.start().await?;
    // Machine-readable lines for scripts and test harnesses, as kubext prints them.
    println!("kubeconfig: {}", running.kubeconfig.display());
    println!("listening: https://{}", running.addr);
    apiserver::wait_for_shutdown_signal().await;
    running.shutdown().await;
    Ok(())
}

async fn main_server_config(kubeconfig: Option<&std::path::Path>) -> Result<kube::Config> {
    match kubeconfig {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("cannot read --kubeconfig {}", path.display()))?;
            Ok(kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?)
        }
        None => kube::Config::infer()
            .await
            .context("no kubeconfig for the main server (--kubeconfig or $KUBECONFIG)"),
    }
}
