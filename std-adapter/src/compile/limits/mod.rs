//! The limits every tool a compile from IR runs (clang, llc, ld.lld, and
//! `clang --version` when the toolchain is found) is bounded by
//! ([`super::sandbox`]).

use std::fmt;
use std::time::Duration;

/// The limits of one compile from IR. The defaults suit any kernel a
/// capture holds; each is an option of `reprise replay --from-ir` and
/// `reprise tune --opt-level` (named in [`Limit::option`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompileLimits {
    /// The wall time of the whole compile, its tools one after another
    /// (`--compile-timeout`, default 120 s). A tool still running at the
    /// limit is killed with its whole process group.
    pub time: Duration,
    /// The address space of each tool, in bytes (`setrlimit(RLIMIT_AS)`;
    /// `--compile-memory`, default 4 GiB). Address space, not resident
    /// memory: what a tool maps counts whether it touches it or not.
    pub memory: u64,
    /// The largest file a tool may write, in bytes (`setrlimit(RLIMIT_FSIZE)`,
    /// so a temporary object counts as much as the image), and the largest
    /// compiled image read back (`--compile-output`, default 1 GiB).
    pub output: u64,
}

impl Default for CompileLimits {
    fn default() -> Self {
        CompileLimits {
            time: Duration::from_secs(120),
            memory: 4 << 30,
            output: 1 << 30,
        }
    }
}

/// One of the [`CompileLimits`], with its value, as a tool ran past it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// [`CompileLimits::time`].
    Time(Duration),
    /// [`CompileLimits::memory`].
    Memory(u64),
    /// [`CompileLimits::output`].
    Output(u64),
}

impl Limit {
    /// Its value, for people (`120 s`, `4 GiB`).
    pub fn value(&self) -> String {
        match *self {
            Limit::Time(d) => seconds(d),
            Limit::Memory(n) | Limit::Output(n) => size(n),
        }
    }

    /// The command-line option that raises it.
    pub fn option(&self) -> &'static str {
        match self {
            Limit::Time(_) => "--compile-timeout",
            Limit::Memory(_) => "--compile-memory",
            Limit::Output(_) => "--compile-output",
        }
    }
}

impl fmt::Display for Limit {
    /// What ran past it: "ran past the compile time limit of 120 s
    /// (--compile-timeout)".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (option, value) = (self.option(), self.value());
        match self {
            Limit::Time(_) => write!(f, "ran past the compile time limit of {value} ({option})"),
            Limit::Memory(_) => write!(
                f,
                "ran out of memory under the compile memory limit of {value} ({option})"
            ),
            Limit::Output(_) => write!(
                f,
                "tried to write a file larger than the compile output limit of {value} ({option})"
            ),
        }
    }
}

/// `120 s`, `1.5 s`.
fn seconds(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.3} s", d.as_secs_f64())
    }
}

/// `4 GiB`, `1 MiB`, else the bytes.
fn size(bytes: u64) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) {
            return format!("{} {unit}", bytes >> shift);
        }
    }
    format!("{bytes} bytes")
}

#[cfg(test)]
mod tests;
