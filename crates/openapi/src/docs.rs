//! Assembling the documents: the `/openapi/v3` index, one OpenAPI 3.0 document per
//! group-version, and the Swagger 2.0 document.

use std::collections::{BTreeMap, BTreeSet};

use ring::digest::SHA512;
use serde_json::{Map, Value, json};

use crate::builtin::{
    DELETE_OPTIONS, WATCH_EVENT, builtin, custom_schema_name, find_component, list_schema,
    loose_schema,
};
use crate::convert::{collect_refs, to_swagger2};
use crate::crd::{self, Dialect};
use crate::paths::{
    KindSchemas, PathItem, Route, discovery_routes, group_version_root, path_items, render_v2,
    render_v3, resource_routes, share_parameters,
};
use crate::{Gvk, INFO_TITLE, INFO_VERSION, ServedResource};

/// `api/v1` for the core group, `apis/<group>/<version>` otherwise: the key of the
/// group-version in the `/openapi/v3` index and the tail of its URL.
pub fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// Uppercase hex, as upstream's SHA-512 `?hash=` / ETag.
fn upper_hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02X}");
    }
    s
}

/// Component schemas available to one set of documents: the built-ins plus the
/// served resources' own (custom resources, and per-set tweaks).
struct Pool {
    extra: Map<String, Value>,
    /// Swagger 2.0 definitions published as they are, instead of converting the
    /// OpenAPI 3.0 schema of the same name (custom resources' kinds, which
    /// apiextensions-apiserver builds differently for v2).
    v2: Map<String, Value>,
}

impl Pool {
    fn get(&self, name: &str) -> Option<&Value> {
        self.extra
            .get(name)
            .or_else(|| builtin().components.get(name))
    }

    /// `names` and every schema they reference, transitively (through the v2
    /// definitions where there are some, for `dialect` v2).
    fn closure<'a>(
        &'a self,
        names: Vec<&'a str>,
        dialect: Dialect,
    ) -> BTreeMap<&'a str, &'a Value> {
        let mut out = BTreeMap::new();
        let mut queue = names;
        while let Some(name) = queue.pop() {
            if out.contains_key(name) {
                continue;
            }
            let schema = match dialect {
                Dialect::V2 => self.v2.get(name).or_else(|| self.get(name)),
                Dialect::V3 => self.get(name),
            };
            if let Some(schema) = schema {
                out.insert(name, schema);
                collect_refs(schema, &mut queue);
            }
        }
        out
    }
}

/// Everything the documents are built from.
struct Model {
    pool: Pool,
    /// (group, version) → paths.
    groups: BTreeMap<(String, String), Vec<PathItem>>,
    /// The named groups the generic installer serves (each has a discovery path).
    installer_groups: BTreeSet<String>,
    /// The group-versions only custom resources are served at (documented as
    /// apiextensions-apiserver documents them).
    custom_gvs: BTreeSet<(String, String)>,
}

