//! The shared state of a running server: the catalog of what is served (swapped
//! whole when CRDs or extension servers change), storage, authentication,
//! authorization and where delegated group-versions go. Requests reach it through
//! the filter chain (`chain`).

use parking_lot::RwLock;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use tokio::sync::watch;

use registry::{ResourceType, Storage};

use crate::authn::Authenticator;
use crate::authz::{Authorizer, RuleResolver};
use crate::catalog::{Catalog, Served};
use crate::delegation::Delegation;
use crate::metrics::Metrics;
use crate::remote_discovery::RemoteGroupVersion;

/// What a server serves and who decides access: kubext's built-ins and CRDs, or
/// an aggregated server's own types.
pub struct Serving {
    /// Names the server in logs.
    pub name: String,
    pub types: Vec<Arc<ResourceType>>,
    pub authorizer: Arc<dyn Authorizer>,
    /// What SelfSubjectRulesReview reports.
    pub rules: Arc<dyn RuleResolver>,
    /// Group-versions another server answers (the aggregator), if any.
    pub delegation: Option<Arc<dyn Delegation>>,
    /// Admission for writes of every type (admission policies), if any.
    pub admission: Option<Arc<dyn registry::GlobalAdmission>>,
    /// Who is asked about bearer tokens this server did not issue (a
    /// delegating server's main server), if anyone.
    pub token_reviewer: Option<Arc<dyn crate::authn::TokenReviewer>>,
}

/// Shared state of a running server.
pub struct Api {
    pub(crate) name: String,
    catalog: RwLock<Arc<Catalog>>,
    pub(crate) storage: Arc<Storage>,
    pub(crate) authn: Authenticator,
    pub(crate) ready: AtomicBool,
    /// Where the server is in its termination (readiness, watches, refusals).
    pub lifecycle: Arc<crate::lifecycle::Lifecycle>,
    pub(crate) metrics: Metrics,
    /// The types given at start; custom resources are added to these on every
    /// CRD change.
    builtins: Vec<Arc<Served>>,
    storage_prefix: String,
    /// Bumped on every catalog change (controllers that follow the served set).
    catalog_changes: watch::Sender<u64>,
    pub(crate) authorizer: Arc<dyn Authorizer>,
    pub(crate) rules: Arc<dyn RuleResolver>,
    /// What discovery shows of extension servers. Held while a catalog is built:
    /// the two publishers (CRDs, extension servers) each build on the catalog
    /// they read, so they take turns.
    remote_discovery: parking_lot::Mutex<Vec<RemoteGroupVersion>>,
    pub(crate) delegation: Option<Arc<dyn Delegation>>,
    /// Bound on requests that are not long-running (`--request-timeout`).
    pub(crate) request_timeout: std::time::Duration,
    /// Requests without credentials are `system:anonymous` (`--anonymous-auth`).
    pub(crate) anonymous: bool,
    /// The audit policy and log, when configured.
    pub(crate) audit: Option<Arc<crate::audit::Auditor>>,
    /// Admission for writes of every type, bound to every store.
    pub(crate) admission: Option<Arc<dyn registry::GlobalAdmission>>,
    /// The service-account issuer's discovery documents, when served.
    pub(crate) issuer_discovery: Option<crate::serviceaccounts::discovery::IssuerDiscovery>,
}

impl Api {
    pub fn new(
        storage: Arc<Storage>,
        storage_prefix: &str,
        authn: Authenticator,
        lifecycle: Arc<crate::lifecycle::Lifecycle>,
        serving: Serving,
    ) -> Self {
        let admission = serving.admission;
        let authn = match serving.token_reviewer {
            Some(reviewer) => authn.with_token_reviewer(reviewer),
            None => authn,
        };
        let builtins: Vec<Arc<Served>> = serving
            .types
            .into_iter()
            .map(|t| served(t, &storage, storage_prefix, &admission))
            .collect();
        Api {
            name: serving.name,
            catalog: RwLock::new(Arc::new(Catalog::build(
                &Catalog::default(),
                builtins.clone(),
                &[],
            ))),
            storage,
            authn,
            ready: AtomicBool::new(false),
            lifecycle,
            metrics: Metrics::default(),
            builtins,
            storage_prefix: storage_prefix.to_string(),
            catalog_changes: watch::Sender::new(0),
            remote_discovery: Default::default(),
            delegation: serving.delegation,
            authorizer: serving.authorizer,
            rules: serving.rules,
            request_timeout: std::time::Duration::from_secs(60),
            anonymous: true,
            audit: None,
            admission,
            issuer_discovery: None,
        }
    }

