//! The embedded default backend: one SQLite file holding a kine-style log.
//!
//! Why this shape:
//! - Every write appends one row to `log`, and the row's `id` *is* its revision.
//!   Reads at a past revision, watch backlogs and compaction are then plain SQL
//!   over one table with an index on `(name, id)`.
//! - One writer thread (a plain `std::thread`, so fsyncs never stall the async
//!   runtime) owns the only write connection and does group commit: it drains
//!   every queued request (up to [`MAX_GROUP`]), applies them in one transaction —
//!   each with its own consecutive revision, a failed compare-and-swap failing only
//!   its own request — commits once (one fsync for the whole group) and only then
//!   answers. Acknowledged means durable: WAL with `synchronous=FULL`.
//! - The writer keeps an in-memory index of live keys (name → revisions), rebuilt
//!   from the table on open, so compare-and-swap checks need no SQL.
//! - Reads run on tokio's blocking pool over a small pool of separate read
//!   connections; WAL gives each read a consistent snapshot and never blocks the
//!   writer.
//! - Watches subscribe to the events the writer publishes after each commit, then
//!   read the backlog from the table, then follow the live events; revisions already
//!   delivered are dropped, so there are neither gaps nor duplicates.
//!
//! One process (one `SqliteBackend`) may write a database file at a time.

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use parking_lot::{Mutex, RwLock};
use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, params};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::mpsc as std_mpsc;
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

use crate::backend::{Backend, Error, Event, KeyValue, Range, Result};

/// Marks a file as a kubext database, and its layout version.
const FORMAT: &str = "kubext-storage/sqlite-log/v1";
/// At most this many requests are committed in one transaction.
pub const MAX_GROUP: usize = 256;
/// Idle read connections kept for reuse.
const MAX_IDLE_READERS: usize = 4;
/// A watch backlog is read in pages of at most this many rows...
const BACKLOG_PAGE_ROWS: i64 = 1000;
/// ...or about this many bytes of values.
const BACKLOG_PAGE_BYTES: usize = 8 << 20;
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value NOT NULL
);
-- One row per write. id = the revision of the write; prev_revision = the row it
-- replaced (NULL for creates); tombstones have deleted = 1 and no value.
CREATE TABLE IF NOT EXISTS log (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    name            TEXT    NOT NULL,
    created         INTEGER NOT NULL,
    deleted         INTEGER NOT NULL,
    create_revision INTEGER NOT NULL,
    prev_revision   INTEGER,
    value           BLOB
);
CREATE INDEX IF NOT EXISTS log_name_id ON log (name, id);
";

/// The latest row of each key in `[?1, ?2)` at revision `?3`, live ones only, in key
/// order. Walks the `(name, id)` index in order, so a `LIMIT` stops early instead of
/// sorting the whole range.
const RANGE_SQL: &str = "
SELECT l.name, l.value, l.create_revision, l.id
FROM log l
WHERE l.name >= ?1 AND l.name < ?2 AND l.id <= ?3 AND l.deleted = 0
  AND l.id = (SELECT MAX(x.id) FROM log x WHERE x.name = l.name AND x.id <= ?3)
ORDER BY l.name
LIMIT ?4";

const COUNT_SQL: &str = "
SELECT COUNT(*)
FROM log l
WHERE l.name >= ?1 AND l.name < ?2 AND l.id <= ?3 AND l.deleted = 0
  AND l.id = (SELECT MAX(x.id) FROM log x WHERE x.name = l.name AND x.id <= ?3)";

const BACKLOG_SQL: &str = "
SELECT l.id, l.name, l.deleted, l.create_revision, l.value,
       p.id, p.create_revision, p.value
FROM log l LEFT JOIN log p ON p.id = l.prev_revision
WHERE l.id > ?1
ORDER BY l.id
LIMIT ?2";

const INSERT_SQL: &str = "
INSERT INTO log (id, name, created, deleted, create_revision, prev_revision, value)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";

/// How many transactions the writer committed for how many writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommitStats {
    /// Committed transactions that wrote at least one row (one fsync each).
    pub transactions: u64,
    /// Successful writes (rows appended).
    pub writes: u64,
}

/// State shared between the handle, the writer thread and readers.
struct Shared {
    path: PathBuf,
    /// Latest committed revision; updated after each commit, before answering.
    revision: AtomicI64,
    compacted: AtomicI64,
    subscribers: Mutex<Vec<mpsc::UnboundedSender<Arc<[Event]>>>>,
    transactions: AtomicU64,
    writes: AtomicU64,
}

