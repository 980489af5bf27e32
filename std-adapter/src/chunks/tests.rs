//! Unit tests of the chunk store's formats: manifests (and every way a
//! hostile one is refused), `VERSION`, names.

use super::layout::{self, StoreVersion};
use super::manifest::{ENTRY_LEN, HEADER_LEN, MAGIC, TRAILER_LEN};
use super::*;

const CS: u32 = 4096;

/// `body` (a manifest without its checksum) sealed with a right one.
fn sealed(mut body: Vec<u8>) -> Vec<u8> {
    let sum = blake3::hash(&body);
    body.extend_from_slice(sum.as_bytes());
    body
}

/// A manifest's bytes with its header fields set, its entries as given,
/// sealed.
fn raw(total: u64, chunk_size: u32, count: u32, entries: &[(ChunkHash, u32)]) -> Vec<u8> {
    let mut b = MAGIC.to_vec();
    b.extend_from_slice(&1u32.to_le_bytes());
    b.extend_from_slice(&total.to_le_bytes());
    b.extend_from_slice(&chunk_size.to_le_bytes());
    b.extend_from_slice(&count.to_le_bytes());
    for (h, l) in entries {
        b.extend_from_slice(&h.0);
        b.extend_from_slice(&l.to_le_bytes());
    }
    sealed(b)
}

#[test]
fn manifests_round_trip_at_every_edge_of_a_chunk() {
    let cs = CS as usize;
    for len in [0, 1, cs - 1, cs, cs + 1, 3 * cs, 5 * cs + 7] {
        let data: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
        let m = Manifest::cut(&data, CS).unwrap();
        assert_eq!(m.len(), len as u64);
        assert_eq!(m.chunks().len(), len.div_ceil(cs));
        let bytes = m.encode();
        assert_eq!(bytes.len(), m.encoded_len());
        assert_eq!(
            bytes.len(),
            HEADER_LEN + ENTRY_LEN * m.chunks().len() + TRAILER_LEN
        );
        let back = Manifest::decode(&bytes).unwrap();
        assert_eq!(back, m);
        assert_eq!(back.encode(), bytes);
        for (i, c) in m.chunks().iter().enumerate() {
            let at = m.offset_of(i) as usize;
            assert_eq!(c.hash, ChunkHash::of(&data[at..at + c.len as usize]));
        }
    }
}

