//! The one client for calls out of the control plane: admission webhooks, CRD
//! conversion webhooks and the aggregator's extension servers. `client` holds
//! TLS connection pools; `service` turns a `clientConfig.service` into an
//! address; `config` turns a webhook's `clientConfig` into a target, with
//! upstream's URL and path checks.
//!
//! Invariant: every call is bounded by a timeout; nothing here knows
//! admission or conversion.

pub mod client;
pub mod service;

pub use client::Backend;
