//! `reprise tune` as a search: `--sampler grid|random`, `--trials`,
//! `--seed`, `--time-budget`, `--resume` and `--workers`.
//!
//! The search space is the product of the sweep's dimensions, each one
//! list of settings ([`Dimension`]); a candidate is one point of the
//! product, its index read in mixed radix (the last dimension fastest, as
//! the grid's nested loops). `grid` takes the points in order; `random`
//! draws `--trials` distinct points without replacement from a generator
//! seeded with `--seed`, so one seed gives the same candidates in the same
//! order. The recorded configuration is always measured too.
//!
//! Each configuration's row goes to the results file as soon as it is
//! measured (one JSON line, the format of a shard's rows file, so `--merge`
//! reads it too): a kill loses at most the configuration under way, and
//! `--resume RESULTS` measures only what the file lacks.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use reprise::cuda_jit::JitOptions;
use reprise::tune::{Measured, Stopped, TuneOptions};
use reprise::{BackendKind, Capture, LaunchConfig};
use serde::{Deserialize, Serialize};

use super::TuneArgs;
use super::report::{self, Row};
use super::shard::{self, Header};
use crate::check::shard::Shard;
use crate::error::{CliError, Result};
use crate::ui::LazyProgress;

/// How the candidates are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum Sampler {
    /// Every point of the product, in order.
    #[default]
    Grid,
    /// `--trials` distinct points drawn at random (seeded).
    Random,
}

/// How many configurations are measured at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workers {
    /// One per visible device.
    Auto,
    /// This many (at most the device count).
    Count(usize),
}

/// The search options of `reprise tune`.
#[derive(Args, Debug, Default)]
pub struct SearchArgs {
    /// How candidates are chosen from the product of the lists: `grid`
    /// (every one, in order) or `random` (--trials of them, drawn without
    /// replacement with --seed).
    #[arg(long, value_enum, default_value_t = Sampler::Grid)]
    pub sampler: Sampler,
    /// How many candidates to measure [default: the whole product]; more
    /// than the product holds is capped, with a note. The recorded
    /// configuration is measured besides.
    #[arg(long, value_name = "N", value_parser = trials)]
    pub trials: Option<u64>,
    /// The random sampler's seed: one seed, the same candidates in the same
    /// order.
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub seed: u64,
    /// Stop drawing candidates once this much time is spent (`30s`, `5m`,
    /// `1h`, `500ms`) and report what was measured.
    #[arg(long, value_name = "D", value_parser = budget)]
    pub time_budget: Option<Duration>,
    /// Continue the study whose results file (JSON lines, as --rows) is
    /// RESULTS: configurations it holds are not measured again, new rows
    /// are appended to it, and the table ranks them all.
    #[arg(long, value_name = "RESULTS", conflicts_with = "merge")]
    pub resume: Option<PathBuf>,
    /// Measure this many configurations at once, one per device (`auto`:
    /// one per visible device); capped at the device count.
    #[arg(long, value_name = "N|auto", value_parser = workers)]
    pub workers: Option<Workers>,
    /// (Internal) measure the share of a worker this plan gives.
    #[arg(long, value_name = "FILE", hide = true)]
    pub worker_plan: Option<PathBuf>,
}

impl SearchArgs {
    /// Whether the sweep is a search this module runs (any of its options,
    /// or a results file written as the sweep goes).
    pub fn active(&self, a: &TuneArgs) -> bool {
        self.sampler != Sampler::Grid
            || self.trials.is_some()
            || self.time_budget.is_some()
            || self.resume.is_some()
            || self.workers.is_some()
            || self.worker_plan.is_some()
            || (a.rows.is_some() && a.shard.is_none())
    }

    /// The flag given that makes the sweep a search, for messages.
    pub fn flag(&self, a: &TuneArgs) -> &'static str {
        [
            (self.sampler != Sampler::Grid, "--sampler"),
            (self.trials.is_some(), "--trials"),
            (self.time_budget.is_some(), "--time-budget"),
            (self.resume.is_some(), "--resume"),
            (self.workers.is_some(), "--workers"),
            (a.rows.is_some() && a.shard.is_none(), "--rows"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
        .unwrap_or("--sampler")
    }
}

fn trials(s: &str) -> std::result::Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(0) => Err("the number of trials is at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!(
            "{s:?} is not a number of trials (a count, 1 or more)"
        )),
    }
}

fn workers(s: &str) -> std::result::Result<Workers, String> {
    if s.trim().eq_ignore_ascii_case("auto") {
        return Ok(Workers::Auto);
    }
    match s.trim().parse::<usize>() {
        Ok(0) => Err("the number of workers is at least 1 (or auto)".into()),
        Ok(n) => Ok(Workers::Count(n)),
        Err(_) => Err(format!(
            "{s:?} is not a number of workers (1 or more, or auto)"
        )),
    }
}

/// `30s`, `5m`, `1h`, `500ms`, `2.5s`; a bare number is seconds.
pub fn budget(s: &str) -> std::result::Result<Duration, String> {
    let t = s.trim();
    let bad = || format!("{s:?} is not a duration (30s, 5m, 1h, 500ms)");
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num.parse().map_err(|_| bad())?;
    let scale = match unit.trim() {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(bad()),
    };
    let d = Duration::try_from_secs_f64(v * scale).map_err(|_| bad())?;
    if d.is_zero() {
        return Err(format!("{s}: a time budget is more than 0"));
    }
    Ok(d)
}

