//! The target a code object is built for: the processor and the xnack and
//! sramecc features, from the ELF header's `e_flags`, in LLVM's target-id
//! syntax (AMDGPUUsage.rst, "Target ID": `<processor>(:<feature>(+|-))*`,
//! the features in alphabetical order).

use core::fmt;

/// A target feature's setting in a code object (AMDGPUUsage.rst, "Target
/// Features"; LLVM's `ELF.h`, `EF_AMDGPU_FEATURE_XNACK_*_V4`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Feature {
    /// The processor has no such feature.
    Unsupported,
    /// The code runs with the feature on or off (not named in the
    /// target-id).
    Any,
    /// The code needs the feature off (`feature-`).
    Off,
    /// The code needs the feature on (`feature+`).
    On,
}

impl Feature {
    /// The v4+ two-bit encoding of `e_flags` (LLVM's `ELF.h`: for xnack
    /// `EF_AMDGPU_FEATURE_XNACK_V4 = 0x300`, with `UNSUPPORTED_V4 = 0x000`,
    /// `ANY_V4 = 0x100`, `OFF_V4 = 0x200`, `ON_V4 = 0x300`; sramecc the same
    /// two bits higher, mask `0xc00`), `bits` shifted down to 0..=3.
    fn from_v4_bits(bits: u32) -> Self {
        match bits & 3 {
            0 => Self::Unsupported,
            1 => Self::Any,
            2 => Self::Off,
            _ => Self::On,
        }
    }

    /// The suffix of the feature in a target-id: `+`, `-`, or none.
    fn suffix(self) -> Option<char> {
        match self {
            Self::On => Some('+'),
            Self::Off => Some('-'),
            Self::Any | Self::Unsupported => None,
        }
    }

    /// Whether code built with this setting runs on an agent with `agent`:
    /// a required on or off must be the agent's, anything else runs.
    fn runs_with(self, agent: Feature) -> bool {
        match self {
            Self::On | Self::Off => agent == self,
            Self::Any | Self::Unsupported => true,
        }
    }
}

/// The target of a code object: the processor and its two target features.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Target {
    /// The processor, as LLVM names it: `gfx90a`, `gfx1030`, `gfx9-generic`.
    pub processor: String,
    /// The xnack feature (page fault replay).
    pub xnack: Feature,
    /// The sramecc feature (SRAM ECC).
    pub sramecc: Feature,
}

/// `ELFABIVERSION_AMDGPU_HSA_V3` (LLVM's `ELF.h`): code object v3, whose
/// features are one bit each.
const ABI_VERSION_V3: u8 = 1;
/// `EF_AMDGPU_MACH` (LLVM's `ELF.h`): the processor field of `e_flags`.
const EF_AMDGPU_MACH: u32 = 0x0ff;
/// `EF_AMDGPU_FEATURE_XNACK_V3` (LLVM's `ELF.h`, "Only valid for
/// ELFOSABI_AMDGPU_HSA and ELFABIVERSION_AMDGPU_HSA_V3").
const EF_AMDGPU_FEATURE_XNACK_V3: u32 = 0x100;
/// `EF_AMDGPU_FEATURE_SRAMECC_V3` (LLVM's `ELF.h`, v3 only).
const EF_AMDGPU_FEATURE_SRAMECC_V3: u32 = 0x200;

impl Target {
    /// The target of `e_flags` in a code object of HSA ABI version
    /// `abi_version` (`EI_ABIVERSION`: 1 for v3, 2 for v4, 3 for v5, 4 for
    /// v6). Code object v3 has one bit per feature: set reads as
    /// [`Feature::On`], clear as [`Feature::Any`] (v3 cannot tell off from
    /// unsupported). v4 and later have two bits each.
    pub(super) fn from_e_flags(
        e_flags: u32,
        abi_version: u8,
    ) -> Result<Self, super::CodeObjectError> {
        let mach = e_flags & EF_AMDGPU_MACH;
        let processor = processor_name(mach)
            .ok_or(super::CodeObjectError::UnknownProcessor { mach })?
            .to_string();
        let (xnack, sramecc) = if abi_version == ABI_VERSION_V3 {
            let bit = |mask: u32| {
                if e_flags & mask != 0 {
                    Feature::On
                } else {
                    Feature::Any
                }
            };
            (
                bit(EF_AMDGPU_FEATURE_XNACK_V3),
                bit(EF_AMDGPU_FEATURE_SRAMECC_V3),
            )
        } else {
            (
                Feature::from_v4_bits(e_flags >> 8),
                Feature::from_v4_bits(e_flags >> 10),
            )
        };
        Ok(Self {
            processor,
            xnack,
            sramecc,
        })
    }

