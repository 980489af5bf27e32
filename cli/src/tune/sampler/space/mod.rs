//! The search space the options give: the compile settings, then the
//! geometry lists, as the dimensions of the library's [`Space`].

use super::*;

/// How a candidate's image is built: the compile dimension of the search.
/// From IR (`--opt-level`) the capture's LLVM IR is compiled at a level;
/// JIT options load PTX (the recorded image, or on CUDA the PTX compiled
/// from IR) with them; both given, every level is crossed with every JIT
/// setting. Neither: the recorded image as it is.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Compile {
    /// The optimisation level the capture's IR is compiled at.
    pub level: Option<u8>,
    /// The JIT options the PTX is loaded with.
    pub jit: Option<JitOptions>,
}

impl Compile {
    /// Its name in rows and keys (`MAX_REGISTERS=32`, `O2`,
    /// `O2,MAX_REGISTERS=32`); none for the recorded image.
    pub fn label(&self) -> Option<String> {
        reprise::tune::rows::compile_label(
            self.level,
            self.jit.as_ref().map(ToString::to_string).as_deref(),
        )
    }

    /// Marks `row` as measured with it.
    pub(super) fn stamp(&self, row: &mut Row) {
        if let Some(o) = &self.jit {
            row.jit = Some(o.to_string());
        }
        if let Some(l) = self.level {
            row.opt_level = Some(l);
        }
    }
}

/// The compile settings `a` gives, in order: each optimisation level
/// (each once) crossed with each JIT setting, the JIT settings varying
/// fastest; the recorded image alone where neither is given.
pub fn compiles(a: &TuneArgs) -> Vec<Compile> {
    let mut levels: Vec<Option<u8>> = Vec::new();
    for &l in &a.ir.opt_level {
        if !levels.contains(&Some(l)) {
            levels.push(Some(l));
        }
    }
    if levels.is_empty() {
        levels.push(None);
    }
    let mut jit: Vec<Option<JitOptions>> = a.jit.settings().into_iter().map(Some).collect();
    if jit.is_empty() {
        jit.push(None);
    }
    let mut out = Vec::with_capacity(levels.len() * jit.len());
    for &level in &levels {
        for j in &jit {
            out.push(Compile {
                level,
                jit: j.clone(),
            });
        }
    }
    out
}

/// The search space the lists give (the recorded value where a list is
/// not given); the compile setting is its first dimension where there is
/// one. `geometry`: whether the executor takes a launch geometry (a host
/// kernel's search is over its compile settings alone).
pub fn space(a: &TuneArgs, recorded: LaunchConfig, geometry: bool) -> Result<Space> {
    let compiles = compiles(a);
    let mut dims = Vec::new();
    if compiles != [Compile::default()] {
        let flag = match (a.ir.opt_level.is_empty(), a.jit.given()) {
            (false, true) => "--opt-level x JIT settings",
            (false, false) => "--opt-level",
            _ => "JIT settings",
        };
        dims.push(Dimension::new(
            flag,
            (0..compiles.len()).map(Setting::Compile),
        ));
    }
    if !geometry {
        if a.num_teams.is_some() || a.num_threads.is_some() || a.shared_mem.is_some() {
            return Err(reprise::Error::NoGeometry.into());
        }
        return Ok(Space { dims });
    }
    crate::tune::geometry_space(a, recorded, dims)
}

#[cfg(test)]
mod tests;
