//! `/metrics` in the Prometheus text format, with kube-apiserver's metric names
//! where one exists.

use foldhash::HashMap;
use parking_lot::RwLock;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

use apimachinery::Verb;
use registry::Storage;

use crate::request_info::RequestInfo;

/// Request counts by group, resource, verb and code. Counting takes a shared
/// lock and an atomic add: no allocation once a combination has been seen.
#[derive(Default)]
pub struct Metrics {
    requests: RwLock<Counters>,
}

type Counters = HashMap<String, HashMap<String, HashMap<(Verb, u16), AtomicU64>>>;

impl Metrics {
    pub fn observe(&self, info: &RequestInfo, code: u16) {
        let key = (info.verb, code);
        if let Some(counter) = self
            .requests
            .read()
            .get(info.group.as_str())
            .and_then(|r| r.get(info.resource.as_str()))
            .and_then(|c| c.get(&key))
        {
            counter.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.requests
            .write()
            .entry(info.group.to_string())
            .or_default()
            .entry(info.resource.to_string())
            .or_default()
            .entry(key)
            .or_default()
            .fetch_add(1, Ordering::Relaxed);
    }

    pub fn render(&self, storage: &Storage) -> String {
        let mut out = String::new();
        out.push_str("# HELP apiserver_request_total Counter of apiserver requests broken out for each verb, group, resource and HTTP response code.\n# TYPE apiserver_request_total counter\n");
        let mut rows: Vec<_> = Vec::new();
        for (group, resources) in self.requests.read().iter() {
            for (resource, counters) in resources {
                for ((verb, code), n) in counters {
                    rows.push((
                        *verb,
                        group.clone(),
                        resource.clone(),
                        *code,
                        n.load(Ordering::Relaxed),
                    ));
                }
            }
        }
        rows.sort();
        for (verb, group, resource, code, n) in rows {
            let verb = match verb {
                Verb::None => "NONRESOURCE".into(),
                verb => verb.as_str().to_uppercase(),
            };
            let _ = writeln!(
                out,
                "apiserver_request_total{{code=\"{code}\",group=\"{group}\",resource=\"{resource}\",verb=\"{verb}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "# HELP kubext_storage_revision Latest revision applied to the watch cache.\n# TYPE kubext_storage_revision gauge\nkubext_storage_revision {}",
            storage.revision()
        );
        let _ = writeln!(
            out,
            "# HELP apiserver_registered_watchers Number of currently registered watchers.\n# TYPE apiserver_registered_watchers gauge\napiserver_registered_watchers {}",
            storage.watcher_count()
        );
        if let Some(live) = HEAP_LIVE_BYTES.get().map(|f| f()) {
            let _ = writeln!(
                out,
                "# HELP kubext_heap_live_bytes Heap bytes allocated and not yet freed (without what the allocator retains).\n# TYPE kubext_heap_live_bytes gauge\nkubext_heap_live_bytes {live}"
            );
        }
        if let Some(rss) = resident_bytes() {
            let _ = writeln!(
                out,
                "# HELP process_resident_memory_bytes Resident memory size in bytes.\n# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes {rss}"
            );
        }
        out
    }
}

/// Where `kubext_heap_live_bytes` comes from: the binary's allocator, which
/// only the binary knows.
static HEAP_LIVE_BYTES: std::sync::OnceLock<fn() -> u64> = std::sync::OnceLock::new();

/// Report live heap bytes from `source` (called once, by the binary that
/// installed a counting allocator).
pub fn report_heap_with(source: fn() -> u64) {
    let _ = HEAP_LIVE_BYTES.set(source);
}

/// RSS from /proc (Linux).
pub fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}