/// `registered`: the group-versions listed in DeleteOptions' and WatchEvent's GVK
/// extension besides those of `resources` and core `v1`.
fn model(resources: &[ServedResource], registered: &[(String, String)]) -> Model {
    let mut extra = Map::new();
    let mut extra_v2 = Map::new();
    // (group, version) → routes; whether the generic installer serves there, and
    // protobuf.
    let mut routes: BTreeMap<(String, String), (Vec<Route>, bool, bool)> = BTreeMap::new();
    for r in resources {
        let gvk = r.gvk();
        let builtin_kind = find_component(&gvk);
        let schemas = match (builtin_kind, &r.schema) {
            (Some(kind), None) => KindSchemas {
                kind: kind.to_string(),
                list: format!("{kind}List"),
                strategic_merge: true,
                protobuf: true,
            },
            _ => {
                let name = custom_schema_name(&gvk);
                let list_gvk = Gvk::new(&r.group, &r.version, &r.list_kind);
                let list = custom_schema_name(&list_gvk);
                if r.schema.is_some() || r.custom_resource {
                    extra.insert(name.clone(), crd::kind_schema(r, Dialect::V3));
                    extra_v2.insert(name.clone(), crd::kind_schema(r, Dialect::V2));
                    extra.insert(list.clone(), crd::list_schema(r));
                } else {
                    extra.insert(name.clone(), loose_schema(&gvk));
                    extra.insert(list.clone(), list_schema(&name, &r.kind, &list_gvk));
                }
                KindSchemas {
                    kind: name,
                    list,
                    strategic_merge: builtin_kind.is_some(),
                    protobuf: false,
                }
            }
        };
        let (gv_routes, installer, protobuf) = routes
            .entry((r.group.clone(), r.version.clone()))
            .or_default();
        *installer |= !r.custom_resource;
        *protobuf |= schemas.protobuf;
        resource_routes(
            r,
            &schemas,
            |gvk| {
                find_component(gvk)
                    .map(str::to_string)
                    .unwrap_or_else(|| custom_schema_name(gvk))
            },
            gv_routes,
        );
    }
    let custom_gvs: BTreeSet<(String, String)> = routes
        .iter()
        .filter(|(_, (_, installer, _))| !installer)
        .map(|(gv, _)| gv.clone())
        .collect();
    let groups = routes
        .into_iter()
        .map(|((g, v), (mut gv_routes, installer, protobuf))| {
            // apiextensions-apiserver documents no root for a CRD's version.
            if installer {
                gv_routes.push(group_version_root(&g, &v, protobuf));
            }
            ((g, v), path_items(gv_routes))
        })
        .collect::<BTreeMap<_, _>>();

    // DeleteOptions and WatchEvent are registered in every group-version of the
    // server's scheme (which custom resources are not in).
    let mut gvs: BTreeSet<(&str, &str)> = groups
        .keys()
        .filter(|gv| !custom_gvs.contains(*gv))
        .map(|(g, v)| (g.as_str(), v.as_str()))
        .collect();
    gvs.insert(("", "v1"));
    gvs.extend(registered.iter().map(|(g, v)| (g.as_str(), v.as_str())));
    for (name, kind) in [
        (DELETE_OPTIONS, "DeleteOptions"),
        (WATCH_EVENT, "WatchEvent"),
    ] {
        if let Some(Value::Object(schema)) = builtin().components.get(name) {
            let gvks: Vec<Value> = gvs
                .iter()
                .map(|(g, v)| Gvk::new(g, v, kind).to_json())
                .collect();
            let mut schema = schema.clone();
            schema.insert("x-kubernetes-group-version-kind".into(), Value::Array(gvks));
            extra.insert(name.into(), Value::Object(schema));
        }
    }

    Model {
        pool: Pool {
            extra,
            v2: extra_v2,
        },
        groups,
        installer_groups: resources
            .iter()
            .filter(|r| !r.custom_resource && !r.group.is_empty())
            .map(|r| r.group.clone())
            .collect(),
        custom_gvs,
    }
}

fn security_v3() -> Value {
    json!({
        "BearerToken": {
            "description": "Bearer Token authentication",
            "in": "header",
            "name": "authorization",
            "type": "apiKey",
        }
    })
}