/// How a candidate's image is built: a compile dimension of the search
/// (PTX JIT options or optimisation levels from IR; one search takes one
/// of the two).
#[derive(Debug, Clone, PartialEq)]
pub enum Compile {
    /// The capture's own image, as recorded.
    Recorded,
    /// The capture's PTX, loaded with these JIT options.
    Jit(JitOptions),
    /// The capture's LLVM IR, compiled at this level.
    OptLevel(u8),
}

impl Compile {
    /// Its name in rows and keys (`MAX_REGISTERS=32`, `O2`); none for the
    /// recorded image.
    pub fn label(&self) -> Option<String> {
        match self {
            Compile::Recorded => None,
            Compile::Jit(o) => Some(o.to_string()),
            Compile::OptLevel(l) => Some(format!("O{l}")),
        }
    }

    /// Marks `row` as measured with it.
    fn stamp(&self, row: &mut Row) {
        match self {
            Compile::Recorded => {}
            Compile::Jit(o) => row.jit = Some(o.to_string()),
            Compile::OptLevel(l) => row.opt_level = Some(*l),
        }
    }
}

/// The compile settings `a` gives, in order: the JIT settings, or the
/// optimisation levels, or the recorded image alone.
pub fn compiles(a: &TuneArgs) -> Result<Vec<Compile>> {
    let jit = a.jit.settings();
    if !jit.is_empty() && !a.ir.opt_level.is_empty() {
        return Err(CliError::Command(
            "--opt-level and JIT options (--max-registers, --jit-opt-level, --jit-option) are \
             not dimensions of one search: --opt-level compiles a new image from IR, the JIT \
             options load the recorded PTX; search one of the two"
                .into(),
        ));
    }
    if !jit.is_empty() {
        return Ok(jit.into_iter().map(Compile::Jit).collect());
    }
    let mut levels: Vec<Compile> = Vec::new();
    for &l in &a.ir.opt_level {
        if !levels.contains(&Compile::OptLevel(l)) {
            levels.push(Compile::OptLevel(l));
        }
    }
    if levels.is_empty() {
        levels.push(Compile::Recorded);
    }
    Ok(levels)
}

/// One point of the product: a compile setting (an index into
/// [`compiles`]) and a launch geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    /// Its compile setting, an index into the search's [`Compile`]s.
    pub compile: usize,
    /// Its launch geometry.
    pub config: LaunchConfig,
}

/// One setting a dimension of the search chooses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    /// The grid (team counts).
    Grid([u32; 3]),
    /// The block (threads per team).
    Block([u32; 3]),
    /// Dynamic shared memory, bytes.
    SharedMem(u32),
    /// The compile setting, an index into the search's [`Compile`]s.
    Compile(usize),
}

impl Setting {
    /// Applies it to `c`.
    fn apply(self, c: &mut Candidate) {
        match self {
            Setting::Grid(g) => c.config.grid = g,
            Setting::Block(b) => c.config.block = b,
            Setting::SharedMem(s) => c.config.shared_mem = s,
            Setting::Compile(i) => c.compile = i,
        }
    }
}

/// One dimension: its values, each once, in the order given. A new
/// dimension of the search is one more of these (and a [`Setting`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Dimension {
    /// The flag that gives it.
    pub flag: &'static str,
    /// Its settings.
    pub values: Vec<Setting>,
}

impl Dimension {
    fn new(flag: &'static str, values: impl IntoIterator<Item = Setting>) -> Dimension {
        let mut v: Vec<Setting> = Vec::new();
        for s in values {
            if !v.contains(&s) {
                v.push(s);
            }
        }
        Dimension { flag, values: v }
    }
}

/// The product of the dimensions.
#[derive(Debug, Clone, PartialEq)]
pub struct Space {
    /// The dimensions, the last one varying fastest.
    pub dims: Vec<Dimension>,
}

impl Space {
    /// How many points the product holds (saturating).
    pub fn size(&self) -> u64 {
        self.dims
            .iter()
            .fold(1u64, |n, d| n.saturating_mul(d.values.len() as u64))
    }

    /// `4 (--num-teams) x 4 (--num-threads) x 1 (--shared-mem)`.
    pub fn shape(&self) -> String {
        let parts: Vec<String> = self
            .dims
            .iter()
            .map(|d| format!("{} ({})", d.values.len(), d.flag))
            .collect();
        parts.join(" x ")
    }

    /// The candidate at `index` (below [`size`](Self::size)): `base`
    /// (and the first compile setting) with each dimension's setting
    /// applied.
    pub fn point(&self, mut index: u64, base: LaunchConfig) -> Candidate {
        let mut c = Candidate {
            compile: 0,
            config: base,
        };
        for d in self.dims.iter().rev() {
            let n = d.values.len() as u64;
            d.values[(index % n) as usize].apply(&mut c);
            index /= n;
        }
        c
    }
}

/// The indices of the candidates: `grid` the first `n` in order, `random`
/// `n` distinct ones drawn with `seed` (the same seed, the same indices in
/// the same order).
pub fn draw(size: u64, n: u64, sampler: Sampler, seed: u64) -> Vec<u64> {
    let n = n.min(size);
    match sampler {
        Sampler::Grid => (0..n).collect(),
        Sampler::Random => {
            let mut rng = fastrand::Rng::with_seed(seed);
            if n.saturating_mul(2) >= size {
                // A dense draw: a shuffle of all, then the first n.
                let mut all: Vec<u64> = (0..size).collect();
                rng.shuffle(&mut all);
                all.truncate(n as usize);
                all
            } else {
                // A sparse draw: redraw what was drawn before (fewer than
                // half are taken, so each draw is new more often than not).
                let mut seen = HashSet::new();
                let mut out = Vec::with_capacity(n as usize);
                while (out.len() as u64) < n {
                    let i = rng.u64(0..size);
                    if seen.insert(i) {
                        out.push(i);
                    }
                }
                out
            }
        }
    }
}

