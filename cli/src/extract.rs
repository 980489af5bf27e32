//! `reprise extract`: the device images of an application binary.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use reprise::offload::images_in;

use crate::error::Result;
use crate::ui::human_bytes;

/// List the device images an application binary holds, and write them
/// out.
///
/// LLVM's offloading compilers (`clang -fopenmp -fopenmp-targets=...`) put
/// the device images in the binary's `.llvm.offloading` section, one entry
/// per target triple and architecture: x86-64 shared objects for the host,
/// cubins or PTX for NVIDIA GPUs, code objects for AMD GPUs. For each
/// entry this prints its triple, architecture, kind, size and the kernels
/// its symbols define (for an LLVM bitcode entry, what
/// `-fopenmp-target-jit` embeds, the functions the module defines), and
/// writes it to DIR as `APP.TRIPLE[.ARCH].EXT`
/// (characters outside `[A-Za-z0-9_.-]` written as `_`).
/// (`reprise replay --image APP` and `reprise inspect --image APP` take the
/// entry for a capture's kernel without extracting anything.)
#[derive(Args, Debug)]
pub struct ExtractArgs {
    /// The application binary (or an LLVM offload binary file).
    pub app: PathBuf,
    /// Where to write the images.
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// Only list them.
    #[arg(long)]
    pub list: bool,
}

/// The kernels of an LLVM bitcode entry (a JIT image, `-fopenmp-target-jit`):
/// the OpenMP target regions' entries among the functions it defines, else
/// every function it defines; `None` when it is not readable bitcode.
fn bitcode_entries(bytes: &[u8]) -> Option<Vec<String>> {
    use reprise::core::image::{ImageKind, bitcode, sniff};
    if sniff(bytes) != ImageKind::Bitcode {
        return None;
    }
    let functions = bitcode::read(bytes).ok()?.functions;
    let entries: Vec<String> = functions
        .iter()
        .filter(|f| f.starts_with("__omp_offloading_"))
        .cloned()
        .collect();
    Some(if entries.is_empty() {
        functions
    } else {
        entries
    })
}

/// What an x86-64 ELF image is, for people: an executable (`ET_EXEC`), a
/// PIE executable (`ET_DYN` with an interpreter, `PT_INTERP`, or the
/// `DF_1_PIE` flag) or a shared object (`ET_DYN` otherwise); `None` for any
/// other file, which the image kind describes.
fn x86_elf_kind(bytes: &[u8]) -> Option<&'static str> {
    use object::elf;
    use object::read::elf::{Dyn, FileHeader, ProgramHeader};
    let header = elf::FileHeader64::<object::Endianness>::parse(bytes).ok()?;
    let endian = header.endian().ok()?;
    if header.e_machine(endian) != elf::EM_X86_64 {
        return None;
    }
    match header.e_type(endian) {
        elf::ET_EXEC => return Some("ELF x86-64 executable"),
        elf::ET_DYN => {}
        _ => return None,
    }
    let headers = header.program_headers(endian, bytes).ok()?;
    let interpreter = headers.iter().any(|p| p.p_type(endian) == elf::PT_INTERP);
    let pie_flag = headers.iter().any(|p| {
        p.dynamic(endian, bytes).ok().flatten().is_some_and(|d| {
            d.iter().any(|d| {
                d.d_tag(endian) == elf::DT_FLAGS_1 && d.d_val(endian) & elf::DF_1_PIE.0 != 0
            })
        })
    });
    Some(if interpreter || pie_flag {
        "ELF x86-64 PIE executable"
    } else {
        "ELF x86-64 shared object"
    })
}

pub fn run(a: ExtractArgs) -> Result<ExitCode> {
    let images = images_in(&a.app)?;
    let app = a
        .app
        .file_name()
        .map_or_else(|| "image".into(), |n| n.to_string_lossy().into_owned());
    if !a.list {
        std::fs::create_dir_all(&a.dir).map_err(|e| reprise::Error::io(&a.dir, "create", e))?;
    }
    for i in &images {
        let arch = if i.arch.is_empty() {
            "-"
        } else {
            i.arch.as_str()
        };
        out!(
            "#{:<2} {:<24} {:<8} {:<28} {:>10}  kernels: {}",
            i.index,
            i.triple,
            arch,
            x86_elf_kind(&i.bytes).map_or_else(|| i.kind.to_string(), str::to_string),
            human_bytes(i.bytes.len() as u64),
            match (&i.kernels[..], bitcode_entries(&i.bytes)) {
                ([], Some(entries)) if !entries.is_empty() => entries.join(", "),
                ([], _) => "(none found)".to_string(),
                (k, _) => k.join(", "),
            }
        );
        if !a.list {
            let shared = images
                .iter()
                .filter(|o| o.triple == i.triple && o.arch == i.arch)
                .count()
                > 1;
            // Triples and architectures come from the file: no separator,
            // control character or leading dot reaches the name, and no
            // link at it is written through.
            let name = reprise::store::safe_file_name(&i.file_name(&app, shared));
            let path = a.dir.join(if name.is_empty() {
                "image".into()
            } else {
                name
            });
            reprise::store::write_atomically(&path, &i.bytes, false)?;
            out!("    written to {}", path.display());
        }
    }
    out!("{} device image(s) in {}", images.len(), a.app.display());
    Ok(ExitCode::SUCCESS)
}
