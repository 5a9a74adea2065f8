//! What one run measures: how many objects, requests, watchers and server
//! starts, and the time each phase may take.

use std::time::Duration;

/// Sizes and time budgets of one backend's run.
#[derive(Debug, Clone)]
pub struct Plan {
    pub starts: usize,
    pub objects: usize,
    pub concurrency: usize,
    pub gets: usize,
    pub lists_small: usize,
    pub lists_all: usize,
    pub watchers: usize,
    pub watch_objects: usize,
    /// Creates made one at a time, `paced_interval` apart, while the watchers are open.
    pub paced_objects: usize,
    pub paced_interval: Duration,
    /// Watches that never read, and the events written while they are open.
    pub slow_watchers: usize,
    pub slow_events: usize,
    /// Budget of each throughput phase (creates, watch writes).
    pub write_budget: Duration,
    /// Budget of each latency phase (gets, lists).
    pub read_budget: Duration,
}
