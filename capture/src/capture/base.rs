//! Where a capture's region was, when its descriptor does not say: LLVM 16
//! writes no `BumpAllocVAStart`. The rule, and the types that say what it
//! found, are the core's ([`reprise_core::record::base`], re-exported
//! here); this module reads what the rule weighs: the sibling descriptors
//! of a capture's directory ([`Siblings`], once per directory).

use std::path::Path;

use reprise_core::record::KernelRecord;
use reprise_core::record::base;
pub use reprise_core::record::base::{
    BaseOrigin, Candidates, Derivation, Evidence, NAMED, ResolvedBase,
};

use super::read_descriptor;

/// Siblings looked at, at most.
const MAX_SIBLINGS: usize = 256;

#[cfg(test)]
thread_local! {
    /// How often this thread read a directory's siblings.
    pub(crate) static SIBLING_READS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The descriptors without a base in one directory (LLVM 16's), each read
/// once however many captures of the directory derive their base from
/// them; at most 256, in name order.
#[derive(Debug, Default)]
pub struct Siblings {
    records: Vec<(std::ffi::OsString, Box<KernelRecord>)>,
}

impl Siblings {
    /// The siblings of `descriptor`: the descriptors of its directory (a
    /// bare file name's is `.`), itself left out when derived from.
    pub fn of(descriptor: &Path) -> Siblings {
        #[cfg(test)]
        SIBLING_READS.with(|c| c.set(c.get() + 1));
        let dir = match descriptor.parent() {
            Some(d) if d.as_os_str().is_empty() => Path::new("."),
            Some(d) => d,
            None => return Siblings::default(),
        };
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
        Siblings { records }
    }

    /// The siblings of the descriptor named `own` in the same directory.
    fn except<'a>(
        &'a self,
        own: Option<&'a std::ffi::OsStr>,
    ) -> impl Iterator<Item = &'a KernelRecord> {
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
    base::derive(record, siblings.except(descriptor.file_name()))
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
    base::holding(
        record,
        siblings.except(descriptor.file_name()),
        addr,
        except,
    )
}

#[cfg(test)]
mod tests;
