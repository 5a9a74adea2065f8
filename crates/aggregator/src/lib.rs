//! The API aggregation layer: reaching the extension API servers named by
//! service-backed APIServices. `availability` checks them and publishes what
//! discovery shows of them; `proxy::Remotes` is the filter chain's `Delegation`
//! that forwards their group-versions; `namespaces` deletes their namespaced
//! objects with a namespace.
//!
//! Invariant: no request waits on a backend it does not go to; discovery and
//! OpenAPI are served from what `availability` last fetched.

pub mod availability;
pub mod namespaces;
pub mod proxy;

pub use proxy::Remotes;
