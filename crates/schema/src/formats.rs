//! String formats of kube-openapi's default `strfmt` registry, as validated
//! for custom resources. Unknown formats (and numeric ones such as `int32`)
//! are accepted, as upstream.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

use regex::Regex;

/// A pattern written in this crate (the unit tests compile each).
#[expect(clippy::expect_used, reason = "constant patterns")]
pub(crate) fn constant_regex(pattern: &str) -> Regex {
    Regex::new(pattern).expect("constant regex compiles")
}

static HOSTNAME: LazyLock<Regex> = LazyLock::new(|| {
    constant_regex(
        r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z0-9\p{S}\p{L}])(-?[a-zA-Z0-9\p{S}\p{L}]){1,62})$",
    )
});
/// govalidator's `IsBase64` (the empty string is not base64 there).
static BASE64: LazyLock<Regex> = LazyLock::new(|| {
    constant_regex(
        r"^(?:[A-Za-z0-9+\/]{4})*(?:[A-Za-z0-9+\/]{2}==|[A-Za-z0-9+\/]{3}=|[A-Za-z0-9+\/]{4})$",
    )
});
static UUID: LazyLock<Regex> = LazyLock::new(|| {
    constant_regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
});
static UUID3: LazyLock<Regex> = LazyLock::new(|| {
    constant_regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
});
static UUID4: LazyLock<Regex> = LazyLock::new(|| {
    constant_regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static UUID5: LazyLock<Regex> = LazyLock::new(|| {
    constant_regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static EMAIL: LazyLock<Regex> =
    LazyLock::new(|| constant_regex(r"^(?:[^<>\s@]+@[^<>\s@]+|[^<>@]*<[^<>\s@]+@[^<>\s@]+>)$"));
static MAC: LazyLock<Regex> = LazyLock::new(|| {
    constant_regex(
        r"^(?:[0-9a-fA-F]{2}(?:[:-][0-9a-fA-F]{2}){5}|[0-9a-fA-F]{2}(?:[:-][0-9a-fA-F]{2}){7}|[0-9a-fA-F]{2}(?:[:-][0-9a-fA-F]{2}){19}|[0-9a-fA-F]{4}(?:\.[0-9a-fA-F]{4}){2}|[0-9a-fA-F]{4}(?:\.[0-9a-fA-F]{4}){3}|[0-9a-fA-F]{4}(?:\.[0-9a-fA-F]{4}){9})$",
    )
});
static HEXCOLOR: LazyLock<Regex> =
    LazyLock::new(|| constant_regex(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"));
static RGBCOLOR: LazyLock<Regex> = LazyLock::new(|| {
    constant_regex(
        r"^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$",
    )
});
static DATE: LazyLock<Regex> = LazyLock::new(|| constant_regex(r"^\d{4}-\d{2}-\d{2}$"));
/// strfmt's `IsDateTime`: a full date, `t`/`T`, then a time with a required
/// zone (`z` or `±hh:mm`); the fraction separator is any character, as upstream.
static DATETIME: LazyLock<Regex> = LazyLock::new(|| {
    constant_regex(
        r"^(\d{4})-(\d{2})-(\d{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})$",
    )
});
/// Approximates strfmt's `ParseDuration` (Go durations plus spelled-out units).
static DURATION: LazyLock<Regex> = LazyLock::new(|| {
    constant_regex(
        r"^(?:[+-]?0|(?:\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)\s*(?:ns|us|µs|ms|s|secs?|m|mins?|h|hrs?|hours?|d|days?|w|wks?|weeks?|nano|micro|milli)\s*)+)$",
    )
});
static URI_SCHEME: LazyLock<Regex> = LazyLock::new(|| constant_regex(r"^[a-zA-Z][a-zA-Z0-9+.-]*:"));
static ISBN10: LazyLock<Regex> = LazyLock::new(|| constant_regex(r"^(?:[0-9]{9}X|[0-9]{10})$"));
static ISBN13: LazyLock<Regex> = LazyLock::new(|| constant_regex(r"^(?:[0-9]{13})$"));
static SSN: LazyLock<Regex> = LazyLock::new(|| constant_regex(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$"));

fn valid_date(y: &str, m: &str, d: &str) -> bool {
    let (Ok(y), Ok(m), Ok(d)) = (y.parse::<i16>(), m.parse::<i8>(), d.parse::<i8>()) else {
        return false;
    };
    jiff::civil::Date::new(y, m, d).is_ok()
}

fn is_date(s: &str) -> bool {
    DATE.is_match(s) && valid_date(&s[0..4], &s[5..7], &s[8..10])
}

fn is_date_time(s: &str) -> bool {
    if s.chars().filter(|c| c.eq_ignore_ascii_case(&'t')).count() != 1 {
        return false;
    }
    let Some(c) = DATETIME.captures(s) else {
        return false;
    };
    let g = |i: usize| c.get(i).map_or("", |m| m.as_str());
    let (Ok(h), Ok(mi), Ok(se)) = (g(4).parse::<u8>(), g(5).parse::<u8>(), g(6).parse::<u8>())
    else {
        return false;
    };
    valid_date(g(1), g(2), g(3)) && h < 24 && mi < 60 && se < 60
}

fn is_hostname(s: &str) -> bool {
    HOSTNAME.is_match(s) && s.len() <= 255 && s.split('.').all(|p| p.len() <= 63)
}

fn is_uri(s: &str) -> bool {
    // Go's url.ParseRequestURI: an absolute URI or an absolute path.
    !s.is_empty()
        && !s.chars().any(|c| c.is_control() || c == ' ')
        && (s.starts_with('/') || URI_SCHEME.is_match(s))
}

fn is_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let Ok(bits) = bits.parse::<u8>() else {
        return false;
    };
    if ip.parse::<Ipv4Addr>().is_ok() {
        bits <= 32
    } else {
        ip.parse::<Ipv6Addr>().is_ok() && bits <= 128
    }
}

/// Whether `s` is valid for `format`; unknown formats are valid.
pub fn check_format(format: &str, s: &str) -> bool {
    match format {
        "date" => is_date(s),
        "date-time" | "datetime" => is_date_time(s),
        "uuid" => UUID.is_match(s),
        "uuid3" => UUID3.is_match(s),
        "uuid4" => UUID4.is_match(s),
        "uuid5" => UUID5.is_match(s),
        "byte" => BASE64.is_match(s),
        "email" => EMAIL.is_match(s),
        "hostname" => is_hostname(s),
        "ipv4" => s.parse::<Ipv4Addr>().is_ok(),
        "ipv6" => s.contains(':') && s.parse::<IpAddr>().is_ok(),
        "cidr" => is_cidr(s),
        "mac" => MAC.is_match(s),
        "uri" => is_uri(s),
        "hexcolor" => HEXCOLOR.is_match(s),
        "rgbcolor" => RGBCOLOR.is_match(s),
        "duration" => DURATION.is_match(s),
        "isbn10" => ISBN10.is_match(s),
        "isbn13" => ISBN13.is_match(s),
        "isbn" => ISBN10.is_match(s) || ISBN13.is_match(s),
        "ssn" => SSN.is_match(s),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::check_format;

    #[test]
    fn format_table() {
        let cases: &[(&str, &str, bool)] = &[
            ("date", "2024-02-29", true),
            ("date", "2023-02-29", false),
            ("date", "2024-1-02", false),
            ("date-time", "2024-01-02T03:04:05Z", true),
            ("date-time", "2024-01-02T03:04:05.123456789+05:30", true),
            ("datetime", "2024-01-02T03:04:05z", true),
            ("date-time", "2024-01-02T24:00:00Z", false),
            ("date-time", "2024-01-02T03:04:05", false),
            ("uuid", "123E4567-E89B-12D3-A456-426614174000", true),
            ("uuid", "123e4567e89b12d3a456426614174000", true),
            ("uuid", "123e4567-e89b-12d3-a456", false),
            ("uuid4", "123e4567-e89b-42d3-a456-426614174000", true),
            ("uuid4", "123e4567-e89b-12d3-a456-426614174000", false),
            ("byte", "aGVsbG8=", true),
            ("byte", "aGVsbG8", false),
            ("byte", "", false),
            ("email", "someone@example.com", true),
            ("email", "Some One <someone@example.com>", true),
            ("email", "someone", false),
            ("hostname", "example.com", true),
            ("hostname", "a", true),
            ("hostname", "-a.com", false),
            ("hostname", "a_b.com", false),
            ("ipv4", "192.168.0.1", true),
            ("ipv4", "256.1.1.1", false),
            ("ipv6", "2001:db8::1", true),
            ("ipv6", "192.168.0.1", false),
            ("cidr", "10.0.0.0/8", true),
            ("cidr", "2001:db8::/32", true),
            ("cidr", "10.0.0.0", false),
            ("mac", "01:23:45:67:89:ab", true),
            ("mac", "01:23:45:67:89", false),
            ("uri", "https://example.com/a?b=c", true),
            ("uri", "/absolute/path", true),
            ("uri", "relative", false),
            ("hexcolor", "#fff", true),
            ("hexcolor", "#ffff", false),
            ("rgbcolor", "rgb(1, 2, 255)", true),
            ("duration", "1h30m", true),
            ("duration", "1.5h", true),
            ("duration", "soon", false),
            ("password", "anything", true),
            ("int32", "not-checked", true),
            ("no-such-format", "anything", true),
        ];
        for (format, value, want) in cases {
            assert_eq!(check_format(format, value), *want, "{format} {value:?}");
        }
    }
}
