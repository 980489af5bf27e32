//! Files are opened one way.

use super::{root, sources};

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
