//! Per-type patch metadata for strategic merge patch.
//!
//! Upstream reads `patchStrategy` / `patchMergeKey` Go struct tags (or the
//! OpenAPI `x-kubernetes-patch-strategy` / `x-kubernetes-patch-merge-key`
//! extensions) to decide, field by field, whether a list is merged by key,
//! unioned as a set, or replaced atomically. We have no Go structs, so each
//! served type declares the handful of fields that deviate from the default
//! (maps merge recursively, lists are atomic) in a compact table:
//!
//! ```
//! use kubext_patch::{PatchSchema, Strategy};
//! let schema = PatchSchema::new()
//!     .list("spec.ports", Strategy::Merge, "port")
//!     .set("metadata.finalizers");
//! ```
//!
//! Paths are field names from the object root; list elements are transparent
//! (`spec.containers.ports` is the `ports` list inside each container).

use std::collections::BTreeMap;

/// A field's `patchStrategy` (the part that matters when applying).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// `patchStrategy:"merge"`: lists of maps merge by the merge key, lists
    /// of scalars become set unions.
    Merge,
    /// `patchStrategy:"replace"`: the patch value replaces the field whole.
    Replace,
}

/// A list's `x-kubernetes-list-type`: how server-side apply tells its items
/// apart (structured-merge-diff's list element relationship). Strategic
/// merge patch does not read it: a `set` or `map` list without a patch
/// strategy is still replaced whole by a strategic merge patch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListType {
    /// Replaced and owned whole.
    Atomic,
    /// Scalars, each item by its value (`v:"a"` in a field set).
    Set,
    /// Maps, each item by its key fields (`x-kubernetes-list-map-keys`,
    /// `k:{"name":"a"}` in a field set).
    Map,
}

/// What a strategic merge patch (and server-side apply) needs to know about
/// one field.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldMeta {
    /// `None` is upstream's default: maps merge, lists are replaced.
    pub strategy: Option<Strategy>,
    /// `patchMergeKey` for lists of maps merged by key.
    pub merge_key: Option<String>,
    /// The `retainKeys` strategy. Only diff creation uses it; applying honours
    /// `$retainKeys` directives wherever the patch carries them.
    pub retain_keys: bool,
    /// Server-side apply's keys of an associative list when there are several
    /// (`x-kubernetes-list-map-keys`); empty means the merge key alone.
    pub list_map_keys: Vec<String>,
    /// Values of key fields an item may leave out (their schema default, as
    /// structured-merge-diff keys such items: Service ports' `protocol`).
    pub key_defaults: Vec<(String, serde_json::Value)>,
    /// `x-kubernetes-map-type: atomic`: the map is replaced and owned whole.
    /// On a list, its items' (each item is one map, owned whole).
    pub atomic_map: bool,
    /// The declared `x-kubernetes-list-type`; `None` when the schema has
    /// none (see [`FieldMeta::apply_list_type`]).
    pub list_type: Option<ListType>,
}

impl FieldMeta {
    /// Merge strategy with an optional merge key (`""` means none).
    pub fn merge(merge_key: &str) -> Self {
        FieldMeta {
            strategy: Some(Strategy::Merge),
            merge_key: (!merge_key.is_empty()).then(|| merge_key.to_string()),
            ..FieldMeta::default()
        }
    }

    /// How server-side apply tells the list's items apart, as
    /// structured-merge-diff reads a schema (kube-openapi's
    /// `getListElementRelationship`): the declared `x-kubernetes-list-type`
    /// wins; without one, `patchStrategy: merge` makes a map list keyed by
    /// the merge key, or a set without one; anything else is atomic.
    pub fn apply_list_type(&self) -> ListType {
        match (self.list_type, self.strategy) {
            (Some(declared), _) => declared,
            (None, Some(Strategy::Merge)) if self.merge_key.is_some() => ListType::Map,
            (None, Some(Strategy::Merge)) => ListType::Set,
            (None, _) => ListType::Atomic,
        }
    }

    /// Server-side apply's keys of an associative list (the merge key, or the
    /// `x-kubernetes-list-map-keys`).
    pub fn list_keys(&self) -> Vec<String> {
        if self.list_map_keys.is_empty() {
            self.merge_key.iter().cloned().collect()
        } else {
            self.list_map_keys.clone()
        }
    }

