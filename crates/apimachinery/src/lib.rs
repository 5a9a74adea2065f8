//! Wire types and conventions of the Kubernetes API, on unstructured JSON.
//!
//! Invariant: pure. No async, no IO, no dependency on any other kubext crate.
//! Everything here is strings/values in, values/errors out.

pub mod field;
pub mod gofmt;
pub mod gvk;
pub mod json;
mod json_order;
pub mod meta;
pub mod meta_decode;
pub mod object_meta;
pub mod options;
pub mod quantity;
pub mod selector;
pub mod status;
pub mod strict;
pub mod subresource;
pub mod time;
pub mod validation;
pub mod verb;
pub mod webhook_config;

pub use field::{ErrorList, FieldError, FieldPath};
pub use gvk::{GroupResource, GroupVersion, GroupVersionKind};
pub use object_meta::{DynamicObject, ObjectMeta};
pub use status::{Status, StatusCause, StatusError};
pub use subresource::Subresource;
pub use verb::Verb;
