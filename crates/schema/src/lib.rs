//! Structural schema engine for custom resources, as kube-apiserver 1.32's
//! apiextensions-apiserver. Pure: no async, no IO.
//!
//! - [`Structural::compile`] / [`compile`]: an `openAPIV3Schema` (JSON) into a
//!   typed [`Structural`] tree; patterns are compiled once, here.
//! - [`structural_errors`] / [`structural_errors_with`]: the CRD-time schema
//!   checks (upstream `ValidateCustomResourceDefinitionOpenAPISchema`,
//!   `ValidateStructural` and `ValidateDefaults`), on the raw JSON, with
//!   upstream's messages and paths.
//! - [`prune`]: drop unknown fields, returning their paths for
//!   `unknown field "spec.foo"` warnings.
//! - [`default`]: apply defaults; [`defaulting::prune_non_nullable_nulls`]
//!   drops non-nullable nulls without defaults (run after defaulting).
//! - [`validate`] / [`validate_with`]: value validation with kube-openapi's
//!   texts as converted by apiextensions-apiserver, plus list-type set/map
//!   uniqueness and embedded-resource apiVersion/kind/metadata checks, with
//!   CRDValidationRatcheting (errors of unchanged subtrees are dropped).
//! - [`RuleEvaluator`]: the hook for `x-kubernetes-validations` (CEL); the
//!   rules are kept raw in [`Extensions::validations`].
//!
//! The usual order on create/update is: [`prune`], [`default`],
//! [`defaulting::prune_non_nullable_nulls`], then [`validate`].

pub mod check;
pub mod defaulting;
pub mod formats;
pub mod jsonpath;
pub mod pruning;
pub mod structural;
pub mod validate;

pub use check::{StructuralOptions, structural_errors, structural_errors_with};
pub use defaulting::default;
pub use pruning::{prune, prune_root_metadata};
pub use structural::{
    AdditionalProperties, Below, Extensions, Pattern, SchemaError, Structural, ValidationRule,
    ValueValidation, compile,
};
pub use validate::{
    NodeContext, RuleContext, RuleEvaluator, evaluate_rules, has_validation_rules, validate,
    validate_with,
};
