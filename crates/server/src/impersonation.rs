//! Impersonation (upstream's `WithImpersonation`): `Impersonate-User`,
//! `Impersonate-Group`, `Impersonate-Uid` and `Impersonate-Extra-<key>` make a
//! request act as another identity, if the caller may `impersonate` each part
//! of it (users, serviceaccounts, groups, userextras/<key>, uids). The headers
//! are removed once they are applied.

use std::collections::BTreeMap;

use http::{HeaderMap, HeaderName};

use crate::authn::percent_decode;
use crate::user::UserInfo;
use apimachinery::StatusError;

use crate::authz::{Attributes, Authorizer, Decision, forbidden};

// Names rather than strings: looking a `&str` up parses it every time, on
// every request.
const USER: HeaderName = HeaderName::from_static("impersonate-user");
const GROUP: HeaderName = HeaderName::from_static("impersonate-group");
const UID: HeaderName = HeaderName::from_static("impersonate-uid");
const EXTRA_PREFIX: &str = "impersonate-extra-";
const AUTHENTICATION_GROUP: &str = "authentication.k8s.io";

/// Whether `headers` may ask for impersonation: false when no header is an
/// `Impersonate-*` one (then [`apply`] changes nothing). One pass over the
/// names, where asking for each of them would hash it.
pub fn asks(headers: &HeaderMap) -> bool {
    headers.keys().any(|name| name.as_str().starts_with(PREFIX))
}

/// What every impersonation header's name starts with.
const PREFIX: &str = "impersonate-";

/// What a request asks to act as.
#[derive(Debug, Default, PartialEq, Eq)]
struct Requested {
    user: Option<String>,
    groups: Vec<String>,
    uid: Option<String>,
    extra: BTreeMap<String, Vec<String>>,
}

impl Requested {
    fn from_headers(headers: &HeaderMap) -> Option<Requested> {
        if !asks(headers) {
            return None;
        }
        let value = |v: &http::HeaderValue| v.to_str().ok().map(str::to_string);
        let mut r = Requested {
            user: headers.get(&USER).and_then(value).filter(|u| !u.is_empty()),
            groups: headers.get_all(&GROUP).iter().filter_map(value).collect(),
            uid: headers.get(&UID).and_then(value),
            ..Default::default()
        };
        for (name, v) in headers {
            if let Some(key) = name.as_str().strip_prefix(EXTRA_PREFIX)
                && let Some(v) = value(v)
            {
                r.extra.entry(percent_decode(key)).or_default().push(v);
            }
        }
        let asked =
            r.user.is_some() || !r.groups.is_empty() || r.uid.is_some() || !r.extra.is_empty();
        asked.then_some(r)
    }

    /// Go's `%v` of the requests a user-less impersonation asked for (upstream
    /// prints its `[]ObjectReference`).
    fn go_references(&self) -> String {
        let mut refs: Vec<String> = self
            .groups
            .iter()
            .map(|g| format!("{{Group  {g}    }}"))
            .collect();
        for (key, values) in &self.extra {
            for v in values {
                refs.push(format!(
                    "{{UserExtra  {v}  {AUTHENTICATION_GROUP}/v1  {key}}}"
                ));
            }
        }
        if let Some(uid) = &self.uid {
            refs.push(format!("{{UID  {uid}  {AUTHENTICATION_GROUP}/v1  }}"));
        }
        format!("[{}]", refs.join(" "))
    }
}

/// Why impersonation was refused.
pub enum Refused {
    /// 500, plain text (upstream's `InternalError`).
    Internal(String),
    /// 403 with upstream's message.
    Forbidden(StatusError),
}

/// One thing to impersonate, as the authorizer is asked about it.
struct Part {
    group: &'static str,
    resource: &'static str,
    subresource: String,
    namespace: String,
    name: String,
}

