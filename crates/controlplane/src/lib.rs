//! The control plane: kubext's serving library with everything that runs next
//! to it — the built-in types and CRDs, bootstrap objects, leader election, the
//! controllers and the aggregator — wired together. `kubext serve` is this.
//!
//! Invariant: wiring only. Behaviour lives in `server`, `registry`,
//! `controllers` and `aggregator`; this crate decides what runs and in which
//! order (bootstrap before controllers, controllers before ready).

mod admission_chain;
mod authorization;
mod component_statuses;
mod flowcontrol;
mod kubernetes_service;
mod replica;
pub mod service_repair;
mod webhook_services;

pub use admission::in_tree::Plugins as AdmissionPlugins;
pub use authorization::{AuthorizationMode, UnsupportedAuthorizationMode};
pub use controllers::identity::Timings as IdentityLeaseTimings;
pub use kubernetes_service::ReconcilerType;
pub use replica::Replica;
pub use runtime::leader::Timings as LeaderElectionTimings;

use anyhow::{Result, anyhow};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

use aggregator::Remotes;
use controllers::namespace::{NamespaceController, RemoteContent};
use controllers::service_account_tokens::{SignError, TokenSigner, TokenSubject, TokensController};
use registry::{GenericStore, ResourceType};
use runtime::{Resources, leader};
use server::api::{Api, Serving};
use server::front_proxy::FrontProxy;
use server::{Prepared, Running, StorageKind};
use service_repair::ServiceRepair;

/// What `kubext serve` configures.
#[derive(Debug, Clone)]
pub struct Config {
    pub server: server::Config,
    /// Where Services get cluster IPs and node ports.
    pub service_ranges: registry::builtin::ServiceRanges,
    /// How often every replica repairs Service allocations (upstream: 3 min).
    pub service_repair_interval: Duration,
    /// `--authorization-mode`, in order (after `system:masters`).
    pub authorization_modes: Vec<AuthorizationMode>,
    /// `--enable-admission-plugins` / `--disable-admission-plugins`.
    pub admission_plugins: admission::in_tree::Plugins,
    /// How this replica shows itself: `default/kubernetes`, its identity Lease.
    pub replica: Replica,
    /// The controllers' Lease (with etcd, where replicas may share it).
    pub leader_election: leader::Timings,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            server: Default::default(),
            service_ranges: Default::default(),
            service_repair_interval: Duration::from_secs(180),
            authorization_modes: vec![AuthorizationMode::Rbac],
            admission_plugins: Default::default(),
            replica: Default::default(),
            leader_election: Default::default(),
        }
    }
}

/// What the controllers start with, besides the prepared server.
struct ControllerPlan {
    storage: StorageKind,
    /// `default/kubernetes`'s cluster IP.
    service_ranges: registry::builtin::ServiceRanges,
    /// How this replica shows itself.
    replica: Replica,
    service_repair: ServiceRepair,
    repair_interval: Duration,
    leader_election: leader::Timings,
    remotes: Remotes,
}

const BOOTSTRAP_NAMESPACES: [&str; 4] =
    ["default", "kube-system", "kube-public", "kube-node-lease"];

/// Start kubext: serve the built-in types and CRDs, with bootstrap objects and
/// every controller running before the server reports ready.
pub async fn start(config: Config) -> Result<Running> {
    let remotes = Remotes::new(config.server.front_proxy.clone());
    let authorization = authorization::Authorization::new(&config.authorization_modes);
    let admission = Arc::new(admission::Chain::with_plugins(config.admission_plugins));
    let etcd_servers = match config.server.storage {
        StorageKind::Etcd => config.server.etcd_servers.clone(),
        _ => Vec::new(),
    };
    let component_statuses = component_statuses::ComponentStatuses::new(etcd_servers);
    let types = kubext_types(config.service_ranges, component_statuses.clone());
    let serving = Serving {
        name: "kubext".into(),
        types: admission_chain::guard(authorization.guard(types)),
        authorizer: authorization.authorizer.clone(),
        rules: authorization.rules.clone(),
        delegation: Some(Arc::new(remotes.clone())),
        admission: Some(admission.clone()),
        // The main server issues its tokens itself.
        token_reviewer: None,
    };
    let storage = config.server.storage;
    let orphan_grace = config.server.request_timeout;
    let prepared = server::prepare(config.server, serving).await?;
    component_statuses.attach(&prepared.api);
    let service_repair = ServiceRepair::new(&prepared.api, config.service_ranges, orphan_grace)?;
    let plan = ControllerPlan {
        storage,
        service_ranges: config.service_ranges,
        replica: config.replica,
        service_repair,
        repair_interval: config.service_repair_interval,
        leader_election: config.leader_election,
        remotes,
    };
    let controllers = start_controllers(&prepared, plan, &authorization, &admission).await?;
    let running = prepared.serve(controllers)?;
    authorization.serving();
    Ok(running)
}

