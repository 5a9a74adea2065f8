//! The CRD controller: accepts names, marks CRDs Established, records stored
//! versions, and publishes the served custom resource types whenever the set of
//! CRDs changes (the server swaps its catalog; no restart, no delay).

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use apimachinery::meta;
use registry::{GenericStore, ResourceType, WatchOptions};
use storage::WatchItem;

use crate::crd::CLEANUP_FINALIZER;
use crate::custom_resource::{served_types, storage_type};

const MANAGER: &str = "kubext-crd-controller";
const RETRY: Duration = Duration::from_millis(500);

/// Receives the full set of custom resource types after every change.
pub type Publish = Arc<dyn Fn(Vec<Arc<ResourceType>>) + Send + Sync>;

pub struct CrdController {
    pub crds: Arc<GenericStore>,
    pub publish: Publish,
    /// CRDs whose instances are being deleted right now.
    pub cleaning: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl CrdController {
    pub async fn run(self: Arc<Self>) {
        loop {
            if let Err(e) = self.watch_once().await {
                tracing::warn!(error = %e, "CRD controller watch ended; restarting");
            }
            tokio::time::sleep(RETRY).await;
        }
    }

    async fn watch_once(&self) -> Result<(), String> {
        let ctx = controllers::system_context("", MANAGER);
        let mut watcher = self
            .crds
            .watch(&ctx, WatchOptions::default())
            .await
            .map_err(|e| e.to_string())?;
        let mut known: BTreeMap<String, Value> = BTreeMap::new();
        for item in std::mem::take(&mut watcher.initial) {
            self.observe(&mut known, item).await;
        }
        self.republish(&known);
        while let Some(item) = watcher.events.recv().await {
            self.observe(&mut known, item).await;
            // Drain what else is queued before rebuilding routes once.
            while let Ok(more) = watcher.events.try_recv() {
                self.observe(&mut known, more).await;
            }
            self.republish(&known);
        }
        Ok(())
    }

    async fn observe(
        &self,
        known: &mut BTreeMap<String, Value>,
        item: WatchItem<registry::Object>,
    ) {
        match item {
            WatchItem::Added(o) | WatchItem::Modified(o) => {
                let name = meta::name(&o.value).to_string();
                known.insert(name.clone(), o.value.clone());
                if meta::deletion_timestamp(&o.value).is_some() {
                    self.start_cleanup(&name, &o.value);
                    return;
                }
                if let Some(status) = desired_status(&o.value)
                    && status != o.value.get("status").cloned().unwrap_or(Value::Null)
                {
                    self.write_status(&name, status).await;
                }
            }
            WatchItem::Deleted(o) => {
                known.remove(meta::name(&o.value));
            }
            WatchItem::Bookmark(_) => {}
        }
    }

    async fn write_status(&self, name: &str, status: Value) {
        let mut ctx = controllers::system_context("", MANAGER);
        ctx.subresource = Some("status".into());
        let result = self
            .crds
            .update_with(&ctx, name, |current| {
                let mut next = current.clone();
                next["status"] = status.clone();
                Ok(next)
            })
            .await;
        if let Err(e) = result
            && e.code() != 404
        {
            tracing::warn!(crd = name, error = %e, "cannot update CRD status");
        }
    }

    /// Delete every instance (honouring their finalizers), then release the CRD.
    fn start_cleanup(&self, name: &str, crd: &Value) {
        if !meta::finalizers(crd).contains(&CLEANUP_FINALIZER) {
            return;
        }
        let Ok(mut cleaning) = self.cleaning.lock() else {
            return;
        };
        if !cleaning.insert(name.to_string()) {
            return;
        }
        let crds = self.crds.clone();
        let (name, crd) = (name.to_string(), crd.clone());
        tokio::spawn(async move {
            delete_instances(&crds, &crd).await;
            release(&crds, &name).await;
        });
    }

    fn republish(&self, known: &BTreeMap<String, Value>) {
        let types: Vec<Arc<ResourceType>> = known
            .values()
            .flat_map(served_types)
            .map(Arc::new)
            .collect();
        (self.publish)(types);
    }
}

/// The status a CRD should have: names accepted, Established, stored versions.
fn desired_status(crd: &Value) -> Option<Value> {
    let names = crd.pointer("/spec/names")?.clone();
    let mut accepted = names.clone();
    if accepted
        .get("singular")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        let kind = accepted
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_lowercase();
        accepted["singular"] = json!(kind);
    }
    if accepted
        .get("listKind")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        let kind = accepted.get("kind").and_then(Value::as_str).unwrap_or("");
        accepted["listKind"] = json!(format!("{kind}List"));
    }
    let mut stored: Vec<Value> = crd
        .pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let storage = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|v| v.get("storage") == Some(&Value::Bool(true)))
        .and_then(|v| v.get("name").cloned());
    if let Some(s) = storage
        && !stored.contains(&s)
    {
        stored.push(s);
    }
    let existing = crd
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let condition = |kind: &str, reason: &str, message: &str| {
        // Keep the transition time of a condition that already has this status.
        let since = existing
            .iter()
            .find(|c| c["type"] == kind && c["status"] == "True")
            .and_then(|c| c.get("lastTransitionTime").cloned())
            .unwrap_or_else(|| json!(apimachinery::time::now_rfc3339()));
        json!({"type": kind, "status": "True", "lastTransitionTime": since, "reason": reason, "message": message})
    };
    Some(json!({
        "conditions": [
            condition("NamesAccepted", "NoConflicts", "no conflicts found"),
            condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        ],
        "acceptedNames": accepted,
        "storedVersions": stored,
    }))
}

/// Delete all instances of a CRD until none is left.
async fn delete_instances(crds: &GenericStore, crd: &Value) {
    let Some(rtype) = storage_type(crd) else {
        return;
    };
    let store = GenericStore::new(Arc::new(rtype), crds.storage().clone(), crds.prefix());
    let mut delay = Duration::from_millis(100);
    loop {
        let ctx = controllers::system_context("", MANAGER);
        match store.list(&ctx, registry::ListOptions::default()).await {
            Ok(list) if list.items.is_empty() => return,
            Ok(list) => {
                for item in list
                    .items
                    .iter()
                    .filter(|i| meta::deletion_timestamp(&i.value).is_none())
                {
                    let ctx = controllers::system_context(meta::namespace(&item.value), MANAGER);
                    let name = meta::name(&item.value);
                    if let Err(e) = store.delete(&ctx, name, &Default::default()).await
                        && e.code() != 404
                    {
                        tracing::warn!(name, error = %e, "cannot delete custom resource");
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot list custom resources for cleanup"),
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(2));
    }
}

/// Remove the cleanup finalizer; the store then deletes the CRD.
async fn release(crds: &GenericStore, name: &str) {
    let ctx = controllers::system_context("", MANAGER);
    let result = crds
        .update_with(&ctx, name, |current| {
            let mut next = current.clone();
            if let Some(list) = next
                .pointer_mut("/metadata/finalizers")
                .and_then(Value::as_array_mut)
            {
                list.retain(|f| f != CLEANUP_FINALIZER);
            }
            Ok(next)
        })
        .await;
    if let Err(e) = result
        && e.code() != 404
    {
        tracing::warn!(crd = name, error = %e, "cannot remove the cleanup finalizer");
    }
}
