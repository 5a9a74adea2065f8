//! The API catalog: every served group/version/resource and the discovery
//! documents describing them, built once per change and swapped in whole
//! (requests load an `Arc` and look up a map).
//!
//! Hot path: lookups are borrowed and allocation-free; building happens per change only.

use base64::Engine;
use bytes::Bytes;
use foldhash::HashMap;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use apimachinery::gvk::compare_versions;
use registry::{GenericStore, ResourceType, StorageVersion};

use crate::remote_discovery::{self, RemoteGroupVersion};

/// One served resource at one version.
pub struct Served {
    pub rtype: Arc<ResourceType>,
    pub store: GenericStore,
    /// Set when a catalog change replaces or removes this resource (its CRD changed
    /// or went away): open watches end, and clients re-establish them.
    pub retired: tokio::sync::watch::Sender<bool>,
    /// Whether the objects have a protobuf form (built-in kinds, as upstream:
    /// custom resources are JSON and YAML only); worked out once, not per request.
    pub protobuf: bool,
}

impl Served {
    pub fn new(rtype: Arc<ResourceType>, store: GenericStore) -> Self {
        Served {
            protobuf: has_protobuf(&rtype),
            rtype,
            store,
            retired: tokio::sync::watch::Sender::new(false),
        }
    }
}

/// Whether `rtype`'s objects have a protobuf form (what [`Served::protobuf`] holds).
fn has_protobuf(rtype: &ResourceType) -> bool {
    rtype.structured && protobuf::encodes(&rtype.api_version(), &rtype.kind)
}

/// Prebuilt discovery documents of the whole API (JSON bytes).
#[derive(Default)]
pub struct Discovery {
    pub api: Bytes,
    pub core_v1: Bytes,
    pub apis: Bytes,
    pub aggregated_api: Bytes,
    pub aggregated_apis: Bytes,
}

/// Everything derived from the resources of one group-version. A new catalog
/// reuses it (by `Arc`) when those resources did not change, so a CRD change costs
/// the work for its own group-version, not for the whole API.
struct GroupVersion {
    group: String,
    version: String,
    /// Sorted by plural.
    served: Vec<Arc<Served>>,
    /// The legacy `APIResourceList`.
    legacy: Bytes,
    /// This version's entry in aggregated discovery.
    aggregated: Bytes,
    /// OpenAPI v3: the hash is cheap and needed for the index; the document is built
    /// on first request.
    openapi_hash: OnceLock<String>,
    openapi: OnceLock<Option<Arc<openapi::GroupVersionDocument>>>,
    /// `(groupPriorityMinimum, versionPriority)`: discovery order.
    priority: (i64, i64),
    /// Set for a group-version served by an extension server.
    remote: Option<RemoteGroupVersion>,
}

impl GroupVersion {
    fn new(group: &str, version: &str, served: Vec<Arc<Served>>) -> Self {
        let group_version = if group.is_empty() {
            version.to_string()
        } else {
            format!("{group}/{version}")
        };
        // Upstream's `/api/v1` list has no apiVersion (a quirk of the legacy installer).
        let legacy = bytes(if group.is_empty() {
            json!({
                "kind": "APIResourceList",
                "groupVersion": group_version,
                "resources": legacy_resources(&served),
            })
        } else {
            json!({
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": group_version,
                "resources": legacy_resources(&served),
            })
        });
        let aggregated = bytes(json!({
            "version": version,
            "resources": aggregated_resources(&served),
            "freshness": "Current",
        }));
        GroupVersion {
            group: group.to_string(),
            version: version.to_string(),
            served,
            legacy,
            aggregated,
            openapi_hash: OnceLock::new(),
            openapi: OnceLock::new(),
            priority: registry::builtin::apiregistration::local_priority(group, version),
            remote: None,
        }
    }

