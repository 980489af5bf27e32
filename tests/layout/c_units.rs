//! The C simulators' source files do not depend on each other.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::root;

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