    /// Bound non-long-running requests by `timeout` instead of the default 60 s.
    pub fn with_request_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Whether requests without credentials are served as `system:anonymous`
    /// (else 401).
    pub fn with_anonymous(mut self, anonymous: bool) -> Self {
        self.anonymous = anonymous;
        self
    }

    /// Record requests as `auditor` says.
    pub fn with_audit(mut self, auditor: Option<Arc<crate::audit::Auditor>>) -> Self {
        self.audit = auditor;
        self
    }

    /// Serve the service-account issuer's discovery documents.
    pub fn with_issuer_discovery(
        mut self,
        discovery: Option<crate::serviceaccounts::discovery::IssuerDiscovery>,
    ) -> Self {
        self.issuer_discovery = discovery;
        self
    }

    /// Fires after every catalog change.
    /// Why storage is not being followed (a broken etcd watch), if it is not.
    pub fn storage_health_error(&self) -> Option<String> {
        self.storage.health_error().map(|e| e.to_string())
    }

    /// What signs and checks service-account tokens (the token controller signs
    /// legacy tokens with it).
    pub fn service_account_tokens(&self) -> Option<Arc<crate::serviceaccounts::Tokens>> {
        self.authn.service_account_tokens().cloned()
    }

    pub fn catalog_changes(&self) -> watch::Receiver<u64> {
        self.catalog_changes.subscribe()
    }

    /// Whether `group/version` is one of the types given at start (not a CRD's).
    pub fn is_builtin(&self, group: &str, version: &str) -> bool {
        self.builtins
            .iter()
            .any(|s| s.rtype.group == group && s.rtype.version == version)
    }

    /// Serve these custom resource types (replacing the previous set) next to the built-ins.
    pub fn publish_custom(&self, types: Vec<Arc<ResourceType>>) {
        // Held while building: the catalog has two writers (this and
        // `publish_remote`), each building on the catalog it read.
        let remotes = self.remote_discovery.lock();
        // Types that did not change keep their bound store (compiled once per CRD change).
        let previous = self.catalog();
        let custom = types.into_iter().map(|t| {
            previous
                .lookup(&t.group, &t.version, &t.plural)
                .filter(|s| Arc::ptr_eq(&s.rtype, &t))
                .cloned()
                .unwrap_or_else(|| served(t, &self.storage, &self.storage_prefix, &self.admission))
        });
        let all: Vec<Arc<Served>> = self.builtins.iter().cloned().chain(custom).collect();
        let kept: std::collections::HashSet<*const Served> = all.iter().map(Arc::as_ptr).collect();
        self.set_catalog(Catalog::build(&previous, all, &remotes));
        for gone in previous
            .served()
            .filter(|s| !kept.contains(&Arc::as_ptr(s)))
        {
            gone.retired.send_replace(true);
        }
    }

    /// Serve these extension servers' group-versions in discovery (unless nothing
    /// changed).
    pub fn publish_remote(&self, remotes: Vec<RemoteGroupVersion>) {
        let mut current = self.remote_discovery.lock();
        if *current == remotes {
            return;
        }
        let previous = self.catalog();
        let served = previous.served().cloned().collect();
        self.set_catalog(Catalog::build(&previous, served, &remotes));
        *current = remotes;
    }

    /// The extension servers' group-versions discovery shows.
    pub fn remote_group_versions(&self) -> Vec<RemoteGroupVersion> {
        self.remote_discovery.lock().clone()
    }

    pub fn catalog(&self) -> Arc<Catalog> {
        self.catalog.read().clone()
    }

    pub fn set_catalog(&self, catalog: Catalog) {
        *self.catalog.write() = Arc::new(catalog);
        self.catalog_changes.send_modify(|n| *n += 1);
    }
}

/// A resource type bound to storage.
fn served(
    rtype: Arc<ResourceType>,
    storage: &Arc<Storage>,
    prefix: &str,
    admission: &Option<Arc<dyn registry::GlobalAdmission>>,
) -> Arc<Served> {
    let store = registry::GenericStore::new(rtype.clone(), storage.clone(), prefix)
        .with_global_admission(admission.clone());
    Arc::new(Served::new(rtype, store))
}
