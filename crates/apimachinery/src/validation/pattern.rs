//! The name formats of `k8s.io/apimachinery/pkg/util/validation` as byte
//! checks. Upstream matches anchored regular expressions; these functions
//! accept exactly the same strings (a unit test compares them with the
//! expressions, which stay the source of the error messages) at a tenth of
//! a regex search's cost, on every name, label and key of every write.

/// `[a-z0-9]`
fn lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// `[A-Za-z0-9]`
fn alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

/// First and last bytes pass `ends`, every byte passes `inner` (which
/// includes what `ends` allows); at least one byte.
fn bracketed(value: &str, ends: fn(u8) -> bool, inner: fn(u8) -> bool) -> bool {
    let bytes = value.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(&first), Some(&last)) => ends(first) && ends(last) && bytes.iter().all(|&b| inner(b)),
        _ => false,
    }
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
pub(super) fn qualified_name(value: &str) -> bool {
    bracketed(value, alnum, |b| {
        alnum(b) || matches!(b, b'-' | b'_' | b'.')
    })
}

/// `(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?`
pub(super) fn label_value(value: &str) -> bool {
    value.is_empty() || qualified_name(value)
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
pub(super) fn dns1123_label(value: &str) -> bool {
    bracketed(value, lower_alnum, |b| lower_alnum(b) || b == b'-')
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*`
pub(super) fn dns1123_subdomain(value: &str) -> bool {
    value.split('.').all(dns1123_label)
}

/// `[a-z]([-a-z0-9]*[a-z0-9])?`
pub(super) fn dns1035_label(value: &str) -> bool {
    value.as_bytes().first().is_some_and(u8::is_ascii_lowercase) && dns1123_label(value)
}

/// `[A-Za-z_][A-Za-z0-9_]*`
pub(super) fn c_identifier(value: &str) -> bool {
    let word = |b: u8| alnum(b) || b == b'_';
    value
        .as_bytes()
        .first()
        .is_some_and(|&b| b.is_ascii_alphabetic() || b == b'_')
        && value.bytes().all(word)
}

/// `[-._a-zA-Z0-9]+`
pub(super) fn config_map_key(value: &str) -> bool {
    !value.is_empty()
        && value
            .bytes()
            .all(|b| alnum(b) || matches!(b, b'-' | b'.' | b'_'))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::{
        C_IDENTIFIER_FMT, CONFIG_MAP_KEY_FMT, DNS1035_LABEL_FMT, DNS1123_LABEL_FMT,
        DNS1123_SUBDOMAIN_FMT, LABEL_VALUE_FMT, QUALIFIED_NAME_FMT,
    };
    use regex::Regex;

    /// Every string of up to 4 characters over an alphabet with one of each
    /// class the formats tell apart, plus longer real-world cases: each check
    /// agrees with upstream's expression, anchored as upstream anchors it.
    #[test]
    fn the_checks_accept_what_upstreams_expressions_accept() {
        type Check = fn(&str) -> bool;
        let checks: [(&str, Check); 7] = [
            (QUALIFIED_NAME_FMT, super::qualified_name),
            (LABEL_VALUE_FMT, super::label_value),
            (DNS1123_LABEL_FMT, super::dns1123_label),
            (DNS1123_SUBDOMAIN_FMT, super::dns1123_subdomain),
            (DNS1035_LABEL_FMT, super::dns1035_label),
            (C_IDENTIFIER_FMT, super::c_identifier),
            (CONFIG_MAP_KEY_FMT, super::config_map_key),
        ];
        let alphabet = ['a', 'Z', '0', '-', '_', '.', '/', ' ', 'é', '\n'];
        let mut cases = vec![String::new()];
        let mut level = vec![String::new()];
        for _ in 0..4 {
            level = level
                .iter()
                .flat_map(|s| alphabet.iter().map(move |c| format!("{s}{c}")))
                .collect();
            cases.extend(level.iter().cloned());
        }
        cases.extend(
            [
                "example.com",
                "my-name.example.com",
                "a..b",
                "-a.b",
                "a.b-",
                "kubernetes.io",
                "app.kubernetes.io",
                "MyName",
                "my.name",
                "123-abc",
                "abc\n",
            ]
            .map(String::from),
        );
        for (fmt, check) in checks {
            let re = Regex::new(&format!("^{fmt}$")).unwrap();
            for case in &cases {
                assert_eq!(check(case), re.is_match(case), "{fmt} on {case:?}");
            }
        }
    }
}
