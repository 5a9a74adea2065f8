//! Name and metadata validation with kube-apiserver 1.32's exact messages
//! (`k8s.io/apimachinery/pkg/util/validation` and `.../pkg/api/validation`):
//! clients and users grep for these texts, so they are reproduced verbatim.

use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};

use crate::field::{ErrorList, FieldError, FieldPath, LazyPath};
use crate::object_meta::{ManagedFieldsEntry, ObjectMeta, OwnerReference, ZERO_TIME};

mod pattern;

/// A name validator in upstream's `ValidateNameFunc` shape: `prefix` is true
/// when the value is a `generateName` that will get a random suffix.
pub type NameValidator = fn(&str, bool) -> Vec<String>;

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_MAX: usize = 63;

const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
/// Longest label value.
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
/// Longest RFC 1123 label.
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;

const DNS1123_SUBDOMAIN_FMT: &str =
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_CASELESS_ERR: &str = "an RFC 1123 subdomain must consist of alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
/// Longest RFC 1123 subdomain.
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;

const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
/// Longest RFC 1035 label.
pub const DNS1035_LABEL_MAX_LENGTH: usize = 63;

const C_IDENTIFIER_FMT: &str = "[A-Za-z_][A-Za-z0-9_]*";
const C_IDENTIFIER_ERR: &str = "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric characters or '_'";

const CONFIG_MAP_KEY_FMT: &str = "[-._a-zA-Z0-9]+";
const CONFIG_MAP_KEY_ERR: &str =
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";

/// Upstream's `FieldImmutableErrorMsg`.
pub const FIELD_IMMUTABLE_ERROR_MSG: &str = "field is immutable";
/// Upstream's `IsNegativeErrorMsg`.
pub const IS_NEGATIVE_ERROR_MSG: &str = "must be greater than or equal to 0";
/// Upper bound on the summed bytes of all annotation keys and values.
pub const TOTAL_ANNOTATION_SIZE_LIMIT_B: usize = 256 * 1024;
const FIELD_MANAGER_MAX_LENGTH: usize = 128;
const MAX_SUBRESOURCE_NAME_LENGTH: usize = 256;
const FINALIZER_ORPHAN_DEPENDENTS: &str = "orphan";
const FINALIZER_DELETE_DEPENDENTS: &str = "foregroundDeletion";

// ---------------------------------------------------------------------------
// Message builders (upstream's MaxLenError, RegexError, EmptyError, ...).

/// `must be no more than N characters` (upstream counts bytes despite the wording).
pub fn max_len_error(length: usize) -> String {
    format!("must be no more than {length} characters")
}

/// `<msg> (e.g. 'a',  or 'b', regex used for validation is '<fmt>')`; the
/// doubled space between examples is upstream's and is kept on purpose.
pub fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let examples: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{msg} (e.g. {}regex used for validation is '{fmt}')",
        examples.join(" or ")
    )
}

/// `must be non-empty`.
pub fn empty_error() -> &'static str {
    "must be non-empty"
}

/// `must be between LO and HI, inclusive`.
pub fn inclusive_range_error(lo: i64, hi: i64) -> String {
    format!("must be between {lo} and {hi}, inclusive")
}

// ---------------------------------------------------------------------------
// String format checks, each returning upstream's list of messages.

/// A "qualified name": `[prefix/]name` as used by label and annotation keys.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let name = match value.split_once('/') {
        None => value,
        Some((prefix, name)) if !name.contains('/') => {
            if prefix.is_empty() {
                errs.push(format!("prefix part {}", empty_error()));
            } else {
                let msgs = is_dns1123_subdomain(prefix);
                errs.extend(msgs.into_iter().map(|m| format!("prefix part {m}")));
            }
            name
        }
        Some(_) => {
            let re = regex_error(
                QUALIFIED_NAME_ERR,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"],
            );
            errs.push(format!(
                "a qualified name {re} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push(format!("name part {}", empty_error()));
    } else if name.len() > QUALIFIED_NAME_MAX {
        errs.push(format!("name part {}", max_len_error(QUALIFIED_NAME_MAX)));
    }
    if !pattern::qualified_name(name) {
        let re = regex_error(
            QUALIFIED_NAME_ERR,
            QUALIFIED_NAME_FMT,
            &["MyName", "my.name", "123-abc"],
        );
        errs.push(format!("name part {re}"));
    }
    errs
}

/// A label value: empty, or up to 63 alphanumerics with inner `-_.`.
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(max_len_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !pattern::label_value(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// An RFC 1123 label (most namespaced object names that end up in DNS).
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !pattern::dns1123_label(value) {
        if pattern::dns1123_subdomain(value) {
            // A valid subdomain that is no label: it can only be the dots.
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_ERR,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// An RFC 1123 subdomain (the default rule for object names).
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !pattern::dns1123_subdomain(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// An RFC 1123 subdomain in any letter case (upstream's
/// `IsDNS1123SubdomainCaseless`: DRA driver names in declarative validation).
pub fn is_dns1123_subdomain_caseless(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !pattern::dns1123_subdomain(&value.to_ascii_lowercase()) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_CASELESS_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["Example.com"],
        ));
    }
    errs
}

/// An RFC 1035 label (service names: must start with a letter).
pub fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1035_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1035_LABEL_MAX_LENGTH));
    }
    if !pattern::dns1035_label(value) {
        errs.push(regex_error(
            DNS1035_LABEL_ERR,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// A C identifier (format only, no length limit).
pub fn is_c_identifier(value: &str) -> Vec<String> {
    if pattern::c_identifier(value) {
        return Vec::new();
    }
    vec![regex_error(
        C_IDENTIFIER_ERR,
        C_IDENTIFIER_FMT,
        &["my_name", "MY_NAME", "MyName"],
    )]
}

/// A ConfigMap/Secret data key: it becomes a file name, hence the `.`/`..` rules.
pub fn is_config_map_key(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !pattern::config_map_key(value) {
        errs.push(regex_error(
            CONFIG_MAP_KEY_ERR,
            CONFIG_MAP_KEY_FMT,
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    errs.extend(has_ch_dir_prefix(value));
    errs
}

fn has_ch_dir_prefix(value: &str) -> Option<String> {
    match value {
        "." => Some("must not be '.'".into()),
        ".." => Some("must not be '..'".into()),
        v if v.starts_with("..") => Some("must not start with '..'".into()),
        _ => None,
    }
}

/// A non-zero TCP/UDP port number.
pub fn is_valid_port_num(port: i64) -> Vec<String> {
    if (1..=65535).contains(&port) {
        return Vec::new();
    }
    vec![inclusive_range_error(1, 65535)]
}

/// An IPv4 or IPv6 address, parsed "sloppily" as upstream does (IPv4 octets
/// may carry leading zeros, for compatibility with old stored objects).
pub fn is_valid_ip(value: &str) -> Vec<String> {
    if parse_ip_sloppy(value).is_some() {
        return Vec::new();
    }
    vec!["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)".into()]
}

/// Go 1.16's `net.ParseIP` (kept by `k8s.io/utils/net.ParseIPSloppy`).
fn parse_ip_sloppy(value: &str) -> Option<std::net::IpAddr> {
    if let Some(v4) = parse_ipv4_sloppy(value) {
        return Some(v4.into());
    }
    if !value.contains(':') {
        return None;
    }
    if let Ok(v6) = value.parse::<Ipv6Addr>() {
        return Some(v6.into());
    }
    // An embedded IPv4 tail may carry leading zeros: normalize it and retry.
    let (head, tail) = value.rsplit_once(':')?;
    let v4 = parse_ipv4_sloppy(tail)?;
    format!("{head}:{v4}")
        .parse::<Ipv6Addr>()
        .ok()
        .map(Into::into)
}

fn parse_ipv4_sloppy(value: &str) -> Option<Ipv4Addr> {
    let mut octets = [0u8; 4];
    let mut parts = value.split('.');
    for octet in &mut octets {
        let part = parts.next()?;
        if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let digits = part.trim_start_matches('0');
        *octet = if digits.is_empty() {
            0
        } else {
            digits.parse().ok()?
        };
    }
    parts.next().is_none().then(|| Ipv4Addr::from(octets))
}

// ---------------------------------------------------------------------------
// Name validators (upstream's ValidateNameFunc implementations).

/// Names that must be DNS subdomains (the default for most resources).
pub fn name_is_dns_subdomain(name: &str, prefix: bool) -> Vec<String> {
    is_dns1123_subdomain(&mask_prefix(name, prefix))
}

/// Names that must be DNS labels (namespaces, services' DNS names...).
pub fn name_is_dns_label(name: &str, prefix: bool) -> Vec<String> {
    is_dns1123_label(&mask_prefix(name, prefix))
}

/// Names that must be RFC 1035 labels (services).
pub fn name_is_dns1035_label(name: &str, prefix: bool) -> Vec<String> {
    is_dns1035_label(&mask_prefix(name, prefix))
}

/// Names that only need to be one URL path segment (upstream's
/// `IsValidPathSegmentName`; APIServices).
pub fn name_is_path_segment(name: &str, prefix: bool) -> Vec<String> {
    let mut errs = Vec::new();
    if !prefix && (name == "." || name == "..") {
        errs.push(format!("may not be '{name}'"));
        return errs;
    }
    for illegal in ["/", "%"] {
        if name.contains(illegal) {
            errs.push(format!("may not contain '{illegal}'"));
        }
    }
    errs
}

/// Namespace names are DNS labels.
pub fn validate_namespace_name(name: &str, prefix: bool) -> Vec<String> {
    name_is_dns_label(name, prefix)
}

fn mask_prefix(name: &str, prefix: bool) -> Cow<'_, str> {
    if prefix {
        mask_trailing_dash(name)
    } else {
        Cow::Borrowed(name)
    }
}

/// A generateName may end in '-' since a suffix follows. Upstream replaces the
/// last *two* bytes with `a` (so the checked value is one byte shorter); the
/// quirk is kept because it shifts where the length limit bites.
fn mask_trailing_dash(name: &str) -> Cow<'_, str> {
    if name.len() <= 1 || !name.ends_with('-') {
        return Cow::Borrowed(name);
    }
    let cut = name.len() - 2;
    let head = if name.is_char_boundary(cut) {
        Cow::Borrowed(&name[..cut])
    } else {
        String::from_utf8_lossy(&name.as_bytes()[..cut])
    };
    Cow::Owned(format!("{head}a"))
}

// ---------------------------------------------------------------------------
// ObjectMeta validation, on unstructured JSON and on the typed `ObjectMeta`.
//
// The checks take plain values (strings, numbers, slices of either form) and
// are called by both entry points: the JSON ones read the members (and report
// wrong JSON types), the typed ones pass their fields. For a typed `meta`
// they report what the JSON ones report for `meta.to_value()`.

/// A string map's entry as validation reads it: the key and its value, a
/// string or (in unstructured JSON only) a value of another type.
type MapEntry<'a> = (&'a str, Result<&'a str, &'a Value>);

fn json_entries(map: &Map<String, Value>) -> impl Iterator<Item = MapEntry<'_>> {
    map.iter().map(|(k, v)| (k.as_str(), v.as_str().ok_or(v)))
}

fn typed_entries(map: &BTreeMap<String, String>) -> impl Iterator<Item = MapEntry<'_>> {
    map.iter().map(|(k, v)| (k.as_str(), Ok(v.as_str())))
}

/// Labels: each key a qualified name, each value a label value. Errors sit on
/// `path` itself (not per key), as upstream reports them.
pub fn validate_labels(labels: &Map<String, Value>, path: &FieldPath) -> ErrorList {
    check_labels(json_entries(labels), &LazyPath::At(path))
}

/// Labels; `path` is built only for an error.
fn check_labels<'a>(labels: impl Iterator<Item = MapEntry<'a>>, path: &LazyPath<'_>) -> ErrorList {
    let mut errs = ErrorList::new();
    for (key, value) in labels {
        errs.extend(invalid_each_lazy(path, key, is_qualified_name(key)));
        match value {
            Ok(v) => errs.extend(invalid_each_lazy(path, v, is_valid_label_value(v))),
            Err(value) => errs.push(not_a_string(&path.build().key(key), value)),
        }
    }
    errs
}

