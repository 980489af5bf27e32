//! The `reprise` command: replay, inspect and list kernel-launch captures,
//! and a demo that records and replays one launch end to end.

#[macro_use]
mod ui;

mod backend;
mod bench;
mod capture_dir;
mod check;
mod compare_args;
mod completions;
mod demo;
mod diff;
mod du;
mod error;
mod export;
mod extract;
mod from_ir;
mod gc;
mod import;
mod inspect;
mod isolate;
mod jobs;
mod launch_loop;
mod list;
mod open_args;
mod record;
mod replay;
mod side_files;
mod tune;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Record one GPU or CPU kernel launch and replay it later as a standalone
/// run: verify its output, time it, or re-launch it with another geometry.
///
/// Captures written by reprise, and by LLVM's offloading runtime (the legacy
/// `NAME.json` + `NAME.memory` format and the current `HASH_HASH.json` +
/// `.record_input` format), replay the same way. A capture is code:
/// replaying one runs its device image.
///
/// Exit status: 0 success (and verified, when asked), 1 verification found
/// differences (or `inspect`/`list` found a capture with a problem), 2 any
/// error.
#[derive(Parser)]
#[command(
    name = "reprise",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Replay(replay::ReplayArgs),
    Record(record::RecordArgs),
    Inspect(inspect::InspectArgs),
    List(list::ListArgs),
    Demo(demo::DemoArgs),
    Bench(bench::BenchArgs),
    Extract(extract::ExtractArgs),
    Diff(diff::DiffArgs),
    // Boxed: the sweep's options outweigh every other command's.
    Tune(Box<tune::TuneArgs>),
    Check(check::CheckArgs),
    Du(du::DuArgs),
    Gc(gc::GcArgs),
    Import(import::ImportArgs),
    Export(export::ExportArgs),
    Completions(completions::CompletionsArgs),
    Man(completions::ManArgs),
    // What `reprise bench` times with and without the interposer.
    #[command(name = "__launch-loop", hide = true)]
    LaunchLoop(launch_loop::LaunchLoopArgs),
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"))
        .format(|buf, r| {
            use std::io::Write as _;
            // The library's messages name files and kernels: escaped as
            // everything reprise prints.
            let text = ui::shown(&r.args().to_string()).into_owned();
            // Warnings and errors are for the user: a line as the command
            // line's own; the rest (RUST_LOG=info and finer) says where it
            // comes from.
            match r.level() {
                log::Level::Error => writeln!(buf, "error: {text}"),
                log::Level::Warn => writeln!(buf, "warning: {text}"),
                level => writeln!(buf, "[{level:<5} {}] {text}", r.target()),
            }
        })
        .init();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            // `reprise record ./app`: the program goes after `--`.
            if e.kind() == clap::error::ErrorKind::UnknownArgument
                && std::env::args().nth(1).as_deref() == Some("record")
            {
                note!(
                    "hint: put the program after `--`: reprise record [OPTIONS] -- ./app ARGS..."
                );
            }
            // --help and --version are successes; usage errors exit 2.
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let result = match cli.command {
        Command::Replay(a) => replay::run(a),
        Command::Record(a) => record::run(a),
        Command::Inspect(a) => inspect::run(a),
        Command::List(a) => list::run(a),
        Command::Demo(a) => demo::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Extract(a) => extract::run(a),
        Command::Diff(a) => diff::run(a),
        Command::Tune(a) => tune::run(*a),
        Command::Check(a) => check::run(a),
        Command::Du(a) => du::run(a),
        Command::Gc(a) => gc::run(a),
        Command::Import(a) => import::run(a),
        Command::Export(a) => export::run(a),
        Command::Completions(a) => completions::completions(a),
        Command::Man(a) => completions::man(a),
        Command::LaunchLoop(a) => launch_loop::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            ui::print_error(&e);
            if let error::CliError::Reprise(e) = &e
                && matches!(
                    e.executor_kind(),
                    Some(reprise::ErrorKind::DeviceMissing | reprise::ErrorKind::NoDevice)
                )
            {
                note!(
                    "hint: without a GPU, the simulated CUDA driver and HSA runtime run the GPU \
                     executors on the CPU: in reprise's sources, `eval \"$(scripts/simulators.sh)\"` \
                     builds them and sets LD_LIBRARY_PATH and REPRISE_HSA_LIBRARY \
                     (docs/simulators.md)"
                );
            }
            ExitCode::from(2)
        }
    }
}