/// The search space the lists give (the recorded value where a list is
/// not given); the compile setting is its first dimension where there is
/// one. `geometry`: whether the executor takes a launch geometry (a host
/// kernel's search is over its compile settings alone).
pub fn space(a: &TuneArgs, recorded: LaunchConfig, geometry: bool) -> Result<Space> {
    let compiles = compiles(a)?;
    let mut dims = Vec::new();
    if compiles != [Compile::Recorded] {
        let flag = if a.jit.given() {
            "JIT settings"
        } else {
            "--opt-level"
        };
        dims.push(Dimension::new(
            flag,
            (0..compiles.len()).map(Setting::Compile),
        ));
    }
    if !geometry {
        if a.num_teams.is_some() || a.num_threads.is_some() || a.shared_mem.is_some() {
            return Err(reprise::Error::NoGeometry.into());
        }
        return Ok(Space { dims });
    }
    let (teams, threads, shared) = super::geometry_lists(a, recorded, "search")?;
    dims.extend([
        Dimension::new("--num-teams", teams.into_iter().map(Setting::Grid)),
        Dimension::new("--num-threads", threads.into_iter().map(Setting::Block)),
        Dimension::new("--shared-mem", shared.into_iter().map(Setting::SharedMem)),
    ]);
    Ok(Space { dims })
}

/// What a results file held.
struct Previous {
    header: Option<Header>,
    rows: Vec<Row>,
}

/// Reads the results file `path` (a header line, then rows). A last line
/// cut short (a kill while it was written) is dropped from the file.
fn read_results(path: &Path, kernel: &str) -> Result<Previous> {
    let text = std::fs::read_to_string(path).map_err(|e| reprise::Error::io(path, "read", e))?;
    let mut prev = Previous {
        header: None,
        rows: Vec::new(),
    };
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut kept = 0usize;
    for (i, line) in lines.iter().enumerate() {
        let body = line.trim();
        if body.is_empty() {
            kept += line.len();
            continue;
        }
        if let Ok(h) = serde_json::from_str::<Header>(body) {
            if h.kernel != kernel {
                return Err(CliError::Command(format!(
                    "{}: the results of kernel {:?}, not of this capture's {kernel:?}",
                    path.display(),
                    h.kernel
                )));
            }
            prev.header = Some(h);
        } else if let Ok(r) = serde_json::from_str::<Row>(body) {
            prev.rows.push(r);
        } else if i + 1 == lines.len() && !line.ends_with('\n') {
            note!(
                "warning: {}: its last line was cut short (the run was stopped while writing \
                 it) and is dropped",
                path.display()
            );
            let f = OpenOptions::new()
                .write(true)
                .open(path)
                .map_err(|e| reprise::Error::io(path, "open", e))?;
            f.set_len(kept as u64)
                .map_err(|e| reprise::Error::io(path, "truncate", e))?;
            break;
        } else {
            return Err(CliError::Command(format!(
                "{}: line {} is neither a header nor a row of tune results",
                path.display(),
                i + 1
            )));
        }
        kept += line.len();
    }
    if !text.is_empty() && !text.ends_with('\n') && kept == text.len() {
        // A whole last line without its newline: add it before appending.
        append(path, "")?;
    }
    Ok(prev)
}

/// Appends `line` and a newline to `path`, in one write.
fn append(path: &Path, line: &str) -> Result<()> {
    let mut f: File = OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| reprise::Error::io(path, "open", e))?;
    f.write_all(format!("{line}\n").as_bytes())
        .map_err(|e| reprise::Error::io(path, "write", e))?;
    Ok(())
}