/// `t` changed by `change`: the types are not shared yet while the control
/// plane assembles them (a shared one is left as it is).
fn with(t: Arc<ResourceType>, change: impl FnOnce(&mut ResourceType)) -> Arc<ResourceType> {
    match Arc::try_unwrap(t) {
        Ok(mut t) => {
            change(&mut t);
            Arc::new(t)
        }
        Err(shared) => shared,
    }
}

/// kubext's own types: the built-ins (component statuses computed by
/// `component_statuses`) and CustomResourceDefinitions.
fn kubext_types(
    service_ranges: registry::builtin::ServiceRanges,
    component_statuses: Arc<component_statuses::ComponentStatuses>,
) -> Vec<Arc<ResourceType>> {
    registry::builtin::resource_types_with(service_ranges)
        .into_iter()
        .map(|t| {
            if !(t.group.is_empty() && t.plural == "componentstatuses") {
                return t;
            }
            with(t, |t| t.provider = Some(component_statuses.clone()))
        })
        .chain(std::iter::once(
            Arc::new(apiextensions::crd_resource_type()),
        ))
        .collect()
}

/// kubext's own controllers, started once the bootstrap namespaces are complete
/// (before the server reports ready).
async fn start_controllers(
    prepared: &Prepared,
    plan: ControllerPlan,
    authorization: &authorization::Authorization,
    admission: &admission::Chain,
) -> Result<tokio::task::JoinHandle<()>> {
    let ControllerPlan {
        storage,
        service_ranges,
        replica,
        mut service_repair,
        repair_interval,
        leader_election: timings,
        remotes,
    } = plan;
    let api = &prepared.api;
    let front_proxy = &prepared.front_proxy;
    let started = std::time::Instant::now();
    let step = |what: &str| {
        tracing::debug!(
            step = what,
            elapsed_us = started.elapsed().as_micros() as u64,
            "start-up"
        )
    };
    bootstrap(api).await?;
    step("namespaces");
    // Before the first Service write: allocations stored before must be known.
    service_repair.repair().await?;
    let service_repair = tokio::spawn(service_repair.run(repair_interval));
    step("service allocation repair");
    let presence = replica::announce(prepared, &service_ranges, &replica).await?;
    step("default/kubernetes, identity lease");
    let flowcontrol = flowcontrol::start(api.clone()).await?;
    step("flowcontrol configuration");
    publish_authentication_configmap(api, front_proxy, &prepared.client_cas.join("")).await?;
    step("authentication configmap");
    let (leadership, election) = leader_election(prepared, storage, timings);
    let rbac = authorization.start(api, leadership.clone()).await?;
    step("rbac");
    let caller = webhook_services::caller(api);
    let admission = admission_chain::start(
        api,
        authorization.authorizer.clone(),
        admission,
        caller.clone(),
    )
    .await?;
    step("admission");
    let crd_controller = start_crd_controller(api, leadership.clone(), caller).await?;
    step("crd controller");
    let apiservice_registration = start_apiservice_registration(api, leadership.clone())?;
    let availability = start_availability(api, front_proxy, remotes.clone(), leadership.clone())?;
    let namespace_controller = Arc::new(NamespaceController {
        resources: Arc::new(CatalogResources(api.clone())),
        root_ca: prepared.pki.ca.cert_pem.clone(),
        remote: Some(Arc::new(ExtensionServerContent(
            aggregator::namespaces::RemoteNamespaceContent::new(
                Arc::downgrade(api),
                remotes,
                &front_proxy.config,
            ),
        ))),
    });
    // Idempotent creates: every replica may do them before it reports ready.
    futures::future::join_all(
        BOOTSTRAP_NAMESPACES
            .iter()
            .map(|ns| namespace_controller.populate(ns)),
    )
    .await;
    step("namespace contents");
    let namespaces = tokio::spawn(leader::while_leading(
        leadership.clone(),
        "namespace",
        move || namespace_controller.clone().run(),
    ));
    let resources = Arc::new(CatalogResources(api.clone()));
    let tokens = start_token_controller(prepared, resources.clone(), leadership.clone());
    legacy_token_tracking(api).await?;
    step("legacy token tracking");
    let gc_resources = resources.clone();
    let garbage_collector = tokio::spawn(leader::while_leading(
        leadership.clone(),
        "garbage-collector",
        move || {
            controllers::gc::GarbageCollector {
                resources: gc_resources.clone(),
            }
            .run()
        },
    ));
    // kube-controller-manager's pvc-, pv- and vac-protection.
    let storage_protection = tokio::spawn(leader::while_leading(
        leadership,
        "storage-protection",
        move || controllers::storage_protection::run(resources.clone()),
    ));
    Ok(tokio::spawn(async move {
        let _ = tokio::join!(
            flowcontrol,
            service_repair,
            presence,
            election,
            rbac,
            admission,
            namespaces,
            garbage_collector,
            storage_protection,
            tokens,
            crd_controller,
            apiservice_registration,
            availability
        );
    }))
}

