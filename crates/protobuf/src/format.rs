//! Go-compatible text forms of times and durations.

/// Unix seconds of Go's zero `time.Time` (0001-01-01T00:00:00Z), which
/// `metav1.Time`/`MicroTime` marshal as JSON `null`.
pub(crate) const GO_ZERO_TIME_UNIX: i64 = -62_135_596_800;
/// 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z: the years RFC 3339 can express.
const MIN_UNIX: i64 = -62_167_219_200;
const MAX_UNIX: i64 = 253_402_300_799;

/// `(year, month, day)` of a day count since 1970-01-01 (proleptic Gregorian).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `(unix seconds, nanos)` of an RFC 3339 time as Go's `time.Parse` reads
/// `metav1.Time`/`MicroTime` JSON: `2006-01-02T15:04:05[.fraction](Z|±hh:mm)`.
pub(crate) fn parse_rfc3339(text: &str) -> Option<(i64, i32)> {
    let b = text.as_bytes();
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let digits = text.get(range)?;
        digits
            .bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| digits.parse().ok())?
    };
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = &text[19..];
    let mut nanos = 0i64;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        for (i, c) in fraction[..digits].bytes().enumerate().take(9) {
            nanos += i64::from(c - b'0') * 10i64.pow(8 - i as u32);
        }
        rest = &fraction[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ if rest.len() == 6 && matches!(&rest[..1], "+" | "-") && &rest[3..4] == ":" => {
            let minutes = rest[1..3].parse::<i64>().ok()? * 60 + rest[4..6].parse::<i64>().ok()?;
            if &rest[..1] == "-" {
                -minutes * 60
            } else {
                minutes * 60
            }
        }
        _ => return None,
    };
    let secs =
        days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset;
    Some((secs, nanos as i32))
}

/// A `float64` as Go's encoding/json writes it: integral values without a
/// fraction (`5`, not `5.0`).
pub(crate) fn go_float(f: f64) -> serde_json::Value {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        serde_json::Value::from(f as i64)
    } else {
        serde_json::Number::from_f64(f).map_or(serde_json::Value::Null, serde_json::Value::Number)
    }
}

/// RFC 3339 in UTC, `2006-01-02T15:04:05Z` or with `.000000` microseconds.
/// `None` when the year is outside 0000..=9999.
fn rfc3339(secs: i64, micros: Option<u32>) -> Option<String> {
    if !(MIN_UNIX..=MAX_UNIX).contains(&secs) {
        return None;
    }
    let (y, mo, d) = civil_from_days(secs.div_euclid(86_400));
    let sod = secs.rem_euclid(86_400);
    let (h, mi, s) = (sod / 3600, sod / 60 % 60, sod % 60);
    Some(match micros {
        None => format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z"),
        Some(us) => format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{us:06}Z"),
    })
}

/// The JSON form of a `metav1.Time` decoded from protobuf. Go's unmarshaller
/// ignores `nanos` (the JSON form only has seconds). `Ok(None)` = zero time (null).
pub(crate) fn time(seconds: i64) -> Result<Option<String>, String> {
    if seconds == GO_ZERO_TIME_UNIX {
        return Ok(None);
    }
    rfc3339(seconds, None)
        .map(Some)
        .ok_or_else(|| format!("time {seconds}s since the epoch is outside years 0-9999"))
}

/// The JSON form of a `metav1.MicroTime`: nanos are truncated to microseconds
/// (toward zero, as Go's `Duration.Truncate`) and normalised like `time.Unix`.
pub(crate) fn micro_time(seconds: i64, nanos: i32) -> Result<Option<String>, String> {
    let nanos = i128::from(nanos);
    let truncated = nanos - nanos % 1000;
    let total = i128::from(seconds) * 1_000_000_000 + truncated;
    let secs = total.div_euclid(1_000_000_000);
    let frac = total.rem_euclid(1_000_000_000);
    let out_of_range = || format!("time {seconds}s since the epoch is outside years 0-9999");
    let secs = i64::try_from(secs).map_err(|_| out_of_range())?;
    if secs == GO_ZERO_TIME_UNIX && frac == 0 {
        return Ok(None);
    }
    let micros = u32::try_from(frac / 1000).map_err(|_| out_of_range())?;
    rfc3339(secs, Some(micros))
        .map(Some)
        .ok_or_else(out_of_range)
}

