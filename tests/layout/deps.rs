//! Dependencies flow one way, and a plain `reprise` compiles none of the
//! command line's.

use std::collections::BTreeSet;
use std::process::Command;

use super::{root, sources};

/// The packages `package` depends on when built as a dependency (no dev or
/// build dependencies), by name, itself included.
fn normal_dependencies(package: &str) -> BTreeSet<String> {
    tree(package, None)
}

/// The packages `package` depends on directly (no dev or build
/// dependencies), itself included.
fn direct_dependencies(package: &str) -> BTreeSet<String> {
    tree(package, Some(1))
}

fn tree(package: &str, depth: Option<u32>) -> BTreeSet<String> {
    let depth = depth.map(|d| d.to_string());
    let out = Command::new(env!("CARGO"))
        .current_dir(root())
        .arg("tree")
        .args(depth.iter().flat_map(|d| ["--depth", d.as_str()]))
        .args([
            "--offline",
            "--locked",
            "-e",
            "normal",
            "--prefix",
            "none",
            "--format",
            "{p}",
            "-p",
            package,
        ])
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo tree -p {package} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// The reprise crates (and FFI crates) among `deps`.
fn ours(deps: &BTreeSet<String>) -> BTreeSet<&str> {
    deps.iter()
        .map(String::as_str)
        .filter(|d| d.starts_with("reprise") || *d == "hsa-sys")
        .collect()
}

#[test]
fn dependencies_flow_one_way() {
    let allowed: &[(&str, &[&str])] = &[
        ("reprise-core", &["reprise-core"]),
        ("hsa-sys", &["hsa-sys"]),
        ("reprise-host", &["reprise-host", "reprise-core"]),
        ("reprise-cuda", &["reprise-cuda", "reprise-core"]),
        (
            "reprise-amdgpu",
            &["reprise-amdgpu", "reprise-core", "hsa-sys"],
        ),
        (
            "reprise-samples",
            &[
                "reprise-samples",
                "reprise-core",
                "reprise-std",
                "reprise-capture",
            ],
        ),
        // The capture crate: on the core, and on the backends only for
        // what each reads from its images without a device.
        (
            "reprise-capture",
            &[
                "reprise-capture",
                "reprise-core",
                "reprise-host",
                "reprise-cuda",
                "reprise-amdgpu",
                "hsa-sys",
            ],
        ),
    ];
    for (package, may) in allowed {
        let deps = normal_dependencies(package);
        let extra: Vec<_> = ours(&deps)
            .into_iter()
            .filter(|d| !may.contains(d))
            .collect();
        assert!(
            extra.is_empty(),
            "{package} depends on {extra:?}: a backend may depend on the core and its own FFI crate only, the capture crate on the core and the backends, the samples on the core and the std adapter"
        );
    }
    // The std adapter sits on the backends, below the facade and the CLI.
    let std = normal_dependencies("reprise-std");
    for above in ["reprise", "reprise-cli", "reprise-bench", "reprise-samples"] {
        assert!(!std.contains(above), "reprise-std depends on {above}");
    }
    assert!(std.contains("reprise-host") && std.contains("reprise-cuda"));
    // ... and on the capture crate, which owns every byte on disk.
    assert!(std.contains("reprise-capture"));
    // The facade is below the command line and the benchmark harness, and
    // on the samples (it re-exports them).
    let facade = normal_dependencies("reprise");
    for above in ["reprise-cli", "reprise-bench"] {
        assert!(!facade.contains(above), "reprise depends on {above}");
    }
    assert!(facade.contains("reprise-samples"));
}

#[test]
fn the_command_line_stands_on_the_facade() {
    // Its dependencies among ours: the facade and the benchmark harness
    // behind `reprise bench` (the built-in kernels are `reprise::samples`).
    let deps = direct_dependencies("reprise-cli");
    let ours: Vec<_> = ours(&deps).into_iter().collect();
    assert_eq!(
        ours,
        ["reprise", "reprise-bench", "reprise-cli"],
        "reprise-cli depends on {ours:?}"
    );
    // Its sources name no crate of ours but the facade and the harness.
    assert_eq!(
        crates_named("use reprise_std::X;\nlet a = reprise::b;\nhsa_sys::f(); \"libreprise_x.so\""),
        BTreeSet::from(["hsa_sys".into(), "reprise_std".into()])
    );
    let mut files = Vec::new();
    sources(&root().join("cli/src"), &mut files);
    assert!(!files.is_empty());
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let mut named = crates_named(&text);
        named.remove("reprise_bench");
        assert!(
            named.is_empty(),
            "{} names {named:?}: the command line goes through the facade",
            f.display()
        );
    }
}

/// The entries of the `[dependencies]` table of the manifest `text`, one
/// a line, comments left out.
fn manifest_dependencies(text: &str) -> Vec<&str> {
    let mut inside = false;
    let mut entries = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            inside = line == "[dependencies]";
        } else if inside && !line.is_empty() && !line.starts_with('#') {
            entries.push(line);
        }
    }
    entries
}

