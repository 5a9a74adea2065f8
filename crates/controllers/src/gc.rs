//! The garbage collector: objects whose owners are gone are deleted, and owners
//! deleted with `propagationPolicy: Foreground` or `Orphan` wait (through the
//! `foregroundDeletion` / `orphan` finalizers) until their dependents are deleted or
//! released. Works for every type, built-in or custom, by uid.
//!
//! One watch over the whole keyspace feeds an in-memory graph (uid → node, owner uid →
//! dependents). Events arrive in revision order from the initial state on, so an
//! owner absent from the graph is absent at that revision: no live lookups needed.
//! Decisions are pure ([`Graph::decide`]); the runner executes them through the
//! stores with uid preconditions, retrying failures with backoff. On the
//! controller runtime: a reflector over the keyspace (a watch that ends is
//! resumed; a relist rebuilds the graph), a work queue of uids.

use foldhash::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use apimachinery::meta;
use registry::Head;
use registry::options::{DeleteOptions, PropagationPolicy};
use serde_json::Value;

use crate::{Error, lock};
use runtime::{Event, Reconciler, Reflector, Resources, WorkQueue, system_context};

const MANAGER: &str = "kubext-garbage-collector";
pub const FOREGROUND: &str = "foregroundDeletion";
pub const ORPHAN: &str = "orphan";
/// Failed steps come back after 0.5 s, doubling per failure, at most 30 s.
const RETRY: Duration = Duration::from_millis(500);
const MAX_RETRY: Duration = Duration::from_secs(30);

/// What the collector knows of one object: kept small, as there is one per object
/// in the store.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Interned: shared by every object of the namespace.
    pub namespace: Arc<str>,
    /// How to reach the object; kept only for objects the collector may act on
    /// (with owners, or waiting for dependents).
    pub ident: Option<Box<Ident>>,
    pub owners: Box<[Owner]>,
    pub deleting: bool,
    /// Carries the `foregroundDeletion` finalizer.
    pub foreground: bool,
    /// Carries the `orphan` finalizer.
    pub orphan: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Ident {
    pub group: Arc<str>,
    pub kind: Arc<str>,
    pub name: Box<str>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Owner {
    pub uid: String,
    pub block_owner_deletion: bool,
}

/// One shared copy of each namespace, group and kind string.
#[derive(Default)]
struct Interner {
    all: HashSet<Arc<str>>,
    /// The last one asked for: events come in runs of one namespace (and
    /// comparing is cheaper than hashing).
    last: Option<Arc<str>>,
}

impl Interner {
    fn get(&mut self, s: &str) -> Arc<str> {
        if let Some(last) = self.last.as_ref().filter(|last| ***last == *s) {
            return last.clone();
        }
        let found = match self.all.get(s) {
            Some(found) => found.clone(),
            None => {
                let new: Arc<str> = s.into();
                self.all.insert(new.clone());
                new
            }
        };
        self.last = Some(found.clone());
        found
    }
}

impl Node {
    fn waits_for(&self, finalizer: &str) -> bool {
        self.deleting
            && match finalizer {
                FOREGROUND => self.foreground,
                ORPHAN => self.orphan,
                _ => false,
            }
    }
}

/// What to do about one object.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Delete it (its owners are gone, or an owner is deleted in the foreground).
    /// `unblock`: first make its owner references non-blocking, as one of its
    /// own dependents already waits in the foreground (a cycle otherwise
    /// waits forever: upstream's cycle breaking).
    Delete {
        uid: String,
        foreground: bool,
        unblock: bool,
    },
    /// Remove its owner reference to `owner` (the owner is deleted as orphaning).
    Release { uid: String, owner: String },
    /// Remove the finalizer: the owner's dependents are handled.
    Finalize {
        uid: String,
        finalizer: &'static str,
    },
}

#[derive(Default)]
pub struct Graph {
    nodes: HashMap<String, Node>,
    dependents: HashMap<String, HashSet<String>>,
    interned: Interner,
}

