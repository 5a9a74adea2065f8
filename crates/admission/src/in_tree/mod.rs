//! kube-apiserver's compiled-in admission plugins, as far as kubext runs
//! them, and which of them `--enable-admission-plugins` /
//! `--disable-admission-plugins` turn on. The mutating ones run before
//! admission policies and webhooks (upstream's plugin order), the validating
//! ones after, but for LimitRanger's validation, which runs before them as
//! upstream orders it.
//!
//! Run here: LimitRanger (container defaults; container, pod and claim
//! bounds), ServiceAccount, Priority, DefaultTolerationSeconds,
//! RuntimeClass (its validation of the overhead with its mutation),
//! DefaultStorageClass, StorageObjectInUseProtection, DefaultIngressClass, CertificateApproval,
//! CertificateSigning, AlwaysDeny. NamespaceLifecycle is
//! the store's own check; the policy and webhook plugins are the rest of
//! [`crate::Chain`]. Others are known by name only.

mod certificates;
mod default_class;
mod limit_ranger;
mod priority;
mod runtime_class;
mod service_account;
mod tolerations;

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};

use apimachinery::{StatusError, Subresource, meta};
use registry::{AdmittedObject, Attributes, Operation};
use serde_json::Value;

use crate::Objects;

/// 1.37's `AllOrderedPlugins`: every name the flags accept, in the order
/// kube-apiserver runs them.
pub const ALL: &[&str] = &[
    "AlwaysAdmit",
    "NamespaceAutoProvision",
    "NamespaceLifecycle",
    "NamespaceExists",
    "LimitPodHardAntiAffinityTopology",
    "LimitRanger",
    "ServiceAccount",
    "NodeRestriction",
    "TaintNodesByCondition",
    "AlwaysPullImages",
    "ImagePolicyWebhook",
    "PodSecurity",
    "PodNodeSelector",
    "Priority",
    "DefaultTolerationSeconds",
    "PodTolerationRestriction",
    "EventRateLimit",
    "ExtendedResourceToleration",
    "DefaultStorageClass",
    "StorageObjectInUseProtection",
    "PodGroupProtection",
    "OwnerReferencesPermissionEnforcement",
    "PersistentVolumeClaimResize",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "DenyServiceExternalIPs",
    "PodTopologyLabels",
    "NodeDeclaredFeatureValidator",
    "PodResizeValidator",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
    "AlwaysDeny",
];

/// 1.37's `DefaultOffAdmissionPlugins`: off unless enabled by name.
const DEFAULT_OFF: &[&str] = &[
    "AlwaysAdmit",
    "NamespaceAutoProvision",
    "NamespaceExists",
    "LimitPodHardAntiAffinityTopology",
    "NodeRestriction",
    "AlwaysPullImages",
    "ImagePolicyWebhook",
    "PodNodeSelector",
    "PodTolerationRestriction",
    "EventRateLimit",
    "ExtendedResourceToleration",
    "OwnerReferencesPermissionEnforcement",
    "DenyServiceExternalIPs",
    "AlwaysDeny",
];

/// A plugin of [`ALL`], by its place there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plugin(u8);

const _: () = assert!(
    ALL.len() <= u64::BITS as usize,
    "Plugins keeps one bit per plugin"
);

impl Plugin {
    /// The plugin named `name`. In a constant an unknown name fails the build.
    pub const fn named(name: &str) -> Plugin {
        match Plugin::find(name) {
            Some(plugin) => plugin,
            None => panic!("not an admission plugin of ALL"),
        }
    }

    /// The plugin named `name`, if the flags know it.
    pub const fn find(name: &str) -> Option<Plugin> {
        let mut i = 0;
        while i < ALL.len() {
            if ALL[i].len() == name.len() && same_bytes(ALL[i].as_bytes(), name.as_bytes()) {
                return Some(Plugin(i as u8));
            }
            i += 1;
        }
        None
    }

    pub fn name(self) -> &'static str {
        ALL[usize::from(self.0)]
    }

    const fn bit(self) -> u64 {
        1 << self.0
    }
}

const fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

