//! ResourceClaims, ResourceClaimTemplates and DeviceClasses: device requests
//! (exactly or a first-available list), constraints, configuration, selectors.

use apimachinery::DynamicObject;
use apimachinery::validation::{
    FIELD_IMMUTABLE_ERROR_MSG, is_dns1123_subdomain, is_qualified_name, validate_annotations,
    validate_labels,
};
use apimachinery::{ErrorList, FieldError, FieldPath};
use serde_json::{Map, Value, json};

use super::super::gojson::{self, Form};
use super::super::json_fields::{field, int_of, is_zero, list, semantic_eq, spec_of, str_of};
use super::taints::toleration;
use super::{
    Errs, dns_label, dns_subdomain, driver_name_tagged, duplicates, fully_qualified_name,
    invalid_each, shapes, string_of, too_many,
};

/// Most requests, constraints, configurations and selectors a list may hold.
const MAX_ITEMS: usize = 32;
/// Most sub-requests of a `firstAvailable` list.
const MAX_SUB_REQUESTS: usize = 8;
const CEL_MAX_LENGTH: usize = 10 * 1024;
const OPAQUE_PARAMETERS_MAX_LENGTH: usize = 10 * 1024;
const MODES: [&str; 2] = ["All", "ExactCount"];
const REQUEST_REF: &str = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'";

// ---------------------------------------------------------------------------
// Defaults and dropped fields

/// `SetObjectDefaults_ResourceClaim`: each request's allocation mode, each
/// toleration's operator (the allocated devices' too).
pub(in super::super) fn default_claim(obj: &mut DynamicObject) {
    if let Some(devices) = obj.pointer_mut("/spec/devices") {
        default_requests(devices);
    }
    let results = obj
        .pointer_mut("/status/allocation/devices/results")
        .and_then(Value::as_array_mut);
    for result in results.into_iter().flatten() {
        default_operators(result);
    }
}

/// `SetObjectDefaults_ResourceClaimTemplate`.
pub(in super::super) fn default_claim_template(obj: &mut DynamicObject) {
    if let Some(devices) = obj.pointer_mut("/spec/spec/devices") {
        default_requests(devices);
    }
}

fn default_requests(devices: &mut Value) {
    let Some(requests) = devices.get_mut("requests").and_then(Value::as_array_mut) else {
        return;
    };
    for request in requests {
        if let Some(exactly) = request.get_mut("exactly").filter(|e| e.is_object()) {
            default_mode(exactly);
        }
        let subs = request
            .get_mut("firstAvailable")
            .and_then(Value::as_array_mut);
        for sub in subs.into_iter().flatten().filter(|s| s.is_object()) {
            default_mode(sub);
        }
    }
}

/// A toleration's operator is `Equal` unless set (`+default="Equal"`).
fn default_operators(owner: &mut Value) {
    let tolerations = owner.get_mut("tolerations").and_then(Value::as_array_mut);
    for t in tolerations
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
    {
        if t.get("operator").is_none_or(|op| op.is_null() || op == "") {
            t.insert("operator".into(), json!("Equal"));
        }
    }
}

/// `SetDefaults_ExactDeviceRequest` and `SetDefaults_DeviceSubRequest`:
/// `ExactCount` of one device; and the tolerations' operators.
fn default_mode(request: &mut Value) {
    default_operators(request);
    let Some(request) = request.as_object_mut() else {
        return;
    };
    let blank = |v: Option<&Value>| matches!(v, None | Some(Value::Null)) || v == Some(&json!(""));
    if blank(request.get("allocationMode")) {
        request.insert("allocationMode".into(), json!("ExactCount"));
    }
    let exact = request.get("allocationMode") == Some(&json!("ExactCount"));
    let no_count = matches!(request.get("count"), None | Some(Value::Null))
        || request.get("count").and_then(Value::as_i64) == Some(0);
    if exact && no_count {
        request.insert("count".into(), json!(1));
    }
}

/// The fields of requests whose feature gates are off in 1.37
/// (`DRADerivedAttributes`), dropped unless the stored object uses them.
const ALPHA_REQUEST_FIELDS: [&str; 2] = [
    "/requests/*/exactly/derivedAttributes",
    "/requests/*/firstAvailable/*/derivedAttributes",
];