impl Graph {
    /// The node of a stored object, with its uid; `None` without a uid.
    pub fn node_of(&mut self, head: &Head<'_>) -> Option<(String, Node)> {
        let md = &head.metadata;
        if md.uid.is_empty() {
            return None;
        }
        let owners: Box<[Owner]> = md
            .owner_references
            .iter()
            .flatten()
            .filter(|r| !r.uid.is_empty())
            .map(|r| Owner {
                uid: r.uid.clone(),
                block_owner_deletion: r.block_owner_deletion == Some(true),
            })
            .collect();
        let has = |f: &str| md.finalizers.iter().flatten().any(|x| x == f);
        let foreground = has(FOREGROUND);
        let orphan = has(ORPHAN);
        let ident = (!owners.is_empty() || foreground || orphan).then(|| {
            let group = head.api_version.rsplit_once('/').map_or("", |(g, _)| g);
            Box::new(Ident {
                group: self.interned.get(group),
                kind: self.interned.get(&head.kind),
                name: (*md.name).into(),
            })
        });
        Some((
            md.uid.to_string(),
            Node {
                namespace: self.interned.get(&md.namespace),
                ident,
                owners,
                deleting: md.deletion_timestamp.is_some(),
                foreground,
                orphan,
            },
        ))
    }

    pub fn node(&self, uid: &str) -> Option<&Node> {
        self.nodes.get(uid)
    }

    /// Record an object's current state; returns the uids whose decisions may change.
    /// An object neither owned nor being deleted has nothing to decide itself
    /// (most objects): only its owners and dependents, if any, are returned.
    pub fn upsert(&mut self, uid: String, node: Node) -> Vec<String> {
        use std::collections::hash_map::Entry;
        let mut touched = Vec::new();
        if node.deleting || !node.owners.is_empty() {
            touched.push(uid.clone());
        }
        let Graph {
            nodes, dependents, ..
        } = self;
        // One lookup of the uid, whether the object is new or known.
        let known = match nodes.entry(uid) {
            Entry::Occupied(mut known) => {
                if *known.get() == node {
                    return Vec::new();
                }
                let old = std::mem::replace(known.get_mut(), node);
                for owner in &old.owners {
                    unlink(dependents, &owner.uid, known.key());
                    touched.push(owner.uid.clone());
                }
                known
            }
            Entry::Vacant(new) => new.insert_entry(node),
        };
        let uid = known.key();
        for owner in &known.get().owners {
            dependents
                .entry(owner.uid.clone())
                .or_default()
                .insert(uid.clone());
            touched.push(owner.uid.clone());
        }
        if let Some(deps) = dependents.get(uid) {
            touched.extend(deps.iter().cloned());
        }
        touched
    }

    /// Forget a deleted object; returns the uids whose decisions may change.
    pub fn remove(&mut self, uid: &str) -> Vec<String> {
        let Some(old) = self.nodes.remove(uid) else {
            return Vec::new();
        };
        let mut touched: Vec<String> = old.owners.iter().map(|o| o.uid.clone()).collect();
        for owner in &old.owners {
            unlink(&mut self.dependents, &owner.uid, uid);
        }
        if let Some(deps) = self.dependents.get(uid) {
            touched.extend(deps.iter().cloned());
        }
        touched
    }

    /// Live dependents of `uid` (objects whose owner references name it).
    fn dependents_of(&self, uid: &str) -> impl Iterator<Item = (&String, &Node)> {
        self.dependents
            .get(uid)
            .into_iter()
            .flatten()
            .filter_map(|d| self.nodes.get(d).map(|n| (d, n)))
    }

    /// An owner reference counts only if the owner exists where the dependent can
    /// see it: cluster-scoped, or in the dependent's namespace (as upstream looks
    /// owners up).
    fn owner(&self, dependent: &Node, owner_uid: &str) -> Option<&Node> {
        self.nodes
            .get(owner_uid)
            .filter(|o| o.namespace.is_empty() || o.namespace == dependent.namespace)
    }

