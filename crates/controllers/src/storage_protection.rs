//! The storage protection controllers (kube-controller-manager's
//! pvc-protection, pv-protection and vac-protection). The StorageObjectInUseProtection
//! admission plugin gives every new PersistentVolumeClaim, PersistentVolume and
//! VolumeAttributesClass its protection finalizer; these controllers remove it
//! once the object is being deleted and nothing uses it, and add it to live
//! objects that lack it (created while the plugin was off), as upstream does.
//!
//! In use (upstream's rules):
//! - a claim, while a pod scheduled to a node names it in a
//!   `persistentVolumeClaim` volume (whatever the pod's phase), or through a
//!   generic ephemeral volume (`<pod>-<volume>`, a claim the pod controls)
//!   while the pod is not shut down;
//! - a volume, while its phase is `Bound`;
//! - a class, while a claim or a volume names it.
//!
//! The claim controller also keeps a bound claim's `Unused` condition
//! (PersistentVolumeClaimUnusedSinceTime, beta and on in 1.37).
//!
//! Reflectors only say which objects to look at again; whether something is
//! in use is read from a fresh list before a finalizer is removed.

use foldhash::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use apimachinery::meta;
use registry::{GenericStore, ListOptions, RequestContext};
use serde_json::{Value, json};

use crate::{Error, api};
use runtime::{self, Event, Reconciler, Reflector, WorkQueue};
use runtime::{Resources, system_context};

pub const PVC_FINALIZER: &str = "kubernetes.io/pvc-protection";
pub const PV_FINALIZER: &str = "kubernetes.io/pv-protection";
pub const VAC_FINALIZER: &str = "kubernetes.io/vac-protection";

const CLAIM_MANAGER: &str = "kubext-pvc-protection-controller";
const VOLUME_MANAGER: &str = "kubext-pv-protection-controller";
const CLASS_MANAGER: &str = "kubext-vac-protection-controller";
const STORAGE_GROUP: &str = "storage.k8s.io";

/// Failed keys come back after 0.1 s, doubling per failure, at most 30 s.
const RETRY: Duration = Duration::from_millis(100);
const MAX_RETRY: Duration = Duration::from_secs(30);

/// Run the three controllers, forever.
pub async fn run<R: Resources>(resources: Arc<R>) {
    tokio::join!(
        Arc::new(ClaimProtection {
            resources: resources.clone()
        })
        .run(),
        Arc::new(VolumeProtection {
            resources: resources.clone()
        })
        .run(),
        Arc::new(ClassProtection { resources }).run(),
    );
}

// ---------------------------------------------------------------------------
// Decisions: pure functions of the objects.

/// What a protection controller does with its finalizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Add,
    Remove,
}

/// Being deleted and still held by `finalizer` (upstream's `IsDeletionCandidate`).
pub fn deletion_candidate(object: &Value, finalizer: &str) -> bool {
    meta::deletion_timestamp(object).is_some() && meta::finalizers(object).contains(&finalizer)
}

/// What to do with `finalizer` on `object`: remove it from an object being
/// deleted that is not `in_use`, add it to a live object without it.
pub fn finalizer_step(object: &Value, finalizer: &str, in_use: bool) -> Option<Step> {
    let held = meta::finalizers(object).contains(&finalizer);
    match (meta::deletion_timestamp(object).is_some(), held) {
        (true, true) if !in_use => Some(Step::Remove),
        (false, false) => Some(Step::Add),
        _ => None,
    }
}

/// `object` with `step` applied to its `finalizer` (appended when added).
fn apply_step(object: &mut Value, finalizer: &str, step: Step) {
    let metadata = meta::metadata_mut(object);
    let list = metadata.entry("finalizers").or_insert_with(|| json!([]));
    if !list.is_array() {
        *list = json!([]);
    }
    if let Value::Array(list) = list {
        match step {
            Step::Add => list.push(json!(finalizer)),
            Step::Remove => list.retain(|f| f != finalizer),
        }
    }
}

fn str_at<'a>(object: &'a Value, pointer: &str) -> Option<&'a str> {
    object.pointer(pointer).and_then(Value::as_str)
}

fn items<'a>(object: &'a Value, pointer: &str) -> impl Iterator<Item = &'a Value> {
    object
        .pointer(pointer)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// The name of the claim a pod's volume uses: a `persistentVolumeClaim`
/// volume's claim, or a generic ephemeral volume's `<pod>-<volume>`; and
/// whether it is ephemeral.
fn claim_of_volume(pod: &Value, volume: &Value) -> Option<(String, bool)> {
    if let Some(claim) = str_at(volume, "/persistentVolumeClaim/claimName") {
        return Some((claim.to_string(), false));
    }
    if volume.get("ephemeral").is_some_and(|e| !e.is_null()) {
        let name = format!("{}-{}", meta::name(pod), str_at(volume, "/name")?);
        return Some((name, true));
    }
    None
}

