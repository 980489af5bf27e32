//! The options `replay`, `inspect` and `tune` share for opening a capture:
//! its image from elsewhere (an LLVM 16 capture's is in the application
//! binary, or in a plugin it `dlopen`s), its region base when the
//! descriptor records none.

use std::path::PathBuf;

use clap::Args;
use reprise::{BackendKind, OpenOptions};

/// Where a capture's image and region come from, when not from the
/// capture itself.
#[derive(Args, Debug, Clone)]
pub struct OpenArgs {
    /// Take the device image from PATH instead of the capture's own
    /// `NAME.image` (which LLVM 16 never writes): a device image, or an
    /// application binary built by an LLVM offloading compiler, from whose
    /// `.llvm.offloading` section the entry that defines the capture's
    /// kernel is taken (`reprise extract` lists them).
    ///
    /// Give it once per binary (the application and each plugin it
    /// `dlopen`s): the capture's image is taken from the one that holds
    /// its kernel.
    #[arg(long, value_name = "PATH")]
    pub image: Vec<PathBuf>,
    /// The region's base address (hexadecimal with 0x, or decimal), for a
    /// descriptor that records none (LLVM 16's) when the derived one is
    /// wrong; overrides a recorded one too.
    #[arg(long, value_name = "ADDR", value_parser = parse_address)]
    pub region_base: Option<u64>,
}

impl OpenArgs {
    /// The library's options these give, for a capture of `backend` (when
    /// `--backend` says).
    pub fn options(&self, backend: Option<BackendKind>) -> OpenOptions {
        OpenOptions {
            images: self.image.clone(),
            region_base: self.region_base,
            backend,
            ..OpenOptions::new()
        }
    }
}

/// A number, decimal or hexadecimal with `0x`.
pub fn number(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

/// An address: `0x1f00` or `7936`, not 0.
fn parse_address(s: &str) -> std::result::Result<u64, String> {
    let v = number(s).ok_or_else(|| format!("{s:?} is not an address (0x7f0000000010, say)"))?;
    if v == 0 {
        return Err("the region cannot be at address 0".into());
    }
    Ok(v)
}