/// The embedded SQLite backend. See the module docs.
pub struct SqliteBackend {
    shared: Arc<Shared>,
    reader: Arc<Reader>,
    /// `None` once closed.
    requests: RwLock<Option<std_mpsc::Sender<Request>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for SqliteBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteBackend")
            .field("path", &self.shared.path)
            .field("revision", &self.shared.revision.load(Ordering::Acquire))
            .field("compacted", &self.shared.compacted.load(Ordering::Acquire))
            .finish()
    }
}

impl SqliteBackend {
    /// Open (creating if missing) the database at `path` and start its writer thread.
    ///
    /// Fails with `Corrupt` if the file exists but is not a kubext database, and with
    /// `Unavailable` (naming the path) if it cannot be opened for writing.
    pub fn open(path: &Path) -> Result<Self> {
        let (conn, recovered) = open_writer(path)?;
        let shared = Arc::new(Shared {
            path: path.to_path_buf(),
            revision: AtomicI64::new(recovered.revision),
            compacted: AtomicI64::new(recovered.compacted),
            subscribers: Mutex::new(Vec::new()),
            transactions: AtomicU64::new(0),
            writes: AtomicU64::new(0),
        });
        let reader = Arc::new(Reader {
            shared: shared.clone(),
            idle: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
        });
        // Open one read connection now, so that problems surface here.
        let first = reader.connect()?;
        reader.idle.lock().push(first);

        let (tx, rx) = std_mpsc::channel();
        let writer = Writer {
            conn,
            index: recovered.index,
            revision: recovered.revision,
            compacted: recovered.compacted,
            shared: shared.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("kubext-sqlite-writer".into())
            .spawn(move || writer.run(rx))
            .map_err(|e| {
                Error::Unavailable(format!(
                    "cannot start the SQLite writer thread for {}: {e}",
                    path.display()
                ))
            })?;
        tracing::info!(
            path = %path.display(),
            revision = recovered.revision,
            compacted = recovered.compacted,
            "opened SQLite storage"
        );
        Ok(SqliteBackend {
            shared,
            reader,
            requests: RwLock::new(Some(tx)),
            writer: Mutex::new(Some(thread)),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// Transactions committed and writes made since open (how well group commit groups).
    pub fn commit_stats(&self) -> CommitStats {
        CommitStats {
            transactions: self.shared.transactions.load(Ordering::Relaxed),
            writes: self.shared.writes.load(Ordering::Relaxed),
        }
    }

    fn ensure_open(&self) -> Result<()> {
        if self.reader.closed.load(Ordering::Acquire) {
            return Err(closed(&self.shared.path));
        }
        Ok(())
    }

    fn send(&self, request: Request) -> Result<()> {
        let requests = self.requests.read();
        let sender = requests.as_ref().ok_or_else(|| closed(&self.shared.path))?;
        sender
            .send(request)
            .map_err(|_| writer_gone(&self.shared.path))
    }

    async fn write(&self, op: Op) -> Result<Applied> {
        let (reply, answer) = oneshot::channel();
        self.send(Request::Write { op, reply })?;
        answer.await.map_err(|_| writer_gone(&self.shared.path))?
    }

    async fn read<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection, &Path) -> Result<T> + Send + 'static,
    {
        let reader = self.reader.clone();
        tokio::task::spawn_blocking(move || reader.run(f))
            .await
            .map_err(|e| Error::Unavailable(format!("SQLite read task failed: {e}")))?
    }
}

#[async_trait]
impl Backend for SqliteBackend {
    async fn current_revision(&self) -> Result<i64> {
        self.ensure_open()?;
        Ok(self.shared.revision.load(Ordering::Acquire))
    }

    async fn get(&self, key: &str) -> Result<Option<KeyValue>> {
        let key: Arc<str> = key.into();
        self.read(move |conn, path| read_get(conn, path, key)).await
    }

    async fn range(&self, start: &str, end: &str, revision: i64, limit: i64) -> Result<Range> {
        let (start, end) = (start.to_owned(), end.to_owned());
        self.read(move |conn, path| read_range(conn, path, &start, &end, revision, limit))
            .await
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<i64> {
        let op = Op::Create {
            key: key.into(),
            value,
        };
        Ok(self.write(op).await?.revision)
    }

    async fn update(&self, key: &str, value: Bytes, expected: i64) -> Result<i64> {
        let op = Op::Update {
            key: key.into(),
            value,
            expected,
        };
        Ok(self.write(op).await?.revision)
    }

    async fn delete(&self, key: &str, expected: Option<i64>) -> Result<(i64, KeyValue)> {
        let op = Op::Delete {
            key: key.into(),
            expected,
        };
        let applied = self.write(op).await?;
        let prev = applied
            .prev
            .ok_or_else(|| Error::Corrupt(format!("delete of {key} returned no previous value")))?;
        Ok((applied.revision, prev))
    }

    fn watch(&self, after: i64) -> Result<BoxStream<'static, Result<Vec<Event>>>> {
        self.ensure_open()?;
        let compacted = self.shared.compacted.load(Ordering::Acquire);
        if after + 1 < compacted {
            return Err(Error::Compacted {
                requested: after + 1,
                compacted,
            });
        }
        // Subscribe first: whatever commits from now on arrives live, and whatever
        // committed before is in the table the backlog reads.
        let (tx, live) = mpsc::unbounded_channel();
        self.shared.subscribers.lock().push(tx);
        let follower = Follower {
            reader: self.reader.clone(),
            live,
            last: after.max(compacted),
            backlog_done: false,
            failed: false,
        };
        let stream = futures::stream::unfold(follower, |mut follower| async move {
            let item = follower.next_batch().await?;
            Some((item, follower))
        });
        Ok(Box::pin(stream))
    }

    async fn compact(&self, revision: i64) -> Result<()> {
        let (reply, answer) = oneshot::channel();
        self.send(Request::Compact { revision, reply })?;
        answer.await.map_err(|_| writer_gone(&self.shared.path))?
    }

    /// Stop accepting requests, let the writer finish (and answer) everything already
    /// queued, then release the database.
    async fn close(&self) {
        let sender = self.requests.write().take();
        drop(sender);
        let thread = self.writer.lock().take();
        if let Some(thread) = thread {
            let joined = tokio::task::spawn_blocking(move || thread.join()).await;
            if !matches!(joined, Ok(Ok(()))) {
                tracing::error!(path = %self.shared.path.display(), "SQLite writer thread panicked");
            }
        }
        self.reader.closed.store(true, Ordering::Release);
        self.reader.idle.lock().clear();
        // Ends every watch stream once it has drained what was published.
        self.shared.subscribers.lock().clear();
    }
}

// ---------------------------------------------------------------------------------
// Opening

struct Recovered {
    revision: i64,
    compacted: i64,
    index: HashMap<Arc<str>, Live>,
}

fn open_writer(path: &Path) -> Result<(Connection, Recovered)> {
    let shown = path.display();
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        && !dir.is_dir()
    {
        return Err(Error::Unavailable(format!(
            "cannot open SQLite database {shown}: directory {} does not exist or is not a directory",
            dir.display()
        )));
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let mut conn = Connection::open_with_flags(path, flags).ctx(path, "open")?;
    conn.busy_timeout(BUSY_TIMEOUT).ctx(path, "configure")?;

    // Look before changing anything: a foreign file must be left as it is.
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        .and_then(|mut stmt| stmt.query_map([], |row| row.get(0))?.collect())
        .ctx(path, "inspect")?;
    let fresh = tables.is_empty();
    if !fresh {
        check_format(&conn, path, &tables)?;
    }

    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
        .ctx(path, "enable WAL on")?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(Error::Unavailable(format!(
            "cannot enable WAL journal mode on {shown} (got {mode:?}); is its directory writable?"
        )));
    }
    conn.pragma_update(None, "synchronous", "FULL")
        .ctx(path, "configure")?;
    if conn.is_readonly("main").ctx(path, "open")? {
        return Err(Error::Unavailable(format!(
            "SQLite database {shown} is read-only; the file and its directory must be writable"
        )));
    }

    if fresh {
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .ctx(path, "initialize")?;
        tx.execute_batch(SCHEMA).ctx(path, "initialize")?;
        tx.execute(
            "INSERT OR IGNORE INTO meta (key, value) VALUES ('format', ?1), ('compact_revision', 0)",
            params![FORMAT],
        )
        .ctx(path, "initialize")?;
        tx.commit().ctx(path, "initialize")?;
    }

    let recovered = recover(&conn, path)?;
    Ok((conn, recovered))
}

fn check_format(conn: &Connection, path: &Path, tables: &[String]) -> Result<()> {
    let shown = path.display();
    let has = |name: &str| tables.iter().any(|t| t == name);
    if !has("meta") || !has("log") {
        return Err(Error::Corrupt(format!(
            "{shown} is an SQLite database but not a kubext database (tables: {})",
            tables.join(", ")
        )));
    }
    let format: Option<String> = conn
        .query_row("SELECT value FROM meta WHERE key = 'format'", [], |row| {
            row.get(0)
        })
        .optional()
        .ctx(path, "inspect")?;
    match format {
        Some(format) if format == FORMAT => Ok(()),
        Some(format) => Err(Error::Corrupt(format!(
            "{shown} has kubext storage format {format:?}; this build reads {FORMAT:?}"
        ))),
        None => Err(Error::Corrupt(format!(
            "{shown} is an SQLite database but not a kubext database (no format marker)"
        ))),
    }
}

fn recover(conn: &Connection, path: &Path) -> Result<Recovered> {
    let (revision, compacted) = snapshot(conn).ctx(path, "recover")?;
    if compacted > revision {
        return Err(Error::Corrupt(format!(
            "{}: compacted at {compacted}, after the latest revision {revision}",
            path.display()
        )));
    }
    let mut index = HashMap::new();
    let mut stmt = conn
        .prepare(
            "SELECT l.name, l.id, l.create_revision FROM log l
             JOIN (SELECT MAX(id) AS id FROM log GROUP BY name) m ON l.id = m.id
             WHERE l.deleted = 0",
        )
        .ctx(path, "recover")?;
    let rows = stmt
        .query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                Live {
                    mod_revision: row.get(1)?,
                    create_revision: row.get(2)?,
                },
            ))
        })
        .ctx(path, "recover")?;
    for row in rows {
        let (name, live) = row.ctx(path, "recover")?;
        index.insert(Arc::from(name), live);
    }
    Ok(Recovered {
        revision,
        compacted,
        index,
    })
}

