//! Tuning a kernel's launch geometry in isolation: one capture replayed
//! with each configuration of a sweep, each verified against the recorded
//! output and timed, on one [`Session`] (the region, image and queue are
//! made once; a repetition costs the restore and the kernel). A search
//! draws its configurations from a [`space`], keeps its results as
//! [`rows`], and resumes or shares out its [`study`].

pub mod rows;
pub mod space;
pub mod study;

use std::fmt;
use std::time::Duration;

use reprise_core::exec::{ErrorKind, Executor, LaunchConfig};

use crate::capture::Capture;
use crate::error::{Error, Result};
use crate::replayer::{
    CompareSpec, ReplayOptions, Session, Verification, compared_ranges, launch_config, outside,
    verify_output,
};

/// What to sweep, and how to measure.
#[derive(Debug, Clone, PartialEq)]
pub struct TuneOptions {
    /// The configurations, in the order to measure them. The recorded one
    /// is measured first whether listed or not (the speed-ups are over it),
    /// where the capture records it (LLVM 16's may not).
    pub configs: Vec<LaunchConfig>,
    /// Timed runs per configuration.
    pub repetitions: u32,
    /// Untimed runs per configuration after the verified one.
    pub warmup: u32,
    /// Verify each configuration's output against the recorded one (its
    /// first run), when the capture has a recorded output.
    pub verify: bool,
    /// How to compare.
    pub compare: CompareSpec,
    /// Measure configurations outside the capture's recorded limits
    /// (`TeamsLimits`/`ThreadsLimits` with a lower limit above 0) instead of
    /// refusing them.
    pub force: bool,
}

impl Default for TuneOptions {
    fn default() -> Self {
        TuneOptions {
            configs: Vec::new(),
            repetitions: 5,
            warmup: 1,
            verify: true,
            compare: CompareSpec::default(),
            force: false,
        }
    }
}

/// What became of one configuration.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    /// Its output matched the recorded one.
    Verified,
    /// Measured without verification (not asked for, or no recorded
    /// output).
    Unverified,
    /// Its output differs from the recorded one (it was timed all the same).
    Differs(Box<Verification>),
    /// Not launched: outside the recorded limits, or refused by the
    /// executor before it ran (a block over the kernel's or the device's
    /// limit, say); why.
    Refused(Refusal),
    /// Launched, and failed; why.
    Failed(Failure),
}

/// Why a configuration was not launched ([`Status::Refused`]).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Its team or thread count lies outside the limits the capture
    /// records (and the sweep was not forced).
    OutsideLimits {
        /// Which count.
        count: LimitedCount,
        /// The count asked for.
        value: u32,
        /// The recorded limits, `[lower, upper]`.
        limits: [u32; 2],
    },
    /// The executor refused the launch before it ran
    /// ([`ErrorKind::LaunchRefused`]): its message, which names the limit.
    Executor(String),
}

/// Which recorded limit a [`Refusal::OutsideLimits`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitedCount {
    /// The team count (grid x), against `TeamsLimits`.
    Teams,
    /// The thread count (block x), against `ThreadsLimits`.
    Threads,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::OutsideLimits {
                count,
                value,
                limits: [lo, hi],
            } => {
                let (what, key) = match count {
                    LimitedCount::Teams => ("teams", "TeamsLimits"),
                    LimitedCount::Threads => ("threads", "ThreadsLimits"),
                };
                write!(
                    f,
                    "{what} {value} is outside the recorded {key} [{lo}, {hi}]"
                )
            }
            Refusal::Executor(message) => f.write_str(message),
        }
    }
}

/// Why a configuration that was launched failed ([`Status::Failed`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The executor's kind of error, when the executor failed (`None`: the
    /// replay failed otherwise, on a file or a check).
    pub kind: Option<ErrorKind>,
    /// Whether the device is unusable after it (the sweep stops there).
    pub device_lost: bool,
    /// The error's message, for people.
    pub message: String,
}

