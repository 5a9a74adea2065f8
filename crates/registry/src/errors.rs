//! The one place storage errors become API errors.

use apimachinery::{GroupResource, StatusError};
use storage::Error;

pub fn to_status(err: Error, gr: &GroupResource, name: &str) -> StatusError {
    match err {
        Error::NotFound(_) => StatusError::not_found(gr, name),
        Error::AlreadyExists(_) => StatusError::already_exists(gr, name),
        Error::Conflict { .. } => StatusError::modified(gr, name),
        Error::Compacted {
            requested,
            compacted,
        } => StatusError::expired(format!(
            "too old resource version: {requested} ({compacted})"
        )),
        Error::FutureRevision { requested, current } => StatusError::timeout(format!(
            "Too large resource version: {requested}, current: {current}"
        )),
        Error::Unavailable(msg) => {
            StatusError::service_unavailable(format!("storage is unavailable: {msg}"))
        }
        // A write whose outcome is unknown: upstream's answer when etcd did not
        // answer within the request's deadline.
        Error::Timeout(msg) => {
            tracing::warn!(%msg, "storage write outcome unknown");
            StatusError::timeout(
                "Timeout: request did not complete within requested timeout - context deadline exceeded",
            )
        }
        Error::Corrupt(msg) => StatusError::internal(format!("corrupt object in storage: {msg}")),
    }
}
