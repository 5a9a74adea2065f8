//! The API catalog: every served group/version/resource and the discovery
//! documents describing them, built once per change and swapped in whole
//! (requests load an `Arc` and look up a map).

use base64::Engine;
use bytes::Bytes;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use apimachinery::gvk::compare_versions;
use registry::{GenericStore, ResourceType};

/// One served resource at one version.
pub struct Served {
    pub rtype: Arc<ResourceType>,
    pub store: GenericStore,
    pub patch_schema: patch::PatchSchema,
}

/// Prebuilt discovery documents (JSON bytes).
#[derive(Default)]
pub struct Discovery {
    pub api: Bytes,
    pub core_v1: Bytes,
    pub apis: Bytes,
    pub groups: HashMap<String, Bytes>,
    pub group_versions: HashMap<(String, String), Bytes>,
    pub aggregated_api: Bytes,
    pub aggregated_apis: Bytes,
}

#[derive(Default)]
pub struct Catalog {
    resources: HashMap<(String, String, String), Arc<Served>>,
    pub discovery: Discovery,
    /// Groups in discovery order with their versions in preference order.
    pub groups: Vec<(String, Vec<String>)>,
    /// OpenAPI documents, generated on first request (they cost milliseconds;
    /// start-up and CRD changes should not wait for them).
    openapi: std::sync::OnceLock<openapi::Documents>,
}

/// Order of built-in groups in `/apis` (upstream's group priorities).
const GROUP_ORDER: &[&str] = &[
    "apiregistration.k8s.io",
    "events.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
    "rbac.authorization.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
];

fn group_rank(group: &str) -> usize {
    GROUP_ORDER
        .iter()
        .position(|g| *g == group)
        .unwrap_or(GROUP_ORDER.len())
}

impl Catalog {
    pub fn build(served: Vec<Arc<Served>>) -> Catalog {
        let mut by_gv: BTreeMap<(String, String), Vec<Arc<Served>>> = BTreeMap::new();
        let mut resources = HashMap::new();
        for s in served {
            let t = &s.rtype;
            resources.insert(
                (t.group.clone(), t.version.clone(), t.plural.clone()),
                s.clone(),
            );
            by_gv
                .entry((t.group.clone(), t.version.clone()))
                .or_default()
                .push(s);
        }
        let mut groups: Vec<(String, Vec<String>)> = Vec::new();
        for (group, version) in by_gv.keys() {
            match groups.iter_mut().find(|(g, _)| g == group) {
                Some((_, versions)) => versions.push(version.clone()),
                None => groups.push((group.clone(), vec![version.clone()])),
            }
        }
        for (_, versions) in groups.iter_mut() {
            versions.sort_by(|a, b| compare_versions(a, b));
        }
        groups.sort_by(|(a, _), (b, _)| group_rank(a).cmp(&group_rank(b)).then_with(|| a.cmp(b)));
        let discovery = build_discovery(&groups, &by_gv);
        Catalog {
            resources,
            discovery,
            groups,
            openapi: std::sync::OnceLock::new(),
        }
    }

    pub fn openapi(&self) -> &openapi::Documents {
        self.openapi.get_or_init(|| {
            let resources: Vec<openapi::ServedResource> = self
                .resources
                .values()
                .map(|s| {
                    let t = &s.rtype;
                    let r = openapi::ServedResource::new(
                        &t.group,
                        &t.version,
                        &t.kind,
                        &t.plural,
                        t.namespaced,
                    );
                    let r = if t.has_status { r.with_status() } else { r };
                    match &t.openapi_schema {
                        Some(schema) => r.with_schema(schema.clone()),
                        None => r,
                    }
                })
                .collect();
            openapi::Documents::generate(&resources)
        })
    }

    pub fn lookup(&self, group: &str, version: &str, resource: &str) -> Option<&Arc<Served>> {
        self.resources
            .get(&(group.to_string(), version.to_string(), resource.to_string()))
    }

    pub fn served(&self) -> impl Iterator<Item = &Arc<Served>> {
        self.resources.values()
    }

