//! Where a capture's region was, when its descriptor does not say: LLVM 16
//! writes no `BumpAllocVAStart`. The rule, and the types that say what it
//! found, are the core's ([`reprise_core::record::base`], re-exported
//! here); this module reads what the rule weighs: the sibling descriptors
//! of a capture's directory ([`Siblings`], once per directory), and, where
//! they leave several bases, a few aligned blocks of the capture's input
//! snapshot and of its siblings' recorded outputs: a later kernel of the
//! same process finds in memory what an earlier one left there, so a
//! capture whose input holds a sibling's output at the same offsets shares
//! its base ([`Evidence::SiblingOutput`]).

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use reprise_core::record::KernelRecord;
use reprise_core::record::base;
pub use reprise_core::record::base::{
    BaseOrigin, Candidates, Derivation, Evidence, NAMED, ResolvedBase,
};

use super::open::open_regular;
use super::paths::CapturePaths;
use super::read_descriptor;

/// Siblings looked at, at most.
const MAX_SIBLINGS: usize = 256;
/// Siblings whose recorded output is compared with a capture's input, at
/// most.
const MAX_COMPARED: usize = 32;
/// The blocks compared of each pair of snapshots, at most, and their size:
/// 64 KiB read from each file whatever their sizes.
const BLOCKS: u64 = 16;
const BLOCK: u64 = 4096;

/// The descriptors without a base in one directory (LLVM 16's), each read
/// once however many captures of the directory derive their base from
/// them; at most 256, in name order.
#[derive(Debug, Default)]
pub struct Siblings {
    /// Their directory.
    dir: PathBuf,
    records: Vec<(std::ffi::OsString, Box<KernelRecord>)>,
}

impl Siblings {
    /// The siblings of `descriptor`: the descriptors of its directory (a
    /// bare file name's is `.`), itself left out when derived from.
    pub fn of(descriptor: &Path) -> Siblings {
        #[cfg(test)]
        tests::SIBLING_READS.with(|c| c.set(c.get() + 1));
        let dir = crate::fs::dir_of(descriptor);
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Siblings::default();
        };
        let mut paths: Vec<_> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        // The same siblings, in the same order, however the directory lists.
        paths.sort();
        let records = paths
            .iter()
            .take(MAX_SIBLINGS)
            .filter(|p| p.metadata().is_ok_and(|m| m.is_file()))
            .filter_map(|p| Some((p.file_name()?.to_owned(), read_descriptor(p).ok()?)))
            .filter(|(_, r)| base::derivable(r))
            .collect();
        Siblings {
            dir: dir.to_path_buf(),
            records,
        }
    }

    /// The siblings of the descriptor named `own` in the same directory.
    fn except<'a>(
        &'a self,
        own: Option<&'a std::ffi::OsStr>,
    ) -> impl Iterator<Item = &'a KernelRecord> + Clone {
        self.records
            .iter()
            .filter(move |(name, _)| Some(name.as_os_str()) != own)
            .map(|(_, r)| &**r)
    }
}

/// The base of the record that has none in `descriptor`, derived by the
/// core's rule ([`base::derive()`]) with the `siblings` of its directory,
/// the descriptor itself left out.
pub fn derive_among(record: &KernelRecord, descriptor: &Path, siblings: &Siblings) -> Derivation {
    let own = descriptor.file_name();
    let derived = base::derive(record, siblings.except(own));
    let guessed = match derived {
        Derivation::Ambiguous(_) => true,
        Derivation::Base(_, origin) => origin.alternatives().is_some(),
        Derivation::None => false,
    };
    if !guessed {
        return derived;
    }
    by_content(record, descriptor, siblings)
        .and_then(|b| base::by_sibling_output(record, siblings.except(own), b))
        .unwrap_or(derived)
}

/// The base of the siblings whose recorded output `record`'s input
/// snapshot holds at the same offsets, each sibling's derived by the rule
/// without content; `None` when none does, or those that do disagree.
fn by_content(record: &KernelRecord, descriptor: &Path, siblings: &Siblings) -> Option<u64> {
    let own = descriptor.file_name();
    let input = CapturePaths::new(descriptor, record.generation).input;
    let (input, input_len) = open_regular(&input).ok()??;
    let mut found: Option<u64> = None;
    let mut compared = 0;
    for (name, sibling) in &siblings.records {
        if Some(name.as_os_str()) == own {
            continue;
        }
        // Cheap first: a sibling whose output could not be this capture's
        // memory (longer than its snapshot) is passed over unread.
        let Some(their_len) = sibling.memory_size.filter(|&n| n > 0 && n <= input_len) else {
            continue;
        };
        if compared == MAX_COMPARED {
            break;
        }
        let path = siblings.dir.join(name);
        let output = CapturePaths::new(&path, sibling.generation).output;
        let Ok(Some((output, len))) = open_regular(&output) else {
            continue;
        };
        if len != their_len {
            continue;
        }
        compared += 1;
        if !holds_at_same_offsets(&input, &output, len) {
            continue;
        }
        let Derivation::Base(b, _) = base::derive(sibling, siblings.except(Some(name.as_os_str())))
        else {
            continue;
        };
        match found {
            Some(f) if f != b => return None,
            _ => found = Some(b),
        }
    }
    found
}

/// Whether `input` holds the first `len` bytes of `output` at the same
/// offsets, as far as [`BLOCKS`] aligned blocks spread over them tell (the
/// first among them); blocks of zeros alone tell nothing (fresh memory of
/// any process).
fn holds_at_same_offsets(input: &std::fs::File, output: &std::fs::File, len: u64) -> bool {
    let mut a = vec![0u8; BLOCK as usize];
    let mut b = vec![0u8; BLOCK as usize];
    let mut telling = false;
    let mut last = None;
    for i in 0..BLOCKS {
        let at = (len / BLOCKS * i) / BLOCK * BLOCK;
        if last == Some(at) || at >= len {
            continue;
        }
        last = Some(at);
        let n = (len - at).min(BLOCK) as usize;
        if input.read_exact_at(&mut a[..n], at).is_err()
            || output.read_exact_at(&mut b[..n], at).is_err()
        {
            return false;
        }
        if a[..n] != b[..n] {
            return false;
        }
        telling |= a[..n].iter().any(|&x| x != 0);
    }
    telling
}

/// The bases the rule leaves possible for the record without a base in
/// `descriptor` (its directory's siblings narrowing them), most likely
/// first (`first`, when possible, before all), at most `limit`, and how
/// many are possible in all ([`base::ordered`]): the bases a replay that
/// tries them tries, in order.
pub fn ordered(
    record: &KernelRecord,
    descriptor: &Path,
    first: Option<u64>,
    limit: usize,
) -> (Vec<u64>, u64) {
    let siblings = Siblings::of(descriptor);
    let others = siblings.except(descriptor.file_name());
    base::ordered(record, others, first, limit)
}

/// The bases the rule leaves possible for the record without a base in
/// `descriptor` (its directory's siblings narrowing them) whose snapshot
/// holds `addr`, `except` left out: where a kernel that faulted at `addr`
/// would have found memory ([`base::holding`]). `None` when the rule does
/// not apply to `record`.
pub fn holding(
    record: &KernelRecord,
    descriptor: &Path,
    addr: u64,
    except: Option<u64>,
) -> Option<Candidates> {
    if !base::derivable(record) {
        return None;
    }
    let siblings = Siblings::of(descriptor);
    let others = siblings.except(descriptor.file_name());
    base::holding(record, others, addr, except)
}

#[cfg(test)]
pub(crate) mod tests;
