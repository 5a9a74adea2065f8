//! Defaulting (upstream `schema/defaulting`).

use serde_json::Value;

use crate::structural::{AdditionalProperties, Structural};

fn default_of(s: &Structural) -> Option<&Value> {
    s.default.as_ref().filter(|d| !d.is_null())
}

fn non_nullable_null(x: &Value, s: Option<&Structural>) -> bool {
    x.is_null() && s.is_some_and(|s| !s.nullable)
}

fn ap_schema(s: &Structural) -> Option<Option<&Structural>> {
    match &s.additional_properties {
        None => None,
        Some(AdditionalProperties::Schema(ap)) => Some(Some(ap)),
        Some(AdditionalProperties::Bool(_)) => Some(None),
    }
}

/// Applies defaults: missing properties (and non-nullable nulls) get their
/// schema's default, recursively into properties, additionalProperties values
/// and array items.
pub fn default(value: &mut Value, schema: &Structural) {
    default_opt(value, Some(schema));
}

fn default_opt(x: &mut Value, s: Option<&Structural>) {
    let Some(s) = s.filter(|s| s.below.defaults) else {
        return;
    };
    match x {
        Value::Object(m) => {
            for (k, prop) in &s.properties {
                let Some(d) = default_of(prop) else { continue };
                let missing = match m.get(k) {
                    None => true,
                    Some(v) => non_nullable_null(v, Some(prop)),
                };
                if missing {
                    m.insert(k.clone(), d.clone());
                }
            }
            for (k, v) in m.iter_mut() {
                if let Some(prop) = s.properties.get(k) {
                    default_opt(v, Some(prop));
                } else if let Some(ap) = ap_schema(s) {
                    if non_nullable_null(v, ap)
                        && let Some(d) = ap.and_then(default_of)
                    {
                        *v = d.clone();
                    }
                    default_opt(v, ap);
                }
            }
        }
        Value::Array(a) => {
            let items = s.items.as_deref();
            for v in a.iter_mut() {
                if non_nullable_null(v, items)
                    && let Some(d) = items.and_then(default_of)
                {
                    *v = d.clone();
                }
                default_opt(v, items);
            }
        }
        _ => {}
    }
}

/// Removes `null` values of non-nullable object fields that have no default
/// (upstream `PruneNonNullableNullsWithoutDefaults`, run after defaulting).
pub fn prune_non_nullable_nulls(value: &mut Value, schema: &Structural) {
    prune_nulls(value, Some(schema));
}

fn prune_nulls(x: &mut Value, s: Option<&Structural>) {
    let Some(s) = s else { return };
    match x {
        Value::Object(m) => m.retain(|k, v| {
            let schema = match s.properties.get(k) {
                Some(p) => Some(&**p),
                None => match ap_schema(s) {
                    None => return true,
                    Some(ap) => ap,
                },
            };
            let drop =
                v.is_null() && schema.is_none_or(|sc| default_of(sc).is_none() && !sc.nullable);
            if !drop {
                prune_nulls(v, schema);
            }
            !drop
        }),
        Value::Array(a) => {
            for v in a.iter_mut() {
                prune_nulls(v, s.items.as_deref());
            }
        }
        _ => {}
    }
}
