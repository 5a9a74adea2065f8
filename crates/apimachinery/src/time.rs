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
