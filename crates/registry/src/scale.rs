//! The `scale` subresource (upstream's `pkg/registry/*/scale` storages and
//! apiextensions' `ScaleREST`): an `autoscaling/v1` Scale view of a
//! resource's replica fields, read from the object; a write of the Scale
//! (replaced, or patched as a Scale) sets the object's spec replicas through
//! the generic store.

use serde_json::{Value, json};

use apimachinery::{FieldError, FieldPath, StatusError, Subresource, meta};

use crate::options::RequestContext;
use crate::resource::ScalePaths;
use crate::store::GenericStore;

type Result<T> = std::result::Result<T, StatusError>;

/// How a write changes the Scale.
pub enum ScaleChange {
    /// PUT: the Scale as sent.
    Replace(Value),
    /// A JSON patch of the current Scale.
    JsonPatch(Value),
    /// A merge patch (or apply patch) of the current Scale.
    MergePatch(Value),
}

/// A resource's `scale` subresource: its store and where its replicas live.
pub struct Scale<'a> {
    store: &'a GenericStore,
    paths: &'a ScalePaths,
}

impl<'a> Scale<'a> {
    /// The subresource of `store`'s type, when it has one.
    pub fn of(store: &'a GenericStore) -> Option<Self> {
        let paths = store.rtype.scale.as_ref()?;
        Some(Scale { store, paths })
    }

    /// GET: the Scale of object `name`.
    pub async fn get(&self, ctx: &RequestContext, name: &str) -> Result<Value> {
        let obj = self.store.get(ctx, name).await?;
        Ok(scale_of(&obj.value(), self.paths))
    }

    /// PUT or PATCH: the object's spec replicas become the changed Scale's
    /// (a resourceVersion in it must be the object's); the Scale after.
    pub async fn update(
        &self,
        ctx: &RequestContext,
        name: &str,
        change: &ScaleChange,
    ) -> Result<Value> {
        let mut ctx = ctx.clone();
        ctx.subresource = Subresource::Scale;
        let updated = self
            .store
            .update_with(&ctx, name, |current| {
                let scale = scale_of(current, self.paths);
                let desired = match change {
                    ScaleChange::Replace(scale) => scale.clone(),
                    ScaleChange::JsonPatch(patch) => patch::json_patch::apply(&scale, patch)
                        .map_err(|e| StatusError::new(422, "Invalid", e.to_string()))?,
                    ScaleChange::MergePatch(patch) => patch::merge_patch::apply(&scale, patch)
                        .map_err(|e| StatusError::new(422, "Invalid", e.to_string()))?,
                };
                let wanted_rv = meta::resource_version(&desired);
                if !wanted_rv.is_empty() && wanted_rv != meta::resource_version(current) {
                    return Err(StatusError::modified(
                        &self.store.rtype.group_resource(),
                        name,
                    ));
                }
                let mut next = current.clone();
                write(
                    &mut next,
                    &self.paths.spec_replicas,
                    json!(desired_replicas(&desired)?),
                );
                Ok(next)
            })
            .await?;
        Ok(scale_of(&updated.value(), self.paths))
    }
}

fn segments(path: &str) -> impl Iterator<Item = &str> {
    path.trim_start_matches('.')
        .split('.')
        .filter(|s| !s.is_empty())
}

fn read<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    segments(path).try_fold(obj, |node, s| node.get(s))
}

fn write(obj: &mut Value, path: &str, value: Value) {
    let parts: Vec<&str> = segments(path).collect();
    let Some((last, parents)) = parts.split_last() else {
        return;
    };
    let mut node = obj;
    for p in parents {
        if !node.get(*p).is_some_and(Value::is_object) {
            node[*p] = json!({});
        }
        node = &mut node[*p];
    }
    node[*last] = value;
}