/// The candidates the search measures, in the order drawn (the recorded
/// configuration aside), and how many points the product holds.
pub fn candidates(
    a: &TuneArgs,
    recorded: LaunchConfig,
    geometry: bool,
) -> Result<(u64, Vec<Candidate>)> {
    let search = &a.search;
    if a.slurm.slurm && search.resume.is_some() {
        return Err(CliError::Command(
            "--resume continues a study run here, not a --slurm job (its shards write their \
             rows files themselves)"
                .into(),
        ));
    }
    if !a.ir.opt_level.is_empty()
        && let Some(flag) = [
            (a.shard.is_some(), "--shard"),
            (a.merge.is_some(), "--merge"),
            (a.slurm.slurm, "--slurm"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    {
        return Err(CliError::Command(format!(
            "{flag} does not combine with a search over --opt-level yet: search the levels \
             here (with --workers for more devices)"
        )));
    }
    let space = space(a, recorded, geometry)?;
    let size = space.size();
    let wanted = search.trials.unwrap_or(size);
    let max = super::lists::MAX_CONFIGS as u64;
    if wanted.min(size) > max {
        return Err(CliError::Command(if search.trials.is_some() {
            format!("--trials {wanted}: at most {max} configurations in one search")
        } else {
            format!(
                "{size} configurations: at most {max} in one search (--sampler random \
                 --trials N measures a sample of them)"
            )
        }));
    }
    if wanted > size {
        note!(
            "note: --trials {wanted} is more than the {size} configuration(s) the lists give: \
             capped at {size}"
        );
    }
    let candidates: Vec<Candidate> = draw(size, wanted, search.sampler, search.seed)
        .into_iter()
        .map(|i| space.point(i, recorded))
        .collect();
    Ok((size, candidates))
}

/// Runs the search `a` asks for over `capture` on `backend`.
pub fn run(
    a: &TuneArgs,
    capture: &Capture,
    recorded: LaunchConfig,
    backend: BackendKind,
) -> Result<ExitCode> {
    let start = Instant::now();
    let search = &a.search;
    if a.jit.given() {
        super::jit::check(&a.file, backend, Some(capture))?;
    }
    let geometry = reprise::executors::traits(backend).launch_geometry;
    let compiles = compiles(a)?;
    if let Some(plan) = &search.worker_plan {
        return serve_plan(a, capture, backend, &compiles, plan, start);
    }
    if a.plot.is_some() {
        return Err(CliError::Command(format!(
            "--plot draws a sweep measured in one go, not a search ({} makes this one): give \
             --csv or --json",
            search.flag(a)
        )));
    }
    let rec = &capture.record;
    let kernel = rec.name.to_string();
    let (size, candidates) = candidates(a, recorded, geometry)?;
    let mut geometries: Vec<LaunchConfig> = Vec::new();
    for c in &candidates {
        if !geometries.contains(&c.config) {
            geometries.push(c.config);
        }
    }
    let order = shard::full_list(&geometries, recorded);
    let held_geometries: Vec<LaunchConfig> = match a.shard {
        Some(s) => shard::slice(&order, s),
        None => order.clone(),
    };
    let held: Vec<Candidate> = candidates
        .iter()
        .copied()
        .filter(|c| held_geometries.contains(&c.config) || !geometry)
        .collect();
    let key_of =
        |c: &Candidate| shard::compiled_key(&c.config, compiles[c.compile].label().as_deref());
    // The results file: the one resumed, else --rows, else the shard's.
    let results = search
        .resume
        .clone()
        .or_else(|| a.rows.clone())
        .or_else(|| a.shard.map(|s| shard::rows_path(a, s)));
    if let (Some(r), Some(rows)) = (&search.resume, &a.rows)
        && r != rows
    {
        return Err(CliError::Command(format!(
            "--resume {} appends to the file it continues: give --rows {} only to start a study",
            r.display(),
            rows.display()
        )));
    }
    if a.device_id.is_some() && !matches!(search.workers, None | Some(Workers::Count(1))) {
        return Err(CliError::Command(
            "--workers use devices 0 to N-1: give --device-id or --workers, not both".into(),
        ));
    }
    let mut old: Vec<Row> = Vec::new();
    if let Some(path) = &search.resume {
        let prev = read_results(path, &kernel)?;
        if let (Some(h), Some(s)) = (&prev.header, a.shard)
            && h.tune_shard != s.to_string()
        {
            return Err(CliError::Command(format!(
                "{}: the results of shard {}, not of --shard {s}",
                path.display(),
                h.tune_shard
            )));
        }
        if prev.header.is_none() {
            append(path, &header_line(a, &kernel, held_geometries.len()))?;
        }
        old = prev.rows;
    } else if let Some(path) = &results {
        if path.exists() {
            return Err(CliError::Command(format!(
                "{}: the results file exists: continue its study with --resume {0}, or remove it",
                path.display()
            )));
        }
        append(path, &header_line(a, &kernel, held_geometries.len()))?;
    }
    let done: HashSet<String> = old.iter().map(shard::row_key).collect();
    let todo: Vec<Candidate> = held
        .iter()
        .copied()
        .filter(|c| !done.contains(&key_of(c)) && c.config != recorded)
        .collect();
    // The recorded configuration is measured by every worker, with each
    // compile setting (the speed-ups are over it); its row is written
    // once for each setting drawn, where the study holds it and has no row
    // of it yet.
    let mut write_recorded: Vec<usize> = Vec::new();
    if held_geometries.contains(&recorded) || !geometry {
        for c in &held {
            let r = Candidate {
                compile: c.compile,
                config: recorded,
            };
            if !write_recorded.contains(&c.compile) && !done.contains(&key_of(&r)) {
                write_recorded.push(c.compile);
            }
        }
    }

    // The driver is asked only when workers are.
    let devices = if search.workers.is_some() {
        reprise::executors::device_count(backend)
    } else {
        1
    };
    let asked = match search.workers {
        None => 1,
        Some(Workers::Auto) => devices,
        Some(Workers::Count(n)) => n,
    };
    let workers = asked.min(devices).min(todo.len().max(1)).max(1);
    if !a.json {
        let how = match search.sampler {
            Sampler::Grid => "grid".to_string(),
            Sampler::Random => format!("random sample (seed {})", search.seed),
        };
        out!(
            "tuning {} ({} executor): {how} of {} of the {size} configurations, {} timed runs \
             each after {} warm-up{}",
            rec.name,
            backend,
            candidates.len(),
            a.repetitions,
            a.warmup,
            if a.warmup == 1 { "" } else { "s" }
        );
        out!(
            "search space: {} = {size}",
            space(a, recorded, geometry)?.shape()
        );
        if let Some(s) = a.shard {
            out!("shard {s}: {} of them", held.len());
        }
        if let Some(path) = &search.resume {
            out!(
                "resuming {}: {} configuration(s) already measured, {} to measure",
                path.display(),
                old.len(),
                todo.len() + write_recorded.len()
            );
        }
        if capture.output.is_none() {
            out!("the capture has no recorded output: configurations are timed, not verified");
        }
    }
    if workers > 1 && !a.json {
        out!(
            "{workers} workers, one configuration at a time on each of devices 0 to {}",
            workers - 1
        );
    }
    if asked > devices {
        note!(
            "note: workers capped at the device count ({devices} visible device{})",
            if devices == 1 { "" } else { "s" }
        );
    }

    let _ = ctrlc::set_handler(|| super::INTERRUPTED.store(true, Ordering::SeqCst));
    let deadline = search.time_budget.map(|b| start + b);
    let total = todo.len() + write_recorded.len();
    let measured = todo.len();
    let mut temporary = None;
    let outcome = if total == 0 {
        Outcome::default()
    } else if workers == 1 {
        let here = Here {
            results: results.as_deref(),
            write_recorded,
            deadline,
            progress: true,
        };
        measure_here(a, capture, backend, &compiles, todo, &here)?
    } else {
        let path = match &results {
            Some(p) => p.clone(),
            None => {
                // The workers' rows meet in a file of this run's own.
                let p =
                    std::env::temp_dir().join(format!("reprise-tune-{}.jsonl", std::process::id()));
                let _ = std::fs::remove_file(&p);
                append(&p, &header_line(a, &kernel, held_geometries.len()))?;
                temporary = Some(p.clone());
                p
            }
        };
        let o = measure_in_workers(todo, &path, write_recorded, deadline, workers, old.len());
        if let Some(p) = &temporary {
            let _ = std::fs::remove_file(p);
        }
        o?
    };
    let Outcome {
        rows: new,
        device_times,
        lost,
        interrupted,
        budget_spent,
    } = outcome;
    let stopped = if let Some(why) = &lost {
        Some(why.clone())
    } else if budget_spent {
        let b = search.time_budget.unwrap_or_default();
        Some(format!(
            "time budget of {} spent after {} of {measured} new configuration(s): no new \
             candidates were drawn",
            crate::ui::human_time(b),
            new.iter().filter(|r| !r.recorded).count()
        ))
    } else if interrupted {
        Some("interrupted".to_string())
    } else {
        None
    };
    let mut rows = old;
    rows.extend(new);
    let ranked = shard::ranking(&rows, &order);
    if a.json {
        let sweep = report::Sweep {
            kernel: &kernel,
            capture: capture.paths.descriptor.display().to_string(),
            runs: Some((a.repetitions, a.warmup)),
            device_times,
            stopped: stopped.clone(),
        };
        out_text!("{}", report::json(&sweep, &ranked));
    } else {
        for line in report::table(&ranked, device_times, stopped.as_deref()) {
            out!("{line}");
        }
        if let Some(path) = &results {
            out!("results in {} ({} rows)", path.display(), rows.len());
        }
    }
    if let Some(path) = &a.csv {
        report::write_csv(path, &ranked)?;
        if !a.json {
            out!("wrote {}", path.display());
        }
    }
    Ok(if interrupted && !budget_spent {
        ExitCode::from(130)
    } else if lost.is_some() {
        ExitCode::from(2)
    } else if ranked.iter().any(Row::good) {
        ExitCode::SUCCESS
    } else if ranked.iter().any(|r| r.status == "differs") {
        note!(
            "error: {}: no configuration verified: every output differs from the recorded one",
            a.file.display()
        );
        ExitCode::from(1)
    } else {
        note!(
            "error: {}: no configuration ran (each was refused or failed, the recorded one \
             included)",
            a.file.display()
        );
        ExitCode::from(2)
    })
}

/// What measuring came to.
#[derive(Debug)]
struct Outcome {
    /// The rows measured (and written), in the order measured.
    rows: Vec<Row>,
    /// Whether every time is the device's own.
    device_times: bool,
    /// Why measuring stopped on a failure, if it did.
    lost: Option<String>,
    /// Whether Ctrl-C stopped it.
    interrupted: bool,
    /// Whether the time budget stopped it.
    budget_spent: bool,
}

impl Default for Outcome {
    fn default() -> Self {
        Outcome {
            rows: Vec::new(),
            device_times: true,
            lost: None,
            interrupted: false,
            budget_spent: false,
        }
    }
}

/// How [`measure_here`] measures.
struct Here<'p> {
    /// Where each row goes as it is measured.
    results: Option<&'p Path>,
    /// The compile settings (indices) whose recorded configuration's row
    /// is written.
    write_recorded: Vec<usize>,
    /// When to stop drawing candidates.
    deadline: Option<Instant>,
    /// Whether to show a progress bar.
    progress: bool,
}

/// Measures `todo` (and the recorded configuration with each compile
/// setting of `how.write_recorded`) in this process, on the device `a`
/// names: the candidates are grouped by compile setting, and each
/// setting's image is loaded (or compiled) once for all its geometries.
fn measure_here(
    a: &TuneArgs,
    capture: &Capture,
    backend: BackendKind,
    compiles: &[Compile],
    todo: Vec<Candidate>,
    how: &Here<'_>,
) -> Result<Outcome> {
    let total = todo.len() + how.write_recorded.len();
    let mut groups: Vec<usize> = Vec::new();
    for c in todo
        .iter()
        .map(|c| c.compile)
        .chain(how.write_recorded.iter().copied())
    {
        if !groups.contains(&c) {
            groups.push(c);
        }
    }
    let mut bar = how
        .progress
        .then(|| LazyProgress::new(total as u64, "tuning"));
    let mut out = Outcome::default();
    for g in groups {
        if out.lost.is_some() || out.interrupted || out.budget_spent {
            break;
        }
        let configs: Vec<LaunchConfig> = todo
            .iter()
            .filter(|c| c.compile == g)
            .map(|c| c.config)
            .collect();
        let group = Group {
            compile: &compiles[g],
            write_recorded: how.write_recorded.contains(&g),
            total,
        };
        let o = measure_group(
            a, capture, backend, configs, &group, how, &mut bar, &out.rows,
        )?;
        out.rows.extend(o.rows);
        out.device_times &= o.device_times;
        out.lost = out.lost.or(o.lost);
        out.interrupted |= o.interrupted;
        out.budget_spent |= o.budget_spent;
    }
    Ok(out)
}

/// One compile setting's share of [`measure_here`].
struct Group<'c> {
    /// The setting.
    compile: &'c Compile,
    /// Whether the recorded configuration's row is written with it.
    write_recorded: bool,
    /// How many rows the whole measuring writes (for the progress bar).
    total: usize,
}

