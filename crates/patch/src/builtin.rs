//! Built-in kinds' patch metadata as data: the `x-kubernetes-patch-strategy`,
//! `-patch-merge-key`, `-list-type`, `-list-map-keys` and `-map-type`
//! extensions of kube-apiserver 1.33's OpenAPI (`data/`, extracted from
//! upstream's `api/openapi-spec/swagger.json`), walked from a kind's
//! definition into a [`PatchSchema`]. Adding a kind needs no code here.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value};

use crate::schema::{ANY_FIELD, FieldMeta, PatchSchema, SchemaNode, Strategy};

const DATA: &str = include_str!("../data/builtin-patch-metadata.json");

struct Data {
    /// `group/version/Kind` → definition name.
    kinds: Map<String, Value>,
    definitions: Map<String, Value>,
}

fn data() -> &'static Data {
    static DATA_PARSED: OnceLock<Data> = OnceLock::new();
    DATA_PARSED.get_or_init(|| {
        let mut all: Map<String, Value> = serde_json::from_str(DATA).unwrap_or_default();
        let take = |all: &mut Map<String, Value>, key: &str| match all.remove(key) {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        Data {
            kinds: take(&mut all, "_kinds"),
            definitions: take(&mut all, "definitions"),
        }
    })
}

/// The schema of `group/version/kind`, built once; `None` for kinds the
/// data does not know.
pub fn schema_of_kind(group: &str, version: &str, kind: &str) -> Option<PatchSchema> {
    static BUILT: OnceLock<parking_lot::Mutex<HashMap<String, Arc<PatchSchema>>>> = OnceLock::new();
    // The data names the core group `core`.
    let group = if group.is_empty() { "core" } else { group };
    let key = format!("{group}/{version}/{kind}");
    let built = BUILT.get_or_init(Default::default);
    if let Some(schema) = built.lock().get(&key) {
        return Some((**schema).clone());
    }
    let data = data();
    let definition = data
        .kinds
        .get(&key)
        .and_then(Value::as_str)?;
    let schema = Arc::new(walk(&data.definitions, definition, &mut Vec::new()));
    built.lock().insert(key, schema.clone());
    Some((*schema).clone())
}

/// A field's metadata from its extensions.
fn field_meta(property: &Map<String, Value>) -> FieldMeta {
    let text = |k: &str| property.get(k).and_then(Value::as_str).unwrap_or("");
    let strategies: Vec<&str> = text("x-kubernetes-patch-strategy").split(',').collect();
    let strategy = if strategies.contains(&"merge") {
        Some(Strategy::Merge)
    } else if strategies.contains(&"replace") {
        Some(Strategy::Replace)
    } else {
        None
    };
    let merge_key = Some(text("x-kubernetes-patch-merge-key"))
        .filter(|k| !k.is_empty())
        .map(String::from);
    // `x-kubernetes-list-map-keys` beyond the merge key (Service ports'
    // `port` + `protocol`) need apply to default missing key fields first,
    // as upstream's structured-merge-diff does; until then apply keys
    // built-in lists by the merge key, as before.
    let list_map_keys = Vec::new();
    FieldMeta {
        strategy,
        merge_key,
        retain_keys: strategies.contains(&"retainKeys"),
        list_map_keys,
        atomic_map: text("x-kubernetes-map-type") == "atomic",
    }
}

/// The schema under `definition`, keeping only the fields with metadata or
/// with some below them. `path` guards against recursive definitions.
fn walk(definitions: &Map<String, Value>, definition: &str, path: &mut Vec<String>) -> PatchSchema {
    let mut schema = PatchSchema::new();
    if path.iter().any(|d| d == definition) {
        return schema;
    }
    let Some(properties) = definitions
        .get(definition)
        .and_then(|d| d.get("properties"))
        .and_then(Value::as_object)
    else {
        return schema;
    };
    path.push(definition.to_string());
    for (field, property) in properties {
        let Some(property) = property.as_object() else {
            continue;
        };
        let meta = field_meta(property);
        let reference = |k: &str| property.get(k).and_then(Value::as_str);
        let children = if let Some(values) = reference("additionalProperties") {
            let below = walk(definitions, values, path);
            let mut children = PatchSchema::new();
            if !below.is_empty() {
                children.fields.insert(
                    ANY_FIELD.to_string(),
                    SchemaNode {
                        meta: FieldMeta::default(),
                        children: below,
                    },
                );
            }
            children
        } else if let Some(next) = reference("$ref").or_else(|| reference("items")) {
            walk(definitions, next, path)
        } else {
            PatchSchema::new()
        };
        if meta != FieldMeta::default() || !children.is_empty() {
            schema
                .fields
                .insert(field.clone(), SchemaNode { meta, children });
        }
    }
    path.pop();
    schema
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PatchMeta;

    #[test]
    fn kinds_get_upstreams_metadata() {
        let service = schema_of_kind("", "v1", "Service").unwrap();
        let ports = service.lookup(&["spec", "ports"]);
        assert_eq!(ports.strategy, Some(Strategy::Merge));
        assert_eq!(ports.merge_key.as_deref(), Some("port"));
        assert!(service.lookup(&["spec", "selector"]).atomic_map);

        let deployment = schema_of_kind("apps", "v1", "Deployment").unwrap();
        let containers = deployment.lookup(&["spec", "template", "spec", "containers"]);
        assert_eq!(containers.merge_key.as_deref(), Some("name"));
        let env = deployment.lookup(&["spec", "template", "spec", "containers", "env"]);
        assert_eq!(env.merge_key.as_deref(), Some("name"));
        let volumes = deployment.lookup(&["spec", "template", "spec", "volumes"]);
        assert!(volumes.retain_keys);
        assert!(deployment.lookup(&["spec", "strategy"]).retain_keys);
        let finalizers = deployment.lookup(&["metadata", "finalizers"]);
        assert_eq!(finalizers.strategy, Some(Strategy::Merge));
        assert_eq!(finalizers.merge_key, None);

        let crd = schema_of_kind("apiextensions.k8s.io", "v1", "CustomResourceDefinition");
        assert!(crd.is_some(), "recursive definitions end");
        assert!(schema_of_kind("example.com", "v1", "Nothing").is_none());
    }
}