    /// An extension server's group-version, if its discovery was ever fetched.
    fn remote(r: &RemoteGroupVersion) -> Option<Self> {
        let legacy = r.resources.clone()?;
        let list: Value = serde_json::from_slice(&legacy).ok()?;
        let aggregated = bytes(remote_discovery::aggregated_version(
            &r.version, &list, r.fresh,
        ));
        // The backend's OpenAPI v3 document is served as fetched.
        let document = r.openapi_v3.as_ref().map(|doc| {
            Arc::new(openapi::GroupVersionDocument {
                json: doc.to_vec(),
                hash: openapi::bytes_hash(doc),
            })
        });
        Some(GroupVersion {
            group: r.group.clone(),
            version: r.version.clone(),
            served: Vec::new(),
            legacy,
            aggregated,
            openapi_hash: document
                .as_ref()
                .map_or_else(OnceLock::new, |d| OnceLock::from(d.hash.clone())),
            openapi: OnceLock::from(document),
            priority: (r.group_priority, r.version_priority),
            remote: Some(r.clone()),
        })
    }

    fn same_resources(&self, served: &[Arc<Served>]) -> bool {
        self.served.len() == served.len()
            && self
                .served
                .iter()
                .zip(served)
                .all(|(a, b)| Arc::ptr_eq(a, b))
    }

    fn openapi_resources(&self) -> Vec<openapi::ServedResource> {
        self.served
            .iter()
            .map(|s| openapi_resource(&s.rtype))
            .collect()
    }

    fn openapi_hash(&self) -> &str {
        self.openapi_hash
            .get_or_init(|| openapi::source_hash(&self.openapi_resources(), &[]))
    }

    fn openapi(&self) -> Option<Arc<openapi::GroupVersionDocument>> {
        self.openapi
            .get_or_init(|| {
                openapi::group_version_document(&self.openapi_resources(), &[]).map(Arc::new)
            })
            .clone()
    }
}

/// One group's discovery entries, reused like [`GroupVersion`].
struct Group {
    /// Preference order.
    versions: Vec<Arc<GroupVersion>>,
    /// The `APIGroup` without kind/apiVersion, as listed in `/apis`.
    listed: Bytes,
    /// `/apis/<group>`.
    document: Bytes,
    /// The `APIGroupDiscovery` of aggregated discovery.
    aggregated: Bytes,
}

impl Group {
    fn new(name: &str, versions: Vec<Arc<GroupVersion>>) -> Self {
        let names: Vec<String> = versions.iter().map(|gv| gv.version.clone()).collect();
        let listed = group_doc(name, &names);
        let mut document = listed.clone();
        document["kind"] = json!("APIGroup");
        document["apiVersion"] = json!("v1");
        // A zero creationTimestamp is left out (`omitzero` since 1.35).
        let metadata = if name.is_empty() {
            json!({})
        } else {
            json!({"name": name})
        };
        let head = format!(r#"{{"metadata":{metadata},"versions":["#);
        let aggregated = concat(&head, versions.iter().map(|gv| &gv.aggregated), "]}");
        Group {
            versions,
            listed: bytes(listed),
            document: bytes(document),
            aggregated,
        }
    }

    fn same_versions(&self, versions: &[Arc<GroupVersion>]) -> bool {
        self.versions.len() == versions.len()
            && self
                .versions
                .iter()
                .zip(versions)
                .all(|(a, b)| Arc::ptr_eq(a, b))
    }
}

/// Served resources by group, version and plural: looked up on every request
/// with borrowed strings (no allocation).
#[derive(Default)]
struct ResourceIndex(HashMap<String, HashMap<String, HashMap<String, Arc<Served>>>>);

impl ResourceIndex {
    fn insert(&mut self, served: Arc<Served>) {
        let t = &served.rtype;
        self.0
            .entry(t.group.clone())
            .or_default()
            .entry(t.version.clone())
            .or_default()
            .insert(t.plural.clone(), served.clone());
    }

    fn get(&self, group: &str, version: &str, resource: &str) -> Option<&Arc<Served>> {
        self.0.get(group)?.get(version)?.get(resource)
    }