/// Appends `row` to the results file, if there is one.
fn write_row(path: Option<&Path>, row: &Row) -> Result<()> {
    match path {
        Some(p) => append(p, &serde_json::to_string(row).expect("a row serializes")),
        None => Ok(()),
    }
}

/// The registers and spill bytes (stores, loads) of a JIT load.
type Loaded = (Option<u32>, Option<(u64, u64)>);

/// Measures `configs` (and the recorded configuration) with one compile
/// setting: its module is loaded, or its image compiled, once.
#[allow(clippy::too_many_arguments)]
fn measure_group(
    a: &TuneArgs,
    capture: &Capture,
    backend: BackendKind,
    configs: Vec<LaunchConfig>,
    group: &Group<'_>,
    how: &Here<'_>,
    bar: &mut Option<LazyProgress>,
    before: &[Row],
) -> Result<Outcome> {
    let total = group.total;
    let compiled_capture;
    let capture = match group.compile {
        Compile::OptLevel(level) => {
            compiled_capture = super::opt_levels::open_at(a, *level)?;
            &compiled_capture
        }
        _ => capture,
    };
    if !reprise::executors::traits(backend).launch_geometry {
        // A kernel without a launch geometry (the host's): one replay of
        // the recorded configuration with this compile setting.
        let mut row = super::opt_levels::replay_row(a, capture);
        group.compile.stamp(&mut row);
        write_row(how.results, &row)?;
        if let Some(bar) = bar {
            bar.set(before.len() as u64 + 1);
        }
        let spent = how.deadline.is_some_and(|d| Instant::now() >= d);
        return Ok(Outcome {
            rows: vec![row],
            device_times: false,
            budget_spent: spent,
            ..Outcome::default()
        });
    }
    let jit = match group.compile {
        Compile::Jit(o) => Some(o.clone()),
        _ => None,
    };
    if jit.is_some() {
        super::jit::apply(jit.clone());
        reprise::cuda_jit::take_compiled();
    }
    let jitted = jit.is_some();
    let kernel = capture.record.name.to_string();
    // The registers and spills of this setting's one load, taken when the
    // first configuration is measured (the module is loaded by then).
    let mut loaded: Option<Loaded> = None;
    let mut builder = reprise::tune(capture);
    if let Some(b) = a.backend.kind() {
        builder = builder.backend(b);
    }
    if let Some(d) = a.device_id {
        builder = builder.device_id(d);
    }
    let mut rows = Vec::new();
    let mut write_error = None;
    let mut spent = false;
    let result = {
        let (rows, write_error, spent, loaded) =
            (&mut rows, &mut write_error, &mut spent, &mut loaded);
        let builder = builder
            .options(TuneOptions {
                configs,
                repetitions: a.repetitions,
                warmup: a.warmup,
                verify: true,
                compare: a.compare.spec(),
                force: a.force,
            })
            .on_config(move |_, _, m: &Measured| {
                if !m.recorded || group.write_recorded {
                    let mut row = Row::of(m);
                    group.compile.stamp(&mut row);
                    if jitted {
                        let (registers, spills) = *loaded.get_or_insert_with(|| {
                            reprise::cuda_jit::take_compiled()
                                .into_iter()
                                .rev()
                                .find(|(name, _)| *name == kernel)
                                .map_or((None, None), |(_, c)| (c.registers, c.spills))
                        });
                        row.registers = registers;
                        row.spills = spills;
                    }
                    if let Err(e) = write_row(how.results, &row) {
                        write_error.get_or_insert(e);
                    }
                    rows.push(row);
                    if let Some(bar) = bar {
                        let n = before.len() + rows.len();
                        bar.set_message(format!(
                            "{n} of {total}: {}",
                            report::config_text(&m.config)
                        ));
                        bar.set(n as u64);
                    }
                }
                if how.deadline.is_some_and(|d| Instant::now() >= d) {
                    *spent = true;
                }
                write_error.is_none() && !*spent && !super::INTERRUPTED.load(Ordering::SeqCst)
            });
        reprise::block_on(std::future::IntoFuture::into_future(builder))
    };
    if jit.is_some() {
        super::jit::apply(None);
    }
    if let Some(e) = write_error {
        return Err(e);
    }
    let mut out = Outcome {
        rows,
        budget_spent: spent,
        ..Outcome::default()
    };
    match result {
        Ok(r) => {
            out.device_times = r.device_times;
            match r.stopped {
                Some(Stopped::Interrupted) => {
                    out.interrupted = !spent && super::INTERRUPTED.load(Ordering::SeqCst)
                }
                Some(other) => out.lost = Some(other.to_string()),
                None => {}
            }
        }
        Err(e) => match super::jit::jit_failure(&e) {
            // The JIT refused this setting: a failed row (of the recorded
            // geometry) and the search goes on with the next setting.
            Some(failure) if out.rows.is_empty() => {
                let mut row = Row {
                    grid: capture.record.grid,
                    block: capture.record.block,
                    shared_mem: capture.record.shared_mem,
                    recorded: true,
                    status: "failed".into(),
                    detail: Some(failure.to_string()),
                    times_ns: Vec::new(),
                    jit: None,
                    registers: None,
                    spills: None,
                    opt_level: None,
                };
                group.compile.stamp(&mut row);
                write_row(how.results, &row)?;
                out.rows.push(row);
            }
            _ if out.rows.is_empty() && before.is_empty() => return Err(e.into()),
            _ => out.lost = Some(CliError::from(e).to_string()),
        },
    }
    Ok(out)
}

