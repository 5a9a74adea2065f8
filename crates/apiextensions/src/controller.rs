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

/// A CRD's [`compile_key`] and the resource types compiled from it.
pub type Compiled = (String, Vec<Arc<ResourceType>>);

pub struct CrdController {
    pub crds: Arc<GenericStore>,
    pub publish: Publish,
    /// CRDs whose instances are being deleted right now.
    pub cleaning: std::sync::Mutex<std::collections::HashSet<String>>,
    /// Compiled types per CRD, keyed by [`compile_key`]: a change to one CRD
    /// recompiles only that CRD's schemas and JSONPaths.
    pub compiled: std::sync::Mutex<std::collections::HashMap<String, Compiled>>,
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
        self.sync(&known).await;
        while let Some(item) = watcher.events.recv().await {
            self.observe(&mut known, item).await;
            // Drain what else is queued before reconciling and rebuilding routes once.
            while let Ok(more) = watcher.events.try_recv() {
                self.observe(&mut known, more).await;
            }
            self.sync(&known).await;
        }
        Ok(())
    }

    /// Serve what the CRDs' statuses are about to say, then write the statuses: a
    /// client that sees `Established=True` can use the resource at once.
    async fn sync(&self, known: &BTreeMap<String, Value>) {
        let statuses = self.reconcile(known);
        self.republish(known, &statuses);
        for (name, status) in statuses {
            self.write_status(&name, status).await;
        }
    }

    async fn observe(
        &self,
        known: &mut BTreeMap<String, Value>,
        item: WatchItem<registry::Object>,
    ) {
        match item {
            WatchItem::Added(o) | WatchItem::Modified(o) => {
                let name = meta::name(&o.value).to_string();
                if meta::deletion_timestamp(&o.value).is_some() {
                    self.start_cleanup(&name, &o.value);
                }
                known.insert(name, o.value.clone());
            }
            WatchItem::Deleted(o) => {
                known.remove(meta::name(&o.value));
            }
            WatchItem::Bookmark(_) => {}
        }
    }

    /// The statuses that differ from what every CRD should have: names accepted
    /// unless another CRD of the group holds them (older claims win), Established,
    /// stored versions.
    fn reconcile(&self, known: &BTreeMap<String, Value>) -> BTreeMap<String, Value> {
        let mut changed = BTreeMap::new();
        let mut order: Vec<&Value> = known
            .values()
            .filter(|c| meta::deletion_timestamp(c).is_none())
            .collect();
        order.sort_by_key(|c| {
            (
                !names_accepted(c),
                meta::str_field(c, "creationTimestamp")
                    .unwrap_or("")
                    .to_string(),
                meta::name(c).to_string(),
            )
        });
        // Names only conflict within a group.
        let mut claimed: std::collections::HashMap<&str, Vec<&Value>> = Default::default();
        for crd in order {
            let group = crd
                .pointer("/spec/group")
                .and_then(Value::as_str)
                .unwrap_or("");
            let in_group = claimed.entry(group).or_default();
            let conflict = naming_conflict(crd, in_group);
            if conflict.is_none() {
                in_group.push(crd);
            }
            if let Some(status) = desired_status(crd, conflict)
                && Some(&status) != crd.get("status")
            {
                changed.insert(meta::name(crd).to_string(), status);
            }
        }
        changed
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

    /// Publish the types of every CRD, as it is or with the status it is about to
    /// get (`pending`).
    fn republish(&self, known: &BTreeMap<String, Value>, pending: &BTreeMap<String, Value>) {
        let Ok(mut compiled) = self.compiled.lock() else {
            return;
        };
        compiled.retain(|name, _| known.contains_key(name));
        let mut types = Vec::new();
        for (name, crd) in known {
            let status = pending.get(name).or_else(|| crd.get("status"));
            let key = compile_key(crd, status);
            let entry = compiled.entry(name.clone()).or_default();
            if entry.0 != key {
                let types = match pending.get(name) {
                    Some(status) => {
                        let mut next = crd.clone();
                        next["status"] = status.clone();
                        served_types(&next)
                    }
                    None => served_types(crd),
                };
                *entry = (key, types.into_iter().map(Arc::new).collect());
            }
            types.extend(entry.1.iter().cloned());
        }
        drop(compiled);
        (self.publish)(types);
    }
}

/// What the served types of a CRD depend on: which CRD (uid), its spec
/// (generation), whether it is established and whether it is terminating. Status
/// writes that change none of these keep the compiled types (and their stores).
fn compile_key(crd: &Value, status: Option<&Value>) -> String {
    let established = status
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Established" && c["status"] == "True");
    format!(
        "{}/{}/{established}/{}",
        meta::uid(crd),
        crd.pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0),
        meta::deletion_timestamp(crd).is_some(),
    )
}

/// The status a CRD should have: names accepted, Established, stored versions.
fn names_accepted(crd: &Value) -> bool {
    condition_is_true(crd, "NamesAccepted")
}

fn condition_is_true(crd: &Value, kind: &str) -> bool {
    crd.pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == kind && c["status"] == "True")
}

/// (reason, message) when a name of `crd` is taken by one of the CRDs of its
/// group that claimed their names first.
fn naming_conflict(crd: &Value, claimed: &[&Value]) -> Option<(&'static str, String)> {
    let names = |c: &Value, field: &str| -> Vec<String> {
        match c
            .get("spec")
            .and_then(|s| s.get("names"))
            .and_then(|n| n.get(field))
        {
            Some(Value::String(s)) if !s.is_empty() => vec![s.clone()],
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect(),
            _ => Vec::new(),
        }
    };
    let checks = [
        ("plural", "PluralConflict"),
        ("singular", "SingularConflict"),
        ("shortNames", "ShortNamesConflict"),
        ("kind", "KindConflict"),
        ("listKind", "ListKindConflict"),
    ];
    for other in claimed {
        for (field, reason) in checks {
            let theirs = names(other, field);
            if let Some(taken) = names(crd, field).into_iter().find(|n| theirs.contains(n)) {
                return Some((reason, format!("\"{taken}\" is already in use")));
            }
        }
    }
    None
}

fn desired_status(crd: &Value, conflict: Option<(&'static str, String)>) -> Option<Value> {
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
    let condition = |kind: &str, status: &str, reason: &str, message: &str| {
        // Keep the transition time of a condition that already has this status.
        let since = existing
            .iter()
            .find(|c| c["type"] == kind && c["status"] == status)
            .and_then(|c| c.get("lastTransitionTime").cloned())
            .unwrap_or_else(|| json!(apimachinery::time::now_rfc3339()));
        json!({"type": kind, "status": status, "lastTransitionTime": since, "reason": reason, "message": message})
    };
    let Some((reason, message)) = conflict else {
        return Some(json!({
            "conditions": [
                condition("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
                condition("Established", "True", "InitialNamesAccepted", "the initial names have been accepted"),
            ],
            "acceptedNames": accepted,
            "storedVersions": stored,
        }));
    };
    // Names in use elsewhere: keep what was accepted before (if anything) and stay
    // established only if it already was.
    let previous = crd
        .pointer("/status/acceptedNames")
        .cloned()
        .unwrap_or_else(|| json!({"plural": "", "kind": ""}));
    let established = if condition_is_true(crd, "Established") {
        condition(
            "Established",
            "True",
            "InitialNamesAccepted",
            "the initial names have been accepted",
        )
    } else {
        condition(
            "Established",
            "False",
            "NotAccepted",
            "not all names are accepted",
        )
    };
    Some(json!({
        "conditions": [condition("NamesAccepted", "False", reason, &message), established],
        "acceptedNames": previous,
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
