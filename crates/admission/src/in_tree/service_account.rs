//! ServiceAccount: a pod runs as `default` unless it names an account; the
//! account must exist; unless the pod or the account opts out, every
//! container mounts the `kube-api-access-*` projected volume (token, cluster
//! CA, namespace) at the well-known path; the account's image pull secrets
//! apply to a pod without its own.

use std::time::Duration;

use apimachinery::meta;
use serde_json::{Map, Value, json};

use crate::Objects;

const DEFAULT_ACCOUNT: &str = "default";
const VOLUME_PREFIX: &str = "kube-api-access-";
const MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
const MIRROR_POD: &str = "kubernetes.io/config.mirror";
/// Upstream's `WarnOnlyBoundTokenExpirationSeconds`.
const TOKEN_EXPIRATION_SECONDS: i64 = 3607;
/// The namespace controller creates `default` moments after the namespace:
/// a pod created in between waits for it, as upstream's plugin does.
const DEFAULT_ACCOUNT_ATTEMPTS: u32 = 10;
const RETRY_INTERVAL: Duration = Duration::from_millis(150);

/// Admits a new pod; `Err` is the reason of a 403.
pub(super) async fn admit(
    pod: &mut Value,
    namespace: &str,
    objects: &dyn Objects,
) -> Result<(), String> {
    if meta::annotations(pod)
        .and_then(|a| a.get(MIRROR_POD))
        .is_some()
    {
        return Ok(());
    }
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    let name = account_name(spec);
    spec.insert("serviceAccountName".into(), json!(name));
    let account = find_account(objects, namespace, &name)
        .await
        .map_err(|e| format!("error looking up service account {namespace}/{name}: {e}"))?;
    if automounts(spec, &account) {
        mount_token(spec);
    }
    inherit_pull_secrets(spec, &account);
    Ok(())
}

/// `serviceAccountName`, else the deprecated `serviceAccount`, else `default`.
fn account_name(spec: &Map<String, Value>) -> String {
    ["serviceAccountName", "serviceAccount"]
        .iter()
        .filter_map(|f| spec.get(*f).and_then(Value::as_str))
        .find(|n| !n.is_empty())
        .unwrap_or(DEFAULT_ACCOUNT)
        .to_string()
}

async fn find_account(objects: &dyn Objects, namespace: &str, name: &str) -> Result<Value, String> {
    let attempts = if name == DEFAULT_ACCOUNT {
        DEFAULT_ACCOUNT_ATTEMPTS
    } else {
        1
    };
    for attempt in 0..attempts {
        if attempt > 0 {
            tokio::time::sleep(RETRY_INTERVAL).await;
        }
        let found = objects
            .find("v1", "ServiceAccount", namespace, Some(name), None)
            .await
            .map_err(|e| e.to_string())?;
        if let Some(account) = found.into_iter().next() {
            return Ok(account);
        }
    }
    Err(format!("serviceaccount \"{name}\" not found"))
}

/// The pod's `automountServiceAccountToken`, else the account's, else true.
fn automounts(spec: &Map<String, Value>, account: &Value) -> bool {
    spec.get("automountServiceAccountToken")
        .and_then(Value::as_bool)
        .or_else(|| {
            account
                .get("automountServiceAccountToken")
                .and_then(Value::as_bool)
        })
        .unwrap_or(true)
}

/// Mount the token volume into every container (init, then regular) that has
/// nothing at the path yet; add the volume if one of them needed it.
fn mount_token(spec: &mut Map<String, Value>) {
    let existing = spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .find(|n| n.starts_with(VOLUME_PREFIX))
        .map(str::to_owned);
    let volume_name = existing
        .clone()
        .unwrap_or_else(|| format!("{VOLUME_PREFIX}{}", registry::random_suffix()));
    let mount = json!({"name": volume_name, "readOnly": true, "mountPath": MOUNT_PATH});
    let mut needed = false;
    for list in ["initContainers", "containers"] {
        let containers = spec.get_mut(list).and_then(Value::as_array_mut);
        for container in containers.into_iter().flatten() {
            needed |= add_mount(container, &mount);
        }
    }
    if needed && existing.is_none() {
        let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
        if !volumes.is_array() {
            *volumes = json!([]);
        }
        if let Some(volumes) = volumes.as_array_mut() {
            volumes.push(token_volume(&volume_name));
        }
    }
}

