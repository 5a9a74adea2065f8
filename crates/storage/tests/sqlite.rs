//! The SQLite backend: the conformance suite, then what only a durable,
//! group-committing backend has to get right (reopening, crash safety, batching).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bytes::Bytes;
use futures::StreamExt;
use kubext_storage::sqlite::SqliteBackend;
use kubext_storage::{Backend, Error, Event, KeyValue};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tempfile::TempDir;

kubext_storage::conformance_tests!({
    let dir = tempfile::tempdir().unwrap();
    let backend = SqliteBackend::open(&dir.path().join("kubext.db")).unwrap();
    (Arc::new(backend), dir)
});

fn temp_db() -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubext.db");
    (dir, path)
}

fn val(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

async fn next_events(
    stream: &mut futures::stream::BoxStream<'static, kubext_storage::Result<Vec<Event>>>,
    n: usize,
) -> Vec<Event> {
    let mut out = Vec::new();
    while out.len() < n {
        let batch = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .expect("timed out waiting for events")
            .expect("watch ended")
            .expect("watch failed");
        out.extend(batch);
    }
    assert_eq!(out.len(), n);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_survives_reopen_and_revisions_continue() {
    let (_dir, path) = temp_db();
    let b = SqliteBackend::open(&path).unwrap();
    assert_eq!(b.path(), path);
    assert_eq!(b.current_revision().await.unwrap(), 0);
    let r1 = b.create("/a", val("a1")).await.unwrap();
    let r2 = b.update("/a", val("a2"), r1).await.unwrap();
    let r3 = b.create("/b", val("b1")).await.unwrap();
    let (r4, _) = b.delete("/b", None).await.unwrap();
    let r5 = b.create("/c", val("c1")).await.unwrap();
    assert_eq!((r1, r2, r3, r4, r5), (1, 2, 3, 4, 5));
    b.close().await;
    assert!(matches!(b.get("/a").await, Err(Error::Unavailable(_))));
    assert!(matches!(
        b.create("/z", val("z")).await,
        Err(Error::Unavailable(_))
    ));
    drop(b);

    let b = SqliteBackend::open(&path).unwrap();
    assert_eq!(b.current_revision().await.unwrap(), 5);
    let a = b.get("/a").await.unwrap().unwrap();
    assert_eq!(
        (a.value.as_ref(), a.create_revision, a.mod_revision),
        (&b"a2"[..], 1, 2)
    );
    assert_eq!(b.get("/b").await.unwrap(), None);
    // The recovered index drives compare-and-swap and existence checks.
    assert!(matches!(
        b.create("/a", val("x")).await,
        Err(Error::AlreadyExists(_))
    ));
    assert!(matches!(
        b.update("/a", val("x"), r1).await,
        Err(Error::Conflict { .. })
    ));
    assert!(matches!(
        b.delete("/b", None).await,
        Err(Error::NotFound(_))
    ));
    assert_eq!(b.update("/a", val("a3"), r2).await.unwrap(), 6);
    assert_eq!(b.create("/b", val("b2")).await.unwrap(), 7);
    // History from before the restart is still there.
    let at3 = b.range("/", "0", 3, 0).await.unwrap();
    let keys: Vec<&str> = at3.kvs.iter().map(|kv| &*kv.key).collect();
    assert_eq!(keys, ["/a", "/b"]);
    let mut w = b.watch(0).unwrap();
    let events = next_events(&mut w, 7).await;
    let revisions: Vec<i64> = events.iter().map(Event::revision).collect();
    assert_eq!(revisions, [1, 2, 3, 4, 5, 6, 7]);
    assert!(matches!(&events[3], Event::Delete { revision: 4, prev } if prev.value == val("b1")));
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_survives_reopen() {
    let (_dir, path) = temp_db();
    let b = SqliteBackend::open(&path).unwrap();
    let r1 = b.create("/k", val("1")).await.unwrap();
    let r2 = b.update("/k", val("2"), r1).await.unwrap();
    let r3 = b.create("/gone", val("x")).await.unwrap();
    let (r4, _) = b.delete("/gone", Some(r3)).await.unwrap();
    b.compact(r4).await.unwrap();
    b.close().await;

    let b = SqliteBackend::open(&path).unwrap();
    assert_eq!(b.current_revision().await.unwrap(), r4);
    assert_eq!(
        b.range("/", "0", r2, 0).await.unwrap_err(),
        Error::Compacted {
            requested: r2,
            compacted: r4
        }
    );
    assert!(matches!(b.watch(0), Err(Error::Compacted { compacted, .. }) if compacted == r4));
    let all = b.range("/", "0", 0, 0).await.unwrap();
    assert_eq!(
        all.kvs,
        vec![KeyValue {
            key: "/k".into(),
            value: val("2"),
            create_revision: r1,
            mod_revision: r2
        }]
    );
    // The tombstone is gone from disk, the revision counter is not.
    assert_eq!(b.create("/gone", val("y")).await.unwrap(), r4 + 1);
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_commit_batches_concurrent_creates() {
    const N: usize = 200;
    let (_dir, path) = temp_db();
    let b = Arc::new(SqliteBackend::open(&path).unwrap());
    let before = b.commit_stats();
    let start = Arc::new(tokio::sync::Barrier::new(N));
    let tasks: Vec<_> = (0..N)
        .map(|i| {
            let (b, start) = (b.clone(), start.clone());
            tokio::spawn(async move {
                start.wait().await;
                b.create(&format!("/group/{i:03}"), val("v")).await.unwrap()
            })
        })
        .collect();
    let mut revisions = Vec::new();
    for task in tasks {
        revisions.push(task.await.unwrap());
    }
    revisions.sort_unstable();
    assert_eq!(revisions, (1..=N as i64).collect::<Vec<_>>());
    let stats = b.commit_stats();
    let transactions = stats.transactions - before.transactions;
    let writes = stats.writes - before.writes;
    println!("group commit: {writes} creates in {transactions} transactions");
    assert_eq!(writes, N as u64);
    assert!(
        transactions >= 1 && transactions < N as u64,
        "{transactions} transactions: nothing was grouped"
    );
    b.close().await;
}

/// `close` answers every request: those queued before it commit (durably), later
/// ones fail with `Unavailable`; nothing hangs and nothing acknowledged is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_drains_queued_requests() {
    let (_dir, path) = temp_db();
    let b = Arc::new(SqliteBackend::open(&path).unwrap());
    let tasks: Vec<_> = (0..200)
        .map(|i| {
            let b = b.clone();
            tokio::spawn(async move {
                let key = format!("/drain/{i:03}");
                (b.create(&key, val("v")).await, key)
            })
        })
        .collect();
    tokio::task::yield_now().await;
    b.close().await;
    let mut acked = Vec::new();
    for task in tasks {
        match tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .unwrap()
            .unwrap()
        {
            (Ok(rev), key) => acked.push((key, rev)),
            (Err(Error::Unavailable(_)), _) => {}
            (Err(e), key) => panic!("{key}: unexpected {e:?}"),
        }
    }
    println!("{} of 200 creates were queued before close", acked.len());
    b.close().await; // a second close is harmless
    drop(b);

    let b = SqliteBackend::open(&path).unwrap();
    assert_eq!(b.current_revision().await.unwrap(), acked.len() as i64);
    for (key, rev) in &acked {
        assert_eq!(b.get(key).await.unwrap().unwrap().mod_revision, *rev);
    }
    b.close().await;
}

/// Failed compare-and-swaps inside a group fail alone; the rest of the group commits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_requests_in_a_group_fail_alone() {
    let (_dir, path) = temp_db();
    let b = Arc::new(SqliteBackend::open(&path).unwrap());
    let r1 = b.create("/x", val("0")).await.unwrap();
    let start = Arc::new(tokio::sync::Barrier::new(60));
    let tasks: Vec<_> = (0..60)
        .map(|i| {
            let (b, start) = (b.clone(), start.clone());
            tokio::spawn(async move {
                start.wait().await;
                match i % 3 {
                    0 => b.create(&format!("/ok/{i}"), val("v")).await.map(|_| ()),
                    1 => b.create("/x", val("dup")).await.map(|_| ()),
                    _ => b.update("/x", val("stale"), r1 + 1000).await.map(|_| ()),
                }
            })
        })
        .collect();
    let mut ok = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(()) => ok += 1,
            Err(Error::AlreadyExists(_) | Error::Conflict { .. }) => {}
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
    assert_eq!(ok, 20);
    assert_eq!(b.current_revision().await.unwrap(), r1 + 20);
    assert_eq!(b.range("/ok/", "/ok0", 0, 0).await.unwrap().count, 20);
    b.close().await;
}

/// A backlog longer than a page, read while writes continue, has no gaps or duplicates.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_backlog_then_live_without_gaps() {
    let (_dir, path) = temp_db();
    let b = Arc::new(SqliteBackend::open(&path).unwrap());
    let mut writers = Vec::new();
    for t in 0..8 {
        let b = b.clone();
        writers.push(tokio::spawn(async move {
            for i in 0..300 {
                b.create(&format!("/bl/{t}/{i}"), val("v")).await.unwrap();
            }
        }));
    }
    // Start watching from 0 while the writers are running.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let mut w = b.watch(0).unwrap();
    for writer in writers {
        writer.await.unwrap();
    }
    let events = next_events(&mut w, 2400).await;
    for (i, event) in events.iter().enumerate() {
        assert_eq!(event.revision(), i as i64 + 1);
    }
    b.close().await;
    // Closing ends the stream.
    let end = tokio::time::timeout(Duration::from_secs(5), w.next())
        .await
        .unwrap();
    assert!(end.is_none(), "{end:?}");
}

#[tokio::test]
async fn refuses_files_that_are_not_kubext_databases() {
    let dir = tempfile::tempdir().unwrap();

    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, "this is not a database\n".repeat(200)).unwrap();
    match SqliteBackend::open(&junk) {
        Err(Error::Corrupt(msg)) => assert!(msg.contains("junk.db"), "{msg}"),
        other => panic!("expected Corrupt, got {other:?}"),
    }
    assert_eq!(
        std::fs::read(&junk).unwrap(),
        "this is not a database\n".repeat(200).as_bytes(),
        "a foreign file is left untouched"
    );

    let foreign = dir.path().join("foreign.db");
    {
        let conn = rusqlite::Connection::open(&foreign).unwrap();
        conn.execute_batch("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
            .unwrap();
    }
    match SqliteBackend::open(&foreign) {
        Err(Error::Corrupt(msg)) => {
            assert!(
                msg.contains("foreign.db") && msg.contains("not a kubext database"),
                "{msg}"
            )
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }

    // An empty file is a fresh database.
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, "").unwrap();
    let b = SqliteBackend::open(&empty).unwrap();
    assert_eq!(b.create("/a", val("a")).await.unwrap(), 1);
    b.close().await;
}

#[test]
fn unopenable_path_names_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    for path in [
        dir.path().join("missing-dir").join("kubext.db"),
        file.join("kubext.db"),
    ] {
        match SqliteBackend::open(&path) {
            Err(Error::Unavailable(msg)) => {
                assert!(msg.contains(&*path.to_string_lossy()), "{msg}")
            }
            other => panic!("expected Unavailable for {}, got {other:?}", path.display()),
        }
    }
}

