//! The sbatch script a job array runs: each array task runs this
//! executable on its own shard, with the options the command was given
//! (less those that only the submitting command acts on), from the
//! directory it was submitted in.
//!
//! Every value that reaches the script or sbatch's command line (the job
//! and working directories, the executable, each argument, the
//! partition, `--sbatch-arg`) goes through [`checked`]: one holding a
//! control character is refused, and in the script each is one quoted
//! word of the shell. No `#SBATCH` line carries a value that could hold
//! a line break (sbatch reads those lines as comments of the shell, so a
//! newline there ends the comment and the rest runs as a command): those
//! lines hold only the job's fixed name and numbers, and the tasks' log
//! files and the partition go on sbatch's command line, which overrides
//! the script's lines.

use std::ffi::OsString;
use std::path::Path;

use super::SlurmArgs;
use crate::error::{CliError, Result};

/// The options of [`SlurmArgs`], which the array tasks never get: each
/// takes a value.
pub const SLURM_VALUES: &[&str] = &[
    "--partition",
    "--gpus-per-task",
    "--array-size",
    "--sbatch-arg",
];
/// The flags of [`SlurmArgs`].
pub const SLURM_FLAGS: &[&str] = &["--slurm", "--no-wait"];

/// `args` (a command's arguments after its subcommand) without the
/// options named in `values` (each with its value: `--x V` or `--x=V`)
/// and the flags in `flags`. Everything after `--` is kept.
pub fn forwarded(args: &[OsString], values: &[&str], flags: &[&str]) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let a = utf8(arg)?;
        if a == "--" {
            out.push(a);
            for rest in it.by_ref() {
                out.push(utf8(rest)?);
            }
            break;
        }
        let name = a.split_once('=').map_or(a.as_str(), |(n, _)| n);
        if flags.contains(&a.as_str()) {
            continue;
        }
        if values.contains(&name) {
            if name == a {
                it.next();
            }
            continue;
        }
        out.push(a);
    }
    Ok(out)
}

fn utf8(a: &OsString) -> Result<String> {
    a.to_str().map(str::to_string).ok_or_else(|| {
        CliError::Usage(format!(
            "{}: --slurm writes arguments into a shell script, and this one is not UTF-8",
            a.to_string_lossy()
        ))
    })
}

/// `value`, which `what` (an option, or what it is) gave, when it may be
/// written into a batch script or onto sbatch's command line: it holds no
/// control character (a line break, a carriage return, a tab, DEL, an
/// escape, ...). Every value that reaches either goes through here.
pub fn checked<'v>(what: &str, value: &'v str) -> Result<&'v str> {
    match value.chars().find(|c| c.is_control()) {
        None => Ok(value),
        Some(c) => Err(CliError::Usage(format!(
            "{what}: {value:?} holds a control character (U+{:04X}), which cannot be written \
             into a Slurm batch script",
            u32::from(c)
        ))),
    }
}

/// `path` as text for a batch script, [`checked`]; refused where it is
/// not UTF-8 (its bytes could not be written as they are).
pub fn checked_path<'p>(what: &str, path: &'p Path) -> Result<&'p str> {
    let Some(text) = path.to_str() else {
        return Err(CliError::Usage(format!(
            "{what}: {path:?} is not UTF-8, which cannot be written into a Slurm batch script"
        )));
    };
    checked(what, text)
}

/// `s` as one word of a POSIX shell: as it is when it holds nothing the
/// shell reads specially, else single-quoted.
pub fn quoted(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,%+@".contains(c))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// What the script runs.
pub struct Script<'a> {
    /// The job's name in the queue (a constant: it goes on an `#SBATCH`
    /// line).
    pub job_name: &'static str,
    /// The job directory: the tasks' logs go to its `logs/`, and each
    /// task's results to its `shard-K-of-N.jsonl`.
    pub dir: &'a Path,
    /// Where the command was run: the tasks run there too, so that the
    /// paths given mean the same.
    pub cwd: &'a Path,
    /// The command, word by word (each quoted here).
    pub command: Vec<String>,
    /// The option each task is given its shard's results file with
    /// (`--results`, `--rows`).
    pub results_option: &'static str,
    /// How many shards the work is cut into: task K runs `--shard K/N`.
    pub shards: u64,
    /// Shell text after the task's shard and results file: the task's
    /// own fixed flags (which may name `$SLURM_CPUS_ON_NODE`).
    pub task_flags: &'static str,
    /// `--cpus-per-task`, when the command says how many it uses.
    pub cpus_per_task: Option<u32>,
    /// The partition and GPUs asked for.
    pub slurm: &'a SlurmArgs,
}