pub const LIMIT_RANGER: Plugin = Plugin::named("LimitRanger");
pub const SERVICE_ACCOUNT: Plugin = Plugin::named("ServiceAccount");
pub const PRIORITY: Plugin = Plugin::named("Priority");
pub const DEFAULT_TOLERATION_SECONDS: Plugin = Plugin::named("DefaultTolerationSeconds");
pub const DEFAULT_STORAGE_CLASS: Plugin = Plugin::named("DefaultStorageClass");
pub const DEFAULT_INGRESS_CLASS: Plugin = Plugin::named("DefaultIngressClass");
pub const MUTATING_ADMISSION_POLICY: Plugin = Plugin::named("MutatingAdmissionPolicy");
pub const MUTATING_ADMISSION_WEBHOOK: Plugin = Plugin::named("MutatingAdmissionWebhook");
pub const VALIDATING_ADMISSION_POLICY: Plugin = Plugin::named("ValidatingAdmissionPolicy");
pub const VALIDATING_ADMISSION_WEBHOOK: Plugin = Plugin::named("ValidatingAdmissionWebhook");
pub const ALWAYS_DENY: Plugin = Plugin::named("AlwaysDeny");
pub const CERTIFICATE_APPROVAL: Plugin = Plugin::named("CertificateApproval");
pub const CERTIFICATE_SIGNING: Plugin = Plugin::named("CertificateSigning");
pub const STORAGE_OBJECT_IN_USE_PROTECTION: Plugin = Plugin::named("StorageObjectInUseProtection");
pub const RUNTIME_CLASS: Plugin = Plugin::named("RuntimeClass");

/// The admission plugins turned on: one bit per plugin of [`ALL`], tested on
/// every write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plugins {
    on: u64,
}

impl Default for Plugins {
    /// kube-apiserver's default-on set.
    fn default() -> Self {
        let mut plugins = Plugins { on: 0 };
        for name in ALL.iter().filter(|p| !DEFAULT_OFF.contains(p)) {
            plugins.turn(Plugin::named(name), true);
        }
        plugins
    }
}

/// Why `--enable-admission-plugins`/`--disable-admission-plugins` are
/// refused (kube-apiserver's words).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PluginFlagsError {
    /// `flag` names a plugin kube-apiserver does not have.
    #[error("{flag} plugin \"{name}\" is unknown")]
    Unknown { flag: &'static str, name: String },
    /// Plugins both enabled and disabled (sorted).
    #[error("[{}] in enable-admission-plugins and disable-admission-plugins overlapped", .0.join(" "))]
    Overlapping(Vec<&'static str>),
}

impl Plugins {
    /// The default set with `enable` added and `disable` removed, refused as
    /// kube-apiserver refuses unknown or contradictory names.
    pub fn from_flags(enable: &[String], disable: &[String]) -> Result<Plugins, PluginFlagsError> {
        let known = |flag: &'static str, names: &[String]| {
            names
                .iter()
                .map(|n| {
                    Plugin::find(n).ok_or_else(|| PluginFlagsError::Unknown {
                        flag,
                        name: n.clone(),
                    })
                })
                .collect::<Result<Vec<_>, _>>()
        };
        let enable = known("enable-admission-plugins", enable)?;
        let disable = known("disable-admission-plugins", disable)?;
        let overlap: BTreeSet<&'static str> = enable
            .iter()
            .filter(|p| disable.contains(p))
            .map(|p| p.name())
            .collect();
        if !overlap.is_empty() {
            return Err(PluginFlagsError::Overlapping(overlap.into_iter().collect()));
        }
        let mut plugins = Plugins::default();
        for plugin in enable {
            plugins.turn(plugin, true);
        }
        for plugin in disable {
            plugins.turn(plugin, false);
        }
        Ok(plugins)
    }

    fn turn(&mut self, plugin: Plugin, on: bool) {
        if on {
            self.on |= plugin.bit();
        } else {
            self.on &= !plugin.bit();
        }
    }

    pub fn is_on(&self, plugin: Plugin) -> bool {
        self.on & plugin.bit() != 0
    }
}

/// StorageObjectInUseProtection: a new claim, volume or volume attributes
/// class (any version: upstream matches the group-resource; the
/// VolumeAttributesClass gate is locked on in 1.37) gets the finalizer its
/// protection controller removes once nothing uses it; appended unless there.
fn protect_in_use(plural: &str, object: &mut Value) {
    let finalizer = match plural {
        "persistentvolumeclaims" => "kubernetes.io/pvc-protection",
        "persistentvolumes" => "kubernetes.io/pv-protection",
        _ => "kubernetes.io/vac-protection",
    };
    if meta::metadata(object).is_none() {
        return;
    }
    let finalizers = meta::metadata_mut(object)
        .entry("finalizers")
        .or_insert_with(|| Value::Array(Vec::new()));
    if finalizers.is_null() {
        *finalizers = Value::Array(Vec::new());
    }
    if let Value::Array(list) = finalizers
        && !list.iter().any(|f| f == finalizer)
    {
        list.push(Value::from(finalizer));
    }
}

