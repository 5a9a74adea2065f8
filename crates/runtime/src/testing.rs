//! Stores for the runtime's tests: in memory, with the settings a test picks.

use std::sync::Arc;

use registry::{GenericStore, JsonCodec, Storage};
use serde_json::json;
use storage::StoreOptions;

/// An in-memory store whose watchers are ended after `watcher_queue` unread
/// events and whose history keeps `history_limit`.
pub(crate) async fn storage(watcher_queue: usize, history_limit: usize) -> Arc<Storage> {
    let backend = Arc::new(storage::memory::MemoryBackend::new());
    let options = StoreOptions {
        watcher_queue,
        history_limit,
        ..Default::default()
    };
    Storage::open(backend, JsonCodec, options).await.unwrap()
}

/// The core resource `plural` in `storage`.
pub(crate) fn core(storage: &Arc<Storage>, plural: &str) -> Arc<GenericStore> {
    let mut rtype = registry::builtin::resource_types()
        .into_iter()
        .find(|t| t.group.is_empty() && t.plural == plural)
        .and_then(Arc::into_inner)
        .unwrap();
    // No namespaces in this store.
    rtype.namespace_lifecycle = false;
    Arc::new(GenericStore::new(
        Arc::new(rtype),
        storage.clone(),
        "/registry",
    ))
}

pub(crate) async fn configmaps(watcher_queue: usize, history_limit: usize) -> Arc<GenericStore> {
    core(&storage(watcher_queue, history_limit).await, "configmaps")
}

pub(crate) async fn create(store: &GenericStore, name: &str) {
    let ctx = crate::system_context("default", "test");
    let kind = &store.rtype.kind;
    let object = json!({"apiVersion": "v1", "kind": kind, "metadata": {"name": name}});
    store.create(&ctx, object).await.unwrap();
}
