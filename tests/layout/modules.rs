//! No module imports one that imports it back, in any folder of any
//! crate.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::{root, sources};

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
