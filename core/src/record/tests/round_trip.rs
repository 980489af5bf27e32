//! Descriptors read and written back: LLVM's golden key sets byte for byte,
//! every reprise field, sorted keys, and whatever is written reading back.

extern crate std;

use super::*;

#[test]
fn legacy_golden() {
    let r = KernelRecord::from_json(LEGACY).unwrap();
    assert_eq!(r.generation, Generation::LlvmLegacy);
    assert_eq!(r.name.as_str(), "__omp_offloading_fd00_2b5b6e0_main_l12");
    assert_eq!(r.grid, [8, 1, 1]);
    assert_eq!(r.block, [128, 1, 1]);
    assert_eq!(r.memory_size, Some(8224));
    assert_eq!(r.region_base, Some(140737353891840));
    assert_eq!(r.loop_trip_count, 1024);
    assert_eq!(r.arg_value(2), 1024);
    // Written back in the legacy key set, byte for byte.
    assert_eq!(write(&r, Generation::LlvmLegacy).as_bytes(), LEGACY);
}

#[test]
fn current_golden() {
    let r = KernelRecord::from_json(CURRENT).unwrap();
    assert_eq!(r.generation, Generation::LlvmCurrent);
    assert_eq!(r.device_id, 1);
    assert_eq!(r.arg_ptrs.as_slice(), &[23335839465472, -1]);
    assert_eq!(r.arg_value(1), u64::MAX);
    assert_eq!(r.shared_mem, 64);
    assert_eq!(r.threads_limits, Some([1, 1024]));
    assert_eq!(r.region_size, Some(68719476736));
    assert_eq!(r.memory_size, None);
    assert_eq!(write(&r, Generation::LlvmCurrent).as_bytes(), CURRENT);
}

