//! A create's `FieldsV1`, written straight from the object: what comparing
//! it with the type's empty object ([`Tracking::compare`](super::Tracking::compare))
//! finds added or modified, less the system and reset fields, encoded
//! ([`update_entries`](super::update_entries), [`FieldSet::to_fields_v1`]),
//! without building, comparing and encoding field sets. The walk keeps the
//! field names of its path (borrowed from the object) for the schema, and
//! writes `f:` keys straight from them.
//!
//! A registry write keeps its metadata typed ([`ObjectMeta`]): for a create,
//! [`typed_fields_v1`] reads it as it is, where the plain way writes it out
//! as JSON beside the body for the walk. Its fields hold what the JSON
//! would: the system fields (`name`, `uid`, …) are scalars and nobody's,
//! the rest are owned as the JSON walk owns them (labels and annotations
//! read in place; owner references and finalizers, rare on a create, as
//! their JSON). Both are held to the plain way by this module's tests.

use apimachinery::object_meta::{ObjectMeta, OwnerReference};
use patch::{FieldMeta, PatchMeta};
use serde_json::{Map, Value};

use super::{FieldSet, ListKind, PathElement, list_kind_of, system_fields};

/// The one member of an object the typed walk reads from [`ObjectMeta`].
const METADATA: &str = "metadata";

/// The `FieldsV1` of a create of `obj` (a whole object as JSON) against
/// `base` (what an empty object of the type looks like), less
/// [`system_fields`] and `reset` (and all below them).
pub(super) fn fields_v1(
    schema: &dyn PatchMeta,
    base: &Map<String, Value>,
    obj: &Map<String, Value>,
    reset: &FieldSet,
) -> Written {
    CreateWalk::new(schema)
        .created(Some(base), obj, Some(system_fields()), Some(reset))
        .into_text()
}

/// A create's `FieldsV1` as JSON text, `None` when the create set nothing.
pub(super) type Written = Option<Box<str>>;

/// [`fields_v1`] of the object whose metadata is `meta` and the rest `body`
/// (a JSON object without `metadata`), without writing `meta` out as JSON.
/// `None` (the caller takes the plain way) when `base` or `body` is not an
/// object, `body` has a `metadata` member, or `base`'s metadata holds
/// anything but system fields (upstream's empty objects hold none).
pub(super) fn typed_fields_v1(
    schema: &dyn PatchMeta,
    base: &Value,
    meta: &ObjectMeta,
    body: &Value,
    reset: &FieldSet,
) -> Option<Written> {
    let (base, body) = (base.as_object()?, body.as_object()?);
    // Equality compares lengths first: cheaper than a search by order.
    if body.keys().any(|k| k == METADATA) {
        return None;
    }
    let system = system_fields();
    // A base whose metadata holds system fields only (or is null or not
    // there) has nothing the typed fields could equal but system fields,
    // which are nobody's whatever their base: each typed field is new.
    match apimachinery::meta::member_of(base) {
        None | Some(Value::Null) => {}
        Some(Value::Object(md)) => {
            let system_md = system.child_field(METADATA)?;
            if !md.keys().all(|k| system_md.has_field(k)) {
                return None;
            }
        }
        Some(_) => return None,
    }
    // The lists, written out first: the walk borrows their JSON.
    let owner_references = (!meta.owner_references.is_empty()).then(|| {
        let refs = meta.owner_references.iter().map(OwnerReference::to_value);
        Value::Array(refs.collect())
    });
    let finalizers = (!meta.finalizers.is_empty()).then(|| {
        let names = meta.finalizers.iter().map(|f| Value::String(f.clone()));
        Value::Array(names.collect())
    });
    let mut walk = CreateWalk::new(schema);
    let mut out = walk.created(Some(base), body, Some(system), Some(reset));
    // `metadata` is a system field: owned only through what it holds, not
    // at all when it is reset or atomic.
    if !reset.has_field(METADATA) {
        walk.names.push(METADATA);
        if !walk.atomic_map() {
            let fields = TypedMeta {
                meta,
                owner_references: owner_references.as_ref(),
                finalizers: finalizers.as_ref(),
            };
            let below = walk.typed_metadata(&fields, reset.child_field(METADATA));
            add(&mut out, Key::Field(METADATA), false, below);
        }
        walk.names.pop();
    }
    Some(out.into_text())
}

