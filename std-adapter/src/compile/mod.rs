//! Compiling a capture's LLVM IR (`STEM.bc`, what LLVM's recorder keeps
//! beside a JIT-compiled image) for the executor's target with an LLVM
//! toolchain found on the machine ([`Toolchain::find`]).
//!
//! - x86-64 host: a shared object (`clang -shared`; OpenMP IR linked with
//!   the toolchain's `libomp` when it has one), what the host executor loads;
//! - nvptx64: PTX for the device's `sm_XX` (`llc -march=nvptx64
//!   -mcpu=sm_XX`, else `clang --target=nvptx64-nvidia-cuda`), which the
//!   driver JITs;
//! - amdgcn: a code object for the agent's `gfx` target (`clang
//!   --target=amdgcn-amd-amdhsa -mcpu=gfxNNN -c`, linked with `ld.lld
//!   -shared`).
//!
//! A toolchain older than the bitcode's producer is refused, naming both
//! versions. Compiled images are kept in a [`cache`]. Every tool runs
//! under the compile's [`CompileLimits`], in a private temporary directory
//! removed afterwards: a few KB of bitcode can ask for gigabytes of output.

pub mod cache;
mod limits;
mod sandbox;
mod toolchain;

use std::fmt;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use reprise_core::image::bitcode::{self, BitcodeInfo};
use reprise_core::record::BackendKind;

pub use limits::{CompileLimits, Limit};
pub use toolchain::{Toolchain, parse_tool_version};

use sandbox::{Bounds, WorkDir};

/// The most bytes of IR compiled.
pub const IR_LIMIT: u64 = 1 << 30;

/// What the IR is compiled for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The host executor: an x86-64 shared object.
    Host,
    /// An NVIDIA GPU of compute capability `sm` (80 for `sm_80`): PTX.
    Nvptx {
        /// The SM architecture.
        sm: u32,
    },
    /// An AMD GPU agent (`gfx90a`): a code object.
    Amdgcn {
        /// The agent's `gfx` name.
        gfx: String,
    },
}

impl Target {
    /// The executor that runs images of this target.
    pub fn backend(&self) -> BackendKind {
        match self {
            Target::Host => BackendKind::Host,
            Target::Nvptx { .. } => BackendKind::Cuda,
            Target::Amdgcn { .. } => BackendKind::Amdgpu,
        }
    }

    /// The executor a module of `triple` runs on (`x86_64-*`, `nvptx64-*`,
    /// `amdgcn-*`).
    pub fn backend_of_triple(triple: &str) -> Option<BackendKind> {
        let arch = triple.split('-').next().unwrap_or("");
        match arch {
            "x86_64" => Some(BackendKind::Host),
            "nvptx64" | "nvptx" => Some(BackendKind::Cuda),
            "amdgcn" => Some(BackendKind::Amdgpu),
            _ => None,
        }
    }

    /// The file extension of a compiled image.
    pub fn extension(&self) -> &'static str {
        match self {
            Target::Host => "so",
            Target::Nvptx { .. } => "ptx",
            Target::Amdgcn { .. } => "hsaco",
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Host => f.write_str("x86-64 host"),
            Target::Nvptx { sm } => write!(f, "nvptx64 sm_{sm}"),
            Target::Amdgcn { gfx } => write!(f, "amdgcn {gfx}"),
        }
    }
}

/// How the IR is compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileOptions {
    /// The optimisation level, 0 to 3 (`-O0` .. `-O3`). Default 3, as
    /// LLVM's JIT (`LIBOMPTARGET_JIT_OPT_LEVEL`).
    pub opt_level: u8,
    /// Arguments for LLVM's code generator (`-mllvm ARG` to clang, as they
    /// are to llc).
    pub llvm_args: Vec<String>,
    /// The time, memory and output the compile's tools may use (not part
    /// of the cache key: they change whether an image is made, not which).
    pub limits: CompileLimits,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            opt_level: 3,
            llvm_args: Vec::new(),
            limits: CompileLimits::default(),
        }
    }
}

