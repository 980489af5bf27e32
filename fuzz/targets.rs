//! The fuzz targets' bodies, shared by the libFuzzer binaries
//! (`fuzz_targets/`) and the stable regression test
//! (`tests/fuzz_regressions.rs`), which runs them over every input kept in
//! `fuzz/corpus/` and `fuzz/regressions/`. Each takes any bytes and must
//! return without panicking; where a reader accepts its input, what it
//! returns must hold up (a descriptor read is written and read back the
//! same; valid globals encode and decode to themselves).

use reprise_core::globals::{self, Layout};
use reprise_core::record::{Generation, KernelRecord, MAX_JSON_LEN};

/// A target's body.
pub type Target = fn(&[u8]);

/// The targets, by name (the names of `fuzz_targets/*.rs` and of the
/// corpus packs).
pub const TARGETS: &[(&str, Target)] = &[
    ("descriptor", descriptor),
    ("globals", globals),
    ("image_kind", image_kind),
    ("host_elf", host_elf),
    ("cuda_image", cuda_image),
    ("offload", offload),
    ("amdgpu_code_object", amdgpu_code_object),
];

/// A descriptor of any generation: read; when it reads, written in each key
/// set the writer accepts it for, and what was written reads back and
/// writes again to the very same bytes (a descriptor may carry keys its key
/// set does not write, such as reprise's `Backend` in one whose
/// `RepriseFormat` was lost: those are dropped by the first write only).
pub fn descriptor(data: &[u8]) {
    let Ok(record) = KernelRecord::from_json(data) else {
        return;
    };
    let _ = record.num_teams() + record.num_threads();
    for i in 0..record.num_args() {
        let mut scratch = [0u8; 8];
        let _ = record.arg_bytes(i, &mut scratch);
    }
    let mut first = vec![0u8; MAX_JSON_LEN];
    let mut second = vec![0u8; MAX_JSON_LEN];
    for generation in [
        Generation::LlvmLegacy,
        Generation::LlvmCurrent,
        Generation::Reprise,
    ] {
        let Ok(n) = record.to_json(generation, &mut first) else {
            continue;
        };
        let back = KernelRecord::from_json(&first[..n]).expect("what the writer wrote reads back");
        assert_eq!(
            back.generation, generation,
            "written as one key set, read as another"
        );
        let m = back
            .to_json(generation, &mut second)
            .expect("what was read back writes again");
        assert_eq!(
            &first[..n],
            &second[..m],
            "a second round trip changed the descriptor"
        );
    }
}

/// A globals file in both layouts: decoded to the end; when valid,
/// re-encoded and decoded to the same globals.
pub fn globals(data: &[u8]) {
    for layout in [Layout::Seed, Layout::Current] {
        let Ok(decoder) = globals::decode(layout, data) else {
            continue;
        };
        let all: Result<Vec<_>, _> = decoder.collect();
        let Ok(all) = all else { continue };
        let items: Vec<(&str, &[u8])> = all.iter().map(|g| (g.name, g.bytes)).collect();
        let Ok(len) = globals::encoded_len(layout, items.iter().copied()) else {
            continue;
        };
        let mut out = vec![0u8; len];
        let n = globals::encode_into(layout, items.iter().copied(), &mut out)
            .expect("encoded_len said it fits");
        assert_eq!(n, len);
        let again: Vec<(&str, &[u8])> = globals::decode(layout, &out)
            .expect("what the encoder wrote decodes")
            .map(|g| {
                g.map(|g| (g.name, g.bytes))
                    .expect("what the encoder wrote is valid")
            })
            .collect();
        let nonempty: Vec<_> = items.iter().copied().filter(|g| !g.1.is_empty()).collect();
        assert_eq!(again, nonempty, "a round trip changed the globals");
    }
}

/// Telling an image's kind from its first bytes, and its executor.
pub fn image_kind(data: &[u8]) {
    let kind = reprise_core::image::sniff(data);
    let _ = kind.to_string();
    if let Err(e) = kind.backend() {
        let _ = e.to_string();
    }
}

/// The host executor's ELF reader: symbols and code segments, never loaded.
pub fn host_elf(data: &[u8]) {
    if let Ok(s) = reprise_host::elf::symbols(data) {
        let _ = (s.functions.len(), s.data.len());
    }
    let _ = reprise_host::elf::executable_segments(data);
    let _ = reprise_host::elf::dynamic_symbol_names(data);
}