/// The names of the claims `pod`'s volumes use.
pub fn claims_of(pod: &Value) -> Vec<String> {
    items(pod, "/spec/volumes")
        .filter_map(|v| claim_of_volume(pod, v))
        .map(|(name, _)| name)
        .collect()
}

/// The uid of `object`'s controller, if any (upstream's `GetControllerOf`).
fn controller_uid(object: &Value) -> Option<&str> {
    meta::metadata(object)
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        .and_then(|r| str_at(r, "/uid"))
}

/// Whether `claim` is the one created for `pod`'s ephemeral volume: in the
/// pod's namespace and controlled by it (upstream's `VolumeIsForPod`).
fn ephemeral_claim_of(pod: &Value, claim: &Value) -> bool {
    meta::namespace(claim) == meta::namespace(pod)
        && controller_uid(claim).is_some_and(|uid| uid == meta::uid(pod))
}

/// A pod whose claims `claim` is among, through which kinds of volumes:
/// (through a `persistentVolumeClaim` volume, through an ephemeral one).
fn names_claim(pod: &Value, claim: &Value) -> (bool, bool) {
    let name = meta::name(claim);
    let mut by = (false, false);
    for volume in items(pod, "/spec/volumes") {
        match claim_of_volume(pod, volume) {
            Some((n, false)) if n == name => by.0 = true,
            Some((n, true)) if n == name && ephemeral_claim_of(pod, claim) => by.1 = true,
            _ => {}
        }
    }
    by
}

/// Whether kubelet is done with `pod` or it was force-deleted: deleted with a
/// grace period of 0 (upstream's `podIsShutDown`).
fn shut_down(pod: &Value) -> bool {
    meta::deletion_timestamp(pod).is_some()
        && meta::metadata(pod)
            .and_then(|m| m.get("deletionGracePeriodSeconds"))
            .and_then(Value::as_i64)
            == Some(0)
}

/// Every container status terminated or waiting.
fn not_running(pod: &Value, statuses: &str) -> bool {
    items(pod, &format!("/status/{statuses}")).all(|s| {
        ["terminated", "waiting"].iter().any(|state| {
            s.pointer(&format!("/state/{state}"))
                .is_some_and(|v| !v.is_null())
        })
    })
}

/// Upstream's `IsPodTerminated`: Succeeded or Failed, or deleted with no
/// container running.
fn terminated(pod: &Value) -> bool {
    matches!(str_at(pod, "/status/phase"), Some("Succeeded" | "Failed"))
        || (meta::deletion_timestamp(pod).is_some()
            && [
                "initContainerStatuses",
                "containerStatuses",
                "ephemeralContainerStatuses",
            ]
            .iter()
            .all(|s| not_running(pod, s)))
}

/// Whether `pod` keeps `claim` from going (upstream's `podUsesPVCForDeletion`):
/// only a pod scheduled to a node (kubelet does not start a pod whose claim is
/// being deleted); through a `persistentVolumeClaim` volume in any phase,
/// through an ephemeral volume until the pod is shut down.
pub fn holds(pod: &Value, claim: &Value) -> bool {
    if str_at(pod, "/spec/nodeName").is_none_or(str::is_empty) {
        return false;
    }
    let (by_claim, by_ephemeral) = names_claim(pod, claim);
    by_claim || (by_ephemeral && !shut_down(pod))
}

/// Whether `pod` counts as using `claim` for its `Unused` condition (upstream's
/// `podUsesPVCForUnusedSince`): any pod not terminated that names it.
pub fn references(pod: &Value, claim: &Value) -> bool {
    let (by_claim, by_ephemeral) = names_claim(pod, claim);
    (by_claim || by_ephemeral) && !terminated(pod)
}

pub const UNUSED: &str = "Unused";

/// The `Unused` condition `claim` must get, if it must change: (status,
/// reason, message).
pub fn unused_change(
    claim: &Value,
    used: bool,
) -> Option<(&'static str, &'static str, &'static str)> {
    let current = items(claim, "/status/conditions")
        .find(|c| str_at(c, "/type") == Some(UNUSED))
        .map(|c| str_at(c, "/status").unwrap_or_default());
    match (used, current) {
        (true, None | Some("True")) => Some((
            "False",
            "PodUsingPVC",
            "A pod is currently referencing this PVC",
        )),
        (false, current) if current != Some("True") => Some((
            "True",
            "NoPodsUsingPVC",
            "No pods are currently referencing this PVC",
        )),
        _ => None,
    }
}

