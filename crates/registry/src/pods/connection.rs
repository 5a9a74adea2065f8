//! `pods/{name}/log`, `exec`, `attach` and `portforward` in a cluster without
//! kubelets: upstream's checks before it dials a node (`pod.LogLocation`,
//! `ExecLocation`, `PortForwardLocation`: the container, the pod's host, the
//! Node), and then what kubext answers instead of a stream.

use serde_json::Value;

use apimachinery::{StatusError, meta};

use crate::options::RequestContext;
use crate::store::GenericStore;

type Result<T> = std::result::Result<T, StatusError>;

/// Which connection to a pod is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Connection {
    Log,
    Exec,
    Attach,
    PortForward,
}

/// Check a connection to `pod` as upstream does before reaching its kubelet.
/// `Ok` only for the log of a pod no node runs, which is empty (upstream
/// answers 204); otherwise the error upstream's checks give, or 503 where
/// upstream would reach a kubelet. `nodes` is the Node store, when served;
/// `container` the request's `container` parameter.
pub async fn connect(
    nodes: Option<&GenericStore>,
    ctx: &RequestContext,
    pod: &Value,
    connection: Connection,
    container: Option<&str>,
) -> Result<()> {
    if connection != Connection::PortForward {
        choose_container(pod, container)?;
    }
    let node = node_name(pod);
    if node.is_empty() {
        return match connection {
            Connection::Log => Ok(()),
            _ => Err(no_host(pod)),
        };
    }
    let nodes = nodes.ok_or_else(|| StatusError::internal("nodes are not served"))?;
    let ctx = RequestContext {
        namespace: String::new(),
        ..ctx.clone()
    };
    nodes.get(&ctx, node).await?;
    Err(StatusError::service_unavailable(format!(
        "no kubelet serves node {node:?}: kubext runs no kubelets"
    )))
}

fn node_name(pod: &Value) -> &str {
    pod.pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn no_host(pod: &Value) -> StatusError {
    StatusError::bad_request(format!(
        "pod {} does not have a host assigned",
        meta::name(pod)
    ))
}

fn containers(pod: &Value, field: &str) -> Vec<String> {
    pod.pointer(&format!("/spec/{field}"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_string))
        .collect()
}

/// Upstream's `validateContainer`: the `container` parameter, or the pod's
/// only container.
fn choose_container(pod: &Value, requested: Option<&str>) -> Result<String> {
    let name = meta::name(pod);
    let regular = containers(pod, "containers");
    let all: Vec<String> = containers(pod, "initContainers")
        .into_iter()
        .chain(regular.iter().cloned())
        .chain(containers(pod, "ephemeralContainers"))
        .collect();
    match requested.filter(|c| !c.is_empty()) {
        Some(wanted) if all.iter().any(|c| c == wanted) => Ok(wanted.to_string()),
        Some(wanted) => Err(StatusError::bad_request(format!(
            "container {wanted} is not valid for pod {name}"
        ))),
        None => match regular.as_slice() {
            [only] => Ok(only.clone()),
            [] => Err(StatusError::bad_request(format!(
                "a container name must be specified for pod {name}"
            ))),
            _ => Err(StatusError::bad_request(format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                all.join(" ")
            ))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(spec: Value) -> Value {
        json!({"metadata": {"name": "p"}, "spec": spec})
    }

    #[test]
    fn the_container_is_the_parameter_or_the_only_one() {
        let one = pod(json!({"containers": [{"name": "app"}]}));
        assert_eq!(choose_container(&one, None).unwrap(), "app");
        assert_eq!(choose_container(&one, Some("")).unwrap(), "app");
        let many = pod(json!({
            "initContainers": [{"name": "init"}],
            "containers": [{"name": "a"}, {"name": "b"}],
            "ephemeralContainers": [{"name": "debug"}],
        }));
        assert_eq!(choose_container(&many, Some("debug")).unwrap(), "debug");
        // Upstream lists init, regular, then ephemeral containers.
        assert_eq!(
            choose_container(&many, None).unwrap_err().status().message,
            "a container name must be specified for pod p, choose one of: [init a b debug]"
        );
        assert_eq!(
            choose_container(&many, Some("x"))
                .unwrap_err()
                .status()
                .message,
            "container x is not valid for pod p"
        );
        assert_eq!(
            choose_container(&pod(json!({})), None)
                .unwrap_err()
                .status()
                .message,
            "a container name must be specified for pod p"
        );
    }
}
