//! The recorded launch as reprise's capture files, for the host's tools:
//!
//! - `STEM.json`: the descriptor, in reprise's format, naming the `mcu`
//!   executor (`Backend`) and the checksums of the other files;
//! - `STEM.record_input` and `STEM.record_output`: the region's used bytes
//!   before and after the kernel;
//! - `STEM.globals`: the globals before the kernel, in reprise's (LLVM's
//!   current) globals layout;
//! - `STEM.image`: the kernel's code as a 32-bit little-endian ELF
//!   relocatable object for the microcontroller (Arm, `EM_ARM`), one
//!   function symbol naming the kernel. The host's tools take such an
//!   image for the `mcu` executor's, which no std build has: `reprise
//!   inspect` reads the capture, and a replay is refused as needing an
//!   executor this build lacks.
//!
//! The descriptor is written last, under a temporary name renamed into
//! place, so the host never sees a descriptor whose files are not whole.

use reprise_core::globals;
use reprise_core::record::{BackendKind, Generation, KernelRecord, RecordError, checksum};

use crate::device;
use crate::launch::{Bufs, COUNT, GLOBALS, KERNEL, Layout};

/// Where a capture's files go.
pub trait Sink {
    /// Why a write failed.
    type Error;
    /// Creates (or truncates) file `name` holding `bytes`.
    fn write(&mut self, name: &str, bytes: &[u8]) -> Result<(), Self::Error>;
    /// Renames file `from` to `to`.
    fn rename(&mut self, from: &str, to: &str) -> Result<(), Self::Error>;
}

