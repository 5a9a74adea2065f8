//! What the registry's integration tests share: built-in stores over one
//! memory backend, with namespace `test` present.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::sync::Arc;

use kubext_registry as registry;

use serde_json::{Value, json};

use registry::{GenericStore, Object, RequestContext, ResourceType, Storage};
use storage::StoreOptions;

pub const NAMESPACE: &str = "test";

/// Stores of a few built-in types over one memory backend, with namespace
/// `test` present.
pub struct Fixture {
    pub storage: Arc<Storage>,
    types: Vec<Arc<ResourceType>>,
}

impl Fixture {
    pub async fn new() -> Self {
        Self::with_options(StoreOptions::default()).await
    }

    pub async fn with_options(options: StoreOptions) -> Self {
        let backend = Arc::new(storage::memory::MemoryBackend::new());
        let storage = Storage::open(backend, registry::JsonCodec, options)
            .await
            .unwrap();
        let fixture = Fixture {
            storage,
            types: registry::builtin::resource_types(),
        };
        fixture
            .store("", "namespaces")
            .create(
                &RequestContext::default(),
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
            )
            .await
            .unwrap();
        fixture
    }

    pub fn store(&self, group: &str, plural: &str) -> GenericStore {
        let rtype = self
            .types
            .iter()
            .find(|t| t.group == group && t.plural == plural && t.is_stored())
            .unwrap_or_else(|| panic!("no built-in {plural}.{group}"))
            .clone();
        GenericStore::new(rtype, self.storage.clone(), "/registry")
    }

    /// What is stored under `name` in namespace `test`, as served.
    pub async fn stored(&self, store: &GenericStore, name: &str) -> Option<Value> {
        store.get(&ctx(), name).await.ok().map(|o| value(&o))
    }
}

pub fn value(object: &Object) -> Value {
    object.to_value()
}

pub fn ctx() -> RequestContext {
    RequestContext {
        namespace: NAMESPACE.into(),
        user: "admin".into(),
        groups: vec!["system:masters".into()],
        ..Default::default()
    }
}
