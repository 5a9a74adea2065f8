//! Discovery of aggregated group-versions: what the availability controller last
//! fetched from each extension server, kept (marked stale) while the server is
//! down, so discovery never waits for or fails because of a backend.

use bytes::Bytes;
use serde_json::{Value, json};

/// A group-version claimed by a service-backed APIService.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteGroupVersion {
    pub group: String,
    pub version: String,
    pub group_priority: i64,
    pub version_priority: i64,
    /// The backend's last good `APIResourceList` for the group-version; `None`
    /// until one was fetched.
    pub resources: Option<Bytes>,
    /// Whether the last check confirmed `resources`.
    pub fresh: bool,
    /// The backend's OpenAPI v3 document of the group-version, and its whole v2
    /// document, as last fetched.
    pub openapi_v3: Option<Bytes>,
    pub openapi_v2: Option<Bytes>,
}

/// The aggregated-discovery (v2) entry for a legacy `APIResourceList`: resources
/// with their subresources nested, `freshness` Current or Stale. As the
/// upstream aggregator converts a legacy list (`ConvertGroupVersionIntoToDiscovery`):
/// `responseKind` takes the entry's group and version as listed (empty for a
/// kind of the listed group-version), subresources keep the list's order.
pub fn aggregated_version(version: &str, list: &Value, fresh: bool) -> Value {
    let entries: Vec<&Value> = list["resources"]
        .as_array()
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let kind_of = |r: &Value| {
        json!({
            "group": r["group"].as_str().unwrap_or_default(),
            "version": r["version"].as_str().unwrap_or_default(),
            "kind": r["kind"].as_str().unwrap_or_default(),
        })
    };
    let resources: Vec<Value> = entries
        .iter()
        .filter_map(|r| {
            let name = r["name"].as_str()?;
            if name.contains('/') {
                return None;
            }
            let mut out = json!({
                "resource": name,
                "responseKind": kind_of(r),
                "scope": if r["namespaced"].as_bool() == Some(true) { "Namespaced" } else { "Cluster" },
                "singularResource": r["singularName"].as_str().unwrap_or_default(),
                "verbs": r["verbs"].clone(),
            });
            for key in ["shortNames", "categories"] {
                if r[key].as_array().is_some_and(|a| !a.is_empty()) {
                    out[key] = r[key].clone();
                }
            }
            let prefix = format!("{name}/");
            let subresources: Vec<Value> = entries
                .iter()
                .filter_map(|s| {
                    let sub = s["name"].as_str()?.strip_prefix(&prefix)?;
                    Some(json!({"subresource": sub, "responseKind": kind_of(s), "verbs": s["verbs"].clone()}))
                })
                .collect();
            if !subresources.is_empty() {
                out["subresources"] = json!(subresources);
            }
            Some(out)
        })
        .collect();
    json!({
        "version": version,
        "resources": resources,
        "freshness": if fresh { "Current" } else { "Stale" },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_lists_become_aggregated_entries() {
        let list = json!({
            "kind": "APIResourceList",
            "groupVersion": "wardle.example.com/v1alpha1",
            "resources": [
                {"name": "flunders", "singularName": "flunder", "namespaced": true, "kind": "Flunder",
                 "verbs": ["get", "list"], "shortNames": ["fl"]},
                {"name": "flunders/status", "singularName": "", "namespaced": true, "kind": "Flunder",
                 "verbs": ["get", "patch"]},
                {"name": "fischers", "singularName": "fischer", "namespaced": false, "kind": "Fischer",
                 "verbs": ["get"], "categories": []},
            ],
        });
        let entry = aggregated_version("v1alpha1", &list, false);
        assert_eq!(entry["freshness"], "Stale");
        let resources = entry["resources"].as_array().unwrap();
        assert_eq!(resources.len(), 2);
        assert_eq!(
            resources[0],
            json!({
                "resource": "flunders",
                "responseKind": {"group": "", "version": "", "kind": "Flunder"},
                "scope": "Namespaced",
                "singularResource": "flunder",
                "verbs": ["get", "list"],
                "shortNames": ["fl"],
                "subresources": [{
                    "subresource": "status",
                    "responseKind": {"group": "", "version": "", "kind": "Flunder"},
                    "verbs": ["get", "patch"],
                }],
            })
        );
        assert_eq!(resources[1]["scope"], "Cluster");
        assert!(resources[1].get("categories").is_none());
    }
}