/// A label key is a qualified name.
pub fn validate_label_name(name: &str, path: &FieldPath) -> ErrorList {
    invalid_each(path, name, is_qualified_name(name))
}

/// A `metav1.LabelSelector` object (e.g. a Deployment's `spec.selector`), as
/// upstream's `ValidateLabelSelector` with default options. `null` is valid.
pub fn validate_label_selector(selector: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
        errs.extend(validate_labels(labels, &path.child("matchLabels")));
    }
    let exprs = array_of(selector, "matchExpressions");
    for (i, expr) in exprs.iter().enumerate() {
        errs.extend(validate_selector_requirement(
            expr,
            &path.child("matchExpressions").index(i),
        ));
    }
    errs
}

fn validate_selector_requirement(expr: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let values = string_list(expr, "values");
    let operator = str_of(expr, "operator");
    match operator {
        "In" | "NotIn" if values.is_empty() => errs.push(FieldError::required(
            &path.child("values"),
            "must be specified when `operator` is 'In' or 'NotIn'",
        )),
        "Exists" | "DoesNotExist" if !values.is_empty() => errs.push(FieldError::forbidden(
            &path.child("values"),
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        )),
        "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
        _ => errs.push(FieldError::invalid(
            &path.child("operator"),
            operator.into(),
            "not a valid selector operator",
        )),
    }
    errs.extend(validate_label_name(str_of(expr, "key"), &path.child("key")));
    for (i, v) in values.iter().enumerate() {
        errs.extend(invalid_each(
            &path.child("values").index(i),
            v,
            is_valid_label_value(v),
        ));
    }
    errs
}

/// Annotations: keys are case-insensitive qualified names; the total size of
/// keys and values is capped (reported as `Too long`, value omitted).
pub fn validate_annotations(annotations: &Map<String, Value>, path: &FieldPath) -> ErrorList {
    check_annotations(json_entries(annotations), &LazyPath::At(path))
}

/// Annotations; `path` is built only for an error.
fn check_annotations<'a>(
    annotations: impl Iterator<Item = MapEntry<'a>>,
    path: &LazyPath<'_>,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut total = 0usize;
    for (key, value) in annotations {
        errs.extend(invalid_each_lazy(
            path,
            key,
            is_qualified_name(&lowercase(key)),
        ));
        total += key.len();
        match value {
            Ok(v) => total += v.len(),
            Err(value) => errs.push(not_a_string(&path.build().key(key), value)),
        }
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT_B {
        errs.push(FieldError::too_long(
            &path.build(),
            TOTAL_ANNOTATION_SIZE_LIMIT_B,
        ));
    }
    errs
}

/// `str::to_lowercase`, borrowed where that changes nothing (ASCII with no
/// capital: most annotation keys).
fn lowercase(s: &str) -> Cow<'_, str> {
    if s.bytes().all(|b| b.is_ascii() && !b.is_ascii_uppercase()) {
        Cow::Borrowed(s)
    } else {
        Cow::Owned(s.to_lowercase())
    }
}

/// A finalizer name is a qualified name (upstream's `ValidateFinalizerName`).
pub fn validate_finalizer_name(name: &str, path: &FieldPath) -> ErrorList {
    invalid_each(path, name, is_qualified_name(name))
}

/// Finalizers are qualified names; `orphan` and `foregroundDeletion` conflict.
pub fn validate_finalizers<S: AsRef<str>>(finalizers: &[S], path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    for f in finalizers {
        errs.extend(validate_finalizer_name(f.as_ref(), path));
    }
    let has = |name: &str| finalizers.iter().any(|f| f.as_ref() == name);
    if has(FINALIZER_ORPHAN_DEPENDENTS) && has(FINALIZER_DELETE_DEPENDENTS) {
        let detail = format!(
            "finalizer {FINALIZER_ORPHAN_DEPENDENTS} and {FINALIZER_DELETE_DEPENDENTS} cannot be both set"
        );
        errs.push(FieldError::invalid(path, string_array(finalizers), &detail));
    }
    errs
}

/// A JSON array of strings.
fn string_array<S: AsRef<str>>(items: &[S]) -> Value {
    Value::Array(
        items
            .iter()
            .map(|s| Value::String(s.as_ref().to_owned()))
            .collect(),
    )
}

/// The members of an owner reference that validation reads.
#[derive(Clone, Copy)]
struct OwnerRefFields<'a> {
    api_version: &'a str,
    kind: &'a str,
    name: &'a str,
    uid: &'a str,
    /// `controller` is `true`.
    controller: bool,
}

impl<'a> OwnerRefFields<'a> {
    /// Missing strings (or strings of another JSON type) read as `""`.
    fn of_json(r: &'a Value) -> Self {
        Self {
            api_version: str_of(r, "apiVersion"),
            kind: str_of(r, "kind"),
            name: str_of(r, "name"),
            uid: str_of(r, "uid"),
            controller: r.get("controller").and_then(Value::as_bool) == Some(true),
        }
    }

    fn of_typed(r: &'a OwnerReference) -> Self {
        Self {
            api_version: &r.api_version,
            kind: &r.kind,
            name: &r.name,
            uid: &r.uid,
            controller: r.controller == Some(true),
        }
    }
}

/// Owner references: apiVersion (with a version), kind, name and uid are
/// required, Events may not own anything, and at most one is the controller.
/// Upstream reports these on `ownerReferences.<field>`, without an index.
pub fn validate_owner_references(refs: &[Value], path: &FieldPath) -> ErrorList {
    check_owner_references(refs, OwnerRefFields::of_json, Value::clone, path)
}

/// [`validate_owner_references`] over references of either form: `fields`
/// reads one's members, `to_value` gives its JSON (only for the errors that
/// show a whole reference, or the whole list).
fn check_owner_references<'a, R>(
    refs: &'a [R],
    fields: impl Fn(&'a R) -> OwnerRefFields<'a>,
    to_value: impl Fn(&R) -> Value,
    path: &FieldPath,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut first_controller: Option<OwnerRefFields<'a>> = None;
    for r in refs {
        let current = fields(r);
        errs.extend(validate_owner_reference(&current, || to_value(r), path));
        if !current.controller {
            continue;
        }
        match first_controller {
            Some(first) => {
                let detail = format!(
                    "Only one reference can have Controller set to true. Found \"true\" in references for {}/{} and {}/{}",
                    first.kind, first.name, current.kind, current.name
                );
                let all = Value::Array(refs.iter().map(&to_value).collect());
                errs.push(FieldError::invalid(path, all, &detail));
            }
            None => first_controller = Some(current),
        }
    }
    errs
}

fn validate_owner_reference(
    r: &OwnerRefFields<'_>,
    to_value: impl FnOnce() -> Value,
    path: &FieldPath,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let (group, version) = split_api_version(r.api_version);
    if version.is_empty() {
        errs.push(FieldError::invalid(
            &path.child("apiVersion"),
            r.api_version.into(),
            "version must not be empty",
        ));
    }
    if r.kind.is_empty() {
        errs.push(FieldError::invalid(
            &path.child("kind"),
            r.kind.into(),
            "kind must not be empty",
        ));
    }
    for (field, v) in [("name", r.name), ("uid", r.uid)] {
        if v.is_empty() {
            errs.push(FieldError::invalid(
                &path.child(field),
                v.into(),
                &format!("{field} must not be empty"),
            ));
        }
    }
    if group.is_empty() && version == "v1" && r.kind == "Event" {
        errs.push(FieldError::invalid(
            path,
            to_value(),
            "/v1, Kind=Event is disallowed from being an owner",
        ));
    }
    errs
}

/// Upstream's `schema.FromAPIVersionAndKind` group/version split: more than
/// one '/' is unparseable and yields an empty group and version.
fn split_api_version(api_version: &str) -> (&str, &str) {
    if api_version == "/" {
        return ("", "");
    }
    match api_version.split_once('/') {
        None => ("", api_version),
        Some((group, version)) if !version.contains('/') => (group, version),
        Some(_) => ("", ""),
    }
}

/// The members of a managedFields entry that validation reads.
#[derive(Clone, Copy)]
struct ManagedFieldsEntryFields<'a> {
    manager: &'a str,
    operation: &'a str,
    fields_type: &'a str,
    subresource: &'a str,
}