/// A worker's share of the search (`--worker-plan`).
#[derive(Debug, Serialize, Deserialize)]
struct Plan {
    /// Its configurations: grid, block, shared memory, and the compile
    /// setting (an index into the [`Compile`]s its command line gives).
    configs: Vec<([u32; 3], [u32; 3], u32, usize)>,
    /// The results file its rows are appended to.
    results: PathBuf,
    /// The compile settings whose recorded configuration's row it writes.
    write_recorded: Vec<usize>,
    /// What is left of the time budget, in milliseconds.
    budget_ms: Option<u64>,
}

/// How a worker ended, its last line on stdout.
#[derive(Debug, Serialize, Deserialize)]
struct WorkerEnd {
    device_times: bool,
    lost: Option<String>,
    interrupted: bool,
    budget_spent: bool,
}

/// `--worker-plan FILE`: measures a worker's share on its device (given
/// with --device-id), appending rows to the study's results file.
fn serve_plan(
    a: &TuneArgs,
    capture: &Capture,
    backend: BackendKind,
    compiles: &[Compile],
    plan: &Path,
    start: Instant,
) -> Result<ExitCode> {
    let text = std::fs::read_to_string(plan).map_err(|e| reprise::Error::io(plan, "read", e))?;
    let p: Plan = serde_json::from_str(&text)
        .map_err(|e| CliError::Command(format!("{}: not a worker plan: {e}", plan.display())))?;
    if let Some(&(.., c)) = p.configs.iter().find(|t| t.3 >= compiles.len()) {
        return Err(CliError::Command(format!(
            "{}: compile setting {c} of a search with {}",
            plan.display(),
            compiles.len()
        )));
    }
    let configs = p
        .configs
        .iter()
        .map(|&(grid, block, shared_mem, compile)| Candidate {
            compile,
            config: LaunchConfig {
                grid,
                block,
                shared_mem,
            },
        })
        .collect();
    let _ = ctrlc::set_handler(|| super::INTERRUPTED.store(true, Ordering::SeqCst));
    let here = Here {
        results: Some(&p.results),
        write_recorded: p.write_recorded.clone(),
        deadline: p.budget_ms.map(|ms| start + Duration::from_millis(ms)),
        progress: false,
    };
    let o = measure_here(a, capture, backend, compiles, configs, &here)?;
    let end = WorkerEnd {
        device_times: o.device_times,
        lost: o.lost,
        interrupted: o.interrupted,
        budget_spent: o.budget_spent,
    };
    out_text!(
        "{}",
        serde_json::to_string(&end).expect("an end serializes")
    );
    Ok(ExitCode::SUCCESS)
}

