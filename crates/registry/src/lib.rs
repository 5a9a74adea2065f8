//! Generic resource storage: Kubernetes object semantics on top of `storage`.
//!
//! Invariant: no HTTP. Requests arrive as decoded JSON values plus options;
//! answers are JSON values or `StatusError`s. Storage errors become `Status`
//! in exactly one place (`errors`).

pub mod apply;
pub mod builtin;
pub mod encoding;
pub mod errors;
pub mod managed_fields;
pub mod object;
pub mod options;
pub mod pods;
pub mod resource;
pub mod reviews;
pub mod scale;
pub mod store;
pub mod table;
pub(crate) mod zero_fields;

pub use apimachinery::time::resource_age;

pub use encoding::{Head, HeadMeta, HeadOwner};
pub use object::{JsonCodec, Object};
pub use options::{AuditAnnotations, ListOptions, RequestContext, Warnings, WatchOptions};
pub use resource::{
    Admission, AdmittedObject, Allocation, AllocationPool, Allocator, Attributes, Converter,
    ExtraSubresource, FieldLabelError, FieldLabelRefusal, FieldLabels, GlobalAdmission, ObjectJson,
    Operation, Prepared, Provider, READ_VERBS, Reservation, ResourceType, ScalePaths,
    StorageVersion, Strategy, TableColumn,
};
pub use store::{
    DeleteOutcome, GenericStore, Incoming, ListResult, Replaced, Storage, random_suffix,
};
pub use zero_fields::quantity_error;
