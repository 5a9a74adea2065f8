//! The kubext HTTP server: TLS, authentication, routing, discovery and the verb
//! handlers, wired to the registry and storage.
//!
//! Invariant: all HTTP lives here. Every error leaves as a `metav1.Status`.

pub mod api;
pub mod audit;
pub mod authn;
pub mod authz;
mod boxed;
pub mod catalog;
pub mod chain;
pub mod config;
pub mod delegation;
pub mod encode;
pub mod endpoints;
#[cfg(feature = "etcd")]
pub mod etcd_tls;
pub mod forward;
pub mod front_proxy;
pub mod handlers;
pub mod impersonation;
pub mod lifecycle;
pub mod metrics;
pub mod negotiate;
pub mod openapi;
pub mod pki;
pub mod query;
pub mod remote_discovery;
pub mod request_info;
pub mod response;
pub mod server;
pub mod serviceaccounts;
pub mod strict;
pub mod tls;
pub mod user;

pub use api::Serving;
pub use config::{Config, StorageKind};
pub use server::{PreShutdownHook, Prepared, Running, prepare, start, wait_for_shutdown_signal};