#[cfg(unix)]
#[test]
fn unwritable_directory_names_the_path() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let locked = dir.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
    let path = locked.join("kubext.db");
    let writable = std::fs::write(locked.join("probe"), "").is_ok();
    if writable {
        // Running as root: permissions do not apply; nothing to test.
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
        return;
    }
    match SqliteBackend::open(&path) {
        Err(Error::Unavailable(msg)) => {
            println!("{msg}");
            assert!(msg.contains(&*path.to_string_lossy()), "{msg}")
        }
        other => panic!("expected Unavailable, got {other:?}"),
    }
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
}

// ---------------------------------------------------------------------------------
// Crash safety: a child process (this test binary, re-invoked) writes and prints
// each acknowledged revision; it is SIGKILLed mid-stream; every acknowledged write
// must be in the reopened database.

const CHILD_ENV: &str = "KUBEXT_SQLITE_CRASH_CHILD_DB";

/// Only does something when re-invoked by `acknowledged_writes_survive_sigkill`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_child_writer() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return;
    };
    let b = Arc::new(SqliteBackend::open(Path::new(&path)).unwrap());
    let mut tasks = Vec::new();
    for t in 0..4 {
        let b = b.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0.. {
                let key = format!("/crash/{t}/{i}");
                let rev = b
                    .create(&key, val(&format!("value {t} {i}")))
                    .await
                    .unwrap();
                println!("ACK {key} {rev}");
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
}

#[cfg(unix)]
#[test]
fn acknowledged_writes_survive_sigkill() {
    use std::os::unix::process::ExitStatusExt;

    let (_dir, path) = temp_db();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "crash_child_writer",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut acked: Vec<(String, i64)> = Vec::new();
    let parse = |line: &str| {
        let ack = &line[line.find("ACK ")? + 4..];
        let (key, rev) = ack.split_once(' ')?;
        Some((key.to_string(), rev.trim().parse::<i64>().ok()?))
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while acked.len() < 300 && Instant::now() < deadline {
        let Some(line) = lines.next() else { break };
        if let Some(ack) = parse(&line.unwrap()) {
            acked.push(ack);
        }
    }
    assert!(
        acked.len() >= 300,
        "child acknowledged only {} writes",
        acked.len()
    );
    child.kill().unwrap(); // SIGKILL
    // Whatever was printed before the kill was acknowledged too.
    for line in lines {
        let Ok(line) = line else { break };
        if let Some(ack) = parse(&line) {
            acked.push(ack);
        }
    }
    let status = child.wait().unwrap();
    assert_eq!(
        status.signal(),
        Some(9),
        "the child was killed mid-stream: {status:?}"
    );

    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let b = SqliteBackend::open(&path).unwrap();
        let current = b.current_revision().await.unwrap();
        let mut revisions = Vec::new();
        for (key, rev) in &acked {
            let kv = b
                .get(key)
                .await
                .unwrap()
                .unwrap_or_else(|| panic!("acknowledged {key} at {rev} is missing"));
            assert_eq!(kv.mod_revision, *rev, "{key}");
            assert!(*rev <= current);
            revisions.push(*rev);
        }
        revisions.sort_unstable();
        revisions.dedup();
        assert_eq!(
            revisions.len(),
            acked.len(),
            "acknowledged revisions are distinct"
        );
        println!(
            "{} acknowledged writes survived SIGKILL (database at revision {current})",
            acked.len()
        );
        // The database is usable and continues from where it stopped.
        assert_eq!(
            b.create("/after-crash", val("x")).await.unwrap(),
            current + 1
        );
        b.close().await;
    });
}

// ---------------------------------------------------------------------------------
// Throughput (run by hand):
// cargo test --release -p kubext-storage --test sqlite -- --ignored --nocapture throughput

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark; run by hand in release mode"]
async fn throughput() {
    for tasks in [1usize, 64] {
        let (_dir, path) = temp_db();
        let b = Arc::new(SqliteBackend::open(&path).unwrap());
        let per_task = if tasks == 1 { 2000 } else { 20_000 / tasks };
        let started = Instant::now();
        let handles: Vec<_> = (0..tasks)
            .map(|t| {
                let b = b.clone();
                tokio::spawn(async move {
                    for i in 0..per_task {
                        b.create(&format!("/bench/{t}/{i}"), Bytes::from(vec![b'x'; 512]))
                            .await
                            .unwrap();
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.await.unwrap();
        }
        let elapsed = started.elapsed();
        let total = tasks * per_task;
        let stats = b.commit_stats();
        println!(
            "{tasks:>3} task(s): {total} creates in {elapsed:.2?} = {:.0} creates/s ({} transactions, {:.1} writes/transaction)",
            total as f64 / elapsed.as_secs_f64(),
            stats.transactions,
            stats.writes as f64 / stats.transactions.max(1) as f64
        );
        b.close().await;
    }
}
