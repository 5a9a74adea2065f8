//! Namespace deletion reaches extension servers: the namespaced objects of every
//! available aggregated group-version are deleted through the backend like local
//! ones. A backend that is down or unavailable is skipped rather than waited for,
//! so it cannot hold up namespace deletion (upstream blocks on it).

use std::collections::BTreeMap;
use std::sync::Weak;
use std::time::Duration;

use serde_json::Value;

use crate::proxy::{Remote, Remotes, add_identity};
use server::api::Api;
use server::user::UserInfo;

/// One bounded call per collection.
const TIMEOUT: Duration = Duration::from_secs(10);

pub struct RemoteNamespaceContent {
    api: Weak<Api>,
    remotes: Remotes,
    identity: http::HeaderMap,
}

impl RemoteNamespaceContent {
    /// Calls carry upstream's namespace-controller identity.
    pub fn new(
        api: Weak<Api>,
        remotes: Remotes,
        headers: &server::front_proxy::FrontProxyConfig,
    ) -> Self {
        let mut identity = http::HeaderMap::new();
        let user = UserInfo {
            name: "system:serviceaccount:kube-system:namespace-controller".into(),
            groups: vec![
                "system:serviceaccounts".into(),
                "system:serviceaccounts:kube-system".into(),
                "system:authenticated".into(),
            ],
            ..Default::default()
        };
        add_identity(&mut identity, &user, headers);
        RemoteNamespaceContent {
            api,
            remotes,
            identity,
        }
    }

    /// Delete what `namespace` holds on every available extension server; what
    /// is left, by `<resource>.<group>`, and what failed (the namespace
    /// controller's `RemoteContent`, which `controlplane` wires to this).
    pub async fn empty(&self, namespace: &str) -> (BTreeMap<String, usize>, Vec<String>) {
        let (mut remaining, mut failures) = (BTreeMap::new(), Vec::new());
        let Some(api) = self.api.upgrade() else {
            return (remaining, failures);
        };
        for gv in api.remote_group_versions() {
            let Some(Remote::Available(backend)) = self.remotes.get(&gv.group, &gv.version) else {
                continue;
            };
            let Some(list) = gv
                .resources
                .as_ref()
                .and_then(|b| serde_json::from_slice::<Value>(b).ok())
            else {
                continue;
            };
            for resource in namespaced_collections(&list) {
                let path = format!(
                    "/apis/{}/{}/namespaces/{namespace}/{resource}",
                    gv.group, gv.version
                );
                let key = format!("{resource}.{}", gv.group);
                match backend
                    .call(http::Method::DELETE, &path, &self.identity, TIMEOUT)
                    .await
                {
                    Ok((code, _)) if code < 300 || code == 404 => {}
                    Ok((code, body)) => {
                        failures.push(format!("{key}: {code} {}", String::from_utf8_lossy(&body)));
                        continue;
                    }
                    Err(e) => {
                        failures.push(format!("{key}: {e}"));
                        continue;
                    }
                }
                if let Ok((200, body)) = backend.get(&path, &self.identity, TIMEOUT).await {
                    let left = serde_json::from_slice::<Value>(&body)
                        .ok()
                        .and_then(|l| l["items"].as_array().map(Vec::len))
                        .unwrap_or(0);
                    if left > 0 {
                        remaining.insert(key, left);
                    }
                }
            }
        }
        (remaining, failures)
    }
}

/// Namespaced resources of an `APIResourceList` that can be deleted as a collection.
fn namespaced_collections(list: &Value) -> Vec<String> {
    list["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["namespaced"] == true)
        .filter(|r| {
            r["verbs"]
                .as_array()
                .is_some_and(|v| v.iter().any(|v| v == "deletecollection"))
        })
        .filter_map(|r| r["name"].as_str())
        .filter(|name| !name.contains('/'))
        .map(String::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_namespaced_deletable_collections() {
        let list = json!({"resources": [
            {"name": "flunders", "namespaced": true, "verbs": ["get", "list", "deletecollection"]},
            {"name": "flunders/status", "namespaced": true, "verbs": ["get", "deletecollection"]},
            {"name": "fischers", "namespaced": false, "verbs": ["deletecollection"]},
            {"name": "metrics", "namespaced": true, "verbs": ["get", "list"]},
        ]});
        assert_eq!(namespaced_collections(&list), ["flunders"]);
    }
}
