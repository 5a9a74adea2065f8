//! Read access to an extension server's own objects (for admission rules that
//! look at other objects, like sample-apiserver's BanFlunder).

use std::sync::{Arc, OnceLock};

use apimachinery::StatusError;
use registry::{ListOptions, RequestContext};
use serde_json::Value;
use server::api::Api;

/// A handle that works once the server started.
#[derive(Clone, Default)]
pub struct Objects(Arc<OnceLock<Arc<Api>>>);

impl Objects {
    pub(crate) fn bind(&self, api: Arc<Api>) {
        let _ = self.0.set(api);
    }

    /// Every object of `group/version` `plural` in `namespace` ("" for all, or for
    /// cluster-scoped types).
    pub async fn list(
        &self,
        group: &str,
        version: &str,
        plural: &str,
        namespace: &str,
    ) -> Result<Vec<Value>, StatusError> {
        let api = self
            .0
            .get()
            .ok_or_else(|| StatusError::service_unavailable("the server is starting"))?;
        let catalog = api.catalog();
        let served = catalog
            .lookup(group, version, plural)
            .ok_or_else(StatusError::path_not_found)?;
        let ctx = RequestContext {
            namespace: namespace.to_string(),
            ..Default::default()
        };
        let listed = served.store.list(&ctx, ListOptions::default()).await?;
        Ok(listed.items.iter().map(|o| o.to_value()).collect())
    }
}