    /// What to do about `uid` now.
    pub fn decide(&self, uid: &str) -> Vec<Action> {
        let Some(node) = self.nodes.get(uid) else {
            return Vec::new();
        };
        let mut actions = Vec::new();
        if node.waits_for(ORPHAN) {
            let mut released = 0;
            for (dependent, d) in self.dependents_of(uid) {
                if d.owners.iter().any(|o| o.uid == uid) {
                    actions.push(Action::Release {
                        uid: dependent.clone(),
                        owner: uid.to_string(),
                    });
                    released += 1;
                }
            }
            if released == 0 {
                actions.push(Action::Finalize {
                    uid: uid.to_string(),
                    finalizer: ORPHAN,
                });
            }
            return actions;
        }
        if node.waits_for(FOREGROUND) {
            let mut blocking = 0;
            for (dependent, d) in self.dependents_of(uid) {
                if !d.deleting {
                    actions.push(self.delete_in_foreground(dependent));
                }
                if d.owners
                    .iter()
                    .any(|o| o.uid == uid && o.block_owner_deletion)
                {
                    blocking += 1;
                }
            }
            if blocking == 0 {
                actions.push(Action::Finalize {
                    uid: uid.to_string(),
                    finalizer: FOREGROUND,
                });
            }
            return actions;
        }
        if node.deleting || node.owners.is_empty() {
            return actions;
        }
        // Delete when no owner stands: each is gone (dangling) or being deleted in
        // the foreground (then this one goes in the foreground too).
        let mut foreground = false;
        for owner in &node.owners {
            match self.owner(node, &owner.uid) {
                None => {}
                Some(o) if o.waits_for(FOREGROUND) => foreground = true,
                Some(_) => return actions,
            }
        }
        actions.push(if foreground {
            self.delete_in_foreground(uid)
        } else {
            Action::Delete {
                uid: uid.to_string(),
                foreground: false,
                unblock: false,
            }
        });
        actions
    }

    /// Delete `uid`, an owner of which waits in the foreground: in the
    /// foreground too when it has dependents, unblocking its owners when one
    /// of those already waits.
    fn delete_in_foreground(&self, uid: &str) -> Action {
        let mut dependents = self.dependents_of(uid).peekable();
        let foreground = dependents.peek().is_some();
        let unblock = dependents.any(|(_, d)| d.waits_for(FOREGROUND));
        Action::Delete {
            uid: uid.to_string(),
            foreground,
            unblock,
        }
    }
}

/// `dependent` no longer names `owner` (an owner without dependents left
/// is forgotten).
fn unlink(dependents: &mut HashMap<String, HashSet<String>>, owner: &str, dependent: &str) {
    if let Some(set) = dependents.get_mut(owner) {
        set.remove(dependent);
        if set.is_empty() {
            dependents.remove(owner);
        }
    }
}

/// Follows every object and acts on the graph.
pub struct GarbageCollector<R: Resources> {
    pub resources: Arc<R>,
}

impl<R: Resources> GarbageCollector<R> {
    /// Run forever on the controller runtime: a reflector over the whole
    /// keyspace feeds the graph (a relist after 410 rebuilds it), uids whose
    /// decisions may have changed are queued, and failed steps come back after
    /// their backoff.
    pub async fn run(self) {
        runtime::keep_running("garbage-collector", || self.run_once()).await;
    }

    /// Ends only when there is nothing to follow.
    async fn run_once(&self) -> Result<(), Error> {
        // Any store leads to the storage and its key prefix.
        let anchor = self
            .resources
            .store("", "namespaces")
            .ok_or(Error::NotServed("namespaces"))?;
        let reflector = Reflector::keyspace(
            anchor.storage().clone(),
            format!("{}/", anchor.prefix()),
            MANAGER,
        );
        let collector = Arc::new(Collector {
            resources: self.resources.clone(),
            graph: Mutex::new(Graph::default()),
        });
        let queue = WorkQueue::new(RETRY, MAX_RETRY);
        let feed = collector.clone().follow(reflector, queue.clone());
        runtime::run(collector, queue, WORKERS, feed).await;
        Ok(())
    }
}

/// One worker, as the collector always had: steps run one at a time, in the
/// order their uids were queued.
const WORKERS: usize = 1;

/// The graph and the stores its decisions are carried out through; its keys
/// are uids.
struct Collector<R: Resources> {
    resources: Arc<R>,
    graph: Mutex<Graph>,
}

/// One decision, with what is needed to carry it out without the graph.
struct Step {
    action: Action,
    namespace: Arc<str>,
    ident: Ident,
}

impl<R: Resources> Collector<R> {
    /// Apply every event to the graph and queue the uids it touched; a burst of
    /// events is taken in whole before they are queued, so each uid is looked
    /// at once.
    async fn follow(self: Arc<Self>, mut reflector: Reflector, queue: Arc<WorkQueue<String>>) {
        loop {
            let event = reflector.next().await;
            let touched = {
                let mut graph = lock(&self.graph);
                let mut touched = apply(&mut graph, event);
                while let Some(event) = reflector.try_next() {
                    touched.extend(apply(&mut graph, event));
                }
                touched
            };
            touched.into_iter().for_each(|uid| queue.add(uid));
        }
    }

