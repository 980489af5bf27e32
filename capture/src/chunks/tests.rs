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
    raw_in(1, total, chunk_size, count, entries)
}

/// [`raw`] of the format version `version`.
fn raw_in(
    version: u32,
    total: u64,
    chunk_size: u32,
    count: u32,
    entries: &[(ChunkHash, u32)],
) -> Vec<u8> {
    let mut b = MAGIC.to_vec();
    b.extend_from_slice(&version.to_le_bytes());
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
    for version in [0, 3] {
        let mut b = good.clone();
        b[8] = version;
        assert_eq!(
            Manifest::decode(&b),
            Err(E::UnsupportedVersion {
                found: u32::from(version),
                supported: 2
            })
        );
    }
    // Both versions this build reads read back as themselves.
    for version in [1, 2] {
        let b = raw_in(version, 5000, CS, 2, &[(h, CS), (h, 904)]);
        let m = Manifest::decode(&b).unwrap();
        assert_eq!(m.version(), version);
        assert_eq!(m.encode(), b);
    }
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
    for version in [1, 2] {
        let v = StoreVersion {
            version,
            chunk_size: layout::DEFAULT_CHUNK_SIZE,
        };
        let text = v.to_text();
        assert_eq!(
            text,
            format!(
                "reprise-chunk-store {version}\nhash blake3\ncompression zstd\nchunk-size {}\n",
                layout::DEFAULT_CHUNK_SIZE
            )
        );
        assert_eq!(StoreVersion::parse(text.as_bytes()), Ok(v));
    }
    let parse = |t: &str| StoreVersion::parse(t.as_bytes());
    for found in ["3", "0", "02", "2x", ""] {
        assert_eq!(
            parse(&format!("reprise-chunk-store {found}\n")),
            Err(V::UnsupportedVersion {
                found: found.into(),
                supported: 2
            })
        );
    }
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

/// `len` bytes of xorshift output: nothing zstd can shrink.
pub(super) fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed;
    let mut out = vec![0u8; len.next_multiple_of(8)];
    for b in out.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        b.copy_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

#[test]
fn chunks_that_hardly_compress_are_stored_plain_in_format_2_and_raw_frames_in_1() {
    for version in [1, 2] {
        let dir = tempfile::tempdir().unwrap();
        let store =
            ChunkStore::create_in_version(dir.path(), StoreOptions::default(), version).unwrap();
        assert_eq!(store.version(), version);
        // Noise (xorshift): zstd saves nothing; and zeros, which it does.
        let noise = noise(3 << 20, 0x9E37_79B9_7F4A_7C15);
        let zeros = vec![0u8; 1 << 20];
        for (data, raw) in [(&noise, true), (&zeros, false)] {
            let m = store.put(data).unwrap();
            assert_eq!(m.version(), version);
            for c in m.chunks() {
                let on_disk = std::fs::metadata(store.chunk_file(&c.hash)).unwrap().len();
                let kept_raw = if version == 1 {
                    // A raw frame: the bytes, a 13-byte header and 3 bytes
                    // a block.
                    u64::from(c.len) + 13 + 3 * u64::from(c.len).div_ceil(128 << 10)
                } else {
                    // The bytes themselves.
                    u64::from(c.len)
                };
                assert_eq!(on_disk == kept_raw, raw, "{on_disk} of {}", c.len);
                assert!(on_disk < u64::from(c.len) * 7 / 8 || raw);
            }
            for verify in [Verify::EachChunk, Verify::Whole] {
                let mut back = vec![1u8; data.len()];
                store.read_into_with(&m, &mut back, verify).unwrap();
                assert_eq!(&back, data);
            }
            assert!(store.check(&m).is_empty());
        }
    }
}

#[test]
fn a_store_of_format_1_stays_one() {
    let dir = tempfile::tempdir().unwrap();
    let old = ChunkStore::create_in_version(dir.path(), StoreOptions::default(), 1).unwrap();
    let data = noise(1 << 20, 7);
    let m1 = old.put(&data).unwrap();
    drop(old);
    let version = std::fs::read_to_string(dir.path().join(".reprise-store/VERSION")).unwrap();
    assert!(version.starts_with("reprise-chunk-store 1\n"), "{version}");
    // Made again by a writer of this build (which makes version 2 stores),
    // and opened for reading: version 1, its chunks raw frames.
    let again = ChunkStore::create(dir.path(), StoreOptions::default()).unwrap();
    assert_eq!(again.version(), 1);
    let m2 = again.put(&noise(1 << 20, 8)).unwrap();
    assert_eq!((m1.version(), m2.version()), (1, 1));
    assert_eq!(m2.encode()[8..12], 1u32.to_le_bytes());
    let on_disk = std::fs::metadata(again.chunk_file(&m2.chunks()[0].hash))
        .unwrap()
        .len();
    assert!(on_disk > 1 << 20, "{on_disk}");
    let reader = ChunkStore::open(dir.path()).unwrap().unwrap();
    assert_eq!(reader.version(), 1);
    let mut back = vec![0u8; data.len()];
    reader.read_into(&m1, &mut back).unwrap();
    assert_eq!(back, data);
    // Nothing plain is read as plain in a store of version 1: a file the
    // length of its chunk is no zstd frame.
    std::fs::write(dir.path().join("plain"), &data).unwrap();
    let c = m1.chunks()[0];
    let path = reader.chunk_file(&c.hash);
    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, &data).unwrap();
    let e = reader.read_into(&m1, &mut back).unwrap_err();
    assert!(
        matches!(
            e.store_problem(),
            Some(crate::error::StoreProblem::Chunk(ChunkProblem {
                fault: ChunkFault::Undecompressible,
                ..
            }))
        ),
        "{e}"
    );
}

