//! `componentstatuses` (deprecated since 1.19, still served): one object per
//! control-plane component with a `Healthy` condition, as upstream's
//! componentstatus registry reports it. kubext runs the controllers itself,
//! so `controller-manager` is this process; `scheduler` is probed where
//! kube-scheduler serves its health; on etcd storage each `--etcd-servers`
//! entry is `etcd-N`, healthy while the watch cache follows the cluster.

use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use apimachinery::StatusError;
use serde_json::{Value, json};
use server::api::Api;

/// kube-scheduler's secure port and health path (upstream's probe target).
const SCHEDULER: (&str, &str) = ("127.0.0.1:10259", "/healthz");
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

pub struct ComponentStatuses {
    api: OnceLock<Weak<Api>>,
    etcd_servers: Vec<String>,
}

impl ComponentStatuses {
    /// `etcd_servers`: the endpoints of etcd storage (empty for the embedded store).
    pub fn new(etcd_servers: Vec<String>) -> Arc<Self> {
        Arc::new(ComponentStatuses {
            api: OnceLock::new(),
            etcd_servers,
        })
    }

    pub fn attach(&self, api: &Arc<Api>) {
        let _ = self.api.set(Arc::downgrade(api));
    }

    fn etcd(&self) -> Vec<Value> {
        let failure = self
            .api
            .get()
            .and_then(Weak::upgrade)
            .and_then(|api| api.storage_health_error());
        (0..self.etcd_servers.len())
            .map(|i| {
                let health = match &failure {
                    None => Ok("ok".to_string()),
                    Some(e) => Err(e.clone()),
                };
                status(&format!("etcd-{i}"), health)
            })
            .collect()
    }
}

#[async_trait::async_trait]
impl registry::Provider for ComponentStatuses {
    async fn list(&self, _namespace: &str) -> Result<Vec<Value>, StatusError> {
        let mut all = vec![status("controller-manager", Ok("ok".into()))];
        all.extend(self.etcd());
        all.push(status("scheduler", probe(SCHEDULER.0, SCHEDULER.1).await));
        Ok(all)
    }
}

/// An HTTPS health probe as upstream's (certificate not verified): healthy
/// on a 2xx answer, its body the message.
async fn probe(address: &str, path: &str) -> Result<String, String> {
    let url = format!("https://{address}{path}");
    let host = address.rsplit_once(':').map_or(address, |(h, _)| h);
    let backend = webhook::Backend::new(address.to_string(), host, &[], true, None)
        .map_err(|e| e.to_string())?;
    match backend
        .get(path, &http::HeaderMap::new(), PROBE_TIMEOUT)
        .await
    {
        Ok((code, body)) if (200..400).contains(&code) => {
            Ok(String::from_utf8_lossy(&body).into_owned())
        }
        Ok((code, body)) => Err(format!(
            "Get \"{url}\": status {code}: {}",
            String::from_utf8_lossy(&body)
        )),
        Err(e) => Err(format!("Get \"{url}\": {e}")),
    }
}

/// A ComponentStatus with upstream's one `Healthy` condition.
fn status(name: &str, health: Result<String, String>) -> Value {
    let condition = match health {
        Ok(message) => json!({"type": "Healthy", "status": "True", "message": message}),
        Err(error) => json!({"type": "Healthy", "status": "False", "error": error}),
    };
    json!({
        "apiVersion": "v1",
        "kind": "ComponentStatus",
        "metadata": {"name": name},
        "conditions": [condition],
    })
}
