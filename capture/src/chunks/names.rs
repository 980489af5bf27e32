//! The names a writer has given chunks, kept in memory: a chunk met again
//! (launch k's output is launch k+1's input; the region a kernel left
//! alone) is named from a fast hash of its bytes instead of blake3 again.
//!
//! The key is a chunk's xxh3-128 and length, the value its blake3 name, as
//! computed from the same bytes when the entry was made. xxh3 is much
//! faster than blake3 (`reprise bench --store` measures both), and a
//! recording whose snapshots are mostly stored spends most of its writer's
//! time naming chunks it has named before.
//!
//! What is trusted, and what is not:
//! - A chunk **file** is only ever written under a name computed by blake3
//!   from the bytes written ([`super::write`] checks a name that came from
//!   here before it writes a chunk the store lacks), so the store's
//!   content addressing never rests on xxh3.
//! - A **manifest** may name a chunk found here: two chunks of equal
//!   xxh3-128 (2^-128 for a pair by chance; not collision-resistant against
//!   bytes made to collide) would make it name the other's bytes. The
//!   descriptor's checksum is of the bytes recorded, and a replay checks
//!   every byte against it, so such a capture fails its checksum on
//!   replay, loudly, rather than replaying other bytes.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::error::ChunkHash;

/// Entries kept at most (~64 bytes each: ~4 MiB, naming 128 GiB of 2 MiB
/// chunks); past that the index starts afresh, which costs only speed.
const MAX_NAMES: usize = 1 << 16;

/// A chunk's key in the index: its length and xxh3-128.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Quick(u32, u128);

impl Quick {
    /// The key of `bytes` (a chunk: at most 4 GiB).
    pub(super) fn of(bytes: &[u8]) -> Quick {
        Quick(bytes.len() as u32, twox_hash::XxHash3_128::oneshot(bytes))
    }
}

/// The index: chunk keys to the names computed for them.
#[derive(Debug, Default)]
pub(super) struct Names(Mutex<HashMap<Quick, ChunkHash>>);

impl Names {
    /// The name given before to a chunk of key `quick`, if any.
    pub(super) fn get(&self, quick: &Quick) -> Option<ChunkHash> {
        crate::threads::lock(&self.0).get(quick).copied()
    }

    /// Remembers that the chunk of key `quick` is named `hash` (computed
    /// by blake3 from its bytes).
    pub(super) fn insert(&self, quick: Quick, hash: ChunkHash) {
        let mut map = crate::threads::lock(&self.0);
        if map.len() >= MAX_NAMES && !map.contains_key(&quick) {
            map.clear();
        }
        map.insert(quick, hash);
    }

    /// How many names it holds, for the tests.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        crate::threads::lock(&self.0).len()
    }
}

#[cfg(test)]
mod tests;
