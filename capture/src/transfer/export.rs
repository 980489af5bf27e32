//! `export`: a capture's files as a raw recording would have written them,
//! in its own format or in LLVM's, read from raw files or from the store.
//!
//! In its own format ([`ExportFormat::Raw`], or the LLVM format it was
//! recorded in) every file is the recorded one, byte for byte: the
//! descriptor as it is, each data file as its manifest stands for it. Into
//! another format, the descriptor is written in that format's key set
//! (reprise's own keys, which LLVM ignores, left out), the globals in its
//! layout and the files under its names; what the format cannot say is
//! refused before anything is written ([`ExportProblem`]). A capture whose
//! descriptor records checksums is checked against them as it is copied.
//!
//! Files are written under temporary names and linked to their own, which
//! never replaces a file; the descriptor comes last, so an export that
//! fails or is killed leaves no descriptor whose files are not whole.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use reprise_core::globals::{self, Layout};
use reprise_core::record::{Checksummer, Generation, KernelRecord, MAX_JSON_LEN};

use crate::capture::{
    CapturePaths, DESCRIPTOR_LIMIT, GLOBALS_LIMIT, IMAGE_LIMIT, SnapshotFile, SnapshotSource,
    checksum, expect_checksum, length_problems, read_bounded, read_data, read_descriptor, stem_of,
};
use crate::error::{CaptureProblem, Error, ExportProblem, Result, StoreProblem};

use super::write_new;
use crate::fs::sync_dir;

/// The format [`export`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// The capture's own format, as recorded.
    Raw,
    /// LLVM's current format (`STEM.json`, `.record_input`, current globals).
    LlvmCurrent,
    /// LLVM's legacy format (`NAME.json`, `.memory`, seed globals), named
    /// after the kernel as LLVM's legacy replay tool looks for it.
    LlvmLegacy,
}

impl ExportFormat {
    /// The generation a capture of `from` is written as.
    pub fn target(self, from: Generation) -> Generation {
        match self {
            ExportFormat::Raw => from,
            ExportFormat::LlvmCurrent => Generation::LlvmCurrent,
            ExportFormat::LlvmLegacy => Generation::LlvmLegacy,
        }
    }
}

/// What [`export`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exported {
    /// The capture exported.
    pub source: PathBuf,
    /// The descriptor written.
    pub descriptor: PathBuf,
    /// The format it is in.
    pub generation: Generation,
    /// Every file written, the descriptor last.
    pub files: Vec<PathBuf>,
    /// Their bytes.
    pub bytes: u64,
}

/// Where one data file comes from.
enum Source {
    /// A snapshot, streamed (a raw file or a manifest).
    Snapshot(SnapshotFile, Option<u64>),
    /// Bytes in memory (globals, image, descriptor).
    Bytes(Vec<u8>),
}