/// `dropDisabledFields` of a claim: `old` is the stored claim on update.
pub(in super::super) fn drop_alpha_claim_fields(new: &mut Value, old: Option<&Value>) {
    drop_request_fields(new, old, "/spec/devices");
}

/// `dropDisabledFields` of a claim template.
pub(in super::super) fn drop_alpha_template_fields(new: &mut Value, old: Option<&Value>) {
    drop_request_fields(new, old, "/spec/spec/devices");
}

fn drop_request_fields(new: &mut Value, old: Option<&Value>, devices: &str) {
    let in_use = old
        .and_then(|o| o.pointer(devices))
        .is_some_and(|d| super::slices::any_set(d, &ALPHA_REQUEST_FIELDS));
    if let (false, Some(d)) = (in_use, new.pointer_mut(devices)) {
        super::slices::remove_all(d, &ALPHA_REQUEST_FIELDS);
    }
}

// ---------------------------------------------------------------------------
// ResourceClaim and ResourceClaimTemplate

/// `ValidateResourceClaim` (metadata is the store's).
pub(in super::super) fn resource_claim(obj: &DynamicObject) -> ErrorList {
    let mut errs = Errs::default();
    let devices = spec_of(obj).get("devices").unwrap_or(&Value::Null);
    device_claim(devices, &FieldPath::new("spec").child("devices"), &mut errs);
    errs.into_list()
}

/// `ValidateResourceClaimUpdate`: the spec never changes (the tags' error,
/// which shows no value).
pub(in super::super) fn resource_claim_update(
    new: &DynamicObject,
    old: &DynamicObject,
) -> ErrorList {
    if semantic_eq(new.get("spec"), old.get("spec")) {
        return ErrorList::new();
    }
    vec![FieldError::invalid(
        &FieldPath::new("spec"),
        Value::Null,
        FIELD_IMMUTABLE_ERROR_MSG,
    )]
}

/// `ValidateResourceClaimTemplate`: the template's metadata and claim spec.
pub(in super::super) fn claim_template(obj: &DynamicObject) -> ErrorList {
    let mut errs = Errs::default();
    let (spec, path) = (spec_of(obj), FieldPath::new("spec"));
    errs.hand(template_metadata(
        apimachinery::meta::member(spec).unwrap_or(&Value::Null),
        &path.child("metadata"),
    ));
    let devices = spec_of(spec).get("devices").unwrap_or(&Value::Null);
    device_claim(devices, &path.child("spec").child("devices"), &mut errs);
    errs.into_list()
}

/// The strategy's `ValidateUpdate`: the create rules, then the spec never
/// changes (shown as the internal Go struct).
pub(in super::super) fn claim_template_update(
    new: &DynamicObject,
    old: &DynamicObject,
) -> ErrorList {
    let mut errs = claim_template(new);
    if !semantic_eq(new.get("spec"), old.get("spec")) {
        let spec = gojson::render(
            Some(&embedded_metadata(spec_of(new))),
            &shapes::TEMPLATE_SPEC,
            Form::Internal,
        );
        errs.push(FieldError::invalid_go(
            &FieldPath::new("spec"),
            &spec,
            FIELD_IMMUTABLE_ERROR_MSG,
        ));
    }
    errs
}

/// The template spec with its `metadata` members beside `spec`, as the
/// internal type embeds `ObjectMeta`.
fn embedded_metadata(spec: &Value) -> Value {
    let mut flat = spec.as_object().cloned().unwrap_or_default();
    if let Some(Value::Object(meta)) = flat.remove("metadata") {
        flat.extend(meta);
    }
    Value::Object(flat)
}

