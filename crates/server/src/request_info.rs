//! Parse a request path and method into what it asks for (upstream's RequestInfo).
//! Pure: strings in, struct out.
//!
//! Hot path: once per request, allocation-light parsing.

use apimachinery::{Subresource, Verb};
use smol_str::SmolStr;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestInfo {
    /// False for `/healthz`, `/version`, discovery roots, `/openapi/...`.
    pub is_resource: bool,
    /// `api` or `apis` for resource requests.
    pub prefix: &'static str,
    pub verb: Verb,
    // Inline strings (up to 23 bytes, as most are): parsing every request's
    // path allocated each of them.
    pub group: SmolStr,
    pub version: SmolStr,
    pub namespace: SmolStr,
    pub resource: SmolStr,
    pub name: SmolStr,
    pub subresource: Subresource,
    /// The resource was addressed under `namespaces/{ns}/` (not the namespace itself).
    pub namespaced_path: bool,
}

/// `watch=true` / `watch=1` on a collection GET turns list into watch.
pub fn parse(method: &str, path: &str, is_watch: bool) -> RequestInfo {
    let mut stack = [""; SEGMENTS_ON_STACK];
    let heap: Vec<&str>;
    let parts: &[&str] = match segments_into(path, &mut stack) {
        Some(n) => &stack[..n],
        None => {
            heap = segments(path);
            &heap
        }
    };
    let mut info = RequestInfo::default();
    let rest: &[&str] = match parts {
        ["api", version, rest @ ..] => {
            info.prefix = "api";
            info.version = SmolStr::new(version);
            rest
        }
        ["apis", group, version, rest @ ..] => {
            info.prefix = "apis";
            info.group = SmolStr::new(group);
            info.version = SmolStr::new(version);
            rest
        }
        _ => return info,
    };
    if rest.is_empty() {
        return info;
    }
    // The deprecated `watch/` paths (`/api/v1/watch/namespaces/{ns}/pods[/{name}]`),
    // which kube-apiserver still serves: a watch, of one object when named.
    let (rest, legacy_watch) = match rest {
        ["watch", tail @ ..] if !tail.is_empty() => (tail, true),
        other => (other, false),
    };
    info.is_resource = true;
    // `namespaces/{ns}/{resource}...` addresses namespaced resources; `namespaces/{name}`
    // and `namespaces/{name}/{status|finalize}` address the namespace itself.
    let rest = match rest {
        ["namespaces", ns, resource, tail @ ..]
            if !matches!(*resource, "status" | "finalize") || !tail.is_empty() =>
        {
            info.namespace = SmolStr::new(ns);
            info.namespaced_path = true;
            &rest[2..]
        }
        ["namespaces", name, ..] => {
            info.namespace = SmolStr::new(name);
            rest
        }
        other => other,
    };
    info.resource = SmolStr::new(rest[0]);
    if let Some(name) = rest.get(1) {
        info.name = SmolStr::new(name);
    }
    if let Some(sub) = rest.get(2) {
        info.subresource = Subresource::parse(sub);
    }
    // More segments than resource/name/subresource match no verb, but for
    // `proxy`, whose path goes on to the backend (upstream's connect routes).
    info.verb = if rest.len() > 3 && info.subresource != Subresource::Proxy {
        Verb::Unknown
    } else if legacy_watch {
        match method {
            "GET" | "HEAD" if rest.len() <= 2 => Verb::Watch,
            _ => Verb::Unknown,
        }
    } else {
        Verb::of(method, !info.name.is_empty(), is_watch)
    };
    info
}

/// Paths of up to this many segments are split without allocating (the
/// longest a resource path has, but for `proxy`'s: apis/{g}/{v}/watch/
/// namespaces/{ns}/{resource}/{name}/{subresource}).
const SEGMENTS_ON_STACK: usize = 12;

/// The path's non-empty `/`-separated segments: the plain way, which
/// [`segments_into`] equals.
fn segments(path: &str) -> Vec<&str> {
    path.trim_matches('/')
        .split('/')
        .filter(|p| !p.is_empty())
        .collect()
}

