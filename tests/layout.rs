//! The workspace's layout rules, checked on the real thing:
//!
//! - dependencies flow one way, core <- backends <- std adapter <- facade <-
//!   command line: a backend depends on no reprise crate but the core and
//!   its own FFI crate, and the core on none; the samples (the built-in
//!   kernels) on the core and the std adapter only, below the facade; the
//!   benchmark harness on the facade alone; the command line on the facade
//!   and the harness (`cargo tree -e normal`); the facade on neither, and
//!   with no bench module of its own;
//! - a plain `reprise` dependency compiles none of the command line's
//!   dependencies;
//! - within every folder of every crate, no module imports one that
//!   imports it back (`crate::`, `super::` and `self::` paths between the
//!   folder's children, and what lies below each);
//! - no file is opened by path outside the one way to read and the one
//!   staged write, but for the reasoned exceptions of `OPENS_FILES`;
//! - in the C simulators of test-support, no two source files depend on
//!   each other, through the headers they include or what they name of
//!   each other's (`c_unit_graph`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

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

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The modules named by the paths in `text` (comments left out) that
/// begin with `crate::`, `super::` or `self::`, as module paths from the
/// crate root, for a file whose own module path is `at` (a folder's
/// `mod.rs` is its folder's module). Groups (`crate::{a, b::c}`) give each of their paths' first
/// names; a name that starts with an upper-case letter ends a path (a type,
/// a trait, a constant).
fn module_paths(text: &str, at: &[String]) -> BTreeSet<Vec<String>> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let here: Vec<String> = at.to_vec();
    let mut found = BTreeSet::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        for start in ["crate::", "super::", "self::"] {
            let mut rest = code;
            while let Some(pos) = rest.find(start) {
                let before = rest[..pos].chars().last();
                let after = &rest[pos + start.len()..];
                rest = after;
                // Part of a longer path or name (`a::super::`, `my_crate::`).
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                    continue;
                }
                let mut base: Vec<String> = match start {
                    "crate::" => Vec::new(),
                    "self::" => here.clone(),
                    _ => {
                        let mut b = here.clone();
                        b.pop();
                        b
                    }
                };
                let mut tail = after;
                // `super::super::…`
                while let Some(t) = tail.strip_prefix("super::") {
                    base.pop();
                    tail = t;
                }
                let mut heads: Vec<&str> = Vec::new();
                if let Some(group) = tail.strip_prefix('{') {
                    heads.extend(group.split('}').next().unwrap_or("").split(','));
                } else {
                    heads.push(tail);
                }
                for h in heads {
                    let mut p = base.clone();
                    let mut t = h.trim();
                    loop {
                        let name = ident(t);
                        if name.is_empty() || !name.chars().next().is_some_and(|c| c.is_lowercase())
                        {
                            break;
                        }
                        p.push(name.clone());
                        match t[name.len()..].strip_prefix("::") {
                            Some(next) if !next.starts_with('{') => t = next,
                            Some(next) => {
                                // A group inside: each of its first names.
                                for g in next[1..].split('}').next().unwrap_or("").split(',') {
                                    let n = ident(g.trim());
                                    if n.chars().next().is_some_and(|c| c.is_lowercase()) {
                                        let mut q = p.clone();
                                        q.push(n);
                                        found.insert(q);
                                    }
                                }
                                break;
                            }
                            None => break,
                        }
                    }
                    if !p.is_empty() {
                        found.insert(p);
                    }
                }
            }
        }
    }
    found
}

/// The top-level modules named by `crate::…` paths in `text` (comments
/// left out).
fn crate_paths(text: &str) -> BTreeSet<String> {
    module_paths(text, &[])
        .into_iter()
        .filter_map(|p| p.into_iter().next())
        .collect()
}

/// The module path of the source file `rel` (relative to its crate's
/// `src`): `check/serve.rs` is `[check, serve]`, `check/mod.rs` and
/// `check.rs` are `[check]`, `lib.rs` and `main.rs` are `[]`.
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if !(matches!(stem, "mod" | "lib" | "main") && !parts.is_empty()
        || parts.is_empty() && matches!(stem, "lib" | "main"))
    {
        parts.push(stem.to_string());
    }
    parts
}

