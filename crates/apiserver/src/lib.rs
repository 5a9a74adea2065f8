//! Write an aggregated API server (an "extension API server", the seeds' second way
//! to extend Kubernetes) in Rust, on kubext's machinery.
//!
//! Describe each type the way a CustomResourceDefinition does (names, scope,
//! versions, OpenAPI v3 schema, subresources, printer columns) and optionally add
//! validating admission. [`ApiServer::start`] then serves, over TLS:
//! - CRUD, list with selectors and pagination, watch, every patch type, server-side
//!   apply, `metav1.Status` errors with field paths, tables, the status subresource;
//! - discovery (legacy and aggregated) and OpenAPI v2/v3, so `kubectl explain` works
//!   through the aggregator;
//! - request-header authentication of the aggregator, trusting the CA and header
//!   names its main server publishes in `kube-system/extension-apiserver-authentication`
//!   (client certificates of the main server's client CA work directly too);
//! - bearer tokens (a service account's, say) authenticated by the main server
//!   with TokenReviews, for clients that call the server directly, cached;
//! - authorization delegated to the main server with SubjectAccessReviews, cached.
//!
//! Objects live in kubext's storage (in memory or in an embedded database), or are
//! computed when asked by a [`Provider`] (read-only, like metrics-server's).
//!
//! ```no_run
//! # async fn run() -> anyhow::Result<()> {
//! let crd = serde_json::json!({ /* a CustomResourceDefinition */ });
//! let server = kubext_apiserver::ApiServer::new("wardle-apiserver")
//!     .resource(&crd)?
//!     .main_server(kube::Config::infer().await?)
//!     .start()
//!     .await?;
//! # Ok(()) }
//! ```

mod delegation;
mod objects;

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result, anyhow};
use serde_json::Value;

/// An object's metadata read and written on its JSON (`meta::name`,
/// `meta::labels`, …), for admission and providers.
pub use apimachinery::meta;
pub use apimachinery::{GroupResource, StatusError};
pub use delegation::{SubjectAccessReviews, TokenReviews};
pub use objects::Objects;
pub use registry::{Admission, Operation, Provider, RequestContext};
pub use server::{Running, StorageKind, wait_for_shutdown_signal};

/// The served types of a CustomResourceDefinition, as an extension server's.
fn compile(definition: &Value) -> Result<Vec<registry::ResourceType>> {
    let name = apimachinery::meta::name(definition);
    let errors = apiextensions::crd::validate_crd(definition);
    if !errors.is_empty() {
        let invalid = StatusError::invalid(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            name,
            &errors,
        );
        return Err(anyhow!("{}", invalid.status().message));
    }
    let mut established = definition.clone();
    apiextensions::crd::set_condition(&mut established, "Established", "", "");
    let mut types = apiextensions::custom_resource::served_types(&established, None);
    if types.is_empty() {
        return Err(anyhow!("{name}: no served version"));
    }
    for t in &mut types {
        // Namespaces live on the main server.
        t.namespace_lifecycle = false;
        // Discovery as an upstream extension server's (the generic
        // installer's), not as a CRD's.
        t.custom_resource_discovery = false;
    }
    Ok(types)
}

/// An aggregated API server, to be configured and started.
pub struct ApiServer {
    name: String,
    types: Vec<registry::ResourceType>,
    main_server: Option<kube::Config>,
    data_dir: PathBuf,
    bind_address: IpAddr,
    port: u16,
    storage: StorageKind,
    serving_hosts: Vec<String>,
    objects: Objects,
}

impl ApiServer {
    /// `name` shows in logs.
    pub fn new(name: &str) -> Self {
        ApiServer {
            name: name.to_string(),
            types: Vec::new(),
            main_server: None,
            data_dir: PathBuf::from(format!("{name}-data")),
            bind_address: IpAddr::from([127, 0, 0, 1]),
            port: 8443,
            storage: StorageKind::Memory,
            serving_hosts: Vec::new(),
            objects: Objects::default(),
        }
    }

