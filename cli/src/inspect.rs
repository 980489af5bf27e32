//! `reprise inspect`: what a capture holds, without running anything.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use reprise::capture::{FileState, IMAGE_LIMIT, Storage, read_data, storage};
use reprise::list::{ChecksumStatus, Description, describe_with};

use crate::backend::BackendArg;
use crate::open_args::OpenArgs;
use crate::replay::origin_text;
use serde_json::json;

use crate::error::{FLAGS, Result};
use crate::ui::human_bytes;

/// Show what a capture holds, without running it.
///
/// Kernel, format, executor, launch geometry, arguments (marking those
/// that point into the recorded region), region, globals, files, sizes and
/// checksum status. Never executes the image.
///
/// Exits 1 when it finds a problem (a file missing, a size or checksum that
/// does not match), 0 when the capture is complete.
#[derive(Args, Debug)]
pub struct InspectArgs {
    /// The capture's descriptor (`NAME.json`).
    pub file: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Skip hashing the files (faster for large captures).
    #[arg(long)]
    pub no_checksums: bool,
    /// The executor the capture is for, when its descriptor does not say:
    /// chooses among an application binary's entries (with `--image`).
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
    #[command(flatten)]
    pub open: OpenArgs,
}

fn checksum_text(c: ChecksumStatus) -> String {
    match c {
        ChecksumStatus::NotRecorded => "no checksum recorded".into(),
        ChecksumStatus::NotChecked => "checksum not checked".into(),
        ChecksumStatus::Verified => "checksum ok".into(),
        ChecksumStatus::Mismatch { recorded, actual } => {
            format!("CHECKSUM MISMATCH (recorded {recorded:016x}, file {actual:016x})")
        }
    }
}

/// What GPU code the image holds (`PTX sm_80 (ISA 7.0)`, `cubin sm_90`,
/// an AMD code object's target and kernels).
fn gpu_targets(d: &Description) -> Vec<String> {
    let Some(kind) = d.image_kind else {
        return Vec::new();
    };
    // A host image holds no GPU code: not read.
    if kind
        .backend()
        .is_ok_and(|b| !reprise::executors::capabilities(b).device_memory)
    {
        return Vec::new();
    }
    match read_data(&d.paths.image, "device image", IMAGE_LIMIT) {
        Ok(Some(image)) => reprise::capture::targets::describe(kind, &image),
        _ => Vec::new(),
    }
}

/// A file's length for people, or what is there instead.
fn state_text(state: &FileState) -> String {
    match state {
        FileState::Regular(n) => human_bytes(*n),
        FileState::Missing => "MISSING".into(),
        FileState::Special(kind) => kind.trim_start_matches("a ").to_uppercase(),
        FileState::Unreadable(_) => "UNREADABLE".into(),
        FileState::Chunked { len, .. } => human_bytes(*len),
    }
}

/// How the capture's data files are kept, for people.
fn storage_text(s: Storage) -> String {
    match s {
        Storage::Raw => "raw files".into(),
        Storage::Store {
            version,
            chunks,
            stored_bytes,
            raw_bytes,
        } => format!(
            "store v{version}: {} in {chunks} distinct chunk(s), {} stored (shared with the \
             directory's other captures)",
            human_bytes(raw_bytes),
            human_bytes(stored_bytes)
        ),
    }
}

fn backend_text(d: &Description) -> String {
    let detected = d.image_kind.map(|k| (k, k.backend()));
    match (d.record.backend, detected) {
        (Some(b), _) => b.to_string(),
        (None, Some((_, Ok(b)))) => format!("{b} (from the image)"),
        (None, Some((_, Err(e)))) => format!("none: {e}"),
        (None, None) => "unknown (image missing)".into(),
    }
}

