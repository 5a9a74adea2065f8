//! How long generating every document takes: `cargo run --release -p kubext-openapi --example timing`.

use std::time::Instant;

use kubext_openapi::{Documents, ServedResource, builtin_components};

fn main() {
    let resources = vec![
        ServedResource::new("", "v1", "Namespace", "namespaces", false).with_status(),
        ServedResource::new("", "v1", "ConfigMap", "configmaps", true),
        ServedResource::new("", "v1", "Secret", "secrets", true),
        ServedResource::new("", "v1", "ServiceAccount", "serviceaccounts", true),
        ServedResource::new("", "v1", "Event", "events", true),
        ServedResource::new("", "v1", "Service", "services", true).with_status(),
        ServedResource::new("", "v1", "Endpoints", "endpoints", true),
        ServedResource::new(
            "discovery.k8s.io",
            "v1",
            "EndpointSlice",
            "endpointslices",
            true,
        ),
        ServedResource::new("coordination.k8s.io", "v1", "Lease", "leases", true),
        ServedResource::new("events.k8s.io", "v1", "Event", "events", true),
    ];
    let start = Instant::now();
    let components = builtin_components().len();
    let builtin = start.elapsed();

    let start = Instant::now();
    let docs = Documents::generate(&resources);
    let first = start.elapsed();

    let runs = 50;
    let start = Instant::now();
    for _ in 0..runs {
        std::hint::black_box(Documents::generate(&resources));
    }
    let each = start.elapsed() / runs;

    let v3: usize = docs
        .v3_paths()
        .filter_map(|p| docs.v3_group_version(p))
        .map(|d| d.json.len())
        .sum();
    println!("built-in schemas ({components} components, once per process): {builtin:?}");
    println!("Documents::generate: first {first:?}, then {each:?} on average over {runs} runs");
    println!(
        "sizes: index {} B, v3 documents {v3} B, v2 JSON {} B, v2 protobuf {} B",
        docs.v3_index().len(),
        docs.v2().len(),
        docs.v2_protobuf().len()
    );
}
