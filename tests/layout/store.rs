//! Only the capture crate names the chunk store and the raw files.

use super::{root, sources};

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
