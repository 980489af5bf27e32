//! How long an image the program handed the driver is: `cuModuleLoadData`
//! takes a pointer without a size, so the length comes from the image's own
//! header. CUDA's runtime hands over fat binaries wrapped in a
//! `__fatBinC_Wrapper_t` (magic `0x466243b1`, version, then a pointer to
//! the fat binary at offset 8); the image is the fat binary it points to.

/// `__fatBinC_Wrapper_t`'s magic.
const WRAPPER_MAGIC: u32 = 0x4662_43b1;

/// The image at `p` (a wrapper unwrapped), as its start and length.
///
/// # Safety
/// `p` must point at an image the driver accepted.
pub unsafe fn image(p: *const u8) -> Option<(*const u8, usize)> {
    // SAFETY: every image kind, and a wrapper, is at least 16 bytes long.
    let head = unsafe { std::slice::from_raw_parts(p, 16) };
    let p = if head[..4] == WRAPPER_MAGIC.to_le_bytes() {
        let inner = u64::from_le_bytes(head[8..16].try_into().expect("8 bytes")) as *const u8;
        if inner.is_null() {
            return None;
        }
        inner
    } else {
        p
    };
    // SAFETY: the caller's guarantee, or the fat binary the driver's
    // accepted wrapper points to.
    unsafe { image_len(p) }.map(|n| (p, n))
}

/// The length of the image at `p`, from its own header: PTX text up to its
/// NUL, an ELF file to the end of its section or program headers, a fat
/// binary by its header's size fields.
///
/// # Safety
/// `p` must point at an image the driver accepted.
unsafe fn image_len(p: *const u8) -> Option<usize> {
    const MAX: usize = 1 << 30;
    // SAFETY: every image kind is at least 16 bytes long.
    let head = unsafe { std::slice::from_raw_parts(p, 16) };
    let u16_at = |b: &[u8], i: usize| u16::from_le_bytes([b[i], b[i + 1]]) as usize;
    if head.starts_with(b"\x7fELF") {
        // SAFETY: a 64-bit ELF header is 64 bytes.
        let h = unsafe { std::slice::from_raw_parts(p, 64) };
        let u64_at =
            |i: usize| u64::from_le_bytes(h[i..i + 8].try_into().expect("8 bytes")) as usize;
        let sections = u64_at(0x28) + u16_at(h, 0x3a) * u16_at(h, 0x3c);
        let segments = u64_at(0x20) + u16_at(h, 0x36) * u16_at(h, 0x38);
        return Some(sections.max(segments).max(64)).filter(|&n| n <= MAX);
    }
    if head[..4] == 0xBA55_ED50u32.to_le_bytes() {
        let header = u16_at(head, 6);
        // SAFETY: the fat binary header is 16 bytes: magic, version, size.
        let size = u64::from_le_bytes(head[8..16].try_into().expect("8 bytes")) as usize;
        return header.checked_add(size).filter(|&n| n <= MAX);
    }
    // PTX: text up to its terminating NUL.
    (0..MAX).find(|&i| {
        // SAFETY: PTX is NUL-terminated; reading stops at the NUL.
        unsafe { *p.add(i) == 0 }
    })
}
