//! Hostile input: captures from someone else's run, damaged in every way
//! an attacker or a bad disk would, generated from good captures of every
//! format (LLVM legacy, LLVM current, reprise's own). Every case ends
//! cleanly: exit 2 naming a file of the capture (or 1 where the capture is
//! whole and its replay only differs, or 0 where the damage changed
//! nothing that matters), never a panic, never a signal, within a time
//! limit and an address-space limit. A capture that carries checksums
//! (reprise's) never replays damaged data: every data-file case exits 2.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use common::*;
use reprise::core::record::Generation;

const BASE: u64 = 0x1539_4000_0000;

/// Each run may take this long...
const LIMIT: Duration = Duration::from_secs(20);
/// ... and map this much address space (`ulimit -v`, KiB): a replay
/// reserves the recorded region (1 GiB for reprise's captures, and LLVM's
/// 64 GiB only when it can), so an unbounded read or allocation fails.
const ADDRESS_SPACE_KIB: u64 = 3 << 20;

/// Runs `reprise ARGS` under the limits, in `dir`.
fn run(dir: &Path, args: &[&str]) -> Output {
    run_within(dir, args, ADDRESS_SPACE_KIB)
}

/// Runs `reprise ARGS` in `dir` with `kib` KiB of address space.
fn run_within(dir: &Path, args: &[&str], kib: u64) -> Output {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!(r#"ulimit -v {kib} && exec "$0" "$@""#))
        .arg(reprise_bin())
        .args(args)
        .current_dir(dir)
        .env("RUST_BACKTRACE", "0");
    output_within(&mut cmd, LIMIT)
}

/// The files of a good capture, kept in memory so that each case starts
/// from them.
#[derive(Clone)]
struct Original {
    name: &'static str,
    /// (file name, bytes), the descriptor first.
    files: Vec<(String, Vec<u8>)>,
    checksummed: bool,
}

impl Original {
    fn read(name: &'static str, descriptor: &Path, checksummed: bool) -> Self {
        let dir = descriptor.parent().unwrap();
        let stem = descriptor
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(&format!("{stem}."))
            })
            .map(|p| {
                (
                    p.file_name().unwrap().to_string_lossy().into_owned(),
                    std::fs::read(&p).unwrap(),
                )
            })
            .collect();
        files.sort_by_key(|(n, _)| !n.ends_with(".json"));
        Original {
            name,
            files,
            checksummed,
        }
    }

    fn descriptor(&self) -> &str {
        &self.files[0].0
    }

    /// The file whose name ends with `ext`.
    fn file(&self, ext: &str) -> &str {
        &self
            .files
            .iter()
            .find(|(n, _)| n.ends_with(&format!(".{ext}")))
            .unwrap_or_else(|| panic!("{}: no .{ext}", self.name))
            .0
    }

    /// Writes the capture into a fresh directory under `root`.
    fn write(&self, root: &Path, case: usize) -> PathBuf {
        let dir = root.join(format!("{}-{case}", self.name));
        std::fs::create_dir(&dir).unwrap();
        for (n, bytes) in &self.files {
            std::fs::write(dir.join(n), bytes).unwrap();
        }
        dir
    }
}

/// The three good captures: LLVM legacy and current fixtures, written from
/// the format description alone, and one recorded by reprise.
fn originals(root: &Path) -> Vec<Original> {
    let mut out = Vec::new();
    for (name, generation) in [
        ("legacy", Generation::LlvmLegacy),
        ("current", Generation::LlvmCurrent),
    ] {
        let dir = root.join(format!("good-{name}"));
        std::fs::create_dir(&dir).unwrap();
        let f = llvm_fixture(&dir, generation, BASE, 256);
        out.push(Original::read(name, &f.descriptor, false));
    }
    let dir = root.join("good-reprise");
    let written = record_axpy(
        reprise::RecordConfig::default()
            .enabled(true)
            .dir(&dir)
            .fsync(false)
            .region_size(1 << 30),
        256,
        1,
    );
    out.push(Original::read("reprise", &written[0], true));
    out
}

/// What a case damages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Damages {
    /// The descriptor.
    Descriptor,
    /// A data file (snapshot, globals, image): under checksums, exit 2.
    Data,
}

