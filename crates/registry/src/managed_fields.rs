//! `metadata.managedFields` bookkeeping, with structured-merge-diff semantics
//! (sigs.k8s.io/structured-merge-diff v4.4, as vendored by kube-apiserver 1.32).
//!
//! A field set is upstream's `fieldpath.Set`: a tree of path elements where each
//! node may itself be a *member* (owned) or only lead to owned descendants. It is
//! encoded as `FieldsV1`:
//!
//! * `f:<name>` a field of a map or struct;
//! * `k:{"port":80}` an item of an associative list, by its merge key(s) (sorted);
//! * `v:"value"` an item of a set list (merge strategy without key, e.g. finalizers);
//! * `i:0` a list index (only parsed: never produced here);
//! * `"."` inside a node: the node is a member *and* has owned descendants;
//!   a member without descendants is just `{}`.
//!
//! List handling comes from the type's [`PatchMeta`], as structured-merge-diff
//! reads a schema: `x-kubernetes-list-type` (`map` keyed by its
//! `x-kubernetes-list-map-keys`, `set`, `atomic`), or without one the patch
//! strategy (`merge` with a merge key is an associative list, without a key a
//! set); anything else is atomic (a leaf). Maps are granular, like structs,
//! unless `x-kubernetes-map-type: atomic` (an atomic struct such as
//! `LabelSelector` or `OwnerReference`, a `RawExtension`) makes them leaves.
//!
//! This module records `Update` operations ([`record_update`]); server-side
//! apply lives in [`crate::apply`] and shares the representation.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use smol_str::SmolStr;

use apimachinery::object_meta::{DynamicObject, FieldsV1, ManagedFieldsEntry};
use apimachinery::time;
use patch::{FieldMeta, ListType, PatchMeta};
use serde_json::{Map, Value, json};

mod create;

/// Why `metadata.managedFields` (or a `FieldsV1` set in it) could not be
/// decoded. Never a client's error: upstream's field manager, as this one,
/// then starts again from the live object's entries.
#[derive(Debug, thiserror::Error)]
pub enum ManagedFieldsError {
    #[error("invalid path element {0:?}")]
    PathElement(String),
    #[error("invalid key path element {0:?}")]
    KeyPathElement(String),
    #[error("unknown path element type")]
    PathElementType,
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Index(#[from] std::num::ParseIntError),
    #[error("FieldsV1 must be an object")]
    FieldsV1NotAnObject,
    #[error("expected an object for {0:?}")]
    NotAnObject(String),
    #[error("operation must be `Apply` or `Update`")]
    Operation,
    #[error("apiVersion must not be empty")]
    EmptyApiVersion,
    #[error("missing fieldsType in managed fields entry")]
    MissingFieldsType,
    #[error("invalid fieldsType {0:?} in managed fields entry")]
    FieldsType(String),
    /// One of the entries, by its position.
    #[error("entry {index}: {source}")]
    Entry {
        index: usize,
        source: Box<ManagedFieldsError>,
    },
}

/// The manager upstream credits with everything an object had before its
/// first apply, when it carried no managedFields.
pub const BEFORE_FIRST_APPLY: &str = "before-first-apply";

// ---------------------------------------------------------------------------
// Path elements
// ---------------------------------------------------------------------------

/// One step of a field path (upstream's `fieldpath.PathElement`).
#[derive(Debug, Clone)]
pub enum PathElement {
    /// A field of a map or struct: `f:name`, shown as `.name` (most names
    /// are short enough to be kept inline: no allocation per path step).
    Field(SmolStr),
    /// An associative-list item by its key fields, sorted by name:
    /// `k:{"port":80}`, shown as `[port=80]`.
    Key(Vec<(String, Value)>),
    /// A set-list item by value: `v:"a"`, shown as `[="a"]`.
    Value(Value),
    /// A list item by index: `i:0`, shown as `[0]`.
    Index(usize),
}

impl PathElement {
    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }

    /// The `FieldsV1` key for this element (upstream's `SerializePathElement`).
    pub fn serialize(&self) -> String {
        match self {
            PathElement::Field(name) => {
                // Not `concat`: its generic join costs more than the copy.
                let mut out = String::with_capacity(2 + name.len());
                out.push_str("f:");
                out.push_str(name);
                out
            }
            PathElement::Key(fields) => {
                let mut out = b"k:{".to_vec();
                for (i, (k, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    apimachinery::json::write_str(&mut out, k);
                    out.push(b':');
                    apimachinery::json::write_value(&mut out, v);
                }
                out.push(b'}');
                String::from_utf8(out).unwrap_or_default()
            }
            PathElement::Value(v) => {
                let mut out = b"v:".to_vec();
                apimachinery::json::write_value(&mut out, v);
                String::from_utf8(out).unwrap_or_default()
            }
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    /// Parse a `FieldsV1` key (upstream's `DeserializePathElement`).
    pub fn parse(s: &str) -> Result<PathElement, ManagedFieldsError> {
        let (kind, rest) = s
            .split_once(':')
            .filter(|(k, _)| k.len() == 1)
            .ok_or_else(|| ManagedFieldsError::PathElement(s.to_string()))?;
        match kind {
            "f" => Ok(PathElement::Field(rest.into())),
            "v" => Ok(PathElement::Value(serde_json::from_str(rest)?)),
            "k" => match serde_json::from_str::<Value>(rest)? {
                Value::Object(m) => {
                    let mut fields: Vec<(String, Value)> = m.into_iter().collect();
                    fields.sort_by(|a, b| a.0.cmp(&b.0));
                    Ok(PathElement::Key(fields))
                }
                _ => Err(ManagedFieldsError::KeyPathElement(s.to_string())),
            },
            "i" => Ok(PathElement::Index(rest.parse()?)),
            _ => Err(ManagedFieldsError::PathElementType),
        }
    }
}

impl Ord for PathElement {
    /// Upstream's `PathElement.Compare`: fields < keys < values < indexes.
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.cmp(b),
            (PathElement::Key(a), PathElement::Key(b)) => {
                for ((an, av), (bn, bv)) in a.iter().zip(b) {
                    let c = an.cmp(bn).then_with(|| compare_values(av, bv));
                    if c != Ordering::Equal {
                        return c;
                    }
                }
                a.len().cmp(&b.len())
            }
            (PathElement::Value(a), PathElement::Value(b)) => compare_values(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

impl fmt::Display for PathElement {
    /// Upstream's `PathElement.String()`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(k, v)| format!("{k}={}", go_value_string(v)))
                    .collect();
                write!(f, "[{}]", parts.join(","))
            }
            PathElement::Value(v) => write!(f, "[={}]", go_value_string(v)),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// A path as upstream prints it: `.spec.ports[port=80].name`.
pub fn path_string(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

/// Upstream's `value.Compare`: numbers < strings < booleans < lists < maps < null.
fn compare_values(a: &Value, b: &Value) -> Ordering {
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Number(_) => 0,
            Value::String(_) => 1,
            Value::Bool(_) => 2,
            Value::Array(_) => 3,
            Value::Object(_) => 4,
            Value::Null => 5,
        }
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let int = |n: &serde_json::Number| {
                n.as_i64()
                    .map(i128::from)
                    .or_else(|| n.as_u64().map(i128::from))
            };
            match (int(x), int(y)) {
                (Some(i), Some(j)) => i.cmp(&j),
                _ => {
                    let (f, g) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
                    f.partial_cmp(&g).unwrap_or(Ordering::Equal)
                }
            }
        }
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (i, j) in x.iter().zip(y) {
                let c = compare_values(i, j);
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            for ((ik, iv), (jk, jv)) in x.iter().zip(y) {
                let c = ik.cmp(jk).then_with(|| compare_values(iv, jv));
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        _ => rank(a).cmp(&rank(b)),
    }
}

pub(crate) use apimachinery::gofmt::quote as go_quote;

use apimachinery::gofmt::format_float as go_float;

/// Upstream's `value.ToString`.
fn go_value_string(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Number(n) if n.is_f64() => go_float(n.as_f64().unwrap_or(0.0)),
        Value::Number(n) => n.to_string(),
        Value::String(s) => go_quote(s),
        Value::Bool(b) => b.to_string(),
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(go_value_string)
                .collect::<Vec<_>>()
                .join(",")
        ),
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| format!("{k}={}", go_value_string(v)))
            .collect(),
    }
}

// ---------------------------------------------------------------------------
// Field sets
// ---------------------------------------------------------------------------

/// A set of field paths (upstream's `fieldpath.Set`). Sorted vectors rather
/// than trees: sets are small (tens of paths), and every write builds some.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    /// Elements under this node that are themselves in the set, sorted.
    members: Vec<PathElement>,
    /// Non-empty sub-sets under elements of this node, sorted by element.
    children: Vec<(PathElement, FieldSet)>,
}

impl FieldSet {
    pub fn new() -> Self {
        Self::default()
    }

