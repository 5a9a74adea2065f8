//! LimitRanger: the namespace's LimitRanges give a new pod's containers and
//! init containers the defaults of their `Container` items (`default` →
//! limits, `defaultRequest` → requests, where the container has none; the
//! pod is annotated with what was set), and bound containers, pods and
//! claims by their `min`, `max` and `maxLimitRequestRatio`. Pods on create
//! and through `resize`, claims on create and update, as upstream's
//! `SupportsAttributes`; a write to an object being deleted is let through.
//!
//! A request that no request defaulted keeps the one decode-time defaulting
//! copied from its limit (the store defaults before admission), so a
//! `defaultRequest` applies only where a container has neither.
//!
//! Upstream walks each resource list in Go's map order; here in the order of
//! the names (what a real kube-apiserver 1.37 was measured to answer), the
//! LimitRanges in the order the store lists them. Refusals are the first
//! refusing LimitRange's errors, aggregated as `utilerrors.NewAggregate`.

use std::collections::BTreeMap;

use apimachinery::meta;
use apimachinery::quantity::{MAX_MILLI_VALUE, Quantity};
use registry::{Attributes, Operation};
use serde_json::{Map, Value};

use crate::Objects;

const LIMIT_RANGE: (&str, &str) = ("v1", "LimitRange");
const ANNOTATION: &str = "kubernetes.io/limit-ranger";

/// A resource list (`requests`, `limits`, `min`, ...) by resource name.
type Resources = BTreeMap<String, Quantity>;

/// Whether upstream's `SupportsAttributes` takes the write: pods created or
/// resized, claims created or updated; nothing whose old object is being
/// deleted.
pub(super) fn applies(a: &Attributes<'_>) -> bool {
    let supported = match (a.rtype.group.as_str(), a.rtype.plural.as_str()) {
        ("", "pods") => match a.ctx.subresource {
            apimachinery::Subresource::None => a.operation == Operation::Create,
            apimachinery::Subresource::Resize => a.operation == Operation::Update,
            _ => false,
        },
        ("", "persistentvolumeclaims") => {
            a.ctx.subresource.as_str().is_empty()
                && matches!(a.operation, Operation::Create | Operation::Update)
        }
        _ => false,
    };
    supported
        && a.old_object.is_none_or(|old| {
            meta::metadata(old)
                .and_then(|m| m.get("deletionTimestamp"))
                .is_none_or(Value::is_null)
        })
}

/// The LimitRanges of `namespace`.
pub(super) async fn limit_ranges(
    objects: &dyn Objects,
    namespace: &str,
) -> Result<Vec<Value>, String> {
    objects
        .find(LIMIT_RANGE.0, LIMIT_RANGE.1, namespace, None, None)
        .await
        .map_err(|e| e.to_string())
}

/// `PodMutateLimitFunc` for each LimitRange in turn.
pub(super) fn default_pod(pod: &mut Value, ranges: &[Value]) {
    for range in ranges {
        let (requests, limits) = container_defaults(range);
        if requests.is_empty() && limits.is_empty() {
            continue;
        }
        merge_pod(pod, &requests, &limits);
    }
}

/// `PodValidateLimitFunc` or `PersistentVolumeClaimValidateLimitFunc` (by
/// `plural`) for each LimitRange; `Err` is the reason of a 403.
pub(super) fn validate(plural: &str, object: &Value, ranges: &[Value]) -> Result<(), String> {
    for range in ranges {
        let errors = match plural {
            "pods" => pod_errors(range, object),
            "persistentvolumeclaims" => claim_errors(range, object),
            _ => Vec::new(),
        };
        aggregate(errors)?;
    }
    Ok(())
}

/// `utilerrors.NewAggregate(errs).Error()`: repeated messages once, several
/// in brackets.
fn aggregate(errors: Vec<String>) -> Result<(), String> {
    let mut seen: Vec<String> = Vec::new();
    for e in errors {
        if !seen.contains(&e) {
            seen.push(e);
        }
    }
    match seen.len() {
        0 => Ok(()),
        1 => Err(seen.remove(0)),
        _ => Err(format!("[{}]", seen.join(", "))),
    }
}

/// A resource list read from JSON (a quantity may be a JSON number).
fn resources(list: Option<&Value>) -> Resources {
    let Some(list) = list.and_then(Value::as_object) else {
        return Resources::new();
    };
    list.iter()
        .filter_map(|(name, v)| {
            let quantity = match v {
                Value::String(s) => Quantity::parse(s).ok()?,
                Value::Number(n) => Quantity::parse(&n.to_string()).ok()?,
                _ => return None,
            };
            Some((name.clone(), quantity))
        })
        .collect()
}