#[test]
fn the_facade_does_not_depend_on_the_bench_harness() {
    // The facade's dependencies are what a library user needs: the
    // benchmark harness (`reprise bench`, the criterion benches) is the
    // reprise-bench crate (benches/), above it, not a module of it.
    assert_eq!(
        manifest_dependencies(
            "[package]\nname = \"x\"\n[dependencies]\n# c\na = 1\n\n[features]\nc = []"
        ),
        ["a = 1"]
    );
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let declared = manifest_dependencies(&manifest);
    assert!(
        declared.iter().any(|d| d.starts_with("reprise-std")),
        "{declared:?}"
    );
    let harness: Vec<_> = declared
        .iter()
        .filter(|d| d.contains("reprise-bench") || d.contains("benches"))
        .collect();
    assert!(
        harness.is_empty(),
        "the facade depends on the bench harness: {harness:?}"
    );
    assert!(!normal_dependencies("reprise").contains("reprise-bench"));
    let mut files = Vec::new();
    sources(&root().join("src"), &mut files);
    assert!(!files.is_empty());
    for f in files {
        let rel = f.strip_prefix(root().join("src")).unwrap();
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(
            !rel.components()
                .any(|c| c.as_os_str() == "bench" || c.as_os_str() == "bench.rs")
                && !text.contains("mod bench"),
            "src/{}: the facade has a bench module; the harness is reprise-bench (benches/)",
            rel.display()
        );
    }
    // The harness stands on the facade alone.
    let deps = direct_dependencies("reprise-bench");
    let ours: Vec<_> = ours(&deps).into_iter().collect();
    assert_eq!(
        ours,
        ["reprise", "reprise-bench"],
        "reprise-bench depends on {ours:?}"
    );
    let mut files = Vec::new();
    sources(&root().join("benches/src"), &mut files);
    assert!(!files.is_empty());
    for f in files {
        let named = crates_named(&std::fs::read_to_string(&f).unwrap());
        assert!(
            named.is_empty(),
            "{} names {named:?}: the harness goes through the facade",
            f.display()
        );
    }
}

/// The crates of ours other than the facade (`reprise_…`, `hsa_sys`) that
/// `text` names as the start of a path (`name::…`, `use name`).
fn crates_named(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for prefix in ["reprise_", "hsa_sys"] {
        for (at, _) in text.match_indices(prefix) {
            let word = |c: char| c.is_alphanumeric() || c == '_';
            if text[..at].chars().next_back().is_some_and(word) {
                continue; // inside another word (`libreprise_x`)
            }
            let len = text[at..]
                .find(|c: char| !word(c))
                .unwrap_or(text.len() - at);
            let name = &text[at..at + len];
            let path = text[at + len..].starts_with("::") || text[..at].ends_with("use ");
            if path {
                found.insert(name.to_string());
            }
        }
    }
    found
}

#[test]
fn the_host_alone_compiles_no_gpu_code() {
    let out = Command::new(env!("CARGO"))
        .current_dir(root())
        .args([
            "tree",
            "--offline",
            "--locked",
            "-e",
            "normal",
            "--prefix",
            "none",
            "--format",
            "{p}",
            "-p",
            "reprise",
            "--no-default-features",
            "--features",
            "host",
        ])
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8_lossy(&out.stdout);
    for gpu in ["cudarc", "reprise-cuda", "reprise-amdgpu", "hsa-sys"] {
        assert!(
            !tree
                .lines()
                .any(|l| l.split_whitespace().next() == Some(gpu)),
            "reprise with the host executor alone compiles {gpu}:\n{tree}"
        );
    }
    assert!(tree.contains("reprise-host"), "{tree}");
    // With every executor, they are there (the names above are right).
    let all = normal_dependencies("reprise");
    for gpu in ["cudarc", "reprise-cuda", "reprise-amdgpu", "hsa-sys"] {
        assert!(all.contains(gpu), "the default build lacks {gpu}");
    }
}

#[test]
fn the_simulators_are_for_tests_only() {
    // They depend on nothing of ours, and nothing that ships links them.
    let deps = normal_dependencies("reprise-test-support");
    assert_eq!(
        ours(&deps).into_iter().collect::<Vec<_>>(),
        ["reprise-test-support"]
    );
    for package in [
        "reprise",
        "reprise-std",
        "reprise-cli",
        "reprise-core",
        "reprise-host",
        "reprise-cuda",
        "reprise-amdgpu",
        "reprise-bench",
        "reprise-samples",
        "reprise-interposer",
    ] {
        assert!(
            !normal_dependencies(package).contains("reprise-test-support"),
            "{package} links the simulators"
        );
    }
}

#[test]
fn one_elf_library_in_one_version() {
    let lock = std::fs::read_to_string(root().join("Cargo.lock")).unwrap();
    let objects = lock.lines().filter(|l| *l == "name = \"object\"").count();
    assert_eq!(
        objects, 1,
        "Cargo.lock holds {objects} versions of `object`"
    );
}

#[test]
fn the_library_compiles_none_of_the_command_lines_dependencies() {
    let deps = normal_dependencies("reprise");
    let cli_only = [
        "clap",
        "indicatif",
        "plotters",
        "env_logger",
        "ctrlc",
        "serde_json",
    ];
    let pulled: Vec<_> = cli_only.iter().filter(|d| deps.contains(**d)).collect();
    assert!(
        pulled.is_empty(),
        "a plain `reprise` dependency compiles {pulled:?}"
    );
    // The command line does use them (the check above would pass on a
    // misspelled name otherwise).
    let cli = normal_dependencies("reprise-cli");
    for d in cli_only {
        assert!(cli.contains(d), "reprise-cli does not depend on {d}");
    }
}
