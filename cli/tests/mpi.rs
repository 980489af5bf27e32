//! An MPI job recorded as one: Debian's Open MPI starts four ranks of
//! `programs/ranks.c`, each under a `reprise record` of its own, all
//! recording into one store at once on the simulated CUDA driver. Every
//! capture verifies, `reprise list` finds nothing wrong, and each rank's
//! summary names one of that rank's own captures.
//!
//! Without `mpirun` and `mpicc` (Debian's `openmpi-bin`, `libopenmpi-dev`)
//! the test skips, unless `REPRISE_REQUIRE_MPI=1` (CI), where that fails.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::programs::{descriptors, interposer, saxpy_ptx, setup, sim_env};
use common::{s, text};

const RANKS: usize = 4;
/// Launches each rank makes.
const LAUNCHES: usize = 3;
/// The values the program's saxpy runs over on rank 0 (`N` in driver.h).
const N: i64 = 10_000;

/// Whether Open MPI is here; `false` after saying why the test skips.
fn have_mpi() -> bool {
    let required = std::env::var("REPRISE_REQUIRE_MPI").as_deref() == Ok("1");
    for tool in ["mpirun", "mpicc"] {
        let found = Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            let why = format!("{tool} is missing (Open MPI)");
            assert!(!required, "REPRISE_REQUIRE_MPI=1 but {why}");
            common::skip(&why, Some("openmpi-bin libopenmpi-dev"));
            return false;
        }
    }
    true
}

/// `programs/ranks.c` built with `mpicc` against the simulated driver.
fn build_ranks() -> PathBuf {
    let programs = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs");
    let lib = common::sim::library_dir().expect("checked by setup");
    let dir = tempfile::Builder::new()
        .prefix("mpi-ranks-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
        .keep();
    let exe = dir.join("ranks");
    let out = Command::new("mpicc")
        .args(["-O2", "-Wall", "-Werror", "-o"])
        .arg(&exe)
        .arg(programs.join("ranks.c"))
        .arg(format!("-L{}", lib.display()))
        .arg("-lcuda")
        .output()
        .expect("mpicc");
    assert!(
        out.status.success(),
        "mpicc ranks.c:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// The count of values the capture at `descriptor` ran over: its last
/// argument, which tells the rank.
fn rank_of(descriptor: &Path) -> usize {
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(descriptor).unwrap()).unwrap();
    let n = json["ArgPtrs"][3].as_i64().unwrap();
    usize::try_from(N - n).unwrap()
}

#[test]
fn four_ranks_record_into_one_store_and_each_names_its_own_captures() {
    if !have_mpi() {
        return;
    }
    let Some(common::programs::Target::Simulated) = setup() else {
        return;
    };
    let Some(lib) = interposer() else { return };
    let program = build_ranks();
    let store = tempfile::tempdir().unwrap();
    // Each rank's output in files of its own (OUT/1/rank.R/stdout,
    // stderr): tagged lines on mpirun's own output may run together.
    let outputs = tempfile::tempdir().unwrap();
    let (k, v) = sim_env();
    let ptx = saxpy_ptx();
    let mut cmd = Command::new("mpirun");
    cmd.args([
        "--allow-run-as-root",
        "--oversubscribe",
        "--output-filename",
    ])
    .arg(outputs.path())
    .args(["-np", &RANKS.to_string()])
    .args(["-x", k, "-x", "REPRISE_INTERPOSER", "-x", "XDG_CACHE_HOME"])
    .arg(common::reprise_bin())
    .args(["record", "--dir", s(store.path()), "--"])
    .arg(&program)
    .arg(&ptx)
    .env(k, &v)
    .env("REPRISE_INTERPOSER", &lib)
    .env(
        "XDG_CACHE_HOME",
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("cache"),
    )
    // Open MPI's shared-memory transport wants room in /dev/shm that a
    // container may not give; one node's ranks talk over loopback.
    .env("OMPI_MCA_btl", "self,tcp")
    .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none");
    let out = common::output_within(&mut cmd, std::time::Duration::from_secs(120));
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let of_rank = |rank: usize, stream: &str| {
        let path = outputs.path().join(format!("1/rank.{rank}/{stream}"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    for rank in 0..RANKS {
        let out = of_rank(rank, "stdout");
        assert!(
            out.starts_with(&format!("rank {rank} result ")),
            "{out}\n{}",
            of_rank(rank, "stderr")
        );
    }

    // Every rank's captures landed whole in the one store.
    let captures = descriptors(store.path());
    assert_eq!(captures.len(), RANKS * LAUNCHES, "{captures:?}\n{stderr}");
    let mut per_rank = [0; RANKS];
    for c in &captures {
        per_rank[rank_of(c)] += 1;
    }
    assert_eq!(per_rank, [LAUNCHES; RANKS], "{captures:?}");
    let listed = common::reprise(&["list", s(store.path())]);
    let (list, list_err) = text(&listed);
    assert_eq!(listed.status.code(), Some(0), "{list}{list_err}");
    assert!(
        list.contains(&format!(
            "{} capture(s) (0 incomplete), 0 unreadable, 0 orphaned file(s)",
            RANKS * LAUNCHES
        )),
        "{list}"
    );

    // Each rank's summary counts its own launches and names its own capture.
    for rank in 0..RANKS {
        let said = of_rank(rank, "stderr");
        let line = said
            .lines()
            .find(|l| l.starts_with("reprise record: "))
            .unwrap_or_else(|| panic!("no summary from rank {rank}:\n{said}"));
        assert!(
            line.contains(&format!("{LAUNCHES} launches recorded in ")),
            "rank {rank}: {line}"
        );
        let named = line
            .split("replay --verify ")
            .nth(1)
            .and_then(|rest| rest.strip_suffix(')'))
            .unwrap_or_else(|| panic!("rank {rank} names no capture: {line}"));
        let named = PathBuf::from(named);
        assert!(captures.contains(&named), "rank {rank}: {line}");
        assert_eq!(rank_of(&named), rank, "rank {rank}'s summary: {line}");
    }

    // And every capture replays and verifies in a process of its own.
    for c in &captures {
        let out = common::reprise_env(&["replay", "--verify", s(c)], &[(k, v.to_str().unwrap())]);
        let (stdout, stderr) = text(&out);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {stdout}{stderr}",
            c.display()
        );
        assert!(stdout.contains("verification: PASS"), "{stdout}");
    }
}
