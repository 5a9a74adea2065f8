//! `/metrics` in the Prometheus text format, with kube-apiserver's metric names
//! where one exists.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::fmt::Write;
use std::time::Duration;

use apimachinery::Verb;
use registry::Storage;

use crate::request_info::RequestInfo;

#[derive(Default)]
pub struct Metrics {
    requests: Mutex<HashMap<(Verb, String, String, u16), u64>>,
}

impl Metrics {
    pub fn observe(&self, info: &RequestInfo, code: u16, _elapsed: Duration) {
        let key = (info.verb, info.group.clone(), info.resource.clone(), code);
        *self.requests.lock().entry(key).or_default() += 1;
    }

    pub fn render(&self, storage: &Storage) -> String {
        let mut out = String::new();
        out.push_str("# HELP apiserver_request_total Counter of apiserver requests broken out for each verb, group, resource and HTTP response code.\n# TYPE apiserver_request_total counter\n");
        let mut rows: Vec<_> = self
            .requests
            .lock()
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        rows.sort();
        for ((verb, group, resource, code), n) in rows {
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
        if let Some(rss) = resident_bytes() {
            let _ = writeln!(
                out,
                "# HELP process_resident_memory_bytes Resident memory size in bytes.\n# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes {rss}"
            );
        }
        out
    }
}

/// RSS from /proc (Linux).
pub fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}