/// The compiled-in plugins kubext runs, reading other objects (service
/// accounts, priority and storage classes) through [`Objects`].
pub struct InTree {
    plugins: Plugins,
    objects: OnceLock<Arc<dyn Objects>>,
}

impl InTree {
    pub fn new(plugins: Plugins) -> InTree {
        InTree {
            plugins,
            objects: OnceLock::new(),
        }
    }

    pub fn plugins(&self) -> &Plugins {
        &self.plugins
    }

    pub fn attach(&self, objects: Arc<dyn Objects>) {
        let _ = self.objects.set(objects);
    }

    /// The mutating plugins, in upstream's order. Whether one may have changed
    /// `object` (false when none applies to the write).
    pub async fn mutate(
        &self,
        a: &Attributes<'_>,
        object: &mut AdmittedObject<'_>,
    ) -> Result<bool, StatusError> {
        let Some(objects) = self.objects.get() else {
            return Ok(false);
        };
        let objects = objects.as_ref();
        let resource = (a.rtype.group.as_str(), a.rtype.plural.as_str());
        let main_resource = a.ctx.subresource.as_str().is_empty();
        let forbidden =
            |reason: String| StatusError::forbidden(&a.rtype.group_resource(), a.name, &reason);
        match resource {
            ("", "pods") if main_resource => {
                let object = object.json();
                if self.plugins.is_on(LIMIT_RANGER) && limit_ranger::applies(a) {
                    let ranges = limit_ranger::limit_ranges(objects, &a.ctx.namespace)
                        .await
                        .map_err(forbidden)?;
                    limit_ranger::default_pod(object, &ranges);
                }
                if a.operation == Operation::Create && self.plugins.is_on(SERVICE_ACCOUNT) {
                    service_account::admit(object, &a.ctx.namespace, objects)
                        .await
                        .map_err(forbidden)?;
                }
                if self.plugins.is_on(PRIORITY) {
                    priority::admit(object, a.operation, a.old_object, objects)
                        .await
                        .map_err(forbidden)?;
                }
                if self.plugins.is_on(DEFAULT_TOLERATION_SECONDS)
                    && matches!(a.operation, Operation::Create | Operation::Update)
                {
                    tolerations::add_defaults(object);
                }
                if a.operation == Operation::Create && self.plugins.is_on(RUNTIME_CLASS) {
                    runtime_class::admit(object, objects)
                        .await
                        .map_err(forbidden)?;
                }
            }
            // LimitRanger defaults a resized pod's containers too.
            ("", "pods")
                if a.ctx.subresource == Subresource::Resize
                    && self.plugins.is_on(LIMIT_RANGER)
                    && limit_ranger::applies(a) =>
            {
                let object = object.json();
                let ranges = limit_ranger::limit_ranges(objects, &a.ctx.namespace)
                    .await
                    .map_err(forbidden)?;
                limit_ranger::default_pod(object, &ranges);
            }
            // DefaultStorageClass, then StorageObjectInUseProtection (both
            // on the claim itself, on create only).
            ("", "persistentvolumeclaims")
                if main_resource
                    && a.operation == Operation::Create
                    && (self.plugins.is_on(DEFAULT_STORAGE_CLASS)
                        || self.plugins.is_on(STORAGE_OBJECT_IN_USE_PROTECTION)) =>
            {
                let object = object.json();
                if self.plugins.is_on(DEFAULT_STORAGE_CLASS) {
                    default_class::storage_class(object, objects).await;
                }
                if self.plugins.is_on(STORAGE_OBJECT_IN_USE_PROTECTION) {
                    protect_in_use(resource.1, object);
                }
            }
            ("", "persistentvolumes") | ("storage.k8s.io", "volumeattributesclasses")
                if main_resource
                    && a.operation == Operation::Create
                    && self.plugins.is_on(STORAGE_OBJECT_IN_USE_PROTECTION) =>
            {
                let object = object.json();
                protect_in_use(resource.1, object);
            }
            ("networking.k8s.io", "ingresses")
                if main_resource
                    && a.operation == Operation::Create
                    && self.plugins.is_on(DEFAULT_INGRESS_CLASS) =>
            {
                let object = object.json();
                default_class::ingress_class(object, objects).await;
            }
            _ => return Ok(false),
        }
        // A plugin ran: the store prunes and defaults again, which is
        // harmless when nothing changed (no copy is kept to compare).
        Ok(true)
    }