    /// The default of key field `key`, if it has one.
    pub fn key_default(&self, key: &str) -> Option<&serde_json::Value> {
        self.key_defaults
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    /// The merge key, or `""` as upstream's `GetPatchMergeKey` returns.
    pub fn merge_key_str(&self) -> &str {
        self.merge_key.as_deref().unwrap_or("")
    }
}

/// A path segment that matches any field name (the values of a map).
pub const ANY_FIELD: &str = "*";

/// Looks up patch metadata by field path.
pub trait PatchMeta {
    /// Metadata for the field at `path` (field names from the root, list
    /// elements transparent), borrowed; `None` for unknown fields.
    fn find(&self, path: &[&str]) -> Option<&FieldMeta>;

    /// [`PatchMeta::find`] as a value: unknown fields get [`FieldMeta::default`].
    fn lookup(&self, path: &[&str]) -> FieldMeta {
        self.find(path).cloned().unwrap_or_default()
    }
}

/// A tree of [`FieldMeta`] keyed by field name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PatchSchema {
    pub(crate) fields: BTreeMap<String, SchemaNode>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SchemaNode {
    pub(crate) meta: FieldMeta,
    pub(crate) children: PatchSchema,
}

impl PatchSchema {
    /// An empty schema: every map merges, every list is atomic.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether nothing is declared.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// Declares `meta` for the dotted `path`.
    pub fn field(mut self, path: &str, meta: FieldMeta) -> Self {
        self.node_mut(path).meta = meta;
        self
    }

    /// Declares `meta` for the field at `segments` (names may contain dots);
    /// [`ANY_FIELD`] stands for every name of a map (`additionalProperties`).
    pub fn declare(&mut self, segments: &[&str], meta: FieldMeta) {
        let Some((last, parents)) = segments.split_last() else {
            return;
        };
        let mut fields = &mut self.fields;
        for segment in parents {
            fields = &mut fields
                .entry(segment.to_string())
                .or_default()
                .children
                .fields;
        }
        fields.entry(last.to_string()).or_default().meta = meta;
    }

    /// A list with the given strategy and merge key (`""` for none).
    pub fn list(self, path: &str, strategy: Strategy, merge_key: &str) -> Self {
        let meta = FieldMeta {
            strategy: Some(strategy),
            merge_key: (!merge_key.is_empty()).then(|| merge_key.to_string()),
            ..FieldMeta::default()
        };
        self.field(path, meta)
    }

    /// A list of scalars merged as a set union (`patchStrategy:"merge"`
    /// without a merge key, e.g. `metadata.finalizers`).
    pub fn set(self, path: &str) -> Self {
        self.field(path, FieldMeta::merge(""))
    }

    /// A field replaced whole (`patchStrategy:"replace"`).
    pub fn replace(self, path: &str) -> Self {
        self.field(
            path,
            FieldMeta {
                strategy: Some(Strategy::Replace),
                ..FieldMeta::default()
            },
        )
    }

    /// An atomic field. This is the default; declaring it documents intent.
    pub fn atomic(self, path: &str) -> Self {
        self.field(path, FieldMeta::default())
    }

    /// Marks `path` with the `retainKeys` strategy, keeping its other
    /// metadata.
    pub fn retain_keys(mut self, path: &str) -> Self {
        self.node_mut(path).meta.retain_keys = true;
        self
    }

    /// Adds every declaration of `other` (its entries win on conflict).
    pub fn extend(mut self, other: &PatchSchema) -> Self {
        self.merge_from(other);
        self
    }

    fn merge_from(&mut self, other: &PatchSchema) {
        for (name, theirs) in &other.fields {
            let ours = self.fields.entry(name.clone()).or_default();
            if theirs.meta != FieldMeta::default() {
                ours.meta = theirs.meta.clone();
            }
            ours.children.merge_from(&theirs.children);
        }
    }