impl<'a> ManagedFieldsEntryFields<'a> {
    /// Missing strings (or strings of another JSON type) read as `""`.
    fn of_json(entry: &'a Value) -> Self {
        Self {
            manager: str_of(entry, "manager"),
            operation: str_of(entry, "operation"),
            fields_type: str_of(entry, "fieldsType"),
            subresource: str_of(entry, "subresource"),
        }
    }

    fn of_typed(entry: &'a ManagedFieldsEntry) -> Self {
        Self {
            manager: &entry.manager,
            operation: &entry.operation,
            fields_type: &entry.fields_type,
            subresource: &entry.subresource,
        }
    }
}

/// managedFields entries: operation, fieldsType, manager and subresource.
pub fn validate_managed_fields(entries: &[Value], path: &FieldPath) -> ErrorList {
    check_managed_fields(
        entries.iter().map(ManagedFieldsEntryFields::of_json),
        &LazyPath::At(path),
    )
}

/// managedFields entries; paths are built only for an error.
fn check_managed_fields<'a>(
    entries: impl Iterator<Item = ManagedFieldsEntryFields<'a>>,
    path: &LazyPath<'_>,
) -> ErrorList {
    let mut errs = ErrorList::new();
    for (i, entry) in entries.enumerate() {
        let p = path.index(i);
        if entry.operation != "Apply" && entry.operation != "Update" {
            errs.push(FieldError::invalid(
                &p.child("operation").build(),
                entry.operation.into(),
                "must be `Apply` or `Update`",
            ));
        }
        if !entry.fields_type.is_empty() && entry.fields_type != "FieldsV1" {
            errs.push(FieldError::invalid(
                &p.child("fieldsType").build(),
                entry.fields_type.into(),
                "must be `FieldsV1`",
            ));
        }
        errs.extend(check_field_manager(entry.manager, &p.child("manager")));
        if entry.subresource.len() > MAX_SUBRESOURCE_NAME_LENGTH {
            errs.push(FieldError::too_long(
                &p.child("subresource").build(),
                MAX_SUBRESOURCE_NAME_LENGTH,
            ));
        }
    }
    errs
}

/// A field manager name: at most 128 bytes, printable characters only.
pub fn validate_field_manager(manager: &str, path: &FieldPath) -> ErrorList {
    check_field_manager(manager, &LazyPath::At(path))
}

/// [`validate_field_manager`]; `path` is built only for an error.
fn check_field_manager(manager: &str, path: &LazyPath<'_>) -> ErrorList {
    let mut errs = ErrorList::new();
    // Printable ASCII (most names) is printable for `is_go_printable` too.
    let printable_ascii = manager.bytes().all(|b| (b' '..=b'~').contains(&b));
    if manager.len() <= FIELD_MANAGER_MAX_LENGTH && printable_ascii {
        return errs;
    }
    let path = path.build();
    if manager.len() > FIELD_MANAGER_MAX_LENGTH {
        errs.push(FieldError::too_long(&path, FIELD_MANAGER_MAX_LENGTH));
    }
    for (i, c) in manager.char_indices().filter(|(_, c)| !is_go_printable(*c)) {
        let detail = format!("invalid character U+{:04X} (at position {i})", u32::from(c));
        errs.push(FieldError::invalid(&path, manager.into(), &detail));
    }
    errs
}

/// An approximation of Go's `unicode.IsPrint`: no controls, no whitespace but ' '.
fn is_go_printable(c: char) -> bool {
    c == ' '
        || !(c.is_control()
            || c.is_whitespace()
            || matches!(c, '\u{200b}'..='\u{200f}' | '\u{feff}'))
}

/// `metadata` validation on create, as upstream's `ValidateObjectMetaAccessor`.
///
/// `meta` is the `metadata` object itself (not the whole object); `path` is
/// usually `FieldPath::new("metadata")`. Name generation must already have
/// happened. `namespaced` says whether the resource requires a namespace.
/// `name_validator` is a [`NameValidator`], or a closure where the rule
/// depends on the object (ClusterTrustBundles are named after their signer).
/// For typed metadata see [`validate_typed_object_meta`].
pub fn validate_object_meta(
    meta: &Value,
    namespaced: bool,
    name_validator: impl Fn(&str, bool) -> Vec<String>,
    path: &FieldPath,
) -> ErrorList {
    let mut errs = validate_meta_types(meta, path);
    let members = Members::of(meta);
    let identity = Identity {
        name: Members::str(members.name),
        generate_name: Members::str(members.generate_name),
        namespace: Members::str(members.namespace),
        generation: members.generation.and_then(Value::as_i64).unwrap_or(0),
    };
    errs.extend(identity.validate(namespaced, name_validator, path));
    errs.extend(validate_meta_collections(&members, path));
    // Empty lists have nothing to report: their paths are not even built.
    let finalizers = Members::strings(members.finalizers);
    if !finalizers.is_empty() {
        errs.extend(validate_finalizers(&finalizers, &path.child("finalizers")));
    }
    let managed_fields = Members::array(members.managed_fields);
    if !managed_fields.is_empty() {
        errs.extend(validate_managed_fields(
            managed_fields,
            &path.child("managedFields"),
        ));
    }
    errs
}

/// [`validate_object_meta`] for typed metadata: the same errors as for
/// `meta.to_value()` (whose JSON types the decoder has checked already).
pub fn validate_typed_object_meta(
    meta: &ObjectMeta,
    namespaced: bool,
    name_validator: impl Fn(&str, bool) -> Vec<String>,
    path: &FieldPath,
) -> ErrorList {
    let identity = Identity {
        name: &meta.name,
        generate_name: &meta.generate_name,
        namespace: &meta.namespace,
        generation: meta.generation,
    };
    let mut errs = identity.validate(namespaced, name_validator, path);
    errs.extend(validate_typed_meta_collections(meta, path));
    if !meta.finalizers.is_empty() {
        errs.extend(validate_finalizers(
            &meta.finalizers,
            &path.child("finalizers"),
        ));
    }
    if !meta.managed_fields.is_empty() {
        errs.extend(check_managed_fields(
            meta.managed_fields
                .iter()
                .map(ManagedFieldsEntryFields::of_typed),
            &LazyPath::At(path).child("managedFields"),
        ));
    }
    errs
}

/// The scalar members checked on create (`""` and 0 when missing).
struct Identity<'a> {
    name: &'a str,
    generate_name: &'a str,
    namespace: &'a str,
    generation: i64,
}

impl Identity<'_> {
    /// generateName, name, namespace and generation, in upstream's order.
    fn validate(
        &self,
        namespaced: bool,
        name_validator: impl Fn(&str, bool) -> Vec<String>,
        path: &FieldPath,
    ) -> ErrorList {
        let mut errs = ErrorList::new();
        if !self.generate_name.is_empty() {
            let msgs = name_validator(self.generate_name, true);
            if !msgs.is_empty() {
                errs.extend(invalid_each(
                    &path.child("generateName"),
                    self.generate_name,
                    msgs,
                ));
            }
        }
        if self.name.is_empty() {
            errs.push(FieldError::required(
                &path.child("name"),
                "name or generateName is required",
            ));
        } else {
            let msgs = name_validator(self.name, false);
            if !msgs.is_empty() {
                errs.extend(invalid_each(&path.child("name"), self.name, msgs));
            }
        }
        errs.extend(validate_namespace_scope(self.namespace, namespaced, path));
        if self.generation < 0 {
            errs.push(FieldError::invalid(
                &path.child("generation"),
                self.generation.into(),
                IS_NEGATIVE_ERROR_MSG,
            ));
        }
        errs
    }
}

/// The members of `metadata` that validation reads, found in one pass over
/// the map: a lookup per member would search the map again each time.
#[derive(Default)]
struct Members<'a> {
    name: Option<&'a Value>,
    generate_name: Option<&'a Value>,
    namespace: Option<&'a Value>,
    generation: Option<&'a Value>,
    labels: Option<&'a Value>,
    annotations: Option<&'a Value>,
    owner_references: Option<&'a Value>,
    finalizers: Option<&'a Value>,
    managed_fields: Option<&'a Value>,
}

impl<'a> Members<'a> {
    /// The members of `meta` (none if it is not an object).
    fn of(meta: &'a Value) -> Self {
        let mut members = Members::default();
        for (key, value) in meta.as_object().into_iter().flatten() {
            let slot = match key.as_str() {
                "name" => &mut members.name,
                "generateName" => &mut members.generate_name,
                "namespace" => &mut members.namespace,
                "generation" => &mut members.generation,
                "labels" => &mut members.labels,
                "annotations" => &mut members.annotations,
                "ownerReferences" => &mut members.owner_references,
                "finalizers" => &mut members.finalizers,
                "managedFields" => &mut members.managed_fields,
                _ => continue,
            };
            *slot = Some(value);
        }
        members
    }

