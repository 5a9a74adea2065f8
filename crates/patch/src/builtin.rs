//! Built-in kinds' patch metadata as data: the `x-kubernetes-patch-strategy`,
//! `-patch-merge-key`, `-list-type`, `-list-map-keys` and `-map-type`
//! extensions of kube-apiserver 1.37's OpenAPI (`data/`, extracted from
//! upstream's `api/openapi-spec/swagger.json` by `tools/patch-metadata.py`), walked from a kind's
//! definition into a [`PatchSchema`]. Adding a kind needs no code here.
//! The data stays undecoded but for an index; definitions are decoded while
//! a kind is walked.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

// The dependency goes one way, builtin → schema: `schema` is the generic
// metadata model and knows nothing of the built-in kinds' data, so the lookup
// of a built-in kind's schema (with `common_schema` as the fallback) lives here.
use crate::schema::{
    ANY_FIELD, FieldMeta, ListType, PatchSchema, SchemaNode, Strategy, common_schema,
};

const DATA: &str = include_str!("../data/builtin-patch-metadata.json");

/// The data, indexed without being decoded: definitions are decoded when a
/// kind's schema is walked, so only the built schemas stay in memory.
struct Data {
    /// `group/version/Kind` → definition name.
    kinds: HashMap<&'static str, &'static str>,
    definitions: HashMap<&'static str, &'static RawValue>,
}

#[derive(serde::Deserialize)]
struct Document {
    #[serde(rename = "_kinds", borrow)]
    kinds: HashMap<&'static str, &'static str>,
    #[serde(borrow)]
    definitions: HashMap<&'static str, &'static RawValue>,
}

fn data() -> &'static Data {
    static INDEX: OnceLock<Data> = OnceLock::new();
    INDEX.get_or_init(|| match serde_json::from_str::<Document>(DATA) {
        Ok(d) => Data {
            kinds: d.kinds,
            definitions: d.definitions,
        },
        Err(_) => Data {
            kinds: HashMap::new(),
            definitions: HashMap::new(),
        },
    })
}

/// A definition's properties, decoded.
fn properties(definition: &str) -> Option<Map<String, Value>> {
    let raw = data().definitions.get(definition)?;
    match serde_json::from_str::<Value>(raw.get()).ok()? {
        Value::Object(mut d) => match d.remove("properties") {
            Some(Value::Object(p)) => Some(p),
            _ => None,
        },
        _ => None,
    }
}

/// Definitions structured-merge-diff takes as untyped and atomic whatever
/// their OpenAPI says (kube-openapi's `schemaconv`, which hard-codes them):
/// a `RawExtension` (ControllerRevision's `data`, DRA's opaque
/// `parameters`) is owned whole, never field by field.
const UNTYPED_ATOMIC: &[&str] = &["io.k8s.apimachinery.pkg.runtime.RawExtension"];

/// Whether `definition` is declared atomic (`x-kubernetes-map-type: atomic`
/// among its own extensions), or is one of [`UNTYPED_ATOMIC`].
fn atomic_definition(definition: &str) -> bool {
    if UNTYPED_ATOMIC.contains(&definition) {
        return true;
    }
    let Some(raw) = data().definitions.get(definition) else {
        return false;
    };
    // Most definitions have no `_type`: not decoded for them.
    raw.get().contains("\"_type\"")
        && serde_json::from_str::<Value>(raw.get())
            .ok()
            .and_then(|d| d.pointer("/_type/x-kubernetes-map-type").cloned())
            .is_some_and(|t| t == "atomic")
}

/// The schema of `group/version/kind` (built when asked: a resource type
/// keeps its own); `None` for kinds the data does not know.
pub fn schema_of_kind(group: &str, version: &str, kind: &str) -> Option<PatchSchema> {
    // The data names the core group `core`.
    let group = if group.is_empty() { "core" } else { group };
    let definition = data()
        .kinds
        .get(format!("{group}/{version}/{kind}").as_str())?;
    Some(walk(definition, &mut Vec::new()))
}

