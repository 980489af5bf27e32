//! What the AMD executor's simulated-runtime tests share: the fixtures and
//! a blocking synchronize.

#![allow(dead_code)]

use std::path::Path;

use reprise_amdgpu::{AmdError, AmdQueue};
use reprise_core::exec::Queue;

/// The bytes of `fixtures/NAME`.
pub fn fixture(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Waits for everything `q` was given.
pub fn synchronize(q: &mut AmdQueue) -> Result<(), AmdError> {
    reprise_core::block_on(core::future::poll_fn(|cx| q.poll_synchronize(cx)))
}
