//! `replay --from-ir`: compiling a capture's LLVM IR (`STEM.bc`, or the
//! file `--bitcode` names) for the executor's target, and replaying the
//! compiled image in place of the recorded one.

use std::path::{Path, PathBuf};

use clap::Args;
use reprise::BackendKind;
use reprise::compile::{self, CompileOptions, Compiled, Target, Toolchain};

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
}

fn parse_level(s: &str) -> std::result::Result<u8, String> {
    CompileOptions::parse_opt_level(s).ok_or_else(|| format!("{s:?} is not O0, O1, O2 or O3"))
}

impl IrArgs {
    /// Whether a replay from IR is asked for.
    pub fn wanted(&self) -> bool {
        self.from_ir || self.bitcode.is_some()
    }
}

fn err(e: compile::CompileError) -> CliError {
    CliError::Command(e.to_string())
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
    let (ir_path, ir) =
        reprise::capture::read_ir(&paths, record.checksums.ir, a.bitcode.as_deref())?.ok_or_else(
            || {
                CliError::Command(format!(
                    "{}: the capture has no LLVM IR ({} is missing and its image is not bitcode); \
             name one with --bitcode FILE",
                    descriptor.display(),
                    reprise::capture::ir_path(descriptor).display()
                ))
            },
        )?;
    let info = compile::describe(&ir_path, &ir).map_err(err)?;
    let backend = forced
        .or_else(|| info.triple.as_deref().and_then(Target::backend_of_triple))
        .ok_or_else(|| {
            CliError::Command(format!(
                "{}: the module's target triple ({}) names no executor; choose one with --backend",
                ir_path.display(),
                info.triple.as_deref().unwrap_or("none")
            ))
        })?;
    let target = target_for(
        backend,
        device.or(Some(record.device_id).filter(|&d| d >= 0)),
    )?;
    let toolchain = Toolchain::find(a.llvm.as_deref()).map_err(err)?;
    let options = CompileOptions {
        opt_level: a.ir_opt_level,
        llvm_args: a.llvm_args.clone(),
    };
    let compiled = compile::compile(&ir_path, &ir, &target, &options, &toolchain).map_err(err)?;
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

/// The compile target of executor `backend`'s device `device` (the
/// registry asks the device).
fn target_for(backend: BackendKind, device: Option<i32>) -> Result<Target> {
    let spec = reprise::executors::ExecutorSpec::new(backend).device(device.unwrap_or(0));
    Ok(reprise::executors::compile_target(spec)?)
}
