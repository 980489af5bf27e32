//! Reading what an LLVM bitcode file says about itself without LLVM: the
//! producer's version (the `IDENTIFICATION_BLOCK`'s `"LLVM<version>"`
//! string), the module's target triple and the functions it defines (the
//! `MODULE_BLOCK`'s `FUNCTION` records, named through the `STRTAB` block).
//!
//! The reader follows LLVM's bitstream container
//! (<https://llvm.org/docs/BitCodeFormat.html>): bits read least
//! significant first, abbreviation ids 0 to 3 built in, `DEFINE_ABBREV`
//! records giving the others. Only the top-level blocks and the module
//! block's own records are read; every nested block is skipped by the
//! length its header gives. Every length is checked against the bytes that
//! are left before anything is read or allocated, so a damaged file is an
//! error value.
//!
//! ```
//! use reprise_core::image::bitcode::{self, BitcodeError};
//! // The magic alone: a module that says nothing.
//! assert_eq!(bitcode::read(b"BC\xc0\xde").unwrap().triple, None);
//! assert_eq!(bitcode::read(b"BC"), Err(BitcodeError::Truncated));
//! assert_eq!(bitcode::read(b"ELF"), Err(BitcodeError::NotBitcode));
//! assert_eq!(bitcode::parse_version("LLVM16.0.6"), Some((16, 0, 6)));
//! assert_eq!(bitcode::parse_version("LLVM19.1.7git"), Some((19, 1, 7)));
//! ```

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// What a bitcode file says about itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BitcodeInfo {
    /// The producer string (`LLVM16.0.6`), when the file has an
    /// identification block.
    pub producer: Option<String>,
    /// The module's target triple (`x86_64-pc-linux-gnu`).
    pub triple: Option<String>,
    /// The functions the module defines (not only declares), in its order.
    pub functions: Vec<String>,
}

impl BitcodeInfo {
    /// The producer's LLVM version `(major, minor, patch)`, when the
    /// producer string is `LLVM` followed by one.
    pub fn version(&self) -> Option<(u32, u32, u32)> {
        self.producer.as_deref().and_then(parse_version)
    }
}

/// Why a bitcode file could not be read.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BitcodeError {
    /// It does not start with the bitcode magic (`BC 0xC0DE`, or the
    /// wrapper's `0x0B17C0DE`).
    NotBitcode,
    /// It ends inside a record or block.
    Truncated,
    /// A record or block is malformed (an unknown abbreviation, an
    /// encoding LLVM does not define, a length past the end).
    Malformed(&'static str),
}

impl fmt::Display for BitcodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BitcodeError::NotBitcode => f.write_str("not LLVM bitcode (no bitcode magic)"),
            BitcodeError::Truncated => f.write_str("the bitcode ends inside a block or record"),
            BitcodeError::Malformed(what) => write!(f, "malformed bitcode: {what}"),
        }
    }
}

impl core::error::Error for BitcodeError {}

/// `LLVM16.0.6` (or `16.0.6`, `LLVM19.1.7git`) -> `(16, 0, 6)`; a missing
/// minor or patch number reads as 0.
pub fn parse_version(s: &str) -> Option<(u32, u32, u32)> {
    let s = s.strip_prefix("LLVM").unwrap_or(s);
    let mut parts = s.split('.').map(|p| {
        let digits = p.len() - p.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        p[..digits].parse::<u32>().ok()
    });
    let major = parts.next()??;
    let minor = parts.next().flatten().unwrap_or(0);
    let patch = parts.next().flatten().unwrap_or(0);
    Some((major, minor, patch))
}

const IDENTIFICATION_BLOCK: u64 = 13;
const MODULE_BLOCK: u64 = 8;
const STRTAB_BLOCK: u64 = 23;
const MODULE_CODE_TRIPLE: u64 = 2;
const MODULE_CODE_FUNCTION: u64 = 8;
const IDENTIFICATION_CODE_STRING: u64 = 1;
const STRTAB_BLOB: u64 = 1;

/// The most abbreviations one block may define, and operands one may have
/// (LLVM's own need a few dozen): bounds on what a hostile file allocates.
const MAX_ABBREVS: usize = 4096;
const MAX_ABBREV_OPS: usize = 64;

