//! `reprise diff`: two outputs compared, byte for byte or within a
//! tolerance.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use reprise::capture::{CapturePaths, read_descriptor};
use reprise::core::record::KernelRecord;

use crate::compare_args::CompareArgs;
use crate::error::{CliError, Result};

/// Compare two outputs of a region.
///
/// Each of A and B is an output file (a capture's `.record_output`,
/// `.original.output`, or a replay's saved `.replay_output`), or a
/// capture's descriptor, which stands for its recorded output: two
/// recordings, two replays, or one of each. Differences are listed by
/// side, A and B; a tolerance is relative to A. With
/// `--dtype` and a tolerance, last-bit differences of floating-point
/// results can be told from real ones.
///
/// Exit status: 0 equal (within the tolerance), 1 different, 2 an error
/// (a file missing, or two files of different lengths).
#[derive(Args, Debug)]
pub struct DiffArgs {
    /// The reference output, or a capture's descriptor.
    pub a: PathBuf,
    /// The output compared with it, or a capture's descriptor.
    pub b: PathBuf,
    #[command(flatten)]
    pub compare: CompareArgs,
}

/// An output file, and the record of its capture when a descriptor named
/// it.
fn output_of(path: &Path) -> Result<(PathBuf, Option<Box<KernelRecord>>)> {
    if path.extension().is_some_and(|e| e == "json") {
        let record = read_descriptor(path)?;
        let output = CapturePaths::new(path, record.generation).output;
        return Ok((output, Some(record)));
    }
    Ok((path.to_path_buf(), None))
}

pub fn run(a: DiffArgs) -> Result<ExitCode> {
    let (expected, record) = output_of(&a.a)?;
    let (actual, other) = output_of(&a.b)?;
    let record = record.or(other);
    // A raw output file, or the manifest standing for it in a store.
    let len = reprise::capture::SnapshotFile::open(&expected)?
        .ok_or_else(|| {
            reprise::Error::io(
                &expected,
                "open",
                std::io::Error::from(std::io::ErrorKind::NotFound),
            )
        })?
        .len;
    let spec = a.compare.spec();
    let (ranges, base) = match &record {
        Some(r) => {
            let base = r.region_base.unwrap_or(0);
            (
                reprise::replayer::resolve_ranges(&spec, r, base, len)?,
                r.region_base,
            )
        }
        None if !a.compare.arg.is_empty() => {
            return Err(CliError::Usage(
                "--arg N needs a capture's descriptor (A or B) to know where argument N points"
                    .into(),
            ));
        }
        None => {
            let none =
                reprise::core::record::KernelRecord::new("output").map_err(reprise::Error::from)?;
            (
                reprise::replayer::resolve_ranges(&spec, &none, 0, len)?,
                None,
            )
        }
    };
    let c = reprise::compare_files(&expected, &actual, spec.tolerance, &ranges)?;
    out!("A: {}", expected.display());
    out!("B: {}", actual.display());
    if let Some(r) = &record {
        for line in a.compare.arg_lines(r, r.region_base.unwrap_or(0), len) {
            out!("{line}");
        }
    }
    for line in a
        .compare
        .report_sides("diff", &c, &ranges, base, ["A", "B"])
    {
        out!("{line}");
    }
    Ok(ExitCode::from(u8::from(!c.is_match())))
}