    /// A set of the given paths.
    pub fn from_paths<'a>(paths: impl IntoIterator<Item = &'a [PathElement]>) -> Self {
        let mut set = FieldSet::new();
        for p in paths {
            set.insert(p);
        }
        set
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    /// Add `path` (the empty path is not representable and is ignored).
    pub fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => self.insert_member(last),
            [first, rest @ ..] => self.child_mut(first).insert(rest),
        }
    }

    fn insert_member(&mut self, pe: &PathElement) {
        if let Err(at) = position(&self.members, pe, |m| m) {
            self.members.insert(at, pe.clone());
        }
    }

    /// The sub-set under `pe`, made (empty) if there is none yet.
    fn child_mut(&mut self, pe: &PathElement) -> &mut FieldSet {
        let at = match position(&self.children, pe, |(k, _)| k) {
            Ok(at) => at,
            Err(at) => {
                self.children.insert(at, (pe.clone(), FieldSet::new()));
                at
            }
        };
        &mut self.children[at].1
    }

    pub fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.has_member(last),
            [first, rest @ ..] => self.child(first).is_some_and(|c| c.has(rest)),
        }
    }

    /// Whether `pe` (one level down) is a member.
    pub fn has_member(&self, pe: &PathElement) -> bool {
        self.members.binary_search(pe).is_ok()
    }

    /// The sub-set under `pe`, if any path continues there.
    pub fn child(&self, pe: &PathElement) -> Option<&FieldSet> {
        self.children
            .binary_search_by(|(k, _)| k.cmp(pe))
            .ok()
            .map(|at| &self.children[at].1)
    }

    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.add(other);
        out
    }

    /// Add every path of `other` (an in-place [`FieldSet::union`]).
    pub fn add(&mut self, other: &FieldSet) {
        for pe in &other.members {
            self.insert_member(pe);
        }
        for (pe, sub) in &other.children {
            self.child_mut(pe).add(sub);
        }
    }

    /// [`FieldSet::add`] taking `other` by value: its elements and sub-sets
    /// are moved, not copied.
    fn absorb(&mut self, other: FieldSet) {
        if self.is_empty() {
            *self = other;
            return;
        }
        for pe in other.members {
            if let Err(at) = position(&self.members, &pe, |m| m) {
                self.members.insert(at, pe);
            }
        }
        for (pe, sub) in other.children {
            match position(&self.children, &pe, |(k, _)| k) {
                Ok(at) => self.children[at].1.absorb(sub),
                Err(at) => self.children.insert(at, (pe, sub)),
            }
        }
    }

    /// The paths of `self` that are not in `other` (exact paths: descendants
    /// of a path in `other` stay).
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.remove(other);
        out
    }

    /// Remove the paths of `other` (an in-place [`FieldSet::difference`]).
    /// Both sides are sorted: one pass over each, not a search per element.
    pub fn remove(&mut self, other: &FieldSet) {
        if other.is_empty() {
            return;
        }
        let mut theirs = Cursor::new(&other.members, |m| m);
        self.members.retain(|pe| theirs.seek(pe).is_none());
        let mut theirs = Cursor::new(&other.children, |(k, _)| k);
        self.children.retain_mut(|(pe, sub)| {
            if let Some((_, their_sub)) = theirs.seek(pe) {
                sub.remove(their_sub);
            }
            !sub.is_empty()
        });
    }

    /// Remove the paths of `prefixes` and everything below them (upstream's
    /// `RecursiveDifference`, what an `ExcludeSetFilter` of reset fields does).
    pub fn remove_below(&mut self, prefixes: &FieldSet) {
        if prefixes.is_empty() {
            return;
        }
        let mut theirs = Cursor::new(&prefixes.members, |m| m);
        self.members.retain(|pe| theirs.seek(pe).is_none());
        self.children.retain_mut(|(pe, sub)| {
            if prefixes.has_member(pe) {
                return false;
            }
            if let Some(below) = prefixes.child(pe) {
                sub.remove_below(below);
            }
            !sub.is_empty()
        });
    }

    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        FieldSet {
            members: self
                .members
                .iter()
                .filter(|pe| other.has_member(pe))
                .cloned()
                .collect(),
            children: self
                .children
                .iter()
                .filter_map(|(pe, sub)| {
                    let both = sub.intersection(other.child(pe)?);
                    (!both.is_empty()).then(|| (pe.clone(), both))
                })
                .collect(),
        }
    }

    /// Upstream's `EnsureNamedFieldsAreMembers`: fields with owned descendants
    /// count as owned themselves (struct fields upstream; every field here).
    pub fn ensure_named_fields_are_members(&self) -> FieldSet {
        let mut out = FieldSet {
            members: self.members.clone(),
            children: Vec::with_capacity(self.children.len()),
        };
        for (pe, sub) in &self.children {
            if matches!(pe, PathElement::Field(_)) {
                out.insert_member(pe);
            }
            out.children
                .push((pe.clone(), sub.ensure_named_fields_are_members()));
        }
        out
    }

    /// Every path, in upstream's iteration order (a node's members, then its
    /// children's paths).
    pub fn paths(&self) -> Vec<Vec<PathElement>> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<Vec<PathElement>>) {
        for pe in &self.members {
            let mut p = prefix.clone();
            p.push(pe.clone());
            out.push(p);
        }
        for (pe, sub) in &self.children {
            prefix.push(pe.clone());
            sub.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    /// Decode `FieldsV1` (upstream's `Set.FromJSON`).
    pub fn from_fields_v1(v: &Value) -> Result<FieldSet, ManagedFieldsError> {
        match v {
            Value::Object(m) => Ok(Self::read_v1(m)?.0),
            Value::Null => Ok(FieldSet::new()),
            _ => Err(ManagedFieldsError::FieldsV1NotAnObject),
        }
    }

    /// The set under one node, and whether the node itself is a member.
    fn read_v1(m: &Map<String, Value>) -> Result<(FieldSet, bool), ManagedFieldsError> {
        let mut set = FieldSet::new();
        let mut is_member = false;
        for (key, value) in m {
            if key == "." {
                is_member = true;
                continue;
            }
            let pe = PathElement::parse(key)?;
            let (sub, member) = match value {
                Value::Object(child) => Self::read_v1(child)?,
                _ => return Err(ManagedFieldsError::NotAnObject(key.clone())),
            };
            if member {
                set.insert_member(&pe);
            }
            if !sub.is_empty() {
                *set.child_mut(&pe) = sub;
            }
        }
        // A node with nothing under it is a member (`{}`).
        if set.is_empty() {
            is_member = true;
        }
        Ok((set, is_member))
    }

    /// Encode as `FieldsV1` (upstream's `Set.ToJSON`).
    pub fn to_fields_v1(&self) -> Value {
        Value::Object(self.write_v1(false))
    }

    fn write_v1(&self, include_self: bool) -> Map<String, Value> {
        // Inserted one by one: nodes are small, and a B-tree built from an
        // iterator first collects and sorts its items in a vector.
        let mut out = Map::new();
        if include_self && !self.is_empty() {
            out.insert(".".into(), Value::Object(Map::new()));
        }
        let mut children = Cursor::new(&self.children, |(k, _)| k);
        for pe in &self.members {
            if children.seek(pe).is_none() {
                out.insert(pe.serialize(), Value::Object(Map::new()));
            }
        }
        let mut members = Cursor::new(&self.members, |m| m);
        for (pe, sub) in &self.children {
            let member = members.seek(pe).is_some();
            out.insert(pe.serialize(), Value::Object(sub.write_v1(member)));
        }
        out
    }
}

impl FieldSet {
    /// An empty set with room for `members` members: what a walk over new
    /// values ([`Walker::all_below`]) starts from.
    fn with_member_capacity(members: usize) -> Self {
        FieldSet {
            members: Vec::with_capacity(members),
            children: Vec::new(),
        }
    }

    /// Adds `pe`, owned itself or not, and `below` it.
    fn add_new(&mut self, pe: PathElement, member: bool, below: Self) {
        if member && let Err(at) = position(&self.members, &pe, |m| m) {
            if below.is_empty() {
                self.members.insert(at, pe);
                return;
            }
            self.members.insert(at, pe.clone());
        }
        if below.is_empty() {
            return;
        }
        match position(&self.children, &pe, |(k, _)| k) {
            Ok(at) => self.children[at].1.absorb(below),
            Err(at) => self.children.insert(at, (pe, below)),
        }
    }

    /// Whether the field `name` (one level down) is a member: [`Self::has_member`]
    /// of a field without making its path element.
    fn has_field(&self, name: &str) -> bool {
        find_field(&self.members, name, |pe| pe).is_some()
    }

    /// The sub-set under the field `name`: [`Self::child`] of a field without
    /// making its path element.
    fn child_field(&self, name: &str) -> Option<&FieldSet> {
        find_field(&self.children, name, |(pe, _)| pe).map(|(_, sub)| sub)
    }
}

/// The item of sorted `items` whose element is the field `name`. The sets
/// asked (system and reset fields) are small: up to eight elements are
/// compared for equality, which compares lengths before bytes, rather
/// than ordered.
fn find_field<'s, T>(
    items: &'s [T],
    name: &str,
    key: impl Fn(&T) -> &PathElement,
) -> Option<&'s T> {
    let is = |item: &T| matches!(key(item), PathElement::Field(f) if f.as_str() == name);
    if items.len() <= 8 {
        return items.iter().find(|item| is(item));
    }
    // Fields come first, in name order.
    let order = |item: &T| match key(item) {
        PathElement::Field(f) => f.as_str().cmp(name),
        _ => Ordering::Greater,
    };
    items.binary_search_by(order).ok().map(|at| &items[at])
}

/// Where `pe` is (`Ok`) or would go (`Err`) in sorted `items`. Walks build
/// sets in order, so the end is tried before a binary search.
fn position<T>(
    items: &[T],
    pe: &PathElement,
    key: impl Fn(&T) -> &PathElement,
) -> Result<usize, usize> {
    match items.last().map(|last| key(last).cmp(pe)) {
        None | Some(Ordering::Less) => Err(items.len()),
        Some(Ordering::Equal) => Ok(items.len() - 1),
        Some(Ordering::Greater) => items.binary_search_by(|item| key(item).cmp(pe)),
    }
}

/// A forward-only lookup in a sorted slice, for elements asked for in
/// ascending order (a merge of two sorted sets).
struct Cursor<'s, T, K> {
    items: &'s [T],
    key: K,
}

impl<'s, T, K: Fn(&T) -> &PathElement> Cursor<'s, T, K> {
    fn new(items: &'s [T], key: K) -> Self {
        Cursor { items, key }
    }

    /// The item whose element is `pe`, skipping those before it.
    fn seek(&mut self, pe: &PathElement) -> Option<&'s T> {
        while let Some((first, rest)) = self.items.split_first() {
            match (self.key)(first).cmp(pe) {
                Ordering::Less => self.items = rest,
                Ordering::Equal => return Some(first),
                Ordering::Greater => return None,
            }
        }
        None
    }
}

/// The paths upstream never records for anyone (`stripMetaManager`).
pub fn system_fields() -> &'static FieldSet {
    static SYSTEM: std::sync::LazyLock<FieldSet> = std::sync::LazyLock::new(build_system_fields);
    &SYSTEM
}

fn build_system_fields() -> FieldSet {
    let field = |s: &str| PathElement::Field(s.into());
    let mut set = FieldSet::new();
    for top in ["apiVersion", "kind", "metadata"] {
        set.insert(&[field(top)]);
    }
    for md in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        set.insert(&[field("metadata"), field(md)]);
    }
    set
}

// ---------------------------------------------------------------------------
// Schema-driven walks
// ---------------------------------------------------------------------------

/// How a list's items are identified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ListKind {
    /// Replaced whole; owned as one leaf.
    Atomic,
    /// Associative list: items by the values of these key fields (a missing
    /// one counts as its default).
    Keyed(Vec<(String, Option<Value>)>),
    /// Set of scalars: items by value.
    Set,
}

impl ListKind {
    /// The path element of one item (`None` for atomic lists).
    pub(crate) fn element(&self, item: &Value) -> Option<PathElement> {
        match self {
            ListKind::Atomic => None,
            ListKind::Keyed(keys) => {
                // Upstream keeps key fields sorted by name.
                let mut fields: Vec<(String, Value)> = keys
                    .iter()
                    .map(|(k, default)| {
                        let value = item.get(k).or(default.as_ref());
                        (k.clone(), value.cloned().unwrap_or(Value::Null))
                    })
                    .collect();
                fields.sort_by(|a, b| a.0.cmp(&b.0));
                Some(PathElement::Key(fields))
            }
            ListKind::Set => Some(PathElement::Value(item.clone())),
        }
    }
}

/// The kind of a list the schema describes as `meta`, given its values on
/// each side ([`Walker::list_kind`]). Items that cannot be keyed as the
/// schema says make the list atomic.
pub(crate) fn list_kind_of(meta: Option<&FieldMeta>, lists: &[&[Value]]) -> ListKind {
    let Some(meta) = meta else {
        return ListKind::Atomic;
    };
    let mut items = lists.iter().flat_map(|l| l.iter());
    let keys: Vec<(String, Option<Value>)> = match meta.apply_list_type() {
        ListType::Atomic => return ListKind::Atomic,
        ListType::Set => Vec::new(),
        ListType::Map => meta
            .list_keys()
            .into_iter()
            .map(|k| {
                let default = meta.key_default(&k).cloned();
                (k, default)
            })
            .collect(),
    };
    if keys.is_empty() {
        if meta.apply_list_type() == ListType::Set && items.all(|i| !i.is_object() && !i.is_array())
        {
            ListKind::Set
        } else {
            ListKind::Atomic
        }
    } else if items.all(|i| {
        i.as_object().is_some_and(|o| {
            keys.iter()
                .all(|(k, default)| default.is_some() || o.contains_key(k))
        })
    }) {
        ListKind::Keyed(keys)
    } else {
        ListKind::Atomic
    }
}

/// Walks values alongside their field path; the schema is looked up by the
/// path's field names (list items transparent, as [`PatchMeta`] expects).
pub(crate) struct Walker<'a> {
    schema: &'a dyn PatchMeta,
    pub(crate) path: Vec<PathElement>,
}

impl<'a> Walker<'a> {
    pub(crate) fn new(schema: &'a dyn PatchMeta) -> Self {
        Walker {
            schema,
            path: Vec::new(),
        }
    }

    pub(crate) fn push_field(&mut self, name: &str) {
        self.path.push(PathElement::Field(name.into()));
    }

    pub(crate) fn pop_field(&mut self) {
        self.path.pop();
    }

    /// The kind of the list at the current field, given its values on each side.
    /// Items that cannot be keyed as the schema says make the list atomic.
    pub(crate) fn list_kind(&self, lists: &[&[Value]]) -> ListKind {
        list_kind_of(self.meta(), lists)
    }

