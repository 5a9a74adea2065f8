//! `as=Table` rendering (meta.k8s.io/v1 Table) and ages the way kubectl shows them.

use serde_json::{Value, json};

use crate::resource::{ResourceType, TableColumn};

/// Go's `duration.HumanDuration`, which kubectl's AGE column uses.
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    let s = seconds.max(0);
    let (m, h) = (s / 60, s / 3600);
    let (d, y) = (h / 24, h / (24 * 365));
    let pair = |a: i64, ua: &str, b: i64, ub: &str| {
        if b == 0 {
            format!("{a}{ua}")
        } else {
            format!("{a}{ua}{b}{ub}")
        }
    };
    match () {
        _ if s < 120 => format!("{s}s"),
        _ if m < 10 => pair(m, "m", s % 60, "s"),
        _ if m < 180 => format!("{m}m"),
        _ if h < 8 => pair(h, "h", m % 60, "m"),
        _ if h < 48 => format!("{h}h"),
        _ if h < 24 * 8 => pair(d, "d", h % 24, "h"),
        _ if h < 24 * 365 * 2 => format!("{d}d"),
        _ if h < 24 * 365 * 8 => pair(y, "y", d % 365, "d"),
        _ => format!("{y}y"),
    }
}

/// Age of an RFC 3339 timestamp; `<unknown>` if absent.
pub fn resource_age(timestamp: &str) -> String {
    match apimachinery::time::parse(timestamp) {
        Some(ts) => human_duration(jiff::Timestamp::now().as_second() - ts.as_second()),
        None => "<unknown>".into(),
    }
}

pub fn column_definitions(rtype: &ResourceType) -> Vec<Value> {
    let mut cols = vec![json!({
        "name": "Name", "type": "string", "format": "name", "priority": 0,
        "description": "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
    })];
    let placed = placed_age(rtype);
    let (first, rest) = split_before_wide(rtype);
    let age = (rtype.age_column && placed.is_none()).then_some(&AGE);
    for c in first.iter().chain(age).chain(rest.iter()) {
        let description = if c.is_age() {
            AGE.description.as_ref()
        } else {
            c.description.as_ref()
        };
        cols.push(json!({
            "name": c.name, "type": c.type_, "format": c.format,
            "description": description, "priority": c.priority,
        }));
    }
    cols
}

/// Where the type's own columns place `Age` ([`TableColumn::age`]), if they do.
fn placed_age(rtype: &ResourceType) -> Option<usize> {
    rtype.columns.iter().position(TableColumn::is_age)
}

static AGE: TableColumn = TableColumn::new(
    "Age",
    "string",
    "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
);

/// Upstream puts `Age` after the columns shown by default and before the wide ones,
/// except for types whose own columns end with a time (events put it elsewhere).
fn split_before_wide(
    rtype: &ResourceType,
) -> (
    Vec<crate::resource::TableColumn>,
    Vec<crate::resource::TableColumn>,
) {
    let idx = rtype
        .columns
        .iter()
        .rposition(|c| c.priority == 0)
        .map_or(0, |i| i + 1);
    (rtype.columns[..idx].to_vec(), rtype.columns[idx..].to_vec())
}

/// One row: Name, the type's cells, Age (placed as in `column_definitions`), and
/// the object's metadata as PartialObjectMetadata.
pub fn row(rtype: &ResourceType, obj: &Value, include_object: &str) -> Value {
    let mut cells = vec![json!(apimachinery::meta::name(obj))];
    let own = rtype.strategy.row(obj);
    let age = || {
        json!(resource_age(
            apimachinery::meta::str_field(obj, "creationTimestamp").unwrap_or("")
        ))
    };
    if let Some(at) = placed_age(rtype) {
        // The type's cells leave out Age; it goes where its columns put it.
        let mut own = own.into_iter();
        cells.extend(own.by_ref().take(at));
        cells.push(age());
        cells.extend(own);
    } else if !rtype.age_column {
        cells.extend(own);
    } else {
        let (first, _) = split_before_wide(rtype);
        for (i, cell) in own.into_iter().enumerate() {
            if i == first.len() {
                cells.push(age());
            }
            cells.push(cell);
        }
        if cells.len() <= first.len() + 1 {
            cells.push(age());
        }
    }
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
        "metadata": obj.get("metadata").cloned().unwrap_or(json!({})),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_durations_match_kubectl() {
        for (s, want) in [
            (0, "0s"),
            (59, "59s"),
            (119, "119s"),
            (125, "2m5s"),
            (600, "10m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 60, "3h1m"),
            (47 * 3600, "47h"),
            (50 * 3600, "2d2h"),
            (10 * 86400, "10d"),
            (3 * 365 * 86400, "3y"),
        ] {
            assert_eq!(human_duration(s), want, "{s}s");
        }
    }
}