fn v3_document(model: &Model, group: &str, version: &str) -> Option<Value> {
    let items = model
        .groups
        .get(&(group.to_string(), version.to_string()))?;
    let paths = Value::Object(render_v3(items));
    let mut refs = Vec::new();
    collect_refs(&paths, &mut refs);
    let mut schemas: Map<String, Value> = model
        .pool
        .closure(refs, Dialect::V3)
        .into_iter()
        .map(|(name, schema)| (name.to_string(), schema.clone()))
        .collect();
    if model
        .custom_gvs
        .contains(&(group.to_string(), version.to_string()))
    {
        // apiextensions-apiserver's own builder: its title, no security schemes,
        // and DeleteOptions as client-go's scheme registers it.
        if let Some(Value::Object(delete_options)) = schemas.get_mut(DELETE_OPTIONS) {
            let gvks = CLIENT_GO_GROUP_VERSIONS
                .iter()
                .map(|(g, v)| Gvk::new(g, v, "DeleteOptions").to_json())
                .collect();
            delete_options.insert("x-kubernetes-group-version-kind".into(), Value::Array(gvks));
        }
        return Some(json!({
            "components": {"schemas": schemas},
            "info": {"title": CRD_INFO_TITLE, "version": CRD_INFO_VERSION},
            "openapi": "3.0.0",
            "paths": paths,
        }));
    }
    Some(json!({
        "components": {"schemas": schemas, "securitySchemes": security_v3()},
        "info": {"title": INFO_TITLE, "version": INFO_VERSION},
        "openapi": "3.0.0",
        "paths": paths,
    }))
}

/// `info` of a custom resource group-version's document.
const CRD_INFO_TITLE: &str = "Kubernetes CRD Swagger";
const CRD_INFO_VERSION: &str = "v0.1.0";

/// The group-versions of client-go's scheme (k8s.io/client-go 1.37.2), in which
/// apiextensions-apiserver's documents register DeleteOptions.
const CLIENT_GO_GROUP_VERSIONS: &[(&str, &str)] = &[
    ("", "v1"),
    ("admissionregistration.k8s.io", "v1"),
    ("admissionregistration.k8s.io", "v1alpha1"),
    ("admissionregistration.k8s.io", "v1beta1"),
    ("apps", "v1"),
    ("apps", "v1beta1"),
    ("apps", "v1beta2"),
    ("authentication.k8s.io", "v1"),
    ("authentication.k8s.io", "v1alpha1"),
    ("authentication.k8s.io", "v1beta1"),
    ("authorization.k8s.io", "v1"),
    ("authorization.k8s.io", "v1beta1"),
    ("autoscaling", "v1"),
    ("autoscaling", "v2"),
    ("batch", "v1"),
    ("batch", "v1beta1"),
    ("certificates.k8s.io", "v1"),
    ("certificates.k8s.io", "v1alpha1"),
    ("certificates.k8s.io", "v1beta1"),
    ("coordination.k8s.io", "v1"),
    ("coordination.k8s.io", "v1alpha2"),
    ("coordination.k8s.io", "v1beta1"),
    ("discovery.k8s.io", "v1"),
    ("discovery.k8s.io", "v1beta1"),
    ("events.k8s.io", "v1"),
    ("events.k8s.io", "v1beta1"),
    ("extensions", "v1beta1"),
    ("flowcontrol.apiserver.k8s.io", "v1"),
    ("flowcontrol.apiserver.k8s.io", "v1beta1"),
    ("flowcontrol.apiserver.k8s.io", "v1beta2"),
    ("flowcontrol.apiserver.k8s.io", "v1beta3"),
    ("internal.apiserver.k8s.io", "v1alpha1"),
    ("lifecycle.k8s.io", "v1alpha1"),
    ("networking.k8s.io", "v1"),
    ("networking.k8s.io", "v1beta1"),
    ("node.k8s.io", "v1"),
    ("node.k8s.io", "v1alpha1"),
    ("node.k8s.io", "v1beta1"),
    ("policy", "v1"),
    ("policy", "v1beta1"),
    ("rbac.authorization.k8s.io", "v1"),
    ("rbac.authorization.k8s.io", "v1alpha1"),
    ("rbac.authorization.k8s.io", "v1beta1"),
    ("resource.k8s.io", "v1"),
    ("resource.k8s.io", "v1alpha3"),
    ("resource.k8s.io", "v1beta1"),
    ("resource.k8s.io", "v1beta2"),
    ("scheduling.k8s.io", "v1"),
    ("scheduling.k8s.io", "v1alpha3"),
    ("scheduling.k8s.io", "v1beta1"),
    ("storage.k8s.io", "v1"),
    ("storage.k8s.io", "v1alpha1"),
    ("storage.k8s.io", "v1beta1"),
    ("storagemigration.k8s.io", "v1"),
    ("storagemigration.k8s.io", "v1beta1"),
];

