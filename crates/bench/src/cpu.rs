//! CPU time of processes from `/proc/<pid>/stat`, to see who burns the 2 cores
//! during a phase: the server, etcd, or the benchmark's own clients.

use std::time::{Duration, Instant};

/// Clock ticks per second of `utime`/`stime` (USER_HZ, 100 on every Linux ABI).
const USER_HZ: u64 = 100;

/// User + system CPU time of every thread of `pid` ("self" for this process).
pub fn cpu_time(pid: &str) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which may contain spaces: field 3 onwards.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(Duration::from_millis((utime + stime) * 1000 / USER_HZ))
}

/// Average cores used by each watched process over a phase.
#[derive(Debug, Clone, Default)]
pub struct Split {
    pub server: Option<f64>,
    pub etcd: Option<f64>,
    pub bench: Option<f64>,
    /// The phase's wall time.
    pub wall: Duration,
}

/// Started at the beginning of a phase; [`Meter::finish`] at its end.
pub struct Meter {
    started: Instant,
    /// The server's processes (kube-apiserver and kube-controller-manager count
    /// as one server), etcd's, and this benchmark's.
    pids: [Vec<String>; 3],
    before: [Option<Duration>; 3],
}

/// CPU time of all of `pids` together; `None` without pids or if one is gone.
fn total_cpu_time(pids: &[String]) -> Option<Duration> {
    if pids.is_empty() {
        return None;
    }
    pids.iter().map(|p| cpu_time(p)).sum()
}

impl Meter {
    pub fn start(server: &[u32], etcd: Option<u32>) -> Self {
        let pids = [
            server.iter().map(u32::to_string).collect(),
            etcd.iter().map(u32::to_string).collect(),
            vec!["self".to_owned()],
        ];
        let before = [0, 1, 2].map(|i| total_cpu_time(&pids[i]));
        Meter {
            started: Instant::now(),
            pids,
            before,
        }
    }

    pub fn finish(&self) -> Split {
        let wall = self.started.elapsed().as_secs_f64();
        let used = |i: usize| -> Option<f64> {
            let after = total_cpu_time(&self.pids[i])?;
            let before = self.before[i]?;
            (wall > 0.0).then(|| after.saturating_sub(before).as_secs_f64() / wall)
        };
        Split {
            server: used(0),
            etcd: used(1),
            bench: used(2),
            wall: self.started.elapsed(),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_own_cpu_time() {
        assert!(super::cpu_time("self").is_some());
    }
}