impl Failure {
    /// The failure `e` is.
    pub fn of(e: &Error) -> Failure {
        Failure {
            kind: e.executor_kind(),
            device_lost: e.device_lost(),
            message: e.to_string(),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Why a sweep stopped before the end ([`TuneReport::stopped`]).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stopped {
    /// The progress callback said to stop (an interrupt).
    Interrupted,
    /// A configuration's failure left the device unusable.
    DeviceLost(Failure),
}

impl fmt::Display for Stopped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stopped::Interrupted => f.write_str("interrupted"),
            Stopped::DeviceLost(why) => write!(
                f,
                "the device is unusable after this failure, so the sweep stopped: {why}"
            ),
        }
    }
}

impl Status {
    /// Whether the configuration was measured and its output is usable.
    pub fn is_good(&self) -> bool {
        matches!(self, Status::Verified | Status::Unverified)
    }
}

/// One configuration's measurements.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// The geometry.
    pub config: LaunchConfig,
    /// Whether it is the recorded one.
    pub recorded: bool,
    /// What became of it.
    pub status: Status,
    /// Each timed run's kernel time (device time where the executor
    /// measures it, else the run's wall time).
    pub times: Vec<Duration>,
}

impl Measured {
    /// The shortest time.
    pub fn min(&self) -> Option<Duration> {
        self.times.iter().min().copied()
    }
    /// The median time (the lower middle one for an even count).
    pub fn median(&self) -> Option<Duration> {
        median(&self.times)
    }
    /// The longest time.
    pub fn max(&self) -> Option<Duration> {
        self.times.iter().max().copied()
    }
}

/// The median of `times`, the lower middle one for an even count.
pub(crate) fn median<T: Ord + Copy>(times: &[T]) -> Option<T> {
    let mut t = times.to_vec();
    t.sort_unstable();
    t.get(t.len().saturating_sub(1) / 2).copied()
}

/// What a sweep measured.
#[derive(Debug, Clone, PartialEq)]
pub struct TuneReport {
    /// Every configuration, in the order measured (the recorded one first).
    pub measured: Vec<Measured>,
    /// Whether the times are the device's own (else the host's clock
    /// around each run).
    pub device_times: bool,
    /// Why the sweep stopped before the end, if it did (interrupted, or the
    /// device lost).
    pub stopped: Option<Stopped>,
}

impl TuneReport {
    /// The configurations measured and usable, fastest median first.
    pub fn ranked(&self) -> Vec<&Measured> {
        let mut good: Vec<&Measured> = self
            .measured
            .iter()
            .filter(|m| m.status.is_good() && m.median().is_some())
            .collect();
        good.sort_by_key(|m| m.median());
        good
    }

    /// The fastest usable configuration.
    pub fn best(&self) -> Option<&Measured> {
        self.ranked().into_iter().next()
    }

    /// The recorded configuration's measurement.
    pub fn recorded(&self) -> Option<&Measured> {
        self.measured.iter().find(|m| m.recorded)
    }

    /// How many times faster than the recorded configuration `m` is
    /// (median against median); none for a configuration whose output is
    /// not usable.
    pub fn speedup(&self, m: &Measured) -> Option<f64> {
        let base = self.recorded()?.median()?.as_secs_f64();
        let t = m.median()?.as_secs_f64();
        (m.status.is_good() && t > 0.0).then(|| base / t)
    }
}

