//! Server-side apply on JSON objects, with the semantics of kube-apiserver 1.32
//! (sigs.k8s.io/structured-merge-diff v4.4 `merge.Updater.Apply` behind
//! k8s.io/apimachinery's field manager).
//!
//! [`apply`] is pure: live object and applied configuration in, new object
//! (with `metadata.managedFields` updated) or [`ApplyConflicts`] out.
//!
//! 1. The configuration is merged over the live object: maps recursively,
//!    associative lists by merge key, set lists as unions (live order kept,
//!    configuration order respected for shared items), scalars and atomic lists
//!    replaced. A `null` in the configuration removes the field.
//! 2. The configuration's field set (system fields stripped) becomes the
//!    manager's `Apply` entry.
//! 3. Fields the manager applied last time but no longer does are removed from
//!    the object unless some manager (any operation) still owns them.
//! 4. Fields whose value changes (or that appear) and are owned by another
//!    manager are conflicts; with `force` they move to the applier instead.
//!    Applying an equal value shares ownership.
//!
//! An object without managedFields first credits its fields to an `Update` by
//! `before-first-apply`, as upstream does. The apply time is stamped only when
//! the object changes (a no-op apply leaves managedFields as they were).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;

use apimachinery::{GroupResource, StatusCause, StatusError, meta};
use patch::PatchMeta;
use serde_json::{Map, Value, json};

use crate::managed_fields::{
    BEFORE_FIRST_APPLY, FieldSet, ListKind, ManagedEntry, PathElement, Tracking, Walker, Writer,
    compare, describe_manager, field_set_of, managed_of, manager_identifier, path_string,
    set_managed_fields, system_fields, update_entries,
};

/// One field another manager owns and the configuration would change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The owning manager's name.
    pub manager: String,
    /// Its operation: `Apply` or `Update`.
    pub operation: String,
    /// Its apiVersion (shown for `Update` owners).
    pub api_version: String,
    /// Its subresource, if any.
    pub subresource: String,
    /// Upstream's path syntax: `.data.key`, `.spec.ports[port=80].name`,
    /// `.metadata.finalizers[="a"]`.
    pub field_path: String,
}

impl Conflict {
    /// The manager as upstream prints it: `"m"` for appliers, `"m" using v1`
    /// for updaters (`"m" with subresource "status" using v1`).
    pub fn describe_manager(&self) -> String {
        describe_manager(
            &self.manager,
            &self.operation,
            &self.api_version,
            &self.subresource,
        )
    }

    fn identifier(&self) -> String {
        manager_identifier(
            &self.manager,
            &self.operation,
            &self.api_version,
            &self.subresource,
        )
    }
}

/// Every conflict of one apply, ordered by owner (upstream sorts owners by
/// their manager identifier) and then by path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyConflicts {
    pub conflicts: Vec<Conflict>,
}

impl ApplyConflicts {
    /// Upstream's text: `Apply failed with 1 conflict: conflict with "m" using
    /// v1: .data.a`, or for several `Apply failed with 2 conflicts: conflicts
    /// with "m1":\n- .data.a\nconflicts with "m2" using v1:\n- .data.b`.
    pub fn message(&self) -> String {
        if let [only] = self.conflicts.as_slice() {
            return format!(
                "Apply failed with 1 conflict: conflict with {}: {}",
                only.describe_manager(),
                only.field_path
            );
        }
        let mut groups: BTreeMap<String, (String, Vec<&str>)> = BTreeMap::new();
        for c in &self.conflicts {
            groups
                .entry(c.identifier())
                .or_insert_with(|| (c.describe_manager(), Vec::new()))
                .1
                .push(&c.field_path);
        }
        let mut lines = Vec::new();
        for (description, paths) in groups.into_values() {
            lines.push(format!("conflicts with {description}:"));
            lines.extend(paths.into_iter().map(|p| format!("- {p}")));
        }
        format!(
            "Apply failed with {} conflicts: {}",
            self.conflicts.len(),
            lines.join("\n")
        )
    }

    /// One `FieldManagerConflict` cause per conflict.
    pub fn causes(&self) -> Vec<StatusCause> {
        self.conflicts
            .iter()
            .map(|c| StatusCause {
                reason: "FieldManagerConflict".into(),
                message: format!("conflict with {}", c.describe_manager()),
                field: c.field_path.clone(),
            })
            .collect()
    }

    /// Upstream's 409 (`errors.NewApplyConflict`): reason `Conflict`, and
    /// details holding only the causes — upstream names neither the object nor
    /// its kind, so `group_resource` and `name` are not used.
    pub fn to_status(&self, _group_resource: &GroupResource, _name: &str) -> StatusError {
        StatusError::new(409, "Conflict", self.message()).with_causes(self.causes())
    }
}

impl fmt::Display for ApplyConflicts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for ApplyConflicts {}

/// Upstream's 400 for a configuration that carries managedFields (even `[]`).
pub fn check_config(config: &Value) -> Result<(), StatusError> {
    match config.pointer("/metadata/managedFields") {
        None | Some(Value::Null) => Ok(()),
        Some(_) => Err(StatusError::bad_request(
            "metadata.managedFields must be nil",
        )),
    }
}