fn v2_document(model: &Model) -> Value {
    let mut paths = Map::new();
    for items in model.groups.values() {
        render_v2(items, &mut paths);
    }
    let discovery = discovery_routes(model.installer_groups.iter().map(String::as_str));
    render_v2(&path_items(discovery), &mut paths);
    let parameters = Value::Object(share_parameters(&mut paths));
    let paths = Value::Object(paths);
    let mut refs = Vec::new();
    collect_refs(&paths, &mut refs);
    collect_refs(&parameters, &mut refs);
    let definitions: Map<String, Value> = model
        .pool
        .closure(refs, Dialect::V2)
        .into_iter()
        .map(|(name, schema)| {
            let schema = match model.pool.v2.get(name) {
                Some(published) => published.clone(),
                None => to_swagger2(schema),
            };
            (name.to_string(), schema)
        })
        .collect();
    json!({
        "definitions": definitions,
        "info": {"title": INFO_TITLE, "version": INFO_VERSION},
        "parameters": parameters,
        "paths": paths,
        "security": [{"BearerToken": []}],
        "securityDefinitions": security_v3(),
        "swagger": "2.0",
    })
}

fn index_entry(path: &str, hash: &str) -> Value {
    json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={hash}")})
}

/// The `/openapi/v3` index from each group-version's path and hash:
/// `{"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=<hash>"}, ...}}`.
pub fn v3_index_json<'a>(entries: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<u8> {
    let paths: Map<String, Value> = entries
        .into_iter()
        .map(|(path, hash)| (path.to_string(), index_entry(path, hash)))
        .collect();
    serde_json::to_vec(&json!({ "paths": paths })).unwrap_or_default()
}

/// The `/openapi/v3` index of a whole set of served resources.
pub fn v3_index(resources: &[ServedResource]) -> Value {
    serde_json::from_slice(Documents::generate(resources).v3_index()).unwrap_or_default()
}

/// The OpenAPI 3.0 document of one group-version (`/openapi/v3/api/v1`,
/// `/openapi/v3/apis/<group>/<version>`), or `None` if nothing is served there.
pub fn v3_group_version(resources: &[ServedResource], group: &str, version: &str) -> Option<Value> {
    let here: Vec<ServedResource> = resources
        .iter()
        .filter(|r| r.group == group && r.version == version)
        .cloned()
        .collect();
    let doc = group_version_document(&here, &group_versions(resources))?;
    serde_json::from_slice(&doc.json).ok()
}

/// The Swagger 2.0 document (`/openapi/v2`).
pub fn v2(resources: &[ServedResource]) -> Value {
    v2_document(&model(resources, &[]))
}

fn group_versions(resources: &[ServedResource]) -> Vec<(String, String)> {
    let set: BTreeSet<(&str, &str)> = resources
        .iter()
        .map(|r| (r.group.as_str(), r.version.as_str()))
        .collect();
    set.into_iter()
        .map(|(g, v)| (g.to_string(), v.to_string()))
        .collect()
}

