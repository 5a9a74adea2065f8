//! ResourceSlices: a driver's pool of devices (or of shared counters), the
//! nodes that reach them, and each device's attributes, capacity, taints,
//! counter consumption and binding conditions. Also the removal of fields
//! whose feature gates are off in 1.37, for slices and claims alike.

use apimachinery::DynamicObject;
use apimachinery::gofmt::quote;
use apimachinery::validation::{
    FIELD_IMMUTABLE_ERROR_MSG, is_qualified_name, is_valid_label_value,
};
use apimachinery::{ErrorList, FieldError, FieldPath};
use serde_json::{Map, Value, json};

use super::super::gojson::{self, Form};
use super::super::json_fields::{field, immutable, list, object, semantic_eq, spec_of, str_of};
use super::taints::{default_taint, taint};
use super::{
    Errs, dns_label, dns_subdomain, driver_name, duplicates, invalid_each, pool_name,
    qualified_name, shapes, string_of, too_many,
};

const MAX_DEVICES: usize = 128;
/// With taints or counter consumption, a slice holds fewer devices.
const MAX_DEVICES_ADVANCED: usize = 64;
const MAX_COUNTER_SETS: usize = 8;
const MAX_COUNTERS: usize = 32;
const MAX_CONSUMPTIONS: usize = 2;
const MAX_TAINTS: usize = 16;
const MAX_ATTRIBUTES_AND_CAPACITIES: usize = 32;
const MAX_ATTRIBUTE_VALUES: usize = 48;
const MAX_BINDING_CONDITIONS: usize = 4;
const ATTRIBUTE_MAX_LENGTH: usize = 64;
/// Attribute and capacity names in paths are cut to this many bytes.
const KEY_PATH_MAX_LENGTH: usize = 63 + 1 + 32;
const NODE_SELECTION: &str =
    "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required";
const DEVICE_NODE_SELECTION: &str = "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec";
/// An attribute's members, in the union's order.
const ATTRIBUTE_KINDS: [&str; 8] = [
    "int", "bool", "string", "version", "ints", "bools", "strings", "versions",
];
const ATTRIBUTE_UNION: &str =
    "`int`, `bool`, `string`, `version`, `ints`, `bools`, `strings`, `versions`";

// ---------------------------------------------------------------------------
// Defaults, warnings and dropped fields

/// `SetObjectDefaults_ResourceSlice`: each device taint's `timeAdded`.
pub(in super::super) fn default_slice(obj: &mut DynamicObject) {
    let devices = obj
        .pointer_mut("/spec/devices")
        .and_then(Value::as_array_mut);
    for device in devices.into_iter().flatten() {
        let taints = device.get_mut("taints").and_then(Value::as_array_mut);
        for t in taints
            .into_iter()
            .flatten()
            .filter_map(Value::as_object_mut)
        {
            default_taint(t);
        }
    }
}

/// The strategy's warnings: driver names should be lowercase.
pub(in super::super) fn slice_warnings(obj: &DynamicObject) -> Vec<String> {
    let driver = str_of(spec_of(obj), "driver");
    if driver == driver.to_lowercase() {
        return Vec::new();
    }
    vec![format!(
        "spec.driver: driver names should be lowercase; {} contains uppercase characters",
        quote(driver)
    )]
}

/// The spec's fields whose feature gates are off in 1.37, one group per gate
/// (`DRAPartitionableDevicesType`, `DRAOptionalNodeOperations`,
/// `DRANodeAllocatableResources`, `DRADeviceCompatibilityGroups`,
/// `DRAListTypeAttributes`).
const ALPHA_SLICE_FIELDS: [&[&str]; 5] = [
    &["/partitionTypeAttribute"],
    &["/skipNodeOperations"],
    &["/devices/*/nodeAllocatableResources"],
    &["/devices/*/consumesCounters/*/compatibilityGroups"],
    &[
        "/devices/*/attributes/*/bools",
        "/devices/*/attributes/*/ints",
        "/devices/*/attributes/*/strings",
        "/devices/*/attributes/*/versions",
    ],
];