/// The identity the request acts as: `user` itself, or whom it impersonates if
/// `authorizer` lets `user` impersonate every part. Removes the headers.
pub async fn apply(
    authorizer: &dyn Authorizer,
    headers: &mut HeaderMap,
    request_uri: &http::Uri,
    user: UserInfo,
) -> Result<(UserInfo, Option<UserInfo>), Refused> {
    let Some(requested) = Requested::from_headers(headers) else {
        return Ok((user, None));
    };
    let Some(name) = requested.user.clone() else {
        return Err(Refused::Internal(format!(
            "Internal Server Error: {:?}: requested {} without impersonating a user",
            request_uri.to_string(),
            requested.go_references()
        )));
    };
    let service_account = split_service_account(&name);
    let mut parts = vec![match &service_account {
        Some((ns, sa)) => Part {
            group: "",
            resource: "serviceaccounts",
            subresource: String::new(),
            namespace: ns.clone(),
            name: sa.clone(),
        },
        None => Part {
            group: "",
            resource: "users",
            subresource: String::new(),
            namespace: String::new(),
            name: name.clone(),
        },
    }];
    for group in &requested.groups {
        parts.push(Part {
            group: "",
            resource: "groups",
            subresource: String::new(),
            namespace: String::new(),
            name: group.clone(),
        });
    }
    for (key, values) in &requested.extra {
        for v in values {
            parts.push(Part {
                group: AUTHENTICATION_GROUP,
                resource: "userextras",
                subresource: key.clone(),
                namespace: String::new(),
                name: v.clone(),
            });
        }
    }
    if let Some(uid) = &requested.uid {
        parts.push(Part {
            group: AUTHENTICATION_GROUP,
            resource: "uids",
            subresource: String::new(),
            namespace: String::new(),
            name: uid.clone(),
        });
    }
    for part in &parts {
        let attributes = Attributes {
            user: &user,
            verb: "impersonate",
            group: part.group,
            version: if part.group.is_empty() { "" } else { "v1" },
            resource: part.resource,
            subresource: &part.subresource,
            namespace: &part.namespace,
            name: &part.name,
            path: "",
            is_resource: true,
        };
        let decision = authorizer.authorize(&attributes).await;
        if !matches!(decision, Decision::Allow(_)) {
            return Err(Refused::Forbidden(forbidden(
                &attributes,
                decision.reason(),
            )));
        }
    }
    let mut groups = if requested.groups.is_empty() {
        match &service_account {
            Some((ns, _)) => vec![
                "system:serviceaccounts".to_string(),
                format!("system:serviceaccounts:{ns}"),
            ],
            None => Vec::new(),
        }
    } else {
        requested.groups.clone()
    };
    if name == "system:anonymous" {
        if !groups.iter().any(|g| g == "system:unauthenticated") {
            groups.push("system:unauthenticated".into());
        }
    } else if !groups
        .iter()
        .any(|g| g == "system:authenticated" || g == "system:unauthenticated")
    {
        groups.push("system:authenticated".into());
    }
    headers.remove(&USER);
    headers.remove(&GROUP);
    headers.remove(&UID);
    let extra_headers: Vec<_> = headers
        .keys()
        .filter(|k| k.as_str().starts_with(EXTRA_PREFIX))
        .cloned()
        .collect();
    for header in extra_headers {
        headers.remove(header);
    }
    let impersonated = UserInfo {
        name: match &service_account {
            Some((ns, sa)) => format!("system:serviceaccount:{ns}:{sa}"),
            None => name,
        },
        uid: requested.uid.unwrap_or_default(),
        groups,
        extra: requested.extra,
    };
    Ok((impersonated, Some(user)))
}

