//! Reinvocation of mutating admission (upstream's
//! `pkg/admission/reinvocation.go`): round 0 runs the mutating policies,
//! then the mutating webhooks; when a webhook changes the object, round 1
//! runs the chain again, but only what asked for it with
//! `reinvocationPolicy: IfNeeded` and saw the object change after it ran.

use std::collections::HashSet;

use serde_json::Value;

/// What round 0 leaves for round 1.
#[derive(Default)]
pub struct Reinvocation {
    /// `IfNeeded` policies that ran (by position), and the object as each
    /// left it.
    pub policies: Vec<(usize, Value)>,
    /// `IfNeeded` webhooks called so far (by index).
    pub webhooks_invoked: Vec<usize>,
    /// Webhooks to call in round 1.
    pub webhooks_to_call: HashSet<usize>,
    /// The object as the webhooks last left it.
    pub webhook_output: Option<Value>,
    /// Whether round 1 runs.
    pub needed: bool,
}

/// Which round of the mutating chain is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Round {
    First,
    Reinvocation,
}

impl Round {
    /// Upstream's audit annotation keys count rounds from 0.
    pub fn number(self) -> usize {
        match self {
            Round::First => 0,
            Round::Reinvocation => 1,
        }
    }
}