    fn values(&self) -> impl Iterator<Item = &Arc<Served>> {
        self.0
            .values()
            .flat_map(HashMap::values)
            .flat_map(HashMap::values)
    }
}

#[derive(Default)]
pub struct Catalog {
    resources: ResourceIndex,
    group_versions: HashMap<(String, String), Arc<GroupVersion>>,
    group_entries: HashMap<String, Arc<Group>>,
    pub discovery: Discovery,
    /// Groups in discovery order with their versions in preference order.
    pub groups: Vec<(String, Vec<String>)>,
    /// Built on first request: start-up and CRD changes do not wait for them.
    openapi_index: OnceLock<Bytes>,
    openapi_v2: OnceLock<(Bytes, Bytes)>,
}

/// Groups in discovery order with their versions in preference order, as the
/// aggregator sorts APIServices: its own group first, then by groupPriorityMinimum
/// (highest first) and name; versions by versionPriority, then Kubernetes version
/// order.
fn ordered_groups<'a>(
    gvs: impl Iterator<Item = &'a Arc<GroupVersion>>,
) -> Vec<(String, Vec<Arc<GroupVersion>>)> {
    let mut by_group: BTreeMap<String, Vec<Arc<GroupVersion>>> = BTreeMap::new();
    for gv in gvs {
        by_group
            .entry(gv.group.clone())
            .or_default()
            .push(gv.clone());
    }
    let mut groups: Vec<(String, Vec<Arc<GroupVersion>>)> = by_group.into_iter().collect();
    for (_, versions) in &mut groups {
        versions.sort_by(|a, b| {
            b.priority
                .1
                .cmp(&a.priority.1)
                .then_with(|| compare_versions(&a.version, &b.version))
        });
    }
    let rank = |(name, versions): &(String, Vec<Arc<GroupVersion>>)| {
        let priority = versions.iter().map(|gv| gv.priority.0).max().unwrap_or(0);
        (
            name != "apiregistration.k8s.io",
            std::cmp::Reverse(priority),
        )
    };
    groups.sort_by(|a, b| rank(a).cmp(&rank(b)).then_with(|| a.0.cmp(&b.0)));
    groups
}

impl Catalog {
    /// The catalog of `served`, reusing what `previous` built for group-versions
    /// whose resources are unchanged.
    pub fn build(
        previous: &Catalog,
        served: Vec<Arc<Served>>,
        remotes: &[RemoteGroupVersion],
    ) -> Catalog {
        let mut by_gv: BTreeMap<(String, String), Vec<Arc<Served>>> = BTreeMap::new();
        let mut resources = ResourceIndex::default();
        for s in served {
            let t = &s.rtype;
            resources.insert(s.clone());
            by_gv
                .entry((t.group.clone(), t.version.clone()))
                .or_default()
                .push(s);
        }
        let mut group_versions =
            HashMap::with_capacity_and_hasher(by_gv.len() + remotes.len(), Default::default());
        for ((group, version), mut served) in by_gv {
            served.sort_by(|a, b| a.rtype.plural.cmp(&b.rtype.plural));
            let key = (group, version);
            let gv = match previous.group_versions.get(&key) {
                Some(gv) if gv.remote.is_none() && gv.same_resources(&served) => gv.clone(),
                _ => Arc::new(GroupVersion::new(&key.0, &key.1, served)),
            };
            group_versions.insert(key, gv);
        }
        let groups = ordered_groups(group_versions.values())
            .into_iter()
            .map(|(name, versions)| (name, versions.iter().map(|gv| gv.version.clone()).collect()))
            .collect();
        // An extension server's group-version hides a local one of the same name, as
        // its APIService routes every request there.
        for r in remotes {
            let key = (r.group.clone(), r.version.clone());
            let gv = match previous.group_versions.get(&key) {
                Some(gv) if gv.remote.as_ref() == Some(r) => Some(gv.clone()),
                _ => GroupVersion::remote(r).map(Arc::new),
            };
            if let Some(gv) = gv {
                group_versions.insert(key, gv);
            }
        }
        let mut group_entries = HashMap::default();
        let mut order: Vec<(String, Arc<Group>)> = Vec::new();
        for (name, versions) in ordered_groups(group_versions.values()) {
            let group = match previous.group_entries.get(&name) {
                Some(g) if g.same_versions(&versions) => g.clone(),
                _ => Arc::new(Group::new(&name, versions)),
            };
            group_entries.insert(name.clone(), group.clone());
            order.push((name, group));
        }
        let discovery = discovery(&order);
        Catalog {
            resources,
            group_versions,
            group_entries,
            discovery,
            groups,
            openapi_index: OnceLock::new(),
            openapi_v2: OnceLock::new(),
        }
    }

