//! The CRD controller: accepts names, marks CRDs Established, records stored
//! versions, and publishes the served custom resource types whenever the set of
//! CRDs changes (the server swaps its catalog; no restart, no delay).

use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use apimachinery::meta;
use registry::{GenericStore, ResourceType};

use runtime::{Event, Reflector};

use apiextensions::crd::CLEANUP_FINALIZER;
use apiextensions::custom_resource::{served_types, storage_type};

const MANAGER: &str = "kubext-crd-controller";

/// Receives the full set of custom resource types after every change.
pub type Publish = Arc<dyn Fn(Vec<Arc<ResourceType>>) + Send + Sync>;

/// A CRD's [`compile_key`] and the resource types compiled from it.
pub type Compiled = (String, Vec<Arc<ResourceType>>);

pub struct CrdController {
    crds: Arc<GenericStore>,
    publish: Publish,
    /// CRDs (by uid: a re-created CRD is another one) whose instances are being
    /// deleted right now.
    cleaning: Arc<std::sync::Mutex<HashSet<String>>>,
    /// Compiled types per CRD, keyed by [`compile_key`]: a change to one CRD
    /// recompiles only that CRD's schemas and JSONPaths.
    compiled: std::sync::Mutex<std::collections::HashMap<String, Compiled>>,
    /// Every replica serves what CRDs say; only the leader writes statuses and
    /// cleans up deleted CRDs.
    leadership: runtime::leader::Leadership,
    /// Calls CRDs' conversion webhooks.
    conversion: Option<webhook::Caller>,
}

impl CrdController {
    pub fn new(
        crds: Arc<GenericStore>,
        publish: Publish,
        leadership: runtime::leader::Leadership,
    ) -> Self {
        CrdController {
            crds,
            publish,
            cleaning: Default::default(),
            compiled: Default::default(),
            leadership,
            conversion: None,
        }
    }

    /// Serve CRDs with conversion webhooks through `caller`.
    pub fn with_conversion(mut self, caller: webhook::Caller) -> Self {
        self.conversion = Some(caller);
        self
    }

    /// Run forever: follow CRDs through a reflector (list, watch, resume,
    /// relist), handling each burst of changes at once.
    pub async fn run(self: Arc<Self>) {
        let mut reflector = Reflector::new(self.crds.clone(), MANAGER);
        let mut leadership = self.leadership.clone();
        leadership.mark_unchanged();
        let mut known = Known::default();
        loop {
            tokio::select! {
                event = reflector.next() => {
                    self.observe(&mut known, event);
                    // Drain what else is queued before reconciling and rebuilding routes once.
                    while let Some(more) = reflector.try_next() {
                        self.observe(&mut known, more);
                    }
                    self.sync(&mut known).await;
                }
                // A new leader looks at every CRD again (statuses, cleanups).
                changed = leadership.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    if self.leading() {
                        known.touch_all();
                        for crd in known.crds.values() {
                            self.start_cleanup(meta::name(&crd.value()), &crd.value());
                        }
                        self.sync(&mut known).await;
                    }
                }
            }
        }
    }

    fn leading(&self) -> bool {
        *self.leadership.borrow()
    }

    /// Serve what the changed CRDs' statuses are about to say, then write the
    /// statuses: a client that sees `Established=True` can use the resource at once.
    /// Only the groups that changed are looked at, so one CRD change costs the same
    /// with 10 or 10,000 CRDs.
    async fn sync(&self, known: &mut Known) {
        let (groups, names) = known.take_changes();
        let statuses = reconcile(known, &groups);
        self.republish(known, &names, &statuses);
        if !self.leading() {
            return;
        }
        for (name, status) in statuses {
            self.write_status(&name, status).await;
        }
    }

    fn observe(&self, known: &mut Known, event: Event) {
        match event {
            Event::Restarted(all) => {
                let values: Vec<Arc<Value>> = all.iter().map(|o| o.value()).collect();
                let names: HashSet<&str> = values.iter().map(|v| meta::name(v)).collect();
                let gone: Vec<String> = known
                    .crds
                    .keys()
                    .filter(|name| !names.contains(name.as_str()))
                    .cloned()
                    .collect();
                for name in gone {
                    known.remove(&name);
                }
                for crd in all {
                    self.applied(known, crd);
                }
            }
            Event::Applied(crd) => self.applied(known, crd),
            Event::Deleted(crd) => known.remove(meta::name(&crd.value())),
        }
    }

    fn applied(&self, known: &mut Known, crd: Arc<registry::Object>) {
        let name = meta::name(&crd.value()).to_string();
        if meta::deletion_timestamp(&crd.value()).is_some() {
            self.start_cleanup(&name, &crd.value());
        }
        known.put(name, crd);
    }

    async fn write_status(&self, name: &str, status: Value) {
        let mut ctx = runtime::system_context("", MANAGER);
        ctx.subresource = apimachinery::Subresource::Status;
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
        if !meta::finalizers(crd).contains(&CLEANUP_FINALIZER) || !self.leading() {
            return;
        }
        let uid = meta::uid(crd).to_string();
        let started = self
            .cleaning
            .lock()
            .is_ok_and(|mut cleaning| cleaning.insert(uid.clone()));
        if !started {
            return;
        }
        let crds = self.crds.clone();
        let cleaning = self.cleaning.clone();
        let cleanup = Cleanup {
            name: name.to_string(),
            uid,
        };
        let crd = crd.clone();
        tokio::spawn(async move {
            cleanup.run(&crds, &crd).await;
            if let Ok(mut set) = cleaning.lock() {
                set.remove(&cleanup.uid);
            }
        });
    }

    /// Publish the types of every CRD: the `changed` ones recompiled if what they
    /// are compiled from changed, as they are or with the status they are about to
    /// get (`pending`); the others as compiled before.
    fn republish(
        &self,
        known: &Known,
        changed: &HashSet<String>,
        pending: &BTreeMap<String, Value>,
    ) {
        let Ok(mut compiled) = self.compiled.lock() else {
            return;
        };
        compiled.retain(|name, _| known.crds.contains_key(name));
        for name in changed.iter().chain(pending.keys()) {
            let Some(crd) = known.crds.get(name).map(|o| o.value()) else {
                continue;
            };
            let status = pending.get(name).or_else(|| crd.get("status"));
            let key = compile_key(&crd, status);
            let entry = compiled.entry(name.clone()).or_default();
            if entry.0 == key {
                continue;
            }
            let types = match pending.get(name) {
                Some(status) => {
                    let mut next = Value::clone(&crd);
                    next["status"] = status.clone();
                    served_types(&next, self.conversion.as_ref())
                }
                None => served_types(&crd, self.conversion.as_ref()),
            };
            *entry = (key, types.into_iter().map(Arc::new).collect());
        }
        let types = compiled
            .values()
            .flat_map(|(_, types)| types.iter().cloned())
            .collect();
        drop(compiled);
        (self.publish)(types);
    }
}

