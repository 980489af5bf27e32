//! Which GPUs an image can run on: the SM architecture of each piece of code
//! in it (a PTX module's `.target`, a cubin's ELF flags, each entry of a fat
//! binary), so `reprise inspect` can say it and a replay on a device that
//! cannot run the image can say why.
//!
//! ```
//! use reprise_cuda::targets::{targets, CodeKind};
//! let ptx = b".version 7.0\n.target sm_80\n.address_size 64\n";
//! let t = targets(ptx);
//! assert_eq!((t[0].code, t[0].sm), (CodeKind::Ptx, Some(80)));
//! assert_eq!(t[0].to_string(), "PTX sm_80 (ISA 7.0)");
//! ```

use std::fmt;

use reprise_core::image::{EM_CUDA, ImageKind, sniff};

use crate::cubin::fatbin_entry_list;

/// What kind of code a target is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeKind {
    /// PTX, compiled by the driver for the device (any SM at least the
    /// target's).
    Ptx,
    /// A cubin: machine code for one SM family.
    Cubin,
}

/// One piece of code in an image and the architecture it is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuTarget {
    /// PTX or machine code.
    pub code: CodeKind,
    /// The SM architecture (80 for sm_80), when the image says.
    pub sm: Option<u32>,
    /// PTX's ISA version (`.version`), for PTX.
    pub ptx_isa: Option<String>,
}

impl GpuTarget {
    /// Whether a device of compute capability `major.minor` can run this
    /// code: PTX targeting that SM or an older one; a cubin built for the
    /// same major version and an older or equal minor one.
    pub fn runs_on(&self, major: u32, minor: u32) -> bool {
        let Some(sm) = self.sm else { return true };
        let device = major * 10 + minor;
        match self.code {
            CodeKind::Ptx => sm <= device,
            CodeKind::Cubin => sm / 10 == major && sm <= device,
        }
    }
}

impl fmt::Display for GpuTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.code {
            CodeKind::Ptx => "PTX",
            CodeKind::Cubin => "cubin",
        })?;
        match self.sm {
            Some(sm) => write!(f, " sm_{sm}")?,
            None => f.write_str(" (architecture unknown)")?,
        }
        if let Some(isa) = &self.ptx_isa {
            write!(f, " (ISA {isa})")?;
        }
        Ok(())
    }
}

/// The code in `image` (PTX, a cubin or a fat binary) and what each piece
/// targets; empty for other images.
pub fn targets(image: &[u8]) -> Vec<GpuTarget> {
    match sniff(image) {
        ImageKind::Ptx => vec![ptx_target(image)],
        ImageKind::Elf {
            machine: EM_CUDA, ..
        } => vec![cubin_target(image)],
        ImageKind::Fatbin => fatbin_entry_list(image)
            .into_iter()
            .filter_map(|e| {
                let code = match e.kind {
                    1 => CodeKind::Ptx,
                    2 => CodeKind::Cubin,
                    _ => return None,
                };
                // An uncompressed PTX entry also says its ISA version.
                let ptx_isa = (code == CodeKind::Ptx && sniff(e.payload) == ImageKind::Ptx)
                    .then(|| ptx_target(e.payload).ptx_isa)
                    .flatten();
                Some(GpuTarget {
                    code,
                    sm: (e.arch > 0).then_some(e.arch),
                    ptx_isa,
                })
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// `.target sm_NN[a|f]` and `.version X.Y` of a PTX module.
fn ptx_target(ptx: &[u8]) -> GpuTarget {
    let text = ptx.split(|&b| b == 0).next().unwrap_or_default();
    let text = String::from_utf8_lossy(text);
    let directive = |name: &str| {
        text.lines()
            .map(str::trim)
            .find_map(|l| l.strip_prefix(name))
            .map(|rest| rest.trim().to_owned())
    };
    let sm = directive(".target").and_then(|t| {
        t.split([',', ' '])
            .find_map(|w| w.strip_prefix("sm_"))
            .and_then(|n| {
                n.trim_end_matches(|c: char| c.is_ascii_alphabetic())
                    .parse()
                    .ok()
            })
    });
    GpuTarget {
        code: CodeKind::Ptx,
        sm,
        ptx_isa: directive(".version"),
    }
}

/// The SM architecture in a cubin's ELF flags: the low byte before
/// Blackwell-era toolchains (ELF ABI version 8), the second byte since.
fn cubin_target(elf: &[u8]) -> GpuTarget {
    let flags = elf
        .get(0x30..0x34)
        .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")));
    let abi = elf.get(8).copied().unwrap_or(0);
    let sm = flags.map(|f| {
        if abi >= 8 || f >> 24 != 0 {
            (f >> 8) & 0xff
        } else {
            f & 0xff
        }
    });
    GpuTarget {
        code: CodeKind::Cubin,
        sm: sm.filter(|&s| s > 0),
        ptx_isa: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Vec<u8> {
        let path = format!("{}/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn fixtures_say_what_they_target() {
        let show = |name: &str| {
            targets(&fixture(name))
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
        };
        assert_eq!(show("saxpy.ptx"), ["PTX sm_80 (ISA 7.0)"]);
        assert_eq!(show("saxpy.sm_52.ptx"), ["PTX sm_52 (ISA 4.2)"]);
        assert_eq!(show("saxpy.sm_90.cubin"), ["cubin sm_90"]);
        let fat = show("saxpy.sm_90.fatbin");
        assert!(fat.contains(&"cubin sm_90".to_string()), "{fat:?}");
        assert!(fat.iter().any(|t| t.starts_with("PTX sm_")), "{fat:?}");
    }

    #[test]
    fn which_devices_run_what() {
        let ptx80 = &targets(&fixture("saxpy.ptx"))[0];
        assert!(ptx80.runs_on(9, 0) && ptx80.runs_on(8, 0));
        assert!(!ptx80.runs_on(7, 5));
        let cubin90 = &targets(&fixture("saxpy.sm_90.cubin"))[0];
        assert!(cubin90.runs_on(9, 0));
        assert!(!cubin90.runs_on(8, 6) && !cubin90.runs_on(10, 0));
    }

    #[test]
    fn flags_of_both_elf_abis() {
        let mut elf = vec![0u8; 0x40];
        elf[8] = 7;
        elf[0x30..0x34].copy_from_slice(&0x0050_0550u32.to_le_bytes());
        assert_eq!(cubin_target(&elf).sm, Some(80));
        elf[8] = 8;
        elf[0x30..0x34].copy_from_slice(&0x0600_5a04u32.to_le_bytes());
        assert_eq!(cubin_target(&elf).sm, Some(90));
        assert_eq!(ptx_target(b"no directives").sm, None);
        assert_eq!(ptx_target(b".target sm_90a\n").sm, Some(90));
        assert!(targets(b"not an image").is_empty());
    }
}
