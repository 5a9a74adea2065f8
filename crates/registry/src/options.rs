//! Request options as the generic store consumes them (already parsed from the URL).

use apimachinery::StatusError;
use apimachinery::selector::{FieldSelector, LabelSelector};
use base64::Engine;
use serde::{Deserialize, Serialize};

/// Who is asking, and the options every write shares.
#[derive(Debug, Clone, Default)]
pub struct RequestContext {
    pub user: String,
    pub groups: Vec<String>,
    pub uid: String,
    /// The user's extra attributes (from a front proxy's `X-Remote-Extra-*`).
    pub extra: std::collections::BTreeMap<String, Vec<String>>,
    /// Namespace from the URL ("" for cluster-wide requests).
    pub namespace: String,
    pub dry_run: bool,
    /// `fieldManager` query parameter, or the one derived from the user agent.
    pub field_manager: String,
    /// The subresource written through (status, scale, finalize).
    pub subresource: apimachinery::Subresource,
    /// Warnings admission adds for the response (`Warning` headers).
    pub warnings: Warnings,
    /// Annotations admission adds to the request's audit event.
    pub audit_annotations: AuditAnnotations,
}

/// Audit annotations collected while a request runs (admission policies'
/// `auditAnnotations` and `Audit` actions, webhooks'); the audit stage
/// records them.
#[derive(Debug, Clone, Default)]
pub struct AuditAnnotations(std::sync::Arc<std::sync::Mutex<Annotations>>);

type AnnotationMap = std::collections::BTreeMap<String, String>;

#[derive(Debug, Default)]
struct Annotations {
    /// Recorded at level Metadata and above.
    metadata: AnnotationMap,
    /// Recorded at level Request and above (they show request content).
    request: AnnotationMap,
}

impl AuditAnnotations {
    /// Add `key`; an existing key keeps its first value (upstream).
    pub fn add(&self, key: String, value: String) {
        if let Ok(mut a) = self.0.lock() {
            a.metadata.entry(key).or_insert(value);
        }
    }

    /// Add `key`, to be recorded only at level Request and above.
    pub fn add_at_request_level(&self, key: String, value: String) {
        if let Ok(mut a) = self.0.lock() {
            a.request.entry(key).or_insert(value);
        }
    }

    /// The annotations so far, emptied: those for every level, and those
    /// for level Request and above.
    pub fn take(&self) -> (AnnotationMap, AnnotationMap) {
        self.0
            .lock()
            .map(|mut a| {
                let a = std::mem::take(&mut *a);
                (a.metadata, a.request)
            })
            .unwrap_or_default()
    }
}

/// Warnings collected while a request runs; shared by the request's clones.
#[derive(Debug, Clone, Default)]
pub struct Warnings(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl Warnings {
    /// Add `warning` unless it was added already (upstream's recorder dedupes).
    pub fn add(&self, warning: String) {
        if let Ok(mut w) = self.0.lock()
            && !w.contains(&warning)
        {
            w.push(warning);
        }
    }

    /// The warnings so far, emptied.
    pub fn take(&self) -> Vec<String> {
        self.0
            .lock()
            .map(|mut w| std::mem::take(&mut *w))
            .unwrap_or_default()
    }
}

/// How a list is to be served (`resourceVersion` + `resourceVersionMatch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadFreshness {
    /// Unset: the latest state (a consistent read).
    #[default]
    Latest,
    /// `resourceVersion=0`: whatever the cache has.
    Any,
    /// At least this revision.
    NotOlderThan(i64),
    /// Exactly this revision.
    Exact(i64),
}

#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    pub label_selector: Option<LabelSelector>,
    pub field_selector: Option<FieldSelector>,
    pub limit: usize,
    pub continue_token: Option<ContinueToken>,
    pub freshness: ReadFreshness,
}

#[derive(Debug, Clone, Default)]
pub struct WatchOptions {
    pub label_selector: Option<LabelSelector>,
    pub field_selector: Option<FieldSelector>,
    /// `None`: start with the current state; `Some(rv)`: resume after rv.
    pub resource_version: Option<i64>,
    pub send_initial_events: bool,
    pub bookmarks: bool,
}

/// The opaque `continue` token: the snapshot revision and the last key returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContinueToken {
    #[serde(rename = "v")]
    pub version: String,
    pub rv: i64,
    pub start: String,
}

impl ContinueToken {
    /// The revision of a token that continues at the latest revision (the
    /// one a 410 hands out when the token's own was compacted away).
    pub const LATEST: i64 = -1;

    pub fn new(rv: i64, last_key: &str) -> Self {
        ContinueToken {
            version: "meta.k8s.io/v1".into(),
            rv,
            start: last_key.into(),
        }
    }

    pub fn encode(&self) -> String {
        let json = serde_json::to_vec(self).unwrap_or_default();
        base64::engine::general_purpose::URL_SAFE.encode(json)
    }

    pub fn decode(token: &str) -> Result<Self, StatusError> {
        let invalid = || StatusError::bad_request(format!("invalid continue token: {token}"));
        let raw = base64::engine::general_purpose::URL_SAFE
            .decode(token)
            .map_err(|_| invalid())?;
        let parsed: ContinueToken = serde_json::from_slice(&raw).map_err(|_| invalid())?;
        if parsed.version != "meta.k8s.io/v1"
            || (parsed.rv <= 0 && parsed.rv != ContinueToken::LATEST)
        {
            return Err(invalid());
        }
        Ok(parsed)
    }
}

pub use apimachinery::options::PropagationPolicy;

/// DELETE options (body `DeleteOptions` or query parameters).
#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    pub precondition_uid: Option<String>,
    pub precondition_resource_version: Option<String>,
    pub grace_period_seconds: Option<i64>,
    pub propagation_policy: Option<PropagationPolicy>,
    /// The deprecated `orphanDependents`, as given (it also sets
    /// `propagation_policy`); an explicit `false` makes a pending delete a 202.
    pub orphan_dependents: Option<bool>,
}

impl DeleteOptions {
    /// The finalizer through which the garbage collector carries out the policy:
    /// dependents deleted first (`Foreground`) or released (`Orphan`).
    pub fn propagation_finalizer(&self) -> Option<&'static str> {
        match self.propagation_policy {
            Some(PropagationPolicy::Foreground) => Some("foregroundDeletion"),
            Some(PropagationPolicy::Orphan) => Some("orphan"),
            _ => None,
        }
    }
}
