//! The code object reader on real compiler output: the HSA code objects in
//! `fixtures/`, built by clang from `fixtures/saxpy_mixed.hip` (and the
//! chunk-hashing kernel from `fixtures/chunk_hash.hip`)
//! (`scripts/gen-amdgpu-fixtures.sh`), and the script itself, which must
//! rebuild them byte for byte where clang-19 is installed.

use std::path::{Path, PathBuf};
use std::process::Command;

use reprise_amdgpu::code_object::{self, CodeObject, Feature, KernelMeta};

/// The fixtures directory.
fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// The code objects the script builds.
const OBJECTS: [&str; 4] = [
    "saxpy_mixed.gfx90a.hsaco",
    "saxpy_mixed.gfx90a.v4.hsaco",
    "saxpy_mixed.gfx1030.hsaco",
    "saxpy_mixed.gfx90a_sramecc-_xnack+.hsaco",
];

/// The chunk-hashing kernel's code object, which the script builds too.
const CHUNK_HASH: &str = "chunk_hash.gfx90a.hsaco";

/// The fixture `name`, parsed.
fn object(name: &str) -> CodeObject {
    let bytes = std::fs::read(fixtures().join(name)).unwrap();
    code_object::parse(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// `(offset, size, value_kind)` of each explicit argument.
fn explicit(kernel: &KernelMeta) -> Vec<(u32, u32, &str)> {
    kernel
        .explicit_args()
        .map(|a| (a.offset, a.size, a.value_kind.as_str()))
        .collect()
}

#[test]
fn gfx90a_v5_target_and_version() {
    let co = object("saxpy_mixed.gfx90a.hsaco");
    let target = co.target();
    assert_eq!(target.processor, "gfx90a");
    assert_eq!(target.xnack, Feature::Any);
    assert_eq!(target.sramecc, Feature::Any);
    assert_eq!(target.to_string(), "gfx90a");
    assert_eq!(co.code_object_version(), Some(5));
    assert_eq!(co.metadata_version(), Some([1, 2]));
    assert_eq!(co.metadata_target(), Some("amdgcn-amd-amdhsa--gfx90a"));
}

#[test]
fn gfx90a_v5_kernels_and_kernarg_layout() {
    let co = object("saxpy_mixed.gfx90a.hsaco");
    let names: Vec<_> = co.kernels().iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["saxpy", "mixed"]);

    let saxpy = co.kernel("saxpy").unwrap();
    assert_eq!(saxpy.symbol, "saxpy.kd");
    assert_eq!(
        explicit(saxpy),
        [
            (0, 4, "by_value"),
            (8, 8, "global_buffer"),
            (16, 8, "global_buffer"),
            (24, 4, "by_value"),
        ]
    );
    let mixed = co.kernel("mixed").unwrap();
    assert_eq!(mixed.symbol, "mixed.kd");
    assert_eq!(
        explicit(mixed),
        [
            (0, 4, "by_value"),
            (4, 4, "by_value"),
            (8, 16, "by_value"),
            (24, 8, "global_buffer"),
        ]
    );
    assert!(
        co.kernel("saxpy.kd").is_none(),
        "kernels go by name, not symbol"
    );

    for k in co.kernels() {
        // v5's implicit arguments follow the explicit ones.
        let count = k.hidden_arg("hidden_block_count_x").unwrap();
        assert_eq!((count.offset, count.size), (32, 4));
        let group = k.hidden_arg("hidden_group_size_x").unwrap();
        assert_eq!((group.offset, group.size), (44, 2));
        assert!(k.hidden_args().all(|a| a.offset >= 32));
        assert_eq!(k.kernarg_segment_size, 288);
        assert_eq!(k.kernarg_segment_align, 8);
        assert_eq!(k.group_segment_fixed_size, 0);
        assert_eq!(k.private_segment_fixed_size, 0);
        let kd = k.descriptor.expect("the descriptor symbol is in the file");
        assert_eq!(kd.kernarg_size, k.kernarg_segment_size);
        assert_eq!(kd.group_segment_fixed_size, k.group_segment_fixed_size);
        assert_eq!(kd.private_segment_fixed_size, k.private_segment_fixed_size);
        assert_eq!(kd.value % 64, 0, "descriptors are 64-byte aligned");
        assert!(
            k.args.iter().all(|a| a.name.is_none()),
            "HIP names no arguments"
        );
    }
}

#[test]
fn variables_with_their_sizes() {
    for name in OBJECTS {
        let co = object(name);
        for (var, size) in [("bias", 4), ("launches", 4), ("table", 64)] {
            let v = co
                .variable(var)
                .unwrap_or_else(|| panic!("{name}: no {var} in {:?}", co.variables()));
            assert_eq!(v.size, size, "{name}: {var}");
            assert_ne!(v.value, 0, "{name}: {var}");
        }
        assert!(
            co.variables().iter().all(|v| !v.name.ends_with(".kd")),
            "{name}: kernel descriptors are no variables"
        );
        let mut names: Vec<_> = co.variables().iter().map(|v| &v.name).collect();
        let all = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all, "{name}: .dynsym and .symtab listed once");
    }
}

