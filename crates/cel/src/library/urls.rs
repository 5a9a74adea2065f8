//! Kubernetes' URL library (`library.URLs`): `url`, `isURL` and the getters
//! of `kubernetes.URL`, parsing as Go's `net/url` does (`ParseRequestURI` to
//! validate, then `Parse`).

use std::collections::HashMap;

use cel::common::types::STRING_TYPE;
use cel::objects::{Key, Value};
use cel::{DeclarationError, Env};

use super::{
    Args, Ret, boolean, error, from_value, global, member, opaque, opaque_arg, opaque_type, string,
    string_arg,
};

const URL: &str = "kubernetes.URL";

pub(crate) const DECLARATIONS: &[&str] = &[
    "url(string) -> kubernetes.URL",
    "isURL(string) -> bool",
    "[kubernetes.URL].getScheme() -> string",
    "[kubernetes.URL].getHost() -> string",
    "[kubernetes.URL].getHostname() -> string",
    "[kubernetes.URL].getPort() -> string",
    "[kubernetes.URL].getEscapedPath() -> string",
    "[kubernetes.URL].getQuery() -> map(string, list(string))",
];

pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let t = || opaque_type(URL);
    global(env, "url", "string_to_url", vec![STRING_TYPE], to_url)?;
    global(env, "isURL", "is_url_string", vec![STRING_TYPE], is_url)?;
    member(env, "getScheme", "url_get_scheme", t(), vec![], get_scheme)?;
    member(env, "getHost", "url_get_host", t(), vec![], get_host)?;
    member(
        env,
        "getHostname",
        "url_get_hostname",
        t(),
        vec![],
        get_hostname,
    )?;
    member(env, "getPort", "url_get_port", t(), vec![], get_port)?;
    member(
        env,
        "getEscapedPath",
        "url_get_escaped_path",
        t(),
        vec![],
        get_escaped_path,
    )?;
    member(env, "getQuery", "url_get_query", t(), vec![], get_query)?;
    Ok(())
}

/// A parsed URL, Go's `url.URL` less what no getter reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    scheme: String,
    opaque: String,
    user: Option<String>,
    host: String,
    path: String,
    raw_path: String,
    raw_query: String,
    fragment: String,
}

impl cel::objects::Opaque for Url {
    fn runtime_type_name(&self) -> &str {
        URL
    }
}

fn to_url<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let s = string_arg(&args, 0)?;
    let parsed = parse_request_uri(s).and_then(|_| parse(s));
    match parsed {
        Ok(u) => opaque(u),
        Err(e) => Err(error(
            "url",
            format!("URL parse error during conversion from string: {e}"),
        )),
    }
}

fn is_url<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    boolean(parse_request_uri(string_arg(&args, 0)?).is_ok())
}

fn url_arg(args: &Args<'_, '_>) -> Result<Url, cel::ExecutionError> {
    opaque_arg::<Url>(args, 0, URL)
}

fn get_scheme<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    string(url_arg(&args)?.scheme)
}

fn get_host<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    string(url_arg(&args)?.host)
}

fn get_hostname<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    string(split_host_port(&url_arg(&args)?.host).0)
}

fn get_port<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    string(split_host_port(&url_arg(&args)?.host).1)
}

fn get_escaped_path<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    string(url_arg(&args)?.escaped_path())
}

fn get_query<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let mut map: HashMap<Key, Value> = HashMap::new();
    for (k, vs) in parse_query(&url_arg(&args)?.raw_query) {
        map.insert(Key::from(k), Value::from(vs));
    }
    from_value(Value::from(map))
}

// ---------------------------------------------------------------------------
// Go's net/url, the parts used here.
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq)]
enum Encoding {
    Path,
    Host,
    Zone,
    UserPassword,
    QueryComponent,
}

/// `url.ParseRequestURI`: an absolute URI or an absolute path, no fragment
/// split. The error as Go's `*url.Error` prints.
pub(crate) fn parse_request_uri(raw: &str) -> Result<Url, String> {
    parse_inner(raw, true).map_err(|e| format!("parse {raw:?}: {e}"))
}

/// `url.Parse`: `#fragment` split off first.
fn parse(raw: &str) -> Result<Url, String> {
    let (u, frag) = raw.split_once('#').unwrap_or((raw, ""));
    let mut url = parse_inner(u, false).map_err(|e| format!("parse {raw:?}: {e}"))?;
    url.fragment = unescape(frag, Encoding::Path).map_err(|e| format!("parse {raw:?}: {e}"))?;
    Ok(url)
}

