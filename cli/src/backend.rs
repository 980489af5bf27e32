//! `--backend`: which executor a command runs on.

use clap::ValueEnum;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use reprise::BackendKind;

/// An executor on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    /// The one the capture's image calls for.
    Auto,
    /// The host CPU (ELF x86-64 shared objects).
    Host,
    /// NVIDIA GPUs (PTX, cubin, fatbin), through the CUDA driver.
    Cuda,
    /// AMD GPUs (AMDGPU code objects), through the HSA runtime.
    Amdgpu,
}

impl BackendArg {
    /// The executor asked for; `None` for `auto`.
    pub fn kind(self) -> Option<BackendKind> {
        match self {
            BackendArg::Auto => None,
            BackendArg::Host => Some(BackendKind::Host),
            BackendArg::Cuda => Some(BackendKind::Cuda),
            BackendArg::Amdgpu => Some(BackendKind::Amdgpu),
        }
    }

    /// The parser of `--backend` for commands that run built-in kernels,
    /// exist for every executor (`auto` means nothing there).
    pub fn builtin_kernels() -> impl TypedValueParser<Value = BackendArg> {
        PossibleValuesParser::new(["host", "cuda", "amdgpu"])
            .map(|s| BackendArg::from_str(&s, false).expect("one of the possible values"))
    }
}

/// `builder` with `set` applied to `value`, where one is given (`--backend`,
/// `--device-id`: else the capture's own).
pub fn given<B, T>(builder: B, value: Option<T>, set: impl FnOnce(B, T) -> B) -> B {
    match value {
        Some(v) => set(builder, v),
        None => builder,
    }
}
