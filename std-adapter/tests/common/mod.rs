//! What the device-hashing tests of both simulators share: the region they
//! fill, the recorder's configuration and the noise they fill it with.

use std::path::Path;

use reprise_std::RecordConfig;

/// A store chunk: the default chunk size.
pub const CHUNK: usize = reprise_capture::chunks::layout::DEFAULT_CHUNK_SIZE as usize;
/// The region the tests fill: ten store chunks of the default size.
pub const CHUNKS: usize = 10;

/// Recording into `dir`'s store, device hashing on or off.
pub fn config(dir: &Path, hashing: bool) -> RecordConfig {
    RecordConfig::default()
        .enabled(true)
        .dir(dir)
        .region_size(64 << 20)
        .fsync(false)
        .device_hashing(hashing)
}

/// Bytes that are no pattern: an xorshift.
pub fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
