//! Upstream's validation of table kinds (`pkg/apis/<group>/validation`) that
//! users commonly hit, with upstream's field paths and messages.

use apimachinery::ErrorList;
use serde_json::Value;

/// Validation of a new object of `group`/`kind` (after defaulting).
pub fn on_create(_group: &str, _kind: &str) -> Option<fn(&Value) -> ErrorList> {
    None
}

/// Validation of an update of `group`/`kind`: `(new, old)`, run instead of
/// [`on_create`]'s (it includes it where upstream does).
pub fn on_update(_group: &str, _kind: &str) -> Option<fn(&Value, &Value) -> ErrorList> {
    None
}
