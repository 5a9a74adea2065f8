//! Services: upstream's defaults (`SetDefaults_Service`), validation and
//! printing. Cluster IPs and node ports are allocated by
//! [`super::service_allocation`].

use apimachinery::DynamicObject;
use apimachinery::{ErrorList, FieldError, FieldPath};
use serde_json::{Value, json};

use super::service_allocation::{cluster_ips, go_strings};
use crate::resource::{Prepared, Strategy};

fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

pub struct Services;

const SERVICE_TYPES: [&str; 4] = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];

/// `SetDefaults_Service` and the IP-family defaults of upstream's service storage.
fn set_defaults(obj: &mut Value) {
    if !obj.get("spec").is_some_and(Value::is_object) {
        obj["spec"] = json!({});
    }
    let spec = &mut obj["spec"];
    if str_at(spec, "/type").is_empty() {
        spec["type"] = json!("ClusterIP");
    }
    match str_at(spec, "/sessionAffinity") {
        "" | "None" => {
            spec["sessionAffinity"] = json!("None");
            if let Some(map) = spec.as_object_mut() {
                map.remove("sessionAffinityConfig");
            }
        }
        "ClientIP"
            if spec
                .pointer("/sessionAffinityConfig/clientIP/timeoutSeconds")
                .is_none() =>
        {
            spec["sessionAffinityConfig"] = json!({"clientIP": {"timeoutSeconds": 10800}});
        }
        _ => {}
    }
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for port in ports.iter_mut().filter(|p| p.is_object()) {
            if str_at(port, "/protocol").is_empty() {
                port["protocol"] = json!("TCP");
            }
            let target_unset = match port.get("targetPort") {
                None | Some(Value::Null) => true,
                Some(Value::Number(n)) => n.as_i64() == Some(0),
                Some(Value::String(s)) => s.is_empty(),
                _ => false,
            };
            if target_unset && let Some(p) = port.get("port").cloned() {
                port["targetPort"] = p;
            }
        }
    }
    let kind = str_at(spec, "/type").to_string();
    let externally_accessible = matches!(kind.as_str(), "NodePort" | "LoadBalancer")
        || (kind == "ClusterIP"
            && spec
                .get("externalIPs")
                .and_then(Value::as_array)
                .is_some_and(|ips| !ips.is_empty()));
    if externally_accessible && str_at(spec, "/externalTrafficPolicy").is_empty() {
        spec["externalTrafficPolicy"] = json!("Cluster");
    }
    if kind != "ExternalName" && str_at(spec, "/internalTrafficPolicy").is_empty() {
        spec["internalTrafficPolicy"] = json!("Cluster");
    }
    if kind == "LoadBalancer" && spec.get("allocateLoadBalancerNodePorts").is_none() {
        spec["allocateLoadBalancerNodePorts"] = json!(true);
    }
}

impl Strategy for Services {
    fn prepare_status_update(&self, new: &mut DynamicObject, old: &DynamicObject) {
        crate::resource::take_status_and_metadata(new, old);
    }

    fn field(&self, obj: &Value, field: &str) -> Option<String> {
        super::field_labels::value("", "Service", obj, field)
    }

    /// `SetDefaults_Service` runs where upstream decodes a body: what it sets
    /// is the writer's in managedFields (cluster IPs, IP families and node
    /// ports, allocated later, are not).
    fn default(&self, obj: &mut DynamicObject) {
        set_defaults(obj);
    }

    fn prepare_create(&self, obj: &mut DynamicObject) -> Prepared {
        set_defaults(obj);
        if let Some(o) = obj.as_object_mut() {
            o.remove("status");
        }
        obj["status"] = json!({"loadBalancer": {}});
        Prepared::BodyChanged
    }

    fn prepare_update(&self, new: &mut DynamicObject, old: &DynamicObject) {
        keep_allocated_ips(new, old);
        set_defaults(new);
        if let Some(status) = old.get("status") {
            new["status"] = status.clone();
        }
    }