    /// The validating plugins upstream runs before policies and webhooks
    /// that need other objects: LimitRanger.
    pub async fn validate_before_policies(&self, a: &Attributes<'_>) -> Result<(), StatusError> {
        // Asked first: the object is written out as JSON only when read.
        if !self.plugins.is_on(LIMIT_RANGER) || !limit_ranger::applies(a) {
            return Ok(());
        }
        let (Some(objects), Some(object)) = (self.objects.get(), a.object()) else {
            return Ok(());
        };
        let forbidden =
            |reason: String| StatusError::forbidden(&a.rtype.group_resource(), a.name, &reason);
        let ranges = limit_ranger::limit_ranges(objects.as_ref(), &a.ctx.namespace)
            .await
            .map_err(forbidden)?;
        limit_ranger::validate(&a.rtype.plural, object, &ranges).map_err(forbidden)
    }

    /// The validating plugins, after policies and webhooks.
    pub fn validate(&self, a: &Attributes<'_>) -> Result<(), StatusError> {
        let forbidden =
            |reason: &str| StatusError::forbidden(&a.rtype.group_resource(), a.name, reason);
        if self.plugins.is_on(ALWAYS_DENY) {
            return Err(forbidden("admission control is denying all modifications"));
        }
        let csr_update = a.operation == Operation::Update
            && a.rtype.group == "certificates.k8s.io"
            && a.rtype.plural == "certificatesigningrequests";
        if !csr_update {
            return Ok(());
        }
        let Some(objects) = self.objects.get() else {
            return Ok(());
        };
        let verb = match a.ctx.subresource.as_str() {
            "approval" if self.plugins.is_on(CERTIFICATE_APPROVAL) => "approve",
            "status"
                if self.plugins.is_on(CERTIFICATE_SIGNING)
                    && certificates::status_changed(a.object(), a.old_object) =>
            {
                "sign"
            }
            _ => return Ok(()),
        };
        let signer = certificates::signer_name(a.old_object);
        let authorize = objects.authorizer(a.ctx);
        if certificates::may(authorize.as_deref(), verb, signer) {
            return Ok(());
        }
        Err(forbidden(&format!(
            "user not permitted to {verb} requests with signerName {signer:?}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use registry::RequestContext;
    use serde_json::json;

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    /// No classes, namespaces or authorizer: only what the plugins do alone.
    struct Nothing;

    #[async_trait::async_trait]
    impl Objects for Nothing {
        async fn namespace(&self, _: &str) -> Option<Value> {
            None
        }
        async fn find(
            &self,
            _: &str,
            _: &str,
            _: &str,
            _: Option<&str>,
            _: Option<&apimachinery::selector::LabelSelector>,
        ) -> Result<Vec<Value>, crate::FindError> {
            Ok(Vec::new())
        }
        fn kind_of(&self, _: &str, _: &str, _: &str) -> Option<String> {
            None
        }
        fn other_versions(&self, _: &str, _: &str, _: &str) -> Vec<String> {
            Vec::new()
        }
        fn authorizer(&self, _: &RequestContext) -> Option<Arc<dyn cel_rules::Authorize>> {
            None
        }
    }

    /// The finalizers `object` has after the mutating plugins of `plugins`.
    async fn finalizers_after(
        plugins: Plugins,
        (group, plural): (&str, &str),
        operation: Operation,
        subresource: Subresource,
        object: Value,
    ) -> Value {
        let in_tree = InTree::new(plugins);
        in_tree.attach(Arc::new(Nothing));
        let rtype = registry::builtin::resource_types()
            .into_iter()
            .find(|t| t.group == group && t.plural == plural)
            .unwrap();
        let ctx = RequestContext {
            namespace: if rtype.namespaced { "default" } else { "" }.into(),
            subresource,
            ..Default::default()
        };
        let old = object.clone();
        let a = Attributes {
            operation,
            rtype: &rtype,
            name: "x",
            object: None,
            old_object: (operation == Operation::Update).then_some(&old),
            ctx: &ctx,
        };
        let mut typed =
            apimachinery::DynamicObject::from_value(object.clone(), "metadata.").unwrap();
        let mut admitted = AdmittedObject::new(&mut typed);
        in_tree.mutate(&a, &mut admitted).await.unwrap();
        let object = admitted.into_json().unwrap_or(object);
        object["metadata"]["finalizers"].clone()
    }

    // plugin/pkg/admission/storage/storageobjectinuseprotection: Create of the
    // objects themselves only; the finalizer appended once.
    #[tokio::test]
    async fn storage_objects_are_protected_on_create() {
        let on = Plugins::default();
        let claim = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "x"}, "spec": {"storageClassName": "fast"}});
        let pvcs = ("", "persistentvolumeclaims");
        let create = Operation::Create;
        // DefaultStorageClass looks at the claim too (on by default): both run.
        assert_eq!(
            finalizers_after(on, pvcs, create, Subresource::None, claim.clone()).await,
            json!(["kubernetes.io/pvc-protection"])
        );
        let volume = json!({"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": "x", "finalizers": null}});
        assert_eq!(
            finalizers_after(
                on,
                ("", "persistentvolumes"),
                create,
                Subresource::None,
                volume
            )
            .await,
            json!(["kubernetes.io/pv-protection"])
        );
        let class = json!({"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttributesClass",
            "metadata": {"name": "x", "finalizers": ["example.com/a", "kubernetes.io/vac-protection"]}});
        assert_eq!(
            finalizers_after(
                on,
                ("storage.k8s.io", "volumeattributesclasses"),
                create,
                Subresource::None,
                class
            )
            .await,
            json!(["example.com/a", "kubernetes.io/vac-protection"])
        );
        let mut kept = claim.clone();
        kept["metadata"]["finalizers"] = json!(["example.com/a"]);
        assert_eq!(
            finalizers_after(on, pvcs, create, Subresource::None, kept).await,
            json!(["example.com/a", "kubernetes.io/pvc-protection"])
        );
        // Not on updates, not through subresources, not when turned off.
        let update = Operation::Update;
        for (plugins, operation, subresource) in [
            (on, update, Subresource::None),
            (on, update, Subresource::Status),
            (
                Plugins::from_flags(&[], &names(&["StorageObjectInUseProtection"])).unwrap(),
                create,
                Subresource::None,
            ),
        ] {
            assert_eq!(
                finalizers_after(plugins, pvcs, operation, subresource.clone(), claim.clone())
                    .await,
                Value::Null,
                "{operation:?} {subresource:?}"
            );
        }
        // Without DefaultStorageClass the claim is still protected.
        let alone = Plugins::from_flags(&[], &names(&["DefaultStorageClass"])).unwrap();
        assert_eq!(
            finalizers_after(alone, pvcs, create, Subresource::None, claim).await,
            json!(["kubernetes.io/pvc-protection"])
        );
    }

