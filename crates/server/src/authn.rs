//! Authentication, in kube-apiserver's order: the request-header identity of a
//! trusted front proxy (an aggregator), x509 client certificates (CN = user,
//! O = groups), and bearer tokens: static ones (`--token-auth-file`,
//! kube-apiserver's CSV format), service-account tokens, and last those a
//! [`TokenReviewer`] knows (a delegating server's main server, asked with a
//! TokenReview). Certificates are checked once per TLS connection, not per
//! request.

use anyhow::{Context, Result, anyhow};
use http::HeaderMap;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::ClientCertVerifier;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use crate::front_proxy::FrontProxyConfig;
use crate::user::UserInfo;

/// What authentication found out about a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Authenticated {
    User(UserInfo),
    /// No credentials: anonymous, if anonymous requests are enabled.
    Nobody,
    /// Credentials that prove nothing: 401.
    Invalid,
    /// A bearer token this server did not issue, which its [`TokenReviewer`]
    /// is to be asked about ([`Authenticator::review`]).
    UnknownToken,
}

/// Someone else who knows bearer tokens: an extension server's main server,
/// asked with a TokenReview. Only asked about tokens this server did not
/// issue; implementations cache their answers.
#[async_trait::async_trait]
pub trait TokenReviewer: Send + Sync {
    /// The user `token` stands for; `None` when it proves nothing or the
    /// reviewer could not be asked.
    async fn review(&self, token: &str) -> Option<UserInfo>;
}

pub struct Authenticator {
    tokens: HashMap<String, UserInfo>,
    service_accounts: Option<Arc<crate::serviceaccounts::Tokens>>,
    reviewer: Option<Arc<dyn TokenReviewer>>,
    client_cas: Arc<dyn ClientCertVerifier>,
    request_header: RequestHeader,
}

/// Who may assert identities in headers, and in which headers.
struct RequestHeader {
    verifier: Arc<dyn ClientCertVerifier>,
    config: FrontProxyConfig,
}

/// What a connection's client certificate proves.
#[derive(Debug, Default)]
pub struct PeerIdentity {
    /// The user a certificate that chains to a client CA names.
    cert_user: Option<UserInfo>,
    /// The certificate chains to the request-header CA and names an allowed proxy:
    /// the identity headers of its requests are believed.
    front_proxy: bool,
    /// The client's address (for the audit log's `sourceIPs`).
    pub remote_ip: Option<std::net::IpAddr>,
    /// A certificate was presented: if it proves nothing (a proxy's without
    /// identity headers, a proxy name not allowed), the request is refused, not
    /// anonymous (upstream's x509 authenticator fails verification).
    presented: bool,
}

impl Authenticator {
    /// `client_cas`: PEM bundles for client certificates; `requestheader_ca_pem`
    /// verifies front proxies, whose header names `front_proxy` gives.
    pub fn new(
        token_file: Option<&Path>,
        client_cas: &[String],
        requestheader_ca_pem: &str,
        front_proxy: &FrontProxyConfig,
    ) -> Result<Self> {
        let mut tokens = HashMap::new();
        if let Some(path) = token_file {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read --token-auth-file {}", path.display()))?;
            for (n, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let (token, user) = parse_token_line(line)
                    .with_context(|| format!("{}:{}: invalid token line", path.display(), n + 1))?;
                tokens.insert(token, user);
            }
        }
        Ok(Authenticator {
            tokens,
            service_accounts: None,
            reviewer: None,
            client_cas: verifier(client_cas).context("--client-ca-file")?,
            request_header: RequestHeader {
                verifier: verifier(&[requestheader_ca_pem.to_string()])
                    .context("--requestheader-client-ca-file")?,
                config: front_proxy.clone(),
            },
        })
    }

