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