/// The typed metadata, its lists written out as JSON.
struct TypedMeta<'v> {
    meta: &'v ObjectMeta,
    owner_references: Option<&'v Value>,
    finalizers: Option<&'v Value>,
}

/// A `FieldsV1` node as the walk builds it: whether its field is owned
/// itself (`"."` among its members, set by [`add`]) and its members, keyed
/// by what they borrow from the object; written out once, as text
/// ([`Fields::into_text`]), never built as a JSON tree.
#[derive(Debug, Default)]
struct Fields<'v> {
    owned: bool,
    members: Vec<(Key<'v>, Fields<'v>)>,
}

/// A member's key: a field (`f:name`, written from the name) or a list
/// element, serialized (`k:…`, `v:…`, `i:…`). Ordered as their text is
/// (byte order, as Go sorts a map's keys): every `f:` key before every
/// element's, and `"."` before both.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Key<'v> {
    Field(&'v str),
    Element(String),
}

impl Fields<'_> {
    fn is_empty(&self) -> bool {
        !self.owned && self.members.is_empty()
    }

    /// The node as JSON text, `None` when it holds nothing.
    fn into_text(self) -> Written {
        if self.is_empty() {
            return None;
        }
        let mut out = Vec::with_capacity(128);
        self.write(&mut out);
        // Only whole strings and ASCII punctuation were written.
        String::from_utf8(out).ok().map(String::into_boxed_str)
    }

    /// Appends `{…}`, its members in key order (the walks add a map's fields
    /// in order; metadata's and a list's elements are sorted here).
    fn write(mut self, out: &mut Vec<u8>) {
        if !self.members.is_sorted_by(|a, b| a.0 <= b.0) {
            self.members.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        }
        out.push(b'{');
        if self.owned {
            out.extend_from_slice(b"\".\":{}");
        }
        for (i, (key, node)) in self.members.into_iter().enumerate() {
            if i > 0 || self.owned {
                out.push(b',');
            }
            match key {
                Key::Field(name) => apimachinery::json::write_prefixed_str(out, "f:", name),
                Key::Element(text) => apimachinery::json::write_str(out, &text),
            }
            out.push(b':');
            node.write(out);
        }
        out.push(b'}');
    }
}

/// A walk over a created object's new fields. The schema is looked up by the
/// field names of the path, list items transparent (as [`PatchMeta`] expects,
/// and as [`super::Walker`] looks it up).
struct CreateWalk<'s, 'v> {
    schema: &'s dyn PatchMeta,
    /// The field names of the current path.
    names: Names<'v>,
    /// How many list items the current path goes through.
    items: usize,
}

/// The field names of a path: on the stack up to a depth objects seldom
/// reach, on the heap past it.
struct Names<'v> {
    inline: [&'v str; INLINE_NAMES],
    len: usize,
    /// All the names, once the path is deeper than `inline` holds.
    deep: Vec<&'v str>,
}

const INLINE_NAMES: usize = 16;

impl<'v> Names<'v> {
    fn new() -> Self {
        Names {
            inline: [""; INLINE_NAMES],
            len: 0,
            deep: Vec::new(),
        }
    }

    fn push(&mut self, name: &'v str) {
        if self.len < INLINE_NAMES {
            self.inline[self.len] = name;
        } else {
            if self.len == INLINE_NAMES {
                self.deep.clear();
                self.deep.extend_from_slice(&self.inline);
            }
            self.deep.push(name);
        }
        self.len += 1;
    }

    fn pop(&mut self) {
        if self.len > INLINE_NAMES {
            self.deep.pop();
        }
        self.len = self.len.saturating_sub(1);
    }

    fn as_slice(&self) -> &[&'v str] {
        match self.inline.get(..self.len) {
            Some(names) => names,
            None => &self.deep,
        }
    }
}

impl<'s, 'v> CreateWalk<'s, 'v> {
    fn new(schema: &'s dyn PatchMeta) -> Self {
        CreateWalk {
            schema,
            names: Names::new(),
            items: 0,
        }
    }

