//! The API aggregation layer: reaching extension API servers named by APIServices.

pub mod availability;
pub mod proxy;
pub mod transport;