#[test]
fn a_damaged_raw_chunk_is_named() {
    use std::os::unix::fs::{FileExt, PermissionsExt};
    for version in [1, 2] {
        let dir = tempfile::tempdir().unwrap();
        let store =
            ChunkStore::create_in_version(dir.path(), StoreOptions::default(), version).unwrap();
        let noise = noise(
            2 * layout::DEFAULT_CHUNK_SIZE as usize,
            0x2545_F491_4F6C_DD1D,
        );
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
        // Read for a checksum of the whole: the bytes come back as they
        // are, and the check names the chunk.
        let fresh = ChunkStore::open(dir.path()).unwrap().unwrap();
        fresh.read_into_with(&m, &mut back, Verify::Whole).unwrap();
        assert_ne!(back, noise);
        let problems = fresh.check(&m);
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].index, 1);
    }
}

/// What an executor's mapping of `mappable` would put in place: each
/// part's bytes, read from its chunk's open file.
fn place_parts(mappable: &Mappable, out: &mut [u8], chunk_size: usize) {
    use std::os::unix::fs::FileExt;
    for (i, (file, &n)) in mappable.files.iter().zip(&mappable.mapped).enumerate() {
        if let Some(f) = file {
            let at = i * chunk_size;
            f.read_exact_at(&mut out[at..at + n as usize], 0).unwrap();
        }
    }
}

#[test]
fn plain_chunks_are_mappable_over_their_whole_pages_and_the_rest_is_read() {
    let cs = 64 << 10;
    let options = StoreOptions {
        chunk_size: cs,
        ..StoreOptions::default()
    };
    // Chunks: noise, zeros, noise, noise (equal to the first), and a short
    // last one of noise, not a whole number of pages.
    let a = noise(cs as usize, 1);
    let mut data = a.clone();
    data.extend(vec![0u8; cs as usize]);
    data.extend(noise(cs as usize, 2));
    data.extend(&a);
    data.extend(noise(5000 + 4096, 3));
    let page = 4096u64;
    let dir = tempfile::tempdir().unwrap();
    let store = ChunkStore::create(dir.path(), options).unwrap();
    let m = store.put(&data).unwrap();
    let mappable = store.mappable(&m, page);
    let parts: Vec<(u64, u64)> = mappable.parts().iter().map(|p| (p.offset, p.len)).collect();
    let c = u64::from(cs);
    assert_eq!(
        parts,
        [(0, c), (2 * c, c), (3 * c, c), (4 * c, 2 * page)],
        "the zero chunk is compressed; the short chunk maps its two whole pages"
    );
    assert_eq!(
        mappable.gaps(&m),
        [(4 * c + 2 * page, 904)],
        "the short chunk's tail (the zero chunk is zeros in place)"
    );
    assert_eq!(mappable.mapped_bytes(), 3 * c + 2 * page);
    for verify in [Verify::Whole, Verify::EachChunk] {
        // Mapped into zeroed memory.
        let mut out = vec![0u8; data.len()];
        place_parts(&mappable, &mut out, cs as usize);
        store
            .read_rest_into(&m, &mappable, &mut out, verify)
            .unwrap();
        assert!(out == data, "{verify:?}");
    }
    // Pages larger than the chunks: only chunks at a page boundary map.
    assert!(store.mappable(&m, 2 * c).parts().is_empty());
    // A chunk file that is not the manifest's length is read, never
    // mapped (and the read names it).
    let c2 = m.chunks()[2];
    let path = store.chunk_file(&c2.hash);
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
    let mappable = store.mappable(&m, page);
    assert!(mappable.parts().iter().all(|p| p.offset != 2 * c));
    let mut out = vec![0u8; data.len()];
    place_parts(&mappable, &mut out, cs as usize);
    let e = store
        .read_rest_into(&m, &mappable, &mut out, Verify::Whole)
        .unwrap_err();
    match e.store_problem() {
        Some(crate::error::StoreProblem::Chunk(p)) => assert_eq!(p.index, 2),
        other => panic!("not a chunk problem: {other:?}"),
    }
    // A chunk of zeros whose file is gone is not taken as in place: the
    // read names it.
    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, &bytes).unwrap();
    let zero = m.chunks()[1];
    std::fs::remove_file(store.chunk_file(&zero.hash)).unwrap();
    let mappable = store.mappable(&m, page);
    assert_eq!(mappable.gaps(&m)[0], (c, c));
    let mut out = vec![0u8; data.len()];
    let e = store
        .read_rest_into(&m, &mappable, &mut out, Verify::Whole)
        .unwrap_err();
    match e.store_problem() {
        Some(crate::error::StoreProblem::Chunk(p)) => {
            assert_eq!((p.index, p.fault), (1, ChunkFault::Missing));
        }
        other => panic!("not a chunk problem: {other:?}"),
    }
    // A store of format 1 maps nothing.
    let dir1 = tempfile::tempdir().unwrap();
    let old = ChunkStore::create_in_version(dir1.path(), options, 1).unwrap();
    let m1 = old.put(&data).unwrap();
    assert!(old.mappable(&m1, page).is_empty());
}