/// The patch metadata of built-in kind `group/version/kind`, from the
/// `x-kubernetes-*` extensions of kube-apiserver's OpenAPI; kinds the data
/// does not know get [`common_schema`]. Note that kube-apiserver refuses
/// strategic merge patch for custom resources with 415; that check belongs to
/// the caller.
pub fn builtin_schema(group: &str, version: &str, kind: &str) -> PatchSchema {
    schema_of_kind(group, version, kind).unwrap_or_else(common_schema)
}

/// The schema of `metadata` as every kind has it (upstream's `ObjectMeta`
/// definition, which a custom resource's schema shares): a schema with
/// the one field `metadata`.
pub fn object_meta_schema() -> PatchSchema {
    const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
    let mut schema = PatchSchema::new();
    schema.fields.insert(
        "metadata".to_string(),
        SchemaNode {
            meta: FieldMeta::default(),
            children: walk(OBJECT_META, &mut Vec::new()),
        },
    );
    schema
}

/// The `x-kubernetes-*` extensions of the data, as OpenAPI documents carry
/// them: `(definition, None, extensions)` for a definition's own
/// (`+structType=atomic`), `(definition, Some(property), extensions)` for its
/// properties'. Decodes everything: for building OpenAPI documents once.
pub fn openapi_extensions() -> Vec<(&'static str, Option<String>, Map<String, Value>)> {
    let extensions = |map: Map<String, Value>| -> Map<String, Value> {
        map.into_iter()
            .filter(|(k, _)| k.starts_with("x-kubernetes-"))
            .collect()
    };
    let mut out = Vec::new();
    for (definition, raw) in &data().definitions {
        let Ok(Value::Object(mut d)) = serde_json::from_str::<Value>(raw.get()) else {
            continue;
        };
        if let Some(Value::Object(own)) = d.remove("_type") {
            out.push((*definition, None, extensions(own)));
        }
        if let Some(Value::Object(properties)) = d.remove("properties") {
            for (name, property) in properties {
                if let Value::Object(property) = property {
                    let ext = extensions(property);
                    if !ext.is_empty() {
                        out.push((*definition, Some(name), ext));
                    }
                }
            }
        }
    }
    out
}

/// Defaults of list-map key fields (`+default` in upstream's types; the
/// data keeps only the extensions): in 1.33 the one key field with a default
/// is ports' `protocol` (ServicePort, ContainerPort).
const KEY_DEFAULTS: &[(&str, &str)] = &[("protocol", "TCP")];

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
    let list_type = match text("x-kubernetes-list-type") {
        "atomic" => Some(ListType::Atomic),
        "set" => Some(ListType::Set),
        "map" => Some(ListType::Map),
        _ => None,
    };
    // The keys, unless the merge key alone says the same.
    let list_map_keys: Vec<String> = property
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|keys| {
            keys.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .filter(|keys: &Vec<String>| keys.as_slice() != merge_key.as_slice())
        .unwrap_or_default();
    let key_defaults = list_map_keys
        .iter()
        .filter_map(|k| {
            KEY_DEFAULTS
                .iter()
                .find(|(key, _)| key == k)
                .map(|(key, value)| (key.to_string(), Value::from(*value)))
        })
        .collect();
    FieldMeta {
        strategy,
        merge_key,
        retain_keys: strategies.contains(&"retainKeys"),
        list_map_keys,
        key_defaults,
        atomic_map: text("x-kubernetes-map-type") == "atomic",
        list_type,
    }
}