/// Sweeps `options.configs` over `capture` on `exec`. `progress` is called
/// after each configuration with its index, the number of configurations
/// and what it measured; returning `false` stops the sweep there (an
/// interrupt), and the report holds what was measured so far.
pub async fn tune_on<E: Executor>(
    exec: &E,
    capture: &Capture,
    options: &TuneOptions,
    progress: &mut (dyn FnMut(usize, usize, &Measured) -> bool + Send),
) -> Result<TuneReport> {
    if !exec.launch_geometry() {
        return Err(Error::NoGeometry);
    }
    let record = &capture.record;
    // A geometry the capture leaves unknown is no baseline.
    let recorded = launch_config(record, &ReplayOptions::default()).ok();
    let mut configs: Vec<LaunchConfig> = recorded.into_iter().collect();
    configs.extend(options.configs.iter().filter(|&&c| Some(c) != recorded));
    if configs.is_empty() {
        return Err(Error::BadOption {
            setting: crate::error::Setting::NumTeams,
            value: "(none)".into(),
            problem: "the capture records no geometry and the sweep gives no configuration".into(),
        });
    }
    let verifying = options.verify && capture.output.is_some();
    let ranges = compared_ranges(capture, &options.compare, verifying)?;
    let runs = 1 + options.warmup + options.repetitions.max(1);
    let mut session =
        Session::new(exec, capture, runs.saturating_mul(configs.len() as u32)).await?;
    let mut report = TuneReport {
        measured: Vec::new(),
        device_times: true,
        stopped: None,
    };
    let total = configs.len();
    for (i, config) in configs.into_iter().enumerate() {
        let mut m = Measured {
            config,
            recorded: i == 0 && recorded.is_some(),
            status: Status::Unverified,
            times: Vec::new(),
        };
        if let Some(why) = outside_limits(capture, &config).filter(|_| !options.force) {
            m.status = Status::Refused(why);
        } else {
            match measure(&mut session, capture, options, verifying, &ranges, &mut m).await {
                Ok(device) => report.device_times &= device,
                Err(e) => {
                    let failure = Failure::of(&e);
                    if failure.device_lost {
                        report.stopped = Some(Stopped::DeviceLost(failure.clone()));
                    }
                    m.status = if e.launch_refused() {
                        // The executor's own words name the limit.
                        let limit = std::error::Error::source(&e)
                            .map_or_else(|| failure.message.clone(), ToString::to_string);
                        Status::Refused(Refusal::Executor(limit))
                    } else {
                        Status::Failed(failure)
                    };
                }
            }
        }
        let go_on = progress(i, total, &m);
        report.measured.push(m);
        if report.stopped.is_some() {
            break;
        }
        if !go_on {
            report.stopped = Some(Stopped::Interrupted);
            break;
        }
    }
    Ok(report)
}

/// Runs one configuration: the verified run, the warm-up, the timed runs.
/// Returns whether every time was the device's own.
async fn measure<E: Executor>(
    session: &mut Session<'_, E>,
    capture: &Capture,
    options: &TuneOptions,
    verifying: bool,
    ranges: &[(u64, u64)],
    m: &mut Measured,
) -> Result<bool> {
    session.run(m.config, verifying).await?;
    if verifying {
        let out = session
            .output()
            .ok_or(Error::Internal("the verified run copied nothing back"))?;
        let v = verify_output(capture, out, options.compare.tolerance, ranges.to_vec())?;
        m.status = if v.is_match() {
            Status::Verified
        } else {
            Status::Differs(Box::new(v))
        };
    }
    for _ in 0..options.warmup {
        session.run(m.config, false).await?;
    }
    let mut device = true;
    for _ in 0..options.repetitions.max(1) {
        let run = session.run(m.config, false).await?;
        device &= run.kernel_time.is_some();
        m.times.push(run.kernel_time.unwrap_or(run.time));
    }
    Ok(device)
}

/// Why `config` lies outside the capture's recorded limits, if it does.
fn outside_limits(capture: &Capture, config: &LaunchConfig) -> Option<Refusal> {
    let r = &capture.record;
    let teams = (LimitedCount::Teams, config.grid[0], r.teams_limits);
    let threads = (LimitedCount::Threads, config.block[0], r.threads_limits);
    [teams, threads]
        .into_iter()
        .find_map(|(count, value, limits)| {
            let limits = outside(value, limits)?;
            Some(Refusal::OutsideLimits {
                count,
                value,
                limits,
            })
        })
}