/// Set `claim`'s `Unused` condition (in its place, or appended).
fn set_unused(claim: &mut Value, (status, reason, message): (&str, &str, &str), now: &str) {
    let condition = json!({"type": UNUSED, "status": status, "lastTransitionTime": now,
                           "reason": reason, "message": message});
    if !claim.get("status").is_some_and(Value::is_object) {
        claim["status"] = json!({});
    }
    let conditions = &mut claim["status"]["conditions"];
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    if let Value::Array(list) = conditions {
        match list.iter_mut().find(|c| c["type"] == UNUSED) {
            Some(existing) => *existing = condition,
            None => list.push(condition),
        }
    }
}

/// A live bound claim has its `Unused` condition kept.
fn tracks_use(claim: &Value) -> bool {
    meta::deletion_timestamp(claim).is_none() && str_at(claim, "/status/phase") == Some("Bound")
}

/// Whether the claim controller has anything to do about `claim` on its own
/// change (upstream's `pvcAddedUpdated`).
fn claim_wants_look(claim: &Value) -> bool {
    let has_unused = items(claim, "/status/conditions").any(|c| str_at(c, "/type") == Some(UNUSED));
    finalizer_step(claim, PVC_FINALIZER, true).is_some()
        || deletion_candidate(claim, PVC_FINALIZER)
        || (tracks_use(claim) && !has_unused)
}

/// A volume is in use while bound (upstream's pv-protection `isBeingUsed`).
pub fn volume_in_use(volume: &Value) -> bool {
    str_at(volume, "/status/phase") == Some("Bound")
}

/// The VolumeAttributesClasses a claim or a volume names: a claim's
/// `spec.volumeAttributesClassName`, `status.currentVolumeAttributesClassName`
/// and `status.modifyVolumeStatus.targetVolumeAttributesClassName`, a volume's
/// `spec.volumeAttributesClassName`.
pub fn classes_of(object: &Value) -> Vec<String> {
    let mut names: Vec<String> = [
        "/spec/volumeAttributesClassName",
        "/status/currentVolumeAttributesClassName",
        "/status/modifyVolumeStatus/targetVolumeAttributesClassName",
    ]
    .iter()
    .filter_map(|p| str_at(object, p))
    .filter(|n| !n.is_empty())
    .map(str::to_string)
    .collect();
    names.sort_unstable();
    names.dedup();
    names
}

// ---------------------------------------------------------------------------
// Which keys an event asks to look at.

type ClaimKey = (String, String);

fn claim_key(object: &Value) -> ClaimKey {
    (
        meta::namespace(object).to_string(),
        meta::name(object).to_string(),
    )
}

/// The claims a claim event asks to look at; `known` keeps every claim's key.
fn claim_event_keys(known: &mut HashSet<ClaimKey>, event: &Event) -> Vec<ClaimKey> {
    match event {
        Event::Restarted(all) => {
            known.clear();
            let mut keys = Vec::new();
            for claim in all {
                let claim = claim.value();
                known.insert(claim_key(&claim));
                if claim_wants_look(&claim) {
                    keys.push(claim_key(&claim));
                }
            }
            keys
        }
        Event::Applied(claim) => {
            let claim = claim.value();
            known.insert(claim_key(&claim));
            if claim_wants_look(&claim) {
                vec![claim_key(&claim)]
            } else {
                Vec::new()
            }
        }
        Event::Deleted(claim) => {
            known.remove(&claim_key(&claim.value()));
            Vec::new()
        }
    }
}

/// The claims a pod event asks to look at: those the pod names; after a
/// relist every known claim too (a pod may have gone unseen).
fn pod_event_keys(known: &HashSet<ClaimKey>, event: &Event) -> Vec<ClaimKey> {
    let of = |pod: &Value| {
        let namespace = meta::namespace(pod);
        claims_of(pod)
            .into_iter()
            .map(|name| (namespace.to_string(), name))
            .collect::<Vec<_>>()
    };
    match event {
        Event::Restarted(all) => all
            .iter()
            .flat_map(|pod| of(&pod.value()))
            .chain(known.iter().cloned())
            .collect(),
        Event::Applied(pod) | Event::Deleted(pod) => of(&pod.value()),
    }
}

/// The classes a class event asks to look at.
fn class_event_keys(event: &Event) -> Vec<String> {
    let wants = |class: &Value| {
        finalizer_step(class, VAC_FINALIZER, true).is_some()
            || deletion_candidate(class, VAC_FINALIZER)
    };
    match event {
        Event::Restarted(all) => all
            .iter()
            .map(|c| c.value())
            .filter(|c| wants(c))
            .map(|c| meta::name(&c).to_string())
            .collect(),
        Event::Applied(class) => {
            let class = class.value();
            if wants(&class) {
                vec![meta::name(&class).to_string()]
            } else {
                Vec::new()
            }
        }
        Event::Deleted(_) => Vec::new(),
    }
}