/// Measures `todo` in `workers` processes of this executable, worker W on
/// device W, one configuration at a time each; they append their rows to
/// `results`, whose rows after the first `old` are returned.
fn measure_in_workers(
    todo: Vec<Candidate>,
    results: &Path,
    write_recorded: Vec<usize>,
    deadline: Option<Instant>,
    workers: usize,
    old: usize,
) -> Result<Outcome> {
    let mut shares: Vec<Vec<Candidate>> = vec![Vec::new(); workers];
    // Grouped by compile setting, so a worker's candidates of one setting
    // are measured on one load of its image.
    let mut todo = todo;
    todo.sort_by_key(|c| c.compile);
    for (i, c) in todo.into_iter().enumerate() {
        shares[i % workers].push(c);
    }
    let command = crate::check::slurm::task_command(
        "tune",
        &[
            "--workers",
            "--resume",
            "--rows",
            "--csv",
            "--plot",
            "--device-id",
            "--time-budget",
            "--shard",
            "--worker-plan",
        ],
        &["--json"],
    )?;
    let mut children = Vec::new();
    let mut plans = Vec::new();
    for (w, share) in shares.into_iter().enumerate() {
        let plan = Plan {
            configs: share
                .iter()
                .map(|c| {
                    (
                        c.config.grid,
                        c.config.block,
                        c.config.shared_mem,
                        c.compile,
                    )
                })
                .collect(),
            results: results.to_path_buf(),
            write_recorded: if w == 0 {
                write_recorded.clone()
            } else {
                Vec::new()
            },
            budget_ms: deadline.map(|d| {
                u64::try_from(d.saturating_duration_since(Instant::now()).as_millis())
                    .unwrap_or(u64::MAX)
                    .max(1)
            }),
        };
        let mut name = results.as_os_str().to_owned();
        name.push(format!(".worker-{w}.plan.json"));
        let path = PathBuf::from(name);
        std::fs::write(
            &path,
            serde_json::to_string(&plan).expect("a plan serializes"),
        )
        .map_err(|e| reprise::Error::io(&path, "write", e))?;
        let child = std::process::Command::new(&command[0])
            .args(&command[1..])
            .args(["--json", "--device-id", &w.to_string(), "--worker-plan"])
            .arg(&path)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| reprise::Error::io(&command[0], "start a worker", e))?;
        plans.push(path);
        children.push(child);
    }
    let mut out = Outcome::default();
    for (w, child) in children.into_iter().enumerate() {
        let done = child.wait_with_output();
        let end = done.as_ref().ok().and_then(|o| {
            let text = String::from_utf8_lossy(&o.stdout);
            text.lines()
                .last()
                .and_then(|l| serde_json::from_str::<WorkerEnd>(l).ok())
        });
        match end {
            Some(e) => {
                out.device_times &= e.device_times;
                out.interrupted |= e.interrupted;
                out.budget_spent |= e.budget_spent;
                if let Some(why) = e.lost {
                    out.lost
                        .get_or_insert(format!("worker {w} (device {w}): {why}"));
                }
            }
            None => {
                let how = done.map_or_else(|e| e.to_string(), |o| o.status.to_string());
                if super::INTERRUPTED.load(Ordering::SeqCst) {
                    out.interrupted = true;
                } else {
                    out.lost
                        .get_or_insert(format!("worker {w} (device {w}) ended with {how}"));
                }
            }
        }
    }
    for p in plans {
        let _ = std::fs::remove_file(p);
    }
    let kernel = std::fs::read_to_string(results)
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| serde_json::from_str::<Header>(l).ok())
        })
        .map(|h| h.kernel)
        .unwrap_or_default();
    let all = read_results(results, &kernel)?.rows;
    out.rows = all.into_iter().skip(old).collect();
    Ok(out)
}