/// Server-side apply of `config` by `writer` over `live` (`None`: the object
/// is being created). The writer's apiVersion (the served version) and
/// subresource are recorded in its entry; `now` is the RFC 3339 time to stamp.
/// Managed fields that cannot be decoded are treated as absent. See the module
/// docs for the rules.
pub fn apply(
    live: Option<&Value>,
    config: &Value,
    writer: &Writer<'_>,
    force: bool,
    tracking: &Tracking<'_>,
    now: &str,
) -> Result<Value, ApplyConflicts> {
    let schema = tracking.schema;
    let mut config = config.clone();
    meta::remove(&mut config, "managedFields");
    let (live_obj, mut entries) = match live {
        Some(l) => {
            let entries = managed_of(l).and_then(Result::ok).unwrap_or_default();
            let mut obj = l.clone();
            meta::remove(&mut obj, "managedFields");
            (obj, entries)
        }
        None => (json!({}), Vec::new()),
    };
    if entries.is_empty() && live.is_some() {
        let cmp = tracking.compare(&tracking.empty_beside(&live_obj), &live_obj);
        let before = Writer {
            manager: BEFORE_FIRST_APPLY,
            ..*writer
        };
        update_entries(&mut entries, cmp, &before, now);
    }

    let merged = merge(&mut Walker::new(schema), Some(&live_obj), &config).unwrap_or(json!({}));

    // The configuration's fields become the applier's set.
    let applier = manager_identifier(writer.manager, "Apply", "", writer.subresource);
    let configured = field_set_of(&config, schema);
    let mut applied = configured.difference(system_fields());
    applied.remove_below(&tracking.reset);
    let (last, last_time) = match entries.iter().position(|e| e.identifier() == applier) {
        Some(i) => {
            let e = entries.remove(i);
            (e.fields, e.time)
        }
        None => (FieldSet::new(), None),
    };
    entries.push(ManagedEntry {
        manager: writer.manager.to_string(),
        operation: "Apply".into(),
        api_version: writer.api_version.to_string(),
        subresource: writer.subresource.to_string(),
        time: last_time,
        fields: applied.clone(),
    });

    // Prune what the applier let go of and nobody owns.
    let mut new_obj = merged;
    if !last.is_empty() {
        // Upstream strips system fields only after pruning, so the
        // configuration's `metadata.name` keeps `metadata` alive; system
        // fields are never pruned here either way.
        let owned = entries
            .iter()
            .fold(configured.union(system_fields()), |acc, e| {
                acc.union(&e.fields)
            });
        let prune = last
            .ensure_named_fields_are_members()
            .difference(&owned.ensure_named_fields_are_members());
        if !prune.is_empty() {
            new_obj = remove_items(&mut Walker::new(schema), &new_obj, &prune).unwrap_or(json!({}));
        }
    }

    // Conflicts, then ownership moves.
    let cmp = tracking.compare(&live_obj, &new_obj);
    // A field the configuration clears (null) is a change like any other.
    let cleared = applied.intersection(&cmp.removed);
    let touched = cmp.modified.union(&cmp.added).union(&cleared);
    // kubectl taking over from its client-side apply: fields whose live value is
    // still what `last-applied-configuration` says are not conflicts.
    let contested = match (force, writer.manager == KUBECTL_MANAGER) {
        (false, true) => match last_applied_fields(&live_obj, writer.api_version, schema) {
            Some(forgiven) => touched.difference(&forgiven),
            None => touched.clone(),
        },
        _ => touched.clone(),
    };
    let mut conflicts: Vec<(String, Conflict)> = Vec::new();
    for e in &entries {
        let id = e.identifier();
        if id == applier {
            continue;
        }
        for path in e.fields.intersection(&contested).paths() {
            conflicts.push((
                id.clone(),
                Conflict {
                    manager: e.manager.clone(),
                    operation: e.operation.clone(),
                    api_version: e.api_version.clone(),
                    subresource: e.subresource.clone(),
                    field_path: path_string(&path),
                },
            ));
        }
    }
    if !force && !conflicts.is_empty() {
        conflicts.sort_by(|a, b| a.0.cmp(&b.0));
        return Err(ApplyConflicts {
            conflicts: conflicts.into_iter().map(|(_, c)| c).collect(),
        });
    }
    for e in entries.iter_mut() {
        if e.identifier() != applier {
            e.fields = e.fields.difference(&touched).difference(&cmp.removed);
        }
    }

    let changed = new_obj != live_obj;
    if changed && let Some(e) = entries.iter_mut().find(|e| e.identifier() == applier) {
        e.time = Some(now.to_string());
    }
    let mut result = if changed { new_obj } else { live_obj };
    set_managed_fields(&mut result, entries);
    if writer.manager == KUBECTL_MANAGER {
        refresh_last_applied(&mut result, &config);
    }
    Ok(result)
}

/// The field manager `kubectl apply --server-side` uses.
const KUBECTL_MANAGER: &str = "kubectl";
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The fields of the live object's `last-applied-configuration` that still hold
/// the value it records (upstream's `lastAppliedManager`); `None` when there is
/// no usable annotation for this apiVersion.
fn last_applied_fields(
    live: &Value,
    api_version: &str,
    schema: &dyn PatchMeta,
) -> Option<FieldSet> {
    let text = live
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(LAST_APPLIED))
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())?;
    let last_applied: Value = serde_json::from_str(text).ok()?;
    if meta::api_version(&last_applied) != api_version {
        return None;
    }
    let differs = compare(&last_applied, live, schema);
    Some(
        field_set_of(&last_applied, schema)
            .difference(&differs.modified)
            .difference(&differs.added)
            .difference(&differs.removed),
    )
}