#[test]
fn hostile_manifests_are_refused_with_what_is_wrong() {
    use ManifestError as E;
    let h = ChunkHash::of(b"chunk");
    let good = raw(5000, CS, 2, &[(h, CS), (h, 904)]);
    assert!(Manifest::decode(&good).is_ok());

    // Truncated: anywhere, by any amount.
    for cut in [0, 1, 27, 59] {
        assert_eq!(
            Manifest::decode(&good[..cut]),
            Err(E::Truncated {
                len: cut as u64,
                min: 60
            })
        );
    }
    assert!(matches!(
        Manifest::decode(&good[..good.len() - 1]),
        Err(E::CountMismatch { count: 2, .. })
    ));
    // Another magic, another version.
    let mut b = good.clone();
    b[0] ^= 1;
    assert_eq!(Manifest::decode(&b), Err(E::NotAManifest));
    let mut b = good.clone();
    b[8] = 2;
    assert_eq!(
        Manifest::decode(&b),
        Err(E::UnsupportedVersion {
            found: 2,
            supported: 1
        })
    );
    // A lying count: more chunks than the file holds (u32::MAX of them in
    // 132 bytes: refused before anything is sized by it), or fewer.
    for count in [3, u32::MAX, 1, 0] {
        let b = raw(5000, CS, count, &[(h, CS), (h, 904)]);
        assert_eq!(
            Manifest::decode(&b),
            Err(E::CountMismatch {
                count,
                needs: 60 + 36 * u64::from(count),
                len: b.len() as u64
            })
        );
    }
    // A damaged entry: the checksum.
    let mut b = good.clone();
    b[HEADER_LEN + 3] ^= 0x40;
    assert_eq!(Manifest::decode(&b), Err(E::Checksum));
    // Lying lengths, checksum and all.
    assert_eq!(
        Manifest::decode(&raw(u64::MAX, CS, 2, &[(h, CS), (h, 904)])),
        Err(E::CountForLength {
            count: 2,
            total: u64::MAX,
            chunk_size: CS
        })
    );
    assert_eq!(
        Manifest::decode(&raw(5000, CS, 2, &[(h, CS), (h, 905)])),
        Err(E::ChunkLength {
            index: 1,
            found: 905,
            expected: 904
        })
    );
    assert_eq!(
        Manifest::decode(&raw(5000, CS, 2, &[(h, 904), (h, CS)])),
        Err(E::ChunkLength {
            index: 0,
            found: 904,
            expected: CS
        })
    );
    assert_eq!(
        Manifest::decode(&raw(0, 0, 0, &[])),
        Err(E::ChunkSize {
            found: 0,
            min: layout::MIN_CHUNK_SIZE,
            max: layout::MAX_CHUNK_SIZE
        })
    );
    assert_eq!(
        Manifest::decode(&raw(1, u32::MAX, 1, &[(h, 1)])),
        Err(E::ChunkSize {
            found: u32::MAX,
            min: layout::MIN_CHUNK_SIZE,
            max: layout::MAX_CHUNK_SIZE
        })
    );
    // Every message names the problem.
    let e = Manifest::decode(&raw(5000, CS, 2, &[(h, CS), (h, 905)])).unwrap_err();
    assert_eq!(
        e.to_string(),
        "manifest chunk 1 says 905 bytes where its place takes 904 (a lying length)"
    );
}

#[test]
fn the_version_file_reads_back_and_refuses_what_it_does_not_know() {
    use VersionProblem as V;
    let v = StoreVersion {
        chunk_size: layout::DEFAULT_CHUNK_SIZE,
    };
    let text = v.to_text();
    assert_eq!(
        text,
        "reprise-chunk-store 1\nhash blake3\ncompression zstd\nchunk-size 1048576\n"
    );
    assert_eq!(StoreVersion::parse(text.as_bytes()), Ok(v));
    let parse = |t: &str| StoreVersion::parse(t.as_bytes());
    assert_eq!(
        parse("reprise-chunk-store 2\n"),
        Err(V::UnsupportedVersion {
            found: "2".into(),
            supported: 1
        })
    );
    assert_eq!(parse("something else\n"), Err(V::NotAStore));
    assert_eq!(
        parse("reprise-chunk-store 1\nhash sha256\ncompression zstd\nchunk-size 4096\n"),
        Err(V::Unsupported {
            key: "hash",
            found: "sha256".into()
        })
    );
    assert_eq!(
        parse("reprise-chunk-store 1\nhash blake3\nchunk-size 4096\n"),
        Err(V::MissingKey { key: "compression" })
    );
    assert_eq!(
        parse("reprise-chunk-store 1\nhash blake3\ncompression zstd\nchunk-size 12\n"),
        Err(V::BadChunkSize {
            found: "12".into(),
            min: layout::MIN_CHUNK_SIZE,
            max: layout::MAX_CHUNK_SIZE
        })
    );
    assert!(matches!(
        parse("reprise-chunk-store 1\nhash blake3\nhash blake3\n"),
        Err(V::UnknownLine { .. })
    ));
    assert!(matches!(
        parse("reprise-chunk-store 1\nhash blake3\ncompression zstd\nchunk-size 4096\ndict x\n"),
        Err(V::UnknownLine { .. })
    ));
}