/// The latest revision and the compaction revision, as of the connection's snapshot.
fn snapshot(conn: &Connection) -> rusqlite::Result<(i64, i64)> {
    conn.query_row(
        "SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'log'), 0),
                COALESCE((SELECT value FROM meta WHERE key = 'compact_revision'), 0)",
        [],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )
}

// ---------------------------------------------------------------------------------
// Errors

fn closed(path: &Path) -> Error {
    Error::Unavailable(format!("SQLite storage {} is closed", path.display()))
}

fn writer_gone(path: &Path) -> Error {
    Error::Unavailable(format!("SQLite writer for {} has stopped", path.display()))
}

fn sql_error(path: &Path, what: &str, e: rusqlite::Error) -> Error {
    let shown = path.display();
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) => Error::Corrupt(format!(
            "{shown} is not a kubext database (not an SQLite file): {e}"
        )),
        Some(ErrorCode::DatabaseCorrupt) => {
            Error::Corrupt(format!("SQLite database {shown} is corrupt ({what}): {e}"))
        }
        Some(
            ErrorCode::CannotOpen
            | ErrorCode::ReadOnly
            | ErrorCode::PermissionDenied
            | ErrorCode::SystemIoFailure,
        ) => Error::Unavailable(format!(
            "cannot {what} SQLite database {shown}: {e} (the file and its directory must exist and be writable)"
        )),
        _ => Error::Unavailable(format!("SQLite {what} of {shown} failed: {e}")),
    }
}

