//! PTX JIT options for `cuModuleLoadDataEx`, the JIT's logs, and what they
//! say of the compiled code (registers, spills).
//!
//! The options are the driver's `CUjit_option` (CUDA driver API, "Module
//! Management", `cuModuleLoadDataEx`; the enum in `cuda.h`):
//! `CU_JIT_MAX_REGISTERS` = 0, `CU_JIT_THREADS_PER_BLOCK` = 1,
//! `CU_JIT_OPTIMIZATION_LEVEL` = 7 (0 to 4, 4 the default),
//! `CU_JIT_GENERATE_DEBUG_INFO` = 11, `CU_JIT_GENERATE_LINE_INFO` = 13 and
//! `CU_JIT_CACHE_MODE` = 14 (`CU_JIT_CACHE_OPTION_NONE`/`CG`/`CA` = 0/1/2),
//! each an `unsigned int` (or `int`) passed in the option's value slot.
//! The executor adds `CU_JIT_INFO_LOG_BUFFER` (3) and
//! `CU_JIT_ERROR_LOG_BUFFER` (5) with their sizes (4, 6: in, the buffer's
//! size; out, how much was filled) and `CU_JIT_LOG_VERBOSE` (12), so that
//! the info log says, in ptxas's words, "N bytes spill stores, M bytes
//! spill loads". The driver applies the options to PTX only: a cubin is
//! compiled already, so the executor refuses options for anything else.

use std::fmt;
use std::sync::{Arc, Mutex};

use cudarc::driver::sys::CUjit_option as O;

/// A JIT option a user may set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum JitOption {
    /// `CU_JIT_MAX_REGISTERS`: the most registers a thread may use.
    MaxRegisters,
    /// `CU_JIT_THREADS_PER_BLOCK`: compile for at least this many threads
    /// a block.
    ThreadsPerBlock,
    /// `CU_JIT_OPTIMIZATION_LEVEL`: 0 to 4.
    OptimizationLevel,
    /// `CU_JIT_GENERATE_DEBUG_INFO`: 0 or 1.
    GenerateDebugInfo,
    /// `CU_JIT_GENERATE_LINE_INFO`: 0 or 1.
    GenerateLineInfo,
    /// `CU_JIT_CACHE_MODE`: `NONE`, `CG`, `CA` (0, 1, 2).
    CacheMode,
}

/// Every option, with its name (without `CU_JIT_`).
pub const OPTIONS: [(JitOption, &str); 6] = [
    (JitOption::MaxRegisters, "MAX_REGISTERS"),
    (JitOption::ThreadsPerBlock, "THREADS_PER_BLOCK"),
    (JitOption::OptimizationLevel, "OPTIMIZATION_LEVEL"),
    (JitOption::GenerateDebugInfo, "GENERATE_DEBUG_INFO"),
    (JitOption::GenerateLineInfo, "GENERATE_LINE_INFO"),
    (JitOption::CacheMode, "CACHE_MODE"),
];

impl JitOption {
    /// The option named `name` (`MAX_REGISTERS` or `CU_JIT_MAX_REGISTERS`,
    /// any case).
    pub fn from_name(name: &str) -> Option<JitOption> {
        let up = name.trim().to_ascii_uppercase();
        let up = up.strip_prefix("CU_JIT_").unwrap_or(&up);
        OPTIONS.iter().find(|(_, n)| *n == up).map(|(o, _)| *o)
    }

    /// Its name, without `CU_JIT_`.
    pub fn name(self) -> &'static str {
        OPTIONS
            .iter()
            .find(|(o, _)| *o == self)
            .map_or("?", |(_, n)| n)
    }

    /// The driver's enum value.
    pub(crate) fn code(self) -> O {
        match self {
            JitOption::MaxRegisters => O::CU_JIT_MAX_REGISTERS,
            JitOption::ThreadsPerBlock => O::CU_JIT_THREADS_PER_BLOCK,
            JitOption::OptimizationLevel => O::CU_JIT_OPTIMIZATION_LEVEL,
            JitOption::GenerateDebugInfo => O::CU_JIT_GENERATE_DEBUG_INFO,
            JitOption::GenerateLineInfo => O::CU_JIT_GENERATE_LINE_INFO,
            JitOption::CacheMode => O::CU_JIT_CACHE_MODE,
        }
    }

    /// Reads a value of this option: an unsigned integer; `true`/`false`
    /// for the flags; `NONE`/`CG`/`CA` for the cache mode. The range is the
    /// driver's to judge (it fails the load).
    pub fn parse_value(self, text: &str) -> Result<u32, String> {
        let t = text.trim().to_ascii_uppercase();
        let named = match (self, t.as_str()) {
            (JitOption::GenerateDebugInfo | JitOption::GenerateLineInfo, "TRUE") => Some(1),
            (JitOption::GenerateDebugInfo | JitOption::GenerateLineInfo, "FALSE") => Some(0),
            (JitOption::CacheMode, "NONE") => Some(0),
            (JitOption::CacheMode, "CG") => Some(1),
            (JitOption::CacheMode, "CA") => Some(2),
            _ => None,
        };
        match named {
            Some(v) => Ok(v),
            None => t.parse::<u32>().map_err(|_| {
                format!(
                    "{text:?} is no value for CU_JIT_{} (an unsigned integer{})",
                    self.name(),
                    match self {
                        JitOption::CacheMode => ", or NONE, CG, CA",
                        JitOption::GenerateDebugInfo | JitOption::GenerateLineInfo =>
                            ", or true/false",
                        _ => "",
                    }
                )
            }),
        }
    }
}

/// Options for loading PTX, in the order given (a later value of an
/// option replaces an earlier one).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct JitOptions {
    entries: Vec<(JitOption, u32)>,
}