/// Why a capture could not be written.
#[derive(Debug)]
pub enum CaptureError<E> {
    /// The descriptor could not be made.
    Record(RecordError),
    /// A buffer was missing or too small.
    Buffer(&'static str),
    /// The sink refused a write.
    Sink(E),
}

impl<E> From<RecordError> for CaptureError<E> {
    fn from(e: RecordError) -> Self {
        CaptureError::Record(e)
    }
}

fn put16(out: &mut [u8], at: usize, v: u16) {
    out[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

fn put32(out: &mut [u8], at: usize, v: u32) {
    out[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// Writes a 32-bit ELF relocatable object for Arm (EABI 5, hard float)
/// holding `code` as `.text` and one global function symbol `name` over
/// it (a Thumb function: its value has bit 0 set) into `out`; returns its
/// length, or `None` when `out` is too small.
pub fn elf_object(code: &[u8], name: &str, out: &mut [u8]) -> Option<usize> {
    const SHSTRTAB: &[u8] = b"\0.text\0.symtab\0.strtab\0.shstrtab\0";
    let align = |n: usize| (n + 3) & !3;
    let text = 52;
    let symtab = align(text + code.len());
    let strtab = symtab + 32;
    let shstrtab = strtab + name.len() + 2;
    let shoff = align(shstrtab + SHSTRTAB.len());
    let len = shoff + 5 * 40;
    let out = out.get_mut(..len)?;
    out.fill(0);
    out[..16].copy_from_slice(&[0x7f, b'E', b'L', b'F', 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    put16(out, 16, 1); // ET_REL
    put16(out, 18, reprise_core::image::EM_ARM);
    put32(out, 20, 1);
    put32(out, 32, shoff as u32);
    put32(out, 36, 0x0500_0400); // EABI 5, hard-float
    put16(out, 40, 52);
    put16(out, 46, 40);
    put16(out, 48, 5);
    put16(out, 50, 4);
    out[text..text + code.len()].copy_from_slice(code);
    // Symbol 1: the kernel (symbol 0 is the null symbol).
    put32(out, symtab + 16, 1);
    put32(out, symtab + 20, 1);
    put32(out, symtab + 24, code.len() as u32);
    out[symtab + 28] = 0x12; // STB_GLOBAL, STT_FUNC
    put16(out, symtab + 30, 1);
    out[strtab + 1..strtab + 1 + name.len()].copy_from_slice(name.as_bytes());
    out[shstrtab..shstrtab + SHSTRTAB.len()].copy_from_slice(SHSTRTAB);
    // name, type, flags, offset, size, link, info, align, entsize
    let sections: [[u32; 9]; 4] = [
        [1, 1, 6, text as u32, code.len() as u32, 0, 0, 4, 0],
        [7, 2, 0, symtab as u32, 32, 3, 1, 4, 16],
        [15, 3, 0, strtab as u32, (name.len() + 2) as u32, 0, 0, 1, 0],
        [23, 3, 0, shstrtab as u32, SHSTRTAB.len() as u32, 0, 0, 1, 0],
    ];
    for (i, [name, ty, flags, offset, size, link, info, align, entsize]) in
        sections.into_iter().enumerate()
    {
        let h = shoff + 40 * (i + 1);
        for (k, v) in [name, ty, flags, 0, offset, size, link, info, align, entsize]
            .into_iter()
            .enumerate()
        {
            put32(out, h + 4 * k, v);
        }
    }
    Some(len)
}

/// The first `used` bytes of a snapshot's buffer.
fn snapshot(b: &Option<crate::exec::McuBuffer>, used: usize) -> Option<&[u8]> {
    b.as_ref().and_then(|b| b.as_ref().get(..used))
}

/// `STEM.EXT` in `buf`.
fn file_name<'b>(buf: &'b mut heapless::String<48>, stem: &str, ext: &str) -> &'b str {
    buf.clear();
    let _ = buf.push_str(stem);
    let _ = buf.push('.');
    let _ = buf.push_str(ext);
    buf.as_str()
}

/// Writes the launch `bufs` recorded (with the region laid out as `at`)
/// as capture `stem`, with `image` (an ELF object from [`elf_object`]) as
/// its image; `scratch` holds the descriptor and the globals file while
/// they are written (1 KiB is plenty).
pub fn write<S: Sink>(
    sink: &mut S,
    stem: &str,
    at: &Layout,
    bufs: &Bufs,
    image: &[u8],
    scratch: &mut [u8],
) -> Result<(), CaptureError<S::Error>> {
    let generation = Generation::Reprise;
    let names = generation.file_names();
    let input = snapshot(&bufs.input, at.used).ok_or(CaptureError::Buffer("input"))?;
    let output = snapshot(&bufs.output, at.used).ok_or(CaptureError::Buffer("output"))?;
    let g = bufs
        .globals
        .as_ref()
        .ok_or(CaptureError::Buffer("globals"))?
        .as_ref();
    let mut name = heapless::String::new();
    let n = globals::encode_into(
        generation.globals_layout(),
        [(GLOBALS[0].name, &g[..4]), (GLOBALS[1].name, &g[4..12])],
        scratch,
    )
    .map_err(|_| CaptureError::Buffer("scratch"))?;
    let globals_sum = checksum(&scratch[..n]);
    sink.write(file_name(&mut name, stem, names.globals), &scratch[..n])
        .map_err(CaptureError::Sink)?;
    for (ext, bytes) in [
        (names.input, input),
        (names.output, output),
        (names.image, image),
    ] {
        sink.write(file_name(&mut name, stem, ext), bytes)
            .map_err(CaptureError::Sink)?;
    }

    let mut r = KernelRecord::new(KERNEL)?;
    r.push_arg(at.data)?;
    r.push_arg(COUNT as u64)?;
    r.region_base = Some(device::BASE);
    r.region_size = Some(device::REGION as u64);
    r.memory_size = Some(at.used as u64);
    r.backend = Some(BackendKind::Mcu);
    r.launch_seq = Some(0);
    r.checksums.input = Some(checksum(input));
    r.checksums.output = Some(checksum(output));
    r.checksums.globals = Some(globals_sum);
    r.checksums.image = Some(checksum(image));
    let n = r.to_json(generation, scratch)?;
    let mut tmp = heapless::String::<48>::new();
    let _ = tmp.push_str(".tmp.");
    let _ = tmp.push_str(file_name(&mut name, stem, names.descriptor));
    sink.write(&tmp, &scratch[..n])
        .map_err(CaptureError::Sink)?;
    sink.rename(&tmp, file_name(&mut name, stem, names.descriptor))
        .map_err(CaptureError::Sink)
}