/// The CUDA executor's image readers: cubin and fat binary globals, fat
/// binary entries, PTX globals and the GPU targets an image holds.
pub fn cuda_image(data: &[u8]) {
    let _ = reprise_cuda::cubin::elf_globals(data);
    let _ = reprise_cuda::cubin::fatbin_globals(data);
    let _ = reprise_cuda::cubin::fatbin_globals_unreadable(data);
    let _ = reprise_cuda::cubin::fatbin_entry_list(data);
    let _ = reprise_cuda::cubin::elf_kernels(data);
    let text = String::from_utf8_lossy(data);
    let _ = reprise_cuda::ptx::globals(&text);
    let _ = reprise_cuda::ptx::entries(&text);
    for t in reprise_cuda::targets::targets(data) {
        let _ = t.to_string();
    }
}

/// The offload binary reader (the images clang embeds in an application):
/// every entry of the bytes read as a `.llvm.offloading` section, and of
/// that section when the bytes are an ELF file, with each entry's strings
/// and an image inside its input; and what `write_one` writes (fields cut
/// from the input) reads back as the one entry written.
pub fn offload(data: &[u8]) {
    use reprise_core::offload::{self, ImageFormat};
    let walk = |section: &[u8]| {
        for entry in offload::entries(section) {
            let Ok(entry) = entry else { break };
            let _ = (entry.triple(), entry.arch(), entry.strings().count());
            assert!(
                entry.offset + entry.image.len() <= section.len(),
                "an image outside its section"
            );
        }
    };
    walk(data);
    if let Ok(Some(section)) = offload::elf_section(data, ".llvm.offloading") {
        walk(section);
    }
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let cut = usize::from(first).min(rest.len());
    let triple = String::from_utf8_lossy(&rest[..cut]).replace('\0', "");
    let image = &rest[cut..];
    let format = ImageFormat::from_code(u16::from(first % 8));
    let written = offload::write_one(format, &triple, "sm_90", image);
    let read: Vec<_> = offload::entries(&written)
        .collect::<Result<_, _>>()
        .expect("what write_one wrote reads back");
    assert_eq!(read.len(), 1, "one entry written");
    assert_eq!(read[0].image, image, "the image changed");
    assert_eq!(
        read[0].triple(),
        Some(triple.as_str()),
        "the triple changed"
    );
    assert_eq!(read[0].arch(), Some("sm_90"), "the arch changed");
}

/// The AMDGPU code object reader: the bytes as a whole code object, and as
/// the MessagePack metadata alone (which mutated ELF files rarely reach
/// intact). What reads must hold up: its target prints as a target-id that
/// reads back and runs on an agent of that very ISA name, each kernel is
/// found by its name and has its arguments split into explicit and hidden
/// ones, and the variables are each named once and are no kernel
/// descriptors.
pub fn amdgpu_code_object(data: &[u8]) {
    use reprise_amdgpu::code_object::{self, Target};
    match code_object::parse(data) {
        Ok(object) => {
            let target = object.target();
            let id = target.to_string();
            let back = Target::parse(&id).expect("a printed target-id reads back");
            assert_eq!(back.processor, target.processor, "the processor changed");
            assert!(
                target.runs_on(&format!("amdgcn-amd-amdhsa--{id}")),
                "{id} does not run on its own ISA"
            );
            let _ = (object.code_object_version(), object.metadata_version());
            for kernel in object.kernels() {
                let found = object.kernel(&kernel.name).expect("a kernel found by name");
                assert_eq!(found.name, kernel.name);
                assert_eq!(
                    kernel.explicit_args().count() + kernel.hidden_args().count(),
                    kernel.args.len(),
                    "an argument neither explicit nor hidden"
                );
            }
            let mut names = std::collections::HashSet::new();
            for v in object.variables() {
                assert!(
                    !v.name.ends_with(".kd"),
                    "a kernel descriptor as a variable"
                );
                assert!(names.insert(v.name.as_str()), "{} listed twice", v.name);
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
    match code_object::parse_metadata(data) {
        Ok(metadata) => {
            assert!(
                metadata.kernels.iter().all(|k| k.descriptor.is_none()),
                "a descriptor without an ELF file"
            );
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
}