#[test]
fn the_chunk_hashing_kernel_takes_three_pointers_and_a_chunk_size() {
    let co = object(CHUNK_HASH);
    let k = co
        .kernel("reprise_chunk_hashes")
        .expect("reprise_chunk_hashes");
    assert_eq!(
        explicit(k),
        [
            (0, 8, "global_buffer"),
            (8, 8, "by_value"),
            (16, 8, "global_buffer"),
            (24, 4, "by_value"),
        ]
    );
    // No globals of its own (clang's compilation-unit id aside).
    assert!(
        co.variables()
            .iter()
            .all(|v| v.name.starts_with("__hip_cuid")),
        "{:?}",
        co.variables()
    );
}

#[test]
fn gfx90a_v4_has_the_same_explicit_layout_and_no_block_count() {
    let co = object("saxpy_mixed.gfx90a.v4.hsaco");
    assert_eq!(co.code_object_version(), Some(4));
    assert_eq!(co.metadata_version(), Some([1, 1]));
    assert_eq!(co.target().to_string(), "gfx90a");
    let v5 = object("saxpy_mixed.gfx90a.hsaco");
    for k in co.kernels() {
        assert_eq!(explicit(k), explicit(v5.kernel(&k.name).unwrap()));
        assert!(k.hidden_arg("hidden_block_count_x").is_none());
        let kd = k.descriptor.unwrap();
        assert_eq!(kd.kernarg_size, k.kernarg_segment_size);
    }
    assert_eq!(co.kernel("saxpy").unwrap().kernarg_segment_size, 28);
    assert_eq!(co.kernel("mixed").unwrap().kernarg_segment_size, 32);
}

#[test]
fn gfx1030_image_does_not_run_on_gfx90a() {
    let co = object("saxpy_mixed.gfx1030.hsaco");
    let target = co.target();
    assert_eq!(target.processor, "gfx1030");
    assert_eq!(target.xnack, Feature::Unsupported);
    assert_eq!(target.sramecc, Feature::Unsupported);
    assert_eq!(target.to_string(), "gfx1030");
    assert!(!target.runs_on("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"));
    assert!(target.runs_on("amdgcn-amd-amdhsa--gfx1030"));
    assert_eq!(
        explicit(co.kernel("saxpy").unwrap()),
        explicit(object("saxpy_mixed.gfx90a.hsaco").kernel("saxpy").unwrap())
    );
}

#[test]
fn gfx90a_any_runs_on_every_gfx90a() {
    let target = object("saxpy_mixed.gfx90a.hsaco").target().clone();
    for isa in [
        "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-",
        "amdgcn-amd-amdhsa--gfx90a:sramecc-:xnack+",
        "amdgcn-amd-amdhsa--gfx90a",
    ] {
        assert!(target.runs_on(isa), "{isa}");
    }
    assert!(!target.runs_on("amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"));
}