pub fn run(a: InspectArgs) -> Result<ExitCode> {
    let options = a
        .open
        .options(a.backend.kind())
        .verify_checksums(!a.no_checksums);
    let d = describe_with(&a.file, options)?;
    let r = &d.record;
    let args: Vec<_> = (0..r.num_args())
        .map(|i| {
            let v = r.arg_value(i);
            let in_region = d.arg_in_region(i);
            (
                i,
                v,
                r.arg_size(i),
                in_region,
                in_region.then(|| v - d.base_addr().unwrap_or(0)),
            )
        })
        .collect();
    let problems = d.problems_named(FLAGS);
    let notes = d.notes_named(FLAGS);
    if a.json {
        let files: Vec<_> = d
            .files
            .iter()
            .map(|f| {
                json!({
                    "role": f.role,
                    "path": f.path.to_string_lossy(),
                    "bytes": f.state.regular_len(),
                    "kind": match &f.state {
                        FileState::Regular(_) => "file",
                        FileState::Missing => "missing",
                        FileState::Special(k) => k,
                        FileState::Unreadable(_) => "unreadable",
                        FileState::Chunked { .. } => "manifest",
                    },
                    "chunks": match &f.state {
                        FileState::Chunked { chunks, .. } => Some(*chunks),
                        _ => None,
                    },
                    "checksum": match f.checksum {
                        ChecksumStatus::NotRecorded => "none",
                        ChecksumStatus::NotChecked => "unchecked",
                        ChecksumStatus::Verified => "ok",
                        ChecksumStatus::Mismatch { .. } => "mismatch",
                    },
                })
            })
            .collect();
        let out = json!({
            "kernel": r.name.as_str(),
            "format": r.generation.as_str(),
            "format_version": r.format_version,
            "backend": backend_text(&d),
            "image": d.image_kind.map(|k| k.to_string()),
            "image_targets": gpu_targets(&d),
            "grid": r.grid,
            "block": r.block,
            "num_teams": r.num_teams(),
            "num_threads": r.num_threads(),
            "shared_memory": r.shared_mem,
            "loop_trip_count": r.loop_trip_count,
            "device_id": r.device_id,
            "launch_seq": r.launch_seq,
            "teams_limits": r.teams_limits,
            "threads_limits": r.threads_limits,
            "region": {
                "base": d.base_addr(),
                "base_origin": d.base_origin().map(|b| b.to_string()),
                "reserved": r.region_size,
                "snapshot_bytes": d.snapshot_len(),
                "reachable_only": r.reachable.as_ref().map(|rs| json!({
                    "ranges": rs.as_slice(), "held_bytes": reprise::core::record::reachable::held(rs),
                })),
            },
            "extra_ranges": r.extra_ranges.iter().map(|e| json!({
                "class": e.class.as_str(), "address": e.addr, "bytes": e.size,
                "what": e.class.describe(),
            })).collect::<Vec<_>>(),
            "image_origin": d.image_origin.as_ref().map(origin_text),
            "ir": ir_of(&d).map(|(path, bytes, info)| match info {
                Ok(i) => json!({
                    "path": path.to_string_lossy(), "bytes": bytes, "producer": i.producer,
                    "triple": i.triple, "functions": i.functions,
                }),
                Err(e) => json!({ "path": path.to_string_lossy(), "bytes": bytes, "error": e }),
            }),
            "arguments": args.iter().map(|(i, v, size, in_region, off)| json!({
                "index": i, "value": v, "size": size, "in_region": in_region, "region_offset": off,
            })).collect::<Vec<_>>(),
            "globals": match &d.globals {
                Ok(g) => json!(g.iter().map(|(n, s)| json!({"name": n, "bytes": s})).collect::<Vec<_>>()),
                Err(e) => json!({ "error": e }),
            },
            "files": files,
            "storage": match storage(&d.paths) {
                Storage::Raw => json!({ "kind": "raw" }),
                Storage::Store { version, chunks, stored_bytes, raw_bytes } => json!({
                    "kind": "store", "version": version, "chunks": chunks,
                    "stored_bytes": stored_bytes, "raw_bytes": raw_bytes,
                }),
            },
            "problems": problems,
            "notes": notes,
        });
        crate::ui::print_json(&out);
        return Ok(status(&problems));
    }

    out!("capture   {}", d.paths.descriptor.display());
    out!("kernel    {}", r.name);
    out!(
        "format    {}{}",
        r.generation,
        r.format_version
            .map(|v| format!(" (version {v})"))
            .unwrap_or_default()
    );
    out!("executor  {}", backend_text(&d));
    let targets = gpu_targets(&d);
    out!(
        "image     {}{}",
        d.image_kind
            .map(|k| k.to_string())
            .unwrap_or_else(|| "missing".into()),
        match (d.image_kind, targets.as_slice()) {
            (_, []) => String::new(),
            // One piece of code: just its architecture.
            (Some(k), [one]) if k != reprise::core::image::ImageKind::Fatbin => {
                let arch = one.split_once(' ').map_or(one.as_str(), |(_, a)| a);
                format!(" for {arch}")
            }
            (_, all) => format!(": {}", all.join(", ")),
        }
    );
    if let Some(o) = &d.image_origin {
        out!("          from {}", origin_text(o));
    }
    for line in ir_lines(&d) {
        out!("{line}");
    }
    let dims = |v: [u32; 3]| format!("{} x {} x {}", v[0], v[1], v[2]);
    out!(
        "geometry  grid {} (teams {}), block {} (threads {}), shared memory {} bytes",
        dims(r.grid),
        r.num_teams(),
        dims(r.block),
        r.num_threads(),
        r.shared_mem
    );
    if let Some([lo, hi]) = r.teams_limits {
        out!("          teams limits [{lo}, {hi}]");
    }
    if let Some([lo, hi]) = r.threads_limits {
        out!("          threads limits [{lo}, {hi}]");
    }
    out!(
        "launch    device {}, loop trip count {}{}",
        r.device_id,
        r.loop_trip_count,
        r.launch_seq
            .map(|s| format!(", launch #{s} of its process"))
            .unwrap_or_default()
    );
    match d.base_addr() {
        Some(base) => out!(
            "region    {base:#x}, snapshot {}{}",
            d.snapshot_len()
                .map(human_bytes)
                .unwrap_or_else(|| "missing".into()),
            r.region_size
                .map(|s| format!(", reserved {}", human_bytes(s)))
                .unwrap_or_default()
        ),
        None => out!("region    address not recorded (cannot be replayed)"),
    }
    if let Some(rs) = &r.reachable {
        out!(
            "          reachable-only: {} held in {} range(s), the rest is poison ({:#04x}): a \
             kernel that reaches past them differs on replay",
            human_bytes(reprise::core::record::reachable::held(rs)),
            rs.len(),
            reprise::core::record::reachable::POISON
        );
    }
    if let Some(b @ reprise::capture::BaseOrigin::Derived { .. }) = d.base_origin() {
        out!("          base {b}");
    }
    if !r.extra_ranges.is_empty() {
        out!(
            "beyond    {} range(s) outside the region, held before the kernel{}",
            r.extra_ranges.len(),
            if r.checksums.extra_output.is_some() {
                " and after it"
            } else {
                ""
            }
        );
        for e in &r.extra_ranges {
            out!(
                "  {:#x}..{:#x} {} ({}), {}",
                e.addr,
                e.end(),
                e.class,
                e.class.describe(),
                human_bytes(e.size)
            );
        }
        out!(
            "          a replay puts each at its address: device memory where the driver \
             reserves it there, else page-locked host memory mapped for the device (read over \
             the bus: timings differ); where neither can, it refuses the capture"
        );
    }
    out!("arguments {}", args.len());
    for (i, v, size, _, off) in &args {
        let beyond = (*size == 8)
            .then(|| r.extra_ranges.iter().find(|e| *v >= e.addr && *v < e.end()))
            .flatten();
        let note = match (off, beyond) {
            (Some(off), _) => format!("  -> region + {off:#x}"),
            (None, Some(e)) => format!("  -> {} {:#x} + {:#x}", e.class, e.addr, *v - e.addr),
            (None, None) => String::new(),
        };
        if *size == 8 {
            out!("  [{i:>3}] {v:#018x} ({}){note}", *v as i64);
        } else {
            out!("  [{i:>3}] {}", scalar_text(*size, *v));
        }
    }
    match &d.globals {
        Ok(g) => {
            out!("globals   {}", g.len());
            for (n, s) in g {
                out!("  {n} ({s} bytes)");
            }
        }
        Err(e) => out!("globals   unreadable: {e}"),
    }
    out!("storage   {}", storage_text(storage(&d.paths)));
    out!("files");
    for f in &d.files {
        out!(
            "  {:<14} {:<10} {}  {}",
            f.role,
            state_text(&f.state),
            // The descriptor is where the others' checksums are.
            if f.role == "descriptor" && f.checksum == ChecksumStatus::NotRecorded {
                "holds the checksums".into()
            } else {
                checksum_text(f.checksum)
            },
            f.path.display()
        );
    }
    if problems.is_empty() {
        out!("status    complete");
    } else {
        out!("status    {} problem(s):", problems.len());
        for p in &problems {
            out!("  - {p}");
        }
    }
    for n in &notes {
        out!("note      {n}");
    }
    Ok(status(&problems))
}