#[test]
fn reprise_round_trip_with_every_field() {
    let mut r = KernelRecord::new("_Z5mixedifS_").unwrap();
    r.push_arg(0x7e00_0000_0010).unwrap();
    r.push_arg_bytes(&7i32.to_le_bytes()).unwrap();
    r.push_arg_bytes(&1.5f32.to_le_bytes()).unwrap();
    r.push_arg_bytes(&[0xAB; 24]).unwrap();
    r.grid = [4, 2, 1];
    r.block = [32, 8, 2];
    r.shared_mem = 1024;
    r.region_base = Some(0x7e00_0000_0000);
    r.region_size = Some(1 << 30);
    r.memory_size = Some(4096);
    r.backend = Some(BackendKind::Cuda);
    r.launch_seq = Some(3);
    r.checksums.input = Some(0x0123_4567_89ab_cdef);
    r.checksums.image = Some(u64::MAX);
    let text = write(&r, Generation::Reprise);
    assert!(text.starts_with(r#"{"ArgData":"abababab"#), "{text}");
    assert!(text.contains(r#""ArgSizes":[8,4,4,24]"#), "{text}");
    assert!(
        text.contains(r#""Checksums":{"image":"ffffffffffffffff","input":"0123456789abcdef"}"#),
        "{text}"
    );
    let back = KernelRecord::from_json(text.as_bytes()).unwrap();
    assert_eq!(back, r);
    let mut scratch = [0u8; 8];
    assert_eq!(back.arg_bytes(1, &mut scratch), &7i32.to_le_bytes());
    assert_eq!(back.arg_bytes(3, &mut scratch), &[0xAB; 24]);
}

#[test]
fn argument_allocations_round_trip_and_must_hold_their_arguments() {
    let mut r = KernelRecord::new("saxpy").unwrap();
    let base = 0x7e00_0000_0000u64;
    r.push_arg_bytes(&1.5f32.to_le_bytes()).unwrap();
    r.push_arg(base + 0x10).unwrap();
    r.push_arg(base + 0x9d00 + 8).unwrap();
    r.region_base = Some(base);
    r.region_size = Some(1 << 30);
    r.memory_size = Some(0x20000);
    r.arg_allocations.push([1, 0, 40000]).unwrap();
    r.arg_allocations.push([2, 0x9d00, 40000]).unwrap();
    let text = write(&r, Generation::Reprise);
    assert!(
        text.starts_with(r#"{"ArgAllocations":[[1,0,40000],[2,40192,40000]],"#),
        "{text}"
    );
    let back = KernelRecord::from_json(text.as_bytes()).unwrap();
    assert_eq!(back, r);
    assert_eq!(back.arg_allocation(2), Some((0x9d00, 40000)));
    assert_eq!(back.arg_allocation(0), None);
    // LLVM's key sets have no such key.
    assert!(!write(&r, Generation::LlvmCurrent).contains("ArgAllocations"));
    // An allocation its argument no longer points into (the argument
    // changed by hand) is read, and is no allocation of that argument.
    let mut moved = r.clone();
    moved.arg_allocations = [[1u64, 0x20, 16]].into_iter().collect();
    let mut buf = [0u8; MAX_JSON_LEN];
    let n = moved.to_json(Generation::Reprise, &mut buf).unwrap();
    let back = KernelRecord::from_json(&buf[..n]).unwrap();
    assert_eq!(back.arg_allocation(1), None);
    // An allocation that runs past the snapshot, is empty, names no
    // argument or repeats one: refused both ways.
    let bad = RecordError::BadValue("ArgAllocations");
    for entries in [
        &[[2u64, 0x9d00, 0x20000]][..],
        &[[1, 0, 0]],
        &[[3, 0, 16]],
        &[[2, 0x9d00, 16], [1, 0, 16]],
    ] {
        let mut w = r.clone();
        w.arg_allocations = entries.iter().copied().collect();
        let mut buf = [0u8; MAX_JSON_LEN];
        assert_eq!(
            w.to_json(Generation::Reprise, &mut buf),
            Err(bad),
            "{entries:?}"
        );
        let mut json = text.clone();
        let list: std::vec::Vec<std::string::String> = entries
            .iter()
            .map(|e| std::format!("{e:?}").replace(' ', ""))
            .collect();
        json = json.replacen(
            "[[1,0,40000],[2,40192,40000]]",
            &std::format!("[{}]", list.join(",")),
            1,
        );
        assert_eq!(KernelRecord::from_json(json.as_bytes()), Err(bad), "{json}");
    }
}

#[test]
fn keys_are_sorted_in_reprise_output() {
    let mut r = KernelRecord::from_json(CURRENT).unwrap();
    r.memory_size = Some(10);
    r.launch_seq = Some(1);
    r.backend = Some(BackendKind::Host);
    let text = write(&r, Generation::Reprise);
    let mut keys = std::vec::Vec::new();
    let mut depth = 0;
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth -= 1,
            b'"' => {
                let end = i + 1 + b[i + 1..].iter().position(|&c| c == b'"').unwrap();
                if depth == 1 && b[end + 1] == b':' {
                    keys.push(&text[i + 1..end]);
                }
                i = end;
            }
            _ => {}
        }
        i += 1;
    }
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    assert!(keys.contains(&"RepriseFormat"));
}

#[test]
fn unknown_keys_are_ignored() {
    let json = br#"{"Extra":{"a":[1,{"b":"c"}]},"ArgOffsets":[],"ArgPtrs":[],"Name":"k","NumArgs":0,"NumTeams":1,"NumThreads":1,"VAllocAddr":4096,"Zed":true}"#;
    let r = KernelRecord::from_json(json).unwrap();
    assert_eq!(r.name.as_str(), "k");
    assert_eq!(r.num_args(), 0);
}

#[test]
fn escaped_names_are_unescaped() {
    let json = br#"{"ArgOffsets":[],"ArgPtrs":[],"Name":"a\"b","NumArgs":0,"NumTeams":1,"NumThreads":1,"VAllocAddr":4096}"#;
    assert_eq!(KernelRecord::from_json(json).unwrap().name.as_str(), "a\"b");
}

#[test]
fn whatever_is_written_reads_back() {
    let mut base = KernelRecord::from_json(CURRENT).unwrap();
    base.memory_size = Some(64);
    let mut cases = std::vec::Vec::new();
    let mut edit = |f: &dyn Fn(&mut KernelRecord)| {
        let mut r = base.clone();
        f(&mut r);
        cases.push(r);
    };
    edit(&|_| {});
    edit(&|r| r.region_base = None);
    edit(&|r| r.region_base = Some(0));
    edit(&|r| r.region_size = Some(MAX_REGION_SIZE + 1));
    edit(&|r| r.region_base = Some(u64::MAX - 4095));
    edit(&|r| r.memory_size = Some(u64::MAX));
    edit(&|r| r.memory_size = None);
    edit(&|r| r.grid = [0, 1, 1]);
    edit(&|r| r.block = [0, 1, 1]);
    edit(&|r| r.grid = [4, 0, 1]);
    edit(&|r| r.block = [32, 1, 0]);
    edit(&|r| r.format_version = Some(0));
    edit(&|r| r.format_version = Some(FORMAT_VERSION + 1));
    edit(&|r| {
        r.arg_offsets.pop();
    });
    edit(&|r| {
        let _ = r.arg_sizes.push(8);
    });
    edit(&|r| r.arg_sizes = [8, 0].iter().copied().collect());
    edit(&|r| r.arg_sizes = [8, 16].iter().copied().collect());
    edit(&|r| r.arg_sizes = [8, 100_000].iter().copied().collect());
    let mut written = 0;
    for r in &cases {
        for g in [
            Generation::LlvmLegacy,
            Generation::LlvmCurrent,
            Generation::Reprise,
        ] {
            let mut buf = [0u8; MAX_JSON_LEN];
            let Ok(n) = r.to_json(g, &mut buf) else {
                continue;
            };
            written += 1;
            let text = core::str::from_utf8(&buf[..n]).unwrap();
            let back = KernelRecord::from_json(&buf[..n]);
            assert!(back.is_ok(), "{g} wrote {text}, read back as {back:?}");
        }
    }
    // Not everything was refused.
    assert!(written > cases.len(), "{written}");
}