/// The Scale of an object.
pub fn scale_of(obj: &Value, paths: &ScalePaths) -> Value {
    let md = meta::metadata(obj);
    let metadata: serde_json::Map<String, Value> = [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ]
    .iter()
    .filter_map(|k| md?.get(*k).map(|v| (k.to_string(), v.clone())))
    .collect();
    let mut status =
        json!({"replicas": read(obj, &paths.status_replicas).and_then(Value::as_i64).unwrap_or(0)});
    if let Some(sel) = paths
        .label_selector
        .as_deref()
        .and_then(|p| read(obj, p))
        .and_then(selector_text)
    {
        status["selector"] = json!(sel);
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": {"replicas": read(obj, &paths.spec_replicas).and_then(Value::as_i64).unwrap_or(0)},
        "status": status,
    })
}

/// A custom resource's selector path holds the selector as text; a built-in
/// kind's (`spec.selector`) a `metav1.LabelSelector`, shown as upstream's
/// `LabelSelectorAsSelector(…).String()`.
fn selector_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Object(_) => apimachinery::selector::LabelSelector::from_json(value)
            .ok()
            .map(|s| s.to_string()),
        _ => None,
    }
}

fn desired_replicas(scale: &Value) -> Result<i64> {
    let replicas = scale
        .pointer("/spec/replicas")
        .cloned()
        .unwrap_or(Value::Null);
    match replicas.as_i64() {
        Some(r) if r >= 0 && r <= i64::from(i32::MAX) => Ok(r),
        _ => Err(StatusError::invalid(
            "autoscaling",
            "Scale",
            "",
            &vec![FieldError::invalid(
                &FieldPath::new("spec").child("replicas"),
                replicas,
                "must be greater than or equal to 0",
            )],
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment_paths() -> ScalePaths {
        ScalePaths {
            spec_replicas: ".spec.replicas".into(),
            status_replicas: ".status.replicas".into(),
            label_selector: Some(".spec.selector".into()),
        }
    }

    #[test]
    fn a_scale_shows_the_replicas_and_the_selector_as_text() {
        let deployment = json!({
            "metadata": {"name": "d", "namespace": "ns", "uid": "u", "resourceVersion": "7",
                "creationTimestamp": "2024-01-01T00:00:00Z", "labels": {"a": "b"}},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "x"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["web", "db"]}]}},
            "status": {"replicas": 2},
        });
        assert_eq!(
            scale_of(&deployment, &deployment_paths()),
            json!({
                "kind": "Scale", "apiVersion": "autoscaling/v1",
                "metadata": {"name": "d", "namespace": "ns", "uid": "u", "resourceVersion": "7",
                    "creationTimestamp": "2024-01-01T00:00:00Z"},
                "spec": {"replicas": 3},
                // Upstream's selector string sorts requirements by key.
                "status": {"replicas": 2, "selector": "app=x,tier in (db,web)"},
            })
        );
    }

    #[test]
    fn missing_replicas_are_zero_and_writes_create_the_path() {
        let paths = ScalePaths {
            spec_replicas: ".spec.size.count".into(),
            status_replicas: ".status.count".into(),
            label_selector: None,
        };
        let scale = scale_of(&json!({"metadata": {"name": "c"}}), &paths);
        assert_eq!(scale["spec"], json!({"replicas": 0}));
        assert_eq!(scale["status"], json!({"replicas": 0}));
        let mut obj = json!({"spec": {"size": "not an object"}});
        write(&mut obj, &paths.spec_replicas, json!(4));
        assert_eq!(obj, json!({"spec": {"size": {"count": 4}}}));
    }

    #[test]
    fn desired_replicas_must_fit_an_int32_and_not_be_negative() {
        assert_eq!(
            desired_replicas(&json!({"spec": {"replicas": 5}})).unwrap(),
            5
        );
        for bad in [json!(-1), json!(2_147_483_648_i64), json!("3"), Value::Null] {
            let err = desired_replicas(&json!({"spec": {"replicas": bad}})).unwrap_err();
            assert_eq!(err.code(), 422);
            assert_eq!(
                err.status().message,
                format!(
                    "Scale.autoscaling \"\" is invalid: spec.replicas: Invalid value: {}: must be greater than or equal to 0",
                    match &bad {
                        Value::Null => "null".to_string(),
                        Value::String(s) => format!("\"{s}\""),
                        other => other.to_string(),
                    }
                )
            );
        }
    }
}
