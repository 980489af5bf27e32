//! What an entry holds ([`ImageFormat`]) and who made it ([`Producer`]), in
//! LLVM's numbering.

use core::fmt;

/// What kind of image an entry holds (LLVM's `ImageKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    /// An object or shared object (an ELF file: x86-64, cubin, AMD GPU code
    /// object).
    Object,
    /// LLVM bitcode.
    Bitcode,
    /// A CUDA cubin.
    Cubin,
    /// A CUDA fat binary.
    Fatbinary,
    /// PTX text.
    Ptx,
    /// A value this reader does not know.
    Other(u16),
}

impl ImageFormat {
    /// From LLVM's numbering.
    pub const fn from_code(code: u16) -> Self {
        match code {
            1 => ImageFormat::Object,
            2 => ImageFormat::Bitcode,
            3 => ImageFormat::Cubin,
            4 => ImageFormat::Fatbinary,
            5 => ImageFormat::Ptx,
            other => ImageFormat::Other(other),
        }
    }

    /// LLVM's numbering.
    pub const fn code(self) -> u16 {
        match self {
            ImageFormat::Object => 1,
            ImageFormat::Bitcode => 2,
            ImageFormat::Cubin => 3,
            ImageFormat::Fatbinary => 4,
            ImageFormat::Ptx => 5,
            ImageFormat::Other(c) => c,
        }
    }
}

impl fmt::Display for ImageFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImageFormat::Object => f.write_str("object"),
            ImageFormat::Bitcode => f.write_str("bitcode"),
            ImageFormat::Cubin => f.write_str("cubin"),
            ImageFormat::Fatbinary => f.write_str("fatbinary"),
            ImageFormat::Ptx => f.write_str("ptx"),
            ImageFormat::Other(c) => write!(f, "image kind {c}"),
        }
    }
}

/// Who made an entry (LLVM's `OffloadKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Producer {
    /// OpenMP offloading.
    OpenMp,
    /// CUDA.
    Cuda,
    /// HIP.
    Hip,
    /// A value this reader does not know.
    Other(u16),
}

impl Producer {
    pub(super) const fn from_code(code: u16) -> Self {
        match code {
            1 => Producer::OpenMp,
            2 => Producer::Cuda,
            4 => Producer::Hip,
            other => Producer::Other(other),
        }
    }
}

impl fmt::Display for Producer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Producer::OpenMp => f.write_str("openmp"),
            Producer::Cuda => f.write_str("cuda"),
            Producer::Hip => f.write_str("hip"),
            Producer::Other(c) => write!(f, "offload kind {c}"),
        }
    }
}
