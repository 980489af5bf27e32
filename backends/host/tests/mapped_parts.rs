//! Buffers and regions built of several files' mappings
//! (`Executor::buffer_mapped_parts`, `Executor::reserve_mapped_parts`):
//! each part holds its file's bytes, the rest is zero, writes never reach
//! the files, and a part that is not page-aligned or does not fit is
//! refused (`Ok(None)`, the caller reads instead).

use std::fs::File;
use std::future::poll_fn;
use std::os::fd::AsRawFd;
use std::path::PathBuf;

use reprise_core::block_on;
use reprise_core::exec::{DeviceRegion, Executor, MapPart, Queue, RegionRequest, Segment};
use reprise_host::HostExecutor;

/// A file of `bytes` in the temporary directory, removed when dropped.
struct TempFile {
    path: PathBuf,
    file: File,
}

impl TempFile {
    fn new(tag: &str, bytes: &[u8]) -> Self {
        let path = std::env::temp_dir().join(format!(
            "reprise-host-parts-{}-{tag}-{:x}",
            std::process::id(),
            bytes.len()
        ));
        std::fs::write(&path, bytes).unwrap();
        let file = File::open(&path).unwrap();
        TempFile { path, file }
    }

    fn part(&self, offset: u64, len: u64) -> MapPart {
        MapPart {
            fd: self.file.as_raw_fd(),
            offset,
            len,
        }
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) | 1)
        .collect()
}

#[test]
fn a_buffer_of_mapped_parts_holds_each_file_and_zeros_between() {
    let exec = HostExecutor::new().unwrap();
    let page = exec.map_granularity().unwrap();
    let p = page as usize;
    let a_bytes = pattern(2 * p, 1);
    let b_bytes = pattern(p + 10, 2);
    let a = TempFile::new("a", &a_bytes);
    let b = TempFile::new("b", &b_bytes);
    let len = 5 * p + 100;
    let parts = [a.part(0, 2 * page), b.part(3 * page, page)];
    let mut buf = exec.buffer_mapped_parts(len, &parts).unwrap().unwrap();
    let bytes = buf.as_ref();
    assert_eq!(bytes.len(), len);
    assert_eq!(&bytes[..2 * p], &a_bytes[..]);
    assert!(bytes[2 * p..3 * p].iter().all(|&x| x == 0));
    assert_eq!(&bytes[3 * p..4 * p], &b_bytes[..p]);
    assert!(bytes[4 * p..].iter().all(|&x| x == 0));
    // Written to: copy-on-write, the files stay as they are.
    buf.as_mut()[5] ^= 0xff;
    buf.as_mut()[3 * p + 1] ^= 0xff;
    buf.as_mut()[len - 1] = 7;
    drop(buf);
    assert_eq!(std::fs::read(&a.path).unwrap(), a_bytes);
    assert_eq!(std::fs::read(&b.path).unwrap(), b_bytes);
}

#[test]
fn parts_that_are_not_whole_pages_inside_the_buffer_are_refused() {
    let exec = HostExecutor::new().unwrap();
    let page = exec.map_granularity().unwrap();
    let f = TempFile::new("c", &pattern(4 * page as usize, 3));
    let len = 4 * page as usize;
    for parts in [
        [f.part(page / 2, page)],
        [f.part(0, page + 1)],
        [f.part(0, 0)],
        [f.part(3 * page, 2 * page)],
        [f.part(u64::MAX - page + 1, page)],
    ] {
        assert!(
            exec.buffer_mapped_parts(len, &parts).unwrap().is_none(),
            "{parts:?}"
        );
    }
    assert!(exec.buffer_mapped_parts(0, &[]).unwrap().is_none());
}

#[test]
fn a_region_of_mapped_parts_holds_each_file_at_its_offset() {
    let exec = HostExecutor::new().unwrap();
    let page = exec.map_granularity().unwrap();
    let p = page as usize;
    let a_bytes = pattern(p, 4);
    let a = TempFile::new("d", &a_bytes);
    let base = 0x3000_0000_0000u64;
    let len = 3 * page;
    let request = RegionRequest::new(Some(base), 1 << 30).backed(len);
    // Not inside the backed bytes: refused, nothing reserved.
    assert!(
        exec.reserve_mapped_parts(request, &[a.part(3 * page, page)])
            .unwrap()
            .is_none()
    );
    let region = exec
        .reserve_mapped_parts(request, &[a.part(page, page)])
        .unwrap()
        .unwrap();
    assert_eq!(region.base(), base);
    let mut q = exec.queue().unwrap();
    let out = exec.buffer(len as usize).unwrap();
    q.download(
        out,
        &[Segment {
            device: base,
            host_offset: 0,
            len: len as usize,
        }],
    )
    .unwrap();
    block_on(poll_fn(|cx| q.poll_synchronize(cx))).unwrap();
    let (_, out) = q.reclaim().unwrap();
    let bytes = out.as_ref();
    assert!(bytes[..p].iter().all(|&x| x == 0));
    assert_eq!(&bytes[p..2 * p], &a_bytes[..]);
    assert!(bytes[2 * p..].iter().all(|&x| x == 0));
    drop(q);
    drop(region);
    // Released: the address can be had again.
    let again = exec.reserve(RegionRequest::new(Some(base), len)).unwrap();
    assert_eq!(again.base(), base);
}
