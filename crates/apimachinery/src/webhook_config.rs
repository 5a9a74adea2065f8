//! A webhook's `clientConfig` as kube-apiserver checks it (admission webhook
//! configurations and CRD conversion webhooks alike): exactly one of `url`
//! and `service`, an `https` URL without user information, query or
//! fragment, a service with name, namespace, a valid port and a path of
//! DNS-subdomain segments. Upstream's messages.

use serde_json::{Value, json};

use crate::validation::{is_dns1123_subdomain, is_valid_port_num};
use crate::{ErrorList, FieldError, FieldPath};

const URL_FORM: &str = "; desired format: https://host[/path]";

/// `clientConfig` (`webhooks[i].clientConfig`, or the CRD's
/// `spec.conversion.webhookClientConfig`).
pub fn validate_client_config(config: &Value, path: &FieldPath) -> ErrorList {
    let url = config.get("url").filter(|u| !u.is_null());
    let service = config.get("service").filter(|s| !s.is_null());
    match (url, service) {
        (Some(url), None) => validate_url(url.as_str().unwrap_or(""), &path.child("url")),
        (None, Some(service)) => validate_service(service, &path.child("service")),
        _ => vec![FieldError::required(
            path,
            "exactly one of url or service is required",
        )],
    }
}

/// The parts of a URL upstream looks at.
struct Url<'a> {
    scheme: &'a str,
    user: Option<&'a str>,
    host: &'a str,
    query: bool,
    fragment: bool,
}

fn parse_url(url: &str) -> Result<Url<'_>, String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(format!("parse {:?}: missing protocol scheme", url));
    };
    if scheme.is_empty() {
        return Err(format!("parse {url:?}: missing protocol scheme"));
    }
    let (rest, fragment) = match rest.split_once('#') {
        Some((r, _)) => (r, true),
        None => (rest, false),
    };
    let (rest, query) = match rest.split_once('?') {
        Some((r, _)) => (r, true),
        None => (rest, false),
    };
    let authority = rest.split('/').next().unwrap_or("");
    let (user, host) = match authority.rsplit_once('@') {
        Some((user, host)) => (Some(user), host),
        None => (None, authority),
    };
    Ok(Url {
        scheme,
        user,
        host,
        query,
        fragment,
    })
}

/// `url` (https only).
pub fn validate_url(url: &str, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let parsed = match parse_url(url) {
        Ok(u) => u,
        Err(e) => {
            errs.push(FieldError::required(
                path,
                &format!("url must be a valid URL: {e}{URL_FORM}"),
            ));
            return errs;
        }
    };
    if parsed.scheme != "https" {
        errs.push(FieldError::invalid(
            path,
            json!(parsed.scheme),
            &format!("'https' is the only allowed URL scheme{URL_FORM}"),
        ));
    }
    if parsed.host.is_empty() {
        errs.push(FieldError::invalid(
            path,
            json!(parsed.host),
            &format!("host must be specified{URL_FORM}"),
        ));
    }
    if let Some(user) = parsed.user {
        errs.push(FieldError::invalid(
            path,
            json!(user),
            "user information is not permitted in the URL",
        ));
    }
    if parsed.fragment {
        errs.push(FieldError::invalid(
            path,
            json!(url),
            "fragments are not permitted in the URL",
        ));
    }
    if parsed.query {
        errs.push(FieldError::invalid(
            path,
            json!(url),
            "query parameters are not permitted in the URL",
        ));
    }
    errs
}

/// `service`: name, namespace, port and path.
pub fn validate_service(service: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let text = |field: &str| service.get(field).and_then(Value::as_str).unwrap_or("");
    if text("name").is_empty() {
        errs.push(FieldError::required(
            &path.child("name"),
            "service name is required",
        ));
    }
    if text("namespace").is_empty() {
        errs.push(FieldError::required(
            &path.child("namespace"),
            "service namespace is required",
        ));
    }
    if let Some(port) = service.get("port").and_then(Value::as_i64) {
        let problems = is_valid_port_num(port);
        if !problems.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("port"),
                json!(port),
                &format!("port is not valid: {}", problems.join(", ")),
            ));
        }
    }
    if let Some(p) = service.get("path").and_then(Value::as_str) {
        errs.extend(validate_path(p, &path.child("path")));
    }
    errs
}

/// A service path: `/` or `/`-separated DNS subdomains (one trailing `/` allowed).
fn validate_path(p: &str, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    if p.is_empty() || p == "/" {
        return errs;
    }
    if !p.starts_with('/') {
        errs.push(FieldError::invalid(path, json!(p), "must start with a '/'"));
        return errs;
    }
    let trimmed = p[1..].strip_suffix('/').unwrap_or(&p[1..]);
    for (i, segment) in trimmed.split('/').enumerate() {
        if segment.is_empty() {
            errs.push(FieldError::invalid(
                path,
                json!(p),
                &format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for problem in is_dns1123_subdomain(segment) {
            errs.push(FieldError::invalid(
                path,
                json!(p),
                &format!("segment[{i}]: {problem}"),
            ));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(errs: &ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn exactly_one_target() {
        let path = FieldPath::new("webhooks").index(0).child("clientConfig");
        assert_eq!(
            messages(&validate_client_config(&json!({}), &path)),
            ["webhooks[0].clientConfig: Required value: exactly one of url or service is required"]
        );
        let both = json!({"url": "https://a", "service": {"name": "s", "namespace": "n"}});
        assert_eq!(validate_client_config(&both, &path).len(), 1);
    }

    #[test]
    fn urls_as_upstream() {
        let path = FieldPath::new("url");
        assert_eq!(
            messages(&validate_url("http://example.com/x", &path)),
            [
                "url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]"
            ]
        );
        assert_eq!(
            messages(&validate_url("https://example.com/x?a=b", &path)),
            [
                "url: Invalid value: \"https://example.com/x?a=b\": query parameters are not permitted in the URL"
            ]
        );
        assert!(validate_url("https://example.com:8443/x", &path).is_empty());
        assert_eq!(validate_url("https://u:p@example.com", &path).len(), 1);
        assert_eq!(validate_url("https://example.com#f", &path).len(), 1);
    }

    #[test]
    fn service_paths_as_upstream() {
        let path = FieldPath::new("path");
        assert!(validate_path("/", &path).is_empty());
        assert!(validate_path("/a/b.c/", &path).is_empty());
        assert_eq!(
            messages(&validate_path("//", &path)),
            ["path: Invalid value: \"//\": segment[0] may not be empty"]
        );
        assert_eq!(
            messages(&validate_path("a", &path)),
            ["path: Invalid value: \"a\": must start with a '/'"]
        );
        assert_eq!(validate_path("/A", &path).len(), 1);
    }
}