/// kube-controller-manager's `serviceaccount-token` controller, on the leader:
/// token Secrets get legacy tokens signed with the key the authenticator
/// checks them with, and the cluster CA (as `kube-root-ca.crt` publishes it).
fn start_token_controller(
    prepared: &Prepared,
    resources: Arc<CatalogResources>,
    leadership: leader::Leadership,
) -> tokio::task::JoinHandle<()> {
    let Some(tokens) = prepared.api.service_account_tokens() else {
        return tokio::spawn(async {});
    };
    let controller = Arc::new(TokensController {
        resources,
        signer: Arc::new(LegacySigner(tokens)),
        root_ca: prepared.pki.ca.cert_pem.clone(),
    });
    tokio::spawn(leader::while_leading(
        leadership,
        "serviceaccount-token",
        move || controller.clone().run(),
    ))
}

/// The server's service-account key, signing for the token controller.
struct LegacySigner(Arc<server::serviceaccounts::Tokens>);

impl TokenSigner for LegacySigner {
    fn sign(&self, subject: &TokenSubject) -> std::result::Result<String, SignError> {
        let subject = server::serviceaccounts::legacy::LegacySubject {
            namespace: subject.namespace.clone(),
            service_account: subject.service_account.clone(),
            service_account_uid: subject.service_account_uid.clone(),
            secret: subject.secret.clone(),
        };
        self.0
            .sign_legacy(&subject)
            .map_err(|e| SignError(e.to_string()))
    }
}

/// Since when legacy tokens' use is tracked (kube-apiserver's
/// legacy-token-tracking controller, which its token cleaner reads): the
/// `since` date of `kube-system/kube-apiserver-legacy-service-account-token-tracking`,
/// set when the ConfigMap is created or holds no date. Upstream also recreates
/// it when deleted (at most every 30 min); kubext does so at its next start.
async fn legacy_token_tracking(api: &Api) -> Result<()> {
    const NAME: &str = "kube-apiserver-legacy-service-account-token-tracking";
    let catalog = api.catalog();
    let configmaps = catalog
        .lookup("", "v1", "configmaps")
        .ok_or_else(|| anyhow!("configmaps are not served"))?;
    let today = jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date()
        .to_string();
    let ctx = runtime::system_context("kube-system", "kube-apiserver");
    let want = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": NAME, "namespace": "kube-system"}, "data": {"since": today}});
    match configmaps.store.create(&ctx, want).await {
        Err(e) if e.code() == 409 => {}
        Err(e) => return Err(anyhow!("creating {NAME}: {e}")),
        Ok(_) => return Ok(()),
    }
    configmaps
        .store
        .update_with(&ctx, NAME, |current| {
            let mut next = current.clone();
            let since = current.pointer("/data/since").and_then(|v| v.as_str());
            if since.is_none_or(|s| s.parse::<jiff::civil::Date>().is_err()) {
                if !next.get("data").is_some_and(|d| d.is_object()) {
                    next["data"] = json!({});
                }
                next["data"]["since"] = json!(today);
            }
            Ok(next)
        })
        .await
        .map(|_| ())
        .map_err(|e| anyhow!("updating {NAME}: {e}"))
}

