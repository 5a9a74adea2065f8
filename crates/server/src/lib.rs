//! The kubext HTTP server: TLS, authentication, routing, discovery and the verb
//! handlers, wired to the registry and storage.
//!
//! Invariant: all HTTP lives here. Every error leaves as a `metav1.Status`.

pub mod aggregator;
pub mod api;
pub mod authn;
pub mod authz;
pub mod catalog;
pub mod computed;
pub mod config;
pub mod encode;
pub mod front_proxy;
pub mod kubernetes_service;
pub mod metrics;
pub mod negotiate;
pub mod openapi;
pub mod patching;
pub mod pki;
pub mod query;
pub mod request_info;
pub mod resources;
pub mod response;
pub mod reviews;
pub mod scale;
pub mod server;
pub mod serviceaccounts;
pub mod tls;
pub mod watch;

pub use config::{Config, StorageKind};
pub use server::{Running, start, wait_for_shutdown_signal};
