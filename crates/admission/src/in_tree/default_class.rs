//! DefaultStorageClass and DefaultIngressClass: a claim or an Ingress that
//! names no class gets the class annotated as the default; of several, the
//! newest (then the first by name).

use apimachinery::meta;
use serde_json::{Value, json};

use crate::Objects;

struct ClassKind {
    api_version: &'static str,
    kind: &'static str,
    /// Annotations, any of which set to "true" marks the default.
    default_annotations: &'static [&'static str],
}

const STORAGE_CLASS: ClassKind = ClassKind {
    api_version: "storage.k8s.io/v1",
    kind: "StorageClass",
    default_annotations: &[
        "storageclass.kubernetes.io/is-default-class",
        "storageclass.beta.kubernetes.io/is-default-class",
    ],
};

const INGRESS_CLASS: ClassKind = ClassKind {
    api_version: "networking.k8s.io/v1",
    kind: "IngressClass",
    default_annotations: &["ingressclass.kubernetes.io/is-default-class"],
};

/// A claim with `spec.storageClassName` (even "") or the beta annotation
/// keeps it.
pub(super) async fn storage_class(claim: &mut Value, objects: &dyn Objects) {
    if annotation(claim, "volume.beta.kubernetes.io/storage-class").is_some()
        || claim
            .pointer("/spec/storageClassName")
            .is_some_and(|c| !c.is_null())
    {
        return;
    }
    set_default(claim, objects, &STORAGE_CLASS, "storageClassName").await;
}

/// An Ingress with `spec.ingressClassName` or the `kubernetes.io/ingress.class`
/// annotation keeps it.
pub(super) async fn ingress_class(ingress: &mut Value, objects: &dyn Objects) {
    if annotation(ingress, "kubernetes.io/ingress.class").is_some()
        || ingress
            .pointer("/spec/ingressClassName")
            .is_some_and(|c| !c.is_null())
    {
        return;
    }
    set_default(ingress, objects, &INGRESS_CLASS, "ingressClassName").await;
}

async fn set_default(object: &mut Value, objects: &dyn Objects, kind: &ClassKind, field: &str) {
    let Ok(classes) = objects
        .find(kind.api_version, kind.kind, "", None, None)
        .await
    else {
        return;
    };
    let Some(name) = default_of(&classes, kind) else {
        return;
    };
    if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert(field.into(), json!(name));
    }
}

fn default_of(classes: &[Value], kind: &ClassKind) -> Option<String> {
    let field = |c: &Value, f: &str| meta::str_field(c, f).unwrap_or("").to_string();
    classes
        .iter()
        .filter(|c| {
            kind.default_annotations
                .iter()
                .any(|a| annotation(c, a) == Some("true"))
        })
        .map(|c| (field(c, "creationTimestamp"), field(c, "name")))
        // Newest first, then by name.
        .min_by(|(t1, n1), (t2, n2)| t2.cmp(t1).then(n1.cmp(n2)))
        .map(|(_, name)| name)
}

fn annotation<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    meta::annotations(object)
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(name: &str, created: &str, default: Option<&str>) -> Value {
        let mut c = json!({"metadata": {"name": name, "creationTimestamp": created}});
        if let Some(value) = default {
            c["metadata"]["annotations"] =
                json!({"storageclass.kubernetes.io/is-default-class": value});
        }
        c
    }

    // Upstream's `GetDefaultClass` order: the newest default wins, ties by name.
    #[test]
    fn the_newest_default_class_wins() {
        let classes = [
            class("old", "2024-01-01T00:00:00Z", Some("true")),
            class("not", "2025-01-01T00:00:00Z", Some("false")),
            class("b", "2024-06-01T00:00:00Z", Some("true")),
            class("a", "2024-06-01T00:00:00Z", Some("true")),
            class("plain", "2026-01-01T00:00:00Z", None),
        ];
        assert_eq!(default_of(&classes, &STORAGE_CLASS).as_deref(), Some("a"));
        assert_eq!(default_of(&classes[1..2], &STORAGE_CLASS), None);
    }
}