/// Who runs the writing controllers: with etcd (replicas may share it) the holder
/// of the `kube-system/kubext-controllers` Lease; otherwise this process, always.
fn leader_election(
    prepared: &Prepared,
    storage: StorageKind,
    timings: leader::Timings,
) -> (leader::Leadership, tokio::task::JoinHandle<()>) {
    if storage != StorageKind::Etcd {
        let (tx, rx) = watch::channel(true);
        return (rx, tokio::spawn(async move { tx.closed().await }));
    }
    let (tx, rx) = watch::channel(false);
    let identity = leader::identity();
    tracing::info!(%identity, "leader election for kubext's controllers");
    let election = Arc::new(leader::LeaderElection {
        resources: Arc::new(CatalogResources(prepared.api.clone())),
        identity,
        namespace: "kube-system".into(),
        name: "kubext-controllers".into(),
        timings,
        released: Default::default(),
    });
    let releasing = election.clone();
    prepared.on_shutdown("release-controllers-lease", async move {
        releasing.release().await;
    });
    (rx, tokio::spawn(election.run(tx)))
}

/// Create or refresh `kube-system/extension-apiserver-authentication`.
async fn publish_authentication_configmap(
    api: &Api,
    front_proxy: &FrontProxy,
    client_ca_pem: &str,
) -> Result<()> {
    let catalog = api.catalog();
    let configmaps = catalog
        .lookup("", "v1", "configmaps")
        .ok_or_else(|| anyhow!("configmaps are not served"))?;
    let want = front_proxy.authentication_configmap(client_ca_pem);
    let ctx = runtime::system_context(server::front_proxy::CONFIGMAP_NAMESPACE, "kubext");
    match configmaps.store.create(&ctx, want.clone()).await {
        Ok(_) => Ok(()),
        Err(e) if e.code() == 409 => configmaps
            .store
            .update_with(&ctx, server::front_proxy::CONFIGMAP_NAME, |current| {
                let mut next = current.clone();
                next["data"] = want["data"].clone();
                Ok(next)
            })
            .await
            .map(|_| ())
            .map_err(|e| anyhow!("updating {}: {e}", server::front_proxy::CONFIGMAP_NAME)),
        Err(e) => Err(anyhow!(
            "creating {}: {e}",
            server::front_proxy::CONFIGMAP_NAME
        )),
    }
}

/// Start the CRD controller; returns once existing CRDs are served (so a restart
/// serves them before reporting ready).
async fn start_crd_controller(
    api: &Arc<Api>,
    leadership: leader::Leadership,
    caller: webhook::Caller,
) -> Result<tokio::task::JoinHandle<()>> {
    let crds = api
        .catalog()
        .lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        .map(|s| Arc::new(s.store.clone_handle()))
        .ok_or_else(|| anyhow!("customresourcedefinitions are not served"))?;
    let (first_tx, mut first_rx) = watch::channel(false);
    let weak = Arc::downgrade(api);
    let publish: controllers::crd::Publish = Arc::new(move |types| {
        if let Some(api) = weak.upgrade() {
            api.publish_custom(types);
        }
        let _ = first_tx.send(true);
    });
    let controller = Arc::new(
        controllers::crd::CrdController::new(crds, publish, leadership).with_conversion(caller),
    );
    let handle = tokio::spawn(controller.run());
    let _ = tokio::time::timeout(Duration::from_secs(5), first_rx.wait_for(|p| *p)).await;
    Ok(handle)
}

/// Keep a local APIService for every served group-version.
fn start_apiservice_registration(
    api: &Arc<Api>,
    leadership: leader::Leadership,
) -> Result<tokio::task::JoinHandle<()>> {
    let store = api
        .catalog()
        .lookup("apiregistration.k8s.io", "v1", "apiservices")
        .map(|s| Arc::new(s.store.clone_handle()))
        .ok_or_else(|| anyhow!("apiservices are not served"))?;
    let weak = Arc::downgrade(api);
    Ok(tokio::spawn(leader::while_leading(
        leadership,
        "apiservice-registration",
        move || {
            let weak = weak.clone();
            let changes = weak.upgrade().map(|api| api.catalog_changes());
            let store = store.clone();
            async move {
                let Some(changes) = changes else { return };
                controllers::apiservices::run(store, changes, move || {
                    weak.upgrade()
                        .map(|api| local_group_versions(&api))
                        .unwrap_or_default()
                })
                .await;
            }
        },
    )))
}

