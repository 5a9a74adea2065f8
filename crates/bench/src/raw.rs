//! The raw storage ceiling: the same creates, straight into a storage backend
//! (in this process, no HTTP, no API machinery), with the same concurrency.

use anyhow::{Context, Result};
use apimachinery::meta;
use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;
use storage::Backend;
use storage::etcd::EtcdBackend;
use storage::memory::MemoryBackend;
use storage::sqlite::SqliteBackend;

use crate::kubext::Phase;
use crate::requests::config_map;
use crate::{cpu, stats};

/// Which store to write to.
#[derive(Debug, Clone)]
pub enum Target {
    Memory,
    /// A fresh SQLite file in a temp dir.
    Sqlite,
    /// The etcd at this endpoint (under a private prefix).
    Etcd(String),
}

#[derive(Debug, Clone, Default)]
pub struct RawResult {
    pub creates: Phase,
    /// Bytes per stored value.
    pub value_bytes: usize,
    /// Extra facts, e.g. SQLite's writes per transaction.
    pub note: Option<String>,
    /// Cores used during the creates (no kubext runs then).
    pub cpu: cpu::Split,
}

/// What kubext stores for one bench ConfigMap, approximately: the object plus
/// the metadata the server adds.
pub fn stored_value(payload: &str) -> Result<Bytes> {
    let mut value = serde_json::to_value(config_map("cm-000000", payload))?;
    if meta::metadata(&value).is_some() {
        let md = meta::metadata_mut(&mut value);
        md.insert("namespace".into(), "bench".into());
        md.insert("uid".into(), "8a3c1f7e-5b2d-4e0a-9c61-2f4b7d9e1a05".into());
        md.insert("creationTimestamp".into(), "2025-01-01T00:00:00Z".into());
        md.insert(
            "managedFields".into(),
            serde_json::json!([{"apiVersion": "v1", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": {".": {}, "f:payload": {}}, "f:metadata": {"f:labels": {".": {}, "f:app": {}}}},
                "manager": "kubext-bench", "operation": "Update", "time": "2025-01-01T00:00:00Z"}]),
        );
    }
    if let Some(obj) = value.as_object_mut() {
        obj.insert("apiVersion".into(), "v1".into());
        obj.insert("kind".into(), "ConfigMap".into());
    }
    Ok(Bytes::from(serde_json::to_vec(&value)?))
}

/// `objects` creates of `value` into `target` from `concurrency` tasks.
pub async fn measure(
    target: Target,
    objects: usize,
    concurrency: usize,
    budget: Duration,
    value: Bytes,
    etcd_pid: Option<u32>,
) -> Result<RawResult> {
    let mut note = None;
    let mut _tmp = None;
    let mut sqlite = None;
    let (backend, prefix): (Arc<dyn Backend>, &str) = match &target {
        Target::Memory => (Arc::new(MemoryBackend::new()), "/registry"),
        Target::Sqlite => {
            let dir = tempfile::Builder::new()
                .prefix("kubext-bench-raw")
                .tempdir()?;
            let db =
                Arc::new(SqliteBackend::open(&dir.path().join("raw.db")).context("open SQLite")?);
            _tmp = Some(dir);
            sqlite = Some(db.clone());
            (db, "/registry")
        }
        Target::Etcd(endpoint) => {
            // The bench's own etcd (testkit's), plain HTTP as kubext's side of the
            // run: no TLS options to pass.
            let etcd = EtcdBackend::connect(
                std::slice::from_ref(endpoint),
                "/kubext-bench-raw",
                Duration::from_secs(5),
            )
            .await
            .context("connect to etcd")?;
            (Arc::new(etcd), "/kubext-bench-raw")
        }
    };
    let value_bytes = value.len();
    let meter = cpu::Meter::start(&[], etcd_pid);
    let run = {
        let backend = backend.clone();
        let prefix = prefix.to_owned();
        stats::run(
            objects,
            concurrency,
            budget,
            Duration::from_secs(15),
            move |i| {
                let backend = backend.clone();
                let key = format!("{prefix}/configmaps/bench/cm-{i:06}");
                let value = value.clone();
                async move {
                    backend.create(&key, value).await?;
                    Ok(())
                }
            },
        )
        .await
    };
    let cpu = meter.finish();
    if let Some(db) = sqlite {
        let s = db.commit_stats();
        if s.transactions > 0 {
            note = Some(format!(
                "sqlite group commit: {:.1} writes/txn",
                s.writes as f64 / s.transactions as f64
            ));
        }
    }
    backend.close().await;
    Ok(RawResult {
        creates: Phase::from(&run),
        value_bytes,
        note,
        cpu,
    })
}
