//! The fuzz targets' bodies, shared by the libFuzzer binaries
//! (`fuzz_targets/`) and the stable regression test
//! (`tests/fuzz_regressions.rs`), which runs them over every input kept in
//! `fuzz/corpus/` and `fuzz/regressions/`. Each takes any bytes and must
//! return without panicking; where a reader accepts its input, what it
//! returns must hold up (a descriptor read is written and read back the
//! same; valid globals encode and decode to themselves).

use reprise_core::globals::{self, Layout};
use reprise_core::record::{Generation, KernelRecord, MAX_JSON_LEN};

/// The protocol of `reprise check`'s workers, as the suite reads it.
#[path = "../cli/src/check/protocol.rs"]
mod protocol;

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
    ("chunk_manifest", chunk_manifest),
    ("check_protocol", check_protocol),
];

/// A descriptor of any generation: read; when it reads, written in each key
/// set the writer accepts it for, and what was written reads back and
/// writes again to the very same bytes (a descriptor may carry keys its key
/// set does not write, such as reprise's `Backend` in one whose
/// `RepriseFormat` was lost: those are dropped by the first write only).
pub fn descriptor(data: &[u8]) {
    read_back(data);
    descriptor_numbers(data);
}

/// [`descriptor`]'s check of one document: read; when it reads, written in
/// each key set and read back to the very same bytes.
fn read_back(data: &[u8]) {
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

/// Descriptors whose every integer is `1` but one: the input, as a JSON
/// number token (its bytes mapped onto digits, signs, `.`, `e`, `E`, so
/// `3.0`, `1e3`, `-0`, `+1` and numbers past `u64` all come up), put in the
/// place the first byte picks. Each document is read (and, when it reads,
/// written and read back, as [`descriptor`] does); one that reads must have
/// had a plain integer there: digits, after a `-` only in the signed
/// `ArgPtrs` and `ArgOffsets` (LLVM's `intptr_t`s) or before zeros.
fn descriptor_numbers(data: &[u8]) {
    const ALPHABET: &[u8] = b"0123456789-+.eE0123456789";
    /// The places, the signed ones first.
    const SIGNED: usize = 2;
    const PLACES: &[&str] = &[
        r#"{"Name":"k","NumArgs":1,"ArgPtrs":[#],"ArgOffsets":[0],"NumTeams":1,"NumThreads":1,"SharedMemorySize":0,"LoopTripCount":0,"VAllocAddr":4096,"VAllocSize":65536}"#,
        r#"{"Name":"k","NumArgs":1,"ArgPtrs":[4096],"ArgOffsets":[#],"NumTeams":1,"NumThreads":1,"SharedMemorySize":0,"LoopTripCount":0,"VAllocAddr":4096,"VAllocSize":65536}"#,
        r#"{"Name":"k","NumArgs":#,"ArgPtrs":[4096],"ArgOffsets":[0],"NumTeams":1,"NumThreads":1,"SharedMemorySize":0,"LoopTripCount":0,"VAllocAddr":4096,"VAllocSize":65536}"#,
        r#"{"Name":"k","NumArgs":1,"ArgPtrs":[4096],"ArgOffsets":[0],"NumTeams":#,"NumThreads":1,"SharedMemorySize":0,"LoopTripCount":0,"VAllocAddr":4096,"VAllocSize":65536}"#,
        r#"{"Name":"k","NumArgs":1,"ArgPtrs":[4096],"ArgOffsets":[0],"NumTeams":1,"NumThreads":#,"SharedMemorySize":0,"LoopTripCount":0,"VAllocAddr":4096,"VAllocSize":65536}"#,
        r#"{"Name":"k","NumArgs":1,"ArgPtrs":[4096],"ArgOffsets":[0],"NumTeams":1,"NumThreads":1,"SharedMemorySize":#,"LoopTripCount":0,"VAllocAddr":4096,"VAllocSize":65536}"#,
        r#"{"Name":"k","NumArgs":1,"ArgPtrs":[4096],"ArgOffsets":[0],"NumTeams":1,"NumThreads":1,"SharedMemorySize":0,"LoopTripCount":#,"VAllocAddr":4096,"VAllocSize":65536}"#,
        r#"{"Name":"k","NumArgs":1,"ArgPtrs":[4096],"ArgOffsets":[0],"NumTeams":1,"NumThreads":1,"SharedMemorySize":0,"LoopTripCount":0,"VAllocAddr":#,"VAllocSize":65536}"#,
        r#"{"Name":"k","NumArgs":1,"ArgPtrs":[4096],"ArgOffsets":[0],"NumTeams":1,"NumThreads":1,"SharedMemorySize":0,"LoopTripCount":0,"VAllocAddr":4096,"VAllocSize":#}"#,
        r#"{"Name":"k","NumArgs":1,"ArgPtrs":[4096],"ArgOffsets":[0],"NumTeams":1,"NumThreads":1,"Grid":[#,1,1],"Block":[1,1,1],"SharedMemorySize":0,"LoopTripCount":0,"VAllocAddr":4096,"VAllocSize":65536,"RepriseFormat":1}"#,
        r#"{"Name":"k","NumArgs":1,"ArgPtrs":[4096],"ArgOffsets":[0],"NumTeams":1,"NumThreads":1,"SharedMemorySize":0,"LoopTripCount":0,"VAllocAddr":4096,"VAllocSize":65536,"RepriseFormat":1,"LaunchSeq":#}"#,
        r#"{"Name":"k","NumArgs":1,"ArgPtrs":[4096],"ArgOffsets":[0],"ArgSizes":[#],"NumTeams":1,"NumThreads":1,"SharedMemorySize":0,"LoopTripCount":0,"VAllocAddr":4096,"VAllocSize":65536,"RepriseFormat":1}"#,
        r#"{"Name":"k","NumArgs":1,"ArgPtrs":[4096],"ArgOffsets":[0],"NumTeamsClause":#,"NumTeams":1,"NumThreads":1,"SharedMemorySize":0,"LoopTripCount":0,"VAllocAddr":4096,"VAllocSize":65536}"#,
    ];
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let token: String = rest
        .iter()
        .take(48)
        .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]))
        .collect();
    if token.is_empty() {
        return;
    }
    let place = usize::from(first) % PLACES.len();
    let doc = PLACES[place].replace('#', &token);
    read_back(doc.as_bytes());
    if KernelRecord::from_json(doc.as_bytes()).is_ok() {
        let digits = token.strip_prefix('-').unwrap_or(&token);
        assert!(
            !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()),
            "{token:?} read as an integer"
        );
        assert!(
            place < SIGNED || !token.starts_with('-') || digits.bytes().all(|b| b == b'0'),
            "{token:?}, a negative number, read as an unsigned integer"
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
    offload_sharing(data);
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

/// Entries sharing one image: a binary of up to 1,100 entries (how many
/// from the first two bytes) whose images are all the input and whose
/// strings are one table. Read to [`offload::MAX_ENTRIES`] and no further,
/// an error after that, each entry's image the input.
///
/// [`offload::MAX_ENTRIES`]: reprise_core::offload::MAX_ENTRIES
fn offload_sharing(data: &[u8]) {
    use reprise_core::offload::{self, OffloadError};
    let [a, b, ..] = *data else { return };
    let count = usize::from(u16::from_le_bytes([a, b])) % 1100;
    let strings_at = 32 + count * 40;
    let text_at = strings_at + 16;
    let image_at = (text_at + 16).next_multiple_of(8);
    let size = image_at + data.len();
    let mut bin = Vec::with_capacity(size);
    bin.extend_from_slice(&offload::MAGIC);
    bin.extend_from_slice(&1u32.to_le_bytes());
    for v in [size, 32, count * 40] {
        bin.extend_from_slice(&(v as u64).to_le_bytes());
    }
    for _ in 0..count {
        bin.extend_from_slice(&[1, 0, 1, 0, 0, 0, 0, 0]);
        for v in [strings_at, 1, image_at, data.len()] {
            bin.extend_from_slice(&(v as u64).to_le_bytes());
        }
    }
    bin.extend_from_slice(&(text_at as u64).to_le_bytes());
    bin.extend_from_slice(&(text_at as u64 + 7).to_le_bytes());
    bin.extend_from_slice(b"triple\0x86_64\0");
    bin.resize(image_at, 0);
    bin.extend_from_slice(data);
    let mut read = 0;
    for entry in offload::entries(&bin) {
        match entry {
            Ok(e) => {
                assert_eq!(e.image, data, "an entry's image is not the one shared");
                assert_eq!(e.triple(), Some("x86_64"));
                read += 1;
            }
            Err(e) => {
                assert!(
                    matches!(
                        e,
                        OffloadError::TooMany {
                            what: "entries",
                            ..
                        }
                    ),
                    "{e:?} after {read} of {count} entries"
                );
                break;
            }
        }
    }
    assert_eq!(read, count.min(offload::MAX_ENTRIES), "entries read");
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
            // Bounded by the input: at most a symbol per 24 bytes.
            assert!(object.variables().len() <= data.len() / 24);
            // Section headers repeated (up to 8 times, the count from the
            // last byte) name the same bytes again: nothing changes.
            let copies = 1 + usize::from(data.last().copied().unwrap_or(0) % 8);
            if let Some(repeated) = repeated_section_headers(data, copies) {
                assert_eq!(
                    code_object::parse(&repeated).as_ref(),
                    Ok(&object),
                    "repeating the section headers changed what was read"
                );
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

/// `data` (a 64-bit ELF file) with its section header table copied to its
/// end `1 + copies` times over and `e_shoff` and `e_shnum` saying so; `None`
/// when it has no whole table of 64-byte headers, or too many.
fn repeated_section_headers(data: &[u8], copies: usize) -> Option<Vec<u8>> {
    let shoff = usize::try_from(u64::from_le_bytes(data.get(40..48)?.try_into().ok()?)).ok()?;
    let shentsize = u16::from_le_bytes(data.get(58..60)?.try_into().ok()?);
    let shnum = usize::from(u16::from_le_bytes(data.get(60..62)?.try_into().ok()?));
    if shoff == 0 || shnum == 0 || shentsize != 64 {
        return None;
    }
    let table = data.get(shoff..shoff.checked_add(shnum * 64)?)?;
    let total = u16::try_from(shnum * (1 + copies))
        .ok()
        .filter(|&n| n < 0xff00)?;
    let mut out = data.to_vec();
    out.resize(out.len().next_multiple_of(8), 0);
    let new_shoff = out.len() as u64;
    for _ in 0..=copies {
        out.extend_from_slice(table);
    }
    out[40..48].copy_from_slice(&new_shoff.to_le_bytes());
    out[60..62].copy_from_slice(&total.to_le_bytes());
    Some(out)
}

/// The chunk store's manifest reader (`reprise_capture::chunks::Manifest`):
/// the input as a manifest; the input sealed with a right checksum (so the
/// checks behind the checksum are reached); and the input as the entries
/// of a manifest whose header says as many as it holds, with its total
/// length and chunk size from the input's first bytes. What reads must
/// encode to the very same bytes, and add up: its chunks hold its length,
/// each at most a chunk.
pub fn chunk_manifest(data: &[u8]) {
    use reprise_capture::chunks::{ChunkHash, Manifest};
    let sealed = |mut body: Vec<u8>| {
        let sum = ChunkHash::of(&body);
        body.extend_from_slice(&sum.0);
        body
    };
    let read = |bytes: &[u8]| match Manifest::decode(bytes) {
        Ok(m) => {
            assert_eq!(m.encode(), bytes, "a manifest read encodes to other bytes");
            let sum: u64 = m.chunks().iter().map(|c| u64::from(c.len)).sum();
            assert_eq!(sum, m.len(), "the chunks do not hold the manifest's length");
            assert!(
                m.chunks()
                    .iter()
                    .all(|c| c.len >= 1 && c.len <= m.chunk_size()),
                "a chunk longer than the chunk size, or empty"
            );
            assert_eq!(Manifest::decode(&m.encode()).as_ref(), Ok(&m));
        }
        Err(e) => {
            let _ = e.to_string();
        }
    };
    read(data);
    read(&sealed(data.to_vec()));
    let Some((head, entries)) = data.split_at_checked(12) else {
        return;
    };
    let total = u64::from_le_bytes(head[..8].try_into().unwrap());
    // Chunk sizes near the bounds, and totals near what the entries hold.
    let chunk_size = u32::from_le_bytes(head[8..12].try_into().unwrap()) % (80 << 20);
    let count = entries.len() / 36;
    let total = if total & 1 == 0 {
        (count as u64)
            .saturating_mul(u64::from(chunk_size))
            .saturating_sub(total >> 40)
    } else {
        total
    };
    let mut body = b"RPCHUNKS".to_vec();
    body.extend_from_slice(&1u32.to_le_bytes());
    body.extend_from_slice(&total.to_le_bytes());
    body.extend_from_slice(&chunk_size.to_le_bytes());
    body.extend_from_slice(&(count as u32).to_le_bytes());
    body.extend_from_slice(&entries[..count * 36]);
    read(&sealed(body));
}

/// What a `reprise check` worker printed for one capture (its stdout, cut
/// into lines; the capture's code may print anything there), read as the
/// suite reads it: a result is taken only from exactly one well-formed
/// marked line, what is taken is what was printed, and a request written
/// reads back the same.
pub fn check_protocol(data: &[u8]) {
    use protocol::{Lines, MARK, NoResult, Report, Request};
    let mut lines = Lines::default();
    let mut marked = 0;
    let mut last = None;
    for line in data.split(|&b| b == b'\n') {
        if lines.add(line) {
            marked += 1;
            let text = String::from_utf8_lossy(line);
            last = text
                .trim_end()
                .strip_prefix(MARK)
                .and_then(|j| serde_json::from_str::<Report>(j).ok());
        }
    }
    assert_eq!(lines.marked(), marked);
    match lines.one(true) {
        Ok(r) => {
            assert_eq!(marked, 1, "a result taken from {marked} marked lines");
            assert_eq!(Some(&r), last.as_ref());
            // What the worker would print for it reads back the same.
            let mut again = Lines::default();
            for line in r.line().split('\n') {
                again.add(line.as_bytes());
            }
            assert_eq!(again.one(true).as_ref(), Ok(&r));
        }
        Err(NoResult::None) => assert_eq!(marked, 0),
        Err(NoResult::Several(n)) => assert!(n > 1 && n == marked),
        Err(NoResult::Malformed) => assert!(marked == 1 && last.is_none()),
        Err(NoResult::Unclean) => unreachable!("the worker ended cleanly"),
    }
    // Any bytes as a request's paths survive the line they travel on.
    let (a, b) = data.split_at(data.len() / 2);
    let req = Request {
        capture: a.to_vec(),
        output: b.to_vec(),
    };
    let line = serde_json::to_string(&req).expect("a request serializes");
    assert!(!line.contains('\n'));
    assert_eq!(serde_json::from_str::<Request>(&line).ok(), Some(req));
}