/// The capture's LLVM IR (`STEM.bc`, or an image that is bitcode), read
/// without LLVM: its file, size and what it says (or why it could not be
/// read); `None` when there is none.
fn ir_of(
    d: &Description,
) -> Option<(
    std::path::PathBuf,
    usize,
    std::result::Result<reprise::core::image::bitcode::BitcodeInfo, String>,
)> {
    match reprise::capture::read_ir(&d.paths, d.record.checksums.ir, None) {
        Ok(Some((path, bytes))) => {
            let info = reprise::core::image::bitcode::read(&bytes).map_err(|e| e.to_string());
            Some((path, bytes.len(), info))
        }
        Ok(None) => None,
        Err(e) => Some((
            reprise::capture::ir_path(&d.paths.descriptor),
            0,
            Err(e.to_string()),
        )),
    }
}

/// The IR lines of `inspect`.
fn ir_lines(d: &Description) -> Vec<String> {
    let Some((path, len, info)) = ir_of(d) else {
        return vec!["ir        none".into()];
    };
    let name = path.file_name().map_or(path.display().to_string(), |n| {
        n.to_string_lossy().into_owned()
    });
    match info {
        Ok(i) => {
            let mut v = vec![format!(
                "ir        {name} ({}, {}): {}",
                human_bytes(len as u64),
                i.producer.as_deref().unwrap_or("producer unknown"),
                i.triple.as_deref().unwrap_or("no target triple")
            )];
            if !i.functions.is_empty() {
                v.push(format!("          defines {}", i.functions.join(", ")));
            }
            v
        }
        Err(e) => vec![format!(
            "ir        {name}: IR present ({len} bytes) but not read ({e}); install LLVM \
             (llvm-dis) to see more"
        )],
    }
}

/// An argument of `size` bytes (not 8) whose bytes, little-endian, are
/// `v`: its size and bits, and for 4 bytes what they read as an integer and,
/// unless that is a denormal, NaN or infinity (an integer's bits, most
/// likely), as a float (the capture and the images record sizes, not
/// types).
fn scalar_text(size: u32, v: u64) -> String {
    match size {
        4 => {
            let bits = v as u32;
            let f = f32::from_bits(bits);
            let float = if f == 0.0 || !f.is_normal() {
                String::new()
            } else if (1e-4..1e9).contains(&f.abs()) {
                format!(", float {f}")
            } else {
                format!(", float {f:e}")
            };
            format!("4 bytes: {bits:#x} (int {}{float})", bits as i32)
        }
        1..=8 => format!("{size} bytes: {v:#x}"),
        _ => format!("{size} bytes"),
    }
}

/// 1 when the capture has problems (as a failed verification), else 0.
fn status(problems: &[String]) -> ExitCode {
    ExitCode::from(u8::from(!problems.is_empty()))
}

#[cfg(test)]
mod tests;
