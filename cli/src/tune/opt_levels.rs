//! `tune --opt-level LIST`: a sweep of compile options from IR. The
//! capture's LLVM IR is compiled at each level ([`crate::from_ir`], cached),
//! and each image is replayed, verified against the recorded output and
//! timed; the compile time is reported apart from the kernel time.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use reprise::Capture;
use reprise::tune::rows::Row;

use crate::backend::given;
use crate::error::{CliError, Result};
use crate::from_ir::IrArgs;
use crate::ui::human_time;

/// Options of a sweep from IR.
#[derive(Args, Debug, Default)]
pub struct IrSweepArgs {
    /// Compile the capture's LLVM IR at each of these levels (`O0,O2,O3`)
    /// and rank the images.
    ///
    /// The IR is `STEM.bc`; each image is replayed, verified and timed,
    /// and the compile time is a column of its own.
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = crate::from_ir::parse_level)]
    pub opt_level: Vec<u8>,
    /// An argument for LLVM's code generator for every compile of the
    /// sweep (`-mllvm ARG`); repeatable.
    #[arg(long = "llvm-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub llvm_args: Vec<String>,
    /// The LLVM toolchain of the sweep's compiles (see `replay --llvm`).
    #[arg(long, value_name = "DIR")]
    pub llvm: Option<PathBuf>,
    /// The LLVM bitcode to compile instead of `STEM.bc`.
    #[arg(long, value_name = "FILE")]
    pub bitcode: Option<PathBuf>,
    /// The limits of each compile (see `replay --compile-timeout`).
    #[command(flatten)]
    pub limits: crate::from_ir::LimitArgs,
}

/// The capture `a.file` with its image compiled from IR at `level`, and
/// the compile's time (none when the image came from the cache).
pub fn open_at(a: &super::TuneArgs, level: u8) -> Result<(Capture, Option<Duration>)> {
    let ir = &a.ir;
    let args = IrArgs {
        from_ir: true,
        bitcode: ir.bitcode.clone(),
        llvm: ir.llvm.clone(),
        jit_save_image: None,
        ir_opt_level: level,
        llvm_args: ir.llvm_args.clone(),
        limits: ir.limits.clone(),
    };
    let compiled = crate::from_ir::prepare(&a.file, &args, a.backend.kind(), a.device_id, true)?;
    let options = super::open_options(a).compiled_image(&compiled.path);
    let capture = Capture::open_with(&a.file, options)?;
    Ok((capture, (!compiled.cached).then_some(compiled.compile_time)))
}

/// The row of one replay of `capture` as recorded (verified, then timed
/// `--repetitions` times after `--warmup`), for a kernel that takes no
/// launch geometry (the host's) and for the sweep from IR; the kernel's
/// own times where the executor has them.
pub fn replay_row(a: &super::TuneArgs, capture: &Capture) -> Row {
    let mut row = Row::failed(super::recorded_config(capture), None);
    let builder = reprise::replay(capture)
        .verify(capture.output.is_some())
        .compare(a.compare.spec())
        .repetitions(a.warmup + a.repetitions);
    let builder = given(builder, a.backend.kind(), |b, k| b.backend(k));
    let builder = given(builder, a.device_id, |b, d| b.device_id(d));
    match reprise::block_on(std::future::IntoFuture::into_future(builder)) {
        Ok(o) => {
            row.times_ns = o
                .times
                .iter()
                .zip(&o.kernel_times)
                .skip(a.warmup as usize)
                .map(|(t, k)| u64::try_from(k.unwrap_or(*t).as_nanos()).unwrap_or(u64::MAX))
                .collect();
            let (status, detail) = match &o.verification {
                None => ("unverified", None),
                Some(v) if v.is_match() => ("verified", None),
                Some(v) => ("differs", Some(v.to_string())),
            };
            row.status = status.into();
            row.detail = detail;
        }
        Err(e) => row.detail = Some(CliError::from(e).to_string()),
    }
    row
}

/// Runs the sweep over `ir.opt_level` for the capture `a.file`.
pub fn run(a: &super::TuneArgs) -> Result<ExitCode> {
    let mut rows = Vec::new();
    for &level in &a.ir.opt_level {
        let (capture, compile) = open_at(a, level)?;
        rows.push((level, compile, replay_row(a, &capture)));
    }
    // The median (the upper middle one for an even count) and the
    // shortest of a level's kernel times.
    let times = |r: &Row| {
        let mut t: Vec<Duration> = r
            .times_ns
            .iter()
            .map(|&t| Duration::from_nanos(t))
            .collect();
        t.sort();
        (t.get(t.len() / 2).copied(), t.first().copied())
    };
    rows.sort_by_key(|(.., r)| (!r.good(), times(r).0.unwrap_or(Duration::MAX)));
    out!(
        "tuning {} from IR: {} optimisation levels, {} timed runs each after {} warm-up(s)",
        a.file.display(),
        rows.len(),
        a.repetitions,
        a.warmup
    );
    out!(
        "{:<4} {:>5} {:>12} {:>12} {:>12}  result",
        "rank",
        "level",
        "compile",
        "kernel med",
        "kernel min"
    );
    let t = |d: Option<Duration>| d.map_or("-".to_string(), human_time);
    for (i, (level, compile, r)) in rows.iter().enumerate() {
        let verdict = match r.status.as_str() {
            "unverified" => "not verified (no recorded output)".to_string(),
            "verified" => "verified".to_string(),
            "differs" => "OUTPUT DIFFERS".to_string(),
            _ => format!("failed: {}", r.detail.as_deref().unwrap_or("")),
        };
        let (median, min) = times(r);
        out!(
            "{:<4} {:>5} {:>12} {:>12} {:>12}  {verdict}",
            i + 1,
            format!("O{level}"),
            compile.map_or("cached".to_string(), human_time),
            t(median),
            t(min),
        );
    }
    Ok(if rows.iter().any(|(.., r)| r.good()) {
        ExitCode::SUCCESS
    } else if rows.iter().any(|(.., r)| !r.times_ns.is_empty()) {
        ExitCode::from(1)
    } else {
        ExitCode::from(2)
    })
}