/// A fingerprint of everything one group-version's document is built from (its
/// resources, the `registered` group-versions, and this crate's version), as 128
/// uppercase hex digits like upstream's SHA-512 `?hash=`. Computing it costs a
/// fraction of building the document, so an index can be served without building
/// every document first; clients only use the hash as a cache key.
pub fn source_hash(resources: &[ServedResource], registered: &[(String, String)]) -> String {
    let mut ctx = ring::digest::Context::new(&SHA512);
    let mut field = |s: &[u8]| {
        ctx.update(&(s.len() as u64).to_le_bytes());
        ctx.update(s);
    };
    field(env!("CARGO_PKG_VERSION").as_bytes());
    for (g, v) in registered {
        field(g.as_bytes());
        field(v.as_bytes());
    }
    for r in resources {
        for s in [&r.group, &r.version, &r.kind, &r.plural, &r.list_kind] {
            field(s.as_bytes());
        }
        field(r.selectable_fields.join(",").as_bytes());
        field(&[
            u8::from(r.namespaced),
            u8::from(r.has_status),
            u8::from(r.custom_resource),
            u8::from(r.delete_returns_object),
        ]);
        field(r.verbs.join(",").as_bytes());
        for sub in &r.subresources {
            for s in [&sub.name, &sub.gvk.group, &sub.gvk.version, &sub.gvk.kind] {
                field(s.as_bytes());
            }
            field(sub.verbs.join(",").as_bytes());
        }
        let schema = r
            .schema
            .as_ref()
            .map(|s| serde_json::to_vec(s).unwrap_or_default())
            .unwrap_or_default();
        field(&schema);
    }
    upper_hex(ctx.finish().as_ref())
}

/// A serialized group-version document and its hash.
#[derive(Debug, Clone)]
pub struct GroupVersionDocument {
    /// `serde_json::to_vec` of the document.
    pub json: Vec<u8>,
    /// [`source_hash`] of what the document was built from; the `?hash=` in the
    /// index and the ETag.
    pub hash: String,
}

/// The document of one group-version, built from only the resources served there
/// (all of one group and version), so a change elsewhere never touches it.
/// `registered`: other group-versions for DeleteOptions' GVK extension.
pub fn group_version_document(
    resources: &[ServedResource],
    registered: &[(String, String)],
) -> Option<GroupVersionDocument> {
    let first = resources.first()?;
    let model = model(resources, registered);
    let doc = v3_document(&model, &first.group, &first.version)?;
    Some(GroupVersionDocument {
        json: serde_json::to_vec(&doc).unwrap_or_default(),
        hash: source_hash(resources, registered),
    })
}

/// Every document for one set of served resources, serialized: build once (when
/// the served resources change) and serve the bytes.
///
/// Upstream serves `/openapi/v3/<path>?hash=<hash>` with
/// `Cache-Control: public, immutable` and `ETag: "<hash>"`, and redirects a stale
/// hash to the current one.
#[derive(Debug, Clone)]
pub struct Documents {
    index: Vec<u8>,
    group_versions: BTreeMap<String, GroupVersionDocument>,
    v2: Vec<u8>,
    v2_protobuf: Vec<u8>,
}

impl Documents {
    pub fn generate(resources: &[ServedResource]) -> Self {
        let registered = group_versions(resources);
        let mut by_gv: BTreeMap<(&str, &str), Vec<ServedResource>> = BTreeMap::new();
        for r in resources {
            by_gv
                .entry((r.group.as_str(), r.version.as_str()))
                .or_default()
                .push(r.clone());
        }
        let group_versions: BTreeMap<String, GroupVersionDocument> = by_gv
            .iter()
            .filter_map(|((g, v), here)| {
                Some((gv_path(g, v), group_version_document(here, &registered)?))
            })
            .collect();
        let index = v3_index_json(
            group_versions
                .iter()
                .map(|(path, doc)| (path.as_str(), doc.hash.as_str())),
        );
        let (v2, v2_protobuf) = v2_documents(resources, &[]);
        Documents {
            index,
            group_versions,
            v2,
            v2_protobuf,
        }
    }

    /// `/openapi/v3`.
    pub fn v3_index(&self) -> &[u8] {
        &self.index
    }

