//! Upstream's defaulting of built-in kinds (`pkg/apis/<group>/<version>/defaults.go`,
//! the generated `zz_generated.defaults.go` and the declarative `+default` markers of
//! `k8s.io/api`), as kube-apiserver 1.33 applies it, on unstructured JSON in the
//! served version.
//!
//! Every defaulter fills in only what is missing and never replaces a value the
//! client set. Go cannot tell an absent non-pointer field from its zero value, so
//! for those fields (`dnsPolicy`, probe thresholds, …) an explicit `""` or `0` is
//! defaulted too, as upstream does; pointer fields are defaulted only when absent
//! or `null`. Values of the wrong JSON type are left alone for validation to
//! report. Struct-valued (non-pointer) fields such as `spec` or a workload's
//! `template` are created empty when absent, since upstream defaults inside them
//! unconditionally; pointer-valued ones are descended into only when present.
//!
//! Left out: `SetDefaults_ResourceList` (rounding every quantity up to milli-units)
//! is not reproduced, quantities are kept as written; defaults behind feature
//! gates that are off in 1.33 (`ImageVolume` pull policy, `PodLevelResources`,
//! `MaxUnavailableStatefulSet`, `HPAConfigurableTolerance`, host ports in pod
//! templates) are not applied. Service, Namespace, ConfigMap and Secret defaults
//! live with their strategies.

use apimachinery::DynamicObject;
use serde_json::{Map, Value, json};

type Obj = Map<String, Value>;

/// The defaulter of `group`/`kind` in its served version, if upstream has one.
pub fn defaulter(group: &str, kind: &str) -> Option<fn(&mut DynamicObject)> {
    let f: fn(&mut DynamicObject) = match (group, kind) {
        ("", "Pod") => pod,
        ("", "PodTemplate") => pod_template,
        ("", "ReplicationController") => replication_controller,
        ("", "PersistentVolume") => persistent_volume,
        ("", "PersistentVolumeClaim") => persistent_volume_claim,
        ("", "Endpoints") => endpoints,
        ("", "Node") => node,
        ("", "LimitRange") => limit_range,
        ("apps", "Deployment") => deployment,
        ("apps", "ReplicaSet") => replica_set,
        ("apps", "StatefulSet") => stateful_set,
        ("apps", "DaemonSet") => daemon_set,
        ("batch", "Job") => job,
        ("batch", "CronJob") => cron_job,
        ("autoscaling", "HorizontalPodAutoscaler") => hpa_v2,
        ("networking.k8s.io", "NetworkPolicy") => network_policy,
        ("networking.k8s.io", "IngressClass") => ingress_class,
        ("storage.k8s.io", "StorageClass") => storage_class,
        ("storage.k8s.io", "CSIDriver") => csi_driver,
        ("scheduling.k8s.io", "PriorityClass") => priority_class,
        ("flowcontrol.apiserver.k8s.io", "FlowSchema") => flow_schema,
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration") => {
            priority_level_configuration
        }
        ("discovery.k8s.io", "EndpointSlice") => endpoint_slice,
        ("resource.k8s.io", "ResourceClaim") => super::dra::default_claim,
        ("resource.k8s.io", "ResourceClaimTemplate") => super::dra::default_claim_template,
        ("resource.k8s.io", "ResourceSlice") => super::dra::default_slice,
        ("resource.k8s.io", "DeviceTaintRule") => super::dra::default_taint_rule,
        ("certificates.k8s.io", "PodCertificateRequest") => {
            super::pod_certificates::default_request
        }
        _ => return None,
    };
    Some(f)
}

// ---------------------------------------------------------------------------
// Small helpers

/// Absent or `null`: what Go decodes to a nil pointer, map or slice.
fn is_unset(v: Option<&Value>) -> bool {
    matches!(v, None | Some(Value::Null))
}

/// Absent, `null` or `{}`: `len(map) == 0` in Go. Other types are not empty.
fn is_empty_map(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::Object(m)) => m.is_empty(),
        _ => false,
    }
}

/// Absent, `null` or `[]`: `len(slice) == 0` in Go. Other types are not empty.
fn is_empty_array(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::Array(a)) => a.is_empty(),
        _ => false,
    }
}

fn str_of<'a>(obj: &'a Obj, key: &str) -> Option<&'a str> {
    obj.get(key).and_then(Value::as_str)
}

/// A pointer field: set `key` to `value` when it is absent or `null`.
fn set_default(obj: &mut Obj, key: &str, value: impl Into<Value>) {
    if is_unset(obj.get(key)) {
        obj.insert(key.to_owned(), value.into());
    }
}

/// Absent, `null` or `""`: an unset non-pointer string in Go.
fn is_blank(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        _ => false,
    }
}

/// A non-pointer string field: also replaces `""`.
fn default_str(obj: &mut Obj, key: &str, value: &str) {
    if is_blank(obj.get(key)) {
        obj.insert(key.to_owned(), Value::from(value));
    }
}

/// A non-pointer integer field: also replaces `0`.
fn default_int(obj: &mut Obj, key: &str, value: i64) {
    let unset = match obj.get(key) {
        None | Some(Value::Null) => true,
        Some(Value::Number(n)) => n.as_i64() == Some(0),
        _ => false,
    };
    if unset {
        obj.insert(key.to_owned(), Value::from(value));
    }
}

/// A struct-valued field: the object at `key`, created empty when absent or
/// `null`; `None` when it has another type.
fn ensure_obj<'a>(obj: &'a mut Obj, key: &str) -> Option<&'a mut Obj> {
    if is_unset(obj.get(key)) {
        obj.insert(key.to_owned(), Value::Object(Map::new()));
    }
    obj.get_mut(key)?.as_object_mut()
}

/// A pointer field: the object at the end of `path`, if every step is an object.
fn at<'a>(obj: &'a mut Obj, path: &[&str]) -> Option<&'a mut Obj> {
    path.iter()
        .try_fold(obj, |o, key| o.get_mut(*key)?.as_object_mut())
}

/// Runs `f` on every object item of the array at `key`.
fn each_obj(obj: &mut Obj, key: &str, f: impl FnMut(&mut Obj)) {
    if let Some(items) = obj.get_mut(key).and_then(Value::as_array_mut) {
        items
            .iter_mut()
            .filter_map(Value::as_object_mut)
            .for_each(f);
    }
}

/// Copies into the map at `target` every entry of the map at `source` it lacks.
fn fill_missing(obj: &mut Obj, target: &str, source: &str) {
    let Some(src) = obj.get(source).and_then(Value::as_object) else {
        return;
    };
    let missing: Vec<(String, Value)> = match obj.get(target) {
        None | Some(Value::Null) => src.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        Some(Value::Object(t)) => src
            .iter()
            .filter(|(k, _)| !t.contains_key(*k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        _ => return,
    };
    if missing.is_empty() {
        return;
    }
    if let Some(t) = ensure_obj(obj, target) {
        t.extend(missing);
    }
}

/// Sets the map `obj[parent][key]` to the map `source` reads from `obj` when the
/// former is empty and the latter is not.
fn copy_map_if_empty(obj: &mut Value, parent: &str, key: &str, source: fn(&Value) -> Option<&Obj>) {
    let target = obj.get(parent).and_then(|p| p.get(key));
    let parent_ok = obj.get(parent).is_none_or(|p| p.is_object() || p.is_null());
    if !parent_ok || !is_empty_map(target) {
        return;
    }
    let Some(labels) = source(obj)
        .filter(|m| !m.is_empty())
        .cloned()
        .map(Value::Object)
    else {
        return;
    };
    if let Some(p) = obj.as_object_mut().and_then(|o| ensure_obj(o, parent)) {
        p.insert(key.to_owned(), labels);
    }
}

/// The labels of the object's pod template (`spec.template.metadata.labels`).
fn template_labels(obj: &Value) -> Option<&Obj> {
    obj.pointer("/spec/template")
        .and_then(apimachinery::meta::labels)
}

/// The object's labels, when it has none, are its template's (upstream's
/// defaulting of ReplicationControllers and Jobs).
fn labels_from_template(obj: &mut DynamicObject) {
    if !obj.metadata.labels.is_empty() {
        return;
    }
    let Some(template) = template_labels(obj) else {
        return;
    };
    let labels = template
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()));
    obj.metadata.labels = labels.collect();
}

/// The object's `spec`, created when absent.
fn spec_of(obj: &mut Value) -> Option<&mut Obj> {
    ensure_obj(obj.as_object_mut()?, "spec")
}

// ---------------------------------------------------------------------------
// PodSpec, containers and volumes (shared by every pod template)

/// `SetDefaults_PodSpec` plus the generated container and volume defaults.
fn pod_spec(spec: &mut Obj) {
    mirror_service_account(spec);
    default_str(spec, "dnsPolicy", "ClusterFirst");
    default_str(spec, "restartPolicy", "Always");
    set_default(spec, "securityContext", Map::new());
    set_default(spec, "terminationGracePeriodSeconds", 30);
    default_str(spec, "schedulerName", "default-scheduler");
    each_obj(spec, "volumes", volume);
    for key in ["initContainers", "containers", "ephemeralContainers"] {
        each_obj(spec, key, container);
    }
}

/// v1's conversion: the deprecated `serviceAccount` names the account when
/// `serviceAccountName` does not, and always reads back as
/// `serviceAccountName`.
fn mirror_service_account(spec: &mut Obj) {
    if is_blank(spec.get("serviceAccountName"))
        && let Some(name) = str_of(spec, "serviceAccount").filter(|n| !n.is_empty())
    {
        spec.insert("serviceAccountName".into(), Value::from(name.to_owned()));
    }
    match str_of(spec, "serviceAccountName").filter(|n| !n.is_empty()) {
        Some(name) => {
            let name = Value::from(name.to_owned());
            spec.insert("serviceAccount".into(), name);
        }
        None => {
            spec.remove("serviceAccount");
        }
    }
}

