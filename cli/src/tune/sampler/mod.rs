//! `reprise tune` as a search: `--sampler grid|random`, `--trials`,
//! `--seed`, `--time-budget`, `--resume` and `--workers`.
//!
//! The search space is the product of the sweep's dimensions, each one
//! list of settings ([`Dimension`]), drawn from as [`reprise::tune::space`]
//! says; the recorded configuration is always measured too.
//!
//! Each configuration's row goes to the results file as soon as it is
//! measured (one JSON line, the format of a shard's rows file, so `--merge`
//! reads it too): a kill loses at most the configuration under way, and
//! `--resume RESULTS` measures only what the file lacks.

use std::collections::HashSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use reprise::cuda_jit::JitOptions;
use reprise::tune::{Measured, Stopped};
use reprise::{BackendKind, Capture, LaunchConfig};

use super::TuneArgs;
use super::report::{self, Row};
use super::shard::{self, Header};
use crate::error::{CliError, Result};
use crate::jobs::shard::Shard;

mod args;
mod measure;
mod results;
mod run;
mod space;
mod workers;

pub use args::{Sampler, SearchArgs, Workers};
use measure::{Here, measure_here};
pub use reprise::tune::space::{Candidate, Dimension, Setting, Space, draw, study};
use reprise::tune::study::{Line, Outcome, Plan, Previous};
use results::{append, header_line, read_results, write_row};
pub use run::{candidates, key, run};
use serde::Serialize;
pub use space::{Compile, compiles, space};
use workers::{measure_in_workers, serve_plan};
