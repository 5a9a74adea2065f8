//! The CRD controller: accepts names, marks CRDs Established, records stored
//! versions, and publishes the served custom resource types whenever the set of
//! CRDs changes (the server swaps its catalog; no restart, no delay); deletes a
//! deleted CRD's instances before releasing it. On the controller runtime: a
//! reflector, one sync key, one cleanup key per deleted CRD.

use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use apimachinery::meta;
use registry::{GenericStore, ResourceType};

use crate::{Error, api, lock};
use runtime::leader::Leadership;
use runtime::{Event, Reconciler, Reflector, WorkQueue, system_context};

use apiextensions::crd::CLEANUP_FINALIZER;
use apiextensions::custom_resource::{served_types, storage_type};

const MANAGER: &str = "kubext-crd-controller";

/// Receives the full set of custom resource types after every change.
pub type Publish = Arc<dyn Fn(Vec<Arc<ResourceType>>) + Send + Sync>;

/// A CRD's [`CompileKey`] and the resource types compiled from it.
pub type Compiled = (CompileKey, Vec<Arc<ResourceType>>);

pub struct CrdController {
    crds: Arc<GenericStore>,
    publish: Publish,
    /// The CRDs as last seen and what changed since the last sync: the
    /// reflector's feed writes it, the sync reads it.
    known: Mutex<Known>,
    /// Compiled types per CRD, keyed by [`CompileKey`]: a change to one CRD
    /// recompiles only that CRD's schemas and JSONPaths.
    compiled: Mutex<HashMap<String, Compiled>>,
    /// The uids of deleted CRDs whose published types refuse creates: the
    /// cleanup deletes instances only once new ones cannot appear behind it.
    refusing: tokio::sync::watch::Sender<HashSet<String>>,
    /// Every replica serves what CRDs say; only the leader writes statuses and
    /// cleans up deleted CRDs.
    leadership: Leadership,
    /// Calls CRDs' conversion webhooks.
    conversion: Option<webhook::Caller>,
}

/// Failed status writes come back after 0.1 s, doubling to 5 s.
const SYNC_RETRY: Duration = Duration::from_millis(100);
const SYNC_MAX_RETRY: Duration = Duration::from_secs(5);
/// A cleanup round that left instances comes back after 1 s, doubling to 30 s.
const CLEANUP_RETRY: Duration = Duration::from_secs(1);
const CLEANUP_MAX_RETRY: Duration = Duration::from_secs(30);
/// Deleted CRDs cleaned up at once (upstream's finalizing controller runs 5
/// workers).
const CLEANUP_WORKERS: usize = 5;

impl CrdController {
    pub fn new(crds: Arc<GenericStore>, publish: Publish, leadership: Leadership) -> Self {
        CrdController {
            crds,
            publish,
            known: Default::default(),
            compiled: Default::default(),
            leadership,
            conversion: None,
            refusing: tokio::sync::watch::Sender::new(HashSet::new()),
        }
    }

    /// Serve CRDs with conversion webhooks through `caller`.
    pub fn with_conversion(mut self, caller: webhook::Caller) -> Self {
        self.conversion = Some(caller);
        self
    }

    /// Run forever on the controller runtime: a reflector on CRDs feeds what is
    /// known and queues the one sync key (a burst of changes is one sync) and
    /// the deleted CRDs to clean up, each worked on by its own workers.
    pub async fn run(self: Arc<Self>) {
        let syncs = WorkQueue::new(SYNC_RETRY, SYNC_MAX_RETRY);
        let cleanups = WorkQueue::new(CLEANUP_RETRY, CLEANUP_MAX_RETRY);
        let cleaner = Arc::new(Cleaner {
            crds: self.crds.clone(),
            leadership: self.leadership.clone(),
            refusing: self.refusing.subscribe(),
        });
        let feed = self.clone().follow(syncs.clone(), cleanups.clone());
        let sync = runtime::run(self, syncs, 1, feed);
        let cleanup = runtime::run(cleaner, cleanups, CLEANUP_WORKERS, std::future::pending());
        // Both end when the feed does (leadership is no longer followed).
        tokio::select! {
            () = sync => {}
            () = cleanup => {}
        }
    }