    /// The schema's metadata at the current path: looked up by its field
    /// names, gathered on the stack (this runs for every map and list of
    /// every write).
    fn meta(&self) -> Option<&'a FieldMeta> {
        const DEPTH: usize = 32;
        let mut names = [""; DEPTH];
        let mut fields = self.path.iter().filter_map(|pe| match pe {
            PathElement::Field(name) => Some(name.as_str()),
            _ => None,
        });
        let mut depth = 0;
        for (slot, name) in names.iter_mut().zip(fields.by_ref()) {
            *slot = name;
            depth += 1;
        }
        match fields.next() {
            None => self.schema.find(&names[..depth]),
            // Deeper than any schema seen: gathered on the heap.
            Some(more) => {
                let mut deep = names.to_vec();
                deep.push(more);
                deep.extend(fields);
                self.schema.find(&deep)
            }
        }
    }

    /// Whether the map at the current field is atomic (`x-kubernetes-map-type:
    /// atomic`): replaced and owned whole.
    pub(crate) fn atomic_map(&self) -> bool {
        self.meta().is_some_and(|m| m.atomic_map)
    }

    // --- ToFieldSet ---------------------------------------------------------

    fn fields_of_map(&mut self, m: &Map<String, Value>, set: &mut FieldSet) {
        for (k, v) in m {
            self.push_field(k);
            match v {
                // Struct-like: owned through its fields.
                Value::Object(child) if !child.is_empty() && !self.atomic_map() => {
                    self.fields_of_map(child, set)
                }
                Value::Array(items) => match self.list_kind(&[items]) {
                    ListKind::Atomic => set.insert(&self.path),
                    kind => self.fields_of_list(items, &kind, set),
                },
                // Scalars, null and empty maps are leaves.
                _ => set.insert(&self.path),
            }
            self.pop_field();
        }
    }

    fn fields_of_list(&mut self, items: &[Value], kind: &ListKind, set: &mut FieldSet) {
        let mut seen = BTreeSet::new();
        let mut duplicates = BTreeSet::new();
        for item in items {
            if let Some(pe) = kind.element(item)
                && !seen.insert(pe.clone())
            {
                duplicates.insert(pe);
            }
        }
        // Duplicated items are owned whole (upstream: no descent).
        for pe in &duplicates {
            self.path.push(pe.clone());
            set.insert(&self.path);
            self.path.pop();
        }
        for item in items {
            let Some(pe) = kind.element(item) else {
                continue;
            };
            if duplicates.contains(&pe) {
                continue;
            }
            self.path.push(pe);
            // An item that is an atomic map (an owner reference) is owned
            // whole, as its list's other items are.
            if let Value::Object(m) = item
                && !self.atomic_map()
            {
                self.fields_of_map(m, set);
            }
            set.insert(&self.path);
            self.path.pop();
        }
    }

    // --- Compare ------------------------------------------------------------

    fn compare_leaf(&self, l: Option<&Value>, r: Option<&Value>, cmp: &mut Comparison) {
        match (l, r) {
            (None, Some(_)) => cmp.added.insert(&self.path),
            (Some(_), None) => cmp.removed.insert(&self.path),
            (Some(a), Some(b)) if a != b => cmp.modified.insert(&self.path),
            _ => {}
        }
    }

    /// Added/removed for a granular node (upstream's tail of `compare`).
    fn compare_tail(&self, l: Option<&Value>, r: Option<&Value>, cmp: &mut Comparison) {
        if l.is_none() {
            cmp.added.insert(&self.path);
        } else if r.is_none() {
            cmp.removed.insert(&self.path);
        }
    }

    pub(crate) fn compare(&mut self, l: Option<&Value>, r: Option<&Value>, cmp: &mut Comparison) {
        if let (None, Some(new)) = (l, r) {
            return self.compare_new(new, cmp);
        }
        let container = |v: Option<&Value>| v.is_some_and(|v| v.is_object() || v.is_array());
        if (l.is_some_and(Value::is_object) || r.is_some_and(Value::is_object)) && self.atomic_map()
        {
            return self.compare_leaf(l, r, cmp);
        }
        match (l, r) {
            (None, None) => {}
            (Some(Value::Object(a)), Some(Value::Object(b))) => {
                self.compare_maps(Some(a), Some(b), l, r, cmp)
            }
            (Some(Value::Object(a)), None) => self.compare_maps(Some(a), None, l, r, cmp),
            (None, Some(Value::Object(b))) => self.compare_maps(None, Some(b), l, r, cmp),
            (Some(Value::Array(a)), Some(Value::Array(b))) => {
                self.compare_lists(Some(a), Some(b), l, r, cmp)
            }
            (Some(Value::Array(a)), None) => self.compare_lists(Some(a), None, l, r, cmp),
            (None, Some(Value::Array(b))) => self.compare_lists(None, Some(b), l, r, cmp),
            // Null is an empty map or list of whatever type the other side
            // has (upstream's typed values: a Go nil slice or pointer): what
            // the other side holds is added or removed, the node itself
            // neither (its `"."` stays unset), unless both are empty.
            (Some(Value::Null), Some(Value::Object(b))) => {
                self.compare_maps(None, Some(b), l, r, cmp)
            }
            (Some(Value::Object(a)), Some(Value::Null)) => {
                self.compare_maps(Some(a), None, l, r, cmp)
            }
            (Some(Value::Null), Some(Value::Array(b))) => {
                self.compare_lists(None, Some(b), l, r, cmp)
            }
            (Some(Value::Array(a)), Some(Value::Null)) => {
                self.compare_lists(Some(a), None, l, r, cmp)
            }
            (Some(a), Some(b)) if container(l) || container(r) => {
                // Different kinds of value: the node changed; the sides'
                // contents are removed and added.
                cmp.modified.insert(&self.path);
                self.compare_contents(a, true, cmp);
                self.compare_contents(b, false, cmp);
            }
            _ => self.compare_leaf(l, r, cmp),
        }
    }

    /// A node only the new side has (every field of a create): it and all
    /// below it are added. The set below it is built bottom-up and placed
    /// once, instead of each path being inserted from the root.
    fn compare_new(&mut self, new: &Value, cmp: &mut Comparison) {
        let below: FieldSet = self.all_below(new);
        cmp.added.insert(&self.path);
        self.add_below(below, &mut cmp.added);
    }

    /// Adds `below` to `set` under the current path, walking there once.
    fn add_below(&self, below: FieldSet, set: &mut FieldSet) {
        if below.is_empty() {
            return;
        }
        self.path
            .iter()
            .fold(set, |set, pe| set.child_mut(pe))
            .absorb(below);
    }

    /// The paths of new `fields` of the map at the current path and all
    /// below them. Map keys come sorted, as the set keeps its fields: each
    /// is added at the end.
    fn new_fields<'m>(
        &mut self,
        fields: impl Iterator<Item = (&'m String, &'m Value)>,
    ) -> FieldSet {
        let mut set = FieldSet::with_member_capacity(fields.size_hint().1.unwrap_or(0));
        for (k, v) in fields {
            if self.is_managed_fields(k) {
                continue;
            }
            self.push_field(k);
            let below = self.all_below(v);
            if let Some(pe) = self.path.pop() {
                set.add_new(pe, true, below);
            }
        }
        set
    }

    /// Every path below the new node `v` at the current path, as
    /// [`Walker::compare`] finds them against nothing: the fields of a
    /// granular map, the items of a keyed or set list (a duplicated item whole,
    /// without its fields); atomic maps and lists, scalars and empty
    /// containers have none.
    fn all_below(&mut self, v: &Value) -> FieldSet {
        match v {
            Value::Object(m) if !m.is_empty() && !self.atomic_map() => self.new_fields(m.iter()),
            Value::Array(items) if !items.is_empty() => match self.list_kind(&[items]) {
                ListKind::Atomic => FieldSet::new(),
                kind => self.new_items(items, &kind),
            },
            _ => FieldSet::new(),
        }
    }

    /// The paths of the new items of a keyed or set list at the current path
    /// and all below them; an item that is there more than once is owned
    /// whole.
    fn new_items(&mut self, items: &[Value], kind: &ListKind) -> FieldSet {
        let mut seen: BTreeMap<PathElement, usize> = BTreeMap::new();
        let elements: Vec<Option<PathElement>> = items
            .iter()
            .map(|item| {
                let pe = kind.element(item)?;
                *seen.entry(pe.clone()).or_default() += 1;
                Some(pe)
            })
            .collect();
        let mut set = FieldSet::with_member_capacity(items.len());
        for (item, pe) in items.iter().zip(elements) {
            let Some(pe) = pe else { continue };
            match seen.get_mut(&pe) {
                Some(1) => {}
                // Added once, at its first occurrence (its count then
                // cleared): elements equal as path elements may still be
                // written differently, such as `1` and `1.0`.
                Some(count) => {
                    if *count > 1 {
                        *count = 0;
                        set.add_new(pe, true, FieldSet::new());
                    }
                    continue;
                }
                None => continue,
            }
            self.path.push(pe);
            let below = self.all_below(item);
            if let Some(pe) = self.path.pop() {
                set.add_new(pe, true, below);
            }
        }
        set
    }

    /// The contents of one side of a node whose kind changed: all removed
    /// (old side) or all added (new side).
    fn compare_contents(&mut self, v: &Value, old_side: bool, cmp: &mut Comparison) {
        match v {
            Value::Object(m) if !m.is_empty() => {
                let (a, b) = if old_side {
                    (Some(m), None)
                } else {
                    (None, Some(m))
                };
                self.compare_map_items(a, b, cmp);
            }
            Value::Array(items) if !items.is_empty() => {
                let kind = self.list_kind(&[items]);
                if kind != ListKind::Atomic {
                    let (a, b): (&[Value], &[Value]) =
                        if old_side { (items, &[]) } else { (&[], items) };
                    self.compare_list_items(a, b, &kind, cmp);
                }
            }
            _ => {}
        }
    }

    fn compare_maps(
        &mut self,
        a: Option<&Map<String, Value>>,
        b: Option<&Map<String, Value>>,
        l: Option<&Value>,
        r: Option<&Value>,
        cmp: &mut Comparison,
    ) {
        if a.is_none_or(Map::is_empty) && b.is_none_or(Map::is_empty) {
            return self.compare_leaf(l, r, cmp);
        }
        self.compare_map_items(a, b, cmp);
        self.compare_tail(l, r, cmp);
    }

    fn compare_map_items(
        &mut self,
        a: Option<&Map<String, Value>>,
        b: Option<&Map<String, Value>>,
        cmp: &mut Comparison,
    ) {
        let empty = Map::new();
        let (a, b) = (a.unwrap_or(&empty), b.unwrap_or(&empty));
        for (k, av) in a {
            if self.is_managed_fields(k) {
                continue;
            }
            self.push_field(k);
            self.compare(Some(av), b.get(k), cmp);
            self.pop_field();
        }
        // The new fields (a create's all, but for type meta) are gathered
        // here and added once.
        let new_fields: FieldSet = self.new_fields(b.iter().filter(|(k, _)| !a.contains_key(*k)));
        self.add_below(new_fields, &mut cmp.added);
    }

    /// Whether `key` under the current path is `metadata.managedFields`:
    /// never compared, since it is nobody's field (a system field, an atomic
    /// list), so callers need not copy objects to leave it out.
    fn is_managed_fields(&self, key: &str) -> bool {
        key == "managedFields"
            && matches!(self.path.as_slice(), [PathElement::Field(f)] if f == "metadata")
    }

    fn compare_lists(
        &mut self,
        a: Option<&Vec<Value>>,
        b: Option<&Vec<Value>>,
        l: Option<&Value>,
        r: Option<&Value>,
        cmp: &mut Comparison,
    ) {
        let (a, b): (&[Value], &[Value]) = (a.map_or(&[], |v| v), b.map_or(&[], |v| v));
        let kind = self.list_kind(&[a, b]);
        if kind == ListKind::Atomic || (a.is_empty() && b.is_empty()) {
            return self.compare_leaf(l, r, cmp);
        }
        self.compare_list_items(a, b, &kind, cmp);
        self.compare_tail(l, r, cmp);
    }

    fn compare_list_items<'v>(
        &mut self,
        a: &'v [Value],
        b: &'v [Value],
        kind: &ListKind,
        cmp: &mut Comparison,
    ) {
        // Each item's element is made once; the maps borrow them.
        let elements = |items: &'v [Value]| -> Vec<(PathElement, &'v Value)> {
            items
                .iter()
                .filter_map(|item| Some((kind.element(item)?, item)))
                .collect()
        };
        let (a_elements, b_elements) = (elements(a), elements(b));
        let mut order: Vec<&PathElement> = Vec::new();
        let mut left: BTreeMap<&PathElement, Vec<&Value>> = BTreeMap::new();
        let mut right: BTreeMap<&PathElement, Vec<&Value>> = BTreeMap::new();
        for (pe, item) in &a_elements {
            let slot = left.entry(pe).or_default();
            if slot.is_empty() {
                order.push(pe);
            }
            slot.push(item);
        }
        for (pe, item) in &b_elements {
            let slot = right.entry(pe).or_default();
            if slot.is_empty() && !left.contains_key(pe) {
                order.push(pe);
            }
            slot.push(item);
        }
        for pe in order {
            let ls = left.get(pe).map(Vec::as_slice).unwrap_or(&[]);
            let rs = right.get(pe).map(Vec::as_slice).unwrap_or(&[]);
            self.path.push(pe.clone());
            match (ls.len(), rs.len()) {
                (0..=1, 0..=1) => self.compare(ls.first().copied(), rs.first().copied(), cmp),
                (2.., 2..) => {
                    if ls != rs {
                        cmp.modified.insert(&self.path);
                    }
                }
                (2.., _) => {
                    if let Some(r) = rs.first() {
                        self.compare(None, Some(r), cmp);
                    }
                    cmp.removed.insert(&self.path);
                }
                (_, _) => {
                    if let Some(l) = ls.first() {
                        self.compare(Some(l), None, cmp);
                    }
                    cmp.added.insert(&self.path);
                }
            }
            self.path.pop();
        }
    }
}