#[test]
fn two_puts_under_one_pin_of_the_same_bytes_both_find_them_stored() {
    let dir = tempfile::tempdir().unwrap();
    let store = ChunkStore::create(
        dir.path(),
        StoreOptions {
            chunk_size: 64 << 10,
            ..StoreOptions::default()
        },
    )
    .unwrap();
    let data = noise(40 << 16, 11);
    let pin = store.pin().unwrap();
    let (a, b) = std::thread::scope(|s| {
        let one = s.spawn(|| {
            let m = store.put_pinned(&pin, &data).unwrap();
            // Every chunk the manifest names is in place when it returns.
            assert!(store.missing(&m).is_empty());
            m
        });
        let two = s.spawn(|| {
            let m = store.put_pinned(&pin, &data).unwrap();
            assert!(store.missing(&m).is_empty());
            m
        });
        (one.join().unwrap(), two.join().unwrap())
    });
    assert_eq!(a, b);
    assert!(store.check(&a).is_empty());
}

fn small_chunks(dir: &std::path::Path) -> ChunkStore {
    ChunkStore::create(
        dir,
        StoreOptions {
            chunk_size: 64 << 10,
            ..StoreOptions::default()
        },
    )
    .unwrap()
}

#[test]
fn bytes_met_again_are_named_from_memory_as_blake3_named_them() {
    let dir = tempfile::tempdir().unwrap();
    let store = small_chunks(dir.path());
    let data = noise(10 << 16, 3);
    let first = store.put(&data).unwrap();
    // One name per distinct chunk, remembered.
    assert_eq!(store.names.len(), 10);
    let again = store.put(&data).unwrap();
    assert_eq!(first, again);
    assert_eq!(store.names.len(), 10);
    for (i, c) in again.chunks().iter().enumerate() {
        let part = &data[i << 16..(i + 1) << 16];
        assert_eq!(c.hash, ChunkHash::of(part), "chunk {i}");
    }
}

#[test]
fn a_chunk_named_from_memory_but_gone_from_disk_is_written_again() {
    let dir = tempfile::tempdir().unwrap();
    let store = small_chunks(dir.path());
    let data = noise(4 << 16, 5);
    let m = store.put(&data).unwrap();
    // Removed behind the writer's back (a `gc` of another process, a user).
    let gone = m.chunks()[2].hash;
    std::fs::remove_file(store.chunk_file(&gone)).unwrap();
    assert_eq!(store.missing(&m).len(), 1);
    let again = store.put(&data).unwrap();
    assert_eq!(again, m);
    assert!(store.check(&again).is_empty());
}

#[test]
fn a_name_remembered_for_other_bytes_never_names_a_chunk_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = small_chunks(dir.path());
    let data = noise(3 << 16, 9);
    // The index holds a lie for the middle chunk's key (what a collision of
    // xxh3-128 would make): the name of bytes that are not in the store.
    let middle = &data[1 << 16..2 << 16];
    let other = ChunkHash::of(b"other bytes");
    store.names.insert(names::Quick::of(middle), other);
    let m = store.put(&data).unwrap();
    // The chunk the store lacked was checked by blake3 before it was
    // written: the manifest names its real hash, no file is named `other`,
    // and the index now holds the truth.
    assert_eq!(m.chunks()[1].hash, ChunkHash::of(middle));
    assert!(!store.chunk_file(&other).exists());
    assert_eq!(
        store.names.get(&names::Quick::of(middle)),
        Some(ChunkHash::of(middle))
    );
    assert!(store.check(&m).is_empty());
    let mut back = vec![0u8; data.len()];
    store.read_into(&m, &mut back).unwrap();
    assert!(back == data);
}