/// The values of a [`Script`], each [`checked`].
struct Values<'s> {
    dir: &'s str,
    cwd: &'s str,
    command: Vec<&'s str>,
    partition: Option<&'s str>,
    sbatch_args: Vec<&'s str>,
}

impl Script<'_> {
    /// Every value the script and sbatch's command line carry, checked;
    /// the first that cannot be written refuses the job, named.
    fn values(&self) -> Result<Values<'_>> {
        let dir = checked_path("the job directory", self.dir)?;
        // sbatch's --output: a backslash there turns off its %-patterns
        // and is dropped, so that the logs would go to another directory.
        if dir.contains('\\') {
            return Err(CliError::Usage(format!(
                "the job directory: {dir:?} holds a backslash, which sbatch drops from the \
                 tasks' log files' names (--output): name a results file without one"
            )));
        }
        let cwd = checked_path("the working directory", self.cwd)?;
        let command = self
            .command
            .iter()
            .enumerate()
            .map(|(i, w)| match i {
                0 => checked("the reprise executable", w),
                _ => checked("an argument", w),
            })
            .collect::<Result<_>>()?;
        let partition = self
            .slurm
            .partition
            .as_deref()
            .map(|p| checked("--partition", p))
            .transpose()?;
        let sbatch_args = self
            .slurm
            .sbatch_args
            .iter()
            .map(|a| checked("--sbatch-arg", a))
            .collect::<Result<_>>()?;
        Ok(Values {
            dir,
            cwd,
            command,
            partition,
            sbatch_args,
        })
    }

    /// Refuses the job where a value it would carry cannot be written
    /// (before anything is written or submitted).
    pub fn check(&self) -> Result<()> {
        self.values().map(|_| ())
    }

    /// The script's text.
    pub fn text(&self) -> Result<String> {
        let v = self.values()?;
        let mut s = String::from("#!/bin/sh\n");
        s.push_str(
            "# Written by reprise: one array task per shard. Task K runs shard K of the job's\n\
             # N into its own results file in this directory; the shards' files, merged, are\n\
             # the result. The tasks' log files (--output) and the partition are given on\n\
             # sbatch's command line.\n",
        );
        s.push_str(&format!("#SBATCH --job-name={}\n", self.job_name));
        s.push_str("#SBATCH --ntasks=1\n");
        if let Some(c) = self.cpus_per_task {
            s.push_str(&format!("#SBATCH --cpus-per-task={c}\n"));
        }
        if let Some(g) = self.slurm.gpus_per_task {
            s.push_str(&format!("#SBATCH --gpus-per-task={g}\n"));
        }
        s.push_str(&format!("cd {} || exit 2\n", quoted(v.cwd)));
        let words: Vec<String> = v.command.iter().map(|w| quoted(w)).collect();
        let n = self.shards;
        let file = quoted(&format!("{}/shard-", v.dir));
        s.push_str(&format!(
            "exec {} --shard \"$SLURM_ARRAY_TASK_ID/{n}\" {} \
             {file}\"$SLURM_ARRAY_TASK_ID\"-of-{n}.jsonl {}\n",
            words.join(" "),
            self.results_option,
            self.task_flags
        ));
        Ok(s)
    }

    /// sbatch's options for the job, before the array and after
    /// `--parsable`: the tasks' log files, the partition, then the
    /// `--sbatch-arg`s (which can override them).
    pub fn sbatch_args(&self) -> Result<Vec<String>> {
        let v = self.values()?;
        // In sbatch's file name patterns `%%` is a `%`.
        let mut args = vec![format!(
            "--output={}/logs/task-%a.out",
            v.dir.replace('%', "%%")
        )];
        if let Some(p) = v.partition {
            args.push(format!("--partition={p}"));
        }
        args.extend(v.sbatch_args.iter().map(|a| a.to_string()));
        Ok(args)
    }

    /// Writes the script to `path`, executable.
    pub fn write(&self, path: &Path) -> Result<()> {
        use std::os::unix::fs::PermissionsExt as _;
        crate::side_files::write(path, self.text()?.as_bytes())?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| reprise::Error::io(path, "make executable", e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