/// A `PodTemplateSpec`: its `spec` is a struct, so it is always defaulted.
fn pod_template_spec(template: &mut Obj) {
    if let Some(spec) = ensure_obj(template, "spec") {
        pod_spec(spec);
    }
}

/// `spec.template` of a workload (a struct field).
fn workload_template(spec: &mut Obj) {
    if let Some(template) = ensure_obj(spec, "template") {
        pod_template_spec(template);
    }
}

/// `SetDefaults_Container` (also for init and ephemeral containers) and the
/// defaults of what a container holds. Resource quantities are not rounded.
fn container(c: &mut Obj) {
    if is_blank(c.get("imagePullPolicy")) {
        let policy = pull_policy(str_of(c, "image").unwrap_or(""));
        c.insert("imagePullPolicy".to_owned(), Value::from(policy));
    }
    default_str(c, "terminationMessagePath", "/dev/termination-log");
    default_str(c, "terminationMessagePolicy", "File");
    each_obj(c, "ports", |p| default_str(p, "protocol", "TCP"));
    each_obj(c, "env", |e| {
        if let Some(f) = at(e, &["valueFrom", "fieldRef"]) {
            field_ref(f);
        }
    });
    for key in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = at(c, &[key]) {
            probe(p);
        }
    }
    for key in ["postStart", "preStop"] {
        if let Some(h) = at(c, &["lifecycle", key, "httpGet"]) {
            http_get(h);
        }
    }
}

/// `SetDefaults_Probe`, its `httpGet`, and the declarative `grpc.service` "".
fn probe(p: &mut Obj) {
    default_int(p, "timeoutSeconds", 1);
    default_int(p, "periodSeconds", 10);
    default_int(p, "successThreshold", 1);
    default_int(p, "failureThreshold", 3);
    if let Some(h) = at(p, &["httpGet"]) {
        http_get(h);
    }
    if let Some(g) = at(p, &["grpc"]) {
        set_default(g, "service", "");
    }
}

/// `SetDefaults_HTTPGetAction`.
fn http_get(h: &mut Obj) {
    default_str(h, "path", "/");
    default_str(h, "scheme", "HTTP");
}

/// `SetDefaults_ObjectFieldSelector`.
fn field_ref(f: &mut Obj) {
    default_str(f, "apiVersion", "v1");
}

/// The keys of `VolumeSource`; a volume with none of them becomes an emptyDir.
const VOLUME_SOURCES: [&str; 30] = [
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
];

/// `SetDefaults_Volume` and the defaults of each volume source.
fn volume(v: &mut Obj) {
    if VOLUME_SOURCES.iter().all(|k| is_unset(v.get(*k))) {
        v.insert("emptyDir".to_owned(), Value::Object(Map::new()));
    }
    for key in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(s) = at(v, &[key]) {
            set_default(s, "defaultMode", 420);
        }
    }
    if let Some(d) = at(v, &["downwardAPI"]) {
        downward_api_items(d);
    }
    if let Some(p) = at(v, &["projected"]) {
        each_obj(p, "sources", projection);
    }
    if let Some(t) = at(v, &["ephemeral", "volumeClaimTemplate"])
        && let Some(spec) = ensure_obj(t, "spec")
    {
        pvc_spec(spec);
    }
    legacy_sources(v);
}

fn downward_api_items(d: &mut Obj) {
    each_obj(d, "items", |item| {
        if let Some(f) = at(item, &["fieldRef"]) {
            field_ref(f);
        }
    });
}

/// One source of a projected volume.
fn projection(p: &mut Obj) {
    if let Some(d) = at(p, &["downwardAPI"]) {
        downward_api_items(d);
    }
    if let Some(t) = at(p, &["serviceAccountToken"]) {
        set_default(t, "expirationSeconds", 3600);
    }
}

/// Sources shared by pod volumes and PersistentVolumes: hostPath's type and the
/// declarative defaults of the legacy in-tree plugins.
fn legacy_sources(src: &mut Obj) {
    if let Some(h) = at(src, &["hostPath"]) {
        set_default(h, "type", "");
    }
    if let Some(r) = at(src, &["rbd"]) {
        default_str(r, "pool", "rbd");
        default_str(r, "user", "admin");
        default_str(r, "keyring", "/etc/ceph/keyring");
    }
    if let Some(i) = at(src, &["iscsi"]) {
        default_str(i, "iscsiInterface", "default");
    }
    if let Some(a) = at(src, &["azureDisk"]) {
        set_default(a, "cachingMode", "ReadWrite");
        set_default(a, "fsType", "ext4");
        set_default(a, "readOnly", false);
        set_default(a, "kind", "Shared");
    }
    if let Some(s) = at(src, &["scaleIO"]) {
        default_str(s, "storageMode", "ThinProvisioned");
        default_str(s, "fsType", "xfs");
    }
}

// ---------------------------------------------------------------------------
// Image pull policy (`parsers.ParseImageName`)

/// `Always` when the image's tag is "latest" (which `ParseImageName` assumes when
/// there is neither tag nor digest), else `IfNotPresent` (also for images that do
/// not parse, which yield no tag).
fn pull_policy(image: &str) -> &'static str {
    match parse_image(image) {
        Some((Some("latest"), _) | (None, None)) => "Always",
        _ => "IfNotPresent",
    }
}

/// Tag and digest of a docker reference, `None` when it does not parse
/// (`reference.ParseNormalizedNamed`).
fn parse_image(image: &str) -> Option<(Option<&str>, Option<&str>)> {
    if image.len() == 64
        && image
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return None;
    }
    let (rest, digest) = match image.split_once('@') {
        Some((r, d)) => (r, Some(d)),
        None => (image, None),
    };
    let last = rest.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match rest[last..].rfind(':') {
        Some(i) => (&rest[..last + i], Some(&rest[last + i + 1..])),
        None => (rest, None),
    };
    let valid = valid_name(name) && tag.is_none_or(valid_tag) && digest.is_none_or(valid_digest);
    valid.then_some((tag, digest))
}

fn valid_name(name: &str) -> bool {
    if name.is_empty() || name.len() > 255 {
        return false;
    }
    let (domain, path) = match name.split_once('/') {
        Some((first, rest))
            if first.contains(['.', ':'])
                || first == "localhost"
                || first.bytes().any(|b| b.is_ascii_uppercase()) =>
        {
            (Some(first), rest)
        }
        _ => (None, name),
    };
    domain.is_none_or(valid_domain) && path.split('/').all(valid_path_component)
}

/// `host[:port]`, the host being dot-separated labels or a bracketed IPv6 address.
fn valid_domain(domain: &str) -> bool {
    let (host, port) = match domain.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(':') && !p.contains(']') => (h, Some(p)),
        _ => (domain, None),
    };
    let port_ok = port.is_none_or(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let host_ok = if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        !v6.is_empty() && v6.bytes().all(|b| b.is_ascii_hexdigit() || b == b':')
    } else {
        host.split('.').all(|label| {
            let b = label.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
        })
    };
    port_ok && host_ok
}

/// `[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*`
fn valid_path_component(c: &str) -> bool {
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = c.as_bytes();
    if bytes.is_empty() || !alnum(bytes[0]) || !alnum(bytes[bytes.len() - 1]) {
        return false;
    }
    c.split(|ch: char| ch.is_ascii_lowercase() || ch.is_ascii_digit())
        .filter(|sep| !sep.is_empty())
        .all(|sep| matches!(sep, "." | "_" | "__") || sep.bytes().all(|b| b == b'-'))
}

/// `[\w][\w.-]{0,127}`
fn valid_tag(tag: &str) -> bool {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let bytes = tag.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 128
        && word(bytes[0])
        && bytes.iter().all(|b| word(*b) || *b == b'.' || *b == b'-')
}