/// The schema under `definition`, keeping only the fields with metadata or
/// with some below them. `path` guards against recursive definitions.
fn walk(definition: &str, path: &mut Vec<String>) -> PatchSchema {
    let mut schema = PatchSchema::new();
    if path.iter().any(|d| d == definition) {
        return schema;
    }
    let Some(properties) = properties(definition) else {
        return schema;
    };
    path.push(definition.to_string());
    for (field, property) in &properties {
        let Some(property) = property.as_object() else {
            continue;
        };
        let mut meta = field_meta(property);
        let reference = |k: &str| property.get(k).and_then(Value::as_str);
        // A struct declared atomic (`+structType=atomic`: LabelSelector,
        // ObjectReference, OwnerReference) is an atomic map wherever it is
        // used, unless the property says otherwise (`+mapType=granular` on
        // a PersistentVolume's `claimRef`: structured-merge-diff lets a
        // reference's own map type override the referred type's). Items of a
        // list carry it on the list's node, where their fields are looked up.
        match (reference("$ref"), reference("items")) {
            (Some(_), _) if property.contains_key("x-kubernetes-map-type") => {}
            (Some(definition), _) | (None, Some(definition)) => {
                meta.atomic_map |= atomic_definition(definition);
            }
            (None, None) => {}
        }
        let children = if let Some(values) = reference("additionalProperties") {
            let below = walk(values, path);
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
            walk(next, path)
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
        // Structs declared atomic, where a property refers to them.
        let deployment = schema_of_kind("apps", "v1", "Deployment").unwrap();
        assert!(deployment.lookup(&["spec", "selector"]).atomic_map);
        assert!(!deployment.lookup(&["spec", "template"]).atomic_map);
        // Server-side apply keys ports by port and protocol, TCP when left out.
        assert_eq!(ports.list_keys(), ["port", "protocol"]);
        assert_eq!(ports.key_default("protocol"), Some(&Value::from("TCP")));
        assert_eq!(ports.key_default("port"), None);

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

        // Server-side apply's list types: declared ones, with or without a
        // patch strategy, win over the strategy.
        let binding = schema_of_kind(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicyBinding",
        )
        .unwrap();
        let actions = binding.lookup(&["spec", "validationActions"]);
        assert_eq!(actions.apply_list_type(), ListType::Set);
        assert_eq!(actions.strategy, None);
        let csi = schema_of_kind("storage.k8s.io", "v1", "CSIDriver").unwrap();
        let modes = csi.lookup(&["spec", "volumeLifecycleModes"]);
        assert_eq!(modes.apply_list_type(), ListType::Set);
        let pod = schema_of_kind("", "v1", "Pod").unwrap();
        let host_ips = pod.lookup(&["status", "hostIPs"]);
        assert_eq!(host_ips.strategy, Some(Strategy::Merge));
        assert_eq!(host_ips.apply_list_type(), ListType::Atomic);
        // `+listType=map` without a patch strategy: keyed by its map keys.
        let claims = pod.lookup(&["spec", "containers", "resources", "claims"]);
        assert_eq!(claims.strategy, None);
        assert_eq!(claims.apply_list_type(), ListType::Map);
        assert_eq!(claims.list_keys(), ["name"]);

        // A reference's own map type overrides the referred struct's:
        // ObjectReference is atomic, a PersistentVolume's claimRef granular.
        let pv = schema_of_kind("", "v1", "PersistentVolume").unwrap();
        assert!(!pv.lookup(&["spec", "claimRef"]).atomic_map);
        let event = schema_of_kind("", "v1", "Event").unwrap();
        assert!(event.lookup(&["involvedObject"]).atomic_map);
        // A RawExtension is untyped and atomic.
        let revision = schema_of_kind("apps", "v1", "ControllerRevision").unwrap();
        assert!(revision.lookup(&["data"]).atomic_map);
        // Each owner reference is atomic, for every kind.
        assert!(pod.lookup(&["metadata", "ownerReferences"]).atomic_map);
        let meta = object_meta_schema();
        let owners = meta.lookup(&["metadata", "ownerReferences"]);
        assert!(owners.atomic_map);
        assert_eq!(owners.list_keys(), ["uid"]);
        assert_eq!(
            meta.lookup(&["metadata", "finalizers"]).apply_list_type(),
            ListType::Set
        );

        let crd = schema_of_kind("apiextensions.k8s.io", "v1", "CustomResourceDefinition");
        assert!(crd.is_some(), "recursive definitions end");
        assert!(schema_of_kind("example.com", "v1", "Nothing").is_none());
    }
}
