//! `as=Table` rendering (meta.k8s.io/v1 Table) and ages the way kubectl shows them.

use std::sync::LazyLock;

use serde_json::{Map, Value, json};

use crate::resource::{ResourceType, TableColumn};
use apimachinery::time::resource_age;

/// Upstream's column definitions of every built-in resource, group → resource →
/// columns, as kube-apiserver serves them (`tools/printer-columns.py`).
const UPSTREAM_COLUMNS: &str = include_str!("../data/printer-columns.json");

fn upstream_columns() -> &'static Map<String, Value> {
    // Unit-tested to parse (`builtin_layouts_agree_with_upstream_columns`).
    static PARSED: LazyLock<Map<String, Value>> =
        LazyLock::new(|| serde_json::from_str(UPSTREAM_COLUMNS).unwrap_or_default());
    &PARSED
}

/// kube-apiserver's column definitions of a built-in `group`/`resource`.
pub fn upstream_column_definitions(group: &str, resource: &str) -> Option<&'static [Value]> {
    upstream_columns()
        .get(group)?
        .get(resource)?
        .as_array()
        .map(Vec::as_slice)
}

/// One column of a table: the table's Name or Age cell, or the type's next one.
#[derive(Clone, Copy)]
enum Slot<'a> {
    Name,
    Age,
    Own(&'a TableColumn),
}

/// The table's columns in order: `Name` first unless the type's columns place it
/// ([`TableColumn::name_cell`]); `Age` where the type's columns place it
/// ([`TableColumn::age`]), else after the columns shown by default and before the
/// wide ones (unless `age_column` is off).
fn layout(rtype: &ResourceType) -> Vec<Slot<'_>> {
    let own = &rtype.columns;
    let mut slots = Vec::with_capacity(own.len() + 2);
    if !own.iter().any(TableColumn::is_name) {
        slots.push(Slot::Name);
    }
    let placed = own.iter().any(TableColumn::is_age);
    let before_wide = own
        .iter()
        .rposition(|c| c.priority == 0)
        .map_or(0, |i| i + 1);
    for (i, c) in own.iter().enumerate() {
        if !placed && rtype.age_column && i == before_wide {
            slots.push(Slot::Age);
        }
        slots.push(if c.is_name() {
            Slot::Name
        } else if c.is_age() {
            Slot::Age
        } else {
            Slot::Own(c)
        });
    }
    if !placed && rtype.age_column && before_wide == own.len() {
        slots.push(Slot::Age);
    }
    slots
}

static NAME: TableColumn = TableColumn::new(
    "Name",
    "string",
    "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
);

/// The definitions of the type's columns: a built-in kind's are upstream's
/// (`data/printer-columns.json`) when its layout agrees with them (unit-tested
/// for every kind), others' are made from `rtype.columns`.
pub fn column_definitions(rtype: &ResourceType) -> Vec<Value> {
    let slots = layout(rtype);
    if rtype.structured
        && let Some(upstream) = upstream_column_definitions(&rtype.group, &rtype.plural)
        && agrees(&slots, upstream)
    {
        return upstream.to_vec();
    }
    slots
        .iter()
        .map(|slot| {
            let (c, format, description, priority) = match slot {
                Slot::Name => (&NAME, "name", NAME.description.as_ref(), 0),
                Slot::Age => (&AGE, "", AGE.description.as_ref(), 0),
                Slot::Own(c) => (*c, c.format.as_ref(), c.description.as_ref(), c.priority),
            };
            json!({
                "name": c.name, "type": c.type_, "format": format,
                "description": description, "priority": priority,
            })
        })
        .collect()
}

/// Whether upstream's definitions name the layout's columns, in its order and
/// with its priorities (Name and Age are shown by default).
fn agrees(slots: &[Slot<'_>], upstream: &[Value]) -> bool {
    slots.len() == upstream.len()
        && slots.iter().zip(upstream).all(|(slot, def)| {
            let (name, priority) = match slot {
                Slot::Name => ("Name", None),
                Slot::Age => ("Age", Some(0)),
                Slot::Own(c) => (c.name.as_ref(), Some(c.priority)),
            };
            def["name"] == name
                && priority.is_none_or(|p| def["priority"].as_i64() == Some(i64::from(p)))
        })
}

static AGE: TableColumn = TableColumn::new(
    "Age",
    "string",
    "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
);

/// One row: the type's cells with Name and Age placed as in `column_definitions`
/// (cells beyond the columns are kept at the end), and the object's metadata as
/// PartialObjectMetadata.
pub fn row(rtype: &ResourceType, obj: &Value, include_object: &str) -> Value {
    let mut own = rtype.strategy.row(obj).into_iter();
    let mut cells = Vec::with_capacity(own.len() + 2);
    for slot in layout(rtype) {
        match slot {
            Slot::Name => cells.push(json!(apimachinery::meta::name(obj))),
            Slot::Age => cells.push(json!(resource_age(
                apimachinery::meta::str_field(obj, "creationTimestamp").unwrap_or("")
            ))),
            Slot::Own(_) => cells.extend(own.next()),
        }
    }
    cells.extend(own);
    let object = match include_object {
        "None" => Value::Null,
        "Object" => obj.clone(),
        _ => partial_object_metadata(obj),
    };
    json!({"cells": cells, "object": object})
}

pub fn partial_object_metadata(obj: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": apimachinery::meta::member(obj).cloned().unwrap_or(json!({})),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every built-in kind's layout (and its row's cell count) is upstream's
    /// measured one, so its definitions are served from the data; and the data
    /// has no resource kubext does not serve (CRDs' are in apiextensions).
    #[test]
    fn builtin_layouts_agree_with_upstream_columns() {
        assert!(serde_json::from_str::<Value>(UPSTREAM_COLUMNS).is_ok());
        let types = crate::builtin::resource_types();
        let mut mismatched = Vec::new();
        for rtype in &types {
            let Some(upstream) = upstream_column_definitions(&rtype.group, &rtype.plural) else {
                continue;
            };
            let slots = layout(rtype);
            let names: Vec<&str> = slots
                .iter()
                .map(|s| match s {
                    Slot::Name => "Name",
                    Slot::Age => "Age",
                    Slot::Own(c) => c.name.as_ref(),
                })
                .collect();
            if !agrees(&slots, upstream) {
                let want: Vec<&str> = upstream.iter().filter_map(|c| c["name"].as_str()).collect();
                mismatched.push(format!(
                    "{}/{}: {names:?} != {want:?}",
                    rtype.group, rtype.plural
                ));
            }
            let own = slots.iter().filter(|s| matches!(s, Slot::Own(_))).count();
            let obj =
                json!({"metadata": {"name": "x", "creationTimestamp": "2025-01-01T00:00:00Z"}});
            let cells = rtype.strategy.row(&obj).len();
            // Upstream's IPAddress rows carry Age beyond their columns.
            let extra = usize::from(rtype.kind == "IPAddress");
            if cells != own + extra {
                mismatched.push(format!(
                    "{}/{}: row has {cells} cells for {own} columns",
                    rtype.group, rtype.plural
                ));
            }
        }
        for (group, resources) in upstream_columns() {
            for resource in resources.as_object().unwrap().keys() {
                let served = types
                    .iter()
                    .any(|t| t.group == *group && t.plural == *resource);
                if !served && group != "apiextensions.k8s.io" {
                    mismatched.push(format!("{group}/{resource}: not a built-in type"));
                }
            }
        }
        assert!(mismatched.is_empty(), "{mismatched:#?}");
    }
}
