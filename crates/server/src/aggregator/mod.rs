//! The API aggregation layer: reaching extension API servers named by APIServices.

pub mod availability;
pub mod discovery;
pub mod namespaces;
pub mod proxy;
pub mod transport;