/// `dropDisabledFields`: each gate's fields, unless the stored slice (`old`)
/// uses them already.
pub(in super::super) fn drop_alpha_slice_fields(new: &mut Value, old: Option<&Value>) {
    for group in ALPHA_SLICE_FIELDS {
        let in_use = old
            .and_then(|o| o.get("spec"))
            .is_some_and(|s| any_set(s, group));
        if let (false, Some(spec)) = (in_use, new.get_mut("spec")) {
            remove_all(spec, group);
        }
    }
}

/// Whether any of `patterns` (`/a/*/b`: `*` is every item or member) is set
/// under `root`.
pub(super) fn any_set(root: &Value, patterns: &[&str]) -> bool {
    patterns.iter().any(|p| set_at(root, &segments(p)))
}

/// Removes what `patterns` name under `root`.
pub(super) fn remove_all(root: &mut Value, patterns: &[&str]) {
    for p in patterns {
        remove_at(root, &segments(p));
    }
}

fn segments(pattern: &str) -> Vec<&str> {
    pattern.split('/').filter(|s| !s.is_empty()).collect()
}

fn children(v: &Value) -> Box<dyn Iterator<Item = &Value> + '_> {
    match v {
        Value::Array(items) => Box::new(items.iter()),
        Value::Object(map) => Box::new(map.values()),
        _ => Box::new(std::iter::empty()),
    }
}

fn set_at(v: &Value, path: &[&str]) -> bool {
    match path {
        [] => !v.is_null(),
        ["*", rest @ ..] => children(v).any(|c| set_at(c, rest)),
        [key, rest @ ..] => v.get(key).is_some_and(|c| set_at(c, rest)),
    }
}