/// The CRDs as last seen, indexed by group, and what changed since the last sync.
#[derive(Default)]
struct Known {
    /// Shared with the watch cache, not copied.
    crds: BTreeMap<String, Arc<registry::Object>>,
    by_group: HashMap<String, BTreeSet<String>>,
    changed_groups: HashSet<String>,
    changed: HashSet<String>,
}

fn group_of(crd: &Value) -> &str {
    crd.get("spec")
        .and_then(|s| s.get("group"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

impl Known {
    fn put(&mut self, name: String, crd: Arc<registry::Object>) {
        self.remove(&name);
        let group = group_of(&crd.value()).to_string();
        self.by_group
            .entry(group.clone())
            .or_default()
            .insert(name.clone());
        self.changed_groups.insert(group);
        self.changed.insert(name.clone());
        self.crds.insert(name, crd);
    }

    fn remove(&mut self, name: &str) {
        let Some(old) = self.crds.remove(name) else {
            return;
        };
        let old = old.value();
        let group = group_of(&old);
        if let Some(names) = self.by_group.get_mut(group) {
            names.remove(name);
            if names.is_empty() {
                self.by_group.remove(group);
            }
        }
        self.changed_groups.insert(group.to_string());
        self.changed.insert(name.to_string());
    }

    /// Look at every CRD again.
    fn touch_all(&mut self) {
        self.changed.extend(self.crds.keys().cloned());
        self.changed_groups.extend(self.by_group.keys().cloned());
    }

    /// The changed groups and CRD names, clearing them.
    fn take_changes(&mut self) -> (HashSet<String>, HashSet<String>) {
        (
            std::mem::take(&mut self.changed_groups),
            std::mem::take(&mut self.changed),
        )
    }
}

/// The statuses that differ from what the CRDs of `groups` should have: names
/// accepted unless another CRD of the group holds them (older claims win),
/// Established, stored versions.
fn reconcile(known: &Known, groups: &HashSet<String>) -> BTreeMap<String, Value> {
    let mut changed = BTreeMap::new();
    for group in groups {
        let decoded: Vec<Arc<Value>> = known
            .by_group
            .get(group)
            .into_iter()
            .flatten()
            .filter_map(|name| known.crds.get(name).map(|o| o.value()))
            .collect();
        let mut order: Vec<&Value> = decoded
            .iter()
            .map(|c| c.as_ref())
            .filter(|c| meta::deletion_timestamp(c).is_none())
            .collect();
        order.sort_by_key(|c| {
            (
                !names_accepted(c),
                meta::str_field(c, "creationTimestamp").unwrap_or(""),
                meta::name(c),
            )
        });
        let mut claimed: Vec<&Value> = Vec::new();
        for crd in order {
            let conflict = naming_conflict(crd, &claimed);
            if conflict.is_none() {
                claimed.push(crd);
            }
            if let Some(status) = desired_status(crd, conflict)
                && Some(&status) != crd.get("status")
            {
                changed.insert(meta::name(crd).to_string(), status);
            }
        }
    }
    changed
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
/// Upstream waits this long for the instances to go before it reports
/// `InstanceDeletionCheck` and starts over.
const INSTANCE_DELETION_WAIT: Duration = Duration::from_secs(60);

/// The deletion of one CRD's instances, with upstream's `Terminating` conditions:
/// `InstanceDeletionInProgress`, `InstanceDeletionCheck` while instances remain
/// after a round, `InstanceDeletionCompleted` (False) with the finalizer's removal.
struct Cleanup {
    name: String,
    uid: String,
}

impl Cleanup {
    async fn run(&self, crds: &GenericStore, crd: &Value) {
        self.set_terminating(
            crds,
            "True",
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
            false,
        )
        .await;
        // Deleting needs no conversion webhook: instances go as stored.
        if let Some(rtype) = storage_type(crd, None) {
            let store = GenericStore::new(Arc::new(rtype), crds.storage().clone(), crds.prefix());
            let mut backoff = Duration::from_secs(1);
            while let Err(why) = delete_instances(&store).await {
                let message = format!("could not confirm zero CustomResources remaining: {why}");
                self.set_terminating(crds, "True", "InstanceDeletionCheck", &message, false)
                    .await;
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(30));
            }
        }
        self.set_terminating(
            crds,
            "False",
            "InstanceDeletionCompleted",
            "removed all instances",
            false,
        )
        .await;
        self.set_terminating(
            crds,
            "False",
            "InstanceDeletionCompleted",
            "removed all instances",
            true,
        )
        .await;
    }

    /// Write the Terminating condition through `status`, or with `release` drop the
    /// cleanup finalizer (the store then deletes the CRD); never to a CRD
    /// re-created under the same name.
    async fn set_terminating(
        &self,
        crds: &GenericStore,
        status: &str,
        reason: &str,
        message: &str,
        release: bool,
    ) {
        let mut ctx = runtime::system_context("", MANAGER);
        if !release {
            ctx.subresource = apimachinery::Subresource::Status;
        }
        let result = crds
            .update_with(&ctx, &self.name, |current| {
                if meta::uid(current) != self.uid {
                    return Err(apimachinery::StatusError::conflict(
                        &crds.rtype.group_resource(),
                        &self.name,
                        "the CRD was re-created",
                    ));
                }
                let mut next = current.clone();
                if !release {
                    apiextensions::crd::set_condition_status(
                        &mut next,
                        "Terminating",
                        status,
                        reason,
                        message,
                    );
                } else if let Some(list) = next
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
            tracing::warn!(crd = %self.name, error = %e, reason, "cannot update a terminating CRD");
        }
    }
}

/// Delete every instance (honouring their finalizers) and wait up to
/// [`INSTANCE_DELETION_WAIT`] for them to be gone; the error says why not.
async fn delete_instances(store: &GenericStore) -> Result<(), String> {
    let deadline = tokio::time::Instant::now() + INSTANCE_DELETION_WAIT;
    let mut delay = Duration::from_millis(100);
    let ctx = runtime::system_context("", MANAGER);
    loop {
        let list = store
            .list(&ctx, registry::ListOptions::default())
            .await
            .map_err(|e| e.to_string())?;
        if list.items.is_empty() {
            return Ok(());
        }
        for item in list
            .items
            .iter()
            .filter(|i| meta::deletion_timestamp(&i.value()).is_none())
        {
            let item = item.value();
            let ctx = runtime::system_context(meta::namespace(&item), MANAGER);
            let name = meta::name(&item);
            if let Err(e) = store.delete(&ctx, name, &Default::default()).await
                && e.code() != 404
            {
                tracing::warn!(name, error = %e, "cannot delete custom resource");
            }
        }
        if tokio::time::Instant::now() + delay > deadline {
            return Err("context deadline exceeded".into());
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(2));
    }
}
