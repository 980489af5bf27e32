//! Only the registry chooses by executor kind.

use super::{root, sources};

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
