//! resource.k8s.io/v1, Dynamic Resource Allocation: DeviceClasses,
//! ResourceClaims and their templates, ResourceSlices and DeviceTaintRules
//! (upstream's `pkg/apis/resource/validation`, the `+k8s:` tags of
//! `k8s.io/api/resource/v1`, `pkg/apis/resource/v1/defaults.go` and the
//! strategies of `pkg/registry/resource`, as kube-apiserver 1.37 runs them).
//!
//! kube-apiserver validates these kinds twice, by hand and then by the tags of
//! the versioned types, and answers with the handwritten errors followed by
//! the tags' (a tag's error replaces the handwritten one it covers, so it
//! moves to the end). [`Errs`] keeps the two lists apart for that order.
//!
//! Left out (see the gap list): CEL compilation and cost of selector
//! expressions (only their length is checked), `ValidateNodeSelector` inside
//! node selectors, consumable-capacity request policies, admin access (it
//! needs the namespace's labels), and status updates (allocation results,
//! `reservedFor`, device status, taint rule conditions).

mod claims;
mod shapes;
mod slices;
mod taints;

use apimachinery::validation::{
    is_c_identifier, is_dns1123_label, is_dns1123_subdomain, is_dns1123_subdomain_caseless,
};
use apimachinery::{ErrorList, FieldError, FieldPath};
use serde_json::{Value, json};

use super::gojson::{self, Form, Go};
use super::json_fields::str_of;
use super::storage::csi_driver_name as driver_name;

pub(super) use claims::{
    claim_template, claim_template_update, default_claim, default_claim_template, device_class,
    device_class_name, device_class_update, drop_alpha_claim_fields, drop_alpha_template_fields,
    resource_claim, resource_claim_update,
};
pub(super) use slices::{
    default_slice, drop_alpha_slice_fields, resource_slice, resource_slice_update, slice_warnings,
};
pub(super) use taints::{default_taint_rule, taint_rule, taint_rule_update, taint_rule_updated};

/// The errors of upstream's two passes: handwritten, then the tags'.
#[derive(Default)]
struct Errs {
    hand: ErrorList,
    tags: ErrorList,
}

impl Errs {
    fn hand(&mut self, errs: impl IntoIterator<Item = FieldError>) {
        self.hand.extend(errs);
    }

    fn tag(&mut self, errs: impl IntoIterator<Item = FieldError>) {
        self.tags.extend(errs);
    }

    /// Takes `part`'s tagged errors, and its handwritten ones only when
    /// upstream validates that part by hand too (`by_hand`).
    fn absorb(&mut self, part: Errs, by_hand: bool) {
        if by_hand {
            self.hand.extend(part.hand);
        }
        self.tags.extend(part.tags);
    }

    fn into_list(self) -> ErrorList {
        let mut errs = self.hand;
        errs.extend(self.tags);
        errs
    }
}

// ---------------------------------------------------------------------------
// Lists

/// `validateSlice`/`MaxItems`: more items than `max` is the one error, and
/// the items are not looked at.
fn too_many(items: &[Value], max: usize, path: &FieldPath) -> Option<FieldError> {
    (items.len() > max).then(|| FieldError::too_many(path, items.len(), max))
}

/// Items whose key (their `key` member; `None`: the item, a string) an
/// earlier item has: `Duplicate value` at each, the item shown as `shape`
/// renders it (`None`: the key itself).
fn duplicates(
    items: &[Value],
    path: &FieldPath,
    key: Option<&str>,
    shape: Option<&Go>,
) -> ErrorList {
    let mut seen: Vec<&str> = Vec::new();
    let mut errs = ErrorList::new();
    for (i, item) in items.iter().enumerate() {
        let k = match key {
            Some(key) => str_of(item, key),
            None => string_of(item),
        };
        if !seen.contains(&k) {
            seen.push(k);
            continue;
        }
        errs.push(match shape {
            Some(shape) => FieldError::duplicate_go(
                &path.index(i),
                &gojson::render(Some(item), shape, Form::Versioned),
            ),
            None => FieldError::duplicate(&path.index(i), json!(k)),
        });
    }
    errs
}

