//! Assembling the documents: the `/openapi/v3` index, one OpenAPI 3.0 document per
//! group-version, and the Swagger 2.0 document.

use std::collections::{BTreeMap, BTreeSet};

use ring::digest::{SHA512, digest};
use serde_json::{Map, Value, json};

use crate::builtin::{
    DELETE_OPTIONS, builtin, custom_schema, custom_schema_name, find_builtin, list_schema,
};
use crate::convert::{collect_refs, to_swagger2};
use crate::paths::{
    KindSchemas, PathItem, group_version_root, render_v2, render_v3, resource_paths, tag,
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

/// Uppercase hex SHA-512 (128 characters), as upstream's `?hash=` / ETag.
pub fn sha512_hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let d = digest(&SHA512, bytes);
    let mut s = String::with_capacity(128);
    for b in d.as_ref() {
        let _ = write!(s, "{b:02X}");
    }
    s
}

/// Component schemas available to one set of documents: the built-ins plus the
/// served resources' own (custom resources, and per-set tweaks).
struct Pool {
    extra: Map<String, Value>,
}

impl Pool {
    fn get(&self, name: &str) -> Option<&Value> {
        self.extra
            .get(name)
            .or_else(|| builtin().components.get(name))
    }

    /// `names` and every schema they reference, transitively.
    fn closure<'a>(&'a self, names: Vec<&'a str>) -> BTreeMap<&'a str, &'a Value> {
        let mut out = BTreeMap::new();
        let mut queue = names;
        while let Some(name) = queue.pop() {
            if out.contains_key(name) {
                continue;
            }
            if let Some(schema) = self.get(name) {
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
}

fn model(resources: &[ServedResource]) -> Model {
    let mut extra = Map::new();
    let mut groups: BTreeMap<(String, String), Vec<PathItem>> = BTreeMap::new();
    for r in resources {
        let gvk = r.gvk();
        let builtin_kind = find_builtin(&gvk);
        let schemas = match (builtin_kind, &r.schema) {
            (Some(b), None) => KindSchemas {
                kind: b.schema.clone(),
                list: b.list_schema.clone(),
                strategic_merge: true,
            },
            _ => {
                let name = custom_schema_name(&gvk);
                let list = format!("{name}List");
                extra.insert(name.clone(), custom_schema(&gvk, r.schema.as_ref()));
                let list_gvk = Gvk::new(&r.group, &r.version, &format!("{}List", r.kind));
                extra.insert(list.clone(), list_schema(&name, &r.kind, &list_gvk));
                KindSchemas {
                    kind: name,
                    list,
                    strategic_merge: builtin_kind.is_some(),
                }
            }
        };
        let items = groups
            .entry((r.group.clone(), r.version.clone()))
            .or_insert_with(|| vec![group_version_root(&r.group, &r.version)]);
        items.extend(resource_paths(r, &schemas));
    }

    // DeleteOptions is registered in every group-version.
    if let Some(Value::Object(delete_options)) = builtin().components.get(DELETE_OPTIONS) {
        let mut gvs: BTreeSet<(&str, &str)> = groups
            .keys()
            .map(|(g, v)| (g.as_str(), v.as_str()))
            .collect();
        gvs.insert(("", "v1"));
        let gvks: Vec<Value> = gvs
            .into_iter()
            .map(|(g, v)| Gvk::new(g, v, "DeleteOptions").to_json())
            .collect();
        let mut delete_options = delete_options.clone();
        delete_options.insert("x-kubernetes-group-version-kind".into(), Value::Array(gvks));
        extra.insert(DELETE_OPTIONS.into(), Value::Object(delete_options));
    }

    Model {
        pool: Pool { extra },
        groups,
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
    let paths = Value::Object(render_v3(items, &tag(group, version)));
    let mut refs = Vec::new();
    collect_refs(&paths, &mut refs);
    let schemas: Map<String, Value> = model
        .pool
        .closure(refs)
        .into_iter()
        .map(|(name, schema)| (name.to_string(), schema.clone()))
        .collect();
    Some(json!({
        "components": {"schemas": schemas, "securitySchemes": security_v3()},
        "info": {"title": INFO_TITLE, "version": INFO_VERSION},
        "openapi": "3.0.0",
        "paths": paths,
        "security": [{"BearerToken": []}],
    }))
}

fn v2_document(model: &Model) -> Value {
    let mut paths = Map::new();
    for ((group, version), items) in &model.groups {
        render_v2(items, &tag(group, version), &mut paths);
    }
    let paths = Value::Object(paths);
    let mut refs = Vec::new();
    collect_refs(&paths, &mut refs);
    let definitions: Map<String, Value> = model
        .pool
        .closure(refs)
        .into_iter()
        .map(|(name, schema)| (name.to_string(), to_swagger2(schema)))
        .collect();
    json!({
        "definitions": definitions,
        "info": {"title": INFO_TITLE, "version": INFO_VERSION},
        "paths": paths,
        "security": [{"BearerToken": []}],
        "securityDefinitions": security_v3(),
        "swagger": "2.0",
    })
}

fn index_entry(path: &str, hash: &str) -> Value {
    json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={hash}")})
}

/// The `/openapi/v3` index: `{"paths": {"api/v1": {"serverRelativeURL":
/// "/openapi/v3/api/v1?hash=<SHA512>"}, ...}}`. The hash is [`sha512_hex`] of
/// `serde_json::to_vec` of the group-version's document.
pub fn v3_index(resources: &[ServedResource]) -> Value {
    let model = model(resources);
    let mut paths = Map::new();
    for (group, version) in model.groups.keys() {
        if let Some(doc) = v3_document(&model, group, version) {
            let bytes = serde_json::to_vec(&doc).unwrap_or_default();
            let path = gv_path(group, version);
            paths.insert(path.clone(), index_entry(&path, &sha512_hex(&bytes)));
        }
    }
    json!({ "paths": paths })
}

/// The OpenAPI 3.0 document of one group-version (`/openapi/v3/api/v1`,
/// `/openapi/v3/apis/<group>/<version>`), or `None` if nothing is served there.
pub fn v3_group_version(resources: &[ServedResource], group: &str, version: &str) -> Option<Value> {
    v3_document(&model(resources), group, version)
}

/// The Swagger 2.0 document (`/openapi/v2`).
pub fn v2(resources: &[ServedResource]) -> Value {
    v2_document(&model(resources))
}

/// A serialized group-version document and its hash.
#[derive(Debug, Clone)]
pub struct GroupVersionDocument {
    /// `serde_json::to_vec` of the document.
    pub json: Vec<u8>,
    /// [`sha512_hex`] of `json`; the `?hash=` in the index and upstream's ETag.
    pub hash: String,
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
        let model = model(resources);
        let mut group_versions = BTreeMap::new();
        let mut index = Map::new();
        for (group, version) in model.groups.keys() {
            if let Some(doc) = v3_document(&model, group, version) {
                let json = serde_json::to_vec(&doc).unwrap_or_default();
                let hash = sha512_hex(&json);
                let path = gv_path(group, version);
                index.insert(path.clone(), index_entry(&path, &hash));
                group_versions.insert(path, GroupVersionDocument { json, hash });
            }
        }
        let index = serde_json::to_vec(&json!({ "paths": index })).unwrap_or_default();
        let v2_doc = v2_document(&model);
        let v2 = serde_json::to_vec(&v2_doc).unwrap_or_default();
        let v2_protobuf = crate::proto::v2_protobuf(&v2_doc);
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
