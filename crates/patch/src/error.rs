//! The one error type every patch flavour returns.
//!
//! kube-apiserver answers a bad patch with one of three HTTP statuses, and
//! which one depends on *why* the patch was refused, not on which patch type
//! was used. The variants mirror those three outcomes so the server can map
//! them without string matching.

/// Why a patch could not be applied.
///
/// The message text follows upstream's wording (evanphx/json-patch v4.12.0 and
/// k8s.io/apimachinery/pkg/util/strategicpatch) closely enough that clients
/// grepping for it keep working.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// The patch document itself is malformed: not JSON, wrong top-level
    /// shape, an operation field of the wrong JSON type, or a broken
    /// strategic-merge directive (`$setElementOrder`, `$retainKeys`,
    /// `$deleteFromPrimitiveList`). kube-apiserver answers `400 BadRequest`.
    #[error("{0}")]
    Malformed(String),
    /// The patch is well-formed but cannot be applied to this object: a JSON
    /// patch operation failed (missing path, failed `test`, bad index, copy
    /// limit) or a strategic patch hit a list of lists. kube-apiserver answers
    /// `422 Unprocessable Entity` with this text as the message.
    #[error("{0}")]
    Failed(String),
    /// The patch disagrees with the object's shape or the type's patch
    /// metadata (missing merge key, unknown `$patch` value, mixed list element
    /// types, ...). Upstream returns these as plain Go errors, which
    /// kube-apiserver reports as `500 Internal Server Error` (reason
    /// `Unknown`) carrying this text.
    #[error("{0}")]
    Invalid(String),
}

impl PatchError {
    /// The HTTP status kube-apiserver 1.32 uses for this error.
    pub fn http_status(&self) -> u16 {
        match self {
            PatchError::Malformed(_) => 400,
            PatchError::Failed(_) => 422,
            PatchError::Invalid(_) => 500,
        }
    }

    /// The human-readable message, without the variant.
    pub fn message(&self) -> &str {
        match self {
            PatchError::Malformed(m) | PatchError::Failed(m) | PatchError::Invalid(m) => m,
        }
    }
}