/// The members of `ObjectMeta` a template may not set, in Go's order.
const TEMPLATE_META_FORBIDDEN: [&str; 13] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// `ValidateTemplateObjectMeta`: annotations and labels, nothing else.
fn template_metadata(meta: &Value, path: &FieldPath) -> ErrorList {
    let empty = Map::new();
    let map = |key| meta.get(key).and_then(Value::as_object).unwrap_or(&empty);
    let mut errs = validate_annotations(map("annotations"), &path.child("annotations"));
    errs.extend(validate_labels(map("labels"), &path.child("labels")));
    let set = |key: &str| meta.get(key).is_some_and(|v| !is_zero(v));
    for key in TEMPLATE_META_FORBIDDEN.into_iter().filter(|k| set(k)) {
        errs.push(FieldError::forbidden(&path.child(key), "cannot be set"));
    }
    errs
}

/// `validateDeviceClaim`: requests (unique names), constraints, configuration.
fn device_claim(devices: &Value, path: &FieldPath, errs: &mut Errs) {
    let requests = list(devices, "requests");
    let names = RequestNames::of(requests);
    let at = path.child("requests");
    if let Some(e) = too_many(requests, MAX_ITEMS, &at) {
        errs.tag([e]);
    } else {
        errs.tag(duplicates(
            requests,
            &at,
            Some("name"),
            Some(&shapes::REQUEST),
        ));
        for (i, request) in requests.iter().enumerate() {
            self::request(request, &at.index(i), errs);
        }
    }
    let constraints = list(devices, "constraints");
    let at = path.child("constraints");
    match too_many(constraints, MAX_ITEMS, &at) {
        Some(e) => errs.tag([e]),
        None => constraints
            .iter()
            .enumerate()
            .for_each(|(i, c)| constraint(c, &at.index(i), &names, errs)),
    }
    let configs = list(devices, "config");
    let at = path.child("config");
    match too_many(configs, MAX_ITEMS, &at) {
        Some(e) => errs.tag([e]),
        None => configs
            .iter()
            .enumerate()
            .for_each(|(i, c)| claim_config(c, &at.index(i), &names, errs)),
    }
}

/// `validateDeviceRequest`: a name and exactly one of `exactly` and
/// `firstAvailable`. Upstream's tags check both whenever set; its
/// handwritten rules only the one that is set alone.
fn request(request: &Value, path: &FieldPath, errs: &mut Errs) {
    errs.hand(dns_label(str_of(request, "name"), &path.child("name")));
    let exactly = field(request, "exactly");
    let first = list(request, "firstAvailable");
    match (exactly.is_some(), first.is_empty()) {
        (false, true) => errs.hand([FieldError::required(
            path,
            "exactly one of `exactly` or `firstAvailable` is required",
        )]),
        (true, false) => errs.hand([FieldError::invalid(
            path,
            Value::Null,
            "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set",
        )]),
        _ => {}
    }
    if let Some(exactly) = exactly {
        let mut part = Errs::default();
        exact_request(exactly, &path.child("exactly"), &mut part);
        errs.absorb(part, first.is_empty());
    }
    if !first.is_empty() {
        first_available(
            first,
            &path.child("firstAvailable"),
            exactly.is_none(),
            errs,
        );
    }
}

fn first_available(subs: &[Value], path: &FieldPath, by_hand: bool, errs: &mut Errs) {
    if let Some(e) = too_many(subs, MAX_SUB_REQUESTS, path) {
        errs.tag([e]);
        return;
    }
    errs.tag(duplicates(
        subs,
        path,
        Some("name"),
        Some(&shapes::SUB_REQUEST),
    ));
    for (i, sub) in subs.iter().enumerate() {
        let mut part = Errs::default();
        sub_request(sub, &path.index(i), &mut part);
        errs.absorb(part, by_hand);
    }
}

/// `validateExactDeviceRequest`.
fn exact_request(request: &Value, path: &FieldPath, errs: &mut Errs) {
    let class = str_of(request, "deviceClassName");
    let at = path.child("deviceClassName");
    errs.hand(match class {
        "" => vec![FieldError::required(&at, "")],
        class => dns_subdomain(class, &at),
    });
    request_details(request, path, errs);
}

/// `validateDeviceSubRequest`: its class name is the tags' to check.
fn sub_request(sub: &Value, path: &FieldPath, errs: &mut Errs) {
    errs.hand(dns_label(str_of(sub, "name"), &path.child("name")));
    let class = str_of(sub, "deviceClassName");
    let at = path.child("deviceClassName");
    errs.tag(match class {
        "" => vec![FieldError::required(&at, "")],
        class => dns_subdomain(class, &at),
    });
    request_details(sub, path, errs);
}

