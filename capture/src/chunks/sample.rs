//! Whether a new chunk is worth compressing whole, decided from pieces of
//! it compressed first (`docs/store.md`, "Chunk files" and "Sampling").

use super::layout;

/// Whether `data` is worth compressing whole: a chunk shorter than its
/// samples always is; a longer one when its middle
/// [`layout::BLOCK_SAMPLE_LEN`] bytes, compressed on their own, save at
/// least 1/[`layout::KEEP_COMPRESSED_BELOW`] of their bytes (what a chunk
/// must save to be kept compressed), or when a [`layout::SAMPLE_LEN`]
/// piece at its start or its end saves 1/[`layout::SAMPLE_SAVES_BELOW`].
/// A chunk all samples say no to is kept raw even where the rest of it
/// would have compressed: that costs disk, never correctness. `out` is
/// scratch space.
pub(super) fn worth_compressing(
    compressor: &mut zstd::bulk::Compressor<'static>,
    data: &[u8],
    out: &mut Vec<u8>,
) -> std::io::Result<bool> {
    let (small, block) = (layout::SAMPLE_LEN, layout::BLOCK_SAMPLE_LEN);
    if data.len() < 2 * small + block {
        return Ok(true);
    }
    let mut saves = |piece: &[u8], share: usize| -> std::io::Result<bool> {
        out.clear();
        out.reserve(zstd::zstd_safe::compress_bound(piece.len()));
        compressor.compress_to_buffer(piece, out)?;
        Ok(piece.len().saturating_sub(out.len()) >= piece.len() / share)
    };
    let last = data.len() - small;
    for at in [0, last] {
        if saves(&data[at..at + small], layout::SAMPLE_SAVES_BELOW)? {
            return Ok(true);
        }
    }
    let middle = ((data.len() - block) / 2) & !4095;
    saves(&data[middle..middle + block], layout::KEEP_COMPRESSED_BELOW)
}

#[cfg(test)]
mod tests;