/// The fields an object (an applied configuration) sets, as upstream's
/// `TypedValue.ToFieldSet`. Includes system fields; see [`system_fields`].
pub fn field_set_of(obj: &Value, schema: &dyn PatchMeta) -> FieldSet {
    let mut set = FieldSet::new();
    if let Value::Object(m) = obj {
        Walker::new(schema).fields_of_map(m, &mut set);
    }
    set
}

/// What changed between two versions of an object (upstream's `Comparison`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Comparison {
    /// Paths only in the new object; granular nodes (maps, keyed items) that
    /// appeared are members too, which is where `"."` comes from.
    pub added: FieldSet,
    /// Leaves (scalars, atomic lists) whose value changed.
    pub modified: FieldSet,
    /// Paths only in the old object.
    pub removed: FieldSet,
}

impl Comparison {
    /// Without `reset` and what is below it (upstream's `FilterFields` with
    /// the strategy's reset fields): changes there are nobody's.
    pub fn remove_below(&mut self, reset: &FieldSet) {
        self.added.remove_below(reset);
        self.modified.remove_below(reset);
        self.removed.remove_below(reset);
    }
}

/// Compare two objects field by field, lists as `schema` says.
pub fn compare(old: &Value, new: &Value, schema: &dyn PatchMeta) -> Comparison {
    let mut cmp = Comparison::default();
    Walker::new(schema).compare(Some(old), Some(new), &mut cmp);
    cmp
}

/// What upstream's field manager knows of the type whose writes it tracks.
pub struct Tracking<'a> {
    /// How lists and maps are owned.
    pub schema: &'a (dyn PatchMeta + Sync),
    /// The fields the write's strategy resets (upstream's `GetResetFields`:
    /// `status` through the main resource of a kind with a status
    /// subresource, `spec` through `/status`): never credited, and changing
    /// them takes nothing from other managers.
    pub reset: Cow<'a, FieldSet>,
    /// What an empty object of the type (upstream's `New()`) encodes to:
    /// what a create, and the fields an object had before its first apply,
    /// are compared against. `None`: [`empty_object`] of the object.
    pub empty: Option<&'a Value>,
}

impl<'a> Tracking<'a> {
    /// Tracking by `schema` alone: no reset fields, [`empty_object`] as
    /// the empty object.
    pub fn new(schema: &'a (dyn PatchMeta + Sync)) -> Self {
        Tracking {
            schema,
            reset: Cow::Owned(FieldSet::new()),
            empty: None,
        }
    }

    /// What an empty object of the type looks like, beside `obj`.
    pub(crate) fn empty_beside(&self, obj: &Value) -> Cow<'a, Value> {
        match self.empty {
            Some(empty) => Cow::Borrowed(empty),
            None => Cow::Owned(empty_object(obj)),
        }
    }

    /// The change from `old` to `new`, reset fields left out.
    pub(crate) fn compare(&self, old: &Value, new: &Value) -> Comparison {
        let mut cmp = compare(old, new, self.schema);
        cmp.remove_below(&self.reset);
        cmp
    }
}

/// The paths `paths` (each a list of field names) as a set: reset fields.
pub fn field_paths(paths: &[&[&str]]) -> FieldSet {
    let mut set = FieldSet::new();
    for path in paths {
        let path: Vec<PathElement> = path
            .iter()
            .map(|name| PathElement::Field((*name).into()))
            .collect();
        set.insert(&path);
    }
    set
}

// ---------------------------------------------------------------------------
// Managed fields entries
// ---------------------------------------------------------------------------

/// One decoded `metadata.managedFields` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ManagedEntry {
    pub manager: String,
    /// `Apply` or `Update`.
    pub operation: String,
    pub api_version: String,
    pub subresource: String,
    pub time: Option<String>,
    pub fields: FieldSet,
}

impl ManagedEntry {
    pub fn is_apply(&self) -> bool {
        self.operation == "Apply"
    }

    /// Upstream's `BuildManagerIdentifier`: who owns a field set. Appliers are
    /// identified regardless of apiVersion; updaters per apiVersion.
    pub fn identifier(&self) -> String {
        manager_identifier(
            &self.manager,
            &self.operation,
            &self.api_version,
            &self.subresource,
        )
    }

    /// How conflicts name this manager (upstream's `printManager`):
    /// `"m"`, `"m" using v1`, `"m" with subresource "status" using v1`.
    pub fn describe(&self) -> String {
        describe_manager(
            &self.manager,
            &self.operation,
            &self.api_version,
            &self.subresource,
        )
    }

    pub fn from_json(v: &Value) -> Result<ManagedEntry, ManagedFieldsError> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let operation = s("operation");
        if operation != "Apply" && operation != "Update" {
            return Err(ManagedFieldsError::Operation);
        }
        let api_version = s("apiVersion");
        if api_version.is_empty() {
            return Err(ManagedFieldsError::EmptyApiVersion);
        }
        match s("fieldsType").as_str() {
            "FieldsV1" => {}
            "" => return Err(ManagedFieldsError::MissingFieldsType),
            other => return Err(ManagedFieldsError::FieldsType(other.to_string())),
        }
        Ok(ManagedEntry {
            manager: s("manager"),
            operation,
            api_version,
            subresource: s("subresource"),
            time: v.get("time").and_then(Value::as_str).map(String::from),
            fields: FieldSet::from_fields_v1(v.get("fieldsV1").unwrap_or(&Value::Null))?,
        })
    }

    pub fn to_json(&self) -> Value {
        entry_json(
            &self.manager,
            &self.operation,
            &self.api_version,
            self.time.as_deref(),
            &self.subresource,
            self.fields.to_fields_v1(),
        )
    }

    /// The entry as typed metadata holds it ([`ManagedEntry::to_json`]'s
    /// members).
    pub fn to_typed(&self) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            manager: self.manager.clone(),
            operation: self.operation.clone(),
            api_version: self.api_version.clone(),
            time: self.time.clone(),
            fields_type: "FieldsV1".into(),
            fields_v1: Some(FieldsV1::Value(self.fields.to_fields_v1())),
            subresource: self.subresource.clone(),
        }
    }
}

/// A `metadata.managedFields` entry, members as upstream writes them.
fn entry_json(
    manager: &str,
    operation: &str,
    api_version: &str,
    time: Option<&str>,
    subresource: &str,
    fields_v1: Value,
) -> Value {
    let text = |name: &str, value: &str| (name.to_string(), Value::String(value.to_string()));
    let mut members = Vec::with_capacity(7);
    if !manager.is_empty() {
        members.push(text("manager", manager));
    }
    members.push(text("operation", operation));
    members.push(text("apiVersion", api_version));
    if let Some(t) = time {
        members.push(text("time", t));
    }
    members.push(text("fieldsType", "FieldsV1"));
    members.push(("fieldsV1".into(), fields_v1));
    if !subresource.is_empty() {
        members.push(text("subresource", subresource));
    }
    Value::Object(Map::from_iter(members))
}

pub(crate) fn manager_identifier(
    manager: &str,
    operation: &str,
    api_version: &str,
    subresource: &str,
) -> String {
    let mut out = b"{".to_vec();
    let mut field = |k: &str, v: &str| {
        if !v.is_empty() {
            if out.len() > 1 {
                out.push(b',');
            }
            for part in [b"\"", k.as_bytes(), b"\":"] {
                out.extend_from_slice(part);
            }
            apimachinery::json::write_str(&mut out, v);
        }
    };
    field("manager", manager);
    field("operation", operation);
    field(
        "apiVersion",
        if operation == "Apply" {
            ""
        } else {
            api_version
        },
    );
    field("subresource", subresource);
    out.push(b'}');
    String::from_utf8(out).unwrap_or_default()
}

pub(crate) fn describe_manager(
    manager: &str,
    operation: &str,
    api_version: &str,
    subresource: &str,
) -> String {
    let mut s = go_quote(manager);
    if !subresource.is_empty() {
        s = format!("{s} with subresource {}", go_quote(subresource));
    }
    if operation == "Update" {
        s = format!("{s} using {api_version}");
    }
    s
}

/// Decode `metadata.managedFields` (upstream's `DecodeManagedFields`); a later
/// entry with the same identifier replaces an earlier one.
pub fn decode_managed_fields(entries: &[Value]) -> Result<Vec<ManagedEntry>, ManagedFieldsError> {
    let mut out: Vec<ManagedEntry> = Vec::with_capacity(entries.len());
    for (index, e) in entries.iter().enumerate() {
        let entry = ManagedEntry::from_json(e).map_err(|err| ManagedFieldsError::Entry {
            index,
            source: Box::new(err),
        })?;
        let id = entry.identifier();
        match out.iter_mut().find(|x| x.identifier() == id) {
            Some(existing) => *existing = entry,
            None => out.push(entry),
        }
    }
    Ok(out)
}

/// Encode entries in upstream's order (operation, time, manager, apiVersion,
/// subresource), dropping empty field sets.
pub fn encode_managed_fields(entries: Vec<ManagedEntry>) -> Vec<Value> {
    ordered(entries).iter().map(ManagedEntry::to_json).collect()
}

/// The entries written: the empty ones dropped, the rest in upstream's order
/// (operation, time, manager, apiVersion, subresource).
fn ordered(mut entries: Vec<ManagedEntry>) -> Vec<ManagedEntry> {
    entries.retain(|e| !e.fields.is_empty());
    let seconds = |e: &ManagedEntry| {
        e.time
            .as_deref()
            .and_then(time::parse)
            .map_or(0, |t| t.as_second())
    };
    entries.sort_by(|p, q| {
        p.operation
            .cmp(&q.operation)
            .then_with(|| seconds(p).cmp(&seconds(q)))
            .then_with(|| p.manager.cmp(&q.manager))
            .then_with(|| p.api_version.cmp(&q.api_version))
            .then_with(|| p.subresource.cmp(&q.subresource))
    });
    entries
}

/// Replace `metadata.managedFields` with `entries` (removed when none are left).
pub fn set_managed_fields(obj: &mut Value, entries: Vec<ManagedEntry>) {
    let encoded = encode_managed_fields(entries);
    let md = apimachinery::meta::metadata_mut(obj);
    if encoded.is_empty() {
        md.remove("managedFields");
    } else {
        md.insert("managedFields".into(), Value::Array(encoded));
    }
}