/// Writes the capture whose descriptor is `descriptor` into `dir` (made
/// when missing) in `format`; see the module's documentation. Nothing is
/// replaced: a file of a name it would write is an error
/// ([`ExportProblem::Exists`]), as is every conversion that cannot be
/// exact, each before anything is written.
pub fn export(descriptor: &Path, format: ExportFormat, dir: &Path) -> Result<Exported> {
    let record = read_descriptor(descriptor)?;
    let from = record.generation;
    let to = format.target(from);
    let refuse = |p: ExportProblem| Error::store(descriptor, StoreProblem::Export(p));
    let src = CapturePaths::new(descriptor, from);

    let input = SnapshotFile::open(&src.input)?
        .ok_or_else(|| Error::capture(&src.input, CaptureProblem::MissingSnapshot))?;
    let output = SnapshotFile::open(&src.output)?;
    // Lengths first: a manifest that lies about its length is not
    // streamed for it.
    let output_len = output.as_ref().map(|o| o.len);
    let lengths = length_problems(&record, record.region_base, &src, input.len, output_len);
    if let Some(e) = lengths.into_iter().next() {
        return Err(e);
    }
    let globals = read_data(&src.globals, "globals file", GLOBALS_LIMIT)?;
    let image = read_data(&src.image, "device image", IMAGE_LIMIT)?;
    let sums = record.checksums;
    for (bytes, want, path) in [
        (&globals, sums.globals, &src.globals),
        (&image, sums.image, &src.image),
    ] {
        if let (Some(b), Some(want)) = (bytes, want) {
            expect_checksum(path, want, checksum(b))?;
        }
    }

    let stem = if to == Generation::LlvmLegacy && from != Generation::LlvmLegacy {
        // LLVM's legacy replay tool opens `NAME.memory` for kernel NAME.
        let name = record.name.as_str();
        if crate::store::safe_file_name(name) != name || name.is_empty() {
            let name = name.to_string();
            return Err(refuse(ExportProblem::KernelName { name }));
        }
        name.to_string()
    } else {
        stem_of(descriptor)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| Error::capture(descriptor, CaptureProblem::NoFileName))?
    };
    let dst = CapturePaths::new(&dir.join(format!("{stem}.json")), to);

    // What a format always has, first: it is what the capture lacks most.
    for (missing, role, path) in [
        (image.is_none(), "device image", &src.image),
        (globals.is_none(), "globals file", &src.globals),
    ] {
        if missing && to != from {
            let path = path.clone();
            return Err(refuse(ExportProblem::Missing { role, path }));
        }
    }
    let json = if to == from {
        read_bounded(descriptor, "descriptor", DESCRIPTOR_LIMIT)?
            .ok_or_else(|| Error::capture(descriptor, CaptureProblem::Vanished))?
    } else {
        convert_descriptor(&record, to, input.len).map_err(refuse)?
    };
    let globals = match globals {
        Some(g) if from.globals_layout() != to.globals_layout() => {
            Some(convert_globals(&g, from.globals_layout(), to.globals_layout()).map_err(refuse)?)
        }
        g => g,
    };

    // Everything to write, the descriptor last.
    let mut files: Vec<(PathBuf, Source)> = [
        Some((dst.input.clone(), Source::Snapshot(input, sums.input))),
        output.map(|o| (dst.output.clone(), Source::Snapshot(o, sums.output))),
        globals.map(|g| (dst.globals.clone(), Source::Bytes(g))),
        image.map(|i| (dst.image.clone(), Source::Bytes(i))),
    ]
    .into_iter()
    .flatten()
    .collect();
    // Memory beyond the region (reprise's own format alone holds it, see
    // `convert_descriptor`), streamed as the snapshots are.
    if to == from && !record.extra_ranges.is_empty() {
        let (from_in, from_out) = crate::capture::extra_paths(descriptor);
        let (to_in, to_out) = crate::capture::extra_paths(&dst.descriptor);
        let extra_in = SnapshotFile::open(&from_in)?
            .ok_or_else(|| Error::capture(&from_in, CaptureProblem::MissingSnapshot))?;
        files.push((to_in, Source::Snapshot(extra_in, sums.extra_input)));
        if let Some(o) = SnapshotFile::open(&from_out)? {
            files.push((to_out, Source::Snapshot(o, sums.extra_output)));
        }
    }
    // LLVM current's bitcode of a JIT-compiled image, kept raw.
    if to == from
        && let Some(b) = read_bounded(&crate::capture::ir_path(descriptor), "bitcode", IMAGE_LIMIT)?
    {
        files.push((dir.join(format!("{stem}.bc")), Source::Bytes(b)));
    }
    files.push((dst.descriptor.clone(), Source::Bytes(json)));
    for (path, _) in &files {
        if std::fs::symlink_metadata(path).is_ok() {
            return Err(refuse(ExportProblem::Exists { path: path.clone() }));
        }
    }

    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create directory", e))?;
    let dir_fd = crate::fs::open_dir_fd(dir)?;
    let mut written: Vec<PathBuf> = Vec::new();
    let mut bytes = 0u64;
    let result = (|| {
        for (path, source) in &files {
            let name = crate::fs::file_name(path)?.to_string_lossy();
            write_new(&dir_fd, dir, &name, |f| write_source(f, path, source))?;
            written.push(path.clone());
            bytes += match source {
                Source::Snapshot(s, _) => s.len,
                Source::Bytes(b) => b.len() as u64,
            };
        }
        sync_dir(&dir_fd, dir)
    })();
    if let Err(e) = result {
        // The descriptor is last: what was written is removed, newest
        // first, so that no descriptor outlives its files.
        for p in written.iter().rev() {
            let _ = std::fs::remove_file(p);
        }
        return Err(e);
    }
    Ok(Exported {
        source: descriptor.to_path_buf(),
        descriptor: dst.descriptor,
        generation: to,
        files: written,
        bytes,
    })
}

