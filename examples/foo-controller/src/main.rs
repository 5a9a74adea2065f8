//! foo-controller: kubernetes/sample-controller's Foo operator rewritten on
//! kube-rs. Each `Foo` (`samplecontroller.k8s.io/v1alpha1`) gets an nginx
//! Deployment it owns; see README.md. It reads `KUBECONFIG` like any client.

#![allow(
    clippy::disallowed_names,
    reason = "the resource is called Foo, as upstream"
)]

mod foo;
mod reconcile;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, Result};
use clap::Parser;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::ListParams;
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::{Controller, controller, watcher};
use kube::{Api, Client, CustomResourceExt};

use foo::Foo;
use reconcile::{CONTROLLER_AGENT_NAME, Context, error_policy, reconcile};

/// Keep an nginx Deployment for every Foo.
#[derive(Parser)]
#[command(version)]
struct Args {
    /// Print the Foo CRD as JSON and exit (for `kubectl apply -f -`).
    #[arg(long)]
    print_crd: bool,
    /// Foos synced at the same time (upstream's `threadiness`).
    #[arg(long, default_value_t = 2)]
    workers: u16,
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    init_logging();
    if args.print_crd {
        println!("{}", serde_json::to_string_pretty(&Foo::crd())?);
        return Ok(());
    }
    let client = Client::try_default()
        .await
        .context("no Kubernetes API to talk to (KUBECONFIG)")?;
    tokio::select! {
        () = wait_for_crd(&client) => {}
        () = shutdown_signal() => return Ok(()),
    }
    tracing::info!("starting the Foo controller");
    let ctx = Arc::new(Context {
        client: client.clone(),
        recorder: Recorder::new(
            client.clone(),
            Reporter {
                controller: CONTROLLER_AGENT_NAME.into(),
                instance: None,
            },
        ),
        failures: Mutex::default(),
    });
    Controller::new(Api::<Foo>::all(client.clone()), watcher::Config::default())
        // A Deployment's change queues the Foo that controls it (upstream's
        // `handleObject`).
        .owns(Api::<Deployment>::all(client), watcher::Config::default())
        .with_config(controller::Config::default().concurrency(args.workers))
        .graceful_shutdown_on(shutdown_signal())
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            match result {
                Ok((foo, _)) => tracing::info!(
                    "Successfully synced '{}/{}'",
                    foo.namespace.as_deref().unwrap_or_default(),
                    foo.name
                ),
                Err(e) => tracing::debug!(error = %e, "reconcile error"),
            }
        })
        .await;
    tracing::info!("stopped");
    Ok(())
}

/// Upstream expects the CRD installed beforehand; wait until the API serves Foos.
async fn wait_for_crd(client: &Client) {
    let foos: Api<Foo> = Api::all(client.clone());
    let mut logged = false;
    while let Err(e) = foos.list_metadata(&ListParams::default().limit(1)).await {
        if !logged {
            tracing::warn!(
                error = %e,
                "Foos are not served yet: install the CRD (foo-controller --print-crd | kubectl apply -f -)"
            );
            logged = true;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
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

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
}