    /// `/openapi/v3`.
    pub fn openapi_index(&self) -> Bytes {
        self.openapi_index
            .get_or_init(|| {
                let mut entries: Vec<(String, &GroupVersion)> = self
                    .group_versions
                    .values()
                    .filter(|gv| gv.remote.is_none() || gv.openapi().is_some())
                    .map(|gv| (openapi::gv_path(&gv.group, &gv.version), gv.as_ref()))
                    .collect();
                entries.sort_by(|a, b| a.0.cmp(&b.0));
                Bytes::from(openapi::v3_index_json(
                    entries
                        .iter()
                        .map(|(path, gv)| (path.as_str(), gv.openapi_hash())),
                ))
            })
            .clone()
    }

    /// `/openapi/v3/<path>` (`api/v1`, `apis/<group>/<version>`).
    pub fn openapi_group_version(&self, path: &str) -> Option<Arc<openapi::GroupVersionDocument>> {
        let key = match path.trim_matches('/').split('/').collect::<Vec<_>>()[..] {
            ["api", version] => (String::new(), version.to_string()),
            ["apis", group, version] => (group.to_string(), version.to_string()),
            _ => return None,
        };
        self.group_versions.get(&key)?.openapi()
    }

    /// `/openapi/v2` as JSON and as gnostic protobuf.
    pub fn openapi_v2(&self) -> &(Bytes, Bytes) {
        self.openapi_v2.get_or_init(|| {
            let resources: Vec<openapi::ServedResource> = self
                .resources
                .values()
                .map(|s| openapi_resource(&s.rtype))
                .collect();
            // Extension servers' documents, merged in.
            let merged: Vec<(String, Value)> = self
                .group_versions
                .values()
                .filter_map(|gv| {
                    let doc = gv.remote.as_ref()?.openapi_v2.as_ref()?;
                    let prefix = format!("/apis/{}/{}", gv.group, gv.version);
                    Some((prefix, serde_json::from_slice(doc).ok()?))
                })
                .collect();
            let (json, protobuf) = openapi::v2_documents(&resources, &merged);
            (Bytes::from(json), Bytes::from(protobuf))
        })
    }

    /// `/apis/<group>`.
    pub fn group_discovery(&self, group: &str) -> Option<Bytes> {
        (!group.is_empty())
            .then(|| self.group_entries.get(group))
            .flatten()
            .map(|g| g.document.clone())
    }

    /// `/apis/<group>/<version>`.
    pub fn group_version_discovery(&self, group: &str, version: &str) -> Option<Bytes> {
        self.group_versions
            .get(&(group.to_string(), version.to_string()))
            .filter(|_| !group.is_empty())
            .map(|gv| gv.legacy.clone())
    }

    pub fn lookup(&self, group: &str, version: &str, resource: &str) -> Option<&Arc<Served>> {
        self.resources.get(group, version, resource)
    }

    pub fn served(&self) -> impl Iterator<Item = &Arc<Served>> {
        self.resources.values()
    }
}

