//! Whether a capture's files are what its descriptor says: the checksum
//! map, the files' checksums (hashed once, where asked), and the chunks of
//! a store capture.

use super::*;
/// A reprise capture always records its files' checksums: a descriptor of
/// reprise's format without a `Checksums` map (or with one naming no file
/// of a capture) was damaged, and its files would go unchecked unawares. A
/// map that covers only some files is valid (those files are unchecked, as
/// `inspect` shows).
pub(super) fn check_checksum_map(
    a: &mut Assessment,
    record: &KernelRecord,
    paths: &CapturePaths,
    options: &OpenOptions,
) {
    if record.generation != Generation::Reprise || !options.verify_checksums {
        return;
    }
    let sums = record.checksums;
    let problem = sums
        .unknown
        .map(ChecksumMapProblem::UnknownEntry)
        .or(sums.is_empty().then_some(ChecksumMapProblem::Missing));
    let error = problem.map(|problem| Error::ChecksumMap {
        path: paths.descriptor.clone(),
        problem,
    });
    a.add(error, Blocks::ReplayUnless(Setting::VerifyChecksums));
}

/// Checks the checksums `hashing` asks for, recording each file's status.
///
/// An image taken from an entry of an offload binary (an application
/// binary, or a container given for the capture's own image) matches the
/// descriptor when the entry does (the recorded image, found in an
/// application) or the whole file does (the capture's own file, which
/// holds the entry); the status's `actual` is then the whole file's.
pub(super) fn hash(a: &mut Assessment, record: &KernelRecord, hashing: Hashing) {
    let sums = record.checksums;
    let image = a.image.as_deref().map(checksum);
    let globals = a.globals.as_deref().map(checksum);
    let entry = a
        .image_origin
        .as_ref()
        .and_then(|o| o.entry.as_ref())
        .map(|(index, _, _)| *index);
    // An image compiled from the IR is not the recorded one.
    let compiled = a.image_origin.as_ref().is_some_and(|o| o.compiled);
    let mut mismatches = Vec::new();
    for f in &mut a.files {
        let (want, small) = match (f.role, snapshot_sum(record, f.role)) {
            ("globals", _) => (sums.globals, Some(globals)),
            ("image", _) => (sums.image.filter(|_| !compiled), Some(image)),
            // Hashed where its chunks were checked ([`check_chunks`]).
            (_, Some(_)) if matches!(f.state, FileState::Chunked { .. }) => {
                if hashing != Hashing::All {
                    f.checksum = ChecksumStatus::NotChecked;
                }
                continue;
            }
            (_, want) => (want, None),
        };
        let Some(want) = want else { continue };
        f.checksum = ChecksumStatus::NotChecked;
        let got = match (small, hashing) {
            (_, Hashing::None) => None,
            (Some(got), _) => got,
            (None, Hashing::SmallFiles) => None,
            (None, Hashing::All) => whole_file_checksum(&f.path),
        };
        let Some(got) = got else { continue };
        if got == want {
            f.checksum = ChecksumStatus::Verified;
            continue;
        }
        let (error, actual) = match entry.filter(|_| f.role == "image") {
            Some(index) => {
                let file = whole_file_checksum(&f.path);
                if file == Some(want) {
                    f.checksum = ChecksumStatus::Verified;
                    continue;
                }
                // Neither the entry nor the whole file hashes to the image's
                // checksum: the message says which was hashed to what.
                let problem = CaptureProblem::EntryChecksumMismatch {
                    recorded: want,
                    index,
                    entry: got,
                    file,
                };
                (Error::capture(&f.path, problem), file.unwrap_or(got))
            }
            None => (checksum_mismatch(&f.path, want, got), got),
        };
        mismatches.push(error);
        f.checksum = ChecksumStatus::Mismatch {
            recorded: want,
            actual,
        };
    }
    a.add(mismatches, Blocks::ReplayUnless(Setting::VerifyChecksums));
}

/// Checks the chunks every manifest among `a`'s files names: that each is
/// in the store as a regular file of a length a file of it may have
/// ([`crate::chunks::ChunkStore::glance`]), and with `whole`, that each
/// decompresses to the bytes of its name. Each chunk that is not is a
/// finding naming it (once per file, a chunk a read already reported
/// aside).
///
/// With `whole`, a chunked snapshot is read once for both: its chunks are
/// streamed, each checked as it is decompressed, into the checksum the
/// descriptor records for it (its status set here, not in [`hash`]); only
/// when a chunk fails are the others checked on their own, to name every
/// one that does. The store is the assessment's own (from `stores`), so
/// the chunks the globals and the image were read from are not
/// decompressed again either.
pub(super) fn check_chunks(
    a: &mut Assessment,
    stores: &Stores,
    record: &KernelRecord,
    whole: bool,
) {
    let mut store: Option<std::sync::Arc<crate::chunks::ChunkStore>> = None;
    let mut found = Vec::new();
    let mut mismatches = Vec::new();
    let recorded = |role| snapshot_sum(record, role);
    for f in &mut a.files {
        if !matches!(f.state, FileState::Chunked { .. }) {
            continue;
        }
        let Ok(m) = crate::chunks::Manifest::read(&f.path) else {
            continue;
        };
        if store.is_none() {
            match stores.store_for(&f.path) {
                Ok(s) => store = Some(s),
                Err(e) => {
                    found.push(e);
                    break;
                }
            }
        }
        let Some(s) = &store else { break };
        let want = recorded(f.role);
        if whole && let Some(want) = want {
            f.checksum = ChecksumStatus::NotChecked;
            let mut h = reprise_core::record::Checksummer::new();
            if s.for_each_chunk(&m, |b| h.update(b)).is_ok() {
                let got = h.finish();
                if got == want {
                    f.checksum = ChecksumStatus::Verified;
                } else {
                    mismatches.push(checksum_mismatch(&f.path, want, got));
                    f.checksum = ChecksumStatus::Mismatch {
                        recorded: want,
                        actual: got,
                    };
                }
                continue;
            }
        }
        let problems = if whole { s.check(&m) } else { s.glance(&m) };
        for p in problems.into_iter().map(CaptureProblem::of_chunk) {
            let known = a.findings.iter().any(|k| {
                k.error.capture_problem() == Some(&p)
                    && matches!(&k.error, Error::Capture { path, .. } if *path == f.path)
            });
            if !known {
                found.push(Error::capture(&f.path, p));
            }
        }
    }
    // Without its store, a snapshot's recorded checksum could not be
    // checked: said so, not "none recorded".
    if store.is_none() {
        for f in &mut a.files {
            if matches!(f.state, FileState::Chunked { .. }) && recorded(f.role).is_some() {
                f.checksum = ChecksumStatus::NotChecked;
            }
        }
    }
    a.add(found, Blocks::Replay);
    a.add(mismatches, Blocks::ReplayUnless(Setting::VerifyChecksums));
}

/// The checksum the descriptor records for its snapshot of `role`
/// (`input`, `extra output`, ...).
fn snapshot_sum(record: &KernelRecord, role: &str) -> Option<u64> {
    let sums = record.checksums;
    match role {
        "input" => sums.input,
        "output" => sums.output,
        "extra input" => sums.extra_input,
        "extra output" => sums.extra_output,
        _ => None,
    }
}

/// The checksum of the regular file at `path`, streamed; `None` when it
/// cannot be read.
pub(super) fn whole_file_checksum(path: &Path) -> Option<u64> {
    match open_regular(path) {
        Ok(Some((file, _))) => file_checksum(&file, path).ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