    /// Serve the type a CustomResourceDefinition (`apiextensions.k8s.io/v1`, as
    /// JSON) describes, every served version, stored, with its validation,
    /// defaulting, pruning, subresources and columns. An invalid definition is an
    /// error with the CRD's own field paths.
    pub fn resource(mut self, definition: &Value) -> Result<Self> {
        self.types.extend(compile(definition)?);
        Ok(self)
    }

    /// Serve a type whose objects `provider` computes when asked (like
    /// metrics-server's): `get` and `list` (with selectors and tables) only,
    /// nothing stored. `definition` describes it as for [`resource`](Self::resource).
    pub fn computed(mut self, definition: &Value, provider: Arc<dyn Provider>) -> Result<Self> {
        for mut t in compile(definition)? {
            t.provider = Some(provider.clone());
            t.verbs = registry::READ_VERBS;
            self.types.push(t);
        }
        Ok(self)
    }

    /// [`resource`](Self::resource) from YAML.
    pub fn resource_yaml(self, yaml: &str) -> Result<Self> {
        let definition: Value =
            serde_saphyr::from_str(yaml).context("the resource definition is not valid YAML")?;
        self.resource(&definition)
    }

    /// Validating admission for every version of `plural` (after defaulting and
    /// validation, before storage).
    pub fn admission(mut self, plural: &str, admission: Arc<dyn Admission>) -> Self {
        for t in self.types.iter_mut().filter(|t| t.plural == plural) {
            t.admission = Some(admission.clone());
        }
        self
    }

    /// The main API server: whom to trust (its authentication ConfigMap) and whom to
    /// ask about authorization.
    pub fn main_server(mut self, config: kube::Config) -> Self {
        self.main_server = Some(config);
        self
    }

    /// Where the generated certificates, kubeconfig and (embedded storage) database go.
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.data_dir = dir.into();
        self
    }

    pub fn bind_address(mut self, address: IpAddr) -> Self {
        self.bind_address = address;
        self
    }

    /// 0 picks a free port.
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    pub fn storage(mut self, storage: StorageKind) -> Self {
        self.storage = storage;
        self
    }

    /// An extra name for the serving certificate, such as `api.wardle.svc`: the
    /// aggregator checks a `caBundle` against `<service>.<namespace>.svc`.
    pub fn serving_host(mut self, name: &str) -> Self {
        self.serving_hosts.push(name.to_string());
        self
    }

    /// Read access to this server's objects, for admission that looks at other
    /// objects; usable once the server started.
    pub fn objects(&self) -> Objects {
        self.objects.clone()
    }

    /// Fetch the main server's trust settings, then serve.
    pub async fn start(self) -> Result<Running> {
        let main = self
            .main_server
            .ok_or_else(|| anyhow!("no main server configured (ApiServer::main_server)"))?;
        let client = kube::Client::try_from(main).context("main server client")?;
        std::fs::create_dir_all(&self.data_dir)
            .with_context(|| format!("cannot create data dir {}", self.data_dir.display()))?;
        let trust = delegation::trust(&client, &self.data_dir.join("delegation")).await?;
        let config = server::Config {
            data_dir: self.data_dir,
            bind_address: self.bind_address,
            secure_port: self.port,
            storage: self.storage,
            client_ca_file: Some(trust.client_ca_file),
            front_proxy: trust.front_proxy,
            serving_hosts: self.serving_hosts,
            ..Default::default()
        };
        let serving = server::Serving {
            name: self.name,
            types: self.types.into_iter().map(Arc::new).collect(),
            // As a delegating server: system:masters and the health checks
            // need no question to the main server.
            authorizer: Arc::new(server::authz::Union(vec![
                Arc::new(server::authz::PrivilegedGroups::masters()),
                Arc::new(server::authz::AllowPaths::health()),
                Arc::new(SubjectAccessReviews::new(client.clone())),
            ])),
            rules: Arc::new(server::authz::NoRules),
            admission: None,
            // An aggregated server answers everything it serves itself.
            delegation: None,
            token_reviewer: Some(Arc::new(TokenReviews::new(client))),
        };
        let running = server::start(config, serving).await?;
        self.objects.bind(running.api.clone());
        Ok(running)
    }
}
