//! Structural schema engine for custom resources, as kube-apiserver 1.32's
//! apiextensions-apiserver: compile an `openAPIV3Schema` into a
//! [`Structural`] schema, check that it is structural ([`structural_errors`]),
//! [`prune`] unknown fields, apply [`default`]s and [`validate`] values.
//!
//! Pure: no async, no IO.

pub mod check;
pub mod defaulting;
pub mod formats;
pub mod jsonpath;
pub mod pruning;
pub mod structural;
pub mod validate;

pub use check::{StructuralOptions, structural_errors, structural_errors_with};
pub use defaulting::default;
pub use pruning::prune;
pub use structural::{
    AdditionalProperties, Extensions, Pattern, SchemaError, Structural, ValidationRule,
    ValueValidation, compile,
};
pub use validate::{RuleEvaluator, validate, validate_with};