/// For each folder (module with children) of the crate in `src`, the
/// import graph between its child modules: `a -> b` when something in `a`
/// (or below it) names something in `b` (or below it), by a `crate::`,
/// `super::` or `self::` path. The folder's own file (`mod.rs`), which
/// declares and re-exports its children, is left out.
fn folder_graphs(src: &Path) -> BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> {
    let mut files = Vec::new();
    sources(src, &mut files);
    let mut modules: BTreeSet<Vec<String>> = BTreeSet::new();
    let mut uses: Vec<(Vec<String>, BTreeSet<Vec<String>>)> = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(src).unwrap();
        let at = module_of(rel);
        let text = std::fs::read_to_string(f).unwrap();
        modules.insert(at.clone());
        uses.push((at.clone(), module_paths(&text, &at)));
    }
    let mut graphs: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for m in &modules {
        if let Some((child, folder)) = m.split_last() {
            graphs
                .entry(folder.to_vec())
                .or_default()
                .entry(child.clone())
                .or_default();
        }
    }
    for (from, targets) in uses {
        for to in targets {
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            // The folder's own file, or a path into the file itself.
            if common >= from.len() || common >= to.len() {
                continue;
            }
            let folder = &from[..common];
            let Some(graph) = graphs.get_mut(folder) else {
                continue;
            };
            if graph.contains_key(&to[common]) {
                graph
                    .get_mut(&from[common])
                    .expect("every module is in its folder's graph")
                    .insert(to[common].clone());
            }
        }
    }
    graphs
}

