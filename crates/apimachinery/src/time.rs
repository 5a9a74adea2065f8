//! Timestamps in the wire format (`metav1.Time`: RFC 3339, seconds precision, UTC).

/// Now, as `2026-11-21T19:30:00Z`.
pub fn now_rfc3339() -> String {
    // Every write stamps the time at least once; within a second the text is
    // the same, so each thread formats it once per second.
    thread_local! {
        static LAST: std::cell::RefCell<(i64, String)> = const { std::cell::RefCell::new((0, String::new())) };
    }
    let now = jiff::Timestamp::now();
    LAST.with_borrow_mut(|(second, text)| {
        if *second != now.as_second() || text.is_empty() {
            *second = now.as_second();
            *text = format_rfc3339(now);
        }
        text.clone()
    })
}

pub fn format_rfc3339(ts: jiff::Timestamp) -> String {
    ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// `metav1.MicroTime`: microsecond precision.
pub fn now_rfc3339_micros() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S.%6fZ")
        .to_string()
}

/// `seconds` from now.
pub fn rfc3339_after(seconds: i64) -> String {
    let now = jiff::Timestamp::now();
    format_rfc3339(
        now.checked_add(jiff::SignedDuration::from_secs(seconds))
            .unwrap_or(now),
    )
}

pub fn parse(s: &str) -> Option<jiff::Timestamp> {
    s.parse().ok()
}

/// How long ago an RFC 3339 timestamp was (zero for one in the future).
pub fn age(s: &str) -> Option<std::time::Duration> {
    let elapsed = jiff::Timestamp::now().duration_since(parse(s)?);
    Some(std::time::Duration::try_from(elapsed).unwrap_or_default())
}

/// Go's `duration.HumanDuration`, which kubectl's AGE column uses.
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    let s = seconds.max(0);
    let (m, h) = (s / 60, s / 3600);
    let (d, y) = (h / 24, h / (24 * 365));
    let pair = |a: i64, ua: &str, b: i64, ub: &str| {
        if b == 0 {
            format!("{a}{ua}")
        } else {
            format!("{a}{ua}{b}{ub}")
        }
    };
    match () {
        _ if s < 120 => format!("{s}s"),
        _ if m < 10 => pair(m, "m", s % 60, "s"),
        _ if m < 180 => format!("{m}m"),
        _ if h < 8 => pair(h, "h", m % 60, "m"),
        _ if h < 48 => format!("{h}h"),
        _ if h < 24 * 8 => pair(d, "d", h % 24, "h"),
        _ if h < 24 * 365 * 2 => format!("{d}d"),
        _ if h < 24 * 365 * 8 => pair(y, "y", d % 365, "d"),
        _ => format!("{y}y"),
    }
}

/// Age of an RFC 3339 timestamp; `<unknown>` if absent.
pub fn resource_age(timestamp: &str) -> String {
    match parse(timestamp) {
        Some(ts) => human_duration(jiff::Timestamp::now().as_second() - ts.as_second()),
        None => "<unknown>".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_durations_match_kubectl() {
        for (s, want) in [
            (0, "0s"),
            (59, "59s"),
            (119, "119s"),
            (125, "2m5s"),
            (600, "10m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 60, "3h1m"),
            (47 * 3600, "47h"),
            (50 * 3600, "2d2h"),
            (10 * 86400, "10d"),
            (3 * 365 * 86400, "3y"),
        ] {
            assert_eq!(human_duration(s), want, "{s}s");
        }
    }
}