    /// Take in every event (a burst at once) and queue a sync; queue the CRDs
    /// whose cleanup is due. A new leader looks at every CRD again.
    async fn follow(
        self: Arc<Self>,
        syncs: Arc<WorkQueue<()>>,
        cleanups: Arc<WorkQueue<CleanupKey>>,
    ) {
        let mut reflector = Reflector::new(self.crds.clone(), MANAGER);
        let mut leadership = self.leadership.clone();
        leadership.mark_unchanged();
        loop {
            let due = tokio::select! {
                event = reflector.next() => {
                    let mut known = lock(&self.known);
                    let mut due = known.observe(event);
                    while let Some(more) = reflector.try_next() {
                        due.extend(known.observe(more));
                    }
                    due
                }
                changed = leadership.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    if !self.leading() {
                        continue;
                    }
                    let mut known = lock(&self.known);
                    known.touch_all();
                    known.awaiting_cleanup()
                }
            };
            if self.leading() {
                due.into_iter().for_each(|key| cleanups.add(key));
            }
            syncs.add(());
        }
    }

    fn leading(&self) -> bool {
        *self.leadership.borrow()
    }

    /// Serve what the changed CRDs' statuses are about to say, then write the
    /// statuses: a client that sees `Established=True` can use the resource at once.
    /// Only the groups that changed are looked at, so one CRD change costs the same
    /// with 10 or 10,000 CRDs. A status that cannot be written is looked at again
    /// in the retried sync.
    async fn sync(&self) -> Result<(), Error> {
        let (changed, statuses) = {
            let mut known = lock(&self.known);
            let (groups, names) = known.take_changes();
            let statuses = reconcile(&known, &groups);
            let changed: Vec<(String, Option<Arc<registry::Object>>)> = names
                .into_iter()
                .chain(statuses.keys().cloned())
                .collect::<BTreeSet<String>>()
                .into_iter()
                .map(|name| {
                    let crd = known.crds.get(&name).cloned();
                    (name, crd)
                })
                .collect();
            (changed, statuses)
        };
        self.republish(&changed, &statuses);
        if !self.leading() {
            return Ok(());
        }
        let mut first_failure = None;
        for (name, status) in statuses {
            if let Err(error) = self.write_status(&name, status).await {
                lock(&self.known).touch(&name);
                first_failure.get_or_insert(error);
            }
        }
        first_failure.map_or(Ok(()), Err)
    }

    async fn write_status(&self, name: &str, status: Value) -> Result<(), Error> {
        let mut ctx = system_context("", MANAGER);
        ctx.subresource = apimachinery::Subresource::Status;
        let result = self
            .crds
            .update_with(&ctx, name, |current| {
                let mut next = current.clone();
                next["status"] = status.clone();
                Ok(next)
            })
            .await;
        match result {
            Err(e) if e.code() != 404 => Err(api(format!("updating the status of CRD {name}"))(e)),
            _ => Ok(()),
        }
    }

    /// Publish the types of every CRD: the `changed` ones (`None`: gone)
    /// recompiled if what they are compiled from changed, as they are or with
    /// the status they are about to get (`pending`); the others as compiled
    /// before.
    fn republish(
        &self,
        changed: &[(String, Option<Arc<registry::Object>>)],
        pending: &BTreeMap<String, Value>,
    ) {
        let mut compiled = lock(&self.compiled);
        for (name, crd) in changed {
            let Some(crd) = crd.as_ref().map(|o| o.value()) else {
                compiled.remove(name);
                continue;
            };
            let status = pending.get(name).or_else(|| crd.get("status"));
            let key = CompileKey::of(&crd, status);
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
        let refusing: HashSet<String> = compiled
            .values()
            .filter(|(key, _)| key.terminating)
            .map(|(key, _)| key.uid.clone())
            .collect();
        drop(compiled);
        (self.publish)(types);
        self.refusing.send_if_modified(|current| {
            let changed = *current != refusing;
            *current = refusing;
            changed
        });
    }
}