fn openapi_resource(t: &ResourceType) -> openapi::ServedResource {
    let mut r =
        openapi::ServedResource::new(&t.group, &t.version, &t.kind, &t.plural, t.namespaced)
            .with_verbs(t.verbs);
    r.has_status = t.has_status;
    r.schema = t.openapi_schema.clone();
    r.list_kind = t.list_kind();
    if t.custom_resource_discovery {
        r.selectable_fields = t.selectable_fields.clone();
    }
    r.custom_resource = t.custom_resource_discovery;
    // Upstream's namespace storage answers a deletion with the object too, but
    // its OpenAPI says Status (it is no `MayReturnFullObjectDeleter`).
    r.delete_returns_object =
        t.return_deleted_object && !(t.group.is_empty() && t.kind == "Namespace");
    r.subresources = t
        .extra_subresources
        .iter()
        .map(|sub| {
            openapi::Subresource::new(
                sub.name,
                openapi::Gvk::new(sub.group, sub.version, sub.kind),
                sub.verbs,
            )
        })
        .chain(t.scale.is_some().then(openapi::Subresource::scale))
        .collect();
    r
}

/// Upstream's storageVersionHash: the first 8 bytes of
/// sha256("group/version/kind") of the storage version, base64; none for a
/// type never stored.
fn storage_version_hash(t: &ResourceType) -> Option<String> {
    let (group, version) = match &t.storage_version {
        StorageVersion::Own => (&t.group, &t.version),
        StorageVersion::Other { group, version } => (group, version),
        StorageVersion::None => return None,
    };
    let digest = ring::digest::digest(
        &ring::digest::SHA256,
        format!("{group}/{version}/{}", t.kind).as_bytes(),
    );
    Some(base64::engine::general_purpose::STANDARD.encode(&digest.as_ref()[..8]))
}

fn status_verbs() -> Vec<&'static str> {
    vec!["get", "patch", "update"]
}

/// One subresource as discovery lists it: name, the kind it answers with
/// (group and version empty for a kind of the resource's own group-version),
/// verbs.
struct SubresourceEntry {
    name: &'static str,
    group: &'static str,
    version: &'static str,
    kind: String,
    verbs: Vec<&'static str>,
}

/// A resource's subresources in discovery order: `status` then `scale` for a
/// CRD's types (apiextensions-apiserver's discovery controller), by name for
/// the others (upstream's installer registers paths sorted).
fn subresources(t: &ResourceType) -> Vec<SubresourceEntry> {
    let mut out = Vec::new();
    if t.has_status {
        out.push(SubresourceEntry {
            name: "status",
            group: "",
            version: "",
            kind: t.kind.clone(),
            verbs: status_verbs(),
        });
    }
    for sub in t.extra_subresources {
        let same_group_version = sub.group == t.group && sub.version == t.version;
        out.push(SubresourceEntry {
            name: sub.name,
            group: if same_group_version { "" } else { sub.group },
            version: if same_group_version { "" } else { sub.version },
            kind: sub.kind.to_string(),
            verbs: sub.verbs.to_vec(),
        });
    }
    if t.scale.is_some() {
        out.push(SubresourceEntry {
            name: "scale",
            group: "autoscaling",
            version: "v1",
            kind: "Scale".into(),
            verbs: status_verbs(),
        });
    }
    if !t.custom_resource_discovery {
        out.sort_by(|a, b| a.name.cmp(b.name));
    }
    out
}

fn legacy_resources(served: &[Arc<Served>]) -> Vec<Value> {
    let mut out = Vec::new();
    let mut sorted: Vec<&Arc<Served>> = served.iter().collect();
    sorted.sort_by(|a, b| a.rtype.plural.cmp(&b.rtype.plural));
    for s in sorted {
        let t = &s.rtype;
        let mut r = json!({
            "name": t.plural,
            "singularName": t.singular,
            "namespaced": t.namespaced,
            "kind": t.kind,
            "verbs": t.verbs(),
        });
        if let Some(hash) = storage_version_hash(t) {
            r["storageVersionHash"] = json!(hash);
        }
        if !t.short_names.is_empty() {
            r["shortNames"] = json!(t.short_names);
        }
        if !t.categories.is_empty() {
            r["categories"] = json!(t.categories);
        }
        out.push(r);
        for sub in subresources(t) {
            let mut r = json!({
                "name": format!("{}/{}", t.plural, sub.name),
                "singularName": "",
                "namespaced": t.namespaced,
                "kind": sub.kind,
                "verbs": sub.verbs,
            });
            // `APIResource`'s group and version are `omitempty`.
            if !sub.group.is_empty() {
                r["group"] = json!(sub.group);
            }
            if !sub.version.is_empty() {
                r["version"] = json!(sub.version);
            }
            out.push(r);
        }
    }
    out
}

