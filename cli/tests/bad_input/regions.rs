//! The recorded region: its address already mapped (in this process, or in
//! the replaying one), and its size and base checked against the snapshot and
//! the address space.

use reprise::core::record::{Generation, MAX_REGION_SIZE};
use serde_json::json;

use crate::common::*;
use crate::{BASE, current, legacy, set_keys, sibling};

#[test]
fn region_address_already_mapped_is_reported() {
    use reprise::core::exec::{DeviceRegion, Executor, RegionRequest};
    let dir = tempfile::tempdir().unwrap();
    let exec = reprise::HostExecutor::new().unwrap();
    // Hold a region in this process, then replay a capture recorded there.
    let held = exec.reserve(RegionRequest::new(None, 1 << 20)).unwrap();
    let f = llvm_fixture(dir.path(), Generation::LlvmLegacy, held.base(), 64);
    let capture = reprise::Capture::open(&f.descriptor).unwrap();
    let err = reprise::block_on(std::future::IntoFuture::into_future(reprise::replay(
        &capture,
    )))
    .unwrap_err();
    let text = err.to_string();
    assert!(text.contains(&format!("{:#x}", held.base())), "{text}");
    let cause = std::error::Error::source(&err)
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(cause.contains("already mapped"), "{cause}");
    drop(held);
    // Once released, the same capture replays.
    let ok = reprise::block_on(std::future::IntoFuture::into_future(
        reprise::replay(&capture).verify(true),
    ))
    .unwrap();
    assert!(ok.verification.unwrap().is_match());
}

#[test]
fn region_address_taken_in_the_replaying_process_exits_2() {
    // Without address randomisation the executable is mapped at a known
    // address; a capture recorded "there" cannot get its region.
    let Ok(out) = std::process::Command::new("setarch")
        .args(["x86_64", "-R", "true"])
        .output()
    else {
        crate::common::skip("setarch is not installed", Some("util-linux"));
        return;
    };
    if !out.status.success() {
        crate::common::skip(
            "this machine refuses to disable address randomisation",
            None,
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let f = llvm_fixture(dir.path(), Generation::LlvmLegacy, 0x5555_5555_4000, 64);
    let out = std::process::Command::new("setarch")
        .args(["x86_64", "-R"])
        .arg(reprise_bin())
        .args(["replay", s(&f.descriptor)])
        .output()
        .unwrap();
    assert_error(&out, &["0x555555554000", "already mapped"]);
}

#[test]
fn region_sizes_and_bases_are_checked() {
    // LLVM current: the snapshot's length is its file's.
    let dir = tempfile::tempdir().unwrap();
    let f = current(dir.path());
    let input = sibling(&f.descriptor, "record_input");
    let len = std::fs::metadata(&input).unwrap().len();
    set_keys(&f.descriptor, json!({ "VAllocSize": 1024 }));
    assert_error(
        &reprise(&["replay", s(&f.descriptor)]),
        &[
            &format!("{}: the memory snapshot", f.descriptor.display()),
            &format!("{} is {len} bytes", input.display()),
            "larger than the recorded region (VAllocSize 1024 bytes)",
        ],
    );
    // reprise's own format says the snapshot's length itself.
    set_keys(
        &f.descriptor,
        json!({ "RepriseFormat": 1, "DeviceMemorySize": 4 << 20, "VAllocSize": 4096 }),
    );
    for cmd in ["replay", "inspect"] {
        assert_error(
            &reprise(&[cmd, s(&f.descriptor)]),
            &["DeviceMemorySize 4194304 is larger than VAllocSize 4096"],
        );
    }

    let dir = tempfile::tempdir().unwrap();
    let f = current(dir.path());
    let name = f.descriptor.display().to_string();
    for (keys, needle) in [
        (
            json!({ "VAllocSize": 1u64 << 62 }),
            format!(
                "VAllocSize 4611686018427387904 is larger than any address space reprise replays \
                 into ({MAX_REGION_SIZE} bytes at most)"
            ),
        ),
        (
            json!({ "VAllocAddr": 0xffff_ffff_fff0_0000u64, "VAllocSize": 1 << 30 }),
            "the region at 0xfffffffffff00000 of VAllocSize 1073741824 bytes runs past the end \
             of the address space"
                .to_string(),
        ),
        (
            json!({ "VAllocAddr": 0 }),
            "VAllocAddr 0: the region has no address".to_string(),
        ),
    ] {
        set_keys(&f.descriptor, keys);
        for cmd in ["replay", "inspect"] {
            assert_error(
                &reprise(&[cmd, s(&f.descriptor)]),
                &[&format!("{name}: {needle}")],
            );
        }
        set_keys(
            &f.descriptor,
            json!({ "VAllocAddr": BASE, "VAllocSize": 64u64 << 30 }),
        );
    }
    // LLVM's default 64 GiB reservation is fine.
    assert_exit(&reprise(&["replay", "--verify", s(&f.descriptor)]), 0);

    let dir = tempfile::tempdir().unwrap();
    let f = legacy(dir.path());
    set_keys(&f.descriptor, json!({ "BumpAllocVAStart": 0 }));
    assert_error(
        &reprise(&["replay", s(&f.descriptor)]),
        &["axpy.json: BumpAllocVAStart 0: the region has no address"],
    );
}

#[test]
fn a_region_base_in_the_first_page_is_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let f = current(dir.path());
    // VAllocAddr 1: reserved from its page, the region would be at 0.
    set_keys(&f.descriptor, json!({ "VAllocAddr": 1 }));
    let d = f.descriptor.to_str().unwrap();
    let out = reprise(&["inspect", d]);
    assert_exit(&out, 1);
    assert!(
        text(&out)
            .0
            .contains("region base 0x1 lies in the first page"),
        "{}",
        text(&out).0
    );
    let out = reprise(&["replay", d]);
    assert_error(&out, &["region base 0x1 lies in the first page"]);
    assert!(!text(&out).1.contains("0x0 is not"), "{}", text(&out).1);
}