fn remove_at(v: &mut Value, path: &[&str]) {
    match path {
        [] => {}
        [key] => {
            if let Some(map) = v.as_object_mut() {
                map.remove(*key);
            }
        }
        ["*", rest @ ..] => match v {
            Value::Array(items) => items.iter_mut().for_each(|c| remove_at(c, rest)),
            Value::Object(map) => map.values_mut().for_each(|c| remove_at(c, rest)),
            _ => {}
        },
        [key, rest @ ..] => {
            if let Some(child) = v.get_mut(key) {
                remove_at(child, rest);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Validation

/// `ValidateResourceSlice` (metadata is the store's).
pub(in super::super) fn resource_slice(obj: &DynamicObject) -> ErrorList {
    slice_spec(spec_of(obj), None)
}

/// `ValidateResourceSliceUpdate`: the create rules (unchanged devices'
/// capacity and taints not checked again), and the driver, pool name and
/// node name never change.
pub(in super::super) fn resource_slice_update(
    new: &DynamicObject,
    old: &DynamicObject,
) -> ErrorList {
    slice_spec(spec_of(new), Some(spec_of(old)))
}

fn slice_spec(spec: &Value, old: Option<&Value>) -> ErrorList {
    let mut errs = Errs::default();
    let path = FieldPath::new("spec");
    errs.hand(driver_name(str_of(spec, "driver"), &path.child("driver")));
    errs.hand(pool(
        spec.get("pool").unwrap_or(&Value::Null),
        &path.child("pool"),
    ));
    if let Some(old) = old {
        errs.hand(immutables(spec, old, &path));
    }
    errs.hand(node_selection(spec, &path));
    if field(spec, "sharedCounters").is_some() && field(spec, "devices").is_some() {
        errs.hand([FieldError::invalid(
            &path,
            json!(""),
            "only one of `sharedCounters` or `devices` is allowed",
        )]);
    }
    devices(spec, old, &path.child("devices"), &mut errs);
    counter_sets(
        list(spec, "sharedCounters"),
        &path.child("sharedCounters"),
        &mut errs,
    );
    errs.into_list()
}

/// `validateResourcePool`.
fn pool(pool: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = pool_name(str_of(pool, "name"), &path.child("name"));
    let count = pool
        .get("resourceSliceCount")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if count <= 0 {
        errs.push(FieldError::invalid(
            &path.child("resourceSliceCount"),
            json!(count),
            "must be greater than zero",
        ));
    }
    let generation = pool.get("generation").and_then(Value::as_i64).unwrap_or(0);
    if generation < 0 {
        errs.push(FieldError::invalid(
            &path.child("generation"),
            json!(generation),
            "must be greater than or equal to zero",
        ));
    }
    errs
}

fn immutables(spec: &Value, old: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let (pool, old_pool) = (
        spec.get("pool").unwrap_or(&Value::Null),
        old.get("pool").unwrap_or(&Value::Null),
    );
    immutable(pool, old_pool, "name", &path.child("pool"), &mut errs);
    immutable(spec, old, "driver", path, &mut errs);
    if spec.get("nodeName") != old.get("nodeName") {
        let value = field(spec, "nodeName").cloned().unwrap_or(Value::Null);
        errs.push(FieldError::invalid(
            &path.child("nodeName"),
            value,
            FIELD_IMMUTABLE_ERROR_MSG,
        ));
    }
    errs
}

/// Exactly one way to reach nodes: `nodeName`, `nodeSelector`, `allNodes`
/// or `perDeviceNodeSelection`.
fn node_selection(spec: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut set = Vec::new();
    if let Some(name) = field(spec, "nodeName") {
        errs.extend(node_name(
            string_of(name),
            &path.child("nodeName"),
            &mut set,
        ));
    }
    if let Some(selector) = field(spec, "nodeSelector") {
        set.push("`nodeSelector`");
        let at = path.child("nodeSelector");
        errs.extend(node_selector(selector, &at));
        let terms = selector.get("nodeSelectorTerms");
        if terms.and_then(Value::as_array).map_or(0, Vec::len) != 1 {
            let shown = gojson::render(terms, &shapes::NODE_SELECTOR_TERMS, Form::Internal);
            errs.push(FieldError::invalid_go(
                &at.child("nodeSelectorTerms"),
                &shown,
                "must have exactly one node selector term",
            ));
        }
    }
    for key in ["allNodes", "perDeviceNodeSelection"] {
        errs.extend(true_or_unset(spec, key, path, &mut set));
    }
    let many = format!("{NODE_SELECTION}, but multiple fields are set");
    errs.extend(exactly_one(&set, path, NODE_SELECTION, &many));
    errs
}

/// A node name that is set must not be empty.
fn node_name(name: &str, path: &FieldPath, set: &mut Vec<&str>) -> ErrorList {
    if name.is_empty() {
        return vec![FieldError::invalid(
            path,
            json!(""),
            "must be either unset or set to a non-empty string",
        )];
    }
    set.push("`nodeName`");
    dns_subdomain(name, path)
}

/// A flag that is set must be `true`.
fn true_or_unset(v: &Value, key: &str, path: &FieldPath, set: &mut Vec<&str>) -> ErrorList {
    match v.get(key).and_then(Value::as_bool) {
        Some(true) => {
            set.push(match key {
                "allNodes" => "`allNodes`",
                _ => "`perDeviceNodeSelection`",
            });
            ErrorList::new()
        }
        Some(false) => vec![FieldError::invalid(
            &path.child(key),
            json!(false),
            "must be either unset or set to true",
        )],
        None => ErrorList::new(),
    }
}

/// None set: `Required`; several: `Invalid` with their names (`many`).
fn exactly_one(set: &[&str], path: &FieldPath, rule: &str, many: &str) -> ErrorList {
    match set.len() {
        0 => vec![FieldError::required(path, rule)],
        1 => ErrorList::new(),
        _ => vec![FieldError::invalid(
            path,
            json!(format!("{{{}}}", set.join(", "))),
            many,
        )],
    }
}

/// `ValidateNodeSelector` (core): at least one term; each requirement's
/// operator, key and values.
fn node_selector(selector: &Value, path: &FieldPath) -> ErrorList {
    let at = path.child("nodeSelectorTerms");
    let terms = list(selector, "nodeSelectorTerms");
    if terms.is_empty() {
        return vec![FieldError::required(
            &at,
            "must have at least one node selector term",
        )];
    }
    let mut errs = ErrorList::new();
    for (i, term) in terms.iter().enumerate() {
        let term_path = at.index(i);
        for (j, req) in list(term, "matchExpressions").iter().enumerate() {
            errs.extend(label_requirement(
                req,
                &term_path.child("matchExpressions").index(j),
            ));
        }
        for (j, req) in list(term, "matchFields").iter().enumerate() {
            errs.extend(field_requirement(
                req,
                &term_path.child("matchFields").index(j),
            ));
        }
    }
    errs
}

/// `ValidateNodeSelectorRequirement`.
fn label_requirement(req: &Value, path: &FieldPath) -> ErrorList {
    let values = list(req, "values");
    let at = path.child("values");
    let mut errs = ErrorList::new();
    match str_of(req, "operator") {
        "In" | "NotIn" if values.is_empty() => errs.push(FieldError::required(
            &at,
            "must be specified when `operator` is 'In' or 'NotIn'",
        )),
        "Exists" | "DoesNotExist" if !values.is_empty() => errs.push(FieldError::forbidden(
            &at,
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        )),
        "Gt" | "Lt" if values.len() != 1 => errs.push(FieldError::required(
            &at,
            "must be specified single value when `operator` is 'Lt' or 'Gt'",
        )),
        "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => {}
        op => errs.push(FieldError::invalid(
            &path.child("operator"),
            json!(op),
            "not a valid selector operator",
        )),
    }
    let key = str_of(req, "key");
    errs.extend(invalid_each(
        &path.child("key"),
        key,
        is_qualified_name(key),
    ));
    for (i, v) in values.iter().enumerate() {
        let v = string_of(v);
        errs.extend(invalid_each(&at.index(i), v, is_valid_label_value(v)));
    }
    errs
}

/// `ValidateNodeFieldSelectorRequirement`: only `metadata.name`, one value.
fn field_requirement(req: &Value, path: &FieldPath) -> ErrorList {
    let values = list(req, "values");
    let mut errs = ErrorList::new();
    match str_of(req, "operator") {
        "In" | "NotIn" if values.len() != 1 => errs.push(FieldError::required(
            &path.child("values"),
            "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
        )),
        "In" | "NotIn" => {}
        op => errs.push(FieldError::invalid(
            &path.child("operator"),
            json!(op),
            "not a valid selector operator",
        )),
    }
    let key = str_of(req, "key");
    if key != "metadata.name" {
        errs.push(FieldError::invalid(
            &path.child("key"),
            json!(key),
            "not a valid field selector key",
        ));
        return errs;
    }
    for (i, v) in values.iter().enumerate() {
        errs.extend(dns_subdomain(string_of(v), &path.child("values").index(i)));
    }
    errs
}

/// The devices: at most 128 (64 with taints or counters), each valid, names
/// unique.
fn devices(spec: &Value, old: Option<&Value>, path: &FieldPath, errs: &mut Errs) {
    let devices = list(spec, "devices");
    let advanced = devices.iter().any(|d| {
        !list(d, "taints").is_empty()
            || !list(d, "consumesCounters").is_empty()
            || has_list_attributes(d)
    });
    let max = if advanced {
        MAX_DEVICES_ADVANCED
    } else {
        MAX_DEVICES
    };
    if let Some(e) = too_many(devices, max, path) {
        errs.hand([e]);
        return;
    }
    let per_device = spec.get("perDeviceNodeSelection").and_then(Value::as_bool) == Some(true);
    let old_devices = old.map_or(&[][..], |o| list(o, "devices"));
    for (i, d) in devices.iter().enumerate() {
        let name = str_of(d, "name");
        let old_device = old_devices.iter().find(|o| str_of(o, "name") == name);
        device(d, old_device, &path.index(i), per_device, errs);
    }
    errs.hand(duplicates(devices, path, Some("name"), None));
}

fn has_list_attributes(device: &Value) -> bool {
    let attrs = object(device, "attributes").into_iter().flatten();
    attrs
        .flat_map(|(_, a)| ATTRIBUTE_KINDS[4..].iter().map(move |k| field(a, k)))
        .any(|v| v.is_some())
}

/// `validateDevice`.
fn device(d: &Value, old: Option<&Value>, path: &FieldPath, per_device: bool, errs: &mut Errs) {
    errs.hand(dns_label(str_of(d, "name"), &path.child("name")));
    let empty = Map::new();
    let attributes = object(d, "attributes").unwrap_or(&empty);
    let capacity = object(d, "capacity").unwrap_or(&empty);
    let total = attributes.len() + capacity.len();
    if total > MAX_ATTRIBUTES_AND_CAPACITIES {
        errs.hand([FieldError::invalid(
            path,
            json!(total),
            &format!(
                "the total number of attributes and capacities must not exceed {MAX_ATTRIBUTES_AND_CAPACITIES}"
            ),
        )]);
    }
    let values = attribute_values(attributes);
    if values > MAX_ATTRIBUTE_VALUES {
        errs.hand([FieldError::invalid(
            path,
            json!(values),
            &format!("the total number of attribute values must not exceed {MAX_ATTRIBUTE_VALUES}"),
        )]);
    }
    let at = path.child("attributes");
    for (key, attribute) in attributes {
        errs.hand(qualified_name(key, &at));
        self::attribute(attribute, &at.key(&cut_key(key)), errs);
    }
    let unchanged = |key| old.is_some_and(|o| semantic_eq(d.get(key), o.get(key)));
    if !unchanged("capacity") {
        errs.hand(capacities(d, capacity, &path.child("capacity")));
    }
    // Handwritten: taints, then counters; tags: counters, then taints.
    let mut taint_errs = Errs::default();
    if !unchanged("taints") {
        taints(list(d, "taints"), &path.child("taints"), &mut taint_errs);
    }
    let mut counter_errs = Errs::default();
    consumptions(
        list(d, "consumesCounters"),
        &path.child("consumesCounters"),
        &mut counter_errs,
    );
    errs.hand(taint_errs.hand);
    errs.hand(counter_errs.hand);
    errs.tag(counter_errs.tags);
    errs.tag(taint_errs.tags);
    errs.hand(device_nodes(d, path, per_device));
    binding_conditions(d, path, errs);
}

/// Attribute values: a list counts its items, anything else one.
fn attribute_values(attributes: &Map<String, Value>) -> usize {
    attributes
        .values()
        .map(|a| {
            let items: usize = ATTRIBUTE_KINDS[4..].iter().map(|k| list(a, k).len()).sum();
            items.max(1)
        })
        .sum()
}

/// `truncateIfTooLong`: a long key shown cut in the middle.
fn cut_key(key: &str) -> String {
    if key.len() <= KEY_PATH_MAX_LENGTH {
        return key.to_string();
    }
    let remaining = KEY_PATH_MAX_LENGTH - 3;
    let head = String::from_utf8_lossy(&key.as_bytes()[..remaining.div_ceil(2)]);
    let tail = String::from_utf8_lossy(&key.as_bytes()[key.len() - remaining / 2..]);
    format!("{head}...{tail}")
}

/// `validateDeviceAttribute`: the string and version rules by hand, exactly
/// one value by the tags' union.
fn attribute(attribute: &Value, path: &FieldPath, errs: &mut Errs) {
    if let Some(s) = field(attribute, "string")
        && string_of(s).len() > ATTRIBUTE_MAX_LENGTH
    {
        errs.hand([FieldError::too_long(
            &path.child("string"),
            ATTRIBUTE_MAX_LENGTH,
        )]);
    }
    if let Some(v) = field(attribute, "version") {
        let v = string_of(v);
        let at = path.child("version");
        if !is_semver(v) {
            errs.hand([FieldError::invalid(
                &at,
                json!(v),
                "must be a string compatible with semver.org spec 2.0.0",
            )]);
        }
        if v.len() > ATTRIBUTE_MAX_LENGTH {
            errs.hand([FieldError::too_long(&at, ATTRIBUTE_MAX_LENGTH)]);
        }
    }
    let set: Vec<&str> = ATTRIBUTE_KINDS
        .into_iter()
        .filter(|k| field(attribute, k).is_some())
        .collect();
    match set.len() {
        0 => errs.tag([FieldError::invalid(
            path,
            json!(""),
            &format!("must specify one of: {ATTRIBUTE_UNION}"),
        )]),
        1 => {}
        _ => errs.tag([FieldError::invalid(
            path,
            json!(format!("{{{}}}", set.join(", "))),
            &format!("must specify exactly one of: {ATTRIBUTE_UNION}"),
        )]),
    }
}

/// Semantic Versioning 2.0.0: `MAJOR.MINOR.PATCH[-PRE][+BUILD]`.
fn is_semver(v: &str) -> bool {
    let (rest, build) = match v.split_once('+') {
        Some((rest, build)) => (rest, Some(build)),
        None => (v, None),
    };
    let (core, pre) = match rest.split_once('-') {
        Some((core, pre)) => (core, Some(pre)),
        None => (rest, None),
    };
    let numeric = |s: &str| {
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'))
    };
    let ident =
        |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    let pre_ok = |s: &str| ident(s) && (numeric(s) || !s.bytes().all(|b| b.is_ascii_digit()));
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts.iter().all(|p| numeric(p))
        && pre.is_none_or(|p| p.split('.').all(pre_ok))
        && build.is_none_or(|b| b.split('.').all(ident))
}

/// Capacity names; request policies only for devices allocated many times
/// (their rules are not checked here).
fn capacities(device: &Value, capacity: &Map<String, Value>, path: &FieldPath) -> ErrorList {
    let multiple = device
        .get("allowMultipleAllocations")
        .and_then(Value::as_bool)
        == Some(true);
    let mut errs = ErrorList::new();
    for (key, value) in capacity {
        errs.extend(qualified_name(key, path));
        if !multiple && field(value, "requestPolicy").is_some() {
            errs.push(FieldError::forbidden(
                &path.key(&cut_key(key)).child("requestPolicy"),
                "allowMultipleAllocations must be true",
            ));
        }
    }
    errs
}

fn taints(items: &[Value], path: &FieldPath, errs: &mut Errs) {
    if let Some(e) = too_many(items, MAX_TAINTS, path) {
        errs.hand([e]);
        return;
    }
    for (i, t) in items.iter().enumerate() {
        taint(t, None, &path.index(i), errs);
    }
}

/// `consumesCounters`: at most two, counter sets unique, each valid.
fn consumptions(items: &[Value], path: &FieldPath, errs: &mut Errs) {
    if let Some(e) = too_many(items, MAX_CONSUMPTIONS, path) {
        errs.tag([e]);
        return;
    }
    errs.tag(duplicates(
        items,
        path,
        Some("counterSet"),
        Some(&shapes::COUNTER_CONSUMPTION),
    ));
    for (i, c) in items.iter().enumerate() {
        let at = path.index(i);
        errs.tag(counter_name(
            str_of(c, "counterSet"),
            &at.child("counterSet"),
        ));
        counters(c, &at.child("counters"), errs);
    }
}

/// `sharedCounters`: at most eight sets, names unique, each valid.
fn counter_sets(items: &[Value], path: &FieldPath, errs: &mut Errs) {
    if let Some(e) = too_many(items, MAX_COUNTER_SETS, path) {
        errs.tag([e]);
        return;
    }
    errs.tag(duplicates(
        items,
        path,
        Some("name"),
        Some(&shapes::COUNTER_SET),
    ));
    for (i, c) in items.iter().enumerate() {
        let at = path.index(i);
        errs.tag(counter_name(str_of(c, "name"), &at.child("name")));
        counters(c, &at.child("counters"), errs);
    }
}

/// A counter set's or counter's name: required, a DNS label.
fn counter_name(name: &str, path: &FieldPath) -> ErrorList {
    match name {
        "" => vec![FieldError::required(path, "")],
        name => dns_label(name, path),
    }
}

/// A non-empty map of at most 32 counters named by DNS labels.
fn counters(owner: &Value, path: &FieldPath, errs: &mut Errs) {
    let Some(counters) = object(owner, "counters").filter(|c| !c.is_empty()) else {
        errs.tag([FieldError::required(path, "")]);
        return;
    };
    if counters.len() > MAX_COUNTERS {
        errs.hand([FieldError::too_many(path, counters.len(), MAX_COUNTERS)]);
        return;
    }
    for key in counters.keys() {
        errs.tag(dns_label(key, path));
    }
}

/// A device's own nodes, allowed (and then required) only with
/// `perDeviceNodeSelection`.
fn device_nodes(d: &Value, path: &FieldPath, per_device: bool) -> ErrorList {
    let keys = ["nodeName", "nodeSelector", "allNodes"];
    if !per_device {
        if keys.iter().any(|k| field(d, k).is_some()) {
            return vec![FieldError::invalid(
                path,
                Value::Null,
                "`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec",
            )];
        }
        return ErrorList::new();
    }
    let mut errs = ErrorList::new();
    let mut set = Vec::new();
    if let Some(name) = field(d, "nodeName") {
        match string_of(name) {
            "" => errs.push(FieldError::invalid(
                &path.child("nodeName"),
                json!(""),
                "must not be empty",
            )),
            name => {
                set.push("`nodeName`");
                errs.extend(dns_subdomain(name, &path.child("nodeName")));
            }
        }
    }
    if let Some(selector) = field(d, "nodeSelector") {
        set.push("`nodeSelector`");
        errs.extend(node_selector(selector, &path.child("nodeSelector")));
    }
    errs.extend(true_or_unset(d, "allNodes", path, &mut set));
    errs.extend(exactly_one(
        &set,
        path,
        DEVICE_NODE_SELECTION,
        DEVICE_NODE_SELECTION,
    ));
    errs
}

/// `validateDeviceBindingParameters`: at most four of each, label names,
/// no repeats, no overlap, and both lists or neither.
fn binding_conditions(d: &Value, path: &FieldPath, errs: &mut Errs) {
    let lists = ["bindingConditions", "bindingFailureConditions"];
    for key in lists {
        let (items, at) = (list(d, key), path.child(key));
        match too_many(items, MAX_BINDING_CONDITIONS, &at) {
            Some(e) => errs.tag([e]),
            None => {
                for (i, c) in items.iter().enumerate() {
                    let c = string_of(c);
                    errs.hand(invalid_each(&at.index(i), c, is_qualified_name(c)));
                }
            }
        }
    }
    let (conditions, failures) = (list(d, lists[0]), list(d, lists[1]));
    let (at, failure_at) = (path.child(lists[0]), path.child(lists[1]));
    errs.hand(duplicates(conditions, &at, None, None));
    for (i, f) in failures.iter().enumerate() {
        if failures[..i].contains(f) {
            errs.hand([FieldError::duplicate(&failure_at.index(i), f.clone())]);
        }
        if conditions.contains(f) {
            errs.hand([FieldError::invalid(
                &failure_at.index(i),
                f.clone(),
                "bindingFailureConditions must not overlap with bindingConditions",
            )]);
        }
    }
    let shown = |key| field(d, key).cloned().unwrap_or(Value::Null);
    if conditions.is_empty() && !failures.is_empty() {
        errs.hand([FieldError::invalid(
            &at,
            shown(lists[0]),
            "bindingConditions are required to use bindingFailureConditions",
        )]);
    }
    if failures.is_empty() && !conditions.is_empty() {
        errs.hand([FieldError::invalid(
            &failure_at,
            shown(lists[1]),
            "bindingFailureConditions are required to use bindingConditions",
        )]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn semantic_versions() {
        for ok in ["1.0.0", "0.1.2-alpha.1+build.5", "10.20.30-0a"] {
            assert!(is_semver(ok), "{ok}");
        }
        for bad in ["1.0", "01.0.0", "1.0.0-01", "1.0.0+", "v1.0.0", "1.0.0-"] {
            assert!(!is_semver(bad), "{bad}");
        }
    }

    #[test]
    fn alpha_fields_dropped_unless_stored() {
        let mut new = json!({"spec": {"skipNodeOperations": ["All"], "devices": [
            {"name": "d", "attributes": {"a": {"ints": [1]}, "b": {"int": 1}}}
        ]}});
        drop_alpha_slice_fields(&mut new, None);
        assert_eq!(
            new,
            json!({"spec": {"devices": [{"name": "d", "attributes": {"a": {}, "b": {"int": 1}}}]}})
        );
        let old = json!({"spec": {"skipNodeOperations": ["All"]}});
        let mut kept = old.clone();
        drop_alpha_slice_fields(&mut kept, Some(&old));
        assert_eq!(kept, old);
    }

    #[test]
    fn node_selection_as_upstream() {
        let spec = json!({"nodeName": "n", "allNodes": true, "nodeSelector": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "a", "operator": "In", "values": ["b"]}]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["x"]}]}
        ]}});
        let errs: Vec<String> = node_selection(&spec, &FieldPath::new("spec"))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errs,
            [
                r#"spec.nodeSelector.nodeSelectorTerms: Invalid value: [{"MatchExpressions":[{"Key":"a","Operator":"In","Values":["b"]}],"MatchFields":null},{"MatchExpressions":null,"MatchFields":[{"Key":"metadata.name","Operator":"In","Values":["x"]}]}]: must have exactly one node selector term"#,
                "spec: Invalid value: \"{`nodeName`, `nodeSelector`, `allNodes`}\": exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set",
            ]
        );
    }
}