/// `system:serviceaccount:<ns>:<name>` with a valid namespace and name.
fn split_service_account(name: &str) -> Option<(String, String)> {
    let rest = name.strip_prefix("system:serviceaccount:")?;
    let (ns, sa) = rest.split_once(':')?;
    let valid = |s: &str| apimachinery::validation::is_dns1123_subdomain(s).is_empty();
    (!sa.contains(':') && apimachinery::validation::is_dns1123_label(ns).is_empty() && valid(sa))
        .then(|| (ns.to_string(), sa.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct AllowAll;

    #[async_trait::async_trait]
    impl Authorizer for AllowAll {
        async fn authorize(&self, _: &Attributes<'_>) -> Decision {
            Decision::allow()
        }
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    async fn impersonate(pairs: &[(&str, &str)]) -> UserInfo {
        let mut h = headers(pairs);
        let admin = UserInfo {
            name: "admin".into(),
            ..Default::default()
        };
        match apply(&AllowAll, &mut h, &http::Uri::from_static("/api"), admin).await {
            Ok((user, Some(_))) => {
                assert!(
                    h.keys().all(|k| !k.as_str().starts_with("impersonate-")),
                    "{h:?}"
                );
                user
            }
            _ => panic!("not impersonated"),
        }
    }

    #[tokio::test]
    async fn groups_follow_upstreams_rules() {
        let sa = impersonate(&[("Impersonate-User", "system:serviceaccount:foo:default")]).await;
        assert_eq!(
            sa.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:foo",
                "system:authenticated"
            ]
        );
        let admin = impersonate(&[
            ("Impersonate-User", "system:admin"),
            ("Impersonate-Group", "some-group"),
        ])
        .await;
        assert_eq!(admin.groups, ["some-group", "system:authenticated"]);
        let anonymous = impersonate(&[("Impersonate-User", "system:anonymous")]).await;
        assert_eq!(anonymous.groups, ["system:unauthenticated"]);
        let unknown = impersonate(&[
            ("Impersonate-User", "unknown"),
            ("Impersonate-Group", "system:unauthenticated"),
        ])
        .await;
        assert_eq!(unknown.groups, ["system:unauthenticated"]);
        let extra = impersonate(&[
            ("Impersonate-User", "u"),
            (
                "Impersonate-Extra-example.com%2fescaped%e1%9b%84scopes",
                "a",
            ),
            ("Impersonate-Uid", "1234"),
        ])
        .await;
        assert_eq!(extra.extra["example.com/escapedᛄscopes"], ["a"]);
        assert_eq!(extra.uid, "1234");
    }

    /// `asks` only skips what `Requested::from_headers` finds nothing in.
    #[test]
    fn asks_is_false_only_where_nothing_is_requested() {
        let cases: &[&[(&str, &str)]] = &[
            &[],
            &[("Accept", "application/json"), ("User-Agent", "kubectl")],
            &[("Impersonate-User", "u")],
            &[("Impersonate-User", "")],
            &[("Impersonate-Group", "g"), ("Accept", "*/*")],
            &[("Impersonate-Uid", "1")],
            &[("Impersonate-Extra-scopes", "a")],
            &[("Impersonate-Other", "x")],
            &[("X-Impersonate-User", "u")],
        ];
        for pairs in cases {
            let h = headers(pairs);
            let plain = {
                let value = |v: &http::HeaderValue| v.to_str().ok().map(str::to_string);
                let user = h.get(&USER).and_then(value).filter(|u| !u.is_empty());
                let groups = h.get_all(&GROUP).iter().count();
                let uid = h.get(&UID).is_some();
                let extra = h.keys().any(|k| k.as_str().starts_with(EXTRA_PREFIX));
                user.is_some() || groups > 0 || uid || extra
            };
            if plain {
                assert!(asks(&h), "{pairs:?}");
            }
            assert_eq!(Requested::from_headers(&h).is_some(), plain, "{pairs:?}");
        }
    }

    #[tokio::test]
    async fn a_group_without_a_user_is_an_internal_error() {
        let mut h = headers(&[("Impersonate-Group", "some-group")]);
        match apply(
            &AllowAll,
            &mut h,
            &http::Uri::from_static("/api/v1/pods"),
            UserInfo::default(),
        )
        .await
        {
            Err(Refused::Internal(message)) => assert_eq!(
                message,
                r#"Internal Server Error: "/api/v1/pods": requested [{Group  some-group    }] without impersonating a user"#
            ),
            _ => panic!("expected an internal error"),
        }
    }
}