#[test]
fn explicit_features_are_read_and_matched() {
    let co = object("saxpy_mixed.gfx90a_sramecc-_xnack+.hsaco");
    let target = co.target();
    assert_eq!(target.processor, "gfx90a");
    assert_eq!(target.xnack, Feature::On);
    assert_eq!(target.sramecc, Feature::Off);
    assert_eq!(target.to_string(), "gfx90a:sramecc-:xnack+");
    assert_eq!(
        co.metadata_target(),
        Some("amdgcn-amd-amdhsa--gfx90a:sramecc-:xnack+")
    );
    assert!(target.runs_on("amdgcn-amd-amdhsa--gfx90a:sramecc-:xnack+"));
    assert!(!target.runs_on("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"));
    assert!(!target.runs_on("amdgcn-amd-amdhsa--gfx90a:sramecc-:xnack-"));
    assert!(!target.runs_on("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack+"));
    assert!(!target.runs_on("amdgcn-amd-amdhsa--gfx90a"));
}

#[test]
fn every_truncation_of_a_fixture_is_refused_without_panicking() {
    let bytes = std::fs::read(fixtures().join("saxpy_mixed.gfx90a.hsaco")).unwrap();
    // The section header table is last: every proper prefix loses it.
    for len in 0..bytes.len() {
        assert!(code_object::parse(&bytes[..len]).is_err(), "{len} bytes");
    }
}

/// The version line of `clang`, when it runs.
fn clang_version(clang: &str) -> Option<String> {
    let out = Command::new(clang).arg("--version").output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines().next().map(str::to_string)
}

#[test]
fn script_regenerates_the_committed_code_objects() {
    let clang = std::env::var("CLANG").unwrap_or_else(|_| "clang-19".to_string());
    let Some(version) = clang_version(&clang) else {
        println!("skipped: no {clang} here to run scripts/gen-amdgpu-fixtures.sh");
        return;
    };
    if Command::new("sh").arg("-c").arg("true").status().is_err() {
        println!("skipped: no sh here");
        return;
    }
    // A scratch repository with the script and the source: the script
    // writes next to the source, so nothing lands in the real tree.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let repo = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("amdgpu-fixtures-{}-{nanos}", std::process::id()));
    let scripts = repo.join("scripts");
    let sources = repo.join("backends/amdgpu/fixtures");
    std::fs::create_dir_all(&scripts).unwrap();
    std::fs::create_dir_all(&sources).unwrap();
    let script = scripts.join("gen-amdgpu-fixtures.sh");
    std::fs::copy(root.join("scripts/gen-amdgpu-fixtures.sh"), &script).unwrap();
    for source in ["saxpy_mixed.hip", "chunk_hash.hip"] {
        std::fs::copy(fixtures().join(source), sources.join(source)).unwrap();
    }
    // The BLAKE3 code chunk_hash.hip includes, where it includes it from.
    let header = "test-support/src/cuda_driver/blake3_chunks.h";
    std::fs::create_dir_all(repo.join(header).parent().unwrap()).unwrap();
    std::fs::copy(root.join(header), repo.join(header)).unwrap();
    let out = Command::new("sh")
        .arg(&script)
        .env("CLANG", &clang)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the script failed with {version}: {stderr}"
    );
    for name in OBJECTS.into_iter().chain([CHUNK_HASH]) {
        let built = std::fs::read(sources.join(name)).unwrap();
        let committed = std::fs::read(fixtures().join(name)).unwrap();
        assert!(
            built == committed,
            "{name}: {version} built other bytes than the committed ones \
             ({} against {} bytes); rerun scripts/gen-amdgpu-fixtures.sh",
            built.len(),
            committed.len()
        );
    }
    std::fs::remove_dir_all(&repo).unwrap();
}
