//! CustomResourceDefinitions: the `apiextensions.k8s.io/v1` resource, the
//! resource types that serve custom resources, and the controller that turns an
//! accepted CRD into served routes.
//!
//! Invariant: no HTTP. The server receives the custom resource types through
//! the `Publish` callback and swaps its catalog.
//!
//! Conversion webhooks and CEL validation rules are not implemented yet.

pub mod controller;
pub mod crd;
pub mod custom_resource;
pub mod list_types;
pub mod scale;

pub use controller::CrdController;
pub use crd::crd_resource_type;
pub use custom_resource::served_types;
