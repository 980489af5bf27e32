//! A capture's files as formats: how they are named beside the descriptor
//! (by generation), and how they are checksummed (xxh3-64 of their bytes,
//! as the descriptor's `Checksums` records). The std adapter opens and
//! writes them; the rules are here.
//!
//! ```
//! use reprise_core::record::{Checksummer, Generation, checksum};
//! assert_eq!(Generation::LlvmLegacy.file_names().input, "memory");
//! assert_eq!(Generation::Reprise.file_names().output, "record_output");
//! // Streaming gives what one call gives.
//! let mut h = Checksummer::new();
//! h.update(b"kernel ");
//! h.update(b"launch");
//! assert_eq!(h.finish(), checksum(b"kernel launch"));
//! ```

use super::Generation;

/// The extensions of a capture's files (after `STEM.`), for one generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileNames {
    /// The descriptor.
    pub descriptor: &'static str,
    /// The memory snapshot before the kernel.
    pub input: &'static str,
    /// The memory snapshot after the kernel, as recorded.
    pub output: &'static str,
    /// Where a replay saves its output.
    pub replay_output: &'static str,
    /// The globals.
    pub globals: &'static str,
    /// The device image.
    pub image: &'static str,
    /// The kernel's IR, where the recorder kept it (LLVM's `FileTy::IRImage`).
    pub ir: &'static str,
}

impl Generation {
    /// How this generation's capture files are named: LLVM 16 wrote
    /// `STEM.memory`, `STEM.original.output` and `STEM.replay.output`;
    /// later LLVM and reprise write `STEM.record_input`,
    /// `STEM.record_output` and `STEM.replay_output`.
    pub const fn file_names(self) -> FileNames {
        let (input, output, replay_output) = match self {
            Generation::LlvmLegacy => ("memory", "original.output", "replay.output"),
            Generation::LlvmCurrent | Generation::Reprise => {
                ("record_input", "record_output", "replay_output")
            }
        };
        FileNames {
            descriptor: "json",
            input,
            output,
            replay_output,
            globals: "globals",
            image: "image",
            ir: "bc",
        }
    }
}

/// Every extension a capture's files may carry, whatever the generation
/// (for listing a directory and finding orphans).
pub const KNOWN_EXTENSIONS: &[&str] = &[
    "json",
    "memory",
    "original.output",
    "replay.output",
    "record_input",
    "record_output",
    "replay_output",
    "globals",
    "image",
    "bc",
    "extra_input",
    "extra_output",
];

/// The extensions of the files holding a reprise capture's
/// `ExtraRanges` bytes: before the kernel, and after it as recorded.
pub const EXTRA_EXTENSIONS: [&str; 2] = ["extra_input", "extra_output"];

/// The checksum of a capture file's bytes: xxh3-64, what the descriptor's
/// `Checksums` records.
pub fn checksum(bytes: &[u8]) -> u64 {
    // The same function either way (the tests compare them); with `std`,
    // its vector loop is chosen at run time.
    #[cfg(feature = "std")]
    {
        twox_hash::XxHash3_64::oneshot(bytes)
    }
    #[cfg(not(feature = "std"))]
    {
        xxhash_rust::xxh3::xxh3_64(bytes)
    }
}

/// [`checksum`], fed in pieces (a file streamed in chunks).
#[derive(Clone)]
pub struct Checksummer(xxhash_rust::xxh3::Xxh3);

impl Checksummer {
    /// Nothing fed yet.
    pub fn new() -> Self {
        Checksummer(xxhash_rust::xxh3::Xxh3::new())
    }

    /// Feeds the next bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The checksum of everything fed.
    pub fn finish(&self) -> u64 {
        self.0.digest()
    }
}

impl Default for Checksummer {
    fn default() -> Self {
        Self::new()
    }
}

impl core::fmt::Debug for Checksummer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Checksummer")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_generations_names_are_known_extensions() {
        for g in [
            Generation::LlvmLegacy,
            Generation::LlvmCurrent,
            Generation::Reprise,
        ] {
            let n = g.file_names();
            for ext in [
                n.descriptor,
                n.input,
                n.output,
                n.replay_output,
                n.globals,
                n.image,
                n.ir,
            ] {
                assert!(KNOWN_EXTENSIONS.contains(&ext), "{g}: {ext}");
            }
        }
    }

    #[test]
    fn the_checksum_is_xxh3_64_as_recorded() {
        // The xxh3-64 of no bytes, from the reference implementation.
        assert_eq!(checksum(b""), 0x2d06_8005_38d3_94c2);
        assert_ne!(checksum(b"a"), checksum(b"b"));
    }

    #[cfg(feature = "alloc")]
    #[test]
    fn the_checksum_and_the_checksummer_agree_at_every_length_class() {
        // Short inputs, the mid-size paths (up to 240 bytes) and the long
        // loop with its stripes and blocks, across a block's edge.
        let bytes: alloc::vec::Vec<u8> = (0..(3usize << 20) + 77)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
            .collect();
        for len in [
            0,
            1,
            3,
            4,
            8,
            9,
            16,
            17,
            128,
            129,
            240,
            241,
            1024,
            1025,
            65_536,
            bytes.len(),
        ] {
            let mut h = Checksummer::new();
            let (a, b) = bytes[..len].split_at(len / 3);
            h.update(a);
            h.update(b);
            assert_eq!(checksum(&bytes[..len]), h.finish(), "{len} bytes");
            assert_eq!(
                checksum(&bytes[..len]),
                xxhash_rust::xxh3::xxh3_64(&bytes[..len])
            );
        }
    }
}