trait Context<T> {
    fn ctx(self, path: &Path, what: &str) -> Result<T>;
}

impl<T> Context<T> for rusqlite::Result<T> {
    fn ctx(self, path: &Path, what: &str) -> Result<T> {
        self.map_err(|e| sql_error(path, what, e))
    }
}

// ---------------------------------------------------------------------------------
// Reads

/// A small pool of read connections, used from blocking threads.
struct Reader {
    shared: Arc<Shared>,
    idle: Mutex<Vec<Connection>>,
    closed: AtomicBool,
}

impl Reader {
    fn connect(&self) -> Result<Connection> {
        let path = &self.shared.path;
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).ctx(path, "open")?;
        conn.busy_timeout(BUSY_TIMEOUT).ctx(path, "configure")?;
        conn.pragma_update(None, "query_only", true)
            .ctx(path, "configure")?;
        Ok(conn)
    }

    /// Run `f` on a pooled connection (blocking).
    fn run<T>(&self, f: impl FnOnce(&mut Connection, &Path) -> Result<T>) -> Result<T> {
        if self.closed.load(Ordering::Acquire) {
            return Err(closed(&self.shared.path));
        }
        let pooled = self.idle.lock().pop();
        let mut conn = match pooled {
            Some(conn) => conn,
            None => self.connect()?,
        };
        let out = f(&mut conn, &self.shared.path);
        if out.is_ok() && !self.closed.load(Ordering::Acquire) {
            let mut idle = self.idle.lock();
            if idle.len() < MAX_IDLE_READERS {
                idle.push(conn);
            }
        }
        out
    }
}

