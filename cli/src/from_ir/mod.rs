//! `replay --from-ir`: compiling a capture's LLVM IR (`STEM.bc`, or the
//! file `--bitcode` names) for the executor's target, and replaying the
//! compiled image in place of the recorded one.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use reprise::BackendKind;
use reprise::compile::{self, CompileLimits, CompileOptions, Compiled, Target, Toolchain};

use crate::error::{CliError, Result};
use crate::ui::human_time;

/// Options of a replay from IR.
#[derive(Args, Debug, Default, Clone)]
pub struct IrArgs {
    /// Compile the capture's LLVM IR (`STEM.bc` beside the descriptor, as
    /// LLVM's recorder writes it for a JIT-compiled image) for the
    /// executor's target and replay that instead of the recorded image.
    #[arg(long)]
    pub from_ir: bool,
    /// The LLVM bitcode to compile (implies --from-ir).
    #[arg(long, value_name = "FILE")]
    pub bitcode: Option<PathBuf>,
    /// The LLVM toolchain: a directory holding clang (and llc, ld.lld), or
    /// an LLVM prefix; default: clang (or clang-N, newest first) on PATH.
    #[arg(long, value_name = "DIR")]
    pub llvm: Option<PathBuf>,
    /// Write the compiled image beside the capture (`STEM.jit.EXT`), or to
    /// FILE, as LLVM's `LIBOMPTARGET_JIT_SAVE_IMAGE_FILENAME` keeps the
    /// image its JIT made.
    #[arg(long, value_name = "FILE", num_args = 0..=1, require_equals = true)]
    pub jit_save_image: Option<Option<PathBuf>>,
    /// The optimisation level of the compile from IR (O0 to O3).
    #[arg(long, value_name = "LEVEL", default_value = "O3", value_parser = parse_level)]
    pub ir_opt_level: u8,
    /// An argument for LLVM's code generator (`-mllvm ARG`); repeatable.
    #[arg(long = "llvm-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub llvm_args: Vec<String>,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// The limits of a compile from IR (`replay --from-ir`, `tune --opt-level`):
/// each tool it runs is stopped at them, with an error naming the option.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct LimitArgs {
    /// The longest a compile from IR may take, in seconds, all its tools
    /// (clang, llc, ld.lld) together; a tool still running then is killed.
    #[arg(long, value_name = "SECONDS", default_value = "120", value_parser = parse_seconds)]
    pub compile_timeout: Duration,
    /// The address space each tool of a compile from IR may use (K/M/G
    /// suffixes).
    #[arg(long, value_name = "SIZE", default_value = "4G", value_parser = |s: &str| size("--compile-memory", s))]
    pub compile_memory: u64,
    /// The largest file a tool of a compile from IR may write, and the
    /// largest compiled image read back (K/M/G suffixes).
    #[arg(long, value_name = "SIZE", default_value = "1G", value_parser = |s: &str| size("--compile-output", s))]
    pub compile_output: u64,
}

impl Default for LimitArgs {
    fn default() -> Self {
        let d = CompileLimits::default();
        LimitArgs {
            compile_timeout: d.time,
            compile_memory: d.memory,
            compile_output: d.output,
        }
    }
}

impl LimitArgs {
    /// The library's limits.
    pub fn limits(&self) -> CompileLimits {
        CompileLimits {
            time: self.compile_timeout,
            memory: self.compile_memory,
            output: self.compile_output,
        }
    }
}

/// `--compile-timeout`: whole seconds, at least one.
fn parse_seconds(s: &str) -> std::result::Result<Duration, String> {
    match s.trim().parse::<u64>() {
        Ok(0) => Err("the compile time limit must be at least 1 second".into()),
        Ok(n) => Ok(Duration::from_secs(n)),
        Err(_) => Err(format!("{s:?} is not a whole number of seconds")),
    }
}