/// Reads the producer, triple and defined functions of the bitcode
/// `bytes` (a bare bitcode file or one in the wrapper header).
pub fn read(bytes: &[u8]) -> Result<BitcodeInfo, BitcodeError> {
    let body = unwrap(bytes)?;
    let mut r = Reader {
        bytes: body,
        bit: 32,
    };
    let mut info = BitcodeInfo::default();
    // (strtab offset, size) of each defined function.
    let mut defined: Vec<(u64, u64)> = Vec::new();
    let mut strtab: Option<(usize, usize)> = None;
    while r.bits_left() >= 32 {
        // Top level: abbreviation width 2; only ENTER_SUBBLOCK appears.
        let id = r.fixed(2)?;
        if id != 1 {
            // Trailing padding (zero bits) ends the stream.
            if id == 0 && r.rest_is_zero() {
                break;
            }
            return Err(BitcodeError::Malformed(
                "a top-level record outside any block",
            ));
        }
        let (block, width, end) = r.enter()?;
        match block {
            IDENTIFICATION_BLOCK => {
                r.records(width, end, |code, ops, _| {
                    if code == IDENTIFICATION_CODE_STRING {
                        info.producer = Some(chars(ops));
                    }
                })?;
            }
            MODULE_BLOCK => {
                r.records(width, end, |code, ops, _| match code {
                    MODULE_CODE_TRIPLE => info.triple = Some(chars(ops)),
                    // [strtab offset, size, type, cc, isproto, ...]
                    MODULE_CODE_FUNCTION if ops.len() > 4 && ops[4] == 0 => {
                        defined.push((ops[0], ops[1]));
                    }
                    _ => {}
                })?;
            }
            STRTAB_BLOCK => {
                r.records(width, end, |code, _, blob| {
                    if code == STRTAB_BLOB {
                        strtab = blob;
                    }
                })?;
            }
            _ => {}
        }
        r.bit = end;
    }
    if let Some((start, len)) = strtab {
        let table = &body[start..start + len];
        for (off, size) in defined {
            let (Ok(off), Ok(size)) = (usize::try_from(off), usize::try_from(size)) else {
                continue;
            };
            if let Some(name) = off.checked_add(size).and_then(|end| table.get(off..end)) {
                info.functions
                    .push(String::from_utf8_lossy(name).into_owned());
            }
        }
    }
    Ok(info)
}

/// The bitcode itself: `bytes`, or what the wrapper header points at.
fn unwrap(bytes: &[u8]) -> Result<&[u8], BitcodeError> {
    match bytes {
        [b'B', b'C', 0xc0, 0xde, ..] => Ok(bytes),
        [0xde, 0xc0, 0x17, 0x0b, ..] => {
            let word = |at: usize| {
                bytes
                    .get(at..at + 4)
                    .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]) as usize)
                    .ok_or(BitcodeError::Truncated)
            };
            let (off, size) = (word(8)?, word(12)?);
            let body = off
                .checked_add(size)
                .and_then(|end| bytes.get(off..end))
                .ok_or(BitcodeError::Truncated)?;
            if body.starts_with(b"BC\xc0\xde") {
                Ok(body)
            } else {
                Err(BitcodeError::NotBitcode)
            }
        }
        [b'B', b'C', ..] | [0xde, 0xc0, ..] if bytes.len() < 4 => Err(BitcodeError::Truncated),
        _ => Err(BitcodeError::NotBitcode),
    }
}

/// Operands as characters (each one byte).
fn chars(ops: &[u64]) -> String {
    ops.iter().map(|&c| char::from(c as u8)).collect()
}

/// One operand of an abbreviation.
#[derive(Debug, Clone, Copy)]
enum Op {
    Literal(u64),
    Fixed(u32),
    Vbr(u32),
    Array,
    Char6,
    Blob,
}

struct Reader<'a> {
    bytes: &'a [u8],
    /// The position, in bits.
    bit: usize,
}