    /// A string member's value; `""` if absent or of another type.
    fn str(member: Option<&'a Value>) -> &'a str {
        member.and_then(Value::as_str).unwrap_or("")
    }

    /// A list member's strings (other items left out).
    fn strings(member: Option<&'a Value>) -> Vec<&'a str> {
        Self::array(member)
            .iter()
            .filter_map(Value::as_str)
            .collect()
    }

    /// A list member's items; none if absent or of another type.
    fn array(member: Option<&'a Value>) -> &'a [Value] {
        member
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }
}

fn validate_namespace_scope(namespace: &str, namespaced: bool, path: &FieldPath) -> ErrorList {
    let p = || path.child("namespace");
    match (namespaced, namespace.is_empty()) {
        (true, true) => vec![FieldError::required(&p(), "")],
        (true, false) => match validate_namespace_name(namespace, false) {
            msgs if msgs.is_empty() => ErrorList::new(),
            msgs => invalid_each(&p(), namespace, msgs),
        },
        (false, false) => vec![FieldError::forbidden(&p(), "not allowed on this type")],
        (false, true) => ErrorList::new(),
    }
}

/// Labels, annotations and ownerReferences: checked on both create and update.
fn validate_meta_collections(members: &Members<'_>, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    if let Some(labels) = members.labels.and_then(Value::as_object) {
        errs.extend(validate_labels(labels, &path.child("labels")));
    }
    if let Some(annotations) = members.annotations.and_then(Value::as_object) {
        errs.extend(validate_annotations(
            annotations,
            &path.child("annotations"),
        ));
    }
    let owner_references = Members::array(members.owner_references);
    if !owner_references.is_empty() {
        errs.extend(validate_owner_references(
            owner_references,
            &path.child("ownerReferences"),
        ));
    }
    errs
}

/// [`validate_meta_collections`] for typed metadata (empty maps and lists
/// have nothing to report, and their paths are not built).
fn validate_typed_meta_collections(meta: &ObjectMeta, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let at = LazyPath::At(path);
    if !meta.labels.is_empty() {
        errs.extend(check_labels(
            typed_entries(&meta.labels),
            &at.child("labels"),
        ));
    }
    if !meta.annotations.is_empty() {
        errs.extend(check_annotations(
            typed_entries(&meta.annotations),
            &at.child("annotations"),
        ));
    }
    if !meta.owner_references.is_empty() {
        errs.extend(check_owner_references(
            &meta.owner_references,
            OwnerRefFields::of_typed,
            OwnerReference::to_value,
            &path.child("ownerReferences"),
        ));
    }
    errs
}

/// `metadata` validation on update, as upstream's `ValidateObjectMetaAccessorUpdate`.
///
/// As upstream, the caller is expected to have applied `BeforeUpdate`'s
/// defaulting first (uid, creationTimestamp, resourceVersion for unconditional
/// updates copied from `old`), so what remains here are real user changes.
/// For typed metadata see [`validate_typed_object_meta_update`].
pub fn validate_object_meta_update(new: &Value, old: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = validate_meta_types(new, path);
    if TimeMember::of_json(old.get("deletionTimestamp")).is_set() {
        errs.extend(validate_no_new_finalizers(
            &string_list(new, "finalizers"),
            &string_list(old, "finalizers"),
            &path.child("finalizers"),
        ));
    }
    errs.extend(validate_versions_update(
        str_of(new, "resourceVersion"),
        int_of(new, "generation"),
        int_of(old, "generation"),
        path,
    ));
    for field in ["name", "namespace", "uid"] {
        errs.extend(immutable(
            normalize(new.get(field)),
            normalize(old.get(field)),
            path,
            field,
            |v| render_string(v.cloned()),
        ));
    }
    for (field, required) in [("creationTimestamp", true), ("deletionTimestamp", false)] {
        errs.extend(immutable_time(
            TimeMember::of_json(new.get(field)),
            TimeMember::of_json(old.get(field)),
            path,
            field,
            required,
        ));
    }
    let grace = "deletionGracePeriodSeconds";
    errs.extend(immutable(
        normalize(new.get(grace)),
        normalize(old.get(grace)),
        path,
        grace,
        |v| render_optional(v.cloned()),
    ));
    errs.extend(validate_meta_collections(&Members::of(new), path));
    errs.extend(validate_managed_fields(
        array_of(new, "managedFields"),
        &path.child("managedFields"),
    ));
    errs
}

/// [`validate_object_meta_update`] for typed metadata: the same errors as
/// for `new.to_value()` and `old.to_value()`.
pub fn validate_typed_object_meta_update(
    new: &ObjectMeta,
    old: &ObjectMeta,
    path: &FieldPath,
) -> ErrorList {
    let mut errs = ErrorList::new();
    if TimeMember::of_typed(old.deletion_timestamp.as_deref()).is_set() {
        errs.extend(validate_no_new_finalizers(
            &new.finalizers,
            &old.finalizers,
            &path.child("finalizers"),
        ));
    }
    errs.extend(validate_versions_update(
        &new.resource_version,
        new.generation,
        old.generation,
        path,
    ));
    for (field, n, o) in [
        ("name", &new.name, &old.name),
        ("namespace", &new.namespace, &old.namespace),
        ("uid", &new.uid, &old.uid),
    ] {
        errs.extend(immutable(
            non_empty(n),
            non_empty(o),
            path,
            field,
            render_string,
        ));
    }
    for (field, n, o, required) in [
        (
            "creationTimestamp",
            &new.creation_timestamp,
            &old.creation_timestamp,
            true,
        ),
        (
            "deletionTimestamp",
            &new.deletion_timestamp,
            &old.deletion_timestamp,
            false,
        ),
    ] {
        errs.extend(immutable_time(
            TimeMember::of_typed(n.as_deref()),
            TimeMember::of_typed(o.as_deref()),
            path,
            field,
            required,
        ));
    }
    errs.extend(immutable(
        new.deletion_grace_period_seconds,
        old.deletion_grace_period_seconds,
        path,
        "deletionGracePeriodSeconds",
        render_optional,
    ));
    errs.extend(validate_typed_meta_collections(new, path));
    if !new.managed_fields.is_empty() {
        errs.extend(check_managed_fields(
            new.managed_fields
                .iter()
                .map(ManagedFieldsEntryFields::of_typed),
            &LazyPath::At(path).child("managedFields"),
        ));
    }
    errs
}

/// An update names the version it replaces; generation never goes down.
fn validate_versions_update(
    resource_version: &str,
    new_generation: i64,
    old_generation: i64,
    path: &FieldPath,
) -> ErrorList {
    let mut errs = ErrorList::new();
    if resource_version.is_empty() {
        errs.push(FieldError::invalid(
            &path.child("resourceVersion"),
            "".into(),
            "must be specified for an update",
        ));
    }
    if new_generation < old_generation {
        errs.push(FieldError::invalid(
            &path.child("generation"),
            new_generation.into(),
            "must not be decremented",
        ));
    }
    errs
}

fn validate_no_new_finalizers<S: AsRef<str>>(new: &[S], old: &[S], path: &FieldPath) -> ErrorList {
    let mut extra: Vec<&str> = new
        .iter()
        .map(AsRef::as_ref)
        .filter(|f| !old.iter().any(|o| o.as_ref() == *f))
        .collect();
    if extra.is_empty() {
        return ErrorList::new();
    }
    extra.sort_unstable();
    extra.dedup();
    let detail = format!(
        "no new finalizers can be added if the object is being deleted, found new finalizers {}",
        go_string_slice(&extra)
    );
    vec![FieldError::forbidden(path, &detail)]
}

/// Go's `%#v` of a `[]string`: `[]string{"a", "b"}`.
fn go_string_slice(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// `<path>.<field>: Invalid value: <new>: field is immutable` when a field
/// changed; `None` (missing, or `null`) is Go's zero value.
fn immutable<T: PartialEq>(
    new: Option<T>,
    old: Option<T>,
    path: &FieldPath,
    field: &str,
    render: impl FnOnce(Option<T>) -> Value,
) -> Option<FieldError> {
    (new != old)
        .then(|| FieldError::invalid(&path.child(field), render(new), FIELD_IMMUTABLE_ERROR_MSG))
}

/// A timestamp member as the immutability check reads it.
#[derive(Clone, Copy, PartialEq)]
enum TimeMember<'a> {
    /// Missing or `null`: Go's nil (or zero) time.
    Unset,
    Text(&'a str),
    /// A JSON value of another type (only in unstructured JSON).
    Other(&'a Value),
}

impl<'a> TimeMember<'a> {
    fn of_json(member: Option<&'a Value>) -> Self {
        match normalize(member) {
            None => Self::Unset,
            Some(Value::String(text)) => Self::Text(text),
            Some(other) => Self::Other(other),
        }
    }

    /// Go's zero time is written as no member (`creationTimestamp`) or as
    /// `null` (`deletionTimestamp`): unset.
    fn of_typed(time: Option<&'a str>) -> Self {
        match time {
            Some(text) if text != ZERO_TIME => Self::Text(text),
            _ => Self::Unset,
        }
    }

    fn is_set(self) -> bool {
        self != Self::Unset
    }

    fn instant(self) -> Option<jiff::Timestamp> {
        match self {
            Self::Text(text) => crate::time::parse(text),
            _ => None,
        }
    }
}

/// Timestamps compare by instant (upstream's semantic equality), not by text.
/// A `required` one (`creationTimestamp`) shows Go's zero time when unset.
fn immutable_time(
    new: TimeMember<'_>,
    old: TimeMember<'_>,
    path: &FieldPath,
    field: &str,
    required: bool,
) -> Option<FieldError> {
    let (n, o) = (new.instant(), old.instant());
    let same = match (n, o) {
        (Some(a), Some(b)) => a == b,
        _ => new == old,
    };
    if same {
        return None;
    }
    let shown = match (n, new) {
        (Some(ts), _) => go_time_string(ts),
        (None, TimeMember::Text(raw)) => raw.to_string(),
        (None, TimeMember::Other(_)) => String::new(),
        (None, TimeMember::Unset) if required => "0001-01-01 00:00:00 +0000 UTC".into(),
        (None, TimeMember::Unset) => "null".into(),
    };
    Some(FieldError::invalid(
        &path.child(field),
        Value::String(shown),
        FIELD_IMMUTABLE_ERROR_MSG,
    ))
}

/// Go's `time.Time.String()` for a UTC instant: `2024-01-02 03:04:05 +0000 UTC`.
fn go_time_string(ts: jiff::Timestamp) -> String {
    ts.strftime("%Y-%m-%d %H:%M:%S +0000 UTC").to_string()
}

/// A typed string as its JSON member: `""` is one `to_value` leaves out.
fn non_empty(s: &str) -> Option<&str> {
    Some(s).filter(|s| !s.is_empty())
}

/// Missing and `null` are the same (Go's zero value) for comparisons.
fn normalize(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null())
}

/// A string field's value as upstream shows it: missing is `""`.
fn render_string<T: Into<Value>>(v: Option<T>) -> Value {
    v.map_or_else(|| Value::String(String::new()), Into::into)
}

/// A pointer field's value as upstream shows it: nil is the string `"null"`.
fn render_optional<T: Into<Value>>(v: Option<T>) -> Value {
    v.map_or_else(|| Value::String("null".into()), Into::into)
}

/// Wrong JSON types in well-known metadata fields (the typed decoder would
/// have refused them upstream; here they must not slip through unchecked).
fn validate_meta_types(meta: &Value, path: &FieldPath) -> ErrorList {
    let Some(map) = meta.as_object() else {
        return vec![FieldError::type_invalid(
            path,
            meta.clone(),
            "must be of type object",
        )];
    };
    let expected = |field: &str| match field {
        "name" | "generateName" | "namespace" | "uid" | "resourceVersion" => Some("string"),
        "generation" | "deletionGracePeriodSeconds" => Some("integer"),
        "labels" | "annotations" => Some("object"),
        "finalizers" | "ownerReferences" | "managedFields" => Some("array"),
        _ => None,
    };
    let mut errs = ErrorList::new();
    for (field, value) in map {
        let Some(want) = expected(field) else {
            continue;
        };
        let ok = match want {
            "string" => value.is_string(),
            "integer" => value.is_i64(),
            "object" => value.is_object(),
            _ => value.is_array(),
        };
        if !ok && !value.is_null() {
            errs.push(FieldError::type_invalid(
                &path.child(field),
                value.clone(),
                &format!("must be of type {want}"),
            ));
        }
    }
    if let Some(list) = map.get("finalizers").and_then(Value::as_array) {
        for (i, v) in list.iter().enumerate().filter(|(_, v)| !v.is_string()) {
            errs.push(not_a_string(&path.child("finalizers").index(i), v));
        }
    }
    errs
}

fn not_a_string(path: &FieldPath, value: &Value) -> FieldError {
    FieldError::type_invalid(path, value.clone(), "must be of type string")
}

/// One `Invalid value` per message, as upstream emits them.
fn invalid_each(path: &FieldPath, value: &str, msgs: Vec<String>) -> ErrorList {
    msgs.iter()
        .map(|m| FieldError::invalid(path, Value::String(value.to_string()), m))
        .collect()
}

/// [`invalid_each`] at a path built only if there are messages.
fn invalid_each_lazy(path: &LazyPath<'_>, value: &str, msgs: Vec<String>) -> ErrorList {
    if msgs.is_empty() {
        return ErrorList::new();
    }
    invalid_each(&path.build(), value, msgs)
}

fn str_of<'a>(v: &'a Value, field: &str) -> &'a str {
    Members::str(v.get(field))
}

fn int_of(v: &Value, field: &str) -> i64 {
    v.get(field).and_then(Value::as_i64).unwrap_or(0)
}

fn array_of<'a>(v: &'a Value, field: &str) -> &'a [Value] {
    Members::array(v.get(field))
}

