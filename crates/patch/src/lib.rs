//! Patch application for kubext, matching kube-apiserver 1.32.
//!
//! The three PATCH content types kube-apiserver accepts each live in their
//! own module:
//!
//! * [`json_patch`] — `application/json-patch+json` (RFC 6902 with
//!   evanphx/json-patch v4 semantics);
//! * [`merge_patch`] — `application/merge-patch+json` (RFC 7386), plus the
//!   two-way diff [`merge_patch::create`];
//! * [`strategic`] — `application/strategic-merge-patch+json`, driven by
//!   per-type metadata from [`schema`].
//!
//! Everything here is pure: objects in, object or [`PatchError`] out. The
//! error variant tells the server which HTTP status upstream would use.

pub mod builtin;
mod error;
mod gofmt;
mod gosort;
pub mod json_patch;
pub mod merge_patch;
pub mod schema;
pub mod strategic;

pub use builtin::builtin_schema;
pub use error::PatchError;
pub use schema::{ANY_FIELD, FieldMeta, ListType, PatchMeta, PatchSchema, Strategy, common_schema};