    fn validate(&self, obj: &DynamicObject) -> ErrorList {
        let mut errs = Vec::new();
        let spec = FieldPath::new("spec");
        let kind = str_at(obj, "/spec/type");
        if !SERVICE_TYPES.contains(&kind) {
            errs.push(FieldError::not_supported(
                &spec.child("type"),
                json!(kind),
                &SERVICE_TYPES,
            ));
        }
        let ports = obj.pointer("/spec/ports").and_then(Value::as_array);
        if ports.is_none_or(Vec::is_empty)
            && kind != "ExternalName"
            && str_at(obj, "/spec/clusterIP") != "None"
        {
            errs.push(FieldError::required(&spec.child("ports"), ""));
        }
        for (i, port) in ports.into_iter().flatten().enumerate() {
            let path = spec.child("ports").index(i);
            match port.get("port").and_then(Value::as_i64) {
                Some(p) if (1..=65535).contains(&p) => {}
                Some(p) => errs.push(FieldError::invalid(
                    &path.child("port"),
                    json!(p),
                    "must be between 1 and 65535, inclusive",
                )),
                None => errs.push(FieldError::required(&path.child("port"), "")),
            }
            if ports.is_some_and(|p| p.len() > 1)
                && port
                    .get("name")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
            {
                errs.push(FieldError::required(&path.child("name"), ""));
            }
        }
        for (i, ip) in cluster_ips(obj).iter().enumerate() {
            if ip != "None" && ip.parse::<std::net::IpAddr>().is_err() {
                errs.push(FieldError::invalid(
                    &spec.child("clusterIPs").index(i),
                    json!(ip),
                    "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                ));
            }
        }
        errs
    }

    fn validate_update(&self, new: &DynamicObject, old: &DynamicObject) -> ErrorList {
        let mut errs = self.validate(new);
        errs.extend(validate_cluster_ips_unchanged(new, old));
        errs
    }

    fn row(&self, obj: &Value) -> Vec<Value> {
        let ports: Vec<String> = obj
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|p| {
                let proto = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
                let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
                match p.get("nodePort").and_then(Value::as_i64) {
                    Some(node) => format!("{port}:{node}/{proto}"),
                    None => format!("{port}/{proto}"),
                }
            })
            .collect();
        let selector: Vec<String> = obj
            .pointer("/spec/selector")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
            .collect();
        let cluster_ip = str_at(obj, "/spec/clusterIP");
        let or_none = |s: String| if s.is_empty() { "<none>".into() } else { s };
        vec![
            json!(str_at(obj, "/spec/type")),
            json!(or_none(cluster_ip.to_string())),
            json!("<none>"),
            json!(or_none(ports.join(","))),
            json!(or_none(selector.join(","))),
        ]
    }
}

/// An update that leaves the allocated cluster IPs out keeps them (upstream's
/// `patchAllocatedValues`, before validation): re-applying a manifest without
/// `clusterIP` is not an attempt to unset it.
fn keep_allocated_ips(new: &mut Value, old: &Value) {
    let has_ip = |svc: &Value| str_at(svc, "/spec/type") != "ExternalName";
    if !has_ip(new) || !has_ip(old) {
        return;
    }
    let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let empty = |v: Option<&Value>| match v {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        _ => false,
    };
    for field in ["clusterIP", "clusterIPs"] {
        let kept = old.pointer(&format!("/spec/{field}"));
        if let Some(kept) = kept.filter(|k| !empty(Some(k)))
            && empty(spec.get(field))
        {
            spec.insert(field.into(), kept.clone());
        }
    }
}

/// Cluster IPs may not change once set (upstream `validateUpgradeDowngradeClusterIPs`).
fn validate_cluster_ips_unchanged(new: &Value, old: &Value) -> ErrorList {
    let (new_type, old_type) = (str_at(new, "/spec/type"), str_at(old, "/spec/type"));
    if new_type == "ExternalName" || old_type == "ExternalName" {
        return Vec::new();
    }
    let (new_ips, old_ips) = (cluster_ips(new), cluster_ips(old));
    if old_ips.is_empty() {
        return Vec::new();
    }
    let path = FieldPath::new("spec").child("clusterIPs").index(0);
    if new_ips.is_empty() {
        return vec![FieldError::invalid_go(
            &path,
            "[]string(nil)",
            "primary clusterIP can not be unset",
        )];
    }
    if new_ips[0] != old_ips[0] {
        return vec![FieldError::invalid_go(
            &path,
            &go_strings(&new_ips),
            "may not change once set",
        )];
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc(name: &str, spec: Value) -> Value {
        let mut obj = json!({"metadata": {"name": name, "namespace": "default"}, "spec": spec});
        set_defaults(&mut obj);
        obj
    }

    #[test]
    fn defaults_match_upstream() {
        let obj = svc("a", json!({"ports": [{"port": 80}]}));
        assert_eq!(
            obj["spec"],
            json!({
                "type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
                "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
            })
        );
        let lb = svc(
            "b",
            json!({"type": "LoadBalancer", "ports": [{"port": 80, "targetPort": "http"}]}),
        );
        assert_eq!(lb["spec"]["externalTrafficPolicy"], "Cluster");
        assert_eq!(lb["spec"]["allocateLoadBalancerNodePorts"], true);
        assert_eq!(lb["spec"]["ports"][0]["targetPort"], "http");
        let ext = svc(
            "c",
            json!({"type": "ExternalName", "externalName": "x.example.com"}),
        );
        assert!(ext["spec"].get("internalTrafficPolicy").is_none());
    }

    #[test]
    fn cluster_ips_may_not_change() {
        let old = json!({"spec": {"clusterIP": "10.0.0.5", "clusterIPs": ["10.0.0.5"]}});
        let mut moved = old.clone();
        moved["spec"]["clusterIP"] = json!("10.0.0.99");
        moved["spec"]["clusterIPs"] = json!(["10.0.0.99"]);
        assert_eq!(
            validate_cluster_ips_unchanged(&moved, &old)[0].to_string(),
            "spec.clusterIPs[0]: Invalid value: []string{\"10.0.0.99\"}: may not change once set"
        );
    }
}
