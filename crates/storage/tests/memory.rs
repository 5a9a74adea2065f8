//! The backend conformance suite on the in-memory reference backend.

use kubext_storage::memory::MemoryBackend;
use std::sync::Arc;

kubext_storage::conformance_tests!(Arc::new(MemoryBackend::new()));

/// `run_all` (the single-test form of the suite) runs every case.
#[tokio::test]
async fn run_all_runs_every_case() {
    kubext_storage::conformance::run_all(|| async { Arc::new(MemoryBackend::new()) }).await;
}