/// What exact requests and sub-requests share: selectors, allocation mode
/// and count, tolerations.
fn request_details(request: &Value, path: &FieldPath, errs: &mut Errs) {
    selectors(
        list(request, "selectors"),
        &path.child("selectors"),
        false,
        errs,
    );
    allocation(request, path, errs);
    let at = path.child("tolerations");
    for (i, t) in list(request, "tolerations").iter().enumerate() {
        toleration(t, &at.index(i), errs);
    }
}

/// `validateDeviceAllocationMode`: a count for `ExactCount`, none for `All`.
fn allocation(request: &Value, path: &FieldPath, errs: &mut Errs) {
    let count = int_of(request, "count").unwrap_or(0);
    let count_path = path.child("count");
    let mode_path = path.child("allocationMode");
    match str_of(request, "allocationMode") {
        "All" if count != 0 => errs.hand([FieldError::invalid(
            &count_path,
            json!(count),
            "must not be specified when allocationMode is 'All'",
        )]),
        "ExactCount" if count <= 0 => errs.hand([FieldError::invalid(
            &count_path,
            json!(count),
            "must be greater than zero",
        )]),
        "All" | "ExactCount" => {}
        // Only the handwritten rule rejects an empty mode (defaulting fills it).
        "" => errs.hand([FieldError::not_supported(&mode_path, json!(""), &MODES)]),
        mode => errs.tag([FieldError::not_supported(&mode_path, json!(mode), &MODES)]),
    }
}

/// `validateSelectorSlice`: each a CEL selector; `stored` selectors (a
/// DeviceClass's unchanged ones) are not checked again. CEL expressions are
/// not compiled here, only their length is checked.
fn selectors(items: &[Value], path: &FieldPath, stored: bool, errs: &mut Errs) {
    if let Some(e) = too_many(items, MAX_ITEMS, path) {
        errs.tag([e]);
        return;
    }
    for (i, selector) in items.iter().enumerate() {
        let at = path.index(i).child("cel");
        let Some(cel) = field(selector, "cel") else {
            errs.hand([FieldError::required(&at, "")]);
            continue;
        };
        if !stored && str_of(cel, "expression").len() > CEL_MAX_LENGTH {
            errs.hand([FieldError::too_long(
                &at.child("expression"),
                CEL_MAX_LENGTH,
            )]);
        }
    }
}

/// `validateDeviceConstraint`: request references, and one attribute.
fn constraint(c: &Value, path: &FieldPath, names: &RequestNames, errs: &mut Errs) {
    request_refs(list(c, "requests"), &path.child("requests"), names, errs);
    let (matching, distinct) = (field(c, "matchAttribute"), field(c, "distinctAttribute"));
    for (key, name) in [
        ("matchAttribute", matching),
        ("distinctAttribute", distinct),
    ] {
        if let Some(name) = name {
            errs.tag(fully_qualified_name(string_of(name), &path.child(key)));
        }
    }
    if matching.is_none() && distinct.is_none() {
        errs.hand([FieldError::required(
            path,
            "exactly one of \"matchAttribute\" or \"distinctAttribute\" is required, but multiple fields are set",
        )]);
    }
}

/// `validateDeviceClaimConfiguration`.
fn claim_config(c: &Value, path: &FieldPath, names: &RequestNames, errs: &mut Errs) {
    request_refs(list(c, "requests"), &path.child("requests"), names, errs);
    device_configuration(c, path, false, errs);
}

/// A list of request references: at most 32, each known, no repeats.
fn request_refs(refs: &[Value], path: &FieldPath, names: &RequestNames, errs: &mut Errs) {
    if let Some(e) = too_many(refs, MAX_ITEMS, path) {
        errs.tag([e]);
        return;
    }
    for (i, name) in refs.iter().enumerate() {
        errs.hand(request_ref(string_of(name), &path.index(i), names));
    }
    errs.tag(duplicates(refs, path, None, None));
}