    fn node_mut(&mut self, path: &str) -> &mut SchemaNode {
        let mut segments = path.split('.');
        let first = segments.next().unwrap_or_default();
        let mut node = self.fields.entry(first.to_string()).or_default();
        for segment in segments {
            node = node.children.fields.entry(segment.to_string()).or_default();
        }
        node
    }
}

impl PatchMeta for PatchSchema {
    fn find(&self, path: &[&str]) -> Option<&FieldMeta> {
        let mut fields = &self.fields;
        let mut found = None;
        for segment in path {
            let node = fields.get(*segment).or_else(|| fields.get(ANY_FIELD))?;
            found = Some(node);
            fields = &node.children.fields;
        }
        found.map(|n| &n.meta)
    }
}

/// Metadata every object shares: `ObjectMeta`'s tagged lists and the
/// conventional `status.conditions` list keyed by `type`.
pub fn common_schema() -> PatchSchema {
    PatchSchema::new()
        .set("metadata.finalizers")
        .list("metadata.ownerReferences", Strategy::Merge, "uid")
        .atomic("metadata.managedFields")
        .list("status.conditions", Strategy::Merge, "type")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::builtin_schema;

    #[test]
    fn lookup_walks_the_tree() {
        let s = PatchSchema::new()
            .list("spec.ports", Strategy::Merge, "port")
            .replace("spec.template");
        assert_eq!(s.lookup(&["spec", "ports"]), FieldMeta::merge("port"));
        assert_eq!(s.lookup(&["spec"]), FieldMeta::default());
        assert_eq!(s.lookup(&["spec", "ports", "name"]), FieldMeta::default());
        assert_eq!(s.lookup(&["nope", "ports"]), FieldMeta::default());
        assert_eq!(
            s.lookup(&["spec", "template"]).strategy,
            Some(Strategy::Replace)
        );
    }

    #[test]
    fn builtins_carry_object_meta() {
        let svc = builtin_schema("", "v1", "Service");
        assert_eq!(
            svc.lookup(&["metadata", "finalizers"]),
            FieldMeta {
                list_type: Some(ListType::Set),
                ..FieldMeta::merge("")
            }
        );
        let owners = svc.lookup(&["metadata", "ownerReferences"]);
        assert_eq!(owners.merge_key.as_deref(), Some("uid"));
        assert_eq!(owners.strategy, Some(Strategy::Merge));
        assert_eq!(owners.list_keys(), ["uid"]);
        // OwnerReference is an atomic struct: each item is owned whole.
        assert!(owners.atomic_map);
        let ports = svc.lookup(&["spec", "ports"]);
        assert_eq!(ports.merge_key.as_deref(), Some("port"));
        let conditions = svc.lookup(&["status", "conditions"]);
        assert_eq!(conditions.merge_key.as_deref(), Some("type"));
        let ns = builtin_schema("", "v1", "Namespace");
        let finalizers = ns.lookup(&["spec", "finalizers"]);
        assert_eq!(finalizers.strategy, None);
        assert_eq!(finalizers.apply_list_type(), ListType::Atomic);
    }

    #[test]
    fn apply_list_types_follow_the_declared_list_type_first() {
        let declared = |list_type, meta: FieldMeta| FieldMeta {
            list_type: Some(list_type),
            ..meta
        };
        // Without a declared type, the patch strategy decides.
        assert_eq!(FieldMeta::merge("name").apply_list_type(), ListType::Map);
        assert_eq!(FieldMeta::merge("").apply_list_type(), ListType::Set);
        assert_eq!(FieldMeta::default().apply_list_type(), ListType::Atomic);
        let retain = FieldMeta {
            retain_keys: true,
            ..FieldMeta::default()
        };
        assert_eq!(retain.apply_list_type(), ListType::Atomic);
        // A declared type wins over the strategy (`+listType=atomic` with
        // `patchStrategy:"merge"`: a Pod's hostIPs) and stands without one
        // (`+listType=set` alone: validationActions).
        let host_ips = declared(ListType::Atomic, FieldMeta::merge("ip"));
        assert_eq!(host_ips.apply_list_type(), ListType::Atomic);
        let actions = declared(ListType::Set, FieldMeta::default());
        assert_eq!(actions.apply_list_type(), ListType::Set);
        assert_eq!(
            actions.strategy, None,
            "strategic merge patch still replaces it"
        );
    }

    #[test]
    fn extend_overrides_and_keeps() {
        let s = common_schema().extend(&PatchSchema::new().set("spec.finalizers"));
        assert_eq!(s.lookup(&["spec", "finalizers"]), FieldMeta::merge(""));
        assert_eq!(
            s.lookup(&["metadata", "ownerReferences"]),
            FieldMeta::merge("uid")
        );
    }

    #[test]
    fn declared_fields_wildcards_and_list_keys() {
        let mut s = PatchSchema::new();
        let ports = FieldMeta {
            strategy: Some(Strategy::Merge),
            merge_key: Some("port".into()),
            list_map_keys: vec!["port".into(), "protocol".into()],
            ..FieldMeta::default()
        };
        s.declare(&["spec", "a.b", ANY_FIELD, "ports"], ports.clone());
        assert_eq!(s.lookup(&["spec", "a.b", "anything", "ports"]), ports);
        assert_eq!(ports.list_keys(), vec!["port", "protocol"]);
        assert_eq!(FieldMeta::merge("uid").list_keys(), vec!["uid"]);
        assert!(FieldMeta::merge("").list_keys().is_empty());
        // A declared name wins over the wildcard.
        s.declare(&["spec", "a.b", "fixed"], FieldMeta::merge(""));
        assert_eq!(s.lookup(&["spec", "a.b", "fixed"]), FieldMeta::merge(""));
    }
}
