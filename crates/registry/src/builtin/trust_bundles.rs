//! certificates.k8s.io/v1 ClusterTrustBundles (upstream's
//! `ValidateClusterTrustBundle`): named after their signer, if any, and
//! holding PEM CA certificates only, each once. Blocks are found as Go's
//! `pem.Decode` finds them; certificates are parsed with `x509-parser`.

use apimachinery::DynamicObject;
use apimachinery::validation::{FIELD_IMMUTABLE_ERROR_MSG, name_is_dns_subdomain};
use apimachinery::{ErrorList, FieldError, FieldPath};
use base64::Engine;
use serde_json::{Value, json};

use super::certificates::validate_signer_name;
use super::json_fields::{spec_of, str_of};

const MAX_TRUST_BUNDLE_SIZE: usize = 1024 * 1024;

/// `ValidateClusterTrustBundleName`: `<signerName with '/' as ':'>:<name>`
/// for a signer's bundle, else a DNS subdomain without ':'.
pub(super) fn bundle_name(obj: &Value, name: &str, prefix: bool) -> Vec<String> {
    let signer = str_of(spec_of(obj), "signerName");
    if signer.is_empty() {
        if name.contains(':') {
            return vec![
                "ClusterTrustBundle without signer name must not have \":\" in its name".into(),
            ];
        }
        return name_is_dns_subdomain(name, prefix);
    }
    let required = format!("{}:", signer.replace('/', ":"));
    match name.strip_prefix(&required) {
        Some(rest) => name_is_dns_subdomain(rest, prefix),
        None => vec![format!(
            "ClusterTrustBundle for signerName {signer} must be named with prefix {required}"
        )],
    }
}

/// `ValidateClusterTrustBundle` (metadata is the store's).
pub(super) fn trust_bundle(obj: &DynamicObject) -> ErrorList {
    bundle(obj, true)
}

/// `ValidateClusterTrustBundleUpdate`: an unchanged bundle is not parsed
/// again, and the signer never changes.
pub(super) fn trust_bundle_update(new: &DynamicObject, old: &DynamicObject) -> ErrorList {
    let text = |o| str_of(spec_of(o), "trustBundle");
    let mut errs = bundle(new, text(new) != text(old));
    let signer = str_of(spec_of(new), "signerName");
    if signer != str_of(spec_of(old), "signerName") {
        errs.push(FieldError::invalid(
            &FieldPath::new("spec").child("signerName"),
            json!(signer),
            FIELD_IMMUTABLE_ERROR_MSG,
        ));
    }
    errs
}

fn bundle(obj: &Value, parse: bool) -> ErrorList {
    let spec = spec_of(obj);
    let path = FieldPath::new("spec");
    let mut errs = ErrorList::new();
    let signer = str_of(spec, "signerName");
    if !signer.is_empty() {
        errs.extend(validate_signer_name(&path.child("signerName"), signer));
    }
    if parse {
        errs.extend(trust_anchors(
            str_of(spec, "trustBundle"),
            &path.child("trustBundle"),
        ));
    }
    errs
}

/// `validateTrustBundle`: CERTIFICATE blocks without headers, each a CA
/// certificate; then at least one, none twice.
fn trust_anchors(text: &str, path: &FieldPath) -> ErrorList {
    if text.len() > MAX_TRUST_BUNDLE_SIZE {
        return vec![FieldError::too_long(path, MAX_TRUST_BUNDLE_SIZE)];
    }
    let invalid = |detail: String| FieldError::invalid(path, json!("<value omitted>"), &detail);
    let mut errs = ErrorList::new();
    let mut anchors: Vec<(Vec<u8>, Vec<usize>)> = Vec::new();
    for (i, block) in pem_blocks(text.as_bytes()).into_iter().enumerate() {
        let problem = if block.kind != "CERTIFICATE" {
            Some(format!("entry {i} has bad block type: {}", block.kind))
        } else if block.headers {
            Some(format!("entry {i} has PEM block headers"))
        } else {
            match is_ca(&block.der) {
                None => Some(format!("entry {i} does not parse as X.509")),
                Some(false) => Some(format!("entry {i} does not have the CA bit set")),
                Some(true) => None,
            }
        };
        match problem {
            Some(problem) => errs.push(invalid(problem)),
            None => match anchors.iter_mut().find(|(der, _)| *der == block.der) {
                Some((_, indices)) => indices.push(i),
                None => anchors.push((block.der, vec![i])),
            },
        }
    }
    if !errs.is_empty() {
        return errs;
    }
    if anchors.is_empty() {
        errs.push(invalid("at least one trust anchor must be provided".into()));
    }
    for (_, indices) in anchors.iter().filter(|(_, i)| i.len() > 1) {
        let shown: Vec<String> = indices.iter().map(usize::to_string).collect();
        errs.push(invalid(format!(
            "duplicate trust anchor (indices [{}])",
            shown.join(" ")
        )));
    }
    errs
}