/// `validateRequestNameRef`: `request` or `request/subrequest` of this claim.
fn request_ref(name: &str, path: &FieldPath, names: &RequestNames) -> ErrorList {
    let unknown = || FieldError::invalid(path, json!(name), REQUEST_REF);
    let segments: Vec<&str> = name.split('/').collect();
    if segments.len() > 2 {
        return vec![unknown()];
    }
    let mut errs: ErrorList = segments.iter().flat_map(|s| dns_label(s, path)).collect();
    if !names.has(&segments) {
        errs.push(unknown());
    }
    errs
}

/// `validateDeviceConfiguration`: opaque, driver-specific parameters.
fn device_configuration(config: &Value, path: &FieldPath, stored: bool, errs: &mut Errs) {
    let at = path.child("opaque");
    let Some(opaque) = field(config, "opaque") else {
        errs.hand([FieldError::required(&at, "")]);
        return;
    };
    errs.tag(driver_name_tagged(
        str_of(opaque, "driver"),
        &at.child("driver"),
    ));
    errs.hand(raw_object(
        field(opaque, "parameters"),
        &at.child("parameters"),
        stored,
    ));
}

/// `validateRawExtension`: a JSON object of at most 10 KiB (the limit only
/// for new parameters; the length is of the compact JSON here).
fn raw_object(value: Option<&Value>, path: &FieldPath, stored: bool) -> ErrorList {
    let Some(value) = value else {
        return vec![FieldError::required(path, "")];
    };
    if !stored && value.to_string().len() > OPAQUE_PARAMETERS_MAX_LENGTH {
        return vec![FieldError::too_long(path, OPAQUE_PARAMETERS_MAX_LENGTH)];
    }
    if value.is_object() {
        return ErrorList::new();
    }
    vec![FieldError::invalid(
        path,
        json!("<value omitted>"),
        "must be a valid JSON object",
    )]
}

/// The claim's request names, with their sub-request names.
struct RequestNames<'a>(Vec<(&'a str, Vec<&'a str>)>);

impl<'a> RequestNames<'a> {
    fn of(requests: &'a [Value]) -> Self {
        RequestNames(
            requests
                .iter()
                .map(|r| {
                    let subs = list(r, "firstAvailable").iter();
                    (str_of(r, "name"), subs.map(|s| str_of(s, "name")).collect())
                })
                .collect(),
        )
    }

    /// Whether `request` or `request/sub` names one.
    fn has(&self, segments: &[&str]) -> bool {
        let Some((_, subs)) = self.0.iter().find(|(name, _)| *name == segments[0]) else {
            return false;
        };
        match segments {
            [_] => true,
            [_, sub] => subs.contains(sub),
            _ => false,
        }
    }
}

// ---------------------------------------------------------------------------
// DeviceClass

/// The rule of DeviceClass names (a DNS subdomain): the tags' since 1.37, so
/// it is reported after the spec's handwritten errors. `None` for a
/// `generateName`, which the store checks as usual.
pub(in super::super) fn device_class_name(name: &str, prefix: bool) -> Option<Vec<String>> {
    (!prefix && !name.is_empty()).then(Vec::new)
}

/// `ValidateDeviceClass` (the name among the tags' errors).
pub(in super::super) fn device_class(obj: &DynamicObject) -> ErrorList {
    device_class_spec(obj, None)
}

/// `ValidateDeviceClassUpdate`: unchanged selectors and configuration are
/// not checked again.
pub(in super::super) fn device_class_update(new: &DynamicObject, old: &DynamicObject) -> ErrorList {
    device_class_spec(new, Some(old))
}