/// Check the backends of service-backed APIServices.
fn start_availability(
    api: &Arc<Api>,
    front_proxy: &FrontProxy,
    remotes: Remotes,
    leadership: leader::Leadership,
) -> Result<tokio::task::JoinHandle<()>> {
    let catalog = api.catalog();
    let store = |group: &str, plural: &str| {
        catalog
            .lookup(group, "v1", plural)
            .map(|s| Arc::new(s.store.clone_handle()))
            .ok_or_else(|| anyhow!("{plural} are not served"))
    };
    let stores = aggregator::availability::Stores {
        apiservices: store("apiregistration.k8s.io", "apiservices")?,
        services: store("", "services")?,
        endpointslices: store("discovery.k8s.io", "endpointslices")?,
        endpoints: store("", "endpoints")?,
    };
    Ok(tokio::spawn(aggregator::availability::run(
        stores,
        front_proxy.client.clone(),
        front_proxy.config.clone(),
        remotes,
        {
            let api = api.clone();
            move |remotes| api.publish_remote(remotes)
        },
        leadership,
    )))
}

/// kube-apiserver's system PriorityClasses (`AddSystemPriorityClasses`):
/// name, value, description.
const SYSTEM_PRIORITY_CLASSES: [(&str, i64, &str); 2] = [
    (
        "system-node-critical",
        2_000_001_000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        2_000_000_000,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    ),
];

/// Create `obj` in `store` unless it exists.
async fn ensure(store: &GenericStore, obj: serde_json::Value, what: &str) -> Result<()> {
    let ctx = runtime::system_context("", "kubext");
    match store.create(&ctx, obj).await {
        Ok(_) => Ok(()),
        Err(e) if e.code() == 409 => Ok(()),
        Err(e) => Err(anyhow!("creating {what}: {e}")),
    }
}

/// What every cluster has: the system namespaces and PriorityClasses.
async fn bootstrap(api: &Api) -> Result<()> {
    let catalog = api.catalog();
    let namespaces = catalog
        .lookup("", "v1", "namespaces")
        .ok_or_else(|| anyhow!("namespaces are not served"))?;
    for name in BOOTSTRAP_NAMESPACES {
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        ensure(&namespaces.store, ns, name).await?;
    }
    let classes = catalog
        .lookup("scheduling.k8s.io", "v1", "priorityclasses")
        .ok_or_else(|| anyhow!("priorityclasses are not served"))?;
    for (name, value, description) in SYSTEM_PRIORITY_CLASSES {
        let class = json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value, "description": description});
        ensure(&classes.store, class, name).await?;
    }
    Ok(())
}

/// The namespace controller empties namespaces on extension servers through
/// the aggregator.
struct ExtensionServerContent(aggregator::namespaces::RemoteNamespaceContent);

#[async_trait::async_trait]
impl RemoteContent for ExtensionServerContent {
    async fn empty(
        &self,
        namespace: &str,
    ) -> (std::collections::BTreeMap<String, usize>, Vec<String>) {
        self.0.empty(namespace).await
    }
}

/// Controllers see the catalog's current stores.
struct CatalogResources(Arc<Api>);

impl Resources for CatalogResources {
    fn store(&self, group: &str, plural: &str) -> Option<Arc<GenericStore>> {
        let catalog = self.0.catalog();
        let (_, versions) = catalog.groups.iter().find(|(g, _)| g == group)?;
        let served = catalog.lookup(group, versions.first()?, plural)?;
        Some(Arc::new(served.store.clone_handle()))
    }

    fn store_for_kind(&self, group: &str, kind: &str) -> Option<Arc<GenericStore>> {
        let catalog = self.0.catalog();
        let served = catalog
            .served()
            .find(|s| s.rtype.group == group && s.rtype.kind == kind)?;
        Some(Arc::new(served.store.clone_handle()))
    }

    fn namespaced(&self) -> Vec<Arc<GenericStore>> {
        let catalog = self.0.catalog();
        let mut seen = std::collections::HashSet::new();
        catalog
            .served()
            .filter(|s| s.rtype.namespaced && seen.insert(s.rtype.storage_path.clone()))
            .map(|s| Arc::new(s.store.clone_handle()))
            .collect()
    }
}

/// Every group-version served here, and whether it is built in.
fn local_group_versions(api: &Api) -> Vec<controllers::apiservices::LocalGroupVersion> {
    let catalog = api.catalog();
    catalog
        .groups
        .iter()
        .flat_map(|(group, versions)| versions.iter().map(move |v| (group, v)))
        .map(
            |(group, version)| controllers::apiservices::LocalGroupVersion {
                builtin: api.is_builtin(group, version),
                group: group.clone(),
                version: version.clone(),
            },
        )
        .collect()
}
