//! Timestamps in the wire format (`metav1.Time`: RFC 3339, seconds precision, UTC).

/// Now, as `2026-11-21T19:30:00Z`.
pub fn now_rfc3339() -> String {
    format_rfc3339(jiff::Timestamp::now())
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