fn read_get(conn: &mut Connection, path: &Path, key: Arc<str>) -> Result<Option<KeyValue>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT id, create_revision, deleted, value FROM log
             WHERE name = ?1 ORDER BY id DESC LIMIT 1",
        )
        .ctx(path, "read")?;
    let row = stmt
        .query_row(params![&*key], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, i64>(1)?,
                row.get::<_, bool>(2)?,
                row.get::<_, Option<Vec<u8>>>(3)?,
            ))
        })
        .optional()
        .ctx(path, "read")?;
    Ok(match row {
        Some((id, create_revision, false, value)) => Some(KeyValue {
            key,
            value: value.unwrap_or_default().into(),
            create_revision,
            mod_revision: id,
        }),
        _ => None,
    })
}

fn check_revision(requested: i64, current: i64, compacted: i64) -> Result<i64> {
    if requested == 0 {
        return Ok(current);
    }
    if requested < compacted {
        return Err(Error::Compacted {
            requested,
            compacted,
        });
    }
    if requested > current {
        return Err(Error::FutureRevision { requested, current });
    }
    Ok(requested)
}

fn read_range(
    conn: &mut Connection,
    path: &Path,
    start: &str,
    end: &str,
    revision: i64,
    limit: i64,
) -> Result<Range> {
    // One read transaction: one snapshot for the revision check, rows and count.
    let tx = conn.transaction().ctx(path, "read")?;
    let (current, compacted) = snapshot(&tx).ctx(path, "read")?;
    let at = check_revision(revision, current, compacted)?;
    let fetch = if limit > 0 {
        limit.saturating_add(1)
    } else {
        -1
    };
    let mut kvs = {
        let mut stmt = tx.prepare_cached(RANGE_SQL).ctx(path, "read")?;
        let rows = stmt
            .query_map(params![start, end, at, fetch], |row| {
                Ok(KeyValue {
                    key: Arc::from(row.get::<_, String>(0)?),
                    value: row.get::<_, Option<Vec<u8>>>(1)?.unwrap_or_default().into(),
                    create_revision: row.get(2)?,
                    mod_revision: row.get(3)?,
                })
            })
            .ctx(path, "read")?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .ctx(path, "read")?
    };
    let returned = i64::try_from(kvs.len()).unwrap_or(i64::MAX);
    let (more, count) = if limit > 0 && returned > limit {
        kvs.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        let count: i64 = tx
            .prepare_cached(COUNT_SQL)
            .and_then(|mut stmt| stmt.query_row(params![start, end, at], |row| row.get(0)))
            .ctx(path, "read")?;
        (true, count)
    } else {
        (false, returned)
    };
    Ok(Range {
        kvs,
        more,
        count,
        revision: at,
    })
}

/// One page of a watch backlog.
struct Page {
    events: Vec<Event>,
    /// Nothing past this page was committed when it was read.
    complete: bool,
}

fn read_backlog(conn: &mut Connection, path: &Path, after: i64) -> Result<Page> {
    let tx = conn.transaction().ctx(path, "read")?;
    let (_, compacted) = snapshot(&tx).ctx(path, "read")?;
    if after < compacted {
        // History we still owe the watcher was compacted away while it caught up.
        return Err(Error::Compacted {
            requested: after + 1,
            compacted,
        });
    }
    let mut stmt = tx.prepare_cached(BACKLOG_SQL).ctx(path, "read")?;
    let mut rows = stmt
        .query(params![after, BACKLOG_PAGE_ROWS])
        .ctx(path, "read")?;
    let mut events = Vec::new();
    let mut bytes = 0usize;
    let mut seen = 0i64;
    let mut cut = false;
    while let Some(row) = rows.next().ctx(path, "read")? {
        seen += 1;
        let event = backlog_event(row).ctx(path, "read")?.ok_or_else(|| {
            Error::Corrupt(format!(
                "{}: a log row after revision {after} has lost its previous row",
                path.display()
            ))
        })?;
        bytes += match &event {
            Event::Put { kv, prev } => kv.value.len() + prev.as_ref().map_or(0, |p| p.value.len()),
            Event::Delete { prev, .. } => prev.value.len(),
        };
        events.push(event);
        if bytes >= BACKLOG_PAGE_BYTES {
            cut = true;
            break;
        }
    }
    Ok(Page {
        events,
        complete: !cut && seen < BACKLOG_PAGE_ROWS,
    })
}