    fn meta(&self) -> Option<&'s FieldMeta> {
        self.schema.find(self.names.as_slice())
    }

    /// Whether the map at the current path is atomic (owned whole).
    fn atomic_map(&self) -> bool {
        self.meta().is_some_and(|m| m.atomic_map)
    }

    fn list_kind(&self, items: &[Value]) -> ListKind {
        list_kind_of(self.meta(), &[items])
    }

    /// Whether `key` under the current path is `metadata.managedFields`:
    /// nobody's, never walked.
    fn is_managed_fields(&self, key: &str) -> bool {
        key == "managedFields" && self.items == 0 && self.names.as_slice() == [METADATA]
    }

    /// The `FieldsV1` of the map `fields` at the current path, against
    /// `base` (this map in the empty object), less `system` (the system
    /// fields under this path) and `reset` (the reset fields under it). A
    /// value as in the base is nobody's; a map the base has too (or has
    /// null) is owned only through what it holds, and so is a keyed or set
    /// list the base has null or empty; anything else that differs is owned
    /// (an atomic map or list whole). A system field is nobody's, but what
    /// it holds may be someone's; a reset field and all below it are
    /// nobody's.
    fn created(
        &mut self,
        base: Option<&Map<String, Value>>,
        fields: &'v Map<String, Value>,
        system: Option<&FieldSet>,
        reset: Option<&FieldSet>,
    ) -> Fields<'v> {
        let mut out = Fields::default();
        for (k, v) in fields {
            if self.is_managed_fields(k) {
                continue;
            }
            let old = base.and_then(|b| b.get(k));
            if old == Some(v) {
                continue; // as in the base: nothing changed
            }
            let (is_reset, reset_below) = match reset {
                Some(reset) => (reset.has_field(k), reset.child_field(k)),
                None => (false, None),
            };
            if is_reset {
                continue;
            }
            let (is_system, system_below) = match system {
                Some(system) => (system.has_field(k), system.child_field(k)),
                None => (false, None),
            };
            self.names.push(k);
            let (member, below) = self.created_field(old, v, system_below, reset_below);
            self.names.pop();
            add(&mut out, Key::Field(k), member && !is_system, below);
        }
        out
    }

    /// Whether the field `v` at the current path (`old` in the base) is
    /// owned itself, and the `FieldsV1` below it.
    fn created_field(
        &mut self,
        old: Option<&Value>,
        v: &'v Value,
        system: Option<&FieldSet>,
        reset: Option<&FieldSet>,
    ) -> (bool, Fields<'v>) {
        let Some(old) = old else {
            return (true, self.all_new(v, system, reset));
        };
        match (old, v) {
            (Value::Object(_) | Value::Null, Value::Object(map))
                if !self.atomic_map() && (!map.is_empty() || old.is_object()) =>
            {
                return (false, self.created(old.as_object(), map, system, reset));
            }
            (Value::Null | Value::Array(_), Value::Array(items))
                if !items.is_empty() && old.as_array().is_none_or(Vec::is_empty) =>
            {
                let kind = self.list_kind(items);
                if kind != ListKind::Atomic {
                    return (false, self.new_items(items, &kind));
                }
            }
            // A map emptied (to null): only removals.
            (Value::Object(o), Value::Null) if !o.is_empty() && !self.atomic_map() => {
                return (false, Fields::default());
            }
            _ => {}
        }
        // Changed: a scalar, an atomic map or list, null to empty (`New()`
        // holds no list items to compare with); a container where the base
        // has another kind of value holds new fields.
        let other_kind = !old.is_null() && std::mem::discriminant(old) != std::mem::discriminant(v);
        let below = if other_kind {
            self.all_new(v, system, reset)
        } else {
            Fields::default()
        };
        (true, below)
    }

    /// All of `v` is new: system and reset fields below it still nobody's.
    fn all_new(
        &mut self,
        v: &'v Value,
        system: Option<&FieldSet>,
        reset: Option<&FieldSet>,
    ) -> Fields<'v> {
        match v {
            Value::Object(map) if (system.is_some() || reset.is_some()) && !self.atomic_map() => {
                self.created(None, map, system, reset)
            }
            _ => self.all_below(v),
        }
    }

    /// Everything below the new node `v` at the current path, as the
    /// comparison finds it against nothing: the fields of a granular map,
    /// the items of a keyed or set list (a duplicated item whole, without
    /// its fields); atomic maps and lists, scalars and empty containers have
    /// nothing below them.
    fn all_below(&mut self, v: &'v Value) -> Fields<'v> {
        match v {
            Value::Object(m) if !m.is_empty() && !self.atomic_map() => self.new_fields(m),
            Value::Array(items) if !items.is_empty() => match self.list_kind(items) {
                ListKind::Atomic => Fields::default(),
                kind => self.new_items(items, &kind),
            },
            _ => Fields::default(),
        }
    }

    /// The new fields of the map at the current path and all below them.
    fn new_fields(&mut self, fields: &'v Map<String, Value>) -> Fields<'v> {
        let mut out = Fields::default();
        for (k, v) in fields {
            if self.is_managed_fields(k) {
                continue;
            }
            self.names.push(k);
            let below = self.all_below(v);
            self.names.pop();
            add(&mut out, Key::Field(k), true, below);
        }
        out
    }

    /// The new items of a keyed or set list at the current path and all
    /// below them; an item that is there more than once is owned whole.
    fn new_items(&mut self, items: &'v [Value], kind: &ListKind) -> Fields<'v> {
        let elements: Vec<Option<PathElement>> =
            items.iter().map(|item| kind.element(item)).collect();
        let runs = equal_runs(&elements);
        let mut out = Fields::default();
        for ((item, pe), run) in items.iter().zip(&elements).zip(runs) {
            let Some(pe) = pe else { continue };
            match run {
                Run::Alone => {
                    self.items += 1;
                    let below = self.all_below(item);
                    self.items -= 1;
                    add(&mut out, Key::Element(pe.serialize()), true, below);
                }
                // Added once, at its first occurrence: elements equal as
                // path elements may still be written differently, such as
                // `1` and `1.0`.
                Run::FirstOfMany => {
                    add(
                        &mut out,
                        Key::Element(pe.serialize()),
                        true,
                        Fields::default(),
                    );
                }
                Run::Repeat => {}
            }
        }
        out
    }

    /// The `FieldsV1` under `metadata` (the current path) of the typed
    /// `fields`, less `reset` (the reset fields under `metadata`): what
    /// [`Self::created`] finds in [`ObjectMeta::to_value`] against no base.
    /// The system fields (`name`, `namespace`, `uid`, `resourceVersion`,
    /// `generation`, `creationTimestamp`, `selfLink`) are scalars: nothing.
    fn typed_metadata(&mut self, fields: &TypedMeta<'v>, reset: Option<&FieldSet>) -> Fields<'v> {
        let meta = fields.meta;
        let mut out = Fields::default();
        let owned = |name: &str| reset.is_none_or(|r| !r.has_field(name));
        // Scalars: owned, nothing below them.
        for (name, set) in [
            ("generateName", !meta.generate_name.is_empty()),
            ("deletionTimestamp", meta.deletion_timestamp.is_some()),
            (
                "deletionGracePeriodSeconds",
                meta.deletion_grace_period_seconds.is_some(),
            ),
        ] {
            if set && owned(name) {
                add(&mut out, Key::Field(name), true, Fields::default());
            }
        }
        // Maps of strings: owned, and each of their keys but reset ones
        // (the whole map when it is atomic).
        for (name, map) in [("labels", &meta.labels), ("annotations", &meta.annotations)] {
            if map.is_empty() || !owned(name) {
                continue;
            }
            self.names.push(name);
            let mut below = Fields::default();
            if !self.atomic_map() {
                let reset = reset.and_then(|r| r.child_field(name));
                for key in map.keys() {
                    if reset.is_none_or(|r| !r.has_field(key)) {
                        below.members.push((Key::Field(key), Fields::default()));
                    }
                }
            }
            self.names.pop();
            add(&mut out, Key::Field(name), true, below);
        }
        // Lists: owned, their items as the schema says.
        for (name, list) in [
            ("ownerReferences", fields.owner_references),
            ("finalizers", fields.finalizers),
        ] {
            let Some(list) = list.filter(|_| owned(name)) else {
                continue;
            };
            self.names.push(name);
            let below = self.all_below(list);
            self.names.pop();
            add(&mut out, Key::Field(name), true, below);
        }
        out
    }
}

/// Adds the element `key` to the `FieldsV1` node `out`, owned itself
/// (`member`) or not, with `below` under it: `{}` for a member without
/// descendants, `"."` among the descendants of one with them; nothing for
/// neither. The walks add each element once.
fn add<'v>(out: &mut Fields<'v>, key: Key<'v>, member: bool, mut below: Fields<'v>) {
    if !member && below.is_empty() {
        return;
    }
    if member && !below.is_empty() {
        below.owned = true;
    }
    out.members.push((key, below));
}

/// Where a list element stands among the elements equal to it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Run {
    /// No other element equals it.
    Alone,
    /// The first of several equal elements.
    FirstOfMany,
    /// A later one of several equal elements.
    Repeat,
}

/// Each element's [`Run`] (`Repeat` for `None`, which is skipped): the
/// indexes sorted by element (stably, so each run starts at its first
/// occurrence) and read in runs, without copying an element.
fn equal_runs(elements: &[Option<PathElement>]) -> Vec<Run> {
    let mut runs = vec![Run::Repeat; elements.len()];
    let mut order: Vec<(usize, &PathElement)> = elements
        .iter()
        .enumerate()
        .filter_map(|(i, e)| Some((i, e.as_ref()?)))
        .collect();
    order.sort_by(|a, b| a.1.cmp(b.1));
    for run in order.chunk_by(|a, b| a.1 == b.1) {
        runs[run[0].0] = if run.len() == 1 {
            Run::Alone
        } else {
            Run::FirstOfMany
        };
    }
    runs
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::borrow::Cow;
    use std::sync::LazyLock;

    use apimachinery::object_meta::{DynamicObject, ManagedFieldsEntry, ZERO_TIME};
    use patch::{FieldMeta, PatchSchema};
    use proptest::prelude::*;
    use serde_json::json;

    use super::super::{
        Tracking, Writer, field_paths, record_dynamic, record_typed, record_update, update_entries,
    };
    use super::*;

    /// A run of equal elements is found whatever their places, `1` equals
    /// `1.0`, and a skipped (`None`) element is no one's equal.
    #[test]
    fn equal_runs_mark_the_first_of_equal_elements() {
        let v = |x: Value| Some(PathElement::Value(x));
        let elements = [
            v(json!("b")),
            v(json!(1)),
            None,
            v(json!("a")),
            v(json!(1.0)),
            v(json!("b")),
            v(json!(1)),
            None,
        ];
        use Run::{Alone, FirstOfMany, Repeat};
        assert_eq!(
            equal_runs(&elements),
            [
                FirstOfMany,
                FirstOfMany,
                Repeat,
                Alone,
                Repeat,
                Repeat,
                Repeat,
                Repeat
            ]
        );
        assert!(equal_runs(&[]).is_empty());
    }

    /// Schemas of several kinds, and ones that own metadata differently:
    /// nothing declared (finalizers and owner references atomic), atomic
    /// labels, owner references keyed by a field they may lack, an atomic
    /// `metadata`.
    static SCHEMAS: LazyLock<Vec<PatchSchema>> = LazyLock::new(|| {
        let mut odd = patch::common_schema();
        odd.declare(
            &["metadata", "labels"],
            FieldMeta {
                atomic_map: true,
                ..FieldMeta::default()
            },
        );
        odd.declare(
            &["metadata", "ownerReferences"],
            FieldMeta::merge("controller"),
        );
        let mut atomic_metadata = patch::common_schema();
        atomic_metadata.declare(
            &["metadata"],
            FieldMeta {
                atomic_map: true,
                ..FieldMeta::default()
            },
        );
        vec![
            patch::builtin_schema("", "v1", "ConfigMap"),
            patch::builtin_schema("", "v1", "Pod"),
            patch::builtin_schema("", "v1", "Service"),
            patch::builtin_schema("apps", "v1", "Deployment"),
            patch::common_schema(),
            PatchSchema::new(),
            odd,
            atomic_metadata,
        ]
    });

    /// Empty objects as types have them (Go's `New()` encoded, a custom
    /// resource's nothing), and ones the typed walk leaves to the plain way.
    fn bases() -> Vec<(Value, bool)> {
        let mut pod = json!({});
        crate::zero_fields::fill("", "v1", "Pod", &mut pod);
        let mut config_map = json!({});
        crate::zero_fields::fill("", "v1", "ConfigMap", &mut config_map);
        vec![
            (json!({}), true),
            (json!({"metadata": {}, "spec": {}, "status": {}}), true),
            (pod, true),
            (config_map, true),
            (json!({"metadata": null, "spec": null}), true),
            (
                json!({"metadata": {"creationTimestamp": null, "name": "", "generation": 0}}),
                true,
            ),
            (json!({"metadata": {"labels": {}}}), false),
            (json!({"metadata": "x"}), false),
            (json!([]), false),
        ]
    }

    fn resets() -> Vec<FieldSet> {
        vec![
            FieldSet::new(),
            field_paths(&[&["status"]]),
            field_paths(&[&["spec"], &["metadata", "labels"]]),
            field_paths(&[&["metadata"], &["spec"]]),
            field_paths(&[
                &["spec"],
                &["metadata", "deletionTimestamp"],
                &["metadata", "ownerReferences"],
            ]),
            field_paths(&[
                &["metadata", "labels", "a"],
                &["metadata", "annotations", "x"],
                &["metadata", "finalizers"],
                &["metadata", "generateName"],
                &["metadata", "name"],
            ]),
        ]
    }

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(""),
            Just("a"),
            Just("b"),
            Just("x<y"),
            Just("kubext-bench")
        ]
        .prop_map(String::from)
    }

    fn time() -> impl Strategy<Value = Option<String>> {
        prop::option::of(
            prop_oneof![Just(ZERO_TIME), Just("2026-01-01T00:00:00Z")].prop_map(String::from),
        )
    }

    fn owner_reference() -> impl Strategy<Value = OwnerReference> {
        (
            text(),
            text(),
            text(),
            prop_oneof![Just("1"), Just("2"), Just("")].prop_map(String::from),
            prop::option::of(any::<bool>()),
            prop::option::of(any::<bool>()),
        )
            .prop_map(
                |(api_version, kind, name, uid, controller, block_owner_deletion)| OwnerReference {
                    api_version,
                    kind,
                    name,
                    uid,
                    controller,
                    block_owner_deletion,
                },
            )
    }

    /// Metadata with every member set or not: labels, annotations,
    /// finalizers (duplicated ones too) and owner references (duplicated
    /// uids too) among them; no managedFields (the request's are beside it).
    fn object_meta() -> impl Strategy<Value = ObjectMeta> {
        let strings = || {
            prop::collection::btree_map(
                prop_oneof![Just("a"), Just("b"), Just("app"), Just("x")].prop_map(String::from),
                text(),
                0..3,
            )
        };
        (
            (
                text(),
                text(),
                text(),
                text(),
                text(),
                0i64..3,
                time(),
                time(),
            ),
            (
                prop::option::of(0i64..30),
                strings(),
                strings(),
                prop::collection::vec(owner_reference(), 0..3),
                prop::collection::vec(text(), 0..3),
            ),
        )
            .prop_map(
                |(
                    (
                        name,
                        generate_name,
                        namespace,
                        uid,
                        resource_version,
                        generation,
                        created,
                        deleted,
                    ),
                    (grace, labels, annotations, owner_references, finalizers),
                )| ObjectMeta {
                    name,
                    generate_name,
                    namespace,
                    self_link: String::new(),
                    uid,
                    resource_version,
                    generation,
                    creation_timestamp: created,
                    deletion_timestamp: deleted,
                    deletion_grace_period_seconds: grace,
                    labels,
                    annotations,
                    owner_references,
                    finalizers,
                    managed_fields: Vec::new(),
                },
            )
    }

    /// Bodies beside the metadata: keyed lists, sets, duplicates, scalars
    /// where maps are expected and the other way round, nested `metadata`
    /// (a template's), a top-level `managedFields` (walked: only
    /// `metadata`'s is nobody's).
    fn body() -> impl Strategy<Value = Value> {
        super::super::tests::nested_objects(
            &[
                "name",
                "containers",
                "ports",
                "containerPort",
                "protocol",
                "labels",
                "finalizers",
                "template",
                "metadata",
                "managedFields",
                "conditions",
                "type",
                "a",
            ],
            &[
                "spec",
                "status",
                "kind",
                "apiVersion",
                "data",
                "managedFields",
            ],
        )
    }

    /// The object as JSON: the metadata written out beside the body.
    fn whole(meta: &ObjectMeta, body: &Value) -> Value {
        let mut obj = body.clone();
        if let Some(map) = obj.as_object_mut() {
            map.insert(METADATA.into(), meta.to_value());
        }
        obj
    }

    /// A `FieldsV1` document as the encoder writes it: the walk's text must
    /// be these bytes (member order and escaping included).
    fn written(fields: &Value) -> Box<str> {
        let mut out = Vec::new();
        apimachinery::json::write_value(&mut out, fields);
        String::from_utf8(out).unwrap().into()
    }

    /// The plain way: the object compared with the base, the change
    /// credited to a writer without entries, its field set encoded.
    fn by_comparison(obj: &Value, base: &Value, tracking: &Tracking<'_>) -> Option<Value> {
        let mut entries = Vec::new();
        let cmp = tracking.compare(base, obj);
        update_entries(&mut entries, cmp, &Writer::new("m", "v1"), "T");
        entries.first().map(|e| e.fields.to_fields_v1())
    }

    proptest! {
        #[test]
        fn a_typed_create_records_what_the_comparison_records(
            meta in object_meta(),
            body in body(),
            schema in 0..SCHEMAS.len(),
        ) {
            let schema = &SCHEMAS[schema];
            let obj = whole(&meta, &body);
            for (base, typed) in bases() {
                for reset in resets() {
                    let fields = typed_fields_v1(schema, &base, &meta, &body, &reset);
                    prop_assert_eq!(fields.is_some(), typed, "base {}", base);
                    let tracking = Tracking { schema, reset: Cow::Owned(reset), empty: Some(&base) };
                    let Some(fields) = fields else { continue };
                    let want = by_comparison(&obj, &base, &tracking).map(|want| written(&want));
                    prop_assert_eq!(&fields, &want, "base {}, reset {:?}", base, tracking.reset);
                    let json = fields_v1(schema, base.as_object().unwrap(), obj.as_object().unwrap(), &tracking.reset);
                    prop_assert_eq!(json, want);
                }
            }
        }
    }

    /// The entries without their times (taken from the clock).
    fn timeless(mut entries: Vec<ManagedFieldsEntry>) -> Vec<ManagedFieldsEntry> {
        entries.iter_mut().for_each(|e| e.time = None);
        entries
    }

    /// What a registry write recorded before [`record_dynamic`]: the typed
    /// metadata written out beside the body, the request's managedFields in
    /// it, recorded as JSON.
    fn recorded_plainly(
        obj: &mut DynamicObject,
        request_managed: Option<Value>,
        live: Option<&Value>,
        writer: &Writer<'_>,
        tracking: &Tracking<'_>,
    ) -> Vec<ManagedFieldsEntry> {
        let mut metadata = obj.metadata.to_value();
        if let (Some(managed), Some(md)) = (request_managed, metadata.as_object_mut()) {
            md.insert("managedFields".into(), managed);
        }
        obj.insert(METADATA, metadata);
        let recorded = record_typed(obj, live, writer, tracking);
        obj.remove(METADATA);
        recorded.unwrap_or_default()
    }

    proptest! {
        /// Every write, create or not, whatever managedFields the request
        /// sent or the typed metadata holds, through the main resource or a
        /// subresource.
        #[test]
        fn a_dynamic_record_is_the_plain_one(
            meta in object_meta(),
            body in prop_oneof![4 => body(), 1 => Just(json!("x"))],
            schema in 0..SCHEMAS.len(),
            base in 0..9usize,
            reset in 0..6usize,
            request in 0..6usize,
            typed_managed in any::<bool>(),
            live in 0..3usize,
            subresource in prop_oneof![Just(""), Just("status")],
        ) {
            let mut previous = json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c", "labels": {"a": "x"}}, "data": {"k": "v"}});
            record_update(&mut previous, None, "old", "v1");
            let previous_managed = previous["metadata"]["managedFields"].clone();
            let untracked = json!({"metadata": {"name": "c"}, "data": {"k": "w"}});
            let request_managed = [
                None,
                Some(json!([])),
                Some(json!([{}])),
                Some(json!("x")),
                Some(json!([{"manager": 1}])),
                Some(previous_managed.clone()),
            ][request].clone();
            let live = [None, Some(&previous), Some(&untracked)][live];
            let base = bases().swap_remove(base).0;
            let tracking = Tracking {
                schema: &SCHEMAS[schema],
                reset: Cow::Owned(resets().swap_remove(reset)),
                empty: Some(&base),
            };
            let writer = Writer { manager: "m", api_version: "v1", subresource };
            let mut meta = meta;
            if typed_managed {
                meta.managed_fields = ManagedFieldsEntry::list_from_value(previous_managed);
            }
            let obj = DynamicObject { metadata: Box::new(meta), body };
            let mut plain = obj.clone();
            let want = recorded_plainly(&mut plain, request_managed.clone(), live, &writer, &tracking);
            let mut dynamic = obj;
            let got = record_dynamic(&mut dynamic, request_managed, live, &writer, &tracking);
            prop_assert_eq!(timeless(got), timeless(want));
            prop_assert_eq!(dynamic.body, plain.body);
        }
    }

    /// Paths deeper than the names kept on the stack: the schema is still
    /// looked up by all of them (an atomic map and a set list down there),
    /// and the stack is right again on the way back up.
    #[test]
    fn deep_paths_find_their_schema() {
        let depth = INLINE_NAMES + 4;
        let mut path = vec!["spec"];
        path.extend(std::iter::repeat_n("a", depth));
        let mut schema = PatchSchema::new();
        schema.declare(
            &[&path[..], &["atomic"]].concat(),
            FieldMeta {
                atomic_map: true,
                ..FieldMeta::default()
            },
        );
        schema.declare(&[&path[..], &["set"]].concat(), FieldMeta::merge(""));
        // The same shape below `spec` and `status`, whose path is one short
        // of the declarations: what the walk finds after climbing back.
        let mut deep = json!({"atomic": {"x": 1}, "set": ["p", "q"], "b": {"c": 1}});
        for _ in 0..depth {
            deep = json!({"a": deep});
        }
        let body = json!({"spec": deep.clone(), "status": deep, "z": {"y": 1}});
        let meta = ObjectMeta {
            labels: [("app".to_string(), "x".to_string())].into(),
            ..ObjectMeta::default()
        };
        let base = json!({});
        let reset = FieldSet::new();
        let tracking = Tracking {
            schema: &schema,
            reset: Cow::Owned(FieldSet::new()),
            empty: Some(&base),
        };
        let fields = typed_fields_v1(&schema, &base, &meta, &body, &reset).unwrap();
        let fields: Value = serde_json::from_str(&fields.unwrap()).unwrap();
        assert_eq!(
            Some(&fields),
            by_comparison(&whole(&meta, &body), &base, &tracking).as_ref()
        );
        let mut spec = &fields["f:spec"];
        let mut status = &fields["f:status"];
        for _ in 0..depth {
            (spec, status) = (&spec["f:a"], &status["f:a"]);
        }
        assert_eq!(spec["f:atomic"], json!({}));
        assert_eq!(
            spec["f:set"],
            json!({".": {}, "v:\"p\"": {}, "v:\"q\"": {}})
        );
        assert_eq!(status["f:atomic"], json!({".": {}, "f:x": {}}));
        assert_eq!(status["f:set"], json!({}));
    }

    /// The bench's ConfigMap, as a registry create holds it.
    #[test]
    fn a_config_map_create() {
        let schema = patch::builtin_schema("", "v1", "ConfigMap");
        let mut base = json!({});
        crate::zero_fields::fill("", "v1", "ConfigMap", &mut base);
        let meta = ObjectMeta {
            name: "c".into(),
            namespace: "default".into(),
            labels: [("app".to_string(), "kubext-bench".to_string())].into(),
            ..ObjectMeta::default()
        };
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"payload": "x"}});
        let fields = typed_fields_v1(&schema, &base, &meta, &body, &FieldSet::new()).unwrap();
        assert_eq!(
            fields.as_deref(),
            Some(
                r#"{"f:data":{".":{},"f:payload":{}},"f:metadata":{"f:labels":{".":{},"f:app":{}}}}"#
            )
        );
    }
}