/// The one sync key: everything that changed since the last sync.
#[async_trait::async_trait]
impl Reconciler for CrdController {
    type Key = ();
    type Error = Error;

    fn name(&self) -> &'static str {
        "crd"
    }

    async fn reconcile(&self, _: &()) -> Result<(), Error> {
        self.sync().await
    }
}

/// A deleted CRD whose instances are to be deleted: by name and uid (a
/// re-created CRD is another one).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CleanupKey {
    pub name: String,
    pub uid: String,
}

/// Whether `crd` is deleted and waits for its instances to go.
fn awaits_cleanup(crd: &Value) -> bool {
    meta::deletion_timestamp(crd).is_some() && meta::finalizers(crd).contains(&CLEANUP_FINALIZER)
}

fn cleanup_key(crd: &Value) -> CleanupKey {
    CleanupKey {
        name: meta::name(crd).to_string(),
        uid: meta::uid(crd).to_string(),
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
    /// Take in one event; the CRDs it shows newly awaiting cleanup (after a
    /// relist: all of them, as events in between may have gone unseen).
    fn observe(&mut self, event: Event) -> Vec<CleanupKey> {
        match event {
            Event::Restarted(all) => {
                let values: Vec<Arc<Value>> = all.iter().map(|o| o.value()).collect();
                let names: HashSet<&str> = values.iter().map(|v| meta::name(v)).collect();
                let gone: Vec<String> = self
                    .crds
                    .keys()
                    .filter(|name| !names.contains(name.as_str()))
                    .cloned()
                    .collect();
                for name in gone {
                    self.remove(&name);
                }
                for crd in all {
                    self.put(meta::name(&crd.value()).to_string(), crd);
                }
                self.awaiting_cleanup()
            }
            Event::Applied(crd) => {
                let value = crd.value();
                let name = meta::name(&value).to_string();
                let already = self.crds.get(&name).is_some_and(|old| {
                    let old = old.value();
                    meta::uid(&old) == meta::uid(&value) && awaits_cleanup(&old)
                });
                self.put(name, crd);
                if awaits_cleanup(&value) && !already {
                    vec![cleanup_key(&value)]
                } else {
                    Vec::new()
                }
            }
            Event::Deleted(crd) => {
                self.remove(meta::name(&crd.value()));
                Vec::new()
            }
        }
    }

    /// Every CRD known to await cleanup.
    fn awaiting_cleanup(&self) -> Vec<CleanupKey> {
        self.crds
            .values()
            .map(|o| o.value())
            .filter(|crd| awaits_cleanup(crd))
            .map(|crd| cleanup_key(&crd))
            .collect()
    }

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

    /// Look at `name` (and its group) again at the next sync.
    fn touch(&mut self, name: &str) {
        if let Some(crd) = self.crds.get(name) {
            self.changed_groups
                .insert(group_of(&crd.value()).to_string());
            self.changed.insert(name.to_string());
        }
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
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompileKey {
    uid: String,
    generation: i64,
    established: bool,
    terminating: bool,
}

impl CompileKey {
    fn of(crd: &Value, status: Option<&Value>) -> CompileKey {
        let established = status
            .and_then(|s| s.get("conditions"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Established" && c["status"] == "True");
        CompileKey {
            uid: meta::uid(crd).to_string(),
            generation: meta::generation(crd),
            established,
            terminating: meta::deletion_timestamp(crd).is_some(),
        }
    }
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

/// Upstream waits this long for the instances to go before it reports
/// `InstanceDeletionCheck` and starts over.
const INSTANCE_DELETION_WAIT: Duration = Duration::from_secs(60);

/// Why a round of a CRD's cleanup ended with instances possibly left.
#[derive(Debug, thiserror::Error)]
pub enum InstancesRemain {
    #[error("{0}")]
    List(apimachinery::StatusError),
    /// The round's wait ran out (upstream's text for it).
    #[error("context deadline exceeded")]
    DeadlineExceeded,
}

/// The deletion of deleted CRDs' instances, with upstream's `Terminating`
/// conditions: `InstanceDeletionInProgress` each round, `InstanceDeletionCheck`
/// when instances remain after it (the key comes back after its backoff),
/// `InstanceDeletionCompleted` (False) with the finalizer's removal.
struct Cleaner {
    crds: Arc<GenericStore>,
    leadership: Leadership,
    /// [`CrdController::refusing`]'s receiving end.
    refusing: tokio::sync::watch::Receiver<HashSet<String>>,
}

/// How long a cleanup round waits for this replica to refuse the deleted CRD's
/// creates before it is retried.
const REFUSAL_WAIT: Duration = Duration::from_secs(10);

#[async_trait::async_trait]
impl Reconciler for Cleaner {
    type Key = CleanupKey;
    type Error = Error;

    fn name(&self) -> &'static str {
        "crd-cleanup"
    }

    async fn reconcile(&self, key: &CleanupKey) -> Result<(), Error> {
        // A new leader queues every deleted CRD again.
        if !*self.leadership.borrow() {
            return Ok(());
        }
        let ctx = system_context("", MANAGER);
        let crd = match self.crds.get(&ctx, &key.name).await {
            Ok(crd) => crd.value(),
            Err(e) if e.code() == 404 => return Ok(()),
            Err(e) => return Err(api(format!("reading CRD {}", key.name))(e)),
        };
        // Released already, or re-created under the same name.
        if meta::uid(&crd) != key.uid || !awaits_cleanup(&crd) {
            return Ok(());
        }
        // Instances created after the deletion below would outlive the CRD.
        let mut refusing = self.refusing.clone();
        let published = refusing.wait_for(|uids| uids.contains(&key.uid));
        if !matches!(
            tokio::time::timeout(REFUSAL_WAIT, published).await,
            Ok(Ok(_))
        ) {
            return Err(Error::CreatesNotRefused(key.name.clone()));
        }
        let crds = &*self.crds;
        let in_progress = "CustomResource deletion is in progress";
        key.set_terminating(
            crds,
            "True",
            "InstanceDeletionInProgress",
            in_progress,
            false,
        )
        .await;
        // Deleting needs no conversion webhook: instances go as stored.
        if let Some(rtype) = storage_type(&crd, None) {
            let store = GenericStore::new(Arc::new(rtype), crds.storage().clone(), crds.prefix());
            if let Err(remain) = delete_instances(&store).await {
                let error = Error::InstancesRemain(remain);
                let message = error.to_string();
                key.set_terminating(crds, "True", "InstanceDeletionCheck", &message, false)
                    .await;
                return Err(error);
            }
        }
        let completed = "removed all instances";
        key.set_terminating(crds, "False", "InstanceDeletionCompleted", completed, false)
            .await;
        key.set_terminating(crds, "False", "InstanceDeletionCompleted", completed, true)
            .await;
        Ok(())
    }

    /// Instances still going is reported in the CRD's condition.
    fn in_progress(&self, error: &Error) -> bool {
        matches!(error, Error::InstancesRemain(_))
    }
}

impl CleanupKey {
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
        let mut ctx = system_context("", MANAGER);
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
                } else if let Some(list) = meta::metadata_mut(&mut next)
                    .get_mut("finalizers")
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
/// [`INSTANCE_DELETION_WAIT`] for them to be gone.
async fn delete_instances(store: &GenericStore) -> Result<(), InstancesRemain> {
    let deadline = tokio::time::Instant::now() + INSTANCE_DELETION_WAIT;
    let mut delay = Duration::from_millis(100);
    let ctx = system_context("", MANAGER);
    loop {
        let list = store
            .list(&ctx, registry::ListOptions::default())
            .await
            .map_err(InstancesRemain::List)?;
        if list.items.is_empty() {
            return Ok(());
        }
        for item in list
            .items
            .iter()
            .filter(|i| meta::deletion_timestamp(&i.value()).is_none())
        {
            let item = item.value();
            let ctx = system_context(meta::namespace(&item), MANAGER);
            let name = meta::name(&item);
            if let Err(e) = store.delete(&ctx, name, &Default::default()).await
                && e.code() != 404
            {
                tracing::warn!(name, error = %e, "cannot delete custom resource");
            }
        }
        if tokio::time::Instant::now() + delay > deadline {
            return Err(InstancesRemain::DeadlineExceeded);
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(2));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(uid: &str, deleting: bool, finalizers: &[&str]) -> Arc<registry::Object> {
        let mut crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "crontabs.stable.example.com", "uid": uid, "finalizers": finalizers},
            "spec": {"group": "stable.example.com"},
        });
        if deleting {
            crd["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        }
        Arc::new(registry::Object::new(crd))
    }

    fn key(uid: &str) -> CleanupKey {
        CleanupKey {
            name: "crontabs.stable.example.com".into(),
            uid: uid.into(),
        }
    }

    /// A CRD store in memory holding one CronTab CRD (with its cleanup
    /// finalizer), and an instance of it.
    async fn crontabs() -> (Arc<GenericStore>, Arc<GenericStore>) {
        let backend = Arc::new(storage::memory::MemoryBackend::new());
        let storage = registry::Storage::open(backend, registry::JsonCodec, Default::default())
            .await
            .unwrap();
        let rtype = Arc::new(apiextensions::crd::crd_resource_type());
        let crds = Arc::new(GenericStore::new(rtype, storage.clone(), "/registry"));
        let ctx = system_context("", "test");
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "crontabs.stable.example.com"},
            "spec": {"group": "stable.example.com", "scope": "Cluster",
                "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "listKind": "CronTabList"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]},
        });
        crds.create(&ctx, crd).await.unwrap();
        let mut status_ctx = ctx.clone();
        status_ctx.subresource = apimachinery::Subresource::Status;
        let established = |crd: &Value| {
            let mut next = crd.clone();
            apiextensions::crd::set_condition(&mut next, "Established", "", "");
            Ok(next)
        };
        let crd = crds
            .update_with(&status_ctx, "crontabs.stable.example.com", established)
            .await
            .unwrap()
            .value();
        let rtype = storage_type(&crd, None).unwrap();
        let instances = Arc::new(GenericStore::new(Arc::new(rtype), storage, "/registry"));
        let cron = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "c"}});
        instances.create(&ctx, cron).await.unwrap();
        (crds, instances)
    }

    async fn count(store: &GenericStore) -> usize {
        let ctx = system_context("", "test");
        store
            .list(&ctx, Default::default())
            .await
            .unwrap()
            .items
            .len()
    }

    // Instances are deleted only once the CRD's served types refuse creates:
    // a create that slipped in after the deletion would outlive its CRD.
    #[tokio::test(start_paused = true)]
    async fn instances_are_deleted_only_once_creates_are_refused() {
        let (crds, instances) = crontabs().await;
        let ctx = system_context("", "test");
        crds.delete(&ctx, "crontabs.stable.example.com", &Default::default())
            .await
            .unwrap();
        let deleted = crds
            .get(&ctx, "crontabs.stable.example.com")
            .await
            .unwrap()
            .value();
        assert!(awaits_cleanup(&deleted));
        let published = Arc::new(Mutex::new(Vec::new()));
        let sink = published.clone();
        let publish: Publish = Arc::new(move |types| *lock(&sink) = types);
        let (_leading, leadership) = tokio::sync::watch::channel(true);
        let controller = CrdController::new(crds.clone(), publish, leadership.clone());
        let cleaner = Cleaner {
            crds: crds.clone(),
            leadership,
            refusing: controller.refusing.subscribe(),
        };
        let key = cleanup_key(&deleted);

        // Not yet published as terminating: nothing is deleted.
        let error = cleaner.reconcile(&key).await.unwrap_err();
        assert!(matches!(error, Error::CreatesNotRefused(_)), "{error}");
        assert_eq!(count(&instances).await, 1);

        let name = "crontabs.stable.example.com".to_string();
        let changed = [(
            name,
            Some(Arc::new(registry::Object::new(Value::clone(&deleted)))),
        )];
        controller.republish(&changed, &BTreeMap::new());
        let types = lock(&published).clone();
        assert_eq!(types.len(), 1);
        assert!(types[0].refuse_create.is_some(), "the types refuse creates");
        cleaner.reconcile(&key).await.unwrap();
        assert_eq!(count(&instances).await, 0);
    }

    // The cleanup of a deleted CRD is queued once when it is seen deleted, not
    // again for each status its own rounds write (their backoff would be lost).
    #[test]
    fn a_deleted_crd_is_queued_for_cleanup_once_per_uid() {
        let mut known = Known::default();
        assert!(
            known
                .observe(Event::Applied(crd("u1", false, &[CLEANUP_FINALIZER])))
                .is_empty()
        );
        let deleted = crd("u1", true, &[CLEANUP_FINALIZER]);
        assert_eq!(known.observe(Event::Applied(deleted)), [key("u1")]);
        // Its Terminating condition written: no new cleanup.
        let status_written = crd("u1", true, &[CLEANUP_FINALIZER]);
        assert!(known.observe(Event::Applied(status_written)).is_empty());
        // A relist may have missed events: every CRD awaiting cleanup again.
        let all = vec![crd("u1", true, &[CLEANUP_FINALIZER])];
        assert_eq!(known.observe(Event::Restarted(all)), [key("u1")]);
        // Released and gone, then re-created and deleted: another CRD.
        assert!(
            known
                .observe(Event::Deleted(crd("u1", true, &[])))
                .is_empty()
        );
        assert!(
            known
                .observe(Event::Applied(crd("u2", false, &[CLEANUP_FINALIZER])))
                .is_empty()
        );
        assert_eq!(
            known.observe(Event::Applied(crd("u2", true, &[CLEANUP_FINALIZER]))),
            [key("u2")]
        );
        // Deleted without the finalizer: nothing to clean up.
        let mut other = Known::default();
        assert!(
            other
                .observe(Event::Applied(crd("u3", true, &[])))
                .is_empty()
        );
        assert!(other.awaiting_cleanup().is_empty());
    }

    #[test]
    fn a_failed_status_write_is_looked_at_again_at_the_next_sync() {
        let mut known = Known::default();
        known.observe(Event::Applied(crd("u1", false, &[])));
        let (groups, names) = known.take_changes();
        assert_eq!(groups, HashSet::from(["stable.example.com".to_string()]));
        assert_eq!(
            names,
            HashSet::from(["crontabs.stable.example.com".to_string()])
        );
        assert_eq!(known.take_changes(), Default::default());
        known.touch("crontabs.stable.example.com");
        let (groups, names) = known.take_changes();
        assert_eq!(groups.len(), 1);
        assert_eq!(names.len(), 1);
        // A CRD gone meanwhile is not brought back.
        known.observe(Event::Deleted(crd("u1", false, &[])));
        known.take_changes();
        known.touch("crontabs.stable.example.com");
        assert_eq!(known.take_changes(), Default::default());
    }
}
