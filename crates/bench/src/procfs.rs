//! A process's memory from `/proc/<pid>/status`: resident now, and its peak
//! since the peak was last reset.

/// Resident memory now (`VmRSS`), in bytes.
pub fn rss(pid: u32) -> Option<u64> {
    status_kib(pid, "VmRSS:").map(|kib| kib * 1024)
}

/// Peak resident memory (`VmHWM`) since the process started or
/// [`reset_peak`] was last called, in bytes.
pub fn peak_rss(pid: u32) -> Option<u64> {
    status_kib(pid, "VmHWM:").map(|kib| kib * 1024)
}

/// Start a new peak from the current RSS (`echo 5 > /proc/<pid>/clear_refs`).
/// Returns whether the kernel accepted it.
pub fn reset_peak(pid: u32) -> bool {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok()
}

fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_own_memory_and_resets_its_peak() {
        let pid = std::process::id();
        let rss = super::rss(pid).unwrap();
        assert!(super::peak_rss(pid).unwrap() >= rss);
        assert!(super::reset_peak(pid));
        assert!(super::peak_rss(pid).unwrap() <= rss + (64 << 20));
    }
}