/// Whether `container` got the mount (it had none at the path).
fn add_mount(container: &mut Value, mount: &Value) -> bool {
    let Some(container) = container.as_object_mut() else {
        return false;
    };
    let mounts = container.entry("volumeMounts").or_insert_with(|| json!([]));
    if !mounts.is_array() {
        *mounts = json!([]);
    }
    let Some(mounts) = mounts.as_array_mut() else {
        return false;
    };
    let taken = mounts
        .iter()
        .any(|m| m.get("mountPath").and_then(Value::as_str) == Some(MOUNT_PATH));
    if !taken {
        mounts.push(mount.clone());
    }
    !taken
}

/// Upstream's `TokenVolumeSource`: a bound token, the cluster CA and the namespace.
fn token_volume(name: &str) -> Value {
    json!({
        "name": name,
        "projected": {
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
            ],
        },
    })
}

fn inherit_pull_secrets(spec: &mut Map<String, Value>, account: &Value) {
    let own = spec
        .get("imagePullSecrets")
        .and_then(Value::as_array)
        .is_some_and(|s| !s.is_empty());
    let Some(secrets) = account.get("imagePullSecrets").and_then(Value::as_array) else {
        return;
    };
    if own || secrets.is_empty() {
        return;
    }
    let names: Vec<Value> = secrets
        .iter()
        .map(|s| json!({"name": s.get("name").cloned().unwrap_or(json!(""))}))
        .collect();
    spec.insert("imagePullSecrets".into(), Value::Array(names));
}

#[cfg(test)]
mod tests {
    use super::*;

    // Upstream's TestAutomountsAPIToken / TestRespectsExistingMount: every
    // container mounts one volume; a container with something at the path
    // keeps it; a pod whose containers all have it gets no volume.
    #[test]
    fn every_container_mounts_one_token_volume() {
        let mut spec = json!({"initContainers": [{"name": "i"}], "containers": [
            {"name": "a"},
            {"name": "b", "volumeMounts": [{"name": "mine", "mountPath": MOUNT_PATH}]},
        ]});
        let spec = spec.as_object_mut().unwrap();
        mount_token(spec);
        let volumes = spec["volumes"].as_array().unwrap();
        assert_eq!(volumes.len(), 1);
        let name = volumes[0]["name"].as_str().unwrap();
        assert!(name.starts_with(VOLUME_PREFIX) && name.len() == VOLUME_PREFIX.len() + 5);
        assert_eq!(volumes[0]["projected"]["defaultMode"], 420);
        assert_eq!(
            spec["initContainers"][0]["volumeMounts"],
            json!([{"name": name, "readOnly": true, "mountPath": MOUNT_PATH}])
        );
        assert_eq!(spec["containers"][0]["volumeMounts"][0]["name"], name);
        assert_eq!(
            spec["containers"][1]["volumeMounts"],
            json!([{"name": "mine", "mountPath": MOUNT_PATH}])
        );

        let mut mounted = json!({"containers": [
            {"name": "b", "volumeMounts": [{"name": "mine", "mountPath": MOUNT_PATH}]},
        ]});
        let mounted = mounted.as_object_mut().unwrap();
        mount_token(mounted);
        assert!(mounted.get("volumes").is_none());
    }

    #[test]
    fn an_existing_token_volume_is_reused() {
        let mut spec = json!({
            "volumes": [{"name": "kube-api-access-abcde", "projected": {"sources": []}}],
            "containers": [{"name": "a"}],
        });
        let spec = spec.as_object_mut().unwrap();
        mount_token(spec);
        assert_eq!(spec["volumes"].as_array().unwrap().len(), 1);
        assert_eq!(
            spec["containers"][0]["volumeMounts"][0]["name"],
            "kube-api-access-abcde"
        );
    }

    #[test]
    fn the_pod_then_the_account_decide_automount() {
        let opted_out = json!({"automountServiceAccountToken": false});
        let spec = |v: Value| v.as_object().unwrap().clone();
        assert!(automounts(&spec(json!({})), &json!({})));
        assert!(!automounts(&spec(json!({})), &opted_out));
        assert!(automounts(
            &spec(json!({"automountServiceAccountToken": true})),
            &opted_out
        ));
    }

    #[test]
    fn account_pull_secrets_apply_to_a_pod_without_its_own() {
        let account = json!({"imagePullSecrets": [{"name": "regcred"}]});
        let mut spec = json!({}).as_object().unwrap().clone();
        inherit_pull_secrets(&mut spec, &account);
        assert_eq!(spec["imagePullSecrets"], json!([{"name": "regcred"}]));
        let mut own = json!({"imagePullSecrets": [{"name": "mine"}]})
            .as_object()
            .unwrap()
            .clone();
        inherit_pull_secrets(&mut own, &account);
        assert_eq!(own["imagePullSecrets"], json!([{"name": "mine"}]));
    }
}