    /// Check a connection's certificate chain (leaf first) against both CAs.
    pub fn peer(&self, chain: &[CertificateDer<'_>]) -> PeerIdentity {
        let Some((leaf, intermediates)) = chain.split_first() else {
            return PeerIdentity::default();
        };
        let now = UnixTime::now();
        let subject = user_from_cert(leaf);
        let front_proxy = self
            .request_header
            .verifier
            .verify_client_cert(leaf, intermediates, now)
            .is_ok()
            && subject.as_ref().is_some_and(|u| {
                let allowed = &self.request_header.config.allowed_names;
                allowed.is_empty() || allowed.contains(&u.name)
            });
        let cert_user = self
            .client_cas
            .verify_client_cert(leaf, intermediates, now)
            .is_ok()
            .then_some(subject)
            .flatten()
            .map(UserInfo::authenticated);
        PeerIdentity {
            cert_user,
            front_proxy,
            presented: true,
            remote_ip: None,
        }
    }

    /// Who the request proves to be: a user, nobody (no credentials at all), or
    /// credentials that prove nothing (a bearer token nobody issued), which is
    /// 401 even where anonymous requests are welcome, as upstream.
    pub fn authenticate(&self, peer: &PeerIdentity, headers: &HeaderMap) -> Authenticated {
        if peer.front_proxy
            && let Some(user) = self.request_header.user(headers)
        {
            return Authenticated::User(user.authenticated());
        }
        if let Some(user) = &peer.cert_user {
            return Authenticated::User(user.clone());
        }
        let certificate_failed = peer.presented;
        match bearer_token(headers) {
            None if certificate_failed => Authenticated::Invalid,
            None => Authenticated::Nobody,
            Some(token) => match self.token(token) {
                Some(user) => Authenticated::User(user),
                None if self.reviewer.is_some() => Authenticated::UnknownToken,
                None => Authenticated::Invalid,
            },
        }
    }

    /// Who the request's bearer token proves to be, as the [`TokenReviewer`]
    /// answers (after [`Authenticated::UnknownToken`]).
    pub async fn review(&self, headers: &HeaderMap) -> Authenticated {
        let (Some(reviewer), Some(token)) = (&self.reviewer, bearer_token(headers)) else {
            return Authenticated::Invalid;
        };
        match reviewer.review(token).await {
            Some(user) => Authenticated::User(user.authenticated()),
            None => Authenticated::Invalid,
        }
    }

    /// Ask `reviewer` about bearer tokens this server did not issue.
    pub fn with_token_reviewer(mut self, reviewer: Arc<dyn TokenReviewer>) -> Self {
        self.reviewer = Some(reviewer);
        self
    }

    /// Also accept service-account tokens (JWTs) checked by `tokens`.
    pub fn with_service_accounts(mut self, tokens: Arc<crate::serviceaccounts::Tokens>) -> Self {
        self.service_accounts = Some(tokens);
        self
    }

    /// The headers front proxies assert identities in (dropped from requests
    /// forwarded elsewhere).
    pub fn request_header_config(&self) -> &FrontProxyConfig {
        &self.request_header.config
    }

    pub fn service_account_tokens(&self) -> Option<&Arc<crate::serviceaccounts::Tokens>> {
        self.service_accounts.as_ref()
    }

    /// The user a bearer token stands for.
    pub fn token(&self, token: &str) -> Option<UserInfo> {
        self.token_for(token, None)
    }

    /// The user a bearer token stands for, if it is meant for one of `audiences`
    /// (service-account tokens; `None`: the API's audiences).
    pub fn token_for(&self, token: &str, audiences: Option<&[String]>) -> Option<UserInfo> {
        let token = token.trim();
        if let Some(user) = self.tokens.get(token) {
            return Some(user.clone().authenticated());
        }
        self.service_accounts
            .as_ref()?
            .authenticate(token, audiences)
            .map(UserInfo::authenticated)
    }
}

/// The `Authorization: Bearer` token, if any.
fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|token| !token.is_empty())
}

impl RequestHeader {
    /// The identity a front proxy asserts: the first non-empty username header, every
    /// group header value, and `<prefix><key>` extras (key lower-cased and
    /// percent-decoded, as upstream escapes it).
    fn user(&self, headers: &HeaderMap) -> Option<UserInfo> {
        let values = |name: &str| {
            headers
                .get_all(name)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        let cfg = &self.config;
        let name = cfg
            .username_headers
            .iter()
            .flat_map(|h| values(h))
            .find(|v| !v.is_empty())?;
        let groups = cfg.group_headers.iter().flat_map(|h| values(h)).collect();
        let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (header, value) in headers {
            let Some(prefix) = cfg
                .extra_headers_prefix
                .iter()
                .find(|p| header.as_str().starts_with(&p.to_ascii_lowercase()))
            else {
                continue;
            };
            let key = percent_decode(&header.as_str()[prefix.len()..]);
            if let Ok(v) = value.to_str() {
                extra.entry(key).or_default().push(v.to_string());
            }
        }
        let uid = cfg
            .uid_headers
            .iter()
            .flat_map(|h| values(h))
            .find(|v| !v.is_empty())
            .unwrap_or_default();
        Some(UserInfo {
            name,
            uid,
            groups,
            extra,
        })
    }
}

/// A verifier of client certificates chaining to the CAs in `bundles` (PEM).
fn verifier(bundles: &[String]) -> Result<Arc<dyn ClientCertVerifier>> {
    let mut roots = rustls::RootCertStore::empty();
    for bundle in bundles {
        for cert in crate::tls::certs(bundle)? {
            roots.add(cert).context("invalid CA certificate")?;
        }
    }
    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), crate::tls::provider())
        .build()
        .context("building client certificate verifier")
}

/// `%XX` escapes decoded; anything malformed is kept as written.
pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0)) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `token,user,uid,"group1,group2"` (groups optional).
fn parse_token_line(line: &str) -> Result<(String, UserInfo)> {
    let mut fields = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(std::mem::take(&mut current)),
            c => current.push(c),
        }
    }
    fields.push(current);
    if fields.len() < 3 || fields[0].is_empty() || fields[1].is_empty() {
        return Err(anyhow!("expected token,user,uid[,\"groups\"]"));
    }
    let groups = fields
        .get(3)
        .map(|g| {
            g.split(',')
                .map(str::trim)
                .filter(|g| !g.is_empty())
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    Ok((
        fields[0].clone(),
        UserInfo {
            name: fields[1].clone(),
            uid: fields[2].clone(),
            groups,
            extra: BTreeMap::new(),
        },
    ))
}

fn user_from_cert(der: &[u8]) -> Option<UserInfo> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let subject = cert.subject();
    let name = subject
        .iter_common_name()
        .next()?
        .as_str()
        .ok()?
        .to_string();
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(String::from))
        .collect();
    Some(UserInfo {
        name,
        groups,
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_lines() {
        let (t, u) = parse_token_line(r#"abc,alice,42,"dev,ops""#).unwrap();
        assert_eq!(t, "abc");
        assert_eq!(u.name, "alice");
        assert_eq!(u.groups, vec!["dev", "ops"]);
        assert!(parse_token_line("abc").is_err());
    }
}
