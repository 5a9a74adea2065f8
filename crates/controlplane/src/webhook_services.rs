//! Where webhooks are: the Services and EndpointSlices (or v1 Endpoints) the
//! server stores, read through its catalog, for the webhook client's
//! `clientConfig.service` (admission and CRD conversion webhooks).

use std::sync::{Arc, Weak};

use apimachinery::selector::LabelSelector;
use registry::ListOptions;
use serde_json::Value;
use server::api::Api;

pub struct CatalogServices {
    pub api: Weak<Api>,
}

/// A webhook client reading Services from `api`.
pub fn caller(api: &Arc<Api>) -> webhook::Caller {
    webhook::Caller::new(Arc::new(CatalogServices {
        api: Arc::downgrade(api),
    }))
}

#[async_trait::async_trait]
impl webhook::Directory for CatalogServices {
    async fn service_endpoints(&self, namespace: &str, name: &str) -> (Option<Value>, Vec<Value>) {
        let Some(api) = self.api.upgrade() else {
            return (None, Vec::new());
        };
        let catalog = api.catalog();
        let mut ctx = runtime::system_context("", "kubext-webhooks");
        ctx.namespace = namespace.to_string();
        let get = |group: &str, plural: &str| {
            let served = catalog.lookup(group, "v1", plural);
            let ctx = &ctx;
            async move { served?.store.get(ctx, name).await.ok() }
        };
        let Some(service) = get("", "services").await else {
            return (None, Vec::new());
        };
        let mut slices = Vec::new();
        if let Some(served) = catalog.lookup("discovery.k8s.io", "v1", "endpointslices") {
            let opts = ListOptions {
                label_selector: LabelSelector::parse(&format!("kubernetes.io/service-name={name}"))
                    .ok(),
                ..Default::default()
            };
            if let Ok(listed) = served.store.list(&ctx, opts).await {
                slices = listed.items.iter().map(|o| o.to_value()).collect();
            }
        }
        // Without EndpointSlices, a v1 Endpoints object of the same name will do.
        if slices.is_empty()
            && let Some(endpoints) = get("", "endpoints").await
        {
            slices = webhook::service::slices_of_endpoints(&endpoints.value());
        }
        (Some(service.to_value()), slices)
    }
}