/// A size the option `option` gives, more than 0.
fn size(option: &'static str, s: &str) -> std::result::Result<u64, String> {
    match reprise::config::parse_size(option, s).map_err(|e| e.to_string())? {
        0 => Err("a compile limit of 0 bytes leaves nothing to compile with".into()),
        n => Ok(n),
    }
}

pub(crate) fn parse_level(s: &str) -> std::result::Result<u8, String> {
    CompileOptions::parse_opt_level(s).ok_or_else(|| format!("{s:?} is not O0, O1, O2 or O3"))
}

impl IrArgs {
    /// Whether a replay from IR is asked for.
    pub fn wanted(&self) -> bool {
        self.from_ir || self.bitcode.is_some()
    }
}

/// Compiles the IR of the capture `descriptor` for the executor `forced`
/// (else the one the module's triple names), on device `device`; the
/// compiled image (cached), and says what was done unless `quiet`.
pub fn prepare(
    descriptor: &Path,
    a: &IrArgs,
    forced: Option<BackendKind>,
    device: Option<i32>,
    quiet: bool,
) -> Result<Compiled> {
    let record = reprise::capture::read_descriptor(descriptor)?;
    let paths = reprise::CapturePaths::new(descriptor, record.generation);
    let no_ir = || {
        let bc = reprise::capture::ir_path(descriptor);
        CliError::file(
            descriptor,
            format!(
                "the capture has no LLVM IR ({} is missing and its image is not bitcode); name \
                 one with --bitcode FILE",
                bc.display()
            ),
        )
    };
    let read = reprise::capture::read_ir(&paths, record.checksums.ir, a.bitcode.as_deref())?;
    let (ir_path, ir) = read.ok_or_else(no_ir)?;
    let info = compile::describe(&ir_path, &ir).map_err(CliError::Compile)?;
    let backend = forced
        .or_else(|| info.triple.as_deref().and_then(Target::backend_of_triple))
        .ok_or_else(|| {
            CliError::file(
                &ir_path,
                format!(
                    "the module's target triple ({}) names no executor; choose one with --backend",
                    info.triple.as_deref().unwrap_or("none")
                ),
            )
        })?;
    // The registry asks the device for its target.
    let device = device.or(Some(record.device_id).filter(|&d| d >= 0));
    let spec = reprise::executors::ExecutorSpec::new(backend).device(device.unwrap_or(0));
    let target = reprise::executors::compile_target(spec)?;
    let limits = a.limits.limits();
    let toolchain = Toolchain::find_within(a.llvm.as_deref(), &limits)
        .map_err(|e| CliError::Compile(e.compiling(&ir_path)))?;
    let options = CompileOptions {
        opt_level: a.ir_opt_level,
        llvm_args: a.llvm_args.clone(),
        limits,
    };
    let compiled = compile::compile(&ir_path, &ir, &target, &options, &toolchain)
        .map_err(CliError::Compile)?;
    if !quiet {
        if compiled.cached {
            out!(
                "IR {}: compiled image for {target} (-O{}, clang {}) taken from the cache: {}",
                ir_path.display(),
                options.opt_level,
                compiled.toolchain,
                compiled.path.display()
            );
        } else {
            out!(
                "IR {}: compiled for {target} with {} (LLVM {}, -O{}) in {}",
                ir_path.display(),
                toolchain.clang.display(),
                compiled.toolchain,
                options.opt_level,
                human_time(compiled.compile_time)
            );
        }
    }
    if let Some(save) = &a.jit_save_image {
        let to = save.clone().unwrap_or_else(|| {
            let mut s = reprise::capture::stem_of(descriptor).into_os_string();
            s.push(format!(".jit.{}", target.extension()));
            PathBuf::from(s)
        });
        reprise::store::write_atomically(&to, &compiled.bytes, false)?;
        if !quiet {
            out!("compiled image saved to {}", to.display());
        }
    }
    Ok(compiled)
}

#[cfg(test)]
mod tests;
