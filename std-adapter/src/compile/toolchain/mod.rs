//! Finding an LLVM toolchain on the machine and telling its version.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use super::sandbox::{self, Bounds, WorkDir};
use super::{CompileError, CompileLimits};

/// The LLVM tools a compile from IR uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolchain {
    /// `clang` (compiles bitcode for a target, links host shared objects).
    pub clang: PathBuf,
    /// `llc`, when found (PTX for NVIDIA GPUs is made with it).
    pub llc: Option<PathBuf>,
    /// `ld.lld`, when found (links AMD GPU code objects).
    pub lld: Option<PathBuf>,
    /// The toolchain's version `(major, minor, patch)`, from `clang --version`.
    pub version: (u32, u32, u32),
    /// The toolchain's `lib` directory, when it has an OpenMP runtime
    /// (`libomp.so`) that host images built from OpenMP IR link with.
    pub omp_lib: Option<PathBuf>,
}

/// Versioned names tried after the plain one, newest first.
const VERSIONS: std::ops::RangeInclusive<u32> = 14..=30;

impl Toolchain {
    /// The toolchain in `dir` (a directory holding `clang`, or an LLVM
    /// prefix whose `bin/` holds it) when given, else the one on `PATH`:
    /// `clang`, then `clang-N` for the newest N found, with the `llc-N`
    /// and `ld.lld-N` of the same version. Its version is asked of it
    /// (`clang --version`) under the default [`CompileLimits`].
    pub fn find(dir: Option<&Path>) -> Result<Toolchain, CompileError> {
        Toolchain::find_within(dir, &CompileLimits::default())
    }

    /// [`Toolchain::find`], asking clang its version under `limits` (those
    /// of the compile it is found for).
    pub fn find_within(
        dir: Option<&Path>,
        limits: &CompileLimits,
    ) -> Result<Toolchain, CompileError> {
        if let Some(dir) = dir {
            for bin in [dir.to_path_buf(), dir.join("bin")] {
                let clang = bin.join("clang");
                if clang.is_file() {
                    let tool = |n: &str| Some(bin.join(n)).filter(|p| p.is_file());
                    return Toolchain::with(clang, tool("llc"), tool("ld.lld"), limits);
                }
            }
            return Err(CompileError::NoToolchain {
                looked: format!("{} (no clang in it or in its bin/)", dir.display()),
            });
        }
        if let Some(clang) = on_path("clang") {
            return Toolchain::with(clang, on_path("llc"), on_path("ld.lld"), limits);
        }
        for v in VERSIONS.rev() {
            if let Some(clang) = on_path(&format!("clang-{v}")) {
                return Toolchain::with(
                    clang,
                    on_path(&format!("llc-{v}")),
                    on_path(&format!("ld.lld-{v}")),
                    limits,
                );
            }
        }
        Err(CompileError::NoToolchain {
            looked: "PATH (clang, clang-N)".into(),
        })
    }

    fn with(
        clang: PathBuf,
        llc: Option<PathBuf>,
        lld: Option<PathBuf>,
        limits: &CompileLimits,
    ) -> Result<Self, CompileError> {
        let work = WorkDir::new()?;
        let bounds = Bounds {
            work: work.path(),
            limits,
            deadline: Instant::now() + limits.time,
            ir: None,
        };
        let mut c = Command::new(&clang);
        c.arg("--version");
        let out = sandbox::run(&clang, c, &bounds)?;
        drop(work);
        let text = sandbox::printable(&String::from_utf8_lossy(&out));
        let version = parse_tool_version(&text).ok_or_else(|| CompileError::Tool {
            tool: clang.clone(),
            message: format!(
                "`--version` names no version: {:?}",
                text.lines().next().unwrap_or("")
            ),
        })?;
        // The real binary's directory: `/usr/bin/clang-16` links to
        // `/usr/lib/llvm-16/bin/clang`, whose `../lib` has libomp.
        let real = std::fs::canonicalize(&clang).unwrap_or_else(|_| clang.clone());
        let omp_lib = real
            .parent()
            .and_then(Path::parent)
            .map(|p| p.join("lib"))
            .filter(|lib| lib.join("libomp.so").exists());
        Ok(Toolchain {
            clang,
            llc,
            lld,
            version,
            omp_lib,
        })
    }

    /// `major.minor.patch`.
    pub fn version_text(&self) -> String {
        let (a, b, c) = self.version;
        format!("{a}.{b}.{c}")
    }
}

/// The first `version X.Y.Z` in a tool's `--version` output (`Debian clang
/// version 16.0.6 (15~deb12u1)`, `LLVM version 19.1.7`).
pub fn parse_tool_version(text: &str) -> Option<(u32, u32, u32)> {
    let mut words = text.split_whitespace();
    while let Some(w) = words.next() {
        if w == "version"
            && let Some(v) = words.next()
            && let Some(parsed) = reprise_core::image::bitcode::parse_version(v)
        {
            return Some(parsed);
        }
    }
    None
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests;