    pub fn has_group_version(&self, group: &str, version: &str) -> bool {
        self.groups
            .iter()
            .any(|(g, vs)| g == group && vs.iter().any(|v| v == version))
    }
}

/// Upstream's storageVersionHash: the first 8 bytes of sha256("group/version/kind"), base64.
fn storage_version_hash(t: &ResourceType) -> String {
    let digest = ring::digest::digest(
        &ring::digest::SHA256,
        format!("{}/{}/{}", t.group, t.version, t.kind).as_bytes(),
    );
    base64::engine::general_purpose::STANDARD.encode(&digest.as_ref()[..8])
}

fn status_verbs() -> Vec<&'static str> {
    vec!["get", "patch", "update"]
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
            "storageVersionHash": storage_version_hash(t),
        });
        if !t.short_names.is_empty() {
            r["shortNames"] = json!(t.short_names);
        }
        if !t.categories.is_empty() {
            r["categories"] = json!(t.categories);
        }
        out.push(r);
        if t.has_status {
            out.push(json!({
                "name": format!("{}/status", t.plural),
                "singularName": "",
                "namespaced": t.namespaced,
                "kind": t.kind,
                "verbs": status_verbs(),
            }));
        }
        if t.scale.is_some() {
            out.push(json!({
                "name": format!("{}/scale", t.plural),
                "singularName": "",
                "namespaced": t.namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": status_verbs(),
            }));
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
            let kind = json!({"group": t.group, "version": t.version, "kind": t.kind});
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
            let mut subresources = Vec::new();
            if t.has_status {
                subresources.push(
                    json!({"subresource": "status", "responseKind": kind, "verbs": status_verbs()}),
                );
            }
            if t.scale.is_some() {
                subresources.push(json!({
                    "subresource": "scale",
                    "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                    "verbs": status_verbs(),
                }));
            }
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

fn aggregated_group(
    name: Option<&str>,
    versions: &[String],
    by_gv: &BTreeMap<(String, String), Vec<Arc<Served>>>,
    group: &str,
) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|v| {
            let served = by_gv
                .get(&(group.to_string(), v.clone()))
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            json!({"version": v, "resources": aggregated_resources(served), "freshness": "Current"})
        })
        .collect();
    let metadata = match name {
        Some(n) => json!({"name": n, "creationTimestamp": null}),
        None => json!({"creationTimestamp": null}),
    };
    json!({"metadata": metadata, "versions": versions})
}

fn aggregated_list(items: Vec<Value>) -> Value {
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items})
}

fn build_discovery(
    groups: &[(String, Vec<String>)],
    by_gv: &BTreeMap<(String, String), Vec<Arc<Served>>>,
) -> Discovery {
    let mut d = Discovery {
        api: bytes(json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}],
        })),
        ..Default::default()
    };
    let core = by_gv
        .get(&(String::new(), "v1".to_string()))
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    d.core_v1 = bytes(
        json!({"kind": "APIResourceList", "groupVersion": "v1", "resources": legacy_resources(core)}),
    );
    d.aggregated_api = bytes(aggregated_list(vec![aggregated_group(
        None,
        &["v1".to_string()],
        by_gv,
        "",
    )]));
    let mut group_docs = Vec::new();
    let mut aggregated = Vec::new();
    for (group, versions) in groups.iter().filter(|(g, _)| !g.is_empty()) {
        let doc = group_doc(group, versions);
        let mut full = doc.clone();
        full["kind"] = json!("APIGroup");
        full["apiVersion"] = json!("v1");
        d.groups.insert(group.clone(), bytes(full));
        group_docs.push(doc);
        aggregated.push(aggregated_group(Some(group), versions, by_gv, group));
        for v in versions {
            let served = by_gv
                .get(&(group.clone(), v.clone()))
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            d.group_versions.insert(
                (group.clone(), v.clone()),
                bytes(json!({
                    "kind": "APIResourceList",
                    "apiVersion": "v1",
                    "groupVersion": format!("{group}/{v}"),
                    "resources": legacy_resources(served),
                })),
            );
        }
    }
    d.apis = bytes(json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": group_docs}));
    d.aggregated_apis = bytes(aggregated_list(aggregated));
    d
}