/// Whether a DER certificate has the CA bit of its basic constraints set;
/// `None` when it does not parse (trailing bytes included, as Go's parser).
fn is_ca(der: &[u8]) -> Option<bool> {
    let (rest, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    if !rest.is_empty() {
        return None;
    }
    Some(matches!(cert.basic_constraints(), Ok(Some(bc)) if bc.value.ca))
}

/// One PEM block: its type, whether it had headers, its bytes.
struct Block {
    kind: String,
    headers: bool,
    der: Vec<u8>,
}

/// Every block Go's `pem.Decode` finds, in order (what does not decode is
/// skipped, as Go skips it).
fn pem_blocks(mut data: &[u8]) -> Vec<Block> {
    let mut blocks = Vec::new();
    while let Some((block, rest)) = pem_decode(data) {
        blocks.push(block);
        data = rest;
    }
    blocks
}

const BEGIN: &[u8] = b"\n-----BEGIN ";
const END: &[u8] = b"\n-----END ";
const DASHES: &[u8] = b"-----";

/// Go's `pem.Decode`: the next block and what follows it.
fn pem_decode(data: &[u8]) -> Option<(Block, &[u8])> {
    let mut rest = data;
    loop {
        rest = match rest.strip_prefix(&BEGIN[1..]) {
            Some(after) => after,
            None => &rest[find(rest, BEGIN)? + BEGIN.len()..],
        };
        let (type_line, after) = get_line(rest);
        rest = after;
        let Some(kind) = type_line.strip_suffix(DASHES) else {
            continue;
        };
        let mut headers = false;
        loop {
            if rest.is_empty() {
                return None;
            }
            let (line, next) = get_line(rest);
            if !line.contains(&b':') {
                break;
            }
            headers = true;
            rest = next;
        }
        let (end, trailer) = if !headers && rest.starts_with(&END[1..]) {
            (0, END.len() - 1)
        } else {
            match find(rest, END) {
                Some(i) => (i, i + END.len()),
                None => continue,
            }
        };
        let trailer = &rest[trailer..];
        let trailer_len = kind.len() + DASHES.len();
        if trailer.len() < trailer_len {
            continue;
        }
        let (end_line, rest_of_line) = trailer.split_at(trailer_len);
        if !end_line.starts_with(kind) || !end_line.ends_with(DASHES) {
            continue;
        }
        if !get_line(rest_of_line).0.is_empty() {
            continue;
        }
        let Some(der) = base64_body(&rest[..end]) else {
            continue;
        };
        let block = Block {
            kind: String::from_utf8_lossy(kind).into_owned(),
            headers,
            der,
        };
        return Some((block, get_line(&rest[end + END.len() - 1..]).1));
    }
}

/// Go's `getLine`: up to the next newline (trailing spaces, tabs and a
/// carriage return trimmed), and what follows it.
fn get_line(data: &[u8]) -> (&[u8], &[u8]) {
    let (mut line, rest) = match data.iter().position(|b| *b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &data[data.len()..]),
    };
    if let Some(stripped) = line.strip_suffix(b"\r") {
        line = stripped;
    }
    while let Some((last, init)) = line.split_last()
        && matches!(last, b' ' | b'\t')
    {
        line = init;
    }
    (line, rest)
}

/// Standard base64 as Go decodes a PEM body (whitespace ignored, padding
/// required, stray trailing bits allowed).
fn base64_body(body: &[u8]) -> Option<Vec<u8>> {
    use base64::engine::{GeneralPurpose, GeneralPurposeConfig};
    const ENGINE: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true),
    );
    let text: Vec<u8> = body
        .iter()
        .copied()
        .filter(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
        .collect();
    ENGINE.decode(text).ok()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(errs: ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn names_follow_the_signer() {
        let bundle = |signer: &str| json!({"spec": {"signerName": signer}});
        assert!(bundle_name(&bundle("example.com/s"), "example.com:s:x", false).is_empty());
        assert_eq!(
            bundle_name(&bundle("example.com/s"), "x", false),
            [
                "ClusterTrustBundle for signerName example.com/s must be named with prefix example.com:s:"
            ]
        );
        assert_eq!(
            bundle_name(&json!({}), "a:b", false),
            ["ClusterTrustBundle without signer name must not have \":\" in its name"]
        );
    }

    #[test]
    fn blocks_as_go_finds_them() {
        let text = "junk\n-----BEGIN FOO-----\nAAAA\n-----END FOO-----\n-----BEGIN CERTIFICATE-----\nProc-Type: 4\n\nAAAA\n-----END CERTIFICATE-----\n";
        let blocks = pem_blocks(text.as_bytes());
        assert_eq!(blocks.len(), 2);
        assert_eq!((blocks[0].kind.as_str(), blocks[0].headers), ("FOO", false));
        assert_eq!(blocks[0].der, [0, 0, 0]);
        assert!(blocks[1].headers);
        let p = FieldPath::new("spec").child("trustBundle");
        assert_eq!(
            messages(trust_anchors(text, &p)),
            [
                r#"spec.trustBundle: Invalid value: "<value omitted>": entry 0 has bad block type: FOO"#,
                r#"spec.trustBundle: Invalid value: "<value omitted>": entry 1 has PEM block headers"#,
            ]
        );
        assert_eq!(
            messages(trust_anchors("not pem", &p)),
            [
                r#"spec.trustBundle: Invalid value: "<value omitted>": at least one trust anchor must be provided"#
            ]
        );
    }
}