/// The results file's first line.
fn header_line(a: &TuneArgs, kernel: &str, configs: usize) -> String {
    let header = Header {
        tune_shard: a.shard.unwrap_or(Shard::ALL).to_string(),
        kernel: kernel.to_string(),
        capture: a.file.display().to_string(),
        configs,
        device_times: true,
        stopped: None,
    };
    serde_json::to_string(&header).expect("a header serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(g: u32, b: u32, s: u32) -> LaunchConfig {
        LaunchConfig {
            grid: [g, 1, 1],
            block: [b, 1, 1],
            shared_mem: s,
        }
    }

    fn space3() -> Space {
        Space {
            dims: vec![
                Dimension::new("a", [1, 2, 3].map(|g| Setting::Grid([g, 1, 1]))),
                Dimension::new("b", [10, 20, 10].map(|b| Setting::Block([b, 1, 1]))),
                Dimension::new("c", [0, 5].map(Setting::SharedMem)),
            ],
        }
    }

    #[test]
    fn the_product_is_read_in_mixed_radix_last_dimension_fastest() {
        let s = space3();
        // The repeated block is one value.
        assert_eq!(s.size(), 3 * 2 * 2);
        let base = cfg(9, 9, 9);
        assert_eq!(s.point(0, base).config, cfg(1, 10, 0));
        assert_eq!(s.point(1, base).config, cfg(1, 10, 5));
        assert_eq!(s.point(2, base).config, cfg(1, 20, 0));
        assert_eq!(s.point(11, base).config, cfg(3, 20, 5));
        let all: HashSet<String> = (0..s.size())
            .map(|i| shard::key(&s.point(i, base).config))
            .collect();
        assert_eq!(all.len(), 12);
        assert_eq!(s.shape(), "3 (a) x 2 (b) x 2 (c)");
    }

    #[test]
    fn random_draws_are_distinct_seeded_and_capped() {
        for size in [1u64, 7, 100, 1 << 40] {
            for n in [1u64, 3, 50] {
                let a = draw(size, n, Sampler::Random, 7);
                assert_eq!(a, draw(size, n, Sampler::Random, 7), "same seed");
                assert_eq!(a.len() as u64, n.min(size));
                let set: HashSet<u64> = a.iter().copied().collect();
                assert_eq!(set.len(), a.len(), "distinct");
                assert!(a.iter().all(|&i| i < size));
            }
        }
        assert_ne!(
            draw(1000, 20, Sampler::Random, 1),
            draw(1000, 20, Sampler::Random, 2)
        );
        assert_eq!(draw(5, 9, Sampler::Grid, 3), [0, 1, 2, 3, 4]);
    }

    #[test]
    fn bad_values_say_what_is_wrong() {
        assert!(trials("0").unwrap_err().contains("at least 1"));
        assert!(trials("x").unwrap_err().contains("not a number"));
        assert_eq!(trials("12").unwrap(), 12);
        assert_eq!(workers("auto").unwrap(), Workers::Auto);
        assert_eq!(workers("3").unwrap(), Workers::Count(3));
        assert!(workers("0").unwrap_err().contains("at least 1"));
        assert_eq!(budget("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(budget("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(budget("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(budget("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(budget("2.5").unwrap(), Duration::from_millis(2500));
        assert!(budget("0s").unwrap_err().contains("more than 0"));
        assert!(budget("5 parsecs").unwrap_err().contains("not a duration"));
        assert!(budget("").unwrap_err().contains("not a duration"));
    }
}
