//! The sbatch script a job array runs: each array task runs this
//! executable on its own shard, with the options the command was given
//! (less those that only the submitting command acts on), from the
//! directory it was submitted in.

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
        let Some(a) = arg.to_str() else {
            return Err(CliError::Command(format!(
                "{}: --slurm writes arguments into a shell script, and this one is not UTF-8",
                arg.to_string_lossy()
            )));
        };
        if a == "--" {
            out.push(a.to_string());
            for rest in it.by_ref() {
                out.push(utf8(rest)?);
            }
            break;
        }
        let name = a.split_once('=').map_or(a, |(n, _)| n);
        if flags.contains(&a) {
            continue;
        }
        if values.contains(&name) {
            if name == a {
                it.next();
            }
            continue;
        }
        out.push(a.to_string());
    }
    Ok(out)
}

fn utf8(a: &OsString) -> Result<String> {
    a.to_str().map(str::to_string).ok_or_else(|| {
        CliError::Command(format!(
            "{}: --slurm writes arguments into a shell script, and this one is not UTF-8",
            a.to_string_lossy()
        ))
    })
}

/// `s` as one word of a POSIX shell: in single quotes.
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
    /// The job's name in the queue.
    pub job_name: &'a str,
    /// The job directory (the logs go to its `logs/`).
    pub dir: &'a Path,
    /// Where the command was run: the tasks run there too, so that the
    /// paths given mean the same.
    pub cwd: &'a Path,
    /// The command, word by word (each quoted here).
    pub command: Vec<String>,
    /// Shell text after the command: the task's own arguments, which
    /// name `$SLURM_ARRAY_TASK_ID` (quoted by the caller).
    pub task_args: String,
    /// `--cpus-per-task`, when the command says how many it uses.
    pub cpus_per_task: Option<u32>,
    /// The partition and GPUs asked for.
    pub slurm: &'a SlurmArgs,
}

impl Script<'_> {
    /// The script's text.
    pub fn text(&self) -> String {
        let dir = self.dir.display().to_string();
        let mut s = String::from("#!/bin/sh\n");
        s.push_str(
            "# Written by reprise: one array task per shard. Task K runs shard K of the job's\n\
             # N into its own results file in this directory; the shards' files, merged, are\n\
             # the result.\n",
        );
        s.push_str(&format!("#SBATCH --job-name={}\n", self.job_name));
        s.push_str(&format!(
            "#SBATCH --output={}\n",
            quoted(&format!("{dir}/logs/task-%a.out"))
        ));
        s.push_str("#SBATCH --ntasks=1\n");
        if let Some(c) = self.cpus_per_task {
            s.push_str(&format!("#SBATCH --cpus-per-task={c}\n"));
        }
        if let Some(p) = &self.slurm.partition {
            s.push_str(&format!("#SBATCH --partition={}\n", quoted(p)));
        }
        if let Some(g) = self.slurm.gpus_per_task {
            s.push_str(&format!("#SBATCH --gpus-per-task={g}\n"));
        }
        s.push_str(&format!(
            "cd {} || exit 2\n",
            quoted(&self.cwd.display().to_string())
        ));
        let words: Vec<String> = self.command.iter().map(|w| quoted(w)).collect();
        s.push_str(&format!("exec {} {}\n", words.join(" "), self.task_args));
        s
    }

    /// Writes the script to `path`, executable.
    pub fn write(&self, path: &Path) -> Result<()> {
        use std::os::unix::fs::PermissionsExt as _;
        crate::check::write_new(path, self.text().as_bytes())?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| reprise::Error::io(path, "make executable", e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_submitting_options_are_left_out() {
        let args = os(&[
            "corpus",
            "--slurm",
            "--array-size",
            "4",
            "--partition=gpu",
            "--sbatch-arg",
            "--hold",
            "--timeout",
            "5",
            "--results",
            "r.jsonl",
            "--dtype=f32",
            "--no-wait",
            "--",
            "--slurm",
        ]);
        let mut values = SLURM_VALUES.to_vec();
        values.push("--results");
        let kept = forwarded(&args, &values, SLURM_FLAGS).unwrap();
        assert_eq!(
            kept,
            ["corpus", "--timeout", "5", "--dtype=f32", "--", "--slurm"]
        );
    }

    #[test]
    fn words_are_quoted_for_the_shell() {
        assert_eq!(quoted("a/b.json"), "a/b.json");
        assert_eq!(quoted("it's here"), r"'it'\''s here'");
        assert_eq!(quoted("$HOME"), "'$HOME'");
        assert_eq!(quoted(""), "''");
    }
}