/// After kubectl's server-side apply, an existing `last-applied-configuration`
/// records the applied configuration (upstream's `lastAppliedUpdater`), so a
/// later client-side apply computes its patch from it.
fn refresh_last_applied(obj: &mut Value, config: &Value) {
    let present = obj
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(LAST_APPLIED))
        .and_then(Value::as_str)
        .is_some_and(|t| !t.is_empty());
    if !present {
        return;
    }
    let mut recorded = config.clone();
    if let Some(annotations) = recorded
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        annotations.remove(LAST_APPLIED);
    }
    // Go's encoder: sorted keys, HTML-escaped, newline-terminated.
    let mut text = Vec::new();
    apimachinery::json::write_value(&mut text, &recorded);
    text.push(b'\n');
    let text = String::from_utf8(text).unwrap_or_default();
    obj["metadata"]["annotations"][LAST_APPLIED] = Value::String(text);
}

/// Merge `r` (configuration) over `l` (live); `None` removes the field.
/// `config` merged over `live` as apply merges (the schema's list types and
/// map keys), without managed fields or conflicts: a mutating admission
/// policy's apply configuration.
pub fn merge_configuration(live: &Value, config: &Value, schema: &dyn PatchMeta) -> Value {
    merge(&mut Walker::new(schema), Some(live), config).unwrap_or_else(|| live.clone())
}

fn merge(w: &mut Walker<'_>, l: Option<&Value>, r: &Value) -> Option<Value> {
    match r {
        Value::Null => None,
        Value::Object(_) if w.atomic_map() => Some(r.clone()),
        Value::Object(rm) => {
            let lm = l.and_then(Value::as_object);
            if rm.is_empty() && lm.is_none_or(Map::is_empty) {
                return Some(r.clone());
            }
            let mut out = lm.cloned().unwrap_or_default();
            for (k, rv) in rm {
                w.push_field(k);
                let merged = merge(w, lm.and_then(|m| m.get(k)), rv);
                w.pop_field();
                match merged {
                    Some(v) => {
                        out.insert(k.clone(), v);
                    }
                    None => {
                        out.remove(k);
                    }
                }
            }
            Some(Value::Object(out))
        }
        Value::Array(ra) => {
            let la: &[Value] = l.and_then(Value::as_array).map_or(&[], |v| v);
            let kind = w.list_kind(&[la, ra]);
            if kind == ListKind::Atomic || (la.is_empty() && ra.is_empty()) {
                return Some(r.clone());
            }
            Some(Value::Array(merge_list(w, la, ra, &kind)))
        }
        _ => Some(r.clone()),
    }
}

fn merge_item(
    w: &mut Walker<'_>,
    pe: &PathElement,
    l: Option<&Value>,
    r: Option<&Value>,
) -> Option<Value> {
    w.path.push(pe.clone());
    let out = match r {
        Some(r) => merge(w, l, r),
        None => l.cloned(),
    };
    w.path.pop();
    out
}

/// Upstream's `mergingWalker.visitListItems`: live-only items keep their
/// place, shared and new items follow the configuration's order.
fn merge_list(w: &mut Walker<'_>, lhs: &[Value], rhs: &[Value], kind: &ListKind) -> Vec<Value> {
    let mut r_pes: Vec<PathElement> = Vec::new();
    let mut r_obs: BTreeMap<PathElement, &Value> = BTreeMap::new();
    for item in rhs {
        let Some(pe) = kind.element(item) else {
            continue;
        };
        // Upstream rejects duplicates in a configuration; the first one wins here.
        if !r_obs.contains_key(&pe) {
            r_obs.insert(pe.clone(), item);
            r_pes.push(pe);
        }
    }
    let mut l_pes: Vec<(PathElement, &Value)> = Vec::new();
    // Duplicated live items have no single value to merge with.
    let mut l_obs: BTreeMap<PathElement, Option<&Value>> = BTreeMap::new();
    for item in lhs {
        let Some(pe) = kind.element(item) else {
            continue;
        };
        l_obs
            .entry(pe.clone())
            .and_modify(|v| *v = None)
            .or_insert(Some(item));
        l_pes.push((pe, item));
    }
    let mut shared: VecDeque<&PathElement> =
        r_pes.iter().filter(|pe| l_obs.contains_key(*pe)).collect();
    let mut next_shared = shared.pop_front();
    let mut merged_rhs: BTreeSet<PathElement> = BTreeSet::new();
    let mut out = Vec::with_capacity(lhs.len().max(rhs.len()));
    let (mut li, mut ri) = (0, 0);
    while li < l_pes.len() || ri < r_pes.len() {
        if li < l_pes.len() && ri < r_pes.len() {
            let pe = &l_pes[li].0;
            if *pe == r_pes[ri] {
                merged_rhs.insert(pe.clone());
                let l_child = l_obs.get(pe).copied().flatten();
                let r_child = r_obs.get(pe).copied();
                out.extend(merge_item(w, pe, l_child, r_child));
                li += 1;
                ri += 1;
                next_shared = shared.pop_front();
                continue;
            }
            if r_obs.contains_key(pe) && next_shared.is_some_and(|n| n != pe) {
                // A shared item, but not the next one in the configuration's order.
                li += 1;
                continue;
            }
        }
        if li < l_pes.len() {
            let (pe, item) = &l_pes[li];
            if !r_obs.contains_key(pe) {
                out.extend(merge_item(w, pe, Some(item), None));
                li += 1;
                continue;
            } else if merged_rhs.contains(pe) {
                li += 1;
            }
        }
        if ri < r_pes.len() {
            let pe = &r_pes[ri];
            merged_rhs.insert(pe.clone());
            let l_child = l_obs.get(pe).copied().flatten();
            let r_child = r_obs.get(pe).copied();
            out.extend(merge_item(w, pe, l_child, r_child));
            ri += 1;
            if next_shared.is_some_and(|n| n == pe) {
                next_shared = shared.pop_front();
            }
        }
    }
    out
}

