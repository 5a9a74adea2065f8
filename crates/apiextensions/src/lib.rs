//! CustomResourceDefinitions: the `apiextensions.k8s.io/v1` resource and the
//! compilation of a CRD's versions into the resource types that serve custom
//! resources (the CRD controller in `controllers::crd` runs it).
//!
//! Invariant: compilation and strategies, no tasks; the only call out is a
//! CRD's conversion webhook (`conversion`), through the `webhook` client the
//! caller gives. Aggregated servers (`kubext-apiserver`) compile their types
//! with it too.

pub mod conversion;
pub mod crd;
pub mod custom_resource;
pub mod list_types;
pub mod scale;

pub use crd::crd_resource_type;
pub use custom_resource::served_types;