impl Reader<'_> {
    fn bits_left(&self) -> usize {
        (self.bytes.len() * 8).saturating_sub(self.bit)
    }

    fn rest_is_zero(&self) -> bool {
        self.bytes[self.bit.div_ceil(8).min(self.bytes.len())..]
            .iter()
            .all(|&b| b == 0)
    }

    fn fixed(&mut self, width: u32) -> Result<u64, BitcodeError> {
        if width > 64 {
            return Err(BitcodeError::Malformed("a fixed field wider than 64 bits"));
        }
        if self.bits_left() < width as usize {
            return Err(BitcodeError::Truncated);
        }
        let mut v = 0u64;
        for i in 0..width as usize {
            let b = self.bit + i;
            if self.bytes[b / 8] >> (b % 8) & 1 == 1 {
                v |= 1 << i;
            }
        }
        self.bit += width as usize;
        Ok(v)
    }

    fn vbr(&mut self, width: u32) -> Result<u64, BitcodeError> {
        if !(2..=32).contains(&width) {
            return Err(BitcodeError::Malformed(
                "a VBR field of a width LLVM never uses",
            ));
        }
        let high = 1u64 << (width - 1);
        let (mut v, mut shift) = (0u64, 0u32);
        loop {
            let piece = self.fixed(width)?;
            if shift < 64 {
                v |= (piece & (high - 1)) << shift;
            }
            if piece & high == 0 {
                return Ok(v);
            }
            shift += width - 1;
            if shift > 70 {
                return Err(BitcodeError::Malformed("a VBR value longer than 64 bits"));
            }
        }
    }

    fn align32(&mut self) -> Result<(), BitcodeError> {
        let to = self.bit.div_ceil(32) * 32;
        if to > self.bytes.len() * 8 {
            return Err(BitcodeError::Truncated);
        }
        self.bit = to;
        Ok(())
    }

    /// After an ENTER_SUBBLOCK id: the block's id, abbreviation width and
    /// end (in bits), checked against the file.
    fn enter(&mut self) -> Result<(u64, u32, usize), BitcodeError> {
        let block = self.vbr(8)?;
        let width = self.vbr(4)?;
        if !(1..=32).contains(&width) {
            return Err(BitcodeError::Malformed("a block's abbreviation width"));
        }
        self.align32()?;
        let words = self.fixed(32)? as usize;
        let end = words
            .checked_mul(32)
            .and_then(|b| b.checked_add(self.bit))
            .filter(|&e| e <= self.bytes.len() * 8)
            .ok_or(BitcodeError::Truncated)?;
        Ok((block, width as u32, end))
    }

    /// Reads the records of the block just entered until its end, calling
    /// `each(code, operands, blob)` for every one (the blob as a byte range
    /// of the file); nested blocks are skipped. Abbreviations the
    /// BLOCKINFO block gives are not applied: none of the records read
    /// here uses them.
    fn records(
        &mut self,
        width: u32,
        end: usize,
        mut each: impl FnMut(u64, &[u64], Option<(usize, usize)>),
    ) -> Result<(), BitcodeError> {
        let mut abbrevs: Vec<Vec<Op>> = Vec::new();
        let mut ops: Vec<u64> = Vec::new();
        while self.bit < end {
            let id = self.fixed(width)?;
            match id {
                0 => {
                    self.align32()?;
                    return Ok(());
                }
                1 => {
                    let (_, _, inner_end) = self.enter()?;
                    if inner_end > end {
                        return Err(BitcodeError::Malformed("a block longer than its parent"));
                    }
                    self.bit = inner_end;
                }
                2 => {
                    if abbrevs.len() >= MAX_ABBREVS {
                        return Err(BitcodeError::Malformed("too many abbreviations"));
                    }
                    abbrevs.push(self.define_abbrev()?);
                }
                3 => {
                    let code = self.vbr(6)?;
                    let n = self.vbr(6)?;
                    // Each operand takes at least 6 bits.
                    if n as usize > self.bits_left() / 6 {
                        return Err(BitcodeError::Truncated);
                    }
                    ops.clear();
                    for _ in 0..n {
                        ops.push(self.vbr(6)?);
                    }
                    each(code, &ops, None);
                }
                _ => {
                    let abbrev = abbrevs
                        .get(id as usize - 4)
                        .ok_or(BitcodeError::Malformed("an undefined abbreviation"))?
                        .clone();
                    ops.clear();
                    let blob = self.abbreviated(&abbrev, &mut ops)?;
                    let Some((&code, rest)) = ops.split_first() else {
                        return Err(BitcodeError::Malformed("a record without a code"));
                    };
                    each(code, rest, blob);
                }
            }
        }
        Ok(())
    }

    fn define_abbrev(&mut self) -> Result<Vec<Op>, BitcodeError> {
        let n = self.vbr(5)? as usize;
        if n == 0 || n > MAX_ABBREV_OPS {
            return Err(BitcodeError::Malformed("an abbreviation's operand count"));
        }
        let mut ops = Vec::with_capacity(n);
        for _ in 0..n {
            let op = if self.fixed(1)? == 1 {
                Op::Literal(self.vbr(8)?)
            } else {
                match self.fixed(3)? {
                    1 => Op::Fixed(self.vbr(5)? as u32),
                    2 => Op::Vbr(self.vbr(5)? as u32),
                    3 => Op::Array,
                    4 => Op::Char6,
                    5 => Op::Blob,
                    _ => return Err(BitcodeError::Malformed("an unknown operand encoding")),
                }
            };
            ops.push(op);
        }
        Ok(ops)
    }

    fn scalar(&mut self, op: Op) -> Result<u64, BitcodeError> {
        match op {
            Op::Literal(v) => Ok(v),
            Op::Fixed(w) => self.fixed(w),
            Op::Vbr(w) => self.vbr(w),
            Op::Char6 => {
                let c = self.fixed(6)? as u8;
                Ok(u64::from(match c {
                    0..=25 => b'a' + c,
                    26..=51 => b'A' + c - 26,
                    52..=61 => b'0' + c - 52,
                    62 => b'.',
                    _ => b'_',
                }))
            }
            Op::Array | Op::Blob => Err(BitcodeError::Malformed(
                "an array or blob as an array's element",
            )),
        }
    }

    fn abbreviated(
        &mut self,
        abbrev: &[Op],
        ops: &mut Vec<u64>,
    ) -> Result<Option<(usize, usize)>, BitcodeError> {
        let mut blob = None;
        let mut i = 0;
        while i < abbrev.len() {
            match abbrev[i] {
                Op::Array => {
                    let elem = *abbrev
                        .get(i + 1)
                        .ok_or(BitcodeError::Malformed("an array without an element type"))?;
                    let n = self.vbr(6)? as usize;
                    if n > self.bits_left() {
                        return Err(BitcodeError::Truncated);
                    }
                    for _ in 0..n {
                        ops.push(self.scalar(elem)?);
                    }
                    i += 2;
                }
                Op::Blob => {
                    let n = self.vbr(6)? as usize;
                    self.align32()?;
                    let start = self.bit / 8;
                    if n > self.bytes.len() - start {
                        return Err(BitcodeError::Truncated);
                    }
                    self.bit += n * 8;
                    self.align32()?;
                    blob = Some((start, n));
                    i += 1;
                }
                op => {
                    ops.push(self.scalar(op)?);
                    i += 1;
                }
            }
        }
        Ok(blob)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes bits least significant first, as LLVM's writer does.
    struct W {
        bytes: Vec<u8>,
        bit: usize,
    }

    impl W {
        fn new() -> Self {
            W {
                bytes: b"BC\xc0\xde".to_vec(),
                bit: 32,
            }
        }
        fn fixed(&mut self, v: u64, w: u32) {
            for i in 0..w {
                if self.bit / 8 >= self.bytes.len() {
                    self.bytes.push(0);
                }
                if v >> i & 1 == 1 {
                    self.bytes[self.bit / 8] |= 1 << (self.bit % 8);
                }
                self.bit += 1;
            }
        }
        fn vbr(&mut self, mut v: u64, w: u32) {
            let high = 1 << (w - 1);
            while v >= high {
                self.fixed(v & (high - 1) | high, w);
                v >>= w - 1;
            }
            self.fixed(v, w);
        }
        fn align(&mut self) {
            while !self.bit.is_multiple_of(32) {
                self.fixed(0, 1);
            }
        }
        /// A block of `id` (abbreviation width 4) whose body `body` writes.
        fn block(&mut self, outer: u32, id: u64, body: impl FnOnce(&mut W)) {
            self.fixed(1, outer);
            self.vbr(id, 8);
            self.vbr(4, 4);
            self.align();
            let len_at = self.bit / 8;
            self.fixed(0, 32);
            let start = self.bit;
            body(self);
            self.fixed(0, 4);
            self.align();
            let words = ((self.bit - start) / 32) as u32;
            self.bytes[len_at..len_at + 4].copy_from_slice(&words.to_le_bytes());
        }
        fn unabbrev(&mut self, code: u64, ops: &[u64]) {
            self.fixed(3, 4);
            self.vbr(code, 6);
            self.vbr(ops.len() as u64, 6);
            for &o in ops {
                self.vbr(o, 6);
            }
        }
    }

    fn sample() -> Vec<u8> {
        let mut w = W::new();
        w.block(2, IDENTIFICATION_BLOCK, |w| {
            // DEFINE_ABBREV [code literal 1, array of char6]
            w.fixed(2, 4);
            w.vbr(3, 5);
            w.fixed(1, 1);
            w.vbr(1, 8);
            w.fixed(0, 1);
            w.fixed(3, 3);
            w.fixed(0, 1);
            w.fixed(4, 3);
            // the string, with abbreviation 4
            w.fixed(4, 4);
            let s = b"LLVM16.0.6";
            w.vbr(s.len() as u64, 6);
            for &c in s {
                let v = match c {
                    b'a'..=b'z' => c - b'a',
                    b'A'..=b'Z' => c - b'A' + 26,
                    b'0'..=b'9' => c - b'0' + 52,
                    b'.' => 62,
                    _ => 63,
                };
                w.fixed(u64::from(v), 6);
            }
        });
        w.block(2, MODULE_BLOCK, |w| {
            w.unabbrev(1, &[2]);
            // a nested block, skipped
            w.block(4, 17, |w| w.unabbrev(1, &[7]));
            let t: Vec<u64> = b"x86_64-pc-linux-gnu"
                .iter()
                .map(|&c| u64::from(c))
                .collect();
            w.unabbrev(MODULE_CODE_TRIPLE, &t);
            // defined `kern` (offset 0, 4), declared `decl` (4, 4)
            w.unabbrev(MODULE_CODE_FUNCTION, &[0, 4, 0, 0, 0, 0]);
            w.unabbrev(MODULE_CODE_FUNCTION, &[4, 4, 0, 0, 1, 0]);
        });
        w.block(2, STRTAB_BLOCK, |w| {
            // DEFINE_ABBREV [literal 1, blob]
            w.fixed(2, 4);
            w.vbr(2, 5);
            w.fixed(1, 1);
            w.vbr(1, 8);
            w.fixed(0, 1);
            w.fixed(5, 3);
            w.fixed(4, 4);
            w.vbr(8, 6);
            w.align();
            for &c in b"kerndecl" {
                w.fixed(u64::from(c), 8);
            }
            w.align();
        });
        w.bytes
    }

    #[test]
    fn reads_producer_triple_and_defined_functions() {
        let info = read(&sample()).unwrap();
        assert_eq!(info.producer.as_deref(), Some("LLVM16.0.6"));
        assert_eq!(info.version(), Some((16, 0, 6)));
        assert_eq!(info.triple.as_deref(), Some("x86_64-pc-linux-gnu"));
        assert_eq!(info.functions, ["kern"]);
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        let b = sample();
        for n in 0..b.len() {
            let _ = read(&b[..n]);
        }
        for i in 4..b.len() {
            for bit in 0..8 {
                let mut c = b.clone();
                c[i] ^= 1 << bit;
                let _ = read(&c);
            }
        }
        assert_eq!(read(b"BC"), Err(BitcodeError::Truncated));
        assert_eq!(read(b"\x7fELF"), Err(BitcodeError::NotBitcode));
    }

    #[test]
    fn wrapped_bitcode_is_read() {
        let inner = sample();
        let mut w = Vec::new();
        w.extend_from_slice(&[0xde, 0xc0, 0x17, 0x0b]);
        w.extend_from_slice(&0u32.to_le_bytes());
        w.extend_from_slice(&20u32.to_le_bytes());
        w.extend_from_slice(&(inner.len() as u32).to_le_bytes());
        w.extend_from_slice(&0u32.to_le_bytes());
        w.extend_from_slice(&inner);
        assert_eq!(
            read(&w).unwrap().triple.as_deref(),
            Some("x86_64-pc-linux-gnu")
        );
    }

    #[test]
    fn versions() {
        assert_eq!(parse_version("LLVM22.0.0git"), Some((22, 0, 0)));
        assert_eq!(parse_version("LLVM16"), Some((16, 0, 0)));
        assert_eq!(parse_version("APPLE_1_1500"), None);
    }
}