/// The classes an event of claims or volumes may have released: those an
/// object names no more, or named when it went. `named` remembers what each
/// object (by uid) names.
fn released_classes(named: &mut HashMap<String, Vec<String>>, event: &Event) -> Vec<String> {
    match event {
        Event::Restarted(all) => {
            let before = std::mem::take(named);
            for object in all {
                let object = object.value();
                let classes = classes_of(&object);
                if !classes.is_empty() {
                    named.insert(meta::uid(&object).to_string(), classes);
                }
            }
            let still: HashSet<&String> = named.values().flatten().collect();
            let mut released: Vec<String> = before
                .into_values()
                .flatten()
                .filter(|c| !still.contains(c))
                .collect();
            released.sort_unstable();
            released.dedup();
            released
        }
        Event::Applied(object) => {
            let object = object.value();
            let classes = classes_of(&object);
            let uid = meta::uid(&object).to_string();
            let before = if classes.is_empty() {
                named.remove(&uid)
            } else {
                named.insert(uid, classes.clone())
            };
            before
                .unwrap_or_default()
                .into_iter()
                .filter(|c| !classes.contains(c))
                .collect()
        }
        Event::Deleted(object) => {
            let object = object.value();
            named.remove(meta::uid(&object));
            classes_of(&object)
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while holding it.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

// ---------------------------------------------------------------------------
// Writes.

fn store<R: Resources>(
    resources: &R,
    group: &str,
    plural: &'static str,
) -> Result<Arc<GenericStore>, Error> {
    resources
        .store(group, plural)
        .ok_or(Error::NotServed(plural))
}

/// The current `name`, or `None` when it is gone.
async fn current(
    store: &GenericStore,
    ctx: &RequestContext,
    name: &str,
) -> Result<Option<Arc<Value>>, Error> {
    match store.get(ctx, name).await {
        Ok(object) => Ok(Some(object.value())),
        Err(e) if e.code() == 404 => Ok(None),
        Err(e) => Err(api(format!("reading {} {name}", store.rtype.plural))(e)),
    }
}

/// Carry out what `object`'s `finalizer` calls for, given whether it is
/// `in_use`; written only if the stored object (the same uid) still calls for
/// the same, so a change in between is never overwritten.
async fn write_step(
    store: &GenericStore,
    ctx: &RequestContext,
    object: &Value,
    finalizer: &str,
    in_use: impl Fn(&Value) -> bool + Send + Sync,
) -> Result<(), Error> {
    let Some(step) = finalizer_step(object, finalizer, in_use(object)) else {
        return Ok(());
    };
    let (name, uid) = (meta::name(object), meta::uid(object));
    let result = store
        .update_with(ctx, name, |current| {
            let mut next = current.clone();
            if meta::uid(current) == uid
                && finalizer_step(current, finalizer, in_use(current)) == Some(step)
            {
                apply_step(&mut next, finalizer, step);
            }
            Ok(next)
        })
        .await;
    match result {
        Ok(_) => {
            let namespace = meta::namespace(object);
            match step {
                Step::Add => {
                    tracing::info!(%namespace, name, finalizer, "added protection finalizer")
                }
                Step::Remove => {
                    tracing::info!(%namespace, name, finalizer, "removed protection finalizer: not in use")
                }
            }
            Ok(())
        }
        Err(e) if e.code() == 404 => Ok(()),
        Err(e) => Err(api(format!("updating {} {name}", store.rtype.plural))(e)),
    }
}

// ---------------------------------------------------------------------------
// The controllers.

/// pvc-protection: claims, re-checked when the pods naming them change.
pub struct ClaimProtection<R: Resources> {
    pub resources: Arc<R>,
}

impl<R: Resources> ClaimProtection<R> {
    pub async fn run(self: Arc<Self>) {
        let (Some(claims), Some(pods)) = (
            self.resources.store("", "persistentvolumeclaims"),
            self.resources.store("", "pods"),
        ) else {
            tracing::error!("claims or pods are not served; pvc-protection does not run");
            return;
        };
        let queue = WorkQueue::new(RETRY, MAX_RETRY);
        let known = Arc::new(Mutex::new(HashSet::default()));
        let claim_keys = {
            let known = known.clone();
            move |event: &Event| claim_event_keys(&mut lock(&known), event)
        };
        let pod_keys = move |event: &Event| pod_event_keys(&lock(&known), event);
        let feed = async {
            tokio::join!(
                runtime::follow(
                    Reflector::new(claims, CLAIM_MANAGER),
                    queue.clone(),
                    claim_keys
                ),
                runtime::follow(Reflector::new(pods, CLAIM_MANAGER), queue.clone(), pod_keys),
            );
        };
        runtime::run(self.clone(), queue.clone(), 1, feed).await;
    }

    /// The pods of `namespace`, as they are now.
    async fn pods(&self, namespace: &str) -> Result<Vec<Arc<Value>>, Error> {
        let pods = store(&*self.resources, "", "pods")?;
        let ctx = system_context(namespace, CLAIM_MANAGER);
        let list = pods
            .list(&ctx, ListOptions::default())
            .await
            .map_err(api(format!("listing pods of {namespace}")))?;
        Ok(list.items.iter().map(|p| p.value()).collect())
    }

    async fn reconcile_claim(&self, (namespace, name): &ClaimKey) -> Result<(), Error> {
        let claims = store(&*self.resources, "", "persistentvolumeclaims")?;
        let ctx = system_context(namespace, CLAIM_MANAGER);
        let Some(claim) = current(&claims, &ctx, name).await? else {
            return Ok(());
        };
        let deleting = deletion_candidate(&claim, PVC_FINALIZER);
        let pods = if deleting || tracks_use(&claim) {
            self.pods(namespace).await?
        } else {
            Vec::new()
        };
        if tracks_use(&claim) {
            let used = pods.iter().any(|p| references(p, &claim));
            self.keep_unused(&claims, &ctx, &claim, used).await?;
        }
        let in_use = |claim: &Value| {
            deletion_candidate(claim, PVC_FINALIZER) && pods.iter().any(|p| holds(p, claim))
        };
        if in_use(&claim) {
            tracing::debug!(namespace, name, "keeping claim: a pod uses it");
        }
        write_step(&claims, &ctx, &claim, PVC_FINALIZER, in_use).await
    }

    /// Write the claim's `Unused` condition when it changes.
    async fn keep_unused(
        &self,
        claims: &GenericStore,
        ctx: &RequestContext,
        claim: &Value,
        used: bool,
    ) -> Result<(), Error> {
        if unused_change(claim, used).is_none() {
            return Ok(());
        }
        let mut ctx = ctx.clone();
        ctx.subresource = apimachinery::Subresource::Status;
        let uid = meta::uid(claim);
        let now = apimachinery::time::now_rfc3339();
        let result = claims
            .update_with(&ctx, meta::name(claim), |current| {
                let mut next = current.clone();
                if meta::uid(current) == uid
                    && tracks_use(current)
                    && let Some(change) = unused_change(current, used)
                {
                    set_unused(&mut next, change, &now);
                }
                Ok(next)
            })
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(e) if e.code() == 404 => Ok(()),
            Err(e) => Err(api(format!("Unused condition of {}", meta::name(claim)))(e)),
        }
    }
}

#[async_trait::async_trait]
impl<R: Resources> Reconciler for ClaimProtection<R> {
    type Key = ClaimKey;
    type Error = Error;

    fn name(&self) -> &'static str {
        "pvc-protection"
    }

    async fn reconcile(&self, key: &ClaimKey) -> Result<(), Error> {
        self.reconcile_claim(key).await
    }
}

/// pv-protection: volumes, by their own phase.
pub struct VolumeProtection<R: Resources> {
    pub resources: Arc<R>,
}

impl<R: Resources> VolumeProtection<R> {
    pub async fn run(self: Arc<Self>) {
        let Some(volumes) = self.resources.store("", "persistentvolumes") else {
            tracing::error!("persistent volumes are not served; pv-protection does not run");
            return;
        };
        let queue = WorkQueue::new(RETRY, MAX_RETRY);
        let wants = |v: &Value| finalizer_step(v, PV_FINALIZER, volume_in_use(v)).is_some();
        let keys = move |event: &Event| match event {
            Event::Restarted(all) => all
                .iter()
                .map(|v| v.value())
                .filter(|v| wants(v))
                .map(|v| meta::name(&v).to_string())
                .collect(),
            Event::Applied(v) => {
                let v = v.value();
                if wants(&v) {
                    vec![meta::name(&v).to_string()]
                } else {
                    Vec::new()
                }
            }
            Event::Deleted(_) => Vec::new(),
        };
        let feed = runtime::follow(Reflector::new(volumes, VOLUME_MANAGER), queue.clone(), keys);
        runtime::run(self.clone(), queue, 1, feed).await;
    }
}

#[async_trait::async_trait]
impl<R: Resources> Reconciler for VolumeProtection<R> {
    type Key = String;
    type Error = Error;

    fn name(&self) -> &'static str {
        "pv-protection"
    }

    async fn reconcile(&self, name: &String) -> Result<(), Error> {
        let volumes = store(&*self.resources, "", "persistentvolumes")?;
        let ctx = system_context("", VOLUME_MANAGER);
        let Some(volume) = current(&volumes, &ctx, name).await? else {
            return Ok(());
        };
        write_step(&volumes, &ctx, &volume, PV_FINALIZER, volume_in_use).await
    }
}

