//! `clientConfig.service` to an address: the Service's port, then a ready
//! endpoint of its EndpointSlices (or of a v1 Endpoints object) for that
//! port's name — what kube-apiserver does with `--enable-aggregator-routing`,
//! since kubext routes no cluster IPs; an ExternalName Service is its name and
//! the port, as in upstream's default mode. Callers word the failures their way.

use serde_json::{Value, json};

/// Why a Service gave no address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unresolved {
    /// No such Service.
    ServiceNotFound,
    /// The Service has no port `port`.
    NoPort { port: i64 },
    /// No EndpointSlices (or Endpoints) for the Service.
    NoEndpoints,
    /// Endpoints, but none ready with the port's name.
    NoReadyAddress { port_name: String },
}

/// A ready `ip:port` for port `port` of `service`, from its EndpointSlices.
pub fn resolve(service: Option<&Value>, port: i64, slices: &[Value]) -> Result<String, Unresolved> {
    let Some(service) = service else {
        return Err(Unresolved::ServiceNotFound);
    };
    // An ExternalName Service is its name and the requested port, as
    // upstream's `ResolveCluster` answers it.
    if service.pointer("/spec/type").and_then(Value::as_str) == Some("ExternalName") {
        let name = service
            .pointer("/spec/externalName")
            .and_then(Value::as_str)
            .unwrap_or("");
        return Ok(format!("{name}:{port}"));
    }
    let Some(service_port) = array(service, "/spec/ports")
        .iter()
        .find(|p| p.get("port").and_then(Value::as_i64) == Some(port))
    else {
        return Err(Unresolved::NoPort { port });
    };
    let port_name = service_port
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if slices.is_empty() {
        return Err(Unresolved::NoEndpoints);
    }
    slices
        .iter()
        .find_map(|slice| ready_address(slice, port_name))
        .ok_or_else(|| Unresolved::NoReadyAddress {
            port_name: port_name.to_string(),
        })
}

fn array<'a>(v: &'a Value, pointer: &str) -> &'a [Value] {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// `ip:port` of a ready endpoint of `slice` serving the port named `port_name`.
fn ready_address(slice: &Value, port_name: &str) -> Option<String> {
    let target = array(slice, "/ports")
        .iter()
        .find(|p| p.get("name").and_then(Value::as_str).unwrap_or("") == port_name)
        .and_then(|p| p.get("port").and_then(Value::as_i64))?;
    let ip = array(slice, "/endpoints")
        .iter()
        .filter(|e| e.pointer("/conditions/ready") != Some(&Value::Bool(false)))
        .flat_map(|e| array(e, "/addresses"))
        .find_map(Value::as_str)?;
    Some(if ip.contains(':') {
        format!("[{ip}]:{target}")
    } else {
        format!("{ip}:{target}")
    })
}

/// A v1 Endpoints object as EndpointSlices (one per subset), for [`resolve`].
pub fn slices_of_endpoints(endpoints: &Value) -> Vec<Value> {
    array(endpoints, "/subsets")
        .iter()
        .map(|subset| {
            let addresses = |key: &str, ready: bool| {
                array(subset, &format!("/{key}"))
                    .iter()
                    .filter_map(|a| a.get("ip").cloned())
                    .map(move |ip| json!({"addresses": [ip], "conditions": {"ready": ready}}))
                    .collect::<Vec<_>>()
            };
            let mut all = addresses("addresses", true);
            all.extend(addresses("notReadyAddresses", false));
            json!({"ports": subset.get("ports").cloned().unwrap_or(json!([])), "endpoints": all})
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service() -> Value {
        json!({"spec": {"ports": [{"name": "https", "port": 443}]}})
    }

    #[test]
    fn a_ready_endpoint_of_the_named_port_is_chosen() {
        let slices = [json!({
            "ports": [{"name": "https", "port": 8443}],
            "endpoints": [
                {"addresses": ["10.0.0.1"], "conditions": {"ready": false}},
                {"addresses": ["10.0.0.2"]},
            ],
        })];
        assert_eq!(
            resolve(Some(&service()), 443, &slices),
            Ok("10.0.0.2:8443".into())
        );
        assert_eq!(
            resolve(Some(&service()), 80, &slices),
            Err(Unresolved::NoPort { port: 80 })
        );
        assert_eq!(
            resolve(None, 443, &slices),
            Err(Unresolved::ServiceNotFound)
        );
        assert_eq!(
            resolve(Some(&service()), 443, &[]),
            Err(Unresolved::NoEndpoints)
        );
    }

    #[test]
    fn endpoints_become_slices() {
        let endpoints = json!({"subsets": [{
            "addresses": [{"ip": "::1"}],
            "ports": [{"name": "https", "port": 9443}],
        }]});
        let slices = slices_of_endpoints(&endpoints);
        assert_eq!(
            resolve(Some(&service()), 443, &slices),
            Ok("[::1]:9443".into())
        );
    }

    #[test]
    fn an_external_name_service_is_its_name_and_the_port() {
        let svc = json!({"spec": {"type": "ExternalName", "externalName": "api.example.com"}});
        assert_eq!(
            resolve(Some(&svc), 443, &[]).unwrap(),
            "api.example.com:443"
        );
    }
}