/// A row of `BACKLOG_SQL` as an event; `None` if a tombstone lacks its previous row.
fn backlog_event(row: &rusqlite::Row<'_>) -> rusqlite::Result<Option<Event>> {
    let id: i64 = row.get(0)?;
    let key: Arc<str> = Arc::from(row.get::<_, String>(1)?);
    let deleted: bool = row.get(2)?;
    let create_revision: i64 = row.get(3)?;
    let prev = match row.get::<_, Option<i64>>(5)? {
        Some(prev_id) => Some(KeyValue {
            key: key.clone(),
            value: row.get::<_, Option<Vec<u8>>>(7)?.unwrap_or_default().into(),
            create_revision: row.get(6)?,
            mod_revision: prev_id,
        }),
        None => None,
    };
    if deleted {
        return Ok(prev.map(|prev| Event::Delete { revision: id, prev }));
    }
    let kv = KeyValue {
        key,
        value: row.get::<_, Option<Vec<u8>>>(4)?.unwrap_or_default().into(),
        create_revision,
        mod_revision: id,
    };
    Ok(Some(Event::Put { kv, prev }))
}

/// The state of one watch stream: backlog pages first, then live batches.
struct Follower {
    reader: Arc<Reader>,
    live: mpsc::UnboundedReceiver<Arc<[Event]>>,
    /// Every event up to here has been delivered (or precedes the watch).
    last: i64,
    backlog_done: bool,
    failed: bool,
}