/// A list of strings' items (others read as `""`).
fn string_of(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

// ---------------------------------------------------------------------------
// Names

fn invalid_each(path: &FieldPath, value: &str, msgs: Vec<String>) -> ErrorList {
    msgs.iter()
        .map(|msg| FieldError::invalid(path, json!(value), msg))
        .collect()
}

fn dns_label(value: &str, path: &FieldPath) -> ErrorList {
    invalid_each(path, value, is_dns1123_label(value))
}

fn dns_subdomain(value: &str, path: &FieldPath) -> ErrorList {
    invalid_each(path, value, is_dns1123_subdomain(value))
}

/// A driver name as the tags check it (`+k8s:required`,
/// `+k8s:format=k8s-long-name-caseless`, `+k8s:maxLength=63`).
fn driver_name_tagged(name: &str, path: &FieldPath) -> ErrorList {
    if name.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let mut errs = invalid_each(path, name, is_dns1123_subdomain_caseless(name));
    if name.chars().count() > 63 {
        errs.push(FieldError::too_long_characters(path, 63));
    }
    errs
}

/// `validatePoolName`: required, at most 253 bytes, DNS subdomains
/// separated by `/` (each reported with its own value).
fn pool_name(name: &str, path: &FieldPath) -> ErrorList {
    if name.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let mut errs = ErrorList::new();
    if name.len() > 253 {
        errs.push(FieldError::too_long(path, 253));
    }
    for part in name.split('/') {
        errs.extend(dns_subdomain(part, path));
    }
    errs
}

/// `validateCIdentifier`: at most 32 bytes, a C identifier.
fn c_identifier(id: &str, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    if id.len() > 32 {
        errs.push(FieldError::too_long(path, 32));
    }
    errs.extend(invalid_each(path, id, is_c_identifier(id)));
    errs
}

/// `validateQualifiedName` (attribute and capacity names): a C identifier,
/// optionally after a driver-name domain and `/`. More than one `/` passes,
/// as upstream's does.
fn qualified_name(name: &str, path: &FieldPath) -> ErrorList {
    let parts: Vec<&str> = name.split('/').collect();
    match parts.as_slice() {
        [id] => c_identifier(id, path),
        [domain, id] => {
            let mut errs = match *domain {
                "" => vec![FieldError::invalid(
                    path,
                    json!(""),
                    "the domain must not be empty",
                )],
                domain => driver_name(domain, path),
            };
            errs.extend(match *id {
                "" => vec![FieldError::invalid(
                    path,
                    json!(""),
                    "the name must not be empty",
                )],
                id => c_identifier(id, path),
            });
            errs
        }
        _ => ErrorList::new(),
    }
}

/// The tags' `k8s-resource-fully-qualified-name`: a DNS subdomain prefix
/// (at most 63 bytes), `/`, a C identifier of at most 32 bytes.
fn fully_qualified_name(name: &str, path: &FieldPath) -> ErrorList {
    let parts: Vec<&str> = name.split('/').collect();
    let mut errs = match parts.as_slice() {
        [id] => c_identifier(id, path),
        [prefix, id] => {
            let mut errs = ErrorList::new();
            if prefix.is_empty() {
                errs.push(FieldError::invalid(
                    path,
                    json!(""),
                    "prefix must not be empty",
                ));
            } else {
                if prefix.len() > 63 {
                    errs.push(FieldError::too_long(path, 63));
                }
                let msgs = is_dns1123_subdomain(prefix);
                let msgs = msgs.into_iter().map(|m| format!("prefix: {m}")).collect();
                errs.extend(invalid_each(path, prefix, msgs));
            }
            if id.is_empty() {
                errs.push(FieldError::invalid(
                    path,
                    json!(""),
                    "name must not be empty",
                ));
            } else {
                errs.extend(c_identifier(id, path));
            }
            errs
        }
        _ => ErrorList::new(),
    };
    if !name.contains('/') {
        errs.push(FieldError::invalid(
            path,
            json!(name),
            "a fully qualified name must be a domain and a name separated by a slash",
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(errs: ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn names_as_upstream() {
        let p = FieldPath::new("x");
        assert_eq!(
            messages(qualified_name("example.com/", &p)),
            [r#"x: Invalid value: "": the name must not be empty"#]
        );
        assert_eq!(
            messages(fully_qualified_name("/x", &p)),
            [r#"x: Invalid value: "": prefix must not be empty"#]
        );
        assert_eq!(
            messages(fully_qualified_name("nodomain", &p)),
            [
                r#"x: Invalid value: "nodomain": a fully qualified name must be a domain and a name separated by a slash"#
            ]
        );
        assert!(qualified_name("a/b/c", &p).is_empty());
        assert_eq!(
            messages(pool_name("a//b", &p)).len(),
            1,
            "only the empty segment is reported"
        );
        assert_eq!(
            messages(driver_name_tagged("Bad_D", &p)),
            [
                r#"x: Invalid value: "Bad_D": an RFC 1123 subdomain must consist of alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'Example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#
            ]
        );
    }
}
