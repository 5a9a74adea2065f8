//! The audit log backend (`--audit-log-path`): JSON lines written by one thread
//! from a bounded queue, so a request never waits for the disk. When the disk
//! cannot keep up and the queue (10,000 events) is full, new events are dropped
//! and counted in `apiserver_audit_error_total{plugin="log"}` (upstream's
//! `batch` mode does the same). Files rotate by size, keeping
//! `--audit-log-maxbackup` old files for `--audit-log-maxage` days, named as
//! upstream's (lumberjack's) `<name>-<time>.<ext>`.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::time::{Duration, SystemTime};

/// Upstream's batch buffer size.
const QUEUE: usize = 10_000;

#[derive(Debug, Clone)]
pub struct LogOptions {
    /// A file, or `-` for standard output.
    pub path: PathBuf,
    /// Days to keep rotated files (0: no limit).
    pub max_age_days: u64,
    /// Rotated files to keep (0: no limit).
    pub max_backups: usize,
    /// Megabytes before rotating (0: 100, as lumberjack).
    pub max_size_mb: u64,
}

/// Counters for `/metrics`.
#[derive(Debug, Default)]
pub struct Counters {
    pub events: AtomicU64,
    pub errors: AtomicU64,
}

pub struct LogBackend {
    queue: SyncSender<Vec<u8>>,
    pub counters: Arc<Counters>,
}

impl LogBackend {
    pub fn open(options: LogOptions) -> std::io::Result<LogBackend> {
        let sink = Sink::open(options)?;
        let (queue, lines) = sync_channel(QUEUE);
        let counters = Arc::new(Counters::default());
        let errors = counters.clone();
        std::thread::Builder::new()
            .name("audit-log".into())
            .spawn(move || sink.run(lines, &errors))?;
        Ok(LogBackend { queue, counters })
    }

    /// Queue one event line; dropped (and counted) if the writer is behind.
    pub fn send(&self, line: Vec<u8>) {
        self.counters.events.fetch_add(1, Ordering::Relaxed);
        match self.queue.try_send(line) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                if self
                    .counters
                    .errors
                    .fetch_add(1, Ordering::Relaxed)
                    .is_multiple_of(1000)
                {
                    tracing::error!("audit log: the writer is behind; events are being dropped");
                }
            }
        }
    }
}

enum Output {
    Stdout,
    File { file: BufWriter<File>, size: u64 },
}

struct Sink {
    options: LogOptions,
    output: Output,
}

impl Sink {
    fn open(options: LogOptions) -> std::io::Result<Sink> {
        let output = if options.path.as_os_str() == "-" {
            Output::Stdout
        } else {
            open_file(&options.path)?
        };
        Ok(Sink { options, output })
    }

    fn run(mut self, lines: Receiver<Vec<u8>>, counters: &Counters) {
        while let Ok(line) = lines.recv() {
            let mut batch = vec![line];
            while let Ok(more) = lines.try_recv() {
                batch.push(more);
                if batch.len() >= 256 {
                    break;
                }
            }
            if let Err(e) = self.write(&batch) {
                counters
                    .errors
                    .fetch_add(batch.len() as u64, Ordering::Relaxed);
                tracing::error!(error = %e, "audit log: cannot write");
            }
        }
    }

    fn write(&mut self, batch: &[Vec<u8>]) -> std::io::Result<()> {
        let limit = match self.options.max_size_mb {
            0 => 100 * 1024 * 1024,
            mb => mb * 1024 * 1024,
        };
        for line in batch {
            let rotate = matches!(&self.output, Output::File { size, .. } if *size > 0 && size + line.len() as u64 > limit);
            if rotate {
                self.rotate()?;
            }
            match &mut self.output {
                Output::Stdout => std::io::stdout().lock().write_all(line)?,
                Output::File { file, size } => {
                    file.write_all(line)?;
                    *size += line.len() as u64;
                }
            }
        }
        match &mut self.output {
            Output::Stdout => std::io::stdout().lock().flush(),
            Output::File { file, .. } => file.flush(),
        }
    }

    /// Move the current file aside as `<stem>-<UTC time>.<ext>`, start a new one
    /// and drop the backups the options do not keep.
    fn rotate(&mut self) -> std::io::Result<()> {
        if let Output::File { file, .. } = &mut self.output {
            file.flush()?;
        }
        let path = &self.options.path;
        let time = jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H-%M-%S%.3f")
            .to_string();
        std::fs::rename(path, backup_name(path, &time))?;
        self.output = open_file(path)?;
        self.prune();
        Ok(())
    }

    fn prune(&self) {
        let path = &self.options.path;
        let (Some(dir), Some(stem)) = (path.parent(), path.file_stem().and_then(|s| s.to_str()))
        else {
            return;
        };
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let prefix = format!("{stem}-");
        let mut backups: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p != path
                    && p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with(&prefix))
            })
            .collect();
        // Names carry the time: newest last.
        backups.sort();
        let max_age = Duration::from_secs(self.options.max_age_days * 24 * 3600);
        let now = SystemTime::now();
        let keep_from = match self.options.max_backups {
            0 => 0,
            n => backups.len().saturating_sub(n),
        };
        for (i, backup) in backups.iter().enumerate() {
            let too_old = self.options.max_age_days > 0
                && std::fs::metadata(backup)
                    .and_then(|m| m.modified())
                    .is_ok_and(|t| now.duration_since(t).is_ok_and(|age| age > max_age));
            if i < keep_from || too_old {
                let _ = std::fs::remove_file(backup);
            }
        }
    }
}

fn backup_name(path: &Path, time: &str) -> PathBuf {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("audit");
    let name = match path.extension().and_then(|e| e.to_str()) {
        Some(ext) => format!("{stem}-{time}.{ext}"),
        None => format!("{stem}-{time}"),
    };
    path.with_file_name(name)
}

fn open_file(path: &Path) -> std::io::Result<Output> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let file = options.open(path)?;
    let size = file.metadata()?.len();
    Ok(Output::File {
        file: BufWriter::new(file),
        size,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_rotate_by_size_and_keep_max_backups() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let mut sink = Sink::open(LogOptions {
            path: path.clone(),
            max_age_days: 0,
            max_backups: 2,
            max_size_mb: 1,
        })
        .unwrap();
        let line = vec![b'x'; 300 * 1024];
        for _ in 0..12 {
            sink.write(std::slice::from_ref(&line)).unwrap();
            // Distinct backup names (millisecond times).
            std::thread::sleep(Duration::from_millis(2));
        }
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names.len(), 3, "the file and two backups: {names:?}");
        assert!(
            names
                .iter()
                .filter(|n| n.starts_with("audit-") && n.ends_with(".log"))
                .count()
                == 2,
            "{names:?}"
        );
        assert!(std::fs::metadata(&path).unwrap().len() <= 1024 * 1024);
    }
}