/// Go's `time.Duration.String()`: "1h2m3.5s", "1.5ms", "2µs", "0s".
pub(crate) fn go_duration(nanos: i64) -> String {
    let neg = nanos < 0;
    let u = nanos.unsigned_abs();
    let sign = if neg { "-" } else { "" };
    if u == 0 {
        return "0s".to_string();
    }
    if u < 1_000_000_000 {
        let (prec, unit) = match u {
            0..1_000 => (0, "ns"),
            1_000..1_000_000 => (3, "µs"),
            _ => (6, "ms"),
        };
        let scale = 10u64.pow(prec);
        return format!("{sign}{}{}{unit}", u / scale, frac(u % scale, prec));
    }
    let secs = u / 1_000_000_000;
    let f = frac(u % 1_000_000_000, 9);
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    if h > 0 {
        format!("{sign}{h}h{m}m{s}{f}s")
    } else if m > 0 {
        format!("{sign}{m}m{s}{f}s")
    } else {
        format!("{sign}{s}{f}s")
    }
}

/// ".123" for the `prec`-digit fraction `v`, trailing zeros trimmed; "" for 0.
fn frac(v: u64, prec: u32) -> String {
    if v == 0 {
        return String::new();
    }
    let digits = format!("{v:0width$}", width = prec as usize);
    format!(".{}", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn times() {
        assert_eq!(time(0).unwrap().unwrap(), "1970-01-01T00:00:00Z");
        assert_eq!(
            time(1_795_289_400).unwrap().unwrap(),
            "2026-11-21T19:30:00Z"
        );
        assert_eq!(time(951_782_400).unwrap().unwrap(), "2000-02-29T00:00:00Z");
        assert_eq!(time(-1).unwrap().unwrap(), "1969-12-31T23:59:59Z");
        assert_eq!(time(MAX_UNIX).unwrap().unwrap(), "9999-12-31T23:59:59Z");
        assert_eq!(time(MIN_UNIX).unwrap().unwrap(), "0000-01-01T00:00:00Z");
        assert_eq!(time(GO_ZERO_TIME_UNIX).unwrap(), None);
        assert_eq!(
            time(GO_ZERO_TIME_UNIX + 1).unwrap().unwrap(),
            "0001-01-01T00:00:01Z"
        );
        assert!(time(MAX_UNIX + 1).is_err());
        assert!(time(i64::MIN).is_err());
    }

    #[test]
    fn micro_times() {
        assert_eq!(
            micro_time(1_795_289_400, 123_456_789).unwrap().unwrap(),
            "2026-11-21T19:30:00.123456Z"
        );
        assert_eq!(
            micro_time(0, 0).unwrap().unwrap(),
            "1970-01-01T00:00:00.000000Z"
        );
        // Out-of-range nanos are normalised like Go's time.Unix.
        assert_eq!(
            micro_time(0, -1_500).unwrap().unwrap(),
            "1969-12-31T23:59:59.999999Z"
        );
        assert_eq!(
            micro_time(0, 1_000_001_000).unwrap().unwrap(),
            "1970-01-01T00:00:01.000001Z"
        );
        assert_eq!(micro_time(GO_ZERO_TIME_UNIX, 999).unwrap(), None);
        assert!(micro_time(i64::MAX, i32::MAX).is_err());
        assert!(micro_time(i64::MIN, i32::MIN).is_err());
    }

    #[test]
    fn durations() {
        let cases: &[(i64, &str)] = &[
            (0, "0s"),
            (1, "1ns"),
            (1_100, "1.1µs"),
            (2_200_000, "2.2ms"),
            (3_300_000_000, "3.3s"),
            (4 * 60_000_000_000 + 5_000_000_000, "4m5s"),
            (4 * 60_000_000_000 + 5_001_000_000, "4m5.001s"),
            (
                5 * 3_600_000_000_000 + 6 * 60_000_000_000 + 7_001_000_000,
                "5h6m7.001s",
            ),
            (8 * 3_600_000_000_000 + 1, "8h0m0.000000001s"),
            (-1_500_000_000, "-1.5s"),
            (i64::MAX, "2562047h47m16.854775807s"),
            (i64::MIN, "-2562047h47m16.854775808s"),
        ];
        for &(ns, want) in cases {
            assert_eq!(go_duration(ns), want, "{ns}");
        }
    }
}
