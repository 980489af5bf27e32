//! The settings errors and notes point to, and how a front end names them.

use std::fmt;

use reprise_core::record::{Generation, KernelRecord};

/// A library setting that an error or a note can point to.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Setting {
    /// `ReplayOptions::num_teams`.
    NumTeams,
    /// `ReplayOptions::num_threads`.
    NumThreads,
    /// [`crate::OpenOptions::allow_missing_globals`].
    AllowMissingGlobals,
    /// [`crate::OpenOptions::verify_checksums`].
    VerifyChecksums,
    /// [`crate::OpenOptions::image`].
    Image,
    /// [`crate::OpenOptions::region_base`].
    RegionBase,
    /// [`crate::OpenOptions::backend`].
    Backend,
    /// A byte range of `CompareSpec::ranges`.
    CompareRange,
    /// An argument's buffer in `CompareSpec::ranges`.
    CompareArg,
}

impl Setting {
    /// The setting's name in the library: `ReplayOptions::num_teams`.
    pub const fn library_name(self) -> &'static str {
        match self {
            Setting::NumTeams => "ReplayOptions::num_teams",
            Setting::NumThreads => "ReplayOptions::num_threads",
            Setting::AllowMissingGlobals => "OpenOptions::allow_missing_globals",
            Setting::VerifyChecksums => "OpenOptions::verify_checksums",
            Setting::Image => "OpenOptions::image",
            Setting::RegionBase => "OpenOptions::region_base",
            Setting::Backend => "OpenOptions::backend",
            Setting::CompareRange => "CompareSpec::ranges (OutputRange::Bytes)",
            Setting::CompareArg => "CompareSpec::ranges (OutputRange::Arg)",
        }
    }
}

/// A setting as the library gives it: checking checksums is turned off.
fn library_given(s: Setting) -> &'static str {
    match s {
        Setting::VerifyChecksums => "OpenOptions::verify_checksums = false",
        other => other.library_name(),
    }
}

/// How messages name [`Setting`]s: the library's own names
/// ([`Names::LIBRARY`]), or a front end's (a command line's flags).
#[derive(Debug, Clone, Copy)]
pub struct Names {
    /// The verb that asks for settings to be given a value: "set", "pass".
    pub verb: &'static str,
    /// A setting's name: `ReplayOptions::num_teams`, `--num-teams`.
    pub name: fn(Setting) -> &'static str,
    /// A setting as given with its value: `ReplayOptions::num_teams`,
    /// `--num-teams N`.
    pub given: fn(Setting) -> &'static str,
}

impl Names {
    /// The library's names (`ReplayOptions::num_teams`), as every error's
    /// `Display` uses them.
    pub const LIBRARY: Names = Names {
        verb: "set",
        name: Setting::library_name,
        given: library_given,
    };
}

/// What a capture leaves unknown about its launch's geometry: LLVM 16 and
/// 17 record a construct without a `num_teams` or `thread_limit` clause as 0
/// (see [`reprise_core::record`]), and a replay then needs the count given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnknownGeometry {
    /// How the record spells its keys.
    pub generation: Generation,
    /// The team count is unknown.
    pub teams: bool,
    /// The threads per team are unknown.
    pub threads: bool,
}

impl UnknownGeometry {
    /// What `record` leaves unknown that neither `num_teams` nor
    /// `num_threads` (a replay's overrides) gives; `None` when the geometry
    /// is known.
    pub fn of(
        record: &KernelRecord,
        num_teams: Option<u32>,
        num_threads: Option<u32>,
    ) -> Option<Self> {
        let teams = record.num_teams() == 0 && num_teams.is_none();
        let threads = record.num_threads() == 0 && num_threads.is_none();
        (teams || threads).then_some(UnknownGeometry {
            generation: record.generation,
            teams,
            threads,
        })
    }

    /// The text with settings named as `names` says.
    pub fn named(&self, names: Names) -> impl fmt::Display + '_ {
        super::Named(self, names, UnknownGeometry::fmt_named)
    }

    fn fmt_named(&self, f: &mut fmt::Formatter<'_>, names: Names) -> fmt::Result {
        let g = self.generation;
        let mut keys = Vec::new();
        let mut clauses = Vec::new();
        let mut what = Vec::new();
        let mut give = Vec::new();
        if self.teams {
            keys.push(format!("{} is 0", g.teams_key()));
            clauses.push("num_teams");
            what.push("team count");
            give.push((names.given)(Setting::NumTeams));
        }
        if self.threads {
            keys.push(format!("{} is 0", g.threads_key()));
            clauses.push("thread_limit");
            what.push("threads per team");
            give.push((names.given)(Setting::NumThreads));
        }
        let recorded = match (g == Generation::LlvmLegacy, keys.len()) {
            (true, _) => format!("LLVM recorded no {} clause", clauses.join(" or ")),
            (false, 1) => "LLVM recorded no value for it".to_string(),
            (false, _) => "LLVM recorded no values for them".to_string(),
        };
        let verb = if what == ["team count"] { "is" } else { "are" };
        write!(
            f,
            "{}: {recorded}, so the launch's {} {verb} unknown; {} {}",
            keys.join(" and "),
            what.join(" and "),
            names.verb,
            give.join(" and ")
        )
    }
}

impl fmt::Display for UnknownGeometry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_named(f, Names::LIBRARY)
    }
}