/// vac-protection: classes, re-checked when the claims and volumes naming
/// them change or go.
pub struct ClassProtection<R: Resources> {
    pub resources: Arc<R>,
}

impl<R: Resources> ClassProtection<R> {
    pub async fn run(self: Arc<Self>) {
        let stores = (
            self.resources
                .store(STORAGE_GROUP, "volumeattributesclasses"),
            self.resources.store("", "persistentvolumeclaims"),
            self.resources.store("", "persistentvolumes"),
        );
        let (Some(classes), Some(claims), Some(volumes)) = stores else {
            tracing::error!(
                "classes, claims or volumes are not served; vac-protection does not run"
            );
            return;
        };
        let queue = WorkQueue::new(RETRY, MAX_RETRY);
        let users = |store| {
            let named = Mutex::new(HashMap::default());
            let keys = move |event: &Event| released_classes(&mut lock(&named), event);
            runtime::follow(Reflector::new(store, CLASS_MANAGER), queue.clone(), keys)
        };
        let feed = async {
            tokio::join!(
                runtime::follow(
                    Reflector::new(classes, CLASS_MANAGER),
                    queue.clone(),
                    class_event_keys
                ),
                users(claims),
                users(volumes),
            );
        };
        runtime::run(self.clone(), queue.clone(), 1, feed).await;
    }