impl CompileOptions {
    /// Parses `O0`..`O3` (or `0`..`3`, `-O2`).
    pub fn parse_opt_level(s: &str) -> Option<u8> {
        let t = s.trim_start_matches('-');
        let t = t
            .strip_prefix('O')
            .or_else(|| t.strip_prefix('o'))
            .unwrap_or(t);
        t.parse::<u8>().ok().filter(|&n| n <= 3)
    }
}

/// A compiled image.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// Its file in the cache (or in a temporary directory when there is no
    /// cache directory).
    pub path: PathBuf,
    /// Its bytes.
    pub bytes: Vec<u8>,
    /// Whether it came from the cache (no compile ran).
    pub cached: bool,
    /// How long the compile took (zero when cached).
    pub compile_time: Duration,
    /// The toolchain's version.
    pub toolchain: String,
}

/// Why IR could not be compiled.
#[non_exhaustive]
#[derive(Debug)]
pub enum CompileError {
    /// No LLVM toolchain was found.
    NoToolchain {
        /// Where it was looked for.
        looked: String,
    },
    /// The bitcode is newer than the toolchain.
    TooOld {
        /// The bitcode's file.
        path: PathBuf,
        /// The bitcode's producer version.
        bitcode: String,
        /// The toolchain's clang.
        clang: PathBuf,
        /// The toolchain's version.
        toolchain: String,
    },
    /// The file is not LLVM bitcode, or is damaged.
    Bitcode {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: bitcode::BitcodeError,
    },
    /// The module is for a target other than the executor's.
    WrongTarget {
        /// The file.
        path: PathBuf,
        /// The module's triple.
        triple: String,
        /// The target asked for.
        target: Target,
    },
    /// A tool ran past one of the compile's limits and was stopped (or
    /// made a file larger than the output limit).
    LimitHit {
        /// The tool.
        tool: PathBuf,
        /// The limit and its value.
        limit: Limit,
        /// The IR being compiled, when known.
        ir: Option<PathBuf>,
        /// What the tool said about it (a line of its standard error).
        detail: Option<String>,
    },
    /// A tool failed.
    Tool {
        /// The tool.
        tool: PathBuf,
        /// What it said (its standard error), or why it could not run.
        message: String,
    },
    /// A file could not be read or written.
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// The error.
        source: std::io::Error,
    },
}

impl CompileError {
    /// The error, naming `ir` as the IR being compiled where it names
    /// none (a limit hit while asking the toolchain its version).
    pub fn compiling(mut self, path: &Path) -> Self {
        if let CompileError::LimitHit { ir: ir @ None, .. } = &mut self {
            *ir = Some(path.to_path_buf());
        }
        self
    }

    fn io(path: impl Into<PathBuf>, action: &'static str, source: std::io::Error) -> Self {
        CompileError::Io {
            path: path.into(),
            action,
            source,
        }
    }
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompileError::NoToolchain { looked } => write!(
                f,
                "no LLVM toolchain found in {looked}: install clang (and llc, ld.lld for GPU \
                 targets) or name one with --llvm DIR"
            ),
            CompileError::TooOld {
                path,
                bitcode,
                clang,
                toolchain,
            } => write!(
                f,
                "{}: the bitcode was produced by LLVM {bitcode}, newer than the toolchain \
                 ({}, LLVM {toolchain}), which may not read it: use LLVM {bitcode} or newer \
                 (--llvm DIR)",
                path.display(),
                clang.display()
            ),
            CompileError::Bitcode { path, problem } => write!(f, "{}: {problem}", path.display()),
            CompileError::WrongTarget {
                path,
                triple,
                target,
            } => write!(
                f,
                "{}: the module is for {triple}, not for the {target} executor",
                path.display()
            ),
            CompileError::LimitHit {
                tool,
                limit,
                ir,
                detail,
            } => {
                write!(f, "{} {limit}", tool.display())?;
                if let Some(ir) = ir {
                    write!(f, " compiling {}", ir.display())?;
                }
                match detail {
                    Some(d) => write!(f, ": {d}"),
                    None => Ok(()),
                }
            }
            CompileError::Tool { tool, message } => write!(f, "{}: {message}", tool.display()),
            CompileError::Io {
                path,
                action,
                source,
            } => write!(f, "{}: could not {action}: {source}", path.display()),
        }
    }
}

