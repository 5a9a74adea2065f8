//! Authentication: x509 client certificates (CN = user, O = groups) and static
//! bearer tokens (`--token-auth-file`, kube-apiserver's CSV format).

use anyhow::{Context, Result, anyhow};
use std::collections::HashMap;
use std::path::Path;

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
}

impl UserInfo {
    pub fn anonymous() -> Self {
        UserInfo {
            name: "system:anonymous".into(),
            uid: String::new(),
            groups: vec!["system:unauthenticated".into()],
        }
    }

    pub fn is_anonymous(&self) -> bool {
        self.name == "system:anonymous"
    }

    fn authenticated(mut self) -> Self {
        if !self.groups.iter().any(|g| g == "system:authenticated") {
            self.groups.push("system:authenticated".into());
        }
        self
    }
}

#[derive(Default)]
pub struct Authenticator {
    tokens: HashMap<String, UserInfo>,
}

impl Authenticator {
    pub fn new(token_file: Option<&Path>) -> Result<Self> {
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
        Ok(Authenticator { tokens })
    }

    /// Who sent the request: client certificate first, then bearer token.
    pub fn authenticate(
        &self,
        client_cert: Option<&[u8]>,
        authorization: Option<&str>,
    ) -> Option<UserInfo> {
        if let Some(der) = client_cert
            && let Some(user) = user_from_cert(der)
        {
            return Some(user.authenticated());
        }
        let token = authorization?.strip_prefix("Bearer ")?.trim();
        self.tokens.get(token).cloned().map(UserInfo::authenticated)
    }
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
        uid: String::new(),
        groups,
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