/// Set by [`check`] when a replay reported that the process running the
/// image died (the image crashed while loaded, where no guard reaches).
static ISOLATED_CRASHES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Runs `reprise replay --verify` on a damaged capture in `dir` and checks
/// it ended cleanly; returns the exit status.
fn check(o: &Original, dir: &Path, case: &str, damages: Damages) -> i32 {
    let descriptor = dir.join(o.descriptor());
    let out = run(dir, &["replay", "--verify", s(&descriptor)]);
    let (stdout, stderr) = text(&out);
    let code = out.status.code().unwrap_or_else(|| {
        panic!(
            "{}: {case}: killed by a signal ({:?})\nstderr:\n{stderr}",
            o.name, out.status
        )
    });
    assert!(
        !stderr.contains("panicked"),
        "{}: {case}: panicked:\n{stderr}",
        o.name
    );
    assert!(
        matches!(code, 0..=2),
        "{}: {case}: exit {code}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        o.name
    );
    if code == 2 {
        assert!(
            stderr.contains(&dir.display().to_string()),
            "{}: {case}: the error names no file of the capture:\n{stderr}",
            o.name
        );
    }
    if stderr.contains("the process that loaded and ran this image") {
        ISOLATED_CRASHES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        assert!(
            stderr.contains(&format!("{}: ", dir.join(o.file("image")).display())),
            "{}: {case}: the crash names no image:\n{stderr}",
            o.name
        );
    }
    if o.checksummed && damages == Damages::Data {
        assert_eq!(
            code, 2,
            "{}: {case}: damaged data replayed:\n{stdout}",
            o.name
        );
    }
    code
}