impl std::error::Error for CompileError {}

/// Reads what the bitcode file `bytes` (from `path`) says about itself.
pub fn describe(path: &Path, bytes: &[u8]) -> Result<BitcodeInfo, CompileError> {
    bitcode::read(bytes).map_err(|problem| CompileError::Bitcode {
        path: path.to_path_buf(),
        problem,
    })
}

/// Checks that `toolchain` is not older than the bitcode `info` (of
/// `path`) says it was produced by.
pub fn check_version(
    path: &Path,
    info: &BitcodeInfo,
    toolchain: &Toolchain,
) -> Result<(), CompileError> {
    match info.version() {
        Some(v) if v > toolchain.version => Err(CompileError::TooOld {
            path: path.to_path_buf(),
            bitcode: format!("{}.{}.{}", v.0, v.1, v.2),
            clang: toolchain.clang.clone(),
            toolchain: toolchain.version_text(),
        }),
        _ => Ok(()),
    }
}

/// Compiles the bitcode `ir` (read from `path`) for `target`, or takes the
/// image from the cache ([`cache::dir`]) when the same compile was done
/// before.
pub fn compile(
    path: &Path,
    ir: &[u8],
    target: &Target,
    options: &CompileOptions,
    toolchain: &Toolchain,
) -> Result<Compiled, CompileError> {
    compile_cached_in(path, ir, target, options, toolchain, cache::dir())
}

/// [`compile`] with the cache in `dir` (none: a temporary file, never
/// reused).
pub fn compile_cached_in(
    path: &Path,
    ir: &[u8],
    target: &Target,
    options: &CompileOptions,
    toolchain: &Toolchain,
    dir: Option<PathBuf>,
) -> Result<Compiled, CompileError> {
    let info = describe(path, ir)?;
    if let Some(triple) = &info.triple
        && Target::backend_of_triple(triple).is_some_and(|b| b != target.backend())
    {
        return Err(CompileError::WrongTarget {
            path: path.to_path_buf(),
            triple: triple.clone(),
            target: target.clone(),
        });
    }
    check_version(path, &info, toolchain)?;
    let key = cache::key(&[
        blake3::hash(ir).as_bytes(),
        target.to_string().as_bytes(),
        &[options.opt_level],
        options.llvm_args.join("\u{1f}").as_bytes(),
        toolchain.version_text().as_bytes(),
        toolchain.clang.to_string_lossy().as_bytes(),
    ]);
    let cached_path = dir
        .as_ref()
        .map(|d| d.join(format!("{key}.{}", target.extension())));
    let limits = &options.limits;
    let compiled = |path, bytes, cached, compile_time| Compiled {
        path,
        bytes,
        cached,
        compile_time,
        toolchain: toolchain.version_text(),
    };
    if let Some(p) = &cached_path
        && let Ok(bytes) = read_limited(p, limits.output)
        && !bytes.is_empty()
    {
        return Ok(compiled(p.clone(), bytes, true, Duration::ZERO));
    }
    if ir.len() as u64 > IR_LIMIT {
        return Err(CompileError::io(
            path,
            "compile",
            std::io::Error::other(format!(
                "{} bytes of IR, more than the {IR_LIMIT} allowed",
                ir.len()
            )),
        ));
    }
    let work = WorkDir::new()?;
    let started = Instant::now();
    let bounds = Bounds {
        work: work.path(),
        limits,
        deadline: started + limits.time,
        ir: Some(path),
    };
    let built = build(&bounds, ir, target, options, toolchain);
    let compile_time = started.elapsed();
    let bytes = built.and_then(|(out, tool)| match read_limited(&out, limits.output) {
        Err(CompileError::LimitHit { limit, detail, .. }) => Err(bounds.hit(&tool, limit, detail)),
        read => read,
    });
    drop(work);
    let bytes = bytes?;
    let path = cached_path.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("reprise-ir-{key}.{}", target.extension()))
    });
    cache::write_atomically(&path, &bytes)?;
    Ok(compiled(path, bytes, false, compile_time))
}