    /// `/openapi/v3/<path>`, `path` as in the index: `api/v1`,
    /// `apis/coordination.k8s.io/v1` (a leading `/` is ignored).
    pub fn v3_group_version(&self, path: &str) -> Option<&GroupVersionDocument> {
        self.group_versions.get(path.trim_matches('/'))
    }

    /// The index keys (`api/v1`, `apis/<group>/<version>`, ...).
    pub fn v3_paths(&self) -> impl Iterator<Item = &str> {
        self.group_versions.keys().map(String::as_str)
    }

    /// `/openapi/v2` as JSON (`Accept: application/json`).
    pub fn v2(&self) -> &[u8] {
        &self.v2
    }

    /// `/openapi/v2` as gnostic protobuf, what kubectl asks for
    /// ([`crate::V2_PROTOBUF_CONTENT_TYPE`]).
    pub fn v2_protobuf(&self) -> &[u8] {
        &self.v2_protobuf
    }
}

/// `/openapi/v2` as JSON and as gnostic protobuf.
/// `merged`: aggregated servers' documents, each with the path prefix it serves.
pub fn v2_documents(
    resources: &[ServedResource],
    merged: &[(String, Value)],
) -> (Vec<u8>, Vec<u8>) {
    let mut doc = v2_document(&model(resources, &[]));
    for (prefix, other) in merged {
        merge_v2(&mut doc, prefix, other);
    }
    let json = serde_json::to_vec(&doc).unwrap_or_default();
    (json, crate::proto::v2_protobuf(&doc))
}

/// Add an aggregated server's paths under `prefix`, and the definitions and
/// shared parameters `doc` lacks (what is served here wins on a clash).
fn merge_v2(doc: &mut Value, prefix: &str, other: &Value) {
    for section in ["paths", "definitions", "parameters"] {
        let (Some(ours), Some(theirs)) = (
            doc.get_mut(section).and_then(Value::as_object_mut),
            other.get(section).and_then(Value::as_object),
        ) else {
            continue;
        };
        for (name, value) in theirs {
            if section == "paths" && !(name == prefix || name.starts_with(&format!("{prefix}/"))) {
                continue;
            }
            ours.entry(name.clone()).or_insert_with(|| value.clone());
        }
    }
}

/// Upstream's document hash (SHA-512, upper-case hex) of bytes served as they are.
pub fn bytes_hash(bytes: &[u8]) -> String {
    upper_hex(ring::digest::digest(&SHA512, bytes).as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_v2_takes_the_claimed_paths_and_missing_definitions() {
        let mut doc = json!({
            "paths": {"/api/v1/configmaps": {"get": {}}},
            "definitions": {"io.k8s.api.core.v1.ConfigMap": {"type": "object"}},
        });
        let theirs = json!({
            "paths": {
                "/apis/wardle.example.com/v1alpha1": {"get": {}},
                "/apis/wardle.example.com/v1alpha1/flunders": {"get": {}},
                "/apis/wardle.example.com/v1alpha10/flunders": {"get": {}},
                "/api/v1/configmaps": {"get": {"description": "theirs"}},
            },
            "definitions": {
                "io.k8s.api.core.v1.ConfigMap": {"type": "string"},
                "com.example.wardle.v1alpha1.Flunder": {"type": "object"},
            },
        });
        merge_v2(&mut doc, "/apis/wardle.example.com/v1alpha1", &theirs);
        let paths: Vec<&String> = doc["paths"].as_object().unwrap().keys().collect();
        assert_eq!(
            paths,
            [
                "/api/v1/configmaps",
                "/apis/wardle.example.com/v1alpha1",
                "/apis/wardle.example.com/v1alpha1/flunders"
            ]
        );
        assert_eq!(doc["paths"]["/api/v1/configmaps"], json!({"get": {}}));
        assert_eq!(
            doc["definitions"]["io.k8s.api.core.v1.ConfigMap"]["type"],
            "object"
        );
        assert!(doc["definitions"]["com.example.wardle.v1alpha1.Flunder"].is_object());
    }
}
