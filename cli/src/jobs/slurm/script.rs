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

    /// What `sh` makes of `words`, each quoted: the words themselves.
    #[test]
    fn quoted_words_reach_the_command_as_they_were() {
        let words = [
            "it's",
            "'",
            "''",
            "a b",
            "$(touch PWNED)",
            "`touch PWNED`",
            "\"x\"",
            "a\\b",
            "100%a",
            "*",
            "~",
            "-n",
            ";&|<>(){}[]!#",
            "é ünï",
        ];
        let script: Vec<String> = words.iter().map(|w| quoted(w)).collect();
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf '%s\\0' {}", script.join(" ")))
            .current_dir(std::env::temp_dir())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let got: Vec<&str> = std::str::from_utf8(&out.stdout)
            .unwrap()
            .split_terminator('\0')
            .collect();
        assert_eq!(got, words);
    }

    fn slurm(partition: &str, extra: &[&str]) -> SlurmArgs {
        SlurmArgs {
            slurm: true,
            partition: Some(partition.into()),
            gpus_per_task: Some(2),
            array_size: Some(4),
            sbatch_args: extra.iter().map(|s| s.to_string()).collect(),
            no_wait: false,
        }
    }

    fn script<'a>(dir: &'a Path, cwd: &'a Path, command: &[&str], s: &'a SlurmArgs) -> Script<'a> {
        Script {
            job_name: "reprise-check",
            dir,
            cwd,
            command: command.iter().map(|w| w.to_string()).collect(),
            results_option: "--results",
            shards: 4,
            task_flags: "--resume --json",
            cpus_per_task: Some(3),
            slurm: s,
        }
    }

    #[test]
    fn every_control_character_is_refused_naming_the_value_and_where_it_came_from() {
        let controls: Vec<char> = (0..=0x10ffff)
            .filter_map(char::from_u32)
            .filter(|c| c.is_control())
            .collect();
        // C0, DEL and C1.
        assert_eq!(controls.len(), 65);
        for c in controls {
            let bad = format!("a{c}touch PWNED");
            let e = checked("--results", &bad).unwrap_err().to_string();
            assert!(e.starts_with("--results: \"a"), "{e}");
            assert!(e.contains(&format!("U+{:04X}", u32::from(c))), "{e}");
            assert!(!e.contains(c), "the value is escaped: {e:?}");
            let e = checked_path("--rows", Path::new(&bad)).unwrap_err();
            assert!(e.to_string().starts_with("--rows: "), "{e}");

            // In each value of a script: neither its text nor its sbatch
            // options are made.
            let ok = Path::new("/job/r.slurm");
            let plain = slurm("debug", &["--time=5"]);
            let bad_partition = slurm(&bad, &[]);
            let bad_arg = slurm("p", &["--hold", &bad]);
            let bad_path = Path::new(&bad);
            let cases: [(&str, Script<'_>); 6] = [
                (
                    "the job directory",
                    script(bad_path, ok, &["/bin/reprise"], &plain),
                ),
                (
                    "the working directory",
                    script(ok, bad_path, &["/bin/reprise"], &plain),
                ),
                ("the reprise executable", script(ok, ok, &[&bad], &plain)),
                (
                    "an argument",
                    script(ok, ok, &["/bin/reprise", "check", &bad], &plain),
                ),
                ("--partition", script(ok, ok, &["/r"], &bad_partition)),
                ("--sbatch-arg", script(ok, ok, &["/r"], &bad_arg)),
            ];
            for (what, s) in &cases {
                for e in [
                    s.text().unwrap_err(),
                    s.sbatch_args().unwrap_err(),
                    s.check().unwrap_err(),
                ] {
                    let e = e.to_string();
                    assert!(e.starts_with(&format!("{what}: ")), "{e}");
                    assert!(
                        e.contains("cannot be written into a Slurm batch script"),
                        "{e}"
                    );
                }
            }
        }
        // Text without one passes as it is.
        assert_eq!(checked("--partition", "gpu 'a' é").unwrap(), "gpu 'a' é");
    }

    #[test]
    fn a_path_that_is_not_utf8_is_refused() {
        use std::os::unix::ffi::OsStrExt as _;
        let p = Path::new(std::ffi::OsStr::from_bytes(b"/tmp/a\xffb"));
        let e = checked_path("the working directory", p)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("the working directory") && e.contains("not UTF-8"),
            "{e}"
        );
        assert!(e.contains("\\xFF"), "{e}");
    }

    #[test]
    fn quotes_are_quoted_and_no_sbatch_line_holds_a_value_from_the_user() {
        let dir = Path::new("/home/it's 100%a here/r's.slurm");
        let cwd = Path::new("/home/it's $(touch PWNED) here");
        let s = slurm("QUEUE 'q'", &["--time=5"]);
        let sc = script(dir, cwd, &["/opt/it's/reprise", "check", "c'orpus dir"], &s);
        let text = sc.text().unwrap();
        assert!(
            text.contains(r"cd '/home/it'\''s $(touch PWNED) here' || exit 2"),
            "{text}"
        );
        assert!(
            text.contains(
                r#"exec '/opt/it'\''s/reprise' check 'c'\''orpus dir' --shard "$SLURM_ARRAY_TASK_ID/4" --results '/home/it'\''s 100%a here/r'\''s.slurm/shard-'"$SLURM_ARRAY_TASK_ID"-of-4.jsonl --resume --json"#
            ),
            "{text}"
        );
        let sbatch: Vec<&str> = text.lines().filter(|l| l.starts_with("#SBATCH")).collect();
        assert_eq!(
            sbatch,
            [
                "#SBATCH --job-name=reprise-check",
                "#SBATCH --ntasks=1",
                "#SBATCH --cpus-per-task=3",
                "#SBATCH --gpus-per-task=2",
            ],
            "{text}"
        );
        // The lines sbatch reads (every comment before the first command)
        // are the fixed ones and the words of reprise.
        for l in text.lines().take_while(|l| l.starts_with('#')) {
            for v in ["home", "QUEUE", "opt", "orpus", "--time", "PWNED"] {
                assert!(!l.contains(v), "{l:?} holds {v}");
            }
        }
        // The values go on sbatch's command line, whole; a % in the
        // directory doubled (sbatch's pattern for a %).
        assert_eq!(
            sc.sbatch_args().unwrap(),
            [
                "--output=/home/it's 100%%a here/r's.slurm/logs/task-%a.out",
                "--partition=QUEUE 'q'",
                "--time=5",
            ]
        );
    }

    #[test]
    fn a_job_directory_with_a_backslash_is_refused() {
        let s = SlurmArgs::default();
        let sc = script(Path::new("/a\\b/r.slurm"), Path::new("/a"), &["/r"], &s);
        let e = sc.sbatch_args().unwrap_err().to_string();
        assert!(
            e.starts_with("the job directory: ") && e.contains("backslash"),
            "{e}"
        );
        // Elsewhere it is quoted.
        let sc = script(Path::new("/a/r.slurm"), Path::new("/a\\b"), &["/r"], &s);
        assert!(sc.text().unwrap().contains(r"cd '/a\b' || exit 2"));
    }
}