    /// The decisions for `uid` now.
    fn plan(&self, uid: &str) -> Vec<Step> {
        let graph = lock(&self.graph);
        graph
            .decide(uid)
            .into_iter()
            .filter_map(|action| {
                let (Action::Delete { uid, .. }
                | Action::Release { uid, .. }
                | Action::Finalize { uid, .. }) = &action;
                let node = graph.node(uid)?;
                let ident = Ident::clone(node.ident.as_deref()?);
                let namespace = node.namespace.clone();
                Some(Step {
                    action,
                    namespace,
                    ident,
                })
            })
            .collect()
    }

    async fn execute(&self, step: &Step) -> Result<(), Error> {
        let Step {
            action,
            namespace,
            ident,
        } = step;
        let Some(store) = self.resources.store_for_kind(&ident.group, &ident.kind) else {
            return Ok(()); // No longer served (its CRD went away).
        };
        let ctx = system_context(namespace, MANAGER);
        let failed = |status: apimachinery::StatusError| match status.code() {
            404 | 409 => Ok(()),
            _ => Err(Error::Api {
                what: format!("{action:?}"),
                status,
            }),
        };
        match action {
            Action::Delete {
                uid,
                foreground,
                unblock,
            } => {
                if *unblock {
                    store
                        .update_with(&ctx, &ident.name, |current| {
                            let mut next = current.clone();
                            if meta::uid(current) == uid {
                                unblock_owners(&mut next);
                            }
                            Ok(next)
                        })
                        .await
                        .map(|_| ())
                        .or_else(failed)?;
                }
                tracing::info!(kind = %ident.kind, %namespace, name = %ident.name, "garbage collecting");
                let opts = DeleteOptions {
                    precondition_uid: Some(uid.clone()),
                    propagation_policy: Some(if *foreground {
                        PropagationPolicy::Foreground
                    } else {
                        PropagationPolicy::Background
                    }),
                    ..Default::default()
                };
                store
                    .delete(&ctx, &ident.name, &opts)
                    .await
                    .map(|_| ())
                    .or_else(failed)
            }
            Action::Release { uid, owner } => store
                .update_with(&ctx, &ident.name, |current| {
                    let mut next = current.clone();
                    if meta::uid(current) != uid {
                        return Ok(next);
                    }
                    if let Some(refs) = meta::metadata_mut(&mut next)
                        .get_mut("ownerReferences")
                        .and_then(Value::as_array_mut)
                    {
                        refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(owner));
                        if refs.is_empty() {
                            meta::metadata_mut(&mut next).remove("ownerReferences");
                        }
                    }
                    Ok(next)
                })
                .await
                .map(|_| ())
                .or_else(failed),
            Action::Finalize { uid, finalizer } => store
                .update_with(&ctx, &ident.name, |current| {
                    let mut next = current.clone();
                    if meta::uid(current) != uid {
                        return Ok(next);
                    }
                    if let Some(list) = meta::metadata_mut(&mut next)
                        .get_mut("finalizers")
                        .and_then(Value::as_array_mut)
                    {
                        list.retain(|f| f.as_str() != Some(finalizer));
                    }
                    Ok(next)
                })
                .await
                .map(|_| ())
                .or_else(failed),
        }
    }
}

#[async_trait::async_trait]
impl<R: Resources> Reconciler for Collector<R> {
    type Key = String;
    type Error = Error;

    fn name(&self) -> &'static str {
        "garbage-collector"
    }

    /// Carry out the decisions for the object with this uid.
    async fn reconcile(&self, uid: &String) -> Result<(), Error> {
        for step in self.plan(uid) {
            self.execute(&step).await?;
        }
        Ok(())
    }
}

/// Every blocking owner reference becomes non-blocking.
fn unblock_owners(object: &mut Value) {
    let refs = meta::metadata_mut(object)
        .get_mut("ownerReferences")
        .and_then(Value::as_array_mut);
    for owner in refs.into_iter().flatten() {
        if owner.get("blockOwnerDeletion") == Some(&Value::Bool(true)) {
            owner["blockOwnerDeletion"] = Value::Bool(false);
        }
    }
}