impl JitOptions {
    /// No options.
    pub fn new() -> Self {
        JitOptions::default()
    }

    /// Sets `option` to `value`.
    pub fn set(mut self, option: JitOption, value: u32) -> Self {
        self.entries.retain(|(o, _)| *o != option);
        self.entries.push((option, value));
        self
    }

    /// Reads `NAME=VALUE`.
    pub fn parse_setting(text: &str) -> Result<(JitOption, u32), String> {
        let (name, value) = text
            .split_once('=')
            .ok_or_else(|| format!("{text:?}: a JIT option is NAME=VALUE"))?;
        let option = JitOption::from_name(name).ok_or_else(|| {
            let known: Vec<&str> = OPTIONS.iter().map(|(_, n)| *n).collect();
            format!(
                "{name:?} is no JIT option reprise passes (one of {})",
                known.join(", ")
            )
        })?;
        Ok((option, option.parse_value(value)?))
    }

    /// The options set, in order.
    pub fn entries(&self) -> &[(JitOption, u32)] {
        &self.entries
    }

    /// Whether none is set.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl fmt::Display for JitOptions {
    /// `MAX_REGISTERS=32,OPTIMIZATION_LEVEL=3` (`-` for none).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.entries.is_empty() {
            return f.write_str("-");
        }
        for (i, (o, v)) in self.entries.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}={v}", o.name())?;
        }
        Ok(())
    }
}

/// What the JIT made of the kernels fetched from images loaded with JIT
/// options, in the order fetched (kernel name, registers, spills, logs): a
/// handle shared by its clones, which the executors opened with it fill and
/// its holder [`CompiledKernels::take`]s.
#[derive(Debug, Clone, Default)]
pub struct CompiledKernels(Arc<Mutex<Vec<(String, Compiled)>>>);

impl CompiledKernels {
    /// An empty list.
    pub fn new() -> Self {
        CompiledKernels::default()
    }

    /// Notes what the JIT made of kernel `name`.
    pub(crate) fn note(&self, name: &str, compiled: &Compiled) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((name.to_string(), compiled.clone()));
    }

    /// What was noted since the last call, in order.
    pub fn take(&self) -> Vec<(String, Compiled)> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// Two handles are equal when they share their list.
impl PartialEq for CompiledKernels {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for CompiledKernels {}

/// What the JIT said when it compiled (or failed to compile) PTX.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JitLog {
    /// The info log (`CU_JIT_INFO_LOG_BUFFER`, verbose).
    pub info: String,
    /// The error log (`CU_JIT_ERROR_LOG_BUFFER`).
    pub error: String,
}

impl JitLog {
    /// The spill bytes the info log gives kernel `name` (stores, loads):
    /// the "N bytes spill stores, M bytes spill loads" line after
    /// "Function properties for NAME", else the first such line.
    pub fn spills(&self, name: &str) -> Option<(u64, u64)> {
        let marker = format!("Function properties for {name}");
        let from = self.info.find(&marker).map_or(0, |at| at + marker.len());
        spill_line(&self.info[from..]).or_else(|| spill_line(&self.info))
    }
}

/// The first "N bytes spill stores, M bytes spill loads" in `text`.
fn spill_line(text: &str) -> Option<(u64, u64)> {
    let at = text.find(" bytes spill stores")?;
    let stores = last_number(&text[..at])?;
    let rest = &text[at + " bytes spill stores".len()..];
    let loads_at = rest.find(" bytes spill loads")?;
    let loads = last_number(&rest[..loads_at])?;
    Some((stores, loads))
}

/// The number that ends `text`.
fn last_number(text: &str) -> Option<u64> {
    let digits: String = text
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    digits.parse().ok()
}

/// What the JIT made of one kernel.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Compiled {
    /// The options it was given.
    pub options: JitOptions,
    /// Registers a thread uses (`CU_FUNC_ATTRIBUTE_NUM_REGS`).
    pub registers: Option<u32>,
    /// Spill stores and loads in bytes, from the verbose info log.
    pub spills: Option<(u64, u64)>,
    /// The JIT's logs.
    pub log: JitLog,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_by_name_and_value() {
        assert_eq!(
            JitOptions::parse_setting("cu_jit_max_registers=32"),
            Ok((JitOption::MaxRegisters, 32))
        );
        assert_eq!(
            JitOptions::parse_setting("CACHE_MODE=ca"),
            Ok((JitOption::CacheMode, 2))
        );
        assert!(JitOptions::parse_setting("WALL_TIME=1").is_err());
        assert!(JitOptions::parse_setting("MAX_REGISTERS").is_err());
        assert!(JitOptions::parse_setting("MAX_REGISTERS=-1").is_err());
        let o = JitOptions::new()
            .set(JitOption::MaxRegisters, 16)
            .set(JitOption::OptimizationLevel, 3)
            .set(JitOption::MaxRegisters, 64);
        assert_eq!(o.to_string(), "OPTIMIZATION_LEVEL=3,MAX_REGISTERS=64");
    }

    #[test]
    fn spills_come_from_the_kernels_own_lines() {
        let log = JitLog {
            info: "ptxas info    : Function properties for other\n    0 bytes stack frame, \
                   8 bytes spill stores, 8 bytes spill loads\n\
                   ptxas info    : Function properties for poly_fma\n    152 bytes stack \
                   frame, 148 bytes spill stores, 144 bytes spill loads\n"
                .into(),
            error: String::new(),
        };
        assert_eq!(log.spills("poly_fma"), Some((148, 144)));
        assert_eq!(log.spills("absent"), Some((8, 8)));
        assert_eq!(JitLog::default().spills("x"), None);
    }
}