fn device_class_spec(obj: &DynamicObject, old: Option<&DynamicObject>) -> ErrorList {
    let mut errs = Errs::default();
    let name = obj.metadata.name.as_str();
    if old.is_none() && !name.is_empty() {
        let at = FieldPath::new("metadata").child("name");
        errs.tag(invalid_each(&at, name, is_dns1123_subdomain(name)));
    }
    let (spec, path) = (spec_of(obj), FieldPath::new("spec"));
    let unchanged = |key| old.is_some_and(|o| semantic_eq(spec.get(key), spec_of(o).get(key)));
    let at = path.child("selectors");
    selectors(
        list(spec, "selectors"),
        &at,
        unchanged("selectors"),
        &mut errs,
    );
    let configs = list(spec, "config");
    let at = path.child("config");
    match too_many(configs, MAX_ITEMS, &at) {
        Some(e) => errs.tag([e]),
        None => {
            for (i, config) in configs.iter().enumerate() {
                device_configuration(config, &at.index(i), unchanged("config"), &mut errs);
            }
        }
    }
    if let Some(name) = field(spec, "extendedResourceName") {
        let at = path.child("extendedResourceName");
        errs.tag(extended_resource_name(string_of(name), &at));
    }
    errs.into_list()
}

/// The tags' `k8s-extended-resource-name`: domain-prefixed, not in
/// `kubernetes.io`, a label key once prefixed with `requests.` (as quotas
/// name it).
fn extended_resource_name(name: &str, path: &FieldPath) -> ErrorList {
    let invalid = |msg: &str| FieldError::invalid(path, json!(name), msg);
    let mut errs = ErrorList::new();
    if !name.contains('/') {
        errs.push(invalid(
            "a name must be a domain-prefixed path, such as 'example.com/my-prop'",
        ));
    } else if name.contains("kubernetes.io/") {
        errs.push(invalid("must not have \"kubernetes.io/\" domain"));
    }
    if name.starts_with("requests.") {
        errs.push(invalid("must not have \"requests.\" prefix"));
    }
    let quota_name = format!("requests.{name}");
    errs.extend(is_qualified_name(&quota_name).iter().map(|m| invalid(m)));
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::typed_objects::{typed, with_typed};

    fn messages(errs: ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn requests_default_to_one_device() {
        let mut claim = json!({"spec": {"devices": {"requests": [
            {"name": "a", "exactly": {"deviceClassName": "c", "tolerations": [{"key": "k"}]}},
            {"name": "b", "firstAvailable": [{"name": "s", "allocationMode": "All"}]},
        ]}}});
        with_typed(&mut claim, default_claim);
        assert_eq!(
            claim.pointer("/spec/devices/requests/0/exactly"),
            Some(
                &json!({"deviceClassName": "c", "allocationMode": "ExactCount", "count": 1,
                "tolerations": [{"key": "k", "operator": "Equal"}]})
            )
        );
        assert_eq!(
            claim.pointer("/spec/devices/requests/1/firstAvailable/0"),
            Some(&json!({"name": "s", "allocationMode": "All"}))
        );
    }

    #[test]
    fn handwritten_errors_come_before_the_tags() {
        let mut claim = json!({"spec": {"devices": {"requests": [
            {"name": "a", "firstAvailable": [
                {"name": "s", "deviceClassName": "x"}, {"name": "s"}, {"name": "", "deviceClassName": "Q"}
            ]},
        ]}}});
        with_typed(&mut claim, default_claim);
        let errs = messages(resource_claim(&typed(&claim)));
        assert!(
            errs[0].starts_with(
                r#"spec.devices.requests[0].firstAvailable[2].name: Invalid value: """#
            )
        );
        assert_eq!(
            errs[1],
            r#"spec.devices.requests[0].firstAvailable[1]: Duplicate value: {"name":"s","deviceClassName":"","allocationMode":"ExactCount","count":1}"#
        );
        assert_eq!(
            errs[2],
            "spec.devices.requests[0].firstAvailable[1].deviceClassName: Required value"
        );
        assert_eq!(errs.len(), 4);
    }

    #[test]
    fn request_references() {
        let requests = [json!({"name": "a", "firstAvailable": [{"name": "s"}]})];
        let names = RequestNames::of(&requests);
        let p = FieldPath::new("r");
        assert!(request_ref("a", &p, &names).is_empty());
        assert!(request_ref("a/s", &p, &names).is_empty());
        assert_eq!(request_ref("a/t", &p, &names).len(), 1);
        assert_eq!(
            messages(request_ref("a/b/c", &p, &names)),
            [format!(r#"r: Invalid value: "a/b/c": {REQUEST_REF}"#)]
        );
    }
}
