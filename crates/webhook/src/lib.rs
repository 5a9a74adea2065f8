//! The one client for calls out of the control plane: admission webhooks, CRD
//! conversion webhooks and the aggregator's extension servers. `client` holds
//! TLS connection pools; `service` turns a `clientConfig.service` into an
//! address; `caller` calls the webhook a `clientConfig` names; `metrics`
//! counts the calls under upstream's names; `tls` is the client TLS every
//! call out shares (the server's proxy too).
//!
//! Invariant: every call is bounded by a timeout; nothing here knows
//! admission or conversion.

pub mod caller;
pub mod client;
pub mod metrics;
pub mod service;
pub mod tls;

pub use caller::{
    CallError, Caller, ClientConfig, ClientError, Directory, ReviewVersion, Target, TargetError,
};
pub use client::{Backend, PemError, RequestError, TlsSetupError};
