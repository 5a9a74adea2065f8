//! kubext's own controllers, running in-process against the registry.
//!
//! Invariant: controllers talk to `registry::GenericStore`s, never to HTTP, and
//! never crash the server: every failure is logged and retried with backoff.

pub mod apiservices;
pub mod crd;
pub mod gc;
pub mod identity;
pub mod leader;
pub mod namespace;
pub mod runtime;
pub mod service_account_tokens;
pub mod storage_protection;

use std::sync::Arc;

use registry::{GenericStore, RequestContext};

/// The resources a controller may act on, by plural (built-ins) or group/plural.
pub trait Resources: Send + Sync + 'static {
    fn store(&self, group: &str, plural: &str) -> Option<Arc<GenericStore>>;
    /// Every namespaced resource type currently served (one store per storage path).
    fn namespaced(&self) -> Vec<Arc<GenericStore>>;
    /// A store for objects of `kind` in `group` (any served version: they share
    /// storage).
    fn store_for_kind(&self, group: &str, kind: &str) -> Option<Arc<GenericStore>>;
}

/// The identity controllers act as.
pub fn system_context(namespace: &str, manager: &str) -> RequestContext {
    RequestContext {
        user: "system:kube-controller-manager".into(),
        groups: vec!["system:masters".into()],
        namespace: namespace.into(),
        field_manager: manager.into(),
        ..Default::default()
    }
}