/// Writes `source` into `file` (`path`, for messages), checking a
/// snapshot's recorded checksum as it streams.
fn write_source(file: &mut File, path: &Path, source: &Source) -> Result<()> {
    match source {
        Source::Bytes(b) => file.write_all(b).map_err(|e| Error::io(path, "write", e)),
        Source::Snapshot(s, want) => {
            let mut h = Checksummer::new();
            let mut failed = None;
            let mut out = std::io::BufWriter::with_capacity(1 << 20, &mut *file);
            s.for_each_chunk(1 << 20, |b| {
                h.update(b);
                if failed.is_none()
                    && let Err(e) = out.write_all(b)
                {
                    failed = Some(e);
                }
            })?;
            if let Some(e) = failed {
                return Err(Error::io(path, "write", e));
            }
            out.flush().map_err(|e| Error::io(path, "write", e))?;
            match want {
                Some(want) => expect_checksum(&s.path, *want, h.finish()),
                None => Ok(()),
            }
        }
    }
}

/// The descriptor of `record` in `to`'s key set, for a snapshot of
/// `input_len` bytes; what that key set cannot say is the refusal.
fn convert_descriptor(
    record: &KernelRecord,
    to: Generation,
    input_len: u64,
) -> std::result::Result<Vec<u8>, ExportProblem> {
    if let Some(e) = record.extra_ranges.first() {
        return Err(ExportProblem::BeyondRegion {
            count: record.extra_ranges.len(),
            class: e.class.describe(),
            addr: e.addr,
        });
    }
    if record.grid[1..] != [1, 1] || record.block[1..] != [1, 1] {
        let (grid, block) = (record.grid, record.block);
        return Err(ExportProblem::Dimensions { grid, block });
    }
    if let Some((index, &size)) = record.arg_sizes.iter().enumerate().find(|(_, s)| **s != 8) {
        return Err(ExportProblem::ArgumentSize { index, size });
    }
    if to == Generation::LlvmLegacy && record.shared_mem > 0 {
        return Err(ExportProblem::SharedMemory {
            bytes: record.shared_mem,
        });
    }
    let mut r = record.clone();
    r.generation = to;
    r.arg_sizes.clear();
    if to == Generation::LlvmLegacy {
        r.memory_size = Some(input_len);
    } else if r.region_size.is_none() {
        // LLVM current always records the reserved size.
        return Err(ExportProblem::Descriptor(
            reprise_core::record::RecordError::CannotWrite {
                generation: to,
                key: "VAllocSize",
            },
        ));
    }
    let mut buf = vec![0u8; MAX_JSON_LEN];
    let n = r.to_json(to, &mut buf).map_err(ExportProblem::Descriptor)?;
    buf.truncate(n);
    Ok(buf)
}

/// The globals `bytes` of layout `from` encoded in layout `to`.
fn convert_globals(
    bytes: &[u8],
    from: Layout,
    to: Layout,
) -> std::result::Result<Vec<u8>, ExportProblem> {
    let decoded: Vec<(&str, &[u8])> = globals::decode(from, bytes)
        .map_err(ExportProblem::GlobalsUnreadable)?
        .map(|g| g.map(|g| (g.name, g.bytes)))
        .collect::<std::result::Result<_, _>>()
        .map_err(ExportProblem::GlobalsUnreadable)?;
    let len = globals::encoded_len(to, decoded.iter().copied()).map_err(ExportProblem::Globals)?;
    let mut out = vec![0u8; len];
    globals::encode_into(to, decoded.iter().copied(), &mut out).map_err(ExportProblem::Globals)?;
    Ok(out)
}