#[test]
fn names_of_manifests_and_chunks() {
    assert!(layout::is_manifest_name(b"k-1-0.record_input.chunks"));
    assert!(!layout::is_manifest_name(b".chunks"));
    assert!(!layout::is_manifest_name(
        b".reprise-tmp.k.record_input.chunks.0123456789abcdef"
    ));
    assert!(!layout::is_manifest_name(b"k-1-0.record_input"));
    let h = ChunkHash::of(b"abc");
    let hex = h.to_string();
    assert_eq!(
        layout::chunk_path(&h),
        std::path::Path::new("chunks").join(&hex[..2]).join(&hex)
    );
    assert_eq!(ChunkHash::from_hex(&hex), Some(h));
    assert_eq!(ChunkHash::from_hex(&hex.to_uppercase()), None);
    assert_eq!(ChunkHash::from_hex(&hex[1..]), None);
}

#[test]
fn raw_frames_are_zstd_frames_of_the_bytes() {
    let block = 128 << 10;
    for len in [
        0,
        1,
        100,
        block - 1,
        block,
        block + 1,
        8 * block,
        8 * block + 3,
    ] {
        let data: Vec<u8> = (0..len).map(|i| (i * 131 % 251) as u8).collect();
        let mut frame = Vec::new();
        layout::raw_frame(&data, &mut frame);
        assert_eq!(
            zstd::zstd_safe::get_frame_content_size(&frame).ok(),
            Some(Some(len as u64))
        );
        assert!(frame.len() <= zstd::zstd_safe::compress_bound(len), "{len}");
        let mut back = vec![0u8; len];
        let n = zstd::bulk::Decompressor::new()
            .unwrap()
            .decompress_to_buffer(&frame, &mut back)
            .unwrap();
        assert_eq!(n, len);
        assert_eq!(back, data, "{len}");
    }
}

#[test]
fn chunks_that_hardly_compress_are_stored_raw_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let store = ChunkStore::create(dir.path(), StoreOptions::default()).unwrap();
    // Noise (xorshift): zstd saves nothing; and zeros, which it does.
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut noise = vec![0u8; 3 << 20];
    for b in noise.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        b.copy_from_slice(&x.to_le_bytes());
    }
    let zeros = vec![0u8; 1 << 20];
    for (data, raw) in [(&noise, true), (&zeros, false)] {
        let m = store.put(data).unwrap();
        for c in m.chunks() {
            let on_disk = std::fs::metadata(store.chunk_file(&c.hash)).unwrap().len();
            // A raw frame: the bytes, a 13-byte header and 3 bytes a block.
            let framed = u64::from(c.len) + 13 + 3 * u64::from(c.len).div_ceil(128 << 10);
            assert_eq!(on_disk == framed, raw, "{on_disk} of {}", c.len);
        }
        let mut back = vec![1u8; data.len()];
        store.read_into(&m, &mut back).unwrap();
        assert_eq!(&back, data);
        assert!(store.check(&m).is_empty());
    }
}

#[test]
fn a_damaged_raw_chunk_is_named() {
    use std::os::unix::fs::{FileExt, PermissionsExt};
    let dir = tempfile::tempdir().unwrap();
    let store = ChunkStore::create(dir.path(), StoreOptions::default()).unwrap();
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut noise = vec![0u8; 2 << 20];
    for b in noise.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        b.copy_from_slice(&x.to_le_bytes());
    }
    let m = store.put(&noise).unwrap();
    let c = m.chunks()[1];
    let path = store.chunk_file(&c.hash);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.write_all_at(b"damaged", 5000).unwrap();
    drop(f);
    let mut back = vec![0u8; noise.len()];
    let e = store.read_into(&m, &mut back).unwrap_err();
    match e.store_problem() {
        Some(crate::error::StoreProblem::Chunk(p)) => {
            assert_eq!(p.index, 1);
            assert_eq!(p.hash, c.hash);
            assert!(matches!(p.fault, ChunkFault::HashMismatch { .. }), "{p:?}");
        }
        other => panic!("not a chunk problem: {other:?}"),
    }
    let fresh = ChunkStore::open(dir.path()).unwrap().unwrap();
    let problems = fresh.check(&m);
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].index, 1);
}
