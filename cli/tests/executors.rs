//! `replay(&capture).await` works under any async executor: tokio, smol,
//! futures' `block_on`, the core's allocation-free `block_on` and the std
//! adapter's parking one; and the future is `Send` (tokio can spawn it).

mod common;

use common::*;
use reprise::Capture;
use reprise::core::record::Generation;

fn fixture(dir: &std::path::Path, slot: u64) -> Capture {
    // Each test uses its own address so they can run in parallel.
    let f = llvm_fixture(
        dir,
        Generation::LlvmLegacy,
        0x1600_0000_0000 + slot * (1 << 31),
        512,
    );
    Capture::open(&f.descriptor).unwrap()
}

fn check(o: reprise::Result<reprise::Outcome>) {
    let o = o.unwrap();
    assert!(o.verification.unwrap().is_match());
    assert_eq!(o.times.len(), 2);
}

#[test]
fn under_tokio_and_spawned() {
    let dir = tempfile::tempdir().unwrap();
    let capture = std::sync::Arc::new(fixture(dir.path(), 0));
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        check(reprise::replay(&capture).verify(true).repetitions(2).await);
        let c = capture.clone();
        let handle =
            tokio::spawn(async move { reprise::replay(&c).verify(true).repetitions(2).await });
        check(handle.await.unwrap());
    });
}

#[test]
fn under_smol() {
    let dir = tempfile::tempdir().unwrap();
    let capture = fixture(dir.path(), 1);
    check(smol::block_on(async {
        reprise::replay(&capture).verify(true).repetitions(2).await
    }));
}

#[test]
fn under_futures_block_on() {
    let dir = tempfile::tempdir().unwrap();
    let capture = fixture(dir.path(), 2);
    check(futures::executor::block_on(async {
        reprise::replay(&capture).verify(true).repetitions(2).await
    }));
}

#[test]
fn under_the_cores_block_on() {
    let dir = tempfile::tempdir().unwrap();
    let capture = fixture(dir.path(), 3);
    check(reprise::core::block_on(async {
        reprise::replay(&capture).verify(true).repetitions(2).await
    }));
}

#[test]
fn under_the_std_adapters_block_on() {
    let dir = tempfile::tempdir().unwrap();
    let capture = fixture(dir.path(), 4);
    check(reprise::block_on(async {
        reprise::replay(&capture).verify(true).repetitions(2).await
    }));
}