    /// Whether a claim or a volume names the class `name` now.
    async fn in_use(&self, name: &str) -> Result<bool, Error> {
        let ctx = system_context("", CLASS_MANAGER);
        for plural in ["persistentvolumeclaims", "persistentvolumes"] {
            let list = store(&*self.resources, "", plural)?
                .list(&ctx, ListOptions::default())
                .await
                .map_err(api(format!("listing {plural}")))?;
            if list
                .items
                .iter()
                .any(|o| classes_of(&o.value()).iter().any(|c| c == name))
            {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

#[async_trait::async_trait]
impl<R: Resources> Reconciler for ClassProtection<R> {
    type Key = String;
    type Error = Error;

    fn name(&self) -> &'static str {
        "vac-protection"
    }

    async fn reconcile(&self, name: &String) -> Result<(), Error> {
        let classes = store(&*self.resources, STORAGE_GROUP, "volumeattributesclasses")?;
        let ctx = system_context("", CLASS_MANAGER);
        let Some(class) = current(&classes, &ctx, name).await? else {
            return Ok(());
        };
        let in_use = deletion_candidate(&class, VAC_FINALIZER) && self.in_use(name).await?;
        if in_use {
            tracing::debug!(
                name,
                "keeping volume attributes class: a claim or volume names it"
            );
        }
        write_step(&classes, &ctx, &class, VAC_FINALIZER, |_: &Value| in_use).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use registry::Object;

    const NOW: &str = "2026-01-01T00:00:00Z";

    fn claim(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
               "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
                            "finalizers": [PVC_FINALIZER]}})
    }

    fn deleting(mut object: Value) -> Value {
        object["metadata"]["deletionTimestamp"] = json!(NOW);
        object
    }

    /// A pod on a node with a claim volume `data` of `claim` and an ephemeral
    /// volume `scratch`.
    fn pod(claim: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "p", "namespace": "ns", "uid": "uid-p"},
               "spec": {"nodeName": "node-1", "volumes": [
                   {"name": "data", "persistentVolumeClaim": {"claimName": claim}},
                   {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
                   {"name": "config", "configMap": {"name": "c"}}]},
               "status": {"phase": "Running"}})
    }

    fn ephemeral_claim(controller: &str) -> Value {
        let mut c = claim("p-scratch");
        c["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "Pod",
            "name": "p", "uid": controller, "controller": true}]);
        c
    }

    fn event(kind: &str, objects: &[Value]) -> Event {
        let mut all = objects.iter().map(|o| Arc::new(Object::new(o.clone())));
        match kind {
            "restarted" => Event::Restarted(all.collect()),
            "applied" => Event::Applied(all.next().unwrap()),
            _ => Event::Deleted(all.next().unwrap()),
        }
    }

    // protectionutil's IsDeletionCandidate and NeedToAddFinalizer.
    #[test]
    fn the_finalizer_goes_from_unused_objects_being_deleted_and_comes_to_live_ones() {
        let live = claim("c");
        assert_eq!(finalizer_step(&live, PVC_FINALIZER, false), None);
        let mut bare = live.clone();
        bare["metadata"]["finalizers"] = json!(["example.com/keep"]);
        assert_eq!(finalizer_step(&bare, PVC_FINALIZER, true), Some(Step::Add));
        assert_eq!(
            finalizer_step(&deleting(bare.clone()), PVC_FINALIZER, false),
            None
        );
        let gone = deleting(live);
        assert!(deletion_candidate(&gone, PVC_FINALIZER));
        assert_eq!(finalizer_step(&gone, PVC_FINALIZER, true), None);
        assert_eq!(
            finalizer_step(&gone, PVC_FINALIZER, false),
            Some(Step::Remove)
        );

        apply_step(&mut bare, PVC_FINALIZER, Step::Add);
        assert_eq!(
            bare["metadata"]["finalizers"],
            json!(["example.com/keep", PVC_FINALIZER])
        );
        apply_step(&mut bare, PVC_FINALIZER, Step::Remove);
        assert_eq!(bare["metadata"]["finalizers"], json!(["example.com/keep"]));
        let mut none = json!({"metadata": {"name": "v", "finalizers": null}});
        apply_step(&mut none, PV_FINALIZER, Step::Add);
        assert_eq!(none["metadata"]["finalizers"], json!([PV_FINALIZER]));
    }

    // pvc_protection_controller_test.go's cases of podUsesPVCForDeletion.
    #[test]
    fn a_scheduled_pod_holds_its_claims() {
        let c = claim("c");
        let p = pod("c");
        assert_eq!(claims_of(&p), ["c", "p-scratch"]);
        assert!(holds(&p, &c));
        assert!(!holds(&p, &claim("other")));
        // Whatever its phase, as long as it exists.
        let mut done = p.clone();
        done["status"]["phase"] = json!("Succeeded");
        assert!(holds(&done, &c));
        // Not before it is scheduled: kubelet would refuse to start it.
        let mut unscheduled = p.clone();
        unscheduled["spec"]["nodeName"] = json!("");
        assert!(!holds(&unscheduled, &c));
        unscheduled["spec"]
            .as_object_mut()
            .unwrap()
            .remove("nodeName");
        assert!(!holds(&unscheduled, &c));
        // An ephemeral claim in another namespace is not this pod's.
        let mut elsewhere = ephemeral_claim("uid-p");
        elsewhere["metadata"]["namespace"] = json!("other");
        assert!(!holds(&p, &elsewhere));
    }

    #[test]
    fn an_ephemeral_claim_is_held_by_the_pod_controlling_it_until_shut_down() {
        let p = pod("c");
        assert!(holds(&p, &ephemeral_claim("uid-p")));
        // Same name, another pod's claim.
        assert!(!holds(&p, &ephemeral_claim("uid-other")));
        assert!(!holds(&p, &claim("p-scratch")));
        // Deleted with a grace period: still running.
        let mut going = deleting(p.clone());
        going["metadata"]["deletionGracePeriodSeconds"] = json!(30);
        assert!(holds(&going, &ephemeral_claim("uid-p")));
        // Kubelet done with it (grace period 0): released.
        going["metadata"]["deletionGracePeriodSeconds"] = json!(0);
        assert!(!holds(&going, &ephemeral_claim("uid-p")));
    }

    // podUsesPVCForUnusedSince: any pod, scheduled or not, until terminated.
    #[test]
    fn the_unused_condition_follows_pods_not_terminated() {
        let c = claim("c");
        let mut p = pod("c");
        p["spec"].as_object_mut().unwrap().remove("nodeName");
        assert!(references(&p, &c));
        for phase in ["Succeeded", "Failed"] {
            let mut done = p.clone();
            done["status"]["phase"] = json!(phase);
            assert!(!references(&done, &c), "{phase}");
        }
        // Deleted: terminated once no container runs.
        let mut going = deleting(p.clone());
        going["status"]["containerStatuses"] = json!([{"name": "a", "state": {"running": {}}}]);
        assert!(references(&going, &c));
        going["status"]["containerStatuses"] =
            json!([{"name": "a", "state": {"terminated": {"exitCode": 0}}}]);
        assert!(!references(&going, &c));

        let mut bound = c.clone();
        bound["status"] = json!({"phase": "Bound"});
        assert!(tracks_use(&bound) && claim_wants_look(&bound));
        assert_eq!(unused_change(&bound, true).unwrap().0, "False");
        let change = unused_change(&bound, false).unwrap();
        assert_eq!(
            change,
            (
                "True",
                "NoPodsUsingPVC",
                "No pods are currently referencing this PVC"
            )
        );
        set_unused(&mut bound, change, NOW);
        assert_eq!(
            bound["status"]["conditions"],
            json!([{"type": "Unused", "status": "True", "lastTransitionTime": NOW,
                    "reason": "NoPodsUsingPVC", "message": "No pods are currently referencing this PVC"}])
        );
        assert!(!claim_wants_look(&bound));
        assert_eq!(unused_change(&bound, false), None);
        let change = unused_change(&bound, true).unwrap();
        assert_eq!(
            change,
            (
                "False",
                "PodUsingPVC",
                "A pod is currently referencing this PVC"
            )
        );
        set_unused(&mut bound, change, NOW);
        assert_eq!(bound["status"]["conditions"].as_array().unwrap().len(), 1);
        assert_eq!(unused_change(&bound, true), None);
        // Only live bound claims carry it.
        assert!(!tracks_use(&c) && !tracks_use(&deleting(bound)));
    }

    #[test]
    fn volumes_are_in_use_while_bound() {
        let volume = |phase: &str| json!({"metadata": {"name": "v"}, "status": {"phase": phase}});
        assert!(volume_in_use(&volume("Bound")));
        for phase in ["Pending", "Available", "Released", "Failed"] {
            assert!(!volume_in_use(&volume(phase)), "{phase}");
        }
    }

    #[test]
    fn claims_and_volumes_name_classes() {
        let mut c = claim("c");
        c["spec"] = json!({"volumeAttributesClassName": "gold"});
        c["status"] = json!({"currentVolumeAttributesClassName": "silver",
                             "modifyVolumeStatus": {"targetVolumeAttributesClassName": "gold", "status": "InProgress"}});
        assert_eq!(classes_of(&c), ["gold", "silver"]);
        let v = json!({"metadata": {"name": "v"}, "spec": {"volumeAttributesClassName": "bronze"}});
        assert_eq!(classes_of(&v), ["bronze"]);
        assert!(classes_of(&json!({"spec": {"volumeAttributesClassName": ""}})).is_empty());
    }

    #[test]
    fn claim_and_pod_events_queue_the_claims_concerned() {
        let mut known = HashSet::default();
        let mut bare = claim("bare");
        bare["metadata"]["finalizers"] = json!([]);
        let keys = claim_event_keys(
            &mut known,
            &event(
                "restarted",
                &[claim("quiet"), bare, deleting(claim("going"))],
            ),
        );
        let key = |n: &str| ("ns".to_string(), n.to_string());
        assert_eq!(keys, [key("bare"), key("going")]);
        assert_eq!(known.len(), 3);
        assert!(claim_event_keys(&mut known, &event("applied", &[claim("new")])).is_empty());
        assert!(claim_event_keys(&mut known, &event("deleted", &[claim("quiet")])).is_empty());
        assert_eq!(known.len(), 3);

        let p = pod("bare");
        assert_eq!(
            pod_event_keys(&known, &event("deleted", std::slice::from_ref(&p))),
            [key("bare"), key("p-scratch")]
        );
        // After a relist, every known claim too: a pod may have gone unseen.
        let mut relisted = pod_event_keys(&known, &event("restarted", &[p]));
        relisted.sort();
        relisted.dedup();
        assert_eq!(
            relisted,
            [key("bare"), key("going"), key("new"), key("p-scratch")]
        );
    }

    // vac_protection_controller's pvcUpdated / pvDeleted: the classes no longer
    // named.
    #[test]
    fn claims_and_volumes_release_the_classes_they_stop_naming() {
        let mut named = HashMap::default();
        let with = |uid: &str, class: &str| json!({"metadata": {"name": uid, "uid": uid}, "spec": {"volumeAttributesClassName": class}});
        assert!(released_classes(&mut named, &event("restarted", &[with("a", "gold")])).is_empty());
        assert!(released_classes(&mut named, &event("applied", &[with("b", "gold")])).is_empty());
        assert_eq!(
            released_classes(&mut named, &event("applied", &[with("a", "silver")])),
            ["gold"]
        );
        assert_eq!(
            released_classes(&mut named, &event("deleted", &[with("b", "gold")])),
            ["gold"]
        );
        // A relist releases what no listed object names any more.
        assert_eq!(
            released_classes(&mut named, &event("restarted", &[with("c", "bronze")])),
            ["silver"]
        );
        let mut class = json!({"metadata": {"name": "gold", "finalizers": [VAC_FINALIZER]}});
        assert!(class_event_keys(&event("applied", &[class.clone()])).is_empty());
        class = deleting(class);
        assert_eq!(class_event_keys(&event("applied", &[class])), ["gold"]);
    }
}