/// Upstream's `RemoveItems`: drop every member path of `set` (with its
/// subtree). Maps and lists emptied this way disappear (`None`).
fn remove_items(w: &mut Walker<'_>, v: &Value, set: &FieldSet) -> Option<Value> {
    match v {
        Value::Object(m) if !m.is_empty() => {
            let mut out = Map::new();
            for (k, child) in m {
                let pe = PathElement::Field(k.as_str().into());
                if set.has_member(&pe) {
                    continue;
                }
                match set.child(&pe) {
                    Some(sub) => {
                        w.push_field(k);
                        let kept = remove_items(w, child, sub);
                        w.pop_field();
                        if let Some(c) = kept {
                            out.insert(k.clone(), c);
                        }
                    }
                    None => {
                        out.insert(k.clone(), child.clone());
                    }
                }
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        Value::Array(items) if !items.is_empty() => {
            let kind = w.list_kind(&[items]);
            if kind == ListKind::Atomic {
                return Some(v.clone());
            }
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                let Some(pe) = kind.element(item) else {
                    out.push(item.clone());
                    continue;
                };
                if set.has_member(&pe) {
                    continue;
                }
                match set.child(&pe) {
                    Some(sub) => {
                        w.path.push(pe);
                        let kept = remove_items(w, item, sub);
                        w.path.pop();
                        out.extend(kept);
                    }
                    None => out.push(item.clone()),
                }
            }
            (!out.is_empty()).then_some(Value::Array(out))
        }
        _ => Some(v.clone()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::managed_fields::record_update_with_schema;
    use patch::PatchSchema;

    enum Op {
        /// A create recorded as an Update by this manager (`kubectl create`).
        Create(&'static str, Value),
        /// An update (PUT) to this whole object by this manager.
        Update(&'static str, Value),
        /// An apply by this manager.
        Apply(&'static str, Value),
        /// An apply with `force=true`.
        ForceApply(&'static str, Value),
    }

    enum Expect {
        /// Succeeds; the object (without managedFields) and the entries as
        /// `[manager, operation, fieldsV1]`, sorted by operation then manager.
        Ok(Value, Value),
        /// Succeeds without changing anything, managedFields included.
        Unchanged,
        /// Fails with this message and these `[message, field]` causes.
        Conflict(&'static str, Value),
    }

    struct Case {
        name: &'static str,
        schema: PatchSchema,
        steps: Vec<(Op, Expect)>,
    }

    fn cm(data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": data})
    }

    /// A configuration that sets no data.
    fn bare() -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
    }

    fn entries_summary(obj: &Value) -> Value {
        let mut rows: Vec<Value> = obj
            .pointer("/metadata/managedFields")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|e| json!([e["manager"], e["operation"], e["fieldsV1"]]))
                    .collect()
            })
            .unwrap_or_default();
        rows.sort_by_key(|r| format!("{}/{}", r[1], r[0]));
        Value::Array(rows)
    }

    fn run(case: Case) {
        let mut state: Option<Value> = None;
        for (i, (op, expect)) in case.steps.into_iter().enumerate() {
            let ctx = format!("{} step {}", case.name, i + 1);
            let now = format!("2024-01-01T00:00:{:02}Z", i + 1);
            let result = match op {
                Op::Create(manager, mut obj) | Op::Update(manager, mut obj) => {
                    record_update_with_schema(
                        &mut obj,
                        state.as_ref(),
                        manager,
                        "v1",
                        &case.schema,
                    );
                    Ok(obj)
                }
                Op::Apply(manager, config) => apply(
                    state.as_ref(),
                    &config,
                    &Writer::new(manager, "v1"),
                    false,
                    &Tracking::new(&case.schema),
                    &now,
                ),
                Op::ForceApply(manager, config) => apply(
                    state.as_ref(),
                    &config,
                    &Writer::new(manager, "v1"),
                    true,
                    &Tracking::new(&case.schema),
                    &now,
                ),
            };
            match (expect, result) {
                (Expect::Ok(object, managed), Ok(got)) => {
                    let mut bare = got.clone();
                    meta::remove(&mut bare, "managedFields");
                    assert_eq!(bare, object, "{ctx}: object");
                    assert_eq!(entries_summary(&got), managed, "{ctx}: managedFields");
                    state = Some(got);
                }
                (Expect::Unchanged, Ok(got)) => {
                    assert_eq!(Some(&got), state.as_ref(), "{ctx}: not a no-op");
                }
                (Expect::Conflict(message, causes), Err(err)) => {
                    assert_eq!(err.message(), message, "{ctx}: message");
                    let got: Vec<Value> = err
                        .causes()
                        .iter()
                        .map(|c| {
                            assert_eq!(c.reason, "FieldManagerConflict");
                            json!([c.message, c.field])
                        })
                        .collect();
                    assert_eq!(Value::Array(got), causes, "{ctx}: causes");
                }
                (_, Ok(got)) => panic!("{ctx}: expected a conflict, got {got}"),
                (_, Err(err)) => panic!("{ctx}: unexpected conflict: {err}"),
            }
        }
    }

    #[test]
    fn configmap_scenarios() {
        let schema = patch::builtin_schema("", "v1", "ConfigMap");
        let cases = vec![
            Case {
                name: "create via apply",
                schema: schema.clone(),
                steps: vec![(
                    Op::Apply(
                        "kubectl",
                        json!({"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": "x", "labels": {"app": "web"}}, "data": {"a": "1"}}),
                    ),
                    Expect::Ok(
                        json!({"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": "x", "labels": {"app": "web"}}, "data": {"a": "1"}}),
                        json!([["kubectl", "Apply",
                            {"f:data": {"f:a": {}}, "f:metadata": {"f:labels": {"f:app": {}}}}]]),
                    ),
                )],
            },
            Case {
                name: "applying twice is a no-op",
                schema: schema.clone(),
                steps: vec![
                    (
                        Op::Apply("kubectl", cm(json!({"a": "1"}))),
                        Expect::Ok(
                            cm(json!({"a": "1"})),
                            json!([["kubectl", "Apply", {"f:data": {"f:a": {}}}]]),
                        ),
                    ),
                    (
                        Op::Apply("kubectl", cm(json!({"a": "1"}))),
                        Expect::Unchanged,
                    ),
                ],
            },
            Case {
                name: "fields dropped from the configuration are removed",
                schema: schema.clone(),
                steps: vec![
                    (
                        Op::Apply(
                            "kubectl",
                            json!({"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": "x", "labels": {"app": "web"}}, "data": {"a": "1", "b": "2"}}),
                        ),
                        Expect::Ok(
                            json!({"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": "x", "labels": {"app": "web"}}, "data": {"a": "1", "b": "2"}}),
                            json!([["kubectl", "Apply",
                                {"f:data": {"f:a": {}, "f:b": {}}, "f:metadata": {"f:labels": {"f:app": {}}}}]]),
                        ),
                    ),
                    (
                        Op::Apply("kubectl", cm(json!({"a": "1"}))),
                        Expect::Ok(
                            cm(json!({"a": "1"})),
                            json!([["kubectl", "Apply", {"f:data": {"f:a": {}}}]]),
                        ),
                    ),
                    (
                        Op::Apply(
                            "kubectl",
                            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}),
                        ),
                        Expect::Ok(
                            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}),
                            json!([]),
                        ),
                    ),
                ],
            },
            Case {
                name: "two appliers of different fields coexist",
                schema: schema.clone(),
                steps: vec![
                    (
                        Op::Apply("a", cm(json!({"a": "1"}))),
                        Expect::Ok(
                            cm(json!({"a": "1"})),
                            json!([["a", "Apply", {"f:data": {"f:a": {}}}]]),
                        ),
                    ),
                    (
                        Op::Apply("b", cm(json!({"b": "2"}))),
                        Expect::Ok(
                            cm(json!({"a": "1", "b": "2"})),
                            json!([["a", "Apply", {"f:data": {"f:a": {}}}], ["b", "Apply", {"f:data": {"f:b": {}}}]]),
                        ),
                    ),
                    (
                        Op::Apply("a", bare()),
                        Expect::Ok(
                            cm(json!({"b": "2"})),
                            json!([["b", "Apply", {"f:data": {"f:b": {}}}]]),
                        ),
                    ),
                ],
            },
            Case {
                name: "conflict with another applier",
                schema: schema.clone(),
                steps: vec![
                    (
                        Op::Apply("a", cm(json!({"a": "1"}))),
                        Expect::Ok(
                            cm(json!({"a": "1"})),
                            json!([["a", "Apply", {"f:data": {"f:a": {}}}]]),
                        ),
                    ),
                    (
                        Op::Apply("b", cm(json!({"a": "2"}))),
                        Expect::Conflict(
                            r#"Apply failed with 1 conflict: conflict with "a": .data.a"#,
                            json!([[r#"conflict with "a""#, ".data.a"]]),
                        ),
                    ),
                ],
            },
            Case {
                name: "conflict with an updater",
                schema: schema.clone(),
                steps: vec![
                    (
                        Op::Create("kubectl-client-side-apply", cm(json!({"a": "1"}))),
                        Expect::Ok(
                            cm(json!({"a": "1"})),
                            json!([["kubectl-client-side-apply", "Update", {"f:data": {".": {}, "f:a": {}}}]]),
                        ),
                    ),
                    (
                        Op::Apply("kubectl", cm(json!({"a": "2"}))),
                        Expect::Conflict(
                            r#"Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .data.a"#,
                            json!([[
                                r#"conflict with "kubectl-client-side-apply" using v1"#,
                                ".data.a"
                            ]]),
                        ),
                    ),
                ],
            },
            Case {
                name: "several conflicts are grouped by owner",
                schema: schema.clone(),
                steps: vec![
                    (
                        Op::Apply("m1", cm(json!({"a": "1", "c": "1"}))),
                        Expect::Ok(
                            cm(json!({"a": "1", "c": "1"})),
                            json!([["m1", "Apply", {"f:data": {"f:a": {}, "f:c": {}}}]]),
                        ),
                    ),
                    (
                        Op::Update("m2", cm(json!({"a": "1", "b": "1", "c": "1"}))),
                        Expect::Ok(
                            cm(json!({"a": "1", "b": "1", "c": "1"})),
                            json!([
                                ["m1", "Apply", {"f:data": {"f:a": {}, "f:c": {}}}],
                                ["m2", "Update", {"f:data": {"f:b": {}}}]
                            ]),
                        ),
                    ),
                    (
                        Op::Apply("m3", cm(json!({"a": "2", "b": "2", "c": "2"}))),
                        Expect::Conflict(
                            "Apply failed with 3 conflicts: conflicts with \"m1\":\n- .data.a\n- .data.c\nconflicts with \"m2\" using v1:\n- .data.b",
                            json!([
                                [r#"conflict with "m1""#, ".data.a"],
                                [r#"conflict with "m1""#, ".data.c"],
                                [r#"conflict with "m2" using v1"#, ".data.b"]
                            ]),
                        ),
                    ),
                ],
            },
            Case {
                name: "force moves ownership",
                schema: schema.clone(),
                steps: vec![
                    (
                        Op::Apply("a", cm(json!({"a": "1", "b": "1"}))),
                        Expect::Ok(
                            cm(json!({"a": "1", "b": "1"})),
                            json!([["a", "Apply", {"f:data": {"f:a": {}, "f:b": {}}}]]),
                        ),
                    ),
                    (
                        Op::ForceApply("b", cm(json!({"a": "2"}))),
                        Expect::Ok(
                            cm(json!({"a": "2", "b": "1"})),
                            json!([["a", "Apply", {"f:data": {"f:b": {}}}], ["b", "Apply", {"f:data": {"f:a": {}}}]]),
                        ),
                    ),
                    (
                        Op::Apply("a", cm(json!({"a": "1", "b": "1"}))),
                        Expect::Conflict(
                            r#"Apply failed with 1 conflict: conflict with "b": .data.a"#,
                            json!([[r#"conflict with "b""#, ".data.a"]]),
                        ),
                    ),
                ],
            },
            Case {
                name: "equal values are shared",
                schema: schema.clone(),
                steps: vec![
                    (
                        Op::Apply("a", cm(json!({"a": "1"}))),
                        Expect::Ok(
                            cm(json!({"a": "1"})),
                            json!([["a", "Apply", {"f:data": {"f:a": {}}}]]),
                        ),
                    ),
                    (
                        Op::Apply("b", cm(json!({"a": "1"}))),
                        Expect::Ok(
                            cm(json!({"a": "1"})),
                            json!([["a", "Apply", {"f:data": {"f:a": {}}}], ["b", "Apply", {"f:data": {"f:a": {}}}]]),
                        ),
                    ),
                    // `a` lets go; `b` still owns the field, so it stays.
                    (
                        Op::Apply("a", bare()),
                        Expect::Ok(
                            cm(json!({"a": "1"})),
                            json!([["b", "Apply", {"f:data": {"f:a": {}}}]]),
                        ),
                    ),
                    (Op::Apply("b", bare()), Expect::Ok(bare(), json!([]))),
                ],
            },
            Case {
                name: "null clears a field and conflicts like a change",
                schema: schema.clone(),
                steps: vec![
                    (
                        Op::Apply("a", cm(json!({"a": "1", "b": "2"}))),
                        Expect::Ok(
                            cm(json!({"a": "1", "b": "2"})),
                            json!([["a", "Apply", {"f:data": {"f:a": {}, "f:b": {}}}]]),
                        ),
                    ),
                    (
                        Op::Apply("b", cm(json!({"a": null}))),
                        Expect::Conflict(
                            r#"Apply failed with 1 conflict: conflict with "a": .data.a"#,
                            json!([[r#"conflict with "a""#, ".data.a"]]),
                        ),
                    ),
                    (
                        Op::ForceApply("b", cm(json!({"a": null}))),
                        Expect::Ok(
                            cm(json!({"b": "2"})),
                            json!([["a", "Apply", {"f:data": {"f:b": {}}}], ["b", "Apply", {"f:data": {"f:a": {}}}]]),
                        ),
                    ),
                ],
            },
            Case {
                name: "kubectl apply --server-side over kubectl create",
                schema: schema.clone(),
                steps: vec![
                    (
                        Op::Create(
                            "kubectl-create",
                            json!({"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": "x", "namespace": "default", "uid": "u1",
                                    "creationTimestamp": "2024-01-01T00:00:00Z",
                                    "annotations": {"note": "by-create"}},
                                "data": {"a": "1"}}),
                        ),
                        Expect::Ok(
                            json!({"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": "x", "namespace": "default", "uid": "u1",
                                    "creationTimestamp": "2024-01-01T00:00:00Z",
                                    "annotations": {"note": "by-create"}},
                                "data": {"a": "1"}}),
                            json!([["kubectl-create", "Update", {
                                "f:data": {".": {}, "f:a": {}},
                                "f:metadata": {"f:annotations": {".": {}, "f:note": {}}}
                            }]]),
                        ),
                    ),
                    // The configuration kubectl sends: no annotations, no system fields.
                    (
                        Op::Apply(
                            "kubectl",
                            json!({"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": "x", "namespace": "default"},
                                "data": {"a": "1", "b": "2"}}),
                        ),
                        Expect::Ok(
                            json!({"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": "x", "namespace": "default", "uid": "u1",
                                    "creationTimestamp": "2024-01-01T00:00:00Z",
                                    "annotations": {"note": "by-create"}},
                                "data": {"a": "1", "b": "2"}}),
                            json!([
                                ["kubectl", "Apply", {"f:data": {"f:a": {}, "f:b": {}}}],
                                ["kubectl-create", "Update", {
                                    "f:data": {".": {}, "f:a": {}},
                                    "f:metadata": {"f:annotations": {".": {}, "f:note": {}}}
                                }]
                            ]),
                        ),
                    ),
                    // Dropping `a`: kubectl-create still owns it, so it stays.
                    (
                        Op::Apply(
                            "kubectl",
                            json!({"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": "x", "namespace": "default"}, "data": {"b": "2"}}),
                        ),
                        Expect::Ok(
                            json!({"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": "x", "namespace": "default", "uid": "u1",
                                    "creationTimestamp": "2024-01-01T00:00:00Z",
                                    "annotations": {"note": "by-create"}},
                                "data": {"a": "1", "b": "2"}}),
                            json!([
                                ["kubectl", "Apply", {"f:data": {"f:b": {}}}],
                                ["kubectl-create", "Update", {
                                    "f:data": {".": {}, "f:a": {}},
                                    "f:metadata": {"f:annotations": {".": {}, "f:note": {}}}
                                }]
                            ]),
                        ),
                    ),
                    (
                        Op::Apply(
                            "kubectl",
                            json!({"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": "x", "namespace": "default"}, "data": {"a": "3"}}),
                        ),
                        Expect::Conflict(
                            r#"Apply failed with 1 conflict: conflict with "kubectl-create" using v1: .data.a"#,
                            json!([[r#"conflict with "kubectl-create" using v1"#, ".data.a"]]),
                        ),
                    ),
                ],
            },
        ];
        for case in cases {
            run(case);
        }
    }

    fn svc(ports: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": ports}})
    }

    fn port_fields(port: u16, fields: &[&str]) -> (String, Value) {
        let mut m = Map::new();
        m.insert(".".into(), json!({}));
        for f in fields {
            m.insert(format!("f:{f}"), json!({}));
        }
        // A port without `protocol` is keyed by its default, TCP.
        (
            format!("k:{{\"port\":{port},\"protocol\":\"TCP\"}}"),
            Value::Object(m),
        )
    }

    fn ports_set(items: &[(u16, &[&str])]) -> Value {
        let ports: Map<String, Value> = items.iter().map(|(p, f)| port_fields(*p, f)).collect();
        json!({"f:spec": {"f:ports": ports}})
    }

    #[test]
    fn associative_list_scenarios() {
        let schema = patch::builtin_schema("", "v1", "Service");
        run(Case {
            name: "service ports by key",
            schema,
            steps: vec![
                (
                    Op::Apply("a", svc(json!([{"port": 80, "name": "http"}]))),
                    Expect::Ok(
                        svc(json!([{"port": 80, "name": "http"}])),
                        json!([["a", "Apply", ports_set(&[(80, &["name", "port"])])]]),
                    ),
                ),
                (
                    Op::Apply("b", svc(json!([{"port": 443, "name": "https"}]))),
                    Expect::Ok(
                        svc(json!([{"port": 80, "name": "http"}, {"port": 443, "name": "https"}])),
                        json!([
                            ["a", "Apply", ports_set(&[(80, &["name", "port"])])],
                            ["b", "Apply", ports_set(&[(443, &["name", "port"])])]
                        ]),
                    ),
                ),
                (
                    Op::Apply(
                        "b",
                        svc(json!([{"port": 443, "name": "https"}, {"port": 80, "name": "web"}])),
                    ),
                    Expect::Conflict(
                        r#"Apply failed with 1 conflict: conflict with "a": .spec.ports[port=80,protocol="TCP"].name"#,
                        json!([[
                            r#"conflict with "a""#,
                            ".spec.ports[port=80,protocol=\"TCP\"].name"
                        ]]),
                    ),
                ),
                // An item `a` no longer applies goes; b's item stays; new items append.
                (
                    Op::Apply("a", svc(json!([{"port": 8080, "name": "alt"}]))),
                    Expect::Ok(
                        svc(json!([{"port": 443, "name": "https"}, {"port": 8080, "name": "alt"}])),
                        json!([
                            ["a", "Apply", ports_set(&[(8080, &["name", "port"])])],
                            ["b", "Apply", ports_set(&[(443, &["name", "port"])])]
                        ]),
                    ),
                ),
                // Sharing an item with an equal value: only b's extra field is b's alone.
                (
                    Op::Apply(
                        "b",
                        svc(
                            json!([{"port": 443, "name": "https"}, {"port": 8080, "name": "alt", "targetPort": 9090}]),
                        ),
                    ),
                    Expect::Ok(
                        svc(
                            json!([{"port": 443, "name": "https"}, {"port": 8080, "name": "alt", "targetPort": 9090}]),
                        ),
                        json!([
                            ["a", "Apply", ports_set(&[(8080, &["name", "port"])])],
                            [
                                "b",
                                "Apply",
                                ports_set(&[
                                    (443, &["name", "port"]),
                                    (8080, &["name", "port", "targetPort"])
                                ])
                            ]
                        ]),
                    ),
                ),
            ],
        });
    }

    #[test]
    fn set_list_scenarios() {
        let schema = patch::builtin_schema("", "v1", "ConfigMap");
        let with_finalizers = |f: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "finalizers": f}});
        let owns = |items: &[&str]| {
            let m: Map<String, Value> = items
                .iter()
                .map(|i| (format!("v:{}", json!(i)), json!({})))
                .collect();
            json!({"f:metadata": {"f:finalizers": m}})
        };
        run(Case {
            name: "finalizers",
            schema,
            steps: vec![
                (
                    Op::Apply("a", with_finalizers(json!(["a.io/x"]))),
                    Expect::Ok(
                        with_finalizers(json!(["a.io/x"])),
                        json!([["a", "Apply", owns(&["a.io/x"])]]),
                    ),
                ),
                (
                    Op::Apply("b", with_finalizers(json!(["b.io/y", "a.io/x"]))),
                    Expect::Ok(
                        with_finalizers(json!(["b.io/y", "a.io/x"])),
                        json!([
                            ["a", "Apply", owns(&["a.io/x"])],
                            ["b", "Apply", owns(&["a.io/x", "b.io/y"])]
                        ]),
                    ),
                ),
                (
                    Op::Apply(
                        "b",
                        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}),
                    ),
                    Expect::Ok(
                        with_finalizers(json!(["a.io/x"])),
                        json!([["a", "Apply", owns(&["a.io/x"])]]),
                    ),
                ),
            ],
        });
    }

    #[test]
    fn objects_without_managed_fields_start_with_before_first_apply() {
        let schema = patch::builtin_schema("", "v1", "ConfigMap");
        let live = cm(json!({"a": "1"}));
        let err = apply(
            Some(&live),
            &cm(json!({"a": "2"})),
            &Writer::new("kubectl", "v1"),
            false,
            &Tracking::new(&schema),
            "2024-01-01T00:00:00Z",
        )
        .unwrap_err();
        assert_eq!(
            err.message(),
            r#"Apply failed with 1 conflict: conflict with "before-first-apply" using v1: .data.a"#
        );
        let ok = apply(
            Some(&live),
            &cm(json!({"b": "2"})),
            &Writer::new("kubectl", "v1"),
            false,
            &Tracking::new(&schema),
            "2024-01-01T00:00:00Z",
        )
        .unwrap();
        assert_eq!(
            entries_summary(&ok),
            json!([
                ["kubectl", "Apply", {"f:data": {"f:b": {}}}],
                ["before-first-apply", "Update", {"f:data": {".": {}, "f:a": {}}}]
            ])
        );
    }

    #[test]
    fn times_and_versions() {
        let schema = patch::builtin_schema("", "v1", "ConfigMap");
        let first = apply(
            None,
            &cm(json!({"a": "1"})),
            &Writer::new("m", "v1"),
            false,
            &Tracking::new(&schema),
            "2024-01-01T00:00:01Z",
        )
        .unwrap();
        let entry = &first["metadata"]["managedFields"][0];
        assert_eq!(entry["time"], "2024-01-01T00:00:01Z");
        assert_eq!(entry["apiVersion"], "v1");
        assert_eq!(entry["fieldsType"], "FieldsV1");
        // A no-op apply keeps the old time.
        let again = apply(
            Some(&first),
            &cm(json!({"a": "1"})),
            &Writer::new("m", "v1"),
            false,
            &Tracking::new(&schema),
            "2024-01-01T00:00:09Z",
        )
        .unwrap();
        assert_eq!(again, first);
        // A change stamps the new one.
        let changed = apply(
            Some(&first),
            &cm(json!({"a": "2"})),
            &Writer::new("m", "v1"),
            false,
            &Tracking::new(&schema),
            "2024-01-01T00:00:09Z",
        )
        .unwrap();
        assert_eq!(
            changed["metadata"]["managedFields"][0]["time"],
            "2024-01-01T00:00:09Z"
        );
    }

    #[test]
    fn conflict_status_matches_upstream() {
        let conflicts = ApplyConflicts {
            conflicts: vec![Conflict {
                manager: "kubectl-client-side-apply".into(),
                operation: "Update".into(),
                api_version: "v1".into(),
                subresource: String::new(),
                field_path: ".data.a".into(),
            }],
        };
        let status = conflicts.to_status(&GroupResource::new("", "configmaps"), "x");
        let body: Value = serde_json::from_slice(&status.to_json()).unwrap();
        assert_eq!(
            body,
            json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using v1: .data.a",
                "reason": "Conflict",
                "details": {"causes": [{
                    "reason": "FieldManagerConflict",
                    "message": "conflict with \"kubectl-client-side-apply\" using v1",
                    "field": ".data.a"
                }]},
                "code": 409
            })
        );
        let sub = Conflict {
            manager: "m".into(),
            operation: "Update".into(),
            api_version: "apps/v1".into(),
            subresource: "scale".into(),
            field_path: ".spec.replicas".into(),
        };
        assert_eq!(
            sub.describe_manager(),
            r#""m" with subresource "scale" using apps/v1"#
        );
        assert!(check_config(&json!({"metadata": {"managedFields": []}})).is_err());
        assert!(check_config(&cm(json!({}))).is_ok());
    }

    #[test]
    fn list_order_follows_upstream_merge() {
        let schema = PatchSchema::new().set("items");
        let mut w = Walker::new(&schema);
        w.push_field("items");
        let merged = merge_list(
            &mut w,
            &[json!("a"), json!("b"), json!("c"), json!("d")],
            &[json!("c"), json!("x"), json!("a")],
            &ListKind::Set,
        );
        // Live-only items keep their place; shared ones follow the configuration.
        assert_eq!(
            merged,
            vec![json!("b"), json!("c"), json!("d"), json!("x"), json!("a")]
        );
    }
}