/// The managedFields of `obj` decoded; errors and absence are `None`.
pub(crate) fn managed_of(obj: &Value) -> Option<Result<Vec<ManagedEntry>, ManagedFieldsError>> {
    managed_fields_of(obj)
        .and_then(Value::as_array)
        .map(|a| decode_managed_fields(a))
}

/// `metadata.managedFields`, looked up without parsing a JSON pointer.
fn managed_fields_of(obj: &Value) -> Option<&Value> {
    obj.get("metadata")?.get("managedFields")
}

/// Upstream's `isResetManagedFields`: `[]` or `[{}]` clears managedFields.
fn is_reset(v: Option<&Value>) -> bool {
    match v.and_then(Value::as_array).map(Vec::as_slice) {
        Some([]) => true,
        Some([Value::Object(only)]) => only.values().all(|v| v.is_null() || v.as_str() == Some("")),
        _ => false,
    }
}

/// What an empty object of the type looks like, to compare a create against
/// (upstream compares with `New()`, whose non-pointer structs serialize as `{}`;
/// this assumes built-in-style `metadata`, `spec` and `status` structs).
pub fn empty_object(obj: &Value) -> Value {
    let mut m = Map::new();
    m.insert("metadata".into(), json!({}));
    for k in ["spec", "status"] {
        if obj.get(k).is_some_and(Value::is_object) {
            m.insert(k.into(), json!({}));
        }
    }
    Value::Object(m)
}

/// Credit `manager`'s Update (upstream's `Updater.Update` through the
/// `managedFieldsUpdater`): the changed fields leave every other set, removed
/// fields leave all sets, and the manager's entry gains the change.
pub(crate) fn update_entries(
    entries: &mut Vec<ManagedEntry>,
    cmp: Comparison,
    writer: &Writer<'_>,
    now: &str,
) {
    // Most writes add more than they modify: the larger set is kept.
    let mut touched = cmp.added;
    touched.absorb(cmp.modified);
    for e in entries.iter_mut() {
        e.fields.remove(&touched);
        e.fields.remove(&cmp.removed);
    }
    entries.retain(|e| !e.fields.is_empty());
    let mut current = touched;
    current.remove(system_fields());
    if current.is_empty() {
        return;
    }
    // A create has no entries to search: no identifier to build.
    let id = (!entries.is_empty()).then(|| {
        manager_identifier(
            writer.manager,
            "Update",
            writer.api_version,
            writer.subresource,
        )
    });
    match entries
        .iter_mut()
        .find(|e| id.as_deref() == Some(e.identifier().as_str()))
    {
        Some(e) => {
            e.fields.add(&current);
            e.time = Some(now.to_string());
        }
        None => entries.push(ManagedEntry {
            manager: writer.manager.to_string(),
            operation: "Update".into(),
            api_version: writer.api_version.to_string(),
            subresource: writer.subresource.to_string(),
            time: Some(now.to_string()),
            fields: current,
        }),
    }
}

// ---------------------------------------------------------------------------
// Update operations
// ---------------------------------------------------------------------------

/// Who writes: the field manager, the apiVersion it writes in, and the
/// subresource written through (`""`, `status`, `scale`); upstream keeps one
/// managedFields entry per combination.
#[derive(Debug, Clone, Copy)]
pub struct Writer<'a> {
    pub manager: &'a str,
    pub api_version: &'a str,
    pub subresource: &'a str,
}

impl<'a> Writer<'a> {
    /// A write through the main resource.
    pub fn new(manager: &'a str, api_version: &'a str) -> Self {
        Writer {
            manager,
            api_version,
            subresource: "",
        }
    }
}

/// Record an Update (or a Create, which upstream also records as "Update") by
/// `manager` through the main resource, with list ownership from the object's
/// built-in patch schema (`patch::builtin_schema` of its group and kind).
pub fn record_update(obj: &mut Value, old: Option<&Value>, manager: &str, api_version: &str) {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let kind = apimachinery::meta::kind(obj).to_string();
    let schema = patch::builtin_schema(group, version, &kind);
    record_update_with_schema(obj, old, manager, api_version, &schema);
}

/// [`record_update`] with an explicit schema. A create (`old` = `None`) is
/// compared against [`empty_object`].
pub fn record_update_with_schema(
    obj: &mut Value,
    old: Option<&Value>,
    manager: &str,
    api_version: &str,
    schema: &(dyn PatchMeta + Sync),
) {
    let writer = Writer::new(manager, api_version);
    record(obj, old, &writer, &Tracking::new(schema));
}

/// Record `writer`'s Update: the change from `live` (for a create, what an
/// empty object of the type looks like) to `obj`, in `obj`'s managedFields,
/// as `tracking` says (list ownership, reset fields).
///
/// An empty manager leaves `obj` untouched, managedFields included: callers
/// that computed managedFields themselves (server-side apply, through
/// [`crate::apply::apply`]) write with an empty manager.
pub fn record(obj: &mut Value, live: Option<&Value>, writer: &Writer<'_>, tracking: &Tracking<'_>) {
    if let Some(recorded) = recorded(obj, live, writer, tracking) {
        write_recorded(obj, recorded);
    }
}

/// Put what [`recorded`] left in `obj`'s `metadata.managedFields`.
fn write_recorded(obj: &mut Value, recorded: Recorded) {
    match recorded {
        Recorded::Entries(entries) => set_managed_fields(obj, entries),
        Recorded::Created(entry) => {
            let entry = entry.into_json();
            apimachinery::meta::metadata_mut(obj)
                .insert("managedFields".into(), Value::Array(vec![entry]));
        }
    }
}

/// [`record`], leaving `obj` without `managedFields` and answering them
/// typed (`None`: an empty manager, nothing recorded): for a caller that
/// keeps the metadata typed.
pub fn record_typed(
    obj: &mut Value,
    live: Option<&Value>,
    writer: &Writer<'_>,
    tracking: &Tracking<'_>,
) -> Option<Vec<ManagedFieldsEntry>> {
    Some(recorded(obj, live, writer, tracking)?.into_typed())
}

/// What [`record`] leaves: the entries, or a create's single entry.
enum Recorded {
    Entries(Vec<ManagedEntry>),
    Created(CreatedEntry),
}

/// A create's entry, its `FieldsV1` written straight from the object.
struct CreatedEntry {
    manager: String,
    api_version: String,
    subresource: String,
    time: String,
    /// Written by [`create`]'s walk.
    fields_v1: Box<str>,
}

impl CreatedEntry {
    fn into_json(self) -> Value {
        entry_json(
            &self.manager,
            "Update",
            &self.api_version,
            Some(&self.time),
            &self.subresource,
            FieldsV1::Text(self.fields_v1).into_value(),
        )
    }

    fn into_typed(self) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            manager: self.manager,
            operation: "Update".into(),
            api_version: self.api_version,
            time: Some(self.time),
            fields_type: "FieldsV1".into(),
            fields_v1: Some(FieldsV1::Text(self.fields_v1)),
            subresource: self.subresource,
        }
    }
}

/// [`record`]'s work: `obj`'s managedFields taken out (`None`, untouched,
/// for an empty manager) and what it leaves instead.
fn recorded(
    obj: &mut Value,
    live: Option<&Value>,
    writer: &Writer<'_>,
    tracking: &Tracking<'_>,
) -> Option<Recorded> {
    if writer.manager.is_empty() {
        return None;
    }
    let entries = entries_before(managed_fields_of(obj), live, writer);
    apimachinery::meta::remove(obj, "managedFields");
    Some(recorded_from(entries, obj, live, writer, tracking))
}

/// The entries a write starts from (upstream's decodeLiveOrNew), given the
/// object's `managedFields` member: the request's win when they are valid
/// and non-empty (`[]`/`[{}]` reset them); otherwise the live ones. A
/// subresource's writer cannot set them.
fn entries_before(
    managed: Option<&Value>,
    live: Option<&Value>,
    writer: &Writer<'_>,
) -> Vec<ManagedEntry> {
    let live_entries = || {
        live.and_then(managed_of)
            .and_then(Result::ok)
            .unwrap_or_default()
    };
    if !writer.subresource.is_empty() {
        live_entries()
    } else if is_reset(managed) {
        Vec::new()
    } else {
        match managed
            .and_then(Value::as_array)
            .map(|a| decode_managed_fields(a))
        {
            Some(Ok(e)) if !e.is_empty() => e,
            _ => live_entries(),
        }
    }
}

/// What [`record`] leaves, from the `entries` the write starts from and
/// `obj` without managedFields.
fn recorded_from(
    mut entries: Vec<ManagedEntry>,
    obj: &Value,
    live: Option<&Value>,
    writer: &Writer<'_>,
    tracking: &Tracking<'_>,
) -> Recorded {
    // Upstream's skipNonAppliedManager: an existing object without
    // managedFields is not tracked until it is applied.
    if entries.is_empty() && live.is_some() {
        return Recorded::Entries(Vec::new());
    }
    let empty;
    let base = match live {
        Some(live) => live,
        None => {
            empty = tracking.empty_beside(obj);
            empty.as_ref()
        }
    };
    if entries.is_empty()
        && let Some(created) = record_create(obj, base, writer, tracking)
    {
        return created;
    }
    let cmp = tracking.compare(base, obj);
    update_entries(&mut entries, cmp, writer, &time::now_rfc3339());
    Recorded::Entries(entries)
}

/// [`record`] of a create (no entries before it): the writer's entry with
/// the `FieldsV1` of everything it set, written straight from the object
/// (none when it set nothing). `None` (nothing done) when `base` or `obj`
/// is not an object.
fn record_create(
    obj: &Value,
    base: &Value,
    writer: &Writer<'_>,
    tracking: &Tracking<'_>,
) -> Option<Recorded> {
    let fields = create::fields_v1(
        tracking.schema,
        base.as_object()?,
        obj.as_object()?,
        &tracking.reset,
    );
    Some(created(fields, writer))
}

/// A create's entry: `writer`'s, with `fields` (none when it set nothing).
fn created(fields: create::Written, writer: &Writer<'_>) -> Recorded {
    let Some(fields) = fields else {
        return Recorded::Entries(Vec::new());
    };
    Recorded::Created(CreatedEntry {
        manager: writer.manager.to_owned(),
        api_version: writer.api_version.to_owned(),
        subresource: writer.subresource.to_owned(),
        time: time::now_rfc3339(),
        fields_v1: fields,
    })
}

impl Recorded {
    /// The entries as typed metadata holds them, in upstream's order.
    fn into_typed(self) -> Vec<ManagedFieldsEntry> {
        match self {
            Recorded::Entries(entries) => {
                ordered(entries).into_iter().map(|e| e.to_typed()).collect()
            }
            Recorded::Created(entry) => vec![entry.into_typed()],
        }
    }
}

