//! Typed request options from the wire: `DeleteOptions` bodies and the deletion
//! propagation policy.

use serde::Deserialize;

/// What happens to an object's dependents when it is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PropagationPolicy {
    /// Dependents are released (their owner references removed).
    Orphan,
    /// The owner goes at once; the garbage collector deletes dependents after.
    Background,
    /// Dependents are deleted first; the owner waits for them.
    Foreground,
}

impl PropagationPolicy {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "Orphan" => Some(Self::Orphan),
            "Background" => Some(Self::Background),
            "Foreground" => Some(Self::Foreground),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Orphan => "Orphan",
            Self::Background => "Background",
            Self::Foreground => "Foreground",
        }
    }

    /// The deprecated `orphanDependents` flag's meaning.
    pub fn from_orphan_dependents(orphan: bool) -> Self {
        if orphan {
            Self::Orphan
        } else {
            Self::Background
        }
    }
}

/// A `DeleteOptions` body (`meta.k8s.io/v1`), as sent with DELETE.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteOptionsBody {
    pub grace_period_seconds: Option<i64>,
    pub preconditions: Option<Preconditions>,
    pub orphan_dependents: Option<bool>,
    /// Checked against [`PropagationPolicy`] by the caller, for upstream's message.
    pub propagation_policy: Option<String>,
    pub dry_run: Option<Vec<String>>,
}

/// Conditions a DELETE must meet.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Preconditions {
    pub uid: Option<String>,
    pub resource_version: Option<String>,
}

/// `fieldValidation`: what a write does with fields the schema does not know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldValidation {
    /// Drop them silently.
    Ignore,
    /// Drop them and say so in `Warning` headers (the default).
    #[default]
    Warn,
    /// Reject the request.
    Strict,
}

impl FieldValidation {
    /// The query value; `None` for anything else (empty means the default).
    pub fn parse(value: &str) -> Option<FieldValidation> {
        match value {
            "" | "Warn" => Some(FieldValidation::Warn),
            "Ignore" => Some(FieldValidation::Ignore),
            "Strict" => Some(FieldValidation::Strict),
            _ => None,
        }
    }
}