/// A cycle in `graph`, if it has one.
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == n) {
            let mut c = path[at..].to_vec();
            c.push(n.to_string());
            return Some(c);
        }
        if done.contains(n) {
            return None;
        }
        path.push(n.to_string());
        for m in graph.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    // The check itself finds a cycle where there is one.
    let mut g = BTreeMap::new();
    g.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    g.insert("b".to_string(), BTreeSet::from(["a".to_string()]));
    assert!(cycle(&g).is_some());
    assert_eq!(
        crate_paths("use crate::{driver::X, context};\n// crate::module\nlet x = crate::queue::Y;"),
        BTreeSet::from(["context".into(), "driver".into(), "queue".into()])
    );

    assert_eq!(
        module_paths(
            "use super::{pool::Workers, serve};",
            &["check".into(), "run".into()]
        ),
        BTreeSet::from([
            vec!["check".to_string(), "pool".to_string()],
            vec!["check".to_string(), "serve".to_string()],
        ])
    );
    let mut problems = Vec::new();
    for krate in [
        "core",
        "capture",
        "std-adapter",
        "backends/host",
        "backends/cuda",
        "backends/hsa-sys",
        "backends/amdgpu",
        "cli",
        "samples",
        "benches",
        "interposer",
        "test-support",
        ".",
    ] {
        let src = root().join(krate).join("src");
        for (folder, graph) in folder_graphs(&src) {
            if let Some(c) = cycle(&graph) {
                problems.push(format!(
                    "{}/{}: modules import each other: {}",
                    src.display(),
                    folder.join("/"),
                    c.join(" -> ")
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The places in `text` (comments left out) that choose by executor kind:
/// a `BackendKind::X` in a pattern (`BackendKind::X =>`, `BackendKind::X |`,
/// a tuple pattern `(BackendKind::X, ..)`) or compared (`== BackendKind::X`,
/// `!= BackendKind::X`), as `line: text`.
fn kind_choices(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("BackendKind::") {
            // `reprise::BackendKind::X` is `BackendKind::X`.
            let mut before = rest[..at].trim_end();
            while let Some(path) = before.strip_suffix("::") {
                before = path.trim_end_matches(|c: char| c.is_alphanumeric() || c == '_');
            }
            // `== Ok(BackendKind::X)`, `!= Some(BackendKind::X)`.
            let before = before.trim_end();
            let before = ["Ok(", "Some("]
                .iter()
                .find_map(|w| before.strip_suffix(w))
                .unwrap_or(before)
                .trim_end();
            let after = &rest[at + "BackendKind::".len()..];
            let name_len = after
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            let next = after[name_len..].trim_start();
            let pattern = next.starts_with("=>")
                || (next.starts_with('|') && !next.starts_with("||"))
                || (before.ends_with("if let (") || before.ends_with("let ("))
                || before.ends_with("matches!(")
                || before.ends_with("==")
                || before.ends_with("!=")
                || next.starts_with("==")
                || next.starts_with("!=");
            if pattern {
                out.push(format!("{}: {}", n + 1, line.trim()));
                break;
            }
            rest = &after[name_len..];
        }
    }
    out
}

#[test]
fn only_the_registry_chooses_by_executor_kind() {
    // The check finds each way of choosing, and passes a value through.
    assert_eq!(kind_choices("BackendKind::Host => 1,").len(), 1);
    assert_eq!(
        kind_choices("  | BackendKind::Cuda | BackendKind::Amdgpu => 2,").len(),
        1
    );
    assert_eq!(kind_choices("if kind == BackendKind::Host {").len(), 1);
    assert_eq!(kind_choices("(b != reprise::BackendKind::Cuda)").len(), 1);
    assert_eq!(
        kind_choices("k.backend() == Ok(BackendKind::Host)").len(),
        1
    );
    assert_eq!(
        kind_choices("if let (BackendKind::Host, Some(d)) = x {").len(),
        1
    );
    assert_eq!(kind_choices("matches!(BackendKind::Host, k)").len(), 1);
    assert!(kind_choices("Ok(BackendKind::Host)").is_empty());
    assert!(
        kind_choices("ExecutorSpec::new(BackendKind::Cuda) // BackendKind::Host =>").is_empty()
    );

    // The registry, where the choosing lives; the core's definition of the
    // kinds (their names); and the samples' table of built-in kernels, one
    // per kind.
    let allowed = [
        "std-adapter/src/executors.rs",
        "capture/src/images.rs",
        "core/src/record/mod.rs",
        "samples/src/lib.rs",
    ];
    let mut found = Vec::new();
    for krate in [
        "core",
        "capture",
        "std-adapter",
        "backends/host",
        "backends/cuda",
        "backends/amdgpu",
        "cli",
        "samples",
        "benches",
        "interposer",
        ".",
    ] {
        let src = root().join(krate).join("src");
        if !src.is_dir() {
            continue;
        }
        let mut files = Vec::new();
        sources(&src, &mut files);
        for f in files {
            let rel = f
                .strip_prefix(root())
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if allowed.contains(&rel.as_str())
                || rel.contains("/tests/")
                || rel.ends_with("tests.rs")
            {
                continue;
            }
            let text = std::fs::read_to_string(&f).unwrap();
            // Unit tests at the end of a file may choose what they test.
            let text = text.split("#[cfg(test)]").next().unwrap_or("");
            found.extend(kind_choices(text).into_iter().map(|c| format!("{rel}:{c}")));
        }
    }
    assert!(
        found.is_empty(),
        "choosing by executor kind outside the registry (std-adapter/src/executors.rs: \
         with_executor, traits; capture/src/images.rs: image_info, capabilities):\n{}",
        found.join("\n")
    );
}

/// The files outside the one-way helpers that may open files by path
/// themselves, each with why.
const OPENS_FILES: &[(&str, &str)] = &[
    // The helpers: the one way to read (regular files only, no blocking,
    // bounded) and the one staged write.
    ("capture/src/capture/open.rs", "the one way to read"),
    ("capture/src/store/mod.rs", "the one staged write"),
    ("capture/src/fs.rs", "the store's openat primitives"),
    (
        "cli/src/side_files.rs",
        "the command line's files, through both",
    ),
    // A probe of the capture directory's writability: create_new (O_EXCL
    // follows no link), removed at once.
    ("std-adapter/src/recorder/mod.rs", "create_new probe"),
    // The compiler's private temporary directory, its own files.
    (
        "std-adapter/src/compile/mod.rs",
        "private compile directory",
    ),
    // The embedded interposer written to reprise's cache with create_new.
    ("cli/src/record.rs", "interposer cache, create_new"),
    // The job directory, opened once without following a link, and its
    // files through that descriptor.
    ("cli/src/jobs/slurm/mod.rs", "job directory by descriptor"),
    // The kernel's /proc/meminfo.
    ("cli/src/ui.rs", "/proc/meminfo"),
    // The bench's own scratch directory.
    ("benches/src/lib.rs", "bench scratch"),
    ("benches/src/store.rs", "bench scratch"),
];

/// The places in the code (not its tests) of `text` that open a file by
/// path with std's own calls, as `line: text`.
fn file_opens(text: &str) -> Vec<String> {
    let std_options = text.contains("std::fs::OpenOptions")
        || text
            .lines()
            .any(|l| l.starts_with("use std::fs::{") && l.contains("OpenOptions"));
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with("#[cfg(test)]") {
            break;
        }
        let code = line.split("//").next().unwrap_or("");
        let calls = [
            "File::open(",
            "File::create(",
            "fs::read(",
            "fs::read_to_string(",
            "fs::write(",
        ];
        // A call of its own, not `SnapshotFile::open(` or `my_fs::read(`.
        let called = |c: &str| {
            code.match_indices(c).any(|(at, _)| {
                !code[..at]
                    .chars()
                    .last()
                    .is_some_and(|p| p.is_alphanumeric() || p == '_')
            })
        };
        let opens = calls.iter().any(|c| called(c))
            || std_options
                && code.contains("OpenOptions::new()")
                && !code.contains("reprise::OpenOptions")
                && !code.contains("reprise_std::OpenOptions");
        if opens {
            out.push(format!("{}: {}", i + 1, line.trim()));
        }
    }
    out
}

/// Every file reprise reads or writes by path goes through the one way to
/// read (`capture::read_bounded`, `open_regular`) and the one staged write
/// (`store::write_atomically`), or is one of [`OPENS_FILES`].
#[test]
fn files_are_opened_one_way() {
    assert_eq!(
        file_opens("let a = std::fs::read(p);\n// fs::write(\n#[cfg(test)]\nfs::write(x)"),
        ["1: let a = std::fs::read(p);"]
    );
    let mut found = Vec::new();
    for krate in ["capture", "std-adapter", "cli", "benches", "."] {
        let src = root().join(krate).join("src");
        let mut files = Vec::new();
        sources(&src, &mut files);
        for f in files {
            if f.file_name().is_some_and(|n| n == "tests.rs")
                || f.components().any(|c| c.as_os_str() == "tests")
            {
                continue;
            }
            let rel = f
                .strip_prefix(root())
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if OPENS_FILES.iter().any(|(p, _)| *p == rel) {
                continue;
            }
            let text = std::fs::read_to_string(&f).unwrap();
            found.extend(file_opens(&text).into_iter().map(|l| format!("{rel}:{l}")));
        }
    }
    assert!(
        found.is_empty(),
        "files opened outside the one way to read and the one staged write:\n{}",
        found.join("\n")
    );
}

/// The C simulators' source folders: the simulated CUDA driver and HSA
/// runtime the GPU tests run on.
const C_SIMULATORS: [&str; 2] = [
    "test-support/src/cuda_driver",
    "test-support/src/hsa_runtime",
];

/// `text` (C) with its comments blanked, and its string and character
/// literals too unless `strings` (newlines kept, so lines stay lines).
fn c_code(text: &str, strings: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                while chars.peek().is_some_and(|&n| n != '\n') {
                    chars.next();
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut last = ' ';
                for n in chars.by_ref() {
                    if n == '\n' {
                        out.push('\n');
                    }
                    if last == '*' && n == '/' {
                        break;
                    }
                    last = n;
                }
                out.push(' ');
            }
            '"' | '\'' => {
                out.push(c);
                while let Some(n) = chars.next() {
                    if n == c {
                        break;
                    }
                    let escaped = if n == '\\' { chars.next() } else { None };
                    if strings {
                        out.push(n);
                        out.extend(escaped);
                    }
                }
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// The tokens of C `code`: identifiers (keywords and numbers alike),
/// `->`, and single punctuation characters.
fn c_tokens(code: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut chars = code.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_alphanumeric() || c == '_' {
            let mut word = c.to_string();
            while let Some(&n) = chars.peek().filter(|n| n.is_alphanumeric() || **n == '_') {
                word.push(n);
                chars.next();
            }
            tokens.push(word);
        } else if c == '-' && chars.peek() == Some(&'>') {
            chars.next();
            tokens.push("->".into());
        } else if !c.is_whitespace() {
            tokens.push(c.to_string());
        }
    }
    tokens
}

fn is_ident(t: &str) -> bool {
    t.starts_with(|c: char| c.is_alphabetic() || c == '_')
}

/// What one C file of a simulator says about the others.
#[derive(Debug, Default)]
struct CFile {
    /// The files its `#include "…"` lines name.
    includes: BTreeSet<String>,
    /// The functions and variables it defines at file scope, each with
    /// whether others may use it (not `static`).
    defines: BTreeMap<String, bool>,
    /// The identifiers it names, in code and in macro bodies, member names
    /// left out (after `.` or `->`, and inside `struct`, `union` and `enum`
    /// bodies).
    names: BTreeSet<String>,
}

/// The name a file-scope declaration `decl` (its tokens, up to its `;` or
/// its body's `{`) declares, and whether it is a function's.
fn declared(decl: &[String]) -> Option<(String, bool)> {
    // `__attribute__((…))` is no name.
    let mut toks: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < decl.len() {
        if decl[i] == "__attribute__" {
            let mut depth = 0;
            i += 1;
            while i < decl.len() {
                match decl[i].as_str() {
                    "(" => depth += 1,
                    ")" => depth -= 1,
                    _ => {}
                }
                i += 1;
                if depth == 0 {
                    break;
                }
            }
            continue;
        }
        toks.push(&decl[i]);
        i += 1;
    }
    let end = toks
        .iter()
        .position(|t| matches!(*t, "=" | "[" | "(" | ","))
        .unwrap_or(toks.len());
    if toks.get(end) == Some(&"(") {
        // A pointer to a function, `(*name)(…)`, is a variable.
        if toks.get(end + 1) == Some(&"*") {
            return toks
                .get(end + 2)
                .filter(|t| is_ident(t))
                .map(|t| (t.to_string(), false));
        }
        return toks[..end]
            .last()
            .filter(|t| is_ident(t))
            .map(|t| (t.to_string(), true));
    }
    // `struct s` (or `enum`, `union`) alone declares a type.
    let tag = |t: &&str| matches!(*t, "struct" | "union" | "enum");
    if toks[..end].last().is_some_and(tag) || end >= 2 && tag(&toks[end - 2]) {
        return None;
    }
    toks[..end]
        .last()
        .filter(|t| is_ident(t))
        .map(|t| (t.to_string(), false))
}

/// What the C source `text` includes, defines and names (see [`CFile`]).
fn c_file(text: &str) -> CFile {
    let mut file = CFile::default();
    for line in c_code(text, true).lines() {
        let Some(rest) = line.trim_start().strip_prefix('#') else {
            continue;
        };
        if let Some(name) = rest.trim_start().strip_prefix("include")
            && let Some(name) = name.trim().strip_prefix('"')
        {
            file.includes
                .insert(name.split('"').next().unwrap_or("").to_string());
        }
    }
    // Directives out (their lines joined where they go on), but for what
    // macros' bodies name.
    let mut code = String::new();
    let mut lines = c_code(text, false)
        .lines()
        .map(str::to_string)
        .collect::<Vec<_>>()
        .into_iter();
    while let Some(mut line) = lines.next() {
        while line.ends_with('\\') {
            line.pop();
            line.push_str(&lines.next().unwrap_or_default());
        }
        match line.trim_start().strip_prefix('#') {
            Some(d) => {
                if let Some(def) = d.trim_start().strip_prefix("define") {
                    let toks = c_tokens(def);
                    // The macro's name and its parameters.
                    let function_like = def
                        .trim_start()
                        .trim_start_matches(|c: char| c.is_alphanumeric() || c == '_')
                        .starts_with('(');
                    let body = if function_like {
                        toks.iter()
                            .position(|t| t == ")")
                            .map_or(toks.len(), |p| p + 1)
                    } else {
                        1
                    };
                    file.names
                        .extend(toks.into_iter().skip(body).filter(|t| is_ident(t)));
                }
            }
            None => {
                code.push_str(&line);
                code.push('\n');
            }
        }
    }
    #[derive(Clone, Copy, PartialEq)]
    enum Brace {
        Record,
        Init,
        Body,
    }
    let toks = c_tokens(&code);
    let mut open: Vec<Brace> = Vec::new();
    let mut decl: Vec<String> = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        let prev = |back: usize| i.checked_sub(back).map(|j| toks[j].as_str());
        let record = |t: Option<&str>| matches!(t, Some("struct" | "union" | "enum"));
        match t.as_str() {
            "{" => {
                let brace = if record(prev(1)) || record(prev(2)) && prev(1).is_some_and(is_ident) {
                    Brace::Record
                } else if let Some(&b) = open.last() {
                    b
                } else if decl.iter().any(|t| t == "=") {
                    Brace::Init
                } else {
                    if let Some((name, true)) = declared(&decl) {
                        let exported = !decl.iter().any(|t| t == "static");
                        file.defines.insert(name, exported);
                    }
                    Brace::Body
                };
                open.push(brace);
            }
            "}" => {
                if open.pop() == Some(Brace::Body) && open.is_empty() {
                    decl.clear();
                }
            }
            ";" if open.is_empty() => {
                if !decl.iter().any(|t| t == "typedef" || t == "extern") {
                    let exported = !decl.iter().any(|t| t == "static");
                    // Each declarator: `int a, b[2] = {…};`.
                    let mut depth = 0;
                    let mut parts = vec![Vec::new()];
                    for d in &decl {
                        match d.as_str() {
                            "(" => depth += 1,
                            ")" => depth -= 1,
                            "," if depth == 0 => {
                                parts.push(Vec::new());
                                continue;
                            }
                            _ => {}
                        }
                        parts.last_mut().unwrap().push(d.clone());
                    }
                    for part in parts {
                        if let Some((name, false)) = declared(&part) {
                            file.defines.insert(name, exported);
                        }
                    }
                }
                decl.clear();
            }
            _ => {
                let member = matches!(prev(1), Some("." | "->"));
                if is_ident(t) && !member && !open.contains(&Brace::Record) {
                    file.names.insert(t.clone());
                }
                if open.is_empty() {
                    decl.push(t.clone());
                }
            }
        }
    }
    file
}

/// The units of the C sources in `dir` and what each depends on, with
/// why. A unit is a file stem: `x.c` and `x.h` together, or a header alone.
/// Unit `a` depends on unit `b` when a file of `a` includes `b.h`, or names
/// a function or variable that `b.c` defines for others (not `static`) and
/// `a` does not define itself: a hub header that declares what several
/// files define depends on each of them.
fn c_unit_graph(dir: &Path) -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let mut units: BTreeMap<String, Vec<CFile>> = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if !p.extension().is_some_and(|x| x == "c" || x == "h") {
            continue;
        }
        let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
        let file = c_file(&std::fs::read_to_string(&p).unwrap());
        units.entry(stem).or_default().push(file);
    }
    let mut owner: BTreeMap<&str, &str> = BTreeMap::new();
    for (unit, files) in &units {
        for f in files {
            for (name, exported) in &f.defines {
                if *exported {
                    owner.insert(name, unit);
                }
            }
        }
    }
    let mut graph: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (unit, files) in &units {
        let edges = graph.entry(unit.clone()).or_default();
        let own: BTreeSet<&String> = files.iter().flat_map(|f| f.defines.keys()).collect();
        for f in files {
            for inc in &f.includes {
                let stem = Path::new(inc).file_stem().unwrap().to_string_lossy();
                if stem != unit.as_str() {
                    edges
                        .entry(stem.into_owned())
                        .or_default()
                        .insert(format!("#include \"{inc}\""));
                }
            }
            for name in &f.names {
                match owner.get(name.as_str()) {
                    Some(&to) if to != unit && !own.contains(name) => {
                        edges
                            .entry(to.to_string())
                            .or_default()
                            .insert(name.clone());
                    }
                    _ => {}
                }
            }
        }
    }
    graph
}

/// The circles of `graph`: each set of two or more nodes every one of
/// which reaches every other.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(n) = todo.pop() {
            for m in graph.get(&n).into_iter().flatten() {
                if seen.insert(m.clone()) {
                    todo.push(m.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|n| (n, reach(n))).collect();
    let mut found: Vec<BTreeSet<String>> = Vec::new();
    for (n, r) in &reached {
        if !r.contains(*n) || found.iter().any(|c| c.contains(*n)) {
            continue;
        }
        let circle: BTreeSet<String> = r
            .iter()
            .filter(|m| reached.get(m).is_some_and(|back| back.contains(*n)))
            .cloned()
            .collect();
        if circle.len() > 1 {
            found.push(circle);
        }
    }
    found
}

/// No two units of a C simulator (see [`c_unit_graph`]) depend on each
/// other, directly or through others: the sources layer, each header
/// saying what its own file defines and including what it needs of the
/// layers below.
#[test]
fn c_simulators_have_no_include_circle() {
    // The check itself: a unit's own names, literals, comments and members
    // are no dependency; a header declaring another's function is.
    let f = c_file(
        "#include \"a.h\" /* #include \"b.h\" */\n#define M(x) (g_b + x)\n\
         static int t; int g_a = 1, *p;\nstruct s { int g_b; };\n\
         int f(int x) { return g_b + \"g_c\"[0] + x->g_c + fb(); }\nint fb(void);\n",
    );
    assert_eq!(f.includes, BTreeSet::from(["a.h".to_string()]));
    assert_eq!(
        f.defines,
        BTreeMap::from([
            ("t".to_string(), false),
            ("g_a".to_string(), true),
            ("p".to_string(), true),
            ("f".to_string(), true),
        ])
    );
    assert!(f.names.contains("g_b") && f.names.contains("fb") && !f.names.contains("g_c"));
    let g = BTreeMap::from([
        ("a".to_string(), BTreeSet::from(["b".to_string()])),
        ("b".to_string(), BTreeSet::from(["a".to_string()])),
        ("c".to_string(), BTreeSet::from(["a".to_string()])),
    ]);
    assert_eq!(
        circles(&g),
        [BTreeSet::from(["a".to_string(), "b".to_string()])]
    );

    let mut problems = Vec::new();
    for dir in C_SIMULATORS {
        let graph = c_unit_graph(&root().join(dir));
        let plain: BTreeMap<String, BTreeSet<String>> = graph
            .iter()
            .map(|(n, e)| (n.clone(), e.keys().cloned().collect()))
            .collect();
        for circle in circles(&plain) {
            let mut why = Vec::new();
            for n in &circle {
                for (m, names) in &graph[n] {
                    if circle.contains(m) {
                        let names: Vec<&str> = names.iter().map(String::as_str).collect();
                        why.push(format!("  {n} -> {m}: {}", names.join(", ")));
                    }
                }
            }
            problems.push(format!(
                "{dir}: {} depend on each other:\n{}",
                circle.iter().cloned().collect::<Vec<_>>().join(", "),
                why.join("\n")
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The chunk store's and the raw files' own types and functions, which the
/// capture crate alone uses: outside it, a capture is written through a
/// `CaptureWriter` and its snapshots read through a `SnapshotSource`, and
/// whether its bytes are raw files or chunks is decided in it alone.
const STORE_NAMES: &[&str] = &[
    "ChunkStore",
    "ChunkRef",
    "Manifest",
    "StoreOptions",
    "Mappable",
    "manifest_path",
    "manifest_for",
    "store_for",
    "store_leftovers",
    "open_regular",
    "create_fresh",
    "open_dir_fd",
    "read_file_bounded",
];

/// The places in the code (not its comments, strings or tests) of `text`
/// that name the chunk store's or raw files' own types or the `chunks`
/// module, as `line: text`.
fn store_names(text: &str) -> Vec<String> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with("#[cfg(test)]") {
            break;
        }
        let code = line.split("//").next().unwrap_or("");
        // String literals are words for people, not names.
        let code: String = code.split('"').step_by(2).collect::<Vec<_>>().join(" ");
        let mut at = 0;
        let named = code.split(|c: char| !ident(c)).any(|word| {
            let start = at;
            at += word.len() + 1;
            STORE_NAMES.contains(&word)
                || word == "chunks" && code[start + word.len()..].starts_with("::")
        });
        if named {
            out.push(format!("{}: {}", i + 1, line.trim()));
        }
    }
    out
}

/// Nothing outside the capture crate (its tests and the benches aside,
/// which measure the store itself) names the chunk store's or raw files'
/// types.
#[test]
fn only_the_capture_crate_names_the_store() {
    assert_eq!(
        store_names(
            "use reprise_capture::chunks::{self, X};\nlet m: Manifest = f();\n\
             // ChunkStore\nlet s = \"the chunks of ChunkStore\";\nP::BadManifest(_) =>\n\
             for c in x.chunks(4) {}\n#[cfg(test)]\nuse crate::chunks::ChunkStore;"
        ),
        [
            "1: use reprise_capture::chunks::{self, X};",
            "2: let m: Manifest = f();"
        ]
    );
    let mut found = Vec::new();
    for krate in [
        "std-adapter",
        "cli",
        ".",
        "samples",
        "interposer",
        "test-support",
    ] {
        let src = root().join(krate).join("src");
        let mut files = Vec::new();
        sources(&src, &mut files);
        for f in files {
            let rel = f
                .strip_prefix(root())
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if rel.ends_with("tests.rs") || f.components().any(|c| c.as_os_str() == "tests") {
                continue;
            }
            let text = std::fs::read_to_string(&f).unwrap();
            found.extend(store_names(&text).into_iter().map(|l| format!("{rel}:{l}")));
        }
    }
    assert!(
        found.is_empty(),
        "the chunk store or raw files named outside the capture crate (write through \
         CaptureWriter, read through SnapshotSource):\n{}",
        found.join("\n")
    );
}