/// [`record_typed`] of a registry write's object, whose metadata is typed:
/// `request_managed` is the `managedFields` the request sent (taken out of
/// its metadata when it was decoded); the answer is the entries to keep.
/// The same entries as [`record_typed`] of the object as JSON (its metadata
/// written out beside the body, `request_managed` in it), which is how
/// any write but a create from no entries is recorded; such a create reads
/// the typed metadata as it is ([`create::typed_fields_v1`]). An empty
/// manager records nothing.
pub fn record_dynamic(
    obj: &mut DynamicObject,
    request_managed: Option<Value>,
    live: Option<&Value>,
    writer: &Writer<'_>,
    tracking: &Tracking<'_>,
) -> Vec<ManagedFieldsEntry> {
    if writer.manager.is_empty() {
        return Vec::new();
    }
    // The metadata's `managedFields` member as its JSON would hold it: the
    // request's, else the typed ones.
    let managed = request_managed.or_else(|| {
        let typed = &obj.metadata.managed_fields;
        (!typed.is_empty())
            .then(|| Value::Array(typed.iter().map(ManagedFieldsEntry::to_value).collect()))
    });
    let entries = entries_before(managed.as_ref(), live, writer);
    if live.is_none()
        && entries.is_empty()
        && let Some(fields) = create::typed_fields_v1(
            tracking.schema,
            &tracking.empty_beside(&obj.body),
            &obj.metadata,
            &obj.body,
            &tracking.reset,
        )
    {
        return created(fields, writer).into_typed();
    }
    // The metadata written out beside the body, for the walks over JSON
    // (which never read its managedFields).
    obj.insert("metadata", obj.metadata.to_value());
    let recorded = recorded_from(entries, &obj.body, live, writer, tracking);
    obj.remove("metadata");
    recorded.into_typed()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use patch::PatchSchema;

    fn service_schema() -> PatchSchema {
        patch::builtin_schema("", "v1", "Service")
    }

    #[test]
    fn a_new_subtree_is_added_as_an_old_one_is_removed() {
        // The added side of a comparison is built bottom-up, the removed side
        // path by path: both must find the same paths, for every shape the
        // walk tells apart (keyed lists with duplicates and defaulted keys,
        // sets, atomic maps, empty maps, nulls, nested lists, managedFields).
        let service = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "s", "labels": {"a": "b", "c": ""}, "annotations": {},
                "finalizers": ["x", "y", "x"],
                "ownerReferences": [{"uid": "1", "kind": "K", "name": "n"}],
                "managedFields": [{"manager": "m", "operation": "Update"}]},
            "spec": {"selector": {"app": "s"},
                "ports": [{"port": 80, "targetPort": 8080}, {"port": 80, "protocol": "UDP"},
                    {"port": 443, "protocol": "TCP", "name": "https"},
                    {"port": 443, "protocol": "TCP", "name": "dup"}],
                "externalIPs": ["1.2.3.4"], "sessionAffinityConfig": null,
                "clusterIPs": []},
            "status": {"conditions": [{"type": "Ready", "status": "True"}],
                "loadBalancer": {"ingress": [{"ip": "1.1.1.1", "ports": [{"port": 1}]}]}}
        });
        let deployment = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "d"}},
                "template": {"metadata": {"labels": {"app": "d"}}, "spec": {
                    "containers": [
                        {"name": "a", "image": "i", "env": [{"name": "E", "value": "1"},
                            {"name": "E", "value": "2"}], "ports": [{"containerPort": 80}],
                         "args": ["x", "x"], "resources": {"limits": {"cpu": "1"}}},
                        {"name": "b", "image": "j", "volumeMounts": [{"mountPath": "/m", "name": "v"}]}],
                    "volumes": [{"name": "v", "emptyDir": {}}],
                    "tolerations": [{"key": "k"}, {"key": "k"}]}}}
        });
        let cases = [
            (service, service_schema()),
            (
                deployment,
                patch::builtin_schema("apps", "v1", "Deployment"),
            ),
        ];
        for (object, schema) in cases {
            let added = compare(&json!({}), &object, &schema).added;
            let removed = compare(&object, &json!({}), &schema).removed;
            assert!(!added.is_empty());
            assert_eq!(added, removed, "{object}");
            assert!(added.has(&[PathElement::Field("spec".into())]));
            // New fields beside old ones, as in a create's metadata.
            let partial = json!({"apiVersion": object["apiVersion"], "kind": object["kind"],
                "metadata": {"name": object["metadata"]["name"]}, "spec": {}});
            let added = compare(&partial, &object, &schema).added;
            let removed = compare(&object, &partial, &schema).removed;
            assert_eq!(added, removed, "{object}");
            assert!(!added.has(&[PathElement::Field("spec".into())]));
            assert!(
                added.has(&[
                    PathElement::Field("metadata".into()),
                    PathElement::Field("labels".into())
                ]) || object["metadata"].get("labels").is_none()
            );
        }
    }

    #[test]
    fn create_owns_every_set_field() {
        let mut obj = json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","labels":{"a":"b"}},"data":{"k":"v"}});
        record_update(&mut obj, None, "kubectl-create", "v1");
        let mf = &obj["metadata"]["managedFields"][0];
        assert_eq!(mf["manager"], "kubectl-create");
        assert_eq!(mf["operation"], "Update");
        assert_eq!(mf["fieldsType"], "FieldsV1");
        assert_eq!(
            mf["fieldsV1"],
            json!({"f:data":{".":{},"f:k":{}},"f:metadata":{"f:labels":{".":{},"f:a":{}}}})
        );
    }

    #[test]
    fn managed_fields_are_never_compared() {
        let schema = service_schema();
        let old =
            json!({"metadata": {"name": "x", "managedFields": [{"manager": "a"}]}, "spec": {}});
        let new =
            json!({"metadata": {"name": "x", "managedFields": [{"manager": "b"}]}, "spec": {}});
        assert_eq!(compare(&old, &new, &schema), Comparison::default());
        // Elsewhere the name is an ordinary field.
        let old = json!({"spec": {"managedFields": 1}});
        let new = json!({"spec": {"managedFields": 2}});
        assert!(compare(&old, &new, &schema).modified.has(&[
            PathElement::Field("spec".into()),
            PathElement::Field("managedFields".into())
        ]));
    }

    /// Upstream's typed comparison: null is an empty map or list of the
    /// other side's type, so what replaces it is added without the node
    /// itself (no `"."`), unless both are empty or the map is atomic.
    #[test]
    fn null_is_an_empty_map_or_list() {
        let schema = patch::builtin_schema("apps", "v1", "Deployment");
        let field = |names: &[&str]| -> Vec<PathElement> {
            names
                .iter()
                .map(|n| PathElement::Field((*n).into()))
                .collect()
        };
        let old = json!({"spec": {"template": {"spec": {"containers": null}},
            "selector": null, "strategy": null, "minReadySeconds": null}});
        let new = json!({"spec": {"template": {"spec": {"containers": [{"name": "c"}]}},
            "selector": {"matchLabels": {"a": "b"}}, "strategy": {}, "minReadySeconds": 1}});
        let cmp = compare(&old, &new, &schema);
        let containers = field(&["spec", "template", "spec", "containers"]);
        assert!(!cmp.added.has(&containers) && !cmp.modified.has(&containers));
        let mut item = containers.clone();
        item.push(PathElement::Key(vec![("name".into(), json!("c"))]));
        assert!(cmp.added.has(&item));
        // LabelSelector is an atomic struct: owned whole.
        assert!(cmp.modified.has(&field(&["spec", "selector"])));
        assert!(!cmp.added.has(&field(&["spec", "selector", "matchLabels"])));
        // Null to empty, and scalars: changed.
        assert!(cmp.modified.has(&field(&["spec", "strategy"])));
        assert!(cmp.modified.has(&field(&["spec", "minReadySeconds"])));
        // And back: only removals.
        let back = compare(&new, &old, &schema);
        assert!(back.added.is_empty());
        assert!(back.removed.has(&item) && !back.removed.has(&containers));
    }

    #[test]
    fn reset_fields_are_nobodys() {
        let schema = patch::builtin_schema("apps", "v1", "StatefulSet");
        let tracking = Tracking {
            reset: Cow::Owned(field_paths(&[&["status"]])),
            ..Tracking::new(&schema)
        };
        let mut created = json!({"metadata": {"name": "s"}, "spec": {"replicas": 1},
            "status": {"replicas": 4}});
        record(&mut created, None, &Writer::new("a", "apps/v1"), &tracking);
        assert_eq!(
            created["metadata"]["managedFields"][0]["fieldsV1"],
            json!({"f:spec": {"f:replicas": {}}})
        );
        // A status writer's fields stay its own when the main resource
        // changes status (the strategy resets it anyway).
        let status_tracking = Tracking {
            reset: Cow::Owned(field_paths(&[&["spec"]])),
            ..Tracking::new(&schema)
        };
        let mut status = created.clone();
        status["status"]["replicas"] = json!(2);
        status["spec"]["replicas"] = json!(9);
        let controller = Writer {
            subresource: "status",
            ..Writer::new("c", "apps/v1")
        };
        record(&mut status, Some(&created), &controller, &status_tracking);
        // By manager: entries written in different seconds sort by time.
        let summary = |obj: &Value| -> Vec<(String, Value)> {
            let mut entries: Vec<(String, Value)> =
                decode_managed_fields(obj["metadata"]["managedFields"].as_array().unwrap())
                    .unwrap()
                    .into_iter()
                    .map(|e| (e.manager, e.fields.to_fields_v1()))
                    .collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            entries
        };
        assert_eq!(
            summary(&status),
            [
                ("a".to_string(), json!({"f:spec": {"f:replicas": {}}})),
                ("c".to_string(), json!({"f:status": {"f:replicas": {}}})),
            ]
        );
        let mut main = status.clone();
        main["status"]["replicas"] = json!(7);
        main["spec"]["replicas"] = json!(3);
        record(
            &mut main,
            Some(&status),
            &Writer::new("b", "apps/v1"),
            &tracking,
        );
        assert_eq!(
            summary(&main),
            [
                ("b".to_string(), json!({"f:spec": {"f:replicas": {}}})),
                ("c".to_string(), json!({"f:status": {"f:replicas": {}}})),
            ]
        );
    }

    /// Upstream's `decodeLiveOrNew` with `ignoreManagedFieldsFromRequestObject`:
    /// a subresource's writer cannot set managedFields.
    #[test]
    fn subresource_writers_cannot_set_managed_fields() {
        let schema = patch::builtin_schema("", "v1", "ConfigMap");
        let mut live = json!({"metadata": {"name": "x"}, "data": {"a": "1"}});
        record_update_with_schema(&mut live, None, "a", "v1", &schema);
        let mut new = live.clone();
        new["metadata"]["managedFields"] = json!([]);
        new["data"]["a"] = json!("2");
        let writer = Writer {
            subresource: "status",
            ..Writer::new("s", "v1")
        };
        record(&mut new, Some(&live), &writer, &Tracking::new(&schema));
        let managers: Vec<&str> = new["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e["manager"].as_str())
            .collect();
        assert_eq!(managers, ["a", "s"]);
    }

    #[test]
    fn remove_below_takes_whole_subtrees() {
        let field = |n: &str| PathElement::Field(n.into());
        let set = FieldSet::from_fields_v1(&json!({"f:spec": {".": {}, "f:a": {}},
            "f:status": {"f:b": {}}, "f:metadata": {"f:labels": {".": {}, "f:x": {}},
            "f:annotations": {"f:y": {}}}}))
        .unwrap();
        let mut left = set.clone();
        left.remove_below(&field_paths(&[&["spec"], &["metadata", "labels"]]));
        assert_eq!(
            left.to_fields_v1(),
            json!({"f:status": {"f:b": {}}, "f:metadata": {"f:annotations": {"f:y": {}}}})
        );
        assert!(set.has(&[field("spec")]));
    }

    #[test]
    fn update_moves_ownership() {
        let mut old = json!({"metadata":{"name":"x"},"data":{"k":"v"}});
        record_update(&mut old, None, "a", "v1");
        let mut new = old.clone();
        new["data"]["k"] = json!("w");
        record_update(&mut new, Some(&old), "b", "v1");
        let mf = new["metadata"]["managedFields"].as_array().unwrap();
        assert_eq!(mf.len(), 2);
        // `.data` stays a's (a member with no owned children left: `{}`).
        assert_eq!(mf[0]["fieldsV1"], json!({"f:data":{}}));
        assert_eq!(mf[1]["fieldsV1"], json!({"f:data":{"f:k":{}}}));
    }

    #[test]
    fn spec_root_has_no_dot_but_pointer_like_maps_do() {
        let mut obj = json!({"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},
            "spec":{"selector":{"app":"x"},"ports":[{"port":80,"name":"http"}]}});
        record_update_with_schema(&mut obj, None, "kubectl-create", "v1", &service_schema());
        assert_eq!(
            obj["metadata"]["managedFields"][0]["fieldsV1"],
            // `selector` is an atomic map (upstream's `+mapType=atomic`):
            // owned whole.
            json!({"f:spec":{
                "f:ports":{".":{},"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{}}},
                "f:selector":{}
            }})
        );
    }

    #[test]
    fn custom_resource_create_marks_spec() {
        let mut obj =
            json!({"apiVersion":"x.io/v1","kind":"W","metadata":{"name":"w"},"spec":{"n":1}});
        let schema = PatchSchema::new();
        let empty = json!({});
        let tracking = Tracking {
            empty: Some(&empty),
            ..Tracking::new(&schema)
        };
        record(&mut obj, None, &Writer::new("m", "x.io/v1"), &tracking);
        assert_eq!(
            obj["metadata"]["managedFields"][0]["fieldsV1"],
            json!({"f:spec":{".":{},"f:n":{}}})
        );
    }

    #[test]
    fn keyed_list_items_move_individually() {
        let schema = service_schema();
        let mut old = json!({"metadata":{"name":"s"},"spec":{"ports":[{"port":80,"name":"a"},{"port":443,"name":"b"}]}});
        record_update_with_schema(&mut old, None, "a", "v1", &schema);
        let mut new = old.clone();
        new["spec"]["ports"][1]["name"] = json!("c");
        record_update_with_schema(&mut new, Some(&old), "b", "v1", &schema);
        let mf = new["metadata"]["managedFields"].as_array().unwrap();
        assert_eq!(
            mf[0]["fieldsV1"],
            json!({"f:spec":{"f:ports":{".":{},
                "k:{\"port\":443,\"protocol\":\"TCP\"}":{".":{},"f:port":{}},
                "k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{}}}}})
        );
        assert_eq!(
            mf[1]["fieldsV1"],
            json!({"f:spec":{"f:ports":{"k:{\"port\":443,\"protocol\":\"TCP\"}":{"f:name":{}}}}})
        );
    }

    #[test]
    fn finalizers_are_a_set() {
        let schema = patch::common_schema();
        let mut obj = json!({"metadata":{"name":"x","finalizers":["a/b","c"]}});
        record_update_with_schema(&mut obj, None, "m", "v1", &schema);
        assert_eq!(
            obj["metadata"]["managedFields"][0]["fieldsV1"],
            json!({"f:metadata":{"f:finalizers":{".":{},"v:\"a/b\"":{},"v:\"c\"":{}}}})
        );
    }

    /// The `FieldsV1` of `obj`'s create by `m`, as [`record_update`] writes it.
    fn created_fields_v1(mut obj: Value, api_version: &str) -> Value {
        record_update(&mut obj, None, "m", api_version);
        obj["metadata"]["managedFields"][0]["fieldsV1"].take()
    }

    /// `+listType=set` without a patch strategy: a set for server-side
    /// apply (strategic merge patch still replaces it). kube-apiserver
    /// 1.37.2's answers (docs/research/serialization/upstream).
    #[test]
    fn declared_sets_without_a_patch_strategy_are_sets() {
        let sparse = json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "sparse"},
            "spec": {"policyName": "sparse", "validationActions": ["Audit"]}});
        assert_eq!(
            created_fields_v1(sparse, "admissionregistration.k8s.io/v1"),
            json!({"f:spec":{"f:policyName":{},"f:validationActions":{".":{},"v:\"Audit\"":{}}}})
        );
        let params = json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "params"},
            "spec": {"policyName": "sparse",
                "paramRef": {"name": "params", "namespace": "serialization",
                    "parameterNotFoundAction": "Allow"},
                "matchResources": {"namespaceSelector": {}, "objectSelector": {},
                    "resourceRules": [{"operations": ["CREATE"],
                        "apiGroups": ["serialization.kubext.dev"], "apiVersions": ["v1"],
                        "resources": ["sparses"], "scope": "*"}],
                    "matchPolicy": "Equivalent"},
                "validationActions": ["Deny"]}});
        assert_eq!(
            created_fields_v1(params, "admissionregistration.k8s.io/v1"),
            json!({"f:spec":{"f:matchResources":{},"f:paramRef":{},"f:policyName":{},
                "f:validationActions":{".":{},"v:\"Deny\"":{}}}})
        );
        let csi = json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
            "metadata": {"name": "csi.example.com"},
            "spec": {"attachRequired": true, "podInfoOnMount": false,
                "volumeLifecycleModes": ["Persistent"], "storageCapacity": false,
                "fsGroupPolicy": "ReadWriteOnceWithFSType", "requiresRepublish": false,
                "seLinuxMount": false, "preventPodSchedulingIfMissing": false}});
        assert_eq!(
            created_fields_v1(csi, "storage.k8s.io/v1"),
            json!({"f:spec":{"f:attachRequired":{},"f:fsGroupPolicy":{},"f:podInfoOnMount":{},
                "f:preventPodSchedulingIfMissing":{},"f:requiresRepublish":{},"f:seLinuxMount":{},
                "f:storageCapacity":{},"f:volumeLifecycleModes":{".":{},"v:\"Persistent\"":{}}}})
        );
        // `+listType=atomic` wins over `patchStrategy:"merge"`: a Pod's
        // hostIPs are owned whole.
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "status": {"hostIPs": [{"ip": "10.0.0.1"}]}});
        assert_eq!(
            created_fields_v1(pod, "v1"),
            json!({"f:status":{"f:hostIPs":{}}})
        );
    }

    /// A reference's own `+mapType=granular` overrides its atomic struct's:
    /// a PersistentVolume's claimRef is owned field by field, an Event's
    /// involvedObject (an ObjectReference too) whole.
    #[test]
    fn a_granular_reference_to_an_atomic_struct_is_granular() {
        let pv = json!({"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": "nfs"},
            "spec": {"capacity": {"storage": "2Gi"},
                "nfs": {"server": "nfs.example.com", "path": "/exports"},
                "accessModes": ["ReadWriteMany"],
                "claimRef": {"namespace": "serialization", "name": "bound"},
                "persistentVolumeReclaimPolicy": "Retain", "volumeMode": "Filesystem"}});
        assert_eq!(
            created_fields_v1(pv, "v1"),
            json!({"f:spec":{"f:accessModes":{},"f:capacity":{".":{},"f:storage":{}},
                "f:claimRef":{".":{},"f:name":{},"f:namespace":{}},
                "f:nfs":{".":{},"f:path":{},"f:server":{}},
                "f:persistentVolumeReclaimPolicy":{},"f:volumeMode":{}}})
        );
        let event = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
            "involvedObject": {"kind": "Pod", "name": "p"}, "reason": "R"});
        assert_eq!(
            created_fields_v1(event, "v1"),
            json!({"f:involvedObject":{},"f:reason":{}})
        );
    }

    /// A RawExtension (ControllerRevision's `data`) is untyped and atomic.
    #[test]
    fn raw_extensions_are_owned_whole() {
        let revision = json!({"apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": {"name": "sparse", "namespace": "serialization"},
            "data": {"spec": {}}, "revision": 1});
        assert_eq!(
            created_fields_v1(revision.clone(), "apps/v1"),
            json!({"f:data":{},"f:revision":{}})
        );
        // Changed inside, it changed whole: its new writer owns it.
        let schema = patch::builtin_schema("apps", "v1", "ControllerRevision");
        let cmp = compare(
            &revision,
            &json!({"data": {"spec": {"a": 1}}, "revision": 1}),
            &schema,
        );
        assert_eq!(cmp.modified.to_fields_v1(), json!({"f:data":{}}));
        assert!(cmp.added.is_empty());
        assert_eq!(
            field_set_of(&revision, &schema).to_fields_v1(),
            json!({"f:apiVersion":{},"f:data":{},"f:kind":{},
                "f:metadata":{"f:name":{},"f:namespace":{}},"f:revision":{}})
        );
    }

    /// OwnerReference is an atomic struct: each owner reference is owned
    /// whole (`k:{"uid":…}: {}`), a custom resource's as a built-in kind's,
    /// by an update, a create and an apply's field set.
    #[test]
    fn owner_references_are_owned_whole() {
        let owners = json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "sparse",
            "uid": "UID", "controller": true, "blockOwnerDeletion": true}]);
        // A custom resource: ObjectMeta's schema, compared with nothing.
        let widget = json!({"apiVersion": "serialization.kubext.dev/v1", "kind": "Widget",
            "metadata": {"name": "owned", "namespace": "serialization",
                "labels": {"b": "1", "a": "2"},
                "finalizers": ["serialization.kubext.dev/keep"], "ownerReferences": owners},
            "spec": {"size": 1}});
        let schema = patch::builtin::object_meta_schema();
        let empty = json!({});
        let tracking = Tracking {
            empty: Some(&empty),
            ..Tracking::new(&schema)
        };
        let mut obj = widget.clone();
        record(
            &mut obj,
            None,
            &Writer::new("m", "serialization.kubext.dev/v1"),
            &tracking,
        );
        assert_eq!(
            obj["metadata"]["managedFields"][0]["fieldsV1"],
            json!({"f:metadata":{"f:finalizers":{".":{},"v:\"serialization.kubext.dev/keep\"":{}},
                "f:labels":{".":{},"f:a":{},"f:b":{}},
                "f:ownerReferences":{".":{},"k:{\"uid\":\"UID\"}":{}}},
                "f:spec":{".":{},"f:size":{}}})
        );
        // A built-in kind.
        let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "ownerReferences": owners}, "data": {"k": "v"}});
        assert_eq!(
            created_fields_v1(config_map.clone(), "v1"),
            json!({"f:data":{".":{},"f:k":{}},
                "f:metadata":{"f:ownerReferences":{".":{},"k:{\"uid\":\"UID\"}":{}}}})
        );
        // An item changed is changed whole; an apply sets it whole.
        let schema = patch::builtin_schema("", "v1", "ConfigMap");
        let mut changed = config_map.clone();
        changed["metadata"]["ownerReferences"][0]["controller"] = json!(false);
        let cmp = compare(&config_map, &changed, &schema);
        assert_eq!(
            cmp.modified.to_fields_v1(),
            json!({"f:metadata":{"f:ownerReferences":{"k:{\"uid\":\"UID\"}":{}}}})
        );
        assert!(cmp.added.is_empty() && cmp.removed.is_empty());
        let applied = field_set_of(&json!({"metadata": {"ownerReferences": owners}}), &schema);
        assert_eq!(
            applied.to_fields_v1(),
            json!({"f:metadata":{"f:ownerReferences":{"k:{\"uid\":\"UID\"}":{}}}})
        );
    }

    #[test]
    fn removed_fields_leave_every_set() {
        let mut old = json!({"metadata":{"name":"x"},"data":{"k":"v","j":"w"}});
        record_update(&mut old, None, "a", "v1");
        let mut new = old.clone();
        new["data"].as_object_mut().unwrap().remove("k");
        record_update(&mut new, Some(&old), "b", "v1");
        let mf = new["metadata"]["managedFields"].as_array().unwrap();
        // b changed nothing but a removal: no entry of its own.
        assert_eq!(mf.len(), 1);
        assert_eq!(mf[0]["fieldsV1"], json!({"f:data":{".":{},"f:j":{}}}));
    }

    #[test]
    fn reset_and_untracked_objects() {
        let mut old = json!({"metadata":{"name":"x"},"data":{"k":"v"}});
        record_update(&mut old, None, "a", "v1");
        // `[{}]` clears managedFields, and they stay cleared.
        let mut new = old.clone();
        new["metadata"]["managedFields"] = json!([{}]);
        new["data"]["k"] = json!("w");
        record_update(&mut new, Some(&old), "b", "v1");
        assert!(new["metadata"].get("managedFields").is_none());
        let mut newer = new.clone();
        newer["data"]["k"] = json!("z");
        record_update(&mut newer, Some(&new), "c", "v1");
        assert!(newer["metadata"].get("managedFields").is_none());
    }

    /// The general path's result for a create: compared with `base`, the
    /// entry added, system fields left out, encoded.
    fn recorded_by_comparison(obj: &Value, base: &Value, tracking: &Tracking<'_>) -> Value {
        let mut obj = obj.clone();
        apimachinery::meta::remove(&mut obj, "managedFields");
        let writer = Writer::new("m", "v1");
        let mut entries = Vec::new();
        update_entries(&mut entries, tracking.compare(base, &obj), &writer, "T");
        set_managed_fields(&mut obj, entries);
        obj
    }

    fn recorded_directly(obj: &Value, base: &Value, tracking: &Tracking<'_>) -> Value {
        let mut obj = obj.clone();
        apimachinery::meta::remove(&mut obj, "managedFields");
        let recorded = record_create(&obj, base, &Writer::new("m", "v1"), tracking).unwrap();
        write_recorded(&mut obj, recorded);
        if let Some(entry) = obj.pointer_mut("/metadata/managedFields/0") {
            entry["time"] = json!("T");
        }
        obj
    }

    /// Objects of `tops` members whose values nest maps of `keys` and lists
    /// down to scalars (strings, numbers written both ways, null, a bool):
    /// the shape of the field manager's property tests, their keys theirs.
    pub(super) fn nested_objects(
        keys: &'static [&'static str],
        tops: &'static [&'static str],
    ) -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let key = prop::sample::select(keys).prop_map(String::from);
        let scalar = prop_oneof![
            Just(json!("x")),
            Just(json!("y")),
            Just(json!(80)),
            Just(json!(null)),
            Just(json!(true)),
            Just(json!("TCP")),
            Just(json!(80.0)),
        ];
        let value = scalar.prop_recursive(4, 40, 4, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(key.clone(), inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        });
        let top = prop::sample::select(tops).prop_map(String::from);
        prop::collection::btree_map(top, value, 0..5)
            .prop_map(|m| Value::Object(m.into_iter().collect()))
    }

    /// Pod-shaped objects: keyed lists (containers, ports, env, volumes,
    /// ownerReferences), sets (finalizers), duplicates, scalars where maps
    /// are expected and the other way round.
    fn pod_like() -> impl proptest::strategy::Strategy<Value = Value> {
        nested_objects(
            &[
                "name",
                "containers",
                "ports",
                "containerPort",
                "protocol",
                "env",
                "value",
                "volumes",
                "labels",
                "finalizers",
                "uid",
                "a",
                "metadata",
                "spec",
                "status",
                "kind",
                "apiVersion",
                "ownerReferences",
                "generation",
            ],
            &["metadata", "spec", "status", "kind", "apiVersion", "data"],
        )
    }

    /// What an empty object may look like (upstream's `New()` encoded):
    /// zero scalars, nulls, empty lists and maps, maps of those; no list
    /// items.
    fn zero_like() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let key = prop_oneof![
            Just("containers"),
            Just("ports"),
            Just("labels"),
            Just("metadata"),
            Just("spec"),
            Just("status"),
            Just("name"),
            Just("a"),
        ]
        .prop_map(String::from);
        let zero = prop_oneof![
            Just(json!(null)),
            Just(json!("")),
            Just(json!(0)),
            Just(json!(false)),
            Just(json!([])),
            Just(json!({})),
        ];
        zero.prop_recursive(3, 20, 4, move |inner| {
            prop::collection::btree_map(key.clone(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect()))
        })
        .prop_map(|v| match v {
            Value::Object(m) => Value::Object(m),
            _ => json!({}),
        })
    }

    proptest::proptest! {
        #[test]
        fn a_create_records_what_the_comparison_with_an_empty_object_records(
            obj in pod_like(),
            zero in zero_like(),
        ) {
            let schema = patch::builtin_schema("", "v1", "Pod");
            let mut pod = json!({});
            crate::zero_fields::fill("", "v1", "Pod", &mut pod);
            // Built-in types compare with their empty structs (as Go encodes
            // them), custom resources with nothing; reset fields are nobody's.
            for base in [empty_object(&obj), json!({}), pod, zero] {
                for reset in [FieldSet::new(), field_paths(&[&["status"]]),
                    field_paths(&[&["spec"], &["metadata", "labels"]])] {
                    let tracking = Tracking { reset: Cow::Owned(reset), ..Tracking::new(&schema) };
                    proptest::prop_assert_eq!(
                        recorded_directly(&obj, &base, &tracking),
                        recorded_by_comparison(&obj, &base, &tracking),
                        "base {}", base
                    );
                }
            }
        }
    }

    #[test]
    fn a_create_records_what_the_comparison_records_for_real_objects() {
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "uid": "u", "generation": 1,
                "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"app": "a"},
                "annotations": {}, "finalizers": ["f", "f", "g"],
                "ownerReferences": [{"apiVersion": "v1", "kind": "K", "name": "o", "uid": "1"}],
                "managedFields": [{"manager": "old", "operation": "Update"}]},
            "spec": {"containers": [
                {"name": "c", "image": "i", "ports": [{"containerPort": 80}, {"containerPort": 80, "protocol": "UDP"}],
                 "env": [{"name": "E", "value": "1"}, {"name": "E", "value": "2"}],
                 "resources": {"limits": {"cpu": "1"}}}],
                "volumes": [{"name": "v", "emptyDir": {}}], "nodeSelector": {}},
            "status": {}
        });
        let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "labels": {"app": "kubext-bench"}},
            "data": {"payload": "x"}});
        for (obj, schema) in [
            (pod, patch::builtin_schema("", "v1", "Pod")),
            (config_map, patch::builtin_schema("", "v1", "ConfigMap")),
        ] {
            let tracking = Tracking::new(&schema);
            for base in [empty_object(&obj), json!({})] {
                let direct = recorded_directly(&obj, &base, &tracking);
                assert_eq!(direct, recorded_by_comparison(&obj, &base, &tracking));
                assert!(direct["metadata"]["managedFields"][0]["fieldsV1"].is_object());
            }
        }
    }

    /// Keys and values in `k:` and `v:` path elements are escaped as Go's
    /// encoder escapes them: HTML characters and the line separators too.
    #[test]
    fn path_elements_escape_as_go_does() {
        let key = PathElement::Key(vec![
            ("name".into(), json!("<a&b>")),
            ("port".into(), json!(80)),
        ]);
        assert_eq!(
            key.serialize(),
            r#"k:{"name":"\u003ca\u0026b\u003e","port":80}"#
        );
        let value = PathElement::Value(json!("x\u{2028}y\u{2029}—\"q\""));
        assert_eq!(value.serialize(), r#"v:"x\u2028y\u2029—\"q\"""#);
    }

    #[test]
    fn fields_v1_round_trip_and_paths() {
        let v = json!({"f:metadata":{"f:labels":{".":{},"f:a":{}}},
            "f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:name":{}}}},
            "f:x":{"v:\"a\\u003cb\"":{},"i:3":{}}});
        let set = FieldSet::from_fields_v1(&v).unwrap();
        assert_eq!(set.to_fields_v1(), v);
        let paths: Vec<String> = set.paths().iter().map(|p| path_string(p)).collect();
        assert_eq!(
            paths,
            vec![
                ".metadata.labels",
                ".metadata.labels.a",
                ".spec.ports[port=80,protocol=\"TCP\"]",
                ".spec.ports[port=80,protocol=\"TCP\"].name",
                ".x[=\"a<b\"]",
                ".x[3]",
            ]
        );
        assert_eq!(
            PathElement::Value(json!("a<b")).serialize(),
            "v:\"a\\u003cb\""
        );
        // Go's encoder: serde_json's JSON with HTML characters and the line
        // and paragraph separators escaped.
        let go = |v: &Value| {
            serde_json::to_string(v)
                .unwrap()
                .replace('<', "\\u003c")
                .replace('>', "\\u003e")
                .replace('&', "\\u0026")
                .replace('\u{2028}', "\\u2028")
                .replace('\u{2029}', "\\u2029")
        };
        for v in [
            json!("a<b>&\u{2028}\u{2029}é€\"\\"),
            json!(1.5),
            json!(-3),
            json!({"b": [1, "x>"], "a": null}),
            json!(true),
        ] {
            assert_eq!(
                PathElement::Value(v.clone()).serialize(),
                format!("v:{}", go(&v))
            );
            assert_eq!(
                PathElement::Key(vec![("k<".into(), v.clone()), ("z".into(), json!(2))])
                    .serialize(),
                format!("k:{{\"k\\u003c\":{},\"z\":2}}", go(&v))
            );
        }
        assert_eq!(
            manager_identifier("m<&", "Update", "v1", ""),
            r#"{"manager":"m\u003c\u0026","operation":"Update","apiVersion":"v1"}"#
        );
    }

    #[test]
    fn entries_sort_like_upstream() {
        let entry = |m: &str, op: &str, t: &str| ManagedEntry {
            manager: m.into(),
            operation: op.into(),
            api_version: "v1".into(),
            subresource: String::new(),
            time: Some(t.into()),
            fields: FieldSet::from_paths([&[PathElement::Field("x".into())][..]]),
        };
        let out = encode_managed_fields(vec![
            entry("b", "Update", "2024-01-01T00:00:00Z"),
            entry("a", "Update", "2024-01-01T00:00:01Z"),
            entry("z", "Apply", "2024-01-01T00:00:05Z"),
        ]);
        let order: Vec<&str> = out.iter().map(|e| e["manager"].as_str().unwrap()).collect();
        assert_eq!(order, vec!["z", "b", "a"]);
    }

    /// Fields are found by name as by their path elements, in small sets
    /// (compared one by one) and larger ones (searched), among elements of
    /// other kinds.
    #[test]
    fn fields_are_found_by_name() {
        let field = |name: &str| PathElement::Field(name.into());
        let names = ["a", "b", "ba", "c", "d", "e", "f", "g", "h", "i", "j", "k"];
        for len in [0, 1, 3, 8, 9, 12] {
            let mut set = FieldSet::new();
            for name in &names[..len] {
                set.insert(&[field(name)]);
                set.insert(&[field(name), field("x")]);
            }
            set.insert(&[PathElement::Value(json!("a"))]);
            set.insert(&[PathElement::Index(1), field("x")]);
            for name in ["", "a", "b", "ba", "bb", "h", "k", "z", "x"] {
                assert_eq!(
                    set.has_field(name),
                    set.has_member(&field(name)),
                    "{len} {name}"
                );
                assert_eq!(
                    set.child_field(name),
                    set.child(&field(name)),
                    "{len} {name}"
                );
            }
        }
    }

    /// [`record_typed`] leaves the entries [`record`] writes, typed: on a
    /// create, an update of tracked and untracked objects, and a reset.
    #[test]
    fn typed_records_are_the_json_ones() {
        let schema = service_schema();
        let tracking = Tracking::new(&schema);
        let writer = Writer::new("m", "v1");
        let created = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "labels": {"a": "b"}},
            "spec": {"ports": [{"port": 80, "protocol": "TCP"}], "selector": {"app": "x"}}});
        let mut live = created.clone();
        record(&mut live, None, &writer, &tracking);
        let mut changed = live.clone();
        changed["spec"]["selector"]["app"] = json!("y");
        let mut reset = changed.clone();
        reset["metadata"]["managedFields"] = json!([]);
        let untracked = created.clone();
        let other = Writer::new("n", "v1");
        for (obj, live, writer) in [
            (&created, None, &writer),
            (&changed, Some(&live), &other),
            (&reset, Some(&live), &other),
            (&changed, Some(&untracked), &other),
        ] {
            let mut written = obj.clone();
            record(&mut written, live, writer, &tracking);
            let mut typed = obj.clone();
            let entries = record_typed(&mut typed, live, writer, &tracking).unwrap();
            let as_json: Vec<Value> = entries.into_iter().map(|e| e.into_value()).collect();
            let want = written["metadata"]
                .get("managedFields")
                .cloned()
                .unwrap_or(json!([]));
            let strip = |v: &Value| {
                let mut v = v.clone();
                v.as_array_mut().into_iter().flatten().for_each(|e| {
                    e.as_object_mut().map(|o| o.remove("time"));
                });
                v
            };
            assert_eq!(strip(&Value::Array(as_json)), strip(&want), "{obj}");
            assert!(typed["metadata"].get("managedFields").is_none());
        }
    }
}