    #[test]
    fn the_default_set_is_upstreams() {
        let plugins = Plugins::default();
        for on in [
            "NamespaceLifecycle",
            "ServiceAccount",
            "Priority",
            "DefaultTolerationSeconds",
            "DefaultStorageClass",
            "DefaultIngressClass",
            "MutatingAdmissionWebhook",
            "ValidatingAdmissionPolicy",
            "ResourceQuota",
        ] {
            assert!(plugins.is_on(Plugin::named(on)), "{on}");
        }
        for off in ["AlwaysDeny", "AlwaysPullImages", "NodeRestriction"] {
            assert!(!plugins.is_on(Plugin::named(off)), "{off}");
        }
    }

    #[test]
    fn flags_turn_plugins_on_and_off() {
        let plugins =
            Plugins::from_flags(&names(&["AlwaysDeny"]), &names(&["ServiceAccount"])).unwrap();
        assert!(plugins.is_on(ALWAYS_DENY));
        assert!(!plugins.is_on(SERVICE_ACCOUNT));
        assert!(plugins.is_on(PRIORITY));
    }

    #[test]
    fn unknown_and_overlapping_names_are_refused_as_upstream() {
        assert_eq!(
            Plugins::from_flags(&names(&["Bogus"]), &[]).map_err(|e| e.to_string()),
            Err("enable-admission-plugins plugin \"Bogus\" is unknown".into())
        );
        assert_eq!(
            Plugins::from_flags(&[], &names(&["Nope"])).map_err(|e| e.to_string()),
            Err("disable-admission-plugins plugin \"Nope\" is unknown".into())
        );
        assert_eq!(
            Plugins::from_flags(
                &names(&["Priority", "AlwaysDeny"]),
                &names(&["Priority", "AlwaysDeny"])
            )
            .map_err(|e| e.to_string()),
            Err("[AlwaysDeny Priority] in enable-admission-plugins and disable-admission-plugins overlapped".into())
        );
    }
}