fn items(range: &Value) -> impl Iterator<Item = &Value> {
    range
        .pointer("/spec/limits")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn item_type(item: &Value) -> &str {
    item.get("type").and_then(Value::as_str).unwrap_or("")
}

/// `defaultContainerResourceRequirements`: the `defaultRequest` and
/// `default` of the `Container` items (a later item's wins).
fn container_defaults(range: &Value) -> (Resources, Resources) {
    let (mut requests, mut limits) = (Resources::new(), Resources::new());
    for item in items(range).filter(|i| item_type(i) == "Container") {
        requests.extend(resources(item.get("defaultRequest")));
        limits.extend(resources(item.get("default")));
    }
    (requests, limits)
}

/// `mergePodResourceRequirements`: the defaults a container lacks, and the
/// annotation naming them (when anything was set).
fn merge_pod(pod: &mut Value, requests: &Resources, limits: &Resources) {
    let mut notes = Vec::new();
    for (field, prefix) in [
        ("containers", "container"),
        ("initContainers", "init container"),
    ] {
        let Some(containers) = pod
            .pointer_mut(&format!("/spec/{field}"))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for container in containers {
            merge_container(container, requests, limits, prefix, &mut notes);
        }
    }
    if notes.is_empty() {
        return;
    }
    if meta::metadata(pod).is_none() {
        return;
    }
    let annotations = meta::metadata_mut(pod)
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    if !annotations.is_object() {
        *annotations = Value::Object(Map::new());
    }
    if let Some(annotations) = annotations.as_object_mut() {
        annotations.insert(
            ANNOTATION.into(),
            Value::from(format!("LimitRanger plugin set: {}", notes.join("; "))),
        );
    }
}

/// `mergeContainerResources`: each default the container lacks, written as
/// upstream writes the quantity.
fn merge_container(
    container: &mut Value,
    requests: &Resources,
    limits: &Resources,
    prefix: &str,
    notes: &mut Vec<String>,
) {
    let Some(container) = container.as_object_mut() else {
        return;
    };
    let name = container
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let resources = container
        .entry("resources")
        .or_insert_with(|| Value::Object(Map::new()));
    if !resources.is_object() {
        *resources = Value::Object(Map::new());
    }
    let Some(resources) = resources.as_object_mut() else {
        return;
    };
    let set_requests = fill(resources, "requests", requests);
    let set_limits = fill(resources, "limits", limits);
    if !set_requests.is_empty() {
        notes.push(format!(
            "{} request for {prefix} {name}",
            set_requests.join(", ")
        ));
    }
    if !set_limits.is_empty() {
        notes.push(format!(
            "{} limit for {prefix} {name}",
            set_limits.join(", ")
        ));
    }
}

/// Adds to `resources[field]` the defaults it lacks; their names, sorted.
fn fill(resources: &mut Map<String, Value>, field: &str, defaults: &Resources) -> Vec<String> {
    let missing: Vec<&String> = {
        let present = resources.get(field).and_then(Value::as_object);
        defaults
            .keys()
            .filter(|name| present.is_none_or(|p| !p.contains_key(name.as_str())))
            .collect()
    };
    if missing.is_empty() {
        return Vec::new();
    }
    let list = resources
        .entry(field)
        .or_insert_with(|| Value::Object(Map::new()));
    if !list.is_object() {
        *list = Value::Object(Map::new());
    }
    if let Some(list) = list.as_object_mut() {
        for name in &missing {
            list.insert((*name).clone(), Value::from(defaults[*name].to_string()));
        }
    }
    missing.into_iter().cloned().collect()
}

/// `requestLimitEnforcedValues`: the three values in milli-units when none
/// is too large for them, else in units.
fn enforced_values(
    request: Option<&Quantity>,
    limit: Option<&Quantity>,
    enforced: &Quantity,
) -> (i64, i64, i64) {
    let zero = Quantity::default();
    let (request, limit) = (request.unwrap_or(&zero), limit.unwrap_or(&zero));
    let values = (request.value(), limit.value(), enforced.value());
    if values.0 <= MAX_MILLI_VALUE && values.1 <= MAX_MILLI_VALUE && values.2 <= MAX_MILLI_VALUE {
        (
            request.milli_value(),
            limit.milli_value(),
            enforced.milli_value(),
        )
    } else {
        values
    }
}

/// `minConstraint`.
fn min_constraint(
    kind: &str,
    resource: &str,
    enforced: &Quantity,
    requests: &Resources,
    limits: &Resources,
) -> Option<String> {
    let (request, limit) = (requests.get(resource), limits.get(resource));
    let (observed_request, observed_limit, enforced_value) =
        enforced_values(request, limit, enforced);
    let Some(request) = request else {
        return Some(format!(
            "minimum {resource} usage per {kind} is {enforced}.  No request is specified"
        ));
    };
    if observed_request < enforced_value {
        return Some(format!(
            "minimum {resource} usage per {kind} is {enforced}, but request is {request}"
        ));
    }
    match limit {
        Some(limit) if observed_limit < enforced_value => Some(format!(
            "minimum {resource} usage per {kind} is {enforced}, but limit is {limit}"
        )),
        _ => None,
    }
}

/// `maxRequestConstraint`: a maximum on the request alone (claims).
fn max_request_constraint(
    kind: &str,
    resource: &str,
    enforced: &Quantity,
    requests: &Resources,
) -> Option<String> {
    let request = requests.get(resource);
    let (observed_request, _, enforced_value) = enforced_values(request, None, enforced);
    let Some(request) = request else {
        return Some(format!(
            "maximum {resource} usage per {kind} is {enforced}.  No request is specified"
        ));
    };
    (observed_request > enforced_value).then(|| {
        format!("maximum {resource} usage per {kind} is {enforced}, but request is {request}")
    })
}

/// `maxConstraint`.
fn max_constraint(
    kind: &str,
    resource: &str,
    enforced: &Quantity,
    requests: &Resources,
    limits: &Resources,
) -> Option<String> {
    let (request, limit) = (requests.get(resource), limits.get(resource));
    let (observed_request, observed_limit, enforced_value) =
        enforced_values(request, limit, enforced);
    let Some(limit) = limit else {
        return Some(format!(
            "maximum {resource} usage per {kind} is {enforced}.  No limit is specified"
        ));
    };
    if observed_limit > enforced_value {
        return Some(format!(
            "maximum {resource} usage per {kind} is {enforced}, but limit is {limit}"
        ));
    }
    match request {
        Some(request) if observed_request > enforced_value => Some(format!(
            "maximum {resource} usage per {kind} is {enforced}, but request is {request}"
        )),
        _ => None,
    }
}

/// `limitRequestRatioConstraint`.
fn ratio_constraint(
    kind: &str,
    resource: &str,
    enforced: &Quantity,
    requests: &Resources,
    limits: &Resources,
) -> Option<String> {
    let (request, limit) = (requests.get(resource), limits.get(resource));
    let (observed_request, observed_limit, _) = enforced_values(request, limit, enforced);
    let prefix = format!("{resource} max limit to request ratio per {kind} is {enforced}");
    if request.is_none() || observed_request == 0 {
        return Some(format!(
            "{prefix}, but no request is specified or request is 0"
        ));
    }
    if limit.is_none() || observed_limit == 0 {
        return Some(format!("{prefix}, but no limit is specified or limit is 0"));
    }
    let displayed = observed_limit as f64 / observed_request as f64;
    let (observed, allowed) = if enforced.value() <= MAX_MILLI_VALUE {
        (displayed * 1000.0, enforced.milli_value() as f64)
    } else {
        (displayed, enforced.value() as f64)
    };
    (observed > allowed).then(|| format!("{prefix}, but provided ratio is {displayed:.6}"))
}

/// Every constraint of `item` on one set of requests and limits.
fn check(item: &Value, kind: &str, requests: &Resources, limits: &Resources) -> Vec<String> {
    let mut errors = Vec::new();
    for (resource, enforced) in resources(item.get("min")) {
        errors.extend(min_constraint(kind, &resource, &enforced, requests, limits));
    }
    for (resource, enforced) in resources(item.get("max")) {
        errors.extend(max_constraint(kind, &resource, &enforced, requests, limits));
    }
    for (resource, enforced) in resources(item.get("maxLimitRequestRatio")) {
        errors.extend(ratio_constraint(
            kind, &resource, &enforced, requests, limits,
        ));
    }
    errors
}

fn containers<'a>(pod: &'a Value, field: &str) -> impl Iterator<Item = &'a Value> {
    pod.pointer(&format!("/spec/{field}"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn requirements(container: &Value) -> (Resources, Resources) {
    let resources_of = |field: &str| resources(container.pointer(&format!("/resources/{field}")));
    (resources_of("requests"), resources_of("limits"))
}

/// `PodValidateLimitFunc`: `Container` items on each container and init
/// container, `Pod` items on the pod's totals.
fn pod_errors(range: &Value, pod: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    for item in items(range) {
        match item_type(item) {
            kind @ "Container" => {
                for container in
                    containers(pod, "containers").chain(containers(pod, "initContainers"))
                {
                    let (requests, limits) = requirements(container);
                    errors.extend(check(item, kind, &requests, &limits));
                }
            }
            kind @ "Pod" => {
                let (requests, limits) = pod_totals(pod);
                errors.extend(check(item, kind, &requests, &limits));
            }
            _ => {}
        }
    }
    errors
}

/// `PersistentVolumeClaimValidateLimitFunc`: the claim's storage requests
/// against its `PersistentVolumeClaim` items (limits are not looked at).
fn claim_errors(range: &Value, claim: &Value) -> Vec<String> {
    let requests = resources(claim.pointer("/spec/resources/requests"));
    let kind = "PersistentVolumeClaim";
    let mut errors = Vec::new();
    for item in items(range).filter(|i| item_type(i) == kind) {
        for (resource, enforced) in resources(item.get("min")) {
            errors.extend(min_constraint(
                kind,
                &resource,
                &enforced,
                &requests,
                &Resources::new(),
            ));
        }
        for (resource, enforced) in resources(item.get("max")) {
            errors.extend(max_request_constraint(
                kind, &resource, &enforced, &requests,
            ));
        }
    }
    errors
}

/// `addResourceList`. A sum past the digits a quantity keeps leaves the
/// total as it was.
fn add_to(list: &mut Resources, more: &Resources) {
    for (name, quantity) in more {
        match list.get_mut(name) {
            Some(total) => {
                if let Some(sum) = total.add(quantity) {
                    *total = sum;
                }
            }
            None => {
                list.insert(name.clone(), quantity.clone());
            }
        }
    }
}

/// `maxResourceList`.
fn max_into(list: &mut Resources, more: &Resources) {
    for (name, quantity) in more {
        if list.get(name).is_none_or(|have| quantity > have) {
            list.insert(name.clone(), quantity.clone());
        }
    }
}

/// `podRequests` and `podLimits` (the spec only): the containers' sum, or
/// the init containers' largest need if more (restartable ones run
/// alongside the later ones), then the pod-level `resources` for cpu and
/// memory (PodLevelResources is on in 1.37).
fn pod_totals(pod: &Value) -> (Resources, Resources) {
    let mut totals = [Resources::new(), Resources::new()];
    for container in containers(pod, "containers") {
        let (requests, limits) = requirements(container);
        add_to(&mut totals[0], &requests);
        add_to(&mut totals[1], &limits);
    }
    let mut restartable = [Resources::new(), Resources::new()];
    let mut init = [Resources::new(), Resources::new()];
    for container in containers(pod, "initContainers") {
        let (requests, limits) = requirements(container);
        let sidecar = container.get("restartPolicy").and_then(Value::as_str) == Some("Always");
        for (i, own) in [requests, limits].iter().enumerate() {
            if sidecar {
                add_to(&mut totals[i], own);
                add_to(&mut restartable[i], own);
                max_into(&mut init[i], &restartable[i]);
            } else {
                let mut need = own.clone();
                add_to(&mut need, &restartable[i]);
                max_into(&mut init[i], &need);
            }
        }
    }
    for (i, field) in ["requests", "limits"].iter().enumerate() {
        max_into(&mut totals[i], &init[i]);
        let pod_level = resources(pod.pointer(&format!("/spec/resources/{field}")));
        for (name, quantity) in pod_level {
            if name == "cpu" || name == "memory" {
                totals[i].insert(name, quantity);
            }
        }
    }
    let [requests, limits] = totals;
    (requests, limits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `getComputeResourceList`.
    fn compute(cpu: &str, memory: &str) -> Value {
        let mut list = Map::new();
        if !cpu.is_empty() {
            list.insert("cpu".into(), json!(cpu));
        }
        if !memory.is_empty() {
            list.insert("memory".into(), json!(memory));
        }
        Value::Object(list)
    }

    fn storage(name: &str, amount: &str) -> Value {
        if amount.is_empty() {
            json!({})
        } else {
            json!({ name: amount })
        }
    }

    /// `getResourceRequirements`.
    fn reqs(requests: Value, limits: Value) -> Value {
        json!({"requests": requests, "limits": limits})
    }

    /// `createLimitRange`.
    fn range(kind: &str, min: Value, max: Value, ratio: Value) -> Value {
        json!({"metadata": {"name": "abc", "namespace": "test"}, "spec": {"limits": [
            {"type": kind, "min": min, "max": max, "maxLimitRequestRatio": ratio}]}})
    }

    fn none() -> Value {
        json!({})
    }

    /// `validLimitRange`.
    fn valid_range() -> Value {
        json!({"metadata": {"name": "abc", "namespace": "test"}, "spec": {"limits": [
            {"type": "Pod", "max": compute("200m", "4Gi"), "min": compute("50m", "2Mi")},
            {"type": "Container", "max": compute("100m", "2Gi"), "min": compute("25m", "1Mi"),
             "default": compute("75m", "10Mi"), "defaultRequest": compute("50m", "5Mi")}]}})
    }

    /// `validPod`.
    fn pod(name: &str, containers: usize, resources: Value) -> Value {
        let containers: Vec<Value> = (0..containers)
            .map(|i| {
                json!({"name": format!("foo-{i}"), "image": format!("foo:V{i}"),
                "resources": resources})
            })
            .collect();
        json!({"metadata": {"name": name, "namespace": "test"}, "spec": {"containers": containers}})
    }

    /// `validPodInit`.
    fn with_init(mut pod: Value, resources: &[Value]) -> Value {
        let init: Vec<Value> = resources
            .iter()
            .enumerate()
            .map(|(i, r)| {
                json!({"name": format!("foo-{i}"), "image": format!("foo:V{i}"),
                "resources": r})
            })
            .collect();
        pod["spec"]["initContainers"] = Value::Array(init);
        pod
    }

    fn with_sidecar(mut pod: Value, requests: Value, limits: Value) -> Value {
        let list = pod["spec"]
            .as_object_mut()
            .unwrap()
            .entry("initContainers")
            .or_insert_with(|| json!([]));
        let n = list.as_array().unwrap().len();
        list.as_array_mut()
            .unwrap()
            .push(json!({"name": format!("foo-{n}"),
            "image": format!("foo:V{n}"), "restartPolicy": "Always",
            "resources": reqs(requests, limits)}));
        pod
    }

    fn with_pod_level(mut pod: Value, resources: Value) -> Value {
        pod["spec"]["resources"] = resources;
        pod
    }

    /// `PodMutateLimitFunc` then `PodValidateLimitFunc`.
    fn admit(pod: &Value, range: &Value) -> Result<(), String> {
        let mut pod = pod.clone();
        default_pod(&mut pod, std::slice::from_ref(range));
        validate("pods", &pod, std::slice::from_ref(range))
    }

    fn annotation(pod: &Value) -> Option<&str> {
        pod.pointer("/metadata/annotations/kubernetes.io~1limit-ranger")
            .and_then(Value::as_str)
    }

    #[test]
    fn default_container_resource_requirements() {
        let (requests, limits) = container_defaults(&valid_range());
        assert_eq!(requests, resources(Some(&compute("50m", "5Mi"))));
        assert_eq!(limits, resources(Some(&compute("75m", "10Mi"))));
    }

    // TestMergePodResourceRequirements.
    #[test]
    fn merge_pod_resource_requirements() {
        let range = valid_range();
        let mut empty = pod("empty-resources", 1, reqs(compute("", ""), compute("", "")));
        default_pod(&mut empty, std::slice::from_ref(&range));
        assert_eq!(
            empty["spec"]["containers"][0]["resources"],
            reqs(compute("50m", "5Mi"), compute("75m", "10Mi"))
        );
        assert_eq!(
            annotation(&empty),
            Some(
                "LimitRanger plugin set: cpu, memory request for container foo-0; cpu, memory limit for container foo-0"
            )
        );

        let input = reqs(compute("", "512Mi"), compute("", ""));
        let mut partial = with_init(pod("limit-memory", 1, input.clone()), &[input]);
        default_pod(&mut partial, std::slice::from_ref(&range));
        let expected = reqs(compute("50m", "512Mi"), compute("75m", "10Mi"));
        assert_eq!(partial["spec"]["containers"][0]["resources"], expected);
        assert_eq!(partial["spec"]["initContainers"][0]["resources"], expected);
        assert_eq!(
            annotation(&partial),
            Some(
                "LimitRanger plugin set: cpu request for container foo-0; cpu, memory limit for container foo-0; cpu request for init container foo-0; cpu, memory limit for init container foo-0"
            )
        );

        let input = reqs(compute("100m", "512Mi"), compute("200m", "1G"));
        let init = reqs(compute("200m", "1G"), compute("400m", "2G"));
        let mut full = with_init(
            pod("limit-memory", 1, input.clone()),
            std::slice::from_ref(&init),
        );
        default_pod(&mut full, std::slice::from_ref(&range));
        assert_eq!(full["spec"]["containers"][0]["resources"], input);
        assert_eq!(full["spec"]["initContainers"][0]["resources"], init);
        assert_eq!(annotation(&full), None);
    }

    // TestPodLimitFuncApplyDefault; containers without `resources` get them,
    // and defaults are written as upstream writes the quantity.
    #[test]
    fn pod_limit_func_apply_default() {
        let mut p = with_init(
            json!({"metadata": {"name": "foo"}, "spec": {"containers": [{"name": "c"}]}}),
            &[json!(null)],
        );
        let mut range = valid_range();
        range["spec"]["limits"][1]["default"]["cpu"] = json!("0.075");
        default_pod(&mut p, &[range]);
        for field in ["containers", "initContainers"] {
            assert_eq!(
                p["spec"][field][0]["resources"],
                reqs(compute("50m", "5Mi"), compute("75m", "10Mi")),
                "{field}"
            );
        }
    }

    /// A resource list written `cpu=100m,memory=60Mi` (`-`: empty).
    fn list(spec: &str) -> Value {
        let pairs = spec.split(',').filter(|p| *p != "-" && !p.is_empty());
        Value::Object(
            pairs
                .map(|p| {
                    let (name, amount) = p.split_once('=').unwrap();
                    (name.to_string(), json!(amount))
                })
                .collect(),
        )
    }

    /// A case of upstream's `TestPodLimitFunc`, written `name containers
    /// requests limits type min max ratio [init:requests:limits]...
    /// [sidecar:requests:limits] [pod:requests:limits]`.
    fn case(spec: &str) -> (String, Value, Value) {
        let words: Vec<&str> = spec.split_whitespace().collect();
        let [name, count, requests, limits, kind, min, max, ratio] = words[..8] else {
            panic!("{spec}");
        };
        let mut p = pod(
            name,
            count.parse().unwrap(),
            reqs(list(requests), list(limits)),
        );
        for extra in &words[8..] {
            let [what, requests, limits] = extra.split(':').collect::<Vec<_>>()[..] else {
                panic!("{extra}");
            };
            let (requests, limits) = (list(requests), list(limits));
            p = match what {
                "init" => {
                    let mut init = p["spec"]["initContainers"].as_array().cloned();
                    let n = init.as_ref().map_or(0, Vec::len);
                    init.get_or_insert_default()
                        .push(json!({"name": format!("foo-{n}"),
                        "image": format!("foo:V{n}"), "resources": reqs(requests, limits)}));
                    p["spec"]["initContainers"] = json!(init);
                    p
                }
                "sidecar" => with_sidecar(p, requests, limits),
                "pod" => with_pod_level(p, reqs(requests, limits)),
                _ => panic!("{extra}"),
            };
        }
        (
            name.into(),
            p,
            range(kind, list(min), list(max), list(ratio)),
        )
    }

    #[test]
    fn pods_within_their_limits_are_admitted() {
        for spec in [
            "ctr-min-cpu-request 1 cpu=100m - Container cpu=50m - -",
            "ctr-min-cpu-request-limit 1 cpu=100m cpu=200m Container cpu=50m - -",
            "ctr-min-memory-request 1 memory=60Mi - Container memory=50Mi - -",
            "ctr-min-memory-request-limit 1 memory=60Mi memory=100Mi Container memory=50Mi - -",
            "ctr-max-cpu-request-limit 1 cpu=500m cpu=1 Container - cpu=2 -",
            "ctr-max-cpu-limit 1 - cpu=1 Container - cpu=2 -",
            "ctr-max-mem-request-limit 1 memory=250Mi memory=500Mi Container - memory=1Gi -",
            "ctr-max-cpu-ratio 1 cpu=500m cpu=750m Container - - cpu=1.5",
            "ctr-max-mem-limit 1 - memory=500Mi Container - memory=1Gi -",
            "pod-min-cpu-request 2 cpu=75m - Pod cpu=100m - -",
            "pod-min-cpu-request-limit 2 cpu=75m cpu=200m Pod cpu=100m - -",
            "pod-min-memory-request 2 memory=60Mi - Pod memory=100Mi - -",
            "pod-min-memory-request-limit 2 memory=60Mi memory=100Mi Pod memory=100Mi - -",
            "pod-init-min-memory-request 2 memory=60Mi - Pod memory=100Mi - - init:memory=100Mi:-",
            "pod-init-min-memory-request-limit 2 memory=60Mi memory=100Mi Pod memory=100Mi - - init:memory=80Mi:memory=100Mi",
            "pod-max-cpu-request-limit 2 cpu=500m cpu=1 Pod - cpu=2 -",
            "pod-max-cpu-limit 2 - cpu=1 Pod - cpu=2 -",
            "pod-init-max-cpu-request-limit 2 cpu=500m cpu=1 Pod - cpu=2 - init:cpu=1:cpu=2 init:cpu=1:cpu=1",
            "pod-init-max-cpu-limit 2 - cpu=1 Pod - cpu=2 - init:-:cpu=2 init:-:cpu=2",
            "pod-max-mem-request-limit 2 memory=250Mi memory=500Mi Pod - memory=1Gi -",
            "pod-max-mem-limit 2 - memory=500Mi Pod - memory=1Gi -",
            "pod-max-mem-ratio 3 memory=300Mi memory=450Mi Pod - memory=2Gi memory=1.5",
            "ctr-1-min-local-ephemeral-storage-request 1 ephemeral-storage=60Mi - Container ephemeral-storage=50Mi - -",
            "ctr-1-min-local-ephemeral-storage-request-limit 1 ephemeral-storage=60Mi ephemeral-storage=100Mi Container ephemeral-storage=50Mi - -",
            "ctr-1-max-local-ephemeral-storage-request-limit 1 ephemeral-storage=250Mi ephemeral-storage=500Mi Container - ephemeral-storage=1Gi -",
            "ctr-1-max-local-ephemeral-storage-limit 1 - ephemeral-storage=500Mi Container - ephemeral-storage=1Gi -",
            "ctr-2-min-local-ephemeral-storage-request 2 ephemeral-storage=60Mi - Container ephemeral-storage=50Mi - -",
            "ctr-2-min-local-ephemeral-storage-request-limit 2 ephemeral-storage=60Mi ephemeral-storage=100Mi Container ephemeral-storage=50Mi - -",
            "ctr-2-max-local-ephemeral-storage-request-limit 2 ephemeral-storage=250Mi ephemeral-storage=500Mi Container - ephemeral-storage=600Mi -",
            "ctr-2-max-local-ephemeral-storage-limit 2 - ephemeral-storage=500Mi Container - ephemeral-storage=600Mi -",
            "pod-min-local-ephemeral-storage-request 2 ephemeral-storage=60Mi - Pod ephemeral-storage=100Mi - -",
            "pod-min-local-ephemeral-storage-request-limit 2 ephemeral-storage=60Mi ephemeral-storage=100Mi Pod ephemeral-storage=100Mi - -",
            "pod-init-min-local-ephemeral-storage-request 2 ephemeral-storage=60Mi - Pod ephemeral-storage=100Mi - - init:ephemeral-storage=100Mi:-",
            "pod-init-min-local-ephemeral-storage-request-limit 2 ephemeral-storage=60Mi ephemeral-storage=100Mi Pod ephemeral-storage=100Mi - - init:ephemeral-storage=80Mi:ephemeral-storage=100Mi",
            "pod-max-local-ephemeral-storage-request-limit 2 ephemeral-storage=250Mi ephemeral-storage=500Mi Pod - ephemeral-storage=1Gi -",
            "pod-max-local-ephemeral-storage-limit 2 - ephemeral-storage=500Mi Pod - ephemeral-storage=1Gi -",
            "pod-max-local-ephemeral-storage-ratio 3 ephemeral-storage=300Mi ephemeral-storage=450Mi Pod - ephemeral-storage=2Gi ephemeral-storage=1.5",
            "pod-level-resources-with-min-max 3 cpu=100m,memory=60Mi cpu=200m,memory=100Mi Pod - cpu=400m,memory=200Mi - pod:cpu=200m,memory=180Mi:cpu=400m,memory=200Mi",
            "pod-level-requests-with-min 3 cpu=50m,memory=60Mi - Pod cpu=160m,memory=200Mi - - pod:cpu=160m,memory=200Mi:-",
            "pod-level-limits-with-max 3 - cpu=50m,memory=60Mi Pod - cpu=160m,memory=200Mi - pod:-:cpu=160m,memory=200Mi",
        ] {
            let (name, pod, range) = case(spec);
            assert_eq!(admit(&pod, &range), Ok(()), "{name}");
        }
    }

    #[test]
    fn pods_beyond_their_limits_are_refused() {
        for spec in [
            "ctr-min-cpu-request 1 cpu=40m - Container cpu=50m - -",
            "ctr-min-cpu-request-limit 1 cpu=40m cpu=200m Container cpu=50m - -",
            "ctr-min-cpu-no-request-limit 1 - - Container cpu=50m - -",
            "ctr-min-memory-request 1 memory=40Mi - Container memory=50Mi - -",
            "ctr-min-memory-request-limit 1 memory=40Mi memory=100Mi Container memory=50Mi - -",
            "ctr-min-memory-no-request-limit 1 - - Container memory=50Mi - -",
            "ctr-max-cpu-request-limit 1 cpu=500m cpu=2500m Container - cpu=2 -",
            "ctr-max-cpu-limit 1 - cpu=2500m Container - cpu=2 -",
            "ctr-max-cpu-no-request-limit 1 - - Container - cpu=2 -",
            "ctr-max-cpu-ratio 1 cpu=1250m cpu=2500m Container - - cpu=1",
            "ctr-max-mem-request-limit 1 memory=250Mi memory=2Gi Container - memory=1Gi -",
            "ctr-max-mem-limit 1 - memory=2Gi Container - memory=1Gi -",
            "ctr-max-mem-no-request-limit 1 - - Container - memory=1Gi -",
            "pod-min-cpu-request 1 cpu=75m - Pod cpu=100m - -",
            "pod-min-cpu-request-limit 1 cpu=75m cpu=200m Pod cpu=100m - -",
            "pod-min-memory-request 1 memory=60Mi - Pod memory=100Mi - -",
            "pod-min-memory-request-limit 1 memory=60Mi memory=100Mi Pod memory=100Mi - -",
            "pod-max-cpu-request-limit 3 cpu=500m cpu=1 Pod - cpu=2 -",
            "pod-max-cpu-limit 3 - cpu=1 Pod - cpu=2 -",
            "pod-max-mem-request-limit 3 memory=250Mi memory=500Mi Pod - memory=1Gi -",
            "pod-max-mem-limit 3 - memory=500Mi Pod - memory=1Gi -",
            "pod-init-max-mem-limit 1 - memory=500Mi Pod - memory=1Gi - init:-:memory=1.5Gi",
            "pod-max-mem-ratio 3 memory=250Mi memory=500Mi Pod - memory=2Gi memory=1.5",
            "ctr-1-min-local-ephemeral-storage-request 1 ephemeral-storage=40Mi - Container ephemeral-storage=50Mi - -",
            "ctr-1-min-local-ephemeral-storage-request-limit 1 ephemeral-storage=40Mi ephemeral-storage=100Mi Container ephemeral-storage=50Mi - -",
            "ctr-1-min-local-ephemeral-storage-no-request-limit 1 - - Container ephemeral-storage=50Mi - -",
            "ctr-1-max-local-ephemeral-storage-request-limit 1 ephemeral-storage=250Mi ephemeral-storage=2Gi Container - ephemeral-storage=1Gi -",
            "ctr-1-max-local-ephemeral-storage-limit 1 - ephemeral-storage=2Gi Container - ephemeral-storage=1Gi -",
            "ctr-1-max-local-ephemeral-storage-no-request-limit 1 - - Container - ephemeral-storage=1Gi -",
            "ctr-2-min-local-ephemeral-storage-request 2 ephemeral-storage=40Mi - Container ephemeral-storage=50Mi - -",
            "ctr-2-min-local-ephemeral-storage-request-limit 2 ephemeral-storage=40Mi ephemeral-storage=100Mi Container ephemeral-storage=50Mi - -",
            "ctr-2-min-local-ephemeral-storage-no-request-limit 2 - - Container ephemeral-storage=50Mi - -",
            "ctr-2-max-local-ephemeral-storage-request-limit 2 ephemeral-storage=250Mi ephemeral-storage=2Gi Container - ephemeral-storage=1Gi -",
            "ctr-2-max-local-ephemeral-storage-limit 2 - ephemeral-storage=2Gi Container - ephemeral-storage=1Gi -",
            "ctr-2-max-local-ephemeral-storage-no-request-limit 2 - - Container - ephemeral-storage=1Gi -",
            "pod-min-local-ephemeral-storage-request 1 ephemeral-storage=60Mi - Pod ephemeral-storage=100Mi - -",
            "pod-min-local-ephemeral-storage-request-limit 1 ephemeral-storage=60Mi ephemeral-storage=100Mi Pod ephemeral-storage=100Mi - -",
            "pod-max-local-ephemeral-storage-request-limit 3 ephemeral-storage=250Mi ephemeral-storage=500Mi Pod - ephemeral-storage=1Gi -",
            "pod-max-local-ephemeral-storage-limit 3 - ephemeral-storage=500Mi Pod - ephemeral-storage=1Gi -",
            "pod-init-max-local-ephemeral-storage-limit 1 - ephemeral-storage=500Mi Pod - ephemeral-storage=1Gi - init:-:ephemeral-storage=1.5Gi",
            "pod-max-local-ephemeral-storage-ratio 3 ephemeral-storage=250Mi ephemeral-storage=500Mi Pod - ephemeral-storage=2Gi ephemeral-storage=1.5",
            "ctr-max-cpu-limit-restartable-init-container 1 cpu=1000m cpu=1500m Pod - cpu=2 - sidecar:cpu=1500m:-",
            "pod-level-resources-exceeding-max 3 cpu=100m,memory=60Mi cpu=200m,memory=100Mi Pod - cpu=400m,memory=200Mi - pod:cpu=200m,memory=180Mi:cpu=500m,memory=280Mi",
            "pod-level-requests-less-than-min 3 cpu=50m,memory=60Mi - Pod cpu=160m,memory=200Mi - - pod:cpu=100m,memory=200Mi:-",
            "pod-level-limits-exceeding-max 3 - cpu=50m,memory=60Mi Pod - cpu=160m,memory=200Mi - pod:-:cpu=160m,memory=300Mi",
        ] {
            let (name, pod, range) = case(spec);
            assert!(admit(&pod, &range).is_err(), "{name}");
        }
    }

    // The messages a kube-apiserver 1.37.2 answered for these pods.
    #[test]
    fn refusals_are_worded_as_upstreams() {
        let ephemeral = |cpu: &str, memory: &str, storage: &str| json!({"cpu": cpu, "memory": memory, "ephemeral-storage": storage});
        let container = json!({"spec": {"limits": [{"type": "Container",
            "min": ephemeral("50m", "100Mi", "100Gi"), "max": ephemeral("500m", "500Mi", "500Gi"),
            "default": ephemeral("500m", "500Mi", "500Gi"),
            "defaultRequest": ephemeral("100m", "200Mi", "200Gi")}]}});
        let below = pod(
            "pfpod",
            1,
            json!({"requests": ephemeral("10m", "50Mi", "50Gi")}),
        );
        assert_eq!(
            admit(&below, &container),
            Err("[minimum cpu usage per Container is 50m, but request is 10m, minimum ephemeral-storage usage per Container is 100Gi, but request is 50Gi, minimum memory usage per Container is 100Mi, but request is 50Mi]".into())
        );
        let per_pod = json!({"spec": {"limits": [{"type": "Pod", "min": {"cpu": "0.05"},
            "max": {"memory": "1Gi"}, "maxLimitRequestRatio": {"memory": "1.5"}}]}});
        for (resources, message) in [
            (
                json!({}),
                "[minimum cpu usage per Pod is 50m.  No request is specified, maximum memory usage per Pod is 1Gi.  No limit is specified, memory max limit to request ratio per Pod is 1500m, but no request is specified or request is 0]",
            ),
            (
                json!({"requests": {"cpu": "10m"}}),
                "[minimum cpu usage per Pod is 50m, but request is 10m, maximum memory usage per Pod is 1Gi.  No limit is specified, memory max limit to request ratio per Pod is 1500m, but no request is specified or request is 0]",
            ),
            (
                json!({"requests": {"cpu": "1e3", "memory": "1Gi"}, "limits": {"memory": "2Gi"}}),
                "[maximum memory usage per Pod is 1Gi, but limit is 2Gi, memory max limit to request ratio per Pod is 1500m, but provided ratio is 2.000000]",
            ),
            (
                json!({"requests": {"cpu": "0.5", "memory": "100Mi"}, "limits": {"memory": "1000Mi"}}),
                "memory max limit to request ratio per Pod is 1500m, but provided ratio is 10.000000",
            ),
            (
                json!({"requests": {"cpu": "0.5", "memory": "0"}, "limits": {"memory": "1000Mi"}}),
                "memory max limit to request ratio per Pod is 1500m, but no request is specified or request is 0",
            ),
        ] {
            assert_eq!(
                admit(&pod("p", 1, resources), &per_pod),
                Err(message.into())
            );
        }
        // Totals: init containers' largest need, sidecars added.
        let two = pod(
            "p6",
            2,
            json!({"requests": {"cpu": "10m", "memory": "600Mi"},
            "limits": {"memory": "700Mi"}}),
        );
        let p6 = with_init(
            two,
            &[json!({"requests": {"cpu": "100m", "memory": "1.5Gi"},
            "limits": {"memory": "1.5Gi"}})],
        );
        assert_eq!(
            admit(&p6, &per_pod),
            Err("maximum memory usage per Pod is 1Gi, but limit is 1536Mi".into())
        );
        let one = pod(
            "p7",
            1,
            json!({"requests": {"cpu": "10m", "memory": "600Mi"},
            "limits": {"memory": "700Mi"}}),
        );
        let p7 = with_sidecar(
            one.clone(),
            json!({"cpu": "100m", "memory": "500Mi"}),
            json!({"memory": "600Mi"}),
        );
        assert_eq!(
            admit(&p7, &per_pod),
            Err("maximum memory usage per Pod is 1Gi, but limit is 1300Mi".into())
        );
        // Pod-level resources stand for the containers' cpu and memory.
        let p8 = with_pod_level(
            one,
            json!({"requests": {"cpu": "1", "memory": "1Gi"},
            "limits": {"memory": "1Gi"}}),
        );
        assert_eq!(admit(&p8, &per_pod), Ok(()));
        let claims = json!({"spec": {"limits": [{"type": "PersistentVolumeClaim",
            "min": {"storage": "1Gi"}, "max": {"storage": "10Gi"}}]}});
        let claim =
            |storage: &str| json!({"spec": {"resources": {"requests": {"storage": storage}}}});
        let check =
            |c: Value| validate("persistentvolumeclaims", &c, std::slice::from_ref(&claims));
        assert_eq!(
            check(claim("500Mi")),
            Err(
                "minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi"
                    .into()
            )
        );
        assert_eq!(
            check(claim("100Gi")),
            Err(
                "maximum storage usage per PersistentVolumeClaim is 10Gi, but request is 100Gi"
                    .into()
            )
        );
        assert_eq!(check(claim("5Gi")), Ok(()));
    }

    // TestPersistentVolumeClaimLimitFunc.
    #[test]
    fn claims_are_bounded_by_storage() {
        let kind = "PersistentVolumeClaim";
        let s = |amount: &str| storage("storage", amount);
        let claim = |requests: Value| json!({"spec": {"resources": {"requests": requests}}});
        for (name, c, r, ok) in [
            (
                "pvc-is-min-storage-request",
                claim(s("1Gi")),
                range(kind, s("1Gi"), none(), none()),
                true,
            ),
            (
                "pvc-is-max-storage-request",
                claim(s("1Gi")),
                range(kind, none(), s("1Gi"), none()),
                true,
            ),
            (
                "pvc-no-minmax-storage-request",
                claim(s("100Gi")),
                range(kind, s(""), s(""), none()),
                true,
            ),
            (
                "pvc-within-minmax-storage-request",
                claim(s("5Gi")),
                range(kind, s("1Gi"), s("10Gi"), none()),
                true,
            ),
            (
                "pvc-below-min-storage-request",
                claim(s("500Mi")),
                range(kind, s("1Gi"), none(), none()),
                false,
            ),
            (
                "pvc-exceeds-max-storage-request",
                claim(s("100Gi")),
                range(kind, s("1Gi"), s("1Gi"), none()),
                false,
            ),
        ] {
            let result = validate("persistentvolumeclaims", &c, &[r]);
            assert_eq!(result.is_ok(), ok, "{name}: {result:?}");
        }
    }

    // TestLimitRangerIgnoresSubresource, TestLimitRangerAllowPodResize,
    // TestLimitRangerAdmitPod: pods on create and resize only, claims on
    // create and update, nothing being deleted.
    #[test]
    fn which_writes_are_limited() {
        use apimachinery::Subresource;
        let types = registry::builtin::resource_types();
        let rtype = |plural: &str| {
            types
                .iter()
                .find(|t| t.group.is_empty() && t.plural == plural)
                .unwrap()
        };
        let old = json!({"metadata": {"name": "p"}});
        let terminating =
            json!({"metadata": {"name": "p", "deletionTimestamp": "2026-01-01T00:00:00Z"}});
        for (plural, operation, subresource, old, expected) in [
            ("pods", Operation::Create, Subresource::None, None, true),
            (
                "pods",
                Operation::Update,
                Subresource::None,
                Some(&old),
                false,
            ),
            (
                "pods",
                Operation::Update,
                Subresource::Status,
                Some(&old),
                false,
            ),
            (
                "pods",
                Operation::Update,
                Subresource::Resize,
                Some(&old),
                true,
            ),
            (
                "pods",
                Operation::Update,
                Subresource::Resize,
                Some(&terminating),
                false,
            ),
            (
                "pods",
                Operation::Delete,
                Subresource::None,
                Some(&old),
                false,
            ),
            (
                "persistentvolumeclaims",
                Operation::Create,
                Subresource::None,
                None,
                true,
            ),
            (
                "persistentvolumeclaims",
                Operation::Update,
                Subresource::None,
                Some(&old),
                true,
            ),
            (
                "persistentvolumeclaims",
                Operation::Update,
                Subresource::None,
                Some(&terminating),
                false,
            ),
            (
                "persistentvolumeclaims",
                Operation::Update,
                Subresource::Status,
                Some(&old),
                false,
            ),
            (
                "services",
                Operation::Create,
                Subresource::None,
                None,
                false,
            ),
        ] {
            let ctx = registry::RequestContext {
                namespace: "test".into(),
                subresource: subresource.clone(),
                ..Default::default()
            };
            let a = Attributes {
                operation,
                rtype: rtype(plural),
                name: "p",
                object: None,
                old_object: old,
                ctx: &ctx,
            };
            assert_eq!(
                applies(&a),
                expected,
                "{plural} {operation:?} {subresource:?}"
            );
        }
    }

    #[test]
    fn repeated_messages_are_given_once() {
        let r = range("Container", compute("50m", ""), none(), none());
        assert_eq!(
            admit(&pod("p", 3, reqs(compute("10m", ""), none())), &r),
            Err("minimum cpu usage per Container is 50m, but request is 10m".into())
        );
    }
}
