use kubext_openapi::*;
fn main() {
    let rs = vec![
        ServedResource::new("", "v1", "Namespace", "namespaces", false).with_status(),
        ServedResource::new("", "v1", "ConfigMap", "configmaps", true),
        ServedResource::new("", "v1", "Secret", "secrets", true),
        ServedResource::new("", "v1", "ServiceAccount", "serviceaccounts", true),
        ServedResource::new("", "v1", "Event", "events", true),
        ServedResource::new("", "v1", "Service", "services", true).with_status(),
        ServedResource::new("", "v1", "Endpoints", "endpoints", true),
        ServedResource::new("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", true),
        ServedResource::new("coordination.k8s.io", "v1", "Lease", "leases", true),
        ServedResource::new("events.k8s.io", "v1", "Event", "events", true),
        ServedResource::new("stable.example.com", "v1", "CronTab", "crontabs", true).with_schema(serde_json::json!({
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {"cronSpec": {"type": "string", "description": "the schedule"}, "tags": {"type": "array", "items": {"type": "string"}}}}}
        })),
    ];
    let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(20);
    let t = std::time::Instant::now();
    let _ = builtin_components();
    let b = t.elapsed();
    let t = std::time::Instant::now();
    for _ in 0..n { let _ = Documents::generate(&rs); }
    let per = t.elapsed() / n as u32;
    let d = Documents::generate(&rs);
    eprintln!("builtin {b:?}, Documents::generate avg {per:?} over {n}");
    std::fs::write("/tmp/oa_index.json", d.v3_index()).unwrap();
    for path in d.v3_paths() {
        let f = format!("/tmp/oa/{}", path.replace('/', "_"));
        std::fs::create_dir_all("/tmp/oa").unwrap();
        std::fs::write(f, &d.v3_group_version(path).unwrap().json).unwrap();
    }
    std::fs::write("/tmp/oa_core.json", &d.v3_group_version("api/v1").unwrap().json).unwrap();
    std::fs::write("/tmp/oa_coord.json", &d.v3_group_version("apis/coordination.k8s.io/v1").unwrap().json).unwrap();
    std::fs::write("/tmp/oa_v2.json", d.v2()).unwrap();
    std::fs::write("/tmp/oa_v2.pb", d.v2_protobuf()).unwrap();
}