impl Follower {
    async fn next_batch(&mut self) -> Option<Result<Vec<Event>>> {
        if self.failed {
            return None;
        }
        while !self.backlog_done {
            let reader = self.reader.clone();
            let after = self.last;
            let page = tokio::task::spawn_blocking(move || {
                reader.run(|conn, path| read_backlog(conn, path, after))
            })
            .await
            .unwrap_or_else(|e| Err(Error::Unavailable(format!("SQLite read task failed: {e}"))));
            match page {
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
                Ok(page) => {
                    self.backlog_done = page.complete;
                    if let Some(last) = page.events.last() {
                        self.last = last.revision();
                        return Some(Ok(page.events));
                    }
                }
            }
        }
        loop {
            let batch = self.live.recv().await?;
            let fresh: Vec<Event> = batch
                .iter()
                .filter(|e| e.revision() > self.last)
                .cloned()
                .collect();
            if let Some(last) = fresh.last() {
                self.last = last.revision();
                return Some(Ok(fresh));
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// The writer

enum Op {
    Create {
        key: Arc<str>,
        value: Bytes,
    },
    Update {
        key: Arc<str>,
        value: Bytes,
        expected: i64,
    },
    Delete {
        key: Arc<str>,
        expected: Option<i64>,
    },
}

/// A successful write: its revision, and for deletes the deleted value.
struct Applied {
    revision: i64,
    prev: Option<KeyValue>,
}

type Reply = oneshot::Sender<Result<Applied>>;

enum Request {
    Write {
        op: Op,
        reply: Reply,
    },
    Compact {
        revision: i64,
        reply: oneshot::Sender<Result<()>>,
    },
}

/// What the writer knows about a live key.
#[derive(Debug, Clone, Copy)]
struct Live {
    mod_revision: i64,
    create_revision: i64,
}

/// A row to append.
struct NewRow<'a> {
    revision: i64,
    key: &'a str,
    created: bool,
    deleted: bool,
    create_revision: i64,
    prev_revision: Option<i64>,
    value: Option<&'a [u8]>,
}

struct Writer {
    conn: Connection,
    /// Live keys only; deleted keys are removed.
    index: HashMap<Arc<str>, Live>,
    revision: i64,
    compacted: i64,
    shared: Arc<Shared>,
}

impl Writer {
    fn run(mut self, requests: std_mpsc::Receiver<Request>) {
        let mut queue = Vec::with_capacity(MAX_GROUP);
        // Ends when every sender is gone and the queue is drained.
        while let Ok(first) = requests.recv() {
            queue.push(first);
            while queue.len() < MAX_GROUP {
                match requests.try_recv() {
                    Ok(request) => queue.push(request),
                    Err(_) => break,
                }
            }
            let mut group = Vec::with_capacity(queue.len());
            for request in queue.drain(..) {
                match request {
                    Request::Write { op, reply } => group.push((op, reply)),
                    Request::Compact { revision, reply } => {
                        // Keep order: writes queued before the compaction commit first.
                        self.commit_group(std::mem::take(&mut group));
                        let _ = reply.send(self.compact(revision));
                    }
                }
            }
            self.commit_group(group);
        }
        tracing::debug!(path = %self.shared.path.display(), "SQLite writer stopped");
    }

    /// Apply `group` in one transaction, commit, publish the events, answer.
    fn commit_group(&mut self, group: Vec<(Op, Reply)>) {
        if group.is_empty() {
            return;
        }
        let start = self.revision;
        let mut undo: Vec<(Arc<str>, Option<Live>)> = Vec::new();
        let mut events = Vec::with_capacity(group.len());
        let mut outcomes = Vec::with_capacity(group.len());
        let result = self.apply_group(&group, &mut undo, &mut events, &mut outcomes);
        match result {
            Ok(()) => {
                self.shared.revision.store(self.revision, Ordering::Release);
                if !events.is_empty() {
                    self.shared.transactions.fetch_add(1, Ordering::Relaxed);
                    self.shared
                        .writes
                        .fetch_add(events.len() as u64, Ordering::Relaxed);
                    let batch: Arc<[Event]> = events.into();
                    self.shared
                        .subscribers
                        .lock()
                        .retain(|s| s.send(batch.clone()).is_ok());
                }
                for ((_, reply), outcome) in group.into_iter().zip(outcomes) {
                    let _ = reply.send(outcome);
                }
            }
            Err(e) => {
                if !self.conn.is_autocommit() {
                    let _ = self.conn.execute_batch("ROLLBACK");
                }
                for (key, live) in undo.into_iter().rev() {
                    match live {
                        Some(live) => self.index.insert(key, live),
                        None => self.index.remove(&key),
                    };
                }
                self.revision = start;
                let error = sql_error(&self.shared.path, "write", e);
                tracing::error!(%error, requests = group.len(), "SQLite group commit failed");
                for (_, reply) in group {
                    let _ = reply.send(Err(error.clone()));
                }
            }
        }
    }

    fn apply_group(
        &mut self,
        group: &[(Op, Reply)],
        undo: &mut Vec<(Arc<str>, Option<Live>)>,
        events: &mut Vec<Event>,
        outcomes: &mut Vec<Result<Applied>>,
    ) -> rusqlite::Result<()> {
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        for (op, _) in group {
            let outcome = self.apply(op, undo, events)?;
            outcomes.push(outcome);
        }
        self.conn.execute_batch("COMMIT")
    }

    /// Apply one write inside the open transaction. The outer error aborts the whole
    /// group (SQL failed); the inner one fails only this request.
    fn apply(
        &mut self,
        op: &Op,
        undo: &mut Vec<(Arc<str>, Option<Live>)>,
        events: &mut Vec<Event>,
    ) -> rusqlite::Result<Result<Applied>> {
        let revision = self.revision + 1;
        match op {
            Op::Create { key, value } => {
                if self.index.contains_key(&**key) {
                    return Ok(Err(Error::AlreadyExists(key.to_string())));
                }
                self.insert(&NewRow {
                    revision,
                    key,
                    created: true,
                    deleted: false,
                    create_revision: revision,
                    prev_revision: None,
                    value: Some(value),
                })?;
                self.revision = revision;
                undo.push((key.clone(), None));
                let live = Live {
                    mod_revision: revision,
                    create_revision: revision,
                };
                self.index.insert(key.clone(), live);
                let kv = KeyValue {
                    key: key.clone(),
                    value: value.clone(),
                    create_revision: revision,
                    mod_revision: revision,
                };
                events.push(Event::Put { kv, prev: None });
                Ok(Ok(Applied {
                    revision,
                    prev: None,
                }))
            }
            Op::Update {
                key,
                value,
                expected,
            } => {
                let Some((key, live)) = self.lookup(key) else {
                    return Ok(Err(Error::NotFound(key.to_string())));
                };
                let current = self.load(&key, live)?;
                if live.mod_revision != *expected {
                    return Ok(Err(Error::Conflict {
                        key: key.to_string(),
                        current: Some(Box::new(current)),
                    }));
                }
                self.insert(&NewRow {
                    revision,
                    key: &key,
                    created: false,
                    deleted: false,
                    create_revision: live.create_revision,
                    prev_revision: Some(live.mod_revision),
                    value: Some(value),
                })?;
                self.revision = revision;
                undo.push((key.clone(), Some(live)));
                self.index.insert(
                    key.clone(),
                    Live {
                        mod_revision: revision,
                        create_revision: live.create_revision,
                    },
                );
                let kv = KeyValue {
                    key,
                    value: value.clone(),
                    create_revision: live.create_revision,
                    mod_revision: revision,
                };
                events.push(Event::Put {
                    kv,
                    prev: Some(current),
                });
                Ok(Ok(Applied {
                    revision,
                    prev: None,
                }))
            }
            Op::Delete { key, expected } => {
                let Some((key, live)) = self.lookup(key) else {
                    return Ok(Err(Error::NotFound(key.to_string())));
                };
                let current = self.load(&key, live)?;
                if expected.is_some_and(|e| e != live.mod_revision) {
                    return Ok(Err(Error::Conflict {
                        key: key.to_string(),
                        current: Some(Box::new(current)),
                    }));
                }
                self.insert(&NewRow {
                    revision,
                    key: &key,
                    created: false,
                    deleted: true,
                    create_revision: live.create_revision,
                    prev_revision: Some(live.mod_revision),
                    value: None,
                })?;
                self.revision = revision;
                undo.push((key.clone(), Some(live)));
                self.index.remove(&key);
                events.push(Event::Delete {
                    revision,
                    prev: current.clone(),
                });
                Ok(Ok(Applied {
                    revision,
                    prev: Some(current),
                }))
            }
        }
    }

    fn lookup(&self, key: &str) -> Option<(Arc<str>, Live)> {
        self.index
            .get_key_value(key)
            .map(|(key, live)| (key.clone(), *live))
    }

    /// The stored value of a live key (possibly written earlier in this transaction).
    fn load(&self, key: &Arc<str>, live: Live) -> rusqlite::Result<KeyValue> {
        let value: Option<Vec<u8>> = self
            .conn
            .prepare_cached("SELECT value FROM log WHERE id = ?1")?
            .query_row(params![live.mod_revision], |row| row.get(0))?;
        Ok(KeyValue {
            key: key.clone(),
            value: value.unwrap_or_default().into(),
            create_revision: live.create_revision,
            mod_revision: live.mod_revision,
        })
    }

    fn insert(&self, row: &NewRow<'_>) -> rusqlite::Result<()> {
        self.conn.prepare_cached(INSERT_SQL)?.execute(params![
            row.revision,
            row.key,
            row.created,
            row.deleted,
            row.create_revision,
            row.prev_revision,
            row.value,
        ])?;
        Ok(())
    }

    /// Delete history at or before `revision` that no read at or after it can see:
    /// rows superseded by a later row at or before `revision`, and tombstones.
    fn compact(&mut self, revision: i64) -> Result<()> {
        if revision <= self.compacted {
            return Ok(());
        }
        if revision > self.revision {
            return Err(Error::FutureRevision {
                requested: revision,
                current: self.revision,
            });
        }
        let from = self.compacted;
        let run = |conn: &Connection| -> rusqlite::Result<usize> {
            conn.execute_batch("BEGIN IMMEDIATE")?;
            // The last compaction removed what rows up to `from` replaced. Now remove
            // every row that a row in (from, revision] replaced (a tombstone's
            // predecessor included), then the tombstones in (from, revision]. What
            // is left at or before `revision` is each live key's latest row.
            let superseded = conn.execute(
                "DELETE FROM log WHERE id IN (
                     SELECT prev_revision FROM log
                     WHERE id > ?1 AND id <= ?2 AND prev_revision IS NOT NULL)",
                params![from, revision],
            )?;
            let tombstones = conn.execute(
                "DELETE FROM log WHERE id > ?1 AND id <= ?2 AND deleted = 1",
                params![from, revision],
            )?;
            conn.execute(
                "UPDATE meta SET value = ?1 WHERE key = 'compact_revision'",
                params![revision],
            )?;
            conn.execute_batch("COMMIT")?;
            Ok(superseded + tombstones)
        };
        match run(&self.conn) {
            Ok(removed) => {
                self.compacted = revision;
                self.shared.compacted.store(revision, Ordering::Release);
                tracing::debug!(revision, removed, "compacted SQLite storage");
                Ok(())
            }
            Err(e) => {
                if !self.conn.is_autocommit() {
                    let _ = self.conn.execute_batch("ROLLBACK");
                }
                Err(sql_error(&self.shared.path, "compact", e))
            }
        }
    }
}
