//! Writing captures in reprise's own format, crash-safely.
//!
//! Every launch gets its own stem (`NAME-PID-SEQ`), so no capture overwrites
//! another. Data files are written under hidden temporary names, flushed to
//! disk, and renamed into place; the descriptor comes last, so a crash leaves
//! either a whole capture or orphaned data files (which `reprise list`
//! reports), never a descriptor whose files are half written.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use reprise_core::record::{Generation, KernelRecord, MAX_JSON_LEN};

use crate::capture::{CapturePaths, checksum};
use crate::error::{Error, Result};

/// Sequence numbers of the matching launches (recorded or not), process-wide.
static LAUNCH_SEQ: AtomicU64 = AtomicU64::new(0);

/// Draws the next launch sequence number of this process.
pub fn next_launch_seq() -> u64 {
    LAUNCH_SEQ.fetch_add(1, Ordering::Relaxed)
}

/// Temporary files of interrupted writes start with this prefix.
pub const TEMP_PREFIX: &str = ".reprise-tmp.";

/// A directory that captures are written into.
#[derive(Debug)]
pub struct CaptureStore {
    dir: PathBuf,
    fsync: bool,
    /// Images already written by this store, by checksum: later captures of
    /// the same image hard-link to them instead of writing it again.
    images: Mutex<HashMap<u64, PathBuf>>,
}

/// The contents of one capture to write.
#[derive(Debug, Clone, Copy)]
pub struct CaptureData<'a> {
    /// The pre-kernel snapshot.
    pub input: &'a [u8],
    /// The post-kernel snapshot, when saved.
    pub output: Option<&'a [u8]>,
    /// The globals, already encoded in the current layout.
    pub globals: &'a [u8],
    /// The device image.
    pub image: &'a [u8],
}

/// A kernel name made safe for a file name: `[A-Za-z0-9_.-]` only, at most
/// 80 characters (longer names are cut and suffixed with a hash).
pub fn file_stem_for(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let clean = clean.trim_start_matches('.').to_string();
    let clean = if clean.is_empty() {
        "kernel".to_string()
    } else {
        clean
    };
    if clean.len() <= 80 {
        clean
    } else {
        format!("{}~{:08x}", &clean[..71], checksum(name.as_bytes()) as u32)
    }
}

impl CaptureStore {
    /// A store writing into `dir` (created if needed). With `fsync`, every
    /// file is flushed to disk before it is renamed into place.
    pub fn new(dir: impl Into<PathBuf>, fsync: bool) -> Result<Self> {
        let dir = dir.into();
        fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, "create directory", e))?;
        Ok(CaptureStore {
            dir,
            fsync,
            images: Mutex::new(HashMap::new()),
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A descriptor path no existing capture uses, for `record`.
    fn fresh_descriptor(&self, record: &KernelRecord) -> PathBuf {
        let base = format!(
            "{}-{}-{}",
            file_stem_for(&record.name),
            std::process::id(),
            record.launch_seq.unwrap_or(0)
        );
        let mut candidate = self.dir.join(format!("{base}.json"));
        let mut n = 2;
        while candidate.exists()
            || CapturePaths::new(&candidate, Generation::Reprise)
                .input
                .exists()
        {
            candidate = self.dir.join(format!("{base}.{n}.json"));
            n += 1;
        }
        candidate
    }

    /// Writes one capture and returns its descriptor's path. Fills in the
    /// record's checksums, snapshot length and generation.
    pub fn write(&self, record: &mut KernelRecord, data: CaptureData<'_>) -> Result<PathBuf> {
        let descriptor = self.fresh_descriptor(record);
        let paths = CapturePaths::new(&descriptor, Generation::Reprise);

        record.generation = Generation::Reprise;
        record
            .format_version
            .get_or_insert(reprise_core::record::FORMAT_VERSION);
        record.memory_size = Some(data.input.len() as u64);
        record.checksums.input = Some(checksum(data.input));
        record.checksums.output = data.output.map(checksum);
        record.checksums.globals = Some(checksum(data.globals));
        let image_sum = checksum(data.image);
        record.checksums.image = Some(image_sum);

        // Files already in place when a later one fails (a full disk) are
        // removed again: a failed capture leaves nothing behind.
        let mut written: Vec<&Path> = Vec::new();
        let result = (|| {
            self.write_file(&paths.input, data.input)?;
            written.push(&paths.input);
            if let Some(out) = data.output {
                self.write_file(&paths.output, out)?;
                written.push(&paths.output);
            }
            self.write_file(&paths.globals, data.globals)?;
            written.push(&paths.globals);
            self.write_image(&paths.image, data.image, image_sum)?;
            written.push(&paths.image);

            let mut json = vec![0u8; MAX_JSON_LEN];
            let n = record
                .to_json(Generation::Reprise, &mut json)
                .map_err(|source| Error::Descriptor {
                    path: descriptor.clone(),
                    source,
                })?;
            self.write_file(&descriptor, &json[..n])?;
            written.push(&descriptor);
            if self.fsync {
                // Make the renames themselves durable.
                File::open(&self.dir)
                    .and_then(|d| d.sync_all())
                    .map_err(|e| Error::io(&self.dir, "sync directory", e))?;
            }
            Ok(())
        })();
        if let Err(e) = result {
            let mut images = self.images.lock().unwrap_or_else(|e| e.into_inner());
            images.retain(|_, p| p != &paths.image);
            for p in written {
                let _ = fs::remove_file(p);
            }
            return Err(e);
        }
        Ok(descriptor)
    }

    fn write_image(&self, path: &Path, image: &[u8], sum: u64) -> Result<()> {
        let mut images = self.images.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(existing) = images.get(&sum)
            && fs::hard_link(existing, path).is_ok()
        {
            return Ok(());
        }
        self.write_file(path, image)?;
        images.insert(sum, path.to_path_buf());
        Ok(())
    }

    /// Writes `bytes` to a temporary name, flushes, and renames to `path`.
    pub fn write_file(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        write_atomically(path, bytes, self.fsync)
    }
}

/// Writes `bytes` to a hidden temporary file beside `path`, optionally
/// flushes it to disk, and renames it to `path`.
pub fn write_atomically(path: &Path, bytes: &[u8], fsync: bool) -> Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!("{TEMP_PREFIX}{name}.{}", std::process::id()));
    // Errors name the file the caller asked for; the temporary one is gone
    // by the time they are read.
    let result = (|| {
        let mut f = File::create(&tmp).map_err(|e| Error::io(path, "create", e))?;
        f.write_all(bytes)
            .map_err(|e| Error::io(path, "write", e))?;
        if fsync {
            f.sync_all().map_err(|e| Error::io(path, "sync", e))?;
        }
        fs::rename(&tmp, path).map_err(|e| Error::io(path, "rename into place", e))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}
