//! Damaged descriptors and data files, each replayed: descriptors cut at
//! every JSON boundary, keys mangled or given lying and ill-typed values,
//! nesting 150,000 deep; globals cut and flipped at every byte, snapshots a
//! byte short or long, flipped or empty, images cut and changed.

use crate::common::*;
use crate::{Damages, ISOLATED_CRASHES, check, originals, run};

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