/// Offsets worth cutting a JSON text at: after every separator, and
/// before every closing bracket.
fn json_boundaries(text: &[u8]) -> Vec<usize> {
    let mut cuts = vec![0, 1];
    for (i, b) in text.iter().enumerate() {
        match b {
            b',' | b':' | b'{' | b'[' => cuts.push(i + 1),
            b'}' | b']' => cuts.push(i),
            _ => {}
        }
    }
    cuts.push(text.len().saturating_sub(1));
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

#[test]
fn damaged_descriptors_end_cleanly() {
    let root = tempfile::tempdir().unwrap();
    let mut cases = 0;
    for o in originals(root.path()) {
        let text = o.files[0].1.clone();
        let v: serde_json::Value = serde_json::from_slice(&text).unwrap();
        let keys: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        let mut variants: Vec<(String, Vec<u8>)> = Vec::new();
        // Truncated at every field boundary.
        for cut in json_boundaries(&text) {
            variants.push((format!("cut at byte {cut}"), text[..cut].to_vec()));
        }
        for key in &keys {
            // Mangled (so missing) keys.
            let mut m = v.clone();
            let x = m.as_object_mut().unwrap().remove(key).unwrap();
            m.as_object_mut().unwrap().insert(format!("{key}x"), x);
            variants.push((format!("{key} mangled"), serde_json::to_vec(&m).unwrap()));
            // Lying and ill-typed values.
            for lie in [
                serde_json::json!(0),
                serde_json::json!(-1),
                serde_json::json!(u64::MAX),
                serde_json::json!(1e300),
                serde_json::json!(1.5),
                serde_json::json!("a string"),
                serde_json::json!([]),
                serde_json::json!({ "nested": [[[1]]] }),
                serde_json::json!("x".repeat(100_000)),
            ] {
                let mut m = v.clone();
                m[key.as_str()] = lie.clone();
                let shown: String = lie.to_string().chars().take(20).collect();
                variants.push((format!("{key} = {shown}"), serde_json::to_vec(&m).unwrap()));
            }
        }
        // Deep nesting, under the descriptor size limit.
        let mut deep = text[..text.len() - 1].to_vec();
        deep.extend_from_slice(b",\"X\":");
        deep.extend(std::iter::repeat_n(b'[', 150_000));
        deep.extend(std::iter::repeat_n(b']', 150_000));
        deep.push(b'}');
        variants.push(("nested 150,000 deep".into(), deep));
        for (case, bytes) in variants {
            cases += 1;
            let dir = o.write(root.path(), cases);
            std::fs::write(dir.join(o.descriptor()), &bytes).unwrap();
            check(&o, &dir, &case, Damages::Descriptor);
        }
    }
    // `list` over all of them at once (a broken one among them must not stop
    // it), and `inspect` on each: never a signal, never a hang.
    let out = run(root.path(), &["list", s(root.path())]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{:?}", text(&out));
    assert!(cases > 300, "{cases} cases");
    eprintln!("{cases} damaged descriptors, each replayed");
}

#[test]
fn damaged_data_files_end_cleanly() {
    let root = tempfile::tempdir().unwrap();
    let mut cases = 0;
    let mut differ = 0;
    for o in originals(root.path()) {
        let mut variants: Vec<(String, String, Option<Vec<u8>>)> = Vec::new();
        let globals = o.file("globals").to_string();
        let gbytes = o
            .files
            .iter()
            .find(|(n, _)| *n == globals)
            .unwrap()
            .1
            .clone();
        // The globals truncated at every byte, and every byte flipped.
        for cut in 0..gbytes.len() {
            variants.push((
                format!("globals cut at {cut}"),
                globals.clone(),
                Some(gbytes[..cut].to_vec()),
            ));
        }
        for at in 0..gbytes.len() {
            let mut g = gbytes.clone();
            g[at] ^= 0xff;
            variants.push((
                format!("globals byte {at} flipped"),
                globals.clone(),
                Some(g),
            ));
        }
        // Snapshots one byte short or long, and flipped.
        let input_ext = if o.name == "legacy" {
            "memory"
        } else {
            "record_input"
        };
        let output_ext = if o.name == "legacy" {
            "original.output"
        } else {
            "record_output"
        };
        for ext in [input_ext, output_ext] {
            let name = o.file(ext).to_string();
            let bytes = o.files.iter().find(|(n, _)| *n == name).unwrap().1.clone();
            variants.push((
                format!("{ext} one byte short"),
                name.clone(),
                Some(bytes[..bytes.len() - 1].to_vec()),
            ));
            let mut long = bytes.clone();
            long.push(0);
            variants.push((format!("{ext} one byte long"), name.clone(), Some(long)));
            let mut flipped = bytes.clone();
            flipped[4] ^= 0x40;
            variants.push((format!("{ext} byte 4 flipped"), name.clone(), Some(flipped)));
            variants.push((format!("{ext} empty"), name.clone(), Some(Vec::new())));
        }
        // The image: truncated, and its ELF header, program headers and
        // dynamic section damaged byte by byte.
        let image = o.file("image").to_string();
        let ibytes = o.files.iter().find(|(n, _)| *n == image).unwrap().1.clone();
        for cut in [0, 4, 16, 64, ibytes.len() / 2, ibytes.len() - 1] {
            variants.push((
                format!("image cut at {cut}"),
                image.clone(),
                Some(ibytes[..cut].to_vec()),
            ));
        }
        for at in (0..ibytes.len().min(16 << 10)).step_by(37) {
            let mut b = ibytes.clone();
            b[at] ^= 0x5a;
            variants.push((format!("image byte {at} changed"), image.clone(), Some(b)));
        }
        for (case, name, bytes) in variants {
            cases += 1;
            let dir = o.write(root.path(), cases);
            match bytes {
                Some(b) => std::fs::write(dir.join(&name), b).unwrap(),
                None => std::fs::remove_file(dir.join(&name)).unwrap(),
            }
            differ += usize::from(check(&o, &dir, &case, Damages::Data) == 1);
        }
    }
    assert!(cases > 300, "{cases} cases");
    assert!(differ > 0, "no damage was ever found by verification");
    // Some damaged images crash while loaded (SIGSEGV, SIGBUS, SIGILL, or
    // the loader's exit 127, when run in-process): each was an error naming
    // the image, from the process that ran it.
    let crashes = ISOLATED_CRASHES.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        crashes > 0,
        "no damaged image crashed: the isolation went untested"
    );
    eprintln!(
        "{cases} damaged data files, each replayed; {differ} replays differed (exit 1), \
         {crashes} images crashed the process that ran them (exit 2)"
    );
}

/// Makes a FIFO at `path` (with the system's `mkfifo`).
fn mkfifo(path: &Path) {
    let st = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(st.success());
}

#[test]
fn special_files_never_hang_or_get_read() {
    let root = tempfile::tempdir().unwrap();
    let mut cases = 0;
    for o in originals(root.path()) {
        let input_ext = if o.name == "legacy" {
            "memory"
        } else {
            "record_input"
        };
        let output_ext = if o.name == "legacy" {
            "original.output"
        } else {
            "record_output"
        };
        for ext in ["json", input_ext, output_ext, "globals", "image"] {
            let name = if ext == "json" {
                o.descriptor().to_string()
            } else {
                o.file(ext).to_string()
            };
            for kind in ["FIFO", "/dev/zero", "directory"] {
                cases += 1;
                let dir = o.write(root.path(), cases);
                let path = dir.join(&name);
                std::fs::remove_file(&path).unwrap();
                match kind {
                    "FIFO" => mkfifo(&path),
                    "/dev/zero" => std::os::unix::fs::symlink("/dev/zero", &path).unwrap(),
                    _ => std::fs::create_dir(&path).unwrap(),
                }
                let case = format!("{name} is {kind}");
                let code = check(&o, &dir, &case, Damages::Data);
                assert_eq!(code, 2, "{}: {case}", o.name);
                // inspect and list see a problem too, and say what is there.
                let descriptor = dir.join(o.descriptor());
                let inspect = run(&dir, &["inspect", s(&descriptor)]);
                let list = run(&dir, &["list", s(&dir)]);
                for (what, out) in [("inspect", &inspect), ("list", &list)] {
                    let want = if what == "inspect" && ext == "json" {
                        2
                    } else {
                        1
                    };
                    assert_eq!(
                        out.status.code(),
                        Some(want),
                        "{}: {case}: {what}: {:?}",
                        o.name,
                        text(out)
                    );
                }
                let (_, err) = text(&inspect);
                let (shown, _) = text(&list);
                let all = format!("{err}{shown}{}", text(&inspect).0);
                assert!(
                    all.contains("not a regular file"),
                    "{}: {case}: no word of what is there:\n{all}",
                    o.name
                );
            }
        }
    }
    eprintln!("{cases} special files, each replayed, inspected and listed");
}

#[test]
fn huge_sparse_files_are_refused_before_a_byte_is_read() {
    let root = tempfile::tempdir().unwrap();
    for o in originals(root.path()) {
        for (ext, size) in [("globals", 3u64 << 30), ("image", 3 << 30)] {
            let dir = o.write(root.path(), 0);
            let path = dir.join(o.file(ext));
            std::fs::File::create(&path).unwrap().set_len(size).unwrap();
            let start = std::time::Instant::now();
            let out = run(&dir, &["replay", "--verify", s(&dir.join(o.descriptor()))]);
            assert_error(&out, &[&path.display().to_string(), "bytes at most"]);
            assert!(start.elapsed() < Duration::from_secs(10), "read whole?");
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
}

#[test]
fn running_out_of_memory_is_an_error_not_an_abort() {
    // The demo at 16 MiB under address-space limits from too little to
    // enough: each run succeeds or ends with exit 2 and a message, never an
    // abort ("memory allocation failed") or a signal.
    let root = tempfile::tempdir().unwrap();
    let mut outcomes = Vec::new();
    for mib in [40u64, 120, 160, 200, 250, 300, 400, 600] {
        let dir = root.path().join(mib.to_string());
        let out = run_within(
            root.path(),
            &["demo", "--size", "16M", "--dir", s(&dir)],
            mib << 10,
        );
        let (stdout, stderr) = text(&out);
        let code = out.status.code();
        assert!(
            matches!(code, Some(0 | 2)),
            "{mib} MiB: {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
            out.status
        );
        assert!(
            !stderr.contains("memory allocation") && !stderr.contains("panicked"),
            "{mib} MiB: {stderr}"
        );
        if code == Some(2) {
            assert!(stderr.contains("error: "), "{mib} MiB: {stderr}");
        }
        outcomes.push((mib, code));
    }
    assert!(
        outcomes.iter().any(|o| o.1 == Some(2)),
        "{outcomes:?}: no run ran short"
    );
    assert!(
        outcomes.iter().any(|o| o.1 == Some(0)),
        "{outcomes:?}: no run had enough"
    );
}

/// Rewrites the reprise capture's descriptor in `dir` through `edit` (on
/// its JSON).
fn edit_json(
    o: &Original,
    dir: &Path,
    edit: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>),
) {
    let path = dir.join(o.descriptor());
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    edit(v.as_object_mut().unwrap());
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
}

#[test]
fn a_damaged_checksum_map_never_disables_checking_silently() {
    let root = tempfile::tempdir().unwrap();
    let o = originals(root.path()).pop().unwrap();
    assert!(o.checksummed);
    let output = o.file("record_output").to_string();
    let flip_output = |dir: &Path| {
        let p = dir.join(&output);
        let mut b = std::fs::read(&p).unwrap();
        b[0] ^= 0x40;
        std::fs::write(&p, b).unwrap();
    };
    let mut case = 0;
    let mut fresh = || {
        case += 1;
        o.write(root.path(), case)
    };
    // "Chekksums": no checksums at all in a reprise descriptor, and an
    // output byte flipped: a corrupt capture (2), not a difference (1).
    let dir = fresh();
    edit_json(&o, &dir, |m| {
        let sums = m.remove("Checksums").unwrap();
        m.insert("Chekksums".into(), sums);
    });
    flip_output(&dir);
    let d = dir.join(o.descriptor());
    let out = run(&dir, &["replay", "--verify", s(&d)]);
    assert_error(&out, &[s(&d), "records no checksums", "--no-checksums"]);
    // Skipping checksums replays it, and finds the difference.
    assert_exit(
        &run(&dir, &["replay", "--verify", "--no-checksums", s(&d)]),
        1,
    );
    for cmd in ["inspect", "list"] {
        let target = if cmd == "list" { s(&dir) } else { s(&d) };
        let out = run(&dir, &[cmd, target]);
        assert_exit(&out, 1);
        assert!(
            text(&out).0.contains("records no checksums"),
            "{cmd}: {:?}",
            text(&out)
        );
    }

    // A mangled entry ("3input"): the input would go unchecked.
    let dir = fresh();
    edit_json(&o, &dir, |m| {
        let sums = m["Checksums"].as_object_mut().unwrap();
        let input = sums.remove("input").unwrap();
        sums.insert("3input".into(), input);
    });
    let d = dir.join(o.descriptor());
    assert_error(
        &run(&dir, &["replay", s(&d)]),
        &[s(&d), "Checksums names \"3input\"", "--no-checksums"],
    );
    assert_exit(&run(&dir, &["replay", "--no-checksums", s(&d)]), 0);

    // A map that covers only some files is valid; inspect says which are
    // unchecked.
    let dir = fresh();
    edit_json(&o, &dir, |m| {
        m["Checksums"].as_object_mut().unwrap().remove("output");
    });
    let d = dir.join(o.descriptor());
    assert_exit(&run(&dir, &["replay", "--verify", s(&d)]), 0);
    let out = run(&dir, &["inspect", s(&d)]);
    assert_exit(&out, 0);
    let line = text(&out)
        .0
        .lines()
        .find(|l| l.contains(&output))
        .unwrap()
        .to_string();
    assert!(line.contains("no checksum recorded"), "{line}");
}

#[test]
fn list_checks_checksums_as_it_promises() {
    let root = tempfile::tempdir().unwrap();
    let o = originals(root.path()).pop().unwrap();
    let dir = o.write(root.path(), 1);
    let p = dir.join(o.file("record_output"));
    let mut b = std::fs::read(&p).unwrap();
    b[7] ^= 1;
    std::fs::write(&p, b).unwrap();
    let out = run(&dir, &["list", s(&dir)]);
    assert_exit(&out, 1);
    assert!(
        text(&out).0.contains("checksum mismatch"),
        "{:?}",
        text(&out)
    );
    assert_exit(&run(&dir, &["list", "--no-checksums", s(&dir)]), 0);
}

#[test]
fn inspect_list_and_replay_agree_on_what_is_whole() {
    let root = tempfile::tempdir().unwrap();
    let o = originals(root.path()).pop().unwrap();
    let output = o.file("record_output").to_string();
    let input = o.file("record_input").to_string();
    type Damage = fn(&Path, &str, &str);
    let cases: [(&str, Damage, &str); 4] = [
        (
            "the recorded output missing, its checksum recorded",
            |dir, out, _| std::fs::remove_file(dir.join(out)).unwrap(),
            "the recorded output file is missing, though the descriptor records its checksum",
        ),
        (
            "the recorded output a directory",
            |dir, out, _| {
                std::fs::remove_file(dir.join(out)).unwrap();
                std::fs::create_dir(dir.join(out)).unwrap();
            },
            "is a directory, not a regular file",
        ),
        (
            "the recorded output /dev/zero",
            |dir, out, _| {
                std::fs::remove_file(dir.join(out)).unwrap();
                std::os::unix::fs::symlink("/dev/zero", dir.join(out)).unwrap();
            },
            "is a character device, not a regular file",
        ),
        (
            "output and input of different lengths",
            |dir, out, input| {
                let mut b = std::fs::read(dir.join(input)).unwrap();
                b.extend_from_slice(&[0; 16]);
                std::fs::write(dir.join(out), b).unwrap();
            },
            "recorded output snapshot is",
        ),
    ];
    for (i, (case, damage, needle)) in cases.into_iter().enumerate() {
        let dir = o.write(root.path(), i);
        damage(&dir, &output, &input);
        let d = dir.join(o.descriptor());
        let replay = run(&dir, &["replay", "--verify", s(&d)]);
        assert_error(&replay, &[needle]);
        for cmd in ["inspect", "list"] {
            let target = if cmd == "list" { s(&dir) } else { s(&d) };
            let out = run(&dir, &[cmd, target]);
            assert_exit(&out, 1);
            assert!(
                text(&out).0.contains(needle),
                "{case}: {cmd} does not say {needle:?}: {:?}",
                text(&out)
            );
        }
    }
}

/// Where `child_records_until_killed` writes its captures.
const KILL_DIR: &str = "REPRISE_TEST_KILL_DIR";

#[test]
#[ignore = "run by killed_mid_recording_leaves_whole_captures_or_orphans in a child it kills"]
fn child_records_until_killed() {
    let Some(dir) = std::env::var_os(KILL_DIR) else {
        return;
    };
    let config = reprise::RecordConfig::default()
        .enabled(true)
        .dir(PathBuf::from(dir))
        .region_size(64 << 20);
    // Launches of a kernel over 4 MiB, recorded until the parent kills us.
    loop {
        record_axpy(config.clone(), 1 << 19, 8);
    }
}

#[test]
fn killed_mid_recording_leaves_whole_captures_or_orphans() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("captures");
    std::fs::create_dir(&dir).unwrap();
    let me = std::env::current_exe().unwrap();
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64
        | 1;
    let mut points = Vec::new();
    for _ in 0..30 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let after = Duration::from_millis(60 + seed % 440);
        let mut child = Command::new(&me)
            .args([
                "--ignored",
                "--exact",
                "child_records_until_killed",
                "--nocapture",
            ])
            .env(KILL_DIR, &dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(after);
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        points.push((after.as_millis(), status.code().is_none()));
    }
    assert!(
        points.iter().filter(|p| p.1).count() >= 25,
        "most children should have died mid-recording: {points:?}"
    );
    // Whole captures and orphans only: list finds no broken or incomplete
    // capture, and every capture replays and verifies.
    let out = run(&dir, &["list", s(&dir)]);
    let (stdout, _) = text(&out);
    assert_exit(&out, 0);
    let summary = stdout.lines().last().unwrap().to_string();
    assert!(
        summary.contains("(0 incomplete), 0 unreadable"),
        "{summary}"
    );
    let captures: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    assert!(
        !captures.is_empty(),
        "nothing was recorded before the kills"
    );
    for c in &captures {
        assert_exit(&run(&dir, &["replay", "--verify", s(c)]), 0);
    }
    // Recording in that directory works again.
    let config = reprise::RecordConfig::default()
        .enabled(true)
        .dir(&dir)
        .region_size(64 << 20);
    assert_eq!(record_axpy(config, 1024, 1).len(), 1);
    eprintln!(
        "{} kills mid-recording at {:?} ms; {} whole captures replayed; {summary}",
        points.len(),
        points.iter().map(|p| p.0).collect::<Vec<_>>(),
        captures.len()
    );
}