fn aggregated_resources(served: &[Arc<Served>]) -> Vec<Value> {
    let mut sorted: Vec<&Arc<Served>> = served.iter().collect();
    sorted.sort_by(|a, b| a.rtype.plural.cmp(&b.rtype.plural));
    sorted
        .into_iter()
        .map(|s| {
            let t = &s.rtype;
            // `responseKind`'s group and version are written even when empty.
            let kind = if t.custom_resource_discovery {
                json!({"group": t.group, "version": t.version, "kind": t.kind})
            } else {
                json!({"group": "", "version": "", "kind": t.kind})
            };
            let mut r = json!({
                "resource": t.plural,
                "responseKind": kind,
                "scope": if t.namespaced { "Namespaced" } else { "Cluster" },
                "singularResource": t.singular,
                "verbs": t.verbs(),
            });
            if !t.short_names.is_empty() {
                r["shortNames"] = json!(t.short_names);
            }
            if !t.categories.is_empty() {
                r["categories"] = json!(t.categories);
            }
            let subresources: Vec<Value> = subresources(t)
                .into_iter()
                .map(|sub| {
                    let kind = if sub.name == "status" {
                        kind.clone()
                    } else {
                        json!({"group": sub.group, "version": sub.version, "kind": sub.kind})
                    };
                    json!({"subresource": sub.name, "responseKind": kind, "verbs": sub.verbs})
                })
                .collect();
            if !subresources.is_empty() {
                r["subresources"] = json!(subresources);
            }
            r
        })
        .collect()
}

fn bytes(v: Value) -> Bytes {
    Bytes::from(serde_json::to_vec(&v).unwrap_or_default())
}

fn group_doc(group: &str, versions: &[String]) -> Value {
    let gvs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    json!({"name": group, "versions": gvs, "preferredVersion": gvs.first().cloned().unwrap_or(json!({}))})
}

/// `head` + the parts joined by commas + `tail`: the whole-API documents are
/// concatenations of per-group bytes, so a change re-serializes one group only.
fn concat<'a>(head: &str, parts: impl Iterator<Item = &'a Bytes>, tail: &str) -> Bytes {
    let mut out = Vec::from(head.as_bytes());
    for (i, part) in parts.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(part);
    }
    out.extend_from_slice(tail.as_bytes());
    Bytes::from(out)
}

const AGGREGATED_LIST_HEAD: &str = r#"{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":["#;

fn discovery(groups: &[(String, Arc<Group>)]) -> Discovery {
    let core = groups.iter().find(|(name, _)| name.is_empty());
    let named = || groups.iter().filter(|(name, _)| !name.is_empty());
    Discovery {
        api: bytes(json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}],
        })),
        core_v1: core
            .and_then(|(_, g)| g.versions.iter().find(|gv| gv.version == "v1"))
            .map(|gv| gv.legacy.clone())
            .unwrap_or_else(|| {
                bytes(json!({"kind": "APIResourceList", "groupVersion": "v1", "resources": []}))
            }),
        aggregated_api: concat(
            AGGREGATED_LIST_HEAD,
            core.map(|(_, g)| &g.aggregated).into_iter(),
            "]}",
        ),
        apis: concat(
            r#"{"kind":"APIGroupList","apiVersion":"v1","groups":["#,
            named().map(|(_, g)| &g.listed),
            "]}",
        ),
        aggregated_apis: concat(
            AGGREGATED_LIST_HEAD,
            named().map(|(_, g)| &g.aggregated),
            "]}",
        ),
    }
}
