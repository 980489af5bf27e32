//! `reprise export CAPTURE... --format F --dir D`: captures written out as
//! raw files, in their own format or in LLVM's.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use crate::error::Result;
use crate::ui::human_bytes;

/// Write captures out as raw files: in their own format, or in LLVM's.
///
/// Each CAPTURE (a descriptor, its files raw or in the directory's store)
/// is written into DIR as a raw recording would have been: `raw` keeps the
/// capture's own format, and every file is the recorded one byte for byte
/// (`reprise import` then `reprise export --format raw` gives the original
/// files back). `llvm-current` and `llvm-legacy` write the descriptor in
/// that format's keys, the globals in its layout and the files under its
/// names (legacy ones after the kernel, as LLVM's legacy replay tool looks
/// for them), for `llvm-omp-kernel-replay` and reprise to read. A
/// conversion that cannot be exact is refused, saying why: a launch of
/// more than one dimension, arguments not in 8-byte slots, dynamic shared
/// memory for legacy, a file the format always has that the capture lacks
/// (LLVM 16 saves no image or globals). No file is replaced; the descriptor
/// is written last. Exit 0 when every capture was written, 2 otherwise
/// (the others are still written).
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// The captures' descriptors.
    #[arg(required = true, value_name = "CAPTURE")]
    pub captures: Vec<PathBuf>,
    /// The format to write.
    #[arg(long, value_enum, default_value = "raw")]
    pub format: FormatArg,
    /// Where to write (made when missing).
    #[arg(long, value_name = "D")]
    pub dir: PathBuf,
}

/// `--format`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FormatArg {
    /// The capture's own format.
    Raw,
    /// LLVM's current format.
    LlvmCurrent,
    /// LLVM's legacy format (LLVM up to 21).
    LlvmLegacy,
}

pub fn run(a: ExportArgs) -> Result<ExitCode> {
    use reprise::transfer::ExportFormat;
    let format = match a.format {
        FormatArg::Raw => ExportFormat::Raw,
        FormatArg::LlvmCurrent => ExportFormat::LlvmCurrent,
        FormatArg::LlvmLegacy => ExportFormat::LlvmLegacy,
    };
    let mut failed = 0;
    for c in &a.captures {
        match reprise::transfer::export(c, format, &a.dir) {
            Ok(e) => out!(
                "{} -> {} ({}, {} file(s), {})",
                c.display(),
                e.descriptor.display(),
                e.generation,
                e.files.len(),
                human_bytes(e.bytes)
            ),
            Err(e) => {
                failed += 1;
                crate::ui::print_error(&e.into());
            }
        }
    }
    Ok(ExitCode::from(if failed > 0 { 2 } else { 0 }))
}