/// The compiled image at `path`, a regular file (opened without waiting
/// and without following a link) of at most `limit` bytes; a larger one
/// is [`CompileError::LimitHit`] (whose tool is `path` until the caller
/// names the tool).
fn read_limited(path: &Path, limit: u64) -> Result<Vec<u8>, CompileError> {
    let read = |e| CompileError::io(path, "read", e);
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_NOCTTY)
        .open(path)
        .map_err(read)?;
    let meta = f.metadata().map_err(read)?;
    if !meta.is_file() {
        return Err(read(std::io::Error::other("not a regular file")));
    }
    let too_big = || CompileError::LimitHit {
        tool: path.to_path_buf(),
        limit: Limit::Output(limit),
        ir: None,
        detail: None,
    };
    if meta.len() > limit {
        return Err(too_big());
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    f.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(read)?;
    if bytes.len() as u64 > limit {
        return Err(too_big());
    }
    Ok(bytes)
}

/// Runs the tools within `b`, in its private directory; the compiled
/// image's path and the tool that wrote it.
fn build(
    b: &Bounds<'_>,
    ir: &[u8],
    target: &Target,
    options: &CompileOptions,
    tc: &Toolchain,
) -> Result<(PathBuf, PathBuf), CompileError> {
    let work = b.work;
    let input = work.join(sandbox::INPUT);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&input)
        .and_then(|mut f| std::io::Write::write_all(&mut f, ir))
        .map_err(|e| CompileError::io(&input, "write", e))?;
    let opt = format!("-O{}", options.opt_level);
    let out = work.join(format!("image.{}", target.extension()));
    // clang with `args` for the target, then the optimisation level, LLVM's
    // options, the IR, the output `to` and `after` (libraries to link).
    let clang = |args: &[&str], to: &Path, after: &[String]| {
        let mut c = Command::new(&tc.clang);
        c.args(args).arg(&opt);
        for a in &options.llvm_args {
            c.arg("-mllvm").arg(a);
        }
        c.arg(&input).arg("-o").arg(to).args(after);
        sandbox::run(&tc.clang, c, b).map(|_| (out.clone(), tc.clang.clone()))
    };
    match target {
        Target::Host => {
            // OpenMP IR calls the OpenMP runtime (`__kmpc_*`): the
            // toolchain's own libomp, else the system's `libomp.so.5`.
            let omp = match &tc.omp_lib {
                Some(lib) => vec![
                    format!("-L{}", lib.display()),
                    "-lomp".into(),
                    format!("-Wl,-rpath,{}", lib.display()),
                ],
                None if ir.windows(7).any(|w| w == b"__kmpc_") => vec!["-l:libomp.so.5".into()],
                None => Vec::new(),
            };
            let host = ["-shared", "-fPIC", "-Wno-unused-command-line-argument"];
            clang(&host, &out, &omp)
        }
        Target::Nvptx { sm } => match &tc.llc {
            Some(llc) => {
                let mut c = Command::new(llc);
                c.args(["-march=nvptx64", &format!("-mcpu=sm_{sm}"), &opt])
                    .args(&options.llvm_args)
                    .arg(&input)
                    .arg("-o")
                    .arg(&out);
                sandbox::run(llc, c, b)?;
                Ok((out, llc.clone()))
            }
            None => {
                let march = format!("-march=sm_{sm}");
                let args = ["--target=nvptx64-nvidia-cuda", &march, "-nogpulib", "-S"];
                clang(&args, &out, &[])
            }
        },
        Target::Amdgcn { gfx } => {
            let lld = tc.lld.as_ref().ok_or_else(|| CompileError::NoToolchain {
                looked: format!(
                    "the toolchain of {} (no ld.lld beside it, which links AMD GPU code objects)",
                    tc.clang.display()
                ),
            })?;
            let obj = work.join("image.o");
            // The IR is whole: no device library is linked into it again.
            let mcpu = format!("-mcpu={gfx}");
            clang(
                &["--target=amdgcn-amd-amdhsa", &mcpu, "-nogpulib", "-c"],
                &obj,
                &[],
            )?;
            let mut l = Command::new(lld);
            l.arg("-shared").arg(&obj).arg("-o").arg(&out);
            sandbox::run(lld, l, b)?;
            Ok((out, lld.clone()))
        }
    }
}

#[cfg(test)]
mod tests;