/// Apply one reflector event to the graph; the uids to look at again. After a
/// relist the graph is built afresh from the complete state.
fn apply(graph: &mut Graph, event: Event) -> Vec<String> {
    match event {
        Event::Restarted(all) => {
            *graph = Graph::default();
            all.iter().flat_map(|o| upsert(graph, o)).collect()
        }
        Event::Applied(o) => upsert(graph, &o),
        Event::Deleted(o) => graph.remove(&o.head().metadata.uid),
    }
}

fn upsert(graph: &mut Graph, object: &registry::Object) -> Vec<String> {
    match graph.node_of(&object.head()) {
        Some((uid, node)) => graph.upsert(uid, node),
        None => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(kind: &str, ns: &str, owners: &[(&str, bool)]) -> Node {
        Node {
            namespace: ns.into(),
            ident: Some(Box::new(Ident {
                group: "".into(),
                kind: kind.into(),
                name: kind.to_lowercase().into(),
            })),
            owners: owners
                .iter()
                .map(|(uid, block)| Owner {
                    uid: uid.to_string(),
                    block_owner_deletion: *block,
                })
                .collect(),
            deleting: false,
            foreground: false,
            orphan: false,
        }
    }

    fn deleting(mut n: Node, finalizer: &str) -> Node {
        n.deleting = true;
        n.foreground = finalizer == FOREGROUND;
        n.orphan = finalizer == ORPHAN;
        n
    }

    #[test]
    fn dangling_dependents_are_deleted_and_solid_ones_kept() {
        let mut g = Graph::default();
        g.upsert("owner".into(), node("Owner", "", &[]));
        g.upsert("dep".into(), node("Dep", "ns", &[("owner", false)]));
        assert!(g.decide("dep").is_empty(), "a cluster-scoped owner counts");
        let touched = g.remove("owner");
        assert!(touched.contains(&"dep".to_string()));
        assert_eq!(
            g.decide("dep"),
            [Action::Delete {
                uid: "dep".into(),
                foreground: false,
                unblock: false
            }]
        );
        // One owner still standing keeps it.
        g.upsert("other".into(), node("Owner", "ns", &[]));
        g.upsert(
            "dep".into(),
            node("Dep", "ns", &[("owner", false), ("other", false)]),
        );
        assert!(g.decide("dep").is_empty());
        // An owner in another namespace is not visible: dangling.
        g.upsert("elsewhere".into(), node("Owner", "other-ns", &[]));
        g.upsert("dep2".into(), node("Dep", "ns", &[("elsewhere", false)]));
        assert_eq!(g.decide("dep2").len(), 1);
    }

    #[test]
    fn only_objects_with_something_to_decide_are_looked_at() {
        let mut g = Graph::default();
        assert!(
            g.upsert("owner".into(), node("Owner", "ns", &[]))
                .is_empty()
        );
        assert!(g.decide("owner").is_empty());
        let mut touched = g.upsert("dep".into(), node("Dep", "ns", &[("owner", false)]));
        touched.sort();
        assert_eq!(touched, ["dep", "owner"]);
        // The owner's dependents may have to act on its change.
        let touched = g.upsert("owner".into(), deleting(node("Owner", "ns", &[]), ""));
        assert_eq!(touched, ["owner", "dep"]);
        // A dependent whose references are removed: its former owner is looked at.
        assert_eq!(g.upsert("dep".into(), node("Dep", "ns", &[])), ["owner"]);
    }

    // garbage_collector.go's "should not be blocked by dependency circle":
    // p1 <- p2 <- p3 <- p1, p1 deleted in the foreground, then p2. p3's own
    // dependent (p1) already waits, so p3's references are unblocked first
    // and p2 can go; then p1, then p3.
    #[test]
    fn cycles_of_foreground_deletions_are_broken() {
        let mut g = Graph::default();
        g.upsert(
            "p1".into(),
            deleting(node("Pod", "ns", &[("p3", true)]), FOREGROUND),
        );
        g.upsert(
            "p2".into(),
            deleting(node("Pod", "ns", &[("p1", true)]), FOREGROUND),
        );
        g.upsert("p3".into(), node("Pod", "ns", &[("p2", true)]));
        assert_eq!(
            g.decide("p2"),
            [Action::Delete {
                uid: "p3".into(),
                foreground: true,
                unblock: true,
            }]
        );
        // Before p2 waits, p1's dependent p2 is deleted without unblocking.
        let mut g2 = Graph::default();
        g2.upsert(
            "p1".into(),
            deleting(node("Pod", "ns", &[("p3", true)]), FOREGROUND),
        );
        g2.upsert("p2".into(), node("Pod", "ns", &[("p1", true)]));
        g2.upsert("p3".into(), node("Pod", "ns", &[("p2", true)]));
        assert_eq!(
            g2.decide("p1"),
            [Action::Delete {
                uid: "p2".into(),
                foreground: true,
                unblock: false,
            }]
        );
    }

    #[test]
    fn foreground_owners_wait_for_blocking_dependents() {
        let mut g = Graph::default();
        g.upsert(
            "owner".into(),
            deleting(node("Owner", "ns", &[]), FOREGROUND),
        );
        g.upsert("a".into(), node("Dep", "ns", &[("owner", true)]));
        g.upsert("b".into(), node("Dep", "ns", &[("owner", false)]));
        let mut actions = g.decide("owner");
        actions.sort_by_key(|a| format!("{a:?}"));
        assert_eq!(
            actions,
            [
                Action::Delete {
                    uid: "a".into(),
                    foreground: false,
                    unblock: false
                },
                Action::Delete {
                    uid: "b".into(),
                    foreground: false,
                    unblock: false
                },
            ]
        );
        // The dependents themselves see their owner going in the foreground.
        assert_eq!(g.decide("a").len(), 1);
        g.remove("a");
        assert_eq!(
            g.decide("owner"),
            [
                Action::Delete {
                    uid: "b".into(),
                    foreground: false,
                    unblock: false
                },
                Action::Finalize {
                    uid: "owner".into(),
                    finalizer: FOREGROUND
                },
            ]
        );
    }

    #[test]
    fn orphaning_owners_release_their_dependents_first() {
        let mut g = Graph::default();
        g.upsert("owner".into(), deleting(node("Owner", "ns", &[]), ORPHAN));
        g.upsert(
            "a".into(),
            node("Dep", "ns", &[("owner", true), ("other", false)]),
        );
        assert_eq!(
            g.decide("owner"),
            [Action::Release {
                uid: "a".into(),
                owner: "owner".into()
            }]
        );
        g.upsert("a".into(), node("Dep", "ns", &[("other", false)]));
        assert_eq!(
            g.decide("owner"),
            [Action::Finalize {
                uid: "owner".into(),
                finalizer: ORPHAN
            }]
        );
    }

    #[test]
    fn nodes_come_from_objects() {
        let mut g = Graph::default();
        let obj = json!({
            "apiVersion": "stable.example.com/v1", "kind": "CronTab",
            "metadata": {"name": "c", "namespace": "ns", "uid": "u1",
                "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u0", "blockOwnerDeletion": true},
                                    {"apiVersion": "v1", "kind": "ConfigMap", "name": "bad"}]}
        });
        let (uid, n) = g.node_of(&Head::of(&obj)).unwrap();
        assert_eq!(uid, "u1");
        let ident = n.ident.unwrap();
        assert_eq!(&*ident.group, "stable.example.com");
        assert_eq!(&*ident.name, "c");
        assert_eq!(
            &*n.owners,
            [Owner {
                uid: "u0".into(),
                block_owner_deletion: true
            }]
        );
        // Objects the collector will not act on keep no name; namespaces are shared.
        let plain = json!({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "p", "namespace": "ns", "uid": "u2"}});
        let (_, p) = g.node_of(&Head::of(&plain)).unwrap();
        assert!(p.ident.is_none());
        assert!(Arc::ptr_eq(&p.namespace, &n.namespace));
        let waiting = json!({"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "w", "uid": "u3", "finalizers": ["foregroundDeletion"],
                                          "deletionTimestamp": "2026-01-01T00:00:00Z"}});
        let (_, w) = g.node_of(&Head::of(&waiting)).unwrap();
        assert!(w.waits_for(FOREGROUND) && w.ident.is_some());
        assert!(
            g.node_of(&Head::of(&json!({"metadata": {"name": "x"}})))
                .is_none()
        );
    }
}