fn parse_inner(raw: &str, via_request: bool) -> Result<Url, String> {
    if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err("net/url: invalid control character in URL".to_owned());
    }
    if raw.is_empty() && via_request {
        return Err("empty url".to_owned());
    }
    let mut url = Url {
        scheme: String::new(),
        opaque: String::new(),
        user: None,
        host: String::new(),
        path: String::new(),
        raw_path: String::new(),
        raw_query: String::new(),
        fragment: String::new(),
    };
    if raw == "*" {
        url.path = "*".to_owned();
        return Ok(url);
    }
    let (scheme, rest) = split_scheme(raw)?;
    url.scheme = scheme.to_ascii_lowercase();
    let mut rest = if rest.ends_with('?') && rest.matches('?').count() == 1 {
        &rest[..rest.len() - 1]
    } else {
        let (r, q) = rest.split_once('?').unwrap_or((rest, ""));
        url.raw_query = q.to_owned();
        r
    };
    if !rest.starts_with('/') {
        if !url.scheme.is_empty() {
            url.opaque = rest.to_owned();
            return Ok(url);
        }
        if via_request {
            return Err("invalid URI for request".to_owned());
        }
        // A colon in the first segment would be mistaken for a scheme.
        let segment = rest.split('/').next().unwrap_or("");
        if segment.contains(':') {
            return Err("first path segment in URL cannot contain colon".to_owned());
        }
    }
    if (!url.scheme.is_empty() || !via_request && !rest.starts_with("///"))
        && rest.starts_with("//")
    {
        let authority = &rest[2..];
        let (authority, tail) = match authority.find('/') {
            Some(i) => (&authority[..i], &authority[i..]),
            None => (authority, ""),
        };
        let (user, host) = parse_authority(authority)?;
        url.user = user;
        url.host = host;
        rest = tail;
    }
    url.path = unescape(rest, Encoding::Path)?;
    if escape(&url.path, Encoding::Path) != rest {
        url.raw_path = rest.to_owned();
    }
    Ok(url)
}

fn split_scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i == 0 => return Err("missing protocol scheme".to_owned()),
            b':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

fn parse_authority(authority: &str) -> Result<(Option<String>, String), String> {
    let Some(i) = authority.rfind('@') else {
        return Ok((None, parse_host(authority)?));
    };
    let host = parse_host(&authority[i + 1..])?;
    let userinfo = &authority[..i];
    if !userinfo.bytes().all(valid_userinfo_byte) {
        return Err("net/url: invalid userinfo".to_owned());
    }
    let user = match userinfo.split_once(':') {
        Some((u, p)) => format!(
            "{}:{}",
            unescape(u, Encoding::UserPassword)?,
            unescape(p, Encoding::UserPassword)?
        ),
        None => unescape(userinfo, Encoding::UserPassword)?,
    };
    Ok((Some(user), host))
}

fn valid_userinfo_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"-._:~!$&'()*+,;=%@".contains(&c)
}

fn parse_host(host: &str) -> Result<String, String> {
    if host.starts_with('[') {
        let i = host
            .rfind(']')
            .ok_or_else(|| "missing ']' in host".to_owned())?;
        let colon_port = &host[i + 1..];
        if !valid_optional_port(colon_port) {
            return Err(format!("invalid port {colon_port:?} after host"));
        }
        if let Some(zone) = host[..i].find("%25") {
            return Ok(format!(
                "{}{}{}",
                unescape(&host[..zone], Encoding::Host)?,
                unescape(&host[zone..i], Encoding::Zone)?,
                unescape(&host[i..], Encoding::Host)?
            ));
        }
    } else if let Some(i) = host.rfind(':') {
        let colon_port = &host[i..];
        if !valid_optional_port(colon_port) {
            return Err(format!("invalid port {colon_port:?} after host"));
        }
    }
    unescape(host, Encoding::Host)
}

fn valid_optional_port(port: &str) -> bool {
    match port.strip_prefix(':') {
        None => port.is_empty(),
        Some(digits) => digits.bytes().all(|b| b.is_ascii_digit()),
    }
}

