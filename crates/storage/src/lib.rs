//! Revisioned key-value storage with etcd semantics, and the watch cache above it.
//!
//! Invariant: knows nothing of Kubernetes objects. Keys are strings, values are bytes,
//! every write gets the next global revision. `cache::Store` turns a backend into
//! an in-memory, watchable view through a caller-supplied `Codec`.
//!
//! Backends: `memory` (tests, `--storage memory`), `sqlite` (embedded default),
//! `etcd` (feature `etcd`). All pass the same `conformance` suite (feature
//! `conformance`, for tests).

pub mod backend;
pub mod backoff;
pub mod cache;
#[cfg(feature = "conformance")]
pub mod conformance;
#[cfg(feature = "etcd")]
pub mod etcd;
pub mod memory;
pub mod sqlite;
#[cfg(test)]
mod testing;

pub use backend::{Backend, Error, Event, KeyValue, Range, Result};
pub use backoff::Backoff;
pub use cache::{
    Bookmarker, Codec, DecodeError, Entry, Store, StoreOptions, WatchItem, WatchStart, Watcher,
};

/// The exclusive end of the key range that starts with `prefix`
/// (etcd's "prefix end": increment the last byte that is not 0xff).
pub fn prefix_end(prefix: &str) -> String {
    let mut bytes = prefix.as_bytes().to_vec();
    while let Some(last) = bytes.pop() {
        if last < 0xff {
            bytes.push(last + 1);
            return String::from_utf8_lossy(&bytes).into_owned();
        }
    }
    String::from("\u{10ffff}")
}
