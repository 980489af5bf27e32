//! PTX JIT options on the command line (`--max-registers`,
//! `--jit-opt-level`, `--jit-option NAME=VALUE`): one setting for
//! `reprise replay`, dimensions of the sweep for `reprise tune`.
//!
//! The options are `cuModuleLoadDataEx`'s `CU_JIT_*` (CUDA driver API,
//! "Module Management"); the CUDA executor passes them for PTX and refuses
//! them for a cubin, other executors refuse them
//! ([`reprise::executors::Traits::jit_refusal`]). In a sweep each setting's
//! module is compiled once, for all its geometries and repetitions; its
//! registers (`CU_FUNC_ATTRIBUTE_NUM_REGS`), spills and logs come from that
//! load ([`reprise::cuda_jit::CompiledKernels`], handed to the executor with
//! the options in [`reprise::CudaOptions`]).

use clap::Args;
use reprise::cuda_jit::{JitOption, JitOptions};
use reprise::{BackendKind, Capture, CudaError};

use super::lists;
use crate::error::{CliError, Result};

/// PTX JIT options (CUDA executor, PTX images only).
#[derive(Args, Debug, Default, Clone)]
pub struct JitArgs {
    /// PTX JIT: the most registers a thread may use; on tune a LIST
    /// (`32,64`, `32..128`).
    ///
    /// CU_JIT_MAX_REGISTERS; on tune each value is a setting of the
    /// sweep.
    #[arg(long, value_name = "N|LIST", value_parser = lists::value_list)]
    pub max_registers: Option<lists::ValueList>,
    /// PTX JIT: the optimisation level, 0 to 4 (CU_JIT_OPTIMIZATION_LEVEL;
    /// the driver's default is 4); on tune a LIST (`0,4`, `0..4`).
    #[arg(long, value_name = "0..4|LIST", value_parser = opt_levels)]
    pub jit_opt_level: Option<lists::ValueList>,
    /// PTX JIT: any CU_JIT_* option as NAME=VALUE (MAX_REGISTERS,
    /// THREADS_PER_BLOCK, OPTIMIZATION_LEVEL, GENERATE_DEBUG_INFO,
    /// GENERATE_LINE_INFO, CACHE_MODE=NONE|CG|CA; the CU_JIT_ prefix is
    /// optional); repeatable. --max-registers and --jit-opt-level win.
    #[arg(long = "jit-option", value_name = "NAME=VALUE", value_parser = setting)]
    pub jit_option: Vec<(JitOption, u32)>,
}

/// `--jit-opt-level`: levels 0 to 4, as items or `a..b` (every level from
/// a to b).
fn opt_levels(list: &str) -> std::result::Result<lists::ValueList, String> {
    let mut out = Vec::new();
    for item in list.split(',') {
        let item = item.trim();
        let level = |t: &str| match t.trim().parse::<u32>() {
            Ok(v) if v <= 4 => Ok(v),
            _ => Err(format!(
                "{t:?} is no JIT optimisation level (0 to 4: CU_JIT_OPTIMIZATION_LEVEL)"
            )),
        };
        match item.split_once("..") {
            Some((a, b)) => {
                let (a, b) = (level(a)?, level(b)?);
                if a > b {
                    return Err(format!("{item:?}: the range runs down"));
                }
                out.extend(a..=b);
            }
            None => out.push(level(item)?),
        }
    }
    Ok(lists::ValueList(out))
}

/// `--jit-option NAME=VALUE`.
fn setting(text: &str) -> std::result::Result<(JitOption, u32), String> {
    let (option, value) = JitOptions::parse_setting(text)?;
    if option == JitOption::OptimizationLevel && value > 4 {
        return Err(format!("{text:?}: CU_JIT_OPTIMIZATION_LEVEL is 0 to 4"));
    }
    Ok((option, value))
}

impl JitArgs {
    /// Whether any JIT option was given.
    pub fn given(&self) -> bool {
        self.max_registers.is_some() || self.jit_opt_level.is_some() || !self.jit_option.is_empty()
    }

    /// Every setting the options give, in order: each `--max-registers`
    /// value crossed with each `--jit-opt-level` value, over the
    /// `--jit-option`s; empty when none was given. This is the JIT
    /// dimension of a sweep: a plain list the configuration product (or a
    /// sampler) draws from.
    pub fn settings(&self) -> Vec<JitOptions> {
        if !self.given() {
            return Vec::new();
        }
        let mut base = JitOptions::new();
        for &(o, v) in &self.jit_option {
            base = base.set(o, v);
        }
        let some = |l: &Option<lists::ValueList>| {
            l.as_ref()
                .map_or_else(|| vec![None], |l| l.0.iter().copied().map(Some).collect())
        };
        let mut out: Vec<JitOptions> = Vec::new();
        for regs in some(&self.max_registers) {
            for level in some(&self.jit_opt_level) {
                let mut o = base.clone();
                if let Some(r) = regs {
                    o = o.set(JitOption::MaxRegisters, r);
                }
                if let Some(l) = level {
                    o = o.set(JitOption::OptimizationLevel, l);
                }
                if !out.contains(&o) {
                    out.push(o);
                }
            }
        }
        out
    }

    /// The one setting of a replay (`None` without options); a list is
    /// refused.
    pub fn single(&self) -> Result<Option<JitOptions>> {
        for (flag, list) in [
            ("--max-registers", &self.max_registers),
            ("--jit-opt-level", &self.jit_opt_level),
        ] {
            if let Some(l) = list
                && l.0.len() != 1
            {
                return Err(CliError::Usage(format!(
                    "{flag} takes one value on replay ({} given); a list is a sweep: \
                     reprise tune {flag} LIST",
                    l.0.len()
                )));
            }
        }
        Ok(self.settings().into_iter().next())
    }
}

/// Refuses JIT options for an executor that takes none, and for an image
/// that is not PTX, naming why.
pub fn check(
    file: &std::path::Path,
    backend: BackendKind,
    capture: Option<&Capture>,
) -> Result<()> {
    if let Some(why) = reprise::executors::capabilities(backend).jit_refusal {
        return Err(CliError::file(
            file,
            format!(
                "JIT options (--max-registers, --jit-opt-level, --jit-option) are refused on \
                 the {backend} executor: {why}"
            ),
        ));
    }
    if let Some(c) = capture
        && c.image_kind != reprise::core::image::ImageKind::Ptx
    {
        return Err(CliError::file(
            file,
            format!(
                "JIT options apply to PTX only, and the capture's image is {}: a cubin is \
             compiled already, and the driver applies no JIT option to it (record the PTX, or \
             drop the JIT options)",
                c.image_kind
            ),
        ));
    }
    Ok(())
}

/// The JIT's failure among the causes of `e`, if it is one.
pub(super) fn jit_failure<'e>(e: &'e (dyn std::error::Error + 'static)) -> Option<&'e CudaError> {
    let mut at = Some(e);
    while let Some(e) = at {
        if let Some(c @ CudaError::JitFailed { .. }) = e.downcast_ref::<CudaError>() {
            return Some(c);
        }
        at = e.source();
    }
    None
}

#[cfg(test)]
mod tests;