/// Go's `splitHostPort`: the host without brackets, and the port.
fn split_host_port(host_port: &str) -> (&str, &str) {
    let mut host = host_port;
    let mut port = "";
    if let Some(colon) = host.rfind(':')
        && valid_optional_port(&host[colon..])
    {
        port = &host[colon + 1..];
        host = &host[..colon];
    }
    if host.starts_with('[') && host.ends_with(']') && host.len() >= 2 {
        host = &host[1..host.len() - 1];
    }
    (host, port)
}

fn is_hex(b: u8) -> bool {
    b.is_ascii_hexdigit()
}

fn unhex(b: u8) -> u8 {
    match b {
        b'0'..=b'9' => b - b'0',
        b'a'..=b'f' => b - b'a' + 10,
        _ => b - b'A' + 10,
    }
}

fn unescape(s: &str, mode: Encoding) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                if i + 2 >= bytes.len() || !is_hex(bytes[i + 1]) || !is_hex(bytes[i + 2]) {
                    let end = (i + 3).min(bytes.len());
                    return Err(format!("invalid URL escape {:?}", &s[i..end]));
                }
                let v = unhex(bytes[i + 1]) << 4 | unhex(bytes[i + 2]);
                // Only %-encoded characters of the host's syntax may be in a
                // host (RFC 6874 allows any in a zone).
                if mode == Encoding::Host && unhex(bytes[i + 1]) < 8 && &s[i..i + 3] != "%25" {
                    return Err(format!("invalid URL escape {:?}", &s[i..i + 3]));
                }
                out.push(v);
                i += 3;
            }
            b'+' => {
                out.push(if mode == Encoding::QueryComponent {
                    b' '
                } else {
                    b'+'
                });
                i += 1;
            }
            c => {
                if (mode == Encoding::Host || mode == Encoding::Zone)
                    && c < 0x80
                    && should_escape(c, mode)
                {
                    return Err(format!(
                        "invalid character {:?} in host name",
                        (c as char).to_string()
                    ));
                }
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

fn should_escape(c: u8, mode: Encoding) -> bool {
    if c.is_ascii_alphanumeric() {
        return false;
    }
    if (mode == Encoding::Host || mode == Encoding::Zone) && b"!$&'()*+,;=:[]<>\"".contains(&c) {
        return false;
    }
    match c {
        b'-' | b'_' | b'.' | b'~' => false,
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => match mode {
            Encoding::Path => c == b'?',
            Encoding::UserPassword => c == b'@' || c == b'/' || c == b'?' || c == b':',
            Encoding::QueryComponent => true,
            Encoding::Host | Encoding::Zone => true,
        },
        _ => true,
    }
}

fn escape(s: &str, mode: Encoding) -> String {
    let mut out = String::with_capacity(s.len());
    for &c in s.as_bytes() {
        if should_escape(c, mode) {
            if c == b' ' && mode == Encoding::QueryComponent {
                out.push('+');
            } else {
                out.push_str(&format!("%{c:02X}"));
            }
        } else {
            out.push(c as char);
        }
    }
    out
}

/// Go's `validEncoded`: `s` needs no further escaping as a path.
fn valid_encoded(s: &str) -> bool {
    s.bytes()
        .all(|c| b"!$&'()*+,;=:@[]".contains(&c) || c == b'%' || !should_escape(c, Encoding::Path))
}

impl Url {
    /// Go's `URL.EscapedPath`.
    fn escaped_path(&self) -> String {
        if !self.raw_path.is_empty()
            && valid_encoded(&self.raw_path)
            && unescape(&self.raw_path, Encoding::Path).is_ok_and(|p| p == self.path)
        {
            return self.raw_path.clone();
        }
        if self.path == "*" {
            return "*".to_owned();
        }
        escape(&self.path, Encoding::Path)
    }
}

/// Go's `url.ParseQuery`, keeping the pairs that parse.
fn parse_query(query: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for pair in query.split('&') {
        if pair.is_empty() || pair.contains(';') {
            continue;
        }
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let (Ok(k), Ok(v)) = (
            unescape(k, Encoding::QueryComponent),
            unescape(v, Encoding::QueryComponent),
        ) else {
            continue;
        };
        match out.iter_mut().find(|(key, _)| *key == k) {
            Some((_, values)) => values.push(v),
            None => out.push((k, vec![v])),
        }
    }
    out
}