/// [`segments`] written into `out`, with their count; `None` when there are
/// more than `out` holds. Cut at the bytes of `/`, which is ASCII, so every
/// cut is on a character boundary.
fn segments_into<'a>(path: &'a str, out: &mut [&'a str]) -> Option<usize> {
    let mut n = 0;
    let mut rest = path;
    loop {
        let (segment, tail) = match rest.bytes().position(|b| b == b'/') {
            Some(i) => (&rest[..i], Some(&rest[i + 1..])),
            None => (rest, None),
        };
        if !segment.is_empty() {
            *out.get_mut(n)? = segment;
            n += 1;
        }
        match tail {
            Some(tail) => rest = tail,
            None => return Some(n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_on_the_stack_equal_the_plain_split() {
        let paths = [
            "",
            "/",
            "//",
            "/api",
            "api",
            "/api/v1/namespaces/default/configmaps/x",
            "//api//v1///namespaces/default/",
            "/apis/apps/v1/watch/namespaces/ns/deployments/web/status",
            "/api/v1/namespaces/default/services/https:web:443/proxy/a/b/c/d/e/f/g/h",
            "/a/b/c/d/e/f/g/h/i/j/k/l",
            "/a/b/c/d/e/f/g/h/i/j/k/l/m",
            "/é/ü/\u{1F600}/x",
        ];
        for path in paths {
            let mut stack = [""; SEGMENTS_ON_STACK];
            let plain = segments(path);
            match segments_into(path, &mut stack) {
                Some(n) => assert_eq!(&stack[..n], &plain[..], "{path:?}"),
                None => assert!(plain.len() > SEGMENTS_ON_STACK, "{path:?}"),
            }
        }
    }

    #[test]
    fn long_paths_parse_as_short_ones_do() {
        let long = "/api/v1/namespaces/default/services/web/proxy/1/2/3/4/5/6/7/8/9/10";
        let i = parse("GET", long, false);
        assert_eq!(
            (i.verb, i.resource.as_str(), i.name.as_str(), i.subresource),
            (Verb::Get, "services", "web", Subresource::Proxy)
        );
        let i = parse(
            "GET",
            "/api/v1/namespaces/default/pods/p/log/1/2/3/4/5/6/7/8",
            false,
        );
        assert_eq!(i.verb, Verb::Unknown);
    }

    fn check(
        method: &str,
        path: &str,
        watch: bool,
        expect: (&str, &str, &str, &str, &str, &str, &str),
    ) {
        let i = parse(method, path, watch);
        assert_eq!(
            (
                i.verb.as_str(),
                i.group.as_str(),
                i.version.as_str(),
                i.namespace.as_str(),
                i.resource.as_str(),
                i.name.as_str(),
                i.subresource.as_str()
            ),
            expect,
            "{method} {path}"
        );
    }

    /// Upstream's `RequestInfoFactory` takes `watch` after the version as the
    /// verb (its deprecated routes): a collection, or one object by name.
    #[test]
    fn legacy_watch_paths_are_watches() {
        check(
            "GET",
            "/api/v1/watch/namespaces/default/configmaps",
            false,
            ("watch", "", "v1", "default", "configmaps", "", ""),
        );
        check(
            "GET",
            "/apis/apps/v1/watch/namespaces/ns/deployments/web",
            false,
            ("watch", "apps", "v1", "ns", "deployments", "web", ""),
        );
        check(
            "GET",
            "/api/v1/watch/namespaces/kube-system",
            false,
            (
                "watch",
                "",
                "v1",
                "kube-system",
                "namespaces",
                "kube-system",
                "",
            ),
        );
        check(
            "GET",
            "/api/v1/watch/configmaps",
            false,
            ("watch", "", "v1", "", "configmaps", "", ""),
        );
        // Only a resource named `watch` is a plain path.
        check(
            "GET",
            "/api/v1/watch",
            false,
            ("list", "", "v1", "", "watch", "", ""),
        );
    }

    #[test]
    fn parses_like_upstream() {
        check(
            "GET",
            "/api/v1/namespaces/default/configmaps",
            false,
            ("list", "", "v1", "default", "configmaps", "", ""),
        );
        check(
            "GET",
            "/api/v1/namespaces/default/configmaps",
            true,
            ("watch", "", "v1", "default", "configmaps", "", ""),
        );
        check(
            "GET",
            "/api/v1/namespaces/default/configmaps/x",
            false,
            ("get", "", "v1", "default", "configmaps", "x", ""),
        );
        check(
            "PUT",
            "/api/v1/namespaces/kube-system/status",
            false,
            (
                "update",
                "",
                "v1",
                "kube-system",
                "namespaces",
                "kube-system",
                "status",
            ),
        );
        check(
            "GET",
            "/api/v1/namespaces/default",
            false,
            ("get", "", "v1", "default", "namespaces", "default", ""),
        );
        check(
            "GET",
            "/api/v1/namespaces",
            false,
            ("list", "", "v1", "", "namespaces", "", ""),
        );
        check(
            "DELETE",
            "/apis/coordination.k8s.io/v1/namespaces/a/leases",
            false,
            (
                "deletecollection",
                "coordination.k8s.io",
                "v1",
                "a",
                "leases",
                "",
                "",
            ),
        );
        check(
            "PATCH",
            "/apis/x.io/v1/widgets/w/status",
            false,
            ("patch", "x.io", "v1", "", "widgets", "w", "status"),
        );
        // A proxy path goes on past the subresource; its verb is the method's.
        check(
            "POST",
            "/api/v1/namespaces/default/services/https:web:443/proxy/a/b",
            false,
            (
                "create",
                "",
                "v1",
                "default",
                "services",
                "https:web:443",
                "proxy",
            ),
        );
        check(
            "GET",
            "/api/v1/nodes/n1/proxy/metrics",
            false,
            ("get", "", "v1", "", "nodes", "n1", "proxy"),
        );
        check(
            "GET",
            "/api/v1/namespaces/default/pods/p/log/extra",
            false,
            ("unknown", "", "v1", "default", "pods", "p", "log"),
        );
        check(
            "GET",
            "/api/v1/configmaps",
            false,
            ("list", "", "v1", "", "configmaps", "", ""),
        );
        assert!(!parse("GET", "/apis/apps/v1", false).is_resource);
        assert!(!parse("GET", "/healthz", false).is_resource);
    }
}