fn string_list<'a>(v: &'a Value, field: &str) -> Vec<&'a str> {
    Members::strings(v.get(field))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
    const DNS1035_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
    const QNAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
    const CM_KEY_MSG: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";
    const C_ID_MSG: &str = "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')";

    /// Runs `check` over `(input, expected messages)` rows.
    fn table(check: fn(&str) -> Vec<String>, rows: &[(&str, &[&str])]) {
        for (input, want) in rows {
            assert_eq!(check(input), *want, "{input:?}");
        }
    }

    fn owned_table(check: fn(&str) -> Vec<String>, rows: Vec<(String, Vec<String>)>) {
        for (input, want) in rows {
            assert_eq!(check(&input), want, "{input:?}");
        }
    }

    fn messages(errs: &ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn dns1123_subdomain() {
        table(
            is_dns1123_subdomain,
            &[
                ("a", &[]),
                ("ab", &[]),
                ("a.b", &[]),
                ("0.0", &[]),
                ("a-1.b-2", &[]),
                ("11.22.33.44", &[]),
                ("", &[SUBDOMAIN_MSG]),
                ("A", &[SUBDOMAIN_MSG]),
                ("a..b", &[SUBDOMAIN_MSG]),
                ("a.", &[SUBDOMAIN_MSG]),
                ("-a", &[SUBDOMAIN_MSG]),
                ("a_b", &[SUBDOMAIN_MSG]),
                ("a b", &[SUBDOMAIN_MSG]),
                ("a\n", &[SUBDOMAIN_MSG]),
            ],
        );
        owned_table(
            is_dns1123_subdomain,
            vec![
                ("a".repeat(253), vec![]),
                ("a".repeat(254), vec![max_len_error(253)]),
                (
                    format!("{}A", "a".repeat(253)),
                    vec![max_len_error(253), SUBDOMAIN_MSG.into()],
                ),
            ],
        );
    }

    #[test]
    fn dns1123_label() {
        table(
            is_dns1123_label,
            &[
                ("a", &[]),
                ("0", &[]),
                ("my-name", &[]),
                ("123-abc", &[]),
                ("a.b", &["must not contain dots"]),
                ("", &[LABEL_MSG]),
                ("-a", &[LABEL_MSG]),
                ("a-", &[LABEL_MSG]),
                ("Abc", &[LABEL_MSG]),
                ("a_b", &[LABEL_MSG]),
            ],
        );
        owned_table(
            is_dns1123_label,
            vec![
                ("a".repeat(63), vec![]),
                ("a".repeat(64), vec![max_len_error(63)]),
                (
                    format!("{}.b", "a".repeat(63)),
                    vec![max_len_error(63), "must not contain dots".into()],
                ),
            ],
        );
    }

    #[test]
    fn dns1035_label() {
        table(
            is_dns1035_label,
            &[
                ("a", &[]),
                ("my-name", &[]),
                ("abc-123", &[]),
                ("1a", &[DNS1035_MSG]),
                ("", &[DNS1035_MSG]),
                ("a.b", &[DNS1035_MSG]),
                ("a-", &[DNS1035_MSG]),
            ],
        );
        owned_table(
            is_dns1035_label,
            vec![("a".repeat(64), vec![max_len_error(63)])],
        );
    }

    #[test]
    fn qualified_name() {
        let too_many_slashes = format!(
            "a qualified name {QNAME_MSG} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        );
        table(
            is_qualified_name,
            &[
                ("simple", &[]),
                ("now-with-dashes", &[]),
                ("1-starts-with-num", &[]),
                ("1234", &[]),
                ("simple/simple", &[]),
                ("now-with-dashes/simple", &[]),
                ("example.com/Upper_Case.dots-9", &[]),
                ("a", &[]),
                (
                    "",
                    &[
                        "name part must be non-empty",
                        &format!("name part {QNAME_MSG}"),
                    ],
                ),
                (
                    "a/",
                    &[
                        "name part must be non-empty",
                        &format!("name part {QNAME_MSG}"),
                    ],
                ),
                ("/a", &["prefix part must be non-empty"]),
                ("Example.com/a", &[&format!("prefix part {SUBDOMAIN_MSG}")]),
                ("nospecialchars%^=@", &[&format!("name part {QNAME_MSG}")]),
                ("cantendwithadash-", &[&format!("name part {QNAME_MSG}")]),
                ("-cantstartwithadash-", &[&format!("name part {QNAME_MSG}")]),
                ("only/one/slash", &[&too_many_slashes]),
                (
                    "Example.com/-a",
                    &[
                        &format!("prefix part {SUBDOMAIN_MSG}"),
                        &format!("name part {QNAME_MSG}"),
                    ],
                ),
            ],
        );
        owned_table(
            is_qualified_name,
            vec![
                ("a".repeat(63), vec![]),
                (
                    "a".repeat(64),
                    vec![format!("name part {}", max_len_error(63))],
                ),
                (
                    format!("{}/a", "a".repeat(254)),
                    vec![format!("prefix part {}", max_len_error(253))],
                ),
            ],
        );
    }

    #[test]
    fn label_value() {
        table(
            is_valid_label_value,
            &[
                ("", &[]),
                ("simple", &[]),
                ("now-with-dashes", &[]),
                ("1-starts-with-num", &[]),
                ("end-with-num-1", &[]),
                ("1234", &[]),
                ("Upper_Case.dots", &[]),
                ("nospecialchars%^=@", &[VALUE_MSG]),
                ("Tama-nui-te-rā.is.Māori.sun", &[VALUE_MSG]),
                ("\\backslashes\\are\\bad", &[VALUE_MSG]),
                ("-starts-with-dash", &[VALUE_MSG]),
                ("ends-with-dash-", &[VALUE_MSG]),
                (".starts.with.dot", &[VALUE_MSG]),
                ("a/b", &[VALUE_MSG]),
            ],
        );
        owned_table(
            is_valid_label_value,
            vec![
                ("a".repeat(63), vec![]),
                ("a".repeat(64), vec![max_len_error(63)]),
                (
                    format!("-{}", "a".repeat(63)),
                    vec![max_len_error(63), VALUE_MSG.into()],
                ),
            ],
        );
    }

    #[test]
    fn config_map_key() {
        table(
            is_config_map_key,
            &[
                ("a", &[]),
                ("key.name", &[]),
                ("KEY_NAME", &[]),
                ("key-name", &[]),
                (".dotfile", &[]),
                ("a..b", &[]),
                (".", &["must not be '.'"]),
                ("..", &["must not be '..'"]),
                ("..a", &["must not start with '..'"]),
                ("", &[CM_KEY_MSG]),
                ("a b", &[CM_KEY_MSG]),
                ("a/b", &[CM_KEY_MSG]),
            ],
        );
        owned_table(
            is_config_map_key,
            vec![("a".repeat(254), vec![max_len_error(253)])],
        );
    }

    #[test]
    fn c_identifier() {
        table(
            is_c_identifier,
            &[
                ("a", &[]),
                ("_", &[]),
                ("my_name", &[]),
                ("MY_NAME", &[]),
                ("A9", &[]),
                ("9a", &[C_ID_MSG]),
                ("", &[C_ID_MSG]),
                ("a-b", &[C_ID_MSG]),
                ("a.b", &[C_ID_MSG]),
            ],
        );
    }

    #[test]
    fn port_num() {
        let range = "must be between 1 and 65535, inclusive";
        for (port, want) in [
            (1, vec![]),
            (80, vec![]),
            (65535, vec![]),
            (0, vec![range]),
            (-1, vec![range]),
            (65536, vec![range]),
        ] {
            assert_eq!(is_valid_port_num(port), want, "{port}");
        }
    }

    #[test]
    fn ip() {
        let msg = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";
        let good = [
            "10.9.8.7",
            "0.0.0.0",
            "255.255.255.255",
            "010.009.008.007",
            "2001:db8::ffff",
            "::",
            "::1",
            "::ffff:1.2.3.4",
            "::ffff:01.2.3.4",
            "2001:0db8:0000:0000:0000:0000:0000:0001",
        ];
        let bad = [
            "",
            "1.2.3",
            "1.2.3.4.5",
            "1.2.3.256",
            "1.2.3.-4",
            "1..2.3",
            "abc",
            "fe80::1%eth0",
            ":::",
            "1.2.3.4/32",
            " 1.2.3.4",
        ];
        for ip in good {
            assert_eq!(is_valid_ip(ip), Vec::<String>::new(), "{ip:?}");
        }
        for ip in bad {
            assert_eq!(is_valid_ip(ip), vec![msg], "{ip:?}");
        }
    }

    #[test]
    fn name_validators_mask_trailing_dash_for_prefixes() {
        let rows: &[(NameValidator, &str, bool, &[&str])] = &[
            (name_is_dns_subdomain, "abc-", true, &[]),
            (name_is_dns_subdomain, "abc-", false, &[SUBDOMAIN_MSG]),
            (name_is_dns_subdomain, "-", true, &[SUBDOMAIN_MSG]),
            (name_is_dns_subdomain, "a-", true, &[]),
            (name_is_dns_subdomain, "abc--", true, &[]),
            // Upstream drops the byte before the dash too: "ab.-" is checked as "aba".
            (name_is_dns_subdomain, "ab.-", true, &[]),
            (name_is_dns_subdomain, "Abc-", true, &[SUBDOMAIN_MSG]),
            (name_is_dns_label, "abc-", true, &[]),
            (name_is_dns_label, "a.bc-", true, &["must not contain dots"]),
            (name_is_dns_label, "my-name", false, &[]),
            (name_is_dns1035_label, "abc-", true, &[]),
            (name_is_dns1035_label, "1bc-", true, &[DNS1035_MSG]),
            (name_is_dns1035_label, "é-", true, &[DNS1035_MSG]),
        ];
        for (validator, name, prefix, want) in rows {
            assert_eq!(validator(name, *prefix), *want, "{name:?} prefix={prefix}");
        }
        // The mask shortens by one byte, so a 254-byte prefix ending in '-' passes.
        assert!(name_is_dns_subdomain(&format!("{}-", "a".repeat(253)), true).is_empty());
        assert_eq!(
            name_is_dns_subdomain(&"a".repeat(254), true),
            vec![max_len_error(253)]
        );
    }

    #[test]
    fn regex_error_formats() {
        assert_eq!(
            regex_error("m", "f", &[]),
            "m (regex used for validation is 'f')"
        );
        assert_eq!(
            regex_error("m", "f", &["a"]),
            "m (e.g. 'a', regex used for validation is 'f')"
        );
        assert_eq!(
            regex_error("m", "f", &["a", "b"]),
            "m (e.g. 'a',  or 'b', regex used for validation is 'f')"
        );
    }

    /// The JSON version's messages; the typed version, where `meta`
    /// decodes, must give what the JSON one gives for its `to_value()`.
    fn meta_errors(meta: Value, namespaced: bool) -> Vec<String> {
        let path = FieldPath::new("metadata");
        if let Ok(typed) = ObjectMeta::from_value(meta.clone(), "metadata.") {
            assert_eq!(
                validate_typed_object_meta(&typed, namespaced, name_is_dns_subdomain, &path),
                validate_object_meta(&typed.to_value(), namespaced, name_is_dns_subdomain, &path),
                "{meta}"
            );
        }
        messages(&validate_object_meta(
            &meta,
            namespaced,
            name_is_dns_subdomain,
            &path,
        ))
    }

    #[test]
    fn object_meta_create() {
        let rows: Vec<(Value, bool, Vec<String>)> = vec![
            (json!({"name": "ok", "namespace": "default"}), true, vec![]),
            (json!({"name": "ok"}), false, vec![]),
            (json!({"generateName": "ok-", "namespace": "ns"}), true, vec![
                "metadata.name: Required value: name or generateName is required".into(),
            ]),
            (json!({}), false, vec!["metadata.name: Required value: name or generateName is required".into()]),
            (json!({"name": "Bad_Name"}), false, vec![
                format!("metadata.name: Invalid value: \"Bad_Name\": {SUBDOMAIN_MSG}"),
            ]),
            (json!({"name": "x", "generateName": "Bad-"}), false, vec![
                format!("metadata.generateName: Invalid value: \"Bad-\": {SUBDOMAIN_MSG}"),
            ]),
            (json!({"name": "x"}), true, vec!["metadata.namespace: Required value".into()]),
            (json!({"name": "x", "namespace": "a.b"}), true, vec![
                "metadata.namespace: Invalid value: \"a.b\": must not contain dots".into(),
            ]),
            (json!({"name": "x", "namespace": "default"}), false, vec![
                "metadata.namespace: Forbidden: not allowed on this type".into(),
            ]),
            (json!({"name": "x", "generation": -1}), false, vec![
                "metadata.generation: Invalid value: -1: must be greater than or equal to 0".into(),
            ]),
            (json!({"name": "x", "labels": {"app": "web", "-bad": "ok", "k": "-v"}}), false, vec![
                format!("metadata.labels: Invalid value: \"-bad\": name part {QNAME_MSG}"),
                format!("metadata.labels: Invalid value: \"-v\": {VALUE_MSG}"),
            ]),
            (json!({"name": "x", "annotations": {"Example.COM/Key": "any value at all", "a/b/c": ""}}), false, vec![
                format!(
                    "metadata.annotations: Invalid value: \"a/b/c\": a qualified name {QNAME_MSG} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
                ),
            ]),
            (json!({"name": "x", "finalizers": ["kubernetes.io/pv-protection", "bad/final/izer"]}), false, vec![
                format!(
                    "metadata.finalizers: Invalid value: \"bad/final/izer\": a qualified name {QNAME_MSG} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
                ),
            ]),
            (json!({"name": "x", "finalizers": ["orphan", "foregroundDeletion"]}), false, vec![
                "metadata.finalizers: Invalid value: [\"orphan\",\"foregroundDeletion\"]: finalizer orphan and foregroundDeletion cannot be both set".into(),
            ]),
            (json!({"name": "x", "ownerReferences": [{}]}), false, vec![
                "metadata.ownerReferences.apiVersion: Invalid value: \"\": version must not be empty".into(),
                "metadata.ownerReferences.kind: Invalid value: \"\": kind must not be empty".into(),
                "metadata.ownerReferences.name: Invalid value: \"\": name must not be empty".into(),
                "metadata.ownerReferences.uid: Invalid value: \"\": uid must not be empty".into(),
            ]),
            (json!({"name": "x", "ownerReferences": [{"apiVersion": "apps/", "kind": "K", "name": "n", "uid": "u"}]}), false, vec![
                "metadata.ownerReferences.apiVersion: Invalid value: \"apps/\": version must not be empty".into(),
            ]),
            (json!({"name": "x", "managedFields": [{"manager": "m", "operation": "Patch", "fieldsType": "FieldsV2"}]}), false, vec![
                "metadata.managedFields[0].operation: Invalid value: \"Patch\": must be `Apply` or `Update`".into(),
                "metadata.managedFields[0].fieldsType: Invalid value: \"FieldsV2\": must be `FieldsV1`".into(),
            ]),
            (json!({"name": "x", "labels": {"a": 1}, "finalizers": "f"}), false, vec![
                "metadata.finalizers: Invalid value: \"f\": must be of type array".into(),
                "metadata.labels[a]: Invalid value: 1: must be of type string".into(),
            ]),
        ];
        for (meta, namespaced, want) in rows {
            assert_eq!(meta_errors(meta.clone(), namespaced), want, "{meta}");
        }
    }

    #[test]
    fn owner_references() {
        let r = |kind: &str, name: &str, controller: bool| json!({"apiVersion": "v1", "kind": kind, "name": name, "uid": "u-1", "controller": controller});
        let path = FieldPath::new("metadata").child("ownerReferences");
        assert!(
            validate_owner_references(&[r("ConfigMap", "a", true), r("Secret", "b", false)], &path)
                .is_empty()
        );
        let two = [r("ConfigMap", "a", true), r("Secret", "b", true)];
        let errs = validate_owner_references(&two, &path);
        assert_eq!(errs.len(), 1);
        assert_eq!(
            errs[0].detail,
            "Only one reference can have Controller set to true. Found \"true\" in references for ConfigMap/a and Secret/b"
        );
        assert_eq!(errs[0].field, "metadata.ownerReferences");
        let errs = validate_owner_references(&[r("Event", "e", false)], &path);
        assert_eq!(messages(&errs).len(), 1);
        assert_eq!(
            errs[0].detail,
            "/v1, Kind=Event is disallowed from being an owner"
        );
        assert!(validate_owner_references(&[json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "name": "e", "uid": "u"})], &path).is_empty());
    }

    #[test]
    fn label_selector() {
        let path = FieldPath::new("spec").child("selector");
        let rows: Vec<(Value, Vec<String>)> = vec![
            (json!(null), vec![]),
            (json!({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a"]}]}), vec![]),
            (json!({"matchExpressions": [{"key": "k", "operator": "In"}]}), vec![
                "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'".into(),
            ]),
            (json!({"matchExpressions": [{"key": "k", "operator": "Exists", "values": ["x"]}]}), vec![
                "spec.selector.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'".into(),
            ]),
            (json!({"matchExpressions": [{"key": "k", "operator": "Gt", "values": ["1"]}]}), vec![
                "spec.selector.matchExpressions[0].operator: Invalid value: \"Gt\": not a valid selector operator".into(),
            ]),
            (json!({"matchExpressions": [{"key": "-k", "operator": "NotIn", "values": ["ok", "-v"]}]}), vec![
                format!("spec.selector.matchExpressions[0].key: Invalid value: \"-k\": name part {QNAME_MSG}"),
                format!("spec.selector.matchExpressions[0].values[1]: Invalid value: \"-v\": {VALUE_MSG}"),
            ]),
            (json!({"matchLabels": {"app": "-web"}}), vec![
                format!("spec.selector.matchLabels: Invalid value: \"-web\": {VALUE_MSG}"),
            ]),
        ];
        for (selector, want) in rows {
            assert_eq!(
                messages(&validate_label_selector(&selector, &path)),
                want,
                "{selector}"
            );
        }
    }

    #[test]
    fn annotations_size_limit() {
        let path = FieldPath::new("metadata").child("annotations");
        let at_limit: Map<String, Value> = [(
            "k".to_string(),
            json!("v".repeat(TOTAL_ANNOTATION_SIZE_LIMIT_B - 1)),
        )]
        .into_iter()
        .collect();
        assert!(validate_annotations(&at_limit, &path).is_empty());
        let over: Map<String, Value> = [(
            "k".to_string(),
            json!("v".repeat(TOTAL_ANNOTATION_SIZE_LIMIT_B)),
        )]
        .into_iter()
        .collect();
        assert_eq!(
            messages(&validate_annotations(&over, &path)),
            ["metadata.annotations: Too long: may not be more than 262144 bytes"]
        );
    }

    #[test]
    fn field_manager_ascii_fast_path_is_go_printable() {
        let path = FieldPath::new("fieldManager");
        for b in 0u8..=0x7f {
            let manager = format!("m{}m", char::from(b));
            let errs = validate_field_manager(&manager, &path);
            assert_eq!(errs.is_empty(), is_go_printable(char::from(b)), "{b:#x}");
        }
    }

    #[test]
    fn field_manager() {
        let path = FieldPath::new("fieldManager");
        assert!(validate_field_manager("kubectl-client-side-apply", &path).is_empty());
        assert_eq!(
            messages(&validate_field_manager("a\u{7}b", &path)),
            ["fieldManager: Invalid value: \"a\\u{7}b\": invalid character U+0007 (at position 1)"]
        );
        assert_eq!(
            messages(&validate_field_manager(&"m".repeat(129), &path)),
            ["fieldManager: Too long: may not be more than 128 bytes"]
        );
    }

    /// As [`meta_errors`], on update.
    fn update_errors(new: Value, old: Value) -> Vec<String> {
        let path = FieldPath::new("metadata");
        let decode = |v: &Value| ObjectMeta::from_value(v.clone(), "metadata.");
        if let (Ok(typed_new), Ok(typed_old)) = (decode(&new), decode(&old)) {
            assert_eq!(
                validate_typed_object_meta_update(&typed_new, &typed_old, &path),
                validate_object_meta_update(&typed_new.to_value(), &typed_old.to_value(), &path),
                "{new} {old}"
            );
        }
        messages(&validate_object_meta_update(&new, &old, &path))
    }

    #[test]
    fn object_meta_update() {
        let old = json!({
            "name": "a", "namespace": "ns", "uid": "u-1", "resourceVersion": "5", "generation": 3,
            "creationTimestamp": "2024-01-02T03:04:05Z"
        });
        let with = |patch: Value| {
            let mut v = old.clone();
            for (k, val) in patch.as_object().expect("object") {
                if val.is_null() {
                    v.as_object_mut().expect("object").remove(k);
                } else {
                    v[k] = val.clone();
                }
            }
            v
        };
        let rows: Vec<(Value, Value, Vec<&str>)> = vec![
            (with(json!({})), old.clone(), vec![]),
            (
                with(json!({"generation": 4, "labels": {"x": "y"}})),
                old.clone(),
                vec![],
            ),
            (
                with(json!({"creationTimestamp": "2024-01-02T03:04:05.000Z"})),
                old.clone(),
                vec![],
            ),
            (
                with(json!({"name": "b"})),
                old.clone(),
                vec!["metadata.name: Invalid value: \"b\": field is immutable"],
            ),
            (
                with(json!({"namespace": "other"})),
                old.clone(),
                vec!["metadata.namespace: Invalid value: \"other\": field is immutable"],
            ),
            (
                with(json!({"uid": null})),
                old.clone(),
                vec!["metadata.uid: Invalid value: \"\": field is immutable"],
            ),
            (
                with(json!({"generation": 2})),
                old.clone(),
                vec!["metadata.generation: Invalid value: 2: must not be decremented"],
            ),
            (
                with(json!({"resourceVersion": null})),
                old.clone(),
                vec![
                    "metadata.resourceVersion: Invalid value: \"\": must be specified for an update",
                ],
            ),
            (
                with(json!({"creationTimestamp": "2025-01-02T03:04:05Z"})),
                old.clone(),
                vec![
                    "metadata.creationTimestamp: Invalid value: \"2025-01-02 03:04:05 +0000 UTC\": field is immutable",
                ],
            ),
            (
                with(json!({"creationTimestamp": null})),
                old.clone(),
                vec![
                    "metadata.creationTimestamp: Invalid value: \"0001-01-01 00:00:00 +0000 UTC\": field is immutable",
                ],
            ),
            (
                with(json!({"deletionTimestamp": "2025-01-02T03:04:05Z"})),
                old.clone(),
                vec![
                    "metadata.deletionTimestamp: Invalid value: \"2025-01-02 03:04:05 +0000 UTC\": field is immutable",
                ],
            ),
            (
                with(json!({"deletionGracePeriodSeconds": 30})),
                old.clone(),
                vec!["metadata.deletionGracePeriodSeconds: Invalid value: 30: field is immutable"],
            ),
            (
                with(
                    json!({"deletionTimestamp": "2025-01-02T03:04:05Z", "finalizers": ["a", "b", "b"]}),
                ),
                with(json!({"deletionTimestamp": "2025-01-02T03:04:05Z", "finalizers": ["a"]})),
                vec![
                    "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"b\"}",
                ],
            ),
        ];
        for (new, old, want) in rows {
            assert_eq!(update_errors(new.clone(), old), want, "{new}");
        }
        assert_eq!(
            update_errors(with(json!({"labels": {"-x": "y"}})), old.clone()),
            [format!(
                "metadata.labels: Invalid value: \"-x\": name part {QNAME_MSG}"
            )]
        );
    }

    /// The typed validations against the JSON ones, on arbitrary metadata
    /// (as JSON, decoded as the registry decodes it).
    mod typed {
        use super::*;
        use proptest::prelude::*;
        use proptest::strategy::ValueTree;
        use proptest::test_runner::TestRunner;
        use std::collections::BTreeSet;

        const NAMES: &[&str] = &[
            "", "a", "b", "my-name", "Bad_Name", "a.b", "abc-", "-", "a-", ".", "..", "x/y", "%",
        ];
        const UIDS: &[&str] = &["", "u-1", "u-2"];
        const VERSIONS: &[&str] = &["", "1", "2"];
        const KEYS: &[&str] = &[
            "app",
            "tier",
            "-bad",
            "example.com/app",
            "Example.COM/Key",
            "a/b/c",
            "/a",
            "a/",
            "",
            "ÄB",
            "İ",
        ];
        const VALUES: &[&str] = &["", "web", "-v", "a b", "x.y_z"];
        const API_VERSIONS: &[&str] = &[
            "v1",
            "apps/v1",
            "apps/",
            "/",
            "/v1",
            "a/b/c",
            "",
            "events.k8s.io/v1",
        ];
        const KINDS: &[&str] = &["Event", "ConfigMap", "Secret", ""];
        const FINALIZERS: &[&str] = &[
            "orphan",
            "foregroundDeletion",
            "kubernetes.io/pv-protection",
            "bad/final/izer",
            "a",
            "b",
            "",
        ];
        const MANAGERS: &[&str] = &["m", "", "a\u{7}b", "tab\there", "kubectl"];
        const OPERATIONS: &[&str] = &["Apply", "Update", "Patch", ""];
        const FIELDS_TYPES: &[&str] = &["FieldsV1", "FieldsV2", ""];
        const SUBRESOURCES: &[&str] = &["", "status", "scale"];
        const TIMES: &[&str] = &[
            "2024-01-02T03:04:05Z",
            "2024-01-02T03:04:05.000Z",
            "2024-01-02T05:04:05+02:00",
            "2024-01-02T03:04:05.9Z",
            "2025-01-02T03:04:05Z",
            ZERO_TIME,
            "0001-01-01T00:00:00.5Z",
            "0500-06-07T08:09:10Z",
            "9999-12-31T23:59:59Z",
        ];
        /// `metav1.ObjectMeta`'s members, in the order [`metadata`] generates them.
        const MEMBERS: &[&str] = &crate::json::OBJECT_META_ORDER;
        const VALIDATORS: [NameValidator; 5] = [
            name_is_dns_subdomain,
            name_is_dns_label,
            name_is_dns1035_label,
            name_is_path_segment,
            validate_namespace_name,
        ];

        /// A string from `pool` (so old and new metadata often agree and the
        /// interesting values come up), or one about a length limit, or any.
        fn text(pool: &'static [&'static str]) -> BoxedStrategy<String> {
            prop_oneof![
                12 => prop::sample::select(pool).prop_map(str::to_owned),
                1 => "[-a-zA-Z0-9./_]{0,12}",
                1 => "[a-z]{60,66}",
                1 => "[a-z]{125,131}",
                1 => "[a-z]{250,260}",
                1 => prop::collection::vec(any::<char>(), 0..6)
                    .prop_map(|chars| chars.into_iter().collect::<String>()),
            ]
            .boxed()
        }

        fn string(pool: &'static [&'static str]) -> BoxedStrategy<Value> {
            text(pool).prop_map(Value::String).boxed()
        }

        /// Absent, `null` (which the decoder drops) or a value.
        fn member(value: BoxedStrategy<Value>) -> BoxedStrategy<Option<Value>> {
            prop_oneof![
                3 => Just(None),
                1 => Just(Some(Value::Null)),
                6 => value.prop_map(Some),
            ]
            .boxed()
        }

        fn object(
            keys: &'static [&'static str],
            members: Vec<BoxedStrategy<Option<Value>>>,
        ) -> BoxedStrategy<Value> {
            members
                .prop_map(move |values| {
                    let members = keys.iter().zip(values);
                    Value::Object(
                        members
                            .filter_map(|(k, v)| Some(((*k).to_owned(), v?)))
                            .collect(),
                    )
                })
                .boxed()
        }

        fn int(pool: &'static [i64]) -> BoxedStrategy<Value> {
            prop_oneof![
                4 => prop::sample::select(pool).prop_map(Value::from),
                1 => any::<i64>().prop_map(Value::from),
                // A custom resource's float, which only its decoder takes.
                1 => Just(serde_json::json!(2.0)),
            ]
            .boxed()
        }

        fn time() -> BoxedStrategy<Value> {
            let any_time =
                (crate::meta_decode::ZERO_TIME_SECONDS..253_402_300_800).prop_map(|seconds| {
                    let mut out = Vec::new();
                    crate::meta_decode::append_time(&mut out, seconds);
                    Value::String(String::from_utf8(out).unwrap())
                });
            prop_oneof![
                6 => prop::sample::select(TIMES).prop_map(Value::from),
                1 => any_time,
            ]
            .boxed()
        }

        fn string_map(values: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
            prop::collection::btree_map(text(KEYS), values, 0..4)
                .prop_map(|map| Value::Object(map.into_iter().collect()))
                .boxed()
        }

        fn annotation_value() -> BoxedStrategy<Value> {
            let limit = TOTAL_ANNOTATION_SIZE_LIMIT_B;
            prop_oneof![
                20 => string(VALUES),
                1 => Just(Value::String("v".repeat(limit - 4))),
                1 => Just(Value::String("v".repeat(limit))),
            ]
            .boxed()
        }

        fn owner_reference() -> BoxedStrategy<Value> {
            let controller = prop_oneof![2 => Just(true), 1 => Just(false)].prop_map(Value::Bool);
            object(
                &[
                    "apiVersion",
                    "kind",
                    "name",
                    "uid",
                    "controller",
                    "blockOwnerDeletion",
                ],
                vec![
                    member(string(API_VERSIONS)),
                    member(string(KINDS)),
                    member(string(NAMES)),
                    member(string(UIDS)),
                    member(controller.boxed()),
                    member(any::<bool>().prop_map(Value::Bool).boxed()),
                ],
            )
        }

        fn managed_fields_entry() -> BoxedStrategy<Value> {
            let fields_v1 = Just(serde_json::json!({"f:metadata": {"f:labels": {}}}));
            object(
                &[
                    "manager",
                    "operation",
                    "apiVersion",
                    "time",
                    "fieldsType",
                    "fieldsV1",
                    "subresource",
                ],
                vec![
                    member(string(MANAGERS)),
                    member(string(OPERATIONS)),
                    member(string(API_VERSIONS)),
                    member(time()),
                    member(string(FIELDS_TYPES)),
                    member(fields_v1.boxed()),
                    member(string(SUBRESOURCES)),
                ],
            )
        }

        fn list(item: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
            prop::collection::vec(item, 0..4)
                .prop_map(Value::Array)
                .boxed()
        }

        /// A `metadata` object, every member of its Go type (but for the
        /// occasional float, which only a custom resource's decoder takes).
        fn metadata() -> BoxedStrategy<Value> {
            object(
                MEMBERS,
                vec![
                    member(string(NAMES)),
                    member(string(NAMES)),
                    member(string(NAMES)),
                    member(string(NAMES)),
                    member(string(UIDS)),
                    member(string(VERSIONS)),
                    member(int(&[0, 1, 2, 3, -1, i64::MIN, i64::MAX])),
                    member(time()),
                    member(time()),
                    member(int(&[0, 30, -5])),
                    member(string_map(string(VALUES))),
                    member(string_map(annotation_value())),
                    member(list(owner_reference())),
                    member(list(string(FINALIZERS))),
                    member(list(managed_fields_entry())),
                ],
            )
        }

        /// `(new, old)`: `new` is `old` with a few members from another metadata.
        fn update() -> BoxedStrategy<(Value, Value)> {
            let changed = prop::collection::vec(prop::bool::weighted(0.2), MEMBERS.len());
            (metadata(), metadata(), changed)
                .prop_map(|(old, other, changed)| {
                    let mut new = old.clone();
                    for (key, _) in MEMBERS.iter().zip(changed).filter(|(_, c)| *c) {
                        match other.get(*key) {
                            Some(v) => new[*key] = v.clone(),
                            None => {
                                new.as_object_mut().unwrap().remove(*key);
                            }
                        }
                    }
                    (new, old)
                })
                .boxed()
        }

        /// As the registry decodes a built-in kind's metadata, or a custom
        /// resource's (which takes the floats); `None` if neither does.
        fn decode(metadata: &Value) -> Option<ObjectMeta> {
            ObjectMeta::from_value(metadata.clone(), "metadata.")
                .or_else(|_| ObjectMeta::from_value(metadata.clone(), ""))
                .ok()
        }

        fn create_errors(meta: &ObjectMeta, namespaced: bool, validator: usize) -> [ErrorList; 2] {
            let path = FieldPath::new("metadata");
            let name_validator = VALIDATORS[validator];
            [
                validate_typed_object_meta(meta, namespaced, name_validator, &path),
                validate_object_meta(&meta.to_value(), namespaced, name_validator, &path),
            ]
        }

        fn update_errors(new: &ObjectMeta, old: &ObjectMeta) -> [ErrorList; 2] {
            let path = FieldPath::new("metadata");
            [
                validate_typed_object_meta_update(new, old, &path),
                validate_object_meta_update(&new.to_value(), &old.to_value(), &path),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(1000))]

            #[test]
            fn create_is_json_create(
                metadata in metadata(),
                namespaced in any::<bool>(),
                validator in 0..VALIDATORS.len(),
            ) {
                if let Some(meta) = decode(&metadata) {
                    let [typed, json] = create_errors(&meta, namespaced, validator);
                    prop_assert_eq!(typed, json);
                }
            }

            #[test]
            fn update_is_json_update((new, old) in update()) {
                if let (Some(new), Some(old)) = (decode(&new), decode(&old)) {
                    let [typed, json] = update_errors(&new, &old);
                    prop_assert_eq!(typed, json);
                }
            }
        }

        fn samples<T: std::fmt::Debug>(strategy: BoxedStrategy<T>, n: usize) -> Vec<T> {
            let mut runner = TestRunner::deterministic();
            (0..n)
                .map(|_| strategy.new_tree(&mut runner).unwrap().current())
                .collect()
        }

        /// The generators reach every check, so the properties above compare
        /// something: each message (part) below comes up in a fixed sample.
        #[test]
        fn generators_reach_every_check() {
            let mut seen = BTreeSet::new();
            let mut decoded = 0;
            for (i, metadata) in samples(metadata(), 3000).iter().enumerate() {
                let Some(meta) = decode(metadata) else {
                    continue;
                };
                decoded += 1;
                let [errs, _] = create_errors(&meta, i % 2 == 0, i % VALIDATORS.len());
                seen.extend(messages(&errs));
            }
            let (mut clean_updates, mut zero_deletion) = (0, 0);
            for (new, old) in samples(update(), 3000) {
                let (Some(new), Some(old)) = (decode(&new), decode(&old)) else {
                    continue;
                };
                let [errs, _] = update_errors(&new, &old);
                clean_updates += usize::from(errs.is_empty());
                zero_deletion += usize::from(
                    old.deletion_timestamp.as_deref() == Some(ZERO_TIME)
                        && new.finalizers.iter().any(|f| !old.finalizers.contains(f)),
                );
                seen.extend(messages(&errs).into_iter().map(|m| format!("update {m}")));
            }
            assert!(decoded > 2500, "{decoded}");
            assert!(clean_updates > 20, "{clean_updates}");
            assert!(zero_deletion > 5, "{zero_deletion}");
            let wanted = [
                "metadata.name: Required value: name or generateName is required",
                "metadata.name: Invalid value",
                "metadata.generateName: Invalid value",
                "metadata.namespace: Required value",
                "metadata.namespace: Invalid value",
                "metadata.namespace: Forbidden: not allowed on this type",
                "metadata.generation: Invalid value: -1: must be greater than or equal to 0",
                "metadata.labels: Invalid value: \"-bad\"",
                "metadata.labels: Invalid value: \"-v\"",
                "metadata.labels: Invalid value: \"İ\"",
                "metadata.annotations: Invalid value: \"a/b/c\"",
                "metadata.annotations: Too long",
                "metadata.ownerReferences.apiVersion: Invalid value: \"apps/\": version must not be empty",
                "metadata.ownerReferences.kind: Invalid value: \"\"",
                "metadata.ownerReferences.name: Invalid value: \"\"",
                "metadata.ownerReferences.uid: Invalid value: \"\"",
                "metadata.ownerReferences: Invalid value: {\"apiVersion\":\"v1\"",
                "metadata.ownerReferences: Invalid value: [",
                "Only one reference can have Controller set to true",
                "metadata.finalizers: Invalid value: \"bad/final/izer\"",
                "finalizer orphan and foregroundDeletion cannot be both set",
                "metadata.managedFields[0].operation: Invalid value: \"Patch\"",
                "metadata.managedFields[1].fieldsType: Invalid value: \"FieldsV2\"",
                "metadata.managedFields[0].manager: Too long",
                "metadata.managedFields[0].manager: Invalid value: \"a\\u{7}b\"",
                "metadata.managedFields[0].subresource: Too long",
                "update metadata.finalizers: Forbidden: no new finalizers",
                "update metadata.resourceVersion: Invalid value: \"\": must be specified",
                "update metadata.generation: Invalid value",
                "update metadata.name: Invalid value",
                "update metadata.namespace: Invalid value",
                "update metadata.uid: Invalid value",
                "update metadata.creationTimestamp: Invalid value: \"0001-01-01 00:00:00 +0000 UTC\"",
                "update metadata.creationTimestamp: Invalid value: \"2024-01-02 03:04:05 +0000 UTC\"",
                "update metadata.deletionTimestamp: Invalid value: \"null\"",
                "update metadata.deletionTimestamp: Invalid value: \"0500-06-07",
                "update metadata.deletionGracePeriodSeconds: Invalid value: \"null\"",
                "update metadata.deletionGracePeriodSeconds: Invalid value: 30",
                "update metadata.labels: Invalid value",
                "update metadata.annotations: Too long",
                "update metadata.ownerReferences: Invalid value",
                "update metadata.managedFields[0].operation: Invalid value",
            ];
            let missing: Vec<&str> = wanted
                .iter()
                .copied()
                .filter(|w| !seen.iter().any(|m| m.starts_with(w) || m.contains(w)))
                .collect();
            assert!(missing.is_empty(), "never seen: {missing:#?}");
        }
    }
}