/// A digest of a registered algorithm with its exact lowercase hex length.
fn valid_digest(digest: &str) -> bool {
    let Some((algorithm, hex)) = digest.split_once(':') else {
        return false;
    };
    let len = match algorithm {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        _ => return false,
    };
    hex.len() == len && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

// ---------------------------------------------------------------------------
// core/v1

/// `SetObjectDefaults_Pod`: the PodSpec defaults plus `SetDefaults_Pod`.
fn pod(obj: &mut DynamicObject) {
    let Some(spec) = spec_of(obj) else {
        return;
    };
    set_default(spec, "enableServiceLinks", true);
    for key in ["containers", "initContainers"] {
        each_obj(spec, key, |c| {
            if let Some(r) = at(c, &["resources"]) {
                fill_missing(r, "requests", "limits");
            }
        });
    }
    if spec.get("hostNetwork") == Some(&Value::Bool(true)) {
        for key in ["containers", "initContainers"] {
            each_obj(spec, key, |c| each_obj(c, "ports", host_port));
        }
    }
    pod_spec(spec);
}

/// With host networking a container port's `hostPort` defaults to its `containerPort`.
fn host_port(p: &mut Obj) {
    let unset = match p.get("hostPort") {
        None | Some(Value::Null) => true,
        Some(Value::Number(n)) => n.as_i64() == Some(0),
        _ => false,
    };
    if unset
        && let Some(port) = p
            .get("containerPort")
            .filter(|v| v.as_i64().is_some_and(|n| n != 0))
            .cloned()
    {
        p.insert("hostPort".to_owned(), port);
    }
}

fn pod_template(obj: &mut DynamicObject) {
    if let Some(template) = obj.as_object_mut().and_then(|o| ensure_obj(o, "template")) {
        pod_template_spec(template);
    }
}

/// `SetDefaults_ReplicationController`, the declarative `replicas` 1, and the
/// template (a pointer in RC: defaulted only when present).
fn replication_controller(obj: &mut DynamicObject) {
    let Some(spec) = spec_of(obj) else {
        return;
    };
    set_default(spec, "replicas", 1);
    if let Some(template) = at(spec, &["template"]) {
        pod_template_spec(template);
    }
    copy_map_if_empty(obj, "spec", "selector", template_labels);
    labels_from_template(obj);
}

fn persistent_volume(obj: &mut DynamicObject) {
    let Some(o) = obj.as_object_mut() else {
        return;
    };
    if let Some(status) = ensure_obj(o, "status") {
        default_str(status, "phase", "Pending");
    }
    if let Some(spec) = ensure_obj(o, "spec") {
        default_str(spec, "persistentVolumeReclaimPolicy", "Retain");
        set_default(spec, "volumeMode", "Filesystem");
        legacy_sources(spec);
    }
}

fn persistent_volume_claim(obj: &mut DynamicObject) {
    if let Some(o) = obj.as_object_mut() {
        pvc(o);
    }
}

/// `SetDefaults_PersistentVolumeClaim` and `SetDefaults_PersistentVolumeClaimSpec`,
/// also used for a StatefulSet's `volumeClaimTemplates`.
fn pvc(o: &mut Obj) {
    if let Some(status) = ensure_obj(o, "status") {
        default_str(status, "phase", "Pending");
    }
    if let Some(spec) = ensure_obj(o, "spec") {
        pvc_spec(spec);
    }
}

fn pvc_spec(spec: &mut Obj) {
    set_default(spec, "volumeMode", "Filesystem");
}

fn endpoints(obj: &mut DynamicObject) {
    if let Some(o) = obj.as_object_mut() {
        each_obj(o, "subsets", |s| {
            each_obj(s, "ports", |p| default_str(p, "protocol", "TCP"));
        });
    }
}

/// `SetDefaults_NodeStatus`: `allocatable` defaults to `capacity`.
fn node(obj: &mut DynamicObject) {
    if let Some(status) = obj.as_object_mut().and_then(|o| at(o, &["status"]))
        && is_unset(status.get("allocatable"))
        && let Some(capacity) = status.get("capacity").filter(|c| c.is_object()).cloned()
    {
        status.insert("allocatable".to_owned(), capacity);
    }
}

/// `SetDefaults_LimitRangeItem`, for `Container` items only.
fn limit_range(obj: &mut DynamicObject) {
    let Some(spec) = obj.as_object_mut().and_then(|o| at(o, &["spec"])) else {
        return;
    };
    each_obj(spec, "limits", |item| {
        if str_of(item, "type") == Some("Container") {
            fill_missing(item, "default", "max");
            fill_missing(item, "defaultRequest", "default");
            fill_missing(item, "defaultRequest", "min");
        }
    });
}

// ---------------------------------------------------------------------------
// apps/v1

fn deployment(obj: &mut DynamicObject) {
    let Some(spec) = spec_of(obj) else {
        return;
    };
    set_default(spec, "replicas", 1);
    if let Some(strategy) = ensure_obj(spec, "strategy") {
        default_str(strategy, "type", "RollingUpdate");
        if str_of(strategy, "type") == Some("RollingUpdate")
            && let Some(ru) = ensure_obj(strategy, "rollingUpdate")
        {
            set_default(ru, "maxUnavailable", "25%");
            set_default(ru, "maxSurge", "25%");
        }
    }
    set_default(spec, "revisionHistoryLimit", 10);
    set_default(spec, "progressDeadlineSeconds", 600);
    workload_template(spec);
}

fn replica_set(obj: &mut DynamicObject) {
    if let Some(spec) = spec_of(obj) {
        set_default(spec, "replicas", 1);
        workload_template(spec);
    }
}

fn daemon_set(obj: &mut DynamicObject) {
    template_generation_round_trip(obj);
    let Some(spec) = spec_of(obj) else {
        return;
    };
    if let Some(strategy) = ensure_obj(spec, "updateStrategy") {
        default_str(strategy, "type", "RollingUpdate");
        if str_of(strategy, "type") == Some("RollingUpdate")
            && let Some(ru) = ensure_obj(strategy, "rollingUpdate")
        {
            set_default(ru, "maxUnavailable", 1);
            set_default(ru, "maxSurge", 0);
        }
    }
    set_default(spec, "revisionHistoryLimit", 10);
    workload_template(spec);
}

/// apps/v1 carries the internal `spec.templateGeneration` as an annotation:
/// decoding reads it (0 when absent) and encoding writes it back, so a
/// decoded DaemonSet always has it (what a write's managedFields credit).
fn template_generation_round_trip(obj: &mut DynamicObject) {
    const KEY: &str = "deprecated.daemonset.template.generation";
    let annotations = &mut obj.metadata.annotations;
    match annotations.get(KEY).map(|g| g.parse::<i64>()) {
        Some(Ok(g)) => {
            annotations.insert(KEY.into(), g.to_string());
        }
        None => {
            annotations.insert(KEY.into(), "0".into());
        }
        // Not a number: upstream refuses the body when decoding it.
        Some(Err(_)) => {}
    }
}

fn stateful_set(obj: &mut DynamicObject) {
    let Some(spec) = spec_of(obj) else {
        return;
    };
    default_str(spec, "podManagementPolicy", "OrderedReady");
    if let Some(strategy) = ensure_obj(spec, "updateStrategy") {
        if is_blank(strategy.get("type")) {
            strategy.insert("type".to_owned(), Value::from("RollingUpdate"));
            set_default(strategy, "rollingUpdate", Map::new());
        }
        if str_of(strategy, "type") == Some("RollingUpdate")
            && let Some(ru) = at(strategy, &["rollingUpdate"])
        {
            set_default(ru, "partition", 0);
            // MaxUnavailableStatefulSet is on by default since 1.37.
            set_default(ru, "maxUnavailable", 1);
        }
    }
    if let Some(policy) = ensure_obj(spec, "persistentVolumeClaimRetentionPolicy") {
        default_str(policy, "whenDeleted", "Retain");
        default_str(policy, "whenScaled", "Retain");
    }
    set_default(spec, "replicas", 1);
    set_default(spec, "revisionHistoryLimit", 10);
    workload_template(spec);
    each_obj(spec, "volumeClaimTemplates", |claim| {
        pvc(claim);
        // Upstream's conversion to apps/v1 sets these on every template
        // (Convert_apps_StatefulSetSpec_To_v1_StatefulSetSpec), even over
        // other values, which validation lets through; here only when unset.
        default_str(claim, "apiVersion", "v1");
        default_str(claim, "kind", "PersistentVolumeClaim");
    });
}

// ---------------------------------------------------------------------------
// batch/v1

fn job(obj: &mut DynamicObject) {
    labels_from_template(obj);
    if let Some(spec) = spec_of(obj) {
        job_spec(spec);
        workload_template(spec);
    }
}

/// `SetDefaults_Job` (with `JobPodReplacementPolicy`, on in 1.33) and the
/// `onPodConditions` status default.
fn job_spec(spec: &mut Obj) {
    if is_unset(spec.get("completions")) && is_unset(spec.get("parallelism")) {
        spec.insert("completions".to_owned(), Value::from(1));
    }
    set_default(spec, "parallelism", 1);
    let backoff = if is_unset(spec.get("backoffLimitPerIndex")) {
        6
    } else {
        i64::from(i32::MAX)
    };
    set_default(spec, "backoffLimit", backoff);
    set_default(spec, "completionMode", "NonIndexed");
    set_default(spec, "suspend", false);
    if let Some(policy) = at(spec, &["podFailurePolicy"]) {
        each_obj(policy, "rules", |rule| {
            each_obj(rule, "onPodConditions", |c| {
                default_str(c, "status", "True")
            });
        });
    }
    let replacement = if is_unset(spec.get("podFailurePolicy")) {
        "TerminatingOrFailed"
    } else {
        "Failed"
    };
    set_default(spec, "podReplacementPolicy", replacement);
    set_default(spec, "manualSelector", false);
}

/// `SetDefaults_CronJob`; `jobTemplate.spec` gets only the pod template defaults.
fn cron_job(obj: &mut DynamicObject) {
    let Some(spec) = spec_of(obj) else {
        return;
    };
    default_str(spec, "concurrencyPolicy", "Allow");
    set_default(spec, "suspend", false);
    set_default(spec, "successfulJobsHistoryLimit", 3);
    set_default(spec, "failedJobsHistoryLimit", 1);
    if let Some(job_spec) = ensure_obj(spec, "jobTemplate").and_then(|t| ensure_obj(t, "spec")) {
        workload_template(job_spec);
    }
}

// ---------------------------------------------------------------------------
// autoscaling

/// autoscaling/v1 HorizontalPodAutoscaler: `minReplicas` 1 (the 80% CPU target
/// is applied by conversion, not defaulting).
pub fn hpa_v1(obj: &mut Value) {
    if let Some(spec) = spec_of(obj) {
        set_default(spec, "minReplicas", 1);
    }
}

/// autoscaling/v2 `SetDefaults_HorizontalPodAutoscaler`.
fn hpa_v2(obj: &mut DynamicObject) {
    let Some(spec) = spec_of(obj) else {
        return;
    };
    set_default(spec, "minReplicas", 1);
    if is_empty_array(spec.get("metrics")) {
        spec.insert(
            "metrics".to_owned(),
            json!([{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 80}}}]),
        );
    }
    if let Some(behavior) = at(spec, &["behavior"]) {
        scaling_rules(behavior, "scaleUp", Some(0), || {
            json!([{"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15}])
        });
        // scaleDown's stabilization window stays unset: the controller's flag decides it.
        scaling_rules(
            behavior,
            "scaleDown",
            None,
            || json!([{"type": "Percent", "value": 100, "periodSeconds": 15}]),
        );
    }
}

/// `GenerateHPAScale{Up,Down}Rules`: each field the user left nil from the defaults.
fn scaling_rules(
    behavior: &mut Obj,
    key: &str,
    stabilization: Option<i64>,
    policies: impl FnOnce() -> Value,
) {
    let Some(rules) = ensure_obj(behavior, key) else {
        return;
    };
    set_default(rules, "selectPolicy", "Max");
    if let Some(seconds) = stabilization {
        set_default(rules, "stabilizationWindowSeconds", seconds);
    }
    if is_unset(rules.get("policies")) {
        rules.insert("policies".to_owned(), policies());
    }
}

// ---------------------------------------------------------------------------
// networking, storage, scheduling, flowcontrol, discovery

fn network_policy(obj: &mut DynamicObject) {
    let Some(spec) = spec_of(obj) else {
        return;
    };
    if is_empty_array(spec.get("policyTypes")) {
        let egress = spec
            .get("egress")
            .and_then(Value::as_array)
            .is_some_and(|e| !e.is_empty());
        let types = if egress {
            json!(["Ingress", "Egress"])
        } else {
            json!(["Ingress"])
        };
        spec.insert("policyTypes".to_owned(), types);
    }
    for key in ["ingress", "egress"] {
        each_obj(spec, key, |rule| {
            each_obj(rule, "ports", |p| set_default(p, "protocol", "TCP"));
        });
    }
}

fn ingress_class(obj: &mut DynamicObject) {
    if let Some(params) = obj
        .as_object_mut()
        .and_then(|o| at(o, &["spec", "parameters"]))
    {
        set_default(params, "scope", "Cluster");
    }
}

fn storage_class(obj: &mut DynamicObject) {
    if let Some(o) = obj.as_object_mut() {
        set_default(o, "reclaimPolicy", "Delete");
        set_default(o, "volumeBindingMode", "Immediate");
    }
}

/// `SetDefaults_CSIDriver`; `seLinuxMount` with `SELinuxMountReadWriteOncePod` (on),
/// `preventPodSchedulingIfMissing` with `VolumeLimitScaling` (on).
fn csi_driver(obj: &mut DynamicObject) {
    let Some(spec) = spec_of(obj) else {
        return;
    };
    set_default(spec, "attachRequired", true);
    set_default(spec, "podInfoOnMount", false);
    set_default(spec, "storageCapacity", false);
    set_default(spec, "fsGroupPolicy", "ReadWriteOnceWithFSType");
    if is_empty_array(spec.get("volumeLifecycleModes")) {
        spec.insert("volumeLifecycleModes".to_owned(), json!(["Persistent"]));
    }
    set_default(spec, "requiresRepublish", false);
    set_default(spec, "seLinuxMount", false);
    // VolumeLimitScaling is on by default in 1.37.
    set_default(spec, "preventPodSchedulingIfMissing", false);
}

fn priority_class(obj: &mut DynamicObject) {
    if let Some(o) = obj.as_object_mut() {
        set_default(o, "preemptionPolicy", "PreemptLowerPriority");
    }
}

fn flow_schema(obj: &mut DynamicObject) {
    if let Some(spec) = spec_of(obj) {
        default_int(spec, "matchingPrecedence", 1000);
    }
}

fn priority_level_configuration(obj: &mut DynamicObject) {
    let Some(spec) = spec_of(obj) else {
        return;
    };
    if let Some(limited) = at(spec, &["limited"]) {
        set_default(limited, "nominalConcurrencyShares", 30);
        set_default(limited, "lendablePercent", 0);
        if let Some(queuing) = at(limited, &["limitResponse", "queuing"]) {
            default_int(queuing, "handSize", 8);
            default_int(queuing, "queues", 64);
            default_int(queuing, "queueLengthLimit", 50);
        }
    }
    if let Some(exempt) = at(spec, &["exempt"]) {
        set_default(exempt, "nominalConcurrencyShares", 0);
        set_default(exempt, "lendablePercent", 0);
    }
}

/// discovery/v1 `SetDefaults_EndpointPort`: `name` "" and `protocol` TCP.
pub fn endpoint_slice(obj: &mut DynamicObject) {
    if let Some(o) = obj.as_object_mut() {
        each_obj(o, "ports", |p| {
            set_default(p, "name", "");
            set_default(p, "protocol", "TCP");
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `obj` defaulted; one whose metadata Go's decoder refuses never gets
    /// here (the store answers 400), and is returned as it is.
    fn apply(group: &str, kind: &str, obj: Value) -> Value {
        let f = defaulter(group, kind).expect("a defaulter");
        match DynamicObject::from_value(obj.clone(), "metadata.") {
            Ok(mut typed) => {
                f(&mut typed);
                typed.into_value()
            }
            Err(_) => obj,
        }
    }

    /// Asserts `obj` holds `expected` at each JSON pointer.
    fn assert_at(obj: &Value, expected: &[(String, Value)]) {
        for (pointer, value) in expected {
            assert_eq!(obj.pointer(pointer), Some(value), "at {pointer} in {obj:#}");
        }
    }

    fn pairs(prefix: &str, items: &[(&str, Value)]) -> Vec<(String, Value)> {
        items
            .iter()
            .map(|(p, v)| (format!("{prefix}{p}"), v.clone()))
            .collect()
    }

    /// A container with one of everything upstream's `detectDefaults` fills in.
    fn full_container() -> Value {
        let probe = json!({"httpGet": {"port": 80}, "grpc": {"port": 9}});
        json!({
            "name": "c",
            "ports": [{"containerPort": 80}],
            "env": [{"name": "E", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
            "resources": {"limits": {"cpu": "100m"}},
            "lifecycle": {"postStart": {"httpGet": {"port": 80}},
                          "preStop": {"httpGet": {"port": 80}}},
            "livenessProbe": probe, "readinessProbe": probe, "startupProbe": probe,
        })
    }

    /// A PodSpec with one of everything: a volume with every defaulted source
    /// and one with none.
    fn full_pod_spec() -> Value {
        json!({
            "containers": [full_container()],
            "initContainers": [full_container()],
            "ephemeralContainers": [full_container()],
            "volumes": [{
                "name": "all",
                "hostPath": {"path": "/x"},
                "secret": {},
                "configMap": {},
                "downwardAPI": {"items": [{"path": "p", "fieldRef": {"fieldPath": "metadata.name"}}]},
                "projected": {"sources": [
                    {"downwardAPI": {"items": [{"path": "p", "fieldRef": {"fieldPath": "metadata.name"}}]},
                     "serviceAccountToken": {"path": "t"}}]},
                "ephemeral": {"volumeClaimTemplate": {}},
                "rbd": {"monitors": ["m"], "image": "i"},
                "iscsi": {"targetPortal": "t", "iqn": "q", "lun": 0},
                "azureDisk": {"diskName": "d", "diskURI": "u"},
                "scaleIO": {"gateway": "g", "system": "s", "secretRef": {}},
            }, {"name": "none"}],
        })
    }

    /// `TestWorkloadDefaults` (pkg/apis/core/v1/defaults_test.go): every field
    /// defaulted in a PodTemplateSpec, as JSON pointers below `prefix` (the spec).
    fn golden_pod_spec(prefix: &str) -> Vec<(String, Value)> {
        let mut out = pairs(
            prefix,
            &[
                ("/dnsPolicy", json!("ClusterFirst")),
                ("/restartPolicy", json!("Always")),
                ("/schedulerName", json!("default-scheduler")),
                ("/securityContext", json!({})),
                ("/terminationGracePeriodSeconds", json!(30)),
                ("/volumes/0/azureDisk/cachingMode", json!("ReadWrite")),
                ("/volumes/0/azureDisk/fsType", json!("ext4")),
                ("/volumes/0/azureDisk/kind", json!("Shared")),
                ("/volumes/0/azureDisk/readOnly", json!(false)),
                ("/volumes/0/configMap/defaultMode", json!(420)),
                ("/volumes/0/downwardAPI/defaultMode", json!(420)),
                (
                    "/volumes/0/downwardAPI/items/0/fieldRef/apiVersion",
                    json!("v1"),
                ),
                ("/volumes/1/emptyDir", json!({})),
                (
                    "/volumes/0/ephemeral/volumeClaimTemplate/spec/volumeMode",
                    json!("Filesystem"),
                ),
                ("/volumes/0/hostPath/type", json!("")),
                ("/volumes/0/iscsi/iscsiInterface", json!("default")),
                ("/volumes/0/projected/defaultMode", json!(420)),
                (
                    "/volumes/0/projected/sources/0/downwardAPI/items/0/fieldRef/apiVersion",
                    json!("v1"),
                ),
                (
                    "/volumes/0/projected/sources/0/serviceAccountToken/expirationSeconds",
                    json!(3600),
                ),
                ("/volumes/0/rbd/keyring", json!("/etc/ceph/keyring")),
                ("/volumes/0/rbd/pool", json!("rbd")),
                ("/volumes/0/rbd/user", json!("admin")),
                ("/volumes/0/scaleIO/fsType", json!("xfs")),
                ("/volumes/0/scaleIO/storageMode", json!("ThinProvisioned")),
                ("/volumes/0/secret/defaultMode", json!(420)),
            ],
        );
        for c in ["containers", "initContainers", "ephemeralContainers"] {
            let mut items = vec![
                ("/env/0/valueFrom/fieldRef/apiVersion", json!("v1")),
                ("/imagePullPolicy", json!("IfNotPresent")),
                ("/lifecycle/postStart/httpGet/path", json!("/")),
                ("/lifecycle/postStart/httpGet/scheme", json!("HTTP")),
                ("/lifecycle/preStop/httpGet/path", json!("/")),
                ("/lifecycle/preStop/httpGet/scheme", json!("HTTP")),
                ("/ports/0/protocol", json!("TCP")),
                ("/terminationMessagePath", json!("/dev/termination-log")),
                ("/terminationMessagePolicy", json!("File")),
            ];
            for probe in ["/livenessProbe", "/readinessProbe", "/startupProbe"] {
                for (field, value) in [
                    ("/failureThreshold", json!(3)),
                    ("/periodSeconds", json!(10)),
                    ("/successThreshold", json!(1)),
                    ("/timeoutSeconds", json!(1)),
                    ("/httpGet/path", json!("/")),
                    ("/httpGet/scheme", json!("HTTP")),
                    ("/grpc/service", json!("")),
                ] {
                    let path: &'static str = format!("{probe}{field}").leak();
                    items.push((path, value));
                }
            }
            out.extend(pairs(&format!("{prefix}/{c}/0"), &items));
        }
        out
    }

    #[test]
    fn workload_defaults_golden_list() {
        // TestWorkloadDefaults, through every kind that embeds a pod template.
        let cases = [
            (
                "",
                "ReplicationController",
                "/spec/template",
                "/spec/template/spec",
            ),
            ("", "PodTemplate", "/template", "/template/spec"),
            (
                "apps",
                "Deployment",
                "/spec/template",
                "/spec/template/spec",
            ),
            (
                "apps",
                "ReplicaSet",
                "/spec/template",
                "/spec/template/spec",
            ),
            (
                "apps",
                "StatefulSet",
                "/spec/template",
                "/spec/template/spec",
            ),
            ("apps", "DaemonSet", "/spec/template", "/spec/template/spec"),
            ("batch", "Job", "/spec/template", "/spec/template/spec"),
            (
                "batch",
                "CronJob",
                "/spec/jobTemplate/spec/template",
                "/spec/jobTemplate/spec/template/spec",
            ),
        ];
        for (group, kind, template, spec) in cases {
            let mut obj = json!({});
            let parent = template.rsplit_once('/').map_or("", |(p, _)| p);
            let mut cursor = &mut obj;
            for key in parent.split('/').filter(|k| !k.is_empty()) {
                cursor = &mut cursor[key];
            }
            let last = template.rsplit('/').next().unwrap_or_default();
            cursor[last] = json!({"spec": full_pod_spec()});
            let out = apply(group, kind, obj);
            assert_at(&out, &golden_pod_spec(spec));
            // Pod-only defaults stay out of templates (TestDefaultRequestIsNotSetFor*).
            let spec_v = out.pointer(spec).expect("spec");
            assert_eq!(spec_v.get("enableServiceLinks"), None, "{kind}");
            assert_eq!(
                spec_v.pointer("/containers/0/resources/requests"),
                None,
                "{kind}"
            );
        }
    }

    #[test]
    fn pod_defaults_golden_list() {
        // TestPodDefaults: the template list plus enableServiceLinks and requests
        // copied from limits.
        let out = apply("", "Pod", json!({"spec": full_pod_spec()}));
        let mut expected = golden_pod_spec("/spec");
        expected.push(("/spec/enableServiceLinks".into(), json!(true)));
        expected.push((
            "/spec/containers/0/resources/requests".into(),
            json!({"cpu": "100m"}),
        ));
        expected.push((
            "/spec/initContainers/0/resources/requests".into(),
            json!({"cpu": "100m"}),
        ));
        assert_at(&out, &expected);
        // Ephemeral containers get no requests (SetDefaults_Pod skips them).
        assert_eq!(
            out.pointer("/spec/ephemeralContainers/0/resources/requests"),
            None
        );
    }

    #[test]
    fn empty_pod_and_template() {
        // TestSetDefaultSchedulerName, TestSetDefaultEnableServiceLinks.
        let out = apply("", "Pod", json!({}));
        assert_eq!(
            out["spec"],
            json!({"enableServiceLinks": true, "dnsPolicy": "ClusterFirst",
                "restartPolicy": "Always", "securityContext": {},
                "terminationGracePeriodSeconds": 30, "schedulerName": "default-scheduler"})
        );
    }

    #[test]
    fn pod_requests_from_limits() {
        // TestSetDefaultRequestsPod: requests default to limits, request 0 kept.
        let c = json!({"name": "c", "resources": {
            "requests": {"memory": "0"}, "limits": {"cpu": "100m", "memory": "1Gi"}}});
        let out = apply(
            "",
            "Pod",
            json!({"spec": {"containers": [c.clone()], "initContainers": [c]}}),
        );
        for p in ["/spec/containers/0", "/spec/initContainers/0"] {
            assert_eq!(
                out.pointer(&format!("{p}/resources/requests")),
                Some(&json!({"memory": "0", "cpu": "100m"}))
            );
        }
        // No limits: nothing set.
        let out = apply("", "Pod", json!({"spec": {"containers": [{"name": "c"}]}}));
        assert_eq!(out.pointer("/spec/containers/0/resources"), None);
    }

    #[test]
    fn pod_host_network_ports() {
        // TestSetDefaultPodSpecHostNetwork.
        let c = json!({"name": "c", "ports": [{"containerPort": 8080}]});
        let spec = json!({"hostNetwork": true, "containers": [c.clone()], "initContainers": [c]});
        let out = apply("", "Pod", json!({"spec": spec.clone()}));
        assert_eq!(
            out.pointer("/spec/containers/0/ports/0/hostPort"),
            Some(&json!(8080))
        );
        assert_eq!(
            out.pointer("/spec/initContainers/0/ports/0/hostPort"),
            Some(&json!(8080))
        );
        // TestPodHostNetworkDefaults: not in templates (the gate is off).
        let out = apply(
            "apps",
            "Deployment",
            json!({"spec": {"template": {"spec": spec}}}),
        );
        assert_eq!(
            out.pointer("/spec/template/spec/containers/0/ports/0/hostPort"),
            None
        );
    }

    #[test]
    fn probe_and_host_path() {
        // TestSetDefaultProbe, TestSetDefaultHostPathVolumeSource,
        // TestSetDefaultObjectFieldSelectorAPIVersion, the *VolumeSource mode tests.
        let out = apply(
            "",
            "Pod",
            json!({"spec": {
                "containers": [{"name": "c", "livenessProbe": {},
                    "env": [{"name": "e", "valueFrom": {"fieldRef": {}}}]}],
                "volumes": [{"name": "h", "hostPath": {"path": "foo"}},
                    {"name": "s", "secret": {}}, {"name": "m", "configMap": {}},
                    {"name": "d", "downwardAPI": {}}, {"name": "p", "projected": {}}]}}),
        );
        assert_eq!(
            out.pointer("/spec/containers/0/livenessProbe"),
            Some(&json!({"timeoutSeconds": 1, "periodSeconds": 10,
                "successThreshold": 1, "failureThreshold": 3}))
        );
        assert_eq!(
            out.pointer("/spec/containers/0/env/0/valueFrom/fieldRef/apiVersion"),
            Some(&json!("v1"))
        );
        assert_eq!(
            out.pointer("/spec/volumes/0/hostPath/type"),
            Some(&json!(""))
        );
        for i in 1..=4 {
            let v = &out["spec"]["volumes"][i];
            let source = v
                .as_object()
                .and_then(|o| o.values().find(|x| x.is_object()));
            assert_eq!(source.and_then(|s| s.get("defaultMode")), Some(&json!(420)));
        }
    }

    #[test]
    fn ephemeral_volume_mode() {
        // TestSetDefaultEphemeral.
        for (mode, expected) in [
            (None, "Filesystem"),
            (Some("Filesystem"), "Filesystem"),
            (Some("Block"), "Block"),
        ] {
            let mut spec = json!({});
            if let Some(m) = mode {
                spec["volumeMode"] = json!(m);
            }
            let out = apply(
                "",
                "Pod",
                json!({"spec": {"volumes": [{"name": "e",
                    "ephemeral": {"volumeClaimTemplate": {"spec": spec}}}]}}),
            );
            assert_eq!(
                out.pointer("/spec/volumes/0/ephemeral/volumeClaimTemplate/spec/volumeMode"),
                Some(&json!(expected))
            );
        }
    }

    #[test]
    fn image_pull_policy() {
        // TestSetDefaultReplicationControllerInitContainers "imagePullIPolicy": busybox
        // → Always; the rest follows parsers.ParseImageName (no tag and no digest →
        // "latest"; a parse error → no tag).
        for (image, policy) in [
            ("busybox", "Always"),
            ("nginx:latest", "Always"),
            ("registry.example.com:5000/team/app", "Always"),
            ("localhost/app:latest", "Always"),
            ("nginx:1.27", "IfNotPresent"),
            (
                "nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                "IfNotPresent",
            ),
            ("registry.example.com:5000/app:v1", "IfNotPresent"),
            ("", "IfNotPresent"),
            ("Nginx", "IfNotPresent"),
            ("nginx:", "IfNotPresent"),
            ("nginx@sha256:short", "IfNotPresent"),
        ] {
            assert_eq!(pull_policy(image), policy, "{image:?}");
        }
        let out = apply(
            "",
            "ReplicationController",
            json!({"spec": {"template": {"spec": {
                "initContainers": [{"name": "install", "image": "busybox"}]}}}}),
        );
        assert_eq!(
            out.pointer("/spec/template/spec/initContainers/0/imagePullPolicy"),
            Some(&json!("Always"))
        );
    }

    #[test]
    fn replication_controller_labels_and_selector() {
        // TestSetDefaultReplicationController: (labels, selector, expect labels,
        // expect selector equal to the template labels).
        let tpl = json!({"foo": "bar"});
        let cases = [
            (None, None, true, true),
            (Some(json!({"bar": "foo"})), None, false, true),
            (
                Some(json!({"bar": "foo"})),
                Some(json!({"some": "other"})),
                false,
                false,
            ),
            (None, Some(json!({"some": "other"})), true, false),
        ];
        for (labels, selector, expect_labels, expect_selector) in cases {
            let mut rc = json!({"spec": {"template": {"metadata": {"labels": tpl}}}});
            if let Some(l) = labels {
                rc["metadata"] = json!({"labels": l});
            }
            if let Some(s) = selector {
                rc["spec"]["selector"] = s;
            }
            let out = apply("", "ReplicationController", rc);
            assert_eq!(out.pointer("/metadata/labels") == Some(&tpl), expect_labels);
            assert_eq!(out.pointer("/spec/selector") == Some(&tpl), expect_selector);
        }
    }

    #[test]
    fn replicas_default() {
        // TestSetDefaultReplicationControllerReplicas, TestSetDefaultReplicaSetReplicas.
        for (group, kind) in [("", "ReplicationController"), ("apps", "ReplicaSet")] {
            for (given, expected) in [(None, 1), (Some(0), 0), (Some(3), 3)] {
                let mut obj =
                    json!({"spec": {"template": {"metadata": {"labels": {"foo": "bar"}}}}});
                if let Some(n) = given {
                    obj["spec"]["replicas"] = json!(n);
                }
                let out = apply(group, kind, obj);
                assert_eq!(out.pointer("/spec/replicas"), Some(&json!(expected)));
            }
        }
    }

    fn template_defaults() -> Value {
        json!({"dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "securityContext": {},
            "terminationGracePeriodSeconds": 30, "schedulerName": "default-scheduler"})
    }

    #[test]
    fn deployment() {
        // TestSetDefaultDeployment.
        let pct = json!("25%");
        let cases = [
            (
                json!({}),
                json!({"replicas": 1, "strategy": {"type": "RollingUpdate",
                    "rollingUpdate": {"maxSurge": pct, "maxUnavailable": pct}},
                    "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600}),
            ),
            (
                json!({"replicas": 5, "strategy": {"rollingUpdate": {"maxSurge": 5}}}),
                json!({"replicas": 5, "strategy": {"type": "RollingUpdate",
                    "rollingUpdate": {"maxSurge": 5, "maxUnavailable": pct}},
                    "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600}),
            ),
            (
                json!({"replicas": 3, "strategy": {"type": "RollingUpdate", "rollingUpdate": null}}),
                json!({"replicas": 3, "strategy": {"type": "RollingUpdate",
                    "rollingUpdate": {"maxSurge": pct, "maxUnavailable": pct}},
                    "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600}),
            ),
            (
                json!({"replicas": 5, "strategy": {"type": "Recreate"}, "revisionHistoryLimit": 0}),
                json!({"replicas": 5, "strategy": {"type": "Recreate"},
                    "revisionHistoryLimit": 0, "progressDeadlineSeconds": 600}),
            ),
            (
                json!({"replicas": 5, "strategy": {"type": "Recreate"},
                    "progressDeadlineSeconds": 30, "revisionHistoryLimit": 2}),
                json!({"replicas": 5, "strategy": {"type": "Recreate"},
                    "progressDeadlineSeconds": 30, "revisionHistoryLimit": 2}),
            ),
        ];
        for (spec, mut expected) in cases {
            expected["template"] = json!({"spec": template_defaults()});
            let out = apply("apps", "Deployment", json!({"spec": spec}));
            assert_eq!(out["spec"], expected);
        }
    }

    #[test]
    fn daemon_set() {
        // TestSetDefaultDaemonSetSpec.
        let rolling = json!({"type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}});
        let labelled = json!({"metadata": {"labels": {"foo": "bar"}}, "spec": template_defaults()});
        let bare = json!({"spec": template_defaults()});
        let cases = [
            (
                json!({"template": {"metadata": {"labels": {"foo": "bar"}}}}),
                json!({"template": labelled, "updateStrategy": rolling, "revisionHistoryLimit": 10}),
            ),
            (
                json!({"template": {"metadata": {"labels": {"foo": "bar"}}}, "revisionHistoryLimit": 1}),
                json!({"template": labelled, "updateStrategy": rolling, "revisionHistoryLimit": 1}),
            ),
            (
                json!({"updateStrategy": {"type": "OnDelete"}}),
                json!({"template": bare, "updateStrategy": {"type": "OnDelete"},
                    "revisionHistoryLimit": 10}),
            ),
            (
                json!({}),
                json!({"template": bare, "updateStrategy": rolling, "revisionHistoryLimit": 10}),
            ),
        ];
        for (spec, expected) in cases {
            let out = apply("apps", "DaemonSet", json!({"spec": spec}));
            assert_eq!(out["spec"], expected);
        }
    }

    #[test]
    fn stateful_set() {
        // TestSetDefaultStatefulSet (StatefulSetAutoDeletePVC and
        // MaxUnavailableStatefulSet on, as in 1.37).
        let retain = json!({"whenDeleted": "Retain", "whenScaled": "Retain"});
        let rolling0 = json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0, "maxUnavailable": 1}});
        let cases = [
            (json!({}), "OrderedReady", rolling0.clone(), retain.clone()),
            (
                json!({"updateStrategy": {"type": "OnDelete"}}),
                "OrderedReady",
                json!({"type": "OnDelete"}),
                retain.clone(),
            ),
            (
                json!({"podManagementPolicy": "Parallel"}),
                "Parallel",
                rolling0.clone(),
                retain.clone(),
            ),
            (
                json!({"updateStrategy": {"rollingUpdate": {"partition": 42}}}),
                "OrderedReady",
                json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 42, "maxUnavailable": 1}}),
                retain.clone(),
            ),
            (
                json!({"persistentVolumeClaimRetentionPolicy": {"whenScaled": "Delete"}}),
                "OrderedReady",
                rolling0.clone(),
                json!({"whenDeleted": "Retain", "whenScaled": "Delete"}),
            ),
            (
                json!({"persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete"}}),
                "OrderedReady",
                rolling0.clone(),
                json!({"whenDeleted": "Delete", "whenScaled": "Retain"}),
            ),
            (
                json!({"updateStrategy": {"rollingUpdate": {"partition": 42, "maxUnavailable": 3}}}),
                "OrderedReady",
                json!({"type": "RollingUpdate",
                    "rollingUpdate": {"partition": 42, "maxUnavailable": 3}}),
                retain.clone(),
            ),
        ];
        for (spec, policy, strategy, retention) in cases {
            let out = apply("apps", "StatefulSet", json!({"spec": spec}));
            let expected = json!({"replicas": 1, "podManagementPolicy": policy,
                "updateStrategy": strategy, "persistentVolumeClaimRetentionPolicy": retention,
                "revisionHistoryLimit": 10, "template": {"spec": template_defaults()}});
            assert_eq!(out["spec"], expected);
        }
    }

    #[test]
    fn stateful_set_claim_templates_get_pvc_defaults() {
        // SetObjectDefaults_StatefulSet runs the PVC defaults on each template
        // (values of TestSetDefaultPersistentVolumeClaim).
        let out = apply(
            "apps",
            "StatefulSet",
            json!({"spec": {"volumeClaimTemplates": [
                {"metadata": {"name": "a"}},
                {"metadata": {"name": "b"}, "spec": {"volumeMode": "Block"}}]}}),
        );
        let t = &out["spec"]["volumeClaimTemplates"];
        assert_eq!(t[0]["status"], json!({"phase": "Pending"}));
        assert_eq!(t[0]["spec"], json!({"volumeMode": "Filesystem"}));
        assert_eq!(t[1]["spec"]["volumeMode"], json!("Block"));
        // As kube-apiserver 1.37.2 serves them (docs/research/serialization).
        for claim in t.as_array().unwrap() {
            assert_eq!(claim["apiVersion"], "v1");
            assert_eq!(claim["kind"], "PersistentVolumeClaim");
        }
    }

    #[test]
    fn persistent_volumes_and_claims() {
        // TestSetDefaultPersistentVolume, TestSetDefaultPersistentVolumeClaim.
        for (mode, expected) in [
            (None, "Filesystem"),
            (Some("Filesystem"), "Filesystem"),
            (Some("Block"), "Block"),
        ] {
            let spec = mode.map_or_else(|| json!({}), |m| json!({"volumeMode": m}));
            let pv = apply("", "PersistentVolume", json!({"spec": spec.clone()}));
            assert_eq!(pv["status"]["phase"], json!("Pending"));
            assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], json!("Retain"));
            assert_eq!(pv["spec"]["volumeMode"], json!(expected));
            let pvc = apply("", "PersistentVolumeClaim", json!({"spec": spec}));
            assert_eq!(pvc["status"]["phase"], json!("Pending"));
            assert_eq!(pvc["spec"]["volumeMode"], json!(expected));
        }
        let pv = apply(
            "",
            "PersistentVolume",
            json!({"spec": {"hostPath": {"path": "/x"}, "persistentVolumeReclaimPolicy": "Delete"}}),
        );
        assert_eq!(pv["spec"]["hostPath"]["type"], json!(""));
        assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], json!("Delete"));
    }

    #[test]
    fn endpoints_protocol() {
        // TestSetDefaultEndpointsProtocol.
        let out = apply(
            "",
            "Endpoints",
            json!({"subsets": [{"ports": [{}, {"protocol": "UDP"}, {}]}]}),
        );
        assert_eq!(
            out["subsets"][0]["ports"],
            json!([{"protocol": "TCP"}, {"protocol": "UDP"}, {"protocol": "TCP"}])
        );
    }

    #[test]
    fn node_allocatable() {
        // TestSetDefaultNodeStatusAllocatable.
        let capacity = json!({"cpu": "1000m", "memory": "10G"});
        let allocatable = json!({"cpu": "500m", "memory": "5G"});
        let cases = [
            (Some(&capacity), Some(&allocatable), Some(&allocatable)),
            (None, Some(&allocatable), Some(&allocatable)),
            (Some(&capacity), None, Some(&capacity)),
            (None, None, None),
        ];
        for (cap, alloc, expected) in cases {
            let mut status = json!({});
            if let Some(c) = cap {
                status["capacity"] = c.clone();
            }
            if let Some(a) = alloc {
                status["allocatable"] = a.clone();
            }
            let out = apply("", "Node", json!({"status": status}));
            assert_eq!(out["status"].get("allocatable"), expected);
        }
    }

    #[test]
    fn limit_range_item() {
        // TestSetDefaultLimitRangeItem.
        let out = apply(
            "",
            "LimitRange",
            json!({"spec": {"limits": [{"type": "Container", "max": {"cpu": "100m"},
                "min": {"memory": "100Mi"}, "default": {}, "defaultRequest": {}},
                {"type": "Pod", "max": {"cpu": "1"}}]}}),
        );
        let item = &out["spec"]["limits"][0];
        assert_eq!(item["default"], json!({"cpu": "100m"}));
        assert_eq!(
            item["defaultRequest"],
            json!({"cpu": "100m", "memory": "100Mi"})
        );
        assert_eq!(
            out["spec"]["limits"][1],
            json!({"type": "Pod", "max": {"cpu": "1"}})
        );
    }

    fn job_spec_defaults() -> Value {
        json!({"completions": 1, "parallelism": 1, "backoffLimit": 6,
            "completionMode": "NonIndexed", "suspend": false,
            "podReplacementPolicy": "TerminatingOrFailed", "manualSelector": false})
    }

    /// Runs the Job defaulter on `spec` (with template labels) and returns the
    /// spec without its template, and the job labels.
    fn default_job(labels: Option<Value>, mut spec: Value) -> (Value, Option<Value>) {
        spec["template"] = json!({"metadata": {"labels": {"default": "default"}}});
        let mut job = json!({"spec": spec});
        if let Some(l) = labels {
            job["metadata"] = json!({"labels": l});
        }
        let mut out = apply("batch", "Job", job);
        let labels = out.pointer("/metadata/labels").cloned();
        if let Some(s) = out["spec"].as_object_mut() {
            s.remove("template");
        }
        (out["spec"].take(), labels)
    }

    #[test]
    fn job() {
        // TestSetDefaultJob (JobPodReplacementPolicy is on in 1.33).
        let template_labels = Some(json!({"default": "default"}));
        let all = job_spec_defaults();
        let with = |patch: Value| {
            let mut v = all.clone();
            if let (Some(o), Some(p)) = (v.as_object_mut(), patch.as_object()) {
                for (k, x) in p {
                    if x.is_null() {
                        o.remove(k);
                    } else {
                        o.insert(k.clone(), x.clone());
                    }
                }
            }
            v
        };
        let cases = [
            // All unspecified and podReplacementPolicyEnabled -> sets all to default values
            (json!({}), all.clone()),
            // suspend set, everything else is defaulted
            (json!({"suspend": true}), with(json!({"suspend": true}))),
            // WQ: Parallelism explicitly 0 and completions unset
            (
                json!({"parallelism": 0}),
                with(json!({"parallelism": 0, "completions": null})),
            ),
            // WQ: Parallelism explicitly 2 and completions unset
            (
                json!({"parallelism": 2}),
                with(json!({"parallelism": 2, "completions": null})),
            ),
            // Completions explicitly 2 and others unset
            (json!({"completions": 2}), with(json!({"completions": 2}))),
            // BackoffLimit explicitly 5 and others unset
            (json!({"backoffLimit": 5}), with(json!({"backoffLimit": 5}))),
            // All set, flipped -> no change
            (
                json!({"completions": 11, "parallelism": 10, "backoffLimit": 9,
                    "completionMode": "Indexed", "suspend": true,
                    "podReplacementPolicy": "Failed", "manualSelector": true}),
                json!({"completions": 11, "parallelism": 10, "backoffLimit": 9,
                    "completionMode": "Indexed", "suspend": true,
                    "podReplacementPolicy": "Failed", "manualSelector": true}),
            ),
            // BackoffLimitPerIndex specified, but no BackoffLimit -> max int32
            (
                json!({"completions": 11, "parallelism": 10, "backoffLimitPerIndex": 1,
                    "completionMode": "Indexed", "suspend": true, "manualSelector": false}),
                json!({"completions": 11, "parallelism": 10, "backoffLimitPerIndex": 1,
                    "backoffLimit": 2147483647, "completionMode": "Indexed", "suspend": true,
                    "manualSelector": false, "podReplacementPolicy": "TerminatingOrFailed"}),
            ),
            // BackoffLimitPerIndex and BackoffLimit specified -> no change
            (
                json!({"completions": 11, "parallelism": 10, "backoffLimit": 3,
                    "backoffLimitPerIndex": 1, "completionMode": "Indexed", "suspend": true,
                    "manualSelector": true}),
                json!({"completions": 11, "parallelism": 10, "backoffLimit": 3,
                    "backoffLimitPerIndex": 1, "completionMode": "Indexed", "suspend": true,
                    "manualSelector": true, "podReplacementPolicy": "TerminatingOrFailed"}),
            ),
        ];
        for (spec, expected) in cases {
            let (got, labels) = default_job(None, spec.clone());
            assert_eq!(got, expected, "{spec}");
            assert_eq!(labels, template_labels, "{spec}");
        }
        // All unspecified -> all pointers are defaulted and no default labels
        let (got, labels) = default_job(Some(json!({"mylabel": "myvalue"})), json!({}));
        assert_eq!(got, all);
        assert_eq!(labels, Some(json!({"mylabel": "myvalue"})));
    }

    #[test]
    fn job_pod_failure_policy() {
        // TestSetDefaultJob: "Pod failure policy with some field values unspecified"
        // and "Pod failure policy and defaulting for pod replacement policy".
        let policy = json!({"rules": [
            {"action": "FailJob", "onPodConditions": [
                {"type": "DisruptionTarget", "status": "True"},
                {"type": "MemoryLimitExceeded", "status": "False"},
                {"type": "DiskLimitExceeded"}]},
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1]}},
            {"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget"}]}]});
        let (got, _) = default_job(None, json!({"podFailurePolicy": policy}));
        let rules = &got["podFailurePolicy"]["rules"];
        assert_eq!(rules[0]["onPodConditions"][2]["status"], json!("True"));
        assert_eq!(rules[0]["onPodConditions"][1]["status"], json!("False"));
        assert_eq!(rules[2]["onPodConditions"][0]["status"], json!("True"));
        assert_eq!(got["podReplacementPolicy"], json!("Failed"));
        assert_eq!(got["backoffLimit"], json!(6));
    }

    #[test]
    fn cron_job() {
        // TestSetDefaultCronJob.
        let out = apply("batch", "CronJob", json!({}));
        let spec = &out["spec"];
        assert_eq!(spec["concurrencyPolicy"], json!("Allow"));
        assert_eq!(spec["suspend"], json!(false));
        assert_eq!(spec["successfulJobsHistoryLimit"], json!(3));
        assert_eq!(spec["failedJobsHistoryLimit"], json!(1));
        // Only the pod template defaults reach jobTemplate.spec, not SetDefaults_Job.
        assert_eq!(
            spec["jobTemplate"]["spec"],
            json!({"template": {"spec": template_defaults()}})
        );
        let set = json!({"concurrencyPolicy": "Forbid", "suspend": true,
            "successfulJobsHistoryLimit": 5, "failedJobsHistoryLimit": 5});
        let out = apply("batch", "CronJob", json!({"spec": set}));
        for key in [
            "concurrencyPolicy",
            "suspend",
            "successfulJobsHistoryLimit",
            "failedJobsHistoryLimit",
        ] {
            assert_eq!(out["spec"][key], set[key]);
        }
    }

    #[test]
    fn hpa_v2_defaults() {
        let out = apply(
            "autoscaling",
            "HorizontalPodAutoscaler",
            json!({"spec": {}}),
        );
        assert_eq!(out["spec"]["minReplicas"], json!(1));
        assert_eq!(
            out["spec"]["metrics"],
            json!([{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 80}}}])
        );
        // Behavior is filled only when set.
        assert_eq!(out["spec"].get("behavior"), None);
    }

    #[test]
    fn hpa_v2_behavior() {
        // TestGenerateScaleUpRules / TestGenerateScaleDownRules.
        let up = |rules: Value| {
            let hpa = json!({"spec": {"behavior": {"scaleUp": rules}}});
            apply("autoscaling", "HorizontalPodAutoscaler", hpa)["spec"]["behavior"].take()
        };
        // Default values.
        let b = up(Value::Null);
        assert_eq!(
            b["scaleUp"],
            json!({"selectPolicy": "Max", "stabilizationWindowSeconds": 0, "policies": [
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15}]})
        );
        assert_eq!(
            b["scaleDown"],
            json!({"selectPolicy": "Max", "policies": [
                {"type": "Percent", "value": 100, "periodSeconds": 15}]})
        );
        // Pod policy is specified (scale up).
        let b = up(json!({"selectPolicy": "Min",
            "policies": [{"type": "Pods", "value": 1, "periodSeconds": 2}]}));
        assert_eq!(
            b["scaleUp"],
            json!({"selectPolicy": "Min", "stabilizationWindowSeconds": 0,
                "policies": [{"type": "Pods", "value": 1, "periodSeconds": 2}]})
        );
        // Percent policy and stabilization window are specified (scale up).
        let b = up(json!({"stabilizationWindowSeconds": 25,
            "policies": [{"type": "Percent", "value": 7, "periodSeconds": 60}]}));
        assert_eq!(b["scaleUp"]["stabilizationWindowSeconds"], json!(25));
        assert_eq!(b["scaleUp"]["selectPolicy"], json!("Max"));
        // Percent policy is specified (scale down): stabilization stays unset.
        let hpa = json!({"spec": {"behavior": {"scaleDown": {"selectPolicy": "Min",
            "policies": [{"type": "Percent", "value": 1, "periodSeconds": 2}]}}}});
        let out = apply("autoscaling", "HorizontalPodAutoscaler", hpa);
        assert_eq!(
            out["spec"]["behavior"]["scaleDown"],
            json!({"selectPolicy": "Min",
                "policies": [{"type": "Percent", "value": 1, "periodSeconds": 2}]})
        );
    }

    #[test]
    fn hpa_v1_min_replicas() {
        let mut hpa = json!({"spec": {"maxReplicas": 3}});
        hpa_v1(&mut hpa);
        assert_eq!(hpa["spec"], json!({"maxReplicas": 3, "minReplicas": 1}));
        let mut hpa = json!({"spec": {"minReplicas": 2}});
        hpa_v1(&mut hpa);
        assert_eq!(hpa["spec"]["minReplicas"], json!(2));
    }

    #[test]
    fn other_groups() {
        // Values from the groups' defaults.go (networking, storage, scheduling,
        // flowcontrol, discovery v1).
        let np = apply(
            "networking.k8s.io",
            "NetworkPolicy",
            json!({"spec": {"ingress": [{"ports": [{"port": 80}]}], "egress": [{}]}}),
        );
        assert_eq!(np["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
        assert_eq!(
            np["spec"]["ingress"][0]["ports"][0]["protocol"],
            json!("TCP")
        );
        let np = apply("networking.k8s.io", "NetworkPolicy", json!({"spec": {}}));
        assert_eq!(np["spec"]["policyTypes"], json!(["Ingress"]));
        let ic = apply(
            "networking.k8s.io",
            "IngressClass",
            json!({"spec": {"parameters": {"kind": "K", "name": "n"}}}),
        );
        assert_eq!(ic["spec"]["parameters"]["scope"], json!("Cluster"));
        let ic = apply("networking.k8s.io", "IngressClass", json!({"spec": {}}));
        assert_eq!(ic["spec"], json!({}));
        let sc = apply(
            "storage.k8s.io",
            "StorageClass",
            json!({"provisioner": "p"}),
        );
        assert_eq!(sc["reclaimPolicy"], json!("Delete"));
        assert_eq!(sc["volumeBindingMode"], json!("Immediate"));
        let d = apply("storage.k8s.io", "CSIDriver", json!({}));
        assert_eq!(
            d["spec"],
            json!({"attachRequired": true, "podInfoOnMount": false, "storageCapacity": false,
                "fsGroupPolicy": "ReadWriteOnceWithFSType",
                "volumeLifecycleModes": ["Persistent"], "requiresRepublish": false,
                "seLinuxMount": false, "preventPodSchedulingIfMissing": false})
        );
        let pc = apply("scheduling.k8s.io", "PriorityClass", json!({"value": 1}));
        assert_eq!(pc["preemptionPolicy"], json!("PreemptLowerPriority"));
        let fs = apply(
            "flowcontrol.apiserver.k8s.io",
            "FlowSchema",
            json!({"spec": {}}),
        );
        assert_eq!(fs["spec"]["matchingPrecedence"], json!(1000));
        let plc = apply(
            "flowcontrol.apiserver.k8s.io",
            "PriorityLevelConfiguration",
            json!({"spec": {"type": "Limited",
                "limited": {"limitResponse": {"type": "Queue", "queuing": {}}}}}),
        );
        assert_eq!(
            plc["spec"]["limited"],
            json!({"nominalConcurrencyShares": 30, "lendablePercent": 0,
                "limitResponse": {"type": "Queue",
                    "queuing": {"handSize": 8, "queues": 64, "queueLengthLimit": 50}}})
        );
        let plc = apply(
            "flowcontrol.apiserver.k8s.io",
            "PriorityLevelConfiguration",
            json!({"spec": {"type": "Exempt", "exempt": {}}}),
        );
        assert_eq!(
            plc["spec"]["exempt"],
            json!({"nominalConcurrencyShares": 0, "lendablePercent": 0})
        );
        let es = apply(
            "discovery.k8s.io",
            "EndpointSlice",
            json!({"ports": [{"port": 80}, {"name": "x", "protocol": "UDP"}]}),
        );
        assert_eq!(
            es["ports"],
            json!([{"port": 80, "name": "", "protocol": "TCP"}, {"name": "x", "protocol": "UDP"}])
        );
    }

    #[test]
    fn unknown_kinds_have_no_defaulter() {
        assert!(defaulter("", "Service").is_none());
        assert!(defaulter("", "Secret").is_none());
        assert!(defaulter("policy", "PodDisruptionBudget").is_none());
        assert!(defaulter("apps", "Pod").is_none());
    }

    /// One object of every kind, everything upstream defaults already set to a
    /// non-default value, or the fully defaulted form.
    fn samples() -> Vec<(&'static str, &'static str, Value)> {
        let pod_spec = || json!({"spec": full_pod_spec()});
        vec![
            ("", "Pod", pod_spec()),
            ("", "PodTemplate", json!({"template": pod_spec()})),
            (
                "",
                "ReplicationController",
                json!({"spec": {"template": pod_spec()}}),
            ),
            (
                "",
                "PersistentVolume",
                json!({"spec": {"rbd": {}, "azureDisk": {}}}),
            ),
            ("", "PersistentVolumeClaim", json!({})),
            ("", "Endpoints", json!({"subsets": [{"ports": [{}]}]})),
            ("", "Node", json!({"status": {"capacity": {"cpu": "1"}}})),
            (
                "",
                "LimitRange",
                json!({"spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}}]}}),
            ),
            (
                "apps",
                "Deployment",
                json!({"spec": {"template": pod_spec()}}),
            ),
            (
                "apps",
                "ReplicaSet",
                json!({"spec": {"template": pod_spec()}}),
            ),
            (
                "apps",
                "StatefulSet",
                json!({"spec": {"template": pod_spec(), "volumeClaimTemplates": [{}]}}),
            ),
            (
                "apps",
                "DaemonSet",
                json!({"spec": {"template": pod_spec()}}),
            ),
            (
                "batch",
                "Job",
                json!({"spec": {"template": pod_spec(),
                    "podFailurePolicy": {"rules": [{"onPodConditions": [{}]}]}}}),
            ),
            (
                "batch",
                "CronJob",
                json!({"spec": {"jobTemplate": {"spec": {"template": pod_spec()}}}}),
            ),
            (
                "autoscaling",
                "HorizontalPodAutoscaler",
                json!({"spec": {"behavior": {"scaleUp": {}}}}),
            ),
            (
                "networking.k8s.io",
                "NetworkPolicy",
                json!({"spec": {"ingress": [{"ports": [{}]}], "egress": [{"ports": [{}]}]}}),
            ),
            (
                "networking.k8s.io",
                "IngressClass",
                json!({"spec": {"parameters": {}}}),
            ),
            ("storage.k8s.io", "StorageClass", json!({})),
            ("storage.k8s.io", "CSIDriver", json!({})),
            ("scheduling.k8s.io", "PriorityClass", json!({})),
            ("flowcontrol.apiserver.k8s.io", "FlowSchema", json!({})),
            (
                "flowcontrol.apiserver.k8s.io",
                "PriorityLevelConfiguration",
                json!({"spec": {"limited": {"limitResponse": {"queuing": {}}}, "exempt": {}}}),
            ),
            ("discovery.k8s.io", "EndpointSlice", json!({"ports": [{}]})),
        ]
    }

    #[test]
    fn defaulting_is_idempotent() {
        for (group, kind, obj) in samples() {
            let once = apply(group, kind, obj);
            let twice = apply(group, kind, once.clone());
            assert_eq!(once, twice, "{group}/{kind}");
        }
    }

    /// Every leaf of `v`, as JSON pointers.
    fn leaves(v: &Value, prefix: String, out: &mut Vec<String>) {
        match v {
            Value::Object(m) if !m.is_empty() => {
                for (k, x) in m {
                    leaves(x, format!("{prefix}/{k}"), out);
                }
            }
            Value::Array(a) if !a.is_empty() => {
                for (i, x) in a.iter().enumerate() {
                    leaves(x, format!("{prefix}/{i}"), out);
                }
            }
            _ => out.push(prefix),
        }
    }

    /// Gives every leaf another value, then checks none is overwritten.
    fn other_value(v: &Value) -> Value {
        match v {
            Value::String(s) => json!(format!("{s}-custom")),
            Value::Number(n) => json!(n.as_i64().unwrap_or(0) + 7),
            Value::Bool(b) => json!(!b),
            Value::Object(_) => json!({"custom": true}),
            Value::Array(_) => json!(["custom"]),
            Value::Null => json!("custom"),
        }
    }

    #[test]
    fn user_values_are_never_overwritten() {
        for (group, kind, obj) in samples() {
            let defaulted = apply(group, kind, obj);
            let mut paths = Vec::new();
            leaves(&defaulted, String::new(), &mut paths);
            let mut custom = defaulted.clone();
            for p in &paths {
                if let Some(v) = custom.pointer_mut(p) {
                    *v = other_value(v);
                }
            }
            // Re-defaulting may add defaults inside the new objects, but each
            // custom leaf keeps its value.
            let out = apply(group, kind, custom.clone());
            for p in &paths {
                let Some(mine) = custom.pointer(p) else {
                    continue;
                };
                if mine.is_object() {
                    continue;
                }
                assert_eq!(out.pointer(p), Some(mine), "{group}/{kind} {p}");
            }
        }
    }

    #[test]
    fn wrong_types_do_not_panic_and_are_kept() {
        let wrongs = [
            json!(7),
            json!("x"),
            json!([1, "y", null]),
            json!(true),
            Value::Null,
        ];
        for (group, kind, obj) in samples() {
            let defaulted = apply(group, kind, obj);
            let mut paths = Vec::new();
            leaves(&defaulted, String::new(), &mut paths);
            // Also the containers of every leaf.
            let mut all: Vec<String> = paths
                .iter()
                .flat_map(|p| {
                    let mut v = Vec::new();
                    let mut cur = p.as_str();
                    while let Some((parent, _)) = cur.rsplit_once('/') {
                        v.push(cur.to_owned());
                        cur = parent;
                    }
                    v
                })
                .collect();
            all.sort();
            all.dedup();
            for p in &all {
                for wrong in &wrongs {
                    let mut broken = defaulted.clone();
                    if let Some(v) = broken.pointer_mut(p) {
                        *v = wrong.clone();
                    }
                    let out = apply(group, kind, broken.clone());
                    if !wrong.is_null() {
                        assert_eq!(out.pointer(p), Some(wrong), "{group}/{kind} {p}");
                    }
                }
            }
            for top in &wrongs {
                apply(group, kind, top.clone());
            }
        }
    }
}
