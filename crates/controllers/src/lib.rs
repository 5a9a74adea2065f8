//! kubext's own controllers, on the controller runtime (`kubext-runtime`),
//! running in-process against the registry.
//!
//! Invariant: controllers talk to `registry::GenericStore`s, never to HTTP, and
//! never crash the server: every failure is logged and retried with backoff.

pub mod apiservices;
pub mod crd;
pub mod gc;
pub mod identity;
pub mod namespace;
pub mod service_account_tokens;
pub mod storage_protection;

/// Why a controller's pass failed. The runtime logs it once and queues the key
/// again after its backoff.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A resource the controller reads or writes is not served.
    #[error("{0} are not served")]
    NotServed(&'static str),
    /// A read or write through a store failed.
    #[error("{what}: {status}")]
    Api {
        what: String,
        status: apimachinery::StatusError,
    },
    /// A terminating namespace still holds objects (or some could not be
    /// deleted): the next pass tries again.
    #[error("{remaining} objects remaining, {failures} failures")]
    NamespaceNotEmpty { remaining: usize, failures: usize },
    /// A deleted CRD's instances are not all gone after a round (upstream's
    /// condition message).
    #[error("could not confirm zero CustomResources remaining: {0}")]
    InstancesRemain(#[source] crd::InstancesRemain),
    /// The served types of a deleted CRD did not come to refuse creates in time.
    #[error("the types of deleted CRD {0} still accept creates")]
    CreatesNotRefused(String),
    #[error(transparent)]
    Sign(#[from] service_account_tokens::SignError),
}

/// `Error::Api` for a store call described by `what` (`map_err(api("…"))`).
fn api(what: impl Into<String>) -> impl FnOnce(apimachinery::StatusError) -> Error {
    let what = what.into();
    move |status| Error::Api { what, status }
}

/// Lock state a feed and a controller's workers share. No code panics while
/// holding it, so a poisoned lock still guards consistent state.
fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