    /// Reads a target-id (`gfx90a:xnack+`) or an HSA ISA name, which is one
    /// after the triple and an empty environment
    /// (`amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`). A feature it does not
    /// name reads as [`Feature::Any`]; features other than xnack and sramecc
    /// are ignored. `None` when there is no processor or a feature has
    /// neither `+` nor `-`.
    pub fn parse(isa: &str) -> Option<Self> {
        let id = match isa.strip_prefix("amdgcn-") {
            // arch-vendor-os-environment-target-id; the processor may hold
            // dashes itself (gfx10-3-generic), so only four are split off.
            Some(_) => isa.splitn(5, '-').nth(4)?,
            None => isa,
        };
        let mut parts = id.split(':');
        let processor = parts.next().filter(|p| !p.is_empty())?;
        let mut target = Self {
            processor: processor.to_string(),
            xnack: Feature::Any,
            sramecc: Feature::Any,
        };
        for feature in parts {
            let (name, setting) = if let Some(name) = feature.strip_suffix('+') {
                (name, Feature::On)
            } else if let Some(name) = feature.strip_suffix('-') {
                (name, Feature::Off)
            } else {
                return None;
            };
            match name {
                "xnack" => target.xnack = setting,
                "sramecc" => target.sramecc = setting,
                _ => {}
            }
        }
        Some(target)
    }

    /// Whether this code object's code runs on an agent whose ISA the HSA
    /// runtime names `agent_isa` (`amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`,
    /// or a bare target-id): the processor must be the same, and a feature
    /// the code needs on or off must be on or off in the agent's name;
    /// [`Feature::Any`] and [`Feature::Unsupported`] run anywhere. Generic
    /// processors (`gfx9-generic`) match only themselves here.
    pub fn runs_on(&self, agent_isa: &str) -> bool {
        let Some(agent) = Self::parse(agent_isa) else {
            return false;
        };
        agent.processor == self.processor
            && self.xnack.runs_with(agent.xnack)
            && self.sramecc.runs_with(agent.sramecc)
    }

    /// Whether `other` (read with [`Target::parse`] from the metadata's
    /// `amdhsa.target`) says the same as this target from the ELF header:
    /// the same processor, and each feature named with the same setting or,
    /// when not named, not on or off here.
    pub(super) fn agrees_with(&self, other: &Target) -> bool {
        let same = |header: Feature, named: Feature| match header {
            Feature::On | Feature::Off => named == header,
            Feature::Any | Feature::Unsupported => named == Feature::Any,
        };
        self.processor == other.processor
            && same(self.xnack, other.xnack)
            && same(self.sramecc, other.sramecc)
    }
}

impl fmt::Display for Target {
    /// The target-id: `gfx90a`, `gfx90a:xnack+`, `gfx90a:sramecc-:xnack+`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.processor)?;
        // Alphabetical, as LLVM writes them.
        for (name, feature) in [("sramecc", self.sramecc), ("xnack", self.xnack)] {
            if let Some(suffix) = feature.suffix() {
                write!(f, ":{name}{suffix}")?;
            }
        }
        Ok(())
    }
}

/// The processor named by an `EF_AMDGPU_MACH` value, from LLVM's
/// `llvm/include/llvm/BinaryFormat/ELF.h` ("AMDGCN-based processors",
/// `EF_AMDGPU_MACH_AMDGCN_GFX600 = 0x020` to
/// `EF_AMDGPU_MACH_AMDGCN_GFX9_4_GENERIC = 0x05f`; the `RESERVED_*` values
/// and the R600 processors, which the HSA runtime does not run, are
/// unknown). gfx940 (0x040) and gfx941 (0x04b) are LLVM 19's, retired
/// later; gfx950 (0x04f), gfx1153 (0x058) and gfx9-4-generic (0x05f) came
/// after LLVM 19.
pub(super) fn processor_name(mach: u32) -> Option<&'static str> {
    Some(match mach {
        0x020 => "gfx600",
        0x021 => "gfx601",
        0x022 => "gfx700",
        0x023 => "gfx701",
        0x024 => "gfx702",
        0x025 => "gfx703",
        0x026 => "gfx704",
        0x028 => "gfx801",
        0x029 => "gfx802",
        0x02a => "gfx803",
        0x02b => "gfx810",
        0x02c => "gfx900",
        0x02d => "gfx902",
        0x02e => "gfx904",
        0x02f => "gfx906",
        0x030 => "gfx908",
        0x031 => "gfx909",
        0x032 => "gfx90c",
        0x033 => "gfx1010",
        0x034 => "gfx1011",
        0x035 => "gfx1012",
        0x036 => "gfx1030",
        0x037 => "gfx1031",
        0x038 => "gfx1032",
        0x039 => "gfx1033",
        0x03a => "gfx602",
        0x03b => "gfx705",
        0x03c => "gfx805",
        0x03d => "gfx1035",
        0x03e => "gfx1034",
        0x03f => "gfx90a",
        0x040 => "gfx940",
        0x041 => "gfx1100",
        0x042 => "gfx1013",
        0x043 => "gfx1150",
        0x044 => "gfx1103",
        0x045 => "gfx1036",
        0x046 => "gfx1101",
        0x047 => "gfx1102",
        0x048 => "gfx1200",
        0x04a => "gfx1151",
        0x04b => "gfx941",
        0x04c => "gfx942",
        0x04e => "gfx1201",
        0x04f => "gfx950",
        0x051 => "gfx9-generic",
        0x052 => "gfx10-1-generic",
        0x053 => "gfx10-3-generic",
        0x054 => "gfx11-generic",
        0x055 => "gfx1152",
        0x058 => "gfx1153",
        0x059 => "gfx12-generic",
        0x05f => "gfx9-4-generic",
        _ => return None,
    })
}
